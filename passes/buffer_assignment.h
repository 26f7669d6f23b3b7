/*
 * buffer_assignment.h - the sequential schedule and buffer assignment of a
 * module that has been through layout assignment, fusion, fusion-wrapper and
 * copy-insertion (passes/pipeline.c: the backend preparation).
 *
 * Values.  A value is one array leaf of an instruction's result (leaf k is
 * the k-th leaf in io_shape_leaves order: tuples flattened, arrays and
 * tokens; tokens have no buffer).  Instructions that only forward or
 * regroup values define none of their own and alias their operand's:
 *   tuple, get-tuple-element, bitcast, optimization-barrier (and the
 *   parameters of nested computations, below).
 * Every other instruction defines its leaves.
 *
 * Allocations (XLA's rules, simplified):
 *   - each entry parameter leaf: its own ALLOC_PARAMETER allocation (which
 *     a donated parameter's output may share, below);
 *   - each constant: its own ALLOC_CONSTANT allocation (identical array
 *     constants share one);
 *   - the entry result leaves: a parameter or constant value stays where it
 *     is (its allocation gets ALLOC_MAYBE_LIVE_OUT); a result a donated
 *     parameter holds is in that parameter's allocation; every other result
 *     is packed with the temps, live from its definition to the end (the
 *     temp allocation then gets ALLOC_MAYBE_LIVE_OUT: xhlo-run reads each
 *     result from its slice, so results need no allocations of their own);
 *   - everything else: slices of one ALLOC_TEMP allocation, with offsets
 *     that reuse the space of values that are dead by then (liveness over
 *     the sequential schedule), aligned to 64 bytes (library workspaces to
 *     256), packed by a global best fit.
 *   - Sharing (buffer_sharing.c): values that take turns in one buffer
 *     form a group with one slice: a result written in place over an
 *     operand that dies at it, a while's state and its initial value, its
 *     body's new state, a conditional's result and its branches' roots, a
 *     donated parameter and its aliased output.  A group goes where its
 *     parameter goes, else into the temp allocation.
 *   - while: its leaves are the loop state; the parameters of its condition
 *     and body alias them.  Copy-insertion makes every body root leaf either
 *     the body parameter's same leaf (passed through) or a value computed in
 *     the body, so the thunk emitter copies init -> state before the loop
 *     and body root -> state after each body run where their slices differ
 *     (where sharing did not make them one), without hazards.
 *   - conditional: its leaves are own buffers (or its branches' roots); the
 *     parameter of branch k aliases operand k+1; the thunk emitter copies
 *     each branch's root leaves into the conditional's leaves where they
 *     differ.
 *   Values of nested computations never share space with values that are
 *   live across the instruction that calls them.
 *
 * The schedule of each computation is its instruction order (a topological
 * order; the IR keeps it so).  A while schedules its condition then its
 * body in place; a conditional its branches one after another; each
 * computation is scheduled from one call site only (flatten-call-graph), and
 * call / async ops are refused (inline them first).
 *
 * Allocation order: entry parameter leaves (by parameter, then leaf), then
 * constants (schedule order), then the one preallocated temp allocation.
 * A parameter or constant allocation that is also a result gets
 * ALLOC_MAYBE_LIVE_OUT.  Deterministic.
 */
#ifndef XHLOC_BUFFER_ASSIGNMENT_H
#define XHLOC_BUFFER_ASSIGNMENT_H

#include "../lib/hlo/hlo.h"
#include "../lib/runtime/thunks.h"

typedef struct BufferAssignment BufferAssignment;

/* Assigns buffers for every computation reachable from the entry.  NULL with
 * an error (at the instruction) in d when the module cannot be assigned
 * (e.g. an instruction kind it does not know how to place). */
BufferAssignment *buffer_assign(const HloModule *m, Diag *d);
void buffer_assignment_free(BufferAssignment *ba);

/* The allocations, in index order (what Artifact.allocs copies). */
int ba_num_allocs(const BufferAssignment *ba);
const BufAlloc *ba_alloc(const BufferAssignment *ba, int k);

/* Where leaf `leaf` of i's result lives.  False when it has no buffer (a
 * token, or an instruction not reached from the entry). */
bool ba_slice(const BufferAssignment *ba, const HloInstr *i, int leaf,
              BufSlice *out);

/* Checks the assignment's invariant: every value inside its allocation, and
 * no two values that are live at the same time share a byte.  False with
 * the pair in d (a bug in buffer_assign; tests run it). */
bool ba_verify(const BufferAssignment *ba, Diag *d);

/* XLA's buffer-assignment text (BufferAssignment::ToString): the
 * "allocation N: size S, ...:" blocks with their " value: <id name{index}>
 * (size=..,offset=..): shape" lines, "Total bytes used: N (..)", then
 * BufferAssignment::StatsString ("BufferAssignment stats:" with sizes as
 * XLA's HumanReadableNumBytes writes them: "64B", "3.0KiB", "2.00MiB").
 * XLA's "Used values:" list (positions and uses) is left out. */
void ba_print(StrBuf *b, const BufferAssignment *ba);

/* The step of the schedule at which i runs (its time on the timeline that
 * liveness uses), -1 when it is not scheduled. */
int ba_time_of(const BufferAssignment *ba, const HloInstr *i);
/* The live range of leaf `leaf` of i (closed, in steps) and its size;
 * *fixed when it lives in a parameter or constant allocation (live for
 * the whole program).  False when it has no buffer. */
bool ba_live_range(const BufferAssignment *ba, const HloInstr *i, int leaf,
                   int *start, int *end, int64_t *size, bool *fixed);
/* The sum of the allocations' sizes ("Total bytes used"). */
int64_t ba_total_bytes(const BufferAssignment *ba);

/*
 * memory_report.c
 */
/* A buffer live at the peak: the value that holds it then. */
typedef struct BaLiveBuffer {
  const HloInstr *def;
  int leaf;
  int64_t size;
  bool temp;                      /* in the temp allocation */
} BaLiveBuffer;
/* The buffers of output and temp groups live at the peak (*at_time), the
 * largest first; *out is malloc'ed.  Returns their count. */
int ba_live_at_peak(const BufferAssignment *ba, int *at_time,
                    BaLiveBuffer **out);
/* The most bytes live at once over the schedule (parameter and constant
 * allocations throughout, output and temp values over their live ranges)
 * and, in *at_time when not NULL, the schedule step where it is first
 * reached. */
int64_t ba_peak_bytes(const BufferAssignment *ba, int *at_time);
/* The memory usage report (--stage=memory, *.memory-usage-report.txt):
 * "Total bytes used", the peak of live bytes and the instruction where it
 * occurs, the totals by kind (parameters, constants, outputs, temp, library
 * workspaces, fragmentation), then the buffers live at the peak, largest
 * first, each with its kind, instruction, shape and source line (metadata);
 * at most max_buffers of them (0: all). */
void ba_print_memory_report(StrBuf *b, const BufferAssignment *ba,
                            int max_buffers);

#endif
