/*
 * backend_config.c - library custom-call targets and their backend configs
 * (backend_config.h): a small JSON reader (objects, arrays, strings with
 * escapes, numbers, true/false/null) into a tree, the GemmBackendConfig and
 * CudnnConvBackendConfig fields read from it, and their printers.
 *
 * Protobuf's JSON writes int64 fields as strings ("lhs_stride":"1024",
 * dimension lists as ["1"]) and leaves out fields equal to their default, so
 * every number is accepted as a JSON number or a string, and a missing field
 * takes the proto default (alpha_real and conv_result_scale, which XLA
 * always writes, default to 1).
 */
#include "backend_config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- targets ------------------------------------------------------------- */

static const char *const target_names[] = {
    [LIBCALL_NONE] = "",
    [LIBCALL_CUBLAS_GEMM] = "__cublas$gemm",
    [LIBCALL_CUBLASLT_MATMUL] = "__cublas$lt$matmul",
    [LIBCALL_ONEDNN_MATMUL] = "__onednn$matmul",
    [LIBCALL_CUDNN_CONV_FORWARD] = "__cudnn$convForward",
    [LIBCALL_CUDNN_CONV_BIAS_ACTIVATION_FORWARD] =
        "__cudnn$convBiasActivationForward",
    [LIBCALL_CUDNN_CONV_BACKWARD_INPUT] = "__cudnn$convBackwardInput",
    [LIBCALL_CUDNN_CONV_BACKWARD_FILTER] = "__cudnn$convBackwardFilter",
    [LIBCALL_ONEDNN_CONV] = "__onednn$convolution",
};

LibCallTarget libcall_target_from_name(const char *target) {
  if (!target)
    return LIBCALL_NONE;
  for (int t = 1; t < (int)ARRAY_LEN(target_names); t++)
    if (strcmp(target, target_names[t]) == 0)
      return (LibCallTarget)t;
  return LIBCALL_NONE;
}

LibCallTarget libcall_target(const HloInstr *i) {
  if (!i || i->op != HLO_CUSTOM_CALL || !i->cc)
    return LIBCALL_NONE;
  return libcall_target_from_name(i->cc->target);
}

const char *libcall_target_name(LibCallTarget t) {
  return (unsigned)t < ARRAY_LEN(target_names) ? target_names[t] : "";
}

bool libcall_is_gemm(LibCallTarget t) {
  return t == LIBCALL_CUBLAS_GEMM || t == LIBCALL_CUBLASLT_MATMUL ||
         t == LIBCALL_ONEDNN_MATMUL;
}

bool libcall_is_conv(LibCallTarget t) {
  return t == LIBCALL_CUDNN_CONV_FORWARD ||
         t == LIBCALL_CUDNN_CONV_BIAS_ACTIVATION_FORWARD ||
         t == LIBCALL_CUDNN_CONV_BACKWARD_INPUT ||
         t == LIBCALL_CUDNN_CONV_BACKWARD_FILTER || t == LIBCALL_ONEDNN_CONV;
}

static const char *const epilogue_names[] = {
    "DEFAULT", "BIAS",     "RELU",          "BIAS_RELU",
    "GELU",    "BIAS_GELU", "GELU_ERF",     "BIAS_GELU_ERF",
};

const char *gemm_epilogue_name(GemmEpilogue e) {
  return (unsigned)e < ARRAY_LEN(epilogue_names) ? epilogue_names[e] : "?";
}

bool gemm_epilogue_has_bias(GemmEpilogue e) {
  return e == GEMM_EPILOGUE_BIAS || e == GEMM_EPILOGUE_BIAS_RELU ||
         e == GEMM_EPILOGUE_BIAS_GELU || e == GEMM_EPILOGUE_BIAS_GELU_ERF;
}

static const char *const activation_names[] = {
    "kNone", "kSigmoid",  "kRelu", "kRelu6",     "kReluX",
    "kTanh", "kBandPass", "kElu",  "kLeakyRelu", "kGeluExact",
};

const char *conv_activation_name(ConvActivationMode m) {
  return (unsigned)m < ARRAY_LEN(activation_names) ? activation_names[m] : "?";
}

static const char *const conv_kind_names[] = {"forward", "backward_input",
                                              "backward_filter"};

ConvCallKind libcall_conv_kind(LibCallTarget t, const ConvBackendConfig *cfg) {
  switch (t) {
  case LIBCALL_CUDNN_CONV_BACKWARD_INPUT: return CONV_CALL_BACKWARD_INPUT;
  case LIBCALL_CUDNN_CONV_BACKWARD_FILTER: return CONV_CALL_BACKWARD_FILTER;
  case LIBCALL_ONEDNN_CONV: return cfg ? cfg->kind : CONV_CALL_FORWARD;
  default: return CONV_CALL_FORWARD;
  }
}

/* ---- JSON ---------------------------------------------------------------- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } JKind;

typedef struct JVal JVal;
struct JVal {
  JKind kind;
  bool b;
  double num;
  char *str;                      /* J_STR (decoded); J_NUM: its text */
  int n;                          /* J_ARR / J_OBJ entries */
  JVal **items;
  char **keys;                    /* J_OBJ */
};

typedef struct JParser {
  Arena *ar;
  const char *s, *p, *end;
  const char *err;
  int depth;
} JParser;

#define JSON_MAX_DEPTH 64

static void skip_ws(JParser *j) {
  while (j->p < j->end &&
         (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
    j->p++;
}

static JVal *jfail(JParser *j, const char *why) {
  if (!j->err)
    j->err = why;
  return NULL;
}

static JVal *jnew(JParser *j, JKind k) {
  JVal *v = ARENA_NEW(j->ar, JVal);
  v->kind = k;
  return v;
}

static int hexval(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* A JSON string at j->p (on the opening quote), decoded (\u escapes as
 * UTF-8). */
static char *jstring(JParser *j) {
  j->p++;
  StrBuf b;
  sb_init(&b);
  for (;;) {
    if (j->p >= j->end) {
      sb_free(&b);
      jfail(j, "an unterminated string");
      return NULL;
    }
    char c = *j->p++;
    if (c == '"')
      break;
    if (c != '\\') {
      sb_putc(&b, c);
      continue;
    }
    if (j->p >= j->end)
      continue;
    char e = *j->p++;
    switch (e) {
    case '"': case '\\': case '/': sb_putc(&b, e); break;
    case 'b': sb_putc(&b, '\b'); break;
    case 'f': sb_putc(&b, '\f'); break;
    case 'n': sb_putc(&b, '\n'); break;
    case 'r': sb_putc(&b, '\r'); break;
    case 't': sb_putc(&b, '\t'); break;
    case 'u': {
      unsigned cp = 0;
      for (int k = 0; k < 4; k++) {
        int h = j->p < j->end ? hexval(*j->p) : -1;
        if (h < 0) {
          sb_free(&b);
          jfail(j, "a bad \\u escape");
          return NULL;
        }
        cp = cp << 4 | (unsigned)h;
        j->p++;
      }
      if (cp < 0x80) {
        sb_putc(&b, (char)cp);
      } else if (cp < 0x800) {
        sb_putc(&b, (char)(0xc0 | cp >> 6));
        sb_putc(&b, (char)(0x80 | (cp & 0x3f)));
      } else {
        sb_putc(&b, (char)(0xe0 | cp >> 12));
        sb_putc(&b, (char)(0x80 | (cp >> 6 & 0x3f)));
        sb_putc(&b, (char)(0x80 | (cp & 0x3f)));
      }
      break;
    }
    default:
      sb_free(&b);
      jfail(j, "a bad escape in a string");
      return NULL;
    }
  }
  char *r = arena_strndup(j->ar, b.s ? b.s : "", b.len);
  sb_free(&b);
  return r;
}

static JVal *jvalue(JParser *j);

static JVal *jcontainer(JParser *j, bool obj) {
  if (++j->depth > JSON_MAX_DEPTH)
    return jfail(j, "nesting too deep");
  j->p++;
  JVal *v = jnew(j, obj ? J_OBJ : J_ARR);
  PtrVec items = {0}, keys = {0};
  skip_ws(j);
  if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
    j->p++;
    j->depth--;
    return v;
  }
  for (;;) {
    skip_ws(j);
    if (obj) {
      if (j->p >= j->end || *j->p != '"') {
        vec_free(&items);
        vec_free(&keys);
        return jfail(j, "a key");
      }
      char *key = jstring(j);
      skip_ws(j);
      if (!key || j->p >= j->end || *j->p != ':') {
        vec_free(&items);
        vec_free(&keys);
        return jfail(j, "':' after a key");
      }
      j->p++;
      vec_push(&keys, key);
    }
    JVal *item = jvalue(j);
    if (!item) {
      vec_free(&items);
      vec_free(&keys);
      return NULL;
    }
    vec_push(&items, item);
    skip_ws(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      continue;
    }
    if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
      j->p++;
      break;
    }
    vec_free(&items);
    vec_free(&keys);
    return jfail(j, obj ? "',' or '}'" : "',' or ']'");
  }
  v->n = items.len;
  v->items = (JVal **)vec_to_arena(j->ar, &items);
  if (obj)
    v->keys = (char **)vec_to_arena(j->ar, &keys);
  vec_free(&items);
  vec_free(&keys);
  j->depth--;
  return v;
}

static JVal *jvalue(JParser *j) {
  skip_ws(j);
  if (j->p >= j->end)
    return jfail(j, "a value");
  char c = *j->p;
  if (c == '{' || c == '[')
    return jcontainer(j, c == '{');
  if (c == '"') {
    char *s = jstring(j);
    if (!s)
      return NULL;
    JVal *v = jnew(j, J_STR);
    v->str = s;
    return v;
  }
  static const struct { const char *w; JKind k; bool b; } words[] = {
      {"true", J_BOOL, true}, {"false", J_BOOL, false}, {"null", J_NULL, false}};
  for (size_t k = 0; k < ARRAY_LEN(words); k++) {
    size_t n = strlen(words[k].w);
    if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[k].w, n) == 0) {
      j->p += n;
      JVal *v = jnew(j, words[k].k);
      v->b = words[k].b;
      return v;
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    const char *start = j->p;
    while (j->p < j->end && strchr("+-.eE0123456789", *j->p))
      j->p++;
    JVal *v = jnew(j, J_NUM);
    v->str = arena_strndup(j->ar, start, (size_t)(j->p - start));
    char *e;
    v->num = strtod(v->str, &e);
    if (*e)
      return jfail(j, "a number");
    return v;
  }
  return jfail(j, "a value");
}

static const JVal *jget(const JVal *o, const char *key) {
  if (!o || o->kind != J_OBJ)
    return NULL;
  for (int k = 0; k < o->n; k++)
    if (strcmp(o->keys[k], key) == 0)
      return o->items[k];
  return NULL;
}

/* Decodes an HLO string literal's escapes ("{\"a\":1}" -> {"a":1}). */
static char *unquote(Arena *ar, const char *s) {
  size_t n = strlen(s);
  if (n < 2 || s[0] != '"' || s[n - 1] != '"')
    return arena_strdup(ar, s);
  StrBuf b;
  sb_init(&b);
  for (size_t k = 1; k + 1 < n; k++) {
    char c = s[k];
    if (c == '\\' && k + 2 < n) {
      char e = s[++k];
      c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
    }
    sb_putc(&b, c);
  }
  char *r = arena_strndup(ar, b.s ? b.s : "", b.len);
  sb_free(&b);
  return r;
}

/* The JSON tree of i's backend_config; *root NULL when there is none. */
static bool parse_config(Arena *ar, const HloInstr *i, const JVal **root,
                         Diag *d) {
  *root = NULL;
  if (!i->backend_config || !i->backend_config[0])
    return true;
  char *text = unquote(ar, i->backend_config);
  JParser j = {ar, text, text, text + strlen(text), NULL, 0};
  skip_ws(&j);
  if (j.p == j.end)
    return true;
  const JVal *v = jvalue(&j);
  skip_ws(&j);
  if (v && j.p != j.end)
    v = jfail(&j, "the end of the config");
  if (!v || v->kind != J_OBJ)
    return diag_error(d, i->loc,
                      "backend_config of '%s' is not a JSON object: expected "
                      "%s at offset %d",
                      i->name, j.err ? j.err : "an object",
                      (int)(j.p - j.s));
  *root = v;
  return true;
}

/* A JSON number or a numeric string. */
static bool num_of(const JVal *v, double *out) {
  if (v->kind == J_NUM) {
    *out = v->num;
    return true;
  }
  if (v->kind != J_STR || !v->str[0])
    return false;
  char *e;
  *out = strtod(v->str, &e);
  return !*e;
}

/* A number field; def when absent. */
static bool get_num(const JVal *o, const char *key, double def, double *out,
                    const char **bad) {
  const JVal *v = jget(o, key);
  *out = def;
  if (!v || num_of(v, out))
    return true;
  *bad = key;
  return false;
}

static bool get_bool(const JVal *o, const char *key, bool *out,
                     const char **bad) {
  const JVal *v = jget(o, key);
  *out = false;
  if (!v)
    return true;
  if (v->kind == J_BOOL) {
    *out = v->b;
    return true;
  }
  *bad = key;
  return false;
}

/* A list of dimension numbers (numbers or numeric strings). */
static bool get_dims(Arena *ar, const JVal *o, const char *key, I64List *out,
                     const char **bad) {
  const JVal *v = jget(o, key);
  out->n = 0;
  out->v = NULL;
  if (!v)
    return true;
  if (v->kind != J_ARR) {
    *bad = key;
    return false;
  }
  out->v = ARENA_ARRAY(ar, int64_t, v->n > 0 ? v->n : 1);
  for (int k = 0; k < v->n; k++) {
    double x;
    if (!num_of(v->items[k], &x) || x < 0 || x != floor(x) || x > 1e9) {
      *bad = key;
      return false;
    }
    out->v[out->n++] = (int64_t)x;
  }
  return true;
}

static bool name_index(const char *const *names, int n, const char *s,
                       int *out) {
  for (int k = 0; k < n; k++)
    if (strcmp(names[k], s) == 0) {
      *out = k;
      return true;
    }
  return false;
}

/* The dnums of a plain (batched) matmul of i's first two operands. */
static void default_dnums(Arena *ar, const HloInstr *i, DotDnums *dn) {
  memset(dn, 0, sizeof *dn);
  int ra = i->nops > 0 ? i->ops[0]->shape->rank : 2;
  int rb = i->nops > 1 ? i->ops[1]->shape->rank : 2;
  int nb = ra > 2 ? ra - 2 : 0;
  dn->lhs_batch.v = ARENA_ARRAY(ar, int64_t, nb + 1);
  dn->rhs_batch.v = ARENA_ARRAY(ar, int64_t, nb + 1);
  for (int k = 0; k < nb; k++)
    dn->lhs_batch.v[k] = dn->rhs_batch.v[k] = k;
  dn->lhs_batch.n = dn->rhs_batch.n = nb;
  dn->lhs_contracting.v = ARENA_ARRAY(ar, int64_t, 1);
  dn->rhs_contracting.v = ARENA_ARRAY(ar, int64_t, 1);
  dn->lhs_contracting.v[0] = ra - 1;
  dn->rhs_contracting.v[0] = rb >= 2 ? rb - 2 : 0;
  dn->lhs_contracting.n = dn->rhs_contracting.n = 1;
}

static const char *const precision_names[] = {"DEFAULT", "HIGH", "HIGHEST",
                                              "PACKED_NIBBLE"};

bool gemm_config_parse(Arena *a, const HloInstr *i, GemmBackendConfig *out,
                       Diag *d) {
  memset(out, 0, sizeof *out);
  out->alpha_real = 1;
  const JVal *root;
  if (!parse_config(a, i, &root, d))
    return false;
  const JVal *c = jget(root, "gemm_backend_config");
  if (!c)
    c = root;
  const char *bad = NULL;
  const JVal *dn = jget(c, "dot_dimension_numbers");
  if (!dn) {
    default_dnums(a, i, &out->dnums);
  } else if (!get_dims(a, dn, "lhs_contracting_dimensions",
                       &out->dnums.lhs_contracting, &bad) ||
             !get_dims(a, dn, "rhs_contracting_dimensions",
                       &out->dnums.rhs_contracting, &bad) ||
             !get_dims(a, dn, "lhs_batch_dimensions", &out->dnums.lhs_batch,
                       &bad) ||
             !get_dims(a, dn, "rhs_batch_dimensions", &out->dnums.rhs_batch,
                       &bad)) {
    goto bad_field;
  }
  double ls, rs;
  if (!get_num(c, "alpha_real", 1, &out->alpha_real, &bad) ||
      !get_num(c, "alpha_imag", 0, &out->alpha_imag, &bad) ||
      !get_num(c, "beta", 0, &out->beta, &bad) ||
      !get_num(c, "lhs_stride", 0, &ls, &bad) ||
      !get_num(c, "rhs_stride", 0, &rs, &bad) ||
      !get_bool(c, "grad_x", &out->grad_x, &bad) ||
      !get_bool(c, "grad_y", &out->grad_y, &bad))
    goto bad_field;
  out->lhs_stride = (int64_t)ls;
  out->rhs_stride = (int64_t)rs;
  const JVal *pc = jget(jget(c, "precision_config"), "operand_precision");
  if (pc) {
    if (pc->kind != J_ARR || pc->n > 2) {
      bad = "operand_precision";
      goto bad_field;
    }
    for (int k = 0; k < pc->n; k++) {
      int p;
      if (pc->items[k]->kind != J_STR ||
          !name_index(precision_names, (int)ARRAY_LEN(precision_names),
                      pc->items[k]->str, &p)) {
        bad = "operand_precision";
        goto bad_field;
      }
      out->precision[k] = (Precision)p;
    }
  }
  const JVal *ep = jget(c, "epilogue");
  if (ep) {
    int e;
    if (ep->kind != J_STR) {
      bad = "epilogue";
      goto bad_field;
    }
    if (!name_index(epilogue_names, (int)ARRAY_LEN(epilogue_names), ep->str,
                    &e))
      return diag_error(d, i->loc,
                        "backend_config of '%s': epilogue %s is not supported "
                        "(DEFAULT, BIAS, RELU, BIAS_RELU, GELU, BIAS_GELU, "
                        "GELU_ERF, BIAS_GELU_ERF)",
                        i->name, ep->str);
    out->epilogue = (GemmEpilogue)e;
  }
  return true;
bad_field:
  return diag_error(d, i->loc, "backend_config of '%s': bad field \"%s\"",
                    i->name, bad ? bad : "?");
}

void conv_config_default(ConvBackendConfig *c) {
  memset(c, 0, sizeof *c);
  c->conv_result_scale = 1;
}

bool conv_config_parse(const HloInstr *i, ConvBackendConfig *out, Diag *d) {
  conv_config_default(out);
  Arena *ar = arena_new();
  const JVal *root;
  bool ok = parse_config(ar, i, &root, d);
  const JVal *c = jget(root, "cudnn_conv_backend_config");
  if (!c)
    c = root;
  const char *bad = NULL;
  if (ok && !(get_num(c, "conv_result_scale", 1, &out->conv_result_scale, &bad) &&
              get_num(c, "side_input_scale", 0, &out->side_input_scale, &bad) &&
              get_num(c, "leakyrelu_alpha", 0, &out->leakyrelu_alpha, &bad) &&
              get_bool(c, "has_bias", &out->has_bias, &bad)))
    ok = diag_error(d, i->loc, "backend_config of '%s': bad field \"%s\"",
                    i->name, bad);
  const JVal *am = ok ? jget(c, "activation_mode") : NULL;
  int v;
  if (am && (am->kind != J_STR ||
             !name_index(activation_names, (int)ARRAY_LEN(activation_names),
                         am->str, &v)))
    ok = diag_error(d, i->loc,
                    "backend_config of '%s': unknown activation_mode", i->name);
  else if (am)
    out->activation = (ConvActivationMode)v;
  const JVal *ck = ok ? jget(c, "conv_kind") : NULL;
  if (ck && (ck->kind != J_STR ||
             !name_index(conv_kind_names, (int)ARRAY_LEN(conv_kind_names),
                         ck->str, &v)))
    ok = diag_error(d, i->loc,
                    "backend_config of '%s': conv_kind is not forward, "
                    "backward_input or backward_filter",
                    i->name);
  else if (ck)
    out->kind = (ConvCallKind)v;
  arena_free(ar);
  return ok;
}

bool layer_norm_call(const HloInstr *i) {
  return i->op == HLO_CUSTOM_CALL && i->cc && i->cc->target &&
         strcmp(i->cc->target, "__onednn$layernorm") == 0;
}

bool layer_norm_config_parse(const HloInstr *i, float *epsilon, Diag *d) {
  *epsilon = 0;
  Arena *ar = arena_new();
  const JVal *root;
  bool ok = parse_config(ar, i, &root, d);
  const JVal *c = jget(root, "onednn_layer_norm_config");
  if (!c)
    c = root;
  const char *bad = NULL;
  double bits = 0;
  if (ok && (!get_num(c, "epsilon_typecast", 0, &bits, &bad) || bits != floor(bits) ||
             bits < INT32_MIN || bits > INT32_MAX))
    ok = diag_error(d, i->loc, "backend_config of '%s': bad field \"epsilon_typecast\"",
                    i->name);
  const JVal *rs = ok ? jget(c, "rescale") : NULL;
  if (rs && (rs->kind != J_STR || strcmp(rs->str, "SCALE_AND_SHIFT") != 0))
    ok = diag_error(d, i->loc,
                    "backend_config of '%s': only the rescale SCALE_AND_SHIFT is supported",
                    i->name);
  if (ok) {
    int32_t b = (int32_t)bits;
    memcpy(epsilon, &b, sizeof b);
  }
  arena_free(ar);
  return ok;
}

/* ---- printing ------------------------------------------------------------ */

/* The shortest decimal that reads back as v. */
static void put_num(StrBuf *b, double v) {
  char buf[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  sb_puts(b, buf);
}

static void put_dims(StrBuf *b, const char *key, const I64List *l) {
  sb_printf(b, "\"%s\":[", key);
  for (int k = 0; k < l->n; k++)
    sb_printf(b, "%s\"%lld\"", k ? "," : "", (long long)l->v[k]);
  sb_putc(b, ']');
}

void gemm_config_print(StrBuf *b, const GemmBackendConfig *c) {
  sb_puts(b, "{\"gemm_backend_config\":{\"alpha_real\":");
  put_num(b, c->alpha_real);
  sb_puts(b, ",\"alpha_imag\":");
  put_num(b, c->alpha_imag);
  sb_puts(b, ",\"beta\":");
  put_num(b, c->beta);
  sb_puts(b, ",\"dot_dimension_numbers\":{");
  put_dims(b, "lhs_contracting_dimensions", &c->dnums.lhs_contracting);
  sb_putc(b, ',');
  put_dims(b, "rhs_contracting_dimensions", &c->dnums.rhs_contracting);
  sb_putc(b, ',');
  put_dims(b, "lhs_batch_dimensions", &c->dnums.lhs_batch);
  sb_putc(b, ',');
  put_dims(b, "rhs_batch_dimensions", &c->dnums.rhs_batch);
  sb_printf(b, "},\"precision_config\":{\"operand_precision\":[\"%s\",\"%s\"],"
               "\"algorithm\":\"ALG_UNSET\"},\"epilogue\":\"%s\"",
            precision_names[c->precision[0] & 3],
            precision_names[c->precision[1] & 3],
            gemm_epilogue_name(c->epilogue));
  if (c->lhs_stride || c->rhs_stride)
    sb_printf(b, ",\"lhs_stride\":\"%lld\",\"rhs_stride\":\"%lld\"",
              (long long)c->lhs_stride, (long long)c->rhs_stride);
  sb_printf(b, ",\"grad_x\":%s,\"grad_y\":%s}}", c->grad_x ? "true" : "false",
            c->grad_y ? "true" : "false");
}

void conv_config_print(StrBuf *b, const ConvBackendConfig *c) {
  sb_printf(b, "{\"cudnn_conv_backend_config\":{\"activation_mode\":\"%s\","
               "\"conv_result_scale\":",
            conv_activation_name(c->activation));
  put_num(b, c->conv_result_scale);
  sb_puts(b, ",\"side_input_scale\":");
  put_num(b, c->side_input_scale);
  sb_puts(b, ",\"leakyrelu_alpha\":");
  put_num(b, c->leakyrelu_alpha);
  if (c->kind != CONV_CALL_FORWARD)
    sb_printf(b, ",\"conv_kind\":\"%s\"", conv_kind_names[c->kind]);
  if (c->has_bias)
    sb_puts(b, ",\"has_bias\":true");
  sb_puts(b, "}}");
}
