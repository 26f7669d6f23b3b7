/*
 * test_verify.c - unit tests of hlo_verify on modules built directly in C:
 * a valid module passes, and each module-level, computation-level and
 * instruction-level invariant reports its own message.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../lib/hlo/hlo.h"

static HloModule *M;
static HloComp *E;
static Diag D;

static void setup(void) {
  M = hlo_module_new("m");
  E = hlo_comp_new(M, "main");
  M->entry = E;
  E->is_entry = true;
  memset(&D, 0, sizeof D);
}

static void teardown(void) {
  diag_clear(&D);
  hlo_module_free(M);
}

TestSuite(verify, .init = setup, .fini = teardown);

static Shape *arr(ElemType et, int rank, const int64_t *dims) {
  return shape_array(M->arena, et, rank, dims);
}

static Shape *f32(int64_t a, int64_t b) {
  int64_t d[] = {a, b};
  return arr(ET_F32, 2, d);
}

static Shape *scalar(ElemType et) { return shape_scalar(M->arena, et); }

static HloInstr *param(HloComp *c, const char *name, Shape *s) {
  HloInstr *i = hlo_instr_new(c, HLO_PARAMETER, s, 0, NULL);
  i->name = (char *)name;
  i->param_number = c->nparams;
  HloInstr **ps = ARENA_ARRAY(M->arena, HloInstr *, c->nparams + 1);
  if (c->nparams)
    memcpy(ps, c->params, sizeof(HloInstr *) * (size_t)c->nparams);
  ps[c->nparams++] = i;
  c->params = ps;
  return i;
}

static HloInstr *instr(HloComp *c, HloOp op, const char *name, Shape *s,
                       int n, HloInstr **ops) {
  HloInstr *i = hlo_instr_new(c, op, s, n, ops);
  i->name = (char *)name;
  return i;
}

#define OPS(...) ((HloInstr *[]){__VA_ARGS__})

static void set_called(HloInstr *i, int n, HloComp **cs) {
  i->ncalled = n;
  i->called = arena_memdup(M->arena, cs, sizeof(HloComp *) * (size_t)n);
}

static HloComp *add_comp(const char *name) {
  HloComp *c = hlo_comp_new(M, name);
  HloInstr *a = param(c, "ax", scalar(ET_F32));
  HloInstr *b = param(c, "ay", scalar(ET_F32));
  c->root = instr(c, HLO_ADD, "a.sum", scalar(ET_F32), 2, OPS(a, b));
  return c;
}

static void expect_ok(void) {
  bool ok = hlo_verify(M, &D);
  cr_expect(ok, "verify failed: %s", D.msg ? D.msg : "");
}

static void expect_msg(const char *want) {
  bool ok = hlo_verify(M, &D);
  cr_assert(!ok, "verify passed, expected: %s", want);
  cr_expect_str_eq(D.msg, want);
}

static void expect_part(const char *part) {
  bool ok = hlo_verify(M, &D);
  cr_assert(!ok, "verify passed, expected: %s", part);
  cr_expect(strstr(D.msg, part) != NULL, "message '%s' lacks '%s'", D.msg,
            part);
}

/* main(x: f32[2,3], y: f32[2,3]) = add(x, y) */
static HloInstr *simple_add(Shape *declared) {
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *y = param(E, "y", f32(2, 3));
  HloInstr *a = instr(E, HLO_ADD, "add.3", declared, 2, OPS(x, y));
  E->root = a;
  return a;
}

Test(verify, valid_module) {
  simple_add(f32(2, 3));
  expect_ok();
}

Test(verify, valid_module_with_reduce_and_while) {
  HloComp *add = add_comp("add");
  HloComp *cond = hlo_comp_new(M, "cond");
  HloInstr *cp = param(cond, "cp", f32(2, 3));
  HloInstr *k = instr(cond, HLO_CONSTANT, "k", scalar(ET_PRED), 0, NULL);
  k->literal = literal_new(M->arena, scalar(ET_PRED));
  (void)cp;
  cond->root = k;
  HloComp *body = hlo_comp_new(M, "body");
  HloInstr *bp = param(body, "bp", f32(2, 3));
  body->root = instr(body, HLO_NEGATE, "bn", f32(2, 3), 1, OPS(bp));
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *w = instr(E, HLO_WHILE, "w", f32(2, 3), 1, OPS(x));
  set_called(w, 2, (HloComp *[]){cond, body});
  HloInstr *z = instr(E, HLO_CONSTANT, "z", scalar(ET_F32), 0, NULL);
  z->literal = literal_new(M->arena, scalar(ET_F32));
  int64_t two = 2;
  HloInstr *r = instr(E, HLO_REDUCE, "r", arr(ET_F32, 1, &two), 2, OPS(w, z));
  r->dims.n = 1, r->dims.v = (int64_t[]){1};
  set_called(r, 1, (HloComp *[]){add});
  E->root = r;
  expect_ok();
}

Test(verify, shape_mismatch_message) {
  simple_add(f32(3, 2));
  expect_msg("shape mismatch for 'add.3': declared f32[3,2] but operands give "
             "f32[2,3]");
}

Test(verify, element_type_mismatch) {
  int64_t d[] = {2, 3};
  simple_add(arr(ET_BF16, 2, d));
  expect_msg("shape mismatch for 'add.3': declared bf16[2,3] but operands "
             "give f32[2,3]");
}

Test(verify, layouts_are_ignored) {
  Shape *s = f32(2, 3);
  s->layout->minor_to_major[0] = 0, s->layout->minor_to_major[1] = 1;
  simple_add(s);
  expect_ok();
}

Test(verify, bad_layout) {
  Shape *s = f32(2, 3);
  s->layout->minor_to_major[0] = 0, s->layout->minor_to_major[1] = 0;
  simple_add(s);
  expect_part("has an invalid shape or layout");
}

Test(verify, operand_count) {
  HloInstr *x = param(E, "x", f32(2, 3));
  E->root = instr(E, HLO_ADD, "add.1", f32(2, 3), 1, OPS(x));
  expect_msg("invalid add 'add.1': expects 2 operands, has 1");
}

Test(verify, use_before_definition) {
  HloInstr *a = simple_add(f32(2, 3));
  /* Move the add to the front of the list. */
  HloInstr *first = E->instrs[0];
  E->instrs[0] = a;
  E->instrs[2] = first;
  (void)first;
  expect_msg("'add.3' uses 'x' before its definition");
}

Test(verify, operand_from_other_computation) {
  HloComp *other = hlo_comp_new(M, "other");
  HloInstr *o = param(other, "o", f32(2, 3));
  other->root = o;
  HloInstr *x = param(E, "x", f32(2, 3));
  E->root = instr(E, HLO_ADD, "add.1", f32(2, 3), 2, OPS(x, o));
  expect_msg("operand 1 of 'add.1' ('o') is in computation 'other', not "
             "'main'");
}

Test(verify, duplicate_instruction_name_in_computation) {
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *n = instr(E, HLO_NEGATE, "x", f32(2, 3), 1, OPS(x));
  E->root = n;
  expect_msg("instruction name 'x' is used twice in computation 'main'");
}

Test(verify, same_name_in_two_computations_is_accepted) {
  /* XLA's parser renames such clashes on load; text may contain them. */
  HloComp *add = add_comp("add");
  (void)add;
  HloInstr *x = param(E, "ax", scalar(ET_F32));
  E->root = x;
  expect_ok();
}

Test(verify, duplicate_computation_name) {
  simple_add(f32(2, 3));
  HloComp *c = hlo_comp_new(M, "main");
  c->root = param(c, "q", scalar(ET_F32));
  expect_msg("computation name 'main' is used twice");
}

Test(verify, parameter_numbers) {
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *y = param(E, "y", f32(2, 3));
  E->root = instr(E, HLO_ADD, "add", f32(2, 3), 2, OPS(x, y));
  y->param_number = 0;
  expect_msg("parameter 'y' has number 0, already used by 'x'");
  diag_clear(&D);
  y->param_number = 2;
  expect_msg("parameter 'y' has number 2 but computation 'main' has 2 "
             "parameters (numbers 0 to 1)");
}

Test(verify, missing_root_and_entry) {
  param(E, "x", f32(2, 3));
  expect_msg("computation 'main' has no root instruction");
  diag_clear(&D);
  M->entry = NULL;
  expect_msg("module 'm' has no entry computation");
}

Test(verify, root_from_other_computation) {
  HloComp *other = hlo_comp_new(M, "other");
  HloInstr *o = param(other, "o", f32(2, 3));
  other->root = o;
  E->root = o;
  expect_msg("root 'o' of computation 'main' is not one of its instructions");
}

Test(verify, reduce_bad_reducer) {
  HloComp *bad = hlo_comp_new(M, "bad");
  HloInstr *p0 = param(bad, "b0", scalar(ET_F32));
  bad->root = p0;
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *z = instr(E, HLO_CONSTANT, "z", scalar(ET_F32), 0, NULL);
  z->literal = literal_new(M->arena, scalar(ET_F32));
  int64_t two = 2;
  HloInstr *r = instr(E, HLO_REDUCE, "r", arr(ET_F32, 1, &two), 2, OPS(x, z));
  r->dims.n = 1, r->dims.v = (int64_t[]){1};
  set_called(r, 1, (HloComp *[]){bad});
  E->root = r;
  expect_msg("invalid reduce 'r': reducer 'bad' must take 2 parameters but "
             "takes 1");
}

Test(verify, recursion) {
  HloComp *f = hlo_comp_new(M, "f");
  HloInstr *fp = param(f, "fp", f32(2, 3));
  HloComp *g = hlo_comp_new(M, "g");
  HloInstr *gp = param(g, "gp", f32(2, 3));
  HloInstr *gc = instr(g, HLO_CALL, "gc", f32(2, 3), 1, OPS(gp));
  set_called(gc, 1, (HloComp *[]){f});
  g->root = gc;
  HloInstr *fc = instr(f, HLO_CALL, "fc", f32(2, 3), 1, OPS(fp));
  set_called(fc, 1, (HloComp *[]){g});
  f->root = fc;
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *c = instr(E, HLO_CALL, "c", f32(2, 3), 1, OPS(x));
  set_called(c, 1, (HloComp *[]){f});
  E->root = c;
  expect_part("recursively");
}

Test(verify, called_computation_not_in_module) {
  HloModule *other = hlo_module_new("other");
  HloComp *oc = hlo_comp_new(other, "add");
  oc->root = hlo_instr_new(oc, HLO_PARAMETER, scalar(ET_F32), 0, NULL);
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *c = instr(E, HLO_CALL, "c", f32(2, 3), 1, OPS(x));
  set_called(c, 1, (HloComp *[]){oc});
  E->root = c;
  expect_msg("'c' calls computation 'add', which is not in the module");
  hlo_module_free(other);
}

Test(verify, entry_computation_layout) {
  simple_add(f32(2, 3));
  ProgramShape *ps = ARENA_NEW(M->arena, ProgramShape);
  ps->nparams = 2;
  ps->params = ARENA_ARRAY(M->arena, Shape *, 2);
  ps->params[0] = f32(2, 3);
  ps->params[1] = f32(2, 3);
  ps->result = f32(2, 3);
  M->entry_layout = ps;
  expect_ok();
  ps->params[1] = f32(3, 2);
  expect_msg("entry_computation_layout parameter 1 is f32[3,2] but parameter "
             "'y' is f32[2,3]");
  diag_clear(&D);
  ps->params[1] = f32(2, 3);
  ps->nparams = 1;
  expect_msg("entry_computation_layout lists 1 parameter shape(s) but entry "
             "computation 'main' takes 2");
}

Test(verify, input_output_alias) {
  simple_add(f32(2, 3));
  AliasEntry *a = ARENA_NEW(M->arena, AliasEntry);
  a->operand = 2;
  M->io_alias = a;
  M->nio_alias = 1;
  expect_msg("input_output_alias names parameter 2, which entry computation "
             "'main' does not have");
  diag_clear(&D);
  a->operand = 1;
  expect_ok();
}

Test(verify, control_predecessor_in_other_computation) {
  HloComp *other = hlo_comp_new(M, "other");
  HloInstr *o = param(other, "o", f32(2, 3));
  other->root = o;
  HloInstr *a = simple_add(f32(2, 3));
  a->ncontrol_preds = 1;
  a->control_preds = arena_memdup(M->arena, (HloInstr *[]){o},
                                  sizeof(HloInstr *));
  expect_msg("control predecessor 'o' of 'add.3' is in another computation");
}

Test(verify, control_predecessor_later_in_text) {
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *a = instr(E, HLO_NEGATE, "a", f32(2, 3), 1, OPS(x));
  HloInstr *b = instr(E, HLO_NEGATE, "b", f32(2, 3), 1, OPS(x));
  E->root = instr(E, HLO_ADD, "r", f32(2, 3), 2, OPS(a, b));
  a->ncontrol_preds = 1;
  a->control_preds = arena_memdup(M->arena, (HloInstr *[]){b},
                                  sizeof(HloInstr *));
  expect_ok();
  /* A predecessor that claims this computation but is not listed in it. */
  HloInstr *ghost = ARENA_NEW(M->arena, HloInstr);
  *ghost = *b;
  ghost->name = "ghost";
  ghost->id = M->next_id++;
  a->control_preds[0] = ghost;
  expect_msg("control predecessor 'ghost' of 'a' is not an instruction of "
             "computation 'main'");
}

Test(verify, while_condition_must_return_pred) {
  HloComp *cond = hlo_comp_new(M, "cond");
  HloInstr *cp = param(cond, "cp", f32(2, 3));
  cond->root = cp;
  HloComp *body = hlo_comp_new(M, "body");
  body->root = param(body, "bp", f32(2, 3));
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *w = instr(E, HLO_WHILE, "w", f32(2, 3), 1, OPS(x));
  set_called(w, 2, (HloComp *[]){cond, body});
  E->root = w;
  expect_msg("invalid while 'w': condition 'cond' must return pred[], returns "
             "f32[2,3]");
}

Test(verify, async_op_misuse) {
  HloComp *wc = hlo_comp_new(M, "wrapped");
  HloInstr *wp = param(wc, "wp", f32(2, 3));
  wc->root = instr(wc, HLO_NEGATE, "wn", f32(2, 3), 1, OPS(wp));
  HloInstr *x = param(E, "x", f32(2, 3));
  Shape *ops1 = shape_tuple(M->arena, 1, (Shape *[]){f32(2, 3)});
  Shape *st_shape = shape_tuple(
      M->arena, 3, (Shape *[]){ops1, f32(2, 3), scalar(ET_S32)});
  HloInstr *st = instr(E, HLO_ASYNC_START, "st", st_shape, 1, OPS(x));
  set_called(st, 1, (HloComp *[]){wc});
  HloInstr *t = instr(E, HLO_TUPLE, "t",
                      shape_tuple(M->arena, 1, (Shape *[]){st_shape}), 1,
                      OPS(st));
  E->root = t;
  expect_msg("'t' uses async-start 'st' as operand 0; async ops may only "
             "feed operand 0 of async-update or async-done");
}

Test(verify, mixed_precision_operands) {
  int64_t four = 4;
  HloInstr *x = param(E, "x", f32(2, 4));
  HloInstr *sc = param(E, "scale", arr(ET_F32, 1, &four));
  HloInstr *of = param(E, "offset", arr(ET_BF16, 1, &four));
  HloInstr *bn = instr(E, HLO_BATCH_NORM_INFERENCE, "bn", f32(2, 4), 5,
                       OPS(x, sc, of, sc, sc));
  bn->feature_index = 1;
  E->root = bn;
  expect_msg("'bn' mixes floating-point types: operand 2 has bf16[4] where "
             "earlier operands have f32");
}

Test(verify, constant_literal_shape) {
  HloInstr *k = instr(E, HLO_CONSTANT, "k", f32(2, 3), 0, NULL);
  k->literal = literal_new(M->arena, f32(3, 2));
  E->root = k;
  expect_msg("shape mismatch for 'k': declared f32[2,3] but its literal has "
             "f32[3,2]");
}

Test(verify, call_result_message_names_computation) {
  HloComp *f = hlo_comp_new(M, "f");
  HloInstr *fp = param(f, "fp", f32(2, 3));
  f->root = fp;
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *c = instr(E, HLO_CALL, "c", f32(3, 2), 1, OPS(x));
  set_called(c, 1, (HloComp *[]){f});
  E->root = c;
  expect_msg("shape mismatch for 'c': declared f32[3,2] but computation 'f' "
             "gives f32[2,3]");
}

Test(verify, many_instructions_is_fast) {
  /* A long chain: verification must stay linear. */
  HloInstr *x = param(E, "x", f32(2, 3));
  HloInstr *prev = x;
  char *names = arena_alloc(M->arena, 200000 * 16);
  for (int k = 0; k < 200000; k++) {
    char *n = names + (size_t)k * 16;
    snprintf(n, 16, "n.%d", k);
    prev = instr(E, HLO_NEGATE, n, f32(2, 3), 1, OPS(prev));
  }
  E->root = prev;
  expect_ok();
}

/*
 * Through the parser: valid text of many op kinds verifies, and the first
 * error names the instruction.
 */

static bool parse_and_verify(const char *text, char **msg) {
  Diag d = {0};
  SrcFile *src = srcfile_from_string("t.hlo", text, strlen(text));
  HloModule **mods = NULL;
  int n = hlo_parse(src, &(ParseOptions){true}, &mods, &d);
  bool ok = n > 0;
  cr_expect(ok, "parse failed: %s", d.msg ? d.msg : "");
  for (int k = 0; k < n; k++) {
    if (ok && !hlo_verify(mods[k], &d))
      ok = false;
    hlo_module_free(mods[k]);
  }
  free(mods);
  *msg = d.msg ? xstrdup(d.msg) : NULL;
  diag_clear(&d);
  srcfile_free(src);
  return ok;
}

static void expect_text_ok(const char *text) {
  char *msg;
  bool ok = parse_and_verify(text, &msg);
  cr_expect(ok, "verify failed: %s", msg ? msg : "");
  free(msg);
}

static void expect_text_error(const char *text, const char *part) {
  char *msg;
  bool ok = parse_and_verify(text, &msg);
  cr_assert(!ok, "verify passed, expected '%s'", part);
  cr_expect(msg && strstr(msg, part), "message '%s' lacks '%s'",
            msg ? msg : "", part);
  free(msg);
}

Test(verify, text_async_and_collectives) {
  expect_text_ok(
      "HloModule m, replica_count=2\n"
      "add {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = f32[4,8] parameter(0)\n"
      "  ars = f32[4,8] all-reduce-start(x), replica_groups={{0,1}}, to_apply=add\n"
      "  ard = f32[4,8] all-reduce-done(ars)\n"
      "  ags = (f32[4,8], f32[8,8]) all-gather-start(ard), replica_groups={{0,1}}, dimensions={0}\n"
      "  agd = f32[8,8] all-gather-done(ags)\n"
      "  rs = f32[4,8] reduce-scatter(agd), replica_groups={{0,1}}, dimensions={0}, to_apply=add\n"
      "  cps = (f32[4,8], f32[4,8]) collective-permute-start(rs), source_target_pairs={{0,1},{1,0}}\n"
      "  cpd = f32[4,8] collective-permute-done(cps)\n"
      "  st = ((f32[4,8]), f32[4,8], s32[]) negate-start(cpd)\n"
      "  dn = f32[4,8] negate-done(st)\n"
      "  cs = (f32[4,8], f32[4,8], u32[]) copy-start(dn)\n"
      "  ROOT cd = f32[4,8] copy-done(cs)\n"
      "}\n");
}

Test(verify, text_tokens_and_feeds) {
  expect_text_ok(
      "HloModule m\n"
      "ENTRY main {\n"
      "  x = f32[4] parameter(0)\n"
      "  t = token[] after-all()\n"
      "  in = ((f32[2], s32[]), token[]) infeed(t)\n"
      "  t2 = token[] get-tuple-element(in), index=1\n"
      "  o = token[] outfeed(x, t2), outfeed_shape=f32[4]\n"
      "  s = (f32[4], u32[], token[]) send(x, o), channel_id=1\n"
      "  sd = token[] send-done(s), channel_id=1\n"
      "  r = (f32[4], u32[], token[]) recv(sd), channel_id=2\n"
      "  rd = (f32[4], token[]) recv-done(r), channel_id=2\n"
      "  ROOT v = f32[4] get-tuple-element(rd), index=0\n"
      "}\n");
}

Test(verify, text_windows_scatter_sort) {
  expect_text_ok(
      "HloModule m\n"
      "add {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n"
      "}\n"
      "ge {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT c = pred[] compare(a, b), direction=GE\n"
      "}\n"
      "ENTRY main {\n"
      "  x = f32[4,6] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  rw = f32[2,3] reduce-window(x, z), window={size=2x2 stride=2x2}, to_apply=add\n"
      "  ss = f32[4,6] select-and-scatter(x, rw, z), window={size=2x2 stride=2x2}, select=ge, scatter=add\n"
      "  idx = s32[3,1] parameter(1)\n"
      "  upd = f32[3,6] parameter(2)\n"
      "  sc = f32[4,6] scatter(ss, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"
      "  ROOT so = f32[4,6] sort(sc), dimensions={1}, to_apply=ge\n"
      "}\n");
}

Test(verify, text_conditional_and_rng) {
  expect_text_ok(
      "HloModule m\n"
      "b0 {\n"
      "  p = f32[2] parameter(0)\n"
      "  ROOT n = f32[2] negate(p)\n"
      "}\n"
      "b1 {\n"
      "  ROOT p = f32[2] parameter(0)\n"
      "}\n"
      "ENTRY main {\n"
      "  i = s32[] parameter(0)\n"
      "  x = f32[2] parameter(1)\n"
      "  c = f32[2] conditional(i, x, x), branch_computations={b0, b1}\n"
      "  st = u64[2] parameter(2)\n"
      "  g = (u64[2], u32[2]) rng-bit-generator(st), algorithm=rng_default\n"
      "  ROOT t = (f32[2], (u64[2], u32[2])) tuple(c, g)\n"
      "}\n");
}

Test(verify, text_errors_name_the_instruction) {
  expect_text_error(
      "HloModule m\n"
      "ENTRY main {\n"
      "  x = f32[4] parameter(0)\n"
      "  t = token[] after-all()\n"
      "  ROOT o = token[] outfeed(x, t), outfeed_shape=f32[5]\n"
      "}\n",
      "invalid outfeed 'o': outfeed_shape f32[5] differs from the operand "
      "f32[4]");
  expect_text_error(
      "HloModule m\n"
      "ENTRY main {\n"
      "  x = f32[4,8] parameter(0)\n"
      "  ROOT cd = f32[4,8] copy-done(x)\n"
      "}\n",
      "invalid copy-done 'cd': operand must be a copy-start, not parameter");
}
