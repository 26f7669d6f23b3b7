/*
 * cmdbuf_mock.c - check-cuda-libs.sh's driver for command buffers on the
 * CUDA platform: an artifact whose entry is one command buffer (kernel,
 * memset, kernel, copy, kernel) runs through the executor on the mock
 * libcuda.so.1 (tests/mocks/cuda.c), whose streams and graphs behave like
 * CUDA's (captured work is recorded, not run; a graph runs only when
 * launched; freed memory is poisoned).  Checked: the results of every run,
 * and the driver calls: the first run captures, instantiates and launches;
 * a later run only launches; after the buffers move the capture is redone
 * and the graph updated in place (or re-instantiated when the update is
 * refused); a failure while recording ends the capture and the next run
 * records again; with command buffers off no graph or stream call is made;
 * every graph is destroyed with the executor.  Two more artifacts put a
 * GEMM and a convolution between two kernels: the mock cuBLASLt and cuDNN
 * are called on the captured stream (cuDNN allocating its own workspace
 * during the capture) and their work runs inside the graph, in order.
 * Several streams: three independent kernels then two dependent ones go to
 * three streams, forked and joined by events, on their own and inside a
 * command buffer (the capture takes the side streams in and ends joined);
 * with one stream (PlatformOptions.streams = 1) there is no stream wait.
 *
 *   cmdbuf_mock MOCKDIR   (libcuda.so.1 found through LD_LIBRARY_PATH,
 *                          libcublasLt.so.13 and libcudnn.so.9 in MOCKDIR)
 *
 * Prints one line per failure and ends with "N passed, N failed".
 */
#include "mock_driver.h"

/* ---- the mock's log ------------------------------------------------------- */

/* The log holds these lines in this order (others may come between). */
static void expect_order(const char *what, const char *log, const char *const *lines) {
  const char *at = log;
  for (int k = 0; lines[k]; k++) {
    const char *p = strstr(at, lines[k]);
    if (!check(p != NULL, "%s: no '%s' (in order) in the driver log:\n%s", what, lines[k], log))
      return;
    at = p + strlen(lines[k]);
  }
}

/* ---- the artifact --------------------------------------------------------- */

/* out = 2 * ((x + y) + 1): params x (alloc 0), y (1); temps in alloc 2;
 * the output in alloc 3. */
static Artifact *sample(void) {
  Artifact *a = four_alloc_artifact("cb");
  Arena *ar = a->arena;
  ThunkSeq *cmds = ARENA_NEW(ar, ThunkSeq);
  cmds->n = 5;
  cmds->thunks = ARENA_ARRAY(ar, Thunk, 5);
  BufSlice add1[] = {sl(0, 0, 16), sl(1, 0, 16), sl(2, 0, 16)};
  BufSlice add2[] = {sl(2, 0, 16), sl(2, 16, 16), sl(2, 32, 16)};
  BufSlice scale[] = {sl(2, 48, 16), sl(3, 0, 16)};
  cmds->thunks[0] = kernel(ar, "add4", "add4", 3, add1);
  cmds->thunks[1] = (Thunk){.kind = THUNK_MEMSET32, .dst = sl(2, 16, 16),
                            .memset_value = 0x3f800000u /* 1.0f */, .trip_count = -1};
  cmds->thunks[2] = kernel(ar, "add4", "add4", 3, add2);
  cmds->thunks[3] = (Thunk){.kind = THUNK_COPY, .src = sl(2, 32, 16), .dst = sl(2, 48, 16),
                            .trip_count = -1};
  cmds->thunks[4] = kernel(ar, "scale2", "scale2", 2, scale);
  a->entry.n = 1;
  a->entry.thunks = ARENA_NEW(ar, Thunk);
  a->entry.thunks[0] = (Thunk){.kind = THUNK_COMMAND_BUFFER, .trip_count = -1, .commands = cmds};
  a->nparams = 2;
  a->params = ARENA_ARRAY(ar, ArtLeaf, 2);
  for (int k = 0; k < 2; k++)
    a->params[k] = (ArtLeaf){sl(k, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  a->noutputs = 1;
  a->outputs = ARENA_ARRAY(ar, ArtLeaf, 1);
  a->outputs[0] = (ArtLeaf){sl(3, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  return a;
}

/* out = 2 * ((x + y) @ y), x and y as f32[2,2] row-major: add4 into a temp,
 * a cuBLASLt GEMM into another, scale2 into the output. */
static Artifact *gemm_sample(void) {
  Artifact *a = sample();
  Arena *ar = a->arena;
  ThunkSeq *cmds = a->entry.thunks[0].commands;
  BufSlice add1[] = {sl(0, 0, 16), sl(1, 0, 16), sl(2, 0, 16)};
  BufSlice scale[] = {sl(2, 16, 16), sl(3, 0, 16)};
  cmds->n = 3;
  cmds->thunks[0] = kernel(ar, "add4", "add4", 3, add1);
  Thunk *g = &cmds->thunks[1];
  *g = (Thunk){.kind = THUNK_GEMM, .trip_count = -1};
  g->annotation = arena_strdup(ar, "dot");
  g->target = arena_strdup(ar, "__cublas$lt$matmul");
  GemmDesc *gd = g->gemm = ARENA_NEW(ar, GemmDesc);
  gd->batch = 1, gd->m = 2, gd->n = 2, gd->k = 2;
  gd->a = gd->b = gd->d = gd->c = (GemmMatrix){ET_F32, 2, 2, 0, 2, 1};
  gd->alpha_re = 1;
  gd->bias_et = ET_F32;
  for (int k = 0; k < LIB_MAX_SLICES; k++) g->lib[k] = sl(-1, 0, 0);
  g->lib[GEMM_A] = sl(2, 0, 16);
  g->lib[GEMM_B] = sl(1, 0, 16);
  g->lib[GEMM_D] = sl(2, 16, 16);
  cmds->thunks[2] = kernel(ar, "scale2", "scale2", 2, scale);
  return a;
}

/* out = 2 * (x + y) * y[0]: add4 into a temp, a 1x1 cuDNN convolution of
 * it (as f32[1,1,2,2]) with the filter y[0] into another, scale2 into the
 * output.  No workspace slice: cuDNN allocates its own. */
static Artifact *conv_sample(void) {
  Artifact *a = gemm_sample();
  Arena *ar = a->arena;
  Thunk *g = &a->entry.thunks[0].commands->thunks[1];
  *g = (Thunk){.kind = THUNK_CONV, .trip_count = -1};
  g->annotation = arena_strdup(ar, "conv");
  g->target = arena_strdup(ar, "__cudnn$convForward");
  ConvDesc *c = g->conv = ARENA_NEW(ar, ConvDesc);
  c->kind = CONV_FORWARD;
  c->nspatial = 2;
  ConvTensor x = {ET_F32, {1, 1, 2, 2}, {4, 4, 2, 1}}, w = {ET_F32, {1, 1, 1, 1}, {1, 1, 1, 1}};
  c->x = c->y = x;
  c->w = w;
  c->stride[0] = c->stride[1] = c->dilation[0] = c->dilation[1] = 1;
  c->groups = 1;
  c->alpha = 1;
  c->bias_et = ET_F32;
  for (int k = 0; k < LIB_MAX_SLICES; k++) g->lib[k] = sl(-1, 0, 0);
  g->lib[CONV_X] = sl(2, 0, 16);
  g->lib[CONV_W] = sl(1, 0, 4);
  g->lib[CONV_Y] = sl(2, 16, 16);
  return a;
}

static const char ptx[] = "// mock\n.visible .entry add4(\n.visible .entry scale2(\n";

/* One run with x = base + i, y = 10 * (i + 1); checks out = 2 * (x + y + 1).
 * Returns the run's driver log (the caller frees it), NULL when it failed
 * (*msg then holds the message, heap). */
enum { PLAIN, GEMM, CONV, STREAMS };

static char *run_with(Executor *ex, const char *what, float base, int lib, char **msg) {
  Arena *ar = arena_new();
  Shape *s = NULL;
  Diag d = {0};
  s = hlo_parse_shape(ar, "f32[4]{0}", &d);
  Literal *in[2] = {literal_new(ar, s), literal_new(ar, s)};
  float want[4];
  for (int i = 0; i < 4; i++) {
    float x = base + (float)i, y = 10.0f * (float)(i + 1);
    ((float *)in[0]->data)[i] = x;
    ((float *)in[1]->data)[i] = y;
    want[i] = 2 * (x + y + 1);
  }
  if (lib == STREAMS)
    for (int i = 0; i < 4; i++)
      want[i] = 3 * (((float *)in[0]->data)[i] + ((float *)in[1]->data)[i]);
  if (lib == CONV) {
    const float *x = (const float *)in[0]->data, *y = (const float *)in[1]->data;
    for (int i = 0; i < 4; i++) want[i] = 2 * ((x[i] + y[i]) * y[0]);
  }
  if (lib == GEMM) {
    const float *x = (const float *)in[0]->data, *y = (const float *)in[1]->data;
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        float acc = 0;
        for (int k = 0; k < 2; k++) acc += (x[2 * i + k] + y[2 * i + k]) * y[2 * k + j];
        want[2 * i + j] = 2 * acc;
      }
  }
  free(take());
  Literal *out = NULL;
  bool ok = executor_run(ex, in, ar, &out, &d);
  char *log = take();
  if (msg) *msg = NULL;
  if (!ok) {
    if (msg) *msg = xstrdup(d.msg ? d.msg : "");
    else check(false, "%s: the run failed: %s", what, d.msg ? d.msg : "");
    diag_clear(&d);
    arena_free(ar);
    free(log);
    return NULL;
  }
  const float *got = (const float *)out->data;
  bool same = true;
  for (int i = 0; i < 4; i++) same = same && got[i] == want[i];
  check(same, "%s: results %g %g %g %g, want %g %g %g %g", what, got[0], got[1], got[2],
        got[3], want[0], want[1], want[2], want[3]);
  arena_free(ar);
  return log;
}

static char *run(Executor *ex, const char *what, float base, char **msg) {
  return run_with(ex, what, base, PLAIN, msg);
}

static Executor *setup(Platform *p, const Artifact *a, const char *what) {
  Diag d = {0};
  Executor *ex = executor_new(a, p, (const uint8_t *)ptx, sizeof ptx - 1, "cb.ptx", &d);
  check(ex != NULL, "%s: executor_new: %s", what, d.msg ? d.msg : "");
  diag_clear(&d);
  return ex;
}

static void test_record_replay_update(Platform *p, const Artifact *a) {
  Executor *ex = setup(p, a, "record");
  if (!ex) return;
  char *log = run(ex, "first run", 1, NULL);
  if (log) {
    static const char *const want[] = {
        "cuStreamCreate flags=1",        "cuStreamBeginCapture mode=2",
        "cuLaunchKernel add4 captured",  "cuMemsetD32Async captured",
        "cuLaunchKernel add4 captured",  "cuMemcpyDtoDAsync captured",
        "cuLaunchKernel scale2 captured", "cuStreamEndCapture nodes=5",
        "cuGraphInstantiate nodes=5",    "cuGraphDestroy",
        "cuGraphLaunch nodes=5 legacy",  "cuCtxSynchronize",
        NULL};
    expect_order("first run", log, want);
    check(count(log, "legacy\n") == 1 && count(log, " stream\n") == 0,
          "first run: the commands run only through the graph:\n%s", log);
  }
  free(log);

  log = run(ex, "second run", 5, NULL);
  if (log) {
    check(count(log, "cuGraphLaunch nodes=5 legacy") == 1,
          "second run: one graph launch:\n%s", log);
    check(!strstr(log, "Capture") && !strstr(log, "Instantiate") && !strstr(log, "Update") &&
              !strstr(log, "cuLaunchKernel") && !strstr(log, "cuStreamCreate"),
          "second run: nothing recorded again:\n%s", log);
  }
  free(log);

  /* new addresses: recorded again, the graph updated in place */
  Diag d = {0};
  check(executor_move_buffers(ex, &d), "move buffers: %s", d.msg ? d.msg : "");
  diag_clear(&d);
  log = run(ex, "after a move", -3, NULL);
  if (log) {
    static const char *const want[] = {"cuStreamBeginCapture mode=2",
                                       "cuStreamEndCapture nodes=5",
                                       "cuGraphExecUpdate nodes=5", "cuGraphDestroy",
                                       "cuGraphLaunch nodes=5 legacy", NULL};
    expect_order("after a move", log, want);
    check(!strstr(log, "cuGraphInstantiate") && !strstr(log, "cuStreamCreate"),
          "after a move: updated, not instantiated again:\n%s", log);
  }
  free(log);
  log = run(ex, "after a move, again", 7, NULL);
  if (log) check(!strstr(log, "Capture"), "after a move, again: replayed only:\n%s", log);
  free(log);

  /* an update the driver refuses: a new graph instead */
  check(executor_move_buffers(ex, &d), "move buffers: %s", d.msg ? d.msg : "");
  diag_clear(&d);
  fail_next("cuGraphExecUpdate", 910);
  log = run(ex, "update refused", 2, NULL);
  fail_next(NULL, 0);
  if (log) {
    static const char *const want[] = {"cuGraphExecUpdate refused", "cuGraphExecDestroy",
                                       "cuGraphInstantiate nodes=5", "cuGraphDestroy",
                                       "cuGraphLaunch nodes=5 legacy", NULL};
    expect_order("update refused", log, want);
  }
  free(log);

  executor_free(ex);
  log = take();
  check(count(log, "cuGraphExecDestroy") == 1, "executor_free destroys the graph:\n%s", log);
  check(live("mock_live_graphs") == 0, "no graph left (%d)", live("mock_live_graphs"));
  free(log);
}

static void test_recording_failure(Platform *p, const Artifact *a) {
  Executor *ex = setup(p, a, "recording failure");
  if (!ex) return;
  fail_next("cuLaunchKernel", 1);
  char *msg = NULL;
  char *log = run(ex, "recording failure", 1, &msg);
  fail_next(NULL, 0);
  check(!log && msg && strstr(msg, "cuLaunchKernel failed") && strstr(msg, "'add4'"),
        "a kernel that cannot be recorded fails the run naming it: %s", msg ? msg : "");
  free(msg);
  free(log);
  /* the capture was ended and nothing kept: the next run records anew */
  log = run(ex, "after a recording failure", 1, NULL);
  if (log) {
    static const char *const want[] = {"cuStreamBeginCapture", "cuStreamEndCapture nodes=5",
                                       "cuGraphInstantiate nodes=5", "cuGraphLaunch", NULL};
    expect_order("after a recording failure", log, want);
  }
  free(log);
  executor_free(ex);
  free(take());
  check(live("mock_live_graphs") == 0, "recording failure: no graph left (%d)", live("mock_live_graphs"));
}

static void test_off(Platform *p, const Artifact *a) {
  Executor *ex = setup(p, a, "off");
  if (!ex) return;
  executor_set_command_buffers(ex, false);
  for (int k = 0; k < 2; k++) {
    char *log = run(ex, k ? "off, second run" : "off", (float)k, NULL);
    if (!log) continue;
    static const char *const want[] = {
        "cuLaunchKernel add4 legacy", "cuMemsetD32 legacy", "cuLaunchKernel add4 legacy",
        "cuMemcpyDtoD legacy", "cuLaunchKernel scale2 legacy", NULL};
    expect_order("off", log, want);
    check(!strstr(log, "Graph") && !strstr(log, "Capture") && !strstr(log, "cuStream"),
          "off: no graph or stream call:\n%s", log);
    free(log);
  }
  executor_free(ex);
  free(take());
}

/* --profile: the command buffer is timed as a whole; its commands are
 * recorded, not run, so they show no time. */
static void test_profile(Platform *p, const Artifact *a) {
  Executor *ex = setup(p, a, "profile");
  if (!ex) return;
  executor_set_profile(ex, true);
  char *log = run(ex, "profile", 3, NULL);
  free(log);
  log = run(ex, "profile, replay", 4, NULL);
  free(log);
  const ThunkProfile *tp;
  int n = executor_profile(ex, &tp);
  check(n == 6 && tp[0].thunk->kind == THUNK_COMMAND_BUFFER && tp[0].nsamples == 2 &&
            tp[1].depth == 1,
        "profile: the command buffer and its 5 commands (%d entries)", n);
  for (int k = 1; k < n; k++)
    check(tp[k].nsamples == 2 && tp[k].ms[0] == 0 && tp[k].ms[1] == 0,
          "profile: command %d shows no time of its own", k);
  executor_free(ex);
  free(take());
}

static char *take_lib(const char *mockdir, const char *lib) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", mockdir, lib);
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  char *(*fn)(void) = h ? (char *(*)(void))dlsym(h, "mock_log_take") : NULL;
  return fn ? fn() : xstrdup("");
}

static void test_gemm(Platform *p, const char *mockdir) {
  Artifact *a = gemm_sample();
  Diag d = {0};
  check(artifact_validate(a, &d), "the GEMM sample is valid: %s", d.msg ? d.msg : "");
  diag_clear(&d);
  Executor *ex = setup(p, a, "gemm");
  if (!ex) {
    artifact_free(a);
    return;
  }
  free(take_lib(mockdir, "libcublasLt.so.13"));
  char *log = run_with(ex, "gemm first run", 1, GEMM, NULL);
  char *lt = take_lib(mockdir, "libcublasLt.so.13");
  if (log) {
    static const char *const want[] = {"cuStreamBeginCapture mode=2",
                                       "cuLaunchKernel add4 captured",
                                       "cuLaunchKernel scale2 captured",
                                       "cuStreamEndCapture nodes=3", "cuGraphInstantiate nodes=3",
                                       "cuGraphLaunch nodes=3 legacy", NULL};
    expect_order("gemm first run", log, want);
    check(strstr(lt, "cublasLtMatmul captured") != NULL && !strstr(lt, "stream=(nil)"),
          "gemm first run: cuBLASLt is called on the captured stream:\n%s", lt);
  }
  free(log);
  free(lt);
  /* the replay runs the GEMM again, on the new inputs */
  log = run_with(ex, "gemm replay", -2, GEMM, NULL);
  lt = take_lib(mockdir, "libcublasLt.so.13");
  if (log)
    check(!strstr(log, "Capture") && !strstr(lt, "cublasLtMatmul"),
          "gemm replay: only the graph runs:\n%s%s", log, lt);
  free(log);
  free(lt);
  executor_set_command_buffers(ex, false);
  log = run_with(ex, "gemm off", 3, GEMM, NULL);
  lt = take_lib(mockdir, "libcublasLt.so.13");
  if (log)
    check(strstr(lt, "stream=(nil)") && !strstr(lt, "captured") && !strstr(log, "Graph"),
          "gemm off: cuBLASLt on the default stream, no graph:\n%s%s", log, lt);
  free(log);
  free(lt);
  executor_free(ex);
  free(take());
  artifact_free(a);
}

static void test_conv(Platform *p, const char *mockdir) {
  Artifact *a = conv_sample();
  Diag d = {0};
  check(artifact_validate(a, &d), "the convolution sample is valid: %s", d.msg ? d.msg : "");
  diag_clear(&d);
  Executor *ex = setup(p, a, "conv");
  if (!ex) {
    artifact_free(a);
    return;
  }
  const char *dnn = "libcudnn.so.9";
  char *log = run_with(ex, "conv first run", 1, CONV, NULL);
  char *lg = take_lib(mockdir, dnn);
  if (log) {
    static const char *const want[] = {"cuStreamBeginCapture mode=2",
                                       "cuLaunchKernel add4 captured", "cuMemAlloc",
                                       "cuLaunchKernel scale2 captured",
                                       "cuStreamEndCapture nodes=3", "cuGraphLaunch nodes=3", NULL};
    expect_order("conv first run", log, want);
    static const char *const want_dnn[] = {"cudnnSetStream 0x", "cudnnBackendExecute captured",
                                           "cudnnBackendExecute engine=", NULL};
    expect_order("conv first run (cuDNN)", lg, want_dnn);
  }
  free(log);
  free(lg);
  log = run_with(ex, "conv replay", 4, CONV, NULL);
  lg = take_lib(mockdir, dnn);
  if (log)
    check(!strstr(log, "Capture") && !strstr(lg, "captured") && !strstr(lg, "cudnnSetStream") &&
              strstr(lg, "cudnnBackendExecute engine="),
          "conv replay: only the graph runs the convolution:\n%s%s", log, lg);
  free(log);
  free(lg);
  executor_set_command_buffers(ex, false);
  log = run_with(ex, "conv off", -1, CONV, NULL);
  lg = take_lib(mockdir, dnn);
  if (log)
    check(strstr(lg, "cudnnSetStream (nil)") && !strstr(lg, "captured") && !strstr(log, "Graph"),
          "conv off: cuDNN back on the default stream, no graph:\n%s%s", log, lg);
  free(log);
  free(lg);
  executor_free(ex);
  free(take());
  artifact_free(a);
}

/* out = ((x + y) + 2x) + 2y: add4, scale2 and scale2 are independent
 * (level 0), then two add4s; in a command buffer when cb. */
static Artifact *streams_sample(bool cb) {
  Artifact *a = sample();
  Arena *ar = a->arena;
  ThunkSeq *q = cb ? a->entry.thunks[0].commands : &a->entry;
  q->n = 5;
  q->thunks = ARENA_ARRAY(ar, Thunk, 5);
  BufSlice k1[] = {sl(0, 0, 16), sl(1, 0, 16), sl(2, 0, 16)};
  BufSlice k2[] = {sl(0, 0, 16), sl(2, 16, 16)};
  BufSlice k3[] = {sl(1, 0, 16), sl(2, 32, 16)};
  BufSlice k4[] = {sl(2, 0, 16), sl(2, 16, 16), sl(2, 48, 16)};
  BufSlice k5[] = {sl(2, 48, 16), sl(2, 32, 16), sl(3, 0, 16)};
  q->thunks[0] = kernel(ar, "add4", "k1", 3, k1);
  q->thunks[1] = kernel(ar, "scale2", "k2", 2, k2);
  q->thunks[2] = kernel(ar, "scale2", "k3", 2, k3);
  q->thunks[3] = kernel(ar, "add4", "k4", 3, k4);
  q->thunks[4] = kernel(ar, "add4", "k5", 3, k5);
  return a;
}

static void test_streams(const char *mockdir) {
  Diag d = {0};
  PlatformOptions o = {.lib_path = mockdir};
  Platform *p = platform_cuda_new(&o, &d);
  if (!check(p != NULL && p->launch_group, "a CUDA platform with launch_group: %s",
             d.msg ? d.msg : ""))
    return;
  for (int cb = 0; cb < 2; cb++) {
    Artifact *a = streams_sample(cb);
    const char *what = cb ? "streams in a command buffer" : "streams";
    Executor *ex = setup(p, a, what);
    for (int r = 0; ex && r < 2; r++) {
      char *log = run_with(ex, what, 1, STREAMS, NULL);
      if (!log) break;
      if (cb && r == 1) {
        check(!strstr(log, "cuStreamWaitEvent") && count(log, "cuGraphLaunch") == 1,
              "%s: a replay launches the graph only:\n%s", what, log);
      } else if (cb) {
        static const char *const want[] = {
            "cuStreamBeginCapture", "cuEventRecord captured",
            "cuStreamWaitEvent: joins the capture", "cuStreamWaitEvent: joins the capture",
            "cuLaunchKernel add4 captured", "cuLaunchKernel scale2 captured",
            "cuLaunchKernel scale2 captured", "cuEventRecord captured",
            "cuStreamWaitEvent captured", "cuEventRecord captured",
            "cuStreamWaitEvent captured", "cuLaunchKernel add4 captured",
            "cuLaunchKernel add4 captured", "cuStreamEndCapture nodes=5",
            "cuGraphLaunch nodes=5", NULL};
        expect_order(what, log, want);
      } else {
        /* fork: a record, two side streams wait; two joins: a record and a
         * wait each */
        check(count(log, "cuStreamWaitEvent") == 4 && count(log, "cuLaunchKernel") == 5 &&
                  count(log, "cuEventRecord") >= 3,
              "%s: a fork to two side streams and a join of both:\n%s", what, log);
        check(r == 1 || count(log, "cuStreamCreate flags=1") == 3,
              "%s: the first run makes the three non-blocking side streams of the "
              "default four:\n%s", what, log);
      }
      free(log);
    }
    executor_free(ex);
    artifact_free(a);
  }
  platform_free(p);
  free(take());
  /* one stream: no launch_group, no waits */
  o.streams = 1;
  p = platform_cuda_new(&o, &d);
  if (check(p != NULL && !p->launch_group, "streams = 1: no launch_group")) {
    Artifact *a = streams_sample(false);
    Executor *ex = setup(p, a, "one stream");
    char *log = ex ? run_with(ex, "one stream", 1, STREAMS, NULL) : NULL;
    check(log && !strstr(log, "cuStreamWaitEvent"), "one stream: no stream waits:\n%s",
          log ? log : "");
    free(log);
    executor_free(ex);
    artifact_free(a);
  }
  platform_free(p);
  diag_clear(&d);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: cmdbuf_mock MOCKDIR\n");
    return 2;
  }
  Diag d = {0};
  PlatformOptions o = {.lib_path = argv[1]};
  Platform *p = platform_cuda_new(&o, &d);
  if (!check(p != NULL, "platform_cuda_new on the mock driver: %s", d.msg ? d.msg : "")) {
    printf("%d passed, %d failed\n", passed, failed);
    return 1;
  }
  check(p->cmdbuf_begin && p->cmdbuf_end && p->cmdbuf_launch && p->cmdbuf_free,
        "the CUDA platform has command buffers on a driver with graphs");
  Artifact *a = sample();
  check(artifact_validate(a, &d), "the sample artifact is valid: %s", d.msg ? d.msg : "");
  diag_clear(&d);
  test_record_replay_update(p, a);
  test_recording_failure(p, a);
  test_off(p, a);
  test_profile(p, a);
  test_gemm(p, argv[1]);
  test_conv(p, argv[1]);
  test_streams(argv[1]);
  artifact_free(a);
  platform_free(p);
  char *log = take();
  check(strstr(log, "cuStreamDestroy") != NULL, "the capture stream is destroyed:\n%s", log);
  free(log);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
