/*
 * sort_simplifier.c - "sort-simplifier" (XLA's SortSimplifier): a sort of
 * several operands whose result elements are not all used, and whose
 * comparator does not look at the unused operands, sorts only the used
 * ones.  The comparator is rebuilt without the parameters of the dropped
 * operands; users read the new result (the array itself when one operand is
 * left).
 */
#include "passes.h"

#include <stdlib.h>

#include "../lib/hlo/ir_edit.h"

/* The comparator without the parameters of dropped operands (pairs 2k,
 * 2k+1), renumbered. */
static HloComp *trimmed_comparator(IrEdit *e, const HloComp *f,
                                   const bool *used) {
  HloComp *g = ir_clone_comp(e, f, ".trimmed");
  int np = 0;
  for (int k = 0; k < g->nparams; k++) {
    HloInstr *p = g->params[k];
    if (!used[k / 2]) {
      ir_remove(e, p);
      continue;
    }
    p->param_number = np;
    g->params[np++] = p;
  }
  g->nparams = np;
  return g;
}

bool pass_sort_simplifier(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  Arena *a = ir_arena(e);
  bool changed = false;
  int ncomps = m->ncomps;
  for (int ci = 0; ci < ncomps; ci++) {
    HloComp *c = m->comps[ci];
    int ninstrs = c->ninstrs;
    for (int k = 0; k < ninstrs; k++) {
      HloInstr *s = c->instrs[k];
      if (ir_removed(s) || s->op != HLO_SORT || s->nops < 2 ||
          s->ncalled != 1 || !shape_is_tuple(s->shape) || ir_is_root(s) ||
          ir_has_control_deps(e, s))
        continue;
      const HloComp *f = s->called[0];
      if (f->nparams != 2 * s->nops)
        continue;
      bool *used = xcalloc((size_t)s->nops, sizeof *used);
      HloInstr **us;
      int nu = ir_users(e, s, &us);
      bool ok = true;
      for (int j = 0; j < nu && ok; j++) {
        ok = us[j]->op == HLO_GET_TUPLE_ELEMENT;
        if (ok)
          used[us[j]->tuple_index] = true;
      }
      /* An operand the comparator reads stays, used or not. */
      for (int q = 0; ok && q < f->ninstrs; q++) {
        const HloInstr *fi = f->instrs[q];
        if (ir_removed(fi))
          continue;
        for (int j = 0; j < fi->nops; j++) {
          const HloInstr *o = fi->ops[j];
          if (o->op == HLO_PARAMETER && !used[o->param_number / 2])
            used[o->param_number / 2] = true; /* read: keep it */
        }
        if (fi->op == HLO_PARAMETER && fi == f->root)
          used[fi->param_number / 2] = true;
      }
      int nkeep = 0;
      for (int j = 0; j < s->nops; j++)
        nkeep += used[j];
      if (!ok || nkeep == s->nops || nkeep == 0) {
        free(used);
        continue;
      }
      HloInstr **ops = ARENA_ARRAY(a, HloInstr *, nkeep);
      Shape **shapes = ARENA_ARRAY(a, Shape *, nkeep);
      int64_t *newidx = ARENA_ARRAY(a, int64_t, s->nops);
      int n = 0;
      for (int j = 0; j < s->nops; j++) {
        newidx[j] = used[j] ? n : -1;
        if (used[j]) {
          ops[n] = s->ops[j];
          shapes[n++] = shape_clone(a, s->shape->tuple[j]);
        }
      }
      Shape *ns = nkeep == 1 ? shapes[0] : shape_tuple(a, nkeep, shapes);
      HloInstr *ns_i = ir_clone(e, c, s, ns, nkeep, ops);
      ns_i->called[0] = trimmed_comparator(e, f, used);
      /* Users: new get-tuple-elements, or the array itself. */
      nu = ir_users(e, s, &us);
      HloInstr **copy = xmalloc(sizeof *copy * (size_t)(nu + 1));
      for (int j = 0; j < nu; j++)
        copy[j] = us[j];
      for (int j = 0; j < nu; j++) {
        HloInstr *g = copy[j];
        HloInstr *v = nkeep == 1 ? ns_i : ir_gte(e, c, ns_i, newidx[g->tuple_index]);
        ir_replace(e, g, v);
      }
      free(copy);
      ir_remove(e, s);
      free(used);
      changed = true;
    }
  }
  return ir_end(e, changed);
}
