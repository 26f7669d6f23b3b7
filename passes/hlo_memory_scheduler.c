/*
 * hlo_memory_scheduler.c - "hlo-memory-scheduler": the instruction order of
 * each computation (its schedule: buffer assignment and the thunk emitter
 * follow it) chosen to keep few bytes live at once, as XLA's
 * DefaultMemoryScheduler does: of three candidate orders, the one whose
 * simulated peak is the smallest.
 *
 *   list      XLA's ListScheduler: greedy over the ready instructions,
 *             taking the one that frees the most bytes (the operand buffers
 *             it is the last unscheduled user of) minus the bytes it leaves
 *             live (what it defines and something uses, and the peak of the
 *             computations it runs), ties by the old order;
 *   dfs       XLA's DFSMemoryScheduler: a post-order DFS from the root whose
 *             operands are visited by decreasing "extra users" (users - 1,
 *             summed over everything the operand depends on), then
 *             decreasing cumulative bytes (the same sum of defined bytes),
 *             then name;
 *   postorder a plain DFS post order from the instructions nobody uses,
 *             operands in order (XLA's MakeInstructionPostOrder).
 *
 * The existing order is a fourth candidate.  Equal peaks go to the order
 * with the smaller sum of live bytes over its steps (less to pack), then to
 * the existing order, so a module whose order is already as good is left as
 * it is.
 *
 * The liveness model is buffer assignment's (buffer_assignment.h), as far
 * as the order decides it.  A value is an array leaf of an instruction's
 * result, shape_buffer_size bytes rounded up to the 64-byte alignment.
 * tuple, get-tuple-element, bitcast, optimization-barrier, add-dependency
 * and the collective -dones define nothing: they forward their operand's
 * values and are no use of them, so a value lives from its definition to
 * its last real use (through any chain of forwarding), and to the end when
 * the root forwards it.  What has an allocation of its own whatever the
 * order is not counted: parameters, constants and the entry's results (XLA
 * counts the results; here they never share the temp allocation the order
 * packs).  An instruction's operands and results are live together while it
 * runs (a library call's workspace too), and a while, conditional or call
 * adds the peak of the computations it runs (the largest: they do not run
 * at once), which are scheduled first (callees before callers).  Results
 * written in place over a dying operand (buffer_sharing.c) are counted as
 * new bytes: the model may overstate a peak, never understate one.
 *
 * The dependences are operands, control predecessors, and the order of the
 * instructions with side effects (kept as it was).  Scheduled: the entry
 * and what while, conditional and call run from it; never fusion or
 * reducer computations.  Each candidate costs O(E log E) in the edges and
 * value uses.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

/* One computation's dependence graph and values.  Nodes are the live
 * instructions in their existing order; arrays named *start are CSR
 * offsets (n + 1 or nvals + 1 entries). */
typedef struct Graph {
  const HloComp *c;
  int n;
  HloInstr **ins;                 /* node -> instruction */
  int root;                       /* node of c->root */
  int *pstart, *pred;             /* distinct predecessors: the operands in
                                     operand order, then the others */
  int *nopred;                    /* how many of them are operands */
  int *sstart, *succ;             /* successors */
  int *nusers;                    /* distinct users through operands */
  int nvals;
  int64_t *vsize;                 /* value -> bytes */
  bool *liveout;                  /* the root forwards it */
  int *dstart;                    /* node j defines dstart[j] .. [j+1]-1 */
  int *ustart, *uses;             /* values node j uses, distinct */
  int *vstart, *vusers;           /* nodes using value v */
  int64_t *defbytes;              /* bytes node j defines */
  int64_t *keepbytes;             /* of those, what outlives j (used or
                                     a result) */
  int64_t *nested;                /* peak of what node j runs */
} Graph;

/* Buffer assignment's alignment: what a value takes in practice. */
#define ALIGN 64

typedef Vec(int) IntVec;
typedef Vec(int64_t) SizeVec;

/* Appends the values of s's leaves (-1 for a leaf without a buffer). */
static void define_leaves(const Shape *s, IntVec *pool, SizeVec *sizes) {
  if (s->et == ET_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      define_leaves(s->tuple[k], pool, sizes);
    return;
  }
  if (!et_is_array(s->et)) {
    vec_push(pool, -1);
    return;
  }
  int64_t size = shape_buffer_size(s);
  vec_push(pool, sizes->len);
  vec_push(sizes, size > 0 ? (size + ALIGN - 1) / ALIGN * ALIGN : 0);
}

static void no_leaves(const Shape *s, IntVec *pool) {
  for (int k = shape_leaf_count(s); k > 0; k--)
    vec_push(pool, -1);
}

/* A CSR array from (from, to) pairs: out[start[from] ..] lists the `to`s
 * of each `from` in pair order. */
static void csr(int nfrom, int npairs, const int *from, const int *to,
                int **start, int **out) {
  int *s = xcalloc((size_t)nfrom + 1, sizeof *s);
  int *o = xmalloc(sizeof *o * ((size_t)npairs + 1));
  for (int k = 0; k < npairs; k++)
    s[from[k] + 1]++;
  for (int k = 0; k < nfrom; k++)
    s[k + 1] += s[k];
  int *at = xmalloc(sizeof *at * ((size_t)nfrom + 1));
  memcpy(at, s, sizeof *at * (size_t)nfrom);
  for (int k = 0; k < npairs; k++)
    o[at[from[k]]++] = to[k];
  free(at);
  *start = s;
  *out = o;
}

/* The nested peak of instruction i: the largest of its while, conditional
 * or call computations' (peaks by index in `comps`, found by name). */
static int64_t nested_peak(const HloInstr *i, const HashMap *index,
                           const int64_t *peaks) {
  if (i->op != HLO_WHILE && i->op != HLO_CONDITIONAL && i->op != HLO_CALL)
    return 0;
  int64_t best = 0;
  for (int k = 0; k < i->ncalled; k++) {
    intptr_t at = (intptr_t)hashmap_get(index, i->called[k]->name);
    if (at > 0 && peaks[at - 1] > best)
      best = peaks[at - 1];
  }
  return best;
}

static void build(Graph *g, const HloComp *c, const HashMap *index,
                  const int64_t *peaks) {
  memset(g, 0, sizeof *g);
  g->c = c;
  int n = 0, lo = INT32_MAX, hi = -1;
  for (int k = 0; k < c->ninstrs; k++) {
    const HloInstr *i = c->instrs[k];
    if (ir_removed(i))
      continue;
    n++;
    lo = i->id < lo ? i->id : lo;
    hi = i->id > hi ? i->id : hi;
  }
  g->n = n;
  g->root = -1;
  if (n == 0)
    return;
  g->ins = xmalloc(sizeof *g->ins * (size_t)n);
  int *at = xmalloc(sizeof *at * ((size_t)(hi - lo) + 1));
  for (int k = 0; k <= hi - lo; k++)
    at[k] = -1;
  for (int k = 0, j = 0; k < c->ninstrs; k++)
    if (!ir_removed(c->instrs[k])) {
      g->ins[j] = c->instrs[k];
      at[c->instrs[k]->id - lo] = j++;
    }
#define NODE(x) ((x)->parent == c && (x)->id >= lo && (x)->id <= hi           \
                     ? at[(x)->id - lo] : -1)

  /* 1. Values: each node's leaves, forwarded or defined. */
  IntVec pool = {0};
  SizeVec sizes = {0};
  int *loff = xmalloc(sizeof *loff * (size_t)n);
  int *lcnt = xmalloc(sizeof *lcnt * (size_t)n);
  bool *fwd = xcalloc((size_t)n, sizeof *fwd);
  g->dstart = xmalloc(sizeof *g->dstart * ((size_t)n + 1));
  for (int j = 0; j < n; j++) {
    HloInstr *i = g->ins[j];
    int nl = shape_leaf_count(i->shape);
    int o = i->nops > 0 ? NODE(i->ops[0]) : -1;
    int first = -1;               /* forwarded: where in the pool */
    g->dstart[j] = sizes.len;
    switch (i->op) {
    case HLO_PARAMETER:
    case HLO_CONSTANT:
      loff[j] = pool.len;
      no_leaves(i->shape, &pool);
      lcnt[j] = nl;
      continue;
    case HLO_TUPLE: {
      int total = 0;
      bool ok = true;
      for (int k = 0; k < i->nops && ok; k++) {
        int p = NODE(i->ops[k]);
        ok = p >= 0;
        total += ok ? lcnt[p] : 0;
      }
      if (!ok || total != nl)
        break;
      loff[j] = pool.len;
      lcnt[j] = nl;
      for (int k = 0; k < i->nops; k++) {
        int p = NODE(i->ops[k]);
        vec_grow(&pool, lcnt[p]);
        for (int q = 0; q < lcnt[p]; q++)
          pool.data[pool.len++] = pool.data[loff[p] + q];
      }
      fwd[j] = true;
      continue;
    }
    case HLO_GET_TUPLE_ELEMENT: {
      const Shape *ts = i->ops[0]->shape;
      if (o < 0 || ts->et != ET_TUPLE || i->tuple_index < 0 ||
          i->tuple_index >= ts->ntuple)
        break;
      int skip = 0;
      for (int k = 0; k < i->tuple_index; k++)
        skip += shape_leaf_count(ts->tuple[k]);
      if (skip + nl <= lcnt[o])
        first = loff[o] + skip;
      break;
    }
    case HLO_ALL_REDUCE_DONE:
    case HLO_ALL_GATHER_DONE:
    case HLO_COLLECTIVE_PERMUTE_DONE: {
      int f = o >= 0 ? hlo_async_done_first_leaf(i->ops[0], i) : -1;
      if (f >= 0 && f + nl <= lcnt[o])
        first = loff[o] + f;
      break;
    }
    case HLO_BITCAST:
    case HLO_OPTIMIZATION_BARRIER:
    case HLO_ADD_DEPENDENCY:
      if (o >= 0 && lcnt[o] == nl)
        first = loff[o];
      break;
    default:
      break;
    }
    if (first >= 0) {
      loff[j] = first;
      lcnt[j] = nl;
      fwd[j] = true;
      continue;
    }
    loff[j] = pool.len;
    define_leaves(i->shape, &pool, &sizes);
    lcnt[j] = pool.len - loff[j];
  }
  g->dstart[n] = sizes.len;
  g->nvals = sizes.len;
  g->vsize = sizes.data ? sizes.data : xcalloc(1, sizeof *g->vsize);
  g->liveout = xcalloc((size_t)g->nvals + 1, sizeof *g->liveout);
  g->root = c->root ? NODE(c->root) : -1;
  /* the entry's results have allocations of their own: not counted */
  for (int q = 0; g->root >= 0 && q < lcnt[g->root]; q++) {
    int v = pool.data[loff[g->root] + q];
    if (v >= 0) {
      g->liveout[v] = true;
      if (c->is_entry)
        g->vsize[v] = 0;
    }
  }
  g->defbytes = xcalloc((size_t)n, sizeof *g->defbytes);
  g->keepbytes = xcalloc((size_t)n, sizeof *g->keepbytes);
  g->nested = xcalloc((size_t)n, sizeof *g->nested);
  for (int j = 0; j < n; j++) {
    for (int v = g->dstart[j]; v < g->dstart[j + 1]; v++)
      g->defbytes[j] += g->vsize[v];
    g->nested[j] = nested_peak(g->ins[j], index, peaks);
  }

  /* 2. Uses: the distinct values in the operands of every node that is
   * not forwarding; and the users of each value. */
  int *stamp = xmalloc(sizeof *stamp * ((size_t)g->nvals + 1));
  for (int v = 0; v < g->nvals; v++)
    stamp[v] = -1;
  IntVec ufrom = {0}, uto = {0};
  for (int j = 0; j < n; j++) {
    if (fwd[j])
      continue;
    HloInstr *i = g->ins[j];
    for (int k = 0; k < i->nops; k++) {
      int p = NODE(i->ops[k]);
      for (int q = 0; p >= 0 && q < lcnt[p]; q++) {
        int v = pool.data[loff[p] + q];
        if (v < 0 || stamp[v] == j)
          continue;
        stamp[v] = j;
        vec_push(&ufrom, j);
        vec_push(&uto, v);
      }
    }
  }
  csr(n, ufrom.len, ufrom.data, uto.data, &g->ustart, &g->uses);
  csr(g->nvals, ufrom.len, uto.data, ufrom.data, &g->vstart, &g->vusers);
  for (int j = 0; j < n; j++)
    for (int v = g->dstart[j]; v < g->dstart[j + 1]; v++)
      if (g->liveout[v] || g->vstart[v + 1] > g->vstart[v])
        g->keepbytes[j] += g->vsize[v];
  vec_free(&ufrom);
  vec_free(&uto);
  free(stamp);

  /* 3. Dependences: operands, then control predecessors and the previous
   * instruction with a side effect. */
  int *seen = xmalloc(sizeof *seen * (size_t)n);
  for (int j = 0; j < n; j++)
    seen[j] = -1;
  IntVec pfrom = {0}, pto = {0};
  g->nopred = xcalloc((size_t)n, sizeof *g->nopred);
  g->nusers = xcalloc((size_t)n, sizeof *g->nusers);
  int last_effect = -1;
  for (int j = 0; j < n; j++) {
    HloInstr *i = g->ins[j];
    for (int k = 0; k < i->nops; k++) {
      int p = NODE(i->ops[k]);
      if (p < 0 || seen[p] == j)
        continue;
      seen[p] = j;
      g->nopred[j]++;
      g->nusers[p]++;
      vec_push(&pfrom, j);
      vec_push(&pto, p);
    }
    for (int k = 0; k <= i->ncontrol_preds; k++) {
      int p = k < i->ncontrol_preds ? NODE(i->control_preds[k]) : -1;
      if (k == i->ncontrol_preds && ir_has_side_effect_deep(i)) {
        p = last_effect;
        last_effect = j;
      }
      if (p < 0 || seen[p] == j)
        continue;
      seen[p] = j;
      vec_push(&pfrom, j);
      vec_push(&pto, p);
    }
  }
  csr(n, pfrom.len, pfrom.data, pto.data, &g->pstart, &g->pred);
  csr(n, pfrom.len, pto.data, pfrom.data, &g->sstart, &g->succ);
  vec_free(&pfrom);
  vec_free(&pto);
  free(seen);
#undef NODE
  vec_free(&pool);
  free(loff);
  free(lcnt);
  free(fwd);
  free(at);
}

static void graph_free(Graph *g) {
  free(g->ins);
  free(g->pstart);
  free(g->pred);
  free(g->nopred);
  free(g->sstart);
  free(g->succ);
  free(g->nusers);
  free(g->vsize);
  free(g->liveout);
  free(g->dstart);
  free(g->ustart);
  free(g->uses);
  free(g->vstart);
  free(g->vusers);
  free(g->defbytes);
  free(g->keepbytes);
  free(g->nested);
}

/* The most bytes live at once along `order` (all n nodes): at each node,
 * what is live before it, what it defines and what it runs; then the
 * values whose last use it was are freed. */
static int64_t simulate(const Graph *g, const int *order, int64_t *area) {
  int n = g->n;
  int *pos = xmalloc(sizeof *pos * (size_t)n);
  int *last = xmalloc(sizeof *last * ((size_t)g->nvals + 1));
  for (int t = 0; t < n; t++)
    pos[order[t]] = t;
  for (int j = 0; j < n; j++)
    for (int v = g->dstart[j]; v < g->dstart[j + 1]; v++)
      last[v] = g->liveout[v] ? n : pos[j];
  for (int v = 0; v < g->nvals; v++)
    for (int k = g->vstart[v]; k < g->vstart[v + 1] && last[v] < n; k++)
      if (pos[g->vusers[k]] > last[v])
        last[v] = pos[g->vusers[k]];
  int64_t live = 0, peak = 0;
  *area = 0;
  for (int t = 0; t < n; t++) {
    int j = order[t];
    live += g->defbytes[j];
    if (live + g->nested[j] > peak)
      peak = live + g->nested[j];
    if (__builtin_add_overflow(*area, live + g->nested[j], area))
      *area = INT64_MAX;
    for (int v = g->dstart[j]; v < g->dstart[j + 1]; v++)
      if (last[v] == t)
        live -= g->vsize[v];
    for (int k = g->ustart[j]; k < g->ustart[j + 1]; k++)
      if (last[g->uses[k]] == t)
        live -= g->vsize[g->uses[k]];
  }
  free(pos);
  free(last);
  return peak;
}

/* ---- list ------------------------------------------------------------ */

typedef struct Entry {
  int64_t score;
  int node, version;
} Entry;

typedef Vec(Entry) Heap;

/* a goes before b: a higher score, then the earlier node. */
static bool before(const Entry *a, const Entry *b) {
  return a->score != b->score ? a->score > b->score : a->node < b->node;
}

static void heap_push(Heap *h, Entry e) {
  vec_push(h, e);
  int k = h->len - 1;
  while (k > 0 && before(&h->data[k], &h->data[(k - 1) / 2])) {
    Entry t = h->data[k];
    h->data[k] = h->data[(k - 1) / 2];
    h->data[(k - 1) / 2] = t;
    k = (k - 1) / 2;
  }
}

static Entry heap_pop(Heap *h) {
  Entry top = h->data[0];
  h->data[0] = h->data[--h->len];
  int k = 0;
  for (;;) {
    int l = 2 * k + 1, r = l + 1, m = k;
    if (l < h->len && before(&h->data[l], &h->data[m]))
      m = l;
    if (r < h->len && before(&h->data[r], &h->data[m]))
      m = r;
    if (m == k)
      break;
    Entry t = h->data[k];
    h->data[k] = h->data[m];
    h->data[m] = t;
    k = m;
  }
  return top;
}

enum { WAITING, READY, DONE };

/* XLA's ListScheduler.  freed[j] is kept up to date for every node: the
 * bytes of the values j is the last unscheduled user of. */
static int list_order(const Graph *g, int *out) {
  int n = g->n;
  int *unsched = xmalloc(sizeof *unsched * ((size_t)g->nvals + 1));
  int64_t *freed = xcalloc((size_t)n, sizeof *freed);
  int *npred = xmalloc(sizeof *npred * (size_t)n);
  int *version = xcalloc((size_t)n, sizeof *version);
  char *state = xcalloc((size_t)n, 1);
  for (int v = 0; v < g->nvals; v++) {
    unsched[v] = g->vstart[v + 1] - g->vstart[v] + g->liveout[v];
    if (unsched[v] == 1 && !g->liveout[v])
      freed[g->vusers[g->vstart[v]]] += g->vsize[v];
  }
  Heap h = {0};
  for (int j = 0; j < n; j++) {
    npred[j] = g->pstart[j + 1] - g->pstart[j];
    if (npred[j] == 0) {
      state[j] = READY;
      heap_push(&h, (Entry){freed[j] - g->keepbytes[j] - g->nested[j], j, 0});
    }
  }
  int cnt = 0;
  while (h.len > 0) {
    Entry e = heap_pop(&h);
    int j = e.node;
    if (state[j] != READY || e.version != version[j])
      continue;
    state[j] = DONE;
    out[cnt++] = j;
    for (int k = g->ustart[j]; k < g->ustart[j + 1]; k++) {
      int v = g->uses[k];
      if (--unsched[v] != 1 || g->liveout[v])
        continue;
      /* one user left: it would free v */
      for (int q = g->vstart[v]; q < g->vstart[v + 1]; q++) {
        int u = g->vusers[q];
        if (state[u] == DONE)
          continue;
        freed[u] += g->vsize[v];
        if (state[u] == READY)
          heap_push(&h, (Entry){freed[u] - g->keepbytes[u] - g->nested[u], u,
                                ++version[u]});
        break;
      }
    }
    for (int k = g->sstart[j]; k < g->sstart[j + 1]; k++) {
      int s = g->succ[k];
      if (--npred[s] == 0) {
        state[s] = READY;
        heap_push(&h, (Entry){freed[s] - g->keepbytes[s] - g->nested[s], s,
                              version[s]});
      }
    }
  }
  vec_free(&h);
  free(unsched);
  free(freed);
  free(npred);
  free(version);
  free(state);
  return cnt;
}

/* ---- dfs and post order ---------------------------------------------- */

/* Post-order DFS from starts[0..nstarts) over children (CSR), each
 * node's children in their listed order; appends to out. */
static int dfs(const Graph *g, const int *starts, int nstarts,
               const int *cstart, const int *child, int *out) {
  int n = g->n, cnt = 0, sp = 0;
  char *state = xcalloc((size_t)n, 1);
  int *node = xmalloc(sizeof *node * ((size_t)n + 1));
  int *next = xmalloc(sizeof *next * ((size_t)n + 1));
  for (int s = 0; s < nstarts; s++) {
    if (state[starts[s]])
      continue;
    state[starts[s]] = 1;
    node[sp] = starts[s];
    next[sp++] = cstart[starts[s]];
    while (sp > 0) {
      int j = node[sp - 1];
      if (next[sp - 1] < cstart[j + 1]) {
        int p = child[next[sp - 1]++];
        if (state[p])
          continue;
        state[p] = 1;
        node[sp] = p;
        next[sp++] = cstart[p];
        continue;
      }
      out[cnt++] = j;
      sp--;
    }
  }
  free(state);
  free(node);
  free(next);
  return cnt;
}

typedef struct Stat {
  int64_t extra_users, total_sizes;
  const char *name;
  int node;
} Stat;

/* More extra users first, then more cumulative bytes, then by name. */
static int cmp_stat(const void *pa, const void *pb) {
  const Stat *a = pa, *b = pb;
  if (a->extra_users != b->extra_users)
    return a->extra_users > b->extra_users ? -1 : 1;
  if (a->total_sizes != b->total_sizes)
    return a->total_sizes > b->total_sizes ? -1 : 1;
  int c = strcmp(a->name, b->name);
  return c ? c : a->node - b->node;
}

/* XLA's DFSMemoryScheduler.  The sums are over operands, so they count
 * what is shared more than once; they are capped (by the instruction
 * count and the bytes defined so far) to stay finite. */
static int dfs_order(const Graph *g, int *out) {
  int n = g->n;
  int64_t *extra = xcalloc((size_t)n, sizeof *extra);
  int64_t *total = xcalloc((size_t)n, sizeof *total);
  int64_t cumulative = 0;
  for (int j = 0; j < n; j++) {
    HloOp op = g->ins[j]->op;
    if (op == HLO_PARAMETER || op == HLO_CONSTANT)
      continue;
    extra[j] = g->nusers[j] > 0 ? g->nusers[j] - 1 : 0;
    total[j] = g->defbytes[j];
    cumulative += g->defbytes[j];
    for (int k = g->pstart[j]; k < g->pstart[j] + g->nopred[j]; k++) {
      extra[j] += extra[g->pred[k]];
      total[j] += total[g->pred[k]];
    }
    if (total[j] > cumulative)
      total[j] = cumulative;
    if (extra[j] > n)
      extra[j] = n;
  }
  /* children: every predecessor, sorted */
  int np = g->pstart[n];
  int *child = xmalloc(sizeof *child * ((size_t)np + 1));
  Stat *st = xmalloc(sizeof *st * ((size_t)np + 1));
  for (int j = 0; j < n; j++) {
    int a = g->pstart[j], b = g->pstart[j + 1];
    for (int k = a; k < b; k++) {
      int p = g->pred[k];
      st[k - a] = (Stat){extra[p], total[p], g->ins[p]->name, p};
    }
    qsort(st, (size_t)(b - a), sizeof *st, cmp_stat);
    for (int k = a; k < b; k++)
      child[k] = st[k - a].node;
  }
  /* the instructions nothing depends on but the root, then the root */
  int *starts = xmalloc(sizeof *starts * ((size_t)n + 1));
  int ns = 0;
  for (int j = 0; j < n; j++)
    if (g->sstart[j + 1] == g->sstart[j] && j != g->root)
      starts[ns++] = j;
  if (g->root >= 0)
    starts[ns++] = g->root;
  int cnt = dfs(g, starts, ns, g->pstart, child, out);
  free(starts);
  free(st);
  free(child);
  free(extra);
  free(total);
  return cnt;
}

/* XLA's MakeInstructionPostOrder: from each instruction without users in
 * the existing order; control predecessors first, then the operands. */
static int post_order(const Graph *g, int *out) {
  int n = g->n, np = g->pstart[n];
  int *child = xmalloc(sizeof *child * ((size_t)np + 1));
  for (int j = 0; j < n; j++) {
    int a = g->pstart[j], b = g->pstart[j + 1], o = a + g->nopred[j], at = a;
    for (int k = b - 1; k >= o; k--)
      child[at++] = g->pred[k];
    for (int k = a; k < o; k++)
      child[at++] = g->pred[k];
  }
  int *starts = xmalloc(sizeof *starts * ((size_t)n + 1));
  int ns = 0;
  for (int j = 0; j < n; j++)
    if (g->nusers[j] == 0)
      starts[ns++] = j;
  int cnt = dfs(g, starts, ns, g->pstart, child, out);
  free(starts);
  free(child);
  return cnt;
}

/* ---- the pass -------------------------------------------------------- */

/* Reorders c by the best candidate; its peak in *peak.  Returns whether
 * the order changed. */
static bool schedule_comp(HloComp *c, const HashMap *index,
                          const int64_t *peaks, int64_t *peak) {
  Graph g;
  build(&g, c, index, peaks);
  int n = g.n;
  *peak = 0;
  if (n == 0) {
    graph_free(&g);
    return false;
  }
  int *best = xmalloc(sizeof *best * (size_t)n);
  int *cand = xmalloc(sizeof *cand * (size_t)n);
  for (int j = 0; j < n; j++)
    best[j] = j;
  int64_t best_area, area;
  int64_t best_peak = simulate(&g, best, &best_area);
  int (*const schedulers[])(const Graph *, int *) = {list_order, dfs_order,
                                                    post_order};
  for (size_t s = 0; s < ARRAY_LEN(schedulers); s++) {
    if (schedulers[s](&g, cand) != n)
      continue;                   /* a cycle: cannot happen in valid HLO */
    int64_t p = simulate(&g, cand, &area);
    if (p < best_peak || (p == best_peak && area < best_area)) {
      best_peak = p;
      best_area = area;
      int *t = best;
      best = cand;
      cand = t;
    }
  }
  *peak = best_peak;
  bool changed = false;
  for (int j = 0; j < n; j++)
    changed |= best[j] != j;
  if (changed) {
    HloInstr **order = xmalloc(sizeof *order * ((size_t)c->ninstrs + 1));
    int at = 0;
    for (int j = 0; j < n; j++)
      order[at++] = g.ins[best[j]];
    /* removed instructions stay behind for ir_end to drop */
    for (int k = 0; k < c->ninstrs; k++)
      if (ir_removed(c->instrs[k]))
        order[at++] = c->instrs[k];
    memcpy(c->instrs, order, sizeof *order * (size_t)c->ninstrs);
    free(order);
  }
  free(best);
  free(cand);
  graph_free(&g);
  return changed;
}

bool pass_hlo_memory_scheduler(HloModule *m, PassContext *ctx) {
  (void)ctx;
  if (!m->entry)
    return false;
  IrEdit *e = ir_begin(m);
  HloComp **comps;
  int nc = ir_comp_post_order(m, &comps);
  HashMap index = {0};
  for (int k = 0; k < nc; k++)
    hashmap_put(&index, comps[k]->name, (void *)(intptr_t)(k + 1));
  /* what the entry runs through while, conditional and call: callers come
   * after their callees, so a walk from the end sees every caller first */
  bool *run = xcalloc((size_t)nc + 1, sizeof *run);
  for (int k = nc - 1; k >= 0; k--) {
    HloComp *c = comps[k];
    if (c == m->entry)
      run[k] = true;
    if (!run[k] || c->fusion_instr)
      continue;
    for (int q = 0; q < c->ninstrs; q++) {
      HloInstr *i = c->instrs[q];
      if (ir_removed(i) || (i->op != HLO_WHILE && i->op != HLO_CONDITIONAL &&
                            i->op != HLO_CALL))
        continue;
      for (int j = 0; j < i->ncalled; j++) {
        intptr_t at = (intptr_t)hashmap_get(&index, i->called[j]->name);
        if (at > 0)
          run[at - 1] = true;
      }
    }
  }
  int64_t *peaks = xcalloc((size_t)nc + 1, sizeof *peaks);
  bool changed = false;
  for (int k = 0; k < nc; k++)
    if (run[k] && !comps[k]->fusion_instr)
      changed |= schedule_comp(comps[k], &index, peaks, &peaks[k]);
  free(peaks);
  free(run);
  hashmap_free(&index);
  free(comps);
  return ir_end(e, changed);
}
