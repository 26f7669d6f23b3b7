/*
 * cudnn_min.h - the part of cuDNN 9's backend (graph) API (cudnn_graph.h)
 * that cudnn.c uses: the handle and descriptor types and the enum values,
 * with NVIDIA's names, values and ABI.
 *
 * With cuDNN's cudnn.h (XHLO_HAVE_CUDNN_H, set by the Makefile) that header
 * is included and every value listed here is checked against it at compile
 * time; without it these declarations stand in, so xhlo-run builds
 * anywhere.  No functions are declared: the library is opened with dlopen
 * (cuda_libs.c).  The mock library of the tests includes this file too.
 */
#ifndef XHLOC_CUDNN_MIN_H
#define XHLOC_CUDNN_MIN_H

#include <stdint.h>

#define DNN_MIN_STATUS(X)                                                     \
  X(CUDNN_STATUS_SUCCESS, 0)                                                  \
  X(CUDNN_STATUS_NOT_INITIALIZED, 1001)                                       \
  X(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED, 1008)                             \
  X(CUDNN_STATUS_BAD_PARAM, 2000)                                             \
  X(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, 2004)                               \
  X(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, 2008)                              \
  X(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, 2010)                              \
  X(CUDNN_STATUS_NOT_SUPPORTED, 3000)                                         \
  X(CUDNN_STATUS_INTERNAL_ERROR, 4000)                                        \
  X(CUDNN_STATUS_EXECUTION_FAILED, 5000)

#define DNN_MIN_DATA_TYPE(X)                                                  \
  X(CUDNN_DATA_FLOAT, 0)                                                      \
  X(CUDNN_DATA_DOUBLE, 1)                                                     \
  X(CUDNN_DATA_HALF, 2)                                                       \
  X(CUDNN_DATA_BFLOAT16, 9)

#define DNN_MIN_CONV_MODE(X)                                                  \
  X(CUDNN_CONVOLUTION, 0)                                                     \
  X(CUDNN_CROSS_CORRELATION, 1)

#define DNN_MIN_POINTWISE_MODE(X)                                             \
  X(CUDNN_POINTWISE_ADD, 0)                                                   \
  X(CUDNN_POINTWISE_RELU_FWD, 100)                                            \
  X(CUDNN_POINTWISE_GELU_FWD, 104)                                            \
  X(CUDNN_POINTWISE_GELU_APPROX_TANH_FWD, 107)

#define DNN_MIN_ATTR_NAME(X)                                                  \
  X(CUDNN_ATTR_POINTWISE_MODE, 0)                                             \
  X(CUDNN_ATTR_POINTWISE_MATH_PREC, 1)                                        \
  X(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, 100)                                    \
  X(CUDNN_ATTR_CONVOLUTION_CONV_MODE, 101)                                    \
  X(CUDNN_ATTR_CONVOLUTION_DILATIONS, 102)                                    \
  X(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 103)                               \
  X(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, 104)                                \
  X(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 105)                                 \
  X(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 106)                                 \
  X(CUDNN_ATTR_ENGINEHEUR_MODE, 200)                                          \
  X(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, 201)                               \
  X(CUDNN_ATTR_ENGINEHEUR_RESULTS, 202)                                       \
  X(CUDNN_ATTR_ENGINECFG_ENGINE, 300)                                         \
  X(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, 400)                                    \
  X(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 401)                             \
  X(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, 402)                            \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 700)                      \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 701)                       \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, 702)                  \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, 703)                          \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, 704)                          \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, 705)                          \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, 706)                     \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, 707)                      \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, 708)                 \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, 709)                         \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, 710)                        \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, 711)                        \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, 712)                   \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, 713)                    \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, 714)               \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, 715)                      \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, 716)                       \
  X(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, 717)                      \
  X(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, 750)                        \
  X(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, 751)                                \
  X(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, 752)                                \
  X(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, 753)                                \
  X(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 754)                               \
  X(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 755)                               \
  X(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, 800)                                    \
  X(CUDNN_ATTR_OPERATIONGRAPH_OPS, 801)                                       \
  X(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 900)                                    \
  X(CUDNN_ATTR_TENSOR_DATA_TYPE, 901)                                         \
  X(CUDNN_ATTR_TENSOR_DIMENSIONS, 902)                                        \
  X(CUDNN_ATTR_TENSOR_STRIDES, 903)                                           \
  X(CUDNN_ATTR_TENSOR_UNIQUE_ID, 906)                                         \
  X(CUDNN_ATTR_TENSOR_IS_VIRTUAL, 907)                                        \
  X(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, 1000)                                 \
  X(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, 1001)                              \
  X(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, 1003)                                  \
  X(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, 1303)

#define DNN_MIN_ATTR_TYPE(X)                                                  \
  X(CUDNN_TYPE_HANDLE, 0)                                                     \
  X(CUDNN_TYPE_DATA_TYPE, 1)                                                  \
  X(CUDNN_TYPE_BOOLEAN, 2)                                                    \
  X(CUDNN_TYPE_INT64, 3)                                                      \
  X(CUDNN_TYPE_FLOAT, 4)                                                      \
  X(CUDNN_TYPE_DOUBLE, 5)                                                     \
  X(CUDNN_TYPE_VOID_PTR, 6)                                                   \
  X(CUDNN_TYPE_CONVOLUTION_MODE, 7)                                           \
  X(CUDNN_TYPE_HEUR_MODE, 8)                                                  \
  X(CUDNN_TYPE_NUMERICAL_NOTE, 11)                                            \
  X(CUDNN_TYPE_POINTWISE_MODE, 14)                                            \
  X(CUDNN_TYPE_BACKEND_DESCRIPTOR, 15)

#define DNN_MIN_DESC_TYPE(X)                                                  \
  X(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, 0)                                    \
  X(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, 1)                                  \
  X(CUDNN_BACKEND_ENGINE_DESCRIPTOR, 2)                                       \
  X(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, 3)                                    \
  X(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, 4)                                   \
  X(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, 5)                               \
  X(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, 10)               \
  X(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, 11)       \
  X(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, 12)         \
  X(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, 13)                         \
  X(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, 15)                              \
  X(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, 16)                                \
  X(CUDNN_BACKEND_TENSOR_DESCRIPTOR, 17)

#define DNN_MIN_NUMERICAL_NOTE(X)                                             \
  X(CUDNN_NUMERICAL_NOTE_TENSOR_CORE, 0)                                      \
  X(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS, 1)                              \
  X(CUDNN_NUMERICAL_NOTE_TYPE_COUNT, 10)

#define DNN_MIN_HEUR_MODE(X) X(CUDNN_HEUR_MODE_A, 3)

#ifdef XHLO_HAVE_CUDNN_H
#include <cudnn.h>

#define DNN_MIN_AGREE(name, value)                                            \
  _Static_assert((long long)(name) == (value),                                \
                 "cudnn.h and cudnn_min.h disagree on " #name);
DNN_MIN_STATUS(DNN_MIN_AGREE)
DNN_MIN_DATA_TYPE(DNN_MIN_AGREE)
DNN_MIN_CONV_MODE(DNN_MIN_AGREE)
DNN_MIN_POINTWISE_MODE(DNN_MIN_AGREE)
DNN_MIN_ATTR_NAME(DNN_MIN_AGREE)
DNN_MIN_ATTR_TYPE(DNN_MIN_AGREE)
DNN_MIN_DESC_TYPE(DNN_MIN_AGREE)
DNN_MIN_NUMERICAL_NOTE(DNN_MIN_AGREE)
DNN_MIN_HEUR_MODE(DNN_MIN_AGREE)
#undef DNN_MIN_AGREE
_Static_assert(CUDNN_MAJOR == 9, "cudnn.c is written for cuDNN 9's backend API");

#else

#define DNN_MIN_ENUMERATOR(name, value) name = value,
typedef enum { DNN_MIN_STATUS(DNN_MIN_ENUMERATOR) } cudnnStatus_t;
typedef enum { DNN_MIN_DATA_TYPE(DNN_MIN_ENUMERATOR) } cudnnDataType_t;
typedef enum { DNN_MIN_CONV_MODE(DNN_MIN_ENUMERATOR) } cudnnConvolutionMode_t;
typedef enum { DNN_MIN_POINTWISE_MODE(DNN_MIN_ENUMERATOR) } cudnnPointwiseMode_t;
typedef enum { DNN_MIN_ATTR_NAME(DNN_MIN_ENUMERATOR) } cudnnBackendAttributeName_t;
typedef enum { DNN_MIN_ATTR_TYPE(DNN_MIN_ENUMERATOR) } cudnnBackendAttributeType_t;
typedef enum { DNN_MIN_DESC_TYPE(DNN_MIN_ENUMERATOR) } cudnnBackendDescriptorType_t;
typedef enum { DNN_MIN_NUMERICAL_NOTE(DNN_MIN_ENUMERATOR) } cudnnBackendNumericalNote_t;
typedef enum { DNN_MIN_HEUR_MODE(DNN_MIN_ENUMERATOR) } cudnnBackendHeurMode_t;
#undef DNN_MIN_ENUMERATOR

typedef struct CUstream_st *cudaStream_t;
typedef struct cudnnContext *cudnnHandle_t;
typedef void *cudnnBackendDescriptor_t;

#endif

_Static_assert(sizeof(cudnnStatus_t) == 4 && sizeof(cudnnBackendAttributeName_t) == 4 &&
                   sizeof(cudnnBackendAttributeType_t) == 4 &&
                   sizeof(cudnnBackendDescriptorType_t) == 4 && sizeof(cudnnDataType_t) == 4,
               "cuDNN enums are 32-bit");

#endif
