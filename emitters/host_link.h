/*
 * host_link.h - xhloc's own linker for its host kernels: turns the x86-64
 * relocatable object LLVM emits for a host module into the shared object
 * PREFIX.host.so, in memory, without running `ld`.
 */
#ifndef XHLOC_HOST_LINK_H
#define XHLOC_HOST_LINK_H

#include <stdbool.h>
#include <stddef.h>

/* Links the ELF64 x86-64 relocatable object obj[0..n) (position-independent
 * code, as codegen's host target machine makes it) into a shared object in
 * a new malloc'd buffer *out of *outlen bytes: the object's global default-
 * visibility definitions are exported through .dynsym and .hash, its
 * undefined symbols are bound at dlopen time through a GOT (calls through
 * PLT stubs), and libm and libc are needed.  Unwind tables are dropped.
 * Returns false, with a reason in why[0..whylen), for an object it does not
 * handle (a relocation other than PC32, PLT32, GOTPCREL(X), 64 and PC64;
 * constructors, TLS or common symbols; a malformed object), so that the
 * caller can fall back to the system linker. */
bool host_link_so(const void *obj, size_t n, unsigned char **out,
                  size_t *outlen, char *why, size_t whylen);
/* A shared object that defines nothing (the kernel file of a module
 * without kernels), from an empty object of xhloc's own making: no LLVM
 * code generation to run for it. */
bool host_link_empty_so(unsigned char **out, size_t *outlen, char *why, size_t whylen);

#endif
