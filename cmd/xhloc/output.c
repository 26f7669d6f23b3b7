/*
 * output.c - writing the driver's output: stdout, or a file replaced
 * atomically (temporary file in the same directory, then rename), so that a
 * failed run leaves either the old file or nothing, never half a file.
 */
#include "xhloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += n;
    len -= (size_t)n;
  }
  return true;
}

static bool write_stdout(const char *data, size_t len, Diag *d) {
  Loc none = {0};
  if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
    return diag_error(d, none, "cannot write to stdout: %s", strerror(errno));
  return true;
}

bool write_output(const char *path, const char *data, size_t len, Diag *d) {
  Loc none = {0};
  if (!path || strcmp(path, "-") == 0)
    return write_stdout(data, len, d);

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
    return false;
  }
  /* mkstemp makes the file 0600; give it the mode a plain open would. */
  mode_t mask = umask(0);
  umask(mask);
  bool ok = fchmod(fd, 0666 & ~mask) == 0 && write_all(fd, data, len);
  int err = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && rename(tmp.s, path) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    unlink(tmp.s);
    diag_error(d, none, "cannot write '%s': %s", path, strerror(err));
  }
  sb_free(&tmp);
  return ok;
}
