/*
 * print_attrs.c - the attributes that belong to one opcode, and the called
 * computations, in the order XLA prints them.
 *
 * XLA prints an instruction's own attributes (PrintExtraAttributesImpl of
 * its class) first, then its called computations (to_apply=, calls=, ...),
 * then the attributes any instruction may carry.  This file does the first
 * two; print.c does the rest.  What XLA prints only when it differs from the
 * default is printed here the same way: the window keys other than size,
 * compare type, is_stable, indices_are_sorted, feature_group_count, ...
 */
#include "print_internal.h"

#include <string.h>

static const char *const cmp_dir_names[] = {"", "EQ", "NE", "GE", "GT", "LE", "LT"};
static const char *const cmp_type_names[] = {"", "FLOAT", "TOTALORDER",
                                             "SIGNED", "UNSIGNED", "PARTIALORDER"};
static const char *const fusion_kind_names[] = {"", "kLoop", "kInput",
                                                "kOutput", "kCustom"};
static const char *const rng_dist_names[] = {"", "rng_uniform", "rng_normal"};
static const char *const rng_algo_names[] = {"", "rng_default", "rng_three_fry",
                                             "rng_philox"};
static const char *const fft_names[] = {"", "FFT", "IFFT", "RFFT", "IRFFT"};
static const char *const precision_names[] = {"default", "high", "highest",
                                              "packed_nibble"};
static const char *const cc_api_names[] = {
    "", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
    "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"};
static const char *const tri_transpose_names[] = {"", "NO_TRANSPOSE",
                                                  "TRANSPOSE", "ADJOINT"};

/* Name from a table, "" when v is out of range (bad input must not crash). */
#define ENUM_NAME(table, v)                                                    \
  ((unsigned)(v) < ARRAY_LEN(table) ? (table)[(unsigned)(v)] : "")

static void attr(StrBuf *b, const char *key) {
  pr_puts(b, ", ");
  pr_puts(b, key);
  pr_putc(b, '=');
}

static void attr_i64(StrBuf *b, const char *key, int64_t v) {
  attr(b, key);
  pr_put_i64(b, v);
}

static void attr_list(StrBuf *b, const char *key, I64List l) {
  attr(b, key);
  pr_braced(b, l);
}

static void attr_word(StrBuf *b, const char *key, const char *word) {
  attr(b, key);
  pr_puts(b, word);
}

static void flag(StrBuf *b, bool on, const char *text) {
  if (on) {
    pr_puts(b, ", ");
    pr_puts(b, text);
  }
}

/* Entries of slice= and padding=: one per dimension of operand 0, which is
 * what the parser checks their count against. */
static int operand_rank(const HloInstr *i) {
  const Shape *s = i->nops > 0 && i->ops[0] ? i->ops[0]->shape : i->shape;
  return shape_is_array(s) ? s->rank : 0;
}

/* slice={[0:2], [1:3:2]}: the stride only when some stride is not 1. */
static void print_slice(StrBuf *b, const HloInstr *i) {
  int rank = operand_rank(i);
  bool strides = false;
  for (int d = 0; d < rank; d++)
    strides |= i->slice[d].stride != 1;
  attr(b, "slice");
  pr_putc(b, '{');
  for (int d = 0; d < rank; d++) {
    if (d)
      pr_puts(b, ", ");
    pr_putc(b, '[');
    pr_put_i64(b, i->slice[d].start);
    pr_putc(b, ':');
    pr_put_i64(b, i->slice[d].limit);
    if (strides) {
      pr_putc(b, ':');
      pr_put_i64(b, i->slice[d].stride);
    }
    pr_putc(b, ']');
  }
  pr_putc(b, '}');
}

/* padding=0_1x2_2, or 0_1_0x2_2_1 when some dimension has interior padding. */
static void print_padding(StrBuf *b, const HloInstr *i) {
  int rank = operand_rank(i);
  bool interior = false;
  for (int d = 0; d < rank; d++)
    interior |= i->padding[d].interior != 0;
  attr(b, "padding");
  for (int d = 0; d < rank; d++) {
    if (d)
      pr_putc(b, 'x');
    pr_put_i64(b, i->padding[d].lo);
    pr_putc(b, '_');
    pr_put_i64(b, i->padding[d].hi);
    if (interior) {
      pr_putc(b, '_');
      pr_put_i64(b, i->padding[d].interior);
    }
  }
}

static void print_window(StrBuf *b, const Window *w) {
  if (!w || w->ndims == 0)
    return;
  attr(b, "window");
  pr_putc(b, '{');
  pr_window(b, w);
  pr_putc(b, '}');
}

/* operand_precision={...} when some precision is not default; algorithm=. */
static void print_precision(StrBuf *b, const HloInstr *i) {
  bool any = false;
  for (int k = 0; k < i->nprecision; k++)
    any |= i->precision[k] != PREC_DEFAULT;
  if (any) {
    attr(b, "operand_precision");
    pr_putc(b, '{');
    for (int k = 0; k < i->nprecision; k++) {
      if (k)
        pr_putc(b, ',');
      pr_puts(b, ENUM_NAME(precision_names, i->precision[k]));
    }
    pr_putc(b, '}');
  }
  if (i->algorithm_dot && *i->algorithm_dot)
    attr_word(b, "algorithm", i->algorithm_dot);
}

/* Convolution-like attributes shared by convolution and conv custom-calls. */
static void print_conv(StrBuf *b, const ConvAttrs *c) {
  if (!c)
    return;
  print_window(b, c->window);
  if (c->dnums) {
    attr(b, "dim_labels");
    pr_conv_dnums(b, c->dnums);
  }
  if (c->feature_group_count > 1)
    attr_i64(b, "feature_group_count", c->feature_group_count);
  if (c->batch_group_count > 1)
    attr_i64(b, "batch_group_count", c->batch_group_count);
}

static void print_sparsity(StrBuf *b, const HloInstr *i) {
  if (i->sparsity && *i->sparsity)
    attr_word(b, "sparsity", i->sparsity);
}

/* lhs_batch_dims and rhs_batch_dims only when non-empty, as XLA does. */
static void print_dot(StrBuf *b, const HloInstr *i, bool ragged) {
  const DotDnums *d = i->dot;
  if (d) {
    if (d->lhs_batch.n)
      attr_list(b, "lhs_batch_dims", d->lhs_batch);
    attr_list(b, "lhs_contracting_dims", d->lhs_contracting);
    if (d->rhs_batch.n)
      attr_list(b, "rhs_batch_dims", d->rhs_batch);
    attr_list(b, "rhs_contracting_dims", d->rhs_contracting);
    if (ragged && d->lhs_ragged.n)
      attr_list(b, "lhs_ragged_dims", d->lhs_ragged);
    if (ragged && d->rhs_group.n)
      attr_list(b, "rhs_group_dims", d->rhs_group);
  }
  print_precision(b, i);
  print_sparsity(b, i);
}

static void print_gather(StrBuf *b, const HloInstr *i) {
  const GatherDnums *g = i->gather;
  if (g) {
    attr_list(b, "offset_dims", g->offset_dims);
    attr_list(b, "collapsed_slice_dims", g->collapsed_slice_dims);
    attr_list(b, "start_index_map", g->start_index_map);
    if (g->operand_batching_dims.n)
      attr_list(b, "operand_batching_dims", g->operand_batching_dims);
    if (g->start_indices_batching_dims.n)
      attr_list(b, "start_indices_batching_dims", g->start_indices_batching_dims);
    attr_i64(b, "index_vector_dim", g->index_vector_dim);
  }
  attr_list(b, "slice_sizes", i->gather_slice_sizes);
  flag(b, i->indices_are_sorted, "indices_are_sorted=true");
}

static void print_scatter(StrBuf *b, const HloInstr *i) {
  const ScatterDnums *s = i->scatter;
  if (s) {
    attr_list(b, "update_window_dims", s->update_window_dims);
    attr_list(b, "inserted_window_dims", s->inserted_window_dims);
    attr_list(b, "scatter_dims_to_operand_dims", s->scatter_dims_to_operand_dims);
    if (s->input_batching_dims.n)
      attr_list(b, "input_batching_dims", s->input_batching_dims);
    if (s->scatter_indices_batching_dims.n)
      attr_list(b, "scatter_indices_batching_dims",
                s->scatter_indices_batching_dims);
    attr_i64(b, "index_vector_dim", s->index_vector_dim);
  }
  flag(b, i->indices_are_sorted, "indices_are_sorted=true");
  flag(b, i->unique_indices, "unique_indices=true");
}

static void print_channel(StrBuf *b, const HloInstr *i) {
  if (i->has_channel_id)
    attr_i64(b, "channel_id", i->channel_id);
}

static const RawAttr *find_raw(const HloInstr *i, const char *name) {
  for (int k = 0; k < i->nraw_attrs; k++)
    if (i->raw_attrs[k].name && strcmp(i->raw_attrs[k].name, name) == 0)
      return &i->raw_attrs[k];
  return NULL;
}

/* HloCollectiveInstruction: channel_id, replica_groups, constrain_layout.
 * Replica groups the parser kept as text (the mesh form) print in their
 * place; pr_raw_attrs then leaves them out. */
static void print_collective(StrBuf *b, const HloInstr *i) {
  print_channel(b, i);
  const RawAttr *raw = i->replica_groups ? NULL : find_raw(i, "replica_groups");
  attr(b, "replica_groups");
  if (raw)
    pr_puts(b, raw->value ? raw->value : "");
  else
    pr_replica_groups(b, i->replica_groups);
  flag(b, i->constrain_layout, "constrain_layout=true");
}

/* Whether opcode op prints replica_groups itself (print_collective). */
static bool is_collective(HloOp op) {
  switch (op) {
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START: case HLO_ALL_REDUCE:
  case HLO_ALL_REDUCE_START: case HLO_COLLECTIVE_REDUCE: case HLO_REDUCE_SCATTER:
  case HLO_ALL_TO_ALL: case HLO_RAGGED_ALL_TO_ALL: case HLO_COLLECTIVE_BROADCAST:
    return true;
  default:
    return false;
  }
}

static void print_source_target_pairs(StrBuf *b, const HloInstr *i) {
  attr(b, "source_target_pairs");
  pr_putc(b, '{');
  for (int k = 0; k < i->npairs; k++) {
    if (k)
      pr_putc(b, ',');
    pr_putc(b, '{');
    pr_put_i64(b, i->source_target_pairs[k][0]);
    pr_putc(b, ',');
    pr_put_i64(b, i->source_target_pairs[k][1]);
    pr_putc(b, '}');
  }
  pr_putc(b, '}');
}

static void print_custom_call(StrBuf *b, const HloInstr *i) {
  print_conv(b, i->conv);
  print_precision(b, i);
  if (i->padding_type && *i->padding_type)
    attr_word(b, "padding_type", i->padding_type);
  const CustomCallAttrs *cc = i->cc;
  attr(b, "custom_call_target");
  pr_quoted(b, cc ? cc->target : "");
  if (!cc)
    return;
  if (cc->has_layout_constraints) {
    attr(b, "operand_layout_constraints");
    pr_putc(b, '{');
    for (int k = 0; k < cc->nlayout_constraints; k++) {
      if (k)
        pr_puts(b, ", ");
      shape_print(b, cc->layout_constraints[k], true);
    }
    pr_putc(b, '}');
  }
  flag(b, cc->has_side_effect, "custom_call_has_side_effect=true");
  if (cc->literal) {
    attr(b, "literal");
    if (shape_is_array(cc->literal->shape)) {
      shape_print(b, cc->literal->shape, true);
      pr_putc(b, ' ');
    }
    literal_print(b, cc->literal);
  }
  if (cc->naliases > 0) {
    attr(b, "output_to_operand_aliasing");
    pr_putc(b, '{');
    pr_alias_entries(b, cc->aliases, cc->naliases, false);
    pr_putc(b, '}');
  }
  if (cc->schedule && *cc->schedule && strcmp(cc->schedule, "SCHEDULE_NONE") != 0)
    attr_word(b, "schedule", cc->schedule);
  if (cc->api_version > CC_API_ORIGINAL)
    attr_word(b, "api_version", ENUM_NAME(cc_api_names, cc->api_version));
}

static void print_triangular_solve(StrBuf *b, const HloInstr *i) {
  flag(b, i->tri_left_side, "left_side=true");
  flag(b, i->tri_lower, "lower=true");
  flag(b, i->tri_unit_diagonal, "unit_diagonal=true");
  if (i->tri_transpose_a != TRI_NONE)
    attr_word(b, "transpose_a", ENUM_NAME(tri_transpose_names, i->tri_transpose_a));
}

static void print_bools(StrBuf *b, const char *key, const bool *v, int n) {
  attr(b, key);
  pr_putc(b, '{');
  for (int k = 0; k < n; k++) {
    if (k)
      pr_putc(b, ',');
    pr_puts(b, v[k] ? "true" : "false");
  }
  pr_putc(b, '}');
}

void pr_opcode_attrs(StrBuf *b, const HloInstr *i, HloOp op) {
  switch (op) {
  case HLO_PARAMETER:
    if (i->nparam_replication > 0)
      print_bools(b, "parameter_replication", i->param_replication,
                  i->nparam_replication);
    break;
  case HLO_GET_TUPLE_ELEMENT:
    attr_i64(b, "index", i->tuple_index);
    break;
  case HLO_IOTA:
    attr_i64(b, "iota_dimension", i->iota_dim);
    break;
  case HLO_RESHAPE:
    if (i->has_inferred_dimension)
      attr_i64(b, "inferred_dimension", i->inferred_dimension);
    break;
  case HLO_RNG_GET_AND_UPDATE_STATE:
    attr_i64(b, "delta", i->rng_delta);
    break;
  case HLO_BROADCAST: case HLO_TRANSPOSE: case HLO_REVERSE:
  case HLO_CONCATENATE: case HLO_REDUCE: case HLO_MAP:
  case HLO_GET_DIMENSION_SIZE: case HLO_SET_DIMENSION_SIZE:
    attr_list(b, "dimensions", i->dims);
    break;
  case HLO_SORT:
    attr_list(b, "dimensions", i->dims);
    flag(b, i->is_stable, "is_stable=true");
    break;
  case HLO_SCAN:
    attr_list(b, "dimensions", i->dims);
    attr_i64(b, "num_carries", i->scan_num_carries);
    flag(b, i->scan_is_reverse, "is_reverse=true");
    flag(b, i->scan_is_associative, "is_associative=true");
    break;
  case HLO_SLICE:
    if (i->slice)
      print_slice(b, i);
    break;
  case HLO_DYNAMIC_SLICE:
    attr_list(b, "dynamic_slice_sizes", i->dynamic_slice_sizes);
    break;
  case HLO_PAD:
    if (i->padding)
      print_padding(b, i);
    break;
  case HLO_REDUCE_WINDOW: case HLO_SELECT_AND_SCATTER:
    print_window(b, i->window);
    break;
  case HLO_CONVOLUTION:
    print_conv(b, i->conv);
    print_precision(b, i);
    print_sparsity(b, i);
    break;
  case HLO_DOT: case HLO_SCALED_DOT:
    print_dot(b, i, false);
    break;
  case HLO_RAGGED_DOT:
    print_dot(b, i, true);
    break;
  case HLO_GATHER:
    print_gather(b, i);
    break;
  case HLO_SCATTER:
    print_scatter(b, i);
    break;
  case HLO_COMPARE:
    attr_word(b, "direction", ENUM_NAME(cmp_dir_names, i->cmp_dir));
    if (i->cmp_type != CMPT_NONE)
      attr_word(b, "type", ENUM_NAME(cmp_type_names, i->cmp_type));
    break;
  case HLO_FUSION:
    if (i->fusion_kind != FUSION_NONE)
      attr_word(b, "kind", ENUM_NAME(fusion_kind_names, i->fusion_kind));
    break;
  case HLO_CUSTOM_CALL:
    print_custom_call(b, i);
    break;
  case HLO_BATCH_NORM_GRAD: case HLO_BATCH_NORM_INFERENCE:
  case HLO_BATCH_NORM_TRAINING:
    attr(b, "epsilon");
    sb_printf(b, "%g", i->epsilon);
    attr_i64(b, "feature_index", i->feature_index);
    break;
  case HLO_FFT:
    attr_word(b, "fft_type", ENUM_NAME(fft_names, i->fft_type));
    attr_list(b, "fft_length", i->fft_length);
    break;
  case HLO_COPY_START:
    if (i->cross_program_prefetch_index >= 0)
      attr_i64(b, "cross_program_prefetch_index", i->cross_program_prefetch_index);
    flag(b, i->is_cross_program_prefetch, "is_cross_program_prefetch=true");
    break;
  case HLO_TRIANGULAR_SOLVE:
    print_triangular_solve(b, i);
    break;
  case HLO_CHOLESKY:
    flag(b, i->cholesky_lower, "lower=true");
    break;
  case HLO_TOPK:
    attr_i64(b, "k", i->topk_k);
    attr_word(b, "largest", i->topk_largest ? "true" : "false");
    flag(b, i->is_stable, "is_stable=true");
    break;
  case HLO_SEND: case HLO_RECV: case HLO_SEND_DONE: case HLO_RECV_DONE:
    print_channel(b, i);
    flag(b, i->is_host_transfer, "is_host_transfer=true");
    break;
  case HLO_ALL_GATHER: case HLO_ALL_GATHER_START:
    print_collective(b, i);
    attr_list(b, "dimensions", i->dims);
    flag(b, i->use_global_device_ids, "use_global_device_ids=true");
    break;
  case HLO_ALL_REDUCE: case HLO_ALL_REDUCE_START: case HLO_COLLECTIVE_REDUCE:
    print_collective(b, i);
    flag(b, i->use_global_device_ids, "use_global_device_ids=true");
    break;
  case HLO_REDUCE_SCATTER:
    print_collective(b, i);
    flag(b, i->use_global_device_ids, "use_global_device_ids=true");
    attr_list(b, "dimensions", i->dims);
    break;
  case HLO_ALL_TO_ALL:
    print_collective(b, i);
    if (i->has_dims)
      attr_list(b, "dimensions", i->dims);
    break;
  case HLO_RAGGED_ALL_TO_ALL: case HLO_COLLECTIVE_BROADCAST:
    print_collective(b, i);
    break;
  case HLO_COLLECTIVE_PERMUTE: case HLO_COLLECTIVE_PERMUTE_START:
    print_channel(b, i);
    print_source_target_pairs(b, i);
    break;
  case HLO_RNG:
    attr_word(b, "distribution", ENUM_NAME(rng_dist_names, i->rng_dist));
    break;
  case HLO_RNG_BIT_GENERATOR:
    attr_word(b, "algorithm", ENUM_NAME(rng_algo_names, i->rng_algo));
    break;
  case HLO_REDUCE_PRECISION:
    attr_i64(b, "exponent_bits", i->exponent_bits);
    attr_i64(b, "mantissa_bits", i->mantissa_bits);
    break;
  case HLO_INFEED:
    if (i->infeed_config && *i->infeed_config) {
      attr(b, "infeed_config");
      pr_quoted(b, i->infeed_config);
    }
    break;
  case HLO_OUTFEED: {
    const Shape *s = i->outfeed_shape;
    if (!s && i->nops > 0 && i->ops[0])
      s = i->ops[0]->shape;
    attr(b, "outfeed_shape");
    shape_print(b, s, true);
    if (i->outfeed_config && *i->outfeed_config) {
      attr(b, "outfeed_config");
      pr_quoted(b, i->outfeed_config);
    }
    break;
  }
  case HLO_DOMAIN:
    if (i->domain && *i->domain)
      attr_word(b, "domain", i->domain);
    break;
  default:
    break;
  }
  pr_raw_attrs(b, i);
}

void pr_raw_attrs(StrBuf *b, const HloInstr *i) {
  bool groups_printed = is_collective(i->op) && !i->replica_groups;
  for (int k = 0; k < i->nraw_attrs; k++) {
    const RawAttr *r = &i->raw_attrs[k];
    const char *name = r->name ? r->name : "";
    if (groups_printed && strcmp(name, "replica_groups") == 0)
      continue;
    attr_word(b, name, r->value ? r->value : "");
  }
}

static void attr_comp(StrBuf *b, const char *key, const HloComp *c) {
  attr(b, key);
  pr_name(b, c ? c->name : "");
}

/* "{%a, %b}" */
static void comp_list(StrBuf *b, HloComp *const *c, int n) {
  pr_putc(b, '{');
  for (int k = 0; k < n; k++) {
    if (k)
      pr_puts(b, ", ");
    pr_name(b, c[k] ? c[k]->name : "");
  }
  pr_putc(b, '}');
}

/* A conditional's branches are true/false computations when its selector
 * (operand 0) is a pred, else branch_computations. */
static bool pred_conditional(const HloInstr *i) {
  return i->nops > 0 && i->ops[0] && i->ops[0]->shape &&
         i->ops[0]->shape->et == ET_PRED && i->ncalled == 2;
}

void pr_called(StrBuf *b, const HloInstr *i, HloOp op) {
  if (i->ncalled == 0)
    return;
  switch (op) {
  case HLO_WHILE:
    attr_comp(b, "condition", i->called[0]);
    if (i->ncalled > 1)
      attr_comp(b, "body", i->called[1]);
    break;
  case HLO_SELECT_AND_SCATTER:
    attr_comp(b, "select", i->called[0]);
    if (i->ncalled > 1)
      attr_comp(b, "scatter", i->called[1]);
    break;
  case HLO_CONDITIONAL:
    if (pred_conditional(i)) {
      attr_comp(b, "true_computation", i->called[0]);
      attr_comp(b, "false_computation", i->called[1]);
    } else {
      attr(b, "branch_computations");
      comp_list(b, i->called, i->ncalled);
    }
    break;
  case HLO_CALL: case HLO_MAP: case HLO_REDUCE_WINDOW: case HLO_REDUCE:
  case HLO_ALL_REDUCE: case HLO_REDUCE_SCATTER: case HLO_ALL_REDUCE_START:
  case HLO_SCATTER: case HLO_SORT: case HLO_SCAN: case HLO_COLLECTIVE_REDUCE:
    attr_comp(b, "to_apply", i->called[0]);
    flag(b, op == HLO_CALL && i->is_composite, "is_composite=true");
    break;
  case HLO_CUSTOM_CALL:
    if (i->cc && !i->cc->uses_called_computations && i->ncalled == 1) {
      attr_comp(b, "to_apply", i->called[0]);
    } else {
      attr(b, "called_computations");
      comp_list(b, i->called, i->ncalled);
    }
    break;
  case HLO_ASYNC_UPDATE: case HLO_ASYNC_DONE:
    break;
  default:
    attr(b, "calls");
    for (int k = 0; k < i->ncalled; k++) {
      if (k)
        pr_puts(b, ", ");
      pr_name(b, i->called[k] ? i->called[k]->name : "");
    }
    break;
  }
}
