/*
 * gemm_rewriter.c - "gemm-rewriter" (XLA's GemmRewriter): dots become
 * library GEMM custom-calls, with what follows them folded into the call's
 * epilogue.  Runs after layout assignment, so the operands' layouts are
 * final.
 *
 *   dot(a, b)  =>  get-tuple-element(custom-call(a, b[, c][, bias]), 0)
 *
 * The call is __cublas$lt$matmul on the GPU (result (d, s8[4 MiB
 * workspace])) and __onednn$matmul on the host (result (d, s8[0])), with a
 * GemmBackendConfig (backend_config.h) holding alpha, beta, the dimension
 * numbers, the operand precisions and the epilogue.
 *
 * Which dots: both operands of one element type among f32, f64, bf16, f16,
 * f8e4m3fn and f8e5m2, the result of that type or f32 for bf16/f16/f8
 * inputs (f8 on the host: oneDNN's call converts the operands to f32).  Integer, complex, mixed-type and ragged dots, and any
 * dot whose result has a layout no GEMM can write, stay dots (xhloc's own
 * kernels).  An operand whose layout is not a row- or column-major batch of
 * matrices (libcall_gemm_shapes) is first transposed, with the default
 * layout, to [batch..., non-contracting..., contracting...] (lhs) or
 * [batch..., contracting..., non-contracting...] (rhs).
 *
 * The epilogue, matched on the dot's single-user chain, in this order:
 *   multiply(x, broadcast(scalar constant s))         alpha *= s
 *   add(x, broadcast(v)) with v along the result's rhs non-contracting
 *     dimensions, of the result's type                 BIAS
 *   add(x, y) with y of the result's shape             beta = 1, c = y
 *   maximum(x, broadcast(0))                           RELU (GPU only:
 *     oneDNN's relu gives 0 for NaN, maximum and XLA's CPU give NaN)
 *   x * (0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x*x*x))))
 *     (jax.nn.gelu(approximate=True), factors in any order)   GELU
 * jax.nn.gelu(approximate=False) reaches the compiler as an erfc expansion
 * and is not matched (it fuses with the rest of the elementwise code).
 * Each step is taken only while the value it consumes has no other user.
 */
#include "passes.h"

#include <math.h>
#include <string.h>

#include "../lib/hlo/backend_config.h"
#include "../lib/hlo/ir_edit.h"
#include "../lib/runtime/libcall.h"
#include "match_util.h"

/* cuBLASLt's workspace: at most 4 MiB (XLA's default).  Workspace is what
 * split-K reductions use (splitting K in parts of 512 or more, 16 at most:
 * that many f32 copies of the result); a product with a short K is not
 * split and gets scratch of its result's size in f32, 64 KiB at most.  The heuristic then picks among the
 * algorithms that fit, so small GEMMs do not each reserve 4 MiB.  Buffer
 * assignment shares the workspaces of calls that do not run at once. */
#define GPU_WORKSPACE (4 << 20)
#define GPU_SCRATCH (64 << 10)

static int64_t gpu_workspace(const Shape *result, const Shape *lhs,
                             const DotDnums *dn) {
  int64_t n = shape_elements(result), k = 1;
  for (int d = 0; d < dn->lhs_contracting.n; d++) {
    int64_t x = dn->lhs_contracting.v[d];
    if (x < 0 || x >= lhs->rank)
      return GPU_WORKSPACE;
    k *= lhs->dims[x];
  }
  int64_t splits = k / 512 < 16 ? k / 512 : 16;
  if (splits <= 1) {
    int64_t bytes = n < 0 ? GPU_SCRATCH : (n * 4 + 255) / 256 * 256;
    return bytes < GPU_SCRATCH ? bytes : GPU_SCRATCH;
  }
  if (n < 0 || n > GPU_WORKSPACE / 4 / splits)
    return GPU_WORKSPACE;
  int64_t ws = (n * 4 * splits + 255) / 256 * 256;
  return ws > GPU_SCRATCH ? ws : GPU_SCRATCH;
}

typedef struct Fused {
  HloInstr *out;                  /* the last instruction folded in */
  double alpha;
  HloInstr *c;                    /* beta = 1 addend */
  HloInstr *bias;
  int act;                        /* 0 none, 1 relu, 2 gelu */
} Fused;

static bool lib_type(ElemType t) {
  return t == ET_F32 || t == ET_F64 || t == ET_BF16 || t == ET_F16 ||
         t == ET_F8E4M3FN || t == ET_F8E5M2;
}

static bool eligible(const HloInstr *dot) {
  if (dot->op != HLO_DOT || dot->nops != 2 || !dot->dot || dot->sparsity ||
      dot->dot->lhs_ragged.n || dot->dot->rhs_group.n)
    return false;
  ElemType a = dot->ops[0]->shape->et, b = dot->ops[1]->shape->et,
           o = dot->shape->et;
  if (a != b || !lib_type(a) || !shape_is_array(dot->shape) ||
      shape_is_dynamic(dot->shape) || shape_is_dynamic(dot->ops[0]->shape) ||
      shape_is_dynamic(dot->ops[1]->shape))
    return false;
  if (o == a)
    return a != ET_F8E4M3FN && a != ET_F8E5M2;
  return o == ET_F32 && (a == ET_BF16 || a == ET_F16 || a == ET_F8E4M3FN ||
                         a == ET_F8E5M2);
}

static bool near(double v, double want) {
  return fabs(v - want) <= 1e-6 * fabs(want);
}

/* v is a broadcast along exactly the result's rhs non-contracting dims. */
static HloInstr *bias_vector(const HloInstr *v, const HloInstr *dot) {
  if (v->op != HLO_BROADCAST || v->nops != 1)
    return NULL;
  const HloInstr *src = v->ops[0];
  const DotDnums *dn = dot->dot;
  int nb = dn->lhs_batch.n;
  int nl = dot->ops[0]->shape->rank - nb - dn->lhs_contracting.n;
  int nr = dot->shape->rank - nb - nl;
  if (nr < 1 || v->dims.n != nr || src->shape->rank != nr ||
      src->shape->et != dot->shape->et)
    return NULL;
  int nontrivial = 0;
  for (int k = 0; k < nr; k++)
    nontrivial += src->shape->dims[k] > 1;
  if (nontrivial > 1)
    return NULL;
  for (int k = 0; k < nr; k++)
    if (v->dims.v[k] != nb + nl + k)
      return NULL;
  return (HloInstr *)src;
}

/* x * (0.5 * (1 + tanh(c1 * (x + c2 * x*x*x)))), returning the outer
 * multiply when u (a user of x) starts it. */
static bool is_cube_of(const HloInstr *p, const HloInstr *x) {
  if (p->op != HLO_MULTIPLY)
    return false;
  const HloInstr *a = p->ops[0], *b = p->ops[1];
  if (a == x && b->op == HLO_MULTIPLY && b->ops[0] == x && b->ops[1] == x)
    return true;
  return b == x && a->op == HLO_MULTIPLY && a->ops[0] == x && a->ops[1] == x;
}

static HloInstr *gelu_tanh(IrEdit *e, HloInstr *x) {
  /* x's users: x*x, (x*x)*x, x + ..., x * h. */
  HloInstr **users;
  int nu = ir_is_root(x) ? -1 : ir_users(e, x, &users);
  if (nu != 4)
    return NULL;
  HloInstr *sum = NULL, *outer = NULL;
  for (int k = 0; k < nu; k++) {
    HloInstr *u = users[k];
    if (u->op == HLO_ADD && !sum)
      sum = u;
  }
  if (!sum)
    return NULL;
  /* sum = x + c2 * cube */
  HloInstr *m = match_other_operand(sum, x);
  double v;
  if (!m || m->op != HLO_MULTIPLY || match_sole_user(e, m) != sum)
    return NULL;
  HloInstr *cube = NULL;
  if (match_scalar_constant(m->ops[1], &v) && near(v, 0.044715))
    cube = m->ops[0];
  else if (match_scalar_constant(m->ops[0], &v) && near(v, 0.044715))
    cube = m->ops[1];
  if (!cube || !is_cube_of(cube, x) || match_sole_user(e, cube) != m)
    return NULL;
  HloInstr *sq = cube->ops[0] == x ? cube->ops[1] : cube->ops[0];
  if (match_sole_user(e, sq) != cube)
    return NULL;
  /* s = c1 * sum; t = tanh(s); one = 1 + t; h = 0.5 * one */
  HloInstr *s = match_sole_user(e, sum);
  if (!s || s->op != HLO_MULTIPLY || !match_scalar_constant(match_other_operand(s, sum), &v) ||
      !near(v, 0.7978845608028654))
    return NULL;
  HloInstr *t = match_sole_user(e, s);
  if (!t || t->op != HLO_TANH)
    return NULL;
  HloInstr *one = match_sole_user(e, t);
  if (!one || one->op != HLO_ADD || !match_scalar_constant(match_other_operand(one, t), &v) || v != 1)
    return NULL;
  HloInstr *h = match_sole_user(e, one);
  if (!h || h->op != HLO_MULTIPLY || !match_scalar_constant(match_other_operand(h, one), &v) ||
      v != 0.5)
    return NULL;
  outer = match_sole_user(e, h);
  if (!outer || outer->op != HLO_MULTIPLY || match_other_operand(outer, h) != x)
    return NULL;
  /* x's four users are exactly these. */
  for (int k = 0; k < nu; k++)
    if (users[k] != sq && users[k] != cube && users[k] != sum &&
        users[k] != outer)
      return NULL;
  return outer;
}

static void fuse_epilogue(IrEdit *e, HloInstr *dot, bool gpu, Fused *f) {
  f->out = dot;
  f->alpha = 1;
  f->c = f->bias = NULL;
  f->act = 0;
  ElemType et = dot->shape->et;
  for (;;) {
    HloInstr *u = match_sole_user(e, f->out);
    if (!u || u->parent != dot->parent || !shape_compatible(u->shape, dot->shape))
      break;
    HloInstr *y = match_other_operand(u, f->out);
    double v;
    if (u->op == HLO_MULTIPLY && y && !f->c && !f->bias && !f->act &&
        match_scalar_constant(y, &v)) {
      f->alpha *= v;
      f->out = u;
      continue;
    }
    if (u->op == HLO_ADD && y && !f->bias && !f->act && bias_vector(y, dot)) {
      f->bias = bias_vector(y, dot);
      f->out = u;
      continue;
    }
    GemmDesc g;
    const char *why;
    if (u->op == HLO_ADD && y && y != f->out && !f->c && !f->act &&
        y->shape->et == et && shape_is_array(y->shape) &&
        libcall_gemm_shapes(dot->ops[0]->shape, dot->ops[1]->shape, y->shape,
                            dot->dot, &g, &why)) {
      f->c = y;
      f->out = u;
      continue;
    }
    /* not on the host: oneDNN's relu post-op turns NaN into 0, where
     * maximum (and XLA's CPU) keeps it */
    if (gpu && u->op == HLO_MAXIMUM && y && !f->act && match_scalar_constant(y, &v) &&
        v == 0) {
      f->act = 1;
      f->out = u;
    }
    break;
  }
  if (!f->act) {
    HloInstr *g = gelu_tanh(e, f->out);
    if (g) {
      f->act = 2;
      f->out = g;
    }
  }
}

static GemmEpilogue epilogue_of(const Fused *f) {
  if (f->bias)
    return f->act == 1 ? GEMM_EPILOGUE_BIAS_RELU
           : f->act == 2 ? GEMM_EPILOGUE_BIAS_GELU
                         : GEMM_EPILOGUE_BIAS;
  return f->act == 1 ? GEMM_EPILOGUE_RELU
         : f->act == 2 ? GEMM_EPILOGUE_GELU
                       : GEMM_EPILOGUE_DEFAULT;
}

static I64List list(Arena *a, int n, int64_t first) {
  I64List l = {n, ARENA_ARRAY(a, int64_t, n > 0 ? n : 1)};
  for (int k = 0; k < n; k++)
    l.v[k] = first + k;
  return l;
}

static bool in_list(const I64List *l, int64_t d) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == d)
      return true;
  return false;
}

/* Transposes an operand to [batch..., then `first` group, then `second`]:
 * the free (non-contracting) dims go first for the lhs, last for the rhs. */
static HloInstr *canonical(IrEdit *e, HloComp *c, HloInstr *x,
                           const I64List *batch, const I64List *contr,
                           bool free_first) {
  int r = x->shape->rank, n = 0;
  int64_t perm[64];
  for (int k = 0; k < batch->n; k++)
    perm[n++] = batch->v[k];
  if (!free_first)
    for (int k = 0; k < contr->n; k++)
      perm[n++] = contr->v[k];
  for (int d = 0; d < r; d++)
    if (!in_list(batch, d) && !in_list(contr, d))
      perm[n++] = d;
  if (free_first)
    for (int k = 0; k < contr->n; k++)
      perm[n++] = contr->v[k];
  bool identity = true;
  for (int k = 0; k < r; k++)
    identity &= perm[k] == k;
  HloInstr *t;
  if (identity) {
    /* Only the layout changes: a copy into the default layout. */
    Shape *s = shape_clone(ir_arena(e), x->shape);
    s->layout = NULL;
    shape_set_default_layout(ir_arena(e), s);
    t = ir_new(e, c, HLO_COPY, s, 1, &x);
  } else {
    t = ir_transpose(e, c, x, perm);
    shape_set_default_layout(ir_arena(e), t->shape);
  }
  return t;
}

static bool rewrite(IrEdit *e, HloComp *c, HloInstr *dot, bool gpu) {
  Arena *ar = ir_arena(e);
  HloInstr *a = dot->ops[0], *b = dot->ops[1];
  DotDnums dn = *dot->dot;
  GemmDesc g;
  const char *why;
  if (a->shape->rank > 64 || b->shape->rank > 64)
    return false;
  /* Put a failing operand (the lhs first, then the rhs) in the canonical
   * order with the default layout, until the views fit. */
  for (int side = 0; side < 2 &&
                     !libcall_gemm_shapes(a->shape, b->shape, dot->shape, &dn, &g, &why);
       side++) {
    int nb = dn.lhs_batch.n, nc = dn.lhs_contracting.n;
    bool lhs = strstr(why, "the lhs") != NULL, rhs = strstr(why, "the rhs") != NULL;
    if (!lhs && !rhs)
      return false;
    if (lhs) {
      int nl = a->shape->rank - nb - nc;
      a = canonical(e, c, a, &dn.lhs_batch, &dn.lhs_contracting, true);
      dn.lhs_batch = list(ar, nb, 0);
      dn.lhs_contracting = list(ar, nc, nb + nl);
    } else {
      b = canonical(e, c, b, &dn.rhs_batch, &dn.rhs_contracting, false);
      dn.rhs_batch = list(ar, nb, 0);
      dn.rhs_contracting = list(ar, nc, nb);
    }
  }
  if (!libcall_gemm_shapes(a->shape, b->shape, dot->shape, &dn, &g, &why)) {
    if (a != dot->ops[0])
      ir_remove_dead(e, a);
    if (b != dot->ops[1])
      ir_remove_dead(e, b);
    return false;
  }
  Fused f;
  fuse_epilogue(e, dot, gpu, &f);
  GemmBackendConfig cfg = {0};
  cfg.alpha_real = f.alpha;
  cfg.beta = f.c ? 1 : 0;
  cfg.dnums = dn;
  for (int k = 0; k < dot->nprecision && k < 2; k++)
    cfg.precision[k] = dot->precision[k];
  cfg.epilogue = epilogue_of(&f);
  HloInstr *ops[4] = {a, b};
  int n = 2;
  if (f.c)
    ops[n++] = f.c;
  if (f.bias)
    ops[n++] = f.bias;
  int64_t wsz = gpu ? gpu_workspace(dot->shape, a->shape, &dn) : 0;
  Shape *ws = shape_array(ar, ET_S8, 1, &wsz);
  shape_set_default_layout(ar, ws);
  Shape *elems[2] = {dot->shape, ws};
  HloInstr *call = ir_new(e, c, HLO_CUSTOM_CALL, shape_tuple(ar, 2, elems), n, ops);
  call->cc = ARENA_NEW(ar, CustomCallAttrs);
  call->cc->target = arena_strdup(
      ar, libcall_target_name(gpu ? LIBCALL_CUBLASLT_MATMUL : LIBCALL_ONEDNN_MATMUL));
  call->cc->api_version = CC_API_ORIGINAL;
  StrBuf text;
  sb_init(&text);
  gemm_config_print(&text, &cfg);
  call->backend_config = arena_strdup(ar, text.s);
  sb_free(&text);
  call->metadata = dot->metadata;
  HloInstr *res = ir_gte(e, c, call, 0);
  ir_replace(e, f.out, res);
  return true;
}

bool pass_gemm_rewriter(HloModule *m, PassContext *ctx) {
  bool gpu = ctx->target == PASS_TARGET_GPU;
  IrEdit *e = ir_begin(m);
  bool changed = false;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *c = m->comps[ci];
    if (c->fusion_instr)
      continue;
    for (int k = 0; k < c->ninstrs; k++) {
      HloInstr *i = c->instrs[k];
      if (ir_removed(i) || i->op != HLO_DOT || !eligible(i) ||
          ir_has_control_deps(e, i))
        continue;
      changed |= rewrite(e, c, i, gpu);
    }
  }
  return ir_end(e, changed);
}
