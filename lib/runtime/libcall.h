/*
 * libcall.h - library calls in the artifact: a matrix multiply (GEMM) or a
 * convolution that the runtime hands to a vendor library (cuBLASLt and cuDNN
 * on the GPU, oneDNN on the host) instead of a generated kernel.
 *
 * A descriptor says everything the library needs, in memory terms: element
 * types, sizes and element strides of every operand (any layout the HLO had,
 * already resolved), the scalars and the epilogue.  The thunk emitter builds
 * it from a library custom-call (emitters/libcall_thunk.c), the thunk file
 * stores it, each platform executes it (platform.h: gemm, conv), and
 * libcall_ref.c executes it with plain loops as the tests' reference.
 *
 * GEMM semantics, for every batch b < batch:
 *   D[b] = act(alpha * (A[b] @ B[b]) + beta * C[b] + bias)
 * A is [m, k], B is [k, n], C and D are [m, n]; bias is a vector of n
 * (broadcast over the m rows); act is applied last.  Products accumulate in
 * f32 for f16/bf16/f8 inputs (f64 for f64, s32 for s8), the result is
 * rounded to D's type once.
 *
 * Convolution semantics: always the forward cross-correlation
 *   y[n, o, s...] = sum_{c, k...} x[n, g*C/G + c, s*stride + k*dilation - pad_lo]
 *                                 * w[o, c, k...]      (g = o / (O/G))
 * over x [N, C, S...], w [O, C/G, K...], y [N, O, S'...], positions outside x
 * reading zero.  kind says which of the three tensors the call computes from
 * the other two (cuDNN's and oneDNN's model): CONV_FORWARD y from x and w,
 * CONV_BACKWARD_INPUT x from y and w (the gradient of the input, i.e. the
 * transposed convolution), CONV_BACKWARD_FILTER w from x and y.  The forward
 * kind alone takes the epilogue: y = act(alpha * conv + side_scale * side +
 * bias), bias a vector of O.
 */
#ifndef XHLOC_LIBCALL_H
#define XHLOC_LIBCALL_H

#include "../hlo/hlo.h"

typedef enum LibActivation {
  LIB_ACT_NONE,
  LIB_ACT_RELU,                   /* max(x, 0) */
  LIB_ACT_GELU_TANH,              /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
  LIB_ACT_GELU_ERF,               /* x/2 (1 + erf(x / sqrt(2))) */
} LibActivation;

/* One GEMM operand: a batch of matrices.  Element (b, r, c) is at element
 * offset b*batch_stride + r*row_stride + c*col_stride from the slice start.
 * The emitter guarantees row_stride == 1 or col_stride == 1 (a matrix is row-
 * or column-major), the other stride >= the extent it steps over, and
 * batch_stride 0 when batch == 1. */
typedef struct GemmMatrix {
  ElemType et;
  int64_t rows, cols;
  int64_t batch_stride, row_stride, col_stride;
} GemmMatrix;

typedef struct GemmDesc {
  int64_t batch, m, n, k;
  GemmMatrix a;                   /* [m, k] */
  GemmMatrix b;                   /* [k, n] */
  GemmMatrix c;                   /* [m, n]; read only when beta != 0 */
  GemmMatrix d;                   /* [m, n]: the result */
  ElemType bias_et;               /* has_bias: a vector of n elements */
  double alpha_re, alpha_im, beta;
  LibActivation act;
  bool has_bias;
  bool allow_tf32;                /* f32 inputs may use TF32 tensor cores
                                     (operand precision DEFAULT) */
  int64_t workspace_bytes;        /* size of the workspace slice, 0: none */
} GemmDesc;

/* Slices of a GEMM thunk (Thunk.lib), in this order; absent ones have
 * alloc -1. */
enum { GEMM_A, GEMM_B, GEMM_C, GEMM_BIAS, GEMM_D, GEMM_WORKSPACE, GEMM_NSLICES };

#define CONV_MAX_SPATIAL 3

typedef enum ConvKind {
  CONV_FORWARD,                   /* y = conv(x, w) */
  CONV_BACKWARD_INPUT,            /* x from y and w */
  CONV_BACKWARD_FILTER,           /* w from x and y */
} ConvKind;

/* A convolution tensor: dims[0..1] are [N, C] for x, [O, C/G] for w, [N, O]
 * for y, then the nspatial spatial dims; strides[] in elements, any order
 * (every layout the HLO can express). */
typedef struct ConvTensor {
  ElemType et;
  int64_t dims[2 + CONV_MAX_SPATIAL];
  int64_t strides[2 + CONV_MAX_SPATIAL];
} ConvTensor;

typedef struct ConvDesc {
  ConvKind kind;
  int nspatial;                   /* 1..CONV_MAX_SPATIAL */
  ConvTensor x, w, y;
  int64_t stride[CONV_MAX_SPATIAL];
  int64_t dilation[CONV_MAX_SPATIAL];   /* 1: none (HLO's rhs_dilate) */
  int64_t pad_lo[CONV_MAX_SPATIAL], pad_hi[CONV_MAX_SPATIAL]; /* >= 0 */
  int64_t groups;                 /* feature groups, >= 1 */
  /* Epilogue (CONV_FORWARD only). */
  double alpha;                   /* conv_result_scale; 1 by default */
  double side_scale;              /* side_input_scale; 0: no side input */
  ElemType bias_et;
  LibActivation act;
  bool has_bias;                  /* a vector of O */
  bool allow_tf32;
  int64_t workspace_bytes;
} ConvDesc;

/* Slices of a convolution thunk (Thunk.lib), in this order; absent ones have
 * alloc -1.  Which of x, w, y is written depends on kind. */
enum { CONV_X, CONV_W, CONV_Y, CONV_BIAS, CONV_SIDE, CONV_WORKSPACE, CONV_NSLICES };

#define LIB_MAX_SLICES 6

const char *lib_activation_name(LibActivation a);   /* "none", "relu", ... */
double lib_activation_apply(LibActivation a, double x); /* in double */
const char *conv_kind_name(ConvKind k);   /* "forward", "backward_input", ... */

/*
 * libcall_lower.c: descriptors from library custom-calls (backend_config.h)
 * whose shapes carry their final layouts.
 */
/* Which operand (operand[k]) or leaf of the call's result (result_leaf[k])
 * feeds slice k of the thunk (GEMM_* / CONV_* order); -1 for neither. */
typedef struct LibSources {
  int operand[LIB_MAX_SLICES];
  int result_leaf[LIB_MAX_SLICES];
} LibSources;

/* The [batch, rows, cols] views of a dot's operands and result in their
 * layouts (see libcall_lower.c for the rules), sizes, alpha 1 and nothing
 * else.  False, with *why a static sentence, when some view is not a row-
 * or column-major batch of matrices in memory. */
bool libcall_gemm_shapes(const Shape *a, const Shape *b, const Shape *out,
                         const DotDnums *dn, GemmDesc *g, const char **why);
/* The descriptor of a GEMM call (__cublas$gemm, __cublas$lt$matmul,
 * __onednn$matmul) and where its slices come from; an error at the call for
 * anything the libraries cannot run.  Lists parsed from the config go into
 * arena ar. */
bool libcall_gemm_desc(Arena *ar, const HloInstr *call, GemmDesc *g,
                       LibSources *src, Diag *d);
/* Likewise for a convolution call (__cudnn$conv*, __onednn$convolution). */
bool libcall_conv_desc(const HloInstr *call, ConvDesc *c, LibSources *src,
                       Diag *d);

/*
 * libcall_ref.c: plain loops over host memory, for tests and as the
 * reference the libraries are checked against.  ptrs[] as the slices above
 * (NULL for absent ones).  Inputs are read in their element types, the sums
 * are formed in double, the results rounded once to the output type.  False
 * with a message for an element type they do not take.
 */
bool libcall_ref_gemm(const GemmDesc *g, void *const ptrs[GEMM_NSLICES],
                      Diag *d);
bool libcall_ref_conv(const ConvDesc *c, void *const ptrs[CONV_NSLICES],
                      Diag *d);

#endif
