/*
 * devices.c - a run over every device of a module: replica_count x
 * num_partitions instances of the entry computation, one thread each, with
 * its own interpreter state, arguments and result arena, meeting at
 * collectives (lib/support/rendezvous.h).  Device d is replica
 * d / num_partitions, partition d % num_partitions.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

int64_t eval_device_count(const HloModule *m) {
  int64_t r = m->replica_count > 0 ? m->replica_count : 1;
  int64_t p = m->num_partitions > 0 ? m->num_partitions : 1;
  return r > INT32_MAX / p ? -1 : r * p;
}

typedef struct DeviceRun {
  pthread_t thread;
  int dev;
  const HloModule *m;
  int nargs;
  Literal *const *args;
  Arena *out;
  EvalOptions o;
  Literal *result;
  Diag d;
  EvalStatus st;
  bool ok;
} DeviceRun;

static void *device_main(void *arg) {
  DeviceRun *r = arg;
  r->ok = eval_module(r->m, r->nargs, r->args, r->out, &r->o, &r->result, &r->d, &r->st);
  rdv_exit(r->o.world, r->dev, !r->ok, r->d.msg);
  return NULL;
}

bool eval_module_devices(const HloModule *m, int nargs,
                         Literal *const *const *args, Arena *const *outs,
                         const EvalOptions *o, Literal **results, Diag *d,
                         EvalStatus *st) {
  int64_t n = eval_device_count(m);
  EvalOptions base;
  if (o) base = *o;
  else eval_options_default(&base);
  if (n == 1) {
    base.world = NULL;
    return eval_module(m, nargs, args[0], outs[0], &base, &results[0], d, st);
  }
  if (n < 1 || n > 4096)
    return diag_error(d, (Loc){0}, "%lld devices are more than the interpreter runs "
                      "(at most 4096)", (long long)n);
  int64_t parts = m->num_partitions > 0 ? m->num_partitions : 1;
  Rendezvous *w = rdv_new((int)n);
  DeviceRun *runs = xcalloc((size_t)n, sizeof *runs);
  int started = 0;
  for (int k = 0; k < n; k++) {
    DeviceRun *r = &runs[k];
    r->dev = k;
    r->m = m;
    r->nargs = nargs;
    r->args = args[k];
    r->out = outs[k];
    r->o = base;
    r->o.world = w;
    r->o.replica_id = k / parts;
    r->o.partition_id = k % parts;
    if (base.mem_budget > 0) r->o.mem_budget = base.mem_budget / n > 0 ? base.mem_budget / n : 1;
    if (pthread_create(&r->thread, NULL, device_main, r) != 0) {
      /* the ones started cannot meet the missing ones: they are abandoned */
      for (int j = k; j < n; j++) rdv_exit(w, j, true, "no thread for the device");
      break;
    }
    started++;
  }
  for (int k = 0; k < started; k++) pthread_join(runs[k].thread, NULL);
  bool ok = started == n;
  for (int k = 0; k < started; k++) ok &= runs[k].ok;
  int bad = rdv_first_failed(w);
  if (!ok) {
    if (bad < 0 || bad >= started) {
      diag_error(d, (Loc){0}, "device %d: could not start a thread", started);
    } else {
      DeviceRun *r = &runs[bad];
      diag_error(d, r->d.loc, "device %d (replica %lld, partition %lld): %s", bad,
                 (long long)r->o.replica_id, (long long)r->o.partition_id,
                 r->d.msg ? r->d.msg : "failed");
      if (st) *st = r->st;
    }
  } else if (st) {
    memset(st, 0, sizeof *st);
    for (int k = 0; k < n; k++) st->peak_bytes += runs[k].st.peak_bytes;
  }
  for (int k = 0; k < n; k++) {
    results[k] = ok ? runs[k].result : NULL;
    diag_clear(&runs[k].d);
  }
  free(runs);
  rdv_free(w);
  return ok;
}
