/*
 * elemental.c - the elemental emitter: the value of an instruction of a
 * fusion computation (or of a single instruction) at a multi-index, emitted
 * as LLVM IR.  Elementwise ops apply at the same index; index-transforming
 * ops (broadcast, reshape, bitcast, transpose, slice, reverse, pad,
 * concatenate, dynamic-slice) go through the indexing maps of lib/analysis,
 * their affine results evaluated in IR and their domain constraints
 * selecting the padding value or the concatenated operand.  A reduce (in an
 * epilogue or a loop fusion) is a loop over its reduced dimensions per
 * output element.  Values are
 * cached per (instruction, index values) within dominating blocks; an
 * instruction the caller bound (the normalization kernel's row results)
 * has its bound value at every index.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

typedef struct CacheEnt {
  const HloInstr *instr;
  int rank;
  LLVMValueRef *idx;
  LLVMValueRef v;
} CacheEnt;

typedef struct ConstGlobal {
  const HloInstr *instr;
  LLVMValueRef g;
} ConstGlobal;

/* An instruction whose value at every index the caller gave
 * (cg_elemental_bind). */
typedef struct Bound {
  const HloInstr *instr;
  LLVMValueRef v;
} Bound;

struct CgElemental {
  Codegen *cg;
  const HloComp *comp;
  const HloInstr *single;
  int nparams;                    /* fusion parameters / operands of single */
  int *leaf_off;                  /* first leaf pointer of each */
  LLVMValueRef *leaf_ptrs;
  const LLVMValueRef *scalar_args; /* scalar mode: parameter values */
  Diag *d;
  Vec(CacheEnt) cache;
  Vec(ConstGlobal) consts;
  Vec(Bound) bound;
};

static int leaf_count(const Shape *s) {
  if (s->et != ET_TUPLE)
    return 1;
  int n = 0;
  for (int k = 0; k < s->ntuple; k++)
    n += leaf_count(s->tuple[k]);
  return n;
}

CgElemental *cg_elemental_new(Codegen *cg, const HloComp *comp,
                              const HloInstr *single,
                              LLVMValueRef const *in_leaf_ptrs, Diag *d) {
  CgElemental *e = xcalloc(1, sizeof *e);
  e->cg = cg;
  e->comp = comp;
  e->single = single;
  e->d = d;
  e->nparams = comp ? comp->nparams : single->nops;
  e->leaf_off = xcalloc((size_t)e->nparams + 1, sizeof *e->leaf_off);
  int n = 0;
  for (int k = 0; k < e->nparams; k++) {
    e->leaf_off[k] = n;
    const HloInstr *p = comp ? comp->params[k] : single->ops[k];
    n += p ? leaf_count(p->shape) : 0;
  }
  e->leaf_ptrs = xcalloc((size_t)n + 1, sizeof *e->leaf_ptrs);
  if (in_leaf_ptrs)
    memcpy(e->leaf_ptrs, in_leaf_ptrs, (size_t)n * sizeof *e->leaf_ptrs);
  return e;
}

void cg_elemental_clear_cache(CgElemental *e) {
  for (int k = 0; k < e->cache.len; k++)
    free(e->cache.data[k].idx);
  e->cache.len = 0;
}

static void cache_truncate(CgElemental *e, int len) {
  for (int k = len; k < e->cache.len; k++)
    free(e->cache.data[k].idx);
  e->cache.len = len;
}

int cg_elemental_cache_mark(const CgElemental *e) {
  return e->cache.len;
}

void cg_elemental_cache_reset(CgElemental *e, int mark) {
  if (mark >= 0 && mark <= e->cache.len)
    cache_truncate(e, mark);
}

void cg_elemental_free(CgElemental *e) {
  if (!e)
    return;
  cg_elemental_clear_cache(e);
  vec_free(&e->cache);
  vec_free(&e->consts);
  vec_free(&e->bound);
  free(e->leaf_off);
  free(e->leaf_ptrs);
  free(e);
}

static LLVMValueRef cache_get(CgElemental *e, const HloInstr *x, int rank,
                              LLVMValueRef const *idx) {
  for (int k = e->cache.len - 1; k >= 0; k--) {
    CacheEnt *c = &e->cache.data[k];
    if (c->instr != x || c->rank != rank)
      continue;
    if (rank == 0 || memcmp(c->idx, idx, (size_t)rank * sizeof *idx) == 0)
      return c->v;
  }
  return NULL;
}

static void cache_put(CgElemental *e, const HloInstr *x, int rank,
                      LLVMValueRef const *idx, LLVMValueRef v) {
  CacheEnt c = {x, rank, NULL, v};
  if (rank > 0) {
    c.idx = xcalloc((size_t)rank, sizeof *idx);
    memcpy(c.idx, idx, (size_t)rank * sizeof *idx);
  }
  vec_push(&e->cache, c);
}

/* The leaf pointer index x reads from (a parameter, an operand of single,
 * or a get-tuple-element chain of one), or -1 when x is computed. */
static int leaf_index(const CgElemental *e, const HloInstr *x) {
  if (e->single) {
    if (x == e->single)
      return -1;
    for (int k = 0; k < e->single->nops; k++)
      if (e->single->ops[k] == x)
        return e->leaf_off[k];
    if (x->op != HLO_GET_TUPLE_ELEMENT)
      return -1;
  } else if (x->op == HLO_PARAMETER) {
    if (x->param_number < 0 || x->param_number >= e->nparams)
      return -1;
    return e->leaf_off[x->param_number];
  }
  if (x->op != HLO_GET_TUPLE_ELEMENT || x->nops != 1)
    return -1;
  const HloInstr *t = x->ops[0];
  int base = leaf_index(e, t);
  if (base < 0 || t->shape->et != ET_TUPLE || x->tuple_index < 0 ||
      x->tuple_index >= t->shape->ntuple)
    return -1;
  for (int64_t k = 0; k < x->tuple_index; k++)
    base += leaf_count(t->shape->tuple[k]);
  return base;
}

static LLVMValueRef fail(CgElemental *e, const HloInstr *x, const char *why) {
  diag_error(e->d, x->loc, "codegen: %s '%s' (%s)", why, hlo_op_name(x->op),
             x->name ? x->name : "?");
  return NULL;
}

/*
 * Affine expressions in IR
 */
typedef struct MapEnv {
  LLVMValueRef *dims, *syms;
  const Interval *dimiv, *symiv;
} MapEnv;

static LLVMValueRef aff_emit(Codegen *cg, const AffExpr *x, const MapEnv *env) {
  LLVMBuilderRef b = cg->b;
  switch (x->kind) {
  case AFF_CONST: return cg_const_i64(cg, x->value);
  case AFF_DIM: return env->dims[x->value];
  case AFF_SYM: return env->syms[x->value];
  case AFF_FLOORDIV: case AFF_CEILDIV: case AFF_MOD: {
    LLVMValueRef a = aff_emit(cg, x->lhs, env);
    LLVMValueRef dv = cg_const_i64(cg, x->value);
    bool nonneg = aff_range(x->lhs, env->dimiv, env->symiv).lo >= 0;
    if (x->kind == AFF_MOD) {
      if (nonneg) return LLVMBuildURem(b, a, dv, "");
      LLVMValueRef r = LLVMBuildSRem(b, a, dv, "");
      LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, r, cg_const_i64(cg, 0), "");
      return LLVMBuildSelect(b, neg, LLVMBuildAdd(b, r, dv, ""), r, "");
    }
    if (x->kind == AFF_FLOORDIV) {
      if (nonneg) return LLVMBuildUDiv(b, a, dv, "");
      LLVMValueRef q = LLVMBuildSDiv(b, a, dv, "");
      LLVMValueRef r = LLVMBuildSRem(b, a, dv, "");
      LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, r, cg_const_i64(cg, 0), "");
      return LLVMBuildSub(b, q, LLVMBuildZExt(b, neg, cg_i64(cg), ""), "");
    }
    if (nonneg)
      return LLVMBuildUDiv(b, LLVMBuildAdd(b, a, cg_const_i64(cg, x->value - 1), ""),
                           dv, "");
    LLVMValueRef q = LLVMBuildSDiv(b, a, dv, "");
    LLVMValueRef r = LLVMBuildSRem(b, a, dv, "");
    LLVMValueRef pos = LLVMBuildICmp(b, LLVMIntSGT, r, cg_const_i64(cg, 0), "");
    return LLVMBuildAdd(b, q, LLVMBuildZExt(b, pos, cg_i64(cg), ""), "");
  }
  case AFF_SUM: {
    LLVMValueRef acc = NULL;
    for (int k = 0; k < x->nterms; k++) {
      LLVMValueRef t = aff_emit(cg, x->terms[k].atom, env);
      if (x->terms[k].coef != 1)
        t = LLVMBuildMul(b, t, cg_const_i64(cg, x->terms[k].coef), "");
      acc = acc ? LLVMBuildAdd(b, acc, t, "") : t;
    }
    if (x->value != 0)
      acc = LLVMBuildAdd(b, acc, cg_const_i64(cg, x->value), "");
    return acc;
  }
  }
  return NULL;
}

bool cg_emit_map_results(Codegen *cg, const IndexingMap *m, LLVMValueRef const *dims,
                         LLVMValueRef *out) {
  if (m->undefined || imap_nsyms(m) > 0)
    return false;
  MapEnv env = {(LLVMValueRef *)dims, NULL, m->dims, NULL};
  for (int k = 0; k < m->nresults; k++)
    out[k] = aff_emit(cg, m->results[k], &env);
  return true;
}

/* true (i1) when the point is in the map's domain (dimension bounds that
 * cut the output box, and the constraints). */
static LLVMValueRef in_domain(Codegen *cg, const IndexingMap *m,
                              const Shape *out, const MapEnv *env) {
  LLVMBuilderRef b = cg->b;
  LLVMValueRef ok = LLVMConstInt(LLVMInt1TypeInContext(cg->ctx), 1, false);
  if (m->empty)
    return LLVMConstInt(LLVMInt1TypeInContext(cg->ctx), 0, false);
  for (int k = 0; k < m->ndims; k++) {
    Interval iv = m->dims[k];
    if (iv.lo > 0)
      ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSGE, env->dims[k],
                                             cg_const_i64(cg, iv.lo), ""), "");
    if (iv.hi < out->dims[k] - 1)
      ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSLE, env->dims[k],
                                             cg_const_i64(cg, iv.hi), ""), "");
  }
  for (int k = 0; k < m->ncons; k++) {
    LLVMValueRef v = aff_emit(cg, m->cons[k].expr, env);
    Interval r = m->cons[k].range;
    if (r.lo != INT64_MIN)
      ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSGE, v, cg_const_i64(cg, r.lo), ""), "");
    if (r.hi != INT64_MAX)
      ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSLE, v, cg_const_i64(cg, r.hi), ""), "");
  }
  return ok;
}

static LLVMValueRef emit(CgElemental *e, const HloInstr *x, LLVMValueRef const *idx);

/* Sets up env for map m at output index idx: runtime variables are read
 * (the elements of their HLO values), converted to i64 and clamped to their
 * ranges.  Returns false on error. */
static bool env_init(CgElemental *e, const HloInstr *x, const IndexingMap *m,
                     LLVMValueRef const *idx, MapEnv *env) {
  Codegen *cg = e->cg;
  if (m->undefined || m->nrange > 0) {
    fail(e, x, "no usable indexing map for");
    return false;
  }
  env->dims = (LLVMValueRef *)idx;
  env->dimiv = m->dims;
  int ns = imap_nsyms(m);
  env->syms = xcalloc((size_t)ns + 1, sizeof *env->syms);
  Interval *symiv = xcalloc((size_t)ns + 1, sizeof *symiv);
  env->symiv = symiv;
  for (int k = 0; k < m->nrt; k++) {
    const RtVar *rv = &m->rt[k];
    symiv[k] = rv->range;
    LLVMValueRef ri[64];
    if (rv->nexprs > 64) {
      fail(e, x, "runtime index of too high rank in");
      return false;
    }
    MapEnv inner = {env->dims, env->syms, m->dims, symiv};
    for (int j = 0; j < rv->nexprs; j++)
      ri[j] = aff_emit(cg, rv->exprs[j], &inner);
    LLVMValueRef v = emit(e, rv->hlo, ri);
    if (!v)
      return false;
    ElemType et = rv->hlo->shape->et;
    if (!et_is_int(et)) {
      fail(e, x, "non-integer runtime index in");
      return false;
    }
    v = cg_emit_convert(cg, et, et_is_signed_int(et) ? ET_S64 : ET_U64, v);
    LLVMValueRef lo = cg_const_i64(cg, rv->range.lo), hi = cg_const_i64(cg, rv->range.hi);
    v = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, v, lo, ""), lo, v, "");
    v = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, v, hi, ""), hi, v, "");
    env->syms[k] = v;
  }
  return true;
}

static void env_free(MapEnv *env) {
  free(env->syms);
  free((void *)env->symiv);
}

/* The operand value operand `k` of x at the results of m. */
static LLVMValueRef read_mapped(CgElemental *e, const HloInstr *x, int k,
                                const IndexingMap *m, const MapEnv *env) {
  const HloInstr *o = x->ops[k];
  LLVMValueRef oi[64];
  if (m->nresults != (shape_is_array(o->shape) ? o->shape->rank : -1) ||
      m->nresults > 64)
    return fail(e, x, "indexing map does not match the operand of");
  for (int j = 0; j < m->nresults; j++)
    oi[j] = aff_emit(e->cg, m->results[j], env);
  return emit(e, o, oi);
}

static const IndexingMap *single_map(const InstrIndexing *ii, int k) {
  if (!ii || k >= ii->n || ii->sets[k].n != 1)
    return NULL;
  return ii->sets[k].maps[0];
}

/* broadcast, reshape, bitcast, transpose, slice, reverse, dynamic-slice:
 * operand 0 through its one map. */
static LLVMValueRef emit_mapped(CgElemental *e, const HloInstr *x,
                                LLVMValueRef const *idx) {
  InstrIndexing *ii = indexing_out_to_in(e->cg->aff, x, 0);
  const IndexingMap *m = single_map(ii, 0);
  if (!m)
    return fail(e, x, "no single indexing map for");
  MapEnv env;
  if (!env_init(e, x, m, idx, &env)) {
    env_free(&env);
    return NULL;
  }
  LLVMValueRef v = read_mapped(e, x, 0, m, &env);
  env_free(&env);
  return v;
}

/* pad and concatenate: operands selected by their maps' domains, in
 * branches merged by a phi.  pad's padding value is the fallback. */
static LLVMValueRef emit_selected(CgElemental *e, const HloInstr *x,
                                  LLVMValueRef const *idx) {
  Codegen *cg = e->cg;
  InstrIndexing *ii = indexing_out_to_in(cg->aff, x, 0);
  bool is_pad = x->op == HLO_PAD;
  int nsrc = is_pad ? 1 : x->nops;
  LLVMValueRef fallback = NULL;
  if (is_pad) {
    if (x->nops != 2)
      return fail(e, x, "malformed");
    fallback = emit(e, x->ops[1], NULL);
    if (!fallback)
      return NULL;
  }
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  LLVMBasicBlockRef merge = LLVMAppendBasicBlockInContext(cg->ctx, fn, "merge");
  LLVMValueRef *vals = xcalloc((size_t)nsrc + 2, sizeof *vals);
  LLVMBasicBlockRef *from = xcalloc((size_t)nsrc + 2, sizeof *from);
  int nin = 0;
  int mark = e->cache.len;
  bool ok = true;
  for (int k = 0; k < nsrc && ok; k++) {
    const IndexingMap *m = single_map(ii, k);
    if (!m) {
      fail(e, x, "no single indexing map for");
      ok = false;
      break;
    }
    if (m->empty)
      continue;
    MapEnv env;
    if (!env_init(e, x, m, idx, &env)) {
      env_free(&env);
      ok = false;
      break;
    }
    bool last = !is_pad && k == nsrc - 1;
    LLVMBasicBlockRef next = NULL;
    if (!last) {
      LLVMValueRef c = in_domain(cg, m, x->shape, &env);
      LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, fn, "in");
      next = LLVMAppendBasicBlockInContext(cg->ctx, fn, "next");
      LLVMBuildCondBr(cg->b, c, then, next);
      LLVMPositionBuilderAtEnd(cg->b, then);
    }
    LLVMValueRef v = read_mapped(e, x, k, m, &env);
    env_free(&env);
    cache_truncate(e, mark);
    if (!v) {
      ok = false;
      break;
    }
    vals[nin] = v;
    from[nin++] = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, merge);
    if (next)
      LLVMPositionBuilderAtEnd(cg->b, next);
  }
  if (ok && (is_pad || nin < nsrc)) {
    /* the fall-through: the padding value (or, for a concatenate whose last
     * operand is empty, never reached) */
    LLVMValueRef v = fallback ? fallback : LLVMGetUndef(cg_reg_type(cg, x->shape->et));
    vals[nin] = v;
    from[nin++] = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, merge);
  }
  LLVMPositionBuilderAtEnd(cg->b, merge);
  LLVMValueRef phi = NULL;
  if (ok) {
    phi = LLVMBuildPhi(cg->b, cg_reg_type(cg, x->shape->et), "");
    LLVMAddIncoming(phi, vals, from, (unsigned)nin);
  }
  free(vals);
  free(from);
  return phi;
}

static LLVMValueRef const_global(CgElemental *e, const HloInstr *x) {
  for (int k = 0; k < e->consts.len; k++)
    if (e->consts.data[k].instr == x)
      return e->consts.data[k].g;
  Codegen *cg = e->cg;
  const Literal *l = x->literal;
  int64_t n = shape_elements(l->shape);
  int eb = et_bytes(l->shape->et);
  LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)eb * 8);
  LLVMValueRef *vals = xcalloc((size_t)n + 1, sizeof *vals);
  for (int64_t k = 0; k < n; k++) {
    uint64_t raw = 0;
    memcpy(&raw, l->data + k * eb, (size_t)eb);
    vals[k] = LLVMConstInt(it, raw, false);
  }
  LLVMValueRef init = LLVMConstArray2(it, vals, (uint64_t)n);
  free(vals);
  char name[64];
  snprintf(name, sizeof name, "cst.%d", cg->nglobals++);
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, LLVMTypeOf(init), name,
                                               cg->is_gpu ? CG_AS_GLOBAL : 0);
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, true);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  LLVMSetUnnamedAddr(g, true);
  LLVMSetAlignment(g, 16);
  ConstGlobal cgl = {x, g};
  vec_push(&e->consts, cgl);
  return g;
}

static LLVMValueRef emit_constant(CgElemental *e, const HloInstr *x,
                                  LLVMValueRef const *idx) {
  Codegen *cg = e->cg;
  const Literal *l = x->literal;
  if (!l || !l->data || l->elided || !shape_is_array(l->shape) ||
      l->shape->et != x->shape->et)
    return fail(e, x, "constant without known values:");
  int64_t n = shape_elements(l->shape);
  int eb = et_bytes(l->shape->et);
  bool uniform = true;
  for (int64_t k = 1; k < n && uniform; k++)
    uniform = memcmp(l->data, l->data + k * eb, (size_t)eb) == 0;
  if (n <= 1 || uniform)
    return n ? cg_const_literal_elem(cg, l, 0) : LLVMGetUndef(cg_reg_type(cg, x->shape->et));
  LLVMValueRef g = const_global(e, x);
  LLVMValueRef lin = NULL;
  for (int k = 0; k < l->shape->rank; k++) {
    lin = lin ? LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lin,
                                                 cg_const_i64(cg, l->shape->dims[k]), ""),
                             idx[k], "")
              : idx[k];
  }
  LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)eb * 8);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, it, g, &lin, 1, "");
  LLVMValueRef v = LLVMBuildLoad2(cg->b, it, p, "");
  LLVMSetAlignment(v, (unsigned)eb);
  ElemType et = x->shape->et;
  if (et == ET_PRED || et_bits(et) < 8)
    return cg_from_mem(cg, et, v);
  return LLVMBuildBitCast(cg->b, v, cg_reg_type(cg, et), "");
}

static LLVMValueRef emit_elementwise(CgElemental *e, const HloInstr *x,
                                     LLVMValueRef const *idx) {
  LLVMValueRef ops[3];
  if (x->nops < 1 || x->nops > 3)
    return fail(e, x, "unexpected operand count of");
  for (int k = 0; k < x->nops; k++) {
    const Shape *os = x->ops[k]->shape;
    bool scalar = shape_is_array(os) && os->rank == 0;
    ops[k] = emit(e, x->ops[k], scalar ? NULL : idx);
    if (!ops[k])
      return NULL;
  }
  return cg_emit_elementwise(e->cg, x, ops, e->d);
}

/* A bitcast-convert between real types of different widths (XLA's
 * BitcastDtypesExpander, in registers): to a wider type, the operand's
 * `ratio` elements along its minor dimension, least significant first,
 * or'ed into one integer; to a narrower one, the operand element shifted
 * right by the minor index times the narrow width and truncated. */
static LLVMValueRef emit_bitcast_convert_widths(CgElemental *e, const HloInstr *x,
                                                LLVMValueRef const *idx) {
  Codegen *cg = e->cg;
  LLVMBuilderRef b = cg->b;
  const HloInstr *o = x->ops[0];
  ElemType from = o->shape->et, to = x->shape->et;
  const char *why = hlo_bitcast_convert_unsupported(from, to);
  if (why) {
    diag_error(e->d, x->loc, "codegen: bitcast-convert between %s (%s to %s) "
               "is not supported", why, et_name(from), et_name(to));
    return NULL;
  }
  if (!cg_et_supported(from) || o->shape->rank > 64)
    return fail(e, x, "unsupported operand of");
  int fb = et_bits(from), tb = et_bits(to);
  LLVMTypeRef fi = LLVMIntTypeInContext(cg->ctx, (unsigned)fb);
  LLVMTypeRef ti = LLVMIntTypeInContext(cg->ctx, (unsigned)tb);
  int rank = x->shape->rank;
  LLVMValueRef oi[65];
  if (fb < tb) {
    int ratio = tb / fb;
    if (o->shape->rank != rank + 1 || o->shape->dims[rank] != ratio)
      return fail(e, x, "malformed");
    memcpy(oi, idx, (size_t)rank * sizeof *oi);
    LLVMValueRef w = NULL;
    for (int k = 0; k < ratio; k++) {
      oi[rank] = cg_const_i64(cg, k);
      LLVMValueRef v = emit(e, o, oi);
      if (!v)
        return NULL;
      v = LLVMBuildZExt(b, LLVMBuildBitCast(b, v, fi, ""), ti, "");
      if (k)
        v = LLVMBuildShl(b, v, LLVMConstInt(ti, (unsigned long long)k * (unsigned)fb, false), "");
      w = w ? LLVMBuildOr(b, w, v, "") : v;
    }
    return LLVMBuildBitCast(b, w, cg_reg_type(cg, to), "");
  }
  if (rank != o->shape->rank + 1 || rank < 1 || x->shape->dims[rank - 1] != fb / tb)
    return fail(e, x, "malformed");
  LLVMValueRef v = emit(e, o, rank > 1 ? idx : NULL);
  if (!v)
    return NULL;
  v = LLVMBuildBitCast(b, v, fi, "");
  LLVMValueRef sh = LLVMBuildMul(b, idx[rank - 1], cg_const_i64(cg, tb), "");
  if (fb < 64) /* the shift is below fb: it fits */
    sh = LLVMBuildTrunc(b, sh, fi, "");
  v = LLVMBuildTrunc(b, LLVMBuildLShr(b, v, sh, ""), ti, "");
  return LLVMBuildBitCast(b, v, cg_reg_type(cg, to), "");
}

static LLVMValueRef emit_map(CgElemental *e, const HloInstr *x,
                             LLVMValueRef const *idx) {
  if (x->ncalled != 1 || x->nops > 16)
    return fail(e, x, "malformed");
  LLVMValueRef ops[16];
  for (int k = 0; k < x->nops; k++) {
    ops[k] = emit(e, x->ops[k], idx);
    if (!ops[k])
      return NULL;
  }
  LLVMValueRef out;
  if (!cg_emit_scalar_comp(e->cg, x->called[0], x->nops, ops, &out, e->d))
    return NULL;
  return out;
}

/* A fusion or call of scalars (a comparator or reducer that XLA fused or
 * outlined): its computation applied to the operands' values. */
static LLVMValueRef emit_scalar_call(CgElemental *e, const HloInstr *x) {
  if (x->ncalled != 1 || x->nops > 16 || !shape_is_array(x->shape) || x->shape->rank != 0)
    return fail(e, x, "unsupported op");
  LLVMValueRef ops[16];
  for (int k = 0; k < x->nops; k++) {
    const Shape *os = x->ops[k]->shape;
    if (!shape_is_array(os) || os->rank != 0)
      return fail(e, x, "unsupported op");
    if (!(ops[k] = emit(e, x->ops[k], NULL)))
      return NULL;
  }
  LLVMValueRef out;
  if (!cg_emit_scalar_comp(e->cg, x->called[0], x->nops, ops, &out, e->d))
    return NULL;
  return out;
}

/* An alloca in the function's entry block (promoted to registers by the
 * optimizer). */
static LLVMValueRef entry_alloca(Codegen *cg, LLVMTypeRef t) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
  LLVMBuilderRef tb = LLVMCreateBuilderInContext(cg->ctx);
  LLVMValueRef first = LLVMGetFirstInstruction(entry);
  if (first)
    LLVMPositionBuilderBefore(tb, first);
  else
    LLVMPositionBuilderAtEnd(tb, entry);
  LLVMValueRef a = LLVMBuildAlloca(tb, t, "acc");
  LLVMDisposeBuilder(tb);
  return a;
}

enum { MAX_REDUCE_INPUTS = 16 };

/* A reduce computed per output element: a loop over the reduced dimensions
 * (row-major) applying to_apply in order.  outs: one value per input. */
static bool emit_reduce_all(CgElemental *e, const HloInstr *x,
                            LLVMValueRef const *idx, LLVMValueRef *outs) {
  Codegen *cg = e->cg;
  int n = x->nops / 2;
  if (n < 1 || n > MAX_REDUCE_INPUTS || x->nops != 2 * n || x->ncalled != 1) {
    fail(e, x, "malformed");
    return false;
  }
  const Shape *in = x->ops[0]->shape;
  if (!shape_is_array(in) || in->rank > 64) {
    fail(e, x, "unsupported operand shape of");
    return false;
  }
  bool reduced[64] = {false};
  int64_t total = 1;
  for (int k = 0; k < x->dims.n; k++) {
    int64_t dm = x->dims.v[k];
    if (dm < 0 || dm >= in->rank) {
      fail(e, x, "bad dimensions in");
      return false;
    }
    reduced[dm] = true;
    total *= in->dims[dm];
  }
  LLVMValueRef acc[MAX_REDUCE_INPUTS];
  ElemType ets[MAX_REDUCE_INPUTS];
  for (int k = 0; k < n; k++) {
    ets[k] = x->ops[k]->shape->et;
    if (!cg_et_supported(ets[k])) {
      fail(e, x, "unsupported element type in");
      return false;
    }
    LLVMValueRef init = emit(e, x->ops[n + k], NULL);
    if (!init)
      return false;
    acc[k] = entry_alloca(cg, cg_reg_type(cg, ets[k]));
    LLVMBuildStore(cg->b, init, acc[k]);
  }
  int mark = e->cache.len;
  CgLoop l;
  LLVMValueRef lin = cg_loop_begin(cg, &l, cg_const_i64(cg, 0), cg_const_i64(cg, total),
                                   cg_const_i64(cg, 1), "reduce");
  LLVMValueRef oi[64];
  int j = 0;
  for (int dm = 0; dm < in->rank; dm++)
    if (!reduced[dm])
      oi[dm] = idx[j++];
  LLVMValueRef rest = lin;
  for (int dm = in->rank - 1; dm >= 0; dm--) {
    if (!reduced[dm])
      continue;
    LLVMValueRef sz = cg_const_i64(cg, in->dims[dm]);
    oi[dm] = LLVMBuildURem(cg->b, rest, sz, "");
    rest = LLVMBuildUDiv(cg->b, rest, sz, "");
  }
  LLVMValueRef args[2 * MAX_REDUCE_INPUTS];
  bool ok = true;
  for (int k = 0; k < n && ok; k++) {
    args[k] = LLVMBuildLoad2(cg->b, cg_reg_type(cg, ets[k]), acc[k], "");
    ok = (args[n + k] = emit(e, x->ops[k], oi)) != NULL;
  }
  LLVMValueRef res[MAX_REDUCE_INPUTS];
  ok = ok && cg_emit_scalar_comp(cg, x->called[0], 2 * n, args, res, e->d);
  for (int k = 0; k < n && ok; k++)
    LLVMBuildStore(cg->b, res[k], acc[k]);
  cg_loop_end(cg, &l);
  cache_truncate(e, mark);
  for (int k = 0; k < n && ok; k++)
    outs[k] = LLVMBuildLoad2(cg->b, cg_reg_type(cg, ets[k]), acc[k], "");
  return ok;
}

static LLVMValueRef emit_reduce(CgElemental *e, const HloInstr *x, int which,
                                LLVMValueRef const *idx) {
  LLVMValueRef outs[MAX_REDUCE_INPUTS];
  if (!emit_reduce_all(e, x, idx, outs))
    return NULL;
  if (which < 0 || which >= x->nops / 2)
    return fail(e, x, "bad tuple index into");
  return outs[which];
}

static LLVMValueRef emit_op(CgElemental *e, const HloInstr *x,
                            LLVMValueRef const *idx) {
  Codegen *cg = e->cg;
  if (e->scalar_args && x->op == HLO_PARAMETER)
    return e->scalar_args[x->param_number];
  int leaf = leaf_index(e, x);
  if (leaf >= 0) {
    if (!shape_is_array(x->shape))
      return fail(e, x, "non-array value read by");
    return cg_load_elem(cg, e->leaf_ptrs[leaf], x->shape, idx);
  }
  if (!shape_is_array(x->shape) || !cg_et_supported(x->shape->et)) {
    char *s = shape_to_string(x->shape, false);
    diag_error(e->d, x->loc, "codegen: unsupported result type %s of '%s' (%s)",
               s, hlo_op_name(x->op), x->name ? x->name : "?");
    free(s);
    return NULL;
  }
  switch (x->op) {
  case HLO_PARAMETER:
    return fail(e, x, "parameter out of range:");
  case HLO_CONSTANT:
    return emit_constant(e, x, idx);
  case HLO_IOTA:
    if (x->iota_dim < 0 || x->iota_dim >= x->shape->rank)
      return fail(e, x, "malformed");
    return cg_emit_convert(cg, ET_S64, x->shape->et, idx[x->iota_dim]);
  case HLO_COPY:
    return emit(e, x->ops[0], idx);
  case HLO_GET_TUPLE_ELEMENT:
    if (x->ops[0]->op == HLO_TUPLE && x->tuple_index >= 0 &&
        x->tuple_index < x->ops[0]->nops)
      return emit(e, x->ops[0]->ops[x->tuple_index], idx);
    if (x->ops[0]->op == HLO_REDUCE)
      return emit_reduce(e, x->ops[0], (int)x->tuple_index, idx);
    if (x->ops[0]->op == HLO_REDUCE_WINDOW)
      return cg_elemental_reduce_window(e, cg, e->d, x->ops[0], (int)x->tuple_index, idx);
    return fail(e, x, "unsupported tuple access");
  case HLO_MAP:
    return emit_map(e, x, idx);
  case HLO_FUSION: case HLO_CALL:
    return emit_scalar_call(e, x);
  case HLO_REDUCE:
    return emit_reduce(e, x, 0, idx);
  case HLO_REDUCE_WINDOW:
    return cg_elemental_reduce_window(e, cg, e->d, x, 0, idx);
  case HLO_BITCAST: {
    /* XLA's optimized dumps bitcast between element types of one width
     * (f32 -> s32 in total-order comparators): the bits, reinterpreted */
    ElemType from = x->nops ? x->ops[0]->shape->et : x->shape->et, to = x->shape->et;
    LLVMValueRef v = emit_mapped(e, x, idx);
    if (!v || from == to)
      return v;
    if (et_bits(from) != et_bits(to) || from == ET_PRED || to == ET_PRED)
      return fail(e, x, "a bitcast between element types of different widths in");
    return LLVMBuildBitCast(cg->b, v, cg_reg_type(cg, to), "");
  }
  case HLO_BROADCAST: case HLO_RESHAPE: case HLO_TRANSPOSE:
  case HLO_SLICE: case HLO_REVERSE: case HLO_DYNAMIC_SLICE:
    return emit_mapped(e, x, idx);
  case HLO_GATHER:
    return cg_elemental_gather(e, cg, e->d, x, idx);
  case HLO_DYNAMIC_UPDATE_SLICE:
    return cg_elemental_dus(e, cg, e->d, x, idx);
  case HLO_PAD: case HLO_CONCATENATE:
    return emit_selected(e, x, idx);
  case HLO_SELECT_AND_SCATTER:
    return cg_elemental_select_and_scatter(e, cg, e->d, x, idx);
  case HLO_BITCAST_CONVERT:
    if (hlo_bitcast_convert_resizes(x))
      return emit_bitcast_convert_widths(e, x, idx);
    return emit_elementwise(e, x, idx);
  case HLO_STOCHASTIC_CONVERT: {
    if (x->nops != 2)
      return fail(e, x, "malformed");
    LLVMValueRef v[2];
    for (int k = 0; k < 2; k++) {
      const Shape *os = x->ops[k]->shape;
      v[k] = emit(e, x->ops[k], shape_is_array(os) && os->rank == 0 ? NULL : idx);
      if (!v[k])
        return NULL;
    }
    return cg_emit_stochastic_convert(cg, x, v[0], v[1], e->d);
  }
  default:
    if (hlo_op_is_elementwise(x->op))
      return emit_elementwise(e, x, idx);
    return fail(e, x, "unsupported op");
  }
}

static LLVMValueRef emit(CgElemental *e, const HloInstr *x,
                         LLVMValueRef const *idx) {
  for (int k = 0; k < e->bound.len; k++)
    if (e->bound.data[k].instr == x)
      return e->bound.data[k].v;
  int rank = shape_is_array(x->shape) ? x->shape->rank : 0;
  LLVMValueRef v = cache_get(e, x, rank, idx);
  if (v)
    return v;
  v = emit_op(e, x, idx);
  if (v)
    cache_put(e, x, rank, idx, v);
  return v;
}

LLVMValueRef cg_elemental_emit(CgElemental *e, const HloInstr *instr,
                               LLVMValueRef const *idx) {
  return emit(e, instr, idx);
}

void cg_elemental_bind(CgElemental *e, const HloInstr *instr, LLVMValueRef v) {
  Bound bd = {instr, v};
  vec_push(&e->bound, bd);
}

bool cg_emit_scalar_comp(Codegen *cg, const HloComp *comp, int nargs,
                         LLVMValueRef const *args, LLVMValueRef *outs,
                         Diag *d) {
  if (!comp || !comp->root || comp->nparams != nargs) {
    diag_error(d, comp && comp->root ? comp->root->loc : (Loc){0},
               "codegen: computation '%s' takes %d parameters, given %d",
               comp ? comp->name : "?", comp ? comp->nparams : 0, nargs);
    return false;
  }
  for (int k = 0; k < nargs; k++) {
    const Shape *s = comp->params[k] ? comp->params[k]->shape : NULL;
    if (!s || !shape_is_array(s) || s->rank != 0) {
      diag_error(d, comp->root->loc,
                 "codegen: computation '%s' parameter %d is not a scalar",
                 comp->name, k);
      return false;
    }
  }
  CgElemental *e = cg_elemental_new(cg, comp, NULL, NULL, d);
  e->scalar_args = args;
  const HloInstr *r = comp->root;
  bool ok = true;
  if (r->op == HLO_TUPLE) {
    for (int k = 0; k < r->nops && ok; k++)
      ok = (outs[k] = emit(e, r->ops[k], NULL)) != NULL;
  } else {
    ok = (outs[0] = emit(e, r, NULL)) != NULL;
  }
  cg_elemental_free(e);
  return ok;
}
