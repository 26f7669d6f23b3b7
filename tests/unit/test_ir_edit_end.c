/*
 * test_ir_edit_end.c - what ir_end leaves behind (lib/hlo/ir_edit.h): ids
 * renumbered 0..n-1 with each computation's contiguous, lists put back in
 * topological order only where they are not, computations callees first,
 * and fresh names that stay unique across edits (the module's
 * name_suffix_hint) and across an edit nested in another.
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

TestSuite(ir_edit_end, .fini = free_sources);

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

Test(ir_edit_end, renumbers_ids_densely_per_computation) {
  HloModule *m = parse(text);
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

Test(ir_edit_end, reorders_only_what_is_out_of_order) {
  HloModule *m = parse(text);
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

Test(ir_edit_end, fresh_names_stay_unique_across_edits) {
  HloModule *m = parse(text);
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
