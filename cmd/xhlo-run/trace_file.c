/*
 * trace_file.c - xhlo-run --trace=FILE.json: the file is written whole or
 * not at all.  trace_file_open makes a temporary beside FILE before
 * anything runs (so an unwritable place is reported at once), and
 * trace_file_commit writes the trace into it (lib/runtime/trace.c) and
 * renames it over FILE; on any failure the temporary is removed and FILE
 * is left as it was.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/runtime/profile.h"
#include "xhlo_run.h"

struct TraceFile {
  char *path, *tmp;
  FILE *f;
};

static void trace_file_drop(TraceFile *t) {
  if (t->f) fclose(t->f);
  if (t->tmp) unlink(t->tmp);
  free(t->tmp);
  free(t->path);
  free(t);
}

TraceFile *trace_file_open(const char *path) {
  TraceFile *t = xcalloc(1, sizeof *t);
  t->path = xstrdup(path);
  /* "dir/name" -> "dir/.name.XXXXXX": the same directory, so the rename is
   * atomic */
  const char *slash = strrchr(path, '/');
  size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
  StrBuf b;
  sb_init(&b);
  sb_putn(&b, path, dl);
  sb_printf(&b, ".%s.XXXXXX", path + dl);
  t->tmp = sb_detach(&b);
  int fd = mkstemp(t->tmp);
  if (fd < 0) {
    fprintf(stderr, "xhlo-run: --trace: cannot write '%s': %s\n", path, strerror(errno));
    free(t->tmp);
    t->tmp = NULL;
    trace_file_drop(t);
    return NULL;
  }
  /* mkstemp makes the file 0600; give it the mode a plain open would */
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0 || !(t->f = fdopen(fd, "w"))) {
    fprintf(stderr, "xhlo-run: --trace: cannot write '%s': %s\n", path, strerror(errno));
    if (!t->f) close(fd);
    trace_file_drop(t);
    return NULL;
  }
  return t;
}

void trace_file_abort(TraceFile *t) {
  if (t) trace_file_drop(t);
}

bool trace_file_commit(TraceFile *t, const Executor *e, const char *process,
                       const char *track) {
  const ThunkProfile *p;
  int n = executor_profile(e, &p);
  const TraceEvent *ev;
  int64_t dropped = 0;
  int64_t nev = executor_trace(e, &ev, &dropped);
  bool ok = profile_write_trace(t->f, p, n, ev, nev, dropped, process, track);
  int err = errno;
  if (fflush(t->f) != 0 || ferror(t->f)) ok = false, err = errno;
  if (fclose(t->f) != 0 && ok) ok = false, err = errno;
  t->f = NULL;
  if (ok && rename(t->tmp, t->path) != 0) ok = false, err = errno;
  if (!ok)
    fprintf(stderr, "xhlo-run: --trace: cannot write '%s': %s\n", t->path,
            err ? strerror(err) : "write error");
  else if (dropped)
    fprintf(stderr, "xhlo-run: --trace: '%s' holds the first %lld thunk executions; %lld "
            "more were not kept (run fewer --iterations)\n", t->path, (long long)nev,
            (long long)dropped);
  if (ok) {
    free(t->tmp);
    t->tmp = NULL;
  }
  trace_file_drop(t);
  return ok;
}
