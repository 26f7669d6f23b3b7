/*
 * main.c - xhlo-run: runs an HLO module and prints, writes or checks its
 * results.
 *
 *   xhlo-run [--platform=interpreter] MODULE.hlo --input=SPEC... |
 *            --random-inputs [--seed=N] [--output=SPEC...]
 *            [--expected-output=SPEC... --atol=A --rtol=R]
 *
 * Option parsing and exit codes only; the interpreter and the literal I/O
 * live in lib/eval.  Exit 0 on success, 1 on an input, evaluation or
 * comparison failure, 2 on a usage error.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../../lib/eval/eval.h"

static const char usage_text[] =
  "usage: xhlo-run [options] MODULE.hlo\n"
  "\n"
  "Runs the entry computation of an HLO text module and prints its results.\n"
  "\n"
  "  --platform=NAME        where to run (case-insensitive): interpreter (the\n"
  "                         reference interpreter; the default for .hlo input)\n"
  "  --input=SPEC           one per entry parameter leaf, in order (tuple\n"
  "                         parameters flattened):\n"
  "                           2x3xf32=1 2 3 4 5 6   shape, type and values\n"
  "                           2x2xi32=[[1 2][3 4]]  nesting and commas ignored\n"
  "                           f32=1.5               a scalar\n"
  "                           1 2 3                 shape and type from the parameter\n"
  "                           @file.npy             a NumPy array\n"
  "                           2x2xbf16=@file.bin    raw little-endian element bytes\n"
  "                         omitted trailing values are zero\n"
  "  --random-inputs        deterministic random inputs instead (floats in\n"
  "                         [-1,1), integers small, indices in range)\n"
  "  --seed=N               seed for --random-inputs and the rng op (default 42)\n"
  "  --output=SPEC          one per result leaf, in order: - prints XLA literal\n"
  "                         text, @file.npy or @file.bin writes a file, an\n"
  "                         empty SPEC skips it (default: print every result)\n"
  "  --expected-output=SPEC one per result leaf (same syntax as --input); a\n"
  "                         mismatch exits 1 naming the first differing element\n"
  "  --atol=A, --rtol=R     an element fails when |a-e| > A + R*|e| (NaN equals\n"
  "                         NaN; integers compare exactly); default 1e-5 each\n"
  "  --mem-budget=BYTES     refuse inputs and runs that need more memory than\n"
  "                         this (default: half the machine's memory)\n"
  "  --time-budget=SECONDS  refuse to run longer than this (default none)\n"
  "  --quiet                do not print results (with --expected-output)\n"
  "  --help                 this text\n"
  "  --version              the version\n"
  "\n"
  "Exit status: 0 ok, 1 input, run or comparison error, 2 usage error.\n";

enum {
  OPT_PLATFORM = 256, OPT_INPUT, OPT_RANDOM, OPT_SEED, OPT_OUTPUT, OPT_EXPECTED,
  OPT_ATOL, OPT_RTOL, OPT_MEM, OPT_TIME, OPT_QUIET, OPT_HELP, OPT_VERSION,
};

static const struct option long_opts[] = {
  {"platform", required_argument, 0, OPT_PLATFORM},
  {"input", required_argument, 0, OPT_INPUT},
  {"random-inputs", no_argument, 0, OPT_RANDOM},
  {"seed", required_argument, 0, OPT_SEED},
  {"output", required_argument, 0, OPT_OUTPUT},
  {"expected-output", required_argument, 0, OPT_EXPECTED},
  {"expected_output", required_argument, 0, OPT_EXPECTED},
  {"atol", required_argument, 0, OPT_ATOL},
  {"rtol", required_argument, 0, OPT_RTOL},
  {"mem-budget", required_argument, 0, OPT_MEM},
  {"time-budget", required_argument, 0, OPT_TIME},
  {"quiet", no_argument, 0, OPT_QUIET},
  {"help", no_argument, 0, OPT_HELP},
  {"version", no_argument, 0, OPT_VERSION},
  {0, 0, 0, 0},
};

static NORETURN void usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "xhlo-run: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry 'xhlo-run --help'.\n");
  exit(2);
}

static double parse_double(const char *s, const char *opt) {
  char *e;
  double v = strtod(s, &e);
  if (e == s || *e || v < 0) usage_error("bad value for --%s", opt);
  return v;
}

/* Half the physical memory: the default memory budget. */
static int64_t default_budget(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || size <= 0) return (int64_t)4 << 30;
  return (int64_t)pages * size / 2;
}

typedef struct RunOpts {
  StrVec *inputs, *outputs, *expected;
  bool random_inputs, quiet;
  uint64_t seed;
  double atol, rtol, time_budget;
  int64_t mem_budget;
} RunOpts;

/* Parses, verifies and runs the module at path; returns the exit status.
 * Everything it allocates is freed on every path. */
static int run(const RunOpts *o, const char *path) {
  int status = 1;
  Diag d = {0};
  HloModule **mods = NULL;
  int nm = 0;
  PtrVec leaves = {0};
  Arena *arena = arena_new();
  Literal **leaf_vals = NULL, **args = NULL, **res = NULL;
  SrcFile *src = srcfile_read(path, &d);
  if (!src) goto diag_out;
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
  leaf_vals = xcalloc((size_t)leaves.len + 1, sizeof *leaf_vals);
  if (o->random_inputs) {
    int64_t *bounds;
    int nb = io_index_bounds(m, &bounds);
    for (int k = 0; k < leaves.len; k++) {
      const Shape *s = leaves.data[k];
      if (s->et == ET_TOKEN) continue;
      leaf_vals[k] = io_random_literal(arena, s, o->seed * 1000003u + (uint64_t)k,
                                       k < nb ? bounds[k] : -1);
    }
    free(bounds);
  } else {
    int want = 0;
    for (int k = 0; k < leaves.len; k++) want += ((const Shape *)leaves.data[k])->et != ET_TOKEN;
    if (o->inputs->len != want) {
      fprintf(stderr, "xhlo-run: %s takes %d input%s, %d given (use --input once per "
              "parameter leaf, or --random-inputs)\n",
              path, want, want == 1 ? "" : "s", o->inputs->len);
      goto out;
    }
    int next = 0;
    for (int k = 0; k < leaves.len; k++) {
      const Shape *s = leaves.data[k];
      if (s->et == ET_TOKEN) continue;
      char what[48];
      snprintf(what, sizeof what, "input %d", next);
      Literal *l = io_parse_input(arena, o->inputs->data[next], s, &d);
      if (!l || !io_check_shape(l, s, what, &d)) {
        fprintf(stderr, "xhlo-run: --input=%s: ", o->inputs->data[next]);
        goto diag_out;
      }
      leaf_vals[k] = l;
      next++;
    }
  }
  /* rebuild tuple parameters from the leaves */
  args = xcalloc((size_t)entry->nparams + 1, sizeof *args);
  int at = 0;
  for (int k = 0; k < entry->nparams; k++)
    args[k] = io_literal_from_leaves(arena, entry->params[k]->shape, leaf_vals, &at);

  EvalOptions eo;
  eval_options_default(&eo);
  eo.rng_seed = o->seed;
  eo.mem_budget = budget;
  eo.time_budget = o->time_budget;
  Literal *result = NULL;
  EvalStatus st;
  if (!eval_module(m, entry->nparams, args, arena, &eo, &result, &d, &st)) goto diag_out;

  int nres = io_literal_leaves(result, &res);
  if (o->outputs->len && o->outputs->len != nres) {
    fprintf(stderr, "xhlo-run: the module has %d result%s, %d --output given\n", nres,
            nres == 1 ? "" : "s", o->outputs->len);
    goto out;
  }
  if (o->expected->len && o->expected->len != nres) {
    fprintf(stderr, "xhlo-run: the module has %d result%s, %d --expected-output given\n",
            nres, nres == 1 ? "" : "s", o->expected->len);
    goto out;
  }
  for (int k = 0; k < nres; k++) {
    const char *spec = o->outputs->len ? o->outputs->data[k] : (o->quiet ? "" : "-");
    if (!io_write_output(spec, res[k], stdout, &d)) {
      fprintf(stderr, "xhlo-run: --output=%s: ", spec);
      goto diag_out;
    }
  }
  status = 0;
  for (int k = 0; k < o->expected->len; k++) {
    Literal *e = io_parse_input(arena, o->expected->data[k], res[k]->shape, &d);
    if (!e) {
      fprintf(stderr, "xhlo-run: --expected-output=%s: ", o->expected->data[k]);
      status = 1;
      goto diag_out;
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
  goto out;
diag_out:
  status = 1;
  diag_print(&d, stderr);
out:
  fflush(stdout);
  free(res);
  free(args);
  free(leaf_vals);
  vec_free(&leaves);
  arena_free(arena);
  for (int k = 0; k < nm; k++) hlo_module_free(mods[k]);
  free(mods);
  if (src) srcfile_free(src);
  diag_clear(&d);
  return status;
}

int main(int argc, char **argv) {
  const char *platform = NULL;
  StrVec inputs = {0}, outputs = {0}, expected = {0};
  bool random_inputs = false, quiet = false;
  uint64_t seed = 42;
  double atol = 1e-5, rtol = 1e-5, time_budget = 0;
  int64_t mem_budget = 0;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
    switch (c) {
    case OPT_PLATFORM: platform = optarg; break;
    case OPT_INPUT: vec_push(&inputs, optarg); break;
    case OPT_RANDOM: random_inputs = true; break;
    case OPT_SEED: {
      char *e;
      seed = strtoull(optarg, &e, 0);
      if (e == optarg || *e) usage_error("bad value for --seed: %s", optarg);
      break;
    }
    case OPT_OUTPUT: vec_push(&outputs, optarg); break;
    case OPT_EXPECTED: vec_push(&expected, optarg); break;
    case OPT_ATOL: atol = parse_double(optarg, "atol"); break;
    case OPT_RTOL: rtol = parse_double(optarg, "rtol"); break;
    case OPT_MEM: {
      char *e;
      long long v = strtoll(optarg, &e, 0);
      if (e == optarg || *e || v < 0) usage_error("bad value for --mem-budget: %s", optarg);
      mem_budget = v;
      break;
    }
    case OPT_TIME: time_budget = parse_double(optarg, "time-budget"); break;
    case OPT_QUIET: quiet = true; break;
    case OPT_HELP: fputs(usage_text, stdout); return 0;
    case OPT_VERSION: printf("xhlo-run %s\n", XHLOC_VERSION); return 0;
    default:
      if (optopt) usage_error("option '%s' needs a value", argv[optind - 1]);
      usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind != argc - 1) usage_error("%s", optind >= argc ? "no module given" : "give exactly one module");
  const char *path = argv[optind];
  size_t pl = strlen(path);
  bool is_hlo = pl >= 4 && (strcmp(path + pl - 4, ".hlo") == 0 || strcmp(path + pl - 4, ".txt") == 0);
  if (!platform) {
    if (!is_hlo) usage_error("'%s': give --platform (the interpreter runs .hlo and .txt HLO text)", path);
    platform = "interpreter";
  }
  if (strcasecmp(platform, "interpreter") != 0)
    usage_error("unknown --platform '%s' (this build runs: interpreter)", platform);
  if (random_inputs && inputs.len)
    usage_error("%s", "--input and --random-inputs exclude each other");

  RunOpts ro = {
    .inputs = &inputs, .outputs = &outputs, .expected = &expected,
    .random_inputs = random_inputs, .quiet = quiet, .seed = seed,
    .atol = atol, .rtol = rtol, .mem_budget = mem_budget, .time_budget = time_budget,
  };
  int status = run(&ro, path);
  vec_free(&inputs);
  vec_free(&outputs);
  vec_free(&expected);
  return status;
}
