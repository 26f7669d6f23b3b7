/*
 * rng_kernel.c - the rng-bit-generator kernel (hero a rng-bit-generator,
 * the root of a lone fusion after fusion-wrapper), bit for bit what
 * lib/eval/rng.c computes, which is what XLA's RngBitGeneratorExpander
 * computes (checked against XLA's CPU through JAX in testdata/eval):
 *
 *   three-fry (rng_three_fry): key state[0], 64-bit counter state[1];
 *     32-bit and narrower outputs: the shape split in halves along its
 *     first even (else largest) dimension, element i of the half shape
 *     (row-major) drawing counter + i, its two words going to positions
 *     2j and 2j+1 of the split dimension; 64-bit outputs: counter + j for
 *     element j, words (lo, hi).  New state[1] = counter + draws.
 *   Philox4x32-10 (rng_philox, rng_default): key state[0], 128-bit counter
 *     (state[1], state[2]) or (state[1], state[0]) for a two-word state;
 *     counter + v for v < ceil(words / 4), four words each, round robin
 *     (a 64-bit output takes two consecutive words, low first).  New
 *     counter = counter + ceil(words / 4), carried.
 *   Narrower outputs keep the low bits of their 32-bit word.
 *
 * Every output element computes its own block of the generator (the
 * neighbours sharing a block recompute it), so elements are independent:
 * host work units as the loop kernel splits them, GPU one thread each.
 * The item of element 0 also writes the new state (the result never shares
 * bytes with the operand: codegen.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

enum { RNG_MAX_RANK = 64, RNG_GPU_BLOCK = 256 };

typedef struct RngEmit {
  Codegen *cg;
  const HloInstr *x;
  const Shape *ss, *ds;         /* state, data */
  int bits;                     /* of a data element */
  bool philox;
  int split;                    /* three-fry's split dimension */
  int64_t hdims[RNG_MAX_RANK];  /* three-fry's half shape */
  int64_t half_n;
  LLVMValueRef st[3];           /* state words as i64 (st[2] = 0 if absent) */
} RngEmit;

static LLVMValueRef c32(Codegen *cg, uint32_t v) {
  return LLVMConstInt(cg_i32(cg), v, false);
}

static LLVMValueRef c64(Codegen *cg, uint64_t v) {
  return LLVMConstInt(cg_i64(cg), v, false);
}

static LLVMValueRef lo32(Codegen *cg, LLVMValueRef v) {
  return LLVMBuildTrunc(cg->b, v, cg_i32(cg), "");
}

static LLVMValueRef hi32(Codegen *cg, LLVMValueRef v) {
  return LLVMBuildTrunc(cg->b, LLVMBuildLShr(cg->b, v, c64(cg, 32), ""), cg_i32(cg), "");
}

static LLVMValueRef join64(Codegen *cg, LLVMValueRef lo, LLVMValueRef hi) {
  LLVMBuilderRef b = cg->b;
  return LLVMBuildOr(b, LLVMBuildZExt(b, lo, cg_i64(cg), ""),
                     LLVMBuildShl(b, LLVMBuildZExt(b, hi, cg_i64(cg), ""), c64(cg, 32), ""),
                     "");
}

static LLVMValueRef rotl(Codegen *cg, LLVMValueRef v, int d) {
  LLVMBuilderRef b = cg->b;
  return LLVMBuildOr(b, LLVMBuildShl(b, v, c32(cg, (uint32_t)d), ""),
                     LLVMBuildLShr(b, v, c32(cg, (uint32_t)(32 - d)), ""), "");
}

/* Threefry-2x32 with 20 rounds of (key0, key1) on (x[0], x[1]). */
static void threefry(Codegen *cg, LLVMValueRef k0, LLVMValueRef k1, LLVMValueRef x[2]) {
  static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  LLVMBuilderRef b = cg->b;
  LLVMValueRef ks[3] = {k0, k1,
                        LLVMBuildXor(b, LLVMBuildXor(b, k0, k1, ""), c32(cg, 0x1BD11BDAu), "")};
  LLVMValueRef a = LLVMBuildAdd(b, x[0], ks[0], ""), c = LLVMBuildAdd(b, x[1], ks[1], "");
  for (int blk = 0; blk < 5; blk++) {
    const int *r = blk % 2 == 0 ? rot : rot + 4;
    for (int k = 0; k < 4; k++) {
      a = LLVMBuildAdd(b, a, c, "");
      c = LLVMBuildXor(b, rotl(cg, c, r[k]), a, "");
    }
    a = LLVMBuildAdd(b, a, ks[(blk + 1) % 3], "");
    c = LLVMBuildAdd(b, c, LLVMBuildAdd(b, ks[(blk + 2) % 3], c32(cg, (uint32_t)(blk + 1)), ""),
                     "");
  }
  x[0] = a;
  x[1] = c;
}

/* Philox-4x32 with 10 rounds of (key0, key1) on x[0..3]. */
static void philox(Codegen *cg, LLVMValueRef k0, LLVMValueRef k1, LLVMValueRef x[4]) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i64 = cg_i64(cg);
  for (int round = 0; round < 10; round++) {
    LLVMValueRef p0 = LLVMBuildMul(b, LLVMBuildZExt(b, x[0], i64, ""), c64(cg, 0xD2511F53u), "");
    LLVMValueRef p1 = LLVMBuildMul(b, LLVMBuildZExt(b, x[2], i64, ""), c64(cg, 0xCD9E8D57u), "");
    LLVMValueRef n0 = LLVMBuildXor(b, LLVMBuildXor(b, hi32(cg, p1), x[1], ""), k0, "");
    LLVMValueRef n1 = lo32(cg, p1);
    LLVMValueRef n2 = LLVMBuildXor(b, LLVMBuildXor(b, hi32(cg, p0), x[3], ""), k1, "");
    LLVMValueRef n3 = lo32(cg, p0);
    x[0] = n0;
    x[1] = n1;
    x[2] = n2;
    x[3] = n3;
    k0 = LLVMBuildAdd(b, k0, c32(cg, 0x9E3779B9u), "");
    k1 = LLVMBuildAdd(b, k1, c32(cg, 0xBB67AE85u), "");
  }
}

/* Selects x[w] (w an i64 < n) from n values. */
static LLVMValueRef pick(Codegen *cg, LLVMValueRef const *x, int n, LLVMValueRef w) {
  LLVMValueRef r = x[0];
  for (int k = 1; k < n; k++)
    r = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, w, c64(cg, (uint64_t)k), ""),
                        x[k], r, "");
  return r;
}

/* Philox's 128-bit counter plus v (an i64): words x[0..3]. */
static void philox_counter(RngEmit *r, LLVMValueRef v, LLVMValueRef x[4]) {
  Codegen *cg = r->cg;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef lo = r->st[1], hi = r->philox && r->ss->dims[0] >= 3 ? r->st[2] : r->st[0];
  LLVMValueRef l = LLVMBuildAdd(b, lo, v, "");
  LLVMValueRef carry = LLVMBuildICmp(b, LLVMIntULT, l, lo, "");
  LLVMValueRef h = LLVMBuildAdd(b, hi, LLVMBuildZExt(b, carry, cg_i64(cg), ""), "");
  x[0] = lo32(cg, l);
  x[1] = hi32(cg, l);
  x[2] = lo32(cg, h);
  x[3] = hi32(cg, h);
}

/* The data element at multi-index idx (row-major linear index j), as an
 * i64 holding its bits. */
static LLVMValueRef element_bits(RngEmit *r, LLVMValueRef const *idx, LLVMValueRef j) {
  Codegen *cg = r->cg;
  LLVMBuilderRef b = cg->b;
  LLVMValueRef k0 = lo32(cg, r->st[0]), k1 = hi32(cg, r->st[0]);
  if (r->philox) {
    LLVMValueRef x[4];
    if (r->bits == 64) {
      philox_counter(r, LLVMBuildLShr(b, j, c64(cg, 1), ""), x);
      philox(cg, k0, k1, x);
      LLVMValueRef odd = LLVMBuildTrunc(b, j, LLVMInt1TypeInContext(cg->ctx), "");
      return LLVMBuildSelect(b, odd, join64(cg, x[2], x[3]), join64(cg, x[0], x[1]), "");
    }
    philox_counter(r, LLVMBuildLShr(b, j, c64(cg, 2), ""), x);
    philox(cg, k0, k1, x);
    return LLVMBuildZExt(b, pick(cg, x, 4, LLVMBuildAnd(b, j, c64(cg, 3), "")), cg_i64(cg), "");
  }
  LLVMValueRef ctr = r->st[1], x[2];
  if (r->bits == 64 || r->ds->rank == 0) {
    LLVMValueRef in = LLVMBuildAdd(b, ctr, j, "");
    x[0] = lo32(cg, in);
    x[1] = hi32(cg, in);
    threefry(cg, k0, k1, x);
    return r->bits == 64 ? join64(cg, x[0], x[1]) : LLVMBuildZExt(b, x[0], cg_i64(cg), "");
  }
  /* the row-major index of the element's pair in the half shape */
  LLVMValueRef h = NULL, w = NULL;
  for (int d = 0; d < r->ds->rank; d++) {
    LLVMValueRef v = idx[d];
    if (d == r->split) {
      w = LLVMBuildAnd(b, v, c64(cg, 1), "");
      v = LLVMBuildLShr(b, v, c64(cg, 1), "");
    }
    h = h ? LLVMBuildAdd(b, LLVMBuildMul(b, h, c64(cg, (uint64_t)r->hdims[d]), ""), v, "") : v;
  }
  LLVMValueRef in = LLVMBuildAdd(b, ctr, h, "");
  x[0] = lo32(cg, in);
  x[1] = hi32(cg, in);
  threefry(cg, k0, k1, x);
  return LLVMBuildZExt(b, pick(cg, x, 2, w), cg_i64(cg), "");
}

/* The new state words 1 (and 2) after this draw. */
static void new_state(RngEmit *r, LLVMValueRef out[3]) {
  Codegen *cg = r->cg;
  LLVMBuilderRef b = cg->b;
  int64_t n = shape_elements(r->ds);
  for (int k = 0; k < 3; k++)
    out[k] = r->st[k];
  if (!r->philox) {
    /* one draw per element (64-bit), one for a scalar, else one per pair */
    int64_t draws = r->bits == 64 ? n : r->ds->rank == 0 ? 1 : r->half_n;
    out[1] = LLVMBuildAdd(b, r->st[1], c64(cg, (uint64_t)draws), "");
    return;
  }
  int64_t words = r->bits == 64 ? 2 * n : n;
  LLVMValueRef x[4];
  philox_counter(r, c64(cg, (uint64_t)((words + 3) / 4)), x);
  out[1] = join64(cg, x[0], x[1]);
  if (r->ss->dims[0] >= 3)
    out[2] = join64(cg, x[2], x[3]);
}

/* Item j of [0, max(n, 1)): data element j (when j < n) and, for j = 0,
 * the new state. */
static void emit_item(RngEmit *r, CgKernel *k, LLVMValueRef j) {
  Codegen *cg = r->cg;
  LLVMBuilderRef b = cg->b;
  int64_t n = shape_elements(r->ds);
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
  if (n > 0) {
    int dsel[RNG_MAX_RANK];
    LLVMValueRef idx[RNG_MAX_RANK];
    for (int d = 0; d < r->ds->rank; d++)
      dsel[d] = d;
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, fn, "elem");
    LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(cg->ctx, fn, "elem.done");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, j, c64(cg, (uint64_t)n), ""), body, after);
    LLVMPositionBuilderAtEnd(b, body);
    cg_split_index(cg, j, r->ds->rank, dsel, r->ds->dims, idx);
    LLVMValueRef v = element_bits(r, idx, j);
    ElemType et = r->ds->et;
    LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)et_bits(et));
    v = LLVMBuildTrunc(b, v, it, "");
    if (LLVMTypeOf(v) != cg_reg_type(cg, et))
      v = LLVMBuildBitCast(b, v, cg_reg_type(cg, et), "");
    cg_store_elem(cg, k->out[1], r->ds, idx, v);
    LLVMBuildBr(b, after);
    LLVMPositionBuilderAtEnd(b, after);
  }
  LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(cg->ctx, fn, "state");
  LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, fn, "state.done");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, j, c64(cg, 0), ""), st, done);
  LLVMPositionBuilderAtEnd(b, st);
  LLVMValueRef ns[3];
  new_state(r, ns);
  for (int64_t w = 0; w < r->ss->dims[0]; w++) {
    LLVMValueRef wi = c64(cg, (uint64_t)w);
    LLVMValueRef v = w < 3 ? ns[w] : cg_load_elem(cg, k->in[0], r->ss, &wi);
    cg_store_elem(cg, k->out[0], r->ss, &wi, v);
  }
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
}

static bool rfail(Diag *d, const HloInstr *x, const char *what) {
  return diag_error(d, x->loc, "codegen: rng-bit-generator kernel: %s (%s)", what,
                    x->name ? x->name : "?");
}

/* Fills r from the instruction; false (error in d) for what the kernel
 * does not take. */
static bool plan(RngEmit *r, const HloInstr *instr, const HloInstr *x, Diag *d) {
  const HloComp *comp = cg_fusion_comp(instr);
  if (comp && comp->root != x)
    return rfail(d, x, "the fusion root is not the rng-bit-generator");
  if (x->nops != 1 || (comp && x->ops[0]->op != HLO_PARAMETER))
    return rfail(d, x, "the state must be an operand of the kernel");
  const Shape *ss = x->ops[0]->shape, *rs = x->shape;
  if (!shape_is_array(ss) || ss->rank != 1 || ss->et != ET_U64 || ss->dims[0] < 2 ||
      rs->et != ET_TUPLE || rs->ntuple != 2 || !shape_is_array(rs->tuple[1]))
    return rfail(d, x, "malformed");
  const Shape *ds = rs->tuple[1];
  int bits = et_bits(ds->et);
  if (et_class(ds->et) == ETC_PRED || et_is_complex(ds->et) || bits > 64 ||
      (bits > 32 && bits != 64) || ds->rank > RNG_MAX_RANK || !cg_et_supported(ds->et))
    return rfail(d, x, "unsupported output type");
  memset(r, 0, sizeof *r);
  r->x = x;
  r->ss = ss;
  r->ds = ds;
  r->bits = bits;
  r->philox = x->rng_algo != RNG_THREE_FRY;
  r->split = -1;
  for (int k = 0; k < ds->rank && r->split < 0; k++)
    if (ds->dims[k] % 2 == 0)
      r->split = k;
  if (r->split < 0)
    for (int k = 0; k < ds->rank; k++)
      if (r->split < 0 || ds->dims[k] > ds->dims[r->split])
        r->split = k;
  r->half_n = 1;
  for (int k = 0; k < ds->rank; k++) {
    r->hdims[k] = k == r->split ? (ds->dims[k] + 1) / 2 : ds->dims[k];
    r->half_n *= r->hdims[k];
  }
  return true;
}

bool cg_emit_rng_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *hero,
                        const char *name, LaunchDims *ld, Diag *d) {
  RngEmit r;
  if (!plan(&r, instr, hero, d))
    return false;
  r.cg = cg;
  CgKernel k;
  if (!cg_kernel_begin(cg, instr, name, &k, d))
    return false;
  if (k.nin != 1 || k.nout != 2) {
    free(k.in);
    free(k.in_shapes);
    return rfail(d, hero, "expects one state operand and (state, data) results");
  }
  LLVMBuilderRef b = cg->b;
  for (int w = 0; w < 3; w++) {
    LLVMValueRef wi = c64(cg, (uint64_t)w);
    r.st[w] = w < r.ss->dims[0] ? cg_load_elem(cg, k.in[0], r.ss, &wi) : c64(cg, 0);
  }
  int64_t n = shape_elements(r.ds), items = n > 0 ? n : 1;
  if (cg->is_gpu) {
    int64_t grid = (items + RNG_GPU_BLOCK - 1) / RNG_GPU_BLOCK;
    ld->grid[0] = (uint32_t)grid;
    ld->block[0] = RNG_GPU_BLOCK;
    LLVMValueRef tid = LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), cg_i64(cg), "");
    LLVMValueRef bid = LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), cg_i64(cg), "");
    LLVMValueRef j = LLVMBuildAdd(b, LLVMBuildMul(b, bid, c64(cg, RNG_GPU_BLOCK), ""), tid, "j");
    emit_item(&r, &k, j);
  } else {
    LLVMValueRef start, end;
    cg_host_range(&k, items, r.philox ? 40 : 100, ld, &start, &end);
    CgLoop l;
    LLVMValueRef j = cg_loop_begin(cg, &l, start, end, c64(cg, 1), "j");
    emit_item(&r, &k, j);
    cg_loop_end(cg, &l);
  }
  cg_kernel_end(&k);
  return true;
}
