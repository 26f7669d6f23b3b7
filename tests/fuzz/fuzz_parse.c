/*
 * fuzz_parse.c - libFuzzer harness for the HLO front end.
 *
 * The input bytes are parsed as an HLO file.  When that succeeds, every
 * module is verified; when that succeeds too, the modules are printed, the
 * printed text is parsed, verified and printed again, and the two printed
 * texts must be equal (printed text that does not read back the same is a
 * bug, so it aborts).  Everything is freed, so LeakSanitizer sees leaks on
 * error paths.
 *
 * Build and run: make fuzz (see tests/fuzz/run.sh).
 */
#include "../../lib/hlo/hlo.h"

#include <stdlib.h>
#include <string.h>

/* Parses, verifies and prints src into out; returns the module count, or
 * -1 when parsing or verifying failed. */
static int parse_verify_print(const SrcFile *src, StrBuf *out) {
  Diag d = {0};
  ParseOptions popts = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  int n = hlo_parse(src, &popts, &mods, &d);
  bool ok = n > 0;
  if (n == 0 || (n < 0 && !d.has_error))
    die("hlo_parse returned %d without an error", n);
  for (int i = 0; ok && i < n; i++)
    ok = hlo_verify(mods[i], &d);
  if (!ok && !d.has_error)
    die("hlo_verify failed without an error");
  if (ok)
    for (int i = 0; i < n; i++) {
      if (i > 0)
        sb_puts(out, "\n// -----\n\n");
      hlo_print_module(out, mods[i], &print_options_default);
    }
  /* Formatting the error must not crash either (locations, long lines). */
  if (!ok) {
    FILE *null = fopen("/dev/null", "w");
    if (null) {
      diag_print(&d, null);
      fclose(null);
    }
  }
  for (int i = 0; i < n; i++)
    hlo_module_free(mods[i]);
  free(mods);
  diag_clear(&d);
  return ok ? n : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SrcFile *src = srcfile_from_string("fuzz.hlo", (const char *)data, size);
  StrBuf text1, text2;
  sb_init(&text1);
  sb_init(&text2);
  int n = parse_verify_print(src, &text1);
  if (n > 0) {
    SrcFile *src2 =
        srcfile_from_string("printed.hlo", text1.s ? text1.s : "", text1.len);
    int n2 = parse_verify_print(src2, &text2);
    if (n2 != n) {
      fprintf(stderr, "printed text of %d module(s) gave %d; printed text:\n%s\n",
              n, n2, text1.s);
      abort();
    }
    if (text1.len != text2.len || memcmp(text1.s, text2.s, text1.len) != 0) {
      fprintf(stderr, "printing is not a fixed point:\n--- first:\n%s\n"
                      "--- second:\n%s\n", text1.s, text2.s);
      abort();
    }
    srcfile_free(src2);
  }
  sb_free(&text1);
  sb_free(&text2);
  srcfile_free(src);
  return 0;
}
