/*
 * parse.c - front-end benchmark: parse, verify and print the largest HLO
 * files of the corpus.
 *
 *   parse [-n N] [-r RUNS] [DIR]
 *
 * Takes the N largest DIR/ *.hlo files (default 5; DIR defaults to
 * $XHLOC_CORPUS or ../shared/hlo-corpus) and reports, per file, the best of
 * RUNS (default 5) times for parse, verify and print separately and for the
 * three together, as MB/s of input text, measured in CPU time of this one
 * thread.  Memory: the modules' arena bytes plus the file's text, and the
 * peak resident size the work added (ru_maxrss of a child process forked per
 * file, minus its size before reading the file, so the file's text counts)
 * after parse+verify, after printing as xhloc does (streamed to a file), and
 * after printing the whole text into one buffer, each as a multiple of the
 * file size.
 *
 * Targets printed beside the figures: parse+verify+print at least 50 MB/s on
 * one core, and peak memory (parse + verify + streamed print, the file's text
 * included) under 10x the file size.
 */
#include "../lib/hlo/hlo.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { TARGET_MBPS = 50, TARGET_MEM_RATIO = 10 };

typedef struct Entry {
  char *path;
  long long size;
} Entry;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long maxrss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static int by_size_desc(const void *a, const void *b) {
  const Entry *x = a, *y = b;
  if (x->size != y->size)
    return x->size < y->size ? 1 : -1;
  return strcmp(x->path, y->path);
}

/* Parses and verifies src; returns the module count, or -1 (error printed). */
static int parse_and_verify(const SrcFile *src, HloModule ***mods, bool verify) {
  Diag d = {0};
  ParseOptions popts = {.strip_glog_prefixes = true};
  int n = hlo_parse(src, &popts, mods, &d);
  for (int i = 0; verify && i < n; i++)
    if (!hlo_verify((*mods)[i], &d)) {
      for (int j = 0; j < n; j++)
        hlo_module_free((*mods)[j]);
      free(*mods);
      *mods = NULL;
      n = -1;
      break;
    }
  if (d.has_error)
    diag_print(&d, stderr);
  diag_clear(&d);
  return n;
}

static void free_modules(HloModule **mods, int n) {
  for (int i = 0; i < n; i++)
    hlo_module_free(mods[i]);
  free(mods);
}

static void print_modules(StrBuf *b, HloModule **mods, int n) {
  for (int i = 0; i < n; i++) {
    if (i)
      sb_puts(b, "\n// -----\n\n");
    hlo_print_module(b, mods[i], &print_options_default);
  }
}

/* Runs in a child process: measures one file and prints its report. */
static int bench_file(const char *path, long long size, int runs) {
  long rss0 = maxrss_kb();
  Diag d = {0};
  SrcFile *src = srcfile_read(path, &d);
  if (!src) {
    diag_print(&d, stderr);
    return 1;
  }
  /* Memory first, on a fresh heap: the peak of parse+verify, then with the
   * printed text as well. */
  HloModule **mods = NULL;
  int nmods = parse_and_verify(src, &mods, true);
  if (nmods < 0)
    return 1;
  long rss_parsed = maxrss_kb() - rss0;
  size_t arena = 0;
  long long ninstrs = 0;
  for (int i = 0; i < nmods; i++) {
    arena += arena_bytes_used(mods[i]->arena);
    for (int c = 0; c < mods[i]->ncomps; c++)
      ninstrs += mods[i]->comps[c]->ninstrs;
  }
  FILE *devnull = fopen("/dev/null", "w");
  if (!devnull) {
    perror("/dev/null");
    return 1;
  }
  for (int i = 0; i < nmods; i++)
    hlo_write_module(devnull, mods[i], &print_options_default);
  fclose(devnull);
  long rss_streamed = maxrss_kb() - rss0;
  StrBuf b;
  sb_init(&b);
  print_modules(&b, mods, nmods);
  size_t printed = b.len;
  long rss_printed = maxrss_kb() - rss0;
  sb_free(&b);
  free_modules(mods, nmods);

  double best_parse = 1e30, best_verify = 1e30, best_print = 1e30;
  double best_all = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    int n = parse_and_verify(src, &mods, false);
    double t1 = now();
    if (n < 0)
      return 1;
    Diag vd = {0};
    for (int i = 0; i < n; i++)
      if (!hlo_verify(mods[i], &vd)) {
        diag_print(&vd, stderr);
        return 1;
      }
    double t2 = now();
    sb_init(&b);
    print_modules(&b, mods, n);
    double t3 = now();
    sb_free(&b);
    free_modules(mods, n);
    best_parse = t1 - t0 < best_parse ? t1 - t0 : best_parse;
    best_verify = t2 - t1 < best_verify ? t2 - t1 : best_verify;
    best_print = t3 - t2 < best_print ? t3 - t2 : best_print;

    /* The three together, as xhloc --stage=parsed runs them. */
    t0 = now();
    n = parse_and_verify(src, &mods, true);
    if (n < 0)
      return 1;
    sb_init(&b);
    print_modules(&b, mods, n);
    free_modules(mods, n);
    sb_free(&b);
    t1 = now();
    best_all = t1 - t0 < best_all ? t1 - t0 : best_all;
  }
  srcfile_free(src);

  double mb = (double)size / 1e6, fsize = (double)size;
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  double all_mbps = mb / best_all;
  double arena_ratio = ((double)arena + fsize) / fsize;
  double mem_ratio = (double)rss_streamed * 1024.0 / fsize;
  printf("%s\n", base);
  printf("  %.2f MB, %d module(s), %lld instructions, printed %.2f MB\n", mb,
         nmods, ninstrs, (double)printed / 1e6);
  printf("  parse %7.1f MB/s (%6.1f ms)   verify %7.1f MB/s (%6.1f ms)   "
         "print %7.1f MB/s (%6.1f ms)\n",
         mb / best_parse, best_parse * 1e3, mb / best_verify,
         best_verify * 1e3, mb / best_print, best_print * 1e3);
  printf("  parse+verify+print %7.1f MB/s (%6.1f ms)   target >= %d MB/s: %s\n",
         all_mbps, best_all * 1e3, TARGET_MBPS,
         all_mbps >= TARGET_MBPS ? "met" : "NOT MET");
  printf("  peak memory: parse+verify+streamed print %.1f MB = %.1fx file   "
         "target < %dx: %s\n",
         (double)rss_streamed / 1024.0, mem_ratio, TARGET_MEM_RATIO,
         mem_ratio < TARGET_MEM_RATIO ? "met" : "NOT MET");
  printf("  (arena %.1f MB + file = %.1fx; peak RSS after parse+verify %.1fx, "
         "with the whole text in one buffer %.1fx)\n",
         (double)arena / 1e6, arena_ratio, (double)rss_parsed * 1024.0 / fsize,
         (double)rss_printed * 1024.0 / fsize);
  fflush(stdout);
  return 0;
}

static int list_files(const char *dir, Entry **out) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  Vec(Entry) v = {0};
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n <= 4 || strcmp(e->d_name + n - 4, ".hlo") != 0)
      continue;
    char *path = xmalloc(strlen(dir) + n + 2);
    sprintf(path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
      free(path);
      continue;
    }
    Entry en = {path, (long long)st.st_size};
    vec_push(&v, en);
  }
  closedir(d);
  if (v.len)
    qsort(v.data, (size_t)v.len, sizeof(Entry), by_size_desc);
  *out = v.data;
  return v.len;
}

int main(int argc, char **argv) {
  int nfiles = 5, runs = 5, c;
  while ((c = getopt(argc, argv, "n:r:h")) != -1) {
    switch (c) {
    case 'n': nfiles = atoi(optarg); break;
    case 'r': runs = atoi(optarg); break;
    default:
      fprintf(stderr, "usage: parse [-n N] [-r RUNS] [DIR]\n");
      return c == 'h' ? 0 : 2;
    }
  }
  if (nfiles < 1 || runs < 1) {
    fprintf(stderr, "parse: -n and -r must be positive\n");
    return 2;
  }
  const char *dir = optind < argc ? argv[optind] : getenv("XHLOC_CORPUS");
  if (!dir)
    dir = "../shared/hlo-corpus";
  Entry *files;
  int n = list_files(dir, &files);
  if (n <= 0) {
    fprintf(stderr, "parse: no .hlo files in '%s': %s\n", dir,
            n < 0 ? strerror(errno) : "empty");
    return 1;
  }
  if (nfiles > n)
    nfiles = n;
  printf("front-end benchmark: the %d largest files of %s, best of %d runs, "
         "CPU time of one thread\n\n",
         nfiles, dir, runs);
  fflush(stdout);
  int status = 0;
  for (int i = 0; i < nfiles; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("parse: fork");
      return 1;
    }
    if (pid == 0)
      _exit(bench_file(files[i].path, files[i].size, runs));
    int ws;
    if (waitpid(pid, &ws, 0) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      printf("%s: FAILED\n", files[i].path);
      status = 1;
    }
  }
  for (int i = 0; i < n; i++)
    free(files[i].path);
  free(files);
  return status;
}
