/*
 * hlo_verifier.c - "hlo-verifier" (XLA's HloVerifier as a pass): checks the
 * module's invariants (lib/hlo/verify.c) and fails the pipeline when one
 * does not hold.  Never changes the module.
 */
#include "passes.h"

bool pass_hlo_verifier(HloModule *m, PassContext *ctx) {
  hlo_verify(m, ctx->diag);
  return false;
}
