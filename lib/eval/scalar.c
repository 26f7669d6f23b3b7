/*
 * scalar.c - applying a small computation to scalars, millions of times:
 * reducers, sort comparators, map and scatter functions, select-and-scatter's
 * select and scatter.
 *
 * When every instruction of the computation is a scalar parameter, a scalar
 * constant, an elementwise op on scalars or the root tuple of scalars, the
 * computation is run natively: each instruction owns a 16-byte slot and the
 * elementwise kernels of elementwise.c run on one element.  Anything else
 * (a call, a nested reduce, ...) falls back to the general interpreter with
 * fresh scalar values per application: slow, but exactly the same semantics.
 */
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

struct ScalarFn {
  const HloComp *c;
  bool native;
  int n;                          /* native: instructions in order */
  const HloInstr **order;
  int **opslot;
  uint8_t (*slot)[16];
  int nouts;
  int *out_slot;                  /* native: slot of each output leaf */
  ElemType *out_et;
  int simple_op;                  /* HloOp of root = op(p0, p1), or -1 */
};

static bool scalar_array(const Shape *s) {
  return s && shape_is_array(s) && ev_elems(s) == 1 && et_bytes(s->et) <= 16;
}

/* Order the instructions reachable from the root (operands first). */
static int topo(const HloComp *c, const HloInstr **order) {
  int n = 0;
  const HloInstr **stack = xcalloc((size_t)c->ninstrs + 1, sizeof *stack);
  int *next = xcalloc((size_t)c->ninstrs + 1, sizeof *next);
  int sp = 0;
  stack[sp] = c->root;
  next[sp++] = 0;
  while (sp > 0) {
    const HloInstr *i = stack[sp - 1];
    if (next[sp - 1] < i->nops) {
      const HloInstr *o = i->ops[next[sp - 1]++];
      bool seen = false;
      for (int k = 0; k < n && !seen; k++) seen = order[k] == o;
      for (int k = 0; k < sp && !seen; k++) seen = stack[k] == o;
      if (seen) continue;
      if (sp >= c->ninstrs) { n = -1; break; }
      stack[sp] = o;
      next[sp++] = 0;
      continue;
    }
    if (n >= c->ninstrs) { n = -1; break; }
    order[n++] = i;
    sp--;
  }
  free(stack);
  free(next);
  return n;
}

static bool native_ok(const HloComp *c, const HloInstr **order, int n) {
  for (int s = 0; s < n; s++) {
    const HloInstr *i = order[s];
    if (i->op == HLO_TUPLE) {
      if (i != c->root) return false;
      for (int k = 0; k < i->nops; k++)
        if (!scalar_array(i->ops[k]->shape)) return false;
      continue;
    }
    if (!scalar_array(i->shape)) return false;
    if (i->op == HLO_PARAMETER) {
      if (i->param_number < 0 || i->param_number >= c->nparams) return false;
      continue;
    }
    if (i->op == HLO_CONSTANT) {
      if (!i->literal || !i->literal->data || i->literal->elided ||
          !i->literal->shape || i->literal->shape->et != i->shape->et)
        return false;
      continue;
    }
    if (!ev_is_elementwise_op(i->op) || i->nops < 1 || i->nops > 3) return false;
    if (hlo_bitcast_convert_resizes(i))
      return false;
    for (int k = 0; k < i->nops; k++)
      if (!scalar_array(i->ops[k]->shape)) return false;
  }
  return true;
}

static int find_slot(ScalarFn *f, const HloInstr *o) {
  for (int k = 0; k < f->n; k++)
    if (f->order[k] == o) return k;
  return -1;
}

ScalarFn *scalar_fn_new(Eval *ev, const HloComp *c) {
  (void)ev;
  ScalarFn *f = xcalloc(1, sizeof *f);
  f->c = c;
  f->simple_op = -1;
  const Shape *rs = c && c->root ? c->root->shape : NULL;
  if (rs && rs->et == ET_TUPLE) {
    f->nouts = rs->ntuple;
    f->out_et = xcalloc((size_t)f->nouts + 1, sizeof *f->out_et);
    for (int k = 0; k < f->nouts; k++) f->out_et[k] = rs->tuple[k]->et;
  } else {
    f->nouts = 1;
    f->out_et = xcalloc(1, sizeof *f->out_et);
    f->out_et[0] = rs ? rs->et : ET_INVALID;
  }
  if (!c || !c->root || c->ninstrs <= 0 || c->ninstrs > 256) return f;
  f->order = xcalloc((size_t)c->ninstrs + 1, sizeof *f->order);
  f->n = topo(c, f->order);
  if (f->n <= 0 || !native_ok(c, f->order, f->n)) {
    f->n = 0;
    return f;
  }
  f->native = true;
  f->slot = xcalloc((size_t)f->n, sizeof *f->slot);
  f->opslot = xcalloc((size_t)f->n, sizeof *f->opslot);
  for (int s = 0; s < f->n; s++) {
    const HloInstr *i = f->order[s];
    f->opslot[s] = xcalloc((size_t)i->nops + 1, sizeof(int));
    for (int k = 0; k < i->nops; k++) f->opslot[s][k] = find_slot(f, i->ops[k]);
    if (i->op == HLO_CONSTANT)
      memcpy(f->slot[s], i->literal->data, (size_t)et_bytes(i->shape->et));
  }
  f->out_slot = xcalloc((size_t)f->nouts + 1, sizeof *f->out_slot);
  int root = f->n - 1;
  if (f->order[root]->op == HLO_TUPLE) {
    if (f->order[root]->nops != f->nouts) { f->native = false; return f; }
    for (int k = 0; k < f->nouts; k++) f->out_slot[k] = f->opslot[root][k];
  } else {
    f->out_slot[0] = root;
  }
  const HloInstr *r = c->root;
  if (r->nops == 2 && hlo_op_is_elementwise_binary(r->op) && r->op != HLO_COMPARE &&
      r->ops[0]->op == HLO_PARAMETER && r->ops[1]->op == HLO_PARAMETER &&
      r->ops[0]->param_number == 0 && r->ops[1]->param_number == 1 &&
      r->ops[0]->shape->et == r->shape->et && r->ops[1]->shape->et == r->shape->et)
    f->simple_op = r->op;
  return f;
}

void scalar_fn_free(ScalarFn *f) {
  if (!f) return;
  if (f->opslot)
    for (int s = 0; s < f->n; s++) free(f->opslot[s]);
  free(f->opslot);
  free(f->slot);
  free(f->order);
  free(f->out_slot);
  free(f->out_et);
  free(f);
}

bool scalar_fn_check(Eval *ev, const HloInstr *i, const ScalarFn *f,
                     int nargs, const ElemType *ets, int nouts,
                     const ElemType *outs) {
  const HloComp *c = f->c;
  if (!c || c->nparams != nargs)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "computation '%s' takes %d parameters, want %d",
                   c ? c->name : "?", c ? c->nparams : 0, nargs);
  for (int k = 0; k < nargs; k++) {
    const Shape *ps = c->params[k] ? c->params[k]->shape : NULL;
    if (!scalar_array(ps) || ps->et != ets[k])
      return ev_fail(ev, i, EVAL_ERR_INVALID,
                     "computation '%s' parameter %d is not a %s scalar", c->name, k,
                     et_name(ets[k]));
  }
  if (f->nouts != nouts)
    return ev_fail(ev, i, EVAL_ERR_INVALID, "computation '%s' returns %d values, want %d",
                   c->name, f->nouts, nouts);
  for (int k = 0; k < nouts; k++)
    if (f->out_et[k] != outs[k])
      return ev_fail(ev, i, EVAL_ERR_INVALID, "computation '%s' result %d is not %s",
                     c->name, k, et_name(outs[k]));
  return true;
}

const uint8_t *scalar_fn_value(const ScalarFn *f, const HloInstr *i) {
  if (!f->native) return NULL;
  for (int k = 0; k < f->n; k++)
    if (f->order[k] == i) return f->slot[k];
  return NULL;
}

int scalar_fn_nouts(const ScalarFn *f) { return f->nouts; }
ElemType scalar_fn_out_et(const ScalarFn *f, int k) { return f->out_et[k]; }
int scalar_fn_simple_binop(const ScalarFn *f) { return f->simple_op; }

static bool apply_general(Eval *ev, ScalarFn *f, const uint8_t *const *args,
                          uint8_t *const *outs) {
  const HloComp *c = f->c;
  if (!c) return ev_fail(ev, NULL, EVAL_ERR_INVALID, "missing computation");
  EvalValue **vals = xcalloc((size_t)c->nparams + 1, sizeof *vals);
  bool ok = true;
  for (int k = 0; k < c->nparams && ok; k++) {
    const Shape *ps = c->params[k] ? c->params[k]->shape : NULL;
    if (!scalar_array(ps)) {
      ok = ev_fail(ev, NULL, EVAL_ERR_INVALID,
                   "computation '%s' parameter %d is not a scalar", c->name, k);
      break;
    }
    vals[k] = ev_array_nozero(ev, ps);
    if (!vals[k]) { ok = false; break; }
    memcpy(vals[k]->data, args[k], (size_t)et_bytes(ps->et));
  }
  EvalValue *r = ok ? ev_call(ev, c, c->nparams, vals) : NULL;
  if (r) {
    for (int k = 0; k < f->nouts; k++) {
      const EvalValue *leaf = r->ntuple ? (k < r->ntuple ? r->tuple[k] : NULL) : r;
      if (!leaf || !leaf->data || leaf->nbytes < et_bytes(f->out_et[k])) {
        ok = ev_fail(ev, NULL, EVAL_ERR_INVALID,
                     "computation '%s' does not return scalars", c->name);
        break;
      }
      memcpy(outs[k], leaf->data, (size_t)et_bytes(f->out_et[k]));
    }
    ev_unref(ev, r);
  } else {
    ok = false;
  }
  for (int k = 0; k < c->nparams; k++) ev_unref(ev, vals[k]);
  free(vals);
  return ok;
}

bool scalar_fn_apply(Eval *ev, ScalarFn *f, const uint8_t *const *args,
                     uint8_t *const *outs) {
  if (!f->native) return apply_general(ev, f, args, outs);
  for (int s = 0; s < f->n; s++) {
    const HloInstr *i = f->order[s];
    switch (i->op) {
    case HLO_PARAMETER:
      memcpy(f->slot[s], args[i->param_number], (size_t)et_bytes(i->shape->et));
      break;
    case HLO_CONSTANT:
    case HLO_TUPLE:
      break;
    default: {
      EwArg a[3];
      for (int k = 0; k < i->nops; k++) {
        a[k].et = i->ops[k]->shape->et;
        a[k].p = f->slot[f->opslot[s][k]];
        a[k].scalar = false;
      }
      if (!ev_elementwise(ev, i, i->nops, a, i->shape->et, f->slot[s], 1))
        return false;
      break;
    }
    }
  }
  for (int k = 0; k < f->nouts; k++)
    memcpy(outs[k], f->slot[f->out_slot[k]], (size_t)et_bytes(f->out_et[k]));
  return true;
}
