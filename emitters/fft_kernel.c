/*
 * fft_kernel.c - the kernel of fft (FFT, IFFT, RFFT, IRFFT over the last
 * one to three dimensions), for both targets.
 *
 * It follows lib/eval/linalg.c's eval_fft step by step, in complex double:
 * the transformed dimensions of one batch member are loaded into a dense
 * work array holding the full spectrum (for IRFFT the last dimension's
 * missing half is the conjugate mirror of the half given), then each
 * transformed dimension gets a plain DFT along it (IFFT and IRFFT divide by
 * its length), with twiddles e^{-2 pi i e / n} from libm's (libdevice's)
 * cos and sin and exponents e = k * t mod n kept exact; RFFT transforms the
 * last dimension first, IRFFT last (after the outer ones, the last
 * dimension's mirror is rebuilt from their result).  The outputs are the
 * first out_last elements of each line of the last dimension, rounded
 * once to the result type (the real part for IRFFT).
 *
 * One work item per batch member (the dimensions before the transformed
 * ones).  Host: items split into work units, each unit with its own slot of
 * the scratch buffer (work array, a line buffer and the twiddles); GPU:
 * one thread per item with its own slot.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

enum { FFT_MAX_RANK = 64, FFT_GPU_BLOCK = 64 };

typedef struct Fft {
  Codegen *cg;
  Diag *d;
  const HloInstr *x;
  CgKernel k;
  int in_leaf;
  int rank, nf, nb;               /* rank, transformed dims, batch dims */
  int64_t wdims[FFT_MAX_RANK];    /* the work array's dims: fft lengths */
  int64_t wn, maxlen;             /* work elements; longest length */
  LLVMTypeRef ct;                 /* <2 x double> */
  LLVMValueRef idx[FFT_MAX_RANK];
  LLVMValueRef work, tmp, tw;     /* this item's slot */
} Fft;

static bool fft_fail(Diag *d, const HloInstr *x, const char *why) {
  return diag_error(d, x->loc, "codegen: %s 'fft' (%s)", why, x->name ? x->name : "?");
}

static LLVMValueRef i64c(Fft *f, int64_t v) { return cg_const_i64(f->cg, v); }

static LLVMValueRef dbl(Fft *f, double v) {
  return LLVMConstReal(LLVMDoubleTypeInContext(f->cg->ctx), v);
}

static LLVMValueRef cmake(Fft *f, LLVMValueRef re, LLVMValueRef im) {
  LLVMBuilderRef b = f->cg->b;
  LLVMValueRef z = LLVMGetUndef(f->ct);
  z = LLVMBuildInsertElement(b, z, re, cg_const_i32(f->cg, 0), "");
  return LLVMBuildInsertElement(b, z, im, cg_const_i32(f->cg, 1), "");
}

static LLVMValueRef cpart(Fft *f, LLVMValueRef z, int k) {
  return LLVMBuildExtractElement(f->cg->b, z, cg_const_i32(f->cg, k), "");
}

static LLVMValueRef cconj(Fft *f, LLVMValueRef z) {
  return cmake(f, cpart(f, z, 0), LLVMBuildFNeg(f->cg->b, cpart(f, z, 1), ""));
}

/* Element j of the complex array at base. */
static LLVMValueRef at(Fft *f, LLVMValueRef base, LLVMValueRef j) {
  return LLVMBuildInBoundsGEP2(f->cg->b, f->ct, base, &j, 1, "");
}

static LLVMValueRef get(Fft *f, LLVMValueRef base, LLVMValueRef j) {
  return LLVMBuildLoad2(f->cg->b, f->ct, at(f, base, j), "");
}

static void put(Fft *f, LLVMValueRef base, LLVMValueRef j, LLVMValueRef v) {
  LLVMBuildStore(f->cg->b, v, at(f, base, j));
}

static LLVMValueRef loop(Fft *f, CgLoop *l, LLVMValueRef lo, LLVMValueRef hi, const char *n) {
  return cg_loop_begin(f->cg, l, lo, hi, i64c(f, 1), n);
}

/* The idx entries of the transformed dims but the last from work row rw
 * (row-major over wdims[nb .. rank-2]). */
static void row_digits(Fft *f, LLVMValueRef rw) {
  int dsel[FFT_MAX_RANK];
  int n = 0;
  for (int d = f->nb; d < f->rank - 1; d++)
    dsel[n++] = d;
  cg_split_index(f->cg, rw, n, dsel, f->wdims, f->idx);
}

/* Input element (row rw, position t of the last dim), as complex double. */
static LLVMValueRef in_load(Fft *f, LLVMValueRef rw, LLVMValueRef t) {
  Codegen *cg = f->cg;
  const Shape *s = f->x->ops[0]->shape;
  row_digits(f, rw);
  f->idx[f->rank - 1] = t;
  LLVMValueRef v = cg_load_elem(cg, f->k.in[f->in_leaf], s, f->idx);
  if (s->et == ET_C128)
    return v;
  if (s->et == ET_C64)
    return LLVMBuildFPExt(cg->b, v, f->ct, "");
  return cmake(f, cg_emit_convert(cg, s->et, ET_F64, v), dbl(f, 0.0));
}

static void out_store(Fft *f, LLVMValueRef rw, LLVMValueRef t, LLVMValueRef v) {
  Codegen *cg = f->cg;
  const Shape *s = f->x->shape;
  row_digits(f, rw);
  f->idx[f->rank - 1] = t;
  if (s->et == ET_C64)
    v = LLVMBuildFPTrunc(cg->b, v, cg_reg_type(cg, ET_C64), "");
  else if (s->et != ET_C128)
    v = cg_emit_convert(cg, ET_F64, s->et, cpart(f, v, 0));
  cg_store_elem(cg, f->k.out[0], s, f->idx, v);
}

/* DFT along work dim d (an index into wdims, nb <= d < rank) of the whole
 * work array. */
static void dft_dim(Fft *f, int d, bool inverse) {
  Codegen *cg = f->cg;
  LLVMBuilderRef b = cg->b;
  int64_t n = f->wdims[d], inner = 1, outer = 1;
  if (n <= 0)
    return;
  for (int k = d + 1; k < f->rank; k++)
    inner *= f->wdims[k];
  for (int k = f->nb; k < d; k++)
    outer *= f->wdims[k];
  LLVMValueRef zero = i64c(f, 0), nn = i64c(f, n);
  LLVMTypeRef i64 = cg_i64(cg);
  /* twiddles: tw[e] = (cos a, sin a), a = -2 pi e / n */
  CgLoop lt, lo, li, lk, lt2, lc;
  LLVMValueRef e = loop(f, &lt, zero, nn, "tw");
  LLVMValueRef ang = LLVMBuildFDiv(
      b, LLVMBuildFMul(b, dbl(f, -2.0 * M_PI), LLVMBuildSIToFP(b, e, LLVMDoubleTypeInContext(cg->ctx), ""), ""),
      dbl(f, (double)n), "ang");
  put(f, f->tw, e, cmake(f, cg_math_call(cg, "cos", ET_F64, 1, &ang),
                         cg_math_call(cg, "sin", ET_F64, 1, &ang)));
  cg_loop_end(cg, &lt);
  LLVMValueRef acc = cg_var(cg, f->ct, "acc"), ev = cg_var(cg, i64, "e");
  LLVMValueRef o = loop(f, &lo, zero, i64c(f, outer), "outer");
  LLVMValueRef in = loop(f, &li, zero, i64c(f, inner), "inner");
  LLVMValueRef base = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, o, i64c(f, n * inner), ""), in, "");
  LLVMValueRef k = loop(f, &lk, zero, nn, "k");
  LLVMBuildStore(b, cmake(f, dbl(f, 0.0), dbl(f, 0.0)), acc);
  LLVMBuildStore(b, zero, ev);
  LLVMValueRef t = loop(f, &lt2, zero, nn, "t");
  LLVMValueRef ex = LLVMBuildLoad2(b, i64, ev, "");
  LLVMValueRef w = get(f, f->tw, ex);
  if (inverse)
    w = cconj(f, w);
  LLVMValueRef vt = get(f, f->work, LLVMBuildNSWAdd(b, base, LLVMBuildNSWMul(b, t, i64c(f, inner), ""), ""));
  LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildLoad2(b, f->ct, acc, ""),
                                  cg_complex_mul(cg, ET_C128, vt, w), ""), acc);
  /* e = k * (t + 1) mod n, kept exact */
  LLVMValueRef e1 = LLVMBuildNSWAdd(b, ex, k, "");
  e1 = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGE, e1, nn, ""), LLVMBuildNSWSub(b, e1, nn, ""),
                       e1, "");
  LLVMBuildStore(b, e1, ev);
  cg_loop_end(cg, &lt2);
  LLVMValueRef sum = LLVMBuildLoad2(b, f->ct, acc, "");
  if (inverse)
    sum = LLVMBuildFDiv(b, sum, cmake(f, dbl(f, (double)n), dbl(f, (double)n)), "");
  put(f, f->tmp, k, sum);
  cg_loop_end(cg, &lk);
  LLVMValueRef c = loop(f, &lc, zero, nn, "copy");
  put(f, f->work, LLVMBuildNSWAdd(b, base, LLVMBuildNSWMul(b, c, i64c(f, inner), ""), ""),
      get(f, f->tmp, c));
  cg_loop_end(cg, &lc);
  cg_loop_end(cg, &li);
  cg_loop_end(cg, &lo);
}

static void emit_item(Fft *f, LLVMValueRef item) {
  Codegen *cg = f->cg;
  LLVMBuilderRef b = cg->b;
  const Shape *is = f->x->ops[0]->shape, *s = f->x->shape;
  FftType ty = f->x->fft_type;
  int last = f->rank - 1;
  int dsel[FFT_MAX_RANK];
  for (int d = 0; d < f->nb; d++)
    dsel[d] = d;
  cg_split_index(cg, item, f->nb, dsel, is->dims, f->idx);
  int64_t L = f->wdims[last], rows = L > 0 ? f->wn / L : 0;
  int64_t in_last = is->dims[last], out_last = s->dims[last];
  LLVMValueRef zero = i64c(f, 0);
  CgLoop lr, lt;
  /* load; IRFFT: t >= in_last is the conjugate of position L - t */
  LLVMValueRef rw = loop(f, &lr, zero, i64c(f, rows), "lrow");
  LLVMValueRef t = loop(f, &lt, zero, i64c(f, L), "lt");
  LLVMValueRef wi = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, rw, i64c(f, L), ""), t, "");
  if (ty == FFT_IRFFT) {
    LLVMValueRef given = LLVMBuildICmp(b, LLVMIntSLT, t, i64c(f, in_last), "");
    LLVMValueRef mirror = LLVMBuildNSWSub(b, i64c(f, L), t, "");
    LLVMValueRef tt = LLVMBuildSelect(b, given, t, mirror, "");
    /* the mirror index is < in_last for every t >= in_last */
    LLVMValueRef v = in_load(f, rw, tt);
    put(f, f->work, wi, LLVMBuildSelect(b, given, v, cconj(f, v), ""));
  } else {
    put(f, f->work, wi, in_load(f, rw, t));
  }
  cg_loop_end(cg, &lt);
  cg_loop_end(cg, &lr);
  if (ty == FFT_IRFFT) {
    for (int k = 0; k < f->nf - 1; k++)
      dft_dim(f, f->rank - f->nf + k, true);
    rw = loop(f, &lr, zero, i64c(f, rows), "mrow");
    t = loop(f, &lt, i64c(f, in_last), i64c(f, L), "mt");
    LLVMValueRef rb = LLVMBuildNSWMul(b, rw, i64c(f, L), "");
    put(f, f->work, LLVMBuildNSWAdd(b, rb, t, ""),
        cconj(f, get(f, f->work, LLVMBuildNSWAdd(b, rb, LLVMBuildNSWSub(b, i64c(f, L), t, ""), ""))));
    cg_loop_end(cg, &lt);
    cg_loop_end(cg, &lr);
    dft_dim(f, last, true);
  } else {
    bool inv = ty == FFT_IFFT;
    if (ty == FFT_RFFT)
      dft_dim(f, last, false);
    for (int k = 0; k < f->nf; k++) {
      int d = f->rank - f->nf + k;
      if (ty == FFT_RFFT && d == last)
        continue;
      dft_dim(f, d, inv);
    }
  }
  rw = loop(f, &lr, zero, i64c(f, rows), "orow");
  t = loop(f, &lt, zero, i64c(f, out_last), "ot");
  out_store(f, rw, t, get(f, f->work, LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, rw, i64c(f, L), ""), t, "")));
  cg_loop_end(cg, &lt);
  cg_loop_end(cg, &lr);
}

/* Checks the fft's shapes as lib/eval does and fills the work dims. */
static bool plan(Fft *f) {
  const HloInstr *x = f->x;
  const Shape *is = x->nops == 1 ? x->ops[0]->shape : NULL, *s = x->shape;
  int nf = (int)x->fft_length.n;
  if (!is || !shape_is_array(is) || !shape_is_array(s) || nf < 1 || nf > 3 || is->rank < nf ||
      s->rank != is->rank || is->rank > FFT_MAX_RANK || x->fft_type == FFT_NONE)
    return fft_fail(f->d, x, "malformed");
  FftType ty = x->fft_type;
  bool real_in = ty == FFT_RFFT, real_out = ty == FFT_IRFFT;
  if ((real_in ? !(is->et == ET_F32 || is->et == ET_F64)
               : !(is->et == ET_C64 || is->et == ET_C128)) ||
      (real_out ? !(s->et == ET_F32 || s->et == ET_F64)
                : !(s->et == ET_C64 || s->et == ET_C128)))
    return fft_fail(f->d, x, "unsupported element types of");
  int rank = f->rank = s->rank;
  f->nf = nf;
  f->nb = rank - nf;
  for (int k = 0; k < nf; k++) {
    int d = rank - nf + k;
    int64_t len = x->fft_length.v[k];
    bool lastd = k == nf - 1;
    int64_t want_in = len, want_out = len;
    if (ty == FFT_RFFT && lastd)
      want_out = len / 2 + 1;
    if (ty == FFT_IRFFT && lastd)
      want_in = len / 2 + 1;
    if (len < 0 || is->dims[d] != want_in || s->dims[d] != want_out)
      return fft_fail(f->d, x, "fft_length does not match the shapes of");
  }
  for (int d = 0; d < f->nb; d++)
    if (is->dims[d] != s->dims[d])
      return fft_fail(f->d, x, "batch dimensions differ in");
  f->wn = 1;
  f->maxlen = 1;
  for (int d = 0; d < rank; d++) {
    f->wdims[d] = d >= f->nb ? x->fft_length.v[d - f->nb] : is->dims[d];
    if (d >= f->nb) {
      f->wn *= f->wdims[d];
      if (f->wdims[d] > f->maxlen)
        f->maxlen = f->wdims[d];
    }
  }
  return true;
}

static LLVMBasicBlockRef new_block(Codegen *cg, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  return LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
}

bool cg_emit_fft_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *hero,
                        const char *name, LaunchDims *ld, Diag *d) {
  Fft f;
  memset(&f, 0, sizeof f);
  f.cg = cg;
  f.d = d;
  f.x = hero;
  const HloComp *fc = cg_fusion_comp(instr);
  if (fc && fc->root != hero)
    return fft_fail(d, hero, "a fusion with more than the op around");
  if (hero->nops != 1 || (fc && hero->ops[0]->op != HLO_PARAMETER))
    return fft_fail(d, hero, "a fused operand computed in the fusion of");
  f.in_leaf = fc ? (int)hero->ops[0]->param_number : 0;
  if (!shape_is_array((fc ? instr : hero)->ops[f.in_leaf]->shape))
    return fft_fail(d, hero, "a tuple operand of");
  if (!plan(&f))
    return false;
  f.ct = LLVMVectorType(LLVMDoubleTypeInContext(cg->ctx), 2);
  int64_t items = 1;
  for (int k = 0; k < f.nb; k++)
    items *= f.wdims[k];
  if (f.wn == 0)
    items = 0;
  int64_t unit = (f.wn + 2 * f.maxlen) * 16;
  int64_t cost = f.wn * f.maxlen * f.nf + 1;
  if (!cg_kernel_begin_temp(cg, instr, name, &f.k, d))
    return false;
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(cg->ctx);
  LLVMValueRef slot = NULL, item = NULL;
  CgLoop lp;
  LLVMBasicBlockRef done = NULL;
  if (items > 0 && cg->is_gpu) {
    int64_t T = items < FFT_GPU_BLOCK ? items : FFT_GPU_BLOCK;
    int64_t G = (items + T - 1) / T;
    if (G > INT32_MAX) {
      cg_kernel_end(&f.k);
      return fft_fail(d, hero, "too many transforms in");
    }
    ld->grid[0] = (uint32_t)G;
    ld->block[0] = (uint32_t)T;
    ld->temp_bytes = items * unit;
    item = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), cg_i64(cg), ""),
                                        i64c(&f, T), ""),
                        LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), cg_i64(cg), ""), "item");
    LLVMBasicBlockRef body = new_block(cg, "item");
    done = new_block(cg, "done");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, item, i64c(&f, items), ""), body, done);
    LLVMPositionBuilderAtEnd(b, body);
    slot = item;
  } else if (items > 0) {
    LLVMValueRef start, end;
    cg_host_range(&f.k, items, cost, ld, &start, &end);
    ld->temp_bytes = (int64_t)ld->grid[0] * unit;
    slot = f.k.lo;
    item = NULL;
    LLVMValueRef off = LLVMBuildNSWMul(b, slot, i64c(&f, unit), "");
    f.work = LLVMBuildInBoundsGEP2(b, i8, f.k.temp, &off, 1, "work");
    item = cg_loop_begin(cg, &lp, start, end, i64c(&f, 1), "item");
  }
  if (items > 0) {
    if (cg->is_gpu) {
      LLVMValueRef off = LLVMBuildNSWMul(b, slot, i64c(&f, unit), "");
      f.work = LLVMBuildInBoundsGEP2(b, i8, f.k.temp, &off, 1, "work");
    }
    LLVMValueRef wn = i64c(&f, f.wn), ml = i64c(&f, f.wn + f.maxlen);
    f.tmp = LLVMBuildInBoundsGEP2(b, f.ct, f.work, &wn, 1, "tmp");
    f.tw = LLVMBuildInBoundsGEP2(b, f.ct, f.work, &ml, 1, "tw");
    emit_item(&f, item);
    if (cg->is_gpu) {
      LLVMBuildBr(b, done);
      LLVMPositionBuilderAtEnd(b, done);
    } else {
      cg_loop_end(cg, &lp);
    }
  }
  if (ld->temp_bytes < 64)
    ld->temp_bytes = 64;
  cg_kernel_end(&f.k);
  return true;
}
