/*
 * fusion_util.c - what the fusion passes (priority-fusion, fusion-wrapper)
 * share: the computations they run in.
 */
#include "fusion_util.h"

int fusion_control_comps(const HloModule *m, HloComp ***out) {
  HashMap seen = {0}, embedded = {0};
  Vec(HloComp *) list = {0};
  if (m->entry) {
    vec_push(&list, m->entry);
    hashmap_put(&seen, m->entry->name, m->entry);
  }
  for (int q = 0; q < list.len; q++) {
    HloComp *c = list.data[q];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (i->op != HLO_WHILE && i->op != HLO_CONDITIONAL && i->op != HLO_CALL)
        continue;
      for (int j = 0; j < i->ncalled; j++) {
        HloComp *cc = i->called[j];
        if (!hashmap_get(&seen, cc->name)) {
          hashmap_put(&seen, cc->name, cc);
          vec_push(&list, cc);
        }
      }
    }
  }
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (i->op == HLO_WHILE || i->op == HLO_CONDITIONAL || i->op == HLO_CALL)
        continue;
      for (int j = 0; j < i->ncalled; j++)
        hashmap_put(&embedded, i->called[j]->name, i->called[j]);
    }
  }
  int n = 0;
  for (int k = 0; k < list.len; k++)
    if (!hashmap_get(&embedded, list.data[k]->name))
      list.data[n++] = list.data[k];
  hashmap_free(&seen);
  hashmap_free(&embedded);
  *out = list.data;
  return n;
}
