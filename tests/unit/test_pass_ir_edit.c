/*
 * test_pass_ir_edit.c - the IR editing helpers the passes share
 * (lib/hlo/ir_edit.h): users, rewiring, removal, names, order, clones,
 * inlining and computation keys.
 */
#include <criterion/criterion.h>

#include "../../lib/hlo/ir_edit.h"

#include <stdlib.h>
#include <string.h>

static PtrVec sources;

static void free_sources(void) {
  for (int k = 0; k < sources.len; k++)
    srcfile_free(sources.data[k]);
  vec_free(&sources);
}

TestSuite(ir_edit, .fini = free_sources);

static HloModule *parse(const char *text) {
  Diag d = {0};
  SrcFile *src = srcfile_from_string("test.hlo", text, strlen(text));
  vec_push(&sources, src);
  HloModule **mods = NULL;
  ParseOptions po = {.strip_glog_prefixes = true};
  int n = hlo_parse(src, &po, &mods, &d);
  if (n != 1)
    diag_print(&d, stderr);
  cr_assert_eq(n, 1);
  HloModule *m = mods[0];
  free(mods);
  return m;
}

static HloInstr *find(HloModule *m, const char *name) {
  for (int c = 0; c < m->ncomps; c++) {
    HloInstr *i = hlo_comp_find_instr(m->comps[c], name);
    if (i)
      return i;
  }
  cr_assert_fail("no instruction %s", name);
  return NULL;
}

static bool verifies(HloModule *m) {
  Diag d = {0};
  bool ok = hlo_verify(m, &d);
  if (!ok)
    diag_print(&d, stderr);
  diag_clear(&d);
  return ok;
}

static const char text[] =
    "HloModule m\n"
    "ENTRY main {\n"
    "  p0 = f32[4] parameter(0)\n"
    "  p1 = f32[4] parameter(1)\n"
    "  sq = f32[4] multiply(p0, p0)\n"
    "  a = f32[4] add(sq, p1)\n"
    "  n = f32[4] negate(sq)\n"
    "  ROOT r = f32[4] subtract(a, n)\n"
    "}\n";

Test(ir_edit, users_are_distinct_and_follow_edits) {
  HloModule *m = parse(text);
  IrEdit *e = ir_begin(m);
  HloInstr *p0 = find(m, "p0"), *p1 = find(m, "p1"), *sq = find(m, "sq");
  HloInstr *a = find(m, "a"), *n = find(m, "n");
  HloInstr **us;
  cr_expect_eq(ir_users(e, p0, &us), 1); /* multiply(p0, p0) once */
  cr_expect_eq(us[0], sq);
  cr_expect_eq(ir_user_count(e, sq), 2);
  ir_set_operand(e, a, 0, p0);
  cr_expect_eq(ir_user_count(e, sq), 1);
  cr_expect_eq(ir_user_count(e, p0), 2);
  cr_expect_eq(ir_user_count(e, p1), 1);
  ir_remove(e, n);
  cr_expect(ir_removed(n));
  /* n's operand sq lost its last user; the root's operand is dangling but
   * this test does not end the edit. */
  cr_expect_eq(ir_user_count(e, sq), 0);
  ir_end(e, false);
  hlo_module_free(m);
}

Test(ir_edit, replace_all_uses_and_remove_dead) {
  HloModule *m = parse(text);
  IrEdit *e = ir_begin(m);
  HloInstr *p0 = find(m, "p0"), *sq = find(m, "sq"), *r = find(m, "r");
  /* Replace sq by p0 everywhere: a and n now read p0, sq is dead. */
  cr_expect(ir_replace_all_uses(e, sq, p0));
  cr_expect_eq(ir_user_count(e, sq), 0);
  cr_expect(ir_removable(e, sq));
  ir_remove_dead(e, sq);
  cr_expect(ir_removed(sq));
  /* A root is replaced too, unless a user is kept. */
  HloInstr *nr = ir_unary(e, m->entry, HLO_NEGATE, p0);
  cr_expect_not(ir_replace_uses_except(e, r, nr, nr));
  cr_expect_eq(m->entry->root, r);
  cr_expect(ir_replace_all_uses(e, r, nr));
  cr_expect_eq(m->entry->root, nr);
  ir_remove_dead(e, r);
  cr_expect_not(ir_removable(e, p0)); /* parameters stay */
  ir_end(e, true);
  cr_expect(verifies(m));
  cr_expect_eq(m->entry->ninstrs, 3); /* p0, p1, negate */
  hlo_module_free(m);
}

Test(ir_edit, side_effects_and_control_deps_stay) {
  HloModule *m = parse("HloModule m\n"
                       "ENTRY main {\n"
                       "  p = f32[4] parameter(0)\n"
                       "  cc = f32[4] custom-call(p), custom_call_target=\"x\", "
                       "custom_call_has_side_effect=true\n"
                       "  n = f32[4] negate(p)\n"
                       "  ROOT c = f32[4] copy(p), control-predecessors={n}\n"
                       "}\n");
  IrEdit *e = ir_begin(m);
  cr_expect_not(ir_removable(e, find(m, "cc")));
  cr_expect_not(ir_removable(e, find(m, "n")));
  cr_expect(ir_has_control_deps(e, find(m, "n")));
  cr_expect(ir_has_side_effect(find(m, "cc")));
  ir_end(e, false);
  hlo_module_free(m);
}

Test(ir_edit, unique_names) {
  HloModule *m = parse("HloModule m\n"
                       "ENTRY main {\n"
                       "  p0 = f32[4] parameter(0)\n"
                       "  add.7 = f32[4] add(p0, p0)\n"
                       "  ROOT negate.3 = f32[4] negate(add.7)\n"
                       "}\n");
  IrEdit *e = ir_begin(m);
  /* Fresh names count on past the largest ".N" suffix in the module. */
  HloInstr *i1 = ir_unary(e, m->entry, HLO_NEGATE, find(m, "p0"));
  HloInstr *i2 = ir_unary(e, m->entry, HLO_NEGATE, find(m, "p0"));
  cr_expect_str_eq(i1->name, "negate.8");
  cr_expect_str_eq(i2->name, "negate.9");
  cr_expect_str_eq(ir_unique_name(e, "add.7"), "add.10");
  cr_expect_str_eq(ir_unique_name(e, "fresh"), "fresh.11");
  /* Computations keep a free name. */
  cr_expect_str_eq(ir_new_comp(e, "helper")->name, "helper");
  cr_expect_str_eq(ir_new_comp(e, "helper")->name, "helper.12");
  ir_end(e, true);
  hlo_module_free(m);
}

Test(ir_edit, end_restores_topological_order) {
  HloModule *m = parse(text);
  IrEdit *e = ir_begin(m);
  HloComp *c = m->entry;
  /* A new instruction appended after its user. */
  HloInstr *a = find(m, "a");
  HloInstr *ex = ir_unary(e, c, HLO_EXP, find(m, "p1"));
  ir_set_operand(e, a, 1, ex);
  cr_expect_eq(c->instrs[c->ninstrs - 1], ex);
  ir_end(e, true);
  cr_expect(verifies(m));
  int pos_ex = -1, pos_a = -1;
  for (int k = 0; k < c->ninstrs; k++) {
    if (c->instrs[k] == ex)
      pos_ex = k;
    if (c->instrs[k] == a)
      pos_a = k;
  }
  cr_expect_lt(pos_ex, pos_a);
  /* Everything else kept its order: p0, p1, sq first. */
  cr_expect_str_eq(c->instrs[0]->name, "p0");
  cr_expect_str_eq(c->instrs[1]->name, "p1");
  cr_expect_str_eq(c->instrs[2]->name, "sq");
  hlo_module_free(m);
}

static const char two_comps[] =
    "HloModule m\n"
    "f { x = f32[] parameter(0)\n y = f32[] parameter(1)\n"
    "  ROOT s = f32[] subtract(x, y) }\n"
    "g { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
    "  ROOT t = f32[] subtract(a, b) }\n"
    "h { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
    "  ROOT t = f32[] subtract(b, a) }\n"
    "ENTRY main {\n"
    "  p = f32[] parameter(0)\n"
    "  q = f32[] parameter(1)\n"
    "  c1 = f32[] call(p, q), to_apply=f\n"
    "  c2 = f32[] call(p, q), to_apply=g\n"
    "  c3 = f32[] call(p, q), to_apply=h\n"
    "  ROOT r = (f32[], f32[], f32[]) tuple(c1, c2, c3)\n"
    "}\n";

Test(ir_edit, comp_keys_ignore_names_not_structure) {
  HloModule *m = parse(two_comps);
  StrBuf kf, kg, kh;
  sb_init(&kf);
  sb_init(&kg);
  sb_init(&kh);
  ir_comp_key(&kf, hlo_module_find_comp(m, "f"));
  ir_comp_key(&kg, hlo_module_find_comp(m, "g"));
  ir_comp_key(&kh, hlo_module_find_comp(m, "h"));
  cr_expect_str_eq(kf.s, kg.s);
  cr_expect_str_neq(kf.s, kh.s);
  /* Names are restored. */
  cr_expect_str_eq(hlo_module_find_comp(m, "f")->root->name, "s");
  sb_free(&kf);
  sb_free(&kg);
  sb_free(&kh);
  hlo_module_free(m);
}

Test(ir_edit, same_instr_compares_attributes) {
  HloModule *m = parse("HloModule m\n"
                       "ENTRY main {\n"
                       "  p = f32[8] parameter(0)\n"
                       "  sa = f32[4] slice(p), slice={[0:4]}\n"
                       "  sb = f32[4] slice(p), slice={[0:4]}\n"
                       "  sc = f32[4] slice(p), slice={[4:8]}\n"
                       "  c1 = f32[] constant(1)\n"
                       "  c2 = f32[] constant(1)\n"
                       "  c3 = f32[] constant(2)\n"
                       "  ROOT t = (f32[4], f32[4], f32[4], f32[], f32[], f32[]) "
                       "tuple(sa, sb, sc, c1, c2, c3)\n"
                       "}\n");
  HloInstr *sa = find(m, "sa"), *sb = find(m, "sb"), *sc = find(m, "sc");
  cr_expect(ir_same_instr(sa, sb));
  cr_expect_not(ir_same_instr(sa, sc));
  cr_expect_eq(ir_instr_hash(sa), ir_instr_hash(sb));
  cr_expect(ir_same_instr(find(m, "c1"), find(m, "c2")));
  cr_expect_not(ir_same_instr(find(m, "c1"), find(m, "c3")));
  cr_expect(ir_same_attrs(sa, sb));
  hlo_module_free(m);
}

Test(ir_edit, clone_comp_and_inline) {
  HloModule *m = parse(two_comps);
  IrEdit *e = ir_begin(m);
  HloComp *f = hlo_module_find_comp(m, "f");
  HloComp *fc = ir_clone_comp(e, f, ".clone");
  cr_expect_str_eq(fc->name, "f.clone");
  cr_expect_eq(fc->nparams, 2);
  cr_expect_neq(fc->root, f->root);
  cr_expect_eq(fc->root->op, HLO_SUBTRACT);
  cr_expect_eq(fc->root->ops[0], fc->params[0]);
  /* Inline f at c1. */
  HloInstr *c1 = find(m, "c1");
  HloInstr *r = ir_inline(e, m->entry, f, c1->ops);
  cr_expect_eq(r->op, HLO_SUBTRACT);
  cr_expect_eq(r->ops[0], c1->ops[0]);
  cr_expect_eq(r->ops[1], c1->ops[1]);
  ir_replace(e, c1, r);
  cr_expect(ir_removed(c1));
  cr_expect(ir_remove_unused_comps(e)); /* the clone is unused */
  ir_end(e, true);
  cr_expect(verifies(m));
  cr_expect_null(hlo_module_find_comp(m, "f"));
  cr_expect_null(hlo_module_find_comp(m, "f.clone"));
  hlo_module_free(m);
}

Test(ir_edit, post_orders) {
  HloModule *m = parse(two_comps);
  HloComp **order;
  int n = ir_comp_post_order(m, &order);
  cr_expect_eq(n, 4);
  cr_expect_eq(order[n - 1], m->entry);
  free(order);
  int *calls = ir_call_counts(m);
  for (int k = 0; k < m->ncomps; k++)
    cr_expect_eq(calls[k], m->comps[k] == m->entry ? 0 : 1);
  free(calls);
  hlo_module_free(m);
}

Test(ir_edit, constants) {
  HloModule *m = parse(text);
  IrEdit *e = ir_begin(m);
  HloInstr *k = ir_scalar(e, m->entry, ET_F32, 1.5);
  cr_expect(ir_is_constant_value(k, 1.5));
  cr_expect_not(ir_is_constant_value(k, 1.0));
  HloInstr *b = ir_scalar_like(e, m->entry, find(m, "p0")->shape, 0);
  cr_expect_eq(b->op, HLO_BROADCAST);
  cr_expect(ir_is_constant_value(b, 0));
  HloInstr *ki = ir_scalar(e, m->entry, ET_S32, 7);
  int64_t v;
  cr_expect(ir_is_int_constant(ki, &v));
  cr_expect_eq(v, 7);
  double s;
  cr_expect(ir_constant_splat(k, &s));
  cr_expect_eq(s, 1.5);
  ir_end(e, true);
  hlo_module_free(m);
}

/* What ir_end leaves behind: ids renumbered 0..n-1 with each computation's
 * contiguous, lists put back in topological order only where they are not,
 * computations callees first, and fresh names that stay unique across edits
 * (the module's name_suffix_hint) and across an edit nested in another. */
static const char reduce_text[] =
    "HloModule m\n"
    "add {\n"
    "  x = f32[] parameter(0)\n"
    "  y = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(x, y)\n"
    "}\n"
    "ENTRY main {\n"
    "  p0 = f32[4] parameter(0)\n"
    "  n = f32[4] negate(p0)\n"
    "  e = f32[4] exponential(n)\n"
    "  z = f32[] constant(0)\n"
    "  r = f32[] reduce(e, z), dimensions={0}, to_apply=add\n"
    "  ROOT t = (f32[4], f32[]) tuple(e, r)\n"
    "}\n";

Test(ir_edit, end_renumbers_ids_densely_per_computation) {
  HloModule *m = parse(reduce_text);
  IrEdit *e = ir_begin(m);
  HloComp *entry = m->entry;
  /* Clones and removals leave holes in the id range. */
  for (int k = 0; k < 50; k++)
    ir_remove(e, ir_clone(e, entry, find(m, "n"), NULL, 1, &entry->params[0]));
  HloInstr *c = ir_clone(e, entry, find(m, "n"), NULL, 1, &entry->params[0]);
  ir_replace_all_uses(e, find(m, "n"), c);
  ir_remove(e, find(m, "n"));
  cr_assert(ir_end(e, true));
  int total = 0;
  for (int ci = 0; ci < m->ncomps; ci++) {
    HloComp *comp = m->comps[ci];
    for (int k = 0; k < comp->ninstrs; k++)
      cr_expect_eq(comp->instrs[k]->id, total + k, "%s has id %d, expected %d",
                   comp->instrs[k]->name, comp->instrs[k]->id, total + k);
    total += comp->ninstrs;
  }
  cr_expect_eq(m->next_id, total);
  cr_expect_eq(total, 3 + 6);
  cr_expect(verifies(m));
  hlo_module_free(m);
}

Test(ir_edit, end_reorders_only_what_is_out_of_order) {
  HloModule *m = parse(reduce_text);
  IrEdit *e = ir_begin(m);
  HloComp *entry = m->entry;
  /* A new instruction at the end that e (earlier in the list) now reads:
   * the list is no longer topological and ir_end must fix it. */
  HloInstr *p0 = entry->params[0];
  HloInstr *ab = ir_unary(e, entry, HLO_ABS, p0);
  ir_set_operand(e, find(m, "e"), 0, ab);
  cr_assert(ir_end(e, true));
  int pos_abs = -1, pos_e = -1, pos_n = -1;
  for (int k = 0; k < entry->ninstrs; k++) {
    if (entry->instrs[k] == ab)
      pos_abs = k;
    if (strcmp(entry->instrs[k]->name, "e") == 0)
      pos_e = k;
    if (strcmp(entry->instrs[k]->name, "n") == 0)
      pos_n = k;
  }
  cr_assert(pos_abs >= 0 && pos_e >= 0);
  cr_expect_lt(pos_abs, pos_e);
  /* n stays where it was (first after the parameter). */
  cr_expect_eq(pos_n, 1);
  cr_expect(verifies(m));
  /* Callees stay before callers. */
  cr_expect_eq(m->comps[m->ncomps - 1], entry);
  hlo_module_free(m);
}

Test(ir_edit, end_fresh_names_stay_unique_across_edits) {
  HloModule *m = parse(reduce_text);
  IrEdit *e = ir_begin(m);
  HloInstr *a = ir_unary(e, m->entry, HLO_ABS, m->entry->params[0]);
  ir_end(e, true);
  /* A computation named past every suffix, added by a later edit that
   * makes no instruction name before it. */
  e = ir_begin(m);
  HloComp *c = ir_new_comp(e, "helper.900");
  HloInstr *x = ir_add_param(e, c, shape_scalar(m->arena, ET_F32), "x");
  c->root = x;
  ir_end(e, true);
  e = ir_begin(m);
  HloInstr *b = ir_unary(e, m->entry, HLO_ABS, m->entry->params[0]);
  /* A second edit opened while the first is open makes names too. */
  IrEdit *inner = ir_begin(m);
  HloInstr *d = ir_unary(inner, m->entry, HLO_ABS, m->entry->params[0]);
  ir_end(inner, true);
  HloInstr *f = ir_unary(e, m->entry, HLO_ABS, m->entry->params[0]);
  ir_end(e, true);
  const char *names[] = {a->name, x->name, b->name, d->name, f->name};
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      cr_expect_str_neq(names[i], names[j]);
  /* Past helper.900 and x's own number. */
  int64_t nb = atoll(strrchr(b->name, '.') + 1);
  cr_expect_gt(nb, 900);
  hlo_module_free(m);
}
