/*
 * test_passes.c - the pass framework: the registry, the default pipeline's
 * names, fixed points and their cap, the verifier between passes, pass
 * selection, and a few passes run straight from C on parsed modules.
 */
#include <criterion/criterion.h>

#include "../../passes/passes.h"

#include <stdlib.h>
#include <string.h>

/* Sources stay alive while their modules do (locations point into them). */
static PtrVec sources;

static void free_sources(void) {
  for (int k = 0; k < sources.len; k++)
    srcfile_free(sources.data[k]);
  vec_free(&sources);
}

TestSuite(registry);
TestSuite(pipeline, .fini = free_sources);

static HloModule *parse(const char *text) {
  Diag d = {0};
  SrcFile *src = srcfile_from_string("test.hlo", text, strlen(text));
  vec_push(&sources, src);
  HloModule **mods = NULL;
  ParseOptions po = {.strip_glog_prefixes = true};
  int n = hlo_parse(src, &po, &mods, &d);
  if (n != 1) {
    diag_print(&d, stderr);
    cr_assert_fail("parse failed");
  }
  cr_assert(hlo_verify(mods[0], &d), "%s", d.msg ? d.msg : "");
  HloModule *m = mods[0];
  free(mods);
  return m;
}

static char *print(const HloModule *m) {
  StrBuf b;
  sb_init(&b);
  PrintOptions o = print_options_default;
  o.print_metadata = false;
  hlo_print_module(&b, m, &o);
  return sb_detach(&b);
}

static const char simple[] =
    "HloModule simple\n"
    "ENTRY main {\n"
    "  p0 = f32[4] parameter(0)\n"
    "  z = f32[] constant(0)\n"
    "  b = f32[4] broadcast(z), dimensions={}\n"
    "  dead = f32[4] negate(p0)\n"
    "  ROOT a = f32[4] add(p0, b)\n"
    "}\n";

Test(registry, sorted_and_findable) {
  cr_assert_geq(pass_count(), 27);
  for (int k = 1; k < pass_count(); k++)
    cr_expect_lt(strcmp(pass_at(k - 1)->name, pass_at(k)->name), 0, "%s %s",
                 pass_at(k - 1)->name, pass_at(k)->name);
  for (int k = 0; k < pass_count(); k++)
    cr_expect_eq(pass_find(pass_at(k)->name), pass_at(k));
  cr_expect_null(pass_find("no-such-pass"));
  cr_expect_null(pass_at(pass_count()));
}

/* Every pass the default pipeline names is registered. */
static void check_names(const Pipeline *p) {
  for (int k = 0; k < p->nsteps; k++) {
    const PipelineStep *s = &p->steps[k];
    if (s->sub)
      check_names(s->sub);
    else
      cr_expect_not_null(pass_find(s->pass), "pipeline %s: %s", p->name,
                         s->pass);
  }
}

Test(pipeline, default_names_are_registered) {
  const Pipeline *const *pipes;
  int n = pipeline_default(&pipes);
  cr_assert_gt(n, 0);
  for (int k = 0; k < n; k++)
    check_names(pipes[k]);
}

/* A pass that always claims a change: a fixed point never comes. */
static int restless_runs;
static bool restless(HloModule *m, PassContext *ctx) {
  (void)m;
  (void)ctx;
  restless_runs++;
  return true;
}

/* A pass that changes the module a given number of times, then stops. */
static int settle_left;
static bool settle(HloModule *m, PassContext *ctx) {
  (void)m;
  (void)ctx;
  if (settle_left == 0)
    return false;
  settle_left--;
  return true;
}

/* A pass that breaks the module (a root with the wrong shape). */
static bool breaker(HloModule *m, PassContext *ctx) {
  (void)ctx;
  HloComp *c = m->entry;
  c->root->shape = shape_scalar(m->arena, ET_S32);
  return true;
}

/* A pass that fails with an error. */
static bool failing(HloModule *m, PassContext *ctx) {
  (void)m;
  diag_error(ctx->diag, (Loc){0}, "it went wrong");
  return false;
}

static const Pass restless_pass = {"restless", restless};
static const Pass settle_pass = {"settle", settle};
static const Pass breaker_pass = {"breaker", breaker};
static const Pass failing_pass = {"failing", failing};

Test(pipeline, fixed_point_cap_is_an_error) {
  HloModule *m = parse(simple);
  const PipelineStep steps[] = {{NULL, NULL, &restless_pass, false}};
  const Pipeline fix = {"fix", true, 1, steps};
  const Pipeline *p = &fix;
  PipelineOptions o = {.fix_limit = 7};
  Diag d = {0};
  restless_runs = 0;
  cr_assert_not(pipeline_run_list(m, 1, &p, &o, &d));
  cr_expect_eq(restless_runs, 7);
  cr_expect(strstr(d.msg, "did not reach a fixed point within 7 iterations") !=
            NULL, "%s", d.msg);
  diag_clear(&d);
  hlo_module_free(m);
}

Test(pipeline, fixed_point_reruns_until_no_change) {
  HloModule *m = parse(simple);
  const PipelineStep steps[] = {{NULL, NULL, &settle_pass, false},
                                {NULL, NULL, &restless_pass, false}};
  const Pipeline fix = {"fix", true, 1, steps};
  const Pipeline *p = &fix;
  PipelineOptions o = {0};
  Diag d = {0};
  settle_left = 3;
  cr_assert(pipeline_run_list(m, 1, &p, &o, &d));
  cr_expect_eq(settle_left, 0);
  hlo_module_free(m);
}

Test(pipeline, verify_each_catches_a_broken_pass) {
  HloModule *m = parse(simple);
  const PipelineStep steps[] = {{NULL, NULL, &breaker_pass, false}};
  const Pipeline pl = {"broken", false, 1, steps};
  const Pipeline *p = &pl;
  PipelineOptions o = {.verify_each = true};
  Diag d = {0};
  cr_assert_not(pipeline_run_list(m, 1, &p, &o, &d));
  cr_expect(strstr(d.msg, "verifier failed after pass 'breaker' (pipeline "
                          "'broken')") != NULL,
            "%s", d.msg);
  diag_clear(&d);
  hlo_module_free(m);
}

Test(pipeline, a_failing_pass_stops_the_pipeline) {
  HloModule *m = parse(simple);
  const PipelineStep steps[] = {{NULL, NULL, &failing_pass, false},
                                {NULL, NULL, &restless_pass, false}};
  const Pipeline pl = {"p", false, 2, steps};
  const Pipeline *p = &pl;
  PipelineOptions o = {0};
  Diag d = {0};
  restless_runs = 0;
  cr_assert_not(pipeline_run_list(m, 1, &p, &o, &d));
  cr_expect_eq(restless_runs, 0);
  cr_expect_str_eq(d.msg, "in pass 'failing' (pipeline 'p'): it went wrong");
  diag_clear(&d);
  hlo_module_free(m);
}

Test(pipeline, selection_filters_passes) {
  HloModule *m = parse(simple);
  const PipelineStep steps[] = {{NULL, NULL, &restless_pass, false}};
  const Pipeline pl = {"p", false, 1, steps};
  const Pipeline *p = &pl;
  Diag d = {0};
  restless_runs = 0;
  PipelineOptions keep = {.passes_re = "rest"}; /* not the whole name */
  cr_assert(pipeline_run_list(m, 1, &p, &keep, &d));
  cr_expect_eq(restless_runs, 0);
  PipelineOptions whole = {.passes_re = "rest.*"};
  cr_assert(pipeline_run_list(m, 1, &p, &whole, &d));
  cr_expect_eq(restless_runs, 1);
  PipelineOptions drop = {.disable_re = "restless|other"};
  cr_assert(pipeline_run_list(m, 1, &p, &drop, &d));
  cr_expect_eq(restless_runs, 1);
  hlo_module_free(m);
}

Test(pipeline, check_options) {
  Diag d = {0};
  PipelineOptions ok = {.passes_re = "a|b", .run_passes = "dce,cse"};
  cr_expect(pipeline_check_options(&ok, &d));
  PipelineOptions bad = {.run_passes = "dce,bogus"};
  cr_expect_not(pipeline_check_options(&bad, &d));
  cr_expect(strstr(d.msg, "unknown pass 'bogus' (known passes: algsimp,") != NULL,
            "%s", d.msg);
  diag_clear(&d);
  PipelineOptions empty = {.run_passes = "dce,"};
  cr_expect_not(pipeline_check_options(&empty, &d));
  diag_clear(&d);
  PipelineOptions badre = {.disable_re = "a("};
  cr_expect_not(pipeline_check_options(&badre, &d));
  diag_clear(&d);
}

Test(pipeline, scheduled_module_is_left_alone) {
  HloModule *m = parse(simple);
  m->is_scheduled = true;
  char *before = print(m);
  Diag d = {0};
  PipelineOptions o = {0};
  cr_assert(pipeline_run(m, &o, &d));
  char *after = print(m);
  cr_expect_str_eq(after, before);
  free(after);
  o.force = true;
  cr_assert(pipeline_run(m, &o, &d));
  after = print(m);
  cr_expect_str_neq(after, before);
  cr_expect(strstr(after, "ROOT %p0 = f32[4]{0} parameter(0)") != NULL, "%s",
            after);
  free(after);
  free(before);
  hlo_module_free(m);
}

Test(pipeline, default_pipeline_simplifies) {
  HloModule *m = parse(simple);
  Diag d = {0};
  PipelineOptions o = {.verify_each = true};
  cr_assert(pipeline_run(m, &o, &d), "%s", d.msg ? d.msg : "");
  cr_expect_eq(m->entry->ninstrs, 1);
  cr_expect_eq(m->entry->root->op, HLO_PARAMETER);
  hlo_module_free(m);
}

/* Running the pipeline twice changes nothing the second time. */
Test(pipeline, idempotent) {
  static const char ordered[] =
      "HloModule twice\n"
      "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b) }\n"
      "neg { x = f32[8] parameter(0)\n ROOT n = f32[8] negate(x) }\n"
      "ENTRY main {\n"
      "  p0 = f32[8,4] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  t = f32[4,8] transpose(p0), dimensions={1,0}\n"
      "  t2 = f32[8,4] transpose(t), dimensions={1,0}\n"
      "  r = f32[8] reduce(t2, z), dimensions={1}, to_apply=add\n"
      "  c = f32[8] call(r), to_apply=neg\n"
      "  ROOT e = f32[8] exponential(c)\n"
      "}\n";
  HloModule *m = parse(ordered);
  Diag d = {0};
  PipelineOptions o = {.verify_each = true};
  cr_assert(pipeline_run(m, &o, &d), "%s", d.msg ? d.msg : "");
  char *once = print(m);
  cr_expect(strstr(once, "call(") == NULL, "%s", once);
  cr_expect(strstr(once, "transpose(") == NULL, "%s", once);
  cr_assert(pipeline_run(m, &o, &d));
  char *twice = print(m);
  cr_expect_str_eq(twice, once);
  free(once);
  free(twice);
  hlo_module_free(m);
}

/* The names of c's instructions in order, space-separated (heap). */
static char *order_of(const HloComp *c) {
  StrBuf b;
  sb_init(&b);
  for (int k = 0; k < c->ninstrs; k++)
    sb_printf(&b, "%s%s", k ? " " : "", c->instrs[k]->name);
  return sb_detach(&b);
}

static bool run_pass(const char *name, HloModule *m) {
  const Pass *p = pass_find(name);
  cr_assert_not_null(p, "%s", name);
  Diag d = {0};
  PassContext ctx = {.diag = &d};
  bool changed;
  cr_assert(pass_run(p, m, &ctx, &changed), "%s", d.msg ? d.msg : "");
  cr_assert(hlo_verify(m, &d), "%s", d.msg ? d.msg : "");
  return changed;
}

/* Two 64 KiB results each reduced to 256 bytes: computed first, both are
 * live at once; interleaved, one at a time. */
static const char memory_bad[] =
    "HloModule memory_bad\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b) }\n"
    "ENTRY main {\n"
    "  p = f32[64,256] parameter(0)\n"
    "  z = f32[] constant(0)\n"
    "  e = f32[64,256] exponential(p)\n"
    "  t = f32[64,256] tanh(p)\n"
    "  re = f32[64] reduce(e, z), dimensions={1}, to_apply=add\n"
    "  rt = f32[64] reduce(t, z), dimensions={1}, to_apply=add\n"
    "  ROOT r = f32[64] add(re, rt)\n"
    "}\n";

Test(pipeline, memory_scheduler_interleaves) {
  HloModule *m = parse(memory_bad);
  cr_assert(run_pass("hlo-memory-scheduler", m));
  char *order = order_of(m->entry);
  cr_expect_str_eq(order, "p z e re t rt r");
  free(order);
  /* its own order is as good as it finds: a second run keeps it */
  cr_expect_not(run_pass("hlo-memory-scheduler", m));
  /* and latency-hiding-scheduler, with no collective to move, too */
  char *before = print(m);
  cr_expect_not(run_pass("latency-hiding-scheduler", m));
  char *after = print(m);
  cr_expect_str_eq(after, before);
  free(before);
  free(after);
  hlo_module_free(m);
}

/* A module already in its best order is left exactly as it is (ties keep
 * the existing order, whatever the other candidates give). */
Test(pipeline, memory_scheduler_keeps_a_good_order) {
  static const char good[] =
      "HloModule good\n"
      "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b) }\n"
      "ENTRY main {\n"
      "  z = f32[] constant(0)\n"
      "  p = f32[64,256] parameter(0)\n"
      "  t = f32[64,256] tanh(p)\n"
      "  rt = f32[64] reduce(t, z), dimensions={1}, to_apply=add\n"
      "  e = f32[64,256] exponential(p)\n"
      "  re = f32[64] reduce(e, z), dimensions={1}, to_apply=add\n"
      "  ROOT r = f32[64] add(re, rt)\n"
      "}\n";
  HloModule *m = parse(good);
  char *before = print(m);
  cr_expect_not(run_pass("hlo-memory-scheduler", m));
  char *after = print(m);
  cr_expect_str_eq(after, before);
  free(before);
  free(after);
  hlo_module_free(m);
}

/* The default pipeline ends with the schedule: the order of the fewest
 * live bytes, loop counters' updates last in their bodies, then the
 * collectives moved within it. */
Test(pipeline, scheduling_runs_the_memory_scheduler) {
  const Pipeline *const *pipes;
  int n = pipeline_default(&pipes);
  const Pipeline *last = pipes[n - 1];
  cr_assert_str_eq(last->name, "scheduling");
  cr_assert_geq(last->nsteps, 3);
  cr_expect_str_eq(last->steps[0].pass, "hlo-memory-scheduler");
  cr_expect_str_eq(last->steps[1].pass, "loop-update-sinking");
  cr_expect_str_eq(last->steps[2].pass, "latency-hiding-scheduler");
}
