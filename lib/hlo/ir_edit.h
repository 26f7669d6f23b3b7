/*
 * ir_edit.h - editing the HLO IR: the helpers every pass shares.
 *
 * A pass opens an IrEdit on a module, changes it through these functions and
 * closes it with ir_end.  The IrEdit keeps what editing needs and hlo.h does
 * not store: the users of every instruction and the instructions that take
 * part in control dependencies (both built on first use, so a pass that
 * finds nothing to do costs one walk over the module), the next free name
 * suffix (new instructions get module-unique names in XLA's "add.42"
 * style) and the call sites of each computation.
 *
 * Conventions:
 *   - New instructions are appended to their computation; ir_end puts every
 *     computation back into a topological order that keeps the existing order
 *     wherever it already is one, and orders computations callees first.  So a
 *     pass may create instructions freely and need not place them.
 *   - A removed instruction has parent == NULL; it stays in its computation's
 *     list until ir_end drops it.  Loops over c->instrs skip removed ones with
 *     ir_removed().
 *   - Attribute arrays of an instruction may be shared with its clones: never
 *     change one in place, assign a fresh array.
 *   - Instructions are never freed (they live in the module's arena).
 */
#ifndef XHLOC_IR_EDIT_H
#define XHLOC_IR_EDIT_H

#include "hlo.h"

typedef struct IrEdit IrEdit;

IrEdit *ir_begin(HloModule *m);
/* Drops removed instructions, restores topological order of instructions and
 * callees-first order of computations, frees e.  Returns `changed`.  When
 * anything changed it also renumbers the instructions' ids 0..n-1, each
 * computation's in one contiguous range (m->next_id = n), unless another
 * edit is open: ids are not stable across an edit. */
bool ir_end(IrEdit *e, bool changed);
HloModule *ir_module(const IrEdit *e);
Arena *ir_arena(const IrEdit *e);

/*
 * Users.  ir_users returns the distinct live users of i (each once, in no
 * particular but deterministic order); the array stays valid until the next
 * edit of i's users.
 */
int ir_users(IrEdit *e, HloInstr *i, HloInstr ***out);
int ir_user_count(IrEdit *e, HloInstr *i);
/* i is its computation's root. */
bool ir_is_root(const HloInstr *i);
static inline bool ir_removed(const HloInstr *i) { return i->parent == NULL; }
/* i takes part in a control dependency (either end). */
bool ir_has_control_deps(IrEdit *e, const HloInstr *i);

/*
 * Rewiring.
 */
void ir_set_operand(IrEdit *e, HloInstr *user, int k, HloInstr *v);
/* Every use of old (operands and the root) becomes a use of v.  v must be in
 * old's computation.  Returns whether anything changed. */
bool ir_replace_all_uses(IrEdit *e, HloInstr *old, HloInstr *v);
/* Same, but leaves the uses by `keep` alone. */
bool ir_replace_uses_except(IrEdit *e, HloInstr *old, HloInstr *v,
                            HloInstr *keep);
/* ir_replace_all_uses, then removes old (v stands for it, side effects
 * included) and the operands that become dead. */
void ir_replace(IrEdit *e, HloInstr *old, HloInstr *v);

/*
 * Removal.  ir_removable: not a parameter, not the root, no users, no side
 * effect, no control dependency.
 */
bool ir_removable(IrEdit *e, HloInstr *i);
void ir_remove(IrEdit *e, HloInstr *i);
/* Removes i if removable, then every operand that becomes removable. */
void ir_remove_dead(IrEdit *e, HloInstr *i);
/* Removes computations not reachable from the entry; returns whether any. */
bool ir_remove_unused_comps(IrEdit *e);

/*
 * Properties.
 */
/* XLA's HasSideEffectNoRecurse (collectives with a channel_id count, as
 * without SPMD partitioning). */
bool ir_has_side_effect(const HloInstr *i);
/* i or a computation it calls, transitively, has a side effect. */
bool ir_has_side_effect_deep(const HloInstr *i);
/* Instructions are identical apart from names, metadata and operands'
 * identity: same opcode, shape, attributes and called computations, and
 * operand k of a is operand k of b (for ir_same_instr) . */
bool ir_same_instr(const HloInstr *a, const HloInstr *b);
/* Same as ir_same_instr but ignores the operands altogether. */
bool ir_same_attrs(const HloInstr *a, const HloInstr *b);
/* A text that is the same for two computations exactly when they have the
 * same instructions in the same order, with the same operand positions,
 * attributes and called computations (names and metadata aside). */
void ir_comp_key(StrBuf *b, const HloComp *c);
/* Cheap structural hash of i's opcode, shape, operands and called
 * computations (equal for ir_same_instr instructions). */
uint64_t ir_instr_hash(const HloInstr *i);

/*
 * Creation.  New instructions are appended to c with a fresh name made from
 * the opcode or the cloned instruction's name: "<root>.<N>", N past every
 * ".N" suffix in the module ("multiply.38", "add.39").  Shapes are taken as
 * given (not copied).
 */
HloInstr *ir_new(IrEdit *e, HloComp *c, HloOp op, Shape *shape, int nops,
                 HloInstr *const *ops);
/* A copy of i (attributes shared, no control dependencies, fresh name from
 * i's name) in c with the given operands and shape (NULL: i's shape). */
HloInstr *ir_clone(IrEdit *e, HloComp *c, const HloInstr *i, Shape *shape,
                   int nops, HloInstr *const *ops);
/* A fresh module-unique name based on base ("add.3" -> "add.<N>"). */
char *ir_unique_name(IrEdit *e, const char *base);
/* A new computation named base_name, or a fresh variant when that is
 * taken (appended to the module; ir_end orders it). */
HloComp *ir_new_comp(IrEdit *e, const char *base_name);
/* A deep copy of c (its own called computations are shared, not copied). */
HloComp *ir_clone_comp(IrEdit *e, const HloComp *c, const char *suffix);
/* Clones callee's body into c with its parameters bound to args; returns
 * the clone of callee's root (an arg when the root is a parameter). */
HloInstr *ir_inline(IrEdit *e, HloComp *c, const HloComp *callee,
                    HloInstr *const *args);
/* Adds a parameter instruction to c (number = c->nparams). */
HloInstr *ir_add_param(IrEdit *e, HloComp *c, Shape *shape, const char *name);

HloInstr *ir_constant(IrEdit *e, HloComp *c, Literal *l);
/* A scalar constant of type et holding v (rounded as convert does). */
HloInstr *ir_scalar(IrEdit *e, HloComp *c, ElemType et, double v);
/* Same, broadcast to shape s (a plain scalar constant when s is scalar). */
HloInstr *ir_scalar_like(IrEdit *e, HloComp *c, const Shape *s, double v);
HloInstr *ir_unary(IrEdit *e, HloComp *c, HloOp op, HloInstr *x);
/* Elementwise binary op on equal-shaped operands (result shape of a, with
 * pred element type for compare). */
HloInstr *ir_binary(IrEdit *e, HloComp *c, HloOp op, HloInstr *a,
                    HloInstr *b);
HloInstr *ir_compare(IrEdit *e, HloComp *c, CmpDir dir, HloInstr *a,
                     HloInstr *b);
HloInstr *ir_select(IrEdit *e, HloComp *c, HloInstr *p, HloInstr *t,
                    HloInstr *f);
HloInstr *ir_convert(IrEdit *e, HloComp *c, HloInstr *x, ElemType et);
/* broadcast x into shape s (element type of x) with dimensions dims. */
HloInstr *ir_broadcast(IrEdit *e, HloComp *c, HloInstr *x, const Shape *s,
                       int ndims, const int64_t *dims);
HloInstr *ir_reshape(IrEdit *e, HloComp *c, HloInstr *x, int rank,
                     const int64_t *dims);
HloInstr *ir_transpose(IrEdit *e, HloComp *c, HloInstr *x, const int64_t *perm);
HloInstr *ir_gte(IrEdit *e, HloComp *c, HloInstr *t, int64_t index);
HloInstr *ir_tuple(IrEdit *e, HloComp *c, int n, HloInstr *const *elems);
HloInstr *ir_slice(IrEdit *e, HloComp *c, HloInstr *x, const SliceDim *sl);
/* reduce(x, init) over dims with the given scalar computation. */
HloInstr *ir_reduce(IrEdit *e, HloComp *c, HloInstr *x, HloInstr *init,
                    int ndims, const int64_t *dims, HloComp *fn);
/* A scalar computation "name(a, b) -> op(a, b)" of type et. */
HloComp *ir_scalar_binary_comp(IrEdit *e, const char *name, HloOp op,
                               ElemType et);

/*
 * Shapes and constants.
 */
/* Copy of s with element type et (layout kept). */
Shape *ir_shape_with_et(Arena *a, const Shape *s, ElemType et);
/* Whether i is a constant (or broadcast of a scalar constant) whose every
 * element equals v; exact comparison on the stored value. */
bool ir_is_constant_value(const HloInstr *i, double v);
/* i is an array constant (not elided) with every element the same; the
 * element's index 0 value in *v. */
bool ir_constant_splat(const HloInstr *i, double *v);
/* i is a constant or broadcast of a constant, following broadcasts. */
bool ir_is_int_constant(const HloInstr *i, int64_t *v);

/*
 * Order.
 */
/* The computations in post order: callees before callers (entry last among
 * what it reaches).  Heap array; returns the count. */
int ir_comp_post_order(const HloModule *m, HloComp ***out);
/* Instructions of c in post order (operands first), all of them including
 * those not reaching the root.  Heap array; returns the count. */
int ir_instr_post_order(const HloComp *c, HloInstr ***out);
/* Number of call sites of each computation (by index in m->comps) from live
 * instructions; heap array of m->ncomps ints. */
int *ir_call_counts(const HloModule *m);
/* The same for one computation, counted once per edit; a pass that moves
 * call sites says so with ir_note_calls (delta +1 / -1). */
int ir_call_count(IrEdit *e, const HloComp *c);
void ir_note_calls(IrEdit *e, const HloComp *c, int delta);

#endif
