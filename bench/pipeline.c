/*
 * pipeline.c - benchmark of the default HLO pipeline (passes/pipeline.c) on
 * the largest modules of the corpus.
 *
 *   pipeline [-n N] [-r RUNS] [-t] [-p 1|4] [DIR]
 *
 * Takes the N largest DIR/ *.hlo files (default 3; DIR defaults to
 * $XHLOC_CORPUS or ../shared/hlo-corpus).  For each it reports the best of
 * RUNS (default 3) times of the whole default pipeline on a freshly parsed
 * copy of the first module, in CPU time of this thread, against the target
 * of 2 seconds.  Then the same for a module holding that module four times
 * over (a new entry holding four inlined copies of the entry's body, each on
 * its own parameters), and the ratio of the two times per instruction:
 * close to 1 when the pipeline's time grows linearly with module size.  So
 * that the two differ in size only, both are printed and parsed again
 * before timing (the copy is then a fresh parse like the original, without
 * calls or a cloned memory layout of its own), and instructions are counted
 * after flatten-call-graph and the removal of unreachable computations
 * (both untimed), so that computations called from several places count
 * once per call site and dead ones not at all.  With -t the pass manager's timing
 * table of the last run of each module follows.  -p 1 (or 4) times only the
 * module (or only the module four times over), for profiling one of them.
 */
#include "../lib/hlo/ir_edit.h"
#include "../passes/passes.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { TARGET_SECONDS = 2 };

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct File {
  char *path;
  off_t size;
} File;

static int by_size_desc(const void *a, const void *b) {
  const File *x = a, *y = b;
  return x->size < y->size ? 1 : x->size > y->size ? -1 : strcmp(x->path, y->path);
}

static int64_t count_instrs(const HloModule *m) {
  int64_t n = 0;
  for (int c = 0; c < m->ncomps; c++)
    n += m->comps[c]->ninstrs;
  return n;
}

/* The module with its entry four times over: a new entry holds four
 * inlined copies of the old entry's body, each on its own parameters, and
 * returns their results as a tuple. */
static void repeat4(HloModule *m) {
  IrEdit *e = ir_begin(m);
  HloComp *orig = m->entry;
  orig->is_entry = false;
  HloComp *entry = ir_new_comp(e, "repeat4");
  entry->is_entry = true;
  m->entry = entry;
  m->entry_layout = NULL; /* the signature changed */
  m->nio_alias = 0;
  m->nbuffer_donors = 0;
  HloInstr *results[4];
  HloInstr **args = xcalloc((size_t)orig->nparams + 1, sizeof *args);
  for (int k = 0; k < 4; k++) {
    for (int p = 0; p < orig->nparams; p++)
      args[p] = ir_add_param(e, entry,
                             shape_clone(m->arena, orig->params[p]->shape), "arg");
    results[k] = ir_inline(e, entry, orig, args);
  }
  free(args);
  entry->root = ir_tuple(e, entry, 4, results);
  ir_remove_unused_comps(e);
  ir_end(e, true);
}

/* m printed and parsed again (NULL with the error in d). */
static HloModule *reparse(const HloModule *m, SrcFile **src, Diag *d) {
  StrBuf b;
  sb_init(&b);
  hlo_print_module(&b, m, &print_options_default);
  *src = srcfile_from_string("reparsed", b.s, b.len);
  sb_free(&b);
  ParseOptions po = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  int n = hlo_parse(*src, &po, &mods, d);
  if (n < 1)
    return NULL;
  HloModule *r = mods[0];
  for (int k = 1; k < n; k++)
    hlo_module_free(mods[k]);
  free(mods);
  return r;
}

/* Best of runs: parse the file, optionally repeat, run the pipeline. */
static bool time_pipeline(const char *path, bool four, int runs, bool table,
                          double *best, int64_t *instrs) {
  *best = -1;
  for (int r = 0; r < runs; r++) {
    Diag d = {0};
    SrcFile *src = srcfile_read(path, &d);
    if (!src)
      return false;
    ParseOptions po = {.strip_glog_prefixes = true};
    HloModule **mods = NULL;
    int n = hlo_parse(src, &po, &mods, &d);
    if (n < 1 || !hlo_verify(mods[0], &d)) {
      diag_print(&d, stderr);
      diag_clear(&d);
      srcfile_free(src);
      return false;
    }
    if (four)
      repeat4(mods[0]);
    SrcFile *src2 = NULL;
    HloModule *m = reparse(mods[0], &src2, &d);
    for (int k = 0; k < n; k++)
      hlo_module_free(mods[k]);
    free(mods);
    srcfile_free(src);
    if (!m || !hlo_verify(m, &d)) {
      diag_print(&d, stderr);
      diag_clear(&d);
      if (m)
        hlo_module_free(m);
      srcfile_free(src2);
      return false;
    }
    /* Sizes are compared with every call site's computations counted:
     * flatten first (the pipeline's own flatten then finds nothing). */
    PassContext ctx = {.diag = &d};
    pass_flatten_call_graph(m, &ctx);
    IrEdit *e = ir_begin(m);
    ir_end(e, ir_remove_unused_comps(e));
    *instrs = count_instrs(m);
    PipelineOptions o = {.time_passes = table && r == runs - 1,
                         .time_out = stdout};
    double t0 = cpu_seconds();
    bool ok = pipeline_run(m, &o, &d);
    double t = cpu_seconds() - t0;
    if (!ok) {
      diag_print(&d, stderr);
      diag_clear(&d);
    }
    hlo_module_free(m);
    srcfile_free(src2);
    if (!ok)
      return false;
    if (*best < 0 || t < *best)
      *best = t;
  }
  return true;
}

int main(int argc, char **argv) {
  int nfiles = 3, runs = 3;
  bool table = false;
  int only = 0;
  const char *dir = getenv("XHLOC_CORPUS");
  if (!dir)
    dir = "../shared/hlo-corpus";
  for (int k = 1; k < argc; k++) {
    if (strcmp(argv[k], "-n") == 0 && k + 1 < argc)
      nfiles = atoi(argv[++k]);
    else if (strcmp(argv[k], "-r") == 0 && k + 1 < argc)
      runs = atoi(argv[++k]);
    else if (strcmp(argv[k], "-p") == 0 && k + 1 < argc)
      only = atoi(argv[++k]);
    else if (strcmp(argv[k], "-t") == 0)
      table = true;
    else if (argv[k][0] != '-')
      dir = argv[k];
    else {
      fprintf(stderr, "usage: pipeline [-n N] [-r RUNS] [-t] [-p 1|4] [DIR]\n");
      return 2;
    }
  }
  DIR *dp = opendir(dir);
  if (!dp) {
    fprintf(stderr, "pipeline: cannot open %s\n", dir);
    return 1;
  }
  Vec(File) files = {0};
  struct dirent *de;
  while ((de = readdir(dp))) {
    size_t l = strlen(de->d_name);
    if (l < 5 || strcmp(de->d_name + l - 4, ".hlo") != 0)
      continue;
    StrBuf p;
    sb_init(&p);
    sb_printf(&p, "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(p.s, &st) == 0)
      vec_push(&files, ((File){sb_detach(&p), st.st_size}));
    else
      sb_free(&p);
  }
  closedir(dp);
  qsort(files.data, (size_t)files.len, sizeof(File), by_size_desc);
  printf("default pipeline, best of %d runs, CPU time of one thread "
         "(target: under %d s per module)\n",
         runs, TARGET_SECONDS);
  bool ok = true;
  for (int k = 0; k < files.len && k < nfiles; k++) {
    const char *path = files.data[k].path;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    double t1 = 0, t4 = 0;
    int64_t n1 = 0, n4 = 0;
    if ((only != 4 && !time_pipeline(path, false, runs, table, &t1, &n1)) ||
        (only != 1 && !time_pipeline(path, true, runs, table, &t4, &n4))) {
      printf("%s: FAILED\n", base);
      ok = false;
      continue;
    }
    if (only) {
      printf("%s\n  %8lld instructions  %7.3f s\n", base,
             (long long)(only == 4 ? n4 : n1), only == 4 ? t4 : t1);
      continue;
    }
    double ratio = (t4 / (double)n4) / (t1 / (double)n1);
    printf("%s\n  %8lld instructions  %7.3f s  %s\n"
           "  %8lld instructions  %7.3f s  (the module 4 times)\n"
           "  time per instruction, 4x over 1x: %.2f (1.00 is linear)\n",
           base, (long long)n1, t1, t1 < TARGET_SECONDS ? "ok" : "OVER TARGET",
           (long long)n4, t4, ratio);
  }
  for (int k = 0; k < files.len; k++)
    free(files.data[k].path);
  vec_free(&files);
  return ok ? 0 : 1;
}
