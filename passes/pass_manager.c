/*
 * pass_manager.c - running pipelines (XLA's HloPassPipeline and HloPassFix):
 * pass selection, fixed points, the verifier between passes, dumps and the
 * timing table.
 *
 * Selection.  --passes=RE keeps the pipeline passes whose whole name matches
 * RE; --disable-passes=RE drops those whose whole name matches.  Nested
 * pipelines are always entered (their passes are filtered one by one), as
 * XLA's --xla_enable_hlo_passes_only does.  --run-passes=a,b,c replaces the
 * default pipeline by one pipeline "transforms_pipeline" of exactly those
 * passes (hlo-opt's --passes).
 *
 * Dumps follow XLA's hlo_pass_pipeline.cc and dump.cc.  Each pipeline run
 * first dumps "after_pipeline-start.before_<first pass>"; after each pass it
 * dumps "after_<pass>.before_<next pass or pipeline-end>" when the dump regex
 * is not exactly ".*" or the pass changed the module.  A dump is written when
 * the regex matches (anywhere, RE2::PartialMatch) the name of the pass before
 * or after it.  Files are module_NNNN.<module>.SSSS.<pipeline>.after_<a>.
 * before_<b>.txt with SSSS counting the module's dumps from 0000.
 */
#include "passes.h"

#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../lib/hlo/ir_edit.h"

enum { DEFAULT_FIX_LIMIT = 25 };

static const char pipeline_start[] = "pipeline-start";
static const char pipeline_end[] = "pipeline-end";

typedef struct Timing {
  const char *name;               /* pass or "pipeline <name>" */
  bool is_pipeline;
  int runs, changed;
  double seconds;
} Timing;

typedef struct Run {
  HloModule *m;
  const PipelineOptions *o;
  Diag *d;
  PassContext ctx;
  regex_t keep, drop, dump;
  bool has_keep, has_drop, has_dump;
  bool dump_all;                  /* the dump regex is exactly ".*" */
  int step;                       /* the module's dump counter */
  Vec(Timing) times;
} Run;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Compiles re; whole-name matching anchors it. */
static bool compile_re(regex_t *r, const char *re, bool whole, const char *what,
                       Diag *d) {
  StrBuf b;
  sb_init(&b);
  if (whole)
    sb_printf(&b, "^(%s)$", re);
  else
    sb_puts(&b, re);
  int rc = regcomp(r, b.s, REG_EXTENDED | REG_NOSUB);
  sb_free(&b);
  if (rc != 0) {
    char msg[256];
    regerror(rc, r, msg, sizeof msg);
    return diag_error(d, (Loc){0}, "invalid regular expression '%s' for %s: %s",
                      re, what, msg);
  }
  return true;
}

static bool re_match(const regex_t *r, const char *s) {
  return regexec(r, s, 0, NULL, 0) == 0;
}

/* Known pass names, for messages. */
static void known_passes(StrBuf *b) {
  for (int k = 0; k < pass_count(); k++)
    sb_printf(b, "%s%s", k ? ", " : "", pass_at(k)->name);
}

/* Every name of the comma-separated list is a registered pass. */
static bool check_run_passes(const char *list, Diag *d) {
  const char *p = list;
  if (!*p)
    return diag_error(d, (Loc){0}, "--run-passes needs at least one pass name");
  for (;;) {
    const char *q = strchr(p, ',');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    char *name = xstrndup(p, n);
    bool ok = pass_find(name) != NULL;
    if (!ok) {
      StrBuf b;
      sb_init(&b);
      known_passes(&b);
      diag_error(d, (Loc){0}, "unknown pass '%s' (known passes: %s)", name, b.s);
      sb_free(&b);
    }
    free(name);
    if (!ok)
      return false;
    if (!q)
      return true;
    p = q + 1;
  }
}

bool pipeline_check_options(const PipelineOptions *o, Diag *d) {
  regex_t r;
  if (o->passes_re) {
    if (!compile_re(&r, o->passes_re, true, "--passes", d))
      return false;
    regfree(&r);
  }
  if (o->disable_re) {
    if (!compile_re(&r, o->disable_re, true, "--disable-passes", d))
      return false;
    regfree(&r);
  }
  if (o->dump_pass_re) {
    if (!compile_re(&r, o->dump_pass_re, false, "--dump-pass-re", d))
      return false;
    regfree(&r);
  }
  if (o->run_passes && !check_run_passes(o->run_passes, d))
    return false;
  return true;
}

/*
 * Dumps
 */

/* XLA's SanitizeFileName, made stricter: anything but [A-Za-z0-9._-]
 * becomes '_'. */
static void put_sanitized(StrBuf *b, const char *s) {
  for (; *s; s++) {
    char c = *s;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    sb_putc(b, ok ? c : '_');
  }
}

static bool write_file(const char *path, const char *data, size_t len,
                       Diag *d) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return diag_error(d, (Loc){0}, "cannot write '%s': %s", path,
                      strerror(errno));
  bool ok = fwrite(data, 1, len, f) == len;
  ok &= fclose(f) == 0;
  if (!ok)
    return diag_error(d, (Loc){0}, "cannot write '%s': %s", path,
                      strerror(errno));
  return true;
}

static bool make_dir(const char *dir, Diag *d) {
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, dir);
  /* mkdir -p */
  for (size_t k = 1; k <= b.len; k++) {
    if (b.s[k] != '/' && b.s[k] != '\0')
      continue;
    char save = b.s[k];
    b.s[k] = '\0';
    if (mkdir(b.s, 0777) != 0 && errno != EEXIST) {
      diag_error(d, (Loc){0}, "cannot create directory '%s': %s", b.s,
                 strerror(errno));
      sb_free(&b);
      return false;
    }
    b.s[k] = save;
  }
  sb_free(&b);
  return true;
}

static bool dump_named(const HloModule *m, const PipelineOptions *o,
                       const char *suffix, Diag *d) {
  if (!make_dir(o->dump_to, d))
    return false;
  StrBuf name;
  sb_init(&name);
  sb_printf(&name, "module_%04d.", o->module_id);
  if (m->name && *m->name && strlen(m->name) + strlen(suffix) < 200) {
    put_sanitized(&name, m->name);
    sb_putc(&name, '.');
  }
  put_sanitized(&name, suffix);
  sb_puts(&name, ".txt");
  StrBuf path;
  sb_init(&path);
  sb_printf(&path, "%s/%s", o->dump_to, name.s);
  StrBuf text;
  sb_init(&text);
  hlo_print_module(&text, m, &print_options_default);
  bool ok = write_file(path.s, text.s ? text.s : "", text.len, d);
  sb_free(&text);
  sb_free(&path);
  sb_free(&name);
  return ok;
}

bool pipeline_dump(const HloModule *m, const PipelineOptions *o,
                   const char *suffix, Diag *d) {
  if (!o->dump_to)
    return true;
  return dump_named(m, o, suffix, d);
}

/* DumpHloModuleBetweenPassesIfEnabled */
static bool dump_between(Run *r, const char *pipeline, const char *after,
                         const char *before) {
  if (!r->o->dump_to || !r->has_dump)
    return true;
  if (!re_match(&r->dump, after) && !re_match(&r->dump, before))
    return true;
  StrBuf s;
  sb_init(&s);
  sb_printf(&s, "%04d.%s.after_%s.before_%s", r->step++, pipeline, after,
            before);
  bool ok = dump_named(r->m, r->o, s.s, r->d);
  sb_free(&s);
  return ok;
}

/*
 * Timing
 */
static Timing *timing(Run *r, const char *name, bool is_pipeline) {
  for (int k = 0; k < r->times.len; k++)
    if (r->times.data[k].is_pipeline == is_pipeline &&
        strcmp(r->times.data[k].name, name) == 0)
      return &r->times.data[k];
  vec_push(&r->times, ((Timing){name, is_pipeline, 0, 0, 0}));
  return &vec_last(&r->times);
}

static void print_times(Run *r) {
  FILE *out = r->o->time_out ? r->o->time_out : stderr;
  double total = 0;
  for (int k = 0; k < r->times.len; k++)
    if (!r->times.data[k].is_pipeline)
      total += r->times.data[k].seconds;
  fprintf(out, "pass timing for module %s:\n", r->m->name ? r->m->name : "");
  fprintf(out, "  %-44s %6s %8s %10s %6s\n", "pass", "runs", "changed",
          "seconds", "%");
  for (int pass = 1; pass >= 0; pass--) {
    if (!pass)
      fprintf(out, "  %-44s %6s %8s %10s %6s\n", "pipeline", "runs", "changed",
              "seconds", "%");
    for (int k = 0; k < r->times.len; k++) {
      Timing *t = &r->times.data[k];
      if (t->is_pipeline == pass)
        continue;
      fprintf(out, "  %-44s %6d %8d %10.6f %6.1f\n", t->name, t->runs,
              t->changed, t->seconds,
              total > 0 ? 100.0 * t->seconds / total : 0.0);
    }
  }
  fprintf(out, "  %-44s %6s %8s %10.6f %6.1f\n", "total (passes)", "", "",
          total, 100.0);
}

/*
 * Running
 */
static const char *step_name(const PipelineStep *s) {
  return s->own ? s->own->name : s->pass ? s->pass : s->sub->name;
}

static bool selected(Run *r, const char *name) {
  if (r->has_keep && !re_match(&r->keep, name))
    return false;
  if (r->has_drop && re_match(&r->drop, name))
    return false;
  return true;
}

/* A pass step that runs: selected, and for the target. */
static bool step_selected(Run *r, const PipelineStep *s) {
  if (s->host_only && r->ctx.target != PASS_TARGET_HOST)
    return false;
  return selected(r, step_name(s));
}

/* Whether the pipeline has any selected pass at all (nested included). */
static bool has_selected(Run *r, const Pipeline *p) {
  for (int k = 0; k < p->nsteps; k++) {
    const PipelineStep *s = &p->steps[k];
    if (s->sub ? has_selected(r, s->sub) : step_selected(r, s))
      return true;
  }
  return false;
}

/* The message of d prefixed with context. */
static void prefix_error(Diag *d, const char *fmt, const char *a,
                         const char *b) {
  if (!d->has_error || !d->msg)
    return;
  StrBuf s;
  sb_init(&s);
  sb_printf(&s, fmt, a, b);
  sb_puts(&s, d->msg);
  free(d->msg);
  d->msg = sb_detach(&s);
}

static bool run_pipeline(Run *r, const Pipeline *p, bool *changed);

/* One run of p's steps (an iteration, for a fixed-point pipeline). */
static bool run_steps(Run *r, const Pipeline *p, bool *changed) {
  *changed = false;
  /* The selected steps, to name the next one in dumps. */
  int n = 0;
  const PipelineStep **steps = xmalloc(sizeof *steps * (size_t)(p->nsteps + 1));
  for (int k = 0; k < p->nsteps; k++) {
    const PipelineStep *s = &p->steps[k];
    if (s->sub ? has_selected(r, s->sub) : step_selected(r, s))
      steps[n++] = s;
  }
  bool ok = dump_between(r, p->name, pipeline_start,
                         n ? step_name(steps[0]) : pipeline_end);
  for (int k = 0; ok && k < n; k++) {
    const PipelineStep *s = steps[k];
    bool step_changed = false;
    double t0 = now();
    if (!s->sub) {
      const Pass *pass = s->own ? s->own : pass_find(s->pass);
      if (!pass)
        die("pipeline '%s' names unknown pass '%s'", p->name, s->pass);
      ok = pass_run(pass, r->m, &r->ctx, &step_changed);
      if (!ok)
        prefix_error(r->d, "in pass '%s' (pipeline '%s'): ", pass->name,
                     p->name);
      if (ok && step_changed && r->o->after_pass)
        r->o->after_pass(r->o->after_pass_arg, pass->name, r->m);
      Timing *t = timing(r, pass->name, false);
      t->runs++;
      t->changed += step_changed;
      t->seconds += now() - t0;
    } else {
      ok = run_pipeline(r, s->sub, &step_changed);
    }
    if (!ok)
      break;
    if (r->o->dump_to && r->has_dump && (step_changed || !r->dump_all))
      ok = dump_between(r, p->name, step_name(s),
                        k + 1 < n ? step_name(steps[k + 1]) : pipeline_end);
    if (ok && step_changed && !s->sub && r->o->verify_each) {
      ok = hlo_verify(r->m, r->d);
      if (!ok)
        prefix_error(r->d, "verifier failed after pass '%s' (pipeline '%s'): ",
                     step_name(s), p->name);
    }
    *changed |= step_changed;
  }
  free(steps);
  return ok;
}

static bool run_pipeline(Run *r, const Pipeline *p, bool *changed) {
  double t0 = now();
  bool ok = true;
  *changed = false;
  int runs = 0;
  if (!p->fixed_point) {
    ok = run_steps(r, p, changed);
    runs = 1;
  } else {
    int limit = r->o->fix_limit > 0 ? r->o->fix_limit : DEFAULT_FIX_LIMIT;
    bool again = true;
    while (ok && again) {
      if (runs == limit) {
        ok = diag_error(r->d, (Loc){0},
                        "pipeline '%s' did not reach a fixed point within %d "
                        "iterations on module '%s'",
                        p->name, limit, r->m->name ? r->m->name : "");
        break;
      }
      ok = run_steps(r, p, &again);
      runs++;
      *changed |= again;
    }
  }
  StrBuf name;
  sb_init(&name);
  sb_printf(&name, "%s%s", p->name, p->fixed_point ? " (fixed point)" : "");
  /* Timing names must outlive the run: keep one copy per pipeline. */
  Timing *t = NULL;
  for (int k = 0; k < r->times.len; k++)
    if (r->times.data[k].is_pipeline &&
        strcmp(r->times.data[k].name, name.s) == 0)
      t = &r->times.data[k];
  if (!t) {
    t = timing(r, arena_strdup(r->m->arena, name.s), true);
  }
  sb_free(&name);
  t->runs += runs;
  t->changed += *changed;
  t->seconds += now() - t0;
  return ok;
}

bool pipeline_run_list(HloModule *m, int n, const Pipeline *const *pipes,
                       const PipelineOptions *o, Diag *d) {
  if (m->is_scheduled && !o->force)
    return true;
  Run r = {0};
  r.m = m;
  r.o = o;
  r.d = d;
  r.ctx.diag = d;
  r.ctx.target = o->target;
  r.ctx.all_reduce_combine_threshold = o->all_reduce_combine_threshold;
  bool ok = true;
  if (o->passes_re)
    ok = r.has_keep = compile_re(&r.keep, o->passes_re, true, "--passes", d);
  if (ok && o->disable_re)
    ok = r.has_drop =
        compile_re(&r.drop, o->disable_re, true, "--disable-passes", d);
  if (ok && o->dump_pass_re) {
    ok = r.has_dump =
        compile_re(&r.dump, o->dump_pass_re, false, "--dump-pass-re", d);
    r.dump_all = strcmp(o->dump_pass_re, ".*") == 0;
  }
  if (ok)
    ok = pipeline_dump(m, o, "before_optimizations", d);
  for (int k = 0; ok && k < n; k++) {
    bool changed;
    ok = run_pipeline(&r, pipes[k], &changed);
  }
  if (ok)
    ok = pipeline_dump(m, o, "after_optimizations", d);
  if (o->time_passes && r.times.len > 0)
    print_times(&r);
  vec_free(&r.times);
  if (r.has_keep)
    regfree(&r.keep);
  if (r.has_drop)
    regfree(&r.drop);
  if (r.has_dump)
    regfree(&r.dump);
  return ok;
}

bool pipeline_run(HloModule *m, const PipelineOptions *o, Diag *d) {
  if (!o->run_passes) {
    const Pipeline *const *pipes;
    int n = pipeline_default(&pipes);
    return pipeline_run_list(m, n, pipes, o, d);
  }
  /* --run-passes: one pipeline of exactly the named passes. */
  if (!check_run_passes(o->run_passes, d))
    return false;
  int n = 1;
  for (const char *p = o->run_passes; *p; p++)
    n += *p == ',';
  PipelineStep *steps = xcalloc((size_t)n, sizeof *steps);
  const char *p = o->run_passes;
  for (int k = 0; k < n; k++) {
    const char *q = strchr(p, ',');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    char *name = xstrndup(p, len);
    steps[k].pass = pass_find(name)->name;
    free(name);
    p = q ? q + 1 : p + len;
  }
  Pipeline transforms = {"transforms_pipeline", false, n, steps};
  const Pipeline *one = &transforms;
  bool ok = pipeline_run_list(m, 1, &one, o, d);
  free(steps);
  return ok;
}
