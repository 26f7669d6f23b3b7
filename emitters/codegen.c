/*
 * codegen.c - the Codegen object (LLVM context, module, target machine for
 * NVPTX or the host), kernel entry with codegen.h's parameter convention,
 * dispatch of a kernel to its emitter by hero, and the module's outputs:
 * LLVM IR text, PTX (libdevice linked, optimized) and a host shared object.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Support.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "../lib/eval/eval.h"
#include "../lib/runtime/host_cpu.h"
#include "cg_internal.h"
#include "host_link.h"

extern char **environ;

void codegen_options_default(CodegenOptions *o) {
  memset(o, 0, sizeof *o);
  o->target = CG_TARGET_NVPTX;
  o->opt_level = 2;
  o->fast_math = true;
  o->host_routines = true;
}

static const char *const known_archs[] = {
  "sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50", "sm_52",
  "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80",
  "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a",
};

static bool arch_known(const char *a) {
  for (size_t k = 0; k < ARRAY_LEN(known_archs); k++)
    if (strcmp(a, known_archs[k]) == 0)
      return true;
  return false;
}

/*
 * LLVM's loop strength reduction, a pass of x86 code generation, took 10-
 * 35% of a host module's compile (callgrind: 34% of softmax's, 31% of a
 * transformer block's, 17% of a sort's) for no run time the benchmark
 * measures (bench/xla-compare's 23 programs, one thread: within the noise,
 * the elementwise and transposing kernels a little faster without it).
 * LLVM-C sets it only as a process-wide option (-disable-lsr), so the first
 * host target machine of a process turns it off for the rest of it.  xhloc
 * compiles for one target per run; a process that makes GPU modules after
 * host ones (the unit tests) builds their PTX without it too, which ptxas
 * optimizes again anyway.
 */
static void host_llvm_options(void) {
  static bool done;
  if (done)
    return;
  const char *argv[] = {"xhloc", "-disable-lsr"};
  LLVMParseCommandLineOptions(2, argv, NULL);
  done = true;
}

static LLVMTargetMachineRef make_tm(Codegen *cg, Diag *d) {
  const char *triple;
  char *def_triple = NULL;
  const char *cpu, *features;
  char *host_name = NULL, *host_feats = NULL;
  LLVMRelocMode reloc;
  if (cg->is_gpu) {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    triple = "nvptx64-nvidia-cuda";
    cpu = cg->arch;
    features = "+ptx80";
    reloc = LLVMRelocDefault;
  } else {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    host_llvm_options();
    def_triple = LLVMGetDefaultTargetTriple();
    triple = def_triple;
    reloc = LLVMRelocPIC;
    const char *want = cg->opts.host_cpu ? cg->opts.host_cpu : "native";
    StrBuf list;
    sb_init(&list);
    if (strcmp(want, "native") == 0) {
      host_name = LLVMGetHostCPUName();
      host_feats = LLVMGetHostCPUFeatures();
      cpu = host_name;
      features = host_feats;
      host_cpu_checkable(features, &list);
    } else {
      const char *level = host_cpu_level_features(want);
      if (!level) {
        sb_free(&list);
        LLVMDisposeMessage(def_triple);
        diag_error(d, (Loc){0}, "codegen: unknown host CPU '%s' (expected native, "
                   "x86-64, x86-64-v2, x86-64-v3 or x86-64-v4)", want);
        return NULL;
      }
      cpu = want;
      features = "";
      sb_puts(&list, level);
    }
    free(cg->arch);
    cg->arch = xstrdup(cpu);
    free(cg->host_features);
    cg->host_features = sb_detach(&list);
  }
  LLVMTargetRef t;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(triple, &t, &err)) {
    diag_error(d, (Loc){0}, "codegen: no LLVM target for %s: %s", triple,
               err ? err : "?");
    LLVMDisposeMessage(err);
    LLVMDisposeMessage(def_triple);
    LLVMDisposeMessage(host_name);
    LLVMDisposeMessage(host_feats);
    return NULL;
  }
  LLVMCodeGenOptLevel ol = cg->opts.opt_level <= 0 ? LLVMCodeGenLevelNone
                         : cg->opts.opt_level == 1 ? LLVMCodeGenLevelLess
                         : cg->opts.opt_level == 2 ? LLVMCodeGenLevelDefault
                                                   : LLVMCodeGenLevelAggressive;
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, triple, cpu, features,
                                                    ol, reloc,
                                                    LLVMCodeModelDefault);
  if (!tm)
    diag_error(d, (Loc){0}, "codegen: cannot create a target machine for %s",
               triple);
  else
    LLVMSetTarget(cg->mod, triple);
  LLVMDisposeMessage(def_triple);
  LLVMDisposeMessage(host_name);
  LLVMDisposeMessage(host_feats);
  return tm;
}

Codegen *codegen_new(const char *module_name, const CodegenOptions *o,
                     Diag *d) {
  CodegenOptions def;
  if (!o) {
    codegen_options_default(&def);
    o = &def;
  }
  double t0 = clock_seconds();
  Codegen *cg = xcalloc(1, sizeof *cg);
  cg->opts = *o;
  cg->is_gpu = o->target == CG_TARGET_NVPTX;
  if (cg->is_gpu) {
    cg->arch = xstrdup(o->arch ? o->arch : "sm_90");
    if (!arch_known(cg->arch)) {
      diag_error(d, (Loc){0}, "codegen: unknown GPU architecture '%s'", cg->arch);
      codegen_free(cg);
      return NULL;
    }
    if (o->libdevice) {
      cg->libdevice_path = xstrdup(o->libdevice);
    } else {
      const char *home = getenv("CUDA_HOME");
      StrBuf b;
      sb_init(&b);
      sb_printf(&b, "%s/nvvm/libdevice/libdevice.10.bc",
                home && *home ? home : "/usr/local/cuda");
      cg->libdevice_path = sb_detach(&b);
    }
    if (access(cg->libdevice_path, R_OK) != 0) {
      diag_error(d, (Loc){0}, "codegen: libdevice not found at %s (%s)",
                 cg->libdevice_path,
                 o->libdevice ? "check --libdevice"
                              : "set CUDA_HOME or give --libdevice=PATH");
      codegen_free(cg);
      return NULL;
    }
  } else {
    cg->arch = xstrdup("x86-64");
  }
  cg->in_place_operand = -1;
  cg->ctx = LLVMContextCreate();
  cg->mod = LLVMModuleCreateWithNameInContext(module_name ? module_name : "module",
                                              cg->ctx);
  cg->b = LLVMCreateBuilderInContext(cg->ctx);
  cg->aff = aff_ctx_new();
  cg->tm = make_tm(cg, d);
  if (!cg->tm) {
    codegen_free(cg);
    return NULL;
  }
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(cg->tm);
  LLVMSetModuleDataLayout(cg->mod, td);
  LLVMDisposeTargetData(td);
  phase_since(o->times, "llvm target machine", t0);
  return cg;
}

void codegen_free(Codegen *cg) {
  if (!cg)
    return;
  if (cg->b)
    LLVMDisposeBuilder(cg->b);
  if (cg->mod)
    LLVMDisposeModule(cg->mod);
  if (cg->tm)
    LLVMDisposeTargetMachine(cg->tm);
  if (cg->ctx)
    LLVMContextDispose(cg->ctx);
  if (cg->aff)
    aff_ctx_free(cg->aff);
  hashmap_free(&cg->vector_fns);
  free(cg->arch);
  free(cg->host_features);
  free(cg->libdevice_path);
  free(cg);
}

const char *codegen_host_cpu(const Codegen *cg, const char **features) {
  if (cg->is_gpu)
    return NULL;
  if (features)
    *features = cg->host_features;
  return cg->arch;
}

/*
 * Kernel entry
 */
const HloComp *cg_fusion_comp(const HloInstr *instr) {
  if (instr->op == HLO_FUSION && instr->ncalled >= 1)
    return instr->called[0];
  return NULL;
}

static bool leaf_shapes(const HloInstr *instr, const Shape *s, PtrVec *v,
                        Diag *d) {
  int start = v->len;
  io_shape_leaves(s, v);
  for (int k = start; k < v->len; k++) {
    const Shape *l = v->data[k];
    if (!shape_is_array(l) || !cg_et_supported(l->et)) {
      char *t = shape_to_string(l, false);
      diag_error(d, instr->loc, "codegen: unsupported kernel %s of type %s in '%s'",
                 k < start ? "operand" : "value", t, hlo_op_name(instr->op));
      free(t);
      return false;
    }
  }
  return true;
}

static void annotate_kernel(Codegen *cg, LLVMValueRef fn) {
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  LLVMMetadataRef md[3] = {
    LLVMValueAsMetadata(fn),
    LLVMMDStringInContext2(cg->ctx, "kernel", 6),
    LLVMValueAsMetadata(LLVMConstInt(cg_i32(cg), 1, false)),
  };
  LLVMValueRef node = LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, md, 3));
  LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations", node);
}

void cg_kernel_max_threads(CgKernel *k, unsigned threads) {
  Codegen *cg = k->cg;
  if (!cg->is_gpu)
    return;
  LLVMMetadataRef md[3] = {
    LLVMValueAsMetadata(k->fn),
    LLVMMDStringInContext2(cg->ctx, "maxntidx", 8),
    LLVMValueAsMetadata(LLVMConstInt(cg_i32(cg), threads, false)),
  };
  LLVMValueRef node = LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, md, 3));
  LLVMAddNamedMetadataOperand(cg->mod, "nvvm.annotations", node);
}

static bool kernel_begin(Codegen *cg, const HloInstr *instr, const char *name,
                         bool temp, CgKernel *k, Diag *d) {
  memset(k, 0, sizeof *k);
  k->cg = cg;
  k->instr = instr;
  if (LLVMGetNamedFunction(cg->mod, name))
    return diag_error(d, instr->loc, "codegen: kernel '%s' emitted twice", name);
  PtrVec leaves = {0};
  for (int j = 0; j < instr->nops; j++)
    if (!leaf_shapes(instr, instr->ops[j]->shape, &leaves, d)) {
      vec_free(&leaves);
      return false;
    }
  int nin = leaves.len;
  if (!leaf_shapes(instr, instr->shape, &leaves, d)) {
    vec_free(&leaves);
    return false;
  }
  k->nin = nin;
  k->nout = leaves.len - nin;
  int n = leaves.len;
  k->in = xcalloc((size_t)n + 1, sizeof *k->in);
  k->out = k->in + nin;
  k->in_shapes = xcalloc((size_t)n + 1, sizeof *k->in_shapes);
  k->out_shapes = k->in_shapes + nin;
  for (int j = 0; j < n; j++)
    k->in_shapes[j] = leaves.data[j];
  vec_free(&leaves);
  int nleaf = n;
  if (temp)
    n++;                          /* the scratch pointer, last */
  LLVMTypeRef ptr = cg_ptr_type(cg);
  LLVMTypeRef vt = LLVMVoidTypeInContext(cg->ctx);
  if (cg->is_gpu) {
    LLVMTypeRef *pt = xcalloc((size_t)n + 1, sizeof *pt);
    for (int j = 0; j < n; j++)
      pt[j] = ptr;
    k->fn = LLVMAddFunction(cg->mod, name, LLVMFunctionType(vt, pt, (unsigned)n, false));
    free(pt);
    annotate_kernel(cg, k->fn);
    /* buffers are device allocations or 64-byte aligned slices of them */
    unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
    for (int j = 0; j < n; j++)
      LLVMAddAttributeAtIndex(k->fn, (LLVMAttributeIndex)(j + 1),
                              LLVMCreateEnumAttribute(cg->ctx, align, 16));
    LLVMPositionBuilderAtEnd(cg->b, LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "entry"));
    for (int j = 0; j < nleaf; j++)
      k->in[j] = LLVMGetParam(k->fn, (unsigned)j);
  } else {
    /* the exported `void name(void **args, i64 lo, i64 hi)` unpacks args
     * and calls the internal body, whose pointer parameters are noalias:
     * operands are only read, and a result shares no bytes with an operand
     * unless buffer assignment wrote it over one in place
     * (args_may_alias; then none is noalias) (LLVM keeps that knowledge
     * as scoped alias metadata when it inlines the body) */
    LLVMTypeRef p0 = LLVMPointerTypeInContext(cg->ctx, 0);
    LLVMTypeRef i64 = cg_i64(cg);
    LLVMTypeRef wt[3] = {p0, i64, i64};
    LLVMValueRef wrap = LLVMAddFunction(cg->mod, name, LLVMFunctionType(vt, wt, 3, false));
    LLVMTypeRef *pt = xcalloc((size_t)n + 2, sizeof *pt);
    for (int j = 0; j < n; j++)
      pt[j] = p0;
    pt[n] = pt[n + 1] = i64;
    StrBuf body;
    sb_init(&body);
    sb_printf(&body, "%s.body", name);
    k->fn = LLVMAddFunction(cg->mod, body.s, LLVMFunctionType(vt, pt, (unsigned)n + 2, false));
    sb_free(&body);
    free(pt);
    LLVMSetLinkage(k->fn, LLVMInternalLinkage);
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    for (int j = 0; j < n && !cg->args_may_alias; j++)
      LLVMAddAttributeAtIndex(k->fn, (LLVMAttributeIndex)(j + 1),
                              LLVMCreateEnumAttribute(cg->ctx, noalias, 0));
    unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
    LLVMAddAttributeAtIndex(k->fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(cg->ctx, always, 0));
    LLVMPositionBuilderAtEnd(cg->b, LLVMAppendBasicBlockInContext(cg->ctx, wrap, "entry"));
    LLVMValueRef args = LLVMGetParam(wrap, 0);
    LLVMValueRef *cargs = xcalloc((size_t)n + 2, sizeof *cargs);
    for (int j = 0; j < n; j++) {
      LLVMValueRef off = cg_const_i64(cg, j);
      LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, p0, args, &off, 1, "");
      cargs[j] = LLVMBuildLoad2(cg->b, p0, p, "arg");
    }
    cargs[n] = LLVMGetParam(wrap, 1);
    cargs[n + 1] = LLVMGetParam(wrap, 2);
    LLVMBuildCall2(cg->b, LLVMGlobalGetValueType(k->fn), k->fn, cargs, (unsigned)n + 2, "");
    LLVMBuildRetVoid(cg->b);
    free(cargs);
    LLVMPositionBuilderAtEnd(cg->b, LLVMAppendBasicBlockInContext(cg->ctx, k->fn, "entry"));
    for (int j = 0; j < nleaf; j++)
      k->in[j] = LLVMGetParam(k->fn, (unsigned)j);
    k->lo = LLVMGetParam(k->fn, (unsigned)n);
    k->hi = LLVMGetParam(k->fn, (unsigned)n + 1);
  }
  if (temp)
    k->temp = LLVMGetParam(k->fn, (unsigned)nleaf);
  return true;
}

bool cg_kernel_begin(Codegen *cg, const HloInstr *instr, const char *name,
                     CgKernel *k, Diag *d) {
  return kernel_begin(cg, instr, name, false, k, d);
}

bool cg_kernel_begin_temp(Codegen *cg, const HloInstr *instr, const char *name,
                          CgKernel *k, Diag *d) {
  return kernel_begin(cg, instr, name, true, k, d);
}

void cg_host_range(CgKernel *k, int64_t total, int64_t cost, LaunchDims *ld,
                   LLVMValueRef *start, LLVMValueRef *end) {
  Codegen *cg = k->cg;
  LLVMBuilderRef b = cg->b;
  if (cost < 1)
    cost = 1;
  int64_t per = total > 0 ? total : 1;   /* items per unit */
  if (total > 0 && total > INT64_MAX / cost)
    per = (CG_HOST_GRAIN + cost - 1) / cost;
  else if (total * cost > 2 * (int64_t)CG_HOST_GRAIN)
    per = (CG_HOST_GRAIN + cost - 1) / cost;
  int64_t units = total > 0 ? (total + per - 1) / per : 1;
  if (units > INT32_MAX) {
    per = (total + INT32_MAX - 1) / INT32_MAX;
    units = (total + per - 1) / per;
  }
  ld->grid[0] = (uint32_t)units;
  ld->rows = total;
  ld->rows_per_unit = per;
  LLVMValueRef p = cg_const_i64(cg, per), n = cg_const_i64(cg, total);
  *start = LLVMBuildMul(b, k->lo, p, "start");
  LLVMValueRef e = LLVMBuildMul(b, k->hi, p, "");
  *end = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, e, n, ""), e, n, "end");
}

void cg_kernel_end(CgKernel *k) {
  LLVMBuildRetVoid(k->cg->b);
  if (!k->scalar) {
    size_t n;
    k->cg->nvector++;
    hashmap_put(&k->cg->vector_fns, LLVMGetValueName2(k->fn, &n), k->fn);
  }
  free(k->in);
  free(k->in_shapes);
  k->in = k->out = NULL;
  k->in_shapes = k->out_shapes = NULL;
}

/*
 * Dispatch
 */
static const HloInstr *through_bitcast(const HloInstr *i) {
  while (i->op == HLO_BITCAST && i->nops == 1)
    i = i->ops[0];
  return i;
}

/* Through bitcasts and get-tuple-elements of a (variadic) reduce. */
static const HloInstr *through_bitcast_gte(const HloInstr *i) {
  i = through_bitcast(i);
  if (i->op == HLO_GET_TUPLE_ELEMENT && i->nops == 1 && i->ops[0]->op == HLO_REDUCE)
    return i->ops[0];
  return i;
}

/* The fusion's hero: its root through bitcasts (a reduce or dot in a
 * tuple root).  A root computed from reduces of its own rows (a softmax,
 * a layer norm) is a normalization, which codegen_kernel asks
 * cg_is_norm_fusion about on the GPU. */
static const HloInstr *find_hero(const HloInstr *instr) {
  const HloComp *c = cg_fusion_comp(instr);
  if (!c)
    return instr;
  const HloInstr *r = through_bitcast_gte(c->root);
  if (r->op == HLO_TUPLE) {
    for (int k = 0; k < r->nops; k++) {
      const HloInstr *h = through_bitcast_gte(r->ops[k]);
      if (h->op == HLO_REDUCE || h->op == HLO_DOT)
        return h;
    }
  }
  return r;
}

bool codegen_host_routines(const Codegen *cg) {
  return !cg->is_gpu && cg->opts.host_routines;
}

/* Deletes function `name`, which a vector kernel no longer counts. */
static void drop_fn(Codegen *cg, const char *name) {
  LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
  if (!fn)
    return;
  if (hashmap_delete(&cg->vector_fns, name))
    cg->nvector--;
  LLVMDeleteFunction(fn);
}

void codegen_drop_kernel(Codegen *cg, const char *name) {
  drop_fn(cg, name);
  StrBuf body;
  sb_init(&body);
  sb_printf(&body, "%s.body", name);
  drop_fn(cg, body.s);
  sb_free(&body);
}

bool codegen_custom_call_kernel(const HloInstr *i) {
  return i->op == HLO_CUSTOM_CALL && (cg_is_topk(i) || cg_is_linalg(i));
}

void codegen_set_args_may_alias(Codegen *cg, bool may_alias) {
  cg->args_may_alias = may_alias;
}

void codegen_set_in_place_operand(Codegen *cg, int operand) {
  cg->in_place_operand = operand;
}

bool codegen_kernel(Codegen *cg, const HloInstr *i, const char *name,
                    LaunchDims *ld, Diag *d) {
  if (cg->optimized)
    return diag_error(d, i->loc, "codegen: module already finalized; cannot add kernel '%s'",
                      name);
  if (i->op == HLO_FUSION && (i->ncalled < 1 || !i->called[0] || !i->called[0]->root))
    return diag_error(d, i->loc, "codegen: fusion '%s' without a computation", i->name);
  memset(ld, 0, sizeof *ld);
  for (int k = 0; k < 3; k++)
    ld->grid[k] = ld->block[k] = 1;
  const HloInstr *hero = find_hero(i);
  const HloInstr *tiled = NULL;   /* the transpose hero, GPU only */
  const HloInstr *dus = cg_dus_in_place(i, cg->in_place_operand);
  RowNorm rn;
  bool norm = false;              /* a row normalization, GPU only */
  bool ok;
  if (dus)
    ok = cg_emit_dus_kernel(cg, i, dus, name, ld, d);
  else if (cg->is_gpu && (norm = cg_is_norm_fusion(cg, i, &rn)))
    ok = cg_emit_norm_kernel(cg, i, &rn, name, ld, d);
  else if (hero->op == HLO_REDUCE)
    ok = cg_emit_reduction_kernel(cg, i, hero, name, ld, d);
  else if (hero->op == HLO_DOT)
    ok = cg_emit_dot_kernel(cg, i, hero, name, ld, d);
  else if (hero->op == HLO_CONVOLUTION)
    ok = cg_emit_conv_kernel(cg, i, hero, name, ld, d);
  else if (hero->op == HLO_SCATTER)
    ok = cg_emit_scatter_kernel(cg, i, hero, name, ld, d);
  else if (hero->op == HLO_SORT)
    ok = cg_emit_sort_kernel(cg, i, hero, name, ld, d);
  else if (cg_is_topk(hero))
    ok = cg_emit_topk_kernel(cg, i, hero, name, ld, d);
  else if (cg_is_linalg(hero))
    ok = cg_emit_linalg_kernel(cg, i, hero, name, ld, d);
  else if (hero->op == HLO_FFT)
    ok = cg_emit_fft_kernel(cg, i, hero, name, ld, d);
  else if (hero->op == HLO_RNG_BIT_GENERATOR)
    ok = cg_emit_rng_kernel(cg, i, hero, name, ld, d);
  else if (i->op == HLO_RNG_GET_AND_UPDATE_STATE)
    ok = cg_emit_rng_state_kernel(cg, i, name, ld, d);
  else if (cg->is_gpu && (tiled = cg_transpose_hero(i)) != NULL)
    ok = cg_emit_transpose_kernel(cg, i, name, ld, d);
  else
    ok = cg_emit_loop_kernel(cg, i, name, ld, d);
  if (!ok)
    codegen_drop_kernel(cg, name);
  if (!ok && (hero->op == HLO_REDUCE || hero->op == HLO_DOT || tiled || dus ||
              norm)) {
    /* a shape the hero's emitter does not handle (an epilogue, several
     * outputs, rows too long): the loop kernel computes reduces
     * elementally (and a dynamic-update-slice out of place); when it
     * cannot either, the hero emitter's error stands */
    Diag d2 = {0};
    d2.warn_out = d->warn_out;
    memset(ld, 0, sizeof *ld);
    for (int k = 0; k < 3; k++)
      ld->grid[k] = ld->block[k] = 1;
    ok = cg_emit_loop_kernel(cg, i, name, ld, &d2);
    if (ok)
      diag_clear(d);
    else
      codegen_drop_kernel(cg, name);
    diag_clear(&d2);
  }
  return ok;
}

/*
 * Finalizing: libdevice, optimization
 */
static bool uses_libdevice(Codegen *cg) {
  for (LLVMValueRef f = LLVMGetFirstFunction(cg->mod); f; f = LLVMGetNextFunction(f)) {
    size_t n;
    const char *nm = LLVMGetValueName2(f, &n);
    if (LLVMIsDeclaration(f) && n > 5 && strncmp(nm, "__nv_", 5) == 0)
      return true;
  }
  return false;
}

static bool link_libdevice(Codegen *cg, Diag *d) {
  LLVMMemoryBufferRef buf;
  char *err = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(cg->libdevice_path, &buf, &err)) {
    diag_error(d, (Loc){0}, "codegen: cannot read %s: %s", cg->libdevice_path,
               err ? err : "?");
    LLVMDisposeMessage(err);
    return false;
  }
  /* Lazily: only the bodies the linker copies are read.  libdevice has
   * ~350 functions; linking all of them made the O2 pipeline run its early
   * function passes over every one (~200 ms a module). */
  LLVMModuleRef ld;
  if (LLVMGetBitcodeModuleInContext2(cg->ctx, buf, &ld)) {
    LLVMDisposeMemoryBuffer(buf);   /* not taken on failure */
    return diag_error(d, (Loc){0}, "codegen: %s is not valid LLVM bitcode",
                      cg->libdevice_path);
  }
  /* linkonce_odr definitions are linked only when referenced: the module's
   * __nv_ declarations and, transitively, what their bodies call */
  for (LLVMValueRef f = LLVMGetFirstFunction(ld); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f) && LLVMGetLinkage(f) == LLVMExternalLinkage)
      LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
  for (LLVMValueRef g = LLVMGetFirstGlobal(ld); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g) && LLVMGetLinkage(g) == LLVMExternalLinkage)
      LLVMSetLinkage(g, LLVMLinkOnceODRLinkage);
  /* our functions are the ones defined before linking */
  PtrVec ours = {0};
  for (LLVMValueRef f = LLVMGetFirstFunction(cg->mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      vec_push(&ours, f);
  LLVMSetTarget(ld, "nvptx64-nvidia-cuda");
  LLVMSetModuleDataLayout(ld, LLVMGetModuleDataLayout(cg->mod));
  if (LLVMLinkModules2(cg->mod, ld)) {
    vec_free(&ours);
    return diag_error(d, (Loc){0}, "codegen: linking libdevice failed");
  }
  for (LLVMValueRef f = LLVMGetFirstFunction(cg->mod); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f))
      continue;
    bool mine = false;
    for (int k = 0; k < ours.len && !mine; k++)
      mine = ours.data[k] == f;
    if (!mine)
      LLVMSetLinkage(f, LLVMInternalLinkage);
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(cg->mod); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g) && (LLVMGetLinkage(g) == LLVMExternalLinkage ||
                                  LLVMGetLinkage(g) == LLVMLinkOnceODRLinkage))
      LLVMSetLinkage(g, LLVMInternalLinkage);
  vec_free(&ours);
  return true;
}

/*
 * The GPU pipeline at O1/O2.  Kernels are small, call nothing but libdevice
 * (always_inline) and are optimized again by ptxas, so the whole default<O2>
 * pipeline (the CGSCC inliner walk, SCEV-heavy loop passes run per function
 * over and over) cost ~6 ms a kernel for PTX of the same size.  This keeps
 * what matters for them: inlining libdevice, NVVMReflect, SROA, CSE,
 * InstCombine, LICM, unrolling of the small constant-trip loops of the
 * reduction and dot emitters, and GVN; about 5x faster on big modules.
 * Used at O1 only for now: at O2 the f32 loop kernel's 4-wide accesses are
 * not yet merged into ld.global.v4 by it (test_codegen_transpose's
 * loop_large_vectorized).  O0, O2, O3 run LLVM's defaults on the GPU.
 */
static const char gpu_pipeline[] =
  "always-inline,globaldce,"
  "function(nvvm-reflect,sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,"
  "simplifycfg,"
  "loop-mssa(licm),loop(loop-rotate),loop-unroll<O2>,instcombine<no-verify-fixpoint>,gvn,"
  "instcombine<no-verify-fixpoint>,"
  "simplifycfg,infer-alignment,load-store-vectorizer)";

/*
 * The host pipeline at O1/O2.  A host module is thousands of small
 * functions (a kernel's wrapper and body) whose only calls are libm's, and
 * what they need is the body inlined into the wrapper (its noalias
 * parameters become alias scopes), SROA, CSE, InstCombine, LICM, the full
 * unrolling of small constant-trip loops (a reduce-window's window: then
 * the loop around it vectorizes, 10x on a scan's blocks) and the loop
 * vectorizer on the innermost loops the emitters shape for it (the row
 * reductions' reassociable reducers included), then the full unrolling of
 * the short vector loops it leaves and SROA again: the column reductions'
 * tile of accumulators, an alloca indexed by the loops until then, becomes
 * vector registers (the reduction loop then loads and adds, with no store
 * and reload of the tile per row, and instruction selection has a third of
 * the memory operations to order).  The bodies are alwaysinline and the
 * pipeline starts with always-inline, so that the function passes run
 * once per kernel, after inlining: with the CGSCC inliner ("inline,
 * function(...)" nests the function passes in its walk) they ran on every
 * body and then again on its wrapper (three times on a chain's members),
 * 10-35% of the optimization time.  Before all that, mergefunc: kernels of
 * the same computation on the same shapes (a training step's forward and
 * backward passes have several) are optimized and compiled once, the
 * others becoming a tail call to it (4 of mlp_train_step's 15, 15% of its
 * compile).  default<O2> spends about 3x as long on a training step for no
 * measured gain; O3 still runs it.
 */
static const char host_pipeline[] =
  "mergefunc,always-inline,"
  "function(sroa,early-cse<memssa>,simplifycfg,instcombine<no-verify-fixpoint>,"
  "loop-mssa(licm),loop(loop-rotate,loop-unroll-full),"
  "instcombine<no-verify-fixpoint>,simplifycfg,loop-vectorize,"
  "instcombine<no-verify-fixpoint>,simplifycfg,loop(loop-unroll-full),sroa,"
  "instcombine<no-verify-fixpoint>,simplifycfg)";

/*
 * The host pipeline of a module whose kernels are all CgKernel.scalar (a
 * sort, a top-k: selection and merge loops, short copies): the same
 * without the full unrolling, the loop vectorizer and the clean-up after
 * it, which find nothing to do in such kernels (the same machine code for
 * the benchmark's sort and top-k and e2e's) and cost half the
 * optimization time.
 */
static const char host_scalar_pipeline[] =
  "always-inline,"
  "function(sroa,early-cse<memssa>,simplifycfg,instcombine<no-verify-fixpoint>,"
  "loop-mssa(licm),loop(loop-rotate),instcombine<no-verify-fixpoint>,simplifycfg)";

static bool finalize(Codegen *cg, Diag *d) {
  if (cg->optimized)
    return true;
  double t0 = clock_seconds();
  char *err = NULL;
  if (LLVMVerifyModule(cg->mod, LLVMReturnStatusAction, &err)) {
    diag_error(d, (Loc){0}, "codegen: internal error: invalid LLVM module: %s",
               err ? err : "?");
    LLVMDisposeMessage(err);
    return false;
  }
  LLVMDisposeMessage(err);
  t0 = phase_since(cg->opts.times, "llvm verify", t0);
  if (cg->is_gpu) {
    LLVMAddModuleFlag(cg->mod, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                      LLVMValueAsMetadata(LLVMConstInt(cg_i32(cg), 0, false)));
    if (uses_libdevice(cg) && !link_libdevice(cg, d))
      return false;
    t0 = phase_since(cg->opts.times, "link libdevice", t0);
  }
  char passes[32];
  int ol = cg->opts.opt_level < 0 ? 0 : cg->opts.opt_level > 3 ? 3 : cg->opts.opt_level;
  snprintf(passes, sizeof passes, "default<O%d>", ol);
  const char *pipeline = cg->is_gpu && ol == 1 ? gpu_pipeline
                         : cg->is_gpu || ol == 0 || ol == 3 ? passes
                         : cg->nvector > 0 ? host_pipeline
                                           : host_scalar_pipeline;
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(cg->mod, pipeline, cg->tm, po);
  LLVMDisposePassBuilderOptions(po);
  phase_since(cg->opts.times, "llvm optimization", t0);
  if (e) {
    char *m = LLVMGetErrorMessage(e);
    diag_error(d, (Loc){0}, "codegen: optimization failed: %s", m);
    LLVMDisposeErrorMessage(m);
    return false;
  }
  cg->optimized = true;
  return true;
}

bool codegen_llvm_ir(Codegen *cg, bool optimized, StrBuf *out, Diag *d) {
  if (optimized && !finalize(cg, d))
    return false;
  char *s = LLVMPrintModuleToString(cg->mod);
  sb_puts(out, s);
  LLVMDisposeMessage(s);
  return true;
}

static bool emit_buffer(Codegen *cg, LLVMCodeGenFileType ft,
                        LLVMMemoryBufferRef *buf, Diag *d) {
  char *err = NULL;
  double t0 = clock_seconds();
  LLVMBool failed = LLVMTargetMachineEmitToMemoryBuffer(cg->tm, cg->mod, ft, &err, buf);
  phase_since(cg->opts.times, "llvm code generation", t0);
  if (failed) {
    diag_error(d, (Loc){0}, "codegen: code emission failed: %s", err ? err : "?");
    LLVMDisposeMessage(err);
    return false;
  }
  return true;
}

bool codegen_ptx(Codegen *cg, StrBuf *out, Diag *d) {
  if (!cg->is_gpu)
    return diag_error(d, (Loc){0}, "codegen: PTX asked of a host module");
  if (!finalize(cg, d))
    return false;
  LLVMMemoryBufferRef buf;
  if (!emit_buffer(cg, LLVMAssemblyFile, &buf, d))
    return false;
  sb_putn(out, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
  LLVMDisposeMemoryBuffer(buf);
  return true;
}

static bool write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* Runs argv[0] (found on PATH) and waits: 0 with its wait status in *st,
 * else the posix_spawn error. */
static int spawn_wait(char *const argv[], int *st) {
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
  if (rc != 0)
    return rc;
  while (waitpid(pid, st, 0) < 0 && errno == EINTR) {
  }
  return 0;
}

/* Links the object in buf into path with `ld -shared` (else `cc -shared`),
 * through a temporary object file. */
static bool system_link(const char *path, const char *bytes, size_t len, Diag *d) {
  const char *tmp = getenv("TMPDIR");
  StrBuf obj;
  sb_init(&obj);
  sb_printf(&obj, "%s/xhloc-XXXXXX.o", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemps(obj.s, 2);
  if (fd < 0) {
    diag_error(d, (Loc){0}, "codegen: cannot create a temporary file %s: %s", obj.s,
               strerror(errno));
    sb_free(&obj);
    return false;
  }
  bool ok = write_all(fd, bytes, len);
  ok = close(fd) == 0 && ok;
  if (!ok) {
    diag_error(d, (Loc){0}, "codegen: cannot write %s: %s", obj.s, strerror(errno));
    unlink(obj.s);
    sb_free(&obj);
    return false;
  }
  /* the linker itself when there is one (the compiler driver adds ~15 ms
   * of its own), else the driver */
  char *ld_argv[] = {"ld", "-shared", "-z", "noexecstack", "-o", (char *)path, obj.s,
                     "-lm", "-lc", NULL};
  char *cc_argv[] = {"cc", "-shared", "-o", (char *)path, obj.s, "-lm", NULL};
  int st = 0, rc = spawn_wait(ld_argv, &st);
  if (rc != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    rc = spawn_wait(cc_argv, &st);
    if (rc != 0) {
      diag_error(d, (Loc){0}, "codegen: cannot run the linker 'ld' or the C compiler "
                 "driver 'cc' to link %s: %s", path, strerror(rc));
      ok = false;
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      diag_error(d, (Loc){0}, "codegen: 'cc -shared -o %s' failed (status %d)", path,
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
      ok = false;
    }
  }
  unlink(obj.s);
  sb_free(&obj);
  return ok;
}

/* No function or variable is defined: nothing for LLVM to compile. */
static bool module_empty(Codegen *cg) {
  for (LLVMValueRef f = LLVMGetFirstFunction(cg->mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f))
      return false;
  for (LLVMValueRef g = LLVMGetFirstGlobal(cg->mod); g; g = LLVMGetNextGlobal(g))
    if (!LLVMIsDeclaration(g))
      return false;
  return true;
}

/* Writes so_len bytes of so to path (mode 0777 before the umask). */
static bool write_so(const char *path, const unsigned char *so, size_t so_len, Diag *d) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0777);
  bool ok = fd >= 0 && write_all(fd, (const char *)so, so_len);
  ok = fd >= 0 && close(fd) == 0 && ok;
  if (!ok)
    diag_error(d, (Loc){0}, "codegen: cannot write %s: %s", path, strerror(errno));
  return ok;
}

bool codegen_host_so(Codegen *cg, const char *path, Diag *d) {
  if (cg->is_gpu)
    return diag_error(d, (Loc){0}, "codegen: a shared object asked of a GPU module");
  unsigned char *so = NULL;
  size_t so_len = 0;
  char why[200];
  /* a module without kernels (routines only, library calls only): an empty
   * shared object, without LLVM's code generation (its set-up alone is
   * most of such a module's compile) */
  if (!cg->opts.system_linker && module_empty(cg) &&
      host_link_empty_so(&so, &so_len, why, sizeof why)) {
    double t0 = clock_seconds();
    bool ok = write_so(path, so, so_len, d);
    free(so);
    phase_since(cg->opts.times, "link and write the shared object", t0);
    return ok;
  }
  if (!finalize(cg, d))
    return false;
  LLVMMemoryBufferRef buf;
  if (!emit_buffer(cg, LLVMObjectFile, &buf, d))
    return false;
  const char *bytes = LLVMGetBufferStart(buf);
  size_t len = LLVMGetBufferSize(buf);
  bool ok;
  double t0 = clock_seconds();
  /* xhloc's own linker (host_link.c) unless the system one is asked for or
   * the object holds something it does not handle */
  if (!cg->opts.system_linker && host_link_so(bytes, len, &so, &so_len, why, sizeof why)) {
    ok = write_so(path, so, so_len, d);
    free(so);
  } else {
    ok = system_link(path, bytes, len, d);
  }
  phase_since(cg->opts.times, "link and write the shared object", t0);
  LLVMDisposeMemoryBuffer(buf);
  return ok;
}
