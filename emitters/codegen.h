/*
 * codegen.h - LLVM-C code generation of kernels, for the GPU (NVPTX, PTX
 * text) and the host (x86-64, a shared object).
 *
 * One Codegen holds one LLVM module; the thunk emitter asks it for one
 * kernel per kernel-producing instruction (a fusion after fusion-wrapper),
 * then asks for the module's text, PTX or shared object.
 *
 * Kernel parameters, in order: one pointer per array leaf of each operand of
 * the instruction (operands in order, tuple operands flattened as
 * io_shape_leaves does), then one pointer per array leaf of the
 * instruction's result, then, when the kernel asks for one
 * (LaunchDims.temp_bytes > 0), one pointer to its scratch buffer.  Each
 * operand or result pointer points at the first byte of that array, laid
 * out as lib/runtime/thunks.h says (physical layout order, et_bytes per
 * element).
 *   GPU:  a kernel (ptx .entry) `name` with those pointers as parameters
 *         (global address space), launched with the LaunchDims returned.
 *   Host: `void name(void **args, int64_t lo, int64_t hi)`, args[k] the
 *         k-th pointer; the result is split into LaunchDims.grid[0]
 *         independent work units (grid[1..2] and block are 1) and one
 *         call computes units [lo, hi).  Calling it for every unit once,
 *         in any order and on any threads, computes the whole result, the
 *         same bits whatever the split.  The pointers may be assumed not
 *         to alias (a result never shares bytes with an operand).
 *
 * Math functions come from libdevice on the GPU (linked before
 * optimization, as XLA does) and from libm on the host, where the f32 ones
 * are inline approximations instead when fast_math is set.
 *
 * An op or element type a kernel emitter does not support is an error in d
 * at that instruction's location, naming the op: never a wrong kernel.
 */
#ifndef XHLOC_CODEGEN_H
#define XHLOC_CODEGEN_H

#include "../lib/hlo/hlo.h"

typedef enum CgTarget { CG_TARGET_NVPTX, CG_TARGET_HOST } CgTarget;

typedef struct CodegenOptions {
  CgTarget target;
  const char *arch;               /* "sm_90" (default when NULL) */
  const char *libdevice;          /* path; NULL: $CUDA_HOME/nvvm/libdevice/
                                     libdevice.10.bc, CUDA_HOME defaulting
                                     to /usr/local/cuda */
  int opt_level;                  /* 0-3; codegen_options_default: 2 */
  const char *host_cpu;           /* host: "native" (default when NULL: this
                                     machine's CPU and features) or an
                                     x86-64 psABI level: "x86-64",
                                     "x86-64-v2", "x86-64-v3", "x86-64-v4" */
  bool fast_math;                 /* host only: exp, log, tanh, erf, sin, ...
                                     of f32 (and of f16/bf16, computed in
                                     f32) as inline polynomials with the
                                     error bounds of emitters/fast_math.c
                                     instead of libm calls; default true.
                                     f64 and NVPTX (libdevice) ignore it */
  bool system_linker;             /* host only: link PREFIX.host.so with
                                     `ld -shared` instead of host_link.c */
  bool host_routines;             /* host only: what the runtime has a
                                     routine for (emitters/host_routine.h)
                                     runs it instead of a kernel; default
                                     true */
  PhaseTimes *times;              /* NULL, or where the LLVM phases' wall
                                     times are added (--time-passes) */
} CodegenOptions;

void codegen_options_default(CodegenOptions *o);

typedef struct LaunchDims {
  uint32_t grid[3], block[3];
  uint32_t shmem_bytes;
  int64_t temp_bytes;             /* > 0: the kernel takes one more pointer
                                     parameter, after the result leaves: a
                                     scratch buffer of that many bytes
                                     (64-byte aligned) that it may use as it
                                     likes while it runs (sort's index
                                     arrays) */
  /* host: how the work units split the result (kernel_chain.c runs
   * kernels whose units are the same rows as one).  cg_host_range sets
   * rows (its items) and rows_per_unit; an emitter whose items are rows
   * sets row_dims: unit u computes rows [u * rows_per_unit, (u + 1) *
   * rows_per_unit), a row being an index of the first row_dims physical
   * dimensions (major to minor) of the first result leaf, in row-major
   * order.  row_dims 0: the units split the result otherwise. */
  int row_dims;
  int64_t rows, rows_per_unit;
} LaunchDims;

typedef struct Codegen Codegen;

/* NULL with a message in d when the target cannot be set up (unknown arch,
 * libdevice missing for NVPTX). */
Codegen *codegen_new(const char *module_name, const CodegenOptions *o,
                     Diag *d);
void codegen_free(Codegen *cg);

/* Whether the thunk emitter makes a routine thunk, not a kernel, of an
 * instruction that host_routine_plan accepts: the host, with
 * CodegenOptions.host_routines. */
bool codegen_host_routines(const Codegen *cg);
/* Deletes kernel `name` (and its body) from the module, as if it had never
 * been emitted: the thunk emitter's routine thunk replaced it. */
void codegen_drop_kernel(Codegen *cg, const char *name);

/* A custom-call that a kernel of its own computes (TopK, Qr,
 * ProductOfElementaryHouseholderReflectors): the thunk emitter asks
 * codegen_kernel for it like for a fusion. */
bool codegen_custom_call_kernel(const HloInstr *i);

/* Whether the kernels emitted next may get a result slice that is also an
 * operand slice (buffer assignment wrote the result over the operand, in
 * place): their host bodies then drop `noalias` from their pointers. */
void codegen_set_args_may_alias(Codegen *cg, bool may_alias);

/* Whether the kernel emitted next gets a result slice equal to the slice
 * of its operand `operand` (one array leaf each), no other operand's
 * slice overlapping it: buffer assignment wrote the result over that
 * operand in place.  A dynamic-update-slice (or a fusion whose root is
 * one) over that operand then gets the in-place kernel, which writes only
 * the update (dus_kernel.c); a scatter skips its copy of the operand
 * (scatter_kernel.c).  -1 (the default): no such operand. */
void codegen_set_in_place_operand(Codegen *cg, int operand);

/* Emits kernel `name` computing instruction i (a fusion; any other op is
 * treated as a fusion of itself).  Host: ld->grid[0] is the number of
 * work units, everything else 1. */
bool codegen_kernel(Codegen *cg, const HloInstr *i, const char *name,
                    LaunchDims *ld, Diag *d);

/* The module's LLVM IR text, before or after optimization (--stage=llvm,
 * the ir-no-opt.ll / ir-with-opt.ll dumps).  Optimizing is done once;
 * asking for the optimized text runs it if it has not run yet. */
bool codegen_llvm_ir(Codegen *cg, bool optimized, StrBuf *out, Diag *d);
/* NVPTX: the PTX text (optimizes first). */
bool codegen_ptx(Codegen *cg, StrBuf *out, Diag *d);
/* Host: the CPU the kernels are compiled for (LLVM's name, e.g.
 * "skylake-avx512" or "x86-64-v3") and, in *features, the instruction-set
 * features they may use that lib/runtime/host_cpu.h can check, comma-
 * separated (what the thunk file records).  NULL on NVPTX. */
const char *codegen_host_cpu(const Codegen *cg, const char **features);
/* Host: writes a shared object at path (optimizes first; links with the
 * system linker, `ld -shared ... -lm -lc`, or when that is missing or fails
 * with the C compiler driver, `cc -shared`). */
bool codegen_host_so(Codegen *cg, const char *path, Diag *d);

/*
 * kernel_chain.c (host only)
 */
/* The row footprint of each of a host kernel's nargs arguments (in
 * codegen_kernel's order: operand leaves, result leaves, scratch; of
 * arg_bytes bytes each), for the LaunchDims it returned: row_bytes[k] > 0
 * when work unit u touches only bytes [u * p * row_bytes[k], (u + 1) * p *
 * row_bytes[k]) of argument k (p = ld->rows_per_unit), else 0 (any unit
 * may touch any byte).  False, every entry 0, when the units are not rows
 * (ld->row_dims 0) or the target is the GPU. */
bool codegen_row_bytes(Codegen *cg, const HloInstr *i, const LaunchDims *ld, int nargs,
                       const int64_t *arg_bytes, int64_t *row_bytes);
/* A host kernel `name` that runs the already emitted kernels members[0..n)
 * one work unit at a time: for each unit of its range, every member on that
 * unit, in order.  Its arguments are the members' (nargs[k] each), one
 * after another.  The members become internal to the module, inlined into
 * it.  Equal to running each member over all units in turn only when no
 * member touches bytes that another member touches for another unit and
 * one of them writes (thunk_chain.c checks it with codegen_row_bytes). */
bool codegen_chain_kernel(Codegen *cg, const char *name, int n, const char *const *members,
                          const int *nargs, Diag *d);

#endif
