/*
 * thunk_emitter.c - thunk emission (XLA's IrEmitterUnnested::
 * EmitHloComputation): walks a scheduled, buffer-assigned computation in its
 * instruction order and builds the artifact's thunk sequence.
 *
 *   fusion (and any other kernel op)  -> a kernel thunk; the kernel comes from
 *                                        codegen_kernel (a kernel that asks
 *                                        for scratch gets the staging
 *                                        allocation as its last argument;
 *                                        one whose result slice is an
 *                                        operand's is told which, so that a
 *                                        dynamic-update-slice writes only
 *                                        its update, dus_kernel.c);
 *                                        on the host, one that may join the
 *                                        kernel thunk before it as a chain
 *                                        (thunk_chain.h) joins it; on the
 *                                        host, a plain reduce or top-k that
 *                                        no chain took becomes a routine
 *                                        thunk (host_routine.h), its kernel
 *                                        dropped
 *   copy with equal layouts           -> a copy thunk
 *   while                             -> copies init -> loop state, then a
 *                                        while thunk (cond and body sequences;
 *                                        the body ends with body root ->
 *                                        state copies)
 *   conditional                       -> a conditional thunk; each branch ends
 *                                        with root -> result copies
 *   custom-call to a library (GEMM or  -> a gemm or conv thunk with its
 *   convolution, backend_config.h)        descriptor (libcall_lower.c)
 *   custom-call "TopK"                -> a kernel thunk (topk_kernel.c)
 *   custom-call "Qr", "ProductOf-     -> a kernel thunk (linalg_kernel.c)
 *   ElementaryHouseholderReflectors"
 *   all-reduce, all-gather, reduce-   -> a collective thunk (collective_desc.c)
 *   scatter, all-to-all, collective-     with its operand and result slices
 *   permute, collective-broadcast,
 *   replica-id, partition-id
 *   constant                          -> no thunk; its bytes (in the shape's
 *                                        physical order) go into its allocation
 *   parameter, tuple, get-tuple-element, bitcast, after-all, ...
 *                                     -> nothing (they only name buffers)
 *   anything else (custom-call, infeed, ragged-all-to-all, ...)
 *                                     -> an error at the instruction
 *
 * Then the entry's parameter and result leaves, the input_output_alias copies
 * and the HLO texts.  The caller fills in target, kernel_file and the kernel
 * checksum.
 */
#include "thunk_emitter.h"

#include "collective_desc.h"
#include "host_routine.h"
#include "thunk_chain.h"

#include "../lib/eval/eval.h"
#include "../lib/hlo/backend_config.h"

#include <stdlib.h>
#include <string.h>

typedef Vec(Thunk) ThunkVec;
typedef Vec(ArtConstant) ConstVec;
typedef Vec(BufSlice) SliceVec;
typedef Vec(bool) BoolVec;

/* A kernel thunk that may become a routine thunk (host_routine.h): when it
 * ends its sequence as a lone kernel, no chain around it. */
typedef struct RoutineCand {
  int index;                      /* of the thunk in its sequence */
  const char *kernel;             /* its kernel's name */
  const HloInstr *instr;
  RoutineDesc desc;
  int x_operand;
} RoutineCand;

typedef struct Emitter {
  const HloModule *m;
  const BufferAssignment *ba;
  Codegen *cg;
  Artifact *a;
  Diag *d;
  HashMap kernel_names;           /* names taken (keys in a->arena) */
  ConstVec consts;
  int scratch_alloc;              /* index of the staging allocation */
  int64_t scratch_size;           /* its size; 0: not needed */
  ThunkChains *chains;            /* host kernels run as chains */
  Vec(RoutineCand) routines;      /* candidates of the sequences being
                                     emitted, innermost last */
} Emitter;

static bool emit_comp(Emitter *e, const HloComp *c, ThunkSeq *out);

/* ---- leaves and slices --------------------------------------------------- */

/* The leaf shapes of s (io_shape_leaves order); returns their count. */
static int leaves_of(const Shape *s, PtrVec *out) {
  out->len = 0;
  io_shape_leaves(s, out);
  return out->len;
}

static bool is_token(const Shape *s) { return s->et == ET_TOKEN; }

static bool slice_equal(BufSlice x, BufSlice y) {
  return x.alloc == y.alloc && x.offset == y.offset && x.size == y.size;
}

/* The slice of leaf k of i; an error at i when it has none. */
static bool slice_of(Emitter *e, const HloInstr *i, int k, BufSlice *out) {
  if (ba_slice(e->ba, i, k, out))
    return true;
  return diag_error(e->d, i->loc,
                    "thunk emission: %s '%s' has no buffer for leaf %d",
                    hlo_op_name(i->op), i->name, k);
}

/* ---- thunks -------------------------------------------------------------- */

static Thunk *new_thunk(ThunkVec *v, ThunkKind kind, Emitter *e,
                        const HloInstr *i) {
  Thunk t = {.kind = kind, .trip_count = -1};
  t.annotation = arena_strdup(e->a->arena, i->name);
  vec_push(v, t);
  return &vec_last(v);
}

static void push_copy(Emitter *e, ThunkVec *v, const HloInstr *i,
                      BufSlice src, BufSlice dst) {
  Thunk *t = new_thunk(v, THUNK_COPY, e, i);
  t->src = src;
  t->dst = dst;
}

static bool overlaps(BufSlice x, BufSlice y) {
  return x.alloc == y.alloc && x.offset < y.offset + y.size &&
         y.offset < x.offset + x.size;
}

/* Copies every array leaf of `from` into the same leaf of `to` where their
 * slices differ (while state, conditional results).  `at` names the thunks.
 * The copies act as one parallel assignment: a source that another copy of
 * the batch overwrites (a loop body that permutes its state) is first staged
 * in a scratch allocation, so every copy reads the value from before the
 * batch. */
static bool copy_leaves(Emitter *e, ThunkVec *v, const HloInstr *at,
                        const HloInstr *from, const HloInstr *to) {
  PtrVec leaves = {0};
  SliceVec src = {0}, dst = {0};
  int n = leaves_of(to->shape, &leaves);
  bool ok = true;
  for (int k = 0; ok && k < n; k++) {
    if (is_token(leaves.data[k]))
      continue;
    BufSlice s, d;
    ok = slice_of(e, from, k, &s) && slice_of(e, to, k, &d);
    if (ok && !slice_equal(s, d)) {
      if (s.size != d.size) {
        ok = diag_error(e->d, at->loc,
                        "thunk emission: %s '%s': leaf %d is %lld bytes in "
                        "'%s' but %lld bytes in '%s'",
                        hlo_op_name(at->op), at->name, k, (long long)s.size,
                        from->name, (long long)d.size, to->name);
        break;
      }
      vec_push(&src, s);
      vec_push(&dst, d);
    }
  }
  /* Stage the sources that an earlier copy would overwrite. */
  int64_t staged = 0;
  for (int k = 0; ok && k < src.len; k++) {
    bool hazard = false;
    for (int j = 0; j < dst.len && !hazard; j++)
      hazard = j != k && overlaps(src.data[k], dst.data[j]);
    if (!hazard)
      continue;
    BufSlice tmp = {e->scratch_alloc, staged, src.data[k].size};
    staged += (src.data[k].size + 63) / 64 * 64;
    push_copy(e, v, at, src.data[k], tmp);
    src.data[k] = tmp;
  }
  if (staged > e->scratch_size)
    e->scratch_size = staged;
  for (int k = 0; ok && k < src.len; k++)
    push_copy(e, v, at, src.data[k], dst.data[k]);
  vec_free(&src);
  vec_free(&dst);
  vec_free(&leaves);
  return ok;
}

/* A kernel name from `base` (an instruction's name, or a chain's): a C
 * identifier, unique in the artifact (a "_N" suffix on a clash),
 * deterministic. */
static char *unique_name(Emitter *e, const char *base_name) {
  StrBuf b;
  sb_init(&b);
  if (!(base_name[0] >= 'a' && base_name[0] <= 'z') &&
      !(base_name[0] >= 'A' && base_name[0] <= 'Z') && base_name[0] != '_')
    sb_putc(&b, '_');
  for (const char *p = base_name; *p; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_';
    sb_putc(&b, ok ? c : '_');
  }
  size_t base = b.len;
  for (int n = 1; hashmap_get(&e->kernel_names, b.s); n++) {
    b.len = base;
    b.s[base] = '\0';
    sb_printf(&b, "_%d", n);
  }
  char *name = arena_strdup(e->a->arena, b.s);
  sb_free(&b);
  hashmap_put(&e->kernel_names, name, name);
  return name;
}

static char *kernel_name(Emitter *e, const HloInstr *i) {
  return unique_name(e, i->name);
}

/* The kernel of a chain that starts with kernel `first`: "first_chain". */
static char *chain_name(Emitter *e, const char *first) {
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "%s_chain", first);
  char *name = unique_name(e, b.s);
  sb_free(&b);
  return name;
}

/* Appends the slices of the array leaves of i's result (written) or of an
 * operand (read) to args. */
static bool add_args(Emitter *e, const HloInstr *i, bool written,
                     SliceVec *args, BoolVec *wr) {
  PtrVec leaves = {0};
  int n = leaves_of(i->shape, &leaves);
  bool ok = true;
  for (int k = 0; ok && k < n; k++) {
    if (is_token(leaves.data[k]))
      continue;
    BufSlice s;
    ok = slice_of(e, i, k, &s);
    if (ok) {
      vec_push(args, s);
      vec_push(wr, written);
    }
  }
  vec_free(&leaves);
  return ok;
}

/* The operand whose bytes i's one array result is written over in place
 * (buffer_sharing.c): its one leaf's slice is the result's, and no other
 * operand leaf's slice overlaps the result's; -1 when there is none. */
static int in_place_operand(Emitter *e, const HloInstr *i) {
  BufSlice r;
  if (!shape_is_array(i->shape) || !ba_slice(e->ba, i, 0, &r) || r.size <= 0)
    return -1;
  int found = -1;
  PtrVec leaves = {0};
  for (int k = 0; k < i->nops; k++) {
    int n = leaves_of(i->ops[k]->shape, &leaves);
    for (int j = 0; j < n; j++) {
      BufSlice s;
      if (is_token(leaves.data[j]) || !ba_slice(e->ba, i->ops[k], j, &s) ||
          !overlaps(s, r))
        continue;
      if (n != 1 || !slice_equal(s, r) || found >= 0) {
        vec_free(&leaves);
        return -1;
      }
      found = k;
    }
  }
  vec_free(&leaves);
  return found;
}

static bool emit_kernel(Emitter *e, ThunkVec *v, const HloInstr *i) {
  SliceVec args = {0};
  BoolVec wr = {0};
  bool ok = true;
  for (int k = 0; ok && k < i->nops; k++)
    ok = add_args(e, i->ops[k], false, &args, &wr);
  if (ok)
    ok = add_args(e, i, true, &args, &wr);
  LaunchDims ld = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
  char *name = NULL;
  if (ok) {
    /* a result written over an operand in place (buffer_sharing.c) */
    bool alias = false;
    for (int w = 0; w < args.len && !alias; w++)
      for (int r = 0; r < args.len && !alias; r++)
        alias = wr.data[w] && !wr.data[r] &&
                overlaps(args.data[w], args.data[r]);
    name = kernel_name(e, i);
    codegen_set_args_may_alias(e->cg, alias);
    codegen_set_in_place_operand(e->cg, alias ? in_place_operand(e, i) : -1);
    ok = codegen_kernel(e->cg, i, name, &ld, e->d);
    codegen_set_args_may_alias(e->cg, false);
    codegen_set_in_place_operand(e->cg, -1);
  }
  if (ok && ld.temp_bytes > 0) {
    /* the kernel's scratch: the start of the staging allocation, which
     * holds nothing live between thunks */
    BufSlice t = {e->scratch_alloc, 0, ld.temp_bytes};
    vec_push(&args, t);
    vec_push(&wr, true);
    if (ld.temp_bytes > e->scratch_size)
      e->scratch_size = ld.temp_bytes;
  }
  if (ok) {
    Thunk t = {.kind = THUNK_KERNEL, .trip_count = -1};
    t.annotation = arena_strdup(e->a->arena, i->name);
    t.kernel_name = name;
    t.nargs = args.len;
    t.args = vec_to_arena(e->a->arena, &args);
    t.written = vec_to_arena(e->a->arena, &wr);
    memcpy(t.grid, ld.grid, sizeof t.grid);
    memcpy(t.block, ld.block, sizeof t.block);
    t.shmem_bytes = ld.shmem_bytes;
    /* host: joins the kernels before it when they run on the same rows */
    int64_t *rb = xcalloc((size_t)t.nargs + 1, sizeof *rb);
    int64_t *bytes = xcalloc((size_t)t.nargs + 1, sizeof *bytes);
    for (int k = 0; k < t.nargs; k++)
      bytes[k] = t.args[k].size;
    bool rows = codegen_row_bytes(e->cg, i, &ld, t.nargs, bytes, rb);
    Thunk *last = v->len ? &vec_last(v) : NULL;
    if (rows && tchain_fits(e->chains, last, &t, rb, ld.rows, ld.rows_per_unit)) {
      const char *cn = tchain_name(e->chains);
      tchain_join(e->chains, last, &t, rb, cn ? cn : chain_name(e, last->kernel_name),
                  e->a->arena);
    } else {
      vec_push(v, t);
      tchain_start(e->chains, &vec_last(v), rows ? rb : NULL, ld.rows, ld.rows_per_unit);
      RoutineCand rc = {.index = v->len - 1, .kernel = name, .instr = i};
      if (codegen_host_routines(e->cg) && host_routine_plan(i, &rc.desc, &rc.x_operand))
        vec_push(&e->routines, rc);
    }
    free(rb);
    free(bytes);
  }
  vec_free(&args);
  vec_free(&wr);
  return ok;
}

/* The 32-bit pattern that fills an array of i's result with `v`, when i is
 * a fusion (or a lone op) that only broadcasts a scalar constant and the
 * element size lets one 32-bit word hold whole elements (XLA emits such
 * fusions as memset thunks too). */
static bool memset_pattern(const HloInstr *i, uint32_t *pattern) {
  const HloInstr *root = i;
  if (i->op == HLO_FUSION) {
    if (i->ncalled < 1 || !i->called[0] || !i->called[0]->root)
      return false;
    root = i->called[0]->root;
  }
  if (root->op != HLO_BROADCAST || !shape_is_array(root->shape) ||
      root->nops != 1)
    return false;
  const HloInstr *c = root->ops[0];
  if (c->op != HLO_CONSTANT || !c->literal || c->literal->elided ||
      !c->literal->data || !shape_is_scalar(c->shape) ||
      c->shape->et != root->shape->et)
    return false;
  const uint8_t *b = c->literal->data;
  switch (et_bytes(root->shape->et)) {
  case 1: *pattern = b[0] * 0x01010101u; return true;
  case 2: {
    uint32_t h = (uint32_t)b[0] | (uint32_t)b[1] << 8;
    *pattern = h | h << 16;
    return true;
  }
  case 4:
    *pattern = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
               (uint32_t)b[3] << 24;
    return true;
  default: return false;
  }
}

/* A fusion that fills its result with one repeated scalar becomes a
 * kMemset32BitValue thunk when its buffer is whole aligned 32-bit words;
 * anything else is a kernel. */
static bool emit_fusion(Emitter *e, ThunkVec *v, const HloInstr *i) {
  uint32_t pattern;
  BufSlice d;
  if (memset_pattern(i, &pattern) && ba_slice(e->ba, i, 0, &d) && d.size > 0 &&
      d.size % 4 == 0 && d.offset % 4 == 0) {
    Thunk *t = new_thunk(v, THUNK_MEMSET32, e, i);
    t->dst = d;
    t->memset_value = pattern;
    return true;
  }
  return emit_kernel(e, v, i);
}

/* A copy whose operand and result have the same layout moves bytes; any
 * other copy (a layout change) is a kernel. */
static bool emit_copy(Emitter *e, ThunkVec *v, const HloInstr *i) {
  const HloInstr *src = i->ops[0];
  if (!shape_is_array(i->shape) || !shape_equal(src->shape, i->shape))
    return emit_kernel(e, v, i);
  BufSlice s, d;
  if (!slice_of(e, src, 0, &s) || !slice_of(e, i, 0, &d))
    return false;
  if (!slice_equal(s, d))
    push_copy(e, v, i, s, d);
  return true;
}

/* custom-call SliceToDynamic(x, s0, s1, ...): its buffer is x's bytes (at
 * the bounds, in the same layout: layout-assignment sees to it) followed by
 * the s32 sizes, one per dimension (thunks.h), all copied into place. */
/* i is used only as (a leaf of) the entry's result: what dynamic_padder
 * leaves; any other use would read the buffer as a static array. */
static bool only_an_entry_result(const HloInstr *i) {
  const HloComp *c = i->parent;
  if (!c || !c->is_entry || !c->root)
    return false;
  bool in_root = c->root == i;
  for (int k = 0; k < c->ninstrs; k++) {
    const HloInstr *u = c->instrs[k];
    for (int j = 0; j < u->nops; j++)
      if (u->ops[j] == i) {
        if (u != c->root || u->op != HLO_TUPLE)
          return false;
        in_root = true;
      }
  }
  return in_root;
}

static bool emit_slice_to_dynamic(Emitter *e, ThunkVec *v, const HloInstr *i) {
  const Shape *s = i->shape;
  if (!only_an_entry_result(i))
    return diag_error(e->d, i->loc, "unsupported op 'custom-call' (target "
                      "\"SliceToDynamic\"): its dynamic value is used in the "
                      "program (dynamic_padder left it: see its warning)");
  if (!shape_is_array(s) || i->nops != 1 + s->rank || !shape_is_array(i->ops[0]->shape))
    return diag_error(e->d, i->loc, "SliceToDynamic needs an array operand and "
                      "one size per dimension");
  Shape *bs = shape_clone(e->a->arena, s);
  bs->dyn = NULL;
  if (!shape_equal(i->ops[0]->shape, bs))
    return diag_error(e->d, i->loc, "SliceToDynamic's operand is not its shape at "
                      "its bounds, in its layout");
  for (int k = 1; k < i->nops; k++)
    if (!shape_is_scalar(i->ops[k]->shape) || i->ops[k]->shape->et != ET_S32)
      return diag_error(e->d, i->loc, "SliceToDynamic's sizes must be s32 scalars");
  BufSlice x, out;
  if (!slice_of(e, i->ops[0], 0, &x) || !slice_of(e, i, 0, &out))
    return false;
  if (out.size != x.size + 4 * (int64_t)s->rank)
    return diag_error(e->d, i->loc, "thunk emission: SliceToDynamic's buffer is "
                      "%lld bytes, not its operand's and the sizes'", (long long)out.size);
  push_copy(e, v, i, x, (BufSlice){out.alloc, out.offset, x.size});
  for (int k = 0; k < s->rank; k++) {
    BufSlice n;
    if (!slice_of(e, i->ops[1 + k], 0, &n))
      return false;
    push_copy(e, v, i, n, (BufSlice){out.alloc, out.offset + x.size + 4 * k, 4});
  }
  return true;
}

static bool emit_while(Emitter *e, ThunkVec *v, const HloInstr *i) {
  const HloComp *cond = i->called[0], *body = i->called[1];
  if (!copy_leaves(e, v, i, i->ops[0], i))
    return false;
  ThunkSeq *cs = ARENA_NEW(e->a->arena, ThunkSeq);
  ThunkSeq *bs = ARENA_NEW(e->a->arena, ThunkSeq);
  BufSlice pred;
  if (!emit_comp(e, cond, cs) || !slice_of(e, cond->root, 0, &pred))
    return false;
  ThunkVec bv = {0};
  if (!emit_comp(e, body, bs))
    return false;
  /* The body's thunks, then its root's leaves back into the loop state. */
  for (int k = 0; k < bs->n; k++)
    vec_push(&bv, bs->thunks[k]);
  bool ok = copy_leaves(e, &bv, i, body->root, i);
  bs->n = bv.len;
  bs->thunks = vec_to_arena(e->a->arena, &bv);
  vec_free(&bv);
  if (!ok)
    return false;
  Thunk *t = new_thunk(v, THUNK_WHILE, e, i);
  t->cond = cs;
  t->body = bs;
  t->cond_result = pred;
  return true;
}

static bool emit_conditional(Emitter *e, ThunkVec *v, const HloInstr *i) {
  BufSlice index;
  if (!slice_of(e, i->ops[0], 0, &index))
    return false;
  ThunkSeq *branches = ARENA_ARRAY(e->a->arena, ThunkSeq, i->ncalled);
  for (int b = 0; b < i->ncalled; b++) {
    const HloComp *c = i->called[b];
    ThunkSeq s = {0};
    if (!emit_comp(e, c, &s))
      return false;
    ThunkVec bv = {0};
    for (int k = 0; k < s.n; k++)
      vec_push(&bv, s.thunks[k]);
    bool ok = copy_leaves(e, &bv, i, c->root, i);
    branches[b].n = bv.len;
    branches[b].thunks = vec_to_arena(e->a->arena, &bv);
    vec_free(&bv);
    if (!ok)
      return false;
  }
  Thunk *t = new_thunk(v, THUNK_CONDITIONAL, e, i);
  t->branch_index = index;
  t->index_is_pred = i->ops[0]->shape->et == ET_PRED;
  t->nbranches = i->ncalled;
  t->branches = branches;
  return true;
}

/* ---- constants ----------------------------------------------------------- */

/* The physical position (in elements) of row-major element `lin` of an
 * array shape with a minor_to_major layout. */
static int64_t physical_index(const Shape *s, int64_t lin) {
  int64_t idx[64];
  for (int d = s->rank - 1; d >= 0; d--) {
    idx[d] = s->dims[d] ? lin % s->dims[d] : 0;
    lin = s->dims[d] ? lin / s->dims[d] : 0;
  }
  int64_t off = 0, stride = 1;
  for (int k = 0; k < s->rank; k++) {
    int64_t d = s->layout->minor_to_major[k];
    off += idx[d] * stride;
    stride *= s->dims[d];
  }
  return off;
}

/* Leaf k of constant i: literal l (row-major) into the physical layout of
 * phys, the instruction's leaf shape. */
static bool add_constant_leaf(Emitter *e, const HloInstr *i, int k,
                              const Literal *l, const Shape *phys) {
  const Shape *s = l->shape;
  if (!shape_is_array(s))
    return true;
  BufSlice slice;
  if (!slice_of(e, i, k, &slice))
    return false;
  for (int j = 0; j < e->consts.len; j++)
    if (slice_equal(e->consts.data[j].slice, slice))
      return true;
  int64_t bytes = shape_byte_size(s);
  if (!l->elided && !l->data && bytes > 0)
    return diag_error(e->d, i->loc, "constant '%s' has no value", i->name);
  if (bytes != slice.size || s->rank > 64)
    return diag_error(e->d, i->loc,
                      "thunk emission: constant '%s' is %lld bytes but its "
                      "buffer is %lld",
                      i->name, (long long)bytes, (long long)slice.size);
  uint8_t *out = arena_alloc(e->a->arena, bytes ? (size_t)bytes : 1);
  const uint8_t *data = l->data;
  if (l->elided) { /* {...}: XLA's placeholder values (literal.c) */
    uint8_t *fill = arena_alloc(e->a->arena, bytes ? (size_t)bytes : 1);
    literal_elided_fill(l, fill);
    data = fill;
  }
  int eb = et_bytes(s->et);
  bool plain = !phys->layout || layout_is_default(phys->layout, phys->rank);
  if (plain || phys->rank != s->rank) {
    if (bytes)
      memcpy(out, data, (size_t)bytes);
  } else {
    int64_t n = shape_elements(s);
    for (int64_t j = 0; j < n; j++)
      memcpy(out + physical_index(phys, j) * eb, data + j * eb, (size_t)eb);
  }
  ArtConstant c = {.slice = slice, .bytes = out};
  vec_push(&e->consts, c);
  return true;
}

static bool emit_constant(Emitter *e, const HloInstr *i) {
  const Literal *l = i->literal;
  if (!l)
    return diag_error(e->d, i->loc, "constant '%s' has no literal", i->name);
  if (!l->ntuple)
    return add_constant_leaf(e, i, 0, l, i->shape);
  Literal **leaves = NULL;
  int n = io_literal_leaves(l, &leaves);
  PtrVec shapes = {0};
  bool ok = leaves_of(i->shape, &shapes) == n ||
            diag_error(e->d, i->loc,
                       "constant '%s': its value does not match its shape",
                       i->name);
  for (int k = 0; ok && k < n; k++)
    ok = add_constant_leaf(e, i, k, leaves[k], shapes.data[k]);
  vec_free(&shapes);
  free(leaves);
  return ok;
}

/* ---- the walk ------------------------------------------------------------ */

/* Ops that only name or regroup buffers: no thunk. */
static bool is_forwarding(HloOp op) {
  switch (op) {
  case HLO_PARAMETER:
  case HLO_TUPLE:
  case HLO_GET_TUPLE_ELEMENT:
  case HLO_BITCAST:
  case HLO_AFTER_ALL:
  case HLO_ADD_DEPENDENCY:
  case HLO_OPTIMIZATION_BARRIER:
    return true;
  default:
    return false;
  }
}

/* Ops no kernel computes: side effects, communication, host transfers,
 * opaque calls. */
static bool is_unsupported(HloOp op) {
  switch (op) {
  case HLO_CUSTOM_CALL: case HLO_INFEED: case HLO_OUTFEED: case HLO_SEND:
  case HLO_SEND_DONE: case HLO_RECV: case HLO_RECV_DONE: case HLO_CALL:
  case HLO_RAGGED_ALL_TO_ALL: case HLO_COLLECTIVE_REDUCE:
  case HLO_ASYNC_START: case HLO_ASYNC_UPDATE:
  case HLO_ASYNC_DONE: case HLO_COPY_START: case HLO_COPY_DONE:
  case HLO_DOMAIN: case HLO_RNG:
  case HLO_SET_DIMENSION_SIZE: case HLO_GET_DIMENSION_SIZE:
  case HLO_DYNAMIC_RESHAPE: case HLO_BATCH_NORM_GRAD:
  case HLO_BATCH_NORM_INFERENCE: case HLO_BATCH_NORM_TRAINING:
    return true;
  default:
    return false;
  }
}

/* A library custom-call (backend_config.h): a GEMM or convolution thunk
 * with its descriptor (libcall_lower.c) and the slices of its operands and
 * result leaves. */
static bool emit_libcall(Emitter *e, ThunkVec *v, const HloInstr *i,
                         LibCallTarget target) {
  Arena *ar = e->a->arena;
  LibSources src;
  GemmDesc *g = NULL;
  ConvDesc *c = NULL;
  if (libcall_is_gemm(target)) {
    g = ARENA_NEW(ar, GemmDesc);
    if (!libcall_gemm_desc(ar, i, g, &src, e->d))
      return false;
  } else {
    c = ARENA_NEW(ar, ConvDesc);
    if (!libcall_conv_desc(i, c, &src, e->d))
      return false;
  }
  BufSlice lib[LIB_MAX_SLICES];
  for (int k = 0; k < LIB_MAX_SLICES; k++) {
    lib[k] = (BufSlice){-1, 0, 0};
    if (src.operand[k] >= 0 &&
        !slice_of(e, i->ops[src.operand[k]], 0, &lib[k]))
      return false;
    if (src.result_leaf[k] >= 0 &&
        !slice_of(e, i, shape_is_tuple(i->shape) ? src.result_leaf[k] : 0,
                  &lib[k]))
      return false;
  }
  Thunk *t = new_thunk(v, g ? THUNK_GEMM : THUNK_CONV, e, i);
  t->target = arena_strdup(ar, libcall_target_name(target));
  t->gemm = g;
  t->conv = c;
  memcpy(t->lib, lib, sizeof lib);
  return true;
}

static char *leaf_text(Arena *a, const Shape *s);

/* A collective thunk: its description, and one operand and result slice
 * (with its shape) per operand; replica-id and partition-id: the result. */
static bool emit_collective(Emitter *e, ThunkVec *v, const HloInstr *i) {
  Arena *ar = e->a->arena;
  CollDesc *c = ARENA_NEW(ar, CollDesc);
  if (!collective_desc(ar, e->m, i, c, e->d))
    return false;
  bool ids = c->kind == COLL_REPLICA_ID || c->kind == COLL_PARTITION_ID;
  c->n = ids ? 0 : i->nops;
  int nout = ids ? 1 : i->nops;
  /* the results: the shape itself, or for all-gather-start and
   * collective-permute-start element 1 of (operands, results, contexts...) */
  bool start = i->op == HLO_ALL_GATHER_START || i->op == HLO_COLLECTIVE_PERMUTE_START;
  const Shape *rs = i->shape;
  int first = 0;                  /* leaf number of the first result */
  if (start) {
    if (!shape_is_tuple(rs) || rs->ntuple < 2)
      return diag_error(e->d, i->loc, "'%s': a malformed %s shape", i->name,
                        hlo_op_name(i->op));
    first = shape_leaf_count(rs->tuple[0]);
    rs = rs->tuple[1];
  }
  int nres = shape_is_tuple(rs) ? rs->ntuple : 1;
  if (!ids && nres != i->nops)
    return diag_error(e->d, i->loc, "'%s': %d results for %d operands", i->name,
                      nres, i->nops);
  c->in = ARENA_ARRAY(ar, BufSlice, c->n + 1);
  c->in_shape = ARENA_ARRAY(ar, char *, c->n + 1);
  c->out = ARENA_ARRAY(ar, BufSlice, nout);
  c->out_shape = ARENA_ARRAY(ar, char *, nout);
  for (int k = 0; k < c->n; k++) {
    if (!slice_of(e, i->ops[k], 0, &c->in[k]))
      return false;
    c->in_shape[k] = leaf_text(ar, i->ops[k]->shape);
  }
  for (int k = 0; k < nout; k++) {
    if (!slice_of(e, i, first + k, &c->out[k]))
      return false;
    c->out_shape[k] = leaf_text(ar, shape_is_tuple(rs) ? rs->tuple[k] : rs);
  }
  /* a -start's operand leaves hold its operands */
  for (int k = 0; k < first && k < i->nops; k++) {
    BufSlice dst;
    if (!slice_of(e, i, k, &dst))
      return false;
    if (!slice_equal(dst, c->in[k]))
      push_copy(e, v, i, c->in[k], dst);
  }
  Thunk *t = new_thunk(v, THUNK_COLLECTIVE, e, i);
  t->coll = c;
  return true;
}

/* all-reduce-done, all-gather-done, collective-permute-done: a done thunk
 * that waits for the -start's collective, then the -start's results,
 * copied where the -done's buffer is another. */
static bool emit_collective_done(Emitter *e, ThunkVec *v, const HloInstr *i) {
  const HloInstr *s = i->nops == 1 ? i->ops[0] : NULL;
  if (!s || (s->op != HLO_ALL_REDUCE_START && s->op != HLO_ALL_GATHER_START &&
             s->op != HLO_COLLECTIVE_PERMUTE_START))
    return diag_error(e->d, i->loc, "'%s' needs its -start", i->name);
  Arena *ar = e->a->arena;
  CollDesc *c = ARENA_NEW(ar, CollDesc);
  if (!collective_desc(ar, e->m, s, c, e->d))
    return false;
  c->done = true;
  c->n = 0;
  Thunk *t = new_thunk(v, THUNK_COLLECTIVE, e, i);
  t->coll = c;
  int first = hlo_async_done_first_leaf(s, i);
  int n = shape_leaf_count(i->shape);
  if (first < 0)
    return diag_error(e->d, i->loc, "'%s' does not match its -start", i->name);
  for (int k = 0; k < n; k++) {
    BufSlice src, dst;
    if (!slice_of(e, s, first + k, &src) || !slice_of(e, i, k, &dst))
      return false;
    if (!slice_equal(src, dst))
      push_copy(e, v, i, src, dst);
  }
  return true;
}

static bool emit_instr(Emitter *e, ThunkVec *v, const HloInstr *i) {
  if (is_forwarding(i->op))
    return true;
  switch (i->op) {
  case HLO_CONSTANT: return emit_constant(e, i);
  case HLO_FUSION: return emit_fusion(e, v, i);
  case HLO_COPY: return emit_copy(e, v, i);
  case HLO_WHILE: return emit_while(e, v, i);
  case HLO_CONDITIONAL: return emit_conditional(e, v, i);
  case HLO_ALL_REDUCE: case HLO_ALL_GATHER: case HLO_REDUCE_SCATTER:
  case HLO_ALL_TO_ALL: case HLO_COLLECTIVE_PERMUTE: case HLO_REPLICA_ID:
  case HLO_PARTITION_ID: case HLO_ALL_REDUCE_START: case HLO_ALL_GATHER_START:
  case HLO_COLLECTIVE_BROADCAST:
  case HLO_COLLECTIVE_PERMUTE_START:
    return emit_collective(e, v, i);
  case HLO_ALL_REDUCE_DONE: case HLO_ALL_GATHER_DONE:
  case HLO_COLLECTIVE_PERMUTE_DONE:
    return emit_collective_done(e, v, i);
  default: break;
  }
  LibCallTarget target = libcall_target(i);
  if (target != LIBCALL_NONE)
    return emit_libcall(e, v, i, target);
  if (codegen_custom_call_kernel(i))
    return emit_kernel(e, v, i);   /* topk_kernel.c, linalg_kernel.c */
  if (i->op == HLO_CUSTOM_CALL && i->cc && i->cc->target &&
      strcmp(i->cc->target, "SliceToDynamic") == 0)
    return emit_slice_to_dynamic(e, v, i);
  if (is_unsupported(i->op)) {
    if (i->op == HLO_CUSTOM_CALL && i->cc && i->cc->target)
      return diag_error(e->d, i->loc,
                        "unsupported op 'custom-call' (target \"%s\"): no "
                        "thunk for it yet",
                        i->cc->target);
    return diag_error(e->d, i->loc, "unsupported op '%s': no thunk for it yet",
                      hlo_op_name(i->op));
  }
  /* Any other op is computed by a kernel of its own (codegen treats it as
   * a fusion of itself and refuses what it cannot emit). */
  return emit_kernel(e, v, i);
}

/* Turns candidate rc, a lone kernel thunk t, into its routine thunk: the
 * kernel is dropped from the module. */
static bool to_routine(Emitter *e, Thunk *t, const RoutineCand *rc) {
  const HloInstr *i = rc->instr;
  BufSlice lib[LIB_MAX_SLICES];
  for (int k = 0; k < LIB_MAX_SLICES; k++)
    lib[k] = (BufSlice){-1, 0, 0};
  if (!slice_of(e, i->ops[rc->x_operand], 0, &lib[ROUTINE_X]) ||
      !slice_of(e, i, 0, &lib[ROUTINE_Y]) ||
      (rc->desc.kind == ROUTINE_TOPK && !slice_of(e, i, 1, &lib[ROUTINE_INDICES])))
    return false;
  codegen_drop_kernel(e->cg, rc->kernel);
  *t = (Thunk){.kind = THUNK_ROUTINE, .trip_count = -1, .annotation = t->annotation};
  t->routine = ARENA_NEW(e->a->arena, RoutineDesc);
  *t->routine = rc->desc;
  memcpy(t->lib, lib, sizeof lib);
  return routine_check(t->routine, t->lib, e->d);
}

/* At the end of sequence v, whose candidates are those from `first` on:
 * the ones that no kernel joined in a chain (which would run them row by
 * row beside it) become routines. */
static bool finish_routines(Emitter *e, ThunkVec *v, int first) {
  bool ok = true;
  for (int k = first; ok && k < e->routines.len; k++) {
    const RoutineCand *rc = &e->routines.data[k];
    Thunk *t = &v->data[rc->index];
    if (t->kind == THUNK_KERNEL && strcmp(t->kernel_name, rc->kernel) == 0)
      ok = to_routine(e, t, rc);
  }
  e->routines.len = first;
  return ok;
}

static bool emit_comp(Emitter *e, const HloComp *c, ThunkSeq *out) {
  ThunkVec v = {0};
  bool ok = true;
  int first = e->routines.len;
  for (int k = 0; ok && k < c->ninstrs; k++)
    ok = emit_instr(e, &v, c->instrs[k]);
  ok = ok && finish_routines(e, &v, first);
  out->n = v.len;
  out->thunks = vec_to_arena(e->a->arena, &v);
  vec_free(&v);
  return ok;
}

/* ---- parameters, outputs, aliasing --------------------------------------- */

/* The leaf number of the subshape at index (depth entries) of s. */
static int leaf_number(const Shape *s, const I64List *index, Diag *d, Loc loc,
                       bool *ok) {
  int n = 0;
  for (int k = 0; k < index->n; k++) {
    int64_t j = index->v[k];
    if (!shape_is_tuple(s) || j < 0 || j >= s->ntuple) {
      *ok = diag_error(d, loc, "input_output_alias: shape index out of range");
      return 0;
    }
    for (int64_t t = 0; t < j; t++)
      n += shape_leaf_count(s->tuple[t]);
    s = s->tuple[j];
  }
  if (!shape_is_array(s))
    *ok = diag_error(d, loc, "input_output_alias: index names no array");
  return n;
}

/* The text of a parameter or result leaf: its dimensions and its
 * minor_to_major only, which is how the buffer holds it (tiles, memory
 * spaces and other layout parts of the source do not change our buffers). */
static char *leaf_text(Arena *a, const Shape *s) {
  Shape plain = *s;
  Layout l = {0};
  if (s->layout) {
    l.rank = s->layout->rank;
    l.minor_to_major = s->layout->minor_to_major;
    plain.layout = &l;
  }
  StrBuf b;
  sb_init(&b);
  shape_print(&b, &plain, true);
  char *t = arena_strdup(a, b.s);
  sb_free(&b);
  return t;
}

static char *shape_text(Arena *a, const Shape *s) {
  if (!shape_is_tuple(s))
    return leaf_text(a, s);
  StrBuf b;
  sb_init(&b);
  sb_putc(&b, '(');
  for (int k = 0; k < s->ntuple; k++) {
    if (k)
      sb_puts(&b, ", ");
    char *e = shape_text(a, s->tuple[k]);
    sb_puts(&b, e);
  }
  sb_putc(&b, ')');
  char *t = arena_strdup(a, b.s);
  sb_free(&b);
  return t;
}

static bool emit_params(Emitter *e, const HloComp *entry) {
  Vec(ArtLeaf) params = {0};
  PtrVec leaves = {0};
  bool ok = true;
  for (int p = 0; ok && p < entry->nparams; p++) {
    const HloInstr *pi = entry->params[p];
    int n = leaves_of(pi->shape, &leaves);
    for (int k = 0; ok && k < n; k++) {
      const Shape *s = leaves.data[k];
      if (is_token(s)) {
        ok = diag_error(e->d, pi->loc,
                        "unsupported: entry parameter '%s' holds a token",
                        pi->name);
        break;
      }
      ArtLeaf l = {.shape = leaf_text(e->a->arena, s)};
      ok = slice_of(e, pi, k, &l.slice);
      vec_push(&params, l);
    }
  }
  e->a->nparams = params.len;
  e->a->params = vec_to_arena(e->a->arena, &params);
  vec_free(&params);
  vec_free(&leaves);
  return ok;
}

static bool emit_outputs(Emitter *e, const HloComp *entry, ThunkVec *v) {
  const HloInstr *root = entry->root;
  Vec(ArtLeaf) outs = {0};
  PtrVec leaves = {0};
  int n = leaves_of(root->shape, &leaves);
  bool ok = true;
  for (int k = 0; ok && k < n; k++) {
    const Shape *s = leaves.data[k];
    if (is_token(s)) {
      ok = diag_error(e->d, root->loc,
                      "unsupported: the entry result holds a token");
      break;
    }
    ArtLeaf l = {.shape = leaf_text(e->a->arena, s)};
    ok = slice_of(e, root, k, &l.slice);
    vec_push(&outs, l);
  }
  vec_free(&leaves);
  /* input_output_alias: the result leaf goes into the parameter's buffer
   * (a copy at the end, after every read of the parameter). */
  for (int j = 0; ok && j < e->m->nio_alias; j++) {
    const AliasEntry *al = &e->m->io_alias[j];
    if (al->operand < 0 || al->operand >= entry->nparams) {
      ok = diag_error(e->d, e->m->loc,
                      "input_output_alias names parameter %lld of %d",
                      (long long)al->operand, entry->nparams);
      break;
    }
    int ol = leaf_number(root->shape, &al->output_index, e->d, e->m->loc, &ok);
    const HloInstr *pi = entry->params[al->operand];
    int pl = leaf_number(pi->shape, &al->operand_index, e->d, e->m->loc, &ok);
    if (!ok)
      break;
    BufSlice ps;
    if (!(ok = slice_of(e, pi, pl, &ps)))
      break;
    ArtLeaf *l = &outs.data[ol];
    if (l->slice.size != ps.size) {
      ok = diag_error(e->d, e->m->loc,
                      "input_output_alias: output leaf %d and parameter %lld "
                      "differ in size",
                      ol, (long long)al->operand);
      break;
    }
    if (!slice_equal(l->slice, ps))
      push_copy(e, v, root, l->slice, ps);
    l->slice = ps;
  }
  e->a->noutputs = outs.len;
  e->a->outputs = vec_to_arena(e->a->arena, &outs);
  vec_free(&outs);
  e->a->result_shape = shape_text(e->a->arena, root->shape);
  return ok;
}

static void copy_allocs(Emitter *e) {
  Arena *ar = e->a->arena;
  int n = ba_num_allocs(e->ba);
  BufAlloc *allocs = ARENA_ARRAY(ar, BufAlloc, n ? n : 1);
  for (int k = 0; k < n; k++) {
    const BufAlloc *s = ba_alloc(e->ba, k);
    BufAlloc *t = &allocs[k];
    *t = *s;
    t->param_index =
        s->nparam_index
            ? arena_memdup(ar, s->param_index,
                           (size_t)s->nparam_index * sizeof(int64_t))
            : NULL;
    t->param_shape = s->param_shape ? arena_strdup(ar, s->param_shape) : NULL;
    t->output_shape = s->output_shape ? arena_strdup(ar, s->output_shape) : NULL;
  }
  e->a->nallocs = n;
  e->a->allocs = allocs;
  e->scratch_alloc = n;
}

/* The staging allocation of copy_leaves, after BA's, when it was used. */
static void add_scratch_alloc(Emitter *e) {
  if (e->scratch_size == 0)
    return;
  int n = e->a->nallocs;
  BufAlloc *allocs = ARENA_ARRAY(e->a->arena, BufAlloc, n + 1);
  if (n)
    memcpy(allocs, e->a->allocs, (size_t)n * sizeof *allocs);
  allocs[n] = (BufAlloc){.size = e->scratch_size, .flags = ALLOC_TEMP};
  e->a->allocs = allocs;
  e->a->nallocs = n + 1;
}

Artifact *thunks_emit(const HloModule *m, const BufferAssignment *ba,
                      Codegen *cg, const char *original_hlo, Diag *d) {
  Emitter e = {.m = m, .ba = ba, .cg = cg, .d = d};
  e.chains = tchain_new();
  e.a = artifact_new();
  Arena *ar = e.a->arena;
  e.a->module_name = arena_strdup(ar, m->name);
  copy_allocs(&e);
  ThunkVec v = {0};
  bool ok = emit_params(&e, m->entry);
  for (int k = 0; ok && k < m->entry->ninstrs; k++)
    ok = emit_instr(&e, &v, m->entry->instrs[k]);
  ok = ok && finish_routines(&e, &v, 0);
  if (ok)
    ok = emit_outputs(&e, m->entry, &v);
  if (ok)
    ok = tchain_emit(e.chains, cg, d);
  tchain_free(e.chains);
  vec_free(&e.routines);
  add_scratch_alloc(&e);
  e.a->entry.n = v.len;
  e.a->entry.thunks = vec_to_arena(ar, &v);
  vec_free(&v);
  e.a->nconsts = e.consts.len;
  e.a->consts = vec_to_arena(ar, &e.consts);
  vec_free(&e.consts);
  hashmap_free(&e.kernel_names);
  if (ok) {
    e.a->original_hlo = arena_strdup(ar, original_hlo ? original_hlo : "");
    StrBuf b;
    sb_init(&b);
    hlo_print_module(&b, m, &print_options_default);
    e.a->optimized_hlo = arena_strdup(ar, b.s);
    sb_free(&b);
  }
  if (!ok) {
    artifact_free(e.a);
    return NULL;
  }
  return e.a;
}
