/*
 * thunk_chain.c - host kernel thunks merged into chains (thunk_chain.h).
 *
 * A chain runs its members unit by unit: for each work unit, member 0 on
 * it, then member 1, ...  That computes what running each member over all
 * units in turn computes when no two members touch a byte for different
 * units with one of them writing it.  Each member's argument k touches, in
 * unit u, either its own rows of the slice (row_bytes[k] > 0: bytes [u * p
 * * rb, (u + 1) * p * rb)) or any byte of it (0).  Two arguments that
 * overlap, one written, are accepted only when both touch rows, of the same
 * slice: then they meet in the same unit only, where the chain keeps the
 * members' order.  Units on different threads never meet at all, so the
 * results are the same bits on any number of threads.
 *
 * Only a run of kernels that follow each other in a sequence is chained,
 * at most MAX_MEMBERS of them and MAX_ARGS arguments in all (the executor
 * orders thunks of up to 64 arguments by their dependences).
 */
#include "thunk_chain.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_MEMBERS = 16, MAX_ARGS = 64 };

typedef struct Member {
  const char *kernel;
  int nargs;
  const BufSlice *args;
  const bool *written;
  int64_t *row_bytes;
} Member;

typedef struct Chain {
  const char *name;               /* the chain thunk's kernel (after a join) */
  const char *tail;               /* kernel name of the thunk that ends it */
  uint32_t units;
  int64_t rows, per;
  int n, nargs;
  Member m[MAX_MEMBERS];
} Chain;

struct ThunkChains {
  Vec(Chain *) chains;
  Chain *open;                    /* the chain the last kernel belongs to */
};

ThunkChains *tchain_new(void) {
  return xcalloc(1, sizeof(ThunkChains));
}

void tchain_free(ThunkChains *tc) {
  if (!tc)
    return;
  for (int k = 0; k < tc->chains.len; k++) {
    Chain *c = tc->chains.data[k];
    for (int j = 0; j < c->n; j++)
      free(c->m[j].row_bytes);
    free(c);
  }
  vec_free(&tc->chains);
  free(tc);
}

static bool overlap(BufSlice x, BufSlice y) {
  return x.alloc == y.alloc && x.offset < y.offset + y.size && y.offset < x.offset + x.size;
}

static bool same_slice(BufSlice x, BufSlice y) {
  return x.alloc == y.alloc && x.offset == y.offset && x.size == y.size;
}

const char *tchain_name(const ThunkChains *tc) {
  return tc->open ? tc->open->name : NULL;
}

bool tchain_fits(const ThunkChains *tc, const Thunk *last, const Thunk *t, const int64_t *rb,
                 int64_t rows, int64_t rows_per_unit) {
  const Chain *c = tc->open;
  if (!c || !last || !rb || last->kind != THUNK_KERNEL || t->kind != THUNK_KERNEL ||
      last->kernel_name != c->tail || c->n >= MAX_MEMBERS || c->nargs + t->nargs > MAX_ARGS ||
      t->grid[0] != c->units || rows != c->rows || rows_per_unit != c->per)
    return false;
  for (int j = 0; j < c->n; j++) {
    const Member *m = &c->m[j];
    for (int a = 0; a < m->nargs; a++)
      for (int b = 0; b < t->nargs; b++)
        if (overlap(m->args[a], t->args[b]) && (m->written[a] || t->written[b]) &&
            !(m->row_bytes[a] > 0 && rb[b] > 0 && same_slice(m->args[a], t->args[b])))
          return false;
  }
  return true;
}

static void add_member(Chain *c, const Thunk *t, const int64_t *rb) {
  Member *m = &c->m[c->n++];
  m->kernel = t->kernel_name;
  m->nargs = t->nargs;
  m->args = t->args;
  m->written = t->written;
  m->row_bytes = xmalloc(sizeof *m->row_bytes * ((size_t)t->nargs + 1));
  memcpy(m->row_bytes, rb, sizeof *rb * (size_t)t->nargs);
  c->nargs += t->nargs;
}

void tchain_start(ThunkChains *tc, const Thunk *t, const int64_t *rb, int64_t rows,
                  int64_t rows_per_unit) {
  tc->open = NULL;
  if (!rb || t->kind != THUNK_KERNEL || t->nargs > MAX_ARGS)
    return;
  Chain *c = xcalloc(1, sizeof *c);
  c->tail = t->kernel_name;
  c->units = t->grid[0];
  c->rows = rows;
  c->per = rows_per_unit;
  add_member(c, t, rb);
  vec_push(&tc->chains, c);
  tc->open = c;
}

void tchain_join(ThunkChains *tc, Thunk *last, const Thunk *t, const int64_t *rb,
                 const char *name, Arena *a) {
  Chain *c = tc->open;
  if (!c->name)
    c->name = name;
  add_member(c, t, rb);
  /* the chain's thunk: the members' arguments one after another */
  int n = last->nargs + t->nargs;
  BufSlice *args = ARENA_ARRAY(a, BufSlice, n);
  bool *written = ARENA_ARRAY(a, bool, n);
  memcpy(args, last->args, sizeof *args * (size_t)last->nargs);
  memcpy(args + last->nargs, t->args, sizeof *args * (size_t)t->nargs);
  memcpy(written, last->written, sizeof *written * (size_t)last->nargs);
  memcpy(written + last->nargs, t->written, sizeof *written * (size_t)t->nargs);
  last->args = args;
  last->written = written;
  last->nargs = n;
  last->kernel_name = (char *)c->name;
  size_t la = strlen(last->annotation), lt = strlen(t->annotation);
  char *ann = arena_alloc(a, la + lt + 2);
  memcpy(ann, last->annotation, la);
  ann[la] = '+';
  memcpy(ann + la + 1, t->annotation, lt + 1);
  last->annotation = ann;
  c->tail = last->kernel_name;
}

bool tchain_emit(const ThunkChains *tc, Codegen *cg, Diag *d) {
  for (int k = 0; k < tc->chains.len; k++) {
    const Chain *c = tc->chains.data[k];
    if (c->n < 2)
      continue;
    const char *names[MAX_MEMBERS];
    int nargs[MAX_MEMBERS];
    for (int j = 0; j < c->n; j++) {
      names[j] = c->m[j].kernel;
      nargs[j] = c->m[j].nargs;
    }
    if (!codegen_chain_kernel(cg, c->name, c->n, names, nargs, d))
      return false;
  }
  return true;
}
