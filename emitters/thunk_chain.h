/*
 * thunk_chain.h - host kernel thunks merged into chains (thunk_chain.c):
 * consecutive kernels whose work units are the same rows, touching the
 * buffers they share row by row, become one kernel thunk whose kernel runs
 * them unit by unit (codegen_chain_kernel).
 */
#ifndef XHLOC_THUNK_CHAIN_H
#define XHLOC_THUNK_CHAIN_H

#include "../lib/runtime/thunks.h"
#include "codegen.h"

typedef struct ThunkChains ThunkChains;

ThunkChains *tchain_new(void);
void tchain_free(ThunkChains *tc);

/* Whether host kernel thunk t, to come right after `last` in its sequence,
 * may join the chain that `last` ends: its units are the same rows
 * (rows, rows_per_unit of its LaunchDims), and every byte that t and a
 * member both touch, one of them writing, is in a slice both touch row by
 * row in the same rows (rb: t's row footprints, codegen_row_bytes). */
bool tchain_fits(const ThunkChains *tc, const Thunk *last, const Thunk *t, const int64_t *rb,
                 int64_t rows, int64_t rows_per_unit);
/* The kernel name of the chain that the last kernel ends, NULL while it
 * is a lone kernel. */
const char *tchain_name(const ThunkChains *tc);
/* t joins the chain that `last` ends (tchain_fits said it may): `last`
 * becomes the chain's thunk, kernel `name` (taken when it first becomes a
 * chain), with t's arguments after its own and "+annotation" appended. */
void tchain_join(ThunkChains *tc, Thunk *last, const Thunk *t, const int64_t *rb,
                 const char *name, Arena *a);
/* Kernel thunk t, just added to its sequence, may start a chain (rb NULL:
 * its units are not rows; it starts none, and ends the open one). */
void tchain_start(ThunkChains *tc, const Thunk *t, const int64_t *rb, int64_t rows,
                  int64_t rows_per_unit);
/* The kernel of every chain of two or more members. */
bool tchain_emit(const ThunkChains *tc, Codegen *cg, Diag *d);

#endif
