/*
 * pipeline_diff.c - the default pipeline on every module of an HLO corpus,
 * checked against the interpreter.
 *
 *   pipeline_diff [--mem-budget BYTES] [--time-budget SECONDS] [--seed N]
 *                 [--run-passes A,B,...] [--verbose] [--only SUBSTRING]
 *                 [--all-checked] DIR...
 *
 * For each DIR/ *.hlo (name order, directories in turn) a child process parses and verifies the
 * file twice, runs the default pipeline (or the --run-passes list; the
 * verifier after every pass) on the second copy of each module and verifies
 * the result.  Then it runs both
 * copies in the interpreter on the same deterministic random inputs (index
 * operands in range) and compares the outputs: integers and pred exactly,
 * floats within a tight tolerance (relative to each result's largest
 * magnitude where a pass reassociated sums: see `reassociating`).  Every
 * module ends as one of:
 *
 *   checked     the pipeline ran and both runs agree (a module the
 *               pipeline partitioned for several devices runs on all of them,
 *               each on its shards of the inputs, and its results are put
 *               back together: see run_partitioned)
 *   rng         the module uses `rng`, which rng-expander replaces by XLA's
 *               Philox expansion: the interpreter's own rng draws the same
 *               numbers (lib/eval/rng.c), so the values are compared as
 *               for checked modules
 *   placeholder the module has constants elided as {...}: both runs use
 *               XLA's placeholder values for them (elided-constant-filler),
 *               which are no real data (integers' bits as tiny or huge
 *               floats); where the results then differ (an overflow or NaN
 *               that one form of a computation meets and another does not)
 *               only their shapes are compared; where they agree the module
 *               counts as checked
 *   unchecked   the pipeline ran; the interpreter cannot run the original
 *               (or the optimized module runs past twice the time budget)
 *               within the budgets (or refuses an op)
 *   skipped     the front end rejects the file
 *   FAILED      the pipeline failed or broke the module, the optimized
 *               module does not run where the original did, the outputs
 *               differ, or the child crashed or hit the hard timeout
 *
 * Ends with the counts and "N passed, N failed" (passed = checked +
 * unchecked + skipped; with --all-checked, unchecked and skipped modules
 * count as failed); exits 1 when anything failed.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/eval/eval.h"
#include "../passes/passes.h"

typedef struct Opts {
  int64_t mem_budget;
  double time_budget;
  uint64_t seed;
  bool verbose;
  const char *only;
  const char *run_passes;         /* NULL: the default pipeline */
  bool all_checked;               /* unchecked or skipped is a failure */
} Opts;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int64_t input_bytes(const HloComp *e) {
  PtrVec leaves = {0};
  for (int k = 0; k < e->nparams; k++)
    io_shape_leaves(e->params[k]->shape, &leaves);
  int64_t total = 0;
  for (int k = 0; k < leaves.len; k++) {
    const Shape *s = leaves.data[k];
    int64_t b = shape_is_array(s) ? shape_byte_size(s) : 0;
    total = b < 0 || total > INT64_MAX - b ? INT64_MAX : total + b;
  }
  vec_free(&leaves);
  return total;
}

static bool literal_elided(const Literal *l) {
  if (l->elided)
    return true;
  for (int k = 0; k < l->ntuple; k++)
    if (literal_elided(l->tuple[k]))
      return true;
  return false;
}

static bool has_elided_constant(const HloModule *m) {
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const HloInstr *i = m->comps[c]->instrs[k];
      if (i->op == HLO_CONSTANT && i->literal && literal_elided(i->literal))
        return true;
    }
  return false;
}

static bool uses_rng(const HloModule *m) {
  for (int c = 0; c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++)
      if (m->comps[c]->instrs[k]->op == HLO_RNG)
        return true;
  return false;
}

/* Tolerances by element type: apart from the passes below, the pipeline
 * does not reassociate, so floats differ at most by a rounding or two where
 * a rewrite evaluates an equivalent form. */
static void tolerance(ElemType et, double *atol, double *rtol) {
  switch (et) {
  case ET_F64: *atol = 1e-12; *rtol = 1e-12; break;
  case ET_F32: case ET_C64: *atol = 1e-6; *rtol = 1e-5; break;
  default: *atol = 1e-2; *rtol = 1e-2; break; /* f16, bf16, f8 */
  }
}

/* The pipeline passes that reassociate floating-point arithmetic, as XLA
 * takes add and multiply to be associative there (reduce-window-rewriter
 * turns a scan into a blocked scan).  Sums in another order round
 * differently, and near zero by more than a rounding of the element: in a
 * module one of them changes, the relative tolerance applies to each
 * result's largest magnitude instead of to each element. */
static const char *const reassociating[] = {"reduce-window-rewriter"};

/* Whether one of the reassociating passes changes module k of src (a fresh
 * parse), when the pipeline run has it. */
static bool reassociated(const SrcFile *src, int k, const Opts *o) {
  ParseOptions popts = {.strip_glog_prefixes = true};
  Diag d = {0};
  HloModule **ms = NULL;
  int n = hlo_parse(src, &popts, &ms, &d);
  bool changed = false;
  for (size_t j = 0; j < ARRAY_LEN(reassociating) && k < n && !changed; j++) {
    const char *name = reassociating[j];
    if (o->run_passes && !strstr(o->run_passes, name))
      continue;
    PassContext ctx = {.diag = &d};
    bool ch = false;
    changed = pass_run(pass_find(name), ms[k], &ctx, &ch) && ch;
  }
  for (int j = 0; j < n; j++)
    hlo_module_free(ms[j]);
  free(ms);
  diag_clear(&d);
  return changed;
}

/* The largest finite magnitude in a real float literal. */
static double max_abs(const Literal *l) {
  double m = 0;
  int64_t n = l->data ? shape_elements(l->shape) : 0;
  for (int64_t k = 0; k < n; k++) {
    double v = fabs(literal_get_f64(l, k));
    if (v > m && !isinf(v))
      m = v;
  }
  return m;
}

/* Compares result leaves (only their shapes when !values; with the
 * tolerance of a reassociated module when reassoc); on a mismatch writes
 * why to `why`. */
static bool same_results(const Literal *got, const Literal *want, bool values,
                         bool reassoc, StrBuf *why) {
  Literal **g, **w;
  int ng = io_literal_leaves(got, &g);
  int nw = io_literal_leaves(want, &w);
  bool ok = ng == nw;
  if (!ok)
    sb_printf(why, "%d result leaves, expected %d", ng, nw);
  for (int k = 0; ok && k < ng; k++) {
    if (!w[k]->shape || !shape_is_array(w[k]->shape))
      continue;
    if (!values) {
      if (!g[k]->shape || !shape_compatible(g[k]->shape, w[k]->shape)) {
        sb_printf(why, "result %d: shape differs", k);
        ok = false;
      }
      continue;
    }
    double atol = 0, rtol = 0;
    ElemType et = w[k]->shape->et;
    if (et_is_float(et) || et_is_complex(et))
      tolerance(et, &atol, &rtol);
    if (reassoc && et_is_float(et))
      atol += rtol * max_abs(w[k]);
    StrBuf b;
    sb_init(&b);
    if (!io_compare(g[k], w[k], atol, rtol, &b)) {
      sb_printf(why, "result %d: %s", k, b.s ? b.s : "differs");
      ok = false;
    }
    sb_free(&b);
  }
  free(g);
  free(w);
  return ok;
}

/* Runs the optimized module.  A module that ran just under the time
 * budget may run just over it: the clock decides, so it gets twice. */
static bool run_optimized(const HloModule *opt, Literal *const *args, Arena *a,
                          EvalOptions *eo, Literal **got, Diag *d,
                          EvalStatus *st) {
  if (eval_module(opt, opt->entry->nparams, args, a, eo, got, d, st))
    return true;
  if (st->kind != EVAL_ERR_RESOURCE || strcmp(st->what, "time") != 0)
    return false;
  diag_clear(d);
  eo->time_budget *= 2;
  return eval_module(opt, opt->entry->nparams, args, a, eo, got, d, st);
}

/* The module is a program spmd-partitioning made (it records the global
 * program's result). */
static bool partitioned(const HloModule *m) {
  const KVList *l = m->frontend_attrs;
  for (int k = 0; l && k < l->n; k++)
    if (strcmp(l->kv[k].key, "xhlo.global_result_shape") == 0)
      return true;
  return false;
}

/* A partitioned module runs on all its partitions: every device takes its
 * shards of the original's argument leaves (vals), and the devices' result
 * leaves are put back together into the global ones (a flat tuple). */
static bool run_partitioned(const HloModule *opt, Literal **vals, Arena *a,
                            EvalOptions *eo, Literal **got, Diag *d,
                            EvalStatus *st) {
  SpmdIo io;
  if (!io_spmd(a, opt, &io, d))
    return false;
  int64_t n = eval_device_count(opt);
  PtrVec local = {0};
  for (int k = 0; k < opt->entry->nparams; k++)
    io_shape_leaves(opt->entry->params[k]->shape, &local);
  bool ok = local.len == io.nparams;
  if (!ok)
    diag_error(d, (Loc){0}, "the partitioned module has %d parameter leaves, "
               "its record %d", local.len, io.nparams);
  Literal ***args = xcalloc((size_t)n, sizeof *args);
  Arena **outs = xcalloc((size_t)n, sizeof *outs);
  Literal **res = xcalloc((size_t)n, sizeof *res);
  for (int64_t dev = 0; ok && dev < n; dev++) {
    Literal **lv = ARENA_ARRAY(a, Literal *, local.len + 1);
    for (int k = 0; k < local.len; k++)
      lv[k] = vals[k] && io.param_tiling[k]
                  ? io_shard(a, vals[k], io.param_tiling[k], dev, local.data[k])
                  : vals[k];
    args[dev] = io_entry_args(a, opt->entry, lv);
    outs[dev] = arena_new();
  }
  if (ok)
    ok = eval_module_devices(opt, opt->entry->nparams,
                             (Literal *const *const *)args, outs, eo, res, d, st);
  if (ok) {
    Literal ***leaves = xcalloc((size_t)n, sizeof *leaves);
    int nres = 0;
    for (int64_t dev = 0; dev < n; dev++)
      nres = io_literal_leaves(res[dev], &leaves[dev]);
    Literal *t = ARENA_NEW(a, Literal);
    Shape **shapes = ARENA_ARRAY(a, Shape *, nres + 1);
    t->ntuple = nres;
    t->tuple = ARENA_ARRAY(a, Literal *, nres + 1);
    Literal **shards = xcalloc((size_t)n, sizeof *shards);
    for (int j = 0; j < nres; j++) {
      for (int64_t dev = 0; dev < n; dev++)
        shards[dev] = leaves[dev][j];
      const Shape *g = j < io.nresults ? io.result_global[j] : NULL;
      t->tuple[j] = g && shape_is_array(g)
                        ? io_unshard(a, shards, io.result_tiling[j], g)
                        : shards[0];
      shapes[j] = t->tuple[j]->shape;
    }
    t->shape = shape_tuple(a, nres, shapes);
    *got = nres == 1 ? t->tuple[0] : t;
    free(shards);
    for (int64_t dev = 0; dev < n; dev++)
      free(leaves[dev]);
    free(leaves);
  }
  for (int64_t dev = 0; dev < n; dev++) {
    free(args[dev]);
    if (outs[dev])
      arena_free(outs[dev]);
  }
  free(args);
  free(outs);
  free(res);
  vec_free(&local);
  return ok;
}

/* Writes one line: "CHECKED", "RNG", "UNCHECKED why", "FAILED why". */
static void run_module(HloModule *orig, HloModule *opt, const SrcFile *src,
                       int index, const Opts *o, FILE *out) {
  Diag d = {0};
  PipelineOptions po = {.verify_each = true, .run_passes = o->run_passes};
  if (!pipeline_run(opt, &po, &d) || !hlo_verify(opt, &d)) {
    fprintf(out, "FAILED pipeline: %s\n", d.msg ? d.msg : "?");
    diag_clear(&d);
    return;
  }
  const HloComp *e = orig->entry;
  if (!e) {
    fprintf(out, "UNCHECKED no entry\n");
    return;
  }
  bool rng = uses_rng(orig), elided = has_elided_constant(orig);
  if (o->mem_budget > 0 && input_bytes(e) > o->mem_budget) {
    fprintf(out, "UNCHECKED budget\n");
    return;
  }
  PtrVec leaves = {0};
  for (int k = 0; k < e->nparams; k++)
    io_shape_leaves(e->params[k]->shape, &leaves);
  int64_t *bounds;
  int nb = io_index_bounds(orig, &bounds);
  Arena *a = arena_new();
  Literal **vals = xcalloc((size_t)leaves.len + 1, sizeof *vals);
  io_random_leaves(a, &leaves, bounds, nb, o->seed, vals);
  Literal **args = io_entry_args(a, e, vals);
  EvalOptions eo;
  eval_options_default(&eo);
  eo.mem_budget = o->mem_budget;
  eo.time_budget = o->time_budget;
  eo.rng_seed = o->seed;
  EvalStatus st;
  Literal *want = NULL, *got = NULL;
  bool ran = eval_module(orig, e->nparams, args, a, &eo, &want, &d, &st);
  if (!ran)
    fprintf(out, "UNCHECKED interpreter: %s\n",
            st.kind == EVAL_ERR_UNSUPPORTED ? st.what
            : st.kind == EVAL_ERR_RESOURCE  ? "budget"
                                            : "error");
  diag_clear(&d);
  if (!ran) {
    /* nothing to compare */
  } else if (!(partitioned(opt) ? run_partitioned(opt, vals, a, &eo, &got, &d, &st)
                                 : run_optimized(opt, args, a, &eo, &got, &d, &st)) &&
             st.kind == EVAL_ERR_RESOURCE && strcmp(st.what, "time") == 0) {
    /* The interpreter runs a fusion as a call, so a fused loop can take
     * several times the original's time (diffrax: 10x); running past twice
     * the budget is no wrong answer. */
    fprintf(out, "UNCHECKED optimized module over twice the time budget\n");
  } else if (!got) {
    char *msg = d.msg ? d.msg : "?";
    for (char *p = msg; *p; p++)
      if (*p == '\n')
        *p = ' ';
    fprintf(out, "FAILED the optimized module does not run: %s\n", msg);
  } else {
    StrBuf why;
    sb_init(&why);
    bool same = same_results(got, want, true, false, &why);
    /* a partitioned program adds partial sums across devices */
    if (!same && (partitioned(opt) || reassociated(src, index, o))) {
      sb_clear(&why);
      same = same_results(got, want, true, true, &why);
    }
    if (same) {
      fprintf(out, rng ? "RNG\n" : "CHECKED\n");
    } else if (elided && (sb_clear(&why), same_results(got, want, false, false, &why))) {
      fprintf(out, "PLACEHOLDER\n");
    } else {
      for (char *p = why.s; p && *p; p++)
        if (*p == '\n')
          *p = ' ';
      fprintf(out, "FAILED outputs differ: %s\n", why.s ? why.s : "");
    }
    sb_free(&why);
  }
  diag_clear(&d);
  free(args);
  free(vals);
  free(bounds);
  vec_free(&leaves);
  arena_free(a);
}

static void child(const char *path, const Opts *o, int fd) {
  FILE *out = fdopen(fd, "w");
  setvbuf(out, NULL, _IOLBF, 0);
  Diag d = {0};
  SrcFile *src = srcfile_read(path, &d);
  if (!src) {
    fprintf(out, "SKIPPED unreadable\n");
    _exit(0);
  }
  ParseOptions popts = {.strip_glog_prefixes = true};
  HloModule **orig = NULL, **opt = NULL;
  int n = hlo_parse(src, &popts, &orig, &d);
  int n2 = n > 0 ? hlo_parse(src, &popts, &opt, &d) : -1;
  if (n < 0 || n2 != n) {
    fprintf(out, "SKIPPED parse\n");
    _exit(0);
  }
  for (int k = 0; k < n; k++) {
    Diag vd = {0};
    if (!hlo_verify(orig[k], &vd)) {
      fprintf(out, "SKIPPED verify\n");
      diag_clear(&vd);
      continue;
    }
    run_module(orig[k], opt[k], src, k, o, out);
  }
  fclose(out);
  _exit(0);
}

int main(int argc, char **argv) {
  Opts o = {.mem_budget = 256 << 20, .time_budget = 2, .seed = 42};
  StrVec dirs = {0};
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--mem-budget") == 0 && k + 1 < argc)
      o.mem_budget = atoll(argv[++k]);
    else if (strcmp(argv[k], "--time-budget") == 0 && k + 1 < argc)
      o.time_budget = atof(argv[++k]);
    else if (strcmp(argv[k], "--seed") == 0 && k + 1 < argc)
      o.seed = strtoull(argv[++k], NULL, 0);
    else if (strcmp(argv[k], "--verbose") == 0)
      o.verbose = true;
    else if (strcmp(argv[k], "--all-checked") == 0)
      o.all_checked = true;
    else if (strcmp(argv[k], "--only") == 0 && k + 1 < argc)
      o.only = argv[++k];
    else if (strcmp(argv[k], "--run-passes") == 0 && k + 1 < argc)
      o.run_passes = argv[++k];
    else if (argv[k][0] != '-')
      vec_push(&dirs, argv[k]);
    else {
      fprintf(stderr, "usage: pipeline_diff [--mem-budget B] [--time-budget S] "
                      "[--seed N] [--run-passes A,B] [--verbose] [--only SUB] "
                      "[--all-checked] DIR...\n");
      return 2;
    }
  }
  if (dirs.len == 0) {
    fprintf(stderr, "pipeline_diff: no corpus directory\n");
    return 2;
  }
  StrVec files = {0};
  for (int di = 0; di < dirs.len; di++) {
    const char *dir = dirs.data[di];
    DIR *dp = opendir(dir);
    if (!dp) {
      fprintf(stderr, "pipeline_diff: cannot open %s: %s\n", dir,
              strerror(errno));
      printf("0 passed, 1 failed\n");
      return 1;
    }
    StrVec names = {0};
    struct dirent *de;
    while ((de = readdir(dp))) {
      size_t l = strlen(de->d_name);
      if (l > 4 && strcmp(de->d_name + l - 4, ".hlo") == 0 &&
          (!o.only || strstr(de->d_name, o.only)))
        vec_push(&names, xstrdup(de->d_name));
    }
    closedir(dp);
    qsort(names.data, (size_t)names.len, sizeof(char *), cmp_str);
    for (int k = 0; k < names.len; k++) {
      StrBuf p;
      sb_init(&p);
      sb_printf(&p, "%s/%s", dir, names.data[k]);
      vec_push(&files, sb_detach(&p));
      free(names.data[k]);
    }
    vec_free(&names);
  }
  vec_free(&dirs);

  int n_checked = 0, n_rng = 0, n_placeholder = 0, n_unchecked = 0, n_skip = 0,
      n_fail = 0;
  StrVec failures = {0};
  for (int f = 0; f < files.len; f++) {
    const char *path = files.data[f];
    int pfd[2];
    if (pipe(pfd) != 0) {
      perror("pipe");
      return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      close(pfd[0]);
      alarm((unsigned)(o.time_budget * 4 + 60));
      child(path, &o, pfd[1]);
    }
    close(pfd[1]);
    FILE *in = fdopen(pfd[0], "r");
    char line[8192];
    int seen = 0;
    while (fgets(line, sizeof line, in)) {
      size_t l = strlen(line);
      if (l && line[l - 1] == '\n')
        line[--l] = 0;
      seen++;
      if (strncmp(line, "CHECKED", 7) == 0) {
        n_checked++;
      } else if (strcmp(line, "RNG") == 0) {
        n_rng++;
      } else if (strcmp(line, "PLACEHOLDER") == 0) {
        n_placeholder++;
      } else if (strncmp(line, "UNCHECKED", 9) == 0 && !o.all_checked) {
        n_unchecked++;
      } else if (strncmp(line, "SKIPPED", 7) == 0 && !o.all_checked) {
        n_skip++;
      } else {
        n_fail++;
        char msg[8400];
        snprintf(msg, sizeof msg, "%s: %s", files.data[f], line);
        vec_push(&failures, xstrdup(msg));
      }
      if (o.verbose)
        printf("%s: %s\n", files.data[f], line);
    }
    fclose(in);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      n_fail++;
      char msg[4200];
      if (WIFSIGNALED(status))
        snprintf(msg, sizeof msg, "%s: CRASHED with signal %d (%s) after %d module(s)",
                 files.data[f], WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? "hard timeout"
                                             : strsignal(WTERMSIG(status)),
                 seen);
      else
        snprintf(msg, sizeof msg, "%s: child exited with status %d",
                 files.data[f], WEXITSTATUS(status));
      vec_push(&failures, xstrdup(msg));
      if (o.verbose)
        printf("%s\n", msg);
    }
  }
  printf("pipeline diff: %d files: %d modules checked against the interpreter, "
         "%d with rng (values compared: the expanded rng draws the "
         "interpreter's numbers), %d with elided constants whose "
         "placeholder values give other results (ran; result shapes "
         "compared), %d optimized but not checked "
         "(interpreter budget or unsupported op), %d skipped (front end "
         "rejects), %d FAILED\n",
         files.len, n_checked, n_rng, n_placeholder, n_unchecked, n_skip,
         n_fail);
  for (int k = 0; k < failures.len; k++) {
    printf("FAILED: %s\n", failures.data[k]);
    free(failures.data[k]);
  }
  vec_free(&failures);
  printf("%d passed, %d failed\n",
         n_checked + n_rng + n_placeholder + n_unchecked + n_skip,
         n_fail);
  for (int k = 0; k < files.len; k++)
    free(files.data[k]);
  vec_free(&files);
  return n_fail ? 1 : 0;
}
