/*
 * cudnn.c - convolutions (libcall.h) through cuDNN 9's backend (graph) API,
 * the CUDA platform's Platform.conv hook.
 *
 * A ConvDesc's tensors are cuDNN's model already: dims [N, C, spatial...]
 * (x), [O, C/G, spatial...] (w), [N, O, spatial...] (y) with element
 * strides in any order; the feature groups follow from x's C and w's C/G.
 * cuDNN wants at least two spatial dims, so a 1-D convolution gets a
 * leading spatial dim of size 1 (stride 1, no padding or dilation).
 *
 * The operation graph: one convolution operation by kind (forward, backward
 * data, backward filter; CUDNN_CROSS_CORRELATION, pre and post paddings,
 * dilations, filter strides), and for the forward kind the epilogue as
 * pointwise operations on virtual tensors, in libcall.h's order:
 *   conv (alpha, or 1 when there is a side input)
 *   -> ADD side (alpha1 = alpha, alpha2 = side_scale)   if side_scale != 0
 *   -> ADD bias (a [1, O, 1...] tensor)                  if has_bias
 *   -> RELU_FWD / GELU_APPROX_TANH_FWD / GELU_FWD        if act
 * the last one writing y.  The side input has y's dims and strides.
 *
 * Engines come from the heuristics (CUDNN_HEUR_MODE_A) in their order; the
 * first whose execution plan finalizes is taken.  With f32 data and
 * allow_tf32 off, engines noted as using tensor cores or down-converting
 * inputs (TF32) are skipped.  The plan is cached per whole ConvDesc (plus the
 * slices' alignments); the variant pack is rebuilt only when the pointers
 * change.  The workspace is the CONV_WORKSPACE slice when it is big enough,
 * else a device buffer of our own, allocated once and grown when needed.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_libs.h"
#include "cudnn_min.h"

/* field, entry point, return type, parameters, optional */
#define DNN_FUNCS(X)                                                                       \
  X(GetVersion, cudnnGetVersion, size_t, (void), false)                                    \
  X(GetErrorString, cudnnGetErrorString, const char *, (cudnnStatus_t), false)             \
  X(GetLastErrorString, cudnnGetLastErrorString, void, (char *, size_t), true)             \
  X(Create, cudnnCreate, cudnnStatus_t, (cudnnHandle_t *), false)                          \
  X(Destroy, cudnnDestroy, cudnnStatus_t, (cudnnHandle_t), false)                          \
  X(SetStream, cudnnSetStream, cudnnStatus_t, (cudnnHandle_t, cudaStream_t), false)        \
  X(CreateDescriptor, cudnnBackendCreateDescriptor, cudnnStatus_t,                         \
    (cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *), false)                     \
  X(DestroyDescriptor, cudnnBackendDestroyDescriptor, cudnnStatus_t,                       \
    (cudnnBackendDescriptor_t), false)                                                     \
  X(Finalize, cudnnBackendFinalize, cudnnStatus_t, (cudnnBackendDescriptor_t), false)      \
  X(SetAttribute, cudnnBackendSetAttribute, cudnnStatus_t,                                 \
    (cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,   \
     int64_t, const void *),                                                               \
    false)                                                                                 \
  X(GetAttribute, cudnnBackendGetAttribute, cudnnStatus_t,                                 \
    (cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,   \
     int64_t, int64_t *, void *),                                                          \
    false)                                                                                 \
  X(Execute, cudnnBackendExecute, cudnnStatus_t,                                           \
    (cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t), false)

typedef struct DnnApi {
#define DNN_FIELD(field, sym, ret, params, opt) ret(*field) params;
  DNN_FUNCS(DNN_FIELD)
#undef DNN_FIELD
} DnnApi;

#ifdef XHLO_HAVE_CUDNN_H
/* The table's types are the header's prototypes. */
#define DNN_PROTO_AGREES(field, sym, ret, params, opt)                                    \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&sym), ret(*) params),            \
                 "cudnn.h declares " #sym " differently");
DNN_FUNCS(DNN_PROTO_AGREES)
#undef DNN_PROTO_AGREES
#endif

static const CudaLibSym dnn_syms[] = {
#define DNN_SYM(field, sym, ret, params, opt) {#sym, offsetof(DnnApi, field), opt},
  DNN_FUNCS(DNN_SYM)
#undef DNN_SYM
};

static const char *const dnn_names[] = {"libcudnn.so.9", NULL};
static const char *const dnn_wheel_dirs[] = {"nvidia/cudnn/lib", "nvidia/cu13/lib",
                                             "nvidia/*/lib", NULL};
static const CudaLibSpec dnn_spec = {"cuDNN 9", dnn_names, dnn_wheel_dirs};

/* The unique ids of the tensors: the slices', then the virtual ones. */
enum { ID_X = 1, ID_W, ID_Y, ID_BIAS, ID_SIDE, ID_VIRTUAL };

#define DNN_MAX_ALIGN 16u   /* the alignment a tensor declares, at most */
#define DNN_MAX_ENGINES 32  /* heuristic results looked at */

/* One prepared convolution. */
typedef struct DnnPlan {
  ConvDesc c;
  unsigned align[CONV_NSLICES];   /* key: what the tensors declare */
  Vec(cudnnBackendDescriptor_t) descs; /* everything made for it, in order */
  cudnnBackendDescriptor_t plan;
  int64_t workspace;
  int nio;                        /* the variant pack: ids and slices */
  int64_t ids[CONV_NSLICES];
  int slots[CONV_NSLICES];
  cudnnBackendDescriptor_t varpack;
  void *vp_ptrs[CONV_NSLICES], *vp_ws; /* what varpack holds */
} DnnPlan;

struct Cudnn {
  void *lib;
  char *path;
  DnnApi api;
  cudnnHandle_t handle;
  Vec(DnnPlan *) plans;
  DevPtr own_ws;                  /* our workspace, when a slice is too small */
  int64_t own_ws_size;
  Vec(DevPtr) old_ws;             /* outgrown ones: a recorded command buffer
                                     may still use them */
  void *stream;                   /* the handle's stream (NULL: legacy) */
};

static bool dnn_check(const Cudnn *dnn, cudnnStatus_t st, const char *call, Diag *d) {
  if (st == CUDNN_STATUS_SUCCESS) return true;
  const char *text = dnn->api.GetErrorString(st);
  char last[512] = "";
  if (dnn->api.GetLastErrorString) dnn->api.GetLastErrorString(last, sizeof last);
  last[sizeof last - 1] = 0;
  return diag_error(d, (Loc){0}, "cuDNN: %s failed: %s (%d)%s%s%s", call,
                    text ? text : "status", (int)st, last[0] ? ": " : "", last,
                    st == CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED
                        ? " (cuDNN loads its sub-libraries, libcudnn_graph.so.9 and the "
                          "engines, from the folder of libcudnn.so.9 or the loader's path; "
                          "--lib-path=DIRS or LD_LIBRARY_PATH can name it)"
                        : "");
}

static bool dnn_type(ElemType et, cudnnDataType_t *t) {
  switch (et) {
  case ET_F32: *t = CUDNN_DATA_FLOAT; return true;
  case ET_F64: *t = CUDNN_DATA_DOUBLE; return true;
  case ET_F16: *t = CUDNN_DATA_HALF; return true;
  case ET_BF16: *t = CUDNN_DATA_BFLOAT16; return true;
  default: return false;
  }
}

static bool tensor_equal(const ConvTensor *x, const ConvTensor *y, int nd) {
  if (x->et != y->et) return false;
  for (int k = 0; k < nd; k++)
    if (x->dims[k] != y->dims[k] || x->strides[k] != y->strides[k]) return false;
  return true;
}

/* The whole descriptor, field by field (unused entries not compared). */
static bool conv_equal(const ConvDesc *x, const ConvDesc *y) {
  int ns = x->nspatial;
  if (x->kind != y->kind || ns != y->nspatial || !tensor_equal(&x->x, &y->x, 2 + ns) ||
      !tensor_equal(&x->w, &y->w, 2 + ns) || !tensor_equal(&x->y, &y->y, 2 + ns))
    return false;
  for (int k = 0; k < ns; k++)
    if (x->stride[k] != y->stride[k] || x->dilation[k] != y->dilation[k] ||
        x->pad_lo[k] != y->pad_lo[k] || x->pad_hi[k] != y->pad_hi[k])
      return false;
  return x->groups == y->groups && x->alpha == y->alpha && x->side_scale == y->side_scale &&
         x->bias_et == y->bias_et && x->act == y->act && x->has_bias == y->has_bias &&
         x->allow_tf32 == y->allow_tf32 && x->workspace_bytes == y->workspace_bytes;
}

static bool conv_has_epilogue(const ConvDesc *c) {
  return c->side_scale != 0 || c->has_bias || c->act != LIB_ACT_NONE;
}

/* What cuDNN cannot be asked, or a descriptor that does not add up. */
static bool conv_validate(const ConvDesc *c, const DevPtr s[CONV_NSLICES], Diag *d) {
  Loc none = {0};
  int ns = c->nspatial;
  if (ns < 1 || ns > CONV_MAX_SPATIAL)
    return diag_error(d, none, "cuDNN convolution: %d spatial dims (1 to %d)", ns,
                      CONV_MAX_SPATIAL);
  cudnnDataType_t t;
  if (c->x.et != c->w.et || c->x.et != c->y.et || !dnn_type(c->x.et, &t))
    return diag_error(d, none, "cuDNN convolution: element types x %s, w %s, y %s are not "
                      "supported (all f16, bf16, f32 or f64)", et_name(c->x.et),
                      et_name(c->w.et), et_name(c->y.et));
  if (c->kind != CONV_FORWARD && (conv_has_epilogue(c) || c->alpha != 1))
    return diag_error(d, none, "cuDNN convolution: a %s convolution takes no epilogue "
                      "(alpha %g, side scale %g, bias %s, activation %s)",
                      conv_kind_name(c->kind), c->alpha, c->side_scale,
                      c->has_bias ? "yes" : "no", lib_activation_name(c->act));
  if (c->has_bias && !dnn_type(c->bias_et, &t))
    return diag_error(d, none, "cuDNN convolution: a %s bias is not supported",
                      et_name(c->bias_et));
  int64_t g = c->groups, n = c->x.dims[0], ci = c->x.dims[1], o = c->w.dims[0];
  if (g < 1 || ci != c->w.dims[1] * g || o % g != 0 || c->y.dims[0] != n || c->y.dims[1] != o)
    return diag_error(d, none, "cuDNN convolution: x [%lld, %lld, ...], w [%lld, %lld, ...] "
                      "and y [%lld, %lld, ...] do not fit %lld feature groups",
                      (long long)n, (long long)ci, (long long)o, (long long)c->w.dims[1],
                      (long long)c->y.dims[0], (long long)c->y.dims[1], (long long)g);
  for (int k = 0; k < ns; k++) {
    int64_t in = c->x.dims[2 + k], kw = c->w.dims[2 + k], st = c->stride[k];
    int64_t span = c->dilation[k] * (kw - 1) + 1, padded = in + c->pad_lo[k] + c->pad_hi[k];
    if (st < 1 || c->dilation[k] < 1 || c->pad_lo[k] < 0 || c->pad_hi[k] < 0)
      return diag_error(d, none, "cuDNN convolution: spatial dim %d has stride %lld, "
                        "dilation %lld, padding %lld/%lld", k, (long long)st,
                        (long long)c->dilation[k], (long long)c->pad_lo[k],
                        (long long)c->pad_hi[k]);
    int64_t out = padded >= span ? (padded - span) / st + 1 : 0;
    if (c->y.dims[2 + k] != out)
      return diag_error(d, none, "cuDNN convolution: y's spatial dim %d is %lld, the "
                        "convolution gives %lld", k, (long long)c->y.dims[2 + k],
                        (long long)out);
  }
  if (!s[CONV_X] || !s[CONV_W] || !s[CONV_Y])
    return diag_error(d, none, "cuDNN convolution: the x, w or y slice is missing");
  if (c->has_bias && !s[CONV_BIAS])
    return diag_error(d, none, "cuDNN convolution: the bias slice is missing");
  if (c->side_scale != 0 && !s[CONV_SIDE])
    return diag_error(d, none, "cuDNN convolution: the side input slice is missing");
  return true;
}

/* A tensor's dims and strides as cuDNN gets them; returns the rank. */
static int conv_dims(const ConvTensor *t, int ns, int64_t dims[5], int64_t strides[5]) {
  if (ns == 1) {
    /* [N, C, W] -> [N, C, 1, W], the new dim outside W */
    int64_t d2[4] = {t->dims[0], t->dims[1], 1, t->dims[2]};
    int64_t s2[4] = {t->strides[0], t->strides[1], t->strides[2] * t->dims[2], t->strides[2]};
    memcpy(dims, d2, sizeof d2);
    memcpy(strides, s2, sizeof s2);
    return 4;
  }
  memcpy(dims, t->dims, (size_t)(2 + ns) * sizeof *dims);
  memcpy(strides, t->strides, (size_t)(2 + ns) * sizeof *strides);
  return 2 + ns;
}

/* ---- building the graph ------------------------------------------------- */

typedef struct Build {
  Cudnn *dnn;
  DnnPlan *p;
  Diag *d;
  bool ok;
} Build;

static cudnnBackendDescriptor_t new_desc(Build *b, cudnnBackendDescriptorType_t t) {
  cudnnBackendDescriptor_t desc = NULL;
  if (!b->ok) return NULL;
  b->ok = dnn_check(b->dnn, b->dnn->api.CreateDescriptor(t, &desc),
                    "cudnnBackendCreateDescriptor", b->d);
  if (b->ok) vec_push(&b->p->descs, desc);
  return desc;
}

static void set_attr(Build *b, cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                     cudnnBackendAttributeType_t type, int64_t n, const void *v,
                     const char *what) {
  if (!b->ok) return;
  StrBuf call;
  sb_init(&call);
  cudnnStatus_t st = b->dnn->api.SetAttribute(desc, name, type, n, v);
  if (st != CUDNN_STATUS_SUCCESS) {
    sb_printf(&call, "cudnnBackendSetAttribute(%s)", what);
    b->ok = dnn_check(b->dnn, st, call.s, b->d);
  }
  sb_free(&call);
}
#define SET(b, desc, attr, type, n, v) set_attr(b, desc, attr, type, n, v, #attr)

static void finalize(Build *b, cudnnBackendDescriptor_t desc, const char *what) {
  if (!b->ok) return;
  cudnnStatus_t st = b->dnn->api.Finalize(desc);
  if (st != CUDNN_STATUS_SUCCESS) {
    StrBuf call;
    sb_init(&call);
    sb_printf(&call, "cudnnBackendFinalize(%s)", what);
    b->ok = dnn_check(b->dnn, st, call.s, b->d);
    sb_free(&call);
  }
}

static cudnnBackendDescriptor_t tensor(Build *b, int64_t id, cudnnDataType_t type, int nd,
                                       const int64_t *dims, const int64_t *strides,
                                       int64_t align, bool is_virtual) {
  cudnnBackendDescriptor_t t = new_desc(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  SET(b, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  SET(b, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims);
  SET(b, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, strides);
  SET(b, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id);
  SET(b, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  if (is_virtual) {
    bool v = true;
    SET(b, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v);
  }
  finalize(b, t, "tensor");
  return t;
}

/* A scalar attribute in the compute precision. */
static void set_scalar(Build *b, cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name,
                       bool f64, double v, const char *what) {
  float f = (float)v;
  if (f64) set_attr(b, desc, name, CUDNN_TYPE_DOUBLE, 1, &v, what);
  else set_attr(b, desc, name, CUDNN_TYPE_FLOAT, 1, &f, what);
}
#define SET_SCALAR(b, desc, attr, f64, v) set_scalar(b, desc, attr, f64, v, #attr)

/* A pointwise operation y = mode(alpha1 * x, alpha2 * bx); bx may be NULL. */
static cudnnBackendDescriptor_t pointwise(Build *b, cudnnPointwiseMode_t mode,
                                          cudnnDataType_t prec, cudnnBackendDescriptor_t x,
                                          cudnnBackendDescriptor_t bx,
                                          cudnnBackendDescriptor_t y, bool scaled,
                                          double alpha1, double alpha2) {
  bool f64 = prec == CUDNN_DATA_DOUBLE;
  cudnnBackendDescriptor_t pw = new_desc(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  SET(b, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  SET(b, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  finalize(b, pw, "pointwise");
  cudnnBackendDescriptor_t op = new_desc(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  SET(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
      &pw);
  SET(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
  if (bx)
    SET(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bx);
  SET(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
  if (scaled) {
    SET_SCALAR(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, f64, alpha1);
    SET_SCALAR(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, f64, alpha2);
  }
  finalize(b, op, "pointwise operation");
  return op;
}

/* The convolution operation of c->kind. */
static cudnnBackendDescriptor_t conv_op(Build *b, const ConvDesc *c, cudnnDataType_t prec,
                                        cudnnBackendDescriptor_t tx,
                                        cudnnBackendDescriptor_t tw,
                                        cudnnBackendDescriptor_t ty, double alpha) {
  int ns = c->nspatial, nsd = ns == 1 ? 2 : ns;
  int64_t stride[3], dil[3], lo[3], hi[3], nsd64 = nsd;
  int off = nsd - ns; /* 1 for the added dim of a 1-D convolution */
  for (int k = 0; k < nsd; k++) {
    bool added = k < off;
    stride[k] = added ? 1 : c->stride[k - off];
    dil[k] = added ? 1 : c->dilation[k - off];
    lo[k] = added ? 0 : c->pad_lo[k - off];
    hi[k] = added ? 0 : c->pad_hi[k - off];
  }
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnBackendDescriptor_t cd = new_desc(b, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  SET(b, cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  SET(b, cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  SET(b, cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsd64);
  SET(b, cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsd, dil);
  SET(b, cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsd, stride);
  SET(b, cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsd, lo);
  SET(b, cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsd, hi);
  finalize(b, cd, "convolution");

  bool f64 = prec == CUDNN_DATA_DOUBLE;
  cudnnBackendDescriptor_t op = NULL;
  cudnnBackendAttributeType_t D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  switch (c->kind) {
  case CONV_FORWARD:
    op = new_desc(b, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &tx);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D, 1, &tw);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &ty);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &cd);
    SET_SCALAR(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, f64, alpha);
    SET_SCALAR(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, f64, 0);
    break;
  case CONV_BACKWARD_INPUT:
    op = new_desc(b, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, D, 1, &tx);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, D, 1, &tw);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, D, 1, &ty);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, D, 1, &cd);
    SET_SCALAR(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, f64, alpha);
    SET_SCALAR(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, f64, 0);
    break;
  case CONV_BACKWARD_FILTER:
    op = new_desc(b, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, D, 1, &tx);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, D, 1, &tw);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, D, 1, &ty);
    SET(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, D, 1, &cd);
    SET_SCALAR(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, f64, alpha);
    SET_SCALAR(b, op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, f64, 0);
    break;
  }
  finalize(b, op, "convolution operation");
  return op;
}

/* The operations of the graph; returns how many. */
static int build_ops(Build *b, const ConvDesc *c, cudnnBackendDescriptor_t ops[4]) {
  DnnPlan *p = b->p;
  cudnnDataType_t et = CUDNN_DATA_FLOAT, prec = c->x.et == ET_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  dnn_type(c->x.et, &et);
  int ns = c->nspatial, nd;
  int64_t dx[5], sx[5], dw[5], sw[5], dy[5], sy[5];
  nd = conv_dims(&c->x, ns, dx, sx);
  conv_dims(&c->w, ns, dw, sw);
  conv_dims(&c->y, ns, dy, sy);
  cudnnBackendDescriptor_t tx = tensor(b, ID_X, et, nd, dx, sx, p->align[CONV_X], false);
  cudnnBackendDescriptor_t tw = tensor(b, ID_W, et, nd, dw, sw, p->align[CONV_W], false);
  cudnnBackendDescriptor_t ty = tensor(b, ID_Y, et, nd, dy, sy, p->align[CONV_Y], false);
  p->nio = 0;
  int64_t ids[] = {ID_X, ID_W, ID_Y};
  for (int k = 0; k < 3; k++) p->ids[p->nio] = ids[k], p->slots[p->nio++] = k;

  bool side = c->side_scale != 0, bias = c->has_bias, act = c->act != LIB_ACT_NONE;
  int npw = side + bias + act, nops = 0;
  int64_t next_virtual = ID_VIRTUAL;
  /* the output of the next operation: virtual until the last one */
#define NEXT_OUT(last)                                                                  \
  ((last) ? ty : tensor(b, next_virtual++, prec, nd, dy, sy, DNN_MAX_ALIGN, true))
  cudnnBackendDescriptor_t cur = NEXT_OUT(npw == 0);
  ops[nops++] = conv_op(b, c, prec, tx, tw, cur, side ? 1 : c->alpha);
  if (side) {
    cudnnBackendDescriptor_t tz = tensor(b, ID_SIDE, et, nd, dy, sy, p->align[CONV_SIDE], false);
    p->ids[p->nio] = ID_SIDE, p->slots[p->nio++] = CONV_SIDE;
    cudnnBackendDescriptor_t out = NEXT_OUT(--npw == 0);
    ops[nops++] = pointwise(b, CUDNN_POINTWISE_ADD, prec, cur, tz, out, true, c->alpha,
                            c->side_scale);
    cur = out;
  }
  if (bias) {
    cudnnDataType_t bt = CUDNN_DATA_FLOAT;
    dnn_type(c->bias_et, &bt);
    int64_t db[5], sb[5], o = dy[1];
    for (int k = 0; k < nd; k++) db[k] = k == 1 ? o : 1, sb[k] = k == 1 ? 1 : o;
    cudnnBackendDescriptor_t tb = tensor(b, ID_BIAS, bt, nd, db, sb, p->align[CONV_BIAS], false);
    p->ids[p->nio] = ID_BIAS, p->slots[p->nio++] = CONV_BIAS;
    cudnnBackendDescriptor_t out = NEXT_OUT(--npw == 0);
    ops[nops++] = pointwise(b, CUDNN_POINTWISE_ADD, prec, cur, tb, out, false, 1, 1);
    cur = out;
  }
  if (act) {
    cudnnPointwiseMode_t mode = c->act == LIB_ACT_RELU        ? CUDNN_POINTWISE_RELU_FWD
                                : c->act == LIB_ACT_GELU_TANH ? CUDNN_POINTWISE_GELU_APPROX_TANH_FWD
                                                              : CUDNN_POINTWISE_GELU_FWD;
    ops[nops++] = pointwise(b, mode, prec, cur, NULL, ty, false, 1, 1);
  }
#undef NEXT_OUT
  return nops;
}

/* Whether an engine configuration may run: with f32 data and TF32 not
 * allowed, no tensor-core or down-converting engine. */
static bool engine_allowed(Build *b, const ConvDesc *c, cudnnBackendDescriptor_t cfg) {
  if (c->x.et != ET_F32 || c->allow_tf32) return true;
  cudnnBackendDescriptor_t eng = new_desc(b, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t n = 0;
  if (b->ok)
    b->ok = dnn_check(b->dnn, b->dnn->api.GetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                                       &eng),
                      "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINECFG_ENGINE)", b->d);
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  n = 0;
  if (b->ok)
    b->ok = dnn_check(b->dnn, b->dnn->api.GetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                                       CUDNN_TYPE_NUMERICAL_NOTE,
                                                       CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                                                       notes),
                      "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE)", b->d);
  for (int64_t k = 0; k < n && k < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; k++)
    if (notes[k] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE ||
        notes[k] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
      return false;
  return true;
}

static void describe_conv(StrBuf *sb, const ConvDesc *c) {
  sb_printf(sb, "%s, %s", conv_kind_name(c->kind), et_name(c->x.et));
  const ConvTensor *ts[] = {&c->x, &c->w, &c->y};
  const char *names[] = {"x", "w", "y"};
  for (int t = 0; t < 3; t++) {
    sb_printf(sb, ", %s ", names[t]);
    for (int k = 0; k < 2 + c->nspatial; k++)
      sb_printf(sb, "%s%lld", k ? "x" : "", (long long)ts[t]->dims[k]);
  }
  sb_printf(sb, ", %lld groups", (long long)c->groups);
  if (c->side_scale != 0) sb_puts(sb, ", side input");
  if (c->has_bias) sb_puts(sb, ", bias");
  if (c->act != LIB_ACT_NONE) sb_printf(sb, ", %s", lib_activation_name(c->act));
}

static bool plan_build(Cudnn *dnn, DnnPlan *p, Diag *d) {
  const ConvDesc *c = &p->c;
  Build b = {dnn, p, d, true};
  cudnnBackendDescriptor_t ops[4];
  int nops = build_ops(&b, c, ops);
  cudnnBackendDescriptor_t graph = new_desc(&b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  SET(&b, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn->handle);
  SET(&b, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops);
  finalize(&b, graph, "operation graph");
  cudnnBackendDescriptor_t heur = new_desc(&b, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  SET(&b, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  SET(&b, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  finalize(&b, heur, "engine heuristics");
  int64_t count = 0;
  if (b.ok)
    b.ok = dnn_check(dnn, dnn->api.GetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL),
                     "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)", d);
  if (count > DNN_MAX_ENGINES) count = DNN_MAX_ENGINES;
  cudnnBackendDescriptor_t cfgs[DNN_MAX_ENGINES];
  for (int64_t k = 0; k < count; k++) cfgs[k] = new_desc(&b, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  int64_t got = 0;
  if (b.ok && count > 0)
    b.ok = dnn_check(dnn, dnn->api.GetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                                cfgs),
                     "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)", d);
  if (!b.ok) return false;

  /* The first engine whose plan finalizes. */
  int skipped = 0;
  Diag last = {0};
  for (int64_t k = 0; k < got && k < count && !p->plan && b.ok; k++) {
    if (!engine_allowed(&b, c, cfgs[k])) {
      skipped++;
      continue;
    }
    cudnnBackendDescriptor_t plan = new_desc(&b, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    SET(&b, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn->handle);
    SET(&b, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &cfgs[k]);
    if (!b.ok) break;
    cudnnStatus_t st = dnn->api.Finalize(plan);
    if (st != CUDNN_STATUS_SUCCESS) {
      diag_clear(&last);
      dnn_check(dnn, st, "cudnnBackendFinalize(execution plan)", &last);
      continue;
    }
    int64_t n = 0;
    b.ok = dnn_check(dnn, dnn->api.GetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                CUDNN_TYPE_INT64, 1, &n, &p->workspace),
                     "cudnnBackendGetAttribute(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)", d);
    if (b.ok) p->plan = plan;
  }
  if (b.ok && !p->plan) {
    StrBuf sb;
    sb_init(&sb);
    sb_puts(&sb, "cuDNN has no engine for this convolution (");
    describe_conv(&sb, c);
    sb_printf(&sb, "; cuDNN version %zu): %lld engine configurations", dnn->api.GetVersion(),
              (long long)got);
    if (skipped)
      sb_printf(&sb, ", %d skipped because they compute f32 in TF32 and the precision config "
                "does not allow it", skipped);
    if (last.msg) sb_printf(&sb, "; the last one: %s", last.msg);
    diag_error(d, (Loc){0}, "%s", sb.s);
    sb_free(&sb);
    b.ok = false;
  }
  diag_clear(&last);
  return b.ok;
}

static void plan_free(const Cudnn *dnn, DnnPlan *p) {
  if (!p) return;
  if (p->varpack) dnn->api.DestroyDescriptor(p->varpack);
  for (int k = p->descs.len - 1; k >= 0; k--) dnn->api.DestroyDescriptor(p->descs.data[k]);
  vec_free(&p->descs);
  free(p);
}

/* ---- running ------------------------------------------------------------ */

/* The workspace for a plan: the slice, or our own buffer. */
static bool workspace_for(Cudnn *dnn, Platform *pf, const DnnPlan *p, const ConvDesc *c,
                          const DevPtr s[CONV_NSLICES], void **ws, Diag *d) {
  *ws = NULL;
  if (p->workspace <= 0) return true;
  if (s[CONV_WORKSPACE] && c->workspace_bytes >= p->workspace) {
    *ws = (void *)(uintptr_t)s[CONV_WORKSPACE];
    return true;
  }
  if (dnn->own_ws_size < p->workspace) {
    if (dnn->own_ws) {
      /* queued work or a recorded command buffer may still use the old
       * one: it is freed with the handle */
      vec_push(&dnn->old_ws, dnn->own_ws);
      dnn->own_ws = 0;
      dnn->own_ws_size = 0;
    }
    if (!pf->alloc(pf, (size_t)p->workspace, &dnn->own_ws, d)) return false;
    dnn->own_ws_size = p->workspace;
  }
  *ws = (void *)(uintptr_t)dnn->own_ws;
  return true;
}

static bool varpack_for(Cudnn *dnn, DnnPlan *p, const DevPtr s[CONV_NSLICES], void *ws,
                        Diag *d) {
  void *ptrs[CONV_NSLICES];
  for (int k = 0; k < p->nio; k++) ptrs[k] = (void *)(uintptr_t)s[p->slots[k]];
  if (p->varpack && p->vp_ws == ws &&
      memcmp(p->vp_ptrs, ptrs, (size_t)p->nio * sizeof *ptrs) == 0)
    return true;
  if (p->varpack) dnn->api.DestroyDescriptor(p->varpack);
  p->varpack = NULL;
  cudnnBackendDescriptor_t vp = NULL;
  if (!dnn_check(dnn, dnn->api.CreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp),
                 "cudnnBackendCreateDescriptor(variant pack)", d))
    return false;
  cudnnStatus_t st = dnn->api.SetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                           CUDNN_TYPE_INT64, p->nio, p->ids);
  const char *what = "cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)";
  if (st == CUDNN_STATUS_SUCCESS) {
    st = dnn->api.SetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                               p->nio, ptrs);
    what = "cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)";
  }
  if (st == CUDNN_STATUS_SUCCESS) {
    st = dnn->api.SetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                               &ws);
    what = "cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_WORKSPACE)";
  }
  if (st == CUDNN_STATUS_SUCCESS) {
    st = dnn->api.Finalize(vp);
    what = "cudnnBackendFinalize(variant pack)";
  }
  if (!dnn_check(dnn, st, what, d)) {
    dnn->api.DestroyDescriptor(vp);
    return false;
  }
  p->varpack = vp;
  memcpy(p->vp_ptrs, ptrs, (size_t)p->nio * sizeof *ptrs);
  p->vp_ws = ws;
  return true;
}

static Cudnn *dnn_open(const char *lib_path, Diag *d) {
  Cudnn *dnn = xcalloc(1, sizeof *dnn);
  bool ok = cuda_lib_open(&dnn_spec, lib_path, &dnn->lib, &dnn->path, d) &&
            cuda_lib_bind(dnn->lib, dnn->path, dnn_syms, ARRAY_LEN(dnn_syms), &dnn->api, d);
  if (ok && dnn->api.GetVersion() / 10000 != 9)
    ok = diag_error(d, (Loc){0}, "%s is cuDNN version %zu; cuDNN 9 is needed", dnn->path,
                    dnn->api.GetVersion());
  ok = ok && dnn_check(dnn, dnn->api.Create(&dnn->handle), "cudnnCreate", d);
  if (ok && !dnn_check(dnn, dnn->api.SetStream(dnn->handle, NULL /* legacy default */),
                       "cudnnSetStream", d)) {
    dnn->api.Destroy(dnn->handle);
    ok = false;
  }
  if (!ok) {
    free(dnn->path);
    free(dnn);
    return NULL;
  }
  return dnn;
}

bool cudnn_conv(Cudnn **dnnp, Platform *pf, const char *lib_path, void *stream,
                const ConvDesc *c, const DevPtr s[CONV_NSLICES], Diag *d) {
  if (!conv_validate(c, s, d)) return false;
  if (!*dnnp && !(*dnnp = dnn_open(lib_path, d))) return false;
  Cudnn *dnn = *dnnp;
  if (dnn->stream != stream) {
    if (!dnn_check(dnn, dnn->api.SetStream(dnn->handle, (cudaStream_t)stream), "cudnnSetStream",
                   d))
      return false;
    dnn->stream = stream;
  }
  unsigned align[CONV_NSLICES] = {0};
  for (int k = 0; k < CONV_NSLICES; k++)
    if (k != CONV_WORKSPACE) align[k] = s[k] ? dev_ptr_alignment(s[k], DNN_MAX_ALIGN) : 0;
  DnnPlan *p = NULL;
  for (int k = 0; k < dnn->plans.len && !p; k++) {
    DnnPlan *q = dnn->plans.data[k];
    if (conv_equal(&q->c, c) && memcmp(q->align, align, sizeof align) == 0) p = q;
  }
  if (!p) {
    p = xcalloc(1, sizeof *p);
    p->c = *c;
    memcpy(p->align, align, sizeof align);
    if (!plan_build(dnn, p, d)) {
      plan_free(dnn, p);
      return false;
    }
    vec_push(&dnn->plans, p);
  }
  void *ws = NULL;
  if (!workspace_for(dnn, pf, p, c, s, &ws, d) || !varpack_for(dnn, p, s, ws, d)) return false;
  return dnn_check(dnn, dnn->api.Execute(dnn->handle, p->plan, p->varpack),
                   "cudnnBackendExecute", d);
}

void cudnn_free(Cudnn *dnn, Platform *pf) {
  if (!dnn) return;
  for (int k = 0; k < dnn->plans.len; k++) plan_free(dnn, dnn->plans.data[k]);
  vec_free(&dnn->plans);
  if (dnn->own_ws) pf->free(pf, dnn->own_ws);
  for (int k = 0; k < dnn->old_ws.len; k++) pf->free(pf, dnn->old_ws.data[k]);
  vec_free(&dnn->old_ws);
  if (dnn->handle) dnn->api.Destroy(dnn->handle);
  free(dnn->path);
  free(dnn);
}
