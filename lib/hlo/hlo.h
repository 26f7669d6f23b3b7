/*
 * hlo.h - the HLO IR: element types, shapes and layouts, literals,
 * instructions with typed attributes, computations and modules; and the
 * front end over it (parser, printer, verifier, shape inference).
 *
 * Ownership: every node of a module lives in the module's arena and is never
 * freed one by one (hlo_module_free frees it all).  Arrays inside nodes are
 * arena arrays too; the few that passes grow (a computation's instruction
 * list) are regrown in the arena.
 *
 * Sectioned by the file that implements each part.
 */
#ifndef XHLOC_HLO_H
#define XHLOC_HLO_H

#include "../support/support.h"

/*
 * types.c: element types
 */
typedef enum ElemType {
  ET_INVALID = 0,
#define ET(id, name, bits, bytes, cls) ET_##id,
#include "types.def"
#undef ET
  ET_COUNT
} ElemType;

typedef enum ElemClass {
  ETC_NONE, ETC_PRED, ETC_SINT, ETC_UINT, ETC_FLOAT, ETC_COMPLEX, ETC_TOKEN,
  ETC_OPAQUE, ETC_TUPLE,
} ElemClass;

const char *et_name(ElemType t);          /* "f32"; "invalid" for ET_INVALID */
ElemType et_from_name(const char *s, size_t n); /* ET_INVALID if unknown */
int et_bits(ElemType t);                  /* logical width: f32 32, s4 4, pred 1 */
int et_bytes(ElemType t);                 /* bytes per element in a literal */
ElemClass et_class(ElemType t);
bool et_is_float(ElemType t);             /* real floating point (not complex) */
bool et_is_int(ElemType t);               /* signed or unsigned integer */
bool et_is_signed_int(ElemType t);
bool et_is_unsigned_int(ElemType t);
bool et_is_complex(ElemType t);
bool et_is_array(ElemType t);             /* not tuple/token/opaque/invalid */
/* The FpFormat of a real float type (for fp_to_double / fp_from_double). */
FpFormat et_fp_format(ElemType t);
/* Component type of a complex type (c64 -> f32), else t. */
ElemType et_complex_component(ElemType t);

/*
 * shape.c: shapes and layouts
 */
#define TILE_COMBINED INT64_MIN   /* '*' in a tile: dimensions combined */

typedef struct Tile {
  int ndims;
  int64_t *dims;                  /* TILE_COMBINED for '*' */
} Tile;

typedef struct SplitConfig {      /* SC(dim:idx,idx,...) */
  int64_t dimension;
  int nindices;
  int64_t *indices;
} SplitConfig;

typedef struct Shape Shape;

/* A layout: minor_to_major plus the optional parts after ':', in the order
 * the text grammar has them.  Absent optional parts are 0 / NULL / ET_INVALID. */
typedef struct Layout {
  int rank;
  int64_t *minor_to_major;        /* rank entries */
  int ndim_level_types;
  char **dim_level_types;         /* D(...): "D", "C", "S", "H", with + ~ suffixes */
  int ntiles;
  Tile *tiles;                    /* T(...)(...) */
  int64_t tail_padding_alignment; /* L(n); 0 absent */
  ElemType index_type;            /* #(s32) */
  ElemType pointer_type;          /* *(s64) */
  int64_t element_size_bits;      /* E(n); 0 absent */
  int64_t memory_space;           /* S(n); 0 default */
  int nsplit_configs;
  SplitConfig *split_configs;     /* SC(...) */
  Shape *physical_shape;          /* P(shape) */
  int64_t dynamic_shape_metadata_prefix_bytes; /* M(n); 0 absent */
} Layout;

enum { DIM_STATIC = 0, DIM_BOUNDED = 1, DIM_UNBOUNDED = 2 };

/* An array shape (et is an array type), a tuple (et == ET_TUPLE), a token or
 * an opaque.  For a dynamic dimension dims[i] holds its bound (<=N) or -1 (?).
 * Shapes may be shared by several instructions and literals (the parser
 * interns identical ones): never change a shape in place; shape_clone it. */
struct Shape {
  ElemType et;
  int rank;
  int64_t *dims;
  uint8_t *dyn;                   /* DIM_* per dim; NULL when all static */
  Layout *layout;                 /* arrays: never NULL after parsing */
  int ntuple;
  Shape **tuple;                  /* ET_TUPLE: element shapes */
  bool is_buffer;                 /* b(f32[...]): a buffer of this array shape */
};

Shape *shape_array(Arena *a, ElemType et, int rank, const int64_t *dims);
Shape *shape_scalar(Arena *a, ElemType et);
Shape *shape_tuple(Arena *a, int n, Shape *const *elems);
Shape *shape_token(Arena *a);
Shape *shape_clone(Arena *a, const Shape *s);     /* deep copy */
Layout *layout_default(Arena *a, int rank);       /* {rank-1,...,0} */
void shape_set_default_layout(Arena *a, Shape *s); /* recursively, where NULL */
bool shape_equal(const Shape *a, const Shape *b); /* including layouts */
bool shape_compatible(const Shape *a, const Shape *b); /* ignoring layouts */
bool layout_equal(const Layout *a, const Layout *b);
bool layout_is_default(const Layout *l, int rank); /* only minor_to_major, default */
bool shape_is_array(const Shape *s);
bool shape_is_tuple(const Shape *s);
bool shape_is_scalar(const Shape *s);
int64_t shape_elements(const Shape *s);           /* product of dims; -1 on overflow */
int64_t shape_byte_size(const Shape *s);          /* arrays: elements*bytes; -1 on overflow */
/* shape_byte_size, plus one s32 size per dimension for a dynamic array. */
int64_t shape_buffer_size(const Shape *s);
bool shape_is_dynamic(const Shape *s);
/* Element of a tuple shape by a path of indices; NULL if out of range. */
const Shape *shape_subshape(const Shape *s, int depth, const int64_t *index);
/* Count of array/token leaves (tuple parameters flattened). */
int shape_leaf_count(const Shape *s);
/* XLA text: "f32[2,3]{1,0}", "(f32[], s32[4]{0})", "f32[<=4,?]".  With
 * print_layout false layouts are left out. */
void shape_print(StrBuf *b, const Shape *s, bool print_layout);
char *shape_to_string(const Shape *s, bool print_layout); /* heap; caller frees */
void layout_print(StrBuf *b, const Layout *l);

/*
 * literal.c: constant values
 *
 * Array data is dense in logical row-major order (not the layout's order),
 * et_bytes() bytes per element, little-endian, raw bits kept exactly (NaN
 * payloads survive).  pred is one byte 0/1; complex is (real, imag).
 */
typedef struct Literal Literal;
struct Literal {
  Shape *shape;
  uint8_t *data;                  /* arrays; NULL when elided or tuple */
  bool elided;                    /* printed as {...}: values unknown */
  /* An elided literal's place in its module's placeholder sequence (see
   * literal_elided_fill): the first u32 word and the first tail byte. */
  uint32_t elided_word;
  uint8_t elided_byte;
  int ntuple;
  Literal **tuple;                /* tuple literals */
};

Literal *literal_new(Arena *a, Shape *shape);     /* zero-filled */
/* Element i (row-major index) as double / int64 / uint64; complex parts. */
double literal_get_f64(const Literal *l, int64_t i);
int64_t literal_get_s64(const Literal *l, int64_t i);
uint64_t literal_get_u64(const Literal *l, int64_t i);
void literal_get_complex(const Literal *l, int64_t i, double *re, double *im);
/* Store with conversion (rounding to the element type as XLA converts). */
void literal_set_f64(Literal *l, int64_t i, double v);
void literal_set_s64(Literal *l, int64_t i, int64_t v);
void literal_set_u64(Literal *l, int64_t i, uint64_t v);
void literal_set_complex(Literal *l, int64_t i, double re, double im);
/* Formats one element as XLA prints it: "1", "-0.5", "inf", "nan",
 * "nan(0x1)" for a payload NaN, "true", "(1, 2)" for complex. */
void literal_print_element(StrBuf *b, const Literal *l, int64_t i);
/* The literal's value text as in constant(...): scalars bare, arrays with
 * nested braces "{ {1, 2}, {3, 4} }", elided as "{...}", tuples "( ... )".
 * Prints all elements (never elides itself). */
void literal_print(StrBuf *b, const Literal *l);
bool literal_equal(const Literal *a, const Literal *b); /* bitwise */
/* The bytes an elided array literal stands for, written to dst (its
 * shape's byte size): XLA's parser fills {...} with a placeholder pattern,
 * u32 words counting up through the module (see literal.c). */
void literal_elided_fill(const Literal *l, uint8_t *dst);
/* Bytes of placeholder u32 words and tail bytes an elided literal of this
 * shape takes, to advance the module's counters. */
void literal_elided_advance(const Shape *s, uint32_t *word, uint8_t *byte);


/*
 * Opcodes
 */
typedef enum HloOp {
#define HLO_OP(id, name, arity) HLO_##id,
#include "opcodes.def"
#undef HLO_OP
  HLO_OP_COUNT
} HloOp;

const char *hlo_op_name(HloOp op);
int hlo_op_arity(HloOp op);                       /* -1: variadic */
/* Opcode by text name; -1 if none. */
int hlo_op_from_name(const char *s, size_t n);
bool hlo_op_is_elementwise_unary(HloOp op);
bool hlo_op_is_elementwise_binary(HloOp op);
bool hlo_op_is_elementwise(HloOp op);             /* incl. select, clamp, convert... */
/* XLA's bit width for bitcast-convert (primitive_util::BitWidth): pred
 * counts 8, every other type its own width. */
int hlo_bitcast_bits(ElemType et);
/* NULL when a bitcast-convert between from and to is computed (same
 * width, or real types of different widths: the narrow elements are the
 * wide one's bits, least significant first); else what is not. */
const char *hlo_bitcast_convert_unsupported(ElemType from, ElemType to);

/*
 * Typed attributes
 */
typedef enum CmpDir { CMP_NONE, CMP_EQ, CMP_NE, CMP_GE, CMP_GT, CMP_LE, CMP_LT } CmpDir;
typedef enum CmpType {
  CMPT_NONE, CMPT_FLOAT, CMPT_TOTALORDER, CMPT_SIGNED, CMPT_UNSIGNED,
  CMPT_PARTIALORDER,
} CmpType;
typedef enum FusionKind { FUSION_NONE, FUSION_LOOP, FUSION_INPUT, FUSION_OUTPUT, FUSION_CUSTOM } FusionKind;
typedef enum RngDist { RNG_DIST_NONE, RNG_UNIFORM, RNG_NORMAL } RngDist;
typedef enum RngAlgo { RNG_ALGO_NONE, RNG_DEFAULT, RNG_THREE_FRY, RNG_PHILOX } RngAlgo;
typedef enum FftType { FFT_NONE, FFT_FFT, FFT_IFFT, FFT_RFFT, FFT_IRFFT } FftType;
typedef enum Precision { PREC_DEFAULT, PREC_HIGH, PREC_HIGHEST, PREC_PACKED_NIBBLE } Precision;
typedef enum CustomCallApi {
  CC_API_NONE, CC_API_ORIGINAL, CC_API_STATUS_RETURNING,
  CC_API_STATUS_RETURNING_UNIFIED, CC_API_TYPED_FFI,
} CustomCallApi;
typedef enum TriTranspose { TRI_NONE, TRI_NO_TRANSPOSE, TRI_TRANSPOSE, TRI_ADJOINT } TriTranspose;

/* A list of int64, as in dimensions={1,2}. */
typedef struct I64List {
  int n;
  int64_t *v;
} I64List;

/* slice={[start:limit:stride], ...} */
typedef struct SliceDim {
  int64_t start, limit, stride;
} SliceDim;

/* padding=lo_hi_interior x ... (pad); also window pads. */
typedef struct PadDim {
  int64_t lo, hi, interior;
} PadDim;

/* window={size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..} */
typedef struct WindowDim {
  int64_t size, stride, pad_lo, pad_hi;
  int64_t base_dilation;          /* lhs_dilate */
  int64_t window_dilation;        /* rhs_dilate */
  bool reversal;                  /* rhs_reversal */
} WindowDim;

typedef struct Window {
  int ndims;
  WindowDim *dims;
  /* Which parts were printed in the source (so the printer can give back the
   * same keys; XLA prints a key only when some dim differs from default). */
} Window;

/* dim_labels=b01f_01io->b01f */
typedef struct ConvDnums {
  int nspatial;
  int64_t input_batch, input_feature, *input_spatial;
  int64_t kernel_input_feature, kernel_output_feature, *kernel_spatial;
  int64_t output_batch, output_feature, *output_spatial;
} ConvDnums;

typedef struct DotDnums {
  I64List lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
  I64List lhs_ragged, rhs_group;  /* ragged-dot */
} DotDnums;

typedef struct GatherDnums {
  I64List offset_dims, collapsed_slice_dims, start_index_map;
  I64List operand_batching_dims, start_indices_batching_dims;
  int64_t index_vector_dim;
} GatherDnums;

typedef struct ScatterDnums {
  I64List update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  I64List input_batching_dims, scatter_indices_batching_dims;
  int64_t index_vector_dim;
} ScatterDnums;

/* replica_groups={{0,1},{2,3}} or the iota form [G,S]<=[dims]T(perm). */
typedef struct ReplicaGroups {
  bool iota;                      /* iota form */
  int ngroups;                    /* list form */
  I64List *groups;
  I64List iota_group_shape;       /* iota form: [num_groups, group_size] */
  I64List iota_reshape_dims;      /* <=[...] */
  I64List iota_transpose_perm;    /* T(...); n == 0 when absent */
  char *mesh_text;                /* mesh form as written (printed as is);
                                     the iota fields hold its groups */
} ReplicaGroups;

/* sharding={...}.  Tuple shardings hold their elements. */
typedef enum ShardingKind {
  SHARD_REPLICATED, SHARD_MAXIMAL, SHARD_TILED, SHARD_MANUAL, SHARD_UNKNOWN,
  SHARD_TUPLE, SHARD_UNREDUCED,
} ShardingKind;

typedef struct Sharding Sharding;
struct Sharding {
  ShardingKind kind;
  int64_t device;                 /* maximal */
  I64List tile_dims;              /* tiled: devices=[...] */
  bool iota_devices;              /* device list in iota form */
  I64List devices;                /* explicit list */
  I64List iota_reshape_dims, iota_transpose_perm;
  bool last_tile_dim_replicate;
  int nlast_tile_dims;
  char **last_tile_dims;          /* last_tile_dims={manual, replicated} */
  int ntuple;
  Sharding **tuple;
  char *metadata;                 /* metadata={...} inside sharding, raw */
  char *shard_group;              /* shard_as N / shard_like N, raw */
};

typedef struct OpMetadata {
  char *op_type, *op_name, *source_file;
  int64_t source_line, source_end_line, source_column, source_end_column;
  char *deduplicated_name, *scheduling_name;
  int64_t stack_frame_id;         /* 0: absent */
  bool preserve_layout;
  char *profile_type;             /* raw "{...}" */
  char *extra;                    /* keys not known above, raw, space-separated */
} OpMetadata;

/* key="value" pairs (frontend_attributes, module frontend_attributes). */
typedef struct KeyValue {
  char *key, *value;              /* decoded strings */
} KeyValue;

typedef struct KVList {
  int n;
  KeyValue *kv;
} KVList;

/* An attribute the parser does not know, kept verbatim. */
typedef struct RawAttr {
  char *name;
  char *value;                    /* exact source text of the value */
} RawAttr;

/* output_to_operand_aliasing={{0}: (1, {})} and input_output_alias entries */
typedef struct AliasEntry {
  I64List output_index;
  int64_t operand;                /* parameter number / operand number */
  I64List operand_index;
  int kind;                       /* 0 unspecified, 1 may-alias, 2 must-alias */
} AliasEntry;

typedef struct Computation HloComp;
typedef struct Instruction HloInstr;
/* A bitcast-convert between element types of different widths, which
 * adds or drops a minor dimension: elementwise in no sense. */
bool hlo_bitcast_convert_resizes(const HloInstr *i);
/* hlo_op_is_elementwise, less such a bitcast-convert. */
bool hlo_instr_is_elementwise(const HloInstr *i);
typedef struct Module HloModule;

/* Attributes only some opcodes carry; allocated on demand (NULL: none). */
typedef struct ConvAttrs {
  Window *window;
  ConvDnums *dnums;
  int64_t feature_group_count, batch_group_count; /* 0: absent (means 1) */
} ConvAttrs;

typedef struct CustomCallAttrs {
  char *target;                   /* decoded */
  CustomCallApi api_version;
  bool has_side_effect;
  bool has_layout_constraints;
  int nlayout_constraints;
  Shape **layout_constraints;     /* operand_layout_constraints */
  int naliases;
  AliasEntry *aliases;            /* output_to_operand_aliasing */
  char *schedule;                 /* SCHEDULE_* text */
  Literal *literal;               /* literal=... */
  bool uses_called_computations;  /* called_computations={} rather than to_apply */
} CustomCallAttrs;

/*
 * Instruction.  Which fields are meaningful depends on op; the comment on
 * each names the opcodes.  Called computations are in `called` with the
 * order given there.
 */
struct Instruction {
  /* Identity and graph. */
  HloOp op;
  int id;                         /* unique in module, assigned by creation order */
  char *name;                     /* without '%' */
  Shape *shape;
  HloInstr **ops;                 /* operands */
  HloComp **called;               /* to_apply / calls / {condition, body} /
                                     branches (true first) / {select, scatter} /
                                     called_computations */
  int nops;
  int ncalled;
  HloComp *parent;
  /* Control predecessors sit with the graph fields: every pass reads these
   * of each instruction, and together they fit in one or two cache lines. */
  HloInstr **control_preds;
  int ncontrol_preds;
  int nparam_replication;
  Loc loc;                        /* where the instruction was written */

  /* Common optional attributes. */
  OpMetadata *metadata;
  Sharding *sharding;
  KVList *frontend_attrs;
  char *backend_config;           /* exact source text incl. quotes or braces */
  char *statistics;               /* raw */
  char *origin;                   /* raw */
  char *result_accuracy;          /* raw */
  bool *param_replication;        /* parameter_replication={true,false} */
  RawAttr *raw_attrs;             /* attributes the parser does not know */
  int nraw_attrs;

  /* Per-opcode attributes.  Pointers and 64-bit values first, then 32-bit
   * enums and counts, then flags, so the struct has no padding holes. */
  int nprecision;
  int64_t param_number;           /* parameter */
  Literal *literal;               /* constant */
  int64_t tuple_index;            /* get-tuple-element: index= */
  int64_t iota_dim;               /* iota: iota_dimension= */
  I64List dims;                   /* dimensions={}: broadcast, transpose, reduce,
                                     reverse, concatenate, sort, map, all-gather,
                                     all-to-all, reduce-scatter, scan,
                                     get/set-dimension-size, ... */
  SliceDim *slice;                /* slice: rank entries */
  I64List dynamic_slice_sizes;    /* dynamic-slice */
  PadDim *padding;                /* pad: rank entries */
  Window *window;                 /* reduce-window, select-and-scatter */
  ConvAttrs *conv;                /* convolution (and conv custom-calls) */
  DotDnums *dot;                  /* dot, ragged-dot, scaled-dot */
  Precision *precision;           /* operand_precision={...} (nprecision) */
  char *algorithm_dot;            /* dot algorithm=ALG_... */
  char *sparsity;                 /* raw */
  GatherDnums *gather;            /* gather */
  I64List gather_slice_sizes;     /* gather: slice_sizes= */
  ScatterDnums *scatter;          /* scatter */
  CustomCallAttrs *cc;            /* custom-call */
  int64_t channel_id;             /* collectives, send/recv: 0 absent */
  ReplicaGroups *replica_groups;  /* collectives */
  int64_t (*source_target_pairs)[2]; /* collective-permute (npairs) */
  int64_t topk_k;                 /* topk: k= */
  int64_t exponent_bits, mantissa_bits; /* reduce-precision */
  double epsilon;                 /* batch-norm-*: epsilon= (float) */
  int64_t feature_index;          /* batch-norm-* */
  I64List fft_length;             /* fft */
  char *infeed_config, *outfeed_config; /* decoded */
  Shape *outfeed_shape;
  char *domain;                   /* domain: raw {kind=... entry=... exit=...} */
  char *async_thread;             /* async ops: async_execution_thread= */
  int64_t scan_num_carries;       /* scan */
  int64_t cross_program_prefetch_index; /* copy-start; -1 absent */
  char *padding_type;             /* custom-call padding_type= */
  int64_t rng_delta;              /* rng-get-and-update-state: delta= */
  int64_t inferred_dimension;     /* reshape: inferred_dimension= (when has_) */

  int npairs;
  CmpDir cmp_dir;                 /* compare */
  CmpType cmp_type;               /* compare: CMPT_NONE when not given */
  FusionKind fusion_kind;         /* fusion */
  RngDist rng_dist;               /* rng */
  RngAlgo rng_algo;               /* rng-bit-generator */
  FftType fft_type;               /* fft */
  TriTranspose tri_transpose_a;   /* triangular-solve */
  HloOp async_wrapped_op;         /* async sugar: e.g. negate-start */

  bool has_dims;                  /* dimensions= was given */
  bool indices_are_sorted, unique_indices; /* gather, scatter */
  bool has_channel_id;
  bool use_global_device_ids, constrain_layout; /* collectives */
  bool is_stable;                 /* sort */
  bool topk_largest;              /* topk: largest= */
  bool tri_left_side, tri_lower, tri_unit_diagonal; /* triangular-solve */
  bool cholesky_lower;            /* cholesky: lower= */
  bool is_host_transfer;          /* send, recv, *-done */
  bool async_sugar;               /* printed as <op>-start/-update/-done */
  bool is_composite;              /* call */
  bool scan_is_reverse, scan_is_associative; /* scan */
  bool is_cross_program_prefetch; /* copy-start */
  bool has_inferred_dimension;    /* reshape */
};

struct Computation {
  char *name;
  HloModule *module;
  int ninstrs, capinstrs;
  HloInstr **instrs;              /* in text (and, if scheduled, schedule) order */
  int nparams;
  HloInstr **params;              /* by parameter number */
  HloInstr *root;
  bool is_entry;
  bool printed_signature;         /* the source gave "(p: shape) -> shape" */
  char *execution_thread;         /* execution_thread="..." */
  HloInstr *fusion_instr;         /* for fusion computations: a caller (or NULL) */
  Loc loc;
};

typedef struct ProgramShape {
  int nparams;
  Shape **params;
  char **param_names;             /* may be NULL */
  Shape *result;
} ProgramShape;

struct Module {
  Arena *arena;
  char *name;
  int ncomps, capcomps;
  HloComp **comps;                /* in text order; callees before callers */
  HloComp *entry;
  int next_id;                    /* next instruction id */

  /* Header attributes. */
  bool is_scheduled;
  bool has_is_scheduled;
  int64_t replica_count, num_partitions; /* 0: absent */
  int nio_alias;
  AliasEntry *io_alias;           /* input_output_alias */
  int nbuffer_donors;
  AliasEntry *buffer_donors;      /* buffer_donor={(0, {})} (operand, operand_index) */
  ProgramShape *entry_layout;     /* entry_computation_layout={...} */
  KVList *frontend_attrs;
  bool alias_passthrough_params;
  int nspmd_params;
  bool *spmd_params;              /* allow_spmd_sharding_propagation_to_parameters */
  int nspmd_output;
  bool *spmd_output;              /* allow_spmd_sharding_propagation_to_output */
  int nraw_attrs;
  RawAttr *raw_attrs;             /* unknown header attributes */
  char *trailer;                  /* FileNames/FunctionNames/... tables, raw */
  Loc loc;
  /* ir_edit.c: a number past every ".N" suffix of the module's names, kept
   * as fresh names are made (0: not known yet; found by a scan). */
  int64_t name_suffix_hint;
};

/*
 * ir.c: building and editing the IR
 */
HloModule *hlo_module_new(const char *name);
void hlo_module_free(HloModule *m);
HloComp *hlo_comp_new(HloModule *m, const char *name);  /* appended to m */
/* A new instruction appended to c (operands copied into the arena). */
HloInstr *hlo_instr_new(HloComp *c, HloOp op, Shape *shape, int nops,
                        HloInstr *const *ops);
void hlo_comp_append(HloComp *c, HloInstr *i);
HloComp *hlo_module_find_comp(const HloModule *m, const char *name);
HloInstr *hlo_comp_find_instr(const HloComp *c, const char *name);

/*
 * device_counts.c: how many devices a module runs on
 *
 * Sets m's replica_count and num_partitions from --num-replicas and
 * --num-partitions (> 0: given; each must agree with the header where it
 * has the count), and, when neither the header nor the flag gives
 * num_partitions, from the devices the module names (what
 * jax.jit(...).lower(...).as_text() leaves out): the largest Shardy mesh
 * (the product of its axis sizes), else the devices its tiled shardings
 * list when they all list the same number.  A count so taken (or not
 * taken) is described in note, for stderr; nothing is appended otherwise.
 * False with an error at the module's header on a conflict.
 */
bool hlo_set_device_counts(HloModule *m, int64_t replicas, int64_t partitions,
                           StrBuf *note, Diag *d);

/*
 * parse.c: the HLO text parser
 *
 * Parses every module in src (modules separated by "// -----", or one module
 * without an HloModule header).  Returns the number of modules (>= 1) and
 * sets *out to a heap array of them, or returns -1 with the error in d.
 * Warnings (unknown attributes) go to d->warn_out.
 */
typedef struct ParseOptions {
  bool strip_glog_prefixes;       /* default behaviour: true via hlo_parse_default */
} ParseOptions;

int hlo_parse(const SrcFile *src, const ParseOptions *opts, HloModule ***out,
              Diag *d);
/* A single shape from text ("f32[2,3]{1,0}"), for tests and the runtime. */
Shape *hlo_parse_shape(Arena *a, const char *text, Diag *d);
/* A sharding from its text ("{devices=[2,1]<=[2]}", "{replicated}"). */
Sharding *hlo_parse_sharding(Arena *a, const char *text, Diag *d);
/* A literal of the given shape from XLA literal text ("{1, 2}"). */
Literal *hlo_parse_literal(Arena *a, const Shape *shape, const char *text,
                           Diag *d);

/*
 * print.c: the printer (XLA's long text form)
 */
typedef struct PrintOptions {
  bool print_metadata;            /* default true */
  bool print_large_constants;     /* default true: we never elide what we know */
  bool print_backend_config;      /* default true */
} PrintOptions;

extern const PrintOptions print_options_default;
void hlo_print_module(StrBuf *b, const HloModule *m, const PrintOptions *o);
/* The same text, written to f as it is produced (at most about 1 MB is held
 * at a time), so a module's long form never has to fit in memory.  Returns
 * false if a write failed. */
bool hlo_write_module(FILE *f, const HloModule *m, const PrintOptions *o);
void hlo_print_comp(StrBuf *b, const HloComp *c, const PrintOptions *o);
void hlo_print_instr(StrBuf *b, const HloInstr *i, const PrintOptions *o);
/* A sharding as sharding={...} has it: "{devices=[2,1]<=[2]}". */
void hlo_print_sharding(StrBuf *b, const Sharding *s);

/*
 * collective_groups.c: who takes part in a collective, as XLA's
 * GetCollectiveOpGroupMode and GetParticipatingDevices define it.  Devices
 * are numbered by their flattened id, replica * partitions + partition.
 */
typedef enum CollectiveGroupMode {
  CGM_CROSS_REPLICA,              /* no channel_id: groups of replica ids, in
                                     this device's partition */
  CGM_CROSS_PARTITION,            /* channel_id, no use_global_device_ids
                                     attribute (all-to-all, permute,
                                     broadcast): groups of partition ids, in
                                     this device's replica */
  CGM_CROSS_REPLICA_AND_PARTITION, /* channel_id, use_global_device_ids=false:
                                     groups of replica ids, every partition */
  CGM_FLATTENED_ID,               /* use_global_device_ids=true: groups of
                                     flattened ids */
} CollectiveGroupMode;

/* Whether op carries use_global_device_ids (all-reduce, all-gather,
 * reduce-scatter and their -start forms, collective-reduce). */
bool hlo_collective_has_global_ids(HloOp op);
/* i's group mode; false (use_global_device_ids without a channel_id) when
 * there is none. */
bool hlo_collective_group_mode(const HloInstr *i, CollectiveGroupMode *mode);
const char *hlo_collective_group_mode_name(CollectiveGroupMode mode);
/* The replica groups as explicit lists (the iota form expanded): returns
 * the number of groups (0 for none or {}) and heap arrays in *groups (each
 * group heap too) and *sizes; free with hlo_replica_groups_free. */
int hlo_replica_groups_expand(const ReplicaGroups *g, int64_t ***groups,
                              int64_t **sizes);
void hlo_replica_groups_free(int n, int64_t **groups, int64_t *sizes);
/* Where a -done's results are among its -start's leaves (io_shape_leaves
 * order): all-reduce-start's last leaves (it is shaped as the results, or
 * (operand, result) in the old form); all-gather-start's and
 * collective-permute-start's element 1 of (operands, results, ...), or all
 * of a start shaped as its result.  -1 when the shapes do not fit. */
int hlo_async_done_first_leaf(const HloInstr *start, const HloInstr *done);
/* The devices taking part with device (replica, partition) in collective i
 * of a module with `replicas` x `partitions` devices, in XLA's order (the
 * order of the group, partitions innermost for cross-replica-and-
 * partition): returns their count and a heap array of flattened ids in
 * *devices; -1 with a message in why when the groups do not hold this
 * device, name a device that does not exist or the mode is invalid. */
int hlo_collective_participants(const HloInstr *i, int64_t replicas,
                                int64_t partitions, int64_t replica,
                                int64_t partition, int64_t **devices,
                                char *why, size_t nwhy);
/* The same for explicit groups (as hlo_replica_groups_expand gives them)
 * read in the given mode. */
int hlo_group_participants(CollectiveGroupMode mode, int ngroups,
                           int64_t *const *groups, const int64_t *sizes,
                           int64_t replicas, int64_t partitions,
                           int64_t replica, int64_t partition,
                           int64_t **devices, char *why, size_t nwhy);

/*
 * tiling.c: a sharding seen from the devices.  For each of the module's
 * ndev devices (partitions) the index of its tile along every dimension;
 * devices with the same indices hold copies of one tile.  A tiled dimension
 * of length n cut into t tiles has shards of ceil(n / t) elements, the last
 * ones padded.
 */
typedef struct Tiling {
  int rank;
  int64_t ndev;
  int64_t *tiles;                 /* [rank]: tiles along each dimension */
  int64_t *coord;                 /* [ndev * rank]: device d's tile index
                                     along dimension k at d * rank + k */
  bool manual;                    /* every device holds a value of its own
                                     (shard_map): no tiles, local shapes */
} Tiling;

Tiling *tiling_new(Arena *a, int rank, int64_t ndev);   /* replicated */
Tiling *tiling_replicated(Arena *a, int rank, int64_t ndev);
Tiling *tiling_manual(Arena *a, int rank, int64_t ndev);
Tiling *tiling_clone(Arena *a, const Tiling *t);
/* The tiling of an array sharding (replicated, maximal (a copy on every
 * device), manual, tiled with or without replicated copies) for an array
 * of this rank on ndev devices; false with the reason in why when it is
 * none of those, does not fit the rank or does not name each device once. */
bool tiling_from_sharding(Arena *a, const Sharding *s, int rank, int64_t ndev,
                          Tiling **out, char *why, size_t nwhy);
/* The HLO sharding of t: {replicated}, {manual} or devices=[...] (the iota
 * form when the devices come in order), last_tile_dim_replicate when
 * several devices share a tile. */
Sharding *tiling_to_sharding(Arena *a, const Tiling *t);
bool tiling_is_replicated(const Tiling *t);
bool tiling_equal(const Tiling *a, const Tiling *b);
/* Every tile is held by the same number of devices, indices in range. */
bool tiling_valid(const Tiling *t);
int64_t tiling_num_tiles(const Tiling *t);
/* Device d's tile as one row-major number over the tile grid. */
int64_t tiling_tile_index(const Tiling *t, int64_t d);
/* The shard's length along dimension k of an array `global` long there. */
int64_t tiling_shard_dim(const Tiling *t, int k, int64_t global);
/* The shard's shape (layout kept). */
Shape *tiling_shard_shape(Arena *a, const Tiling *t, const Shape *global);
/* Where device d's shard starts along dimension k. */
int64_t tiling_offset(const Tiling *t, int64_t d, int k, int64_t global);

/*
 * shape_inference.c: the result shape an instruction's operands and
 * attributes give.  Returns NULL (with an error in d at i->loc) when the
 * operands or attributes are invalid for the opcode.  Layouts of the result
 * are the default.  For opcodes whose result is not determined by operands
 * (parameter, constant, custom-call, ...) returns i->shape unchanged.
 */
Shape *hlo_infer_shape(Arena *a, const HloInstr *i, Diag *d);

/*
 * verify.c: the verifier.  Checks operand counts, shapes (via
 * hlo_infer_shape), called-computation signatures, unique names, use before
 * definition, one root per computation.  Returns false with the first error.
 */
bool hlo_verify(const HloModule *m, Diag *d);

/* rng_keys.c: the Philox key XLA's CPU compiler (jaxlib 0.10.2) gives the
 * k-th rng it expands in a module compiled first in its process (k from 0),
 * and the rngs of m in the order it expands them (computations and their
 * instructions in post order; a heap array in *out, returns the count). */
uint64_t hlo_rng_key(int k);
int hlo_rng_order(const HloModule *m, HloInstr ***out);

/* custom_call_targets.c: custom-call targets that only annotate their
 * operand (Sharding, SPMD and Shardy markers, MoveToHost/MoveToDevice, ...):
 * on one device the result is the operand. */
bool custom_call_is_annotation(const char *target);
/* JAX's GPU Threefry-2x32 kernel (cu_threefry2x32) of a well-formed shape:
 * four u32 operands of one shape, a pair of them as the result. */
bool custom_call_is_threefry(const HloInstr *i);

#endif
