/*
 * ir.c - creating modules, computations and instructions, and the opcode
 * table's lookups.
 */
#include "hlo.h"

#include <string.h>

static const struct {
  const char *name;
  int arity;
} op_table[] = {
#define HLO_OP(id, name, arity) {name, arity},
#include "opcodes.def"
#undef HLO_OP
};

const char *hlo_op_name(HloOp op) {
  return (unsigned)op < HLO_OP_COUNT ? op_table[op].name : "invalid-opcode";
}

int hlo_op_arity(HloOp op) { return op_table[op].arity; }

int hlo_op_from_name(const char *s, size_t n) {
  /* The table is in XLA's enum order, which is not the names' order
   * ("count-leading-zeros" stands where kClz sorts), so scan it.  The parser
   * has its own hash; this is for the few other callers. */
  for (int op = 0; op < HLO_OP_COUNT; op++)
    if (strncmp(op_table[op].name, s, n) == 0 && op_table[op].name[n] == 0)
      return op;
  return -1;
}

bool hlo_op_is_elementwise_unary(HloOp op) {
  switch (op) {
  case HLO_ABS: case HLO_ACOS: case HLO_ACOSH: case HLO_ASIN: case HLO_ASINH:
  case HLO_ATAN: case HLO_ATANH: case HLO_CBRT: case HLO_CEIL: case HLO_CLZ:
  case HLO_COS: case HLO_COSH: case HLO_ERF: case HLO_EXP: case HLO_EXPM1:
  case HLO_FLOOR: case HLO_IMAG: case HLO_IS_FINITE: case HLO_LOG:
  case HLO_LOG1P: case HLO_LOGISTIC: case HLO_NEGATE: case HLO_NOT:
  case HLO_POPCNT: case HLO_REAL: case HLO_ROUND_NEAREST_AFZ:
  case HLO_ROUND_NEAREST_EVEN: case HLO_RSQRT: case HLO_SIGN: case HLO_SIN:
  case HLO_SINH: case HLO_SQRT: case HLO_TAN: case HLO_TANH:
  case HLO_CONVERT: case HLO_BITCAST_CONVERT: case HLO_REDUCE_PRECISION:
  case HLO_COPY:
    return true;
  default:
    return false;
  }
}

bool hlo_op_is_elementwise_binary(HloOp op) {
  switch (op) {
  case HLO_ADD: case HLO_ATAN2: case HLO_COMPARE: case HLO_COMPLEX:
  case HLO_DIVIDE: case HLO_MAXIMUM: case HLO_MINIMUM: case HLO_MULTIPLY:
  case HLO_MULHI: case HLO_POWER: case HLO_REMAINDER: case HLO_SUBTRACT:
  case HLO_AND: case HLO_OR: case HLO_XOR: case HLO_SHIFT_LEFT:
  case HLO_SHIFT_RIGHT_ARITHMETIC: case HLO_SHIFT_RIGHT_LOGICAL:
  case HLO_STOCHASTIC_CONVERT:
    return true;
  default:
    return false;
  }
}

bool hlo_op_is_elementwise(HloOp op) {
  return hlo_op_is_elementwise_unary(op) || hlo_op_is_elementwise_binary(op) ||
         op == HLO_SELECT || op == HLO_CLAMP;
}

int hlo_bitcast_bits(ElemType et) {
  return et == ET_PRED ? 8 : et_bits(et);
}

bool hlo_bitcast_convert_resizes(const HloInstr *i) {
  return i->op == HLO_BITCAST_CONVERT && i->nops == 1 &&
         shape_is_array(i->shape) && shape_is_array(i->ops[0]->shape) &&
         hlo_bitcast_bits(i->ops[0]->shape->et) != hlo_bitcast_bits(i->shape->et);
}

/* XLA's CPU (through JAX) refuses pred beside any other type (StableHLO's
 * pred is 1 bit, HLO's 8) and refuses or aborts on c64 beside c128
 * (BitcastDtypesExpander has no complex case): with no answer of XLA's to
 * follow, these are refused. */
const char *hlo_bitcast_convert_unsupported(ElemType from, ElemType to) {
  if (from == to)
    return NULL;
  if (from == ET_PRED || to == ET_PRED)
    return "pred and another element type";
  if (!et_is_array(from) || !et_is_array(to))
    return "these element types";
  if (hlo_bitcast_bits(from) == hlo_bitcast_bits(to))
    return NULL;
  if (et_is_complex(from) || et_is_complex(to))
    return "complex types of different widths";
  if (hlo_bitcast_bits(from) > 64 || hlo_bitcast_bits(to) > 64)
    return "these element types";
  return NULL;
}

bool hlo_instr_is_elementwise(const HloInstr *i) {
  return hlo_op_is_elementwise(i->op) && !hlo_bitcast_convert_resizes(i);
}

HloModule *hlo_module_new(const char *name) {
  Arena *a = arena_new();
  HloModule *m = ARENA_NEW(a, HloModule);
  m->arena = a;
  m->name = arena_strdup(a, name);
  return m;
}

void hlo_module_free(HloModule *m) {
  if (m)
    arena_free(m->arena);
}

HloComp *hlo_comp_new(HloModule *m, const char *name) {
  HloComp *c = ARENA_NEW(m->arena, HloComp);
  c->name = arena_strdup(m->arena, name);
  c->module = m;
  if (m->ncomps == m->capcomps) {
    int cap = m->capcomps ? m->capcomps * 2 : 8;
    HloComp **n = ARENA_ARRAY(m->arena, HloComp *, cap);
    if (m->ncomps)
      memcpy(n, m->comps, sizeof(HloComp *) * (size_t)m->ncomps);
    m->comps = n;
    m->capcomps = cap;
  }
  m->comps[m->ncomps++] = c;
  return c;
}

void hlo_comp_append(HloComp *c, HloInstr *i) {
  Arena *a = c->module->arena;
  if (c->ninstrs == c->capinstrs) {
    int cap = c->capinstrs ? c->capinstrs * 2 : 8;
    HloInstr **n = ARENA_ARRAY(a, HloInstr *, cap);
    if (c->ninstrs)
      memcpy(n, c->instrs, sizeof(HloInstr *) * (size_t)c->ninstrs);
    c->instrs = n;
    c->capinstrs = cap;
  }
  c->instrs[c->ninstrs++] = i;
  i->parent = c;
}

HloInstr *hlo_instr_new(HloComp *c, HloOp op, Shape *shape, int nops,
                        HloInstr *const *ops) {
  HloModule *m = c->module;
  HloInstr *i = ARENA_NEW(m->arena, HloInstr);
  i->op = op;
  i->shape = shape;
  i->nops = nops;
  if (nops)
    i->ops = arena_memdup(m->arena, ops, sizeof(HloInstr *) * (size_t)nops);
  i->id = m->next_id++;
  i->cross_program_prefetch_index = -1;
  hlo_comp_append(c, i);
  return i;
}

HloComp *hlo_module_find_comp(const HloModule *m, const char *name) {
  for (int i = 0; i < m->ncomps; i++)
    if (strcmp(m->comps[i]->name, name) == 0)
      return m->comps[i];
  return NULL;
}

HloInstr *hlo_comp_find_instr(const HloComp *c, const char *name) {
  for (int i = 0; i < c->ninstrs; i++)
    if (strcmp(c->instrs[i]->name, name) == 0)
      return c->instrs[i];
  return NULL;
}
