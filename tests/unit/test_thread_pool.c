/*
 * test_thread_pool.c - the host kernels' thread pool
 * (lib/runtime/thread_pool.c): every index of [0, n) is handed out exactly
 * once for pools of 2 to 8 threads and many sizes, back-to-back runs
 * reuse the workers, a NULL pool and n <= 1 run on the caller, and the
 * default thread count follows XHLO_NUM_THREADS.
 */
#include <criterion/criterion.h>

#include <stdatomic.h>
#include <stdlib.h>

#include "../../lib/runtime/thread_pool.h"

typedef struct Count {
  atomic_int *hits;
  atomic_int calls;
} Count;

static void count_range(void *ctx, int64_t lo, int64_t hi) {
  Count *c = ctx;
  cr_assert(lo < hi);
  for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&c->hits[i], 1);
  atomic_fetch_add(&c->calls, 1);
}

static void check_cover(ThreadPool *p, int64_t n) {
  Count c = {calloc((size_t)n + 1, sizeof(atomic_int)), 0};
  thread_pool_run(p, n, count_range, &c);
  for (int64_t i = 0; i < n; i++)
    cr_assert_eq(atomic_load(&c.hits[i]), 1, "n=%lld: index %lld run %d times",
                 (long long)n, (long long)i, atomic_load(&c.hits[i]));
  free(c.hits);
}

Test(thread_pool, every_index_once) {
  for (int t = 2; t <= 8; t++) {
    ThreadPool *p = thread_pool_new(t);
    cr_assert_not_null(p);
    cr_assert_eq(thread_pool_threads(p), t);
    for (int64_t n = 1; n < 300; n += 7) check_cover(p, n);
    check_cover(p, 100003);
    thread_pool_free(p);
  }
}

Test(thread_pool, many_back_to_back_runs) {
  ThreadPool *p = thread_pool_new(4);
  cr_assert_not_null(p);
  for (int k = 0; k < 2000; k++) check_cover(p, 1 + k % 37);
  thread_pool_free(p);
}

Test(thread_pool, caller_alone) {
  cr_assert_null(thread_pool_new(1));
  cr_assert_null(thread_pool_new(0));
  cr_assert_eq(thread_pool_threads(NULL), 1);
  Count c = {calloc(11, sizeof(atomic_int)), 0};
  thread_pool_run(NULL, 10, count_range, &c);
  cr_assert_eq(atomic_load(&c.calls), 1);   /* one call for the whole range */
  thread_pool_run(NULL, 0, count_range, &c);
  cr_assert_eq(atomic_load(&c.calls), 1);
  free(c.hits);
  ThreadPool *p = thread_pool_new(3);
  thread_pool_run(p, 0, count_range, &c);
  check_cover(p, 1);
  thread_pool_free(p);
}

Test(thread_pool, default_threads) {
  cr_assert_eq(thread_pool_default_threads(5), 5);
  setenv("XHLO_NUM_THREADS", "3", 1);
  cr_assert_eq(thread_pool_default_threads(0), 3);
  cr_assert_eq(thread_pool_default_threads(2), 2);
  setenv("XHLO_NUM_THREADS", "0", 1);         /* out of range: ignored */
  cr_assert_geq(thread_pool_default_threads(0), 1);
  setenv("XHLO_NUM_THREADS", "4x", 1);        /* junk: ignored */
  int n = thread_pool_default_threads(0);
  unsetenv("XHLO_NUM_THREADS");
  cr_assert_eq(n, thread_pool_default_threads(0));
}
