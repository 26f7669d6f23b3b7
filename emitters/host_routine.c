/*
 * host_routine.c - host kernels that are one of the runtime's routines
 * (host_routine.h).  XLA's CPU compiles almost nothing for a plain
 * reduction or a top-k: it calls its reduction library or its runtime's
 * TopK.  xhloc does the same with the routines xhlo-run carries
 * (lib/runtime/routine_host.c), so that a module made of them generates
 * no kernel: its compile skips LLVM's optimization and code generation.
 * Anything else about the instruction (another type, an epilogue, a
 * comparator, a layout that interleaves the reduced dimensions) keeps its
 * kernel.
 */
#include "host_routine.h"

#include <string.h>

#include "../lib/hlo/tree_reduction.h"

/* The logical dimension at physical position j (0: the major-most). */
static int phys_dim(const Shape *s, int j) {
  return s->layout ? (int)s->layout->minor_to_major[s->rank - 1 - j] : j;
}

static bool plain_array(const Shape *s, ElemType et) {
  return shape_is_array(s) && s->et == et && !shape_is_dynamic(s) &&
         (!s->layout || (s->layout->ntiles == 0 && s->layout->element_size_bits == 0 &&
                         s->layout->rank == s->rank));
}

/* The operand of i that x (an operand of root) is: a parameter of i's
 * fusion computation, or, for a lone op, x itself. */
static int operand_of(const HloInstr *i, const HloInstr *root, const HloInstr *x) {
  if (i == root) {
    for (int k = 0; k < i->nops; k++)
      if (i->ops[k] == x)
        return k;
    return -1;
  }
  if (x->op != HLO_PARAMETER || x->param_number < 0 || x->param_number >= i->nops)
    return -1;
  return (int)x->param_number;
}

static bool reduced(const HloInstr *r, int d) {
  for (int k = 0; k < r->dims.n; k++)
    if (r->dims.v[k] == d)
      return true;
  return false;
}

static bool plan_reduce(const HloInstr *i, const HloInstr *r, RoutineDesc *o, int *xop) {
  if (r->nops != 2 || r->ncalled != 1 || !r->called[0] || !r->called[0]->root ||
      !plain_array(r->shape, ET_F32) || !plain_array(r->ops[0]->shape, ET_F32) ||
      !hlo_reduce_is_library(r))
    return false;
  const HloInstr *init = r->ops[1];
  if (init->op != HLO_CONSTANT || !init->literal || init->literal->elided ||
      !init->literal->data || !shape_is_scalar(init->shape) || init->shape->et != ET_F32)
    return false;
  float v;
  memcpy(&v, init->literal->data, sizeof v);
  if (v != v)
    return false;
  const HloInstr *red = r->called[0]->root;
  o->op = red->op == HLO_ADD ? ROUTINE_ADD : red->op == HLO_MAXIMUM ? ROUTINE_MAX
                                                                     : ROUTINE_MIN;
  const Shape *in = r->ops[0]->shape, *out = r->shape;
  /* the reduced dimensions one run of the physical order (dimensions of
   * size 1 anywhere), the kept ones in the result's physical order */
  int64_t prod[3] = {1, 1, 1};    /* before the run, the run, after it */
  int part = 0, next_kept = 0;
  int res_of[64];                 /* result dimension of each kept one */
  if (in->rank > 64 || out->rank != in->rank - r->dims.n)
    return false;
  for (int d = 0, k = 0; d < in->rank; d++)
    res_of[d] = reduced(r, d) ? -1 : k++;
  for (int j = 0; j < in->rank; j++) {
    int d = phys_dim(in, j);
    if (in->dims[d] == 1)
      continue;
    if (reduced(r, d)) {
      if (part == 2)
        return false;
      part = 1;
    } else {
      if (part == 1)
        part = 2;
      /* the result's next non-trivial physical dimension must be this one */
      while (next_kept < out->rank && out->dims[phys_dim(out, next_kept)] == 1)
        next_kept++;
      if (next_kept == out->rank || phys_dim(out, next_kept) != res_of[d])
        return false;
      next_kept++;
    }
    prod[part] *= in->dims[d];
  }
  for (; next_kept < out->rank; next_kept++)
    if (out->dims[phys_dim(out, next_kept)] != 1)
      return false;
  o->kind = ROUTINE_REDUCE;
  o->et = ET_F32;
  o->init = v;
  o->outer = prod[0];
  o->size = prod[1];
  o->inner = prod[2];
  *xop = operand_of(i, r, r->ops[0]);
  return *xop >= 0;
}

static bool same_m2m(const Shape *a, const Shape *b) {
  for (int j = 0; j < a->rank; j++)
    if (phys_dim(a, j) != phys_dim(b, j))
      return false;
  return true;
}

static bool plan_topk(const HloInstr *i, const HloInstr *t, RoutineDesc *o, int *xop) {
  if (t->nops != 1 || !shape_is_tuple(t->shape) || t->shape->ntuple != 2)
    return false;
  const Shape *in = t->ops[0]->shape, *vs = t->shape->tuple[0], *xs = t->shape->tuple[1];
  if (!plain_array(in, ET_F32) || !plain_array(vs, ET_F32) || !plain_array(xs, ET_S32) ||
      in->rank < 1 || vs->rank != in->rank || xs->rank != in->rank)
    return false;
  int last = in->rank - 1;
  if (phys_dim(in, last) != last || !same_m2m(in, vs) || !same_m2m(in, xs) ||
      memcmp(vs->dims, xs->dims, sizeof *vs->dims * (size_t)in->rank) != 0 ||
      memcmp(vs->dims, in->dims, sizeof *vs->dims * (size_t)last) != 0)
    return false;
  int64_t n = in->dims[last], k = vs->dims[last];
  if (k != t->topk_k || k < 1 || k > n || n > INT32_MAX)
    return false;
  o->kind = ROUTINE_TOPK;
  o->et = ET_F32;
  o->n = n;
  o->k = k;
  o->rows = shape_elements(in) / n;
  o->largest = t->topk_largest;
  *xop = operand_of(i, t, t->ops[0]);
  return *xop >= 0 && o->rows >= 1;
}

bool host_routine_plan(const HloInstr *i, RoutineDesc *out, int *x_operand) {
  memset(out, 0, sizeof *out);
  const HloInstr *root = i;
  if (i->op == HLO_FUSION) {
    if (i->ncalled < 1 || !i->called[0] || !i->called[0]->root)
      return false;
    root = i->called[0]->root;
  }
  if (root->op == HLO_REDUCE)
    return plan_reduce(i, root, out, x_operand);
  if (root->op == HLO_TOPK)
    return plan_topk(i, root, out, x_operand);
  return false;
}
