/*
 * thunks.c - xhlo-run on a compiled artifact (PREFIX.thunks): reads and
 * checks it and its kernel file, picks the platform (the artifact's target
 * unless --platform says otherwise), gathers the inputs (--random-inputs
 * keeps index operands in range using the embedded original HLO), runs it
 * --iterations times, writes and checks the results, compares them with the
 * interpreter running the original HLO (--compare), and prints the timings
 * (--iterations, --profile: lib/runtime/profile.c) and writes the timeline
 * (--trace: lib/runtime/trace.c through trace_file.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/runtime/host_cpu.h"
#include "../../lib/runtime/platform.h"
#include "../../lib/runtime/profile.h"
#include "xhlo_run.h"

/* --trace keeps at most this many events (about 200 bytes of JSON each). */
#define TRACE_MAX_EVENTS 1000000

/* "xhlo-run: [ctx: ]message", then the diagnostic is cleared. */
static void report(const char *ctx, Diag *d) {
  fprintf(stderr, "xhlo-run: %s%s%s\n", ctx ? ctx : "", ctx ? ": " : "",
          d->msg ? d->msg : "unknown error");
  diag_clear(d);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* min, median, max of n samples (sorted in place). */
static void stats(double *v, int n, double out[3]) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  out[0] = v[0];
  out[1] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  out[2] = v[n - 1];
}

/* The gap between 1 and the next value of a float type (0 for others): a
 * compiled result may round differently from the interpreter by an ulp or
 * so (library GEMMs and convolutions sum in another order), which for f16,
 * bf16 and f8 outputs exceeds the default 1e-3. */
static double float_epsilon(ElemType t) {
  switch (t) {
  case ET_F16: return 0x1p-10;
  case ET_BF16: return 0x1p-7;
  case ET_F8E4M3FN: case ET_F8E4M3: case ET_F8E4M3FNUZ: case ET_F8E4M3B11FNUZ: return 0x1p-3;
  case ET_F8E5M2: case ET_F8E5M2FNUZ: return 0x1p-2;
  case ET_F8E3M4: return 0x1p-4;
  case ET_F4E2M1FN: return 0.5;
  default: return 0;
  }
}

/* The clock a platform's marks read. */
static const char *platform_clock(const char *platform) {
  return strcmp(platform, "cuda") == 0 ? "CUDA events" : "monotonic clock";
}

static void print_timings(double *run_ms, double *exec_ms, int n, const Executor *e,
                          bool profile, const char *platform) {
  double s[3];
  stats(run_ms, n, s);
  printf("%d run%s: min %.3f ms, median %.3f ms, max %.3f ms\n", n, n == 1 ? "" : "s", s[0],
         s[1], s[2]);
  stats(exec_ms, n, s);
  printf("execution (thunks only): min %.3f ms, median %.3f ms, max %.3f ms\n", s[0], s[1],
         s[2]);
  if (!profile) return;
  const ThunkProfile *p;
  int np = executor_profile(e, &p);
  StrBuf b;
  sb_init(&b);
  profile_print_summary(&b, p, np, n, platform, platform_clock(platform));
  ExecMemory mem;
  executor_memory(e, &mem);
  executor_print_memory(&b, &mem, platform);
  fputs(b.s ? b.s : "", stdout);
  sb_free(&b);
}

/* Largest absolute and relative differences of two leaves of one shape;
 * relative ones only where the expected value is not zero.  A NaN or
 * infinity on one side only makes both infinite. */
static void max_errors(const Literal *x, const Literal *y, double *abs_err, double *rel_err) {
  *abs_err = *rel_err = 0;
  const Shape *s = x->shape;
  if (!shape_is_array(s) || !x->data || !y->data) return;
  int64_t n = shape_elements(s);
  bool cplx = et_is_complex(s->et), uns = et_is_unsigned_int(s->et);
  for (int64_t i = 0; i < n; i++) {
    double a, e, diff;
    if (cplx) {
      double ar, ai, er, ei;
      literal_get_complex(x, i, &ar, &ai);
      literal_get_complex(y, i, &er, &ei);
      diff = hypot(ar - er, ai - ei);
      a = hypot(ar, ai);
      e = hypot(er, ei);
      if (isnan(ar) && isnan(er) && isnan(ai) == isnan(ei)) continue;
    } else {
      a = uns ? (double)literal_get_u64(x, i) : literal_get_f64(x, i);
      e = uns ? (double)literal_get_u64(y, i) : literal_get_f64(y, i);
      if ((isnan(a) && isnan(e)) || (isinf(a) && a == e)) continue;
      diff = fabs(a - e);
    }
    if (isnan(diff) || isinf(diff)) diff = INFINITY;
    if (diff > *abs_err) *abs_err = diff;
    if (e != 0 && diff / fabs(e) > *rel_err) *rel_err = diff / fabs(e);
    else if (e == 0 && isinf(diff)) *rel_err = INFINITY;
  }
}

/* Half the physical memory: the default limit on the host's buffers and
 * on the interpreter's live values. */
static int64_t host_budget(const RunOpts *o) {
  if (o->mem_budget > 0) return o->mem_budget;
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || size <= 0) return (int64_t)4 << 30;
  return (int64_t)pages * size / 2;
}

/* Runs the original HLO on the interpreter with the same leaves and compares
 * every result leaf; returns the exit status. */
static int compare(const RunOpts *o, const HloModule *m, Literal **leaf_vals, Literal **res,
                   int nres, Arena *arena) {
  const HloComp *entry = m->entry;
  Literal **args = io_entry_args(arena, entry, leaf_vals);
  EvalOptions eo;
  eval_options_default(&eo);
  eo.rng_seed = o->seed;
  eo.sort_stable_order = interp_sort_stable(o, true);
  eo.threads = o->threads;
  eo.mem_budget = host_budget(o);
  eo.time_budget = o->time_budget;
  Literal *ref = NULL, **refs = NULL;
  EvalStatus st;
  Diag d = {0};
  bool ok = eval_module(m, entry->nparams, args, arena, &eo, &ref, &d, &st);
  free(args);
  if (!ok) {
    report("--compare: the interpreter failed on the original HLO", &d);
    return 1;
  }
  int nref = io_literal_leaves(ref, &refs);
  int status = 0;
  if (nref != nres) {
    fprintf(stderr, "xhlo-run: --compare: the original HLO has %d result leaves, the "
            "artifact %d\n", nref, nres);
    free(refs);
    return 1;
  }
  printf("compare with the interpreter (atol %g, rtol %g%s):\n", o->cmp_atol, o->cmp_rtol,
         o->cmp_tol_given ? "" : ", at least 4 ulp of narrower float types");
  int bad = 0;
  for (int k = 0; k < nres; k++) {
    if (!res[k] || res[k]->shape->et == ET_TOKEN) continue;
    char *sh = shape_to_string(res[k]->shape, false);
    StrBuf why;
    sb_init(&why);
    double widen = o->cmp_tol_given ? 0 : 4 * float_epsilon(res[k]->shape->et);
    bool same = io_compare(res[k], refs[k], widen > o->cmp_atol ? widen : o->cmp_atol,
                           widen > o->cmp_rtol ? widen : o->cmp_rtol, &why);
    double ae = 0, re = 0;
    if (shape_compatible(res[k]->shape, refs[k]->shape)) max_errors(res[k], refs[k], &ae, &re);
    printf("  output %d %s: max abs error %.3g, max rel error %.3g: %s\n", k, sh, ae, re,
           same ? "ok" : "MISMATCH");
    if (!same) {
      fprintf(stderr, "xhlo-run: --compare: output %d does not match the interpreter: %s\n", k,
              why.s);
      bad++;
    }
    sb_free(&why);
    free(sh);
  }
  if (bad) status = 1;
  free(refs);
  return status;
}

/* The platform to run on, or NULL after printing why not. */
static const char *pick_platform(const RunOpts *o, const Artifact *a, const char *path) {
  bool gpu = strncmp(a->target, "sm_", 3) == 0, host = strcmp(a->target, "host") == 0;
  if (!gpu && !host) {
    fprintf(stderr, "xhlo-run: %s: unknown target '%s' (expected host or sm_NN)\n", path,
            a->target);
    return NULL;
  }
  const char *p = o->platform ? o->platform : gpu ? "cuda" : "host";
  if (strcmp(p, "interpreter") == 0) return p;
  if (strcmp(p, "cuda") == 0 && !gpu) {
    fprintf(stderr, "xhlo-run: %s was compiled for the host (%s): run it with "
            "--platform=host, or compile it with xhloc --target=sm_90\n", path, a->kernel_file);
    return NULL;
  }
  if (strcmp(p, "host") == 0 && !gpu) {
    StrBuf missing;
    sb_init(&missing);
    bool ok = host_cpu_has(a->host_features ? a->host_features : "", &missing);
    if (!ok)
      fprintf(stderr, "xhlo-run: %s was compiled for the host CPU %s, whose "
              "features %s this CPU lacks: compile it with xhloc --target=host "
              "--host-cpu=native on this machine, or with a portable level "
              "(--host-cpu=x86-64-v2, x86-64-v3, ...)\n", path,
              a->host_cpu ? a->host_cpu : "?", missing.s);
    sb_free(&missing);
    return ok ? p : NULL;
  }
  if (strcmp(p, "host") == 0) {
    fprintf(stderr, "xhlo-run: %s was compiled for %s (PTX kernels in %s): run it with "
            "--platform=cuda, or compile it with xhloc --target=host\n", path, a->target,
            a->kernel_file);
    return NULL;
  }
  return p;
}

int run_thunks(const RunOpts *o, const char *path) {
  int status = 1;
  Diag d = {0};
  Arena *arena = arena_new();
  HloModule **mods = NULL;
  int nm = 0;
  SrcFile *orig = NULL;
  Platform *plat = NULL;
  Executor *ex = NULL;
  uint8_t *kbytes = NULL;
  char *kpath = NULL;
  PtrVec leaves = {0};
  Literal **leaf_vals = NULL, **res = NULL;
  int64_t *bounds = NULL;
  double *run_ms = NULL, *exec_ms = NULL;
  TraceFile *trace = NULL;
  StrVec specs[3] = {{0}};
  RunOpts one;

  Artifact *a = artifact_read(path, &d);
  if (!a) {
    report(NULL, &d);
    goto out;
  }
  if (o->describe) {
    StrBuf b;
    sb_init(&b);
    artifact_describe(&b, a);
    fputs(b.s ? b.s : "", stdout);
    sb_free(&b);
    status = 0;
    goto out;
  }
  const char *pname = pick_platform(o, a, path);
  if (!pname) goto out;
  /* an unwritable --trace file is reported before anything runs */
  if (o->trace && strcmp(pname, "interpreter") != 0 && !(trace = trace_file_open(o->trace)))
    goto out;

  /* the original HLO: the interpreter platform, --compare, index bounds */
  bool need_hlo = strcmp(pname, "interpreter") == 0 || o->compare;
  if (a->original_hlo) {
    char name[512];
    snprintf(name, sizeof name, "%s (original HLO)", path);
    orig = srcfile_from_string(name, a->original_hlo, strlen(a->original_hlo));
  }
  if (!orig && need_hlo) {
    fprintf(stderr, "xhlo-run: %s has no original HLO to %s\n", path,
            o->compare ? "compare with" : "interpret");
    goto out;
  }
  int64_t replicas, partitions;
  artifact_devices(a, &replicas, &partitions);
  if ((o->num_replicas && o->num_replicas != replicas) ||
      (o->num_partitions && o->num_partitions != partitions)) {
    fprintf(stderr, "xhlo-run: %s was compiled for replica_count=%lld, "
            "num_partitions=%lld; --num-replicas and --num-partitions must say "
            "the same (compile the module again with xhloc --num-partitions=N "
            "--num-replicas=N)\n", path, (long long)replicas, (long long)partitions);
    goto out;
  }
  if (strcmp(pname, "interpreter") == 0) {
    /* the original HLO on the artifact's devices, whatever it names */
    one = *o;
    one.num_replicas = replicas;
    one.num_partitions = partitions;
    status = run_interpreter(&one, orig);
    goto out;
  }
  if (replicas * partitions > 1 || (o->mpi && o->mpi_size > 1)) {
    status = run_thunks_devices(o, path, a, pname, replicas, partitions);
    goto out;
  }
  /* one device: {d} in the specs is 0, as on the interpreter */
  one = *o;
  device_specs(o->inputs, 0, &specs[0]);
  device_specs(o->outputs, 0, &specs[1]);
  device_specs(o->expected, 0, &specs[2]);
  one.inputs = &specs[0];
  one.outputs = &specs[1];
  one.expected = &specs[2];
  o = &one;
  if (orig && (o->compare || o->random_inputs)) {
    ParseOptions popts = {.strip_glog_prefixes = true};
    nm = hlo_parse(orig, &popts, &mods, &d);
    if (nm < 0 || (nm > 0 && !hlo_verify(mods[0], &d)) || (nm > 0 && !mods[0]->entry)) {
      if (nm < 0) nm = 0;
      if (need_hlo) {
        fprintf(stderr, "xhlo-run: %s: its original HLO does not read back: ", path);
        if (d.has_error) diag_print(&d, stderr);
        else fputs("no entry computation\n", stderr);
        goto out;
      }
      diag_clear(&d);
      for (int k = 0; k < nm; k++) hlo_module_free(mods[k]);
      nm = 0;
    }
  }
  if (nm > 0 && o->compare) interp_prepare(o, mods[0]);   /* the interpreter runs it */
  const HloModule *m = nm > 0 ? mods[0] : NULL;

  /* inputs: the artifact's parameter leaves */
  for (int k = 0; k < a->nparams; k++) {
    Shape *s = hlo_parse_shape(arena, a->params[k].shape, &d);
    if (!s) {
      report("the artifact's parameter shape", &d);
      goto out;
    }
    vec_push(&leaves, s);
  }
  if (o->compare && !m) {
    fprintf(stderr, "xhlo-run: %s: its original HLO has no module to compare with\n", path);
    goto out;
  }
  bool hlo_matches = false;
  if (m) {
    PtrVec ol = {0};
    for (int k = 0; k < m->entry->nparams; k++) io_shape_leaves(m->entry->params[k]->shape, &ol);
    bool same = ol.len == leaves.len;
    for (int k = 0; same && k < ol.len; k++)
      same = shape_compatible(ol.data[k], leaves.data[k]);
    vec_free(&ol);
    hlo_matches = same;
    if (!same && o->compare) {
      fprintf(stderr, "xhlo-run: %s: the artifact's parameters do not match its original "
              "HLO's; cannot --compare\n", path);
      goto out;
    }
  }
  int nb = 0;
  if (o->random_inputs && hlo_matches) nb = io_index_bounds(m, &bounds);
  /* the inputs live in host memory first: refuse before allocating them */
  {
    int64_t need = 0, budget = host_budget(o);
    for (int k = 0; k < leaves.len; k++) {
      const Shape *s = leaves.data[k];
      int64_t b = shape_is_array(s) ? shape_byte_size(s) : 0;
      need = b < 0 || need > INT64_MAX - b ? INT64_MAX : need + b;
    }
    if (need > budget) {
      fprintf(stderr, "xhlo-run: %s: the inputs need %lld bytes, more than the memory "
              "budget of %lld bytes (--mem-budget; by default half the physical "
              "memory)\n", path, (long long)need, (long long)budget);
      goto out;
    }
  }
  leaf_vals = gather_inputs(o, &leaves, bounds, nb, arena, path);
  if (!leaf_vals) goto out;

  /* the platform, the kernel file and the buffers */
  PlatformOptions popts = {.threads = o->threads, .lib_path = o->lib_path,
                           .no_tf32 = o->no_tf32, .streams = o->streams};
  if (strcmp(pname, "host") == 0) {
    int64_t total = 0, budget = host_budget(o);
    for (int k = 0; k < a->nallocs; k++)
      total = total > INT64_MAX - a->allocs[k].size ? INT64_MAX : total + a->allocs[k].size;
    if (total > budget) {
      fprintf(stderr, "xhlo-run: %s needs %lld bytes of buffers, more than the memory budget "
              "of %lld bytes (--mem-budget)\n", path, (long long)total, (long long)budget);
      goto out;
    }
    plat = platform_host_new(&popts, &d);
  } else {
    plat = platform_cuda_new(&popts, &d);
  }
  if (!plat) {
    fprintf(stderr, "xhlo-run: --platform=%s: %s\n", pname, d.msg ? d.msg : "unavailable");
    goto out;
  }
  size_t klen = 0;
  kbytes = artifact_read_kernel_file(a, path, &klen, &d);
  if (!kbytes) {
    report(NULL, &d);
    goto out;
  }
  const char *slash = strrchr(path, '/');
  size_t dl = slash ? (size_t)(slash - path + 1) : 0;
  kpath = xmalloc(dl + strlen(a->kernel_file) + 1);
  memcpy(kpath, path, dl);
  strcpy(kpath + dl, a->kernel_file);
  ex = executor_new(a, plat, artifact_has_kernels(&a->entry) ? kbytes : NULL, klen, kpath, &d);
  if (!ex) {
    report(path, &d);
    goto out;
  }
  executor_set_profile(ex, o->profile || o->trace);
  if (o->trace) executor_set_trace(ex, TRACE_MAX_EVENTS);
  executor_set_command_buffers(ex, !o->no_command_buffers);
  executor_set_sync_each_thunk(ex, o->sync_each_thunk);
  executor_set_keep_inputs(ex, o->device_resident);

  int runs = o->iterations > 0 ? o->iterations : 1;
  run_ms = xcalloc((size_t)runs, sizeof *run_ms);
  exec_ms = xcalloc((size_t)runs, sizeof *exec_ms);
  Literal *result = NULL;
  if (runs > 1) {
    /* a warm-up run first, left out of the timings, the profile and the
     * trace: libraries load and command buffers are recorded in it */
    executor_set_profile(ex, false);
    if (!executor_run(ex, leaf_vals, arena, o->device_resident ? NULL : &result, &d)) {
      report(path, &d);
      goto out;
    }
    executor_set_profile(ex, o->profile || o->trace);
  }
  for (int r = 0; r < runs; r++) {
    double t0 = now_ms();
    /* --device-resident: only the last run's results come back */
    bool fetch = !o->device_resident || r == runs - 1;
    if (!executor_run(ex, leaf_vals, arena, fetch ? &result : NULL, &d)) {
      report(path, &d);
      goto out;
    }
    run_ms[r] = now_ms() - t0;
    exec_ms[r] = executor_last_exec_ms(ex);
  }
  double b2b_ms = -1;
  if (o->back_to_back) {
    /* N more runs queued back to back, one synchronization at the end: the
     * results stay on the device (the timed runs' last one brought them) */
    executor_set_defer_sync(ex, true);
    double t0 = now_ms();
    for (int r = 0; r < runs; r++)
      if (!executor_run(ex, leaf_vals, arena, NULL, &d)) {
        report(path, &d);
        goto out;
      }
    if (!executor_synchronize(ex, &d)) {
      report(path, &d);
      goto out;
    }
    b2b_ms = now_ms() - t0;
    executor_set_defer_sync(ex, false);
  }
  int nres = io_literal_leaves(result, &res);
  status = emit_results(o, res, nres, arena);
  if (o->compare && compare(o, m, leaf_vals, res, nres, arena) != 0) status = 1;
  if (o->iterations > 0 || o->profile)
    print_timings(run_ms, exec_ms, runs, ex, o->profile, pname);
  if (b2b_ms >= 0)
    printf("back-to-back: %d runs queued, one synchronization: %.3f ms, %.3f ms per run\n", runs,
           b2b_ms, b2b_ms / runs);
  if (trace) {
    StrBuf proc;
    sb_init(&proc);
    sb_printf(&proc, "xhlo-run %s (%s on %s)", path, a->module_name ? a->module_name : "?", pname);
    bool ok = trace_file_commit(trace, ex, proc.s,
                                strcmp(pname, "cuda") == 0 ? "stream (thunks in order)"
                                                           : "thunks (calling thread)");
    trace = NULL;
    sb_free(&proc);
    if (!ok) status = 1;
  }
out:
  trace_file_abort(trace);
  fflush(stdout);
  for (int k = 0; k < 3; k++) device_specs_free(&specs[k]);
  free(run_ms);
  free(exec_ms);
  free(res);
  free(leaf_vals);
  free(bounds);
  vec_free(&leaves);
  executor_free(ex);
  platform_free(plat);
  free(kbytes);
  free(kpath);
  for (int k = 0; k < nm; k++) hlo_module_free(mods[k]);
  free(mods);
  if (orig) srcfile_free(orig);
  if (a) artifact_free(a);
  arena_free(arena);
  diag_clear(&d);
  return status;
}
