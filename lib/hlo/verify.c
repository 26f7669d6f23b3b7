/*
 * verify.c - hlo_verify: the module-level invariants of HLO, after XLA's
 * HloVerifier (not layout sensitive, no mixed precision).
 *
 *   module        an entry computation; unique computation names; no
 *                 recursion through called computations; the entry layout
 *                 and input/output aliases fit the entry signature
 *   computation   a root that belongs to it; parameter numbers 0..n-1, each
 *                 once
 *   instruction   names unique in their computation, ids unique in the
 *                 module; operands and control predecessors in the same
 *                 computation, operands listed earlier; valid layouts;
 *                 operand counts, called computations and the declared
 *                 shape as hlo_infer_shape gives it; no mixed
 *                 floating-point operand types where XLA forbids them
 *
 * Names: XLA's verifier wants names unique in the whole module, but XLA's
 * parser renames clashes between computations as it loads text (its module
 * runs every name through a NameUniquer), so HLO text may repeat a name in
 * different computations; our parser keeps names as written, hence the
 * per-computation rule here.  A clash inside one computation is an error in
 * both.
 *
 * Everything is linear in the module size and each instruction is visited
 * once (the IR of a large module does not fit in cache): instruction ids
 * index a flat "seen" array, so an operand is defined earlier exactly when
 * it has been seen; names and computations go through hash tables sized up
 * front; inferred shapes (which share operand shapes where they are equal)
 * live in a scratch arena freed on return.  The first error is reported at
 * the offending instruction (or computation) and verification stops.
 */
#include "shape_inference_internal.h"

#include <string.h>

/*
 * Open-addressing tables sized once (twice the key count, a power of two) in
 * the scratch arena: keyed by string (names) or by pointer (computations).
 */
typedef struct Slot {
  const void *key;
  const char *name;         /* string tables: the key as a string */
  uint64_t hash;
  int val;
} Slot;

typedef struct Table {
  Slot *slots;
  uint64_t mask;
} Table;

static void table_init(Arena *a, Table *t, int n) {
  uint64_t cap = 16;
  while (cap < (uint64_t)n * 2)
    cap <<= 1;
  t->slots = ARENA_ARRAY(a, Slot, cap);
  t->mask = cap - 1;
}

static uint64_t ptr_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  return x ^ (x >> 33);
}

/* The slot for `key` (string when name is set): the matching one, else the
 * empty one where it belongs. */
static Slot *table_find(const Table *t, const void *key, const char *name,
                        uint64_t h) {
  for (uint64_t k = h & t->mask;; k = (k + 1) & t->mask) {
    Slot *s = &t->slots[k];
    if (!s->key)
      return s;
    if (name ? s->hash == h && strcmp(s->name, name) == 0 : s->key == key)
      return s;
  }
}

static Slot *name_slot(const Table *t, const char *name) {
  return table_find(t, name, name, hash_bytes(name, strlen(name)));
}

static Slot *ptr_slot(const Table *t, const void *p) {
  return table_find(t, p, NULL, ptr_hash(p));
}

static void slot_set(Slot *s, const void *key, const char *name, int val) {
  s->key = key;
  s->name = name;
  s->hash = name ? hash_bytes(name, strlen(name)) : 0;
  s->val = val;
}

/* The instruction names of one computation: (hash, id + 1) pairs, 0 for an
 * empty slot.  The table holds room for the largest computation; each
 * computation uses a prefix fitted to its own size, cleared after it. */
typedef struct NameSlot {
  uint32_t hash;
  int32_t id1;
} NameSlot;

static uint64_t pow2_at_least(uint64_t n) {
  uint64_t cap = 16;
  while (cap < n)
    cap <<= 1;
  return cap;
}

typedef struct VCtx {
  Arena *a;
  const HloModule *m;
  Diag *d;
  int nids;
  const HloInstr **by_id;   /* instructions seen so far, by id */
  int comp;                 /* index of the computation being checked */
  const HloInstr **params;  /* its parameters so far */
  int nparams;
  const HloInstr **pending; /* its instructions with later control preds */
  int npending;
  Table comp_names;         /* computation name -> index */
  Table comp_index;         /* computation pointer -> index */
  NameSlot *names;          /* instruction names of one computation */
  uint64_t names_mask;
  bool needs_dfs;           /* some computation calls a later one */
} VCtx;

static int line_of(const HloInstr *i) { return i->loc.file ? i->loc.line : 0; }

static bool fail_at(VCtx *v, Loc loc, const char *fmt, ...) PRINTF_LIKE(3, 4);
static bool fail_at(VCtx *v, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(v->d, loc, fmt, ap);
  va_end(ap);
  return false;
}

static const char *shape_text(VCtx *v, const Shape *s) {
  SiCtx c = {v->a, NULL, v->d, false};
  return si_str(&c, s);
}

/* A layout fits its array shape: minor_to_major is a permutation of the
 * dimensions.  Dimension sizes are non-negative except for '?'. */
static bool valid_shape(const Shape *s) {
  if (!s)
    return false;
  if (s->et == ET_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (!valid_shape(s->tuple[k]))
        return false;
    return true;
  }
  if (!si_et_array(s->et))
    return s->et == ET_TOKEN || s->et == ET_OPAQUE;
  if (s->rank < 0 || (s->rank > 0 && !s->dims))
    return false;
  for (int d = 0; d < s->rank; d++)
    if (s->dims[d] < 0 && !(s->dyn && s->dyn[d] == DIM_UNBOUNDED))
      return false;
  const Layout *l = s->layout;
  if (!l)
    return true;
  if (l->rank != s->rank || (l->rank > 0 && !l->minor_to_major))
    return false;
  uint64_t seen = 0;
  for (int d = 0; d < l->rank; d++) {
    int64_t x = l->minor_to_major[d];
    if (x < 0 || x >= s->rank)
      return false;
    if (x < 64) {
      if (seen >> x & 1)
        return false;
      seen |= 1ull << x;
    } else {
      for (int e = 0; e < d; e++)
        if (l->minor_to_major[e] == x)
          return false;
    }
  }
  return true;
}

/*
 * The computations: names, membership, the entry.
 */
static bool index_module(VCtx *v) {
  const HloModule *m = v->m;
  if (!m->entry)
    return fail_at(v, m->loc, "module '%s' has no entry computation",
                   m->name ? m->name : "");
  bool entry_found = false;
  int max_instrs = 0;
  table_init(v->a, &v->comp_names, m->ncomps);
  table_init(v->a, &v->comp_index, m->ncomps);
  for (int k = 0; k < m->ncomps; k++) {
    const HloComp *c = m->comps[k];
    if (!c)
      return fail_at(v, m->loc, "computation %d of module '%s' is missing", k,
                     m->name ? m->name : "");
    if (!c->name)
      return fail_at(v, c->loc, "computation %d has no name", k);
    Slot *s = name_slot(&v->comp_names, c->name);
    if (s->key)
      return fail_at(v, c->loc, "computation name '%s' is used twice",
                     c->name);
    slot_set(s, c, c->name, k);
    s = ptr_slot(&v->comp_index, c);
    if (s->key)
      return fail_at(v, c->loc, "computation '%s' is listed twice", c->name);
    slot_set(s, c, NULL, k);
    if (c->ninstrs > max_instrs)
      max_instrs = c->ninstrs;
    if (c->module != m)
      return fail_at(v, c->loc, "computation '%s' belongs to another module",
                     c->name);
    if (c->ninstrs > 0 && !c->instrs)
      return fail_at(v, c->loc, "computation '%s' has no instruction list",
                     c->name);
    entry_found = entry_found || c == m->entry;
  }
  if (!entry_found)
    return fail_at(v, m->loc, "entry computation '%s' is not in the module",
                   m->entry->name);
  uint64_t cap = pow2_at_least(2 * (uint64_t)max_instrs);
  v->names = ARENA_ARRAY(v->a, NameSlot, cap);
  v->params = ARENA_ARRAY(v->a, const HloInstr *, max_instrs + 1);
  v->pending = ARENA_ARRAY(v->a, const HloInstr *, max_instrs + 1);
  v->nids = m->next_id;
  v->by_id = ARENA_ARRAY(v->a, const HloInstr *, v->nids + 1);
  return true;
}

/* A hash of a name, eight bytes at a time. */
static uint64_t name_hash(const char *s) {
  size_t n = strlen(s);
  uint64_t h = 0x243f6a8885a308d3ull ^ n;
  for (; n >= 8; n -= 8, s += 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  uint64_t w = 0;
  memcpy(&w, s, n);
  h = (h ^ w) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 32);
}

/* Instruction names are unique within their computation. */
static bool check_name(VCtx *v, const HloInstr *i) {
  if (!i->name || !*i->name)
    return fail_at(v, i->loc, "instruction has no name");
  uint64_t h64 = name_hash(i->name);
  uint32_t h = (uint32_t)(h64 ^ (h64 >> 32));
  uint64_t k = h64 & v->names_mask;
  for (; v->names[k].id1; k = (k + 1) & v->names_mask) {
    const HloInstr *o = v->by_id[v->names[k].id1 - 1];
    if (v->names[k].hash != h || strcmp(o->name, i->name) != 0)
      continue;
    if (line_of(o))
      return fail_at(v, i->loc, "instruction name '%s' is already used on "
                     "line %d of computation '%s'", i->name, line_of(o),
                     i->parent->name);
    return fail_at(v, i->loc, "instruction name '%s' is used twice in "
                   "computation '%s'", i->name, i->parent->name);
  }
  v->names[k] = (NameSlot){h, i->id + 1};
  return true;
}

/* Checks one control predecessor; `final` once the whole computation has
 * been seen (a predecessor may come later in the text). */
static bool check_control_pred(VCtx *v, const HloInstr *i, int k,
                               bool final) {
  const HloInstr *o = i->control_preds ? i->control_preds[k] : NULL;
  if (!o)
    return fail_at(v, i->loc, "control predecessor %d of '%s' is missing", k,
                   si_name(i));
  if (o->parent != i->parent)
    return fail_at(v, i->loc, "control predecessor '%s' of '%s' is in "
                   "another computation", si_name(o), si_name(i));
  bool seen = o->id >= 0 && o->id < v->nids && v->by_id[o->id] == o;
  if (!seen && final)
    return fail_at(v, i->loc, "control predecessor '%s' of '%s' is not an "
                   "instruction of computation '%s'", si_name(o), si_name(i),
                   i->parent->name);
  return true;
}

/* Operands, control predecessors and called computations: operands are
 * instructions of the same computation listed earlier (already seen). */
static bool check_uses(VCtx *v, const HloInstr *i) {
  const HloComp *c = i->parent;
  for (int k = 0; k < i->nops; k++) {
    const HloInstr *o = i->ops ? i->ops[k] : NULL;
    if (!o)
      return fail_at(v, i->loc, "operand %d of '%s' is missing", k,
                     si_name(i));
    bool seen = o->id >= 0 && o->id < v->nids && v->by_id[o->id] == o;
    if (o->parent != c)
      return fail_at(v, i->loc, "operand %d of '%s' ('%s') is in computation "
                     "'%s', not '%s'", k, si_name(i), si_name(o),
                     o->parent && o->parent->name ? o->parent->name : "?",
                     c->name);
    if (!seen)
      return fail_at(v, i->loc, "'%s' uses '%s' before its definition",
                     si_name(i), si_name(o));
    if ((o->op == HLO_ASYNC_START || o->op == HLO_ASYNC_UPDATE) &&
        (k != 0 || (i->op != HLO_ASYNC_UPDATE && i->op != HLO_ASYNC_DONE)))
      return fail_at(v, i->loc, "'%s' uses %s '%s' as operand %d; async ops "
                     "may only feed operand 0 of async-update or async-done",
                     si_name(i), hlo_op_name(o->op), si_name(o), k);
  }
  for (int k = 0; k < i->ncontrol_preds; k++) {
    if (!check_control_pred(v, i, k, false))
      return false;
    const HloInstr *o = i->control_preds[k];
    if (!(o->id >= 0 && o->id < v->nids && v->by_id[o->id] == o)) {
      v->pending[v->npending++] = i;
      break;
    }
  }
  for (int k = 0; k < i->ncalled; k++) {
    const HloComp *cc = i->called ? i->called[k] : NULL;
    if (!cc)
      return fail_at(v, i->loc, "called computation %d of '%s' is missing", k,
                     si_name(i));
    Slot *s = ptr_slot(&v->comp_index, cc);
    if (!s->key)
      return fail_at(v, i->loc, "'%s' calls computation '%s', which is not "
                     "in the module", si_name(i), cc->name ? cc->name : "?");
    if (cc == c)
      return fail_at(v, i->loc, "'%s' calls its own computation '%s'",
                     si_name(i), c->name);
    if (s->val > v->comp)
      v->needs_dfs = true;
  }
  return true;
}

/* After a computation's instructions: its root belongs to it, parameter
 * numbers are 0..n-1 once each and recorded as such, and the control
 * predecessors that came later in the text exist. */
static bool finish_computation(VCtx *v, const HloComp *c) {
  for (int k = 0; k < v->npending; k++) {
    const HloInstr *i = v->pending[k];
    for (int j = 0; j < i->ncontrol_preds; j++)
      if (!check_control_pred(v, i, j, true))
        return false;
  }
  if (!c->root)
    return fail_at(v, c->loc, "computation '%s' has no root instruction",
                   c->name);
  if (c->root->parent != c || c->root->id < 0 || c->root->id >= v->nids ||
      v->by_id[c->root->id] != c->root)
    return fail_at(v, c->loc, "root '%s' of computation '%s' is not one of "
                   "its instructions", si_name(c->root), c->name);
  int count = v->nparams;
  const HloInstr **seen = ARENA_ARRAY(v->a, const HloInstr *, count + 1);
  for (int k = 0; k < count; k++) {
    const HloInstr *i = v->params[k];
    int64_t n = i->param_number;
    if (n < 0 || n >= count)
      return fail_at(v, i->loc, "parameter '%s' has number %lld but "
                     "computation '%s' has %d parameters (numbers 0 to %d)",
                     si_name(i), (long long)n, c->name, count, count - 1);
    if (seen[n])
      return fail_at(v, i->loc, "parameter '%s' has number %lld, already "
                     "used by '%s'", si_name(i), (long long)n,
                     si_name(seen[n]));
    seen[n] = i;
  }
  if (c->nparams != count)
    return fail_at(v, c->loc, "computation '%s' records %d parameters but "
                   "has %d", c->name, c->nparams, count);
  for (int n = 0; n < count; n++)
    if (!c->params || c->params[n] != seen[n])
      return fail_at(v, seen[n]->loc, "parameter %d of computation '%s' is "
                     "not recorded as such", n, c->name);
  return true;
}

/* What the inferred shape comes from, for the mismatch message. */
static const char *source_of(VCtx *v, const HloInstr *i) {
  switch (i->op) {
  case HLO_CALL: case HLO_FUSION: case HLO_CONDITIONAL: {
    const char *name = i->ncalled ? i->called[0]->name : "?";
    size_t n = strlen(name) + 32;
    char *s = arena_alloc(v->a, n);
    snprintf(s, n, "computation '%s' gives", name);
    return s;
  }
  case HLO_CONSTANT:
    return "its literal has";
  default:
    return "operands give";
  }
}

/* XLA's CheckMixedPrecisionOperands: without mixed precision, the operands'
 * floating-point leaves must all have one type, except for the ops that
 * pass data through or group it (and dot and convolution, whose declared
 * type is the accumulation type).  Only ops whose XLA handler calls
 * CheckShape are subject to it. */
static bool mixed_precision_applies(HloOp op) {
  switch (op) {
  case HLO_CALL: case HLO_CONDITIONAL: case HLO_CONSTANT:
  case HLO_CONVOLUTION: case HLO_DOT: case HLO_RAGGED_DOT:
  case HLO_SCALED_DOT: case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START:
  case HLO_ALL_REDUCE_DONE: case HLO_ALL_GATHER: case HLO_ALL_GATHER_START:
  case HLO_ALL_GATHER_DONE: case HLO_ASYNC_DONE: case HLO_ASYNC_UPDATE:
  case HLO_ASYNC_START: case HLO_COLLECTIVE_PERMUTE:
  case HLO_COLLECTIVE_PERMUTE_START: case HLO_COLLECTIVE_PERMUTE_DONE:
  case HLO_COPY_DONE: case HLO_COPY_START: case HLO_CUSTOM_CALL:
  case HLO_DOMAIN: case HLO_FUSION: case HLO_GET_TUPLE_ELEMENT:
  case HLO_OPTIMIZATION_BARRIER: case HLO_INFEED: case HLO_OUTFEED:
  case HLO_PARAMETER: case HLO_RECV: case HLO_RECV_DONE:
  case HLO_REDUCE_PRECISION: case HLO_REDUCE_WINDOW: case HLO_SEND:
  case HLO_SEND_DONE: case HLO_SORT: case HLO_TUPLE: case HLO_WHILE:
    return false; /* XLA's allow-list */
  case HLO_BROADCAST: case HLO_RESHAPE: case HLO_DYNAMIC_RESHAPE:
  case HLO_IOTA: case HLO_RNG: case HLO_RNG_BIT_GENERATOR:
  case HLO_RNG_GET_AND_UPDATE_STATE: case HLO_BITCAST: case HLO_SCAN:
    return false; /* checked without CheckShape */
  default:
    return true;
  }
}

static bool fp_leaves(const Shape *s, ElemType *seen) {
  if (s->et == ET_TUPLE) {
    for (int k = 0; k < s->ntuple; k++)
      if (!fp_leaves(s->tuple[k], seen))
        return false;
    return true;
  }
  if (!et_is_float(s->et))
    return true;
  if (*seen == ET_INVALID)
    *seen = s->et;
  return *seen == s->et;
}

static bool check_mixed_precision(VCtx *v, const HloInstr *i) {
  if (i->nops < 2 || !mixed_precision_applies(i->op))
    return true;
  ElemType seen = ET_INVALID;
  for (int k = 0; k < i->nops; k++) {
    ElemType before = seen;
    if (!fp_leaves(i->ops[k]->shape, &seen))
      return fail_at(v, i->loc, "'%s' mixes floating-point types: operand %d "
                     "has %s where earlier operands have %s", si_name(i), k,
                     shape_text(v, i->ops[k]->shape), et_name(before));
  }
  return true;
}

static bool check_instruction(VCtx *v, const HloComp *c, int j) {
  const HloInstr *i = c->instrs[j];
  if (!i)
    return fail_at(v, c->loc, "instruction %d of computation '%s' is missing",
                   j, c->name);
  if (i->parent != c)
    return fail_at(v, i->loc, "instruction '%s' is listed in computation '%s' "
                   "but belongs to another", si_name(i), c->name);
  if (i->id < 0 || i->id >= v->nids)
    return fail_at(v, i->loc, "instruction '%s' has id %d, outside the "
                   "module's range [0, %d)", si_name(i), i->id, v->nids);
  if (v->by_id[i->id])
    return fail_at(v, i->loc, "instruction '%s' has the id %d of '%s'",
                   si_name(i), i->id, si_name(v->by_id[i->id]));
  if (!check_name(v, i) || !check_uses(v, i))
    return false;
  v->by_id[i->id] = i;
  if (i->op == HLO_PARAMETER)
    v->params[v->nparams++] = i;
  if (!valid_shape(i->shape))
    return fail_at(v, i->loc, "'%s' has an invalid shape or layout: %s",
                   si_name(i), shape_text(v, i->shape));
  Shape *want = si_infer(v->a, i, v->d, true);
  if (!want)
    return false;
  if (want != i->shape && !si_compatible(i->shape, want, 0))
    return fail_at(v, i->loc, "shape mismatch for '%s': declared %s but %s %s",
                   si_name(i), shape_text(v, i->shape), source_of(v, i),
                   shape_text(v, want));
  return check_mixed_precision(v, i);
}

/* Recursion through called computations (XLA's call graph is a DAG).  Text
 * defines callees first, so a depth-first search is only needed when some
 * computation calls one listed after it. */
enum { WHITE, GREY, BLACK };

static bool visit(VCtx *v, int k, uint8_t *color) {
  const HloComp *c = v->m->comps[k];
  color[k] = GREY;
  for (int j = 0; j < c->ninstrs; j++) {
    const HloInstr *i = c->instrs[j];
    for (int n = 0; n < i->ncalled; n++) {
      int cc = ptr_slot(&v->comp_index, i->called[n])->val;
      if (color[cc] == GREY)
        return fail_at(v, i->loc, "'%s' calls computation '%s' recursively",
                       si_name(i), i->called[n]->name);
      if (color[cc] == WHITE && !visit(v, cc, color))
        return false;
    }
  }
  color[k] = BLACK;
  return true;
}

static bool check_call_graph(VCtx *v) {
  if (!v->needs_dfs)
    return true;
  uint8_t *color = ARENA_ARRAY(v->a, uint8_t, v->m->ncomps + 1);
  for (int k = 0; k < v->m->ncomps; k++)
    if (color[k] == WHITE && !visit(v, k, color))
      return false;
  return true;
}

static bool check_entry_layout(VCtx *v) {
  const HloModule *m = v->m;
  const HloComp *e = m->entry;
  const ProgramShape *ps = m->entry_layout;
  if (!ps)
    return true;
  if (ps->nparams != e->nparams)
    return fail_at(v, m->loc, "entry_computation_layout lists %d parameter "
                   "shape(s) but entry computation '%s' takes %d", ps->nparams,
                   e->name, e->nparams);
  for (int k = 0; k < ps->nparams; k++)
    if (!si_compatible(ps->params[k], e->params[k]->shape, 0))
      return fail_at(v, m->loc, "entry_computation_layout parameter %d is %s "
                     "but parameter '%s' is %s", k,
                     shape_text(v, ps->params[k]), si_name(e->params[k]),
                     shape_text(v, e->params[k]->shape));
  if (!si_compatible(ps->result, e->root->shape, 0))
    return fail_at(v, m->loc, "entry_computation_layout result is %s but the "
                   "entry root '%s' is %s", shape_text(v, ps->result),
                   si_name(e->root), shape_text(v, e->root->shape));
  return true;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}

static bool same_param_index(const AliasEntry *a, const AliasEntry *b) {
  return a->operand == b->operand && a->operand_index.n == b->operand_index.n &&
         (a->operand_index.n == 0 ||
          memcmp(a->operand_index.v, b->operand_index.v,
                 sizeof(int64_t) * (size_t)a->operand_index.n) == 0);
}

/* "{1,2}" for a shape index. */
static const char *index_text(VCtx *v, const I64List *l) {
  SiCtx c = {v->a, NULL, v->d, false};
  return si_list_str(&c, l->n, l->v);
}

static bool check_param_index(VCtx *v, const char *what, const AliasEntry *a) {
  const HloComp *e = v->m->entry;
  if (a->operand < 0 || a->operand >= e->nparams)
    return fail_at(v, v->m->loc, "%s names parameter %lld, which entry "
                   "computation '%s' does not have", what,
                   (long long)a->operand, e->name);
  if (!shape_subshape(e->params[a->operand]->shape, a->operand_index.n,
                      a->operand_index.v))
    return fail_at(v, v->m->loc, "%s names index %s of parameter %lld, which "
                   "its shape %s does not have", what,
                   index_text(v, &a->operand_index), (long long)a->operand,
                   shape_text(v, e->params[a->operand]->shape));
  return true;
}

static bool check_aliases(VCtx *v) {
  const HloModule *m = v->m;
  uint64_t mask = pow2_at_least(2 * (uint64_t)m->nio_alias) - 1;
  NameSlot *seen = ARENA_ARRAY(v->a, NameSlot, mask + 1);
  for (int k = 0; k < m->nio_alias; k++) {
    const AliasEntry *a = &m->io_alias[k];
    const Shape *out = shape_subshape(m->entry->root->shape,
                                      a->output_index.n, a->output_index.v);
    if (!out)
      return fail_at(v, m->loc, "input_output_alias names output index %s, "
                     "which the entry result %s does not have",
                     index_text(v, &a->output_index),
                     shape_text(v, m->entry->root->shape));
    if (!check_param_index(v, "input_output_alias", a))
      return false;
    /* Each (parameter, index) is aliased at most once. */
    uint64_t h = mix64((uint64_t)a->operand);
    for (int d = 0; d < a->operand_index.n; d++)
      h = mix64(h ^ (uint64_t)a->operand_index.v[d]);
    uint64_t slot = h & mask;
    for (; seen[slot].id1; slot = (slot + 1) & mask) {
      const AliasEntry *b = &m->io_alias[seen[slot].id1 - 1];
      if (seen[slot].hash == (uint32_t)h && same_param_index(a, b))
        return fail_at(v, m->loc, "input_output_alias aliases parameter %lld "
                       "at %s twice", (long long)a->operand,
                       index_text(v, &a->operand_index));
    }
    seen[slot] = (NameSlot){(uint32_t)h, k + 1};
  }
  for (int k = 0; k < m->nbuffer_donors; k++)
    if (!check_param_index(v, "buffer_donor", &m->buffer_donors[k]))
      return false;
  return true;
}

static bool verify(VCtx *v) {
  if (!index_module(v))
    return false;
  for (int k = 0; k < v->m->ncomps; k++) {
    const HloComp *c = v->m->comps[k];
    v->comp = k;
    v->nparams = v->npending = 0;
    v->names_mask = pow2_at_least(2 * (uint64_t)c->ninstrs) - 1;
    for (int j = 0; j < c->ninstrs; j++)
      if (!check_instruction(v, c, j))
        return false;
    memset(v->names, 0, sizeof(NameSlot) * (v->names_mask + 1));
    if (!finish_computation(v, c))
      return false;
  }
  return check_call_graph(v) && check_entry_layout(v) && check_aliases(v);
}

bool hlo_verify(const HloModule *m, Diag *d) {
  VCtx v = {0};
  v.a = arena_new();
  v.m = m;
  v.d = d;
  bool ok = verify(&v);
  arena_free(v.a);
  return ok;
}
