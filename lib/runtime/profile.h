/*
 * profile.h - what xhlo-run --profile and --trace print from an executor's
 * profile (platform.h: ThunkProfile, TraceEvent): the per-thunk summary
 * table (profile.c) and the Chrome trace event file (trace.c).
 */
#ifndef XHLOC_PROFILE_H
#define XHLOC_PROFILE_H

#include <stdio.h>

#include "platform.h"

/* "kernel", "copy", "memset32", "while", "conditional", "gemm",
 * "convolution". */
const char *thunk_kind_name(ThunkKind k);

/* The bytes of the buffer slices one execution of t reads and writes: a
 * kernel's argument slices (each once), a copy's source and destination, a
 * memset's destination, a library call's operands and results (not its
 * workspace); 0 for a while or conditional. */
int64_t thunk_bytes(const Thunk *t);

/* Profile entry k's name: its annotation (the kernel name when it has
 * none), after its enclosing thunks' as a path, "w/body/fusion.3" ("cond",
 * "body", "branch N"). */
void profile_thunk_name(StrBuf *b, const ThunkProfile *p, int k);

/* The time entry k stands for in the summary, in ms over all runs: its
 * total, but for a while or conditional its own time alone (the total
 * less its nested thunks' totals, not below 0: reading the predicate or
 * index back, launching the nested thunks). */
double profile_own_ms(const ThunkProfile *p, int n, int k);

/* The summary (format in README.md, "xhlo-run"): a title line naming the
 * runs, the platform and its clock, a column header, one line per thunk
 * sorted by its time (profile_own_ms) descending, then a total line. */
void profile_print_summary(StrBuf *b, const ThunkProfile *p, int n, int runs,
                           const char *platform, const char *clock);

/* A Chrome trace event file (JSON object format; Perfetto and
 * chrome://tracing open it) of the traced runs: process and thread name
 * metadata, one complete event ("ph":"X") per run (cat "run") and per
 * thunk execution (cat: the thunk's kind; args: launch dimensions, bytes,
 * run), timestamps and durations in microseconds, on one track (the stream
 * on a GPU, the calling thread on the host).  process names the process
 * track.  False when writing to f fails. */
bool profile_write_trace(FILE *f, const ThunkProfile *p, int n,
                         const TraceEvent *ev, int64_t nev, int64_t dropped,
                         const char *process, const char *track);

#endif
