/*
 * thunk_emitter.h - from a scheduled, buffer-assigned module to the
 * artifact: one kernel thunk per fusion (its kernel made by codegen.h; on
 * the host, consecutive ones on the same rows may share one, thunk_chain.h,
 * and the runtime's routines replace the plain reduces and top-ks that no
 * chain took, host_routine.h), copy thunks where values must move (while
 * state, conditional results, aliased outputs), while and conditional
 * thunks with nested sequences, constants' bytes in their allocations, and
 * the parameter and output leaves.
 */
#ifndef XHLOC_THUNK_EMITTER_H
#define XHLOC_THUNK_EMITTER_H

#include "../passes/buffer_assignment.h"
#include "codegen.h"

/* original_hlo is the module's text as given (stored in the artifact).
 * NULL with an error at the instruction in d for anything unsupported. */
Artifact *thunks_emit(const HloModule *m, const BufferAssignment *ba,
                      Codegen *cg, const char *original_hlo, Diag *d);

#endif
