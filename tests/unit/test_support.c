/*
 * test_support.c - unit tests of lib/support: the arena, growable arrays,
 * string buffers, the hash map, source files and the diagnostics' format.
 */
#include <criterion/criterion.h>

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/support/support.h"

/* Runs `print` on a memory stream and returns what it wrote (heap). */
typedef struct Captured {
  char *text;
  size_t len;
  FILE *f;
} Captured;

static void capture_begin(Captured *c) {
  c->text = NULL;
  c->len = 0;
  c->f = open_memstream(&c->text, &c->len);
  cr_assert_not_null(c->f);
}

static char *capture_end(Captured *c) {
  fclose(c->f);
  return c->text;
}

/* The tests that expect an abort silence die()'s message. */
static void silence_stderr(void) { freopen("/dev/null", "w", stderr); }

/*
 * Arena
 */

Test(arena, zeroed_and_aligned) {
  Arena *a = arena_new();
  for (size_t n = 0; n < 300; n++) {
    unsigned char *p = arena_alloc(a, n);
    cr_assert_eq((uintptr_t)p % 16, 0, "size %zu not 16-aligned", n);
    for (size_t i = 0; i < n; i++)
      cr_assert_eq(p[i], 0);
    memset(p, 0xab, n); /* dirty it: later blocks must still come zeroed */
  }
  arena_free(a);
}

Test(arena, large_blocks_keep_current_block) {
  Arena *a = arena_new();
  char *small1 = arena_alloc(a, 32);
  char *big = arena_alloc(a, 1 << 20); /* gets its own block */
  char *small2 = arena_alloc(a, 32);
  cr_assert_not_null(big);
  for (size_t i = 0; i < (1 << 20); i += 4096)
    cr_assert_eq(big[i], 0);
  big[(1 << 20) - 1] = 1;
  /* The small allocation after the big one still comes from the first block. */
  cr_assert_eq(small2 - small1, 32);
  arena_free(a);
}

Test(arena, bytes_used_counts_rounded_requests) {
  Arena *a = arena_new();
  cr_assert_eq(arena_bytes_used(a), 0);
  arena_alloc(a, 1);
  cr_assert_eq(arena_bytes_used(a), 16);
  arena_alloc(a, 17);
  cr_assert_eq(arena_bytes_used(a), 48);
  arena_alloc(a, 100000);
  cr_assert_eq(arena_bytes_used(a), 48 + 100000);
  arena_free(a);
}

Test(arena, strings_and_copies) {
  Arena *a = arena_new();
  char *s = arena_strdup(a, "hello");
  cr_assert_str_eq(s, "hello");
  char *t = arena_strndup(a, "hello world", 5);
  cr_assert_str_eq(t, "hello");
  char *e = arena_strndup(a, "xyz", 0);
  cr_assert_str_eq(e, "");
  int src[4] = {1, 2, 3, 4};
  int *d = arena_memdup(a, src, sizeof src);
  cr_assert_arr_eq(d, src, sizeof src);
  cr_assert_neq(d, src);
  int64_t *arr = ARENA_ARRAY(a, int64_t, 10);
  for (int i = 0; i < 10; i++)
    cr_assert_eq(arr[i], 0);
  arena_free(a);
}

Test(arena, free_null_is_a_noop) { arena_free(NULL); }

Test(arena, array_size_overflow_aborts, .signal = SIGABRT,
     .init = silence_stderr) {
  Arena *a = arena_new();
  arena_array(a, SIZE_MAX / 2, 4);
}

/*
 * Vec
 */

Test(vec, push_pop_last_grow) {
  I64Vec v = {0};
  for (int64_t i = 0; i < 1000; i++)
    vec_push(&v, i * 3);
  cr_assert_eq(v.len, 1000);
  cr_assert_geq(v.cap, 1000);
  cr_assert_eq(vec_last(&v), 999 * 3);
  for (int64_t i = 999; i >= 500; i--)
    cr_assert_eq(vec_pop(&v), i * 3);
  cr_assert_eq(v.len, 500);
  for (int i = 0; i < 500; i++)
    cr_assert_eq(v.data[i], (int64_t)i * 3);
  vec_free(&v);
  cr_assert_null(v.data);
  cr_assert_eq(v.len, 0);
  cr_assert_eq(v.cap, 0);
}

Test(vec, grow_reserves_without_changing_length) {
  StrVec v = {0};
  vec_grow(&v, 100);
  cr_assert_eq(v.len, 0);
  cr_assert_geq(v.cap, 100);
  vec_free(&v);
}

Test(vec, to_arena) {
  Arena *a = arena_new();
  I64Vec v = {0};
  cr_assert_null(vec_to_arena(a, &v));
  vec_push(&v, 7);
  vec_push(&v, -8);
  int64_t *copy = vec_to_arena(a, &v);
  vec_free(&v);
  cr_assert_eq(copy[0], 7);
  cr_assert_eq(copy[1], -8);
  arena_free(a);
}

Test(vec, newcap) {
  cr_assert_eq(vec_newcap_(0, 1), 8);
  cr_assert_eq(vec_newcap_(8, 9), 16);
  cr_assert_eq(vec_newcap_(16, 100), 128);
}

Test(vec, newcap_too_large_aborts, .signal = SIGABRT,
     .init = silence_stderr) {
  vec_newcap_(8, INT_MAX);
}

/*
 * StrBuf
 */

Test(strbuf, empty_detach_gives_empty_string) {
  StrBuf b;
  sb_init(&b);
  char *s = sb_detach(&b);
  cr_assert_str_eq(s, "");
  free(s);
  cr_assert_null(b.s);
}

Test(strbuf, put_and_clear) {
  StrBuf b;
  sb_init(&b);
  sb_putc(&b, 'a');
  sb_puts(&b, "bc");
  sb_putn(&b, "defXXX", 3);
  cr_assert_str_eq(b.s, "abcdef");
  cr_assert_eq(b.len, 6);
  sb_clear(&b);
  cr_assert_str_eq(b.s, "");
  cr_assert_eq(b.len, 0);
  sb_puts(&b, "again");
  cr_assert_str_eq(b.s, "again");
  sb_free(&b);
  cr_assert_null(b.s);
}

Test(strbuf, printf_short_and_long) {
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "%d-%s", 42, "x");
  cr_assert_str_eq(b.s, "42-x");
  /* Longer than the 256-byte fast path. */
  char big[1000];
  memset(big, 'z', sizeof big - 1);
  big[sizeof big - 1] = 0;
  sb_printf(&b, "[%s]", big);
  cr_assert_eq(b.len, 4 + 2 + 999);
  cr_assert_eq(b.s[4], '[');
  cr_assert_eq(b.s[b.len - 1], ']');
  cr_assert_eq(b.s[b.len], 0);
  cr_assert_eq(strlen(b.s), b.len);
  sb_free(&b);
}

Test(strbuf, growth_keeps_contents) {
  StrBuf b;
  sb_init(&b);
  for (int i = 0; i < 10000; i++)
    sb_putc(&b, (char)('a' + i % 26));
  cr_assert_eq(b.len, 10000);
  for (int i = 0; i < 10000; i++)
    cr_assert_eq(b.s[i], 'a' + i % 26);
  sb_free(&b);
}

static void check_i64(int64_t v, const char *want) {
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, "<");
  sb_put_i64(&b, v);
  sb_puts(&b, ">");
  char expect[64];
  snprintf(expect, sizeof expect, "<%s>", want);
  cr_assert_str_eq(b.s, expect);
  sb_free(&b);
}

Test(strbuf, put_i64) {
  check_i64(0, "0");
  check_i64(7, "7");
  check_i64(-1, "-1");
  check_i64(1234567890123LL, "1234567890123");
  check_i64(INT64_MAX, "9223372036854775807");
  check_i64(INT64_MIN, "-9223372036854775808");
  check_i64(-10, "-10");
}

Test(strbuf, put_i64_matches_printf) {
  StrBuf a, b;
  sb_init(&a);
  sb_init(&b);
  uint64_t u = 1;
  for (int i = 0; i < 200; i++) {
    int64_t v = (int64_t)u; /* cycles through every magnitude and sign */
    sb_put_i64(&a, v);
    sb_putc(&a, ' ');
    sb_printf(&b, "%lld ", (long long)v);
    u = u * 0xfffffffffffffff9ull + 3; /* u * -7 + 3, wrapping */
  }
  cr_assert_str_eq(a.s, b.s);
  sb_free(&a);
  sb_free(&b);
}

static void check_escaped(const char *in, const char *want) {
  StrBuf b;
  sb_init(&b);
  sb_putc(&b, '<');
  sb_put_escaped(&b, in);
  sb_putc(&b, '>');
  char expect[256];
  snprintf(expect, sizeof expect, "<%s>", want);
  cr_assert_str_eq(b.s, expect, "escaping gave '%s', want '%s'", b.s, expect);
  sb_free(&b);
}

Test(strbuf, put_escaped) {
  check_escaped("", "");
  check_escaped("plain text", "plain text");
  check_escaped("say \"hi\"", "say \\\"hi\\\"");
  check_escaped("a\\b", "a\\\\b");
  check_escaped("l1\nl2\tx\ry", "l1\\nl2\\tx\\ry");
  check_escaped("\x01\x1f\x7f", "\\x01\\x1f\\x7f");
  /* Single quotes, parentheses and UTF-8 pass through unchanged. */
  check_escaped("jit(f)/[axis=('y',)]", "jit(f)/[axis=('y',)]");
  check_escaped("\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9");
}

/*
 * HashMap
 */

Test(hashmap, empty_map) {
  HashMap m = {0};
  cr_assert_null(hashmap_get(&m, "x"));
  cr_assert_null(hashmap_getn(&m, "xyz", 2));
  cr_assert_not(hashmap_delete(&m, "x"));
  hashmap_free(&m);
}

Test(hashmap, put_get_overwrite) {
  HashMap m = {0};
  int a = 1, b = 2, c = 3;
  hashmap_put(&m, "a", &a);
  hashmap_put(&m, "b", &b);
  cr_assert_eq(hashmap_get(&m, "a"), &a);
  cr_assert_eq(hashmap_get(&m, "b"), &b);
  cr_assert_null(hashmap_get(&m, "c"));
  hashmap_put(&m, "a", &c);
  cr_assert_eq(hashmap_get(&m, "a"), &c);
  cr_assert_eq(m.len, 2);
  hashmap_free(&m);
  cr_assert_null(m.slots);
  cr_assert_eq(m.len, 0);
}

Test(hashmap, getn_uses_only_the_prefix) {
  HashMap m = {0};
  int v = 5;
  hashmap_put(&m, "param", &v);
  cr_assert_eq(hashmap_getn(&m, "param.1", 5), &v);
  cr_assert_null(hashmap_getn(&m, "param.1", 7));
  cr_assert_null(hashmap_getn(&m, "param", 4));
  hashmap_free(&m);
}

Test(hashmap, many_keys_rehash_delete_reinsert) {
  enum { N = 5000 };
  static char keys[N][16];
  static int vals[N];
  HashMap m = {0};
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "k%d", i);
    vals[i] = i;
    hashmap_put(&m, keys[i], &vals[i]);
  }
  cr_assert_eq(m.len, N);
  /* Load stays below 70% after rehashes. */
  cr_assert_lt(m.used * 10, m.cap * 7);
  for (int i = 0; i < N; i++)
    cr_assert_eq(hashmap_get(&m, keys[i]), &vals[i]);

  /* Delete the even keys; the odd ones stay reachable past the tombstones. */
  for (int i = 0; i < N; i += 2)
    cr_assert(hashmap_delete(&m, keys[i]));
  cr_assert_eq(m.len, N / 2);
  for (int i = 0; i < N; i++) {
    if (i % 2)
      cr_assert_eq(hashmap_get(&m, keys[i]), &vals[i]);
    else
      cr_assert_null(hashmap_get(&m, keys[i]));
  }
  cr_assert_not(hashmap_delete(&m, keys[0]), "deleting twice");

  /* Reinsert: tombstones are reused or dropped by the next rehash. */
  for (int i = 0; i < N; i += 2)
    hashmap_put(&m, keys[i], &vals[i]);
  cr_assert_eq(m.len, N);
  for (int i = 0; i < N; i++)
    cr_assert_eq(hashmap_get(&m, keys[i]), &vals[i]);
  hashmap_free(&m);
}

Test(hashmap, churn_does_not_fill_table_with_tombstones) {
  /* Insert and delete many distinct keys while few are live: lookups of a
   * missing key must still terminate and the table must not grow without
   * bound. */
  enum { N = 20000 };
  static char keys[N][16];
  HashMap m = {0};
  int v = 1;
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "t%d", i);
    hashmap_put(&m, keys[i], &v);
    if (i >= 4)
      cr_assert(hashmap_delete(&m, keys[i - 4]));
  }
  cr_assert_eq(m.len, 4);
  cr_assert_leq(m.cap, 64, "cap %d", m.cap);
  cr_assert_null(hashmap_get(&m, "missing"));
  for (int i = N - 4; i < N; i++)
    cr_assert_eq(hashmap_get(&m, keys[i]), &v);
  hashmap_free(&m);
}

Test(hashmap, fnv1a) {
  cr_assert_eq(hash_bytes("", 0), 0xcbf29ce484222325ull);
  cr_assert_eq(hash_bytes("a", 1), 0xaf63dc4c8601ec8cull);
  cr_assert_eq(hash_bytes("foobar", 6), 0x85944171f73967e8ull);
}

/*
 * Source files and diagnostics
 */

Test(srcfile, loc_of_offsets) {
  SrcFile *f = srcfile_from_string("t.hlo", "ab\ncd\n\nx", 8);
  cr_assert_str_eq(f->name, "t.hlo");
  cr_assert_eq(f->len, 8);
  Loc l = srcfile_loc(f, 0);
  cr_assert_eq(l.file, f);
  cr_assert_eq(l.line, 1);
  cr_assert_eq(l.col, 1);
  l = srcfile_loc(f, 4); /* 'd' */
  cr_assert_eq(l.line, 2);
  cr_assert_eq(l.col, 2);
  l = srcfile_loc(f, 7); /* 'x' */
  cr_assert_eq(l.line, 4);
  cr_assert_eq(l.col, 1);
  l = srcfile_loc(f, 1000); /* clamped to the end */
  cr_assert_eq(l.line, 4);
  cr_assert_eq(l.col, 2);
  srcfile_free(f);
  srcfile_free(NULL);
}

Test(srcfile, embedded_nul_is_kept) {
  SrcFile *f = srcfile_from_string("n", "a\0b", 3);
  cr_assert_eq(f->len, 3);
  cr_assert_eq(f->text[2], 'b');
  cr_assert_eq(f->text[3], 0);
  srcfile_free(f);
}

Test(srcfile, read_missing_file_is_an_error) {
  Diag d = {0};
  SrcFile *f = srcfile_read("/nonexistent/dir/x.hlo", &d);
  cr_assert_null(f);
  cr_assert(d.has_error);
  cr_assert_null(d.loc.file);
  cr_assert_str_eq(d.msg,
                   "cannot open '/nonexistent/dir/x.hlo': No such file or "
                   "directory");
  diag_clear(&d);
  cr_assert_not(d.has_error);
  cr_assert_null(d.msg);
}

Test(srcfile, read_a_file) {
  char path[] = "/tmp/xhloc-test-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *w = fdopen(fd, "w");
  fputs("HloModule m\n", w);
  fclose(w);
  Diag d = {0};
  SrcFile *f = srcfile_read(path, &d);
  remove(path);
  cr_assert_not_null(f);
  cr_assert_not(d.has_error);
  cr_assert_str_eq(f->name, path);
  cr_assert_str_eq(f->text, "HloModule m\n");
  cr_assert_eq(f->len, 12);
  srcfile_free(f);
}

Test(diag, first_error_wins) {
  SrcFile *f = srcfile_from_string("f.hlo", "x\ny\n", 4);
  Diag d = {0};
  cr_assert_not(diag_error(&d, srcfile_loc(f, 2), "first %d", 1));
  cr_assert_not(diag_error(&d, srcfile_loc(f, 0), "second"));
  cr_assert(d.has_error);
  cr_assert_str_eq(d.msg, "first 1");
  cr_assert_eq(d.loc.line, 2);
  diag_clear(&d);
  srcfile_free(f);
}

Test(diag, print_with_caret) {
  const char *text = "HloModule m\n\nENTRY e {\n  ROOT x = f32[] bogus()\n}\n";
  SrcFile *f = srcfile_from_string("testdata/t.hlo", text, strlen(text));
  Diag d = {0};
  diag_error(&d, srcfile_loc(f, (size_t)(strstr(text, "bogus") - text)),
             "unknown opcode '%s'", "bogus");
  Captured c;
  capture_begin(&c);
  diag_print(&d, c.f);
  char *out = capture_end(&c);
  cr_assert_str_eq(out, "testdata/t.hlo:4:18: error: unknown opcode 'bogus'\n"
                        "  ROOT x = f32[] bogus()\n"
                        "                 ^\n");
  free(out);
  diag_clear(&d);
  srcfile_free(f);
}

Test(diag, caret_keeps_tabs) {
  const char *text = "\tROOT\t x";
  SrcFile *f = srcfile_from_string("t", text, strlen(text));
  Captured c;
  capture_begin(&c);
  diag_print_at(c.f, srcfile_loc(f, 7), "error", "here");
  char *out = capture_end(&c);
  cr_assert_str_eq(out, "t:1:8: error: here\n\tROOT\t x\n\t    \t ^\n");
  free(out);
  srcfile_free(f);
}

Test(diag, caret_at_end_of_file) {
  const char *text = "ENTRY e {";
  SrcFile *f = srcfile_from_string("t", text, strlen(text));
  Captured c;
  capture_begin(&c);
  diag_print_at(c.f, srcfile_loc(f, strlen(text)), "error",
                "expected '}'");
  char *out = capture_end(&c);
  cr_assert_str_eq(out, "t:1:10: error: expected '}'\nENTRY e {\n"
                        "         ^\n");
  free(out);
  srcfile_free(f);
}

Test(diag, no_location) {
  Diag d = {0};
  diag_error(&d, (Loc){0}, "cannot open 'x'");
  Captured c;
  capture_begin(&c);
  diag_print(&d, c.f);
  char *out = capture_end(&c);
  cr_assert_str_eq(out, "error: cannot open 'x'\n");
  free(out);
  diag_clear(&d);
}

Test(diag, no_error_prints_nothing) {
  Diag d = {0};
  Captured c;
  capture_begin(&c);
  diag_print(&d, c.f);
  char *out = capture_end(&c);
  cr_assert_str_eq(out, "");
  free(out);
}

Test(diag, long_line_shows_a_window) {
  /* A 1000-column line: the report shows 400 columns around the column,
   * with "..." on the cut sides, and the caret under the right character. */
  char text[1001];
  for (int i = 0; i < 1000; i++)
    text[i] = (char)('a' + i % 26);
  text[1000] = 0;
  SrcFile *f = srcfile_from_string("long", text, 1000);
  Captured c;
  capture_begin(&c);
  diag_print_at(c.f, srcfile_loc(f, 500), "error", "bad");
  char *out = capture_end(&c);
  char *l2 = strchr(out, '\n') + 1;
  char *l3 = strchr(l2, '\n') + 1;
  cr_assert_eq(strncmp(out, "long:1:501: error: bad\n", 23), 0);
  cr_assert_eq(strncmp(l2, "...", 3), 0);
  cr_assert_eq(l3 - l2 - 1, 3 + 400 + 3, "window line length");
  size_t caret = strlen(l3) - 2; /* "   ...^\n" */
  cr_assert_eq(l3[caret], '^');
  cr_assert_eq(l2[caret], text[500], "caret under '%c', want '%c'",
               l2[caret], text[500]);
  free(out);
  srcfile_free(f);
}

Test(diag, warnings_print_or_count) {
  SrcFile *f = srcfile_from_string("w.hlo", "a b\n", 4);
  Diag d = {0};
  diag_warn(&d, srcfile_loc(f, 2), "unknown attribute '%s'", "foo");
  cr_assert_eq(d.nwarnings, 1);
  cr_assert_not(d.has_error, "a warning is not an error");
  Captured c;
  capture_begin(&c);
  d.warn_out = c.f;
  diag_warn(&d, srcfile_loc(f, 2), "unknown attribute '%s'", "bar");
  char *out = capture_end(&c);
  cr_assert_eq(d.nwarnings, 2);
  cr_assert_str_eq(out, "w.hlo:1:3: warning: unknown attribute 'bar'\n"
                        "a b\n"
                        "  ^\n");
  free(out);
  srcfile_free(f);
}

/*
 * Checked allocation
 */

Test(alloc, strdup_and_zero_sizes) {
  char *s = xstrdup("abc");
  cr_assert_str_eq(s, "abc");
  free(s);
  s = xstrndup("abcdef", 2);
  cr_assert_str_eq(s, "ab");
  free(s);
  void *p = xmalloc(0); /* never NULL */
  cr_assert_not_null(p);
  free(p);
  int *z = xcalloc(4, sizeof(int));
  for (int i = 0; i < 4; i++)
    cr_assert_eq(z[i], 0);
  z = xreallocarray(z, 8, sizeof(int));
  cr_assert_eq(z[3], 0);
  free(z);
}

Test(alloc, reallocarray_overflow_aborts, .signal = SIGABRT,
     .init = silence_stderr) {
  xreallocarray(NULL, SIZE_MAX / 2, 3);
}

/* Past the first few blocks the arena maps 2 MiB blocks and skips clearing
 * them (fresh pages are zero): every allocation must still read as zero,
 * be 16-byte aligned, and not overlap the previous one. */
Test(arena, large_arenas_zeroed_and_aligned) {
  Arena *a = arena_new();
  unsigned char *prev = NULL;
  size_t prevn = 0;
  for (int i = 0; i < 20000; i++) {
    size_t n = (size_t)(i % 7 == 0 ? 3000 : 16 + (i * 37) % 500);
    if (i % 4000 == 3999)
      n = 3u << 20;                   /* a big request: its own block */
    unsigned char *p = arena_alloc(a, n);
    cr_assert_eq((uintptr_t)p % 16, 0);
    for (size_t k = 0; k < n; k += 61)
      cr_assert_eq(p[k], 0, "allocation %d byte %zu", i, k);
    cr_assert_eq(p[n - 1], 0);
    memset(p, 0xab, n);               /* dirty it, as real users do */
    if (prev && p > prev)
      cr_assert(p >= prev + prevn || p + n <= prev);
    prev = p, prevn = n;
  }
  cr_assert_gt(arena_bytes_used(a), (size_t)20 << 20);
  arena_free(a);
}

/* ---- phase timers (phase_time.c) ------------------------------------------ */

Test(phase_time, adds_to_rows_in_first_seen_order) {
  PhaseTimes t = {0};
  phase_add(&t, "parse", 0.25);
  phase_add(&t, "codegen", 0.5);
  phase_add(&t, "parse", 0.25);
  cr_assert_eq(t.len, 2);
  cr_assert_str_eq(t.data[0].name, "parse");
  cr_assert_eq(t.data[0].runs, 2);
  cr_assert_float_eq(t.data[0].seconds, 0.5, 1e-12);
  cr_assert_str_eq(t.data[1].name, "codegen");
  cr_assert_eq(t.data[1].runs, 1);
  vec_free(&t);
}

Test(phase_time, null_records_nothing_and_since_returns_now) {
  phase_add(NULL, "x", 1.0);
  double t0 = clock_seconds();
  double t1 = phase_since(NULL, "x", t0);
  cr_assert_geq(t1, t0);
  PhaseTimes t = {0};
  double t2 = phase_since(&t, "y", t1);
  cr_assert_geq(t2, t1);
  cr_assert_eq(t.len, 1);
  cr_assert_float_eq(t.data[0].seconds, t2 - t1, 1e-12);
  vec_free(&t);
}

Test(phase_time, prints_rows_shares_and_total) {
  PhaseTimes t = {0};
  phase_add(&t, "parse", 0.25);
  phase_add(&t, "llvm code generation", 0.75);
  Captured c;
  capture_begin(&c);
  phase_print(&t, "compile phases", c.f);
  char *s = capture_end(&c);
  cr_assert_str_eq(s,
                   "compile phases:\n"
                   "  phase                                          runs    seconds      %\n"
                   "  parse                                             1   0.250000   25.0\n"
                   "  llvm code generation                              1   0.750000   75.0\n"
                   "  total (phases)                                        1.000000  100.0\n");
  free(s);
  vec_free(&t);
}
