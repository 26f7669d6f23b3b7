/*
 * test_collective_groups.c - who takes part in a collective
 * (lib/hlo/collective_groups.c): the group modes channel_id and
 * use_global_device_ids give, the iota and mesh forms expanded, and the
 * participants of each mode in XLA's order.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../lib/hlo/hlo.h"

static HloModule *mod;
static SrcFile *file;

/* The ROOT instruction of a one-instruction module. */
static const HloInstr *root(const char *header, const char *instr) {
  static char text[2048];
  snprintf(text, sizeof text,
           "HloModule m%s\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  x = f32[4] parameter(0)\n"
           "  ROOT r = %s\n}\n", header, instr);
  file = srcfile_from_string("t.hlo", text, strlen(text));
  HloModule **ms = NULL;
  Diag d = {0};
  int n = hlo_parse(file, NULL, &ms, &d);
  cr_assert_eq(n, 1, "%s", d.msg ? d.msg : "");
  mod = ms[0];
  free(ms);
  return mod->entry->root;
}

static void done(void) {
  hlo_module_free(mod);
  srcfile_free(file);
}

/* The participants of device (r, p) as "a,b,c" (or the message). */
static void who(const HloInstr *i, int64_t R, int64_t P, int64_t r, int64_t p,
                char *out, size_t n) {
  int64_t *dev;
  char why[200];
  int k = hlo_collective_participants(i, R, P, r, p, &dev, why, sizeof why);
  if (k < 0) {
    snprintf(out, n, "error: %s", why);
    return;
  }
  out[0] = 0;
  for (int j = 0; j < k; j++)
    snprintf(out + strlen(out), n - strlen(out), "%s%lld", j ? "," : "",
             (long long)dev[j]);
  free(dev);
}

Test(collective_groups, modes) {
  CollectiveGroupMode m;
  const HloInstr *i = root(", replica_count=2, num_partitions=2",
                           "f32[4] all-reduce(x), replica_groups={}, to_apply=add");
  cr_assert(hlo_collective_group_mode(i, &m) && m == CGM_CROSS_REPLICA);
  done();
  i = root(", replica_count=2, num_partitions=2",
           "f32[4] all-reduce(x), channel_id=1, replica_groups={{0},{1}}, to_apply=add");
  cr_assert(hlo_collective_group_mode(i, &m) && m == CGM_CROSS_REPLICA_AND_PARTITION);
  done();
  i = root(", num_partitions=4",
           "f32[4] all-to-all(x), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}");
  cr_assert(hlo_collective_group_mode(i, &m) && m == CGM_CROSS_PARTITION);
  done();
}

Test(collective_groups, participants_in_xla_order) {
  char s[256];
  /* cross-replica: replicas of this partition */
  const HloInstr *i = root(", replica_count=2, num_partitions=2",
                           "f32[4] all-reduce(x), replica_groups={{1,0}}, to_apply=add");
  who(i, 2, 2, 0, 1, s, sizeof s);
  cr_assert_str_eq(s, "3,1");
  done();
  /* cross-replica-and-partition: the group's replicas, partitions innermost */
  i = root(", replica_count=2, num_partitions=2",
           "f32[8] all-gather(x), channel_id=1, replica_groups={{1,0}}, dimensions={0}");
  who(i, 2, 2, 0, 0, s, sizeof s);
  cr_assert_str_eq(s, "2,3,0,1");
  done();
  /* flattened ids */
  i = root(", replica_count=2, num_partitions=2",
           "f32[4] all-reduce(x), channel_id=1, replica_groups={{0,3},{1,2}}, "
           "use_global_device_ids=true, to_apply=add");
  who(i, 2, 2, 1, 0, s, sizeof s);
  cr_assert_str_eq(s, "1,2");
  done();
  /* a device the groups do not hold */
  i = root(", replica_count=4", "f32[4] all-reduce(x), replica_groups={{0,1}}, to_apply=add");
  who(i, 4, 1, 3, 0, s, sizeof s);
  cr_assert_str_eq(s, "error: the replica groups do not hold replica 3 (cross-replica)");
  done();
}

Test(collective_groups, iota_and_mesh_forms) {
  char s[256];
  const HloInstr *i = root(", replica_count=4",
                           "f32[4] all-reduce(x), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add");
  who(i, 4, 1, 1, 0, s, sizeof s);
  cr_assert_str_eq(s, "1,3");
  done();
  i = root(", replica_count=8",
           "f32[4] all-reduce(x), replica_groups=[4,2]<=[2,2,2]T(2,0,1), to_apply=add");
  /* iota(8) as 2x2x2, dims (2,0,1): rows {0,2},{4,6},{1,3},{5,7} */
  who(i, 8, 1, 6, 0, s, sizeof s);
  cr_assert_str_eq(s, "4,6");
  done();
  i = root(", num_partitions=4",
           "f32[4] all-reduce(x), channel_id=1, replica_groups=mesh['x'=2,'y'=2] {'x'}, "
           "use_global_device_ids=true, to_apply=add");
  who(i, 1, 4, 0, 1, s, sizeof s);
  cr_assert_str_eq(s, "1,3");
  /* printed as written */
  StrBuf b;
  sb_init(&b);
  hlo_print_instr(&b, i, &print_options_default);
  cr_assert(strstr(b.s, "replica_groups=mesh['x'=2,'y'=2] {'x'}"), "%s", b.s);
  sb_free(&b);
  done();
}
