/*
 * host_cpu.h - the x86-64 instruction-set features a host artifact needs,
 * and whether this CPU has them.
 *
 * xhloc compiles host kernels for a CPU (--host-cpu: the machine's own,
 * "native", or a portable x86-64 psABI level) and records in the thunk file
 * the features that CPU has from the table below (LLVM's names: "avx2",
 * "fma", "avx512f", ...), as one comma-separated list.  xhlo-run checks the
 * list against CPUID (and XGETBV: the OS must save the AVX / AVX-512
 * registers) before it loads the kernels, so that an artifact built for a
 * newer CPU fails with a message naming what is missing instead of dying
 * on an illegal instruction.
 */
#ifndef XHLOC_HOST_CPU_H
#define XHLOC_HOST_CPU_H

#include "../support/support.h"

/* The features of an x86-64 psABI level ("x86-64", "x86-64-v2",
 * "x86-64-v3", "x86-64-v4") as a comma-separated list; NULL for any other
 * name. */
const char *host_cpu_level_features(const char *level);

/* Appends to out the features of an LLVM feature string ("+avx2,-avx512f,
 * +fma,...", as LLVMGetHostCPUFeatures gives) that are enabled and that
 * this file can check, comma-separated, in the table's order. */
void host_cpu_checkable(const char *llvm_features, StrBuf *out);

/* Whether this CPU has every feature of the comma-separated list; the
 * missing ones (comma-separated) go to missing.  A name this file does not
 * know counts as missing (a newer xhloc's artifact). */
bool host_cpu_has(const char *features, StrBuf *missing);

#endif
