/*
 * backend.c - the stages after "hlo" for one module, in order: buffer
 * assignment (and its memory usage report), thunk emission (which generates every kernel), on the GPU the
 * command-buffer conversion of the thunk sequence, the LLVM IR
 * before and after optimization, the PTX, and the artifact files.  Each
 * stage's --dump-to file is written when the stage is reached.
 */
#include "xhloc.h"

#include "../../emitters/thunk_emitter.h"
#include "../../passes/rematerialization.h"

#include <string.h>

/* XLA's GetDumpName: "sm_9.0_gpu_after_optimizations" for sm_90,
 * "cpu_after_optimizations" for the host. */
static void after_opt_name(StrBuf *b, const BackendOptions *o) {
  if (o->host) {
    sb_puts(b, "cpu_after_optimizations");
    return;
  }
  const char *cc = o->arch + 3; /* after "sm_" */
  size_t digits = strspn(cc, "0123456789");
  sb_puts(b, "sm_");
  sb_putn(b, cc, digits - 1);
  sb_putc(b, '.');
  sb_puts(b, cc + digits - 1);
  sb_puts(b, "_gpu_after_optimizations");
}

static bool dump(const BackendOptions *o, const HloModule *m,
                 const char *suffix, const StrBuf *text, Diag *d) {
  if (!o->dump_to)
    return true;
  return dump_text(o->dump_to, o->module_id, m->name, suffix,
                   text->s ? text->s : "", text->len, d);
}

/* Text for a stage: appended to out when it is the stage asked for, and
 * dumped under `suffix` with --dump-to. */
static bool emit_text(const BackendOptions *o, const HloModule *m,
                      const char *suffix, StrBuf *text, bool print,
                      StrBuf *out, Diag *d) {
  if (print)
    sb_putn(out, text->s ? text->s : "", text->len);
  return dump(o, m, suffix, text, d);
}

bool backend_run(HloModule *m, StageId stage, const BackendOptions *o,
                 const char *original_hlo, StrBuf *out, Diag *d) {
  StrBuf name, text;
  sb_init(&name);
  sb_init(&text);
  BufferAssignment *ba = NULL;
  Codegen *cg = NULL;
  Artifact *a = NULL;
  bool ok = true;

  after_opt_name(&name, o);
  if (o->dump_to) {
    hlo_print_module(&text, m, &print_options_default);
    size_t base = name.len;
    sb_puts(&name, ".txt");
    ok = dump(o, m, name.s, &text, d);
    name.len = base;
    name.s[base] = '\0';
  }

  /* Rematerialization down to --memory-limit, then buffer assignment. */
  double t0 = clock_seconds();
  if (ok && o->memory_limit > 0) {
    RematStats rs;
    ok = rematerialize(m, o->memory_limit, &rs, d);
    if (ok && rs.rematerialized && d->warn_out)
      fprintf(d->warn_out, "xhloc: note: %s: --memory-limit: %d values "
              "computed again (%d instructions), total %lld -> %lld bytes\n",
              m->name, rs.rematerialized, rs.instructions,
              (long long)rs.before, (long long)rs.after);
    phase_since(o->times, "rematerialization", t0);
    t0 = clock_seconds();
  }
  if (ok)
    ok = (ba = buffer_assign(m, d)) != NULL;
  phase_since(o->times, "buffer assignment", t0);
  size_t base = name.len;
  if (ok && (stage == STAGE_BUFFERS || o->dump_to)) {
    sb_clear(&text);
    ba_print(&text, ba);
    sb_puts(&name, "-buffer-assignment.txt");
    ok = emit_text(o, m, name.s, &text, stage == STAGE_BUFFERS, out, d);
    name.len = base;
    name.s[base] = '\0';
  }
  /* XLA's dump: PREFIX-memory-usage-report.txt */
  if (ok && (stage == STAGE_MEMORY || o->dump_to)) {
    sb_clear(&text);
    ba_print_memory_report(&text, ba, 0);
    sb_puts(&name, "-memory-usage-report.txt");
    ok = emit_text(o, m, name.s, &text, stage == STAGE_MEMORY, out, d);
    name.len = base;
    name.s[base] = '\0';
  }
  if (!ok || stage == STAGE_BUFFERS || stage == STAGE_MEMORY)
    goto done;

  /* Thunk emission, with a kernel per fusion. */
  CodegenOptions co;
  codegen_options_default(&co);
  co.target = o->host ? CG_TARGET_HOST : CG_TARGET_NVPTX;
  co.arch = o->arch;
  co.libdevice = o->libdevice;
  co.host_cpu = o->host_cpu;
  co.fast_math = !o->exact_host_math;
  co.system_linker = o->system_linker;
  co.host_routines = !o->no_host_routines;
  co.times = o->times;
  ok = (cg = codegen_new(m->name, &co, d)) != NULL;
  t0 = clock_seconds();
  ok = ok && (a = thunks_emit(m, ba, cg, original_hlo, d)) != NULL;
  phase_since(o->times, "thunk emission and kernel IR", t0);
  if (!ok)
    goto done;
  a->target = arena_strdup(a->arena, o->host ? "host" : o->arch);
  if (o->host) {
    const char *features;
    a->host_cpu = arena_strdup(a->arena, codegen_host_cpu(cg, &features));
    a->host_features = arena_strdup(a->arena, features);
  }
  /* XLA's CommandBufferConversionPass, on the thunk sequence. */
  if (!o->host)
    cmdbuf_convert(a, o->cmdbuf_types, o->cmdbuf_min_size);
  if (stage == STAGE_THUNKS || o->dump_to) {
    sb_clear(&text);
    artifact_print_thunks(&text, a);
    ok = emit_text(o, m, "thunk_sequence.txt", &text, stage == STAGE_THUNKS,
                   out, d);
  }
  if (!ok || stage == STAGE_THUNKS)
    goto done;

  /* LLVM IR before and after optimization (the unoptimized text only
   * exists until the optimization runs). */
  if (stage == STAGE_LLVM_NO_OPT || o->dump_to) {
    sb_clear(&text);
    ok = codegen_llvm_ir(cg, false, &text, d) &&
         emit_text(o, m, "ir-no-opt.ll", &text, stage == STAGE_LLVM_NO_OPT,
                   out, d);
  }
  if (!ok || stage == STAGE_LLVM_NO_OPT)
    goto done;
  if (stage == STAGE_LLVM || o->dump_to) {
    sb_clear(&text);
    ok = codegen_llvm_ir(cg, true, &text, d) &&
         emit_text(o, m, "ir-with-opt.ll", &text, stage == STAGE_LLVM, out,
                   d);
  }
  if (!ok || stage == STAGE_LLVM)
    goto done;

  /* PTX, and the artifact. */
  sb_clear(&text);
  if (!o->host)
    ok = codegen_ptx(cg, &text, d) &&
         emit_text(o, m, "ptx", &text, stage == STAGE_PTX, out, d);
  if (ok && stage == STAGE_ARTIFACT)
    ok = artifact_files_write(a, o->prefix, o->host ? NULL : &text, cg,
                              o->times, d);

done:
  if (a)
    artifact_free(a);
  if (cg)
    codegen_free(cg);
  if (ba)
    buffer_assignment_free(ba);
  sb_free(&text);
  sb_free(&name);
  return ok;
}
