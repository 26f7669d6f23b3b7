/*
 * print_util.c - the printer's formatters for attribute values: quoted
 * strings, integer lists, key/value lists, op metadata, shardings, replica
 * groups, windows and convolution dimension labels.
 *
 * Formats follow XLA's printers (OpMetadataToString, HloSharding::Print,
 * CollectiveDeviceList::Print, window_util::ToString,
 * ConvolutionDimensionNumbersToString, FrontendAttributesToString).
 */
#include "print_internal.h"

#include <stdlib.h>
#include <string.h>

/* Bytes that print as themselves inside a quoted string: printable ASCII
 * but the quotes and backslash, and bytes >= 0x80 (kept as UTF-8). */
static const bool plain_byte[256] = {
#define R8(v) v, v, v, v, v, v, v, v
    R8(0), R8(0), R8(0), R8(0),               /* 0x00-0x1f: controls */
    1, 1, 0, 1, 1, 1, 1, 0, R8(1),            /* 0x20-0x2f: '"' 0x22, '\'' 0x27 */
    R8(1), R8(1), R8(1), R8(1), R8(1),        /* 0x30-0x57 */
    1, 1, 1, 1, 0, 1, 1, 1,                   /* 0x58-0x5f: '\\' 0x5c */
    R8(1), R8(1), R8(1), 1, 1, 1, 1, 1, 1, 1, 0, /* 0x60-0x7f: DEL 0x7f */
    R8(1), R8(1), R8(1), R8(1), R8(1), R8(1), R8(1), R8(1), /* 0x80-0xbf */
    R8(1), R8(1), R8(1), R8(1), R8(1), R8(1), R8(1), R8(1), /* 0xc0-0xff */
#undef R8
};

void pr_quoted(StrBuf *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  pr_putc(b, '"');
  if (s) {
    const unsigned char *p = (const unsigned char *)s;
    for (;;) {
      const unsigned char *run = p;
      while (plain_byte[*p])
        p++;
      if (p > run)
        pr_putn(b, (const char *)run, (size_t)(p - run));
      if (!*p)
        break;
      char esc[4] = {'\\', 0, 0, 0};
      size_t n = 2;
      switch (*p) {
      case '"': esc[1] = '"'; break;
      case '\'': esc[1] = '\''; break;
      case '\\': esc[1] = '\\'; break;
      case '\n': esc[1] = 'n'; break;
      case '\r': esc[1] = 'r'; break;
      case '\t': esc[1] = 't'; break;
      default:
        esc[1] = 'x';
        esc[2] = hex[*p >> 4];
        esc[3] = hex[*p & 15];
        n = 4;
      }
      pr_putn(b, esc, n);
      p++;
    }
  }
  pr_putc(b, '"');
}

void pr_i64s(StrBuf *b, const int64_t *v, int n) {
  for (int i = 0; i < n; i++) {
    if (i)
      pr_putc(b, ',');
    pr_put_i64(b, v[i]);
  }
}

void pr_braced(StrBuf *b, I64List l) {
  pr_putc(b, '{');
  pr_i64s(b, l.v, l.n);
  pr_putc(b, '}');
}

void pr_shape_index(StrBuf *b, I64List l) { pr_braced(b, l); }

void pr_name(StrBuf *b, const char *name) {
  pr_putc(b, '%');
  pr_puts(b, name ? name : "");
}

bool pr_lexes_as_dict(const char *s) {
  if (!s)
    return false;
  /* Exactly one brace-balanced dictionary, nothing before or after it. */
  const char *p = s;
  if (*p != '{')
    return false;
  int depth = 0;
  for (; *p; p++) {
    if (*p == '"') {
      for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1])
          p++;
      if (!*p)
        return false;
    } else if (*p == '{') {
      depth++;
    } else if (*p == '}' && --depth == 0) {
      /* Read back, the dictionary ends at this brace: anything after it,
       * even a space, would be lost. */
      return p[1] == 0;
    }
  }
  return false;
}

static int kv_cmp(const void *x, const void *y) {
  const KeyValue *a = *(const KeyValue *const *)x;
  const KeyValue *b = *(const KeyValue *const *)y;
  int c = strcmp(a->key ? a->key : "", b->key ? b->key : "");
  if (c)
    return c;
  return strcmp(a->value ? a->value : "", b->value ? b->value : "");
}

void pr_kvlist(StrBuf *b, const KVList *l) {
  pr_putc(b, '{');
  int n = l ? l->n : 0;
  const KeyValue *stack[32];
  const KeyValue **sorted = n <= 32 ? stack : xmalloc(sizeof(*sorted) * (size_t)n);
  for (int i = 0; i < n; i++)
    sorted[i] = &l->kv[i];
  if (n > 1)
    qsort(sorted, (size_t)n, sizeof(*sorted), kv_cmp);
  for (int i = 0; i < n; i++) {
    if (i)
      pr_putc(b, ',');
    pr_puts(b, sorted[i]->key ? sorted[i]->key : "");
    pr_putc(b, '=');
    if (pr_lexes_as_dict(sorted[i]->value))
      pr_puts(b, sorted[i]->value);
    else
      pr_quoted(b, sorted[i]->value);
  }
  if (sorted != stack)
    free(sorted);
  pr_putc(b, '}');
}

static bool str_set(const char *s) { return s && *s; }

bool pr_metadata_empty(const OpMetadata *m) {
  return !m || (!str_set(m->op_type) && !str_set(m->op_name) &&
                !str_set(m->source_file) && m->source_line == 0 &&
                m->source_end_line == 0 && m->source_column == 0 &&
                m->source_end_column == 0 && !str_set(m->profile_type) &&
                !str_set(m->deduplicated_name) && !m->preserve_layout &&
                !str_set(m->scheduling_name) && m->stack_frame_id == 0 &&
                !str_set(m->extra));
}

/* Fields in OpMetadataToString's order, separated by one space. */
void pr_metadata_fields(StrBuf *b, const OpMetadata *m) {
  bool first = true;
#define SEP() (first ? (void)(first = false) : pr_putc(b, ' '))
  if (str_set(m->op_type)) {
    SEP();
    pr_puts(b, "op_type=");
    pr_quoted(b, m->op_type);
  }
  if (str_set(m->op_name)) {
    SEP();
    pr_puts(b, "op_name=");
    pr_quoted(b, m->op_name);
  }
  if (str_set(m->source_file)) {
    SEP();
    pr_puts(b, "source_file=");
    pr_quoted(b, m->source_file);
  }
  if (m->source_line != 0) {
    SEP();
    pr_puts(b, "source_line=");
    pr_put_i64(b, m->source_line);
  }
  if (m->source_end_line != 0) {
    SEP();
    pr_puts(b, "source_end_line=");
    pr_put_i64(b, m->source_end_line);
  }
  if (m->source_column != 0) {
    SEP();
    pr_puts(b, "source_column=");
    pr_put_i64(b, m->source_column);
  }
  if (m->source_end_column != 0) {
    SEP();
    pr_puts(b, "source_end_column=");
    pr_put_i64(b, m->source_end_column);
  }
  if (str_set(m->profile_type)) {
    SEP();
    pr_puts(b, "profile_type=");
    pr_puts(b, m->profile_type);
  }
  if (str_set(m->deduplicated_name)) {
    SEP();
    pr_puts(b, "deduplicated_name=");
    pr_quoted(b, m->deduplicated_name);
  }
  if (m->preserve_layout) {
    SEP();
    pr_puts(b, "preserve_layout=true");
  }
  if (str_set(m->scheduling_name)) {
    SEP();
    pr_puts(b, "scheduling_name=");
    pr_quoted(b, m->scheduling_name);
  }
  if (m->stack_frame_id != 0) {
    SEP();
    pr_puts(b, "stack_frame_id=");
    pr_put_i64(b, m->stack_frame_id);
  }
  if (str_set(m->extra)) {
    SEP();
    pr_puts(b, m->extra);
  }
#undef SEP
}

/* The parts every non-tuple sharding may end with: " shard_as 1" and
 * " metadata={...}". */
static void sharding_tail(StrBuf *b, const Sharding *s, bool with_metadata) {
  if (str_set(s->shard_group)) {
    pr_putc(b, ' ');
    pr_puts(b, s->shard_group);
  }
  if (with_metadata && str_set(s->metadata)) {
    pr_puts(b, " metadata=");
    if (s->metadata[0] == '{') {
      pr_puts(b, s->metadata);
    } else {
      pr_putc(b, '{');
      pr_puts(b, s->metadata);
      pr_putc(b, '}');
    }
  }
  pr_putc(b, '}');
}

/* An iota device list prints its transpose only with more than one reshape
 * dimension, as XLA's IotaTileAssignment::Print (a one-dimensional iota's
 * only permutation is the identity). */
void pr_sharding(StrBuf *b, const Sharding *s, bool with_metadata) {
  switch (s->kind) {
  case SHARD_TUPLE:
    pr_putc(b, '{');
    for (int i = 0; i < s->ntuple; i++) {
      if (i == 0) {
        /* nothing */
      } else if (i % 5 == 0) {
        pr_puts(b, ", /*index=");
        pr_put_i64(b, i);
        pr_puts(b, "*/");
      } else {
        pr_puts(b, ", ");
      }
      pr_sharding(b, s->tuple[i], with_metadata);
    }
    pr_putc(b, '}');
    return;
  case SHARD_REPLICATED:
    pr_puts(b, "{replicated");
    break;
  case SHARD_MANUAL:
    pr_puts(b, "{manual");
    break;
  case SHARD_UNKNOWN:
    pr_puts(b, "{unknown");
    break;
  case SHARD_UNREDUCED:
    pr_puts(b, "{unreduced");
    break;
  case SHARD_MAXIMAL:
    pr_puts(b, "{maximal device=");
    pr_put_i64(b, s->device);
    break;
  case SHARD_TILED:
    pr_puts(b, "{devices=[");
    pr_i64s(b, s->tile_dims.v, s->tile_dims.n);
    pr_putc(b, ']');
    if (s->iota_devices) {
      pr_puts(b, "<=[");
      pr_i64s(b, s->iota_reshape_dims.v, s->iota_reshape_dims.n);
      pr_putc(b, ']');
      if (s->iota_reshape_dims.n > 1 && s->iota_transpose_perm.n > 0) {
        pr_puts(b, "T(");
        pr_i64s(b, s->iota_transpose_perm.v, s->iota_transpose_perm.n);
        pr_putc(b, ')');
      }
    } else {
      pr_i64s(b, s->devices.v, s->devices.n);
    }
    if (s->last_tile_dim_replicate)
      pr_puts(b, " last_tile_dim_replicate");
    if (s->nlast_tile_dims > 0) {
      pr_puts(b, " last_tile_dims={");
      for (int i = 0; i < s->nlast_tile_dims; i++) {
        if (i)
          pr_puts(b, ", ");
        pr_puts(b, s->last_tile_dims[i] ? s->last_tile_dims[i] : "");
      }
      pr_putc(b, '}');
    }
    break;
  }
  sharding_tail(b, s, with_metadata);
}

void pr_replica_groups(StrBuf *b, const ReplicaGroups *g) {
  if (!g) {
    pr_puts(b, "{}");
    return;
  }
  if (g->mesh_text) {
    pr_puts(b, g->mesh_text);
    return;
  }
  if (g->iota) {
    pr_putc(b, '[');
    pr_i64s(b, g->iota_group_shape.v, g->iota_group_shape.n);
    pr_puts(b, "]<=[");
    pr_i64s(b, g->iota_reshape_dims.v, g->iota_reshape_dims.n);
    pr_putc(b, ']');
    if (g->iota_reshape_dims.n > 1 && g->iota_transpose_perm.n > 0) {
      pr_puts(b, "T(");
      pr_i64s(b, g->iota_transpose_perm.v, g->iota_transpose_perm.n);
      pr_putc(b, ')');
    }
    return;
  }
  pr_putc(b, '{');
  for (int i = 0; i < g->ngroups; i++) {
    if (i)
      pr_putc(b, ',');
    pr_braced(b, g->groups[i]);
  }
  pr_putc(b, '}');
}

/* Which window field to print; a key appears only when some dimension is
 * not the default, except size which always does. */
enum { W_SIZE, W_STRIDE, W_PAD, W_LHS_DILATE, W_RHS_DILATE, W_REVERSAL };

/* Strides and dilations of 0 are "not given": they mean 1. */
static int64_t one_if_zero(int64_t v) { return v == 0 ? 1 : v; }

static bool window_field_set(const WindowDim *d, int field) {
  switch (field) {
  case W_STRIDE: return one_if_zero(d->stride) != 1;
  case W_PAD: return d->pad_lo != 0 || d->pad_hi != 0;
  case W_LHS_DILATE: return one_if_zero(d->base_dilation) != 1;
  case W_RHS_DILATE: return one_if_zero(d->window_dilation) != 1;
  case W_REVERSAL: return d->reversal;
  default: return true;
  }
}

static void window_dim_value(StrBuf *b, const WindowDim *d, int field) {
  switch (field) {
  case W_SIZE: pr_put_i64(b, d->size); break;
  case W_STRIDE: pr_put_i64(b, one_if_zero(d->stride)); break;
  case W_PAD:
    pr_put_i64(b, d->pad_lo);
    pr_putc(b, '_');
    pr_put_i64(b, d->pad_hi);
    break;
  case W_LHS_DILATE: pr_put_i64(b, one_if_zero(d->base_dilation)); break;
  case W_RHS_DILATE: pr_put_i64(b, one_if_zero(d->window_dilation)); break;
  default: pr_putc(b, d->reversal ? '1' : '0'); break;
  }
}

void pr_window(StrBuf *b, const Window *w) {
  static const char *const keys[] = {"size=", " stride=", " pad=",
                                     " lhs_dilate=", " rhs_dilate=",
                                     " rhs_reversal="};
  for (int f = W_SIZE; f <= W_REVERSAL; f++) {
    bool any = false;
    for (int i = 0; i < w->ndims && !any; i++)
      any = window_field_set(&w->dims[i], f);
    if (!any)
      continue;
    pr_puts(b, keys[f]);
    for (int i = 0; i < w->ndims; i++) {
      if (i)
        pr_putc(b, 'x');
      window_dim_value(b, &w->dims[i], f);
    }
  }
}

/* Dimension labels are short strings; more dimensions than this print '?'
 * past the end rather than grow without bound on bad input. */
enum { MAX_LABEL_DIMS = 64 };

/* One operand's labels: '?' everywhere, then the two named dimensions and
 * the spatial ones by number (XLA writes index i as its decimal digits). */
static void conv_labels(StrBuf *b, int64_t d0, char c0, int64_t d1, char c1,
                        const int64_t *spatial, int nspatial) {
  int64_t len = d0 > d1 ? d0 : d1;
  for (int i = 0; i < nspatial; i++)
    if (spatial[i] > len)
      len = spatial[i];
  len += 1;
  if (len > MAX_LABEL_DIMS)
    len = MAX_LABEL_DIMS;
  int slot[MAX_LABEL_DIMS];   /* -1 '?', -2 c0, -3 c1, else spatial index */
  for (int i = 0; i < len; i++)
    slot[i] = -1;
  if (d0 >= 0 && d0 < len)
    slot[d0] = -2;
  if (d1 >= 0 && d1 < len)
    slot[d1] = -3;
  for (int i = 0; i < nspatial; i++)
    if (spatial[i] >= 0 && spatial[i] < len)
      slot[spatial[i]] = i;
  for (int i = 0; i < len; i++) {
    if (slot[i] == -1)
      pr_putc(b, '?');
    else if (slot[i] == -2)
      pr_putc(b, c0);
    else if (slot[i] == -3)
      pr_putc(b, c1);
    else
      pr_put_i64(b, slot[i]);
  }
}

void pr_conv_dnums(StrBuf *b, const ConvDnums *d) {
  conv_labels(b, d->input_batch, 'b', d->input_feature, 'f', d->input_spatial,
              d->nspatial);
  pr_putc(b, '_');
  conv_labels(b, d->kernel_input_feature, 'i', d->kernel_output_feature, 'o',
              d->kernel_spatial, d->nspatial);
  pr_puts(b, "->");
  conv_labels(b, d->output_batch, 'b', d->output_feature, 'f',
              d->output_spatial, d->nspatial);
}

void pr_alias_entries(StrBuf *b, const AliasEntry *e, int n, bool with_kind) {
  for (int i = 0; i < n; i++) {
    if (i)
      pr_puts(b, ", ");
    pr_shape_index(b, e[i].output_index);
    pr_puts(b, ": (");
    pr_put_i64(b, e[i].operand);
    pr_puts(b, ", ");
    pr_shape_index(b, e[i].operand_index);
    if (with_kind)
      pr_puts(b, e[i].kind == 2 ? ", must-alias" : ", may-alias");
    pr_putc(b, ')');
  }
}

void hlo_print_sharding(StrBuf *b, const Sharding *s) {
  pr_sharding(b, s, true);
  pr_finish(b);
}
