/*
 * row_norm.c - the row-normalization analysis (row_norm.h): the shape
 * checks of the reduces and the root, then the indexing maps from the root
 * to every reduce (indexing_comp_out_to_in), which must all be one map
 * from an output row to a reduce row, and from every reduce output to the
 * reduces it reads, which must be its own row.
 */
#include "row_norm.h"

#include <stdlib.h>
#include <string.h>

int row_norm_minor_dim(const Shape *s) {
  if (s->rank <= 0)
    return -1;
  const Layout *l = s->layout;
  return l && l->rank == s->rank ? (int)l->minor_to_major[0] : s->rank - 1;
}

static bool same_dims(const Shape *a, const Shape *b) {
  return shape_is_array(a) && shape_is_array(b) && a->rank == b->rank &&
         (a->rank == 0 || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0);
}

static bool fail(const char **why, const char *msg) {
  if (why)
    *why = msg;
  return false;
}

/* A reducer the kernel can apply to scalars: two scalar parameters of the
 * operand's type and one result of that type. */
static bool scalar_reducer(const HloComp *r, ElemType et) {
  if (!r || !r->root || r->nparams != 2 || r->root->op == HLO_TUPLE)
    return false;
  for (int k = 0; k < 2; k++) {
    const Shape *s = r->params[k] ? r->params[k]->shape : NULL;
    if (!s || !shape_is_array(s) || s->rank != 0 || s->et != et)
      return false;
  }
  const Shape *s = r->root->shape;
  return shape_is_array(s) && s->rank == 0 && s->et == et;
}

static int position(const HloComp *c, const HloInstr *x) {
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k] == x)
      return k;
  return -1;
}

/* A map from the root to a reduce that picks one reduce row per output
 * row: no symbols, no runtime variables, results not using d<out_dim>. */
static bool row_map(const IndexingMap *m, int out_rank, int out_dim, int red_rank) {
  if (m->undefined || m->empty || m->nrange || m->nrt || m->ndims != out_rank ||
      m->nresults != red_rank)
    return false;
  for (int k = 0; k < m->nresults; k++)
    if (aff_uses_dim(m->results[k], out_dim))
      return false;
  return true;
}

static bool same_results(const IndexingMap *a, const IndexingMap *b) {
  if (a->nresults != b->nresults)
    return false;
  for (int k = 0; k < a->nresults; k++)
    if (a->results[k] != b->results[k])
      return false;
  return true;
}

/* The map (d0, .., dr-1) -> (d0, .., dr-1) of a reduce output to a
 * reduce: its own row. */
static bool own_row(const IndexingMap *m, int rank) {
  if (m->undefined || m->empty || m->nrange || m->nrt || m->ndims != rank ||
      m->nresults != rank)
    return false;
  for (int k = 0; k < rank; k++)
    if (m->results[k]->kind != AFF_DIM || m->results[k]->value != k)
      return false;
  return true;
}

static bool is_reduce_of(const RowNorm *rn, const HloInstr *x) {
  for (int k = 0; k < rn->nreduces; k++)
    if (rn->reduces[k] == x)
      return true;
  return false;
}

bool row_norm_analyze(AffCtx *c, const HloComp *comp, RowNorm *rn, const char **why) {
  memset(rn, 0, sizeof *rn);
  const HloInstr *top = comp ? comp->root : NULL;
  if (!top)
    return fail(why, "no root");
  /* the outputs: the root, or a tuple of the main output and reduces */
  if (top->op == HLO_TUPLE) {
    if (top->nops < 1 || top->nops > ROW_NORM_MAX_OUTS)
      return fail(why, "too many outputs");
    for (int k = 0; k < top->nops; k++)
      rn->outs[rn->nouts++] = top->ops[k];
  } else {
    rn->outs[rn->nouts++] = top;
  }
  const HloInstr *root = rn->outs[0];
  if (!shape_is_array(root->shape) || root->shape->rank < 1 || root->op == HLO_REDUCE)
    return fail(why, "the root is not an array computed from reduces");
  for (int k = 1; k < rn->nouts; k++)
    if (rn->outs[k]->op != HLO_REDUCE)
      return fail(why, "an output after the first that is not a reduce");
  int n = comp->ninstrs;
  bool *dep = xcalloc((size_t)n + 1, sizeof *dep);   /* depends on a reduce */
  bool ok = true;
  for (int k = 0; k < n && ok; k++) {
    const HloInstr *x = comp->instrs[k];
    for (int j = 0; j < x->nops && !dep[k]; j++) {
      int p = position(comp, x->ops[j]);
      dep[k] = p >= 0 && dep[p];
    }
    if (x->op != HLO_REDUCE)
      continue;
    dep[k] = true;
    if (rn->nreduces == ROW_NORM_MAX_REDUCES) {
      ok = fail(why, "too many reduces");
      break;
    }
    const Shape *s = x->nops == 2 ? x->ops[0]->shape : NULL;
    if (!s || !shape_is_array(s) || s->rank < 1 || x->ncalled != 1 || x->dims.n != 1 ||
        !shape_is_array(x->shape) || x->shape->rank != s->rank - 1 ||
        x->shape->et != s->et || !shape_is_array(x->ops[1]->shape) ||
        x->ops[1]->shape->rank != 0 || !scalar_reducer(x->called[0], s->et)) {
      ok = fail(why, "a reduce that is not a single-operand reduce of one dimension");
      break;
    }
    int p = position(comp, x->ops[1]);
    if (p >= 0 && dep[p]) {
      ok = fail(why, "a reduce's init value depends on a reduce");
      break;
    }
    if (rn->nreduces == 0) {
      rn->space = s;
      rn->dim = (int)x->dims.v[0];
    } else if (!same_dims(s, rn->space) || rn->dim != (int)x->dims.v[0]) {
      ok = fail(why, "reduces over different rows");
      break;
    }
    rn->reduces[rn->nreduces++] = x;
  }
  free(dep);
  if (!ok)
    return false;
  if (rn->nreduces == 0)
    return fail(why, "no reduce");
  if (rn->dim < 0 || rn->dim >= rn->space->rank)
    return fail(why, "bad reduce dimension");
  rn->n = rn->space->dims[rn->dim];
  rn->out = root->shape;
  rn->out_dim = row_norm_minor_dim(root->shape);
  if (rn->out_dim < 0 || root->shape->dims[rn->out_dim] != rn->n)
    return fail(why, "the root's rows are not the reduces' rows");
  int64_t total = shape_elements(root->shape);
  rn->rows = rn->n > 0 ? total / rn->n : 0;
  if (rn->n <= 0 || rn->rows <= 0)
    return fail(why, "empty rows");
  for (int k = 1; k < rn->nouts; k++)
    if (!is_reduce_of(rn, rn->outs[k]))
      return fail(why, "an output after the first that is not a reduce");
  /* the main output: one reduce row per output row, for every reduce it
   * reads; the reduce outputs: their own row of every reduce they read */
  bool *read = xcalloc((size_t)rn->nreduces + 1, sizeof *read);
  const char *msg = "a reduce read at another row than the element's";
  for (int o = 0; o < rn->nouts && ok; o++) {
    CompIndexing *ci = indexing_comp_out_to_in(c, comp, top->op == HLO_TUPLE ? o : 0);
    for (int k = 0; k < rn->nreduces && ok; k++) {
      const IndexingMapSet *set = comp_indexing_get(ci, rn->reduces[k], 0);
      for (int j = 0; set && j < set->n && ok; j++) {
        const IndexingMap *m = set->maps[j];
        if (o == 0) {
          ok = row_map(m, root->shape->rank, rn->out_dim, rn->space->rank - 1) &&
               (!rn->row || same_results(m, rn->row));
          rn->row = m;
        } else {
          ok = own_row(m, rn->space->rank - 1);
        }
      }
      read[k] |= set != NULL;
    }
  }
  for (int k = 0; k < rn->nreduces && ok; k++)
    if (!read[k]) {
      ok = false;
      msg = "a reduce no output reads";
    }
  free(read);
  if (!ok)
    return fail(why, msg);
  if (!rn->row)
    return fail(why, "the main output reads no reduce");
  /* every row of a reduce output is some output row's reduce row: the main
   * output is S and reads its own rows */
  if (rn->nouts > 1) {
    if (!same_dims(root->shape, rn->space) || rn->out_dim != rn->dim)
      return fail(why, "reduce outputs of rows the main output does not cover");
    for (int k = 0, j = 0; k < root->shape->rank; k++) {
      if (k == rn->dim)
        continue;
      const AffExpr *e = rn->row->results[j++];
      if (e->kind != AFF_DIM || e->value != k)
        return fail(why, "reduce outputs of rows the main output does not cover");
    }
  }
  return true;
}
