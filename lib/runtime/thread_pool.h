/*
 * thread_pool.h - a fixed pool of worker threads running one parallel loop
 * at a time, for the host platform's kernels (platform_host.c).
 *
 * thread_pool_run(p, n, fn, ctx) calls fn(ctx, lo, hi) on ranges [lo, hi)
 * that together cover [0, n) exactly once, from the calling thread and the
 * pool's workers, and returns when all of them have finished.  The ranges
 * are handed out dynamically (an atomic counter), so which thread computes
 * which range varies from run to run: fn must give the same result for a
 * range whichever thread runs it.
 */
#ifndef XHLOC_THREAD_POOL_H
#define XHLOC_THREAD_POOL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ThreadPool ThreadPool;
typedef void (*PoolFn)(void *ctx, int64_t lo, int64_t hi);

/* A pool of nthreads threads in all, the caller of thread_pool_run
 * included (nthreads - 1 workers are started).  NULL when nthreads < 2 or
 * a thread cannot be started (the caller then runs everything itself). */
ThreadPool *thread_pool_new(int nthreads);
void thread_pool_free(ThreadPool *p);   /* NULL is fine; joins the workers */
int thread_pool_threads(const ThreadPool *p);

/* Runs fn over [0, n) as described above.  p may be NULL: fn(ctx, 0, n). */
void thread_pool_run(ThreadPool *p, int64_t n, PoolFn fn, void *ctx);

/* The number of threads a host platform uses: `requested` when positive,
 * else XHLO_NUM_THREADS when it holds a number from 1 to 4096, else the
 * number of CPUs this process may run on. */
int thread_pool_default_threads(int requested);

#endif
