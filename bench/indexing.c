/*
 * indexing.c - indexing-analysis benchmark: the output-to-input maps of a
 * fusion of about 100 ops, composed and simplified (seed 000).
 *
 *   indexing [-n OPS] [-r RUNS] [-p]
 *
 * Builds, directly in C, a loop fusion whose root is a chain of OPS
 * (default 100) instructions cycling through elementwise ops
 * (exponential, negate), a transpose, a reshape collapsing the two minor
 * dimensions, a broadcast of another parameter added in, the reshape back
 * (whose floordiv/mod against the collapse the simplifier must cancel), and
 * a slice, over a rank-3 tensor.  With -p the negate is a pad restoring the
 * sliced dimension: the pads' "not padding" conditions then travel to the
 * fusion's operand as constraints through every later op, a harder case.  Each run indexes the whole fusion in a fresh context (every
 * per-op map, every composition, every simplification) and the best and
 * median of RUNS (default 200) are printed in microseconds, in CPU time of
 * this thread, with the target: well under a millisecond.
 */
#include "../lib/analysis/indexing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TARGET_US = 1000 };

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

typedef struct Builder {
  HloModule *m;
  HloComp *c;
  int nops;                       /* non-parameter instructions */
  int nparams;
  char name[32];
} Builder;

static HloInstr *add_instr(Builder *b, HloOp op, Shape *s, int n,
                           HloInstr *const *ops) {
  HloInstr *i = hlo_instr_new(b->c, op, s, n, ops);
  snprintf(b->name, sizeof(b->name), "%s.%d", hlo_op_name(op), b->nops);
  i->name = arena_strdup(b->m->arena, b->name);
  if (op == HLO_PARAMETER) {
    i->param_number = b->nparams++;
  } else {
    b->nops++;
  }
  b->c->root = i;
  return i;
}

static Shape *shape3(Builder *b, int64_t x, int64_t y, int64_t z) {
  int64_t d[3] = {x, y, z};
  return shape_array(b->m->arena, ET_F32, 3, d);
}

static I64List list(Builder *b, int n, const int64_t *v) {
  I64List l = {n, ARENA_ARRAY(b->m->arena, int64_t, n)};
  memcpy(l.v, v, sizeof(int64_t) * (size_t)n);
  return l;
}

static Shape *shape2(Builder *b, int64_t x, int64_t y) {
  int64_t d[2] = {x, y};
  return shape_array(b->m->arena, ET_F32, 2, d);
}

/* Drops the first element of dimension `dim` (with_pad: of the last
 * dimension, which the following pad restores). */
static HloInstr *slice_one(Builder *b, HloInstr *x, int dim) {
  const int64_t *d = x->shape->dims;
  int64_t od[3] = {d[0], d[1], d[2]};
  od[dim]--;
  HloInstr *s = add_instr(b, HLO_SLICE, shape3(b, od[0], od[1], od[2]), 1, &x);
  s->slice = ARENA_ARRAY(b->m->arena, SliceDim, 3);
  for (int j = 0; j < 3; j++)
    s->slice[j] = (SliceDim){j == dim ? 1 : 0, d[j], 1};
  return s;
}

/* The next op of the cycle applied to x (rank 3 on entry to step 0). */
static HloInstr *step(Builder *b, HloInstr *x, int k, bool with_pad) {
  const int64_t *d = x->shape->dims;
  static int64_t a, bb, c; /* the rank-3 shape around the rank-2 part */
  switch (k % 7) {
  case 0:
    return add_instr(b, HLO_EXP, shape3(b, d[0], d[1], d[2]), 1, &x);
  case 1: { /* rotate the dimensions */
    static const int64_t perm[3] = {1, 2, 0};
    HloInstr *t = add_instr(b, HLO_TRANSPOSE, shape3(b, d[1], d[2], d[0]), 1, &x);
    t->dims = list(b, 3, perm);
    return t;
  }
  case 2: /* collapse the two minor dimensions */
    a = d[0];
    bb = d[1];
    c = d[2];
    return add_instr(b, HLO_RESHAPE, shape2(b, a, bb * c), 1, &x);
  case 3: { /* + broadcast(p) along dimension 0 */
    int64_t one[1] = {d[0]};
    HloInstr *p = add_instr(b, HLO_PARAMETER,
                            shape_array(b->m->arena, ET_F32, 1, one), 0, NULL);
    static const int64_t bd[1] = {0};
    HloInstr *bc = add_instr(b, HLO_BROADCAST, shape2(b, d[0], d[1]), 1, &p);
    bc->dims = list(b, 1, bd);
    HloInstr *ops[2] = {x, bc};
    return add_instr(b, HLO_ADD, shape2(b, d[0], d[1]), 2, ops);
  }
  case 4: /* expand back */
    return add_instr(b, HLO_RESHAPE, shape3(b, a, bb, c), 1, &x);
  case 5:
    return slice_one(b, x, with_pad ? 2 : 0);
  default: {
    if (!with_pad)
      return add_instr(b, HLO_NEGATE, shape3(b, d[0], d[1], d[2]), 1, &x);
    HloInstr *v = add_instr(b, HLO_PARAMETER, shape_array(b->m->arena, ET_F32, 0, NULL),
                            0, NULL);
    HloInstr *ops[2] = {x, v};
    HloInstr *p = add_instr(b, HLO_PAD, shape3(b, d[0], d[1], d[2] + 1), 2, ops);
    p->padding = ARENA_ARRAY(b->m->arena, PadDim, 3);
    for (int j = 0; j < 3; j++)
      p->padding[j] = (PadDim){0, j == 2 ? 1 : 0, 0};
    return p;
  }
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int nops = 100, runs = 200, opt;
  bool with_pad = false;
  while ((opt = getopt(argc, argv, "n:r:p")) != -1) {
    if (opt == 'n')
      nops = atoi(optarg);
    else if (opt == 'r')
      runs = atoi(optarg);
    else if (opt == 'p')
      with_pad = true;
    else {
      fprintf(stderr, "usage: indexing [-n OPS] [-r RUNS] [-p]\n");
      return 2;
    }
  }
  if (nops < 1 || runs < 1) {
    fprintf(stderr, "indexing: -n and -r take positive numbers\n");
    return 2;
  }

  Builder b = {0};
  b.m = hlo_module_new("bench_indexing");
  b.c = hlo_comp_new(b.m, "fused_computation");
  HloInstr *x = add_instr(&b, HLO_PARAMETER, shape3(&b, 64, 48, 32), 0, NULL);
  for (int k = 0; b.nops < nops; k++)
    x = step(&b, x, k, with_pad);

  /* The fusion instruction, in an entry computation. */
  HloComp *entry = hlo_comp_new(b.m, "main");
  HloInstr **args = ARENA_ARRAY(b.m->arena, HloInstr *, b.nparams);
  for (int k = 0; k < b.c->ninstrs; k++) {
    HloInstr *p = b.c->instrs[k];
    if (p->op != HLO_PARAMETER)
      continue;
    HloInstr *a = hlo_instr_new(entry, HLO_PARAMETER, p->shape, 0, NULL);
    a->name = p->name;
    a->param_number = p->param_number;
    args[p->param_number] = a;
  }
  HloInstr *fusion = hlo_instr_new(entry, HLO_FUSION, x->shape, b.nparams, args);
  fusion->name = "fusion";
  fusion->fusion_kind = FUSION_LOOP;
  fusion->ncalled = 1;
  fusion->called = ARENA_ARRAY(b.m->arena, HloComp *, 1);
  fusion->called[0] = b.c;
  entry->root = fusion;

  double *t = xcalloc((size_t)runs, sizeof(double));
  int nmaps = 0, undefined = 0;
  char *param0 = NULL;
  size_t bytes = 0;
  for (int r = 0; r < runs; r++) {
    AffCtx *c = aff_ctx_new();
    double t0 = now_us();
    InstrIndexing *ii = indexing_out_to_in(c, fusion, 0);
    t[r] = now_us() - t0;
    if (r == 0) {
      for (int k = 0; k < ii->n; k++) {
        nmaps += ii->sets[k].n;
        for (int j = 0; j < ii->sets[k].n; j++)
          undefined += ii->sets[k].maps[j]->undefined;
      }
      param0 = imap_to_string(ii->sets[0].maps[0]);
      bytes = arena_bytes_used(aff_ctx_arena(c));
    }
    aff_ctx_free(c);
  }
  qsort(t, (size_t)runs, sizeof(double), cmp_double);

  printf("fusion: %d ops (%d parameters)%s, root %s\n", b.nops, b.nparams,
         with_pad ? " with pads" : "", x->name);
  printf("maps: %d over %d operands (%d undefined); context arena %zu KiB\n",
         nmaps, fusion->nops, undefined, bytes / 1024);
  printf("operand 0:\n%s", param0);
  printf("indexing the whole fusion: best %.1f us, median %.1f us over %d runs "
         "(target: well under %d us)\n",
         t[0], t[runs / 2], runs, TARGET_US);
  free(param0);
  free(t);
  hlo_module_free(b.m);
  return 0;
}
