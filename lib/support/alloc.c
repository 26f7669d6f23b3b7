/*
 * alloc.c - checked heap allocation and the internal-bug exit.
 *
 * Allocation failure is not a user error: it aborts with a message.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

void die_at(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: internal error: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p)
    die("out of memory allocating %zu bytes", n);
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    die("out of memory allocating %zu x %zu bytes", n, size);
  return p;
}

void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p)
    die("out of memory reallocating %zu bytes", n);
  return p;
}

void *xreallocarray(void *p, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size)
    die("allocation size overflow (%zu x %zu)", n, size);
  return xrealloc(p, n * size);
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n) {
  char *p = xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

int vec_newcap_(int cap, int need) {
  if (need < 0 || need > (1 << 30))
    die("vector too large (%d elements)", need);
  int c = cap ? cap : 8;
  while (c < need)
    c *= 2;
  return c;
}
