/*
 * collective_exec.c - collective thunks at run time: every device of a
 * multi-device run has its own executor (a thread of this process, or one
 * process of an MPI job).  At a collective each one stages its operands in
 * host memory (row-major, whatever their layout, all operands in one
 * block), the members of its group move bytes with exchanges
 * (lib/support/exchange.h), and each writes its results back into its
 * result slices (in their layouts).  Through host memory, so it works on
 * any platform and any transport.  A collective the platform runs itself
 * (platform.h: coll_takes, coll_run; NCCL on CUDA) goes to it instead,
 * after its group's members have met through the exchange.
 *
 * The results are the interpreter's (lib/eval/collective.c), bit for bit,
 * for the reductions XLA's runtimes know (sum, product, min, max:
 * eval_combine), and each member moves what NCCL's ring algorithms move:
 *   all-reduce      the elements split in n chunks; chunk j of every member
 *                   goes to member j (one exchange), which folds them left
 *                   to right in group order, and every member sends its
 *                   folded chunk to all (a second): 2(n-1)/n of the bytes
 *                   out and in.  Operands of one element type, staged side
 *                   by side, are one flat all-reduce (a combined one)
 *   reduce-scatter  the same first exchange on this member's chunk of
 *                   dimension d, folded in group order
 *   all-gather      the operand to every member, concatenated along d
 *                   (alone in its group: the operand, then zeros to the
 *                   result's size)
 *   all-to-all      chunk j along d to member j (array form); operand j to
 *                   member j (tuple form)
 *   collective-permute  the operand to the members its pairs target; zeros
 *                   when no pair targets this one
 *   collective-broadcast  the first member's operands to all
 *   replica-id, partition-id  this device's number, u32
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../eval/eval.h"
#include "collective_exec.h"

/* Host memory a run needs (staged operands and results, packed chunks,
 * received chunks), kept from one run to the next: fresh memory of a few
 * MiB costs page faults every time. */
enum { SLOT_IN, SLOT_OUT, SLOT_TMP, SLOT_PACK, NSLOTS };

struct CollSlots {
  uint8_t *p[NSLOTS];
  size_t cap[NSLOTS];
};

/* Slot k, at least n bytes (its old contents gone). */
static uint8_t *slot(const CollExec *x, int k, size_t n) {
  struct CollSlots *s = x->slots;
  if (s->cap[k] < n + 1) {
    free(s->p[k]);
    s->cap[k] = n + 1 > 2 * s->cap[k] ? n + 1 : 2 * s->cap[k];
    s->p[k] = xmalloc(s->cap[k]);
  }
  return s->p[k];
}

void coll_free(CollExec *x) {
  if (!x || !x->slots) return;
  for (int k = 0; k < NSLOTS; k++) free(x->slots->p[k]);
  free(x->slots);
  x->slots = NULL;
}

static bool err(Diag *d, const Thunk *t, const char *fmt, const char *what) {
  return diag_error(d, (Loc){0}, fmt, t->annotation ? t->annotation : "?", what);
}

/* At run time the executor names the thunk after the message. */
static bool run_err(Diag *d, const char *what) {
  return diag_error(d, (Loc){0}, "%s", what);
}

static Shape *parse(Arena *a, const Thunk *t, const char *text, int64_t size,
                    Diag *d) {
  Diag pd = {0};
  Shape *s = text ? hlo_parse_shape(a, text, &pd) : NULL;
  diag_clear(&pd);
  if (!s || !shape_is_array(s) || shape_is_dynamic(s) ||
      (s->layout && (s->layout->ntiles || s->layout->element_size_bits ||
                     s->layout->rank != s->rank)) ||
      shape_byte_size(s) != size) {
    err(d, t, "the artifact's collective thunk '%s' has a bad operand or result "
        "shape '%s' (or one its slice does not hold)", text ? text : "-");
    return NULL;
  }
  return s;
}

CollExec *coll_prepare(Arena *a, const Thunk *t, Platform *p, Diag *d) {
  const CollDesc *c = t->coll;
  if (c->done) {
    err(d, t, "collective thunk '%s' is a done thunk (%s): the executor waits for it",
        "the -done of an asynchronous pair");
    return NULL;
  }
  CollExec *x = ARENA_NEW(a, CollExec);
  x->t = t;
  int nout = c->n ? c->n : 1;
  x->in = ARENA_ARRAY(a, Shape *, c->n + 1);
  x->out = ARENA_ARRAY(a, Shape *, nout);
  x->in_bytes = ARENA_ARRAY(a, int64_t, c->n + 1);
  x->out_bytes = ARENA_ARRAY(a, int64_t, nout);
  for (int k = 0; k < c->n; k++) {
    if (!(x->in[k] = parse(a, t, c->in_shape[k], c->in[k].size, d))) return NULL;
    x->in_bytes[k] = c->in[k].size;
    if ((c->kind == COLL_ALL_REDUCE || c->kind == COLL_REDUCE_SCATTER) &&
        !eval_combine_supported(x->in[k]->et)) {
      err(d, t, "collective thunk '%s': no reduction for %s", et_name(x->in[k]->et));
      return NULL;
    }
  }
  for (int k = 0; k < nout; k++) {
    if (c->kind == COLL_REPLICA_ID || c->kind == COLL_PARTITION_ID) {
      x->out_bytes[k] = c->out[k].size;
      continue;
    }
    if (!(x->out[k] = parse(a, t, c->out_shape[k], c->out[k].size, d))) return NULL;
    x->out_bytes[k] = c->out[k].size;
  }
  x->on_device = c->kind != COLL_REPLICA_ID && c->kind != COLL_PARTITION_ID && p &&
                 p->coll_takes && p->coll_run && p->coll_takes(p, x);
  /* staged through host memory: its memory from run to run */
  if (!x->on_device) x->slots = xcalloc(1, sizeof *x->slots);
  return x;
}

static bool identity_layout(const Shape *s) {
  if (!s->layout) return true;
  for (int k = 0; k < s->rank; k++)
    if (s->layout->minor_to_major[k] != s->rank - 1 - k) return false;
  return true;
}

/* Device bytes of slice addr into buf, row-major. */
static bool stage_in(Platform *p, DevPtr addr, const Shape *s, int64_t n, uint8_t *buf,
                     Diag *d) {
  uint8_t *phys = identity_layout(s) ? buf : xmalloc((size_t)n + 1);
  bool ok = n == 0 || p->copy_d2h(p, phys, addr, (size_t)n, d);
  if (ok && phys != buf) layout_from_physical(s, phys, buf);
  if (phys != buf) free(phys);
  return ok;
}

static bool stage_out(Platform *p, DevPtr addr, const Shape *s, int64_t n,
                      const uint8_t *row_major, Diag *d) {
  if (n == 0) return true;
  if (identity_layout(s)) return p->copy_h2d(p, addr, row_major, (size_t)n, d);
  uint8_t *phys = xmalloc((size_t)n);
  layout_to_physical(s, row_major, phys);
  bool ok = p->copy_h2d(p, addr, phys, (size_t)n, d);
  free(phys);
  return ok;
}

/* Elements before dimension d and from d on. */
static void split_at(const Shape *s, int64_t d, int64_t *outer, int64_t *inner) {
  *outer = *inner = 1;
  for (int k = 0; k < s->rank; k++) *(k < d ? outer : inner) *= s->dims[k];
}

/* One collective on this member: its group, and the exchanges. */
typedef struct Run {
  const CollExec *x;
  Exchange *xg;
  XchgGroup g;
  Diag *d;
  /* the exchange's arrays, n each */
  const void **send;
  void **recv;
  size_t *sb, *rb;
} Run;

/* Clears the exchange's arrays for the next one. */
static void clear(Run *r) {
  for (int j = 0; j < r->g.n; j++) {
    r->send[j] = r->recv[j] = NULL;
    r->sb[j] = r->rb[j] = 0;
  }
}

static bool xfer(Run *r) {
  char why[320];
  if (r->g.n == 1) {
    if (r->sb[0] != r->rb[0]) return run_err(r->d, "result size does not match");
    if (r->rb[0] && r->recv[0] != r->send[0]) memcpy(r->recv[0], r->send[0], r->rb[0]);
    return true;
  }
  if (!r->xg->exchange(r->xg, &r->g, r->send, r->sb, r->recv, r->rb, why, sizeof why))
    return run_err(r->d, why);
  return true;
}

/* Element range [lo(j), lo(j+1)) of n elements split in g.n chunks. */
static int64_t lo(const Run *r, int64_t n, int j) {
  return (int64_t)((__int128)n * j / r->g.n);
}

/* all-reduce of n elements of type et: in -> out (distinct buffers). */
static bool all_reduce(Run *r, ElemType et, const uint8_t *in, uint8_t *out, int64_t n) {
  const CollDesc *c = r->x->t->coll;
  int me = r->g.me, eb = et_bytes(et);
  size_t mine = (size_t)((lo(r, n, me + 1) - lo(r, n, me)) * eb);
  uint8_t *acc = out + lo(r, n, me) * eb;
  uint8_t *tmp = slot(r->x, SLOT_TMP, mine * (size_t)r->g.n);
  clear(r);
  for (int j = 0; j < r->g.n; j++) {
    r->send[j] = in + lo(r, n, j) * eb;
    r->sb[j] = (size_t)((lo(r, n, j + 1) - lo(r, n, j)) * eb);
    r->recv[j] = j == 0 ? acc : tmp + (size_t)j * mine;
    r->rb[j] = mine;
  }
  bool ok = xfer(r);
  for (int m = 1; ok && m < r->g.n; m++)
    eval_combine(et, (EvalCombine)c->reduction, acc, tmp + (size_t)m * mine,
                 (int64_t)(mine / (size_t)eb));
  if (!ok) return false;
  clear(r);
  for (int j = 0; j < r->g.n; j++) {
    r->send[j] = acc;
    r->sb[j] = mine;
    r->recv[j] = out + lo(r, n, j) * eb;
    r->rb[j] = (size_t)((lo(r, n, j + 1) - lo(r, n, j)) * eb);
  }
  return xfer(r);
}

/* Packs, for each of outer runs, the run at in + o*stride + at (len
 * bytes) one after another into dst; unpack is the reverse. */
static void pack(uint8_t *dst, const uint8_t *in, int64_t outer, size_t stride, size_t at,
                 size_t len) {
  for (int64_t o = 0; o < outer; o++) memcpy(dst + o * len, in + o * stride + at, len);
}

static void unpack(uint8_t *out, const uint8_t *src, int64_t outer, size_t stride,
                   size_t at, size_t len) {
  for (int64_t o = 0; o < outer; o++) memcpy(out + o * stride + at, src + o * len, len);
}

/* reduce-scatter of operand k: this member's chunk of dimension dim. */
static bool reduce_scatter(Run *r, int k, const uint8_t *in, uint8_t *out) {
  const CollExec *x = r->x;
  const CollDesc *c = x->t->coll;
  const Shape *is = x->in[k];
  int n = r->g.n, eb = et_bytes(is->et);
  int64_t outer, inner;
  if (c->dim < 0 || c->dim >= is->rank || is->dims[c->dim] % n)
    return run_err(r->d, "bad scatter dimension");
  split_at(is, c->dim, &outer, &inner);
  size_t cb = (size_t)(inner / n * eb), part = (size_t)outer * cb;
  if ((int64_t)part != x->out_bytes[k]) return run_err(r->d, "result size does not match");
  uint8_t *packed = outer > 1 ? slot(x, SLOT_PACK, part * (size_t)n) : NULL;
  uint8_t *tmp = slot(x, SLOT_TMP, part * (size_t)n);
  clear(r);
  for (int j = 0; j < n; j++) {
    if (packed) pack(packed + j * part, in, outer, (size_t)inner * eb, j * cb, cb);
    r->send[j] = packed ? packed + j * part : in + j * cb;
    r->sb[j] = part;
    r->recv[j] = j == 0 ? out : tmp + j * part;
    r->rb[j] = part;
  }
  bool ok = xfer(r);
  for (int m = 1; ok && m < n; m++)
    eval_combine(is->et, (EvalCombine)c->reduction, out, tmp + m * part,
                 (int64_t)(part / (size_t)eb));
  return ok;
}

/* all-gather of operand k along dimension dim. */
static bool all_gather(Run *r, int k, const uint8_t *in, uint8_t *out) {
  const CollExec *x = r->x;
  const Shape *is = x->in[k];
  int n = r->g.n;
  int64_t outer, inner, dim = x->t->coll->dim;
  if (dim < 0 || dim >= is->rank) return run_err(r->d, "bad all-gather dimension");
  split_at(is, dim, &outer, &inner);
  size_t cb = (size_t)(inner * et_bytes(is->et)), size = (size_t)outer * cb;
  /* alone in its group, the result may be S times the operand (see
   * lib/eval/collective.c): slot 0, then zeros */
  const Shape *os = x->out[k];
  if (n == 1 && is->dims[dim] > 0 && os->rank == is->rank &&
      os->dims[dim] % is->dims[dim] == 0 && os->dims[dim] != is->dims[dim]) {
    int64_t slots = os->dims[dim] / is->dims[dim];
    if ((int64_t)(size * (size_t)slots) != x->out_bytes[k])
      return run_err(r->d, "result size does not match");
    memset(out, 0, (size_t)x->out_bytes[k]);
    unpack(out, in, outer, (size_t)slots * cb, 0, cb);
    return true;
  }
  if ((int64_t)(size * (size_t)n) != x->out_bytes[k])
    return run_err(r->d, "result size does not match");
  uint8_t *tmp = outer > 1 ? slot(x, SLOT_TMP, size * (size_t)n) : NULL;
  clear(r);
  for (int j = 0; j < n; j++) {
    r->send[j] = in;
    r->sb[j] = r->rb[j] = size;
    r->recv[j] = (tmp ? tmp : out) + j * size;
  }
  bool ok = xfer(r);
  for (int m = 0; ok && tmp && m < n; m++)
    unpack(out, tmp + m * size, outer, (size_t)n * cb, m * cb, cb);
  return ok;
}

/* all-to-all, array form, of operand k: chunk j along dim to member j. */
static bool all_to_all(Run *r, int k, const uint8_t *in, uint8_t *out) {
  const CollExec *x = r->x;
  const Shape *is = x->in[k];
  int n = r->g.n;
  int64_t outer, inner, dim = x->t->coll->dim;
  if (dim >= is->rank || is->dims[dim] % n) return run_err(r->d, "bad all-to-all dimension");
  split_at(is, dim, &outer, &inner);
  if (outer * inner * et_bytes(is->et) != x->out_bytes[k])
    return run_err(r->d, "result size does not match");
  size_t cb = (size_t)(inner / n * et_bytes(is->et)), part = (size_t)outer * cb;
  size_t stride = (size_t)n * cb;
  uint8_t *packed = outer > 1 ? slot(x, SLOT_PACK, part * (size_t)n) : NULL;
  uint8_t *tmp = outer > 1 ? slot(x, SLOT_TMP, part * (size_t)n) : NULL;
  clear(r);
  for (int j = 0; j < n; j++) {
    if (packed) pack(packed + j * part, in, outer, stride, j * cb, cb);
    r->send[j] = packed ? packed + j * part : in + j * cb;
    r->recv[j] = tmp ? tmp + j * part : out + j * cb;
    r->sb[j] = r->rb[j] = part;
  }
  bool ok = xfer(r);
  for (int m = 0; ok && tmp && m < n; m++) unpack(out, tmp + m * part, outer, stride, m * cb, cb);
  return ok;
}

/* Runs the collective as member r->g.me on row-major host buffers. */
static bool run_host(Run *r, uint8_t *const *in, uint8_t *const *out) {
  const CollExec *x = r->x;
  const CollDesc *c = x->t->coll;
  int n = r->g.n, me = r->g.me;
  switch (c->kind) {
  case COLL_ALL_REDUCE: {
    /* operands of one type side by side in memory: one flat all-reduce */
    bool flat = c->n > 0;
    int64_t total = 0;
    for (int k = 0; k < c->n; k++) {
      if (x->in_bytes[k] != x->out_bytes[k]) return run_err(r->d, "result size does not match");
      flat &= x->in[k]->et == x->in[0]->et &&
              (k == 0 || (in[k] == in[k - 1] + x->in_bytes[k - 1] &&
                          out[k] == out[k - 1] + x->out_bytes[k - 1]));
      total += shape_elements(x->in[k]);
    }
    if (flat) return all_reduce(r, x->in[0]->et, in[0], out[0], total);
    for (int k = 0; k < c->n; k++)
      if (!all_reduce(r, x->in[k]->et, in[k], out[k], shape_elements(x->in[k]))) return false;
    return true;
  }
  case COLL_REDUCE_SCATTER:
    for (int k = 0; k < c->n; k++)
      if (!reduce_scatter(r, k, in[k], out[k])) return false;
    return true;
  case COLL_ALL_GATHER:
    for (int k = 0; k < c->n; k++)
      if (!all_gather(r, k, in[k], out[k])) return false;
    return true;
  case COLL_ALL_TO_ALL:
    if (c->dim >= 0) {
      for (int k = 0; k < c->n; k++)
        if (!all_to_all(r, k, in[k], out[k])) return false;
      return true;
    }
    if (c->n != n) return run_err(r->d, "a tuple all-to-all needs one operand per participant");
    clear(r);
    for (int j = 0; j < n; j++) {
      if (x->in_bytes[me] != x->out_bytes[j]) return run_err(r->d, "result size does not match");
      r->send[j] = in[j];
      r->sb[j] = (size_t)x->in_bytes[j];
      r->recv[j] = out[j];
      r->rb[j] = (size_t)x->out_bytes[j];
    }
    return xfer(r);
  case COLL_COLLECTIVE_BROADCAST:
    for (int k = 0; k < c->n; k++) {
      if (x->in_bytes[k] != x->out_bytes[k]) return run_err(r->d, "result size does not match");
      clear(r);
      for (int j = 0; j < n; j++) {
        r->send[j] = in[k];
        r->sb[j] = me == 0 ? (size_t)x->in_bytes[k] : 0;
      }
      r->recv[0] = out[k];
      r->rb[0] = (size_t)x->out_bytes[k];
      if (!xfer(r)) return false;
    }
    return true;
  case COLL_COLLECTIVE_PERMUTE:
    for (int k = 0; k < c->n; k++) {
      if (x->in_bytes[k] != x->out_bytes[k]) return run_err(r->d, "result size does not match");
      clear(r);
      int src = -1;
      for (int q = 0; q < c->npairs; q++) {
        int64_t s = c->pairs[q][0], t = c->pairs[q][1];
        if (s < 0 || s >= n || t < 0 || t >= n) continue;
        if (s == me) {
          r->send[t] = in[k];
          r->sb[t] = (size_t)x->in_bytes[k];
        }
        if (t == me) src = (int)s;
      }
      for (int j = 0; j < n; j++) {
        r->recv[j] = j == src ? out[k] : NULL;
        r->rb[j] = j == src ? (size_t)x->out_bytes[k] : 0;
      }
      if (src < 0) memset(out[k], 0, (size_t)x->out_bytes[k]);
      if (!xfer(r)) return false;
    }
    return true;
  default:
    return run_err(r->d, "unknown collective");
  }
}

/* The group of device (replica, partition) at x: NULL members with the
 * message in d when there is none. */
static bool group_of(const CollExec *x, int64_t replica, int64_t partition, XchgGroup *g,
                     Diag *d) {
  const Thunk *t = x->t;
  const CollDesc *c = t->coll;
  char why[256];
  int64_t *members = NULL;
  int n = hlo_group_participants((CollectiveGroupMode)c->mode, c->ngroups, c->groups,
                                 c->group_sizes, c->replica_count, c->num_partitions,
                                 replica, partition, &members, why, sizeof why);
  if (n < 0) return run_err(d, why);
  int64_t self = replica * c->num_partitions + partition;
  *g = (XchgGroup){.key = t, .name = t->annotation ? t->annotation : "collective",
                   .members = members, .n = n, .me = -1};
  for (int k = 0; k < n; k++)
    if (members[k] == self) g->me = k;
  if (g->me < 0) {
    free(members);
    return run_err(d, "this device is not among the participants");
  }
  return true;
}

/* coll_run_host from the device's own thread (bg NULL) or its background
 * thread bg. */
static bool run_host_as(const CollExec *x, Exchange *xg, int64_t replica, int64_t partition,
                        uint8_t *const *in, uint8_t *const *out, void *bg, Diag *d) {
  Run r = {.x = x, .xg = xg, .d = d};
  if (!group_of(x, replica, partition, &r.g, d)) return false;
  r.g.bg = bg;
  int n = r.g.n;
  bool ok;
  if (n > 1 && !xg) {
    char why[96];
    snprintf(why, sizeof why, "%d devices take part but the run has only this one", n);
    ok = run_err(d, why);
  } else {
    r.send = xcalloc((size_t)n, sizeof *r.send);
    r.recv = xcalloc((size_t)n, sizeof *r.recv);
    r.sb = xcalloc((size_t)n, sizeof *r.sb);
    r.rb = xcalloc((size_t)n, sizeof *r.rb);
    ok = run_host(&r, in, out);
    free(r.send);
    free(r.recv);
    free(r.sb);
    free(r.rb);
  }
  free((void *)r.g.members);
  return ok;
}

bool coll_run_host(const CollExec *x, Exchange *xg, int64_t replica, int64_t partition,
                   uint8_t *const *in, uint8_t *const *out, Diag *d) {
  return run_host_as(x, xg, replica, partition, in, out, NULL, d);
}

/* Operands staged in host memory (slot SLOT_IN) and room for the results
 * (SLOT_OUT), all side by side; *ins and *outs (heap) point into them. */
static bool stage_all_in(const CollExec *x, Platform *p, const DevPtr *in, uint8_t ***ins,
                         uint8_t ***outs, Diag *d) {
  const CollDesc *c = x->t->coll;
  size_t nin = 0, nout = 0;
  for (int k = 0; k < c->n; k++) {
    nin += (size_t)x->in_bytes[k];
    nout += (size_t)x->out_bytes[k];
  }
  uint8_t *ib = slot(x, SLOT_IN, nin), *ob = slot(x, SLOT_OUT, nout);
  *ins = xcalloc((size_t)c->n + 1, sizeof **ins);
  *outs = xcalloc((size_t)c->n + 1, sizeof **outs);
  for (int k = 0; k < c->n; k++) {
    (*ins)[k] = k ? (*ins)[k - 1] + x->in_bytes[k - 1] : ib;
    (*outs)[k] = k ? (*outs)[k - 1] + x->out_bytes[k - 1] : ob;
  }
  bool ok = p->synchronize(p, d);
  for (int k = 0; ok && k < c->n; k++)
    ok = stage_in(p, in[k], x->in[k], x->in_bytes[k], (*ins)[k], d);
  return ok;
}

static bool stage_all_out(const CollExec *x, Platform *p, const DevPtr *out,
                          uint8_t *const *outs, Diag *d) {
  bool ok = true;
  for (int k = 0; ok && k < x->t->coll->n; k++)
    ok = stage_out(p, out[k], x->out[k], x->out_bytes[k], outs[k], d);
  return ok;
}

bool coll_group_share(const CollGroup *g, void *bytes, size_t len, Diag *d) {
  if (g->n == 1) return true;
  char why[320];
  if (!g->xg) {
    snprintf(why, sizeof why, "%d devices take part but the run has only this one", g->n);
    return run_err(d, why);
  }
  XchgGroup xg = {.key = g->key, .name = g->name, .members = g->members, .n = g->n,
                  .me = g->me};
  if (!xchg_bcast(g->xg, &xg, bytes, len, why, sizeof why)) return run_err(d, why);
  return true;
}

/* The members of g meet: each sends every other one byte, so that none
 * goes on before all have come to this collective, and members that came
 * to different ones fail with the exchange's message. */
static bool meet(Exchange *xg, const XchgGroup *g, Diag *d) {
  if (g->n == 1) return true;
  char why[320];
  if (!xg) {
    snprintf(why, sizeof why, "%d devices take part but the run has only this one", g->n);
    return run_err(d, why);
  }
  uint8_t mine = 1, *theirs = xcalloc((size_t)g->n, 1);
  const void **send = xcalloc((size_t)g->n, sizeof *send);
  void **recv = xcalloc((size_t)g->n, sizeof *recv);
  size_t *sb = xcalloc((size_t)g->n, sizeof *sb), *rb = xcalloc((size_t)g->n, sizeof *rb);
  for (int j = 0; j < g->n; j++) {
    send[j] = &mine;
    recv[j] = theirs + j;
    sb[j] = rb[j] = 1;
  }
  bool ok = xg->exchange(xg, g, send, sb, recv, rb, why, sizeof why);
  free(theirs);
  free(send);
  free(recv);
  free(sb);
  free(rb);
  return ok || run_err(d, why);
}

/* On the platform's own library: the members meet, then coll_run. */
static bool run_on_device(CollExec *x, Platform *p, Exchange *xg, int64_t replica,
                          int64_t partition, const DevPtr *in, const DevPtr *out, Diag *d) {
  const CollDesc *c = x->t->coll;
  XchgGroup g;
  if (!group_of(x, replica, partition, &g, d)) return false;
  bool ok = true;
  if (c->kind == COLL_ALL_TO_ALL && c->dim < 0 && c->n != g.n)
    ok = run_err(d, "a tuple all-to-all needs one operand per participant");
  CollGroup cg = {.members = g.members, .n = g.n, .me = g.me,
                  .self = g.members[g.me], .ndev = c->replica_count * c->num_partitions,
                  .xg = xg, .key = g.key, .name = g.name};
  ok = ok && meet(xg, &g, d) && p->coll_run(p, x, &cg, in, out, d);
  free((void *)g.members);
  return ok;
}

bool coll_run(CollExec *x, Platform *p, Exchange *xg, int64_t replica, int64_t partition,
              const DevPtr *in, const DevPtr *out, Diag *d) {
  const CollDesc *c = x->t->coll;
  if (c->kind == COLL_REPLICA_ID || c->kind == COLL_PARTITION_ID) {
    uint32_t v = (uint32_t)(c->kind == COLL_REPLICA_ID ? replica : partition);
    return p->copy_h2d(p, out[0], &v, 4, d);
  }
  if (x->on_device) return run_on_device(x, p, xg, replica, partition, in, out, d);
  uint8_t **ins, **outs;
  bool ok = stage_all_in(x, p, in, &ins, &outs, d) &&
            coll_run_host(x, xg, replica, partition, ins, outs, d) &&
            stage_all_out(x, p, out, outs, d);
  free(ins);
  free(outs);
  return ok;
}

/*
 * Asynchronous pairs.  The -start's thunk stages the operands in on the
 * device's thread (the operands' buffers may be reused as soon as it
 * returns), then a background thread exchanges, computes and writes the
 * results into their slices (buffer assignment keeps them for the -done);
 * the done thunk waits for that thread.  Anywhere else (a GPU, a collective
 * of the platform's library, an exchange without background threads) the
 * -start runs the whole collective, in stream order, and the done thunk
 * has nothing to wait for.
 */
struct CollPending {
  const CollExec *x;
  Platform *p;
  Exchange *xg;
  int64_t replica, partition;
  int self;
  const DevPtr *out;               /* the executor's (lives as long) */
  uint8_t **ins, **outs;
  void *waiter;
  pthread_t th;
  bool ok;
  Diag d;
};

static void *background(void *arg) {
  CollPending *q = arg;
  q->ok = run_host_as(q->x, q->xg, q->replica, q->partition, q->ins, q->outs, q->waiter,
                      &q->d) &&
          stage_all_out(q->x, q->p, q->out, q->outs, &q->d);
  q->xg->waiter_done(q->xg, q->waiter);
  return NULL;
}

bool coll_start(CollExec *x, Platform *p, Exchange *xg, int64_t replica, int64_t partition,
                const DevPtr *in, const DevPtr *out, CollPending **pending, Diag *d) {
  *pending = NULL;
  const CollDesc *c = x->t->coll;
  /* in the background: host memory and an exchange that has threads for it
   * (the host platform's copies are plain memory copies, from any thread) */
  bool bg = !x->on_device && xg && xg->waiter_new && strcmp(p->name, "host") == 0 &&
            c->kind != COLL_REPLICA_ID && c->kind != COLL_PARTITION_ID;
  XchgGroup g;
  if (bg) {
    if (!group_of(x, replica, partition, &g, d)) return false;
    bg = g.n > 1;
    free((void *)g.members);
  }
  if (!bg) return coll_run(x, p, xg, replica, partition, in, out, d);
  CollPending *q = xcalloc(1, sizeof *q);
  *q = (CollPending){.x = x, .p = p, .xg = xg, .replica = replica, .partition = partition,
                     .self = (int)(replica * c->num_partitions + partition), .out = out};
  if (!stage_all_in(x, p, in, &q->ins, &q->outs, d)) {
    free(q->ins);
    free(q->outs);
    free(q);
    return false;
  }
  q->waiter = xg->waiter_new(xg, q->self);
  if (pthread_create(&q->th, NULL, background, q) != 0) {
    /* no thread: here and now */
    background(q);
    q->th = pthread_self();
    bool ok = q->ok;
    xg->waiter_await(xg, q->waiter);
    if (!ok) diag_error(d, (Loc){0}, "%s", q->d.msg ? q->d.msg : "failed");
    diag_clear(&q->d);
    free(q->ins);
    free(q->outs);
    free(q);
    return ok;
  }
  *pending = q;
  return true;
}

void coll_abandon(CollPending *q, const char *why) {
  if (q) q->xg->abandon(q->xg, q->self, why);
}

bool coll_wait(CollPending *q, Diag *d) {
  if (!q) return true;
  q->xg->waiter_await(q->xg, q->waiter);
  pthread_join(q->th, NULL);
  bool ok = q->ok;
  if (!ok) diag_error(d, (Loc){0}, "%s", q->d.msg ? q->d.msg : "failed");
  diag_clear(&q->d);
  free(q->ins);
  free(q->outs);
  free(q);
  return ok;
}
