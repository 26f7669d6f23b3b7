/*
 * exchange.c - what every transport of exchange.h shares: finding an MPI
 * launcher in the environment, freeing, and the broadcast built on
 * exchange.
 */
#include <stdlib.h>
#include <string.h>

#include "exchange.h"

static bool env_int(const char *name, int *out) {
  const char *s = getenv(name);
  if (!s || !*s) return false;
  char *e;
  long v = strtol(s, &e, 10);
  if (*e || v < 0 || v > 1 << 24) return false;
  *out = (int)v;
  return true;
}

bool xchg_launched(int *rank, int *size) {
  if (env_int("OMPI_COMM_WORLD_RANK", rank) && env_int("OMPI_COMM_WORLD_SIZE", size))
    return true;
  return env_int("PMI_RANK", rank) && env_int("PMI_SIZE", size);
}

void xchg_free(Exchange *x) {
  if (x) x->destroy(x);
}

bool xchg_bcast(Exchange *x, const XchgGroup *g, void *buf, size_t n, char *why,
                size_t nwhy) {
  const void **send = xcalloc((size_t)g->n, sizeof *send);
  void **recv = xcalloc((size_t)g->n, sizeof *recv);
  size_t *sb = xcalloc((size_t)g->n, sizeof *sb), *rb = xcalloc((size_t)g->n, sizeof *rb);
  for (int j = 0; j < g->n; j++) {
    send[j] = buf;
    sb[j] = g->me == 0 ? n : 0;
  }
  recv[0] = buf;
  rb[0] = n;
  bool ok = x->exchange(x, g, send, sb, recv, rb, why, nwhy);
  free(send);
  free(recv);
  free(sb);
  free(rb);
  return ok;
}
