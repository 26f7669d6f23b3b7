/*
 * arena.c - the bump allocator that owns every IR node of a module.
 *
 * Memory comes from a chain of blocks; allocations are zeroed and 16-byte
 * aligned; nothing is freed one by one.  Large requests get a block of their
 * own so the current block's tail is not wasted.  Blocks start at 64 KiB and
 * double up to 2 MiB, so a small module stays small while a large one is
 * carried by 2 MiB blocks that the kernel may back with huge pages (one page
 * fault per block instead of 512).
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum {
  ARENA_BLOCK = 64 * 1024,        /* first block */
  ARENA_BLOCK_MAX = 2 * 1024 * 1024,
  ARENA_ALIGN = 16,
};

typedef struct Block {
  struct Block *next;
  size_t size, used;
  size_t mapped;   /* bytes mmap'd for the block (0: malloc'd) */
  _Alignas(16) unsigned char data[];
} Block;

struct Arena {
  Block *head;     /* current block, then older ones */
  size_t total;    /* bytes handed out */
  size_t next;     /* size of the next ordinary block */
};

Arena *arena_new(void) { return xcalloc(1, sizeof(Arena)); }

void arena_free(Arena *a) {
  if (!a)
    return;
  for (Block *b = a->head, *next; b; b = next) {
    next = b->next;
    if (b->mapped)
      munmap(b, b->mapped);
    else
      free(b);
  }
  free(a);
}

/* A block of 2 MiB or more comes straight from mmap, aligned to 2 MiB so
 * the kernel can back it with huge pages.  Its memory is fresh zero pages,
 * which arena_alloc then need not clear again. */
static Block *map_block(size_t size) {
  size_t n = (sizeof(Block) + size + ARENA_BLOCK_MAX - 1) &
             ~(size_t)(ARENA_BLOCK_MAX - 1);
  size_t span = n + ARENA_BLOCK_MAX;
  unsigned char *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    die("out of memory mapping %zu bytes", n);
  uintptr_t start = ((uintptr_t)p + ARENA_BLOCK_MAX - 1) &
                    ~(uintptr_t)(ARENA_BLOCK_MAX - 1);
  size_t head = start - (uintptr_t)p, tail = span - head - n;
  if (head)
    munmap(p, head);
  if (tail)
    munmap((unsigned char *)start + n, tail);
#ifdef MADV_HUGEPAGE
  madvise((void *)start, n, MADV_HUGEPAGE);
#endif
  Block *b = (Block *)start;
  b->size = n - sizeof(Block);
  b->used = 0;
  b->next = NULL;
  b->mapped = n;
  return b;
}

static Block *new_block(size_t size) {
  if (sizeof(Block) + size >= ARENA_BLOCK_MAX)
    return map_block(size);
  Block *b = xmalloc(sizeof(Block) + size);
  b->size = size;
  b->used = 0;
  b->next = NULL;
  b->mapped = 0;
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
    if (!b->mapped)
      memset(p, 0, n);
    return p;
  }
  if (!a->next)
    a->next = ARENA_BLOCK;
  if (n > a->next / 4) {
    /* Big request: its own block, linked behind the current one. */
    Block *big = new_block(n);
    big->used = n;
    if (!big->mapped)
      memset(big->data, 0, n);
    if (b) {
      big->next = b->next;
      b->next = big;
    } else {
      a->head = big;
    }
    return big->data;
  }
  /* The header shares the block's allocation: keep the pair 2 MiB. */
  size_t size = a->next >= ARENA_BLOCK_MAX ? ARENA_BLOCK_MAX - sizeof(Block)
                                           : a->next;
  if (a->next < ARENA_BLOCK_MAX)
    a->next *= 2;
  Block *nb = new_block(size);
  nb->next = b;
  a->head = nb;
  nb->used = n;
  if (!nb->mapped)
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
