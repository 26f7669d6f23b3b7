/*
 * interp.c - xhlo-run --platform=interpreter: parses and verifies HLO text
 * (a .hlo file, or the original HLO embedded in a .thunks artifact) and runs
 * its entry computation on the reference interpreter (lib/eval), within the
 * memory and time budgets, its reduces in XLA's CPU order unless
 * --reduction-order=in-order and its sorts in XLA's CPU order unless
 * --sort-order=stable (lib/eval/sort.c).
 *
 * A module with replica_count x num_partitions > 1 runs on that many
 * devices (threads, meeting at collectives).  Each device d takes its own
 * --input, --output and --expected-output specs: "{d}" in a spec stands for
 * d (@x.{d}.npy); a spec without it is the same for every device.  Printed
 * results are preceded by a line naming the device; --random-inputs gives
 * device d the seed SEED + d.  Under an MPI launcher each process runs its
 * own device (rank d, device d), the collectives through MPI.
 *
 * A partitioned program (every entry parameter with its sharding=, as
 * spmd-partitioning and XLA leave them) also takes global arrays: an input
 * without {d} that is a global array of the parameter's sharding is cut
 * into each device's shard.  When the module records its global result
 * (xhlo.global_result_shape, xhlo.result_sharding), the devices' results
 * are put together and written once, as JAX returns them (under MPI, by
 * the first process, which gathers them).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/hlo/topk_sorts.h"
#include "../../lib/hlo/tree_reduction.h"
#include "xhlo_run.h"

/* Half the physical memory: the default memory budget. */
static int64_t default_budget(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || size <= 0) return (int64_t)4 << 30;
  return (int64_t)pages * size / 2;
}

/* Per device: its specs, inputs, arguments and results. */
typedef struct DevIo {
  RunOpts o;
  StrVec inputs, outputs, expected;
  Literal **leaf_vals, **args, **res;
  Arena *out;
} DevIo;

static void devio_free(DevIo *io) {
  device_specs_free(&io->inputs);
  device_specs_free(&io->outputs);
  device_specs_free(&io->expected);
  free(io->leaf_vals);
  free(io->args);
  free(io->res);
  if (io->out) arena_free(io->out);
}

void interp_prepare(const RunOpts *o, HloModule *m) {
  if (!o->reduce_in_order) {
    hlo_one_element_sums(m);
    hlo_tree_reductions(m, true);
  }
  if (o->sort_order != SORT_ORDER_STABLE) hlo_mark_topk_sorts(m);
}

bool interp_sort_stable(const RunOpts *o, bool for_compare) {
  if (o->sort_order == SORT_ORDER_UNSET) return for_compare;
  return o->sort_order == SORT_ORDER_STABLE;
}

int run_interpreter(const RunOpts *o, const SrcFile *src) {
  int status = 1;
  Diag d = {0};
  HloModule **mods = NULL;
  int nm = 0;
  PtrVec leaves = {0};
  Arena *arena = arena_new();
  int64_t *bounds = NULL;
  DevIo *io = NULL;
  int64_t ndev = 0, nrun = 0;
  Exchange *xg = NULL;
  const char *path = src->name;
  ParseOptions popts = {.strip_glog_prefixes = true};
  nm = hlo_parse(src, &popts, &mods, &d);
  if (nm < 0) {
    nm = 0;
    goto diag_out;
  }
  HloModule *m = mods[0];
  StrBuf note;
  sb_init(&note);
  bool counted = hlo_set_device_counts(m, o->num_replicas, o->num_partitions, &note, &d);
  if (note.len) diag_print_at(stderr, m->loc, "note", note.s);
  sb_free(&note);
  if (!counted || !hlo_verify(m, &d)) goto diag_out;
  interp_prepare(o, m);
  const HloComp *entry = m->entry;
  if (!entry) {
    fprintf(stderr, "xhlo-run: %s: the module has no entry computation\n", path);
    goto out;
  }
  ndev = eval_device_count(m);
  if (ndev < 1 || ndev > 4096) {
    fprintf(stderr, "xhlo-run: %s: replica_count x num_partitions is more than the "
            "4096 devices the interpreter runs\n", path);
    ndev = 0;
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
  need = need > INT64_MAX / ndev ? INT64_MAX : need * ndev;
  if (need > budget) {
    fprintf(stderr, "xhlo-run: %s: the inputs need %lld bytes, more than the memory "
            "budget of %lld bytes (--mem-budget)\n", path, (long long)need, (long long)budget);
    goto out;
  }
  int nb = o->random_inputs ? io_index_bounds(m, &bounds) : 0;
  int64_t parts = m->num_partitions > 0 ? m->num_partitions : 1;
  /* under MPI: this process's device only */
  if (o->mpi && (ndev > 1 || o->mpi_size > 1)) {
    xg = mpi_join(o, ndev / parts, parts, path);
    if (!xg) goto out;
  }
  int64_t first = xg ? xg->self : 0;
  nrun = xg ? 1 : ndev;
  SpmdIo sio;
  if (ndev > 1 && !io_spmd(arena, m, &sio, &d)) goto diag_out;
  const SpmdIo *gio = ndev > 1 ? &sio : NULL;
  Literal ***vals = gather_device_inputs(o, &leaves, bounds, nb, gio, ndev, xg ? first : -1,
                                         arena, path);
  if (!vals) {
    /* the others do not wait for this process's device */
    if (xg) mpi_finish(xg, false, "its inputs could not be read", path, parts);
    goto out;
  }
  io = xcalloc((size_t)nrun, sizeof *io);
  Literal ***args = xcalloc((size_t)nrun, sizeof *args);
  Arena **outs = xcalloc((size_t)nrun, sizeof *outs);
  Literal **results = xcalloc((size_t)nrun, sizeof *results);
  bool ok = true;
  for (int64_t j = 0; j < nrun && ok; j++) {
    int64_t k = first + j;
    DevIo *v = &io[j];
    device_specs(o->inputs, k, &v->inputs);
    device_specs(o->outputs, k, &v->outputs);
    device_specs(o->expected, k, &v->expected);
    v->o = *o;
    v->o.inputs = &v->inputs;
    v->o.outputs = &v->outputs;
    v->o.expected = &v->expected;
    v->o.seed = o->seed + (uint64_t)k;
    v->leaf_vals = vals[k];
    vals[k] = NULL;
    /* rebuild tuple parameters from the leaves */
    v->args = io_entry_args(arena, entry, v->leaf_vals);
    v->out = arena_new();
    args[j] = v->args;
    outs[j] = v->out;
  }

  EvalOptions eo;
  eval_options_default(&eo);
  eo.rng_seed = o->seed;
  eo.sort_stable_order = interp_sort_stable(o, false);
  eo.threads = o->threads;
  eo.mem_budget = budget;
  eo.time_budget = o->time_budget;
  EvalStatus st;
  if (xg) {
    eo.exchange = xg;
    eo.replica_id = first / parts;
    eo.partition_id = first % parts;
    if (ok) ok = eval_module(m, entry->nparams, args[0], outs[0], &eo, &results[0], &d, &st);
    StrBuf why;
    sb_init(&why);
    if (!ok && d.has_error) {
      if (d.loc.line) sb_printf(&why, "%d:%d: ", d.loc.line, d.loc.col);
      sb_puts(&why, d.msg ? d.msg : "failed");
    }
    ok = mpi_finish(xg, ok, ok ? NULL : why.s ? why.s : "could not start", path, parts);
    sb_free(&why);
    diag_clear(&d);
  } else if (ok) {
    ok = eval_module_devices(m, entry->nparams, (Literal *const *const *)args, outs, &eo,
                             results, &d, &st);
  }
  free(args);
  free(outs);
  if (!ok) {
    device_inputs_free(vals, ndev);
    free(results);
    if (d.has_error) goto diag_out;
    goto out;
  }
  device_inputs_free(vals, ndev);
  status = 0;
  if (results_global(o, gio)) {
    int nres = 0;
    Literal ***res = xcalloc((size_t)nrun, sizeof *res);
    for (int64_t j = 0; j < nrun; j++) {
      nres = io_literal_leaves(results[j], &io[j].res);
      res[j] = io[j].res;
    }
    if (xg) {
      /* the first process writes the devices' results, gathered */
      bool gathered;
      Literal ***all = mpi_gather_results(xg, res[0], nres, io[0].out, &gathered);
      status = gathered ? 0 : 1;
      if (all) status = emit_global_results(o, gio, (Literal **const *)all, nres, io[0].out);
      for (int64_t k = 0; all && k < ndev; k++) free(all[k]);
      free(all);
    } else {
      status = emit_global_results(o, gio, (Literal **const *)res, nres, io[0].out);
    }
    free(res);
    free(results);
    goto out;
  }
  for (int64_t j = 0; j < nrun; j++) {
    int64_t k = first + j;
    int nres = io_literal_leaves(results[j], &io[j].res);
    if (ndev > 1 && !o->quiet && !o->outputs->len)
      printf("device %lld (replica %lld, partition %lld):\n", (long long)k,
             (long long)(k / parts), (long long)(k % parts));
    int rc = emit_results(&io[j].o, io[j].res, nres, io[j].out);
    if (rc && ndev > 1) fprintf(stderr, "xhlo-run: (the results of device %lld)\n", (long long)k);
    if (rc) status = rc;
  }
  free(results);
  goto out;
diag_out:
  status = 1;
  diag_print(&d, stderr);
out:
  fflush(stdout);
  free(bounds);
  for (int64_t k = 0; io && k < nrun; k++) devio_free(&io[k]);
  xchg_free(xg);
  free(io);
  vec_free(&leaves);
  arena_free(arena);
  for (int k = 0; k < nm; k++) hlo_module_free(mods[k]);
  free(mods);
  diag_clear(&d);
  return status;
}
