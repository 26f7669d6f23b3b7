/*
 * rendezvous.h - where the devices of a multi-device run (one thread each)
 * meet at a collective: the interpreter's (lib/eval/collective.c) and the
 * executor's (lib/runtime/collective_exec.c).
 *
 * A meeting is keyed by an opaque pointer (the instruction or thunk, the
 * same object on every device) and its members (device ids in group order).
 * Each member joins with a pointer to what it brings and waits until every
 * member has joined; then each reads what the others brought, and leaves;
 * leaving returns once every member has left, so nothing brought is freed
 * or overwritten while another member reads it.  A completed meeting is
 * forgotten, so the next execution of the same key (a loop) opens a new
 * one.
 *
 * A device may also join from a background thread (an asynchronous
 * collective, started by the device's thread, which goes on and later
 * waits for it: rdv_waiter_*).
 *
 * A run never hangs: a device whose run ends in failure (rdv_exit) abandons
 * every pending meeting; when no device can go on (each has ended, or its
 * own thread waits to join a meeting that cannot complete, or waits for a
 * background thread that does: the devices ran different collectives), the
 * run fails too.
 */
#ifndef XHLOC_RENDEZVOUS_H
#define XHLOC_RENDEZVOUS_H

#include "support.h"

typedef struct Rendezvous Rendezvous;
typedef struct RdvMeet RdvMeet;
typedef struct RdvWaiter RdvWaiter;

Rendezvous *rdv_new(int ndev);
void rdv_free(Rendezvous *w);      /* NULL is fine */

/* Device dev's run has ended; failed: with the message why, which
 * abandons every pending meeting. */
void rdv_exit(Rendezvous *w, int dev, bool failed, const char *why);
/* The device whose failure ended the run first; -1 when none did. */
int rdv_first_failed(const Rendezvous *w);
/* Its message ("" when none failed). */
const char *rdv_failure(const Rendezvous *w);

/* Joins meeting `key` of the n devices `members` as device `me` (one of
 * them), bringing `mine`, from the device's own thread (bg NULL) or its
 * background thread bg.  Returns once every member has joined, with
 * (*brought)[k] what member k brought.  NULL with a message in why when
 * the run was abandoned or cannot complete, or the members disagree. */
RdvMeet *rdv_join(Rendezvous *w, const void *key, const char *name,
                  const int64_t *members, int n, int64_t me, void *mine,
                  RdvWaiter *bg, void *const **brought, char *why, size_t nwhy);
/* Device dev's failure abandons every pending meeting now (its run ends
 * later, with rdv_exit): its background threads stop waiting. */
void rdv_abandon(Rendezvous *w, int dev, const char *why);

/* A background thread of device dev; it calls rdv_waiter_finish when its
 * work (and its last meeting) is over, and the device's own thread waits
 * for that with rdv_waiter_await, which frees it. */
RdvWaiter *rdv_waiter_new(Rendezvous *w, int dev);
void rdv_waiter_finish(Rendezvous *w, RdvWaiter *t);
void rdv_waiter_await(Rendezvous *w, RdvWaiter *t);

/* Leaves a joined meeting (always, also after an error of one's own);
 * returns once every member has left. */
void rdv_leave(Rendezvous *w, RdvMeet *m);

#endif
