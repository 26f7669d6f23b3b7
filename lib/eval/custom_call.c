/*
 * custom_call.c - the custom-call targets the interpreter can run.
 *
 * Annotations that do not change values on one device (Sharding, the Shardy
 * and SPMD shape markers, host offloading markers, device placement) pass
 * their operand through.  TopK sorts each row with its comparator (over
 * value and index, stable) and keeps the first k, as XLA's TopK decomposer
 * does; without a comparator it is the topk op with largest=true.
 * SliceToDynamic and SetBound are dynamic.c's.  XLA builder wrappers ("xla_builder.*") run their called
 * computation, which is their definition.  Library calls (cuBLAS, cuDNN,
 * oneDNN GEMMs and convolutions) run as libcall.c says.  AllocateBuffer gives zeros and
 * GetRngSeed the evaluation's seed.  JAX's GPU Threefry kernel
 * (cu_threefry2x32) runs Threefry-2x32 on each element.  "Qr" and
 * "ProductOfElementaryHouseholderReflectors" (XLA's QrExpander's targets)
 * run as linalg.c says, "__onednn$layernorm" as batchnorm.c says.  Any
 * other target
 * is refused, naming it.
 */
#include <stdlib.h>
#include <string.h>

#include "../hlo/backend_config.h"
#include "evalp.h"

static bool is_passthrough(const char *t) { return custom_call_is_annotation(t); }

static EvalValue *topk(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *os = i->ops[0]->shape, *rs = i->shape;
  if (i->nops == 1 && i->ncalled == 0 && shape_is_tuple(rs) && rs->ntuple == 2 &&
      shape_is_array(rs->tuple[0]) && rs->tuple[0]->rank >= 1) {
    /* no comparator: greatest first by the total order, as the topk op */
    HloInstr op = *i;
    op.op = HLO_TOPK;
    op.topk_k = rs->tuple[0]->dims[rs->tuple[0]->rank - 1];
    op.topk_largest = true;
    return eval_topk(ev, &op, a);
  }
  if (i->nops != 1 || i->ncalled < 1 || !shape_is_array(os) || os->rank < 1 ||
      rs->et != ET_TUPLE || rs->ntuple != 2 || !shape_is_array(rs->tuple[0]) ||
      !shape_is_array(rs->tuple[1]) || rs->tuple[0]->et != os->et ||
      rs->tuple[1]->et != ET_S32 || rs->tuple[0]->rank != os->rank) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed TopK custom-call");
    return NULL;
  }
  int64_t len = os->dims[os->rank - 1], k = rs->tuple[0]->dims[os->rank - 1];
  int64_t rows = len ? ev_elems(os) / len : 0;
  if (k > len || ev_elems(rs->tuple[0]) != rows * k || ev_elems(rs->tuple[1]) != rows * k) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "TopK k does not fit the operand");
    return NULL;
  }
  ScalarFn *f = scalar_fn_new(ev, i->called[0]);
  ElemType ets[4] = {os->et, os->et, ET_S32, ET_S32}, oet[1] = {ET_PRED};
  ElemType ets2[2] = {os->et, os->et};
  int nargs = i->called[0]->nparams;
  if (!(nargs == 4 ? scalar_fn_check(ev, i, f, 4, ets, 1, oet)
                   : scalar_fn_check(ev, i, f, 2, ets2, 1, oet))) {
    scalar_fn_free(f);
    return NULL;
  }
  EvalValue *vals = ev_array_nozero(ev, rs->tuple[0]);
  EvalValue *idxs = vals ? ev_array_nozero(ev, rs->tuple[1]) : NULL;
  int64_t *perm = idxs ? ev_scratch(ev, i, (len + 1) * 8) : NULL;
  int64_t *tmp = perm ? ev_scratch(ev, i, (len + 1) * 8) : NULL;
  bool ok = tmp != NULL;
  int eb = et_bytes(os->et);
  for (int64_t r = 0; r < rows && ok; r++) {
    const uint8_t *row = a[0]->data + r * len * eb;
    for (int64_t j = 0; j < len; j++) perm[j] = j;
    for (int64_t w = 1; w < len && ok; w *= 2) {
      for (int64_t lo = 0; lo < len && ok; lo += 2 * w) {
        int64_t mid = lo + w < len ? lo + w : len, hi = lo + 2 * w < len ? lo + 2 * w : len;
        int64_t x = lo, y = mid, o = lo;
        while (x < mid && y < hi) {
          int32_t iy = (int32_t)perm[y], ix = (int32_t)perm[x];
          const uint8_t *args[4] = {row + perm[y] * eb, row + perm[x] * eb,
                                    (const uint8_t *)&iy, (const uint8_t *)&ix};
          uint8_t less = 0;
          uint8_t *outs[1] = {&less};
          if (!scalar_fn_apply(ev, f, args, outs)) { ok = false; break; }
          tmp[o++] = less ? perm[y++] : perm[x++];
        }
        while (x < mid) tmp[o++] = perm[x++];
        while (y < hi) tmp[o++] = perm[y++];
      }
      memcpy(perm, tmp, (size_t)len * sizeof *tmp);
    }
    for (int64_t j = 0; j < k && ok; j++) {
      memcpy(vals->data + (r * k + j) * eb, row + perm[j] * eb, (size_t)eb);
      int32_t ix = (int32_t)perm[j];
      memcpy(idxs->data + (r * k + j) * 4, &ix, 4);
    }
  }
  ev_scratch_free(ev, perm, (len + 1) * 8);
  ev_scratch_free(ev, tmp, (len + 1) * 8);
  scalar_fn_free(f);
  if (!ok) {
    ev_unref(ev, vals);
    ev_unref(ev, idxs);
    return NULL;
  }
  EvalValue *el[2] = {vals, idxs};
  EvalValue *t = ev_tuple(ev, rs, 2, el);
  ev_unref(ev, vals);
  ev_unref(ev, idxs);
  return t;
}

static EvalValue *threefry(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *rs = i->shape;
  EvalValue *y0 = ev_array_nozero(ev, rs->tuple[0]);
  EvalValue *y1 = y0 ? ev_array_nozero(ev, rs->tuple[1]) : NULL;
  if (!y1) {
    ev_unref(ev, y0);
    return NULL;
  }
  int64_t n = ev_elems(rs->tuple[0]);
  for (int64_t j = 0; j < n; j++) {
    uint32_t k0, k1, x0, x1;
    memcpy(&k0, a[0]->data + 4 * j, 4);
    memcpy(&k1, a[1]->data + 4 * j, 4);
    memcpy(&x0, a[2]->data + 4 * j, 4);
    memcpy(&x1, a[3]->data + 4 * j, 4);
    ev_threefry2x32(k0, k1, &x0, &x1);
    memcpy(y0->data + 4 * j, &x0, 4);
    memcpy(y1->data + 4 * j, &x1, 4);
  }
  EvalValue *el[2] = {y0, y1};
  EvalValue *t = ev_tuple(ev, rs, 2, el);
  ev_unref(ev, y0);
  ev_unref(ev, y1);
  return t;
}

EvalValue *eval_custom_call(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const char *t = i->cc && i->cc->target ? i->cc->target : "";
  if (is_passthrough(t) && i->nops == 1 && i->ops[0]->shape->et == i->shape->et &&
      shape_is_array(i->shape) && a[0]->data &&
      a[0]->nbytes == ev_elems(i->shape) * et_bytes(i->shape->et))
    return ev_view(ev, a[0], i->shape);
  if (is_passthrough(t) && i->nops == 1 && shape_is_tuple(i->shape) &&
      shape_compatible(i->shape, i->ops[0]->shape))
    return ev_ref(a[0]);
  if (strcmp(t, "TopK") == 0) return topk(ev, i, a);
  if (strcmp(t, "SliceToDynamic") == 0) return eval_slice_to_dynamic(ev, i, a);
  if (strcmp(t, "SetBound") == 0) return eval_set_bound(ev, i, a);
  if (strcmp(t, "Qr") == 0) return eval_qr(ev, i, a);
  if (layer_norm_call(i)) return eval_onednn_layer_norm(ev, i, a);
  if (strcmp(t, "ProductOfElementaryHouseholderReflectors") == 0)
    return eval_householder_product(ev, i, a);
  if (custom_call_is_threefry(i)) return threefry(ev, i, a);
  if (libcall_target(i) != LIBCALL_NONE) return eval_libcall(ev, i, a);
  if (strncmp(t, "xla_builder.", 12) == 0 && i->ncalled == 1)
    return ev_call(ev, i->called[0], i->nops, a);
  if (strncmp(t, "xla_builder.math.", 17) == 0 && i->ncalled == 0 && i->nops == 1) {
    /* the builder's math wrappers without their body: the op itself */
    static const struct { const char *name; HloOp op; } math[] = {
      {"Acos", HLO_ACOS}, {"Acosh", HLO_ACOSH}, {"Asin", HLO_ASIN}, {"Asinh", HLO_ASINH},
      {"Atan", HLO_ATAN}, {"Atanh", HLO_ATANH}, {"Cosh", HLO_COSH}, {"Sinh", HLO_SINH},
      {"Tan", HLO_TAN}, {"Erf", HLO_ERF},
    };
    for (size_t k = 0; k < ARRAY_LEN(math); k++)
      if (strcmp(t + 17, math[k].name) == 0) {
        HloInstr op = *i;
        op.op = math[k].op;
        return eval_elementwise(ev, &op, a);
      }
  }
  if (strcmp(t, "AllocateBuffer") == 0 && i->nops == 0 && shape_is_array(i->shape))
    return ev_array(ev, i->shape);
  if (strcmp(t, "GetRngSeed") == 0 && i->nops == 0 && shape_is_array(i->shape) &&
      ev_elems(i->shape) == 1 && et_is_int(i->shape->et)) {
    EvalValue *r = ev_array(ev, i->shape);
    if (r) ev_set_s64(i->shape->et, r->data, (int64_t)ev->o.rng_seed);
    return r;
  }
  if (is_passthrough(t)) {
    /* a shard_map's markers take a global program's values to the
     * shards its body computes on, which only partitioning makes */
    ev_fail(ev, i, EVAL_ERR_UNSUPPORTED, "custom-call %s changes its operands' "
            "shapes: the shard_map of a global program, which runs once "
            "partitioned (xhloc --stage=hlo, or an artifact of xhloc)", t);
    return NULL;
  }
  char what[128];
  snprintf(what, sizeof what, "custom-call:%s", t);
  ev_unsupported(ev, i, what);
  return NULL;
}
