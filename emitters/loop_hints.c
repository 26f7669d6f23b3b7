/*
 * loop_hints.c - loops the host emitters end with hints for LLVM's loop
 * passes (llvm.loop metadata on the back edge): loops LLVM must leave
 * scalar (a sort's merge tails, a top-k's selection), and rows the full
 * unroller must not flatten (loop_kernel.c).  Hints cost nothing at run
 * time; they keep LLVM from work that gains nothing, which is compile time.
 */
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "cg_internal.h"

static LLVMMetadataRef hint(Codegen *cg, const char *name, bool with_one) {
  LLVMMetadataRef h[2] = {
    LLVMMDStringInContext2(cg->ctx, name, strlen(name)),
    LLVMValueAsMetadata(cg_const_i32(cg, 1)),
  };
  return LLVMMDNodeInContext2(cg->ctx, h, with_one ? 2 : 1);
}

/* The distinct loop ID !{self, hints...}. */
static LLVMMetadataRef loop_id(Codegen *cg, unsigned flags) {
  LLVMMetadataRef md[4];
  int n = 0;
  md[n++] = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
  if (flags & CG_LOOP_NO_VECTORIZE) {
    md[n++] = hint(cg, "llvm.loop.vectorize.width", true);
    md[n++] = hint(cg, "llvm.loop.interleave.count", true);
  }
  if (flags & CG_LOOP_NO_UNROLL)
    md[n++] = hint(cg, "llvm.loop.unroll.disable", false);
  LLVMMetadataRef id = LLVMMDNodeInContext2(cg->ctx, md, (size_t)n);
  LLVMMetadataReplaceAllUsesWith(md[0], id);
  return id;
}

void cg_loop_end_hinted(Codegen *cg, CgLoop *l, unsigned flags) {
  LLVMValueRef next = LLVMBuildNSWAdd(cg->b, l->iv, l->step, "");
  LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b);
  LLVMValueRef br = LLVMBuildBr(cg->b, l->header);
  LLVMAddIncoming(l->iv, &next, &from, 1);
  if (!cg->is_gpu && flags) {
    unsigned kind = LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9);
    LLVMSetMetadata(br, kind, LLVMMetadataAsValue(cg->ctx, loop_id(cg, flags)));
  }
  LLVMPositionBuilderAtEnd(cg->b, l->exit);
}

void cg_loop_end_scalar(Codegen *cg, CgLoop *l) {
  cg_loop_end_hinted(cg, l, CG_LOOP_NO_VECTORIZE | CG_LOOP_NO_UNROLL);
}
