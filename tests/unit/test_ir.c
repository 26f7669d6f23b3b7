/*
 * test_ir.c - the opcode table's lookups and the IR constructors of ir.c.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "../../lib/hlo/hlo.h"

Test(opcodes, every_name_maps_back) {
  for (int op = 0; op < HLO_OP_COUNT; op++) {
    const char *name = hlo_op_name((HloOp)op);
    cr_expect_eq(hlo_op_from_name(name, strlen(name)), op, "%s", name);
  }
}

Test(opcodes, prefixes_and_unknown_names) {
  cr_expect_eq(hlo_op_from_name("add-dependency", 3), HLO_ADD);
  cr_expect_eq(hlo_op_from_name("cosine", 6), HLO_COS);
  cr_expect_eq(hlo_op_from_name("count-leading-zeros", 19), HLO_CLZ);
  cr_expect_eq(hlo_op_from_name("ad", 2), -1);
  cr_expect_eq(hlo_op_from_name("frobnicate", 10), -1);
  cr_expect_eq(hlo_op_from_name("", 0), -1);
}

Test(opcodes, arity_and_classes) {
  cr_expect_eq(hlo_op_arity(HLO_ADD), 2);
  cr_expect_eq(hlo_op_arity(HLO_TUPLE), -1);
  cr_expect_eq(hlo_op_arity(HLO_PARAMETER), 0);
  cr_expect(hlo_op_is_elementwise_binary(HLO_ADD));
  cr_expect(hlo_op_is_elementwise_unary(HLO_EXP));
  cr_expect(hlo_op_is_elementwise(HLO_SELECT));
  cr_expect(!hlo_op_is_elementwise(HLO_DOT));
  cr_expect_str_eq(hlo_op_name(HLO_OPTIMIZATION_BARRIER), "opt-barrier");
}

Test(ir, build_and_find) {
  HloModule *m = hlo_module_new("m");
  HloComp *c = hlo_comp_new(m, "entry");
  int64_t dims[] = {2, 3};
  Shape *s = shape_array(m->arena, ET_F32, 2, dims);
  HloInstr *p = hlo_instr_new(c, HLO_PARAMETER, s, 0, NULL);
  p->name = arena_strdup(m->arena, "p");
  HloInstr *ops[] = {p, p};
  HloInstr *a = hlo_instr_new(c, HLO_ADD, s, 2, ops);
  a->name = arena_strdup(m->arena, "a");
  cr_expect_eq(c->ninstrs, 2);
  cr_expect_eq(a->ops[1], p);
  cr_expect_neq(a->id, p->id);
  cr_expect_eq(a->parent, c);
  cr_expect_eq(hlo_comp_find_instr(c, "a"), a);
  cr_expect_null(hlo_comp_find_instr(c, "b"));
  cr_expect_eq(hlo_module_find_comp(m, "entry"), c);
  cr_expect_null(hlo_module_find_comp(m, "other"));
  for (int i = 0; i < 100; i++)
    hlo_instr_new(c, HLO_ADD, s, 2, ops)->name = arena_strdup(m->arena, "x");
  cr_expect_eq(c->ninstrs, 102);
  cr_expect_eq(c->instrs[1], a);
  hlo_module_free(m);
}
