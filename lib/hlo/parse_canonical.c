/*
 * parse_canonical.c - the forms XLA's text parser accepts that xhloc's IR
 * does not represent, rewritten as soon as a module is parsed, before the
 * verifier and every later stage see it.
 *
 * XLA's parser checks little; what jax runs (hlo_module_from_text, then
 * hlo_to_stablehlo, then compile) gives these two forms a meaning:
 *
 *   - A "degenerate" broadcast maps an operand dimension of size 1 to a
 *     result dimension of another size: StableHLO's broadcast_in_dim expands
 *     it.  It becomes a reshape that drops those dimensions, then an
 *     ordinary broadcast, so the verifier keeps HLO's rule (sizes equal) for
 *     everything the passes build.
 *   - A convolution whose window size differs from its kernel's spatial
 *     sizes: StableHLO's convolution has no window size (it takes the
 *     kernel's), so XLA runs it with the kernel's.  The window size is set to
 *     the kernel's, with a warning at the instruction.
 *
 * Anything else wrong with these instructions is left for the verifier to
 * report.
 */
#include "ir_edit.h"
#include "parse_internal.h"

/* Static array shape, or NULL. */
static const Shape *static_array(const Shape *s) {
  if (!shape_is_array(s) || shape_is_dynamic(s))
    return NULL;
  return s;
}

/* Whether operand dimension k of broadcast b is a degenerate one: size 1
 * against a result dimension of another size. */
static bool degenerate_dim(const HloInstr *b, int k) {
  int64_t d = b->dims.v[k];
  return b->ops[0]->shape->dims[k] == 1 && b->shape->dims[d] != 1;
}

/* A broadcast whose every operand dimension maps to a result dimension of
 * the same size, or is a degenerate one, and some is. */
static bool is_degenerate_broadcast(const HloInstr *b) {
  if (b->op != HLO_BROADCAST || b->nops != 1)
    return false;
  const Shape *s = static_array(b->ops[0]->shape);
  const Shape *out = static_array(b->shape);
  if (!s || !out || b->dims.n != s->rank)
    return false;
  bool any = false;
  for (int k = 0; k < s->rank; k++) {
    int64_t d = b->dims.v[k];
    if (d < 0 || d >= out->rank)
      return false;
    if (degenerate_dim(b, k))
      any = true;
    else if (s->dims[k] != out->dims[d])
      return false;
  }
  return any;
}

/* broadcast(x), dimensions=D  ->  broadcast(reshape(x)), dimensions=D'
 * where the reshape drops the degenerate dimensions and D' their entries. */
static void split_broadcast(IrEdit *e, HloInstr *b) {
  Arena *a = ir_arena(e);
  HloInstr *x = b->ops[0];
  int rank = x->shape->rank, n = 0;
  int64_t *sizes = ARENA_ARRAY(a, int64_t, rank + 1);
  int64_t *dims = ARENA_ARRAY(a, int64_t, rank + 1);
  for (int k = 0; k < rank; k++) {
    if (degenerate_dim(b, k))
      continue;
    sizes[n] = x->shape->dims[k];
    dims[n++] = b->dims.v[k];
  }
  HloInstr *r = ir_reshape(e, b->parent, x, n, sizes);
  r->metadata = b->metadata;
  r->loc = b->loc;
  ir_set_operand(e, b, 0, r);
  b->dims = (I64List){n, dims};
}

/* "3x3": the window sizes, or the kernel's spatial sizes. */
static void window_text(StrBuf *sb, const Window *w, const Shape *kernel,
                        const ConvDnums *dn) {
  for (int k = 0; k < w->ndims; k++)
    sb_printf(sb, "%s%lld", k ? "x" : "",
              (long long)(kernel ? kernel->dims[dn->kernel_spatial[k]]
                                 : w->dims[k].size));
}

/* The window sizes of convolution i set to its kernel's spatial sizes when
 * they differ (and the rest is consistent enough to compare them). */
static void fix_conv_window(HloInstr *i, Diag *d) {
  if (i->op != HLO_CONVOLUTION || i->nops != 2 || !i->conv)
    return;
  const ConvDnums *dn = i->conv->dnums;
  Window *w = i->conv->window;
  const Shape *r = static_array(i->ops[1]->shape);
  if (!dn || !w || !r || w->ndims != dn->nspatial ||
      r->rank != dn->nspatial + 2)
    return;
  bool differ = false;
  for (int k = 0; k < w->ndims; k++) {
    int64_t kd = dn->kernel_spatial[k];
    if (kd < 0 || kd >= r->rank)
      return;
    differ |= r->dims[kd] != w->dims[k].size;
  }
  if (!differ)
    return;
  StrBuf from, to;
  sb_init(&from);
  sb_init(&to);
  window_text(&from, w, NULL, dn);
  window_text(&to, w, r, dn);
  diag_warn(d, i->loc, "convolution '%s': window size %s differs from the "
                       "kernel's spatial sizes %s; using the kernel's, as "
                       "XLA does (StableHLO takes them from the kernel)",
            i->name, from.s, to.s);
  sb_free(&from);
  sb_free(&to);
  /* The parser made this window for i alone: no other instruction shares it
   * yet. */
  for (int k = 0; k < w->ndims; k++)
    w->dims[k].size = r->dims[dn->kernel_spatial[k]];
}

void parse_canonicalize(HloModule *m, Diag *d) {
  IrEdit *e = NULL;
  for (int c = 0; c < m->ncomps; c++) {
    HloComp *comp = m->comps[c];
    int n = comp->ninstrs; /* not the reshapes appended here */
    for (int k = 0; k < n; k++) {
      HloInstr *i = comp->instrs[k];
      fix_conv_window(i, d);
      if (is_degenerate_broadcast(i)) {
        if (!e)
          e = ir_begin(m);
        split_broadcast(e, i);
      }
    }
  }
  if (e)
    ir_end(e, true);
}
