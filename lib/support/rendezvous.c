/*
 * rendezvous.c - meetings of the devices of a multi-device run
 * (rendezvous.h).
 *
 * One mutex and one condition variable for the whole run (a handful of
 * devices).  Phase 1: members join; the last to join completes the meeting
 * and takes it off the active list.  Phase 2: members leave; nobody returns
 * until all have left, and the last to return frees the meeting.  A device
 * is stuck when its run has ended, or its own thread waits in phase 1 of an
 * incomplete meeting, or waits for a background thread that does: when
 * every device is stuck no meeting can complete any more, and the run
 * fails.  Phase 2 always completes: its members have all joined and leave
 * whatever happens to them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rendezvous.h"

struct RdvWaiter {
  int dev;
  bool in_join;                    /* waiting in phase 1 */
  bool finished;
};

struct RdvMeet {
  RdvMeet *next;
  const void *key;
  int n;
  int64_t *members;
  void **brought;                  /* per member */
  RdvWaiter **bg;                  /* per member: its background thread, or
                                      NULL for the device's own */
  bool *joined;
  int arrived, departed, released;
  bool complete;
};

struct Rendezvous {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ndev;
  bool *exited;                    /* per device: its run has ended */
  bool *joining;                   /* per device: its own thread is in phase 1 */
  RdvWaiter **awaiting;            /* per device: the background thread its
                                      own thread waits for */
  bool aborted;
  char why[256];                   /* why the run was abandoned */
  int first_failed;                /* the device that failed first; -1 none */
  RdvMeet *active;
};

Rendezvous *rdv_new(int ndev) {
  Rendezvous *w = xcalloc(1, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->ndev = ndev;
  w->first_failed = -1;
  w->exited = xcalloc((size_t)ndev + 1, sizeof *w->exited);
  w->joining = xcalloc((size_t)ndev + 1, sizeof *w->joining);
  w->awaiting = xcalloc((size_t)ndev + 1, sizeof *w->awaiting);
  return w;
}

/* Whether no device can go on (under the mutex). */
static bool all_stuck(const Rendezvous *w) {
  for (int d = 0; d < w->ndev; d++)
    if (!w->exited[d] && !w->joining[d] && !(w->awaiting[d] && w->awaiting[d]->in_join))
      return false;
  return true;
}

/* Device dev's thread (bg NULL: its own) waits in phase 1, or no longer. */
static void set_joining(Rendezvous *w, int64_t dev, RdvWaiter *bg, bool on) {
  if (bg) bg->in_join = on;
  else if (dev >= 0 && dev < w->ndev) w->joining[dev] = on;
}

static void meet_free(RdvMeet *m) {
  free(m->members);
  free(m->brought);
  free(m->bg);
  free(m->joined);
  free(m);
}

void rdv_free(Rendezvous *w) {
  if (!w) return;
  for (RdvMeet *m = w->active, *next; m; m = next) {
    next = m->next;
    meet_free(m);
  }
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w->exited);
  free(w->joining);
  free(w->awaiting);
  free(w);
}

int rdv_first_failed(const Rendezvous *w) { return w->first_failed; }

const char *rdv_failure(const Rendezvous *w) { return w->aborted ? w->why : ""; }

static void abort_run(Rendezvous *w, int dev, const char *why) {
  if (w->aborted) return;
  w->aborted = true;
  w->first_failed = dev;
  snprintf(w->why, sizeof w->why, "%s", why);
  pthread_cond_broadcast(&w->cv);
}

void rdv_exit(Rendezvous *w, int dev, bool failed, const char *why) {
  pthread_mutex_lock(&w->mu);
  if (dev >= 0 && dev < w->ndev) w->exited[dev] = true;
  if (failed) abort_run(w, dev, why ? why : "failed");
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

void rdv_abandon(Rendezvous *w, int dev, const char *why) {
  pthread_mutex_lock(&w->mu);
  abort_run(w, dev, why ? why : "failed");
  pthread_mutex_unlock(&w->mu);
}

RdvWaiter *rdv_waiter_new(Rendezvous *w, int dev) {
  (void)w;
  RdvWaiter *t = xcalloc(1, sizeof *t);
  t->dev = dev;
  return t;
}

void rdv_waiter_finish(Rendezvous *w, RdvWaiter *t) {
  pthread_mutex_lock(&w->mu);
  t->finished = true;
  t->in_join = false;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

void rdv_waiter_await(Rendezvous *w, RdvWaiter *t) {
  pthread_mutex_lock(&w->mu);
  if (t->dev >= 0 && t->dev < w->ndev) w->awaiting[t->dev] = t;
  while (!t->finished) {
    if (!w->aborted && all_stuck(w)) {
      char what[160];
      snprintf(what, sizeof what, "device %d waits for an asynchronous collective that "
               "cannot complete (the devices ran different collectives)", t->dev);
      abort_run(w, t->dev, what);
    }
    pthread_cond_wait(&w->cv, &w->mu);
  }
  if (t->dev >= 0 && t->dev < w->ndev) w->awaiting[t->dev] = NULL;
  pthread_mutex_unlock(&w->mu);
  free(t);
}

/* The incomplete meeting of key with exactly these members; NULL none.
 * *clash: one with other members that share a device. */
static RdvMeet *find(Rendezvous *w, const void *key, const int64_t *members,
                     int n, RdvMeet **clash) {
  *clash = NULL;
  for (RdvMeet *a = w->active; a; a = a->next) {
    if (a->key != key) continue;
    bool same = a->n == n, overlap = false;
    for (int k = 0; k < a->n; k++) {
      if (same && a->members[k] != members[k]) same = false;
      for (int j = 0; j < n; j++) overlap |= a->members[k] == members[j];
    }
    if (same) return a;
    if (overlap) *clash = a;
  }
  return NULL;
}

RdvMeet *rdv_join(Rendezvous *w, const void *key, const char *name,
                  const int64_t *members, int n, int64_t me, void *mine,
                  RdvWaiter *bg, void *const **brought, char *why, size_t nwhy) {
  int pos = -1;
  for (int k = 0; k < n; k++)
    if (members[k] == me) pos = k;
  if (pos < 0) {
    snprintf(why, nwhy, "device %lld is not among the participants", (long long)me);
    return NULL;
  }
  pthread_mutex_lock(&w->mu);
  RdvMeet *clash, *m = w->aborted ? NULL : find(w, key, members, n, &clash);
  if (w->aborted) {
    snprintf(why, nwhy, "the run was abandoned: %s", w->why);
    goto fail;
  }
  if (!m && clash) {
    snprintf(why, nwhy, "device %lld disagrees with device %lld about the "
             "participants", (long long)me, (long long)clash->members[0]);
    goto fail;
  }
  if (!m) {
    m = xcalloc(1, sizeof *m);
    m->key = key;
    m->n = n;
    m->members = xcalloc((size_t)n, sizeof *m->members);
    memcpy(m->members, members, (size_t)n * sizeof *members);
    m->brought = xcalloc((size_t)n, sizeof *m->brought);
    m->bg = xcalloc((size_t)n, sizeof *m->bg);
    m->joined = xcalloc((size_t)n, sizeof *m->joined);
    m->next = w->active;
    w->active = m;
  }
  if (m->joined[pos]) {
    snprintf(why, nwhy, "device %lld joined twice", (long long)me);
    goto fail;
  }
  m->joined[pos] = true;
  m->brought[pos] = mine;
  m->bg[pos] = bg;
  if (++m->arrived == n) {
    m->complete = true;
    for (int k = 0; k < n; k++)
      if (k != pos) set_joining(w, m->members[k], m->bg[k], false);
    for (RdvMeet **p = &w->active; *p; p = &(*p)->next)
      if (*p == m) {
        *p = m->next;
        break;
      }
    pthread_cond_broadcast(&w->cv);
  } else {
    set_joining(w, me, bg, true);
    while (!m->complete && !w->aborted) {
      if (all_stuck(w)) {
        char what[200];
        snprintf(what, sizeof what, "%s: the devices ran different collectives",
                 name);
        abort_run(w, (int)me, what);
        break;
      }
      pthread_cond_wait(&w->cv, &w->mu);
    }
    if (!m->complete) {
      /* abandoned: m stays on the active list, freed with the run */
      if (w->first_failed == (int)me)
        snprintf(why, nwhy, "only %d of its %d devices arrived and no other "
                 "can (the devices ran different collectives)", m->arrived, n);
      else
        snprintf(why, nwhy, "the run was abandoned: %s", w->why);
      set_joining(w, me, bg, false);
      m->joined[pos] = false;
      m->brought[pos] = NULL;
      goto fail;
    }
  }
  pthread_mutex_unlock(&w->mu);
  *brought = m->brought;
  return m;
fail:
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

void rdv_leave(Rendezvous *w, RdvMeet *m) {
  pthread_mutex_lock(&w->mu);
  if (++m->departed == m->n) pthread_cond_broadcast(&w->cv);
  while (m->departed < m->n) pthread_cond_wait(&w->cv, &w->mu);
  bool last = ++m->released == m->n;
  pthread_mutex_unlock(&w->mu);
  if (last) meet_free(m);
}
