/*
 * test_thunk_file.c - the artifact file (lib/runtime/thunk_file.c) and the
 * artifact's checks and text (artifact.c): round trip, every corruption and
 * truncation refused, version and checksum messages, inconsistent contents,
 * the kernel file check, and the thunk_sequence text.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/runtime/thunks.h"
#include "thunk_test_util.h"

/* A small artifact by hand: parameter, constant, output and temp
 * allocations; a kernel, a while (cond kernel, body copy) and a pred
 * conditional (memset in the true branch, nothing in the false one). */
static Artifact *sample(void) {
  Artifact *a = artifact_new();
  Arena *ar = a->arena;
  a->module_name = arena_strdup(ar, "sample");
  a->target = arena_strdup(ar, "sm_90");
  a->kernel_file = arena_strdup(ar, "sample.ptx");
  a->kernel_checksum = 0x0123456789abcdefull;
  a->result_shape = arena_strdup(ar, "f32[4]{0}");
  a->nallocs = 4;
  a->allocs = ARENA_ARRAY(ar, BufAlloc, 4);
  a->allocs[0] = (BufAlloc){.size = 16, .flags = ALLOC_PARAMETER,
                            .param_number = 0,
                            .param_shape = arena_strdup(ar, "f32[4]{0}")};
  a->allocs[1] = (BufAlloc){.size = 16, .flags = ALLOC_CONSTANT};
  a->allocs[2] = (BufAlloc){.size = 16,
                            .flags = ALLOC_OUTPUT | ALLOC_MAYBE_LIVE_OUT,
                            .output_shape = arena_strdup(ar, "f32[4]{0}")};
  a->allocs[3] = (BufAlloc){.size = 128, .flags = ALLOC_TEMP};

  Thunk *entry = ARENA_ARRAY(ar, Thunk, 3);
  Thunk *k = &entry[0];
  k->kind = THUNK_KERNEL;
  k->annotation = arena_strdup(ar, "fusion.1");
  k->kernel_name = arena_strdup(ar, "fusion_1");
  k->nargs = 3;
  k->args = ARENA_ARRAY(ar, BufSlice, 3);
  k->written = ARENA_ARRAY(ar, bool, 3);
  k->args[0] = sl(0, 0, 16);
  k->args[1] = sl(1, 0, 16);
  k->args[2] = sl(3, 0, 16);
  k->written[2] = true;
  k->grid[0] = 2, k->grid[1] = 1, k->grid[2] = 1;
  k->block[0] = 128, k->block[1] = 1, k->block[2] = 1;

  Thunk *w = &entry[1];
  w->kind = THUNK_WHILE;
  w->annotation = arena_strdup(ar, "while.2");
  w->cond_result = sl(3, 64, 1);
  w->trip_count = 5;
  w->cond = ARENA_NEW(ar, ThunkSeq);
  w->cond->n = 1;
  w->cond->thunks = ARENA_ARRAY(ar, Thunk, 1);
  Thunk *ck = &w->cond->thunks[0];
  ck->kind = THUNK_KERNEL;
  ck->kernel_name = arena_strdup(ar, "cond_k");
  ck->nargs = 1;
  ck->args = ARENA_ARRAY(ar, BufSlice, 1);
  ck->written = ARENA_ARRAY(ar, bool, 1);
  ck->args[0] = sl(3, 64, 1);
  ck->written[0] = true;
  for (int j = 0; j < 3; j++)
    ck->grid[j] = ck->block[j] = 1;
  w->body = ARENA_NEW(ar, ThunkSeq);
  w->body->n = 1;
  w->body->thunks = ARENA_ARRAY(ar, Thunk, 1);
  w->body->thunks[0] = (Thunk){.kind = THUNK_COPY, .src = sl(3, 0, 16),
                               .dst = sl(2, 0, 16), .trip_count = -1};

  Thunk *c = &entry[2];
  c->kind = THUNK_CONDITIONAL;
  c->branch_index = sl(3, 64, 1);
  c->index_is_pred = true;
  c->trip_count = -1;
  c->nbranches = 2;
  c->branches = ARENA_ARRAY(ar, ThunkSeq, 2);
  c->branches[0].n = 1;
  c->branches[0].thunks = ARENA_ARRAY(ar, Thunk, 1);
  c->branches[0].thunks[0] = (Thunk){.kind = THUNK_MEMSET32,
                                     .dst = sl(3, 0, 16), .trip_count = -1};
  k->trip_count = -1;
  ck->trip_count = -1;
  a->entry.n = 3;
  a->entry.thunks = entry;

  a->nconsts = 1;
  a->consts = ARENA_ARRAY(ar, ArtConstant, 1);
  a->consts[0].slice = sl(1, 0, 16);
  a->consts[0].bytes = arena_alloc(ar, 16);
  for (int j = 0; j < 16; j++)
    a->consts[0].bytes[j] = (uint8_t)(j * 17);
  a->nparams = 1;
  a->params = ARENA_ARRAY(ar, ArtLeaf, 1);
  a->params[0] = (ArtLeaf){sl(0, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  a->noutputs = 1;
  a->outputs = ARENA_ARRAY(ar, ArtLeaf, 1);
  a->outputs[0] = (ArtLeaf){sl(2, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  a->original_hlo = arena_strdup(ar, "HloModule sample\n\nENTRY e {\n}\n");
  a->optimized_hlo = NULL;
  return a;
}

Test(thunk_file, round_trip) {
  Artifact *a = sample();
  Diag d = {0};
  cr_assert(artifact_validate(a, &d), "%s", d.msg);
  StrBuf b = serialized(a);
  cr_assert(strncmp(b.s, "XHLO-THUNKS 5\n", 14) == 0);
  Artifact *r = artifact_parse(b.s, b.len, "t.thunks", &d);
  cr_assert_not_null(r, "%s", d.msg);
  cr_assert_str_eq(r->module_name, "sample");
  cr_assert_eq(r->kernel_checksum, 0x0123456789abcdefull);
  cr_assert_eq(r->nallocs, 4);
  cr_assert_eq(r->allocs[2].flags, ALLOC_OUTPUT | ALLOC_MAYBE_LIVE_OUT);
  cr_assert_eq(r->entry.n, 3);
  cr_assert_eq(r->entry.thunks[1].trip_count, 5);
  cr_assert_eq(r->entry.thunks[1].body->thunks[0].kind, THUNK_COPY);
  cr_assert(r->entry.thunks[0].written[2] && !r->entry.thunks[0].written[0]);
  cr_assert_eq(r->consts[0].bytes[15], 255);
  cr_assert_null(r->optimized_hlo);
  cr_assert_str_eq(r->original_hlo, a->original_hlo);
  StrBuf b2 = serialized(r);
  cr_assert_eq(b.len, b2.len);
  cr_assert(memcmp(b.s, b2.s, b.len) == 0);
  sb_free(&b);
  sb_free(&b2);
  artifact_free(a);
  artifact_free(r);
}

Test(thunk_file, every_byte_flip_refused) {
  Artifact *a = sample();
  StrBuf b = serialized(a);
  char *copy = xmalloc(b.len);
  for (size_t k = 0; k < b.len; k++) {
    static const unsigned char masks[] = {0x01, 0x20, 0xff};
    for (size_t m = 0; m < sizeof masks; m++) {
      memcpy(copy, b.s, b.len);
      copy[k] = (char)(copy[k] ^ masks[m]);
      expect_refused(copy, b.len, NULL);
    }
  }
  free(copy);
  sb_free(&b);
  artifact_free(a);
}

/* The body parser on its own: flips with the checksum made to match again
 * must never crash; whatever is accepted must read back to the same file. */
Test(thunk_file, byte_flips_behind_a_good_checksum) {
  Artifact *a = sample();
  StrBuf b = serialized(a);
  char *copy = xmalloc(b.len);
  int accepted = 0;
  for (size_t k = 14; k + 26 < b.len; k++) {
    memcpy(copy, b.s, b.len);
    copy[k] = (char)(copy[k] ^ 0x04);
    fix_checksum(copy, b.len);
    Diag d = {0};
    Artifact *r = artifact_parse(copy, b.len, "t.thunks", &d);
    if (r) {
      accepted++;
      StrBuf again = serialized(r);
      cr_assert_eq(again.len, b.len);
      cr_assert(memcmp(again.s, copy, b.len) == 0);
      sb_free(&again);
      artifact_free(r);
    } else {
      cr_assert(d.has_error);
    }
    diag_clear(&d);
  }
  /* Flips inside names and HLO text are harmless and read back. */
  cr_assert_gt(accepted, 0);
  free(copy);
  sb_free(&b);
  artifact_free(a);
}

Test(thunk_file, every_truncation_refused) {
  Artifact *a = sample();
  StrBuf b = serialized(a);
  for (size_t n = 0; n < b.len; n++) {
    char *copy = xmalloc(n ? n : 1);
    memcpy(copy, b.s, n);
    expect_refused(copy, n, NULL);
    free(copy);
  }
  expect_refused(b.s, b.len - 1, "truncated");
  expect_refused(b.s, 100, "truncated");
  sb_free(&b);
  artifact_free(a);
}

Test(thunk_file, magic_version_checksum_garbage) {
  Artifact *a = sample();
  StrBuf b = serialized(a);
  expect_refused("HloModule m\n", 12, "not a thunk file");
  expect_refused("", 0, "not a thunk file");
  char *copy = xmalloc(b.len + 64);
  memcpy(copy, b.s, b.len);
  copy[12] = '1';
  expect_refused(copy, b.len, "version 1; this build reads version 5");
  memcpy(copy, b.s, b.len);
  copy[b.len - 2] = copy[b.len - 2] == '0' ? '1' : '0';
  expect_refused(copy, b.len, "corrupted");
  /* Trailing garbage after the checksum line. */
  memcpy(copy, b.s, b.len);
  memcpy(copy + b.len, "x\n", 2);
  expect_refused(copy, b.len + 2, NULL);
  /* Garbage between the last section and the checksum line, even with a
   * checksum that covers it. */
  size_t body = b.len - 26;
  memcpy(copy, b.s, body);
  memcpy(copy + body, "junk\n", 5);
  memcpy(copy + body + 5, b.s + body, 26);
  fix_checksum(copy, b.len + 5);
  expect_refused(copy, b.len + 5, "unexpected bytes after the last section");
  free(copy);
  sb_free(&b);
  artifact_free(a);
}

Test(thunk_file, counts_are_bounded) {
  StrBuf b = with_checksum("XHLO-THUNKS 5\nmodule 1:m\ntarget 5:sm_90\nhost-cpu - -\n"
                           "kernel-file 4:m.so 0000000000000000\n"
                           "result-shape -\nallocations 2000000000\n");
  expect_refused(b.s, b.len, "expected a number in [0,");
  sb_free(&b);
  StrBuf c = with_checksum("XHLO-THUNKS 5\nmodule 99999999:m\n");
  expect_refused(c.s, c.len, "as long as its length says");
  sb_free(&c);
}

Test(thunk_file, nesting_is_limited) {
  StrBuf t;
  sb_init(&t);
  sb_puts(&t, "XHLO-THUNKS 5\nmodule 1:m\ntarget 5:sm_90\nhost-cpu - -\n"
              "kernel-file 4:m.so 0000000000000000\nresult-shape -\n"
              "allocations 1\nalloc size=8 flags=temp param=0 index={} "
              "param-shape=- output-shape=-\nparameters 0\noutputs 0\n"
              "constants 0\nthunks\n");
  for (int depth = 0; depth < 100; depth++) {
    for (int k = 0; k < depth; k++)
      sb_puts(&t, "  ");
    sb_puts(&t, "seq 1\n");
    for (int k = 0; k < depth; k++)
      sb_puts(&t, "  ");
    sb_puts(&t, "while annotation=- cond-result={index:0, offset:0, size:1} "
                "trip-count=-1\n");
  }
  StrBuf b = with_checksum(t.s);
  expect_refused(b.s, b.len, "nested more than");
  sb_free(&t);
  sb_free(&b);
}

Test(thunk_file, inconsistent_contents) {
  Diag d = {0};
  /* A slice past the end of its allocation. */
  Artifact *a = sample();
  a->entry.thunks[0].args[2] = sl(3, 120, 16);
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(strstr(d.msg, "outside allocation 3"), "%s", d.msg);
  diag_clear(&d);
  StrBuf b = serialized(a);
  expect_refused(b.s, b.len, "inconsistent");
  sb_free(&b);
  artifact_free(a);
  /* A slice naming an allocation that does not exist. */
  a = sample();
  a->entry.thunks[1].body->thunks[0].dst = sl(9, 0, 16);
  b = serialized(a);
  expect_refused(b.s, b.len, "names allocation 9");
  sb_free(&b);
  artifact_free(a);
  /* Kernel arguments missing. */
  a = sample();
  a->entry.thunks[0].args = NULL;
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(strstr(d.msg, "kernel args missing"), "%s", d.msg);
  diag_clear(&d);
  artifact_free(a);
  /* A leaf whose slice is not its shape's size. */
  a = sample();
  a->outputs[0].shape = arena_strdup(a->arena, "f32[5]{0}");
  b = serialized(a);
  expect_refused(b.s, b.len, "(20 bytes)");
  sb_free(&b);
  artifact_free(a);
  /* A constant outside a constant allocation, copies of different sizes. */
  a = sample();
  a->consts[0].slice = sl(3, 0, 16);
  cr_assert_not(artifact_validate(a, &d));
  diag_clear(&d);
  artifact_free(a);
  a = sample();
  a->entry.thunks[1].body->thunks[0].dst = sl(2, 0, 8);
  cr_assert_not(artifact_validate(a, &d));
  diag_clear(&d);
  artifact_free(a);
}

Test(thunk_file, thunk_sequence_text) {
  Artifact *a = sample();
  StrBuf b;
  sb_init(&b);
  artifact_print_thunks(&b, a);
  /* Ids are pre-order over the whole artifact: the conditional is 004. */
  const char *want2 =
      "000: kKernel     \t, kernel = fusion_1, launch dimensions = blocks: "
      "{2, 1, 1}, threads/block: {128, 1, 1}, cluster_dim = nullopt\n"
      "001: kWhile      \t  \ncondition:\n"
      "    002: kKernel\t, kernel = cond_k, launch dimensions = blocks: "
      "{1, 1, 1}, threads/block: {1, 1, 1}, cluster_dim = nullopt\n"
      "  body:\n"
      "    003: kCopy\t, source = {index:3, offset:0, size:16}, destination = "
      "{index:2, offset:0, size:16}\n"
      "004: kConditional\t  \n"
      "  false_branch:\n"
      "    No thunks.\n"
      "  true_branch:\n"
      "    005: kMemset32BitValue\t, value = 0x00000000, destination = "
      "{index:3, offset:0, size:16}\n";
  cr_assert_str_eq(b.s, want2);
  sb_clear(&b);
  artifact_describe(&b, a);
  cr_assert(strstr(b.s, "kernel file: sample.ptx (checksum 0123456789abcdef)"));
  cr_assert(strstr(b.s, "  0: size 16, parameter, parameter 0 at {} of "
                        "f32[4]{0}\n"), "%s", b.s);
  sb_free(&b);
  artifact_free(a);
}

Test(thunk_file, kernel_file_checksum) {
  char dir[] = "/tmp/xhlo-thunks-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char ptx[256], thunks[256];
  snprintf(ptx, sizeof ptx, "%s/sample.ptx", dir);
  snprintf(thunks, sizeof thunks, "%s/sample.thunks", dir);
  const char *text = "// ptx\n.version 8.0\n";
  Artifact *a = sample();
  a->kernel_checksum = checksum64(text, strlen(text));
  FILE *f = fopen(ptx, "wb");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  Diag d = {0};
  size_t len = 0;
  uint8_t *bytes = artifact_read_kernel_file(a, thunks, &len, &d);
  cr_assert_not_null(bytes, "%s", d.msg);
  cr_assert_eq(len, strlen(text));
  cr_assert(memcmp(bytes, text, len) == 0 && bytes[len] == 0);
  free(bytes);
  /* Through the file as well. */
  StrBuf b = serialized(a);
  f = fopen(thunks, "wb");
  fwrite(b.s, 1, b.len, f);
  fclose(f);
  Artifact *r = artifact_read(thunks, &d);
  cr_assert_not_null(r, "%s", d.msg);
  artifact_free(r);
  sb_free(&b);
  /* A kernel file from another compilation. */
  f = fopen(ptx, "wb");
  fputs("// other\n", f);
  fclose(f);
  bytes = artifact_read_kernel_file(a, thunks, &len, &d);
  cr_assert_null(bytes);
  cr_assert(strstr(d.msg, "sample.ptx does not match") &&
            strstr(d.msg, "sample.thunks: checksum"), "%s", d.msg);
  diag_clear(&d);
  unlink(ptx);
  bytes = artifact_read_kernel_file(a, thunks, &len, &d);
  cr_assert_null(bytes);
  cr_assert(strstr(d.msg, "cannot open kernel file"), "%s", d.msg);
  diag_clear(&d);
  unlink(thunks);
  rmdir(dir);
  artifact_free(a);
}

/* The fuzz seed, written by a script from the format description rather
 * than by artifact_serialize, reads and serializes to the same bytes. */
Test(thunk_file, independent_seed_file) {
  Diag d = {0};
  SrcFile *f = srcfile_read("tests/fuzz/corpus/sample.thunks", &d);
  if (!f)
    cr_skip_test("run from the repository root");
  Artifact *a = artifact_parse(f->text, f->len, "sample.thunks", &d);
  cr_assert_not_null(a, "%s", d.msg);
  cr_assert_eq(a->entry.n, 3);
  cr_assert_eq(a->entry.thunks[2].nbranches, 2);
  cr_assert_not(a->entry.thunks[2].index_is_pred);
  StrBuf b = serialized(a);
  cr_assert_eq(b.len, f->len);
  cr_assert(memcmp(b.s, f->text, b.len) == 0);
  sb_free(&b);
  artifact_free(a);
  srcfile_free(f);
}

/* ---- library calls ------------------------------------------------------- */

/* sample() plus a cuBLASLt GEMM (2x2 @ 2x2 + bias, relu) and a 1-D cuDNN
 * forward convolution (x f32[1,1,4], w f32[1,1,2] -> y f32[1,1,3]). */
static Artifact *sample_lib(void) {
  Artifact *a = sample();
  Arena *ar = a->arena;
  Thunk *entry = ARENA_ARRAY(ar, Thunk, 5);
  memcpy(entry, a->entry.thunks, 3 * sizeof *entry);
  Thunk *g = &entry[3];
  *g = (Thunk){.kind = THUNK_GEMM, .trip_count = -1};
  g->annotation = arena_strdup(ar, "custom-call.3");
  g->target = arena_strdup(ar, "__cublas$lt$matmul");
  GemmDesc *gd = g->gemm = ARENA_NEW(ar, GemmDesc);
  gd->batch = 1, gd->m = gd->n = gd->k = 2;
  GemmMatrix rm = {ET_F32, 2, 2, 0, 2, 1};
  gd->a = gd->b = gd->c = gd->d = rm;
  gd->b.row_stride = 1, gd->b.col_stride = 2; /* column-major B */
  gd->alpha_re = 0.5;
  gd->act = LIB_ACT_RELU;
  gd->has_bias = true;
  gd->bias_et = ET_F32;
  gd->allow_tf32 = true;
  for (int k = 0; k < LIB_MAX_SLICES; k++)
    g->lib[k] = sl(-1, 0, 0);
  g->lib[GEMM_A] = sl(0, 0, 16);
  g->lib[GEMM_B] = sl(1, 0, 16);
  g->lib[GEMM_BIAS] = sl(3, 96, 8);
  g->lib[GEMM_D] = sl(3, 0, 16);
  Thunk *c = &entry[4];
  *c = (Thunk){.kind = THUNK_CONV, .trip_count = -1};
  c->annotation = arena_strdup(ar, "custom-call.4");
  c->target = arena_strdup(ar, "__cudnn$convForward");
  ConvDesc *cd = c->conv = ARENA_NEW(ar, ConvDesc);
  cd->kind = CONV_FORWARD;
  cd->nspatial = 1;
  cd->x = (ConvTensor){ET_F32, {1, 1, 4}, {4, 4, 1}};
  cd->w = (ConvTensor){ET_F32, {1, 1, 2}, {2, 2, 1}};
  cd->y = (ConvTensor){ET_F32, {1, 1, 3}, {3, 3, 1}};
  cd->stride[0] = cd->dilation[0] = 1;
  cd->groups = 1;
  cd->alpha = 1;
  for (int k = 0; k < LIB_MAX_SLICES; k++)
    c->lib[k] = sl(-1, 0, 0);
  c->lib[CONV_X] = sl(0, 0, 16);
  c->lib[CONV_W] = sl(1, 0, 8);
  c->lib[CONV_Y] = sl(3, 16, 12);
  a->entry.thunks = entry;
  a->entry.n = 5;
  return a;
}

Test(thunk_file, library_calls_round_trip) {
  Artifact *a = sample_lib();
  Diag d = {0};
  cr_assert(artifact_validate(a, &d), "%s", d.msg);
  StrBuf b = serialized(a);
  Artifact *r = artifact_parse(b.s, b.len, "t.thunks", &d);
  cr_assert_not_null(r, "%s", d.msg);
  const Thunk *g = &r->entry.thunks[3], *c = &r->entry.thunks[4];
  cr_assert_eq(g->kind, THUNK_GEMM);
  cr_assert_str_eq(g->target, "__cublas$lt$matmul");
  cr_assert(g->gemm->alpha_re == 0.5 && g->gemm->beta == 0);
  cr_assert_eq(g->gemm->b.col_stride, 2);
  cr_assert(g->gemm->has_bias && g->gemm->allow_tf32);
  cr_assert_eq(g->gemm->act, LIB_ACT_RELU);
  cr_assert_eq(g->lib[GEMM_C].alloc, -1);
  cr_assert_eq(g->lib[GEMM_BIAS].offset, 96);
  cr_assert_eq(c->kind, THUNK_CONV);
  cr_assert_eq(c->conv->y.dims[2], 3);
  cr_assert_eq(c->lib[CONV_Y].offset, 16);
  StrBuf b2 = serialized(r);
  cr_assert_eq(b.len, b2.len);
  cr_assert(memcmp(b.s, b2.s, b.len) == 0);
  sb_clear(&b2);
  artifact_print_thunks(&b2, r);
  cr_assert(strstr(b2.s, "006: kCublasLtMatmul\t, batch = 1, m = 2, n = 2, k = 2"),
            "%s", b2.s);
  cr_assert(strstr(b2.s, "activation = relu, bias = f32[2], tf32"), "%s", b2.s);
  cr_assert(strstr(b2.s, "007: kConvolution   \t, kind = forward, x = "
                         "f32[1,1,4] strides [4,4,1]"),
            "%s", b2.s);
  sb_free(&b);
  sb_free(&b2);
  artifact_free(a);
  artifact_free(r);
}

Test(thunk_file, library_calls_byte_flips_refused) {
  Artifact *a = sample_lib();
  StrBuf b = serialized(a);
  /* every byte of the gemm and conv lines */
  flips_refused_or_valid(&b, "gemm annotation=", "end-thunks");
  sb_free(&b);
  artifact_free(a);
}

/* sample() plus the runtime's routines: a row max of x f32[2,2] (init
 * -inf) and a top-2 of its rows. */
static Artifact *sample_routines(void) {
  Artifact *a = sample();
  Arena *ar = a->arena;
  Thunk *entry = ARENA_ARRAY(ar, Thunk, 5);
  memcpy(entry, a->entry.thunks, 3 * sizeof *entry);
  Thunk *r = &entry[3];
  *r = (Thunk){.kind = THUNK_ROUTINE, .trip_count = -1};
  r->annotation = arena_strdup(ar, "input_reduce_fusion");
  RoutineDesc *rd = r->routine = ARENA_NEW(ar, RoutineDesc);
  *rd = (RoutineDesc){.kind = ROUTINE_REDUCE, .et = ET_F32, .op = ROUTINE_MAX,
                      .init = -INFINITY, .outer = 2, .size = 2, .inner = 1};
  for (int k = 0; k < LIB_MAX_SLICES; k++)
    r->lib[k] = sl(-1, 0, 0);
  r->lib[ROUTINE_X] = sl(0, 0, 16);
  r->lib[ROUTINE_Y] = sl(3, 0, 8);
  Thunk *t = &entry[4];
  *t = (Thunk){.kind = THUNK_ROUTINE, .trip_count = -1};
  t->annotation = arena_strdup(ar, "wrapped_topk");
  RoutineDesc *td = t->routine = ARENA_NEW(ar, RoutineDesc);
  *td = (RoutineDesc){.kind = ROUTINE_TOPK, .et = ET_F32, .rows = 2, .n = 2, .k = 2,
                      .largest = true};
  for (int k = 0; k < LIB_MAX_SLICES; k++)
    t->lib[k] = sl(-1, 0, 0);
  t->lib[ROUTINE_X] = sl(0, 0, 16);
  t->lib[ROUTINE_Y] = sl(3, 16, 16);
  t->lib[ROUTINE_INDICES] = sl(3, 32, 16);
  a->entry.thunks = entry;
  a->entry.n = 5;
  return a;
}

Test(thunk_file, routines_round_trip) {
  Artifact *a = sample_routines();
  Diag d = {0};
  cr_assert(artifact_validate(a, &d), "%s", d.msg);
  StrBuf b = serialized(a);
  cr_assert(strstr(b.s, "routine annotation=19:input_reduce_fusion kind=reduce et=f32 "
                        "op=max init=fff0000000000000 outer=2 size=2 inner=1\n"),
            "%s", b.s);
  Artifact *r = artifact_parse(b.s, b.len, "t.thunks", &d);
  cr_assert_not_null(r, "%s", d.msg);
  const Thunk *x = &r->entry.thunks[3], *t = &r->entry.thunks[4];
  cr_assert_eq(x->kind, THUNK_ROUTINE);
  cr_assert_eq(x->routine->op, ROUTINE_MAX);
  cr_assert(x->routine->init == -INFINITY);
  cr_assert_eq(x->lib[ROUTINE_INDICES].alloc, -1);
  cr_assert_eq(t->routine->kind, ROUTINE_TOPK);
  cr_assert(t->routine->largest && t->routine->k == 2);
  cr_assert_eq(t->lib[ROUTINE_INDICES].offset, 32);
  StrBuf b2 = serialized(r);
  cr_assert_eq(b.len, b2.len);
  cr_assert(memcmp(b.s, b2.s, b.len) == 0);
  sb_clear(&b2);
  artifact_print_thunks(&b2, r);
  cr_assert(strstr(b2.s, "006: kReduce     \t, reduce = max, type = f32, init = -inf, "
                         "x = [2,2,1] -> [2,1], input = {index:0, offset:0, size:16}"),
            "%s", b2.s);
  cr_assert(strstr(b2.s, "007: kTopK       \t, batch_size = 2, input_size = 2, k = 2, "
                         "largest = true"),
            "%s", b2.s);
  flips_refused_or_valid(&b, "routine annotation=", "end-thunks");
  sb_free(&b);
  sb_free(&b2);
  artifact_free(a);
  artifact_free(r);
  a = sample_routines();
  a->entry.thunks[4].lib[ROUTINE_Y] = sl(3, 16, 12);  /* values need 16 bytes */
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(strstr(d.msg, "the values slice has 12 bytes, not the 16"), "%s", d.msg);
  diag_clear(&d);
  b = serialized(a);
  expect_refused(b.s, b.len, "inconsistent");
  sb_free(&b);
  artifact_free(a);
}

Test(thunk_file, library_calls_inconsistent) {
  Diag d = {0};
  Artifact *a = sample_lib();
  a->entry.thunks[3].lib[GEMM_A] = sl(0, 0, 12);    /* A needs 16 bytes */
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(strstr(d.msg, "the A operand spans 16 bytes but its slice has 12"),
            "%s", d.msg);
  diag_clear(&d);
  StrBuf b = serialized(a);
  expect_refused(b.s, b.len, "inconsistent");
  sb_free(&b);
  artifact_free(a);
  a = sample_lib();
  a->entry.thunks[3].gemm->beta = 1;                /* C needed */
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(strstr(d.msg, "the C slice is missing"), "%s", d.msg);
  diag_clear(&d);
  artifact_free(a);
  a = sample_lib();
  a->entry.thunks[3].gemm->a.row_stride = 3;        /* neither major */
  a->entry.thunks[3].gemm->a.col_stride = 2;
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(strstr(d.msg, "neither row- nor column-major"), "%s", d.msg);
  diag_clear(&d);
  artifact_free(a);
  a = sample_lib();
  a->entry.thunks[4].conv->pad_hi[0] = 1;           /* y would be 4 long */
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(strstr(d.msg, "spatial dimension 0 of y is 3, the window gives 4"),
            "%s", d.msg);
  diag_clear(&d);
  artifact_free(a);
  a = sample_lib();
  a->entry.thunks[4].conv->kind = CONV_BACKWARD_INPUT;
  a->entry.thunks[4].conv->act = LIB_ACT_RELU;      /* epilogue on backward */
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(strstr(d.msg, "an epilogue on a backward_input"), "%s", d.msg);
  diag_clear(&d);
  artifact_free(a);
}
