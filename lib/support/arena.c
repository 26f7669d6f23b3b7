/*
 * arena.c - the bump allocator that owns every IR node of a module.
 *
 * Memory comes from a chain of blocks; allocations are zeroed and 16-byte
 * aligned; nothing is freed one by one.  Large requests get a block of their
 * own so the current block's tail is not wasted.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

enum { ARENA_BLOCK = 64 * 1024, ARENA_ALIGN = 16 };

typedef struct Block {
  struct Block *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} Block;

struct Arena {
  Block *head;     /* current block, then older ones */
  size_t total;    /* bytes handed out */
};

Arena *arena_new(void) { return xcalloc(1, sizeof(Arena)); }

void arena_free(Arena *a) {
  if (!a)
    return;
  for (Block *b = a->head, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(a);
}

static Block *new_block(size_t size) {
  Block *b = xmalloc(sizeof(Block) + size);
  b->size = size;
  b->used = 0;
  b->next = NULL;
  return b;
}

void *arena_alloc(Arena *a, size_t n) {
  if (n > SIZE_MAX - ARENA_ALIGN)
    die("arena allocation too large");
  n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (n == 0)
    n = ARENA_ALIGN;
  a->total += n;
  Block *b = a->head;
  if (b && b->size - b->used >= n) {
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
  }
  if (n > ARENA_BLOCK / 4) {
    /* Big request: its own block, linked behind the current one. */
    Block *big = new_block(n);
    big->used = n;
    if (b) {
      big->next = b->next;
      b->next = big;
    } else {
      a->head = big;
    }
    memset(big->data, 0, n);
    return big->data;
  }
  Block *nb = new_block(ARENA_BLOCK);
  nb->next = b;
  a->head = nb;
  nb->used = n;
  memset(nb->data, 0, n);
  return nb->data;
}

void *arena_array(Arena *a, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size)
    die("arena array size overflow (%zu x %zu)", n, size);
  return arena_alloc(a, n * size);
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  return p;
}

char *arena_strdup(Arena *a, const char *s) {
  return arena_strndup(a, s, strlen(s));
}

void *arena_memdup(Arena *a, const void *p, size_t n) {
  void *q = arena_alloc(a, n);
  if (n)
    memcpy(q, p, n);
  return q;
}

size_t arena_bytes_used(const Arena *a) { return a->total; }
