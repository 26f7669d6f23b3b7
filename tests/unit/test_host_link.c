/*
 * test_host_link.c - xhloc's own linker for host kernels (emitters/
 * host_link.c): objects made by LLVM from IR written here are linked, loaded
 * with dlopen and called; what the linker does not handle, and malformed or
 * truncated objects, are refused with a reason and never crash it.
 */
#include <criterion/criterion.h>

#include <dlfcn.h>
#include <elf.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "../../emitters/host_link.h"

/* Every relocation the host kernels make, and some they could: calls to
 * libm through the PLT (expf), a switch lowered to a jump table (PC32 in
 * .rodata), constant pools, the GOT address of an external function
 * (GOTPCREL), absolute pointers in writable data to local and external
 * functions (RELATIVE and R_X86_64_64), a zeroed counter (.bss), a
 * hidden function that must not be exported. */
static const char *const ir_all =
    "define float @call_exp(float %x) {\n"
    "  %r = call float @expf(float %x)\n"
    "  ret float %r\n"
    "}\n"
    "declare float @expf(float)\n"
    "declare float @sinf(float)\n"
    "define i32 @jump(i32 %k) {\n"
    "  switch i32 %k, label %d [i32 0, label %a i32 1, label %b i32 2, label %c\n"
    "                          i32 3, label %e i32 4, label %f i32 5, label %g]\n"
    "a: ret i32 10\n"
    "b: ret i32 11\n"
    "c: ret i32 12\n"
    "e: ret i32 13\n"
    "f: ret i32 14\n"
    "g: ret i32 15\n"
    "d: ret i32 -1\n"
    "}\n"
    "define double @poly(double %x) {\n"
    "  %a = fmul double %x, 3.25\n"
    "  %b = fadd double %a, 1.0e-3\n"
    "  ret double %b\n"
    "}\n"
    "define ptr @addr_of_sinf() {\n"
    "  ret ptr @sinf\n"
    "}\n"
    "define hidden i32 @hidden_fn() {\n"
    "  ret i32 7\n"
    "}\n"
    "@table = global [3 x ptr] [ptr @call_exp, ptr @sinf, ptr @hidden_fn]\n"
    "define ptr @table_at(i64 %i) {\n"
    "  %p = getelementptr [3 x ptr], ptr @table, i64 0, i64 %i\n"
    "  %f = load ptr, ptr %p\n"
    "  ret ptr %f\n"
    "}\n"
    "@counter = global i32 0\n"
    "define i32 @bump() {\n"
    "  %v = load i32, ptr @counter\n"
    "  %w = add i32 %v, 1\n"
    "  store i32 %w, ptr @counter\n"
    "  ret i32 %w\n"
    "}\n";

static unsigned char *emit_object(const char *ir, LLVMRelocMode reloc, size_t *n) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMMemoryBufferRef src =
      LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), "test.ll");
  LLVMModuleRef mod;
  char *err = NULL;
  cr_assert(!LLVMParseIRInContext(ctx, src, &mod, &err), "IR: %s", err ? err : "");
  const char *triple = "x86_64-pc-linux-gnu";
  LLVMSetTarget(mod, triple);
  LLVMTargetRef t;
  cr_assert(!LLVMGetTargetFromTriple(triple, &t, &err));
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
      t, triple, "x86-64", "", LLVMCodeGenLevelDefault, reloc, LLVMCodeModelDefault);
  LLVMMemoryBufferRef buf;
  cr_assert(!LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &buf),
            "emit: %s", err ? err : "");
  *n = LLVMGetBufferSize(buf);
  /* 8-byte aligned, as LLVM's own buffers are */
  unsigned char *obj = aligned_alloc(16, (*n + 15) / 16 * 16);
  memcpy(obj, LLVMGetBufferStart(buf), *n);
  LLVMDisposeMemoryBuffer(buf);
  LLVMDisposeTargetMachine(tm);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return obj;
}

static void *load(const unsigned char *so, size_t n, char *path, size_t pathlen) {
  snprintf(path, pathlen, "/tmp/test_host_link-XXXXXX.so");
  int fd = mkstemps(path, 3);
  cr_assert(fd >= 0);
  cr_assert(write(fd, so, n) == (ssize_t)n);
  close(fd);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  cr_assert(h, "dlopen: %s", dlerror());
  return h;
}

Test(host_link, links_and_runs) {
  size_t n, sn;
  unsigned char *obj = emit_object(ir_all, LLVMRelocPIC, &n), *so;
  char why[200];
  cr_assert(host_link_so(obj, n, &so, &sn, why, sizeof why), "%s", why);
  char path[64];
  void *h = load(so, sn, path, sizeof path);

  float (*call_exp)(float) = (float (*)(float))(uintptr_t)dlsym(h, "call_exp");
  cr_assert(call_exp);
  cr_expect_eq(call_exp(1.5f), expf(1.5f));
  int (*jump)(int) = (int (*)(int))(uintptr_t)dlsym(h, "jump");
  for (int k = -2; k < 8; k++)
    cr_expect_eq(jump(k), k >= 0 && k <= 5 ? 10 + k : -1, "jump(%d)", k);
  double (*poly)(double) = (double (*)(double))(uintptr_t)dlsym(h, "poly");
  cr_expect_eq(poly(2.0), 2.0 * 3.25 + 1.0e-3);
  void *(*addr)(void) = (void *(*)(void))(uintptr_t)dlsym(h, "addr_of_sinf");
  cr_expect_eq(addr(), dlsym(RTLD_DEFAULT, "sinf"));
  void *(*table_at)(int64_t) = (void *(*)(int64_t))(uintptr_t)dlsym(h, "table_at");
  cr_expect_eq(table_at(0), (void *)call_exp);
  cr_expect_eq(table_at(1), dlsym(RTLD_DEFAULT, "sinf"));
  int (*hidden)(void) = (int (*)(void))(uintptr_t)table_at(2);
  cr_expect_eq(hidden(), 7);
  cr_expect_null(dlsym(h, "hidden_fn"), "a hidden function is not exported");
  int (*bump)(void) = (int (*)(void))(uintptr_t)dlsym(h, "bump");
  cr_expect_eq(bump(), 1);
  cr_expect_eq(bump(), 2);
  int *counter = dlsym(h, "counter");
  cr_assert(counter);
  cr_expect_eq(*counter, 2);

  /* no writable and executable segment, and a non-executable stack */
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)so;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(so + eh->e_phoff);
  bool stack = false;
  for (int k = 0; k < eh->e_phnum; k++) {
    cr_expect(!((ph[k].p_flags & PF_W) && (ph[k].p_flags & PF_X)));
    if (ph[k].p_type == PT_GNU_STACK)
      stack = !(ph[k].p_flags & PF_X);
  }
  cr_expect(stack);
  dlclose(h);
  unlink(path);
  free(so);
  free(obj);
}

/* The kernel file of a module without kernels: loads, and exports nothing
 * (one null symbol in .dynsym). */
Test(host_link, empty_shared_object) {
  unsigned char *so;
  size_t sn;
  char why[200];
  cr_assert(host_link_empty_so(&so, &sn, why, sizeof why), "%s", why);
  char path[64];
  void *h = load(so, sn, path, sizeof path);
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)so;
  cr_assert_eq(eh->e_type, ET_DYN);
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(so + eh->e_shoff);
  int dynsyms = -1;
  for (int k = 0; k < eh->e_shnum; k++) {
    cr_expect(sh[k].sh_type != SHT_PROGBITS || !(sh[k].sh_flags & SHF_ALLOC),
              "section %d holds code or data", k);
    if (sh[k].sh_type == SHT_DYNSYM)
      dynsyms = (int)(sh[k].sh_size / sizeof(Elf64_Sym));
  }
  cr_expect_eq(dynsyms, 1);
  dlclose(h);
  unlink(path);
  free(so);
}

static void expect_refused(const char *ir, LLVMRelocMode reloc, const char *reason) {
  size_t n, sn = 0;
  unsigned char *obj = emit_object(ir, reloc, &n), *so = NULL;
  char why[200];
  cr_expect(!host_link_so(obj, n, &so, &sn, why, sizeof why), "linked: %s", ir);
  cr_expect(strstr(why, reason), "reason '%s' lacks '%s'", why, reason);
  cr_expect_null(so);
  free(obj);
}

Test(host_link, refuses_what_it_does_not_handle) {
  /* not position-independent: absolute addresses in read-only data, and
   * 32-bit absolute addresses in code */
  expect_refused("@g = global i32 5\n@p = constant ptr @g\n"
                 "define ptr @f() {\n  %v = load ptr, ptr @p\n  ret ptr %v\n}\n",
                 LLVMRelocStatic, "read-only");
  expect_refused("@g = dso_local global [4 x i32] zeroinitializer\n"
                 "define i32 @f(i64 %i) {\n"
                 "  %p = getelementptr [4 x i32], ptr @g, i64 0, i64 %i\n"
                 "  %v = load i32, ptr %p\n  ret i32 %v\n}\n",
                 LLVMRelocStatic, "relocation type");
  expect_refused("@t = thread_local global i32 5\n"
                 "define i32 @f() {\n  %v = load i32, ptr @t\n  ret i32 %v\n}\n",
                 LLVMRelocPIC, "thread-local");
  expect_refused("@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] "
                 "[{ i32, ptr, ptr } { i32 65535, ptr @c, ptr null }]\n"
                 "define void @c() {\n  ret void\n}\n",
                 LLVMRelocPIC, "constructors");
}

Test(host_link, refuses_malformed_objects) {
  char why[200];
  unsigned char *so = NULL;
  size_t sn = 0;
  static uint64_t zeros[64];
  cr_expect(!host_link_so(zeros, sizeof zeros, &so, &sn, why, sizeof why));
  cr_expect(strstr(why, "not an ELF file"), "%s", why);

  size_t n;
  unsigned char *obj = emit_object(ir_all, LLVMRelocPIC, &n);
  /* its own output is a shared object, not a relocatable one */
  cr_assert(host_link_so(obj, n, &so, &sn, why, sizeof why));
  uint64_t *copy = aligned_alloc(16, (sn + 15) / 16 * 16);
  memcpy(copy, so, sn);
  unsigned char *so2 = NULL;
  cr_expect(!host_link_so(copy, sn, &so2, &sn, why, sizeof why));
  cr_expect(strstr(why, "relocatable"), "%s", why);
  free(copy);
  free(so);

  /* every truncation, and single-byte corruptions all over the object: a
   * refusal or a link, never a crash (ASan checks the reads) */
  uint64_t *buf = aligned_alloc(16, (n + 15) / 16 * 16);
  for (size_t len = 0; len < n; len += len < 256 ? 1 : 7) {
    memcpy(buf, obj, len);
    so = NULL;
    cr_expect(!host_link_so(buf, len, &so, &sn, why, sizeof why), "truncated to %zu", len);
  }
  unsigned seed = 12345;
  for (int trial = 0; trial < 3000; trial++) {
    memcpy(buf, obj, n);
    for (int k = 0; k < 1 + trial % 3; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = (seed >> 8) % n;
      seed = seed * 1103515245u + 12345u;
      ((unsigned char *)buf)[at] ^= (unsigned char)(1u << ((seed >> 16) % 8));
    }
    so = NULL;
    if (host_link_so(buf, n, &so, &sn, why, sizeof why))
      free(so);
  }
  free(buf);
  free(obj);
}
