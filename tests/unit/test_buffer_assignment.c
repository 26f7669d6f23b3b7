/*
 * test_buffer_assignment.c - buffer assignment (passes/buffer_assignment.c)
 * on small post-fusion modules written by hand: space reuse, no overlap of
 * values live at once, aliasing through tuples and bitcasts, the while and
 * conditional rules, outputs, errors, XLA's text; then the invariant checker
 * over a sample of the HLO corpus.  Also the copy-insertion pass run from C.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../passes/buffer_assignment.h"
#include "../../passes/passes.h"

static PtrVec sources;

static void free_sources(void) {
  for (int k = 0; k < sources.len; k++)
    srcfile_free(sources.data[k]);
  vec_free(&sources);
}

TestSuite(ba, .fini = free_sources);
TestSuite(copy_insertion, .fini = free_sources);

static HloModule *parse(const char *text) {
  Diag d = {0};
  SrcFile *src = srcfile_from_string("test.hlo", text, strlen(text));
  vec_push(&sources, src);
  HloModule **mods = NULL;
  ParseOptions po = {.strip_glog_prefixes = true};
  int n = hlo_parse(src, &po, &mods, &d);
  if (n != 1) {
    diag_print(&d, stderr);
    cr_assert_fail("parse failed");
  }
  cr_assert(hlo_verify(mods[0], &d), "%s", d.msg ? d.msg : "");
  HloModule *m = mods[0];
  free(mods);
  return m;
}

static BufferAssignment *assign_ok(const HloModule *m) {
  Diag d = {0};
  BufferAssignment *ba = buffer_assign(m, &d);
  cr_assert_not_null(ba, "%s", d.msg ? d.msg : "");
  cr_assert(ba_verify(ba, &d), "%s", d.msg ? d.msg : "");
  return ba;
}

static const HloInstr *find(const HloModule *m, const char *name) {
  for (int c = 0; c < m->ncomps; c++) {
    HloInstr *i = hlo_comp_find_instr(m->comps[c], name);
    if (i)
      return i;
  }
  cr_assert_fail("no instruction %s", name);
  return NULL;
}

static BufSlice slice_of(const BufferAssignment *ba, const HloModule *m,
                         const char *name, int leaf) {
  BufSlice s;
  cr_assert(ba_slice(ba, find(m, name), leaf, &s), "no slice for %s{%d}",
            name, leaf);
  return s;
}

static bool same(BufSlice a, BufSlice b) {
  return a.alloc == b.alloc && a.offset == b.offset && a.size == b.size;
}

static bool disjoint(BufSlice a, BufSlice b) {
  return a.alloc != b.alloc || a.offset + a.size <= b.offset ||
         b.offset + b.size <= a.offset;
}

/* A chain of four fusions that read their operand at other indices (no
 * in-place result): the third reuses the first's space. */
static const char chain[] =
    "HloModule chain\n"
    "fused_neg {\n"
    "  x = f32[16] parameter(0)\n"
    "  ROOT n = f32[16] reverse(x), dimensions={0}\n"
    "}\n"
    "ENTRY main {\n"
    "  p0 = f32[16] parameter(0)\n"
    "  f1 = f32[16] fusion(p0), kind=kLoop, calls=fused_neg\n"
    "  f2 = f32[16] fusion(f1), kind=kLoop, calls=fused_neg\n"
    "  f3 = f32[16] fusion(f2), kind=kLoop, calls=fused_neg\n"
    "  ROOT f4 = f32[16] fusion(f3), kind=kLoop, calls=fused_neg\n"
    "}\n";

/* The result is packed with the temps, live from its definition: f4
 * takes f2's bytes, dead by then. */
Test(ba, chain_reuses_space_and_prints_like_xla) {
  HloModule *m = parse(chain);
  BufferAssignment *ba = assign_ok(m);
  cr_assert_eq(ba_num_allocs(ba), 2);
  cr_assert_eq(ba_alloc(ba, 0)->flags, ALLOC_PARAMETER);
  cr_assert_eq(ba_alloc(ba, 1)->flags, ALLOC_TEMP | ALLOC_MAYBE_LIVE_OUT);
  cr_assert_eq(ba_alloc(ba, 1)->size, 128);
  BufSlice s1 = slice_of(ba, m, "f1", 0), s2 = slice_of(ba, m, "f2", 0),
           s3 = slice_of(ba, m, "f3", 0), s4 = slice_of(ba, m, "f4", 0);
  cr_assert(disjoint(s1, s2) && disjoint(s2, s3) && disjoint(s3, s4));
  cr_assert(same(s1, s3) && same(s2, s4));
  /* Fusion computations are not assigned. */
  BufSlice s;
  cr_assert_not(ba_slice(ba, find(m, "n"), 0, &s));
  StrBuf b;
  sb_init(&b);
  ba_print(&b, ba);
  const char *want =
      "BufferAssignment:\n"
      "allocation 0: size 64, parameter 0, shape |f32[16]| at ShapeIndex {}:\n"
      " value: <0 p0> (size=64,offset=0): f32[16]{0}\n"
      "allocation 1: size 128, output shape is |f32[16]|, maybe-live-out, "
      "preallocated-temp:\n"
      " value: <1 f1> (size=64,offset=0): f32[16]{0}\n"
      " value: <2 f2> (size=64,offset=64): f32[16]{0}\n"
      " value: <3 f3> (size=64,offset=0): f32[16]{0}\n"
      " value: <4 f4> (size=64,offset=64): f32[16]{0}\n"
      "\n"
      "Total bytes used: 192 (192B)\n"
      "\n"
      "BufferAssignment stats:\n"
      "             parameter allocation:        64B\n"
      "              constant allocation:         0B\n"
      "        maybe_live_out allocation:       128B\n"
      "     preallocated temp allocation:       128B\n"
      "  preallocated temp fragmentation:         0B (0.00%)\n"
      "                 total allocation:       192B\n"
      "              total fragmentation:         0B (0.00%)\n";
  cr_assert_str_eq(b.s, want);
  sb_free(&b);
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* One big value live across many small ones; sizes in KiB in the stats.
 * The fusions read their operands at other indices, so no result is
 * written over an operand. */
Test(ba, values_live_at_once_never_overlap) {
  HloModule *m = parse(
      "HloModule fan\n"
      "fused_add {\n"
      "  x = f32[256] parameter(0)\n"
      "  y = f32[256] parameter(1)\n"
      "  rx = f32[256] reverse(x), dimensions={0}\n"
      "  ry = f32[256] reverse(y), dimensions={0}\n"
      "  ROOT sum = f32[256] add(rx, ry)\n"
      "}\n"
      "fused_neg {\n"
      "  x = f32[256] parameter(0)\n"
      "  ROOT neg = f32[256] reverse(x), dimensions={0}\n"
      "}\n"
      "ENTRY main {\n"
      "  p0 = f32[256] parameter(0)\n"
      "  a = f32[256] fusion(p0), kind=kLoop, calls=fused_neg\n"
      "  b = f32[256] fusion(a), kind=kLoop, calls=fused_neg\n"
      "  c = f32[256] fusion(b), kind=kLoop, calls=fused_neg\n"
      "  d = f32[256] fusion(c, a), kind=kLoop, calls=fused_add\n"
      "  e = f32[256] fusion(d), kind=kLoop, calls=fused_neg\n"
      "  ROOT f = f32[256] fusion(e, d), kind=kLoop, calls=fused_add\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  /* a lives to d; b and c are inside that range. */
  BufSlice a = slice_of(ba, m, "a", 0), b = slice_of(ba, m, "b", 0),
           c = slice_of(ba, m, "c", 0), d = slice_of(ba, m, "d", 0),
           e = slice_of(ba, m, "e", 0);
  cr_assert(disjoint(a, b) && disjoint(a, c) && disjoint(b, c));
  cr_assert(disjoint(a, d) && disjoint(c, d) && disjoint(d, e));
  /* Peak: three 1 KiB values (a, b, c or a, c, d), so 3 KiB of temp. */
  const BufAlloc *temp = ba_alloc(ba, ba_num_allocs(ba) - 1);
  cr_assert_eq(temp->flags, ALLOC_TEMP | ALLOC_MAYBE_LIVE_OUT);
  cr_assert_eq(temp->size, 3072);
  StrBuf s;
  sb_init(&s);
  ba_print(&s, ba);
  cr_assert(strstr(s.s, "     preallocated temp allocation:     3.0KiB\n"),
            "%s", s.s);
  sb_free(&s);
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

Test(ba, tuples_bitcasts_and_outputs_alias) {
  HloModule *m = parse(
      "HloModule alias\n"
      "fused_two {\n"
      "  x = f32[16] parameter(0)\n"
      "  n = f32[16] negate(x)\n"
      "  s = f32[8] slice(x), slice={[0:8]}\n"
      "  ROOT t = (f32[16], f32[8]) tuple(n, s)\n"
      "}\n"
      "ENTRY main {\n"
      "  p0 = f32[16] parameter(0)\n"
      "  p1 = (f32[2], s32[]) parameter(1)\n"
      "  f = (f32[16], f32[8]) fusion(p0), kind=kLoop, calls=fused_two\n"
      "  g0 = f32[16] get-tuple-element(f), index=0\n"
      "  g1 = f32[8] get-tuple-element(f), index=1\n"
      "  bc = f32[4,4] bitcast(g0)\n"
      "  q = s32[] get-tuple-element(p1), index=1\n"
      "  ROOT r = (f32[4,4], f32[8], f32[16], s32[]) tuple(bc, g1, p0, q)\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  cr_assert(same(slice_of(ba, m, "g0", 0), slice_of(ba, m, "f", 0)));
  cr_assert(same(slice_of(ba, m, "g1", 0), slice_of(ba, m, "f", 1)));
  cr_assert(same(slice_of(ba, m, "bc", 0), slice_of(ba, m, "g0", 0)));
  cr_assert(same(slice_of(ba, m, "r", 2), slice_of(ba, m, "p0", 0)));
  cr_assert(same(slice_of(ba, m, "q", 0), slice_of(ba, m, "p1", 1)));
  /* Parameters: p0, p1{0}, p1{1}; results bc and g1 packed with the
   * temps; p0 and p1{1} pass through and stay where they are. */
  BufSlice p11 = slice_of(ba, m, "p1", 1);
  const BufAlloc *al = ba_alloc(ba, p11.alloc);
  cr_assert_eq(al->flags, ALLOC_PARAMETER | ALLOC_MAYBE_LIVE_OUT);
  cr_assert_eq(al->param_number, 1);
  cr_assert_eq(al->nparam_index, 1);
  cr_assert_eq(al->param_index[0], 1);
  cr_assert_eq(ba_alloc(ba, slice_of(ba, m, "p1", 0).alloc)->flags,
               ALLOC_PARAMETER);
  BufSlice o0 = slice_of(ba, m, "r", 0), o1 = slice_of(ba, m, "r", 1);
  cr_assert_eq(ba_alloc(ba, o0.alloc)->flags,
               ALLOC_TEMP | ALLOC_MAYBE_LIVE_OUT);
  cr_assert_eq(o0.alloc, o1.alloc);
  cr_assert(disjoint(o0, o1));
  cr_assert_eq(ba_num_allocs(ba), 4); /* 3 parameters, the temps */
  StrBuf s;
  sb_init(&s);
  ba_print(&s, ba);
  cr_assert(strstr(s.s, "allocation 2: size 4, parameter 1, shape "
                        "|(f32[2], s32[])| at ShapeIndex {1}, "
                        "maybe-live-out:\n value: <2 p1{1}> "
                        "(size=4,offset=0): s32[]\n"), "%s", s.s);
  cr_assert(strstr(s.s, " value: <3 f{0}> (size=64,offset="), "%s", s.s);
  sb_free(&s);
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

static const char loop[] =
    "HloModule loop\n"
    "cond {\n"
    "  p = (s32[], f32[16]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  c = s32[] constant(10)\n"
    "  ROOT lt = pred[] compare(i, c), direction=LT\n"
    "}\n"
    "body {\n"
    "  p = (s32[], f32[16]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  one = s32[] constant(1)\n"
    "  i2 = s32[] add(i, one)\n"
    "  x = f32[16] get-tuple-element(p), index=1\n"
    "  y = f32[16] negate(x)\n"
    "  ROOT t = (s32[], f32[16]) tuple(i2, y)\n"
    "}\n"
    "ENTRY main {\n"
    "  p0 = f32[16] parameter(0)\n"
    "  z = s32[] constant(0)\n"
    "  e = f32[16] exponential(p0)\n"
    "  init = (s32[], f32[16]) tuple(z, e)\n"
    "  w = (s32[], f32[16]) while(init), condition=cond, body=body\n"
    "  r1 = f32[16] get-tuple-element(w), index=1\n"
    "  ROOT out = f32[16] add(r1, e)\n"
    "}\n";

Test(ba, while_state_and_nested_parameters) {
  HloModule *m = parse(loop);
  BufferAssignment *ba = assign_ok(m);
  HloComp *body = hlo_module_find_comp(m, "body");
  HloComp *cond = hlo_module_find_comp(m, "cond");
  BufSlice w0 = slice_of(ba, m, "w", 0), w1 = slice_of(ba, m, "w", 1);
  BufSlice s;
  /* The parameters of condition and body are the loop state. */
  cr_assert(ba_slice(ba, body->params[0], 0, &s) && same(s, w0));
  cr_assert(ba_slice(ba, body->params[0], 1, &s) && same(s, w1));
  cr_assert(ba_slice(ba, cond->params[0], 1, &s) && same(s, w1));
  /* The body's new state is written over the old in place (nothing reads
   * the old after i2 and y), so no copy back; e, live across the loop,
   * never shares the state's bytes. */
  BufSlice i2 = slice_of(ba, m, "i2", 0), y = slice_of(ba, m, "y", 0);
  BufSlice e = slice_of(ba, m, "e", 0);
  cr_assert(same(i2, w0) && same(y, w1) && disjoint(w0, w1));
  cr_assert(disjoint(e, w1) && disjoint(e, w0));
  cr_assert(ba_slice(ba, cond->root, 0, &s) && disjoint(s, w0) &&
            disjoint(s, w1) && s.size == 1);
  /* Constants of nested computations have their own allocations. */
  cr_assert_eq(ba_alloc(ba, slice_of(ba, m, "one", 0).alloc)->flags,
               ALLOC_CONSTANT);
  /* out = r1 + e, where the state dies: the loop runs in the output. */
  BufSlice out = slice_of(ba, m, "out", 0);
  cr_assert_eq(ba_alloc(ba, out.alloc)->flags,
               ALLOC_TEMP | ALLOC_MAYBE_LIVE_OUT);
  cr_assert(same(out, w1));
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

Test(ba, conditional_branch_parameters_alias_operands) {
  HloModule *m = parse(
      "HloModule cnd\n"
      "on_true {\n"
      "  a = f32[8] parameter(0)\n"
      "  ROOT n = f32[8] negate(a)\n"
      "}\n"
      "on_false {\n"
      "  b = (f32[8], f32[8]) parameter(0)\n"
      "  b0 = f32[8] get-tuple-element(b), index=0\n"
      "  b1 = f32[8] get-tuple-element(b), index=1\n"
      "  ROOT s = f32[8] add(b0, b1)\n"
      "}\n"
      "ENTRY main {\n"
      "  pr = pred[] parameter(0)\n"
      "  x = f32[8] parameter(1)\n"
      "  y = f32[8] exponential(x)\n"
      "  t = (f32[8], f32[8]) tuple(x, y)\n"
      "  c = f32[8] conditional(pr, y, t), true_computation=on_true, "
      "false_computation=on_false\n"
      "  ROOT r = f32[8] negate(c)\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  cr_assert(same(slice_of(ba, m, "a", 0), slice_of(ba, m, "y", 0)));
  cr_assert(same(slice_of(ba, m, "b0", 0), slice_of(ba, m, "x", 0)));
  cr_assert(same(slice_of(ba, m, "b1", 0), slice_of(ba, m, "y", 0)));
  /* on_true computes its root in the result's buffer (no copy out);
   * on_false's add is written over y, which dies there (its group began
   * before the branch, so it is copied out). */
  BufSlice c = slice_of(ba, m, "c", 0);
  cr_assert(disjoint(c, slice_of(ba, m, "y", 0)));
  cr_assert(same(c, slice_of(ba, m, "n", 0)));
  cr_assert(same(slice_of(ba, m, "s", 0), slice_of(ba, m, "y", 0)));
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

Test(ba, errors_name_the_instruction) {
  HloModule *m = parse(
      "HloModule calls\n"
      "f {\n"
      "  a = f32[8] parameter(0)\n"
      "  ROOT n = f32[8] negate(a)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = f32[8] parameter(0)\n"
      "  ROOT c = f32[8] call(x), to_apply=f\n"
      "}\n");
  Diag d = {0};
  cr_assert_null(buffer_assign(m, &d));
  cr_assert(strstr(d.msg, "call") && strstr(d.msg, "(c)"), "%s", d.msg);
  cr_assert_eq(d.loc.line, 8);
  diag_clear(&d);
  hlo_module_free(m);
  /* One body for two loops. */
  m = parse(
      "HloModule twice\n"
      "cond {\n"
      "  p = s32[] parameter(0)\n"
      "  c = s32[] constant(3)\n"
      "  ROOT lt = pred[] compare(p, c), direction=LT\n"
      "}\n"
      "body {\n"
      "  p = s32[] parameter(0)\n"
      "  one = s32[] constant(1)\n"
      "  ROOT a = s32[] add(p, one)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = s32[] parameter(0)\n"
      "  w1 = s32[] while(x), condition=cond, body=body\n"
      "  ROOT w2 = s32[] while(w1), condition=cond, body=body\n"
      "}\n");
  cr_assert_null(buffer_assign(m, &d));
  cr_assert(strstr(d.msg, "more than one place"), "%s", d.msg);
  diag_clear(&d);
  hlo_module_free(m);
}

Test(ba, deterministic) {
  HloModule *m = parse(loop);
  StrBuf a, b;
  sb_init(&a);
  sb_init(&b);
  BufferAssignment *x = assign_ok(m), *y = assign_ok(m);
  ba_print(&a, x);
  ba_print(&b, y);
  cr_assert_str_eq(a.s, b.s);
  sb_free(&a);
  sb_free(&b);
  buffer_assignment_free(x);
  buffer_assignment_free(y);
  hlo_module_free(m);
}

/* Every small corpus module: assignment succeeds (or refuses with an error
 * naming an instruction) and never breaks its invariant. */
Test(ba, corpus_invariant) {
  const char *dir = getenv("XHLOC_CORPUS");
  if (!dir)
    dir = "../shared/hlo-corpus";
  DIR *dp = opendir(dir);
  if (!dp)
    cr_skip_test("no corpus at %s", dir);
  int tried = 0, assigned = 0;
  struct dirent *de;
  while ((de = readdir(dp))) {
    size_t n = strlen(de->d_name);
    if (n < 4 || strcmp(de->d_name + n - 4, ".hlo") != 0)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size > 200000)
      continue;
    Diag d = {0};
    SrcFile *src = srcfile_read(path, &d);
    if (!src)
      continue;
    HloModule **mods = NULL;
    ParseOptions po = {.strip_glog_prefixes = true};
    int nm = hlo_parse(src, &po, &mods, &d);
    for (int k = 0; k < nm; k++) {
      Diag vd = {0};
      if (hlo_verify(mods[k], &vd)) {
        tried++;
        BufferAssignment *ba = buffer_assign(mods[k], &vd);
        if (ba) {
          assigned++;
          cr_assert(ba_verify(ba, &vd), "%s: %s", path, vd.msg);
          StrBuf t;
          sb_init(&t);
          ba_print(&t, ba);
          sb_free(&t);
          buffer_assignment_free(ba);
        } else {
          cr_assert(vd.has_error, "%s: refused without a message", path);
          /* BA_SHOW=1 lists the refusals (call and async ops today). */
          if (getenv("BA_SHOW"))
            fprintf(stderr, "%s: %s\n", de->d_name, vd.msg);
        }
      }
      diag_clear(&vd);
      hlo_module_free(mods[k]);
    }
    free(mods);
    diag_clear(&d);
    srcfile_free(src);
  }
  closedir(dp);
  cr_log_info("buffer assignment: %d of %d corpus modules", assigned, tried);
  cr_assert_gt(assigned, tried / 2, "assigned %d of %d", assigned, tried);
}

/* ---- copy-insertion ----------------------------------------------------- */

static bool run_copy_insertion(HloModule *m) {
  Diag d = {0};
  PassContext ctx = {.diag = &d};
  const Pass *p = pass_find("copy-insertion");
  cr_assert_not_null(p);
  bool changed = false;
  cr_assert(pass_run(p, m, &ctx, &changed), "%s", d.msg ? d.msg : "");
  cr_assert(hlo_verify(m, &d), "%s", d.msg ? d.msg : "");
  return changed;
}

Test(copy_insertion, swap_constant_and_repeat_in_while_body) {
  HloModule *m = parse(
      "HloModule swap\n"
      "cond {\n"
      "  p = (f32[4], f32[4], f32[4], f32[4], f32[4]) parameter(0)\n"
      "  ROOT t = pred[] constant(false)\n"
      "}\n"
      "body {\n"
      "  p = (f32[4], f32[4], f32[4], f32[4], f32[4]) parameter(0)\n"
      "  a = f32[4] get-tuple-element(p), index=0\n"
      "  b = f32[4] get-tuple-element(p), index=1\n"
      "  k = f32[4] constant({1, 2, 3, 4})\n"
      "  n = f32[4] negate(a)\n"
      "  ROOT t = (f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(a, a, k, n, n)\n"
      "}\n"
      "ENTRY main {\n"
      "  x = (f32[4], f32[4], f32[4], f32[4], f32[4]) parameter(0)\n"
      "  ROOT w = (f32[4], f32[4], f32[4], f32[4], f32[4]) while(x), "
      "condition=cond, body=body\n"
      "}\n");
  cr_assert(run_copy_insertion(m));
  HloComp *body = hlo_module_find_comp(m, "body");
  HloInstr *r = body->root;
  cr_assert_eq(r->op, HLO_TUPLE);
  /* Leaf 0 passes through; leaf 1 (param leaf 0 at index 1), leaf 2 (a
   * constant) and leaf 4 (n again) are copied; leaf 3 is n itself. */
  cr_assert_eq(r->ops[0]->op, HLO_GET_TUPLE_ELEMENT);
  cr_assert_eq(r->ops[1]->op, HLO_COPY);
  cr_assert_eq(r->ops[2]->op, HLO_COPY);
  cr_assert_eq(r->ops[3]->op, HLO_NEGATE);
  cr_assert_eq(r->ops[4]->op, HLO_COPY);
  cr_assert_eq(r->ops[4]->ops[0], r->ops[3]);
  /* Idempotent. */
  cr_assert_not(run_copy_insertion(m));
  hlo_module_free(m);
}

Test(copy_insertion, entry_root_repeats_and_aliased_parameters) {
  HloModule *m = parse(
      "HloModule entry, input_output_alias={ {1}: (0, {}, may-alias) }\n"
      "ENTRY main {\n"
      "  p0 = f32[4] parameter(0)\n"
      "  p1 = f32[4] parameter(1)\n"
      "  p2 = f32[4] parameter(2)\n"
      "  n = f32[4] negate(p0)\n"
      "  ROOT t = (f32[4], f32[4], f32[4], f32[4], f32[4]) "
      "tuple(n, p1, n, p0, p2)\n"
      "}\n");
  cr_assert(run_copy_insertion(m));
  HloInstr *r = m->entry->root;
  cr_assert_eq(r->ops[0]->op, HLO_NEGATE);
  cr_assert_eq(r->ops[1]->op, HLO_COPY); /* p1 where p0's buffer goes */
  cr_assert_eq(r->ops[2]->op, HLO_COPY); /* n again */
  cr_assert_eq(r->ops[3]->op, HLO_COPY); /* p0, donated to result {1} */
  cr_assert_eq(r->ops[4]->op, HLO_PARAMETER); /* unaliased: stays */
  cr_assert_not(run_copy_insertion(m));
  hlo_module_free(m);
}

Test(copy_insertion, nothing_to_do) {
  HloModule *m = parse(loop);
  cr_assert_not(run_copy_insertion(m));
  hlo_module_free(m);
}

/* A library call's workspace (the second leaf of its result) gets an
 * allocation of its own; the result leaf stays in the temp allocation. */
/* A library call's workspace is a temp live while the call runs, aligned
 * for the library: two calls take turns in the same bytes. */
Test(ba, library_workspaces_share_the_temp_allocation) {
  HloModule *m = parse(
      "HloModule t, is_scheduled=true\n"
      "ENTRY e {\n"
      "  a = f32[8,8]{1,0} parameter(0)\n"
      "  b = f32[8,8]{1,0} parameter(1)\n"
      "  c = (f32[8,8]{1,0}, s8[4096]{0}) custom-call(a, b), "
      "custom_call_target=\"__cublas$lt$matmul\"\n"
      "  g = f32[8,8]{1,0} get-tuple-element(c), index=0\n"
      "  c2 = (f32[8,8]{1,0}, s8[4096]{0}) custom-call(g, b), "
      "custom_call_target=\"__cublas$lt$matmul\"\n"
      "  g2 = f32[8,8]{1,0} get-tuple-element(c2), index=0\n"
      "  ROOT n = f32[8,8]{1,0} add(g, g2)\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  BufSlice ws = slice_of(ba, m, "c", 1), ws2 = slice_of(ba, m, "c2", 1);
  BufSlice res = slice_of(ba, m, "c", 0);
  cr_assert_eq(ws.size, 4096);
  cr_assert(same(ws, ws2));
  cr_assert(disjoint(ws, res) && disjoint(ws2, slice_of(ba, m, "c2", 0)));
  cr_assert_eq(ws.offset % 256, 0);
  const BufAlloc *al = ba_alloc(ba, ws.alloc);
  cr_assert_eq(al->flags, ALLOC_TEMP | ALLOC_MAYBE_LIVE_OUT);
  /* the second call runs with g, its workspace and its result (which n
   * then overwrites in place, the module's result) */
  cr_assert_eq(al->size, 4096 + 512);
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* ---- sharing (buffer_sharing.c) ------------------------------------------ */

/* A dynamic-update-slice is written over its updated operand when that
 * dies there; not when it is read afterwards. */
Test(ba, dynamic_update_slice_in_place) {
  HloModule *m = parse(
      "HloModule dus\n"
      "ENTRY main {\n"
      "  p = f32[64] parameter(0)\n"
      "  u = f32[8] parameter(1)\n"
      "  i = s32[] parameter(2)\n"
      "  a = f32[64] exponential(p)\n"
      "  d = f32[64] dynamic-update-slice(a, u, i)\n"
      "  b = f32[64] exponential(p)\n"
      "  e = f32[64] dynamic-update-slice(b, u, i)\n"
      "  n = f32[64] negate(b)\n"
      "  s = f32[64] add(d, e)\n"
      "  ROOT r = f32[64] add(s, n)\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  cr_assert(same(slice_of(ba, m, "d", 0), slice_of(ba, m, "a", 0)));
  cr_assert(disjoint(slice_of(ba, m, "e", 0), slice_of(ba, m, "b", 0)));
  /* a parameter belongs to the caller: never written over */
  cr_assert(disjoint(slice_of(ba, m, "a", 0), slice_of(ba, m, "p", 0)));
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* A scatter of one operand is written over it when it dies there, alone
 * or as the root of a fusion that reads the operand nowhere else; not when
 * the fusion reads it elsewhere too. */
Test(ba, scatter_in_place) {
  HloModule *m = parse(
      "HloModule sc\n"
      "add {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n"
      "}\n"
      "f_sc {\n"
      "  o = f32[64] parameter(0)\n"
      "  i = s32[4,1] parameter(1)\n"
      "  u = f32[4] parameter(2)\n"
      "  e = f32[4] exponential(u)\n"
      "  ROOT s = f32[64] scatter(o, i, e), update_window_dims={},"
      " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"
      " index_vector_dim=1, to_apply=add\n"
      "}\n"
      "f_read {\n"
      "  o = f32[64] parameter(0)\n"
      "  i = s32[4,1] parameter(1)\n"
      "  u = f32[4] parameter(2)\n"
      "  r = f32[4] slice(o), slice={[0:4]}\n"
      "  w = f32[4] add(u, r)\n"
      "  ROOT s = f32[64] scatter(o, i, w), update_window_dims={},"
      " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"
      " index_vector_dim=1, to_apply=add\n"
      "}\n"
      "ENTRY main {\n"
      "  p = f32[64] parameter(0)\n"
      "  i = s32[4,1] parameter(1)\n"
      "  u = f32[4] parameter(2)\n"
      "  ea = f32[64] exponential(p)\n"
      "  sc1 = f32[64] fusion(ea, i, u), kind=kLoop, calls=f_sc\n"
      "  eb = f32[64] exponential(p)\n"
      "  sc2 = f32[64] fusion(eb, i, u), kind=kLoop, calls=f_read\n"
      "  ec = f32[64] exponential(p)\n"
      "  sc3 = f32[64] scatter(ec, i, u), update_window_dims={},"
      " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"
      " index_vector_dim=1, to_apply=add\n"
      "  t = f32[64] add(sc1, sc2)\n"
      "  ROOT r = f32[64] add(t, sc3)\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  cr_assert(same(slice_of(ba, m, "sc1", 0), slice_of(ba, m, "ea", 0)));
  cr_assert(disjoint(slice_of(ba, m, "sc2", 0), slice_of(ba, m, "eb", 0)));
  cr_assert(same(slice_of(ba, m, "sc3", 0), slice_of(ba, m, "ec", 0)));
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* A fusion overwrites an operand only when it reads it at the index it
 * writes, through elementwise ops alone. */
Test(ba, fusions_overwrite_operands_read_in_place) {
  HloModule *m = parse(
      "HloModule fus\n"
      "f_elem {\n"
      "  x = f32[4,8] parameter(0)\n"
      "  y = f32[8] parameter(1)\n"
      "  b = f32[4,8] broadcast(y), dimensions={1}\n"
      "  e = f32[4,8] exponential(x)\n"
      "  ROOT m = f32[4,8] multiply(e, b)\n"
      "}\n"
      "f_rev {\n"
      "  x = f32[4,8] parameter(0)\n"
      "  ROOT r = f32[4,8] reverse(x), dimensions={1}\n"
      "}\n"
      "add {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n"
      "}\n"
      "f_norm {\n"
      "  x = f32[4,8] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  s = f32[4] reduce(x, z), dimensions={1}, to_apply=add\n"
      "  b = f32[4,8] broadcast(s), dimensions={0}\n"
      "  ROOT d = f32[4,8] divide(x, b)\n"
      "}\n"
      "ENTRY main {\n"
      "  p = f32[4,8] parameter(0)\n"
      "  q = f32[8] parameter(1)\n"
      "  ng = f32[4,8] negate(p)\n"
      "  f1 = f32[4,8] fusion(ng, q), kind=kLoop, calls=f_elem\n"
      "  f2 = f32[4,8] fusion(f1), kind=kLoop, calls=f_rev\n"
      "  f3 = f32[4,8] fusion(f2), kind=kLoop, calls=f_norm\n"
      "  ROOT f4 = f32[4,8] exponential(f3)\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  BufSlice a = slice_of(ba, m, "ng", 0), f1 = slice_of(ba, m, "f1", 0),
           f2 = slice_of(ba, m, "f2", 0), f3 = slice_of(ba, m, "f3", 0),
           f4 = slice_of(ba, m, "f4", 0);
  cr_assert(same(f1, a));         /* elementwise in x, broadcast of y */
  cr_assert(disjoint(f2, f1));    /* reverse reads other indices */
  cr_assert(disjoint(f3, f2));    /* the reduce reads the whole row */
  cr_assert(same(f4, f3));        /* the result is written over f3 */
  cr_assert_eq(ba_alloc(ba, f4.alloc)->flags,
               ALLOC_TEMP | ALLOC_MAYBE_LIVE_OUT);
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* The loop state takes over its initial value where that dies at the while
 * (no copy in), or where the body never writes it. */
static const char loop_init[] =
    "HloModule loop_init\n"
    "cond {\n"
    "  p = (s32[], f32[16], f32[16]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  c = s32[] constant(4)\n"
    "  ROOT lt = pred[] compare(i, c), direction=LT\n"
    "}\n"
    "body {\n"
    "  p = (s32[], f32[16], f32[16]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  one = s32[] constant(1)\n"
    "  i2 = s32[] add(i, one)\n"
    "  x = f32[16] get-tuple-element(p), index=1\n"
    "  y = f32[16] get-tuple-element(p), index=2\n"
    "  x2 = f32[16] multiply(x, y)\n"
    "  ROOT t = (s32[], f32[16], f32[16]) tuple(i2, x2, y)\n"
    "}\n"
    "ENTRY main {\n"
    "  p0 = f32[16] parameter(0)\n"
    "  z = s32[] constant(0)\n"
    "  a = f32[16] exponential(p0)\n"
    "  b = f32[16] negate(p0)\n"
    "  init = (s32[], f32[16], f32[16]) tuple(z, a, b)\n"
    "  w = (s32[], f32[16], f32[16]) while(init), condition=cond, "
    "body=body\n"
    "  r1 = f32[16] get-tuple-element(w), index=1\n"
    "  ROOT out = f32[16] add(r1, b)\n"
    "}\n";

Test(ba, while_takes_over_a_dying_initial_value) {
  HloModule *m = parse(loop_init);
  BufferAssignment *ba = assign_ok(m);
  BufSlice w0 = slice_of(ba, m, "w", 0), w1 = slice_of(ba, m, "w", 1),
           w2 = slice_of(ba, m, "w", 2);
  cr_assert(same(w1, slice_of(ba, m, "a", 0)));   /* a dies at the while */
  /* leaf 2 is passed through unchanged: read-only, it is b's buffer even
   * though b is read after the loop */
  cr_assert(same(w2, slice_of(ba, m, "b", 0)));
  cr_assert(disjoint(w0, slice_of(ba, m, "z", 0))); /* a constant */
  cr_assert(same(w1, slice_of(ba, m, "x2", 0)));  /* in place */
  /* r1 and b die at out: it is written over one of them, in the output */
  BufSlice out = slice_of(ba, m, "out", 0);
  cr_assert(same(w1, out) || same(w2, out));
  cr_assert_eq(ba_alloc(ba, out.alloc)->flags,
               ALLOC_TEMP | ALLOC_MAYBE_LIVE_OUT);
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* A body that still reads the old state after making the new value keeps
 * them apart (the thunk emitter copies at the end of the body). */
Test(ba, while_state_read_after_the_new_value_is_not_shared) {
  HloModule *m = parse(
      "HloModule late\n"
      "cond {\n"
      "  p = (s32[], f32[16]) parameter(0)\n"
      "  i = s32[] get-tuple-element(p), index=0\n"
      "  c = s32[] constant(4)\n"
      "  ROOT lt = pred[] compare(i, c), direction=LT\n"
      "}\n"
      "body {\n"
      "  p = (s32[], f32[16]) parameter(0)\n"
      "  i = s32[] get-tuple-element(p), index=0\n"
      "  one = s32[] constant(1)\n"
      "  i2 = s32[] add(i, one)\n"
      "  x = f32[16] get-tuple-element(p), index=1\n"
      "  e = f32[16] exponential(x)\n"
      "  r = f32[16] reverse(x), dimensions={0}\n"
      "  y = f32[16] add(e, r)\n"
      "  ROOT t = (s32[], f32[16]) tuple(i2, e)\n"
      "}\n"
      "ENTRY main {\n"
      "  p0 = f32[16] parameter(0)\n"
      "  z = s32[] constant(0)\n"
      "  init = (s32[], f32[16]) tuple(z, p0)\n"
      "  ROOT w = (s32[], f32[16]) while(init), condition=cond, body=body\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  /* e is made before r reads x: it cannot be written over x */
  cr_assert(disjoint(slice_of(ba, m, "w", 1), slice_of(ba, m, "e", 0)));
  /* the parameter is the caller's: the state is a buffer of its own */
  cr_assert(disjoint(slice_of(ba, m, "w", 1), slice_of(ba, m, "p0", 0)));
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* input_output_alias: a donated parameter holds the loop that updates it
 * and is the output (no output allocation, no copy); a donated parameter
 * read after its output is made keeps the output apart. */
Test(ba, donated_parameters_hold_their_outputs) {
  HloModule *m = parse(
      "HloModule donate, input_output_alias={ {0}: (0, {}, may-alias), "
      "{1}: (1, {}, may-alias) }\n"
      "cond {\n"
      "  p = (s32[], f32[16]) parameter(0)\n"
      "  i = s32[] get-tuple-element(p), index=0\n"
      "  c = s32[] constant(4)\n"
      "  ROOT lt = pred[] compare(i, c), direction=LT\n"
      "}\n"
      "body {\n"
      "  p = (s32[], f32[16]) parameter(0)\n"
      "  i = s32[] get-tuple-element(p), index=0\n"
      "  one = s32[] constant(1)\n"
      "  i2 = s32[] add(i, one)\n"
      "  x = f32[16] get-tuple-element(p), index=1\n"
      "  x2 = f32[16] exponential(x)\n"
      "  ROOT t = (s32[], f32[16]) tuple(i2, x2)\n"
      "}\n"
      "ENTRY main {\n"
      "  kv = f32[16] parameter(0)\n"
      "  q = f32[16] parameter(1)\n"
      "  z = s32[] constant(0)\n"
      "  init = (s32[], f32[16]) tuple(z, kv)\n"
      "  w = (s32[], f32[16]) while(init), condition=cond, body=body\n"
      "  r1 = f32[16] get-tuple-element(w), index=1\n"
      "  q2 = f32[16] negate(q)\n"
      "  q3 = f32[16] add(q2, q)\n"
      "  ROOT out = (f32[16], f32[16]) tuple(r1, q2)\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  BufSlice kv = slice_of(ba, m, "kv", 0), w1 = slice_of(ba, m, "w", 1);
  cr_assert(same(kv, w1));
  cr_assert(same(kv, slice_of(ba, m, "x2", 0)));
  cr_assert(same(kv, slice_of(ba, m, "out", 0)));
  cr_assert_eq(ba_alloc(ba, kv.alloc)->flags,
               ALLOC_PARAMETER | ALLOC_MAYBE_LIVE_OUT);
  /* q is read by q3 after q2 is made: q2 gets an output buffer */
  BufSlice q2 = slice_of(ba, m, "q2", 0);
  cr_assert(disjoint(q2, slice_of(ba, m, "q", 0)));
  cr_assert_eq(ba_alloc(ba, q2.alloc)->flags,
               ALLOC_TEMP | ALLOC_MAYBE_LIVE_OUT);
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* Identical array constants (shape, layout, bytes) share one allocation;
 * a constant that differs in a byte or in its layout does not. */
Test(ba, identical_constants_share_an_allocation) {
  HloModule *m = parse(
      "HloModule consts\n"
      "ENTRY main {\n"
      "  p = f32[2,2] parameter(0)\n"
      "  c1 = f32[2,2]{1,0} constant({{1, 2}, {3, 4}})\n"
      "  c2 = f32[2,2]{1,0} constant({{1, 2}, {3, 4}})\n"
      "  c3 = f32[2,2]{1,0} constant({{1, 2}, {3, 5}})\n"
      "  c4 = f32[2,2]{0,1} constant({{1, 2}, {3, 4}})\n"
      "  a = f32[2,2] add(p, c1)\n"
      "  b = f32[2,2] add(a, c2)\n"
      "  c = f32[2,2] add(b, c3)\n"
      "  ROOT d = f32[2,2] add(c, c4)\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  BufSlice c1 = slice_of(ba, m, "c1", 0), c2 = slice_of(ba, m, "c2", 0),
           c3 = slice_of(ba, m, "c3", 0), c4 = slice_of(ba, m, "c4", 0);
  cr_assert(same(c1, c2));
  cr_assert(disjoint(c1, c3) && disjoint(c1, c4) && disjoint(c3, c4));
  cr_assert_eq(ba_alloc(ba, c1.alloc)->flags, ALLOC_CONSTANT);
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* One initial value for two leaves: the first written leaf takes it over
 * and the other is copied, unless a leaf the body passes through reads it
 * during the loop (then every written leaf gets a copy). */
static const char two_leaves[] =
    "HloModule two\n"
    "cond {\n"
    "  p = (s32[], f32[16], f32[16]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  c = s32[] constant(4)\n"
    "  ROOT lt = pred[] compare(i, c), direction=LT\n"
    "}\n"
    "body {\n"
    "  p = (s32[], f32[16], f32[16]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  one = s32[] constant(1)\n"
    "  i2 = s32[] add(i, one)\n"
    "  x = f32[16] get-tuple-element(p), index=1\n"
    "  y = f32[16] get-tuple-element(p), index=2\n"
    "  x2 = f32[16] multiply(x, y)\n"
    "  y2 = f32[16] %s\n"
    "  ROOT t = (s32[], f32[16], f32[16]) tuple(i2, x2, y2)\n"
    "}\n"
    "ENTRY main {\n"
    "  p0 = f32[16] parameter(0)\n"
    "  z = s32[] constant(0)\n"
    "  a = f32[16] exponential(p0)\n"
    "  init = (s32[], f32[16], f32[16]) tuple(z, a, a)\n"
    "  ROOT w = (s32[], f32[16], f32[16]) while(init), condition=cond, "
    "body=body\n"
    "}\n";

Test(ba, one_initial_value_for_two_leaves) {
  char text[2048];
  /* both leaves written: leaf 1 takes a over, leaf 2 is a copy */
  snprintf(text, sizeof text, two_leaves, "negate(y)");
  HloModule *m = parse(text);
  BufferAssignment *ba = assign_ok(m);
  BufSlice a = slice_of(ba, m, "a", 0);
  cr_assert(same(slice_of(ba, m, "w", 1), a));
  cr_assert(disjoint(slice_of(ba, m, "w", 2), a));
  buffer_assignment_free(ba);
  hlo_module_free(m);
  /* leaf 2 read-only (the body returns y itself): it is a's buffer, so
   * leaf 1, which the body writes, is not */
  snprintf(text, sizeof text, two_leaves, "negate(y)");
  char *at = strstr(text, "tuple(i2, x2, y2)");
  cr_assert_not_null(at);
  memcpy(at, "tuple(i2, x2, y) ", 17);
  m = parse(text);
  ba = assign_ok(m);
  a = slice_of(ba, m, "a", 0);
  cr_assert(same(slice_of(ba, m, "w", 2), a));
  cr_assert(disjoint(slice_of(ba, m, "w", 1), a));
  buffer_assignment_free(ba);
  hlo_module_free(m);
}

/* Read-only loop state shares its initial value's buffer: an instruction
 * after the loop that reads both, one of them at other indices, must not
 * be written over them. */
Test(ba, no_write_over_a_buffer_read_elsewhere_through_another_value) {
  HloModule *m = parse(
      "HloModule ro\n"
      "cond {\n"
      "  p = (s32[], f32[16]) parameter(0)\n"
      "  i = s32[] get-tuple-element(p), index=0\n"
      "  c = s32[] constant(4)\n"
      "  ROOT lt = pred[] compare(i, c), direction=LT\n"
      "}\n"
      "body {\n"
      "  p = (s32[], f32[16]) parameter(0)\n"
      "  i = s32[] get-tuple-element(p), index=0\n"
      "  one = s32[] constant(1)\n"
      "  i2 = s32[] add(i, one)\n"
      "  y = f32[16] get-tuple-element(p), index=1\n"
      "  ROOT t = (s32[], f32[16]) tuple(i2, y)\n"
      "}\n"
      "fused {\n"
      "  x = f32[16] parameter(0)\n"
      "  y = f32[16] parameter(1)\n"
      "  ry = f32[16] reverse(y), dimensions={0}\n"
      "  ROOT s = f32[16] add(x, ry)\n"
      "}\n"
      "ENTRY main {\n"
      "  p0 = f32[16] parameter(0)\n"
      "  z = s32[] constant(0)\n"
      "  a = f32[16] exponential(p0)\n"
      "  init = (s32[], f32[16]) tuple(z, a)\n"
      "  w = (s32[], f32[16]) while(init), condition=cond, body=body\n"
      "  r = f32[16] get-tuple-element(w), index=1\n"
      "  ROOT f = f32[16] fusion(a, r), kind=kLoop, calls=fused\n"
      "}\n");
  BufferAssignment *ba = assign_ok(m);
  BufSlice a = slice_of(ba, m, "a", 0);
  cr_assert(same(slice_of(ba, m, "w", 1), a));  /* read-only state */
  cr_assert(disjoint(slice_of(ba, m, "f", 0), a));
  buffer_assignment_free(ba);
  hlo_module_free(m);
}
