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
