/*
 * gather.c - gather and scatter with general dimension numbers, batching
 * dimensions included, with XLA's evaluator's semantics.
 *
 * Gather: every output index splits into batch dimensions (those not in
 * offset_dims, in order, matching the indices' dimensions other than
 * index_vector_dim) and offset dimensions (matching the operand dimensions
 * that are neither collapsed nor operand batching dimensions).  The start
 * vector read from the indices is scattered into operand dimensions by
 * start_index_map, operand batching dimensions take the batch index of their
 * indices dimension, and starts are clamped to [0, dim - slice size].  Each
 * batch position copies one slice box.
 *
 * Scatter: update dimensions split the same way; an update window whose
 * start is out of [0, dim - window size] in any dimension is skipped whole.
 * Updates apply in row-major order of the scatter dimensions, then of the
 * window, as to_apply(operands..., updates...), so duplicate indices combine
 * in XLA's order.
 */
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

#define MAX_RANK 64
#define MAX_VARIADIC 64

static bool in_list(const I64List *l, int64_t d) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == d) return true;
  return false;
}

/* Reads the index vector at batch position `bidx` (indices dims other than
 * ivd, in order) into vec (length nvec). */
static void read_index_vector(const Shape *is, const uint8_t *idata, int64_t ivd,
                              const int64_t *bidx, int nvec, int64_t *vec) {
  int64_t st[MAX_RANK];
  ev_strides(is, st);
  int64_t off = 0;
  int b = 0;
  for (int d = 0; d < is->rank; d++) {
    if (d == ivd) continue;
    off += bidx[b++] * st[d];
  }
  int eb = et_bytes(is->et);
  for (int k = 0; k < nvec; k++) {
    int64_t o = off + (ivd < is->rank ? k * st[ivd] : 0);
    vec[k] = ev_get_index(is->et, idata + o * eb);
  }
}

EvalValue *eval_gather(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  if (i->nops != 2 || !i->gather) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "gather needs an operand, indices and dimension numbers");
    return NULL;
  }
  const Shape *os = i->ops[0]->shape, *is = i->ops[1]->shape, *s = i->shape;
  const GatherDnums *g = i->gather;
  const I64List *sizes = &i->gather_slice_sizes;
  if (!shape_is_array(os) || !shape_is_array(is) || !shape_is_array(s) ||
      os->rank > MAX_RANK || is->rank >= MAX_RANK || s->rank > MAX_RANK ||
      !et_is_int(is->et) || sizes->n != os->rank || s->et != os->et)
    goto bad;
  int64_t ivd = g->index_vector_dim;
  if (ivd < 0 || ivd > is->rank) goto bad;
  int nvec = ivd < is->rank ? (int)is->dims[ivd] : 1;
  if (nvec != g->start_index_map.n || g->operand_batching_dims.n != g->start_indices_batching_dims.n)
    goto bad;
  for (int k = 0; k < g->start_index_map.n; k++)
    if (g->start_index_map.v[k] < 0 || g->start_index_map.v[k] >= os->rank) goto bad;
  for (int k = 0; k < os->rank; k++)
    if (sizes->v[k] < 0 || sizes->v[k] > os->dims[k]) goto bad;
  for (int k = 0; k < g->collapsed_slice_dims.n; k++) {
    int64_t d = g->collapsed_slice_dims.v[k];
    if (d < 0 || d >= os->rank || sizes->v[d] != 1) goto bad;
  }
  for (int k = 0; k < g->operand_batching_dims.n; k++) {
    int64_t d = g->operand_batching_dims.v[k], e = g->start_indices_batching_dims.v[k];
    if (d < 0 || d >= os->rank || sizes->v[d] != 1 || e < 0 || e >= is->rank || e == ivd)
      goto bad;
  }
  /* output dims: batch dims (not offset) and offset dims */
  int nbatch = 0, noff = 0;
  int64_t bdims[MAX_RANK], odim_of_operand[MAX_RANK];
  for (int d = 0; d < s->rank; d++)
    if (!in_list(&g->offset_dims, d)) bdims[nbatch++] = d;
  if (nbatch != is->rank - (ivd < is->rank ? 1 : 0)) goto bad;
  {
    int b = 0;
    for (int d = 0; d < is->rank; d++) {
      if (d == ivd) continue;
      if (s->dims[bdims[b++]] != is->dims[d]) goto bad;
    }
  }
  for (int d = 0; d < os->rank; d++) {
    odim_of_operand[d] = -1;
    if (in_list(&g->collapsed_slice_dims, d) || in_list(&g->operand_batching_dims, d)) continue;
    if (noff >= g->offset_dims.n) goto bad;
    int64_t od = g->offset_dims.v[noff++];
    if (od < 0 || od >= s->rank || s->dims[od] != sizes->v[d]) goto bad;
    odim_of_operand[d] = od;
  }
  if (noff != g->offset_dims.n) goto bad;
  {
    EvalValue *r = ev_array_nozero(ev, s);
    if (!r) return NULL;
    int eb = et_bytes(s->et);
    int64_t sst[MAX_RANK], ost[MAX_RANK], dstr[MAX_RANK], box[MAX_RANK];
    ev_strides(s, sst);
    ev_strides(os, ost);
    for (int d = 0; d < os->rank; d++) {
      box[d] = sizes->v[d];
      dstr[d] = odim_of_operand[d] >= 0 ? sst[odim_of_operand[d]] : 0;
    }
    int64_t bshape[MAX_RANK], bidx[MAX_RANK] = {0};
    int64_t nb = 1;
    for (int k = 0; k < nbatch; k++) {
      bshape[k] = s->dims[bdims[k]];
      nb *= bshape[k];
    }
    int64_t vec[MAX_RANK], start[MAX_RANK];
    for (int64_t bi = 0; bi < nb; bi++) {
      read_index_vector(is, a[1]->data, ivd, bidx, nvec, vec);
      memset(start, 0, sizeof(int64_t) * (size_t)os->rank);
      for (int k = 0; k < nvec; k++) start[g->start_index_map.v[k]] = vec[k];
      for (int k = 0; k < g->operand_batching_dims.n; k++) {
        int64_t e = g->start_indices_batching_dims.v[k];
        int64_t bpos = e < ivd ? e : e - 1;         /* batch position of dim e */
        start[g->operand_batching_dims.v[k]] = bidx[bpos];
      }
      int64_t soff = 0, doff = 0;
      for (int d = 0; d < os->rank; d++) {
        int64_t hi = os->dims[d] - sizes->v[d];
        if (start[d] < 0) start[d] = 0;
        if (start[d] > hi) start[d] = hi;
        soff += start[d] * ost[d];
      }
      for (int k = 0; k < nbatch; k++) doff += bidx[k] * sst[bdims[k]];
      ev_copy_strided(os->rank, box, a[0]->data + soff * eb, ost, r->data + doff * eb,
                      dstr, eb);
      for (int k = nbatch - 1; k >= 0; k--) {
        if (++bidx[k] < bshape[k]) break;
        bidx[k] = 0;
      }
      if ((bi & 0xfff) == 0 && !ev_check_time(ev, i)) {
        ev_unref(ev, r);
        return NULL;
      }
    }
    return r;
  }
bad:
  ev_fail(ev, i, EVAL_ERR_INVALID, "gather shapes and dimension numbers do not agree");
  return NULL;
}

EvalValue *eval_scatter(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const ScatterDnums *g = i->scatter;
  if (!g || i->nops < 3 || i->nops % 2 == 0 || i->ncalled < 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "scatter needs operands, indices, updates and a combiner");
    return NULL;
  }
  int n = (i->nops - 1) / 2;
  if (n > MAX_VARIADIC) {
    ev_unsupported(ev, i, "scatter with more than 64 operands");
    return NULL;
  }
  const Shape *os = i->ops[0]->shape, *is = i->ops[n]->shape, *us = i->ops[n + 1]->shape;
  if (!shape_is_array(os) || !shape_is_array(is) || !shape_is_array(us) ||
      os->rank > MAX_RANK || is->rank >= MAX_RANK || us->rank > MAX_RANK || !et_is_int(is->et))
    goto bad;
  for (int k = 0; k < n; k++) {
    const Shape *ok = i->ops[k]->shape, *uk = i->ops[n + 1 + k]->shape;
    if (!shape_is_array(ok) || ok->rank != os->rank || !shape_is_array(uk) ||
        uk->rank != us->rank || uk->et != ok->et)
      goto bad;
    for (int d = 0; d < os->rank; d++)
      if (ok->dims[d] != os->dims[d]) goto bad;
    for (int d = 0; d < us->rank; d++)
      if (uk->dims[d] != us->dims[d]) goto bad;
  }
  int64_t ivd = g->index_vector_dim;
  if (ivd < 0 || ivd > is->rank) goto bad;
  int nvec = ivd < is->rank ? (int)is->dims[ivd] : 1;
  if (nvec != g->scatter_dims_to_operand_dims.n ||
      g->input_batching_dims.n != g->scatter_indices_batching_dims.n)
    goto bad;
  for (int k = 0; k < nvec; k++)
    if (g->scatter_dims_to_operand_dims.v[k] < 0 || g->scatter_dims_to_operand_dims.v[k] >= os->rank)
      goto bad;
  for (int k = 0; k < g->input_batching_dims.n; k++) {
    int64_t d = g->input_batching_dims.v[k], e = g->scatter_indices_batching_dims.v[k];
    if (d < 0 || d >= os->rank || e < 0 || e >= is->rank || e == ivd) goto bad;
  }
  /* update dims: scatter dims (not window) and window dims */
  int64_t sdims[MAX_RANK], wdim_of_operand[MAX_RANK], wsize[MAX_RANK];
  int nsd = 0, nw = 0;
  for (int d = 0; d < us->rank; d++)
    if (!in_list(&g->update_window_dims, d)) sdims[nsd++] = d;
  if (nsd != is->rank - (ivd < is->rank ? 1 : 0)) goto bad;
  {
    int b = 0;
    for (int d = 0; d < is->rank; d++) {
      if (d == ivd) continue;
      if (us->dims[sdims[b++]] != is->dims[d]) goto bad;
    }
  }
  for (int d = 0; d < os->rank; d++) {
    wdim_of_operand[d] = -1;
    wsize[d] = 1;
    if (in_list(&g->inserted_window_dims, d) || in_list(&g->input_batching_dims, d)) continue;
    if (nw >= g->update_window_dims.n) goto bad;
    int64_t ud = g->update_window_dims.v[nw++];
    if (ud < 0 || ud >= us->rank || us->dims[ud] > os->dims[d]) goto bad;
    wdim_of_operand[d] = ud;
    wsize[d] = us->dims[ud];
  }
  if (nw != g->update_window_dims.n) goto bad;
  {
    const Shape *rs = i->shape;
    if ((n == 1 && rs->et == ET_TUPLE) || (n > 1 && (rs->et != ET_TUPLE || rs->ntuple != n)))
      goto bad;
    EvalValue *res[MAX_VARIADIC];
    for (int k = 0; k < n; k++) {
      const Shape *ls = n == 1 ? rs : rs->tuple[k];
      if (!shape_is_array(ls) || ls->et != i->ops[k]->shape->et ||
          ev_elems(ls) != ev_elems(os)) {
        for (int j = 0; j < k; j++) ev_unref(ev, res[j]);
        goto bad;
      }
      res[k] = ev_steal(ev, a, k, ls);   /* in place when the operand dies here */
      if (!res[k]) res[k] = ev_copy(ev, a[k], ls);
      if (!res[k]) {
        for (int j = 0; j < k; j++) ev_unref(ev, res[j]);
        return NULL;
      }
    }
    ScalarFn *f = scalar_fn_new(ev, i->called[0]);
    ElemType ets[2 * MAX_VARIADIC], oets[MAX_VARIADIC];
    int eb[MAX_VARIADIC];
    for (int k = 0; k < n; k++) {
      ets[k] = ets[n + k] = oets[k] = i->ops[k]->shape->et;
      eb[k] = et_bytes(oets[k]);
    }
    bool ok = scalar_fn_check(ev, i, f, 2 * n, ets, n, oets);
    int op = scalar_fn_simple_binop(f);
    const HloInstr *root = i->called[0]->root;
    bool assign = n == 1 && root && root->op == HLO_PARAMETER && root->param_number == 1;
    int64_t ost[MAX_RANK], ust[MAX_RANK];
    ev_strides(os, ost);
    ev_strides(us, ust);
    int64_t sshape[MAX_RANK], sidx[MAX_RANK] = {0}, ns = 1;
    for (int k = 0; k < nsd; k++) {
      sshape[k] = us->dims[sdims[k]];
      ns *= sshape[k];
    }
    int64_t vec[MAX_RANK], start[MAX_RANK], widx[MAX_RANK];
    const uint8_t *args[2 * MAX_VARIADIC];
    uint8_t *outs[MAX_VARIADIC];
    for (int64_t si = 0; si < ns && ok; si++) {
      read_index_vector(is, a[n]->data, ivd, sidx, nvec, vec);
      memset(start, 0, sizeof(int64_t) * (size_t)os->rank);
      for (int k = 0; k < nvec; k++) start[g->scatter_dims_to_operand_dims.v[k]] = vec[k];
      for (int k = 0; k < g->input_batching_dims.n; k++) {
        int64_t e = g->scatter_indices_batching_dims.v[k];
        start[g->input_batching_dims.v[k]] = sidx[e < ivd ? e : e - 1];
      }
      bool inb = true;
      for (int d = 0; d < os->rank && inb; d++)
        inb = start[d] >= 0 && start[d] <= os->dims[d] - wsize[d];
      if (inb) {
        int64_t ubase = 0, obase = 0;
        for (int k = 0; k < nsd; k++) ubase += sidx[k] * ust[sdims[k]];
        for (int d = 0; d < os->rank; d++) obase += start[d] * ost[d];
        /* walk the window in row-major order of the update window dims,
         * which is operand order of the non-inserted dims */
        memset(widx, 0, sizeof widx);
        bool more = true;
        while (more && ok) {
          int64_t uo = ubase, oo = obase;
          for (int d = 0; d < os->rank; d++)
            if (wdim_of_operand[d] >= 0) {
              uo += widx[d] * ust[wdim_of_operand[d]];
              oo += widx[d] * ost[d];
            }
          if (assign) {
            memcpy(res[0]->data + oo * eb[0], a[n + 1]->data + uo * eb[0], (size_t)eb[0]);
          } else {
            for (int k = 0; k < n; k++) {
              outs[k] = res[k]->data + oo * eb[k];
              args[k] = outs[k];
              args[n + k] = a[n + 1 + k]->data + uo * eb[k];
            }
            (void)op;
            if (!scalar_fn_apply(ev, f, args, outs)) ok = false;
          }
          more = false;
          for (int d = os->rank - 1; d >= 0; d--) {
            if (wdim_of_operand[d] < 0) continue;
            if (++widx[d] < wsize[d]) { more = true; break; }
            widx[d] = 0;
          }
        }
      }
      for (int k = nsd - 1; k >= 0; k--) {
        if (++sidx[k] < sshape[k]) break;
        sidx[k] = 0;
      }
      if ((si & 0xfff) == 0 && ok && !ev_check_time(ev, i)) ok = false;
    }
    scalar_fn_free(f);
    if (!ok) {
      for (int k = 0; k < n; k++) ev_unref(ev, res[k]);
      return NULL;
    }
    if (n == 1) return res[0];
    EvalValue *t = ev_tuple(ev, rs, n, res);
    for (int k = 0; k < n; k++) ev_unref(ev, res[k]);
    return t;
  }
bad:
  ev_fail(ev, i, EVAL_ERR_INVALID, "scatter shapes and dimension numbers do not agree");
  return NULL;
}
