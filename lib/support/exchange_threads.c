/*
 * exchange_threads.c - the exchange of a run whose devices are threads of
 * this process (exchange.h): the members meet at a rendezvous
 * (rendezvous.h), each bringing its send buffers, and each copies what the
 * others send it straight from their buffers; leaving waits until every
 * member has copied, so a send buffer is free again when exchange returns.
 * Deadlocks (devices that run different collectives) and failures end the
 * run with a message, as the rendezvous does.
 */
#include <stdlib.h>
#include <string.h>

#include "exchange.h"
#include "rendezvous.h"

typedef struct Offer {
  int n;
  const void *const *send;
  const size_t *send_bytes;
} Offer;

static bool th_exchange(Exchange *x, const XchgGroup *g, const void *const *send,
                        const size_t *send_bytes, void *const *recv,
                        const size_t *recv_bytes, char *why, size_t nwhy) {
  Rendezvous *w = x->impl;
  Offer mine = {g->n, send, send_bytes};
  void *const *brought;
  int64_t self = g->members[g->me];
  RdvMeet *m = rdv_join(w, g->key, g->name, g->members, g->n, self, &mine, g->bg,
                        &brought, why, nwhy);
  if (!m) return false;
  bool ok = true;
  for (int j = 0; j < g->n && ok; j++) {
    const Offer *o = brought[j];
    size_t got = o->n == g->n ? o->send_bytes[g->me] : (size_t)-1;
    if (got != recv_bytes[j]) {
      snprintf(why, nwhy, "%s: device %lld sends %zu bytes to device %lld, which "
               "expects %zu", g->name, (long long)g->members[j], got, (long long)self,
               recv_bytes[j]);
      ok = false;
    } else if (got && recv[j] != o->send[g->me]) {
      memcpy(recv[j], o->send[g->me], got);
    }
  }
  rdv_leave(w, m);
  return ok;
}

static void th_end(Exchange *x, int dev, bool failed, const char *why) {
  rdv_exit(x->impl, dev, failed, why);
}

static int th_first_failed(Exchange *x, char *why, size_t nwhy) {
  snprintf(why, nwhy, "%s", rdv_failure(x->impl));
  return rdv_first_failed(x->impl);
}

static void th_abandon(Exchange *x, int dev, const char *why) {
  rdv_abandon(x->impl, dev, why);
}

static void *th_waiter_new(Exchange *x, int dev) { return rdv_waiter_new(x->impl, dev); }
static void th_waiter_done(Exchange *x, void *t) { rdv_waiter_finish(x->impl, t); }
static void th_waiter_await(Exchange *x, void *t) { rdv_waiter_await(x->impl, t); }

static void th_destroy(Exchange *x) {
  rdv_free(x->impl);
  free(x);
}

Exchange *xchg_threads_new(int ndev) {
  Exchange *x = xcalloc(1, sizeof *x);
  x->name = "threads";
  x->ndev = ndev;
  x->self = -1;
  x->impl = rdv_new(ndev);
  x->exchange = th_exchange;
  x->end = th_end;
  x->first_failed = th_first_failed;
  x->abandon = th_abandon;
  x->waiter_new = th_waiter_new;
  x->waiter_done = th_waiter_done;
  x->waiter_await = th_waiter_await;
  x->destroy = th_destroy;
  return x;
}
