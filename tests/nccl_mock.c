/*
 * nccl_mock.c - check-nccl.sh's driver: collective thunks on the CUDA
 * platform through NCCL (collective_nccl.c, nccl.c) against the mock
 * libcuda.so.1 with several GPUs and the mock libnccl.so.2 that the script
 * builds from tests/mocks/ (they compute on host memory).
 *
 *   nccl_mock MOCKDIR
 *
 * MOCKDIR holds both (libcuda.so.1 is found through LD_LIBRARY_PATH,
 * libnccl.so.2 through PlatformOptions.lib_path).  Each case is a
 * hand-made collective thunk run by 1 to 4 "GPUs", one thread each, meeting
 * through the threads' exchange as xhlo-run's devices do; its results must
 * be what the host platform computes for the same thunk and inputs
 * (collective_exec.c staging through host memory, the reference), and the
 * mock NCCL's log must hold the calls expected, per device: the
 * communicators (one unique id per group, ncclCommInitRank at the device's
 * place in its group, made once), the group of calls, each call's
 * arguments and the stream.  Then what NCCL does not take (staged through
 * host memory, no NCCL call), errors (NCCL's, an old NCCL, devices that
 * disagree), the ids going through the run's exchange (any transport:
 * MPI's when the devices are processes), and the communicators' end.
 * Prints one line per failure and ends with "N passed, N failed".
 */
#include <pthread.h>

#include "../lib/runtime/collective_exec.h"
#include "../lib/runtime/cuda_libs.h"
#include "mock_driver.h"

static const char *mockdir;

/* ---- the mock NCCL's hooks ------------------------------------------------ */

static void *nccl_sym(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/libnccl.so.2", mockdir);
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  return h ? dlsym(h, name) : NULL;
}

static char *nccl_log(void) {
  char *(*fn)(void) = (char *(*)(void))nccl_sym("mock_log_take");
  return fn ? fn() : xstrdup("");
}

static void nccl_fail(const char *name, int status) {
  void (*fn)(const char *, int) = (void (*)(const char *, int))nccl_sym("mock_fail");
  if (fn) fn(name, status);
}

static int live_comms(void) {
  int (*fn)(void) = (int (*)(void))nccl_sym("mock_live_comms");
  return fn ? fn() : -1;
}

/* The lines of log whose dev= field is dev, in order (caller frees). */
static char *dev_lines(const char *log, int dev) {
  StrBuf b;
  sb_init(&b);
  char want[32];
  snprintf(want, sizeof want, "dev=%d", dev);
  size_t wl = strlen(want);
  for (const char *l = log; *l;) {
    const char *nl = strchr(l, '\n');
    size_t len = nl ? (size_t)(nl - l) : strlen(l);
    const char *f = strstr(l, want);
    if (f && f < l + len && (f[wl] == ' ' || f[wl] == '\n' || f[wl] == 0)) {
      sb_putn(&b, l, len);
      sb_putc(&b, '\n');
    }
    if (!nl) break;
    l = nl + 1;
  }
  return sb_detach(&b);
}

/* The id device dev made ("mock-nccl-id-N"), the nth (from 0) it made in
 * log; "" when none. */
static const char *made_id(const char *log, int dev, int nth, char *out, size_t cap) {
  char *lines = dev_lines(log, dev);
  out[0] = 0;
  for (const char *p = lines; (p = strstr(p, "ncclGetUniqueId ")); p++) {
    const char *arrow = strstr(p, "-> ");
    if (arrow && nth-- == 0) {
      snprintf(out, cap, "%.*s", (int)strcspn(arrow + 3, "\n"), arrow + 3);
      break;
    }
  }
  free(lines);
  return out;
}

static bool expect_lines(const char *what, const char *log, int dev, const char *want) {
  char *got = dev_lines(log, dev);
  bool ok = check(strcmp(got, want) == 0, "%s: device %d's NCCL calls differ", what, dev);
  if (!ok) printf("--- want\n%s--- got\n%s--- (the whole log)\n%s---\n", want, got, log);
  free(got);
  return ok;
}

/* ---- thunks ------------------------------------------------------------------ */

/* What a case runs: a collective thunk among replicas x partitions
 * devices; operand and result shapes (text); slices laid out in one
 * allocation unless in_place (result k = operand k) or overlapped (result
 * 0 starts inside operand 0). */
typedef struct Spec {
  CollKind kind;
  CollReduction red;
  int64_t dim;
  CollectiveGroupMode mode;
  int64_t replicas, partitions;
  const char *groups;             /* "0,1;2,3" ("" none) */
  const char *pairs;              /* "0>1,1>2" */
  int n;
  const char *in[4], *out[4];
  bool in_place, overlapped;
} Spec;

typedef struct Case {
  Arena *a;
  Thunk t;
  int ndev;
  int64_t bytes;                  /* one device's allocation */
} Case;

static int64_t shape_bytes(Arena *a, const char *text) {
  Diag d = {0};
  Shape *s = hlo_parse_shape(a, text, &d);
  diag_clear(&d);
  return s ? shape_byte_size(s) : 0;
}

static int parse_list(const char *text, int64_t *v, int max, char sep) {
  int n = 0;
  for (const char *p = text; *p && n < max;) {
    v[n++] = strtoll(p, (char **)&p, 10);
    while (*p && (*p == sep || *p == ' ')) p++;
  }
  return n;
}

static Case make_case(const Spec *s) {
  Case c = {.a = arena_new()};
  Arena *a = c.a;
  CollDesc *cd = ARENA_NEW(a, CollDesc);
  cd->kind = s->kind;
  cd->reduction = s->red;
  cd->dim = s->dim;
  cd->channel_id = s->mode == CGM_CROSS_REPLICA ? -1 : 1;
  cd->mode = s->mode;
  cd->replica_count = s->replicas;
  cd->num_partitions = s->partitions;
  c.ndev = (int)(s->replicas * s->partitions);
  cd->groups = ARENA_ARRAY(a, int64_t *, 8);
  cd->group_sizes = ARENA_ARRAY(a, int64_t, 8);
  for (const char *g = s->groups; g && *g;) {
    const char *end = strchr(g, ';');
    char one[64];
    snprintf(one, sizeof one, "%.*s", (int)(end ? end - g : (long)strlen(g)), g);
    cd->groups[cd->ngroups] = ARENA_ARRAY(a, int64_t, 16);
    cd->group_sizes[cd->ngroups] = parse_list(one, cd->groups[cd->ngroups], 16, ',');
    cd->ngroups++;
    g = end ? end + 1 : "";
  }
  cd->pairs = arena_array(a, 16, sizeof *cd->pairs);
  for (const char *p = s->pairs; p && *p;) {
    cd->pairs[cd->npairs][0] = strtoll(p, (char **)&p, 10);
    if (*p == '>') p++;
    cd->pairs[cd->npairs++][1] = strtoll(p, (char **)&p, 10);
    if (*p == ',') p++;
  }
  cd->n = s->n;
  cd->in = ARENA_ARRAY(a, BufSlice, s->n);
  cd->out = ARENA_ARRAY(a, BufSlice, s->n);
  cd->in_shape = ARENA_ARRAY(a, char *, s->n);
  cd->out_shape = ARENA_ARRAY(a, char *, s->n);
  int64_t off = 0;
  for (int k = 0; k < s->n; k++) {
    cd->in_shape[k] = arena_strdup(a, s->in[k]);
    cd->out_shape[k] = arena_strdup(a, s->out[k]);
    cd->in[k] = sl(0, off, shape_bytes(a, s->in[k]));
    off += (cd->in[k].size + 255) / 256 * 256;
  }
  for (int k = 0; k < s->n; k++) {
    int64_t size = shape_bytes(a, s->out[k]);
    if (s->in_place) {
      cd->out[k] = sl(0, cd->in[k].offset, size);
    } else if (s->overlapped && k == 0) {
      cd->out[k] = sl(0, cd->in[0].offset + 4, size);
    } else {
      cd->out[k] = sl(0, off, size);
      off += (size + 255) / 256 * 256;
    }
  }
  c.bytes = off + 256;
  c.t = (Thunk){.kind = THUNK_COLLECTIVE, .trip_count = -1, .coll = cd,
                .annotation = arena_strdup(a, "coll")};
  return c;
}

/* A small value for element i of operand k on device dev, in et. */
static void put_value(uint8_t *b, ElemType et, int64_t i, int dev, int k) {
  int v = (int)((i * 7 + dev * 5 + k * 3) % 11) - 5;
  if (et == ET_PRED) v = (int)((i + dev + k) % 3 == 0);
  if (et_is_float(et)) {
    uint64_t bits = fp_from_double(et_fp_format(et), v);
    memcpy(b + i * et_bytes(et), &bits, (size_t)et_bytes(et));
  } else {
    int64_t x = v;
    if (et_is_unsigned_int(et)) x = (v + 5) * 3;
    memcpy(b + i * et_bytes(et), &x, (size_t)et_bytes(et));
  }
}

/* ---- running ----------------------------------------------------------------- */

typedef struct Dev {
  pthread_t thread;
  int dev;
  Platform *p;
  CollExec *x;
  const Thunk *t;                 /* what it runs (devices that disagree run
                                     different ones) */
  Exchange *xg;                   /* the run's devices (NULL: alone) */
  int64_t replica, partition;
  DevPtr base, *in, *out;
  bool ok;
  char *msg;
} Dev;

static void *dev_main(void *arg) {
  Dev *v = arg;
  Diag d = {0};
  v->ok = coll_run(v->x, v->p, v->xg, v->replica, v->partition, v->in, v->out, &d);
  free(v->msg);
  v->msg = d.msg ? xstrdup(d.msg) : NULL;
  if (v->xg) v->xg->end(v->xg, v->dev, !v->ok, d.msg);
  diag_clear(&d);
  return NULL;
}

/* The run's exchange, watched: a communicator's id goes through the
 * exchange the devices meet by (MPI's when they are processes), as
 * xchg_bcast from the group's first member, and the members meet through
 * it before each collective. */
typedef struct Tap {
  Exchange x;                     /* the devices', first */
  Exchange *inner;                /* the threads' */
  pthread_mutex_t mu;
  int ids, meets;                 /* members' calls: receiving the id, meeting */
} Tap;

static bool tap_exchange(Exchange *x, const XchgGroup *g, const void *const *send,
                         const size_t *sb, void *const *recv, const size_t *rb, char *why,
                         size_t nwhy) {
  Tap *t = (Tap *)x;
  pthread_mutex_lock(&t->mu);
  if (rb[0] == NCCL_UNIQUE_ID_BYTES) t->ids++;
  if (rb[0] == 1) t->meets++;
  pthread_mutex_unlock(&t->mu);
  return t->inner->exchange(t->inner, g, send, sb, recv, rb, why, nwhy);
}

/* The devices of one platform kind with their buffers, the inputs
 * uploaded; each run_go meets through a fresh exchange (an exchange is
 * for one run), watched by tap when it is set. */
typedef struct Run {
  int n;
  Dev *devs;
  Tap *tap;
  bool cuda;
} Run;

static PlatformOptions popts(int dev) {
  return (PlatformOptions){.lib_path = mockdir, .device = dev};
}

static Run run_new(Case *c, bool cuda, const Thunk *other, int other_dev) {
  Run r = {.n = c->ndev, .cuda = cuda};
  r.devs = xcalloc((size_t)r.n, sizeof *r.devs);
  const CollDesc *cd = c->t.coll;
  for (int k = 0; k < r.n; k++) {
    Dev *v = &r.devs[k];
    Diag d = {0};
    PlatformOptions o = popts(k);
    v->dev = k;
    v->p = cuda ? platform_cuda_new(&o, &d) : platform_host_new(NULL, &d);
    if (!v->p) {
      check(false, "platform %d: %s", k, d.msg ? d.msg : "?");
      diag_clear(&d);
      continue;
    }
    v->t = other && k == other_dev ? other : &c->t;
    v->x = coll_prepare(c->a, v->t, v->p, &d);
    check(v->x != NULL, "coll_prepare: %s", d.msg ? d.msg : "");
    v->replica = k / cd->num_partitions;
    v->partition = k % cd->num_partitions;
    if (!v->p->alloc(v->p, (size_t)c->bytes, &v->base, &d)) check(false, "alloc: %s", d.msg);
    uint8_t *host = xcalloc(1, (size_t)c->bytes);
    /* results poisoned (each must be written), then the operands */
    for (int j = 0; j < cd->n; j++) memset(host + cd->out[j].offset, 0x5a, (size_t)cd->out[j].size);
    for (int j = 0; j < cd->n; j++) {
      Diag pd = {0};
      Shape *s = hlo_parse_shape(c->a, cd->in_shape[j], &pd);
      diag_clear(&pd);
      int64_t ne = s ? shape_elements(s) : 0;
      for (int64_t i = 0; i < ne; i++) put_value(host + cd->in[j].offset, s->et, i, k, j);
    }
    if (v->base && !v->p->copy_h2d(v->p, v->base, host, (size_t)c->bytes, &d))
      check(false, "upload: %s", d.msg);
    free(host);
    v->in = ARENA_ARRAY(c->a, DevPtr, cd->n + 1);
    v->out = ARENA_ARRAY(c->a, DevPtr, cd->n + 1);
    for (int j = 0; j < cd->n; j++) {
      v->in[j] = v->base + (DevPtr)cd->in[j].offset;
      v->out[j] = v->base + (DevPtr)cd->out[j].offset;
    }
    diag_clear(&d);
  }
  return r;
}

/* Runs every device on its own thread; true when all succeeded. */
static bool run_go(Run *r) {
  Exchange *xg = xchg_threads_new(r->n);
  if (r->tap) {
    r->tap->x = *xg;
    r->tap->x.exchange = tap_exchange;
    r->tap->inner = xg;
  }
  for (int k = 0; k < r->n; k++) r->devs[k].xg = r->tap ? &r->tap->x : xg;
  bool ok = true;
  int started = 0;
  for (int k = 0; k < r->n; k++, started++)
    if (!r->devs[k].x || pthread_create(&r->devs[k].thread, NULL, dev_main, &r->devs[k]) != 0) {
      ok = check(false, "device %d did not start", k);
      for (int j = k; j < r->n; j++) xg->end(xg, j, true, "did not start");
      break;
    }
  for (int k = 0; k < started; k++) {
    pthread_join(r->devs[k].thread, NULL);
    ok &= r->devs[k].ok;
  }
  xchg_free(xg);
  return ok;
}

/* Device dev's allocation, downloaded (caller frees). */
static uint8_t *run_bytes(Run *r, const Case *c, int dev) {
  uint8_t *b = xcalloc(1, (size_t)c->bytes);
  Diag d = {0};
  Dev *v = &r->devs[dev];
  if (!v->p->copy_d2h(v->p, b, v->base, (size_t)c->bytes, &d)) check(false, "download: %s", d.msg);
  diag_clear(&d);
  return b;
}

static void run_free(Run *r) {
  for (int k = 0; k < r->n; k++) {
    Dev *v = &r->devs[k];
    if (v->base) v->p->free(v->p, v->base);
    platform_free(v->p);
    coll_free(v->x);
    free(v->msg);
  }
  free(r->devs);
}

/* Runs the case on NCCL and on the host and compares every device's
 * results; the mock NCCL's log of the NCCL run in *log (caller frees). */
static bool same_as_host(const char *name, Case *c, char **log) {
  free(nccl_log());
  Run g = run_new(c, true, NULL, 0);
  bool ok = run_go(&g);
  for (int k = 0; k < g.n && !ok; k++)
    if (!g.devs[k].ok) check(false, "%s: device %d: %s", name, k, g.devs[k].msg);
  *log = nccl_log();
  Run h = run_new(c, false, NULL, 0);
  bool hok = run_go(&h);
  check(hok, "%s: the host reference failed: %s", name, h.devs[0].msg ? h.devs[0].msg : "");
  const CollDesc *cd = c->t.coll;
  for (int k = 0; ok && hok && k < g.n; k++) {
    uint8_t *gb = run_bytes(&g, c, k), *hb = run_bytes(&h, c, k);
    for (int j = 0; j < cd->n; j++) {
      bool same = memcmp(gb + cd->out[j].offset, hb + cd->out[j].offset,
                         (size_t)cd->out[j].size) == 0;
      if (!check(same, "%s: device %d's result %d differs from the host's", name, k, j)) {
        ok = false;
        printf("  nccl:");
        for (int64_t i = 0; i < cd->out[j].size && i < 64; i++)
          printf(" %02x", gb[cd->out[j].offset + i]);
        printf("\n  host:");
        for (int64_t i = 0; i < cd->out[j].size && i < 64; i++)
          printf(" %02x", hb[cd->out[j].offset + i]);
        printf("\n");
      }
    }
    free(gb);
    free(hb);
  }
  for (int k = 0; k < g.n; k++)
    check(g.devs[k].x && g.devs[k].x->on_device, "%s: NCCL takes the thunk", name);
  run_free(&g);
  run_free(&h);
  if (ok) passed++;
  return ok;
}

static void case_free(Case *c) { arena_free(c->a); }

/* ---- cases ------------------------------------------------------------------- */

static void set_devices(int n) {
  char v[16];
  snprintf(v, sizeof v, "%d", n);
  setenv("MOCK_CUDA_DEVICES", v, 1);
}

/* An all-reduce of f32[2,3] among the 4 devices: the calls, the
 * communicator made once and kept, another thunk of the group reusing it. */
static void test_all_reduce(void) {
  Spec s = {COLL_ALL_REDUCE, COLL_SUM, -1, CGM_FLATTENED_ID, 1, 4, "0,1,2,3", NULL, 1,
            {"f32[2,3]{1,0}"}, {"f32[2,3]{1,0}"}, false, false};
  Case c = make_case(&s);
  char *log = NULL;
  same_as_host("all-reduce", &c, &log);
  char id[64], want[1024];
  made_id(log, 0, 0, id, sizeof id);
  check(id[0] != 0, "all-reduce: device 0 (the first member) makes the unique id:\n%s", log);
  for (int k = 0; k < 4; k++) {
    char first[128] = "";
    if (k == 0) snprintf(first, sizeof first, "ncclGetUniqueId dev=0 -> %s\n", id);
    snprintf(want, sizeof want,
             "%sncclCommInitRank dev=%d rank=%d/4 id=%s\n"
             "ncclGroupStart dev=%d\n"
             "ncclAllReduce dev=%d rank=%d/4 count=6 type=7 op=0 root=0 peer=-1 stream=legacy\n"
             "ncclGroupEnd dev=%d\n",
             first, k, k, id, k, k, k, k);
    expect_lines("all-reduce", log, k, want);
  }
  free(log);
  case_free(&c);

  /* twice on the same platforms, then a second thunk of the same group:
   * one communicator per device */
  c = make_case(&s);
  Case c2 = make_case(&s);
  free(nccl_log());
  Run r = run_new(&c, true, NULL, 0);
  bool twice = run_go(&r) && run_go(&r);
  check(twice, "all-reduce twice: %s", r.devs[0].msg ? r.devs[0].msg : "");
  for (int k = 0; k < r.n; k++) {
    Diag d = {0};
    coll_free(r.devs[k].x);
    r.devs[k].x = coll_prepare(c2.a, &c2.t, r.devs[k].p, &d);
    diag_clear(&d);
  }
  bool again = run_go(&r);
  check(again, "a second thunk of the group: %s", r.devs[0].msg ? r.devs[0].msg : "");
  log = nccl_log();
  check(count(log, "ncclGetUniqueId") == 1 && count(log, "ncclCommInitRank") == 4 &&
            count(log, "ncclAllReduce") == 12,
        "three all-reduces of one group make one communicator per device:\n%s", log);
  free(log);
  check(live_comms() == 4, "4 communicators live before the platforms end (%d)", live_comms());
  run_free(&r);
  log = nccl_log();
  check(live_comms() == 0 && count(log, "ncclCommDestroy") == 4,
        "the platforms destroy their communicators (%d live):\n%s", live_comms(), log);
  free(log);
  case_free(&c);
  case_free(&c2);
}

/* Groups in another order than the devices': ranks are places in the
 * group; one id per group, made by its first member. */
static void test_groups(void) {
  Spec s = {COLL_ALL_GATHER, 0, 0, CGM_CROSS_REPLICA, 4, 1, "3,1;2,0", NULL, 1,
            {"f32[2,3]{1,0}"}, {"f32[4,3]{1,0}"}, false, false};
  Case c = make_case(&s);
  char *log = NULL;
  same_as_host("all-gather over {{3,1},{2,0}}", &c, &log);
  char id3[64], id2[64];
  made_id(log, 3, 0, id3, sizeof id3);
  made_id(log, 2, 0, id2, sizeof id2);
  check(id3[0] && id2[0] && strcmp(id3, id2) != 0 && count(log, "ncclGetUniqueId") == 2,
        "each group's first member (3, 2) makes its id:\n%s", log);
  char want[256];
  const int rank[4] = {1, 1, 0, 0};
  const char *ids[4] = {id2, id3, id2, id3};
  for (int k = 0; k < 4; k++) {
    snprintf(want, sizeof want, "ncclCommInitRank dev=%d rank=%d/2 id=%s", k, rank[k], ids[k]);
    char *lines = dev_lines(log, k);
    check(strstr(lines, want) != NULL, "device %d joins as '%s':\n%s", k, want, lines);
    free(lines);
  }
  check(count(log, "ncclAllGather") == 4 && strstr(log, "count=24 type=0") != NULL,
        "one ncclAllGather of 24 bytes each:\n%s", log);
  free(log);
  case_free(&c);

  /* cross-replica over 2 replicas x 2 partitions: the groups repeat per
   * partition */
  Spec s2 = {COLL_ALL_REDUCE, COLL_MAX, -1, CGM_CROSS_REPLICA, 2, 2, "0,1", NULL, 1,
             {"s32[5]{0}"}, {"s32[5]{0}"}, false, false};
  c = make_case(&s2);
  same_as_host("all-reduce max over replicas x partitions", &c, &log);
  check(count(log, "ncclGetUniqueId") == 2 && strstr(log, "ncclCommInitRank dev=2 rank=1/2") &&
            strstr(log, "ncclCommInitRank dev=1 rank=0/2") && strstr(log, "type=2 op=2"),
        "groups {0,2} and {1,3}, s32 max:\n%s", log);
  free(log);
  case_free(&c);
}

/* Every element type NCCL reduces, several operands in one group, in
 * place. */
static void test_types(void) {
  static const struct {
    const char *shape;
    CollReduction red;
    const char *call;
  } t[] = {
    {"s8[7]{0}", COLL_SUM, "type=0 op=0"},     {"u8[7]{0}", COLL_MAX, "type=1 op=2"},
    {"s32[7]{0}", COLL_MIN, "type=2 op=3"},    {"u32[7]{0}", COLL_PRODUCT, "type=3 op=1"},
    {"s64[7]{0}", COLL_PRODUCT, "type=4 op=1"}, {"u64[7]{0}", COLL_SUM, "type=5 op=0"},
    {"f16[7]{0}", COLL_SUM, "type=6 op=0"},    {"bf16[7]{0}", COLL_MAX, "type=9 op=2"},
    {"f64[7]{0}", COLL_MIN, "type=8 op=3"},    {"pred[7]{0}", COLL_SUM, "type=1 op=2"},
    {"pred[7]{0}", COLL_PRODUCT, "type=1 op=3"},
  };
  for (size_t k = 0; k < ARRAY_LEN(t); k++) {
    Spec s = {COLL_ALL_REDUCE, t[k].red, -1, CGM_CROSS_REPLICA, 3, 1, "", NULL, 1,
              {t[k].shape}, {t[k].shape}, false, false};
    set_devices(3);
    Case c = make_case(&s);
    char *log = NULL, name[64];
    snprintf(name, sizeof name, "all-reduce %s %s", t[k].shape, coll_reduction_name(t[k].red));
    same_as_host(name, &c, &log);
    char want[64];
    snprintf(want, sizeof want, "count=7 %s", t[k].call);
    check(strstr(log, want) != NULL, "%s: NCCL's '%s':\n%s", name, want, log);
    free(log);
    case_free(&c);
  }
  set_devices(4);
  Spec s = {COLL_ALL_REDUCE, COLL_SUM, -1, CGM_FLATTENED_ID, 2, 2, "0,1,2,3", NULL, 2,
            {"f32[4]{0}", "s32[2,2]{0,1}"}, {"f32[4]{0}", "s32[2,2]{0,1}"}, true, false};
  Case c = make_case(&s);
  char *log = NULL;
  same_as_host("all-reduce of two operands in place", &c, &log);
  char *lines = dev_lines(log, 1);
  check(strstr(lines, "ncclGroupStart dev=1\nncclAllReduce dev=1 rank=1/4 count=4 type=7 op=0 "
               "root=0 peer=-1 stream=legacy\nncclAllReduce dev=1 rank=1/4 count=4 type=2 op=0 "
               "root=0 peer=-1 stream=legacy\nncclGroupEnd dev=1\n") != NULL,
        "both operands in one group:\n%s", lines);
  free(lines);
  free(log);
  case_free(&c);
}

/* Reduce-scatter and all-gather along the major and a minor dimension,
 * and in a layout other than row-major. */
static void test_blocks(void) {
  static const struct {
    CollKind kind;
    int64_t dim;
    const char *in, *out, *call;
    int calls;                    /* per device */
  } t[] = {
    {COLL_REDUCE_SCATTER, 0, "f32[8,3]{1,0}", "f32[2,3]{1,0}", "ncclReduceScatter", 1},
    {COLL_REDUCE_SCATTER, 1, "f32[3,8]{1,0}", "f32[3,2]{1,0}", "ncclReduceScatter", 3},
    {COLL_REDUCE_SCATTER, 1, "f32[3,8]{0,1}", "f32[3,2]{0,1}", "ncclReduceScatter", 1},
    {COLL_ALL_GATHER, 0, "s32[2,3]{1,0}", "s32[8,3]{1,0}", "ncclAllGather", 1},
    {COLL_ALL_GATHER, 1, "s32[2,3]{1,0}", "s32[2,12]{1,0}", "ncclAllGather", 2},
    {COLL_ALL_GATHER, 1, "s32[2,3,2]{2,0,1}", "s32[2,12,2]{2,0,1}", "ncclAllGather", 1},
    {COLL_ALL_GATHER, 2, "f16[2,2,3]{2,1,0}", "f16[2,2,12]{2,1,0}", "ncclAllGather", 4},
  };
  for (size_t k = 0; k < ARRAY_LEN(t); k++) {
    Spec s = {t[k].kind, COLL_SUM, t[k].dim, CGM_FLATTENED_ID, 1, 4, "0,1,2,3", NULL, 1,
              {t[k].in}, {t[k].out}, false, false};
    Case c = make_case(&s);
    char *log = NULL, name[128];
    snprintf(name, sizeof name, "%s %s -> %s", coll_kind_name(t[k].kind), t[k].in, t[k].out);
    same_as_host(name, &c, &log);
    char *lines = dev_lines(log, 2);
    check(count(lines, t[k].call) == t[k].calls, "%s: %d %s calls:\n%s", name, t[k].calls,
          t[k].call, lines);
    free(lines);
    free(log);
    case_free(&c);
  }
}

/* All-to-all in both forms, collective-permute, collective-broadcast. */
static void test_moves(void) {
  char *log = NULL;
  Spec a0 = {COLL_ALL_TO_ALL, 0, 0, CGM_CROSS_REPLICA, 4, 1, "0,1,2,3", NULL, 1,
             {"f32[8,3]{1,0}"}, {"f32[8,3]{1,0}"}, false, false};
  Case c = make_case(&a0);
  same_as_host("all-to-all along dimension 0", &c, &log);
  char *lines = dev_lines(log, 1);
  check(count(lines, "ncclSend") == 3 && count(lines, "ncclRecv") == 3 &&
            strstr(lines, "ncclSend dev=1 rank=1/4 count=24 type=0 op=0 root=0 peer=0 "
                          "stream=legacy") != NULL,
        "all-to-all: a send and a receive of 24 bytes with each other member:\n%s", lines);
  free(lines);
  free(log);
  case_free(&c);

  Spec a1 = {COLL_ALL_TO_ALL, 0, 1, CGM_CROSS_REPLICA, 2, 1, "1,0", NULL, 1,
             {"s32[3,4]{1,0}"}, {"s32[3,4]{1,0}"}, false, false};
  set_devices(2);
  c = make_case(&a1);
  same_as_host("all-to-all along dimension 1 over {1,0}", &c, &log);
  lines = dev_lines(log, 0);
  check(count(lines, "ncclSend") == 3 && count(lines, "count=8 type=0") == 6,
        "a minor dimension: a chunk per block:\n%s", lines);
  free(lines);
  free(log);
  case_free(&c);
  set_devices(4);

  Spec tup = {COLL_ALL_TO_ALL, 0, -1, CGM_CROSS_PARTITION, 1, 4, "0,1,2,3", NULL, 4,
              {"f32[2,2]{1,0}", "f32[2,2]{1,0}", "f32[2,2]{1,0}", "f32[2,2]{1,0}"},
              {"f32[2,2]{1,0}", "f32[2,2]{1,0}", "f32[2,2]{1,0}", "f32[2,2]{1,0}"}, false,
              false};
  c = make_case(&tup);
  same_as_host("tuple all-to-all", &c, &log);
  lines = dev_lines(log, 3);
  check(count(lines, "ncclSend") == 3 && count(lines, "ncclRecv") == 3 &&
            count(lines, "ncclGroupStart") == 1,
        "the tuple form: operand k to member k, in one group:\n%s", lines);
  free(lines);
  free(log);
  case_free(&c);

  static const struct {
    const char *pairs;
    int sends0, recvs0;           /* device 0's */
  } perm[] = {{"0>1,1>2,2>3,3>0", 1, 1}, {"0>3,3>1", 1, 0}, {"0>0,1>2", 0, 0}};
  for (size_t k = 0; k < ARRAY_LEN(perm); k++) {
    Spec s = {COLL_COLLECTIVE_PERMUTE, 0, -1, CGM_CROSS_REPLICA, 4, 1, "", perm[k].pairs, 1,
              {"f16[5]{0}"}, {"f16[5]{0}"}, false, false};
    c = make_case(&s);
    char name[64];
    snprintf(name, sizeof name, "collective-permute %s", perm[k].pairs);
    same_as_host(name, &c, &log);
    lines = dev_lines(log, 0);
    check(count(lines, "ncclSend") == perm[k].sends0 && count(lines, "ncclRecv") == perm[k].recvs0,
          "%s: device 0 sends %d, receives %d:\n%s", name, perm[k].sends0, perm[k].recvs0,
          lines);
    free(lines);
    free(log);
    case_free(&c);
  }

  Spec b = {COLL_COLLECTIVE_BROADCAST, 0, -1, CGM_CROSS_REPLICA, 4, 1, "1,0;3,2", NULL, 1,
            {"u8[10]{0}"}, {"u8[10]{0}"}, false, false};
  c = make_case(&b);
  same_as_host("collective-broadcast over {{1,0},{3,2}}", &c, &log);
  check(count(log, "ncclBroadcast") == 4 && count(log, "root=0") == 4 &&
            strstr(log, "ncclCommInitRank dev=1 rank=0/2") != NULL,
        "broadcast from each group's first member, rank 0:\n%s", log);
  free(log);
  case_free(&c);
}

/* One GPU: a collective of one device still goes through NCCL, with a
 * communicator of one (no rendezvous, no id to share). */
static void test_one_device(void) {
  set_devices(1);
  Spec s = {COLL_ALL_REDUCE, COLL_SUM, -1, CGM_CROSS_REPLICA, 1, 1, "0", NULL, 1,
            {"f32[3,5]{1,0}"}, {"f32[3,5]{1,0}"}, false, false};
  Case c = make_case(&s);
  free(nccl_log());
  Diag d = {0};
  PlatformOptions o = popts(0);
  Platform *p = platform_cuda_new(&o, &d);
  CollExec *x = p ? coll_prepare(c.a, &c.t, p, &d) : NULL;
  DevPtr base = 0;
  if (check(x && x->on_device && p->alloc(p, (size_t)c.bytes, &base, &d),
            "one device: %s", d.msg ? d.msg : "")) {
    float v[15], got[15];
    for (int i = 0; i < 15; i++) v[i] = (float)i - 3;
    DevPtr in = base + (DevPtr)c.t.coll->in[0].offset, out = base + (DevPtr)c.t.coll->out[0].offset;
    bool ok = p->copy_h2d(p, in, v, sizeof v, &d) && coll_run(x, p, NULL, 0, 0, &in, &out, &d) &&
              p->copy_d2h(p, got, out, sizeof got, &d);
    check(ok && memcmp(v, got, sizeof v) == 0, "one device: the all-reduce of one is its "
          "operand: %s", d.msg ? d.msg : "");
    char *log = nccl_log(), id[64];
    made_id(log, 0, 0, id, sizeof id);
    char want[512];
    snprintf(want, sizeof want,
             "ncclGetUniqueId dev=0 -> %s\n"
             "ncclCommInitRank dev=0 rank=0/1 id=%s\n"
             "ncclGroupStart dev=0\n"
             "ncclAllReduce dev=0 rank=0/1 count=15 type=7 op=0 root=0 peer=-1 stream=legacy\n"
             "ncclGroupEnd dev=0\n", id, id);
    expect_lines("one device", log, 0, want);
    free(log);
    p->free(p, base);
  }
  platform_free(p);
  diag_clear(&d);
  case_free(&c);
  set_devices(4);
}

/* What NCCL does not take is staged through host memory, the same. */
static void test_not_taken(void) {
  static const Spec t[] = {
    {COLL_ALL_REDUCE, COLL_SUM, -1, CGM_CROSS_REPLICA, 4, 1, "", NULL, 1, {"s16[6]{0}"},
     {"s16[6]{0}"}, false, false},
    {COLL_REDUCE_SCATTER, COLL_MAX, 0, CGM_CROSS_REPLICA, 4, 1, "", NULL, 1,
     {"f8e4m3fn[8]{0}"}, {"f8e4m3fn[2]{0}"}, false, false},
    {COLL_ALL_GATHER, 0, 1, CGM_CROSS_REPLICA, 4, 1, "", NULL, 1, {"f32[2,3]{1,0}"},
     {"f32[2,12]{0,1}"}, false, false},
    {COLL_ALL_GATHER, 0, 0, CGM_CROSS_REPLICA, 4, 1, "", NULL, 1, {"f32[16]{0}"},
     {"f32[64]{0}"}, false, true},
    {COLL_COLLECTIVE_PERMUTE, 0, -1, CGM_CROSS_REPLICA, 4, 1, "", "0>1", 1, {"f32[4]{0}"},
     {"f32[4]{0}"}, true, false},
  };
  static const char *const why[] = {"s16 sum", "f8 max", "layouts differ",
                                    "overlapping slices", "a permute in place"};
  for (size_t k = 0; k < ARRAY_LEN(t); k++) {
    Case c = make_case(&t[k]);
    free(nccl_log());
    Run g = run_new(&c, true, NULL, 0);
    bool taken = false;
    for (int j = 0; j < g.n; j++) taken |= g.devs[j].x && g.devs[j].x->on_device;
    check(!taken, "%s: NCCL does not take it", why[k]);
    bool ok = run_go(&g);
    Run h = run_new(&c, false, NULL, 0);
    ok &= run_go(&h);
    check(ok, "%s: staged through host memory: %s", why[k], g.devs[0].msg ? g.devs[0].msg : "");
    for (int j = 0; ok && j < g.n; j++) {
      uint8_t *gb = run_bytes(&g, &c, j), *hb = run_bytes(&h, &c, j);
      const BufSlice o = c.t.coll->out[0];
      check(memcmp(gb + o.offset, hb + o.offset, (size_t)o.size) == 0,
            "%s: device %d's result is the host's", why[k], j);
      free(gb);
      free(hb);
    }
    char *log = nccl_log();
    check(log[0] == 0, "%s: no NCCL call:\n%s", why[k], log);
    free(log);
    run_free(&g);
    run_free(&h);
    case_free(&c);
  }
}

/* Failures: NCCL's (each naming the call and NCCL's text), an NCCL too
 * old, devices running different collectives. */
static void test_errors(void) {
  Spec s = {COLL_ALL_REDUCE, COLL_SUM, -1, CGM_CROSS_REPLICA, 2, 1, "", NULL, 1,
            {"f32[4]{0}"}, {"f32[4]{0}"}, false, false};
  set_devices(2);
  static const struct {
    const char *call;
    int status;
    const char *text;
  } f[] = {
    {"ncclAllReduce", 5,
     "NCCL: ncclAllReduce failed: invalid usage (run with NCCL_DEBUG=WARN for details) (5); "
     "NCCL's last error: mock: injected failure of ncclAllReduce on device "},
    {"ncclCommInitRank", 2, "NCCL: ncclCommInitRank failed: unhandled system error"},
  };
  for (size_t k = 0; k < ARRAY_LEN(f); k++) {
    Case c = make_case(&s);
    nccl_fail(f[k].call, f[k].status);
    Run g = run_new(&c, true, NULL, 0);
    bool ok = run_go(&g);
    nccl_fail(NULL, 0);
    check(!ok, "%s failing fails the run", f[k].call);
    for (int j = 0; j < g.n; j++)
      check(!g.devs[j].ok && g.devs[j].msg && strstr(g.devs[j].msg, f[k].text),
            "device %d's message has '%s': %s", j, f[k].text,
            g.devs[j].msg ? g.devs[j].msg : "(none)");
    run_free(&g);
    free(nccl_log());
    case_free(&c);
  }

  /* an NCCL older than 2.10 */
  setenv("MOCK_NCCL_VERSION", "2804", 1); /* 2.8.4, numbered as before 2.9 */
  Case c = make_case(&s);
  Run g = run_new(&c, true, NULL, 0);
  bool ran = run_go(&g);
  check(!ran && g.devs[0].msg && strstr(g.devs[0].msg, "libnccl.so.2 is NCCL 2.8.4; "
                                                       "collectives need NCCL 2.10"),
        "an old NCCL: %s", g.devs[0].msg ? g.devs[0].msg : "(none)");
  run_free(&g);
  unsetenv("MOCK_NCCL_VERSION");

  /* device 1 runs another collective: the rendezvous says so, NCCL is
   * never called */
  Case other = make_case(&s);
  free(nccl_log());
  g = run_new(&c, true, &other.t, 1);
  ran = run_go(&g);
  check(!ran, "devices running different collectives fail");
  bool said = false;
  for (int j = 0; j < g.n; j++)
    said |= g.devs[j].msg && strstr(g.devs[j].msg, "the devices ran different collectives");
  check(said, "... saying so: %s / %s", g.devs[0].msg ? g.devs[0].msg : "",
        g.devs[1].msg ? g.devs[1].msg : "");
  char *log = nccl_log();
  check(log[0] == 0, "... and call NCCL for neither:\n%s", log);
  free(log);
  run_free(&g);
  case_free(&c);
  case_free(&other);
  set_devices(4);
}

static void test_share_exchange(void) {
  set_devices(2);
  Spec s = {COLL_ALL_REDUCE, COLL_SUM, -1, CGM_CROSS_REPLICA, 2, 1, "", NULL, 1,
            {"s32[3]{0}"}, {"s32[3]{0}"}, false, false};
  Case c = make_case(&s);
  free(nccl_log());
  Run g = run_new(&c, true, NULL, 0);
  Tap b = {.mu = PTHREAD_MUTEX_INITIALIZER};
  g.tap = &b;
  bool ok = run_go(&g);
  check(ok, "through the exchange: %s", g.devs[0].msg ? g.devs[0].msg : "");
  check(b.ids == 2 && b.meets == 2, "both members take the id from the exchange and meet "
        "through it once (%d, %d)", b.ids, b.meets);
  uint8_t *r0 = run_bytes(&g, &c, 0);
  int32_t got[3];
  memcpy(got, r0 + c.t.coll->out[0].offset, sizeof got);
  /* put_value's, summed over devices 0 and 1 */
  int32_t want[3];
  for (int i = 0; i < 3; i++) {
    want[i] = 0;
    for (int dv = 0; dv < 2; dv++) want[i] += (int32_t)((i * 7 + dv * 5) % 11) - 5;
  }
  check(memcmp(got, want, sizeof got) == 0, "the exchanged id's communicator sums: %d %d %d", got[0],
        got[1], got[2]);
  free(r0);
  char *log = nccl_log();
  check(count(log, "ncclCommInitRank") == 2 && count(log, "ncclGetUniqueId") == 1,
        "one id, two ranks:\n%s", log);
  free(log);
  run_free(&g);
  case_free(&c);
  set_devices(4);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: nccl_mock MOCKDIR\n");
    return 2;
  }
  mockdir = argv[1];
  set_devices(4);
  Diag d = {0};
  PlatformOptions o = popts(3);
  Platform *p = platform_cuda_new(&o, &d);
  if (!check(p != NULL, "platform_cuda_new on mock GPU 3 of 4: %s", d.msg ? d.msg : "")) {
    printf("%d passed, %d failed\n", passed, failed);
    return 1;
  }
  platform_free(p);
  o = popts(4);
  p = platform_cuda_new(&o, &d);
  check(!p && d.msg && strstr(d.msg, "there is no CUDA device 4: the driver sees 4 GPUs"),
        "GPU 4 of 4: %s", d.msg ? d.msg : "(opened)");
  platform_free(p);
  diag_clear(&d);
  check(platform_cuda_device_count(&d) == 4, "platform_cuda_device_count: %s",
        d.msg ? d.msg : "");
  diag_clear(&d);
  test_all_reduce();
  test_groups();
  test_types();
  test_blocks();
  test_moves();
  test_one_device();
  test_not_taken();
  test_errors();
  test_share_exchange();
  free(take());
  check(live_comms() == 0, "every communicator is destroyed (%d live)", live_comms());
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
