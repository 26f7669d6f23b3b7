/*
 * match_util.h - small HLO pattern helpers the rewriting passes share
 * (gemm-rewriter, conv-rewriter): constants seen through broadcasts, the
 * other operand of a binary op, an instruction's only user.
 */
#ifndef XHLOC_MATCH_UTIL_H
#define XHLOC_MATCH_UTIL_H

#include "../lib/hlo/ir_edit.h"

/* x is a float constant with one element, possibly broadcast: its value. */
bool match_scalar_constant(const HloInstr *x, double *v);
/* The operand of the binary op u that is not x (NULL when x is neither). */
HloInstr *match_other_operand(const HloInstr *u, const HloInstr *x);
/* x's single user, when it has exactly one and is not its computation's
 * root; else NULL. */
HloInstr *match_sole_user(IrEdit *e, HloInstr *x);

#endif
