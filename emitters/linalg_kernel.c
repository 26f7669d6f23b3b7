/*
 * linalg_kernel.c - kernels of the linear-algebra ops: cholesky,
 * triangular-solve and XLA's QR custom-calls "Qr" and
 * "ProductOfElementaryHouseholderReflectors", for both targets.
 *
 * They follow lib/eval/linalg.c step by step: the same algorithms, loops
 * and order of operations, in double (complex types in pairs of doubles),
 * each result rounded once to its element type; so they agree with the
 * interpreter up to the last bits of complex division (Smith's method here,
 * libgcc's there) and of libm's sqrt / hypot.  In short:
 *   cholesky: column by column from the requested triangle (upper read as
 *     the conjugate transpose); a square root of a negative or NaN pivot
 *     makes the whole batch member NaN (XLA's CholeskyExpander), else the
 *     other triangle is zero;
 *   triangular-solve: forward or backward substitution with op(a) from the
 *     given triangle (unit diagonal, transpose, adjoint), left or right;
 *   Qr: Householder QR in LAPACK's geqrf form with XLA's sign and tau
 *     conventions; the product: orgqr's, reflectors applied last first.
 *
 * One work item per batch member (matrix).  Host: items split into work
 * units (cg_host_range), each unit with its own slot of the scratch buffer
 * for the member's working matrix; GPU: one thread per item, each with its
 * own slot (correct, not fast: these ops are small in the programs that
 * use them).  Operands and results are read and written through their
 * layouts at (batch index, row, column).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

enum { LA_MAX_RANK = 64, LA_GPU_BLOCK = 64 };

typedef enum LaKind { LA_CHOLESKY, LA_TRSM, LA_QR, LA_HOUSEHOLDER } LaKind;

/* A kernel being emitted: its op, scalar type and work item. */
typedef struct La {
  Codegen *cg;
  Diag *d;
  const HloInstr *x;              /* the op */
  LaKind kind;
  bool cx;                        /* complex scalars: <2 x double> */
  LLVMTypeRef st;                 /* double or <2 x double> */
  CgKernel k;
  int in_leaf[2];                 /* kernel operand leaf of operand j */
  int nbatch;                     /* batch dims (the leading rank - 2) */
  LLVMValueRef idx[LA_MAX_RANK];  /* this item's batch digits, then r, c */
  LLVMValueRef work;              /* this item's scratch slot */
} La;

static bool la_fail(Diag *d, const HloInstr *x, const char *why) {
  return diag_error(d, x->loc, "codegen: %s '%s' (%s)", why,
                    x->op == HLO_CUSTOM_CALL && x->cc && x->cc->target ? x->cc->target
                                                                       : hlo_op_name(x->op),
                    x->name ? x->name : "?");
}

bool cg_is_linalg(const HloInstr *i) {
  if (i->op == HLO_CHOLESKY || i->op == HLO_TRIANGULAR_SOLVE)
    return true;
  return i->op == HLO_CUSTOM_CALL && i->cc && i->cc->target &&
         (strcmp(i->cc->target, "Qr") == 0 ||
          strcmp(i->cc->target, "ProductOfElementaryHouseholderReflectors") == 0);
}

/* ---- scalars: double or <2 x double> ------------------------------------ */

static LLVMValueRef i64c(La *l, int64_t v) { return cg_const_i64(l->cg, v); }

static LLVMValueRef dbl(La *l, double v) {
  return LLVMConstReal(LLVMDoubleTypeInContext(l->cg->ctx), v);
}

static LLVMValueRef sc_make(La *l, LLVMValueRef re, LLVMValueRef im) {
  if (!l->cx)
    return re;
  LLVMBuilderRef b = l->cg->b;
  LLVMValueRef z = LLVMGetUndef(l->st);
  z = LLVMBuildInsertElement(b, z, re, cg_const_i32(l->cg, 0), "");
  return LLVMBuildInsertElement(b, z, im, cg_const_i32(l->cg, 1), "");
}

static LLVMValueRef sc_const(La *l, double re) { return sc_make(l, dbl(l, re), dbl(l, 0.0)); }

static LLVMValueRef sc_re(La *l, LLVMValueRef v) {
  return l->cx ? LLVMBuildExtractElement(l->cg->b, v, cg_const_i32(l->cg, 0), "re") : v;
}

static LLVMValueRef sc_im(La *l, LLVMValueRef v) {
  return l->cx ? LLVMBuildExtractElement(l->cg->b, v, cg_const_i32(l->cg, 1), "im")
               : dbl(l, 0.0);
}

static LLVMValueRef sc_add(La *l, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFAdd(l->cg->b, a, b, "");
}

static LLVMValueRef sc_sub(La *l, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFSub(l->cg->b, a, b, "");
}

static LLVMValueRef sc_mul(La *l, LLVMValueRef a, LLVMValueRef b) {
  return l->cx ? cg_complex_mul(l->cg, ET_C128, a, b) : LLVMBuildFMul(l->cg->b, a, b, "");
}

static LLVMValueRef sc_div(La *l, LLVMValueRef a, LLVMValueRef b) {
  return l->cx ? cg_complex_div(l->cg, ET_C128, a, b) : LLVMBuildFDiv(l->cg->b, a, b, "");
}

/* a / r for a real double r (each part divided). */
static LLVMValueRef sc_div_re(La *l, LLVMValueRef a, LLVMValueRef r) {
  return LLVMBuildFDiv(l->cg->b, a, sc_make(l, r, r), "");
}

static LLVMValueRef sc_conj(La *l, LLVMValueRef a) {
  if (!l->cx)
    return a;
  return sc_make(l, sc_re(l, a), LLVMBuildFNeg(l->cg->b, sc_im(l, a), ""));
}

static LLVMValueRef math1(La *l, const char *fn, LLVMValueRef x) {
  return cg_math_call(l->cg, fn, ET_F64, 1, &x);
}

static LLVMValueRef math2(La *l, const char *fn, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef a[2] = {x, y};
  return cg_math_call(l->cg, fn, ET_F64, 2, a);
}

/* Scratch element j (i64) of the item's slot, from element offset base. */
static LLVMValueRef w_ptr(La *l, int64_t base, LLVMValueRef j) {
  LLVMValueRef off = LLVMBuildNSWAdd(l->cg->b, i64c(l, base), j, "");
  return LLVMBuildInBoundsGEP2(l->cg->b, l->st, l->work, &off, 1, "");
}

static LLVMValueRef w_ld(La *l, int64_t base, LLVMValueRef j) {
  return LLVMBuildLoad2(l->cg->b, l->st, w_ptr(l, base, j), "");
}

static void w_st(La *l, int64_t base, LLVMValueRef j, LLVMValueRef v) {
  LLVMBuildStore(l->cg->b, v, w_ptr(l, base, j));
}

/* Row-major index r * n + c of a scratch matrix. */
static LLVMValueRef rc(La *l, LLVMValueRef r, int64_t n, LLVMValueRef c) {
  return LLVMBuildNSWAdd(l->cg->b, LLVMBuildNSWMul(l->cg->b, r, i64c(l, n), ""), c, "");
}

/* Element (r, c) (the minor two dims) of this item's member of array s at
 * ptr, as a scalar. */
static LLVMValueRef el_load(La *l, LLVMValueRef ptr, const Shape *s, LLVMValueRef r,
                            LLVMValueRef c) {
  Codegen *cg = l->cg;
  l->idx[s->rank - 2] = r;
  l->idx[s->rank - 1] = c;
  LLVMValueRef v = cg_load_elem(cg, ptr, s, l->idx);
  if (et_is_complex(s->et))
    return s->et == ET_C128 ? v : LLVMBuildFPExt(cg->b, v, l->st, "");
  v = cg_emit_convert(cg, s->et, ET_F64, v);
  return sc_make(l, v, dbl(l, 0.0));
}

/* Element `j` (the minor dim) of a rank nbatch + 1 array (taus). */
static LLVMValueRef vec_load(La *l, LLVMValueRef ptr, const Shape *s, LLVMValueRef j) {
  Codegen *cg = l->cg;
  l->idx[s->rank - 1] = j;
  LLVMValueRef v = cg_load_elem(cg, ptr, s, l->idx);
  if (et_is_complex(s->et))
    return s->et == ET_C128 ? v : LLVMBuildFPExt(cg->b, v, l->st, "");
  return sc_make(l, cg_emit_convert(cg, s->et, ET_F64, v), dbl(l, 0.0));
}

static LLVMValueRef to_et(La *l, ElemType et, LLVMValueRef v) {
  Codegen *cg = l->cg;
  if (et_is_complex(et))
    return et == ET_C128 ? v : LLVMBuildFPTrunc(cg->b, v, cg_reg_type(cg, et), "");
  return cg_emit_convert(cg, ET_F64, et, sc_re(l, v));
}

static void el_store(La *l, LLVMValueRef ptr, const Shape *s, LLVMValueRef r, LLVMValueRef c,
                     LLVMValueRef v) {
  l->idx[s->rank - 2] = r;
  l->idx[s->rank - 1] = c;
  cg_store_elem(l->cg, ptr, s, l->idx, to_et(l, s->et, v));
}

static void vec_store(La *l, LLVMValueRef ptr, const Shape *s, LLVMValueRef j,
                      LLVMValueRef v) {
  l->idx[s->rank - 1] = j;
  cg_store_elem(l->cg, ptr, s, l->idx, to_et(l, s->et, v));
}

/* for (v = lo; v < hi; v++) */
static LLVMValueRef loop(La *l, CgLoop *lp, LLVMValueRef lo, LLVMValueRef hi, const char *nm) {
  return cg_loop_begin(l->cg, lp, lo, hi, i64c(l, 1), nm);
}

static LLVMValueRef var(La *l, const char *nm) { return cg_var(l->cg, l->st, nm); }

static LLVMValueRef ld(La *l, LLVMValueRef v) { return LLVMBuildLoad2(l->cg->b, l->st, v, ""); }

static void st(La *l, LLVMValueRef v, LLVMValueRef p) { LLVMBuildStore(l->cg->b, v, p); }

/* ---- cholesky -------------------------------------------------------------- */

/* The lower-triangle view A'(r, c) of the operand: a[r][c], or for an
 * upper cholesky conj(a[c][r]). */
static LLVMValueRef chol_av(La *l, LLVMValueRef r, LLVMValueRef c) {
  const Shape *s = l->x->ops[0]->shape;
  LLVMValueRef a = l->k.in[l->in_leaf[0]];
  return l->x->cholesky_lower ? el_load(l, a, s, r, c) : sc_conj(l, el_load(l, a, s, c, r));
}

static void emit_cholesky(La *l) {
  Codegen *cg = l->cg;
  LLVMBuilderRef b = cg->b;
  const Shape *s = l->x->shape;
  int64_t n = s->dims[s->rank - 1];
  LLVMValueRef zero = i64c(l, 0), nn = i64c(l, n);
  LLVMValueRef bad = cg_var(cg, LLVMInt1TypeInContext(cg->ctx), "not_pd");
  LLVMValueRef acc = var(l, "acc");
  LLVMBuildStore(b, LLVMConstInt(LLVMInt1TypeInContext(cg->ctx), 0, 0), bad);
  CgLoop lz, lj, lk, lr, lk2;
  LLVMValueRef z = loop(l, &lz, zero, i64c(l, n * n), "zero");
  w_st(l, 0, z, sc_const(l, 0.0));
  cg_loop_end(cg, &lz);
  LLVMValueRef j = loop(l, &lj, zero, nn, "j");
  /* the pivot: A'(j, j) - sum_k L[j][k] conj(L[j][k]) */
  st(l, chol_av(l, j, j), acc);
  LLVMValueRef k = loop(l, &lk, zero, j, "k");
  LLVMValueRef ljk = w_ld(l, 0, rc(l, j, n, k));
  st(l, sc_sub(l, ld(l, acc), sc_mul(l, ljk, sc_conj(l, ljk))), acc);
  cg_loop_end(cg, &lk);
  LLVMValueRef ljj = math1(l, "sqrt", sc_re(l, ld(l, acc)));
  LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, ljj, ljj, "");
  LLVMBuildStore(b, LLVMBuildOr(b, LLVMBuildLoad2(b, LLVMInt1TypeInContext(cg->ctx), bad, ""),
                                isnan, ""), bad);
  w_st(l, 0, rc(l, j, n, j), sc_make(l, ljj, dbl(l, 0.0)));
  /* the column below: (A'(r, j) - sum_k L[r][k] conj(L[j][k])) / ljj */
  LLVMValueRef r = loop(l, &lr, LLVMBuildNSWAdd(b, j, i64c(l, 1), ""), nn, "r");
  st(l, chol_av(l, r, j), acc);
  LLVMValueRef k2 = loop(l, &lk2, zero, j, "k");
  st(l, sc_sub(l, ld(l, acc), sc_mul(l, w_ld(l, 0, rc(l, r, n, k2)),
                                     sc_conj(l, w_ld(l, 0, rc(l, j, n, k2))))), acc);
  cg_loop_end(cg, &lk2);
  w_st(l, 0, rc(l, r, n, j), sc_div_re(l, ld(l, acc), ljj));
  cg_loop_end(cg, &lr);
  cg_loop_end(cg, &lj);
  /* the result: L (other triangle 0), transposed and conjugated for upper;
   * NaN everywhere when a pivot was not positive */
  LLVMValueRef notpd = LLVMBuildLoad2(b, LLVMInt1TypeInContext(cg->ctx), bad, "");
  CgLoop lo1, lo2;
  LLVMValueRef rr = loop(l, &lo1, zero, nn, "or");
  LLVMValueRef cc = loop(l, &lo2, zero, nn, "oc");
  LLVMValueRef in_tri = LLVMBuildICmp(b, LLVMIntSLE, cc, rr, "");
  LLVMValueRef v = LLVMBuildSelect(b, in_tri, w_ld(l, 0, rc(l, rr, n, cc)), sc_const(l, 0.0), "");
  if (!l->x->cholesky_lower)
    v = sc_conj(l, v);
  v = LLVMBuildSelect(b, notpd, sc_make(l, dbl(l, NAN), dbl(l, 0.0)), v, "");
  LLVMValueRef out = l->k.out[0];
  if (l->x->cholesky_lower)
    el_store(l, out, s, rr, cc, v);
  else
    el_store(l, out, s, cc, rr, v);
  cg_loop_end(cg, &lo2);
  cg_loop_end(cg, &lo1);
}

/* ---- triangular-solve ------------------------------------------------------ */

/* op(a)(r, c) inside the triangle the substitution reads (and its
 * diagonal): a[r][c], or a[c][r] for a transpose, conjugated for an
 * adjoint; 1 on a unit diagonal. */
static LLVMValueRef trsm_t(La *l, LLVMValueRef r, LLVMValueRef c, bool diag) {
  const HloInstr *x = l->x;
  bool trans = x->tri_transpose_a == TRI_TRANSPOSE || x->tri_transpose_a == TRI_ADJOINT;
  if (diag && x->tri_unit_diagonal)
    return sc_const(l, 1.0);
  LLVMValueRef v = trans ? el_load(l, l->k.in[l->in_leaf[0]], x->ops[0]->shape, c, r)
                         : el_load(l, l->k.in[l->in_leaf[0]], x->ops[0]->shape, r, c);
  return x->tri_transpose_a == TRI_ADJOINT ? sc_conj(l, v) : v;
}

static void emit_trsm(La *l) {
  Codegen *cg = l->cg;
  LLVMBuilderRef b = cg->b;
  const HloInstr *x = l->x;
  const Shape *as = x->ops[0]->shape, *bs = x->ops[1]->shape, *s = x->shape;
  int rk = as->rank;
  int64_t m = as->dims[rk - 1], brows = bs->dims[rk - 2], bcols = bs->dims[rk - 1];
  bool trans = x->tri_transpose_a == TRI_TRANSPOSE || x->tri_transpose_a == TRI_ADJOINT;
  bool t_lower = x->tri_lower != trans;
  LLVMValueRef zero = i64c(l, 0), one = i64c(l, 1), mm = i64c(l, m);
  LLVMValueRef acc = var(l, "acc");
  CgLoop l1, l2, l3;
  /* X = B */
  LLVMValueRef r0 = loop(l, &l1, zero, i64c(l, brows), "br");
  LLVMValueRef c0 = loop(l, &l2, zero, i64c(l, bcols), "bc");
  w_st(l, 0, rc(l, r0, bcols, c0), el_load(l, l->k.in[l->in_leaf[1]], bs, r0, c0));
  cg_loop_end(cg, &l2);
  cg_loop_end(cg, &l1);
  if (x->tri_left_side) {
    /* op(a) X = B, column by column */
    LLVMValueRef c = loop(l, &l1, zero, i64c(l, bcols), "c");
    LLVMValueRef step = loop(l, &l2, zero, mm, "step");
    LLVMValueRef r = t_lower ? step : LLVMBuildNSWSub(b, i64c(l, m - 1), step, "r");
    st(l, w_ld(l, 0, rc(l, r, bcols, c)), acc);
    LLVMValueRef k = t_lower ? loop(l, &l3, zero, r, "k")
                             : loop(l, &l3, LLVMBuildNSWAdd(b, r, one, ""), mm, "k");
    st(l, sc_sub(l, ld(l, acc), sc_mul(l, trsm_t(l, r, k, false),
                                       w_ld(l, 0, rc(l, k, bcols, c)))), acc);
    cg_loop_end(cg, &l3);
    w_st(l, 0, rc(l, r, bcols, c), sc_div(l, ld(l, acc), trsm_t(l, r, r, true)));
    cg_loop_end(cg, &l2);
    cg_loop_end(cg, &l1);
  } else {
    /* X op(a) = B, row by row */
    LLVMValueRef r = loop(l, &l1, zero, i64c(l, brows), "r");
    LLVMValueRef step = loop(l, &l2, zero, mm, "step");
    LLVMValueRef j = t_lower ? LLVMBuildNSWSub(b, i64c(l, m - 1), step, "j") : step;
    st(l, w_ld(l, 0, rc(l, r, bcols, j)), acc);
    LLVMValueRef k = t_lower ? loop(l, &l3, LLVMBuildNSWAdd(b, j, one, ""), mm, "k")
                             : loop(l, &l3, zero, j, "k");
    st(l, sc_sub(l, ld(l, acc), sc_mul(l, w_ld(l, 0, rc(l, r, bcols, k)),
                                       trsm_t(l, k, j, false))), acc);
    cg_loop_end(cg, &l3);
    w_st(l, 0, rc(l, r, bcols, j), sc_div(l, ld(l, acc), trsm_t(l, j, j, true)));
    cg_loop_end(cg, &l2);
    cg_loop_end(cg, &l1);
  }
  r0 = loop(l, &l1, zero, i64c(l, brows), "xr");
  c0 = loop(l, &l2, zero, i64c(l, bcols), "xc");
  el_store(l, l->k.out[0], s, r0, c0, w_ld(l, 0, rc(l, r0, bcols, c0)));
  cg_loop_end(cg, &l2);
  cg_loop_end(cg, &l1);
}

/* ---- Qr and its Householder product ---------------------------------------- */

static void emit_qr(La *l) {
  Codegen *cg = l->cg;
  LLVMBuilderRef b = cg->b;
  const Shape *as = l->x->ops[0]->shape, *ts = l->x->shape->tuple[1];
  const Shape *os = l->x->shape->tuple[0];
  int64_t m = as->dims[as->rank - 2], n = as->dims[as->rank - 1], p = m < n ? m : n;
  int64_t V = m * n;              /* scratch: A [m][n], then v [m] */
  LLVMValueRef zero = i64c(l, 0), one = i64c(l, 1), mm = i64c(l, m), nn = i64c(l, n);
  LLVMValueRef in = l->k.in[l->in_leaf[0]];
  LLVMValueRef acc = var(l, "acc");
  LLVMValueRef sig = cg_var(cg, LLVMDoubleTypeInContext(cg->ctx), "sigma");
  LLVMTypeRef dt = LLVMDoubleTypeInContext(cg->ctx);
  CgLoop l1, l2, l3;
  LLVMValueRef r0 = loop(l, &l1, zero, mm, "ar");
  LLVMValueRef c0 = loop(l, &l2, zero, nn, "ac");
  w_st(l, 0, rc(l, r0, n, c0), el_load(l, in, as, r0, c0));
  cg_loop_end(cg, &l2);
  cg_loop_end(cg, &l1);
  LLVMValueRef j = loop(l, &l1, zero, i64c(l, p), "j");
  LLVMValueRef j1 = LLVMBuildNSWAdd(b, j, one, "");
  LLVMValueRef alpha = w_ld(l, 0, rc(l, j, n, j));
  /* sigma = sum of |x[r]|^2 below the diagonal */
  LLVMBuildStore(b, dbl(l, 0.0), sig);
  LLVMValueRef r = loop(l, &l2, j1, mm, "r");
  LLVMValueRef xr = w_ld(l, 0, rc(l, r, n, j));
  LLVMValueRef sq = LLVMBuildFMul(b, sc_re(l, xr), sc_re(l, xr), "");
  if (l->cx)
    sq = LLVMBuildFAdd(b, sq, LLVMBuildFMul(b, sc_im(l, xr), sc_im(l, xr), ""), "");
  LLVMBuildStore(b, LLVMBuildFAdd(b, LLVMBuildLoad2(b, dt, sig, ""), sq, ""), sig);
  cg_loop_end(cg, &l2);
  LLVMValueRef sigma = LLVMBuildLoad2(b, dt, sig, "");
  LLVMValueRef are = sc_re(l, alpha), aim = sc_im(l, alpha);
  LLVMValueRef szero = LLVMBuildFCmp(b, LLVMRealOEQ, sigma, dbl(l, 0.0), "");
  if (l->cx)
    szero = LLVMBuildAnd(b, szero, LLVMBuildFCmp(b, LLVMRealOEQ, aim, dbl(l, 0.0), ""), "");
  LLVMValueRef mu = math2(l, "hypot", l->cx ? math2(l, "hypot", are, aim) : are,
                          math1(l, "sqrt", sigma));
  LLVMValueRef neg = LLVMBuildFCmp(b, LLVMRealOLT, are, dbl(l, 0.0), "");
  LLVMValueRef beta = LLVMBuildFMul(b, LLVMBuildSelect(b, neg, dbl(l, 1.0), dbl(l, -1.0), ""),
                                    mu, "");
  beta = LLVMBuildSelect(b, szero, are, beta, "beta");
  LLVMValueRef tau = sc_make(l, LLVMBuildFDiv(b, LLVMBuildFSub(b, beta, are, ""), beta, ""),
                             LLVMBuildFDiv(b, LLVMBuildFNeg(b, aim, ""), beta, ""));
  tau = LLVMBuildSelect(b, szero, sc_const(l, 0.0), tau, "tau");
  LLVMValueRef div = LLVMBuildSelect(b, szero, sc_const(l, 1.0),
                                     sc_sub(l, alpha, sc_make(l, beta, dbl(l, 0.0))), "div");
  /* v = e_j + x[j+1:] / div */
  w_st(l, V, j, sc_const(l, 1.0));
  r = loop(l, &l2, j1, mm, "v");
  w_st(l, V, r, sc_div(l, w_ld(l, 0, rc(l, r, n, j)), div));
  cg_loop_end(cg, &l2);
  /* the columns right of j: a -= conj(tau) v (v^H a) */
  LLVMValueRef ctau = sc_conj(l, tau);
  LLVMValueRef c = loop(l, &l2, j1, nn, "c");
  st(l, sc_const(l, 0.0), acc);
  r = loop(l, &l3, j, mm, "w");
  st(l, sc_add(l, ld(l, acc), sc_mul(l, sc_conj(l, w_ld(l, V, r)), w_ld(l, 0, rc(l, r, n, c)))),
     acc);
  cg_loop_end(cg, &l3);
  LLVMValueRef w = ld(l, acc);
  r = loop(l, &l3, j, mm, "u");
  LLVMValueRef at = rc(l, r, n, c);
  w_st(l, 0, at, sc_sub(l, w_ld(l, 0, at), sc_mul(l, sc_mul(l, ctau, w_ld(l, V, r)), w)));
  cg_loop_end(cg, &l3);
  cg_loop_end(cg, &l2);
  /* column j: beta, then v below */
  w_st(l, 0, rc(l, j, n, j), sc_make(l, beta, dbl(l, 0.0)));
  r = loop(l, &l2, j1, mm, "vc");
  w_st(l, 0, rc(l, r, n, j), w_ld(l, V, r));
  cg_loop_end(cg, &l2);
  vec_store(l, l->k.out[1], ts, j, tau);
  cg_loop_end(cg, &l1);
  r0 = loop(l, &l1, zero, mm, "or");
  c0 = loop(l, &l2, zero, nn, "oc");
  el_store(l, l->k.out[0], os, r0, c0, w_ld(l, 0, rc(l, r0, n, c0)));
  cg_loop_end(cg, &l2);
  cg_loop_end(cg, &l1);
}

static void emit_householder(La *l) {
  Codegen *cg = l->cg;
  LLVMBuilderRef b = cg->b;
  const Shape *as = l->x->ops[0]->shape, *ts = l->x->ops[1]->shape, *s = l->x->shape;
  int64_t m = as->dims[as->rank - 2], n = as->dims[as->rank - 1], p = ts->dims[ts->rank - 1];
  LLVMValueRef zero = i64c(l, 0), one = i64c(l, 1), mm = i64c(l, m), nn = i64c(l, n);
  LLVMValueRef a = l->k.in[l->in_leaf[0]];
  LLVMValueRef acc = var(l, "acc");
  CgLoop l1, l2, l3;
  /* Q = I (m x n) */
  LLVMValueRef r0 = loop(l, &l1, zero, mm, "ir");
  LLVMValueRef c0 = loop(l, &l2, zero, nn, "ic");
  w_st(l, 0, rc(l, r0, n, c0),
       LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, r0, c0, ""), sc_const(l, 1.0),
                       sc_const(l, 0.0), ""));
  cg_loop_end(cg, &l2);
  cg_loop_end(cg, &l1);
  /* Q = H_j Q for j = p-1 .. 0 */
  LLVMValueRef step = loop(l, &l1, zero, i64c(l, p), "step");
  LLVMValueRef j = LLVMBuildNSWSub(b, i64c(l, p - 1), step, "j");
  LLVMValueRef j1 = LLVMBuildNSWAdd(b, j, one, "");
  LLVMValueRef tau = vec_load(l, l->k.in[l->in_leaf[1]], ts, j);
  LLVMValueRef c = loop(l, &l2, zero, nn, "c");
  st(l, w_ld(l, 0, rc(l, j, n, c)), acc);
  LLVMValueRef r = loop(l, &l3, j1, mm, "w");
  st(l, sc_add(l, ld(l, acc), sc_mul(l, sc_conj(l, el_load(l, a, as, r, j)),
                                     w_ld(l, 0, rc(l, r, n, c)))), acc);
  cg_loop_end(cg, &l3);
  LLVMValueRef w = ld(l, acc);
  LLVMValueRef jc = rc(l, j, n, c);
  w_st(l, 0, jc, sc_sub(l, w_ld(l, 0, jc), sc_mul(l, tau, w)));
  r = loop(l, &l3, j1, mm, "u");
  LLVMValueRef at = rc(l, r, n, c);
  w_st(l, 0, at, sc_sub(l, w_ld(l, 0, at),
                        sc_mul(l, sc_mul(l, tau, el_load(l, a, as, r, j)), w)));
  cg_loop_end(cg, &l3);
  cg_loop_end(cg, &l2);
  cg_loop_end(cg, &l1);
  r0 = loop(l, &l1, zero, mm, "or");
  c0 = loop(l, &l2, zero, nn, "oc");
  el_store(l, l->k.out[0], s, r0, c0, w_ld(l, 0, rc(l, r0, n, c0)));
  cg_loop_end(cg, &l2);
  cg_loop_end(cg, &l1);
}

/* ---- planning and the item loop -------------------------------------------- */

static bool float_et(ElemType et) {
  return et == ET_F16 || et == ET_BF16 || et == ET_F32 || et == ET_F64 || et == ET_C64 ||
         et == ET_C128;
}

static bool same_batch(const Shape *a, const Shape *b, int nb) {
  if (a->rank < nb || b->rank < nb)
    return false;
  for (int d = 0; d < nb; d++)
    if (a->dims[d] != b->dims[d])
      return false;
  return true;
}

/* Checks the op's shapes as lib/eval does; sets the scratch scalars per
 * item and the cost of an item. */
static bool plan(La *l, int64_t *slots, int64_t *cost) {
  const HloInstr *x = l->x;
  const Shape *s = x->shape;
  const Shape *a0 = x->nops >= 1 ? x->ops[0]->shape : NULL;
  if (!a0 || !shape_is_array(a0) || a0->rank < 2 || a0->rank > LA_MAX_RANK ||
      !float_et(a0->et))
    return la_fail(l->d, x, "unsupported operand of");
  int rk = a0->rank, nb = l->nbatch = rk - 2;
  int64_t m = a0->dims[rk - 2], n = a0->dims[rk - 1];
  l->cx = et_is_complex(a0->et);
  switch (l->kind) {
  case LA_CHOLESKY:
    if (x->nops != 1 || !shape_is_array(s) || s->et != a0->et || s->rank != rk || m != n ||
        !same_batch(s, a0, rk))
      return la_fail(l->d, x, "malformed");
    *slots = n * n;
    *cost = n * n * n + 1;
    return true;
  case LA_TRSM: {
    const Shape *bs = x->nops == 2 ? x->ops[1]->shape : NULL;
    if (!bs || !shape_is_array(bs) || bs->rank != rk || bs->et != a0->et || m != n ||
        !shape_is_array(s) || s->et != a0->et || !same_batch(s, bs, rk) ||
        !same_batch(a0, bs, nb) ||
        (x->tri_left_side ? bs->dims[rk - 2] : bs->dims[rk - 1]) != m)
      return la_fail(l->d, x, "malformed");
    *slots = bs->dims[rk - 2] * bs->dims[rk - 1];
    *cost = *slots * m + 1;
    return true;
  }
  case LA_QR: {
    int64_t p = m < n ? m : n;
    if (x->nops != 1 || !shape_is_tuple(s) || s->ntuple != 2 ||
        !shape_is_array(s->tuple[0]) || !shape_is_array(s->tuple[1]) ||
        s->tuple[0]->et != a0->et || s->tuple[1]->et != a0->et ||
        s->tuple[0]->rank != rk || !same_batch(s->tuple[0], a0, rk) ||
        s->tuple[1]->rank != rk - 1 || !same_batch(s->tuple[1], a0, nb) ||
        s->tuple[1]->dims[rk - 2] != p)
      return la_fail(l->d, x, "malformed");
    *slots = m * n + m;
    *cost = m * n * p + 1;
    return true;
  }
  case LA_HOUSEHOLDER: {
    const Shape *ts = x->nops == 2 ? x->ops[1]->shape : NULL;
    if (!ts || !shape_is_array(ts) || ts->rank != rk - 1 || ts->et != a0->et ||
        !same_batch(ts, a0, nb) || !shape_is_array(s) || s->et != a0->et || s->rank != rk ||
        !same_batch(s, a0, rk) || m < n || ts->dims[rk - 2] > n)
      return la_fail(l->d, x, "malformed");
    *slots = m * n;
    *cost = m * n * ts->dims[rk - 2] + 1;
    return true;
  }
  }
  return la_fail(l->d, x, "unsupported op");
}

static void emit_item(La *l, LLVMValueRef item) {
  int dsel[LA_MAX_RANK];
  int64_t dims[LA_MAX_RANK];
  const Shape *a0 = l->x->ops[0]->shape;
  for (int d = 0; d < l->nbatch; d++) {
    dsel[d] = d;
    dims[d] = a0->dims[d];
  }
  cg_split_index(l->cg, item, l->nbatch, dsel, dims, l->idx);
  switch (l->kind) {
  case LA_CHOLESKY: emit_cholesky(l); break;
  case LA_TRSM: emit_trsm(l); break;
  case LA_QR: emit_qr(l); break;
  case LA_HOUSEHOLDER: emit_householder(l); break;
  }
}

static LLVMBasicBlockRef new_block(Codegen *cg, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  return LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
}

bool cg_emit_linalg_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *hero,
                           const char *name, LaunchDims *ld, Diag *d) {
  La l;
  memset(&l, 0, sizeof l);
  l.cg = cg;
  l.d = d;
  l.x = hero;
  l.kind = hero->op == HLO_CHOLESKY ? LA_CHOLESKY
           : hero->op == HLO_TRIANGULAR_SOLVE ? LA_TRSM
           : strcmp(hero->cc->target, "Qr") == 0 ? LA_QR : LA_HOUSEHOLDER;
  const HloComp *fc = cg_fusion_comp(instr);
  if (fc && fc->root != hero)
    return la_fail(d, hero, "a fusion with more than the op around");
  for (int j = 0; j < hero->nops && j < 2; j++) {
    const HloInstr *o = hero->ops[j];
    if (fc && o->op != HLO_PARAMETER)
      return la_fail(d, hero, "a fused operand computed in the fusion of");
    l.in_leaf[j] = fc ? (int)o->param_number : j;
    if (!shape_is_array((fc ? instr : hero)->ops[l.in_leaf[j]]->shape))
      return la_fail(d, hero, "a tuple operand of");
  }
  int64_t slots = 0, cost = 1;
  if (!plan(&l, &slots, &cost))
    return false;
  l.st = l.cx ? LLVMVectorType(LLVMDoubleTypeInContext(cg->ctx), 2)
              : LLVMDoubleTypeInContext(cg->ctx);
  const Shape *a0 = hero->ops[0]->shape;
  int64_t mn = a0->dims[a0->rank - 2] * a0->dims[a0->rank - 1];
  int64_t items = mn > 0 ? shape_elements(a0) / mn : 0;
  int64_t unit = (slots * (l.cx ? 16 : 8) + 63) / 64 * 64;
  if (!cg_kernel_begin_temp(cg, instr, name, &l.k, d))
    return false;
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(cg->ctx);
  if (items > 0 && slots > 0 && cg->is_gpu) {
    int64_t T = items < LA_GPU_BLOCK ? items : LA_GPU_BLOCK;
    int64_t G = (items + T - 1) / T;
    if (G > INT32_MAX) {
      cg_kernel_end(&l.k);
      return la_fail(d, hero, "too many matrices in");
    }
    ld->grid[0] = (uint32_t)G;
    ld->block[0] = (uint32_t)T;
    ld->temp_bytes = items * unit;
    LLVMValueRef item = LLVMBuildAdd(
        b, LLVMBuildMul(b, LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), cg_i64(cg), ""),
                        i64c(&l, T), ""),
        LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), cg_i64(cg), ""), "item");
    LLVMBasicBlockRef body = new_block(cg, "item"), done = new_block(cg, "done");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, item, i64c(&l, items), ""), body, done);
    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef off = LLVMBuildNSWMul(b, item, i64c(&l, unit), "");
    l.work = LLVMBuildInBoundsGEP2(b, i8, l.k.temp, &off, 1, "work");
    emit_item(&l, item);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
  } else if (items > 0 && slots > 0) {
    LLVMValueRef start, end;
    cg_host_range(&l.k, items, cost, ld, &start, &end);
    ld->temp_bytes = (int64_t)ld->grid[0] * unit;
    LLVMValueRef off = LLVMBuildNSWMul(b, l.k.lo, i64c(&l, unit), "");
    l.work = LLVMBuildInBoundsGEP2(b, i8, l.k.temp, &off, 1, "work");
    CgLoop lp;
    LLVMValueRef item = cg_loop_begin(cg, &lp, start, end, i64c(&l, 1), "item");
    emit_item(&l, item);
    cg_loop_end(cg, &lp);
  }
  if (ld->temp_bytes < 64)
    ld->temp_bytes = 64;
  cg_kernel_end(&l.k);
  return true;
}
