/*
 * parse_unreachable.c - drops the computations a module's entry cannot
 * reach, right after parsing, as XLA does before it compiles.
 *
 * XLA's text parser does not verify a module, and XLA removes the
 * computations the entry computation cannot reach (through any
 * instruction's called computations) before its verifier and compiler see
 * them; a test file may hold helpers nothing calls, some of them invalid.
 * xhloc does the same: such a computation, with everything only it leads
 * to, leaves the module before the verifier, the passes and the printer see
 * it, so errors inside it are never reported.  One warning per module
 * names the first unreachable computation that no other unreachable one
 * calls, at its position, and counts the others (a test file may hold
 * hundreds).  Errors the parser itself finds (syntax, an undefined name, a
 * signature that does not match its root) stay errors wherever they are.
 */
#include "parse_internal.h"

void parse_drop_unreachable(HloModule *m, Diag *d) {
  if (!m->entry || m->ncomps < 2)
    return;
  HashMap index = {0};
  for (int k = 0; k < m->ncomps; k++)
    hashmap_put(&index, m->comps[k]->name, (void *)(intptr_t)(k + 1));
  /* 1: reachable from the entry; 2: called from an unreachable one. */
  uint8_t *mark = xcalloc((size_t)m->ncomps, 1);
  PtrVec stack = {0};
  vec_push(&stack, m->entry);
  while (stack.len > 0) {
    const HloComp *c = stack.data[--stack.len];
    intptr_t at = (intptr_t)hashmap_get(&index, c->name);
    if (at <= 0 || mark[at - 1] == 1)
      continue;
    mark[at - 1] = 1;
    for (int j = 0; j < c->ninstrs; j++)
      for (int i = 0; i < c->instrs[j]->ncalled; i++)
        vec_push(&stack, c->instrs[j]->called[i]);
  }
  for (int k = 0; k < m->ncomps; k++) {
    if (mark[k] == 1)
      continue;
    const HloComp *c = m->comps[k];
    for (int j = 0; j < c->ninstrs; j++)
      for (int i = 0; i < c->instrs[j]->ncalled; i++) {
        intptr_t at = (intptr_t)hashmap_get(&index,
                                            c->instrs[j]->called[i]->name);
        if (at > 0 && mark[at - 1] == 0)
          mark[at - 1] = 2;
      }
  }
  int n = 0;
  const HloComp *first = NULL;
  for (int k = 0; k < m->ncomps; k++) {
    HloComp *c = m->comps[k];
    if (mark[k] == 1)
      m->comps[n++] = c;
    else if (mark[k] == 0 && !first)
      first = c;
  }
  int others = m->ncomps - n - 1;
  if (first && others == 0)
    diag_warn(d, first->loc, "computation '%s' is not reachable from the "
              "entry computation; dropped, as XLA does", first->name);
  else if (first)
    diag_warn(d, first->loc, "computation '%s' and %d more are not reachable "
              "from the entry computation; dropped, as XLA does", first->name,
              others);
  m->ncomps = n;
  vec_free(&stack);
  free(mark);
  hashmap_free(&index);
}
