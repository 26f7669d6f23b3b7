/*
 * cg_internal.h - the internal API of the LLVM-C code generator, shared by
 * the kernel emitters (loop_kernel.c, reduction_kernel.c, dot_kernel.c) and
 * codegen.c: the Codegen state, kernel entry helpers for both targets, GPU
 * thread-index intrinsics, element loads and stores through layouts, loops,
 * math calls, and the elemental emitter.
 *
 * Conventions:
 * - Indices are i64 LLVM values.  A multi-index has one entry per logical
 *   dimension of the shape (dimension order, not layout order).
 * - A value in a register has the element type's register type
 *   (cg_reg_type): pred is i1, integers iN of their width (s4 is i4;
 *   signedness comes from the ElemType), f16 half, bf16 bfloat, f32 float,
 *   f64 double, the f8 types i8 and f4e2m1fn i4 (their encodings), c64
 *   <2 x float> and c128 <2 x double> (real, imaginary).  In
 *   memory pred and the sub-byte types take one byte each (cg_mem_type i8,
 *   value in the low bits); loads and stores convert.
 * - Array pointers are in the global address space (CG_AS_GLOBAL: 1 on
 *   NVPTX, 0 on the host); cg_ptr_type gives that pointer type.
 * - Every function that can fail returns NULL / false with an error in d at
 *   the offending instruction's location, naming the op.
 */
#ifndef XHLOC_CG_INTERNAL_H
#define XHLOC_CG_INTERNAL_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "../lib/analysis/indexing.h"
#include "../lib/analysis/row_norm.h"
#include "codegen.h"

struct Codegen {
  CodegenOptions opts;
  char *arch;                     /* "sm_90"; host: the host cpu name */
  char *host_features;            /* host: checkable features (host_cpu.h) */
  char *libdevice_path;           /* NVPTX */
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTargetMachineRef tm;
  bool is_gpu;
  bool optimized;                 /* passes have run (module is final) */
  bool args_may_alias;            /* the kernel being emitted writes a
                                     result over an operand (no noalias) */
  int in_place_operand;           /* the kernel being emitted writes its
                                     result over the bytes of this
                                     operand (codegen_set_in_place_operand);
                                     -1: none */
  int nvector;                    /* host kernels that want LLVM's loop
                                     vectorizer and unroller (not
                                     CgKernel.scalar) */
  HashMap vector_fns;             /* their functions, by LLVM's name of
                                     them (codegen_drop_kernel) */
  int nglobals;                   /* counter for unique global names */
  AffCtx *aff;                    /* indexing maps of this module's kernels */
};

/* Address spaces on NVPTX (0 on the host for all of them). */
enum { CG_AS_GENERIC = 0, CG_AS_GLOBAL = 1, CG_AS_SHARED = 3, CG_AS_CONST = 4 };

/*
 * llvm_util.c: types, constants, small IR helpers
 */
/* pred, ints s2..u64, f16 bf16 f32 f64, the f8 types, f4e2m1fn, c64 and
 * c128. */
bool cg_et_supported(ElemType et);
/* The floats of 8 bits or fewer (f8*, f4e2m1fn): no LLVM float type; their
 * registers are iN holding the encoding (elemental_fp.c decodes and encodes
 * them). */
bool cg_et_is_bitfloat(ElemType et);
LLVMTypeRef cg_reg_type(Codegen *cg, ElemType et);
/* One byte for pred and the sub-byte types (s2 s4 u2 u4 f4e2m1fn), whose
 * value is in the low bits, the upper bits zero, as in lib/hlo literals. */
LLVMTypeRef cg_mem_type(Codegen *cg, ElemType et);
/* A value loaded as cg_mem_type to its register type, and back. */
LLVMValueRef cg_from_mem(Codegen *cg, ElemType et, LLVMValueRef v);
LLVMValueRef cg_to_mem(Codegen *cg, ElemType et, LLVMValueRef v);
LLVMTypeRef cg_ptr_type(Codegen *cg);    /* pointer in CG_AS_GLOBAL */
LLVMTypeRef cg_i64(Codegen *cg);
LLVMTypeRef cg_i32(Codegen *cg);
LLVMValueRef cg_const_i64(Codegen *cg, int64_t v);
LLVMValueRef cg_const_i32(Codegen *cg, int32_t v);
/* Element k (row-major) of a literal as a register-typed constant. */
LLVMValueRef cg_const_literal_elem(Codegen *cg, const Literal *l, int64_t k);
/* A register-typed constant of et from a double (floats) / int64 (ints, pred). */
LLVMValueRef cg_const_f(Codegen *cg, ElemType et, double v);
LLVMValueRef cg_const_int(Codegen *cg, ElemType et, int64_t v);

/* Physical linear index of a multi-index of s (through minor_to_major). */
LLVMValueRef cg_linear_index(Codegen *cg, const Shape *s,
                             LLVMValueRef const *idx);
/* Writes into idx[dsel[j]] the row-major digits of `lin` over the dims
 * dsel[0..nd) (major to minor) of shape dims `dims`; a dim of size 1
 * gets 0. */
void cg_split_index(Codegen *cg, LLVMValueRef lin, int nd, const int *dsel,
                    const int64_t *dims, LLVMValueRef *idx);
/* The multi-index (s->rank values) of a physical linear index. */
void cg_delinearize(Codegen *cg, const Shape *s, LLVMValueRef linear,
                    LLVMValueRef *idx);
/* Pointer to the element at physical linear index `linear` of an array of
 * s->et based at `base`. */
LLVMValueRef cg_elem_ptr(Codegen *cg, LLVMValueRef base, ElemType et,
                         LLVMValueRef linear);
/* Load / store one element (register-typed value) at a multi-index. */
LLVMValueRef cg_load_elem(Codegen *cg, LLVMValueRef base, const Shape *s,
                          LLVMValueRef const *idx);
void cg_store_elem(Codegen *cg, LLVMValueRef base, const Shape *s,
                   LLVMValueRef const *idx, LLVMValueRef v);
/* Same at a physical linear index. */
LLVMValueRef cg_load_linear(Codegen *cg, LLVMValueRef base, ElemType et,
                            LLVMValueRef linear);
void cg_store_linear(Codegen *cg, LLVMValueRef base, ElemType et,
                     LLVMValueRef linear, LLVMValueRef v);

/* Calls intrinsic `name` (e.g. "llvm.nvvm.read.ptx.sreg.tid.x",
 * "llvm.nvvm.shfl.sync.down.f32"), declaring it with the given type when
 * the module does not have it yet. */
LLVMValueRef cg_call_named(Codegen *cg, const char *name, LLVMTypeRef ret,
                           int nargs, LLVMTypeRef const *argtys,
                           LLVMValueRef const *args);

/* A counted loop: for (iv = start; iv < end; iv += step), all i64.
 * cg_loop_begin leaves the builder in the body and returns iv;
 * cg_loop_end closes the body (the builder may be anywhere in it by then)
 * and leaves the builder after the loop. */
typedef struct CgLoop {
  LLVMBasicBlockRef header, body, exit;
  LLVMValueRef iv, step;
} CgLoop;
LLVMValueRef cg_loop_begin(Codegen *cg, CgLoop *l, LLVMValueRef start,
                           LLVMValueRef end, LLVMValueRef step,
                           const char *name);
void cg_loop_end(Codegen *cg, CgLoop *l);

/*
 * loop_hints.c: loops ended with hints for LLVM's loop passes (host only;
 * on the GPU they are cg_loop_end)
 */
enum {
  CG_LOOP_NO_VECTORIZE = 1,       /* llvm.loop vectorize.width 1 and
                                     interleave.count 1 */
  CG_LOOP_NO_UNROLL = 2,          /* llvm.loop unroll.disable (which also
                                     keeps the vectorizer from interleaving) */
};
/* cg_loop_end with the hints of `flags` on the loop's back edge. */
void cg_loop_end_hinted(Codegen *cg, CgLoop *l, unsigned flags);
/* A loop LLVM must not vectorize, interleave or unroll: a short one (a few
 * iterations, where a vector body, its run-time checks and its remainder
 * loop cost compile time and gain nothing) or one whose iterations depend
 * on each other (a selection, a merge). */
void cg_loop_end_scalar(Codegen *cg, CgLoop *l);

/*
 * llvm_util.c: GPU helpers (NVPTX only)
 */
/* Special registers as i32: "tid.x", "ntid.x", "ctaid.x", "nctaid.x", ...
 * (llvm.nvvm.read.ptx.sreg.<reg>). */
LLVMValueRef cg_sreg(Codegen *cg, const char *reg);
void cg_barrier(Codegen *cg);            /* __syncthreads (llvm.nvvm.barrier0) */
/* A module-level shared-memory array of n elements of type t (addrspace 3),
 * returned as its global (a pointer in addrspace 3). */
LLVMValueRef cg_shared_array(Codegen *cg, LLVMTypeRef t, int64_t n,
                             const char *name);
/* The value of v in lane (lane id ^ lanemask) of the warp
 * (shfl.sync.bfly, full mask: all 32 lanes must execute it), for any
 * register type: f32 directly, other types as one or two 32-bit pieces. */
LLVMValueRef cg_shfl_bfly(Codegen *cg, LLVMValueRef v, int lanemask);

/*
 * codegen.c: kernel entry
 */
typedef struct CgKernel {
  Codegen *cg;
  const HloInstr *instr;          /* the kernel's instruction (fusion or op) */
  LLVMValueRef fn;
  int nin, nout;                  /* array leaves of operands / of the result */
  LLVMValueRef *in;               /* nin pointers (CG_AS_GLOBAL), operand leaves */
  LLVMValueRef *out;              /* nout pointers, result leaves */
  const Shape **in_shapes, **out_shapes; /* the leaf shapes */
  LLVMValueRef lo, hi;            /* host: the work units [lo, hi) this call
                                     computes (i64); NULL on NVPTX */
  LLVMValueRef temp;              /* cg_kernel_begin_temp: the scratch
                                     buffer's pointer (CG_AS_GLOBAL) */
  bool scalar;                    /* set by the emitter: every loop of the
                                     kernel is a cg_loop_end_scalar one (or
                                     a memcpy), so LLVM's loop vectorizer
                                     and unroller have nothing to do in it;
                                     a host module of such kernels only is
                                     optimized without them (codegen.c) */
} CgKernel;

/* Creates the kernel function `name` for instr with codegen.h's parameter
 * convention (NVPTX: a ptx kernel of pointer parameters; host: the
 * exported `void name(void **args, int64_t lo, int64_t hi)` calling an
 * internal `name.body(noalias ptr..., i64 lo, i64 hi)`, which is where the
 * builder is left), positions the builder in its entry block and fills k.  Fails (error at instr->loc) when
 * a leaf is not an array of a supported element type. */
bool cg_kernel_begin(Codegen *cg, const HloInstr *instr, const char *name,
                     CgKernel *k, Diag *d);
/* cg_kernel_begin for a kernel that takes a scratch buffer after its
 * result leaves (k->temp); the emitter sets ld->temp_bytes to its size. */
bool cg_kernel_begin_temp(Codegen *cg, const HloInstr *instr, const char *name,
                          CgKernel *k, Diag *d);
/* NVPTX: the kernel is launched with at most `threads` threads per block
 * (.maxntid), so that ptxas keeps its registers within what a block of
 * that many may use (64 each for 1024). */
void cg_kernel_max_threads(CgKernel *k, unsigned threads);
/* Emits `ret void` at the builder's position, counts a kernel that is not
 * k->scalar in cg->nvector and frees k's arrays. */
void cg_kernel_end(CgKernel *k);

/* Host: splits `total` independent items of about `cost` scalar
 * operations each into work units of at least CG_HOST_GRAIN operations
 * (one unit when the whole is small), sets ld->grid[0] to the number of
 * units and emits *start, *end: the items of this call's units
 * [k->lo, k->hi).  Every item is computed by exactly one unit, so results
 * do not depend on how units are spread over threads.  Records total and
 * the items per unit in ld->rows and ld->rows_per_unit. */
enum { CG_HOST_GRAIN = 32768 };
void cg_host_range(CgKernel *k, int64_t total, int64_t cost, LaunchDims *ld,
                   LLVMValueRef *start, LLVMValueRef *end);

/* The fusion computation of instr (called[0] of a fusion), else NULL. */
const HloComp *cg_fusion_comp(const HloInstr *instr);

/*
 * elemental.c: the elemental emitter
 *
 * For a fusion computation `comp` whose parameters are read from the
 * kernel's operand leaves, or for a single instruction `single` (comp NULL)
 * whose operands are read from the kernel's operand leaves, emits the value
 * of an instruction (one of comp, or single itself) at a multi-index of its
 * output.  Values already emitted for the same instruction at the same index
 * values (pointer-identical LLVMValueRefs) are reused while the builder is
 * in a block they dominate.
 */
typedef struct CgElemental CgElemental;

CgElemental *cg_elemental_new(Codegen *cg, const HloComp *comp,
                              const HloInstr *single,
                              LLVMValueRef const *in_leaf_ptrs, Diag *d);
void cg_elemental_free(CgElemental *e);
/* The value of `instr` at idx (instr's rank entries; NULL for rank 0).
 * `instr` must be an array-shaped instruction of the computation (a tuple
 * root's element, a reduce's operand, ...).  NULL on error (in d). */
LLVMValueRef cg_elemental_emit(CgElemental *e, const HloInstr *instr,
                               LLVMValueRef const *idx);
/* Forget cached values (call after moving to a block not dominated by the
 * block where earlier values were emitted, e.g. after a loop). */
void cg_elemental_clear_cache(CgElemental *e);
/* The results of map m (no symbols: false otherwise) at the dimension
 * values dims (i64), into out (m->nresults values). */
bool cg_emit_map_results(Codegen *cg, const IndexingMap *m, LLVMValueRef const *dims,
                         LLVMValueRef *out);
/* From now on `instr` has the value v at every index (the normalization
 * kernel's row results: a reduce computed once for the thread's row).  The
 * caches do not forget it; v must dominate every later use. */
void cg_elemental_bind(CgElemental *e, const HloInstr *instr, LLVMValueRef v);

/* Applies a scalar computation (a reducer's to_apply) to register-typed
 * scalar values args (one per parameter); writes one value per result leaf
 * (a tuple root gives several) into outs.  Errors at the computation's
 * instructions. */
bool cg_emit_scalar_comp(Codegen *cg, const HloComp *comp, int nargs,
                         LLVMValueRef const *args, LLVMValueRef *outs,
                         Diag *d);
/* Cache marks: values emitted after cg_elemental_cache_mark are forgotten
 * by cg_elemental_cache_reset (after emitting in a branch whose block does
 * not dominate what follows). */
int cg_elemental_cache_mark(const CgElemental *e);
void cg_elemental_cache_reset(CgElemental *e, int mark);

/*
 * elemental_gather.c (c3): gather and dynamic-update-slice of the
 * elemental emitter (called by elemental.c), and index helpers
 */
LLVMValueRef cg_elemental_gather(CgElemental *e, Codegen *cg, Diag *d,
                                 const HloInstr *x, LLVMValueRef const *idx);
LLVMValueRef cg_elemental_dus(CgElemental *e, Codegen *cg, Diag *d,
                              const HloInstr *x, LLVMValueRef const *idx);
/* elemental_window.c (rw): reduce-window of the elemental emitter (called
 * by elemental.c); result `which` of a variadic one. */
LLVMValueRef cg_elemental_reduce_window(CgElemental *e, Codegen *cg, Diag *d,
                                        const HloInstr *x, int which,
                                        LLVMValueRef const *idx);
/* elemental_sas.c: select-and-scatter of the elemental emitter (called by
 * elemental.c), the output element at idx. */
LLVMValueRef cg_elemental_select_and_scatter(CgElemental *e, Codegen *cg, Diag *d,
                                             const HloInstr *x,
                                             LLVMValueRef const *idx);
/* An integer index value of type et as i64 (u64 over INT64_MAX saturates,
 * as lib/eval's ev_get_index). */
LLVMValueRef cg_index_to_i64(Codegen *cg, ElemType et, LLVMValueRef v);
/* v (i64) clamped to [lo, hi], signed. */
LLVMValueRef cg_clamp_i64(Codegen *cg, LLVMValueRef v, int64_t lo, int64_t hi);

/*
 * Kernel emitters, dispatched by codegen_kernel on the fusion's hero (the
 * root through tuple and bitcast).  Each creates the kernel with
 * cg_kernel_begin and fills ld (host: all 1).
 */
/* loop_kernel.c: any hero that is not a reduce or a dot. */
bool cg_emit_loop_kernel(Codegen *cg, const HloInstr *instr, const char *name,
                         LaunchDims *ld, Diag *d);
/* reduction_kernel.c (c2): hero is a reduce. */
bool cg_emit_reduction_kernel(Codegen *cg, const HloInstr *instr,
                              const HloInstr *hero, const char *name,
                              LaunchDims *ld, Diag *d);
/* dot_kernel.c (c2): hero is a dot. */
bool cg_emit_dot_kernel(Codegen *cg, const HloInstr *instr,
                        const HloInstr *hero, const char *name,
                        LaunchDims *ld, Diag *d);
/* conv_kernel.c (c4): hero is a convolution (direct convolution). */
bool cg_emit_conv_kernel(Codegen *cg, const HloInstr *instr,
                         const HloInstr *hero, const char *name,
                         LaunchDims *ld, Diag *d);
/* scatter_kernel.c (c3): hero is a scatter (a lone fusion). */
bool cg_emit_scatter_kernel(Codegen *cg, const HloInstr *instr,
                            const HloInstr *hero, const char *name,
                            LaunchDims *ld, Diag *d);

/* dus_kernel.c, shared with scatter_kernel.c: whether a and b are arrays
 * of one element type with the same bytes for the same elements (equal
 * dimensions in the same physical order); the uses of x in c (operand
 * slots that name it; removed instructions, whose parent is NULL, do not
 * count). */
bool cg_same_bytes(const Shape *a, const Shape *b);
int cg_uses(const HloComp *c, const HloInstr *x);
/* dus_kernel.c: the dynamic-update-slice of instr (instr itself, or its
 * fusion's root through bitcasts) when the in-place kernel can compute
 * instr whose result is written over operand `operand`, else NULL. */
const HloInstr *cg_dus_in_place(const HloInstr *instr, int operand);
/* dus_kernel.c: the in-place kernel of instr, whose dynamic-update-slice
 * (cg_dus_in_place) is x: writes the update only, never reads the
 * operand. */
bool cg_emit_dus_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *x,
                        const char *name, LaunchDims *ld, Diag *d);

/* sort_kernel.c: hero is a sort (a lone fusion).  Host: a stable merge
 * sort per row; GPU: sort_kernel_gpu.c. */
bool cg_emit_sort_kernel(Codegen *cg, const HloInstr *instr,
                         const HloInstr *hero, const char *name,
                         LaunchDims *ld, Diag *d);

/* sort_kernel.c: rows of a sort (1-D slices along its dimension) and its
 * comparator, shared by the sort and top-k emitters. */
enum { CG_SORT_MAX_OPS = 16 };
typedef struct CgSortPlan {
  const HloInstr *x;              /* the sort */
  int n;                          /* operands (= results) */
  int dim;                        /* the sort dimension */
  int64_t len, rows;              /* row length; number of rows */
  int in_leaf[CG_SORT_MAX_OPS];   /* kernel operand leaf of operand k */
  const Shape *in[CG_SORT_MAX_OPS], *out[CG_SORT_MAX_OPS];
} CgSortPlan;
/* Checks sort x, the hero of kernel instruction instr, and fills p. */
bool cg_sort_plan(const HloInstr *instr, const HloInstr *x, CgSortPlan *p,
                  Diag *d);
/* Physical stride (elements) of dimension dim of s. */
int64_t cg_dim_stride(const Shape *s, int dim);
/* Physical linear index of element 0 of row `row` (i64, row-major over the
 * dimensions other than dim) of s. */
LLVMValueRef cg_row_base(Codegen *cg, const Shape *s, int dim,
                         LLVMValueRef row);
/* An alloca of type t in the current function's entry block. */
LLVMValueRef cg_var(Codegen *cg, LLVMTypeRef t, const char *name);
LLVMValueRef cg_min_i64(Codegen *cg, LLVMValueRef a, LLVMValueRef b);
/* Where a row's operand values are read: element pos of operand k at
 * ptr[k][base[k] + pos * stride[k]] (the operands, or copies of the row). */
typedef struct CgSortSrc {
  LLVMValueRef ptr[CG_SORT_MAX_OPS], base[CG_SORT_MAX_OPS];
  int64_t stride[CG_SORT_MAX_OPS];
} CgSortSrc;
/* The operands' row `row` as a source. */
void cg_sort_src(Codegen *cg, const CgSortPlan *p, const CgKernel *k,
                 LLVMValueRef row, CgSortSrc *src);
/* Row bases of every result. */
void cg_sort_out_bases(Codegen *cg, const CgSortPlan *p, LLVMValueRef row,
                       LLVMValueRef *out_base);
/* The n operand values at row position pos (i64). */
void cg_sort_load(Codegen *cg, const CgSortPlan *p, const CgSortSrc *src,
                  LLVMValueRef pos, LLVMValueRef *vals);
/* The comparator on (xv, yv): true (i1) when x goes before y. */
LLVMValueRef cg_sort_less(Codegen *cg, const CgSortPlan *p,
                          LLVMValueRef const *xv, LLVMValueRef const *yv,
                          Diag *d);
/* For j in [start, end) step step: result_k[j] = operand_k[perm[j]], perm
 * an i32 array (any address space). */
void cg_sort_gather(Codegen *cg, const CgSortPlan *p, const CgKernel *k,
                    const CgSortSrc *src, LLVMValueRef const *out_base,
                    LLVMValueRef perm, LLVMValueRef start, LLVMValueRef end,
                    LLVMValueRef step);
/* sort_kernel_gpu.c: the GPU sort of a checked plan. */
bool cg_emit_sort_kernel_gpu(Codegen *cg, const HloInstr *instr,
                             const CgSortPlan *p, const char *name,
                             LaunchDims *ld, Diag *d);
/* topk_kernel.c: hero is a topk op or a custom-call "TopK". */
bool cg_is_topk(const HloInstr *i);
bool cg_emit_topk_kernel(Codegen *cg, const HloInstr *instr,
                         const HloInstr *hero, const char *name,
                         LaunchDims *ld, Diag *d);
/* linalg_kernel.c: hero is a cholesky, triangular-solve, or a custom-call
 * "Qr" or "ProductOfElementaryHouseholderReflectors" (cg_is_linalg). */
bool cg_is_linalg(const HloInstr *i);
bool cg_emit_linalg_kernel(Codegen *cg, const HloInstr *instr,
                           const HloInstr *hero, const char *name,
                           LaunchDims *ld, Diag *d);
/* fft_kernel.c: hero is an fft. */
bool cg_emit_fft_kernel(Codegen *cg, const HloInstr *instr,
                        const HloInstr *hero, const char *name,
                        LaunchDims *ld, Diag *d);
/* rng_kernel.c: hero is a rng-bit-generator (the root of a lone fusion). */
bool cg_emit_rng_kernel(Codegen *cg, const HloInstr *instr,
                        const HloInstr *hero, const char *name,
                        LaunchDims *ld, Diag *d);
/* rng_state_kernel.c: an rng-get-and-update-state, its counter in a
 * global of the kernel file. */
bool cg_emit_rng_state_kernel(Codegen *cg, const HloInstr *instr, const char *name,
                              LaunchDims *ld, Diag *d);

/* norm_kernel.c, GPU only: a fusion that row_norm_analyze accepts
 * (softmax, layer norm, RMS norm with prologue and epilogue; its rows in
 * rn), emitted as one row per block or warp in one pass over HBM. */
bool cg_is_norm_fusion(Codegen *cg, const HloInstr *instr, RowNorm *rn);
bool cg_emit_norm_kernel(Codegen *cg, const HloInstr *instr, const RowNorm *rn,
                         const char *name, LaunchDims *ld, Diag *d);

/* transpose_kernel.c (c5), GPU only: the hero of a fusion the tiled
 * transpose kernel takes (a transpose or layout-changing copy swapping the
 * minor-most physical dimension, only elementwise consumers after it, one
 * output), else NULL. */
const HloInstr *cg_transpose_hero(const HloInstr *instr);
bool cg_emit_transpose_kernel(Codegen *cg, const HloInstr *instr,
                              const char *name, LaunchDims *ld, Diag *d);

/*
 * elemental_math.c: scalar math, shared with the kernel emitters
 */
/* A libm / libdevice function of one or two float args of type et (f32 or
 * f64; "exp", "log1p", "atan2", "pow", ...): __nv_expf on NVPTX, expf on
 * the host. */
LLVMValueRef cg_math_call(Codegen *cg, const char *fn, ElemType et,
                          int nargs, LLVMValueRef const *args);
/*
 * fast_math.c: branch-free f32 approximations for the host (fast_math)
 */
/* op (exp, expm1, log, log1p, tanh, logistic, erf, sin, cos) of an f32
 * value x, as plain IR without calls; NULL for any other op.  The error
 * bound of each is in fast_math.c. */
LLVMValueRef cg_fast_math(Codegen *cg, HloOp op, LLVMValueRef x);

/* XLA's max / min of two register values (floats: NaN propagates). */
LLVMValueRef cg_emit_max(Codegen *cg, ElemType et, LLVMValueRef a,
                         LLVMValueRef b);
LLVMValueRef cg_emit_min(Codegen *cg, ElemType et, LLVMValueRef a,
                         LLVMValueRef b);
/* Float ops on values of float type et (f16/bf16 computed in f32):
 * unary or binary elementwise op (NULL when op is none of them), clamp,
 * compare (not total order). */
LLVMValueRef cg_float_op(Codegen *cg, HloOp op, ElemType et, int n,
                         LLVMValueRef const *v);
LLVMValueRef cg_float_clamp(Codegen *cg, ElemType et, LLVMValueRef lo,
                            LLVMValueRef x, LLVMValueRef hi);
LLVMValueRef cg_float_compare(Codegen *cg, ElemType et, CmpDir dir,
                              LLVMValueRef x, LLVMValueRef y);
/* XLA's convert of a register value from one element type to another
 * (float->int saturating with NaN -> 0, bf16 rounding to nearest even). */
LLVMValueRef cg_emit_convert(Codegen *cg, ElemType from, ElemType to,
                             LLVMValueRef v);
/*
 * elemental_fp.c: float operations on the bits
 */
/* reduce-precision of a register value of float type et to dst_e exponent
 * and dst_m mantissa bits, in et's own format (fp_reduce.c). */
LLVMValueRef cg_emit_reduce_precision(Codegen *cg, ElemType et, LLVMValueRef v,
                                      int dst_e, int dst_m);
/* stochastic-convert of x (the float) with random bits r, as lib/eval
 * computes it; NULL with an error for types it does not take. */
LLVMValueRef cg_emit_stochastic_convert(Codegen *cg, const HloInstr *i, LLVMValueRef x,
                                        LLVMValueRef r, Diag *d);
/* A bitfloat register value (cg_et_is_bitfloat) as the f32 it encodes. */
LLVMValueRef cg_bitfloat_to_f32(Codegen *cg, ElemType et, LLVMValueRef v);
/* An f32 or f64 value encoded as bitfloat type et (one rounding, fp.c's
 * rules). */
LLVMValueRef cg_bitfloat_from_double(Codegen *cg, ElemType et, LLVMValueRef x);

/*
 * elemental_complex.c: c64 / c128 elementwise ops
 */
/* Op `op` of i (operand types in, result type out) on register values v;
 * NULL when the op is not one of the complex ops supported. */
LLVMValueRef cg_complex_op(Codegen *cg, const HloInstr *i, LLVMValueRef const *v);
/* x * y and x / y (Smith's method) of complex registers of type ct. */
LLVMValueRef cg_complex_mul(Codegen *cg, ElemType ct, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef cg_complex_div(Codegen *cg, ElemType ct, LLVMValueRef x, LLVMValueRef y);

/* An elementwise op (hlo_op_is_elementwise) of i applied to register values
 * ops (one per operand of i, of the operands' element types).  NULL with an
 * error at i->loc when the op or its types are not supported. */
LLVMValueRef cg_emit_elementwise(Codegen *cg, const HloInstr *i,
                                 LLVMValueRef const *ops, Diag *d);

#endif
