/*
 * fuzz_thunks.c - libFuzzer harness for the thunk file reader
 * (lib/runtime/thunk_file.c, artifact_parse).
 *
 * Each input is parsed twice: as it is (the magic, version and checksum
 * checks), and with a correct checksum line appended (so the fuzzer reaches
 * the body parser, which a random input never would behind a 64-bit
 * checksum).  Whatever is accepted must serialize to bytes that parse again
 * and serialize to the same bytes, and its texts must print.  A refusal must
 * come with a message.  Everything is freed, so LeakSanitizer sees leaks on
 * error paths.
 *
 * Build and run: make fuzz (see tests/fuzz/run.sh); seeds are
 * tests/fuzz/corpus (the .thunks files).
 */
#include "../../lib/runtime/thunks.h"

#include <stdlib.h>
#include <string.h>

static void check(const char *data, size_t size) {
  Diag d = {0};
  Artifact *a = artifact_parse(data, size, "fuzz.thunks", &d);
  if (!a) {
    if (!d.has_error || !d.msg)
      die("artifact_parse refused without a message");
    diag_clear(&d);
    return;
  }
  StrBuf once, twice, text;
  sb_init(&once);
  sb_init(&twice);
  sb_init(&text);
  artifact_serialize(a, &once);
  Artifact *b = artifact_parse(once.s, once.len, "again.thunks", &d);
  if (!b) {
    fprintf(stderr, "serialized artifact does not read back: %s\n", d.msg);
    abort();
  }
  artifact_serialize(b, &twice);
  if (once.len != twice.len || memcmp(once.s, twice.s, once.len) != 0)
    die("serializing is not a fixed point");
  artifact_print_thunks(&text, b);
  artifact_describe(&text, b);
  artifact_free(a);
  artifact_free(b);
  sb_free(&once);
  sb_free(&twice);
  sb_free(&text);
  diag_clear(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check((const char *)data, size);
  StrBuf b;
  sb_init(&b);
  sb_putn(&b, (const char *)data, size);
  sb_printf(&b, "checksum %016llx\n",
            (unsigned long long)checksum64(data, size));
  check(b.s, b.len);
  sb_free(&b);
  return 0;
}
