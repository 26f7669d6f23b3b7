/*
 * npy.h - reading and writing NumPy .npy files (format versions 1.0, 2.0
 * and 3.0).
 *
 * An array is described by its NumPy dtype string ("<f4", "|b1", "<c16",
 * "|V2" for a 2-byte type NumPy lacks, such as bf16), its dimensions and its
 * bytes, always in C (row-major) order and little-endian in memory: files in
 * Fortran order are transposed and big-endian files byte-swapped on reading.
 * Errors go to a Diag (no location); the library never exits.
 */
#ifndef XHLOC_NPY_H
#define XHLOC_NPY_H

#include "support.h"

typedef struct NpyArray {
  char descr[32];                 /* normalized: '<' or '|' byte order, e.g. "<f4" */
  int rank;
  int64_t *dims;                  /* heap; rank entries */
  size_t item_size;               /* bytes per element */
  uint8_t *data;                  /* heap; C order, little-endian */
  size_t nbytes;
} NpyArray;

/* Parses the first array of an .npy image.  On success fills *a (free with
 * npy_free) and sets *used to the bytes the array took (so a caller can read
 * several arrays concatenated in one file). */
bool npy_parse(const uint8_t *buf, size_t len, NpyArray *a, size_t *used,
               Diag *d);
/* Reads the first array of the file at path. */
bool npy_read_file(const char *path, NpyArray *a, Diag *d);
/* Writes one array (format 1.0, or 2.0 when the header needs it) in C order;
 * `descr` is a NumPy dtype string such as "<f4". */
bool npy_write_file(const char *path, const char *descr, int rank,
                    const int64_t *dims, const void *data, size_t nbytes,
                    Diag *d);
/* The .npy image in memory (heap; *len set), for tests and pipes. */
uint8_t *npy_encode(const char *descr, int rank, const int64_t *dims,
                    const void *data, size_t nbytes, size_t *len);
void npy_free(NpyArray *a);

#endif
