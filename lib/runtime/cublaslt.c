/*
 * cublaslt.c - GEMMs (libcall.h) through cuBLASLt, the CUDA platform's
 * Platform.gemm hook.
 *
 * cuBLAS thinks in column-major matrices.  A GemmDesc's D[b] = act(alpha *
 * A[b] @ B[b] + beta * C[b] + bias) is handed over either as is (M = m,
 * N = n) or transposed, D^T = B^T @ A^T (M = n, N = m); the transposed form
 * is taken when D is not column-major, and always with a bias, because
 * cuBLASLt adds its bias vector along the rows of its D (length M) and
 * libcall.h's bias runs along n.  Then:
 *   - the operands A' and B' are column-major layouts, transposed with
 *     CUBLAS_OP_T where the matrix is row-major (ld from the stride);
 *   - D' (and C') are column-major where they can be, else
 *     CUBLASLT_ORDER_ROW (only a column-major D with a bias);
 *   - a batch is CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT with each matrix's
 *     element batch stride as its STRIDED_BATCH_OFFSET;
 *   - C is read only when beta != 0; otherwise D stands in for it.
 *
 * Types: f32 (CUBLAS_COMPUTE_32F, or CUBLAS_COMPUTE_32F_FAST_TF32 when
 * allow_tf32), f16 and bf16 (accumulating in 32F, results f16/bf16/f32),
 * f64 (CUBLAS_COMPUTE_64F), and f8 inputs (f8e4m3fn, f8e5m2: cuBLASLt's
 * CUDA_R_8F_E4M3/E5M2, accumulating in 32F) with f16, bf16 or f32 results.
 * The f8 scale pointers are left unset, which cuBLASLt reads as scales of
 * 1 (libcall.h has no scale slices; alpha carries any scaling), and A' is
 * taken transposed when it can be ("TN", which Hopper's f8 kernels need).
 * f8 results (they need D scale and amax) and other types are refused.
 *
 * Epilogues: bias (BIAS), relu (RELU, RELU_BIAS) and tanh-GELU (GELU,
 * GELU_BIAS); cuBLASLt has no erf-GELU, so gelu_erf is refused.
 *
 * The algorithm is cuBLASLt's first heuristic choice
 * (cublasLtMatmulAlgoGetHeuristic) within the workspace slice (0 bytes
 * without one) and the actual pointer alignments.  It is cached with its
 * descriptors per whole GemmDesc (plus which slices are present and their
 * alignments); a later call with an equal key only calls cublasLtMatmul.
 */
#include <stdlib.h>
#include <string.h>

#include "cublaslt_min.h"
#include "cuda_libs.h"

/* field, entry point, return type, parameters, optional */
#define LT_FUNCS(X)                                                                        \
  X(Create, cublasLtCreate, cublasStatus_t, (cublasLtHandle_t *), false)                   \
  X(Destroy, cublasLtDestroy, cublasStatus_t, (cublasLtHandle_t), false)                   \
  X(GetVersion, cublasLtGetVersion, size_t, (void), false)                                 \
  X(GetStatusName, cublasLtGetStatusName, const char *, (cublasStatus_t), true)            \
  X(GetStatusString, cublasLtGetStatusString, const char *, (cublasStatus_t), true)        \
  X(DescCreate, cublasLtMatmulDescCreate, cublasStatus_t,                                  \
    (cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t), false)                  \
  X(DescDestroy, cublasLtMatmulDescDestroy, cublasStatus_t, (cublasLtMatmulDesc_t), false) \
  X(DescSetAttribute, cublasLtMatmulDescSetAttribute, cublasStatus_t,                      \
    (cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *, size_t), false)   \
  X(LayoutCreate, cublasLtMatrixLayoutCreate, cublasStatus_t,                              \
    (cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t, int64_t), false)          \
  X(LayoutDestroy, cublasLtMatrixLayoutDestroy, cublasStatus_t, (cublasLtMatrixLayout_t),  \
    false)                                                                                 \
  X(LayoutSetAttribute, cublasLtMatrixLayoutSetAttribute, cublasStatus_t,                  \
    (cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, const void *, size_t),       \
    false)                                                                                 \
  X(PrefCreate, cublasLtMatmulPreferenceCreate, cublasStatus_t,                            \
    (cublasLtMatmulPreference_t *), false)                                                 \
  X(PrefDestroy, cublasLtMatmulPreferenceDestroy, cublasStatus_t,                          \
    (cublasLtMatmulPreference_t), false)                                                   \
  X(PrefSetAttribute, cublasLtMatmulPreferenceSetAttribute, cublasStatus_t,                \
    (cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void *,       \
     size_t),                                                                              \
    false)                                                                                 \
  X(AlgoGetHeuristic, cublasLtMatmulAlgoGetHeuristic, cublasStatus_t,                      \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,                       \
     cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,               \
     cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *, int *),           \
    false)                                                                                 \
  X(Matmul, cublasLtMatmul, cublasStatus_t,                                                \
    (cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,                   \
     cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t, const void *,           \
     const void *, cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,                 \
     const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t),                          \
    false)

typedef struct LtApi {
#define LT_FIELD(field, sym, ret, params, opt) ret(*field) params;
  LT_FUNCS(LT_FIELD)
#undef LT_FIELD
} LtApi;

#ifdef XHLO_HAVE_CUBLASLT_H
/* The table's types are the header's prototypes. */
#define LT_PROTO_AGREES(field, sym, ret, params, opt)                                     \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&sym), ret(*) params),            \
                 "cublasLt.h declares " #sym " differently");
LT_FUNCS(LT_PROTO_AGREES)
#undef LT_PROTO_AGREES
#endif

static const CudaLibSym lt_syms[] = {
#define LT_SYM(field, sym, ret, params, opt) {#sym, offsetof(LtApi, field), opt},
  LT_FUNCS(LT_SYM)
#undef LT_SYM
};

static const char *const lt_names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                       "libcublasLt.so.11", NULL};
static const char *const lt_wheel_dirs[] = {"nvidia/cublas/lib", "nvidia/cu13/lib",
                                            "nvidia/*/lib", NULL};
static const CudaLibSpec lt_spec = {"cuBLASLt", lt_names, lt_wheel_dirs};

/* Pointer alignments the cached algorithm assumes, up to cuBLASLt's
 * default assumption of 256 bytes. */
enum { LT_ALIGN_A, LT_ALIGN_B, LT_ALIGN_C, LT_ALIGN_D, LT_ALIGN_BIAS, LT_NALIGN };
#define LT_MAX_ALIGN 256u

/* One prepared GEMM: its key, the descriptors and the algorithm. */
typedef struct LtPlan {
  GemmDesc g;
  bool use_c, has_ws;
  unsigned align[LT_NALIGN];
  bool swap;                      /* cuBLAS computes D^T = B^T A^T */
  cudaDataType scale_type;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc, ld; /* lc == ld when C is not read */
  cublasLtMatmulAlgo_t algo;
  DevPtr bias;                    /* the BIAS_POINTER attribute as set */
} LtPlan;

struct CublasLt {
  void *lib;
  char *path;
  LtApi api;
  cublasLtHandle_t handle;
  Vec(LtPlan *) plans;
};

static bool lt_check(const CublasLt *lt, cublasStatus_t st, const char *call, Diag *d) {
  if (st == CUBLAS_STATUS_SUCCESS) return true;
  const char *name = lt->api.GetStatusName ? lt->api.GetStatusName(st) : NULL;
  const char *text = lt->api.GetStatusString ? lt->api.GetStatusString(st) : NULL;
  return diag_error(d, (Loc){0}, "cuBLASLt: %s failed: %s (%d)%s%s", call,
                    name ? name : "status", (int)st, text ? ": " : "", text ? text : "");
}

static bool lt_type(ElemType et, cudaDataType *t) {
  switch (et) {
  case ET_F32: *t = CUDA_R_32F; return true;
  case ET_F64: *t = CUDA_R_64F; return true;
  case ET_F16: *t = CUDA_R_16F; return true;
  case ET_BF16: *t = CUDA_R_16BF; return true;
  case ET_F8E4M3FN: *t = CUDA_R_8F_E4M3; return true;
  case ET_F8E5M2: *t = CUDA_R_8F_E5M2; return true;
  default: return false;
  }
}

static bool is_f8(ElemType et) { return et == ET_F8E4M3FN || et == ET_F8E5M2; }

/* The compute and scale types for the operand and result types, or a
 * message saying what is not supported. */
static bool lt_compute_type(const GemmDesc *g, bool use_c, cublasComputeType_t *compute,
                            cudaDataType *scale, Diag *d) {
  ElemType ta = g->a.et, tb = g->b.et, td = g->d.et;
  bool ok;
  *compute = CUBLAS_COMPUTE_32F;
  *scale = CUDA_R_32F;
  if (is_f8(ta) || is_f8(tb)) {
    if (!is_f8(ta) || !is_f8(tb))
      return diag_error(d, (Loc){0}, "cuBLASLt GEMM: %s x %s mixes f8 with another type",
                        et_name(ta), et_name(tb));
    if (td != ET_F16 && td != ET_BF16 && td != ET_F32)
      return diag_error(d, (Loc){0}, "cuBLASLt GEMM: an f8 GEMM with a %s result is not "
                        "supported (f16, bf16 or f32 results only: f8 results need the D "
                        "scale and amax that libcall.h does not carry)", et_name(td));
    ok = true;
  } else if (ta != tb) {
    ok = false;
  } else {
    switch (ta) {
    case ET_F64: ok = td == ET_F64; *compute = CUBLAS_COMPUTE_64F; *scale = CUDA_R_64F; break;
    case ET_F32:
      ok = td == ET_F32;
      if (g->allow_tf32) *compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      break;
    case ET_F16: case ET_BF16: ok = td == ta || td == ET_F32; break;
    default: ok = false; break;
    }
  }
  if (!ok)
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: element types %s x %s -> %s are not "
                      "supported (f32, f64, f16, bf16 and f8e4m3fn/f8e5m2 inputs)",
                      et_name(ta), et_name(tb), et_name(td));
  if (use_c && g->c.et != td)
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: C is %s but the result is %s",
                      et_name(g->c.et), et_name(td));
  cudaDataType bt;
  if (g->has_bias && !lt_type(g->bias_et, &bt))
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: a %s bias is not supported",
                      et_name(g->bias_et));
  return true;
}

static bool lt_epilogue(const GemmDesc *g, cublasLtEpilogue_t *e, Diag *d) {
  switch (g->act) {
  case LIB_ACT_NONE: *e = g->has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT; break;
  case LIB_ACT_RELU: *e = g->has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU; break;
  case LIB_ACT_GELU_TANH:
    *e = g->has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    break;
  default:
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: the %s epilogue is not supported (cuBLASLt "
                      "has bias, relu and tanh-approximated gelu epilogues only)",
                      lib_activation_name(g->act));
  }
  return true;
}

/* A matrix as cuBLAS sees it: r x c, element (i, j) at i*sr + j*sc. */
typedef struct LtView {
  int64_t r, c, sr, sc, batch_stride;
  ElemType et;
} LtView;

static LtView view_of(const GemmMatrix *x, int64_t r, int64_t c, bool transposed) {
  if (transposed) return (LtView){c, r, x->col_stride, x->row_stride, x->batch_stride, x->et};
  return (LtView){r, c, x->row_stride, x->col_stride, x->batch_stride, x->et};
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static bool view_col_ok(const LtView *v) {
  return (v->sr == 1 || v->r <= 1) && (v->c <= 1 || v->sc >= v->r);
}
static bool view_row_ok(const LtView *v) {
  return (v->sc == 1 || v->c <= 1) && (v->r <= 1 || v->sr >= v->c);
}
static int64_t view_ld_col(const LtView *v) {
  return max64(v->c <= 1 ? v->r : v->sc, max64(v->r, 1));
}
static int64_t view_ld_row(const LtView *v) {
  return max64(v->r <= 1 ? v->c : v->sr, max64(v->c, 1));
}

/* A cuBLASLt matrix layout and, for A' and B', its transpose op. */
typedef struct LtLayout {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
  bool row_order;
  cublasOperation_t op;
} LtLayout;

/* An operand (A' or B'): column-major as is, or the transpose of the
 * column-major matrix a row-major one is. */
static bool operand_layout(const LtView *v, bool prefer_trans, const char *what, LtLayout *l,
                           Diag *d) {
  bool col = view_col_ok(v), row = view_row_ok(v);
  lt_type(v->et, &l->type);
  l->row_order = false;
  if (col && !(prefer_trans && row)) {
    *l = (LtLayout){l->type, (uint64_t)v->r, (uint64_t)v->c, view_ld_col(v), false, CUBLAS_OP_N};
  } else if (row) {
    *l = (LtLayout){l->type, (uint64_t)v->c, (uint64_t)v->r, view_ld_row(v), false, CUBLAS_OP_T};
  } else {
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: %s is neither row- nor column-major "
                      "(strides %lld, %lld)", what, (long long)v->sr, (long long)v->sc);
  }
  return true;
}

/* The result (D', and C' shaped like it): column-major, else row order. */
static bool result_layout(const LtView *v, const char *what, LtLayout *l, Diag *d) {
  lt_type(v->et, &l->type);
  l->rows = (uint64_t)v->r;
  l->cols = (uint64_t)v->c;
  l->op = CUBLAS_OP_N;
  if (view_col_ok(v)) {
    l->ld = view_ld_col(v);
    l->row_order = false;
  } else if (view_row_ok(v)) {
    l->ld = view_ld_row(v);
    l->row_order = true;
  } else {
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: %s is neither row- nor column-major "
                      "(strides %lld, %lld)", what, (long long)v->sr, (long long)v->sc);
  }
  return true;
}

static bool matrix_equal(const GemmMatrix *x, const GemmMatrix *y) {
  return x->et == y->et && x->rows == y->rows && x->cols == y->cols &&
         x->batch_stride == y->batch_stride && x->row_stride == y->row_stride &&
         x->col_stride == y->col_stride;
}

/* The whole descriptor, field by field (padding bytes are not compared). */
static bool gemm_equal(const GemmDesc *x, const GemmDesc *y) {
  return x->batch == y->batch && x->m == y->m && x->n == y->n && x->k == y->k &&
         matrix_equal(&x->a, &y->a) && matrix_equal(&x->b, &y->b) &&
         matrix_equal(&x->c, &y->c) && matrix_equal(&x->d, &y->d) &&
         x->bias_et == y->bias_et && x->alpha_re == y->alpha_re &&
         x->alpha_im == y->alpha_im && x->beta == y->beta && x->act == y->act &&
         x->has_bias == y->has_bias && x->allow_tf32 == y->allow_tf32 &&
         x->workspace_bytes == y->workspace_bytes;
}

static void plan_free(const CublasLt *lt, LtPlan *p) {
  if (!p) return;
  if (p->la) lt->api.LayoutDestroy(p->la);
  if (p->lb) lt->api.LayoutDestroy(p->lb);
  if (p->lc && p->lc != p->ld) lt->api.LayoutDestroy(p->lc);
  if (p->ld) lt->api.LayoutDestroy(p->ld);
  if (p->op) lt->api.DescDestroy(p->op);
  free(p);
}

static bool make_layout(const CublasLt *lt, const LtLayout *l, int64_t batch,
                        int64_t batch_stride, cublasLtMatrixLayout_t *out, Diag *d) {
  if (!lt_check(lt, lt->api.LayoutCreate(out, l->type, l->rows, l->cols, l->ld),
                "cublasLtMatrixLayoutCreate", d))
    return false;
  int32_t order = CUBLASLT_ORDER_ROW, count = (int32_t)batch;
  if (l->row_order &&
      !lt_check(lt, lt->api.LayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_ORDER, &order,
                                               sizeof order),
                "cublasLtMatrixLayoutSetAttribute(ORDER)", d))
    return false;
  if (batch > 1 &&
      (!lt_check(lt, lt->api.LayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                &count, sizeof count),
                 "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", d) ||
       !lt_check(lt, lt->api.LayoutSetAttribute(*out,
                                                CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &batch_stride, sizeof batch_stride),
                 "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", d)))
    return false;
  return true;
}

static bool set_desc(const CublasLt *lt, cublasLtMatmulDesc_t op,
                     cublasLtMatmulDescAttributes_t attr, const void *v, size_t n,
                     const char *what, Diag *d) {
  return lt_check(lt, lt->api.DescSetAttribute(op, attr, v, n), what, d);
}

static void describe_layout(StrBuf *b, const char *name, const LtLayout *l) {
  sb_printf(b, ", %s %llux%llu ld %lld%s%s", name, (unsigned long long)l->rows,
            (unsigned long long)l->cols, (long long)l->ld, l->row_order ? " row-order" : "",
            l->op == CUBLAS_OP_T ? " transposed" : "");
}

/* Builds the descriptors and asks the heuristic for an algorithm. */
static bool plan_build(const CublasLt *lt, LtPlan *p, const DevPtr s[GEMM_NSLICES], Diag *d) {
  const GemmDesc *g = &p->g;
  cublasComputeType_t compute;
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (!lt_compute_type(g, p->use_c, &compute, &p->scale_type, d) || !lt_epilogue(g, &epi, d))
    return false;
  if (g->a.rows != g->m || g->a.cols != g->k || g->b.rows != g->k || g->b.cols != g->n ||
      g->d.rows != g->m || g->d.cols != g->n ||
      (p->use_c && (g->c.rows != g->m || g->c.cols != g->n)))
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: the matrices' sizes do not match m %lld, "
                      "n %lld, k %lld", (long long)g->m, (long long)g->n, (long long)g->k);
  if (g->batch > INT32_MAX)
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: batch %lld is too large",
                      (long long)g->batch);

  LtView vd = view_of(&g->d, g->m, g->n, false);
  p->swap = !view_col_ok(&vd) || g->has_bias;
  bool sw = p->swap;
  LtView va = sw ? view_of(&g->b, g->k, g->n, true) : view_of(&g->a, g->m, g->k, false);
  LtView vb = sw ? view_of(&g->a, g->m, g->k, true) : view_of(&g->b, g->k, g->n, false);
  vd = view_of(&g->d, g->m, g->n, sw);
  LtView vc = view_of(&g->c, g->m, g->n, sw);
  LtLayout la, lb, lc, ld;
  if (!operand_layout(&va, is_f8(va.et), sw ? "B" : "A", &la, d) ||
      !operand_layout(&vb, false, sw ? "A" : "B", &lb, d) ||
      !result_layout(&vd, "D", &ld, d) || (p->use_c && !result_layout(&vc, "C", &lc, d)))
    return false;

  if (!lt_check(lt, lt->api.DescCreate(&p->op, compute, p->scale_type),
                "cublasLtMatmulDescCreate", d))
    return false;
  int32_t ta = la.op, tb = lb.op;
  uint32_t e = epi;
  if (!set_desc(lt, p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta,
                "cublasLtMatmulDescSetAttribute(TRANSA)", d) ||
      !set_desc(lt, p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb,
                "cublasLtMatmulDescSetAttribute(TRANSB)", d))
    return false;
  if (epi != CUBLASLT_EPILOGUE_DEFAULT &&
      !set_desc(lt, p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e,
                "cublasLtMatmulDescSetAttribute(EPILOGUE)", d))
    return false;
  if (g->has_bias) {
    cudaDataType bt = CUDA_R_32F;
    lt_type(g->bias_et, &bt);
    int32_t bt32 = bt;
    const void *bias = (const void *)(uintptr_t)s[GEMM_BIAS];
    if (!set_desc(lt, p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias,
                  "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", d))
      return false;
    p->bias = s[GEMM_BIAS];
    if (bt != ld.type && !set_desc(lt, p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt32,
                                   sizeof bt32, "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)",
                                   d))
      return false;
  }
  if (!make_layout(lt, &la, g->batch, va.batch_stride, &p->la, d) ||
      !make_layout(lt, &lb, g->batch, vb.batch_stride, &p->lb, d) ||
      !make_layout(lt, &ld, g->batch, vd.batch_stride, &p->ld, d))
    return false;
  if (!p->use_c) p->lc = p->ld;
  else if (!make_layout(lt, &lc, g->batch, vc.batch_stride, &p->lc, d))
    return false;

  /* The heuristic: within the workspace, for the pointers' alignments. */
  cublasLtMatmulPreference_t pref = NULL;
  if (!lt_check(lt, lt->api.PrefCreate(&pref), "cublasLtMatmulPreferenceCreate", d))
    return false;
  uint64_t ws = p->has_ws ? (uint64_t)g->workspace_bytes : 0;
  bool ok = lt_check(lt, lt->api.PrefSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws),
                     "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", d);
  static const struct {
    int slot;
    cublasLtMatmulPreferenceAttributes_t attr;
    const char *what;
  } aligns[] = {
    {LT_ALIGN_A, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, "MIN_ALIGNMENT_A_BYTES"},
    {LT_ALIGN_B, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, "MIN_ALIGNMENT_B_BYTES"},
    {LT_ALIGN_C, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, "MIN_ALIGNMENT_C_BYTES"},
    {LT_ALIGN_D, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, "MIN_ALIGNMENT_D_BYTES"},
  };
  for (size_t k = 0; k < ARRAY_LEN(aligns) && ok; k++) {
    /* cuBLAS's A and B are ours swapped in the transposed form */
    int slot = aligns[k].slot;
    if (sw && slot == LT_ALIGN_A) slot = LT_ALIGN_B;
    else if (sw && slot == LT_ALIGN_B) slot = LT_ALIGN_A;
    uint32_t a = p->align[slot];
    if (a >= LT_MAX_ALIGN) continue;
    ok = lt_check(lt, lt->api.PrefSetAttribute(pref, aligns[k].attr, &a, sizeof a),
                  aligns[k].what, d);
  }
  cublasLtMatmulHeuristicResult_t res;
  memset(&res, 0, sizeof res);
  int nres = 0;
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  if (ok) st = lt->api.AlgoGetHeuristic(lt->handle, p->op, p->la, p->lb, p->lc, p->ld, pref, 1,
                                        &res, &nres);
  lt->api.PrefDestroy(pref);
  if (!ok) return false;
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && nres < 1)) {
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "cuBLASLt has no algorithm for this GEMM: %s x %s -> %s, batch %lld, "
              "m %lld, n %lld, k %lld", et_name(g->a.et), et_name(g->b.et), et_name(g->d.et),
              (long long)g->batch, (long long)g->m, (long long)g->n, (long long)g->k);
    describe_layout(&b, "A'", &la);
    describe_layout(&b, "B'", &lb);
    describe_layout(&b, "D'", &ld);
    sb_printf(&b, ", epilogue %s%s, workspace %llu bytes (cuBLASLt version %zu)",
              lib_activation_name(g->act), g->has_bias ? " with bias" : "",
              (unsigned long long)ws, lt->api.GetVersion());
    diag_error(d, (Loc){0}, "%s", b.s);
    sb_free(&b);
    return false;
  }
  if (!lt_check(lt, st, "cublasLtMatmulAlgoGetHeuristic", d) ||
      !lt_check(lt, res.state, "cublasLtMatmulAlgoGetHeuristic (result)", d))
    return false;
  p->algo = res.algo;
  return true;
}

/* Opens the library and creates the handle. */
static CublasLt *lt_open(const char *lib_path, Diag *d) {
  CublasLt *lt = xcalloc(1, sizeof *lt);
  if (!cuda_lib_open(&lt_spec, lib_path, &lt->lib, &lt->path, d) ||
      !cuda_lib_bind(lt->lib, lt->path, lt_syms, ARRAY_LEN(lt_syms), &lt->api, d) ||
      !lt_check(lt, lt->api.Create(&lt->handle), "cublasLtCreate", d)) {
    free(lt->path);
    free(lt);
    return NULL;
  }
  return lt;
}

bool cublaslt_gemm(CublasLt **ltp, const char *lib_path, void *stream, const GemmDesc *g,
                   const DevPtr s[GEMM_NSLICES], Diag *d) {
  if (g->m == 0 || g->n == 0 || g->batch == 0) return true; /* an empty result */
  if (!s[GEMM_A] || !s[GEMM_B] || !s[GEMM_D])
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: the A, B or D slice is missing");
  bool use_c = g->beta != 0;
  if (use_c && !s[GEMM_C])
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: beta is %g but there is no C slice",
                      g->beta);
  if (g->has_bias && !s[GEMM_BIAS])
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: the bias slice is missing");
  if (g->alpha_im != 0)
    return diag_error(d, (Loc){0}, "cuBLASLt GEMM: a complex alpha is not supported");
  if (!*ltp && !(*ltp = lt_open(lib_path, d))) return false;
  CublasLt *lt = *ltp;

  DevPtr cptr = use_c ? s[GEMM_C] : s[GEMM_D];
  bool has_ws = s[GEMM_WORKSPACE] != 0 && g->workspace_bytes > 0;
  unsigned align[LT_NALIGN] = {
    dev_ptr_alignment(s[GEMM_A], LT_MAX_ALIGN), dev_ptr_alignment(s[GEMM_B], LT_MAX_ALIGN),
    dev_ptr_alignment(cptr, LT_MAX_ALIGN), dev_ptr_alignment(s[GEMM_D], LT_MAX_ALIGN),
    g->has_bias ? dev_ptr_alignment(s[GEMM_BIAS], LT_MAX_ALIGN) : LT_MAX_ALIGN,
  };
  LtPlan *p = NULL;
  for (int k = 0; k < lt->plans.len && !p; k++) {
    LtPlan *q = lt->plans.data[k];
    if (q->use_c == use_c && q->has_ws == has_ws && gemm_equal(&q->g, g) &&
        memcmp(q->align, align, sizeof align) == 0)
      p = q;
  }
  if (!p) {
    p = xcalloc(1, sizeof *p);
    p->g = *g;
    p->use_c = use_c;
    p->has_ws = has_ws;
    memcpy(p->align, align, sizeof align);
    if (!plan_build(lt, p, s, d)) {
      plan_free(lt, p);
      return false;
    }
    vec_push(&lt->plans, p);
  }
  if (g->has_bias && p->bias != s[GEMM_BIAS]) {
    const void *bias = (const void *)(uintptr_t)s[GEMM_BIAS];
    if (!set_desc(lt, p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias,
                  "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", d))
      return false;
    p->bias = s[GEMM_BIAS];
  }
  double alpha64 = g->alpha_re, beta64 = g->beta;
  float alpha32 = (float)g->alpha_re, beta32 = (float)g->beta;
  bool f64 = p->scale_type == CUDA_R_64F;
  const void *alpha = f64 ? (const void *)&alpha64 : (const void *)&alpha32;
  const void *beta = f64 ? (const void *)&beta64 : (const void *)&beta32;
  DevPtr aptr = p->swap ? s[GEMM_B] : s[GEMM_A], bptr = p->swap ? s[GEMM_A] : s[GEMM_B];
  cublasStatus_t st = lt->api.Matmul(
      lt->handle, p->op, alpha, (const void *)(uintptr_t)aptr, p->la,
      (const void *)(uintptr_t)bptr, p->lb, beta, (const void *)(uintptr_t)cptr, p->lc,
      (void *)(uintptr_t)s[GEMM_D], p->ld, &p->algo,
      has_ws ? (void *)(uintptr_t)s[GEMM_WORKSPACE] : NULL,
      has_ws ? (size_t)g->workspace_bytes : 0, (cudaStream_t)stream);
  return lt_check(lt, st, "cublasLtMatmul", d);
}

void cublaslt_free(CublasLt *lt) {
  if (!lt) return;
  for (int k = 0; k < lt->plans.len; k++) plan_free(lt, lt->plans.data[k]);
  vec_free(&lt->plans);
  if (lt->handle) lt->api.Destroy(lt->handle);
  free(lt->path);
  free(lt);
}
