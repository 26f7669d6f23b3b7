/*
 * layout_assignment.c - "layout-assignment" (XLA's LayoutAssignment, in the
 * simple form this backend needs): gives every array shape in the module a
 * layout.
 *
 * Every instruction gets the default layout {rank-1,...,0}, except:
 *   - the entry parameters take the layouts of entry_computation_layout (or
 *     keep their own when the module has none); code reading them is fine as
 *     it is, since kernels address every buffer through its own layout;
 *   - an instruction that produces (through tuples) a leaf of a
 *     computation's result and already has the layout that result asks for
 *     keeps it (so the pass is idempotent after the root copies below);
 *   - the parameters of a fusion computation with a single caller take the
 *     layouts of the fusion's operands, and its root the fusion's layout;
 *   - tuple and get-tuple-element forward the layouts of what they hold.
 * Then the layouts must agree where buffers are forwarded: a computation's
 * root whose layout differs from the result layout asked for (the entry's
 * from entry_computation_layout, others the default) gets a `copy`, and so
 * does an operand of while, conditional, call or a shared fusion whose
 * layout is not the default, and the operand of a SliceToDynamic custom-call
 * whose layout is not the call's (its buffer holds the operand's bytes).
 *
 * A bitcast reinterprets its operand's physical buffer, so its meaning
 * depends on both layouts.  A bitcast whose operand's or result's layout
 * changes is rewritten, from the old layouts, as transpose (operand to its
 * physical order), bitcast (row-major reinterpretation) and transpose
 * (physical order back to the result's logical order), leaving out what is
 * the identity.
 *
 * Computations are processed callers first, so a fusion computation sees
 * its caller's final layouts.
 *
 * Sub-byte arrays are kept one element per byte (as literals and xhlo-run's
 * inputs and outputs hold them): XLA's packing of them (E(4), E(2) in the
 * layouts of optimized dumps) is dropped first, everywhere.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"

typedef struct LayoutPass {
  IrEdit *e;
  HloModule *m;
  Arena *a;
  PassContext *ctx;
  int nids;                       /* ids below this have slots below */
  Shape **target;                 /* by id: the shape to assign */
  uint8_t *keep;                  /* by id: a result leaf keeping its layout */
  int *fusion_callers;            /* by comp index: fusion call sites */
  int *other_callers;             /* by comp index: other call sites */
  HloInstr **fusion_caller;       /* by comp index: a live fusion calling it */
  HashMap comp_index;             /* computation name -> index + 1 */
  bool changed;
} LayoutPass;

/* s with every array layout the default one; s itself when it already is. */
static Shape *default_shape(Arena *a, Shape *s) {
  if (!s)
    return s;
  if (s->et == ET_TUPLE) {
    Shape **el = NULL;
    for (int k = 0; k < s->ntuple; k++) {
      Shape *d = default_shape(a, s->tuple[k]);
      if (d != s->tuple[k] && !el) {
        el = ARENA_ARRAY(a, Shape *, s->ntuple);
        memcpy(el, s->tuple, sizeof(Shape *) * (size_t)s->ntuple);
      }
      if (el)
        el[k] = d;
    }
    if (!el)
      return s;
    Shape *r = shape_clone(a, s);
    r->tuple = el;
    return r;
  }
  if (!et_is_array(s->et) || layout_is_default(s->layout, s->rank))
    return s;
  Shape *r = shape_clone(a, s);
  r->layout = layout_default(a, s->rank);
  return r;
}

static bool is_default_shape(Shape *s) {
  /* default_shape allocates only when s is not default: compare first. */
  if (s->et == ET_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (!is_default_shape(s->tuple[k]))
        return false;
    return true;
  }
  return !et_is_array(s->et) || layout_is_default(s->layout, s->rank);
}

static int comp_idx(LayoutPass *p, const HloComp *c) {
  intptr_t v = (intptr_t)hashmap_get(&p->comp_index, c->name);
  return v > 0 && p->m->comps[v - 1] == c ? (int)v - 1 : -1;
}

static Shape *target_of(LayoutPass *p, const HloInstr *i) {
  if (i->id < p->nids && p->target[i->id])
    return p->target[i->id];
  return i->shape;
}

/* The fusion that alone calls c (and nothing else does), or NULL. */
static HloInstr *sole_fusion(LayoutPass *p, const HloComp *c) {
  int k = comp_idx(p, c);
  if (k < 0 || p->fusion_callers[k] != 1 || p->other_callers[k] != 0)
    return NULL;
  return p->fusion_caller[k];
}

static bool single_fusion_comp(LayoutPass *p, const HloModule *m,
                               const HloComp *c) {
  (void)m;
  return sole_fusion(p, c) != NULL;
}

/* Instructions whose result layout may be chosen freely: not forwarding a
 * buffer, not tied to a called computation's signature, not a bitcast. */
static bool free_layout(LayoutPass *p, const HloModule *m, const HloInstr *i) {
  switch (i->op) {
  case HLO_PARAMETER: case HLO_GET_TUPLE_ELEMENT: case HLO_TUPLE:
  case HLO_BITCAST: case HLO_WHILE: case HLO_CONDITIONAL: case HLO_CALL:
    return false;
  case HLO_FUSION:
    return i->ncalled == 1 && single_fusion_comp(p, m, i->called[0]);
  default:
    return i->ncalled == 0 || i->op == HLO_REDUCE || i->op == HLO_SORT ||
           i->op == HLO_MAP || i->op == HLO_SCATTER ||
           i->op == HLO_REDUCE_WINDOW;
  }
}

/* Marks the result leaves of root that already have want's layouts. */
static void mark_keep(LayoutPass *p, const HloModule *m, HloInstr *x,
                      const Shape *want, int depth) {
  if (depth > 64 || x->id >= p->nids)
    return;
  if (x->op == HLO_TUPLE) {
    if (want->et == ET_TUPLE && want->ntuple == x->nops)
      for (int k = 0; k < x->nops; k++)
        mark_keep(p, m, x->ops[k], want->tuple[k], depth + 1);
    return;
  }
  if (free_layout(p, m, x) && shape_equal(x->shape, want))
    p->keep[x->id] = 1;
}

/* The desired result shape of c. */
static Shape *desired_root(LayoutPass *p, HloModule *m, HloComp *c) {
  if (c == m->entry) {
    ProgramShape *el = m->entry_layout;
    if (el && el->result && shape_compatible(el->result, c->root->shape))
      return el->result;
    return c->root->shape;
  }
  HloInstr *f = sole_fusion(p, c);
  if (f && f->ncalled == 1 && shape_compatible(f->shape, c->root->shape))
    return f->shape;
  return default_shape(p->a, c->root->shape);
}

/* Target shape of a parameter of c. */
static Shape *param_target(LayoutPass *p, HloModule *m, HloComp *c,
                           HloInstr *i) {
  int64_t n = i->param_number;
  if (c == m->entry) {
    ProgramShape *el = m->entry_layout;
    if (el && el->nparams == c->nparams && n >= 0 && n < el->nparams &&
        shape_compatible(el->params[n], i->shape))
      return el->params[n];
    return i->shape;
  }
  HloInstr *f = sole_fusion(p, c);
  if (f && n >= 0 && n < f->nops &&
      shape_compatible(f->ops[n]->shape, i->shape))
    return f->ops[n]->shape;
  return default_shape(p->a, i->shape);
}

static void compute_targets(LayoutPass *p, HloModule *m, HloComp *c,
                            const Shape *want_root) {
  mark_keep(p, m, c->root, want_root, 0);
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (ir_removed(i) || i->id >= p->nids)
      continue;
    Shape *t;
    if (i->op == HLO_PARAMETER) {
      t = param_target(p, m, c, i);
    } else if (p->keep[i->id]) {
      t = i->shape;
    } else if (i->op == HLO_TUPLE) {
      Shape **el = ARENA_ARRAY(p->a, Shape *, i->nops > 0 ? i->nops : 1);
      for (int j = 0; j < i->nops; j++)
        el[j] = target_of(p, i->ops[j]);
      t = shape_tuple(p->a, i->nops, el);
    } else if (i->op == HLO_GET_TUPLE_ELEMENT) {
      Shape *ts = target_of(p, i->ops[0]);
      if (ts->et == ET_TUPLE && i->tuple_index >= 0 &&
          i->tuple_index < ts->ntuple)
        t = ts->tuple[i->tuple_index];
      else
        t = default_shape(p->a, i->shape);
    } else {
      t = default_shape(p->a, i->shape);
    }
    p->target[i->id] = t;
  }
}

/* Major-to-minor order of s's dimensions; false on a malformed layout. */
static bool phys_order(const Shape *s, int64_t *order) {
  const Layout *l = s->layout;
  if (!l || !l->minor_to_major || l->rank != s->rank) {
    for (int k = 0; k < s->rank; k++)
      order[k] = k;
    return true;
  }
  uint8_t seen[64] = {0};
  for (int k = 0; k < s->rank; k++) {
    int64_t d = l->minor_to_major[s->rank - 1 - k];
    if (d < 0 || d >= s->rank || seen[d])
      return false;
    seen[d] = 1;
    order[k] = d;
  }
  return true;
}

static bool is_identity(const int64_t *perm, int rank) {
  for (int k = 0; k < rank; k++)
    if (perm[k] != k)
      return false;
  return true;
}

static bool same_phys_order(const Shape *a, const Shape *b) {
  int64_t oa[64], ob[64];
  if (a->rank != b->rank || a->rank > 64)
    return false;
  return phys_order(a, oa) && phys_order(b, ob) &&
         memcmp(oa, ob, sizeof(int64_t) * (size_t)a->rank) == 0;
}

/* Rewrites bitcast i, whose meaning the old layouts give, for the new
 * layouts (the operand's and its own targets) when the physical order of
 * either changes: transpose to the operand's physical order, reshape (and
 * bitcast-convert) to the result's physical dimensions, transpose to the
 * result's logical order, all of them logical operations.  False with an
 * error. */
static bool rewrite_bitcast(LayoutPass *p, HloComp *c, HloInstr *i) {
  HloInstr *x = i->ops[0];
  const Shape *os = x->shape, *rs = i->shape;
  if (!shape_is_array(os) || !shape_is_array(rs))
    return true;
  if (same_phys_order(os, target_of(p, x)) &&
      same_phys_order(rs, target_of(p, i)))
    return true;
  int64_t in_order[64], out_order[64];
  if (os->rank > 64 || rs->rank > 64 || !phys_order(os, in_order) ||
      !phys_order(rs, out_order)) {
    diag_error(p->ctx->diag, i->loc,
               "layout-assignment: bitcast '%s' has a malformed layout",
               i->name);
    return false;
  }
  if (et_bytes(os->et) != et_bytes(rs->et) || shape_is_dynamic(os) ||
      shape_is_dynamic(rs)) {
    diag_error(p->ctx->diag, i->loc,
               "layout-assignment: bitcast '%s' changes the element size or "
               "has dynamic dimensions under a non-default layout "
               "(unsupported)", i->name);
    return false;
  }
  /* The operand in its physical order. */
  HloInstr *t = x;
  if (!is_identity(in_order, os->rank))
    t = ir_transpose(p->e, c, x, in_order);
  if (t->shape->et != rs->et) {
    Shape *cs = ir_shape_with_et(p->a, t->shape, rs->et);
    cs = default_shape(p->a, cs);
    t = ir_new(p->e, c, HLO_BITCAST_CONVERT, cs, 1, &t);
  }
  /* Reinterpreted as the result's physical dimensions. */
  int64_t pd[64];
  for (int k = 0; k < rs->rank; k++)
    pd[k] = rs->dims[out_order[k]];
  bool same_dims = t->shape->rank == rs->rank;
  for (int k = 0; k < rs->rank && same_dims; k++)
    same_dims = t->shape->dims[k] == pd[k];
  if (!same_dims)
    t = ir_reshape(p->e, c, t, rs->rank, pd);
  /* Back to the result's logical order. */
  if (!is_identity(out_order, rs->rank)) {
    int64_t perm[64];
    for (int k = 0; k < rs->rank; k++)
      perm[out_order[k]] = k;
    t = ir_transpose(p->e, c, t, perm);
  }
  if (t != x)
    t->metadata = i->metadata;
  ir_replace(p->e, i, t);
  p->changed = true;
  return true;
}

/* x as an instruction of shape `want` (same logical shape): x itself when
 * the layouts agree, else copies of the leaves that differ. */
static HloInstr *copy_to(LayoutPass *p, HloComp *c, HloInstr *x,
                         const Shape *want, int depth) {
  if (shape_equal(x->shape, want) || depth > 64)
    return x;
  if (x->shape->et == ET_TUPLE) {
    if (want->et != ET_TUPLE || want->ntuple != x->shape->ntuple)
      return x;
    int n = want->ntuple;
    HloInstr **el = ARENA_ARRAY(p->a, HloInstr *, n > 0 ? n : 1);
    for (int k = 0; k < n; k++) {
      HloInstr *v = x->op == HLO_TUPLE ? x->ops[k] : ir_gte(p->e, c, x, k);
      el[k] = copy_to(p, c, v, want->tuple[k], depth + 1);
    }
    p->changed = true;
    return ir_tuple(p->e, c, n, el);
  }
  if (!et_is_array(x->shape->et))
    return x;
  p->changed = true;
  return ir_new(p->e, c, HLO_COPY, shape_clone(p->a, want), 1, &x);
}

/* Operands of instructions whose callee signatures are default get copies
 * to the default layout. */
static bool pins_operands(LayoutPass *p, HloModule *m, const HloInstr *i) {
  switch (i->op) {
  case HLO_WHILE: case HLO_CONDITIONAL: case HLO_CALL:
    return true;
  case HLO_FUSION:
    return !(i->ncalled == 1 && single_fusion_comp(p, m, i->called[0]));
  default:
    return false;
  }
}

static bool run_comp(LayoutPass *p, HloModule *m, HloComp *c) {
  if (!c->root)
    return true;
  Shape *want = desired_root(p, m, c);
  compute_targets(p, m, c, want);
  int n = c->ninstrs;
  for (int k = 0; k < n; k++) {
    HloInstr *i = c->instrs[k];
    if (!ir_removed(i) && i->op == HLO_BITCAST && i->id < p->nids &&
        !rewrite_bitcast(p, c, i))
      return false;
  }
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (ir_removed(i) || i->id >= p->nids)
      continue;
    Shape *t = p->target[i->id];
    if (t && t != i->shape && !shape_equal(t, i->shape)) {
      i->shape = t;
      p->changed = true;
    }
  }
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (ir_removed(i) || !pins_operands(p, m, i))
      continue;
    for (int j = 0; j < i->nops; j++) {
      HloInstr *o = i->ops[j];
      if (!is_default_shape(o->shape))
        ir_set_operand(p->e, i, j,
                       copy_to(p, c, o, default_shape(p->a, o->shape), 0));
    }
  }
  /* SliceToDynamic's buffer holds its operand's bytes: one layout */
  for (int k = 0; k < c->ninstrs; k++) {
    HloInstr *i = c->instrs[k];
    if (ir_removed(i) || i->op != HLO_CUSTOM_CALL || !i->cc || !i->cc->target ||
        strcmp(i->cc->target, "SliceToDynamic") != 0 || i->nops < 1 ||
        !shape_is_array(i->shape))
      continue;
    Shape *w = shape_clone(p->a, i->shape);
    w->dyn = NULL;
    HloInstr *o = i->ops[0];
    if (shape_compatible(o->shape, w) && !shape_equal(o->shape, w))
      ir_set_operand(p->e, i, 0, copy_to(p, c, o, w, 0));
  }
  HloInstr *r = copy_to(p, c, c->root, want, 0);
  if (r != c->root) {
    HloInstr *old = c->root;
    c->root = r;
    ir_remove_dead(p->e, old);
    p->changed = true;
  }
  return true;
}

static void count_callers(LayoutPass *p, const HloModule *m) {
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i))
        continue;
      for (int j = 0; j < i->ncalled; j++) {
        int x = comp_idx(p, i->called[j]);
        if (x < 0)
          continue;
        if (i->op == HLO_FUSION) {
          p->fusion_callers[x]++;
          p->fusion_caller[x] = i;
        } else
          p->other_callers[x]++;
      }
    }
  }
}

/* Drops the element size E(n) of sub-byte array leaves of s. */
static bool unpack_sub_byte(Shape *s) {
  if (!s)
    return false;
  bool changed = false;
  if (s->et == ET_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      changed |= unpack_sub_byte(s->tuple[k]);
    return changed;
  }
  if (s->layout && s->layout->element_size_bits > 0 && et_is_array(s->et) &&
      et_bits(s->et) < 8) {
    s->layout->element_size_bits = 0;
    changed = true;
  }
  return changed;
}

static bool unpack_sub_byte_module(HloModule *m) {
  bool changed = false;
  ProgramShape *el = m->entry_layout;
  if (el) {
    for (int k = 0; k < el->nparams; k++)
      changed |= unpack_sub_byte(el->params[k]);
    changed |= unpack_sub_byte(el->result);
  }
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++)
      changed |= unpack_sub_byte(m->comps[c]->instrs[k]->shape);
  return changed;
}

bool pass_layout_assignment(HloModule *m, PassContext *ctx) {
  if (!m->entry)
    return false;
  bool unpacked = unpack_sub_byte_module(m);
  LayoutPass p = {0};
  p.e = ir_begin(m);
  p.m = m;
  for (int k = 0; k < m->ncomps; k++)
    hashmap_put(&p.comp_index, m->comps[k]->name, (void *)(intptr_t)(k + 1));
  p.a = m->arena;
  p.ctx = ctx;
  p.nids = m->next_id;
  p.target = xcalloc((size_t)p.nids + 1, sizeof *p.target);
  p.keep = xcalloc((size_t)p.nids + 1, 1);
  p.fusion_callers = xcalloc((size_t)m->ncomps + 1, sizeof(int));
  p.other_callers = xcalloc((size_t)m->ncomps + 1, sizeof(int));
  p.fusion_caller = xcalloc((size_t)m->ncomps + 1, sizeof(HloInstr *));
  count_callers(&p, m);
  /* Callers first: the reverse of the callees-first order. */
  HloComp **order;
  int n = ir_comp_post_order(m, &order);
  bool ok = true;
  for (int k = n - 1; k >= 0 && ok; k--)
    ok = run_comp(&p, m, order[k]);
  free(order);
  free(p.target);
  free(p.keep);
  free(p.fusion_callers);
  free(p.other_callers);
  free(p.fusion_caller);
  hashmap_free(&p.comp_index);
  return ir_end(p.e, ok && (p.changed || unpacked));
}
