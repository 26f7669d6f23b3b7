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
 * A run never hangs: a device whose run ends in failure (rdv_exit) abandons
 * every pending meeting; when every device still running waits to join a
 * meeting that cannot complete (the others finished: the devices ran
 * different collectives), the run fails too.
 */
#ifndef XHLOC_RENDEZVOUS_H
#define XHLOC_RENDEZVOUS_H

#include "support.h"

typedef struct Rendezvous Rendezvous;
typedef struct RdvMeet RdvMeet;

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
 * them), bringing `mine`.  Returns once every member has joined, with
 * (*brought)[k] what member k brought.  NULL with a message in why when
 * the run was abandoned or cannot complete, or the members disagree. */
RdvMeet *rdv_join(Rendezvous *w, const void *key, const char *name,
                  const int64_t *members, int n, int64_t me, void *mine,
                  void *const **brought, char *why, size_t nwhy);
/* Leaves a joined meeting (always, also after an error of one's own);
 * returns once every member has left. */
void rdv_leave(Rendezvous *w, RdvMeet *m);

#endif
