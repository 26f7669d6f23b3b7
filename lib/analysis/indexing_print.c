/*
 * indexing_print.c - indexing maps as text, and the --stage=indexing report.
 *
 * A map prints as seed 000 shows it:
 *
 *   (d0, d1, d2)[s0, s1, s2] -> (d0 + s0, d1 + s1, d2 + s2)
 *   domain:
 *   d0 in [0, 0]
 *   ...
 *   s0 in [0, 1]
 *     hlo: of1 = s32[] parameter(1)
 *     (d0, d1, d2) -> ()
 *   (d1 - 3) mod 7 in [0, 0]
 *
 * Constraints are printed sorted by their text.  The module report lists
 * every computation and instruction with, per operand, its set of maps; the
 * maps of a set are printed in a fixed order (those with more symbols, which
 * read whole ranges, first; then by text) so the report does not depend on
 * the order in which composition found them.
 */
#include "indexing.h"

#include <stdlib.h>
#include <string.h>

static void print_var_list(StrBuf *b, char open, char close, char letter,
                           int n) {
  sb_putc(b, open);
  for (int i = 0; i < n; i++) {
    if (i)
      sb_puts(b, ", ");
    sb_putc(b, letter);
    sb_put_i64(b, i);
  }
  sb_putc(b, close);
}

static void print_exprs(StrBuf *b, const AffExpr *const *e, int n) {
  sb_putc(b, '(');
  for (int i = 0; i < n; i++) {
    if (i)
      sb_puts(b, ", ");
    aff_print(b, e[i]);
  }
  sb_putc(b, ')');
}

void indexing_print_instr_summary(StrBuf *b, const HloInstr *i) {
  sb_puts(b, i->name ? i->name : "?");
  sb_puts(b, " = ");
  if (i->shape)
    shape_print(b, i->shape, true);
  sb_putc(b, ' ');
  sb_puts(b, hlo_op_name(i->op));
  sb_putc(b, '(');
  if (i->op == HLO_PARAMETER) {
    sb_put_i64(b, i->param_number);
  } else if (i->op == HLO_CONSTANT) {
    if (i->literal && i->shape && shape_is_array(i->shape) &&
        i->shape->rank == 0 && !i->literal->elided && i->literal->data)
      literal_print(b, i->literal);
    else
      sb_puts(b, "{...}");
  } else {
    for (int k = 0; k < i->nops; k++) {
      if (k)
        sb_puts(b, ", ");
      sb_puts(b, i->ops[k]->name ? i->ops[k]->name : "?");
    }
  }
  sb_putc(b, ')');
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void indent(StrBuf *b, int n) {
  for (int i = 0; i < n; i++)
    sb_putc(b, ' ');
}

/* The map with every line indented by `ind` spaces. */
static void print_map_indented(StrBuf *b, const IndexingMap *m, int ind) {
  if (m->undefined) {
    indent(b, ind);
    sb_puts(b, "UNDEFINED\n");
    return;
  }
  if (m->empty) {
    indent(b, ind);
    sb_puts(b, "KNOWN EMPTY\n");
    return;
  }
  int ns = imap_nsyms(m);
  indent(b, ind);
  print_var_list(b, '(', ')', 'd', m->ndims);
  if (ns)
    print_var_list(b, '[', ']', 's', ns);
  sb_puts(b, " -> ");
  print_exprs(b, m->results, m->nresults);
  sb_putc(b, '\n');
  indent(b, ind);
  sb_puts(b, "domain:\n");
  for (int i = 0; i < m->ndims; i++) {
    indent(b, ind);
    sb_printf(b, "d%d in ", i);
    interval_print(b, m->dims[i]);
    sb_putc(b, '\n');
  }
  for (int i = 0; i < m->nrange; i++) {
    indent(b, ind);
    sb_printf(b, "s%d in ", i);
    interval_print(b, m->range[i]);
    sb_putc(b, '\n');
  }
  for (int i = 0; i < m->nrt; i++) {
    const RtVar *v = &m->rt[i];
    indent(b, ind);
    sb_printf(b, "s%d in ", m->nrange + i);
    interval_print(b, v->range);
    sb_putc(b, '\n');
    indent(b, ind + 2);
    sb_puts(b, "hlo: ");
    if (v->hlo)
      indexing_print_instr_summary(b, v->hlo);
    sb_putc(b, '\n');
    indent(b, ind + 2);
    print_var_list(b, '(', ')', 'd', m->ndims);
    bool uses_syms = false;
    for (int j = 0; j < v->nexprs; j++)
      uses_syms |= aff_uses_syms(v->exprs[j]);
    if (uses_syms)
      print_var_list(b, '[', ']', 's', ns);
    sb_puts(b, " -> ");
    print_exprs(b, v->exprs, v->nexprs);
    sb_putc(b, '\n');
  }
  if (m->ncons) {
    char **lines = xcalloc((size_t)m->ncons, sizeof(char *));
    for (int i = 0; i < m->ncons; i++) {
      StrBuf l;
      sb_init(&l);
      aff_print(&l, m->cons[i].expr);
      sb_puts(&l, " in ");
      interval_print(&l, m->cons[i].range);
      lines[i] = sb_detach(&l);
    }
    qsort(lines, (size_t)m->ncons, sizeof(char *), cmp_str);
    for (int i = 0; i < m->ncons; i++) {
      indent(b, ind);
      sb_puts(b, lines[i]);
      sb_putc(b, '\n');
      free(lines[i]);
    }
    free(lines);
  }
}

void imap_print(StrBuf *b, const IndexingMap *m) { print_map_indented(b, m, 0); }

char *imap_to_string(const IndexingMap *m) {
  StrBuf b;
  sb_init(&b);
  imap_print(&b, m);
  return sb_detach(&b);
}

/*
 * The module report
 */

typedef struct SortedMap {
  int nsyms;
  char *text;
  const IndexingMap *map;
} SortedMap;

static int cmp_sorted(const void *a, const void *b) {
  const SortedMap *x = a, *y = b;
  if (x->nsyms != y->nsyms)
    return x->nsyms > y->nsyms ? -1 : 1;
  return strcmp(x->text, y->text);
}

static void print_set(StrBuf *b, const IndexingMapSet *s, int ind) {
  if (!s->n)
    return;
  SortedMap *v = xcalloc((size_t)s->n, sizeof(SortedMap));
  for (int i = 0; i < s->n; i++) {
    v[i].map = s->maps[i];
    v[i].nsyms = s->maps[i]->undefined ? 0 : imap_nsyms(s->maps[i]);
    v[i].text = imap_to_string(s->maps[i]);
  }
  qsort(v, (size_t)s->n, sizeof(SortedMap), cmp_sorted);
  for (int i = 0; i < s->n; i++) {
    print_map_indented(b, v[i].map, ind);
    free(v[i].text);
  }
  free(v);
}

static void print_labelled_sets(StrBuf *b, const InstrIndexing *ii,
                                const char *label, int ind) {
  for (int k = 0; k < ii->n; k++) {
    if (!ii->sets[k].n)
      continue;
    indent(b, ind);
    sb_printf(b, "%s %d:\n", label, k);
    print_set(b, &ii->sets[k], ind + 2);
  }
}

/* One context per operand (or output) keeps memory bounded by the largest
 * single analysis, not the module's. */
static void print_instr(StrBuf *b, const HloInstr *i, bool input_to_output) {
  indent(b, 2);
  indexing_print_instr_summary(b, i);
  sb_putc(b, '\n');
  if (!i->nops)
    return;
  int nout = indexing_num_outputs(i);
  if (!input_to_output) {
    for (int t = 0; t < nout; t++) {
      AffCtx *c = aff_ctx_new();
      if (nout > 1) {
        indent(b, 4);
        sb_printf(b, "output %d:\n", t);
      }
      print_labelled_sets(b, indexing_out_to_in(c, i, t), "operand",
                          nout > 1 ? 6 : 4);
      aff_ctx_free(c);
    }
    return;
  }
  for (int k = 0; k < i->nops; k++) {
    AffCtx *c = aff_ctx_new();
    InstrIndexing *ii = indexing_in_to_out(c, i, k);
    indent(b, 4);
    sb_printf(b, "operand %d:\n", k);
    if (nout == 1)
      print_set(b, &ii->sets[0], 6);
    else
      print_labelled_sets(b, ii, "output", 6);
    aff_ctx_free(c);
  }
}

void indexing_print_module(StrBuf *out, const HloModule *m,
                           bool input_to_output) {
  for (int k = 0; k < m->ncomps; k++) {
    const HloComp *comp = m->comps[k];
    if (k)
      sb_putc(out, '\n');
    sb_printf(out, "computation %s:\n", comp->name);
    for (int j = 0; j < comp->ninstrs; j++)
      print_instr(out, comp->instrs[j], input_to_output);
  }
}
