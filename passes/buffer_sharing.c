/*
 * buffer_sharing.c - which values of a buffer assignment take turns in one
 * buffer (XLA's buffer sharing and colocation: HloDataflowAnalysis::
 * CanShareBuffer, the while and conditional colocations of
 * BufferAssignment, input_output_alias), so that loops and updates run in
 * place and a value's bytes are reused as soon as it dies.
 *
 * A group is a set of values that hold one slice; its live range is the
 * union of theirs.  Values join a group only by a hand-over: the group's
 * last member has no reader left when the next one is written.  The rules,
 * applied after the walk in this order:
 *
 *  1. In-place operands.  An instruction's result joins the group of an
 *     operand that dies there (its group's last use is that instruction)
 *     when the instruction can write its result over that operand:
 *       - an elementwise op (not a copy: copy-insertion's copies exist to
 *         give a value a buffer of its own) of the same dimensions, layout
 *         and element width as the result, or a loop fusion that reads the
 *         operand only at the element it writes (the operand's parameter
 *         reaches the root through elementwise ops, reshapes and bitcasts
 *         that keep the elements in the same physical order, and the
 *         updated operand of dynamic-update-slices alone);
 *       - a dynamic-update-slice, its updated operand;
 *       - a scatter of one operand (alone, or the root of a fusion that
 *         reads that operand's parameter nowhere else), that operand.
 *     Each kernel reads an element before it writes it, in the same thread,
 *     so the result may overwrite the operand (the scatter kernel applies
 *     its updates to the operand's values where they are).  A temp only: a parameter
 *     belongs to the caller (rule 4 for donated ones), a constant is
 *     filled once.
 *  2. While initial values.  A while's state leaf k joins the group of its
 *     initial value when that dies at the while (no copy in), or whatever
 *     the initial value is when the body passes leaf k through unchanged:
 *     nothing writes it while the loop runs (XLA's copy-insertion leaves
 *     read-only loop state uncopied too).
 *  3. While bodies.  State leaf k takes the body's new value k (the root's
 *     leaf k, computed in the body) when nothing in the condition or body
 *     reads state k after the first member of that value's group is
 *     written, or reads it only as the in-place operand of that member (no
 *     copy back).
 *  4. input_output_alias.  The group of the output leaf that a parameter
 *     is donated to moves into the parameter's buffer when it starts after
 *     the parameter's last use, or at it in place (no copy at the end).
 *  5. Conditionals.  Result leaf k takes a branch's root leaf k when that
 *     group lives inside the branch (no copy out).
 *
 * Everything else keeps a buffer of its own, and the thunk emitter copies
 * where slices differ, as before.
 */
#include "ba_internal.h"

#include <stdlib.h>

int ba_group(BufferAssignment *ba, int v) {
  Value *vals = ba->vals.data;
  int r = v;
  while (vals[r].parent != r)
    r = vals[r].parent;
  while (vals[v].parent != r) {
    int next = vals[v].parent;
    vals[v].parent = r;
    v = next;
  }
  return r;
}

/* Group b joins group a (a stays the root). */
static void join(BufferAssignment *ba, int a, int b) {
  Value *vals = ba->vals.data;
  a = ba_group(ba, a);
  b = ba_group(ba, b);
  if (a == b)
    return;
  Value *x = &vals[a], *y = &vals[b];
  y->parent = a;
  if (y->gstart < x->gstart) {
    x->gstart = y->gstart;
    x->gfirst = y->gfirst;
  }
  if (y->gend > x->gend)
    x->gend = y->gend;
  if (y->gparam >= 0)
    x->gparam = y->gparam;
  x->gconst |= y->gconst;
  x->goutput |= y->goutput;
}

/* ---- which operands an instruction may overwrite ------------------------ */

static bool same_layout(const Shape *a, const Shape *b) {
  if (!shape_is_array(a) || !shape_is_array(b) || a->rank != b->rank ||
      et_bits(a->et) != et_bits(b->et) || shape_is_dynamic(a) ||
      shape_is_dynamic(b))
    return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d])
      return false;
  return layout_equal(a->layout, b->layout);
}

/* Whether a and b hold their elements in the same physical order: the
 * same dimensions and layout, or the same number of elements in the
 * default (row-major) layout, as a reshape that is a bitcast keeps them. */
static bool same_order(const Shape *a, const Shape *b) {
  if (same_layout(a, b))
    return true;
  if (!shape_is_array(a) || !shape_is_array(b) ||
      et_bits(a->et) != et_bits(b->et) || shape_is_dynamic(a) ||
      shape_is_dynamic(b) || shape_elements(a) != shape_elements(b) ||
      shape_elements(a) < 0)
    return false;
  return layout_is_default(a->layout, a->rank) &&
         layout_is_default(b->layout, b->rank);
}

/* The ops of a fusion that the loop and transpose kernels compute, each
 * output element by one thread that reads what it needs and then writes
 * it; a fusion with any other op (a reduce, dot, scatter, sort, library
 * or custom call: kernels that may write before they have read
 * everything) never overwrites an operand, but for a scatter's own
 * operand (scatters_in_place). */
static bool loop_kernel_op(const HloInstr *i) {
  switch (i->op) {
  case HLO_PARAMETER: case HLO_CONSTANT: case HLO_IOTA: case HLO_BROADCAST:
  case HLO_RESHAPE: case HLO_BITCAST: case HLO_TRANSPOSE: case HLO_SLICE:
  case HLO_DYNAMIC_SLICE: case HLO_DYNAMIC_UPDATE_SLICE:
  case HLO_CONCATENATE: case HLO_PAD: case HLO_REVERSE: case HLO_GATHER:
    return i->ncalled == 0;
  default:
    return hlo_op_is_elementwise(i->op) && i->ncalled == 0;
  }
}

/* Whether, in fused computation c, parameter p is read only at the index
 * of the root element being written: every instruction that depends on p
 * is elementwise with p's dimensions and layout, or a dynamic-update-slice
 * whose updated operand alone depends on it. */
static bool reads_in_place(const HloComp *c, const HloInstr *p) {
  PtrVec dep = {0};               /* the instructions that depend on p */
  vec_push(&dep, (void *)p);
  bool ok = true;
  for (int k = 0; k < c->ninstrs && ok; k++) {
    const HloInstr *i = c->instrs[k];
    if (!i->parent)
      continue;
    if (!loop_kernel_op(i)) {
      ok = false;
      break;
    }
    if (i == p)
      continue;
    bool d = false, first_only = true;
    for (int j = 0; j < i->nops; j++)
      for (int q = 0; q < dep.len; q++)
        if (dep.data[q] == i->ops[j]) {
          d = true;
          first_only &= j == 0;
          break;
        }
    if (!d)
      continue;
    vec_push(&dep, (void *)i);
    if (!same_order(i->shape, p->shape))
      ok = false;
    else if (i->op == HLO_DYNAMIC_UPDATE_SLICE)
      ok = first_only && same_layout(i->shape, i->ops[0]->shape);
    else if (i->op == HLO_RESHAPE || i->op == HLO_BITCAST)
      ok = true;              /* the same elements in the same order */
    else
      ok = hlo_instr_is_elementwise(i);
  }
  vec_free(&dep);
  return ok;
}

/* Whether fused computation c is a scatter of one operand, parameter p,
 * that nothing else in c reads (emitters/scatter_kernel.c then applies the
 * updates where the operand is). */
static bool scatters_in_place(const HloComp *c, const HloInstr *p) {
  const HloInstr *r = c->root;
  if (r->op != HLO_SCATTER || r->nops != 3 || r->ops[0] != p ||
      !same_layout(r->shape, p->shape))
    return false;
  int uses = 0;
  for (int k = 0; k < c->ninstrs; k++)
    for (int j = 0; c->instrs[k]->parent && j < c->instrs[k]->nops; j++)
      uses += c->instrs[k]->ops[j] == p;
  return uses == 1;
}

/* Whether instruction i may write its (one array) result over operand k. */
static bool can_overwrite(const HloInstr *i, int k) {
  if (!shape_is_array(i->shape) || k < 0 || k >= i->nops ||
      !same_order(i->ops[k]->shape, i->shape))
    return false;
  bool same = same_layout(i->ops[k]->shape, i->shape);
  if (i->op == HLO_DYNAMIC_UPDATE_SLICE)
    return k == 0 && same;
  if (i->op == HLO_SCATTER)
    return k == 0 && i->nops == 3 && same;
  if (i->op == HLO_FUSION) {
    if (i->ncalled < 1 || !i->called[0])
      return false;
    const HloComp *c = i->called[0];
    if (k >= c->nparams || !c->root || !shape_is_array(c->root->shape))
      return false;
    return scatters_in_place(c, c->params[k]) || reads_in_place(c, c->params[k]);
  }
  return same && hlo_instr_is_elementwise(i) && i->op != HLO_COPY;
}

/* Whether instruction i, which reads value u, may write value m over it:
 * for a while, u is the initial value of the first leaf it feeds and m
 * that leaf's state; otherwise m is i's one result and every operand that
 * holds u's buffer is one i may overwrite. */
static bool hands_over(BufferAssignment *ba, const HloInstr *i, int u, int m) {
  int *mv = ba_leaves_of(ba, i);
  if (!mv)
    return false;
  if (i->op == HLO_WHILE) {
    /* the first leaf u is the initial value of takes it over; the thunk
     * emitter copies it into the others before the loop starts */
    int *iv = ba_leaves_of(ba, i->ops[0]);
    int n = ba->nleaves[i->ops[0]->id], at = -1;
    if (!iv || n != ba->nleaves[i->id])
      return false;
    for (int k = 0; k < n && at < 0; k++)
      if (iv[k] == u)
        at = k;
    return at >= 0 && mv[at] == m;
  }
  if (ba->nleaves[i->id] != 1 || mv[0] != m)
    return false;
  /* every operand that holds u's buffer (u, or another value of its group:
   * read-only loop state shares its initial value's) */
  int g = ba_group(ba, u);
  bool read = false;
  for (int k = 0; k < i->nops; k++) {
    int *ov = ba_leaves_of(ba, i->ops[k]);
    int n = ov ? ba->nleaves[i->ops[k]->id] : 0;
    for (int j = 0; j < n; j++)
      if (ov[j] >= 0 && ba_group(ba, ov[j]) == g) {
        if (n != 1 || !can_overwrite(i, k))
          return false;
        read = true;
      }
  }
  return read;
}

/* Whether group g may follow a value that is last read at time t: every
 * member starts after t, or the first starts at t, written over it in
 * place by the instruction of time t. */
static bool starts_after(BufferAssignment *ba, int g, int u, int t) {
  const Value *r = &ba->vals.data[g];
  if (r->gstart > t)
    return true;
  if (r->gstart < t || t <= 0 || t >= ba->at.len)
    return false;
  return hands_over(ba, ba->at.data[t], u, r->gfirst);
}

static bool plain_temp_group(BufferAssignment *ba, int v) {
  const Value *r = &ba->vals.data[ba_group(ba, v)];
  return ba->vals.data[v].kind == VK_TEMP && r->gparam < 0 && !r->gconst;
}

/* ---- the rules ------------------------------------------------------------ */

/* For a value that a loop body returns as new state leaf k (rule 3): the
 * state value and its last read in the loop.  Rule 1 lets such a value be
 * written over an operand only when the operand's group starts after that
 * read, so that rule 3 can still write it over the state. */
typedef struct RootLimit {
  int state;                      /* -1: none */
  int last_use;
} RootLimit;

static RootLimit *root_limits(BufferAssignment *ba) {
  RootLimit *lim = xcalloc((size_t)ba->vals.len + 1, sizeof *lim);
  for (int k = 0; k < ba->vals.len; k++)
    lim[k].state = -1;
  for (int l = 0; l < ba->loops.len; l++) {
    const LoopRec *lr = &ba->loops.data[l];
    const HloInstr *root = lr->w->called[1]->root;
    int *sv = ba_leaves_of(ba, lr->w), *rv = root ? ba_leaves_of(ba, root) : NULL;
    if (!sv || !rv || ba->nleaves[root->id] != lr->nleaves)
      continue;
    for (int k = 0; k < lr->nleaves; k++) {
      int r = rv[k];
      if (r >= 0 && sv[k] >= 0 && r != sv[k] &&
          ba->vals.data[r].start > lr->t && lim[r].state < 0)
        lim[r] = (RootLimit){sv[k], lr->last_use[k]};
    }
  }
  return lim;
}

/* Rules 1 and 2, in schedule order. */
static void share_in_place(BufferAssignment *ba, const RootLimit *lim) {
  Value *vals = ba->vals.data;
  for (int t = 1; t < ba->at.len; t++) {
    const HloInstr *i = ba->at.data[t];
    int *mv = ba_leaves_of(ba, i);
    if (!mv)
      continue;
    int n = ba->nleaves[i->id];
    if (i->op == HLO_WHILE) {
      int *iv = ba_leaves_of(ba, i->ops[0]);
      const HloInstr *root = i->called[1]->root;
      int *rv = root ? ba_leaves_of(ba, root) : NULL;
      if (!iv || ba->nleaves[i->ops[0]->id] != n)
        continue;
      /* Rule 2b first: read-only state joins its initial value's group,
       * whose end then lies past the loop, so that rule 2 never lets a
       * written leaf take over a buffer the loop reads. */
      bool *ro = xcalloc((size_t)n + 1, sizeof *ro);
      for (int k = 0; k < n; k++) {
        int u = iv[k], m = mv[k];
        if (u >= 0 && m >= 0 && vals[m].def == i && rv &&
            ba->nleaves[root->id] == n && rv[k] == m &&
            vals[u].size == vals[m].size) {
          join(ba, u, m);
          ro[k] = true;
        }
      }
      for (int k = 0; k < n; k++) {
        int u = iv[k], m = mv[k];
        if (ro[k])
          continue;
        if (u < 0 || m < 0 || vals[m].def != i || !plain_temp_group(ba, u) ||
            vals[u].size != vals[m].size)
          continue;
        int g = ba_group(ba, u);
        if (vals[g].goutput || vals[g].gend != t || g == ba_group(ba, m) ||
            !hands_over(ba, i, u, m))
          continue;
        join(ba, m, u);
      }
      free(ro);
      continue;
    }
    if (n != 1 || mv[0] < 0 || vals[mv[0]].def != i ||
        i->op == HLO_CONDITIONAL)
      continue;
    /* Of several operands that die here, the one whose group started
     * last: the shorter group leaves more room for a loop's new state to
     * be written over the old (rule 3). */
    int m = mv[0], best = -1;
    for (int k = 0; k < i->nops; k++) {
      int *ov = ba_leaves_of(ba, i->ops[k]);
      if (!ov || ba->nleaves[i->ops[k]->id] != 1 || !can_overwrite(i, k))
        continue;
      int u = ov[0];
      if (u < 0 || !plain_temp_group(ba, u) || vals[u].size != vals[m].size)
        continue;
      int g = ba_group(ba, u);
      if (vals[g].goutput || vals[g].gend != t || !hands_over(ba, i, u, m))
        continue;
      if (lim[m].state >= 0 &&
          !starts_after(ba, g, lim[m].state, lim[m].last_use))
        continue;
      if (best < 0 || vals[g].gstart > vals[ba_group(ba, best)].gstart)
        best = u;
    }
    if (best >= 0)
      join(ba, m, best);
  }
}

/* Rule 3. */
static void share_loop_state(BufferAssignment *ba, const LoopRec *lr) {
  Value *vals = ba->vals.data;
  const HloInstr *w = lr->w;
  const HloInstr *root = w->called[1]->root;
  int *sv = ba_leaves_of(ba, w), *rv = root ? ba_leaves_of(ba, root) : NULL;
  if (!sv || !rv || ba->nleaves[root->id] != lr->nleaves)
    return;
  for (int k = 0; k < lr->nleaves; k++) {
    int s = sv[k], r = rv[k];
    if (s < 0 || r < 0 || r == s || vals[r].start <= lr->t ||
        !plain_temp_group(ba, r) || vals[r].size != vals[s].size)
      continue;
    bool once = true;
    for (int j = 0; j < lr->nleaves; j++)
      once &= j == k || rv[j] != r;
    int g = ba_group(ba, r);
    if (!once || vals[g].goutput || g == ba_group(ba, s) ||
        vals[g].gstart <= lr->t ||
        !starts_after(ba, g, s, lr->last_use[k]))
      continue;
    join(ba, s, r);
  }
}

/* Rule 5. */
static void share_branch_results(BufferAssignment *ba, const CondRec *cr) {
  Value *vals = ba->vals.data;
  const HloInstr *c = cr->c;
  int *cv = ba_leaves_of(ba, c);
  int n = cv ? ba->nleaves[c->id] : 0;
  for (int b = 0; b < c->ncalled; b++) {
    const HloInstr *root = c->called[b]->root;
    int *rv = root ? ba_leaves_of(ba, root) : NULL;
    if (!rv || ba->nleaves[root->id] != n)
      continue;
    for (int k = 0; k < n; k++) {
      int x = cv[k], r = rv[k];
      if (x < 0 || r < 0 || !plain_temp_group(ba, r) ||
          vals[r].size != vals[x].size)
        continue;
      bool once = true;
      for (int j = 0; j < n; j++)
        once &= j == k || rv[j] != r;
      int g = ba_group(ba, r);
      if (!once || vals[g].goutput || g == ba_group(ba, x) ||
          vals[g].gstart < cr->bstart[b] || vals[g].gend > cr->bend[b])
        continue;
      join(ba, x, r);
    }
  }
}

/* Rule 4. */
static void share_donated(BufferAssignment *ba) {
  Value *vals = ba->vals.data;
  const HloComp *entry = ba->m->entry;
  int *rv = ba_leaves_of(ba, entry->root);
  if (!rv)
    return;
  for (int a = 0; a < ba->m->nio_alias; a++) {
    const AliasEntry *al = &ba->m->io_alias[a];
    if (al->operand < 0 || al->operand >= entry->nparams)
      continue;
    const HloInstr *pi = entry->params[al->operand];
    int *pv = ba_leaves_of(ba, pi);
    const Shape *rs = entry->root->shape, *ps = pi->shape;
    int ol = 0, pl = 0;
    bool ok = pv != NULL;
    for (int d = 0; ok && d < al->output_index.n; d++) {
      int64_t x = al->output_index.v[d];
      ok = rs->et == ET_TUPLE && x >= 0 && x < rs->ntuple;
      for (int j = 0; ok && j < x; j++)
        ol += shape_leaf_count(rs->tuple[j]);
      if (ok)
        rs = rs->tuple[x];
    }
    for (int d = 0; ok && d < al->operand_index.n; d++) {
      int64_t x = al->operand_index.v[d];
      ok = ps->et == ET_TUPLE && x >= 0 && x < ps->ntuple;
      for (int j = 0; ok && j < x; j++)
        pl += shape_leaf_count(ps->tuple[j]);
      if (ok)
        ps = ps->tuple[x];
    }
    if (!ok || rs->et == ET_TUPLE || ps->et == ET_TUPLE ||
        ol >= ba->nleaves[entry->root->id] || pl >= ba->nleaves[pi->id])
      continue;
    int p = pv[pl], v = rv[ol];
    if (p < 0 || v < 0 || v == p || vals[p].kind != VK_PARAM ||
        vals[v].kind != VK_TEMP || vals[v].size != vals[p].size ||
        ba_group(ba, p) != p || vals[p].gend == END_OF_PROGRAM)
      continue;
    int g = ba_group(ba, v);
    if (vals[g].gparam >= 0 || vals[g].gconst)
      continue;
    /* the output leaf once: another leaf of the group would need the
     * parameter's buffer too */
    int times = 0;
    for (int k = 0; k < ba->nleaves[entry->root->id]; k++)
      times += rv[k] >= 0 && ba_group(ba, rv[k]) == g;
    /* after the parameter's group (the parameter, and read-only loop
     * state that reads its buffer) is read for the last time */
    bool alone = vals[p].gend == vals[p].end;
    if (times != 1 || (alone ? !starts_after(ba, g, p, vals[p].end)
                             : vals[g].gstart <= vals[p].gend))
      continue;
    join(ba, p, g);
  }
}

void ba_share_buffers(BufferAssignment *ba) {
  Value *vals = ba->vals.data;
  for (int k = 0; k < ba->vals.len; k++) {
    Value *v = &vals[k];
    v->parent = k;
    v->gstart = v->start;
    v->gend = v->end;
    v->gfirst = k;
    v->gparam = v->kind == VK_PARAM ? k : -1;
    v->gconst = v->kind == VK_CONST;
    v->goutput = v->output;
  }
  RootLimit *lim = root_limits(ba);
  share_in_place(ba, lim);
  free(lim);
  for (int k = 0; k < ba->loops.len; k++)
    share_loop_state(ba, &ba->loops.data[k]);
  for (int k = 0; k < ba->conds.len; k++)
    share_branch_results(ba, &ba->conds.data[k]);
  share_donated(ba);
  for (int k = 0; k < ba->vals.len; k++)
    ba_group(ba, k);
}
