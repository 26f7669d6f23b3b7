/*
 * test_runtime.c - the executor on the host platform (lib/runtime): kernel
 * thunks, copies, memsets, a while loop with a counter, conditionals on a
 * pred and on an s32 index (out of range runs the last branch), constants,
 * tuple results, parameters and results with non-default layouts, the
 * layout permutation itself, profiling (calls, nesting, the summary table,
 * bytes, the trace's events in order), inputs kept on the device between
 * runs (executor_set_keep_inputs) and results left there (no result
 * literal), and the refusals (bad inputs, a kernel
 * the file lacks, a slice outside its allocation).
 *
 * Artifacts are built in memory; the kernels are C functions with the host
 * calling convention (void name(void **args, int64_t lo, int64_t hi), one
 * work unit each) compiled here into a shared
 * object with `cc -shared -fPIC`.  Expected values are worked out by hand.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/eval/eval.h"
#include "../../lib/runtime/platform.h"
#include "../../lib/runtime/profile.h"

static const char kernels_c[] =
  "#include <stdint.h>\n"
  "#include <string.h>\n"
  "void add4(void **a, int64_t lo, int64_t hi) { float *x = a[0], *y = a[1], *o = a[2];\n"
  "  for (int i = 0; i < 4; i++) o[i] = x[i] + y[i]; }\n"
  "void copy24(void **a, int64_t lo, int64_t hi) { memcpy(a[1], a[0], 24); }\n"
  "void lt(void **a, int64_t lo, int64_t hi) { int *c = a[0], *n = a[1];\n"
  "  unsigned char *p = a[2]; *p = *c < *n; }\n"
  "void inc(void **a, int64_t lo, int64_t hi) { int *c = a[0], *o = a[1]; *o = *c + 1; }\n"
  "void dbl4(void **a, int64_t lo, int64_t hi) { float *x = a[0], *o = a[1];\n"
  "  for (int i = 0; i < 4; i++) o[i] = 2 * x[i]; }\n";

static char Dir[64];
static char SoPath[128];
static uint8_t *SoBytes;
static size_t SoLen;
static Artifact *Art;
static Platform *Plat;
static Executor *Ex;
static Arena *Out;
static Diag D;

static void setup(void) {
  strcpy(Dir, "/tmp/xhlo-rt-XXXXXX");
  cr_assert(mkdtemp(Dir));
  char src[128], cmd[512];
  snprintf(src, sizeof src, "%s/k.c", Dir);
  snprintf(SoPath, sizeof SoPath, "%s/k.host.so", Dir);
  FILE *f = fopen(src, "w");
  cr_assert(f);
  fputs(kernels_c, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o %s %s", SoPath, src);
  cr_assert_eq(system(cmd), 0, "cannot compile the test kernels");
  f = fopen(SoPath, "rb");
  cr_assert(f);
  fseek(f, 0, SEEK_END);
  SoLen = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  SoBytes = xmalloc(SoLen);
  cr_assert_eq(fread(SoBytes, 1, SoLen, f), SoLen);
  fclose(f);
  Art = artifact_new();
  Art->module_name = "test";
  Art->target = "host";
  Art->kernel_file = "k.host.so";
  Art->allocs = ARENA_ARRAY(Art->arena, BufAlloc, 16);
  Art->params = ARENA_ARRAY(Art->arena, ArtLeaf, 8);
  Art->outputs = ARENA_ARRAY(Art->arena, ArtLeaf, 8);
  Art->consts = ARENA_ARRAY(Art->arena, ArtConstant, 8);
  Art->entry.thunks = ARENA_ARRAY(Art->arena, Thunk, 8);
  Plat = platform_host_new(NULL, &D);
  Out = arena_new();
}

static void teardown(void) {
  executor_free(Ex);
  Ex = NULL;
  platform_free(Plat);
  artifact_free(Art);
  arena_free(Out);
  free(SoBytes);
  diag_clear(&D);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", Dir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", Dir);
}

TestSuite(runtime, .init = setup, .fini = teardown);

/*
 * Building artifacts
 */
static int alloc(int64_t size, unsigned flags) {
  BufAlloc *a = &Art->allocs[Art->nallocs];
  a->size = size;
  a->flags = flags;
  return Art->nallocs++;
}

static BufSlice sl(int alloc_index, int64_t offset, int64_t size) {
  return (BufSlice){alloc_index, offset, size};
}

/* A parameter leaf in an allocation of its own; returns the allocation. */
static int param(const char *shape, int64_t size) {
  int k = alloc(size, ALLOC_PARAMETER);
  Art->allocs[k].param_number = Art->nparams;
  Art->allocs[k].param_shape = arena_strdup(Art->arena, shape);
  Art->params[Art->nparams++] = (ArtLeaf){sl(k, 0, size), arena_strdup(Art->arena, shape)};
  return k;
}

static void output(BufSlice s, const char *shape) {
  Art->allocs[s.alloc].flags |= ALLOC_OUTPUT;
  Art->outputs[Art->noutputs++] = (ArtLeaf){s, arena_strdup(Art->arena, shape)};
}

static ThunkSeq *seq(int n) {
  ThunkSeq *s = ARENA_NEW(Art->arena, ThunkSeq);
  s->thunks = ARENA_ARRAY(Art->arena, Thunk, n);
  return s;
}

static Thunk *push(ThunkSeq *s, ThunkKind kind, const char *ann) {
  Thunk *t = &s->thunks[s->n++];
  t->kind = kind;
  t->annotation = arena_strdup(Art->arena, ann);
  return t;
}

static Thunk *kernel(ThunkSeq *s, const char *name, int nargs, const BufSlice *args) {
  Thunk *t = push(s, THUNK_KERNEL, name);
  t->kernel_name = arena_strdup(Art->arena, name);
  t->nargs = nargs;
  t->args = arena_memdup(Art->arena, args, sizeof *args * (size_t)nargs);
  t->written = ARENA_ARRAY(Art->arena, bool, nargs);
  t->written[nargs - 1] = true;
  for (int k = 0; k < 3; k++) t->grid[k] = t->block[k] = 1;
  return t;
}

static Thunk *memset32(ThunkSeq *s, BufSlice dst, uint32_t v) {
  Thunk *t = push(s, THUNK_MEMSET32, "memset");
  t->dst = dst;
  t->memset_value = v;
  return t;
}

static Thunk *copy(ThunkSeq *s, BufSlice src, BufSlice dst) {
  Thunk *t = push(s, THUNK_COPY, "copy");
  t->src = src;
  t->dst = dst;
  return t;
}

static Executor *make_executor(void) {
  Ex = executor_new(Art, Plat, SoBytes, SoLen, SoPath, &D);
  cr_assert(Ex, "executor_new: %s", D.msg ? D.msg : "?");
  return Ex;
}

static Literal *lit(const char *spec, const char *shape) {
  Shape *s = hlo_parse_shape(Out, shape, &D);
  cr_assert(s, "%s", D.msg ? D.msg : "?");
  Literal *l = io_parse_input(Out, spec, s, &D);
  cr_assert(l, "%s", D.msg ? D.msg : "?");
  return l;
}

static Literal *run1(Literal *const *in) {
  Literal *r = NULL;
  cr_assert(executor_run(Ex, in, Out, &r, &D), "run: %s", D.msg ? D.msg : "?");
  return r;
}

static float f32_at(const Literal *l, int k) {
  float v;
  memcpy(&v, l->data + 4 * k, 4);
  return v;
}

static int32_t s32_at(const Literal *l, int k) {
  int32_t v;
  memcpy(&v, l->data + 4 * k, 4);
  return v;
}

/*
 * Tests
 */
Test(runtime, kernel_thunk) {
  int a = param("f32[4]{0}", 16), b = param("f32[4]{0}", 16);
  int o = alloc(16, 0);
  BufSlice args[] = {sl(a, 0, 16), sl(b, 0, 16), sl(o, 0, 16)};
  kernel(&Art->entry, "add4", 3, args);
  output(sl(o, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  make_executor();
  Literal *in[] = {lit("1 2 3 4", "f32[4]"), lit("10 20 30 40.5", "f32[4]")};
  Literal *r = run1(in);
  cr_assert_eq(r->shape->et, ET_F32);
  float want[] = {11, 22, 33, 44.5f};
  for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r, k), want[k]);
  /* a second run with other inputs reuses the buffers */
  Literal *in2[] = {lit("1 1 1 1", "f32[4]"), lit("-1 0 1 2", "f32[4]")};
  r = run1(in2);
  float want2[] = {0, 1, 2, 3};
  for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r, k), want2[k]);
}

Test(runtime, copy_memset_tuple_result) {
  int a = param("f32[4]{0}", 16);
  int o = alloc(32, 0);                   /* both results in one allocation */
  copy(&Art->entry, sl(a, 0, 16), sl(o, 0, 16));
  memset32(&Art->entry, sl(o, 16, 16), 0x3fc00000u);   /* 1.5f */
  output(sl(o, 0, 16), "f32[4]{0}");
  output(sl(o, 16, 16), "f32[4]{0}");
  Art->result_shape = "(f32[4]{0}, f32[4]{0})";
  make_executor();
  Literal *in[] = {lit("5 6 7 8", "f32[4]")};
  Literal *r = run1(in);
  cr_assert_eq(r->shape->et, ET_TUPLE);
  cr_assert_eq(r->ntuple, 2);
  for (int k = 0; k < 4; k++) {
    cr_expect_eq(f32_at(r->tuple[0], k), 5 + k);
    cr_expect_eq(f32_at(r->tuple[1], k), 1.5f);
  }
}

Test(runtime, nested_tuple_result_and_tuple_parameter) {
  /* parameter (f32[4], s32[]) flattened into two leaves */
  int a = param("f32[4]{0}", 16), n = param("s32[]", 4);
  int o = alloc(20, 0);
  kernel(&Art->entry, "dbl4", 2, (BufSlice[]){sl(a, 0, 16), sl(o, 0, 16)});
  copy(&Art->entry, sl(n, 0, 4), sl(o, 16, 4));
  output(sl(o, 16, 4), "s32[]");
  output(sl(o, 0, 16), "f32[4]{0}");
  Art->result_shape = "(s32[], (f32[4]{0}))";
  make_executor();
  Literal *in[] = {lit("1 2 3 4", "f32[4]"), lit("-7", "s32[]")};
  Literal *r = run1(in);
  cr_assert_eq(r->ntuple, 2);
  cr_expect_eq(s32_at(r->tuple[0], 0), -7);
  cr_assert_eq(r->tuple[1]->ntuple, 1);
  for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r->tuple[1]->tuple[0], k), 2.0f * (k + 1));
}

Test(runtime, constants) {
  int a = param("f32[4]{0}", 16);
  int c = alloc(16, ALLOC_CONSTANT);
  int o = alloc(16, 0);
  float cv[] = {0.25f, -1, 100, 3};
  Art->consts[Art->nconsts++] = (ArtConstant){sl(c, 0, 16), arena_memdup(Art->arena, cv, 16)};
  kernel(&Art->entry, "add4", 3, (BufSlice[]){sl(a, 0, 16), sl(c, 0, 16), sl(o, 0, 16)});
  output(sl(o, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  make_executor();
  Literal *in[] = {lit("1 2 3 4", "f32[4]")};
  for (int rep = 0; rep < 2; rep++) {
    Literal *r = run1(in);
    float want[] = {1.25f, 1, 103, 7};
    for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r, k), want[k]);
  }
}

/* while (counter < n) counter = counter + 1, counter starting at 0. */
static void build_counter_loop(void) {
  int n = param("s32[]", 4);
  int t = alloc(12, ALLOC_TEMP);  /* counter at 0, next at 4, pred at 8 */
  memset32(&Art->entry, sl(t, 0, 4), 0);
  Thunk *w = push(&Art->entry, THUNK_WHILE, "while");
  w->cond = seq(1);
  w->body = seq(2);
  w->trip_count = -1;
  w->cond_result = sl(t, 8, 1);
  kernel(w->cond, "lt", 3, (BufSlice[]){sl(t, 0, 4), sl(n, 0, 4), sl(t, 8, 1)});
  kernel(w->body, "inc", 2, (BufSlice[]){sl(t, 0, 4), sl(t, 4, 4)});
  copy(w->body, sl(t, 4, 4), sl(t, 0, 4));
  output(sl(t, 0, 4), "s32[]");
  Art->result_shape = "s32[]";
}

Test(runtime, while_loop) {
  build_counter_loop();
  make_executor();
  int cases[][2] = {{7, 7}, {0, 0}, {-3, 0}, {1, 1}, {100, 100}};
  for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "%d", cases[k][0]);
    Literal *in[] = {lit(spec, "s32[]")};
    cr_expect_eq(s32_at(run1(in), 0), cases[k][1], "n=%d", cases[k][0]);
  }
}

Test(runtime, profile_counts_every_thunk) {
  build_counter_loop();
  make_executor();
  executor_set_profile(Ex, true);
  Literal *in[] = {lit("3", "s32[]")};
  run1(in);
  cr_expect_eq(s32_at(run1(in), 0), 3);
  const ThunkProfile *p;
  int n = executor_profile(Ex, &p);
  /* memset, while, lt (cond), inc, copy (body): pre-order */
  cr_assert_eq(n, 5);
  cr_expect_eq(p[0].thunk->kind, THUNK_MEMSET32);
  cr_expect_eq(p[1].thunk->kind, THUNK_WHILE);
  cr_expect_eq(p[2].depth, 1);
  cr_expect_str_eq(p[2].thunk->kernel_name, "lt");
  cr_expect_str_eq(p[3].thunk->kernel_name, "inc");
  cr_expect_eq(p[4].thunk->kind, THUNK_COPY);
  for (int k = 0; k < n; k++) {
    cr_expect_eq(p[k].nsamples, 2);
    for (int s = 0; s < p[k].nsamples; s++) cr_expect_geq(p[k].ms[s], 0);
  }
  /* the loop takes at least as long as what ran inside it */
  for (int s = 0; s < 2; s++)
    cr_expect_geq(p[1].ms[s], p[2].ms[s] + p[3].ms[s] + p[4].ms[s] - 1e-9);
  /* n=3: the cond runs 4 times a run, the body 3 */
  int64_t calls[] = {2, 2, 8, 6, 6};
  int parent[] = {-1, -1, 1, 1, 1}, seqs[] = {0, 0, 0, 1, 1};
  for (int k = 0; k < n; k++) {
    cr_expect_eq(p[k].calls, calls[k], "thunk %d: %lld calls", k, (long long)p[k].calls);
    cr_expect_eq(p[k].parent, parent[k], "thunk %d", k);
    cr_expect_eq(p[k].seq, seqs[k], "thunk %d", k);
  }
  /* the loop's own time is its total less its nested thunks' */
  double total = p[1].ms[0] + p[1].ms[1], nested = 0;
  for (int k = 2; k < 5; k++) nested += p[k].ms[0] + p[k].ms[1];
  cr_expect_float_eq(profile_own_ms(p, n, 1), total - nested > 0 ? total - nested : 0, 1e-12);
  cr_expect_float_eq(profile_own_ms(p, n, 3), p[3].ms[0] + p[3].ms[1], 1e-12);
  StrBuf b;
  sb_init(&b);
  profile_thunk_name(&b, p, 4);
  cr_expect_str_eq(b.s, "while/body/copy");
  sb_clear(&b);
  profile_thunk_name(&b, p, 2);
  cr_expect_str_eq(b.s, "while/cond/lt");
  /* the summary: the total line counts every call */
  sb_clear(&b);
  profile_print_summary(&b, p, n, 2, "host", "monotonic clock");
  cr_expect(strstr(b.s, "thunk profile: 2 runs on host (monotonic clock)"), "%s", b.s);
  cr_expect(strstr(b.s, " 24           ") && strstr(b.s, " total\n"), "%s", b.s);
  cr_expect(strstr(b.s, "kernel      1x1x1/1x1x1       while/cond/lt\n"), "%s", b.s);
  sb_free(&b);
}

Test(runtime, trace_events_nest_in_order) {
  build_counter_loop();
  make_executor();
  executor_set_profile(Ex, true);
  Literal *in[] = {lit("2", "s32[]")};
  run1(in);                       /* not traced */
  executor_set_trace(Ex, 1000);
  run1(in);
  run1(in);
  const ThunkProfile *p;
  executor_profile(Ex, &p);
  const TraceEvent *ev;
  int64_t dropped = -1;
  int64_t n = executor_trace(Ex, &ev, &dropped);
  /* per run: the run, memset, while, then lt inc copy lt inc copy lt */
  int want[] = {-1, 0, 1, 2, 3, 4, 2, 3, 4, 2};
  cr_assert_eq(n, 2 * 10);
  cr_expect_eq(dropped, 0);
  for (int64_t k = 0; k < n; k++) {
    cr_expect_eq(ev[k].thunk, want[k % 10], "event %lld", (long long)k);
    cr_expect_eq(ev[k].run, (int)(k / 10), "event %lld", (long long)k);
    cr_expect_geq(ev[k].ms, 0);
    if (k) cr_expect_geq(ev[k].start_ms, ev[k - 1].start_ms, "event %lld", (long long)k);
  }
  /* each thunk inside its run, the loop's nested ones inside the loop, the
   * second run after the first */
  for (int r = 0; r < 2; r++) {
    const TraceEvent *run = &ev[10 * r], *loop = &ev[10 * r + 2];
    for (int k = 1; k < 10; k++) {
      const TraceEvent *e = &ev[10 * r + k];
      cr_expect_geq(e->start_ms, run->start_ms);
      cr_expect_leq(e->start_ms + e->ms, run->start_ms + run->ms + 1e-9);
      if (k > 2) {
        cr_expect_geq(e->start_ms, loop->start_ms);
        cr_expect_leq(e->start_ms + e->ms, loop->start_ms + loop->ms + 1e-9);
      }
    }
  }
  cr_expect_geq(ev[10].start_ms, ev[0].start_ms + ev[0].ms);
  /* a full trace counts what it cannot keep */
  executor_set_trace(Ex, 21);
  run1(in);
  n = executor_trace(Ex, &ev, &dropped);
  cr_expect_eq(n, 21);
  cr_expect_eq(dropped, 9);
}

Test(runtime, trace_json_escapes_names) {
  int o = alloc(16, 0);
  Thunk *m = memset32(&Art->entry, sl(o, 0, 16), 1);
  /* quote, backslash, newline, a stray byte, U+00E9, an encoded surrogate */
  m->annotation = "a\"b\\c\nd\xff\xc3\xa9\xed\xa0\x80";
  output(sl(o, 0, 16), "s32[4]{0}");
  Art->result_shape = "s32[4]{0}";
  make_executor();
  executor_set_profile(Ex, true);
  executor_set_trace(Ex, 100);
  run1(NULL);
  const ThunkProfile *p;
  int np = executor_profile(Ex, &p);
  const TraceEvent *ev;
  int64_t dropped;
  int64_t nev = executor_trace(Ex, &ev, &dropped);
  cr_assert_eq(nev, 2);
  FILE *f = tmpfile();
  cr_assert(f);
  cr_assert(profile_write_trace(f, p, np, ev, nev, dropped, "proc \"x\"", "track"));
  long len = ftell(f);
  char *text = xcalloc((size_t)len + 1, 1);
  rewind(f);
  cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  cr_expect(strstr(text, "{\"name\":\"a\\\"b\\\\c\\u000ad\\ufffd\xc3\xa9\\ufffd\\ufffd\\ufffd\","
                         "\"cat\":\"memset32\",\"ph\":\"X\""), "%s", text);
  cr_expect(strstr(text, "\"args\":{\"name\":\"proc \\\"x\\\"\"}"), "%s", text);
  cr_expect(strstr(text, "\"bytes\":16}"), "%s", text);
  free(text);
}

Test(runtime, thunk_bytes_and_summary_order) {
  int x = param("f32[4]", 16);
  int o = alloc(32, 0);
  kernel(&Art->entry, "dbl4", 2, (BufSlice[]){sl(x, 0, 16), sl(o, 0, 16)});
  copy(&Art->entry, sl(o, 0, 16), sl(o, 16, 16));
  memset32(&Art->entry, sl(o, 0, 12), 7);
  output(sl(o, 16, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  cr_expect_eq(thunk_bytes(&Art->entry.thunks[0]), 32);
  cr_expect_eq(thunk_bytes(&Art->entry.thunks[1]), 32);
  cr_expect_eq(thunk_bytes(&Art->entry.thunks[2]), 12);
  /* a made-up profile: rows by time, shares of the thunks' time, GB/s of
   * bytes x calls over time */
  double ms[3][1] = {{1.0}, {3.0}, {0.5}};
  ThunkProfile p[3];
  for (int k = 0; k < 3; k++)
    p[k] = (ThunkProfile){&Art->entry.thunks[k], 0, -1, 0, 2, 1, ms[k]};
  StrBuf b;
  sb_init(&b);
  profile_print_summary(&b, p, 3, 2, "host", "monotonic clock");
  const char *copy_line = strstr(b.s, "      3.0000   66.7%        2    1500.000     0.000  copy");
  const char *kern_line = strstr(b.s, "      1.0000   22.2%        2     500.000     0.000  kernel");
  const char *set_line = strstr(b.s, "      0.5000   11.1%        2     250.000     0.000  memset32");
  cr_expect(copy_line && kern_line && set_line && copy_line < kern_line && kern_line < set_line,
            "%s", b.s);
  cr_expect(strstr(b.s, "      4.5000  100.0%        6                        total\n"), "%s",
            b.s);
  sb_free(&b);
  /* 1 GB/s: 1e6 bytes a call in 1 ms */
  Art->entry.thunks[2].dst.size = 1000000;
  p[2].calls = 1;
  p[2].ms[0] = 1.0;
  sb_init(&b);
  profile_print_summary(&b, &p[2], 1, 1, "host", "monotonic clock");
  cr_expect(strstr(b.s, "      1.0000  100.0%        1    1000.000     1.000  memset32"), "%s",
            b.s);
  sb_free(&b);
}

Test(runtime, conditional_pred) {
  int p = param("pred[]", 1);
  int o = alloc(4, 0);
  Thunk *c = push(&Art->entry, THUNK_CONDITIONAL, "conditional");
  c->branch_index = sl(p, 0, 1);
  c->index_is_pred = true;
  c->nbranches = 2;
  c->branches = ARENA_ARRAY(Art->arena, ThunkSeq, 2);
  c->branches[0].thunks = ARENA_ARRAY(Art->arena, Thunk, 1);
  c->branches[1].thunks = ARENA_ARRAY(Art->arena, Thunk, 1);
  memset32(&c->branches[0], sl(o, 0, 4), 111);
  memset32(&c->branches[1], sl(o, 0, 4), 222);
  output(sl(o, 0, 4), "s32[]");
  Art->result_shape = "s32[]";
  make_executor();
  Literal *t[] = {lit("true", "pred[]")}, *f[] = {lit("false", "pred[]")};
  cr_expect_eq(s32_at(run1(t), 0), 111, "true runs branches[0]");
  cr_expect_eq(s32_at(run1(f), 0), 222, "false runs branches[1]");
}

Test(runtime, conditional_index) {
  int p = param("s32[]", 4);
  int o = alloc(4, 0);
  Thunk *c = push(&Art->entry, THUNK_CONDITIONAL, "conditional");
  c->branch_index = sl(p, 0, 4);
  c->nbranches = 3;
  c->branches = ARENA_ARRAY(Art->arena, ThunkSeq, 3);
  for (int b = 0; b < 3; b++) {
    c->branches[b].thunks = ARENA_ARRAY(Art->arena, Thunk, 1);
    memset32(&c->branches[b], sl(o, 0, 4), (uint32_t)(10 * (b + 1)));
  }
  output(sl(o, 0, 4), "s32[]");
  Art->result_shape = "s32[]";
  make_executor();
  int cases[][2] = {{0, 10}, {1, 20}, {2, 30}, {3, 30}, {-1, 30}, {1000, 30}};
  for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
    char spec[32];
    snprintf(spec, sizeof spec, "%d", cases[k][0]);
    Literal *in[] = {lit(spec, "s32[]")};
    cr_expect_eq(s32_at(run1(in), 0), cases[k][1], "index %d", cases[k][0]);
  }
}

Test(runtime, parameter_layout) {
  /* a column-major parameter copied byte for byte into a row-major result
   * of the transposed shape: the result is the transpose */
  int a = param("f32[2,3]{0,1}", 24);
  int o = alloc(24, 0);
  kernel(&Art->entry, "copy24", 2, (BufSlice[]){sl(a, 0, 24), sl(o, 0, 24)});
  output(sl(o, 0, 24), "f32[3,2]{1,0}");
  Art->result_shape = "f32[3,2]{1,0}";
  make_executor();
  Literal *in[] = {lit("[[1 2 3][4 5 6]]", "f32[2,3]")};
  Literal *r = run1(in);
  cr_assert_eq(r->shape->rank, 2);
  cr_expect_eq(r->shape->dims[0], 3);
  float want[] = {1, 4, 2, 5, 3, 6};
  for (int k = 0; k < 6; k++) cr_expect_eq(f32_at(r, k), want[k]);
}

Test(runtime, result_layout) {
  /* row-major bytes 1..6 read as a column-major f32[2,3]:
   * element (i,j) is physical i + 2j */
  int a = param("f32[2,3]{1,0}", 24);
  int o = alloc(24, 0);
  kernel(&Art->entry, "copy24", 2, (BufSlice[]){sl(a, 0, 24), sl(o, 0, 24)});
  output(sl(o, 0, 24), "f32[2,3]{0,1}");
  Art->result_shape = "f32[2,3]{0,1}";
  make_executor();
  Literal *in[] = {lit("1 2 3 4 5 6", "f32[2,3]")};
  Literal *r = run1(in);
  float want[] = {1, 3, 5, 2, 4, 6};
  for (int k = 0; k < 6; k++) cr_expect_eq(f32_at(r, k), want[k]);
}

Test(runtime, layout_permutation_rank3) {
  Shape *s = hlo_parse_shape(Out, "s32[2,2,2]{0,1,2}", &D);
  cr_assert(s);
  int32_t rm[8], ph[8], back[8];
  for (int k = 0; k < 8; k++) rm[k] = k;   /* v[i][j][k] = 4i + 2j + k */
  layout_to_physical(s, (uint8_t *)rm, (uint8_t *)ph);
  /* physical position i + 2j + 4k holds 4i + 2j + k */
  int32_t want[] = {0, 4, 2, 6, 1, 5, 3, 7};
  for (int k = 0; k < 8; k++) cr_expect_eq(ph[k], want[k], "position %d", k);
  layout_from_physical(s, (uint8_t *)ph, (uint8_t *)back);
  for (int k = 0; k < 8; k++) cr_expect_eq(back[k], k);
  /* {1,0,2}: dim 1 fastest, then 0, then 2: position j + 2i + 4k */
  s = hlo_parse_shape(Out, "s32[2,2,2]{1,0,2}", &D);
  layout_to_physical(s, (uint8_t *)rm, (uint8_t *)ph);
  int32_t want2[] = {0, 2, 4, 6, 1, 3, 5, 7};
  for (int k = 0; k < 8; k++) cr_expect_eq(ph[k], want2[k], "position %d", k);
}

Test(runtime, refuses_wrong_inputs) {
  int a = param("f32[4]{0}", 16), b = param("f32[4]{0}", 16);
  int o = alloc(16, 0);
  kernel(&Art->entry, "add4", 3, (BufSlice[]){sl(a, 0, 16), sl(b, 0, 16), sl(o, 0, 16)});
  output(sl(o, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  make_executor();
  Literal *r = NULL;
  Literal *wrong_type[] = {lit("1 2 3 4", "f32[4]"), lit("1 2 3 4", "s32[4]")};
  cr_assert(!executor_run(Ex, wrong_type, Out, &r, &D));
  cr_expect(strstr(D.msg, "input 1 is s32[4], expected f32[4]"), "%s", D.msg);
  diag_clear(&D);
  Literal *wrong_dims[] = {lit("1 2 3", "f32[3]"), lit("1 2 3 4", "f32[4]")};
  cr_assert(!executor_run(Ex, wrong_dims, Out, &r, &D));
  cr_expect(strstr(D.msg, "input 0 is f32[3], expected f32[4]"), "%s", D.msg);
  diag_clear(&D);
  Literal *missing[] = {lit("1 2 3 4", "f32[4]"), NULL};
  cr_assert(!executor_run(Ex, missing, Out, &r, &D));
  cr_expect(strstr(D.msg, "input 1 is missing"), "%s", D.msg);
}

Test(runtime, refuses_missing_kernel) {
  int a = param("f32[4]{0}", 16);
  int o = alloc(16, 0);
  kernel(&Art->entry, "no_such_kernel", 2, (BufSlice[]){sl(a, 0, 16), sl(o, 0, 16)});
  output(sl(o, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  cr_assert_null(executor_new(Art, Plat, SoBytes, SoLen, SoPath, &D));
  cr_expect(strstr(D.msg, "has no kernel 'no_such_kernel'"), "%s", D.msg);
}

Test(runtime, refuses_bad_kernel_file) {
  char bad[160];
  snprintf(bad, sizeof bad, "%s/bad.host.so", Dir);
  FILE *f = fopen(bad, "w");
  cr_assert(f);
  fputs("not an ELF file\n", f);
  fclose(f);
  int a = param("f32[4]{0}", 16);
  output(sl(a, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  cr_assert_null(executor_new(Art, Plat, (const uint8_t *)"x", 1, bad, &D));
  cr_expect(strstr(D.msg, "cannot load the host kernels"), "%s", D.msg);
}

Test(runtime, refuses_slice_outside_allocation) {
  int a = param("f32[4]{0}", 16);
  int o = alloc(16, 0);
  /* 16 bytes at offset 8 of a 16-byte allocation */
  kernel(&Art->entry, "dbl4", 2, (BufSlice[]){sl(a, 0, 16), sl(o, 8, 16)});
  output(sl(o, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  cr_assert_null(executor_new(Art, Plat, SoBytes, SoLen, SoPath, &D));
  cr_expect(strstr(D.msg, "outside the allocation table"), "%s", D.msg);
  diag_clear(&D);
  Art->entry.thunks[0].args[1] = sl(7, 0, 16);   /* no allocation 7 */
  cr_assert_null(executor_new(Art, Plat, SoBytes, SoLen, SoPath, &D));
  cr_expect(strstr(D.msg, "outside the allocation table"), "%s", D.msg);
}

Test(runtime, refuses_tiled_layout) {
  int a = param("f32[4]{0:T(2)}", 16);
  output(sl(a, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  cr_assert_null(executor_new(Art, Plat, NULL, 0, NULL, &D));
  cr_expect(strstr(D.msg, "plain minor_to_major layouts only"), "%s", D.msg);
}

Test(runtime, no_kernels_needs_no_kernel_file) {
  /* the result aliases the parameter: nothing runs at all */
  int a = param("s32[3]{0}", 12);
  output(sl(a, 0, 12), "s32[3]{0}");
  Art->result_shape = "s32[3]{0}";
  Ex = executor_new(Art, Plat, NULL, 0, NULL, &D);
  cr_assert(Ex, "%s", D.msg ? D.msg : "?");
  Literal *in[] = {lit("4 -5 6", "s32[3]")};
  Literal *r = run1(in);
  cr_expect_eq(s32_at(r, 0), 4);
  cr_expect_eq(s32_at(r, 1), -5);
  cr_expect_eq(s32_at(r, 2), 6);
}

/* A bounded dynamic result: its buffer is the data at its bounds (here
 * f32[<=2,<=3] column-major, from the first parameter) then one s32 size per
 * dimension (from the second); the result holds the valid elements at the
 * runtime sizes, and sizes beyond the bounds are refused. */
Test(runtime, dynamic_result) {
  int x = param("f32[2,3]{0,1}", 24), n = param("s32[2]{0}", 8);
  int o = alloc(24 + 8, 0);
  copy(&Art->entry, sl(x, 0, 24), sl(o, 0, 24));
  copy(&Art->entry, sl(n, 0, 8), sl(o, 24, 8));
  output(sl(o, 0, 32), "f32[<=2,<=3]{0,1}");
  Art->result_shape = "f32[<=2,<=3]{0,1}";
  Ex = executor_new(Art, Plat, NULL, 0, NULL, &D);
  cr_assert(Ex, "%s", D.msg ? D.msg : "?");
  Literal *in[] = {lit("1 2 3 4 5 6", "f32[2,3]"), lit("2 2", "s32[2]")};
  Literal *r = run1(in);
  cr_assert_eq(r->shape->rank, 2);
  cr_expect(r->shape->dims[0] == 2 && r->shape->dims[1] == 2 && !shape_is_dynamic(r->shape));
  float want[] = {1, 2, 4, 5};
  for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r, k), want[k], "element %d", k);
  Literal *empty[] = {in[0], lit("0 3", "s32[2]")};
  r = run1(empty);
  cr_expect(r->shape->dims[0] == 0 && r->shape->dims[1] == 3);
  Literal *over[] = {in[0], lit("2 4", "s32[2]")};
  Literal *res = NULL;
  cr_expect(!executor_run(Ex, over, Out, &res, &D));
  cr_expect(D.msg && strstr(D.msg, "runtime size 4 of dimension 1 is outside [0, 3]"), "%s",
            D.msg ? D.msg : "?");
}

/* The host platform's launch_group, wrapped to record the group sizes. */
static bool (*real_launch_group)(Platform *, int, const KernelLaunch *, Diag *);
static int Groups[16], NGroups;

static bool record_launch_group(Platform *p, int n, const KernelLaunch *k, Diag *d) {
  if (NGroups < 16) Groups[NGroups] = n;
  NGroups++;
  return real_launch_group(p, n, k, d);
}

Test(runtime, independent_kernels_launch_together) {
  cr_assert(Plat->launch_group, "the host platform launches groups");
  real_launch_group = Plat->launch_group;
  Plat->launch_group = record_launch_group;
  NGroups = 0;
  int x = param("f32[4]{0}", 16);
  int o1 = alloc(16, 0), o2 = alloc(16, 0), o3 = alloc(16, 0), o4 = alloc(16, 0);
  /* o1 = 2x and o2 = 2x: both only read x */
  kernel(&Art->entry, "dbl4", 2, (BufSlice[]){sl(x, 0, 16), sl(o1, 0, 16)});
  kernel(&Art->entry, "dbl4", 2, (BufSlice[]){sl(x, 0, 16), sl(o2, 0, 16)});
  /* o3 = o1 + o2 reads what both wrote: after them */
  kernel(&Art->entry, "add4", 3, (BufSlice[]){sl(o1, 0, 16), sl(o2, 0, 16), sl(o3, 0, 16)});
  kernel(&Art->entry, "dbl4", 2, (BufSlice[]){sl(x, 0, 16), sl(o4, 0, 16)});
  /* o4 = 2x (above) is independent of the first two and goes with them;
   * o1 = 2 o4 reads o4 and overwrites o1, which add4 reads: after add4 */
  kernel(&Art->entry, "dbl4", 2, (BufSlice[]){sl(o4, 0, 16), sl(o1, 0, 16)});
  output(sl(o3, 0, 16), "f32[4]{0}");
  output(sl(o1, 0, 16), "f32[4]{0}");
  Art->result_shape = "(f32[4]{0}, f32[4]{0})";
  make_executor();
  Literal *in[] = {lit("1 2 3 -4", "f32[4]")};
  Literal *r = run1(in);
  cr_assert_eq(NGroups, 1);
  cr_expect_eq(Groups[0], 3);
  float xs[] = {1, 2, 3, -4};
  for (int k = 0; k < 4; k++) {
    cr_expect_eq(f32_at(r->tuple[0], k), 4 * xs[k]);
    cr_expect_eq(f32_at(r->tuple[1], k), 4 * xs[k]);
  }
  /* profiling times each thunk on its own */
  NGroups = 0;
  executor_set_profile(Ex, true);
  r = run1(in);
  cr_expect_eq(NGroups, 0);
  for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r->tuple[0], k), 4 * xs[k]);
}

/* --device-resident: copies into the device counted */
static int NCopiesIn;
static bool (*real_h2d)(Platform *, DevPtr, const void *, size_t, Diag *);

static bool counting_h2d(Platform *p, DevPtr dst, const void *src, size_t n, Diag *d) {
  NCopiesIn++;
  return real_h2d(p, dst, src, n, d);
}

Test(runtime, keep_inputs_copies_each_input_once) {
  real_h2d = Plat->copy_h2d;
  Plat->copy_h2d = counting_h2d;
  int a = param("f32[4]{0}", 16), b = param("f32[4]{0}", 16);
  int o = alloc(16, 0);
  kernel(&Art->entry, "add4", 3, (BufSlice[]){sl(a, 0, 16), sl(b, 0, 16), sl(o, 0, 16)});
  output(sl(o, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  make_executor();
  executor_set_keep_inputs(Ex, true);
  Literal *in[] = {lit("1 2 3 4", "f32[4]"), lit("10 20 30 40.5", "f32[4]")};
  NCopiesIn = 0;
  run1(in);
  cr_expect_eq(NCopiesIn, 2);
  Literal *r = run1(in);
  cr_expect_eq(NCopiesIn, 2, "the second run copied its unchanged inputs in again");
  float want[] = {11, 22, 33, 44.5f};
  for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r, k), want[k]);
  /* another literal for b: only b is copied in */
  in[1] = lit("-1 0 1 2", "f32[4]");
  r = run1(in);
  cr_expect_eq(NCopiesIn, 3);
  float want2[] = {0, 2, 4, 6};
  for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r, k), want2[k]);
  /* off: every run copies every input */
  executor_set_keep_inputs(Ex, false);
  run1(in);
  run1(in);
  cr_expect_eq(NCopiesIn, 7);
}

Test(runtime, keep_inputs_copies_an_aliased_input_every_run) {
  real_h2d = Plat->copy_h2d;
  Plat->copy_h2d = counting_h2d;
  /* input_output_alias: the result doubles x in x's own buffer */
  int x = param("f32[4]{0}", 16);
  kernel(&Art->entry, "dbl4", 2, (BufSlice[]){sl(x, 0, 16), sl(x, 0, 16)});
  output(sl(x, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  make_executor();
  executor_set_keep_inputs(Ex, true);
  Literal *in[] = {lit("1 2 3 -4", "f32[4]")};
  NCopiesIn = 0;
  float xs[] = {1, 2, 3, -4};
  for (int run = 0; run < 3; run++) {
    Literal *r = run1(in);
    cr_expect_eq(NCopiesIn, run + 1);
    for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r, k), 2 * xs[k], "run %d", run);
  }
}

/* A run without a result literal leaves the results on the device: the
 * next run that asks for them gets its own. */
Test(runtime, results_left_on_the_device) {
  int a = param("f32[4]{0}", 16), b = param("f32[4]{0}", 16);
  int o = alloc(16, 0);
  kernel(&Art->entry, "add4", 3, (BufSlice[]){sl(a, 0, 16), sl(b, 0, 16), sl(o, 0, 16)});
  output(sl(o, 0, 16), "f32[4]{0}");
  Art->result_shape = "f32[4]{0}";
  make_executor();
  Literal *in[] = {lit("1 2 3 4", "f32[4]"), lit("10 20 30 40.5", "f32[4]")};
  size_t before = arena_bytes_used(Out);
  cr_assert(executor_run(Ex, in, Out, NULL, &D), "run: %s", D.msg ? D.msg : "?");
  cr_expect_eq(arena_bytes_used(Out), before, "a run without a result allocated one");
  Literal *r = run1(in);
  float want[] = {11, 22, 33, 44.5f};
  for (int k = 0; k < 4; k++) cr_expect_eq(f32_at(r, k), want[k]);
}
