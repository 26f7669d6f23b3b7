/*
 * profile.c - the per-thunk summary of a profile (xhlo-run --profile): each
 * thunk's calls, time, mean, share of the thunks' time and achieved GB/s,
 * sorted by time, in the spirit of nsys's and XLA's profile summaries.
 * Shares are of the entry sequence's thunks' time; a while's, conditional's
 * or command buffer's line counts only its own time (a command buffer
 * replayed as a whole: all of it), so the lines add up to it.
 */
#include <stdlib.h>

#include "profile.h"

const char *thunk_kind_name(ThunkKind k) {
  switch (k) {
  case THUNK_KERNEL: return "kernel";
  case THUNK_COPY: return "copy";
  case THUNK_MEMSET32: return "memset32";
  case THUNK_WHILE: return "while";
  case THUNK_CONDITIONAL: return "conditional";
  case THUNK_GEMM: return "gemm";
  case THUNK_CONV: return "convolution";
  case THUNK_COMMAND_BUFFER: return "cmd-buffer";
  case THUNK_COLLECTIVE: return "collective";
  case THUNK_ROUTINE: return "routine";
  }
  return "?";
}

int64_t thunk_bytes(const Thunk *t) {
  int64_t n = 0;
  switch (t->kind) {
  case THUNK_KERNEL:
    for (int k = 0; k < t->nargs; k++) n += t->args[k].size;
    return n;
  case THUNK_COPY: return t->src.size + t->dst.size;
  case THUNK_MEMSET32: return t->dst.size;
  case THUNK_ROUTINE:
    for (int k = 0; k < LIB_MAX_SLICES; k++)
      if (t->lib[k].alloc >= 0) n += t->lib[k].size;
    return n;
  case THUNK_GEMM:
  case THUNK_CONV: {
    int ws = t->kind == THUNK_GEMM ? GEMM_WORKSPACE : CONV_WORKSPACE;
    for (int k = 0; k < LIB_MAX_SLICES; k++)
      if (k != ws && t->lib[k].alloc >= 0) n += t->lib[k].size;
    return n;
  }
  case THUNK_WHILE:
  case THUNK_CONDITIONAL:
  case THUNK_COMMAND_BUFFER: return 0;
  case THUNK_COLLECTIVE:
    if (t->coll->done) return 0;
    for (int k = 0; k < t->coll->n; k++) n += t->coll->in[k].size + t->coll->out[k].size;
    return t->coll->n ? n : t->coll->out[0].size;
  }
  return 0;
}

void profile_thunk_name(StrBuf *b, const ThunkProfile *p, int k) {
  const ThunkProfile *tp = &p[k];
  if (tp->parent >= 0) {
    profile_thunk_name(b, p, tp->parent);
    ThunkKind pk = p[tp->parent].thunk->kind;
    if (pk == THUNK_WHILE)
      sb_puts(b, tp->seq == 0 ? "/cond/" : "/body/");
    else if (pk == THUNK_COMMAND_BUFFER)
      sb_puts(b, "/");
    else
      sb_printf(b, "/branch %d/", tp->seq);
  }
  const Thunk *t = tp->thunk;
  if (t->annotation && *t->annotation)
    sb_puts(b, t->annotation);
  else if (t->kernel_name)
    sb_puts(b, t->kernel_name);
  else if (t->kind == THUNK_COMMAND_BUFFER && t->commands)
    sb_printf(b, "command-buffer(%d thunks)", t->commands->n);
  else
    sb_puts(b, "?");
}

static double total_ms(const ThunkProfile *tp) {
  double s = 0;
  for (int r = 0; r < tp->nsamples; r++) s += tp->ms[r];
  return s;
}

double profile_own_ms(const ThunkProfile *p, int n, int k) {
  double ms = total_ms(&p[k]);
  ThunkKind kind = p[k].thunk->kind;
  if (kind != THUNK_WHILE && kind != THUNK_CONDITIONAL && kind != THUNK_COMMAND_BUFFER)
    return ms;
  for (int j = k + 1; j < n && p[j].depth > p[k].depth; j++)
    if (p[j].parent == k) ms -= total_ms(&p[j]);
  return ms > 0 ? ms : 0;
}

typedef struct Row {
  int k;
  double ms;
} Row;

static int cmp_row(const void *x, const void *y) {
  const Row *a = x, *b = y;
  if (a->ms != b->ms) return a->ms < b->ms ? 1 : -1;
  return (a->k > b->k) - (a->k < b->k);
}

void profile_print_summary(StrBuf *b, const ThunkProfile *p, int n, int runs,
                           const char *platform, const char *clock) {
  Row *rows = xcalloc((size_t)n + 1, sizeof *rows);
  double all = 0;
  int64_t calls = 0;
  for (int k = 0; k < n; k++) {
    rows[k] = (Row){k, profile_own_ms(p, n, k)};
    if (p[k].depth == 0) all += total_ms(&p[k]);
    calls += p[k].calls;
  }
  qsort(rows, (size_t)n, sizeof *rows, cmp_row);
  sb_printf(b, "thunk profile: %d run%s on %s (%s), thunks timed one at a time\n", runs,
            runs == 1 ? "" : "s", platform, clock);
  sb_printf(b, "%12s %7s %8s %11s %9s  %-11s %-17s %s\n", "total ms", "share", "calls",
            "mean us", "GB/s", "kind", "launch", "name");
  StrBuf name, launch;
  sb_init(&name);
  sb_init(&launch);
  for (int r = 0; r < n; r++) {
    const ThunkProfile *tp = &p[rows[r].k];
    const Thunk *t = tp->thunk;
    double ms = rows[r].ms;
    sb_clear(&name);
    sb_clear(&launch);
    profile_thunk_name(&name, p, rows[r].k);
    if (t->kind == THUNK_KERNEL) {
      sb_printf(&launch, "%ux%ux%u/%ux%ux%u", t->grid[0], t->grid[1], t->grid[2],
                t->block[0], t->block[1], t->block[2]);
      if (t->shmem_bytes) sb_printf(&launch, "+%uB", t->shmem_bytes);
    } else {
      sb_puts(&launch, "-");
    }
    sb_printf(b, "%12.4f ", ms);
    if (all > 0) sb_printf(b, "%6.1f%% ", 100 * ms / all);
    else sb_printf(b, "%7s ", "-");
    sb_printf(b, "%8lld ", (long long)tp->calls);
    if (tp->calls) sb_printf(b, "%11.3f ", 1e3 * ms / (double)tp->calls);
    else sb_printf(b, "%11s ", "-");
    int64_t bytes = thunk_bytes(t);
    if (bytes > 0 && ms > 0 && tp->calls)
      sb_printf(b, "%9.3f ", (double)bytes * (double)tp->calls / (ms * 1e6));
    else
      sb_printf(b, "%9s ", "-");
    sb_printf(b, " %-11s %-17s %s\n", thunk_kind_name(t->kind), launch.s ? launch.s : "",
              name.s ? name.s : "");
  }
  sb_printf(b, "%12.4f %7s %8lld %11s %9s  total\n", all, all > 0 ? "100.0%" : "-",
            (long long)calls, "", "");
  sb_free(&name);
  sb_free(&launch);
  free(rows);
}
