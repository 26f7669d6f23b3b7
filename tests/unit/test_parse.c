/*
 * test_parse.c - unit tests of the HLO text lexer and parser
 * (lib/hlo/lex.c, lib/hlo/parse*.c): shapes and layouts, literals of every
 * element type, instructions and their typed attributes, module headers,
 * multi-module and headerless files, and the error reports.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/hlo/hlo.h"
#include "../../lib/hlo/lex.h"

/* Everything a test parsed, freed by teardown. */
static PtrVec files, mods, arenas;
static Diag D;

static void setup(void) { memset(&D, 0, sizeof D); }

static void teardown(void) {
  for (int i = 0; i < mods.len; i++)
    hlo_module_free(mods.data[i]);
  for (int i = 0; i < files.len; i++)
    srcfile_free(files.data[i]);
  for (int i = 0; i < arenas.len; i++)
    arena_free(arenas.data[i]);
  vec_free(&mods);
  vec_free(&files);
  vec_free(&arenas);
  diag_clear(&D);
}

TestSuite(parse, .init = setup, .fini = teardown);

/* Parses text as file `name`; returns the module count (or -1). */
static int parse_named(const char *name, const char *text, HloModule ***out) {
  SrcFile *f = srcfile_from_string(name, text, strlen(text));
  vec_push(&files, f);
  HloModule **ms = NULL;
  int n = hlo_parse(f, NULL, &ms, &D);
  for (int i = 0; i < n; i++)
    vec_push(&mods, ms[i]);
  if (out)
    *out = ms;
  else
    free(ms);
  return n;
}

/* Parses a one-module text; fails the test on an error. */
static HloModule *parse1(const char *text) {
  HloModule **ms;
  int n = parse_named("t.hlo", text, &ms);
  if (n < 0)
    cr_assert_fail("parse failed: %d:%d: %s", D.loc.line, D.loc.col, D.msg);
  cr_assert_eq(n, 1);
  HloModule *m = ms[0];
  free(ms);
  return m;
}

/* Parses text expecting an error; returns the message. */
static const char *parse_err(const char *text) {
  HloModule **ms = NULL;
  int n = parse_named("e.hlo", text, &ms);
  free(ms);
  cr_assert_eq(n, -1, "expected an error for:\n%s", text);
  cr_assert(D.has_error);
  return D.msg;
}

static HloInstr *find(const HloModule *m, const char *comp, const char *name) {
  const HloComp *c = comp ? hlo_module_find_comp(m, comp) : m->entry;
  cr_assert_not_null(c, "no computation %s", comp);
  HloInstr *i = hlo_comp_find_instr(c, name);
  cr_assert_not_null(i, "no instruction %s", name);
  return i;
}

/* The instruction `name` of a one-instruction-of-interest entry, from a
 * body written after "ENTRY e { p = f32[4]{0} parameter(0) ...". */
static HloInstr *entry_instr(const char *body, const char *name) {
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "HloModule m\nENTRY e {\n%s\n}\n", body);
  HloModule *m = parse1(b.s);
  sb_free(&b);
  return find(m, NULL, name);
}

static Shape *shape(const char *text) {
  diag_clear(&D);
  Arena *a = arena_new();
  vec_push(&arenas, a);
  Shape *s = hlo_parse_shape(a, text, &D);
  if (!s)
    cr_assert_fail("shape '%s': %s", text, D.msg);
  return s;
}

static Literal *literal(const char *shape_text, const char *text) {
  Shape *s = shape(shape_text);
  Literal *l = hlo_parse_literal(arenas.data[arenas.len - 1], s, text, &D);
  if (!l)
    cr_assert_fail("literal %s '%s': %s", shape_text, text, D.msg);
  return l;
}

static const char *literal_err(const char *shape_text, const char *text) {
  Shape *s = shape(shape_text);
  Literal *l = hlo_parse_literal(arenas.data[arenas.len - 1], s, text, &D);
  cr_assert_null(l, "expected an error for %s %s", shape_text, text);
  return D.msg;
}

static uint64_t bits_at(const Literal *l, int64_t i) {
  int n = et_bytes(l->shape->et);
  uint64_t v = 0;
  for (int k = 0; k < n && k < 8; k++)
    v |= (uint64_t)l->data[i * n + k] << (8 * k);
  return v;
}

static void assert_list(const I64List *l, int n, const int64_t *want) {
  cr_assert_eq(l->n, n, "list has %d entries, want %d", l->n, n);
  for (int i = 0; i < n; i++)
    cr_assert_eq(l->v[i], want[i], "entry %d is %lld, want %lld", i,
                 (long long)l->v[i], (long long)want[i]);
}
#define LIST(l, ...)                                                           \
  do {                                                                         \
    const int64_t want_[] = {__VA_ARGS__};                                     \
    assert_list((l), (int)ARRAY_LEN(want_), want_);                            \
  } while (0)

/*
 * Lexer
 */
Test(parse, lexer_tokens) {
  const char *text = "%add.1 x: y= f32 3x3 1_2x0_0_1 b01f_01io->b01f "
                     "-inf nan(0x3) -12 1.5e3 ... <= -> \"a\\\"b\" // c\n?";
  Lexer lx;
  lex_init(&lx, text, strlen(text), false);
  TokKind want[] = {TK_NAME, TK_NAME, TK_ATTR, TK_PRIMTYPE, TK_DXD, TK_PAD,
                    TK_DIMLABELS, TK_NEGINF, TK_DECIMAL, TK_INT, TK_DECIMAL,
                    TK_DOTS, TK_LEQ, TK_ARROW, TK_STRING, TK_QUESTION, TK_EOF};
  for (size_t i = 0; i < ARRAY_LEN(want); i++) {
    lex_next(&lx);
    cr_assert_eq(lx.tok.kind, want[i], "token %zu is kind %d, want %d", i,
                 lx.tok.kind, want[i]);
    if (i == 0)
      cr_assert(lx.tok.vn == 5 && memcmp(lx.tok.v, "add.1", 5) == 0);
    if (i == 8) {
      uint64_t b;
      memcpy(&b, &lx.tok.d, 8);
      cr_assert_eq(b, 0x7ff0000000000003ull);
    }
    if (i == 9)
      cr_assert(lx.tok.neg && lx.tok.u == 12);
    if (i == 10)
      cr_assert_eq(lx.tok.d, 1500.0);
    if (i == 15)
      cr_assert(lx.tok.nl_before);
  }
}

Test(parse, lexer_keywords_and_types) {
  static const char *const kw[] = {
      "HloModule", "ENTRY", "ROOT", "true", "false", "inf", "maximal",
      "replicated", "manual", "last_tile_dim_replicate", "shard_as",
      "shard_like", "unknown", "unreduced", "FileNames", "FunctionNames",
      "FileLocations", "StackFrames"};
  for (size_t i = 0; i < ARRAY_LEN(kw); i++) {
    Lexer lx;
    lex_init(&lx, kw[i], strlen(kw[i]), false);
    lex_next(&lx);
    cr_assert(lx.tok.kind >= TK_KW_HLOMODULE && lx.tok.kind <= TK_KW_STACKFRAMES,
              "%s is not a keyword", kw[i]);
  }
  for (int t = 1; t < ET_COUNT; t++) {
    const char *n = et_name((ElemType)t);
    ElemType got = lex_elem_type(n, strlen(n));
    cr_assert_eq(got, t == ET_TUPLE ? ET_TUPLE : t, "type %s", n);
  }
  cr_assert_eq(lex_elem_type("opaque_type", 11), ET_OPAQUE);
  cr_assert_eq(lex_elem_type("f33", 3), ET_INVALID);
  cr_assert_eq(lex_elem_type("parameter", 9), ET_INVALID);
}

Test(parse, lexer_strings_decode) {
  const char *text = "\"a\\n\\t\\\\\\\"\\x41\\101\\u00e9\"";
  Lexer lx;
  lex_init(&lx, text, strlen(text), false);
  cr_assert_eq(lex_next(&lx), TK_STRING);
  Arena *a = arena_new();
  const char *err = NULL;
  char *s = lex_decode_string(a, &lx.tok, &err);
  cr_assert_str_eq(s, "a\n\t\\\"AA\xc3\xa9");
  Token bad = lx.tok;
  bad.v = "\\q";
  bad.vn = 2;
  cr_assert_null(lex_decode_string(a, &bad, &err));
  arena_free(a);
}

Test(parse, lexer_int_overflow) {
  const char *text = "123456789012345678901234";
  Lexer lx;
  lex_init(&lx, text, strlen(text), false);
  cr_assert_eq(lex_next(&lx), TK_ERROR);
  const char *max = "18446744073709551615";
  lex_init(&lx, max, strlen(max), false);
  cr_assert_eq(lex_next(&lx), TK_INT);
  cr_assert_eq(lx.tok.u, UINT64_MAX);
}

/*
 * Shapes and layouts
 */
Test(parse, shape_array_default_layout) {
  Shape *s = shape("f32[2,3]");
  cr_assert_eq(s->et, ET_F32);
  cr_assert_eq(s->rank, 2);
  cr_assert(s->dims[0] == 2 && s->dims[1] == 3);
  cr_assert_null(s->dyn);
  cr_assert_not_null(s->layout);
  cr_assert(s->layout->rank == 2 && s->layout->minor_to_major[0] == 1 &&
            s->layout->minor_to_major[1] == 0);
  Shape *sc = shape("pred[]");
  cr_assert_eq(sc->rank, 0);
  cr_assert_not_null(sc->layout);
}

Test(parse, shape_every_element_type) {
  for (int t = 1; t < ET_COUNT; t++) {
    if (t == ET_TUPLE)
      continue;
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "%s[]", et_name((ElemType)t));
    Shape *s = shape(b.s);
    cr_assert_eq(s->et, t, "%s", b.s);
    sb_free(&b);
  }
  cr_assert_eq(shape("opaque_type[]")->et, ET_OPAQUE);
}

Test(parse, shape_dynamic_dims) {
  Shape *s = shape("f32[<=10,5,?]");
  cr_assert_not_null(s->dyn);
  cr_assert_eq(s->dyn[0], DIM_BOUNDED);
  cr_assert_eq(s->dims[0], 10);
  cr_assert_eq(s->dyn[1], DIM_STATIC);
  cr_assert_eq(s->dyn[2], DIM_UNBOUNDED);
  cr_assert_eq(s->dims[2], -1);
}

Test(parse, shape_tuples) {
  Shape *s = shape("(f32[2], (s32[], token[]), /*index=2*/())");
  cr_assert_eq(s->et, ET_TUPLE);
  cr_assert_eq(s->ntuple, 3);
  cr_assert_eq(s->tuple[1]->ntuple, 2);
  cr_assert_eq(s->tuple[1]->tuple[1]->et, ET_TOKEN);
  cr_assert_null(s->tuple[1]->tuple[1]->layout);
  cr_assert_eq(s->tuple[2]->et, ET_TUPLE);
  cr_assert_eq(s->tuple[2]->ntuple, 0);
  Shape *b = shape("b(f32[4,16])");
  cr_assert(b->is_buffer && b->et == ET_F32 && b->rank == 2);
}

Test(parse, layout_full_grammar) {
  Shape *s = shape("f32[8,128]{1,0:D(D,C+,S~)T(8,128)(2,*)L(4)#(u32)*(u64)"
                   "E(16)S(5)SC(0:1,2)M(8)}");
  Layout *l = s->layout;
  cr_assert_eq(l->ndim_level_types, 3);
  cr_assert_str_eq(l->dim_level_types[1], "C+");
  cr_assert_str_eq(l->dim_level_types[2], "S~");
  cr_assert_eq(l->ntiles, 2);
  cr_assert(l->tiles[0].ndims == 2 && l->tiles[0].dims[1] == 128);
  cr_assert_eq(l->tiles[1].dims[1], TILE_COMBINED);
  cr_assert_eq(l->tail_padding_alignment, 4);
  cr_assert_eq(l->index_type, ET_U32);
  cr_assert_eq(l->pointer_type, ET_U64);
  cr_assert_eq(l->element_size_bits, 16);
  cr_assert_eq(l->memory_space, 5);
  cr_assert_eq(l->nsplit_configs, 1);
  cr_assert(l->split_configs[0].dimension == 0 &&
            l->split_configs[0].nindices == 2 &&
            l->split_configs[0].indices[1] == 2);
  cr_assert_eq(l->dynamic_shape_metadata_prefix_bytes, 8);
  Shape *sc = shape("s4[]{:E(4)S(1)}");
  cr_assert(sc->layout->element_size_bits == 4 && sc->layout->memory_space == 1);
  Shape *p = shape("f32[4]{0:P(f32[8]{0})}");
  cr_assert_not_null(p->layout->physical_shape);
}

Test(parse, shape_errors) {
  Arena *a = arena_new();
  vec_push(&arenas, a);
  cr_assert_null(hlo_parse_shape(a, "f33[2]", &D));
  cr_assert_str_eq(D.msg, "unknown element type 'f33'");
  diag_clear(&D);
  cr_assert_null(hlo_parse_shape(a, "f32[2,3", &D));
  cr_assert_str_eq(D.msg, "expected ']' in shape");
  diag_clear(&D);
  cr_assert_null(hlo_parse_shape(a, "f32[2,2]{0}", &D));
  cr_assert_str_eq(D.msg, "layout has 1 dimensions but the shape has rank 2");
  diag_clear(&D);
  cr_assert_null(hlo_parse_shape(a, "f32[2,2]{1,1}", &D));
  diag_clear(&D);
  cr_assert_null(hlo_parse_shape(a, "f32[-1]", &D));
  diag_clear(&D);
  cr_assert_null(hlo_parse_shape(a, "token[2]", &D));
  diag_clear(&D);
  cr_assert_null(hlo_parse_shape(a, "f32[2] x", &D));
  diag_clear(&D);
  cr_assert_null(hlo_parse_shape(a, "f32[99999999999999999999]", &D));
}

Test(parse, shape_nesting_limit) {
  StrBuf b;
  sb_init(&b);
  for (int i = 0; i < 5000; i++)
    sb_putc(&b, '(');
  Arena *a = arena_new();
  vec_push(&arenas, a);
  cr_assert_null(hlo_parse_shape(a, b.s, &D));
  cr_assert(strstr(D.msg, "too deep") != NULL, "%s", D.msg);
  sb_free(&b);
}

/*
 * Literals
 */
Test(parse, literal_ints_and_ranges) {
  Literal *l = literal("s8[3]", "{-128, 0, 127}");
  cr_assert_eq((int8_t)l->data[0], -128);
  cr_assert_eq((int8_t)l->data[2], 127);
  cr_assert_str_eq(literal_err("s8[1]", "{128}"),
                   "value 128 is out of range for s8 [-128, 127]");
  cr_assert_str_eq(literal_err("u8[]", "-1"),
                   "value -1 is out of range for u8 [0, 255]");
  l = literal("u64[]", "18446744073709551615");
  cr_assert_eq(bits_at(l, 0), UINT64_MAX);
  l = literal("s64[]", "-9223372036854775808");
  cr_assert_eq(bits_at(l, 0), 0x8000000000000000ull);
  literal_err("s64[]", "9223372036854775808");
  l = literal("s4[2]", "{-8, 7}");
  cr_assert_eq((int8_t)l->data[0], -8);
  literal_err("s4[]", "8");
  literal_err("u2[]", "4");
  literal_err("s32[]", "1.5");
  l = literal("s16[2]", "{-2, 300}");
  cr_assert_eq(bits_at(l, 0), 0xfffe);
  cr_assert_eq(bits_at(l, 1), 300);
}

Test(parse, literal_pred) {
  Literal *l = literal("pred[4]", "{true, false, 1, 0}");
  cr_assert(l->data[0] == 1 && l->data[1] == 0 && l->data[2] == 1 &&
            l->data[3] == 0);
  literal_err("pred[]", "1.5");
}

Test(parse, literal_floats) {
  Literal *l = literal("f32[5]", "{1, -0.5, inf, -inf, 1e-3}");
  float f[5];
  memcpy(f, l->data, sizeof f);
  cr_assert_eq(f[0], 1.0f);
  cr_assert_eq(f[1], -0.5f);
  cr_assert(isinf(f[2]) && f[2] > 0);
  cr_assert(isinf(f[3]) && f[3] < 0);
  cr_assert_eq(f[4], 1e-3f);
  l = literal("f64[]", "0.1");
  double d;
  memcpy(&d, l->data, 8);
  cr_assert_eq(d, 0.1);
  /* bf16 rounds to nearest even: 1 + 2^-8 is halfway, goes to 1. */
  l = literal("bf16[2]", "{1.00390625, 3.0}");
  cr_assert_eq(bits_at(l, 0), 0x3f80);
  cr_assert_eq(bits_at(l, 1), 0x4040);
  l = literal("f16[]", "65504");
  cr_assert_eq(bits_at(l, 0), 0x7bff);
  cr_assert_str_eq(literal_err("f16[]", "1e6"),
                   "value 1000000 is out of range for f16");
  literal_err("f32[]", "1e39");
  literal_err("f64[]", "1e999");
  l = literal("f8e4m3fn[2]", "{1, 448}");
  cr_assert_eq(bits_at(l, 0), 0x38);
  cr_assert_eq(bits_at(l, 1), 0x7e);
}

Test(parse, literal_nans) {
  Literal *l = literal("f32[4]", "{nan, -nan, nan(0x1), -nan(0x7fffff)}");
  cr_assert_eq(bits_at(l, 0), 0x7fc00000);
  cr_assert_eq(bits_at(l, 1), 0xffc00000);
  cr_assert_eq(bits_at(l, 2), 0x7f800001);
  cr_assert_eq(bits_at(l, 3), 0xffffffff);
  l = literal("f64[]", "nan(0x123)");
  cr_assert_eq(bits_at(l, 0), 0x7ff0000000000123ull);
  l = literal("bf16[]", "nan");
  cr_assert_eq(bits_at(l, 0), 0x7fc0);
  l = literal("f16[]", "nan(0x1)");
  cr_assert_eq(bits_at(l, 0), 0x7c01);
  literal_err("f32[]", "nan(0x800000)");
  literal_err("f8e4m3fn[]", "nan(0x1)");
}

Test(parse, literal_complex) {
  Literal *l = literal("c64[2]", "{(1, 2), (-0.5, inf)}");
  float f[4];
  memcpy(f, l->data, sizeof f);
  cr_assert(f[0] == 1.0f && f[1] == 2.0f && f[2] == -0.5f && isinf(f[3]));
  l = literal("c128[]", "(5.96e-08, 0)");
  double d[2];
  memcpy(d, l->data, sizeof d);
  cr_assert(d[0] == 5.96e-08 && d[1] == 0.0);
  literal_err("c64[]", "1");
  literal_err("f32[]", "(1, 2)");
}

Test(parse, literal_nested_arrays) {
  Literal *l = literal("s32[2,3]", "{ {1, 2, 3}, {4, 5, 6} }");
  cr_assert_eq(bits_at(l, 5), 6);
  cr_assert_eq(bits_at(l, 3), 4);
  cr_assert_str_eq(literal_err("f32[2]", "{1, 2, 3}"),
                   "literal has 3 elements but shape f32[2] needs 2");
  cr_assert_str_eq(literal_err("f32[2,2]", "{{1,2},{3}}"),
                   "literal has 1 elements in dimension 1 but shape f32[2,2] "
                   "needs 2");
  literal_err("f32[2]", "{{1},{2}}");
  literal_err("f32[2,1]", "{1, 2}");
  l = literal("f32[0]", "{}");
  cr_assert_not_null(l);
}

Test(parse, literal_elided_and_tuples) {
  Literal *l = literal("f32[100,100]", "{...}");
  cr_assert(l->elided);
  cr_assert_null(l->data);
  l = literal("f32[1000000000000]", "{...}");
  cr_assert(l->elided);
  literal_err("f32[1000000000000]", "{1, 2}");
  literal_err("f32[2,2]", "{{...}}");
  l = literal("(s32[], (f32[2], pred[]))", "(1, ({2, 3}, true))");
  cr_assert_eq(l->ntuple, 2);
  cr_assert_eq(bits_at(l->tuple[0], 0), 1);
  cr_assert_eq(l->tuple[1]->ntuple, 2);
  cr_assert_eq(l->tuple[1]->tuple[1]->data[0], 1);
  literal_err("(s32[], s32[])", "(1)");
  literal_err("(s32[], s32[])", "(1, 2, 3)");
}

/*
 * Modules, computations, instructions
 */
static const char *const basic =
    "HloModule basic, is_scheduled=true, replica_count=2, num_partitions=4\n"
    "\n"
    "%add (x: f32[], y: f32[]) -> f32[] {\n"
    "  %x = f32[] parameter(0)\n"
    "  %y = f32[] parameter(1)\n"
    "  ROOT %sum = f32[] add(f32[] %x, f32[] %y)\n"
    "}\n"
    "\n"
    "ENTRY %main (p: f32[4]) -> f32[] {\n"
    "  %p = f32[4]{0} parameter(0)\n"
    "  %c = f32[] constant(0)\n"
    "  ROOT %r = f32[] reduce(%p, %c), dimensions={0}, to_apply=%add\n"
    "} // main\n";

Test(parse, module_basic) {
  HloModule *m = parse1(basic);
  cr_assert_str_eq(m->name, "basic");
  cr_assert(m->is_scheduled && m->has_is_scheduled);
  cr_assert_eq(m->replica_count, 2);
  cr_assert_eq(m->num_partitions, 4);
  cr_assert_eq(m->ncomps, 2);
  cr_assert_str_eq(m->comps[0]->name, "add");
  cr_assert_eq(m->entry, m->comps[1]);
  cr_assert(m->entry->is_entry && m->entry->printed_signature);
  HloComp *add = m->comps[0];
  cr_assert_eq(add->nparams, 2);
  cr_assert_str_eq(add->params[1]->name, "y");
  cr_assert_str_eq(add->root->name, "sum");
  HloInstr *r = find(m, NULL, "r");
  cr_assert_eq(r->op, HLO_REDUCE);
  cr_assert_eq(r->nops, 2);
  cr_assert_eq(r->ncalled, 1);
  cr_assert_eq(r->called[0], add);
  LIST(&r->dims, 0);
  cr_assert(r->has_dims);
  cr_assert_eq(m->entry->root, r);
  cr_assert_eq(r->loc.line, 12);
  cr_assert_eq(r->loc.col, 8);
  cr_assert_eq(find(m, NULL, "c")->literal->shape->et, ET_F32);
}

Test(parse, root_defaults_to_last) {
  HloModule *m = parse1("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n"
                        "  b = f32[] negate(a)\n}\n");
  cr_assert_str_eq(m->entry->root->name, "b");
  cr_assert_str_eq(m->entry->name, "e");
  cr_assert(!m->entry->printed_signature);
}

Test(parse, nested_operands_get_anon_names) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n"
      "  y = f32[] parameter(1)\n"
      "  ROOT r = f32[] add(f32[] maximum(x, y), f32[] maximum(y, x))\n}\n");
  HloComp *c = m->entry;
  cr_assert_eq(c->ninstrs, 5);
  cr_assert_str_eq(c->instrs[2]->name, "maximum.anon");
  cr_assert_str_eq(c->instrs[3]->name, "maximum.anon.1");
  cr_assert_eq(c->root->ops[0], c->instrs[2]);
  cr_assert_eq(c->root->ops[1], c->instrs[3]);
}

Test(parse, operands_inline_shapes_comments_multiline) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
      "  ROOT t = (f32[2], f32[2], /*index=2*/f32[2]) tuple(\n"
      "      f32[2]{0} x, /* a comment */ x,\n"
      "      /*index=2*/x)\n}\n");
  HloInstr *t = m->entry->root;
  cr_assert_eq(t->nops, 3);
  cr_assert_eq(t->shape->ntuple, 3);
  cr_assert_str_eq(parse_err("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n"
                             "  ROOT n = f32[2] negate(f32[3] x)\n}\n"),
                   "declared operand shape f32[3] is not compatible with the "
                   "shape f32[2] of 'x'");
}

Test(parse, shape_inferred_when_left_out) {
  HloModule *m = parse1("HloModule m\nENTRY e {\n  p0 = f32[3] parameter(0)\n"
                        "  p1 = f32[3] parameter(1)\n  ROOT out = add(p0, p1)\n}\n");
  HloInstr *r = m->entry->root;
  cr_assert_not_null(r->shape);
  cr_assert(r->shape->et == ET_F32 && r->shape->rank == 1 &&
            r->shape->dims[0] == 3);
  cr_assert(strstr(parse_err("HloModule m\nENTRY e {\n  ROOT c = constant(1)\n}\n"),
                   "cannot be inferred") != NULL);
}

Test(parse, shapes_are_interned) {
  HloModule *m = parse1("HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0)\n"
                        "  b = f32[2]{0} negate(a)\n  c = f32[2] negate(b)\n}\n");
  HloComp *c = m->entry;
  cr_assert_eq(c->instrs[0]->shape, c->instrs[1]->shape);
  cr_assert(c->instrs[2]->shape->layout->minor_to_major[0] == 0);
}

Test(parse, multiple_modules) {
  HloModule **ms;
  int n = parse_named("multi.hlo",
                      "// RUN: hlo-opt %s | FileCheck %s\n"
                      "HloModule a\nENTRY e { ROOT p = f32[] parameter(0) }\n"
                      "// CHECK: foo\n"
                      "// -----\n"
                      "// ----------------------  (decoration, not a split)\n"
                      "HloModule b\nENTRY e { ROOT p = s32[] parameter(0) }\n"
                      "// -----\n\n// -----\n",
                      &ms);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(ms[0]->name, "a");
  cr_assert_str_eq(ms[1]->name, "b");
  cr_assert_eq(ms[1]->entry->root->shape->et, ET_S32);
  free(ms);
}

Test(parse, headerless_file) {
  HloModule **ms;
  int n = parse_named("dir/my-test.fusion.hlo",
                      "fused {\n  p = f32[2] parameter(0)\n"
                      "  ROOT n = f32[2] negate(p)\n}\n\n"
                      "main {\n  a = f32[2] parameter(0)\n"
                      "  ROOT f = f32[2] fusion(a), kind=kLoop, calls=fused\n}\n",
                      &ms);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(ms[0]->name, "my-test.fusion");
  cr_assert_str_eq(ms[0]->entry->name, "main");
  HloInstr *f = ms[0]->entry->root;
  cr_assert_eq(f->fusion_kind, FUSION_LOOP);
  cr_assert_eq(f->called[0], ms[0]->comps[0]);
  cr_assert_eq(ms[0]->comps[0]->fusion_instr, f);
  free(ms);
  n = parse_named("9lives.hlo", "e { ROOT p = f32[] parameter(0) }", &ms);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(ms[0]->name, "_9lives");
  free(ms);
}

Test(parse, entry_is_marked_or_last) {
  HloModule *m = parse1("HloModule m\nENTRY first { ROOT p = f32[] parameter(0) }\n"
                        "second { ROOT p = f32[] parameter(0) }\n");
  cr_assert_str_eq(m->entry->name, "first");
  cr_assert(!m->comps[1]->is_entry);
}

Test(parse, glog_prefixes) {
  const char *line3 = "W0521 12:04:45.8    1 foo.cc:1]   ROOT p = f32[] parameter(0)\n";
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "I0521 12:04:45.883483    1509 service.cc:186] HloModule g\n"
                "I0521 12:04:45.883483    1509 service.cc:186] ENTRY e {\n"
                "%s"
                "I0521 12:04:45.883483    1509 service.cc:186] }\n",
            line3);
  HloModule *m = parse1(b.s);
  sb_free(&b);
  cr_assert_str_eq(m->name, "g");
  /* Locations stay those of the original text. */
  cr_assert_eq(m->entry->root->loc.line, 3);
  cr_assert_eq(m->entry->root->loc.col, (int)(strstr(line3, "p =") - line3) + 1);
}

Test(parse, stack_frame_tables) {
  HloModule *m = parse1(
      "HloModule s\n\nFileNames\n1 \"a.py\"\nFunctionNames\n1 \"f\"\n"
      "FileLocations\n1 {file_name_id=1 function_name_id=1 line=2 end_line=2 "
      "column=1 end_column=4}\nStackFrames\n1 {file_location_id=1 "
      "parent_frame_id=1}\n\nENTRY e {\n  ROOT p = f32[] parameter(0), "
      "metadata={op_name=\"x\" stack_frame_id=1}\n}\n");
  cr_assert_not_null(m->trailer);
  cr_assert(strncmp(m->trailer, "FileNames\n1 \"a.py\"", 18) == 0);
  cr_assert(strstr(m->trailer, "parent_frame_id=1}") != NULL);
  cr_assert_eq(m->entry->root->metadata->stack_frame_id, 1);
}

/*
 * Module header attributes
 */
Test(parse, module_header_attrs) {
  HloModule *m = parse1(
      "HloModule h, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {2}, "
      "must-alias) }, buffer_donor={ (0, {}), (1, {1}) }, "
      "entry_computation_layout={(f32[2]{0}, /*index=1*/s32[])->f32[2]{0}}, "
      "allow_spmd_sharding_propagation_to_parameters={true,false}, "
      "allow_spmd_sharding_propagation_to_output={true}, "
      "frontend_attributes={fingerprint=\"abc\", xla.sdy.meshes={mesh = "
      "#sdy.mesh<[\"x\"=2]>}}, alias_passthrough_params=true, "
      "new_fancy_attr={a, (b, c)}\n"
      "ENTRY e {\n  a = f32[2] parameter(0)\n  b = s32[] parameter(1)\n"
      "  ROOT t = (f32[2], f32[2]) tuple(a, a)\n}\n");
  cr_assert_eq(m->nio_alias, 2);
  cr_assert_eq(m->io_alias[0].kind, 1);
  cr_assert_eq(m->io_alias[1].kind, 2);
  LIST(&m->io_alias[1].output_index, 1);
  LIST(&m->io_alias[1].operand_index, 2);
  cr_assert_eq(m->io_alias[1].operand, 1);
  cr_assert_eq(m->nbuffer_donors, 2);
  cr_assert_eq(m->buffer_donors[1].operand, 1);
  cr_assert_eq(m->entry_layout->nparams, 2);
  cr_assert_eq(m->entry_layout->params[1]->et, ET_S32);
  cr_assert_eq(m->entry_layout->result->rank, 1);
  cr_assert(m->nspmd_params == 2 && m->spmd_params[0] && !m->spmd_params[1]);
  cr_assert(m->nspmd_output == 1 && m->spmd_output[0]);
  cr_assert_eq(m->frontend_attrs->n, 2);
  cr_assert_str_eq(m->frontend_attrs->kv[0].value, "abc");
  cr_assert_str_eq(m->frontend_attrs->kv[1].key, "xla.sdy.meshes");
  cr_assert_str_eq(m->frontend_attrs->kv[1].value,
                   "{mesh = #sdy.mesh<[\"x\"=2]>}");
  cr_assert(m->alias_passthrough_params);
  cr_assert_eq(m->nraw_attrs, 1);
  cr_assert_str_eq(m->raw_attrs[0].name, "new_fancy_attr");
  cr_assert_str_eq(m->raw_attrs[0].value, "{a, (b, c)}");
  cr_assert_eq(D.nwarnings, 1);
}

/*
 * Instruction attributes, kept typed
 */
Test(parse, unknown_attribute_kept_raw) {
  HloInstr *i = entry_instr("  p = f32[4] parameter(0)\n"
                            "  ROOT n = f32[4] negate(p), new_attr={x=[1,2], y=\"a,b\"}, "
                            "other=foo(bar, baz)\n",
                            "n");
  cr_assert_eq(i->nraw_attrs, 2);
  cr_assert_str_eq(i->raw_attrs[0].name, "new_attr");
  cr_assert_str_eq(i->raw_attrs[0].value, "{x=[1,2], y=\"a,b\"}");
  cr_assert_str_eq(i->raw_attrs[1].value, "foo(bar, baz)");
  cr_assert_eq(D.nwarnings, 2);
}

Test(parse, attrs_shape_ops) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n  p = f32[4,8] parameter(0)\n"
      "  z = f32[] constant(0)\n"
      "  s = f32[2,4] slice(p), slice={[0:4:2], [2:6]}\n"
      "  pd = f32[7,9] pad(p, z), padding=1_2x0_1_0\n"
      "  pn = f32[3,8] pad(p, z), padding=-1_0x0_0\n"
      "  t = f32[8,4] transpose(p), dimensions={1,0}\n"
      "  b = f32[2,4,8] broadcast(p), dimensions={1,2}\n"
      "  i = s32[4,8] iota(), iota_dimension=1\n"
      "  ds = f32[1,8] dynamic-slice(p, i, i), dynamic_slice_sizes={1,8}\n"
      "  g = s32[] get-dimension-size(p), dimensions={1}\n"
      "  tu = (f32[4,8]) tuple(p)\n"
      "  ROOT gte = f32[4,8] get-tuple-element(tu), index=0\n}\n");
  HloInstr *s = find(m, NULL, "s");
  cr_assert(s->slice[0].start == 0 && s->slice[0].limit == 4 &&
            s->slice[0].stride == 2);
  cr_assert(s->slice[1].start == 2 && s->slice[1].limit == 6 &&
            s->slice[1].stride == 1);
  HloInstr *pd = find(m, NULL, "pd");
  cr_assert(pd->padding[0].lo == 1 && pd->padding[0].hi == 2 &&
            pd->padding[0].interior == 0);
  cr_assert(pd->padding[1].hi == 1);
  cr_assert_eq(find(m, NULL, "pn")->padding[0].lo, -1);
  LIST(&find(m, NULL, "t")->dims, 1, 0);
  LIST(&find(m, NULL, "b")->dims, 1, 2);
  cr_assert_eq(find(m, NULL, "i")->iota_dim, 1);
  LIST(&find(m, NULL, "ds")->dynamic_slice_sizes, 1, 8);
  LIST(&find(m, NULL, "g")->dims, 1);
  cr_assert_eq(find(m, NULL, "gte")->tuple_index, 0);
  cr_assert_str_eq(parse_err("HloModule m\nENTRY e {\n  p = f32[4,8] parameter(0)\n"
                             "  ROOT s = f32[2] slice(p), slice={[0:2]}\n}\n"),
                   "slice has 1 dimensions but the operand has rank 2");
}

Test(parse, attrs_conv_window_dot) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n  x = f32[1,8,8,4] parameter(0)\n"
      "  k = f32[3,3,4,16] parameter(1)\n"
      "  c = f32[1,4,4,16] convolution(x, k), window={size=3x3 stride=2x2 "
      "pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=1x2 rhs_reversal=0x1}, "
      "dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1, "
      "operand_precision={high, highest}\n"
      "  a = f32[2,3,4] parameter(2)\n  bb = f32[2,4,5] parameter(3)\n"
      "  ROOT d = f32[2,3,5] dot(a, bb), lhs_batch_dims={0}, rhs_batch_dims={0}, "
      "lhs_contracting_dims={2}, rhs_contracting_dims={1}, "
      "algorithm=dot_bf16_bf16_f32\n}\n");
  HloInstr *c = find(m, NULL, "c");
  Window *w = c->conv->window;
  cr_assert_eq(w->ndims, 2);
  cr_assert(w->dims[0].size == 3 && w->dims[0].stride == 2 &&
            w->dims[0].pad_lo == 1 && w->dims[0].pad_hi == 1);
  cr_assert(w->dims[1].pad_lo == 0 && w->dims[1].pad_hi == 1 &&
            w->dims[1].window_dilation == 2 && w->dims[1].reversal);
  cr_assert(w->dims[0].base_dilation == 1 && !w->dims[0].reversal);
  ConvDnums *dn = c->conv->dnums;
  cr_assert_eq(dn->nspatial, 2);
  cr_assert(dn->input_batch == 0 && dn->input_feature == 3 &&
            dn->input_spatial[0] == 1 && dn->input_spatial[1] == 2);
  cr_assert(dn->kernel_input_feature == 2 && dn->kernel_output_feature == 3 &&
            dn->kernel_spatial[1] == 1);
  cr_assert(dn->output_batch == 0 && dn->output_feature == 3);
  cr_assert(c->conv->feature_group_count == 1 && c->conv->batch_group_count == 1);
  cr_assert(c->nprecision == 2 && c->precision[0] == PREC_HIGH &&
            c->precision[1] == PREC_HIGHEST);
  HloInstr *d = find(m, NULL, "d");
  LIST(&d->dot->lhs_batch, 0);
  LIST(&d->dot->rhs_contracting, 1);
  LIST(&d->dot->lhs_contracting, 2);
  cr_assert_str_eq(d->algorithm_dot, "dot_bf16_bf16_f32");
}

Test(parse, attrs_gather_scatter) {
  HloModule *m = parse1(
      "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      " ROOT s = f32[] add(a, b) }\n"
      "ENTRY e {\n  op = f32[3,3] parameter(0)\n  ix = s32[2] parameter(1)\n"
      "  g = f32[2,3] gather(op, ix), offset_dims={1}, collapsed_slice_dims={0}, "
      "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}, "
      "indices_are_sorted=true\n"
      "  up = f32[2,3] parameter(2)\n"
      "  ROOT sc = f32[3,3] scatter(op, ix, up), update_window_dims={1}, "
      "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
      "index_vector_dim=1, to_apply=add, unique_indices=true\n}\n");
  HloInstr *g = find(m, NULL, "g");
  LIST(&g->gather->offset_dims, 1);
  LIST(&g->gather->collapsed_slice_dims, 0);
  LIST(&g->gather->start_index_map, 0);
  cr_assert_eq(g->gather->index_vector_dim, 1);
  LIST(&g->gather_slice_sizes, 1, 3);
  cr_assert(g->indices_are_sorted);
  HloInstr *sc = find(m, NULL, "sc");
  LIST(&sc->scatter->update_window_dims, 1);
  LIST(&sc->scatter->inserted_window_dims, 0);
  LIST(&sc->scatter->scatter_dims_to_operand_dims, 0);
  cr_assert_eq(sc->scatter->index_vector_dim, 1);
  cr_assert(sc->unique_indices);
  cr_assert_str_eq(sc->called[0]->name, "add");
}

Test(parse, attrs_compare_sort_topk_misc) {
  HloModule *m = parse1(
      "HloModule m\nlt { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      " ROOT c = pred[] compare(a, b), direction=LT, type=TOTALORDER }\n"
      "ENTRY e {\n  p = f32[8] parameter(0)\n"
      "  s = f32[8] sort(p), dimensions={0}, is_stable=true, to_apply=lt\n"
      "  t = (f32[2], s32[2]) topk(p), k=2, largest=false\n"
      "  rp = f32[8] reduce-precision(p), exponent_bits=5, mantissa_bits=10\n"
      "  sd = f32[] constant(1)\n"
      "  r = f32[8] rng(sd, sd), distribution=rng_normal\n"
      "  st = u64[2] parameter(1)\n"
      "  rb = (u64[2], u32[8]) rng-bit-generator(st), algorithm=rng_philox\n"
      "  cp = f32[8] copy(p), frontend_attributes={_xla_x=\"1\", b=\"q\\\"\"}\n"
      "  ROOT cs = (f32[8], f32[8], u32[]) copy-start(p), "
      "cross_program_prefetch_index=0\n}\n");
  HloInstr *c = hlo_module_find_comp(m, "lt")->root;
  cr_assert_eq(c->cmp_dir, CMP_LT);
  cr_assert_eq(c->cmp_type, CMPT_TOTALORDER);
  HloInstr *s = find(m, NULL, "s");
  cr_assert(s->is_stable);
  HloInstr *t = find(m, NULL, "t");
  cr_assert(t->topk_k == 2 && !t->topk_largest);
  HloInstr *rp = find(m, NULL, "rp");
  cr_assert(rp->exponent_bits == 5 && rp->mantissa_bits == 10);
  cr_assert_eq(find(m, NULL, "r")->rng_dist, RNG_NORMAL);
  cr_assert_eq(find(m, NULL, "rb")->rng_algo, RNG_PHILOX);
  KVList *fa = find(m, NULL, "cp")->frontend_attrs;
  cr_assert_eq(fa->n, 2);
  cr_assert_str_eq(fa->kv[0].key, "_xla_x");
  cr_assert_str_eq(fa->kv[1].value, "q\"");
  cr_assert_eq(find(m, NULL, "cs")->cross_program_prefetch_index, 0);
  cr_assert_eq(find(m, NULL, "p")->cross_program_prefetch_index, -1);
}

Test(parse, attrs_linalg_fft_batchnorm) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n  a = f32[4,4] parameter(0)\n"
      "  b = f32[4,3] parameter(1)\n"
      "  ts = f32[4,3] triangular-solve(a, b), left_side=true, lower=true, "
      "unit_diagonal=true, transpose_a=ADJOINT\n"
      "  ch = f32[4,4] cholesky(a), lower=true\n"
      "  c = c64[4,4] parameter(2)\n"
      "  f = c64[4,4] fft(c), fft_type=IFFT, fft_length={4,4}\n"
      "  x = f32[2,4,4] parameter(3)\n  sc = f32[4] parameter(4)\n"
      "  ROOT bn = (f32[2,4,4], f32[4], f32[4]) batch-norm-training(x, sc, sc), "
      "epsilon=0.001, feature_index=1\n}\n");
  HloInstr *ts = find(m, NULL, "ts");
  cr_assert(ts->tri_left_side && ts->tri_lower && ts->tri_unit_diagonal);
  cr_assert_eq(ts->tri_transpose_a, TRI_ADJOINT);
  cr_assert(find(m, NULL, "ch")->cholesky_lower);
  HloInstr *f = find(m, NULL, "f");
  cr_assert_eq(f->fft_type, FFT_IFFT);
  LIST(&f->fft_length, 4, 4);
  HloInstr *bn = find(m, NULL, "bn");
  cr_assert_eq(bn->epsilon, 0.001);
  cr_assert_eq(bn->feature_index, 1);
}

Test(parse, attrs_custom_call) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n  a = f32[2,3]{1,0} parameter(0)\n"
      "  ROOT cc = f32[2,3]{0,1} custom-call(a), custom_call_target=\"my\\tfn\", "
      "api_version=API_VERSION_TYPED_FFI, custom_call_has_side_effect=true, "
      "operand_layout_constraints={f32[2,3]{0,1}}, "
      "output_to_operand_aliasing={{}: (0, {})}, schedule=SCHEDULE_LATEST, "
      "backend_config={\"k\": [1, {\"n\":\"}\"}]}, padding_type=PADDING_SAME, "
      "literal=s32[2]{0} {7, 8}\n}\n");
  HloInstr *cc = m->entry->root;
  cr_assert_str_eq(cc->cc->target, "my\tfn");
  cr_assert_eq(cc->cc->api_version, CC_API_TYPED_FFI);
  cr_assert(cc->cc->has_side_effect);
  cr_assert(cc->cc->has_layout_constraints);
  cr_assert_eq(cc->cc->nlayout_constraints, 1);
  cr_assert_eq(cc->cc->layout_constraints[0]->layout->minor_to_major[0], 0);
  cr_assert_eq(cc->cc->naliases, 1);
  cr_assert_eq(cc->cc->aliases[0].output_index.n, 0);
  cr_assert_eq(cc->cc->aliases[0].operand, 0);
  cr_assert_str_eq(cc->cc->schedule, "SCHEDULE_LATEST");
  cr_assert_str_eq(cc->backend_config, "{\"k\": [1, {\"n\":\"}\"}]}");
  cr_assert_str_eq(cc->padding_type, "PADDING_SAME");
  cr_assert_eq(bits_at(cc->cc->literal, 1), 8);
  HloInstr *s = entry_instr("  ROOT c = f32[] custom-call(), "
                            "custom_call_target=\"x\", backend_config=\"a\\\"b\"",
                            "c");
  cr_assert_str_eq(s->backend_config, "\"a\\\"b\"");
}

Test(parse, called_computation_order) {
  HloModule *m = parse1(
      "HloModule m\n"
      "cond { p = s32[] parameter(0)\n z = s32[] constant(9)\n"
      " ROOT c = pred[] compare(p, z), direction=LT }\n"
      "body { p = s32[] parameter(0)\n ROOT n = s32[] negate(p) }\n"
      "br0 { p = s32[] parameter(0)\n ROOT n = s32[] negate(p) }\n"
      "br1 { p = s32[] parameter(0)\n ROOT c = s32[] copy(p) }\n"
      "ge { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      " ROOT c = pred[] compare(a, b), direction=GE }\n"
      "sum { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      " ROOT s = f32[] add(a, b) }\n"
      "ENTRY e {\n  i = s32[] parameter(0)\n"
      "  w = s32[] while(i), body=body, condition=cond\n"
      "  pr = pred[] parameter(1)\n"
      "  c1 = s32[] conditional(pr, i, i), false_computation=br1, "
      "true_computation=br0\n"
      "  c2 = s32[] conditional(i, i, i), branch_computations={br1, br0}\n"
      "  x = f32[4] parameter(2)\n  s = f32[2] parameter(3)\n"
      "  z = f32[] constant(0)\n"
      "  ROOT sas = f32[4] select-and-scatter(x, s, z), window={size=2 stride=2}, "
      "scatter=sum, select=ge\n}\n");
  HloInstr *w = find(m, NULL, "w");
  cr_assert_eq(w->ncalled, 2);
  cr_assert_str_eq(w->called[0]->name, "cond");
  cr_assert_str_eq(w->called[1]->name, "body");
  HloInstr *c1 = find(m, NULL, "c1");
  cr_assert_str_eq(c1->called[0]->name, "br0");
  cr_assert_str_eq(c1->called[1]->name, "br1");
  HloInstr *c2 = find(m, NULL, "c2");
  cr_assert_str_eq(c2->called[0]->name, "br1");
  HloInstr *sas = find(m, NULL, "sas");
  cr_assert_str_eq(sas->called[0]->name, "ge");
  cr_assert_str_eq(sas->called[1]->name, "sum");
  cr_assert_eq(sas->window->ndims, 1);
}

Test(parse, attrs_collectives) {
  HloModule *m = parse1(
      "HloModule m\nsum { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
      " ROOT s = f32[] add(a, b) }\n"
      "ENTRY e {\n  p = f32[8] parameter(0)\n"
      "  ar = f32[8] all-reduce(p), channel_id=3, replica_groups={{0,1},{2,3}}, "
      "use_global_device_ids=true, to_apply=sum\n"
      "  ag = f32[32] all-gather(p), replica_groups=[2,4]<=[4,2]T(1,0), "
      "dimensions={0}, constrain_layout=true\n"
      "  ag2 = f32[64] all-gather(p), replica_groups=[1,8]<=[8], dimensions={0}\n"
      "  cp = f32[8] collective-permute(p), source_target_pairs={{0,1},{1,2}}\n"
      "  ars = f32[8] all-reduce-start(p), to_apply=sum, replica_groups={}\n"
      "  ard = f32[8] all-reduce-done(ars)\n"
      "  tok = token[] after-all()\n"
      "  s = (f32[8], u32[], token[]) send(p, tok), channel_id=5, "
      "is_host_transfer=true\n"
      "  ROOT sd = token[] send-done(s), channel_id=5, is_host_transfer=true\n}\n");
  HloInstr *ar = find(m, NULL, "ar");
  cr_assert(ar->has_channel_id && ar->channel_id == 3);
  cr_assert(!ar->replica_groups->iota);
  cr_assert_eq(ar->replica_groups->ngroups, 2);
  LIST(&ar->replica_groups->groups[1], 2, 3);
  cr_assert(ar->use_global_device_ids);
  HloInstr *ag = find(m, NULL, "ag");
  cr_assert(ag->replica_groups->iota);
  LIST(&ag->replica_groups->iota_group_shape, 2, 4);
  LIST(&ag->replica_groups->iota_reshape_dims, 4, 2);
  LIST(&ag->replica_groups->iota_transpose_perm, 1, 0);
  cr_assert(ag->constrain_layout);
  cr_assert_eq(find(m, NULL, "ag2")->replica_groups->iota_transpose_perm.n, 0);
  HloInstr *cp = find(m, NULL, "cp");
  cr_assert_eq(cp->npairs, 2);
  cr_assert(cp->source_target_pairs[1][0] == 1 &&
            cp->source_target_pairs[1][1] == 2);
  cr_assert_eq(find(m, NULL, "ars")->op, HLO_ALL_REDUCE_START);
  cr_assert_eq(find(m, NULL, "ard")->op, HLO_ALL_REDUCE_DONE);
  cr_assert(find(m, NULL, "s")->is_host_transfer);
}

Test(parse, attrs_sharding_forms) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n"
      "  a = f32[8] parameter(0), sharding={replicated}\n"
      "  b = f32[8] copy(a), sharding={maximal device=3}\n"
      "  c = f32[8,4] parameter(1), sharding={devices=[2,1]0,1}\n"
      "  d = f32[8,2,2] parameter(2), sharding={devices=[8,2,1]<=[2,8]T(1,0) "
      "last_tile_dim_replicate}\n"
      "  e = f32[8] copy(a), sharding={devices=[2,2]<=[4] last_tile_dims={manual}}\n"
      "  f = f32[8] copy(a), sharding={manual}\n"
      "  g = f32[8] copy(a), sharding={unknown shard_as 2}\n"
      "  h = f32[8] copy(a), sharding={replicated metadata={op_name=\"x\"}}\n"
      "  et = () tuple()\n"
      "  ROOT t = (f32[8], f32[8], ()) tuple(a, b, et), "
      "sharding={{replicated}, {maximal device=0}, {replicated}}\n}\n");
  cr_assert_eq(find(m, NULL, "a")->sharding->kind, SHARD_REPLICATED);
  Sharding *b = find(m, NULL, "b")->sharding;
  cr_assert(b->kind == SHARD_MAXIMAL && b->device == 3);
  Sharding *c = find(m, NULL, "c")->sharding;
  cr_assert(c->kind == SHARD_TILED && !c->iota_devices);
  LIST(&c->tile_dims, 2, 1);
  LIST(&c->devices, 0, 1);
  Sharding *d = find(m, NULL, "d")->sharding;
  cr_assert(d->iota_devices && d->last_tile_dim_replicate);
  LIST(&d->iota_reshape_dims, 2, 8);
  LIST(&d->iota_transpose_perm, 1, 0);
  Sharding *e = find(m, NULL, "e")->sharding;
  cr_assert_eq(e->nlast_tile_dims, 1);
  cr_assert_str_eq(e->last_tile_dims[0], "manual");
  cr_assert_eq(find(m, NULL, "f")->sharding->kind, SHARD_MANUAL);
  Sharding *g = find(m, NULL, "g")->sharding;
  cr_assert_eq(g->kind, SHARD_UNKNOWN);
  cr_assert_str_eq(g->shard_group, "shard_as 2");
  cr_assert_str_eq(find(m, NULL, "h")->sharding->metadata, "{op_name=\"x\"}");
  Sharding *t = find(m, NULL, "t")->sharding;
  cr_assert(t->kind == SHARD_TUPLE && t->ntuple == 3);
  cr_assert_eq(t->tuple[1]->kind, SHARD_MAXIMAL);
  cr_assert(strstr(parse_err("HloModule m\nENTRY e {\n  ROOT a = f32[8] "
                             "parameter(0), sharding={devices=[2,2]0,1}\n}\n"),
                   "4 tiles") != NULL);
}

Test(parse, attrs_metadata_and_control) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n"
      "  b = f32[] negate(a), metadata={op_type=\"Neg\" op_name=\"jit(f)/neg[x=('y',)]\" "
      "source_file=\"/a/b.py\" source_line=12 source_end_line=13 source_column=4 "
      "source_end_column=9 deduplicated_name=\"d\" scheduling_name=\"s\" "
      "stack_frame_id=7 profile_type={1} future_key=5}\n"
      "  ROOT c = f32[] copy(a), control-predecessors={b}, parameter_replication={true}, "
      "statistics={visualizing_index=1,stat-0=0.5}, domain={kind=\"sharding\", "
      "entry={replicated}, exit={maximal device=0}}, origin={{\"a\"}}, "
      "result_accuracy={mode=highest}\n}\n");
  OpMetadata *md = find(m, NULL, "b")->metadata;
  cr_assert_str_eq(md->op_type, "Neg");
  cr_assert_str_eq(md->op_name, "jit(f)/neg[x=('y',)]");
  cr_assert_str_eq(md->source_file, "/a/b.py");
  cr_assert(md->source_line == 12 && md->source_end_line == 13 &&
            md->source_column == 4 && md->source_end_column == 9);
  cr_assert_str_eq(md->deduplicated_name, "d");
  cr_assert_str_eq(md->scheduling_name, "s");
  cr_assert_eq(md->stack_frame_id, 7);
  cr_assert_str_eq(md->profile_type, "{1}");
  cr_assert_str_eq(md->extra, "future_key=5");
  HloInstr *c = m->entry->root;
  cr_assert_eq(c->ncontrol_preds, 1);
  cr_assert_eq(c->control_preds[0], find(m, NULL, "b"));
  cr_assert(c->nparam_replication == 1 && c->param_replication[0]);
  cr_assert_str_eq(c->statistics, "{visualizing_index=1,stat-0=0.5}");
  cr_assert_str_eq(c->domain,
                   "{kind=\"sharding\", entry={replicated}, exit={maximal device=0}}");
  cr_assert_str_eq(c->origin, "{{\"a\"}}");
  cr_assert_str_eq(c->result_accuracy, "{mode=highest}");
  cr_assert_str_eq(parse_err("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n"
                             "  ROOT c = f32[] copy(a), control-predecessors={zz}\n}\n"),
                   "instruction 'zz' is not defined");
}

Test(parse, attrs_feeds_reshape_and_rng_state) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n  t = token[] after-all()\n"
      "  i = ((f32[2]), token[]) infeed(t), infeed_config=\"cfg\"\n"
      "  d = (f32[2]) get-tuple-element(i), index=0\n"
      "  o = token[] outfeed(d, t), outfeed_config=\"oc\", outfeed_shape=(f32[2]{0})\n"
      "  p = f32[2,3] parameter(0)\n"
      "  s = u64[2] rng-get-and-update-state(), delta=4096\n"
      "  ROOT r = f32[3,2] reshape(p), inferred_dimension=1\n}\n");
  cr_assert_str_eq(find(m, NULL, "i")->infeed_config, "cfg");
  cr_assert_eq(find(m, NULL, "s")->rng_delta, 4096);
  HloInstr *o = find(m, NULL, "o");
  cr_assert_str_eq(o->outfeed_config, "oc");
  cr_assert_eq(o->outfeed_shape->ntuple, 1);
  HloInstr *r = m->entry->root;
  cr_assert_eq(r->nraw_attrs, 0);
  cr_assert(r->has_inferred_dimension);
  cr_assert_eq(r->inferred_dimension, 1);
  cr_assert(!find(m, NULL, "p")->has_inferred_dimension);
  cr_assert_eq(D.nwarnings, 0);
  StrBuf b;
  sb_init(&b);
  hlo_print_instr(&b, r, NULL);
  cr_assert(strstr(b.s, ", inferred_dimension=1"), "%s", b.s);
  sb_clear(&b);
  hlo_print_instr(&b, find(m, NULL, "s"), NULL);
  cr_assert(strstr(b.s, "rng-get-and-update-state(), delta=4096"), "%s", b.s);
  sb_free(&b);
}

Test(parse, async_syntax_sugar) {
  HloModule *m = parse1(
      "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
      "  s = ((f32[4]), f32[4], s32[]) negate-start(p), "
      "async_execution_thread=\"parallel\", metadata={op_name=\"n\"}\n"
      "  u = ((f32[4]), f32[4], s32[]) negate-update(s)\n"
      "  ROOT d = f32[4] negate-done(u)\n}\n");
  HloInstr *s = find(m, NULL, "s");
  cr_assert_eq(s->op, HLO_ASYNC_START);
  cr_assert(s->async_sugar);
  cr_assert_eq(s->async_wrapped_op, HLO_NEGATE);
  cr_assert_str_eq(s->async_thread, "parallel");
  cr_assert_eq(s->ncalled, 1);
  HloComp *w = s->called[0];
  cr_assert_str_eq(w->name, "async_wrapped");
  cr_assert_eq(w->nparams, 1);
  cr_assert_eq(w->root->op, HLO_NEGATE);
  cr_assert_eq(w->root->ops[0], w->params[0]);
  cr_assert_str_eq(w->root->metadata->op_name, "n");
  cr_assert_str_eq(s->metadata->op_name, "n");
  cr_assert_eq(m->comps[0], w); /* callees first */
  HloInstr *u = find(m, NULL, "u"), *d = m->entry->root;
  cr_assert(u->op == HLO_ASYNC_UPDATE && u->async_sugar && u->called[0] == w);
  cr_assert(d->op == HLO_ASYNC_DONE && d->async_wrapped_op == HLO_NEGATE &&
            d->called[0] == w);
  cr_assert(strstr(parse_err("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
                             "  s = ((f32[4]), f32[4], s32[]) negate-start(p)\n"
                             "  ROOT d = f32[4] abs-done(s)\n}\n"),
                   "wrapped opcode") != NULL);
}

Test(parse, async_fusion_sugar_attrs_go_to_wrapped_op) {
  HloModule *m = parse1(
      "HloModule m\nfused { a = f32[4] parameter(0)\n ROOT n = f32[4] negate(a) }\n"
      "ENTRY e {\n  p = f32[4] parameter(0)\n"
      "  s = ((f32[4]), f32[4], s32[]) fusion-start(p), kind=kLoop, calls=fused\n"
      "  ROOT d = f32[4] fusion-done(s)\n}\n");
  HloInstr *s = find(m, NULL, "s");
  HloInstr *w = s->called[0]->root;
  cr_assert_eq(w->op, HLO_FUSION);
  cr_assert_eq(w->fusion_kind, FUSION_LOOP);
  cr_assert_str_eq(w->called[0]->name, "fused");
  cr_assert_eq(s->fusion_kind, FUSION_NONE);
}

Test(parse, explicit_async_start_and_inline_computation) {
  HloModule *m = parse1(
      "HloModule m\nasync_comp { p = f32[4] parameter(0)\n ROOT n = f32[4] negate(p) }\n"
      "ENTRY e {\n  p = f32[4] parameter(0)\n"
      "  s = ((f32[4]), f32[4], s32[]) async-start(p), calls=async_comp\n"
      "  d = f32[4] async-done(s)\n"
      "  z = f32[] constant(0)\n"
      "  ROOT r = f32[] reduce(d, z), dimensions={0}, to_apply={\n"
      "    a = f32[] parameter(0)\n    b = f32[] parameter(1)\n"
      "    ROOT s = f32[] add(a, b)\n  }\n}\n");
  HloInstr *d = find(m, NULL, "d");
  cr_assert(!d->async_sugar);
  cr_assert_str_eq(d->called[0]->name, "async_comp");
  HloComp *inl = m->entry->root->called[0];
  cr_assert_str_eq(inl->name, "_");
  cr_assert_eq(inl->root->op, HLO_ADD);
  cr_assert_eq(m->comps[m->ncomps - 1], m->entry);
}

/*
 * Errors: messages and locations
 */
Test(parse, error_locations) {
  parse_err("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n"
            "  ROOT b = f32[] foo(a)\n}\n");
  cr_assert_str_eq(D.msg, "unknown opcode 'foo'");
  cr_assert_eq(D.loc.line, 4);
  cr_assert_eq(D.loc.col, 18);
  cr_assert_str_eq(D.loc.file->name, "e.hlo");
}

Test(parse, error_messages) {
  struct {
    const char *text, *msg;
  } cases[] = {
      {"HloModule m\nENTRY e { ROOT b = f32[] negate(x) }",
       "operand 'x' is not defined"},
      {"HloModule m\nENTRY e { a = f32[] parameter(0)\n a = f32[] parameter(1) }",
       "instruction 'a' is already defined"},
      {"HloModule m\nENTRY e { ROOT a = f32[] parameter(0), to_apply=nope }",
       "computation 'nope' is not defined"},
      {"HloModule m\nENTRY e { ROOT a = f32[] parameter(1) }",
       "parameter number 1 is out of range: computation 'e' has 1 parameters"},
      {"HloModule m\nENTRY e { a = f32[4] parameter(0)\n ROOT b = f32[4] "
       "transpose(a) }",
       "attribute dimensions is expected but not seen"},
      {"HloModule m\nENTRY e { a = f32[4] parameter(0)\n ROOT b = f32[4] "
       "negate(a, a) }",
       "negate expects 1 operands, but has 2"},
      {"HloModule m\nENTRY e { a = f32[4] parameter(0)\n ROOT b = f32[4] "
       "negate(a), metadata={}, metadata={} }",
       "attribute 'metadata' is given twice"},
      {"HloModule m\nENTRY e { ROOT a = f32[] constant(1) }\nENTRY f { ROOT a = "
       "f32[] constant(1) }",
       "the module has more than one ENTRY computation"},
      {"HloModule m\nENTRY e { ROOT a = f32[] constant(\"x\") }",
       "unexpected token in literal"},
      {"HloModule m\nENTRY e { ROOT a = s32[] constant(99999999999999999999999) }",
       "integer constant is too large"},
      {"HloModule m\nENTRY e { ROOT a = f32[] parameter(0) ", "expected an instruction name"},
      {"HloModule m\nENTRY e { ROOT a = f32[] parameter(0) } }",
       "expected a computation name"},
      {"", "expected an HloModule or a computation"},
      {"HloModule m\n", "expected a computation"},
      {"HloModule m\nENTRY e { ROOT a = f32[] parameter(0) /* open",
       "unterminated comment"},
      {"HloModule m\nENTRY e { ROOT a = f32[] parameter(0), metadata={op_name=\"x}",
       "unterminated string"},
      {"HloModule m\nENTRY e { ROOT a = f32[] parameter(0), sharding={bogus} }",
       "unexpected token in sharding"},
      {"HloModule m\nENTRY e () -> s32[] { ROOT a = f32[] constant(1) }",
       "the result shape s32[] of computation 'e' does not match its root 'a' "
       "of shape f32[]"},
      {"HloModule m\nENTRY e { ROOT a = f32[] copy-start(b) }",
       "operand 'b' is not defined"},
      {"HloModule m\nENTRY e { ROOT a = f32[] parameter(0), weird=, x=1 }",
       "expected an attribute value"},
  };
  for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
    diag_clear(&D);
    const char *msg = parse_err(cases[i].text);
    cr_assert_str_eq(msg, cases[i].msg, "case %zu: got '%s'", i, msg);
  }
}

Test(parse, deep_nesting_is_an_error) {
  StrBuf b;
  sb_init(&b);
  sb_puts(&b, "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT r = f32[] ");
  for (int i = 0; i < 400; i++)
    sb_puts(&b, "negate(");
  sb_puts(&b, "a");
  for (int i = 0; i < 400; i++)
    sb_putc(&b, ')');
  sb_puts(&b, "\n}\n");
  cr_assert(strstr(parse_err(b.s), "too deep") != NULL);
  sb_free(&b);
}

Test(parse, garbage_never_crashes) {
  /* A few hand-picked prefixes of a valid module; each must fail cleanly. */
  const char *full = basic;
  size_t n = strlen(full);
  for (size_t cut = 0; cut < n; cut += 7) {
    char *t = xstrndup(full, cut);
    HloModule **ms = NULL;
    SrcFile *f = srcfile_from_string("cut.hlo", t, cut);
    Diag d = {0};
    int k = hlo_parse(f, NULL, &ms, &d);
    cr_assert(k == -1 || k == 1);
    cr_assert(k == 1 || d.has_error);
    for (int i = 0; i < k; i++)
      hlo_module_free(ms[i]);
    free(ms);
    diag_clear(&d);
    srcfile_free(f);
    free(t);
  }
}

Test(parse, attrs_scan) {
  HloModule *m = parse1(
      "HloModule m\nbody { c = f32[] parameter(0)\n x = f32[] parameter(1)\n"
      " s = f32[] add(c, x)\n ROOT t = (f32[], f32[]) tuple(s, s) }\n"
      "ENTRY e {\n  xs = f32[8] parameter(0)\n  init = f32[] constant(0)\n"
      "  ROOT r = (f32[8], f32[]) scan(xs, init), dimensions={0}, num_carries=1, "
      "is_reverse=true, is_associative=true, to_apply=body\n}\n");
  HloInstr *r = m->entry->root;
  cr_assert_eq(r->op, HLO_SCAN);
  LIST(&r->dims, 0);
  cr_assert_eq(r->scan_num_carries, 1);
  cr_assert(r->scan_is_reverse && r->scan_is_associative);
  cr_assert_str_eq(r->called[0]->name, "body");
}

Test(parse, glog_prefixes_can_be_kept) {
  const char *text = "I0521 12:04:45.883483 1509 service.cc:186] HloModule g\n"
                     "ENTRY e { ROOT p = f32[] parameter(0) }\n";
  SrcFile *f = srcfile_from_string("g.hlo", text, strlen(text));
  vec_push(&files, f);
  ParseOptions o = {.strip_glog_prefixes = false};
  HloModule **ms = NULL;
  cr_assert_eq(hlo_parse(f, &o, &ms, &D), -1);
  cr_assert_eq(D.loc.line, 1);
  free(ms);
}

Test(parse, nul_bytes_are_errors) {
  static const char *const texts[] = {
      "HloModule m\nENTRY e { ROOT a = f32[] parameter(0), backend_config=\"a\\",
      "HloModule m\nENTRY e { ROOT a = f32[] parameter(0), x={\"",
      "HloModule m\nENTRY e { ROOT a = f32[] parameter(0) } // c",
      "HloModule m\nENTRY e { ROOT a = f32[] parameter(0) /* c",
      "HloModule m\nENTRY e { ROOT a = f32[] parameter(0), x={/* c",
  };
  for (size_t i = 0; i < ARRAY_LEN(texts); i++) {
    /* The text, a NUL byte, then a plausible end. */
    StrBuf b;
    sb_init(&b);
    sb_puts(&b, texts[i]);
    sb_putc(&b, 0);
    sb_puts(&b, "b\" */} }\n");
    SrcFile *f = srcfile_from_string("nul.hlo", b.s, b.len);
    vec_push(&files, f);
    HloModule **ms = NULL;
    diag_clear(&D);
    cr_assert_eq(hlo_parse(f, NULL, &ms, &D), -1, "case %zu", i);
    cr_assert_str_eq(D.msg, "unexpected NUL character", "case %zu: %s", i, D.msg);
    sb_free(&b);
  }
}

/* {...} stands for XLA's placeholder: u32 words counting up through the
 * module's elided literals, an 8-bit counter for the bytes past the words
 * (written from byte size/4 on, as XLA does), pred keeping bit 0. */
Test(parse, elided_placeholder_values) {
  HloModule *m = parse1("HloModule m\nENTRY e {\n"
                        "  a = s32[2] constant({...})\n"
                        "  b = s8[6] constant({...})\n"
                        "  c = pred[5] constant({...})\n"
                        "  ROOT t = (s32[2], s8[6], pred[5]) tuple(a, b, c)\n}\n");
  uint8_t got[8];
  const Literal *a = find(m, NULL, "a")->literal;
  cr_assert(a->elided);
  literal_elided_fill(a, got);
  cr_assert_arr_eq(got, ((uint8_t[]){0, 0, 0, 0, 1, 0, 0, 0}), 8);
  literal_elided_fill(find(m, NULL, "b")->literal, got);
  cr_assert_arr_eq(got, ((uint8_t[]){2, 0, 1, 0, 0, 0}), 6);
  literal_elided_fill(find(m, NULL, "c")->literal, got);
  cr_assert_arr_eq(got, ((uint8_t[]){1, 0, 0, 0, 0}), 5);
  /* A second module starts over. */
  m = parse1("HloModule n\nENTRY e {\n  ROOT a = u8[3] constant({...})\n}\n");
  literal_elided_fill(find(m, NULL, "a")->literal, got);
  cr_assert_arr_eq(got, ((uint8_t[]){0, 1, 2}), 3);
}

/* Older dumps write parameter lists without ':'; XLA reads a name then a
 * shape either way. */
Test(parse, parameter_list_without_colons) {
  HloModule *m = parse1("HloModule m\n"
                        "ENTRY %e (p0 f32[4], p1: s32[]) -> f32[4] {\n"
                        "  %p0 = f32[4] parameter(0)\n"
                        "  %p1 = s32[] parameter(1)\n"
                        "  ROOT %n = f32[4] negate(f32[4] %p0)\n}\n");
  cr_assert_eq(m->entry->nparams, 2);
  parse_err("HloModule m\nENTRY %e (p0 f32[4] p1) -> f32[4] {\n"
            "  ROOT %p0 = f32[4] parameter(0)\n}\n");
}

/* A broadcast of a size-1 operand dimension to another size (XLA's parser
 * takes it, StableHLO expands the dimension) is parsed as a reshape that
 * drops it and an ordinary broadcast; the new name is fresh in the module. */
Test(parse, degenerate_broadcast_canonicalized) {
  HloModule *m = parse1("HloModule m\nENTRY e {\n"
                        "  p = f32[1,3,1] parameter(0)\n"
                        "  reshape.7 = f32[3] reshape(p)\n"
                        "  ROOT b = f32[4,3,1] broadcast(p), dimensions={0,1,2}\n}\n");
  cr_assert_eq(D.nwarnings, 0);
  cr_assert(hlo_verify(m, &D), "%s", D.msg);
  HloInstr *b = find(m, NULL, "b");
  cr_assert_eq(b->ops[0]->op, HLO_RESHAPE);
  cr_assert_str_neq(b->ops[0]->name, "reshape.7");
  cr_assert_eq(b->ops[0]->ops[0], find(m, NULL, "p"));
  cr_assert_eq(b->ops[0]->shape->rank, 2);
  cr_assert_eq(b->ops[0]->shape->dims[0], 3);
  cr_assert_eq(b->ops[0]->shape->dims[1], 1);
  assert_list(&b->dims, 2, (int64_t[]){1, 2});
  cr_assert_eq(m->entry->root, b);
}

/* Broadcasts wrong in another way, or dynamic, are left for the verifier. */
Test(parse, broadcast_mismatch_left_to_verifier) {
  HloModule *m = parse1("HloModule m\nENTRY e {\n"
                        "  p = f32[1,3] parameter(0)\n"
                        "  ROOT b = f32[4,5] broadcast(p), dimensions={0,1}\n}\n");
  cr_assert_eq(find(m, NULL, "b")->ops[0], find(m, NULL, "p"));
  cr_assert_not(hlo_verify(m, &D));
  cr_assert(strstr(D.msg, "maps to result dimension"), "%s", D.msg);
  diag_clear(&D);
  m = parse1("HloModule m\nENTRY e {\n"
             "  p = f32[<=1] parameter(0)\n"
             "  ROOT b = f32[4] broadcast(p), dimensions={0}\n}\n");
  cr_assert_eq(find(m, NULL, "b")->ops[0], find(m, NULL, "p"));
  cr_assert_not(hlo_verify(m, &D));
}

/* A convolution window whose size differs from the kernel's spatial sizes
 * takes the kernel's (StableHLO has no window size), with one warning. */
Test(parse, convolution_window_takes_kernel_size) {
  HloModule *m = parse1("HloModule m\nENTRY e {\n"
                        "  x = f32[1,8,8,3] parameter(0)\n"
                        "  k = f32[3,2,3,4] parameter(1)\n"
                        "  ROOT c = f32[1,6,7,4] convolution(x, k), "
                        "window={size=2x5}, dim_labels=b01f_01io->b01f\n}\n");
  cr_assert_eq(D.nwarnings, 1);
  cr_assert(hlo_verify(m, &D), "%s", D.msg);
  const Window *w = find(m, NULL, "c")->conv->window;
  cr_assert_eq(w->dims[0].size, 3);
  cr_assert_eq(w->dims[1].size, 2);
  /* Labels that do not fit the kernel: left for the verifier. */
  int warned = D.nwarnings;
  m = parse1("HloModule m\nENTRY e {\n"
             "  x = f32[1,8,3] parameter(0)\n"
             "  k = f32[3,2,3,4] parameter(1)\n"
             "  ROOT c = f32[1,6,4] convolution(x, k), "
             "window={size=2}, dim_labels=b0f_0io->b0f\n}\n");
  cr_assert_eq(D.nwarnings, warned);
  cr_assert_eq(find(m, NULL, "c")->conv->window->dims[0].size, 2);
  cr_assert_not(hlo_verify(m, &D));
}

/*
 * Computations the entry cannot reach are dropped after parsing
 */
static const char *const UNREACHABLE_TEXT =
    "HloModule m\n"
    "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(x, y)\n}\n"
    "tuple_map {\n  a = f32[] parameter(0)\n  ROOT t = (f32[]) tuple(a)\n}\n"
    "dead_leaf {\n  p = f32[4] parameter(0)\n"
    "  ROOT m = f32[4] map(p), dimensions={0}, to_apply=tuple_map\n}\n"
    "dead_top {\n  p = f32[4] parameter(0)\n"
    "  c = f32[4] call(p), to_apply=dead_leaf\n  z = f32[] constant(0)\n"
    "  ROOT r = f32[] reduce(c, z), dimensions={0}, to_apply=add\n}\n"
    "%s {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
    "  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add\n}\n";

static void check_unreachable_dropped(const char *entry_header) {
  char text[1024];
  snprintf(text, sizeof text, UNREACHABLE_TEXT, entry_header);
  HloModule *m = parse1(text);
  /* One warning, for dead_top (which takes dead_leaf and tuple_map with
   * it), at its name; add, which the entry calls too, stays. */
  cr_assert_eq(D.nwarnings, 1);
  cr_assert_eq(m->ncomps, 2);
  cr_assert_str_eq(m->comps[0]->name, "add");
  cr_assert_eq(m->comps[1], m->entry);
  cr_assert_null(hlo_module_find_comp(m, "dead_top"));
  cr_assert_null(hlo_module_find_comp(m, "tuple_map"));
  /* tuple_map's invalid map is never verified. */
  cr_assert(hlo_verify(m, &D), "%s", D.msg);
}

Test(parse, unreachable_computations_dropped) {
  check_unreachable_dropped("ENTRY main");
}

/* Without ENTRY the last computation is the entry, as in XLA. */
Test(parse, unreachable_computations_dropped_without_entry_marker) {
  check_unreachable_dropped("main");
}

Test(parse, reachable_invalid_computation_still_refused) {
  HloModule *m = parse1(
      "HloModule m\n"
      "tuple_map {\n  a = f32[] parameter(0)\n  ROOT t = (f32[]) tuple(a)\n}\n"
      "ENTRY e {\n  p = f32[4] parameter(0)\n"
      "  ROOT m = f32[4] map(p), dimensions={0}, to_apply=tuple_map\n}\n");
  cr_assert_eq(D.nwarnings, 0);
  cr_assert_eq(m->ncomps, 2);
  cr_assert_not(hlo_verify(m, &D));
  cr_assert_eq(D.loc.line, 8);
}
