/*
 * dnnl_min.h - the part of oneDNN 2.x's C API (libdnnl.so.2, Debian 12's
 * oneDNN 2.6) that onednn.c calls, so that xhlo-run builds without oneDNN's
 * headers; the library itself is opened with dlopen.  Descriptors are kept
 * opaque (sizes and alignment as the 2.x ABI has them; onednn.c never reads
 * their fields).  When oneDNN's own header is there (XHLO_HAVE_DNNL_H),
 * tests/unit/test_onednn.c checks every value and size here against it.
 */
#ifndef XHLOC_DNNL_MIN_H
#define XHLOC_DNNL_MIN_H

#include <stddef.h>
#include <stdint.h>

typedef int64_t xdnnl_dim_t;
typedef xdnnl_dim_t xdnnl_dims_t[12];          /* DNNL_MAX_NDIMS */

typedef struct {
  _Alignas(8) unsigned char bytes[696];
} xdnnl_memory_desc_t;
typedef struct {
  _Alignas(8) unsigned char bytes[2800];
} xdnnl_matmul_desc_t;
typedef struct {
  _Alignas(8) unsigned char bytes[5976];
} xdnnl_convolution_desc_t;

typedef struct xdnnl_engine *xdnnl_engine_t;
typedef struct xdnnl_stream *xdnnl_stream_t;
typedef struct xdnnl_memory *xdnnl_memory_t;
typedef struct xdnnl_primitive_desc *xdnnl_primitive_desc_t;
typedef struct xdnnl_primitive *xdnnl_primitive_t;
typedef struct xdnnl_primitive_attr *xdnnl_primitive_attr_t;
typedef struct xdnnl_post_ops *xdnnl_post_ops_t;

typedef struct {
  int arg;
  xdnnl_memory_t memory;
} xdnnl_exec_arg_t;

enum {
  XDNNL_SUCCESS = 0,
  XDNNL_UNIMPLEMENTED = 3,
  /* data types */
  XDNNL_F16 = 1, XDNNL_BF16 = 2, XDNNL_F32 = 3, XDNNL_S32 = 4, XDNNL_S8 = 5,
  XDNNL_U8 = 6,
  XDNNL_FORMAT_TAG_ANY = 1,
  XDNNL_CPU = 1,
  /* prop kinds */
  XDNNL_FORWARD_TRAINING = 64, XDNNL_FORWARD_INFERENCE = 96,
  XDNNL_BACKWARD_DATA = 160, XDNNL_BACKWARD_WEIGHTS = 192,
  /* algorithms */
  XDNNL_CONVOLUTION_DIRECT = 1, XDNNL_CONVOLUTION_AUTO = 3,
  XDNNL_ELTWISE_RELU = 31, XDNNL_ELTWISE_GELU_ERF = 48,
  XDNNL_ELTWISE_LINEAR = 127, XDNNL_ELTWISE_GELU_TANH = 207,
  XDNNL_BINARY_ADD = 0x1fff0,
  /* execution arguments */
  XDNNL_ARG_SRC = 1, XDNNL_ARG_SRC_1 = 2, XDNNL_ARG_DST = 17,
  XDNNL_ARG_WEIGHTS = 33, XDNNL_ARG_BIAS = 41, XDNNL_ARG_SCRATCHPAD = 80,
  XDNNL_ARG_DIFF_SRC = 129, XDNNL_ARG_DIFF_DST = 145,
  XDNNL_ARG_DIFF_WEIGHTS = 161, XDNNL_ARG_FROM = 1, XDNNL_ARG_TO = 17,
  XDNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE = 16384,
  /* queries */
  XDNNL_QUERY_SRC_MD = 129, XDNNL_QUERY_DIFF_SRC_MD = 130,
  XDNNL_QUERY_WEIGHTS_MD = 131, XDNNL_QUERY_DIFF_WEIGHTS_MD = 132,
  XDNNL_QUERY_DST_MD = 133, XDNNL_QUERY_DIFF_DST_MD = 134,
  XDNNL_QUERY_SCRATCHPAD_MD = 136,
  XDNNL_SCRATCHPAD_MODE_USER = 1,
};

#define XDNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) \
  (XDNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE * ((idx) + 1))

/* The functions, as a table filled by dlsym (X(name, return, params)). */
#define XDNNL_FUNCTIONS(X)                                                     \
  X(dnnl_engine_create, int, (xdnnl_engine_t *, int, size_t))                  \
  X(dnnl_engine_destroy, int, (xdnnl_engine_t))                                \
  X(dnnl_stream_create, int, (xdnnl_stream_t *, xdnnl_engine_t, unsigned))     \
  X(dnnl_stream_destroy, int, (xdnnl_stream_t))                                \
  X(dnnl_stream_wait, int, (xdnnl_stream_t))                                   \
  X(dnnl_memory_desc_init_by_strides, int,                                     \
    (xdnnl_memory_desc_t *, int, const xdnnl_dim_t *, int,                     \
     const xdnnl_dim_t *))                                                     \
  X(dnnl_memory_desc_init_by_tag, int,                                         \
    (xdnnl_memory_desc_t *, int, const xdnnl_dim_t *, int, int))               \
  X(dnnl_memory_desc_equal, int,                                               \
    (const xdnnl_memory_desc_t *, const xdnnl_memory_desc_t *))                \
  X(dnnl_memory_desc_get_size, size_t, (const xdnnl_memory_desc_t *))          \
  X(dnnl_memory_create, int,                                                   \
    (xdnnl_memory_t *, const xdnnl_memory_desc_t *, xdnnl_engine_t, void *))   \
  X(dnnl_memory_set_data_handle, int, (xdnnl_memory_t, void *))                \
  X(dnnl_memory_destroy, int, (xdnnl_memory_t))                                \
  X(dnnl_matmul_desc_init, int,                                                \
    (xdnnl_matmul_desc_t *, const xdnnl_memory_desc_t *,                       \
     const xdnnl_memory_desc_t *, const xdnnl_memory_desc_t *,                 \
     const xdnnl_memory_desc_t *))                                             \
  X(dnnl_dilated_convolution_forward_desc_init, int,                           \
    (xdnnl_convolution_desc_t *, int, int, const xdnnl_memory_desc_t *,        \
     const xdnnl_memory_desc_t *, const xdnnl_memory_desc_t *,                 \
     const xdnnl_memory_desc_t *, const xdnnl_dim_t *, const xdnnl_dim_t *,    \
     const xdnnl_dim_t *, const xdnnl_dim_t *))                                \
  X(dnnl_dilated_convolution_backward_data_desc_init, int,                     \
    (xdnnl_convolution_desc_t *, int, const xdnnl_memory_desc_t *,             \
     const xdnnl_memory_desc_t *, const xdnnl_memory_desc_t *,                 \
     const xdnnl_dim_t *, const xdnnl_dim_t *, const xdnnl_dim_t *,            \
     const xdnnl_dim_t *))                                                     \
  X(dnnl_dilated_convolution_backward_weights_desc_init, int,                  \
    (xdnnl_convolution_desc_t *, int, const xdnnl_memory_desc_t *,             \
     const xdnnl_memory_desc_t *, const xdnnl_memory_desc_t *,                 \
     const xdnnl_memory_desc_t *, const xdnnl_dim_t *, const xdnnl_dim_t *,    \
     const xdnnl_dim_t *, const xdnnl_dim_t *))                                \
  X(dnnl_primitive_desc_create, int,                                           \
    (xdnnl_primitive_desc_t *, const void *, xdnnl_primitive_attr_t,           \
     xdnnl_engine_t, xdnnl_primitive_desc_t))                                  \
  X(dnnl_reorder_primitive_desc_create, int,                                   \
    (xdnnl_primitive_desc_t *, const xdnnl_memory_desc_t *, xdnnl_engine_t,    \
     const xdnnl_memory_desc_t *, xdnnl_engine_t, xdnnl_primitive_attr_t))     \
  X(dnnl_primitive_desc_query_md, const xdnnl_memory_desc_t *,                 \
    (xdnnl_primitive_desc_t, int, int))                                        \
  X(dnnl_primitive_desc_destroy, int, (xdnnl_primitive_desc_t))                \
  X(dnnl_primitive_create, int, (xdnnl_primitive_t *, xdnnl_primitive_desc_t)) \
  X(dnnl_primitive_execute, int,                                               \
    (xdnnl_primitive_t, xdnnl_stream_t, int, const xdnnl_exec_arg_t *))        \
  X(dnnl_primitive_destroy, int, (xdnnl_primitive_t))                          \
  X(dnnl_primitive_attr_create, int, (xdnnl_primitive_attr_t *))               \
  X(dnnl_primitive_attr_destroy, int, (xdnnl_primitive_attr_t))                \
  X(dnnl_primitive_attr_set_scratchpad_mode, int,                              \
    (xdnnl_primitive_attr_t, int))                                             \
  X(dnnl_primitive_attr_set_post_ops, int,                                     \
    (xdnnl_primitive_attr_t, xdnnl_post_ops_t))                                \
  X(dnnl_post_ops_create, int, (xdnnl_post_ops_t *))                           \
  X(dnnl_post_ops_destroy, int, (xdnnl_post_ops_t))                            \
  X(dnnl_post_ops_append_sum, int, (xdnnl_post_ops_t, float))                  \
  X(dnnl_post_ops_append_eltwise, int,                                         \
    (xdnnl_post_ops_t, float, int, float, float))                              \
  X(dnnl_post_ops_append_binary, int,                                          \
    (xdnnl_post_ops_t, int, const xdnnl_memory_desc_t *))

#endif
