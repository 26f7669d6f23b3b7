/*
 * dot.c - dot (every dimension-number form) and convolution (every dim_labels
 * form, feature and batch groups, padding, strides, base and window dilation,
 * window reversal).
 *
 * Semantics are XLA's evaluator's: both operands are first converted to the
 * result's element type, products are accumulated from zero in the type XLA
 * computes that result type in (float for f32 and smaller floats, double,
 * int64/uint64, complex), over the contracting indices in row-major order of
 * the listed contracting dimensions, and the sum is converted to the result
 * type at the end.  Integer convolutions saturate to the result type's range;
 * integer dots wrap, as XLA's evaluator does.
 *
 * For speed, operands are repacked once into canonical lane arrays: dot into
 * [batch][M][K] x [batch][K][N], convolution into [batch][spatial...]
 * [feature] and [kernel spatial...][out feature][in feature].  f32 and f64
 * then go through gemm.c's blocked product: a dot directly; a convolution
 * whose window never leaves the input as one product over (window
 * position, input feature) of gathered rows (im2col), else one product per
 * window position over the output positions that read inside the input,
 * when its feature groups are wide enough, else (depthwise) a direct loop.
 * The other lane types take an i-k-j loop and the direct loop.  Every path
 * sums each output in the same order, window position (row-major) outer
 * and contracting index (row-major) inner, with one rounded product and
 * one add per term, so all give the same bits.
 */
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

#define MAX_RANK 64

static int lane_bytes(Lane l) {
  switch (l) {
  case LANE_F32: return 4;
  case LANE_C64: return 8;
  case LANE_C128: return 16;
  default: return 8;
  }
}

uint8_t *ev_as_type(Eval *ev, const HloInstr *i, const EvalValue *v,
                    ElemType from, ElemType to, int64_t n, bool *owned) {
  if (from == to) {
    *owned = false;
    return v->data;
  }
  uint8_t *p = ev_scratch(ev, i, n * et_bytes(to));
  if (!p) return NULL;
  ev_convert_elems(from, v->data, to, p, n);
  *owned = true;
  return p;
}

/* Loads n elements of type et (already the result type) into a lane array. */
static void *to_lanes(Eval *ev, const HloInstr *i, const uint8_t *data,
                      ElemType et, int64_t n) {
  Lane l = ev_lane(et);
  int lb = lane_bytes(l);
  uint8_t *p = ev_scratch(ev, i, n * lb);
  if (!p) return NULL;
  LaneBuf buf;
  for (int64_t s = 0; s < n; s += LANE_CHUNK) {
    int c = n - s < LANE_CHUNK ? (int)(n - s) : LANE_CHUNK;
    ev_lane_load(et, data, s, c, false, &buf);
    memcpy(p + s * lb, &buf, (size_t)c * (size_t)lb);
  }
  return p;
}

static void from_lanes(const void *lanes, ElemType et, uint8_t *out, int64_t n) {
  int lb = lane_bytes(ev_lane(et));
  LaneBuf buf;
  for (int64_t s = 0; s < n; s += LANE_CHUNK) {
    int c = n - s < LANE_CHUNK ? (int)(n - s) : LANE_CHUNK;
    memcpy(&buf, (const uint8_t *)lanes + s * lb, (size_t)c * (size_t)lb);
    ev_lane_store(et, out, s, c, &buf);
  }
}

/* Operand converted to the result type and to lanes, in logical order. */
static void *operand_lanes(Eval *ev, const HloInstr *i, const EvalValue *v,
                           ElemType from, ElemType to, int64_t n) {
  if (to == ET_F32 || to == ET_F64 || to == ET_S64 || to == ET_U64 || to == ET_C64 ||
      to == ET_C128) {
    /* these types are their own lane format: convert straight into it */
    uint8_t *p = ev_scratch(ev, i, n * et_bytes(to));
    if (p) ev_convert_elems(from, v->data, to, p, n);
    return p;
  }
  bool owned;
  uint8_t *conv = ev_as_type(ev, i, v, from, to, n, &owned);
  if (!conv) return NULL;
  void *l = to_lanes(ev, i, conv, to, n);
  if (owned) ev_scratch_free(ev, conv, n * et_bytes(to));
  return l;
}

/* Permutes lane array src (dims sdims) so that dimension perm[k] becomes
 * dimension k.  Takes ownership of src (a scratch array of n * lb bytes):
 * returns it unchanged for the identity permutation, else a new scratch
 * array (src freed); NULL on a budget error (src freed). */
static void *permute(Eval *ev, const HloInstr *i, void *src, int rank,
                     const int64_t *sdims, const int64_t *perm, int lb,
                     int64_t n) {
  bool identity = true;
  for (int k = 0; k < rank; k++) identity &= perm[k] == k;
  if (identity) return src;
  uint8_t *dst = ev_scratch(ev, i, n * lb);
  if (!dst) {
    ev_scratch_free(ev, src, n * lb);
    return NULL;
  }
  int64_t sstr[MAX_RANK], pstr[MAX_RANK], pd[MAX_RANK], dstr[MAX_RANK];
  int64_t st = 1;
  for (int k = rank - 1; k >= 0; k--) {
    sstr[k] = st;
    st *= sdims[k];
  }
  for (int k = 0; k < rank; k++) {
    pd[k] = sdims[perm[k]];
    pstr[k] = sstr[perm[k]];
  }
  st = 1;
  for (int k = rank - 1; k >= 0; k--) {
    dstr[k] = st;
    st *= pd[k];
  }
  ev_copy_strided(rank, pd, src, pstr, dst, dstr, lb);
  ev_scratch_free(ev, src, n * lb);
  return dst;
}

static bool check_dims(const I64List *l, int rank, bool *used) {
  for (int k = 0; k < l->n; k++) {
    int64_t d = l->v[k];
    if (d < 0 || d >= rank || used[d]) return false;
    used[d] = true;
  }
  return true;
}

/* C[b][m][n] += sum_k A[b][m][k] * B[b][k][n], accumulating each output over
 * k in order. */
#define MATMUL(T, ZERO)                                                        \
  do {                                                                         \
    const T *A = lhs, *Bm = rhs;                                               \
    T *C = out;                                                                \
    for (int64_t b = 0; b < nb; b++) {                                         \
      for (int64_t m = 0; m < M; m++) {                                        \
        T *c = C + (b * M + m) * N;                                            \
        for (int64_t j = 0; j < N; j++) c[j] = ZERO;                           \
        const T *ar = A + (b * M + m) * K;                                     \
        for (int64_t k = 0; k < K; k++) {                                      \
          T av = ar[k];                                                        \
          const T *bk = Bm + (b * K + k) * N;                                  \
          for (int64_t j = 0; j < N; j++) c[j] += av * bk[j];                  \
        }                                                                      \
        if (!ev_check_time(ev, i)) goto timeout;                               \
      }                                                                        \
    }                                                                          \
  } while (0)

/* The f32 / f64 products of eval_dot through gemm.c: out[b] = lhs[b] @
 * rhs[b], each output summed over k in order from zero as MATMUL does. */
#define GEMM_BATCHES(NAME, T, GEMM)                                            \
  static bool NAME(Eval *ev, const HloInstr *i, int64_t nb, int64_t M,         \
                   int64_t N, int64_t K, const void *lhs, const void *rhs,     \
                   void *out) {                                                \
    memset(out, 0, (size_t)(nb * M * N) * sizeof(T));                          \
    if (M <= 0 || N <= 0 || K <= 0) return true;                               \
    const T **rows = ev_scratch(ev, i, M * (int64_t)sizeof *rows);             \
    if (!rows) return false;                                                   \
    bool ok = true;                                                            \
    for (int64_t b = 0; b < nb && ok; b++) {                                   \
      for (int64_t m = 0; m < M; m++)                                          \
        rows[m] = (const T *)lhs + (b * M + m) * K;                            \
      ok = GEMM(ev, i, M, N, K, rows, NULL, (const T *)rhs + b * K * N, N, 1,  \
                (T *)out + b * M * N, N);                                      \
    }                                                                          \
    ev_scratch_free(ev, rows, M * (int64_t)sizeof *rows);                      \
    return ok;                                                                 \
  }
GEMM_BATCHES(gemm_batches_f32, float, ev_gemm_float)
GEMM_BATCHES(gemm_batches_f64, double, ev_gemm_double)

EvalValue *eval_dot(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *ls = i->ops[0]->shape, *rs = i->ops[1]->shape, *s = i->shape;
  const DotDnums *dn = i->dot;
  if (!shape_is_array(ls) || !shape_is_array(rs) || !shape_is_array(s) ||
      ls->rank > MAX_RANK || rs->rank > MAX_RANK) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "dot of non-arrays");
    return NULL;
  }
  for (int k = 0; k < i->nprecision; k++)
    if (i->precision[k] == PREC_PACKED_NIBBLE) {
      ev_unsupported(ev, i, "dot with PACKED_NIBBLE precision");
      return NULL;
    }
  static const DotDnums empty;
  if (!dn) dn = &empty;
  bool lu[MAX_RANK] = {false}, ru[MAX_RANK] = {false};
  if (dn->lhs_batch.n != dn->rhs_batch.n ||
      dn->lhs_contracting.n != dn->rhs_contracting.n ||
      !check_dims(&dn->lhs_batch, ls->rank, lu) ||
      !check_dims(&dn->lhs_contracting, ls->rank, lu) ||
      !check_dims(&dn->rhs_batch, rs->rank, ru) ||
      !check_dims(&dn->rhs_contracting, rs->rank, ru)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "bad dot dimension numbers");
    return NULL;
  }
  int64_t lperm[MAX_RANK], rperm[MAX_RANK];
  int lp = 0, rp = 0;
  int64_t nb = 1, M = 1, K = 1, N = 1;
  int64_t odims[MAX_RANK];
  int orank = 0;
  for (int k = 0; k < dn->lhs_batch.n; k++) {
    int64_t ld = dn->lhs_batch.v[k], rd = dn->rhs_batch.v[k];
    if (ls->dims[ld] != rs->dims[rd]) goto bad;
    lperm[lp++] = ld;
    rperm[rp++] = rd;
    nb *= ls->dims[ld];
    odims[orank++] = ls->dims[ld];
  }
  for (int d = 0; d < ls->rank; d++)
    if (!lu[d]) {
      lperm[lp++] = d;
      M *= ls->dims[d];
      odims[orank++] = ls->dims[d];
    }
  for (int k = 0; k < dn->rhs_contracting.n; k++) rperm[rp++] = dn->rhs_contracting.v[k];
  for (int k = 0; k < dn->lhs_contracting.n; k++) {
    int64_t ld = dn->lhs_contracting.v[k], rd = dn->rhs_contracting.v[k];
    if (ls->dims[ld] != rs->dims[rd]) goto bad;
    lperm[lp++] = ld;
    K *= ls->dims[ld];
  }
  for (int d = 0; d < rs->rank; d++)
    if (!ru[d]) {
      rperm[rp++] = d;
      N *= rs->dims[d];
      if (orank >= MAX_RANK) goto bad;
      odims[orank++] = rs->dims[d];
    }
  if (orank != s->rank) goto bad;
  for (int k = 0; k < orank; k++)
    if (odims[k] != s->dims[k]) goto bad;

  ElemType et = s->et;
  Lane lane = ev_lane(et);
  int lb = lane_bytes(lane);
  int64_t ln = ev_elems(ls), rn = ev_elems(rs), on = ev_elems(s);
  void *l0 = NULL, *r0 = NULL, *lhs = NULL, *rhs = NULL, *out = NULL;
  EvalValue *res = NULL;
  l0 = operand_lanes(ev, i, a[0], ls->et, et, ln);
  if (!l0) goto fail;
  lhs = permute(ev, i, l0, ls->rank, ls->dims, lperm, lb, ln);
  if (!lhs) goto fail;
  r0 = operand_lanes(ev, i, a[1], rs->et, et, rn);
  if (!r0) goto fail;
  rhs = permute(ev, i, r0, rs->rank, rs->dims, rperm, lb, rn);
  if (!rhs) goto fail;
  out = ev_scratch(ev, i, on * lb);
  if (!out) goto fail;
  switch (lane) {
  case LANE_F32:
    if (!gemm_batches_f32(ev, i, nb, M, N, K, lhs, rhs, out)) goto fail;
    break;
  case LANE_F64:
    if (!gemm_batches_f64(ev, i, nb, M, N, K, lhs, rhs, out)) goto fail;
    break;
  case LANE_S64:
  case LANE_U64: MATMUL(uint64_t, 0); break;
  case LANE_C64: MATMUL(float _Complex, 0.0f); break;
  case LANE_C128: MATMUL(double _Complex, 0.0); break;
  }
  res = ev_array_nozero(ev, s);
  if (res) from_lanes(out, et, res->data, on);
  ev_scratch_free(ev, lhs, ln * lb);
  ev_scratch_free(ev, rhs, rn * lb);
  ev_scratch_free(ev, out, on * lb);
  return res;
timeout:
fail:
  ev_scratch_free(ev, lhs, ln * lb);
  ev_scratch_free(ev, rhs, rn * lb);
  ev_scratch_free(ev, out, on * lb);
  return NULL;
bad:
  ev_fail(ev, i, EVAL_ERR_INVALID, "dot operand and result shapes do not agree");
  return NULL;
}

/*
 * Convolution
 */
typedef struct ConvGeom {
  int ns;                         /* spatial dims */
  int64_t N, C, O, Cg;            /* batch, in features, out features, per group */
  int64_t isp[MAX_RANK], ksp[MAX_RANK], osp[MAX_RANK];
  int64_t ON;                     /* output batch */
  int64_t fgc, bgc;
  int64_t stride[MAX_RANK], lo[MAX_RANK], bdil[MAX_RANK], wdil[MAX_RANK];
  bool rev[MAX_RANK];
} ConvGeom;

/* For each output batch and position: acc[o] over window positions (outer)
 * and input features of o's group (inner), the order XLA's evaluator sums
 * in; the window position's input index is computed once for every o. */
#define CONV_LOOP(T, ZERO)                                                     \
  do {                                                                         \
    const T *in = inp, *kr = ker;                                              \
    T *res_ = outp;                                                            \
    int64_t opos[MAX_RANK], kpos[MAX_RANK];                                    \
    for (int64_t n = 0; n < g.ON; n++) {                                       \
      memset(opos, 0, sizeof opos);                                            \
      for (int64_t os = 0; os < osn; os++) {                                   \
        T *acc = res_ + (n * osn + os) * g.O;                                  \
        for (int64_t o = 0; o < g.O; o++) acc[o] = ZERO;                       \
        memset(kpos, 0, sizeof(int64_t) * (size_t)g.ns);                       \
        for (int64_t kp = 0; kp < ksn; kp++) {                                 \
          int64_t ioff = 0, koff = 0;                                          \
          bool valid = true;                                                   \
          for (int d = 0; d < g.ns && valid; d++) {                            \
            int64_t x = opos[d] * g.stride[d] - g.lo[d] + kpos[d] * g.wdil[d]; \
            if (g.bdil[d] > 1) {                                               \
              if (x % g.bdil[d]) { valid = false; break; }                     \
              x /= g.bdil[d];                                                  \
            }                                                                  \
            if (x < 0 || x >= g.isp[d]) { valid = false; break; }              \
            ioff += x * istr[d];                                               \
            koff += (g.rev[d] ? g.ksp[d] - 1 - kpos[d] : kpos[d]) * kstr[d];   \
          }                                                                    \
          if (valid) {                                                         \
            const T *ib_ = in + n * istr_b + ioff;                             \
            const T *kb_ = kr + koff;                                          \
            for (int64_t o = 0; o < g.O; o++) {                                \
              const T *ip = ib_ + in_off[o];                                   \
              const T *kp_ = kb_ + o * g.Cg;                                   \
              T a_ = acc[o];                                                   \
              for (int64_t c = 0; c < g.Cg; c++) a_ += ip[c] * kp_[c];         \
              acc[o] = a_;                                                     \
            }                                                                  \
          }                                                                    \
          for (int d = g.ns - 1; d >= 0; d--) {                                \
            if (++kpos[d] < g.ksp[d]) break;                                   \
            kpos[d] = 0;                                                       \
          }                                                                    \
        }                                                                      \
        for (int d = g.ns - 1; d >= 0; d--) {                                  \
          if (++opos[d] < g.osp[d]) break;                                     \
          opos[d] = 0;                                                         \
        }                                                                      \
        if ((os & 255) == 0 && !ev_check_time(ev, i)) goto fail;               \
      }                                                                        \
    }                                                                          \
  } while (0)

/* The same sums for f32 and f64 through gemm.c: for each window position
 * (outer, row-major), the output positions whose input position is inside
 * the input are the valid rows of a product of their input feature rows
 * (length Cg) with the kernel's [Cg][O] slice, accumulated into out
 * [P][O]; the output features whose rows start at the same input feature
 * offset (in_off) form one product.  Every output element thus adds the
 * products of window position kp, feature c in CONV_LOOP's order. */
#define CONV_GEMM(NAME, T, GEMM)                                               \
  static bool NAME(Eval *ev, const HloInstr *i, const ConvGeom *g,             \
                   const T *in, const T *kr, T *out, const int64_t *istr,      \
                   const int64_t *kstr, int64_t istr_b, int64_t osn,           \
                   int64_t ksn, const int64_t *in_off) {                       \
    int64_t P = g->ON * osn;                                                   \
    memset(out, 0, (size_t)(P * g->O) * sizeof(T));                            \
    if (P <= 0 || g->O <= 0 || g->Cg <= 0) return true;                        \
    int64_t rbytes = P * (int64_t)sizeof(T *), obytes = P * 8;                 \
    const T **rows = ev_scratch(ev, i, rbytes);                                \
    int64_t *off = rows ? ev_scratch(ev, i, obytes) : NULL;                    \
    bool *valid = off ? ev_scratch(ev, i, P) : NULL;                           \
    bool ok = valid != NULL;                                                   \
    int64_t kpos[MAX_RANK] = {0}, opos[MAX_RANK];                              \
    for (int64_t kp = 0; kp < ksn && ok; kp++) {                               \
      int64_t koff = 0;                                                        \
      for (int d = 0; d < g->ns; d++)                                          \
        koff += (g->rev[d] ? g->ksp[d] - 1 - kpos[d] : kpos[d]) * kstr[d];     \
      bool any = false;                                                        \
      for (int64_t n = 0, p = 0; n < g->ON; n++) {                             \
        memset(opos, 0, sizeof(int64_t) * (size_t)g->ns);                      \
        for (int64_t os = 0; os < osn; os++, p++) {                            \
          int64_t ioff = n * istr_b;                                           \
          bool v = true;                                                       \
          for (int d = 0; d < g->ns && v; d++) {                               \
            int64_t x = opos[d] * g->stride[d] - g->lo[d] + kpos[d] * g->wdil[d]; \
            if (g->bdil[d] > 1) {                                              \
              if (x % g->bdil[d]) v = false;                                   \
              x /= g->bdil[d];                                                 \
            }                                                                  \
            if (x < 0 || x >= g->isp[d]) v = false;                            \
            ioff += x * istr[d];                                               \
          }                                                                    \
          valid[p] = v;                                                        \
          off[p] = v ? ioff : 0;                                               \
          any |= v;                                                            \
          for (int d = g->ns - 1; d >= 0; d--) {                               \
            if (++opos[d] < g->osp[d]) break;                                  \
            opos[d] = 0;                                                       \
          }                                                                    \
        }                                                                      \
      }                                                                        \
      for (int64_t o0 = 0, o1; any && o0 < g->O && ok; o0 = o1) {              \
        for (o1 = o0 + 1; o1 < g->O && in_off[o1] == in_off[o0]; o1++) {}     \
        for (int64_t p = 0; p < P; p++) rows[p] = in + off[p] + in_off[o0];    \
        ok = GEMM(ev, i, P, o1 - o0, g->Cg, rows, valid, kr + koff + o0 * g->Cg, \
                  1, g->Cg, out + o0, g->O);                                   \
      }                                                                        \
      for (int d = g->ns - 1; d >= 0; d--) {                                   \
        if (++kpos[d] < g->ksp[d]) break;                                      \
        kpos[d] = 0;                                                           \
      }                                                                        \
    }                                                                          \
    ev_scratch_free(ev, valid, P);                                             \
    ev_scratch_free(ev, off, obytes);                                          \
    ev_scratch_free(ev, rows, rbytes);                                         \
    return ok;                                                                 \
  }
CONV_GEMM(conv_gemm_f32, float, ev_gemm_float)
CONV_GEMM(conv_gemm_f64, double, ev_gemm_double)

/* Whether every window position of every output position reads inside
 * the input (no padding, no holes of lhs dilation reached): then a
 * convolution is one product over k = (window position, input feature). */
static bool conv_all_valid(const ConvGeom *g) {
  for (int d = 0; d < g->ns; d++) {
    for (int64_t op = 0; op < g->osp[d]; op++)
      for (int64_t kq = 0; kq < g->ksp[d]; kq++) {
        int64_t x = op * g->stride[d] - g->lo[d] + kq * g->wdil[d];
        if (x < 0 || x % g->bdil[d] || x / g->bdil[d] >= g->isp[d]) return false;
      }
  }
  return true;
}

/* A convolution whose window never leaves the input (conv_all_valid), as
 * products over k = kp * Cg + c: the rows of a block of output positions
 * gathered into [rows][ksn * Cg] (im2col), the kernel into [ksn * Cg][O].
 * Each output adds window position kp's features in CONV_LOOP's order. */
#define CONV_IM2COL(NAME, T, GEMM)                                             \
  static bool NAME(Eval *ev, const HloInstr *i, const ConvGeom *g,             \
                   const T *in, const T *kr, T *out, const int64_t *istr,      \
                   const int64_t *kstr, int64_t istr_b, int64_t osn,           \
                   int64_t ksn, const int64_t *in_off) {                       \
    int64_t P = g->ON * osn, K = ksn * g->Cg, O = g->O;                        \
    memset(out, 0, (size_t)(P * O) * sizeof(T));                               \
    if (P <= 0 || O <= 0 || K <= 0) return true;                               \
    int64_t RB = ((int64_t)1 << 21) / K;                                       \
    if (RB < 1) RB = 1;                                                        \
    if (RB > P) RB = P;                                                        \
    int64_t cbytes = RB * K * (int64_t)sizeof(T), rbytes = RB * (int64_t)sizeof(T *); \
    int64_t bbytes = K * O * (int64_t)sizeof(T), kbytes = ksn * 8;             \
    T *col = ev_scratch(ev, i, cbytes);                                        \
    const T **rows = col ? ev_scratch(ev, i, rbytes) : NULL;                   \
    T *bk = rows ? ev_scratch(ev, i, bbytes) : NULL;                           \
    int64_t *koff = bk ? ev_scratch(ev, i, kbytes) : NULL;                     \
    bool ok = koff != NULL;                                                    \
    int64_t kpos[MAX_RANK] = {0}, opos[MAX_RANK];                              \
    for (int64_t kp = 0; kp < ksn && ok; kp++) {                               \
      koff[kp] = 0;                                                            \
      for (int d = 0; d < g->ns; d++)                                          \
        koff[kp] += (g->rev[d] ? g->ksp[d] - 1 - kpos[d] : kpos[d]) * kstr[d]; \
      for (int64_t o = 0; o < O; o++)                                          \
        for (int64_t c = 0; c < g->Cg; c++)                                    \
          bk[(kp * g->Cg + c) * O + o] = kr[koff[kp] + o * g->Cg + c];         \
      for (int d = g->ns - 1; d >= 0; d--) {                                   \
        if (++kpos[d] < g->ksp[d]) break;                                      \
        kpos[d] = 0;                                                           \
      }                                                                        \
    }                                                                          \
    for (int64_t o0 = 0, o1; ok && o0 < O; o0 = o1) {                          \
      for (o1 = o0 + 1; o1 < O && in_off[o1] == in_off[o0]; o1++) {}          \
      for (int64_t p0 = 0; p0 < P && ok; p0 += RB) {                           \
        int64_t rb = P - p0 < RB ? P - p0 : RB;                                \
        for (int64_t r = 0; r < rb; r++) {                                     \
          int64_t p = p0 + r, n = p / osn, rest = p % osn;                     \
          for (int d = g->ns - 1; d >= 0; d--) {                               \
            opos[d] = rest % g->osp[d];                                        \
            rest /= g->osp[d];                                                 \
          }                                                                    \
          T *dst = col + r * K;                                                \
          memset(kpos, 0, sizeof(int64_t) * (size_t)g->ns);                    \
          for (int64_t kp = 0; kp < ksn; kp++) {                               \
            int64_t ioff = n * istr_b + in_off[o0];                            \
            for (int d = 0; d < g->ns; d++)                                    \
              ioff += (opos[d] * g->stride[d] - g->lo[d] + kpos[d] * g->wdil[d]) / \
                      g->bdil[d] * istr[d];                                    \
            memcpy(dst + kp * g->Cg, in + ioff, (size_t)g->Cg * sizeof(T));    \
            for (int d = g->ns - 1; d >= 0; d--) {                             \
              if (++kpos[d] < g->ksp[d]) break;                                \
              kpos[d] = 0;                                                     \
            }                                                                  \
          }                                                                    \
          rows[r] = dst;                                                       \
        }                                                                      \
        ok = GEMM(ev, i, rb, o1 - o0, K, rows, NULL, bk + o0, O, 1,            \
                  out + p0 * O + o0, O);                                       \
      }                                                                        \
    }                                                                          \
    ev_scratch_free(ev, koff, kbytes);                                         \
    ev_scratch_free(ev, bk, bbytes);                                           \
    ev_scratch_free(ev, rows, rbytes);                                         \
    ev_scratch_free(ev, col, cbytes);                                          \
    return ok;                                                                 \
  }
CONV_IM2COL(conv_im2col_f32, float, ev_gemm_float)
CONV_IM2COL(conv_im2col_f64, double, ev_gemm_double)

EvalValue *eval_convolution(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  if (i->nops != 2) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "convolution takes two operands");
    return NULL;
  }
  const Shape *ls = i->ops[0]->shape, *rs = i->ops[1]->shape, *s = i->shape;
  const ConvAttrs *ca = i->conv;
  if (!ca || !ca->dnums || !shape_is_array(ls) || !shape_is_array(rs) ||
      !shape_is_array(s)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "convolution without dimension numbers");
    return NULL;
  }
  for (int k = 0; k < i->nprecision; k++)
    if (i->precision[k] == PREC_PACKED_NIBBLE) {
      ev_unsupported(ev, i, "convolution with PACKED_NIBBLE precision");
      return NULL;
    }
  const ConvDnums *dn = ca->dnums;
  ConvGeom g;
  memset(&g, 0, sizeof g);
  g.ns = dn->nspatial;
  if (g.ns < 0 || g.ns + 2 != ls->rank || g.ns + 2 != rs->rank || g.ns + 2 != s->rank ||
      g.ns + 2 > MAX_RANK)
    goto bad;
  int wn = ca->window ? ca->window->ndims : 0;
  if (wn != g.ns) goto bad;
  {
    bool lu[MAX_RANK] = {false}, ru[MAX_RANK] = {false}, ou[MAX_RANK] = {false};
#define USE(arr, d, r) do { if ((d) < 0 || (d) >= (r) || arr[d]) goto bad; arr[d] = true; } while (0)
    USE(lu, dn->input_batch, ls->rank);
    USE(lu, dn->input_feature, ls->rank);
    USE(ru, dn->kernel_input_feature, rs->rank);
    USE(ru, dn->kernel_output_feature, rs->rank);
    USE(ou, dn->output_batch, s->rank);
    USE(ou, dn->output_feature, s->rank);
    for (int d = 0; d < g.ns; d++) {
      USE(lu, dn->input_spatial[d], ls->rank);
      USE(ru, dn->kernel_spatial[d], rs->rank);
      USE(ou, dn->output_spatial[d], s->rank);
    }
#undef USE
  }
  g.N = ls->dims[dn->input_batch];
  g.C = ls->dims[dn->input_feature];
  g.O = rs->dims[dn->kernel_output_feature];
  g.fgc = ca->feature_group_count > 0 ? ca->feature_group_count : 1;
  g.bgc = ca->batch_group_count > 0 ? ca->batch_group_count : 1;
  if (g.C % g.fgc || g.O % g.fgc || g.N % g.bgc || g.O % g.bgc) goto bad;
  g.Cg = g.C / g.fgc;
  if (rs->dims[dn->kernel_input_feature] != g.Cg) goto bad;
  g.ON = g.N / g.bgc;
  if (s->dims[dn->output_batch] != g.ON || s->dims[dn->output_feature] != g.O) goto bad;
  for (int d = 0; d < g.ns; d++) {
    const WindowDim *w = &ca->window->dims[d];
    g.isp[d] = ls->dims[dn->input_spatial[d]];
    g.ksp[d] = rs->dims[dn->kernel_spatial[d]];
    g.osp[d] = s->dims[dn->output_spatial[d]];
    g.stride[d] = w->stride > 0 ? w->stride : 1;
    g.lo[d] = w->pad_lo;
    g.bdil[d] = w->base_dilation > 0 ? w->base_dilation : 1;
    g.wdil[d] = w->window_dilation > 0 ? w->window_dilation : 1;
    g.rev[d] = w->reversal;
    if (w->size != g.ksp[d]) goto bad;
  }
  {
    ElemType et = s->et;
    Lane lane = ev_lane(et);
    int lb = lane_bytes(lane);
    int64_t ln = ev_elems(ls), rn = ev_elems(rs), on = ev_elems(s);
    int64_t lperm[MAX_RANK], rperm[MAX_RANK];
    lperm[0] = dn->input_batch;
    for (int d = 0; d < g.ns; d++) lperm[1 + d] = dn->input_spatial[d];
    lperm[g.ns + 1] = dn->input_feature;
    for (int d = 0; d < g.ns; d++) rperm[d] = dn->kernel_spatial[d];
    rperm[g.ns] = dn->kernel_output_feature;
    rperm[g.ns + 1] = dn->kernel_input_feature;
    void *inp = NULL, *ker = NULL, *outp = NULL, *tmp;
    EvalValue *res = NULL;
    int64_t istr[MAX_RANK], kstr[MAX_RANK], istr_b, osn = 1, ksn = 1;
    int64_t st = g.C;
    for (int d = g.ns - 1; d >= 0; d--) {
      istr[d] = st;
      st *= g.isp[d];
    }
    istr_b = st;
    st = g.O * g.Cg;
    for (int d = g.ns - 1; d >= 0; d--) {
      kstr[d] = st;
      st *= g.ksp[d];
    }
    for (int d = 0; d < g.ns; d++) {
      osn *= g.osp[d];
      ksn *= g.ksp[d];
    }
    int64_t ofg = g.O / g.fgc, dmul = g.O / g.bgc, bgs = g.N / g.bgc;
    /* per output feature: offset of its input batch group and feature group */
    int64_t *in_off = ev_scratch(ev, i, (g.O + 1) * (int64_t)sizeof(int64_t));
    if (!in_off) return NULL;
    for (int64_t o = 0; o < g.O; o++)
      in_off[o] = (o / dmul) * bgs * istr_b + (o / ofg) * g.Cg;
    tmp = operand_lanes(ev, i, a[0], ls->et, et, ln);
    if (!tmp) goto fail;
    inp = permute(ev, i, tmp, ls->rank, ls->dims, lperm, lb, ln);
    if (!inp) goto fail;
    tmp = operand_lanes(ev, i, a[1], rs->et, et, rn);
    if (!tmp) goto fail;
    ker = permute(ev, i, tmp, rs->rank, rs->dims, rperm, lb, rn);
    if (!ker) goto fail;
    outp = ev_scratch(ev, i, on * lb);
    if (!outp) goto fail;
    /* gemm.c's product pays off once the per-group products are wide
     * enough; narrow ones (depthwise) stay with the direct loop */
    bool gemm = g.Cg >= 4 && ofg >= 4 && dmul >= 4;
    bool im2col = ofg >= 4 && dmul >= 4 && conv_all_valid(&g);
    if (on > 0) {
      switch (lane) {
      case LANE_F32:
        if (im2col) {
          if (!conv_im2col_f32(ev, i, &g, inp, ker, outp, istr, kstr, istr_b, osn, ksn, in_off))
            goto fail;
        } else if (gemm) {
          if (!conv_gemm_f32(ev, i, &g, inp, ker, outp, istr, kstr, istr_b, osn, ksn, in_off))
            goto fail;
        } else {
          CONV_LOOP(float, 0.0f);
        }
        break;
      case LANE_F64:
        if (im2col) {
          if (!conv_im2col_f64(ev, i, &g, inp, ker, outp, istr, kstr, istr_b, osn, ksn, in_off))
            goto fail;
        } else if (gemm) {
          if (!conv_gemm_f64(ev, i, &g, inp, ker, outp, istr, kstr, istr_b, osn, ksn, in_off))
            goto fail;
        } else {
          CONV_LOOP(double, 0.0);
        }
        break;
      case LANE_S64: CONV_LOOP(uint64_t, 0); break;
      case LANE_U64: CONV_LOOP(uint64_t, 0); break;
      case LANE_C64: CONV_LOOP(float _Complex, 0.0f); break;
      case LANE_C128: CONV_LOOP(double _Complex, 0.0); break;
      }
    }
    if (et_is_int(et)) {
      /* saturate to the result type, as XLA's evaluator does */
      int bits = et_bits(et);
      for (int64_t k = 0; k < on; k++) {
        if (lane == LANE_S64) {
          int64_t *v = (int64_t *)outp + k;
          int64_t lo = bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
          int64_t hi = bits >= 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
          if (*v < lo) *v = lo;
          if (*v > hi) *v = hi;
        } else {
          uint64_t *v = (uint64_t *)outp + k;
          uint64_t hi = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
          if (*v > hi) *v = hi;
        }
      }
    }
    /* canonical [N][spatial][O] to the output's dimension order */
    {
      int64_t cdims[MAX_RANK], cstr[MAX_RANK], ostr_[MAX_RANK], sstr[MAX_RANK];
      cdims[0] = g.ON;
      for (int d = 0; d < g.ns; d++) cdims[1 + d] = g.osp[d];
      cdims[g.ns + 1] = g.O;
      int64_t cs = 1;
      for (int k = g.ns + 1; k >= 0; k--) {
        cstr[k] = cs;
        cs *= cdims[k];
      }
      ev_strides(s, ostr_);
      int64_t operm[MAX_RANK];
      operm[dn->output_batch] = 0;
      for (int d = 0; d < g.ns; d++) operm[dn->output_spatial[d]] = 1 + d;
      operm[dn->output_feature] = g.ns + 1;
      for (int k = 0; k < s->rank; k++) sstr[k] = cstr[operm[k]];
      void *perm = ev_scratch(ev, i, on * lb);
      if (!perm) goto fail;
      ev_copy_strided(s->rank, s->dims, outp, sstr, perm, ostr_, lb);
      res = ev_array_nozero(ev, s);
      if (res) from_lanes(perm, et, res->data, on);
      ev_scratch_free(ev, perm, on * lb);
    }
    ev_scratch_free(ev, inp, ln * lb);
    ev_scratch_free(ev, ker, rn * lb);
    ev_scratch_free(ev, outp, on * lb);
    ev_scratch_free(ev, in_off, (g.O + 1) * (int64_t)sizeof(int64_t));
    return res;
  fail:
    ev_scratch_free(ev, in_off, (g.O + 1) * (int64_t)sizeof(int64_t));
    ev_scratch_free(ev, inp, ln * lb);
    ev_scratch_free(ev, ker, rn * lb);
    ev_scratch_free(ev, outp, on * lb);
    return NULL;
  }
bad:
  ev_fail(ev, i, EVAL_ERR_INVALID, "convolution operand, window and result shapes do not agree");
  return NULL;
}

/*
 * ragged-dot(lhs, rhs, group_sizes): one lhs dimension is split into
 * consecutive groups of group_sizes[..., j] rows (group j covers
 * [sum of sizes before j, that plus size j)).  Two modes are supported:
 *   ragged non-contracting m: [b,m,k] x [b,g,k,n] -> [b,m,n]; row m uses rhs
 *     group j, the group that covers it; rows past every group are zero.
 *   ragged contracting k: [b,m,k] x [b,k,n] -> [g,b,m,n]; output group j sums
 *     only over the k that group j covers.
 * group_sizes is [g] (shared) or [prefix..., g] with the prefix shape
 * inference checks (batch dimensions, then the free or contracting
 * dimensions before the ragged one).  A ragged batch dimension is refused.
 * Operands are converted to the result type and each output sums over the
 * contracting indices in row-major order, in the type XLA computes it in.
 */
static bool list_has(const I64List *l, int64_t d) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == d) return true;
  return false;
}

/* Element offsets, in row-major order over the listed dimensions. */
static int64_t *list_offsets(int n, const int64_t *dl, const int64_t *dims,
                             const int64_t *str, int64_t *count) {
  int64_t total = 1;
  for (int k = 0; k < n; k++) total *= dims[dl[k]];
  int64_t *off = xmalloc((size_t)(total > 0 ? total : 1) * sizeof *off);
  int64_t idx[MAX_RANK] = {0};
  for (int64_t e = 0; e < total; e++) {
    int64_t o = 0;
    for (int k = 0; k < n; k++) o += idx[k] * str[dl[k]];
    off[e] = o;
    for (int k = n - 1; k >= 0; k--) {
      if (++idx[k] < dims[dl[k]]) break;
      idx[k] = 0;
    }
  }
  *count = total;
  return off;
}

#define RAGGED_LOOP(T, ZERO)                                                   \
  do {                                                                         \
    const T *L = lhs, *R = rhs;                                                \
    T *O = out;                                                                \
    int64_t o = 0;                                                             \
    for (int64_t g = 0; g < OG; g++)                                           \
      for (int64_t b = 0; b < NB; b++)                                         \
        for (int64_t f = 0; f < MF; f++) {                                     \
          int64_t goff = 0;                                                    \
          bool zero = false;                                                   \
          if (!contracting) {                                                  \
            int64_t p = gsrank1 ? 0 : b * PO + f / after_po;                   \
            int64_t r = (f / after_r) % rdim, j = 0;                           \
            while (j < G && r >= ends[p * G + j]) j++;                         \
            if (j == G) zero = true;                                           \
            else goff = j * rstr[gdim];                                        \
          }                                                                    \
          for (int64_t n = 0; n < NF; n++, o++) {                              \
            T acc = ZERO;                                                      \
            if (!zero) {                                                       \
              const T *lp = L + lbo[b] + lfo[f];                               \
              const T *rp = R + rbo[b] + rfo[n] + goff;                        \
              for (int64_t c = 0; c < K; c++) {                                \
                if (contracting) {                                             \
                  int64_t p = gsrank1 ? 0 : b * PO + c / after_po;             \
                  int64_t r = (c / after_r) % rdim;                            \
                  int64_t lo = g ? ends[p * G + g - 1] : 0;                    \
                  if (r < lo || r >= ends[p * G + g]) continue;                \
                }                                                              \
                acc += lp[lco[c]] * rp[rco[c]];                                \
              }                                                                \
            }                                                                  \
            O[o] = acc;                                                        \
          }                                                                    \
          if (!ev_check_time(ev, i)) goto fail;                                \
        }                                                                      \
  } while (0)

EvalValue *eval_ragged_dot(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *ls = i->ops[0]->shape, *rs = i->ops[1]->shape,
              *gss = i->ops[2]->shape, *s = i->shape;
  const DotDnums *dn = i->dot;
  if (!dn || !shape_is_array(ls) || !shape_is_array(rs) ||
      !shape_is_array(gss) || !shape_is_array(s) || ls->rank > MAX_RANK ||
      rs->rank > MAX_RANK || gss->rank < 1 || dn->lhs_ragged.n != 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed ragged-dot");
    return NULL;
  }
  for (int k = 0; k < i->nprecision; k++)
    if (i->precision[k] == PREC_PACKED_NIBBLE) {
      ev_unsupported(ev, i, "ragged-dot with PACKED_NIBBLE precision");
      return NULL;
    }
  int64_t rd = dn->lhs_ragged.v[0];
  if (rd < 0 || rd >= ls->rank) goto bad;
  if (list_has(&dn->lhs_batch, rd)) {
    ev_unsupported(ev, i, "ragged-dot with a ragged batch dimension");
    return NULL;
  }
  bool contracting = list_has(&dn->lhs_contracting, rd);
  bool lu[MAX_RANK] = {false}, ru[MAX_RANK] = {false};
  if (dn->lhs_batch.n != dn->rhs_batch.n ||
      dn->lhs_contracting.n != dn->rhs_contracting.n ||
      !check_dims(&dn->lhs_batch, ls->rank, lu) ||
      !check_dims(&dn->lhs_contracting, ls->rank, lu) ||
      !check_dims(&dn->rhs_batch, rs->rank, ru) ||
      !check_dims(&dn->rhs_contracting, rs->rank, ru) ||
      !check_dims(&dn->rhs_group, rs->rank, ru) ||
      dn->rhs_group.n != (contracting ? 0 : 1))
    goto bad;
  int64_t gdim = contracting ? -1 : dn->rhs_group.v[0];
  int64_t G = gss->dims[gss->rank - 1];
  bool gsrank1 = gss->rank == 1;
  /* dimension lists */
  int64_t lf[MAX_RANK], rf[MAX_RANK];
  int nlf = 0, nrf = 0;
  for (int d = 0; d < ls->rank; d++)
    if (!lu[d]) lf[nlf++] = d;
  for (int d = 0; d < rs->rank; d++)
    if (!ru[d]) rf[nrf++] = d;
  /* expected result dimensions */
  int64_t odims[MAX_RANK + 1];
  int orank = 0;
  if (contracting) odims[orank++] = G;
  for (int k = 0; k < dn->lhs_batch.n; k++) {
    if (ls->dims[dn->lhs_batch.v[k]] != rs->dims[dn->rhs_batch.v[k]]) goto bad;
    odims[orank++] = ls->dims[dn->lhs_batch.v[k]];
  }
  for (int k = 0; k < dn->lhs_contracting.n; k++)
    if (ls->dims[dn->lhs_contracting.v[k]] != rs->dims[dn->rhs_contracting.v[k]])
      goto bad;
  for (int k = 0; k < nlf; k++) odims[orank++] = ls->dims[lf[k]];
  for (int k = 0; k < nrf; k++) {
    if (orank > MAX_RANK) goto bad;
    odims[orank++] = rs->dims[rf[k]];
  }
  if (orank != s->rank) goto bad;
  for (int k = 0; k < orank; k++)
    if (odims[k] != s->dims[k]) goto bad;
  if (!contracting && rs->dims[gdim] != G) goto bad;
  /* where the ragged coordinate and the group_sizes prefix come from: the
   * lhs free index (non-contracting) or the contracting index */
  int64_t rdim = ls->dims[rd], after_r = 1, after_po = 1, PO = 1;
  {
    const int64_t *dl = contracting ? dn->lhs_contracting.v : lf;
    int n = contracting ? dn->lhs_contracting.n : nlf, pos = 0;
    while (pos < n && dl[pos] != rd) pos++;
    for (int k = pos + 1; k < n; k++) after_r *= ls->dims[dl[k]];
    after_po = after_r * rdim;
    for (int k = 0; k < pos; k++) PO *= ls->dims[dl[k]];
  }
  int64_t NB = 1;
  for (int k = 0; k < dn->lhs_batch.n; k++) NB *= ls->dims[dn->lhs_batch.v[k]];
  if (!gsrank1 && ev_elems(gss) != NB * PO * G) goto bad;

  int64_t lstr[MAX_RANK], rstr[MAX_RANK];
  ev_strides(ls, lstr);
  ev_strides(rs, rstr);
  int64_t MF, NF, K, cnt;
  int64_t *lbo = list_offsets(dn->lhs_batch.n, dn->lhs_batch.v, ls->dims, lstr, &cnt);
  int64_t *rbo = list_offsets(dn->rhs_batch.n, dn->rhs_batch.v, rs->dims, rstr, &cnt);
  int64_t *lfo = list_offsets(nlf, lf, ls->dims, lstr, &MF);
  int64_t *rfo = list_offsets(nrf, rf, rs->dims, rstr, &NF);
  int64_t *lco = list_offsets(dn->lhs_contracting.n, dn->lhs_contracting.v,
                              ls->dims, lstr, &K);
  int64_t *rco = list_offsets(dn->rhs_contracting.n, dn->rhs_contracting.v,
                              rs->dims, rstr, &cnt);
  /* group ends: running sums of the sizes along the last dimension */
  int64_t gn = ev_elems(gss);
  int64_t *ends = xmalloc((size_t)(gn > 0 ? gn : 1) * sizeof *ends);
  int eb = et_bytes(gss->et);
  for (int64_t e = 0; e < gn; e++) {
    int64_t v = ev_get_index(gss->et, a[2]->data + e * eb);
    ends[e] = (e % G ? ends[e - 1] : 0) + v;
  }
  int64_t OG = contracting ? G : 1;

  ElemType et = s->et;
  Lane lane = ev_lane(et);
  int lb = lane_bytes(lane);
  int64_t ln = ev_elems(ls), rn = ev_elems(rs), on = ev_elems(s);
  void *lhs = NULL, *rhs = NULL, *out = NULL;
  EvalValue *res = NULL;
  lhs = operand_lanes(ev, i, a[0], ls->et, et, ln);
  if (!lhs) goto fail;
  rhs = operand_lanes(ev, i, a[1], rs->et, et, rn);
  if (!rhs) goto fail;
  out = ev_scratch(ev, i, on * lb);
  if (!out) goto fail;
  switch (lane) {
  case LANE_F32: RAGGED_LOOP(float, 0.0f); break;
  case LANE_F64: RAGGED_LOOP(double, 0.0); break;
  case LANE_S64:
  case LANE_U64: RAGGED_LOOP(uint64_t, 0); break;
  case LANE_C64: RAGGED_LOOP(float _Complex, 0.0f); break;
  case LANE_C128: RAGGED_LOOP(double _Complex, 0.0); break;
  }
  res = ev_array_nozero(ev, s);
  if (res) from_lanes(out, et, res->data, on);
fail:
  if (lhs) ev_scratch_free(ev, lhs, ln * lb);
  if (rhs) ev_scratch_free(ev, rhs, rn * lb);
  if (out) ev_scratch_free(ev, out, on * lb);
  free(lbo);
  free(rbo);
  free(lfo);
  free(rfo);
  free(lco);
  free(rco);
  free(ends);
  return res;
bad:
  ev_fail(ev, i, EVAL_ERR_INVALID,
          "ragged-dot operand and result shapes do not agree");
  return NULL;
}
