/*
 * collective.c - collectives on one replica and one partition.
 *
 * With a single participant every group has one member: all-reduce,
 * all-gather, reduce-scatter, all-to-all and collective-broadcast return
 * their operands unchanged (a reduction of one value is that value), and
 * collective-permute returns its operand when the pair 0->0 is listed, zeros
 * otherwise (XLA's value for a replica nobody sends to).  A scalar operand
 * of all-gather or reduce-scatter keeps its shape (shape inference).  An instruction
 * whose shapes say it needs more participants (an all-gather that grows its
 * operand) is refused as unsupported.  The -start/-done forms wrap the same
 * results in the tuples their shapes ask for.
 */
#include <string.h>

#include "evalp.h"

bool ev_is_collective_op(HloOp op) {
  switch (op) {
  case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START:
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START: case HLO_ALL_GATHER_DONE:
  case HLO_REDUCE_SCATTER: case HLO_ALL_TO_ALL:
  case HLO_COLLECTIVE_BROADCAST: case HLO_COLLECTIVE_PERMUTE:
  case HLO_COLLECTIVE_PERMUTE_START: case HLO_COLLECTIVE_PERMUTE_DONE:
    return true;
  default:
    return false;
  }
}

static int64_t leaf_bytes(const Shape *s) {
  if (!shape_is_array(s)) return -1;
  int64_t n = ev_elems(s);
  return n < 0 ? -1 : n * et_bytes(s->et);
}

/* The operands as a value of shape s: one operand viewed as an array, or a
 * tuple of views; NULL (error set) when the byte sizes disagree. */
static EvalValue *same_values(Eval *ev, const HloInstr *i, EvalValue *const *a,
                              int nops, const Shape *s, bool zero) {
  if (s->et != ET_TUPLE) {
    if (nops != 1 || leaf_bytes(s) != a[0]->nbytes || !a[0]->data ||
        s->et != i->ops[0]->shape->et)
      goto many;
    return zero ? ev_array(ev, s) : ev_view(ev, a[0], s);
  }
  if (s->ntuple != nops) goto many;
  EvalValue *el[64] = {0};
  if (nops > 64) goto many;
  for (int k = 0; k < nops; k++) {
    if (leaf_bytes(s->tuple[k]) != a[k]->nbytes || !a[k]->data) {
      for (int j = 0; j < k; j++) ev_unref(ev, el[j]);
      goto many;
    }
    el[k] = zero ? ev_array(ev, s->tuple[k]) : ev_view(ev, a[k], s->tuple[k]);
    if (!el[k]) {
      for (int j = 0; j < k; j++) ev_unref(ev, el[j]);
      return NULL;
    }
  }
  EvalValue *t = ev_tuple(ev, s, nops, el);
  for (int k = 0; k < nops; k++) ev_unref(ev, el[k]);
  return t;
many: {
    char what[96];
    snprintf(what, sizeof what, "%s across more than one participant", hlo_op_name(i->op));
    ev_unsupported(ev, i, what);
    return NULL;
  }
}

static bool permute_to_self(const HloInstr *i) {
  for (int k = 0; k < i->npairs; k++)
    if (i->source_target_pairs[k][0] == 0 && i->source_target_pairs[k][1] == 0) return true;
  return false;
}

/* (operand, result, context...) for the -start forms with tuple shapes. */
static EvalValue *start_tuple(Eval *ev, const HloInstr *i, EvalValue *const *a,
                              bool zero) {
  const Shape *s = i->shape;
  if (s->et != ET_TUPLE || s->ntuple < 2 || i->nops != 1 || s->ntuple > 8)
    return same_values(ev, i, a, i->nops, s, zero);
  EvalValue *el[8] = {0};
  bool ok = true;
  el[0] = same_values(ev, i, a, 1, s->tuple[0], false);
  el[1] = el[0] ? same_values(ev, i, a, 1, s->tuple[1], zero) : NULL;
  ok = el[1] != NULL;
  for (int k = 2; k < s->ntuple && ok; k++) {
    el[k] = shape_is_array(s->tuple[k]) ? ev_array(ev, s->tuple[k]) : ev_token(ev, s->tuple[k]);
    ok = el[k] != NULL;
  }
  EvalValue *t = ok ? ev_tuple(ev, s, s->ntuple, el) : NULL;
  for (int k = 0; k < s->ntuple; k++) ev_unref(ev, el[k]);
  return t;
}

EvalValue *eval_collective(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  if (i->nops < 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "collective without operands");
    return NULL;
  }
  switch (i->op) {
  case HLO_ALL_GATHER_DONE:
  case HLO_COLLECTIVE_PERMUTE_DONE:
    if (a[0]->ntuple >= 2) return ev_ref(a[0]->tuple[1]);
    return ev_ref(a[0]);
  case HLO_COLLECTIVE_PERMUTE:
    return same_values(ev, i, a, i->nops, i->shape, !permute_to_self(i));
  case HLO_COLLECTIVE_PERMUTE_START:
    return start_tuple(ev, i, a, !permute_to_self(i));
  case HLO_ALL_GATHER_START:
    return start_tuple(ev, i, a, false);
  case HLO_ALL_REDUCE_START: /* the old form of one operand: (operand, result) */
    if (i->nops == 1 && i->shape->et == ET_TUPLE && i->shape->ntuple == 2)
      return start_tuple(ev, i, a, false);
    return same_values(ev, i, a, i->nops, i->shape, false);
  default:
    return same_values(ev, i, a, i->nops, i->shape, false);
  }
}
