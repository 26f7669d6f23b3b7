/*
 * shape_inference.c - hlo_infer_shape: the result shape an instruction's
 * operands and attributes give, following XLA's ShapeInference and the shape
 * checks of its HloVerifier.
 *
 * This file holds the dispatcher (one switch over every opcode, after the
 * operand-count check) and the helpers every op family shares: errors,
 * shape construction with default layouts, and the comparisons.  The op
 * families live in shape_inference_<family>.c.
 *
 * Where the result is not a function of the operands (parameter, custom-call,
 * iota, the target type of convert, the output dimensions of broadcast and
 * reshape, the preferred element type of dot and convolution) the declared
 * shape supplies the missing part, as XLA's verifier does, and only what the
 * operands constrain is checked.
 */
#include "shape_inference_internal.h"

#include <stdlib.h>
#include <string.h>

const char *si_name(const HloInstr *i) {
  return i && i->name ? i->name : "(unnamed)";
}

Shape *si_fail(SiCtx *c, const char *fmt, ...) {
  StrBuf b;
  sb_init(&b);
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  if (c->i->name)
    diag_error(c->d, c->i->loc, "invalid %s '%s': %s", hlo_op_name(c->i->op),
               c->i->name, b.s);
  else
    diag_error(c->d, c->i->loc, "invalid %s: %s", hlo_op_name(c->i->op), b.s);
  sb_free(&b);
  return NULL;
}

const char *si_str(SiCtx *c, const Shape *s) {
  if (!s)
    return "(no shape)";
  StrBuf b;
  sb_init(&b);
  shape_print(&b, s, false);
  char *r = arena_strdup(c->a, b.s ? b.s : "");
  sb_free(&b);
  return r;
}

const char *si_list_str(SiCtx *c, int n, const int64_t *v) {
  StrBuf b;
  sb_init(&b);
  sb_putc(&b, '{');
  for (int k = 0; k < n; k++) {
    if (k)
      sb_putc(&b, ',');
    sb_put_i64(&b, v[k]);
  }
  sb_putc(&b, '}');
  char *r = arena_strdup(c->a, b.s);
  sb_free(&b);
  return r;
}

const Shape *si_op(const SiCtx *c, int k) { return c->i->ops[k]->shape; }

bool si_dim_dynamic(const Shape *s, int d) {
  return s->dyn && s->dyn[d] != DIM_STATIC;
}

bool si_dim_unbounded(const Shape *s, int d) {
  return (s->dyn && s->dyn[d] == DIM_UNBOUNDED) || s->dims[d] < 0;
}

bool si_is_unbounded(const Shape *s) {
  for (int d = 0; d < s->rank; d++)
    if (si_dim_unbounded(s, d))
      return true;
  return false;
}

bool si_dims_compatible(int64_t x, int64_t y) {
  return x < 0 || y < 0 || x == y;
}

/* An array shape; without a layout when sharing (the verifier compares
 * ignoring layouts and should not pay for them). */
static Shape *make_array(Arena *a, ElemType et, int rank, const int64_t *dims,
                         const uint8_t *dyn, bool layout) {
  Shape *s = ARENA_NEW(a, Shape);
  s->et = et;
  s->rank = rank;
  if (rank > 0) {
    s->dims = ARENA_ARRAY(a, int64_t, rank);
    memcpy(s->dims, dims, sizeof(int64_t) * (size_t)rank);
  }
  if (dyn) {
    for (int d = 0; d < rank; d++) {
      if (dyn[d] != DIM_STATIC) {
        s->dyn = ARENA_ARRAY(a, uint8_t, rank);
        memcpy(s->dyn, dyn, (size_t)rank);
        break;
      }
    }
  }
  if (layout)
    s->layout = layout_default(a, rank);
  return s;
}

Shape *si_array(const SiCtx *c, ElemType et, int rank, const int64_t *dims,
                const uint8_t *dyn) {
  return make_array(c->a, et, rank, dims, dyn, !c->share);
}

void si_set_dynamic(Arena *a, Shape *s, int d, uint8_t kind) {
  if (kind == DIM_STATIC && !s->dyn)
    return;
  if (!s->dyn)
    s->dyn = ARENA_ARRAY(a, uint8_t, s->rank);
  s->dyn[d] = kind;
}

Shape *si_with_et(const SiCtx *c, const Shape *s, ElemType et) {
  if (c->share && et == s->et)
    return (Shape *)s;
  return si_array(c, et, s->rank, s->dims, s->dyn);
}

Shape *si_copy(Arena *a, const Shape *s) {
  if (s->et == ET_TUPLE) {
    Shape **el = ARENA_ARRAY(a, Shape *, s->ntuple > 0 ? s->ntuple : 1);
    for (int k = 0; k < s->ntuple; k++)
      el[k] = si_copy(a, s->tuple[k]);
    return shape_tuple(a, s->ntuple, el);
  }
  if (s->et == ET_TOKEN)
    return shape_token(a);
  if (!si_et_array(s->et)) {
    Shape *r = ARENA_NEW(a, Shape);
    r->et = s->et;
    return r;
  }
  return make_array(a, s->et, s->rank, s->dims, s->dyn, true);
}

Shape *si_result(const SiCtx *c, const Shape *s) {
  return c->share ? (Shape *)s : si_copy(c->a, s);
}

Shape *si_tuple2(const SiCtx *c, const Shape *x, const Shape *y) {
  Shape *el[2] = {si_result(c, x), si_result(c, y)};
  return shape_tuple(c->a, 2, el);
}

bool si_same_et_ignoring_fp(ElemType x, ElemType y) {
  return x == y || (et_is_float(x) && et_is_float(y));
}

bool si_compatible(const Shape *x, const Shape *y, int flags) {
  if (!x || !y)
    return false;
  bool xt = x->et == ET_TUPLE, yt = y->et == ET_TUPLE;
  if (xt || yt) {
    if (!xt || !yt || x->ntuple != y->ntuple)
      return false;
    for (int k = 0; k < x->ntuple; k++)
      if (!si_compatible(x->tuple[k], y->tuple[k], flags))
        return false;
    return true;
  }
  if (!si_et_array(x->et) || !si_et_array(y->et))
    return x->et == y->et;
  if (!(flags & SI_CMP_IGNORE_ET)) {
    if (flags & SI_CMP_IGNORE_FP) {
      if (!si_same_et_ignoring_fp(x->et, y->et))
        return false;
    } else if (x->et != y->et) {
      return false;
    }
  }
  if (x->rank != y->rank)
    return false;
  for (int d = 0; d < x->rank; d++)
    if (x->dims[d] != y->dims[d])
      return false;
  return true;
}

bool si_same_dims(const Shape *x, const Shape *y) {
  if (x->rank != y->rank)
    return false;
  for (int d = 0; d < x->rank; d++)
    if (!si_dim_unbounded(x, d) && !si_dim_unbounded(y, d) &&
        x->dims[d] != y->dims[d])
      return false;
  return true;
}

/* Largest finite exponent + 1 and significand digits of a float type, for
 * ordering types by precision as XLA's HigherPrecisionType does. */
static void fp_props(ElemType t, int *range, int *digits) {
  switch (t) {
  case ET_F16: *range = 16, *digits = 11; break;
  case ET_BF16: *range = 128, *digits = 8; break;
  case ET_F32: *range = 128, *digits = 24; break;
  case ET_F64: *range = 1024, *digits = 53; break;
  case ET_F8E5M2: *range = 16, *digits = 3; break;
  case ET_F8E4M3FN: *range = 9, *digits = 4; break;
  case ET_F8E4M3: *range = 8, *digits = 4; break;
  case ET_F8E3M4: *range = 4, *digits = 5; break;
  case ET_F8E4M3FNUZ: *range = 8, *digits = 4; break;
  case ET_F8E5M2FNUZ: *range = 16, *digits = 3; break;
  case ET_F8E4M3B11FNUZ: *range = 5, *digits = 4; break;
  case ET_F8E8M0FNU: *range = 128, *digits = 1; break;
  case ET_F4E2M1FN: *range = 3, *digits = 2; break;
  default: *range = -1, *digits = -1; break;
  }
}

ElemType si_higher_precision(ElemType x, ElemType y) {
  if (x == y)
    return x;
  ElemType cx = et_complex_component(x), cy = et_complex_component(y);
  int key_x[5], key_y[5];
  key_x[0] = et_is_complex(x), key_y[0] = et_is_complex(y);
  fp_props(cx, &key_x[1], &key_x[2]);
  fp_props(cy, &key_y[1], &key_y[2]);
  key_x[3] = et_bits(cx), key_y[3] = et_bits(cy);
  key_x[4] = et_is_signed_int(cx), key_y[4] = et_is_signed_int(cy);
  for (int k = 0; k < 5; k++) {
    if (key_x[k] != key_y[k])
      return key_x[k] > key_y[k] ? x : y;
  }
  return x;
}

int64_t si_elements(const Shape *s) {
  int64_t n = 1;
  for (int d = 0; d < s->rank; d++) {
    if (s->dims[d] < 0)
      return -1;
    if (s->dims[d] != 0 && n > INT64_MAX / s->dims[d])
      return -1;
    n *= s->dims[d];
  }
  return n;
}

bool si_check_dims(SiCtx *c, const char *what, int n, const int64_t *v,
                   int64_t bound) {
  for (int k = 0; k < n; k++) {
    if (v[k] < 0 || v[k] >= bound) {
      si_fail(c, "%s%s: dimension %lld is out of range [0, %lld)", what,
              si_list_str(c, n, v), (long long)v[k], (long long)bound);
      return false;
    }
    for (int j = 0; j < k; j++) {
      if (v[j] == v[k]) {
        si_fail(c, "%s%s: dimension %lld appears twice", what,
                si_list_str(c, n, v), (long long)v[k]);
        return false;
      }
    }
  }
  return true;
}

bool si_program(SiCtx *c, int k, const char *role, SiProgram *p) {
  const HloInstr *i = c->i;
  if (k >= i->ncalled || !i->called[k]) {
    si_fail(c, "missing the %s computation", role);
    return false;
  }
  const HloComp *comp = i->called[k];
  if (!comp->root || !comp->root->shape) {
    si_fail(c, "%s computation '%s' has no root", role, comp->name);
    return false;
  }
  p->comp = comp;
  p->nparams = comp->nparams;
  p->params = ARENA_ARRAY(c->a, const Shape *, comp->nparams + 1);
  for (int n = 0; n < comp->nparams; n++) {
    const HloInstr *param = comp->params ? comp->params[n] : NULL;
    if (!param || !param->shape) {
      si_fail(c, "%s computation '%s' has no parameter %d", role, comp->name,
              n);
      return false;
    }
    p->params[n] = param->shape;
  }
  p->result = comp->root->shape;
  return true;
}

bool si_check_reducer(SiCtx *c, const SiProgram *p, int n,
                      const Shape *const *inits, const ElemType *input_ets) {
  const char *name = p->comp->name;
  if (p->nparams != 2 * n) {
    si_fail(c, "reducer '%s' must take %d parameters but takes %d", name,
            2 * n, p->nparams);
    return false;
  }
  const Shape *acc1[1];
  const Shape *const *acc;
  const Shape *res = p->result;
  if (res->et == ET_TUPLE) {
    if (res->ntuple != n) {
      si_fail(c, "reducer '%s' must return a tuple of %d scalars but returns "
              "%s", name, n, si_str(c, res));
      return false;
    }
    acc = (const Shape *const *)res->tuple;
  } else if (si_et_array(res->et)) {
    if (n != 1) {
      si_fail(c, "reducer '%s' must return a tuple of %d scalars but returns "
              "%s", name, n, si_str(c, res));
      return false;
    }
    acc1[0] = res;
    acc = acc1;
  } else {
    si_fail(c, "reducer '%s' must return scalars but returns %s", name,
            si_str(c, res));
    return false;
  }
  for (int k = 0; k < n; k++) {
    if (acc[k]->et == ET_TUPLE || !si_et_array(acc[k]->et) ||
        acc[k]->rank != 0) {
      si_fail(c, "reducer '%s' must return scalars but returns %s", name,
              si_str(c, res));
      return false;
    }
  }
  for (int k = 0; k < n; k++) {
    Shape input_scalar = {.et = input_ets[k]};
    if (!si_compatible(acc[k], p->params[k], 0)) {
      si_fail(c, "reducer '%s' parameter %d is %s but its result %d is %s",
              name, k, si_str(c, p->params[k]), k, si_str(c, acc[k]));
      return false;
    }
    if (!si_compatible(acc[k], inits[k], SI_CMP_IGNORE_FP)) {
      si_fail(c, "reducer '%s' accumulator %d is %s but the init value is "
              "%s", name, k, si_str(c, acc[k]), si_str(c, inits[k]));
      return false;
    }
    if (!si_compatible(&input_scalar, p->params[n + k], SI_CMP_IGNORE_FP)) {
      si_fail(c, "reducer '%s' parameter %d is %s but input %d has element "
              "type %s", name, n + k, si_str(c, p->params[n + k]), k,
              et_name(input_ets[k]));
      return false;
    }
    if (!si_compatible(acc[k], p->params[n + k], SI_CMP_IGNORE_FP)) {
      si_fail(c, "reducer '%s' parameter %d is %s but its result %d is %s",
              name, n + k, si_str(c, p->params[n + k]), k, si_str(c, acc[k]));
      return false;
    }
  }
  return true;
}

/*
 * Operand counts.  Fixed arities come from opcodes.def; the variadic ops have
 * their own rules here.
 */
static bool check_operand_count(SiCtx *c) {
  const HloInstr *i = c->i;
  int n = i->nops, arity = hlo_op_arity(i->op);
  if (arity >= 0) {
    if (n != arity) {
      si_fail(c, "expects %d operand%s, has %d", arity, arity == 1 ? "" : "s",
              n);
      return false;
    }
    return true;
  }
  int min = 0;
  switch (i->op) {
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START: case HLO_ALL_REDUCE:
  case HLO_ALL_REDUCE_START: case HLO_ALL_TO_ALL: case HLO_ASYNC_UPDATE:
  case HLO_COLLECTIVE_BROADCAST: case HLO_COLLECTIVE_PERMUTE:
  case HLO_COLLECTIVE_PERMUTE_START: case HLO_COLLECTIVE_REDUCE:
  case HLO_CONCATENATE: case HLO_DYNAMIC_RESHAPE: case HLO_DYNAMIC_SLICE:
  case HLO_MAP: case HLO_REDUCE_SCATTER: case HLO_SORT: case HLO_SCAN:
    min = 1;
    break;
  case HLO_DYNAMIC_UPDATE_SLICE:
    min = 2;
    break;
  case HLO_CONDITIONAL:
    min = 2;
    break;
  case HLO_REDUCE: case HLO_REDUCE_WINDOW:
    if (n < 2 || n % 2) {
      si_fail(c, "expects an even number of operands (inputs then init "
              "values), has %d", n);
      return false;
    }
    return true;
  case HLO_SCATTER:
    if (n < 3 || n % 2 == 0) {
      si_fail(c, "expects 2N+1 operands (N inputs, the indices, N updates), "
              "has %d", n);
      return false;
    }
    return true;
  case HLO_CONVOLUTION:
    if (n != 2) {
      si_fail(c, "expects 2 operands, has %d", n);
      return false;
    }
    return true;
  case HLO_RNG:
    /* XLA's parser takes any operands after a and b (the MHLO form's
     * shape operand); its import to MHLO drops them */
    if (n < 2) {
      si_fail(c, "expects 2 operands (a and b), has %d", n);
      return false;
    }
    return true;
  default:
    break;
  }
  if (n < min) {
    si_fail(c, "expects at least %d operand%s, has %d", min,
            min == 1 ? "" : "s", n);
    return false;
  }
  return true;
}

/* Ops that may carry called computations (XLA's MightHaveCalledComputations,
 * plus the async sugar forms, whose wrapped op decides). */
static bool may_call(const HloInstr *i) {
  switch (i->op) {
  case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START: case HLO_ASYNC_DONE:
  case HLO_ASYNC_START: case HLO_ASYNC_UPDATE: case HLO_CALL:
  case HLO_COLLECTIVE_REDUCE: case HLO_CONDITIONAL: case HLO_CUSTOM_CALL:
  case HLO_FUSION: case HLO_MAP: case HLO_REDUCE: case HLO_REDUCE_SCATTER:
  case HLO_REDUCE_WINDOW: case HLO_SCATTER: case HLO_SELECT_AND_SCATTER:
  case HLO_SORT: case HLO_SCAN: case HLO_WHILE:
    return true;
  default:
    return i->async_sugar;
  }
}

static Shape *infer_get_tuple_element(SiCtx *c) {
  const Shape *t = si_op(c, 0);
  int64_t k = c->i->tuple_index;
  if (t->et != ET_TUPLE)
    return si_fail(c, "operand must be a tuple, not %s", si_str(c, t));
  if (k < 0 || k >= t->ntuple)
    return si_fail(c, "index=%lld is out of range for %s", (long long)k,
                   si_str(c, t));
  return si_result(c, t->tuple[k]);
}

static Shape *infer_tuple(SiCtx *c) {
  int n = c->i->nops;
  Shape **el = ARENA_ARRAY(c->a, Shape *, n + 1);
  for (int k = 0; k < n; k++)
    el[k] = si_result(c, si_op(c, k));
  return shape_tuple(c->a, n, el);
}

static Shape *infer(SiCtx *c) {
  const HloInstr *i = c->i;
  switch (i->op) {
  case HLO_ABS: case HLO_ACOS: case HLO_ACOSH: case HLO_ASIN: case HLO_ASINH:
  case HLO_ATAN: case HLO_ATANH: case HLO_CBRT: case HLO_CEIL: case HLO_CLZ:
  case HLO_COS: case HLO_COSH: case HLO_ERF: case HLO_EXP: case HLO_EXPM1:
  case HLO_FLOOR: case HLO_IMAG: case HLO_IS_FINITE: case HLO_LOG:
  case HLO_LOG1P: case HLO_LOGISTIC: case HLO_NEGATE: case HLO_NOT:
  case HLO_POPCNT: case HLO_REAL: case HLO_ROUND_NEAREST_AFZ:
  case HLO_ROUND_NEAREST_EVEN: case HLO_RSQRT: case HLO_SIGN: case HLO_SIN:
  case HLO_SINH: case HLO_SQRT: case HLO_TAN: case HLO_TANH:
  case HLO_COPY: case HLO_DOMAIN: case HLO_OPTIMIZATION_BARRIER:
  case HLO_SHUFFLE:
    return si_infer_unary(c);
  case HLO_ADD: case HLO_ATAN2: case HLO_COMPARE: case HLO_COMPLEX:
  case HLO_DIVIDE: case HLO_MAXIMUM: case HLO_MINIMUM: case HLO_MULTIPLY:
  case HLO_MULHI: case HLO_POWER: case HLO_REMAINDER: case HLO_SUBTRACT:
  case HLO_AND: case HLO_OR: case HLO_XOR: case HLO_SHIFT_LEFT:
  case HLO_SHIFT_RIGHT_ARITHMETIC: case HLO_SHIFT_RIGHT_LOGICAL:
    return si_infer_binary(c);
  case HLO_SELECT: return si_infer_select(c);
  case HLO_CLAMP: return si_infer_clamp(c);
  case HLO_CONVERT: return si_infer_convert(c);
  case HLO_BITCAST_CONVERT: return si_infer_bitcast_convert(c);
  case HLO_STOCHASTIC_CONVERT: return si_infer_stochastic_convert(c);
  case HLO_REDUCE_PRECISION: return si_infer_reduce_precision(c);
  case HLO_MAP: return si_infer_map(c);

  case HLO_BROADCAST: return si_infer_broadcast(c);
  case HLO_RESHAPE: return si_infer_reshape(c);
  case HLO_DYNAMIC_RESHAPE: return si_infer_dynamic_reshape(c);
  case HLO_TRANSPOSE: return si_infer_transpose(c);
  case HLO_SLICE: return si_infer_slice(c);
  case HLO_DYNAMIC_SLICE: return si_infer_dynamic_slice(c);
  case HLO_DYNAMIC_UPDATE_SLICE: return si_infer_dynamic_update_slice(c);
  case HLO_PAD: return si_infer_pad(c);
  case HLO_CONCATENATE: return si_infer_concatenate(c);
  case HLO_REVERSE: return si_infer_reverse(c);
  case HLO_IOTA: return si_infer_iota(c);
  case HLO_BITCAST: return si_infer_bitcast(c);
  case HLO_GET_DIMENSION_SIZE: return si_infer_get_dimension_size(c);
  case HLO_SET_DIMENSION_SIZE: return si_infer_set_dimension_size(c);
  case HLO_SORT: return si_infer_sort(c);
  case HLO_TOPK: return si_infer_topk(c);
  case HLO_GET_TUPLE_ELEMENT: return infer_get_tuple_element(c);
  case HLO_TUPLE: return infer_tuple(c);
  case HLO_GATHER: return si_infer_gather(c);
  case HLO_SCATTER: return si_infer_scatter(c);

  case HLO_DOT: return si_infer_dot(c);
  case HLO_RAGGED_DOT: return si_infer_ragged_dot(c);
  case HLO_SCALED_DOT: return si_infer_scaled_dot(c);
  case HLO_CONVOLUTION: return si_infer_convolution(c);
  case HLO_FFT: return si_infer_fft(c);
  case HLO_CHOLESKY: return si_infer_cholesky(c);
  case HLO_TRIANGULAR_SOLVE: return si_infer_triangular_solve(c);
  case HLO_BATCH_NORM_GRAD: case HLO_BATCH_NORM_INFERENCE:
  case HLO_BATCH_NORM_TRAINING:
    return si_infer_batch_norm(c);

  case HLO_REDUCE: return si_infer_reduce(c);
  case HLO_REDUCE_WINDOW: return si_infer_reduce_window(c);
  case HLO_SELECT_AND_SCATTER: return si_infer_select_and_scatter(c);
  case HLO_SCAN: return si_infer_scan(c);

  case HLO_CALL: return si_infer_call(c);
  case HLO_FUSION: return si_infer_fusion(c);
  case HLO_WHILE: return si_infer_while(c);
  case HLO_CONDITIONAL: return si_infer_conditional(c);
  case HLO_CUSTOM_CALL: return si_infer_custom_call(c);
  case HLO_CONSTANT: return si_infer_constant(c);
  case HLO_PARAMETER:
    return i->shape;
  case HLO_ASYNC_START: case HLO_ASYNC_UPDATE: case HLO_ASYNC_DONE:
    return si_infer_async(c);
  case HLO_COPY_START: return si_infer_copy_start(c);
  case HLO_COPY_DONE: return si_infer_copy_done(c);
  case HLO_AFTER_ALL: case HLO_ADD_DEPENDENCY:
    return si_infer_token_op(c);
  case HLO_INFEED: case HLO_OUTFEED:
    return si_infer_feed(c);
  case HLO_SEND: case HLO_SEND_DONE: case HLO_RECV: case HLO_RECV_DONE:
    return si_infer_send_recv(c);
  case HLO_RNG: case HLO_RNG_BIT_GENERATOR: case HLO_RNG_GET_AND_UPDATE_STATE:
    return si_infer_rng(c);
  case HLO_PARTITION_ID: case HLO_REPLICA_ID:
    return shape_scalar(c->a, ET_U32);

  case HLO_ALL_GATHER: case HLO_ALL_GATHER_DONE: case HLO_ALL_GATHER_START:
  case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_DONE: case HLO_ALL_REDUCE_START:
  case HLO_ALL_TO_ALL: case HLO_COLLECTIVE_BROADCAST:
  case HLO_COLLECTIVE_PERMUTE: case HLO_COLLECTIVE_PERMUTE_DONE:
  case HLO_COLLECTIVE_PERMUTE_START: case HLO_COLLECTIVE_REDUCE:
  case HLO_RAGGED_ALL_TO_ALL: case HLO_REDUCE_SCATTER:
    return si_infer_collective(c);

  case HLO_OP_COUNT:
    break;
  }
  return si_fail(c, "unknown opcode %d", (int)i->op);
}

/* Ops whose result is not determined by operands and attributes alone: the
 * declared shape must be there (XLA's parser cannot infer them either). */
static bool needs_declared_shape(HloOp op) {
  switch (op) {
  case HLO_CONVERT: case HLO_BITCAST_CONVERT: case HLO_STOCHASTIC_CONVERT:
  case HLO_RESHAPE: case HLO_DYNAMIC_RESHAPE: case HLO_IOTA: case HLO_BITCAST:
  case HLO_CUSTOM_CALL: case HLO_PARAMETER: case HLO_ASYNC_START:
  case HLO_ASYNC_UPDATE: case HLO_INFEED: case HLO_RECV: case HLO_RNG:
  case HLO_RNG_BIT_GENERATOR: case HLO_ALL_GATHER: case HLO_ALL_GATHER_START:
  case HLO_REDUCE_SCATTER: case HLO_COLLECTIVE_PERMUTE_START:
    return true;
  default:
    return false;
  }
}

Shape *si_infer(Arena *a, const HloInstr *i, Diag *d, bool share) {
  SiCtx c = {a, i, d, share};
  if ((unsigned)i->op >= HLO_OP_COUNT)
    return si_fail(&c, "unknown opcode %d", (int)i->op);
  if (!i->shape && needs_declared_shape(i->op))
    return si_fail(&c, "the result shape cannot be inferred and must be "
                   "written");
  if (i->nops > 0 && !i->ops)
    return si_fail(&c, "operand list is missing");
  for (int k = 0; k < i->nops; k++)
    if (!i->ops[k] || !i->ops[k]->shape)
      return si_fail(&c, "operand %d is missing", k);
  for (int k = 0; k < i->ncalled; k++)
    if (!i->called || !i->called[k])
      return si_fail(&c, "called computation %d is missing", k);
  if (i->ncalled > 0 && !may_call(i))
    return si_fail(&c, "this opcode does not call computations, but '%s' is "
                   "given", i->called[0]->name);
  if (!check_operand_count(&c))
    return NULL;
  return infer(&c);
}

Shape *hlo_infer_shape(Arena *a, const HloInstr *i, Diag *d) {
  return si_infer(a, i, d, false);
}
