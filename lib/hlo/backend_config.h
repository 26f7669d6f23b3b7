/*
 * backend_config.h - library custom-calls and their backend configs.
 *
 * XLA turns dots and convolutions into custom-calls to vendor libraries and
 * describes each call in the instruction's backend_config, as the JSON form
 * of a protobuf: GemmBackendConfig for GEMMs, CudnnConvBackendConfig for
 * convolutions.  xhloc's gemm-rewriter and conv-rewriter write the same
 * calls, the thunk emitter compiles them (also when they stand in the input,
 * as in XLA's after_optimizations dumps), and the interpreter runs them.
 *
 * The calls, with their operands and results:
 *   __cublas$gemm, __cublas$lt$matmul (GPU), __onednn$matmul (host):
 *     (a, b[, c][, bias]) -> d, or (d, s8[workspace]) / (d, u8[workspace]);
 *     c is there when beta != 0, bias when the epilogue has a bias.
 *   __cudnn$convForward (x, w), __cudnn$convBiasActivationForward
 *     (x, w, bias[, side]) -> (y, u8[scratch]);
 *   __cudnn$convBackwardInput (y, w) -> (x, u8[scratch]);
 *   __cudnn$convBackwardFilter (x, y) -> (w, u8[scratch]);
 *   __onednn$convolution (host): as the cuDNN call its config's conv_kind
 *     names (forward by default, with bias when its config says so).
 * A convolution call carries the window, dim_labels and group counts of the
 * *forward* convolution (x * w = y), as XLA's do, whichever tensor it
 * computes.
 *
 * Parsing accepts the config nested ({"gemm_backend_config":{...}}, as XLA
 * writes it today), bare ({"alpha_real":1,...}, older dumps), or as a quoted
 * JSON string; unknown keys are ignored.  Printing writes XLA's nested form.
 */
#ifndef XHLOC_BACKEND_CONFIG_H
#define XHLOC_BACKEND_CONFIG_H

#include "hlo.h"

typedef enum LibCallTarget {
  LIBCALL_NONE,
  LIBCALL_CUBLAS_GEMM,            /* __cublas$gemm */
  LIBCALL_CUBLASLT_MATMUL,        /* __cublas$lt$matmul */
  LIBCALL_ONEDNN_MATMUL,          /* __onednn$matmul */
  LIBCALL_CUDNN_CONV_FORWARD,     /* __cudnn$convForward */
  LIBCALL_CUDNN_CONV_BIAS_ACTIVATION_FORWARD, /* __cudnn$convBiasActivationForward */
  LIBCALL_CUDNN_CONV_BACKWARD_INPUT,  /* __cudnn$convBackwardInput */
  LIBCALL_CUDNN_CONV_BACKWARD_FILTER, /* __cudnn$convBackwardFilter */
  LIBCALL_ONEDNN_CONV,            /* __onednn$convolution */
} LibCallTarget;

/* The library call i is (LIBCALL_NONE for anything but such a custom-call). */
LibCallTarget libcall_target(const HloInstr *i);
LibCallTarget libcall_target_from_name(const char *target);
const char *libcall_target_name(LibCallTarget t); /* "__cublas$gemm", ... */
bool libcall_is_gemm(LibCallTarget t);
bool libcall_is_conv(LibCallTarget t);

/* GemmBackendConfig.Epilogue, plus the erf form of GELU, which oneDNN takes
 * and cuBLASLt does not (printed "GELU_ERF", "BIAS_GELU_ERF"). */
typedef enum GemmEpilogue {
  GEMM_EPILOGUE_DEFAULT,
  GEMM_EPILOGUE_BIAS,
  GEMM_EPILOGUE_RELU,
  GEMM_EPILOGUE_BIAS_RELU,
  GEMM_EPILOGUE_GELU,             /* the tanh approximation */
  GEMM_EPILOGUE_BIAS_GELU,
  GEMM_EPILOGUE_GELU_ERF,
  GEMM_EPILOGUE_BIAS_GELU_ERF,
} GemmEpilogue;

const char *gemm_epilogue_name(GemmEpilogue e); /* "DEFAULT", "BIAS_RELU", ... */
bool gemm_epilogue_has_bias(GemmEpilogue e);

typedef struct GemmBackendConfig {
  double alpha_real, alpha_imag, beta;
  DotDnums dnums;                 /* dot_dimension_numbers (arena lists) */
  Precision precision[2];         /* precision_config.operand_precision */
  GemmEpilogue epilogue;
  int64_t lhs_stride, rhs_stride; /* elements between batches; 0: absent */
  bool grad_x, grad_y;
} GemmBackendConfig;

/* cuDNN activation modes as XLA names them ("kNone", "kRelu", ...). */
typedef enum ConvActivationMode {
  CONV_ACT_NONE,                  /* kNone */
  CONV_ACT_SIGMOID,               /* kSigmoid */
  CONV_ACT_RELU,                  /* kRelu */
  CONV_ACT_RELU6,                 /* kRelu6 */
  CONV_ACT_RELUX,                 /* kReluX */
  CONV_ACT_TANH,                  /* kTanh */
  CONV_ACT_BAND_PASS,             /* kBandPass */
  CONV_ACT_ELU,                   /* kElu */
  CONV_ACT_LEAKY_RELU,            /* kLeakyRelu */
  CONV_ACT_GELU_EXACT,            /* kGeluExact */
} ConvActivationMode;

const char *conv_activation_name(ConvActivationMode m);

/* Which tensor a convolution call computes (for __onednn$convolution, from
 * its config's "conv_kind"; for the cuDNN targets, from the target). */
typedef enum ConvCallKind {
  CONV_CALL_FORWARD,              /* "forward" */
  CONV_CALL_BACKWARD_INPUT,       /* "backward_input" */
  CONV_CALL_BACKWARD_FILTER,      /* "backward_filter" */
} ConvCallKind;

typedef struct ConvBackendConfig {
  double conv_result_scale;       /* 1 by default */
  double side_input_scale;        /* 0 by default */
  double leakyrelu_alpha;
  ConvActivationMode activation;
  ConvCallKind kind;              /* xhloc's "conv_kind" (onednn only) */
  bool has_bias;                  /* xhloc's "has_bias" (onednn only) */
} ConvBackendConfig;

/* Parse i's backend_config (i a GEMM call).  A missing config is XLA's
 * default (alpha 1, beta 0, DEFAULT) with the dnums of a plain matmul of
 * i's operands; a malformed one is an error at i's location.  Lists are
 * allocated in arena a. */
bool gemm_config_parse(Arena *a, const HloInstr *i, GemmBackendConfig *out,
                       Diag *d);
/* The whole backend_config text, as the printer and parser take it:
 * {"gemm_backend_config":{"alpha_real":1,...}} */
void gemm_config_print(StrBuf *b, const GemmBackendConfig *c);

bool conv_config_parse(const HloInstr *i, ConvBackendConfig *out, Diag *d);
void conv_config_default(ConvBackendConfig *c);
/* {"cudnn_conv_backend_config":{"activation_mode":"kNone",...}}; conv_kind
 * and has_bias are printed when not the default. */
void conv_config_print(StrBuf *b, const ConvBackendConfig *c);

/* The convolution kind a conv call computes (from its target, or for
 * __onednn$convolution from cfg). */
ConvCallKind libcall_conv_kind(LibCallTarget t, const ConvBackendConfig *cfg);

/* XLA:CPU's layer normalization call "__onednn$layernorm" (x, scale, shift)
 * -> y over the last dimension of x; its OneDnnNormConfig
 * {"onednn_layer_norm_config":{"rescale":"SCALE_AND_SHIFT",
 * "epsilon_typecast":N}}: epsilon is the f32 whose bits are the int32 N (0
 * when absent).  A rescale other than SCALE_AND_SHIFT is an error. */
bool layer_norm_call(const HloInstr *i);
bool layer_norm_config_parse(const HloInstr *i, float *epsilon, Diag *d);

#endif
