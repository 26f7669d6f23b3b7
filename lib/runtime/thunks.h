/*
 * thunks.h - the compiled artifact in memory and its file (PREFIX.thunks):
 * buffer allocations, the thunk sequence (kernels, copies, memsets, while and
 * conditional with nested sequences, library calls and the host runtime's
 * own routines, command buffers holding a nested run of thunks recorded
 * once and replayed), constants' bytes, where the entry's
 * parameters and results live, the original and optimized HLO, and the name
 * and checksum of the kernel file (PREFIX.ptx or PREFIX.host.so) beside it.
 *
 * xhloc builds an Artifact (emitters/thunk_emitter.c) and writes it;
 * xhlo-run reads and validates it and executes it (executor.c).  Nothing here
 * needs LLVM or CUDA.
 *
 * Buffer contents.  Every array lives in its allocation in the physical
 * order of its shape's layout (minor_to_major), et_bytes() bytes per element
 * (pred one byte 0/1, s4/u4 one byte each), little-endian: exactly a
 * Literal's bytes when the layout is the default {rank-1,...,0}.  A bounded
 * dynamic array (f32[<=8,4], only ever an entry result leaf: the
 * dynamic_padder pass leaves no other) holds its data at its bounds, the
 * valid elements at the bound's strides, then one s32 runtime size per
 * dimension (shape_buffer_size); xhlo-run returns the valid elements.
 *
 * The file format (thunk_file.c) is versioned and self-checking: magic and
 * version on the first line, then the sections, then a checksum of every byte
 * before it.  artifact_parse refuses a truncated, corrupted or inconsistent
 * file with a message naming what is wrong; it never crashes on any input.
 *
 * Sectioned by the file that implements each part.
 */
#ifndef XHLOC_THUNKS_H
#define XHLOC_THUNKS_H

#include "../support/support.h"
#include "libcall.h"
#include "routine.h"

#define THUNK_FILE_MAGIC "XHLO-THUNKS"
#define THUNK_FILE_VERSION 5

/* A byte range of one allocation (XLA's BufferAllocation::Slice). */
typedef struct BufSlice {
  int32_t alloc;                  /* index into Artifact.allocs */
  int64_t offset, size;           /* bytes */
} BufSlice;

enum {
  ALLOC_PARAMETER = 1 << 0,       /* holds (part of) an entry parameter */
  ALLOC_OUTPUT = 1 << 1,          /* holds (part of) the entry result */
  ALLOC_CONSTANT = 1 << 2,        /* a constant; bytes in Artifact.consts */
  ALLOC_TEMP = 1 << 3,            /* preallocated temporaries */
  ALLOC_MAYBE_LIVE_OUT = 1 << 4,
  ALLOC_THREAD_LOCAL = 1 << 5,
};

typedef struct BufAlloc {
  int64_t size;                   /* bytes */
  unsigned flags;                 /* ALLOC_* */
  int64_t param_number;           /* ALLOC_PARAMETER: entry parameter number */
  int nparam_index;
  int64_t *param_index;           /* ALLOC_PARAMETER: ShapeIndex in it */
  char *param_shape;              /* ALLOC_PARAMETER: the parameter's shape text */
  char *output_shape;             /* ALLOC_OUTPUT: the entry result shape text */
} BufAlloc;

typedef enum ThunkKind {
  THUNK_KERNEL,                   /* launch a kernel of the kernel file */
  THUNK_COPY,                     /* device-to-device copy src -> dst */
  THUNK_MEMSET32,                 /* fill dst with a 32-bit pattern */
  THUNK_WHILE,                    /* cond, then body while the pred is true */
  THUNK_CONDITIONAL,              /* one of the branch sequences */
  THUNK_GEMM,                     /* a library matrix multiply (libcall.h) */
  THUNK_CONV,                     /* a library convolution (libcall.h) */
  THUNK_COMMAND_BUFFER,           /* a nested sequence recorded once into a
                                     command buffer (a CUDA graph) and
                                     replayed (command_buffer_pass.c) */
  THUNK_COLLECTIVE,               /* a collective among the devices of the
                                     run, or replica-id / partition-id
                                     (collective_exec.c) */
  THUNK_ROUTINE,                  /* one of the host runtime's own routines
                                     (routine.h): a plain reduce, a top-k */
} ThunkKind;

/* A collective thunk: what it does, who takes part, its operand and result
 * slices (one result per operand) with their shapes. */
typedef enum CollKind {
  COLL_ALL_REDUCE, COLL_ALL_GATHER, COLL_REDUCE_SCATTER, COLL_ALL_TO_ALL,
  COLL_COLLECTIVE_PERMUTE, COLL_REPLICA_ID, COLL_PARTITION_ID,
  COLL_COLLECTIVE_BROADCAST,
  COLL_NKINDS
} CollKind;

/* The reduction of all-reduce and reduce-scatter (XLA's ReductionKind; and
 * and or of pred are min and max). */
typedef enum CollReduction { COLL_SUM, COLL_PRODUCT, COLL_MIN, COLL_MAX } CollReduction;

typedef struct CollDesc {
  CollKind kind;
  CollReduction reduction;        /* all-reduce, reduce-scatter */
  int64_t dim;                    /* all-gather, reduce-scatter, all-to-all;
                                     -1: none (the tuple all-to-all) */
  int64_t channel_id;             /* -1: none */
  int mode;                       /* CollectiveGroupMode (lib/hlo/hlo.h) */
  int64_t replica_count, num_partitions;
  int ngroups;                    /* replica groups, explicit; 0: all */
  int64_t *group_sizes;
  int64_t **groups;
  int npairs;                     /* collective-permute: source, target */
  int64_t (*pairs)[2];
  int64_t async_id;               /* -1: synchronous; else the id of an
                                     asynchronous pair (its -start's
                                     instruction id): this thunk starts the
                                     collective, the pair's done thunk waits
                                     for it */
  bool done;                      /* the done thunk of pair async_id (an
                                     -done): no operands or results */
  int n;                          /* operands = results; 0 for the ids and
                                     done thunks */
  BufSlice *in, *out;             /* n each; the ids: out[0] only */
  char **in_shape, **out_shape;   /* shape text with layout, n each */
} CollDesc;

typedef struct ThunkSeq ThunkSeq;

typedef struct Thunk {
  ThunkKind kind;
  char *annotation;               /* the HLO instruction it came from */

  /* KERNEL.  args: one slice per kernel parameter (see emitters/codegen.h
   * for their order); written[k] when the kernel writes args[k]. */
  char *kernel_name;
  int nargs;
  BufSlice *args;
  bool *written;
  uint32_t grid[3], block[3];     /* blocks per grid, threads per block */
  uint32_t shmem_bytes;           /* dynamic shared memory */

  /* COPY (src -> dst, same size) and MEMSET32 (dst, value). */
  BufSlice src, dst;
  uint32_t memset_value;

  /* WHILE: run cond; read the pred (one byte) at cond_result; if true run
   * body and repeat.  trip_count is -1 when unknown. */
  BufSlice cond_result;
  ThunkSeq *cond, *body;
  int64_t trip_count;

  /* CONDITIONAL: branch_index is a pred (true runs branches[0], false
   * branches[1]) or an s32 (out of range runs the last branch). */
  BufSlice branch_index;
  bool index_is_pred;
  int nbranches;
  ThunkSeq *branches;

  /* GEMM and CONV: the custom-call target it came from (for the text:
   * "__cublas$gemm" prints as kGemm, "__cublas$lt$matmul" as
   * kCublasLtMatmul, the others as kGemm / kConvolution), the descriptor,
   * and the slices in the order of GEMM_* / CONV_* (alloc -1: absent).
   * ROUTINE: its descriptor and slices (ROUTINE_* order; the text says
   * kReduce or kTopK). */
  char *target;
  GemmDesc *gemm;
  ConvDesc *conv;
  RoutineDesc *routine;
  BufSlice lib[LIB_MAX_SLICES];

  /* COMMAND_BUFFER: the thunks it holds (kernels, copies, memsets, GEMMs,
   * convolutions; no while, conditional or command buffer), run in order. */
  ThunkSeq *commands;

  /* COLLECTIVE */
  CollDesc *coll;
} Thunk;

struct ThunkSeq {
  int n;
  Thunk *thunks;
};

/* A constant's bytes, in its allocation's physical order. */
typedef struct ArtConstant {
  BufSlice slice;
  uint8_t *bytes;                 /* slice.size bytes */
} ArtConstant;

/* An entry parameter leaf or result leaf: where it lives and its shape
 * (XLA text with layout, e.g. "f32[2,3]{0,1}"). */
typedef struct ArtLeaf {
  BufSlice slice;
  char *shape;
} ArtLeaf;

typedef struct Artifact {
  Arena *arena;                   /* owns everything below */
  char *module_name;
  char *target;                   /* "sm_90" (PTX kernels) or "host" */
  char *host_cpu;                 /* host: the CPU the kernels were built
                                     for ("skylake", "x86-64-v3"); NULL on
                                     the GPU */
  char *host_features;            /* host: the features they may use, comma-
                                     separated (host_cpu.h); NULL on the GPU */
  char *kernel_file;              /* file name of the kernels, beside the
                                     .thunks file: "PREFIX.ptx" /
                                     "PREFIX.host.so" (no directory) */
  uint64_t kernel_checksum;       /* checksum64 of that file's bytes */
  int nallocs;
  BufAlloc *allocs;
  ThunkSeq entry;                 /* the entry computation's sequence */
  int nconsts;
  ArtConstant *consts;
  int nparams;
  ArtLeaf *params;                /* entry parameter leaves in order, tuple
                                     parameters flattened (io_shape_leaves) */
  int noutputs;
  ArtLeaf *outputs;               /* entry result leaves in order */
  char *result_shape;             /* the entry result's shape text */
  char *original_hlo;             /* the module as given to xhloc */
  char *optimized_hlo;            /* after the passes, as compiled */
} Artifact;

/* Names in the file and the texts: "all-reduce", ...; "sum", ...;
 * "cross-replica", ... (CollectiveGroupMode order). */
const char *coll_kind_name(int kind);
const char *coll_reduction_name(int reduction);
const char *coll_mode_name(int mode);

/*
 * artifact.c: building, checking, text
 */
Artifact *artifact_new(void);
void artifact_free(Artifact *a);
/* A 64-bit checksum (FNV-1a 64) of n bytes. */
uint64_t checksum64(const void *p, size_t n);
/* Structural checks: slices inside their allocations, kernel args present,
 * constants inside constant allocations, every leaf's slice size equal to
 * its shape's byte size, nested sequences well formed.  The reader runs it;
 * the writer runs it too (an inconsistency there is a bug). */
bool artifact_validate(const Artifact *a, Diag *d);
/* XLA's thunk_sequence text (ThunkSequence::ToString): one line per thunk,
 * "000: kKernel ..." with nested sequences indented. */
void artifact_print_thunks(StrBuf *b, const Artifact *a);
/* For xhlo-run --describe: target, kernel file, allocations (with flags and
 * sizes), parameters and outputs with their slices, then the thunks. */
void artifact_describe(StrBuf *b, const Artifact *a);

/*
 * libcall.c: library-call descriptors in artifacts
 */
/* A GEMM / convolution thunk's descriptor against its slices (lib[], in
 * GEMM_* / CONV_* order): sizes agree, every operand fits in its slice, the
 * optional slices are there exactly when the descriptor uses them. */
bool libcall_check_gemm(const GemmDesc *g, const BufSlice lib[], Diag *d);
bool libcall_check_conv(const ConvDesc *c, const BufSlice lib[], Diag *d);
/* The thunk text after the kind: ", batch = 1, m = 64, ...". */
void libcall_print_gemm(StrBuf *b, const GemmDesc *g, const BufSlice lib[]);
void libcall_print_conv(StrBuf *b, const ConvDesc *c, const BufSlice lib[]);

/*
 * routine.c: routine descriptors in artifacts
 */
/* A routine thunk's descriptor against its slices (lib[], ROUTINE_*
 * order): sizes at least 1 (k at most n), an element type it has a routine
 * for, every slice there and exactly the size of its array, unused slices
 * absent. */
bool routine_check(const RoutineDesc *r, const BufSlice lib[], Diag *d);
/* The thunk text after the kind: ", reduce = add, type = f32, ...". */
void routine_print(StrBuf *b, const RoutineDesc *r, const BufSlice lib[]);

/*
 * command_buffer_pass.c: XLA's CommandBufferConversionPass
 */
/* Which thunks may go into a command buffer (XLA's
 * --xla_gpu_enable_command_buffer types; CMDBUF_COPY is xhloc's own). */
enum {
  CMDBUF_FUSION = 1 << 0,         /* kernels */
  CMDBUF_CUBLAS = 1 << 1,         /* GEMMs printed as kGemm */
  CMDBUF_CUBLASLT = 1 << 2,       /* GEMMs printed as kCublasLtMatmul */
  CMDBUF_CUDNN = 1 << 3,          /* convolutions */
  CMDBUF_COPY = 1 << 4,           /* device copies and memsets */
  /* accepted for XLA compatibility; xhloc emits no such thunks into a
   * command buffer (while and conditional stay outside) */
  CMDBUF_CUSTOM_CALL = 1 << 5,
  CMDBUF_COLLECTIVES = 1 << 6,
  CMDBUF_CONDITIONAL = 1 << 7,
  CMDBUF_WHILE = 1 << 8,
};
#define CMDBUF_DEFAULT_TYPES                                                  \
  (CMDBUF_FUSION | CMDBUF_CUBLAS | CMDBUF_CUBLASLT | CMDBUF_CUDNN |            \
   CMDBUF_COPY)
#define CMDBUF_DEFAULT_MIN_SIZE 5 /* XLA's --xla_gpu_graph_min_graph_size */

/* Parses a --command-buffer list: comma-separated type names (any case:
 * fusion, cublas, cublaslt, cudnn, copy, custom_call, collectives,
 * conditional(s), while), '' for none.  False with a message naming the
 * bad name. */
bool cmdbuf_parse_types(const char *list, unsigned *types, Diag *d);
/* Replaces every run of at least min_size consecutive thunks of the given
 * types, in the entry sequence and in every nested while / conditional
 * sequence, with one COMMAND_BUFFER thunk holding them.  Returns how many
 * command buffers it made. */
int cmdbuf_convert(Artifact *a, unsigned types, int min_size);

/*
 * thunk_file.c: the file
 */
/* The whole file's bytes, appended to out (format: thunk_file.c's top
 * comment).  a must be valid (artifact_validate). */
void artifact_serialize(const Artifact *a, StrBuf *out);
/* Parses and validates a file's bytes (name is for messages).  NULL with a
 * clear message in d for anything malformed, truncated or inconsistent. */
Artifact *artifact_parse(const char *data, size_t len, const char *name,
                         Diag *d);
Artifact *artifact_read(const char *path, Diag *d);
/* Reads the kernel file the artifact names, from the directory of
 * thunks_path, and checks its checksum.  Returns its bytes (heap, *len set;
 * a NUL follows them, not counted, so PTX text can be used as a string) or
 * NULL with a message (missing file, checksum mismatch). */
uint8_t *artifact_read_kernel_file(const Artifact *a, const char *thunks_path,
                                   size_t *len, Diag *d);

#endif
