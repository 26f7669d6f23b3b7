/*
 * support.h - the support layer shared by every part of xhloc.
 *
 * Checked allocation, the arena that owns IR nodes, growable arrays, string
 * buffers, a string-keyed hash map, source locations and diagnostics, and the
 * conversions between small floating-point formats and double.  Sectioned by
 * the file that implements each part.  The library never exits: errors are
 * recorded in a Diag and returned to the caller; only cmd/ decides to exit.
 */
#ifndef XHLOC_SUPPORT_H
#define XHLOC_SUPPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define XHLOC_VERSION "0.1.0"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NORETURN __attribute__((noreturn))
#else
#define PRINTF_LIKE(f, a)
#define NORETURN
#endif

/*
 * alloc.c
 */

/* Internal bug: print file and line, then abort.  Never for user input. */
NORETURN void die_at(const char *file, int line, const char *fmt, ...)
    PRINTF_LIKE(3, 4);
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
#define unreachable() die_at(__FILE__, __LINE__, "unreachable")

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);             /* overflow-checked */
void *xrealloc(void *p, size_t n);
void *xreallocarray(void *p, size_t n, size_t size); /* overflow-checked */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/*
 * arena.c: bump allocator; memory is zeroed; freed all at once.
 */
typedef struct Arena Arena;

Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);            /* zeroed, 16-aligned */
void *arena_array(Arena *a, size_t n, size_t size); /* overflow-checked */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
void *arena_memdup(Arena *a, const void *p, size_t n);
size_t arena_bytes_used(const Arena *a);          /* for benchmarks */

#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_array((a), (size_t)(n), sizeof(T)))

/*
 * Growable arrays (heap, not arena): Vec(T) is a struct { T *data; int len,
 * cap; }.  vec_push may reallocate; free with vec_free.
 */
#define Vec(T)                                                                 \
  struct {                                                                     \
    T *data;                                                                   \
    int len, cap;                                                              \
  }
#define vec_grow(v, n)                                                         \
  ((v)->len + (n) > (v)->cap                                                   \
       ? (void)((v)->cap = vec_newcap_((v)->cap, (v)->len + (n)),              \
                (v)->data = xreallocarray((v)->data, (size_t)(v)->cap,         \
                                          sizeof(*(v)->data)))                 \
       : (void)0)
#define vec_push(v, x) (vec_grow((v), 1), (v)->data[(v)->len++] = (x))
#define vec_pop(v) ((v)->data[--(v)->len])
#define vec_last(v) ((v)->data[(v)->len - 1])
#define vec_free(v) (free((v)->data), (v)->data = NULL, (v)->len = (v)->cap = 0)
/* Copy a Vec's contents into the arena; returns NULL for an empty Vec. */
#define vec_to_arena(a, v)                                                     \
  ((v)->len ? arena_memdup((a), (v)->data,                                     \
                           (size_t)(v)->len * sizeof(*(v)->data))              \
            : NULL)
int vec_newcap_(int cap, int need);

typedef Vec(int64_t) I64Vec;
typedef Vec(char *) StrVec;
typedef Vec(void *) PtrVec;

/*
 * strbuf.c: growable, always NUL-terminated character buffer.
 */
typedef struct StrBuf {
  char *s;
  size_t len, cap;
} StrBuf;

void sb_init(StrBuf *b);
void sb_free(StrBuf *b);
void sb_clear(StrBuf *b);
void sb_putc(StrBuf *b, char c);
void sb_puts(StrBuf *b, const char *s);
void sb_putn(StrBuf *b, const char *s, size_t n);
void sb_printf(StrBuf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
void sb_put_i64(StrBuf *b, int64_t v);            /* fast decimal */
/* A byte count for people: "512 B", "1.5 KiB", "2.00 MiB", "3.00 GiB". */
void sb_put_size(StrBuf *b, int64_t n);
/* Append s with C escapes (\" \\ \n \t, \xNN for other control bytes). */
void sb_put_escaped(StrBuf *b, const char *s);
char *sb_detach(StrBuf *b);                       /* caller frees */

/*
 * phase_time.c: wall-clock timers of a compilation's phases (--time-passes).
 * A NULL PhaseTimes records nothing.
 */
typedef struct PhaseTime {
  const char *name;               /* not copied: a string literal */
  double seconds;
  int runs;
} PhaseTime;
typedef Vec(PhaseTime) PhaseTimes;

double clock_seconds(void);                       /* CLOCK_MONOTONIC */
/* Adds seconds to the phase `name` (a new row the first time). */
void phase_add(PhaseTimes *t, const char *name, double seconds);
/* phase_add(t, name, now - t0); returns now, the next phase's t0. */
double phase_since(PhaseTimes *t, const char *name, double t0);
/* "title:", then a row per phase: runs, seconds, share of the total. */
void phase_print(const PhaseTimes *t, const char *title, FILE *out);

/*
 * hashmap.c: string-keyed open-addressing map.  Keys are not copied: they
 * must outlive the map (arena strings).  Insertion order is not kept.
 */
typedef struct HashMap {
  struct HashEntry *slots;
  int cap, len, used;
} HashMap;

void *hashmap_get(const HashMap *m, const char *key);
void *hashmap_getn(const HashMap *m, const char *key, size_t len);
void hashmap_put(HashMap *m, const char *key, void *val);
bool hashmap_delete(HashMap *m, const char *key);
void hashmap_free(HashMap *m);
uint64_t hash_bytes(const void *p, size_t n);     /* FNV-1a */

/*
 * diag.c: source files, locations and diagnostics.
 *
 * An error is recorded once (the first wins) with its location; the caller
 * prints it with diag_print as
 *   file:line:col: error: message
 *   <the source line>
 *        ^
 * Warnings are printed at once to d->warn_out when it is set.
 */
typedef struct SrcFile {
  const char *name;   /* as given on the command line */
  const char *text;   /* NUL-terminated contents */
  size_t len;
} SrcFile;

typedef struct Loc {
  const SrcFile *file; /* NULL: no location */
  int line, col;       /* 1-based */
} Loc;

typedef struct Diag {
  bool has_error;
  Loc loc;
  char *msg;          /* heap; freed by diag_clear */
  FILE *warn_out;     /* NULL: warnings are counted but not printed */
  int nwarnings;
} Diag;

/* Reads a whole file; NULL and an error in d on failure. */
SrcFile *srcfile_read(const char *path, Diag *d);
SrcFile *srcfile_from_string(const char *name, const char *text, size_t len);
void srcfile_free(SrcFile *f);
/* Location of byte offset `off` in f (line/col computed by scanning). */
Loc srcfile_loc(const SrcFile *f, size_t off);

/* Record an error (only the first is kept); returns false for convenience. */
bool diag_error(Diag *d, Loc loc, const char *fmt, ...) PRINTF_LIKE(3, 4);
bool diag_verror(Diag *d, Loc loc, const char *fmt, va_list ap);
void diag_warn(Diag *d, Loc loc, const char *fmt, ...) PRINTF_LIKE(3, 4);
void diag_print(const Diag *d, FILE *out);
void diag_clear(Diag *d);
/* Print "file:line:col: KIND: msg", the line and a caret. */
void diag_print_at(FILE *out, Loc loc, const char *kind, const char *msg);

/*
 * fp.c: exact conversions between the small float formats and double.
 *
 * Encoding to a small format rounds to nearest even; values out of range
 * become inf where the format has one, else NaN, except f4e2m1fn (no NaN),
 * which saturates, as ml_dtypes (XLA's literals) does.  Decoding is exact.
 * `bits` are the raw encoding in the low bits of the integer.  fp.c's top
 * comment has the details (NaN signs, -0 in fnuz, e8m0).
 */
typedef enum FpFormat {
  FP_F16, FP_BF16, FP_F8E5M2, FP_F8E4M3FN, FP_F8E4M3, FP_F8E3M4,
  FP_F8E4M3FNUZ, FP_F8E5M2FNUZ, FP_F8E4M3B11FNUZ, FP_F8E8M0FNU, FP_F4E2M1FN,
  FP_F32, FP_F64,
} FpFormat;

double fp_to_double(FpFormat f, uint64_t bits);
uint64_t fp_from_double(FpFormat f, double v);
/* Formats number v (of format f) in the shortest %g form that reads back to
 * the same value in that format: "1", "0.1", "1e+10", "inf", "-nan". */
void fp_format(StrBuf *b, FpFormat f, uint64_t bits);
bool fp_has_inf(FpFormat f);
bool fp_has_nan(FpFormat f);
/* Exponent and stored mantissa widths of f. */
void fp_widths(FpFormat f, int *ebits, int *mbits);

/* reduce-precision (fp_reduce.c) on the raw bits v of a float of `total`
 * bits with src_e exponent and src_m mantissa bits, to dst_e (>= 1) and
 * dst_m (>= 0) bits, in that same format; XLA's semantics. */
uint64_t fp_reduce_precision_bits(int total, int src_e, int src_m,
                                  uint64_t v, int dst_e, int dst_m);

#endif
