/*
 * exchange_mpi.c - the exchange of a run with one device per process of an
 * MPI job (exchange.h): device d is rank d of MPI_COMM_WORLD.  libmpi is
 * opened with dlopen (OpenMPI's ABI, mpi_min.h), so xhlo-run builds with
 * libc alone and needs MPI only when a launcher started it.
 *
 * An exchange posts a nonblocking receive from every member that sends
 * this one bytes and a nonblocking send to every member it sends to (in
 * pieces of at most 1 GiB: MPI counts are ints), copies its own part, and
 * polls the requests to completion.  Messages carry a tag made from the
 * collective's name; between polls it looks for what would make it wait
 * forever:
 *   - another process's end notice (EXIT_TAG, sent by end): a failure
 *     abandons this exchange; a member that ended without sending what
 *     this one waits for ran different collectives;
 *   - a message from a member it waits for with another collective's tag,
 *     while the one it waits for does not come (for MISMATCH_S seconds:
 *     the member may have sent both, the first still in transfer): the two
 *     ran different collectives.
 * At its run's end each process sends its notice (failed or not, with its
 * message) to every other and waits for all of theirs, so every process
 * knows how the run went before it writes anything.
 *
 * Asynchronous collectives exchange from background threads: MPI is
 * initialized for MPI_THREAD_SERIALIZED and every MPI call is made under
 * one mutex (an exchange polls, releasing it between rounds).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exchange.h"
#include "mpi_min.h"

#define EXIT_TAG 1
#define NOTICE_BYTES 256
#define PIECE ((size_t)1 << 30)

typedef struct Mpi {
  void *lib;
  pthread_mutex_t mu;              /* every MPI call */
  bool abandoned;                  /* this device is failing (abandon) */
  char abandon_why[NOTICE_BYTES];
  XMPI_Comm world;
  XMPI_Datatype byte;
  int rank, size;
  XMPI_Finalize_fn finalize;
  XMPI_Isend_fn isend;
  XMPI_Irecv_fn irecv;
  XMPI_Test_fn test;
  XMPI_Cancel_fn cancel;
  XMPI_Request_free_fn request_free;
  XMPI_Iprobe_fn iprobe;
  XMPI_Get_count_fn get_count;
  XMPI_Error_string_fn error_string;
  /* this run: the processes whose end notice came, and how they went */
  bool *ended, *failed;
  char (*why)[NOTICE_BYTES];
  int first_failed;
  char first_why[NOTICE_BYTES];
} Mpi;

static bool mpi_err(Mpi *m, int rc, const char *what, char *why, size_t nwhy) {
  char s[XMPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (m->error_string(rc, s, &len) != XMPI_SUCCESS) snprintf(s, sizeof s, "error %d", rc);
  snprintf(why, nwhy, "MPI: %s failed: %s", what, s);
  return false;
}

/* The collective's message tag: 2.. 32001 (MPI promises tags up to 32767). */
static int tag_of(const char *name) {
  uint32_t h = 2166136261u;
  for (const char *s = name ? name : ""; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return 2 + (int)(h % 32000);
}

/* Takes the end notice of rank r, which is there (probed). */
static bool take_notice(Mpi *m, int r, char *why, size_t nwhy) {
  char buf[NOTICE_BYTES];
  XMPI_Request q;
  int rc = m->irecv(buf, NOTICE_BYTES, m->byte, r, EXIT_TAG, m->world, &q), flag = 0;
  while (rc == XMPI_SUCCESS && !flag) rc = m->test(&q, &flag, XMPI_STATUS_IGNORE);
  if (rc != XMPI_SUCCESS) return mpi_err(m, rc, "receiving an end notice", why, nwhy);
  buf[NOTICE_BYTES - 1] = 0;
  m->ended[r] = true;
  m->failed[r] = buf[0] != 0;
  snprintf(m->why[r], NOTICE_BYTES, "%s", buf + 1);
  return true;
}

/* Takes every end notice that has come.  false on an MPI error. */
static bool poll_notices(Mpi *m, char *why, size_t nwhy) {
  for (int r = 0; r < m->size; r++) {
    if (r == m->rank || m->ended[r]) continue;
    int flag = 0, rc = m->iprobe(r, EXIT_TAG, m->world, &flag, XMPI_STATUS_IGNORE);
    if (rc != XMPI_SUCCESS) return mpi_err(m, rc, "MPI_Iprobe", why, nwhy);
    if (flag && !take_notice(m, r, why, nwhy)) return false;
  }
  return true;
}

typedef struct Req {
  XMPI_Request q;
  int peer;                        /* member */
  bool recv, done;
  int bytes;
  double other_since;              /* since when its sender has another
                                      collective's message here; 0: not */
} Req;

/* How long a member may send another collective's data while this one
 * waits for its own before the two are taken to run different ones. */
#define MISMATCH_S 5.0

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void drop(Mpi *m, Req *r, int n) {
  for (int k = 0; k < n; k++)
    if (!r[k].done) {
      m->cancel(&r[k].q);
      m->request_free(&r[k].q);
    }
}

static bool mpi_exchange(Exchange *x, const XchgGroup *g, const void *const *send,
                         const size_t *send_bytes, void *const *recv,
                         const size_t *recv_bytes, char *why, size_t nwhy) {
  Mpi *m = x->impl;
  int tag = tag_of(g->name), nreq = 0, cap = 0;
  Req *reqs = NULL;
  bool ok = true;
  pthread_mutex_lock(&m->mu);
  for (int pass = 0; pass < 2 && ok; pass++) /* receives first */
    for (int j = 0; j < g->n && ok; j++) {
      size_t n = pass == 0 ? recv_bytes[j] : send_bytes[j];
      if (j == g->me) continue;
      for (size_t off = 0; off < n && ok; off += PIECE) {
        int len = (int)(n - off < PIECE ? n - off : PIECE), rc;
        if (nreq == cap) reqs = xreallocarray(reqs, (size_t)(cap = cap ? 2 * cap : 16), sizeof *reqs);
        Req *r = &reqs[nreq];
        *r = (Req){.peer = j, .recv = pass == 0, .bytes = len};
        int rank = (int)g->members[j];
        if (pass == 0)
          rc = m->irecv((uint8_t *)recv[j] + off, len, m->byte, rank, tag, m->world, &r->q);
        else
          rc = m->isend((const uint8_t *)send[j] + off, len, m->byte, rank, tag, m->world,
                        &r->q);
        if (rc != XMPI_SUCCESS) ok = mpi_err(m, rc, pass ? "MPI_Isend" : "MPI_Irecv", why, nwhy);
        else nreq++;
      }
    }
  if (ok && send_bytes[g->me] != recv_bytes[g->me]) {
    snprintf(why, nwhy, "%s: device %lld sends itself %zu bytes and expects %zu", g->name,
             (long long)g->members[g->me], send_bytes[g->me], recv_bytes[g->me]);
    ok = false;
  } else if (ok && recv_bytes[g->me] && recv[g->me] != send[g->me]) {
    memcpy(recv[g->me], send[g->me], recv_bytes[g->me]);
  }
  int left = nreq;
  while (ok && left) {
    for (int k = 0; k < nreq && ok; k++) {
      Req *r = &reqs[k];
      if (r->done) continue;
      XMPI_Status st;
      int flag = 0, rc = m->test(&r->q, &flag, &st);
      if (rc != XMPI_SUCCESS) {
        ok = mpi_err(m, rc, r->recv ? "a receive" : "a send", why, nwhy);
        break;
      }
      if (!flag) continue;
      r->done = true;
      left--;
      int got = r->bytes;
      if (r->recv && (m->get_count(&st, m->byte, &got) != XMPI_SUCCESS || got != r->bytes)) {
        snprintf(why, nwhy, "%s: device %lld sent %d bytes where device %lld expects %d "
                 "(the devices ran different collectives)", g->name,
                 (long long)g->members[r->peer], got, (long long)g->members[g->me], r->bytes);
        ok = false;
      }
    }
    if (!ok || !left) break;
    if (m->abandoned) {
      snprintf(why, nwhy, "the run was abandoned: %s", m->abandon_why);
      ok = false;
      break;
    }
    if (!poll_notices(m, why, nwhy)) {
      ok = false;
      break;
    }
    for (int p = 0; p < m->size && ok; p++)
      if (m->ended[p] && m->failed[p]) {
        snprintf(why, nwhy, "the run was abandoned: device %d: %s", p, m->why[p]);
        ok = false;
      }
    for (int k = 0; k < nreq && ok; k++) {
      Req *r = &reqs[k];
      if (r->done || !r->recv) continue;
      int rank = (int)g->members[r->peer], flag = 0, rc;
      XMPI_Status st;
      if (m->ended[rank]) {
        /* its messages came before its notice: one more look */
        rc = m->test(&r->q, &flag, &st);
        if (rc == XMPI_SUCCESS && flag) {
          r->done = true;
          left--;
          continue;
        }
        snprintf(why, nwhy, "%s: device %d ended its run without taking part (the "
                 "devices ran different collectives)", g->name, rank);
        ok = false;
        break;
      }
      rc = m->iprobe(rank, XMPI_ANY_TAG, m->world, &flag, &st);
      if (rc != XMPI_SUCCESS) {
        ok = mpi_err(m, rc, "MPI_Iprobe", why, nwhy);
      } else if (!flag || st.MPI_TAG == tag || st.MPI_TAG == EXIT_TAG) {
        r->other_since = 0;
      } else if (!r->other_since) {
        /* it may have sent ours first, still in transfer: a while to finish */
        r->other_since = now_s();
      } else if (now_s() - r->other_since > MISMATCH_S) {
        snprintf(why, nwhy, "%s: device %d sends another collective's data and not this "
                 "one's (the devices ran different collectives)", g->name, rank);
        ok = false;
      }
    }
    if (ok) {
      pthread_mutex_unlock(&m->mu);
      sched_yield();
      pthread_mutex_lock(&m->mu);
    }
  }
  if (!ok) drop(m, reqs, nreq);
  pthread_mutex_unlock(&m->mu);
  free(reqs);
  return ok;
}

static void mpi_end(Exchange *x, int dev, bool failed, const char *why) {
  Mpi *m = x->impl;
  pthread_mutex_lock(&m->mu);
  char notice[NOTICE_BYTES] = {0}, err[NOTICE_BYTES];
  notice[0] = failed;
  snprintf(notice + 1, NOTICE_BYTES - 1, "%s", failed && why ? why : "");
  Req *reqs = xcalloc((size_t)m->size, sizeof *reqs);
  int nreq = 0;
  for (int r = 0; r < m->size; r++)
    if (r != m->rank && m->isend(notice, NOTICE_BYTES, m->byte, r, EXIT_TAG, m->world,
                                 &reqs[nreq].q) == XMPI_SUCCESS)
      nreq++;
  /* every other process's notice: a failure to receive one counts as its
   * failure, never as a hang */
  for (int r = 0; r < m->size; r++) {
    while (r != m->rank && !m->ended[r]) {
      int flag = 0;
      if (m->iprobe(r, EXIT_TAG, m->world, &flag, XMPI_STATUS_IGNORE) != XMPI_SUCCESS ||
          (flag && !take_notice(m, r, err, sizeof err))) {
        m->ended[r] = m->failed[r] = true;
        snprintf(m->why[r], NOTICE_BYTES, "its end notice could not be received");
      }
      if (!flag) sched_yield();
    }
  }
  for (int k = 0; k < nreq; k++) {
    int flag = 0;
    while (!flag && m->test(&reqs[k].q, &flag, XMPI_STATUS_IGNORE) == XMPI_SUCCESS)
      if (!flag) sched_yield();
  }
  free(reqs);
  m->ended[m->rank] = true;
  m->failed[m->rank] = failed;
  snprintf(m->why[m->rank], NOTICE_BYTES, "%s", failed && why ? why : "");
  m->first_failed = -1;
  /* the first failure is the one the others' messages do not blame on
   * another device ("the run was abandoned: ..."); else the lowest */
  for (int pass = 0; pass < 2 && m->first_failed < 0; pass++)
    for (int r = 0; r < m->size; r++)
      if (m->failed[r] && (pass || strncmp(m->why[r], "the run was abandoned", 21) != 0)) {
        m->first_failed = r;
        snprintf(m->first_why, NOTICE_BYTES, "%s", m->why[r]);
        break;
      }
  for (int r = 0; r < m->size; r++) m->ended[r] = m->failed[r] = false;
  m->abandoned = false;
  pthread_mutex_unlock(&m->mu);
  (void)dev;
}

static void mpi_abandon(Exchange *x, int dev, const char *why) {
  Mpi *m = x->impl;
  pthread_mutex_lock(&m->mu);
  m->abandoned = true;
  snprintf(m->abandon_why, NOTICE_BYTES, "device %d: %s", dev, why ? why : "failed");
  pthread_mutex_unlock(&m->mu);
}

/* A background thread's completion, for the device's own thread. */
typedef struct Waiter {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
} Waiter;

static void *mpi_waiter_new(Exchange *x, int dev) {
  (void)x, (void)dev;
  Waiter *t = xcalloc(1, sizeof *t);
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
  return t;
}

static void mpi_waiter_done(Exchange *x, void *p) {
  (void)x;
  Waiter *t = p;
  pthread_mutex_lock(&t->mu);
  t->done = true;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

static void mpi_waiter_await(Exchange *x, void *p) {
  (void)x;
  Waiter *t = p;
  pthread_mutex_lock(&t->mu);
  while (!t->done) pthread_cond_wait(&t->cv, &t->mu);
  pthread_mutex_unlock(&t->mu);
  pthread_mutex_destroy(&t->mu);
  pthread_cond_destroy(&t->cv);
  free(t);
}

static int mpi_first_failed(Exchange *x, char *why, size_t nwhy) {
  Mpi *m = x->impl;
  snprintf(why, nwhy, "%s", m->first_failed >= 0 ? m->first_why : "");
  return m->first_failed;
}

static void mpi_destroy(Exchange *x) {
  Mpi *m = x->impl;
  m->finalize();
  pthread_mutex_destroy(&m->mu);
  /* libmpi stays loaded: OpenMPI is not made to be unloaded */
  free(m->ended);
  free(m->failed);
  free(m->why);
  free(m);
  free(x);
}

Exchange *xchg_mpi_new(char *why, size_t nwhy) {
  const char *path = getenv("XHLO_MPI_LIB");
  if (!path || !*path) path = "libmpi.so.40";
  /* global: OpenMPI's components, which it opens itself, bind to libmpi */
  void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    snprintf(why, nwhy, "cannot load OpenMPI's %s (%s): install OpenMPI (Debian's "
             "openmpi-bin and libopenmpi-dev; scripts/setup.sh installs them) or name "
             "its libmpi in XHLO_MPI_LIB", path, dlerror());
    return NULL;
  }
  Mpi *m = xcalloc(1, sizeof *m);
  m->lib = lib;
  struct { const char *name; void **slot; } syms[] = {
    {"ompi_mpi_comm_world", (void **)&m->world},
    {"ompi_mpi_byte", (void **)&m->byte},
    {"MPI_Finalize", (void **)&m->finalize},
    {"MPI_Isend", (void **)&m->isend},
    {"MPI_Irecv", (void **)&m->irecv},
    {"MPI_Test", (void **)&m->test},
    {"MPI_Cancel", (void **)&m->cancel},
    {"MPI_Request_free", (void **)&m->request_free},
    {"MPI_Iprobe", (void **)&m->iprobe},
    {"MPI_Get_count", (void **)&m->get_count},
    {"MPI_Error_string", (void **)&m->error_string},
  };
  void *init = dlsym(lib, "MPI_Init_thread"), *initialized = dlsym(lib, "MPI_Initialized");
  void *rank = dlsym(lib, "MPI_Comm_rank"), *size = dlsym(lib, "MPI_Comm_size");
  void *seterr = dlsym(lib, "MPI_Comm_set_errhandler");
  void *errors_return = dlsym(lib, "ompi_mpi_errors_return");
  const char *missing = !init ? "MPI_Init_thread" : !initialized ? "MPI_Initialized"
                      : !rank ? "MPI_Comm_rank" : !size ? "MPI_Comm_size"
                      : !seterr ? "MPI_Comm_set_errhandler"
                      : !errors_return ? "ompi_mpi_errors_return" : NULL;
  for (size_t k = 0; k < ARRAY_LEN(syms) && !missing; k++)
    if (!(*syms[k].slot = dlsym(lib, syms[k].name))) missing = syms[k].name;
  if (missing) {
    snprintf(why, nwhy, "%s has no %s: xhlo-run takes OpenMPI's libmpi (libmpi.so.40)",
             path, missing);
    free(m);
    return NULL;
  }
  int flag = 0, provided = 0, rc = ((XMPI_Initialized_fn)initialized)(&flag);
  if (rc == XMPI_SUCCESS && !flag)
    rc = ((XMPI_Init_thread_fn)init)(NULL, NULL, XMPI_THREAD_SERIALIZED, &provided);
  else
    provided = 0;                  /* initialized by someone else: one thread */
  if (rc == XMPI_SUCCESS)
    rc = ((XMPI_Comm_set_errhandler_fn)seterr)(m->world, (XMPI_Errhandler)errors_return);
  if (rc == XMPI_SUCCESS) rc = ((XMPI_Comm_rank_fn)rank)(m->world, &m->rank);
  if (rc == XMPI_SUCCESS) rc = ((XMPI_Comm_size_fn)size)(m->world, &m->size);
  if (rc != XMPI_SUCCESS) {
    mpi_err(m, rc, "MPI_Init_thread", why, nwhy);
    free(m);
    return NULL;
  }
  m->ended = xcalloc((size_t)m->size, sizeof *m->ended);
  m->failed = xcalloc((size_t)m->size, sizeof *m->failed);
  m->why = xcalloc((size_t)m->size, sizeof *m->why);
  m->first_failed = -1;
  pthread_mutex_init(&m->mu, NULL);
  Exchange *x = xcalloc(1, sizeof *x);
  x->name = "mpi";
  x->ndev = m->size;
  x->self = m->rank;
  x->impl = m;
  x->exchange = mpi_exchange;
  x->end = mpi_end;
  x->first_failed = mpi_first_failed;
  x->abandon = mpi_abandon;
  if (provided >= XMPI_THREAD_SERIALIZED) {
    /* else every collective runs on the device's own thread */
    x->waiter_new = mpi_waiter_new;
    x->waiter_done = mpi_waiter_done;
    x->waiter_await = mpi_waiter_await;
  }
  x->destroy = mpi_destroy;
  return x;
}
