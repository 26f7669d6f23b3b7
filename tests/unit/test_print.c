/*
 * test_print.c - unit tests of the printer (lib/hlo/print*.c) on IR built
 * directly in C: each attribute family prints exactly as XLA's long text
 * form has it, and the module, computation and instruction skeletons.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../lib/hlo/hlo.h"
#include "../../lib/hlo/print_internal.h"

static HloModule *M;
static Arena *A;
static HloComp *C;

static void setup(void) {
  M = hlo_module_new("m");
  A = M->arena;
  C = hlo_comp_new(M, "comp");
}
static void teardown(void) { hlo_module_free(M); }

TestSuite(print, .init = setup, .fini = teardown);

/*
 * Builders
 */

static Shape *f32(int rank, ...) {
  int64_t d[8];
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++)
    d[i] = va_arg(ap, int64_t);
  va_end(ap);
  return shape_array(A, ET_F32, rank, d);
}

static HloInstr *param(HloComp *c, const char *name, int64_t n, Shape *s) {
  HloInstr *p = hlo_instr_new(c, HLO_PARAMETER, s, 0, NULL);
  p->name = arena_strdup(A, name);
  p->param_number = n;
  HloInstr **ps = ARENA_ARRAY(A, HloInstr *, n + 1);
  if (c->nparams)
    memcpy(ps, c->params, sizeof(HloInstr *) * (size_t)c->nparams);
  ps[n] = p;
  c->params = ps;
  c->nparams = (int)n + 1;
  return p;
}

static HloInstr *instr(HloComp *c, const char *name, HloOp op, Shape *s, int n,
                       ...) {
  HloInstr *ops[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    ops[i] = va_arg(ap, HloInstr *);
  va_end(ap);
  HloInstr *i = hlo_instr_new(c, op, s, n, ops);
  i->name = arena_strdup(A, name);
  c->root = i;
  return i;
}

static I64List list(int n, ...) {
  I64List l = {n, ARENA_ARRAY(A, int64_t, n ? n : 1)};
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++)
    l.v[i] = va_arg(ap, int64_t);
  va_end(ap);
  return l;
}

static char *print_instr_opts(const HloInstr *i, const PrintOptions *o) {
  StrBuf b;
  sb_init(&b);
  hlo_print_instr(&b, i, o);
  return sb_detach(&b);
}

static void expect_instr(const HloInstr *i, const char *want) {
  char *got = print_instr_opts(i, &print_options_default);
  cr_expect_str_eq(got, want);
  free(got);
}

static void expect_module(const char *want) {
  StrBuf b;
  sb_init(&b);
  hlo_print_module(&b, M, &print_options_default);
  cr_expect_str_eq(b.s, want);
  sb_free(&b);
}

/* x = f32[2] parameter(0), y = f32[2] parameter(1) in C. */
static HloInstr *X, *Y;
static void xy(void) {
  X = param(C, "x", 0, f32(1, (int64_t)2));
  Y = param(C, "y", 1, f32(1, (int64_t)2));
}

/*
 * Module, computations, instructions
 */

Test(print, module_skeleton) {
  HloComp *add = C;
  add->name = "add";
  HloInstr *a = param(add, "a", 0, shape_scalar(A, ET_F32));
  HloInstr *b = param(add, "b", 1, shape_scalar(A, ET_F32));
  instr(add, "sum", HLO_ADD, shape_scalar(A, ET_F32), 2, a, b);

  HloComp *e = hlo_comp_new(M, "main");
  e->is_entry = true;
  M->entry = e;
  HloInstr *p = param(e, "p", 0, f32(2, (int64_t)2, (int64_t)3));
  HloInstr *z = instr(e, "zero", HLO_CONSTANT, shape_scalar(A, ET_F32), 0);
  z->literal = NULL;
  HloInstr *r = instr(e, "r", HLO_REDUCE, f32(1, (int64_t)2), 2, p, z);
  r->dims = list(1, (int64_t)1);
  r->ncalled = 1;
  r->called = ARENA_ARRAY(A, HloComp *, 1);
  r->called[0] = add;
  expect_module(
      "HloModule m\n\n"
      "%add (a: f32[], b: f32[]) -> f32[] {\n"
      "  %a = f32[] parameter(0)\n"
      "  %b = f32[] parameter(1)\n"
      "  ROOT %sum = f32[] add(f32[] %a, f32[] %b)\n"
      "}\n\n"
      "ENTRY %main (p: f32[2,3]) -> f32[2] {\n"
      "  %p = f32[2,3]{1,0} parameter(0)\n"
      "  %zero = f32[] constant({...})\n"
      "  ROOT %r = f32[2]{0} reduce(f32[2,3]{1,0} %p, f32[] %zero), "
      "dimensions={1}, to_apply=%add\n"
      "}\n\n");
}

Test(print, computation_tuple_signature_and_thread) {
  Shape *e[] = {f32(1, (int64_t)4), shape_scalar(A, ET_S32)};
  HloInstr *p = param(C, "t", 0, shape_tuple(A, 2, e));
  HloInstr *g = instr(C, "g", HLO_GET_TUPLE_ELEMENT, f32(1, (int64_t)4), 1, p);
  g->tuple_index = 0;
  C->execution_thread = "host";
  StrBuf b;
  sb_init(&b);
  hlo_print_comp(&b, C, NULL);
  cr_expect_str_eq(b.s,
                   "%comp (t: (f32[4], s32[])) -> f32[4] {\n"
                   "  %t = (f32[4]{0}, s32[]) parameter(0)\n"
                   "  ROOT %g = f32[4]{0} get-tuple-element((f32[4]{0}, s32[]) "
                   "%t), index=0\n"
                   "}, execution_thread=\"host\"");
  sb_clear(&b);
  C->execution_thread = "main";
  hlo_print_comp(&b, C, NULL);
  cr_expect(strstr(b.s, "execution_thread") == NULL);
  sb_free(&b);
}

Test(print, operand_index_comments) {
  HloInstr *ops[7];
  Shape *es[7];
  for (int k = 0; k < 7; k++) {
    char n[16];
    snprintf(n, sizeof n, "p%d", k);
    ops[k] = param(C, n, k, shape_scalar(A, ET_S32));
    es[k] = ops[k]->shape;
  }
  HloInstr *t = hlo_instr_new(C, HLO_TUPLE, shape_tuple(A, 7, es), 7, ops);
  t->name = "t";
  expect_instr(t, "%t = (s32[], s32[], s32[], s32[], s32[], /*index=5*/s32[], "
                  "s32[]) tuple(s32[] %p0, s32[] %p1, s32[] %p2, s32[] %p3, "
                  "s32[] %p4, /*index=5*/s32[] %p5, s32[] %p6)");
}

Test(print, header_attributes_in_xla_order) {
  HloComp *e = C;
  e->is_entry = true;
  M->entry = e;
  param(e, "p", 0, f32(1, (int64_t)2));
  M->is_scheduled = true;
  M->nio_alias = 2;
  M->io_alias = ARENA_ARRAY(A, AliasEntry, 2);
  M->io_alias[0] = (AliasEntry){list(1, (int64_t)0), 0, list(0), 1};
  M->io_alias[1] = (AliasEntry){list(1, (int64_t)1), 1, list(1, (int64_t)2), 2};
  M->nbuffer_donors = 1;
  M->buffer_donors = ARENA_ARRAY(A, AliasEntry, 1);
  M->buffer_donors[0] = (AliasEntry){list(0), 3, list(0), 0};
  M->alias_passthrough_params = true;
  ProgramShape *ps = ARENA_NEW(A, ProgramShape);
  ps->nparams = 6;
  ps->params = ARENA_ARRAY(A, Shape *, 6);
  for (int k = 0; k < 6; k++)
    ps->params[k] = k == 5 ? shape_scalar(A, ET_S32) : f32(1, (int64_t)2);
  ps->result = f32(1, (int64_t)2);
  M->entry_layout = ps;
  bool spmd[] = {true, false};
  M->nspmd_params = 2;
  M->spmd_params = spmd;
  bool out[] = {true};
  M->nspmd_output = 1;
  M->spmd_output = out;
  M->replica_count = 2;
  M->num_partitions = 8;
  KVList *fa = ARENA_NEW(A, KVList);
  KeyValue kv[] = {{"zeta", "1"}, {"alpha", "{\"x\": 1}"}};
  fa->n = 2;
  fa->kv = kv;
  M->frontend_attrs = fa;
  RawAttr raw = {"origin_recovery_table", "{}"};
  M->nraw_attrs = 1;
  M->raw_attrs = &raw;
  StrBuf b;
  sb_init(&b);
  hlo_print_module(&b, M, NULL);
  const char *want =
      "HloModule m, is_scheduled=true, input_output_alias={ {0}: (0, {}, "
      "may-alias), {1}: (1, {2}, must-alias) }, buffer_donor={ (3, {}) }, "
      "alias_passthrough_params=true, entry_computation_layout={(f32[2]{0}, "
      "f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/s32[])->"
      "f32[2]{0}}, allow_spmd_sharding_propagation_to_parameters={true,false}, "
      "allow_spmd_sharding_propagation_to_output={true}, replica_count=2, "
      "num_partitions=8, frontend_attributes={alpha={\"x\": 1},zeta=\"1\"}, "
      "origin_recovery_table={}\n\n";
  cr_expect(strncmp(b.s, want, strlen(want)) == 0, "got %s", b.s);
  sb_free(&b);
}

Test(print, header_defaults_left_out) {
  bool f[] = {false};
  M->nspmd_params = 1;
  M->spmd_params = f;
  M->replica_count = 1;
  M->num_partitions = 1;
  instr(C, "c", HLO_CONSTANT, shape_scalar(A, ET_F32), 0);
  expect_module("HloModule m\n\n%comp () -> f32[] {\n"
                "  ROOT %c = f32[] constant({...})\n}\n\n");
}

Test(print, trailer_follows_header) {
  M->trailer = "FileNames\n1 \"a.py\"\n\nStackFrames\n1 {file_location_id=1 "
               "parent_frame_id=1}\n";
  instr(C, "c", HLO_CONSTANT, shape_scalar(A, ET_F32), 0);
  const char *want = "HloModule m\n\nFileNames\n1 \"a.py\"\n\nStackFrames\n1 "
                     "{file_location_id=1 parent_frame_id=1}\n\n\n%comp";
  StrBuf b;
  sb_init(&b);
  hlo_print_module(&b, M, NULL);
  cr_expect(strncmp(b.s, want, strlen(want)) == 0, "got %s", b.s);
  sb_clear(&b);
  PrintOptions o = print_options_default;
  o.print_metadata = false;
  hlo_print_module(&b, M, &o);
  cr_expect(strstr(b.s, "FileNames") == NULL);
  sb_free(&b);
}

/*
 * Constants
 */

Test(print, constants) {
  HloInstr *c = instr(C, "c", HLO_CONSTANT, shape_scalar(A, ET_S32), 0);
  c->literal = literal_new(A, c->shape);
  literal_set_s64(c->literal, 0, 42);
  expect_instr(c, "%c = s32[] constant(42)");
  Shape *s = shape_array(A, ET_S32, 1, (int64_t[]){3});
  HloInstr *v = instr(C, "v", HLO_CONSTANT, s, 0);
  v->literal = literal_new(A, s);
  for (int k = 0; k < 3; k++)
    literal_set_s64(v->literal, k, k + 1);
  expect_instr(v, "%v = s32[3]{0} constant({1, 2, 3})");
  v->literal->elided = true;
  expect_instr(v, "%v = s32[3]{0} constant({...})");
}

Test(print, large_constants_elided_on_request) {
  Shape *s = shape_array(A, ET_S32, 1, (int64_t[]){11});
  HloInstr *v = instr(C, "v", HLO_CONSTANT, s, 0);
  v->literal = literal_new(A, s);
  PrintOptions o = print_options_default;
  o.print_large_constants = false;
  char *got = print_instr_opts(v, &o);
  cr_expect_str_eq(got, "%v = s32[11]{0} constant({...})");
  free(got);
  got = print_instr_opts(v, NULL);
  cr_expect(strstr(got, "{0, 0, 0") != NULL, "got %s", got);
  free(got);
}

/*
 * Shape-manipulating attributes
 */

Test(print, dimensions_slice_padding) {
  xy();
  HloInstr *br = instr(C, "br", HLO_BROADCAST, f32(2, (int64_t)2, (int64_t)3), 1, X);
  br->dims = list(1, (int64_t)0);
  expect_instr(br, "%br = f32[2,3]{1,0} broadcast(f32[2]{0} %x), dimensions={0}");
  br->dims = list(0);
  expect_instr(br, "%br = f32[2,3]{1,0} broadcast(f32[2]{0} %x), dimensions={}");

  HloInstr *sl = instr(C, "sl", HLO_SLICE, f32(2, (int64_t)2, (int64_t)1), 1, br);
  sl->slice = ARENA_ARRAY(A, SliceDim, 2);
  sl->slice[0] = (SliceDim){0, 2, 1};
  sl->slice[1] = (SliceDim){1, 3, 1};
  expect_instr(sl, "%sl = f32[2,1]{1,0} slice(f32[2,3]{1,0} %br), "
                   "slice={[0:2], [1:3]}");
  sl->slice[1].stride = 2;
  expect_instr(sl, "%sl = f32[2,1]{1,0} slice(f32[2,3]{1,0} %br), "
                   "slice={[0:2:1], [1:3:2]}");

  HloInstr *pv = instr(C, "pv", HLO_CONSTANT, shape_scalar(A, ET_F32), 0);
  HloInstr *pd = instr(C, "pd", HLO_PAD, f32(2, (int64_t)3, (int64_t)7), 2, br, pv);
  pd->padding = ARENA_ARRAY(A, PadDim, 2);
  pd->padding[0] = (PadDim){0, 1, 0};
  pd->padding[1] = (PadDim){2, 2, 0};
  expect_instr(pd, "%pd = f32[3,7]{1,0} pad(f32[2,3]{1,0} %br, f32[] %pv), "
                   "padding=0_1x2_2");
  pd->padding[1].interior = 1;
  pd->padding[0].lo = -1;
  expect_instr(pd, "%pd = f32[3,7]{1,0} pad(f32[2,3]{1,0} %br, f32[] %pv), "
                   "padding=-1_1_0x2_2_1");

  HloInstr *io = instr(C, "io", HLO_IOTA, shape_array(A, ET_S32, 1, (int64_t[]){4}), 0);
  io->iota_dim = 0;
  expect_instr(io, "%io = s32[4]{0} iota(), iota_dimension=0");

  HloInstr *ds = instr(C, "ds", HLO_DYNAMIC_SLICE, f32(1, (int64_t)1), 2, X, pv);
  ds->dynamic_slice_sizes = list(1, (int64_t)1);
  expect_instr(ds, "%ds = f32[1]{0} dynamic-slice(f32[2]{0} %x, f32[] %pv), "
                   "dynamic_slice_sizes={1}");

  HloInstr *so = instr(C, "so", HLO_SORT, f32(1, (int64_t)2), 1, X);
  so->dims = list(1, (int64_t)0);
  expect_instr(so, "%so = f32[2]{0} sort(f32[2]{0} %x), dimensions={0}");
  so->is_stable = true;
  expect_instr(so, "%so = f32[2]{0} sort(f32[2]{0} %x), dimensions={0}, "
                   "is_stable=true");

  HloInstr *gd = instr(C, "gd", HLO_GET_DIMENSION_SIZE, shape_scalar(A, ET_S32), 1, X);
  gd->dims = list(1, (int64_t)0);
  expect_instr(gd, "%gd = s32[] get-dimension-size(f32[2]{0} %x), dimensions={0}");
}

Test(print, windows) {
  xy();
  HloInstr *init = instr(C, "i", HLO_CONSTANT, shape_scalar(A, ET_F32), 0);
  HloInstr *rw = instr(C, "rw", HLO_REDUCE_WINDOW, f32(1, (int64_t)1), 2, X, init);
  Window *w = ARENA_NEW(A, Window);
  w->ndims = 2;
  w->dims = ARENA_ARRAY(A, WindowDim, 2);
  w->dims[0] = (WindowDim){3, 1, 0, 0, 1, 1, false};
  w->dims[1] = (WindowDim){3, 1, 0, 0, 1, 1, false};
  rw->window = w;
  expect_instr(rw, "%rw = f32[1]{0} reduce-window(f32[2]{0} %x, f32[] %i), "
                   "window={size=3x3}");
  w->dims[0] = (WindowDim){3, 2, 1, 1, 2, 1, false};
  w->dims[1] = (WindowDim){1, 1, 0, 2, 1, 3, true};
  expect_instr(rw, "%rw = f32[1]{0} reduce-window(f32[2]{0} %x, f32[] %i), "
                   "window={size=3x1 stride=2x1 pad=1_1x0_2 lhs_dilate=2x1 "
                   "rhs_dilate=1x3 rhs_reversal=0x1}");
  w->ndims = 0;
  expect_instr(rw, "%rw = f32[1]{0} reduce-window(f32[2]{0} %x, f32[] %i)");
}

Test(print, convolution) {
  Shape *in = f32(4, (int64_t)1, (int64_t)8, (int64_t)8, (int64_t)3);
  HloInstr *lhs = param(C, "lhs", 0, in);
  HloInstr *rhs = param(C, "rhs", 1, f32(4, (int64_t)3, (int64_t)3, (int64_t)3, (int64_t)16));
  HloInstr *cv = instr(C, "cv", HLO_CONVOLUTION,
                       f32(4, (int64_t)1, (int64_t)8, (int64_t)8, (int64_t)16), 2, lhs, rhs);
  ConvAttrs *ca = ARENA_NEW(A, ConvAttrs);
  Window *w = ARENA_NEW(A, Window);
  w->ndims = 2;
  w->dims = ARENA_ARRAY(A, WindowDim, 2);
  w->dims[0] = w->dims[1] = (WindowDim){3, 1, 1, 1, 1, 1, false};
  ca->window = w;
  ConvDnums *d = ARENA_NEW(A, ConvDnums);
  d->nspatial = 2;
  d->input_batch = 0, d->input_feature = 3;
  d->input_spatial = list(2, (int64_t)1, (int64_t)2).v;
  d->kernel_input_feature = 2, d->kernel_output_feature = 3;
  d->kernel_spatial = list(2, (int64_t)0, (int64_t)1).v;
  d->output_batch = 0, d->output_feature = 3;
  d->output_spatial = list(2, (int64_t)1, (int64_t)2).v;
  ca->dnums = d;
  cv->conv = ca;
  const char *head = "%cv = f32[1,8,8,16]{3,2,1,0} convolution(f32[1,8,8,3]{3,2,1,0} "
                     "%lhs, f32[3,3,3,16]{3,2,1,0} %rhs), window={size=3x3 "
                     "pad=1_1x1_1}, dim_labels=b01f_01io->b01f";
  expect_instr(cv, head);
  ca->feature_group_count = 1;
  ca->batch_group_count = 2;
  cv->nprecision = 2;
  cv->precision = ARENA_ARRAY(A, Precision, 2);
  cv->precision[0] = PREC_HIGHEST;
  char want[512];
  snprintf(want, sizeof want,
           "%s, batch_group_count=2, operand_precision={highest,default}", head);
  expect_instr(cv, want);
  /* Spatial labels are numbered in order; unlabeled dimensions print '?'. */
  d->input_batch = 4;
  d->output_feature = 5;
  cv->nprecision = 0;
  ca->batch_group_count = 0;
  expect_instr(cv, "%cv = f32[1,8,8,16]{3,2,1,0} convolution(f32[1,8,8,3]{3,2,1,0} "
                   "%lhs, f32[3,3,3,16]{3,2,1,0} %rhs), window={size=3x3 "
                   "pad=1_1x1_1}, dim_labels=?01fb_01io->b01??f");
}

Test(print, dot_family) {
  HloInstr *a = param(C, "a", 0, f32(3, (int64_t)4, (int64_t)2, (int64_t)3));
  HloInstr *b = param(C, "b", 1, f32(3, (int64_t)4, (int64_t)3, (int64_t)5));
  HloInstr *d = instr(C, "d", HLO_DOT, f32(3, (int64_t)4, (int64_t)2, (int64_t)5), 2, a, b);
  d->dot = ARENA_NEW(A, DotDnums);
  d->dot->lhs_contracting = list(1, (int64_t)2);
  d->dot->rhs_contracting = list(1, (int64_t)1);
  const char *ops = "%d = f32[4,2,5]{2,1,0} dot(f32[4,2,3]{2,1,0} %a, "
                    "f32[4,3,5]{2,1,0} %b)";
  char want[512];
  snprintf(want, sizeof want, "%s, lhs_contracting_dims={2}, rhs_contracting_dims={1}",
           ops);
  expect_instr(d, want);
  d->dot->lhs_batch = list(1, (int64_t)0);
  d->dot->rhs_batch = list(1, (int64_t)0);
  d->nprecision = 2;
  d->precision = ARENA_ARRAY(A, Precision, 2);
  d->algorithm_dot = "dot_bf16_bf16_f32";
  snprintf(want, sizeof want,
           "%s, lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
           "rhs_contracting_dims={1}, algorithm=dot_bf16_bf16_f32", ops);
  expect_instr(d, want);
  d->precision[1] = PREC_HIGH;
  d->algorithm_dot = NULL;
  snprintf(want, sizeof want,
           "%s, lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
           "rhs_contracting_dims={1}, operand_precision={default,high}", ops);
  expect_instr(d, want);

  HloInstr *g = param(C, "g", 2, shape_array(A, ET_S32, 1, (int64_t[]){4}));
  HloInstr *r = instr(C, "r", HLO_RAGGED_DOT, f32(2, (int64_t)2, (int64_t)5), 3, a, b, g);
  r->dot = ARENA_NEW(A, DotDnums);
  r->dot->lhs_contracting = list(1, (int64_t)1);
  r->dot->rhs_contracting = list(1, (int64_t)1);
  r->dot->lhs_ragged = list(1, (int64_t)0);
  r->dot->rhs_group = list(1, (int64_t)0);
  expect_instr(r, "%r = f32[2,5]{1,0} ragged-dot(f32[4,2,3]{2,1,0} %a, "
                  "f32[4,3,5]{2,1,0} %b, s32[4]{0} %g), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}");
}

Test(print, gather_scatter) {
  HloInstr *op = param(C, "op", 0, f32(2, (int64_t)3, (int64_t)3));
  HloInstr *ix = param(C, "ix", 1, shape_array(A, ET_S32, 2, (int64_t[]){2, 1}));
  HloInstr *g = instr(C, "g", HLO_GATHER, f32(2, (int64_t)2, (int64_t)3), 2, op, ix);
  g->gather = ARENA_NEW(A, GatherDnums);
  g->gather->offset_dims = list(1, (int64_t)1);
  g->gather->collapsed_slice_dims = list(1, (int64_t)0);
  g->gather->start_index_map = list(1, (int64_t)0);
  g->gather->index_vector_dim = 1;
  g->gather_slice_sizes = list(2, (int64_t)1, (int64_t)3);
  const char *gh = "%g = f32[2,3]{1,0} gather(f32[3,3]{1,0} %op, s32[2,1]{1,0} %ix), "
                   "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}";
  char want[600];
  snprintf(want, sizeof want, "%s, index_vector_dim=1, slice_sizes={1,3}", gh);
  expect_instr(g, want);
  g->gather->operand_batching_dims = list(1, (int64_t)2);
  g->gather->start_indices_batching_dims = list(1, (int64_t)0);
  g->indices_are_sorted = true;
  snprintf(want, sizeof want,
           "%s, operand_batching_dims={2}, start_indices_batching_dims={0}, "
           "index_vector_dim=1, slice_sizes={1,3}, indices_are_sorted=true", gh);
  expect_instr(g, want);

  HloComp *add = hlo_comp_new(M, "add");
  HloInstr *up = param(C, "up", 2, f32(2, (int64_t)2, (int64_t)3));
  HloInstr *s = instr(C, "s", HLO_SCATTER, f32(2, (int64_t)3, (int64_t)3), 3, op, ix, up);
  s->scatter = ARENA_NEW(A, ScatterDnums);
  s->scatter->update_window_dims = list(1, (int64_t)1);
  s->scatter->inserted_window_dims = list(1, (int64_t)0);
  s->scatter->scatter_dims_to_operand_dims = list(1, (int64_t)0);
  s->scatter->index_vector_dim = 1;
  s->unique_indices = true;
  s->ncalled = 1;
  s->called = &add;
  expect_instr(s, "%s = f32[3,3]{1,0} scatter(f32[3,3]{1,0} %op, s32[2,1]{1,0} %ix, "
                  "f32[2,3]{1,0} %up), update_window_dims={1}, "
                  "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                  "index_vector_dim=1, unique_indices=true, to_apply=%add");
}

Test(print, compare_and_misc_enums) {
  xy();
  HloInstr *c = instr(C, "c", HLO_COMPARE, shape_array(A, ET_PRED, 1, (int64_t[]){2}),
                      2, X, Y);
  c->cmp_dir = CMP_LT;
  expect_instr(c, "%c = pred[2]{0} compare(f32[2]{0} %x, f32[2]{0} %y), direction=LT");
  c->cmp_type = CMPT_TOTALORDER;
  expect_instr(c, "%c = pred[2]{0} compare(f32[2]{0} %x, f32[2]{0} %y), "
                  "direction=LT, type=TOTALORDER");

  HloInstr *r = instr(C, "r", HLO_RNG, f32(1, (int64_t)2), 2, X, Y);
  r->rng_dist = RNG_NORMAL;
  expect_instr(r, "%r = f32[2]{0} rng(f32[2]{0} %x, f32[2]{0} %y), "
                  "distribution=rng_normal");
  HloInstr *rb = instr(C, "rb", HLO_RNG_BIT_GENERATOR, f32(1, (int64_t)2), 1, X);
  rb->rng_algo = RNG_PHILOX;
  expect_instr(rb, "%rb = f32[2]{0} rng-bit-generator(f32[2]{0} %x), algorithm=rng_philox");

  HloInstr *rp = instr(C, "rp", HLO_REDUCE_PRECISION, f32(1, (int64_t)2), 1, X);
  rp->exponent_bits = 5, rp->mantissa_bits = 10;
  expect_instr(rp, "%rp = f32[2]{0} reduce-precision(f32[2]{0} %x), exponent_bits=5, "
                   "mantissa_bits=10");

  HloInstr *f = instr(C, "f", HLO_FFT, f32(1, (int64_t)2), 1, X);
  f->fft_type = FFT_IRFFT;
  f->fft_length = list(1, (int64_t)2);
  expect_instr(f, "%f = f32[2]{0} fft(f32[2]{0} %x), fft_type=IRFFT, fft_length={2}");

  HloInstr *bn = instr(C, "bn", HLO_BATCH_NORM_TRAINING, f32(1, (int64_t)2), 3, X, Y, Y);
  bn->epsilon = 0.001;
  bn->feature_index = 1;
  expect_instr(bn, "%bn = f32[2]{0} batch-norm-training(f32[2]{0} %x, f32[2]{0} %y, "
                   "f32[2]{0} %y), epsilon=0.001, feature_index=1");

  HloInstr *ts = instr(C, "ts", HLO_TRIANGULAR_SOLVE, f32(1, (int64_t)2), 2, X, Y);
  ts->tri_left_side = true;
  ts->tri_transpose_a = TRI_NO_TRANSPOSE;
  expect_instr(ts, "%ts = f32[2]{0} triangular-solve(f32[2]{0} %x, f32[2]{0} %y), "
                   "left_side=true, transpose_a=NO_TRANSPOSE");
  ts->tri_lower = ts->tri_unit_diagonal = true;
  ts->tri_transpose_a = TRI_ADJOINT;
  expect_instr(ts, "%ts = f32[2]{0} triangular-solve(f32[2]{0} %x, f32[2]{0} %y), "
                   "left_side=true, lower=true, unit_diagonal=true, transpose_a=ADJOINT");

  HloInstr *ch = instr(C, "ch", HLO_CHOLESKY, f32(1, (int64_t)2), 1, X);
  expect_instr(ch, "%ch = f32[2]{0} cholesky(f32[2]{0} %x)");
  ch->cholesky_lower = true;
  expect_instr(ch, "%ch = f32[2]{0} cholesky(f32[2]{0} %x), lower=true");

  HloInstr *tk = instr(C, "tk", HLO_TOPK, f32(1, (int64_t)1), 1, X);
  tk->topk_k = 1;
  tk->topk_largest = true;
  expect_instr(tk, "%tk = f32[1]{0} topk(f32[2]{0} %x), k=1, largest=true");

  HloInstr *cs = instr(C, "cs", HLO_COPY_START, f32(1, (int64_t)2), 1, X);
  expect_instr(cs, "%cs = f32[2]{0} copy-start(f32[2]{0} %x)");
  cs->cross_program_prefetch_index = 0;
  expect_instr(cs, "%cs = f32[2]{0} copy-start(f32[2]{0} %x), "
                   "cross_program_prefetch_index=0");
}

Test(print, feeds_and_domain) {
  HloInstr *tok = instr(C, "tok", HLO_AFTER_ALL, shape_token(A), 0);
  Shape *ie[] = {f32(1, (int64_t)2), shape_token(A)};
  HloInstr *in = instr(C, "in", HLO_INFEED, shape_tuple(A, 2, ie), 1, tok);
  expect_instr(in, "%in = (f32[2]{0}, token[]) infeed(token[] %tok)");
  in->infeed_config = "cfg\"1";
  expect_instr(in, "%in = (f32[2]{0}, token[]) infeed(token[] %tok), "
                   "infeed_config=\"cfg\\\"1\"");
  HloInstr *x = param(C, "x", 0, f32(1, (int64_t)2));
  HloInstr *out = instr(C, "out", HLO_OUTFEED, shape_token(A), 2, x, tok);
  expect_instr(out, "%out = token[] outfeed(f32[2]{0} %x, token[] %tok), "
                    "outfeed_shape=f32[2]{0}");
  out->outfeed_config = "c";
  out->outfeed_shape = shape_scalar(A, ET_S32);
  expect_instr(out, "%out = token[] outfeed(f32[2]{0} %x, token[] %tok), "
                    "outfeed_shape=s32[], outfeed_config=\"c\"");
  HloInstr *dm = instr(C, "dm", HLO_DOMAIN, f32(1, (int64_t)2), 1, x);
  dm->domain = "{kind=\"sharding\", entry={maximal device=0}, exit={replicated}}";
  expect_instr(dm, "%dm = f32[2]{0} domain(f32[2]{0} %x), domain={kind=\"sharding\", "
                   "entry={maximal device=0}, exit={replicated}}");
}

/*
 * Called computations
 */

static HloComp *comp(const char *name) { return hlo_comp_new(M, name); }

static void set_called(HloInstr *i, int n, ...) {
  i->ncalled = n;
  i->called = ARENA_ARRAY(A, HloComp *, n);
  va_list ap;
  va_start(ap, n);
  for (int k = 0; k < n; k++)
    i->called[k] = va_arg(ap, HloComp *);
  va_end(ap);
}

Test(print, called_computations) {
  xy();
  HloInstr *fu = instr(C, "fu", HLO_FUSION, f32(1, (int64_t)2), 2, X, Y);
  fu->fusion_kind = FUSION_LOOP;
  set_called(fu, 1, comp("fused"));
  expect_instr(fu, "%fu = f32[2]{0} fusion(f32[2]{0} %x, f32[2]{0} %y), kind=kLoop, "
                   "calls=%fused");

  HloInstr *wh = instr(C, "wh", HLO_WHILE, f32(1, (int64_t)2), 1, X);
  set_called(wh, 2, comp("cond"), comp("body"));
  expect_instr(wh, "%wh = f32[2]{0} while(f32[2]{0} %x), condition=%cond, body=%body");

  HloInstr *pr = param(C, "pr", 2, shape_scalar(A, ET_PRED));
  HloInstr *cd = instr(C, "cd", HLO_CONDITIONAL, f32(1, (int64_t)2), 3, pr, X, Y);
  set_called(cd, 2, comp("t"), comp("f"));
  expect_instr(cd, "%cd = f32[2]{0} conditional(pred[] %pr, f32[2]{0} %x, f32[2]{0} "
                   "%y), true_computation=%t, false_computation=%f");
  HloInstr *ix = param(C, "ix", 3, shape_scalar(A, ET_S32));
  HloInstr *cb = instr(C, "cb", HLO_CONDITIONAL, f32(1, (int64_t)2), 3, ix, X, Y);
  set_called(cb, 3, comp("b0"), comp("b1"), comp("b2"));
  expect_instr(cb, "%cb = f32[2]{0} conditional(s32[] %ix, f32[2]{0} %x, f32[2]{0} "
                   "%y), branch_computations={%b0, %b1, %b2}");

  HloInstr *ss = instr(C, "ss", HLO_SELECT_AND_SCATTER, f32(1, (int64_t)2), 3, X, Y, ix);
  set_called(ss, 2, comp("ge"), comp("add"));
  expect_instr(ss, "%ss = f32[2]{0} select-and-scatter(f32[2]{0} %x, f32[2]{0} %y, "
                   "s32[] %ix), select=%ge, scatter=%add");

  HloInstr *ca = instr(C, "ca", HLO_CALL, f32(1, (int64_t)2), 1, X);
  set_called(ca, 1, comp("callee"));
  ca->is_composite = true;
  expect_instr(ca, "%ca = f32[2]{0} call(f32[2]{0} %x), to_apply=%callee, "
                   "is_composite=true");

  HloInstr *mp = instr(C, "mp", HLO_MAP, f32(1, (int64_t)2), 2, X, Y);
  mp->dims = list(1, (int64_t)0);
  set_called(mp, 1, comp("mul"));
  expect_instr(mp, "%mp = f32[2]{0} map(f32[2]{0} %x, f32[2]{0} %y), dimensions={0}, "
                   "to_apply=%mul");
}

Test(print, custom_calls) {
  xy();
  HloInstr *cc = instr(C, "cc", HLO_CUSTOM_CALL, f32(1, (int64_t)2), 2, X, Y);
  cc->cc = ARENA_NEW(A, CustomCallAttrs);
  cc->cc->target = "my\tcall";
  cc->cc->api_version = CC_API_ORIGINAL;
  const char *h = "%cc = f32[2]{0} custom-call(f32[2]{0} %x, f32[2]{0} %y)";
  char want[700];
  snprintf(want, sizeof want, "%s, custom_call_target=\"my\\tcall\"", h);
  expect_instr(cc, want);
  cc->cc->has_layout_constraints = true;
  cc->cc->nlayout_constraints = 2;
  cc->cc->layout_constraints = ARENA_ARRAY(A, Shape *, 2);
  cc->cc->layout_constraints[0] = f32(1, (int64_t)2);
  cc->cc->layout_constraints[1] = f32(1, (int64_t)2);
  cc->cc->has_side_effect = true;
  cc->cc->naliases = 1;
  cc->cc->aliases = ARENA_ARRAY(A, AliasEntry, 1);
  cc->cc->aliases[0] = (AliasEntry){list(0), 1, list(0), 0};
  cc->cc->schedule = "SCHEDULE_LATEST";
  cc->cc->api_version = CC_API_TYPED_FFI;
  cc->backend_config = "{alpha = 1.0 : f32}";
  snprintf(want, sizeof want,
           "%s, custom_call_target=\"my\\tcall\", operand_layout_constraints="
           "{f32[2]{0}, f32[2]{0}}, custom_call_has_side_effect=true, "
           "output_to_operand_aliasing={{}: (1, {})}, schedule=SCHEDULE_LATEST, "
           "api_version=API_VERSION_TYPED_FFI, backend_config={alpha = 1.0 : f32}",
           h);
  expect_instr(cc, want);

  HloInstr *c2 = instr(C, "c2", HLO_CUSTOM_CALL, f32(1, (int64_t)2), 1, X);
  c2->cc = ARENA_NEW(A, CustomCallAttrs);
  c2->cc->target = "t";
  c2->cc->literal = literal_new(A, shape_scalar(A, ET_S32));
  literal_set_s64(c2->cc->literal, 0, 1);
  set_called(c2, 2, comp("a"), comp("b"));
  expect_instr(c2, "%c2 = f32[2]{0} custom-call(f32[2]{0} %x), custom_call_target=\"t\", "
                   "literal=s32[] 1, called_computations={%a, %b}");
  c2->ncalled = 1;
  expect_instr(c2, "%c2 = f32[2]{0} custom-call(f32[2]{0} %x), custom_call_target=\"t\", "
                   "literal=s32[] 1, to_apply=%a");
  c2->cc->uses_called_computations = true;
  expect_instr(c2, "%c2 = f32[2]{0} custom-call(f32[2]{0} %x), custom_call_target=\"t\", "
                   "literal=s32[] 1, called_computations={%a}");
}

/*
 * Collectives
 */

Test(print, collectives) {
  xy();
  HloComp *add = comp("add");
  HloInstr *ar = instr(C, "ar", HLO_ALL_REDUCE, f32(1, (int64_t)2), 1, X);
  set_called(ar, 1, add);
  expect_instr(ar, "%ar = f32[2]{0} all-reduce(f32[2]{0} %x), replica_groups={}, "
                   "to_apply=%add");
  ReplicaGroups *rg = ARENA_NEW(A, ReplicaGroups);
  rg->ngroups = 2;
  rg->groups = ARENA_ARRAY(A, I64List, 2);
  rg->groups[0] = list(2, (int64_t)0, (int64_t)1);
  rg->groups[1] = list(2, (int64_t)2, (int64_t)3);
  ar->replica_groups = rg;
  ar->has_channel_id = true;
  ar->channel_id = 1;
  ar->use_global_device_ids = true;
  ar->constrain_layout = true;
  expect_instr(ar, "%ar = f32[2]{0} all-reduce(f32[2]{0} %x), channel_id=1, "
                   "replica_groups={{0,1},{2,3}}, constrain_layout=true, "
                   "use_global_device_ids=true, to_apply=%add");

  HloInstr *ag = instr(C, "ag", HLO_ALL_GATHER, f32(1, (int64_t)16), 1, X);
  ReplicaGroups *io = ARENA_NEW(A, ReplicaGroups);
  io->iota = true;
  io->iota_group_shape = list(2, (int64_t)2, (int64_t)4);
  io->iota_reshape_dims = list(1, (int64_t)8);
  ag->replica_groups = io;
  ag->dims = list(1, (int64_t)0);
  expect_instr(ag, "%ag = f32[16]{0} all-gather(f32[2]{0} %x), replica_groups=[2,4]<=[8], "
                   "dimensions={0}");
  io->iota_reshape_dims = list(2, (int64_t)4, (int64_t)2);
  io->iota_transpose_perm = list(2, (int64_t)1, (int64_t)0);
  expect_instr(ag, "%ag = f32[16]{0} all-gather(f32[2]{0} %x), "
                   "replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}");

  HloInstr *rs = instr(C, "rs", HLO_REDUCE_SCATTER, f32(1, (int64_t)1), 1, X);
  rs->replica_groups = rg;
  rs->dims = list(1, (int64_t)0);
  set_called(rs, 1, add);
  expect_instr(rs, "%rs = f32[1]{0} reduce-scatter(f32[2]{0} %x), "
                   "replica_groups={{0,1},{2,3}}, dimensions={0}, to_apply=%add");

  HloInstr *a2a = instr(C, "a2a", HLO_ALL_TO_ALL, f32(1, (int64_t)2), 1, X);
  a2a->replica_groups = rg;
  expect_instr(a2a, "%a2a = f32[2]{0} all-to-all(f32[2]{0} %x), "
                    "replica_groups={{0,1},{2,3}}");
  a2a->has_dims = true;
  a2a->dims = list(1, (int64_t)0);
  expect_instr(a2a, "%a2a = f32[2]{0} all-to-all(f32[2]{0} %x), "
                    "replica_groups={{0,1},{2,3}}, dimensions={0}");

  HloInstr *cp = instr(C, "cp", HLO_COLLECTIVE_PERMUTE, f32(1, (int64_t)2), 1, X);
  cp->npairs = 2;
  cp->source_target_pairs = arena_alloc(A, sizeof(int64_t[2]) * 2);
  cp->source_target_pairs[0][0] = 0, cp->source_target_pairs[0][1] = 1;
  cp->source_target_pairs[1][0] = 1, cp->source_target_pairs[1][1] = 0;
  cp->has_channel_id = true;
  cp->channel_id = 3;
  expect_instr(cp, "%cp = f32[2]{0} collective-permute(f32[2]{0} %x), channel_id=3, "
                   "source_target_pairs={{0,1},{1,0}}");

  HloInstr *tok = instr(C, "tok", HLO_AFTER_ALL, shape_token(A), 0);
  Shape *se[] = {f32(1, (int64_t)2), shape_scalar(A, ET_U32), shape_token(A)};
  HloInstr *sd = instr(C, "sd", HLO_SEND, shape_tuple(A, 3, se), 2, X, tok);
  sd->has_channel_id = true;
  sd->channel_id = 5;
  sd->is_host_transfer = true;
  expect_instr(sd, "%sd = (f32[2]{0}, u32[], token[]) send(f32[2]{0} %x, token[] %tok), "
                   "channel_id=5, is_host_transfer=true");
}

/* The async-start sugar as the parser builds it: the start calls a
 * computation whose root is the wrapped op, which holds the attributes. */
static HloComp *wrapped_comp(HloOp op, Shape *s, HloInstr *operand) {
  HloComp *wc = comp("async_wrapped");
  HloInstr *p = param(wc, "async_param", 0, operand->shape);
  instr(wc, "async_op", op, s, 1, p);
  return wc;
}

Test(print, async_sugar) {
  xy();
  Shape *inner[] = {f32(1, (int64_t)2)};
  Shape *se[] = {shape_tuple(A, 1, inner), f32(1, (int64_t)2), shape_scalar(A, ET_U32)};
  Shape *st = shape_tuple(A, 3, se);
  HloComp *wc = wrapped_comp(HLO_NEGATE, f32(1, (int64_t)2), X);
  HloInstr *s = instr(C, "s", HLO_ASYNC_START, st, 1, X);
  s->async_sugar = true;
  s->async_wrapped_op = HLO_NEGATE;
  set_called(s, 1, wc);
  HloInstr *u = instr(C, "u", HLO_ASYNC_UPDATE, st, 1, s);
  u->async_sugar = true;
  u->async_wrapped_op = HLO_NEGATE;
  set_called(u, 1, wc);
  HloInstr *d = instr(C, "d", HLO_ASYNC_DONE, f32(1, (int64_t)2), 1, u);
  d->async_sugar = true;
  d->async_wrapped_op = HLO_NEGATE;
  set_called(d, 1, wc);
  expect_instr(s, "%s = ((f32[2]{0}), f32[2]{0}, u32[]) negate-start(f32[2]{0} %x)");
  expect_instr(u, "%u = ((f32[2]{0}), f32[2]{0}, u32[]) negate-update(((f32[2]{0}), "
                  "f32[2]{0}, u32[]) %s)");
  expect_instr(d, "%d = f32[2]{0} negate-done(((f32[2]{0}), f32[2]{0}, u32[]) %u)");

  /* The wrapped computation is left out of the module. */
  C->name = "main";
  StrBuf b;
  sb_init(&b);
  hlo_print_module(&b, M, NULL);
  cr_expect(strstr(b.s, "async_wrapped") == NULL, "got %s", b.s);
  cr_expect(strstr(b.s, "ENTRY") == NULL && strstr(b.s, "%main (x: f32[2]") != NULL);
  sb_free(&b);

  /* Without the sugar it is printed, and the start names it. */
  s->async_sugar = u->async_sugar = d->async_sugar = false;
  s->async_thread = "host";
  expect_instr(s, "%s = ((f32[2]{0}), f32[2]{0}, u32[]) async-start(f32[2]{0} %x), "
                  "async_execution_thread=\"host\", calls=%async_wrapped");
  expect_instr(d, "%d = f32[2]{0} async-done(((f32[2]{0}), f32[2]{0}, u32[]) %u)");
  sb_init(&b);
  hlo_print_module(&b, M, NULL);
  cr_expect(strstr(b.s, "%async_wrapped (async_param: f32[2]) -> f32[2] {") != NULL,
            "got %s", b.s);
  sb_free(&b);
}

Test(print, async_sugar_prints_wrapped_attributes) {
  xy();
  Shape *inner[] = {f32(1, (int64_t)2)};
  Shape *se[] = {shape_tuple(A, 1, inner), f32(1, (int64_t)1), shape_scalar(A, ET_U32)};
  HloComp *wc = wrapped_comp(HLO_REDUCE_SCATTER, f32(1, (int64_t)1), X);
  HloInstr *w = wc->root;
  w->dims = list(1, (int64_t)0);
  w->replica_groups = ARENA_NEW(A, ReplicaGroups);
  set_called(w, 1, comp("add"));
  w->result_accuracy = "{mode=highest}";
  HloInstr *s = instr(C, "rs", HLO_ASYNC_START, shape_tuple(A, 3, se), 1, X);
  s->async_sugar = true;
  s->async_wrapped_op = HLO_REDUCE_SCATTER;
  s->async_thread = "parallel";
  set_called(s, 1, wc);
  RawAttr raw = {"unknown", "1"};
  s->nraw_attrs = 1;
  s->raw_attrs = &raw;
  expect_instr(s, "%rs = ((f32[2]{0}), f32[1]{0}, u32[]) reduce-scatter-start(f32[2]{0} "
                  "%x), async_execution_thread=\"parallel\", replica_groups={}, "
                  "dimensions={0}, to_apply=%add, unknown=1, "
                  "result_accuracy={mode=highest}");
}

Test(print, mesh_replica_groups_kept_raw) {
  xy();
  HloInstr *ar = instr(C, "ar", HLO_ALL_REDUCE, f32(1, (int64_t)2), 1, X);
  set_called(ar, 1, comp("add"));
  RawAttr raw = {"replica_groups", "mesh['a'=2] {'a'}"};
  ar->nraw_attrs = 1;
  ar->raw_attrs = &raw;
  expect_instr(ar, "%ar = f32[2]{0} all-reduce(f32[2]{0} %x), "
                   "replica_groups=mesh['a'=2] {'a'}, to_apply=%add");
}

/*
 * Attributes any instruction may carry
 */

Test(print, shardings) {
  HloInstr *p = param(C, "p", 0, f32(2, (int64_t)4, (int64_t)4));
  Sharding *s = ARENA_NEW(A, Sharding);
  p->sharding = s;
  const char *h = "%p = f32[4,4]{1,0} parameter(0), sharding=";
  char want[300];
#define EXPECT_SHARDING(text)                                                  \
  (snprintf(want, sizeof want, "%s%s", h, text), expect_instr(p, want))
  s->kind = SHARD_REPLICATED;
  EXPECT_SHARDING("{replicated}");
  s->kind = SHARD_MANUAL;
  EXPECT_SHARDING("{manual}");
  s->kind = SHARD_UNKNOWN;
  s->shard_group = "shard_as 1";
  EXPECT_SHARDING("{unknown shard_as 1}");
  s->shard_group = NULL;
  s->kind = SHARD_MAXIMAL;
  s->device = 3;
  s->metadata = "{op_name=\"a\"}";
  EXPECT_SHARDING("{maximal device=3 metadata={op_name=\"a\"}}");
  s->metadata = NULL;
  s->kind = SHARD_TILED;
  s->tile_dims = list(2, (int64_t)2, (int64_t)1);
  s->devices = list(2, (int64_t)0, (int64_t)1);
  EXPECT_SHARDING("{devices=[2,1]0,1}");
  s->tile_dims = list(3, (int64_t)2, (int64_t)2, (int64_t)2);
  s->iota_devices = true;
  s->iota_reshape_dims = list(2, (int64_t)2, (int64_t)4);
  s->iota_transpose_perm = list(2, (int64_t)1, (int64_t)0);
  s->last_tile_dim_replicate = true;
  EXPECT_SHARDING("{devices=[2,2,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  s->last_tile_dim_replicate = false;
  s->iota_transpose_perm = list(1, (int64_t)0);
  s->iota_reshape_dims = list(1, (int64_t)8);
  char *ltd[] = {"manual", "replicated"};
  s->nlast_tile_dims = 2;
  s->last_tile_dims = ltd;
  EXPECT_SHARDING("{devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}");

  /* Metadata inside a sharding goes with print_metadata. */
  s->nlast_tile_dims = 0;
  s->metadata = "{op_name=\"b\"}";
  PrintOptions o = print_options_default;
  o.print_metadata = false;
  char *got = print_instr_opts(p, &o);
  cr_expect_str_eq(got, "%p = f32[4,4]{1,0} parameter(0), sharding={devices=[2,2,2]<=[8]}");
  free(got);

  Sharding *t = ARENA_NEW(A, Sharding);
  t->kind = SHARD_TUPLE;
  t->ntuple = 6;
  t->tuple = ARENA_ARRAY(A, Sharding *, 6);
  Sharding *rep = ARENA_NEW(A, Sharding);
  rep->kind = SHARD_REPLICATED;
  for (int k = 0; k < 6; k++)
    t->tuple[k] = rep;
  p->sharding = t;
  EXPECT_SHARDING("{{replicated}, {replicated}, {replicated}, {replicated}, "
                  "{replicated}, /*index=5*/{replicated}}");
  t->ntuple = 0;
  EXPECT_SHARDING("{}");
#undef EXPECT_SHARDING
}

Test(print, metadata_fields_and_escapes) {
  HloInstr *p = param(C, "p", 0, shape_scalar(A, ET_F32));
  OpMetadata *md = ARENA_NEW(A, OpMetadata);
  p->metadata = md;
  expect_instr(p, "%p = f32[] parameter(0)");
  md->op_type = "add";
  md->op_name = "jit(f)/a[axis=('y',)]\"q\"\\";
  md->source_file = "f.py";
  md->source_line = 12;
  md->source_end_line = 13;
  md->source_column = 4;
  md->source_end_column = 9;
  md->profile_type = "{1,2}";
  md->deduplicated_name = "d";
  md->preserve_layout = true;
  md->scheduling_name = "s";
  md->stack_frame_id = 7;
  md->extra = "metadata_payload=\"x\"";
  expect_instr(p, "%p = f32[] parameter(0), metadata={op_type=\"add\" "
                  "op_name=\"jit(f)/a[axis=(\\'y\\',)]\\\"q\\\"\\\\\" "
                  "source_file=\"f.py\" source_line=12 source_end_line=13 "
                  "source_column=4 source_end_column=9 profile_type={1,2} "
                  "deduplicated_name=\"d\" preserve_layout=true scheduling_name=\"s\" "
                  "stack_frame_id=7 metadata_payload=\"x\"}");
  PrintOptions o = print_options_default;
  o.print_metadata = false;
  char *got = print_instr_opts(p, &o);
  cr_expect_str_eq(got, "%p = f32[] parameter(0)");
  free(got);
}

Test(print, common_attribute_order) {
  xy();
  HloInstr *a = instr(C, "a", HLO_ADD, f32(1, (int64_t)2), 2, X, Y);
  a->sharding = ARENA_NEW(A, Sharding);
  a->sharding->kind = SHARD_REPLICATED;
  KVList *fa = ARENA_NEW(A, KVList);
  KeyValue kv[] = {{"b", "x\ny"}, {"a", "{\"k\":\"}\"}"}, {"c", "{not closed"}};
  fa->n = 3;
  fa->kv = kv;
  a->frontend_attrs = fa;
  a->ncontrol_preds = 2;
  a->control_preds = ARENA_ARRAY(A, HloInstr *, 2);
  a->control_preds[0] = X;
  a->control_preds[1] = Y;
  a->statistics = "{visualizing_index=1,stat-1=33}";
  a->result_accuracy = "{mode=highest}";
  a->origin = "{{\"x\"}}";
  a->metadata = ARENA_NEW(A, OpMetadata);
  a->metadata->op_name = "n";
  a->backend_config = "\"cfg\"";
  RawAttr raw[] = {{"unknown_attr", "{1, 2}"}, {"other", "x"}};
  a->nraw_attrs = 2;
  a->raw_attrs = raw;
  expect_instr(a, "%a = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %y), unknown_attr={1, 2}, "
                  "other=x, sharding={replicated}, frontend_attributes={a={\"k\":\"}\"},"
                  "b=\"x\\ny\",c=\"{not closed\"}, control-predecessors={%x, %y}, "
                  "statistics={visualizing_index=1,stat-1=33}, "
                  "result_accuracy={mode=highest}, origin={{\"x\"}}, "
                  "metadata={op_name=\"n\"}, backend_config=\"cfg\"");
  PrintOptions o = print_options_default;
  o.print_backend_config = false;
  char *got = print_instr_opts(a, &o);
  cr_expect(strstr(got, "backend_config") == NULL);
  free(got);
}

Test(print, parameter_replication) {
  HloInstr *p = param(C, "p", 0, f32(1, (int64_t)2));
  bool rep[] = {true, false};
  p->nparam_replication = 2;
  p->param_replication = rep;
  expect_instr(p, "%p = f32[2]{0} parameter(0), parameter_replication={true,false}");
}

Test(print, scan) {
  xy();
  HloInstr *s = instr(C, "s", HLO_SCAN, f32(1, (int64_t)2), 2, X, Y);
  s->dims = list(1, (int64_t)0);
  s->scan_num_carries = 1;
  set_called(s, 1, comp("body"));
  expect_instr(s, "%s = f32[2]{0} scan(f32[2]{0} %x, f32[2]{0} %y), dimensions={0}, "
                  "num_carries=1, to_apply=%body");
  s->scan_is_reverse = s->scan_is_associative = true;
  expect_instr(s, "%s = f32[2]{0} scan(f32[2]{0} %x, f32[2]{0} %y), dimensions={0}, "
                  "num_carries=1, is_reverse=true, is_associative=true, to_apply=%body");
}

Test(print, entry_marked_by_module) {
  instr(C, "c", HLO_CONSTANT, shape_scalar(A, ET_F32), 0);
  M->entry = C;
  expect_module("HloModule m\n\nENTRY %comp () -> f32[] {\n"
                "  ROOT %c = f32[] constant({...})\n}\n\n");
}

Test(print, instr_without_names_or_operands_is_safe) {
  HloInstr *a = instr(C, "a", HLO_ADD, NULL, 0);
  a->name = NULL;
  expect_instr(a, "% = () add()");
  HloInstr *x = param(C, "x", 0, f32(1, (int64_t)2));
  HloInstr *n = instr(C, "n", HLO_NEGATE, f32(1, (int64_t)2), 1, x);
  n->ops[0] = NULL;
  expect_instr(n, "%n = f32[2]{0} negate(null)");
}

Test(print, wrapped_computation_used_elsewhere_is_printed) {
  xy();
  Shape *inner[] = {f32(1, (int64_t)2)};
  Shape *se[] = {shape_tuple(A, 1, inner), f32(1, (int64_t)2), shape_scalar(A, ET_U32)};
  HloComp *wc = wrapped_comp(HLO_NEGATE, f32(1, (int64_t)2), X);
  HloInstr *s = instr(C, "s", HLO_ASYNC_START, shape_tuple(A, 3, se), 1, X);
  s->async_sugar = true;
  s->async_wrapped_op = HLO_NEGATE;
  set_called(s, 1, wc);
  HloInstr *c = instr(C, "c", HLO_CALL, f32(1, (int64_t)2), 1, X);
  set_called(c, 1, wc);
  StrBuf b;
  sb_init(&b);
  hlo_print_module(&b, M, NULL);
  cr_expect(strstr(b.s, "%async_wrapped (async_param: f32[2]) -> f32[2] {") != NULL,
            "got %s", b.s);
  cr_expect(strstr(b.s, "negate-start(f32[2]{0} %x)") != NULL, "got %s", b.s);
  sb_free(&b);
}

/* hlo_write_module streams the same text hlo_print_module builds, also when
 * the text is several times the flush size and long tuple shapes repeat
 * across flushes (the shape memo must not point into flushed text). */
Test(print, streamed_equals_buffered) {
  HloModule *m = hlo_module_new("stream");
  HloComp *c = hlo_comp_new(m, "main");
  c->is_entry = true;
  m->entry = c;
  int64_t dims[] = {128, 256};
  Shape *elems[12];
  for (int k = 0; k < 12; k++)
    elems[k] = shape_array(m->arena, ET_F32, 2, dims);
  Shape *tup = shape_tuple(m->arena, 12, elems);
  HloInstr *p = hlo_instr_new(c, HLO_PARAMETER, tup, 0, NULL);
  p->name = arena_strdup(m->arena, "state");
  HloInstr *last = NULL;
  for (int k = 0; k < 20000; k++) {
    HloInstr *g = hlo_instr_new(c, HLO_GET_TUPLE_ELEMENT, elems[k % 12], 1, &p);
    char name[32];
    snprintf(name, sizeof name, "gte.%d", k);
    g->name = arena_strdup(m->arena, name);
    g->tuple_index = k % 12;
    last = g;
  }
  c->root = last;
  StrBuf b;
  sb_init(&b);
  hlo_print_module(&b, m, NULL);
  cr_assert_gt(b.len, (size_t)4 << 20, "want several flushes, got %zu bytes", b.len);
  FILE *f = tmpfile();
  cr_assert(f);
  cr_assert(hlo_write_module(f, m, NULL));
  long n = ftell(f);
  cr_assert_eq((size_t)n, b.len);
  rewind(f);
  char *got = xmalloc((size_t)n);
  cr_assert_eq(fread(got, 1, (size_t)n, f), (size_t)n);
  cr_assert(memcmp(got, b.s, b.len) == 0);
  free(got);
  fclose(f);
  sb_free(&b);
  hlo_module_free(m);
}

/* A frontend attribute value prints as a bare {...} dictionary only when
 * it reads back as exactly the same text (fuzz finding: "{a} " lost its
 * trailing space). */
Test(print, frontend_attr_dict_values_read_back) {
  KeyValue kv[] = {{"a", " {x=1}"}, {"b", "{y=2} "}, {"c", "{z=3}"},
                   {"d", "{unbalanced"}, {"e", "{a}{b}"}};
  KVList l = {5, kv};
  StrBuf b;
  sb_init(&b);
  pr_kvlist(&b, &l);
  pr_finish(&b); /* the pr_* writers leave the text unterminated until here */
  cr_assert_str_eq(b.s, "{a=\" {x=1}\",b=\"{y=2} \",c={z=3},d=\"{unbalanced\","
                        "e=\"{a}{b}\"}");
  sb_free(&b);
}
