/*
 * npy.c - NumPy .npy reading and writing.
 *
 * The header is a Python dict literal; only its three keys matter ('descr',
 * 'fortran_order', 'shape') and only simple dtypes (one type code, no
 * structured records) are accepted.  Everything is checked against the
 * buffer length before it is read, so a truncated or lying file is an error,
 * never an out-of-bounds read.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

#define NPY_MAX_RANK 64

static bool npy_err(Diag *d, const char *fmt, const char *arg) {
  Loc none = {0};
  return diag_error(d, none, fmt, arg ? arg : "");
}

void npy_free(NpyArray *a) {
  free(a->dims);
  free(a->data);
  memset(a, 0, sizeof *a);
}

/* Finds 'key' in the header dict; returns a pointer just past the ':'. */
static const char *find_key(const char *h, size_t n, const char *key) {
  size_t kl = strlen(key);
  for (size_t i = 0; i + kl + 2 <= n; i++) {
    if ((h[i] == '\'' || h[i] == '"') && strncmp(h + i + 1, key, kl) == 0 &&
        h[i + 1 + kl] == h[i]) {
      const char *p = h + i + kl + 2;
      while (p < h + n && isspace((unsigned char)*p)) p++;
      if (p < h + n && *p == ':') return p + 1;
    }
  }
  return NULL;
}

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && isspace((unsigned char)*p)) p++;
  return p;
}

/* Parses the descr value ('<f4') into a normalized form and item size.
 * Returns the byte order character ('<', '>' or '|'). */
static bool parse_descr(const char *p, const char *end, NpyArray *a, char *order,
                        Diag *d) {
  p = skip_ws(p, end);
  if (p >= end || (*p != '\'' && *p != '"'))
    return npy_err(d, "npy: 'descr' is not a simple dtype string%s", NULL);
  char q = *p++;
  const char *s = p;
  while (p < end && *p != q) p++;
  if (p >= end) return npy_err(d, "npy: unterminated 'descr'%s", NULL);
  size_t n = (size_t)(p - s);
  if (n < 2 || n >= sizeof a->descr - 1)
    return npy_err(d, "npy: unsupported dtype%s", NULL);
  char bo = s[0];
  const char *code = s + 1;
  size_t cl = n - 1;
  if (bo != '<' && bo != '>' && bo != '|' && bo != '=') {
    bo = '<';           /* no byte-order character */
    code = s;
    cl = n;
  }
  if (bo == '=') bo = '<';
  char tc = code[0];
  char shown[sizeof a->descr];
  snprintf(shown, sizeof shown, "%.*s", (int)n, s);
  if (!strchr("biufcV", tc) || cl < 2)
    return npy_err(d, "npy: unsupported dtype '%s'", shown);
  char *endp;
  errno = 0;
  long sz = strtol(code + 1, &endp, 10);
  if (errno || endp != code + cl || sz <= 0 || sz > 64)
    return npy_err(d, "npy: unsupported dtype '%s'", shown);
  a->item_size = (size_t)sz;
  if (sz == 1 && bo == '>') bo = '|';
  snprintf(a->descr, sizeof a->descr, "%c%c%ld", sz == 1 ? '|' : '<', tc, sz);
  *order = bo;
  return true;
}

static bool parse_shape(const char *p, const char *end, NpyArray *a, Diag *d) {
  p = skip_ws(p, end);
  if (p >= end || *p != '(') return npy_err(d, "npy: 'shape' is not a tuple%s", NULL);
  p++;
  int64_t dims[NPY_MAX_RANK];
  int rank = 0;
  for (;;) {
    p = skip_ws(p, end);
    if (p >= end) return npy_err(d, "npy: unterminated 'shape'%s", NULL);
    if (*p == ')') break;
    if (!isdigit((unsigned char)*p)) return npy_err(d, "npy: bad dimension in 'shape'%s", NULL);
    char *e;
    errno = 0;
    long long v = strtoll(p, &e, 10);
    if (errno || v < 0 || e > end) return npy_err(d, "npy: bad dimension in 'shape'%s", NULL);
    if (rank >= NPY_MAX_RANK) return npy_err(d, "npy: rank too large%s", NULL);
    dims[rank++] = v;
    p = skip_ws(e, end);
    if (p < end && *p == ',') p++;
  }
  a->rank = rank;
  a->dims = xcalloc((size_t)rank + 1, sizeof *a->dims);
  memcpy(a->dims, dims, sizeof(int64_t) * (size_t)rank);
  return true;
}

static void byteswap(uint8_t *p, size_t n, size_t item, char tc) {
  size_t unit = tc == 'c' ? item / 2 : item;   /* complex: swap each part */
  if (unit <= 1) return;
  for (size_t k = 0; k + unit <= n; k += unit)
    for (size_t i = 0; i < unit / 2; i++) {
      uint8_t t = p[k + i];
      p[k + i] = p[k + unit - 1 - i];
      p[k + unit - 1 - i] = t;
    }
}

bool npy_parse(const uint8_t *buf, size_t len, NpyArray *a, size_t *used,
               Diag *d) {
  memset(a, 0, sizeof *a);
  if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
    return npy_err(d, "not an .npy file (bad magic)%s", NULL);
  int major = buf[6];
  size_t hlen, hoff;
  if (major == 1) {
    hlen = (size_t)buf[8] | ((size_t)buf[9] << 8);
    hoff = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12) return npy_err(d, "npy: truncated header%s", NULL);
    hlen = (size_t)buf[8] | ((size_t)buf[9] << 8) | ((size_t)buf[10] << 16) |
           ((size_t)buf[11] << 24);
    hoff = 12;
  } else {
    return npy_err(d, "npy: unsupported format version%s", NULL);
  }
  if (hlen > len - hoff) return npy_err(d, "npy: truncated header%s", NULL);
  const char *h = (const char *)buf + hoff, *hend = h + hlen;
  const char *p = find_key(h, hlen, "descr");
  char order = '<';
  if (!p) return npy_err(d, "npy: header has no 'descr'%s", NULL);
  if (!parse_descr(p, hend, a, &order, d)) return false;
  p = find_key(h, hlen, "fortran_order");
  bool fortran = false;
  if (p) {
    p = skip_ws(p, hend);
    if (hend - p >= 4 && strncmp(p, "True", 4) == 0) fortran = true;
    else if (!(hend - p >= 5 && strncmp(p, "False", 5) == 0))
      return npy_err(d, "npy: bad 'fortran_order'%s", NULL);
  }
  p = find_key(h, hlen, "shape");
  if (!p) return npy_err(d, "npy: header has no 'shape'%s", NULL);
  if (!parse_shape(p, hend, a, d)) { npy_free(a); return false; }
  uint64_t n = 1;
  for (int k = 0; k < a->rank; k++) {
    if (a->dims[k] != 0 && n > UINT64_MAX / (uint64_t)a->dims[k] / a->item_size) {
      npy_free(a);
      return npy_err(d, "npy: array size overflows%s", NULL);
    }
    n *= (uint64_t)a->dims[k];
  }
  uint64_t nbytes = n * a->item_size;
  size_t doff = hoff + hlen;
  if (nbytes > len - doff) {
    npy_free(a);
    return npy_err(d, "npy: file is shorter than its header says%s", NULL);
  }
  a->nbytes = (size_t)nbytes;
  a->data = xmalloc(a->nbytes ? a->nbytes : 1);
  if (fortran && a->rank > 1) {
    /* element at C index (i0..ik) lives at Fortran offset sum i_j * fstride_j */
    int64_t fst[NPY_MAX_RANK], idx[NPY_MAX_RANK] = {0};
    int64_t st = 1;
    for (int k = 0; k < a->rank; k++) {
      fst[k] = st;
      st *= a->dims[k];
    }
    for (uint64_t e = 0; e < n; e++) {
      int64_t off = 0;
      for (int k = 0; k < a->rank; k++) off += idx[k] * fst[k];
      memcpy(a->data + e * a->item_size, buf + doff + (size_t)off * a->item_size, a->item_size);
      for (int k = a->rank - 1; k >= 0; k--) {
        if (++idx[k] < a->dims[k]) break;
        idx[k] = 0;
      }
    }
  } else {
    memcpy(a->data, buf + doff, a->nbytes);
  }
  if (order == '>') byteswap(a->data, a->nbytes, a->item_size, a->descr[1]);
  if (used) *used = doff + a->nbytes;
  return true;
}

bool npy_read_file(const char *path, NpyArray *a, Diag *d) {
  memset(a, 0, sizeof *a);
  FILE *f = fopen(path, "rb");
  if (!f) {
    Loc none = {0};
    return diag_error(d, none, "cannot open '%s': %s", path, strerror(errno));
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 65536;
      buf = xrealloc(buf, cap);
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  bool rerr = ferror(f);
  fclose(f);
  if (rerr) {
    free(buf);
    Loc none = {0};
    return diag_error(d, none, "cannot read '%s'", path);
  }
  bool ok = npy_parse(buf, len, a, NULL, d);
  free(buf);
  if (!ok && d->msg && !strstr(d->msg, path)) {
    char *m = d->msg;
    size_t n = strlen(m) + strlen(path) + 4;
    d->msg = xmalloc(n);
    snprintf(d->msg, n, "%s: %s", path, m);
    free(m);
  }
  return ok;
}

uint8_t *npy_encode(const char *descr, int rank, const int64_t *dims,
                    const void *data, size_t nbytes, size_t *len) {
  StrBuf h;
  sb_init(&h);
  sb_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int k = 0; k < rank; k++) {
    sb_printf(&h, "%lld", (long long)dims[k]);
    if (rank == 1 || k + 1 < rank) sb_puts(&h, rank == 1 ? "," : ", ");
  }
  sb_puts(&h, "), }");
  size_t pre = 10;
  int major = 1;
  if (h.len + 1 + pre > 65535) {
    pre = 12;
    major = 2;
  }
  size_t total = pre + h.len + 1;
  size_t pad = (64 - total % 64) % 64;
  for (size_t k = 0; k < pad; k++) sb_putc(&h, ' ');
  sb_putc(&h, '\n');
  size_t hl = h.len;
  *len = pre + hl + nbytes;
  uint8_t *out = xmalloc(*len ? *len : 1);
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (uint8_t)major;
  out[7] = 0;
  if (major == 1) {
    out[8] = (uint8_t)(hl & 0xff);
    out[9] = (uint8_t)(hl >> 8);
  } else {
    for (int k = 0; k < 4; k++) out[8 + k] = (uint8_t)(hl >> (8 * k));
  }
  memcpy(out + pre, h.s, hl);
  if (nbytes) memcpy(out + pre + hl, data, nbytes);
  sb_free(&h);
  return out;
}

bool npy_write_file(const char *path, const char *descr, int rank,
                    const int64_t *dims, const void *data, size_t nbytes,
                    Diag *d) {
  size_t len;
  uint8_t *img = npy_encode(descr, rank, dims, data, nbytes, &len);
  FILE *f = fopen(path, "wb");
  Loc none = {0};
  if (!f) {
    free(img);
    return diag_error(d, none, "cannot write '%s': %s", path, strerror(errno));
  }
  bool ok = fwrite(img, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  free(img);
  if (!ok) return diag_error(d, none, "cannot write '%s': %s", path, strerror(errno));
  return true;
}
