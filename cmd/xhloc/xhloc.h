/*
 * xhloc.h - what the files of the xhloc driver share.
 */
#ifndef XHLOC_CMD_XHLOC_H
#define XHLOC_CMD_XHLOC_H

#include "../../lib/support/support.h"
#include "../../lib/hlo/hlo.h"
#include "../../passes/passes.h"

/*
 * Stages, in pipeline order.  --stage=NAME stops after that stage and prints
 * its result; STAGE_ARTIFACT writes PREFIX.thunks and the kernel file.
 */
typedef enum StageId {
  STAGE_PARSED,      /* parse + verify, print the modules as read */
  STAGE_INDEXING,    /* parse + verify, print every instruction's indexing maps */
  STAGE_HLO,         /* + the HLO pass pipeline (passes/pipeline.c) */
  STAGE_BUFFERS,     /* + backend preparation, buffer assignment */
  STAGE_MEMORY,      /* the memory usage report of the buffer assignment */
  STAGE_THUNKS,      /* + thunk emission (kernels generated) */
  STAGE_LLVM_NO_OPT, /* the kernels' LLVM IR before optimization */
  STAGE_LLVM,        /* the kernels' LLVM IR after optimization */
  STAGE_PTX,         /* the PTX (gpu target) */
  STAGE_ARTIFACT,    /* PREFIX.thunks + PREFIX.ptx / PREFIX.host.so */
} StageId;

/*
 * output.c
 */

/* Where the driver's text goes: streamed into a temporary that
 * output_commit turns into the output (rename over the -o file, or a copy to
 * stdout) once everything succeeded; output_abort throws it away. */
typedef struct Output {
  FILE *f;                        /* write here */
  const char *path;               /* -o FILE; NULL or "-" for stdout */
  char *tmp_path;                 /* temporary beside FILE (NULL: stdout spool) */
} Output;

bool output_open(Output *o, const char *path, Diag *d);
bool output_commit(Output *o, Diag *d);
void output_abort(Output *o);

/* A new empty temporary file beside path ("dir/.name.XXXXXX"), with the mode
 * a plain creat(path, mode) would give.  Returns its heap path, or NULL with
 * the error in d. */
char *output_temp_beside(const char *path, unsigned mode, Diag *d);

/*
 * dump.c: --dump-to files of the back end
 */

/* Writes module_NNNN.<name>.<suffix> (suffix with its extension, e.g.
 * "thunk_sequence.txt", "ir-no-opt.ll", "ptx") under dir. */
bool dump_text(const char *dir, int module_id, const char *module_name,
               const char *suffix, const char *text, size_t len, Diag *d);

/*
 * backend.c: the stages after "hlo" for one module
 */
typedef struct BackendOptions {
  bool host;                      /* --target=host */
  const char *arch;               /* --arch (default sm_90) */
  const char *libdevice;          /* --libdevice; NULL: the default */
  const char *host_cpu;           /* --host-cpu; NULL: native */
  bool exact_host_math;           /* --host-math=exact: libm calls */
  bool system_linker;             /* --host-linker=system: ld -shared */
  bool no_host_routines;          /* --host-routines=off: kernels only */
  int64_t memory_limit;           /* --memory-limit; 0: none */
  unsigned cmdbuf_types;          /* --command-buffer: CMDBUF_* (thunks.h) */
  int cmdbuf_min_size;            /* --command-buffer-min-size */
  const char *dump_to;            /* --dump-to */
  int module_id;                  /* NNNN of the dumps */
  const char *prefix;             /* STAGE_ARTIFACT: -o PREFIX */
  PhaseTimes *times;              /* --time-passes: the phases' wall times */
} BackendOptions;

/* Runs m (after the HLO passes and the backend preparation) through buffer
 * assignment, thunk emission and code generation up to `stage`.  Text stages
 * append their text to out; STAGE_ARTIFACT writes the files.  original_hlo
 * is the module's text before the passes.  False with the error in d. */
bool backend_run(HloModule *m, StageId stage, const BackendOptions *o,
                 const char *original_hlo, StrBuf *out, Diag *d);

/*
 * artifact_files.c: PREFIX.thunks and the kernel file, written atomically
 */
typedef struct Artifact Artifact;
typedef struct Codegen Codegen;

/* Writes the kernel file (PREFIX.ptx from ptx, or with ptx NULL
 * PREFIX.host.so from codegen_host_so) and PREFIX.thunks, setting a's
 * kernel_file and kernel_checksum.  Both are written to temporaries beside
 * them and renamed into place only when everything succeeded: an error
 * leaves no new file behind. */
bool artifact_files_write(Artifact *a, const char *prefix, const StrBuf *ptx,
                          Codegen *cg, PhaseTimes *times, Diag *d);

#endif
