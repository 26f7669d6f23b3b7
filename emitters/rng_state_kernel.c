/*
 * rng_state_kernel.c - the rng-get-and-update-state kernel: a module-level
 * 128-bit counter of its own (an i128 global, as XLA's GPU emitter keeps
 * `rng_state`), starting at 0x7012395 as XLA's CPU runtime does; each run
 * writes the counter to the u64[2] result (low word first) and adds the
 * instruction's delta.  The counter lives as long as the loaded kernel
 * file, so a loop body or a second run of the artifact draws on, as an
 * XLA executable does.  One work unit (host) or one thread (GPU).
 */
#include "cg_internal.h"

bool cg_emit_rng_state_kernel(Codegen *cg, const HloInstr *instr, const char *name,
                              LaunchDims *ld, Diag *d) {
  const Shape *s = instr->shape;
  if (instr->op != HLO_RNG_GET_AND_UPDATE_STATE || !shape_is_array(s) ||
      s->et != ET_U64 || shape_elements(s) != 2 || instr->nops != 0)
    return diag_error(d, instr->loc,
                      "codegen: rng-get-and-update-state '%s' must be a u64[2] "
                      "of no operands",
                      instr->name ? instr->name : "?");
  CgKernel k;
  if (!cg_kernel_begin(cg, instr, name, &k, d))
    return false;
  LLVMBuilderRef b = cg->b;
  LLVMTypeRef i128 = LLVMInt128TypeInContext(cg->ctx);
  char gname[256];
  snprintf(gname, sizeof gname, "%s.rng_state", name);
  unsigned as = cg->is_gpu ? CG_AS_GLOBAL : 0;
  LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, i128, gname, as);
  LLVMSetInitializer(g, LLVMConstInt(i128, 0x7012395, false));
  LLVMSetLinkage(g, LLVMInternalLinkage);
  LLVMSetAlignment(g, 16);
  LLVMValueRef old = LLVMBuildLoad2(b, i128, g, "state");
  LLVMValueRef delta = LLVMConstInt(i128, (unsigned long long)instr->rng_delta, false);
  LLVMBuildStore(b, LLVMBuildAdd(b, old, delta, "next"), g);
  LLVMTypeRef i64 = cg_i64(cg);
  LLVMValueRef words[2] = {
      LLVMBuildTrunc(b, old, i64, "lo"),
      LLVMBuildTrunc(b, LLVMBuildLShr(b, old, LLVMConstInt(i128, 64, false), ""), i64,
                     "hi")};
  for (int w = 0; w < 2; w++) {
    LLVMValueRef at = LLVMConstInt(i64, (unsigned long long)w, false);
    LLVMValueRef p = LLVMBuildGEP2(b, i64, k.out[0], &at, 1, "");
    LLVMBuildStore(b, words[w], p);
  }
  ld->grid[0] = 1;
  ld->block[0] = 1;
  cg_kernel_end(&k);
  return true;
}
