/*
 * corpus_sweep.c - parse, verify and round-trip every file of an HLO corpus.
 *
 *   corpus_sweep [--rejects FILE] [--print-rejects] DIR
 *
 * For each DIR/ *.hlo, in name order: parse all its modules, verify them,
 * print them (text1), parse text1, verify, print again (text2), and require
 * text1 == text2.  A file that fails to parse or verify is a "reject"; the
 * expected rejects are listed in FILE, one per line:
 *
 *   <file name> TAB <first line of the error report>
 *
 * (lines starting with '#' and blank lines are ignored).  The sweep fails if
 * a file is rejected but not listed, rejected for another reason than the
 * listed one, listed but accepted, or listed but missing; and whenever a
 * round trip fails, since printed text must always parse back the same.
 * --print-rejects prints the rejects found in the rejects file's format.
 *
 * Everything runs in this one process (no subprocess per file), and frees
 * what it allocates, so a LeakSanitizer build checks the front end for leaks.
 */
#include "../lib/hlo/hlo.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Reject {
  char *file, *reason;
  bool seen;
} Reject;

typedef struct Stats {
  int files, modules, roundtrip_ok, expected_rejects, failures;
  long long instrs;
  double bytes;
} Stats;

static Vec(Reject) rejects;
static bool opt_print_rejects;

static char *read_whole_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  StrBuf b;
  sb_init(&b);
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    sb_putn(&b, buf, n);
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    sb_free(&b);
    return NULL;
  }
  *len = b.len;
  return sb_detach(&b);
}

static void load_rejects(const char *path) {
  size_t len;
  char *text = read_whole_file(path, &len);
  if (!text) {
    fprintf(stderr, "corpus_sweep: cannot read '%s': %s\n", path,
            strerror(errno));
    exit(2);
  }
  int lineno = 0;
  for (char *line = text, *next; *line; line = next) {
    char *nl = strchr(line, '\n');
    next = nl ? nl + 1 : line + strlen(line);
    if (nl)
      *nl = 0;
    lineno++;
    if (!*line || *line == '#')
      continue;
    char *tab = strchr(line, '\t');
    if (!tab || !tab[1]) {
      fprintf(stderr, "%s:%d: want '<file>\\t<reason>'\n", path, lineno);
      exit(2);
    }
    Reject r = {xstrndup(line, (size_t)(tab - line)), xstrdup(tab + 1), false};
    vec_push(&rejects, r);
  }
  free(text);
}

static Reject *find_reject(const char *file) {
  for (int i = 0; i < rejects.len; i++)
    if (strcmp(rejects.data[i].file, file) == 0)
      return &rejects.data[i];
  return NULL;
}

/* The first line of what diag_print writes for d. */
static char *diag_first_line(const Diag *d) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f)
    die("open_memstream failed");
  diag_print(d, f);
  fclose(f);
  char *nl = strchr(text, '\n');
  if (nl)
    *nl = 0;
  return text;
}

/* Parses src, verifies and prints every module into out (modules separated
 * as xhloc separates them).  Returns the module count, or -1 with d set. */
static int parse_verify_print(const SrcFile *src, StrBuf *out, long long *ninstrs,
                              Diag *d) {
  ParseOptions popts = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  int n = hlo_parse(src, &popts, &mods, d);
  bool ok = n > 0;
  for (int i = 0; ok && i < n; i++)
    ok = hlo_verify(mods[i], d);
  for (int i = 0; ok && i < n; i++) {
    if (i > 0)
      sb_puts(out, "\n// -----\n\n");
    hlo_print_module(out, mods[i], &print_options_default);
    for (int c = 0; c < mods[i]->ncomps; c++)
      *ninstrs += mods[i]->comps[c]->ninstrs;
  }
  for (int i = 0; i < n; i++)
    hlo_module_free(mods[i]);
  free(mods);
  return ok ? n : -1;
}

static void fail(Stats *st, const char *file, const char *fmt, ...)
    PRINTF_LIKE(3, 4);
static void fail(Stats *st, const char *file, const char *fmt, ...) {
  va_list ap;
  printf("FAIL %s: ", file);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
  st->failures++;
}

/* Shows where two printed texts first differ. */
static void show_difference(const char *a, const char *b) {
  int line = 1;
  const char *la = a, *lb = b;
  while (*a && *a == *b) {
    if (*a == '\n')
      line++, la = a + 1, lb = b + 1;
    a++, b++;
  }
  const char *ea = strchr(la, '\n'), *eb = strchr(lb, '\n');
  int na = ea ? (int)(ea - la) : (int)strlen(la);
  int nb = eb ? (int)(eb - lb) : (int)strlen(lb);
  printf("  first difference at printed line %d:\n  1st: %.*s\n  2nd: %.*s\n",
         line, na > 300 ? 300 : na, la, nb > 300 ? 300 : nb, lb);
}

static void sweep_file(const char *dir, const char *name, Stats *st) {
  char *path = xmalloc(strlen(dir) + strlen(name) + 2);
  sprintf(path, "%s/%s", dir, name);
  size_t len;
  char *text = read_whole_file(path, &len);
  free(path);
  st->files++;
  if (!text) {
    fail(st, name, "cannot read: %s", strerror(errno));
    return;
  }
  st->bytes += (double)len;
  /* Named by the bare file name so reports do not depend on DIR. */
  SrcFile *src = srcfile_from_string(name, text, len);
  free(text);

  Diag d = {0};
  StrBuf text1, text2;
  sb_init(&text1);
  sb_init(&text2);
  long long ninstrs = 0;
  int n = parse_verify_print(src, &text1, &ninstrs, &d);
  Reject *r = find_reject(name);
  if (n < 0) {
    char *reason = diag_first_line(&d);
    if (opt_print_rejects)
      printf("%s\t%s\n", name, reason);
    if (!r)
      fail(st, name, "rejected, and not listed in the rejects file:\n  %s",
           reason);
    else if (strcmp(r->reason, reason) != 0)
      fail(st, name, "rejected for another reason than the listed one:\n"
                     "  listed: %s\n  actual: %s", r->reason, reason);
    else
      st->expected_rejects++;
    if (r)
      r->seen = true;
    free(reason);
    goto done;
  }
  if (r) {
    r->seen = true;
    fail(st, name, "listed as rejected, but parses and verifies");
  }
  st->modules += n;
  st->instrs += ninstrs;

  /* Round trip: the printed text parses, verifies and prints the same. */
  char *name2 = xmalloc(strlen(name) + 16);
  sprintf(name2, "%s (printed)", name);
  SrcFile *src2 = srcfile_from_string(name2, text1.s ? text1.s : "", text1.len);
  free(name2);
  long long ninstrs2 = 0;
  diag_clear(&d);
  int n2 = parse_verify_print(src2, &text2, &ninstrs2, &d);
  if (n2 < 0) {
    char *reason = diag_first_line(&d);
    fail(st, name, "printed text does not parse and verify:\n  %s", reason);
    free(reason);
  } else if (n2 != n || text1.len != text2.len ||
             memcmp(text1.s, text2.s, text1.len) != 0) {
    fail(st, name, "printing the printed text gives different text "
                   "(%d vs %d modules)", n, n2);
    show_difference(text1.s ? text1.s : "", text2.s ? text2.s : "");
  } else {
    st->roundtrip_ok++;
  }
  srcfile_free(src2);
done:
  diag_clear(&d);
  sb_free(&text1);
  sb_free(&text2);
  srcfile_free(src);
}

static int has_hlo_suffix(const struct dirent *e) {
  size_t n = strlen(e->d_name);
  return n > 4 && strcmp(e->d_name + n - 4, ".hlo") == 0;
}

int main(int argc, char **argv) {
  const char *rejects_path = NULL, *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--rejects") == 0 && i + 1 < argc)
      rejects_path = argv[++i];
    else if (strcmp(argv[i], "--print-rejects") == 0)
      opt_print_rejects = true;
    else if (argv[i][0] != '-' && !dir)
      dir = argv[i];
    else {
      fprintf(stderr,
              "usage: corpus_sweep [--rejects FILE] [--print-rejects] DIR\n");
      return 2;
    }
  }
  if (!dir) {
    fprintf(stderr,
            "usage: corpus_sweep [--rejects FILE] [--print-rejects] DIR\n");
    return 2;
  }
  if (rejects_path)
    load_rejects(rejects_path);

  struct dirent **ents;
  int nents = scandir(dir, &ents, has_hlo_suffix, alphasort);
  if (nents < 0) {
    fprintf(stderr, "corpus_sweep: cannot read directory '%s': %s\n", dir,
            strerror(errno));
    return 2;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  Stats st = {0};
  for (int i = 0; i < nents; i++) {
    sweep_file(dir, ents[i]->d_name, &st);
    free(ents[i]);
  }
  free(ents);
  clock_gettime(CLOCK_MONOTONIC, &t1);

  for (int i = 0; i < rejects.len; i++) {
    if (!rejects.data[i].seen)
      fail(&st, rejects.data[i].file, "listed in %s but not in %s",
           rejects_path, dir);
    free(rejects.data[i].file);
    free(rejects.data[i].reason);
  }
  vec_free(&rejects);

  double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  printf("corpus: %d files, %d modules, %lld instructions, %d round-trip OK, "
         "%d expected rejects (%.1f MB in %.1f s)\n",
         st.files, st.modules, st.instrs, st.roundtrip_ok, st.expected_rejects,
         st.bytes / 1e6, secs);
  printf("corpus-sweep: %d passed, %d failed\n",
         st.roundtrip_ok + st.expected_rejects, st.failures);
  return st.failures ? 1 : 0;
}
