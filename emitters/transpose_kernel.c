/*
 * transpose_kernel.c - the GPU transpose kernel (seed 004's transpose
 * emitter): for a fusion whose hero is a transpose, or a copy that changes
 * the layout, such that the minor-most physical dimension of the hero's
 * operand is not the minor-most physical dimension of the output.
 *
 * Work is split into 32x32 tiles of the output's two "swapped" dimensions
 * (a: the output dimension the operand's minor dimension becomes; b: the
 * output's own minor dimension) times every index of the other output
 * dimensions; one block of 32x8 threads per tile.
 *   read:  thread (tx, ty) computes the hero's operand, through the
 *          elemental emitter (fused producers included), at a = tile_a+tx,
 *          b = tile_b+r for r = ty, ty+8, ...: consecutive threads read
 *          consecutive operand elements; values go to tile[r][tx] of a
 *          32x33 shared array (the padding column avoids bank conflicts).
 *   __syncthreads
 *   write: thread (tx, ty) takes tile[tx][r], the output element at
 *          b = tile_b+tx, a = tile_a+r, applies the elementwise consumers
 *          between the hero and the root, and stores: consecutive threads
 *          write consecutive output elements.
 * Elements outside the output (edge tiles) are masked on both sides; the
 * barrier is outside the masks.
 *
 * Fusions this does not fit (several outputs, a hero with a consumer that
 * is not elementwise, small or degenerate dimensions) are refused with an
 * error; codegen.c then uses the loop kernel.  The host target never comes
 * here: its loop kernel is already sequential in the output's layout.
 */
#include <stdlib.h>
#include <string.h>

#include "../lib/hlo/ir_edit.h"
#include "cg_internal.h"

enum { TILE = 32, TILE_ROWS = 8, TILE_PITCH = TILE + 1, MAX_RANK = 64,
       MIN_TILED_DIM = 16 };

/* The minor-most physical dimension of s with more than one element; -1
 * when there is none. */
static int phys_minor(const Shape *s) {
  for (int j = 0; j < s->rank; j++) {
    int d = s->layout && s->layout->rank == s->rank && s->layout->minor_to_major
                ? (int)s->layout->minor_to_major[j]
                : s->rank - 1 - j;
    if (s->dims[d] > 1)
      return d;
  }
  return -1;
}

/* The plan of one transpose kernel. */
typedef struct TPlan {
  const HloInstr *hero;           /* transpose or copy */
  int rank;
  int64_t perm[MAX_RANK];         /* operand index[perm[i]] = output index[i] */
  int a, b;                       /* swapped output dimensions (see top) */
  PtrVec dep;                     /* instructions depending on hero (epilogue) */
} TPlan;

static bool in_list(const PtrVec *v, const void *p) {
  for (int k = 0; k < v->len; k++)
    if (v->data[k] == p)
      return true;
  return false;
}

static bool same_dims(const Shape *x, const Shape *y) {
  return x->rank == y->rank &&
         (x->rank == 0 || memcmp(x->dims, y->dims, (size_t)x->rank * sizeof *x->dims) == 0);
}

/* Fills p for hero candidate h writing an output of shape out; false when
 * h is not a tiled transpose. */
static bool plan_hero(const HloInstr *h, const Shape *out, TPlan *p) {
  if (h->nops != 1 || !shape_is_array(h->shape) || !shape_is_array(h->ops[0]->shape))
    return false;
  const Shape *x = h->ops[0]->shape;
  int r = h->shape->rank;
  if (r < 2 || r > MAX_RANK || x->rank != r || !same_dims(h->shape, out))
    return false;
  if (h->op == HLO_TRANSPOSE) {
    if (h->dims.n != r)
      return false;
    for (int i = 0; i < r; i++)
      p->perm[i] = h->dims.v[i];
  } else if (h->op == HLO_COPY) {
    for (int i = 0; i < r; i++)
      p->perm[i] = i;
  } else {
    return false;
  }
  for (int i = 0; i < r; i++)
    if (p->perm[i] < 0 || p->perm[i] >= r || x->dims[p->perm[i]] != h->shape->dims[i])
      return false;
  if (shape_elements(out) <= 0)
    return false;
  int xm = phys_minor(x), b = phys_minor(out), a = -1;
  for (int i = 0; i < r; i++)
    if (p->perm[i] == xm)
      a = i;
  if (a < 0 || b < 0 || a == b || out->dims[a] < MIN_TILED_DIM ||
      out->dims[b] < MIN_TILED_DIM)
    return false;
  p->hero = h;
  p->rank = r;
  p->a = a;
  p->b = b;
  return true;
}

/* Collects the instructions of c depending on p->hero (in post order) into
 * p->dep; false unless each is elementwise (or a copy) of the hero's
 * dimensions and the root is the hero or one of them. */
static bool plan_epilogue(const HloComp *c, TPlan *p) {
  HloInstr **order;
  int n = ir_instr_post_order(c, &order);
  bool ok = true;
  p->dep.len = 0;
  for (int k = 0; k < n && ok; k++) {
    const HloInstr *x = order[k];
    if (x == p->hero)
      continue;
    bool dep = false;
    for (int j = 0; j < x->nops && !dep; j++)
      dep = x->ops[j] == p->hero || in_list(&p->dep, x->ops[j]);
    if (!dep)
      continue;
    if (!(hlo_op_is_elementwise(x->op) || (x->op == HLO_COPY && x->nops == 1)) ||
        !shape_is_array(x->shape) || !same_dims(x->shape, p->hero->shape))
      ok = false;
    for (int j = 0; j < x->nops && ok; j++) {
      const Shape *s = x->ops[j]->shape;
      ok = shape_is_array(s) && (s->rank == 0 || same_dims(s, p->hero->shape));
    }
    if (ok)
      vec_push(&p->dep, (void *)x);
  }
  free(order);
  return ok && (c->root == p->hero || in_list(&p->dep, c->root));
}

/* Finds the hero of a kernel for instr writing an output of shape out. */
static bool make_plan(const HloInstr *instr, const Shape *out, TPlan *p) {
  memset(p, 0, sizeof *p);
  const HloComp *c = cg_fusion_comp(instr);
  if (!c)
    return plan_hero(instr, out, p);
  if (!c->root || !shape_is_array(c->root->shape))
    return false;
  HloInstr **order;
  int n = ir_instr_post_order(c, &order);
  bool found = false;
  for (int k = 0; k < n && !found; k++) {
    const HloInstr *h = order[k];
    if ((h->op == HLO_TRANSPOSE || h->op == HLO_COPY) && plan_hero(h, out, p))
      found = plan_epilogue(c, p);
  }
  free(order);
  if (!found)
    vec_free(&p->dep);
  return found;
}

const HloInstr *cg_transpose_hero(const HloInstr *instr) {
  if (!shape_is_array(instr->shape))
    return NULL;
  TPlan p;
  if (!make_plan(instr, instr->shape, &p))
    return NULL;
  vec_free(&p.dep);
  return p.hero;
}

/* State of the write side: values of the epilogue at one output index. */
typedef struct Epi {
  Codegen *cg;
  CgElemental *e;
  const TPlan *p;
  LLVMValueRef hero_val;
  LLVMValueRef *vals;             /* per p->dep entry, NULL until emitted */
  LLVMValueRef const *idx;
  Diag *d;
} Epi;

static LLVMValueRef epi_value(Epi *s, const HloInstr *x) {
  if (x == s->p->hero)
    return s->hero_val;
  int k = -1;
  for (int j = 0; j < s->p->dep.len && k < 0; j++)
    if (s->p->dep.data[j] == x)
      k = j;
  if (k < 0)
    return cg_elemental_emit(s->e, x, x->shape->rank ? s->idx : NULL);
  if (s->vals[k])
    return s->vals[k];
  LLVMValueRef ops[8];
  LLVMValueRef *v = x->nops <= 8 ? ops : xcalloc((size_t)x->nops, sizeof *v);
  LLVMValueRef r = NULL;
  bool ok = true;
  for (int j = 0; j < x->nops && ok; j++)
    ok = (v[j] = epi_value(s, x->ops[j])) != NULL;
  if (ok)
    r = x->op == HLO_COPY ? v[0] : cg_emit_elementwise(s->cg, x, v, s->d);
  if (v != ops)
    free(v);
  return s->vals[k] = r;
}

/* Builds `if (cond) {` and returns the block after it. */
static LLVMBasicBlockRef begin_if(Codegen *cg, LLVMValueRef cond, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
  LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(cg->ctx, fn, "endif");
  LLVMBuildCondBr(cg->b, cond, then, after);
  LLVMPositionBuilderAtEnd(cg->b, then);
  return after;
}

static void end_if(Codegen *cg, LLVMBasicBlockRef after) {
  LLVMBuildBr(cg->b, after);
  LLVMPositionBuilderAtEnd(cg->b, after);
}

/* in-bounds test of (ia, ib) against the output's dimensions a and b */
static LLVMValueRef in_bounds(Codegen *cg, const Shape *out, const TPlan *p,
                              LLVMValueRef ia, LLVMValueRef ib) {
  LLVMBuilderRef b = cg->b;
  return LLVMBuildAnd(b,
      LLVMBuildICmp(b, LLVMIntULT, ia, cg_const_i64(cg, out->dims[p->a]), ""),
      LLVMBuildICmp(b, LLVMIntULT, ib, cg_const_i64(cg, out->dims[p->b]), ""), "");
}

static LLVMValueRef tile_ptr(Codegen *cg, LLVMValueRef tile, LLVMTypeRef mt,
                             LLVMValueRef row, LLVMValueRef col) {
  LLVMValueRef i = LLVMBuildNUWAdd(cg->b,
      LLVMBuildNUWMul(cg->b, row, cg_const_i64(cg, TILE_PITCH), ""), col, "");
  return LLVMBuildInBoundsGEP2(cg->b, mt, tile, &i, 1, "");
}

static bool emit_tiled(Codegen *cg, CgKernel *k, const TPlan *p, const char *name,
                       LaunchDims *ld, Diag *d) {
  LLVMBuilderRef b = cg->b;
  const Shape *out = k->out_shapes[0];
  const HloInstr *x = p->hero->ops[0];
  int r = p->rank;
  int64_t nta = (out->dims[p->a] + TILE - 1) / TILE;
  int64_t ntb = (out->dims[p->b] + TILE - 1) / TILE;
  int64_t others = shape_elements(out) / out->dims[p->a] / out->dims[p->b];
  int64_t blocks = others * nta * ntb;
  if (blocks > INT32_MAX)
    return diag_error(d, k->instr->loc, "codegen: transpose '%s' too large for one launch",
                      k->instr->name);
  ld->grid[0] = (uint32_t)blocks;
  ld->block[0] = TILE;
  ld->block[1] = TILE_ROWS;

  ElemType et = x->shape->et;
  LLVMTypeRef mt = cg_mem_type(cg, et);
  char tname[160];
  snprintf(tname, sizeof tname, "%s_tile", name);
  LLVMValueRef tile = cg_shared_array(cg, mt, (int64_t)TILE * TILE_PITCH, tname);

  LLVMValueRef tx = LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), cg_i64(cg), "tx");
  LLVMValueRef ty = LLVMBuildZExt(b, cg_sreg(cg, "tid.y"), cg_i64(cg), "ty");
  LLVMValueRef bid = LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), cg_i64(cg), "bid");
  LLVMValueRef tb = LLVMBuildURem(b, bid, cg_const_i64(cg, ntb), "");
  LLVMValueRef rest = LLVMBuildUDiv(b, bid, cg_const_i64(cg, ntb), "");
  LLVMValueRef ta = LLVMBuildURem(b, rest, cg_const_i64(cg, nta), "");
  LLVMValueRef other = LLVMBuildUDiv(b, rest, cg_const_i64(cg, nta), "");
  LLVMValueRef a0 = LLVMBuildNUWMul(b, ta, cg_const_i64(cg, TILE), "a0");
  LLVMValueRef b0 = LLVMBuildNUWMul(b, tb, cg_const_i64(cg, TILE), "b0");

  /* the other output dimensions, row-major from `other` */
  LLVMValueRef oidx[MAX_RANK], xidx[MAX_RANK];
  for (int i = r - 1; i >= 0; i--) {
    oidx[i] = NULL;
    if (i == p->a || i == p->b)
      continue;
    LLVMValueRef dim = cg_const_i64(cg, out->dims[i]);
    oidx[i] = LLVMBuildURem(b, other, dim, "");
    other = LLVMBuildUDiv(b, other, dim, "");
  }

  CgElemental *e = cg_elemental_new(cg, cg_fusion_comp(k->instr),
                                    cg_fusion_comp(k->instr) ? NULL : k->instr, k->in, d);
  bool ok = true;

  /* read side */
  CgLoop l;
  LLVMValueRef row = cg_loop_begin(cg, &l, ty, cg_const_i64(cg, TILE),
                                   cg_const_i64(cg, TILE_ROWS), "rd");
  oidx[p->a] = LLVMBuildNUWAdd(b, a0, tx, "");
  oidx[p->b] = LLVMBuildNUWAdd(b, b0, row, "");
  LLVMBasicBlockRef after = begin_if(cg, in_bounds(cg, out, p, oidx[p->a], oidx[p->b]), "rd.in");
  for (int i = 0; i < r; i++)
    xidx[p->perm[i]] = oidx[i];
  LLVMValueRef v = cg_fusion_comp(k->instr)
                       ? cg_elemental_emit(e, x, xidx)
                       : cg_load_elem(cg, k->in[0], k->in_shapes[0], xidx);
  if (!v) {
    ok = false;
  } else {
    if (et == ET_PRED)
      v = LLVMBuildZExt(b, v, mt, "");
    LLVMBuildStore(b, v, tile_ptr(cg, tile, mt, row, tx));
  }
  end_if(cg, after);
  cg_loop_end(cg, &l);
  cg_elemental_clear_cache(e);

  cg_barrier(cg);

  /* write side */
  if (ok) {
    row = cg_loop_begin(cg, &l, ty, cg_const_i64(cg, TILE), cg_const_i64(cg, TILE_ROWS), "wr");
    oidx[p->b] = LLVMBuildNUWAdd(b, b0, tx, "");
    oidx[p->a] = LLVMBuildNUWAdd(b, a0, row, "");
    after = begin_if(cg, in_bounds(cg, out, p, oidx[p->a], oidx[p->b]), "wr.in");
    LLVMValueRef t = LLVMBuildLoad2(b, mt, tile_ptr(cg, tile, mt, tx, row), "");
    if (et == ET_PRED)
      t = LLVMBuildICmp(b, LLVMIntNE, t, LLVMConstInt(mt, 0, false), "");
    Epi s = {cg, e, p, t, xcalloc((size_t)p->dep.len + 1, sizeof *s.vals), oidx, d};
    const HloComp *c = cg_fusion_comp(k->instr);
    LLVMValueRef res = epi_value(&s, c ? c->root : p->hero);
    free(s.vals);
    if (!res)
      ok = false;
    else
      cg_store_elem(cg, k->out[0], out, oidx, res);
    end_if(cg, after);
    cg_loop_end(cg, &l);
  }
  cg_elemental_free(e);
  return ok;
}

bool cg_emit_transpose_kernel(Codegen *cg, const HloInstr *instr, const char *name,
                              LaunchDims *ld, Diag *d) {
  if (!cg->is_gpu)
    return diag_error(d, instr->loc, "codegen: the transpose kernel is for the GPU only");
  CgKernel k;
  if (!cg_kernel_begin(cg, instr, name, &k, d))
    return false;
  TPlan p;
  bool ok = false;
  if (k.nout != 1 || !make_plan(instr, k.out_shapes[0], &p)) {
    diag_error(d, instr->loc, "codegen: '%s' is not a tiled transpose", instr->name);
  } else {
    ok = emit_tiled(cg, &k, &p, name, ld, d);
    vec_free(&p.dep);
  }
  if (ok) {
    cg_kernel_end(&k);
  } else {
    free(k.in);
    free(k.in_shapes);
  }
  return ok;
}
