/*
 * cublaslt.c - a mock libcublasLt.so.13 for check-cuda-libs.sh.
 *
 * It keeps the descriptors' attributes with cuBLASLt's sizes (a wrong size
 * or an unknown attribute is CUBLAS_STATUS_INVALID_VALUE, as in the real
 * library), checks what the real heuristic checks (types against the
 * compute type, op(A') M x K, op(B') K x N, C and D M x N, leading
 * dimensions, equal batch counts, the bias, f8 only as "TN" with column-
 * major matrices as on Hopper), and cublasLtMatmul computes D for real on
 * the (host) memory, reading every layout as cuBLASLt defines it.  Its one
 * algorithm wants 4096 bytes of workspace when allowed, and assumes the
 * pointer alignments of the preference (256 bytes by default), which
 * cublasLtMatmul checks.  Each cublasLtMatmul logs one line with the whole
 * state it ran with.  On a stream the mock libcuda is capturing, the
 * multiply is recorded into the capture (mock_cuda_defer) with the
 * descriptors and pointers as they are at the call, and runs when the
 * graph is launched.
 */
#include <dlfcn.h>

#include "../../lib/runtime/cublaslt_min.h"
#include "mock_util.h"

enum { MAGIC_LAYOUT = 0x4c41, MAGIC_DESC = 0x4445, MAGIC_PREF = 0x5052, MAGIC_ALGO = 0x414c };
#define WS_WANTED 4096

typedef struct Layout {
  int magic;
  int32_t type, order, batch;
  uint64_t rows, cols;
  int64_t ld, stride;
} Layout;

typedef struct Desc {
  int magic;
  int32_t compute, scale, pointer_mode, transa, transb, transc, bias_type;
  uint32_t epilogue;
  const void *bias, *scale_a, *scale_b, *scale_d;
  int64_t bias_stride;
} Desc;

typedef struct Pref {
  int magic;
  uint32_t search, align[4];
  uint64_t max_ws;
} Pref;

static int live;

MOCK_EXPORT int mock_live_descriptors(void);
int mock_live_descriptors(void) { return live; }

static const char *type_name(int t) {
  switch (t) {
  case CUDA_R_32F: return "R_32F";
  case CUDA_R_64F: return "R_64F";
  case CUDA_R_16F: return "R_16F";
  case CUDA_R_16BF: return "R_16BF";
  case CUDA_R_8F_E4M3: return "R_8F_E4M3";
  case CUDA_R_8F_E5M2: return "R_8F_E5M2";
  case -1: return "default";
  default: return "?";
  }
}
static int type_size(int t) {
  switch (t) {
  case CUDA_R_32F: return 4;
  case CUDA_R_64F: return 8;
  case CUDA_R_16F: case CUDA_R_16BF: return 2;
  case CUDA_R_8F_E4M3: case CUDA_R_8F_E5M2: return 1;
  default: return 0;
  }
}
static const char *compute_name(int c) {
  return c == CUBLAS_COMPUTE_32F ? "32F" : c == CUBLAS_COMPUTE_32F_FAST_TF32 ? "32F_FAST_TF32"
         : c == CUBLAS_COMPUTE_64F ? "64F" : "?";
}
static const char *epilogue_name(uint32_t e) {
  switch (e) {
  case CUBLASLT_EPILOGUE_DEFAULT: return "DEFAULT";
  case CUBLASLT_EPILOGUE_RELU: return "RELU";
  case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
  case CUBLASLT_EPILOGUE_RELU_BIAS: return "RELU_BIAS";
  case CUBLASLT_EPILOGUE_GELU: return "GELU";
  case CUBLASLT_EPILOGUE_GELU_BIAS: return "GELU_BIAS";
  default: return "?";
  }
}
static bool is_f8(int t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }

static double get(int t, const void *p) {
  switch (t) {
  case CUDA_R_32F: return *(const float *)p;
  case CUDA_R_64F: return *(const double *)p;
  case CUDA_R_16F: return f16_get(p);
  case CUDA_R_16BF: return bf16_get(p);
  case CUDA_R_8F_E4M3: return e4m3_get(p);
  case CUDA_R_8F_E5M2: return e5m2_get(p);
  default: abort();
  }
}
static void set(int t, void *p, double v) {
  switch (t) {
  case CUDA_R_32F: *(float *)p = (float)v; break;
  case CUDA_R_64F: *(double *)p = v; break;
  case CUDA_R_16F: f16_set(p, v); break;
  case CUDA_R_16BF: bf16_set(p, v); break;
  default: abort();
  }
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
  mock_log("cublasLtCreate");
  if (mock_failing("cublasLtCreate")) return (cublasStatus_t)mock_failing("cublasLtCreate");
  *h = (cublasLtHandle_t)malloc(1);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  mock_log("cublasLtDestroy");
  free(h);
  return CUBLAS_STATUS_SUCCESS;
}
size_t cublasLtGetVersion(void) { return 130000; }
const char *cublasLtGetStatusName(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  default: return "CUBLAS_STATUS_OTHER";
  }
}
const char *cublasLtGetStatusString(cublasStatus_t s) {
  return s == CUBLAS_STATUS_EXECUTION_FAILED ? "the GPU program failed to execute" : "mock status";
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c,
                                        cudaDataType_t s) {
  mock_log("cublasLtMatmulDescCreate compute=%s scale=%s", compute_name(c), type_name(s));
  Desc *x = calloc(1, sizeof *x);
  *x = (Desc){MAGIC_DESC, c, s, 0, CUBLAS_OP_N, CUBLAS_OP_N, CUBLAS_OP_N, -1,
              CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL, NULL, NULL, 0};
  *d = (cublasLtMatmulDesc_t)x;
  live++;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  Desc *x = (Desc *)d;
  if (!x || x->magic != MAGIC_DESC) return CUBLAS_STATUS_INVALID_VALUE;
  x->magic = 0;
  free(x);
  live--;
  return CUBLAS_STATUS_SUCCESS;
}
#define ATTR(id, field, name)                                                   \
  case id:                                                                      \
    if (n != sizeof x->field) return CUBLAS_STATUS_INVALID_VALUE;               \
    memcpy(&x->field, v, n);                                                    \
    what = name;                                                                \
    break;
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t a, const void *v,
                                              size_t n) {
  Desc *x = (Desc *)d;
  const char *what = NULL;
  if (!x || x->magic != MAGIC_DESC || !v) return CUBLAS_STATUS_INVALID_VALUE;
  switch (a) {
  ATTR(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, compute, "COMPUTE_TYPE")
  ATTR(CUBLASLT_MATMUL_DESC_SCALE_TYPE, scale, "SCALE_TYPE")
  ATTR(CUBLASLT_MATMUL_DESC_POINTER_MODE, pointer_mode, "POINTER_MODE")
  ATTR(CUBLASLT_MATMUL_DESC_TRANSA, transa, "TRANSA")
  ATTR(CUBLASLT_MATMUL_DESC_TRANSB, transb, "TRANSB")
  ATTR(CUBLASLT_MATMUL_DESC_TRANSC, transc, "TRANSC")
  ATTR(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, "EPILOGUE")
  ATTR(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, "BIAS_POINTER")
  ATTR(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, bias_stride, "BIAS_BATCH_STRIDE")
  ATTR(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale_a, "A_SCALE_POINTER")
  ATTR(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale_b, "B_SCALE_POINTER")
  ATTR(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, scale_d, "D_SCALE_POINTER")
  ATTR(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type, "BIAS_DATA_TYPE")
  default: return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (a == CUBLASLT_MATMUL_DESC_BIAS_POINTER)
    mock_log("cublasLtMatmulDescSetAttribute %s=%p", what, x->bias);
  else if (a == CUBLASLT_MATMUL_DESC_EPILOGUE)
    mock_log("cublasLtMatmulDescSetAttribute %s=%s", what, epilogue_name(x->epilogue));
  else if (a == CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE)
    mock_log("cublasLtMatmulDescSetAttribute %s=%s", what, type_name(x->bias_type));
  else
    mock_log("cublasLtMatmulDescSetAttribute %s=%d", what, *(const int32_t *)v);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  mock_log("cublasLtMatrixLayoutCreate %s %llux%llu ld=%lld", type_name(t),
           (unsigned long long)rows, (unsigned long long)cols, (long long)ld);
  if (!type_size(t)) return CUBLAS_STATUS_INVALID_VALUE;
  Layout *x = calloc(1, sizeof *x);
  *x = (Layout){MAGIC_LAYOUT, t, CUBLASLT_ORDER_COL, 1, rows, cols, ld, 0};
  *l = (cublasLtMatrixLayout_t)x;
  live++;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  Layout *x = (Layout *)l;
  if (!x || x->magic != MAGIC_LAYOUT) return CUBLAS_STATUS_INVALID_VALUE;
  x->magic = 0;
  free(x);
  live--;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t a,
                                                const void *v, size_t n) {
  Layout *x = (Layout *)l;
  const char *what = NULL;
  if (!x || x->magic != MAGIC_LAYOUT || !v) return CUBLAS_STATUS_INVALID_VALUE;
  switch (a) {
  ATTR(CUBLASLT_MATRIX_LAYOUT_TYPE, type, "TYPE")
  ATTR(CUBLASLT_MATRIX_LAYOUT_ORDER, order, "ORDER")
  ATTR(CUBLASLT_MATRIX_LAYOUT_ROWS, rows, "ROWS")
  ATTR(CUBLASLT_MATRIX_LAYOUT_COLS, cols, "COLS")
  ATTR(CUBLASLT_MATRIX_LAYOUT_LD, ld, "LD")
  ATTR(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch, "BATCH_COUNT")
  ATTR(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride, "STRIDED_BATCH_OFFSET")
  default: return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (n == 8) mock_log("cublasLtMatrixLayoutSetAttribute %s=%lld", what, *(const long long *)v);
  else mock_log("cublasLtMatrixLayoutSetAttribute %s=%d", what, *(const int32_t *)v);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  mock_log("cublasLtMatmulPreferenceCreate");
  Pref *x = calloc(1, sizeof *x);
  *x = (Pref){MAGIC_PREF, 0, {256, 256, 256, 256}, 0};
  *p = (cublasLtMatmulPreference_t)x;
  live++;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  Pref *x = (Pref *)p;
  if (!x || x->magic != MAGIC_PREF) return CUBLAS_STATUS_INVALID_VALUE;
  mock_log("cublasLtMatmulPreferenceDestroy");
  x->magic = 0;
  free(x);
  live--;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t a,
                                                    const void *v, size_t n) {
  Pref *x = (Pref *)p;
  const char *what = NULL;
  if (!x || x->magic != MAGIC_PREF || !v) return CUBLAS_STATUS_INVALID_VALUE;
  switch (a) {
  ATTR(CUBLASLT_MATMUL_PREF_SEARCH_MODE, search, "SEARCH_MODE")
  ATTR(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_ws, "MAX_WORKSPACE_BYTES")
  ATTR(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align[0], "MIN_ALIGNMENT_A_BYTES")
  ATTR(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align[1], "MIN_ALIGNMENT_B_BYTES")
  ATTR(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align[2], "MIN_ALIGNMENT_C_BYTES")
  ATTR(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align[3], "MIN_ALIGNMENT_D_BYTES")
  default: return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (n == 8) mock_log("cublasLtMatmulPreferenceSetAttribute %s=%llu", what,
                       *(const unsigned long long *)v);
  else mock_log("cublasLtMatmulPreferenceSetAttribute %s=%u", what, *(const uint32_t *)v);
  return CUBLAS_STATUS_SUCCESS;
}
#undef ATTR

/* The checks of the real heuristic that matter here. */
static cublasStatus_t check_problem(const Desc *op, const Layout *a, const Layout *b,
                                    const Layout *c, const Layout *d) {
  if (!op || op->magic != MAGIC_DESC || !a || a->magic != MAGIC_LAYOUT || !b ||
      b->magic != MAGIC_LAYOUT || !c || c->magic != MAGIC_LAYOUT || !d ||
      d->magic != MAGIC_LAYOUT)
    return CUBLAS_STATUS_INVALID_VALUE;
  /* types */
  int ta = a->type, tb = b->type, td = d->type;
  bool ok;
  if (op->compute == CUBLAS_COMPUTE_64F)
    ok = op->scale == CUDA_R_64F && ta == CUDA_R_64F && tb == CUDA_R_64F && td == CUDA_R_64F;
  else if (op->compute == CUBLAS_COMPUTE_32F_FAST_TF32)
    ok = op->scale == CUDA_R_32F && ta == CUDA_R_32F && tb == CUDA_R_32F && td == CUDA_R_32F;
  else if (op->compute == CUBLAS_COMPUTE_32F)
    ok = op->scale == CUDA_R_32F &&
         ((ta == CUDA_R_32F && tb == ta && td == ta) ||
          ((ta == CUDA_R_16F || ta == CUDA_R_16BF) && tb == ta && (td == ta || td == CUDA_R_32F)) ||
          (is_f8(ta) && is_f8(tb) && !(ta == CUDA_R_8F_E5M2 && tb == CUDA_R_8F_E5M2) &&
           (td == CUDA_R_16F || td == CUDA_R_16BF || td == CUDA_R_32F)));
  else
    ok = false;
  if (!ok || c->type != td) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (is_f8(ta) && (op->transa != CUBLAS_OP_T || op->transb != CUBLAS_OP_N ||
                    a->order != CUBLASLT_ORDER_COL || b->order != CUBLASLT_ORDER_COL ||
                    d->order != CUBLASLT_ORDER_COL))
    return CUBLAS_STATUS_NOT_SUPPORTED; /* Hopper's f8 kernels are TN */
  /* shapes */
  uint64_t m = d->rows, n = d->cols;
  uint64_t am = op->transa == CUBLAS_OP_T ? a->cols : a->rows;
  uint64_t ak = op->transa == CUBLAS_OP_T ? a->rows : a->cols;
  uint64_t bk = op->transb == CUBLAS_OP_T ? b->cols : b->rows;
  uint64_t bn = op->transb == CUBLAS_OP_T ? b->rows : b->cols;
  if (am != m || bn != n || ak != bk || c->rows != m || c->cols != n ||
      op->transc != CUBLAS_OP_N)
    return CUBLAS_STATUS_INVALID_VALUE;
  const Layout *all[] = {a, b, c, d};
  for (int k = 0; k < 4; k++) {
    const Layout *l = all[k];
    if (l->order == CUBLASLT_ORDER_COL ? l->ld < (int64_t)(l->rows ? l->rows : 1)
                                       : l->ld < (int64_t)(l->cols ? l->cols : 1))
      return CUBLAS_STATUS_INVALID_VALUE;
    if (l->order != CUBLASLT_ORDER_COL && l->order != CUBLASLT_ORDER_ROW)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    if (l->batch != d->batch) return CUBLAS_STATUS_INVALID_VALUE;
  }
  /* epilogue */
  uint32_t e = op->epilogue;
  if (strcmp(epilogue_name(e), "?") == 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  if ((e & CUBLASLT_EPILOGUE_BIAS) && !op->bias) return CUBLAS_STATUS_INVALID_VALUE;
  if (op->bias_type != -1 && !type_size(op->bias_type)) return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

/* The alignment of a pointer, up to 256. */
static uint64_t ptr_align(const void *p) {
  uint64_t a = 1;
  while (a < 256 && !((uintptr_t)p & a)) a <<= 1;
  return a;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t op,
                                              cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c,
                                              cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t *res, int *count) {
  Pref *p = (Pref *)pref;
  *count = 0;
  if (!h || !p || p->magic != MAGIC_PREF || requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  cublasStatus_t st = check_problem((Desc *)op, (Layout *)a, (Layout *)b, (Layout *)c,
                                    (Layout *)d);
  if (st == CUBLAS_STATUS_SUCCESS && mock_failing("cublasLtMatmulAlgoGetHeuristic"))
    st = (cublasStatus_t)mock_failing("cublasLtMatmulAlgoGetHeuristic");
  if ((int)st == -1) { /* injected: no algorithm */
    mock_log("cublasLtMatmulAlgoGetHeuristic -> 0");
    return CUBLAS_STATUS_SUCCESS;
  }
  if (st != CUBLAS_STATUS_SUCCESS) {
    mock_log("cublasLtMatmulAlgoGetHeuristic -> status %d", st);
    return st;
  }
  memset(res, 0, sizeof *res);
  size_t ws = p->max_ws >= WS_WANTED ? WS_WANTED : 0;
  res->algo.data[0] = MAGIC_ALGO;
  for (int k = 0; k < 4; k++) res->algo.data[1 + k] = p->align[k];
  res->algo.data[5] = ws;
  res->algo.data[6] = ptr_align(((Desc *)op)->bias);
  res->workspaceSize = ws;
  res->state = CUBLAS_STATUS_SUCCESS;
  *count = 1;
  mock_log("cublasLtMatmulAlgoGetHeuristic -> 1 (workspace %zu, alignments %u %u %u %u)", ws,
           p->align[0], p->align[1], p->align[2], p->align[3]);
  return CUBLAS_STATUS_SUCCESS;
}

static void layout_text(char *buf, size_t n, const char *name, const Layout *l, const void *p) {
  snprintf(buf, n, " %s=%s %llux%llu ld=%lld %s batch=%d stride=%lld @%p", name,
           type_name(l->type), (unsigned long long)l->rows, (unsigned long long)l->cols,
           (long long)l->ld, l->order == CUBLASLT_ORDER_ROW ? "ROW" : "COL", l->batch,
           (long long)l->stride, p);
}

/* Element (i, j) of matrix l in batch b. */
static const char *elem(const Layout *l, const void *base, int b, uint64_t i, uint64_t j) {
  int64_t off = (int64_t)b * l->stride +
                (l->order == CUBLASLT_ORDER_COL ? (int64_t)i + (int64_t)j * l->ld
                                                : (int64_t)i * l->ld + (int64_t)j);
  return (const char *)base + off * type_size(l->type);
}

/* D = epilogue(alpha op(A) op(B) + beta C). */
static void compute(const Desc *op, const Layout *a, const void *A, const Layout *b, const void *B,
                    const Layout *c, const void *C, const Layout *d, void *D, double al,
                    double be) {
  uint64_t M = d->rows, N = d->cols, K = op->transa == CUBLAS_OP_T ? a->rows : a->cols;
  int bias_type = op->bias_type == -1 ? d->type : op->bias_type;
  for (int bt = 0; bt < d->batch; bt++)
    for (uint64_t i = 0; i < M; i++)
      for (uint64_t j = 0; j < N; j++) {
        double acc = 0;
        for (uint64_t k = 0; k < K; k++) {
          double x = op->transa == CUBLAS_OP_T ? get(a->type, elem(a, A, bt, k, i))
                                               : get(a->type, elem(a, A, bt, i, k));
          double y = op->transb == CUBLAS_OP_T ? get(b->type, elem(b, B, bt, j, k))
                                               : get(b->type, elem(b, B, bt, k, j));
          acc += x * y;
        }
        double v = al * acc;
        if (be != 0) v += be * get(c->type, elem(c, C, bt, i, j));
        if (op->epilogue & CUBLASLT_EPILOGUE_BIAS)
          v += get(bias_type, (const char *)op->bias + (int64_t)i * type_size(bias_type));
        if (op->epilogue == CUBLASLT_EPILOGUE_RELU || op->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS)
          v = v > 0 ? v : 0;
        if (op->epilogue == CUBLASLT_EPILOGUE_GELU || op->epilogue == CUBLASLT_EPILOGUE_GELU_BIAS)
          v = gelu_tanh(v);
        set(d->type, (void *)elem(d, D, bt, i, j), v);
      }
}

/* A multiply recorded into a capture: everything it reads, by value. */
typedef struct Deferred {
  Desc op;
  Layout a, b, c, d;
  const void *A, *B, *C;
  void *D;
  double al, be;
} Deferred;

static void run_deferred(void *p) {
  Deferred *x = p;
  compute(&x->op, &x->a, x->A, &x->b, x->B, &x->c, x->C, &x->d, x->D, x->al, x->be);
}

/* Records the multiply into the capture of `stream` (1), or 0 when the
 * mock libcuda is not capturing it. */
static int defer(cudaStream_t stream, const Deferred *x) {
  if (!stream) return 0;
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  int (*fn)(void *, void (*)(void *), void *) =
      cu ? (int (*)(void *, void (*)(void *), void *))dlsym(cu, "mock_cuda_defer") : NULL;
  if (!fn) return 0;
  Deferred *copy = malloc(sizeof *copy);  /* the graph keeps it */
  *copy = *x;
  if (fn(stream, run_deferred, copy)) {
    mock_keep(copy);
    return 1;
  }
  free(copy);
  return 0;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t opd, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t ad, const void *B,
                              cublasLtMatrixLayout_t bd, const void *beta, const void *C,
                              cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t ws_size,
                              cudaStream_t stream) {
  const Desc *op = (const Desc *)opd;
  const Layout *a = (const Layout *)ad, *b = (const Layout *)bd, *c = (const Layout *)cd,
               *d = (const Layout *)dd;
  cublasStatus_t st = check_problem(op, a, b, c, d);
  if (st != CUBLAS_STATUS_SUCCESS || !h || !algo || algo->data[0] != MAGIC_ALGO)
    return st ? st : CUBLAS_STATUS_INVALID_VALUE;
  double al = op->scale == CUDA_R_64F ? *(const double *)alpha : *(const float *)alpha;
  double be = op->scale == CUDA_R_64F ? *(const double *)beta : *(const float *)beta;
  char la[200], lb[200], lc[200], ld[200];
  layout_text(la, sizeof la, "A", a, A);
  layout_text(lb, sizeof lb, "B", b, B);
  layout_text(lc, sizeof lc, cd == dd ? "C(=Ddesc)" : "C", c, C);
  layout_text(ld, sizeof ld, "D", d, D);
  mock_log("cublasLtMatmul compute=%s scale=%s transa=%c transb=%c epilogue=%s bias=%p/%s"
           "%s%s%s%s alpha=%g beta=%g workspace=%p/%zu stream=%p",
           compute_name(op->compute), type_name(op->scale), op->transa ? 'T' : 'N',
           op->transb ? 'T' : 'N', epilogue_name(op->epilogue), op->bias,
           type_name(op->bias_type), la, lb, lc, ld, al, be, ws, ws_size, (void *)stream);
  if (mock_failing("cublasLtMatmul")) return (cublasStatus_t)mock_failing("cublasLtMatmul");
  /* the algorithm's assumptions */
  const void *ptrs[] = {A, B, C, D};
  for (int k = 0; k < 4; k++)
    if ((uintptr_t)ptrs[k] % algo->data[1 + k]) {
      mock_log("cublasLtMatmul: pointer %d is not %llu-byte aligned", k,
               (unsigned long long)algo->data[1 + k]);
      return CUBLAS_STATUS_INVALID_VALUE;
    }
  if (algo->data[5] && (ws_size < algo->data[5] || !ws)) return CUBLAS_STATUS_INVALID_VALUE;
  if ((op->epilogue & CUBLASLT_EPILOGUE_BIAS) && ptr_align(op->bias) < algo->data[6])
    return CUBLAS_STATUS_INVALID_VALUE; /* the bias moved to a worse alignment */
  Deferred x = {*op, *a, *b, *c, *d, A, B, C, D, al, be};
  if (defer(stream, &x)) {
    mock_log("cublasLtMatmul captured");
    return CUBLAS_STATUS_SUCCESS;
  }
  compute(op, a, A, b, B, c, C, d, D, al, be);
  return CUBLAS_STATUS_SUCCESS;
}
