/*
 * latency_hiding_scheduler.c - "latency-hiding-scheduler": the instruction
 * order of each computation (its schedule: buffer assignment and the thunk
 * emitter follow it) chosen so that asynchronous collectives overlap
 * compute, as XLA's LatencyHidingScheduler aims to, without its cost model:
 * each -start (all-reduce-start, all-gather-start, collective-permute-start)
 * goes as early as its operands allow, each -done as late as its users
 * allow, and the work between them is whatever does not depend on the
 * collective.
 *
 * A list scheduler over the dependence graph (operands and control
 * predecessors): of the instructions whose predecessors are scheduled it
 * takes, in this order of preference,
 *   1. a -start;
 *   2. an instruction that a -start not yet scheduled depends on (so the
 *      collectives start early);
 *   3. any other instruction but a -done and the root;
 *   4. a -done (only when nothing else is ready: as late as possible);
 *   5. the root;
 * ties by the old order.  Fusion computations keep their order.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

static bool is_start(HloOp op) {
  return op == HLO_ALL_REDUCE_START || op == HLO_ALL_GATHER_START ||
         op == HLO_COLLECTIVE_PERMUTE_START;
}

static bool is_done(HloOp op) {
  return op == HLO_ALL_REDUCE_DONE || op == HLO_ALL_GATHER_DONE ||
         op == HLO_COLLECTIVE_PERMUTE_DONE;
}

typedef struct Node {
  HloInstr *i;
  int npred, nsucc, *succ;
  bool feeds_start;
} Node;

/* The preference class of ready node k (1..5 above). */
static int pref(const Node *v, const HloComp *c) {
  if (is_start(v->i->op)) return 1;
  if (v->i == c->root) return 5;
  if (is_done(v->i->op)) return 4;
  return v->feeds_start ? 2 : 3;
}

static bool schedule_comp(HloComp *c) {
  int n = 0;
  for (int k = 0; k < c->ninstrs; k++) n += !ir_removed(c->instrs[k]);
  bool any = false;
  for (int k = 0; k < c->ninstrs; k++)
    any |= !ir_removed(c->instrs[k]) && is_start(c->instrs[k]->op);
  if (!any) return false;
  Node *v = xcalloc((size_t)n, sizeof *v);
  int maxid = 0;
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->id > maxid) maxid = c->instrs[k]->id;
  int *at = xmalloc(sizeof *at * ((size_t)maxid + 1));
  for (int k = 0; k <= maxid; k++) at[k] = -1;
  for (int k = 0, j = 0; k < c->ninstrs; k++)
    if (!ir_removed(c->instrs[k])) {
      v[j].i = c->instrs[k];
      at[c->instrs[k]->id] = j++;
    }
  /* edges: distinct predecessors in this computation */
  int *mark = xcalloc((size_t)n, sizeof *mark);
  for (int pass = 0; pass < 2; pass++) {
    for (int j = 0; j < n; j++) {
      HloInstr *i = v[j].i;
      int np = i->nops + i->ncontrol_preds;
      for (int q = 0; q < np; q++) {
        HloInstr *p = q < i->nops ? i->ops[q] : i->control_preds[q - i->nops];
        int s = p->id >= 0 && p->id <= maxid ? at[p->id] : -1;
        if (s < 0 || mark[s] == (pass * n + j) + 1) continue;
        mark[s] = pass * n + j + 1;
        if (pass == 0) {
          v[j].npred++;
          v[s].nsucc++;
        } else {
          v[s].succ[v[s].nsucc++] = j;
        }
      }
    }
    if (pass == 0)
      for (int j = 0; j < n; j++) {
        v[j].succ = xcalloc((size_t)v[j].nsucc + 1, sizeof *v[j].succ);
        v[j].nsucc = 0;
      }
  }
  /* what the -starts depend on: backwards from each */
  int *stack = xmalloc(sizeof *stack * ((size_t)n + 1));
  for (int j = 0; j < n; j++) {
    if (!is_start(v[j].i->op)) continue;
    int top = 0;
    stack[top++] = j;
    while (top) {
      HloInstr *i = v[stack[--top]].i;
      int np = i->nops + i->ncontrol_preds;
      for (int q = 0; q < np; q++) {
        HloInstr *p = q < i->nops ? i->ops[q] : i->control_preds[q - i->nops];
        int s = p->id >= 0 && p->id <= maxid ? at[p->id] : -1;
        if (s >= 0 && !v[s].feeds_start) {
          v[s].feeds_start = true;
          stack[top++] = s;
        }
      }
    }
  }
  /* the list: the ready node of the best class, the earliest of it */
  HloInstr **order = xmalloc(sizeof *order * ((size_t)c->ninstrs + 1));
  bool *done = xcalloc((size_t)n, sizeof *done);
  int count = 0;
  while (count < n) {
    int best = -1, best_pref = 99;
    for (int j = 0; j < n; j++)
      if (!done[j] && v[j].npred == 0 && pref(&v[j], c) < best_pref) {
        best = j;
        best_pref = pref(&v[j], c);
      }
    if (best < 0) break;           /* a cycle: cannot happen in valid HLO */
    done[best] = true;
    order[count++] = v[best].i;
    for (int q = 0; q < v[best].nsucc; q++) v[v[best].succ[q]].npred--;
  }
  bool changed = false;
  if (count == n) {
    for (int k = 0, j = 0; k < c->ninstrs; k++)
      if (!ir_removed(c->instrs[k])) changed |= c->instrs[k] != order[j++];
    /* removed instructions stay behind for ir_end to drop */
    for (int k = 0; k < c->ninstrs; k++)
      if (ir_removed(c->instrs[k])) order[count++] = c->instrs[k];
    memcpy(c->instrs, order, sizeof *order * (size_t)c->ninstrs);
  }
  for (int j = 0; j < n; j++) free(v[j].succ);
  free(v);
  free(at);
  free(mark);
  free(stack);
  free(order);
  free(done);
  return changed;
}

bool pass_latency_hiding_scheduler(HloModule *m, PassContext *ctx) {
  (void)ctx;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int k = 0; k < m->ncomps; k++)
    if (!m->comps[k]->fusion_instr) changed |= schedule_comp(m->comps[k]);
  return ir_end(e, changed);
}
