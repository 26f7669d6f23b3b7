/*
 * algsimp.h - private to the algebraic simplifier (algsimp.c, the driver
 * and the arithmetic rules; algsimp_shape.c, the rules for data-movement
 * ops).
 *
 * A rule looks at one instruction and returns what should replace it (an
 * existing instruction or new ones it built), or NULL.  Rules never change
 * an instruction in place.  The replacement has the same element type and
 * dimensions as the instruction; when it is an existing instruction it also
 * has the same layout (as_is checks that).
 */
#ifndef XHLOC_ALGSIMP_H
#define XHLOC_ALGSIMP_H

#include "../lib/hlo/ir_edit.h"
#include "passes.h"

typedef struct Simp {
  IrEdit *e;
  HloComp *c;
  Arena *a;
} Simp;

/* x when it can stand for i as it is (same shape and layout), else NULL. */
HloInstr *as_is(const HloInstr *i, HloInstr *x);
/* A copy of i with new operands (and i's shape). */
HloInstr *with_operands(Simp *s, const HloInstr *i, int n, HloInstr *const *ops);
/* An int64 array copy in the arena. */
int64_t *dup_dims(Simp *s, const int64_t *v, int n);

/* algsimp_shape.c: reshape, transpose, broadcast, bitcast, slice,
 * concatenate, pad, reverse, dynamic-slice, dynamic-update-slice. */
HloInstr *simp_shape_op(Simp *s, HloInstr *i);

#endif
