/*
 * rematerialization.c - xhloc --memory-limit (XLA's HloRematerialization,
 * reduced to what the buffer assignment can tell): computes values again
 * just before their later uses instead of keeping them live across the
 * peak of live bytes.
 *
 * Each round assigns buffers; when the total is over the limit it looks at
 * the buffers live at the peak (largest first), in the computation the
 * peak is in.  A value V defined before the peak and read after it is a
 * candidate.  Its block is V's instruction plus, recursively (up to
 * MAX_DEPTH levels, MAX_BLOCK instructions), every operand that is dead by
 * the first use after the peak (t_u) and can itself be computed again; the
 * other operands are read where they are: free when they live in a
 * parameter or constant allocation or are still live at t_u, else their
 * size is the cost (their life is extended to t_u).  The saving is V's
 * size less that cost.  The block is cloned (fusions with a computation of
 * their own), its clones are placed before the first use after the peak
 * (ir_end's topological order puts an unplaced instruction just before its
 * first user), and every use of V after the peak reads the clone.  A round
 * takes candidates until their savings cover the excess; the next round
 * assigns buffers again.  It stops when the limit is met, or when a round
 * finds nothing to save: an error that names the limit, the total, the
 * peak and the largest buffers live there.
 *
 * A library call returns (result, workspace): its result is reached
 * through get-tuple-element(call, 0), which joins the block.
 */
#include "rematerialization.h"

#include "../lib/hlo/backend_config.h"
#include "../lib/hlo/ir_edit.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ROUNDS = 64, MAX_DEPTH = 4, MAX_BLOCK = 8, SHOW_BUFFERS = 5 };

/* What can be computed a second time with the same result. */
static bool recomputable(IrEdit *e, const HloInstr *i) {
  if (ir_has_control_deps(e, i))
    return false;
  switch (i->op) {
  case HLO_FUSION:
    return shape_is_array(i->shape) && !ir_has_side_effect_deep(i);
  case HLO_CUSTOM_CALL:
    return libcall_target(i) != LIBCALL_NONE;
  case HLO_GET_TUPLE_ELEMENT:
    return i->ops[0]->op == HLO_CUSTOM_CALL && libcall_target(i->ops[0]) !=
                                                   LIBCALL_NONE;
  case HLO_BROADCAST: case HLO_RESHAPE: case HLO_BITCAST: case HLO_TRANSPOSE:
  case HLO_SLICE: case HLO_CONCATENATE: case HLO_IOTA: case HLO_PAD:
  case HLO_REVERSE: case HLO_DOT: case HLO_CONVOLUTION:
  case HLO_DYNAMIC_SLICE: case HLO_GATHER: case HLO_REDUCE:
    return i->ncalled == 0 || i->op == HLO_REDUCE;
  default:
    return hlo_op_is_elementwise(i->op) && i->op != HLO_COPY &&
           shape_is_array(i->shape);
  }
}

typedef struct Block {
  HloInstr *ins[MAX_BLOCK];       /* operands before users */
  int n;
  int64_t cost;
} Block;

static bool in_block(const Block *b, const HloInstr *i) {
  for (int k = 0; k < b->n; k++)
    if (b->ins[k] == i)
      return true;
  return false;
}

/* Whether operand o can be read at step tu where it is: every leaf in a
 * parameter or constant allocation or live at tu.  *size: its bytes that
 * are not. */
static bool live_at(const BufferAssignment *ba, const HloInstr *o, int tu,
                    int64_t *size) {
  int n = shape_leaf_count(o->shape);
  bool live = true;
  *size = 0;
  for (int k = 0; k < n; k++) {
    int s, e;
    int64_t sz;
    bool fixed;
    if (!ba_live_range(ba, o, k, &s, &e, &sz, &fixed))
      continue;                   /* a token */
    if (!fixed && e < tu) {
      live = false;
      *size += sz;
    }
  }
  return live;
}

/* Adds i and, before it, what it needs computed again to b. */
static bool plan(IrEdit *e, const BufferAssignment *ba, Block *b, HloInstr *i,
                 int tu, int depth) {
  if (!recomputable(e, i) || b->n == MAX_BLOCK)
    return false;
  for (int k = 0; k < i->nops; k++) {
    HloInstr *o = i->ops[k];
    if (in_block(b, o))
      continue;
    int64_t size;
    if (live_at(ba, o, tu, &size))
      continue;
    int n = b->n;
    int64_t cost = b->cost;
    if (depth < MAX_DEPTH && o->parent == i->parent &&
        plan(e, ba, b, o, tu, depth + 1))
      continue;
    b->n = n;                     /* drop a partial plan */
    b->cost = cost + size;
  }
  if (b->n == MAX_BLOCK)
    return false;
  b->ins[b->n++] = i;
  return true;
}

/* The clones of b's instructions, in b's order; the root's is last. */
static HloInstr *clone_block(IrEdit *e, const Block *b) {
  HloInstr *clone[MAX_BLOCK];
  for (int k = 0; k < b->n; k++) {
    HloInstr *i = b->ins[k];
    HloInstr **ops = xcalloc((size_t)i->nops + 1, sizeof *ops);
    for (int j = 0; j < i->nops; j++) {
      ops[j] = i->ops[j];
      for (int q = 0; q < k; q++)
        if (b->ins[q] == i->ops[j])
          ops[j] = clone[q];
    }
    clone[k] = ir_clone(e, i->parent, i, NULL, i->nops, ops);
    free(ops);
    if (i->op == HLO_FUSION && i->ncalled >= 1) {
      HloComp *fc = ir_clone_comp(e, i->called[0], "remat");
      HloComp **called = ARENA_ARRAY(ir_arena(e), HloComp *, i->ncalled);
      memcpy(called, i->called, sizeof *called * (size_t)i->ncalled);
      called[0] = fc;
      clone[k]->called = called;
      fc->fusion_instr = clone[k];
    }
  }
  return clone[b->n - 1];
}

/* The uses of i after step t move to c; returns how many. */
static int redirect_later_uses(IrEdit *e, const BufferAssignment *ba,
                               HloInstr *i, HloInstr *c, int t) {
  HloInstr **users;
  int nu = ir_users(e, i, &users);
  HloInstr **late = xcalloc((size_t)nu + 1, sizeof *late);
  int nl = 0;
  for (int k = 0; k < nu; k++)
    if (users[k] != c && ba_time_of(ba, users[k]) > t)
      late[nl++] = users[k];
  for (int k = 0; k < nl; k++)
    for (int j = 0; j < late[k]->nops; j++)
      if (late[k]->ops[j] == i)
        ir_set_operand(e, late[k], j, c);
  free(late);
  return nl;
}

/* The first step after t at which i is read (INT_MAX: none). */
static int first_use_after(IrEdit *e, const BufferAssignment *ba, HloInstr *i,
                           int t) {
  HloInstr **users;
  int nu = ir_users(e, i, &users), first = INT_MAX;
  for (int k = 0; k < nu; k++) {
    int tu = ba_time_of(ba, users[k]);
    if (tu > t && tu < first)
      first = tu;
  }
  return first;
}

/* The instruction whose uses are redirected for buffer lb: its definer,
 * or for a library call's result its get-tuple-element. */
static HloInstr *holder(IrEdit *e, const BaLiveBuffer *lb) {
  HloInstr *d = (HloInstr *)lb->def;
  if (d->shape->et != ET_TUPLE)
    return lb->leaf == 0 ? d : NULL;
  if (d->op != HLO_CUSTOM_CALL || libcall_target(d) == LIBCALL_NONE)
    return NULL;
  HloInstr **users;
  int nu = ir_users(e, d, &users);
  HloInstr *g = NULL;
  for (int k = 0; k < nu; k++)
    if (users[k]->op == HLO_GET_TUPLE_ELEMENT &&
        users[k]->tuple_index == lb->leaf) {
      if (g)
        return NULL;              /* several: leave it */
      g = users[k];
    }
  return g;
}

/* One round: the candidates at the peak, until their savings cover
 * `excess`.  Returns the values rematerialized. */
static int round_at_peak(HloModule *m, const BufferAssignment *ba,
                         int64_t excess, RematStats *st) {
  int t;
  BaLiveBuffer *lb;
  int n = ba_live_at_peak(ba, &t, &lb);
  IrEdit *e = ir_begin(m);
  int done = 0;
  int64_t saved = 0;
  PtrVec taken = {0};             /* instructions in a block this round */
  for (int k = 0; k < n && saved < excess; k++) {
    if (!lb[k].temp)
      continue;
    HloInstr *h = holder(e, &lb[k]);
    if (!h || ir_removed(h))
      continue;
    int s, end;
    int64_t size;
    bool fixed;
    if (!ba_live_range(ba, h, 0, &s, &end, &size, &fixed) || fixed ||
        s >= t || end <= t)
      continue;
    int tu = first_use_after(e, ba, h, t);
    if (tu == INT_MAX)
      continue;
    Block b = {0};
    if (!plan(e, ba, &b, h, tu, 0) || b.cost >= size)
      continue;
    bool clash = false;
    for (int j = 0; j < b.n && !clash; j++)
      for (int q = 0; q < taken.len && !clash; q++)
        clash = taken.data[q] == b.ins[j];
    if (clash)
      continue;
    HloInstr *c = clone_block(e, &b);
    if (redirect_later_uses(e, ba, h, c, t) == 0)
      continue;                   /* the clones stay unused: dce drops them */
    for (int j = 0; j < b.n; j++)
      vec_push(&taken, b.ins[j]);
    saved += size - b.cost;
    st->instructions += b.n;
    done++;
  }
  vec_free(&taken);
  free(lb);
  ir_end(e, done > 0);
  return done;
}

/* "N bytes", and for 1 KiB or more " (1.5 KiB)". */
static void put_bytes(StrBuf *b, int64_t n) {
  sb_printf(b, "%lld bytes", (long long)n);
  if (n >= 1024) {
    sb_puts(b, " (");
    sb_put_size(b, n);
    sb_putc(b, ')');
  }
}

/* The error when nothing more can be saved. */
static bool limit_error(const HloModule *m, const BufferAssignment *ba,
                        int64_t limit, const RematStats *st, Diag *d) {
  int t;
  BaLiveBuffer *lb;
  int n = ba_live_at_peak(ba, &t, &lb);
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, "--memory-limit=");
  sb_printf(&b, "%lld cannot be met: the buffers need ", (long long)limit);
  put_bytes(&b, ba_total_bytes(ba));
  if (st->rematerialized)
    sb_printf(&b, " after %d values computed again", st->rematerialized);
  sb_puts(&b, "; the peak of live bytes is ");
  put_bytes(&b, ba_peak_bytes(ba, NULL));
  if (n > 0)
    sb_puts(&b, "; the largest buffers live there: ");
  for (int k = 0; k < n && k < SHOW_BUFFERS; k++) {
    sb_printf(&b, "%s%s ", k ? ", " : "", lb[k].def->name);
    char *sh = shape_to_string(lb[k].def->shape->et == ET_TUPLE
                                   ? lb[k].def->shape->tuple[0]
                                   : lb[k].def->shape,
                               false);
    sb_printf(&b, "%s %lld bytes", sh, (long long)lb[k].size);
    free(sh);
  }
  sb_puts(&b, " (see --stage=memory)");
  free(lb);
  diag_error(d, m->loc, "%s", b.s);
  sb_free(&b);
  return false;
}

bool rematerialize(HloModule *m, int64_t limit, RematStats *st, Diag *d) {
  memset(st, 0, sizeof *st);
  for (;;) {
    BufferAssignment *ba = buffer_assign(m, d);
    if (!ba)
      return false;
    st->rounds++;
    int64_t total = ba_total_bytes(ba);
    if (st->rounds == 1)
      st->before = total;
    st->after = total;
    if (total <= limit) {
      buffer_assignment_free(ba);
      return true;
    }
    int done = st->rounds > MAX_ROUNDS ? 0
                                       : round_at_peak(m, ba, total - limit, st);
    if (done == 0) {
      bool ok = limit_error(m, ba, limit, st, d);
      buffer_assignment_free(ba);
      return ok;
    }
    st->rematerialized += done;
    buffer_assignment_free(ba);
  }
}
