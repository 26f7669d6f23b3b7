/*
 * dot_kernel.c - the kernel of a fusion whose hero is a dot (general
 * dimension numbers), for both targets, until a vendor library is wired in.
 *
 * The dot is seen in canonical form [B, M, K] x [B, K, N] -> [B, M, N]:
 * B runs over the batch dimensions (in dimension-number order), M over the
 * lhs free dimensions, K over the contracting dimensions (in dimension-number
 * order), N over the rhs free dimensions, each row-major over its dims;
 * the result's dimensions are batch, lhs free, rhs free, as HLO defines.
 * Operand elements come from the elemental emitter (so fused producers are
 * computed on the fly) or, for a bare dot, straight from memory.
 *
 * Semantics follow lib/eval/dot.c (XLA's evaluator): each operand element is
 * converted to the result type, products are summed from zero over k in
 * order in the accumulation type (f32 for f32 and the smaller floats, f64,
 * 32-bit integers for integers up to 32 bits, which wrap the same way, and
 * 64-bit ones), and the sum is converted to the result type once at the end.
 *
 * Host: loops over b, m, n, k; work units of whole (b, m) output rows.
 * GPU: 16x16 tiles; block (16, 16), grid (N/16, M/16, B) rounded up, with
 * block-uniform loops over the M tiles and batches beyond the grid's y and
 * z limits.  Each step over K stages a 16x16 tile of each operand (converted
 * to the accumulation type, zero outside the operands) in shared memory
 * between two barriers; the barriers sit only under block-uniform control
 * flow.  Edges are masked.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

#define DOT_MAX_RANK 64

enum { TILE = 16, TILE_PITCH = TILE + 1, GRID_YZ_MAX = 65535 };

typedef struct Dot {
  Codegen *cg;
  Diag *d;
  CgKernel k;
  CgElemental *el;                /* NULL for a bare dot */
  const HloInstr *hero;
  const Shape *ls, *rs, *os;
  int lb[DOT_MAX_RANK], rb[DOT_MAX_RANK], nb;  /* batch dims */
  int lc[DOT_MAX_RANK], rc[DOT_MAX_RANK], nc;  /* contracting dims */
  int lf[DOT_MAX_RANK], nlf, rf[DOT_MAX_RANK], nrf; /* free dims */
  int ob[DOT_MAX_RANK], om[DOT_MAX_RANK], on[DOT_MAX_RANK]; /* output dims */
  int64_t B, M, K, N;
  ElemType et, acc_et;
  int out_leaf;
} Dot;

static bool mark_dims(const I64List *l, int rank, bool *used, int *out) {
  for (int j = 0; j < l->n; j++) {
    int64_t dd = l->v[j];
    if (dd < 0 || dd >= rank || used[dd]) return false;
    used[dd] = true;
    out[j] = (int)dd;
  }
  return true;
}

static ElemType acc_type(ElemType et) {
  if (cg_et_is_bitfloat(et))        /* f8, f4: in f32, as lib/eval */
    return ET_F32;
  switch (et) {
  case ET_F16: case ET_BF16: case ET_F32: return ET_F32;
  case ET_F64: return ET_F64;
  case ET_S2: case ET_S4: case ET_S8: case ET_S16: case ET_S32: return ET_S32;
  case ET_U2: case ET_U4: case ET_U8: case ET_U16: case ET_U32: return ET_U32;
  case ET_S64: return ET_S64;
  case ET_U64: return ET_U64;
  default: return ET_INVALID;
  }
}

static bool analyze(Dot *t) {
  const HloInstr *h = t->hero;
  t->ls = h->ops[0]->shape;
  t->rs = h->ops[1]->shape;
  t->os = h->shape;
  const Shape *ls = t->ls, *rs = t->rs, *os = t->os;
  if (h->nops != 2 || !shape_is_array(ls) || !shape_is_array(rs) || !shape_is_array(os) ||
      ls->rank > DOT_MAX_RANK || rs->rank > DOT_MAX_RANK)
    return diag_error(t->d, h->loc, "dot of non-arrays");
  if (h->sparsity)
    return diag_error(t->d, h->loc, "sparse dot is not supported by the dot emitter");
  t->et = os->et;
  t->acc_et = acc_type(os->et);
  if (t->acc_et == ET_INVALID || !cg_et_supported(ls->et) || !cg_et_supported(rs->et))
    return diag_error(t->d, h->loc, "dot of %s x %s -> %s is not supported", et_name(ls->et),
                      et_name(rs->et), et_name(os->et));
  static const DotDnums empty;
  const DotDnums *dn = h->dot ? h->dot : &empty;
  bool lu[DOT_MAX_RANK] = {false}, ru[DOT_MAX_RANK] = {false};
  if (dn->lhs_batch.n != dn->rhs_batch.n || dn->lhs_contracting.n != dn->rhs_contracting.n ||
      !mark_dims(&dn->lhs_batch, ls->rank, lu, t->lb) ||
      !mark_dims(&dn->rhs_batch, rs->rank, ru, t->rb) ||
      !mark_dims(&dn->lhs_contracting, ls->rank, lu, t->lc) ||
      !mark_dims(&dn->rhs_contracting, rs->rank, ru, t->rc))
    return diag_error(t->d, h->loc, "bad dot dimension numbers");
  t->nb = dn->lhs_batch.n;
  t->nc = dn->lhs_contracting.n;
  t->B = t->M = t->K = t->N = 1;
  int o = 0;
  for (int j = 0; j < t->nb; j++) {
    if (ls->dims[t->lb[j]] != rs->dims[t->rb[j]]) goto bad;
    t->B *= ls->dims[t->lb[j]];
    t->ob[j] = o++;
  }
  for (int j = 0; j < t->nc; j++) {
    if (ls->dims[t->lc[j]] != rs->dims[t->rc[j]]) goto bad;
    t->K *= ls->dims[t->lc[j]];
  }
  for (int dd = 0; dd < ls->rank; dd++)
    if (!lu[dd]) {
      t->lf[t->nlf] = dd;
      t->om[t->nlf++] = o++;
      t->M *= ls->dims[dd];
    }
  for (int dd = 0; dd < rs->rank; dd++)
    if (!ru[dd]) {
      t->rf[t->nrf] = dd;
      t->on[t->nrf++] = o++;
      t->N *= rs->dims[dd];
    }
  if (o != os->rank) goto bad;
  for (int j = 0; j < t->nb; j++)
    if (os->dims[t->ob[j]] != ls->dims[t->lb[j]]) goto bad;
  for (int j = 0; j < t->nlf; j++)
    if (os->dims[t->om[j]] != ls->dims[t->lf[j]]) goto bad;
  for (int j = 0; j < t->nrf; j++)
    if (os->dims[t->on[j]] != rs->dims[t->rf[j]]) goto bad;
  return true;
bad:
  return diag_error(t->d, h->loc, "dot result shape does not match its operands");
}

/* The fusion root must be the dot (through bitcasts): returns false with
 * an error for anything computed from it inside the fusion. */
static bool check_root(Dot *t, const HloInstr *instr, const HloComp *comp) {
  if (!comp) return true;
  const HloInstr *x = comp->root;
  while (x->op == HLO_BITCAST && x->nops == 1) x = x->ops[0];
  if (x != t->hero)
    return diag_error(t->d, instr->loc,
                      "dot fusion whose root %s (%s) is not the dot is not supported "
                      "by the dot emitter", comp->root->name, hlo_op_name(comp->root->op));
  return true;
}

/* Operand `which` (0 lhs, 1 rhs) at canonical (b, row, k) for the lhs or
 * (b, k, col) for the rhs, converted to the accumulation type. */
static LLVMValueRef operand_at(Dot *t, int which, LLVMValueRef bv, LLVMValueRef free_v,
                               LLVMValueRef kv) {
  Codegen *cg = t->cg;
  const Shape *s = which ? t->rs : t->ls;
  LLVMValueRef idx[DOT_MAX_RANK];
  cg_split_index(cg, bv, t->nb, which ? t->rb : t->lb, s->dims, idx);
  cg_split_index(cg, kv, t->nc, which ? t->rc : t->lc, s->dims, idx);
  if (which) cg_split_index(cg, free_v, t->nrf, t->rf, s->dims, idx);
  else cg_split_index(cg, free_v, t->nlf, t->lf, s->dims, idx);
  LLVMValueRef v = t->el ? cg_elemental_emit(t->el, t->hero->ops[which], idx)
                         : cg_load_elem(cg, t->k.in[which], t->k.in_shapes[which], idx);
  if (!v) return NULL;
  v = cg_emit_convert(cg, s->et, t->et, v);
  return cg_emit_convert(cg, t->et, t->acc_et, v);
}

static LLVMValueRef mul_add(Dot *t, LLVMValueRef acc, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef bl = t->cg->b;
  if (et_is_float(t->acc_et)) return LLVMBuildFAdd(bl, acc, LLVMBuildFMul(bl, a, b, "p"), "s");
  return LLVMBuildAdd(bl, acc, LLVMBuildMul(bl, a, b, "p"), "s");
}

static LLVMValueRef acc_zero(Dot *t) {
  return et_is_float(t->acc_et) ? cg_const_f(t->cg, t->acc_et, 0.0)
                                : cg_const_int(t->cg, t->acc_et, 0);
}

static void store_result(Dot *t, LLVMValueRef bv, LLVMValueRef mv, LLVMValueRef nv,
                         LLVMValueRef acc) {
  Codegen *cg = t->cg;
  LLVMValueRef idx[DOT_MAX_RANK];
  cg_split_index(cg, bv, t->nb, t->ob, t->os->dims, idx);
  cg_split_index(cg, mv, t->nlf, t->om, t->os->dims, idx);
  cg_split_index(cg, nv, t->nrf, t->on, t->os->dims, idx);
  LLVMValueRef v = cg_emit_convert(cg, t->acc_et, t->et, acc);
  const Shape *ls = t->k.out_shapes[t->out_leaf];
  if (ls->rank == t->os->rank &&
      (ls->rank == 0 || memcmp(ls->dims, t->os->dims, sizeof(int64_t) * (size_t)ls->rank) == 0)) {
    cg_store_elem(cg, t->k.out[t->out_leaf], ls, idx, v);
  } else {                        /* a bitcast of the dot: same bytes */
    LLVMValueRef lin = cg_linear_index(cg, t->os, idx);
    cg_store_linear(cg, t->k.out[t->out_leaf], t->et, lin, v);
  }
}

static LLVMValueRef i64c(Dot *t, int64_t v) { return cg_const_i64(t->cg, v); }

static bool emit_host(Dot *t, LaunchDims *ld) {
  Codegen *cg = t->cg;
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef at = cg_reg_type(cg, t->acc_et);
  LLVMValueRef acc = LLVMBuildAlloca(b, at, "acc");
  CgLoop lbm, ln, lk;
  /* work units of whole (b, m) rows of the output */
  LLVMValueRef start, end;
  cg_host_range(&t->k, t->B * t->M, t->N * t->K, ld, &start, &end);
  LLVMValueRef bm = cg_loop_begin(cg, &lbm, start, end, i64c(t, 1), "bm");
  LLVMValueRef bv = LLVMBuildUDiv(b, bm, i64c(t, t->M > 0 ? t->M : 1), "b");
  LLVMValueRef mv = LLVMBuildURem(b, bm, i64c(t, t->M > 0 ? t->M : 1), "m");
  LLVMValueRef nv = cg_loop_begin(cg, &ln, i64c(t, 0), i64c(t, t->N), i64c(t, 1), "n");
  LLVMBuildStore(b, acc_zero(t), acc);
  LLVMValueRef kv = cg_loop_begin(cg, &lk, i64c(t, 0), i64c(t, t->K), i64c(t, 1), "k");
  LLVMValueRef x = operand_at(t, 0, bv, mv, kv);
  if (!x) return false;
  LLVMValueRef y = operand_at(t, 1, bv, nv, kv);
  if (!y) return false;
  LLVMBuildStore(b, mul_add(t, LLVMBuildLoad2(b, at, acc, "a"), x, y), acc);
  cg_loop_end(cg, &lk);
  if (t->el) cg_elemental_clear_cache(t->el);
  store_result(t, bv, mv, nv, LLVMBuildLoad2(b, at, acc, "a"));
  cg_loop_end(cg, &ln);
  cg_loop_end(cg, &lbm);
  return true;
}

static LLVMValueRef sreg64(Codegen *cg, const char *reg) {
  return LLVMBuildZExt(cg->b, cg_sreg(cg, reg), cg_i64(cg), reg);
}

static LLVMBasicBlockRef new_block(Codegen *cg, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  return LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
}

static LLVMValueRef ult(Dot *t, LLVMValueRef a, int64_t c) {
  return LLVMBuildICmp(t->cg->b, LLVMIntULT, a, i64c(t, c), "lt");
}

/* tile[slot] = in_range ? operand : 0 (the operand is read only in range). */
static bool stage(Dot *t, LLVMValueRef tile, LLVMValueRef slot, LLVMValueRef in_range,
                  int which, LLVMValueRef bv, LLVMValueRef free_v, LLVMValueRef kv) {
  Codegen *cg = t->cg;
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef at = cg_reg_type(cg, t->acc_et);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(b, at, tile, &slot, 1, "slot");
  LLVMBasicBlockRef then = new_block(cg, "load"), els = new_block(cg, "zero"),
                    join = new_block(cg, "staged");
  LLVMBuildCondBr(b, in_range, then, els);
  LLVMPositionBuilderAtEnd(b, then);
  LLVMValueRef v = operand_at(t, which, bv, free_v, kv);
  if (!v) return false;
  LLVMBuildStore(b, v, p);
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, els);
  LLVMBuildStore(b, acc_zero(t), p);
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, join);
  if (t->el) cg_elemental_clear_cache(t->el);
  return true;
}

static bool emit_gpu(Dot *t, const char *name, LaunchDims *ld) {
  Codegen *cg = t->cg;
  LLVMBuilderRef b = cg->b;
  int64_t ntn = (t->N + TILE - 1) / TILE, ntm = (t->M + TILE - 1) / TILE;
  if (ntn > INT32_MAX)
    return diag_error(t->d, t->hero->loc, "dot with %lld columns is too large",
                      (long long)t->N);
  int64_t gy = ntm < GRID_YZ_MAX ? ntm : GRID_YZ_MAX;
  int64_t gz = t->B < GRID_YZ_MAX ? t->B : GRID_YZ_MAX;
  ld->grid[0] = ntn > 0 ? (uint32_t)ntn : 1;
  ld->grid[1] = gy > 0 ? (uint32_t)gy : 1;
  ld->grid[2] = gz > 0 ? (uint32_t)gz : 1;
  ld->block[0] = TILE;
  ld->block[1] = TILE;
  ld->block[2] = 1;

  LLVMTypeRef at = cg_reg_type(cg, t->acc_et);
  char buf[256];
  snprintf(buf, sizeof buf, "%s_lhs_tile", name);
  LLVMValueRef as = cg_shared_array(cg, at, TILE * TILE_PITCH, buf);
  snprintf(buf, sizeof buf, "%s_rhs_tile", name);
  LLVMValueRef bs = cg_shared_array(cg, at, TILE * TILE_PITCH, buf);
  LLVMValueRef acc = LLVMBuildAlloca(b, at, "acc");
  LLVMValueRef tx = sreg64(cg, "tid.x"), ty = sreg64(cg, "tid.y");
  LLVMValueRef nt = sreg64(cg, "ctaid.x");
  LLVMValueRef my0 = sreg64(cg, "ctaid.y"), bz0 = sreg64(cg, "ctaid.z");
  LLVMValueRef slot = LLVMBuildAdd(b, LLVMBuildMul(b, ty, i64c(t, TILE_PITCH), ""), tx, "slot");
  LLVMValueRef nv = LLVMBuildAdd(b, LLVMBuildMul(b, nt, i64c(t, TILE), ""), tx, "n");

  /* block-uniform loops: batches and M tiles beyond the grid */
  CgLoop lb, lm, lk;
  LLVMValueRef bv = cg_loop_begin(cg, &lb, bz0, i64c(t, t->B), i64c(t, gz > 0 ? gz : 1), "bz");
  LLVMValueRef my = cg_loop_begin(cg, &lm, my0, i64c(t, ntm), i64c(t, gy > 0 ? gy : 1), "mt");
  LLVMValueRef mv = LLVMBuildAdd(b, LLVMBuildMul(b, my, i64c(t, TILE), ""), ty, "m");
  LLVMValueRef m_ok = ult(t, mv, t->M), n_ok = ult(t, nv, t->N);
  LLVMBuildStore(b, acc_zero(t), acc);
  LLVMValueRef k0 = cg_loop_begin(cg, &lk, i64c(t, 0), i64c(t, t->K), i64c(t, TILE), "k0");
  LLVMValueRef ka = LLVMBuildAdd(b, k0, tx, "ka"), kb = LLVMBuildAdd(b, k0, ty, "kb");
  if (!stage(t, as, slot, LLVMBuildAnd(b, m_ok, ult(t, ka, t->K), ""), 0, bv, mv, ka))
    return false;
  if (!stage(t, bs, slot, LLVMBuildAnd(b, n_ok, ult(t, kb, t->K), ""), 1, bv, nv, kb))
    return false;
  cg_barrier(cg);
  LLVMValueRef a = LLVMBuildLoad2(b, at, acc, "a");
  LLVMValueRef arow = LLVMBuildMul(b, ty, i64c(t, TILE_PITCH), "arow");
  for (int kk = 0; kk < TILE; kk++) {
    LLVMValueRef ai = LLVMBuildAdd(b, arow, i64c(t, kk), "");
    LLVMValueRef bi = LLVMBuildAdd(b, i64c(t, (int64_t)kk * TILE_PITCH), tx, "");
    LLVMValueRef x = LLVMBuildLoad2(b, at, LLVMBuildInBoundsGEP2(b, at, as, &ai, 1, ""), "x");
    LLVMValueRef y = LLVMBuildLoad2(b, at, LLVMBuildInBoundsGEP2(b, at, bs, &bi, 1, ""), "y");
    a = mul_add(t, a, x, y);
  }
  LLVMBuildStore(b, a, acc);
  cg_barrier(cg);
  cg_loop_end(cg, &lk);
  LLVMBasicBlockRef then = new_block(cg, "store"), join = new_block(cg, "stored");
  LLVMBuildCondBr(b, LLVMBuildAnd(b, m_ok, n_ok, ""), then, join);
  LLVMPositionBuilderAtEnd(b, then);
  store_result(t, bv, mv, nv, LLVMBuildLoad2(b, at, acc, "a"));
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, join);
  cg_loop_end(cg, &lm);
  cg_loop_end(cg, &lb);
  return true;
}

bool cg_emit_dot_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *hero,
                        const char *name, LaunchDims *ld, Diag *d) {
  Dot *t = xcalloc(1, sizeof *t);
  t->cg = cg;
  t->d = d;
  t->hero = hero;
  bool ok = false, begun = false;
  const HloComp *comp = cg_fusion_comp(instr);
  if (hero->op != HLO_DOT) {
    diag_error(d, hero->loc, "%s is not supported by the dot emitter", hlo_op_name(hero->op));
    goto done;
  }
  if (!analyze(t) || !check_root(t, instr, comp)) goto done;
  if (!cg_kernel_begin(cg, instr, name, &t->k, d)) goto done;
  begun = true;
  if (t->k.nout < 1 || (!comp && t->k.nin < 2)) {
    diag_error(d, instr->loc, "dot operands or result are not arrays");
    goto done;
  }
  if (comp) {
    t->el = cg_elemental_new(cg, comp, NULL, t->k.in, d);
    if (!t->el) goto done;
  }
  memset(ld, 0, sizeof *ld);
  for (int j = 0; j < 3; j++) ld->grid[j] = ld->block[j] = 1;
  ok = cg->is_gpu ? emit_gpu(t, name, ld) : emit_host(t, ld);
done:
  if (t->el) cg_elemental_free(t->el);
  if (begun) cg_kernel_end(&t->k);
  free(t);
  return ok;
}
