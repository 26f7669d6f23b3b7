/*
 * cuda_libs.h - the vendor libraries behind the CUDA platform's library
 * calls (platform.h: gemm, conv): cuBLASLt for GEMMs (cublaslt.c) and
 * cuDNN 9's backend API for convolutions (cudnn.c), both opened with
 * dlopen (cuda_libs.c) the first time a call needs them.
 *
 * Both run on the stream every other operation of platform_cuda.c uses:
 * the legacy default stream (NULL), in the context platform_cuda.c made
 * current, so a library call is ordered after every earlier launch and copy
 * and before every later one, as platform.h requires; while a command
 * buffer is recorded, on the stream being captured (the stream argument,
 * a CUstream; NULL: the legacy default stream).  Collectives go to NCCL
 * (nccl.c, collective_nccl.c), opened the first time one runs, on the same
 * stream.  Sectioned by the file that implements each part.
 */
#ifndef XHLOC_CUDA_LIBS_H
#define XHLOC_CUDA_LIBS_H

#include "nccl_min.h"
#include "platform.h"

/*
 * cuda_libs.c: finding and opening a library
 */

/* A vendor library: what to call it in messages, the file names to try
 * (newest first), and the folders of the Python wheels (nvidia-*) that may
 * hold it, relative to a site-packages folder. */
typedef struct CudaLibSpec {
  const char *what;               /* "cuBLASLt" */
  const char *const *names;       /* NULL-terminated: "libcublasLt.so.13", ... */
  const char *const *wheel_dirs;  /* NULL-terminated: "nvidia/cublas/lib", ... */
} CudaLibSpec;

/* Opens the first of spec->names found, trying in order: each directory of
 * lib_path (':'-separated, may be NULL), the dynamic loader's own search
 * (LD_LIBRARY_PATH, the ld.so cache), $CUDA_HOME/lib64 and $CUDA_HOME/lib
 * (CUDA_HOME defaults to /usr/local/cuda), then the wheel folders under
 * the Python site-packages folders (/usr/local/lib/python3.x/dist-packages
 * and site-packages, /usr/lib/python3/dist-packages,
 * $HOME/.local/lib/python3.x/site-packages,
 * $VIRTUAL_ENV/lib/python3.x/site-packages).  In each place the names are
 * tried in order.  On success *handle is the dlopen handle and *path (heap)
 * says where it came from; otherwise false with a message naming the
 * library, the places searched, any file that was found but failed to load
 * (with the loader's reason) and the --lib-path option. */
bool cuda_lib_open(const CudaLibSpec *spec, const char *lib_path, void **handle,
                   char **path, Diag *d);

/* An entry point to look up: its name, and where its address goes (the
 * offset of a function pointer in an API table).  Optional ones may be
 * missing from older versions and are left NULL. */
typedef struct CudaLibSym {
  const char *name;
  size_t off;
  bool optional;
} CudaLibSym;

/* Fills the API table api from the library: false with a message naming
 * the library file and the missing entry point. */
bool cuda_lib_bind(void *handle, const char *path, const CudaLibSym *syms, size_t nsyms,
                   void *api, Diag *d);

/* The largest power of two (at most cap) that divides the address. */
unsigned dev_ptr_alignment(DevPtr p, unsigned cap);

/*
 * cublaslt.c: GEMMs through cuBLASLt (the Platform.gemm hook)
 */
typedef struct CublasLt CublasLt;

/* Runs one GEMM (libcall.h) on the device: *lt is created (and the library
 * opened) on the first call; lib_path as for cuda_lib_open. */
bool cublaslt_gemm(CublasLt **lt, const char *lib_path, void *stream, const GemmDesc *g,
                   const DevPtr s[GEMM_NSLICES], Diag *d);
void cublaslt_free(CublasLt *lt);  /* NULL is fine */

/*
 * cudnn.c: convolutions through cuDNN's backend API (the Platform.conv
 * hook)
 */
typedef struct Cudnn Cudnn;

/* Runs one convolution (libcall.h) on the device: *dnn is created (and the
 * library opened) on the first call.  p allocates the workspace when the
 * thunk's workspace slice is too small for the chosen engine (a workspace
 * outgrown is kept until cudnn_free: a recorded command buffer may use it). */
bool cudnn_conv(Cudnn **dnn, Platform *p, const char *lib_path, void *stream,
                const ConvDesc *c, const DevPtr s[CONV_NSLICES], Diag *d);
void cudnn_free(Cudnn *dnn, Platform *p);  /* NULL is fine */

/*
 * nccl.c: NCCL and the communicators of one GPU (the Platform.coll_run
 * hook's library)
 */
typedef struct NcclApi {
  ncclResult_t (*GetVersion)(int *);
  ncclResult_t (*GetUniqueId)(ncclUniqueId *);
  ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*CommCount)(ncclComm_t, int *);
  ncclResult_t (*CommUserRank)(ncclComm_t, int *);
  const char *(*GetErrorString)(ncclResult_t);
  const char *(*GetLastError)(ncclComm_t);          /* optional (2.13) */
  ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                            ncclComm_t, void *stream);
  ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                            void *stream);
  ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                ncclComm_t, void *stream);
  ncclResult_t (*Broadcast)(const void *, void *, size_t, ncclDataType_t, int root,
                            ncclComm_t, void *stream);
  ncclResult_t (*Send)(const void *, size_t, ncclDataType_t, int peer, ncclComm_t,
                       void *stream);
  ncclResult_t (*Recv)(void *, size_t, ncclDataType_t, int peer, ncclComm_t, void *stream);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
} NcclApi;

typedef struct Nccl Nccl;

/* Opens libnccl.so.2 into *nc (nothing to do when it is open already);
 * lib_path as for cuda_lib_open.  False with a message naming what was
 * searched, or the version found when it is older than 2.10. */
bool nccl_open(Nccl **nc, const char *lib_path, Diag *d);
const NcclApi *nccl_api(const Nccl *nc);
/* Checks an NCCL result: the message names the call, ncclGetErrorString's
 * text and code and NCCL's last error. */
bool nccl_check(const Nccl *nc, ncclResult_t r, const char *what, Diag *d);
/* This GPU's communicator with the members of g, made the first time
 * (every member must ask for it then, each from its own thread: it blocks
 * until all have), with this device as rank g->me. */
bool nccl_comm(Nccl *nc, const CollGroup *g, ncclComm_t *out, Diag *d);
/* Destroys the communicators (NULL is fine). */
void nccl_free(Nccl *nc);

/*
 * collective_nccl.c: collective thunks through NCCL (the Platform
 * coll_takes and coll_run hooks of the CUDA platform)
 */
/* Whether NCCL can run collective thunk x (collective_nccl.c's top
 * comment); false: it is staged through host memory. */
bool nccl_coll_takes(const CollExec *x);
/* Runs x as member g->me of g on the stream (a CUstream; NULL: the legacy
 * default stream): *nc opened and the group's communicator made (and kept
 * in x->dev) on first use; p copies and fills where NCCL has nothing to
 * move. */
bool nccl_coll_run(Nccl **nc, const char *lib_path, Platform *p, void *stream, CollExec *x,
                   const CollGroup *g, const DevPtr *in, const DevPtr *out, Diag *d);

#endif
