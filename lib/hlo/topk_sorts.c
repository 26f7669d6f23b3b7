/*
 * topk_sorts.c - the sorts XLA's CPU compiler runs as its TopK.
 *
 * XLA's TopkRewriter (with the CPU compiler's choice: f32 only, jaxlib
 * 0.10.2) turns a sort into a TopK custom call when
 *   - it sorts one f32 operand of rank 1 or 2, or that and an s32 iota of
 *     the same shape (here: counting along the sort dimension) or a
 *     broadcast of a 1-D one along it;
 *   - its comparator's root is compare(p0, p1), direction GT (TOTALORDER or
 *     not);
 *   - every use is a slice from 0 with stride 1 (through the
 *     get-tuple-element of each result for two operands, each with that one
 *     user), keeping the whole of the other dimension of rank 2, and all
 *     slices keep the same k along the sort dimension.
 * Its TopK puts the largest first, ties by lower index: the stable order,
 * whether the sort is stable or not.  So the interpreter, sorting in XLA's
 * CPU order, marks these sorts stable instead of giving std::sort's ties.
 * (TopK compares the values' bits as integers, so it also puts +0 before -0
 * and orders NaNs by sign, where the comparator sees ties: not modelled.)
 */
#include "topk_sorts.h"

#include "ir_edit.h"

static bool is_param(const HloInstr *i, int n) {
  return i->op == HLO_PARAMETER && i->param_number == n;
}

/* The sort's second operand counts 0, 1, ... along the sort dimension. */
static bool is_index_iota(const HloInstr *v, const Shape *data, int64_t d) {
  const Shape *s = v->shape;
  if (!shape_is_array(s) || s->et != ET_S32 || s->rank != data->rank) return false;
  for (int j = 0; j < s->rank; j++)
    if (s->dims[j] != data->dims[j]) return false;
  if (v->op == HLO_IOTA) return v->iota_dim == d;
  if (v->op != HLO_BROADCAST || v->dims.n != 1 || v->dims.v[0] != d) return false;
  const HloInstr *i = v->ops[0];
  return i->op == HLO_IOTA && i->shape->rank == 1 && i->shape->et == ET_S32;
}

/* A slice from 0, stride 1, the whole batch dimension; its k, or -1. */
static int64_t slice_k(const HloInstr *s, const HloInstr *of, int64_t d) {
  if (s->op != HLO_SLICE || s->ops[0] != of) return -1;
  const Shape *in = of->shape;
  for (int j = 0; j < in->rank; j++) {
    const SliceDim *sl = &s->slice[j];
    if (sl->start != 0 || sl->stride != 1) return -1;
    if (j != d && sl->limit != in->dims[j]) return -1;
  }
  return s->slice[d].limit;
}

static bool runs_as_topk(IrEdit *e, HloInstr *sort) {
  if (sort->op != HLO_SORT || (sort->nops != 1 && sort->nops != 2) || sort->ncalled != 1 ||
      ir_is_root(sort))
    return false;
  const Shape *data = sort->ops[0]->shape;
  if (!shape_is_array(data) || data->et != ET_F32 || (data->rank != 1 && data->rank != 2) ||
      shape_is_dynamic(data))
    return false;
  int64_t d = sort->dims.n >= 1 ? sort->dims.v[0] : data->rank - 1;
  if (sort->nops == 2 && !is_index_iota(sort->ops[1], data, d)) return false;
  const HloInstr *r = sort->called[0]->root;
  if (r->op != HLO_COMPARE || r->cmp_dir != CMP_GT || r->nops != 2 || !is_param(r->ops[0], 0) ||
      !is_param(r->ops[1], 1) || r->ops[0]->shape->et != ET_F32)
    return false;
  HloInstr **users;
  int n = ir_users(e, sort, &users);
  int64_t k = -1;
  for (int u = 0; u < n; u++) {
    const HloInstr *s = users[u], *of = sort;
    if (sort->nops == 2) {
      HloInstr **gu;
      if (s->op != HLO_GET_TUPLE_ELEMENT || ir_is_root(s) || ir_user_count(e, users[u]) != 1)
        return false;
      ir_users(e, users[u], &gu);
      of = s;
      s = gu[0];
    }
    int64_t sk = slice_k(s, of, d);
    if (sk < 0 || (k >= 0 && sk != k)) return false;
    k = sk;
  }
  return k >= 0;
}

bool hlo_mark_topk_sorts(HloModule *m) {
  IrEdit *e = ir_begin(m);
  bool marked = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (!i->is_stable && runs_as_topk(e, i)) {
        i->is_stable = true;
        marked = true;
      }
    }
  }
  ir_end(e, false);
  return marked;
}
