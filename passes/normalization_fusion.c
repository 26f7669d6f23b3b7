/*
 * normalization_fusion.c - "normalization-fusion" (the GPU target only): a
 * row normalization that priority-fusion left as several kernels becomes
 * one fusion (kind=kCustom), which emitters/norm_kernel.c computes with a
 * row per block or warp in one pass over HBM, as XLA:GPU's normalization
 * (Triton softmax) fusions do.
 *
 * It runs right after priority-fusion, on its fusions: priority-fusion has
 * already put each elementwise prologue into its consumers (a convert, x -
 * mean) and the epilogue into the last fusion (scale and bias, GELU), so
 * what is left to do is merging.  Softmax after priority-fusion is
 *
 *   max = input_reduce_fusion(x)             reduce over the rows
 *   e   = loop_fusion(max, x)                exp(x - broadcast(max))
 *   sum = input_reduce_fusion(e)
 *   out = loop_fusion(sum, e)                e / broadcast(sum)
 *
 * and layer norm or RMS norm look alike, with row-shaped loop fusions
 * between (mean = sum / n used twice).  From a candidate output O (an
 * elementwise-like fusion or op whose rows, along its minor-most physical
 * dimension, have n elements, 2 <= n <= ROW_NORM_MAX_ROW), the group grows
 * over O's producers, and theirs, that are used only inside the group:
 *   - row reductions: a reduce (fused or bare) of one operand over its
 *     minor-most physical dimension, of n elements; the first one fixes
 *     the reduces' operand shape S, which the others must have;
 *   - elementwise-like loop fusions (only the ops the elemental emitter
 *     computes at any index) and bare elementwise ops, of O's shape, of
 *     S, or of the rows' values of either (the shape without the row
 *     dimension, or with it of size 1).
 * O may be S itself or a reshape or transpose of it that keeps the rows
 * (Llama's RMS norm ends in a reshape of [1,64,4096] to [64,4096]).
 * A group with a reduce is merged into one computation (the members'
 * fused computations inlined, producers first; external operands become
 * its parameters) which must pass row_norm_analyze: along every path
 * from the root, every reduce is read at one reduce row per output row, the
 * same for all of them.  Otherwise the
 * merged computation is dropped and nothing changes.
 *
 * A row reduction that others read too (a sum a backward pass reads), and
 * a row reduction of O's rows that reads O (an attention's sum of
 * exponentials, divided by after the PV product, which reads the
 * exponentials too), join as outputs of the fusion (a tuple: O's value,
 * then theirs), unless an operand of the group depends on one of them;
 * then the group is tried again without such outputs.  Other producers
 * used outside the group (a mean computed from a sum) stay where they
 * are, and the fusion reads their results.  Candidates are tried from the
 * root of each computation towards its parameters (consumers first), so
 * a group is as large as it can be; an instruction joins one group at
 * most.
 *
 * The host target keeps its kernels (its reductions are row loops LLVM
 * vectorizes, and its kernel chains already run the row's kernels back to
 * back), so the pass does nothing there.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/analysis/row_norm.h"
#include "../lib/hlo/ir_edit.h"
#include "fusion_util.h"

enum {
  MAX_MEMBERS = 32,               /* fusions merged into one */
  MAX_INSTRS = 400,               /* instructions of the merged computation */
};

typedef struct Rows {
  const Shape *out;               /* the output's shape */
  int out_dim;                    /* its row dimension (minor-most) */
  int64_t n;                      /* the row length */
  const Shape *s;                 /* the reduces' operand shape S, once one
                                     joined (NULL before) */
  int dim;                        /* their reduced dimension */
} Rows;

typedef struct NormFuser {
  IrEdit *e;
  HloModule *m;
  AffCtx *aff;
  int cap;
  bool *claimed;                  /* by id: in a group already */
  uint32_t *seen;                 /* by id: generation stamps */
  uint32_t gen;
  PtrVec members;                 /* the group being grown, output first */
  bool escapes;                   /* reduces may be outputs too */
  PtrVec outs;                    /* those members, in order */
} NormFuser;

static void ensure_ids(NormFuser *f, int id) {
  if (id < f->cap)
    return;
  int cap = f->cap ? f->cap : 256;
  while (cap <= id)
    cap *= 2;
  f->claimed = xreallocarray(f->claimed, (size_t)cap, sizeof *f->claimed);
  memset(f->claimed + f->cap, 0, (size_t)(cap - f->cap) * sizeof *f->claimed);
  f->seen = xreallocarray(f->seen, (size_t)cap, sizeof *f->seen);
  memset(f->seen + f->cap, 0, (size_t)(cap - f->cap) * sizeof *f->seen);
  f->cap = cap;
}

static bool claimed(NormFuser *f, const HloInstr *i) {
  return i->id < f->cap && f->claimed[i->id];
}

static bool same_dims(const Shape *a, int rank, const int64_t *dims) {
  return shape_is_array(a) && a->rank == rank &&
         (rank == 0 || memcmp(a->dims, dims, sizeof(int64_t) * (size_t)rank) == 0);
}

/* An op the elemental emitter computes at any index (priority-fusion's
 * fusible producers). */
static bool elemental_op(const HloInstr *i) {
  if (ir_has_side_effect(i) || i->ncalled > 0)
    return false;
  if (hlo_op_is_elementwise(i->op))
    return i->op != HLO_STOCHASTIC_CONVERT && i->op != HLO_RNG;
  switch (i->op) {
  case HLO_PARAMETER: case HLO_CONSTANT: case HLO_BROADCAST: case HLO_RESHAPE:
  case HLO_BITCAST: case HLO_TRANSPOSE: case HLO_SLICE: case HLO_CONCATENATE:
  case HLO_PAD: case HLO_IOTA: case HLO_DYNAMIC_SLICE: case HLO_REVERSE:
  case HLO_GATHER: case HLO_COPY:
    return true;
  default:
    return false;
  }
}

static const HloComp *fused_comp(const HloInstr *i) {
  return i->op == HLO_FUSION && i->ncalled == 1 && i->called[0] && i->called[0]->root
             ? i->called[0] : NULL;
}

/* A fusion of elemental ops only, or a bare elementwise op. */
static bool elementwise_like(const HloInstr *i) {
  const HloComp *c = fused_comp(i);
  if (!c)
    return i->op != HLO_FUSION && hlo_op_is_elementwise(i->op) && elemental_op(i);
  for (int k = 0; k < c->ninstrs; k++)
    if (!elemental_op(c->instrs[k]))
      return false;
  return true;
}

/* The reduce of a row reduction (a fusion whose root it is, or itself) of
 * r's row length, over S once r has one, else NULL. */
static const HloInstr *row_reduce(const HloInstr *i, const Rows *r) {
  const HloComp *c = fused_comp(i);
  const HloInstr *x = c ? c->root : i;
  if (x->op != HLO_REDUCE || x->nops != 2 || x->ncalled != 1 || x->dims.n != 1 ||
      !shape_is_array(x->shape))
    return NULL;
  if (c) {
    for (int k = 0; k < c->ninstrs; k++)
      if (c->instrs[k] != x && !elemental_op(c->instrs[k]))
        return NULL;
  }
  const Shape *s = x->ops[0]->shape;
  int d = (int)x->dims.v[0];
  if (!shape_is_array(s) || row_norm_minor_dim(s) != d || s->dims[d] != r->n)
    return NULL;
  if (r->s && (!same_dims(s, r->s->rank, r->s->dims) || d != r->dim))
    return NULL;
  return x;
}

/* The shape of the rows' values of rows of shape s along dim: s without
 * that dimension, or with it of size 1. */
static bool row_shaped(const Shape *p, const Shape *s, int dim) {
  if (!shape_is_array(p) || s->rank > 64)
    return false;
  int64_t dims[64];
  int rank = s->rank;
  memcpy(dims, s->dims, sizeof(int64_t) * (size_t)rank);
  dims[dim] = 1;
  if (same_dims(p, rank, dims))
    return true;
  memmove(dims + dim, dims + dim + 1, sizeof(int64_t) * (size_t)(rank - dim - 1));
  return same_dims(p, rank - 1, dims);
}

/* A shape an elementwise member may have: the output's, S's, or their
 * rows' values'. */
static bool member_shape(const Shape *p, const Rows *r) {
  if (same_dims(p, r->out->rank, r->out->dims) || row_shaped(p, r->out, r->out_dim))
    return true;
  return r->s && (same_dims(p, r->s->rank, r->s->dims) || row_shaped(p, r->s, r->dim));
}

static bool is_member(const NormFuser *f, const HloInstr *i) {
  for (int k = 0; k < f->members.len; k++)
    if (f->members.data[k] == i)
      return true;
  return false;
}

enum { NO, JOIN, JOIN_AS_OUTPUT };

/* Whether producer p may join the group of rows r: JOIN when all its users
 * are members, JOIN_AS_OUTPUT for a row reduction that others read too
 * (when f->escapes). */
static int can_join(NormFuser *f, HloInstr *p, const Rows *r) {
  if (claimed(f, p) || is_member(f, p) || ir_has_control_deps(f->e, p) ||
      !shape_is_array(p->shape) || shape_is_dynamic(p->shape))
    return NO;
  bool reduce = row_reduce(p, r) != NULL;
  if (!reduce && !(elementwise_like(p) && member_shape(p->shape, r)))
    return NO;
  bool outside = ir_is_root(p);
  HloInstr **users;
  int nu = ir_users(f->e, p, &users);
  for (int k = 0; k < nu; k++)
    outside |= !is_member(f, users[k]);
  if (!outside)
    return nu > 0 ? JOIN : NO;
  return reduce && f->escapes ? JOIN_AS_OUTPUT : NO;
}

static int comp_size(const HloInstr *i) {
  const HloComp *c = fused_comp(i);
  return c ? c->ninstrs : 1;
}

/* Adds p to the group (as an output too when out); false past the
 * limits. */
static bool add_member(NormFuser *f, HloInstr *p, Rows *r, bool out, int *reduces, int *size) {
  if (f->members.len == MAX_MEMBERS || (out && f->outs.len == ROW_NORM_MAX_OUTS - 1))
    return false;
  const HloInstr *x = row_reduce(p, r);
  if (x) {
    (*reduces)++;
    r->s = x->ops[0]->shape;
    r->dim = (int)x->dims.v[0];
  }
  *size += comp_size(p);
  vec_push(&f->members, p);
  if (out)
    vec_push(&f->outs, p);
  return true;
}

/* Grows the group of output o over its producers, then (f->escapes) over
 * the row reductions of o's rows that read o (an attention's sum of the
 * exponentials, divided by after the PV product); false when it has no
 * row reduction or grows too large. */
static bool grow(NormFuser *f, HloInstr *o, Rows *r) {
  f->members.len = 0;
  f->outs.len = 0;
  vec_push(&f->members, o);
  int reduces = 0, size = comp_size(o);
  bool grew = true;
  while (grew) {
    grew = false;
    for (int k = 0; k < f->members.len; k++) {
      HloInstr *mb = f->members.data[k];
      for (int j = 0; j < mb->nops; j++) {
        HloInstr *p = mb->ops[j];
        int how = can_join(f, p, r);
        if (how == NO)
          continue;
        if (!add_member(f, p, r, how == JOIN_AS_OUTPUT, &reduces, &size))
          return false;
        grew = true;
      }
    }
  }
  if (f->escapes && r->s) {
    HloInstr **uv;
    int nu = ir_users(f->e, o, &uv);
    HloInstr **users = xmalloc(sizeof *users * (size_t)(nu > 0 ? nu : 1));
    memcpy(users, uv, sizeof *users * (size_t)nu);
    bool ok = true;
    for (int k = 0; k < nu && ok; k++) {
      HloInstr *u = users[k];
      if (!claimed(f, u) && !is_member(f, u) && !ir_has_control_deps(f->e, u) &&
          shape_is_array(u->shape) && !shape_is_dynamic(u->shape) && row_reduce(u, r))
        ok = add_member(f, u, r, true, &reduces, &size);
    }
    free(users);
    if (!ok)
      return false;
  }
  return reduces > 0 && reduces <= ROW_NORM_MAX_REDUCES && size <= MAX_INSTRS;
}

/* Whether an external operand depends on a member: the fusion would read
 * what it computes (a reduce output read by an operand of the group). */
static bool reads_itself(NormFuser *f, const PtrVec *ext) {
  f->gen++;
  PtrVec stack = {0};
  for (int k = 0; k < ext->len; k++)
    vec_push(&stack, ext->data[k]);
  bool found = false;
  while (stack.len && !found) {
    HloInstr *i = stack.data[--stack.len];
    if (is_member(f, i)) {
      found = true;
      break;
    }
    ensure_ids(f, i->id);
    if (f->seen[i->id] == f->gen)
      continue;
    f->seen[i->id] = f->gen;
    for (int j = 0; j < i->nops; j++)
      vec_push(&stack, i->ops[j]);
  }
  vec_free(&stack);
  return found;
}

/* The members merged into a new computation (producers first, in the
 * order of `order`); its parameters are the group's external operands, in
 * *ext.  The computation is not referenced by anything yet. */
static HloComp *merge(NormFuser *f, HloComp *c, HloInstr *const *order, int n,
                      PtrVec *ext) {
  IrEdit *e = f->e;
  Arena *a = ir_arena(e);
  HloComp *fc = ir_new_comp(e, "fused_computation");
  fc->execution_thread = c->execution_thread;
  HloInstr **value = xcalloc((size_t)f->members.len + 1, sizeof *value);
  PtrVec params = {0}, args = {0};
  HloInstr *root = NULL;
  for (int k = 0; k < n; k++) {
    HloInstr *mb = order[k];
    int mi = -1;
    for (int j = 0; j < f->members.len && mi < 0; j++)
      if (f->members.data[j] == mb)
        mi = j;
    if (mi < 0)
      continue;
    args.len = 0;
    for (int j = 0; j < mb->nops; j++) {
      HloInstr *o = mb->ops[j], *v = NULL;
      for (int q = 0; q < f->members.len && !v; q++)
        if (f->members.data[q] == o)
          v = value[q];
      for (int q = 0; q < ext->len && !v; q++)
        if (ext->data[q] == o)
          v = params.data[q];
      if (!v) {
        char name[32];
        snprintf(name, sizeof name, "param_%d", ext->len);
        v = ir_add_param(e, fc, shape_clone(a, o->shape), name);
        vec_push(ext, o);
        vec_push(&params, v);
      }
      vec_push(&args, v);
    }
    const HloComp *callee = fused_comp(mb);
    value[mi] = callee ? ir_inline(e, fc, callee, (HloInstr *const *)args.data)
                       : ir_clone(e, fc, mb, mb->shape, args.len, (HloInstr *const *)args.data);
    if (mi == 0)
      root = value[mi];
  }
  fc->root = root;
  if (f->outs.len > 0) {
    /* the main output, then the reduce outputs */
    HloInstr *elems[ROW_NORM_MAX_OUTS];
    elems[0] = root;
    for (int k = 0; k < f->outs.len; k++)
      for (int j = 0; j < f->members.len; j++)
        if (f->members.data[j] == f->outs.data[k])
          elems[k + 1] = value[j];
    fc->root = ir_tuple(e, fc, f->outs.len + 1, elems);
  }
  free(value);
  vec_free(&params);
  vec_free(&args);
  return fc;
}

static const char *fusion_name(NormFuser *f, const HloInstr *o) {
  const HloComp *c = fused_comp(o);
  const HloInstr *r = c ? c->root : o;
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, "norm_");
  for (const char *s = hlo_op_name(r->op); *s; s++)
    sb_putc(&b, *s == '-' ? '_' : *s);
  sb_puts(&b, "_fusion");
  char *name = ir_unique_name(f->e, b.s);
  sb_free(&b);
  return name;
}

/* Replaces the group by fusion computation fc over ext. */
static void build(NormFuser *f, HloComp *c, HloInstr *o, HloComp *fc, const PtrVec *ext) {
  IrEdit *e = f->e;
  Arena *a = ir_arena(e);
  Shape *shape = o->shape;
  if (f->outs.len > 0) {
    Shape *elems[ROW_NORM_MAX_OUTS];
    elems[0] = shape_clone(a, o->shape);
    for (int k = 0; k < f->outs.len; k++)
      elems[k + 1] = shape_clone(a, ((HloInstr *)f->outs.data[k])->shape);
    shape = shape_tuple(a, f->outs.len + 1, elems);
  }
  HloInstr *fu = ir_new(e, c, HLO_FUSION, shape, ext->len, (HloInstr *const *)ext->data);
  fu->name = (char *)fusion_name(f, o);
  fu->fusion_kind = FUSION_CUSTOM;
  fu->ncalled = 1;
  fu->called = ARENA_ARRAY(a, HloComp *, 1);
  fu->called[0] = fc;
  fu->metadata = o->metadata;
  fu->sharding = f->outs.len > 0 ? NULL : o->sharding;
  fu->frontend_attrs = o->frontend_attrs;
  fc->fusion_instr = fu;
  for (int k = 0; k < f->members.len; k++) {
    const HloInstr *mb = f->members.data[k];
    ensure_ids(f, mb->id);
    f->claimed[mb->id] = true;
  }
  ensure_ids(f, fu->id);
  f->claimed[fu->id] = true;
  if (f->outs.len == 0) {
    ir_replace(e, o, fu);
    return;
  }
  ir_replace(e, o, ir_gte(e, c, fu, 0));
  for (int k = 0; k < f->outs.len; k++)
    ir_replace(e, f->outs.data[k], ir_gte(e, c, fu, k + 1));
}

/* Tries the group of output o, with reduce outputs first, then without;
 * returns whether it made a fusion. */
static bool try_output(NormFuser *f, HloComp *c, HloInstr *o, HloInstr *const *order, int n) {
  if (claimed(f, o) || ir_removed(o) || ir_has_control_deps(f->e, o) ||
      !shape_is_array(o->shape) || shape_is_dynamic(o->shape) || o->shape->rank < 1 ||
      o->shape->rank > 64 || !elementwise_like(o))
    return false;
  for (int escapes = 1; escapes >= 0; escapes--) {
    f->escapes = escapes;
    Rows r = {o->shape, row_norm_minor_dim(o->shape), 0, NULL, 0};
    r.n = o->shape->dims[r.out_dim];
    if (r.n < 2 || r.n > ROW_NORM_MAX_ROW)
      return false;
    if (!grow(f, o, &r)) {
      if (escapes && f->outs.len > 0)
        continue;
      return false;
    }
    PtrVec ext = {0};
    HloComp *fc = merge(f, c, order, n, &ext);
    RowNorm rn;
    bool ok = fc->root && !(f->outs.len > 0 && reads_itself(f, &ext)) &&
              row_norm_analyze(f->aff, fc, &rn, NULL);
    if (ok)
      build(f, c, o, fc, &ext);
    vec_free(&ext);
    if (ok)
      return true;
    if (f->outs.len == 0)
      return false;             /* without reduce outputs it is the same */
  }
  return false;
}

static bool fuse_comp(NormFuser *f, HloComp *c) {
  HloInstr **order;
  int n = ir_instr_post_order(c, &order);
  bool changed = false;
  for (int k = n - 1; k >= 0; k--)
    changed |= try_output(f, c, order[k], order, n);
  free(order);
  return changed;
}

bool pass_normalization_fusion(HloModule *m, PassContext *ctx) {
  if (ctx->target != PASS_TARGET_GPU)
    return false;
  NormFuser f = {0};
  f.e = ir_begin(m);
  f.m = m;
  f.aff = aff_ctx_new();
  ensure_ids(&f, m->next_id);
  HloComp **comps;
  int n = fusion_control_comps(m, &comps);
  bool changed = false;
  for (int k = 0; k < n; k++)
    changed |= fuse_comp(&f, comps[k]);
  free(comps);
  /* the merged computations of groups that did not pass, and the member
   * fusions' computations of those that did */
  ir_remove_unused_comps(f.e);
  aff_ctx_free(f.aff);
  free(f.claimed);
  free(f.seen);
  vec_free(&f.members);
  vec_free(&f.outs);
  return ir_end(f.e, changed);
}
