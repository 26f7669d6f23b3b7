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
 * a CUstream; NULL: the legacy default stream).  Sectioned by the
 * file that implements each part.
 */
#ifndef XHLOC_CUDA_LIBS_H
#define XHLOC_CUDA_LIBS_H

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

#endif
