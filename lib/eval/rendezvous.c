/*
 * rendezvous.c - where the devices of a multi-device run meet at a
 * collective.
 *
 * Every device runs the module on its own thread with its own Eval; they
 * share one EvalWorld.  A collective is a meeting keyed by the instruction
 * and its participants (flattened device ids, in group order).  Each member
 * joins with its operand values and waits until all have joined (phase 1);
 * then every member reads the others' operands and computes its own result,
 * and leaves; nobody returns from leaving until every member has left
 * (phase 2), so no operand is freed or overwritten while another member
 * still reads it.  A meeting leaves the active list once complete, so the
 * next execution of the same instruction (a loop) opens a new one.
 *
 * A run never hangs: when a device fails, the world is aborted and every
 * device waiting in phase 1 fails too; when every device still running is
 * waiting in phase 1 (the others having finished), no meeting can complete
 * (the devices ran different collectives) and the run fails naming the
 * instruction.  Phase 2 always completes: its members have all arrived and
 * leave whether or not their own computation succeeded.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

struct EvalMeet {
  EvalMeet *next;
  const HloInstr *i;
  int n;
  int64_t *members;
  EvalValue *const **ops;          /* per member: its operand values */
  int arrived, departed, released;
  bool complete;
};

struct EvalWorld {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ndev;
  int nblocked;                    /* devices in phase 1 of an incomplete meeting */
  int nexited;                     /* devices whose run has ended */
  bool aborted;
  char why[256];                   /* the first device's failure */
  int first_failed;                /* that device; -1 none */
  EvalMeet *active;
};

EvalWorld *ev_world_new(int ndev) {
  EvalWorld *w = xcalloc(1, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->ndev = ndev;
  w->first_failed = -1;
  return w;
}

static void meet_free(EvalMeet *m) {
  free(m->members);
  free(m->ops);
  free(m);
}

void ev_world_free(EvalWorld *w) {
  if (!w) return;
  for (EvalMeet *m = w->active, *next; m; m = next) {
    next = m->next;
    meet_free(m);
  }
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w);
}

int ev_world_first_failed(const EvalWorld *w) { return w->first_failed; }

void ev_world_exit(EvalWorld *w, int dev, bool failed, const char *why) {
  pthread_mutex_lock(&w->mu);
  w->nexited++;
  if (failed && !w->aborted) {
    w->aborted = true;
    w->first_failed = dev;
    snprintf(w->why, sizeof w->why, "%s", why ? why : "failed");
  }
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static int64_t device_of(const Eval *ev) {
  int64_t parts = ev->m->num_partitions > 0 ? ev->m->num_partitions : 1;
  return ev->o.replica_id * parts + ev->o.partition_id;
}

EvalMeet *ev_meet_join(Eval *ev, const HloInstr *i, const int64_t *members,
                       int n, EvalValue *const *ops,
                       EvalValue *const *const **peers) {
  EvalWorld *w = ev->o.world;
  int64_t me = device_of(ev);
  int pos = -1;
  for (int k = 0; k < n; k++)
    if (members[k] == me) pos = k;
  if (pos < 0) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "device %lld is not among the participants",
            (long long)me);
    return NULL;
  }
  pthread_mutex_lock(&w->mu);
  EvalMeet *m = NULL;
  bool ok = !w->aborted, mine = false;
  int arrived = 0;
  for (EvalMeet *a = w->active; ok && a && !m; a = a->next) {
    if (a->i != i || a->complete) continue;
    bool same = a->n == n, overlap = false;
    for (int k = 0; k < a->n; k++) {
      if (same && a->members[k] != members[k]) same = false;
      for (int j = 0; j < n; j++) overlap |= a->members[k] == members[j];
    }
    if (same) m = a;
    else if (overlap) {
      pthread_mutex_unlock(&w->mu);
      ev_fail(ev, i, EVAL_ERR_INVALID, "device %lld disagrees with device %lld "
              "about the participants", (long long)me, (long long)a->members[0]);
      return NULL;
    }
  }
  if (ok && !m) {
    m = xcalloc(1, sizeof *m);
    m->i = i;
    m->n = n;
    m->members = xcalloc((size_t)n, sizeof *m->members);
    memcpy(m->members, members, (size_t)n * sizeof *members);
    m->ops = xcalloc((size_t)n, sizeof *m->ops);
    m->next = w->active;
    w->active = m;
  }
  if (ok && m->ops[pos]) {
    pthread_mutex_unlock(&w->mu);
    ev_fail(ev, i, EVAL_ERR_INVALID, "device %lld joined twice", (long long)me);
    return NULL;
  }
  if (ok) {
    m->ops[pos] = ops;
    if (++m->arrived == n) {
      m->complete = true;
      w->nblocked -= n - 1;
      for (EvalMeet **p = &w->active; *p; p = &(*p)->next)
        if (*p == m) {
          *p = m->next;
          break;
        }
      pthread_cond_broadcast(&w->cv);
    } else {
      w->nblocked++;
      while (!m->complete && !w->aborted) {
        if (w->nblocked + w->nexited == w->ndev) {
          w->aborted = true;
          w->first_failed = (int)me;
          snprintf(w->why, sizeof w->why, "%s: the devices ran different "
                   "collectives", i->name);
          pthread_cond_broadcast(&w->cv);
          break;
        }
        pthread_cond_wait(&w->cv, &w->mu);
      }
      if (!m->complete) {
        /* abandoned: m stays on the active list, freed with the world */
        mine = w->first_failed == (int)me;
        arrived = m->arrived;
        w->nblocked--;
        m->ops[pos] = NULL;
        ok = false;
      }
    }
  }
  char why[sizeof w->why];
  snprintf(why, sizeof why, "%s", w->why);
  pthread_mutex_unlock(&w->mu);
  if (!ok) {
    if (mine)
      ev_fail(ev, i, EVAL_ERR_INVALID, "only %d of its %d devices arrived and no "
              "other can (the devices ran different collectives)", arrived, n);
    else
      ev_fail(ev, i, EVAL_ERR_INVALID, "the run was abandoned: %s", why);
    return NULL;
  }
  *peers = m->ops;
  return m;
}

void ev_meet_leave(Eval *ev, EvalMeet *m) {
  EvalWorld *w = ev->o.world;
  pthread_mutex_lock(&w->mu);
  if (++m->departed == m->n) pthread_cond_broadcast(&w->cv);
  while (m->departed < m->n) pthread_cond_wait(&w->cv, &w->mu);
  bool last = ++m->released == m->n;
  pthread_mutex_unlock(&w->mu);
  if (last) meet_free(m);
}
