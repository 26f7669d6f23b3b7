/*
 * buffer_assignment.c - where every value of a module lives: dataflow over
 * the sequential schedule, liveness, buffer sharing and the allocations
 * (XLA's BufferAssignment with its heap simulator, as buffer_assignment.h
 * describes).
 *
 * 1. Schedule and dataflow (one walk).  The entry is walked in instruction
 *    order; a while walks its condition then its body in place, a
 *    conditional walks its branches one after another, so every scheduled
 *    instruction gets a time on one global timeline.  Each instruction gets
 *    the value numbers of its leaves: forwarding instructions (tuple,
 *    get-tuple-element, bitcast, opt-barrier, add-dependency, nested
 *    parameters) take their operands'; every other instruction defines new
 *    ones.  Called computations of other instructions (fusion, reduce's
 *    to_apply, ...) are not scheduled: the instruction is one value.
 * 2. Liveness.  A value is live from the time of its definition to its last
 *    use by an instruction that reads it (forwarding is no use); a use
 *    inside a nested computation extends it there; a while's state lives
 *    through the whole instruction, and so does a conditional's result; a
 *    computation's root leaves live to the computation's
 *    end; entry results to the end of the program.
 * 3. Sharing (buffer_sharing.c).  Values that may hold one buffer in turn
 *    form a group: an operand that dies at an instruction that can write its
 *    result over it (elementwise at the same index, dynamic-update-slice),
 *    a while's initial value and its state, the body's new state and the
 *    state, a branch's result and the conditional's, a donated parameter
 *    and its aliased output.
 * 4. Allocation.  Entry parameter leaves and constants get their own
 *    allocations (in that order; a group goes with its parameter); every
 *    other group, the entry results' included, is a slice of one
 *    preallocated temp allocation (the last one), its live range the union
 *    of its members', placed by a global best fit (XLA's
 *    GlobalDecreasingSizeBestFitHeap) in the best of three orders (size,
 *    size x lifetime, start): 64-byte aligned (256 for a library call's
 *    workspace), never overlapping a group whose live range overlaps its
 *    own.  Live ranges are closed intervals, so an instruction's result
 *    never shares bytes with an operand that dies at that instruction
 *    unless they are one group.
 *
 * Value ids (in ba_print) are their creation order along the schedule.
 */
#include "ba_internal.h"

#include "../lib/hlo/backend_config.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN 64
#define WORKSPACE_ALIGN 256

/* ---- leaves ---------------------------------------------------------- */

/* The shape of leaf `leaf` of s, and its ShapeIndex (path, *depth entries). */
static const Shape *leaf_shape(const Shape *s, int leaf, int64_t *path,
                               int *depth) {
  *depth = 0;
  while (s->et == ET_TUPLE) {
    int k = 0;
    for (; k < s->ntuple; k++) {
      int n = shape_leaf_count(s->tuple[k]);
      if (leaf < n)
        break;
      leaf -= n;
    }
    if (k == s->ntuple)
      return NULL;
    if (path)
      path[*depth] = k;
    (*depth)++;
    s = s->tuple[k];
  }
  return s;
}

static int shape_depth(const Shape *s) {
  int d = 0;
  for (int k = 0; k < s->ntuple; k++) {
    int x = shape_depth(s->tuple[k]) + 1;
    if (x > d)
      d = x;
  }
  return d;
}

/* ---- dataflow and schedule -------------------------------------------- */

static int *leaves_of(BufferAssignment *ba, const HloInstr *i) {
  return ba_leaves_of(ba, i);
}

static bool set_leaves(BufferAssignment *ba, const HloInstr *i, int n,
                       int *vals) {
  if (i->id < 0 || i->id >= ba->nids)
    return diag_error(ba->d, i->loc, "buffer assignment: %s has id %d out "
                      "of range", i->name, i->id);
  ba->leafvals[i->id] = vals;
  ba->nleaves[i->id] = n;
  ba->time[i->id] = ba->at.len - 1;
  return true;
}

/* New values for every leaf of i's result. */
static int *define(BufferAssignment *ba, const HloInstr *i, int kind) {
  int n = shape_leaf_count(i->shape);
  int *v = ARENA_ARRAY(ba->ar, int, n);
  for (int k = 0; k < n; k++) {
    int depth;
    const Shape *s = leaf_shape(i->shape, k, NULL, &depth);
    if (s->et == ET_TOKEN) {
      v[k] = -1;
      continue;
    }
    if (!et_is_array(s->et)) {
      diag_error(ba->d, i->loc, "buffer assignment: %s has a %s leaf, which "
                 "has no buffer", i->name, et_name(s->et));
      return NULL;
    }
    int64_t size = shape_buffer_size(s);
    if (size < 0) {
      diag_error(ba->d, i->loc, "buffer assignment: %s is too large",
                 i->name);
      return NULL;
    }
    Value val = {.def = i, .leaf = k, .shape = s, .size = size, .kind = kind,
                 .start = ba->now, .end = ba->now, .alloc = -1,
                 .parent = ba->vals.len, .gparam = -1};
    v[k] = ba->vals.len;
    vec_push(&ba->vals, val);
  }
  return v;
}

static void use_value(BufferAssignment *ba, int v, int t) {
  if (v >= 0 && ba->vals.data[v].end < t)
    ba->vals.data[v].end = t;
}

static void use_all(BufferAssignment *ba, const HloInstr *i, int t) {
  int *v = leaves_of(ba, i);
  if (!v)
    return;
  for (int k = 0; k < ba->nleaves[i->id]; k++)
    use_value(ba, v[k], t);
}

static bool walk_comp(BufferAssignment *ba, const HloComp *c,
                      const HloInstr *caller, int *const *bind);

/* The values a nested computation's parameters stand for. */
static bool walk_nested(BufferAssignment *ba, const HloInstr *i,
                        const HloComp *c, int *vals, int nvals) {
  if (c->nparams != 1 || shape_leaf_count(c->params[0]->shape) != nvals)
    return diag_error(ba->d, i->loc, "buffer assignment: %s calls %s, which "
                      "does not take one parameter of the passed shape",
                      i->name, c->name);
  int *bind[1] = {vals};
  return walk_comp(ba, c, i, bind);
}

static bool walk_instr(BufferAssignment *ba, const HloInstr *i,
                       int *const *bind) {
  int t = ++ba->now;
  vec_push(&ba->at, i);
  bool forwards = false;          /* only names its operands' values */
  for (int k = 0; k < i->nops; k++)
    if (!leaves_of(ba, i->ops[k]))
      return diag_error(ba->d, i->loc, "buffer assignment: operand %s of %s "
                        "is not scheduled before it", i->ops[k]->name,
                        i->name);
  int n = shape_leaf_count(i->shape);
  int *v = NULL;
  switch (i->op) {
  case HLO_PARAMETER:
    if (bind) {
      if (i->param_number < 0 || i->param_number >= i->parent->nparams)
        return diag_error(ba->d, i->loc, "bad parameter number");
      v = bind[i->param_number];
    } else {
      v = define(ba, i, VK_PARAM);
    }
    break;
  case HLO_CONSTANT:
    v = define(ba, i, VK_CONST);
    break;
  case HLO_TUPLE: {
    v = ARENA_ARRAY(ba->ar, int, n);
    int at = 0;
    for (int k = 0; k < i->nops; k++) {
      int m = ba->nleaves[i->ops[k]->id];
      if (at + m > n)
        return diag_error(ba->d, i->loc, "buffer assignment: tuple %s does "
                          "not match its operands", i->name);
      memcpy(v + at, leaves_of(ba, i->ops[k]), (size_t)m * sizeof(int));
      at += m;
    }
    if (at != n)
      return diag_error(ba->d, i->loc, "buffer assignment: tuple %s does "
                        "not match its operands", i->name);
    forwards = true;
    break;
  }
  case HLO_GET_TUPLE_ELEMENT: {
    const Shape *ts = i->ops[0]->shape;
    if (ts->et != ET_TUPLE || i->tuple_index < 0 ||
        i->tuple_index >= ts->ntuple)
      return diag_error(ba->d, i->loc, "buffer assignment: bad tuple index");
    int at = 0;
    for (int k = 0; k < i->tuple_index; k++)
      at += shape_leaf_count(ts->tuple[k]);
    v = leaves_of(ba, i->ops[0]) + at;
    forwards = true;
    break;
  }
  case HLO_ALL_REDUCE_DONE:
  case HLO_ALL_GATHER_DONE:
  case HLO_COLLECTIVE_PERMUTE_DONE: {
    /* the -start's result leaves: no buffer of its own, no copy */
    const HloInstr *s = i->ops[0];
    int first = hlo_async_done_first_leaf(s, i);
    if (first >= 0 && first + n <= ba->nleaves[s->id])
      v = leaves_of(ba, s) + first;
    else
      v = define(ba, i, VK_TEMP);
    break;
  }
  case HLO_BITCAST:
  case HLO_OPTIMIZATION_BARRIER:
  case HLO_ADD_DEPENDENCY:
    if (ba->nleaves[i->ops[0]->id] == n) {
      v = leaves_of(ba, i->ops[0]);
      forwards = true;
    } else {
      v = define(ba, i, VK_TEMP);
    }
    break;
  case HLO_WHILE: {
    if (i->ncalled != 2 || i->nops != 1)
      return diag_error(ba->d, i->loc, "buffer assignment: malformed while");
    v = define(ba, i, VK_TEMP);
    if (!v)
      return false;
    use_all(ba, i->ops[0], t);
    if (!set_leaves(ba, i, n, v) || !walk_nested(ba, i, i->called[0], v, n) ||
        !walk_nested(ba, i, i->called[1], v, n))
      return false;
    LoopRec lr = {.w = i, .t = t, .nleaves = n,
                  .last_use = ARENA_ARRAY(ba->ar, int, n ? n : 1)};
    for (int k = 0; k < n; k++) {
      lr.last_use[k] = v[k] >= 0 ? ba->vals.data[v[k]].end : t;
      use_value(ba, v[k], ba->now);
    }
    vec_push(&ba->loops, lr);
    return true;
  }
  case HLO_CONDITIONAL: {
    if (i->ncalled < 1 || i->nops != i->ncalled + 1)
      return diag_error(ba->d, i->loc, "buffer assignment: malformed "
                        "conditional");
    v = define(ba, i, VK_TEMP);
    if (!v)
      return false;
    for (int k = 0; k < i->nops; k++)
      use_all(ba, i->ops[k], t);
    if (!set_leaves(ba, i, n, v))
      return false;
    CondRec cr = {.c = i, .bstart = ARENA_ARRAY(ba->ar, int, i->ncalled),
                  .bend = ARENA_ARRAY(ba->ar, int, i->ncalled)};
    for (int k = 0; k < i->ncalled; k++) {
      const HloInstr *arg = i->ops[k + 1];
      cr.bstart[k] = ba->now + 1;
      if (!walk_nested(ba, i, i->called[k], leaves_of(ba, arg),
                       ba->nleaves[arg->id]))
        return false;
      cr.bend[k] = ba->now;
    }
    for (int k = 0; k < n; k++)
      use_value(ba, v[k], ba->now);
    vec_push(&ba->conds, cr);
    return true;
  }
  case HLO_CALL:
  case HLO_ASYNC_START:
  case HLO_ASYNC_UPDATE:
  case HLO_ASYNC_DONE:
    return diag_error(ba->d, i->loc, "buffer assignment does not support %s "
                      "(%s); inline or unwrap it first", hlo_op_name(i->op),
                      i->name);
  default:
    v = define(ba, i, VK_TEMP);
    break;
  }
  if (!v)
    return ba->d->has_error ? false
                            : diag_error(ba->d, i->loc, "buffer assignment: "
                                         "no values for %s", i->name);
  if (!forwards)
    for (int k = 0; k < i->nops; k++)
      use_all(ba, i->ops[k], t);
  return set_leaves(ba, i, n, v);
}

static bool walk_comp(BufferAssignment *ba, const HloComp *c,
                      const HloInstr *caller, int *const *bind) {
  if (hashmap_get(&ba->scheduled, c->name))
    return diag_error(ba->d, caller ? caller->loc : c->loc,
                      "buffer assignment: computation %s is called from more "
                      "than one place (run flatten-call-graph)", c->name);
  hashmap_put(&ba->scheduled, c->name, (void *)c);
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->parent && !walk_instr(ba, c->instrs[k], bind))
      return false;
  if (!c->root)
    return diag_error(ba->d, c->loc, "computation %s has no root", c->name);
  use_all(ba, c->root, ba->now);
  return true;
}

/* ---- allocation -------------------------------------------------------- */

static int new_alloc(BufferAssignment *ba, int64_t size, unsigned flags) {
  BufAlloc al = {.size = size, .flags = flags};
  vec_push(&ba->allocs, al);
  return ba->allocs.len - 1;
}

/* A group placed in the temp allocation (its root value). */
typedef struct TempGroup {
  int root;
  int start, end;                 /* the group's live range */
  int64_t size;
  int64_t align;
  int64_t offset;                 /* where the packing put it */
} TempGroup;

/* The orders the packing tries (XLA's heap simulator also keeps the best
 * of several): larger first, longer-lived larger first (area), and
 * earlier first. */
static int cmp_size(const TempGroup *x, const TempGroup *y) {
  if (x->size != y->size)
    return x->size > y->size ? -1 : 1;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return x->root - y->root;
}

static int cmp_area(const TempGroup *x, const TempGroup *y) {
  double ax = (double)x->size * ((double)x->end - x->start + 1);
  double ay = (double)y->size * ((double)y->end - y->start + 1);
  if (ax != ay)
    return ax > ay ? -1 : 1;
  return cmp_size(x, y);
}

static int cmp_start(const TempGroup *x, const TempGroup *y) {
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return cmp_size(x, y);
}

static int (*const pack_orders[])(const TempGroup *, const TempGroup *) = {
    cmp_size, cmp_area, cmp_start};
static int (*pack_cmp)(const TempGroup *, const TempGroup *);

static int cmp_temp(const void *pa, const void *pb) {
  return pack_cmp(*(TempGroup *const *)pa, *(TempGroup *const *)pb);
}

typedef struct Span {
  int64_t lo, hi;
} Span;

static int cmp_span(const void *pa, const void *pb) {
  const Span *a = pa, *b = pb;
  return a->lo < b->lo ? -1 : a->lo > b->lo ? 1 : 0;
}

static int64_t align_to(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

typedef struct Event {
  int t;
  int64_t delta;
} Event;

static int cmp_event(const void *pa, const void *pb) {
  const Event *a = pa, *b = pb;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  /* A free at t is of a value whose range ended at t - 1: frees first. */
  return (b->delta < 0) - (a->delta < 0);
}

/* The workspace of a library call (the second leaf of its result, cuBLAS
 * and cuDNN scratch): an ordinary temp, live while its call runs, aligned
 * for the library. */
static bool is_workspace(const Value *v) {
  return v->kind == VK_TEMP && !v->output && v->leaf >= 1 && v->size > 0 &&
         libcall_target(v->def) != LIBCALL_NONE;
}

/* The offset for a group of `size` bytes among the placed groups whose
 * ranges overlap its own (spans, sorted): the smallest gap that holds it
 * (lowest offset on a tie), else the end of the highest span. */
static int64_t best_fit(const Span *spans, int ns, int64_t size,
                        int64_t align) {
  int64_t cursor = 0, best = -1, best_gap = 0;
  for (int j = 0; j < ns; j++) {
    int64_t at = align_to(cursor, align);
    if (spans[j].lo > at && spans[j].lo - at >= size) {
      int64_t gap = spans[j].lo - at;
      if (best < 0 || gap < best_gap) {
        best = at;
        best_gap = gap;
      }
    }
    if (spans[j].hi > cursor)
      cursor = spans[j].hi;
  }
  return best >= 0 ? best : align_to(cursor, align);
}

/* Places the groups in the order cmp gives, each at its best fit among
 * those placed before it that overlap it in time; returns the size. */
static int64_t pack(TempGroup *gs, int n,
                    int (*cmp)(const TempGroup *, const TempGroup *),
                    TempGroup **order, Span *spans) {
  for (int k = 0; k < n; k++)
    order[k] = &gs[k];
  pack_cmp = cmp;
  qsort(order, (size_t)n, sizeof *order, cmp_temp);
  int64_t total = 0;
  for (int k = 0; k < n; k++) {
    TempGroup *g = order[k];
    g->offset = 0;
    if (g->size == 0)
      continue;
    int ns = 0;
    for (int j = 0; j < k; j++) {
      const TempGroup *h = order[j];
      if (h->size > 0 && g->start <= h->end && h->start <= g->end)
        spans[ns++] = (Span){h->offset, h->offset + h->size};
    }
    qsort(spans, (size_t)ns, sizeof *spans, cmp_span);
    g->offset = best_fit(spans, ns, g->size, g->align);
    if (g->offset + g->size > total)
      total = g->offset + g->size;
  }
  return total;
}

/* Every group without an allocation: slices of one temp allocation, by a
 * global best fit over their live ranges, the smallest of the orders
 * tried. */
static void place_temps(BufferAssignment *ba) {
  Value *vals = ba->vals.data;
  Vec(TempGroup) gs = {0};
  for (int k = 0; k < ba->vals.len; k++) {
    Value *v = &vals[k];
    if (v->parent != k || v->alloc >= 0)
      continue;
    TempGroup g = {.root = k, .start = v->gstart, .end = v->gend,
                   .align = ALIGN};
    vec_push(&gs, g);
  }
  if (gs.len == 0)
    return;
  /* sizes and alignments from the members */
  int *slot = xcalloc((size_t)ba->vals.len, sizeof *slot);
  for (int j = 0; j < gs.len; j++)
    slot[gs.data[j].root] = j + 1;
  for (int k = 0; k < ba->vals.len; k++) {
    int j = slot[vals[k].parent] - 1;
    if (j < 0)
      continue;
    TempGroup *g = &gs.data[j];
    if (vals[k].size > g->size)
      g->size = vals[k].size;
    if (is_workspace(&vals[k]))
      g->align = WORKSPACE_ALIGN;
  }
  free(slot);
  int n = gs.len;
  TempGroup **order = xcalloc((size_t)n, sizeof *order);
  Span *spans = xcalloc((size_t)n, sizeof *spans);
  int64_t *best = xcalloc((size_t)n, sizeof *best);
  int64_t total = -1;
  for (size_t o = 0; o < sizeof pack_orders / sizeof *pack_orders; o++) {
    int64_t t = pack(gs.data, n, pack_orders[o], order, spans);
    if (total < 0 || t < total) {
      total = t;
      for (int k = 0; k < n; k++)
        best[k] = gs.data[k].offset;
    }
  }
  int alloc = new_alloc(ba, total, ALLOC_TEMP);
  for (int k = 0; k < n; k++) {
    vals[gs.data[k].root].alloc = alloc;
    vals[gs.data[k].root].offset = best[k];
  }
  /* The peak of live temp bytes (for the fragmentation statistic). */
  Event *ev = xcalloc((size_t)n * 2, sizeof *ev);
  for (int k = 0; k < n; k++) {
    const TempGroup *g = &gs.data[k];
    ev[2 * k] = (Event){g->start, g->size};
    ev[2 * k + 1] = (Event){g->end == INT_MAX ? INT_MAX : g->end + 1,
                            -g->size};
  }
  qsort(ev, (size_t)n * 2, sizeof *ev, cmp_event);
  int64_t live = 0;
  for (int k = 0; k < 2 * n; k++) {
    live += ev[k].delta;
    if (live > ba->peak_temp)
      ba->peak_temp = live;
  }
  free(ev);
  free(best);
  free(spans);
  free(order);
  vec_free(&gs);
}

static char *shape_text(Arena *ar, const Shape *s) {
  char *t = shape_to_string(s, true);
  char *r = arena_strdup(ar, t);
  free(t);
  return r;
}

/* The leaf number of ShapeIndex idx in s, -1 when it names no leaf. */
static int leaf_at(const Shape *s, const I64List *idx) {
  int leaf = 0;
  for (int d = 0; d < idx->n; d++) {
    if (s->et != ET_TUPLE || idx->v[d] < 0 || idx->v[d] >= s->ntuple)
      return -1;
    for (int k = 0; k < idx->v[d]; k++)
      leaf += shape_leaf_count(s->tuple[k]);
    s = s->tuple[idx->v[d]];
  }
  return s->et == ET_TUPLE ? -1 : leaf;
}

/* Entry results live to the end; parameters an output aliases are
 * donated (buffer_sharing.c may put that output's group in them). */
static void mark_entry_values(BufferAssignment *ba) {
  const HloComp *entry = ba->m->entry;
  Value *vals = ba->vals.data;
  int *rv = leaves_of(ba, entry->root);
  for (int k = 0; rv && k < ba->nleaves[entry->root->id]; k++) {
    if (rv[k] < 0)
      continue;
    vals[rv[k]].end = END_OF_PROGRAM;
    if (vals[rv[k]].kind == VK_TEMP)
      vals[rv[k]].output = true;
  }
  for (int a = 0; a < ba->m->nio_alias; a++) {
    const AliasEntry *al = &ba->m->io_alias[a];
    if (al->operand < 0 || al->operand >= entry->nparams)
      continue;
    const HloInstr *pi = entry->params[al->operand];
    int *pv = leaves_of(ba, pi);
    int leaf = leaf_at(pi->shape, &al->operand_index);
    if (pv && leaf >= 0 && leaf < ba->nleaves[pi->id] && pv[leaf] >= 0 &&
        vals[pv[leaf]].kind == VK_PARAM)
      vals[pv[leaf]].donated = true;
  }
}

static void assign(BufferAssignment *ba) {
  const HloComp *entry = ba->m->entry;
  mark_entry_values(ba);
  ba_share_buffers(ba);
  Value *vals = ba->vals.data;
  /* Entry parameters, leaf by leaf (with the groups that use them). */
  for (int p = 0; p < entry->nparams; p++) {
    const HloInstr *pi = entry->params[p];
    int *v = leaves_of(ba, pi);
    if (!v)
      continue;
    char *pshape = shape_text(ba->ar, pi->shape);
    for (int k = 0; k < ba->nleaves[pi->id]; k++) {
      if (v[k] < 0 || vals[v[k]].alloc >= 0)
        continue;
      int a = new_alloc(ba, vals[v[k]].size, ALLOC_PARAMETER);
      BufAlloc *al = &ba->allocs.data[a];
      al->param_number = pi->param_number;
      int depth = shape_depth(pi->shape);
      al->param_index = ARENA_ARRAY(ba->ar, int64_t, depth ? depth : 1);
      leaf_shape(pi->shape, k, al->param_index, &al->nparam_index);
      al->param_shape = pshape;
      vals[v[k]].alloc = a;
      vals[vals[v[k]].parent].alloc = a;
    }
  }
  /* Constants, in schedule order; identical array constants (shape,
   * layout and bytes: inlined or unrolled copies of one function) share
   * one allocation, as nothing writes a constant. */
  HashMap same = {0};
  for (int k = 0; k < ba->vals.len; k++) {
    if (vals[k].kind != VK_CONST)
      continue;
    const Literal *l = vals[k].def->literal;
    bool plain = l && !l->elided && l->data && !l->ntuple &&
                 shape_is_array(vals[k].def->shape) && vals[k].size > 0;
    if (!plain) {
      vals[k].alloc = new_alloc(ba, vals[k].size, ALLOC_CONSTANT);
      continue;
    }
    uint64_t h = 1469598103934665603ull;
    for (int64_t j = 0; j < vals[k].size; j++)
      h = (h ^ l->data[j]) * 1099511628211ull;
    char *sh = shape_to_string(vals[k].shape, true);
    StrBuf key;
    sb_init(&key);
    sb_printf(&key, "%s|%016llx", sh, (unsigned long long)h);
    free(sh);
    Value *twin = hashmap_get(&same, key.s);
    if (twin && shape_equal(twin->shape, vals[k].shape) &&
        literal_equal(twin->def->literal, l)) {
      vals[k].alloc = twin->alloc;
    } else {
      vals[k].alloc = new_alloc(ba, vals[k].size, ALLOC_CONSTANT);
      if (!twin)
        hashmap_put(&same, arena_strdup(ba->ar, key.s), &vals[k]);
    }
    sb_free(&key);
  }
  hashmap_free(&same);
  /* Entry results: one in a parameter or constant allocation makes it
   * live-out; the others are packed with the temps, live from their
   * definition to the end (xhlo-run reads every result from its slice, so
   * a result needs no allocation of its own: what XLA gives its callers'
   * buffers costs here only the result's live range). */
  int *rv = leaves_of(ba, entry->root);
  bool packed_outputs = false;
  for (int k = 0; rv && k < ba->nleaves[entry->root->id]; k++) {
    if (rv[k] < 0)
      continue;
    Value *v = &vals[rv[k]];
    Value *g = &vals[v->parent];
    if (v->kind != VK_TEMP || g->alloc >= 0) {
      int a = v->kind != VK_TEMP ? v->alloc : g->alloc;
      ba->allocs.data[a].flags |= ALLOC_MAYBE_LIVE_OUT;
      continue;
    }
    packed_outputs = true;
  }
  place_temps(ba);
  if (packed_outputs)
    for (int a = 0; a < ba->allocs.len; a++)
      if (ba->allocs.data[a].flags & ALLOC_TEMP)
        ba->allocs.data[a].flags |= ALLOC_MAYBE_LIVE_OUT;
  /* Every member where its group is. */
  for (int k = 0; k < ba->vals.len; k++) {
    const Value *g = &vals[vals[k].parent];
    vals[k].alloc = g->alloc;
    vals[k].offset = g->offset;
  }
}

BufferAssignment *buffer_assign(const HloModule *m, Diag *d) {
  if (!m->entry)
    return diag_error(d, m->loc, "module has no entry computation"), NULL;
  BufferAssignment *ba = xcalloc(1, sizeof *ba);
  ba->m = m;
  ba->d = d;
  ba->ar = arena_new();
  int maxid = m->next_id;
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++)
      if (m->comps[c]->instrs[k]->id >= maxid)
        maxid = m->comps[c]->instrs[k]->id + 1;
  ba->nids = maxid;
  ba->leafvals = ARENA_ARRAY(ba->ar, int *, maxid ? maxid : 1);
  ba->nleaves = ARENA_ARRAY(ba->ar, int, maxid ? maxid : 1);
  ba->time = ARENA_ARRAY(ba->ar, int, maxid ? maxid : 1);
  vec_push(&ba->at, NULL);        /* times start at 1 */
  if (!walk_comp(ba, m->entry, NULL, NULL)) {
    buffer_assignment_free(ba);
    return NULL;
  }
  assign(ba);
  return ba;
}

void buffer_assignment_free(BufferAssignment *ba) {
  if (!ba)
    return;
  vec_free(&ba->vals);
  vec_free(&ba->allocs);
  vec_free(&ba->at);
  vec_free(&ba->loops);
  vec_free(&ba->conds);
  hashmap_free(&ba->scheduled);
  arena_free(ba->ar);
  free(ba);
}

int ba_num_allocs(const BufferAssignment *ba) { return ba->allocs.len; }

const BufAlloc *ba_alloc(const BufferAssignment *ba, int k) {
  return k >= 0 && k < ba->allocs.len ? &ba->allocs.data[k] : NULL;
}

int ba_time_of(const BufferAssignment *ba, const HloInstr *i) {
  if (i->id < 0 || i->id >= ba->nids || !ba->leafvals[i->id])
    return -1;
  return ba->time[i->id];
}

bool ba_live_range(const BufferAssignment *ba, const HloInstr *i, int leaf,
                   int *start, int *end, int64_t *size, bool *fixed) {
  if (i->id < 0 || i->id >= ba->nids || !ba->leafvals[i->id] || leaf < 0 ||
      leaf >= ba->nleaves[i->id] || ba->leafvals[i->id][leaf] < 0)
    return false;
  const Value *v = &ba->vals.data[ba->leafvals[i->id][leaf]];
  const Value *g = &ba->vals.data[v->parent];
  *start = v->start;
  *end = v->end;
  *size = v->size;
  *fixed = g->alloc >= 0 && (ba->allocs.data[g->alloc].flags &
                             (ALLOC_PARAMETER | ALLOC_CONSTANT)) != 0;
  return true;
}

int64_t ba_total_bytes(const BufferAssignment *ba) {
  int64_t total = 0;
  for (int a = 0; a < ba->allocs.len; a++)
    total += ba->allocs.data[a].size;
  return total;
}

bool ba_slice(const BufferAssignment *ba, const HloInstr *i, int leaf,
              BufSlice *out) {
  if (i->id < 0 || i->id >= ba->nids || !ba->leafvals[i->id] || leaf < 0 ||
      leaf >= ba->nleaves[i->id])
    return false;
  int v = ba->leafvals[i->id][leaf];
  if (v < 0)
    return false;
  const Value *val = &ba->vals.data[v];
  *out = (BufSlice){val->alloc, val->offset, val->size};
  return true;
}

/* The members of a group hold the same slice and may overlap in time (the
 * sharing rules made them take turns); values of different groups in one
 * allocation may not share bytes while both groups are live, except
 * identical constants, which share their allocation. */
bool ba_verify(const BufferAssignment *ba, Diag *d) {
  const Value *vals = ba->vals.data;
  for (int a = 0; a < ba->vals.len; a++) {
    const Value *x = &vals[a];
    if (x->alloc < 0 || x->alloc >= ba->allocs.len)
      return diag_error(d, x->def->loc, "value %d (%s) has no allocation", a,
                        x->def->name);
    if (x->offset < 0 || x->offset + x->size > ba->allocs.data[x->alloc].size)
      return diag_error(d, x->def->loc, "value %d (%s) is outside its "
                        "allocation", a, x->def->name);
    const Value *gx = &vals[x->parent];
    if (x->alloc != gx->alloc || x->offset != gx->offset)
      return diag_error(d, x->def->loc, "value %d (%s) is not where its "
                        "group is", a, x->def->name);
    for (int b = a + 1; b < ba->vals.len; b++) {
      const Value *y = &vals[b];
      if (y->alloc != x->alloc || x->size == 0 || y->size == 0 ||
          y->parent == x->parent ||
          (ba->allocs.data[x->alloc].flags & ALLOC_CONSTANT))
        continue;
      const Value *gy = &vals[y->parent];
      if (gx->gstart > gy->gend || gy->gstart > gx->gend)
        continue;
      if (x->offset < y->offset + y->size && y->offset < x->offset + x->size)
        return diag_error(d, x->def->loc, "values %d (%s) and %d (%s) are "
                          "live at once and share bytes", a, x->def->name, b,
                          y->def->name);
    }
  }
  return true;
}

/* ---- text ------------------------------------------------------------- */

/* XLA's HumanReadableNumBytes, right-aligned in 10 columns. */
void ba_put_bytes(StrBuf *b, int64_t n) {
  char buf[32];
  if (n < 1024) {
    snprintf(buf, sizeof buf, "%lldB", (long long)n);
  } else {
    static const char units[] = "KMGTPE";
    const char *u = units;
    while (n >= 1024 * 1024) {
      n /= 1024;
      u++;
    }
    snprintf(buf, sizeof buf, *u == 'K' ? "%.1f%ciB" : "%.2f%ciB",
             (double)n / 1024.0, *u);
  }
  sb_printf(b, "%10s", buf);
}

static void put_index(StrBuf *b, const int64_t *path, int n) {
  sb_putc(b, '{');
  for (int k = 0; k < n; k++)
    sb_printf(b, "%s%lld", k ? "," : "", (long long)path[k]);
  sb_putc(b, '}');
}

static void put_value(StrBuf *b, const Value *v, int id) {
  sb_printf(b, " value: <%d %s", id, v->def->name);
  if (v->def->shape->et == ET_TUPLE) {
    int64_t path[64];
    int depth = 0;
    if (shape_depth(v->def->shape) <= 64)
      leaf_shape(v->def->shape, v->leaf, path, &depth);
    put_index(b, path, depth);
  }
  sb_printf(b, "> (size=%lld,offset=%lld): ", (long long)v->size,
            (long long)v->offset);
  shape_print(b, v->shape, true);
  sb_putc(b, '\n');
}

static void put_stat(StrBuf *b, const char *label, int64_t n) {
  sb_printf(b, "%33s: ", label);
  ba_put_bytes(b, n);
  sb_putc(b, '\n');
}

static void put_frag(StrBuf *b, const char *label, int64_t frag,
                     int64_t total) {
  sb_printf(b, "%33s: ", label);
  ba_put_bytes(b, frag);
  /* XLA divides by zero here (nan); an empty allocation is 0% fragmented. */
  sb_printf(b, " (%.2f%%)\n", total > 0 ? 100.0 * (double)frag / (double)total
                                        : 0.0);
}

void ba_print(StrBuf *b, const BufferAssignment *ba) {
  const HloInstr *root = ba->m->entry->root;
  int64_t param = 0, cnst = 0, live_out = 0, temp = 0, total = 0;
  sb_puts(b, "BufferAssignment:\n");
  for (int a = 0; a < ba->allocs.len; a++) {
    const BufAlloc *al = &ba->allocs.data[a];
    sb_printf(b, "allocation %d: size %lld", a, (long long)al->size);
    if (al->flags & ALLOC_PARAMETER) {
      const HloInstr *p = ba->m->entry->params[al->param_number];
      sb_printf(b, ", parameter %lld, shape |", (long long)al->param_number);
      shape_print(b, p->shape, false);
      sb_puts(b, "| at ShapeIndex ");
      put_index(b, al->param_index, al->nparam_index);
      param += al->size;
    }
    /* XLA names the output shape where the root itself (ShapeIndex {}) is
     * in the allocation: a non-tuple root. */
    if (root->shape->et != ET_TUPLE) {
      BufSlice s;
      if (ba_slice(ba, root, 0, &s) && s.alloc == a) {
        sb_puts(b, ", output shape is |");
        shape_print(b, root->shape, false);
        sb_putc(b, '|');
      }
    }
    if (al->flags & ALLOC_CONSTANT) {
      sb_puts(b, ", constant");
      cnst += al->size;
    }
    if (al->flags & ALLOC_THREAD_LOCAL)
      sb_puts(b, ", thread-local");
    if (al->flags & ALLOC_MAYBE_LIVE_OUT) {
      sb_puts(b, ", maybe-live-out");
      live_out += al->size;
    }
    if (al->flags & ALLOC_TEMP) {
      sb_puts(b, ", preallocated-temp");
      temp += al->size;
    }
    sb_puts(b, ":\n");
    total += al->size;
    for (int k = 0; k < ba->vals.len; k++)
      if (ba->vals.data[k].alloc == a)
        put_value(b, &ba->vals.data[k], k);
  }
  sb_printf(b, "\nTotal bytes used: %lld (", (long long)total);
  {
    StrBuf h;
    sb_init(&h);
    ba_put_bytes(&h, total);
    const char *s = h.s;
    while (*s == ' ')
      s++;
    sb_puts(b, s);
    sb_free(&h);
  }
  sb_puts(b, ")\n\nBufferAssignment stats:\n");
  put_stat(b, "parameter allocation", param);
  put_stat(b, "constant allocation", cnst);
  put_stat(b, "maybe_live_out allocation", live_out);
  put_stat(b, "preallocated temp allocation", temp);
  put_frag(b, "preallocated temp fragmentation", temp - ba->peak_temp, temp);
  put_stat(b, "total allocation", total);
  /* Every allocation but the temp one holds exactly its values, so the
   * module's fragmentation is the temp allocation's. */
  put_frag(b, "total fragmentation", temp - ba->peak_temp, total);
}
