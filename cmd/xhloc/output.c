/*
 * output.c - the driver's output.  Text is streamed as it is produced (a
 * large module's long form is never held in memory whole) into a temporary:
 * for -o FILE a temporary file in FILE's directory, renamed over FILE once
 * everything succeeded; for stdout an anonymous spool file, copied to stdout
 * at the end.  So a failed run leaves the old file (or nothing) and prints
 * nothing, never half an output.
 */
#include "xhloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool to_stdout(const char *path) { return !path || strcmp(path, "-") == 0; }

bool output_open(Output *o, const char *path, Diag *d) {
  Loc none = {0};
  *o = (Output){.path = path};
  if (to_stdout(path)) {
    o->f = tmpfile();
    if (!o->f)
      return diag_error(d, none, "cannot create a temporary file: %s",
                        strerror(errno));
    return true;
  }
  o->tmp_path = output_temp_beside(path, 0666, d);
  if (!o->tmp_path)
    return false;
  if (!(o->f = fopen(o->tmp_path, "w"))) {
    int err = errno;
    unlink(o->tmp_path);
    free(o->tmp_path);
    o->tmp_path = NULL;
    return diag_error(d, none, "cannot write '%s': %s", path, strerror(err));
  }
  return true;
}

char *output_temp_beside(const char *path, unsigned mode, Diag *d) {
  Loc none = {0};
  /* "dir/name" -> "dir/.name.XXXXXX": same directory, so rename is atomic. */
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
  StrBuf tmp;
  sb_init(&tmp);
  sb_putn(&tmp, path, dirlen);
  sb_printf(&tmp, ".%s.XXXXXX", path + dirlen);
  int fd = mkstemp(tmp.s);
  if (fd < 0) {
    diag_error(d, none, "cannot write '%s': %s", path, strerror(errno));
    sb_free(&tmp);
    return NULL;
  }
  /* mkstemp makes the file 0600; give it the mode a plain open would. */
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, (mode_t)mode & ~mask) != 0) {
    int err = errno;
    close(fd);
    unlink(tmp.s);
    sb_free(&tmp);
    diag_error(d, none, "cannot write '%s': %s", path, strerror(err));
    return NULL;
  }
  close(fd);
  return sb_detach(&tmp);
}

void output_abort(Output *o) {
  if (o->f)
    fclose(o->f);
  if (o->tmp_path) {
    unlink(o->tmp_path);
    free(o->tmp_path);
  }
  *o = (Output){0};
}

/* Copies the spool to stdout. */
static bool copy_to_stdout(FILE *spool) {
  if (fflush(spool) != 0 || fseek(spool, 0, SEEK_SET) != 0)
    return false;
  char buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, spool)) > 0)
    if (fwrite(buf, 1, n, stdout) != n)
      return false;
  return !ferror(spool) && fflush(stdout) == 0;
}

bool output_commit(Output *o, Diag *d) {
  Loc none = {0};
  bool ok;
  int err = 0;
  if (!o->tmp_path) {
    ok = copy_to_stdout(o->f);
    err = errno;
    fclose(o->f);
    o->f = NULL;
    if (!ok)
      diag_error(d, none, "cannot write to stdout: %s", strerror(err));
    return ok;
  }
  ok = !ferror(o->f);
  if (fclose(o->f) != 0)
    ok = false;
  err = errno;
  o->f = NULL;
  if (ok && rename(o->tmp_path, o->path) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    unlink(o->tmp_path);
    diag_error(d, none, "cannot write '%s': %s", o->path,
               err ? strerror(err) : "write error");
  }
  free(o->tmp_path);
  o->tmp_path = NULL;
  return ok;
}
