/*
 * thread_pool.c - the host kernels' worker threads (thread_pool.h).
 *
 * One job at a time: thread_pool_run publishes (fn, ctx, n, chunk) under
 * the mutex with a new generation number and wakes the workers; everyone,
 * the caller included, then takes chunks of [0, n) from an atomic counter
 * until none are left.  Each worker joins every generation exactly once and
 * reports on `done` when it has left the job; the caller returns only when
 * all workers have, so a job's data is never touched after its run ends and
 * the next job cannot start while a worker is still inside the previous one.
 * Workers spin briefly before sleeping on the condition variable, because
 * kernels follow each other closely.
 */
#define _GNU_SOURCE
#include "thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

enum { SPIN_ROUNDS = 2000, CHUNKS_PER_THREAD = 4 };

struct ThreadPool {
  int nthreads;
  pthread_t *workers;             /* nthreads - 1 */
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  atomic_uint_fast64_t gen;       /* job generation; changes under mu */
  bool stop;
  int busy;                       /* workers inside the current job */
  /* the current job */
  PoolFn fn;
  void *ctx;
  int64_t n, chunk;
  atomic_int_fast64_t next;
};

static void work(ThreadPool *p, PoolFn fn, void *ctx, int64_t n, int64_t chunk) {
  for (;;) {
    int64_t lo = atomic_fetch_add(&p->next, chunk);
    if (lo >= n)
      return;
    int64_t hi = n - lo < chunk ? n : lo + chunk;
    fn(ctx, lo, hi);
  }
}

static void *worker_main(void *arg) {
  ThreadPool *p = arg;
  uint64_t seen = 0;
  for (;;) {
    /* a short spin, then sleep until the generation changes */
    for (int k = 0; k < SPIN_ROUNDS && atomic_load(&p->gen) == seen; k++)
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#else
      ;
#endif
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->gen) == seen && !p->stop)
      pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    seen = atomic_load(&p->gen);
    PoolFn fn = p->fn;
    void *ctx = p->ctx;
    int64_t n = p->n, chunk = p->chunk;
    pthread_mutex_unlock(&p->mu);
    work(p, fn, ctx, n, chunk);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0)
      pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
  }
}

ThreadPool *thread_pool_new(int nthreads) {
  if (nthreads < 2)
    return NULL;
  ThreadPool *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->workers = calloc((size_t)nthreads, sizeof *p->workers);
  if (!p->workers) {
    free(p);
    return NULL;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->gen, 0);
  atomic_init(&p->next, 0);
  for (int k = 0; k < nthreads - 1; k++) {
    if (pthread_create(&p->workers[k], NULL, worker_main, p) != 0) {
      p->nthreads = k + 1;        /* the ones started, and the caller */
      thread_pool_free(p);
      return NULL;
    }
  }
  p->nthreads = nthreads;
  return p;
}

void thread_pool_free(ThreadPool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int k = 0; k < p->nthreads - 1; k++)
    pthread_join(p->workers[k], NULL);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->mu);
  free(p->workers);
  free(p);
}

int thread_pool_threads(const ThreadPool *p) {
  return p ? p->nthreads : 1;
}

void thread_pool_run(ThreadPool *p, int64_t n, PoolFn fn, void *ctx) {
  if (n <= 0)
    return;
  if (!p || n == 1) {
    fn(ctx, 0, n);
    return;
  }
  int64_t chunk = n / ((int64_t)p->nthreads * CHUNKS_PER_THREAD);
  if (chunk < 1)
    chunk = 1;
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  p->chunk = chunk;
  atomic_store(&p->next, 0);
  p->busy = p->nthreads - 1;
  atomic_fetch_add(&p->gen, 1);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  work(p, fn, ctx, n, chunk);
  pthread_mutex_lock(&p->mu);
  while (p->busy > 0)
    pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

int thread_pool_default_threads(int requested) {
  if (requested > 0)
    return requested;
  const char *e = getenv("XHLO_NUM_THREADS");
  if (e && *e) {
    char *end;
    long v = strtol(e, &end, 10);
    if (*end == '\0' && v >= 1 && v <= 4096)
      return (int)v;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int c = CPU_COUNT(&set);
    if (c > 0)
      return c;
  }
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c > 0 ? (int)c : 1;
}
