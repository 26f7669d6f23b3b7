/*
 * main.c - xhlo-run: runs an HLO module on the reference interpreter, or a
 * compiled artifact (PREFIX.thunks from xhloc -o PREFIX) on the host or an
 * NVIDIA GPU, and prints, writes, checks, compares or times its results.
 *
 *   xhlo-run MODULE.hlo  [--platform=interpreter] INPUTS [OUTPUTS]
 *   xhlo-run PREFIX.thunks [--platform=host|cuda|interpreter] INPUTS
 *            [OUTPUTS] [--compare] [--iterations=N] [--device-resident]
 *            [--back-to-back]
 *            [--profile]
 *            [--trace=FILE.json] [--describe] [--command-buffers=on|off]
 *            [--tf32=on|off] [--streams=N] [--sync-each-thunk]
 *            [--reduction-order=xla-cpu|in-order] [--sort-order=xla-cpu|stable]
 *
 * Option parsing and the choice of runner only: interp.c, thunks.c and
 * common.c do the work with lib/eval and lib/runtime.  Exit 0 on success, 1
 * on an input, artifact, platform, run or comparison failure, 2 on a usage
 * error.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../lib/runtime/thunks.h"
#include "xhlo_run.h"

static const char usage_text[] =
  "usage: xhlo-run [options] MODULE.hlo\n"
  "       xhlo-run [options] PREFIX.thunks\n"
  "\n"
  "Runs the entry computation of an HLO text module on the reference\n"
  "interpreter, or a compiled artifact (PREFIX.thunks and the kernel file\n"
  "beside it, written by xhloc -o PREFIX) on the host CPU or an NVIDIA GPU,\n"
  "and prints its results.\n"
  "\n"
  "  --platform=NAME        where to run (case-insensitive):\n"
  "                           interpreter  the reference interpreter; the\n"
  "                                        default for .hlo and .txt input;\n"
  "                                        on a .thunks file it runs the\n"
  "                                        original HLO embedded in it\n"
  "                           host         the host CPU (PREFIX.host.so)\n"
  "                           cuda         the first visible NVIDIA GPU, through\n"
  "                                        the CUDA driver (PREFIX.ptx, JIT-\n"
  "                                        compiled by the driver); a module\n"
  "                                        of several devices takes a GPU\n"
  "                                        each, collectives through NCCL\n"
  "                         default for a .thunks file: its target's (sm_* ->\n"
  "                         cuda, host -> host)\n"
  "  --input=SPEC           one per entry parameter leaf, in order (tuple\n"
  "                         parameters flattened):\n"
  "                           2x3xf32=1 2 3 4 5 6   shape, type and values\n"
  "                           2x2xi32=[[1 2][3 4]]  nesting and commas ignored\n"
  "                           f32=1.5               a scalar\n"
  "                           1 2 3                 shape and type from the parameter\n"
  "                           @file.npy             a NumPy array\n"
  "                           2x2xbf16=@file.bin    raw little-endian element bytes\n"
  "                         omitted trailing values are zero; values are in\n"
  "                         row-major order whatever the parameter's layout\n"
  "                         a module of replica_count x num_partitions > 1\n"
  "                         runs that many devices: {d} in a SPEC (also of\n"
  "                         --output and --expected-output) is the device\n"
  "                         number, replica * num_partitions + partition\n"
  "                         (@x.{d}.npy; 0 for a module of one device); a\n"
  "                         SPEC without it is every device's\n"
  "  --num-partitions=N     HLO text: run N partitions (XLA's runners'\n"
  "                         --num_partitions) where the header gives none (a\n"
  "                         header with another count is an error); without\n"
  "                         it or one in the header, the devices of the\n"
  "                         module's Shardy mesh, else of its shardings (as\n"
  "                         jax.jit(...).lower(...).as_text() writes them),\n"
  "                         with a note.  A .thunks file must have been\n"
  "                         compiled for the count given\n"
  "  --num-replicas=N       the same for replica_count (--num_replicas)\n"
  "  --random-inputs        deterministic random inputs instead (floats in\n"
  "                         [-1,1), integers small, indices in range; for a\n"
  "                         .thunks file the ranges come from its original HLO)\n"
  "  --seed=N               seed for --random-inputs and GetRngSeed (default 42)\n"
  "  --output=SPEC          one per result leaf, in order: - prints XLA literal\n"
  "                         text, @file.npy or @file.bin writes a file, an\n"
  "                         empty SPEC skips it (default: print every result)\n"
  "  --expected-output=SPEC one per result leaf (same syntax as --input); a\n"
  "                         mismatch exits 1 naming the first differing element\n"
  "  --atol=A, --rtol=R     an element fails when |a-e| > A + R*|e| (NaN equals\n"
  "                         NaN; integers compare exactly); default 1e-5 each\n"
  "                         for --expected-output, 1e-3 each for --compare\n"
  "                         (widened to 4 ulp for f16, bf16 and f8 outputs\n"
  "                         unless --atol or --rtol is given)\n"
  "  --compare              (.thunks) also run the original HLO on the\n"
  "                         interpreter with the same inputs and compare every\n"
  "                         result leaf: prints each one's largest absolute and\n"
  "                         relative error; a mismatch exits 1 naming the first\n"
  "                         differing element\n"
  "  --iterations=N         (.thunks) run N times with the same inputs and print\n"
  "                         the min, median and max wall time of a whole run\n"
  "                         (inputs in, thunks, results out) and of its\n"
  "                         execution alone (the thunks, synchronized); results\n"
  "                         are the last run's.  With N above 1 a warm-up run\n"
  "                         (libraries loading, command buffers recording)\n"
  "                         comes first, left out of the timings, --profile\n"
  "                         and --trace\n"
  "  --device-resident      (.thunks) with --iterations: copy the inputs to the\n"
  "                         device once and the results from it after the last\n"
  "                         run only; the runs between find their inputs and\n"
  "                         leave their results there, as XLA's benchmarks run\n"
  "                         (a parameter that input_output_alias lets a result\n"
  "                         overwrite is still copied in at every run)\n"
  "  --back-to-back         (.thunks) with --iterations=N (N above 1) and\n"
  "                         --device-resident: after the timed runs, N more\n"
  "                         runs queued one after another with no\n"
  "                         synchronization between them and one at the end;\n"
  "                         prints their wall time on the monotonic clock,\n"
  "                         from queueing the first to the end of that\n"
  "                         synchronization, and that time / N (what XLA's\n"
  "                         benchmarks time: N executions queued, one wait)\n"
  "  --profile              (.thunks) also time every thunk (nested ones too;\n"
  "                         CUDA events on a GPU, the monotonic clock on the\n"
  "                         host) and print a table, one line per thunk sorted\n"
  "                         by time: total ms over all runs, share of the\n"
  "                         thunks' time, calls, mean us per call, GB/s (the\n"
  "                         bytes of the slices it reads and writes), kind,\n"
  "                         launch dimensions (grid/block), name (nested ones\n"
  "                         as while/body/name); a while's or conditional's\n"
  "                         line counts its own time only; then a total line.\n"
  "                         Thunks then run one at a time\n"
  "  --trace=FILE.json      (.thunks) time every thunk as --profile does and\n"
  "                         write a Chrome trace event file (Perfetto,\n"
  "                         chrome://tracing): one event per run and per thunk\n"
  "                         execution, times in microseconds; written whole or\n"
  "                         not at all (at most 1000000 events)\n"
  "  --command-buffers=on|off  (.thunks) on (the default): on a GPU each\n"
  "                         command buffer (kCommandBuffer, made by xhloc\n"
  "                         --command-buffer) is recorded into a CUDA graph\n"
  "                         the first time it runs and replayed after that;\n"
  "                         off: its thunks run one by one, as on the host;\n"
  "                         with --profile a replayed one is timed as a whole\n"
  "  --streams=N            (.thunks on a GPU) kernels that the schedule finds\n"
  "                         independent run on up to N streams, forked and\n"
  "                         joined by events (default 4; 1: one stream)\n"
  "  --tf32=on|off          (.thunks on a GPU) on (the default): f32 gemms and\n"
  "                         convolutions use TF32 tensor cores where the\n"
  "                         artifact allows it (precision config DEFAULT, as\n"
  "                         XLA:GPU); off: full f32 in every one of them\n"
  "  --sync-each-thunk      (.thunks) synchronize the device after every thunk,\n"
  "                         so that a fault the GPU reports late (an illegal\n"
  "                         address) names the thunk that caused it; without\n"
  "                         it the message names the thunks run since the\n"
  "                         previous synchronization.  Slower: for debugging\n"
  "  --threads=N            (.thunks on the host) threads for the kernels (each\n"
  "                         kernel's work units, the results the same bits for\n"
  "                         any N) and for library calls (oneDNN); on the\n"
  "                         interpreter, for its large f32/f64 matrix products\n"
  "                         (the same bits too; one device alone); default:\n"
  "                         XHLO_NUM_THREADS when set, else one per core\n"
  "  --lib-path=DIRS        (.thunks) ':'-separated directories searched first\n"
  "                         for the vendor libraries: libdnnl.so.2 (oneDNN, the\n"
  "                         host's GEMMs and convolutions), libcublasLt.so.* and\n"
  "                         libcudnn.so.9 (the GPU's), libnccl.so.2 (the GPU's\n"
  "                         collectives); then the loader's path,\n"
  "                         $CUDA_HOME/lib64 and Python's nvidia-* wheels\n"
  "  --describe             (.thunks) print the artifact: target, kernel file,\n"
  "                         allocations, parameters, outputs and thunks; no run\n"
  "  --mem-budget=BYTES     refuse inputs and runs that need more memory than\n"
  "                         this (default: half the machine's memory)\n"
  "  --time-budget=SECONDS  refuse to interpret longer than this (default none)\n"
  "  --reduction-order=xla-cpu|in-order  the interpreter's reduces (also\n"
  "                         --compare's): xla-cpu (the default) reduces as\n"
  "                         XLA's CPU compiler orders it (tree-reduction-\n"
  "                         rewriter: windows of 32 first, then the partial\n"
  "                         results; its library reduces too; a sum of one\n"
  "                         element is that element, -0 kept), so f16/bf16\n"
  "                         sums match XLA's CPU and the\n"
  "                         host artifact; in-order: one pass over the input in\n"
  "                         row-major order, as XLA's evaluator does\n"
  "  --sort-order=xla-cpu|stable  the interpreter's sorts: xla-cpu (the\n"
  "                         default, but for --compare) orders the ties of an\n"
  "                         is_stable=false sort as XLA's CPU runtime does\n"
  "                         (libstdc++'s std::sort) and sorts a lone\n"
  "                         f32/f64/bf16/integer operand with a plain GE\n"
  "                         comparator as GT, as XLA does; stable (the default\n"
  "                         for --compare) is the compiled kernels' order: a\n"
  "                         stable merge sort with the comparator as written\n"
  "  --quiet                do not print results\n"
  "  --help                 this text\n"
  "  --version              the version\n"
  "\n"
  "Under an MPI launcher (mpirun -np N xhlo-run ..., N the module's\n"
  "replica_count x num_partitions) each process runs one device, rank d\n"
  "device d with its own {d} inputs and outputs, and the collectives go\n"
  "through MPI (OpenMPI's libmpi.so.40, opened at run time; XHLO_MPI_LIB\n"
  "names another); with --platform=cuda each process takes GPU (its local\n"
  "rank % the GPUs here) and NCCL's ids go through MPI.  Without one, every\n"
  "device is a thread of this process.\n"
  "\n"
  "A .thunks file, its kernel file and their checksums are checked before\n"
  "anything runs; a truncated, corrupted or mismatched one is refused.\n"
  "\n"
  "Exit status: 0 ok; 1 unreadable or bad module or artifact, no such device,\n"
  "wrong inputs, run failure or mismatch; 2 usage error.\n";

enum {
  OPT_PLATFORM = 256, OPT_INPUT, OPT_RANDOM, OPT_SEED, OPT_OUTPUT, OPT_EXPECTED,
  OPT_ATOL, OPT_RTOL, OPT_MEM, OPT_TIME, OPT_QUIET, OPT_HELP, OPT_VERSION,
  OPT_COMPARE, OPT_ITERATIONS, OPT_PROFILE, OPT_DESCRIBE, OPT_THREADS, OPT_LIB_PATH,
  OPT_COMMAND_BUFFERS, OPT_TF32, OPT_STREAMS, OPT_SYNC_EACH, OPT_DEVICE_RESIDENT,
  OPT_BACK_TO_BACK,
  OPT_TRACE, OPT_REDUCTION_ORDER, OPT_SORT_ORDER, OPT_NUM_PARTITIONS, OPT_NUM_REPLICAS,
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
  {"compare", no_argument, 0, OPT_COMPARE},
  {"iterations", required_argument, 0, OPT_ITERATIONS},
  {"profile", no_argument, 0, OPT_PROFILE},
  {"trace", required_argument, 0, OPT_TRACE},
  {"describe", no_argument, 0, OPT_DESCRIBE},
  {"threads", required_argument, 0, OPT_THREADS},
  {"lib-path", required_argument, 0, OPT_LIB_PATH},
  {"command-buffers", required_argument, 0, OPT_COMMAND_BUFFERS},
  {"tf32", required_argument, 0, OPT_TF32},
  {"streams", required_argument, 0, OPT_STREAMS},
  {"sync-each-thunk", no_argument, 0, OPT_SYNC_EACH},
  {"device-resident", no_argument, 0, OPT_DEVICE_RESIDENT},
  {"back-to-back", no_argument, 0, OPT_BACK_TO_BACK},
  {"reduction-order", required_argument, 0, OPT_REDUCTION_ORDER},
  {"sort-order", required_argument, 0, OPT_SORT_ORDER},
  {"num-partitions", required_argument, 0, OPT_NUM_PARTITIONS},
  {"num_partitions", required_argument, 0, OPT_NUM_PARTITIONS},
  {"num-replicas", required_argument, 0, OPT_NUM_REPLICAS},
  {"num_replicas", required_argument, 0, OPT_NUM_REPLICAS},
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

static bool has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

/* A compiled artifact: named *.thunks, or starting with the magic. */
static bool is_artifact(const char *path) {
  if (has_suffix(path, ".thunks")) return true;
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  char buf[sizeof THUNK_FILE_MAGIC] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  return n == sizeof buf - 1 && memcmp(buf, THUNK_FILE_MAGIC, n) == 0;
}

int main(int argc, char **argv) {
  const char *platform = NULL;
  StrVec inputs = {0}, outputs = {0}, expected = {0};
  RunOpts ro = {
    .inputs = &inputs, .outputs = &outputs, .expected = &expected,
    .seed = 42, .atol = 1e-5, .rtol = 1e-5, .cmp_atol = 1e-3, .cmp_rtol = 1e-3,
  };
  bool atol_given = false, rtol_given = false;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
    switch (c) {
    case OPT_PLATFORM: platform = optarg; break;
    case OPT_INPUT: vec_push(&inputs, optarg); break;
    case OPT_RANDOM: ro.random_inputs = true; break;
    case OPT_SEED: {
      char *e;
      ro.seed = strtoull(optarg, &e, 0);
      if (e == optarg || *e) usage_error("bad value for --seed: %s", optarg);
      break;
    }
    case OPT_OUTPUT: vec_push(&outputs, optarg); break;
    case OPT_EXPECTED: vec_push(&expected, optarg); break;
    case OPT_ATOL: ro.atol = parse_double(optarg, "atol"); atol_given = true; break;
    case OPT_RTOL: ro.rtol = parse_double(optarg, "rtol"); rtol_given = true; break;
    case OPT_MEM: {
      char *e;
      long long v = strtoll(optarg, &e, 0);
      if (e == optarg || *e || v < 0) usage_error("bad value for --mem-budget: %s", optarg);
      ro.mem_budget = v;
      break;
    }
    case OPT_TIME: ro.time_budget = parse_double(optarg, "time-budget"); break;
    case OPT_QUIET: ro.quiet = true; break;
    case OPT_COMPARE: ro.compare = true; break;
    case OPT_ITERATIONS: {
      char *e;
      long v = strtol(optarg, &e, 10);
      if (e == optarg || *e || v < 1 || v > 1000000)
        usage_error("bad value for --iterations: %s (1 to 1000000)", optarg);
      ro.iterations = (int)v;
      break;
    }
    case OPT_PROFILE: ro.profile = true; break;
    case OPT_TRACE:
      if (!*optarg) usage_error("%s needs a file name", "--trace");
      ro.trace = optarg;
      break;
    case OPT_THREADS: {
      char *e;
      long v = strtol(optarg, &e, 10);
      if (e == optarg || *e || v < 1 || v > 4096)
        usage_error("bad value for --threads: %s (1 to 4096)", optarg);
      ro.threads = (int)v;
      break;
    }
    case OPT_LIB_PATH:
      if (!*optarg) usage_error("%s needs a directory", "--lib-path");
      ro.lib_path = optarg;
      break;
    case OPT_DESCRIBE: ro.describe = true; break;
    case OPT_COMMAND_BUFFERS:
      if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
        usage_error("bad value for --command-buffers: %s (on or off)", optarg);
      ro.no_command_buffers = strcmp(optarg, "off") == 0;
      break;
    case OPT_STREAMS: {
      char *e;
      long v = strtol(optarg, &e, 10);
      if (e == optarg || *e || v < 1 || v > 16)
        usage_error("bad value for --streams: %s (1 to 16)", optarg);
      ro.streams = (int)v;
      break;
    }
    case OPT_TF32:
      if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
        usage_error("bad value for --tf32: %s (on or off)", optarg);
      ro.no_tf32 = strcmp(optarg, "off") == 0;
      break;
    case OPT_REDUCTION_ORDER:
      if (strcmp(optarg, "xla-cpu") != 0 && strcmp(optarg, "in-order") != 0)
        usage_error("bad value for --reduction-order: %s (xla-cpu or in-order)", optarg);
      ro.reduce_in_order = strcmp(optarg, "in-order") == 0;
      break;
    case OPT_SORT_ORDER:
      if (strcmp(optarg, "xla-cpu") != 0 && strcmp(optarg, "stable") != 0)
        usage_error("bad value for --sort-order: %s (xla-cpu or stable)", optarg);
      ro.sort_order = strcmp(optarg, "stable") == 0 ? SORT_ORDER_STABLE : SORT_ORDER_XLA_CPU;
      break;
    case OPT_NUM_PARTITIONS: case OPT_NUM_REPLICAS: {
      char *e;
      long long v = strtoll(optarg, &e, 10);
      if (e == optarg || *e || v < 1 || v > 4096)
        usage_error(c == OPT_NUM_PARTITIONS ? "bad value for --num-partitions: %s (1 to 4096)"
                                            : "bad value for --num-replicas: %s (1 to 4096)",
                    optarg);
      if (c == OPT_NUM_PARTITIONS) ro.num_partitions = v;
      else ro.num_replicas = v;
      break;
    }
    case OPT_SYNC_EACH: ro.sync_each_thunk = true; break;
    case OPT_DEVICE_RESIDENT: ro.device_resident = true; break;
    case OPT_BACK_TO_BACK: ro.back_to_back = true; break;
    case OPT_HELP: fputs(usage_text, stdout); return 0;
    case OPT_VERSION: printf("xhlo-run %s\n", XHLOC_VERSION); return 0;
    default:
      if (optopt) usage_error("option '%s' needs a value", argv[optind - 1]);
      usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (ro.back_to_back && (ro.iterations < 2 || !ro.device_resident))
    usage_error("%s", "--back-to-back needs --iterations=N (N above 1) and --device-resident");
  if (ro.back_to_back && (ro.profile || ro.trace || ro.sync_each_thunk))
    usage_error("--back-to-back and %s exclude each other (they synchronize every thunk)",
                ro.profile ? "--profile" : ro.trace ? "--trace" : "--sync-each-thunk");
  if (atol_given) ro.cmp_atol = ro.atol;
  if (rtol_given) ro.cmp_rtol = ro.rtol;
  ro.cmp_tol_given = atol_given || rtol_given;
  if (optind != argc - 1) usage_error("%s", optind >= argc ? "no module given" : "give exactly one module");
  const char *path = argv[optind];
  if (platform) {
    static const char *const known[] = {"interpreter", "host", "cuda"};
    const char *p = NULL;
    for (size_t k = 0; k < ARRAY_LEN(known); k++)
      if (strcasecmp(platform, known[k]) == 0) p = known[k];
    if (!p) usage_error("unknown --platform '%s' (this build runs: interpreter, host, cuda)", platform);
    platform = p;
  }
  if (ro.random_inputs && inputs.len)
    usage_error("%s", "--input and --random-inputs exclude each other");
  bool is_hlo = has_suffix(path, ".hlo") || has_suffix(path, ".txt");
  bool artifact = !is_hlo && is_artifact(path);
  if (!artifact) {
    if (!is_hlo && !platform)
      usage_error("'%s': give --platform (the interpreter runs .hlo and .txt HLO text; "
                  "compiled artifacts are .thunks files)", path);
    if (platform && strcmp(platform, "interpreter") != 0)
      usage_error("--platform=%s runs compiled artifacts (PREFIX.thunks): compile the module "
                  "with xhloc -o PREFIX first", platform);
    const char *only = ro.compare ? "--compare" : ro.iterations ? "--iterations"
                       : ro.profile ? "--profile" : ro.trace ? "--trace"
                       : ro.describe ? "--describe" : ro.device_resident ? "--device-resident" : NULL;
    if (only) usage_error("%s works on compiled artifacts (PREFIX.thunks)", only);
  } else if (platform && strcmp(platform, "interpreter") == 0) {
    const char *only = ro.compare ? "--compare" : ro.iterations ? "--iterations"
                       : ro.profile ? "--profile" : ro.trace ? "--trace"
                       : ro.device_resident ? "--device-resident" : NULL;
    if (only) usage_error("%s needs --platform=host or cuda", only);
  }
  ro.platform = platform;
  ro.mpi = xchg_launched(&ro.mpi_rank, &ro.mpi_size);

  int status;
  if (artifact) {
    status = run_thunks(&ro, path);
  } else {
    Diag d = {0};
    SrcFile *src = srcfile_read(path, &d);
    if (src) {
      status = run_interpreter(&ro, src);
      srcfile_free(src);
    } else {
      diag_print(&d, stderr);
      diag_clear(&d);
      status = 1;
    }
  }
  vec_free(&inputs);
  vec_free(&outputs);
  vec_free(&expected);
  return status;
}
