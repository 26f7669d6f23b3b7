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

#include <criterion/criterion.h>

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../emitters/codegen.h"
#include "../../lib/eval/eval.h"

#define PTXAS "/usr/local/cuda/bin/ptxas"
#define CGT_UNUSED __attribute__((unused))

/* The case's modules, source, arena, diagnostics and temporary directory. */
static HloModule **Mods;
static int NMods;
static SrcFile *Src;
static Arena *A;
static Diag D;
static char Dir[64];
/* Sources and modules of earlier parse() calls of the case, freed by
 * teardown with the last ones. */
enum { CGT_MAX_PARSES = 64 };
static SrcFile *OldSrc[CGT_MAX_PARSES];
static HloModule **OldMods[CGT_MAX_PARSES];
static int OldNMods[CGT_MAX_PARSES], NOld;

/* Frees the case's state and removes Dir: the suite's .fini. */
CGT_UNUSED static void teardown(void) {
  for (int j = 0; j < NOld; j++) {
    for (int k = 0; k < OldNMods[j]; k++) hlo_module_free(OldMods[j][k]);
    free(OldMods[j]);
    srcfile_free(OldSrc[j]);
  }
  NOld = 0;
  for (int k = 0; k < NMods; k++) hlo_module_free(Mods[k]);
  free(Mods);
  Mods = NULL;
  NMods = 0;
  if (Src) srcfile_free(Src);
  Src = NULL;
  if (A) arena_free(A);
  A = NULL;
  diag_clear(&D);
  if (Dir[0]) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", Dir);
    cr_expect(system(cmd) == 0);
    Dir[0] = 0;
  }
}

/* The first module of text, parsed and verified. */
CGT_UNUSED static HloModule *parse(const char *text) {
  if (Src) {
    cr_assert(NOld < CGT_MAX_PARSES, "more than %d parses in one case", CGT_MAX_PARSES);
    OldSrc[NOld] = Src;
    OldMods[NOld] = Mods;
    OldNMods[NOld++] = NMods;
    Mods = NULL;
    NMods = 0;
  }
  Src = srcfile_from_string("test.hlo", text, strlen(text));
  ParseOptions po = {.strip_glog_prefixes = true};
  NMods = hlo_parse(Src, &po, &Mods, &D);
  cr_assert(NMods >= 1, "parse: %s", D.msg);
  cr_assert(hlo_verify(Mods[0], &D), "verify: %s", D.msg);
  if (!A) A = arena_new();
  return Mods[0];
}

/* Physical (layout-order) linear index of logical row-major index `lin`. */
CGT_UNUSED static int64_t physical_index(const Shape *s, int64_t lin) {
  int64_t idx[64];
  for (int d = s->rank - 1; d >= 0; d--) {
    idx[d] = lin % s->dims[d];
    lin /= s->dims[d];
  }
  int64_t p = 0;
  for (int j = s->rank - 1; j >= 0; j--) {
    int64_t d = s->layout ? s->layout->minor_to_major[j] : s->rank - 1 - j;
    p = p * s->dims[d] + idx[d];
  }
  return p;
}

/* Copies between a literal's logical order and a buffer in s's layout. */
CGT_UNUSED static void *to_physical(const Literal *l, const Shape *s) {
  int64_t n = shape_elements(s);
  int eb = et_bytes(s->et);
  uint8_t *p = calloc((size_t)(n > 0 ? n : 1), (size_t)eb);
  for (int64_t k = 0; k < n; k++)
    memcpy(p + physical_index(s, k) * eb, l->data + k * eb, (size_t)eb);
  return p;
}

CGT_UNUSED static void from_physical(const void *buf, const Shape *s, Literal *l) {
  int64_t n = shape_elements(s);
  int eb = et_bytes(s->et);
  for (int64_t k = 0; k < n; k++)
    memcpy(l->data + k * eb, (const uint8_t *)buf + physical_index(s, k) * eb, (size_t)eb);
}

/* Fills each result leaf's buffer bufs[out0 + k] with the 0xA5 pattern. */
CGT_UNUSED static void poison_outputs(void **bufs, int out0, const PtrVec *leaves) {
  for (int k = 0; k < leaves->len; k++) {
    const Shape *s = leaves->data[k];
    memset(bufs[out0 + k], 0xA5,
           (size_t)(shape_elements(s) > 0 ? shape_elements(s) : 1) * (size_t)et_bytes(s->et));
  }
}

/* The buffers of kernel ki (a lone instruction over parameters): the
 * parameters it reads in their layouts, then one poisoned buffer per result
 * leaf.  Returns how many (at most 8, what the emulator takes); *out0: the
 * first result's index; leaves: the result leaves (caller frees). */
CGT_UNUSED static int kernel_buffers(const HloInstr *ki, Literal *const *args, void **bufs,
                                     PtrVec *leaves, int *out0) {
  int nb = 0;
  for (int k = 0; k < ki->nops; k++) {
    cr_assert(ki->ops[k]->op == HLO_PARAMETER);
    bufs[nb++] = to_physical(args[ki->ops[k]->param_number], ki->ops[k]->shape);
  }
  *leaves = (PtrVec){0};
  io_shape_leaves(ki->shape, leaves);
  *out0 = nb;
  cr_assert(nb + leaves->len <= 8, "the emulator takes at most 8 arguments");
  for (int k = 0; k < leaves->len; k++) {
    const Shape *s = leaves->data[k];
    bufs[nb++] = malloc((size_t)(shape_elements(s) > 0 ? shape_elements(s) : 1) *
                        (size_t)et_bytes(s->et));
  }
  poison_outputs(bufs, *out0, leaves);
  return nb;
}

/* The interpreter's result leaves of m on args (*el: caller frees). */
CGT_UNUSED static int eval_leaves(HloModule *m, int np, Literal **args, Literal ***el) {
  EvalOptions eo;
  eval_options_default(&eo);
  Literal *res;
  cr_assert(eval_module(m, np, args, A, &eo, &res, &D, NULL), "eval: %s", D.msg);
  return io_literal_leaves(res, el);
}

/* buf (in s's layout) must agree with want within atol and rtol; what
 * names it in the message. */
CGT_UNUSED static void compare_out(const void *buf, const Shape *s, const Literal *want,
                                   double atol, double rtol, const char *what) {
  Literal *got = literal_new(A, (Shape *)s);
  from_physical(buf, s, got);
  StrBuf why;
  sb_init(&why);
  cr_expect(io_compare(got, want, atol, rtol, &why), "%s: %s", what, why.s);
  sb_free(&why);
}

CGT_UNUSED static bool have_clang(void) {
  return system("command -v clang-19 >/dev/null 2>&1") == 0;
}

/* A code generator for target, its module called name. */
CGT_UNUSED static Codegen *new_codegen(const char *name, CgTarget target) {
  CodegenOptions o;
  codegen_options_default(&o);
  o.target = target;
  Codegen *cg = codegen_new(name, &o, &D);
  cr_assert(cg, "codegen_new: %s", D.msg);
  return cg;
}

/* The number of pointer arguments of ki's kernel before its scratch
 * buffer: the array leaves of its operands and of its result. */
CGT_UNUSED static int kernel_nargs(const HloInstr *ki) {
  PtrVec v = {0};
  for (int k = 0; k < ki->nops; k++)
    io_shape_leaves(ki->ops[k]->shape, &v);
  io_shape_leaves(ki->shape, &v);
  int n = v.len;
  vec_free(&v);
  return n;
}

/* bufs (nb pointers) with a scratch buffer of ld->temp_bytes appended
 * when the kernel asks for one (filled with garbage); free with free(). */
CGT_UNUSED static void **with_temp(void **bufs, int nb, const LaunchDims *ld, void **temp) {
  void **a = calloc((size_t)nb + 1, sizeof *a);
  memcpy(a, bufs, (size_t)nb * sizeof *a);
  *temp = NULL;
  if (ld->temp_bytes > 0) {
    *temp = malloc((size_t)ld->temp_bytes);
    memset(*temp, 0x5A, (size_t)ld->temp_bytes);
    a[nb] = *temp;
  }
  return a;
}

/* Builds the host kernel of ki into Dir/k.so, loads it and runs it on bufs
 * (the operands' buffers, then the outputs'; a scratch buffer is added
 * when the kernel asks for one). */
CGT_UNUSED static void run_host(const char *name, const HloInstr *ki, void **bufs) {
  Codegen *cg = new_codegen(name, CG_TARGET_HOST);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, ki, "kern", &ld, &D), "host kernel: %s", D.msg);
  char so[128];
  snprintf(so, sizeof so, "%s/k.so", Dir);
  cr_assert(codegen_host_so(cg, so, &D), "host so: %s", D.msg);
  codegen_free(cg);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  cr_assert(h, "dlopen: %s", dlerror());
  void (*fn)(void **, int64_t, int64_t) =
      (void (*)(void **, int64_t, int64_t))dlsym(h, "kern");
  cr_assert(fn, "dlsym kern");
  void *temp;
  void **args = with_temp(bufs, kernel_nargs(ki), &ld, &temp);
  /* the work units one at a time, last first (each unit is independent) */
  for (int64_t u = ld.grid[0]; u-- > 0;)
    fn(args, u, u + 1);
  free(args);
  free(temp);
  dlclose(h);
}

/* ptx written to Dir/k.ptx must pass ptxas -arch=sm_90. */
CGT_UNUSED static void run_ptxas(const char *ptx) {
  char path[128], cmd[512];
  snprintf(path, sizeof path, "%s/k.ptx", Dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs(ptx, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, PTXAS " -arch=sm_90 %s -o %s/k.cubin", path, Dir);
  cr_assert(system(cmd) == 0, "ptxas rejected the PTX:\n%s", ptx);
}

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
  "float __nv_logf(float x) { return logf(x); }\n"
  "double __nv_log(double x) { return log(x); }\n"
  "float __nv_cosf(float x) { return cosf(x); }\n"
  "double __nv_cos(double x) { return cos(x); }\n"
  "float __nv_sinf(float x) { return sinf(x); }\n"
  "double __nv_sin(double x) { return sin(x); }\n"
  "float __nv_sqrtf(float x) { return sqrtf(x); }\n"
  "double __nv_sqrt(double x) { return sqrt(x); }\n"
  "float __nv_tanhf(float x) { return tanhf(x); }\n"
  "double __nv_tanh(double x) { return tanh(x); }\n"
  "float __nv_erff(float x) { return erff(x); }\n"
  "double __nv_erf(double x) { return erf(x); }\n"
  "float __nv_atan2f(float y, float x) { return atan2f(y, x); }\n"
  "double __nv_atan2(double y, double x) { return atan2(y, x); }\n"
  "float __nv_hypotf(float x, float y) { return hypotf(x, y); }\n"
  "double __nv_hypot(double x, double y) { return hypot(x, y); }\n"
  /* float to bfloat16 (round to nearest even, NaN stays NaN), which
   * clang calls for fptrunc to bfloat and the C runtime here lacks */
  "__bf16 __truncsfbf2(float f) {\n"
  "  uint32_t u; memcpy(&u, &f, 4); uint16_t h;\n"
  "  if ((u & 0x7fffffffu) > 0x7f800000u) h = (uint16_t)((u >> 16) | 0x40);\n"
  "  else h = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);\n"
  "  __bf16 r; memcpy(&r, &h, 2); return r; }\n"
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
CGT_UNUSED static bool emu_run(const char *ir, const char *dir, void **args, int nargs,
                               const LaunchDims *ld, char *why, size_t nwhy) {
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

/* ki's NVPTX kernel (module name) has a launch within bounds, and its PTX
 * passes ptxas (when installed). */
CGT_UNUSED static void check_ptx_launch(const char *name, const HloInstr *ki) {
  if (access(PTXAS, X_OK) != 0) return;
  Codegen *cg = new_codegen(name, CG_TARGET_NVPTX);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, ki, "kern", &ld, &D), "nvptx kernel: %s", D.msg);
  cr_assert(ld.block[0] * ld.block[1] * ld.block[2] <= 1024 && ld.block[0] > 0 &&
            ld.grid[0] > 0 && ld.grid[1] > 0 && ld.grid[2] > 0, "launch dims");
  StrBuf ptx;
  sb_init(&ptx);
  cr_assert(codegen_ptx(cg, &ptx, &D), "ptx: %s", D.msg);
  codegen_free(cg);
  run_ptxas(ptx.s);
  sb_free(&ptx);
}

/* Runs the NVPTX kernel of ki under the emulator on bufs (nb pointers, laid
 * out as for the host kernel; a scratch buffer is added when the kernel
 * asks for one); its launch dimensions in *ld. */
CGT_UNUSED static void run_emulated_kernel(const char *name, const HloInstr *ki, void **bufs,
                                           int nb, LaunchDims *ld) {
  Codegen *cg = new_codegen(name, CG_TARGET_NVPTX);
  cr_assert(codegen_kernel(cg, ki, "kern", ld, &D), "nvptx kernel: %s", D.msg);
  StrBuf ir;
  sb_init(&ir);
  cr_assert(codegen_llvm_ir(cg, false, &ir, &D), "ir: %s", D.msg);
  codegen_free(cg);
  char why[1024];
  void *temp;
  void **args = with_temp(bufs, nb, ld, &temp);
  bool ran = emu_run(ir.s, Dir, args, nb + (temp ? 1 : 0), ld, why, sizeof why);
  free(args);
  free(temp);
  sb_free(&ir);
  cr_assert(ran, "emulator: %s", why);
}

/* An error (not a wrong kernel) naming `what` at a source position, on the
 * host target. */
CGT_UNUSED static void check_refused(const char *hlo, const char *what) {
  HloModule *m = parse(hlo);
  Codegen *cg = new_codegen("refused_test", CG_TARGET_HOST);
  LaunchDims ld;
  cr_assert(!codegen_kernel(cg, m->entry->root, "kern", &ld, &D), "accepted");
  cr_assert(D.msg && strstr(D.msg, what), "message: %s", D.msg ? D.msg : "(none)");
  cr_assert(D.loc.line > 0, "no location");
  codegen_free(cg);
}

#endif
