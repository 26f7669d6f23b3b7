/*
 * ir_edit.c - the IR editing helpers passes share (see ir_edit.h).
 *
 * Users are kept per instruction id as lists that may hold stale entries (a
 * user that was removed or no longer names the instruction) and duplicates;
 * a list is compacted only when it is asked for after an edit made it dirty.
 * Beside the lists, `nuses` counts exactly the operand slots of live
 * instructions that name each instruction, so "is it used?" is O(1).  Both
 * make a pass that rewires or removes thousands of uses of one constant
 * linear rather than quadratic.
 *
 * Instruction equality is defined by the printer: two instructions are the
 * same when they print the same once their names (and metadata, which XLA's
 * Identical ignores too) are left out.  The printer prints every attribute
 * the parser reads, so this cannot miss one that a hand-written comparison
 * would forget.
 */
#include "ir_edit.h"

#include <stdlib.h>
#include <string.h>

/* A pointer-keyed map with a capacity fixed up front (computations,
 * instructions): faster than hashing names, and names need not be unique
 * across computations. */
typedef struct PtrMap {
  const void **keys;
  void **vals;
  int cap;                        /* power of two */
} PtrMap;

static void pm_init(PtrMap *m, int n) {
  m->cap = 16;
  while (m->cap < 2 * n + 2)
    m->cap *= 2;
  m->keys = xcalloc((size_t)m->cap, sizeof *m->keys);
  m->vals = xcalloc((size_t)m->cap, sizeof *m->vals);
}

static int pm_find(const PtrMap *m, const void *k) {
  uint64_t h = (uint64_t)(uintptr_t)k;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  int at = (int)(h & (uint64_t)(m->cap - 1));
  while (m->keys[at] && m->keys[at] != k)
    at = (at + 1) & (m->cap - 1);
  return at;
}

static void *pm_get(const PtrMap *m, const void *k) {
  int at = pm_find(m, k);
  return m->keys[at] ? m->vals[at] : NULL;
}

/* The map must have room: callers size it for every key they put. */
static void pm_put(PtrMap *m, const void *k, void *v) {
  int at = pm_find(m, k);
  m->keys[at] = k;
  m->vals[at] = v;
}

static void pm_free(PtrMap *m) {
  free(m->keys);
  free(m->vals);
}

typedef struct UserList {
  HloInstr **v;
  int n, cap;
  bool dirty;
  bool heap;                      /* v is its own allocation (else pooled) */
} UserList;

struct IrEdit {
  HloModule *m;
  int cap;                        /* ids covered by the arrays below */
  UserList *users;                /* by id */
  int *nuses;                     /* by id: operand slots naming it */
  uint32_t *mark;                 /* by id: scratch for de-duplication */
  uint8_t *ctrl;                  /* by id: in a control dependency */
  uint32_t gen;
  bool have_users;                /* users and nuses are built */
  bool have_ctrl;                 /* ctrl is built */
  HloInstr **pool;                /* the user lists ensure_users built */
  bool have_calls;                /* calls is built */
  PtrMap calls;                   /* computation -> call sites (as intptr) */
  bool have_names;                /* next_suffix is known */
  int64_t next_suffix;            /* past every ".N" name suffix in use */
  bool touched;                   /* instructions were added or removed */
};

static void ensure_cap(IrEdit *e, int id) {
  if (id < e->cap)
    return;
  /* The first call sizes the arrays for the module (id is m->next_id or
   * near it) with a little room for new instructions: rounding that up to
   * a power of two would allocate and clear up to twice the memory, which
   * every pass pays for on a large module. */
  int cap = e->cap ? e->cap : id + id / 8 + 64;
  while (cap <= id)
    cap *= 2;
  e->users = xreallocarray(e->users, (size_t)cap, sizeof *e->users);
  e->nuses = xreallocarray(e->nuses, (size_t)cap, sizeof *e->nuses);
  e->mark = xreallocarray(e->mark, (size_t)cap, sizeof *e->mark);
  e->ctrl = xreallocarray(e->ctrl, (size_t)cap, sizeof *e->ctrl);
  size_t grow = (size_t)(cap - e->cap);
  memset(e->users + e->cap, 0, grow * sizeof *e->users);
  memset(e->nuses + e->cap, 0, grow * sizeof *e->nuses);
  memset(e->mark + e->cap, 0, grow * sizeof *e->mark);
  memset(e->ctrl + e->cap, 0, grow * sizeof *e->ctrl);
  e->cap = cap;
}

static void add_user(IrEdit *e, HloInstr *of, HloInstr *user) {
  if (!e->have_users)
    return; /* the lists are built from the IR as it is then */
  ensure_cap(e, of->id);
  UserList *l = &e->users[of->id];
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 4;
    if (l->heap) {
      l->v = xreallocarray(l->v, (size_t)cap, sizeof *l->v);
    } else {
      HloInstr **v = xmalloc(sizeof *v * (size_t)cap);
      if (l->n)
        memcpy(v, l->v, sizeof *v * (size_t)l->n);
      l->v = v;
      l->heap = true;
    }
    l->cap = cap;
  }
  l->v[l->n++] = user;
  e->nuses[of->id]++;
}

/* One operand slot of a live instruction stopped naming `of`. */
static void drop_use(IrEdit *e, HloInstr *of) {
  if (!e->have_users)
    return;
  ensure_cap(e, of->id);
  e->nuses[of->id]--;
  e->users[of->id].dirty = true;
}

HloModule *ir_module(const IrEdit *e) { return e->m; }
Arena *ir_arena(const IrEdit *e) { return e->m->arena; }

/* The name sets, built the first time a fresh name is needed: most runs of
 * most passes never need one. */
/* Length of name without a numeric ".N" suffix; the suffix in *num (0 when
 * there is none or it is too long to matter). */
static size_t name_root(const char *name, int64_t *num) {
  size_t n = strlen(name), r = n;
  *num = 0;
  while (r > 0 && name[r - 1] >= '0' && name[r - 1] <= '9')
    r--;
  if (r == 0 || r == n || name[r - 1] != '.' || n - r > 15)
    return n;
  for (size_t k = r; k < n; k++)
    *num = *num * 10 + (name[k] - '0');
  return r - 1;
}

static void note_suffix(IrEdit *e, const char *name) {
  int64_t num;
  name_root(name, &num);
  if (num >= e->next_suffix)
    e->next_suffix = num + 1;
  if (e->have_names && e->next_suffix > e->m->name_suffix_hint)
    e->m->name_suffix_hint = e->next_suffix;
}

/* Fresh names are "<root>.<N>" with N past every numeric suffix in the
 * module, so they are unique without a set of the names in use: one scan
 * finds the largest suffix, the first time a name is needed in the
 * module's life; after that the module keeps the number
 * (name_suffix_hint), so later edits need no scan. */
static void ensure_names(IrEdit *e) {
  if (e->have_names)
    return;
  e->have_names = true;
  HloModule *m = e->m;
  if (m->name_suffix_hint > 0) {
    e->next_suffix = m->name_suffix_hint;
    return;
  }
  e->next_suffix = 1;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    note_suffix(e, c->name);
    for (int k = 0; k < c->ninstrs; k++)
      if (c->instrs[k]->name)
        note_suffix(e, c->instrs[k]->name);
  }
  m->name_suffix_hint = e->next_suffix;
}

/* Edits open now (of any module): ids are renumbered only when the edit
 * ending is the only one, as another's tables are indexed by id. */
static int open_edits;

IrEdit *ir_begin(HloModule *m) {
  open_edits++;
  IrEdit *e = xcalloc(1, sizeof *e);
  e->m = m;
  return e;
}

/* Which instructions take part in a control dependency: a walk that reads
 * one field of each instruction, cheaper than the user lists (many passes
 * ask only this of most instructions). */
static void ensure_ctrl(IrEdit *e) {
  if (e->have_ctrl)
    return;
  e->have_ctrl = true;
  HloModule *m = e->m;
  ensure_cap(e, m->next_id > 0 ? m->next_id : 1);
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (i->ncontrol_preds == 0 || ir_removed(i))
        continue;
      ensure_cap(e, i->id);
      e->ctrl[i->id] = 1;
      for (int j = 0; j < i->ncontrol_preds; j++) {
        ensure_cap(e, i->control_preds[j]->id);
        e->ctrl[i->control_preds[j]->id] = 1;
      }
    }
  }
}

/* The users of every instruction, built from the IR as it is the first time
 * they are needed (a pass that finds nothing to do never pays for them),
 * then kept up to date by every edit.  In one pool: count, then fill. */
static void ensure_users(IrEdit *e) {
  if (e->have_users)
    return;
  e->have_users = true;
  ensure_ctrl(e);
  HloModule *m = e->m;
  ensure_cap(e, m->next_id > 0 ? m->next_id : 1);
  /* One walk over the instructions collects (operand, user) pairs; a
   * counting sort by operand then fills the lists. */
  typedef struct Pair {
    int of;
    HloInstr *user;
  } Pair;
  Vec(Pair) pairs = {0};
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i))
        continue;
      vec_grow(&pairs, i->nops);
      for (int j = 0; j < i->nops; j++)
        pairs.data[pairs.len++] = (Pair){i->ops[j]->id, i};
    }
  }
  for (int k = 0; k < pairs.len; k++) {
    ensure_cap(e, pairs.data[k].of);
    e->users[pairs.data[k].of].cap++;
  }
  e->pool = xmalloc(sizeof *e->pool * ((size_t)pairs.len + 1));
  size_t at = 0;
  for (int id = 0; id < e->cap; id++) {
    e->users[id].v = e->pool + at;
    at += (size_t)e->users[id].cap;
  }
  for (int k = 0; k < pairs.len; k++) {
    UserList *l = &e->users[pairs.data[k].of];
    l->v[l->n++] = pairs.data[k].user;
    e->nuses[pairs.data[k].of]++;
  }
  vec_free(&pairs);
  /* Lists built from scratch can hold duplicates (x * x). */
  for (int id = 0; id < e->cap; id++)
    if (e->users[id].n > 1)
      e->users[id].dirty = true;
}

/*
 * Users
 */
int ir_users(IrEdit *e, HloInstr *i, HloInstr ***out) {
  ensure_users(e);
  ensure_cap(e, i->id);
  UserList *l = &e->users[i->id];
  if (l->dirty) {
    uint32_t g = ++e->gen;
    int n = 0;
    for (int k = 0; k < l->n; k++) {
      HloInstr *u = l->v[k];
      if (ir_removed(u) || e->mark[u->id] == g)
        continue;
      bool names_i = false;
      for (int j = 0; j < u->nops && !names_i; j++)
        names_i = u->ops[j] == i;
      if (!names_i)
        continue;
      e->mark[u->id] = g;
      l->v[n++] = u;
    }
    l->n = n;
    l->dirty = false;
  }
  *out = l->v;
  return l->n;
}

int ir_user_count(IrEdit *e, HloInstr *i) {
  HloInstr **u;
  return ir_users(e, i, &u);
}

bool ir_is_root(const HloInstr *i) { return i->parent && i->parent->root == i; }

bool ir_has_control_deps(IrEdit *e, const HloInstr *i) {
  if (i->ncontrol_preds > 0)
    return true;
  ensure_ctrl(e);
  return i->id < e->cap && e->ctrl[i->id];
}

/*
 * Rewiring
 */
void ir_set_operand(IrEdit *e, HloInstr *user, int k, HloInstr *v) {
  ensure_users(e);
  HloInstr *old = user->ops[k];
  if (old == v)
    return;
  bool already = false;
  for (int j = 0; j < user->nops; j++)
    already |= j != k && user->ops[j] == v;
  user->ops[k] = v;
  if (!ir_removed(user)) {
    drop_use(e, old);
    if (already) {
      e->nuses[v->id]++;
    } else {
      add_user(e, v, user);
    }
  }
}

bool ir_replace_uses_except(IrEdit *e, HloInstr *old, HloInstr *v,
                            HloInstr *keep) {
  if (old == v)
    return false;
  bool changed = false;
  HloInstr **us;
  int n = ir_users(e, old, &us);
  /* Rewiring changes old's list under us: take a copy. */
  HloInstr **copy = n ? xmalloc(sizeof *copy * (size_t)n) : NULL;
  if (n)
    memcpy(copy, us, sizeof *copy * (size_t)n);
  for (int k = 0; k < n; k++) {
    HloInstr *u = copy[k];
    if (u == keep)
      continue;
    for (int j = 0; j < u->nops; j++)
      if (u->ops[j] == old) {
        ir_set_operand(e, u, j, v);
        changed = true;
      }
  }
  free(copy);
  if (old->parent && old->parent->root == old && keep == NULL) {
    old->parent->root = v;
    changed = true;
  }
  return changed;
}

bool ir_replace_all_uses(IrEdit *e, HloInstr *old, HloInstr *v) {
  return ir_replace_uses_except(e, old, v, NULL);
}

void ir_replace(IrEdit *e, HloInstr *old, HloInstr *v) {
  ensure_users(e);
  ir_replace_all_uses(e, old, v);
  /* old is replaced by an equivalent: it goes even when it has a side
   * effect (v carries it now); then what only it used. */
  if (ir_removed(old) || ir_is_root(old) || old->op == HLO_PARAMETER ||
      e->nuses[old->id] > 0 || e->ctrl[old->id])
    return;
  ir_remove(e, old);
  for (int k = 0; k < old->nops; k++)
    ir_remove_dead(e, old->ops[k]);
}

/*
 * Properties
 */
bool ir_has_side_effect(const HloInstr *i) {
  switch (i->op) {
  case HLO_SEND: case HLO_SEND_DONE: case HLO_RECV: case HLO_RECV_DONE:
  case HLO_RNG: case HLO_RNG_GET_AND_UPDATE_STATE: case HLO_INFEED:
  case HLO_OUTFEED: case HLO_ALL_REDUCE_START: case HLO_ALL_REDUCE_DONE:
  case HLO_ALL_GATHER_START: case HLO_ALL_GATHER_DONE:
  case HLO_COLLECTIVE_PERMUTE_START: case HLO_COLLECTIVE_PERMUTE_DONE:
    return true;
  case HLO_ALL_TO_ALL: case HLO_ALL_GATHER: case HLO_ALL_REDUCE:
  case HLO_REDUCE_SCATTER:
    if (i->constrain_layout)
      return true;
    return i->has_channel_id;
  case HLO_COLLECTIVE_PERMUTE:
    return i->has_channel_id;
  case HLO_CUSTOM_CALL:
    return i->cc && i->cc->has_side_effect;
  default:
    return false;
  }
}

static bool comp_has_side_effect(const HloComp *c, int depth) {
  if (depth > 64)
    return true; /* absurdly deep: be conservative */
  for (int k = 0; k < c->ninstrs; k++) {
    const HloInstr *i = c->instrs[k];
    if (ir_removed(i))
      continue;
    if (ir_has_side_effect(i))
      return true;
    for (int j = 0; j < i->ncalled; j++)
      if (comp_has_side_effect(i->called[j], depth + 1))
        return true;
  }
  return false;
}

bool ir_has_side_effect_deep(const HloInstr *i) {
  if (ir_has_side_effect(i))
    return true;
  for (int j = 0; j < i->ncalled; j++)
    if (comp_has_side_effect(i->called[j], 0))
      return true;
  return false;
}

static const PrintOptions key_options = {
    .print_metadata = false,
    .print_large_constants = true,
    .print_backend_config = true,
};

/* i as printed, with its name replaced by a fixed one and, when
 * no_operands, without operands. */
static void instr_key(StrBuf *b, const HloInstr *i, bool no_operands) {
  HloInstr *w = (HloInstr *)i; /* restored before returning */
  char *name = w->name;
  int nops = w->nops;
  w->name = "_";
  if (no_operands)
    w->nops = 0;
  hlo_print_instr(b, w, &key_options);
  w->name = name;
  w->nops = nops;
}

static bool keys_equal(const HloInstr *a, const HloInstr *b, bool no_operands) {
  StrBuf x, y;
  sb_init(&x);
  sb_init(&y);
  instr_key(&x, a, no_operands);
  instr_key(&y, b, no_operands);
  bool same = x.len == y.len && memcmp(x.s, y.s, x.len) == 0;
  sb_free(&x);
  sb_free(&y);
  return same;
}

bool ir_same_instr(const HloInstr *a, const HloInstr *b) {
  if (a->op != b->op || a->nops != b->nops || a->ncalled != b->ncalled ||
      !shape_equal(a->shape, b->shape))
    return false;
  for (int k = 0; k < a->nops; k++)
    if (a->ops[k] != b->ops[k])
      return false;
  for (int k = 0; k < a->ncalled; k++)
    if (a->called[k] != b->called[k])
      return false;
  if (a->op == HLO_CONSTANT)
    return a->literal && b->literal && !a->literal->elided &&
           !b->literal->elided && literal_equal(a->literal, b->literal) &&
           keys_equal(a, b, true);
  return keys_equal(a, b, false);
}

bool ir_same_attrs(const HloInstr *a, const HloInstr *b) {
  if (a->op != b->op || a->nops != b->nops || a->ncalled != b->ncalled ||
      !shape_equal(a->shape, b->shape))
    return false;
  for (int k = 0; k < a->nops; k++)
    if (!shape_equal(a->ops[k]->shape, b->ops[k]->shape))
      return false;
  for (int k = 0; k < a->ncalled; k++)
    if (a->called[k] != b->called[k])
      return false;
  if (a->op == HLO_CONSTANT)
    return false;
  return keys_equal(a, b, true);
}

void ir_comp_key(StrBuf *b, const HloComp *c) {
  HloInstr **order;
  int n = ir_instr_post_order(c, &order);
  /* Rename the instructions by position while printing them. */
  char **names = xmalloc(sizeof *names * (size_t)(n + 1));
  char **pos = xmalloc(sizeof *pos * (size_t)(n + 1));
  for (int k = 0; k < n; k++) {
    char buf[24];
    snprintf(buf, sizeof buf, "v%d", k);
    names[k] = order[k]->name;
    pos[k] = xstrdup(buf);
    order[k]->name = pos[k];
  }
  sb_printf(b, "params=%d thread=%s\n", c->nparams,
            c->execution_thread ? c->execution_thread : "main");
  for (int k = 0; k < n; k++) {
    if (order[k] == c->root)
      sb_puts(b, "ROOT ");
    hlo_print_instr(b, order[k], &key_options);
    sb_putc(b, '\n');
  }
  for (int k = 0; k < n; k++) {
    order[k]->name = names[k];
    free(pos[k]);
  }
  free(names);
  free(pos);
  free(order);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

uint64_t ir_instr_hash(const HloInstr *i) {
  uint64_t h = mix(0, (uint64_t)i->op);
  const Shape *s = i->shape;
  h = mix(h, (uint64_t)s->et);
  h = mix(h, (uint64_t)s->rank);
  for (int k = 0; k < s->rank; k++)
    h = mix(h, (uint64_t)s->dims[k]);
  for (int k = 0; k < i->nops; k++)
    h = mix(h, (uint64_t)i->ops[k]->id);
  for (int k = 0; k < i->ncalled; k++)
    h = mix(h, hash_bytes(i->called[k]->name, strlen(i->called[k]->name)));
  switch (i->op) {
  case HLO_CONSTANT:
    if (i->literal && i->literal->data)
      h = mix(h, hash_bytes(i->literal->data,
                            (size_t)shape_byte_size(i->literal->shape)));
    break;
  case HLO_PARAMETER: h = mix(h, (uint64_t)i->param_number); break;
  case HLO_GET_TUPLE_ELEMENT: h = mix(h, (uint64_t)i->tuple_index); break;
  case HLO_IOTA: h = mix(h, (uint64_t)i->iota_dim); break;
  case HLO_COMPARE: h = mix(h, (uint64_t)i->cmp_dir); break;
  default:
    for (int k = 0; k < i->dims.n; k++)
      h = mix(h, (uint64_t)i->dims.v[k]);
    break;
  }
  return h;
}

/*
 * Removal
 */
bool ir_removable(IrEdit *e, HloInstr *i) {
  ensure_users(e);
  if (ir_removed(i) || i->op == HLO_PARAMETER || ir_is_root(i))
    return false;
  ensure_cap(e, i->id);
  if (e->nuses[i->id] > 0 || e->ctrl[i->id])
    return false;
  return !ir_has_side_effect_deep(i);
}

void ir_remove(IrEdit *e, HloInstr *i) {
  if (ir_removed(i))
    return;
  e->touched = true;
  for (int k = 0; k < i->nops; k++)
    drop_use(e, i->ops[k]);
  i->parent = NULL;
}

void ir_remove_dead(IrEdit *e, HloInstr *i) {
  if (!ir_removable(e, i))
    return;
  PtrVec stack = {0};
  vec_push(&stack, i);
  while (stack.len > 0) {
    HloInstr *x = vec_pop(&stack);
    if (!ir_removable(e, x))
      continue;
    ir_remove(e, x);
    for (int k = 0; k < x->nops; k++)
      if (ir_removable(e, x->ops[k]))
        vec_push(&stack, x->ops[k]);
  }
  vec_free(&stack);
}

static void mark_reachable(const HloComp *c, uint8_t *seen, const PtrMap *index) {
  intptr_t at = (intptr_t)pm_get(index, c);
  if (at <= 0 || seen[at - 1])
    return;
  seen[at - 1] = 1;
  for (int k = 0; k < c->ninstrs; k++) {
    const HloInstr *i = c->instrs[k];
    if (ir_removed(i))
      continue;
    for (int j = 0; j < i->ncalled; j++)
      mark_reachable(i->called[j], seen, index);
  }
}

bool ir_remove_unused_comps(IrEdit *e) {
  HloModule *m = e->m;
  if (!m->entry)
    return false;
  PtrMap index;
  pm_init(&index, m->ncomps);
  for (int k = 0; k < m->ncomps; k++)
    pm_put(&index, m->comps[k], (void *)(intptr_t)(k + 1));
  uint8_t *seen = xcalloc((size_t)m->ncomps + 1, 1);
  mark_reachable(m->entry, seen, &index);
  int n = 0;
  for (int k = 0; k < m->ncomps; k++)
    if (seen[k])
      m->comps[n++] = m->comps[k];
  bool changed = n != m->ncomps;
  m->ncomps = n;
  free(seen);
  pm_free(&index);
  return changed;
}

/*
 * Creation
 */
char *ir_unique_name(IrEdit *e, const char *base) {
  ensure_names(e);
  if (!base || !*base)
    base = "instr";
  /* Another edit of the module (nested in this one) may have made names. */
  if (e->m->name_suffix_hint > e->next_suffix)
    e->next_suffix = e->m->name_suffix_hint;
  int64_t num;
  size_t n = name_root(base, &num);
  /* "<root>.<N>" written straight into the arena (this runs once per new
   * instruction). */
  char digits[24];
  int nd = 0;
  for (uint64_t v = (uint64_t)e->next_suffix++; nd == 0 || v > 0; v /= 10)
    digits[nd++] = (char)('0' + v % 10);
  e->m->name_suffix_hint = e->next_suffix;
  char *s = arena_alloc(e->m->arena, n + (size_t)nd + 2);
  memcpy(s, base, n);
  s[n] = '.';
  for (int k = 0; k < nd; k++)
    s[n + 1 + k] = digits[nd - 1 - k];
  return s;
}

/* i takes part in a control dependency (once the users exist; before, the
 * build finds it). */
static void mark_ctrl(IrEdit *e, HloInstr *i) {
  if (!e->have_ctrl)
    return;
  ensure_cap(e, i->id);
  e->ctrl[i->id] = 1;
}

static HloInstr *finish_new(IrEdit *e, HloInstr *i, const char *base) {
  e->touched = true;
  i->name = ir_unique_name(e, base);
  ensure_cap(e, i->id);
  for (int k = 0; k < i->nops; k++)
    add_user(e, i->ops[k], i);
  if (e->have_users)
    for (int k = 0; k < i->nops; k++)
      e->users[i->ops[k]->id].dirty = true;
  return i;
}

HloInstr *ir_new(IrEdit *e, HloComp *c, HloOp op, Shape *shape, int nops,
                 HloInstr *const *ops) {
  HloInstr *i = hlo_instr_new(c, op, shape, nops, ops);
  return finish_new(e, i, hlo_op_name(op));
}

HloInstr *ir_clone(IrEdit *e, HloComp *c, const HloInstr *src, Shape *shape,
                   int nops, HloInstr *const *ops) {
  HloModule *m = e->m;
  HloInstr *i = ARENA_NEW(m->arena, HloInstr);
  *i = *src;
  i->id = m->next_id++;
  i->shape = shape ? shape : shape_clone(m->arena, src->shape);
  i->nops = nops;
  i->ops = nops ? arena_memdup(m->arena, ops, sizeof(HloInstr *) * (size_t)nops)
                : NULL;
  if (src->ncalled)
    i->called = arena_memdup(m->arena, src->called,
                             sizeof(HloComp *) * (size_t)src->ncalled);
  i->ncontrol_preds = 0;
  i->control_preds = NULL;
  i->parent = NULL;
  hlo_comp_append(c, i);
  return finish_new(e, i, src->name);
}

HloComp *ir_new_comp(IrEdit *e, const char *base_name) {
  /* Computations are few: a free name is kept as it is. */
  bool taken = false;
  for (int k = 0; k < e->m->ncomps && !taken; k++)
    taken = strcmp(e->m->comps[k]->name, base_name) == 0;
  char *name = taken ? ir_unique_name(e, base_name)
                     : arena_strdup(e->m->arena, base_name);
  ensure_names(e);
  note_suffix(e, name);
  return hlo_comp_new(e->m, name);
}

HloInstr *ir_add_param(IrEdit *e, HloComp *c, Shape *shape, const char *name) {
  HloInstr *p = hlo_instr_new(c, HLO_PARAMETER, shape, 0, NULL);
  p->param_number = c->nparams;
  HloInstr **ps = ARENA_ARRAY(e->m->arena, HloInstr *, c->nparams + 1);
  if (c->nparams)
    memcpy(ps, c->params, sizeof(HloInstr *) * (size_t)c->nparams);
  ps[c->nparams++] = p;
  c->params = ps;
  return finish_new(e, p, name ? name : "param");
}

HloInstr *ir_inline(IrEdit *e, HloComp *c, const HloComp *callee,
                    HloInstr *const *args) {
  HloInstr **order;
  int n = ir_instr_post_order(callee, &order);
  PtrMap map; /* callee instruction -> clone or argument */
  pm_init(&map, n);
  Vec(HloInstr *) ops = {0};
  for (int k = 0; k < n; k++) {
    const HloInstr *i = order[k];
    HloInstr *ni;
    if (i->op == HLO_PARAMETER) {
      ni = args[i->param_number];
    } else {
      ops.len = 0;
      for (int j = 0; j < i->nops; j++)
        vec_push(&ops, (HloInstr *)pm_get(&map, i->ops[j]));
      ni = ir_clone(e, c, i, NULL, ops.len, ops.data);
      if (i->ncontrol_preds > 0) {
        ni->ncontrol_preds = i->ncontrol_preds;
        ni->control_preds = ARENA_ARRAY(e->m->arena, HloInstr *,
                                        i->ncontrol_preds);
        for (int j = 0; j < i->ncontrol_preds; j++) {
          ni->control_preds[j] = pm_get(&map, i->control_preds[j]);
          mark_ctrl(e, ni->control_preds[j]);
        }
        mark_ctrl(e, ni);
      }
    }
    pm_put(&map, i, ni);
  }
  HloInstr *root = pm_get(&map, callee->root);
  free(order);
  vec_free(&ops);
  pm_free(&map);
  return root;
}

HloComp *ir_clone_comp(IrEdit *e, const HloComp *src, const char *suffix) {
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "%s%s", src->name, suffix ? suffix : ".clone");
  HloComp *c = ir_new_comp(e, b.s);
  sb_free(&b);
  c->printed_signature = src->printed_signature;
  c->execution_thread = src->execution_thread;
  c->loc = src->loc;
  /* src may have been edited in this IrEdit: walk it in topological order. */
  HloInstr **order;
  int n = ir_instr_post_order(src, &order);
  PtrMap map;
  pm_init(&map, n);
  HloInstr **tmp = NULL;
  int tmpcap = 0;
  c->params = src->nparams ? ARENA_ARRAY(e->m->arena, HloInstr *, src->nparams)
                           : NULL;
  c->nparams = src->nparams;
  for (int k = 0; k < n; k++) {
    const HloInstr *i = order[k];
    if (i->nops > tmpcap) {
      tmpcap = i->nops * 2;
      tmp = xreallocarray(tmp, (size_t)tmpcap, sizeof *tmp);
    }
    for (int j = 0; j < i->nops; j++)
      tmp[j] = pm_get(&map, i->ops[j]);
    HloInstr *ni = ir_clone(e, c, i, NULL, i->nops, tmp);
    if (i->ncontrol_preds > 0) {
      ni->ncontrol_preds = i->ncontrol_preds;
      ni->control_preds = ARENA_ARRAY(e->m->arena, HloInstr *,
                                      i->ncontrol_preds);
      for (int j = 0; j < i->ncontrol_preds; j++) {
        ni->control_preds[j] = pm_get(&map, i->control_preds[j]);
        mark_ctrl(e, ni->control_preds[j]);
      }
      mark_ctrl(e, ni);
    }
    pm_put(&map, i, ni);
    if (i->op == HLO_PARAMETER && i->param_number >= 0 &&
        i->param_number < c->nparams)
      c->params[i->param_number] = ni;
    if (i == src->root)
      c->root = ni;
  }
  free(tmp);
  free(order);
  pm_free(&map);
  return c;
}

HloInstr *ir_constant(IrEdit *e, HloComp *c, Literal *l) {
  /* hlo.h: an array literal's data is NULL only when elided; literal_new
   * leaves it NULL for zero elements. */
  if (shape_is_array(l->shape) && !l->elided && !l->data)
    l->data = arena_alloc(e->m->arena, 1);
  HloInstr *i = ir_new(e, c, HLO_CONSTANT, shape_clone(e->m->arena, l->shape),
                       0, NULL);
  i->literal = l;
  return i;
}

HloInstr *ir_scalar(IrEdit *e, HloComp *c, ElemType et, double v) {
  Literal *l = literal_new(e->m->arena, shape_scalar(e->m->arena, et));
  if (et_is_complex(et))
    literal_set_complex(l, 0, v, 0);
  else if (et_is_float(et))
    literal_set_f64(l, 0, v);
  else if (et_is_unsigned_int(et))
    literal_set_u64(l, 0, (uint64_t)v);
  else
    literal_set_s64(l, 0, (int64_t)v);
  return ir_constant(e, c, l);
}

HloInstr *ir_scalar_like(IrEdit *e, HloComp *c, const Shape *s, double v) {
  HloInstr *k = ir_scalar(e, c, s->et, v);
  if (s->rank == 0)
    return k;
  return ir_broadcast(e, c, k, s, 0, NULL);
}

Shape *ir_shape_with_et(Arena *a, const Shape *s, ElemType et) {
  Shape *n = shape_clone(a, s);
  n->et = et;
  if (n->layout) {
    /* element_size_bits belongs to the old type. */
    n->layout->element_size_bits = 0;
  }
  return n;
}

HloInstr *ir_unary(IrEdit *e, HloComp *c, HloOp op, HloInstr *x) {
  return ir_new(e, c, op, shape_clone(e->m->arena, x->shape), 1, &x);
}

HloInstr *ir_binary(IrEdit *e, HloComp *c, HloOp op, HloInstr *a,
                    HloInstr *b) {
  HloInstr *ops[2] = {a, b};
  return ir_new(e, c, op, shape_clone(e->m->arena, a->shape), 2, ops);
}

HloInstr *ir_compare(IrEdit *e, HloComp *c, CmpDir dir, HloInstr *a,
                     HloInstr *b) {
  HloInstr *ops[2] = {a, b};
  HloInstr *i = ir_new(e, c, HLO_COMPARE,
                       ir_shape_with_et(e->m->arena, a->shape, ET_PRED), 2, ops);
  i->cmp_dir = dir;
  return i;
}

HloInstr *ir_select(IrEdit *e, HloComp *c, HloInstr *p, HloInstr *t,
                    HloInstr *f) {
  HloInstr *ops[3] = {p, t, f};
  return ir_new(e, c, HLO_SELECT, shape_clone(e->m->arena, t->shape), 3, ops);
}

HloInstr *ir_convert(IrEdit *e, HloComp *c, HloInstr *x, ElemType et) {
  return ir_new(e, c, HLO_CONVERT, ir_shape_with_et(e->m->arena, x->shape, et),
                1, &x);
}

static I64List i64list(Arena *a, int n, const int64_t *v) {
  I64List l = {n, NULL};
  if (n)
    l.v = arena_memdup(a, v, sizeof(int64_t) * (size_t)n);
  return l;
}

HloInstr *ir_broadcast(IrEdit *e, HloComp *c, HloInstr *x, const Shape *s,
                       int ndims, const int64_t *dims) {
  Shape *rs = ir_shape_with_et(e->m->arena, s, x->shape->et);
  HloInstr *i = ir_new(e, c, HLO_BROADCAST, rs, 1, &x);
  i->dims = i64list(e->m->arena, ndims, dims);
  i->has_dims = true;
  return i;
}

HloInstr *ir_reshape(IrEdit *e, HloComp *c, HloInstr *x, int rank,
                     const int64_t *dims) {
  return ir_new(e, c, HLO_RESHAPE,
                shape_array(e->m->arena, x->shape->et, rank, dims), 1, &x);
}

HloInstr *ir_transpose(IrEdit *e, HloComp *c, HloInstr *x,
                       const int64_t *perm) {
  int r = x->shape->rank;
  int64_t *d = ARENA_ARRAY(e->m->arena, int64_t, r > 0 ? r : 1);
  for (int k = 0; k < r; k++)
    d[k] = x->shape->dims[perm[k]];
  HloInstr *i = ir_new(e, c, HLO_TRANSPOSE,
                       shape_array(e->m->arena, x->shape->et, r, d), 1, &x);
  i->dims = i64list(e->m->arena, r, perm);
  i->has_dims = true;
  return i;
}

HloInstr *ir_gte(IrEdit *e, HloComp *c, HloInstr *t, int64_t index) {
  HloInstr *i = ir_new(e, c, HLO_GET_TUPLE_ELEMENT,
                       shape_clone(e->m->arena, t->shape->tuple[index]), 1, &t);
  i->tuple_index = index;
  return i;
}

HloInstr *ir_tuple(IrEdit *e, HloComp *c, int n, HloInstr *const *elems) {
  Shape **ss = ARENA_ARRAY(e->m->arena, Shape *, n > 0 ? n : 1);
  for (int k = 0; k < n; k++)
    ss[k] = shape_clone(e->m->arena, elems[k]->shape);
  return ir_new(e, c, HLO_TUPLE, shape_tuple(e->m->arena, n, ss), n, elems);
}

HloInstr *ir_slice(IrEdit *e, HloComp *c, HloInstr *x, const SliceDim *sl) {
  int r = x->shape->rank;
  int64_t *d = ARENA_ARRAY(e->m->arena, int64_t, r > 0 ? r : 1);
  for (int k = 0; k < r; k++)
    d[k] = (sl[k].limit - sl[k].start + sl[k].stride - 1) / sl[k].stride;
  HloInstr *i = ir_new(e, c, HLO_SLICE,
                       shape_array(e->m->arena, x->shape->et, r, d), 1, &x);
  i->slice = arena_memdup(e->m->arena, sl, sizeof(SliceDim) * (size_t)(r > 0 ? r : 1));
  return i;
}

HloInstr *ir_reduce(IrEdit *e, HloComp *c, HloInstr *x, HloInstr *init,
                    int ndims, const int64_t *dims, HloComp *fn) {
  int r = x->shape->rank;
  int64_t *d = ARENA_ARRAY(e->m->arena, int64_t, r > 0 ? r : 1);
  int n = 0;
  for (int k = 0; k < r; k++) {
    bool reduced = false;
    for (int j = 0; j < ndims; j++)
      reduced |= dims[j] == k;
    if (!reduced)
      d[n++] = x->shape->dims[k];
  }
  HloInstr *ops[2] = {x, init};
  HloInstr *i = ir_new(e, c, HLO_REDUCE,
                       shape_array(e->m->arena, init->shape->et, n, d), 2, ops);
  i->dims = i64list(e->m->arena, ndims, dims);
  i->has_dims = true;
  i->ncalled = 1;
  i->called = ARENA_ARRAY(e->m->arena, HloComp *, 1);
  i->called[0] = fn;
  return i;
}

HloComp *ir_scalar_binary_comp(IrEdit *e, const char *name, HloOp op,
                               ElemType et) {
  HloComp *c = ir_new_comp(e, name);
  Arena *a = e->m->arena;
  HloInstr *x = ir_add_param(e, c, shape_scalar(a, et), "lhs");
  HloInstr *y = ir_add_param(e, c, shape_scalar(a, et), "rhs");
  c->root = ir_binary(e, c, op, x, y);
  return c;
}

/*
 * Constants
 */
static bool literal_is_all(const Literal *l, double v) {
  if (!l || l->elided || !l->data || !shape_is_array(l->shape))
    return false;
  ElemType et = l->shape->et;
  if (et_is_complex(et))
    return false;
  int64_t n = shape_elements(l->shape);
  for (int64_t k = 0; k < n; k++) {
    if (et_is_float(et) || et == ET_PRED) {
      if (!(literal_get_f64(l, k) == v))
        return false;
    } else if (et_is_unsigned_int(et)) {
      if (v < 0 || (double)literal_get_u64(l, k) != v)
        return false;
    } else if ((double)literal_get_s64(l, k) != v) {
      return false;
    }
  }
  return true;
}

bool ir_is_constant_value(const HloInstr *i, double v) {
  while (i->op == HLO_BROADCAST && i->nops == 1)
    i = i->ops[0];
  return i->op == HLO_CONSTANT && literal_is_all(i->literal, v);
}

bool ir_constant_splat(const HloInstr *i, double *v) {
  if (i->op != HLO_CONSTANT)
    return false;
  const Literal *l = i->literal;
  if (!l || l->elided || !l->data || !shape_is_array(l->shape) ||
      et_is_complex(l->shape->et))
    return false;
  int64_t n = shape_elements(l->shape);
  if (n <= 0)
    return false;
  int w = et_bytes(l->shape->et);
  for (int64_t k = 1; k < n; k++)
    if (memcmp(l->data, l->data + k * w, (size_t)w) != 0)
      return false;
  *v = literal_get_f64(l, 0);
  return true;
}

bool ir_is_int_constant(const HloInstr *i, int64_t *v) {
  while (i->op == HLO_BROADCAST && i->nops == 1)
    i = i->ops[0];
  if (i->op != HLO_CONSTANT || !i->literal || i->literal->elided ||
      !i->literal->data || !et_is_int(i->shape->et) ||
      shape_elements(i->shape) < 1)
    return false;
  const Literal *l = i->literal;
  int64_t first = literal_get_s64(l, 0);
  int64_t n = shape_elements(l->shape);
  for (int64_t k = 1; k < n; k++)
    if (literal_get_s64(l, k) != first)
      return false;
  *v = first;
  return true;
}

/*
 * Order
 */

/* Post-order DFS over c's instructions starting from each one in the
 * current order: operands and control predecessors first.  Keeps the order
 * as it is wherever it is already topological.  state is scratch indexed by
 * instruction id, zero for c's instructions on entry. */
static int post_order_range(const HloComp *c, uint8_t *state, int lo, int hi,
                            HloInstr **order);

static int post_order(const HloComp *c, uint8_t *state, HloInstr **order) {
  return post_order_range(c, state, 0, INT32_MAX, order);
}

/* state is indexed by id, valid for ids lo..hi (those of c's instructions,
 * which are the only ones looked up). */
static int post_order_range(const HloComp *c, uint8_t *state, int lo, int hi,
                            HloInstr **order) {
  (void)hi;
  int n = c->ninstrs;
  int cnt = 0;
  typedef struct Frame {
    HloInstr *i;
    int next;
  } Frame;
  Frame *stack = xmalloc(sizeof *stack * (size_t)(n + 1));
  for (int k = 0; k < n; k++) {
    HloInstr *start = c->instrs[k];
    if (ir_removed(start) || state[start->id - lo])
      continue;
    int sp = 0;
    stack[sp++] = (Frame){start, 0};
    state[start->id - lo] = 1;
    while (sp > 0) {
      Frame *f = &stack[sp - 1];
      HloInstr *i = f->i;
      int total = i->nops + i->ncontrol_preds;
      if (f->next < total) {
        bool control = f->next >= i->nops;
        HloInstr *o = control ? i->control_preds[f->next - i->nops]
                              : i->ops[f->next];
        f->next++;
        if (o->parent != c)
          continue;
        /* A cycle through operands is a bug in a pass; one closed by a
         * control edge came with the input and is left to the verifier. */
        if (state[o->id - lo] == 1 && !control)
          die("instruction graph of '%s' has a cycle through '%s'", c->name,
              o->name);
        if (state[o->id - lo])
          continue;
        state[o->id - lo] = 1;
        if (sp > n)
          die("instruction graph of '%s' is not a DAG", c->name);
        stack[sp++] = (Frame){o, 0};
        continue;
      }
      state[i->id - lo] = 2;
      order[cnt++] = i;
      sp--;
    }
  }
  free(stack);
  return cnt;
}

int ir_instr_post_order(const HloComp *c, HloInstr ***out) {
  HloInstr **order = xmalloc(sizeof *order * (size_t)(c->ninstrs + 1));
  /* State by id over the id range of c's instructions only: the call costs
   * O(ninstrs + that range), not O(module). */
  int lo = INT32_MAX, hi = -1;
  for (int k = 0; k < c->ninstrs; k++) {
    int id = c->instrs[k]->id;
    lo = id < lo ? id : lo;
    hi = id > hi ? id : hi;
  }
  if (hi < lo)
    lo = hi = 0;
  uint8_t *state = xcalloc((size_t)(hi - lo) + 1, 1);
  int n = post_order_range(c, state, lo, hi, order);
  free(state);
  *out = order;
  return n;
}

/* The call graph of m's computations as edge lists by index in m->comps:
 * the callees of computation k are edges[start[k] .. start[k + 1]), in the
 * order of its instructions and their called computations (callees not in
 * m->comps left out). */
typedef struct CallGraph {
  int *start;                     /* ncomps + 1 */
  Vec(int) edges;
} CallGraph;

/* Appends i's callees to g (index maps computation -> 1 + its index). */
static void graph_add_calls(CallGraph *g, const PtrMap *index,
                            const HloInstr *i) {
  for (int j = 0; j < i->ncalled; j++) {
    intptr_t at = (intptr_t)pm_get(index, i->called[j]);
    if (at > 0)
      vec_push(&g->edges, (int)(at - 1));
  }
}

static void comp_index(const HloModule *m, PtrMap *index) {
  pm_init(index, m->ncomps);
  for (int k = 0; k < m->ncomps; k++)
    pm_put(index, m->comps[k], (void *)(intptr_t)(k + 1));
}

/* Post-order DFS over g from each computation in m's order: callees before
 * callers.  Writes the computations to order; returns the count. */
static int graph_post_order(const HloModule *m, const CallGraph *g,
                            HloComp **order) {
  int n = m->ncomps;
  int cnt = 0;
  uint8_t *seen = xcalloc((size_t)n + 1, 1);
  typedef struct Frame {
    int c, next; /* computation, next edge */
  } Frame;
  Frame *stack = xmalloc(sizeof *stack * (size_t)(n + 1));
  for (int s = 0; s < n; s++) {
    if (seen[s])
      continue;
    int sp = 0;
    stack[sp++] = (Frame){s, g->start[s]};
    seen[s] = 1;
    while (sp > 0) {
      Frame *f = &stack[sp - 1];
      int next = -1;
      while (f->next < g->start[f->c + 1] && next < 0) {
        int cc = g->edges.data[f->next++];
        if (!seen[cc]) {
          seen[cc] = 1;
          next = cc;
        }
      }
      if (next >= 0) {
        if (sp > n)
          die("call graph is not a DAG");
        stack[sp++] = (Frame){next, g->start[next]};
        continue;
      }
      order[cnt++] = m->comps[f->c];
      sp--;
    }
  }
  free(stack);
  free(seen);
  return cnt;
}

int ir_comp_post_order(const HloModule *m, HloComp ***out) {
  int n = m->ncomps;
  PtrMap index;
  comp_index(m, &index);
  CallGraph g = {xcalloc((size_t)n + 1, sizeof(int)), {0}};
  for (int k = 0; k < n; k++) {
    const HloComp *c = m->comps[k];
    g.start[k] = g.edges.len;
    for (int q = 0; q < c->ninstrs; q++)
      if (!ir_removed(c->instrs[q]) && c->instrs[q]->ncalled > 0)
        graph_add_calls(&g, &index, c->instrs[q]);
  }
  g.start[n] = g.edges.len;
  HloComp **order = xmalloc(sizeof *order * (size_t)(n + 1));
  int cnt = graph_post_order(m, &g, order);
  free(g.start);
  vec_free(&g.edges);
  pm_free(&index);
  *out = order;
  return cnt;
}

int *ir_call_counts(const HloModule *m) {
  int *counts = xcalloc((size_t)m->ncomps + 1, sizeof *counts);
  PtrMap index;
  pm_init(&index, m->ncomps);
  for (int k = 0; k < m->ncomps; k++)
    pm_put(&index, m->comps[k], (void *)(intptr_t)(k + 1));
  for (int k = 0; k < m->ncomps; k++) {
    const HloComp *c = m->comps[k];
    for (int j = 0; j < c->ninstrs; j++) {
      const HloInstr *i = c->instrs[j];
      if (ir_removed(i))
        continue;
      for (int q = 0; q < i->ncalled; q++) {
        intptr_t at = (intptr_t)pm_get(&index, i->called[q]);
        if (at > 0)
          counts[at - 1]++;
      }
    }
  }
  pm_free(&index);
  return counts;
}

int ir_call_count(IrEdit *e, const HloComp *c) {
  HloModule *m = e->m;
  if (!e->have_calls) {
    e->have_calls = true;
    int *counts = ir_call_counts(m);
    /* Room for computations the pass adds. */
    pm_init(&e->calls, 2 * m->ncomps + 64);
    for (int k = 0; k < m->ncomps; k++)
      pm_put(&e->calls, m->comps[k], (void *)(intptr_t)counts[k]);
    free(counts);
  }
  return (int)(intptr_t)pm_get(&e->calls, c);
}

void ir_note_calls(IrEdit *e, const HloComp *c, int delta) {
  int n = ir_call_count(e, c) + delta;
  pm_put(&e->calls, c, (void *)(intptr_t)n);
}

/*
 * End of an edit
 */

/* Whether c's list holds no removed instruction and already has every
 * operand and control predecessor (in c) before its user: then ir_end
 * leaves it as it is, which a read of each instruction decides, cheaper
 * than the DFS that would give back the same order.  Uses state (by id) as
 * scratch and leaves it zero for c's instructions. */
static bool in_order(const HloComp *c, uint8_t *state) {
  bool ok = true;
  int k = 0;
  for (; k < c->ninstrs && ok; k++) {
    const HloInstr *i = c->instrs[k];
    ok = !ir_removed(i);
    for (int j = 0; j < i->nops && ok; j++)
      ok = i->ops[j]->parent != c || state[i->ops[j]->id];
    for (int j = 0; j < i->ncontrol_preds && ok; j++)
      ok = i->control_preds[j]->parent != c || state[i->control_preds[j]->id];
    state[i->id] = 1;
  }
  for (int j = 0; j < k; j++)
    state[c->instrs[j]->id] = 0;
  return ok;
}


bool ir_end(IrEdit *e, bool changed) {
  HloModule *m = e->m;
  /* A pass that built or removed something and then reported no change
   * still leaves lists to clean up. */
  if (changed || e->touched) {
    /* One walk over the instructions: each computation is put back in
     * topological order where it is not, its call edges are collected and
     * its instructions renumbered; then the computations are ordered from
     * those edges. */
    uint8_t *state = xcalloc((size_t)m->next_id + 1, 1);
    HloInstr **order = NULL;
    int cap = 0, id = 0;
    bool renumber = open_edits == 1;
    int nc = m->ncomps;
    PtrMap index;
    comp_index(m, &index);
    CallGraph g = {xcalloc((size_t)nc + 1, sizeof(int)), {0}};
    for (int ci = 0; ci < nc; ci++) {
      HloComp *c = m->comps[ci];
      if (c->ninstrs + 1 > cap) {
        cap = c->ninstrs + 1;
        order = xreallocarray(order, (size_t)cap, sizeof *order);
      }
      if (!in_order(c, state)) {
        int n = post_order(c, state, order);
        if (n)
          memcpy(c->instrs, order, sizeof(HloInstr *) * (size_t)n);
        c->ninstrs = n;
      }
      g.start[ci] = g.edges.len;
      /* Renumbering after in_order and post_order is safe: they read state
       * only at the old ids of c's own instructions. */
      for (int k = 0; k < c->ninstrs; k++) {
        HloInstr *i = c->instrs[k];
        if (i->ncalled > 0)
          graph_add_calls(&g, &index, i);
        if (renumber)
          i->id = id++;
      }
    }
    g.start[nc] = g.edges.len;
    if (renumber)
      m->next_id = id;
    free(order);
    free(state);
    HloComp **corder = xmalloc(sizeof *corder * (size_t)(nc + 1));
    int n = graph_post_order(m, &g, corder);
    if (n)
      memcpy(m->comps, corder, sizeof(HloComp *) * (size_t)n);
    m->ncomps = n;
    free(corder);
    free(g.start);
    vec_free(&g.edges);
    pm_free(&index);
  }
  for (int id = 0; id < e->cap; id++)
    if (e->users[id].heap)
      free(e->users[id].v);
  free(e->pool);
  if (e->have_calls)
    pm_free(&e->calls);
  free(e->users);
  free(e->nuses);
  free(e->mark);
  free(e->ctrl);
  free(e);
  open_edits--;
  return changed;
}
