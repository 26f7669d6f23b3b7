/*
 * custom_call_targets.c - custom-call targets known by name, shared by the
 * interpreter (lib/eval/custom_call.c) and the passes that rewrite them.
 *
 * Annotations only annotate their operand:
 * sharding (GSPMD's Sharding and SPMD shape markers, Shardy's markers),
 * host offloading (MoveToHost, MoveToDevice, Pin, Unpin), device placement
 * and layout constraints.  On one device none of them changes a value: the
 * result is the operand (passes/annotation_remover.c).
 *
 * JAX's GPU Threefry kernel, cu_threefry2x32 (and its _ffi and ROCm
 * forms), is Threefry-2x32 with 20 rounds applied to each element
 * (passes/threefry_expander.c).
 */
#include <string.h>

#include "hlo.h"

static const char *const identity_targets[] = {
  "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
  "xla.sdy.FuncResultSharding", "xla.sdy.LocalToGlobalShape",
  "xla.sdy.GlobalToLocalShape", "xla.sdy.ShardingGroup",
  "annotate_device_placement", "MoveToHost", "MoveToDevice", "Pin", "Unpin",
  "LayoutConstraint",
};

bool custom_call_is_annotation(const char *target) {
  if (!target)
    return false;
  for (size_t k = 0; k < sizeof identity_targets / sizeof *identity_targets; k++)
    if (strcmp(target, identity_targets[k]) == 0)
      return true;
  return false;
}

/* The Threefry kernel: operands key0, key1, x0, x1 (u32, one shape,
 * JAX broadcasts the key first), result (y0, y1) = threefry2x32 of each
 * element's counter (x0, x1) under its key (k0, k1). */
bool custom_call_is_threefry(const HloInstr *i) {
  const char *t = i->cc && i->cc->target ? i->cc->target : "";
  if (strcmp(t, "cu_threefry2x32") != 0 && strcmp(t, "cu_threefry2x32_ffi") != 0 &&
      strcmp(t, "hip_threefry2x32") != 0 && strcmp(t, "hip_threefry2x32_ffi") != 0)
    return false;
  const Shape *s = i->shape;
  if (i->nops != 4 || s->et != ET_TUPLE || s->ntuple != 2) return false;
  for (int k = 0; k < 4; k++)
    if (!shape_is_array(i->ops[k]->shape) || i->ops[k]->shape->et != ET_U32 ||
        !shape_compatible(i->ops[k]->shape, i->ops[0]->shape))
      return false;
  return shape_compatible(s->tuple[0], i->ops[0]->shape) &&
         shape_compatible(s->tuple[1], i->ops[0]->shape);
}

