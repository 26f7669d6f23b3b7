/*
 * test_tiling.c - shardings seen from the devices (lib/hlo/tiling.c), the
 * operations the SPMD passes do on them (passes/spmd_tiling.c), Shardy's
 * attributes (passes/spmd_sdy.c), and global arrays cut into shards and
 * put back together (lib/eval/shard_io.c).
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../lib/eval/eval.h"
#include "../../passes/spmd.h"

static Arena *A;

static void setup(void) { A = arena_new(); }
static void teardown(void) { arena_free(A); }

static Tiling *tile(const char *text, int rank, int64_t ndev) {
  Diag d = {0};
  Sharding *s = hlo_parse_sharding(A, text, &d);
  cr_assert(s, "%s: %s", text, d.msg ? d.msg : "");
  Tiling *t = NULL;
  char why[256] = "";
  cr_assert(tiling_from_sharding(A, s, rank, ndev, &t, why, sizeof why), "%s: %s",
            text, why);
  return t;
}

static int64_t C(const Tiling *t, int64_t d, int k) { return t->coord[d * t->rank + k]; }

static char *sharding_text(const Tiling *t) {
  StrBuf b;
  sb_init(&b);
  hlo_print_sharding(&b, tiling_to_sharding(A, t));
  char *s = arena_strdup(A, b.s);
  sb_free(&b);
  return s;
}

TestSuite(tiling, .init = setup, .fini = teardown);

Test(tiling, iota_transposed_and_replicated) {
  /* devices=[2,1,2]<=[2,2]T(1,0): device list 0,2,1,3; the last 2 copies */
  Tiling *t = tile("{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}", 2, 4);
  cr_assert_eq(t->tiles[0], 2);
  cr_assert_eq(t->tiles[1], 1);
  int64_t want[4] = {0, 1, 0, 1};   /* devices 0,2 hold tile 0; 1,3 tile 1 */
  for (int d = 0; d < 4; d++)
    cr_assert_eq(C(t, d, 0), want[d], "device %d", d);
  cr_assert(tiling_valid(t));
  cr_assert_str_eq(sharding_text(t), "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}");
  Tiling *back = tile(sharding_text(t), 2, 4);
  cr_assert(tiling_equal(t, back));
}

Test(tiling, explicit_list_and_shards) {
  Tiling *t = tile("{devices=[1,4]3,2,1,0}", 2, 4);
  cr_assert_eq(C(t, 3, 1), 0);
  cr_assert_eq(C(t, 0, 1), 3);
  cr_assert_str_eq(sharding_text(t), "{devices=[1,4]3,2,1,0}");
  /* 10 columns in 4 tiles: shards of 3, the last one 2 short */
  cr_assert_eq(tiling_shard_dim(t, 1, 10), 3);
  cr_assert_eq(tiling_offset(t, 0, 1, 10), 9);
  cr_assert_eq(tiling_offset(t, 3, 1, 10), 0);
  cr_assert(tiling_is_replicated(tile("{replicated}", 3, 4)));
  cr_assert_str_eq(sharding_text(tile("{devices=[4,1]<=[4]}", 2, 4)), "{devices=[4,1]<=[4]}");
}

Test(tiling, refusals) {
  Diag d = {0};
  char why[256];
  Tiling *t;
  Sharding *s = hlo_parse_sharding(A, "{devices=[2,1]0,5}", &d);
  cr_assert(!tiling_from_sharding(A, s, 2, 2, &t, why, sizeof why));
  cr_assert(strstr(why, "device 5"), "%s", why);
  s = hlo_parse_sharding(A, "{devices=[2,2]<=[4]}", &d);
  cr_assert(!tiling_from_sharding(A, s, 3, 4, &t, why, sizeof why));
  cr_assert(strstr(why, "rank"), "%s", why);
  cr_assert(!tiling_from_sharding(A, s, 2, 8, &t, why, sizeof why));
  s = hlo_parse_sharding(A, "{devices=[2,2]<=[4] last_tile_dims={manual}}", &d);
  cr_assert(!tiling_from_sharding(A, s, 1, 4, &t, why, sizeof why));
  cr_assert(strstr(why, "manual"), "%s", why);
  cr_assert_null(hlo_parse_sharding(A, "{devices=[2]<=[2]} x", &d));
  diag_clear(&d);
}

Test(tiling, groups_pair_copies) {
  /* 2 row tiles, each on 2 devices: gathering the rows pairs device 0 with
   * 2 and 1 with 3 (copies paired in order) */
  Tiling *t = tile("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", 2, 4);
  bool vary[2] = {true, false};
  int64_t *g;
  int size;
  int n = tiling_groups(t, vary, &g, &size);
  cr_assert_eq(n, 2);
  cr_assert_eq(size, 2);
  cr_assert_eq(g[0], 0);
  cr_assert_eq(g[1], 2);
  cr_assert_eq(g[2], 1);
  cr_assert_eq(g[3], 3);
  free(g);
  bool none[2] = {false, true};
  cr_assert_eq(tiling_groups(t, none, &g, &size), 0);
}

Test(tiling, merge_and_project) {
  Tiling *rows = tile("{devices=[4,1]<=[4]}", 2, 4);
  Tiling *cols = tile("{devices=[1,4]<=[4]}", 2, 4);
  const Tiling *srcs[2] = {rows, cols};
  int which[2] = {0, 1}, dim[2] = {0, 1};
  /* rows and columns of one split over the same 4 devices: no tiling holds
   * each of the 16 blocks equally often */
  cr_assert_null(tiling_merge(A, 2, 4, srcs, which, dim));
  Tiling *two = tile("{devices=[2,2]<=[4]}", 2, 4);
  int src[1] = {1};
  Tiling *p = tiling_project(A, two, 1, src);
  cr_assert_eq(p->tiles[0], 2);
  cr_assert(tiling_valid(p));
  cr_assert_str_eq(sharding_text(p), "{devices=[2,2]0,2,1,3 last_tile_dim_replicate}");
}

Test(tiling, reshape_spreads_tiles) {
  Diag d = {0};
  Shape *from = hlo_parse_shape(A, "f32[8,6]", &d), *to = hlo_parse_shape(A, "f32[2,4,6]", &d);
  Tiling *t = tile("{devices=[4,1]<=[4]}", 2, 4), *out, *eff;
  tiling_reshape(A, t, from, to, &out, &eff);
  cr_assert(tiling_equal(eff, t));
  cr_assert_str_eq(sharding_text(out), "{devices=[2,2,1]<=[4]}");
  /* and back */
  Tiling *in, *eff2;
  tiling_reshape(A, out, to, from, &in, &eff2);
  cr_assert(tiling_equal(in, t));
  /* a minor dimension split alone cannot be kept */
  Tiling *minor = tile("{devices=[1,4,1]<=[4]}", 3, 4);
  tiling_reshape(A, minor, to, from, &in, &eff2);
  cr_assert(tiling_is_replicated(in));
  cr_assert(tiling_is_replicated(eff2));
}

Test(tiling, reshard_costs) {
  Diag d = {0};
  Shape *s = hlo_parse_shape(A, "f32[8,8]", &d);
  Tiling *rows = tile("{devices=[4,1]<=[4]}", 2, 4), *cols = tile("{devices=[1,4]<=[4]}", 2, 4);
  Tiling *rep = tile("{replicated}", 2, 4);
  cr_assert_eq(tiling_reshard_cost(rep, rows, s), 0);      /* a slice */
  cr_assert_eq(tiling_reshard_cost(rows, rep, s), 8 * 8 * 4); /* an all-gather */
  cr_assert_eq(tiling_a2a_dim(rows, cols, 0, s), 1);
  cr_assert_eq(tiling_reshard_cost(rows, cols, s), 2 * 8 * 4); /* an all-to-all */
  Tiling *shifted = tile("{devices=[4,1]1,2,3,0}", 2, 4);
  cr_assert_eq(tiling_reshard_cost(rows, shifted, s), 2 * 8 * 4); /* a permute */
}

Test(tiling, permutation) {
  int64_t src[4];
  Tiling *ab = tile("{devices=[2,2]<=[4]}", 2, 4), *ba = tile("{devices=[2,2]<=[2,2]T(1,0)}", 2, 4);
  cr_assert(tiling_permutation(ab, ba, src));
  int64_t want[4] = {0, 2, 1, 3};
  for (int d = 0; d < 4; d++)
    cr_assert_eq(src[d], want[d], "device %d", d);
  /* copies: each holder of a tile sends at most once */
  Tiling *ra = tile("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", 2, 4);
  Tiling *rb = tile("{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}", 2, 4);
  cr_assert(tiling_permutation(ra, rb, src));
  for (int d = 0; d < 4; d++)
    cr_assert_eq(src[d], want[d], "device %d", d);
  /* not a permutation: equal, another grid, manual */
  cr_assert(!tiling_permutation(ab, ab, src));
  cr_assert(!tiling_permutation(ab, tile("{devices=[4,1]<=[4]}", 2, 4), src));
  cr_assert(!tiling_permutation(ra, ab, src));
  cr_assert(!tiling_permutation(tiling_manual(A, 2, 4), ab, src));
}

Test(tiling, shardy) {
  HloModule *m = hlo_module_new("m");
  KVList *l = ARENA_NEW(m->arena, KVList);
  l->n = 1;
  l->kv = ARENA_ARRAY(m->arena, KeyValue, 1);
  l->kv[0].key = arena_strdup(m->arena, "xla.sdy.meshes");
  l->kv[0].value = arena_strdup(m->arena, "{mesh = #sdy.mesh<[\"d\"=2, \"m\"=2]>, "
                                          "rev = #sdy.mesh<[\"x\"=4], device_ids=[3,2,1,0]>}");
  m->frontend_attrs = l;
  Diag d = {0};
  SdyMeshes *ms = sdy_meshes(A, m, &d);
  cr_assert(ms, "%s", d.msg ? d.msg : "");
  Tiling *t;
  char why[256] = "";
  cr_assert(sdy_tiling(A, ms, "#sdy.sharding<@mesh, [{\"m\"}, {}]>", 2, 4, &t, why, sizeof why),
            "%s", why);
  cr_assert_str_eq(sharding_text(t), "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}");
  cr_assert(sdy_tiling(A, ms, "#sdy.sharding<@mesh, [{\"d\", \"m\"}, {?}]>", 2, 4, &t, why,
                       sizeof why), "%s", why);
  cr_assert_str_eq(sharding_text(t), "{devices=[4,1]<=[4]}");
  cr_assert(sdy_tiling(A, ms, "#sdy.sharding<@rev, [{\"x\":(2)2}]>", 1, 4, &t, why, sizeof why),
            "%s", why);
  cr_assert_eq(t->tiles[0], 2);
  cr_assert_eq(C(t, 3, 0), 0);   /* device 3 at mesh index 0 */
  cr_assert_eq(C(t, 0, 0), 1);   /* device 0 at mesh index 3: (3 / 2) % 2 */
  Diag dd = {0};
  Shape *s2 = hlo_parse_shape(A, "f32[4,2]", &dd);
  cr_assert(sdy_tiling_per_value(A, ms, "#sdy.sharding_per_value<[<@mesh, [{}]>, "
                                        "<@mesh, [{\"d\"}, {}]>]>", 1, s2, 4, &t, why,
                                 sizeof why), "%s", why);
  cr_assert_str_eq(sharding_text(t), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  cr_assert(!sdy_tiling(A, ms, "#sdy.sharding<@mesh, [{\"q\"}]>", 1, 4, &t, why, sizeof why));
  cr_assert(strstr(why, "\"q\""), "%s", why);
  cr_assert(sdy_manual_axes_valid(ms, "#sdy<manual_axes{\"d\", \"m\"}>", why, sizeof why));
  cr_assert(sdy_manual_axes_valid(ms, "#sdy<manual_axes{\"d\"}>", why, sizeof why));
  cr_assert(!sdy_manual_axes_valid(ms, "#sdy<manual_axes{\"q\"}>", why, sizeof why));
  cr_assert(strstr(why, "names axis \"q\""), "%s", why);
  cr_assert(!sdy_manual_axes_valid(ms, "#sdy<manual_axes{\"d\"", why, sizeof why));
  cr_assert(strstr(why, "cannot read"), "%s", why);
  hlo_module_free(m);
}

Test(tiling, shard_and_unshard) {
  Diag d = {0};
  Shape *g = hlo_parse_shape(A, "s32[6,2]", &d), *local = hlo_parse_shape(A, "s32[2,2]", &d);
  Literal *l = literal_new(A, g);
  for (int k = 0; k < 12; k++)
    literal_set_s64(l, k, k + 1);
  Tiling *t = tile("{devices=[4,1]3,0,1,2}", 2, 4);
  cr_assert(io_is_global_of(g, local, t));
  Literal *sh[4];
  for (int dev = 0; dev < 4; dev++)
    sh[dev] = io_shard(A, l, t, dev, local);
  /* device 3 holds rows 0-1, device 2 rows 6-7: past the end, zeros */
  cr_assert_eq(literal_get_s64(sh[3], 0), 1);
  cr_assert_eq(literal_get_s64(sh[2], 0), 0);
  cr_assert_eq(literal_get_s64(sh[1], 3), 12);
  Literal *back = io_unshard(A, sh, t, g);
  cr_assert(literal_equal(back, l));
  Shape *bad = hlo_parse_shape(A, "s32[9,2]", &d);
  cr_assert(!io_is_global_of(bad, local, t));
}
