/*
 * indexing_fusion.c - composing indexing maps through a computation.
 *
 * Output to input: start with the identity on the chosen output (the root,
 * or one operand of a root tuple) and walk the instructions from last to
 * first.  Text order defines operands before their users, so when an
 * instruction is reached every user has already pushed its maps to it; its
 * own maps are then composed with its per-op output-to-input maps and pushed
 * to its operands.  A value read along several paths collects one map per
 * distinct access pattern: maps are simplified before they are added, so
 * paths that differ only in form (transposes that cancel, reshapes that undo
 * each other) merge into one.  Maps whose domain is empty are dropped.
 *
 * Input to output is the mirror image: start with the identity on a
 * parameter and walk forward with the per-op input-to-output maps.
 *
 * Tuple-shaped instructions (variadic reduce, sort, tuple) keep one set per
 * tuple element; get-tuple-element reads its element's set.
 *
 * In a large graph with many diamonds the number of distinct access
 * patterns can grow with the number of paths.  A set that would hold more
 * than SET_LIMIT maps becomes the single UNDEFINED map instead ("too many
 * patterns to describe"): an honest answer that keeps the analysis linear.
 */
#include "indexing.h"
#include "affine_internal.h"

#include <stdlib.h>

enum { SET_LIMIT = 64 };

struct CompIndexing {
  const HloComp *comp;
  IndexingMapSet **sets;          /* per instruction position: one per output */
};

/* Position of every instruction of comp: a table indexed by instruction id
 * (ids are unique in a module), so that a lookup is one load. */
typedef struct Positions {
  int min_id, n;
  int *pos;                       /* id - min_id -> position + 1; 0: absent */
} Positions;

static void index_positions(const HloComp *comp, Positions *p) {
  int lo = 0, hi = -1;
  for (int k = 0; k < comp->ninstrs; k++) {
    int id = comp->instrs[k]->id;
    if (k == 0 || id < lo)
      lo = id;
    if (k == 0 || id > hi)
      hi = id;
  }
  p->min_id = lo;
  p->n = hi - lo + 1;
  p->pos = xcalloc((size_t)p->n + 1, sizeof(int));
  for (int k = 0; k < comp->ninstrs; k++)
    p->pos[comp->instrs[k]->id - lo] = k + 1;
}

static int position(const Positions *p, const HloInstr *i) {
  int j = i->id - p->min_id;
  return j >= 0 && j < p->n ? p->pos[j] - 1 : -1;
}

static IndexingMapSet *sets_of(AffCtx *c, IndexingMapSet **sets, int k,
                               const HloInstr *i) {
  if (!sets[k]) {
    int n = indexing_num_outputs(i);
    sets[k] = ARENA_ARRAY(aff_ctx_arena(c), IndexingMapSet, n + 1);
  }
  return sets[k];
}

/* Composes and simplifies; NULL for a map with an empty domain. */
static const IndexingMap *compose_simplified(AffCtx *c, const IndexingMap *a,
                                             const IndexingMap *b) {
  bool before = aff_ctx_overflowed(c);
  aff_ctx_clear_overflow(c);
  const IndexingMap *m = imap_simplify(c, imap_compose(c, a, b));
  if (aff_ctx_overflowed(c))
    m = imap_undefined(c);
  aff_ctx_clear_overflow(c);
  if (before)
    *aff_ctx_overflow_flag(c) = true;
  return m->empty ? NULL : m;
}

/* Adds m to s.  An UNDEFINED map absorbs the set (as in XLA: a value read
 * along a path nothing is known about has no useful description), and so
 * does growing past SET_LIMIT maps. */
static void add_capped(AffCtx *c, IndexingMapSet *s, const IndexingMap *m) {
  if (s->n == 1 && s->maps[0]->undefined)
    return;
  if (!m->undefined && (!imap_set_add(c, s, m) || s->n <= SET_LIMIT))
    return;
  s->n = 0;
  imap_set_add(c, s, imap_undefined(c));
}

/* Which element of a tuple-shaped operand an instruction reads: the
 * get-tuple-element's index, else the whole (element 0). */
static int operand_tuple_index(const HloInstr *user, const HloInstr *operand) {
  if (user->op == HLO_GET_TUPLE_ELEMENT && indexing_num_outputs(operand) > 1)
    return (int)user->tuple_index;
  return 0;
}

static const IndexingMap *identity_of(AffCtx *c, const Shape *s) {
  if (!s || !shape_is_array(s))
    return imap_undefined(c);
  return imap_identity(c, s->rank, s->dims);
}

CompIndexing *indexing_comp_out_to_in(AffCtx *c, const HloComp *comp,
                                      int output) {
  Arena *a = aff_ctx_arena(c);
  CompIndexing *ci = ARENA_NEW(a, CompIndexing);
  ci->comp = comp;
  ci->sets = ARENA_ARRAY(a, IndexingMapSet *, comp->ninstrs + 1);
  const HloInstr *root = comp->root;
  if (!root)
    return ci;
  Positions pos = {0};
  index_positions(comp, &pos);

  const HloInstr *start = root;
  int start_t = output;
  if (root->op == HLO_TUPLE && output >= 0 && output < root->nops) {
    start = root->ops[output];
    start_t = 0;
  }
  int sp = position(&pos, start);
  if (sp >= 0 && start_t >= 0 && start_t < indexing_num_outputs(start))
    imap_set_add(c, &sets_of(c, ci->sets, sp, start)[start_t],
                 identity_of(c, indexing_output_shape(start, start_t)));

  for (int k = comp->ninstrs - 1; k >= 0; k--) {
    const HloInstr *i = comp->instrs[k];
    if (!ci->sets[k] || i->op == HLO_PARAMETER)
      continue;
    for (int t = 0; t < indexing_num_outputs(i); t++) {
      const IndexingMapSet *mine = &ci->sets[k][t];
      if (!mine->n)
        continue;
      InstrIndexing *op_maps = indexing_out_to_in(c, i, t);
      for (int j = 0; j < i->nops && j < op_maps->n; j++) {
        const HloInstr *o = i->ops[j];
        int op = position(&pos, o);
        if (op < 0 || !op_maps->sets[j].n)
          continue;
        IndexingMapSet *dst = &sets_of(c, ci->sets, op, o)[operand_tuple_index(i, o)];
        for (int x = 0; x < mine->n; x++)
          for (int y = 0; y < op_maps->sets[j].n; y++) {
            const IndexingMap *m =
                compose_simplified(c, mine->maps[x], op_maps->sets[j].maps[y]);
            if (m)
              add_capped(c, dst, m);
          }
      }
    }
  }
  free(pos.pos);
  return ci;
}

const IndexingMapSet *comp_indexing_get(const CompIndexing *ci,
                                        const HloInstr *i, int tuple_index) {
  for (int k = 0; k < ci->comp->ninstrs; k++) {
    if (ci->comp->instrs[k] != i)
      continue;
    if (!ci->sets[k] || tuple_index < 0 || tuple_index >= indexing_num_outputs(i))
      return NULL;
    return ci->sets[k][tuple_index].n ? &ci->sets[k][tuple_index] : NULL;
  }
  return NULL;
}

InstrIndexing *indexing_comp_in_to_out(AffCtx *c, const HloComp *comp,
                                       int param) {
  const HloInstr *root = comp->root;
  int nout = root ? indexing_num_outputs(root) : 1;
  InstrIndexing *result = instr_indexing_new(c, nout);
  const HloInstr *p = NULL;
  int pp = -1;
  for (int k = 0; k < comp->ninstrs; k++)
    if (comp->instrs[k]->op == HLO_PARAMETER &&
        comp->instrs[k]->param_number == param) {
      p = comp->instrs[k];
      pp = k;
    }
  if (!p || !root)
    return result;
  Arena *a = aff_ctx_arena(c);
  IndexingMapSet **sets = ARENA_ARRAY(a, IndexingMapSet *, comp->ninstrs + 1);
  Positions pos = {0};
  index_positions(comp, &pos);
  imap_set_add(c, &sets_of(c, sets, pp, p)[0], identity_of(c, p->shape));

  for (int k = pp + 1; k < comp->ninstrs; k++) {
    const HloInstr *i = comp->instrs[k];
    for (int j = 0; j < i->nops; j++) {
      const HloInstr *o = i->ops[j];
      int op = position(&pos, o);
      if (op < 0 || !sets[op])
        continue;
      const IndexingMapSet *src = &sets[op][operand_tuple_index(i, o)];
      if (!src->n)
        continue;
      InstrIndexing *op_maps = indexing_in_to_out(c, i, j);
      IndexingMapSet *dst = sets_of(c, sets, k, i);
      for (int t = 0; t < op_maps->n; t++)
        for (int x = 0; x < src->n; x++)
          for (int y = 0; y < op_maps->sets[t].n; y++) {
            const IndexingMap *m =
                compose_simplified(c, src->maps[x], op_maps->sets[t].maps[y]);
            if (m)
              add_capped(c, &dst[t], m);
          }
    }
  }
  int rp = position(&pos, root);
  if (rp >= 0 && sets[rp])
    for (int t = 0; t < nout; t++)
      result->sets[t] = sets[rp][t];
  free(pos.pos);
  return result;
}
