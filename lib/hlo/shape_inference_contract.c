/*
 * shape_inference_contract.c - dot, ragged-dot, scaled-dot, convolution,
 * fft, cholesky, triangular-solve and the batch-norm ops.
 *
 * Dot and convolution allow mixed precision: XLA infers them with the
 * instruction's declared element type as the preferred element type, so the
 * result type is the declared one and only the dimensions are inferred.
 */
#include "shape_inference_internal.h"

static bool is_array(const Shape *s) {
  return s->et != ET_TUPLE && si_et_array(s->et);
}

static bool contains(const I64List *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v)
      return true;
  return false;
}

/* The preferred element type is the declared one; without a declared shape
 * (XLA's parser inferring) it is the more precise operand type. */
static ElemType declared_et(SiCtx *c) {
  if (!c->i->shape) {
    const Shape *l = si_op(c, 0), *r = si_op(c, 1);
    if (r->et == ET_TUPLE && r->ntuple > 0)
      r = r->tuple[0];
    return si_higher_precision(l->et, r->et);
  }
  ElemType et = c->i->shape->et;
  if (et == ET_TUPLE || !si_et_array(et)) {
    si_fail(c, "result must be an array, not %s", si_str(c, c->i->shape));
    return ET_INVALID;
  }
  return et;
}

/* Range, uniqueness, count and size checks of dot dimension numbers. */
static bool check_dot_dnums(SiCtx *c, const Shape *l, const Shape *r,
                            const DotDnums *dn) {
  const I64List *lb = &dn->lhs_batch, *rb = &dn->rhs_batch;
  const I64List *lc = &dn->lhs_contracting, *rc = &dn->rhs_contracting;
  const I64List *lists[4] = {lb, lc, rb, rc};
  for (int k = 0; k < 4; k++) {
    int rank = k < 2 ? l->rank : r->rank;
    for (int j = 0; j < lists[k]->n; j++) {
      if (lists[k]->v[j] < 0 || lists[k]->v[j] >= rank) {
        si_fail(c, "dimension number %lld is out of range for %s %s",
                (long long)lists[k]->v[j], k < 2 ? "lhs" : "rhs",
                si_str(c, k < 2 ? l : r));
        return false;
      }
    }
  }
  for (int side = 0; side < 2; side++) {
    const I64List *b = side ? rb : lb, *ct = side ? rc : lc;
    for (int j = 0; j < b->n + ct->n; j++) {
      int64_t v = j < b->n ? b->v[j] : ct->v[j - b->n];
      for (int m = 0; m < j; m++) {
        int64_t w = m < b->n ? b->v[m] : ct->v[m - b->n];
        if (v == w) {
          si_fail(c, "%s dimension %lld is used twice", side ? "rhs" : "lhs",
                  (long long)v);
          return false;
        }
      }
    }
  }
  if (lc->n != rc->n) {
    si_fail(c, "lhs has %d contracting dimensions but rhs has %d", lc->n,
            rc->n);
    return false;
  }
  for (int j = 0; j < lc->n; j++) {
    if (!si_dims_compatible(l->dims[lc->v[j]], r->dims[rc->v[j]])) {
      si_fail(c, "contracting dimension sizes differ: lhs dimension %lld is "
              "%lld, rhs dimension %lld is %lld", (long long)lc->v[j],
              (long long)l->dims[lc->v[j]], (long long)rc->v[j],
              (long long)r->dims[rc->v[j]]);
      return false;
    }
  }
  if (lb->n != rb->n) {
    si_fail(c, "lhs has %d batch dimensions but rhs has %d", lb->n, rb->n);
    return false;
  }
  for (int j = 0; j < lb->n; j++) {
    if (!si_dims_compatible(l->dims[lb->v[j]], r->dims[rb->v[j]])) {
      si_fail(c, "batch dimension sizes differ: lhs dimension %lld is %lld, "
              "rhs dimension %lld is %lld", (long long)lb->v[j],
              (long long)l->dims[lb->v[j]], (long long)rb->v[j],
              (long long)r->dims[rb->v[j]]);
      return false;
    }
  }
  return true;
}

/* Result dimensions: batch, then lhs free, then rhs free (skipping the rhs
 * group dimensions of ragged-dot).  `first` leading entries are kept. */
static Shape *dot_result(SiCtx *c, const Shape *l, const Shape *r,
                         const DotDnums *dn, const I64List *rhs_group,
                         ElemType et, int first, const int64_t *first_dims,
                         const uint8_t *first_dyn) {
  int max = first + l->rank + r->rank + 1;
  int64_t *dims = ARENA_ARRAY(c->a, int64_t, max);
  uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, max);
  int n = 0;
  for (; n < first; n++)
    dims[n] = first_dims[n], dyn[n] = first_dyn[n];
  for (int j = 0; j < dn->lhs_batch.n; j++, n++) {
    int64_t d = dn->lhs_batch.v[j];
    dims[n] = l->dims[d], dyn[n] = l->dyn ? l->dyn[d] : DIM_STATIC;
  }
  for (int d = 0; d < l->rank; d++) {
    if (contains(&dn->lhs_batch, d) || contains(&dn->lhs_contracting, d))
      continue;
    dims[n] = l->dims[d], dyn[n++] = l->dyn ? l->dyn[d] : DIM_STATIC;
  }
  for (int d = 0; d < r->rank; d++) {
    if (contains(&dn->rhs_batch, d) || contains(&dn->rhs_contracting, d) ||
        (rhs_group && contains(rhs_group, d)))
      continue;
    dims[n] = r->dims[d], dyn[n++] = r->dyn ? r->dyn[d] : DIM_STATIC;
  }
  return si_array(c, et, n, dims, dyn);
}

static bool dot_operands(SiCtx *c, const Shape **l, const Shape **r) {
  *l = si_op(c, 0), *r = si_op(c, 1);
  if (!is_array(*l) || !is_array(*r)) {
    si_fail(c, "operands must be arrays, not %s and %s", si_str(c, *l),
            si_str(c, *r));
    return false;
  }
  return true;
}

/* Dimension numbers are all optional in the text: none means no batch and
 * no contracting dimensions (an outer product). */
static const DotDnums *dnums_of(const SiCtx *c) {
  static const DotDnums none;
  return c->i->dot ? c->i->dot : &none;
}

Shape *si_infer_dot(SiCtx *c) {
  const Shape *l, *r;
  ElemType et = declared_et(c);
  if (et == ET_INVALID || !dot_operands(c, &l, &r) ||
      !check_dot_dnums(c, l, r, dnums_of(c)))
    return NULL;
  return dot_result(c, l, r, dnums_of(c), NULL, et, 0, NULL, NULL);
}

/* ragged-dot(lhs, rhs, group_sizes) has one lhs ragged dimension:
 *   non-contracting m: [b,m,k], [g,b,k,n], [b,g] -> [b,m,n]
 *   contracting k:     [b,m,k], [b,k,n],   [b,g] -> [g,b,m,n]
 *   batch b:           [b,m,k], [b,k,n],   [g]   -> [b,m,n]
 * group_sizes is [g] or [prefix..., g] where the prefix is the lhs batch
 * dimensions (up to the ragged one in batch mode), then for the other modes
 * the contracting or free dimensions before the ragged one. */
Shape *si_infer_ragged_dot(SiCtx *c) {
  const Shape *l, *r, *gs = si_op(c, 2);
  ElemType et = declared_et(c);
  if (et == ET_INVALID || !dot_operands(c, &l, &r))
    return NULL;
  const DotDnums *dn = dnums_of(c);
  if (!is_array(gs))
    return si_fail(c, "group sizes must be an array, not %s", si_str(c, gs));
  if (!check_dot_dnums(c, l, r, dn))
    return NULL;
  if (dn->lhs_ragged.n != 1)
    return si_fail(c, "needs exactly one lhs ragged dimension, has %d",
                   dn->lhs_ragged.n);
  int64_t rd = dn->lhs_ragged.v[0];
  if (rd < 0 || rd >= l->rank)
    return si_fail(c, "lhs ragged dimension %lld is out of range [0, %d)",
                   (long long)rd, l->rank);
  enum { NONCONTRACTING, CONTRACTING, BATCH } mode =
      contains(&dn->lhs_batch, rd)         ? BATCH
      : contains(&dn->lhs_contracting, rd) ? CONTRACTING
                                           : NONCONTRACTING;
  /* Expected group_sizes prefix. */
  int64_t *prefix = ARENA_ARRAY(c->a, int64_t, l->rank + 1);
  int np = 0;
  for (int j = 0; j < dn->lhs_batch.n; j++) {
    if (mode == BATCH && dn->lhs_batch.v[j] == rd)
      break;
    prefix[np++] = l->dims[dn->lhs_batch.v[j]];
  }
  if (mode == CONTRACTING) {
    for (int j = 0; j < dn->lhs_contracting.n; j++) {
      if (dn->lhs_contracting.v[j] == rd)
        break;
      prefix[np++] = l->dims[dn->lhs_contracting.v[j]];
    }
  } else if (mode == NONCONTRACTING) {
    for (int d = 0; d < rd; d++)
      if (!contains(&dn->lhs_batch, d) && !contains(&dn->lhs_contracting, d))
        prefix[np++] = l->dims[d];
  }
  if (gs->rank == 0)
    return si_fail(c, "group sizes must not be a scalar");
  if (gs->rank != 1) {
    if (gs->rank != np + 1)
      return si_fail(c, "group sizes %s must have rank %d", si_str(c, gs),
                     np + 1);
    for (int d = 0; d < np; d++)
      if (gs->dims[d] != prefix[d])
        return si_fail(c, "group sizes %s must have leading dimensions %s",
                       si_str(c, gs), si_list_str(c, np, prefix));
  }
  int64_t groups = gs->dims[gs->rank - 1];
  uint8_t groups_dyn = gs->dyn ? gs->dyn[gs->rank - 1] : DIM_STATIC;
  for (int j = 0; j < dn->rhs_group.n; j++) {
    int64_t g = dn->rhs_group.v[j];
    if (g < 0 || g >= r->rank)
      return si_fail(c, "rhs group dimension %lld is out of range [0, %d)",
                     (long long)g, r->rank);
    if (contains(&dn->rhs_batch, g) || contains(&dn->rhs_contracting, g))
      return si_fail(c, "rhs group dimension %lld is a batch or contracting "
                     "dimension", (long long)g);
  }
  if (mode != NONCONTRACTING && dn->rhs_group.n != 0)
    return si_fail(c, "rhs must have no group dimension when the ragged "
                   "dimension is a batch or contracting dimension");
  if (mode == NONCONTRACTING) {
    if (dn->rhs_group.n != 1)
      return si_fail(c, "rhs needs exactly one group dimension when the "
                     "ragged dimension is not contracting");
    if (!si_dims_compatible(groups, r->dims[dn->rhs_group.v[0]]))
      return si_fail(c, "rhs group dimension has size %lld but there are "
                     "%lld groups", (long long)r->dims[dn->rhs_group.v[0]],
                     (long long)groups);
  }
  if (mode == CONTRACTING)
    return dot_result(c, l, r, dn, &dn->rhs_group, et, 1, &groups,
                      &groups_dyn);
  return dot_result(c, l, r, dn, &dn->rhs_group, et, 0, NULL, NULL);
}

/* A scale operand that is a bf16 array of ones-sized dimensions, with the
 * operand's type, means "no scaling" (XLA's IsNoOpScale). */
static bool noop_scale(const Shape *op, const Shape *sc) {
  if (sc->et != op->et || op->et != ET_BF16)
    return false;
  bool ones = true, any_big = false;
  for (int d = 0; d < sc->rank; d++)
    ones = ones && sc->dims[d] == 1;
  for (int d = 0; d < op->rank; d++)
    any_big = any_big || op->dims[d] != 1;
  return ones && any_big;
}

static bool check_scale(SiCtx *c, int k, const I64List *contracting) {
  const Shape *op = si_op(c, k), *sc = si_op(c, k + 2);
  if (!is_array(sc)) {
    si_fail(c, "scale operand %d must be an array, not %s", k + 2,
            si_str(c, sc));
    return false;
  }
  if (noop_scale(op, sc))
    return true;
  if (sc->rank != op->rank) {
    si_fail(c, "scale operand %d %s must have the rank of operand %d %s",
            k + 2, si_str(c, sc), k, si_str(c, op));
    return false;
  }
  if (contracting->n != 1) {
    si_fail(c, "operand %d must have exactly one contracting dimension", k);
    return false;
  }
  for (int d = 0; d < op->rank; d++) {
    if (sc->dims[d] <= 0 || op->dims[d] % sc->dims[d]) {
      si_fail(c, "dimension %d of operand %d %s is not a multiple of the "
              "scale's %s", d, k, si_str(c, op), si_str(c, sc));
      return false;
    }
  }
  return true;
}

Shape *si_infer_scaled_dot(SiCtx *c) {
  const Shape *l, *r;
  ElemType et = declared_et(c);
  if (et == ET_INVALID || !dot_operands(c, &l, &r))
    return NULL;
  const DotDnums *dn = dnums_of(c);
  if (!check_scale(c, 0, &dn->lhs_contracting) ||
      !check_scale(c, 1, &dn->rhs_contracting))
    return NULL;
  if (si_op(c, 2)->rank == 0 && si_op(c, 3)->rank == 0)
    return si_fail(c, "at least one scale must not be a scalar");
  if (!check_dot_dnums(c, l, r, dn))
    return NULL;
  return dot_result(c, l, r, dn, NULL, et, 0, NULL, NULL);
}

/* Checks that a dimension-label group is a permutation of 0..n-1. */
static bool is_permutation(int n, const int64_t *v) {
  uint64_t seen = 0;
  if (n > 64)
    return false;
  for (int k = 0; k < n; k++) {
    if (v[k] < 0 || v[k] >= n || (seen >> v[k] & 1))
      return false;
    seen |= 1ull << v[k];
  }
  return true;
}

Shape *si_infer_convolution(SiCtx *c) {
  const ConvAttrs *ca = c->i->conv;
  const Shape *l = si_op(c, 0), *r = si_op(c, 1);
  ElemType et = declared_et(c);
  if (et == ET_INVALID)
    return NULL;
  if (r->et == ET_TUPLE && r->ntuple == 2) /* sparse rhs: (values, meta) */
    r = r->tuple[0];
  if (!is_array(l) || !is_array(r))
    return si_fail(c, "operands must be arrays, not %s and %s", si_str(c, l),
                   si_str(c, r));
  if (!ca || !ca->dnums)
    return si_fail(c, "missing dim_labels");
  const ConvDnums *dn = ca->dnums;
  int64_t fgc = ca->feature_group_count ? ca->feature_group_count : 1;
  int64_t bgc = ca->batch_group_count ? ca->batch_group_count : 1;
  if (fgc <= 0)
    return si_fail(c, "feature_group_count must be positive, is %lld",
                   (long long)fgc);
  if (bgc <= 0)
    return si_fail(c, "batch_group_count must be positive, is %lld",
                   (long long)bgc);
  if (fgc > 1 && bgc > 1)
    return si_fail(c, "feature_group_count %lld and batch_group_count %lld "
                   "cannot both exceed 1", (long long)fgc, (long long)bgc);
  int ns = dn->nspatial, nd = ns + 2;
  int nwin = ca->window ? ca->window->ndims : 0;
  if (nwin != ns)
    return si_fail(c, "window has %d dimensions but dim_labels have %d "
                   "spatial dimensions", nwin, ns);
  if (l->rank != nd || r->rank != nd)
    return si_fail(c, "lhs %s and rhs %s must have rank %d", si_str(c, l),
                   si_str(c, r), nd);
  int64_t *in = ARENA_ARRAY(c->a, int64_t, nd), *kn = ARENA_ARRAY(c->a, int64_t, nd);
  int64_t *out = ARENA_ARRAY(c->a, int64_t, nd);
  in[0] = dn->input_batch, in[1] = dn->input_feature;
  kn[0] = dn->kernel_input_feature, kn[1] = dn->kernel_output_feature;
  out[0] = dn->output_batch, out[1] = dn->output_feature;
  for (int k = 0; k < ns; k++) {
    in[k + 2] = dn->input_spatial[k];
    kn[k + 2] = dn->kernel_spatial[k];
    out[k + 2] = dn->output_spatial[k];
  }
  if (!is_permutation(nd, in))
    return si_fail(c, "input dimension labels must name each of the %d "
                   "dimensions once", nd);
  if (!is_permutation(nd, kn))
    return si_fail(c, "kernel dimension labels must name each of the %d "
                   "dimensions once", nd);
  if (!is_permutation(nd, out))
    return si_fail(c, "output dimension labels must name each of the %d "
                   "dimensions once", nd);
  int64_t in_features = l->dims[dn->input_feature];
  int64_t in_batch = l->dims[dn->input_batch];
  int64_t k_in = r->dims[dn->kernel_input_feature];
  int64_t k_out = r->dims[dn->kernel_output_feature];
  if (k_out % bgc)
    return si_fail(c, "kernel output features %lld are not a multiple of "
                   "batch_group_count %lld", (long long)k_out, (long long)bgc);
  if (k_out % fgc)
    return si_fail(c, "kernel output features %lld are not a multiple of "
                   "feature_group_count %lld", (long long)k_out,
                   (long long)fgc);
  if (in_batch % bgc)
    return si_fail(c, "input batch %lld is not a multiple of "
                   "batch_group_count %lld", (long long)in_batch,
                   (long long)bgc);
  if (in_features % fgc || in_features / fgc != k_in)
    return si_fail(c, "input features %lld / feature_group_count %lld must "
                   "equal the kernel input features %lld",
                   (long long)in_features, (long long)fgc, (long long)k_in);
  for (int k = 0; k < ns; k++)
    if (r->dims[dn->kernel_spatial[k]] != ca->window->dims[k].size)
      return si_fail(c, "window size %lld in spatial dimension %d differs "
                     "from the kernel's %lld",
                     (long long)ca->window->dims[k].size, k,
                     (long long)r->dims[dn->kernel_spatial[k]]);
  for (int d = 0; d < nd; d++)
    if (d == dn->kernel_output_feature && si_dim_dynamic(r, d))
      return si_fail(c, "dynamic kernel output features are not supported");
  /* Spatial output sizes: the window applied to the input's spatial dims. */
  int64_t *sp = ARENA_ARRAY(c->a, int64_t, ns + 1);
  uint8_t *spd = ARENA_ARRAY(c->a, uint8_t, ns + 1);
  for (int k = 0; k < ns; k++) {
    sp[k] = l->dims[dn->input_spatial[k]];
    spd[k] = sp[k] < 0 ? DIM_UNBOUNDED : DIM_STATIC;
  }
  Shape *base = si_array(c, l->et, ns, sp, spd);
  static const Window no_window;
  Shape *win = si_window_output(c, base, ns ? ca->window : &no_window, l->et);
  if (!win)
    return NULL;
  int64_t *dims = ARENA_ARRAY(c->a, int64_t, nd);
  uint8_t *dyn = ARENA_ARRAY(c->a, uint8_t, nd);
  dims[dn->output_batch] = in_batch / bgc;
  dims[dn->output_feature] = k_out;
  for (int k = 0; k < ns; k++)
    dims[dn->output_spatial[k]] = win->dims[k];
  for (int d = 0; d < nd; d++) {
    if (si_dim_dynamic(l, d)) {
      if (d == dn->input_batch)
        dyn[dn->output_batch] = l->dyn[d];
      for (int k = 0; k < ns; k++)
        if (d == dn->input_spatial[k])
          dyn[dn->output_spatial[k]] = l->dyn[d];
    }
    if (si_dim_dynamic(r, d))
      for (int k = 0; k < ns; k++)
        if (d == dn->kernel_spatial[k])
          dyn[dn->output_spatial[k]] = r->dyn[d];
  }
  return si_array(c, et, nd, dims, dyn);
}

Shape *si_infer_fft(SiCtx *c) {
  const Shape *s = si_op(c, 0);
  const I64List *len = &c->i->fft_length;
  if (!is_array(s))
    return si_fail(c, "operand must be an array, not %s", si_str(c, s));
  if (len->n < 1 || len->n > 3)
    return si_fail(c, "fft_length must have 1 to 3 entries, has %d", len->n);
  if (s->rank < len->n)
    return si_fail(c, "operand %s has lower rank than fft_length %s",
                   si_str(c, s), si_list_str(c, len->n, len->v));
  int lo = s->rank - len->n, last = s->rank - 1;
  switch (c->i->fft_type) {
  case FFT_FFT: case FFT_IFFT:
    if (!et_is_complex(s->et))
      return si_fail(c, "operand must be complex, not %s", si_str(c, s));
    return si_result(c, s);
  case FFT_RFFT: {
    if (s->et != ET_F32 && s->et != ET_F64)
      return si_fail(c, "operand must be f32 or f64, not %s", si_str(c, s));
    for (int k = 0; k < len->n; k++)
      if (!si_dim_unbounded(s, lo + k) && s->dims[lo + k] != len->v[k])
        return si_fail(c, "operand dimension %d is %lld but fft_length says "
                       "%lld", lo + k, (long long)s->dims[lo + k],
                       (long long)len->v[k]);
    Shape *r = si_with_et(c, s, s->et == ET_F32 ? ET_C64 : ET_C128);
    if (len->v[len->n - 1] != 0) {
      r->dims[last] = len->v[len->n - 1] / 2 + 1;
      if (r->dyn && r->dyn[last] == DIM_UNBOUNDED)
        r->dyn[last] = DIM_STATIC;
    }
    return r;
  }
  case FFT_IRFFT: {
    if (!et_is_complex(s->et))
      return si_fail(c, "operand must be complex, not %s", si_str(c, s));
    for (int k = 0; k + 1 < len->n; k++)
      if (s->dims[lo + k] != len->v[k])
        return si_fail(c, "operand dimension %d is %lld but fft_length says "
                       "%lld", lo + k, (long long)s->dims[lo + k],
                       (long long)len->v[k]);
    int64_t want = len->v[len->n - 1] / 2 + 1;
    if ((s->dims[last] != 0 || len->v[len->n - 1] != 0) &&
        !si_dim_unbounded(s, last) && s->dims[last] != want)
      return si_fail(c, "operand minor dimension is %lld but fft_length needs "
                     "%lld", (long long)s->dims[last], (long long)want);
    Shape *r = si_with_et(c, s, et_complex_component(s->et));
    r->dims[last] = len->v[len->n - 1];
    if (r->dyn && r->dyn[last] == DIM_UNBOUNDED)
      r->dyn[last] = DIM_STATIC;
    return r;
  }
  case FFT_NONE:
    break;
  }
  return si_fail(c, "missing fft_type");
}

static bool check_matrix(SiCtx *c, const Shape *a, const char *what) {
  if (!is_array(a) || (!et_is_float(a->et) && !et_is_complex(a->et))) {
    si_fail(c, "%s must be a floating point or complex array, not %s", what,
            si_str(c, a));
    return false;
  }
  if (a->rank < 2) {
    si_fail(c, "%s %s must have rank 2 or more", what, si_str(c, a));
    return false;
  }
  if (!si_dims_compatible(a->dims[a->rank - 2], a->dims[a->rank - 1])) {
    si_fail(c, "the two minor dimensions of %s %s differ", what,
            si_str(c, a));
    return false;
  }
  return true;
}

Shape *si_infer_cholesky(SiCtx *c) {
  if (!check_matrix(c, si_op(c, 0), "operand"))
    return NULL;
  return si_result(c, si_op(c, 0));
}

Shape *si_infer_triangular_solve(SiCtx *c) {
  const Shape *a = si_op(c, 0), *b = si_op(c, 1);
  if (!check_matrix(c, a, "a"))
    return NULL;
  if (!is_array(b) || b->et != a->et)
    return si_fail(c, "b %s must have the element type of a %s",
                   si_str(c, b), si_str(c, a));
  if (b->rank != a->rank)
    return si_fail(c, "a %s and b %s have different ranks", si_str(c, a),
                   si_str(c, b));
  int64_t shared = b->dims[b->rank - (c->i->tri_left_side ? 2 : 1)];
  if (!si_dims_compatible(a->dims[a->rank - 1], shared))
    return si_fail(c, "the shared dimension of a %s and b %s differs",
                   si_str(c, a), si_str(c, b));
  for (int d = 0; d + 2 < a->rank; d++)
    if (a->dims[d] != b->dims[d])
      return si_fail(c, "batch dimensions of a %s and b %s differ",
                     si_str(c, a), si_str(c, b));
  if (c->i->tri_transpose_a == TRI_NONE)
    return si_fail(c, "missing transpose_a");
  return si_result(c, b);
}

/* batch-norm-training(operand, scale, offset)
 * batch-norm-inference(operand, scale, offset, mean, variance)
 * batch-norm-grad(operand, scale, mean, variance, grad_output) */
Shape *si_infer_batch_norm(SiCtx *c) {
  const HloInstr *i = c->i;
  const Shape *s = si_op(c, 0);
  for (int k = 0; k < i->nops; k++)
    if (!is_array(si_op(c, k)))
      return si_fail(c, "operand %d must be an array, not %s", k,
                     si_str(c, si_op(c, k)));
  int64_t fi = i->feature_index;
  if (fi < 0 || fi >= s->rank)
    return si_fail(c, "feature_index=%lld is out of range for %s",
                   (long long)fi, si_str(c, s));
  if (!et_is_float(s->et))
    return si_fail(c, "operand must be floating point, not %s", si_str(c, s));
  int64_t features = s->dims[fi];
  bool grad = i->op == HLO_BATCH_NORM_GRAD;
  int nvec = i->op == HLO_BATCH_NORM_TRAINING ? 2 : 4;
  for (int k = 1; k <= nvec; k++) {
    const Shape *v = si_op(c, k);
    if (grad && k == 4) {
      if (v->rank != s->rank || !si_same_dims(v, s))
        return si_fail(c, "output gradient %s must match the operand %s",
                       si_str(c, v), si_str(c, s));
      if (!et_is_float(v->et))
        return si_fail(c, "output gradient must be floating point, not %s",
                       si_str(c, v));
      continue;
    }
    if (v->rank != 1)
      return si_fail(c, "operand %d %s must have rank 1", k, si_str(c, v));
    if (!si_dims_compatible(v->dims[0], features))
      return si_fail(c, "operand %d %s must have the %lld features of "
                     "dimension %lld", k, si_str(c, v), (long long)features,
                     (long long)fi);
  }
  for (int k = 1; k < i->nops; k++)
    if (!si_same_et_ignoring_fp(si_op(c, k)->et, s->et))
      return si_fail(c, "operand %d %s has a different element type from "
                     "the operand %s", k, si_str(c, si_op(c, k)),
                     si_str(c, s));
  if (i->op == HLO_BATCH_NORM_INFERENCE)
    return si_result(c, s);
  uint8_t fdyn = s->dyn ? s->dyn[fi] : DIM_STATIC;
  Shape *f = si_array(c, s->et, 1, &features, &fdyn);
  Shape *el[3] = {si_result(c, s), f, si_result(c, f)};
  return shape_tuple(c->a, 3, el);
}
