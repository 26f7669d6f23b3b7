/*
 * test_command_buffer.c - command buffers in artifacts: the conversion pass
 * (lib/runtime/command_buffer_pass.c: which runs become command buffers,
 * by type and minimum size, nested sequences too), the --command-buffer type
 * list, the COMMAND_BUFFER thunk in the file (round trip, every byte flip
 * and truncation refused, malformed command buffers refused with clear
 * messages) and in the thunk_sequence text.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "../../lib/runtime/thunks.h"
#include "thunk_test_util.h"

static Thunk kernel(Arena *ar, const char *name, int64_t off) {
  Thunk k = {.kind = THUNK_KERNEL, .trip_count = -1};
  k.kernel_name = arena_strdup(ar, name);
  k.annotation = arena_strdup(ar, name);
  k.nargs = 2;
  k.args = ARENA_ARRAY(ar, BufSlice, 2);
  k.written = ARENA_ARRAY(ar, bool, 2);
  k.args[0] = sl(0, 0, 16);
  k.args[1] = sl(1, off, 16);
  k.written[1] = true;
  for (int j = 0; j < 3; j++)
    k.grid[j] = k.block[j] = 1;
  return k;
}

/* entry: kernel a, copy, memset, kernel b, gemm-less while (cond: kernel c;
 * body: kernel d, copy, kernel e), kernel f.  Allocation 0 is the
 * parameter, 1 a temp of 256 bytes, 2 the output. */
static Artifact *sample(void) {
  Artifact *a = artifact_new();
  Arena *ar = a->arena;
  a->module_name = arena_strdup(ar, "cb");
  a->target = arena_strdup(ar, "sm_90");
  a->kernel_file = arena_strdup(ar, "cb.ptx");
  a->result_shape = arena_strdup(ar, "f32[4]{0}");
  a->nallocs = 3;
  a->allocs = ARENA_ARRAY(ar, BufAlloc, 3);
  a->allocs[0] = (BufAlloc){.size = 16, .flags = ALLOC_PARAMETER,
                            .param_shape = arena_strdup(ar, "f32[4]{0}")};
  a->allocs[1] = (BufAlloc){.size = 256, .flags = ALLOC_TEMP};
  a->allocs[2] = (BufAlloc){.size = 16, .flags = ALLOC_OUTPUT,
                            .output_shape = arena_strdup(ar, "f32[4]{0}")};
  Thunk *e = ARENA_ARRAY(ar, Thunk, 6);
  e[0] = kernel(ar, "a", 0);
  e[1] = (Thunk){.kind = THUNK_COPY, .src = sl(1, 0, 16), .dst = sl(1, 16, 16),
                 .trip_count = -1};
  e[2] = (Thunk){.kind = THUNK_MEMSET32, .dst = sl(1, 32, 16), .memset_value = 7,
                 .trip_count = -1};
  e[3] = kernel(ar, "b", 48);
  Thunk *w = &e[4];
  *w = (Thunk){.kind = THUNK_WHILE, .cond_result = sl(1, 128, 1), .trip_count = 3};
  w->cond = ARENA_NEW(ar, ThunkSeq);
  w->cond->n = 1;
  w->cond->thunks = ARENA_NEW(ar, Thunk);
  w->cond->thunks[0] = kernel(ar, "c", 128);
  w->body = ARENA_NEW(ar, ThunkSeq);
  w->body->n = 3;
  w->body->thunks = ARENA_ARRAY(ar, Thunk, 3);
  w->body->thunks[0] = kernel(ar, "d", 64);
  w->body->thunks[1] = (Thunk){.kind = THUNK_COPY, .src = sl(1, 64, 16),
                               .dst = sl(1, 80, 16), .trip_count = -1};
  w->body->thunks[2] = kernel(ar, "e", 96);
  e[5] = kernel(ar, "f", 0);
  e[5].args[1] = sl(2, 0, 16);
  a->entry.n = 6;
  a->entry.thunks = e;
  a->nparams = 1;
  a->params = ARENA_ARRAY(ar, ArtLeaf, 1);
  a->params[0] = (ArtLeaf){sl(0, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  a->noutputs = 1;
  a->outputs = ARENA_ARRAY(ar, ArtLeaf, 1);
  a->outputs[0] = (ArtLeaf){sl(2, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  return a;
}

Test(command_buffer, types) {
  Diag d = {0};
  unsigned t = 99;
  cr_assert(cmdbuf_parse_types("", &t, &d));
  cr_assert_eq(t, 0u);
  cr_assert(cmdbuf_parse_types("FUSION,cublasLt,copy", &t, &d));
  cr_assert_eq(t, (unsigned)(CMDBUF_FUSION | CMDBUF_CUBLASLT | CMDBUF_COPY));
  cr_assert(cmdbuf_parse_types("conditionals,WHILE,custom_call,collectives", &t, &d));
  cr_assert_eq(t, (unsigned)(CMDBUF_CONDITIONAL | CMDBUF_WHILE | CMDBUF_CUSTOM_CALL |
                             CMDBUF_COLLECTIVES));
  cr_assert_not(cmdbuf_parse_types("fusion,graphs", &t, &d));
  cr_assert(strstr(d.msg, "unknown command buffer type 'graphs'"), "%s", d.msg);
  diag_clear(&d);
}

Test(command_buffer, runs_by_size_and_type) {
  /* min size 4: the entry's first four thunks; the loop body has only 3 */
  Artifact *a = sample();
  cr_assert_eq(cmdbuf_convert(a, CMDBUF_DEFAULT_TYPES, 4), 1);
  cr_assert_eq(a->entry.n, 3);
  Thunk *cb = &a->entry.thunks[0];
  cr_assert_eq(cb->kind, THUNK_COMMAND_BUFFER);
  cr_assert_eq(cb->commands->n, 4);
  cr_assert_str_eq(cb->commands->thunks[0].kernel_name, "a");
  cr_assert_eq(cb->commands->thunks[2].kind, THUNK_MEMSET32);
  cr_assert_str_eq(cb->commands->thunks[3].kernel_name, "b");
  cr_assert_eq(a->entry.thunks[1].kind, THUNK_WHILE);
  cr_assert_eq(a->entry.thunks[1].body->n, 3);
  cr_assert_eq(a->entry.thunks[2].kind, THUNK_KERNEL);
  Diag d = {0};
  cr_assert(artifact_validate(a, &d), "%s", d.msg);
  artifact_free(a);

  /* min size 1: every run, in the loop's condition and body too */
  a = sample();
  cr_assert_eq(cmdbuf_convert(a, CMDBUF_DEFAULT_TYPES, 1), 4);
  cr_assert_eq(a->entry.thunks[1].cond->thunks[0].kind, THUNK_COMMAND_BUFFER);
  cr_assert_eq(a->entry.thunks[1].body->n, 1);
  cr_assert_eq(a->entry.thunks[1].body->thunks[0].commands->n, 3);
  cr_assert_eq(a->entry.thunks[2].commands->n, 1);
  artifact_free(a);

  /* kernels only: copies and memsets break the runs */
  a = sample();
  cr_assert_eq(cmdbuf_convert(a, CMDBUF_FUSION, 2), 0);
  cr_assert_eq(a->entry.n, 6);
  cr_assert_eq(cmdbuf_convert(a, CMDBUF_FUSION, 1), 6);
  cr_assert_eq(a->entry.n, 6);
  cr_assert_eq(a->entry.thunks[1].kind, THUNK_COPY);
  cr_assert_eq(a->entry.thunks[0].commands->n, 1);
  artifact_free(a);

  /* no types: nothing changes; the default minimum is XLA's 5 */
  a = sample();
  cr_assert_eq(cmdbuf_convert(a, 0, 1), 0);
  cr_assert_eq(cmdbuf_convert(a, CMDBUF_DEFAULT_TYPES, CMDBUF_DEFAULT_MIN_SIZE), 0);
  cr_assert_eq(a->entry.n, 6);
  artifact_free(a);
}

Test(command_buffer, text) {
  Artifact *a = sample();
  cmdbuf_convert(a, CMDBUF_DEFAULT_TYPES, 3);
  StrBuf b;
  sb_init(&b);
  artifact_print_thunks(&b, a);
  const char *want =
      "000: kCommandBuffer\t\n"
      "  001: kKernel          \t, kernel = a, launch dimensions = blocks: {1, 1, 1}, "
      "threads/block: {1, 1, 1}, cluster_dim = nullopt\n"
      "  002: kCopy            \t, source = {index:1, offset:0, size:16}, destination = "
      "{index:1, offset:16, size:16}\n"
      "  003: kMemset32BitValue\t, value = 0x00000007, destination = {index:1, offset:32, "
      "size:16}\n"
      "  004: kKernel          \t, kernel = b, launch dimensions = blocks: {1, 1, 1}, "
      "threads/block: {1, 1, 1}, cluster_dim = nullopt\n"
      "005: kWhile        \t  \n"
      "condition:\n"
      "    006: kKernel\t, kernel = c, launch dimensions = blocks: {1, 1, 1}, threads/block: "
      "{1, 1, 1}, cluster_dim = nullopt\n"
      "  body:\n"
      "    007: kCommandBuffer\t\n"
      "      008: kKernel\t, kernel = d, launch dimensions = blocks: {1, 1, 1}, "
      "threads/block: {1, 1, 1}, cluster_dim = nullopt\n"
      "      009: kCopy  \t, source = {index:1, offset:64, size:16}, destination = "
      "{index:1, offset:80, size:16}\n"
      "      010: kKernel\t, kernel = e, launch dimensions = blocks: {1, 1, 1}, "
      "threads/block: {1, 1, 1}, cluster_dim = nullopt\n"
      "011: kKernel       \t, kernel = f, launch dimensions = blocks: {1, 1, 1}, "
      "threads/block: {1, 1, 1}, cluster_dim = nullopt\n";
  cr_assert_str_eq(b.s, want);
  sb_free(&b);
  artifact_free(a);
}

Test(command_buffer, file_round_trip) {
  Artifact *a = sample();
  cmdbuf_convert(a, CMDBUF_DEFAULT_TYPES, 1);
  Diag d = {0};
  cr_assert(artifact_validate(a, &d), "%s", d.msg);
  StrBuf b = serialized(a);
  cr_assert(strstr(b.s, "\ncommand-buffer commands=4\n  seq 4\n  kernel name=1:a "),
            "%s", b.s);
  Artifact *r = artifact_parse(b.s, b.len, "t.thunks", &d);
  cr_assert_not_null(r, "%s", d.msg);
  cr_assert_eq(r->entry.thunks[0].kind, THUNK_COMMAND_BUFFER);
  cr_assert_eq(r->entry.thunks[0].commands->n, 4);
  cr_assert_eq(r->entry.thunks[0].commands->thunks[2].memset_value, 7u);
  cr_assert_eq(r->entry.thunks[1].body->thunks[0].commands->n, 3);
  StrBuf b2 = serialized(r);
  cr_assert_eq(b.len, b2.len);
  cr_assert(memcmp(b.s, b2.s, b.len) == 0);
  sb_free(&b2);
  artifact_free(r);

  /* every byte flip and every truncation is refused */
  char *copy = xmalloc(b.len);
  for (size_t k = 0; k < b.len; k++) {
    memcpy(copy, b.s, b.len);
    copy[k] = (char)(copy[k] ^ 0x01);
    expect_refused(copy, b.len, NULL);
    expect_refused(b.s, k, NULL);
  }
  free(copy);
  sb_free(&b);
  artifact_free(a);
}

/* A file around one entry sequence (text after "thunks\n"). */
static StrBuf file_with(const char *seq) {
  StrBuf t;
  sb_init(&t);
  sb_puts(&t, "XHLO-THUNKS 5\nmodule 1:m\ntarget 5:sm_90\nhost-cpu - -\n"
              "kernel-file 4:m.so 0000000000000000\nresult-shape 5:s32[]\n"
              "allocations 1\nalloc size=64 flags=output param=0 index={} "
              "param-shape=- output-shape=5:s32[]\nparameters 0\noutputs 1\n"
              "leaf {index:0, offset:0, size:4} 5:s32[]\nconstants 0\nthunks\n");
  sb_puts(&t, seq);
  sb_puts(&t, "end-thunks\nsection original-hlo -\n\nsection optimized-hlo -\n\n");
  StrBuf b = with_checksum(t.s);
  sb_free(&t);
  return b;
}

Test(command_buffer, malformed_refused) {
  const char *memset = "memset32 annotation=- dst={index:0, offset:0, size:4} value=1\n";
  StrBuf t;
  sb_init(&t);
  /* the good one first, so the refusals below are about what they change */
  sb_printf(&t, "seq 1\ncommand-buffer commands=1\n  seq 1\n  %s", memset);
  StrBuf b = file_with(t.s);
  Diag d = {0};
  Artifact *a = artifact_parse(b.s, b.len, "t.thunks", &d);
  cr_assert_not_null(a, "%s", d.msg);
  artifact_free(a);
  sb_free(&b);

  struct {
    const char *seq, *want;
  } bad[] = {
      {"seq 1\ncommand-buffer commands=0\n  seq 0\n", "at least one command"},
      {"seq 1\ncommand-buffer commands=2\n  seq 1\n  MEMSET", "as many commands"},
      {"seq 1\ncommand-buffer commands=1\n  seq 1\n  while annotation=- cond-result="
       "{index:0, offset:0, size:1} trip-count=-1\n    seq 0\n    seq 0\n",
       "no control flow or nested command buffer"},
      {"seq 1\ncommand-buffer commands=1\n  seq 1\n  command-buffer commands=1\n"
       "    seq 1\n    MEMSET", "no control flow or nested command buffer"},
      {"seq 1\ncommand-buffer commands=1\nseq 1\nMEMSET", "expected"},
      {"seq 1\ncommand-buffer commands=1 \n  seq 1\n  MEMSET", "expected"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    sb_clear(&t);
    const char *s = bad[k].seq;
    const char *m = strstr(s, "MEMSET");
    if (m) {
      sb_putn(&t, s, (size_t)(m - s));
      /* the memset one level deeper than the marker's indentation says */
      sb_puts(&t, memset);
    } else {
      sb_puts(&t, s);
    }
    b = file_with(t.s);
    expect_refused(b.s, b.len, bad[k].want);
    sb_free(&b);
  }
  sb_free(&t);

  /* artifact_validate refuses what a writer might build wrongly */
  Artifact *x = sample();
  cmdbuf_convert(x, CMDBUF_DEFAULT_TYPES, 4);
  x->entry.thunks[0].commands->thunks[1] = x->entry.thunks[1];
  cr_assert_not(artifact_validate(x, &d));
  cr_assert(strstr(d.msg, "command buffer thunk holds a while thunk"), "%s", d.msg);
  diag_clear(&d);
  x->entry.thunks[0].commands->n = 0;
  cr_assert_not(artifact_validate(x, &d));
  cr_assert(strstr(d.msg, "with no commands"), "%s", d.msg);
  diag_clear(&d);
  artifact_free(x);
}
