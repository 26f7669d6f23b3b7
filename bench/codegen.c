/*
 * codegen.c - benchmark of compile time, parse to PTX, per module: the
 * end-to-end modules (testdata/e2e/ *.hlo) and the largest corpus modules
 * that compile to PTX.  "Compiled far faster than XLA" is a project goal;
 * this prints where the time goes.
 *
 *   codegen [-n N] [-s SECONDS] [-m KIB] [E2E_DIR [CORPUS_DIR]]
 *
 * For each module: wall time of parse+verify, the HLO pipeline, buffer
 * assignment + thunk emission (every kernel's LLVM IR), and optimization +
 * PTX emission, then the total and the instruction and kernel counts.
 * Corpus files of at most KIB KiB (default 400: the corpus's largest
 * modules take a minute each) are tried largest first until N (default 5)
 * have compiled or SECONDS (default 30) have passed; those that do not compile (an op no
 * emitter supports yet) are counted and skipped.  E2E_DIR defaults to
 * testdata/e2e, CORPUS_DIR to $XHLOC_CORPUS or ../shared/hlo-corpus.
 */
#include "../emitters/thunk_emitter.h"
#include "../lib/hlo/ir_edit.h"
#include "../passes/passes.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
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

static int by_name(const void *a, const void *b) {
  return strcmp(((const File *)a)->path, ((const File *)b)->path);
}

/* The *.hlo files of dir; returns the count (files in *out, heap). */
static int list_hlo(const char *dir, File **out) {
  *out = NULL;
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int n = 0, cap = 0;
  File *v = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 4, ".hlo") != 0)
      continue;
    StrBuf p;
    sb_init(&p);
    sb_printf(&p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(p.s, &st) != 0 || !S_ISREG(st.st_mode)) {
      sb_free(&p);
      continue;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      v = xrealloc(v, (size_t)cap * sizeof *v);
    }
    v[n].path = sb_detach(&p);
    v[n].size = st.st_size;
    n++;
  }
  closedir(d);
  *out = v;
  return n;
}

static int64_t count_instrs(const HloModule *m) {
  int64_t n = 0;
  for (int c = 0; c < m->ncomps; c++)
    n += m->comps[c]->ninstrs;
  return n;
}

typedef struct Times {
  double parse, passes, thunks, ptx;
  int64_t instrs;
  int kernels;
} Times;

static int count_kernels(const char *ptx) {
  int n = 0;
  for (const char *p = ptx; (p = strstr(p, ".entry ")); p += 7)
    n++;
  return n;
}

/* Compiles the one module of path to PTX; false (error in d) when it does
 * not parse, holds several modules, or does not compile. */
static bool compile(const char *path, Times *t, Diag *d) {
  memset(t, 0, sizeof *t);
  double t0 = now();
  SrcFile *src = srcfile_read(path, d);
  if (!src)
    return false;
  ParseOptions po = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  int n = hlo_parse(src, &po, &mods, d);
  bool ok = n == 1 && hlo_verify(mods[0], d);
  if (n > 1 && !d->has_error)
    diag_error(d, (Loc){0}, "%s holds %d modules", path, n);
  HloModule *m = ok ? mods[0] : NULL;
  char *original = NULL;
  if (ok) {
    StrBuf b;
    sb_init(&b);
    hlo_print_module(&b, m, &print_options_default);
    original = sb_detach(&b);
    t->instrs = count_instrs(m);
  }
  double t1 = now();
  t->parse = t1 - t0;
  if (ok) {
    PipelineOptions o = {0};
    ok = pipeline_run(m, &o, d) && hlo_verify(m, d);
    if (ok && m->is_scheduled) {
      const Pipeline *const *pipes;
      int np = pipeline_backend_required(&pipes);
      o.force = true;
      ok = pipeline_run_list(m, np, pipes, &o, d);
    }
  }
  double t2 = now();
  t->passes = t2 - t1;
  BufferAssignment *ba = NULL;
  Codegen *cg = NULL;
  Artifact *a = NULL;
  if (ok) {
    CodegenOptions co;
    codegen_options_default(&co);
    ok = (ba = buffer_assign(m, d)) != NULL && (cg = codegen_new(m->name, &co, d)) != NULL &&
         (a = thunks_emit(m, ba, cg, original, d)) != NULL;
  }
  double t3 = now();
  t->thunks = t3 - t2;
  if (ok) {
    StrBuf ptx;
    sb_init(&ptx);
    ok = codegen_ptx(cg, &ptx, d);
    if (ok)
      t->kernels = count_kernels(ptx.s);
    sb_free(&ptx);
  }
  t->ptx = now() - t3;
  if (a)
    artifact_free(a);
  codegen_free(cg);
  if (ba)
    buffer_assignment_free(ba);
  free(original);
  for (int k = 0; k < n; k++)
    hlo_module_free(mods[k]);
  free(mods);
  srcfile_free(src);
  return ok;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static void print_row(const char *path, const Times *t) {
  printf("%-48.48s %7lld %5d %8.1f %8.1f %8.1f %8.1f %9.1f\n", base_name(path),
         (long long)t->instrs, t->kernels, t->parse * 1e3, t->passes * 1e3,
         t->thunks * 1e3, t->ptx * 1e3,
         (t->parse + t->passes + t->thunks + t->ptx) * 1e3);
}

static void header(const char *title) {
  printf("\n%s\n%-48s %7s %5s %8s %8s %8s %8s %9s\n", title, "module", "instrs",
         "kerns", "parse", "passes", "thunks", "opt+ptx", "total ms");
}

int main(int argc, char **argv) {
  int want = 5;
  double budget = 30;
  long max_kib = 400;
  int ai = 1;
  for (; ai < argc && argv[ai][0] == '-'; ai++) {
    if (strcmp(argv[ai], "-n") == 0 && ai + 1 < argc) {
      want = atoi(argv[++ai]);
    } else if (strcmp(argv[ai], "-m") == 0 && ai + 1 < argc) {
      max_kib = atol(argv[++ai]);
    } else if (strcmp(argv[ai], "-s") == 0 && ai + 1 < argc) {
      budget = atof(argv[++ai]);
    } else {
      fprintf(stderr, "usage: codegen [-n N] [-s SECONDS] [-m KIB] [E2E_DIR [CORPUS_DIR]]\n");
      return 2;
    }
  }
  const char *e2e = ai < argc ? argv[ai++] : "testdata/e2e";
  const char *corpus = ai < argc ? argv[ai++] : getenv("XHLOC_CORPUS");
  if (!corpus || !*corpus)
    corpus = "../shared/hlo-corpus";
  int failures = 0;

  File *files;
  int n = list_hlo(e2e, &files);
  qsort(files, (size_t)n, sizeof *files, by_name);
  header("end-to-end modules (wall time, ms)");
  double sum = 0;
  int done = 0;
  for (int k = 0; k < n; k++) {
    Times t;
    Diag d = {0};
    if (compile(files[k].path, &t, &d)) {
      print_row(files[k].path, &t);
      sum += t.parse + t.passes + t.thunks + t.ptx;
      done++;
    } else {
      printf("%-48.48s does not compile: %s\n", base_name(files[k].path),
             d.msg ? d.msg : "?");
      failures++;
    }
    diag_clear(&d);
    free(files[k].path);
  }
  free(files);
  printf("%d of %d e2e modules compiled, %.1f ms in all\n", done, n, sum * 1e3);

  n = list_hlo(corpus, &files);
  qsort(files, (size_t)n, sizeof *files, by_size_desc);
  header("largest corpus modules that compile to PTX (wall time, ms)");
  double start = now();
  int got = 0, tried = 0, skipped = 0;
  for (int k = 0; k < n; k++) {
    if (got < want && now() - start < budget && files[k].size <= (off_t)max_kib * 1024) {
      Times t;
      Diag d = {0};
      tried++;
      if (compile(files[k].path, &t, &d)) {
        print_row(files[k].path, &t);
        got++;
      } else {
        skipped++;
      }
      diag_clear(&d);
    }
    free(files[k].path);
  }
  free(files);
  printf("%d compiled of %d tried (%d do not compile yet) in %.1f s\n", got, tried,
         skipped, now() - start);
  return failures ? 1 : 0;
}
