/*
 * parse_values.c - the value forms that attributes take: integers and
 * integer lists, booleans, strings, windows, convolution dim labels, slice
 * ranges, padding configs, metadata, key/value dictionaries, replica groups,
 * aliasing lists, precision lists and program shapes.
 *
 * Each parses one value starting at the current token and leaves the token
 * after it current.  Lists of unknown length are collected on the parser's
 * scratch stacks (p->ints, local Vecs) and copied into the arena once.
 */
#include "parse_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool parse_int64(Parser *p, int64_t *out) {
  const Token *t = &p->lx.tok;
  if (t->kind != TK_INT)
    return perr(p, "expected an integer");
  if (t->neg ? t->u > (uint64_t)INT64_MAX + 1 : t->u > (uint64_t)INT64_MAX)
    return perr(p, "integer %s%llu does not fit in 64 bits", t->neg ? "-" : "",
                (unsigned long long)t->u);
  *out = t->neg ? (int64_t)(0 - t->u) : (int64_t)t->u;
  padvance(p);
  return true;
}

bool parse_bool(Parser *p, bool *out) {
  if (ptok(p) == TK_KW_TRUE)
    *out = true;
  else if (ptok(p) == TK_KW_FALSE)
    *out = false;
  else
    return perr(p, "expected true or false");
  padvance(p);
  return true;
}

bool parse_double(Parser *p, double *out) {
  const Token *t = &p->lx.tok;
  switch (t->kind) {
  case TK_INT:
    *out = t->neg ? -(double)t->u : (double)t->u;
    break;
  case TK_DECIMAL:
    if (isinf(t->d))
      return perr(p, "constant is out of range for a double");
    *out = t->d;
    break;
  case TK_KW_INF:
    *out = INFINITY;
    break;
  case TK_NEGINF:
    *out = -INFINITY;
    break;
  default:
    return perr(p, "expected a number");
  }
  padvance(p);
  return true;
}

bool parse_string(Parser *p, char **out) {
  if (ptok(p) != TK_STRING)
    return perr(p, "expected a string");
  const char *err = NULL;
  char *s = lex_decode_string(p->a, &p->lx.tok, &err);
  if (!s)
    return perr(p, "%s", err);
  *out = s;
  padvance(p);
  return true;
}

static bool raw_value(Parser *p, bool stop_at_blank, char **out) {
  if (!lex_raw_value(&p->lx, stop_at_blank))
    return perr_at(p, p->lx.tok.s, "%s", p->lx.tok.err);
  *out = arena_strndup(p->a, p->lx.tok.v, p->lx.tok.vn);
  padvance(p);
  return true;
}

bool parse_raw_value(Parser *p, char **out) { return raw_value(p, false, out); }

bool parse_json_dict(Parser *p, char **out) {
  if (!lex_json_dict(&p->lx))
    return perr_at(p, p->lx.tok.s, "%s", p->lx.tok.err);
  *out = arena_strndup(p->a, p->lx.tok.v, p->lx.tok.vn);
  padvance(p);
  return true;
}

bool parse_raw_field(Parser *p, char **out) { return raw_value(p, true, out); }

static const char *tok_text(TokKind k) {
  switch (k) {
  case TK_LBRACE: return "'{'";
  case TK_RBRACE: return "'}'";
  case TK_LSQUARE: return "'['";
  case TK_RSQUARE: return "']'";
  case TK_LPAREN: return "'('";
  case TK_RPAREN: return "')'";
  case TK_COMMA: return "','";
  case TK_COLON: return "':'";
  default: return "token";
  }
}

bool parse_i64_list(Parser *p, TokKind open, TokKind close, TokKind delim,
                    I64List *out) {
  if (ptok(p) != open)
    return perr(p, "expected %s to start a list", tok_text(open));
  padvance(p);
  int base = p->ints.len;
  if (ptok(p) != close) {
    for (;;) {
      int64_t v;
      if (!parse_int64(p, &v)) {
        p->ints.len = base;
        return false;
      }
      vec_push(&p->ints, v);
      if (ptok(p) != delim)
        break;
      padvance(p);
    }
  }
  if (ptok(p) != close) {
    p->ints.len = base;
    return perr(p, "expected %s or %s in list", tok_text(delim),
                tok_text(close));
  }
  padvance(p);
  out->n = p->ints.len - base;
  out->v = out->n ? arena_memdup(p->a, p->ints.data + base,
                                 sizeof(int64_t) * (size_t)out->n)
                  : NULL;
  p->ints.len = base;
  return true;
}

bool parse_i64_list_list(Parser *p, int *n, I64List **out) {
  if (!pexpect(p, TK_LBRACE, "list of lists"))
    return false;
  Vec(I64List) v = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      I64List l;
      if (!(ok = parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA, &l)))
        break;
      vec_push(&v, l);
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "list of lists"))) {
    *n = v.len;
    *out = vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* Splits "a<sep>b<sep>c" of [-]digits into p->ints; false on overflow. */
static bool split_ints(Parser *p, const char *s, const char *e, char sep) {
  while (s < e) {
    bool neg = *s == '-';
    if (neg)
      s++;
    uint64_t v = 0;
    const char *d = s;
    while (s < e && *s >= '0' && *s <= '9') {
      unsigned dig = (unsigned)(*s - '0');
      if (v > ((uint64_t)INT64_MAX - dig) / 10)
        return false;
      v = v * 10 + dig;
      s++;
    }
    if (s == d)
      return false;
    vec_push(&p->ints, neg ? -(int64_t)v : (int64_t)v);
    if (s < e) {
      if (*s != sep)
        return false;
      s++;
    }
  }
  return true;
}

/* size=3x3 and friends: an int or an NxM... pattern. */
static bool parse_dxd(Parser *p, const char *field, I64List *out) {
  const Token *t = &p->lx.tok;
  int base = p->ints.len;
  if (t->kind == TK_INT) {
    int64_t v;
    if (!parse_int64(p, &v))
      return false;
    vec_push(&p->ints, v);
  } else if (t->kind == TK_DXD) {
    if (!split_ints(p, t->v, t->v + t->vn, 'x')) {
      p->ints.len = base;
      return perr(p, "number too large in %s=", field);
    }
    padvance(p);
  } else {
    return perr(p, "expected a number or NxM... after %s=", field);
  }
  out->n = p->ints.len - base;
  out->v = arena_memdup(p->a, p->ints.data + base,
                        sizeof(int64_t) * (size_t)out->n);
  p->ints.len = base;
  return true;
}

/* A pad pattern lo_hi[_interior]x... into lo/hi/interior triples. */
static bool parse_pad_pattern(Parser *p, bool allow_interior, int *n,
                              PadDim **out) {
  const Token *t = &p->lx.tok;
  if (t->kind != TK_PAD)
    return perr(p, "expected a padding pattern like 0_0x1_1");
  Vec(PadDim) v = {0};
  const char *s = t->v, *e = t->v + t->vn;
  bool ok = true;
  while (s < e) {
    const char *x = s;
    while (x < e && *x != 'x')
      x++;
    int base = p->ints.len;
    int cnt;
    if (!split_ints(p, s, x, '_') ||
        ((cnt = p->ints.len - base) != 2 && !(allow_interior && cnt == 3))) {
      p->ints.len = base;
      ok = perr(p, allow_interior ? "expected low_high or low_high_interior "
                                    "in padding"
                                  : "expected low_high in window pad");
      break;
    }
    PadDim d = {p->ints.data[base], p->ints.data[base + 1],
                cnt == 3 ? p->ints.data[base + 2] : 0};
    p->ints.len = base;
    vec_push(&v, d);
    s = x < e ? x + 1 : x;
  }
  if (ok) {
    *n = v.len;
    *out = vec_to_arena(p->a, &v);
    padvance(p);
  }
  vec_free(&v);
  return ok;
}

bool parse_padding_config(Parser *p, int *n, PadDim **out) {
  return parse_pad_pattern(p, true, n, out);
}

static bool field_is(const Token *t, const char *name) {
  size_t n = strlen(name);
  return t->vn == n && memcmp(t->v, name, n) == 0;
}

/* window={size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..} */
bool parse_window(Parser *p, Window **out) {
  const char *at = p->lx.tok.s;
  if (!pexpect(p, TK_LBRACE, "window"))
    return false;
  static const char *const names[] = {"size", "stride", "lhs_dilate",
                                      "rhs_dilate", "rhs_reversal"};
  I64List f[5] = {{0}};
  bool have[6] = {0};
  int npad = 0;
  PadDim *pad = NULL;
  while (ptok(p) != TK_RBRACE) {
    const Token *t = &p->lx.tok;
    if (t->kind != TK_ATTR)
      return perr(p, "expected a window field (size=, stride=, pad=, ...)");
    int k = -1;
    for (int i = 0; i < 5; i++)
      if (field_is(t, names[i]))
        k = i;
    if (k < 0 && !field_is(t, "pad"))
      return perr(p, "unknown window field '%.*s'", (int)t->vn, t->v);
    int slot = k < 0 ? 5 : k;
    if (have[slot])
      return perr(p, "window field '%.*s=' is given twice", (int)t->vn, t->v);
    have[slot] = true;
    padvance(p);
    if (k < 0 ? !parse_pad_pattern(p, false, &npad, &pad)
              : !parse_dxd(p, names[k], &f[k]))
      return false;
  }
  padvance(p);
  int n = f[0].n;
  for (int i = 1; i < 5; i++)
    if (have[i] && f[i].n != n)
      return perr_at(p, at, "window %s= has %d dimensions but size= has %d",
                     names[i], f[i].n, n);
  if (have[5] && npad != n)
    return perr_at(p, at, "window pad= has %d dimensions but size= has %d",
                   npad, n);
  Window *w = ARENA_NEW(p->a, Window);
  w->ndims = n;
  w->dims = ARENA_ARRAY(p->a, WindowDim, n);
  for (int i = 0; i < n; i++) {
    WindowDim *d = &w->dims[i];
    d->size = f[0].v[i];
    d->stride = have[1] ? f[1].v[i] : 1;
    d->base_dilation = have[2] ? f[2].v[i] : 1;
    d->window_dilation = have[3] ? f[3].v[i] : 1;
    d->reversal = have[4] ? f[4].v[i] == 1 : false;
    if (have[5]) {
      d->pad_lo = pad[i].lo;
      d->pad_hi = pad[i].hi;
    }
  }
  *out = w;
  return true;
}

/* One part of dim_labels: batch/feature letters and spatial digits. */
static bool label_part(Parser *p, const char *s, size_t n, char a, char b,
                       const char *what, int64_t *ia, int64_t *ib,
                       int *nspatial, int64_t **spatial) {
  bool used[256] = {0};
  int ns = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '?')
      continue;
    if (used[c])
      return perr(p, "dim_labels: %s has '%c' twice", what, c);
    used[c] = true;
    if (c != (unsigned char)a && c != (unsigned char)b)
      ns++;
  }
  int64_t *sp = ARENA_ARRAY(p->a, int64_t, ns);
  for (int i = 0; i < ns; i++)
    sp[i] = -1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '?')
      continue;
    if (c == a) {
      *ia = (int64_t)i;
    } else if (c == b) {
      *ib = (int64_t)i;
    } else if (c >= '0' && c - '0' < ns) {
      sp[c - '0'] = (int64_t)i;
    } else {
      return perr(p, "dim_labels: %s spatial dimensions must be numbered 0..%d",
                  what, ns - 1);
    }
  }
  *nspatial = ns;
  *spatial = sp;
  return true;
}

bool parse_conv_dnums(Parser *p, ConvDnums **out) {
  const Token *t = &p->lx.tok;
  if (t->kind != TK_DIMLABELS)
    return perr(p, "expected dim labels like b01f_01io->b01f");
  const char *s = t->v, *e = t->v + t->vn;
  const char *us = memchr(s, '_', t->vn);
  const char *ar = us ? strstr(us, "->") : NULL;
  if (!us || !ar || ar >= e)
    return perr(p, "malformed dim labels");
  ConvDnums *d = ARENA_NEW(p->a, ConvDnums);
  int ni, nk, no;
  if (!label_part(p, s, (size_t)(us - s), 'b', 'f', "input", &d->input_batch,
                  &d->input_feature, &ni, &d->input_spatial) ||
      !label_part(p, us + 1, (size_t)(ar - us - 1), 'i', 'o', "kernel",
                  &d->kernel_input_feature, &d->kernel_output_feature, &nk,
                  &d->kernel_spatial) ||
      !label_part(p, ar + 2, (size_t)(e - ar - 2), 'b', 'f', "output",
                  &d->output_batch, &d->output_feature, &no,
                  &d->output_spatial))
    return false;
  if (ni != nk || ni != no)
    return perr(p, "dim_labels: input, kernel and output have %d, %d and %d "
                   "spatial dimensions",
                ni, nk, no);
  d->nspatial = ni;
  padvance(p);
  *out = d;
  return true;
}

/* slice={[start:limit:stride], [start:limit]} */
bool parse_slice_ranges(Parser *p, int *n, SliceDim **out) {
  if (!pexpect(p, TK_LBRACE, "slice"))
    return false;
  Vec(SliceDim) v = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      const char *at = p->lx.tok.s;
      I64List l;
      if (!(ok = parse_i64_list(p, TK_LSQUARE, TK_RSQUARE, TK_COLON, &l)))
        break;
      if (l.n != 2 && l.n != 3) {
        ok = perr_at(p, at, "expected [start:limit] or [start:limit:stride] "
                            "in slice");
        break;
      }
      SliceDim d = {l.v[0], l.v[1], l.n == 3 ? l.v[2] : 1};
      vec_push(&v, d);
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "slice"))) {
    *n = v.len;
    *out = vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* metadata={op_type="" op_name="" source_file="" source_line=1 ...} */
bool parse_metadata(Parser *p, OpMetadata **out) {
  if (!pexpect(p, TK_LBRACE, "metadata"))
    return false;
  OpMetadata *md = ARENA_NEW(p->a, OpMetadata);
  StrBuf extra;
  sb_init(&extra);
  bool ok = true;
  while (ok && ptok(p) != TK_RBRACE) {
    peat(p, TK_COMMA);
    const Token *t = &p->lx.tok;
    if (t->kind != TK_ATTR) {
      ok = perr(p, "expected a metadata field like op_name=");
      break;
    }
    const char *key = t->v, *key_at = t->s;
    size_t kn = t->vn;
#define KEY(s) (kn == sizeof(s) - 1 && memcmp(key, s, kn) == 0)
    padvance(p);
    if (KEY("op_type"))
      ok = parse_string(p, &md->op_type);
    else if (KEY("op_name"))
      ok = parse_string(p, &md->op_name);
    else if (KEY("source_file"))
      ok = parse_string(p, &md->source_file);
    else if (KEY("deduplicated_name"))
      ok = parse_string(p, &md->deduplicated_name);
    else if (KEY("scheduling_name"))
      ok = parse_string(p, &md->scheduling_name);
    else if (KEY("source_line"))
      ok = parse_int64(p, &md->source_line);
    else if (KEY("source_end_line"))
      ok = parse_int64(p, &md->source_end_line);
    else if (KEY("source_column"))
      ok = parse_int64(p, &md->source_column);
    else if (KEY("source_end_column"))
      ok = parse_int64(p, &md->source_end_column);
    else if (KEY("stack_frame_id"))
      ok = parse_int64(p, &md->stack_frame_id);
    else if (KEY("preserve_layout"))
      ok = parse_bool(p, &md->preserve_layout);
    else if (KEY("profile_type"))
      ok = parse_raw_field(p, &md->profile_type);
    else {
      char *raw;
      if ((ok = parse_raw_field(p, &raw))) {
        pwarn_at(p, key_at, "unknown metadata field '%.*s' kept as raw text",
                 (int)kn, key);
        if (extra.len)
          sb_putc(&extra, ' ');
        sb_printf(&extra, "%.*s=%s", (int)kn, key, raw);
      }
    }
#undef KEY
  }
  if (ok)
    ok = pexpect(p, TK_RBRACE, "metadata");
  if (ok && extra.len)
    md->extra = arena_strndup(p->a, extra.s, extra.len);
  sb_free(&extra);
  if (ok)
    *out = md;
  return ok;
}

/* {key="value", key={json}} */
bool parse_kv_list(Parser *p, KVList **out) {
  if (!pexpect(p, TK_LBRACE, "attribute dictionary"))
    return false;
  Vec(KeyValue) v = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      const Token *t = &p->lx.tok;
      KeyValue kv;
      if (t->kind == TK_ATTR) {
        kv.key = arena_strndup(p->a, t->v, t->vn);
        padvance(p);
      } else if (t->kind == TK_IDENT || t->kind == TK_STRING) {
        if (t->kind == TK_STRING) {
          if (!(ok = parse_string(p, &kv.key)))
            break;
        } else {
          kv.key = arena_strndup(p->a, t->v, t->vn);
          padvance(p);
        }
        if (!(ok = pexpect(p, TK_EQUAL, "attribute dictionary")))
          break;
      } else {
        ok = perr(p, "expected key=value in attribute dictionary");
        break;
      }
      if (ptok(p) == TK_STRING)
        ok = parse_string(p, &kv.value);
      else if (ptok(p) == TK_LBRACE)
        ok = parse_json_dict(p, &kv.value);
      else
        ok = perr(p, "expected a string or a {...} value in attribute "
                     "dictionary");
      if (!ok)
        break;
      vec_push(&v, kv);
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "attribute dictionary"))) {
    KVList *l = ARENA_NEW(p->a, KVList);
    l->n = v.len;
    l->kv = vec_to_arena(p->a, &v);
    *out = l;
  }
  vec_free(&v);
  return ok;
}

/* {{0,1},{2,3}} or [G,S]<=[dims] or [G,S]<=[dims]T(perm) */
bool parse_replica_groups(Parser *p, ReplicaGroups **out) {
  ReplicaGroups *rg = ARENA_NEW(p->a, ReplicaGroups);
  if (ptok(p) == TK_LBRACE) {
    if (!parse_i64_list_list(p, &rg->ngroups, &rg->groups))
      return false;
    *out = rg;
    return true;
  }
  const char *at = p->lx.tok.s;
  if (ptok(p) != TK_LSQUARE)
    return perr(p, "expected {{...}} or [groups,size]<=[...] replica groups");
  rg->iota = true;
  if (!parse_i64_list(p, TK_LSQUARE, TK_RSQUARE, TK_COMMA,
                      &rg->iota_group_shape))
    return false;
  if (rg->iota_group_shape.n != 2)
    return perr_at(p, at, "iota replica groups need [num_groups,group_size]");
  if (!pexpect(p, TK_LEQ, "iota replica groups") ||
      !parse_i64_list(p, TK_LSQUARE, TK_RSQUARE, TK_COMMA,
                      &rg->iota_reshape_dims))
    return false;
  if (rg->iota_reshape_dims.n == 0)
    return perr_at(p, at, "iota replica groups need reshape dimensions");
  const Token *t = &p->lx.tok;
  if (t->kind == TK_IDENT && t->vn == 1 && t->v[0] == 'T') {
    padvance(p);
    if (!parse_i64_list(p, TK_LPAREN, TK_RPAREN, TK_COMMA,
                        &rg->iota_transpose_perm))
      return false;
    if (rg->iota_transpose_perm.n != rg->iota_reshape_dims.n)
      return perr_at(p, at, "iota transpose permutation has %d entries but "
                            "there are %d reshape dimensions",
                     rg->iota_transpose_perm.n, rg->iota_reshape_dims.n);
  } else if (rg->iota_reshape_dims.n > 1) {
    return perr(p, "expected 'T(' after the iota reshape dimensions");
  }
  int64_t g = rg->iota_group_shape.v[0], s = rg->iota_group_shape.v[1], n = 1;
  for (int i = 0; i < rg->iota_reshape_dims.n; i++) {
    int64_t d = rg->iota_reshape_dims.v[i];
    if (d < 0 || (d && n > INT64_MAX / d))
      return perr_at(p, at, "invalid iota reshape dimensions");
    n *= d;
  }
  if (g < 0 || s < 0 || (s && g > INT64_MAX / s) || g * s != n)
    return perr_at(p, at, "iota replica groups [%lld,%lld] do not match the "
                          "%lld devices of the reshape dimensions",
                   (long long)g, (long long)s, (long long)n);
  *out = rg;
  return true;
}

/* {{out_index}: (operand, {operand_index}[, may-alias|must-alias]), ...} */
bool parse_alias_list(Parser *p, bool with_kind, int *n, AliasEntry **out) {
  if (!pexpect(p, TK_LBRACE, "aliasing"))
    return false;
  Vec(AliasEntry) v = {0};
  bool ok = true;
  while (ok && ptok(p) != TK_RBRACE) {
    AliasEntry ae = {0};
    if (!(ok = parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                              &ae.output_index)) ||
        !(ok = pexpect(p, TK_COLON, "aliasing")) ||
        !(ok = pexpect(p, TK_LPAREN, "aliasing")) ||
        !(ok = parse_int64(p, &ae.operand)) ||
        !(ok = pexpect(p, TK_COMMA, "aliasing")) ||
        !(ok = parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                              &ae.operand_index)))
      break;
    if (with_kind && peat(p, TK_COMMA)) {
      const Token *t = &p->lx.tok;
      if (t->kind == TK_IDENT && field_is(t, "may-alias"))
        ae.kind = 1;
      else if (t->kind == TK_IDENT && field_is(t, "must-alias"))
        ae.kind = 2;
      else {
        ok = perr(p, "expected may-alias or must-alias");
        break;
      }
      padvance(p);
    }
    if (!(ok = pexpect(p, TK_RPAREN, "aliasing")))
      break;
    vec_push(&v, ae);
    if (!peat(p, TK_COMMA))
      break;
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "aliasing"))) {
    *n = v.len;
    *out = vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* buffer_donor={(0, {}), (1, {0})} */
bool parse_buffer_donors(Parser *p, int *n, AliasEntry **out) {
  if (!pexpect(p, TK_LBRACE, "buffer_donor"))
    return false;
  Vec(AliasEntry) v = {0};
  bool ok = true;
  while (ok && ptok(p) != TK_RBRACE) {
    AliasEntry ae = {0};
    if (!(ok = pexpect(p, TK_LPAREN, "buffer_donor")) ||
        !(ok = parse_int64(p, &ae.operand)) ||
        !(ok = pexpect(p, TK_COMMA, "buffer_donor")) ||
        !(ok = parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                              &ae.operand_index)) ||
        !(ok = pexpect(p, TK_RPAREN, "buffer_donor")))
      break;
    vec_push(&v, ae);
    if (!peat(p, TK_COMMA))
      break;
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "buffer_donor"))) {
    *n = v.len;
    *out = vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* true | false | {true, false, ...} (the single form only if allowed) */
bool parse_bool_list(Parser *p, bool allow_single, int *n, bool **out) {
  if (allow_single && (ptok(p) == TK_KW_TRUE || ptok(p) == TK_KW_FALSE)) {
    bool *b = ARENA_NEW(p->a, bool);
    *n = 1;
    *out = b;
    return parse_bool(p, b);
  }
  if (!pexpect(p, TK_LBRACE, "boolean list"))
    return false;
  Vec(bool) v = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      bool b = false;
      if (!(ok = parse_bool(p, &b)))
        break;
      vec_push(&v, b);
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "boolean list"))) {
    *n = v.len;
    *out = vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* operand_precision={default, high, highest} */
bool parse_precision_list(Parser *p, int *n, Precision **out) {
  if (!pexpect(p, TK_LBRACE, "operand_precision"))
    return false;
  Vec(Precision) v = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      const Token *t = &p->lx.tok;
      Precision pr;
      if (t->kind == TK_IDENT && field_is(t, "default"))
        pr = PREC_DEFAULT;
      else if (t->kind == TK_IDENT && field_is(t, "high"))
        pr = PREC_HIGH;
      else if (t->kind == TK_IDENT && field_is(t, "highest"))
        pr = PREC_HIGHEST;
      else if (t->kind == TK_IDENT && field_is(t, "packed_nibble"))
        pr = PREC_PACKED_NIBBLE;
      else {
        ok = perr(p, "expected a precision (default, high, highest)");
        break;
      }
      padvance(p);
      vec_push(&v, pr);
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "operand_precision"))) {
    *n = v.len;
    *out = vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* {shape, shape, ...} */
bool parse_shape_list(Parser *p, int *n, Shape ***out) {
  if (!pexpect(p, TK_LBRACE, "shape list"))
    return false;
  PtrVec v = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      Shape *s;
      if (!(ok = parse_shape(p, &s)))
        break;
      vec_push(&v, s);
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "shape list"))) {
    *n = v.len;
    *out = (Shape **)vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* entry_computation_layout={(shape, ...)->shape} */
bool parse_program_shape(Parser *p, ProgramShape **out) {
  if (!pexpect(p, TK_LBRACE, "entry_computation_layout") ||
      !pexpect(p, TK_LPAREN, "entry_computation_layout"))
    return false;
  PtrVec v = {0};
  bool ok = true;
  if (ptok(p) != TK_RPAREN) {
    do {
      Shape *s;
      if (!(ok = parse_shape(p, &s)))
        break;
      vec_push(&v, s);
    } while (peat(p, TK_COMMA));
  }
  ProgramShape *ps = ARENA_NEW(p->a, ProgramShape);
  if (ok && (ok = pexpect(p, TK_RPAREN, "entry_computation_layout")) &&
      (ok = pexpect(p, TK_ARROW, "entry_computation_layout")) &&
      (ok = parse_shape(p, &ps->result)) &&
      (ok = pexpect(p, TK_RBRACE, "entry_computation_layout"))) {
    ps->nparams = v.len;
    ps->params = (Shape **)vec_to_arena(p->a, &v);
    *out = ps;
  }
  vec_free(&v);
  return ok;
}

/* 'name' at *s; advances past it. */
static bool mesh_name(const char **s, const char **name, size_t *len) {
  while (**s == ' ') (*s)++;
  if (**s != '\'') return false;
  const char *e = strchr(*s + 1, '\'');
  if (!e) return false;
  *name = *s + 1;
  *len = (size_t)(e - *s - 1);
  *s = e + 1;
  return true;
}

bool replica_groups_from_mesh(Arena *a, const char *text, ReplicaGroups **out) {
  enum { MAXAX = 16 };
  const char *names[MAXAX], *s = text;
  size_t lens[MAXAX];
  int64_t sizes[MAXAX], total = 1;
  bool reduced[MAXAX] = {0};
  int n = 0;
  if (strncmp(s, "mesh[", 5) != 0) return false;
  s += 5;
  while (*s != ']') {
    if (n == MAXAX || !mesh_name(&s, &names[n], &lens[n]) || *s++ != '=') return false;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v <= 0 || v > (1 << 20) || total > INT64_MAX / v) return false;
    sizes[n++] = v;
    total *= v;
    s = end;
    if (*s == ',') s++;
    else if (*s != ']') return false;
  }
  s++;
  while (*s == ' ') s++;
  if (*s == '{') {
    s++;
    while (*s != '}') {
      const char *nm;
      size_t len;
      if (!mesh_name(&s, &nm, &len)) return false;
      int k = 0;
      while (k < n && !(lens[k] == len && memcmp(names[k], nm, len) == 0)) k++;
      if (k == n || reduced[k]) return false;
      reduced[k] = true;
      while (*s == ' ') s++;
      if (*s == ',') s++;
      else if (*s != '}') return false;
    }
    s++;
  } else {
    for (int k = 0; k < n; k++) reduced[k] = true;
  }
  while (*s == ' ') s++;
  if (*s || n == 0) return false;
  /* devices iota(total) over the mesh; the kept axes pick the group, the
   * listed ones run within it */
  ReplicaGroups *rg = ARENA_NEW(a, ReplicaGroups);
  rg->iota = true;
  rg->mesh_text = arena_strdup(a, text);
  rg->iota_reshape_dims.n = rg->iota_transpose_perm.n = n;
  rg->iota_reshape_dims.v = ARENA_ARRAY(a, int64_t, n);
  rg->iota_transpose_perm.v = ARENA_ARRAY(a, int64_t, n);
  int64_t gsize = 1;
  int at = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < n; k++)
      if (reduced[k] == (pass == 1)) {
        rg->iota_transpose_perm.v[at++] = k;
        if (pass == 1) gsize *= sizes[k];
      }
  memcpy(rg->iota_reshape_dims.v, sizes, (size_t)n * sizeof *sizes);
  rg->iota_group_shape.n = 2;
  rg->iota_group_shape.v = ARENA_ARRAY(a, int64_t, 2);
  rg->iota_group_shape.v[0] = total / gsize;
  rg->iota_group_shape.v[1] = gsize;
  *out = rg;
  return true;
}
