/*
 * interp.c - xhlo-run --platform=interpreter: parses and verifies HLO text
 * (a .hlo file, or the original HLO embedded in a .thunks artifact) and runs
 * its entry computation on the reference interpreter (lib/eval), within the
 * memory and time budgets.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xhlo_run.h"

/* Half the physical memory: the default memory budget. */
static int64_t default_budget(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || size <= 0) return (int64_t)4 << 30;
  return (int64_t)pages * size / 2;
}

int run_interpreter(const RunOpts *o, const SrcFile *src) {
  int status = 1;
  Diag d = {0};
  HloModule **mods = NULL;
  int nm = 0;
  PtrVec leaves = {0};
  Arena *arena = arena_new();
  Literal **leaf_vals = NULL, **args = NULL, **res = NULL;
  int64_t *bounds = NULL;
  const char *path = src->name;
  ParseOptions popts = {.strip_glog_prefixes = true};
  nm = hlo_parse(src, &popts, &mods, &d);
  if (nm < 0) {
    nm = 0;
    goto diag_out;
  }
  HloModule *m = mods[0];
  if (!hlo_verify(m, &d)) goto diag_out;
  const HloComp *entry = m->entry;
  if (!entry) {
    fprintf(stderr, "xhlo-run: %s: the module has no entry computation\n", path);
    goto out;
  }

  /* entry parameter leaves, flattened */
  for (int k = 0; k < entry->nparams; k++) io_shape_leaves(entry->params[k]->shape, &leaves);
  int64_t budget = o->mem_budget > 0 ? o->mem_budget : default_budget();
  int64_t need = 0;
  for (int k = 0; k < leaves.len; k++) {
    const Shape *s = leaves.data[k];
    int64_t b = shape_is_array(s) ? shape_byte_size(s) : 0;
    need = b < 0 || need > INT64_MAX - b ? INT64_MAX : need + b;
  }
  if (need > budget) {
    fprintf(stderr, "xhlo-run: %s: the inputs need %lld bytes, more than the memory "
            "budget of %lld bytes (--mem-budget)\n", path, (long long)need, (long long)budget);
    goto out;
  }
  int nb = o->random_inputs ? io_index_bounds(m, &bounds) : 0;
  leaf_vals = gather_inputs(o, &leaves, bounds, nb, arena, path);
  if (!leaf_vals) goto out;
  /* rebuild tuple parameters from the leaves */
  args = io_entry_args(arena, entry, leaf_vals);

  EvalOptions eo;
  eval_options_default(&eo);
  eo.rng_seed = o->seed;
  eo.mem_budget = budget;
  eo.time_budget = o->time_budget;
  Literal *result = NULL;
  EvalStatus st;
  if (!eval_module(m, entry->nparams, args, arena, &eo, &result, &d, &st)) goto diag_out;

  int nres = io_literal_leaves(result, &res);
  status = emit_results(o, res, nres, arena);
  goto out;
diag_out:
  status = 1;
  diag_print(&d, stderr);
out:
  fflush(stdout);
  free(bounds);
  free(res);
  free(args);
  free(leaf_vals);
  vec_free(&leaves);
  arena_free(arena);
  for (int k = 0; k < nm; k++) hlo_module_free(mods[k]);
  free(mods);
  diag_clear(&d);
  return status;
}
