/*
 * rng_keys.c - the Philox keys XLA's CPU compiler gives `rng` instructions,
 * so that rng-expander and the interpreter draw XLA's very numbers.
 *
 * XLA's RngExpander (the version in jaxlib 0.10.2, which the cross-check
 * runs) keys the k-th rng it expands in a module with a constant:
 *
 *   key = module_random ^ global_random
 *
 * module_random is the k-th draw of the module's own 64-bit Mersenne twister
 * (std::mt19937_64 seeded 42, fresh for each module); global_random the
 * next draw of a process-wide one, which in that build gives the sequence of
 * std::mt19937_64 seeded 8 (found by matching the keys XLA prints).  The
 * process-wide generator is not reset between compiles: these are the keys
 * of a module compiled first in its process, which scripts/xla-crosscheck
 * arranges.  The expander visits computations in post order (callees first)
 * and each computation's instructions in post order.
 */
#include "hlo.h"

#include <stdlib.h>

#include "ir_edit.h"

enum { MT_N = 312, MT_M = 156 };

typedef struct Mt64 {
  uint64_t s[MT_N];
  int i;
} Mt64;

static void mt64_seed(Mt64 *g, uint64_t seed) {
  g->s[0] = seed;
  for (int k = 1; k < MT_N; k++)
    g->s[k] = 6364136223846793005ULL * (g->s[k - 1] ^ (g->s[k - 1] >> 62)) +
              (uint64_t)k;
  g->i = MT_N;
}

static uint64_t mt64_next(Mt64 *g) {
  static const uint64_t upper = 0xFFFFFFFF80000000ULL, lower = 0x7FFFFFFFULL;
  static const uint64_t matrix = 0xB5026F5AA96619E9ULL;
  if (g->i >= MT_N) {
    for (int k = 0; k < MT_N; k++) {
      uint64_t x = (g->s[k] & upper) | (g->s[(k + 1) % MT_N] & lower);
      g->s[k] = g->s[(k + MT_M) % MT_N] ^ (x >> 1) ^ ((x & 1) ? matrix : 0);
    }
    g->i = 0;
  }
  uint64_t x = g->s[g->i++];
  x ^= (x >> 29) & 0x5555555555555555ULL;
  x ^= (x << 17) & 0x71D67FFFEDA60000ULL;
  x ^= (x << 37) & 0xFFF7EEE000000000ULL;
  x ^= x >> 43;
  return x;
}

uint64_t hlo_rng_key(int k) {
  Mt64 *mod = xmalloc(sizeof *mod), *glob = xmalloc(sizeof *glob);
  mt64_seed(mod, 42);
  mt64_seed(glob, 8);
  uint64_t key = 0;
  for (int j = 0; j <= k; j++)
    key = mt64_next(mod) ^ mt64_next(glob);
  free(mod);
  free(glob);
  return key;
}

/* XLA's HloComputation::MakeInstructionPostOrder, the rngs of it: a DFS
 * from each instruction without users, in list order, over an explicit
 * stack that takes operands (first on top) and then control predecessors;
 * an instruction is placed when it is met again after its inputs. */
static void rngs_in_post_order(const HloComp *c, uint8_t *state, PtrVec *rngs) {
  int n = c->ninstrs;
  for (int k = 0; k < n; k++) {
    const HloInstr *i = c->instrs[k];
    for (int j = 0; j < i->nops; j++)
      if (i->ops[j]->parent == c) state[i->ops[j]->id] |= 4; /* has a user */
  }
  Vec(HloInstr *) stack = {0};
  for (int k = 0; k < n; k++) {
    HloInstr *start = c->instrs[k];
    if (state[start->id] & 4)
      continue;
    vec_push(&stack, start);
    while (stack.len > 0) {
      HloInstr *i = stack.data[stack.len - 1];
      if (state[i->id] & 3) {        /* met before: place it once */
        stack.len--;
        if ((state[i->id] & 3) == 1) {
          state[i->id] = (uint8_t)((state[i->id] & ~3) | 2);
          if (i->op == HLO_RNG)
            vec_push(rngs, i);
        }
        continue;
      }
      state[i->id] |= 1;
      for (int j = i->nops - 1; j >= 0; j--)
        if (i->ops[j]->parent == c)
          vec_push(&stack, i->ops[j]);
      for (int j = 0; j < i->ncontrol_preds; j++)
        if (i->control_preds[j]->parent == c)
          vec_push(&stack, i->control_preds[j]);
    }
  }
  vec_free(&stack);
}

int hlo_rng_order(const HloModule *m, HloInstr ***out) {
  HloComp **comps;
  int nc = ir_comp_post_order(m, &comps);
  PtrVec rngs = {0};
  uint8_t *state = xcalloc((size_t)m->next_id + 1, 1);
  for (int c = 0; c < nc; c++)
    if (!comps[c]->fusion_instr)
      rngs_in_post_order(comps[c], state, &rngs);
  free(state);
  free(comps);
  *out = (HloInstr **)rngs.data;
  return rngs.len;
}
