/*
 * copy_insertion.c - pass "copy-insertion": the copies buffer assignment
 * needs so that in-place state updates have no hazards (XLA's
 * CopyInsertion, reduced to the cases buffer_assignment.h relies on).
 *
 * While bodies.  The thunk emitter runs a while as: copy init -> state, then
 * cond, body, copy body root leaves -> state, repeat.  The copy back is done
 * leaf by leaf, so a root leaf may be
 *   - the body parameter's same leaf passed through (get-tuple-element of the
 *     parameter at the same index, possibly through tuples): nothing to copy;
 *   - a value computed in the body: it has its own buffer.
 * Everything else gets a `copy`: a parameter leaf at another index (a swap
 * would read a leaf already overwritten), a constant, and a value that
 * appears at more than one root leaf (all but its first occurrence).
 *
 * Entry root.  A value at two result leaves gets a copy at all but its first
 * occurrence (each result leaf gets its own output buffer).  A result leaf
 * that input_output_alias ties to a parameter buffer, and that is a constant
 * or a parameter leaf other than exactly that aliased one, gets a copy, so
 * the aliased output is a computed value the emitter may write into the
 * donated buffer; and a donated parameter leaf returned at another result
 * leaf gets a copy (its buffer holds the aliased result by the end).
 * Nothing else: a parameter or constant at an unaliased result leaf stays
 * where it is.
 *
 * Copies go where they are needed only: the root is rebuilt as a tuple of
 * the old leaves, with copies where the rules say.  Running the pass again
 * finds nothing to do (every copied leaf is then a computed value of its
 * own).
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

/* Where leaf `leaf` of i comes from, through tuple, get-tuple-element,
 * bitcast and opt-barrier: the instruction that defines it and its leaf. */
typedef struct Src {
  HloInstr *def;
  int leaf;
} Src;

static int leaf_count(const Shape *s) {
  if (s->et != ET_TUPLE)
    return 1;
  int n = 0;
  for (int k = 0; k < s->ntuple; k++)
    n += leaf_count(s->tuple[k]);
  return n;
}

static Src source_of(HloInstr *i, int leaf) {
  for (;;) {
    if (i->op == HLO_TUPLE) {
      int k = 0;
      for (; k < i->nops; k++) {
        int n = leaf_count(i->ops[k]->shape);
        if (leaf < n)
          break;
        leaf -= n;
      }
      if (k == i->nops)
        return (Src){i, leaf};
      i = i->ops[k];
    } else if (i->op == HLO_GET_TUPLE_ELEMENT &&
               i->ops[0]->shape->et == ET_TUPLE &&
               i->tuple_index < i->ops[0]->shape->ntuple) {
      for (int k = 0; k < i->tuple_index; k++)
        leaf += leaf_count(i->ops[0]->shape->tuple[k]);
      i = i->ops[0];
    } else if ((i->op == HLO_BITCAST || i->op == HLO_OPTIMIZATION_BARRIER) &&
               leaf_count(i->ops[0]->shape) == leaf_count(i->shape)) {
      i = i->ops[0];
    } else {
      return (Src){i, leaf};
    }
  }
}

/* The ShapeIndex of a leaf (depth entries in path, at most cap). */
static int leaf_path(const Shape *s, int leaf, int64_t *path, int cap) {
  int depth = 0;
  while (s->et == ET_TUPLE) {
    int k = 0;
    for (; k < s->ntuple; k++) {
      int n = leaf_count(s->tuple[k]);
      if (leaf < n)
        break;
      leaf -= n;
    }
    if (k == s->ntuple || depth == cap)
      return -1;
    path[depth++] = k;
    s = s->tuple[k];
  }
  return depth;
}

/* The leaf of s at ShapeIndex path, or -1. */
static int leaf_at(const Shape *s, const int64_t *path, int depth) {
  int leaf = 0;
  for (int d = 0; d < depth; d++) {
    if (s->et != ET_TUPLE || path[d] < 0 || path[d] >= s->ntuple)
      return -1;
    for (int k = 0; k < path[d]; k++)
      leaf += leaf_count(s->tuple[k]);
    s = s->tuple[path[d]];
  }
  return s->et == ET_TUPLE ? -1 : leaf;
}

static bool same_src(Src a, Src b) { return a.def == b.def && a.leaf == b.leaf; }

/* Marks, in need[], the leaves that appear earlier in the root too. */
static void mark_repeats(const Src *src, int n, bool *need) {
  for (int k = 0; k < n; k++)
    for (int j = 0; j < k; j++)
      if (same_src(src[j], src[k])) {
        need[k] = true;
        break;
      }
}

/* i rebuilt with copies at the leaves need[base ...]. */
static HloInstr *rebuild(IrEdit *e, HloComp *c, HloInstr *i, int base,
                         const bool *need) {
  int n = leaf_count(i->shape);
  bool any = false;
  for (int k = 0; k < n; k++)
    any |= need[base + k];
  if (!any)
    return i;
  if (i->shape->et != ET_TUPLE)
    return ir_unary(e, c, HLO_COPY, i);
  int m = i->shape->ntuple;
  HloInstr **elems = xcalloc((size_t)(m ? m : 1), sizeof *elems);
  int at = base;
  for (int k = 0; k < m; k++) {
    HloInstr *x = i->op == HLO_TUPLE ? i->ops[k] : ir_gte(e, c, i, k);
    elems[k] = rebuild(e, c, x, at, need);
    at += leaf_count(i->shape->tuple[k]);
  }
  HloInstr *t = ir_tuple(e, c, m, elems);
  free(elems);
  return t;
}

/* Replaces c's root by one with copies where need[] says; true if any. */
static bool copy_root_leaves(IrEdit *e, HloComp *c, const bool *need, int n) {
  bool any = false;
  for (int k = 0; k < n; k++)
    any |= need[k];
  if (!any)
    return false;
  HloInstr *old = c->root;
  c->root = rebuild(e, c, old, 0, need);
  ir_remove_dead(e, old);
  return true;
}

static bool is_token_leaf(const Shape *s, int leaf) {
  int64_t path[64];
  int depth = leaf_path(s, leaf, path, 64);
  if (depth < 0)
    return false;
  const Shape *x = shape_subshape(s, depth, path);
  return x && x->et == ET_TOKEN;
}

static bool fix_while_body(IrEdit *e, HloComp *body) {
  if (body->nparams != 1 || !body->root)
    return false;
  HloInstr *param = body->params[0];
  int n = leaf_count(body->root->shape);
  Src *src = xcalloc((size_t)n, sizeof *src);
  bool *need = xcalloc((size_t)n, sizeof *need);
  for (int k = 0; k < n; k++)
    src[k] = source_of(body->root, k);
  mark_repeats(src, n, need);
  for (int k = 0; k < n; k++) {
    if (src[k].def == param)
      need[k] |= src[k].leaf != k;
    else if (src[k].def->op == HLO_CONSTANT)
      need[k] = true;
    if (is_token_leaf(body->root->shape, k))
      need[k] = false;
  }
  bool changed = copy_root_leaves(e, body, need, n);
  free(src);
  free(need);
  return changed;
}

static bool fix_entry_root(IrEdit *e, HloModule *m) {
  HloComp *c = m->entry;
  int n = leaf_count(c->root->shape);
  Src *src = xcalloc((size_t)n, sizeof *src);
  bool *need = xcalloc((size_t)n, sizeof *need);
  for (int k = 0; k < n; k++)
    src[k] = source_of(c->root, k);
  mark_repeats(src, n, need);
  for (int a = 0; a < m->nio_alias; a++) {
    const AliasEntry *al = &m->io_alias[a];
    int k = leaf_at(c->root->shape, al->output_index.v, al->output_index.n);
    if (k < 0)
      continue;
    HloInstr *d = src[k].def;
    if (d->op == HLO_CONSTANT) {
      need[k] = true;
    } else if (d->op == HLO_PARAMETER) {
      /* The aliased parameter leaf itself, passed through, is in place. */
      int pleaf = al->operand >= 0 && al->operand < c->nparams
                      ? leaf_at(c->params[al->operand]->shape,
                                al->operand_index.v, al->operand_index.n)
                      : -1;
      need[k] |= !(d->param_number == al->operand && src[k].leaf == pleaf);
    }
  }
  /* A donated parameter leaf read at another result leaf: its buffer holds
   * the aliased result by then. */
  for (int k = 0; k < n; k++) {
    HloInstr *d = src[k].def;
    if (d->op != HLO_PARAMETER || d->parent != c)
      continue;
    for (int a = 0; a < m->nio_alias; a++) {
      const AliasEntry *al = &m->io_alias[a];
      if (al->operand != d->param_number ||
          leaf_at(d->shape, al->operand_index.v, al->operand_index.n) !=
              src[k].leaf)
        continue;
      if (leaf_at(c->root->shape, al->output_index.v, al->output_index.n) !=
          k)
        need[k] = true;
    }
  }
  for (int k = 0; k < n; k++)
    if (is_token_leaf(c->root->shape, k))
      need[k] = false;
  bool changed = copy_root_leaves(e, c, need, n);
  free(src);
  free(need);
  return changed;
}

bool pass_copy_insertion(HloModule *m, PassContext *ctx) {
  (void)ctx;
  if (!m->entry || !m->entry->root)
    return false;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  /* While bodies of every computation (a body reached twice is fixed once;
   * the second time finds nothing). */
  for (int c = 0; c < m->ncomps; c++) {
    HloComp *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      HloInstr *i = comp->instrs[k];
      if (!ir_removed(i) && i->op == HLO_WHILE && i->ncalled == 2)
        changed |= fix_while_body(e, i->called[1]);
    }
  }
  changed |= fix_entry_root(e, m);
  return ir_end(e, changed);
}
