/*
 * gemm_f64.c - GEMM descriptors in double precision on the host, for the
 * element types oneDNN lacks (f64): a cache-blocked kernel in the
 * GotoBLAS/BLIS shape.
 *
 * The result is cut into work items (a batch, a range of at most ITEM_ROWS
 * rows, a range of at most NC columns), which threads take in turn.  An
 * item walks K in blocks of KC: the B block (KC x its columns) is packed
 * into NR-column panels, each MC-row A block into MR-row panels, and a
 * register-blocked MR x NR micro-kernel sums panel products into the
 * item's double tile.  After the last K block the epilogue (alpha, beta*C,
 * bias, activation) runs over the tile and each value is rounded once into
 * D.  Packing reads any strides and any real float type (exactly, into
 * double), so transposed and batched operands cost nothing extra.  The
 * micro-kernel is written with GCC vector types and compiled for x86-64-v3
 * (AVX2+FMA) next to the baseline, chosen at load time.
 */
#include "gemm_f64.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MR 6            /* micro-tile rows: 6 x 8 accumulators = 12 x 4 doubles */
#define NR 8            /* micro-tile columns */
#define KC 256          /* K block: an A panel (MR x KC) and a B panel (KC x NR) stay in L1 */
#define MC 96           /* rows of a packed A block (a multiple of MR; ~200 KB, in L2) */
#define NC 256          /* columns of a work item (a multiple of NR) */
#define ITEM_ROWS 384   /* rows of a work item at most (a multiple of MC) */

/* Problems under this many flops run on the calling thread alone. */
#define PARALLEL_MIN_FLOPS (1 << 22)

static bool gf_err(Diag *d, const char *fmt, ...) PRINTF_LIKE(2, 3);
static bool gf_err(Diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, (Loc){0}, fmt, ap);
  va_end(ap);
  return false;
}

/* Element off of a buffer of real float type t, exactly, as double. */
static inline double rd(ElemType t, const void *base, int64_t off) {
  if (t == ET_F64) {
    double v;
    memcpy(&v, (const double *)base + off, sizeof v);
    return v;
  }
  if (t == ET_F32) {
    float v;
    memcpy(&v, (const float *)base + off, sizeof v);
    return v;
  }
  int n = et_bytes(t);
  uint64_t bits = 0;
  memcpy(&bits, (const uint8_t *)base + off * n, (size_t)n);
  return fp_to_double(et_fp_format(t), bits);
}

static inline void wr(ElemType t, void *base, int64_t off, double v) {
  if (t == ET_F64) {
    memcpy((double *)base + off, &v, sizeof v);
    return;
  }
  int n = et_bytes(t);
  uint64_t bits = fp_from_double(et_fp_format(t), v);
  memcpy((uint8_t *)base + off * n, &bits, (size_t)n);
}

static double activate(LibActivation a, double v) {
  switch (a) {
  case LIB_ACT_NONE: return v;
  case LIB_ACT_RELU: return v > 0 ? v : 0;
  case LIB_ACT_GELU_TANH:
    return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  case LIB_ACT_GELU_ERF: return 0.5 * v * (1 + erf(v * 0.7071067811865476));
  }
  return v;
}

/* ---- packing ------------------------------------------------------------ */

/* A[b][i0.., q0..] (mc x kc) into MR-row panels: panel p holds, for each k,
 * rows p*MR .. p*MR+MR-1 (zeros past mc). */
static void pack_a(const GemmMatrix *a, const void *base, int64_t boff, int64_t i0, int64_t mc,
                   int64_t q0, int64_t kc, double *out) {
  for (int64_t p = 0; p < mc; p += MR) {
    int64_t rows = mc - p < MR ? mc - p : MR;
    for (int64_t q = 0; q < kc; q++) {
      int64_t off = boff + (i0 + p) * a->row_stride + (q0 + q) * a->col_stride;
      int r = 0;
      if (a->et == ET_F64) {
        for (; r < rows; r++) out[r] = ((const double *)base)[off + r * a->row_stride];
      } else {
        for (; r < rows; r++) out[r] = rd(a->et, base, off + r * a->row_stride);
      }
      for (; r < MR; r++) out[r] = 0;
      out += MR;
    }
  }
}

/* B[b][q0.., j0..] (kc x nc) into NR-column panels: panel p holds, for each
 * k, columns p*NR .. p*NR+NR-1 (zeros past nc). */
static void pack_b(const GemmMatrix *b, const void *base, int64_t boff, int64_t q0, int64_t kc,
                   int64_t j0, int64_t nc, double *out) {
  for (int64_t p = 0; p < nc; p += NR) {
    int64_t cols = nc - p < NR ? nc - p : NR;
    for (int64_t q = 0; q < kc; q++) {
      int64_t off = boff + (q0 + q) * b->row_stride + (j0 + p) * b->col_stride;
      int c = 0;
      if (b->et == ET_F64) {
        for (; c < cols; c++) out[c] = ((const double *)base)[off + c * b->col_stride];
      } else {
        for (; c < cols; c++) out[c] = rd(b->et, base, off + c * b->col_stride);
      }
      for (; c < NR; c++) out[c] = 0;
      out += NR;
    }
  }
}

/* ---- the micro-kernel --------------------------------------------------- */

typedef double v4d __attribute__((vector_size(32)));

/* t[MR x NR] (row stride ldt) = (first ? 0 : t) + Ap (MR x kc) @ Bp (kc x NR). */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void micro_kernel(int64_t kc, const double *restrict ap, const double *restrict bp,
                         double *restrict t, int64_t ldt, bool first) {
  v4d acc[MR][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = (v4d){0, 0, 0, 0};
  for (int64_t q = 0; q < kc; q++) {
    v4d b0, b1;
    memcpy(&b0, bp, sizeof b0);
    memcpy(&b1, bp + 4, sizeof b1);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
      double a = ap[r];
      acc[r][0] += a * b0;
      acc[r][1] += a * b1;
    }
    ap += MR;
    bp += NR;
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; r++) {
    double *row = t + r * ldt;
    if (!first) {
      v4d t0, t1;
      memcpy(&t0, row, sizeof t0);
      memcpy(&t1, row + 4, sizeof t1);
      acc[r][0] += t0;
      acc[r][1] += t1;
    }
    memcpy(row, &acc[r][0], sizeof acc[r][0]);
    memcpy(row + 4, &acc[r][1], sizeof acc[r][1]);
  }
}

/* ---- work items and threads --------------------------------------------- */

typedef struct Plan {
  const GemmDesc *g;
  void *const *p;
  int64_t item_rows;              /* rows of an item (a multiple of MR) */
  int64_t row_items, col_items, nitems;
  int nthreads;
} Plan;

typedef struct Worker {
  const Plan *plan;
  int index;
  double *ap, *bp, *tile;         /* packed A block, packed B block, result tile */
  pthread_t tid;
} Worker;

static int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

/* One item: rows [i0, i0+mi), columns [j0, j0+nj) of batch b. */
static void run_item(const Plan *pl, Worker *w, int64_t b, int64_t i0, int64_t mi, int64_t j0,
                     int64_t nj) {
  const GemmDesc *g = pl->g;
  void *const *p = pl->p;
  int64_t ldt = round_up(nj, NR);
  for (int64_t q0 = 0; q0 < g->k; q0 += KC) {
    int64_t kc = g->k - q0 < KC ? g->k - q0 : KC;
    pack_b(&g->b, p[GEMM_B], b * g->b.batch_stride, q0, kc, j0, nj, w->bp);
    for (int64_t ic = 0; ic < mi; ic += MC) {
      int64_t mc = mi - ic < MC ? mi - ic : MC;
      pack_a(&g->a, p[GEMM_A], b * g->a.batch_stride, i0 + ic, mc, q0, kc, w->ap);
      for (int64_t jr = 0; jr < nj; jr += NR)
        for (int64_t ir = 0; ir < mc; ir += MR)
          micro_kernel(kc, w->ap + ir * kc, w->bp + jr * kc, w->tile + (ic + ir) * ldt + jr,
                       ldt, q0 == 0);
    }
  }
  /* The epilogue, C read before D is written element by element (C may be
   * D itself). */
  const void *bias = p[GEMM_BIAS], *c = p[GEMM_C];
  for (int64_t i = 0; i < mi; i++)
    for (int64_t j = 0; j < nj; j++) {
      double v = g->alpha_re * w->tile[i * ldt + j];
      if (g->beta != 0)
        v += g->beta * rd(g->c.et, c,
                          b * g->c.batch_stride + (i0 + i) * g->c.row_stride +
                              (j0 + j) * g->c.col_stride);
      if (g->has_bias) v += rd(g->bias_et, bias, j0 + j);
      wr(g->d.et, p[GEMM_D],
         b * g->d.batch_stride + (i0 + i) * g->d.row_stride + (j0 + j) * g->d.col_stride,
         activate(g->act, v));
    }
}

static void *worker_main(void *arg) {
  Worker *w = arg;
  const Plan *pl = w->plan;
  const GemmDesc *g = pl->g;
  for (int64_t it = w->index; it < pl->nitems; it += pl->nthreads) {
    int64_t ci = it % pl->col_items, rest = it / pl->col_items;
    int64_t ri = rest % pl->row_items, b = rest / pl->row_items;
    int64_t i0 = ri * pl->item_rows, j0 = ci * NC;
    int64_t mi = g->m - i0 < pl->item_rows ? g->m - i0 : pl->item_rows;
    int64_t nj = g->n - j0 < NC ? g->n - j0 : NC;
    run_item(pl, w, b, i0, mi, j0, nj);
  }
  return NULL;
}

static void *aligned_doubles(int64_t n) {
  size_t bytes = (size_t)round_up(n * (int64_t)sizeof(double), 64);
  void *p = aligned_alloc(64, bytes);
  if (!p) die("out of memory (%zu bytes)", bytes);
  return p;
}

/* ---- checks and the entry point ----------------------------------------- */

static bool check_matrix(const char *what, const GemmMatrix *m, int64_t rows, int64_t cols,
                         Diag *d) {
  if (!(m->et > ET_INVALID && m->et < ET_COUNT && et_is_float(m->et)))
    return gf_err(d, "host GEMM in double: the %s has element type %s (real floats only)",
                  what, m->et > ET_INVALID && m->et < ET_COUNT ? et_name(m->et) : "invalid");
  if (m->rows != rows || m->cols != cols)
    return gf_err(d, "host GEMM in double: the %s is %lldx%lld, expected %lldx%lld", what,
                  (long long)m->rows, (long long)m->cols, (long long)rows, (long long)cols);
  if (m->row_stride < 0 || m->col_stride < 0 || m->batch_stride < 0)
    return gf_err(d, "host GEMM in double: the %s has negative strides", what);
  return true;
}

static int online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 1 && n <= 1024 ? (int)n : 1;
}

bool gemm_f64(const GemmDesc *g, void *const p[GEMM_NSLICES], int threads, Diag *d) {
  if (g->batch < 1 || g->m < 1 || g->n < 1 || g->k < 1)
    return gf_err(d, "host GEMM in double: bad sizes batch %lld, m %lld, n %lld, k %lld",
                  (long long)g->batch, (long long)g->m, (long long)g->n, (long long)g->k);
  if (g->alpha_im != 0)
    return gf_err(d, "host GEMM in double: complex alpha (%g + %gi) is not supported",
                  g->alpha_re, g->alpha_im);
  if (!check_matrix("A operand", &g->a, g->m, g->k, d) ||
      !check_matrix("B operand", &g->b, g->k, g->n, d) ||
      !check_matrix("result D", &g->d, g->m, g->n, d) ||
      (g->beta != 0 && !check_matrix("addend C", &g->c, g->m, g->n, d)))
    return false;
  if (g->has_bias && !(g->bias_et > ET_INVALID && g->bias_et < ET_COUNT && et_is_float(g->bias_et)))
    return gf_err(d, "host GEMM in double: the bias has element type %s (real floats only)",
                  g->bias_et > ET_INVALID && g->bias_et < ET_COUNT ? et_name(g->bias_et)
                                                                   : "invalid");
  if (g->act < LIB_ACT_NONE || g->act > LIB_ACT_GELU_ERF)
    return gf_err(d, "host GEMM in double: unknown activation %d", (int)g->act);
  if (!p[GEMM_A] || !p[GEMM_B] || !p[GEMM_D] || (g->beta != 0 && !p[GEMM_C]) ||
      (g->has_bias && !p[GEMM_BIAS]))
    return gf_err(d, "host GEMM in double: an operand's buffer is missing");

  int nthreads = threads > 0 ? threads : online_cpus();
  double flops = 2.0 * (double)g->batch * (double)g->m * (double)g->n * (double)g->k;
  if (flops < PARALLEL_MIN_FLOPS) nthreads = 1;
  Plan pl = {.g = g, .p = p};
  pl.col_items = (g->n + NC - 1) / NC;
  /* Enough row items that every thread has work, none taller than
   * ITEM_ROWS. */
  int64_t want = (nthreads + g->batch * pl.col_items - 1) / (g->batch * pl.col_items);
  int64_t row_items = (g->m + ITEM_ROWS - 1) / ITEM_ROWS;
  if (row_items < want) row_items = want;
  pl.item_rows = round_up((g->m + row_items - 1) / row_items, MR);
  pl.row_items = (g->m + pl.item_rows - 1) / pl.item_rows;
  pl.nitems = g->batch * pl.row_items * pl.col_items;
  if (nthreads > pl.nitems) nthreads = (int)pl.nitems;
  pl.nthreads = nthreads;

  int64_t kc = g->k < KC ? g->k : KC;
  int64_t nc = round_up(g->n < NC ? g->n : NC, NR);
  int64_t mc = round_up(g->m < MC ? g->m : MC, MR);
  Worker *ws = xcalloc((size_t)nthreads, sizeof *ws);
  for (int t = 0; t < nthreads; t++) {
    ws[t].plan = &pl;
    ws[t].index = t;
    ws[t].ap = aligned_doubles(mc * kc);
    ws[t].bp = aligned_doubles(kc * nc);
    ws[t].tile = aligned_doubles(pl.item_rows * nc);
  }
  /* Threads 1.. run beside the caller, which is thread 0; a thread that
   * cannot start leaves its items to the caller. */
  bool *started = xcalloc((size_t)nthreads, sizeof *started);
  for (int t = 1; t < nthreads; t++)
    started[t] = pthread_create(&ws[t].tid, NULL, worker_main, &ws[t]) == 0;
  worker_main(&ws[0]);
  for (int t = 1; t < nthreads; t++) {
    if (started[t])
      pthread_join(ws[t].tid, NULL);
    else
      worker_main(&ws[t]);
  }
  for (int t = 0; t < nthreads; t++) {
    free(ws[t].ap);
    free(ws[t].bp);
    free(ws[t].tile);
  }
  free(ws);
  free(started);
  return true;
}
