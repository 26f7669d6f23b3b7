/*
 * test_libcall_lower.c - descriptors of library custom-calls
 * (lib/runtime/libcall_lower.c): GEMM operand views in every layout a dot
 * can have (transposed, batched, batch in the middle, vectors, entry
 * layouts), the epilogue and its operands, the workspace; convolution
 * tensors through dim_labels and layouts for the three kinds, the epilogue
 * operands; and the errors for what the libraries cannot take.
 */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "../../lib/runtime/thunks.h"

static PtrVec sources;
static PtrVec modules;

static void free_all(void) {
  for (int k = 0; k < modules.len; k++)
    hlo_module_free(modules.data[k]);
  for (int k = 0; k < sources.len; k++)
    srcfile_free(sources.data[k]);
  vec_free(&modules);
  vec_free(&sources);
}

TestSuite(lower, .fini = free_all);

/* The root of a one-module text. */
static const HloInstr *root_of(const char *text) {
  Diag d = {0};
  SrcFile *src = srcfile_from_string("t.hlo", text, strlen(text));
  vec_push(&sources, src);
  HloModule **mods = NULL;
  ParseOptions po = {0};
  int n = hlo_parse(src, &po, &mods, &d);
  cr_assert_eq(n, 1, "%s", d.msg ? d.msg : "");
  vec_push(&modules, mods[0]);
  const HloInstr *root = mods[0]->entry->root;
  free(mods);
  return root;
}

#define GEMM_CFG(lc, rc, lb, rb, extra)                                        \
  "backend_config={\"gemm_backend_config\":{\"alpha_real\":1,\"beta\":0,"      \
  "\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[" lc "],"       \
  "\"rhs_contracting_dimensions\":[" rc "],\"lhs_batch_dimensions\":[" lb     \
  "],\"rhs_batch_dimensions\":[" rb "]}" extra "}}"

static void gemm_of(const char *text, GemmDesc *g, LibSources *src) {
  const HloInstr *i = root_of(text);
  Diag d = {0};
  Arena *ar = arena_new();
  cr_assert(libcall_gemm_desc(ar, i, g, src, &d), "%s", d.msg ? d.msg : "");
  arena_free(ar);
}

static void gemm_error(const char *text, const char *want) {
  const HloInstr *i = root_of(text);
  Diag d = {0};
  Arena *ar = arena_new();
  GemmDesc g;
  LibSources src;
  cr_assert_not(libcall_gemm_desc(ar, i, &g, &src, &d));
  cr_assert(d.msg && strstr(d.msg, want), "message \"%s\" lacks \"%s\"",
            d.msg ? d.msg : "", want);
  cr_assert(d.loc.line > 0, "the error has no location");
  diag_clear(&d);
  arena_free(ar);
}

static void expect_matrix(const GemmMatrix *x, int64_t rows, int64_t cols,
                          int64_t bs, int64_t rs, int64_t cs) {
  cr_expect_eq(x->rows, rows);
  cr_expect_eq(x->cols, cols);
  cr_expect_eq(x->batch_stride, bs, "batch stride %lld", (long long)x->batch_stride);
  cr_expect_eq(x->row_stride, rs, "row stride %lld", (long long)x->row_stride);
  cr_expect_eq(x->col_stride, cs, "col stride %lld", (long long)x->col_stride);
}

Test(lower, gemm_transposed_lhs_and_workspace) {
  GemmDesc g;
  LibSources src;
  gemm_of("HloModule t\nENTRY e {\n"
          "  a = f32[40,24]{1,0} parameter(0)\n"
          "  b = f32[40,36]{1,0} parameter(1)\n"
          "  ROOT c = (f32[24,36]{1,0}, s8[4194304]{0}) custom-call(a, b), "
          "custom_call_target=\"__cublas$lt$matmul\", "
          GEMM_CFG("\"0\"", "\"0\"", "", "", ",\"epilogue\":\"DEFAULT\"") "\n}\n",
          &g, &src);
  cr_expect_eq(g.batch, 1);
  cr_expect_eq(g.m, 24);
  cr_expect_eq(g.n, 36);
  cr_expect_eq(g.k, 40);
  expect_matrix(&g.a, 24, 40, 0, 1, 24);  /* column-major */
  expect_matrix(&g.b, 40, 36, 0, 36, 1);
  expect_matrix(&g.d, 24, 36, 0, 36, 1);
  cr_expect_eq(g.workspace_bytes, 4194304);
  cr_expect(g.allow_tf32);
  cr_expect_eq(src.operand[GEMM_A], 0);
  cr_expect_eq(src.operand[GEMM_B], 1);
  cr_expect_eq(src.operand[GEMM_C], -1);
  cr_expect_eq(src.result_leaf[GEMM_D], 0);
  cr_expect_eq(src.result_leaf[GEMM_WORKSPACE], 1);
}

Test(lower, gemm_batch_in_the_middle) {
  /* einsum ibj,jbk->bik: the batch dimension sits between the others. */
  GemmDesc g;
  LibSources src;
  gemm_of("HloModule t\nENTRY e {\n"
          "  a = f32[10,4,16]{2,1,0} parameter(0)\n"
          "  b = f32[16,4,6]{2,1,0} parameter(1)\n"
          "  ROOT c = f32[4,10,6]{2,1,0} custom-call(a, b), "
          "custom_call_target=\"__onednn$matmul\", "
          GEMM_CFG("\"2\"", "\"0\"", "\"1\"", "\"1\"", "") "\n}\n",
          &g, &src);
  cr_expect_eq(g.batch, 4);
  expect_matrix(&g.a, 10, 16, 16, 64, 1);
  expect_matrix(&g.b, 16, 6, 6, 24, 1);
  expect_matrix(&g.d, 10, 6, 60, 6, 1);
  cr_expect_eq(g.workspace_bytes, 0);
  cr_expect_eq(src.result_leaf[GEMM_WORKSPACE], -1);
}

Test(lower, gemm_entry_layouts_and_vectors) {
  /* lhs in column-major entry layout, a matrix-vector product, merged
   * contracting dimensions. */
  GemmDesc g;
  LibSources src;
  gemm_of("HloModule t\nENTRY e {\n"
          "  a = f32[8,3,5]{0,2,1} parameter(0)\n"
          "  b = f32[3,5]{1,0} parameter(1)\n"
          "  ROOT c = f32[8]{0} custom-call(a, b), "
          "custom_call_target=\"__cublas$gemm\", "
          GEMM_CFG("\"1\",\"2\"", "\"0\",\"1\"", "", "", "") "\n}\n",
          &g, &src);
  cr_expect_eq(g.m, 8);
  cr_expect_eq(g.n, 1);
  cr_expect_eq(g.k, 15);
  /* a: dim0 innermost (stride 1), dim2 stride 8, dim1 stride 40: the
   * contracting group (1, 2) nests with stride 8. */
  expect_matrix(&g.a, 8, 15, 0, 1, 8);
  expect_matrix(&g.b, 15, 1, 0, 1, 15);
  expect_matrix(&g.d, 8, 1, 0, 1, 8);
}

Test(lower, gemm_epilogue_operands) {
  GemmDesc g;
  LibSources src;
  gemm_of("HloModule t\nENTRY e {\n"
          "  a = bf16[16,32]{1,0} parameter(0)\n"
          "  b = bf16[32,8]{1,0} parameter(1)\n"
          "  c = f32[16,8]{0,1} parameter(2)\n"
          "  bias = f32[8]{0} parameter(3)\n"
          "  ROOT r = (f32[16,8]{1,0}, s8[0]{0}) custom-call(a, b, c, bias), "
          "custom_call_target=\"__cublas$lt$matmul\", "
          "backend_config={\"gemm_backend_config\":{\"alpha_real\":0.5,"
          "\"beta\":1,\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":"
          "[\"1\"],\"rhs_contracting_dimensions\":[\"0\"],"
          "\"lhs_batch_dimensions\":[],\"rhs_batch_dimensions\":[]},"
          "\"precision_config\":{\"operand_precision\":[\"HIGHEST\",\"DEFAULT\"]},"
          "\"epilogue\":\"BIAS_GELU\"}}\n}\n",
          &g, &src);
  cr_expect(g.alpha_re == 0.5 && g.beta == 1);
  cr_expect_eq(g.act, LIB_ACT_GELU_TANH);
  cr_expect(g.has_bias);
  cr_expect_eq(g.bias_et, ET_F32);
  cr_expect_eq(g.a.et, ET_BF16);
  cr_expect_eq(g.d.et, ET_F32);
  expect_matrix(&g.c, 16, 8, 0, 1, 16);   /* C column-major, D row-major */
  expect_matrix(&g.d, 16, 8, 0, 8, 1);
  cr_expect_not(g.allow_tf32);
  cr_expect_eq(src.operand[GEMM_C], 2);
  cr_expect_eq(src.operand[GEMM_BIAS], 3);
  cr_expect_eq(src.result_leaf[GEMM_WORKSPACE], -1);
}

Test(lower, gemm_old_string_config) {
  /* XLA's older after-optimization dumps: the config as a quoted string. */
  GemmDesc g;
  LibSources src;
  gemm_of("HloModule t\nENTRY e {\n"
          "  a = f32[64,1024]{1,0} parameter(0)\n"
          "  b = f32[1024,64]{1,0} parameter(1)\n"
          "  ROOT c = f32[64,64]{1,0} custom-call(a, b), "
          "custom_call_target=\"__cublas$gemm\", backend_config=\"{\\\"alpha_real\\\":1,"
          "\\\"alpha_imag\\\":0,\\\"beta\\\":0,\\\"dot_dimension_numbers\\\":"
          "{\\\"lhs_contracting_dimensions\\\":[\\\"1\\\"],"
          "\\\"rhs_contracting_dimensions\\\":[\\\"0\\\"],"
          "\\\"lhs_batch_dimensions\\\":[],\\\"rhs_batch_dimensions\\\":[]},"
          "\\\"batch_size\\\":\\\"1\\\",\\\"lhs_stride\\\":\\\"65536\\\","
          "\\\"rhs_stride\\\":\\\"65536\\\",\\\"selected_algorithm\\\":\\\"21\\\"}\"\n}\n",
          &g, &src);
  cr_expect_eq(g.m, 64);
  cr_expect_eq(g.k, 1024);
  expect_matrix(&g.a, 64, 1024, 0, 1024, 1);
}

Test(lower, gemm_errors) {
  /* The batch dimension innermost: neither row- nor column-major. */
  gemm_error("HloModule t\nENTRY e {\n"
             "  a = f32[4,8,6]{0,2,1} parameter(0)\n"
             "  b = f32[4,6,5]{2,1,0} parameter(1)\n"
             "  ROOT c = f32[4,8,5]{2,1,0} custom-call(a, b), "
             "custom_call_target=\"__cublas$gemm\", "
             GEMM_CFG("\"2\"", "\"1\"", "\"0\"", "\"0\"", "") "\n}\n",
             "the lhs is not a row- or column-major batch");
  /* Contracting dimensions that do not nest in memory. */
  gemm_error("HloModule t\nENTRY e {\n"
             "  a = f32[2,3,5]{2,1,0} parameter(0)\n"
             "  b = f32[2,5,7]{2,1,0} parameter(1)\n"
             "  ROOT c = f32[3,7]{1,0} custom-call(a, b), "
             "custom_call_target=\"__cublas$gemm\", "
             GEMM_CFG("\"0\",\"2\"", "\"0\",\"1\"", "", "", "") "\n}\n",
             "the lhs is not a row- or column-major batch");
  /* Integer operands. */
  gemm_error("HloModule t\nENTRY e {\n"
             "  a = s32[2,3]{1,0} parameter(0)\n"
             "  b = s32[3,4]{1,0} parameter(1)\n"
             "  ROOT c = s32[2,4]{1,0} custom-call(a, b), "
             "custom_call_target=\"__cublas$gemm\", "
             GEMM_CFG("\"1\"", "\"0\"", "", "", "") "\n}\n",
             "element types s32 x s32 -> s32");
  /* A bias epilogue without its operand. */
  gemm_error("HloModule t\nENTRY e {\n"
             "  a = f32[2,3]{1,0} parameter(0)\n"
             "  b = f32[3,4]{1,0} parameter(1)\n"
             "  ROOT c = f32[2,4]{1,0} custom-call(a, b), "
             "custom_call_target=\"__cublas$lt$matmul\", "
             GEMM_CFG("\"1\"", "\"0\"", "", "", ",\"epilogue\":\"BIAS\"") "\n}\n",
             "has 2 operands; with beta 0 and epilogue BIAS it takes 3");
  /* Dimensions that are not the dot's. */
  gemm_error("HloModule t\nENTRY e {\n"
             "  a = f32[2,3]{1,0} parameter(0)\n"
             "  b = f32[3,4]{1,0} parameter(1)\n"
             "  ROOT c = f32[4,2]{1,0} custom-call(a, b), "
             "custom_call_target=\"__cublas$gemm\", "
             GEMM_CFG("\"1\"", "\"0\"", "", "", "") "\n}\n",
             "the result's dimensions are not the dot's");
}

static void conv_of(const char *text, ConvDesc *c, LibSources *src) {
  const HloInstr *i = root_of(text);
  Diag d = {0};
  cr_assert(libcall_conv_desc(i, c, src, &d), "%s", d.msg ? d.msg : "");
}

Test(lower, conv_forward_nhwc_bias_relu) {
  ConvDesc c;
  LibSources src;
  conv_of("HloModule t\nENTRY e {\n"
          "  x = f32[2,10,10,8]{3,2,1,0} parameter(0)\n"
          "  w = f32[3,3,8,16]{3,2,1,0} parameter(1)\n"
          "  b = f32[16]{0} parameter(2)\n"
          "  ROOT y = (f32[2,10,10,16]{3,2,1,0}, u8[1024]{0}) custom-call(x, w, b), "
          "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
          "custom_call_target=\"__cudnn$convBiasActivationForward\", "
          "backend_config={\"cudnn_conv_backend_config\":{\"activation_mode\":"
          "\"kRelu\",\"conv_result_scale\":1,\"side_input_scale\":0}}\n}\n",
          &c, &src);
  cr_expect_eq(c.kind, CONV_FORWARD);
  cr_expect_eq(c.nspatial, 2);
  int64_t xd[4] = {2, 8, 10, 10}, xs[4] = {800, 1, 80, 8};
  int64_t wd[4] = {16, 8, 3, 3}, ws[4] = {1, 16, 384, 128};
  cr_expect(memcmp(c.x.dims, xd, sizeof xd) == 0);
  cr_expect(memcmp(c.x.strides, xs, sizeof xs) == 0);
  cr_expect(memcmp(c.w.dims, wd, sizeof wd) == 0);
  cr_expect(memcmp(c.w.strides, ws, sizeof ws) == 0);
  cr_expect_eq(c.y.dims[1], 16);
  cr_expect_eq(c.pad_lo[0], 1);
  cr_expect_eq(c.pad_hi[1], 1);
  cr_expect_eq(c.act, LIB_ACT_RELU);
  cr_expect(c.has_bias);
  cr_expect_eq(c.workspace_bytes, 1024);
  cr_expect_eq(src.operand[CONV_BIAS], 2);
  cr_expect_eq(src.operand[CONV_SIDE], -1);
  cr_expect_eq(src.result_leaf[CONV_Y], 0);
  cr_expect_eq(src.result_leaf[CONV_WORKSPACE], 1);
}

Test(lower, conv_backward_kinds) {
  ConvDesc c;
  LibSources src;
  /* Backward input: operands (dy, w), result dx; the window is the forward
   * convolution's (stride 2). */
  conv_of("HloModule t\nENTRY e {\n"
          "  dy = f32[2,6,6,8]{3,2,1,0} parameter(0)\n"
          "  w = f32[3,3,4,8]{3,2,1,0} parameter(1)\n"
          "  ROOT dx = (f32[2,12,12,4]{3,2,1,0}, u8[0]{0}) custom-call(dy, w), "
          "window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f, "
          "custom_call_target=\"__cudnn$convBackwardInput\"\n}\n",
          &c, &src);
  cr_expect_eq(c.kind, CONV_BACKWARD_INPUT);
  cr_expect_eq(c.x.dims[2], 12);
  cr_expect_eq(c.y.dims[2], 6);
  cr_expect_eq(src.operand[CONV_Y], 0);
  cr_expect_eq(src.operand[CONV_W], 1);
  cr_expect_eq(src.result_leaf[CONV_X], 0);
  cr_expect_eq(src.result_leaf[CONV_WORKSPACE], -1);
  /* Backward filter on the host: conv_kind in the config. */
  conv_of("HloModule t\nENTRY e {\n"
          "  x = f32[2,4,12,12]{3,2,1,0} parameter(0)\n"
          "  dy = f32[2,8,6,6]{3,2,1,0} parameter(1)\n"
          "  ROOT dw = (f32[8,4,3,3]{3,2,1,0}, u8[0]{0}) custom-call(x, dy), "
          "window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=bf01_oi01->bf01, "
          "custom_call_target=\"__onednn$convolution\", "
          "backend_config={\"cudnn_conv_backend_config\":{\"conv_kind\":"
          "\"backward_filter\"}}\n}\n",
          &c, &src);
  cr_expect_eq(c.kind, CONV_BACKWARD_FILTER);
  cr_expect_eq(c.w.dims[0], 8);
  cr_expect_eq(src.operand[CONV_X], 0);
  cr_expect_eq(src.operand[CONV_Y], 1);
  cr_expect_eq(src.result_leaf[CONV_W], 0);
}

Test(lower, conv_errors) {
  const char *bad[][2] = {
      {"HloModule t\nENTRY e {\n"
       "  x = f32[1,1,8]{2,1,0} parameter(0)\n"
       "  w = f32[1,1,3]{2,1,0} parameter(1)\n"
       "  ROOT y = (f32[1,1,5]{2,1,0}, u8[0]{0}) custom-call(x, w), "
       "window={size=3}, dim_labels=bf0_oi0->bf0, "
       "custom_call_target=\"__cudnn$convForward\"\n}\n",
       "spatial dimension 0 of y is 5, the window gives 6"},
      {"HloModule t\nENTRY e {\n"
       "  x = s8[1,1,8]{2,1,0} parameter(0)\n"
       "  w = s8[1,1,3]{2,1,0} parameter(1)\n"
       "  ROOT y = (s8[1,1,6]{2,1,0}, u8[0]{0}) custom-call(x, w), "
       "window={size=3}, dim_labels=bf0_oi0->bf0, "
       "custom_call_target=\"__cudnn$convForward\"\n}\n",
       "element types s8, s8, s8"},
      {"HloModule t\nENTRY e {\n"
       "  x = f32[1,1,8]{2,1,0} parameter(0)\n"
       "  w = f32[1,1,3]{2,1,0} parameter(1)\n"
       "  ROOT y = (f32[1,1,6]{2,1,0}, u8[0]{0}) custom-call(x, w), "
       "window={size=3}, dim_labels=bf0_oi0->bf0, "
       "custom_call_target=\"__cudnn$convForward\", "
       "backend_config={\"cudnn_conv_backend_config\":{\"activation_mode\":"
       "\"kElu\"}}\n}\n",
       "activation kElu is not supported"},
  };
  for (size_t k = 0; k < ARRAY_LEN(bad); k++) {
    const HloInstr *i = root_of(bad[k][0]);
    Diag d = {0};
    ConvDesc c;
    LibSources src;
    cr_assert_not(libcall_conv_desc(i, &c, &src, &d), "case %zu accepted", k);
    cr_assert(d.msg && strstr(d.msg, bad[k][1]), "message \"%s\" lacks \"%s\"",
              d.msg ? d.msg : "", bad[k][1]);
    diag_clear(&d);
  }
}
