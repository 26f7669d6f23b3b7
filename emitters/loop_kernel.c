/*
 * loop_kernel.c - the loop kernel: every output element computed
 * independently by the elemental emitter.  GPU: one thread per 1, 2, 4 or
 * 8 consecutive physical output elements (at most 16 bytes of each output,
 * all loads before all stores so that LLVM's load/store vectorizer makes
 * them vector accesses; blocks of 64 to 256 threads, exact grid sized to
 * fill an H200's 132 SMs; consecutive threads on consecutive elements so
 * accesses coalesce);
 * host: rows of the minor-most physical dimension in work units of whole
 * rows (cg_host_range), a row an inner loop LLVM vectorizes; a transpose
 * in 32x32 tiles.
 * Multi-output fusions whose outputs have equal dimensions are written in
 * the same loop.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

/* LOOP_SMS: streaming multiprocessors of the GPU we tune for (H200: 132);
 * LOOP_FILL_BLOCKS: blocks wanted before widening a thread's work. */
enum { HOST_TILE = 32 };
/* Host rows of this many elements keep their loop (see emit_host). */
enum { HOST_ROW_LOOP_MIN = 16, HOST_ROW_LOOP_MAX = 64 };

enum { LOOP_BLOCK = 256, LOOP_MIN_BLOCK = 64, LOOP_MAX_RANK = 64, LOOP_SMS = 132,
       LOOP_FILL_BLOCKS = 2 * LOOP_SMS };

/* The minor-most physical dimension of s. */
static int minor_dim(const Shape *s) {
  if (s->rank == 0)
    return -1;
  if (s->layout && s->layout->rank == s->rank && s->layout->minor_to_major)
    return (int)s->layout->minor_to_major[0];
  return s->rank - 1;
}

typedef struct LoopOut {
  int n;
  const HloInstr **roots;         /* values to store, one per output leaf */
  LLVMValueRef *ptrs;
  const Shape **shapes;
} LoopOut;

/* The values of every output at multi-index idx, into vals (o->n).  False
 * on error. */
static bool emit_values(CgElemental *e, const LoopOut *o,
                        LLVMValueRef const *idx, LLVMValueRef *vals) {
  for (int k = 0; k < o->n; k++)
    if (!(vals[k] = cg_elemental_emit(e, o->roots[k], idx)))
      return false;
  return true;
}

static void store_values(Codegen *cg, const LoopOut *o,
                         LLVMValueRef const *idx, LLVMValueRef const *vals) {
  for (int k = 0; k < o->n; k++)
    cg_store_elem(cg, o->ptrs[k], o->shapes[k], idx, vals[k]);
}

/* Stores every output at the element of multi-index idx.  False on error. */
static bool emit_element(Codegen *cg, CgElemental *e, const LoopOut *o,
                         LLVMValueRef const *idx) {
  LLVMValueRef *vals = xcalloc((size_t)o->n + 1, sizeof *vals);
  bool ok = emit_values(e, o, idx, vals);
  if (ok)
    store_values(cg, o, idx, vals);
  free(vals);
  return ok;
}

/* Chooses the elements per thread: the widest of 8, 4, 2 that divides the
 * minor dimension, keeps every output's run within 16 bytes (one vector
 * access) and still leaves LOOP_FILL_BLOCKS blocks of LOOP_BLOCK threads,
 * so that a large tensor keeps every SM of an H200 (132) busy; else 1. */
static int vector_width(const Shape *s, int64_t n, int max_bytes) {
  int md = minor_dim(s);
  if (md < 0)
    return 1;
  int64_t minor = s->dims[md];
  for (int v = 8; v > 1; v /= 2)
    if (minor % v == 0 && v * max_bytes <= 16 &&
        n / v >= (int64_t)LOOP_BLOCK * LOOP_FILL_BLOCKS)
      return v;
  return 1;
}

static bool emit_gpu(Codegen *cg, CgElemental *e, const LoopOut *o,
                     const Shape *s, LaunchDims *ld, const HloInstr *instr,
                     Diag *d) {
  int64_t n = shape_elements(s);
  int max_bytes = 1;
  for (int k = 0; k < o->n; k++)
    if (et_bytes(o->shapes[k]->et) > max_bytes)
      max_bytes = et_bytes(o->shapes[k]->et);
  int v = vector_width(s, n, max_bytes);
  int64_t threads = (n + v - 1) / v;
  int64_t block = threads < LOOP_BLOCK ? (threads > 0 ? threads : 1) : LOOP_BLOCK;
  /* smaller blocks spread a mid-sized tensor over more SMs */
  while (block > LOOP_MIN_BLOCK && (threads + block - 1) / block < LOOP_SMS)
    block /= 2;
  int64_t grid = (threads + block - 1) / block;
  if (grid < 1)
    grid = 1;
  if (grid > INT32_MAX)
    return diag_error(d, instr->loc, "codegen: output of '%s' too large for one launch",
                      instr->name);
  ld->grid[0] = (uint32_t)grid;
  ld->block[0] = (uint32_t)block;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef tid = LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), cg_i64(cg), "");
  LLVMValueRef bid = LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), cg_i64(cg), "");
  LLVMValueRef t = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, bid, cg_const_i64(cg, block), ""),
                                   tid, "");
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, fn, "body");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, fn, "done");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, t, cg_const_i64(cg, threads), ""),
                  body, done);
  LLVMPositionBuilderAtEnd(b, body);
  LLVMValueRef base = LLVMBuildNUWMul(b, t, cg_const_i64(cg, v), "");
  LLVMValueRef idx[LOOP_MAX_RANK];
  cg_delinearize(cg, s, base, idx);
  int md = minor_dim(s);
  LLVMValueRef minor0 = md >= 0 ? idx[md] : NULL;
  if (v == 1) {
    if (!emit_element(cg, e, o, idx))
      return false;
  } else {
    /* all loads of the v elements before their stores, so that the
     * load/store vectorizer can merge them into vector accesses */
    LLVMValueRef *vals = xcalloc((size_t)(v * o->n) + 1, sizeof *vals);
    LLVMValueRef *minors = xcalloc((size_t)v, sizeof *minors);
    bool ok = true;
    for (int j = 0; j < v && ok; j++) {
      minors[j] = j ? LLVMBuildNUWAdd(b, minor0, cg_const_i64(cg, j), "") : minor0;
      idx[md] = minors[j];
      ok = emit_values(e, o, idx, vals + j * o->n);
    }
    for (int j = 0; j < v && ok; j++) {
      idx[md] = minors[j];
      store_values(cg, o, idx, vals + j * o->n);
    }
    free(vals);
    free(minors);
    if (!ok)
      return false;
  }
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  return true;
}

/* Host: rows of the minor-most physical dimension, split into work units
 * of whole rows; the inner loop walks a row's consecutive elements so that
 * LLVM vectorizes it.  A transposing fusion (cg_transpose_hero) walks its
 * rows in square tiles instead. */
static bool emit_host(Codegen *cg, CgKernel *k, CgElemental *e, const LoopOut *o,
                      const Shape *s, bool transposing, LaunchDims *ld) {
  LLVMValueRef idx[LOOP_MAX_RANK];
  int md = minor_dim(s);
  if (md < 0)
    return emit_element(cg, e, o, idx);
  int64_t n = shape_elements(s), minor = s->dims[md];
  if (n == 0)
    return true;
  int outer[LOOP_MAX_RANK], nouter = 0;   /* other dims, major to minor */
  const Layout *l = s->layout;
  bool use_layout = l && l->rank == s->rank && l->minor_to_major;
  for (int j = s->rank - 1; j >= 0; j--) {
    int dim = use_layout ? (int)l->minor_to_major[j] : s->rank - 1 - j;
    if (dim != md)
      outer[nouter++] = dim;
  }
  int64_t nrows = n / minor;
  LLVMValueRef start, end;
  CgLoop rows, cols;
  if (!transposing || nrows < 2 * HOST_TILE || minor < 2 * HOST_TILE) {
    cg_host_range(k, nrows, minor, ld, &start, &end);
    ld->row_dims = nouter;        /* rows: the dims but the minor-most */
    LLVMValueRef row = cg_loop_begin(cg, &rows, start, end, cg_const_i64(cg, 1), "row");
    cg_split_index(cg, row, nouter, outer, s->dims, idx);
    idx[md] = cg_loop_begin(cg, &cols, cg_const_i64(cg, 0), cg_const_i64(cg, minor),
                            cg_const_i64(cg, 1), "col");
    if (!emit_element(cg, e, o, idx))
      return false;
    /* a row of 16 to 64 elements stays a loop, which LLVM vectorizes along
     * the row: fully unrolled (it fits the unroller's threshold when its
     * element is cheap), its elements became a loop body that the
     * vectorizer took across the rows, with a gather and a scatter per
     * element (a reshape to [.., 64, 16]: 3x the compile time of the
     * kernel, 2x its run time) */
    cg_loop_end_hinted(cg, &cols, minor >= HOST_ROW_LOOP_MIN && minor <= HOST_ROW_LOOP_MAX
                                      ? CG_LOOP_NO_UNROLL : 0);
    cg_elemental_clear_cache(e);
    cg_loop_end(cg, &rows);
    return true;
  }
  /* a transpose: work units of HOST_TILE rows, walked in HOST_TILE x
   * HOST_TILE tiles so that the operand's lines, read across the rows,
   * are used while they are in L1 */
  LLVMBuilderRef b = cg->b;
  LLVMValueRef tile = cg_const_i64(cg, HOST_TILE);
  cg_host_range(k, (nrows + HOST_TILE - 1) / HOST_TILE, HOST_TILE * minor, ld, &start, &end);
  CgLoop blocks, chunks;
  LLVMValueRef blk = cg_loop_begin(cg, &blocks, start, end, cg_const_i64(cg, 1), "rblock");
  LLVMValueRef r0 = LLVMBuildNUWMul(b, blk, tile, "r0");
  LLVMValueRef r1 = LLVMBuildNUWAdd(b, r0, tile, "");
  r1 = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, r1, cg_const_i64(cg, nrows), ""), r1,
                       cg_const_i64(cg, nrows), "r1");
  LLVMValueRef c0 = cg_loop_begin(cg, &chunks, cg_const_i64(cg, 0), cg_const_i64(cg, minor),
                                  tile, "c0");
  LLVMValueRef c1 = LLVMBuildNUWAdd(b, c0, tile, "");
  c1 = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, c1, cg_const_i64(cg, minor), ""), c1,
                       cg_const_i64(cg, minor), "c1");
  LLVMValueRef row = cg_loop_begin(cg, &rows, r0, r1, cg_const_i64(cg, 1), "row");
  cg_split_index(cg, row, nouter, outer, s->dims, idx);
  idx[md] = cg_loop_begin(cg, &cols, c0, c1, cg_const_i64(cg, 1), "col");
  if (!emit_element(cg, e, o, idx))
    return false;
  cg_loop_end(cg, &cols);
  cg_elemental_clear_cache(e);
  cg_loop_end(cg, &rows);
  cg_loop_end(cg, &chunks);
  cg_loop_end(cg, &blocks);
  return true;
}

bool cg_emit_loop_kernel(Codegen *cg, const HloInstr *instr, const char *name,
                         LaunchDims *ld, Diag *d) {
  const HloComp *comp = cg_fusion_comp(instr);
  const HloInstr *root = comp ? comp->root : instr;
  LoopOut o = {0};
  HloInstr *gtes = NULL;          /* element k of a multi-output root op */
  if (root->op == HLO_TUPLE && comp) {
    o.n = root->nops;
    o.roots = xcalloc((size_t)o.n + 1, sizeof *o.roots);
    for (int k = 0; k < o.n; k++)
      o.roots[k] = root->ops[k];
  } else if (root->op == HLO_REDUCE_WINDOW && shape_is_tuple(root->shape)) {
    /* a variadic reduce-window: its results through get-tuple-elements
     * that exist only here, which the elemental emitter reads as such */
    o.n = root->shape->ntuple;
    o.roots = xcalloc((size_t)o.n + 1, sizeof *o.roots);
    gtes = xcalloc((size_t)o.n + 1, sizeof *gtes);
    for (int k = 0; k < o.n; k++) {
      gtes[k].op = HLO_GET_TUPLE_ELEMENT;
      gtes[k].name = root->name;
      gtes[k].loc = root->loc;
      gtes[k].shape = root->shape->tuple[k];
      gtes[k].ops = (HloInstr **)&root;
      gtes[k].nops = 1;
      gtes[k].tuple_index = k;
      gtes[k].parent = root->parent;
      o.roots[k] = &gtes[k];
    }
  } else {
    o.n = 1;
    o.roots = xcalloc(2, sizeof *o.roots);
    o.roots[0] = root;
  }
  bool ok = false;
  CgKernel k;
  CgElemental *e = NULL;
  if (!cg_kernel_begin(cg, instr, name, &k, d))
    goto out;
  if (k.nout != o.n && root->op != HLO_TUPLE) {
    diag_error(d, root->loc, "codegen: unsupported op '%s' (%s): no kernel emitter for it",
               hlo_op_name(root->op), root->name ? root->name : "?");
    goto out_kernel;
  }
  if (k.nout != o.n) {
    diag_error(d, instr->loc, "codegen: loop kernel of '%s': nested tuple outputs are not supported",
               instr->name);
    goto out_kernel;
  }
  const Shape *s = k.out_shapes[0];
  if (s->rank > LOOP_MAX_RANK) {
    diag_error(d, instr->loc, "codegen: rank %d too large", s->rank);
    goto out_kernel;
  }
  for (int j = 0; j < o.n; j++) {
    const Shape *sj = k.out_shapes[j];
    if (sj->rank != s->rank ||
        (s->rank && memcmp(sj->dims, s->dims, (size_t)s->rank * sizeof *s->dims))) {
      diag_error(d, instr->loc,
                 "codegen: loop kernel of '%s': outputs of different dimensions are not supported",
                 instr->name);
      goto out_kernel;
    }
  }
  o.ptrs = k.out;
  o.shapes = k.out_shapes;
  e = cg_elemental_new(cg, comp, comp ? NULL : instr, k.in, d);
  if (cg->is_gpu)
    ok = emit_gpu(cg, e, &o, s, ld, instr, d);
  else
    ok = emit_host(cg, &k, e, &o, s, cg_transpose_hero(instr) != NULL, ld);
out_kernel:
  if (ok) {
    cg_kernel_end(&k);
  } else {
    free(k.in);
    free(k.in_shapes);
  }
out:
  cg_elemental_free(e);
  free(o.roots);
  free(gtes);
  return ok;
}
