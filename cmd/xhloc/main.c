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
 * Exit status: 0 success, 1 an error in the input (reported as
 * file:line:col: error: ..., the line and a caret), 2 a usage error.
 */
#include "../../lib/analysis/indexing.h"
#include "../../lib/hlo/hlo.h"
#include "../../passes/passes.h"
#include "xhloc.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/*
 * Stages, in pipeline order.  --stage=NAME stops after that stage and prints
 * its result.
 */
typedef enum StageId {
  STAGE_PARSED, /* parse + verify, print the modules as read */
  STAGE_INDEXING, /* parse + verify, print every instruction's indexing maps */
  STAGE_HLO,    /* + the HLO pass pipeline (passes/pipeline.c) */
} StageId;

static const struct {
  StageId id;
  const char *name;
  const char *help;
} stages[] = {
    {STAGE_PARSED, "parsed", "the modules as parsed and verified; no pass runs"},
    {STAGE_INDEXING, "indexing",
     "indexing maps of every instruction (seed 000); no pass runs"},
    {STAGE_HLO, "hlo", "after the HLO optimization pipeline (or --run-passes)"},
};

#define DEFAULT_STAGE "parsed"

static const char *opt_output;     /* -o FILE; NULL: stdout */
static StageId opt_stage = STAGE_PARSED;
static bool opt_no_warnings;       /* -w */
static bool opt_input_to_output;   /* --input-to-output (stage indexing) */
static PipelineOptions opt_pipeline; /* pass selection, dumps, timing */
static int next_module_id;         /* NNNN of module_NNNN.* dumps */

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
    "                        is replaced only when every input succeeded\n"
    "      --stage=STAGE     stop after STAGE and print its result (default: "
    DEFAULT_STAGE ")\n"
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
    "      --dump-to=DIR     write HLO dumps (module_NNNN.*.txt) to DIR\n"
    "      --dump-pass-re=REGEX  also dump between passes matching REGEX;\n"
    "                        with '.*' only after passes that changed it\n"
    "      --time-passes     print the time spent in each pass to stderr\n"
    "      --input-to-output  with --stage=indexing: print the maps from each\n"
    "                        operand to the output instead of the reverse\n"
    "  -w, --no-warnings     do not print warnings\n"
    "  -h, --help            print this help\n"
    "      --version         print the version\n"
    "\n"
    "stages:\n";

static const char usage_tail[] =
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
    case OPT_TIME_PASSES: opt_pipeline.time_passes = true; break;
    case OPT_INPUT_TO_OUTPUT: opt_input_to_output = true; break;
    case ':': usage_error("option '%s' needs an argument", argv[optind - 1]);
    case '?':
    default:
      unknown_option(argv[optind - 1]);
    }
  }
  Diag d = {0};
  if (!pipeline_check_options(&opt_pipeline, &d))
    usage_error("%s", d.msg);
  if (opt_input_to_output && opt_stage != STAGE_INDEXING)
    usage_error("--input-to-output needs --stage=indexing");
  if (optind >= argc)
    usage_error("no input files");
  return optind;
}

/*
 * The pipeline for one file: parse, verify, the HLO passes (stage hlo),
 * print.  Streams the output of each module to out (after a separator when
 * something was written before) and returns false with the error in d on
 * the first failure.
 */
static bool compile_file(const char *path, Output *out, bool *wrote, Diag *d) {
  SrcFile *src = srcfile_read(path, d);
  if (!src) {
    diag_print(d, stderr);
    return false;
  }
  ParseOptions popts = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  int n = hlo_parse(src, &popts, &mods, d);
  bool ok = n > 0;
  for (int i = 0; ok && i < n; i++)
    ok = hlo_verify(mods[i], d);
  for (int i = 0; ok && i < n; i++) {
    if (opt_stage >= STAGE_HLO) {
      opt_pipeline.module_id = next_module_id++;
      ok = pipeline_run(mods[i], &opt_pipeline, d) && hlo_verify(mods[i], d);
      if (!ok)
        break;
    }
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

int main(int argc, char **argv) {
  int first = parse_options(argc, argv);
  Diag d = {0};
  d.warn_out = opt_no_warnings ? NULL : stderr;
  Output out;
  bool ok = output_open(&out, opt_output, &d);
  if (!ok)
    diag_print(&d, stderr);
  bool wrote = false;
  for (int i = first; ok && i < argc; i++)
    ok = compile_file(argv[i], &out, &wrote, &d);
  if (ok && !output_commit(&out, &d)) {
    diag_print(&d, stderr);
    ok = false;
  }
  if (!ok)
    output_abort(&out);
  diag_clear(&d);
  return ok ? 0 : 1;
}
