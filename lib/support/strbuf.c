/*
 * strbuf.c - growable NUL-terminated character buffers, used by the printer
 * and every text output.
 */
#include "support.h"

#include <stdlib.h>
#include <string.h>

void sb_init(StrBuf *b) { b->s = NULL, b->len = b->cap = 0; }

void sb_free(StrBuf *b) {
  free(b->s);
  sb_init(b);
}

void sb_clear(StrBuf *b) {
  b->len = 0;
  if (b->s)
    b->s[0] = 0;
}

static void reserve(StrBuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap)
    return;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra + 1) {
    if (cap > SIZE_MAX / 2)
      die("string buffer too large");
    cap *= 2;
  }
  b->s = xrealloc(b->s, cap);
  b->cap = cap;
}

void sb_putn(StrBuf *b, const char *s, size_t n) {
  reserve(b, n);
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void sb_putc(StrBuf *b, char c) {
  reserve(b, 1);
  b->s[b->len++] = c;
  b->s[b->len] = 0;
}

void sb_puts(StrBuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_vprintf(StrBuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char tmp[256];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  if (n < 0)
    die("vsnprintf failed");
  if ((size_t)n < sizeof tmp) {
    sb_putn(b, tmp, (size_t)n);
  } else {
    reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
    b->len += (size_t)n;
  }
  va_end(ap2);
}

void sb_printf(StrBuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

void sb_put_i64(StrBuf *b, int64_t v) {
  char tmp[24];
  int i = sizeof tmp;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    tmp[--i] = '-';
  sb_putn(b, tmp + i, sizeof tmp - (size_t)i);
}

void sb_put_escaped(StrBuf *b, const char *s) {
  reserve(b, 0); /* like sb_puts(""): the buffer holds a string afterwards */
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': sb_puts(b, "\\\""); break;
    case '\\': sb_puts(b, "\\\\"); break;
    case '\n': sb_puts(b, "\\n"); break;
    case '\t': sb_puts(b, "\\t"); break;
    case '\r': sb_puts(b, "\\r"); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        sb_printf(b, "\\x%02x", *p);
      else
        sb_putc(b, (char)*p);
    }
  }
}

char *sb_detach(StrBuf *b) {
  char *s = b->s ? b->s : xstrdup("");
  sb_init(b);
  return s;
}

void sb_put_size(StrBuf *b, int64_t n) {
  if (n < 1024)
    sb_printf(b, "%lld B", (long long)n);
  else if (n < 1024 * 1024)
    sb_printf(b, "%.1f KiB", (double)n / 1024.0);
  else if (n < (int64_t)1 << 30)
    sb_printf(b, "%.2f MiB", (double)n / (1024.0 * 1024.0));
  else
    sb_printf(b, "%.2f GiB", (double)n / (1024.0 * 1024.0 * 1024.0));
}
