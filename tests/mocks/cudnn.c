/*
 * cudnn.c - a mock libcudnn.so.9 (the backend API) for check-cuda-libs.sh.
 *
 * Descriptors keep their attributes; cudnnBackendSetAttribute checks each
 * attribute's owner and type and cudnnBackendFinalize what cuDNN checks
 * (required attributes, tensor ranks, the convolution's shapes and output
 * size, pointwise broadcasting, finalized inputs, unique tensor ids).  The
 * heuristics offer two engines: engine 0 (numerical note TENSOR_CORE, 4096
 * bytes of workspace) and engine 1 (no notes, 256 bytes).
 * cudnnBackendExecute checks the variant pack (every non-virtual tensor, its
 * alignment, the workspace), logs the whole graph it runs in one entry, and
 * computes it for real on the (host) memory.  On a stream the mock libcuda
 * is capturing (cudnnSetStream), the execution is recorded into the capture
 * (mock_cuda_defer) with a copy of the variant pack as it is at the call,
 * and runs when the graph is launched.
 */
#include <dlfcn.h>

#include "../../lib/runtime/cudnn_min.h"
#include "mock_util.h"

enum { MAGIC = 0x444e4e };
#define MAX_ATTRS 16
#define SCALAR (-1) /* an attribute that takes FLOAT or DOUBLE */

typedef struct Attr {
  int name, type;
  int64_t n;
  unsigned char *v;
} Attr;

typedef struct Desc {
  int magic, type;
  bool final;
  int engine;                     /* ENGINECFG, ENGINE */
  struct Desc *graph;             /* ENGINECFG, ENGINE: the graph */
  Attr attrs[MAX_ATTRS];
  int nattrs;
} Desc;

static const struct {
  int name, owner, type, max;
} specs[] = {
  {CUDNN_ATTR_POINTWISE_MODE, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_TYPE_POINTWISE_MODE, 1},
  {CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, 1},
  {CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, 1},
  {CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_TYPE_CONVOLUTION_MODE, 1},
  {CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_TYPE_INT64, 3},
  {CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_TYPE_INT64, 3},
  {CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_TYPE_INT64, 3},
  {CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_TYPE_INT64, 3},
  {CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, CUDNN_TYPE_INT64, 1},
  {CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_TYPE_HEUR_MODE, 1},
  {CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1},
  {CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_TYPE_HANDLE, 1},
  {CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1},
#define CONV_ATTRS(OWNER, ALPHA, BETA, DESC, A, B, C)                                     \
  {ALPHA, OWNER, SCALAR, 1}, {BETA, OWNER, SCALAR, 1},                                   \
  {DESC, OWNER, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1}, {A, OWNER, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1}, \
  {B, OWNER, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1}, {C, OWNER, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1},
  CONV_ATTRS(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y)
  CONV_ATTRS(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY)
  CONV_ATTRS(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
             CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY)
  {CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1},
  {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1},
  {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1},
  {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1},
  {CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, SCALAR, 1},
  {CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, SCALAR, 1},
  {CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_TYPE_HANDLE, 1},
  {CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 16},
  {CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, 1},
  {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, 1},
  {CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, 8},
  {CUDNN_ATTR_TENSOR_STRIDES, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, 8},
  {CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, 1},
  {CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_BOOLEAN, 1},
  {CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_TYPE_INT64, 16},
  {CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_TYPE_VOID_PTR, 16},
  {CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_TYPE_VOID_PTR, 1},
};

static int live;
static cudnnHandle_t the_handle;
static cudaStream_t the_stream;   /* cudnnSetStream's */
static char last_error[256];

MOCK_EXPORT int mock_live_descriptors(void);
int mock_live_descriptors(void) { return live; }

static cudnnStatus_t fail(cudnnStatus_t st, const char *why) {
  snprintf(last_error, sizeof last_error, "%s", why);
  mock_log("  error %d: %s", st, why);
  return st;
}

static int type_size(int t) {
  switch (t) {
  case CUDNN_TYPE_DATA_TYPE: case CUDNN_TYPE_CONVOLUTION_MODE: case CUDNN_TYPE_HEUR_MODE:
  case CUDNN_TYPE_NUMERICAL_NOTE: case CUDNN_TYPE_POINTWISE_MODE: case CUDNN_TYPE_FLOAT:
    return 4;
  case CUDNN_TYPE_BOOLEAN: return 1;
  default: return 8;
  }
}

static Desc *as_desc(cudnnBackendDescriptor_t d) {
  Desc *x = d;
  return x && x->magic == MAGIC ? x : NULL;
}
static Attr *attr(Desc *d, int name) {
  for (int k = 0; k < d->nattrs; k++)
    if (d->attrs[k].name == name) return &d->attrs[k];
  return NULL;
}
static int64_t i64(Desc *d, int name, int k) { return ((int64_t *)attr(d, name)->v)[k]; }
static int i32(Desc *d, int name) { return *(int32_t *)attr(d, name)->v; }
static Desc *sub(Desc *d, int name) {
  Attr *a = attr(d, name);
  return a ? as_desc(*(void **)a->v) : NULL;
}
static double scalar(Desc *d, int name, double dflt) {
  Attr *a = attr(d, name);
  if (!a) return dflt;
  return a->type == CUDNN_TYPE_DOUBLE ? *(double *)a->v : *(float *)a->v;
}

size_t cudnnGetVersion(void) { return 91900; }
const char *cudnnGetErrorString(cudnnStatus_t s) {
  switch (s) {
  case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
  case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
  case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
  case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
  case CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED: return "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED";
  default: return "CUDNN_STATUS_OTHER";
  }
}
void cudnnGetLastErrorString(char *m, size_t n) {
  snprintf(m, n, "%s", last_error);
  last_error[0] = 0;
}
cudnnStatus_t cudnnCreate(cudnnHandle_t *h) {
  mock_log("cudnnCreate");
  if (mock_failing("cudnnCreate"))
    return fail((cudnnStatus_t)mock_failing("cudnnCreate"), "mock: cudnnCreate fails");
  *h = the_handle = (cudnnHandle_t)malloc(1);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
  mock_log("cudnnDestroy");
  if (h != the_handle) return CUDNN_STATUS_BAD_PARAM;
  free(h);
  the_handle = NULL;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
  mock_log("cudnnSetStream %p", (void *)s);
  if (h == the_handle) the_stream = s;
  return h == the_handle ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t t,
                                           cudnnBackendDescriptor_t *out) {
  mock_log("cudnnBackendCreateDescriptor %d", t);
  Desc *d = calloc(1, sizeof *d);
  d->magic = MAGIC;
  d->type = t;
  d->engine = -1;
  *out = d;
  live++;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t p) {
  Desc *d = as_desc(p);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  for (int k = 0; k < d->nattrs; k++) free(d->attrs[k].v);
  d->magic = 0;
  free(d);
  live--;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t p, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  Desc *d = as_desc(p);
  if (!d || !v) return fail(CUDNN_STATUS_BAD_PARAM, "set: no descriptor or value");
  if (d->final) return fail(CUDNN_STATUS_BAD_PARAM, "set: descriptor already finalized");
  for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
    if (specs[k].name != (int)name) continue;
    if (specs[k].owner != d->type) return fail(CUDNN_STATUS_BAD_PARAM, "set: attribute of another descriptor type");
    if (specs[k].type == SCALAR ? type != CUDNN_TYPE_FLOAT && type != CUDNN_TYPE_DOUBLE
                                : (int)type != specs[k].type)
      return fail(CUDNN_STATUS_BAD_PARAM, "set: wrong attribute type");
    if (n < 1 || n > specs[k].max) return fail(CUDNN_STATUS_BAD_PARAM, "set: wrong element count");
    Attr *a = attr(d, name);
    if (!a) a = &d->attrs[d->nattrs++];
    free(a->v);
    *a = (Attr){name, type, n, malloc((size_t)(n * type_size(type)))};
    memcpy(a->v, v, (size_t)(n * type_size(type)));
    return CUDNN_STATUS_SUCCESS;
  }
  return fail(CUDNN_STATUS_BAD_PARAM, "set: unknown attribute");
}

static int64_t tensor_id(Desc *t) { return i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0); }
static int rank(Desc *t) { return (int)attr(t, CUDNN_ATTR_TENSOR_DIMENSIONS)->n; }
static int64_t dim(Desc *t, int k) { return i64(t, CUDNN_ATTR_TENSOR_DIMENSIONS, k); }
static bool is_virtual(Desc *t) {
  Attr *a = attr(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
  return a && *(bool *)a->v;
}
static bool is_conv(int type) {
  return type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
         type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
         type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}
/* A convolution operation's x, w, y tensors, conv descriptor, alpha, beta
 * attribute names. */
static void conv_names(int type, int n[6]) {
  if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR) {
    int v[] = {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
               CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
    memcpy(n, v, sizeof v);
  } else if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR) {
    int v[] = {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
    memcpy(n, v, sizeof v);
  } else {
    int v[] = {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
    memcpy(n, v, sizeof v);
  }
}

static bool has_all(Desc *d, const int *names, int n) {
  for (int k = 0; k < n; k++)
    if (!attr(d, names[k])) return false;
  return true;
}

static cudnnStatus_t finalize_conv_op(Desc *d) {
  int n[6];
  conv_names(d->type, n);
  if (!has_all(d, n, 6)) return fail(CUDNN_STATUS_BAD_PARAM, "conv op: missing attribute");
  Desc *x = sub(d, n[0]), *w = sub(d, n[1]), *y = sub(d, n[2]), *cd = sub(d, n[3]);
  if (!x || !w || !y || !cd || !x->final || !w->final || !y->final || !cd->final)
    return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "conv op: input not finalized");
  int nd = rank(x), sp = (int)i64(cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 0);
  if (rank(w) != nd || rank(y) != nd || sp != nd - 2)
    return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "conv op: ranks differ");
  int64_t c = dim(x, 1), cg = dim(w, 1), o = dim(w, 0);
  if (c % cg || o % (c / cg) || dim(y, 1) != o || dim(y, 0) != dim(x, 0))
    return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "conv op: channels do not fit");
  for (int s = 0; s < sp; s++) {
    int64_t span = i64(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, s) * (dim(w, 2 + s) - 1) + 1;
    int64_t padded = dim(x, 2 + s) + i64(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, s) +
                     i64(cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, s);
    if (dim(y, 2 + s) != (padded - span) / i64(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, s) + 1)
      return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "conv op: wrong output size");
  }
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_graph(Desc *d) {
  if (!attr(d, CUDNN_ATTR_OPERATIONGRAPH_OPS) || !attr(d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE))
    return fail(CUDNN_STATUS_BAD_PARAM, "graph: missing attribute");
  if (*(cudnnHandle_t *)attr(d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE)->v != the_handle)
    return fail(CUDNN_STATUS_BAD_PARAM, "graph: not our handle");
  Attr *ops = attr(d, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  /* every tensor id names one tensor; a virtual tensor is written once and read */
  Desc *seen[64];
  int nseen = 0, written[64] = {0}, read[64] = {0};
  for (int64_t k = 0; k < ops->n; k++) {
    Desc *op = as_desc(((void **)ops->v)[k]);
    if (!op || !op->final) return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "graph: op not finalized");
    Desc *ts[3];
    int outs;
    if (is_conv(op->type)) {
      int n[6];
      conv_names(op->type, n);
      int out = op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ? 2
                : op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ? 0 : 1;
      for (int t = 0; t < 3; t++) ts[t] = sub(op, n[t]);
      Desc *tmp = ts[out];
      ts[out] = ts[2];
      ts[2] = tmp;
      outs = 1;
    } else {
      ts[0] = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
      ts[1] = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
      ts[2] = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
      outs = 1;
    }
    for (int t = 0; t < 3; t++) {
      if (!ts[t]) continue;
      int s = 0;
      while (s < nseen && seen[s] != ts[t]) {
        if (tensor_id(seen[s]) == tensor_id(ts[t]))
          return fail(CUDNN_STATUS_BAD_PARAM, "graph: two tensors with one id");
        s++;
      }
      if (s == nseen) seen[nseen++] = ts[t];
      if (t >= 3 - outs) written[s]++;
      else read[s]++;
    }
  }
  for (int s = 0; s < nseen; s++)
    if (is_virtual(seen[s]) && (written[s] != 1 || read[s] < 1))
      return fail(CUDNN_STATUS_BAD_PARAM, "graph: a virtual tensor is not written once and read");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t p) {
  Desc *d = as_desc(p);
  if (!d || d->final) return fail(CUDNN_STATUS_BAD_PARAM, "finalize: bad descriptor");
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  switch (d->type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR: {
    int need[] = {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_ATTR_TENSOR_STRIDES,
                  CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT};
    if (!has_all(d, need, 5)) st = fail(CUDNN_STATUS_BAD_PARAM, "tensor: missing attribute");
    else if (rank(d) < 3 || attr(d, CUDNN_ATTR_TENSOR_STRIDES)->n != rank(d))
      st = fail(CUDNN_STATUS_BAD_PARAM, "tensor: bad rank");
    break;
  }
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: {
    int need[] = {CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                  CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                  CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                  CUDNN_ATTR_CONVOLUTION_POST_PADDINGS};
    if (!has_all(d, need, 7)) { st = fail(CUDNN_STATUS_BAD_PARAM, "convolution: missing attribute"); break; }
    int64_t sp = i64(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 0);
    for (int k = 3; k < 7; k++)
      if (attr(d, need[k])->n != sp) st = fail(CUDNN_STATUS_BAD_PARAM, "convolution: counts differ");
    break;
  }
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    if (!attr(d, CUDNN_ATTR_POINTWISE_MODE) || !attr(d, CUDNN_ATTR_POINTWISE_MATH_PREC))
      st = fail(CUDNN_STATUS_BAD_PARAM, "pointwise: missing attribute");
    break;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    st = finalize_conv_op(d);
    break;
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
    Desc *pw = sub(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
    Desc *x = sub(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC), *b = sub(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
    Desc *y = sub(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
    if (!pw || !x || !y || !pw->final || !x->final || !y->final || (b && !b->final)) {
      st = fail(CUDNN_STATUS_BAD_PARAM, "pointwise op: missing or unfinalized input");
      break;
    }
    if ((i32(pw, CUDNN_ATTR_POINTWISE_MODE) == CUDNN_POINTWISE_ADD) != (b != NULL)) {
      st = fail(CUDNN_STATUS_BAD_PARAM, "pointwise op: ADD takes a B tensor, the others none");
      break;
    }
    if (rank(x) != rank(y) || (b && rank(b) != rank(y))) { st = fail(CUDNN_STATUS_BAD_PARAM, "pointwise op: ranks differ"); break; }
    for (int k = 0; k < rank(y); k++)
      if (dim(x, k) != dim(y, k) || (b && dim(b, k) != dim(y, k) && dim(b, k) != 1))
        st = fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "pointwise op: dims do not broadcast");
    break;
  }
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: st = finalize_graph(d); break;
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: {
    Desc *g = sub(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
    if (!g || !g->final || !attr(d, CUDNN_ATTR_ENGINEHEUR_MODE))
      st = fail(CUDNN_STATUS_BAD_PARAM, "heuristics: no finalized graph or mode");
    else
      mock_log("cudnnBackendFinalize heuristics mode=%d", i32(d, CUDNN_ATTR_ENGINEHEUR_MODE));
    break;
  }
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
    Desc *cfg = sub(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
    Attr *h = attr(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
    if (!cfg || !cfg->final || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || !h ||
        *(cudnnHandle_t *)h->v != the_handle) {
      st = fail(CUDNN_STATUS_BAD_PARAM, "plan: no finalized engine config or handle");
      break;
    }
    char key[32];
    snprintf(key, sizeof key, "plan-engine-%d", cfg->engine);
    mock_log("cudnnBackendFinalize plan engine=%d", cfg->engine);
    if (mock_failing(key)) st = fail((cudnnStatus_t)mock_failing(key), "mock: this engine does not build");
    d->engine = cfg->engine;
    d->graph = cfg->graph;
    break;
  }
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
    Attr *ids = attr(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), *ptrs = attr(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
    if (!ids || !ptrs || ids->n != ptrs->n || !attr(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE))
      st = fail(CUDNN_STATUS_BAD_PARAM, "variant pack: ids, pointers or workspace missing");
    else
      mock_log("cudnnBackendFinalize variant pack (%lld tensors)", (long long)ids->n);
    break;
  }
  default: st = fail(CUDNN_STATUS_BAD_PARAM, "finalize: unexpected descriptor type"); break;
  }
  if (st == CUDNN_STATUS_SUCCESS) d->final = true;
  return st;
}

static const int engine_ws[2] = {4096, 256};

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t p, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t req, int64_t *n,
                                       void *out) {
  Desc *d = as_desc(p);
  if (!d || !d->final || !n) return fail(CUDNN_STATUS_BAD_PARAM, "get: bad descriptor");
  if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS && d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR &&
      type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    int count = mock_failing("no-engines") ? 0 : 2;
    mock_log("cudnnBackendGetAttribute heuristic results (%lld requested)", (long long)req);
    if (req == 0) { *n = count; return CUDNN_STATUS_SUCCESS; }
    *n = req < count ? req : count;
    for (int64_t k = 0; k < *n; k++) {
      Desc *cfg = as_desc(((void **)out)[k]);
      if (!cfg || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR || cfg->final)
        return fail(CUDNN_STATUS_BAD_PARAM, "get: results need fresh engine config descriptors");
      cfg->engine = (int)k;
      cfg->graph = sub(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
      cfg->final = true;
    }
    return CUDNN_STATUS_SUCCESS;
  }
  if (name == CUDNN_ATTR_ENGINECFG_ENGINE && d->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR &&
      type == CUDNN_TYPE_BACKEND_DESCRIPTOR && req == 1) {
    Desc *e = as_desc(*(void **)out);
    if (!e || e->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR)
      return fail(CUDNN_STATUS_BAD_PARAM, "get: the engine needs an engine descriptor");
    e->engine = d->engine;
    e->graph = d->graph;
    e->final = true;
    *n = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  if (name == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE && d->type == CUDNN_BACKEND_ENGINE_DESCRIPTOR &&
      type == CUDNN_TYPE_NUMERICAL_NOTE) {
    mock_log("cudnnBackendGetAttribute numerical notes of engine %d", d->engine);
    *n = 0;
    if (d->engine == 0 && req >= 1) {
      ((cudnnBackendNumericalNote_t *)out)[0] = CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
      *n = 1;
    }
    return CUDNN_STATUS_SUCCESS;
  }
  if (name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE &&
      d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && type == CUDNN_TYPE_INT64 && req == 1) {
    *(int64_t *)out = engine_ws[d->engine];
    *n = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  return fail(CUDNN_STATUS_BAD_PARAM, "get: attribute not mocked");
}

/* ---- execution ---- */

typedef struct Buf {
  Desc *t;
  int type, nd;
  int64_t dims[8], strides[8];
  char *base;
  bool owned;                     /* a virtual tensor: doubles of ours */
} Buf;

static int elem_size(int t) {
  return t == CUDNN_DATA_DOUBLE ? 8 : t == CUDNN_DATA_FLOAT ? 4 : 2;
}
static double buf_get(const Buf *b, const int64_t *idx) {
  int64_t off = 0;
  for (int k = 0; k < b->nd; k++) off += idx[k] * b->strides[k];
  if (b->owned) return ((double *)b->base)[off];
  const char *p = b->base + off * elem_size(b->type);
  switch (b->type) {
  case CUDNN_DATA_FLOAT: return *(const float *)p;
  case CUDNN_DATA_DOUBLE: return *(const double *)p;
  case CUDNN_DATA_HALF: return f16_get(p);
  default: return bf16_get(p);
  }
}
static void buf_set(const Buf *b, const int64_t *idx, double v) {
  int64_t off = 0;
  for (int k = 0; k < b->nd; k++) off += idx[k] * b->strides[k];
  if (b->owned) { ((double *)b->base)[off] = v; return; }
  char *p = b->base + off * elem_size(b->type);
  switch (b->type) {
  case CUDNN_DATA_FLOAT: *(float *)p = (float)v; break;
  case CUDNN_DATA_DOUBLE: *(double *)p = v; break;
  case CUDNN_DATA_HALF: f16_set(p, v); break;
  default: bf16_set(p, v); break;
  }
}
static int64_t count_of(const int64_t *dims, int nd) {
  int64_t n = 1;
  for (int k = 0; k < nd; k++) n *= dims[k];
  return n;
}
/* flat (row-major) -> multi-index */
static void unflatten(int64_t f, const int64_t *dims, int nd, int64_t *idx) {
  for (int k = nd - 1; k >= 0; k--) {
    idx[k] = f % dims[k];
    f /= dims[k];
  }
}
static int64_t flatten(const int64_t *idx, const int64_t *dims, int nd) {
  int64_t f = 0;
  for (int k = 0; k < nd; k++) f = f * dims[k] + idx[k];
  return f;
}

/* conv of any kind: out = alpha * result + beta * out */
static void run_conv(Desc *op, Buf *x, Buf *w, Buf *y) {
  int n[6];
  conv_names(op->type, n);
  Desc *cd = sub(op, n[3]);
  double alpha = scalar(op, n[4], 1), beta = scalar(op, n[5], 0);
  int nd = x->nd, sp = nd - 2;
  Buf *out = op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ? y
             : op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ? x : w;
  int64_t total = count_of(out->dims, nd);
  double *acc = calloc((size_t)total, sizeof *acc);
  int64_t cg = w->dims[1], og = w->dims[0] / (x->dims[1] / cg);
  int64_t ny = count_of(y->dims, nd), nw = count_of(w->dims + 1, nd - 1);
  int64_t yi[8], wi[8], xi[8], ki[8];
  for (int64_t fy = 0; fy < ny; fy++) {
    unflatten(fy, y->dims, nd, yi);
    int64_t g = yi[1] / og;
    for (int64_t fw = 0; fw < nw; fw++) {
      unflatten(fw, w->dims + 1, nd - 1, ki); /* [c, k...] */
      wi[0] = yi[1];
      for (int k = 0; k < nd - 1; k++) wi[1 + k] = ki[k];
      xi[0] = yi[0];
      xi[1] = g * cg + ki[0];
      bool in = true;
      for (int s = 0; s < sp; s++) {
        xi[2 + s] = yi[2 + s] * i64(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, s) +
                    ki[1 + s] * i64(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, s) -
                    i64(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, s);
        in = in && xi[2 + s] >= 0 && xi[2 + s] < x->dims[2 + s];
      }
      if (!in) continue;
      if (out == y) acc[fy] += buf_get(x, xi) * buf_get(w, wi);
      else if (out == x) acc[flatten(xi, x->dims, nd)] += buf_get(y, yi) * buf_get(w, wi);
      else acc[flatten(wi, w->dims, nd)] += buf_get(x, xi) * buf_get(y, yi);
    }
  }
  int64_t oi[8];
  for (int64_t f = 0; f < total; f++) {
    unflatten(f, out->dims, nd, oi);
    double v = alpha * acc[f];
    if (beta != 0) v += beta * buf_get(out, oi);
    buf_set(out, oi, v);
  }
  free(acc);
}

static void run_pointwise(Desc *op, Buf *x, Buf *b, Buf *y) {
  Desc *pw = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
  int mode = i32(pw, CUDNN_ATTR_POINTWISE_MODE);
  double a1 = scalar(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 1);
  double a2 = scalar(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 1);
  int64_t idx[8], bidx[8];
  for (int64_t f = 0; f < count_of(y->dims, y->nd); f++) {
    unflatten(f, y->dims, y->nd, idx);
    double v = a1 * buf_get(x, idx);
    if (b) {
      for (int k = 0; k < y->nd; k++) bidx[k] = b->dims[k] == 1 ? 0 : idx[k];
      v += a2 * buf_get(b, bidx);
    }
    if (mode == CUDNN_POINTWISE_RELU_FWD) v = v > 0 ? v : 0;
    if (mode == CUDNN_POINTWISE_GELU_APPROX_TANH_FWD) v = gelu_tanh(v);
    if (mode == CUDNN_POINTWISE_GELU_FWD) v = gelu_erf(v);
    buf_set(y, idx, v);
  }
}

static const char *dtype_name(int t) {
  return t == CUDNN_DATA_FLOAT ? "FLOAT" : t == CUDNN_DATA_DOUBLE ? "DOUBLE"
         : t == CUDNN_DATA_HALF ? "HALF" : t == CUDNN_DATA_BFLOAT16 ? "BFLOAT16" : "?";
}
static const char *pw_name(int m) {
  return m == CUDNN_POINTWISE_ADD ? "ADD" : m == CUDNN_POINTWISE_RELU_FWD ? "RELU_FWD"
         : m == CUDNN_POINTWISE_GELU_FWD ? "GELU_FWD"
         : m == CUDNN_POINTWISE_GELU_APPROX_TANH_FWD ? "GELU_APPROX_TANH_FWD" : "?";
}

/* appends "[a,b,c]" */
static void put_list(char **s, size_t *len, size_t *cap, Desc *d, int name) {
  Attr *a = attr(d, name);
  for (int64_t k = 0; k < a->n; k++) {
    if (*len + 32 > *cap) *s = realloc(*s, *cap = *cap * 2 + 64);
    *len += (size_t)sprintf(*s + *len, "%s%lld", k ? "," : "[", (long long)((int64_t *)a->v)[k]);
  }
  *len += (size_t)sprintf(*s + *len, "]");
}
#define PUT(...)                                                                 \
  do {                                                                           \
    if (len + 512 > cap) text = realloc(text, cap = cap * 2 + 1024);             \
    len += (size_t)snprintf(text + len, cap - len, __VA_ARGS__);                 \
  } while (0)

static cudnnStatus_t execute(Desc *plan, Desc *vp);

/* An execution recorded into a capture: the plan (the caller keeps it as
 * long as its handle) and a copy of the variant pack. */
typedef struct Deferred {
  Desc *plan;
  Desc vp;
} Deferred;

static void run_deferred(void *p) {
  Deferred *x = p;
  execute(x->plan, &x->vp);
}

/* Records the execution into the capture of the handle's stream (1), or 0
 * when the mock libcuda is not capturing it. */
static int defer(Desc *plan, const Desc *vp) {
  if (!the_stream) return 0;
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  int (*fn)(void *, void (*)(void *), void *) =
      cu ? (int (*)(void *, void (*)(void *), void *))dlsym(cu, "mock_cuda_defer") : NULL;
  if (!fn) return 0;
  Deferred *x = malloc(sizeof *x);  /* the graph keeps it */
  x->plan = plan;
  x->vp = *vp;
  for (int k = 0; k < vp->nattrs; k++) {
    size_t n = (size_t)(vp->attrs[k].n * type_size(vp->attrs[k].type));
    x->vp.attrs[k].v = malloc(n + 1);
    memcpy(x->vp.attrs[k].v, vp->attrs[k].v, n);
  }
  if (fn(the_stream, run_deferred, x)) {
    mock_keep(x);
    return 1;
  }
  for (int k = 0; k < vp->nattrs; k++) free(x->vp.attrs[k].v);
  free(x);
  return 0;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t h, cudnnBackendDescriptor_t pp,
                                  cudnnBackendDescriptor_t vpp) {
  Desc *plan = as_desc(pp), *vp = as_desc(vpp);
  if (h != the_handle || !plan || !plan->final || plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      !vp || !vp->final || vp->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return fail(CUDNN_STATUS_BAD_PARAM, "execute: bad handle, plan or variant pack");
  if (defer(plan, vp)) {
    mock_log("cudnnBackendExecute captured");
    return CUDNN_STATUS_SUCCESS;
  }
  return execute(plan, vp);
}

static cudnnStatus_t execute(Desc *plan, Desc *vp) {
  Desc *graph = plan->graph;
  Attr *ops = attr(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  Attr *ids = attr(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS), *ptrs = attr(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  void *ws = *(void **)attr(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE)->v;
  char *text = NULL;
  size_t len = 0, cap = 0;
  PUT("cudnnBackendExecute engine=%d workspace=%p", plan->engine, ws);
  /* the tensors, in the order the ops name them */
  Buf bufs[32];
  int nb = 0;
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  for (int64_t k = 0; k < ops->n; k++) {
    Desc *op = as_desc(((void **)ops->v)[k]);
    Desc *ts[3] = {0};
    const char *labels[3];
    if (is_conv(op->type)) {
      int n[6];
      conv_names(op->type, n);
      for (int t = 0; t < 3; t++) ts[t] = sub(op, n[t]);
      bool fwd = op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
      bool bd = op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
      Desc *cd = sub(op, n[3]);
      PUT("\n  %s %s=#%lld %s=#%lld %s=#%lld alpha=%g beta=%g comp=%s mode=%s pre=",
          fwd ? "conv_fwd" : bd ? "conv_bwd_data" : "conv_bwd_filter", bd ? "dx" : "x",
          (long long)tensor_id(ts[0]), fwd || bd ? "w" : "dw", (long long)tensor_id(ts[1]),
          fwd ? "y" : "dy", (long long)tensor_id(ts[2]), scalar(op, n[4], 1),
          scalar(op, n[5], 0), dtype_name(i32(cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE)),
          i32(cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE) == CUDNN_CROSS_CORRELATION ? "CROSS_CORRELATION" : "CONVOLUTION");
      put_list(&text, &len, &cap, cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS);
      PUT(" post=");
      put_list(&text, &len, &cap, cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS);
      PUT(" stride=");
      put_list(&text, &len, &cap, cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES);
      PUT(" dilation=");
      put_list(&text, &len, &cap, cd, CUDNN_ATTR_CONVOLUTION_DILATIONS);
      (void)labels;
    } else {
      Desc *pw = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
      ts[0] = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
      ts[1] = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
      ts[2] = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
      PUT("\n  pointwise %s prec=%s x=#%lld", pw_name(i32(pw, CUDNN_ATTR_POINTWISE_MODE)),
          dtype_name(i32(pw, CUDNN_ATTR_POINTWISE_MATH_PREC)), (long long)tensor_id(ts[0]));
      if (ts[1]) PUT(" b=#%lld", (long long)tensor_id(ts[1]));
      PUT(" y=#%lld", (long long)tensor_id(ts[2]));
      if (attr(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1))
        PUT(" alpha1=%g alpha2=%g", scalar(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 1),
            scalar(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 1));
    }
    for (int t = 0; t < 3; t++) {
      if (!ts[t]) continue;
      int s = 0;
      while (s < nb && bufs[s].t != ts[t]) s++;
      if (s < nb) continue;
      Buf *b = &bufs[nb++];
      *b = (Buf){ts[t], i32(ts[t], CUDNN_ATTR_TENSOR_DATA_TYPE), rank(ts[t]), {0}, {0}, NULL, false};
      for (int k2 = 0; k2 < b->nd; k2++) {
        b->dims[k2] = dim(ts[t], k2);
        b->strides[k2] = i64(ts[t], CUDNN_ATTR_TENSOR_STRIDES, k2);
      }
    }
  }
  /* bind the pointers, sorted by id for the log */
  for (int i = 0; i < nb; i++)
    for (int j = i + 1; j < nb; j++)
      if (tensor_id(bufs[j].t) < tensor_id(bufs[i].t)) {
        Buf tmp = bufs[i];
        bufs[i] = bufs[j];
        bufs[j] = tmp;
      }
  for (int i = 0; i < nb; i++) {
    Buf *b = &bufs[i];
    int64_t id = tensor_id(b->t), align = i64(b->t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 0);
    if (is_virtual(b->t)) {
      int64_t extent = 1;
      for (int k = 0; k < b->nd; k++) extent += (b->dims[k] - 1) * b->strides[k];
      b->base = calloc((size_t)extent, sizeof(double));
      b->owned = true;
    } else {
      for (int64_t k = 0; k < ids->n; k++)
        if (((int64_t *)ids->v)[k] == id) b->base = ((char **)ptrs->v)[k];
      if (!b->base) st = fail(CUDNN_STATUS_BAD_PARAM, "execute: a tensor is not in the variant pack");
      else if ((uintptr_t)b->base % (uintptr_t)align)
        st = fail(CUDNN_STATUS_BAD_PARAM, "execute: a pointer is not as aligned as its tensor says");
    }
    PUT("\n  tensor #%lld %s dims=", (long long)id, dtype_name(b->type));
    put_list(&text, &len, &cap, b->t, CUDNN_ATTR_TENSOR_DIMENSIONS);
    PUT(" strides=");
    put_list(&text, &len, &cap, b->t, CUDNN_ATTR_TENSOR_STRIDES);
    PUT(" align=%lld", (long long)align);
    if (is_virtual(b->t)) PUT(" virtual");
    else PUT(" @%p", (void *)b->base);
  }
  mock_log("%s", text);
  free(text);
  if (engine_ws[plan->engine] > 0 && !ws) st = fail(CUDNN_STATUS_BAD_PARAM, "execute: no workspace");
  if (st == CUDNN_STATUS_SUCCESS && mock_failing("cudnnBackendExecute"))
    st = fail((cudnnStatus_t)mock_failing("cudnnBackendExecute"), "mock: the kernel failed");
  for (int64_t k = 0; k < ops->n && st == CUDNN_STATUS_SUCCESS; k++) {
    Desc *op = as_desc(((void **)ops->v)[k]);
    Desc *ts[3] = {0};
    if (is_conv(op->type)) {
      int n[6];
      conv_names(op->type, n);
      /* x, w, y in the forward sense */
      Desc *a = sub(op, n[0]), *b = sub(op, n[1]), *c = sub(op, n[2]);
      ts[0] = a, ts[1] = b, ts[2] = c;
    } else {
      ts[0] = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
      ts[1] = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
      ts[2] = sub(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
    }
    Buf *bs[3] = {0};
    for (int t = 0; t < 3; t++)
      for (int i = 0; i < nb && ts[t]; i++)
        if (bufs[i].t == ts[t]) bs[t] = &bufs[i];
    if (is_conv(op->type)) run_conv(op, bs[0], bs[1], bs[2]);
    else run_pointwise(op, bs[0], bs[1], bs[2]);
  }
  for (int i = 0; i < nb; i++)
    if (bufs[i].owned) free(bufs[i].base);
  return st;
}
