/*
 * reduction_kernel.c - the kernel of a fusion whose hero is a reduce
 * (possibly variadic), for both targets.
 *
 * The reduce's operands and init values come from the elemental emitter, so
 * producers fused into the reduction are computed on the fly.  The reducer
 * is any scalar computation, applied through cg_emit_scalar_comp as
 * reducer(acc_0..acc_{n-1}, x_0..x_{n-1}) -> (acc_0..acc_{n-1}).
 *
 * The reduced elements of an output element are numbered r = 0..red_n-1 and
 * its output elements o = 0..out_n-1, both row-major over their dimensions
 * taken in the input's physical order (major to minor), so consecutive r
 * (row reductions) or consecutive o (column reductions) are close in memory.
 *
 * Strategies:
 *   host row    (minor-most input dimension reduced) work units of whole
 *               outputs; a loop over each row of the minor dimension with
 *               the reducer marked reassociable, which LLVM vectorizes
 *               (init applied once, as in the interpreter).
 *   host column (minor-most input dimension kept) work units of up to 256
 *               consecutive outputs, whose accumulators take each reduced
 *               row at once (the interpreter's order per output).
 *   GPU column  (minor-most physical input dimension kept)
 *     tiled     red_n >= 64: a block of 32x32 threads per 32 consecutive
 *               output elements, 32 threads per output element each
 *               taking every 32nd r; the partial values are transposed
 *               through shared memory and combined with warp shuffles.
 *     simple    otherwise one thread per output element looping over r.
 *               Either way neighbouring threads read neighbouring elements.
 *   GPU row     (minor-most physical dimension reduced)
 *     warp      red_n <= 1024: one warp per output element, 4 per block.
 *     block     otherwise: one block per output element.
 *               Each thread accumulates a strided part starting from the
 *               init value (XLA's contract: init is the reducer's identity),
 *               then butterfly shuffles (shfl.sync.bfly, full mask: every
 *               lane of a warp takes part, the warp's branch is uniform)
 *               combine the warp; a block combines its warps' partial
 *               values through shared memory after a barrier (the barrier
 *               is under a block-uniform branch only).
 *
 * The fusion root may be the reduce, a bitcast of it, a get-tuple-element
 * of it, or a tuple of those.  Anything computed from the reduce's result
 * inside the fusion (an epilogue) is refused with an error.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

#define RED_MAX_RANK 64
#define RED_MAX_N 16              /* variadic operands */
#define RED_MAX_OUTS 64           /* root leaves */

enum { WARP = 32, WARP_ROWS_PER_BLOCK = 4, BLOCK_ROW_THREADS = 256,
       FULL_ROW_THREADS = 1024, COLUMN_THREADS = 256, COLUMN_TILE_MIN_ROWS = 64 };

typedef enum RedStrategy {
  RED_HOST, RED_COLUMN, RED_COLUMN_TILED, RED_WARP_ROW, RED_BLOCK_ROW,
} RedStrategy;

typedef struct RedOut {
  int hero_out;                   /* which result of the reduce */
  int leaf;                       /* which kernel output leaf */
} RedOut;

typedef struct Red {
  Codegen *cg;
  Diag *d;
  CgKernel k;
  CgElemental *el;                /* NULL when the kernel is a bare reduce */
  const HloInstr *hero;
  const HloComp *reducer;
  int n;
  const Shape *in_shape;
  int rank;
  int kept[RED_MAX_RANK], nkept;  /* input dims, physical major to minor */
  int red[RED_MAX_RANK], nred;
  int opos[RED_MAX_RANK];         /* input dim -> output dim (kept dims) */
  int64_t out_n, red_n;
  ElemType et[RED_MAX_N];
  const Shape *out_shape[RED_MAX_N]; /* the reduce's result k */
  RedOut outs[RED_MAX_OUTS];
  int nouts;
  LLVMValueRef init[RED_MAX_N];
  LLVMValueRef acc[RED_MAX_N];    /* allocas */
} Red;

static const Shape *leaf_of(const Shape *s, int k) {
  return s->et == ET_TUPLE ? s->tuple[k] : s;
}

static const HloInstr *strip_bitcasts(const HloInstr *x) {
  while (x->op == HLO_BITCAST && x->nops == 1) x = x->ops[0];
  return x;
}

/* Which reduce result a root element holds, or -1. */
static int hero_result_of(const Red *r, const HloInstr *x) {
  x = strip_bitcasts(x);
  if (x == r->hero && r->n == 1) return 0;
  if (x->op == HLO_GET_TUPLE_ELEMENT && x->nops == 1 && x->ops[0] == r->hero &&
      x->tuple_index >= 0 && x->tuple_index < r->n)
    return (int)x->tuple_index;
  return -1;
}

static bool map_outputs(Red *r, const HloInstr *instr, const HloComp *comp) {
  const HloInstr *root = comp ? comp->root : instr;
  if (!comp) {
    for (int k = 0; k < r->n; k++) r->outs[r->nouts++] = (RedOut){k, k};
  } else if (root == r->hero) {
    for (int k = 0; k < r->n; k++) r->outs[r->nouts++] = (RedOut){k, k};
  } else if (root->op == HLO_TUPLE) {
    if (root->nops > RED_MAX_OUTS)
      return diag_error(r->d, instr->loc, "reduce fusion with %d outputs is not supported",
                        root->nops);
    for (int j = 0; j < root->nops; j++) {
      int k = hero_result_of(r, root->ops[j]);
      if (k < 0)
        return diag_error(r->d, instr->loc,
                          "reduce fusion output %d (%s %s) is not the reduce's "
                          "result: not supported by the reduction emitter",
                          j, hlo_op_name(root->ops[j]->op), root->ops[j]->name);
      r->outs[r->nouts++] = (RedOut){k, j};
    }
  } else {
    int k = hero_result_of(r, root);
    if (k < 0)
      return diag_error(r->d, instr->loc,
                        "reduce fusion whose root %s (%s) is computed from the "
                        "reduce's result is not supported by the reduction emitter",
                        root->name, hlo_op_name(root->op));
    r->outs[r->nouts++] = (RedOut){k, 0};
  }
  for (int j = 0; j < r->nouts; j++)
    if (r->outs[j].leaf >= r->k.nout)
      return diag_error(r->d, instr->loc, "reduce fusion outputs do not match its shape");
  return true;
}

/* Checks the reduce and fills dims, sizes and types. */
static bool analyze(Red *r, const HloInstr *instr) {
  const HloInstr *h = r->hero;
  if (h->nops < 2 || h->nops % 2 || h->ncalled < 1)
    return diag_error(r->d, h->loc, "reduce needs inputs, inits and a computation");
  r->n = h->nops / 2;
  if (r->n > RED_MAX_N)
    return diag_error(r->d, h->loc, "reduce with %d operands is not supported", r->n);
  r->reducer = h->called[0];
  r->in_shape = h->ops[0]->shape;
  const Shape *is = r->in_shape;
  if (!shape_is_array(is) || is->rank > RED_MAX_RANK)
    return diag_error(r->d, h->loc, "reduce input is not an array");
  r->rank = is->rank;
  bool reduced[RED_MAX_RANK] = {false};
  for (int j = 0; j < h->dims.n; j++) {
    int64_t dd = h->dims.v[j];
    if (dd < 0 || dd >= is->rank || reduced[dd])
      return diag_error(r->d, h->loc, "bad reduce dimension %lld", (long long)dd);
    reduced[dd] = true;
  }
  if ((h->shape->et == ET_TUPLE) != (r->n > 1) ||
      (h->shape->et == ET_TUPLE && h->shape->ntuple != r->n))
    return diag_error(r->d, h->loc, "reduce result does not have %d outputs", r->n);
  for (int k = 0; k < r->n; k++) {
    const Shape *ks = h->ops[k]->shape, *os = leaf_of(h->shape, k);
    if (!shape_is_array(ks) || ks->rank != is->rank ||
        (is->rank && memcmp(ks->dims, is->dims, sizeof(int64_t) * (size_t)is->rank) != 0) ||
        !shape_is_array(os) || os->rank != is->rank - h->dims.n)
      return diag_error(r->d, h->loc, "reduce operand %d does not match", k);
    r->et[k] = os->et;
    r->out_shape[k] = os;
    if (!cg_et_supported(os->et) || et_is_complex(os->et) || ks->et != os->et)
      return diag_error(r->d, h->loc, "reduce of %s to %s is not supported", et_name(ks->et),
                        et_name(os->et));
  }
  /* physical order, major to minor */
  const Layout *l = is->layout;
  bool use_layout = l && l->rank == is->rank;
  int opos = 0;
  for (int d = 0; d < is->rank; d++)
    if (!reduced[d]) r->opos[d] = opos++;
  r->out_n = 1;
  r->red_n = 1;
  for (int j = is->rank - 1; j >= 0; j--) {
    int d = use_layout ? (int)l->minor_to_major[j] : is->rank - 1 - j;
    if (d < 0 || d >= is->rank) return diag_error(r->d, h->loc, "bad layout of reduce input");
    if (reduced[d]) {
      r->red[r->nred++] = d;
      r->red_n *= is->dims[d];
    } else {
      r->kept[r->nkept++] = d;
      r->out_n *= is->dims[d];
    }
  }
  (void)instr;
  return true;
}

static LLVMValueRef operand_at(Red *r, int j, LLVMValueRef const *idx) {
  if (r->el) return cg_elemental_emit(r->el, r->hero->ops[j], idx);
  return cg_load_elem(r->cg, r->k.in[j], r->k.in_shapes[j], idx);
}

static LLVMBasicBlockRef new_block(Codegen *cg, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  return LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
}

/* if (cond) { ... : the builder goes into the then-block; returns the join. */
static LLVMBasicBlockRef if_begin(Codegen *cg, LLVMValueRef cond, const char *name) {
  LLVMBasicBlockRef then = new_block(cg, name);
  LLVMBasicBlockRef join = new_block(cg, "endif");
  LLVMBuildCondBr(cg->b, cond, then, join);
  LLVMPositionBuilderAtEnd(cg->b, then);
  return join;
}

static void if_end(Codegen *cg, LLVMBasicBlockRef join) {
  LLVMBuildBr(cg->b, join);
  LLVMPositionBuilderAtEnd(cg->b, join);
}

/* acc = reducer(acc, xs) */
static bool combine(Red *r, LLVMValueRef const *xs) {
  LLVMValueRef args[2 * RED_MAX_N], outs[RED_MAX_N];
  for (int j = 0; j < r->n; j++) {
    args[j] = LLVMBuildLoad2(r->cg->b, cg_reg_type(r->cg, r->et[j]), r->acc[j], "acc");
    args[r->n + j] = xs[j];
  }
  if (!cg_emit_scalar_comp(r->cg, r->reducer, 2 * r->n, args, outs, r->d)) return false;
  for (int j = 0; j < r->n; j++) LLVMBuildStore(r->cg->b, outs[j], r->acc[j]);
  return true;
}

static void reset_acc(Red *r) {
  for (int j = 0; j < r->n; j++) LLVMBuildStore(r->cg->b, r->init[j], r->acc[j]);
}

/* for (rl = start; rl < red_n; rl += step) acc = f(acc, input[kept, rl]).
 * idx holds the kept dims' values already. */
static bool accumulate_loop(Red *r, LLVMValueRef *idx, LLVMValueRef start, int64_t step) {
  Codegen *cg = r->cg;
  CgLoop loop;
  LLVMValueRef rl = cg_loop_begin(cg, &loop, start, cg_const_i64(cg, r->red_n),
                                  cg_const_i64(cg, step), "r");
  cg_split_index(cg, rl, r->nred, r->red, r->in_shape->dims, idx);
  LLVMValueRef xs[RED_MAX_N];
  for (int j = 0; j < r->n; j++) {
    xs[j] = operand_at(r, j, idx);
    if (!xs[j]) return false;
  }
  if (!combine(r, xs)) return false;
  cg_loop_end(cg, &loop);
  if (r->el) cg_elemental_clear_cache(r->el);
  return true;
}

/* Stores the accumulators as output element idx (input multi-index; the
 * kept dims are read). */
static void store_outputs(Red *r, LLVMValueRef const *idx) {
  Codegen *cg = r->cg;
  LLVMValueRef oidx[RED_MAX_RANK];
  for (int j = 0; j < r->nkept; j++) oidx[r->opos[r->kept[j]]] = idx[r->kept[j]];
  for (int j = 0; j < r->nouts; j++) {
    int hk = r->outs[j].hero_out, leaf = r->outs[j].leaf;
    const Shape *hs = r->out_shape[hk], *ls = r->k.out_shapes[leaf];
    LLVMValueRef v = LLVMBuildLoad2(cg->b, cg_reg_type(cg, r->et[hk]), r->acc[hk], "res");
    if (ls->rank == hs->rank &&
        (hs->rank == 0 || memcmp(ls->dims, hs->dims, sizeof(int64_t) * (size_t)hs->rank) == 0)) {
      cg_store_elem(cg, r->k.out[leaf], ls, oidx, v);
    } else {                      /* a bitcast: same bytes, other shape */
      LLVMValueRef lin = cg_linear_index(cg, hs, oidx);
      cg_store_linear(cg, r->k.out[leaf], r->et[hk], lin, v);
    }
  }
}

/*
 * Host
 */

/* The minor-most physical dimension of the reduce's input, or -1. */
static int input_minor_dim(const Red *r) {
  const Shape *is = r->in_shape;
  if (is->rank == 0) return -1;
  const Layout *l = is->layout;
  return l && l->rank == is->rank ? (int)l->minor_to_major[0] : is->rank - 1;
}

/* acc = reducer(acc, xs), acc being n pointers (allocas or tile slots). */
static bool combine_at(Red *r, LLVMValueRef const *acc, LLVMValueRef const *xs) {
  LLVMValueRef args[2 * RED_MAX_N], outs[RED_MAX_N];
  for (int j = 0; j < r->n; j++) {
    args[j] = LLVMBuildLoad2(r->cg->b, cg_reg_type(r->cg, r->et[j]), acc[j], "acc");
    args[r->n + j] = xs[j];
  }
  if (!cg_emit_scalar_comp(r->cg, r->reducer, 2 * r->n, args, outs, r->d)) return false;
  for (int j = 0; j < r->n; j++) LLVMBuildStore(r->cg->b, outs[j], acc[j]);
  return true;
}

static bool operands_at(Red *r, LLVMValueRef const *idx, LLVMValueRef *xs) {
  for (int j = 0; j < r->n; j++)
    if (!(xs[j] = operand_at(r, j, idx))) return false;
  return true;
}

/* Marks the float operations emitted into the current block after `last`
 * (NULL: from the block's start) as reassociable, so that LLVM's loop
 * vectorizer may split the reduction into vector lanes and combine them at
 * the end.  The lanes start from the reducer's identity and the running
 * value enters once, so the init value still counts once. */
static void allow_reassoc(Codegen *cg, LLVMBasicBlockRef bb, LLVMValueRef last) {
  if (LLVMGetInsertBlock(cg->b) != bb) return;   /* the reducer branched */
  for (LLVMValueRef x = last ? LLVMGetNextInstruction(last) : LLVMGetFirstInstruction(bb); x;
       x = LLVMGetNextInstruction(x))
    if (LLVMCanValueUseFastMathFlags(x))
      LLVMSetFastMathFlags(x, LLVMGetFastMathFlags(x) | LLVMFastMathAllowReassoc);
}

/* The reducer is one binary op per accumulator j on (acc_j, x_j), in either
 * order: what reassociating (splitting the row into lanes combined at the
 * end) can be done to.  Any other form (accumulators feeding each other)
 * stays in order, as XLA's CPU and the interpreter compute it. */
static bool separable_reducer(const HloComp *c, int n) {
  const HloInstr *root = c->root;
  for (int j = 0; j < n; j++) {
    const HloInstr *x = root->op == HLO_TUPLE ? (j < root->nops ? root->ops[j] : NULL)
                                              : (n == 1 ? root : NULL);
    if (!x || x->nops != 2 || !hlo_op_is_elementwise(x->op))
      return false;
    const HloInstr *a = x->ops[0], *b = x->ops[1];
    if (a->op != HLO_PARAMETER || b->op != HLO_PARAMETER)
      return false;
    if (!((a->param_number == j && b->param_number == n + j) ||
          (b->param_number == j && a->param_number == n + j)))
      return false;
  }
  return true;
}

/* Whether the row reduction's items (output elements in the order of the
 * input's kept dims) are the rows of every result leaf in its physical
 * order: no leaf is a bitcast, and the first leaf's layout keeps the input's
 * order (LaunchDims.row_dims). */
static bool outputs_in_item_order(const Red *r) {
  for (int j = 0; j < r->nouts; j++) {
    const Shape *hs = r->out_shape[r->outs[j].hero_out], *ls = r->k.out_shapes[r->outs[j].leaf];
    if (ls->rank != hs->rank ||
        (hs->rank && memcmp(ls->dims, hs->dims, sizeof(int64_t) * (size_t)hs->rank) != 0))
      return false;
  }
  const Shape *os = r->k.out_shapes[0];
  if (r->nouts == 0 || os->rank != r->nkept) return false;
  const Layout *l = os->layout;
  bool use_layout = l && l->rank == os->rank;
  for (int j = 0; j < os->rank; j++) {
    int d = use_layout ? (int)l->minor_to_major[os->rank - 1 - j] : j;
    if (d != r->opos[r->kept[j]]) return false;
  }
  return true;
}

/* Row reduction (the minor-most input dimension is reduced), work units of
 * whole output elements.  The reduced elements of an output are walked as
 * rows of the minor-most dimension md (outer loops over the other reduced
 * dimensions) in one loop over consecutive elements whose reducer is
 * marked reassociable (unless it works in f16, bf16 or f8, or is not
 * separable_reducer): LLVM vectorizes it when the reducer is one it knows
 * (add, multiply, min, max, and, or, ...) and leaves it in order
 * otherwise. */
static bool emit_host_row(Red *r, LaunchDims *ld, int md) {
  Codegen *cg = r->cg;
  int64_t rm = r->in_shape->dims[md];
  LLVMValueRef start, end, idx[RED_MAX_RANK], xs[RED_MAX_N];
  cg_host_range(&r->k, r->out_n, r->red_n, ld, &start, &end);
  if (outputs_in_item_order(r)) ld->row_dims = r->nkept;
  CgLoop lo, lh, lt;
  LLVMValueRef o = cg_loop_begin(cg, &lo, start, end, cg_const_i64(cg, 1), "o");
  cg_split_index(cg, o, r->nkept, r->kept, r->in_shape->dims, idx);
  reset_acc(r);
  LLVMValueRef rh = cg_loop_begin(cg, &lh, cg_const_i64(cg, 0),
                                  cg_const_i64(cg, rm ? r->red_n / rm : 0),
                                  cg_const_i64(cg, 1), "rh");
  cg_split_index(cg, rh, r->nred - 1, r->red, r->in_shape->dims, idx);
  idx[md] = cg_loop_begin(cg, &lt, cg_const_i64(cg, 0), cg_const_i64(cg, rm),
                          cg_const_i64(cg, 1), "r");
  if (!operands_at(r, idx, xs)) return false;
  LLVMBasicBlockRef bb = LLVMGetInsertBlock(cg->b);
  LLVMValueRef last = LLVMGetLastInstruction(bb);
  if (!combine_at(r, r->acc, xs)) return false;
  /* narrow floats round at every step: their sums stay in order, or a
   * row of f16 would drift tens of ulps away from the interpreter's */
  bool narrow = false;
  for (int j = 0; j < r->n; j++)
    narrow |= et_class(r->et[j]) == ETC_FLOAT && et_bytes(r->et[j]) < 4;
  if (!narrow && separable_reducer(r->reducer, r->n)) allow_reassoc(cg, bb, last);
  cg_loop_end(cg, &lt);
  if (r->el) cg_elemental_clear_cache(r->el);
  cg_loop_end(cg, &lh);
  store_outputs(r, idx);
  cg_loop_end(cg, &lo);
  return true;
}

enum { HOST_COL_TILE = 256, HOST_COL_MIN_UNITS = 8 };

/* Column reduction (the minor-most input dimension md is kept): a work unit
 * is a tile of up to HOST_COL_TILE consecutive outputs along md; their
 * accumulators live in a stack tile and every reduced row is added to the
 * whole tile at once (an inner loop over consecutive elements, vectorized).
 * Each output accumulates in the interpreter's order. */
static bool emit_host_column(Red *r, LaunchDims *ld, int md) {
  Codegen *cg = r->cg;
  LLVMBuilderRef b = cg->b;
  int64_t cn = r->in_shape->dims[md];
  int64_t outer = cn ? r->out_n / cn : 0;
  int64_t tile = HOST_COL_TILE;
  while (tile > 16 && outer * ((cn + tile - 1) / tile) < HOST_COL_MIN_UNITS) tile /= 2;
  if (tile > cn) tile = cn > 0 ? cn : 1;
  int64_t tiles = (cn + tile - 1) / tile;
  LLVMValueRef slots[RED_MAX_N];
  LLVMTypeRef tys[RED_MAX_N];
  for (int j = 0; j < r->n; j++) {
    tys[j] = cg_reg_type(cg, r->et[j]);
    slots[j] = LLVMBuildArrayAlloca(b, tys[j], cg_const_i64(cg, tile), "tile");
  }
  LLVMValueRef start, end, idx[RED_MAX_RANK], xs[RED_MAX_N], at[RED_MAX_N];
  cg_host_range(&r->k, outer * tiles, r->red_n * tile, ld, &start, &end);
  CgLoop lu, li, lr, lt, ls;
  LLVMValueRef u = cg_loop_begin(cg, &lu, start, end, cg_const_i64(cg, 1), "u");
  LLVMValueRef ou = LLVMBuildUDiv(b, u, cg_const_i64(cg, tiles), "ou");
  LLVMValueRef c0 = LLVMBuildNUWMul(b, LLVMBuildURem(b, u, cg_const_i64(cg, tiles), ""),
                                    cg_const_i64(cg, tile), "c0");
  LLVMValueRef left = LLVMBuildSub(b, cg_const_i64(cg, cn), c0, "");
  LLVMValueRef w = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, left,
                                                    cg_const_i64(cg, tile), ""),
                                   left, cg_const_i64(cg, tile), "w");
  cg_split_index(cg, ou, r->nkept - 1, r->kept, r->in_shape->dims, idx);
  LLVMValueRef t = cg_loop_begin(cg, &li, cg_const_i64(cg, 0), w, cg_const_i64(cg, 1), "ti");
  for (int j = 0; j < r->n; j++)
    LLVMBuildStore(b, r->init[j], LLVMBuildInBoundsGEP2(b, tys[j], slots[j], &t, 1, ""));
  cg_loop_end(cg, &li);
  LLVMValueRef rv = cg_loop_begin(cg, &lr, cg_const_i64(cg, 0), cg_const_i64(cg, r->red_n),
                                  cg_const_i64(cg, 1), "r");
  cg_split_index(cg, rv, r->nred, r->red, r->in_shape->dims, idx);
  t = cg_loop_begin(cg, &lt, cg_const_i64(cg, 0), w, cg_const_i64(cg, 1), "t");
  idx[md] = LLVMBuildNUWAdd(b, c0, t, "c");
  for (int j = 0; j < r->n; j++)
    at[j] = LLVMBuildInBoundsGEP2(b, tys[j], slots[j], &t, 1, "");
  if (!operands_at(r, idx, xs) || !combine_at(r, at, xs)) return false;
  cg_loop_end(cg, &lt);
  if (r->el) cg_elemental_clear_cache(r->el);
  cg_loop_end(cg, &lr);
  t = cg_loop_begin(cg, &ls, cg_const_i64(cg, 0), w, cg_const_i64(cg, 1), "ts");
  idx[md] = LLVMBuildNUWAdd(b, c0, t, "c");
  for (int j = 0; j < r->n; j++)
    LLVMBuildStore(b, LLVMBuildLoad2(b, tys[j],
                                     LLVMBuildInBoundsGEP2(b, tys[j], slots[j], &t, 1, ""),
                                     "v"), r->acc[j]);
  store_outputs(r, idx);
  cg_loop_end(cg, &ls);
  cg_loop_end(cg, &lu);
  return true;
}

static bool emit_host(Red *r, LaunchDims *ld) {
  int md = input_minor_dim(r);
  if (md >= 0 && r->nkept > 0 && r->kept[r->nkept - 1] == md)
    return emit_host_column(r, ld, md);
  if (md < 0 || r->nred == 0) {   /* nothing reduced: a copy through f */
    Codegen *cg = r->cg;
    LLVMValueRef idx[RED_MAX_RANK], start, end;
    cg_host_range(&r->k, r->out_n, 1, ld, &start, &end);
    CgLoop loop;
    LLVMValueRef o = cg_loop_begin(cg, &loop, start, end, cg_const_i64(cg, 1), "o");
    cg_split_index(cg, o, r->nkept, r->kept, r->in_shape->dims, idx);
    reset_acc(r);
    if (!accumulate_loop(r, idx, cg_const_i64(cg, 0), 1)) return false;
    store_outputs(r, idx);
    cg_loop_end(cg, &loop);
    return true;
  }
  return emit_host_row(r, ld, md);
}

/*
 * GPU pieces
 */
static LLVMValueRef sreg64(Codegen *cg, const char *reg) {
  return LLVMBuildZExt(cg->b, cg_sreg(cg, reg), cg_i64(cg), reg);
}

/* Combines the accumulators of the 32 lanes of the warp; every lane ends
 * with the warp's value.  All 32 lanes must execute it. */
static bool warp_allreduce(Red *r) {
  Codegen *cg = r->cg;
  for (int m = WARP / 2; m >= 1; m /= 2) {
    LLVMValueRef xs[RED_MAX_N];
    for (int j = 0; j < r->n; j++) {
      LLVMValueRef v = LLVMBuildLoad2(cg->b, cg_reg_type(cg, r->et[j]), r->acc[j], "a");
      xs[j] = cg_shfl_bfly(cg, v, m);
    }
    if (!combine(r, xs)) return false;
  }
  return true;
}

static LLVMValueRef cmp_lt(Codegen *cg, LLVMValueRef a, int64_t c) {
  return LLVMBuildICmp(cg->b, LLVMIntULT, a, cg_const_i64(cg, c), "lt");
}

static LLVMValueRef cmp_eq0(Codegen *cg, LLVMValueRef a) {
  return LLVMBuildICmp(cg->b, LLVMIntEQ, a, cg_const_i64(cg, 0), "is0");
}

static bool emit_gpu_column(Red *r, LaunchDims *ld) {
  Codegen *cg = r->cg;
  int64_t nblocks = (r->out_n + COLUMN_THREADS - 1) / COLUMN_THREADS;
  if (nblocks > INT32_MAX)
    return diag_error(r->d, r->hero->loc, "reduce with %lld outputs is too large",
                      (long long)r->out_n);
  ld->grid[0] = nblocks > 0 ? (uint32_t)nblocks : 1;
  ld->block[0] = COLUMN_THREADS;
  LLVMValueRef o = LLVMBuildAdd(cg->b,
                                LLVMBuildMul(cg->b, sreg64(cg, "ctaid.x"),
                                             cg_const_i64(cg, COLUMN_THREADS), "base"),
                                sreg64(cg, "tid.x"), "o");
  LLVMBasicBlockRef join = if_begin(cg, cmp_lt(cg, o, r->out_n), "in_range");
  LLVMValueRef idx[RED_MAX_RANK];
  cg_split_index(cg, o, r->nkept, r->kept, r->in_shape->dims, idx);
  reset_acc(r);
  if (!accumulate_loop(r, idx, cg_const_i64(cg, 0), 1)) return false;
  store_outputs(r, idx);
  if_end(cg, join);
  return true;
}

/* Tiled column reduction: block (32, 32) handles 32 consecutive output
 * elements; thread (x, y) accumulates output x of the tile over the reduced
 * elements y, y+32, ...  The 32x32 partial values are transposed through
 * shared memory so that warp y holds the 32 partials of output y of the
 * tile in its lanes, which the butterfly shuffles then combine.  Threads
 * past the last output still take part (with the init value) in the
 * barrier and the shuffles. */
static bool emit_gpu_column_tiled(Red *r, const char *name, LaunchDims *ld) {
  Codegen *cg = r->cg;
  LLVMBuilderRef b = cg->b;
  int64_t nblocks = (r->out_n + WARP - 1) / WARP;
  if (nblocks > INT32_MAX)
    return diag_error(r->d, r->hero->loc, "reduce with %lld outputs is too large",
                      (long long)r->out_n);
  ld->grid[0] = nblocks > 0 ? (uint32_t)nblocks : 1;
  ld->block[0] = WARP;
  ld->block[1] = WARP;
  LLVMValueRef shm[RED_MAX_N];
  for (int j = 0; j < r->n; j++) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s_column_tile%d", name, j);
    shm[j] = cg_shared_array(cg, cg_reg_type(cg, r->et[j]), WARP * (WARP + 1), buf);
  }
  LLVMValueRef tx = sreg64(cg, "tid.x"), ty = sreg64(cg, "tid.y");
  LLVMValueRef base = LLVMBuildMul(b, sreg64(cg, "ctaid.x"), cg_const_i64(cg, WARP), "base");
  LLVMValueRef o = LLVMBuildAdd(b, base, tx, "o");
  reset_acc(r);
  LLVMBasicBlockRef join = if_begin(cg, cmp_lt(cg, o, r->out_n), "col_in_range");
  LLVMValueRef idx[RED_MAX_RANK];
  cg_split_index(cg, o, r->nkept, r->kept, r->in_shape->dims, idx);
  if (!accumulate_loop(r, idx, ty, WARP)) return false;
  if_end(cg, join);
  LLVMValueRef pitch = cg_const_i64(cg, WARP + 1);
  LLVMValueRef wslot = LLVMBuildAdd(b, LLVMBuildMul(b, ty, pitch, ""), tx, "wslot");
  LLVMValueRef rslot = LLVMBuildAdd(b, LLVMBuildMul(b, tx, pitch, ""), ty, "rslot");
  for (int j = 0; j < r->n; j++) {
    LLVMTypeRef t = cg_reg_type(cg, r->et[j]);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(b, t, shm[j], &wslot, 1, "slot");
    LLVMBuildStore(b, LLVMBuildLoad2(b, t, r->acc[j], "a"), p);
  }
  cg_barrier(cg);
  for (int j = 0; j < r->n; j++) {
    LLVMTypeRef t = cg_reg_type(cg, r->et[j]);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(b, t, shm[j], &rslot, 1, "slot");
    LLVMBuildStore(b, LLVMBuildLoad2(b, t, p, "part"), r->acc[j]);
  }
  if (!warp_allreduce(r)) return false;
  LLVMValueRef o2 = LLVMBuildAdd(b, base, ty, "o_out");
  LLVMValueRef ok = LLVMBuildAnd(b, cmp_lt(cg, o2, r->out_n), cmp_eq0(cg, tx), "");
  LLVMBasicBlockRef j2 = if_begin(cg, ok, "col_out");
  LLVMValueRef oidx[RED_MAX_RANK];
  cg_split_index(cg, o2, r->nkept, r->kept, r->in_shape->dims, oidx);
  store_outputs(r, oidx);
  if_end(cg, j2);
  return true;
}

static bool emit_gpu_warp_row(Red *r, LaunchDims *ld) {
  Codegen *cg = r->cg;
  int64_t nblocks = (r->out_n + WARP_ROWS_PER_BLOCK - 1) / WARP_ROWS_PER_BLOCK;
  if (nblocks > INT32_MAX)
    return diag_error(r->d, r->hero->loc, "reduce with %lld outputs is too large",
                      (long long)r->out_n);
  ld->grid[0] = nblocks > 0 ? (uint32_t)nblocks : 1;
  ld->block[0] = WARP * WARP_ROWS_PER_BLOCK;
  LLVMValueRef tid = sreg64(cg, "tid.x");
  LLVMValueRef lane = LLVMBuildURem(cg->b, tid, cg_const_i64(cg, WARP), "lane");
  LLVMValueRef warp = LLVMBuildUDiv(cg->b, tid, cg_const_i64(cg, WARP), "warp");
  LLVMValueRef o = LLVMBuildAdd(cg->b,
                                LLVMBuildMul(cg->b, sreg64(cg, "ctaid.x"),
                                             cg_const_i64(cg, WARP_ROWS_PER_BLOCK), "base"),
                                warp, "o");
  /* o is the same in all lanes of a warp: the branch is warp-uniform */
  LLVMBasicBlockRef join = if_begin(cg, cmp_lt(cg, o, r->out_n), "row_in_range");
  LLVMValueRef idx[RED_MAX_RANK];
  cg_split_index(cg, o, r->nkept, r->kept, r->in_shape->dims, idx);
  reset_acc(r);
  if (!accumulate_loop(r, idx, lane, WARP)) return false;
  if (!warp_allreduce(r)) return false;
  LLVMBasicBlockRef j2 = if_begin(cg, cmp_eq0(cg, lane), "lane0");
  store_outputs(r, idx);
  if_end(cg, j2);
  if_end(cg, join);
  return true;
}

static bool emit_gpu_block_row(Red *r, const char *name, LaunchDims *ld) {
  Codegen *cg = r->cg;
  LLVMBuilderRef b = cg->b;
  int64_t threads = r->out_n == 1 ? FULL_ROW_THREADS : BLOCK_ROW_THREADS;
  int64_t nwarps = threads / WARP;
  if (r->out_n > INT32_MAX)
    return diag_error(r->d, r->hero->loc, "reduce with %lld outputs is too large",
                      (long long)r->out_n);
  ld->grid[0] = r->out_n > 0 ? (uint32_t)r->out_n : 1;
  ld->block[0] = (uint32_t)threads;
  LLVMValueRef shm[RED_MAX_N];
  for (int j = 0; j < r->n; j++) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s_partial%d", name, j);
    shm[j] = cg_shared_array(cg, cg_reg_type(cg, r->et[j]), nwarps, buf);
  }
  LLVMValueRef tid = sreg64(cg, "tid.x");
  LLVMValueRef lane = LLVMBuildURem(b, tid, cg_const_i64(cg, WARP), "lane");
  LLVMValueRef warp = LLVMBuildUDiv(b, tid, cg_const_i64(cg, WARP), "warp");
  LLVMValueRef o = sreg64(cg, "ctaid.x");
  /* o is the same in the whole block: the barrier below is safe */
  LLVMBasicBlockRef join = if_begin(cg, cmp_lt(cg, o, r->out_n), "row_in_range");
  LLVMValueRef idx[RED_MAX_RANK];
  cg_split_index(cg, o, r->nkept, r->kept, r->in_shape->dims, idx);
  reset_acc(r);
  if (!accumulate_loop(r, idx, tid, threads)) return false;
  if (!warp_allreduce(r)) return false;
  LLVMBasicBlockRef j1 = if_begin(cg, cmp_eq0(cg, lane), "lane0");
  for (int j = 0; j < r->n; j++) {
    LLVMTypeRef t = cg_reg_type(cg, r->et[j]);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(b, t, shm[j], &warp, 1, "slot");
    LLVMBuildStore(b, LLVMBuildLoad2(b, t, r->acc[j], "a"), p);
  }
  if_end(cg, j1);
  cg_barrier(cg);
  LLVMBasicBlockRef j2 = if_begin(cg, cmp_eq0(cg, warp), "warp0");
  LLVMValueRef have = cmp_lt(cg, lane, nwarps);
  LLVMValueRef slot = LLVMBuildSelect(b, have, lane, cg_const_i64(cg, 0), "slot_i");
  for (int j = 0; j < r->n; j++) {
    LLVMTypeRef t = cg_reg_type(cg, r->et[j]);
    LLVMValueRef p = LLVMBuildInBoundsGEP2(b, t, shm[j], &slot, 1, "slot");
    LLVMValueRef v = LLVMBuildLoad2(b, t, p, "part");
    LLVMBuildStore(b, LLVMBuildSelect(b, have, v, r->init[j], "part_or_init"), r->acc[j]);
  }
  if (!warp_allreduce(r)) return false;
  LLVMBasicBlockRef j3 = if_begin(cg, cmp_eq0(cg, lane), "lane0_out");
  store_outputs(r, idx);
  if_end(cg, j3);
  if_end(cg, j2);
  if_end(cg, join);
  return true;
}

static RedStrategy choose(const Red *r, const Codegen *cg) {
  if (!cg->is_gpu) return RED_HOST;
  /* minor-most physical input dimension reduced (or all of them): a row
   * reduction */
  bool row = r->nred > 0;
  if (r->nkept > 0 && r->nred > 0) {
    const Layout *l = r->in_shape->layout;
    int minor = (l && l->rank == r->rank) ? (int)l->minor_to_major[0] : r->rank - 1;
    row = minor == r->red[r->nred - 1];
  }
  if (!row || r->red_n <= 1)
    return r->red_n >= COLUMN_TILE_MIN_ROWS ? RED_COLUMN_TILED : RED_COLUMN;
  return r->red_n <= FULL_ROW_THREADS && r->out_n > 1 ? RED_WARP_ROW : RED_BLOCK_ROW;
}

bool cg_emit_reduction_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *hero,
                              const char *name, LaunchDims *ld, Diag *d) {
  Red *r = xcalloc(1, sizeof *r);
  r->cg = cg;
  r->d = d;
  r->hero = hero;
  bool ok = false, begun = false;
  const HloComp *comp = cg_fusion_comp(instr);
  if (!analyze(r, instr)) goto done;
  if (!cg_kernel_begin(cg, instr, name, &r->k, d)) goto done;
  begun = true;
  if (!map_outputs(r, instr, comp)) goto done;
  if (comp) {
    r->el = cg_elemental_new(cg, comp, NULL, r->k.in, d);
    if (!r->el) goto done;
  } else if (r->k.nin < 2 * r->n) {
    diag_error(d, instr->loc, "reduce operands are not arrays");
    goto done;
  }
  for (int j = 0; j < r->n; j++) {
    r->acc[j] = LLVMBuildAlloca(cg->b, cg_reg_type(cg, r->et[j]), "acc");
    r->init[j] = operand_at(r, r->n + j, NULL);
    if (!r->init[j]) goto done;
  }
  memset(ld, 0, sizeof *ld);
  for (int j = 0; j < 3; j++) ld->grid[j] = ld->block[j] = 1;
  switch (choose(r, cg)) {
  case RED_HOST: ok = emit_host(r, ld); break;
  case RED_COLUMN: ok = emit_gpu_column(r, ld); break;
  case RED_COLUMN_TILED: ok = emit_gpu_column_tiled(r, name, ld); break;
  case RED_WARP_ROW: ok = emit_gpu_warp_row(r, ld); break;
  case RED_BLOCK_ROW: ok = emit_gpu_block_row(r, name, ld); break;
  }
done:
  if (r->el) cg_elemental_free(r->el);
  if (begun) cg_kernel_end(&r->k);
  free(r);
  return ok;
}
