/*
 * main.c - the xhloc driver: command-line options, then the pipeline up to
 * the stage asked for, written out as straight-line code.
 *
 *   xhloc [options] FILE...
 *
 * Each FILE ('-' is stdin) holds one or more HLO modules separated by
 * "// -----" lines.  Every module goes through the pipeline in turn; the
 * outputs are joined with "// -----" lines so that they parse again.  The
 * output is built in memory and written only when every module succeeded.
 *
 * The artifact (stage "artifact", the default with -o PREFIX): one module
 * compiled to PREFIX.thunks and PREFIX.ptx / PREFIX.host.so (backend.c,
 * artifact_files.c).
 *
 * Exit status: 0 success, 1 an error in the input (reported as
 * file:line:col: error: ..., the line and a caret), 2 a usage error.
 */
#include "../../lib/analysis/indexing.h"
#include "../../lib/runtime/host_cpu.h"
#include "../../lib/runtime/thunks.h"
#include "xhloc.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Stages, in pipeline order (StageId in xhloc.h). */
static const struct {
  StageId id;
  const char *name;
  const char *help;
} stages[] = {
    {STAGE_PARSED, "parsed", "the modules as parsed and verified; no pass runs"},
    {STAGE_INDEXING, "indexing",
     "indexing maps of every instruction (seed 000); no pass runs"},
    {STAGE_HLO, "hlo", "after the HLO optimization pipeline (or --run-passes)"},
    {STAGE_BUFFERS, "buffer-assignment",
     "the buffer assignment (allocations and the values in them)"},
    {STAGE_MEMORY, "memory",
     "where the bytes go: the peak of live bytes, where it\n"
     "                        occurs, the buffers live there (largest first,\n"
     "                        with instruction, shape and source line) and\n"
     "                        the totals by kind"},
    {STAGE_THUNKS, "thunks", "the thunk sequence (XLA's thunk_sequence.txt)"},
    {STAGE_LLVM_NO_OPT, "llvm-before-optimizations",
     "the kernels' LLVM IR before LLVM optimization"},
    {STAGE_LLVM, "llvm", "the kernels' LLVM IR after optimization"},
    {STAGE_LLVM, "llvm-after-optimizations", "the same as llvm"},
    {STAGE_PTX, "ptx", "the PTX of the kernels (--target=gpu)"},
    {STAGE_ARTIFACT, "artifact",
     "write PREFIX.thunks and PREFIX.ptx (PREFIX.host.so with\n"
     "                        --target=host); needs -o PREFIX, one module"},
};

#define DEFAULT_STAGE "parsed"

static const char *opt_output;     /* -o FILE; NULL: stdout */
static StageId opt_stage = STAGE_PARSED;
static bool opt_stage_given;        /* --stage was given */
/* --target, --arch, ... */
static BackendOptions opt_backend = {.arch = "sm_90",
                                     .cmdbuf_types = CMDBUF_DEFAULT_TYPES,
                                     .cmdbuf_min_size = CMDBUF_DEFAULT_MIN_SIZE};
static bool opt_no_warnings;       /* -w */
static bool opt_input_to_output;   /* --input-to-output (stage indexing) */
static PipelineOptions opt_pipeline; /* pass selection, dumps, timing */
static PhaseTimes phase_times;       /* --time-passes: the compile's phases */
static int next_module_id;         /* NNNN of module_NNNN.* dumps */
/* --num-replicas, --num-partitions (0: not given) */
static int64_t opt_num_replicas, opt_num_partitions;

/* The separator between modules in input and output (mlir-opt style). */
static const char module_separator[] = "// -----\n";

static const char usage_text[] =
    "usage: xhloc [options] FILE...\n"
    "\n"
    "Reads HLO text modules (FILE '-' is stdin; modules within a file are\n"
    "separated by '// -----' lines), and prints them after the chosen stage.\n"
    "\n"
    "options:\n"
    "  -o, --output=FILE     write the output to FILE instead of stdout; FILE\n"
    "                        is replaced only when every input succeeded.\n"
    "                        Without --stage, -o PREFIX compiles the one module\n"
    "                        of the one FILE into the artifact: PREFIX.thunks\n"
    "                        and PREFIX.ptx (or PREFIX.host.so), written only\n"
    "                        when everything succeeded\n"
    "      --stage=STAGE     stop after STAGE and print its result (default: "
    DEFAULT_STAGE ",\n"
    "                        or artifact with -o PREFIX)\n"
    "      --target=TARGET   gpu (PTX kernels for CUDA, the default) or host\n"
    "                        (the same kernels as loop nests, a shared object)\n"
    "      --arch=SM         the GPU architecture of the PTX (default sm_90)\n"
    "      --libdevice=PATH  CUDA's libdevice bitcode (default\n"
    "                        $CUDA_HOME/nvvm/libdevice/libdevice.10.bc)\n"
    "      --host-cpu=CPU    --target=host: the x86-64 CPU the kernels are\n"
    "                        built for: native (this machine's CPU and\n"
    "                        features, the default) or a psABI level for a\n"
    "                        portable artifact: x86-64, x86-64-v2, x86-64-v3\n"
    "                        (AVX2, FMA), x86-64-v4 (AVX-512).  The thunk\n"
    "                        file records the features; xhlo-run refuses to\n"
    "                        run it on a CPU that lacks one\n"
    "      --host-math=MODE  f32 exp, expm1, log, log1p, tanh, logistic, erf,\n"
    "                        sin, cos on the host (also of f16/bf16): fast\n"
    "                        (the default: inline polynomials that vectorize,\n"
    "                        within 3 ulp, sin/cos for |x| <= 3e6; see\n"
    "                        emitters/fast_math.c) or exact (libm calls)\n"
    "      --host-linker=LINKER  --target=host: how PREFIX.host.so is linked:\n"
    "                        xhloc (the default: xhloc's own linker, no\n"
    "                        process; it falls back to the system linker for\n"
    "                        an object it does not handle) or system (`ld\n"
    "                        -shared`, else `cc -shared`)\n"
    "      --host-routines=on|off  --target=host: plain f32 reductions (those\n"
    "                        XLA's CPU gives its reduction library) and f32\n"
    "                        top-k run as xhlo-run's own routines (kReduce,\n"
    "                        kTopK thunks; no kernel to compile) when no\n"
    "                        kernel chain takes them: on (the default) or off\n"
    "      --memory-limit=BYTES  keep the buffer assignment's total (the\n"
    "                        memory a run allocates for the program) at\n"
    "                        most BYTES (K, M, G, T suffixes, 1024-based):\n"
    "                        values live across the peak are computed again\n"
    "                        before their later uses (XLA's\n"
    "                        rematerialization); when that cannot reach the\n"
    "                        limit, an error names the peak and its largest\n"
    "                        buffers and nothing is written\n"
    "      --command-buffer=TYPES  --target=gpu: which thunks go into command\n"
    "                        buffers (kCommandBuffer; xhlo-run records each\n"
    "                        into a CUDA graph once and replays it), as XLA's\n"
    "                        --xla_gpu_enable_command_buffer: comma-separated,\n"
    "                        any case: fusion (kernels), cublas (kGemm),\n"
    "                        cublaslt (kCublasLtMatmul), cudnn (convolutions),\n"
    "                        copy (copies and memsets; xhloc's own); custom_call,\n"
    "                        collectives, conditional, while are accepted and\n"
    "                        change nothing (xhloc puts no such thunks in a\n"
    "                        command buffer).  Default\n"
    "                        fusion,cublas,cublaslt,cudnn,copy; '' turns\n"
    "                        command buffers off\n"
    "      --command-buffer-min-size=N  only runs of at least N such thunks\n"
    "                        become a command buffer (XLA's\n"
    "                        --xla_gpu_graph_min_graph_size; default 5)\n"
    "      --all-reduce-combine-threshold=BYTES  all-reduce-combiner combines\n"
    "                        independent all-reduces into one up to BYTES of\n"
    "                        operands (XLA's\n"
    "                        --xla_gpu_all_reduce_combine_threshold_bytes,\n"
    "                        also accepted; default 31457287); 0: none\n"
    "      --num-partitions=N  compile for N partitions (XLA's runners'\n"
    "                        --num_partitions): a module whose header has\n"
    "                        none takes N (one whose header has another is\n"
    "                        an error).  Without it and without one in the\n"
    "                        header (jax.jit(...).lower(...).as_text() writes\n"
    "                        none), the count is the devices of the module's\n"
    "                        Shardy mesh, else of its shardings, with a note\n"
    "      --num-replicas=N  compile for N replicas (--num_replicas), the\n"
    "                        same way against the header's replica_count\n"
    "      --list-stages     print the supported stages, one per line\n"
    "      --split-input-file  accepted for hlo-opt compatibility: input is\n"
    "                        always split on '// -----' lines\n"
    "      --passes=REGEX    run only the pipeline passes whose whole name\n"
    "                        matches REGEX (POSIX extended)\n"
    "      --disable-passes=REGEX  skip the passes whose whole name matches\n"
    "      --run-passes=A,B,...  run exactly these passes, in this order,\n"
    "                        instead of the default pipeline\n"
    "      --list-passes     print every pass with its pipelines\n"
    "      --verify-each     run the verifier after every pass that changed\n"
    "                        the module\n"
    "      --force-passes    run the passes even on is_scheduled=true input\n"
    "      --dump-to=DIR     write dumps with XLA's names to DIR: the HLO\n"
    "                        (module_NNNN.*.txt) and, for the stages reached,\n"
    "                        *.sm_9.0_gpu_after_optimizations.txt, ...\n"
    "                        -buffer-assignment.txt, *.thunk_sequence.txt,\n"
    "                        *.ir-no-opt.ll, *.ir-with-opt.ll, *.ptx\n"
    "      --dump-pass-re=REGEX  also dump between passes matching REGEX;\n"
    "                        with '.*' only after passes that changed it\n"
    "      --time-passes     print the time spent in each pass, then in each\n"
    "                        phase of the compile (parse, passes, kernel IR,\n"
    "                        LLVM optimization and code generation, linking)\n"
    "                        to stderr\n"
    "      --input-to-output  with --stage=indexing: print the maps from each\n"
    "                        operand to the output instead of the reverse\n"
    "  -w, --no-warnings     do not print warnings\n"
    "  -h, --help            print this help\n"
    "      --version         print the version\n"
    "\n"
    "stages:\n";

static const char usage_tail[] =
    "\n"
    "Stages after hlo run the backend preparation (flatten-call-graph,\n"
    "layout-assignment, fusion-wrapper, copy-insertion) when the pipeline was\n"
    "skipped or replaced (is_scheduled=true input, --run-passes).  An op a\n"
    "stage cannot compile yet is an error naming the op and its position.\n"
    "\n"
    "exit status: 0 success, 1 error in the input, 2 usage error\n";

static void print_help(void) {
  fputs(usage_text, stdout);
  for (size_t i = 0; i < ARRAY_LEN(stages); i++)
    printf("  %-20s  %s\n", stages[i].name, stages[i].help);
  fputs(usage_tail, stdout);
}

NORETURN PRINTF_LIKE(1, 2) static void usage_error(const char *fmt, ...) {
  va_list ap;
  fputs("xhloc: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\ntry 'xhloc --help'\n", stderr);
  exit(2);
}

static void set_stage(const char *name) {
  for (size_t i = 0; i < ARRAY_LEN(stages); i++) {
    if (strcmp(stages[i].name, name) == 0) {
      opt_stage = stages[i].id;
      opt_stage_given = true;
      return;
    }
  }
  StrBuf b;
  sb_init(&b);
  for (size_t i = 0; i < ARRAY_LEN(stages); i++)
    sb_printf(&b, "%s%s", i ? ", " : "", stages[i].name);
  usage_error("unknown stage '%s' (supported stages: %s)", name, b.s);
}

enum {
  OPT_STAGE = 256,
  OPT_LIST_STAGES,
  OPT_SPLIT_INPUT_FILE,
  OPT_VERSION,
  OPT_PASSES,
  OPT_DISABLE_PASSES,
  OPT_RUN_PASSES,
  OPT_LIST_PASSES,
  OPT_VERIFY_EACH,
  OPT_FORCE_PASSES,
  OPT_DUMP_TO,
  OPT_DUMP_PASS_RE,
  OPT_TIME_PASSES,
  OPT_INPUT_TO_OUTPUT,
  OPT_TARGET,
  OPT_ARCH,
  OPT_HOST_CPU,
  OPT_LIBDEVICE,
  OPT_HOST_MATH,
  OPT_HOST_LINKER,
  OPT_HOST_ROUTINES,
  OPT_MEMORY_LIMIT,
  OPT_COMMAND_BUFFER,
  OPT_COMMAND_BUFFER_MIN_SIZE, OPT_AR_COMBINE,
  OPT_NUM_PARTITIONS,
  OPT_NUM_REPLICAS,
};

static const struct option long_options[] = {
    {"output", required_argument, NULL, 'o'},
    {"stage", required_argument, NULL, OPT_STAGE},
    {"list-stages", no_argument, NULL, OPT_LIST_STAGES},
    {"split-input-file", no_argument, NULL, OPT_SPLIT_INPUT_FILE},
    {"no-warnings", no_argument, NULL, 'w'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"passes", required_argument, NULL, OPT_PASSES},
    {"disable-passes", required_argument, NULL, OPT_DISABLE_PASSES},
    {"run-passes", required_argument, NULL, OPT_RUN_PASSES},
    {"list-passes", no_argument, NULL, OPT_LIST_PASSES},
    {"verify-each", no_argument, NULL, OPT_VERIFY_EACH},
    {"force-passes", no_argument, NULL, OPT_FORCE_PASSES},
    {"dump-to", required_argument, NULL, OPT_DUMP_TO},
    {"dump-pass-re", required_argument, NULL, OPT_DUMP_PASS_RE},
    {"time-passes", no_argument, NULL, OPT_TIME_PASSES},
    {"input-to-output", no_argument, NULL, OPT_INPUT_TO_OUTPUT},
    {"target", required_argument, NULL, OPT_TARGET},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"host-cpu", required_argument, NULL, OPT_HOST_CPU},
    {"libdevice", required_argument, NULL, OPT_LIBDEVICE},
    {"host-math", required_argument, NULL, OPT_HOST_MATH},
    {"host-linker", required_argument, NULL, OPT_HOST_LINKER},
    {"host-routines", required_argument, NULL, OPT_HOST_ROUTINES},
    {"memory-limit", required_argument, NULL, OPT_MEMORY_LIMIT},
    {"command-buffer", required_argument, NULL, OPT_COMMAND_BUFFER},
    {"command-buffer-min-size", required_argument, NULL,
     OPT_COMMAND_BUFFER_MIN_SIZE},
    {"all-reduce-combine-threshold", required_argument, NULL, OPT_AR_COMBINE},
    {"xla_gpu_all_reduce_combine_threshold_bytes", required_argument, NULL,
     OPT_AR_COMBINE},
    {"num-partitions", required_argument, NULL, OPT_NUM_PARTITIONS},
    {"num_partitions", required_argument, NULL, OPT_NUM_PARTITIONS},
    {"num-replicas", required_argument, NULL, OPT_NUM_REPLICAS},
    {"num_replicas", required_argument, NULL, OPT_NUM_REPLICAS},
    {NULL, 0, NULL, 0},
};

/* Reports the option getopt_long refused ("arg" is the argument it was in). */
NORETURN static void unknown_option(const char *arg) {
  if (strncmp(arg, "--", 2) != 0)
    usage_error("unknown option '-%c'", optopt);
  const char *eq = strchr(arg, '=');
  size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
  for (const struct option *o = long_options; eq && o->name; o++)
    if (o->has_arg == no_argument && strlen(o->name) == n &&
        strncmp(o->name, arg + 2, n) == 0)
      usage_error("option '--%s' takes no argument", o->name);
  usage_error("unknown option '%s'", arg);
}

/* A byte count: digits, optionally a fraction, then an optional K, M, G or
 * T (1024-based) with an optional "iB" or "B" ("8G", "1.5GiB", "512MB"),
 * or a plain "B". */
static bool parse_bytes(const char *s, int64_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0 || v != v)
    return false;
  double scale = 1;
  const char *units = "KMGT";
  const char *u = *end ? strchr(units, *end == 'k' ? 'K' : *end) : NULL;
  if (u && *end) {
    for (const char *p = units; p <= u; p++)
      scale *= 1024;
    end++;
    if (end[0] == 'i' && end[1] == 'B')
      end += 2;
    else if (end[0] == 'B')
      end++;
  } else if (*end == 'B') {
    end++;
  }
  if (*end || v * scale > 9.2e18)
    return false;
  *out = (int64_t)(v * scale);
  return true;
}

/* --target: gpu (also cuda) or host (also cpu), as hlo-opt canonicalizes
 * platform names. */
static void set_target(const char *name) {
  if (strcmp(name, "gpu") == 0 || strcmp(name, "cuda") == 0)
    opt_backend.host = false;
  else if (strcmp(name, "host") == 0 || strcmp(name, "cpu") == 0)
    opt_backend.host = true;
  else
    usage_error("unknown target '%s' (supported targets: gpu, host)", name);
}

/* --arch: sm_NN or sm_NNa, NN at least two digits. */
static void set_arch(const char *arch) {
  size_t n = strncmp(arch, "sm_", 3) == 0 ? strspn(arch + 3, "0123456789") : 0;
  const char *rest = arch + 3 + n;
  if (n < 2 || !(rest[0] == '\0' || (rest[0] == 'a' && rest[1] == '\0')))
    usage_error("bad --arch '%s' (want sm_NN, e.g. sm_90)", arch);
  opt_backend.arch = arch;
}

/* --host-math: fast (inline approximations) or exact (libm). */
static void set_host_math(const char *mode) {
  if (strcmp(mode, "fast") == 0)
    opt_backend.exact_host_math = false;
  else if (strcmp(mode, "exact") == 0)
    opt_backend.exact_host_math = true;
  else
    usage_error("unknown --host-math '%s' (supported: fast, exact)", mode);
}

/* --num-partitions, --num-replicas: a count of devices, 1 to 4096 (the
 * interpreter's limit). */
static int64_t parse_count(const char *opt, const char *s) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || v < 1 || v > 4096)
    usage_error("bad --%s '%s' (want 1 to 4096)", opt, s);
  return v;
}

/* Parses the options; returns the index of the first FILE in argv. */
static int parse_options(int argc, char **argv) {
  opterr = 0; /* we word the messages ourselves */
  int c;
  while ((c = getopt_long(argc, argv, ":o:wh", long_options, NULL)) != -1) {
    switch (c) {
    case 'o': opt_output = optarg; break;
    case 'w': opt_no_warnings = true; break;
    case OPT_STAGE: set_stage(optarg); break;
    case OPT_SPLIT_INPUT_FILE: break;
    case OPT_LIST_STAGES:
      for (size_t i = 0; i < ARRAY_LEN(stages); i++)
        puts(stages[i].name);
      exit(0);
    case 'h': print_help(); exit(0);
    case OPT_VERSION: puts("xhloc " XHLOC_VERSION); exit(0);
    case OPT_PASSES: opt_pipeline.passes_re = optarg; break;
    case OPT_DISABLE_PASSES: opt_pipeline.disable_re = optarg; break;
    case OPT_RUN_PASSES: opt_pipeline.run_passes = optarg; break;
    case OPT_LIST_PASSES: pipeline_list_passes(stdout); exit(0);
    case OPT_VERIFY_EACH: opt_pipeline.verify_each = true; break;
    case OPT_FORCE_PASSES: opt_pipeline.force = true; break;
    case OPT_DUMP_TO: opt_pipeline.dump_to = optarg; break;
    case OPT_DUMP_PASS_RE: opt_pipeline.dump_pass_re = optarg; break;
    case OPT_TIME_PASSES:
      opt_pipeline.time_passes = true;
      opt_backend.times = &phase_times;
      break;
    case OPT_INPUT_TO_OUTPUT: opt_input_to_output = true; break;
    case OPT_TARGET: set_target(optarg); break;
    case OPT_ARCH: set_arch(optarg); break;
    case OPT_HOST_CPU:
      if (strcmp(optarg, "native") != 0 && !host_cpu_level_features(optarg))
        usage_error("bad --host-cpu '%s' (want native, x86-64, x86-64-v2, "
                    "x86-64-v3 or x86-64-v4)", optarg);
      opt_backend.host_cpu = optarg;
      break;
    case OPT_LIBDEVICE: opt_backend.libdevice = optarg; break;
    case OPT_HOST_MATH: set_host_math(optarg); break;
    case OPT_HOST_LINKER:
      if (strcmp(optarg, "xhloc") != 0 && strcmp(optarg, "system") != 0)
        usage_error("unknown --host-linker '%s' (supported: xhloc, system)", optarg);
      opt_backend.system_linker = strcmp(optarg, "system") == 0;
      break;
    case OPT_HOST_ROUTINES:
      if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
        usage_error("unknown --host-routines '%s' (supported: on, off)", optarg);
      opt_backend.no_host_routines = strcmp(optarg, "off") == 0;
      break;
    case OPT_COMMAND_BUFFER: {
      Diag cd = {0};
      if (!cmdbuf_parse_types(optarg, &opt_backend.cmdbuf_types, &cd))
        usage_error("--command-buffer: %s", cd.msg);
      break;
    }
    case OPT_COMMAND_BUFFER_MIN_SIZE: {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (end == optarg || *end || v < 1 || v > 1000000)
        usage_error("bad --command-buffer-min-size '%s' (want 1 to 1000000)",
                    optarg);
      opt_backend.cmdbuf_min_size = (int)v;
      break;
    }
    case OPT_MEMORY_LIMIT:
      if (!parse_bytes(optarg, &opt_backend.memory_limit) ||
          opt_backend.memory_limit <= 0)
        usage_error("bad --memory-limit '%s' (want bytes above 0, with an "
                    "optional K, M, G or T suffix: 1024-based, KiB/KB/K alike)",
                    optarg);
      break;
    case OPT_AR_COMBINE: {
      char *end;
      long long v = strtoll(optarg, &end, 10);
      if (end == optarg || *end || v < 0)
        usage_error("bad --all-reduce-combine-threshold '%s' (want bytes, 0 or more)",
                    optarg);
      opt_pipeline.all_reduce_combine_threshold = v ? v : -1;
      break;
    }
    case OPT_NUM_PARTITIONS:
      opt_num_partitions = parse_count("num-partitions", optarg);
      break;
    case OPT_NUM_REPLICAS:
      opt_num_replicas = parse_count("num-replicas", optarg);
      break;
    case ':': usage_error("option '%s' needs an argument", argv[optind - 1]);
    case '?':
    default:
      unknown_option(argv[optind - 1]);
    }
  }
  Diag d = {0};
  opt_pipeline.target = opt_backend.host ? PASS_TARGET_HOST : PASS_TARGET_GPU;
  if (!pipeline_check_options(&opt_pipeline, &d))
    usage_error("%s", d.msg);
  if (opt_input_to_output && opt_stage != STAGE_INDEXING)
    usage_error("--input-to-output needs --stage=indexing");
  if (optind >= argc)
    usage_error("no input files");
  /* -o PREFIX without --stage is the artifact (xla_compile's output_file);
   * -o - stays the printed module. */
  bool to_file = opt_output && strcmp(opt_output, "-") != 0;
  if (!opt_stage_given && to_file)
    opt_stage = STAGE_ARTIFACT;
  if (opt_stage == STAGE_ARTIFACT) {
    if (!to_file)
      usage_error("--stage=artifact needs -o PREFIX");
    if (argc - optind > 1)
      usage_error("-o PREFIX writes the artifact of one module; %d input "
                  "files given (use --stage=... to print them instead)",
                  argc - optind);
    opt_backend.prefix = opt_output;
  }
  if (opt_backend.host && opt_stage == STAGE_PTX)
    usage_error("--stage=ptx needs --target=gpu");
  return optind;
}

/*
 * Before buffer assignment: the passes compilation needs when the pipeline
 * did not run them (is_scheduled input, --run-passes).  Each is idempotent.
 */
static bool prepare_backend(HloModule *m, Diag *d) {
  bool skipped = m->is_scheduled && !opt_pipeline.force;
  if (!skipped && !opt_pipeline.run_passes)
    return true;
  const Pipeline *const *pipes;
  int np = pipeline_backend_required(&pipes);
  PipelineOptions o = opt_pipeline;
  o.run_passes = NULL;
  o.force = true;
  return pipeline_run_list(m, np, pipes, &o, d) && hlo_verify(m, d);
}

/* The artifact's reference HLO of a module xhloc partitions: the program
 * every partition runs, as spmd-partitioning made it (the interpreter runs
 * it for xhlo-run --compare and --platform=interpreter, with the global
 * inputs and results its attributes describe). */
static void keep_partitioned(void *arg, const char *pass, const HloModule *m) {
  char **original = arg;
  if (!*original || strcmp(pass, "spmd-partitioning") != 0)
    return;
  StrBuf b;
  sb_init(&b);
  hlo_print_module(&b, m, &print_options_default);
  free(*original);
  *original = sb_detach(&b);
}

/*
 * The pipeline for one file: parse, verify, the HLO passes (stage hlo),
 * print.  Streams the output of each module to out (after a separator when
 * something was written before) and returns false with the error in d on
 * the first failure.
 */
static bool compile_file(const char *path, Output *out, bool *wrote, Diag *d) {
  PhaseTimes *times = opt_backend.times;
  double t0 = clock_seconds();
  SrcFile *src = srcfile_read(path, d);
  if (!src) {
    diag_print(d, stderr);
    return false;
  }
  ParseOptions popts = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  int n = hlo_parse(src, &popts, &mods, d);
  bool ok = n > 0;
  for (int i = 0; ok && i < n; i++) {
    StrBuf note;
    sb_init(&note);
    ok = hlo_set_device_counts(mods[i], opt_num_replicas, opt_num_partitions,
                               &note, d);
    if (note.len && d->warn_out)
      diag_print_at(d->warn_out, mods[i]->loc, "note", note.s);
    sb_free(&note);
  }
  for (int i = 0; ok && i < n; i++)
    ok = hlo_verify(mods[i], d);
  t0 = phase_since(times, "read, parse and verify", t0);
  if (ok && opt_stage == STAGE_ARTIFACT && n > 1)
    usage_error("-o PREFIX writes the artifact of one module; %s holds %d "
                "(split it, or use --stage=... to print them)",
                path, n);
  for (int i = 0; ok && i < n; i++) {
    char *original = NULL;
    t0 = clock_seconds();
    if (opt_stage >= STAGE_BUFFERS) {
      StrBuf b;
      sb_init(&b);
      hlo_print_module(&b, mods[i], &print_options_default);
      original = sb_detach(&b);
      t0 = phase_since(times, "print the original HLO", t0);
    }
    if (opt_stage >= STAGE_HLO) {
      opt_pipeline.module_id = next_module_id++;
      opt_pipeline.after_pass = keep_partitioned;
      opt_pipeline.after_pass_arg = &original;
      ok = pipeline_run(mods[i], &opt_pipeline, d) && hlo_verify(mods[i], d);
      opt_pipeline.after_pass = NULL;
      t0 = phase_since(times, "HLO passes", t0);
    }
    if (ok && opt_stage >= STAGE_BUFFERS) {
      ok = prepare_backend(mods[i], d);
      phase_since(times, "backend preparation", t0);
    }
    if (ok && opt_stage >= STAGE_BUFFERS) {
      StrBuf text;
      sb_init(&text);
      opt_backend.module_id = opt_pipeline.module_id;
      opt_backend.dump_to = opt_pipeline.dump_to;
      ok = backend_run(mods[i], opt_stage, &opt_backend, original, &text, d);
      if (ok && opt_stage != STAGE_ARTIFACT) {
        if (*wrote) {
          fputs(module_separator, out->f);
          fputc('\n', out->f);
        }
        fwrite(text.s ? text.s : "", 1, text.len, out->f);
        if (text.len && text.s[text.len - 1] != '\n')
          fputc('\n', out->f);
        *wrote = true;
      }
      sb_free(&text);
    }
    free(original);
    if (!ok)
      break;
    switch (opt_stage) {
    case STAGE_PARSED:
    case STAGE_INDEXING:
    case STAGE_HLO:
      if (*wrote) {
        /* Module texts end in one blank line; then the separator, then a
         * blank line. */
        fputs(module_separator, out->f);
        fputc('\n', out->f);
      }
      if (opt_stage == STAGE_INDEXING) {
        StrBuf b;
        sb_init(&b);
        indexing_print_module(&b, mods[i], opt_input_to_output);
        /* Keep the module layout: text, then one blank line. */
        while (b.len < 2 || memcmp(b.s + b.len - 2, "\n\n", 2) != 0)
          sb_putc(&b, '\n');
        fwrite(b.s, 1, b.len, out->f);
        sb_free(&b);
      } else {
        hlo_write_module(out->f, mods[i], &print_options_default);
      }
      *wrote = true;
      break;
    default: /* the back-end stages, above */
      break;
    }
  }
  /* Report while the source is alive: the error's location points into it. */
  if (!ok)
    diag_print(d, stderr);
  for (int i = 0; i < n; i++)
    hlo_module_free(mods[i]);
  free(mods);
  srcfile_free(src);
  return ok;
}

/*
 * Leaves without running the static destructors of the LLVM libraries
 * linked in (thousands of command-line options and managed statics: about
 * 0.5 ms, a twentieth of a small module's compile, to free memory the
 * system takes back anyway).  Everything xhloc writes is complete by then.
 * A sanitizer build exits normally, so that LeakSanitizer still looks.
 */
static NORETURN void leave(int status) {
  if (fflush(NULL) != 0 && status == 0)
    status = 1;
#if defined(__SANITIZE_ADDRESS__)
  exit(status);
#else
  _exit(status);
#endif
}

int main(int argc, char **argv) {
  int first = parse_options(argc, argv);
  Diag d = {0};
  d.warn_out = opt_no_warnings ? NULL : stderr;
  /* The artifact writes its own files; the text stages go to Output. */
  bool artifact = opt_stage == STAGE_ARTIFACT;
  Output out = {0};
  bool ok = artifact || output_open(&out, opt_output, &d);
  if (!ok)
    diag_print(&d, stderr);
  bool wrote = false;
  for (int i = first; ok && i < argc; i++)
    ok = compile_file(argv[i], &out, &wrote, &d);
  if (ok && !artifact && !output_commit(&out, &d)) {
    diag_print(&d, stderr);
    ok = false;
  }
  if (!ok && !artifact)
    output_abort(&out);
  if (opt_backend.times && phase_times.len > 0)
    phase_print(&phase_times, "compile phases", stderr);
  vec_free(&phase_times);
  diag_clear(&d);
  leave(ok ? 0 : 1);
}
