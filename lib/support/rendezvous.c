/*
 * rendezvous.c - meetings of the devices of a multi-device run
 * (rendezvous.h).
 *
 * One mutex and one condition variable for the whole run (a handful of
 * devices).  Phase 1: members join; the last to join completes the meeting
 * and takes it off the active list.  Phase 2: members leave; nobody returns
 * until all have left, and the last to return frees the meeting.  Devices
 * waiting in phase 1 of an incomplete meeting are counted (nblocked): when
 * they and the devices whose runs ended are all of them, no meeting can
 * complete any more, and the run fails.  Phase 2 always completes: its
 * members have all joined and leave whatever happens to them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rendezvous.h"

struct RdvMeet {
  RdvMeet *next;
  const void *key;
  int n;
  int64_t *members;
  void **brought;                  /* per member */
  bool *joined;
  int arrived, departed, released;
  bool complete;
};

struct Rendezvous {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ndev;
  int nblocked;                    /* devices in phase 1 of an incomplete meeting */
  int nexited;                     /* devices whose run has ended */
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
  return w;
}

static void meet_free(RdvMeet *m) {
  free(m->members);
  free(m->brought);
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
  w->nexited++;
  if (failed) abort_run(w, dev, why ? why : "failed");
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
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
                  void *const **brought, char *why, size_t nwhy) {
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
  if (++m->arrived == n) {
    m->complete = true;
    w->nblocked -= n - 1;
    for (RdvMeet **p = &w->active; *p; p = &(*p)->next)
      if (*p == m) {
        *p = m->next;
        break;
      }
    pthread_cond_broadcast(&w->cv);
  } else {
    w->nblocked++;
    while (!m->complete && !w->aborted) {
      if (w->nblocked + w->nexited == w->ndev) {
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
      w->nblocked--;
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
