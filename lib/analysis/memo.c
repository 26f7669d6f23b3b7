/*
 * memo.c - pointer-keyed memo tables for the analysis: pointer -> pointer
 * (AffMemo) and pointer -> Interval (RangeMemo).
 *
 * Open addressing with linear probing.  Every slot carries the epoch it was
 * written in and only slots of the current epoch count, so forgetting
 * everything is one increment.  Lookups never iterate over the table, so the
 * addresses used as keys never influence any result.
 */
#include "affine_internal.h"

#include <stdlib.h>
#include <string.h>

static uint32_t ptr_hash(const void *p) {
  uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 32);
}

void aff_memo_reset(AffMemo *m) {
  m->epoch++;
  m->len = 0;
  if (m->epoch == 0) { /* wrapped: really clear */
    if (m->cap)
      memset(m->epochs, 0, sizeof(uint32_t) * m->cap);
    m->epoch = 1;
  }
}

const void *aff_memo_get(const AffMemo *m, const void *key) {
  if (!m->cap)
    return NULL;
  uint32_t j = ptr_hash(key) & (m->cap - 1);
  while (m->epochs[j] == m->epoch) {
    if (m->keys[j] == key)
      return m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  return NULL;
}

static void memo_insert(AffMemo *m, const void *key, const void *val) {
  uint32_t j = ptr_hash(key) & (m->cap - 1);
  while (m->epochs[j] == m->epoch && m->keys[j] != key)
    j = (j + 1) & (m->cap - 1);
  if (m->epochs[j] != m->epoch)
    m->len++;
  m->epochs[j] = m->epoch;
  m->keys[j] = key;
  m->vals[j] = val;
}

void aff_memo_put(AffMemo *m, const void *key, const void *val) {
  if (m->epoch == 0)
    m->epoch = 1;
  if ((m->len + 1) * 2 > m->cap) {
    uint32_t ocap = m->cap, oepoch = m->epoch;
    const void **okeys = m->keys, **ovals = m->vals;
    uint32_t *oepochs = m->epochs;
    m->cap = ocap ? ocap * 2 : 256;
    m->keys = xcalloc(m->cap, sizeof(void *));
    m->vals = xcalloc(m->cap, sizeof(void *));
    m->epochs = xcalloc(m->cap, sizeof(uint32_t));
    m->len = 0;
    for (uint32_t i = 0; i < ocap; i++)
      if (oepochs[i] == oepoch)
        memo_insert(m, okeys[i], ovals[i]);
    free(okeys);
    free(ovals);
    free(oepochs);
  }
  memo_insert(m, key, val);
}

void aff_memo_free(AffMemo *m) {
  free(m->keys);
  free(m->vals);
  free(m->epochs);
  memset(m, 0, sizeof(*m));
}

void range_memo_reset(RangeMemo *m) {
  m->epoch++;
  m->len = 0;
  if (m->epoch == 0) {
    if (m->cap)
      memset(m->epochs, 0, sizeof(uint32_t) * m->cap);
    m->epoch = 1;
  }
}

bool range_memo_get(const RangeMemo *m, const void *key, Interval *out) {
  if (!m->cap)
    return false;
  uint32_t j = ptr_hash(key) & (m->cap - 1);
  while (m->epochs[j] == m->epoch) {
    if (m->keys[j] == key) {
      *out = m->vals[j];
      return true;
    }
    j = (j + 1) & (m->cap - 1);
  }
  return false;
}

static void range_insert(RangeMemo *m, const void *key, Interval val) {
  uint32_t j = ptr_hash(key) & (m->cap - 1);
  while (m->epochs[j] == m->epoch && m->keys[j] != key)
    j = (j + 1) & (m->cap - 1);
  if (m->epochs[j] != m->epoch)
    m->len++;
  m->epochs[j] = m->epoch;
  m->keys[j] = key;
  m->vals[j] = val;
}

void range_memo_put(RangeMemo *m, const void *key, Interval val) {
  if (m->epoch == 0)
    m->epoch = 1;
  if ((m->len + 1) * 2 > m->cap) {
    uint32_t ocap = m->cap, oepoch = m->epoch;
    const void **okeys = m->keys;
    Interval *ovals = m->vals;
    uint32_t *oepochs = m->epochs;
    m->cap = ocap ? ocap * 2 : 256;
    m->keys = xcalloc(m->cap, sizeof(void *));
    m->vals = xcalloc(m->cap, sizeof(Interval));
    m->epochs = xcalloc(m->cap, sizeof(uint32_t));
    m->len = 0;
    for (uint32_t i = 0; i < ocap; i++)
      if (oepochs[i] == oepoch)
        range_insert(m, okeys[i], ovals[i]);
    free(okeys);
    free(ovals);
    free(oepochs);
  }
  range_insert(m, key, val);
}

void range_memo_free(RangeMemo *m) {
  free(m->keys);
  free(m->vals);
  free(m->epochs);
  memset(m, 0, sizeof(*m));
}

