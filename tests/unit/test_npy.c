/*
 * test_npy.c - unit tests of lib/support/npy.c: an encode/parse round trip
 * for every NumPy dtype the project reads and writes (and the void dtypes
 * that carry bf16 and f8), the header layout NumPy itself writes, Fortran
 * order, big-endian data, format 2.0, and every malformed-file error.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/support/npy.h"

static const struct {
  const char *descr;
  size_t item;
} dtypes[] = {
  {"|b1", 1}, {"|i1", 1}, {"<i2", 2}, {"<i4", 4}, {"<i8", 8},
  {"|u1", 1}, {"<u2", 2}, {"<u4", 4}, {"<u8", 8},
  {"<f2", 2}, {"<f4", 4}, {"<f8", 8}, {"<c8", 8}, {"<c16", 16},
  {"<V2", 2}, {"|V1", 1},
};

Test(npy, round_trip_every_dtype) {
  for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
    int64_t dims[3] = {2, 3, 4};
    size_t n = 24 * dtypes[t].item;
    uint8_t *data = malloc(n);
    for (size_t k = 0; k < n; k++) data[k] = (uint8_t)(k * 37 + t);
    size_t len;
    uint8_t *img = npy_encode(dtypes[t].descr, 3, dims, data, n, &len);
    cr_assert_eq(len % 64, n % 64, "%s: header not 64-aligned", dtypes[t].descr);
    NpyArray a;
    Diag d = {0};
    size_t used = 0;
    cr_assert(npy_parse(img, len, &a, &used, &d), "%s: %s", dtypes[t].descr, d.msg);
    cr_assert_eq(used, len);
    cr_assert_eq(a.item_size, dtypes[t].item);
    cr_assert_eq(a.rank, 3);
    cr_assert(a.dims[0] == 2 && a.dims[1] == 3 && a.dims[2] == 4);
    cr_assert_eq(a.nbytes, n);
    cr_assert(memcmp(a.data, data, n) == 0, "%s: data differs", dtypes[t].descr);
    char want[8];
    snprintf(want, sizeof want, "%s", dtypes[t].descr);
    if (dtypes[t].item == 1) want[0] = '|';
    cr_assert_str_eq(a.descr, want);
    npy_free(&a);
    free(img);
    free(data);
    diag_clear(&d);
  }
}

Test(npy, header_as_numpy_writes_it) {
  int64_t dims[2] = {2, 3};
  float v[6] = {1, 2, 3, 4, 5, 6};
  size_t len;
  uint8_t *img = npy_encode("<f4", 2, dims, v, sizeof v, &len);
  const char *hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  cr_assert(memcmp(img, "\x93NUMPY\x01\x00", 8) == 0);
  cr_assert_eq(img[8] | img[9] << 8, 118);
  cr_assert(memcmp(img + 10, hdr, strlen(hdr)) == 0);
  cr_assert_eq(img[127], '\n');
  cr_assert_eq(len, 128 + sizeof v);
  free(img);
  /* rank 1 and rank 0 shapes: (5,) and () */
  int64_t d1[1] = {5};
  img = npy_encode("|u1", 1, d1, "abcde", 5, &len);
  cr_assert(strstr((char *)img + 10, "'shape': (5,), }") != NULL);
  free(img);
  img = npy_encode("<i4", 0, NULL, "\1\0\0\0", 4, &len);
  cr_assert(strstr((char *)img + 10, "'shape': (), }") != NULL);
  NpyArray a;
  Diag d = {0};
  cr_assert(npy_parse(img, len, &a, NULL, &d));
  cr_assert_eq(a.rank, 0);
  cr_assert_eq(a.nbytes, 4);
  npy_free(&a);
  free(img);
}

static uint8_t *image(const char *header, const void *data, size_t n, size_t *len) {
  size_t hl = strlen(header);
  *len = 10 + hl + n;
  uint8_t *p = malloc(*len);
  memcpy(p, "\x93NUMPY\x01\x00", 8);
  p[8] = (uint8_t)hl;
  p[9] = (uint8_t)(hl >> 8);
  memcpy(p + 10, header, hl);
  memcpy(p + 10 + hl, data, n);
  return p;
}

Test(npy, fortran_order_is_transposed) {
  /* C-order [[1,2,3],[4,5,6]] stored column-major: 1 4 2 5 3 6 */
  int32_t col[6] = {1, 4, 2, 5, 3, 6};
  size_t len;
  uint8_t *img = image("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }\n", col,
                       sizeof col, &len);
  NpyArray a;
  Diag d = {0};
  cr_assert(npy_parse(img, len, &a, NULL, &d), "%s", d.msg);
  int32_t *v = (int32_t *)a.data;
  for (int k = 0; k < 6; k++) cr_assert_eq(v[k], k + 1);
  npy_free(&a);
  free(img);
}

Test(npy, big_endian_is_swapped) {
  uint8_t be[8] = {0x3f, 0x80, 0, 0, 0xc0, 0x20, 0, 0}; /* 1.0f, -2.5f */
  size_t len;
  uint8_t *img = image("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", be,
                       sizeof be, &len);
  NpyArray a;
  Diag d = {0};
  cr_assert(npy_parse(img, len, &a, NULL, &d), "%s", d.msg);
  float *f = (float *)a.data;
  cr_assert(f[0] == 1.0f && f[1] == -2.5f);
  cr_assert_str_eq(a.descr, "<f4");
  npy_free(&a);
  free(img);
  /* complex: each part swapped on its own */
  uint8_t bc[8] = {0x3f, 0x80, 0, 0, 0x40, 0, 0, 0}; /* (1, 2) */
  img = image("{'descr': '>c8', 'fortran_order': False, 'shape': (), }\n", bc, 8, &len);
  cr_assert(npy_parse(img, len, &a, NULL, &d), "%s", d.msg);
  f = (float *)a.data;
  cr_assert(f[0] == 1.0f && f[1] == 2.0f);
  npy_free(&a);
  free(img);
}

Test(npy, format_2_header) {
  int64_t dims[1] = {1};
  /* a long header forces format 2.0 */
  char descr[] = "<f4";
  size_t len;
  uint8_t *img = npy_encode(descr, 1, dims, "\0\0\x80\x3f", 4, &len);
  cr_assert_eq(img[6], 1);
  free(img);
  const char *hdr = "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }\n";
  size_t hl = strlen(hdr);
  len = 12 + hl + 2;
  img = malloc(len);
  memcpy(img, "\x93NUMPY\x02\x00", 8);
  img[8] = (uint8_t)hl;
  img[9] = img[10] = img[11] = 0;
  memcpy(img + 12, hdr, hl);
  img[12 + hl] = 0x34;
  img[13 + hl] = 0x12;
  NpyArray a;
  Diag d = {0};
  cr_assert(npy_parse(img, len, &a, NULL, &d), "%s", d.msg);
  cr_assert_eq(*(uint16_t *)a.data, 0x1234);
  npy_free(&a);
  free(img);
}

static void expect_error(const uint8_t *img, size_t len, const char *what) {
  NpyArray a;
  Diag d = {0};
  cr_assert_not(npy_parse(img, len, &a, NULL, &d), "accepted: %s", what);
  cr_assert(d.msg && strstr(d.msg, what), "message '%s' lacks '%s'", d.msg, what);
  diag_clear(&d);
}

Test(npy, malformed_files_are_errors) {
  uint8_t data[8] = {0};
  size_t len;
  uint8_t *img = image("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", data, 8, &len);
  expect_error(img, 5, "bad magic");
  expect_error(img, len - 1, "shorter than its header");
  img[0] = 'X';
  expect_error(img, len, "bad magic");
  free(img);
  img = image("{'descr': '<f4', 'fortran_order': False, 'shap': (2,), }\n", data, 8, &len);
  expect_error(img, len, "no 'shape'");
  free(img);
  img = image("{'fortran_order': False, 'shape': (2,), }\n", data, 8, &len);
  expect_error(img, len, "no 'descr'");
  free(img);
  img = image("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n", data, 8, &len);
  expect_error(img, len, "not a simple dtype");
  free(img);
  img = image("{'descr': '<O8', 'fortran_order': False, 'shape': (2,), }\n", data, 8, &len);
  expect_error(img, len, "unsupported dtype");
  free(img);
  img = image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }\n", data, 8, &len);
  expect_error(img, len, "bad dimension");
  free(img);
  img = image("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }\n", data, 8, &len);
  expect_error(img, len, "fortran_order");
  free(img);
  img = image("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }\n",
              data, 8, &len);
  expect_error(img, len, "overflows");
  free(img);
  /* header length past the end */
  uint8_t short_hdr[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xff, 0x7f, '{', '}'};
  expect_error(short_hdr, sizeof short_hdr, "truncated header");
  uint8_t ver[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', 9, 0, 0, 0, '{', '}'};
  expect_error(ver, sizeof ver, "version");
}

Test(npy, files) {
  char path[] = "/tmp/xhloc_npy_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  int64_t dims[2] = {3, 1};
  double v[3] = {1.5, -2, 1e300};
  Diag d = {0};
  cr_assert(npy_write_file(path, "<f8", 2, dims, v, sizeof v, &d), "%s", d.msg);
  NpyArray a;
  cr_assert(npy_read_file(path, &a, &d), "%s", d.msg);
  cr_assert(memcmp(a.data, v, sizeof v) == 0);
  npy_free(&a);
  unlink(path);
  cr_assert_not(npy_read_file(path, &a, &d));
  cr_assert(strstr(d.msg, "cannot open") != NULL);
  diag_clear(&d);
  cr_assert_not(npy_write_file("/nonexistent-dir/x.npy", "<f8", 2, dims, v, sizeof v, &d));
  diag_clear(&d);
}
