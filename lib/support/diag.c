/*
 * diag.c - source files, locations and the error/warning reports.
 *
 * Errors are recorded, not printed: the library returns them to its caller,
 * which prints them with diag_print (file:line:col, the line, a caret).
 */
#include "support.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

SrcFile *srcfile_read(const char *path, Diag *d) {
  Loc none = {0};
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) {
    diag_error(d, none, "cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  StrBuf b;
  sb_init(&b);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    sb_putn(&b, buf, n);
  bool bad = ferror(f);
  int err = errno;
  if (f != stdin)
    fclose(f);
  if (bad) {
    sb_free(&b);
    diag_error(d, none, "cannot read '%s': %s", path, strerror(err));
    return NULL;
  }
  SrcFile *sf = xcalloc(1, sizeof *sf);
  sf->name = xstrdup(strcmp(path, "-") == 0 ? "<stdin>" : path);
  sf->len = b.len;
  sf->text = b.s ? b.s : xstrdup("");
  return sf;
}

SrcFile *srcfile_from_string(const char *name, const char *text, size_t len) {
  SrcFile *sf = xcalloc(1, sizeof *sf);
  sf->name = xstrdup(name);
  sf->text = xstrndup(text, len);
  sf->len = len;
  return sf;
}

void srcfile_free(SrcFile *f) {
  if (!f)
    return;
  free((char *)f->name);
  free((char *)f->text);
  free(f);
}

Loc srcfile_loc(const SrcFile *f, size_t off) {
  Loc l = {f, 1, 1};
  if (off > f->len)
    off = f->len;
  for (size_t i = 0; i < off; i++) {
    if (f->text[i] == '\n')
      l.line++, l.col = 1;
    else
      l.col++;
  }
  return l;
}

bool diag_verror(Diag *d, Loc loc, const char *fmt, va_list ap) {
  if (d->has_error)
    return false;
  StrBuf b;
  sb_init(&b);
  sb_vprintf(&b, fmt, ap);
  d->has_error = true;
  d->loc = loc;
  d->msg = sb_detach(&b);
  return false;
}

bool diag_error(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, loc, fmt, ap);
  va_end(ap);
  return false;
}

void diag_warn(Diag *d, Loc loc, const char *fmt, ...) {
  d->nwarnings++;
  if (!d->warn_out)
    return;
  StrBuf b;
  sb_init(&b);
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  diag_print_at(d->warn_out, loc, "warning", b.s);
  sb_free(&b);
}

void diag_print_at(FILE *out, Loc loc, const char *kind, const char *msg) {
  if (!loc.file) {
    fprintf(out, "%s: %s\n", kind, msg);
    return;
  }
  fprintf(out, "%s:%d:%d: %s: %s\n", loc.file->name, loc.line, loc.col, kind,
          msg);
  /* Find the line's start and end. */
  const char *t = loc.file->text, *end = t + loc.file->len;
  const char *s = t;
  for (int line = 1; line < loc.line && s < end; s++)
    if (*s == '\n')
      line++;
  const char *e = s;
  while (e < end && *e != '\n')
    e++;
  size_t n = (size_t)(e - s);
  if (n > 400) {
    /* Very long lines (HLO headers): show a window around the column. */
    size_t c = (size_t)(loc.col - 1);
    size_t from = c > 200 ? c - 200 : 0;
    if (from > n)
      from = n;
    size_t len = n - from < 400 ? n - from : 400;
    fprintf(out, "%s%.*s%s\n", from ? "..." : "", (int)len, s + from,
            from + len < n ? "..." : "");
    fprintf(out, "%*s^\n", (int)(c - from + (from ? 3 : 0)), "");
    return;
  }
  fprintf(out, "%.*s\n", (int)n, s);
  /* Caret under the column, keeping tabs so it lines up. */
  for (int i = 1; i < loc.col && (size_t)(i - 1) < n; i++)
    fputc(s[i - 1] == '\t' ? '\t' : ' ', out);
  fputs("^\n", out);
}

void diag_print(const Diag *d, FILE *out) {
  if (d->has_error)
    diag_print_at(out, d->loc, "error", d->msg ? d->msg : "unknown error");
}

void diag_clear(Diag *d) {
  free(d->msg);
  d->msg = NULL;
  d->has_error = false;
  d->loc = (Loc){0};
}
