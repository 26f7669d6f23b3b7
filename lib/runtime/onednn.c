/*
 * onednn.c - library calls on the host (libcall.h) through oneDNN 2.x
 * (Debian's libdnnl.so.2), opened with dlopen when the first GEMM or
 * convolution thunk runs.
 *
 * GEMM: a matmul primitive over 3-D strided memory descriptors ([batch,
 * rows, cols] with the descriptor's element strides, so transposed and
 * batched operands need no copy).  Convolution: the forward, backward-data
 * or backward-weights primitive on layouts oneDNN chooses (format `any`),
 * with reorders from and to the descriptor's strided tensors.  The epilogue
 * is a chain of post-ops in libcall.h's order: alpha (eltwise linear), the
 * addend (sum: beta*C, or side_scale*side, placed in the destination
 * first), the bias (the primitive's own bias when alpha is 1, else a binary
 * add), the activation.
 *
 * f32 and bf16 run natively; f16 and f8 operands (which this CPU's oneDNN 2.6
 * does not take) are converted to f32 and the result converted back; f64,
 * which oneDNN lacks, runs in xhloc's own blocked kernel (gemm_f64.c) or,
 * for convolutions, in plain loops in double.  Primitives, their
 * scratchpads and internal buffers are cached per whole descriptor.
 * Threads: oneDNN's OpenMP pool, sized by PlatformOptions.threads, else
 * XHLO_NUM_THREADS, else one per core; a GEMM under SMALL_GEMM_FLOPS is
 * made and run on one thread.  Its workers wait passively between
 * primitives (OMP_WAIT_POLICY=PASSIVE, set before the library loads unless
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT is set): GNU OpenMP's default spins
 * 300,000 rounds (milliseconds) after every primitive on the cores that the
 * kernels after it need; on two cores that made an MLP training step's
 * elementwise kernels up to 10x slower.
 */
#include "onednn.h"
#include "thread_pool.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dnnl_min.h"
#include "gemm_f64.h"

/* The library's file name; XHLO_ONEDNN_LIBRARY names another (tests use it
 * to see the message for a missing one). */
static const char *libname(void) {
  const char *e = getenv("XHLO_ONEDNN_LIBRARY");
  return e && *e ? e : "libdnnl.so.2";
}

typedef struct DnnlFns {
#define X(name, ret, params) ret(*name) params;
  XDNNL_FUNCTIONS(X)
#undef X
} DnnlFns;

typedef enum { ENT_GEMM, ENT_CONV } EntKind;

/* One reorder between a user tensor and the primitive's own layout. */
typedef struct Reorder {
  xdnnl_primitive_t prim;         /* NULL: the layouts are the same */
  xdnnl_memory_desc_t user, inner;
  void *buf;                      /* the inner tensor */
} Reorder;

typedef struct Entry {
  EntKind kind;
  GemmDesc g;
  ConvDesc c;
  xdnnl_primitive_t prim;
  xdnnl_memory_desc_t md[4];      /* GEMM: a, b, d, bias */
  xdnnl_memory_desc_t post_bias;  /* bias as a binary post-op input */
  int post_bias_index;            /* its post-op index, -1: none */
  bool native_bias;
  Reorder ro[3];                  /* CONV: x, w, y */
  void *scratch;
  xdnnl_memory_desc_t scratch_md;
  xdnnl_primitive_t side;         /* CONV: side input into the inner y */
  int threads;                    /* GEMM: the OpenMP threads it is made
                                     and run with */
  struct Entry *next;
} Entry;

struct OneDnn {
  void *lib;
  DnnlFns f;
  xdnnl_engine_t eng;
  xdnnl_stream_t strm;
  Entry *cache;
  int threads;                    /* thread_pool_default_threads */
  void (*set_threads)(int);       /* omp_set_num_threads; NULL: none */
};

/* A GEMM of fewer floating-point operations than this runs on one thread:
 * waking OpenMP's workers costs more than they save (a 16x256x256 product,
 * 2 MFLOP, took 90 us on two threads and 18 us on one). */
enum { SMALL_GEMM_FLOPS = 4 << 20 };

static void use_threads(OneDnn *x, int n) {
  if (x->set_threads && n > 0)
    x->set_threads(n);
}

static const char *status_text(int s) {
  switch (s) {
  case 1: return "out of memory";
  case 2: return "invalid arguments";
  case 3: return "unimplemented";
  case 5: return "runtime error";
  default: return "error";
  }
}

static bool dnnl_err(Diag *d, const char *what, int s) {
  return diag_error(d, (Loc){0}, "oneDNN: %s failed: %s (status %d)", what,
                    status_text(s), s);
}

#define CHECK(call, what)                                                      \
  do {                                                                         \
    int st_ = (call);                                                          \
    if (st_ != XDNNL_SUCCESS)                                                  \
      return dnnl_err(d, what, st_);                                           \
  } while (0)

/* ---- opening ------------------------------------------------------------- */

static void *open_lib(const char *lib_path, StrBuf *tried) {
  if (lib_path) {
    const char *p = lib_path;
    while (*p) {
      size_t n = strcspn(p, ":");
      if (n > 0) {
        char *path = xmalloc(n + strlen(libname()) + 2);
        memcpy(path, p, n);
        path[n] = '/';
        strcpy(path + n + 1, libname());
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        sb_printf(tried, "%s%s", tried->len ? ", " : "", path);
        free(path);
        if (h)
          return h;
      }
      p += n + (p[n] == ':');
    }
  }
  sb_printf(tried, "%sthe loader's search path", tried->len ? ", " : "");
  return dlopen(libname(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
}


OneDnn *onednn_open(const PlatformOptions *o, Diag *d) {
  /* read by libgomp when it loads (with libdnnl) */
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"))
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  StrBuf tried;
  sb_init(&tried);
  dlerror();
  void *lib = open_lib(o ? o->lib_path : NULL, &tried);
  if (!lib) {
    const char *why = dlerror();
    diag_error(d, (Loc){0},
               "cannot load %s (oneDNN, for the host's GEMM and convolution "
               "thunks; searched %s): %s; install Debian's libdnnl2 "
               "(scripts/setup.sh does), or name its directory with "
               "--lib-path",
               libname(), tried.s, why ? why : "not found");
    sb_free(&tried);
    return NULL;
  }
  sb_free(&tried);
  OneDnn *x = xcalloc(1, sizeof *x);
  x->lib = lib;
#define X(name, ret, params)                                                   \
  if (!(*(void **)&x->f.name = dlsym(lib, #name))) {                          \
    diag_error(d, (Loc){0}, "%s has no %s (oneDNN 2.x expected)", libname(),  \
               #name);                                                         \
    onednn_close(x);                                                           \
    return NULL;                                                               \
  }
  XDNNL_FUNCTIONS(X)
#undef X
  int n = thread_pool_default_threads(o ? o->threads : 0);
  x->threads = n;
  x->set_threads = (void (*)(int))(uintptr_t)dlsym(lib, "omp_set_num_threads");
  use_threads(x, n);
  int s = x->f.dnnl_engine_create(&x->eng, XDNNL_CPU, 0);
  if (s == XDNNL_SUCCESS)
    s = x->f.dnnl_stream_create(&x->strm, x->eng, 0);
  if (s != XDNNL_SUCCESS) {
    dnnl_err(d, "creating the CPU engine and stream", s);
    onednn_close(x);
    return NULL;
  }
  return x;
}

static void reorder_free(OneDnn *x, Reorder *r) {
  if (r->prim)
    x->f.dnnl_primitive_destroy(r->prim);
  free(r->buf);
}

static void entry_free(OneDnn *x, Entry *e) {
  if (e->prim)
    x->f.dnnl_primitive_destroy(e->prim);
  if (e->side)
    x->f.dnnl_primitive_destroy(e->side);
  for (int k = 0; k < 3; k++)
    reorder_free(x, &e->ro[k]);
  free(e->scratch);
  free(e);
}

void onednn_close(OneDnn *x) {
  if (!x)
    return;
  for (Entry *e = x->cache, *next; e; e = next) {
    next = e->next;
    entry_free(x, e);
  }
  if (x->strm)
    x->f.dnnl_stream_destroy(x->strm);
  if (x->eng)
    x->f.dnnl_engine_destroy(x->eng);
  /* OpenMP's worker threads are let go (OpenMP 5's omp_pause_resource_all,
   * omp_pause_hard), and the library stays loaded (RTLD_NODELETE):
   * unloading it would unload OpenMP under threads that may still run. */
  if (x->lib) {
    int (*pause_all)(int) = (int (*)(int))(uintptr_t)dlsym(x->lib, "omp_pause_resource_all");
    if (pause_all)
      pause_all(2);
    dlclose(x->lib);
  }
  free(x);
}

/* ---- shared pieces ------------------------------------------------------- */

static bool native_type(ElemType t, int *dt) {
  switch (t) {
  case ET_F32: *dt = XDNNL_F32; return true;
  case ET_BF16: *dt = XDNNL_BF16; return true;
  default: return false;
  }
}

static void *aligned(size_t n) {
  size_t r = (n + 63) / 64 * 64;
  void *p = aligned_alloc(64, r ? r : 64);
  if (!p)
    die("out of memory (%zu bytes)", n);
  return p;
}

/* Executes a primitive with memory objects made for this call. */
static bool run(OneDnn *x, xdnnl_primitive_t prim, int n, const int *args,
                const xdnnl_memory_desc_t *const *mds, void *const *ptrs,
                Diag *d) {
  xdnnl_exec_arg_t ea[12];
  int made = 0, s = XDNNL_SUCCESS;
  for (; made < n && s == XDNNL_SUCCESS; made++) {
    ea[made].arg = args[made];
    s = x->f.dnnl_memory_create(&ea[made].memory, mds[made], x->eng, ptrs[made]);
    if (s != XDNNL_SUCCESS)
      break;
  }
  if (s == XDNNL_SUCCESS)
    s = x->f.dnnl_primitive_execute(prim, x->strm, n, ea);
  if (s == XDNNL_SUCCESS)
    s = x->f.dnnl_stream_wait(x->strm);
  for (int k = 0; k < made && k < n; k++)
    x->f.dnnl_memory_destroy(ea[k].memory);
  if (s != XDNNL_SUCCESS)
    return dnnl_err(d, "executing a primitive", s);
  return true;
}

static int act_alg(LibActivation a) {
  switch (a) {
  case LIB_ACT_RELU: return XDNNL_ELTWISE_RELU;
  case LIB_ACT_GELU_TANH: return XDNNL_ELTWISE_GELU_TANH;
  case LIB_ACT_GELU_ERF: return XDNNL_ELTWISE_GELU_ERF;
  default: return 0;
  }
}

/* Post-ops in libcall.h's order; *bias_index is the binary add's index. */
static bool make_attr(OneDnn *x, double alpha, double addend_scale,
                      const xdnnl_memory_desc_t *post_bias, LibActivation act,
                      xdnnl_primitive_attr_t *attr, int *bias_index,
                      Diag *d) {
  xdnnl_post_ops_t po;
  CHECK(x->f.dnnl_primitive_attr_create(attr), "creating attributes");
  CHECK(x->f.dnnl_primitive_attr_set_scratchpad_mode(*attr,
                                                     XDNNL_SCRATCHPAD_MODE_USER),
        "setting the scratchpad mode");
  CHECK(x->f.dnnl_post_ops_create(&po), "creating post-ops");
  int n = 0, s = XDNNL_SUCCESS;
  *bias_index = -1;
  if (alpha != 1) {
    s = x->f.dnnl_post_ops_append_eltwise(po, 1.0f, XDNNL_ELTWISE_LINEAR,
                                          (float)alpha, 0.0f);
    n++;
  }
  if (s == XDNNL_SUCCESS && addend_scale != 0) {
    s = x->f.dnnl_post_ops_append_sum(po, (float)addend_scale);
    n++;
  }
  if (s == XDNNL_SUCCESS && post_bias) {
    s = x->f.dnnl_post_ops_append_binary(po, XDNNL_BINARY_ADD, post_bias);
    *bias_index = n++;
  }
  if (s == XDNNL_SUCCESS && act != LIB_ACT_NONE)
    s = x->f.dnnl_post_ops_append_eltwise(po, 1.0f, act_alg(act), 0.0f, 0.0f);
  if (s == XDNNL_SUCCESS)
    s = x->f.dnnl_primitive_attr_set_post_ops(*attr, po);
  x->f.dnnl_post_ops_destroy(po);
  if (s != XDNNL_SUCCESS)
    return dnnl_err(d, "setting the epilogue post-ops", s);
  return true;
}

/* Creates the primitive of an op descriptor and its scratchpad. */
static bool make_prim(OneDnn *x, Entry *e, const void *op,
                      xdnnl_primitive_attr_t attr,
                      xdnnl_primitive_desc_t hint,
                      xdnnl_primitive_desc_t *pd_out, Diag *d) {
  xdnnl_primitive_desc_t pd;
  int s = x->f.dnnl_primitive_desc_create(&pd, op, attr, x->eng, hint);
  if (s != XDNNL_SUCCESS)
    return dnnl_err(d, "creating the primitive descriptor", s);
  s = x->f.dnnl_primitive_create(&e->prim, pd);
  if (s != XDNNL_SUCCESS) {
    x->f.dnnl_primitive_desc_destroy(pd);
    return dnnl_err(d, "creating the primitive", s);
  }
  const xdnnl_memory_desc_t *sp =
      x->f.dnnl_primitive_desc_query_md(pd, XDNNL_QUERY_SCRATCHPAD_MD, 0);
  size_t n = sp ? x->f.dnnl_memory_desc_get_size(sp) : 0;
  e->scratch = n ? aligned(n) : NULL;
  if (n)
    e->scratch_md = *sp;
  *pd_out = pd;
  return true;
}

static Entry *find(OneDnn *x, EntKind k, const GemmDesc *g, const ConvDesc *c) {
  for (Entry *e = x->cache; e; e = e->next)
    if (e->kind == k && (k == ENT_GEMM ? memcmp(&e->g, g, sizeof *g) == 0
                                       : memcmp(&e->c, c, sizeof *c) == 0))
      return e;
  return NULL;
}

/* ---- GEMM ---------------------------------------------------------------- */

static int64_t mat_batch_stride(const GemmMatrix *m, int64_t batch) {
  if (batch > 1)
    return m->batch_stride;
  int64_t a = m->rows * m->row_stride, b = m->cols * m->col_stride;
  return a > b ? a : b;
}

static bool matrix_md(OneDnn *x, const GemmMatrix *m, int64_t batch,
                      xdnnl_memory_desc_t *md, Diag *d) {
  int dt;
  if (!native_type(m->et, &dt))
    return diag_error(d, (Loc){0}, "oneDNN: no %s matmul", et_name(m->et));
  xdnnl_dim_t dims[3] = {batch, m->rows, m->cols};
  xdnnl_dim_t str[3] = {mat_batch_stride(m, batch), m->row_stride, m->col_stride};
  /* A single row or column with both strides 1 is row- and column-major at
   * once; oneDNN 2.6's gemm-based matmul refuses it at execution, so it is
   * given the dense row-major (one row) or column-major (one column) view. */
  if (str[1] == str[2] && m->rows == 1)
    str[1] = m->cols * str[2];
  else if (str[1] == str[2] && m->cols == 1)
    str[2] = m->rows * str[1];
  CHECK(x->f.dnnl_memory_desc_init_by_strides(md, 3, dims, dt, str),
        "describing a matrix");
  return true;
}

static bool gemm_entry(OneDnn *x, const GemmDesc *g, Entry **out, Diag *d) {
  Entry *e = xcalloc(1, sizeof *e);
  e->kind = ENT_GEMM;
  e->g = *g;
  e->post_bias_index = -1;
  double flops = 2.0 * (double)g->batch * (double)g->m * (double)g->n *
                 (double)g->k;
  e->threads = flops < SMALL_GEMM_FLOPS ? 1 : x->threads;
  use_threads(x, e->threads);
  bool ok = matrix_md(x, &g->a, g->batch, &e->md[0], d) &&
            matrix_md(x, &g->b, g->batch, &e->md[1], d) &&
            matrix_md(x, &g->d, g->batch, &e->md[2], d);
  int bdt = 0;
  if (ok && g->has_bias) {
    if (!native_type(g->bias_et, &bdt)) {
      ok = diag_error(d, (Loc){0}, "oneDNN: a %s bias", et_name(g->bias_et));
    } else {
      xdnnl_dim_t dims[3] = {1, 1, g->n}, str[3] = {g->n, g->n, 1};
      int s = x->f.dnnl_memory_desc_init_by_strides(&e->md[3], 3, dims, bdt, str);
      ok = s == XDNNL_SUCCESS || dnnl_err(d, "describing the bias", s);
    }
  }
  e->native_bias = g->has_bias && g->alpha_re == 1;
  xdnnl_primitive_attr_t attr = NULL;
  xdnnl_primitive_desc_t pd = NULL;
  xdnnl_matmul_desc_t op;
  if (ok) {
    int s = x->f.dnnl_matmul_desc_init(&op, &e->md[0], &e->md[1],
                                       e->native_bias ? &e->md[3] : NULL,
                                       &e->md[2]);
    ok = s == XDNNL_SUCCESS || dnnl_err(d, "describing the matmul", s);
  }
  if (ok)
    ok = make_attr(x, g->alpha_re, g->beta,
                   g->has_bias && !e->native_bias ? &e->md[3] : NULL, g->act,
                   &attr, &e->post_bias_index, d) &&
         make_prim(x, e, &op, attr, NULL, &pd, d);
  if (attr)
    x->f.dnnl_primitive_attr_destroy(attr);
  if (pd)
    x->f.dnnl_primitive_desc_destroy(pd);
  use_threads(x, x->threads);
  if (!ok) {
    entry_free(x, e);
    return false;
  }
  e->next = x->cache;
  x->cache = e;
  *out = e;
  return true;
}

/* Copies C into D (both [batch, m, n] views of the same type). */
static void copy_matrix(const GemmDesc *g, const uint8_t *c, uint8_t *dd) {
  int eb = et_bytes(g->d.et);
  for (int64_t b = 0; b < g->batch; b++)
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++) {
        int64_t so = b * g->c.batch_stride + i * g->c.row_stride + j * g->c.col_stride;
        int64_t dso = b * g->d.batch_stride + i * g->d.row_stride + j * g->d.col_stride;
        memcpy(dd + dso * eb, c + so * eb, (size_t)eb);
      }
}

/* Copies a [batch, rows, cols] matrix batch between two layouts of one
 * element type. */
static void copy_layout(const GemmMatrix *from, const uint8_t *src, const GemmMatrix *to,
                        uint8_t *dst, int64_t batch) {
  int eb = et_bytes(to->et);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < to->rows; i++)
      for (int64_t j = 0; j < to->cols; j++)
        memcpy(dst + (b * to->batch_stride + i * to->row_stride + j * to->col_stride) * eb,
               src + (b * from->batch_stride + i * from->row_stride + j * from->col_stride) * eb,
               (size_t)eb);
}

static bool gemm_prim(OneDnn *x, const GemmDesc *g, void *const p[], Diag *d);

/* oneDNN 2.6's gemm-based matmul adds a binary post-op (the bias when alpha
 * is not 1) at the wrong places when a batched D is not dense: such calls
 * write a dense D and copy it out. */
static bool gemm_native(OneDnn *x, const GemmDesc *g, void *const p[], Diag *d) {
  GemmMatrix dense = {g->d.et, g->m, g->n, g->m * g->n, g->n, 1};
  bool d_dense = g->batch == 1 || (g->d.batch_stride == dense.batch_stride &&
                                   g->d.row_stride == dense.row_stride &&
                                   g->d.col_stride == 1);
  if (d_dense || !g->has_bias || g->alpha_re == 1)
    return gemm_prim(x, g, p, d);
  GemmDesc h = *g;
  h.d = dense;
  if (g->beta != 0)
    h.c = dense;
  uint8_t *tmp = aligned((size_t)(g->batch * g->m * g->n) * (size_t)et_bytes(g->d.et));
  if (g->beta != 0)
    copy_layout(&g->c, p[GEMM_C], &dense, tmp, g->batch);
  void *q[GEMM_NSLICES];
  memcpy(q, p, sizeof q);
  q[GEMM_D] = tmp;
  q[GEMM_C] = g->beta != 0 ? tmp : NULL;
  bool ok = gemm_prim(x, &h, q, d);
  if (ok)
    copy_layout(&dense, tmp, &g->d, p[GEMM_D], g->batch);
  free(tmp);
  return ok;
}

static bool gemm_prim(OneDnn *x, const GemmDesc *g, void *const p[], Diag *d) {
  Entry *e = find(x, ENT_GEMM, g, NULL);
  if (!e && !gemm_entry(x, g, &e, d))
    return false;
  if (g->beta != 0 && p[GEMM_C] != p[GEMM_D])
    copy_matrix(g, p[GEMM_C], p[GEMM_D]);
  int args[6];
  const xdnnl_memory_desc_t *mds[6];
  void *ptrs[6];
  int n = 0;
  args[n] = XDNNL_ARG_SRC, mds[n] = &e->md[0], ptrs[n++] = p[GEMM_A];
  args[n] = XDNNL_ARG_WEIGHTS, mds[n] = &e->md[1], ptrs[n++] = p[GEMM_B];
  args[n] = XDNNL_ARG_DST, mds[n] = &e->md[2], ptrs[n++] = p[GEMM_D];
  if (e->native_bias)
    args[n] = XDNNL_ARG_BIAS, mds[n] = &e->md[3], ptrs[n++] = p[GEMM_BIAS];
  if (e->post_bias_index >= 0)
    args[n] = XDNNL_ARG_ATTR_MULTIPLE_POST_OP(e->post_bias_index) | XDNNL_ARG_SRC_1,
    mds[n] = &e->md[3], ptrs[n++] = p[GEMM_BIAS];
  if (e->scratch)
    args[n] = XDNNL_ARG_SCRATCHPAD, mds[n] = &e->scratch_md, ptrs[n++] = e->scratch;
  if (e->threads != x->threads)
    use_threads(x, e->threads);
  bool ok = run(x, e->prim, n, args, mds, ptrs, d);
  if (e->threads != x->threads)
    use_threads(x, x->threads);
  return ok;
}

/* Reads element k of float type t as double / writes it rounded to
 * nearest even. */
static double get(ElemType t, const uint8_t *p, int64_t k) {
  int n = et_bytes(t);
  uint64_t bits = 0;
  memcpy(&bits, p + k * n, (size_t)n);
  return fp_to_double(et_fp_format(t), bits);
}

static void put(ElemType t, uint8_t *p, int64_t k, double v) {
  int n = et_bytes(t);
  uint64_t bits = fp_from_double(et_fp_format(t), v);
  memcpy(p + k * n, &bits, (size_t)n);
}

/* A dense row-major f32 copy of a strided matrix batch. */
static float *to_f32(const GemmMatrix *m, int64_t batch, const uint8_t *p) {
  float *o = aligned((size_t)(batch * m->rows * m->cols) * sizeof(float));
  int64_t k = 0;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < m->rows; i++)
      for (int64_t j = 0; j < m->cols; j++)
        o[k++] = (float)get(m->et, p, b * m->batch_stride + i * m->row_stride +
                                          j * m->col_stride);
  return o;
}

static GemmMatrix dense_f32(int64_t rows, int64_t cols) {
  return (GemmMatrix){ET_F32, rows, cols, rows * cols, cols, 1};
}

/* f16, f8: through f32 copies, the result rounded once into D. */
static bool gemm_via_f32(OneDnn *x, const GemmDesc *g, void *const p[], Diag *d) {
  GemmDesc h = *g;
  h.a = dense_f32(g->m, g->k);
  h.b = dense_f32(g->k, g->n);
  h.d = h.c = dense_f32(g->m, g->n);
  if (!g->beta)
    h.c.et = ET_INVALID;
  h.bias_et = ET_F32;
  void *q[GEMM_NSLICES] = {0};
  q[GEMM_A] = to_f32(&g->a, g->batch, p[GEMM_A]);
  q[GEMM_B] = to_f32(&g->b, g->batch, p[GEMM_B]);
  q[GEMM_D] = g->beta ? to_f32(&g->c, g->batch, p[GEMM_C])
                      : aligned((size_t)(g->batch * g->m * g->n) * sizeof(float));
  q[GEMM_C] = q[GEMM_D];
  if (g->has_bias) {
    GemmMatrix bm = {g->bias_et, 1, g->n, 0, g->n, 1};
    q[GEMM_BIAS] = to_f32(&bm, 1, p[GEMM_BIAS]);
  }
  bool ok = gemm_native(x, &h, q, d);
  if (ok) {
    const float *r = q[GEMM_D];
    int64_t k = 0;
    for (int64_t b = 0; b < g->batch; b++)
      for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++)
          put(g->d.et, p[GEMM_D],
              b * g->d.batch_stride + i * g->d.row_stride + j * g->d.col_stride, r[k++]);
  }
  for (int k = 0; k < GEMM_NSLICES; k++)
    if (k != GEMM_C)
      free(q[k]);
  return ok;
}

static bool f32_detour(ElemType t) {
  return t == ET_F16 || t == ET_F8E4M3FN || t == ET_F8E5M2;
}

bool onednn_gemm(OneDnn *x, const GemmDesc *g, void *const p[GEMM_NSLICES],
                 Diag *d) {
  int dt;
  ElemType ts[3] = {g->a.et, g->b.et, g->d.et};
  bool native = g->alpha_im == 0, detour = g->alpha_im == 0, f64 = true;
  for (int k = 0; k < 3; k++) {
    native &= native_type(ts[k], &dt);
    detour &= native_type(ts[k], &dt) || f32_detour(ts[k]);
    f64 &= ts[k] == ET_F64;
  }
  if (g->has_bias) {
    native &= native_type(g->bias_et, &dt);
    detour &= native_type(g->bias_et, &dt) || f32_detour(g->bias_et);
  }
  if (native && g->a.et == g->b.et)
    return gemm_native(x, g, p, d);
  if (detour)
    return gemm_via_f32(x, g, p, d);
  if (f64 && g->alpha_im == 0)
    return gemm_f64(g, p, x->threads, d);
  return diag_error(d, (Loc){0},
                    "oneDNN: no GEMM of %s x %s -> %s on the host",
                    et_name(g->a.et), et_name(g->b.et), et_name(g->d.et));
}

/* ---- convolution --------------------------------------------------------- */

/* The user (strided) and primitive (format any) descriptors of x, w or y;
 * grouped weights get oneDNN's leading groups dimension. */
static bool tensor_mds(OneDnn *x, const ConvTensor *t, int ns, int64_t groups,
                       xdnnl_memory_desc_t *user, xdnnl_memory_desc_t *any,
                       Diag *d) {
  int dt;
  if (!native_type(t->et, &dt))
    return diag_error(d, (Loc){0}, "oneDNN: no %s convolution", et_name(t->et));
  xdnnl_dim_t dims[2 + CONV_MAX_SPATIAL + 1], str[2 + CONV_MAX_SPATIAL + 1];
  int nd = 0;
  if (groups > 1) {
    dims[nd] = groups;
    str[nd++] = t->dims[0] / groups * t->strides[0];
    dims[nd] = t->dims[0] / groups;
    str[nd++] = t->strides[0];
  } else {
    dims[nd] = t->dims[0];
    str[nd++] = t->strides[0];
  }
  for (int k = 1; k < 2 + ns; k++) {
    dims[nd] = t->dims[k];
    str[nd++] = t->strides[k];
  }
  CHECK(x->f.dnnl_memory_desc_init_by_strides(user, nd, dims, dt, str),
        "describing a convolution tensor");
  CHECK(x->f.dnnl_memory_desc_init_by_tag(any, nd, dims, dt, XDNNL_FORMAT_TAG_ANY),
        "describing a convolution tensor");
  return true;
}

/* A reorder between r->user and r->inner (to_inner: user -> inner), when
 * they differ, and the inner buffer. */
static bool make_reorder(OneDnn *x, Reorder *r, bool to_inner, Diag *d) {
  if (x->f.dnnl_memory_desc_equal(&r->user, &r->inner))
    return true;
  xdnnl_primitive_desc_t pd;
  const xdnnl_memory_desc_t *from = to_inner ? &r->user : &r->inner;
  const xdnnl_memory_desc_t *to = to_inner ? &r->inner : &r->user;
  CHECK(x->f.dnnl_reorder_primitive_desc_create(&pd, from, x->eng, to, x->eng, NULL),
        "creating a reorder");
  int s = x->f.dnnl_primitive_create(&r->prim, pd);
  x->f.dnnl_primitive_desc_destroy(pd);
  if (s != XDNNL_SUCCESS)
    return dnnl_err(d, "creating a reorder", s);
  r->buf = aligned(x->f.dnnl_memory_desc_get_size(&r->inner));
  return true;
}

static bool conv_entry(OneDnn *x, const ConvDesc *c, Entry **out, Diag *d) {
  Entry *e = xcalloc(1, sizeof *e);
  e->kind = ENT_CONV;
  e->c = *c;
  e->post_bias_index = -1;
  int ns = c->nspatial;
  xdnnl_memory_desc_t any[3], bias_md, post_bias_md;
  bool ok = tensor_mds(x, &c->x, ns, 1, &e->ro[0].user, &any[0], d) &&
            tensor_mds(x, &c->w, ns, c->groups, &e->ro[1].user, &any[1], d) &&
            tensor_mds(x, &c->y, ns, 1, &e->ro[2].user, &any[2], d);
  bool fwd = c->kind == CONV_FORWARD;
  e->native_bias = fwd && c->has_bias && c->alpha == 1;
  if (ok && fwd && c->has_bias) {
    int bdt;
    if (!native_type(c->bias_et, &bdt)) {
      ok = diag_error(d, (Loc){0}, "oneDNN: a %s bias", et_name(c->bias_et));
    } else {
      xdnnl_dim_t o[1] = {c->y.dims[1]}, one[1] = {1};
      xdnnl_dim_t pdims[2 + CONV_MAX_SPATIAL], pstr[2 + CONV_MAX_SPATIAL];
      for (int k = 0; k < 2 + ns; k++)
        pdims[k] = k == 1 ? c->y.dims[1] : 1, pstr[k] = k == 0 ? c->y.dims[1] : 1;
      int s = x->f.dnnl_memory_desc_init_by_strides(&bias_md, 1, o, bdt, one);
      if (s == XDNNL_SUCCESS)
        s = x->f.dnnl_memory_desc_init_by_strides(&post_bias_md, 2 + ns, pdims,
                                                  bdt, pstr);
      ok = s == XDNNL_SUCCESS || dnnl_err(d, "describing the bias", s);
      e->md[3] = e->native_bias ? bias_md : post_bias_md;
    }
  }
  xdnnl_dim_t st[CONV_MAX_SPATIAL], dl[CONV_MAX_SPATIAL], pl[CONV_MAX_SPATIAL],
      pr[CONV_MAX_SPATIAL];
  for (int k = 0; k < ns; k++) {
    st[k] = c->stride[k];
    dl[k] = c->dilation[k] - 1;
    pl[k] = c->pad_lo[k];
    /* oneDNN wants the padding that makes the sizes exact. */
    int64_t eff = (c->w.dims[2 + k] - 1) * c->dilation[k] + 1;
    pr[k] = (c->y.dims[2 + k] - 1) * c->stride[k] + eff - c->x.dims[2 + k] - pl[k];
  }
  xdnnl_primitive_attr_t attr = NULL;
  xdnnl_primitive_desc_t pd = NULL, hint = NULL;
  xdnnl_convolution_desc_t op;
  int q[3];
  if (ok && fwd) {
    int s = x->f.dnnl_dilated_convolution_forward_desc_init(
        &op, XDNNL_FORWARD_INFERENCE, XDNNL_CONVOLUTION_DIRECT, &any[0], &any[1],
        e->native_bias ? &bias_md : NULL, &any[2], st, dl, pl, pr);
    ok = (s == XDNNL_SUCCESS || dnnl_err(d, "describing the convolution", s)) &&
         make_attr(x, c->alpha, c->side_scale,
                   c->has_bias && !e->native_bias ? &post_bias_md : NULL, c->act,
                   &attr, &e->post_bias_index, d) &&
         make_prim(x, e, &op, attr, NULL, &pd, d);
    q[0] = XDNNL_QUERY_SRC_MD, q[1] = XDNNL_QUERY_WEIGHTS_MD, q[2] = XDNNL_QUERY_DST_MD;
  } else if (ok) {
    /* The backward primitives take the forward one's descriptor as a hint. */
    xdnnl_convolution_desc_t fop;
    int s = x->f.dnnl_dilated_convolution_forward_desc_init(
        &fop, XDNNL_FORWARD_TRAINING, XDNNL_CONVOLUTION_DIRECT, &any[0], &any[1],
        NULL, &any[2], st, dl, pl, pr);
    if (s == XDNNL_SUCCESS)
      s = x->f.dnnl_primitive_desc_create(&hint, &fop, NULL, x->eng, NULL);
    if (s == XDNNL_SUCCESS)
      s = c->kind == CONV_BACKWARD_INPUT
              ? x->f.dnnl_dilated_convolution_backward_data_desc_init(
                    &op, XDNNL_CONVOLUTION_DIRECT, &any[0], &any[1], &any[2], st,
                    dl, pl, pr)
              : x->f.dnnl_dilated_convolution_backward_weights_desc_init(
                    &op, XDNNL_CONVOLUTION_DIRECT, &any[0], &any[1], NULL,
                    &any[2], st, dl, pl, pr);
    ok = (s == XDNNL_SUCCESS || dnnl_err(d, "describing the convolution", s)) &&
         make_attr(x, 1, 0, NULL, LIB_ACT_NONE, &attr, &e->post_bias_index, d) &&
         make_prim(x, e, &op, attr, hint, &pd, d);
    if (c->kind == CONV_BACKWARD_INPUT)
      q[0] = XDNNL_QUERY_DIFF_SRC_MD, q[1] = XDNNL_QUERY_WEIGHTS_MD,
      q[2] = XDNNL_QUERY_DIFF_DST_MD;
    else
      q[0] = XDNNL_QUERY_SRC_MD, q[1] = XDNNL_QUERY_DIFF_WEIGHTS_MD,
      q[2] = XDNNL_QUERY_DIFF_DST_MD;
  }
  int written = c->kind == CONV_FORWARD ? 2 : c->kind == CONV_BACKWARD_INPUT ? 0 : 1;
  for (int k = 0; ok && k < 3; k++) {
    const xdnnl_memory_desc_t *m = x->f.dnnl_primitive_desc_query_md(pd, q[k], 0);
    if (!m) {
      ok = diag_error(d, (Loc){0}, "oneDNN: the convolution has no tensor %d", k);
      break;
    }
    e->ro[k].inner = *m;
    ok = make_reorder(x, &e->ro[k], k != written, d);
  }
  /* A side input goes into the destination before the sum post-op: in the
   * primitive's layout, through a reorder of its own (kept in md[0]/md[1]). */
  if (ok && fwd && c->side_scale != 0 && e->ro[2].prim) {
    Reorder side = {.user = e->ro[2].user, .inner = e->ro[2].inner};
    ok = make_reorder(x, &side, true, d);
    free(side.buf);
    e->side = side.prim;
  }
  if (attr)
    x->f.dnnl_primitive_attr_destroy(attr);
  if (pd)
    x->f.dnnl_primitive_desc_destroy(pd);
  if (hint)
    x->f.dnnl_primitive_desc_destroy(hint);
  if (!ok) {
    entry_free(x, e);
    return false;
  }
  e->next = x->cache;
  x->cache = e;
  *out = e;
  return true;
}

/* Elements a strided tensor spans. */
static int64_t tensor_span(const ConvTensor *t, int ns) {
  int64_t s = 1;
  for (int k = 0; k < 2 + ns; k++)
    s += (t->dims[k] - 1) * t->strides[k];
  return s;
}

static bool reorder_run(OneDnn *x, xdnnl_primitive_t prim,
                        const xdnnl_memory_desc_t *from, void *src,
                        const xdnnl_memory_desc_t *to, void *dst, Diag *d) {
  int args[2] = {XDNNL_ARG_FROM, XDNNL_ARG_TO};
  const xdnnl_memory_desc_t *mds[2] = {from, to};
  void *ptrs[2] = {src, dst};
  return run(x, prim, 2, args, mds, ptrs, d);
}

static bool conv_prim(OneDnn *x, const ConvDesc *c, void *const p[], Diag *d);

/* oneDNN 2.6's brgconv kernels mishandle the sum post-op (the side
 * input): with other post-ops (linear, relu, gelu, binary add) some shapes
 * crash, and with the primitive's bias, outputs whose window lies wholly in
 * the padding lose the addend.  A side input therefore never reaches the
 * primitive: it computes the plain convolution into a dense f32 tensor and
 * the epilogue is finished here, rounding once. */
static bool conv_native(OneDnn *x, const ConvDesc *c, void *const p[], Diag *d) {
  if (c->kind != CONV_FORWARD || c->side_scale == 0)
    return conv_prim(x, c, p, d);
  ConvDesc h = *c;
  h.alpha = 1;
  h.side_scale = 0;
  h.has_bias = false;
  h.act = LIB_ACT_NONE;
  h.y.et = ET_F32;
  int64_t n = 1;
  for (int k = 1 + c->nspatial; k >= 0; k--) {
    h.y.strides[k] = n;
    n *= c->y.dims[k];
  }
  float *tmp = aligned((size_t)n * sizeof(float));
  void *q[CONV_NSLICES] = {p[CONV_X], p[CONV_W], tmp};
  bool ok = conv_prim(x, &h, q, d);
  int64_t per_o = n / (c->y.dims[0] * c->y.dims[1]);
  for (int64_t lin = 0; ok && lin < n; lin++) {
    int64_t off = 0, r = lin;
    for (int k = 1 + c->nspatial; k >= 0; k--) {
      off += r % c->y.dims[k] * c->y.strides[k];
      r /= c->y.dims[k];
    }
    double v = c->alpha * tmp[lin] + c->side_scale * get(c->y.et, p[CONV_SIDE], off);
    if (c->has_bias)
      v += get(c->bias_et, p[CONV_BIAS], lin / per_o % c->y.dims[1]);
    put(c->y.et, p[CONV_Y], off, lib_activation_apply(c->act, v));
  }
  free(tmp);
  return ok;
}

static bool conv_prim(OneDnn *x, const ConvDesc *c, void *const p[], Diag *d) {
  Entry *e = find(x, ENT_CONV, NULL, c);
  if (!e && !conv_entry(x, c, &e, d))
    return false;
  void *user[3] = {p[CONV_X], p[CONV_W], p[CONV_Y]};
  void *inner[3];
  int written = c->kind == CONV_FORWARD ? 2 : c->kind == CONV_BACKWARD_INPUT ? 0 : 1;
  for (int k = 0; k < 3; k++) {
    Reorder *r = &e->ro[k];
    inner[k] = r->prim ? r->buf : user[k];
    if (r->prim && k != written &&
        !reorder_run(x, r->prim, &r->user, user[k], &r->inner, r->buf, d))
      return false;
  }
  if (c->kind == CONV_FORWARD && c->side_scale != 0) {
    if (e->side) {
      if (!reorder_run(x, e->side, &e->ro[2].user, p[CONV_SIDE], &e->ro[2].inner,
                       e->ro[2].buf, d))
        return false;
    } else if (p[CONV_SIDE] != p[CONV_Y]) {
      memmove(p[CONV_Y], p[CONV_SIDE],
              (size_t)(tensor_span(&c->y, c->nspatial) * et_bytes(c->y.et)));
    }
  }
  static const int fwd_args[3] = {XDNNL_ARG_SRC, XDNNL_ARG_WEIGHTS, XDNNL_ARG_DST};
  static const int bwd_data[3] = {XDNNL_ARG_DIFF_SRC, XDNNL_ARG_WEIGHTS,
                                  XDNNL_ARG_DIFF_DST};
  static const int bwd_wei[3] = {XDNNL_ARG_SRC, XDNNL_ARG_DIFF_WEIGHTS,
                                 XDNNL_ARG_DIFF_DST};
  const int *names = c->kind == CONV_FORWARD          ? fwd_args
                     : c->kind == CONV_BACKWARD_INPUT ? bwd_data
                                                      : bwd_wei;
  int args[6];
  const xdnnl_memory_desc_t *mds[6];
  void *ptrs[6];
  int n = 0;
  for (int k = 0; k < 3; k++)
    args[n] = names[k], mds[n] = &e->ro[k].inner, ptrs[n++] = inner[k];
  if (e->native_bias)
    args[n] = XDNNL_ARG_BIAS, mds[n] = &e->md[3], ptrs[n++] = p[CONV_BIAS];
  if (e->post_bias_index >= 0)
    args[n] = XDNNL_ARG_ATTR_MULTIPLE_POST_OP(e->post_bias_index) | XDNNL_ARG_SRC_1,
    mds[n] = &e->md[3], ptrs[n++] = p[CONV_BIAS];
  if (e->scratch)
    args[n] = XDNNL_ARG_SCRATCHPAD, mds[n] = &e->scratch_md, ptrs[n++] = e->scratch;
  if (!run(x, e->prim, n, args, mds, ptrs, d))
    return false;
  Reorder *w = &e->ro[written];
  return !w->prim || reorder_run(x, w->prim, &w->inner, w->buf, &w->user,
                                 user[written], d);
}

/* f64 (which oneDNN lacks): the three kinds in plain loops, in double. */
static void conv_loops(const ConvDesc *c, void *const p[]) {
  int ns = c->nspatial;
  const ConvTensor *X = &c->x, *W = &c->w, *Y = &c->y;
  uint8_t *xp = p[CONV_X], *wp = p[CONV_W], *yp = p[CONV_Y];
  int64_t N = X->dims[0], O = W->dims[0], Cg = W->dims[1], OG = O / c->groups;
  int64_t ospat = 1, kspat = 1;
  for (int k = 0; k < ns; k++)
    ospat *= Y->dims[2 + k], kspat *= W->dims[2 + k];
  /* The computed tensor starts at zero (it is summed into). */
  const ConvTensor *T = c->kind == CONV_FORWARD ? Y : c->kind == CONV_BACKWARD_INPUT ? X : W;
  uint8_t *tp = c->kind == CONV_FORWARD ? yp : c->kind == CONV_BACKWARD_INPUT ? xp : wp;
  if (c->kind != CONV_FORWARD) {
    int64_t tot = 1;
    for (int k = 0; k < 2 + ns; k++)
      tot *= T->dims[k];
    for (int64_t lin = 0; lin < tot; lin++) {
      int64_t r = lin, off = 0;
      for (int k = 1 + ns; k >= 0; k--) {
        off += (r % T->dims[k]) * T->strides[k];
        r /= T->dims[k];
      }
      put(T->et, tp, off, 0);
    }
  }
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++) {
      int64_t g = o / OG;
      for (int64_t os = 0; os < ospat; os++) {
        int64_t so[CONV_MAX_SPATIAL], r = os;
        int64_t yoff = n * Y->strides[0] + o * Y->strides[1];
        for (int k = ns - 1; k >= 0; k--) {
          so[k] = r % Y->dims[2 + k];
          r /= Y->dims[2 + k];
          yoff += so[k] * Y->strides[2 + k];
        }
        double acc = 0, dy = c->kind == CONV_FORWARD ? 0 : get(Y->et, yp, yoff);
        for (int64_t ks = 0; ks < kspat; ks++) {
          int64_t q = ks, woff = o * W->strides[0], xoff = n * X->strides[0];
          bool in = true;
          for (int k = ns - 1; k >= 0; k--) {
            int64_t kk = q % W->dims[2 + k];
            q /= W->dims[2 + k];
            int64_t pos = so[k] * c->stride[k] + kk * c->dilation[k] - c->pad_lo[k];
            in &= pos >= 0 && pos < X->dims[2 + k];
            woff += kk * W->strides[2 + k];
            xoff += pos * X->strides[2 + k];
          }
          if (!in)
            continue;
          for (int64_t ci = 0; ci < Cg; ci++) {
            int64_t xo = xoff + (g * Cg + ci) * X->strides[1];
            int64_t wo = woff + ci * W->strides[1];
            if (c->kind == CONV_FORWARD)
              acc += get(X->et, xp, xo) * get(W->et, wp, wo);
            else if (c->kind == CONV_BACKWARD_INPUT)
              put(X->et, xp, xo, get(X->et, xp, xo) + dy * get(W->et, wp, wo));
            else
              put(W->et, wp, wo, get(W->et, wp, wo) + dy * get(X->et, xp, xo));
          }
        }
        if (c->kind == CONV_FORWARD) {
          double v = c->alpha * acc;
          if (c->side_scale != 0)
            v += c->side_scale * get(Y->et, p[CONV_SIDE], yoff);
          if (c->has_bias)
            v += get(c->bias_et, p[CONV_BIAS], o);
          put(Y->et, yp, yoff, lib_activation_apply(c->act, v));
        }
      }
    }
}

bool onednn_conv(OneDnn *x, const ConvDesc *c, void *const p[CONV_NSLICES],
                 Diag *d) {
  int dt;
  bool native = native_type(c->x.et, &dt) && c->x.et == c->w.et &&
                c->x.et == c->y.et &&
                (!c->has_bias || native_type(c->bias_et, &dt));
  if (native)
    return conv_native(x, c, p, d);
  if (c->x.et == ET_F64 && c->w.et == ET_F64 && c->y.et == ET_F64) {
    conv_loops(c, p);
    return true;
  }
  if (c->x.et == ET_F16 && c->w.et == ET_F16 && c->y.et == ET_F16) {
    /* Through f32 copies in the same strides. */
    ConvDesc h = *c;
    h.x.et = h.w.et = h.y.et = ET_F32;
    if (h.has_bias)
      h.bias_et = ET_F32;
    void *q[CONV_NSLICES] = {0};
    const ConvTensor *ts[3] = {&c->x, &c->w, &c->y};
    int slot[3] = {CONV_X, CONV_W, CONV_Y};
    for (int k = 0; k < 3; k++) {
      int64_t n = tensor_span(ts[k], c->nspatial);
      float *f = aligned((size_t)n * sizeof(float));
      for (int64_t j = 0; j < n; j++)
        f[j] = (float)get(ET_F16, p[slot[k]], j);
      q[slot[k]] = f;
    }
    if (c->has_bias) {
      float *b = aligned((size_t)c->y.dims[1] * sizeof(float));
      for (int64_t j = 0; j < c->y.dims[1]; j++)
        b[j] = (float)get(c->bias_et, p[CONV_BIAS], j);
      q[CONV_BIAS] = b;
    }
    if (c->side_scale != 0) {
      int64_t n = tensor_span(&c->y, c->nspatial);
      float *s = aligned((size_t)n * sizeof(float));
      for (int64_t j = 0; j < n; j++)
        s[j] = (float)get(ET_F16, p[CONV_SIDE], j);
      q[CONV_SIDE] = s;
    }
    bool ok = conv_native(x, &h, q, d);
    int out = c->kind == CONV_FORWARD ? 2 : c->kind == CONV_BACKWARD_INPUT ? 0 : 1;
    if (ok) {
      int64_t n = tensor_span(ts[out], c->nspatial);
      const float *f = q[slot[out]];
      for (int64_t j = 0; j < n; j++)
        put(ET_F16, p[slot[out]], j, f[j]);
    }
    for (int k = 0; k < CONV_NSLICES; k++)
      free(q[k]);
    return ok;
  }
  return diag_error(d, (Loc){0}, "oneDNN: no %s convolution on the host",
                    et_name(c->x.et));
}
