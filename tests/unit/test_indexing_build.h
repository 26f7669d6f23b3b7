/*
 * test_indexing_build.h - small helpers for the indexing tests: building HLO
 * modules directly in C (no parser), and printing maps to strings.
 * Header-only (static functions) because every tests/unit/test_*.c is its
 * own program.
 */
#ifndef XHLOC_TEST_INDEXING_BUILD_H
#define XHLOC_TEST_INDEXING_BUILD_H

#include "../../lib/analysis/indexing.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static inline Shape *tb_shape(HloModule *m, ElemType et, int rank, ...) {
  int64_t d[16];
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++)
    d[i] = va_arg(ap, int64_t);
  va_end(ap);
  return shape_array(m->arena, et, rank, d);
}

static inline Shape *tb_shapev(HloModule *m, ElemType et, int rank,
                               const int64_t *d) {
  return shape_array(m->arena, et, rank, d);
}

static inline HloInstr *tb_param(HloComp *c, const char *name, int n, Shape *s) {
  HloInstr *i = hlo_instr_new(c, HLO_PARAMETER, s, 0, NULL);
  i->name = arena_strdup(c->module->arena, name);
  i->param_number = n;
  if (n >= c->nparams) {
    HloInstr **p = ARENA_ARRAY(c->module->arena, HloInstr *, n + 1);
    if (c->nparams)
      memcpy(p, c->params, sizeof(HloInstr *) * (size_t)c->nparams);
    c->params = p;
    c->nparams = n + 1;
  }
  c->params[n] = i;
  return i;
}

/* An instruction with nops operands given after it; becomes the root. */
static inline HloInstr *tb_instr(HloComp *c, const char *name, HloOp op,
                                 Shape *s, int nops, ...) {
  HloInstr *ops[16];
  va_list ap;
  va_start(ap, nops);
  for (int i = 0; i < nops; i++)
    ops[i] = va_arg(ap, HloInstr *);
  va_end(ap);
  HloInstr *i = hlo_instr_new(c, op, s, nops, ops);
  i->name = arena_strdup(c->module->arena, name);
  c->root = i;
  return i;
}

static inline I64List tb_list(HloModule *m, int n, ...) {
  I64List l = {n, ARENA_ARRAY(m->arena, int64_t, n + 1)};
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    l.v[i] = va_arg(ap, int64_t);
  va_end(ap);
  return l;
}

/* The printed maps of operand k of i (output-to-input, output 0), all maps
 * of the set concatenated.  Heap string. */
static inline char *tb_out_to_in(AffCtx *c, const HloInstr *i, int k) {
  InstrIndexing *ii = indexing_out_to_in(c, i, 0);
  StrBuf b;
  sb_init(&b);
  for (int j = 0; k < ii->n && j < ii->sets[k].n; j++)
    imap_print(&b, ii->sets[k].maps[j]);
  return sb_detach(&b);
}

static inline char *tb_in_to_out(AffCtx *c, const HloInstr *i, int k) {
  InstrIndexing *ii = indexing_in_to_out(c, i, k);
  StrBuf b;
  sb_init(&b);
  for (int j = 0; ii->n && j < ii->sets[0].n; j++)
    imap_print(&b, ii->sets[0].maps[j]);
  return sb_detach(&b);
}

/* Collapses runs of whitespace to one space and trims: the comparison the
 * seed's text allows (its copy lost indentation and some line breaks). */
static inline char *tb_norm(const char *s) {
  char *r = xmalloc(strlen(s) + 1);
  size_t n = 0;
  bool space = false;
  for (; *s; s++) {
    if (*s == ' ' || *s == '\n' || *s == '\t') {
      space = n > 0;
      continue;
    }
    if (space)
      r[n++] = ' ';
    space = false;
    r[n++] = *s;
  }
  r[n] = 0;
  return r;
}

#endif
