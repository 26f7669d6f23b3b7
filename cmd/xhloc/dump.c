/*
 * dump.c - the back end's --dump-to files (XLA's names, REFERENCE.md 1.7):
 * module_NNNN.<name>.<suffix> for the buffer assignment, the thunk sequence,
 * the LLVM IR before and after optimization and the PTX.  The HLO dumps are
 * written by passes/pass_manager.c.
 */
#include "xhloc.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* As pass_manager.c names files: anything but [A-Za-z0-9._-] becomes '_'. */
static void put_sanitized(StrBuf *b, const char *s) {
  for (; *s; s++) {
    char c = *s;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    sb_putc(b, ok ? c : '_');
  }
}

/* mkdir -p dir */
static bool make_dir(const char *dir, Diag *d) {
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, dir);
  bool ok = true;
  for (size_t k = 1; ok && k <= b.len; k++) {
    if (b.s[k] != '/' && b.s[k] != '\0')
      continue;
    char save = b.s[k];
    b.s[k] = '\0';
    if (mkdir(b.s, 0777) != 0 && errno != EEXIST)
      ok = diag_error(d, (Loc){0}, "cannot create directory '%s': %s", b.s,
                      strerror(errno));
    b.s[k] = save;
  }
  sb_free(&b);
  return ok;
}

bool dump_text(const char *dir, int module_id, const char *module_name,
               const char *suffix, const char *text, size_t len, Diag *d) {
  if (!make_dir(dir, d))
    return false;
  StrBuf path;
  sb_init(&path);
  sb_printf(&path, "%s/module_%04d.", dir, module_id);
  if (module_name && *module_name &&
      strlen(module_name) + strlen(suffix) < 200) {
    put_sanitized(&path, module_name);
    sb_putc(&path, '.');
  }
  put_sanitized(&path, suffix);
  FILE *f = fopen(path.s, "wb");
  bool ok = f && fwrite(text, 1, len, f) == len;
  if (f && fclose(f) != 0)
    ok = false;
  if (!ok)
    diag_error(d, (Loc){0}, "cannot write '%s': %s", path.s, strerror(errno));
  sb_free(&path);
  return ok;
}
