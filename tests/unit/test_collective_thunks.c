/*
 * test_collective_thunks.c - collective thunks in the artifact file
 * (lib/runtime/thunk_file.c, artifact.c): round trip, the thunk_sequence
 * text (kAllReduce, kCollectivePermute, kReplicaId, an asynchronous pair's
 * start and kAsyncDone), byte flips refused or read back valid, and
 * inconsistent descriptions refused.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../lib/runtime/thunks.h"
#include "thunk_test_util.h"

static CollDesc *desc(Arena *ar, CollKind kind, int n) {
  CollDesc *c = ARENA_NEW(ar, CollDesc);
  c->kind = kind;
  c->dim = -1;
  c->channel_id = -1;
  c->async_id = -1;
  c->replica_count = 4;
  c->num_partitions = 1;
  c->n = n;
  int nout = n ? n : 1;
  c->in = ARENA_ARRAY(ar, BufSlice, n + 1);
  c->in_shape = ARENA_ARRAY(ar, char *, n + 1);
  c->out = ARENA_ARRAY(ar, BufSlice, nout);
  c->out_shape = ARENA_ARRAY(ar, char *, nout);
  return c;
}

/* An all-reduce over {{0,2},{1,3}}, a permute with two pairs started
 * asynchronously (pair 9), a replica-id, the permute's done thunk:
 * parameter 0, output 1, temp 2. */
static Artifact *sample(void) {
  Artifact *a = artifact_new();
  Arena *ar = a->arena;
  a->module_name = arena_strdup(ar, "coll");
  a->target = arena_strdup(ar, "host");
  a->kernel_file = arena_strdup(ar, "coll.host.so");
  a->result_shape = arena_strdup(ar, "f32[4]{0}");
  a->nallocs = 3;
  a->allocs = ARENA_ARRAY(ar, BufAlloc, 3);
  a->allocs[0] = (BufAlloc){.size = 16, .flags = ALLOC_PARAMETER,
                            .param_shape = arena_strdup(ar, "f32[4]{0}")};
  a->allocs[1] = (BufAlloc){.size = 16, .flags = ALLOC_OUTPUT,
                            .output_shape = arena_strdup(ar, "f32[4]{0}")};
  a->allocs[2] = (BufAlloc){.size = 64, .flags = ALLOC_TEMP};
  Thunk *t = ARENA_ARRAY(ar, Thunk, 4);
  CollDesc *c = desc(ar, COLL_ALL_REDUCE, 1);
  c->reduction = COLL_MAX;
  c->mode = CGM_CROSS_REPLICA;
  c->ngroups = 2;
  c->group_sizes = ARENA_ARRAY(ar, int64_t, 2);
  c->groups = ARENA_ARRAY(ar, int64_t *, 2);
  for (int g = 0; g < 2; g++) {
    c->group_sizes[g] = 2;
    c->groups[g] = ARENA_ARRAY(ar, int64_t, 2);
    c->groups[g][0] = g;
    c->groups[g][1] = g + 2;
  }
  c->in[0] = sl(0, 0, 16);
  c->in_shape[0] = arena_strdup(ar, "f32[4]{0}");
  c->out[0] = sl(2, 0, 16);
  c->out_shape[0] = arena_strdup(ar, "f32[4]{0}");
  t[0] = (Thunk){.kind = THUNK_COLLECTIVE, .trip_count = -1, .coll = c,
                 .annotation = arena_strdup(ar, "ar")};
  CollDesc *p = desc(ar, COLL_COLLECTIVE_PERMUTE, 1);
  p->mode = CGM_CROSS_PARTITION;
  p->channel_id = 7;
  p->npairs = 2;
  p->pairs = arena_array(ar, 2, sizeof *p->pairs);
  p->pairs[0][0] = 0, p->pairs[0][1] = 1;
  p->pairs[1][0] = 1, p->pairs[1][1] = 0;
  p->in[0] = sl(2, 0, 16);
  p->in_shape[0] = arena_strdup(ar, "f32[4]{0}");
  p->out[0] = sl(1, 0, 16);
  p->out_shape[0] = arena_strdup(ar, "f32[4]{0}");
  p->async_id = 9;
  t[1] = (Thunk){.kind = THUNK_COLLECTIVE, .trip_count = -1, .coll = p,
                 .annotation = arena_strdup(ar, "cp")};
  CollDesc *r = desc(ar, COLL_REPLICA_ID, 0);
  r->out[0] = sl(2, 32, 4);
  r->out_shape[0] = arena_strdup(ar, "u32[]");
  t[2] = (Thunk){.kind = THUNK_COLLECTIVE, .trip_count = -1, .coll = r,
                 .annotation = arena_strdup(ar, "id")};
  CollDesc *w = desc(ar, COLL_COLLECTIVE_PERMUTE, 0);
  w->async_id = 9;
  w->done = true;
  t[3] = (Thunk){.kind = THUNK_COLLECTIVE, .trip_count = -1, .coll = w,
                 .annotation = arena_strdup(ar, "cp-done")};
  a->entry.n = 4;
  a->entry.thunks = t;
  a->nparams = 1;
  a->params = ARENA_ARRAY(ar, ArtLeaf, 1);
  a->params[0] = (ArtLeaf){sl(0, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  a->noutputs = 1;
  a->outputs = ARENA_ARRAY(ar, ArtLeaf, 1);
  a->outputs[0] = (ArtLeaf){sl(1, 0, 16), arena_strdup(ar, "f32[4]{0}")};
  return a;
}

Test(collective_thunks, round_trip_and_text) {
  Artifact *a = sample();
  Diag d = {0};
  cr_assert(artifact_validate(a, &d), "%s", d.msg);
  StrBuf b = serialized(a);
  cr_assert(strstr(b.s, "collective op=all-reduce annotation=2:ar reduction=max "
                        "dim=-1 channel=-1 mode=cross-replica replicas=4 "
                        "partitions=1 groups=2 pairs=0 operands=1 async=-1 done=0\n"),
            "%s", b.s);
  cr_assert(strstr(b.s, "operands=1 async=9 done=0\n"), "%s", b.s);
  cr_assert(strstr(b.s, "collective op=collective-permute annotation=7:cp-done "), "%s", b.s);
  cr_assert(strstr(b.s, "operands=0 async=9 done=1\n"), "%s", b.s);
  Artifact *r = artifact_parse(b.s, b.len, "t.thunks", &d);
  cr_assert_not_null(r, "%s", d.msg);
  const CollDesc *c = r->entry.thunks[0].coll;
  cr_assert_eq(c->kind, COLL_ALL_REDUCE);
  cr_assert_eq(c->reduction, COLL_MAX);
  cr_assert_eq(c->groups[1][1], 3);
  cr_assert_eq(r->entry.thunks[1].coll->pairs[1][0], 1);
  cr_assert_eq(r->entry.thunks[1].coll->channel_id, 7);
  cr_assert_eq(r->entry.thunks[2].coll->out[0].offset, 32);
  cr_assert_eq(r->entry.thunks[1].coll->async_id, 9);
  cr_assert(r->entry.thunks[3].coll->done);
  cr_assert_eq(r->entry.thunks[3].coll->async_id, 9);
  StrBuf b2 = serialized(r);
  cr_assert_eq(b.len, b2.len);
  cr_assert(memcmp(b.s, b2.s, b.len) == 0);
  sb_clear(&b2);
  artifact_print_thunks(&b2, r);
  cr_assert(strstr(b2.s, "000: kAllReduce        \t, replica_groups = {{0,2},{1,3}}, "
                         "group_mode = cross-replica, reduction = max, operand 0 = "
                         "{index:0, offset:0, size:16} f32[4]{0}"), "%s", b2.s);
  cr_assert(strstr(b2.s, "001: kCollectivePermute\t, source_target_pairs = "
                         "{{0,1},{1,0}}, group_mode = cross-partition, channel_id = 7"),
            "%s", b2.s);
  cr_assert(strstr(b2.s, "f32[4]{0}, async_id = 9\n"), "%s", b2.s);
  cr_assert(strstr(b2.s, "003: kAsyncDone        \t, async_id = 9, of = kCollectivePermute\n"),
            "%s", b2.s);
  cr_assert(strstr(b2.s, "002: kReplicaId        \t, destination = {index:2, offset:32, "
                         "size:4}"), "%s", b2.s);
  sb_free(&b);
  sb_free(&b2);
  artifact_free(a);
  artifact_free(r);
}

Test(collective_thunks, byte_flips_refused_or_valid) {
  Artifact *a = sample();
  StrBuf b = serialized(a);
  flips_refused_or_valid(&b, "collective op=", "end-thunks");
  sb_free(&b);
  artifact_free(a);
}

Test(collective_thunks, inconsistent_refused) {
  Artifact *a = sample();
  Diag d = {0};
  a->entry.thunks[2].coll->out[0].size = 8;   /* replica-id of 8 bytes */
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(strstr(d.msg, "replica-id result is 8 bytes"), "%s", d.msg);
  diag_clear(&d);
  a->entry.thunks[2].coll->out[0].size = 4;
  a->entry.thunks[0].coll->in[0] = sl(0, 8, 16);  /* past its allocation */
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(d.msg && strstr(d.msg, "collective operand"), "%s", d.msg);
  diag_clear(&d);
  a->entry.thunks[0].coll->in[0] = sl(0, 0, 16);
  a->entry.thunks[3].coll->n = 1;                  /* a done thunk with an operand */
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(d.msg && strstr(d.msg, "malformed done thunk"), "%s", d.msg);
  diag_clear(&d);
  a->entry.thunks[3].coll->n = 0;
  a->entry.thunks[2].coll->async_id = 3;           /* an asynchronous replica-id */
  cr_assert_not(artifact_validate(a, &d));
  cr_assert(d.msg && strstr(d.msg, "malformed asynchronous replica-id"), "%s", d.msg);
  diag_clear(&d);
  artifact_free(a);
}
