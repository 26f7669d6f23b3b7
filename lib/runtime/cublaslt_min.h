/*
 * cublaslt_min.h - the part of cuBLASLt's API (cublasLt.h, cublas_api.h,
 * library_types.h) that cublaslt.c uses: the handle and descriptor types,
 * the heuristic result struct and the enum values, with NVIDIA's names,
 * values and ABI.
 *
 * With the toolkit's cublasLt.h (XHLO_HAVE_CUBLASLT_H, set by the Makefile)
 * that header is included and every value and struct layout listed here is
 * checked against it at compile time; without it these declarations stand
 * in, so xhlo-run builds anywhere.  No functions are declared: the library
 * is opened with dlopen (cuda_libs.c).  The mock library of the tests
 * includes this file too.
 */
#ifndef XHLOC_CUBLASLT_MIN_H
#define XHLOC_CUBLASLT_MIN_H

#include <stddef.h>
#include <stdint.h>

#define LT_MIN_STATUS(X)                                                      \
  X(CUBLAS_STATUS_SUCCESS, 0)                                                 \
  X(CUBLAS_STATUS_NOT_INITIALIZED, 1)                                         \
  X(CUBLAS_STATUS_ALLOC_FAILED, 3)                                            \
  X(CUBLAS_STATUS_INVALID_VALUE, 7)                                           \
  X(CUBLAS_STATUS_ARCH_MISMATCH, 8)                                           \
  X(CUBLAS_STATUS_EXECUTION_FAILED, 13)                                       \
  X(CUBLAS_STATUS_INTERNAL_ERROR, 14)                                         \
  X(CUBLAS_STATUS_NOT_SUPPORTED, 15)

#define LT_MIN_DATA_TYPE(X)                                                   \
  X(CUDA_R_32F, 0)                                                            \
  X(CUDA_R_64F, 1)                                                            \
  X(CUDA_R_16F, 2)                                                            \
  X(CUDA_R_16BF, 14)                                                          \
  X(CUDA_R_8F_E4M3, 28)                                                       \
  X(CUDA_R_8F_E5M2, 29)

#define LT_MIN_COMPUTE_TYPE(X)                                                \
  X(CUBLAS_COMPUTE_32F, 68)                                                   \
  X(CUBLAS_COMPUTE_32F_FAST_TF32, 77)                                         \
  X(CUBLAS_COMPUTE_64F, 70)

#define LT_MIN_OPERATION(X)                                                   \
  X(CUBLAS_OP_N, 0)                                                           \
  X(CUBLAS_OP_T, 1)

#define LT_MIN_ORDER(X)                                                       \
  X(CUBLASLT_ORDER_COL, 0)                                                    \
  X(CUBLASLT_ORDER_ROW, 1)

#define LT_MIN_LAYOUT_ATTR(X)                                                 \
  X(CUBLASLT_MATRIX_LAYOUT_TYPE, 0)                                           \
  X(CUBLASLT_MATRIX_LAYOUT_ORDER, 1)                                          \
  X(CUBLASLT_MATRIX_LAYOUT_ROWS, 2)                                           \
  X(CUBLASLT_MATRIX_LAYOUT_COLS, 3)                                           \
  X(CUBLASLT_MATRIX_LAYOUT_LD, 4)                                             \
  X(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 5)                                    \
  X(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 6)

#define LT_MIN_DESC_ATTR(X)                                                   \
  X(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 0)                                     \
  X(CUBLASLT_MATMUL_DESC_SCALE_TYPE, 1)                                       \
  X(CUBLASLT_MATMUL_DESC_POINTER_MODE, 2)                                     \
  X(CUBLASLT_MATMUL_DESC_TRANSA, 3)                                           \
  X(CUBLASLT_MATMUL_DESC_TRANSB, 4)                                           \
  X(CUBLASLT_MATMUL_DESC_TRANSC, 5)                                           \
  X(CUBLASLT_MATMUL_DESC_EPILOGUE, 7)                                         \
  X(CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8)                                     \
  X(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 10)                               \
  X(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, 17)                                 \
  X(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, 18)                                 \
  X(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, 20)                                 \
  X(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, 26)

#define LT_MIN_EPILOGUE(X)                                                    \
  X(CUBLASLT_EPILOGUE_DEFAULT, 1)                                             \
  X(CUBLASLT_EPILOGUE_RELU, 2)                                                \
  X(CUBLASLT_EPILOGUE_BIAS, 4)                                                \
  X(CUBLASLT_EPILOGUE_RELU_BIAS, 6)                                           \
  X(CUBLASLT_EPILOGUE_GELU, 32)                                               \
  X(CUBLASLT_EPILOGUE_GELU_BIAS, 36)

#define LT_MIN_PREF_ATTR(X)                                                   \
  X(CUBLASLT_MATMUL_PREF_SEARCH_MODE, 0)                                      \
  X(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 1)                              \
  X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 5)                            \
  X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 6)                            \
  X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, 7)                            \
  X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 8)

/* The heuristic result's layout: the algorithm (64 bytes), then
 * workspaceSize, state, wavesCount, reserved[4]. */
#define LT_MIN_ALGO_SIZE 64
#define LT_MIN_HEUR_SIZE 96
#define LT_MIN_HEUR_WORKSPACE_OFF 64
#define LT_MIN_HEUR_STATE_OFF 72

#ifdef XHLO_HAVE_CUBLASLT_H
#include <cublasLt.h>

#define LT_MIN_AGREE(name, value)                                             \
  _Static_assert((long long)(name) == (value),                                \
                 "cublasLt.h and cublaslt_min.h disagree on " #name);
LT_MIN_STATUS(LT_MIN_AGREE)
LT_MIN_DATA_TYPE(LT_MIN_AGREE)
LT_MIN_COMPUTE_TYPE(LT_MIN_AGREE)
LT_MIN_OPERATION(LT_MIN_AGREE)
LT_MIN_ORDER(LT_MIN_AGREE)
LT_MIN_LAYOUT_ATTR(LT_MIN_AGREE)
LT_MIN_DESC_ATTR(LT_MIN_AGREE)
LT_MIN_EPILOGUE(LT_MIN_AGREE)
LT_MIN_PREF_ATTR(LT_MIN_AGREE)
#undef LT_MIN_AGREE

#else

#define LT_MIN_ENUMERATOR(name, value) name = value,
typedef enum { LT_MIN_STATUS(LT_MIN_ENUMERATOR) } cublasStatus_t;
typedef enum cudaDataType_t { LT_MIN_DATA_TYPE(LT_MIN_ENUMERATOR) } cudaDataType_t;
typedef cudaDataType_t cudaDataType;
typedef enum { LT_MIN_COMPUTE_TYPE(LT_MIN_ENUMERATOR) } cublasComputeType_t;
typedef enum { LT_MIN_OPERATION(LT_MIN_ENUMERATOR) } cublasOperation_t;
typedef enum { LT_MIN_ORDER(LT_MIN_ENUMERATOR) } cublasLtOrder_t;
typedef enum { LT_MIN_LAYOUT_ATTR(LT_MIN_ENUMERATOR) } cublasLtMatrixLayoutAttribute_t;
typedef enum { LT_MIN_DESC_ATTR(LT_MIN_ENUMERATOR) } cublasLtMatmulDescAttributes_t;
typedef enum { LT_MIN_EPILOGUE(LT_MIN_ENUMERATOR) } cublasLtEpilogue_t;
typedef enum { LT_MIN_PREF_ATTR(LT_MIN_ENUMERATOR) } cublasLtMatmulPreferenceAttributes_t;
#undef LT_MIN_ENUMERATOR

typedef struct CUstream_st *cudaStream_t;
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct { uint64_t data[8]; } cublasLtMatrixLayoutOpaque_t;
typedef cublasLtMatrixLayoutOpaque_t *cublasLtMatrixLayout_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct { uint64_t data[32]; } cublasLtMatmulDescOpaque_t;
typedef cublasLtMatmulDescOpaque_t *cublasLtMatmulDesc_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulPreferenceOpaque_t;
typedef cublasLtMatmulPreferenceOpaque_t *cublasLtMatmulPreference_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

#endif

_Static_assert(sizeof(cublasLtMatmulAlgo_t) == LT_MIN_ALGO_SIZE, "cublasLtMatmulAlgo_t size");
_Static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == LT_MIN_HEUR_SIZE,
               "cublasLtMatmulHeuristicResult_t size");
_Static_assert(offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) ==
                   LT_MIN_HEUR_WORKSPACE_OFF,
               "cublasLtMatmulHeuristicResult_t.workspaceSize offset");
_Static_assert(offsetof(cublasLtMatmulHeuristicResult_t, state) == LT_MIN_HEUR_STATE_OFF,
               "cublasLtMatmulHeuristicResult_t.state offset");
_Static_assert(sizeof(cublasStatus_t) == 4 && sizeof(cudaDataType) == 4 &&
                   sizeof(cublasComputeType_t) == 4,
               "cuBLASLt enums are 32-bit");

#endif
