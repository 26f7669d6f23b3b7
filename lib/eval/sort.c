/*
 * sort.c - sort (several operands, any dimension, comparator computation)
 * and topk.
 *
 * Every 1-D slice along the sort dimension is sorted as a permutation of
 * its positions, calling the comparator as less(lhs_0, rhs_0, lhs_1, rhs_1,
 * ...); the permutation is then applied to every operand.  The order is
 * XLA's CPU runtime's: is_stable=true is a stable merge sort (the one stable
 * order), is_stable=false std::sort's introsort (introsort.c), whose ties
 * come out in XLA's order.  XLA also sorts a lone f32, f64, bf16 or integer
 * operand whose comparator is just compare(p0, p1) with direction LT or GE
 * (not a float TOTALORDER one, which it expands first) with std::less or
 * std::greater of the values: a GE comparator sorts as GT (ties kept in
 * order by a stable sort, not reversed).  With EvalOptions.sort_stable_order
 * every sort is the merge sort and the comparator is taken as written, the
 * compiled kernels' order.  topk orders by the total order of the values
 * (NaN largest), ties by lower index first.
 */
#include <stdlib.h>
#include <string.h>

#include "evalp.h"
#include "introsort.h"

#define MAX_RANK 64
#define MAX_OPS 64

/* A comparator of the form compare(A, B), where A reads only the lhs
 * parameter of one operand and B only the rhs one (jnp.sort's NaN and -0
 * canonicalization, or plain p0 < p1), runs natively: A and B are evaluated
 * once per element into keys, and each comparison is compare(keyA[x],
 * keyB[y]), exactly what the comparator computes. */
typedef struct FastCmp {
  bool ok, swap, is_int, is_unsigned;
  const HloInstr *a, *b;          /* the compare's operands */
  CmpDir dir;
  ElemType et;                    /* of A and B */
} FastCmp;

typedef struct SortCtx {
  Eval *ev;
  ScalarFn *f;
  FastCmp fast;
  double *dka, *dkb;              /* fast: float keys of the slice */
  int64_t *ika, *ikb;             /* fast: integer or total-order keys */
  int n;
  const uint8_t *base[MAX_OPS];   /* slice start of each operand */
  int eb[MAX_OPS];
  int64_t stride;                 /* elements between slice neighbours */
  bool failed;
} SortCtx;

static int cmp3_i(int64_t a, int64_t b, bool uns) {
  if (uns) return (uint64_t)a < (uint64_t)b ? -1 : (uint64_t)a > (uint64_t)b;
  return a < b ? -1 : a > b;
}

static bool fast_less(const SortCtx *c, int64_t x, int64_t y) {
  if (c->fast.swap) {
    int64_t t = x;
    x = y;
    y = t;
  }
  int r;
  if (c->fast.is_int) {
    r = cmp3_i(c->ika[x], c->ikb[y], c->fast.is_unsigned);
  } else {
    double a = c->dka[x], b = c->dkb[y];
    switch (c->fast.dir) {   /* IEEE: every ordered compare with NaN is false */
    case CMP_LT: return a < b;
    case CMP_LE: return a <= b;
    case CMP_GT: return a > b;
    case CMP_GE: return a >= b;
    case CMP_EQ: return a == b;
    default: return a != b;
    }
  }
  switch (c->fast.dir) {
  case CMP_LT: return r < 0;
  case CMP_LE: return r <= 0;
  case CMP_GT: return r > 0;
  case CMP_GE: return r >= 0;
  case CMP_EQ: return r == 0;
  default: return r != 0;
  }
}

/* The parameter the subgraph at i reads (-1: none, -2: several). */
static int64_t reads(const HloInstr *i, int depth) {
  if (depth > 64) return -2;
  if (i->op == HLO_PARAMETER) return i->param_number;
  int64_t p = -1;
  for (int k = 0; k < i->nops; k++) {
    int64_t q = reads(i->ops[k], depth + 1);
    if (q == -2 || (q >= 0 && p >= 0 && q != p)) return -2;
    if (q >= 0) p = q;
  }
  return p;
}

static FastCmp fast_comparator(const HloComp *c, const ScalarFn *f, int n) {
  FastCmp fc = {0};
  const HloInstr *r = c ? c->root : NULL;
  if (!r || r->op != HLO_COMPARE || r->nops != 2 || r->cmp_dir == CMP_NONE ||
      !scalar_fn_value(f, r))
    return fc;
  int64_t pa = reads(r->ops[0], 0), pb = reads(r->ops[1], 0);
  if (pa < 0 || pb < 0 || pa / 2 != pb / 2 || pa == pb || pa / 2 >= n) return fc;
  ElemType et = r->ops[0]->shape->et;
  if (et_is_complex(et) || r->ops[1]->shape->et != et) return fc;
  fc.a = r->ops[0];
  fc.b = r->ops[1];
  fc.swap = pa > pb;
  fc.dir = r->cmp_dir;
  fc.et = et;
  fc.is_int = !et_is_float(et) || r->cmp_type == CMPT_TOTALORDER;
  fc.is_unsigned = et_is_unsigned_int(et) || et == ET_PRED;
  fc.ok = true;
  return fc;
}

static double topk_key(ElemType et, const uint8_t *p, int64_t *ikey, bool *is_int);

static void to_key(const FastCmp *f, const uint8_t *p, double *d, int64_t *ik) {
  if (!f->is_int) {
    *d = ev_get_f64(f->et, p);
  } else if (et_is_float(f->et)) {
    bool is_int;
    topk_key(f->et, p, ik, &is_int);
  } else if (f->is_unsigned) {
    *ik = (int64_t)ev_get_u64(f->et, p);
  } else {
    *ik = ev_get_s64(f->et, p);
  }
}

/* Keys of the slice: A and B of every element, from one native run of the
 * comparator with both sides set to the element. */
static bool extract_keys(SortCtx *c, int64_t len) {
  const uint8_t *args[2 * MAX_OPS];
  uint8_t r = 0;
  uint8_t *outs[1] = {&r};
  for (int64_t j = 0; j < len; j++) {
    for (int k = 0; k < c->n; k++)
      args[2 * k] = args[2 * k + 1] = c->base[k] + j * c->stride * c->eb[k];
    if (!scalar_fn_apply(c->ev, c->f, args, outs)) return false;
    const uint8_t *va = scalar_fn_value(c->f, c->fast.a), *vb = scalar_fn_value(c->f, c->fast.b);
    if (c->fast.is_int) {
      to_key(&c->fast, va, NULL, &c->ika[j]);
      to_key(&c->fast, vb, NULL, &c->ikb[j]);
    } else {
      to_key(&c->fast, va, &c->dka[j], NULL);
      to_key(&c->fast, vb, &c->dkb[j], NULL);
    }
  }
  return true;
}

static bool less(SortCtx *c, int64_t x, int64_t y) {
  if (c->fast.ok) return fast_less(c, x, y);
  if (c->failed) return false;
  const uint8_t *args[2 * MAX_OPS];
  for (int k = 0; k < c->n; k++) {
    args[2 * k] = c->base[k] + x * c->stride * c->eb[k];
    args[2 * k + 1] = c->base[k] + y * c->stride * c->eb[k];
  }
  uint8_t r = 0;
  uint8_t *outs[1] = {&r};
  if (!scalar_fn_apply(c->ev, c->f, args, outs)) {
    c->failed = true;
    return false;
  }
  return r != 0;
}

static bool perm_less(void *ctx, int64_t x, int64_t y) { return less(ctx, x, y); }

/* XLA's CPU sorts this sort with std::greater (or std::less, the parameters
 * swapped) of the values in place of a greater-or-equal comparator: one
 * operand of f32, f64, bf16 (sorted as f32) or an integer type of 8 bits or
 * more, and a comparator of two parameters whose root is compare(p0, p1) or
 * compare(p1, p0), direction GE (its ThunkEmitter::MatchSortDirection after
 * the comparison expander has rewritten the float TOTALORDER ones). */
static bool xla_strict_ge(const HloInstr *i) {
  const HloComp *c = i->called[0];
  const HloInstr *r = c->root;
  if (i->nops != 1 || c->nparams != 2 || r->op != HLO_COMPARE || r->nops != 2 ||
      r->cmp_dir != CMP_GE || r->ops[0]->op != HLO_PARAMETER || r->ops[1]->op != HLO_PARAMETER ||
      r->ops[0]->param_number == r->ops[1]->param_number)
    return false;
  ElemType et = i->ops[0]->shape->et;
  if (et == ET_F32 || et == ET_F64 || et == ET_BF16) return r->cmp_type != CMPT_TOTALORDER;
  return et_is_int(et) && et_bits(et) >= 8;
}

static void merge_sort(SortCtx *c, int64_t *p, int64_t *tmp, int64_t len) {
  /* bottom-up, stable: take from the right run only when strictly less */
  for (int64_t w = 1; w < len && !c->failed; w *= 2) {
    for (int64_t lo = 0; lo < len; lo += 2 * w) {
      int64_t mid = lo + w < len ? lo + w : len;
      int64_t hi = lo + 2 * w < len ? lo + 2 * w : len;
      int64_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) {
        if (less(c, p[b], p[a])) tmp[o++] = p[b++];
        else tmp[o++] = p[a++];
      }
      while (a < mid) tmp[o++] = p[a++];
      while (b < hi) tmp[o++] = p[b++];
    }
    memcpy(p, tmp, (size_t)len * sizeof *p);
  }
}

EvalValue *eval_sort(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  int n = i->nops;
  if (n < 1 || n > MAX_OPS || i->ncalled < 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "sort needs operands and a comparator");
    return NULL;
  }
  const Shape *s0 = i->ops[0]->shape;
  if (!shape_is_array(s0) || s0->rank > MAX_RANK) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "sort of a non-array");
    return NULL;
  }
  int64_t d = i->dims.n >= 1 ? i->dims.v[0] : s0->rank - 1;
  if (s0->rank == 0 || d < 0 || d >= s0->rank) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "bad sort dimension");
    return NULL;
  }
  const Shape *rs = i->shape;
  if ((n == 1 && rs->et == ET_TUPLE && rs->ntuple != 1) ||
      (n > 1 && (rs->et != ET_TUPLE || rs->ntuple != n))) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "sort result does not match its operands");
    return NULL;
  }
  ElemType ets[2 * MAX_OPS], oet[1] = {ET_PRED};
  for (int k = 0; k < n; k++) {
    const Shape *sk = i->ops[k]->shape;
    const Shape *lk = rs->et == ET_TUPLE ? rs->tuple[k] : rs;
    if (!shape_is_array(sk) || sk->rank != s0->rank ||
        memcmp(sk->dims, s0->dims, sizeof(int64_t) * (size_t)s0->rank) != 0 ||
        !shape_is_array(lk) || lk->et != sk->et || ev_elems(lk) != ev_elems(sk)) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "sort operand %d does not match", k);
      return NULL;
    }
    ets[2 * k] = ets[2 * k + 1] = sk->et;
  }
  ScalarFn *f = scalar_fn_new(ev, i->called[0]);
  if (!scalar_fn_check(ev, i, f, 2 * n, ets, 1, oet)) {
    scalar_fn_free(f);
    return NULL;
  }
  EvalValue *res[MAX_OPS];
  int made = 0;
  for (int k = 0; k < n; k++) {
    res[k] = ev_array_nozero(ev, rs->et == ET_TUPLE ? rs->tuple[k] : rs);
    if (!res[k]) break;
    made++;
  }
  int64_t len = s0->dims[d];
  int64_t *perm = NULL, *tmp = NULL;
  bool ok = made == n;
  if (ok) {
    perm = ev_scratch(ev, i, (len + 1) * (int64_t)sizeof(int64_t));
    tmp = perm ? ev_scratch(ev, i, (len + 1) * (int64_t)sizeof(int64_t)) : NULL;
    ok = tmp != NULL;
  }
  if (ok) {
    int64_t st[MAX_RANK];
    ev_strides(s0, st);
    int64_t outer = 1, inner = st[d];
    for (int k = 0; k < d; k++) outer *= s0->dims[k];
    SortCtx c = {.ev = ev, .f = f, .n = n, .stride = inner};
    for (int k = 0; k < n; k++) c.eb[k] = et_bytes(i->ops[k]->shape->et);
    c.fast = fast_comparator(i->called[0], f, n);
    bool xla_order = !ev->o.sort_stable_order;
    if (xla_order && c.fast.ok && c.fast.dir == CMP_GE && xla_strict_ge(i)) c.fast.dir = CMP_GT;
    uint8_t *keys = NULL;
    if (c.fast.ok) {
      keys = ev_scratch(ev, i, 2 * (len + 1) * 8);
      if (!keys) ok = false;
      else if (c.fast.is_int) {
        c.ika = (int64_t *)keys;
        c.ikb = (int64_t *)keys + len + 1;
      } else {
        c.dka = (double *)keys;
        c.dkb = (double *)keys + len + 1;
      }
    }
    for (int64_t o = 0; o < outer && ok; o++) {
      for (int64_t in = 0; in < inner && ok; in++) {
        int64_t off = o * len * inner + in;
        for (int k = 0; k < n; k++) c.base[k] = a[k]->data + off * c.eb[k];
        if (c.fast.ok && !extract_keys(&c, len)) { ok = false; break; }
        for (int64_t j = 0; j < len; j++) perm[j] = j;
        if (i->is_stable || !xla_order) merge_sort(&c, perm, tmp, len);
        else introsort_perm(perm, len, perm_less, &c);
        if (c.failed) { ok = false; break; }
        for (int k = 0; k < n; k++) {
          int eb = c.eb[k];
          uint8_t *dst = res[k]->data + off * eb;
          for (int64_t j = 0; j < len; j++)
            memcpy(dst + j * inner * eb, c.base[k] + perm[j] * inner * eb, (size_t)eb);
        }
      }
      if (ok && !ev_check_time(ev, i)) ok = false;
    }
    ev_scratch_free(ev, keys, 2 * (len + 1) * 8);
  }
  ev_scratch_free(ev, perm, (len + 1) * (int64_t)sizeof(int64_t));
  ev_scratch_free(ev, tmp, (len + 1) * (int64_t)sizeof(int64_t));
  scalar_fn_free(f);
  if (!ok) {
    for (int k = 0; k < made; k++) ev_unref(ev, res[k]);
    return NULL;
  }
  if (rs->et != ET_TUPLE) return res[0];
  EvalValue *t = ev_tuple(ev, rs, n, res);
  for (int k = 0; k < n; k++) ev_unref(ev, res[k]);
  return t;
}

/* Total-order key of an element for topk (floats: -NaN < -inf < ... < NaN). */
static double topk_key(ElemType et, const uint8_t *p, int64_t *ikey, bool *is_int) {
  if (et_is_float(et)) {
    int w = et_bits(et);
    uint64_t raw = 0;
    memcpy(&raw, p, (size_t)et_bytes(et));
    if (w < 64) raw &= ((uint64_t)1 << w) - 1;
    uint64_t sign = (uint64_t)1 << (w - 1);
    *ikey = (raw & sign) ? -(int64_t)(raw & (sign - 1)) - 1 : (int64_t)raw;
    *is_int = true;
    return 0;
  }
  *is_int = true;
  if (et_is_unsigned_int(et)) {
    uint64_t u = ev_get_u64(et, p);
    *ikey = (int64_t)(u ^ ((uint64_t)1 << 63));
  } else {
    *ikey = ev_get_s64(et, p);
  }
  return 0;
}

EvalValue *eval_topk(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape, *rs = i->shape;
  if (!shape_is_array(os) || os->rank < 1 || rs->et != ET_TUPLE || rs->ntuple != 2 ||
      !shape_is_array(rs->tuple[0]) || !shape_is_array(rs->tuple[1]) ||
      rs->tuple[0]->et != os->et || !et_is_int(rs->tuple[1]->et) || et_is_complex(os->et)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed topk");
    return NULL;
  }
  int64_t len = os->dims[os->rank - 1], k = i->topk_k;
  int64_t rows = len ? ev_elems(os) / len : 0;
  if (k < 0 || k > len || ev_elems(rs->tuple[0]) != rows * k ||
      ev_elems(rs->tuple[1]) != rows * k) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "topk k does not fit the operand");
    return NULL;
  }
  EvalValue *vals = ev_array_nozero(ev, rs->tuple[0]);
  EvalValue *idxs = vals ? ev_array_nozero(ev, rs->tuple[1]) : NULL;
  int64_t *keys = idxs ? ev_scratch(ev, i, (len + 1) * 8) : NULL;
  int64_t *perm = keys ? ev_scratch(ev, i, (len + 1) * 8) : NULL;
  if (!perm) {
    ev_scratch_free(ev, keys, 2 * (len + 1) * 8);
    ev_unref(ev, vals);
    ev_unref(ev, idxs);
    return NULL;
  }
  int eb = et_bytes(os->et), ib = et_bytes(rs->tuple[1]->et);
  bool largest = i->topk_largest;
  for (int64_t r = 0; r < rows; r++) {
    const uint8_t *row = a[0]->data + r * len * eb;
    for (int64_t j = 0; j < len; j++) {
      bool is_int;
      topk_key(os->et, row + j * eb, &keys[j], &is_int);
      perm[j] = j;
    }
    /* insertion into a partial order would be O(n k); a stable sort of the
     * permutation is simpler and fast enough for the interpreter */
    for (int64_t w = 1; w < len; w *= 2) {
      int64_t *tmp = xmalloc((size_t)len * sizeof *tmp);
      for (int64_t lo = 0; lo < len; lo += 2 * w) {
        int64_t mid = lo + w < len ? lo + w : len, hi = lo + 2 * w < len ? lo + 2 * w : len;
        int64_t x = lo, y = mid, o = lo;
        while (x < mid && y < hi) {
          bool take_y = largest ? keys[perm[y]] > keys[perm[x]] : keys[perm[y]] < keys[perm[x]];
          tmp[o++] = take_y ? perm[y++] : perm[x++];
        }
        while (x < mid) tmp[o++] = perm[x++];
        while (y < hi) tmp[o++] = perm[y++];
      }
      memcpy(perm, tmp, (size_t)len * sizeof *tmp);
      free(tmp);
    }
    for (int64_t j = 0; j < k; j++) {
      memcpy(vals->data + (r * k + j) * eb, row + perm[j] * eb, (size_t)eb);
      ev_set_s64(rs->tuple[1]->et, idxs->data + (r * k + j) * ib, perm[j]);
    }
  }
  ev_scratch_free(ev, keys, (len + 1) * 8);
  ev_scratch_free(ev, perm, (len + 1) * 8);
  EvalValue *el[2] = {vals, idxs};
  EvalValue *t = ev_tuple(ev, rs, 2, el);
  ev_unref(ev, vals);
  ev_unref(ev, idxs);
  return t;
}
