/*
 * shape_inference_control.c - instructions whose shape comes from a called
 * computation (call, fusion, while, conditional, async ops), the ops with a
 * declared, authoritative shape (custom-call, constant), and the token,
 * feed, send/recv, copy-start/done and rng ops.
 *
 * Async ops: async-start's shape is ((operands...), result, context...) and
 * the wrapped computation gives the operands' and result's shapes.  The
 * parser builds that computation for the sugar forms (negate-start,
 * call-start, ...) as XLA does; an IR built without one, whose async-start
 * carries the wrapped op's attributes itself, is checked by inferring the
 * same instruction viewed as the wrapped op.
 */
#include "shape_inference_internal.h"

#include <string.h>

static bool is_array(const Shape *s) {
  return s->et != ET_TUPLE && si_et_array(s->et);
}

static bool is_token(const Shape *s) { return s->et == ET_TOKEN; }

static bool token_operand(SiCtx *c, int k) {
  if (!is_token(si_op(c, k))) {
    si_fail(c, "operand %d must be a token, not %s", k, si_str(c, si_op(c, k)));
    return false;
  }
  return true;
}

/* The operands must match the computation's parameters one to one. */
static bool operands_match_params(SiCtx *c, const SiProgram *p, int first,
                                  const char *role) {
  int n = c->i->nops - first;
  if (p->nparams != n) {
    si_fail(c, "%s computation '%s' takes %d parameter%s but %d operand%s "
            "given", role, p->comp->name, p->nparams,
            p->nparams == 1 ? "" : "s", n, n == 1 ? " is" : "s are");
    return false;
  }
  for (int k = 0; k < n; k++) {
    if (!si_compatible(si_op(c, first + k), p->params[k], 0)) {
      si_fail(c, "operand %d is %s but parameter %d of %s computation '%s' is "
              "%s", first + k, si_str(c, si_op(c, first + k)), k, role,
              p->comp->name, si_str(c, p->params[k]));
      return false;
    }
  }
  return true;
}

static const char *frontend_attr(const HloInstr *i, const char *key) {
  if (!i->frontend_attrs)
    return NULL;
  for (int k = 0; k < i->frontend_attrs->n; k++)
    if (strcmp(i->frontend_attrs->kv[k].key, key) == 0)
      return i->frontend_attrs->kv[k].value;
  return NULL;
}

/* A composite call names itself in its frontend attributes (XLA's
 * HandleCall): composite.name non-empty, composite.attributes non-empty if
 * given, composite.version a non-negative integer if given. */
static bool check_composite(SiCtx *c) {
  const char *name = frontend_attr(c->i, "composite.name");
  const char *attrs = frontend_attr(c->i, "composite.attributes");
  const char *version = frontend_attr(c->i, "composite.version");
  if (!name || !*name) {
    si_fail(c, "a composite call needs a non-empty composite.name frontend "
            "attribute");
    return false;
  }
  if (attrs && !*attrs) {
    si_fail(c, "composite.attributes must not be empty");
    return false;
  }
  if (version) {
    const char *q = version;
    while (*q >= '0' && *q <= '9')
      q++;
    if (q == version || *q) {
      si_fail(c, "composite.version must be a non-negative integer, not "
              "\"%s\"", version);
      return false;
    }
  }
  return true;
}

Shape *si_infer_call(SiCtx *c) {
  SiProgram p;
  if (c->i->ncalled != 1)
    return si_fail(c, "must call exactly one computation, calls %d",
                   c->i->ncalled);
  if (c->i->is_composite && !check_composite(c))
    return NULL;
  if (!si_program(c, 0, "called", &p) ||
      !operands_match_params(c, &p, 0, "called"))
    return NULL;
  return si_result(c, p.result);
}

/* A fusion's parameters match its operands (XLA allows unused trailing
 * operands but no parameter without one); its shape is its root's. */
Shape *si_infer_fusion(SiCtx *c) {
  SiProgram p;
  if (c->i->ncalled != 1)
    return si_fail(c, "must call exactly one fused computation, calls %d",
                   c->i->ncalled);
  if (!si_program(c, 0, "fused", &p))
    return NULL;
  if (p.nparams > c->i->nops)
    return si_fail(c, "fused computation '%s' has %d parameters but the "
                   "fusion has %d operands", p.comp->name, p.nparams,
                   c->i->nops);
  for (int k = 0; k < p.nparams; k++)
    if (!si_compatible(si_op(c, k), p.params[k], 0))
      return si_fail(c, "operand %d is %s but parameter %d of fused "
                     "computation '%s' is %s", k, si_str(c, si_op(c, k)), k,
                     p.comp->name, si_str(c, p.params[k]));
  return si_result(c, p.result);
}

Shape *si_infer_while(SiCtx *c) {
  SiProgram cond, body;
  if (c->i->ncalled != 2)
    return si_fail(c, "needs a condition and a body computation, has %d "
                   "called computations", c->i->ncalled);
  if (!si_program(c, 0, "condition", &cond) ||
      !si_program(c, 1, "body", &body))
    return NULL;
  const Shape *init = si_op(c, 0);
  if (cond.nparams != 1)
    return si_fail(c, "condition '%s' must take 1 parameter, takes %d",
                   cond.comp->name, cond.nparams);
  if (body.nparams != 1)
    return si_fail(c, "body '%s' must take 1 parameter, takes %d",
                   body.comp->name, body.nparams);
  Shape pred = {.et = ET_PRED};
  if (!si_compatible(cond.result, &pred, 0))
    return si_fail(c, "condition '%s' must return pred[], returns %s",
                   cond.comp->name, si_str(c, cond.result));
  if (!si_compatible(init, body.params[0], 0))
    return si_fail(c, "operand %s does not match the parameter %s of body "
                   "'%s'", si_str(c, init), si_str(c, body.params[0]),
                   body.comp->name);
  if (!si_compatible(init, cond.params[0], 0))
    return si_fail(c, "operand %s does not match the parameter %s of "
                   "condition '%s'", si_str(c, init),
                   si_str(c, cond.params[0]), cond.comp->name);
  if (!si_compatible(init, body.result, 0))
    return si_fail(c, "body '%s' returns %s but the loop state is %s",
                   body.comp->name, si_str(c, body.result), si_str(c, init));
  return si_result(c, init);
}

/* conditional(index, operand_0, ..., operand_{n-1}): a pred index selects
 * between exactly 2 branches (true first), an s32 index among n >= 1. */
Shape *si_infer_conditional(SiCtx *c) {
  const HloInstr *i = c->i;
  const Shape *ix = si_op(c, 0);
  int n = i->ncalled;
  if (!is_array(ix) || ix->rank != 0 ||
      (ix->et != ET_PRED && ix->et != ET_S32))
    return si_fail(c, "branch index must be pred[] or s32[], not %s",
                   si_str(c, ix));
  if (ix->et == ET_PRED && n != 2)
    return si_fail(c, "a pred branch index needs 2 branches, has %d", n);
  if (n < 1)
    return si_fail(c, "needs at least one branch computation");
  if (i->nops != n + 1)
    return si_fail(c, "has %d branches so needs %d operands, has %d", n,
                   n + 1, i->nops);
  Shape *result = NULL;
  SiProgram first = {0};
  for (int k = 0; k < n; k++) {
    SiProgram p;
    if (!si_program(c, k, "branch", &p))
      return NULL;
    if (p.nparams != 1)
      return si_fail(c, "branch '%s' must take 1 parameter, takes %d",
                     p.comp->name, p.nparams);
    if (!si_compatible(si_op(c, k + 1), p.params[0], 0))
      return si_fail(c, "operand %d is %s but branch '%s' takes %s", k + 1,
                     si_str(c, si_op(c, k + 1)), p.comp->name,
                     si_str(c, p.params[0]));
    if (k == 0) {
      first = p;
      result = si_result(c, p.result);
    } else if (!si_compatible(first.result, p.result, 0)) {
      return si_fail(c, "branch '%s' returns %s but branch '%s' returns %s",
                     p.comp->name, si_str(c, p.result), first.comp->name,
                     si_str(c, first.result));
    }
  }
  return result;
}

/* Checks an alias (output index, operand, operand index) against the shapes
 * it names. */
static bool check_alias(SiCtx *c, const AliasEntry *e) {
  if (e->operand < 0 || e->operand >= c->i->nops) {
    si_fail(c, "output_to_operand_aliasing names operand %lld, which does "
            "not exist", (long long)e->operand);
    return false;
  }
  const Shape *out =
      shape_subshape(c->i->shape, e->output_index.n, e->output_index.v);
  const Shape *in = shape_subshape(si_op(c, (int)e->operand),
                                   e->operand_index.n, e->operand_index.v);
  if (!out || !in) {
    si_fail(c, "output_to_operand_aliasing names a shape index that does not "
            "exist");
    return false;
  }
  if (!si_compatible(out, in, 0)) {
    si_fail(c, "aliased output %s and operand %lld %s differ", si_str(c, out),
            (long long)e->operand, si_str(c, in));
    return false;
  }
  return true;
}

/* A custom call's shape is whatever it declares; the operand layout
 * constraints and the aliasing must fit the operands. */
Shape *si_infer_custom_call(SiCtx *c) {
  const CustomCallAttrs *cc = c->i->cc;
  if (cc) {
    if (cc->has_layout_constraints || cc->nlayout_constraints > 0) {
      if (cc->nlayout_constraints != c->i->nops)
        return si_fail(c, "has %d operand layout constraints for %d operands",
                       cc->nlayout_constraints, c->i->nops);
      for (int k = 0; k < cc->nlayout_constraints; k++)
        if (!si_compatible(si_op(c, k), cc->layout_constraints[k], 0))
          return si_fail(c, "operand %d is %s but its layout constraint is "
                         "%s", k, si_str(c, si_op(c, k)),
                         si_str(c, cc->layout_constraints[k]));
    }
    for (int k = 0; k < cc->naliases; k++)
      if (!check_alias(c, &cc->aliases[k]))
        return NULL;
  }
  return c->i->shape;
}

Shape *si_infer_constant(SiCtx *c) {
  const Literal *l = c->i->literal;
  if (!l || !l->shape)
    return si_fail(c, "has no literal");
  return l->shape;
}

/* The wrapped op's result for the async sugar forms: the same instruction
 * seen as the wrapped opcode, with the async shape's element 1 declared. */
static Shape *wrapped_result(SiCtx *c, const Shape *declared_result) {
  HloInstr w = *c->i;
  w.op = c->i->async_wrapped_op;
  w.async_sugar = false;
  w.shape = (Shape *)declared_result;
  if ((unsigned)w.op >= HLO_OP_COUNT || w.op == HLO_ASYNC_START ||
      w.op == HLO_ASYNC_UPDATE || w.op == HLO_ASYNC_DONE)
    return si_fail(c, "wraps an invalid opcode");
  return si_infer(c->a, &w, c->d, c->share);
}

/* ((operands...), result, declared context...). */
static Shape *async_shape(SiCtx *c, int nops, HloInstr *const *ops,
                          const Shape *result) {
  const Shape *d = c->i->shape;
  Shape **args = ARENA_ARRAY(c->a, Shape *, nops + 1);
  for (int k = 0; k < nops; k++)
    args[k] = si_result(c, ops[k]->shape);
  int n = d->et == ET_TUPLE && d->ntuple > 2 ? d->ntuple : 2;
  Shape **el = ARENA_ARRAY(c->a, Shape *, n);
  el[0] = shape_tuple(c->a, nops, args);
  el[1] = si_result(c, result);
  for (int k = 2; k < n; k++)
    el[k] = si_result(c, d->tuple[k]);
  return shape_tuple(c->a, n, el);
}

static bool check_async_form(SiCtx *c) {
  const Shape *d = c->i->shape;
  if (d->et != ET_TUPLE || d->ntuple < 2 || d->tuple[0]->et != ET_TUPLE) {
    si_fail(c, "shape must be ((operands...), result, ...), not %s",
            si_str(c, d));
    return false;
  }
  return true;
}

static const HloInstr *async_producer(SiCtx *c) {
  const HloInstr *p = c->i->ops[0];
  if (p->op != HLO_ASYNC_START && p->op != HLO_ASYNC_UPDATE) {
    si_fail(c, "operand 0 must be an async-start or async-update, not %s",
            hlo_op_name(p->op));
    return NULL;
  }
  if (p->shape->et != ET_TUPLE || p->shape->ntuple < 2) {
    si_fail(c, "operand 0 has no async shape: %s", si_str(c, p->shape));
    return NULL;
  }
  return p;
}

Shape *si_infer_async(SiCtx *c) {
  const HloInstr *i = c->i;
  if (i->op == HLO_ASYNC_DONE) {
    const HloInstr *p = async_producer(c);
    if (!p)
      return NULL;
    if (i->ncalled == 1) {
      SiProgram w;
      if (!si_program(c, 0, "wrapped", &w))
        return NULL;
      if (!si_compatible(p->shape->tuple[1], w.result, 0))
        return si_fail(c, "operand result %s differs from the result %s of "
                       "'%s'", si_str(c, p->shape->tuple[1]),
                       si_str(c, w.result), w.comp->name);
    }
    return si_result(c, p->shape->tuple[1]);
  }
  if (!check_async_form(c))
    return NULL;
  if (i->op == HLO_ASYNC_UPDATE) {
    const HloInstr *p = async_producer(c);
    if (!p)
      return NULL;
    const Shape *prev = p->shape->tuple[0];
    if (prev->et != ET_TUPLE)
      return si_fail(c, "operand 0 has no async shape: %s",
                     si_str(c, p->shape));
    /* The bound operands so far, then the new operands of this update. */
    int n = prev->ntuple + i->nops - 1;
    Shape **args = ARENA_ARRAY(c->a, Shape *, n + 1);
    for (int k = 0; k < prev->ntuple; k++)
      args[k] = si_result(c, prev->tuple[k]);
    for (int k = 1; k < i->nops; k++)
      args[prev->ntuple + k - 1] = si_result(c, si_op(c, k));
    const Shape *d = i->shape;
    Shape **el = ARENA_ARRAY(c->a, Shape *, d->ntuple);
    el[0] = shape_tuple(c->a, n, args);
    el[1] = si_result(c, p->shape->tuple[1]);
    for (int k = 2; k < d->ntuple; k++)
      el[k] = si_result(c, d->tuple[k]);
    return shape_tuple(c->a, d->ntuple, el);
  }
  /* async-start */
  const Shape *result;
  if (i->async_sugar && i->ncalled == 0) {
    result = wrapped_result(c, i->shape->tuple[1]);
    if (!result)
      return NULL;
  } else {
    SiProgram w;
    if (i->ncalled != 1)
      return si_fail(c, "must wrap exactly one computation, has %d",
                     i->ncalled);
    if (!si_program(c, 0, "wrapped", &w))
      return NULL;
    if (i->nops > w.nparams)
      return si_fail(c, "has %d operands but '%s' takes %d parameters",
                     i->nops, w.comp->name, w.nparams);
    for (int k = 0; k < i->nops; k++)
      if (!si_compatible(si_op(c, k), w.params[k], 0))
        return si_fail(c, "operand %d is %s but parameter %d of '%s' is %s", k,
                       si_str(c, si_op(c, k)), k, w.comp->name,
                       si_str(c, w.params[k]));
    result = w.result;
  }
  return async_shape(c, i->nops, i->ops, result);
}

Shape *si_infer_copy_start(SiCtx *c) {
  const Shape *s = si_op(c, 0);
  Shape *el[3] = {si_result(c, s), si_result(c, s),
                  shape_scalar(c->a, ET_U32)};
  return shape_tuple(c->a, 3, el);
}

Shape *si_infer_copy_done(SiCtx *c) {
  const Shape *s = si_op(c, 0);
  if (c->i->ops[0]->op != HLO_COPY_START)
    return si_fail(c, "operand must be a copy-start, not %s",
                   hlo_op_name(c->i->ops[0]->op));
  if (s->et != ET_TUPLE || s->ntuple < 2)
    return si_fail(c, "operand must be a copy-start tuple, not %s",
                   si_str(c, s));
  if (!si_compatible(s->tuple[0], s->tuple[1], 0))
    return si_fail(c, "copy source %s and destination %s differ",
                   si_str(c, s->tuple[1]), si_str(c, s->tuple[0]));
  return si_result(c, s->tuple[0]);
}

Shape *si_infer_token_op(SiCtx *c) {
  if (c->i->op == HLO_ADD_DEPENDENCY) {
    if (!token_operand(c, 1))
      return NULL;
    return si_result(c, si_op(c, 0));
  }
  for (int k = 0; k < c->i->nops; k++)
    if (!token_operand(c, k))
      return NULL;
  return shape_token(c->a);
}

Shape *si_infer_feed(SiCtx *c) {
  const Shape *d = c->i->shape;
  if (c->i->op == HLO_INFEED) {
    if (!token_operand(c, 0))
      return NULL;
    if (d->et != ET_TUPLE || d->ntuple != 2)
      return si_fail(c, "shape must be (data, token[]), not %s", si_str(c, d));
    return si_tuple2(c, d->tuple[0], shape_token(c->a));
  }
  if (!token_operand(c, 1))
    return NULL;
  const Shape *os = c->i->outfeed_shape;
  if (os && !si_compatible(os, si_op(c, 0), 0))
    return si_fail(c, "outfeed_shape %s differs from the operand %s",
                   si_str(c, os), si_str(c, si_op(c, 0)));
  return shape_token(c->a);
}

/* send(data, token) -> (data, u32[] context, token[]); recv(token) ->
 * (declared data, u32[], token[]); send-done -> token[]; recv-done ->
 * (data, token[]). */
Shape *si_infer_send_recv(SiCtx *c) {
  const HloInstr *i = c->i;
  const Shape *d = i->shape;
  switch (i->op) {
  case HLO_SEND: {
    if (!token_operand(c, 1))
      return NULL;
    Shape *el[3] = {si_result(c, si_op(c, 0)), shape_scalar(c->a, ET_U32),
                    shape_token(c->a)};
    return shape_tuple(c->a, 3, el);
  }
  case HLO_RECV: {
    if (!token_operand(c, 0))
      return NULL;
    if (d->et != ET_TUPLE || d->ntuple < 1)
      return si_fail(c, "shape must be (data, u32[], token[]), not %s",
                     si_str(c, d));
    Shape *el[3] = {si_result(c, d->tuple[0]), shape_scalar(c->a, ET_U32),
                    shape_token(c->a)};
    return shape_tuple(c->a, 3, el);
  }
  case HLO_SEND_DONE: case HLO_RECV_DONE: {
    HloOp want = i->op == HLO_SEND_DONE ? HLO_SEND : HLO_RECV;
    const HloInstr *p = i->ops[0];
    if (p->op != want && p->op != HLO_GET_TUPLE_ELEMENT)
      return si_fail(c, "operand must be a %s, not %s", hlo_op_name(want),
                     hlo_op_name(p->op));
    if (i->op == HLO_SEND_DONE)
      return shape_token(c->a);
    const Shape *s = si_op(c, 0);
    if (s->et != ET_TUPLE || s->ntuple < 1)
      return si_fail(c, "operand must be a recv tuple, not %s", si_str(c, s));
    return si_tuple2(c, s->tuple[0], shape_token(c->a));
  }
  default:
    break;
  }
  return si_fail(c, "not a send or recv op");
}

Shape *si_infer_rng(SiCtx *c) {
  const HloInstr *i = c->i;
  const Shape *d = i->shape;
  if (i->op == HLO_RNG_GET_AND_UPDATE_STATE) {
    int64_t two = 2;
    return si_array(c, ET_U64, 1, &two, NULL);
  }
  if (i->op == HLO_RNG_BIT_GENERATOR) {
    if (d->et != ET_TUPLE)
      return si_result(c, d);
    if (d->ntuple != 2)
      return si_fail(c, "shape must be (state, data), not %s", si_str(c, d));
    return si_tuple2(c, si_op(c, 0), d->tuple[1]);
  }
  /* rng(a, b) */
  const Shape *x = si_op(c, 0), *y = si_op(c, 1);
  if (!is_array(x) || !is_array(y) || x->rank != 0 || y->rank != 0)
    return si_fail(c, "operands must be scalars, not %s and %s", si_str(c, x),
                   si_str(c, y));
  if (x->et != y->et)
    return si_fail(c, "operands have different element types: %s and %s",
                   si_str(c, x), si_str(c, y));
  if (!is_array(d))
    return si_fail(c, "result must be an array, not %s", si_str(c, d));
  switch (i->rng_dist) {
  case RNG_UNIFORM:
    if (!et_is_float(x->et) && !et_is_int(x->et) && x->et != ET_PRED)
      return si_fail(c, "rng_uniform needs floating point, integer or pred "
                     "operands, not %s", et_name(x->et));
    break;
  case RNG_NORMAL:
    if (!et_is_float(x->et))
      return si_fail(c, "rng_normal needs floating point operands, not %s",
                     et_name(x->et));
    break;
  case RNG_DIST_NONE:
    return si_fail(c, "missing distribution");
  }
  return si_with_et(c, d, x->et);
}
