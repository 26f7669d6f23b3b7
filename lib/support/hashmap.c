/*
 * hashmap.c - string-keyed open-addressing hash map (linear probing, FNV-1a).
 *
 * Keys are borrowed, not copied.  Deleted slots become tombstones and are
 * dropped on the next rehash.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

typedef struct HashEntry {
  const char *key; /* NULL: empty; TOMBSTONE: deleted */
  size_t keylen;
  uint64_t hash;
  void *val;
} HashEntry;

static char tombstone_;
#define TOMBSTONE (&tombstone_)

uint64_t hash_bytes(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static HashEntry *find(const HashMap *m, const char *key, size_t len,
                       uint64_t h) {
  if (!m->slots)
    return NULL;
  for (int i = 0; i < m->cap; i++) {
    HashEntry *e = &m->slots[(h + (uint64_t)i) & (uint64_t)(m->cap - 1)];
    if (!e->key)
      return NULL;
    if (e->key != TOMBSTONE && e->hash == h && e->keylen == len &&
        memcmp(e->key, key, len) == 0)
      return e;
  }
  return NULL;
}

void *hashmap_getn(const HashMap *m, const char *key, size_t len) {
  HashEntry *e = find(m, key, len, hash_bytes(key, len));
  return e ? e->val : NULL;
}

void *hashmap_get(const HashMap *m, const char *key) {
  return hashmap_getn(m, key, strlen(key));
}

static void rehash(HashMap *m) {
  int cap = m->cap ? m->cap : 16;
  while (m->len * 2 >= cap)
    cap *= 2;
  HashEntry *old = m->slots;
  int oldcap = m->cap;
  m->slots = xcalloc((size_t)cap, sizeof(HashEntry));
  m->cap = cap;
  m->used = m->len;
  for (int i = 0; i < oldcap; i++) {
    HashEntry *e = &old[i];
    if (!e->key || e->key == TOMBSTONE)
      continue;
    for (uint64_t j = e->hash;; j++) {
      HashEntry *d = &m->slots[j & (uint64_t)(cap - 1)];
      if (!d->key) {
        *d = *e;
        break;
      }
    }
  }
  free(old);
}

void hashmap_put(HashMap *m, const char *key, void *val) {
  size_t len = strlen(key);
  uint64_t h = hash_bytes(key, len);
  HashEntry *e = find(m, key, len, h);
  if (e) {
    e->val = val;
    return;
  }
  if (!m->slots || (m->used + 1) * 10 >= m->cap * 7)
    rehash(m);
  for (uint64_t j = h;; j++) {
    HashEntry *d = &m->slots[j & (uint64_t)(m->cap - 1)];
    if (!d->key || d->key == TOMBSTONE) {
      if (!d->key)
        m->used++;
      d->key = key, d->keylen = len, d->hash = h, d->val = val;
      m->len++;
      return;
    }
  }
}

bool hashmap_delete(HashMap *m, const char *key) {
  size_t len = strlen(key);
  HashEntry *e = find(m, key, len, hash_bytes(key, len));
  if (!e)
    return false;
  e->key = TOMBSTONE;
  m->len--;
  return true;
}

void hashmap_free(HashMap *m) {
  free(m->slots);
  m->slots = NULL;
  m->cap = m->len = m->used = 0;
}
