/*
 * slice_sinker.c - "slice-sinker" (XLA's SliceSinker): when several
 * elementwise operations of the same kind each work on same-configured
 * slices of the same full-size operands, and together cover at least as
 * many elements as the operands hold, the operation runs once on the full
 * operands and each of them becomes a slice of that result:
 *
 *   a = add(slice(x)[0:4], slice(y)[0:4])
 *   b = add(slice(x)[4:8], slice(y)[4:8])     =>  s = add(x, y)
 *                                                 a = slice(s)[0:4]
 *                                                 b = slice(s)[4:8]
 *
 * The operations must agree on opcode and attributes (comparison
 * direction, ...) and read their slices in the same operand positions.
 */
#include "passes.h"

#include <stdlib.h>

#include "../lib/hlo/ir_edit.h"

static bool same_slice(const HloInstr *a, const HloInstr *b) {
  if (a->shape->rank != b->shape->rank)
    return false;
  for (int k = 0; k < a->shape->rank; k++)
    if (a->slice[k].start != b->slice[k].start ||
        a->slice[k].limit != b->slice[k].limit ||
        a->slice[k].stride != b->slice[k].stride)
      return false;
  return true;
}

static bool same_dims(const Shape *a, const Shape *b) {
  if (a->rank != b->rank)
    return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k])
      return false;
  return true;
}

/* Elementwise ops whose only attributes are the ones compared here. */
static bool candidate_op(const HloInstr *i) {
  if (!hlo_op_is_elementwise(i->op) || i->nops == 0 || ir_has_side_effect(i))
    return false;
  switch (i->op) {
  case HLO_RNG: case HLO_STOCHASTIC_CONVERT: case HLO_BITCAST_CONVERT:
  case HLO_REDUCE_PRECISION:
    return false;
  default:
    return true;
  }
}

/* Every operand of i is a slice (all with one configuration) of a source,
 * the sources of one shape; sources in src. */
static bool slices_of_sources(const HloInstr *i, HloInstr **src) {
  const HloInstr *first = i->ops[0];
  if (first->op != HLO_SLICE || !first->slice)
    return false;
  for (int k = 0; k < i->nops; k++) {
    const HloInstr *o = i->ops[k];
    if (o->op != HLO_SLICE || !o->slice || !same_slice(o, first) ||
        !same_dims(o->ops[0]->shape, first->ops[0]->shape))
      return false;
    src[k] = o->ops[0];
  }
  return !same_dims(first->shape, first->ops[0]->shape);
}

/* p is a peer of i: same kind of op, slices of the same sources. */
static bool peer(const HloInstr *i, const HloInstr *p, HloInstr *const *src) {
  if (p->op != i->op || p->nops != i->nops || p->shape->et != i->shape->et ||
      p->parent != i->parent)
    return false;
  if (i->op == HLO_COMPARE &&
      (p->cmp_dir != i->cmp_dir || p->cmp_type != i->cmp_type))
    return false;
  HloInstr *psrc[8];
  if (!slices_of_sources(p, psrc))
    return false;
  for (int k = 0; k < i->nops; k++)
    if (psrc[k] != src[k])
      return false;
  return true;
}

bool pass_slice_sinker(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  Arena *a = ir_arena(e);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      HloInstr *src[8];
      if (ir_removed(i) || !candidate_op(i) || i->nops > 8 ||
          ir_has_control_deps(e, i) || !slices_of_sources(i, src))
        continue;
      /* Peers: users of the slices of src[0] that match i. */
      PtrVec peers = {0};
      vec_push(&peers, i);
      int64_t covered = shape_elements(i->shape);
      HloInstr **ss;
      int ns = ir_users(e, src[0], &ss);
      HloInstr **slices = xmalloc(sizeof *slices * (size_t)(ns + 1));
      for (int j = 0; j < ns; j++)
        slices[j] = ss[j];
      for (int j = 0; j < ns; j++) {
        if (slices[j]->op != HLO_SLICE)
          continue;
        HloInstr **us;
        int nu = ir_users(e, slices[j], &us);
        for (int q = 0; q < nu; q++) {
          HloInstr *p = us[q];
          bool seen = false;
          for (int r = 0; r < peers.len; r++)
            seen |= peers.data[r] == p;
          if (seen || ir_removed(p) || ir_has_control_deps(e, p) ||
              p->ops[0] != slices[j] || !peer(i, p, src))
            continue;
          vec_push(&peers, p);
          covered += shape_elements(p->shape);
        }
      }
      free(slices);
      if (peers.len < 2 || covered < shape_elements(src[0]->shape)) {
        vec_free(&peers);
        continue;
      }
      Shape *full = ir_shape_with_et(a, src[0]->shape, i->shape->et);
      HloInstr *op = ir_clone(e, c, i, full, i->nops, src);
      for (int r = 0; r < peers.len; r++) {
        HloInstr *p = peers.data[r];
        HloInstr *sl = ir_slice(e, c, op, p->ops[0]->slice);
        sl->shape = shape_clone(a, p->shape);
        ir_replace(e, p, sl);
      }
      vec_free(&peers);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
