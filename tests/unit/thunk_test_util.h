/*
 * thunk_test_util.h - what the thunk-file tests (test_thunk_file.c,
 * test_collective_thunks.c, test_command_buffer.c) share: slices, an
 * artifact's file text, a file's checksum line made good again after a
 * change, the refusal check, and the byte-flip sweep over part of a file.
 *
 * Header-only (each tests/unit/test_X.c is its own binary): include it
 * once, after <criterion/criterion.h>.
 */
#ifndef XHLOC_THUNK_TEST_UTIL_H
#define XHLOC_THUNK_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/runtime/thunks.h"

#define TTU_UNUSED __attribute__((unused))

TTU_UNUSED static BufSlice sl(int a, int64_t off, int64_t size) {
  return (BufSlice){a, off, size};
}

TTU_UNUSED static StrBuf serialized(const Artifact *a) {
  StrBuf b;
  sb_init(&b);
  artifact_serialize(a, &b);
  return b;
}

/* Rewrites the final checksum line to match the bytes before it. */
TTU_UNUSED static void fix_checksum(char *data, size_t len) {
  cr_assert(len >= 26);
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)checksum64(data, len - 26));
  memcpy(data + len - 17, hex, 16);
}

/* text followed by its checksum line. */
TTU_UNUSED static StrBuf with_checksum(const char *text) {
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, text);
  sb_printf(&b, "checksum %016llx\n", (unsigned long long)checksum64(b.s, b.len));
  return b;
}

/* Parses and expects a refusal whose message contains `want` (NULL: any). */
TTU_UNUSED static void expect_refused(const char *data, size_t len, const char *want) {
  Diag d = {0};
  Artifact *a = artifact_parse(data, len, "t.thunks", &d);
  cr_assert_null(a, "accepted a bad file (want: %s)", want ? want : "any");
  cr_assert(d.has_error && d.msg);
  if (want)
    cr_assert(strstr(d.msg, want), "message \"%s\" lacks \"%s\"", d.msg, want);
  diag_clear(&d);
}

/* Flips a bit of every byte of b from the first `from` to the first `to`
 * after it, behind a good checksum: each file is refused with a message or
 * read back as an artifact that validates, never a crash. */
TTU_UNUSED static void flips_refused_or_valid(const StrBuf *b, const char *from,
                                              const char *to) {
  const char *f = strstr(b->s, from);
  const char *t = f ? strstr(f, to) : NULL;
  cr_assert(f && t, "no '%s' ... '%s' in the file", from, to);
  char *copy = xmalloc(b->len);
  for (size_t at = (size_t)(f - b->s); at < (size_t)(t - b->s); at++) {
    memcpy(copy, b->s, b->len);
    copy[at] ^= 0x04;
    fix_checksum(copy, b->len);
    Diag d = {0};
    Artifact *r = artifact_parse(copy, b->len, "t.thunks", &d);
    if (r) {
      cr_assert(artifact_validate(r, &d), "%s", d.msg);
      artifact_free(r);
    } else {
      cr_assert(d.has_error && d.msg);
    }
    diag_clear(&d);
  }
  free(copy);
}

#endif
