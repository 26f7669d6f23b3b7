/*
 * all_reduce_combiner.c - "all-reduce-combiner" (XLA's AllReduceCombiner):
 * independent all-reduces that would run as separate collectives become
 * one all-reduce of several operands (a tuple), so the devices meet once
 * for all of them; each old result is a get-tuple-element of the combined
 * one.  The runtime reduces operands of one element type as one flat
 * array (lib/runtime/collective_exec.c).
 *
 * Two all-reduces combine when they are in the same computation, each has
 * one array operand, no control dependencies and no constrain_layout, and
 * they agree on everything that says who meets and how: the reduction
 * computation (the same instructions), the replica groups (as lists), the
 * presence of a channel_id (its value is each op's own, the first one's
 * is kept), use_global_device_ids.  And neither depends on the other.
 * Going through the computation in order, each all-reduce joins the open
 * group of its kind unless it depends on a member or the group would pass
 * the threshold, in bytes of operands (--all-reduce-combine-threshold,
 * XLA's --xla_gpu_all_reduce_combine_threshold_bytes, default 30 MiB + 7
 * as XLA's) or 256 operands; then the group closes and a new one starts
 * with it.  A group of one stays as it was.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

#define DEFAULT_THRESHOLD ((int64_t)30 * 1024 * 1024 + 7)
#define MAX_OPERANDS 256

static bool candidate(IrEdit *e, const HloInstr *i) {
  return i->op == HLO_ALL_REDUCE && i->nops == 1 && shape_is_array(i->shape) &&
         shape_is_array(i->ops[0]->shape) && i->ncalled == 1 && !i->constrain_layout &&
         !ir_has_control_deps(e, i);
}

static bool same_groups(const HloInstr *a, const HloInstr *b) {
  int64_t **ga, **gb, *sa, *sb;
  int na = hlo_replica_groups_expand(a->replica_groups, &ga, &sa);
  int nb = hlo_replica_groups_expand(b->replica_groups, &gb, &sb);
  bool same = na == nb;
  for (int g = 0; same && g < na; g++) {
    same = sa[g] == sb[g];
    for (int k = 0; same && k < sa[g]; k++) same = ga[g][k] == gb[g][k];
  }
  hlo_replica_groups_free(na, ga, sa);
  hlo_replica_groups_free(nb, gb, sb);
  return same;
}

/* Whether a and b meet the same devices the same way (the reduction's
 * text in keys, by computation). */
static bool same_kind(const HloInstr *a, const char *akey, const HloInstr *b,
                      const char *bkey) {
  return a->parent == b->parent && a->has_channel_id == b->has_channel_id &&
         a->use_global_device_ids == b->use_global_device_ids &&
         (a->called[0] == b->called[0] || strcmp(akey, bkey) == 0) && same_groups(a, b);
}

typedef struct Group {
  HloInstr **m;                    /* members, in order */
  int n;
  int64_t bytes;
  int first;                       /* order index of the first member */
  char *key;                       /* the reduction computation's text */
} Group;

/* Whether x depends on a member of g: a walk up x's operands, no further
 * back than g's first member. */
static bool depends(const Group *g, const HloInstr *x, const int *pos, uint8_t *seen,
                    int nids) {
  memset(seen, 0, (size_t)nids);
  PtrVec stack = {0};
  for (int k = 0; k < x->nops; k++) vec_push(&stack, x->ops[k]);
  bool found = false;
  while (stack.len && !found) {
    HloInstr *i = stack.data[--stack.len];
    /* instructions made by this pass (a group combined before) are new,
     * and few: walked through every time */
    if (i->id >= 0 && i->id < nids) {
      if (seen[i->id] || pos[i->id] < g->first) continue;
      seen[i->id] = 1;
    }
    for (int k = 0; k < g->n; k++) found |= g->m[k] == i;
    for (int k = 0; k < i->nops; k++) vec_push(&stack, i->ops[k]);
    for (int k = 0; k < i->ncontrol_preds; k++) vec_push(&stack, i->control_preds[k]);
  }
  vec_free(&stack);
  return found;
}

/* Replaces g's members by one all-reduce of all their operands. */
static void combine(IrEdit *e, HloComp *c, Group *g) {
  Arena *a = ir_arena(e);
  HloInstr **ops = ARENA_ARRAY(a, HloInstr *, g->n);
  Shape **shapes = ARENA_ARRAY(a, Shape *, g->n);
  for (int k = 0; k < g->n; k++) {
    ops[k] = g->m[k]->ops[0];
    shapes[k] = g->m[k]->shape;
  }
  HloInstr *all = ir_clone(e, c, g->m[0], shape_tuple(a, g->n, shapes), g->n, ops);
  for (int k = 0; k < g->n; k++) ir_replace(e, g->m[k], ir_gte(e, c, all, k));
}

static bool close_group(IrEdit *e, HloComp *c, Group *g) {
  bool changed = g->n > 1;
  if (changed) combine(e, c, g);
  free(g->m);
  free(g->key);
  memset(g, 0, sizeof *g);
  return changed;
}

static bool combine_comp(IrEdit *e, HloComp *c, int64_t threshold) {
  int nids = 0;
  for (int k = 0; k < c->ninstrs; k++)
    if (c->instrs[k]->id + 1 > nids) nids = c->instrs[k]->id + 1;
  int *pos = xcalloc((size_t)nids + 1, sizeof *pos);
  uint8_t *seen = xmalloc((size_t)nids + 1);
  HloInstr **list = xmalloc(sizeof *list * ((size_t)c->ninstrs + 1));
  int n = c->ninstrs;
  memcpy(list, c->instrs, sizeof *list * (size_t)n);
  for (int k = 0; k < n; k++)
    if (list[k]->id >= 0) pos[list[k]->id] = k;
  Group *open = NULL;              /* one per kind seen so far */
  int nopen = 0;
  bool changed = false;
  for (int k = 0; k < n; k++) {
    HloInstr *x = list[k];
    if (ir_removed(x) || !candidate(e, x)) continue;
    StrBuf key;
    sb_init(&key);
    ir_comp_key(&key, x->called[0]);
    int64_t bytes = shape_byte_size(x->ops[0]->shape);
    Group *g = NULL;
    for (int j = 0; j < nopen && !g; j++)
      if (open[j].n && same_kind(open[j].m[0], open[j].key, x, key.s)) g = &open[j];
    if (g && (threshold < 0 || g->bytes + bytes > threshold || g->n >= MAX_OPERANDS ||
              depends(g, x, pos, seen, nids)))
      changed |= close_group(e, c, g);
    if (!g) {
      for (int j = 0; j < nopen && !g; j++)
        if (!open[j].n) g = &open[j];
      if (!g) {
        open = xreallocarray(open, (size_t)nopen + 1, sizeof *open);
        g = &open[nopen++];
        memset(g, 0, sizeof *g);
      }
    }
    if (!g->n) {
      g->first = k;
      g->key = key.s ? key.s : xstrdup("");
      key.s = NULL;
    }
    g->m = xreallocarray(g->m, (size_t)g->n + 1, sizeof *g->m);
    g->m[g->n++] = x;
    g->bytes += bytes;
    sb_free(&key);
  }
  for (int j = 0; j < nopen; j++) changed |= close_group(e, c, &open[j]);
  free(open);
  free(list);
  free(pos);
  free(seen);
  return changed;
}

bool pass_all_reduce_combiner(HloModule *m, PassContext *ctx) {
  int64_t threshold = ctx->all_reduce_combine_threshold == 0
                          ? DEFAULT_THRESHOLD : ctx->all_reduce_combine_threshold;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  int ncomps = m->ncomps;
  for (int k = 0; k < ncomps; k++)
    if (!m->comps[k]->fusion_instr) changed |= combine_comp(e, m->comps[k], threshold);
  return ir_end(e, changed);
}
