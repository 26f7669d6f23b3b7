/*
 * codegen_test_util.h - shared by the code generator's kernel tests
 * (test_codegen_reduce.c, test_codegen_transpose.c, test_codegen_conv.c,
 * ...): the SIMT emulator that runs an NVPTX kernel's LLVM IR on the host.
 *
 * Header-only (each tests/unit/test_X.c is its own binary, linked with the
 * library alone): include it once per test file.  emu_run writes the
 * retargeted IR and the emulator into a directory, builds them with
 * clang-19 and launches kernel `kern` on pointer arguments.
 */
#ifndef XHLOC_CODEGEN_TEST_UTIL_H
#define XHLOC_CODEGEN_TEST_UTIL_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../emitters/codegen.h"

/*
 * A small SIMT emulator for the GPU kernels: the NVPTX module's
 * unoptimized LLVM IR is retargeted to the host (the nvvm intrinsics
 * renamed to emulator functions) and each block is run as one POSIX thread
 * per GPU thread, with pthread barriers for __syncthreads and for the warp
 * exchange behind shfl.sync.  A shuffle that not all 32 lanes of a warp
 * reach, or a barrier under divergent control flow, hangs the run (the
 * test's time limit catches it).
 */
static const char *const EmuSource =
  "#include <math.h>\n#include <pthread.h>\n#include <stdint.h>\n"
  "#include <stdlib.h>\n#include <string.h>\n"
  "typedef struct { unsigned x, y, z; } D3;\n"
  "static D3 grid, block, bid;\nstatic __thread D3 tid;\n"
  "static pthread_barrier_t bar, wbar[32];\nstatic uint32_t slots[32][32];\n"
  "#define SREG(v, s, e) unsigned sr_##v(void) __asm__(\"emu_nvvm_read.ptx.sreg.\" s); \\\n"
  "  unsigned sr_##v(void) { return e; }\n"
  "#define SREG3(n, e) SREG(n##_x, #n \".x\", e.x) SREG(n##_y, #n \".y\", e.y) \\\n"
  "  SREG(n##_z, #n \".z\", e.z)\n"
  "SREG3(tid, tid) SREG3(ntid, block) SREG3(ctaid, bid) SREG3(nctaid, grid)\n"
  "static unsigned lin(void) { return tid.x + block.x * (tid.y + block.y * tid.z); }\n"
  "uint32_t shfl_i(uint32_t m, uint32_t v, uint32_t lm, uint32_t c)"
  " __asm__(\"emu_nvvm_shfl.sync.bfly.i32\");\n"
  "uint32_t shfl_i(uint32_t m, uint32_t v, uint32_t lm, uint32_t c) {\n"
  "  unsigned l = lin(), w = l / 32, lane = l % 32;\n"
  "  slots[w][lane] = v; pthread_barrier_wait(&wbar[w]);\n"
  "  uint32_t r = slots[w][(lane ^ lm) & 31]; pthread_barrier_wait(&wbar[w]);\n"
  "  return r; }\n"
  "float shfl_f(uint32_t m, float v, uint32_t lm, uint32_t c)"
  " __asm__(\"emu_nvvm_shfl.sync.bfly.f32\");\n"
  "float shfl_f(uint32_t m, float v, uint32_t lm, uint32_t c) {\n"
  "  uint32_t b; memcpy(&b, &v, 4); b = shfl_i(m, b, lm, c); memcpy(&v, &b, 4);"
  " return v; }\n"
  "void barrier0(void) __asm__(\"emu_nvvm_barrier0\");\n"
  "void barrier0(void) { pthread_barrier_wait(&bar); }\n"
  "float __nv_expf(float x) { return expf(x); }\n"
  "double __nv_exp(double x) { return exp(x); }\n"
  "typedef struct { void *fn; void **args; int nargs; D3 tid; } Th;\n"
  "typedef void *P;\n"
  "static void *run(void *p) {\n"
  "  Th *t = p; tid = t->tid; P *a = t->args;\n"
  "  switch (t->nargs) {\n"
  "  case 2: ((void (*)(P, P))t->fn)(a[0], a[1]); break;\n"
  "  case 3: ((void (*)(P, P, P))t->fn)(a[0], a[1], a[2]); break;\n"
  "  case 4: ((void (*)(P, P, P, P))t->fn)(a[0], a[1], a[2], a[3]); break;\n"
  "  case 5: ((void (*)(P, P, P, P, P))t->fn)(a[0], a[1], a[2], a[3], a[4]); break;\n"
  "  case 6: ((void (*)(P, P, P, P, P, P))t->fn)(a[0], a[1], a[2], a[3], a[4], a[5]);"
  " break;\n"
  "  case 7: ((void (*)(P, P, P, P, P, P, P))t->fn)(a[0], a[1], a[2], a[3], a[4], a[5],"
  " a[6]); break;\n"
  "  case 8: ((void (*)(P, P, P, P, P, P, P, P))t->fn)(a[0], a[1], a[2], a[3], a[4],"
  " a[5], a[6], a[7]); break;\n"
  "  default: abort();\n  }\n  return 0; }\n"
  "int emu_launch(void *fn, void **args, int nargs, const unsigned *g,"
  " const unsigned *b) {\n"
  "  grid = (D3){g[0], g[1], g[2]}; block = (D3){b[0], b[1], b[2]};\n"
  "  unsigned nt = b[0] * b[1] * b[2];\n"
  "  if (nt == 0 || nt > 1024) return -1;\n"
  "  pthread_barrier_init(&bar, 0, nt);\n"
  "  for (unsigned w = 0; w * 32 < nt; w++)\n"
  "    pthread_barrier_init(&wbar[w], 0, nt - w * 32 < 32 ? nt - w * 32 : 32);\n"
  "  Th *th = calloc(nt, sizeof *th); pthread_t *ids = calloc(nt, sizeof *ids);\n"
  "  pthread_attr_t at; pthread_attr_init(&at);"
  " pthread_attr_setstacksize(&at, 1 << 17);\n"
  "  int rc = 0;\n"
  "  for (unsigned z = 0; z < g[2]; z++) for (unsigned y = 0; y < g[1]; y++)\n"
  "  for (unsigned x = 0; x < g[0]; x++) {\n"
  "    bid = (D3){x, y, z}; unsigned k = 0;\n"
  "    for (unsigned tz = 0; tz < b[2]; tz++) for (unsigned ty = 0; ty < b[1]; ty++)\n"
  "    for (unsigned tx = 0; tx < b[0]; tx++, k++) {\n"
  "      th[k] = (Th){fn, args, nargs, {tx, ty, tz}};\n"
  "      if (pthread_create(&ids[k], &at, run, &th[k])) abort(); }\n"
  "    for (k = 0; k < nt; k++) pthread_join(ids[k], 0);\n"
  "  }\n"
  "  free(th); free(ids); return rc; }\n";

/* The IR with the nvvm intrinsics renamed to the emulator's functions and
 * without the NVPTX target and calling convention. */
static char *retarget_ir(const char *ir) {
  StrBuf o;
  sb_init(&o);
  for (const char *p = ir; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p + 1) : strlen(p);
    if (strncmp(p, "target ", 7) == 0) {
      p += n;
      continue;
    }
    for (size_t k = 0; k < n;) {
      if (n - k >= 10 && strncmp(p + k, "llvm.nvvm.", 10) == 0) {
        sb_puts(&o, "emu_nvvm_");
        k += 10;
      } else if (n - k >= 11 && strncmp(p + k, "ptx_kernel ", 11) == 0) {
        k += 11;
      } else {
        sb_putc(&o, p[k++]);
      }
    }
    p += n;
  }
  return sb_detach(&o);
}


/* Writes ir (the NVPTX module's unoptimized LLVM IR) retargeted, and the
 * emulator, into dir; builds them with clang-19 and launches `kern` on
 * args (nargs pointers, 2 to 8) with ld.  False with a reason in why. */
__attribute__((unused)) static bool emu_run(const char *ir, const char *dir,
                                            void **args, int nargs,
                                            const LaunchDims *ld, char *why,
                                            size_t nwhy) {
  char path[512], cmd[2048];
  if (nargs < 2 || nargs > 8) {
    snprintf(why, nwhy, "the emulator launches kernels of 2 to 8 arguments, not %d", nargs);
    return false;
  }
  char *host_ir = retarget_ir(ir);
  snprintf(path, sizeof path, "%s/emu.ll", dir);
  FILE *f = fopen(path, "w");
  if (!f) {
    free(host_ir);
    snprintf(why, nwhy, "cannot write the emulator files in %.200s", dir);
    return false;
  }
  fputs(host_ir, f);
  fclose(f);
  free(host_ir);
  snprintf(path, sizeof path, "%s/emu.c", dir);
  f = fopen(path, "w");
  if (!f) {
    snprintf(why, nwhy, "cannot write the emulator files in %.200s", dir);
    return false;
  }
  fputs(EmuSource, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "clang-19 -O0 -w -shared -fPIC %s/emu.ll %s/emu.c -o %s/emu.so -lpthread -lm",
           dir, dir, dir);
  if (system(cmd) != 0) {
    snprintf(why, nwhy, "clang could not build the emulated kernel");
    return false;
  }
  snprintf(path, sizeof path, "%s/emu.so", dir);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(why, nwhy, "dlopen: %s", dlerror());
    return false;
  }
  void *kern = dlsym(h, "kern");
  int (*launch)(void *, void **, int, const unsigned *, const unsigned *) =
      (int (*)(void *, void **, int, const unsigned *, const unsigned *))dlsym(h, "emu_launch");
  bool ok = kern && launch && launch(kern, args, nargs, ld->grid, ld->block) == 0;
  if (!ok)
    snprintf(why, nwhy, "launch of %d args with block %ux%ux%u failed", nargs,
             ld->block[0], ld->block[1], ld->block[2]);
  dlclose(h);
  return ok;
}

#endif
