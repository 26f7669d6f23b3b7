/*
 * cuda_libs.c - finding and opening the vendor libraries of the CUDA
 * platform (cuBLASLt, cuDNN) with dlopen, and binding their entry points.
 *
 * A GPU machine may have them in the CUDA toolkit, in a system library
 * folder, or only inside the Python wheels (nvidia-cublas-cu12,
 * nvidia-cudnn-cu12, ...) that JAX and PyTorch install; the search order is
 * in cuda_libs.h.  A library is never unloaded: its threads may outlive us.
 */
#include <dlfcn.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_libs.h"

/* The site-packages folders of the Python installations, as glob patterns;
 * $VAR at the start stands for that environment variable (skipped when it
 * is unset or empty). */
static const char *const site_dirs[] = {
  "/usr/local/lib/python3*/dist-packages",
  "/usr/local/lib/python3*/site-packages",
  "/usr/lib/python3/dist-packages",
  "$HOME/.local/lib/python3*/site-packages",
  "$VIRTUAL_ENV/lib/python3*/site-packages",
};

/* Remembers the first file that was there but did not load, for the
 * message. */
typedef struct Search {
  const CudaLibSpec *spec;
  StrVec tried_dirs;              /* no folder is tried twice */
  char *failure;                  /* "path: loader message" */
} Search;

static bool tried_before(Search *s, const char *dir) {
  for (int k = 0; k < s->tried_dirs.len; k++)
    if (strcmp(s->tried_dirs.data[k], dir) == 0) return true;
  vec_push(&s->tried_dirs, xstrdup(dir));
  return false;
}

/* Tries every name in one directory. */
static void *open_in_dir(Search *s, const char *dir, char **path) {
  if (!*dir || tried_before(s, dir)) return NULL;
  for (const char *const *n = s->spec->names; *n; n++) {
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "%s/%s", dir, *n);
    if (access(b.s, F_OK) != 0) {
      sb_free(&b);
      continue;
    }
    dlerror();
    void *h = dlopen(b.s, RTLD_NOW | RTLD_LOCAL);
    if (h) {
      *path = sb_detach(&b);
      return h;
    }
    if (!s->failure) {
      const char *why = dlerror();
      StrBuf f;
      sb_init(&f);
      sb_printf(&f, "%s: %s", b.s, why ? why : "dlopen failed");
      s->failure = sb_detach(&f);
    }
    sb_free(&b);
  }
  return NULL;
}

/* The dynamic loader's own search (LD_LIBRARY_PATH, the ld.so cache). */
static void *open_default(Search *s, char **path) {
  for (const char *const *n = s->spec->names; *n; n++) {
    dlerror();
    void *h = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    if (h) {
      *path = xstrdup(*n);
      return h;
    }
    const char *why = dlerror();
    /* a file that is there but cannot be loaded is worth reporting */
    if (why && !strstr(why, "No such file") && !s->failure) s->failure = xstrdup(why);
  }
  return NULL;
}

/* Expands a site_dirs pattern's leading $VAR; NULL when VAR is unset. */
static char *expand_var(const char *pat) {
  if (pat[0] != '$') return xstrdup(pat);
  const char *slash = strchr(pat, '/');
  char *var = xstrndup(pat + 1, (size_t)(slash - pat - 1));
  const char *val = getenv(var);
  free(var);
  if (!val || !*val) return NULL;
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "%s%s", val, slash);
  return sb_detach(&b);
}

static void *open_in_wheels(Search *s, char **path) {
  void *h = NULL;
  for (size_t k = 0; k < ARRAY_LEN(site_dirs) && !h; k++) {
    char *site = expand_var(site_dirs[k]);
    if (!site) continue;
    for (const char *const *w = s->spec->wheel_dirs; *w && !h; w++) {
      StrBuf pat;
      sb_init(&pat);
      sb_printf(&pat, "%s/%s", site, *w);
      glob_t g;
      if (glob(pat.s, GLOB_ONLYDIR, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc && !h; i++) h = open_in_dir(s, g.gl_pathv[i], path);
        globfree(&g);
      }
      sb_free(&pat);
    }
    free(site);
  }
  return h;
}

static void search_message(Search *s, const char *lib_path, const char *cuda_home, Diag *d) {
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "cannot load %s: no ", s->spec->what);
  for (const char *const *n = s->spec->names; *n; n++)
    sb_printf(&b, "%s%s", n == s->spec->names ? "" : n[1] ? ", " : " or ", *n);
  sb_printf(&b, " in --lib-path (%s), the dynamic loader's path (LD_LIBRARY_PATH, ld.so.cache), "
                "%s/lib64, %s/lib, or the Python wheels' folders (",
            lib_path && *lib_path ? lib_path : "not given", cuda_home, cuda_home);
  for (const char *const *w = s->spec->wheel_dirs; *w; w++)
    sb_printf(&b, "%s%s", w == s->spec->wheel_dirs ? "" : ", ", *w);
  sb_puts(&b, " under ");
  for (size_t k = 0; k < ARRAY_LEN(site_dirs); k++)
    sb_printf(&b, "%s%s", k ? ", " : "", site_dirs[k]);
  sb_puts(&b, ")");
  if (s->failure) sb_printf(&b, "; found but could not load %s", s->failure);
  sb_puts(&b, "; give the folder that holds it with --lib-path=DIRS");
  diag_error(d, (Loc){0}, "%s", b.s);
  sb_free(&b);
}

bool cuda_lib_open(const CudaLibSpec *spec, const char *lib_path, void **handle,
                   char **path, Diag *d) {
  Search s = {.spec = spec};
  void *h = NULL;
  *path = NULL;
  if (lib_path) {
    char *dirs = xstrdup(lib_path), *save = NULL;
    for (char *dir = strtok_r(dirs, ":", &save); dir && !h; dir = strtok_r(NULL, ":", &save))
      h = open_in_dir(&s, dir, path);
    free(dirs);
  }
  if (!h) h = open_default(&s, path);
  const char *home = getenv("CUDA_HOME");
  char *cuda_home = xstrdup(home && *home ? home : "/usr/local/cuda");
  for (const char *sub = "lib64"; !h && sub; sub = strcmp(sub, "lib64") == 0 ? "lib" : NULL) {
    StrBuf dir;
    sb_init(&dir);
    sb_printf(&dir, "%s/%s", cuda_home, sub);
    h = open_in_dir(&s, dir.s, path);
    sb_free(&dir);
  }
  if (!h) h = open_in_wheels(&s, path);
  if (!h) search_message(&s, lib_path, cuda_home, d);
  free(cuda_home);
  for (int k = 0; k < s.tried_dirs.len; k++) free(s.tried_dirs.data[k]);
  vec_free(&s.tried_dirs);
  free(s.failure);
  *handle = h;
  return h != NULL;
}

bool cuda_lib_bind(void *handle, const char *path, const CudaLibSym *syms, size_t nsyms,
                   void *api, Diag *d) {
  for (size_t k = 0; k < nsyms; k++) {
    void *sym = dlsym(handle, syms[k].name);
    if (!sym && !syms[k].optional)
      return diag_error(d, (Loc){0}, "%s has no entry point %s; the library is too old or not "
                        "the one expected", path, syms[k].name);
    memcpy((char *)api + syms[k].off, &sym, sizeof sym);
  }
  return true;
}

unsigned dev_ptr_alignment(DevPtr p, unsigned cap) {
  unsigned a = 1;
  while (a < cap && !(p & a)) a <<= 1;
  return a;
}
