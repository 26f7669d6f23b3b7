/*
 * gemm_f64.h - a GEMM descriptor (libcall.h) run in double precision on
 * host memory by xhloc's own cache-blocked kernel, for what oneDNN lacks
 * (f64).  See gemm_f64.c.
 */
#ifndef XHLOC_GEMM_F64_H
#define XHLOC_GEMM_F64_H

#include "libcall.h"

/* D = act(alpha * A@B + beta * C + bias) for every batch, p[] in GEMM_*
 * order.  Operands of any real float type are read exactly into double,
 * products are summed in double (in blocks: not the reference's order),
 * and each result is rounded once to D's type.  threads: worker threads,
 * <= 0 for one per online CPU.  False with a message for what it does not
 * take (complex alpha, integer or complex types, inconsistent sizes). */
bool gemm_f64(const GemmDesc *g, void *const p[GEMM_NSLICES], int threads, Diag *d);

#endif
