/*
 * ba_internal.h - the data that buffer_assignment.c (dataflow, liveness,
 * allocation, text) and buffer_sharing.c (which values may hold one buffer
 * in turn) share.  Private to those two files.
 */
#ifndef XHLOC_BA_INTERNAL_H
#define XHLOC_BA_INTERNAL_H

#include "buffer_assignment.h"

#include <limits.h>

#define END_OF_PROGRAM INT_MAX

enum { VK_TEMP, VK_PARAM, VK_CONST };

typedef struct Value {
  const HloInstr *def;
  int leaf;                       /* leaf of def's result */
  const Shape *shape;             /* the leaf's shape */
  int64_t size;
  int kind;                       /* VK_* */
  bool output;                    /* an entry result leaf */
  bool donated;                   /* a parameter leaf an output aliases */
  int start, end;                 /* live range, closed */
  int alloc;
  int64_t offset;
  /* The group (buffer_sharing.c): a union-find tree; the fields after
   * `parent` are meaningful at a root only. */
  int parent;
  int gstart, gend;               /* union of the members' live ranges */
  int gfirst;                     /* the member that starts first */
  int gparam;                     /* the parameter value whose buffer the
                                     group uses, -1 */
  bool gconst, goutput;           /* holds a constant / an entry result */
} Value;

/* A while, for the sharing of its state: state leaf k may take the body's
 * new value k when nothing in the loop reads state k after it is made. */
typedef struct LoopRec {
  const HloInstr *w;
  int t;                          /* the while's time */
  int *last_use;                  /* per leaf: the state's last use in the
                                     condition or body (t: none) */
  int nleaves;
} LoopRec;

/* A conditional, for the sharing of its result with its branches' roots. */
typedef struct CondRec {
  const HloInstr *c;
  int *bstart, *bend;             /* per branch: its walk's first and last
                                     time */
} CondRec;

typedef Vec(Value) ValueVec;
typedef Vec(BufAlloc) AllocVec;

struct BufferAssignment {
  const HloModule *m;
  Arena *ar;                      /* leaf tables, allocation strings */
  ValueVec vals;
  int nids;                       /* instruction ids are < nids */
  int **leafvals;                 /* by instruction id: value per leaf, -1
                                     for a token; NULL: not scheduled */
  int *nleaves;
  int *time;                      /* by instruction id: its step */
  AllocVec allocs;
  int64_t peak_temp;              /* most temp bytes live at once */
  HashMap scheduled;              /* computation name -> itself */
  Diag *d;
  int now;                        /* the timeline */
  Vec(const HloInstr *) at;       /* by time: the instruction walked then */
  Vec(LoopRec) loops;
  Vec(CondRec) conds;
};

static inline int *ba_leaves_of(const BufferAssignment *ba, const HloInstr *i) {
  return i->id >= 0 && i->id < ba->nids ? ba->leafvals[i->id] : NULL;
}

/* XLA's HumanReadableNumBytes ("64B", "3.0KiB", "2.00MiB"), right-aligned
 * in 10 columns. */
void ba_put_bytes(StrBuf *b, int64_t n);

/* buffer_sharing.c: groups the values that may share a buffer (after the
 * walk, before allocation). */
void ba_share_buffers(BufferAssignment *ba);
/* The root of v's group. */
int ba_group(BufferAssignment *ba, int v);

#endif
