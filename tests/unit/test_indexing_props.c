/*
 * test_indexing_props.c - property tests of the indexing analysis.
 *
 * For many random small shapes of every supported opcode, the set of operand
 * elements an output-to-input map gives for each output element is compared
 * with the set the op's definition reads.  The reference is written here,
 * independently, from the HLO semantics (an element-level model of what the
 * interpreter reads): it never looks at a map.  Runtime values (dynamic
 * offsets, gather indices) are drawn inside the range the op clamps to, so
 * the reference and the map agree on what the op does with them.
 *
 * Input-to-output maps are checked against the inverse of the same
 * relation.  Random chains of ops in a fusion check composition, and every
 * composition is also checked unsimplified against simplified by
 * enumerating its domain, as are random expressions under random bounds.
 *
 * Documented over-approximations (seed 000): the padding value of pad is
 * mapped from every output element, dynamic-update-slice's operand from
 * every output element (the updated window is not excluded), and the update
 * map has no bound on d - offset.  Those operands are checked for "contains
 * the reads" instead of equality, and the update's out-of-bounds images are
 * ignored.
 *
 * The same random instructions are also run through the interpreter
 * (lib/eval) as a black box: perturbing one input element at a time shows
 * which output elements it actually reaches, and the maps must cover that
 * (equal it where they are exact); see every_op_reads_what_the_interpreter_
 * reads below.
 */
#include <criterion/criterion.h>

#include "test_indexing_build.h"
#include "../../lib/eval/eval.h"

#include <math.h>
#include <stdio.h>

/*
 * Random numbers (deterministic)
 */
typedef struct Rng {
  uint64_t s;
} Rng;

static uint64_t rng_next(Rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}

static int64_t rnd(Rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

/*
 * Index sets: sorted, distinct row-major linear indices of a shape.
 */
typedef struct Set {
  int64_t *v;
  int n, cap;
  bool oob;                       /* an index outside the shape was added */
} Set;

static void set_clear(Set *s) {
  s->n = 0;
  s->oob = false;
}

static void set_free(Set *s) {
  free(s->v);
  memset(s, 0, sizeof(*s));
}

static void set_add_lin(Set *s, int64_t x) {
  int lo = 0, hi = s->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (s->v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < s->n && s->v[lo] == x)
    return;
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 16;
    s->v = xreallocarray(s->v, (size_t)s->cap, sizeof(int64_t));
  }
  memmove(s->v + lo + 1, s->v + lo, sizeof(int64_t) * (size_t)(s->n - lo));
  s->v[lo] = x;
  s->n++;
}

static void set_add(Set *s, const Shape *sh, const int64_t *idx) {
  int64_t lin = 0;
  for (int k = 0; k < sh->rank; k++) {
    if (idx[k] < 0 || idx[k] >= sh->dims[k]) {
      s->oob = true;
      return;
    }
    lin = lin * sh->dims[k] + idx[k];
  }
  set_add_lin(s, lin);
}

static bool set_equal(const Set *a, const Set *b) {
  if (a->n != b->n)
    return false;
  for (int i = 0; i < a->n; i++)
    if (a->v[i] != b->v[i])
      return false;
  return true;
}

static bool set_contains_all(const Set *big, const Set *small) {
  int j = 0;
  for (int i = 0; i < small->n; i++) {
    while (j < big->n && big->v[j] < small->v[i])
      j++;
    if (j == big->n || big->v[j] != small->v[i])
      return false;
  }
  return true;
}

static void delin(const Shape *s, int64_t lin, int64_t *idx) {
  for (int k = s->rank - 1; k >= 0; k--) {
    idx[k] = lin % s->dims[k];
    lin /= s->dims[k];
  }
}

/*
 * Runtime values of parameters (offsets, gather indices).
 */
typedef struct Env {
  int n;
  const HloInstr *h[32];
  int64_t *vals[32];
} Env;

static int64_t env_at(const Env *e, const HloInstr *h, const int64_t *idx) {
  for (int i = 0; i < e->n; i++) {
    if (e->h[i] != h)
      continue;
    int64_t lin = 0;
    for (int k = 0; k < h->shape->rank; k++)
      lin = lin * h->shape->dims[k] + idx[k];
    return e->vals[i][lin];
  }
  cr_assert_fail("runtime value of %s unknown", h->name);
  return 0;
}

static void env_set(Env *e, Arena *a, const HloInstr *h, Rng *r, int64_t lo,
                    int64_t hi) {
  int64_t n = shape_elements(h->shape);
  cr_assert_lt(e->n, (int)ARRAY_LEN(e->h));
  e->h[e->n] = h;
  e->vals[e->n] = ARENA_ARRAY(a, int64_t, n + 1);
  for (int64_t i = 0; i < n; i++)
    e->vals[e->n][i] = rnd(r, lo, hi);
  e->n++;
}

/*
 * The image of a map at one point of its dimension space.
 */
static void map_image(const IndexingMap *m, const int64_t *d, const Env *env,
                      const Shape *target, Set *out) {
  cr_assert(!m->undefined, "undefined map");
  if (m->empty)
    return;
  int ns = imap_nsyms(m);
  int64_t syms[32], res[16], idx[16];
  cr_assert(ns < 32 && m->nresults < 16);
  for (int i = 0; i < m->ndims; i++)
    if (!interval_contains(m->dims[i], d[i]))
      return;
  for (int i = 0; i < m->nrange; i++) {
    if (interval_is_empty(m->range[i]))
      return;
    syms[i] = m->range[i].lo;
  }
  for (;;) {
    for (int i = 0; i < m->nrt; i++) {
      const RtVar *v = &m->rt[i];
      for (int j = 0; j < v->nexprs; j++)
        idx[j] = aff_eval(v->exprs[j], d, syms);
      syms[m->nrange + i] = env_at(env, v->hlo, idx);
    }
    if (imap_in_domain(m, d, syms)) {
      imap_eval(m, d, syms, res);
      set_add(out, target, res);
    }
    int k = 0;
    while (k < m->nrange && syms[k] == m->range[k].hi) {
      syms[k] = m->range[k].lo;
      k++;
    }
    if (k == m->nrange)
      break;
    syms[k]++;
  }
}

static void set_image(const IndexingMapSet *s, const int64_t *d, const Env *env,
                      const Shape *target, Set *out) {
  for (int i = 0; i < s->n; i++)
    map_image(s->maps[i], d, env, target, out);
}

/*
 * The reference: which elements of operand k an element o of the output of
 * i reads.
 */
static void ref_reads(const HloInstr *i, int k, const int64_t *o,
                      const Env *env, Set *out) {
  const Shape *os = indexing_output_shape(i, 0), *is = i->ops[k]->shape;
  int64_t x[16] = {0};
  switch (i->op) {
  case HLO_BROADCAST:
    for (int j = 0; j < is->rank; j++)
      x[j] = o[i->dims.v[j]];
    set_add(out, is, x);
    return;
  case HLO_TRANSPOSE:
    for (int j = 0; j < os->rank; j++)
      x[i->dims.v[j]] = o[j];
    set_add(out, is, x);
    return;
  case HLO_REVERSE:
    for (int j = 0; j < os->rank; j++) {
      bool rev = false;
      for (int t = 0; t < i->dims.n; t++)
        rev |= i->dims.v[t] == j;
      x[j] = rev ? os->dims[j] - 1 - o[j] : o[j];
    }
    set_add(out, is, x);
    return;
  case HLO_SLICE:
    for (int j = 0; j < os->rank; j++)
      x[j] = i->slice[j].start + o[j] * i->slice[j].stride;
    set_add(out, is, x);
    return;
  case HLO_RESHAPE: {
    int64_t lin = 0;
    for (int j = 0; j < os->rank; j++)
      lin = lin * os->dims[j] + o[j];
    delin(is, lin, x);
    set_add(out, is, x);
    return;
  }
  case HLO_BITCAST: {
    /* Same physical position: linearize o in the output's physical order,
     * delinearize in the input's. */
    const int64_t *mo = os->layout->minor_to_major, *mi = is->layout->minor_to_major;
    int64_t lin = 0;
    for (int t = os->rank - 1; t >= 0; t--)
      lin = lin * os->dims[mo[t]] + o[mo[t]];
    for (int t = 0; t < is->rank; t++) {
      x[mi[t]] = lin % is->dims[mi[t]];
      lin /= is->dims[mi[t]];
    }
    set_add(out, is, x);
    return;
  }
  case HLO_CONCATENATE: {
    int64_t cat = i->dims.v[0], off = 0;
    for (int t = 0; t < k; t++)
      off += i->ops[t]->shape->dims[cat];
    if (o[cat] < off || o[cat] >= off + is->dims[cat])
      return;
    memcpy(x, o, sizeof(int64_t) * (size_t)os->rank);
    x[cat] -= off;
    set_add(out, is, x);
    return;
  }
  case HLO_DOT: {
    const DotDnums *dn = i->dot;
    const I64List *batch = k == 0 ? &dn->lhs_batch : &dn->rhs_batch;
    const I64List *contr = k == 0 ? &dn->lhs_contracting : &dn->rhs_contracting;
    int pos = 0;
    for (int t = 0; t < batch->n; t++)
      x[batch->v[t]] = o[pos++];
    /* Output: batch, lhs free, rhs free. */
    const Shape *ls = i->ops[0]->shape;
    int nlfree = ls->rank - dn->lhs_batch.n - dn->lhs_contracting.n;
    if (k == 1)
      pos += nlfree;
    for (int d = 0; d < is->rank; d++) {
      bool b = false, c = false;
      for (int t = 0; t < batch->n; t++)
        b |= batch->v[t] == d;
      for (int t = 0; t < contr->n; t++)
        c |= contr->v[t] == d;
      if (!b && !c)
        x[d] = o[pos++];
    }
    /* Every combination of the contracting indices. */
    int64_t total = 1;
    for (int t = 0; t < contr->n; t++)
      total *= is->dims[contr->v[t]];
    for (int64_t comb = 0; comb < total; comb++) {
      int64_t rem = comb;
      for (int t = contr->n - 1; t >= 0; t--) {
        x[contr->v[t]] = rem % is->dims[contr->v[t]];
        rem /= is->dims[contr->v[t]];
      }
      set_add(out, is, x);
    }
    return;
  }
  case HLO_REDUCE: {
    if (k >= i->nops / 2) {
      set_add(out, is, x);
      return;
    }
    int64_t total = shape_elements(is);
    for (int64_t lin = 0; lin < total; lin++) {
      delin(is, lin, x);
      int pos = 0;
      bool match = true;
      for (int d = 0; d < is->rank; d++) {
        bool red = false;
        for (int t = 0; t < i->dims.n; t++)
          red |= i->dims.v[t] == d;
        if (!red)
          match &= x[d] == o[pos++];
      }
      if (match)
        set_add(out, is, x);
    }
    return;
  }
  case HLO_PAD: {
    if (k == 1) { /* read where no input element lands */
      bool inside = true;
      for (int d = 0; d < os->rank; d++) {
        int64_t step = i->padding[d].interior + 1, p = o[d] - i->padding[d].lo;
        inside &= p >= 0 && p % step == 0 && p / step < i->ops[0]->shape->dims[d];
      }
      if (!inside)
        set_add(out, is, x);
      return;
    }
    for (int d = 0; d < os->rank; d++) {
      int64_t step = i->padding[d].interior + 1, p = o[d] - i->padding[d].lo;
      if (p < 0 || p % step || p / step >= is->dims[d])
        return;
      x[d] = p / step;
    }
    set_add(out, is, x);
    return;
  }
  case HLO_REDUCE_WINDOW: {
    if (k >= i->nops / 2) {
      set_add(out, is, x);
      return;
    }
    const Window *w = i->window;
    int64_t total = 1;
    for (int d = 0; d < os->rank; d++)
      total *= w->dims[d].size;
    for (int64_t comb = 0; comb < total; comb++) {
      int64_t rem = comb;
      bool ok = true;
      for (int d = os->rank - 1; d >= 0; d--) {
        const WindowDim *wd = &w->dims[d];
        int64_t wi = rem % wd->size;
        rem /= wd->size;
        int64_t p = o[d] * wd->stride + wi * wd->window_dilation - wd->pad_lo;
        if (p < 0 || p % wd->base_dilation || p / wd->base_dilation >= is->dims[d])
          ok = false;
        else
          x[d] = p / wd->base_dilation;
      }
      if (ok)
        set_add(out, is, x);
    }
    return;
  }
  case HLO_DYNAMIC_SLICE:
    if (k > 0) {
      set_add(out, is, x);
      return;
    }
    for (int d = 0; d < os->rank; d++)
      x[d] = o[d] + env_at(env, i->ops[1 + d], NULL);
    set_add(out, is, x);
    return;
  case HLO_DYNAMIC_UPDATE_SLICE:
    if (k > 1) {
      set_add(out, is, x);
      return;
    }
    {
      bool in_update = true;
      for (int d = 0; d < os->rank; d++) {
        x[d] = o[d] - env_at(env, i->ops[2 + d], NULL);
        in_update &= x[d] >= 0 && x[d] < i->ops[1]->shape->dims[d];
      }
      if (k == 1 && in_update)
        set_add(out, is, x);
      if (k == 0 && !in_update)
        set_add(out, is, o);
    }
    return;
  case HLO_GATHER: {
    const HloInstr *ix = i->ops[1];
    int64_t nk = ix->shape->dims[1];
    if (k == 1) {
      for (int64_t t = 0; t < nk; t++) {
        x[0] = o[0];
        x[1] = t;
        set_add(out, is, x);
      }
      return;
    }
    for (int d = 0; d < is->rank; d++) {
      x[d] = o[d + 1];
      if (d < nk) {
        int64_t at[2] = {o[0], d};
        x[d] += env_at(env, ix, at);
      }
    }
    set_add(out, is, x);
    return;
  }
  case HLO_SORT: {
    int64_t dim = i->dims.v[0];
    memcpy(x, o, sizeof(int64_t) * (size_t)os->rank);
    for (int64_t t = 0; t < os->dims[dim]; t++) {
      x[dim] = t;
      set_add(out, is, x);
    }
    return;
  }
  default: /* elementwise */
    if (is->rank == 0)
      set_add(out, is, x);
    else
      set_add(out, is, o);
    return;
  }
}

/* Which operands' maps over-approximate (see the file comment). */
static bool superset_only(const HloInstr *i, int k) {
  return (i->op == HLO_PAD && k == 1) ||
         (i->op == HLO_DYNAMIC_UPDATE_SLICE && k == 0);
}

static bool oob_allowed(const HloInstr *i, int k) {
  return i->op == HLO_DYNAMIC_UPDATE_SLICE && k == 1;
}

/* Output shape of a non-tuple instruction or element 0 of a tuple. */
static const Shape *out_shape(const HloInstr *i) { return indexing_output_shape(i, 0); }

static int checked_points;

static void check_out_to_in(AffCtx *c, const HloInstr *i, const Env *env) {
  const Shape *os = out_shape(i);
  InstrIndexing *ii = indexing_out_to_in(c, i, 0);
  cr_assert_eq(ii->n, i->nops);
  Set got = {0}, want = {0};
  int64_t o[16];
  int64_t total = shape_elements(os);
  for (int k = 0; k < i->nops; k++) {
    const Shape *is = i->ops[k]->shape;
    for (int j = 0; j < ii->sets[k].n; j++)
      cr_assert(!ii->sets[k].maps[j]->undefined, "%s operand %d: undefined map",
                hlo_op_name(i->op), k);
    for (int64_t lin = 0; lin < total; lin++) {
      delin(os, lin, o);
      set_clear(&got);
      set_clear(&want);
      set_image(&ii->sets[k], o, env, is, &got);
      ref_reads(i, k, o, env, &want);
      checked_points++;
      bool ok = superset_only(i, k) ? set_contains_all(&got, &want)
                                    : set_equal(&got, &want);
      if (!oob_allowed(i, k))
        ok &= !got.oob;
      if (!ok) {
        StrBuf b;
        sb_init(&b);
        for (int j = 0; j < ii->sets[k].n; j++)
          imap_print(&b, ii->sets[k].maps[j]);
        cr_assert_fail("%s operand %d at output lin %lld: map gives %d elements "
                       "(oob %d), reference %d\n%s",
                       hlo_op_name(i->op), k, (long long)lin, got.n, got.oob,
                       want.n, b.s);
      }
    }
  }
  set_free(&got);
  set_free(&want);
}

/* Input-to-output against the inverse of the reference relation. */
static void check_in_to_out(AffCtx *c, const HloInstr *i, const Env *env) {
  const Shape *os = out_shape(i);
  int64_t nout = shape_elements(os);
  int64_t o[16], x[16];
  Set got = {0}, reads = {0};
  for (int k = 0; k < i->nops; k++) {
    const Shape *is = i->ops[k]->shape;
    int64_t nin = shape_elements(is);
    InstrIndexing *ii = indexing_in_to_out(c, i, k);
    for (int j = 0; j < ii->sets[0].n; j++)
      cr_assert(!ii->sets[0].maps[j]->undefined,
                "in-to-out %s operand %d: undefined map", hlo_op_name(i->op), k);
    /* want[x] = outputs reading x */
    Set *want = xcalloc((size_t)nin + 1, sizeof(Set));
    for (int64_t lo = 0; lo < nout; lo++) {
      delin(os, lo, o);
      set_clear(&reads);
      ref_reads(i, k, o, env, &reads);
      for (int r = 0; r < reads.n; r++)
        set_add_lin(&want[reads.v[r]], lo);
    }
    for (int64_t li = 0; li < nin; li++) {
      delin(is, li, x);
      set_clear(&got);
      set_image(&ii->sets[0], x, env, os, &got);
      checked_points++;
      bool ok = superset_only(i, k) ? set_contains_all(&got, &want[li])
                                    : set_equal(&got, &want[li]);
      ok &= !got.oob;
      if (!ok) {
        StrBuf b;
        sb_init(&b);
        for (int j = 0; j < ii->sets[0].n; j++)
          imap_print(&b, ii->sets[0].maps[j]);
        cr_assert_fail("in-to-out %s operand %d at input lin %lld: map %d "
                       "(oob %d), reference %d\n%s",
                       hlo_op_name(i->op), k, (long long)li, got.n, got.oob,
                       want[li].n, b.s);
      }
    }
    for (int64_t li = 0; li <= nin; li++)
      set_free(&want[li]);
    free(want);
  }
  set_free(&got);
  set_free(&reads);
}

/*
 * Random instructions
 */
typedef struct Case {
  HloModule *m;
  HloComp *c;
  Env env;
  HloInstr *i;
  bool in_to_out;                 /* the opcode has input-to-output maps */
} Case;

static Shape *rshape(Rng *r, HloModule *m, int rank, int64_t maxd) {
  int64_t d[8] = {0};
  for (int k = 0; k < rank; k++)
    d[k] = rnd(r, 1, maxd);
  return tb_shapev(m, ET_F32, rank, d);
}

static void case_init(Case *cs, const char *name) {
  memset(cs, 0, sizeof(*cs));
  cs->m = hlo_module_new(name);
  cs->c = hlo_comp_new(cs->m, "entry");
  cs->in_to_out = true;
}

static HloInstr *scalar_param(Case *cs, const char *name, int n, ElemType et) {
  return tb_param(cs->c, name, n, shape_array(cs->m->arena, et, 0, NULL));
}

static void make_elementwise(Case *cs, Rng *r) {
  Shape *s = rshape(r, cs->m, (int)rnd(r, 0, 3), 4);
  HloInstr *a = tb_param(cs->c, "a", 0, s), *b = tb_param(cs->c, "b", 1, s);
  switch (rnd(r, 0, 3)) {
  case 0:
    cs->i = tb_instr(cs->c, "add", HLO_ADD, s, 2, a, b);
    break;
  case 1: {
    HloInstr *lo = scalar_param(cs, "lo", 2, ET_F32);
    cs->i = tb_instr(cs->c, "clamp", HLO_CLAMP, s, 3, lo, a, lo);
    break;
  }
  case 2: {
    HloInstr *p = scalar_param(cs, "p", 2, ET_PRED);
    cs->i = tb_instr(cs->c, "select", HLO_SELECT, s, 3, p, a, b);
    break;
  }
  default:
    cs->i = tb_instr(cs->c, "convert", HLO_CONVERT, s, 1, a);
  }
}

static void make_broadcast(Case *cs, Rng *r) {
  int orank = (int)rnd(r, 0, 3);
  Shape *os = rshape(r, cs->m, orank, 4);
  int64_t dims[8], idims[8];
  int n = 0;
  for (int k = 0; k < orank; k++)
    if (rnd(r, 0, 1)) {
      dims[n] = k;
      idims[n++] = os->dims[k];
    }
  HloInstr *a = tb_param(cs->c, "a", 0, tb_shapev(cs->m, ET_F32, n, idims));
  cs->i = tb_instr(cs->c, "bcast", HLO_BROADCAST, os, 1, a);
  cs->i->dims = (I64List){n, ARENA_ARRAY(cs->m->arena, int64_t, n + 1)};
  memcpy(cs->i->dims.v, dims, sizeof(int64_t) * (size_t)n);
}

static void random_perm(Rng *r, int64_t *p, int n) {
  for (int k = 0; k < n; k++)
    p[k] = k;
  for (int k = n - 1; k > 0; k--) {
    int j = (int)rnd(r, 0, k);
    int64_t t = p[k];
    p[k] = p[j];
    p[j] = t;
  }
}

static void make_transpose(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 4);
  Shape *is = rshape(r, cs->m, rank, 3);
  int64_t p[8], od[8];
  random_perm(r, p, rank);
  for (int k = 0; k < rank; k++)
    od[k] = is->dims[p[k]];
  HloInstr *a = tb_param(cs->c, "a", 0, is);
  cs->i = tb_instr(cs->c, "transpose", HLO_TRANSPOSE,
                   tb_shapev(cs->m, ET_F32, rank, od), 1, a);
  cs->i->dims = (I64List){rank, ARENA_ARRAY(cs->m->arena, int64_t, rank)};
  memcpy(cs->i->dims.v, p, sizeof(int64_t) * (size_t)rank);
}

static void make_reverse(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 3);
  Shape *s = rshape(r, cs->m, rank, 4);
  HloInstr *a = tb_param(cs->c, "a", 0, s);
  cs->i = tb_instr(cs->c, "reverse", HLO_REVERSE, s, 1, a);
  cs->i->dims = (I64List){0, ARENA_ARRAY(cs->m->arena, int64_t, rank)};
  for (int k = 0; k < rank; k++)
    if (rnd(r, 0, 1))
      cs->i->dims.v[cs->i->dims.n++] = k;
}

static void make_slice(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 3);
  Shape *is = rshape(r, cs->m, rank, 7);
  SliceDim *sd = ARENA_ARRAY(cs->m->arena, SliceDim, rank);
  int64_t od[8];
  for (int k = 0; k < rank; k++) {
    sd[k].start = rnd(r, 0, is->dims[k] - 1);
    sd[k].limit = rnd(r, sd[k].start + 1, is->dims[k]);
    sd[k].stride = rnd(r, 1, 3);
    od[k] = (sd[k].limit - sd[k].start + sd[k].stride - 1) / sd[k].stride;
  }
  HloInstr *a = tb_param(cs->c, "a", 0, is);
  cs->i = tb_instr(cs->c, "slice", HLO_SLICE, tb_shapev(cs->m, ET_F32, rank, od),
                   1, a);
  cs->i->slice = sd;
}

/* A random shape with `total` elements: factors of total in random order,
 * with some 1s. */
static Shape *factor_shape(Rng *r, HloModule *m, int64_t total) {
  int64_t d[8];
  int n = 0;
  while (total > 1) {
    int64_t f = 0;
    for (int64_t t = 2; t <= total && !f && n < 4; t++)
      if (total % t == 0 && rnd(r, 0, 2) == 0)
        f = t;
    if (!f)
      f = total; /* take the rest */
    d[n++] = f;
    total /= f;
    if (n < 5 && rnd(r, 0, 6) == 0)
      d[n++] = 1;
  }
  if (n == 0 && rnd(r, 0, 1))
    d[n++] = 1;
  for (int k = n - 1; k > 0; k--) {
    int j = (int)rnd(r, 0, k);
    int64_t t = d[k];
    d[k] = d[j];
    d[j] = t;
  }
  return tb_shapev(m, ET_F32, n, d);
}

static const int64_t totals[] = {1, 2, 4, 6, 8, 12, 16, 24, 30, 36, 48, 60, 64};

static void make_reshape(Case *cs, Rng *r) {
  int64_t total = totals[rnd(r, 0, (int64_t)ARRAY_LEN(totals) - 1)];
  Shape *is = factor_shape(r, cs->m, total), *os = factor_shape(r, cs->m, total);
  HloInstr *a = tb_param(cs->c, "a", 0, is);
  cs->i = tb_instr(cs->c, "reshape", HLO_RESHAPE, os, 1, a);
}

static void random_layout(Rng *r, Shape *s) {
  int64_t p[8];
  if (s->rank == 0)
    return;
  random_perm(r, p, s->rank);
  memcpy(s->layout->minor_to_major, p, sizeof(int64_t) * (size_t)s->rank);
}

static void make_bitcast(Case *cs, Rng *r) {
  int64_t total = totals[rnd(r, 0, (int64_t)ARRAY_LEN(totals) - 1)];
  Shape *is = factor_shape(r, cs->m, total), *os = factor_shape(r, cs->m, total);
  random_layout(r, is);
  random_layout(r, os);
  HloInstr *a = tb_param(cs->c, "a", 0, is);
  cs->i = tb_instr(cs->c, "bitcast", HLO_BITCAST, os, 1, a);
}

static void make_concat(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 3);
  Shape *base = rshape(r, cs->m, rank, 3);
  int64_t cat = rnd(r, 0, rank - 1), n = rnd(r, 1, 3), total = 0;
  HloInstr *ops[4];
  for (int k = 0; k < n; k++) {
    Shape *s = shape_clone(cs->m->arena, base);
    s->dims[cat] = rnd(r, 1, 3);
    total += s->dims[cat];
    char name[8];
    snprintf(name, sizeof(name), "p%d", k);
    ops[k] = tb_param(cs->c, name, k, s);
  }
  Shape *os = shape_clone(cs->m->arena, base);
  os->dims[cat] = total;
  cs->i = hlo_instr_new(cs->c, HLO_CONCATENATE, os, (int)n, ops);
  cs->i->name = "concat";
  cs->c->root = cs->i;
  cs->i->dims = tb_list(cs->m, 1, cat);
}

static void make_dot(Case *cs, Rng *r) {
  int nb = (int)rnd(r, 0, 1), nl = (int)rnd(r, 0, 2), nr = (int)rnd(r, 0, 1),
      nc = (int)rnd(r, 0, 2);
  int64_t bs[2], ls[2], rs[2], cs_[2];
  for (int k = 0; k < 2; k++) {
    bs[k] = rnd(r, 1, 3);
    ls[k] = rnd(r, 1, 3);
    rs[k] = rnd(r, 1, 3);
    cs_[k] = rnd(r, 1, 3);
  }
  /* Roles of the lhs / rhs dimensions in random order. */
  int lrank = nb + nl + nc, rrank = nb + nc + nr;
  int64_t lp[8], rp[8], ld[8], rd[8];
  random_perm(r, lp, lrank);
  random_perm(r, rp, rrank);
  DotDnums *dn = ARENA_NEW(cs->m->arena, DotDnums);
  dn->lhs_batch = tb_list(cs->m, 0);
  dn->rhs_batch = tb_list(cs->m, 0);
  dn->lhs_contracting = tb_list(cs->m, 0);
  dn->rhs_contracting = tb_list(cs->m, 0);
  dn->lhs_batch.v = ARENA_ARRAY(cs->m->arena, int64_t, 4);
  dn->rhs_batch.v = ARENA_ARRAY(cs->m->arena, int64_t, 4);
  dn->lhs_contracting.v = ARENA_ARRAY(cs->m->arena, int64_t, 4);
  dn->rhs_contracting.v = ARENA_ARRAY(cs->m->arena, int64_t, 4);
  int64_t od[8];
  int on = 0;
  /* lhs roles: [0, nb) batch, [nb, nb+nl) free, rest contracting. */
  for (int k = 0; k < lrank; k++) {
    int role = (int)lp[k];
    if (role < nb) {
      ld[k] = bs[role];
      dn->lhs_batch.v[role] = k;
    } else if (role < nb + nl) {
      ld[k] = ls[role - nb];
    } else {
      ld[k] = cs_[role - nb - nl];
      dn->lhs_contracting.v[role - nb - nl] = k;
    }
  }
  dn->lhs_batch.n = nb;
  dn->lhs_contracting.n = nc;
  for (int k = 0; k < rrank; k++) {
    int role = (int)rp[k];
    if (role < nb) {
      rd[k] = bs[role];
      dn->rhs_batch.v[role] = k;
    } else if (role < nb + nc) {
      rd[k] = cs_[role - nb];
      dn->rhs_contracting.v[role - nb] = k;
    } else {
      rd[k] = rs[role - nb - nc];
    }
  }
  dn->rhs_batch.n = nb;
  dn->rhs_contracting.n = nc;
  for (int k = 0; k < nb; k++)
    od[on++] = bs[k];
  /* Free dims appear in the output in operand dimension order. */
  for (int k = 0; k < lrank; k++)
    if (lp[k] >= nb && lp[k] < nb + nl)
      od[on++] = ld[k];
  for (int k = 0; k < rrank; k++)
    if (rp[k] >= nb + nc)
      od[on++] = rd[k];
  HloInstr *a = tb_param(cs->c, "lhs", 0, tb_shapev(cs->m, ET_F32, lrank, ld));
  HloInstr *b = tb_param(cs->c, "rhs", 1, tb_shapev(cs->m, ET_F32, rrank, rd));
  cs->i = tb_instr(cs->c, "dot", HLO_DOT, tb_shapev(cs->m, ET_F32, on, od), 2, a, b);
  cs->i->dot = dn;
}

static void make_reduce(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 3);
  Shape *is = rshape(r, cs->m, rank, 4);
  int64_t od[8], rd[8];
  int on = 0, rn = 0;
  for (int k = 0; k < rank; k++) {
    if (rnd(r, 0, 1))
      rd[rn++] = k;
    else
      od[on++] = is->dims[k];
  }
  Shape *os = tb_shapev(cs->m, ET_F32, on, od);
  int nin = (int)rnd(r, 1, 2);
  HloInstr *ops[4];
  for (int k = 0; k < nin; k++)
    ops[k] = tb_param(cs->c, k ? "b" : "a", k, is);
  for (int k = 0; k < nin; k++)
    ops[nin + k] = scalar_param(cs, k ? "ib" : "ia", nin + k, ET_F32);
  Shape *shape = os;
  if (nin == 2) {
    Shape *el[2] = {os, os};
    shape = shape_tuple(cs->m->arena, 2, el);
  }
  cs->i = hlo_instr_new(cs->c, HLO_REDUCE, shape, 2 * nin, ops);
  cs->i->name = "reduce";
  cs->c->root = cs->i;
  cs->i->dims = (I64List){rn, ARENA_ARRAY(cs->m->arena, int64_t, rn + 1)};
  memcpy(cs->i->dims.v, rd, sizeof(int64_t) * (size_t)rn);
}

static bool make_pad(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 2);
  Shape *is = rshape(r, cs->m, rank, 4);
  PadDim *pd = ARENA_ARRAY(cs->m->arena, PadDim, rank);
  int64_t od[8];
  for (int k = 0; k < rank; k++) {
    pd[k].lo = rnd(r, -2, 2);
    pd[k].hi = rnd(r, -2, 2);
    pd[k].interior = rnd(r, 0, 2);
    od[k] = pd[k].lo + pd[k].hi + is->dims[k] + (is->dims[k] - 1) * pd[k].interior;
    if (od[k] < 1)
      return false;
  }
  HloInstr *a = tb_param(cs->c, "a", 0, is);
  HloInstr *v = scalar_param(cs, "v", 1, ET_F32);
  cs->i = tb_instr(cs->c, "pad", HLO_PAD, tb_shapev(cs->m, ET_F32, rank, od), 2, a, v);
  cs->i->padding = pd;
  return true;
}

static bool make_reduce_window(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 2);
  Shape *is = rshape(r, cs->m, rank, 5);
  Window *w = ARENA_NEW(cs->m->arena, Window);
  w->ndims = rank;
  w->dims = ARENA_ARRAY(cs->m->arena, WindowDim, rank);
  int64_t od[8];
  for (int k = 0; k < rank; k++) {
    WindowDim *wd = &w->dims[k];
    wd->size = rnd(r, 1, 3);
    wd->stride = rnd(r, 1, 2);
    wd->pad_lo = rnd(r, 0, 2);
    wd->pad_hi = rnd(r, 0, 2);
    wd->base_dilation = rnd(r, 1, 2);
    wd->window_dilation = rnd(r, 1, 2);
    int64_t padded = (is->dims[k] - 1) * wd->base_dilation + 1 + wd->pad_lo + wd->pad_hi;
    int64_t win = (wd->size - 1) * wd->window_dilation + 1;
    if (padded < win)
      return false;
    od[k] = (padded - win) / wd->stride + 1;
  }
  HloInstr *a = tb_param(cs->c, "a", 0, is);
  HloInstr *v = scalar_param(cs, "init", 1, ET_F32);
  cs->i = tb_instr(cs->c, "rw", HLO_REDUCE_WINDOW, tb_shapev(cs->m, ET_F32, rank, od),
                   2, a, v);
  cs->i->window = w;
  cs->in_to_out = false;
  return true;
}

static void make_dynamic_slice(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 3);
  Shape *is = rshape(r, cs->m, rank, 5);
  int64_t od[8];
  HloInstr *ops[8];
  ops[0] = tb_param(cs->c, "src", 0, is);
  for (int k = 0; k < rank; k++) {
    od[k] = rnd(r, 1, is->dims[k]);
    char name[16];
    snprintf(name, sizeof(name), "of%d", k);
    ops[1 + k] = scalar_param(cs, arena_strdup(cs->m->arena, name), 1 + k, ET_S32);
    env_set(&cs->env, cs->m->arena, ops[1 + k], r, 0, is->dims[k] - od[k]);
  }
  cs->i = hlo_instr_new(cs->c, HLO_DYNAMIC_SLICE, tb_shapev(cs->m, ET_F32, rank, od),
                        rank + 1, ops);
  cs->i->name = "ds";
  cs->c->root = cs->i;
  cs->i->dynamic_slice_sizes = (I64List){rank, ARENA_ARRAY(cs->m->arena, int64_t, rank)};
  memcpy(cs->i->dynamic_slice_sizes.v, od, sizeof(int64_t) * (size_t)rank);
}

static void make_dus(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 3);
  Shape *os = rshape(r, cs->m, rank, 5);
  int64_t ud[8];
  HloInstr *ops[8];
  for (int k = 0; k < rank; k++)
    ud[k] = rnd(r, 1, os->dims[k]);
  ops[0] = tb_param(cs->c, "src", 0, os);
  ops[1] = tb_param(cs->c, "upd", 1, tb_shapev(cs->m, ET_F32, rank, ud));
  for (int k = 0; k < rank; k++) {
    char name[16];
    snprintf(name, sizeof(name), "of%d", k);
    ops[2 + k] = scalar_param(cs, arena_strdup(cs->m->arena, name), 2 + k, ET_S32);
    env_set(&cs->env, cs->m->arena, ops[2 + k], r, 0, os->dims[k] - ud[k]);
  }
  cs->i = hlo_instr_new(cs->c, HLO_DYNAMIC_UPDATE_SLICE, os, rank + 2, ops);
  cs->i->name = "dus";
  cs->c->root = cs->i;
}

static void make_gather(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 3);
  Shape *is = rshape(r, cs->m, rank, 5);
  int64_t nk = rnd(r, 1, rank), n = rnd(r, 1, 3);
  int64_t ss[8], od[8];
  od[0] = n;
  for (int k = 0; k < rank; k++) {
    ss[k] = rnd(r, 1, is->dims[k]);
    od[k + 1] = ss[k];
  }
  HloInstr *a = tb_param(cs->c, "operand", 0, is);
  HloInstr *ix = tb_param(cs->c, "indices", 1, tb_shape(cs->m, ET_S32, 2, n, nk));
  cs->i = tb_instr(cs->c, "gather", HLO_GATHER,
                   tb_shapev(cs->m, ET_F32, rank + 1, od), 2, a, ix);
  GatherDnums *g = ARENA_NEW(cs->m->arena, GatherDnums);
  g->index_vector_dim = 1;
  g->offset_dims = (I64List){rank, ARENA_ARRAY(cs->m->arena, int64_t, rank)};
  g->start_index_map = (I64List){(int)nk, ARENA_ARRAY(cs->m->arena, int64_t, nk)};
  for (int k = 0; k < rank; k++)
    g->offset_dims.v[k] = k + 1;
  for (int k = 0; k < nk; k++)
    g->start_index_map.v[k] = k;
  cs->i->gather = g;
  cs->i->gather_slice_sizes = (I64List){rank, ARENA_ARRAY(cs->m->arena, int64_t, rank)};
  memcpy(cs->i->gather_slice_sizes.v, ss, sizeof(int64_t) * (size_t)rank);
  /* Every index row gets values valid for every dimension it indexes; draw
   * per element with the bound of its column. */
  int64_t *vals = ARENA_ARRAY(cs->m->arena, int64_t, n * nk);
  for (int64_t row = 0; row < n; row++)
    for (int64_t k = 0; k < nk; k++)
      vals[row * nk + k] = rnd(r, 0, is->dims[k] - ss[k]);
  cs->env.h[cs->env.n] = ix;
  cs->env.vals[cs->env.n++] = vals;
  cs->in_to_out = false;
}

static void make_sort(Case *cs, Rng *r) {
  int rank = (int)rnd(r, 1, 2);
  Shape *s = rshape(r, cs->m, rank, 4);
  HloInstr *a = tb_param(cs->c, "a", 0, s);
  cs->i = tb_instr(cs->c, "sort", HLO_SORT, s, 1, a);
  cs->i->dims = tb_list(cs->m, 1, rnd(r, 0, rank - 1));
  cs->in_to_out = false;
}

typedef bool (*Maker)(Case *, Rng *);

static bool wrap_void(void (*f)(Case *, Rng *), Case *cs, Rng *r) {
  f(cs, r);
  return true;
}

static bool run_maker(int which, Case *cs, Rng *r) {
  switch (which) {
  case 0: return wrap_void(make_elementwise, cs, r);
  case 1: return wrap_void(make_broadcast, cs, r);
  case 2: return wrap_void(make_transpose, cs, r);
  case 3: return wrap_void(make_reverse, cs, r);
  case 4: return wrap_void(make_slice, cs, r);
  case 5: return wrap_void(make_reshape, cs, r);
  case 6: return wrap_void(make_bitcast, cs, r);
  case 7: return wrap_void(make_concat, cs, r);
  case 8: return wrap_void(make_dot, cs, r);
  case 9: return wrap_void(make_reduce, cs, r);
  case 10: return make_pad(cs, r);
  case 11: return make_reduce_window(cs, r);
  case 12: return wrap_void(make_dynamic_slice, cs, r);
  case 13: return wrap_void(make_dus, cs, r);
  case 14: return wrap_void(make_gather, cs, r);
  case 15: return wrap_void(make_sort, cs, r);
  }
  return false;
}

#define NMAKERS 16
#define CASES_PER_OP 60

Test(indexing_props, every_op_reads_what_the_reference_reads) {
  Rng r = {0x9e3779b97f4a7c15ull};
  int ncases = 0;
  for (int which = 0; which < NMAKERS; which++) {
    for (int t = 0; t < CASES_PER_OP; t++) {
      Case cs;
      case_init(&cs, "prop");
      if (!run_maker(which, &cs, &r)) {
        hlo_module_free(cs.m);
        continue;
      }
      AffCtx *c = aff_ctx_new();
      check_out_to_in(c, cs.i, &cs.env);
      if (cs.in_to_out)
        check_in_to_out(c, cs.i, &cs.env);
      aff_ctx_free(c);
      hlo_module_free(cs.m);
      ncases++;
    }
  }
  fprintf(stderr, "%d random instructions, %d points checked\n", ncases, checked_points);
  cr_assert_gt(ncases, NMAKERS * CASES_PER_OP / 2);
}

/*
 * The interpreter as the reference: for each random instruction above, the
 * entry computation is run on base inputs (every f32 element a distinct
 * finite value), then once more per input element with only that element
 * perturbed, and the output elements that changed are the ones that
 * element actually reaches.  Every output element that changed must be in
 * the inverse of the output-to-input map and in the input-to-output map's
 * image (where the opcode has one); where the map is exact the sets must be
 * equal.
 *
 * Perturbations: f32 elements become NaN (it propagates through add,
 * convert, clamp, dot's products and sums and the add reducers used here);
 * sort's operand takes a large finite value instead (a NaN key breaks the
 * comparator's strict weak order).  pred elements are flipped.  s32 elements
 * are index operands (dynamic offsets, gather indices): they become v + 1,
 * which the interpreter clamps like any start index, and since moving a
 * start moves every read of the instruction they are checked for
 * containment only; the base values are the Env's, drawn in range, so the
 * maps' runtime variables see what the interpreter reads.
 *
 * Containment only (the map over-approximates by design or the data decide):
 * pad's padding value, dynamic-update-slice's operand (the seed's
 * documented over-approximations), select's on-true / on-false operands
 * (the predicate picks one), sort (a changed key moves only the elements
 * between its old and new rank), and the index operands.  Everything else
 * is checked for equality: elementwise, broadcast, transpose, reverse,
 * slice, reshape, bitcast, concatenate, dot, reduce (an add reducer over all
 * of its operands, so each output reads every operand and init value),
 * reduce-window (add), pad's operand, dynamic-slice's operand,
 * dynamic-update-slice's update and gather's operand.
 */

/* Reducers and comparators the makers leave out. */
static HloComp *scalar_comp(Case *cs, const char *name, int nparams,
                            bool compare) {
  HloComp *c = hlo_comp_new(cs->m, name);
  Shape *f = shape_array(cs->m->arena, ET_F32, 0, NULL);
  HloInstr *p[4];
  for (int k = 0; k < nparams; k++) {
    char pn[16];
    snprintf(pn, sizeof(pn), "x%d", k);
    p[k] = tb_param(c, pn, k, f);
  }
  if (compare) {
    HloInstr *lt = tb_instr(c, "lt", HLO_COMPARE,
                            shape_array(cs->m->arena, ET_PRED, 0, NULL), 2, p[0], p[1]);
    lt->cmp_dir = CMP_LT;
    return c;
  }
  HloInstr *s = p[0];
  for (int k = 1; k < nparams; k++)
    s = tb_instr(c, "sum", HLO_ADD, f, 2, s, p[k]);
  if (nparams == 4) {
    Shape *el[2] = {f, f};
    tb_instr(c, "t", HLO_TUPLE, shape_tuple(cs->m->arena, 2, el), 2, s, s);
  }
  return c;
}

static void attach_comps(Case *cs) {
  HloInstr *i = cs->i;
  HloComp *called = NULL;
  if (i->op == HLO_REDUCE)
    called = scalar_comp(cs, "reducer", i->nops == 4 ? 4 : 2, false);
  else if (i->op == HLO_REDUCE_WINDOW)
    called = scalar_comp(cs, "reducer", 2, false);
  else if (i->op == HLO_SORT)
    called = scalar_comp(cs, "less", 2, true);
  if (!called)
    return;
  i->ncalled = 1;
  i->called = ARENA_ARRAY(cs->m->arena, HloComp *, 1);
  i->called[0] = called;
}

static bool interp_exact(const HloInstr *i, int k) {
  if (superset_only(i, k) || i->op == HLO_SORT ||
      i->ops[k]->shape->et == ET_S32)
    return false;
  return !(i->op == HLO_SELECT && k > 0);
}

static double base_value;         /* distinct f32 values across a case */

static Literal *base_literal(Arena *a, const HloInstr *p, const Env *env,
                             Rng *r) {
  Literal *l = literal_new(a, p->shape);
  int64_t n = shape_elements(p->shape);
  for (int64_t j = 0; j < n; j++) {
    switch (p->shape->et) {
    case ET_F32:
      base_value += 0.25;
      literal_set_f64(l, j, base_value);
      break;
    case ET_PRED:
      literal_set_s64(l, j, rnd(r, 0, 1));
      break;
    default: {
      int64_t idx[16];
      delin(p->shape, j, idx);
      literal_set_s64(l, j, env_at(env, p, idx));
    }
    }
  }
  return l;
}

static Literal *eval_leaf0(const Case *cs, int nargs, Literal **args,
                           Arena *a) {
  Diag d = {0};
  EvalOptions o;
  eval_options_default(&o);
  Literal *res = NULL;
  bool ok = eval_computation(cs->m, cs->c, nargs, args, a, &o, &res, &d, NULL);
  cr_assert(ok, "%s: interpreter failed: %s", hlo_op_name(cs->i->op),
            d.msg ? d.msg : "?");
  diag_clear(&d);
  return res->ntuple ? res->tuple[0] : res;
}

static int interp_evals, interp_points, interp_exact_points;

/* Output elements whose bits differ. */
static void changed_outputs(const Literal *base, const Literal *now, Set *out) {
  int64_t n = shape_elements(base->shape);
  size_t eb = (size_t)et_bytes(base->shape->et);
  for (int64_t o = 0; o < n; o++)
    if (memcmp(base->data + (size_t)o * eb, now->data + (size_t)o * eb, eb))
      set_add_lin(out, o);
}

static void check_against_interpreter(AffCtx *c, Case *cs, Rng *r) {
  const HloInstr *i = cs->i;
  const Shape *os = out_shape(i);
  int64_t nout = shape_elements(os);
  int np = cs->c->nparams;
  Arena *a = arena_new();
  Literal *args[16];
  cr_assert(np <= 16);
  base_value = 0.5;
  for (int p = 0; p < np; p++)
    args[p] = base_literal(a, cs->c->params[p], &cs->env, r);
  Literal *base = eval_leaf0(cs, np, args, a);
  interp_evals++;
  InstrIndexing *o2i = indexing_out_to_in(c, i, 0);
  /* dep[k][x]: outputs whose out-to-in image of operand k holds x. */
  Set *dep[16];
  int64_t o[16], x[16];
  Set img = {0}, want = {0}, want_i2o = {0}, changed = {0};
  for (int k = 0; k < i->nops; k++) {
    int64_t nin = shape_elements(i->ops[k]->shape);
    dep[k] = xcalloc((size_t)nin + 1, sizeof(Set));
    for (int64_t lo = 0; lo < nout; lo++) {
      delin(os, lo, o);
      set_clear(&img);
      set_image(&o2i->sets[k], o, &cs->env, i->ops[k]->shape, &img);
      for (int t = 0; t < img.n; t++)
        set_add_lin(&dep[k][img.v[t]], lo);
    }
  }
  for (int p = 0; p < np; p++) {
    const HloInstr *ph = cs->c->params[p];
    const Shape *ps = ph->shape;
    int64_t n = shape_elements(ps);
    /* A parameter the instruction does not use (convert's "b") must
     * change nothing: no map, exact. */
    bool exact = true;
    for (int k = 0; k < i->nops; k++)
      if (i->ops[k] == ph)
        exact &= interp_exact(i, k);
    Literal *saved = args[p];
    for (int64_t j = 0; j < n; j++) {
      Arena *pa = arena_new();
      Literal *l = literal_new(pa, saved->shape);
      memcpy(l->data, saved->data, (size_t)n * (size_t)et_bytes(ps->et));
      if (ps->et == ET_F32)
        literal_set_f64(l, j, i->op == HLO_SORT ? 1e6 : NAN);
      else if (ps->et == ET_PRED)
        literal_set_s64(l, j, !literal_get_s64(l, j));
      else
        literal_set_s64(l, j, literal_get_s64(l, j) + 1);
      args[p] = l;
      Literal *now = eval_leaf0(cs, np, args, pa);
      args[p] = saved;
      interp_evals++;
      set_clear(&changed);
      changed_outputs(base, now, &changed);
      arena_free(pa);
      /* What the maps say element j of parameter p reaches. */
      set_clear(&want);
      set_clear(&want_i2o);
      delin(ps, j, x);
      for (int k = 0; k < i->nops; k++) {
        if (i->ops[k] != ph)
          continue;
        for (int t = 0; t < dep[k][j].n; t++)
          set_add_lin(&want, dep[k][j].v[t]);
        if (cs->in_to_out) {
          InstrIndexing *i2o = indexing_in_to_out(c, i, k);
          set_image(&i2o->sets[0], x, &cs->env, os, &want_i2o);
        }
      }
      interp_points++;
      interp_exact_points += exact;
      bool ok = exact ? set_equal(&want, &changed)
                      : set_contains_all(&want, &changed);
      if (cs->in_to_out)
        ok &= exact ? set_equal(&want_i2o, &changed)
                    : set_contains_all(&want_i2o, &changed);
      if (!ok) {
        StrBuf b;
        sb_init(&b);
        for (int k = 0; k < i->nops; k++)
          if (i->ops[k] == ph)
            for (int t = 0; t < o2i->sets[k].n; t++)
              imap_print(&b, o2i->sets[k].maps[t]);
        cr_assert_fail("%s parameter %d element %lld: the interpreter changed "
                       "%d outputs, out-to-in maps give %d, in-to-out %d "
                       "(%s)\n%s", hlo_op_name(i->op), p, (long long)j,
                       changed.n, want.n, cs->in_to_out ? want_i2o.n : -1,
                       exact ? "exact" : "containment", b.s);
      }
    }
  }
  for (int k = 0; k < i->nops; k++) {
    int64_t nin = shape_elements(i->ops[k]->shape);
    for (int64_t t = 0; t <= nin; t++)
      set_free(&dep[k][t]);
    free(dep[k]);
  }
  set_free(&img);
  set_free(&want);
  set_free(&want_i2o);
  set_free(&changed);
  arena_free(a);
}

#define INTERP_CASES_PER_OP 60

Test(indexing_props, every_op_reads_what_the_interpreter_reads) {
  Rng r = {0x6a09e667f3bcc908ull};
  int ncases = 0, per_op[NMAKERS] = {0};
  for (int which = 0; which < NMAKERS; which++) {
    for (int t = 0; t < INTERP_CASES_PER_OP; t++) {
      Case cs;
      case_init(&cs, "interp");
      if (!run_maker(which, &cs, &r)) {
        hlo_module_free(cs.m);
        continue;
      }
      attach_comps(&cs);
      AffCtx *c = aff_ctx_new();
      check_against_interpreter(c, &cs, &r);
      aff_ctx_free(c);
      hlo_module_free(cs.m);
      ncases++;
      per_op[which]++;
    }
  }
  fprintf(stderr, "%d random instructions against the interpreter, %d input "
          "elements perturbed (%d checked for equality), %d evaluations\n",
          ncases, interp_points, interp_exact_points, interp_evals);
  for (int which = 0; which < NMAKERS; which++)
    cr_assert_gt(per_op[which], INTERP_CASES_PER_OP / 2,
                 "maker %d built too few cases", which);
}

/*
 * Composition through fusions: random chains of ops over one parameter.
 */

/* Elements of the computation's parameter 0 that element o of instruction i
 * reads, following every path (the reference composition). */
static void ref_reads_param0(const HloInstr *i, const int64_t *o, const Env *env,
                             Set *out) {
  if (i->op == HLO_PARAMETER) {
    if (i->param_number == 0)
      set_add(out, i->shape, o);
    return;
  }
  Set mid = {0};
  int64_t y[16];
  for (int k = 0; k < i->nops; k++) {
    set_clear(&mid);
    ref_reads(i, k, o, env, &mid);
    for (int j = 0; j < mid.n; j++) {
      delin(i->ops[k]->shape, mid.v[j], y);
      ref_reads_param0(i->ops[k], y, env, out);
    }
  }
  set_free(&mid);
}

/* One random unary step on x inside comp; NULL if it could not be built. */
static HloInstr *chain_step(Case *cs, Rng *r, HloInstr *x, int *nparams) {
  const Shape *s = x->shape;
  HloModule *m = cs->m;
  switch (rnd(r, 0, 9)) {
  case 0: { /* transpose */
    int64_t p[8], od[8];
    random_perm(r, p, s->rank);
    for (int k = 0; k < s->rank; k++)
      od[k] = s->dims[p[k]];
    HloInstr *t = tb_instr(cs->c, "t", HLO_TRANSPOSE, tb_shapev(m, ET_F32, s->rank, od), 1, x);
    t->dims = (I64List){s->rank, ARENA_ARRAY(m->arena, int64_t, s->rank + 1)};
    memcpy(t->dims.v, p, sizeof(int64_t) * (size_t)s->rank);
    return t;
  }
  case 1: { /* reshape */
    if (shape_elements(s) > 64)
      return NULL;
    return tb_instr(cs->c, "r", HLO_RESHAPE, factor_shape(r, m, shape_elements(s)), 1, x);
  }
  case 2: { /* reverse */
    HloInstr *t = tb_instr(cs->c, "rev", HLO_REVERSE, shape_clone(m->arena, s), 1, x);
    t->dims = (I64List){0, ARENA_ARRAY(m->arena, int64_t, s->rank + 1)};
    for (int k = 0; k < s->rank; k++)
      if (rnd(r, 0, 1))
        t->dims.v[t->dims.n++] = k;
    return t;
  }
  case 3: { /* slice */
    SliceDim *sd = ARENA_ARRAY(m->arena, SliceDim, s->rank + 1);
    int64_t od[8];
    for (int k = 0; k < s->rank; k++) {
      sd[k].start = rnd(r, 0, s->dims[k] - 1);
      sd[k].limit = rnd(r, sd[k].start + 1, s->dims[k]);
      sd[k].stride = rnd(r, 1, 2);
      od[k] = (sd[k].limit - sd[k].start + sd[k].stride - 1) / sd[k].stride;
    }
    HloInstr *t = tb_instr(cs->c, "sl", HLO_SLICE, tb_shapev(m, ET_F32, s->rank, od), 1, x);
    t->slice = sd;
    return t;
  }
  case 4: { /* broadcast: one new dimension somewhere */
    if (s->rank >= 4 || shape_elements(s) > 32)
      return NULL;
    int64_t at = rnd(r, 0, s->rank), od[8];
    I64List dims = {s->rank, ARENA_ARRAY(m->arena, int64_t, s->rank + 1)};
    for (int k = 0, j = 0; k <= s->rank; k++) {
      if (k == at) {
        od[k] = rnd(r, 1, 3);
        continue;
      }
      od[k] = s->dims[j];
      dims.v[j++] = k;
    }
    HloInstr *t = tb_instr(cs->c, "b", HLO_BROADCAST, tb_shapev(m, ET_F32, s->rank + 1, od), 1, x);
    t->dims = dims;
    return t;
  }
  case 5: { /* reduce one dimension */
    if (s->rank == 0)
      return NULL;
    int64_t rd = rnd(r, 0, s->rank - 1), od[8];
    for (int k = 0, j = 0; k < s->rank; k++)
      if (k != rd)
        od[j++] = s->dims[k];
    HloInstr *init = tb_param(cs->c, "init", (*nparams)++, shape_array(m->arena, ET_F32, 0, NULL));
    HloInstr *t = tb_instr(cs->c, "red", HLO_REDUCE, tb_shapev(m, ET_F32, s->rank - 1, od), 2, x, init);
    t->dims = tb_list(m, 1, rd);
    return t;
  }
  case 6: { /* pad */
    PadDim *pd = ARENA_ARRAY(m->arena, PadDim, s->rank + 1);
    int64_t od[8];
    for (int k = 0; k < s->rank; k++) {
      pd[k].lo = rnd(r, -1, 1);
      pd[k].hi = rnd(r, -1, 1);
      pd[k].interior = rnd(r, 0, 1);
      od[k] = pd[k].lo + pd[k].hi + s->dims[k] + (s->dims[k] - 1) * pd[k].interior;
      if (od[k] < 1 || od[k] > 8)
        return NULL;
    }
    HloInstr *v = tb_param(cs->c, "pv", (*nparams)++, shape_array(m->arena, ET_F32, 0, NULL));
    HloInstr *t = tb_instr(cs->c, "pad", HLO_PAD, tb_shapev(m, ET_F32, s->rank, od), 2, x, v);
    t->padding = pd;
    return t;
  }
  case 7: /* elementwise with itself, possibly reversed: two paths */
    if (s->rank >= 1 && rnd(r, 0, 1)) {
      HloInstr *rev = tb_instr(cs->c, "rv", HLO_REVERSE, shape_clone(m->arena, s), 1, x);
      rev->dims = tb_list(m, 1, rnd(r, 0, s->rank - 1));
      return tb_instr(cs->c, "add", HLO_ADD, shape_clone(m->arena, s), 2, x, rev);
    }
    return tb_instr(cs->c, "exp", HLO_EXP, shape_clone(m->arena, s), 1, x);
  case 9: { /* dynamic-slice with offsets from new parameters */
    if (s->rank == 0 || s->rank > 3)
      return NULL;
    HloInstr *ops[4] = {x};
    int64_t od[4];
    for (int k = 0; k < s->rank; k++) {
      od[k] = rnd(r, 1, s->dims[k]);
      ops[1 + k] = tb_param(cs->c, "of", (*nparams)++, shape_array(m->arena, ET_S32, 0, NULL));
      env_set(&cs->env, m->arena, ops[1 + k], r, 0, s->dims[k] - od[k]);
    }
    HloInstr *t = hlo_instr_new(cs->c, HLO_DYNAMIC_SLICE, tb_shapev(m, ET_F32, s->rank, od),
                                s->rank + 1, ops);
    t->name = "ds";
    cs->c->root = t;
    t->dynamic_slice_sizes = (I64List){s->rank, ARENA_ARRAY(m->arena, int64_t, s->rank)};
    memcpy(t->dynamic_slice_sizes.v, od, sizeof(int64_t) * (size_t)s->rank);
    return t;
  }
  default: { /* concatenate with itself */
    if (s->rank == 0)
      return NULL;
    int64_t cat = rnd(r, 0, s->rank - 1);
    Shape *os = shape_clone(m->arena, s);
    os->dims[cat] *= 2;
    HloInstr *t = tb_instr(cs->c, "cat", HLO_CONCATENATE, os, 2, x, x);
    t->dims = tb_list(m, 1, cat);
    return t;
  }
  }
}

/* The image of a map unsimplified against simplified, over the whole domain
 * box of the unsimplified map. */
static void check_simplify_preserves(const IndexingMap *raw,
                                     const IndexingMap *simp, const Env *env,
                                     const Shape *target) {
  if (raw->undefined)
    return;
  Set a = {0}, b = {0};
  int64_t d[16];
  int64_t total = 1;
  for (int k = 0; k < raw->ndims; k++)
    total *= raw->dims[k].hi - raw->dims[k].lo + 1;
  for (int64_t lin = 0; lin < total; lin++) {
    int64_t rem = lin;
    for (int k = raw->ndims - 1; k >= 0; k--) {
      int64_t w = raw->dims[k].hi - raw->dims[k].lo + 1;
      d[k] = raw->dims[k].lo + rem % w;
      rem /= w;
    }
    set_clear(&a);
    set_clear(&b);
    map_image(raw, d, env, target, &a);
    map_image(simp, d, env, target, &b);
    cr_assert(set_equal(&a, &b) && a.oob == b.oob,
              "simplification changed a map's meaning:\n%s\nbecame\n%s",
              imap_to_string(raw), imap_to_string(simp));
  }
  set_free(&a);
  set_free(&b);
}

Test(indexing_props, fusion_composition_reads_what_the_chain_reads) {
  Rng r = {0x2545f4914f6cdd1dull};
  int nchains = 0;
  for (int t = 0; t < 600; t++) {
    Case cs;
    case_init(&cs, "chain");
    HloComp *fc = hlo_comp_new(cs.m, "fused");
    HloComp *entry = cs.c;
    cs.c = fc;
    int nparams = 1;
    HloInstr *p = tb_param(fc, "p0", 0, rshape(&r, cs.m, (int)rnd(&r, 1, 3), 5));
    HloInstr *x = p;
    int len = (int)rnd(&r, 1, 6);
    for (int k = 0; k < len; k++) {
      HloInstr *n = chain_step(&cs, &r, x, &nparams);
      if (n)
        x = n;
    }
    fc->root = x;
    /* The fusion instruction in the entry computation. */
    HloInstr *ops[16];
    for (int k = 0; k < nparams; k++) {
      HloInstr *pp = NULL;
      for (int j = 0; j < fc->ninstrs; j++)
        if (fc->instrs[j]->op == HLO_PARAMETER && fc->instrs[j]->param_number == k)
          pp = fc->instrs[j];
      ops[k] = tb_param(entry, "arg", k, shape_clone(cs.m->arena, pp->shape));
    }
    HloInstr *fu = hlo_instr_new(entry, HLO_FUSION, shape_clone(cs.m->arena, x->shape),
                                 nparams, ops);
    fu->name = "fusion";
    fu->ncalled = 1;
    fu->called = ARENA_ARRAY(cs.m->arena, HloComp *, 1);
    fu->called[0] = fc;

    AffCtx *c = aff_ctx_new();
    InstrIndexing *ii = indexing_out_to_in(c, fu, 0);
    const Shape *os = x->shape;
    int64_t o[16];
    Set got = {0}, want = {0};
    for (int64_t lin = 0; lin < shape_elements(os); lin++) {
      delin(os, lin, o);
      set_clear(&got);
      set_clear(&want);
      set_image(&ii->sets[0], o, &cs.env, p->shape, &got);
      ref_reads_param0(x, o, &cs.env, &want);
      checked_points++;
      if (!set_equal(&got, &want) || got.oob) {
        StrBuf b;
        sb_init(&b);
        for (int j = 0; j < fc->ninstrs; j++) {
          indexing_print_instr_summary(&b, fc->instrs[j]);
          sb_putc(&b, '\n');
        }
        for (int j = 0; j < ii->sets[0].n; j++)
          imap_print(&b, ii->sets[0].maps[j]);
        cr_assert_fail("chain %d at output %lld: maps give %d (oob %d), "
                       "reference %d\n%s", t, (long long)lin, got.n, got.oob,
                       want.n, b.s);
      }
    }
    set_free(&got);
    set_free(&want);

    /* Simplification keeps the meaning of each composition step. */
    for (int j = fc->ninstrs - 1; j >= 1; j--) {
      const HloInstr *u = fc->instrs[j];
      if (u->op == HLO_PARAMETER || !u->nops)
        continue;
      InstrIndexing *top = indexing_out_to_in(c, u, 0);
      const HloInstr *v = u->ops[0];
      if (v->op == HLO_PARAMETER || !top->sets[0].n)
        continue;
      InstrIndexing *below = indexing_out_to_in(c, v, 0);
      if (!below->sets[0].n)
        continue;
      const IndexingMap *raw = imap_compose(c, top->sets[0].maps[0], below->sets[0].maps[0]);
      check_simplify_preserves(raw, imap_simplify(c, raw), &cs.env, v->ops[0]->shape);
    }
    aff_ctx_free(c);
    hlo_module_free(cs.m);
    nchains++;
  }
  fprintf(stderr, "%d chains, %d points checked\n", nchains, checked_points);
}

/*
 * Expressions: the constructors and aff_simplify keep the value at every
 * point of the box.  Each random expression is also built as a naive tree
 * evaluated directly, so the constructors' own rewrites are checked too.
 */
typedef struct Naive {
  int kind;                       /* 0 const, 1 dim, 2 add, 3 scale, 4 fdiv, 5 mod, 6 cdiv */
  int64_t v;
  struct Naive *a, *b;
} Naive;

static int64_t naive_eval(const Naive *n, const int64_t *d) {
  switch (n->kind) {
  case 0: return n->v;
  case 1: return d[n->v];
  case 2: return naive_eval(n->a, d) + naive_eval(n->b, d);
  case 3: return naive_eval(n->a, d) * n->v;
  case 4: return i64_floordiv(naive_eval(n->a, d), n->v);
  case 5: return i64_mod(naive_eval(n->a, d), n->v);
  default: return i64_ceildiv(naive_eval(n->a, d), n->v);
  }
}

static const AffExpr *random_expr(AffCtx *c, Arena *ar, Rng *r, int depth,
                                  int ndims, Naive **out) {
  Naive *n = ARENA_NEW(ar, Naive);
  *out = n;
  if (depth == 0 || rnd(r, 0, 3) == 0) {
    if (rnd(r, 0, 4) == 0) {
      n->kind = 0;
      n->v = rnd(r, -20, 20);
      return aff_const(c, n->v);
    }
    n->kind = 1;
    n->v = rnd(r, 0, ndims - 1);
    return aff_dim(c, (int)n->v);
  }
  const AffExpr *a = random_expr(c, ar, r, depth - 1, ndims, &n->a);
  switch (rnd(r, 0, 5)) {
  case 0: {
    n->kind = 2;
    const AffExpr *b = random_expr(c, ar, r, depth - 1, ndims, &n->b);
    return aff_add(c, a, b);
  }
  case 1:
    n->kind = 3;
    n->v = rnd(r, -6, 12);
    return aff_scale(c, a, n->v);
  case 2:
    n->kind = 4;
    n->v = rnd(r, 1, 16);
    return aff_floordiv(c, a, n->v);
  case 3:
    n->kind = 5;
    n->v = rnd(r, 1, 16);
    return aff_mod(c, a, n->v);
  case 4:
    n->kind = 6;
    n->v = rnd(r, 1, 8);
    return aff_ceildiv(c, a, n->v);
  default: {
    n->kind = 2;
    n->b = ARENA_NEW(ar, Naive);
    n->b->kind = 0;
    n->b->v = rnd(r, -30, 30);
    return aff_add_const(c, a, n->b->v);
  }
  }
}

Test(indexing_props, simplifier_keeps_expression_values) {
  Rng r = {0xdeadbeefcafef00dull};
  AffCtx *c = aff_ctx_new();
  Arena *ar = arena_new();
  int nchanged = 0;
  for (int t = 0; t < 3000; t++) {
    int nd = (int)rnd(&r, 1, 3);
    Interval b[3];
    for (int k = 0; k < nd; k++) {
      int64_t lo = rnd(&r, -5, 20);
      b[k] = interval(lo, lo + rnd(&r, 0, 25));
    }
    Naive *naive;
    const AffExpr *e = random_expr(c, ar, &r, (int)rnd(&r, 1, 4), nd, &naive);
    const AffExpr *s = aff_simplify(c, e, b, nd, NULL, 0);
    nchanged += s != e;
    Interval range = aff_range(e, b, NULL);
    int64_t d[3] = {b[0].lo, nd > 1 ? b[1].lo : 0, nd > 2 ? b[2].lo : 0};
    for (;;) {
      int64_t vn = naive_eval(naive, d);
      int64_t ve = aff_eval(e, d, NULL), vs = aff_eval(s, d, NULL);
      cr_assert_eq(vn, ve, "constructed %s differs from its definition at "
                   "(%lld, %lld, %lld)", aff_to_string(e), (long long)d[0],
                   (long long)d[1], (long long)d[2]);
      cr_assert_eq(ve, vs, "%s -> %s differ at (%lld, %lld, %lld)",
                   aff_to_string(e), aff_to_string(s), (long long)d[0],
                   (long long)d[1], (long long)d[2]);
      cr_assert(interval_contains(range, ve), "range of %s misses %lld",
                aff_to_string(e), (long long)ve);
      int k = 0;
      while (k < nd && d[k] == b[k].hi) {
        d[k] = b[k].lo;
        k++;
      }
      if (k == nd)
        break;
      d[k]++;
    }
  }
  fprintf(stderr, "%d of 3000 expressions simplified\n", nchanged);
  arena_free(ar);
  aff_ctx_free(c);
}
