/*
 * conv_kernel.c - the kernel of a fusion whose hero is a convolution (a
 * lone fusion after fusion-wrapper, or a bare convolution), for both
 * targets, until a vendor library is wired in: a direct convolution.
 *
 * Full HLO semantics: any dim_labels, feature_group_count and
 * batch_group_count, window strides, padding (negative too), lhs (base)
 * dilation, rhs (window) dilation and window reversal.  They follow
 * lib/eval/dot.c (XLA's evaluator): each operand element (pred too: 0 or
 * 1) is converted to the result type and then to the accumulation type (f32 for f32 and the
 * smaller floats, f64, 64-bit integers for every integer type, wrapping);
 * for each output element the products are summed from zero over the
 * window positions (row-major over the spatial dims, outer) and the input
 * features of the output feature's group (inner); the sum is converted to
 * the result type at the end, integers saturating to its range.
 *
 * For output element (n, spatial s, feature o):
 *   batch group    gb = o / (O / batch_group_count),
 *   feature group  gf = o / (O / feature_group_count),
 *   input batch    n + gb * (N / batch_group_count),
 *   input feature  gf * Cg + c  for c in [0, Cg), Cg = kernel input features,
 *   input spatial  x = s * stride - pad_lo + k * rhs_dilation, used when
 *                  x is a multiple of lhs_dilation and x / lhs_dilation is
 *                  inside the input (else that window position adds nothing),
 *   kernel         (spatial reversal ? size - 1 - k : k, c, o).
 *
 * Host: one loop over the output's physical elements (split into work
 * units of whole elements), with the window loops
 * (an invalid position skips to the next) and the input-feature loop inside.
 * GPU: one thread per physical output element (consecutive threads on
 * consecutive elements), the same loops per thread, bounds masked.
 * Operands come from the elemental emitter for a fusion (parameters, or any
 * producer fused in) and straight from memory for a bare convolution.
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

#define CONV_MAX_RANK 64

enum { CONV_BLOCK = 256 };

typedef struct Conv {
  Codegen *cg;
  Diag *d;
  CgKernel k;
  CgElemental *el;                /* NULL for a bare convolution */
  const HloInstr *hero;
  const ConvDnums *dn;
  const Shape *ls, *rs, *os;
  int ns;                         /* spatial dims */
  int64_t N, C, O, Cg, fgc, bgc;
  int64_t isp[CONV_MAX_RANK], ksp[CONV_MAX_RANK];
  int64_t stride[CONV_MAX_RANK], lo[CONV_MAX_RANK];
  int64_t bdil[CONV_MAX_RANK], wdil[CONV_MAX_RANK];
  bool rev[CONV_MAX_RANK];
  ElemType et, acc_et;
} Conv;

static ElemType acc_type(ElemType et) {
  switch (et_class(et)) {
  case ETC_FLOAT:
    if (et == ET_F64) return ET_F64;
    if (et == ET_F32 || et == ET_F16 || et == ET_BF16 || cg_et_is_bitfloat(et))
      return ET_F32;
    return ET_INVALID;
  case ETC_SINT: return ET_S64;
  case ETC_UINT: return ET_U64;
  default: return ET_INVALID;
  }
}

static bool use_dim(bool *used, int64_t dd, int rank) {
  if (dd < 0 || dd >= rank || used[dd]) return false;
  used[dd] = true;
  return true;
}

static bool analyze(Conv *t) {
  const HloInstr *h = t->hero;
  const ConvAttrs *ca = h->conv;
  if (h->nops != 2 || !ca || !ca->dnums)
    return diag_error(t->d, h->loc, "convolution without two operands and dimension numbers");
  t->ls = h->ops[0]->shape;
  t->rs = h->ops[1]->shape;
  t->os = h->shape;
  const Shape *ls = t->ls, *rs = t->rs, *os = t->os;
  if (!shape_is_array(ls) || !shape_is_array(rs) || !shape_is_array(os))
    return diag_error(t->d, h->loc, "convolution of non-arrays");
  for (int j = 0; j < h->nprecision; j++)
    if (h->precision[j] == PREC_PACKED_NIBBLE)
      return diag_error(t->d, h->loc,
                        "convolution with PACKED_NIBBLE precision is not supported by the "
                        "convolution emitter");
  t->et = os->et;
  t->acc_et = acc_type(os->et);
  if (t->acc_et == ET_INVALID || !cg_et_supported(ls->et) || !cg_et_supported(rs->et))
    return diag_error(t->d, h->loc,
                      "convolution of %s x %s -> %s is not supported by the convolution emitter",
                      et_name(ls->et), et_name(rs->et), et_name(os->et));
  const ConvDnums *dn = t->dn = ca->dnums;
  t->ns = dn->nspatial;
  int r = t->ns + 2;
  if (t->ns < 0 || r > CONV_MAX_RANK || ls->rank != r || rs->rank != r || os->rank != r ||
      (ca->window ? ca->window->ndims : 0) != t->ns)
    goto bad;
  {
    bool lu[CONV_MAX_RANK] = {false}, ru[CONV_MAX_RANK] = {false}, ou[CONV_MAX_RANK] = {false};
    if (!use_dim(lu, dn->input_batch, r) || !use_dim(lu, dn->input_feature, r) ||
        !use_dim(ru, dn->kernel_input_feature, r) ||
        !use_dim(ru, dn->kernel_output_feature, r) || !use_dim(ou, dn->output_batch, r) ||
        !use_dim(ou, dn->output_feature, r))
      goto bad;
    for (int j = 0; j < t->ns; j++)
      if (!use_dim(lu, dn->input_spatial[j], r) || !use_dim(ru, dn->kernel_spatial[j], r) ||
          !use_dim(ou, dn->output_spatial[j], r))
        goto bad;
  }
  t->N = ls->dims[dn->input_batch];
  t->C = ls->dims[dn->input_feature];
  t->O = rs->dims[dn->kernel_output_feature];
  t->fgc = ca->feature_group_count > 0 ? ca->feature_group_count : 1;
  t->bgc = ca->batch_group_count > 0 ? ca->batch_group_count : 1;
  if (t->C % t->fgc || t->O % t->fgc || t->N % t->bgc || t->O % t->bgc) goto bad;
  t->Cg = t->C / t->fgc;
  if (rs->dims[dn->kernel_input_feature] != t->Cg) goto bad;
  if (os->dims[dn->output_batch] != t->N / t->bgc || os->dims[dn->output_feature] != t->O)
    goto bad;
  for (int j = 0; j < t->ns; j++) {
    const WindowDim *w = &ca->window->dims[j];
    t->isp[j] = ls->dims[dn->input_spatial[j]];
    t->ksp[j] = rs->dims[dn->kernel_spatial[j]];
    t->stride[j] = w->stride > 0 ? w->stride : 1;
    t->lo[j] = w->pad_lo;
    t->bdil[j] = w->base_dilation > 0 ? w->base_dilation : 1;
    t->wdil[j] = w->window_dilation > 0 ? w->window_dilation : 1;
    t->rev[j] = w->reversal;
    if (w->size != t->ksp[j]) goto bad;
  }
  return true;
bad:
  return diag_error(t->d, h->loc, "convolution operand, window and result shapes do not agree");
}

/* The fusion root must be the convolution (through bitcasts). */
static bool check_root(Conv *t, const HloInstr *instr, const HloComp *comp) {
  if (comp) {
    const HloInstr *x = comp->root;
    while (x->op == HLO_BITCAST && x->nops == 1) x = x->ops[0];
    if (x != t->hero)
      return diag_error(t->d, instr->loc,
                        "convolution fusion whose root %s (%s) is not the convolution is not "
                        "supported by the convolution emitter",
                        comp->root->name, hlo_op_name(comp->root->op));
  }
  const Shape *out = t->k.nout == 1 ? t->k.out_shapes[0] : NULL;
  if (!out || out->et != t->et || shape_elements(out) != shape_elements(t->os))
    return diag_error(t->d, instr->loc, "convolution kernel result is not one %s array of %lld "
                      "elements", et_name(t->et), (long long)shape_elements(t->os));
  return true;
}

static LLVMValueRef i64c(Conv *t, int64_t v) { return cg_const_i64(t->cg, v); }

static LLVMBasicBlockRef new_block(Codegen *cg, const char *name) {
  LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
  return LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
}

/* Operand `which` (0 input, 1 kernel) at idx, in the accumulation type. */
static LLVMValueRef operand_at(Conv *t, int which, LLVMValueRef const *idx) {
  Codegen *cg = t->cg;
  const Shape *s = which ? t->rs : t->ls;
  LLVMValueRef v = t->el ? cg_elemental_emit(t->el, t->hero->ops[which], idx)
                         : cg_load_elem(cg, t->k.in[which], t->k.in_shapes[which], idx);
  if (!v) return NULL;
  v = cg_emit_convert(cg, s->et, t->et, v);
  return cg_emit_convert(cg, t->et, t->acc_et, v);
}

static LLVMValueRef acc_zero(Conv *t) {
  return et_is_float(t->acc_et) ? cg_const_f(t->cg, t->acc_et, 0.0)
                                : cg_const_int(t->cg, t->acc_et, 0);
}

/* The accumulator converted to the result type (integers saturate). */
static LLVMValueRef finish(Conv *t, LLVMValueRef acc) {
  Codegen *cg = t->cg;
  LLVMBuilderRef b = cg->b;
  int bits = et_bits(t->et);
  if (et_class(t->et) == ETC_SINT && bits < 64) {
    LLVMValueRef lo = i64c(t, -((int64_t)1 << (bits - 1)));
    LLVMValueRef hi = i64c(t, ((int64_t)1 << (bits - 1)) - 1);
    acc = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, acc, lo, ""), lo, acc, "sat");
    acc = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, acc, hi, ""), hi, acc, "sat");
  } else if (et_class(t->et) == ETC_UINT && bits < 64) {
    LLVMValueRef hi = i64c(t, (int64_t)(((uint64_t)1 << bits) - 1));
    acc = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, acc, hi, ""), hi, acc, "sat");
  }
  return cg_emit_convert(cg, t->acc_et, t->et, acc);
}

/* Window loops from spatial dim j on, then the input-feature loop, adding
 * into *acc.  ix/kx are the input and kernel multi-indices being built. */
static bool emit_window(Conv *t, int j, LLVMValueRef acc, LLVMValueRef const *oidx,
                        LLVMValueRef *ix, LLVMValueRef *kx) {
  Codegen *cg = t->cg;
  LLVMBuilderRef b = cg->b;
  const ConvDnums *dn = t->dn;
  LLVMTypeRef at = cg_reg_type(cg, t->acc_et);
  if (j == t->ns) {
    CgLoop lc;
    LLVMValueRef c = cg_loop_begin(cg, &lc, i64c(t, 0), i64c(t, t->Cg), i64c(t, 1), "c");
    LLVMValueRef fbase = ix[dn->input_feature];
    ix[dn->input_feature] = LLVMBuildNUWAdd(b, fbase, c, "ci");
    kx[dn->kernel_input_feature] = c;
    LLVMValueRef x = operand_at(t, 0, ix);
    ix[dn->input_feature] = fbase;
    if (!x) return false;
    LLVMValueRef y = operand_at(t, 1, kx);
    if (!y) return false;
    LLVMValueRef a = LLVMBuildLoad2(b, at, acc, "a");
    a = et_is_float(t->acc_et) ? LLVMBuildFAdd(b, a, LLVMBuildFMul(b, x, y, "p"), "s")
                               : LLVMBuildAdd(b, a, LLVMBuildMul(b, x, y, "p"), "s");
    LLVMBuildStore(b, a, acc);
    cg_loop_end(cg, &lc);
    if (t->el) cg_elemental_clear_cache(t->el);
    return true;
  }
  CgLoop lk;
  LLVMValueRef kv = cg_loop_begin(cg, &lk, i64c(t, 0), i64c(t, t->ksp[j]), i64c(t, 1), "kw");
  LLVMValueRef x = LLVMBuildMul(b, oidx[dn->output_spatial[j]], i64c(t, t->stride[j]), "");
  x = LLVMBuildAdd(b, x, i64c(t, -t->lo[j]), "");
  x = LLVMBuildAdd(b, x, LLVMBuildMul(b, kv, i64c(t, t->wdil[j]), ""), "x");
  /* 0 <= x <= (isp - 1) * bdil, as one unsigned compare */
  int64_t bound = t->isp[j] > 0 ? (t->isp[j] - 1) * t->bdil[j] + 1 : 0;
  LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, x, i64c(t, bound), "inside");
  LLVMValueRef xi = x;
  if (t->bdil[j] > 1) {
    LLVMValueRef bd = i64c(t, t->bdil[j]);
    LLVMValueRef rem = LLVMBuildURem(b, x, bd, "");
    ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntEQ, rem, i64c(t, 0), ""), "on_grid");
    xi = LLVMBuildUDiv(b, x, bd, "xi");
  }
  ix[dn->input_spatial[j]] = xi;
  kx[dn->kernel_spatial[j]] =
      t->rev[j] ? LLVMBuildSub(b, i64c(t, t->ksp[j] - 1), kv, "krev") : kv;
  LLVMBasicBlockRef body = new_block(cg, "window"), next = new_block(cg, "next");
  LLVMBuildCondBr(b, ok, body, next);
  LLVMPositionBuilderAtEnd(b, body);
  if (!emit_window(t, j + 1, acc, oidx, ix, kx)) return false;
  LLVMBuildBr(b, next);
  LLVMPositionBuilderAtEnd(b, next);
  cg_loop_end(cg, &lk);
  if (t->el) cg_elemental_clear_cache(t->el);
  return true;
}

/* Computes and stores the output element at physical linear index lin. */
static bool emit_element(Conv *t, LLVMValueRef acc, LLVMValueRef lin) {
  Codegen *cg = t->cg;
  LLVMBuilderRef b = cg->b;
  const ConvDnums *dn = t->dn;
  LLVMValueRef oidx[CONV_MAX_RANK], ix[CONV_MAX_RANK], kx[CONV_MAX_RANK];
  cg_delinearize(cg, t->os, lin, oidx);
  LLVMValueRef n = oidx[dn->output_batch], o = oidx[dn->output_feature];
  LLVMValueRef inb = n;
  if (t->bgc > 1) {
    LLVMValueRef gb = LLVMBuildUDiv(b, o, i64c(t, t->O / t->bgc), "gb");
    inb = LLVMBuildNUWAdd(b, n, LLVMBuildNUWMul(b, gb, i64c(t, t->N / t->bgc), ""), "inb");
  }
  LLVMValueRef fbase = i64c(t, 0);
  if (t->fgc > 1) {
    LLVMValueRef gf = LLVMBuildUDiv(b, o, i64c(t, t->O / t->fgc), "gf");
    fbase = LLVMBuildNUWMul(b, gf, i64c(t, t->Cg), "fbase");
  }
  ix[dn->input_batch] = inb;
  ix[dn->input_feature] = fbase;
  kx[dn->kernel_output_feature] = o;
  LLVMBuildStore(b, acc_zero(t), acc);
  if (!emit_window(t, 0, acc, oidx, ix, kx)) return false;
  LLVMValueRef a = LLVMBuildLoad2(b, cg_reg_type(cg, t->acc_et), acc, "a");
  cg_store_linear(cg, t->k.out[0], t->et, lin, finish(t, a));
  return true;
}

static bool emit_host(Conv *t, LLVMValueRef acc, LaunchDims *ld) {
  Codegen *cg = t->cg;
  CgLoop l;
  int64_t window = t->Cg;
  for (int j = 0; j < t->ns; j++)
    window *= t->ksp[j];
  LLVMValueRef start, end;
  cg_host_range(&t->k, shape_elements(t->os), window, ld, &start, &end);
  LLVMValueRef lin = cg_loop_begin(cg, &l, start, end, i64c(t, 1), "out");
  if (!emit_element(t, acc, lin)) return false;
  cg_loop_end(cg, &l);
  return true;
}

static bool emit_gpu(Conv *t, LLVMValueRef acc, LaunchDims *ld) {
  Codegen *cg = t->cg;
  LLVMBuilderRef b = cg->b;
  int64_t n = shape_elements(t->os);
  int64_t block = n < CONV_BLOCK ? (n > 0 ? n : 1) : CONV_BLOCK;
  int64_t grid = (n + block - 1) / block;
  if (grid < 1) grid = 1;
  if (grid > INT32_MAX)
    return diag_error(t->d, t->hero->loc, "convolution output of %lld elements is too large "
                      "for one launch", (long long)n);
  ld->grid[0] = (uint32_t)grid;
  ld->block[0] = (uint32_t)block;
  LLVMValueRef tid = LLVMBuildZExt(b, cg_sreg(cg, "tid.x"), cg_i64(cg), "");
  LLVMValueRef bid = LLVMBuildZExt(b, cg_sreg(cg, "ctaid.x"), cg_i64(cg), "");
  LLVMValueRef lin = LLVMBuildNUWAdd(b, LLVMBuildNUWMul(b, bid, i64c(t, block), ""), tid, "t");
  LLVMBasicBlockRef body = new_block(cg, "body"), done = new_block(cg, "done");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, lin, i64c(t, n), ""), body, done);
  LLVMPositionBuilderAtEnd(b, body);
  if (!emit_element(t, acc, lin)) return false;
  LLVMBuildBr(b, done);
  LLVMPositionBuilderAtEnd(b, done);
  return true;
}

bool cg_emit_conv_kernel(Codegen *cg, const HloInstr *instr, const HloInstr *hero,
                         const char *name, LaunchDims *ld, Diag *d) {
  Conv *t = xcalloc(1, sizeof *t);
  t->cg = cg;
  t->d = d;
  t->hero = hero;
  bool ok = false, begun = false;
  const HloComp *comp = cg_fusion_comp(instr);
  if (hero->op != HLO_CONVOLUTION) {
    diag_error(d, hero->loc, "%s is not supported by the convolution emitter",
               hlo_op_name(hero->op));
    goto done;
  }
  if (!analyze(t)) goto done;
  if (!cg_kernel_begin(cg, instr, name, &t->k, d)) goto done;
  begun = true;
  if (!check_root(t, instr, comp)) goto done;
  if (!comp && t->k.nin < 2) {
    diag_error(d, instr->loc, "convolution operands are not arrays");
    goto done;
  }
  if (comp) {
    t->el = cg_elemental_new(cg, comp, NULL, t->k.in, d);
    if (!t->el) goto done;
  }
  memset(ld, 0, sizeof *ld);
  for (int j = 0; j < 3; j++) ld->grid[j] = ld->block[j] = 1;
  LLVMValueRef acc = LLVMBuildAlloca(cg->b, cg_reg_type(cg, t->acc_et), "acc");
  ok = cg->is_gpu ? emit_gpu(t, acc, ld) : emit_host(t, acc, ld);
done:
  if (t->el) cg_elemental_free(t->el);
  if (begun) cg_kernel_end(&t->k);
  free(t);
  return ok;
}
