/*
 * elided_constant_filler.c - "elided-constant-filler": gives every constant
 * elided as {...} the values XLA's parser gives it, its placeholder pattern
 * (lib/hlo/literal.c, literal_elided_fill), as a plain literal.  From then
 * on the constant is like any other: the passes may fold it, and the code
 * generators embed its bytes.  The interpreter fills the same values itself
 * when it runs the original module, so compiled and interpreted runs agree.
 *
 * A constant too large to hold (over 4 GiB) is an error naming it.
 */
#include "passes.h"

enum { FILL_MAX_BYTES = 1 << 30 }; /* checked as a count of 4-byte units */

/* A filled copy of l, or NULL (error reported) when it is too large. */
static Literal *filled(Arena *a, const Literal *l, const HloInstr *i,
                       Diag *d) {
  if (l->shape->et == ET_TUPLE) {
    Literal *t = ARENA_NEW(a, Literal);
    *t = *l;
    t->tuple = ARENA_ARRAY(a, Literal *, l->ntuple ? l->ntuple : 1);
    for (int k = 0; k < l->ntuple; k++)
      if (!(t->tuple[k] = filled(a, l->tuple[k], i, d)))
        return NULL;
    return t;
  }
  if (!l->elided)
    return (Literal *)l;
  int64_t size = shape_byte_size(l->shape);
  if (size < 0 || size / 4 > FILL_MAX_BYTES) {
    diag_error(d, i->loc, "constant '%s' is elided as {...} and too large "
               "(over 4 GiB) to fill with XLA's placeholder values", i->name);
    return NULL;
  }
  Literal *f = literal_new(a, l->shape);
  literal_elided_fill(l, f->data);
  return f;
}

static bool has_elided(const Literal *l) {
  if (l->elided)
    return true;
  for (int k = 0; k < l->ntuple; k++)
    if (has_elided(l->tuple[k]))
      return true;
  return false;
}

bool pass_elided_constant_filler(HloModule *m, PassContext *ctx) {
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (i->op != HLO_CONSTANT || !i->literal || !has_elided(i->literal))
        continue;
      Literal *f = filled(m->arena, i->literal, i, ctx->diag);
      if (!f)
        return false;
      i->literal = f;
      changed = true;
    }
  }
  return changed;
}
