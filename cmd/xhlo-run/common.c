/*
 * common.c - the steps every way of running shares: turning --input specs
 * or --random-inputs into one literal per entry parameter leaf, and writing
 * the results (--output, printing) and checking them (--expected-output).
 * Messages go to stderr here; the callers turn failures into exit 1.
 */
#include <stdlib.h>
#include <string.h>

#include "xhlo_run.h"

Literal **gather_inputs(const RunOpts *o, const PtrVec *leaves,
                        const int64_t *bounds, int nbounds, Arena *a,
                        const char *path) {
  Literal **vals = xcalloc((size_t)leaves->len + 1, sizeof *vals);
  if (o->random_inputs) {
    io_random_leaves(a, leaves, bounds, nbounds, o->seed, vals);
    return vals;
  }
  int want = 0;
  for (int k = 0; k < leaves->len; k++) want += ((const Shape *)leaves->data[k])->et != ET_TOKEN;
  if (o->inputs->len != want) {
    fprintf(stderr, "xhlo-run: %s takes %d input%s, %d given (use --input once per "
            "parameter leaf, or --random-inputs)\n",
            path, want, want == 1 ? "" : "s", o->inputs->len);
    free(vals);
    return NULL;
  }
  int next = 0;
  for (int k = 0; k < leaves->len; k++) {
    const Shape *s = leaves->data[k];
    if (s->et == ET_TOKEN) continue;
    char what[48];
    snprintf(what, sizeof what, "input %d", next);
    Diag d = {0};
    Literal *l = io_parse_input(a, o->inputs->data[next], s, &d);
    if (!l || !io_check_shape(l, s, what, &d)) {
      fprintf(stderr, "xhlo-run: --input=%s: ", o->inputs->data[next]);
      diag_print(&d, stderr);
      diag_clear(&d);
      free(vals);
      return NULL;
    }
    vals[k] = l;
    next++;
  }
  return vals;
}

int emit_results(const RunOpts *o, Literal **res, int nres, Arena *a) {
  if (o->outputs->len && o->outputs->len != nres) {
    fprintf(stderr, "xhlo-run: the module has %d result%s, %d --output given\n", nres,
            nres == 1 ? "" : "s", o->outputs->len);
    return 1;
  }
  if (o->expected->len && o->expected->len != nres) {
    fprintf(stderr, "xhlo-run: the module has %d result%s, %d --expected-output given\n",
            nres, nres == 1 ? "" : "s", o->expected->len);
    return 1;
  }
  Diag d = {0};
  for (int k = 0; k < nres; k++) {
    const char *spec = o->outputs->len ? o->outputs->data[k] : (o->quiet ? "" : "-");
    if (!io_write_output(spec, res[k], stdout, &d)) {
      fprintf(stderr, "xhlo-run: --output=%s: ", spec);
      diag_print(&d, stderr);
      diag_clear(&d);
      return 1;
    }
  }
  int status = 0;
  for (int k = 0; k < o->expected->len; k++) {
    Literal *e = io_parse_input(a, o->expected->data[k], res[k]->shape, &d);
    if (!e) {
      fprintf(stderr, "xhlo-run: --expected-output=%s: ", o->expected->data[k]);
      diag_print(&d, stderr);
      diag_clear(&d);
      return 1;
    }
    StrBuf why;
    sb_init(&why);
    if (!io_compare(res[k], e, o->atol, o->rtol, &why)) {
      fprintf(stderr, "xhlo-run: result %d does not match the expected output: %s\n", k,
              why.s);
      status = 1;
    }
    sb_free(&why);
  }
  return status;
}

void device_specs(const StrVec *in, int64_t dev, StrVec *out) {
  memset(out, 0, sizeof *out);
  char num[24];
  snprintf(num, sizeof num, "%lld", (long long)dev);
  for (int k = 0; k < in->len; k++) {
    StrBuf b;
    sb_init(&b);
    for (const char *s = in->data[k]; *s;) {
      if (strncmp(s, "{d}", 3) == 0) {
        sb_puts(&b, num);
        s += 3;
      } else {
        sb_putc(&b, *s++);
      }
    }
    vec_push(out, b.s ? b.s : xstrdup(""));
  }
}

void device_specs_free(StrVec *v) {
  for (int k = 0; k < v->len; k++) free(v->data[k]);
  vec_free(v);
}

bool artifact_has_kernels(const ThunkSeq *s) {
  for (int k = 0; k < s->n; k++) {
    const Thunk *t = &s->thunks[k];
    if (t->kind == THUNK_KERNEL) return true;
    if (t->kind == THUNK_WHILE &&
        (artifact_has_kernels(t->cond) || artifact_has_kernels(t->body)))
      return true;
    if (t->kind == THUNK_COMMAND_BUFFER && artifact_has_kernels(t->commands)) return true;
    if (t->kind == THUNK_CONDITIONAL)
      for (int b = 0; b < t->nbranches; b++)
        if (artifact_has_kernels(&t->branches[b])) return true;
  }
  return false;
}

static void io_err_text(Diag *d, const char *got, const char *want, const char *glob,
                        const char *what) {
  if (glob)
    diag_error(d, (Loc){0}, "%s is %s, expected %s (the global array) or %s (every "
               "device's shard)", what, got, glob, want);
  else
    diag_error(d, (Loc){0}, "%s is %s, expected %s (every device's shard) or a global "
               "array of the parameter's sharding", what, got, want);
}

static bool same_array(const Shape *s, const Shape *w) {
  bool ok = shape_is_array(s) && shape_is_array(w) && s->et == w->et && s->rank == w->rank;
  for (int k = 0; ok && k < s->rank; k++) ok = s->dims[k] == w->dims[k];
  return ok;
}

/* Input leaf k of every device (only >= 0: of device only) from one spec
 * without {d}: the same array for all, or the shards of a global one. */
static bool spread_input(const char *spec, int j, int k, const Shape *local, const SpmdIo *io,
                         int64_t ndev, int64_t only, Literal ***vals, Arena *a) {
  const Tiling *t = io && k < io->nparams ? io->param_tiling[k] : NULL;
  const Shape *g = io && io->param_global ? io->param_global[k] : NULL;
  Diag d = {0};
  Literal *l = io_parse_input(a, spec, g ? g : local, &d);
  if (!l) {
    fprintf(stderr, "xhlo-run: --input=%s: ", spec);
    diag_print(&d, stderr);
    diag_clear(&d);
    return false;
  }
  if (same_array(l->shape, local)) {
    for (int64_t dev = 0; dev < ndev; dev++) vals[dev][k] = l;
    return true;
  }
  if (t && io_is_global_of(l->shape, local, t) && (!g || same_array(l->shape, g))) {
    for (int64_t dev = 0; dev < ndev; dev++)
      if (only < 0 || dev == only) vals[dev][k] = io_shard(a, l, t, dev, local);
    return true;
  }
  char what[48];
  snprintf(what, sizeof what, "input %d", j);
  if (!t) {
    io_check_shape(l, local, what, &d);
  } else {
    char *got = shape_to_string(l->shape, false), *want = shape_to_string(local, false);
    char *glob = g ? shape_to_string(g, false) : NULL;
    io_err_text(&d, got, want, glob, what);
    free(got);
    free(want);
    free(glob);
  }
  fprintf(stderr, "xhlo-run: --input=%s: ", spec);
  diag_print(&d, stderr);
  diag_clear(&d);
  return false;
}

Literal ***gather_device_inputs(const RunOpts *o, const PtrVec *leaves, const int64_t *bounds,
                                int nbounds, const SpmdIo *io, int64_t ndev, int64_t only,
                                Arena *a, const char *path) {
  Literal ***vals = xcalloc((size_t)ndev, sizeof *vals);
  for (int64_t d = 0; d < ndev; d++) vals[d] = xcalloc((size_t)leaves->len + 1, sizeof **vals);
  if (io && io->nparams != leaves->len) io = NULL;
  if (o->random_inputs && io && io->param_global) {
    /* a partitioned program: random global arrays, cut into shards */
    PtrVec g = {0};
    for (int k = 0; k < leaves->len; k++) vec_push(&g, io->param_global[k]);
    Literal **gv = xcalloc((size_t)leaves->len + 1, sizeof *gv);
    io_random_leaves(a, &g, bounds, nbounds, o->seed, gv);
    for (int64_t d = 0; d < ndev; d++)
      for (int k = 0; k < leaves->len && (only < 0 || d == only); k++)
        vals[d][k] = gv[k] && io->param_tiling[k]
                         ? io_shard(a, gv[k], io->param_tiling[k], d, leaves->data[k])
                         : gv[k];
    free(gv);
    vec_free(&g);
    return vals;
  }
  if (o->random_inputs) {
    for (int64_t d = 0; d < ndev; d++)
      if (only < 0 || d == only)
        io_random_leaves(a, leaves, bounds, nbounds, o->seed + (uint64_t)d, vals[d]);
    return vals;
  }
  int want = 0;
  for (int k = 0; k < leaves->len; k++) want += ((const Shape *)leaves->data[k])->et != ET_TOKEN;
  bool ok = o->inputs->len == want;
  if (!ok)
    fprintf(stderr, "xhlo-run: %s takes %d input%s, %d given (use --input once per "
            "parameter leaf, or --random-inputs)\n",
            path, want, want == 1 ? "" : "s", o->inputs->len);
  int next = 0;
  for (int k = 0; ok && k < leaves->len; k++) {
    const Shape *s = leaves->data[k];
    if (s->et == ET_TOKEN) continue;
    const char *spec = o->inputs->data[next];
    if (!strstr(spec, "{d}")) {
      ok = spread_input(spec, next, k, s, io, ndev, only, vals, a);
    } else {
      StrVec one = {0}, mine;
      vec_push(&one, (char *)spec);
      for (int64_t d = 0; ok && d < ndev; d++) {
        if (only >= 0 && d != only) continue;
        device_specs(&one, d, &mine);
        char what[48];
        snprintf(what, sizeof what, "input %d", next);
        Diag dd = {0};
        Literal *l = io_parse_input(a, mine.data[0], s, &dd);
        if (!l || !io_check_shape(l, s, what, &dd)) {
          fprintf(stderr, "xhlo-run: --input=%s: ", mine.data[0]);
          diag_print(&dd, stderr);
          diag_clear(&dd);
          ok = false;
        }
        vals[d][k] = l;
        device_specs_free(&mine);
      }
      vec_free(&one);
    }
    next++;
  }
  if (ok) return vals;
  for (int64_t d = 0; d < ndev; d++) free(vals[d]);
  free(vals);
  return NULL;
}

void device_inputs_free(Literal ***vals, int64_t ndev) {
  for (int64_t d = 0; vals && d < ndev; d++) free(vals[d]);
  free(vals);
}

bool results_global(const RunOpts *o, const SpmdIo *io) {
  if (!io || io->nresults == 0) return false;
  for (int k = 0; k < o->outputs->len; k++)
    if (strstr(o->outputs->data[k], "{d}")) return false;
  for (int k = 0; k < o->expected->len; k++)
    if (strstr(o->expected->data[k], "{d}")) return false;
  return true;
}

int emit_global_results(const RunOpts *o, const SpmdIo *io, Literal **const *res, int nres,
                        Arena *a) {
  if (nres != io->nresults) {
    fprintf(stderr, "xhlo-run: the devices give %d result%s, the module's global result "
            "has %d\n", nres, nres == 1 ? "" : "s", io->nresults);
    return 1;
  }
  Literal **g = xcalloc((size_t)nres + 1, sizeof *g);
  Literal **shards = xcalloc((size_t)io->ndev, sizeof *shards);
  for (int k = 0; k < nres; k++) {
    for (int64_t d = 0; d < io->ndev; d++) shards[d] = res[d][k];
    g[k] = io->result_global[k] && shape_is_array(io->result_global[k])
               ? io_unshard(a, shards, io->result_tiling[k], io->result_global[k])
               : res[0][k];
  }
  int rc = emit_results(o, g, nres, a);
  free(shards);
  free(g);
  return rc;
}
