/*
 * collective_exec.c - collective thunks at run time: every device of a
 * multi-device run has its own executor on its own thread; at a collective
 * each one stages its operands in host memory (row-major, whatever their
 * layout), the participants meet (lib/support/rendezvous.h), each computes
 * its own results from all members' operands in group order, and writes
 * them back into its result slices (in their layouts).  Through host memory,
 * so it works on any platform; on the host CPU it is shared memory between
 * the device threads.
 *
 * The results are the interpreter's (lib/eval/collective.c) for the
 * reductions XLA's runtimes know (sum, product, min, max: eval_combine):
 *   all-reduce      folded left to right over the group
 *   reduce-scatter  the same on this member's chunk of dimension d
 *   all-gather      the members' operands concatenated along d (alone in
 *                   its group: the operand, then zeros to the result's size)
 *   all-to-all      chunk m along d from member m's chunk `me` (array form);
 *                   operand `me` of member m as result m (tuple form)
 *   collective-permute  the operand of the member whose pair targets this
 *                   one, zeros when none does
 *   collective-broadcast  the first member's operands
 *   replica-id, partition-id  this device's number, u32
 */
#include <stdlib.h>
#include <string.h>

#include "../eval/eval.h"
#include "collective_exec.h"

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
  return x;
}

bool coll_share_rendezvous(void *ctx, const void *key, const int64_t *members, int n,
                           int64_t self, void *bytes, size_t len, Diag *d) {
  char why[256];
  void *const *brought;
  /* the first member brings its bytes; each reads them before leaving */
  bool first = n > 0 && members[0] == self;
  RdvMeet *m = rdv_join(ctx, key, "sharing a communicator's id", members, n, self,
                        first ? bytes : NULL, &brought, why, sizeof why);
  if (!m) return run_err(d, why);
  if (!first) memcpy(bytes, brought[0], len);
  rdv_leave(ctx, m);
  return true;
}

bool coll_group_share(const CollGroup *g, void *bytes, size_t len, Diag *d) {
  if (g->n == 1) return true;
  if (!g->env || !g->env->share) {
    char why[128];
    snprintf(why, sizeof why, "%d devices take part but the run has only this one", g->n);
    return run_err(d, why);
  }
  return g->env->share(g->env->share_ctx, g->key, g->members, g->n, g->self, bytes, len, d);
}

static bool identity_layout(const Shape *s) {
  if (!s->layout) return true;
  for (int k = 0; k < s->rank; k++)
    if (s->layout->minor_to_major[k] != s->rank - 1 - k) return false;
  return true;
}

/* Device bytes of slice addr into a row-major host buffer (heap). */
static uint8_t *stage_in(Platform *p, DevPtr addr, const Shape *s, int64_t n,
                         Diag *d) {
  uint8_t *buf = xmalloc((size_t)n + 1), *phys = identity_layout(s) ? buf : xmalloc((size_t)n + 1);
  bool ok = n == 0 || p->copy_d2h(p, phys, addr, (size_t)n, d);
  if (ok && phys != buf) layout_from_physical(s, phys, buf);
  if (phys != buf) free(phys);
  if (!ok) {
    free(buf);
    return NULL;
  }
  return buf;
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

typedef struct Meet {
  int n, me;
  uint8_t *const *const *peers;    /* per member: its staged operands */
} Meet;

#define PEER(mt, m, k) ((mt)->peers[m][k])

/* Result k of this member into out (row-major, x->out_bytes[k] bytes). */
static bool compute(const CollExec *x, const Meet *mt, int k, int src,
                    uint8_t *out, Diag *d) {
  const CollDesc *c = x->t->coll;
  const Shape *is = x->in[k];
  int eb = et_bytes(is->et);
  int64_t outer, inner, n = mt->n;
  int64_t dim = c->dim;
  switch (c->kind) {
  case COLL_ALL_REDUCE:
  case COLL_REDUCE_SCATTER: {
    int64_t chunks = c->kind == COLL_REDUCE_SCATTER ? n : 1;
    outer = 1, inner = shape_elements(is);
    if (chunks > 1) {
      if (dim < 0 || dim >= is->rank || is->dims[dim] % chunks)
        return run_err(d, "bad scatter dimension");
      split_at(is, dim, &outer, &inner);
    }
    int64_t ce = inner / chunks;
    if (outer * ce * eb != x->out_bytes[k])
      return run_err(d, "result size does not match");
    for (int64_t o = 0; o < outer; o++) {
      int64_t s0 = (o * chunks + (chunks > 1 ? mt->me : 0)) * ce * eb;
      uint8_t *dst = out + o * ce * eb;
      memcpy(dst, PEER(mt, 0, k) + s0, (size_t)(ce * eb));
      for (int m = 1; m < n; m++)
        eval_combine(is->et, (EvalCombine)c->reduction, dst, PEER(mt, m, k) + s0, ce);
    }
    return true;
  }
  case COLL_ALL_GATHER: {
    if (dim < 0 || dim >= is->rank)
      return run_err(d, "bad all-gather dimension");
    split_at(is, dim, &outer, &inner);
    size_t cb = (size_t)(inner * eb);
    /* alone in its group, the result may be S times the operand (see
     * lib/eval/collective.c): slot 0, then zeros */
    int64_t slots = n;
    const Shape *os = x->out[k];
    if (n == 1 && is->dims[dim] > 0 && os->rank == is->rank &&
        os->dims[dim] % is->dims[dim] == 0)
      slots = os->dims[dim] / is->dims[dim];
    if ((int64_t)cb * outer * slots != x->out_bytes[k])
      return run_err(d, "result size does not match");
    if (slots != n) memset(out, 0, (size_t)x->out_bytes[k]);
    for (int64_t o = 0; o < outer; o++)
      for (int m = 0; m < n; m++)
        memcpy(out + (o * slots + m) * cb, PEER(mt, m, k) + o * cb, cb);
    return true;
  }
  case COLL_ALL_TO_ALL:
    if (dim < 0) {
      if (x->in_bytes[mt->me] != x->out_bytes[k])
        return run_err(d, "result size does not match");
      memcpy(out, PEER(mt, k, mt->me), (size_t)x->out_bytes[k]);
      return true;
    }
    if (dim >= is->rank || is->dims[dim] % n)
      return run_err(d, "bad all-to-all dimension");
    split_at(is, dim, &outer, &inner);
    if (outer * inner * eb != x->out_bytes[k])
      return run_err(d, "result size does not match");
    {
      size_t cb = (size_t)(inner / n * eb);
      for (int64_t o = 0; o < outer; o++)
        for (int m = 0; m < n; m++)
          memcpy(out + (o * n + m) * cb, PEER(mt, m, k) + (o * n + mt->me) * cb, cb);
    }
    return true;
  case COLL_COLLECTIVE_BROADCAST:
    if (x->in_bytes[k] != x->out_bytes[k])
      return run_err(d, "result size does not match");
    memcpy(out, PEER(mt, 0, k), (size_t)x->out_bytes[k]);
    return true;
  case COLL_COLLECTIVE_PERMUTE:
    if (src < 0) memset(out, 0, (size_t)x->out_bytes[k]);
    else memcpy(out, PEER(mt, src, k), (size_t)x->out_bytes[k]);
    return true;
  default:
    return run_err(d, "unknown collective");
  }
}

/* The members meet and leave at once: all of them run this thunk now. */
static bool meet(const CollEnv *env, const Thunk *t, const int64_t *members, int n,
                 int64_t self, Diag *d) {
  if (n == 1 || !env->world) return true;
  char why[256];
  void *const *brought;
  RdvMeet *m = rdv_join(env->world, t, t->annotation ? t->annotation : "collective", members,
                        n, self, NULL, &brought, why, sizeof why);
  if (!m) return run_err(d, why);
  rdv_leave(env->world, m);
  return true;
}

bool coll_run(CollExec *x, Platform *p, const CollEnv *env, const DevPtr *in,
              const DevPtr *out, Diag *d) {
  const Thunk *t = x->t;
  const CollDesc *c = t->coll;
  Rendezvous *w = env->world;
  int64_t replica = env->replica, partition = env->partition;
  if (c->kind == COLL_REPLICA_ID || c->kind == COLL_PARTITION_ID) {
    uint32_t v = (uint32_t)(c->kind == COLL_REPLICA_ID ? replica : partition);
    return p->copy_h2d(p, out[0], &v, 4, d);
  }
  char why[256];
  int64_t *members = NULL;
  int n = hlo_group_participants((CollectiveGroupMode)c->mode, c->ngroups, c->groups,
                                 c->group_sizes, c->replica_count, c->num_partitions,
                                 replica, partition, &members, why, sizeof why);
  if (n < 0) return run_err(d, why);
  int64_t self = replica * c->num_partitions + partition;
  Meet mt = {.n = n, .me = -1};
  for (int k = 0; k < n; k++)
    if (members[k] == self) mt.me = k;
  if (c->kind == COLL_ALL_TO_ALL && c->dim < 0 && c->n != n) {
    free(members);
    return run_err(d, "a tuple all-to-all needs one operand per participant");
  }
  if (x->on_device) {
    CollGroup g = {.members = members, .n = n, .me = mt.me, .self = self,
                   .ndev = c->replica_count * c->num_partitions, .env = env, .key = t};
    bool ok = meet(env, t, members, n, self, d) && p->coll_run(p, x, &g, in, out, d);
    free(members);
    return ok;
  }
  if (!p->synchronize(p, d)) {
    free(members);
    return false;
  }
  uint8_t **mine = xcalloc((size_t)c->n + 1, sizeof *mine);
  uint8_t **res = xcalloc((size_t)c->n + 1, sizeof *res);
  bool ok = true;
  for (int k = 0; ok && k < c->n; k++)
    ok = (mine[k] = stage_in(p, in[k], x->in[k], x->in_bytes[k], d)) != NULL;
  RdvMeet *meet = NULL;
  uint8_t *const *own[1] = {mine};
  if (ok && n == 1) {
    mt.peers = own;
  } else if (ok && !w) {
    snprintf(why, sizeof why, "%d devices take part but the run has only this one", n);
    ok = run_err(d, why);
  } else if (ok) {
    void *const *brought;
    meet = rdv_join(w, t, t->annotation ? t->annotation : "collective", members, n, self,
                    mine, &brought, why, sizeof why);
    if (!meet) ok = run_err(d, why);
    mt.peers = (uint8_t *const *const *)brought;
  }
  int src = -1;
  if (ok && c->kind == COLL_COLLECTIVE_PERMUTE)
    for (int q = 0; q < c->npairs; q++)
      if (c->pairs[q][1] == mt.me && c->pairs[q][0] < n) src = (int)c->pairs[q][0];
  for (int k = 0; ok && k < c->n; k++) {
    res[k] = xmalloc((size_t)x->out_bytes[k] + 1);
    ok = compute(x, &mt, k, src, res[k], d);
  }
  if (meet) rdv_leave(w, meet);
  for (int k = 0; ok && k < c->n; k++)
    ok = stage_out(p, out[k], x->out[k], x->out_bytes[k], res[k], d);
  for (int k = 0; k < c->n; k++) {
    free(mine[k]);
    free(res[k]);
  }
  free(mine);
  free(res);
  free(members);
  return ok;
}
