/*
 * collective.c - all-reduce, all-gather, reduce-scatter, all-to-all,
 * collective-broadcast and collective-permute (and their -start/-done
 * forms) across the devices of the run.
 *
 * The participants are the devices of the group holding this one
 * (hlo_collective_participants: XLA's group modes and replica-group forms).
 * They meet (lib/support/rendezvous.h), and each computes its own result from every
 * member's operands, in group order, so results are the same on every run:
 *   all-reduce       to_apply folded left to right over the members
 *   reduce-scatter   the same, then this member's chunk of dimensions={d}
 *   all-gather       the members' operands concatenated along d (a
 *                    device alone in its group: its operand, then zeros
 *                    up to the result's size)
 *   all-to-all       array form: chunk j along d from member j (its chunk
 *                    for this member); tuple form: operand `me` of member j
 *                    as result j
 *   collective-broadcast  the first member's operands
 *   collective-permute    the operand of the member whose pair targets this
 *                    one (pairs name replicas without a channel_id,
 *                    partitions with one), zeros when none does
 * Several operands (the combined forms) are treated one by one.  A device
 * alone in its group needs no meeting.  When the devices are the processes
 * of an MPI job (EvalOptions.exchange), each member sends all its operands
 * to every member instead (gather_peers), and computes the same way.  The -start forms wrap the result in
 * the tuple their shape asks for: (operands, results, contexts...); the
 * all-gather and collective-permute -start forms of XLA's older exporter,
 * shaped as their result, and its (operand, result) all-reduce-start are
 * taken too.  A scalar operand of all-gather or reduce-scatter keeps its
 * shape (shape inference).
 */
#include <stdlib.h>
#include <string.h>

#include "../support/exchange.h"
#include "evalp.h"

#define MAX_LEAVES 64

bool ev_is_collective_op(HloOp op) {
  switch (op) {
  case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START:
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START: case HLO_ALL_GATHER_DONE:
  case HLO_REDUCE_SCATTER: case HLO_ALL_TO_ALL:
  case HLO_COLLECTIVE_BROADCAST: case HLO_COLLECTIVE_PERMUTE:
  case HLO_COLLECTIVE_PERMUTE_START: case HLO_COLLECTIVE_PERMUTE_DONE:
    return true;
  default:
    return false;
  }
}

typedef struct Coll {
  Eval *ev;
  const HloInstr *i;
  int n, me;                       /* members, this device's index */
  void *const *peers;              /* per member: its operand values */
} Coll;

/* Member m's operand values. */
#define PEER(c, m) ((EvalValue *const *)(c)->peers[m])

static bool bad(Coll *c, const char *what) {
  return ev_fail(c->ev, c->i, EVAL_ERR_INVALID, "%s", what);
}

/* Shapes that need another number of participants than the group has (a
 * module whose header does not declare the devices its groups assume). */
static bool bad_size(Coll *c) {
  char what[128];
  snprintf(what, sizeof what, "%s whose shapes need another group size than "
           "its %d participants", hlo_op_name(c->i->op), c->n);
  return ev_unsupported(c->ev, c->i, what);
}

/* Elements before dimension d and from d on (per operand shape). */
static void split_at(const Shape *s, int d, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int k = 0; k < s->rank; k++) *(k < d ? outer : inner) *= s->dims[k];
}

/* all-reduce (chunks == 1) and reduce-scatter: out element e folds the
 * members' elements at chunk `me` of `chunks` along dimension d. */
static bool reduce_leaf(Coll *c, int k, EvalValue *out, int d, int chunks) {
  const Shape *os = c->i->ops[k]->shape;
  ElemType et = os->et;
  int eb = et_bytes(et);
  if (out->shape->et != et) return bad(c, "the result type differs from the operand's");
  int64_t outer = 1, inner = ev_elems(os);
  if (chunks > 1) {
    if (d < 0 || d >= os->rank) return bad(c, "bad scatter dimension");
    if (os->dims[d] % chunks) return bad_size(c);
    split_at(os, d, &outer, &inner);
  }
  int64_t ce = inner / chunks;    /* elements per chunk per outer index */
  if (outer * ce != ev_elems(out->shape)) return bad_size(c);
  for (int m = 0; m < c->n; m++)
    if (PEER(c, m)[k]->nbytes != ev_elems(os) * eb || !PEER(c, m)[k]->data)
      return bad(c, "a member's operand does not match the shape");
  ScalarFn *f = c->i->ncalled ? scalar_fn_new(c->ev, c->i->called[0]) : NULL;
  if (!f) return bad(c, "no reduction computation");
  ElemType ets[2] = {et, et};
  bool ok = scalar_fn_check(c->ev, c->i, f, 2, ets, 1, &et);
  for (int64_t o = 0; ok && o < outer; o++) {
    int64_t src = (o * chunks + (chunks > 1 ? c->me : 0)) * ce, dst = o * ce;
    memcpy(out->data + dst * eb, PEER(c, 0)[k]->data + src * eb, (size_t)(ce * eb));
    for (int m = 1; ok && m < c->n; m++)
      for (int64_t e = 0; e < ce; e++) {
        uint8_t *acc = out->data + (dst + e) * eb;
        const uint8_t *args[2] = {acc, PEER(c, m)[k]->data + (src + e) * eb};
        uint8_t *outs[1] = {acc};
        if (!scalar_fn_apply(c->ev, f, args, outs)) {
          ok = false;
          break;
        }
      }
  }
  scalar_fn_free(f);
  return ok;
}

/* all-gather: the members' operands concatenated along d.  A device alone
 * in its group whose result is S times its operand along d (XLA's verifier
 * takes any S when the group has one member: the module's header left the
 * devices out) has its operand in slot 0 and zeros in the other slots,
 * where XLA's CPU runtime writes nothing. */
static bool gather_leaf(Coll *c, int k, EvalValue *out, int d) {
  const Shape *os = c->i->ops[k]->shape;
  int eb = et_bytes(os->et);
  if (d < 0 || d >= os->rank) return bad(c, "bad all-gather dimension");
  int64_t outer, inner, slots = c->n;
  split_at(os, d, &outer, &inner);
  if (c->n == 1 && os->dims[d] > 0 && out->shape->rank == os->rank &&
      out->shape->dims[d] % os->dims[d] == 0)
    slots = out->shape->dims[d] / os->dims[d];
  if (out->nbytes != outer * inner * eb * slots) return bad_size(c);
  size_t cb = (size_t)(inner * eb);
  if (slots != c->n) memset(out->data, 0, (size_t)out->nbytes);
  for (int64_t o = 0; o < outer; o++)
    for (int m = 0; m < c->n; m++)
      memcpy(out->data + (o * slots + m) * cb, PEER(c, m)[k]->data + o * cb, cb);
  return true;
}

/* all-to-all, array form: chunk m along d from member m's chunk `me`. */
static bool all_to_all_leaf(Coll *c, int k, EvalValue *out, int d) {
  const Shape *os = c->i->ops[k]->shape;
  int eb = et_bytes(os->et);
  if (d < 0 || d >= os->rank) return bad(c, "bad all-to-all dimension");
  if (os->dims[d] % c->n) return bad_size(c);
  int64_t outer, inner;
  split_at(os, d, &outer, &inner);
  if (out->nbytes != outer * inner * eb) return bad_size(c);
  size_t cb = (size_t)(inner / c->n * eb);
  for (int64_t o = 0; o < outer; o++)
    for (int m = 0; m < c->n; m++)
      memcpy(out->data + (o * c->n + m) * cb,
             PEER(c, m)[k]->data + (o * c->n + c->me) * cb, cb);
  return true;
}

static bool copy_leaf(Coll *c, EvalValue *out, const EvalValue *src) {
  if (!src) {
    memset(out->data, 0, (size_t)out->nbytes);
    return true;
  }
  if (src->nbytes != out->nbytes || !src->data) return bad_size(c);
  memcpy(out->data, src->data, (size_t)out->nbytes);
  return true;
}

/* collective-permute: the member whose pair targets this one; -1 none.
 * A pair naming a device outside the group moves nothing (no such device
 * sends or receives), as on XLA's runtimes. */
static int permute_source(Coll *c, bool *ok) {
  int src = -1;
  *ok = true;
  for (int p = 0; p < c->i->npairs; p++) {
    int64_t s = c->i->source_target_pairs[p][0], t = c->i->source_target_pairs[p][1];
    if (s < 0 || s >= c->n || t != c->me) continue;
    if (src >= 0) {
      *ok = ev_fail(c->ev, c->i, EVAL_ERR_INVALID, "two pairs send to %d", c->me);
      return -1;
    }
    src = (int)s;
  }
  return src;
}

static bool compute_leaf(Coll *c, int k, EvalValue *out, int src) {
  const HloInstr *i = c->i;
  int d = i->dims.n ? (int)i->dims.v[0] : -1;
  /* a scalar operand of all-gather or reduce-scatter keeps its shape and
   * value (XLA's shape inference) */
  if ((i->op == HLO_REDUCE_SCATTER || i->op == HLO_ALL_GATHER ||
       i->op == HLO_ALL_GATHER_START) && i->ops[k]->shape->rank == 0)
    return copy_leaf(c, out, PEER(c, c->me)[k]);
  switch (i->op) {
  case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START:
    return reduce_leaf(c, k, out, 0, 1);
  case HLO_REDUCE_SCATTER:
    return reduce_leaf(c, k, out, d, c->n);
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START:
    return gather_leaf(c, k, out, d);
  case HLO_ALL_TO_ALL:
    if (d >= 0) return all_to_all_leaf(c, k, out, d);
    return copy_leaf(c, out, PEER(c, k)[c->me]);
  case HLO_COLLECTIVE_BROADCAST:
    return copy_leaf(c, out, PEER(c, 0)[k]);
  default: /* collective-permute */
    return copy_leaf(c, out, src < 0 ? NULL : PEER(c, src)[k]);
  }
}

/* Every member's operand values, through the exchange: each sends its
 * operands' bytes, side by side, to all; member j's values are made of the
 * bytes it sent, in this device's operand shapes.  peers[j] is a (heap)
 * array of its values; own are this device's.  False with the message in
 * why. */
static bool gather_peers(Eval *ev, const HloInstr *i, EvalValue *const *own,
                         const XchgGroup *g, void **peers, char *why, size_t nwhy) {
  int n = g->n;
  size_t total = 0;
  for (int k = 0; k < i->nops; k++) total += (size_t)own[k]->nbytes;
  uint8_t *mine = xmalloc(total + 1), *all = xmalloc(total * (size_t)n + 1);
  size_t at = 0;
  for (int k = 0; k < i->nops; k++) {
    memcpy(mine + at, own[k]->data, (size_t)own[k]->nbytes);
    at += (size_t)own[k]->nbytes;
  }
  const void **send = xcalloc((size_t)n, sizeof *send);
  void **recv = xcalloc((size_t)n, sizeof *recv);
  size_t *sizes = xcalloc((size_t)n, sizeof *sizes);
  for (int j = 0; j < n; j++) {
    send[j] = mine;
    recv[j] = all + (size_t)j * total;
    sizes[j] = total;
  }
  bool ok = ev->o.exchange->exchange(ev->o.exchange, g, send, sizes, recv, sizes, why, nwhy);
  for (int j = 0; j < n; j++) {
    if (j == g->me) {
      peers[j] = (void *)own;
      continue;
    }
    EvalValue **v = xcalloc((size_t)i->nops + 1, sizeof *v);
    peers[j] = v;
    at = 0;
    for (int k = 0; ok && k < i->nops; k++) {
      if (!(v[k] = ev_array_nozero(ev, i->ops[k]->shape)) || v[k]->nbytes != own[k]->nbytes) {
        snprintf(why, nwhy, "no memory for a member's operand");
        ok = false;
        break;
      }
      memcpy(v[k]->data, recv[j] + at, (size_t)v[k]->nbytes);
      at += (size_t)v[k]->nbytes;
    }
  }
  free(mine);
  free(all);
  free(send);
  free(recv);
  free(sizes);
  return ok;
}

static void free_peers(Eval *ev, const HloInstr *i, void **peers, int n, int me) {
  for (int j = 0; peers && j < n; j++) {
    if (j == me || !peers[j]) continue;
    EvalValue **v = peers[j];
    for (int k = 0; k < i->nops; k++)
      if (v[k]) ev_unref(ev, v[k]);
    free(v);
  }
  free(peers);
}

/* The collective's results, of shape rs (one array, or a tuple of one per
 * operand). */
static EvalValue *collective_results(Eval *ev, const HloInstr *i,
                                     EvalValue *const *a, const Shape *rs) {
  int nres = rs->et == ET_TUPLE ? rs->ntuple : 1;
  bool tuple_a2a = i->op == HLO_ALL_TO_ALL && !i->dims.n;
  if (nres > MAX_LEAVES || nres != i->nops) {
    ev_unsupported(ev, i, i->op == HLO_COLLECTIVE_PERMUTE && i->nops == 4
                   ? "the in-place collective-permute" : "this collective form");
    return NULL;
  }
  for (int k = 0; k < i->nops; k++)
    if (!a[k]->data || !shape_is_array(i->ops[k]->shape)) {
      ev_fail(ev, i, EVAL_ERR_INVALID, "collective operands must be arrays");
      return NULL;
    }
  int64_t reps = ev->m->replica_count > 0 ? ev->m->replica_count : 1;
  int64_t parts = ev->m->num_partitions > 0 ? ev->m->num_partitions : 1;
  int64_t *members = NULL;
  char why[200];
  int64_t n = hlo_collective_participants(i, reps, parts, ev->o.replica_id,
                                          ev->o.partition_id, &members, why,
                                          sizeof why);
  if (n < 0) {
    /* groups naming devices the module does not declare: XLA's verifier
     * takes them when replica_count and num_partitions are left out */
    char what[256];
    snprintf(what, sizeof what, "%s in this run of %lld device%s: %s",
             hlo_op_name(i->op), (long long)(reps * parts), reps * parts == 1 ? "" : "s",
             why);
    ev_unsupported(ev, i, what);
    return NULL;
  }
  Coll c = {.ev = ev, .i = i, .n = (int)n, .me = -1};
  int64_t self = ev->o.replica_id * parts + ev->o.partition_id;
  for (int k = 0; k < n; k++)
    if (members[k] == self) c.me = k;
  if (tuple_a2a && nres != n) {
    /* one operand per member the groups name, more than this run has */
    free(members);
    bad_size(&c);
    return NULL;
  }
  RdvMeet *meet = NULL;
  void *own[1] = {(void *)a}, **gathered = NULL;
  if (n == 1) {
    c.peers = own;
  } else if (!ev->o.world && ev->o.exchange) {
    XchgGroup g = {.key = i, .name = i->name, .members = members, .n = (int)n, .me = c.me};
    gathered = xcalloc((size_t)n, sizeof *gathered);
    if (!gather_peers(ev, i, a, &g, gathered, why, sizeof why)) {
      free_peers(ev, i, gathered, (int)n, c.me);
      free(members);
      ev_fail(ev, i, EVAL_ERR_INVALID, "%s", why);
      return NULL;
    }
    c.peers = (void *const *)gathered;
  } else if (!ev->o.world) {
    free(members);
    char what[128];
    snprintf(what, sizeof what, "%s across %lld devices in a run of one device",
             hlo_op_name(i->op), (long long)n);
    ev_unsupported(ev, i, what);
    return NULL;
  } else {
    meet = rdv_join(ev->o.world, i, i->name, members, (int)n, self, (void *)a, NULL,
                    &c.peers, why, sizeof why);
    if (!meet) {
      free(members);
      ev_fail(ev, i, EVAL_ERR_INVALID, "%s", why);
      return NULL;
    }
  }
  bool ok = true;
  int src = -1;
  if (i->op == HLO_COLLECTIVE_PERMUTE || i->op == HLO_COLLECTIVE_PERMUTE_START)
    src = permute_source(&c, &ok);
  EvalValue *el[MAX_LEAVES] = {0};
  for (int k = 0; ok && k < nres; k++) {
    const Shape *ls = rs->et == ET_TUPLE ? rs->tuple[k] : rs;
    ok = shape_is_array(ls) && (el[k] = ev_array_nozero(ev, ls)) != NULL &&
         compute_leaf(&c, k, el[k], src);
    if (!shape_is_array(ls)) ev_fail(ev, i, EVAL_ERR_INVALID, "collective results must be arrays");
  }
  if (meet) rdv_leave(ev->o.world, meet);
  free_peers(ev, i, gathered, (int)n, c.me);
  free(members);
  EvalValue *r = NULL;
  if (ok) r = rs->et == ET_TUPLE ? ev_tuple(ev, rs, nres, el) : ev_ref(el[0]);
  for (int k = 0; k < nres; k++)
    if (el[k]) ev_unref(ev, el[k]);
  return r;
}

/* The -start forms: (operands, results, contexts...). */
static EvalValue *start_tuple(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (s->et != ET_TUPLE || s->ntuple < 2 || s->ntuple > 8) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed %s shape", hlo_op_name(i->op));
    return NULL;
  }
  EvalValue *el[8] = {0};
  el[1] = collective_results(ev, i, a, s->tuple[1]);
  bool ok = el[1] != NULL;
  if (ok) el[0] = s->tuple[0]->et == ET_TUPLE ? ev_tuple(ev, s->tuple[0], i->nops, a)
                                              : ev_ref(a[0]);
  ok = ok && el[0];
  for (int k = 2; k < s->ntuple && ok; k++) {
    el[k] = shape_is_array(s->tuple[k]) ? ev_array(ev, s->tuple[k]) : ev_token(ev, s->tuple[k]);
    ok = el[k] != NULL;
  }
  EvalValue *t = ok ? ev_tuple(ev, s, s->ntuple, el) : NULL;
  for (int k = 0; k < s->ntuple; k++)
    if (el[k]) ev_unref(ev, el[k]);
  return t;
}

EvalValue *eval_collective(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  if (i->nops < 1) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "collective without operands");
    return NULL;
  }
  switch (i->op) {
  case HLO_ALL_GATHER_DONE:
  case HLO_COLLECTIVE_PERMUTE_DONE:
    if (a[0]->ntuple >= 2) return ev_ref(a[0]->tuple[1]);
    return ev_ref(a[0]);
  case HLO_COLLECTIVE_PERMUTE_START:
  case HLO_ALL_GATHER_START:
    /* XLA's older exporter shapes them as their result */
    if (i->shape->et != ET_TUPLE) return collective_results(ev, i, a, i->shape);
    return start_tuple(ev, i, a);
  case HLO_ALL_REDUCE_START: /* the old form of one operand: (operand, result) */
    if (i->nops == 1 && i->shape->et == ET_TUPLE && i->shape->ntuple == 2)
      return start_tuple(ev, i, a);
    return collective_results(ev, i, a, i->shape);
  default:
    return collective_results(ev, i, a, i->shape);
  }
}
