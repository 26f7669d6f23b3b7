/*
 * parse_attrs.c - instruction and module-header attributes.
 *
 *   attributes ::= (',' name '=' value)*
 *
 * Every attribute name XLA's parser knows is looked up in one sorted table
 * and stored in the typed field of HloInstr (or HloModule) that hlo.h names
 * for it; a few that have no typed field (conv_kind, mode,
 * collective-permute slice_sizes) are kept in raw_attrs
 * silently.  Names not in the table are kept in raw_attrs with their exact
 * value text and a warning, so dumps from newer XLA versions still load.
 * Names shared by several opcodes with different meanings (algorithm, lower,
 * slice_sizes, index_vector_dim) are resolved by the opcode.
 *
 * After the list, attributes an opcode cannot do without are checked
 * ("attribute dimensions is expected but not seen"), and the called
 * computations are put in `called` in the order hlo.h gives.
 */
#include "parse_internal.h"

#include <math.h>
#include <string.h>

typedef enum AttrId {
  A_ALGORITHM, A_API_VERSION, A_ASYNC_EXECUTION_THREAD, A_BACKEND_CONFIG,
  A_BATCH_GROUP_COUNT, A_BODY, A_BRANCH_COMPUTATIONS, A_CALLED_COMPUTATIONS,
  A_CALLS, A_CHANNEL_ID, A_COLLAPSED_SLICE_DIMS, A_CONDITION,
  A_CONSTRAIN_LAYOUT, A_CONTROL_PREDECESSORS, A_CONV_KIND,
  A_CROSS_PROGRAM_PREFETCH_INDEX, A_CUSTOM_CALL_HAS_SIDE_EFFECT,
  A_CUSTOM_CALL_TARGET, A_DELTA, A_DIM_LABELS, A_DIMENSIONS, A_DIRECTION,
  A_DISTRIBUTION, A_DOMAIN, A_DYNAMIC_SLICE_SIZES, A_EPSILON, A_EXPONENT_BITS,
  A_FALSE_COMPUTATION, A_FEATURE_GROUP_COUNT, A_FEATURE_INDEX, A_FFT_LENGTH,
  A_FFT_TYPE, A_FRONTEND_ATTRIBUTES, A_INDEX, A_INDEX_VECTOR_DIM,
  A_INDICES_ARE_SORTED, A_INFEED_CONFIG, A_INFERRED_DIMENSION,
  A_INPUT_BATCHING_DIMS, A_INSERTED_WINDOW_DIMS, A_IOTA_DIMENSION,
  A_IS_ASSOCIATIVE, A_IS_COMPOSITE, A_IS_CROSS_PROGRAM_PREFETCH,
  A_IS_HOST_TRANSFER, A_IS_REVERSE, A_IS_STABLE, A_K, A_KIND, A_LARGEST,
  A_LEFT_SIDE, A_LHS_BATCH_DIMS, A_LHS_CONTRACTING_DIMS, A_LHS_RAGGED_DIMS,
  A_LITERAL, A_LOWER, A_MANTISSA_BITS, A_METADATA, A_MODE, A_NUM_CARRIES,
  A_OFFSET_DIMS, A_OPERAND_BATCHING_DIMS, A_OPERAND_LAYOUT_CONSTRAINTS,
  A_OPERAND_PRECISION, A_ORIGIN, A_OUTFEED_CONFIG, A_OUTFEED_SHAPE,
  A_OUTPUT_TO_OPERAND_ALIASING, A_PADDING, A_PADDING_TYPE,
  A_PARAMETER_REPLICATION, A_REPLICA_GROUPS, A_RESULT_ACCURACY,
  A_RHS_BATCH_DIMS, A_RHS_CONTRACTING_DIMS, A_RHS_GROUP_DIMS, A_SCATTER,
  A_SCATTER_DIMS_TO_OPERAND_DIMS, A_SCATTER_INDICES_BATCHING_DIMS, A_SCHEDULE,
  A_SELECT, A_SHARDING, A_SLICE, A_SLICE_SIZES, A_SOURCE_TARGET_PAIRS,
  A_SPARSITY, A_START_INDEX_MAP, A_START_INDICES_BATCHING_DIMS, A_STATISTICS,
  A_TO_APPLY, A_TRANSPOSE_A, A_TRUE_COMPUTATION, A_TYPE, A_UNIQUE_INDICES,
  A_UNIT_DIAGONAL, A_UPDATE_WINDOW_DIMS, A_USE_GLOBAL_DEVICE_IDS, A_WINDOW,
  A_COUNT
} AttrId;

/* Sorted by strcmp (the enum is in the same order). */
static const char *const attr_names[A_COUNT] = {
    "algorithm", "api_version", "async_execution_thread", "backend_config",
    "batch_group_count", "body", "branch_computations", "called_computations",
    "calls", "channel_id", "collapsed_slice_dims", "condition",
    "constrain_layout", "control-predecessors", "conv_kind",
    "cross_program_prefetch_index", "custom_call_has_side_effect",
    "custom_call_target", "delta", "dim_labels", "dimensions", "direction",
    "distribution", "domain", "dynamic_slice_sizes", "epsilon",
    "exponent_bits", "false_computation", "feature_group_count",
    "feature_index", "fft_length", "fft_type", "frontend_attributes", "index",
    "index_vector_dim", "indices_are_sorted", "infeed_config",
    "inferred_dimension", "input_batching_dims", "inserted_window_dims",
    "iota_dimension", "is_associative", "is_composite",
    "is_cross_program_prefetch", "is_host_transfer", "is_reverse",
    "is_stable", "k", "kind", "largest", "left_side", "lhs_batch_dims",
    "lhs_contracting_dims", "lhs_ragged_dims", "literal", "lower",
    "mantissa_bits", "metadata", "mode", "num_carries", "offset_dims",
    "operand_batching_dims", "operand_layout_constraints",
    "operand_precision", "origin", "outfeed_config", "outfeed_shape",
    "output_to_operand_aliasing", "padding", "padding_type",
    "parameter_replication", "replica_groups", "result_accuracy",
    "rhs_batch_dims", "rhs_contracting_dims", "rhs_group_dims", "scatter",
    "scatter_dims_to_operand_dims", "scatter_indices_batching_dims",
    "schedule", "select", "sharding", "slice", "slice_sizes",
    "source_target_pairs", "sparsity", "start_index_map",
    "start_indices_batching_dims", "statistics", "to_apply", "transpose_a",
    "true_computation", "type", "unique_indices", "unit_diagonal",
    "update_window_dims", "use_global_device_ids", "window",
};

/* strcmp of a NUL-terminated name with the n chars at s. */
static int name_cmp(const char *name, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char a = (unsigned char)name[i], b = (unsigned char)s[i];
    if (a != b)
      return a < b ? -1 : 1; /* a NUL in name sorts first */
  }
  return name[n] ? 1 : 0;
}

static int attr_lookup(const char *s, size_t n) {
  int lo = 0, hi = A_COUNT - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = name_cmp(attr_names[mid], s, n);
    if (c == 0)
      return mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

/* Which group of called-computation attributes an instruction used. */
enum {
  CALLED_NONE, CALLED_SINGLE, CALLED_WHILE, CALLED_COND, CALLED_SAS,
  CALLED_LIST
};

typedef struct AttrState {
  HloInstr *main;        /* the instruction written in the text */
  HloInstr *in;          /* where opcode attributes go (wrapped op or main) */
  uint64_t seen[2];      /* AttrId bits */
  int called_kind;
  HloComp *pair[2];
  int ncalled;
  HloComp **called;
} AttrState;

static bool seen(const AttrState *st, int id) {
  return st->seen[id / 64] >> (id % 64) & 1;
}

static void add_raw(Parser *p, int *n, RawAttr **arr, const char *name,
                    size_t nlen, char *value) {
  RawAttr *na = ARENA_ARRAY(p->a, RawAttr, *n + 1);
  if (*n)
    memcpy(na, *arr, sizeof(RawAttr) * (size_t)*n);
  na[*n].name = arena_strndup(p->a, name, nlen);
  na[*n].value = value;
  *arr = na;
  ++*n;
}

static bool raw_has(int n, const RawAttr *arr, const char *name, size_t nlen) {
  for (int i = 0; i < n; i++)
    if (strlen(arr[i].name) == nlen && memcmp(arr[i].name, name, nlen) == 0)
      return true;
  return false;
}

static ConvAttrs *conv_of(Parser *p, HloInstr *t) {
  if (!t->conv)
    t->conv = ARENA_NEW(p->a, ConvAttrs);
  return t->conv;
}
static DotDnums *dot_of(Parser *p, HloInstr *t) {
  if (!t->dot)
    t->dot = ARENA_NEW(p->a, DotDnums);
  return t->dot;
}
static GatherDnums *gather_of(Parser *p, HloInstr *t) {
  if (!t->gather)
    t->gather = ARENA_NEW(p->a, GatherDnums);
  return t->gather;
}
static ScatterDnums *scatter_of(Parser *p, HloInstr *t) {
  if (!t->scatter)
    t->scatter = ARENA_NEW(p->a, ScatterDnums);
  return t->scatter;
}
static CustomCallAttrs *cc_of(Parser *p, HloInstr *t) {
  if (!t->cc)
    t->cc = ARENA_NEW(p->a, CustomCallAttrs);
  return t->cc;
}

static bool is_ident(const Token *t, const char *word) {
  size_t n = strlen(word);
  return t->kind == TK_IDENT && t->vn == n && memcmp(t->v, word, n) == 0;
}

/* An identifier that must be one of `words`; its index in *out. */
static bool parse_enum(Parser *p, const char *what, const char *const *words,
                       int nwords, int *out) {
  const Token *t = &p->lx.tok;
  for (int i = 0; i < nwords; i++) {
    if (is_ident(t, words[i])) {
      *out = i;
      padvance(p);
      return true;
    }
  }
  if (t->kind == TK_IDENT)
    return perr(p, "unknown %s '%.*s'", what, (int)t->vn, t->v);
  return perr(p, "expected %s", what);
}

static bool set_called_kind(Parser *p, AttrState *st, int kind,
                            const char *at) {
  if (st->called_kind != CALLED_NONE && st->called_kind != kind)
    return perr_at(p, at, "conflicting called-computation attributes");
  st->called_kind = kind;
  return true;
}

/* '{' comp (',' comp)* '}' */
static bool parse_comp_list(Parser *p, int *n, HloComp ***out) {
  if (!pexpect(p, TK_LBRACE, "computation list"))
    return false;
  PtrVec v = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      HloComp *c;
      if (!(ok = parse_comp_ref(p, &c)))
        break;
      vec_push(&v, c);
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "computation list"))) {
    *n = v.len;
    *out = (HloComp **)vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* '{' name (',' name)* '}' resolved in the current computation. */
static bool parse_control_preds(Parser *p, HloInstr *t) {
  if (!pexpect(p, TK_LBRACE, "control-predecessors"))
    return false;
  PtrVec v = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      const Token *k = &p->lx.tok;
      if (k->kind != TK_NAME && k->kind != TK_IDENT) {
        ok = perr(p, "expected an instruction name in control-predecessors");
        break;
      }
      HloInstr *in = parse_find_instr(p, k->v, k->vn);
      if (!in) {
        ok = perr(p, "instruction '%.*s' is not defined", (int)k->vn, k->v);
        break;
      }
      vec_push(&v, in);
      padvance(p);
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "control-predecessors"))) {
    t->ncontrol_preds = v.len;
    t->control_preds = (HloInstr **)vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

/* backend_config: a quoted string or a {...} dictionary, kept verbatim. */
static bool parse_backend_config(Parser *p, char **out) {
  if (ptok(p) == TK_STRING) {
    const Token *t = &p->lx.tok;
    *out = arena_strndup(p->a, t->s, (size_t)(t->e - t->s));
    padvance(p);
    return true;
  }
  if (ptok(p) == TK_LBRACE)
    return parse_json_dict(p, out);
  return perr(p, "expected a string or a {...} dictionary for backend_config");
}

static int count_leaves(const Shape *s, int depth) {
  if (s->et != ET_TUPLE || depth > PARSE_MAX_DEPTH)
    return 1;
  int n = 0;
  for (int i = 0; i < s->ntuple; i++)
    n += count_leaves(s->tuple[i], depth + 1);
  return n;
}

/* The value of attribute `id` (its name already consumed) into st. */
static bool attr_value(Parser *p, AttrState *st, int id, const char *at) {
  HloInstr *t = st->in;
  HloOp op = t->op;
  int e;
  switch (id) {
  /* Attributes of any instruction. */
  case A_SHARDING: {
    Token next = lex_peek(&p->lx);
    if (ptok(p) == TK_LBRACE && next.kind == TK_IDENT &&
        ((next.vn == 4 && memcmp(next.v, "mesh", 4) == 0) ||
         (next.vn == 12 && memcmp(next.v, "maximal_mesh", 12) == 0))) {
      char *raw;
      if (!parse_raw_value(p, &raw))
        return false;
      pwarn_at(p, at, "named (mesh) sharding kept as raw text");
      add_raw(p, &st->main->nraw_attrs, &st->main->raw_attrs, "sharding", 8,
              raw);
      return true;
    }
    return parse_sharding(p, &st->main->sharding);
  }
  case A_CONTROL_PREDECESSORS:
    return parse_control_preds(p, st->main);
  case A_ASYNC_EXECUTION_THREAD:
    return parse_string(p, &st->main->async_thread);
  case A_METADATA:
    return parse_metadata(p, &t->metadata);
  case A_FRONTEND_ATTRIBUTES:
    return parse_kv_list(p, &t->frontend_attrs);
  case A_BACKEND_CONFIG:
    return parse_backend_config(p, &t->backend_config);
  case A_STATISTICS:
    return parse_raw_value(p, &t->statistics);
  case A_ORIGIN:
    return parse_raw_value(p, &t->origin);
  case A_RESULT_ACCURACY:
    return parse_raw_value(p, &t->result_accuracy);
  case A_PARAMETER_REPLICATION: {
    if (!parse_bool_list(p, false, &t->nparam_replication,
                         &t->param_replication))
      return false;
    int leaves = t->shape ? count_leaves(t->shape, 0) : t->nparam_replication;
    if (leaves != t->nparam_replication)
      return perr_at(p, at, "parameter has %d leaf buffers but "
                            "parameter_replication has %d elements",
                     leaves, t->nparam_replication);
    return true;
  }

  /* Called computations. */
  case A_TO_APPLY:
  case A_CALLS: {
    HloComp *c;
    if (!set_called_kind(p, st, CALLED_SINGLE, at) || !parse_comp_ref(p, &c))
      return false;
    if (st->ncalled)
      return perr_at(p, at, "conflicting called-computation attributes");
    st->called = ARENA_NEW(p->a, HloComp *);
    st->called[0] = c;
    st->ncalled = 1;
    if (op == HLO_FUSION && !c->fusion_instr)
      c->fusion_instr = t;
    return true;
  }
  case A_CONDITION:
  case A_BODY:
  case A_TRUE_COMPUTATION:
  case A_FALSE_COMPUTATION:
  case A_SELECT:
  case A_SCATTER: {
    int kind = id == A_CONDITION || id == A_BODY ? CALLED_WHILE
               : id == A_SELECT || id == A_SCATTER ? CALLED_SAS
                                                   : CALLED_COND;
    int slot = id == A_BODY || id == A_FALSE_COMPUTATION || id == A_SCATTER;
    return set_called_kind(p, st, kind, at) &&
           parse_comp_ref(p, &st->pair[slot]);
  }
  case A_BRANCH_COMPUTATIONS:
  case A_CALLED_COMPUTATIONS:
    if (!set_called_kind(p, st, CALLED_LIST, at) ||
        !parse_comp_list(p, &st->ncalled, &st->called))
      return false;
    if (id == A_CALLED_COMPUTATIONS && op == HLO_CUSTOM_CALL)
      cc_of(p, t)->uses_called_computations = true;
    return true;

  /* Shapes, indices, slices. */
  case A_DIMENSIONS:
    t->has_dims = true;
    if (!parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA, &t->dims))
      return false;
    return true;
  case A_INDEX:
    return parse_int64(p, &t->tuple_index);
  case A_IOTA_DIMENSION:
    return parse_int64(p, &t->iota_dim);
  case A_SLICE: {
    int n;
    if (!parse_slice_ranges(p, &n, &t->slice))
      return false;
    if (t->nops >= 1 && et_is_array(t->ops[0]->shape->et) &&
        n != t->ops[0]->shape->rank)
      return perr_at(p, at, "slice has %d dimensions but the operand has rank %d",
                     n, t->ops[0]->shape->rank);
    return true;
  }
  case A_DYNAMIC_SLICE_SIZES:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &t->dynamic_slice_sizes);
  case A_PADDING: {
    int n;
    if (!parse_padding_config(p, &n, &t->padding))
      return false;
    if (t->nops >= 1 && et_is_array(t->ops[0]->shape->et) &&
        n != t->ops[0]->shape->rank)
      return perr_at(p, at, "padding has %d dimensions but the operand has "
                            "rank %d",
                     n, t->ops[0]->shape->rank);
    return true;
  }

  /* Convolution and windows. */
  case A_WINDOW:
    if (op == HLO_CONVOLUTION || op == HLO_CUSTOM_CALL)
      return parse_window(p, &conv_of(p, t)->window);
    return parse_window(p, &t->window);
  case A_DIM_LABELS:
    return parse_conv_dnums(p, &conv_of(p, t)->dnums);
  case A_FEATURE_GROUP_COUNT:
    return parse_int64(p, &conv_of(p, t)->feature_group_count);
  case A_BATCH_GROUP_COUNT:
    return parse_int64(p, &conv_of(p, t)->batch_group_count);

  /* Dot. */
  case A_LHS_BATCH_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA, &dot_of(p, t)->lhs_batch);
  case A_RHS_BATCH_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA, &dot_of(p, t)->rhs_batch);
  case A_LHS_CONTRACTING_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &dot_of(p, t)->lhs_contracting);
  case A_RHS_CONTRACTING_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &dot_of(p, t)->rhs_contracting);
  case A_LHS_RAGGED_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA, &dot_of(p, t)->lhs_ragged);
  case A_RHS_GROUP_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA, &dot_of(p, t)->rhs_group);
  case A_OPERAND_PRECISION:
    return parse_precision_list(p, &t->nprecision, &t->precision);
  case A_ALGORITHM:
    if (op == HLO_RNG_BIT_GENERATOR) {
      static const char *const algos[] = {"rng_default", "rng_three_fry",
                                          "rng_philox"};
      if (!parse_enum(p, "rng algorithm", algos, 3, &e))
        return false;
      t->rng_algo = (RngAlgo)(RNG_DEFAULT + e);
      return true;
    }
    if (ptok(p) != TK_IDENT)
      return perr(p, "expected a dot algorithm like ALG_DOT_F32_F32_F32");
    t->algorithm_dot = arena_strndup(p->a, p->lx.tok.v, p->lx.tok.vn);
    padvance(p);
    return true;
  case A_SPARSITY:
    return parse_raw_value(p, &t->sparsity);

  /* Gather and scatter. */
  case A_OFFSET_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &gather_of(p, t)->offset_dims);
  case A_COLLAPSED_SLICE_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &gather_of(p, t)->collapsed_slice_dims);
  case A_START_INDEX_MAP:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &gather_of(p, t)->start_index_map);
  case A_OPERAND_BATCHING_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &gather_of(p, t)->operand_batching_dims);
  case A_START_INDICES_BATCHING_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &gather_of(p, t)->start_indices_batching_dims);
  case A_INDEX_VECTOR_DIM:
    if (op == HLO_SCATTER)
      return parse_int64(p, &scatter_of(p, t)->index_vector_dim);
    return parse_int64(p, &gather_of(p, t)->index_vector_dim);
  case A_SLICE_SIZES:
    if (op == HLO_COLLECTIVE_PERMUTE || op == HLO_COLLECTIVE_PERMUTE_START) {
      char *raw;
      if (!parse_raw_value(p, &raw))
        return false;
      add_raw(p, &t->nraw_attrs, &t->raw_attrs, "slice_sizes", 11, raw);
      return true;
    }
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA, &t->gather_slice_sizes);
  case A_UPDATE_WINDOW_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &scatter_of(p, t)->update_window_dims);
  case A_INSERTED_WINDOW_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &scatter_of(p, t)->inserted_window_dims);
  case A_SCATTER_DIMS_TO_OPERAND_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &scatter_of(p, t)->scatter_dims_to_operand_dims);
  case A_INPUT_BATCHING_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &scatter_of(p, t)->input_batching_dims);
  case A_SCATTER_INDICES_BATCHING_DIMS:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA,
                          &scatter_of(p, t)->scatter_indices_batching_dims);
  case A_INDICES_ARE_SORTED:
    return parse_bool(p, &t->indices_are_sorted);
  case A_UNIQUE_INDICES:
    return parse_bool(p, &t->unique_indices);

  /* Compare, fusion, sort, top-k, rng, reduce-precision, batch norm, fft. */
  case A_DIRECTION: {
    static const char *const dirs[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
    if (!parse_enum(p, "comparison direction", dirs, 6, &e))
      return false;
    t->cmp_dir = (CmpDir)(CMP_EQ + e);
    return true;
  }
  case A_TYPE: {
    static const char *const types[] = {"FLOAT", "TOTALORDER", "SIGNED",
                                        "UNSIGNED", "PARTIALORDER"};
    if (!parse_enum(p, "comparison type", types, 5, &e))
      return false;
    t->cmp_type = (CmpType)(CMPT_FLOAT + e);
    return true;
  }
  case A_KIND: {
    static const char *const kinds[] = {"kLoop", "kInput", "kOutput", "kCustom"};
    if (!parse_enum(p, "fusion kind", kinds, 4, &e))
      return false;
    t->fusion_kind = (FusionKind)(FUSION_LOOP + e);
    return true;
  }
  case A_IS_STABLE:
    return parse_bool(p, &t->is_stable);
  case A_K:
    return parse_int64(p, &t->topk_k);
  case A_LARGEST:
    return parse_bool(p, &t->topk_largest);
  case A_DISTRIBUTION: {
    static const char *const dists[] = {"rng_uniform", "rng_normal"};
    if (!parse_enum(p, "rng distribution", dists, 2, &e))
      return false;
    t->rng_dist = (RngDist)(RNG_UNIFORM + e);
    return true;
  }
  case A_EXPONENT_BITS:
    return parse_int64(p, &t->exponent_bits);
  case A_MANTISSA_BITS:
    return parse_int64(p, &t->mantissa_bits);
  case A_EPSILON: {
    const char *vat = p->lx.tok.s;
    if (!parse_double(p, &t->epsilon))
      return false;
    if (fabs(t->epsilon) > 3.4028234663852886e38)
      return perr_at(p, vat, "epsilon is out of range for a float");
    return true;
  }
  case A_FEATURE_INDEX:
    return parse_int64(p, &t->feature_index);
  case A_FFT_TYPE: {
    static const char *const ffts[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
    if (!parse_enum(p, "fft type", ffts, 4, &e))
      return false;
    t->fft_type = (FftType)(FFT_FFT + e);
    return true;
  }
  case A_FFT_LENGTH:
    return parse_i64_list(p, TK_LBRACE, TK_RBRACE, TK_COMMA, &t->fft_length);

  /* Triangular solve and Cholesky. */
  case A_LEFT_SIDE:
    return parse_bool(p, &t->tri_left_side);
  case A_LOWER:
    if (op == HLO_CHOLESKY)
      return parse_bool(p, &t->cholesky_lower);
    return parse_bool(p, &t->tri_lower);
  case A_UNIT_DIAGONAL:
    return parse_bool(p, &t->tri_unit_diagonal);
  case A_TRANSPOSE_A: {
    static const char *const tr[] = {"NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};
    if (!parse_enum(p, "transpose_a value", tr, 3, &e))
      return false;
    t->tri_transpose_a = (TriTranspose)(TRI_NO_TRANSPOSE + e);
    return true;
  }

  /* Custom call. */
  case A_CUSTOM_CALL_TARGET:
    return parse_string(p, &cc_of(p, t)->target);
  case A_API_VERSION: {
    static const char *const apis[] = {
        "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
        "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"};
    /* Older XLA printed the unset value; it means "not specified". */
    if (is_ident(&p->lx.tok, "API_VERSION_UNSPECIFIED")) {
      cc_of(p, t)->api_version = CC_API_NONE;
      padvance(p);
      return true;
    }
    if (!parse_enum(p, "custom-call API version", apis, 4, &e))
      return false;
    cc_of(p, t)->api_version = (CustomCallApi)(CC_API_ORIGINAL + e);
    return true;
  }
  case A_CUSTOM_CALL_HAS_SIDE_EFFECT:
    return parse_bool(p, &cc_of(p, t)->has_side_effect);
  case A_OPERAND_LAYOUT_CONSTRAINTS: {
    CustomCallAttrs *cc = cc_of(p, t);
    cc->has_layout_constraints = true;
    if (!parse_shape_list(p, &cc->nlayout_constraints, &cc->layout_constraints))
      return false;
    if (cc->nlayout_constraints != t->nops)
      return perr_at(p, at, "expected %d operand layout constraints, %d given",
                     t->nops, cc->nlayout_constraints);
    for (int i = 0; i < t->nops; i++)
      if (!parse_shapes_compatible(cc->layout_constraints[i], t->ops[i]->shape))
        return perr_at(p, at, "operand layout constraint %s for operand %d is "
                              "not compatible with the operand shape %s",
                       parse_shape_str(p, cc->layout_constraints[i]), i,
                       parse_shape_str(p, t->ops[i]->shape));
    return true;
  }
  case A_OUTPUT_TO_OPERAND_ALIASING: {
    CustomCallAttrs *cc = cc_of(p, t);
    return parse_alias_list(p, false, &cc->naliases, &cc->aliases);
  }
  case A_SCHEDULE: {
    static const char *const sch[] = {"SCHEDULE_NONE", "SCHEDULE_LATEST",
                                      "SCHEDULE_EARLIEST"};
    if (!parse_enum(p, "custom-call schedule", sch, 3, &e))
      return false;
    cc_of(p, t)->schedule = arena_strdup(p->a, sch[e]);
    return true;
  }
  case A_LITERAL:
    return parse_literal_with_shape(p, &cc_of(p, t)->literal);
  case A_PADDING_TYPE: {
    static const char *const pts[] = {"PADDING_INVALID", "PADDING_VALID",
                                      "PADDING_SAME"};
    if (!parse_enum(p, "padding type", pts, 3, &e))
      return false;
    t->padding_type = arena_strdup(p->a, pts[e]);
    return true;
  }

  /* Collectives, send/recv, feeds. */
  case A_CHANNEL_ID:
    t->has_channel_id = true;
    return parse_int64(p, &t->channel_id);
  case A_REPLICA_GROUPS:
    if (is_ident(&p->lx.tok, "mesh")) {
      char *raw;
      if (!parse_raw_value(p, &raw))
        return false;
      if (replica_groups_from_mesh(p->a, raw, &t->replica_groups))
        return true;
      pwarn_at(p, at, "replica_groups in mesh form kept as raw text");
      add_raw(p, &t->nraw_attrs, &t->raw_attrs, "replica_groups", 14, raw);
      return true;
    }
    return parse_replica_groups(p, &t->replica_groups);
  case A_USE_GLOBAL_DEVICE_IDS:
    return parse_bool(p, &t->use_global_device_ids);
  case A_CONSTRAIN_LAYOUT:
    return parse_bool(p, &t->constrain_layout);
  case A_SOURCE_TARGET_PAIRS: {
    int n;
    I64List *l;
    if (!parse_i64_list_list(p, &n, &l))
      return false;
    t->npairs = n;
    t->source_target_pairs = arena_array(p->a, (size_t)n, sizeof(int64_t[2]));
    for (int i = 0; i < n; i++) {
      if (l[i].n != 2)
        return perr_at(p, at, "source_target_pairs must be a list of pairs");
      t->source_target_pairs[i][0] = l[i].v[0];
      t->source_target_pairs[i][1] = l[i].v[1];
    }
    return true;
  }
  case A_IS_HOST_TRANSFER:
    return parse_bool(p, &t->is_host_transfer);
  case A_INFEED_CONFIG:
    return parse_string(p, &t->infeed_config);
  case A_OUTFEED_CONFIG:
    return parse_string(p, &t->outfeed_config);
  case A_OUTFEED_SHAPE:
    return parse_shape(p, &t->outfeed_shape);

  /* Domain, calls, scan, copy-start. */
  case A_DOMAIN:
    return parse_raw_value(p, &t->domain);
  case A_IS_COMPOSITE:
    return parse_bool(p, &t->is_composite);
  case A_IS_REVERSE:
    return parse_bool(p, &t->scan_is_reverse);
  case A_IS_ASSOCIATIVE:
    return parse_bool(p, &t->scan_is_associative);
  case A_NUM_CARRIES:
    return parse_int64(p, &t->scan_num_carries);
  case A_CROSS_PROGRAM_PREFETCH_INDEX: {
    const char *vat = p->lx.tok.s;
    if (!parse_int64(p, &t->cross_program_prefetch_index))
      return false;
    if (t->cross_program_prefetch_index < INT32_MIN ||
        t->cross_program_prefetch_index > INT32_MAX)
      return perr_at(p, vat, "cross_program_prefetch_index is out of range");
    return true;
  }
  case A_IS_CROSS_PROGRAM_PREFETCH:
    return parse_bool(p, &t->is_cross_program_prefetch);

  case A_DELTA:
    return parse_int64(p, &t->rng_delta);
  case A_INFERRED_DIMENSION:
    t->has_inferred_dimension = true;
    return parse_int64(p, &t->inferred_dimension);

  /* Known to XLA, without a typed field here: kept verbatim. */
  case A_CONV_KIND:
  case A_MODE: {
    char *raw;
    if (!parse_raw_value(p, &raw))
      return false;
    add_raw(p, &t->nraw_attrs, &t->raw_attrs, attr_names[id],
            strlen(attr_names[id]), raw);
    return true;
  }
  }
  return perr_at(p, at, "internal: unhandled attribute");
}

static bool parse_one_attr(Parser *p, AttrState *st) {
  const Token *t = &p->lx.tok;
  if (t->kind != TK_ATTR)
    return perr(p, "expected an attribute name");
  const char *at = t->s, *name = t->v;
  size_t nlen = t->vn;
  int id = attr_lookup(name, nlen);
  if (id < 0) {
    HloInstr *m = st->main;
    if (raw_has(m->nraw_attrs, m->raw_attrs, name, nlen))
      return perr_at(p, at, "attribute '%.*s' is given twice", (int)nlen, name);
    padvance(p);
    char *raw;
    if (!parse_raw_value(p, &raw))
      return false;
    pwarn_at(p, at, "unknown attribute '%.*s' kept as raw text", (int)nlen,
             name);
    add_raw(p, &m->nraw_attrs, &m->raw_attrs, name, nlen, raw);
    return true;
  }
  if (seen(st, id))
    return perr_at(p, at, "attribute '%s' is given twice", attr_names[id]);
  st->seen[id / 64] |= 1ull << (id % 64);
  padvance(p);
  if (!attr_value(p, st, id, at))
    return false;
  /* Attributes XLA sets on both an async op and the op it wraps. */
  if (st->in != st->main) {
    HloInstr *w = st->in, *m = st->main;
    switch (id) {
    case A_METADATA: m->metadata = w->metadata; break;
    case A_BACKEND_CONFIG: m->backend_config = w->backend_config; break;
    case A_FRONTEND_ATTRIBUTES: m->frontend_attrs = w->frontend_attrs; break;
    case A_STATISTICS: m->statistics = w->statistics; break;
    case A_ORIGIN: m->origin = w->origin; break;
    default: break;
    }
  }
  return true;
}

/* Attributes an opcode requires; the first missing one, or NULL. */
static const char *missing_required(const AttrState *st) {
  const HloInstr *t = st->in;
#define NEED(id)                                                               \
  do {                                                                         \
    if (!seen(st, id))                                                         \
      return attr_names[id];                                                   \
  } while (0)
  switch (t->op) {
  case HLO_GET_TUPLE_ELEMENT: NEED(A_INDEX); break;
  case HLO_IOTA: NEED(A_IOTA_DIMENSION); break;
  case HLO_BROADCAST:
    if (t->nops == 1 && t->ops[0]->shape->rank > 0)
      NEED(A_DIMENSIONS);
    break;
  case HLO_TRANSPOSE: case HLO_REVERSE: case HLO_CONCATENATE:
  case HLO_GET_DIMENSION_SIZE: case HLO_SET_DIMENSION_SIZE:
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START:
    NEED(A_DIMENSIONS);
    break;
  case HLO_REDUCE: case HLO_SORT: case HLO_SCAN:
    NEED(A_DIMENSIONS);
    NEED(A_TO_APPLY);
    if (t->op == HLO_SCAN)
      NEED(A_NUM_CARRIES);
    break;
  case HLO_REDUCE_SCATTER:
    NEED(A_DIMENSIONS);
    NEED(A_TO_APPLY);
    break;
  case HLO_MAP: case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START:
  case HLO_REDUCE_WINDOW: case HLO_CALL:
    NEED(A_TO_APPLY);
    break;
  case HLO_SCATTER:
    NEED(A_UPDATE_WINDOW_DIMS);
    NEED(A_INSERTED_WINDOW_DIMS);
    NEED(A_SCATTER_DIMS_TO_OPERAND_DIMS);
    NEED(A_INDEX_VECTOR_DIM);
    NEED(A_TO_APPLY);
    break;
  case HLO_GATHER:
    NEED(A_OFFSET_DIMS);
    NEED(A_COLLAPSED_SLICE_DIMS);
    NEED(A_START_INDEX_MAP);
    NEED(A_INDEX_VECTOR_DIM);
    NEED(A_SLICE_SIZES);
    break;
  case HLO_FUSION: NEED(A_KIND); NEED(A_CALLS); break;
  case HLO_WHILE: NEED(A_CONDITION); NEED(A_BODY); break;
  case HLO_SELECT_AND_SCATTER: NEED(A_SELECT); NEED(A_SCATTER); break;
  case HLO_COMPARE: NEED(A_DIRECTION); break;
  case HLO_SLICE: NEED(A_SLICE); break;
  case HLO_DYNAMIC_SLICE: NEED(A_DYNAMIC_SLICE_SIZES); break;
  case HLO_PAD: NEED(A_PADDING); break;
  case HLO_CONVOLUTION: NEED(A_DIM_LABELS); break;
  case HLO_FFT: NEED(A_FFT_TYPE); NEED(A_FFT_LENGTH); break;
  case HLO_CUSTOM_CALL: NEED(A_CUSTOM_CALL_TARGET); break;
  case HLO_RNG: NEED(A_DISTRIBUTION); break;
  case HLO_RNG_BIT_GENERATOR: NEED(A_ALGORITHM); break;
  case HLO_RNG_GET_AND_UPDATE_STATE: NEED(A_DELTA); break;
  case HLO_REDUCE_PRECISION: NEED(A_EXPONENT_BITS); NEED(A_MANTISSA_BITS); break;
  case HLO_BATCH_NORM_TRAINING: case HLO_BATCH_NORM_INFERENCE:
  case HLO_BATCH_NORM_GRAD:
    NEED(A_EPSILON);
    NEED(A_FEATURE_INDEX);
    break;
  case HLO_COLLECTIVE_PERMUTE: case HLO_COLLECTIVE_PERMUTE_START:
    NEED(A_SOURCE_TARGET_PAIRS);
    break;
  case HLO_TOPK: NEED(A_K); break;
  case HLO_DOMAIN: NEED(A_DOMAIN); break;
  case HLO_ASYNC_START:
    if (!t->async_sugar)
      NEED(A_CALLS);
    break;
  default: break;
  }
#undef NEED
  return NULL;
}

/* Checks that need the whole attribute list. */
static bool check_attrs(Parser *p, AttrState *st, const char *at) {
  HloInstr *t = st->in;
  const char *miss = missing_required(st);
  if (miss)
    return perr_at(p, at, "attribute %s is expected but not seen", miss);
  if (t->op == HLO_MAP && !t->has_dims && t->nops > 0 && t->ops[0]->shape &&
      shape_is_array(t->ops[0]->shape)) {
    /* Without dimensions=, map applies over every dimension, as in XLA. */
    int r = t->ops[0]->shape->rank;
    t->dims.n = r;
    t->dims.v = ARENA_ARRAY(p->a, int64_t, r);
    for (int k = 0; k < r; k++)
      t->dims.v[k] = k;
    t->has_dims = true;
  }
  if (t->op == HLO_CONDITIONAL) {
    if (st->called_kind != CALLED_COND && st->called_kind != CALLED_LIST)
      return perr_at(p, at, "conditional needs true_computation= and "
                            "false_computation=, or branch_computations=");
    int nb = st->called_kind == CALLED_COND ? 2 : st->ncalled;
    if (nb == 0 || t->nops != nb + 1)
      return perr_at(p, at, "conditional has %d branch computations but %d "
                            "branch operands",
                     nb, t->nops - 1);
  }
  if (st->called_kind == CALLED_COND || st->called_kind == CALLED_WHILE ||
      st->called_kind == CALLED_SAS) {
    if (!st->pair[0] || !st->pair[1])
      return perr_at(p, at, "%s", st->called_kind == CALLED_WHILE
                                      ? "while needs both condition= and body="
                              : st->called_kind == CALLED_SAS
                                  ? "select-and-scatter needs both select= and "
                                    "scatter="
                                  : "conditional needs both true_computation= "
                                    "and false_computation=");
    st->called = ARENA_ARRAY(p->a, HloComp *, 2);
    st->called[0] = st->pair[0];
    st->called[1] = st->pair[1];
    st->ncalled = 2;
  }
  if (st->ncalled) {
    t->ncalled = st->ncalled;
    t->called = st->called;
  }
  bool one_dim = t->op == HLO_SORT || t->op == HLO_CONCATENATE ||
                 t->op == HLO_SCAN || t->op == HLO_ALL_GATHER ||
                 t->op == HLO_ALL_GATHER_START || t->op == HLO_REDUCE_SCATTER ||
                 t->op == HLO_GET_DIMENSION_SIZE ||
                 t->op == HLO_SET_DIMENSION_SIZE ||
                 (t->op == HLO_ALL_TO_ALL && t->has_dims);
  if (one_dim && t->dims.n != 1)
    return perr_at(p, at, "%s expects exactly one dimension in dimensions=",
                   hlo_op_name(t->op));
  return true;
}

bool parse_instr_attrs(Parser *p, HloInstr *in, HloInstr *wrapped,
                       bool allow_attrs, const char *op_at) {
  AttrState st = {0};
  st.main = in;
  st.in = wrapped ? wrapped : in;
  if (allow_attrs)
    while (peat(p, TK_COMMA))
      if (!parse_one_attr(p, &st))
        return false;
  return check_attrs(p, &st, op_at);
}

/*
 * The module header.
 */
static bool header_is(const Token *t, const char *name) {
  size_t n = strlen(name);
  return t->vn == n && memcmp(t->v, name, n) == 0;
}

bool parse_module_attrs(Parser *p, HloModule *m) {
  static const char *const known[] = {
      "is_scheduled", "replica_count", "num_partitions", "input_output_alias",
      "buffer_donor", "alias_passthrough_params", "entry_computation_layout",
      "frontend_attributes", "allow_spmd_sharding_propagation_to_parameters",
      "allow_spmd_sharding_propagation_to_output"};
  bool have[ARRAY_LEN(known)] = {0};
  while (peat(p, TK_COMMA)) {
    const Token *t = &p->lx.tok;
    if (t->kind != TK_ATTR)
      return perr(p, "expected an attribute name");
    const char *at = t->s, *name = t->v;
    size_t nlen = t->vn;
    int k = -1;
    for (size_t i = 0; i < ARRAY_LEN(known); i++)
      if (header_is(t, known[i]))
        k = (int)i;
    if (k < 0) {
      if (raw_has(m->nraw_attrs, m->raw_attrs, name, nlen))
        return perr_at(p, at, "attribute '%.*s' is given twice", (int)nlen,
                       name);
      bool quiet = header_is(t, "origin_recovery_table");
      padvance(p);
      char *raw;
      if (!parse_raw_value(p, &raw))
        return false;
      if (!quiet)
        pwarn_at(p, at, "unknown module attribute '%.*s' kept as raw text",
                 (int)nlen, name);
      add_raw(p, &m->nraw_attrs, &m->raw_attrs, name, nlen, raw);
      continue;
    }
    if (have[k])
      return perr_at(p, at, "attribute '%s' is given twice", known[k]);
    have[k] = true;
    padvance(p);
    bool ok;
    switch (k) {
    case 0:
      m->has_is_scheduled = true;
      ok = parse_bool(p, &m->is_scheduled);
      break;
    case 1: ok = parse_int64(p, &m->replica_count); break;
    case 2: ok = parse_int64(p, &m->num_partitions); break;
    case 3: ok = parse_alias_list(p, true, &m->nio_alias, &m->io_alias); break;
    case 4: ok = parse_buffer_donors(p, &m->nbuffer_donors, &m->buffer_donors); break;
    case 5: ok = parse_bool(p, &m->alias_passthrough_params); break;
    case 6: ok = parse_program_shape(p, &m->entry_layout); break;
    case 7: ok = parse_kv_list(p, &m->frontend_attrs); break;
    case 8: ok = parse_bool_list(p, true, &m->nspmd_params, &m->spmd_params); break;
    default: ok = parse_bool_list(p, true, &m->nspmd_output, &m->spmd_output); break;
    }
    if (!ok)
      return false;
  }
  return true;
}
