/*
 * executor.c - runs a compiled artifact's thunk sequence on a Platform.
 *
 * executor_new checks every slice the thunks and leaves use against the
 * allocation table (so no artifact, however made, can send a kernel or copy
 * outside a buffer), parses the leaf shapes, refuses layouts it cannot
 * permute (tiles, sub-byte element sizes, dynamic dimensions), allocates one
 * device pool that holds every allocation (each at a 256-byte aligned
 * offset: one platform allocation, not one per buffer), uploads the
 * constants and loads the kernels.
 * It mirrors the thunk tree in ExecThunks that hold what a run needs at
 * hand: the resolved kernel handle and its argument addresses.
 *
 * A run uploads the inputs, walks the tree (a while loop reads its pred
 * byte back after each cond; a conditional reads its pred or s32 index),
 * and downloads the results.  On a platform with pinned host memory the
 * inputs and outputs pass through one pinned staging buffer (allocated by
 * the first run, reused after) with asynchronous copies, and the run
 * synchronizes once at its end; its thunks are then timed with two
 * platform marks, so the time excludes the copies.
 *
 * Device errors that show only at a synchronization (a kernel's illegal
 * address) are reported with the thunks run since the previous one; with
 * executor_set_sync_each_thunk every thunk is followed by a
 * synchronization, naming the one at fault.
 *
 * A command buffer (on a platform that has them, unless turned off) is
 * recorded by running its commands between cmdbuf_begin and cmdbuf_end the
 * first time it is reached, and replayed with cmdbuf_launch after that.  It
 * remembers the device address of every slice its commands use when it was
 * recorded; when they differ (executor_move_buffers) it is recorded again
 * and the platform updates it in place.
 *
 * A collective thunk (collective_exec.c) meets the other devices of a
 * multi-device run (executor_set_device), through host memory or the
 * platform's collective library (NCCL on the CUDA platform); it stays in
 * its place in the schedule, between segments, like a while.
 *
 * Profiling wraps each thunk in two platform marks (a pair per nesting
 * depth, one more pair for the run) and adds up its time and calls; tracing
 * also keeps each execution's start, measured from the run's first mark.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../eval/eval.h"
#include "collective_exec.h"
#include "platform.h"

typedef struct ExecSeq ExecSeq;
typedef struct ExecThunk ExecThunk;

struct ExecSeq {
  int n;
  ExecThunk *t;
};

struct ExecThunk {
  const Thunk *thunk;
  int prof;                       /* index into Executor.prof */
  int depth;
  void *kernel;                   /* KERNEL: the platform's handle */
  DevPtr *args;                   /* KERNEL: nargs addresses */
  DevPtr src, dst, pred;          /* COPY/MEMSET32 src, dst; WHILE/COND: pred */
  ExecSeq cond, body;             /* WHILE */
  ExecSeq *branches;              /* CONDITIONAL: nbranches */
  DevPtr lib[LIB_MAX_SLICES];     /* GEMM/CONV: slice addresses, 0: absent */
  int group;                      /* KERNEL on a platform with launch_group:
                                     how many kernels from this one on are
                                     launched together (1: alone; 0: this
                                     one goes with an earlier one) */
  ExecSeq cmds;                   /* COMMAND_BUFFER: its commands */
  struct CmdBuf *cb;              /* COMMAND_BUFFER: its recording */
  CollExec *coll;                 /* COLLECTIVE */
  DevPtr *coll_in, *coll_out;     /* COLLECTIVE: slice addresses */
};

/* A command buffer's recording: the platform's handle (NULL until the
 * first run) and the addresses its commands used then. */
typedef struct CmdBuf {
  void *handle;
  int naddrs;
  DevPtr *addrs;                  /* at recording */
  DevPtr *now;                    /* scratch: the current ones */
} CmdBuf;

struct Executor {
  const Artifact *a;
  Platform *p;
  Arena *arena;
  DevPtr *bufs;                   /* one per allocation, in the pool */
  int nbufs;
  DevPtr pool;                    /* every allocation; 0 when none */
  size_t pool_size;
  int64_t *pool_off;              /* nbufs offsets into the pool */
  /* pinned staging (platforms with host_alloc): the inputs, then the
   * outputs, each at a 64-byte aligned offset */
  bool staged;
  uint8_t *stage;                 /* NULL until the first run */
  size_t stage_size;
  size_t *stage_in, *stage_out;   /* offsets per parameter, per output */
  /* thunks issued since the last synchronization, for error messages */
  bool sync_each;
  bool recording;                 /* inside a command buffer's recording */
  int64_t npending;
  const Thunk *pending_first, *pending_last;
  Shape **param_shapes, **out_shapes;
  Shape *result_shape;
  ExecSeq entry;
  int max_depth;
  bool profile;
  double last_exec_ms;            /* the last run's thunks, synchronized */
  int nprof;
  ThunkProfile *prof;
  bool no_cmdbufs;                /* executor_set_command_buffers(false) */
  bool keep_inputs;               /* executor_set_keep_inputs */
  bool defer_sync;                /* executor_set_defer_sync */
  const Literal **resident;       /* keep_inputs: per parameter leaf, the
                                     literal its buffer holds (NULL: none) */
  int ncbs;
  CmdBuf **cbs;                   /* every command buffer, to free them */
  /* tracing (executor_set_trace) */
  int64_t max_events, nevents, dropped;
  TraceEvent *events;             /* nevents, capacity cap_events */
  int64_t cap_events;
  int traced_runs;
  double trace_t0;                /* the first traced run's start, ms */
  double run_origin;              /* this run's start from trace_t0, ms */
  Exchange *xchg;                 /* executor_set_device; NULL: alone */
  int ncolls;
  CollExec **colls;               /* every collective's, to free them */
  int npend;                      /* asynchronous collectives started and
                                     not yet waited for (their -done's
                                     thunk comes later in the run) */
  struct Pend { int64_t id; CollPending *q; } *pend;
  int64_t replica, partition;
  double trace_end;               /* the last traced run's end, ms */
  int base_mark;                  /* the mark at this run's start */
};

static bool ex_err(Diag *d, const char *fmt, ...) PRINTF_LIKE(2, 3);
static bool ex_err(Diag *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Loc none = {0};
  diag_verror(d, none, fmt, ap);
  va_end(ap);
  return false;
}

static const char *kind_name(ThunkKind k) {
  switch (k) {
  case THUNK_KERNEL: return "kernel";
  case THUNK_COPY: return "copy";
  case THUNK_MEMSET32: return "memset32";
  case THUNK_WHILE: return "while";
  case THUNK_CONDITIONAL: return "conditional";
  case THUNK_GEMM: return "gemm";
  case THUNK_CONV: return "convolution";
  case THUNK_COMMAND_BUFFER: return "command buffer";
  case THUNK_COLLECTIVE: return "collective";
  case THUNK_ROUTINE: return "routine";
  }
  return "?";
}

/*
 * Layout permutation
 */

/* Copies between row-major order and the layout's physical order. */
static void permute(const Shape *s, const uint8_t *src, uint8_t *dst,
                    bool to_physical) {
  int r = s->rank;
  size_t eb = (size_t)et_bytes(s->et);
  int64_t n = shape_elements(s);
  if (n <= 0) return;
  int64_t *stride = xcalloc((size_t)r + 1, sizeof *stride);
  int64_t *idx = xcalloc((size_t)r + 1, sizeof *idx);
  int64_t st = 1;
  for (int k = 0; k < r; k++) {
    int dim = s->layout ? (int)s->layout->minor_to_major[k] : r - 1 - k;
    stride[dim] = st;
    st *= s->dims[dim];
  }
  int64_t off = 0;
  for (int64_t e = 0; e < n; e++) {
    if (to_physical)
      memcpy(dst + (size_t)off * eb, src + (size_t)e * eb, eb);
    else
      memcpy(dst + (size_t)e * eb, src + (size_t)off * eb, eb);
    for (int k = r - 1; k >= 0; k--) {
      off += stride[k];
      if (++idx[k] < s->dims[k]) break;
      off -= stride[k] * s->dims[k];
      idx[k] = 0;
    }
  }
  free(stride);
  free(idx);
}

void layout_to_physical(const Shape *s, const uint8_t *row_major,
                        uint8_t *physical) {
  permute(s, row_major, physical, true);
}

void layout_from_physical(const Shape *s, const uint8_t *physical,
                          uint8_t *row_major) {
  permute(s, physical, row_major, false);
}

static bool layout_is_identity(const Shape *s) {
  return !s->layout || layout_is_default(s->layout, s->rank);
}

/*
 * Setup
 */

static bool check_slice(const Executor *e, BufSlice sl, const char *what,
                        const Thunk *t, Diag *d) {
  const Artifact *a = e->a;
  if (sl.alloc < 0 || sl.alloc >= a->nallocs || sl.offset < 0 || sl.size < 0 ||
      sl.offset > a->allocs[sl.alloc].size ||
      sl.size > a->allocs[sl.alloc].size - sl.offset)
    return ex_err(d, "the artifact's %s slice {alloc %d, offset %lld, size %lld}%s%s%s lies "
                  "outside the allocation table",
                  what, (int)sl.alloc, (long long)sl.offset, (long long)sl.size,
                  t ? " of thunk '" : "", t && t->annotation ? t->annotation : "",
                  t ? "'" : "");
  return true;
}

static DevPtr slice_addr(const Executor *e, BufSlice sl) {
  return e->bufs[sl.alloc] + (DevPtr)sl.offset;
}

static bool prepare_seq(Executor *e, const ThunkSeq *s, int depth, ExecSeq *out,
                        Diag *d);

/* The device addresses a command buffer's commands use, in a fixed order,
 * into out (NULL: only counted); returns how many. */
static int cmd_addrs(const ExecSeq *s, DevPtr *out) {
  int n = 0;
  for (int k = 0; k < s->n; k++) {
    const ExecThunk *x = &s->t[k];
    const Thunk *t = x->thunk;
    switch (t->kind) {
    case THUNK_KERNEL:
      for (int a = 0; a < t->nargs; a++, n++)
        if (out) out[n] = x->args[a];
      break;
    case THUNK_COPY:
      if (out) out[n] = x->src, out[n + 1] = x->dst;
      n += 2;
      break;
    case THUNK_MEMSET32:
      if (out) out[n] = x->dst;
      n++;
      break;
    case THUNK_GEMM:
    case THUNK_CONV:
    case THUNK_ROUTINE:
      for (int a = 0; a < LIB_MAX_SLICES; a++, n++)
        if (out) out[n] = x->lib[a];
      break;
    default:
      break;
    }
  }
  return n;
}

static bool prepare_thunk(Executor *e, const Thunk *t, int depth, ExecThunk *x,
                          Diag *d) {
  x->thunk = t;
  x->depth = depth;
  x->prof = e->nprof++;
  if (depth > e->max_depth) e->max_depth = depth;
  switch (t->kind) {
  case THUNK_KERNEL:
    if (!t->kernel_name || t->nargs < 0 || (t->nargs > 0 && !t->args))
      return ex_err(d, "the artifact has a kernel thunk without a kernel name or arguments");
    x->kernel = e->p->kernel(e->p, t->kernel_name, d);
    if (!x->kernel) return false;
    x->args = ARENA_ARRAY(e->arena, DevPtr, t->nargs + 1);
    for (int k = 0; k < t->nargs; k++) {
      if (!check_slice(e, t->args[k], "kernel argument", t, d)) return false;
      x->args[k] = slice_addr(e, t->args[k]);
    }
    return true;
  case THUNK_COPY:
    if (!check_slice(e, t->src, "copy source", t, d) ||
        !check_slice(e, t->dst, "copy destination", t, d))
      return false;
    if (t->src.size != t->dst.size)
      return ex_err(d, "the artifact's copy thunk '%s' copies %lld bytes into %lld",
                    t->annotation ? t->annotation : "", (long long)t->src.size,
                    (long long)t->dst.size);
    x->src = slice_addr(e, t->src);
    x->dst = slice_addr(e, t->dst);
    return true;
  case THUNK_MEMSET32:
    if (!check_slice(e, t->dst, "memset destination", t, d)) return false;
    if (t->dst.size % 4 || t->dst.offset % 4)
      return ex_err(d, "the artifact's memset32 thunk '%s' fills %lld bytes at offset %lld "
                    "(not whole aligned 32-bit words)",
                    t->annotation ? t->annotation : "", (long long)t->dst.size,
                    (long long)t->dst.offset);
    x->dst = slice_addr(e, t->dst);
    return true;
  case THUNK_WHILE:
    if (!t->cond || !t->body) return ex_err(d, "the artifact has a while thunk without cond or body");
    if (!check_slice(e, t->cond_result, "while predicate", t, d)) return false;
    if (t->cond_result.size < 1)
      return ex_err(d, "the artifact's while thunk has an empty predicate slice");
    x->pred = slice_addr(e, t->cond_result);
    return prepare_seq(e, t->cond, depth + 1, &x->cond, d) &&
           prepare_seq(e, t->body, depth + 1, &x->body, d);
  case THUNK_CONDITIONAL:
    if (t->nbranches < 1 || !t->branches || (t->index_is_pred && t->nbranches != 2))
      return ex_err(d, "the artifact's conditional thunk has %d branches%s", t->nbranches,
                    t->index_is_pred ? " for a pred index (needs 2)" : "");
    if (!check_slice(e, t->branch_index, "branch index", t, d)) return false;
    if (t->branch_index.size < (t->index_is_pred ? 1 : 4))
      return ex_err(d, "the artifact's conditional thunk has a %lld-byte branch index",
                    (long long)t->branch_index.size);
    x->pred = slice_addr(e, t->branch_index);
    x->branches = ARENA_ARRAY(e->arena, ExecSeq, t->nbranches);
    for (int b = 0; b < t->nbranches; b++)
      if (!prepare_seq(e, &t->branches[b], depth + 1, &x->branches[b], d)) return false;
    return true;
  case THUNK_ROUTINE:
    if (!e->p->routine)
      return ex_err(d, "platform %s has no routine for the %s thunk '%s' (an artifact "
                    "compiled for the host)", e->p->name,
                    t->routine ? routine_kind_name(t->routine->kind) : "routine",
                    t->annotation ? t->annotation : "");
    if (!routine_check(t->routine, t->lib, d))
      return false;
    for (int k = 0; k < LIB_MAX_SLICES; k++) {
      if (t->lib[k].alloc < 0) continue;
      if (!check_slice(e, t->lib[k], "routine operand", t, d)) return false;
      x->lib[k] = slice_addr(e, t->lib[k]);
    }
    return true;
  case THUNK_GEMM:
  case THUNK_CONV: {
    bool gemm = t->kind == THUNK_GEMM;
    if (gemm ? !e->p->gemm : !e->p->conv)
      return ex_err(d, "platform %s has no library for the %s thunk '%s'", e->p->name,
                    kind_name(t->kind), t->annotation ? t->annotation : "");
    if (gemm ? !libcall_check_gemm(t->gemm, t->lib, d) : !libcall_check_conv(t->conv, t->lib, d))
      return false;
    for (int k = 0; k < LIB_MAX_SLICES; k++) {
      if (t->lib[k].alloc < 0) continue;
      if (!check_slice(e, t->lib[k], "library call operand", t, d)) return false;
      x->lib[k] = slice_addr(e, t->lib[k]);
    }
    return true;
  }
  case THUNK_COMMAND_BUFFER: {
    if (!t->commands || t->commands->n < 1)
      return ex_err(d, "the artifact has a command buffer thunk without commands");
    for (int k = 0; k < t->commands->n; k++) {
      ThunkKind kk = t->commands->thunks ? t->commands->thunks[k].kind : THUNK_KERNEL;
      if (kk == THUNK_WHILE || kk == THUNK_CONDITIONAL || kk == THUNK_COMMAND_BUFFER)
        return ex_err(d, "the artifact's command buffer holds a %s thunk", kind_name(kk));
    }
    if (!prepare_seq(e, t->commands, depth + 1, &x->cmds, d)) return false;
    CmdBuf *cb = x->cb = ARENA_NEW(e->arena, CmdBuf);
    cb->naddrs = cmd_addrs(&x->cmds, NULL);
    cb->addrs = ARENA_ARRAY(e->arena, DevPtr, cb->naddrs + 1);
    cb->now = ARENA_ARRAY(e->arena, DevPtr, cb->naddrs + 1);
    e->cbs = xreallocarray(e->cbs, (size_t)e->ncbs + 1, sizeof *e->cbs);
    e->cbs[e->ncbs++] = cb;
    return true;
  }
  case THUNK_COLLECTIVE: {
    const CollDesc *c = t->coll;
    if (!c || c->n < 0)
      return ex_err(d, "the artifact has a collective thunk without its description");
    if (c->done) return true;     /* waits for its -start: nothing to prepare */
    int nout = c->n ? c->n : 1;
    x->coll_in = ARENA_ARRAY(e->arena, DevPtr, c->n + 1);
    x->coll_out = ARENA_ARRAY(e->arena, DevPtr, nout);
    for (int k = 0; k < c->n; k++) {
      if (!check_slice(e, c->in[k], "collective operand", t, d)) return false;
      x->coll_in[k] = slice_addr(e, c->in[k]);
    }
    for (int k = 0; k < nout; k++) {
      if (!check_slice(e, c->out[k], "collective result", t, d)) return false;
      x->coll_out[k] = slice_addr(e, c->out[k]);
    }
    if (!(x->coll = coll_prepare(e->arena, t, e->p, d))) return false;
    e->colls = xreallocarray(e->colls, (size_t)e->ncolls + 1, sizeof *e->colls);
    e->colls[e->ncolls++] = x->coll;
    return true;
  }
  }
  return ex_err(d, "the artifact has a thunk of unknown kind %d", (int)t->kind);
}

static bool slices_overlap(BufSlice a, BufSlice b) {
  return a.alloc == b.alloc && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

/* The slices a thunk touches and whether it writes them: a kernel's
 * arguments as its `written` flags say, a copy's source and destination, a
 * memset's destination, and all of a library call's slices (counted as
 * written).  n: how many; false for a while or conditional. */
static bool thunk_access(const Thunk *t, BufSlice *sl, bool *w, int cap, int *n) {
  *n = 0;
  switch (t->kind) {
  case THUNK_KERNEL:
    if (t->nargs > cap) return false;
    for (int k = 0; k < t->nargs; k++) {
      sl[k] = t->args[k];
      w[k] = !t->written || t->written[k];
    }
    *n = t->nargs;
    return true;
  case THUNK_COPY:
    sl[0] = t->src, w[0] = false;
    sl[1] = t->dst, w[1] = true;
    *n = 2;
    return true;
  case THUNK_MEMSET32:
    sl[0] = t->dst, w[0] = true;
    *n = 1;
    return true;
  case THUNK_GEMM:
  case THUNK_CONV:
  case THUNK_ROUTINE:
    for (int k = 0; k < LIB_MAX_SLICES; k++)
      if (t->lib[k].alloc >= 0) {
        sl[*n] = t->lib[k];
        w[(*n)++] = true;
      }
    return true;
  default:
    return false;
  }
}

enum { MAX_GROUP = 64, MAX_ACCESS = 64, MAX_SEGMENT = 1024 };

typedef struct Access {
  int n;
  BufSlice sl[MAX_ACCESS];
  bool w[MAX_ACCESS];
} Access;

/* Whether two thunks may not run in either order: one writes a byte that
 * the other reads or writes. */
static bool accesses_conflict(const Access *a, const Access *b) {
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j < b->n; j++)
      if ((a->w[i] || b->w[j]) && slices_overlap(a->sl[i], b->sl[j]))
        return true;
  return false;
}

static int cmp_level(const void *x, const void *y) {
  const int *a = x, *b = y;     /* (level, index) pairs */
  return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
}

/* Schedules seq[lo, hi) (thunks whose accesses are known) by dependence
 * level: a thunk's level is one more than the highest level of the earlier
 * thunks it conflicts with, so any two conflicting thunks keep their order.
 * The thunks are reordered by level, and each level's kernels are launched
 * together. */
static void schedule_segment(Arena *ar, ExecSeq *s, int lo, int hi, Access *acc) {
  int n = hi - lo;
  int *lv = ARENA_ARRAY(ar, int, 2 * n);
  for (int j = 0; j < n; j++) {
    int level = 0;
    for (int i = 0; i < j; i++)
      if (lv[2 * i] + 1 > level && accesses_conflict(&acc[i], &acc[j]))
        level = lv[2 * i] + 1;
    lv[2 * j] = level;
    lv[2 * j + 1] = j;
  }
  qsort(lv, (size_t)n, 2 * sizeof *lv, cmp_level);
  ExecThunk *orig = arena_memdup(ar, s->t + lo, sizeof *s->t * (size_t)n);
  /* within a level (in program order): the other thunks before its first
   * kernel, the kernels together, then the other thunks after it; a level
   * of one kernel keeps its program order */
  int out = lo;
  for (int a = 0; a < n;) {
    int b = a, kfirst = -1;
    while (b < n && lv[2 * b] == lv[2 * a]) {
      if (kfirst < 0 && orig[lv[2 * b + 1]].thunk->kind == THUNK_KERNEL) kfirst = b;
      b++;
    }
    for (int k = a; k < (kfirst < 0 ? b : kfirst); k++) {
      s->t[out] = orig[lv[2 * k + 1]];
      s->t[out++].group = 1;
    }
    int first = out;
    for (int k = a; k < b; k++)
      if (orig[lv[2 * k + 1]].thunk->kind == THUNK_KERNEL) {
        s->t[out] = orig[lv[2 * k + 1]];
        s->t[out].group = 0;
        if ((out - first) % MAX_GROUP == 0) first = out;
        s->t[first].group++;
        out++;
      }
    for (int k = kfirst < 0 ? b : kfirst; k < b; k++)
      if (orig[lv[2 * k + 1]].thunk->kind != THUNK_KERNEL) {
        s->t[out] = orig[lv[2 * k + 1]];
        s->t[out++].group = 1;
      }
    a = b;
  }
}

/* Splits a sequence into segments between while and conditional thunks
 * (and at MAX_SEGMENT thunks) and schedules each (schedule_segment). */
static void schedule_seq(Arena *ar, ExecSeq *s) {
  Access *acc = xmalloc(sizeof *acc * MAX_SEGMENT);
  int lo = 0;
  for (int k = 0; k < s->n; k++) {
    if (k - lo == MAX_SEGMENT) {
      schedule_segment(ar, s, lo, k, acc);
      lo = k;
    }
    Access *a = &acc[k - lo];
    /* a while, a conditional or a kernel of very many arguments stays
     * where it is, between two segments */
    if (!thunk_access(s->t[k].thunk, a->sl, a->w, MAX_ACCESS, &a->n)) {
      if (k - lo > 1)
        schedule_segment(ar, s, lo, k, acc);
      lo = k + 1;
    }
  }
  if (s->n - lo > 1)
    schedule_segment(ar, s, lo, s->n, acc);
  free(acc);
}

/* Profile slots are numbered in pre-order: a thunk's slot comes before its
 * nested ones', which prepare_thunk guarantees by numbering itself first. */
static bool prepare_seq(Executor *e, const ThunkSeq *s, int depth, ExecSeq *out,
                        Diag *d) {
  if (depth > 64) return ex_err(d, "the artifact's thunks nest more than 64 deep");
  out->n = s->n;
  out->t = ARENA_ARRAY(e->arena, ExecThunk, s->n + 1);
  if (s->n > 0 && !s->thunks) return ex_err(d, "the artifact has a malformed thunk sequence");
  for (int k = 0; k < s->n; k++) {
    out->t[k].group = 1;
    if (!prepare_thunk(e, &s->thunks[k], depth, &out->t[k], d)) return false;
  }
  if (e->p->launch_group)
    schedule_seq(e->arena, out);
  return true;
}

static void fill_profile(Executor *e, const ExecSeq *s, int parent, int seq) {
  for (int k = 0; k < s->n; k++) {
    const ExecThunk *x = &s->t[k];
    ThunkProfile *tp = &e->prof[x->prof];
    tp->thunk = x->thunk;
    tp->depth = x->depth;
    tp->parent = parent;
    tp->seq = seq;
    if (x->thunk->kind == THUNK_WHILE) {
      fill_profile(e, &x->cond, x->prof, 0);
      fill_profile(e, &x->body, x->prof, 1);
    } else if (x->thunk->kind == THUNK_COMMAND_BUFFER) {
      fill_profile(e, &x->cmds, x->prof, 0);
    } else if (x->thunk->kind == THUNK_CONDITIONAL) {
      for (int b = 0; b < x->thunk->nbranches; b++) fill_profile(e, &x->branches[b], x->prof, b);
    }
  }
}

/* Parses a leaf's shape text and checks it against its slice. */
static Shape *leaf_shape(Executor *e, const ArtLeaf *l, const char *what, int k,
                         Diag *d) {
  if (!l->shape) {
    ex_err(d, "the artifact's %s %d has no shape", what, k);
    return NULL;
  }
  Diag pd = {0};
  Shape *s = hlo_parse_shape(e->arena, l->shape, &pd);
  if (!s) {
    ex_err(d, "the artifact's %s %d has a bad shape '%s': %s", what, k, l->shape,
           pd.msg ? pd.msg : "parse error");
    diag_clear(&pd);
    return NULL;
  }
  diag_clear(&pd);
  if (s->et == ET_TOKEN) return s;
  if (!shape_is_array(s)) {
    ex_err(d, "the artifact's %s %d has shape %s, not an array", what, k, l->shape);
    return NULL;
  }
  const Layout *lay = s->layout;
  bool dyn_ok = strcmp(what, "output") == 0 && s->rank <= 64;
  for (int j = 0; j < s->rank; j++) dyn_ok &= s->dims[j] >= 0;
  if ((shape_is_dynamic(s) && !dyn_ok) ||
      (lay && (lay->ntiles || lay->element_size_bits || lay->rank != s->rank))) {
    ex_err(d, "%s %d has shape %s: xhlo-run handles dense arrays with plain "
           "minor_to_major layouts only (bounded dynamic ones as results)", what, k,
           l->shape);
    return NULL;
  }
  if (!check_slice(e, l->slice, what, NULL, d)) return NULL;
  if (shape_buffer_size(s) != l->slice.size) {
    ex_err(d, "the artifact's %s %d (%s) has a %lld-byte slice, its shape needs %lld", what,
           k, l->shape, (long long)l->slice.size, (long long)shape_buffer_size(s));
    return NULL;
  }
  return s;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static void set_bufs(Executor *e) {
  for (int k = 0; k < e->nbufs; k++) e->bufs[k] = e->pool + (DevPtr)e->pool_off[k];
}

/* The pool: every allocation at a 256-byte aligned offset (at least one
 * word each, so every allocation has its own address), in one platform
 * allocation. */
static bool alloc_pool(Executor *e, Diag *d) {
  const Artifact *a = e->a;
  e->pool_off = xcalloc((size_t)a->nallocs + 1, sizeof *e->pool_off);
  size_t total = 0;
  int largest = -1;
  for (int k = 0; k < a->nallocs; k++) {
    int64_t sz = a->allocs[k].size;
    if (sz < 0) return ex_err(d, "the artifact's allocation %d has a negative size", k);
    if ((uint64_t)sz > SIZE_MAX / 2 || total > SIZE_MAX / 2 - (size_t)sz - 256)
      return ex_err(d, "the artifact's allocations add up to more than the address space");
    e->pool_off[k] = (int64_t)total;
    total = round_up(total + (sz > 0 ? (size_t)sz : 4), 256);
    if (largest < 0 || sz > a->allocs[largest].size) largest = k;
  }
  e->nbufs = a->nallocs;
  if (!total) return true;
  Diag pd = {0};
  if (!e->p->alloc(e->p, total, &e->pool, &pd)) {
    ex_err(d, "cannot allocate the %zu bytes (%.1f MiB) of device memory for the artifact's %d "
           "buffers (one pool; the largest is allocation %d, %lld bytes): %s",
           total, (double)total / (1024.0 * 1024.0), a->nallocs, largest,
           (long long)a->allocs[largest].size, pd.msg ? pd.msg : "failed");
    diag_clear(&pd);
    e->pool = 0;
    return false;
  }
  e->pool_size = total;
  set_bufs(e);
  return true;
}

void executor_memory(const Executor *e, ExecMemory *m) {
  memset(m, 0, sizeof *m);
  m->pool = (int64_t)e->pool_size;
  m->nallocs = e->a->nallocs;
  for (int k = 0; k < e->a->nallocs; k++) {
    const BufAlloc *al = &e->a->allocs[k];
    if (al->flags & ALLOC_PARAMETER) m->parameters += al->size;
    else if (al->flags & ALLOC_CONSTANT) m->constants += al->size;
    else if (al->flags & ALLOC_OUTPUT) m->outputs += al->size;
    else m->temp += al->size;
  }
  m->staging = e->stage ? (int64_t)e->stage_size : 0;
}

void executor_print_memory(StrBuf *b, const ExecMemory *m, const char *platform) {
  sb_printf(b, "%s memory: ", strcmp(platform, "cuda") == 0 ? "device" : "host");
  sb_put_size(b, m->pool);
  sb_printf(b, " in one pool for the artifact's %d allocations (parameters ", m->nallocs);
  sb_put_size(b, m->parameters);
  sb_puts(b, ", constants ");
  sb_put_size(b, m->constants);
  sb_puts(b, ", outputs ");
  sb_put_size(b, m->outputs);
  sb_puts(b, ", temp ");
  sb_put_size(b, m->temp);
  sb_puts(b, "); pinned host staging ");
  sb_put_size(b, m->staging);
  sb_putc(b, '\n');
}

/* Where each non-empty input and output goes in the pinned staging
 * buffer, on a platform that has one. */
static void plan_staging(Executor *e) {
  Platform *p = e->p;
  const Artifact *a = e->a;
  e->staged = p->host_alloc && p->host_free && p->copy_h2d_async && p->copy_d2h_async;
  if (!e->staged) return;
  e->stage_in = xcalloc((size_t)a->nparams + 1, sizeof *e->stage_in);
  e->stage_out = xcalloc((size_t)a->noutputs + 1, sizeof *e->stage_out);
  size_t at = 0;
  for (int k = 0; k < a->nparams; k++) {
    e->stage_in[k] = at;
    at = round_up(at + (size_t)a->params[k].slice.size, 64);
  }
  for (int k = 0; k < a->noutputs; k++) {
    e->stage_out[k] = at;
    at = round_up(at + (size_t)a->outputs[k].slice.size, 64);
  }
  e->stage_size = at;
}

static bool upload_constants(Executor *e, Diag *d) {
  const Artifact *a = e->a;
  for (int k = 0; k < a->nconsts; k++) {
    const ArtConstant *c = &a->consts[k];
    if (!check_slice(e, c->slice, "constant", NULL, d)) return false;
    if (c->slice.size && !c->bytes) return ex_err(d, "the artifact's constant %d has no bytes", k);
    if (c->slice.size &&
        !e->p->copy_h2d(e->p, slice_addr(e, c->slice), c->bytes, (size_t)c->slice.size, d))
      return false;
  }
  return true;
}

Executor *executor_new(const Artifact *a, Platform *p,
                       const uint8_t *kernel_bytes, size_t kernel_len,
                       const char *kernel_path, Diag *d) {
  Executor *e = xcalloc(1, sizeof *e);
  e->a = a;
  e->p = p;
  e->arena = arena_new();
  if (a->nallocs < 0 || a->nparams < 0 || a->noutputs < 0 || a->nconsts < 0) {
    ex_err(d, "the artifact has negative counts");
    goto fail;
  }
  e->param_shapes = ARENA_ARRAY(e->arena, Shape *, a->nparams + 1);
  e->out_shapes = ARENA_ARRAY(e->arena, Shape *, a->noutputs + 1);
  for (int k = 0; k < a->nparams; k++)
    if (!(e->param_shapes[k] = leaf_shape(e, &a->params[k], "parameter", k, d))) goto fail;
  for (int k = 0; k < a->noutputs; k++)
    if (!(e->out_shapes[k] = leaf_shape(e, &a->outputs[k], "output", k, d))) goto fail;
  if (!a->result_shape) {
    ex_err(d, "the artifact has no result shape");
    goto fail;
  }
  Diag pd = {0};
  e->result_shape = hlo_parse_shape(e->arena, a->result_shape, &pd);
  diag_clear(&pd);
  if (!e->result_shape || shape_leaf_count(e->result_shape) != a->noutputs) {
    ex_err(d, "the artifact's result shape '%s' does not have its %d output leaves",
           a->result_shape, a->noutputs);
    goto fail;
  }

  if (kernel_bytes && !p->load_kernels(p, kernel_bytes, kernel_len, kernel_path, d))
    goto fail;

  e->bufs = xcalloc((size_t)a->nallocs + 1, sizeof *e->bufs);
  if (!alloc_pool(e, d)) goto fail;
  plan_staging(e);
  if (!prepare_seq(e, &a->entry, 0, &e->entry, d)) goto fail;
  e->prof = ARENA_ARRAY(e->arena, ThunkProfile, e->nprof + 1);
  fill_profile(e, &e->entry, -1, 0);
  if (!upload_constants(e, d)) goto fail;
  return e;
fail:
  executor_free(e);
  return NULL;
}

void executor_free(Executor *e) {
  if (!e) return;
  for (int k = 0; k < e->ncbs; k++)
    if (e->cbs[k]->handle) e->p->cmdbuf_free(e->p, e->cbs[k]->handle);
  free(e->cbs);
  for (int k = 0; k < e->ncolls; k++) coll_free(e->colls[k]);
  free(e->colls);
  free(e->pend);
  if (e->pool) e->p->free(e->p, e->pool);
  if (e->stage) e->p->host_free(e->p, e->stage);
  free(e->bufs);
  free(e->pool_off);
  free(e->stage_in);
  free(e->stage_out);
  for (int k = 0; e->prof && k < e->nprof; k++) free(e->prof[k].ms);
  free(e->events);
  arena_free(e->arena);
  free(e);
}

void executor_set_profile(Executor *e, bool on) {
  e->profile = on;
}

void executor_set_sync_each_thunk(Executor *e, bool on) {
  e->sync_each = on;
}

void executor_set_device(Executor *e, Exchange *xg, int64_t replica, int64_t partition) {
  e->xchg = xg;
  e->replica = replica;
  e->partition = partition;
}

void executor_set_command_buffers(Executor *e, bool on) {
  e->no_cmdbufs = !on;
}

void executor_set_defer_sync(Executor *e, bool on) {
  e->defer_sync = on;
}

void executor_set_keep_inputs(Executor *e, bool on) {
  e->keep_inputs = on;
  if (!e->resident)
    e->resident = ARENA_ARRAY(e->arena, const Literal *, e->a->nparams + 1);
  for (int k = 0; k < e->a->nparams; k++)
    e->resident[k] = NULL;
}

/* Whether a run may write parameter leaf k's buffer: a result leaf lives in
 * its allocation (input_output_alias).  Nothing else writes a parameter
 * allocation: buffer assignment gives parameters allocations of their own,
 * and every computed value gets a buffer of its own. */
static bool param_written(const Executor *e, int k) {
  const Artifact *a = e->a;
  for (int j = 0; j < a->noutputs; j++)
    if (a->outputs[j].slice.alloc == a->params[k].slice.alloc)
      return true;
  return false;
}

/* Recomputes every address of a prepared sequence from its thunks' slices
 * (after the buffers moved). */
static void rebind_seq(Executor *e, ExecSeq *s) {
  for (int k = 0; k < s->n; k++) {
    ExecThunk *x = &s->t[k];
    const Thunk *t = x->thunk;
    switch (t->kind) {
    case THUNK_KERNEL:
      for (int a = 0; a < t->nargs; a++) x->args[a] = slice_addr(e, t->args[a]);
      break;
    case THUNK_COPY:
      x->src = slice_addr(e, t->src);
      x->dst = slice_addr(e, t->dst);
      break;
    case THUNK_MEMSET32:
      x->dst = slice_addr(e, t->dst);
      break;
    case THUNK_WHILE:
      x->pred = slice_addr(e, t->cond_result);
      rebind_seq(e, &x->cond);
      rebind_seq(e, &x->body);
      break;
    case THUNK_CONDITIONAL:
      x->pred = slice_addr(e, t->branch_index);
      for (int b = 0; b < t->nbranches; b++) rebind_seq(e, &x->branches[b]);
      break;
    case THUNK_GEMM:
    case THUNK_CONV:
    case THUNK_ROUTINE:
      for (int a = 0; a < LIB_MAX_SLICES; a++)
        if (t->lib[a].alloc >= 0) x->lib[a] = slice_addr(e, t->lib[a]);
      break;
    case THUNK_COMMAND_BUFFER:
      rebind_seq(e, &x->cmds);
      break;
    case THUNK_COLLECTIVE:
      if (t->coll->done) break;  /* no slices */
      for (int a = 0; a < t->coll->n; a++) x->coll_in[a] = slice_addr(e, t->coll->in[a]);
      for (int a = 0; a < (t->coll->n ? t->coll->n : 1); a++)
        x->coll_out[a] = slice_addr(e, t->coll->out[a]);
      break;
    }
  }
}

bool executor_move_buffers(Executor *e, Diag *d) {
  Platform *p = e->p;
  if (!e->pool) return true;
  DevPtr fresh = 0;
  if (!p->alloc(p, e->pool_size, &fresh, d)) return false;
  /* the old memory may still be read by queued work */
  if (!p->copy_d2d(p, fresh, e->pool, e->pool_size, d) || !p->synchronize(p, d)) {
    p->free(p, fresh);
    return false;
  }
  p->free(p, e->pool);
  e->pool = fresh;
  set_bufs(e);
  rebind_seq(e, &e->entry);
  return true;
}

int executor_profile(const Executor *e, const ThunkProfile **out) {
  *out = e->prof;
  return e->nprof;
}

void executor_set_trace(Executor *e, int64_t max_events) {
  e->max_events = max_events > 0 ? max_events : 0;
}

int64_t executor_trace(const Executor *e, const TraceEvent **out, int64_t *dropped) {
  *out = e->events;
  if (dropped) *dropped = e->dropped;
  return e->nevents;
}

/* A slot for the next trace event (filled in when it ends, so that events
 * stay in order of start), or -1 when not tracing or full. */
static int64_t trace_begin(Executor *e, int thunk) {
  if (!e->max_events) return -1;
  if (e->nevents >= e->max_events) {
    e->dropped++;
    return -1;
  }
  if (e->nevents == e->cap_events) {
    e->cap_events = e->cap_events ? 2 * e->cap_events : 256;
    if (e->cap_events > e->max_events) e->cap_events = e->max_events;
    e->events = xreallocarray(e->events, (size_t)e->cap_events, sizeof *e->events);
  }
  e->events[e->nevents] = (TraceEvent){thunk, e->traced_runs, 0, 0};
  return e->nevents++;
}

/* Fills in event ev (trace_begin) that started at mark m and took ms. */
static bool trace_end(Executor *e, int64_t ev, int m, double ms, Diag *d) {
  if (ev < 0) return true;
  double at = 0;
  if (m != e->base_mark && !e->p->elapsed_ms(e->p, e->base_mark, m, &at, d)) return false;
  e->events[ev].start_ms = e->run_origin + at;
  e->events[ev].ms = ms;
  return true;
}

/*
 * Running
 */

static bool run_seq(Executor *e, const ExecSeq *s, Diag *d);

static const char *thunk_name(const Thunk *t) {
  if (t->annotation) return t->annotation;
  if (t->kind == THUNK_KERNEL && t->kernel_name) return t->kernel_name;
  return kind_name(t->kind);
}

/* A thunk was issued: it may fail at the next synchronization. */
static void pending_add(Executor *e, const Thunk *t) {
  if (e->recording) return;
  if (!e->npending++) e->pending_first = t;
  e->pending_last = t;
}

/* After a synchronization (the platform's synchronize, or a device-to-host
 * read; where: which, for the message) that failed: the message says
 * which thunks may have caused it (where NULL: the caller names the
 * thunk).  Either way nothing is pending after it. */
static bool synced(Executor *e, bool ok, const char *where, Diag *d) {
  if (!ok && where && e->npending && d->msg) {
    char *m = d->msg;
    d->msg = NULL;
    d->has_error = false;
    if (e->npending == 1)
      ex_err(d, "%s (found at %s; thunk '%s' ran since the previous synchronization and "
             "caused it)", m, where, thunk_name(e->pending_first));
    else
      ex_err(d, "%s (found at %s; one of the %lld thunks since the previous synchronization, "
             "from '%s' to '%s', caused it; run with --sync-each-thunk to name it)",
             m, where, (long long)e->npending, thunk_name(e->pending_first),
             thunk_name(e->pending_last));
    free(m);
  }
  e->npending = 0;
  e->pending_first = e->pending_last = NULL;
  return ok;
}

bool executor_synchronize(Executor *e, Diag *d) {
  return synced(e, e->p->synchronize(e->p, d), "the synchronization after the queued runs", d);
}

static bool thunk_err(const ExecThunk *x, Diag *d) {
  /* the platform's message first, then which thunk (a while or conditional
   * leaves its nested thunk's message as it is) */
  ThunkKind k = x->thunk->kind;
  if (d->msg && x->thunk->annotation && k != THUNK_WHILE && k != THUNK_CONDITIONAL &&
      k != THUNK_COMMAND_BUFFER) {
    char *m = d->msg;
    d->msg = NULL;
    d->has_error = false;
    ex_err(d, "%s (%s thunk '%s')", m, kind_name(k), x->thunk->annotation);
    free(m);
  }
  return false;
}

/* A command buffer: recorded when it has no recording or its addresses
 * changed, then launched. */
static bool run_cmdbuf(Executor *e, const ExecThunk *x, Diag *d) {
  Platform *p = e->p;
  CmdBuf *cb = x->cb;
  cmd_addrs(&x->cmds, cb->now);
  size_t bytes = sizeof *cb->now * (size_t)cb->naddrs;
  if (!cb->handle || memcmp(cb->now, cb->addrs, bytes) != 0) {
    if (!p->cmdbuf_begin(p, d)) return false;
    /* the commands are recorded, not run: no timing marks or
     * synchronizations among them */
    bool profile = e->profile;
    e->profile = false;
    e->recording = true;
    bool ok = run_seq(e, &x->cmds, d);
    e->recording = false;
    e->profile = profile;
    Diag ignored = {0};
    if (!p->cmdbuf_end(p, ok, &cb->handle, ok ? d : &ignored)) ok = false;
    diag_clear(&ignored);
    if (!ok) return false;
    memcpy(cb->addrs, cb->now, bytes);
  }
  return p->cmdbuf_launch(p, cb->handle, d);
}

static bool pend_add(Executor *e, int64_t id, CollPending *q, Diag *d);
static bool pend_wait(Executor *e, int64_t id, Diag *d);

static bool run_thunk_body(Executor *e, const ExecThunk *x, Diag *d) {
  Platform *p = e->p;
  const Thunk *t = x->thunk;
  switch (t->kind) {
  case THUNK_KERNEL:
    return p->launch(p, x->kernel, t->nargs, x->args, t->grid, t->block, t->shmem_bytes, d);
  case THUNK_COPY:
    return t->src.size == 0 || x->src == x->dst ||
           p->copy_d2d(p, x->dst, x->src, (size_t)t->src.size, d);
  case THUNK_MEMSET32:
    return t->dst.size == 0 || p->memset32(p, x->dst, t->memset_value, (size_t)t->dst.size / 4, d);
  case THUNK_WHILE:
    for (;;) {
      if (!run_seq(e, &x->cond, d)) return false;
      uint8_t pred = 0;
      if (!synced(e, p->copy_d2h(p, &pred, x->pred, 1, d), "reading a while loop's condition",
                  d))
        return false;
      if (!pred) return true;
      if (!run_seq(e, &x->body, d)) return false;
    }
  case THUNK_CONDITIONAL: {
    int b;
    if (t->index_is_pred) {
      uint8_t pred = 0;
      if (!synced(e, p->copy_d2h(p, &pred, x->pred, 1, d), "reading a conditional's predicate",
                  d))
        return false;
      b = pred ? 0 : 1;
    } else {
      int32_t idx = 0;
      if (!synced(e, p->copy_d2h(p, &idx, x->pred, 4, d), "reading a conditional's index", d))
        return false;
      b = idx < 0 || idx >= t->nbranches ? t->nbranches - 1 : idx;
    }
    return run_seq(e, &x->branches[b], d);
  }
  case THUNK_GEMM:
    return p->gemm(p, t->gemm, x->lib, d);
  case THUNK_CONV:
    return p->conv(p, t->conv, x->lib, d);
  case THUNK_ROUTINE:
    return p->routine(p, t->routine, x->lib, d);
  case THUNK_COMMAND_BUFFER:
    if (e->no_cmdbufs || !p->cmdbuf_begin) return run_seq(e, &x->cmds, d);
    return run_cmdbuf(e, x, d);
  case THUNK_COLLECTIVE: {
    const CollDesc *c = t->coll;
    if (c->done) return pend_wait(e, c->async_id, d);
    if (c->async_id < 0)
      return coll_run(x->coll, p, e->xchg, e->replica, e->partition, x->coll_in, x->coll_out,
                      d);
    CollPending *q;
    if (!coll_start(x->coll, p, e->xchg, e->replica, e->partition, x->coll_in, x->coll_out,
                    &q, d))
      return false;
    return pend_add(e, c->async_id, q, d);
  }
  }
  return false;
}

/* The asynchronous collectives of a run: a -start's thunk adds its pair,
 * the -done's waits for it and takes it off. */
static bool pend_add(Executor *e, int64_t id, CollPending *q, Diag *d) {
  for (int k = 0; k < e->npend; k++)
    if (e->pend[k].id == id) {
      coll_wait(q, d);
      return ex_err(d, "the asynchronous collective %lld started again before its -done",
                    (long long)id);
    }
  e->pend = xreallocarray(e->pend, (size_t)e->npend + 1, sizeof *e->pend);
  e->pend[e->npend++] = (struct Pend){id, q};
  return true;
}

static bool pend_wait(Executor *e, int64_t id, Diag *d) {
  for (int k = 0; k < e->npend; k++)
    if (e->pend[k].id == id) {
      CollPending *q = e->pend[k].q;
      e->pend[k] = e->pend[--e->npend];
      return coll_wait(q, d);
    }
  return ex_err(d, "the -done of asynchronous collective %lld, which has not started",
                (long long)id);
}

/* At a run's end: what was started and not waited for (a failed run:
 * abandoned first, so that it stops waiting for the other devices). */
static bool pend_finish(Executor *e, bool ok, Diag *d) {
  for (int k = 0; !ok && k < e->npend; k++) coll_abandon(e->pend[k].q, d->msg);
  bool left = ok && e->npend > 0;
  for (int k = 0; k < e->npend; k++) {
    Diag ignore = {0};
    coll_wait(e->pend[k].q, &ignore);
    diag_clear(&ignore);
  }
  e->npend = 0;
  if (left) return ex_err(d, "an asynchronous collective started and never waited for");
  return ok;
}

/* With --sync-each-thunk: a synchronization after a thunk that issued
 * device work, its failure naming the thunk. */
static bool sync_after(Executor *e, const ExecThunk *x, Diag *d) {
  ThunkKind k = x->thunk->kind;
  if (e->recording || k == THUNK_WHILE || k == THUNK_CONDITIONAL) return true;
  return synced(e, e->p->synchronize(e->p, d), NULL, d);
}

static bool run_thunk(Executor *e, const ExecThunk *x, Diag *d) {
  ThunkKind k = x->thunk->kind;
  if (k != THUNK_WHILE && k != THUNK_CONDITIONAL) pending_add(e, x->thunk);
  if (!e->profile)
    return (run_thunk_body(e, x, d) && (!e->sync_each || sync_after(e, x, d))) ||
           thunk_err(x, d);
  Platform *p = e->p;
  int m0 = 2 * x->depth, m1 = m0 + 1;
  double ms = 0;
  int64_t ev = trace_begin(e, x->prof);
  if (!p->mark(p, m0, d) || !run_thunk_body(e, x, d) || !p->mark(p, m1, d) ||
      !p->elapsed_ms(p, m0, m1, &ms, d) || !trace_end(e, ev, m0, ms, d) ||
      (e->sync_each && !sync_after(e, x, d)))
    return thunk_err(x, d);
  ThunkProfile *tp = &e->prof[x->prof];
  tp->ms[tp->nsamples - 1] += ms;
  tp->calls++;
  return true;
}

/* Kernels x[0..n) launched together (ExecThunk.group). */
static bool run_group(Executor *e, const ExecThunk *x, int n, Diag *d) {
  KernelLaunch kl[MAX_GROUP];
  for (int k = 0; k < n; k++) {
    const Thunk *t = x[k].thunk;
    kl[k] = (KernelLaunch){x[k].kernel, t->nargs, x[k].args, t->grid, t->block,
                           t->shmem_bytes};
    pending_add(e, t);
  }
  if (e->p->launch_group(e->p, n, kl, d))
    return true;
  /* the platform's message, naming the group's first kernel */
  return thunk_err(&x[0], d);
}

static bool run_seq(Executor *e, const ExecSeq *s, Diag *d) {
  for (int k = 0; k < s->n;) {
    int g = s->t[k].group;
    if (g > 1 && !e->profile && !e->sync_each) {
      if (!run_group(e, &s->t[k], g, d)) return false;
      k += g;
    } else {
      if (!run_thunk(e, &s->t[k], d)) return false;
      k++;
    }
  }
  return true;
}

static bool upload_inputs(Executor *e, Literal *const *inputs, Diag *d) {
  const Artifact *a = e->a;
  Platform *p = e->p;
  if (e->staged && !e->stage && e->stage_size) {
    Diag pd = {0};
    e->stage = p->host_alloc(p, e->stage_size, &pd);
    if (!e->stage) {
      ex_err(d, "cannot allocate the %zu bytes of pinned host memory that stage the inputs "
             "and outputs: %s", e->stage_size, pd.msg ? pd.msg : "failed");
      diag_clear(&pd);
      return false;
    }
  }
  for (int k = 0; k < a->nparams; k++) {
    const Shape *s = e->param_shapes[k];
    if (s->et == ET_TOKEN) continue;
    const Literal *l = inputs[k];
    char what[48];
    snprintf(what, sizeof what, "input %d", k);
    if (!l) return ex_err(d, "input %d is missing", k);
    if (!io_check_shape(l, s, what, d)) return false;
    size_t n = (size_t)a->params[k].slice.size;
    if (n == 0) continue;
    if (!l->data) return ex_err(d, "input %d has no values", k);
    if (e->keep_inputs) {
      if (e->resident[k] == l) continue;
      e->resident[k] = param_written(e, k) ? NULL : l;
    }
    DevPtr dst = slice_addr(e, a->params[k].slice);
    if (e->staged) {
      uint8_t *st = e->stage + e->stage_in[k];
      if (layout_is_identity(s))
        memcpy(st, l->data, n);
      else
        layout_to_physical(s, l->data, st);
      if (!p->copy_h2d_async(p, dst, st, n, d)) return false;
      continue;
    }
    if (layout_is_identity(s)) {
      if (!p->copy_h2d(p, dst, l->data, n, d)) return false;
      continue;
    }
    uint8_t *tmp = xmalloc(n);
    layout_to_physical(s, l->data, tmp);
    bool ok = p->copy_h2d(p, dst, tmp, n, d);
    free(tmp);
    if (!ok) return false;
  }
  return true;
}

/* Staged: queues the outputs' copies into the staging buffer (read by
 * download_outputs after the run's synchronization). */
static bool queue_outputs(Executor *e, Diag *d) {
  const Artifact *a = e->a;
  for (int k = 0; k < a->noutputs; k++) {
    size_t n = (size_t)a->outputs[k].slice.size;
    if (e->out_shapes[k]->et == ET_TOKEN || !n) continue;
    if (!e->p->copy_d2h_async(e->p, e->stage + e->stage_out[k],
                              slice_addr(e, a->outputs[k].slice), n, d))
      return false;
  }
  return true;
}

/* Output leaf k of bounded dynamic shape s from its buffer (n bytes: the
 * data at the bounds in s's layout, then one s32 size per dimension): the
 * literal of its runtime sizes holding the valid elements.  Sizes outside
 * the bounds are refused, as XLA's runtime refuses them. */
static Literal *dynamic_output(Arena *out, const Shape *s, const uint8_t *buf,
                               int k, Diag *d) {
  int64_t data = shape_byte_size(s), sizes[64], n = 1;
  for (int j = 0; j < s->rank; j++) {
    int32_t v;
    memcpy(&v, buf + data + 4 * j, 4);
    bool dyn = s->dyn && s->dyn[j] != DIM_STATIC;
    if (v < 0 || v > s->dims[j] || (!dyn && v != s->dims[j])) {
      ex_err(d, "output %d: runtime size %d of dimension %d is outside [%lld, %lld], the "
             "bounds of its shape", k, (int)v, j, (long long)(dyn ? 0 : s->dims[j]),
             (long long)s->dims[j]);
      return NULL;
    }
    sizes[j] = v;
    n *= v;
  }
  /* the whole buffer in row-major order, then the valid box out of it */
  Shape *bs = shape_clone(out, s);
  bs->dyn = NULL;
  uint8_t *rows = xmalloc((size_t)data + 1);
  if (layout_is_identity(bs))
    memcpy(rows, buf, (size_t)data);
  else
    layout_from_physical(bs, buf, rows);
  Shape *ls = shape_array(out, s->et, s->rank, sizes);
  Literal *l = literal_new(out, ls);
  int eb = et_bytes(s->et);
  int64_t idx[64] = {0};
  for (int64_t i = 0; i < n; i++) {
    int64_t src = 0;
    for (int j = 0; j < s->rank; j++) src = src * s->dims[j] + idx[j];
    memcpy(l->data + i * eb, rows + src * eb, (size_t)eb);
    for (int j = s->rank - 1; j >= 0; j--) {
      if (++idx[j] < sizes[j]) break;
      idx[j] = 0;
    }
  }
  free(rows);
  return l;
}

static bool download_outputs(Executor *e, Arena *out, Literal **leaves, Diag *d) {
  const Artifact *a = e->a;
  for (int k = 0; k < a->noutputs; k++) {
    const Shape *s = e->out_shapes[k];
    if (s->et == ET_TOKEN) {
      leaves[k] = NULL;
      continue;
    }
    if (shape_is_dynamic(s)) {
      size_t n = (size_t)a->outputs[k].slice.size;
      uint8_t *buf = xmalloc(n + 1);
      bool ok = true;
      if (e->staged)
        memcpy(buf, e->stage + e->stage_out[k], n);
      else
        ok = e->p->copy_d2h(e->p, buf, slice_addr(e, a->outputs[k].slice), n, d);
      leaves[k] = ok ? dynamic_output(out, s, buf, k, d) : NULL;
      free(buf);
      if (!leaves[k]) return false;
      continue;
    }
    Shape *ls = shape_clone(out, s);
    ls->layout = layout_default(out, ls->rank);
    Literal *l = literal_new(out, ls);
    size_t n = (size_t)a->outputs[k].slice.size;
    DevPtr src = slice_addr(e, a->outputs[k].slice);
    if (n && e->staged) {
      const uint8_t *st = e->stage + e->stage_out[k];
      if (layout_is_identity(s))
        memcpy(l->data, st, n);
      else
        layout_from_physical(s, st, l->data);
    } else if (n && layout_is_identity(s)) {
      if (!e->p->copy_d2h(e->p, l->data, src, n, d)) return false;
    } else if (n) {
      uint8_t *tmp = xmalloc(n);
      bool ok = e->p->copy_d2h(e->p, tmp, src, n, d);
      if (ok) layout_from_physical(s, tmp, l->data);
      free(tmp);
      if (!ok) return false;
    }
    leaves[k] = l;
  }
  return true;
}

double executor_last_exec_ms(const Executor *e) { return e->last_exec_ms; }

bool executor_run(Executor *e, Literal *const *inputs, Arena *out,
                  Literal **result, Diag *d) {
  Platform *p = e->p;
  e->base_mark = 2 * (e->max_depth + 1);
  int start = e->base_mark, end = e->base_mark + 1;
  /* staged, the thunks are timed on the device: the host's clock would
   * count the input copies queued before them */
  bool marks = e->profile || e->staged;
  if (marks && !p->reserve_marks(p, e->base_mark + 2, d)) return false;
  if (e->profile) {
    for (int k = 0; k < e->nprof; k++) {
      ThunkProfile *tp = &e->prof[k];
      tp->ms = xreallocarray(tp->ms, (size_t)tp->nsamples + 1, sizeof *tp->ms);
      tp->ms[tp->nsamples++] = 0;
    }
  }
  if (!e->defer_sync) e->npending = 0;   /* deferred: the runs queued since the last sync */
  if (!upload_inputs(e, inputs, d))
    return false;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int64_t run_ev = -1;
  if (e->profile && e->max_events) {
    /* the run starts now on the host's clock, and not before the last
     * traced run's end (on the platform's clock) */
    double now = (double)t0.tv_sec * 1e3 + (double)t0.tv_nsec * 1e-6;
    if (!e->traced_runs) e->trace_t0 = now;
    e->run_origin = now - e->trace_t0 > e->trace_end ? now - e->trace_t0 : e->trace_end;
    run_ev = trace_begin(e, -1);
  }
  if (marks && !p->mark(p, start, d)) return false;
  if (!pend_finish(e, run_seq(e, &e->entry, d), d))
    return false;
  double run_ms = 0;
  if (marks && !p->mark(p, end, d)) return false;
  if (e->profile && e->max_events) {
    if (!p->elapsed_ms(p, start, end, &run_ms, d) || !trace_end(e, run_ev, start, run_ms, d))
      return false;
    e->trace_end = e->run_origin + run_ms;
    e->traced_runs++;
  }
  if (e->staged && result && !queue_outputs(e, d))
    return synced(e, false, "queueing the copies of the outputs", d);
  if (e->defer_sync && !result && !e->profile && !e->sync_each) {
    /* queued behind the runs before it; executor_synchronize waits for all */
    e->last_exec_ms = 0;
    return true;
  }
  if (!synced(e, p->synchronize(p, d), "the synchronization after the last thunk", d))
    return false;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  e->last_exec_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
  if (e->staged) {
    if (!(e->profile && e->max_events) && !p->elapsed_ms(p, start, end, &run_ms, d))
      return false;
    e->last_exec_ms = run_ms;
  }
  if (!result)
    return true;                  /* the results stay on the device */
  Literal **leaves = xcalloc((size_t)e->a->noutputs + 1, sizeof *leaves);
  bool ok = download_outputs(e, out, leaves, d);
  if (ok) {
    int at = 0;
    *result = io_literal_from_leaves(out, shape_clone(out, e->result_shape), leaves, &at);
  }
  free(leaves);
  return ok;
}
