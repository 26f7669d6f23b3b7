/*
 * devices.c - xhlo-run on a compiled artifact of a module with
 * replica_count x num_partitions > 1 (read from its original HLO's header):
 * one platform and executor per device, each on its own thread, sharing
 * the artifact, the collective thunks meeting through the threads'
 * exchange (lib/support/exchange.h).  On the host they are staged in host
 * memory; on CUDA, device k is GPU k (a module of more devices than there
 * are GPUs is refused) and the collective thunks go through NCCL
 * (lib/runtime/collective_nccl.c), its communicators made through the
 * same exchange.
 *
 * Under an MPI launcher this process runs only its own device, rank d
 * running device d, and the exchange is MPI's: the host's collectives go
 * through MPI, and on CUDA the process takes GPU (its local rank % the
 * GPUs here; more processes on a machine than it has GPUs is refused) and
 * NCCL's unique ids go to the other processes through MPI.
 *
 * Inputs, outputs and expected outputs per device through {d} in their
 * specs, as on the interpreter; --compare runs the original HLO on the
 * interpreter's devices (under MPI: this process's device, its collectives
 * through MPI too) and compares every device's results.  Timing options
 * are for one device only.  Global inputs and results as on the
 * interpreter (interp.c), by the artifact's reference HLO (for a module
 * xhloc partitioned, the partitioned program); under MPI the first process
 * gathers the devices' results and writes the global ones.
 *
 * A device whose run fails abandons the others' pending exchanges, so they
 * fail too.  On a GPU a device may instead be waiting in NCCL for one that
 * failed (the failure came after their meeting, or while a communicator was
 * made), which no exchange can end: once a device has failed the others
 * get FAILED_GRACE_S seconds to end, and then the run ends with the first
 * failure's message without waiting for them (under MPI the failed
 * device's process exits, and the launcher ends the others).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/runtime/platform.h"
#include "xhlo_run.h"

#define FAILED_GRACE_S 5

void artifact_devices(const Artifact *a, int64_t *replicas, int64_t *partitions) {
  *replicas = *partitions = 1;
  const char *h = a->original_hlo ? strstr(a->original_hlo, "HloModule") : NULL;
  if (!h) return;
  const char *end = strchr(h, '\n');
  size_t len = end ? (size_t)(end - h) : strlen(h);
  char *line = xmalloc(len + 1);
  memcpy(line, h, len);
  line[len] = 0;
  const char *r = strstr(line, "replica_count="), *p = strstr(line, "num_partitions=");
  if (r) *replicas = strtoll(r + 14, NULL, 10);
  if (p) *partitions = strtoll(p + 15, NULL, 10);
  if (*replicas < 1) *replicas = 1;
  if (*partitions < 1) *partitions = 1;
  free(line);
}

/* How many device threads have ended, and how many of them failed. */
typedef struct Ended {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n, failed;
} Ended;

typedef struct Dev {
  pthread_t thread;
  Ended *ended;                   /* NULL: run on the calling thread (MPI) */
  int dev;
  Platform *plat;
  Executor *ex;
  Exchange *w;
  RunOpts o;
  StrVec inputs, outputs, expected;
  Literal **leaf_vals, **res;
  Literal *result;
  Arena *out;
  Diag d;
  bool ok;
} Dev;

static void *dev_main(void *arg) {
  Dev *v = arg;
  v->ok = executor_run(v->ex, v->leaf_vals, v->out, &v->result, &v->d);
  if (!v->ended) return NULL;
  v->w->end(v->w, v->dev, !v->ok, v->d.msg);
  pthread_mutex_lock(&v->ended->mu);
  v->ended->n++;
  if (!v->ok) v->ended->failed++;
  pthread_cond_broadcast(&v->ended->cv);
  pthread_mutex_unlock(&v->ended->mu);
  return NULL;
}

/* Waits until the n started device threads have ended; false when one
 * failed and the others did not all end within FAILED_GRACE_S of it. */
static bool wait_devices(Ended *e, int n) {
  struct timespec deadline = {0};
  bool timed = false, all = true;
  pthread_mutex_lock(&e->mu);
  while (e->n < n) {
    if (e->failed && !timed) {
      clock_gettime(CLOCK_REALTIME, &deadline);
      deadline.tv_sec += FAILED_GRACE_S;
      timed = true;
    }
    if (!timed) {
      pthread_cond_wait(&e->cv, &e->mu);
    } else if (pthread_cond_timedwait(&e->cv, &e->mu, &deadline) == ETIMEDOUT) {
      all = e->n >= n;
      break;
    }
  }
  pthread_mutex_unlock(&e->mu);
  return all;
}

/* Every device's results against the interpreter's run of the original HLO
 * on the same inputs: the n devices of devs, all of the module's, or under
 * MPI (xg) this process's one, whose interpreter meets the others' through
 * xg. */
static int compare_devices(const RunOpts *o, const Artifact *a, Dev *devs, int n,
                           Exchange *xg) {
  SrcFile *src = srcfile_from_string("original HLO", a->original_hlo, strlen(a->original_hlo));
  ParseOptions popts = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  Diag d = {0};
  int nm = hlo_parse(src, &popts, &mods, &d), status = 1;
  Literal ***args = xcalloc((size_t)n, sizeof *args);
  Arena **outs = xcalloc((size_t)n, sizeof *outs);
  Literal **refs = xcalloc((size_t)n, sizeof *refs);
  int ndev = xg && xg->self >= 0 ? xg->ndev : n;
  if (nm < 1 || !hlo_verify(mods[0], &d) || !mods[0]->entry ||
      eval_device_count(mods[0]) != ndev) {
    fprintf(stderr, "xhlo-run: --compare: the original HLO does not read back as a "
            "module of %d devices\n", ndev);
    goto out;
  }
  interp_prepare(o, mods[0]);
  for (int k = 0; k < n; k++) {
    args[k] = io_entry_args(devs[k].out, mods[0]->entry, devs[k].leaf_vals);
    outs[k] = devs[k].out;
  }
  EvalOptions eo;
  eval_options_default(&eo);
  eo.rng_seed = o->seed;
  eo.sort_stable_order = interp_sort_stable(o, true);
  eo.threads = o->threads;
  bool ran;
  if (xg && xg->self >= 0) {
    int64_t parts = mods[0]->num_partitions > 0 ? mods[0]->num_partitions : 1;
    eo.exchange = xg;
    eo.replica_id = xg->self / parts;
    eo.partition_id = xg->self % parts;
    ran = eval_module(mods[0], mods[0]->entry->nparams, args[0], outs[0], &eo, &refs[0], &d,
                      NULL);
    ran = mpi_finish(xg, ran, d.msg, "--compare (the interpreter)", parts);
  } else {
    ran = eval_module_devices(mods[0], mods[0]->entry->nparams, (Literal *const *const *)args,
                              outs, &eo, refs, &d, NULL);
    if (!ran) {
      fprintf(stderr, "xhlo-run: --compare: the interpreter failed on the original HLO: ");
      diag_print(&d, stderr);
    }
  }
  if (!ran) goto out;
  status = 0;
  printf("compare with the interpreter (atol %g, rtol %g):\n", o->cmp_atol, o->cmp_rtol);
  for (int k = 0; k < n; k++) {
    Literal **ref = NULL;
    int nr = io_literal_leaves(refs[k], &ref), nres = 0;
    while (devs[k].res[nres]) nres++;
    for (int j = 0; j < nr && j < nres; j++) {
      StrBuf why;
      sb_init(&why);
      bool same = io_compare(devs[k].res[j], ref[j], o->cmp_atol, o->cmp_rtol, &why);
      printf("  device %d output %d: %s\n", devs[k].dev, j, same ? "ok" : "MISMATCH");
      if (!same) {
        fprintf(stderr, "xhlo-run: --compare: device %d output %d does not match the "
                "interpreter: %s\n", devs[k].dev, j, why.s);
        status = 1;
      }
      sb_free(&why);
    }
    if (nr != nres) status = 1;
    free(ref);
  }
out:
  for (int k = 0; k < n; k++) free(args[k]);
  free(args);
  free(outs);
  free(refs);
  for (int k = 0; k < nm; k++) hlo_module_free(mods[k]);
  free(mods);
  srcfile_free(src);
  diag_clear(&d);
  return status;
}

/* The GPUs a run needs: one per device, or under MPI one per process of
 * the job on this machine; *gpu is this process's (MPI).  False after
 * printing why not. */
static bool check_gpus(const RunOpts *o, const char *path, int n, int64_t replicas,
                       int64_t partitions, int *gpu) {
  Diag cd = {0};
  int gpus = platform_cuda_device_count(&cd);
  int need = o->mpi ? mpi_local_size(o) : n;
  if (gpus >= 0 && gpus >= need) {
    *gpu = o->mpi ? mpi_local_rank(o) % gpus : 0;
    return true;
  }
  if (gpus < 0)
    fprintf(stderr, "xhlo-run: --platform=cuda: %s\n", cd.msg ? cd.msg : "no driver");
  else if (o->mpi)
    fprintf(stderr, "xhlo-run: %s: the MPI job runs %d processes on this machine and it "
            "has %d GPU%s; xhlo-run runs each process's device on a GPU of its own\n", path,
            need, gpus, gpus == 1 ? "" : "s");
  else
    fprintf(stderr, "xhlo-run: %s: the module needs %d devices (replica_count=%lld x "
            "num_partitions=%lld) and this machine has %d GPU%s; xhlo-run runs each "
            "device on a GPU of its own\n", path, n, (long long)replicas,
            (long long)partitions, gpus, gpus == 1 ? "" : "s");
  diag_clear(&cd);
  return false;
}

/* Under MPI, the global results: gathered to the first process, which
 * writes them.  The exit status. */
static int emit_gathered(const RunOpts *o, const SpmdIo *gio, Exchange *w, Dev *v, int nres) {
  bool ok;
  Literal ***all = mpi_gather_results(w, v->res, nres, v->out, &ok);
  int status = ok ? 0 : 1;
  if (all) status = emit_global_results(o, gio, (Literal **const *)all, nres, v->out);
  for (int d = 0; all && d < w->ndev; d++) free(all[d]);
  free(all);
  return status;
}

int run_thunks_devices(const RunOpts *o, const char *path, const Artifact *a,
                       const char *pname, int64_t replicas, int64_t partitions) {
  int64_t n64 = replicas * partitions;
  if (n64 > 256) {
    fprintf(stderr, "xhlo-run: %s: %lld devices are more than the 256 xhlo-run runs\n",
            path, (long long)n64);
    return 1;
  }
  int ndev = (int)n64, gpu = 0;
  bool cuda = strcmp(pname, "cuda") == 0;
  if (!cuda && strcmp(pname, "host") != 0) {
    fprintf(stderr, "xhlo-run: %s: a module of %d devices runs on the host or on CUDA "
            "GPUs (--platform=host, --platform=cuda)\n", path, ndev);
    return 1;
  }
  if (o->profile || o->trace || o->iterations > 0) {
    fprintf(stderr, "xhlo-run: %s: --profile, --trace and --iterations take a module "
            "of one device\n", path);
    return 1;
  }
  if (cuda && !check_gpus(o, path, ndev, replicas, partitions, &gpu)) return 1;
  /* the devices this process runs: all, as threads, or its own (MPI) */
  Exchange *w = o->mpi ? mpi_join(o, replicas, partitions, path) : xchg_threads_new(ndev);
  if (!w) return 1;
  bool mpi = w->self >= 0;
  int first = mpi ? w->self : 0, n = mpi ? 1 : ndev;
  int status = 1, nm = 0, nb = 0;
  Diag d = {0};
  Arena *arena = arena_new();
  HloModule **mods = NULL;
  SpmdIo sio;
  const SpmdIo *gio = NULL;
  int64_t *bounds = NULL;
  Literal ***vals = NULL;
  SrcFile *src = NULL;
  PtrVec leaves = {0};
  Dev *devs = xcalloc((size_t)n, sizeof *devs);
  Ended ended = {.n = 0};
  pthread_mutex_init(&ended.mu, NULL);
  pthread_cond_init(&ended.cv, NULL);
  uint8_t *kbytes = NULL;
  char *kpath = NULL;
  bool ready = false;
  for (int k = 0; k < a->nparams; k++) {
    Shape *s = hlo_parse_shape(arena, a->params[k].shape, &d);
    if (!s) {
      fprintf(stderr, "xhlo-run: the artifact's parameter shape: %s\n", d.msg);
      goto start;
    }
    vec_push(&leaves, s);
  }
  size_t klen = 0;
  bool kernels = artifact_has_kernels(&a->entry);
  kbytes = artifact_read_kernel_file(a, path, &klen, &d);
  if (!kbytes) {
    fprintf(stderr, "xhlo-run: %s\n", d.msg ? d.msg : "no kernel file");
    goto start;
  }
  const char *slash = strrchr(path, '/');
  size_t dl = slash ? (size_t)(slash - path + 1) : 0;
  kpath = xmalloc(dl + strlen(a->kernel_file) + 1);
  memcpy(kpath, path, dl);
  strcpy(kpath + dl, a->kernel_file);
  /* the reference HLO: how global inputs and results are cut */
  src = a->original_hlo ? srcfile_from_string("original HLO", a->original_hlo,
                                              strlen(a->original_hlo)) : NULL;
  ParseOptions hp = {.strip_glog_prefixes = true};
  if (src && (nm = hlo_parse(src, &hp, &mods, &d)) > 0 && mods[0]->entry &&
      io_spmd(arena, mods[0], &sio, &d))
    gio = &sio;
  if (nm < 0) nm = 0;
  diag_clear(&d);
  if (gio && o->random_inputs) nb = io_index_bounds(mods[0], &bounds);
  vals = gather_device_inputs(o, &leaves, bounds, nb, gio, ndev, mpi ? first : -1, arena,
                              path);
  if (!vals) goto start;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int sharing = mpi ? mpi_local_size(o) : n;
  PlatformOptions popts = {.threads = o->threads, .lib_path = o->lib_path,
                           .no_tf32 = o->no_tf32, .streams = o->streams};
  if (!popts.threads) popts.threads = cores > sharing ? (int)(cores / sharing) : 1;
  for (int k = 0; k < n; k++) {
    Dev *v = &devs[k];
    int dev = first + k;
    v->dev = dev;
    v->w = w;
    device_specs(o->inputs, dev, &v->inputs);
    device_specs(o->outputs, dev, &v->outputs);
    device_specs(o->expected, dev, &v->expected);
    v->o = *o;
    v->o.inputs = &v->inputs;
    v->o.outputs = &v->outputs;
    v->o.expected = &v->expected;
    v->o.seed = o->seed + (uint64_t)dev;
    v->out = arena_new();
    v->leaf_vals = vals[dev];
    vals[dev] = NULL;
    popts.device = mpi ? gpu : dev;
    if (!(v->plat = cuda ? platform_cuda_new(&popts, &d) : platform_host_new(&popts, &d)) ||
        !(v->ex = executor_new(a, v->plat, kernels ? kbytes : NULL, klen, kpath, &d))) {
      fprintf(stderr, "xhlo-run: %s: %s\n", path, d.msg ? d.msg : "no executor");
      goto start;
    }
    executor_set_device(v->ex, w, dev / partitions, dev % partitions);
  }
  ready = true;
start:
  if (mpi) {
    /* every process ends its run, also one that could not start it, so
     * that none waits for it */
    if (ready) dev_main(&devs[0]);
    bool all = mpi_finish_within(w, ready && devs[0].ok,
                                 ready ? devs[0].d.msg : "could not start", path, partitions,
                                 cuda ? FAILED_GRACE_S : 0);
    if (!all) goto out;
  } else {
    if (!ready) goto out;
    int started = 0;
    for (int k = 0; k < n; k++) {
      devs[k].ended = &ended;
      if (pthread_create(&devs[k].thread, NULL, dev_main, &devs[k]) != 0) {
        for (int j = k; j < n; j++) w->end(w, j, true, "no thread for the device");
        break;
      }
      started++;
    }
    if (!wait_devices(&ended, started)) {
      /* a device waits in NCCL for one that failed: its thread cannot be
       * joined, nor its GPU's state freed */
      char why[256];
      int bad = w->first_failed(w, why, sizeof why);
      fprintf(stderr, "xhlo-run: %s: device %d (replica %lld, partition %lld): %s\n"
              "xhlo-run: (the other devices did not end within %d s of that failure: "
              "waiting for it in the collective library; the run is abandoned)\n", path, bad,
              (long long)(bad / partitions), (long long)(bad % partitions),
              bad >= 0 && devs[bad].d.msg ? devs[bad].d.msg : "failed", FAILED_GRACE_S);
      fflush(stdout);
      fflush(stderr);
      _exit(1);
    }
    for (int k = 0; k < started; k++) pthread_join(devs[k].thread, NULL);
    bool ok = started == n;
    for (int k = 0; k < started; k++) ok &= devs[k].ok;
    if (!ok) {
      char why[256];
      int bad = w->first_failed(w, why, sizeof why);
      if (bad < 0 || bad >= started) bad = started < n ? started : 0;
      fprintf(stderr, "xhlo-run: %s: device %d (replica %lld, partition %lld): %s\n", path,
              bad, (long long)(bad / partitions), (long long)(bad % partitions),
              devs[bad].d.msg ? devs[bad].d.msg : "could not start");
      goto out;
    }
  }
  status = 0;
  bool global = results_global(o, gio);
  Literal ***res = xcalloc((size_t)n, sizeof *res);
  int nres = 0;
  for (int k = 0; k < n; k++) {
    int dev = devs[k].dev;
    nres = io_literal_leaves(devs[k].result, &devs[k].res);
    devs[k].res = xreallocarray(devs[k].res, (size_t)nres + 1, sizeof *devs[k].res);
    devs[k].res[nres] = NULL;
    res[k] = devs[k].res;
    if (global) continue;
    if (!o->quiet && !o->outputs->len)
      printf("device %d (replica %lld, partition %lld):\n", dev, (long long)(dev / partitions),
             (long long)(dev % partitions));
    int rc = emit_results(&devs[k].o, devs[k].res, nres, devs[k].out);
    if (rc) fprintf(stderr, "xhlo-run: (the results of device %d)\n", dev);
    if (rc) status = rc;
  }
  if (global && mpi) status = emit_gathered(o, gio, w, &devs[0], nres);
  else if (global) status = emit_global_results(o, gio, (Literal **const *)res, nres, devs[0].out);
  free(res);
  if (o->compare && compare_devices(o, a, devs, n, w) != 0) status = 1;
out:
  fflush(stdout);
  for (int k = 0; k < n; k++) {
    Dev *v = &devs[k];
    executor_free(v->ex);
    platform_free(v->plat);
    device_specs_free(&v->inputs);
    device_specs_free(&v->outputs);
    device_specs_free(&v->expected);
    free(v->leaf_vals);
    free(v->res);
    if (v->out) arena_free(v->out);
    diag_clear(&v->d);
  }
  free(devs);
  device_inputs_free(vals, ndev);
  free(bounds);
  for (int k = 0; k < nm; k++) hlo_module_free(mods[k]);
  free(mods);
  if (src) srcfile_free(src);
  xchg_free(w);
  pthread_mutex_destroy(&ended.mu);
  pthread_cond_destroy(&ended.cv);
  free(kbytes);
  free(kpath);
  vec_free(&leaves);
  arena_free(arena);
  diag_clear(&d);
  return status;
}
