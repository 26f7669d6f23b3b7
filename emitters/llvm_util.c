/*
 * llvm_util.c - small LLVM-C helpers shared by the kernel emitters: element
 * types and constants, layout-aware element loads and stores, counted
 * loops, named intrinsic calls, and the GPU special registers, barrier and
 * shared memory, warp shuffles.
 */
#include <string.h>

#include "cg_internal.h"

bool cg_et_supported(ElemType et) {
  switch (et) {
  case ET_PRED: case ET_S8: case ET_S16: case ET_S32: case ET_S64:
  case ET_U8: case ET_U16: case ET_U32: case ET_U64:
  case ET_F16: case ET_BF16: case ET_F32: case ET_F64:
  case ET_S2: case ET_S4: case ET_U2: case ET_U4:
  case ET_C64: case ET_C128:
    return true;
  default:
    return cg_et_is_bitfloat(et);
  }
}

bool cg_et_is_bitfloat(ElemType et) {
  return et_is_float(et) && et_bits(et) <= 8;
}

LLVMTypeRef cg_reg_type(Codegen *cg, ElemType et) {
  switch (et) {
  case ET_PRED: return LLVMInt1TypeInContext(cg->ctx);
  case ET_F16: return LLVMHalfTypeInContext(cg->ctx);
  case ET_BF16: return LLVMBFloatTypeInContext(cg->ctx);
  case ET_F32: return LLVMFloatTypeInContext(cg->ctx);
  case ET_F64: return LLVMDoubleTypeInContext(cg->ctx);
  case ET_C64: return LLVMVectorType(LLVMFloatTypeInContext(cg->ctx), 2);
  case ET_C128: return LLVMVectorType(LLVMDoubleTypeInContext(cg->ctx), 2);
  default: return LLVMIntTypeInContext(cg->ctx, (unsigned)et_bits(et));
  }
}

LLVMTypeRef cg_mem_type(Codegen *cg, ElemType et) {
  if (et == ET_PRED || et_bits(et) < 8)
    return LLVMInt8TypeInContext(cg->ctx);
  return cg_reg_type(cg, et);
}

LLVMValueRef cg_from_mem(Codegen *cg, ElemType et, LLVMValueRef v) {
  if (et == ET_PRED)
    return LLVMBuildICmp(cg->b, LLVMIntNE, v,
                         LLVMConstInt(LLVMInt8TypeInContext(cg->ctx), 0, false), "");
  if (et_bits(et) < 8)
    return LLVMBuildTrunc(cg->b, v, cg_reg_type(cg, et), "");
  return v;
}

LLVMValueRef cg_to_mem(Codegen *cg, ElemType et, LLVMValueRef v) {
  if (et == ET_PRED || et_bits(et) < 8)
    return LLVMBuildZExt(cg->b, v, LLVMInt8TypeInContext(cg->ctx), "");
  return v;
}

LLVMTypeRef cg_ptr_type(Codegen *cg) {
  return LLVMPointerTypeInContext(cg->ctx, cg->is_gpu ? CG_AS_GLOBAL : 0);
}

LLVMTypeRef cg_i64(Codegen *cg) { return LLVMInt64TypeInContext(cg->ctx); }
LLVMTypeRef cg_i32(Codegen *cg) { return LLVMInt32TypeInContext(cg->ctx); }

LLVMValueRef cg_const_i64(Codegen *cg, int64_t v) {
  return LLVMConstInt(cg_i64(cg), (unsigned long long)v, true);
}

LLVMValueRef cg_const_i32(Codegen *cg, int32_t v) {
  return LLVMConstInt(cg_i32(cg), (unsigned long long)(int64_t)v, true);
}

/* A register constant from the raw little-endian bits of one element. */
static LLVMValueRef const_from_bits(Codegen *cg, ElemType et, uint64_t raw) {
  if (et == ET_PRED)
    return LLVMConstInt(LLVMInt1TypeInContext(cg->ctx), raw != 0, false);
  LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)et_bits(et));
  LLVMValueRef c = LLVMConstInt(it, raw, false);
  if (et_is_float(et) && !cg_et_is_bitfloat(et))
    c = LLVMConstBitCast(c, cg_reg_type(cg, et));
  return c;
}

LLVMValueRef cg_const_literal_elem(Codegen *cg, const Literal *l, int64_t k) {
  ElemType et = l->shape->et;
  int eb = et_bytes(et);
  if (et_is_complex(et)) {            /* (re, im) */
    LLVMValueRef parts[2];
    for (int j = 0; j < 2; j++) {
      uint64_t raw = 0;
      memcpy(&raw, l->data + k * eb + j * (eb / 2), (size_t)(eb / 2));
      parts[j] = const_from_bits(cg, et_complex_component(et), raw);
    }
    return LLVMConstVector(parts, 2);
  }
  uint64_t raw = 0;
  memcpy(&raw, l->data + k * eb, (size_t)eb);
  return const_from_bits(cg, et, raw);
}

LLVMValueRef cg_const_f(Codegen *cg, ElemType et, double v) {
  if (et_is_complex(et)) {
    LLVMValueRef parts[2] = {cg_const_f(cg, et_complex_component(et), v),
                             cg_const_f(cg, et_complex_component(et), 0.0)};
    return LLVMConstVector(parts, 2);
  }
  if (cg_et_is_bitfloat(et))
    return const_from_bits(cg, et, fp_from_double(et_fp_format(et), v));
  if (et_is_float(et) && et != ET_BF16)
    return LLVMConstReal(cg_reg_type(cg, et), v);
  if (et == ET_BF16)
    return const_from_bits(cg, et, fp_from_double(FP_BF16, v));
  return cg_const_int(cg, et, (int64_t)v);
}

LLVMValueRef cg_const_int(Codegen *cg, ElemType et, int64_t v) {
  if (et_is_float(et))
    return cg_const_f(cg, et, (double)v);
  return LLVMConstInt(cg_reg_type(cg, et), (unsigned long long)v, true);
}

static const int64_t *layout_m2m(const Shape *s, int64_t *tmp) {
  if (s->layout && s->layout->rank == s->rank && s->layout->minor_to_major)
    return s->layout->minor_to_major;
  for (int k = 0; k < s->rank; k++)
    tmp[k] = s->rank - 1 - k;
  return tmp;
}

LLVMValueRef cg_linear_index(Codegen *cg, const Shape *s,
                             LLVMValueRef const *idx) {
  int64_t tmp[64];
  if (s->rank > 64)
    die("rank %d too large", s->rank);
  const int64_t *m2m = layout_m2m(s, tmp);
  LLVMValueRef lin = NULL;
  for (int k = s->rank - 1; k >= 0; k--) {
    int64_t d = m2m[k];
    if (!lin) {
      lin = idx[d];
    } else {
      lin = LLVMBuildNSWMul(cg->b, lin, cg_const_i64(cg, s->dims[d]), "");
      lin = LLVMBuildNSWAdd(cg->b, lin, idx[d], "");
    }
  }
  return lin ? lin : cg_const_i64(cg, 0);
}

void cg_split_index(Codegen *cg, LLVMValueRef lin, int nd, const int *dsel,
                    const int64_t *dims, LLVMValueRef *idx) {
  for (int j = nd - 1; j >= 0; j--) {
    int64_t n = dims[dsel[j]];
    if (n == 1) {
      idx[dsel[j]] = cg_const_i64(cg, 0);
      continue;
    }
    if (j == 0) {
      idx[dsel[j]] = lin;
      break;
    }
    LLVMValueRef c = cg_const_i64(cg, n);
    idx[dsel[j]] = LLVMBuildURem(cg->b, lin, c, "digit");
    lin = LLVMBuildUDiv(cg->b, lin, c, "rest");
  }
}

void cg_delinearize(Codegen *cg, const Shape *s, LLVMValueRef linear,
                    LLVMValueRef *idx) {
  int64_t tmp[64];
  if (s->rank > 64)
    die("rank %d too large", s->rank);
  const int64_t *m2m = layout_m2m(s, tmp);
  LLVMValueRef rest = linear;
  for (int k = 0; k < s->rank; k++) {
    int64_t d = m2m[k];
    if (k == s->rank - 1) {
      idx[d] = rest;
      break;
    }
    if (s->dims[d] == 1) {
      idx[d] = cg_const_i64(cg, 0);
      continue;
    }
    LLVMValueRef dim = cg_const_i64(cg, s->dims[d]);
    idx[d] = LLVMBuildURem(cg->b, rest, dim, "");
    rest = LLVMBuildUDiv(cg->b, rest, dim, "");
  }
}

LLVMValueRef cg_elem_ptr(Codegen *cg, LLVMValueRef base, ElemType et,
                         LLVMValueRef linear) {
  return LLVMBuildInBoundsGEP2(cg->b, cg_mem_type(cg, et), base, &linear, 1,
                               "");
}

LLVMValueRef cg_load_linear(Codegen *cg, LLVMValueRef base, ElemType et,
                            LLVMValueRef linear) {
  LLVMValueRef p = cg_elem_ptr(cg, base, et, linear);
  LLVMValueRef v = LLVMBuildLoad2(cg->b, cg_mem_type(cg, et), p, "");
  LLVMSetAlignment(v, (unsigned)et_bytes(et));
  return cg_from_mem(cg, et, v);
}

void cg_store_linear(Codegen *cg, LLVMValueRef base, ElemType et,
                     LLVMValueRef linear, LLVMValueRef v) {
  v = cg_to_mem(cg, et, v);
  LLVMValueRef p = cg_elem_ptr(cg, base, et, linear);
  LLVMValueRef st = LLVMBuildStore(cg->b, v, p);
  LLVMSetAlignment(st, (unsigned)et_bytes(et));
}

LLVMValueRef cg_load_elem(Codegen *cg, LLVMValueRef base, const Shape *s,
                          LLVMValueRef const *idx) {
  return cg_load_linear(cg, base, s->et, cg_linear_index(cg, s, idx));
}

void cg_store_elem(Codegen *cg, LLVMValueRef base, const Shape *s,
                   LLVMValueRef const *idx, LLVMValueRef v) {
  cg_store_linear(cg, base, s->et, cg_linear_index(cg, s, idx), v);
}

LLVMValueRef cg_call_named(Codegen *cg, const char *name, LLVMTypeRef ret,
                           int nargs, LLVMTypeRef const *argtys,
                           LLVMValueRef const *args) {
  LLVMTypeRef ft = LLVMFunctionType(ret, (LLVMTypeRef *)argtys,
                                    (unsigned)nargs, false);
  LLVMValueRef f = LLVMGetNamedFunction(cg->mod, name);
  if (!f)
    f = LLVMAddFunction(cg->mod, name, ft);
  return LLVMBuildCall2(cg->b, ft, f, (LLVMValueRef *)args, (unsigned)nargs,
                        "");
}

static LLVMValueRef current_fn(Codegen *cg) {
  return LLVMGetBasicBlockParent(LLVMGetInsertBlock(cg->b));
}

LLVMValueRef cg_loop_begin(Codegen *cg, CgLoop *l, LLVMValueRef start,
                           LLVMValueRef end, LLVMValueRef step,
                           const char *name) {
  LLVMValueRef fn = current_fn(cg);
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
  l->header = LLVMAppendBasicBlockInContext(cg->ctx, fn, name);
  l->body = LLVMAppendBasicBlockInContext(cg->ctx, fn, "body");
  l->exit = LLVMAppendBasicBlockInContext(cg->ctx, fn, "exit");
  l->step = step;
  LLVMBuildBr(cg->b, l->header);
  LLVMPositionBuilderAtEnd(cg->b, l->header);
  l->iv = LLVMBuildPhi(cg->b, cg_i64(cg), "iv");
  LLVMAddIncoming(l->iv, &start, &pre, 1);
  LLVMValueRef c = LLVMBuildICmp(cg->b, LLVMIntSLT, l->iv, end, "");
  LLVMBuildCondBr(cg->b, c, l->body, l->exit);
  LLVMPositionBuilderAtEnd(cg->b, l->body);
  return l->iv;
}

void cg_loop_end(Codegen *cg, CgLoop *l) {
  LLVMValueRef next = LLVMBuildNSWAdd(cg->b, l->iv, l->step, "");
  LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b);
  LLVMBuildBr(cg->b, l->header);
  LLVMAddIncoming(l->iv, &next, &from, 1);
  LLVMPositionBuilderAtEnd(cg->b, l->exit);
}

LLVMValueRef cg_sreg(Codegen *cg, const char *reg) {
  char name[96];
  snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.%s", reg);
  return cg_call_named(cg, name, cg_i32(cg), 0, NULL, NULL);
}

void cg_barrier(Codegen *cg) {
  cg_call_named(cg, "llvm.nvvm.barrier0",
                LLVMVoidTypeInContext(cg->ctx), 0, NULL, NULL);
}

LLVMValueRef cg_shared_array(Codegen *cg, LLVMTypeRef t, int64_t n,
                             const char *name) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s.%d", name, cg->nglobals++);
  LLVMTypeRef at = LLVMArrayType2(t, (uint64_t)n);
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, at, buf,
                                               cg->is_gpu ? CG_AS_SHARED : 0);
  LLVMSetInitializer(g, LLVMGetUndef(at));
  LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMSetAlignment(g, 16);
  return g;
}

/* shfl.sync.bfly of an i32 over the full warp. */
static LLVMValueRef shfl_i32(Codegen *cg, LLVMValueRef v, int lanemask) {
  LLVMTypeRef i32 = cg_i32(cg);
  LLVMTypeRef tys[4] = {i32, i32, i32, i32};
  LLVMValueRef args[4] = {cg_const_i32(cg, -1), v, cg_const_i32(cg, lanemask),
                          cg_const_i32(cg, 31)};
  return cg_call_named(cg, "llvm.nvvm.shfl.sync.bfly.i32", i32, 4, tys, args);
}

LLVMValueRef cg_shfl_bfly(Codegen *cg, LLVMValueRef v, int lanemask) {
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef t = LLVMTypeOf(v), i32 = cg_i32(cg);
  LLVMTypeKind kind = LLVMGetTypeKind(t);
  if (kind == LLVMFloatTypeKind) {
    LLVMTypeRef tys[4] = {i32, t, i32, i32};
    LLVMValueRef args[4] = {cg_const_i32(cg, -1), v, cg_const_i32(cg, lanemask),
                            cg_const_i32(cg, 31)};
    return cg_call_named(cg, "llvm.nvvm.shfl.sync.bfly.f32", t, 4, tys, args);
  }
  unsigned bits;
  if (kind == LLVMIntegerTypeKind) bits = LLVMGetIntTypeWidth(t);
  else if (kind == LLVMHalfTypeKind || kind == LLVMBFloatTypeKind) bits = 16;
  else bits = 64;                 /* double */
  LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, bits);
  LLVMValueRef x = kind == LLVMIntegerTypeKind ? v : LLVMBuildBitCast(b, v, it, "bits");
  LLVMValueRef y;
  if (bits <= 32) {
    LLVMValueRef w = bits == 32 ? x : LLVMBuildZExt(b, x, i32, "w");
    w = shfl_i32(cg, w, lanemask);
    y = bits == 32 ? w : LLVMBuildTrunc(b, w, it, "n");
  } else {
    LLVMValueRef lo = LLVMBuildTrunc(b, x, i32, "lo");
    LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, x, LLVMConstInt(it, 32, 0), "h"), i32,
                                     "hi");
    lo = LLVMBuildZExt(b, shfl_i32(cg, lo, lanemask), it, "lo64");
    hi = LLVMBuildZExt(b, shfl_i32(cg, hi, lanemask), it, "hi64");
    y = LLVMBuildOr(b, lo, LLVMBuildShl(b, hi, LLVMConstInt(it, 32, 0), "hs"), "w64");
  }
  return kind == LLVMIntegerTypeKind ? y : LLVMBuildBitCast(b, y, t, "v");
}
