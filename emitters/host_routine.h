/*
 * host_routine.h - which host kernels are one of the runtime's routines
 * (lib/runtime/routine.h) instead: what XLA's CPU gives its libraries
 * rather than compiling it (host_routine.c).
 */
#ifndef XHLOC_HOST_ROUTINE_H
#define XHLOC_HOST_ROUTINE_H

#include "../lib/runtime/routine.h"

/* Whether instruction i (a fusion, or a lone op over its operands) is
 * exactly a routine, and its descriptor: a reduce that XLA's CPU hands to
 * its reduction library (hlo_reduce_is_library), of f32, over an operand
 * of i with a constant init value, whose reduced dimensions are
 * consecutive in the operand's physical order and whose result keeps the
 * other dimensions in that order (y [outer, inner] of x [outer, size,
 * inner]); or a `topk` of f32 with s32 indices over an operand of i whose
 * last dimension is minor-most, its results laid out as the operand.
 * *x_operand: which operand of i the routine reads. */
bool host_routine_plan(const HloInstr *i, RoutineDesc *out, int *x_operand);

#endif
