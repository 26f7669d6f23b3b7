/*
 * test_collective_nccl.c - what the CUDA platform's NCCL path decides
 * without a GPU or NCCL: which collective thunks NCCL takes
 * (collective_nccl.c: nccl_coll_takes) and which stay on the host path, and
 * how a group's members share an id (collective_exec.c: coll_group_share,
 * over the run's exchange).  tests/check-nccl.sh runs them on mock GPUs.
 */
#include <criterion/criterion.h>

#include <pthread.h>
#include <string.h>

#include "../../lib/runtime/collective_exec.h"
#include "../../lib/runtime/cuda_libs.h"

/* Thunk `kind` of one operand and result (shapes as text); the result's
 * slice right after the operand's, or on it (in_place), or 4 bytes into it
 * (overlap). */
static bool takes(CollKind kind, CollReduction red, int64_t dim, const char *in,
                  const char *out, int where) {
  Arena *a = arena_new();
  CollDesc *c = ARENA_NEW(a, CollDesc);
  c->kind = kind;
  c->reduction = red;
  c->dim = dim;
  c->channel_id = -1;
  c->replica_count = 4;
  c->num_partitions = 1;
  c->n = 1;
  c->in = ARENA_ARRAY(a, BufSlice, 1);
  c->out = ARENA_ARRAY(a, BufSlice, 1);
  c->in_shape = ARENA_ARRAY(a, char *, 1);
  c->out_shape = ARENA_ARRAY(a, char *, 1);
  c->in_shape[0] = arena_strdup(a, in);
  c->out_shape[0] = arena_strdup(a, out);
  Diag d = {0};
  Shape *is = hlo_parse_shape(a, in, &d), *os = hlo_parse_shape(a, out, &d);
  cr_assert(is && os, "%s", d.msg ? d.msg : "");
  c->in[0] = (BufSlice){0, 0, shape_byte_size(is)};
  int64_t off = where == 1 ? 0 : where == 2 ? 4 : 1024;
  c->out[0] = (BufSlice){0, off, shape_byte_size(os)};
  Thunk t = {.kind = THUNK_COLLECTIVE, .coll = c, .annotation = arena_strdup(a, "c")};
  CollExec *x = coll_prepare(a, &t, NULL, &d);
  cr_assert(x, "coll_prepare: %s", d.msg ? d.msg : "");
  cr_assert(!x->on_device, "no platform: the host path");
  bool r = nccl_coll_takes(x);
  coll_free(x);
  diag_clear(&d);
  arena_free(a);
  return r;
}

Test(collective_nccl, takes) {
  /* every type NCCL reduces, pred included */
  const char *reduced[] = {"s8[4]", "u8[4]", "s32[4]", "u32[4]", "s64[4]", "u64[4]",
                           "f16[4]", "bf16[4]", "f32[4]", "f64[4]", "pred[4]"};
  for (size_t k = 0; k < ARRAY_LEN(reduced); k++)
    cr_expect(takes(COLL_ALL_REDUCE, COLL_SUM, -1, reduced[k], reduced[k], 0), "%s",
              reduced[k]);
  /* types it does not reduce stay on the host; moving them is bytes */
  cr_expect(!takes(COLL_ALL_REDUCE, COLL_SUM, -1, "s16[4]", "s16[4]", 0));
  cr_expect(!takes(COLL_REDUCE_SCATTER, COLL_MAX, 0, "f8e4m3fn[8]", "f8e4m3fn[2]", 0));
  cr_expect(takes(COLL_ALL_GATHER, COLL_SUM, 0, "s16[2]", "s16[8]", 0));
  cr_expect(takes(COLL_COLLECTIVE_PERMUTE, COLL_SUM, -1, "f8e5m2[3]", "f8e5m2[3]", 0));
  /* layouts: the same physical order, any dimension */
  cr_expect(takes(COLL_ALL_GATHER, COLL_SUM, 1, "f32[2,3]{1,0}", "f32[2,12]{1,0}", 0));
  cr_expect(takes(COLL_ALL_GATHER, COLL_SUM, 1, "f32[2,3]{0,1}", "f32[2,12]{0,1}", 0));
  cr_expect(!takes(COLL_ALL_GATHER, COLL_SUM, 1, "f32[2,3]{1,0}", "f32[2,12]{0,1}", 0));
  cr_expect(!takes(COLL_ALL_REDUCE, COLL_SUM, -1, "f32[2,3]{1,0}", "f32[2,3]{0,1}", 0));
  cr_expect(takes(COLL_ALL_TO_ALL, COLL_SUM, 1, "f32[3,8]{1,0}", "f32[3,8]{1,0}", 0));
  cr_expect(takes(COLL_REDUCE_SCATTER, COLL_MIN, 1, "f32[3,8]{1,0}", "f32[3,2]{1,0}", 0));
  /* in place: all-reduce and broadcast only; no other overlap */
  cr_expect(takes(COLL_ALL_REDUCE, COLL_SUM, -1, "f32[4]", "f32[4]", 1));
  cr_expect(takes(COLL_COLLECTIVE_BROADCAST, COLL_SUM, -1, "f32[4]", "f32[4]", 1));
  cr_expect(!takes(COLL_COLLECTIVE_PERMUTE, COLL_SUM, -1, "f32[4]", "f32[4]", 1));
  cr_expect(!takes(COLL_ALL_REDUCE, COLL_SUM, -1, "f32[4]", "f32[4]", 2));
  cr_expect(!takes(COLL_ALL_GATHER, COLL_SUM, 0, "f32[4]", "f32[16]", 2));
}

typedef struct Member {
  Exchange *x;
  int64_t self;
  uint8_t id[16];
  bool ok;
} Member;

static const int64_t members[3] = {2, 0, 1};   /* device 2 first */

static void *share_main(void *arg) {
  Member *m = arg;
  Diag d = {0};
  int me = m->self == 2 ? 0 : m->self == 0 ? 1 : 2;
  CollGroup g = {.members = members, .n = 3, .me = me, .self = m->self, .ndev = 3,
                 .xg = m->x, .key = members, .name = "c"};
  m->ok = coll_group_share(&g, m->id, sizeof m->id, &d);
  m->x->end(m->x, (int)m->self, !m->ok, d.msg);
  diag_clear(&d);
  return NULL;
}

Test(collective_nccl, share) {
  Exchange *x = xchg_threads_new(3);
  Member m[3];
  pthread_t th[3];
  for (int k = 0; k < 3; k++) {
    m[k] = (Member){.x = x, .self = k};
    memset(m[k].id, k == 2 ? 0x7e : 0, sizeof m[k].id);   /* the first member's */
    cr_assert(pthread_create(&th[k], NULL, share_main, &m[k]) == 0);
  }
  for (int k = 0; k < 3; k++) pthread_join(th[k], NULL);
  for (int k = 0; k < 3; k++) {
    cr_expect(m[k].ok, "device %d", k);
    for (size_t i = 0; i < sizeof m[k].id; i++)
      cr_expect(m[k].id[i] == 0x7e, "device %d has the first member's bytes", k);
  }
  xchg_free(x);

  /* a group of one needs nobody; a group of two with no way to meet is an
   * error */
  Diag d = {0};
  uint8_t id[4] = {1, 2, 3, 4};
  int64_t one = 0, two[2] = {0, 1};
  CollGroup g1 = {.members = &one, .n = 1};
  cr_expect(coll_group_share(&g1, id, sizeof id, &d));
  CollGroup g2 = {.members = two, .n = 2};
  cr_expect(!coll_group_share(&g2, id, sizeof id, &d));
  cr_expect(d.msg && strstr(d.msg, "2 devices take part but the run has only this one"),
            "%s", d.msg ? d.msg : "");
  diag_clear(&d);
}
