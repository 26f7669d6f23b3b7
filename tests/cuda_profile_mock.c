/*
 * cuda_profile_mock.c - check-cuda-libs.sh's driver for profiling on the
 * CUDA platform: an artifact of a memset, a GEMM (cuBLASLt, with a
 * workspace slice) and a conditional whose branches copy or memset runs
 * three times with profiling and tracing on the mock libcuda.so.1 and
 * libcublasLt.so.13 the script builds from tests/mocks/.  The mock's events
 * read the monotonic clock and log each record, so the executor's marks are
 * checked to be CUDA events (two per thunk executed and two per run), the
 * calls, the timeline (order, nesting, runs), the bytes (the GEMM's
 * operands and result, not its workspace), the summary and the trace file
 * read back; then a failing cuEventRecord fails the run with its message.
 *
 *   cuda_profile_mock MOCKDIR TMPDIR
 *
 * Prints one line per failure and ends with "N passed, N failed".
 */
#include "../lib/eval/eval.h"
#include "../lib/runtime/profile.h"
#include "mock_driver.h"

static int count_lines(const char *log, const char *line) {
  int n = 0;
  size_t len = strlen(line);
  for (const char *l = log; *l;) {
    const char *nl = strchr(l, '\n');
    if ((size_t)(nl ? nl - l : (ptrdiff_t)strlen(l)) == len && strncmp(l, line, len) == 0) n++;
    if (!nl) break;
    l = nl + 1;
  }
  return n;
}

static int count_str(const char *s, const char *part) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, part)); p += strlen(part)) n++;
  return n;
}

/*
 * The artifact: d = 0; d = a . b (f32 3x5 . 5x4, 256 bytes of workspace);
 * if (p) o = d else o = 0.
 */
static Artifact *A;

static int add_alloc(int64_t size, unsigned flags) {
  BufAlloc *al = &A->allocs[A->nallocs];
  al->size = size;
  al->flags = flags;
  return A->nallocs++;
}

static int add_param(const char *shape, int64_t size) {
  int k = add_alloc(size, ALLOC_PARAMETER);
  A->allocs[k].param_number = A->nparams;
  A->allocs[k].param_shape = (char *)shape;
  A->params[A->nparams++] = (ArtLeaf){{k, 0, size}, (char *)shape};
  return k;
}

static Thunk *push(ThunkSeq *s, ThunkKind kind, const char *ann) {
  Thunk *t = &s->thunks[s->n++];
  t->kind = kind;
  t->annotation = (char *)ann;
  t->trip_count = -1;
  return t;
}

static ThunkSeq seq_of(int cap) {
  return (ThunkSeq){0, ARENA_ARRAY(A->arena, Thunk, cap)};
}

static void build(void) {
  A = artifact_new();
  A->module_name = "prof";
  A->target = "sm_90";
  A->kernel_file = "prof.ptx";
  A->allocs = ARENA_ARRAY(A->arena, BufAlloc, 8);
  A->params = ARENA_ARRAY(A->arena, ArtLeaf, 4);
  A->outputs = ARENA_ARRAY(A->arena, ArtLeaf, 2);
  A->entry = seq_of(4);
  int a = add_param("f32[3,5]{1,0}", 60), b = add_param("f32[5,4]{1,0}", 80);
  int p = add_param("pred[]", 1);
  int d = add_alloc(48, ALLOC_TEMP), ws = add_alloc(256, ALLOC_TEMP);
  int o = add_alloc(48, ALLOC_OUTPUT);
  Thunk *z = push(&A->entry, THUNK_MEMSET32, "zero");
  z->dst = (BufSlice){d, 0, 48};
  Thunk *g = push(&A->entry, THUNK_GEMM, "dot");
  g->target = "__cublas$lt$matmul";
  g->gemm = ARENA_NEW(A->arena, GemmDesc);
  *g->gemm = (GemmDesc){.batch = 1, .m = 3, .n = 4, .k = 5, .alpha_re = 1,
                        .bias_et = ET_F32, .workspace_bytes = 256};
  g->gemm->a = (GemmMatrix){ET_F32, 3, 5, 0, 5, 1};
  g->gemm->b = (GemmMatrix){ET_F32, 5, 4, 0, 4, 1};
  g->gemm->d = (GemmMatrix){ET_F32, 3, 4, 0, 4, 1};
  g->gemm->c = g->gemm->d;
  for (int k = 0; k < LIB_MAX_SLICES; k++) g->lib[k] = (BufSlice){-1, 0, 0};
  g->lib[GEMM_A] = (BufSlice){a, 0, 60};
  g->lib[GEMM_B] = (BufSlice){b, 0, 80};
  g->lib[GEMM_D] = (BufSlice){d, 0, 48};
  g->lib[GEMM_WORKSPACE] = (BufSlice){ws, 0, 256};
  Thunk *c = push(&A->entry, THUNK_CONDITIONAL, "cond");
  c->branch_index = (BufSlice){p, 0, 1};
  c->index_is_pred = true;
  c->nbranches = 2;
  c->branches = ARENA_ARRAY(A->arena, ThunkSeq, 2);
  c->branches[0] = seq_of(1);
  c->branches[1] = seq_of(1);
  Thunk *cp = push(&c->branches[0], THUNK_COPY, "c0");
  cp->src = (BufSlice){d, 0, 48};
  cp->dst = (BufSlice){o, 0, 48};
  Thunk *m = push(&c->branches[1], THUNK_MEMSET32, "m1");
  m->dst = (BufSlice){o, 0, 48};
  A->outputs[A->noutputs++] = (ArtLeaf){{o, 0, 48}, "f32[3,4]{1,0}"};
  A->result_shape = "f32[3,4]{1,0}";
}

static Literal *input(Arena *ar, const char *spec, const char *shape) {
  Diag d = {0};
  Shape *s = hlo_parse_shape(ar, shape, &d);
  Literal *l = s ? io_parse_input(ar, spec, s, &d) : NULL;
  if (!l) printf("bad input %s: %s\n", shape, d.msg ? d.msg : "?");
  diag_clear(&d);
  return l;
}

static void check_timeline(const ThunkProfile *p, const TraceEvent *ev, int64_t n) {
  /* per run: the run, zero, dot, cond, cond/branch 0/c0 */
  int want[] = {-1, 0, 1, 2, 3};
  check(n == 15, "15 trace events (3 runs of a run and 4 thunks), got %lld", (long long)n);
  for (int64_t k = 0; k < n && k < 15; k++) {
    const TraceEvent *e = &ev[k], *run = &ev[k / 5 * 5];
    check(e->thunk == want[k % 5] && e->run == (int)(k / 5), "event %lld: thunk %d of run %d",
          (long long)k, e->thunk, e->run);
    check(e->ms >= 0, "event %lld: duration %g", (long long)k, e->ms);
    check(!k || e->start_ms >= ev[k - 1].start_ms, "event %lld starts before the one before",
          (long long)k);
    check(e->start_ms >= run->start_ms && e->start_ms + e->ms <= run->start_ms + run->ms + 1e-6,
          "event %lld lies outside its run", (long long)k);
  }
  for (int r = 1; r < 3 && n >= 15; r++)
    check(ev[5 * r].start_ms >= ev[5 * r - 5].start_ms + ev[5 * r - 5].ms,
          "run %d starts before run %d ends", r, r - 1);
  if (n >= 15)
    check(ev[4].start_ms >= ev[3].start_ms && ev[4].start_ms + ev[4].ms <= ev[3].start_ms + ev[3].ms + 1e-6,
          "the branch's copy lies inside the conditional");
  StrBuf b;
  sb_init(&b);
  profile_thunk_name(&b, p, 3);
  check(b.s && strcmp(b.s, "cond/branch 0/c0") == 0, "the copy's name: %s", b.s ? b.s : "");
  sb_free(&b);
}

static void check_outputs(const ThunkProfile *p, int np, const TraceEvent *ev, int64_t nev,
                          const char *tmpdir) {
  StrBuf b;
  sb_init(&b);
  profile_print_summary(&b, p, np, 3, "cuda", "CUDA events");
  const char *s = b.s ? b.s : "";
  check(strstr(s, "thunk profile: 3 runs on cuda (CUDA events), thunks timed one at a time\n") != NULL,
        "the summary's title:\n%s", s);
  check(strstr(s, "        3 ") && strstr(s, "  gemm        -                 dot\n"),
        "the summary's gemm line:\n%s", s);
  check(strstr(s, "  copy        -                 cond/branch 0/c0\n") != NULL,
        "the summary's copy line:\n%s", s);
  check(strstr(s, "       12                        total\n") != NULL,
        "the total line counts 12 calls:\n%s", s);
  sb_free(&b);
  char path[1024];
  snprintf(path, sizeof path, "%s/prof.json", tmpdir);
  FILE *f = fopen(path, "w+");
  if (!check(f != NULL, "cannot create %s", path)) return;
  check(profile_write_trace(f, p, np, ev, nev, 0, "xhlo-run prof (cuda)", "stream"),
        "profile_write_trace failed");
  long len = ftell(f);
  char *text = xcalloc((size_t)len + 1, 1);
  rewind(f);
  check(fread(text, 1, (size_t)len, f) == (size_t)len, "cannot read the trace back");
  fclose(f);
  check(count_str(text, "\"ph\":\"X\"") == 15, "the trace has 15 complete events");
  check(count_str(text, "\"cat\":\"gemm\"") == 3, "the trace has 3 gemm events");
  check(count_str(text, "\"name\":\"dot\",\"cat\":\"gemm\"") == 3 &&
        count_str(text, "\"bytes\":188}") == 3, "the gemm events carry 188 bytes:\n%s", text);
  check(count_str(text, "\"name\":\"cond/branch 0/c0\",\"cat\":\"copy\"") == 3,
        "the trace names the branch's copy");
  check(strstr(text, "\"thread_name\"") && strstr(text, "\"name\":\"stream\""),
        "the trace names the stream's track");
  free(text);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: cuda_profile_mock MOCKDIR TMPDIR\n");
    return 2;
  }
  Diag d = {0};
  PlatformOptions o = {.lib_path = argv[1]};
  Platform *P = platform_cuda_new(&o, &d);
  if (!check(P != NULL, "platform_cuda_new on the mock driver: %s", d.msg ? d.msg : "")) {
    printf("%d passed, %d failed\n", passed, failed);
    return 1;
  }
  build();
  Executor *e = executor_new(A, P, NULL, 0, NULL, &d);
  check(e != NULL, "executor_new: %s", d.msg ? d.msg : "");
  Arena *ar = arena_new();
  Literal *in[] = {
    input(ar, "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", "f32[3,5]"),
    input(ar, "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1 1 1 1 1", "f32[5,4]"),
    input(ar, "1", "pred[]"),
  };
  if (e && in[0] && in[1] && in[2]) {
    executor_set_profile(e, true);
    executor_set_trace(e, 1000);
    free(take());
    Literal *r = NULL;
    bool ok = true;
    for (int k = 0; ok && k < 3; k++) ok = executor_run(e, in, ar, &r, &d);
    check(ok, "three profiled runs: %s", d.msg ? d.msg : "");
    /* a . b: b is the identity over a row of ones, so o[i][j] = a[i][j] + a[i][4] */
    bool same = ok && r;
    for (int i = 0; same && i < 3; i++)
      for (int j = 0; j < 4; j++)
        same = same && literal_get_f64(r, i * 4 + j) == (double)(5 * i + j + 1) + (5 * i + 5);
    check(same, "the result is a . b");
    char *log = take();
    /* per run: the run's two marks and two around each of zero, dot, cond, c0 */
    check(count_lines(log, "cuEventRecord") == 30, "30 cuEventRecord calls, got %d",
          count_lines(log, "cuEventRecord"));
    free(log);
    const ThunkProfile *p;
    int np = executor_profile(e, &p);
    int64_t calls[] = {3, 3, 3, 3, 0};
    check(np == 5, "5 profiled thunks, got %d", np);
    for (int k = 0; k < np && k < 5; k++)
      check(p[k].calls == calls[k] && p[k].nsamples == 3, "thunk %d: %lld calls in %d runs", k,
            (long long)p[k].calls, p[k].nsamples);
    check(np > 1 && thunk_bytes(p[1].thunk) == 188, "the GEMM's bytes: 60 + 80 + 48");
    const TraceEvent *ev;
    int64_t dropped = -1;
    int64_t nev = executor_trace(e, &ev, &dropped);
    check(dropped == 0, "no events dropped");
    check_timeline(p, ev, nev);
    check_outputs(p, np, ev, nev, argv[2]);
    /* a failing event record fails the run, naming the call */
    fail_next("cuEventRecord", 700);
    diag_clear(&d);
    ok = executor_run(e, in, ar, &r, &d);
    check(!ok && d.msg && strstr(d.msg, "cuEventRecord"), "a failing cuEventRecord: %s",
          d.msg ? d.msg : "(ran)");
    fail_next(NULL, 0);
    diag_clear(&d);
  }
  executor_free(e);
  artifact_free(A);
  arena_free(ar);
  platform_free(P);
  diag_clear(&d);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
