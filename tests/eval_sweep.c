/*
 * eval_sweep.c - run every module of an HLO corpus in the interpreter with
 * random inputs and report coverage.
 *
 *   eval_sweep [--mem-budget BYTES] [--time-budget SECONDS] [--seed N]
 *              [--every N] [--hard-timeout SECONDS] [--verbose]
 *              [--only SUBSTRING] DIR
 *
 * --every N runs every N-th file only (for slow sanitizer builds);
 * --hard-timeout kills a file's child after that long (default 4 times the
 * time budget plus 20 s: the budget applies to evaluation, not to parsing
 * and input generation).
 *
 * For each DIR/ *.hlo (name order) a child process parses and verifies the
 * file, then runs each module's entry computation on deterministic random
 * inputs (index operands in range) under the memory and time budgets.  Every
 * module ends as one of:
 *
 *   ok          it ran
 *   unsupported the interpreter refused an op (counted per op / target)
 *   budget      its inputs alone take more than a quarter of the memory
 *               budget (the rest is for intermediates), or the run went past
 *               the memory or time budget
 *   value       a random input is outside an op's domain (a dynamic size
 *               past its bound, ragged rows out of range: EVAL_ERR_VALUE),
 *               counted per op; random data cannot be expected to meet
 *               such constraints
 *   skipped     the front end rejects the file (the parser's sweep covers it)
 *   FAILED      anything else: an invalid-module or input error from the
 *               interpreter on a module the verifier accepted, a crash, or a
 *               hard timeout (the child killed by SIGALRM)
 *
 * Prints the counts, the refusals by op, the failures, and a final line
 * "N passed, N failed" where passed = ok + unsupported + budget + value + skipped
 * modules.  Exits 1 when anything failed.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/eval/eval.h"

typedef struct Opts {
  int64_t mem_budget;
  double time_budget, hard_timeout;
  int every;
  uint64_t seed;
  bool verbose;
  const char *only;
} Opts;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int64_t input_bytes(const HloComp *e) {
  int64_t total = 0;
  for (int k = 0; k < e->nparams; k++) {
    const Shape *s = e->params[k]->shape;
    PtrVec st = {0};
    vec_push(&st, (void *)s);
    while (st.len) {
      const Shape *t = vec_pop(&st);
      if (t->et == ET_TUPLE) {
        for (int j = 0; j < t->ntuple; j++) vec_push(&st, t->tuple[j]);
      } else if (shape_is_array(t)) {
        int64_t b = shape_byte_size(t);
        total = b < 0 || total > INT64_MAX - b ? INT64_MAX : total + b;
      }
    }
    vec_free(&st);
  }
  return total;
}

/* One module: writes "OK", "UNSUPPORTED what", "BUDGET what" or
 * "FAILED message" as one line to out. */
static void run_module(const HloModule *m, const Opts *o, FILE *out) {
  const HloComp *e = m->entry;
  if (!e) {
    fprintf(out, "SKIPPED no entry\n");
    return;
  }
  if (o->mem_budget > 0 && input_bytes(e) > o->mem_budget / 4) {
    fprintf(out, "BUDGET inputs\n");
    return;
  }
  PtrVec leaves = {0};
  for (int k = 0; k < e->nparams; k++) io_shape_leaves(e->params[k]->shape, &leaves);
  int64_t *bounds;
  int nb = io_index_bounds(m, &bounds);
  Arena *a = arena_new();
  Literal **vals = xcalloc((size_t)leaves.len + 1, sizeof *vals);
  io_random_leaves(a, &leaves, bounds, nb, o->seed, vals);
  Literal **args = io_entry_args(a, e, vals);
  EvalOptions eo;
  eval_options_default(&eo);
  eo.mem_budget = o->mem_budget;
  eo.time_budget = o->time_budget;
  eo.rng_seed = o->seed;
  Diag d = {0};
  EvalStatus st;
  Literal *result;
  if (eval_module(m, e->nparams, args, a, &eo, &result, &d, &st)) {
    fprintf(out, "OK\n");
  } else {
    char *msg = d.msg ? d.msg : "(no message)";
    for (char *p = msg; *p; p++)
      if (*p == '\n') *p = ' ';
    switch (st.kind) {
    case EVAL_ERR_UNSUPPORTED: fprintf(out, "UNSUPPORTED %s\t%s\n", st.what, msg); break;
    case EVAL_ERR_RESOURCE: fprintf(out, "BUDGET %s\t%s\n", st.what, msg); break;
    case EVAL_ERR_VALUE: fprintf(out, "VALUE %s\t%s\n", st.what, msg); break;
    default: fprintf(out, "FAILED %s\n", msg); break;
    }
  }
  diag_clear(&d);
  free(args);
  free(vals);
  free(bounds);
  vec_free(&leaves);
  arena_free(a);
}

static void child(const char *path, const Opts *o, int fd) {
  FILE *out = fdopen(fd, "w");
  setvbuf(out, NULL, _IOLBF, 0);
  Diag d = {0};
  SrcFile *src = srcfile_read(path, &d);
  if (!src) {
    fprintf(out, "SKIPPED unreadable\n");
    _exit(0);
  }
  ParseOptions popts = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  int n = hlo_parse(src, &popts, &mods, &d);
  if (n < 0) {
    fprintf(out, "SKIPPED parse\n");
    _exit(0);
  }
  for (int k = 0; k < n; k++) {
    Diag vd = {0};
    if (!hlo_verify(mods[k], &vd)) {
      fprintf(out, "SKIPPED verify\n");
      diag_clear(&vd);
      continue;
    }
    run_module(mods[k], o, out);
    hlo_module_free(mods[k]);
  }
  fclose(out);
  _exit(0);
}

typedef struct Count {
  char *key;
  int n;
} Count;
typedef Vec(Count) CountVec;

static void bump(CountVec *v, const char *key) {
  for (int k = 0; k < v->len; k++)
    if (strcmp(v->data[k].key, key) == 0) {
      v->data[k].n++;
      return;
    }
  Count c = {xstrdup(key), 1};
  vec_push(v, c);
}

static int cmp_count(const void *a, const void *b) {
  const Count *x = a, *y = b;
  if (x->n != y->n) return y->n - x->n;
  return strcmp(x->key, y->key);
}

int main(int argc, char **argv) {
  Opts o = {.mem_budget = 256 << 20, .time_budget = 5, .seed = 42, .every = 1};
  const char *dir = NULL;
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--mem-budget") == 0 && k + 1 < argc) o.mem_budget = atoll(argv[++k]);
    else if (strcmp(argv[k], "--time-budget") == 0 && k + 1 < argc) o.time_budget = atof(argv[++k]);
    else if (strcmp(argv[k], "--seed") == 0 && k + 1 < argc) o.seed = strtoull(argv[++k], NULL, 0);
    else if (strcmp(argv[k], "--verbose") == 0) o.verbose = true;
    else if (strcmp(argv[k], "--every") == 0 && k + 1 < argc) o.every = atoi(argv[++k]);
    else if (strcmp(argv[k], "--hard-timeout") == 0 && k + 1 < argc) o.hard_timeout = atof(argv[++k]);
    else if (strcmp(argv[k], "--only") == 0 && k + 1 < argc) o.only = argv[++k];
    else if (argv[k][0] != '-' && !dir) dir = argv[k];
    else {
      fprintf(stderr, "usage: eval_sweep [--mem-budget B] [--time-budget S] [--seed N] "
                      "[--every N] [--hard-timeout S] [--verbose] [--only SUB] DIR\n");
      return 2;
    }
  }
  if (!dir) {
    fprintf(stderr, "eval_sweep: no corpus directory\n");
    return 2;
  }
  DIR *dp = opendir(dir);
  if (!dp) {
    fprintf(stderr, "eval_sweep: cannot open %s: %s\n", dir, strerror(errno));
    printf("0 passed, 1 failed\n");
    return 1;
  }
  StrVec files = {0};
  struct dirent *de;
  while ((de = readdir(dp))) {
    size_t l = strlen(de->d_name);
    if (l > 4 && strcmp(de->d_name + l - 4, ".hlo") == 0 &&
        (!o.only || strstr(de->d_name, o.only)))
      vec_push(&files, xstrdup(de->d_name));
  }
  closedir(dp);
  qsort(files.data, (size_t)files.len, sizeof(char *), cmp_str);
  if (o.every > 1) {   /* a deterministic sample: every N-th file */
    int kept = 0;
    for (int k = 0; k < files.len; k++) {
      if (k % o.every == 0) files.data[kept++] = files.data[k];
      else free(files.data[k]);
    }
    files.len = kept;
  }
  if (o.hard_timeout <= 0) o.hard_timeout = o.time_budget * 4 + 20;

  int n_ok = 0, n_unsup = 0, n_budget = 0, n_value = 0, n_skip = 0, n_fail = 0;
  CountVec unsup = {0}, budget = {0}, value = {0};
  StrVec failures = {0};
  for (int f = 0; f < files.len; f++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, files.data[f]);
    int pfd[2];
    if (pipe(pfd) != 0) {
      perror("pipe");
      return 1;
    }
    fflush(stdout);
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    pid_t pid = fork();
    if (pid == 0) {
      close(pfd[0]);
      alarm((unsigned)o.hard_timeout);
      child(path, &o, pfd[1]);
    }
    close(pfd[1]);
    FILE *in = fdopen(pfd[0], "r");
    char line[8192];
    int seen = 0;
    while (fgets(line, sizeof line, in)) {
      size_t l = strlen(line);
      if (l && line[l - 1] == '\n') line[--l] = 0;
      seen++;
      char *tab = strchr(line, '\t');
      if (tab) *tab = 0;
      if (strncmp(line, "OK", 2) == 0) {
        n_ok++;
      } else if (strncmp(line, "UNSUPPORTED ", 12) == 0) {
        n_unsup++;
        bump(&unsup, line + 12);
      } else if (strncmp(line, "BUDGET ", 7) == 0) {
        n_budget++;
        bump(&budget, line + 7);
      } else if (strncmp(line, "VALUE ", 6) == 0) {
        n_value++;
        bump(&value, line + 6);
      } else if (strncmp(line, "SKIPPED", 7) == 0) {
        n_skip++;
      } else {
        n_fail++;
        char msg[8400];
        snprintf(msg, sizeof msg, "%s: %s", files.data[f], line);
        vec_push(&failures, xstrdup(msg));
      }
      if (o.verbose) printf("%s: %s%s%s\n", files.data[f], line, tab ? " -- " : "", tab ? tab + 1 : "");
    }
    fclose(in);
    int status;
    waitpid(pid, &status, 0);
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    double secs = (double)(ts1.tv_sec - ts0.tv_sec) + (double)(ts1.tv_nsec - ts0.tv_nsec) * 1e-9;
    if (o.verbose) printf("%s: %.2fs\n", files.data[f], secs);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      n_fail++;
      char msg[4200];
      if (WIFSIGNALED(status))
        snprintf(msg, sizeof msg, "%s: CRASHED with signal %d (%s) after %d module(s)",
                 files.data[f], WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? "hard timeout" : strsignal(WTERMSIG(status)), seen);
      else
        snprintf(msg, sizeof msg, "%s: child exited with status %d", files.data[f],
                 WEXITSTATUS(status));
      vec_push(&failures, xstrdup(msg));
      if (o.verbose) printf("%s\n", msg);
    }
  }
  int total = n_ok + n_unsup + n_budget + n_value + n_skip;
  printf("eval sweep: %d files: %d modules ran ok, %d refused (unsupported op), "
         "%d refused (budget), %d refused (input value outside an op's domain), "
         "%d skipped (front end rejects), %d FAILED\n",
         files.len, n_ok, n_unsup, n_budget, n_value, n_skip, n_fail);
  printf("budgets: memory %lld bytes, time %gs per module\n", (long long)o.mem_budget,
         o.time_budget);
  if (unsup.len) qsort(unsup.data, (size_t)unsup.len, sizeof(Count), cmp_count);
  if (budget.len) qsort(budget.data, (size_t)budget.len, sizeof(Count), cmp_count);
  if (value.len) qsort(value.data, (size_t)value.len, sizeof(Count), cmp_count);
  if (unsup.len) {
    printf("refused by op:\n");
    for (int k = 0; k < unsup.len; k++) printf("  %5d  %s\n", unsup.data[k].n, unsup.data[k].key);
  }
  if (budget.len) {
    printf("refused by budget:\n");
    for (int k = 0; k < budget.len; k++) printf("  %5d  %s\n", budget.data[k].n, budget.data[k].key);
  }
  if (value.len) {
    printf("refused by input value:\n");
    for (int k = 0; k < value.len; k++) printf("  %5d  %s\n", value.data[k].n, value.data[k].key);
  }
  for (int k = 0; k < failures.len; k++) printf("FAILED: %s\n", failures.data[k]);
  printf("%d passed, %d failed\n", total, n_fail);
  for (int k = 0; k < files.len; k++) free(files.data[k]);
  for (int k = 0; k < failures.len; k++) free(failures.data[k]);
  for (int k = 0; k < unsup.len; k++) free(unsup.data[k].key);
  for (int k = 0; k < budget.len; k++) free(budget.data[k].key);
  for (int k = 0; k < value.len; k++) free(value.data[k].key);
  vec_free(&files);
  vec_free(&failures);
  vec_free(&unsup);
  vec_free(&budget);
  vec_free(&value);
  return n_fail ? 1 : 0;
}
