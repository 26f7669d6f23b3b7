/*
 * linalg.c - cholesky, triangular-solve, fft and the QR custom-calls.
 *
 * All three compute in double (or double complex) and round once to the
 * element type, so they are at least as accurate as XLA's expansions (which
 * compute in the element type); compare with a tolerance.
 *
 * cholesky reads only the requested triangle and writes zeros to the other
 * one (as XLA's CholeskyExpander builds its result from zeros).  A matrix
 * whose factorization takes the square root of a negative (or NaN) pivot is
 * not positive definite: as XLA's CholeskyExpander, which flags such a
 * pivot and selects NaN for the whole result, every element of that batch
 * member's result, both triangles, is NaN (NaN + 0i for complex types).
 * triangular-solve forms op(A) from the chosen triangle (unit diagonal when
 * asked) and solves op(A) X = B or X op(A) = B by substitution.  fft runs a
 * plain DFT per transformed dimension (twiddles from exact k*t mod n), IFFT
 * and IRFFT scale by 1/n; RFFT transforms the last dimension first, IRFFT
 * last, as XLA does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

typedef double _Complex cplx;

static cplx load_c(ElemType et, const uint8_t *base, int64_t k) {
  int eb = et_bytes(et);
  const uint8_t *p = base + k * eb;
  if (et == ET_C64) {
    float f[2];
    memcpy(f, p, 8);
    return CMPLX(f[0], f[1]);
  }
  if (et == ET_C128) {
    double d[2];
    memcpy(d, p, 16);
    return CMPLX(d[0], d[1]);
  }
  return CMPLX(ev_get_f64(et, p), 0);
}

static void store_c(ElemType et, uint8_t *base, int64_t k, cplx v) {
  int eb = et_bytes(et);
  uint8_t *p = base + k * eb;
  if (et == ET_C64) {
    float f[2] = {(float)creal(v), (float)cimag(v)};
    memcpy(p, f, 8);
  } else if (et == ET_C128) {
    double d[2] = {creal(v), cimag(v)};
    memcpy(p, d, 16);
  } else {
    ev_set_f64(et, p, creal(v));
  }
}

static bool float_or_complex(ElemType et) { return et_is_float(et) || et_is_complex(et); }

EvalValue *eval_cholesky(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (!shape_is_array(s) || s->rank < 2 || s->dims[s->rank - 1] != s->dims[s->rank - 2] ||
      !float_or_complex(s->et) || ev_elems(i->ops[0]->shape) != ev_elems(s) ||
      i->ops[0]->shape->et != s->et) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "cholesky needs square float matrices");
    return NULL;
  }
  int64_t n = s->dims[s->rank - 1];
  int64_t batch = n ? ev_elems(s) / (n * n) : 0;
  EvalValue *r = ev_array(ev, s);
  if (!r) return NULL;
  cplx *L = ev_scratch(ev, i, (n * n + 1) * (int64_t)sizeof(cplx));
  if (!L) {
    ev_unref(ev, r);
    return NULL;
  }
  bool lower = i->cholesky_lower;
  for (int64_t b = 0; b < batch; b++) {
    const uint8_t *A = a[0]->data;
    int64_t base = b * n * n;
    /* the lower-triangle view: A'[r][c] (r >= c) */
#define AV(rr, cc) (lower ? load_c(s->et, A, base + (rr) * n + (cc)) \
                          : conj(load_c(s->et, A, base + (cc) * n + (rr))))
    memset(L, 0, (size_t)(n * n) * sizeof(cplx));
    bool not_pd = false;
    for (int64_t j = 0; j < n; j++) {
      cplx d = AV(j, j);
      for (int64_t k = 0; k < j; k++) d -= L[j * n + k] * conj(L[j * n + k]);
      double dr = creal(d);
      double ljj = sqrt(dr);
      not_pd |= isnan(ljj);
      L[j * n + j] = ljj;
      for (int64_t r_ = j + 1; r_ < n; r_++) {
        cplx v = AV(r_, j);
        for (int64_t k = 0; k < j; k++) v -= L[r_ * n + k] * conj(L[j * n + k]);
        L[r_ * n + j] = v / ljj;
      }
    }
#undef AV
    if (not_pd)
      for (int64_t k = 0; k < n * n; k++) L[k] = CMPLX(NAN, 0);
    for (int64_t rr = 0; rr < n; rr++)
      for (int64_t cc = 0; cc < n; cc++) {
        if (cc > rr && !not_pd) continue;
        cplx v = L[rr * n + cc];
        if (lower) store_c(s->et, r->data, base + rr * n + cc, v);
        else store_c(s->et, r->data, base + cc * n + rr, not_pd ? v : conj(v));
      }
    if (!ev_check_time(ev, i)) {
      ev_scratch_free(ev, L, (n * n + 1) * (int64_t)sizeof(cplx));
      ev_unref(ev, r);
      return NULL;
    }
  }
  ev_scratch_free(ev, L, (n * n + 1) * (int64_t)sizeof(cplx));
  return r;
}

EvalValue *eval_triangular_solve(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *as = i->ops[0]->shape, *bs = i->ops[1]->shape, *s = i->shape;
  if (!shape_is_array(as) || !shape_is_array(bs) || as->rank < 2 || bs->rank != as->rank ||
      !float_or_complex(s->et) || as->et != s->et || bs->et != s->et ||
      ev_elems(bs) != ev_elems(s)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed triangular-solve");
    return NULL;
  }
  int rk = as->rank;
  int64_t m = as->dims[rk - 1];
  bool left = i->tri_left_side;
  int64_t brows = bs->dims[rk - 2], bcols = bs->dims[rk - 1];
  if (as->dims[rk - 2] != m || (left ? brows : bcols) != m) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "triangular-solve shapes do not agree");
    return NULL;
  }
  int64_t batch = m ? ev_elems(as) / (m * m) : 0;
  if (batch * brows * bcols != ev_elems(bs)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "triangular-solve batch dimensions differ");
    return NULL;
  }
  EvalValue *r = ev_array(ev, s);
  if (!r) return NULL;
  int64_t tbytes = (m * m + 1) * (int64_t)sizeof(cplx);
  int64_t xbytes = (brows * bcols + 1) * (int64_t)sizeof(cplx);
  cplx *T = ev_scratch(ev, i, tbytes);
  cplx *X = T ? ev_scratch(ev, i, xbytes) : NULL;
  if (!X) {
    ev_scratch_free(ev, T, tbytes);
    ev_unref(ev, r);
    return NULL;
  }
  bool lower = i->tri_lower, unit = i->tri_unit_diagonal;
  TriTranspose tr = i->tri_transpose_a;
  bool trans = tr == TRI_TRANSPOSE || tr == TRI_ADJOINT, adj = tr == TRI_ADJOINT;
  bool t_lower = lower != trans;
  for (int64_t b = 0; b < batch; b++) {
    /* T = op(triangle(A)) */
    for (int64_t rr = 0; rr < m; rr++)
      for (int64_t cc = 0; cc < m; cc++) {
        int64_t ar = trans ? cc : rr, ac = trans ? rr : cc;   /* element of A */
        bool in_tri = lower ? ar >= ac : ar <= ac;
        cplx v = in_tri ? load_c(as->et, a[0]->data, b * m * m + ar * m + ac) : 0;
        if (adj) v = conj(v);
        if (ar == ac && unit) v = 1;
        T[rr * m + cc] = v;
      }
    for (int64_t k = 0; k < brows * bcols; k++)
      X[k] = load_c(bs->et, a[1]->data, b * brows * bcols + k);
    if (left) {
      /* T X = B, column by column */
      for (int64_t c = 0; c < bcols; c++) {
        for (int64_t step = 0; step < m; step++) {
          int64_t rr = t_lower ? step : m - 1 - step;
          cplx v = X[rr * bcols + c];
          if (t_lower)
            for (int64_t k = 0; k < rr; k++) v -= T[rr * m + k] * X[k * bcols + c];
          else
            for (int64_t k = rr + 1; k < m; k++) v -= T[rr * m + k] * X[k * bcols + c];
          X[rr * bcols + c] = v / T[rr * m + rr];
        }
      }
    } else {
      /* X T = B, row by row */
      for (int64_t rr = 0; rr < brows; rr++) {
        cplx *x = X + rr * bcols;
        for (int64_t step = 0; step < m; step++) {
          int64_t j = t_lower ? m - 1 - step : step;
          cplx v = x[j];
          if (t_lower)
            for (int64_t k = j + 1; k < m; k++) v -= x[k] * T[k * m + j];
          else
            for (int64_t k = 0; k < j; k++) v -= x[k] * T[k * m + j];
          x[j] = v / T[j * m + j];
        }
      }
    }
    for (int64_t k = 0; k < brows * bcols; k++)
      store_c(s->et, r->data, b * brows * bcols + k, X[k]);
  }
  ev_scratch_free(ev, T, tbytes);
  ev_scratch_free(ev, X, xbytes);
  return r;
}

/*
 * FFT
 */
/* In-place DFT of `n` complex values at stride `st` (in elements). */
static void dft(cplx *v, int64_t n, int64_t st, bool inverse, cplx *tmp,
                const cplx *tw) {
  for (int64_t k = 0; k < n; k++) {
    cplx acc = 0;
    for (int64_t t = 0; t < n; t++) {
      int64_t e = (int64_t)(((unsigned __int128)k * (unsigned __int128)t) % (unsigned __int128)n);
      cplx w = tw[e];
      if (inverse) w = conj(w);
      acc += v[t * st] * w;
    }
    tmp[k] = inverse ? acc / (double)n : acc;
  }
  for (int64_t k = 0; k < n; k++) v[k * st] = tmp[k];
}

/* Twiddles e^{-2 pi i e / n}. */
static void twiddles(cplx *tw, int64_t n) {
  for (int64_t e = 0; e < n; e++) {
    double ang = -2.0 * M_PI * (double)e / (double)n;
    tw[e] = CMPLX(cos(ang), sin(ang));
  }
}

/* Transforms dimension d of the complex array x (dims) in place. */
static void dft_dim(cplx *x, int rank, const int64_t *dims, int d, bool inverse,
                    cplx *tmp, cplx *tw) {
  int64_t n = dims[d];
  if (n <= 0) return;
  int64_t inner = 1, outer = 1;
  for (int k = d + 1; k < rank; k++) inner *= dims[k];
  for (int k = 0; k < d; k++) outer *= dims[k];
  twiddles(tw, n);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) dft(x + o * n * inner + in, n, inner, inverse, tmp, tw);
}

EvalValue *eval_fft(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *is = i->ops[0]->shape, *s = i->shape;
  int nf = i->fft_length.n;
  if (!shape_is_array(is) || !shape_is_array(s) || nf < 1 || nf > 3 || is->rank < nf ||
      s->rank != is->rank || i->fft_type == FFT_NONE) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed fft");
    return NULL;
  }
  int rank = s->rank;
  FftType ty = i->fft_type;
  for (int k = 0; k < nf; k++) {
    int d = rank - nf + k;
    int64_t len = i->fft_length.v[k];
    bool lastd = k == nf - 1;
    int64_t want_in = len, want_out = len;
    if (ty == FFT_RFFT && lastd) want_out = len / 2 + 1;
    if (ty == FFT_IRFFT && lastd) want_in = len / 2 + 1;
    if (len < 0 || is->dims[d] != want_in || s->dims[d] != want_out) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "fft_length does not match the shapes");
      return NULL;
    }
  }
  for (int d = 0; d < rank - nf; d++)
    if (is->dims[d] != s->dims[d]) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "fft batch dimensions differ");
      return NULL;
    }
  /* work array: the full complex spectrum, dims = fft lengths */
  int64_t wdims[64];
  for (int d = 0; d < rank; d++) wdims[d] = d >= rank - nf ? i->fft_length.v[d - (rank - nf)] : is->dims[d];
  int64_t wn = 1, maxlen = 1;
  for (int d = 0; d < rank; d++) {
    wn *= wdims[d];
    if (wdims[d] > maxlen) maxlen = wdims[d];
  }
  int64_t wbytes = (wn + 1) * (int64_t)sizeof(cplx), tbytes = (maxlen + 1) * (int64_t)sizeof(cplx);
  cplx *W = ev_scratch(ev, i, wbytes);
  cplx *tmp = W ? ev_scratch(ev, i, tbytes) : NULL;
  cplx *tw = tmp ? ev_scratch(ev, i, tbytes) : NULL;
  EvalValue *r = tw ? ev_array(ev, s) : NULL;
  if (!r) {
    ev_scratch_free(ev, W, wbytes);
    ev_scratch_free(ev, tmp, tbytes);
    ev_scratch_free(ev, tw, tbytes);
    return NULL;
  }
  int last = rank - 1;
  int64_t L = wdims[last];
  int64_t rows = L ? wn / L : 0;
  int64_t in_last = is->dims[last];
  /* load: for IRFFT rebuild the Hermitian spectrum along the last dim */
  for (int64_t rw = 0; rw < rows; rw++)
    for (int64_t t = 0; t < L; t++) {
      cplx v;
      if (ty == FFT_IRFFT) {
        if (t < in_last) v = load_c(is->et, a[0]->data, rw * in_last + t);
        else v = conj(load_c(is->et, a[0]->data, rw * in_last + (L - t)));
      } else {
        v = load_c(is->et, a[0]->data, rw * in_last + t);
      }
      W[rw * L + t] = v;
    }
  if (ty == FFT_IRFFT) {
    /* the conjugate mirror above used the unflipped outer indices; fix the
     * Hermitian symmetry over the outer fft dims after their inverse DFTs */
    for (int k = 0; k < nf - 1; k++) dft_dim(W, rank, wdims, rank - nf + k, true, tmp, tw);
    /* reload the last dim from the now 1-D-per-row half spectrum */
    for (int64_t rw = 0; rw < rows; rw++)
      for (int64_t t = in_last; t < L; t++) W[rw * L + t] = conj(W[rw * L + (L - t)]);
    dft_dim(W, rank, wdims, last, true, tmp, tw);
  } else {
    bool inv = ty == FFT_IFFT;
    if (ty == FFT_RFFT) dft_dim(W, rank, wdims, last, false, tmp, tw);
    for (int k = 0; k < nf; k++) {
      int d = rank - nf + k;
      if (ty == FFT_RFFT && d == last) continue;
      dft_dim(W, rank, wdims, d, inv, tmp, tw);
    }
  }
  int64_t out_last = s->dims[last];
  for (int64_t rw = 0; rw < rows; rw++)
    for (int64_t t = 0; t < out_last; t++) store_c(s->et, r->data, rw * out_last + t, W[rw * L + t]);
  ev_scratch_free(ev, W, wbytes);
  ev_scratch_free(ev, tmp, tbytes);
  ev_scratch_free(ev, tw, tbytes);
  return r;
}

/*
 * The QR custom-calls of XLA's QrExpander, in LAPACK's forms (geqrf and
 * orgqr), computed in double with XLA's Householder conventions:
 *
 * "Qr"(a [..., m, n]) -> (a' [..., m, n], taus [..., min(m, n)]): for each
 * column j in turn, with x its current values, alpha = x[j] and sigma the
 * sum of |x[r]|^2 below row j: beta = -sign(re alpha) * |(alpha, x[j+1:])|
 * (+ for re alpha < 0, - otherwise), tau = (beta - alpha) / beta (complex:
 * ((beta - re alpha) / beta, -im alpha / beta)), v = e_j + x[j+1:] /
 * (alpha - beta); when sigma is 0 (and alpha is real) beta = alpha, tau =
 * 0, v = e_j.  The columns right of j become (I - conj(tau) v v^H) a, then
 * column j holds beta on the diagonal and v below it; taus[j] = tau.
 *
 * "ProductOfElementaryHouseholderReflectors"(a [..., m, n], taus [..., p])
 * -> q [..., m, n], m >= n >= p: the first n columns of H_0 H_1 ...
 * H_{p-1}, H_j = I - tau_j v_j v_j^H with v_j = e_j + a[j+1:, j].
 */
static bool qr_shapes(const Shape *as, const Shape *rs, int64_t p, int rank) {
  if (!shape_is_array(as) || !shape_is_array(rs) || as->rank < 2 || rs->rank != rank ||
      !float_or_complex(as->et) || rs->et != as->et)
    return false;
  for (int d = 0; d < as->rank - 2; d++)
    if (rs->dims[d] != as->dims[d]) return false;
  return rank == as->rank ? rs->dims[rank - 2] == as->dims[rank - 2] &&
                                rs->dims[rank - 1] == as->dims[rank - 1]
                          : rs->dims[rank - 1] == p;
}

EvalValue *eval_qr(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *as = i->nops == 1 ? i->ops[0]->shape : NULL, *s = i->shape;
  if (!as || !shape_is_tuple(s) || s->ntuple != 2 || !shape_is_array(as) || as->rank < 2) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "Qr takes a matrix and gives (a, taus)");
    return NULL;
  }
  int64_t m = as->dims[as->rank - 2], n = as->dims[as->rank - 1], p = m < n ? m : n;
  if (!qr_shapes(as, s->tuple[0], p, as->rank) || !qr_shapes(as, s->tuple[1], p, as->rank - 1)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "Qr's result shapes do not fit its operand");
    return NULL;
  }
  int64_t batch = m > 0 && n > 0 ? ev_elems(as) / (m * n) : 0;
  int64_t wbytes = (m * n + m + 1) * (int64_t)sizeof(cplx);
  EvalValue *ra = ev_array(ev, s->tuple[0]);
  EvalValue *rt = ra ? ev_array(ev, s->tuple[1]) : NULL;
  cplx *A = rt ? ev_scratch(ev, i, wbytes) : NULL;
  if (!A) {
    ev_unref(ev, ra);
    ev_unref(ev, rt);
    return NULL;
  }
  cplx *v = A + m * n;
  ElemType et = as->et;
  bool cx = et_is_complex(et), ok = true;
  for (int64_t b = 0; b < batch && ok; b++) {
    for (int64_t k = 0; k < m * n; k++) A[k] = load_c(et, a[0]->data, b * m * n + k);
    for (int64_t j = 0; j < p; j++) {
      cplx alpha = A[j * n + j];
      double sigma = 0;
      for (int64_t r = j + 1; r < m; r++) {
        cplx x = A[r * n + j];
        sigma += creal(x) * creal(x) + cimag(x) * cimag(x);
      }
      bool szero = sigma == 0 && (!cx || cimag(alpha) == 0);
      double mu = hypot(hypot(creal(alpha), cimag(alpha)), sqrt(sigma));
      double beta = (creal(alpha) < 0 ? 1.0 : -1.0) * mu;
      cplx tau = 0, div = 1;
      if (szero) {
        beta = creal(alpha);
      } else {
        tau = CMPLX((beta - creal(alpha)) / beta, -cimag(alpha) / beta);
        div = alpha - beta;
      }
      for (int64_t r = 0; r < m; r++) v[r] = r < j ? 0 : r == j ? 1 : A[r * n + j] / div;
      for (int64_t c = j + 1; c < n; c++) {
        cplx w = 0;
        for (int64_t r = j; r < m; r++) w += conj(v[r]) * A[r * n + c];
        for (int64_t r = j; r < m; r++) A[r * n + c] -= conj(tau) * v[r] * w;
      }
      A[j * n + j] = beta;
      for (int64_t r = j + 1; r < m; r++) A[r * n + j] = v[r];
      store_c(et, rt->data, b * p + j, tau);
    }
    for (int64_t k = 0; k < m * n; k++) store_c(et, ra->data, b * m * n + k, A[k]);
    ok = ev_check_time(ev, i);
  }
  ev_scratch_free(ev, A, wbytes);
  if (!ok) {
    ev_unref(ev, ra);
    ev_unref(ev, rt);
    return NULL;
  }
  EvalValue *el[2] = {ra, rt};
  EvalValue *t = ev_tuple(ev, s, 2, el);
  ev_unref(ev, ra);
  ev_unref(ev, rt);
  return t;
}

EvalValue *eval_householder_product(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  const Shape *as = i->nops == 2 ? i->ops[0]->shape : NULL;
  const Shape *ts = i->nops == 2 ? i->ops[1]->shape : NULL;
  if (!as || !shape_is_array(as) || as->rank < 2 || !shape_is_array(ts) || ts->rank < 1 ||
      !qr_shapes(as, s, 0, as->rank) || !qr_shapes(as, ts, ts->dims[ts->rank - 1], as->rank - 1)) {
    ev_fail(ev, i, EVAL_ERR_INVALID,
            "ProductOfElementaryHouseholderReflectors takes (a, taus) of one batch and type");
    return NULL;
  }
  int64_t m = as->dims[as->rank - 2], n = as->dims[as->rank - 1], p = ts->dims[ts->rank - 1];
  if (m < n || p > n) {
    ev_fail(ev, i, EVAL_ERR_INVALID,
            "ProductOfElementaryHouseholderReflectors needs m >= n >= taus (got %lld, %lld, %lld)",
            (long long)m, (long long)n, (long long)p);
    return NULL;
  }
  int64_t batch = m > 0 && n > 0 ? ev_elems(as) / (m * n) : 0;
  int64_t wbytes = (m * n + 1) * (int64_t)sizeof(cplx);
  EvalValue *r = ev_array(ev, s);
  cplx *Q = r ? ev_scratch(ev, i, wbytes) : NULL;
  if (!Q) {
    ev_unref(ev, r);
    return NULL;
  }
  ElemType et = as->et;
  for (int64_t b = 0; b < batch; b++) {
    const uint8_t *A = a[0]->data;
    int64_t base = b * m * n;
    for (int64_t rr = 0; rr < m; rr++)
      for (int64_t c = 0; c < n; c++) Q[rr * n + c] = rr == c ? 1 : 0;
    for (int64_t j = p - 1; j >= 0; j--) {
      cplx tau = load_c(et, a[1]->data, b * p + j);
      for (int64_t c = 0; c < n; c++) {
        cplx w = Q[j * n + c];
        for (int64_t rr = j + 1; rr < m; rr++)
          w += conj(load_c(et, A, base + rr * n + j)) * Q[rr * n + c];
        Q[j * n + c] -= tau * w;
        for (int64_t rr = j + 1; rr < m; rr++)
          Q[rr * n + c] -= tau * load_c(et, A, base + rr * n + j) * w;
      }
    }
    for (int64_t k = 0; k < m * n; k++) store_c(et, r->data, base + k, Q[k]);
    if (!ev_check_time(ev, i)) {
      ev_scratch_free(ev, Q, wbytes);
      ev_unref(ev, r);
      return NULL;
    }
  }
  ev_scratch_free(ev, Q, wbytes);
  return r;
}
