/*
 * print.c - the HLO printer: XLA's long text form (HloModule::ToString with
 * operand shapes), which the parser reads back.
 *
 *   HloModule m, is_scheduled=true, entry_computation_layout={(f32[2]{0})->f32[2]{0}}
 *
 *   %add (x: f32[], y: f32[]) -> f32[] {
 *     %x = f32[] parameter(0)
 *     %y = f32[] parameter(1)
 *     ROOT %add = f32[] add(f32[] %x, f32[] %y)
 *   }
 *
 *   ENTRY %main (p: f32[2]) -> f32[2] { ... }
 *
 * An instruction prints as name, result shape, opcode, operands (each with
 * its shape, an index comment before every fifth), then its opcode's own
 * attributes and called computations (print_attrs.c), then the attributes
 * any instruction may carry in XLA's order: sharding, frontend_attributes,
 * control-predecessors, statistics, result_accuracy, origin, metadata,
 * backend_config.  Every typed field the parser fills is printed back, so
 * print(parse(print(parse(x)))) == print(parse(x)).
 *
 * Async syntax sugar: "%s = ... negate-start(%x)" is an async-start whose
 * wrapped computation (built by the parser) holds the negate; the printer
 * gives the sugared form back and leaves that computation out, as XLA does.
 *
 * The printer appends to one StrBuf and allocates nothing per instruction.
 */
#include "print_internal.h"

#include <stdlib.h>
#include <string.h>

const PrintOptions print_options_default = {
    .print_metadata = true,
    .print_large_constants = true,
    .print_backend_config = true,
};

/* XLA's print_operand_index_annotation_interval. */
enum { OPERAND_INDEX_INTERVAL = 5 };

/* XLA elides constants with more elements than this when large constants
 * are not asked for. */
enum { SMALL_CONSTANT_ELEMENTS = 10 };

static bool str_set(const char *s) { return s && *s; }

static void print_constant_value(StrBuf *b, const HloInstr *i,
                                 const PrintOptions *o) {
  const Literal *l = i->literal;
  if (!l) {
    pr_puts(b, "{...}");
    return;
  }
  if (!o->print_large_constants &&
      (!shape_is_array(l->shape) ||
       shape_elements(l->shape) > SMALL_CONSTANT_ELEMENTS)) {
    pr_puts(b, "{...}");
    return;
  }
  literal_print(b, l);
}

/*
 * Long tuple shapes repeat: every get-tuple-element of a while loop's state
 * prints the whole state tuple as its operand's shape.  A small table,
 * direct-mapped by Shape pointer, remembers where such a shape's text was
 * last printed in the output, and the next time it is copied from there.
 * The output only grows while a module prints, so the text stays valid.
 */
enum { MEMO_SLOTS = 256, MEMO_MIN_LEN = 64 };

typedef struct ShapeMemo {
  const Shape *shape;
  size_t off, len;
} ShapeMemo;

static void print_shape_memo(StrBuf *b, const Shape *s, ShapeMemo *memo) {
  if (!memo || !s || s->et != ET_TUPLE) {
    shape_print(b, s, true);
    return;
  }
  ShapeMemo *e = &memo[((uintptr_t)s >> 4) % MEMO_SLOTS];
  if (e->shape == s) {
    if (b->len + e->len < b->cap) {
      memcpy(b->s + b->len, b->s + e->off, e->len);
      b->len += e->len;
    } else {
      /* Growing may move the buffer: copy the text out first. */
      char *tmp = xmalloc(e->len);
      memcpy(tmp, b->s + e->off, e->len);
      sb_putn(b, tmp, e->len);
      free(tmp);
    }
    return;
  }
  size_t off = b->len;
  shape_print(b, s, true);
  if (b->len - off >= MEMO_MIN_LEN)
    *e = (ShapeMemo){s, off, b->len - off};
}

static void print_operands(StrBuf *b, const HloInstr *i, ShapeMemo *memo) {
  for (int k = 0; k < i->nops; k++) {
    if (k == 0) {
      /* nothing */
    } else if (k % OPERAND_INDEX_INTERVAL == 0) {
      pr_puts(b, ", /*index=");
      pr_put_i64(b, k);
      pr_puts(b, "*/");
    } else {
      pr_putn(b, ", ", 2);
    }
    const HloInstr *op = i->ops[k];
    if (!op) {
      pr_puts(b, "null");
      continue;
    }
    print_shape_memo(b, op->shape, memo);
    pr_putn(b, " %", 2);
    pr_puts(b, op->name ? op->name : "");
  }
}

/* A sugared async op prints as "<wrapped>-start" / "-update" / "-done". */
static void print_opcode(StrBuf *b, const HloInstr *i) {
  const char *suffix = NULL;
  if (i->async_sugar) {
    if (i->op == HLO_ASYNC_START)
      suffix = "-start";
    else if (i->op == HLO_ASYNC_UPDATE)
      suffix = "-update";
    else if (i->op == HLO_ASYNC_DONE)
      suffix = "-done";
  }
  if (suffix) {
    pr_puts(b, hlo_op_name(i->async_wrapped_op));
    pr_puts(b, suffix);
  } else {
    pr_puts(b, hlo_op_name(i->op));
  }
}

/* The attributes any instruction may carry, after its own.  `w`, the op a
 * sugared async-start wraps, may hold the result accuracy. */
static void print_common_attrs(StrBuf *b, const HloInstr *i, const HloInstr *w,
                               const PrintOptions *o) {
  if (i->sharding) {
    pr_puts(b, ", sharding=");
    pr_sharding(b, i->sharding, o->print_metadata);
  }
  if (i->frontend_attrs && i->frontend_attrs->n > 0) {
    pr_puts(b, ", frontend_attributes=");
    pr_kvlist(b, i->frontend_attrs);
  }
  if (i->ncontrol_preds > 0) {
    pr_puts(b, ", control-predecessors={");
    for (int k = 0; k < i->ncontrol_preds; k++) {
      if (k)
        pr_puts(b, ", ");
      pr_name(b, i->control_preds[k] ? i->control_preds[k]->name : "");
    }
    pr_putc(b, '}');
  }
  if (str_set(i->statistics)) {
    pr_puts(b, ", statistics=");
    pr_puts(b, i->statistics);
  }
  const char *accuracy = i->result_accuracy;
  if (!str_set(accuracy) && w)
    accuracy = w->result_accuracy;
  if (str_set(accuracy)) {
    pr_puts(b, ", result_accuracy=");
    pr_puts(b, accuracy);
  }
  if (str_set(i->origin)) {
    pr_puts(b, ", origin=");
    pr_puts(b, i->origin);
  }
  if (o->print_metadata && !pr_metadata_empty(i->metadata)) {
    pr_puts(b, ", metadata={");
    pr_metadata_fields(b, i->metadata);
    pr_putc(b, '}');
  }
  if (o->print_backend_config && str_set(i->backend_config)) {
    pr_puts(b, ", backend_config=");
    pr_puts(b, i->backend_config);
  }
}

/* The instruction a sugared async-start wraps: the root of its wrapped
 * computation, which holds the opcode's own attributes. */
static const HloInstr *sugar_wrapped(const HloInstr *i) {
  if (i->op != HLO_ASYNC_START || !i->async_sugar || i->ncalled < 1 ||
      !i->called[0] || !i->called[0]->root)
    return NULL;
  return i->called[0]->root;
}

static void print_instr(StrBuf *b, const HloInstr *i, const PrintOptions *o,
                        ShapeMemo *memo) {
  pr_name(b, i->name);
  pr_putn(b, " = ", 3);
  print_shape_memo(b, i->shape, memo);
  pr_putc(b, ' ');
  print_opcode(b, i);
  pr_putc(b, '(');
  if (i->op == HLO_PARAMETER)
    pr_put_i64(b, i->param_number);
  else if (i->op == HLO_CONSTANT)
    print_constant_value(b, i, o);
  else
    print_operands(b, i, memo);
  pr_putc(b, ')');

  if (i->op == HLO_ASYNC_START && str_set(i->async_thread) &&
      strcmp(i->async_thread, "main") != 0) {
    pr_puts(b, ", async_execution_thread=");
    pr_quoted(b, i->async_thread);
  }
  /* A sugared async-start prints the attributes and called computations of
   * the op it wraps, as XLA does; its own unknown attributes follow. */
  const HloInstr *w = sugar_wrapped(i);
  if (w) {
    pr_opcode_attrs(b, w, w->op);
    pr_called(b, w, w->op);
    pr_raw_attrs(b, i);
  } else {
    HloOp op = i->op == HLO_ASYNC_START && i->async_sugar ? i->async_wrapped_op
                                                          : i->op;
    pr_opcode_attrs(b, i, op);
    pr_called(b, i, op);
  }
  print_common_attrs(b, i, w, o);
}

void hlo_print_instr(StrBuf *b, const HloInstr *i, const PrintOptions *o) {
  print_instr(b, i, o ? o : &print_options_default, NULL);
  pr_finish(b);
}

/* "(p0: f32[2], p1: s32[]) -> f32[2]": the signature, shapes without
 * layouts, as XLA's ProgramShape prints. */
static void print_signature(StrBuf *b, const HloComp *c) {
  pr_putc(b, '(');
  bool first = true;
  for (int k = 0; k < c->nparams; k++) {
    const HloInstr *p = c->params[k];
    if (!p)
      continue;
    if (!first)
      pr_putn(b, ", ", 2);
    first = false;
    pr_puts(b, p->name ? p->name : "");
    pr_putn(b, ": ", 2);
    shape_print(b, p->shape, false);
  }
  pr_puts(b, ") -> ");
  shape_print(b, c->root ? c->root->shape : NULL, false);
}

/*
 * Where hlo_write_module streams to: once the buffer passes SINK_FLUSH
 * bytes, the text so far is written out after the current instruction and
 * the buffer is emptied (and the shape memo, which points into it, reset).
 */
enum { SINK_FLUSH = 1 << 20 };

typedef struct Sink {
  FILE *f;
  bool failed;                    /* a write failed */
} Sink;

static void sink_flush(StrBuf *b, Sink *sink, ShapeMemo *memo) {
  if (b->len && fwrite(b->s, 1, b->len, sink->f) != b->len)
    sink->failed = true;
  sb_clear(b);
  memset(memo, 0, sizeof(ShapeMemo) * MEMO_SLOTS);
}

static void print_comp(StrBuf *b, const HloComp *c, const PrintOptions *o,
                       ShapeMemo *memo, Sink *sink) {
  if (c->is_entry || (c->module && c->module->entry == c))
    pr_puts(b, "ENTRY ");
  pr_name(b, c->name);
  pr_putc(b, ' ');
  print_signature(b, c);
  pr_puts(b, " {\n");
  for (int k = 0; k < c->ninstrs; k++) {
    const HloInstr *i = c->instrs[k];
    pr_putn(b, "  ", 2);
    if (i == c->root)
      pr_puts(b, "ROOT ");
    print_instr(b, i, o, memo);
    pr_putc(b, '\n');
    if (sink && b->len >= SINK_FLUSH)
      sink_flush(b, sink, memo);
  }
  pr_putc(b, '}');
  if (str_set(c->execution_thread) && strcmp(c->execution_thread, "main") != 0) {
    pr_puts(b, ", execution_thread=");
    pr_quoted(b, c->execution_thread);
  }
}

void hlo_print_comp(StrBuf *b, const HloComp *c, const PrintOptions *o) {
  ShapeMemo memo[MEMO_SLOTS] = {{0}};
  print_comp(b, c, o ? o : &print_options_default, memo, NULL);
  pr_finish(b);
}

static void print_bool_list(StrBuf *b, const char *key, const bool *v, int n) {
  pr_puts(b, key);
  pr_putc(b, '{');
  for (int k = 0; k < n; k++) {
    if (k)
      pr_putc(b, ',');
    pr_puts(b, v[k] ? "true" : "false");
  }
  pr_putc(b, '}');
}

/* entry_computation_layout={(f32[2]{0}, ...)->f32[2]{0}} */
static void print_entry_layout(StrBuf *b, const ProgramShape *ps) {
  pr_puts(b, ", entry_computation_layout={(");
  for (int k = 0; k < ps->nparams; k++) {
    if (k == 0) {
      /* nothing */
    } else if (k % OPERAND_INDEX_INTERVAL == 0) {
      pr_puts(b, ", /*index=");
      pr_put_i64(b, k);
      pr_puts(b, "*/");
    } else {
      pr_putn(b, ", ", 2);
    }
    shape_print(b, ps->params[k], true);
  }
  pr_puts(b, ")->");
  shape_print(b, ps->result, true);
  pr_putc(b, '}');
}

/* The header's attributes, in HloModule::Print's order. */
static void print_header(StrBuf *b, const HloModule *m) {
  pr_puts(b, "HloModule ");
  pr_puts(b, m->name ? m->name : "");
  if (m->is_scheduled)
    pr_puts(b, ", is_scheduled=true");
  if (m->nio_alias > 0) {
    pr_puts(b, ", input_output_alias={ ");
    pr_alias_entries(b, m->io_alias, m->nio_alias, true);
    pr_puts(b, " }");
  }
  if (m->nbuffer_donors > 0) {
    pr_puts(b, ", buffer_donor={ ");
    for (int k = 0; k < m->nbuffer_donors; k++) {
      if (k)
        pr_puts(b, ", ");
      pr_putc(b, '(');
      pr_put_i64(b, m->buffer_donors[k].operand);
      pr_puts(b, ", ");
      pr_shape_index(b, m->buffer_donors[k].operand_index);
      pr_putc(b, ')');
    }
    pr_puts(b, " }");
  }
  if (m->alias_passthrough_params)
    pr_puts(b, ", alias_passthrough_params=true");
  if (m->entry_layout)
    print_entry_layout(b, m->entry_layout);
  /* XLA leaves out the default, a single false. */
  if (m->nspmd_params > 1 || (m->nspmd_params == 1 && m->spmd_params[0]))
    print_bool_list(b, ", allow_spmd_sharding_propagation_to_parameters=",
                    m->spmd_params, m->nspmd_params);
  if (m->nspmd_output > 1 || (m->nspmd_output == 1 && m->spmd_output[0]))
    print_bool_list(b, ", allow_spmd_sharding_propagation_to_output=",
                    m->spmd_output, m->nspmd_output);
  if (m->replica_count != 0 && m->replica_count != 1) {
    pr_puts(b, ", replica_count=");
    pr_put_i64(b, m->replica_count);
  }
  if (m->num_partitions != 0 && m->num_partitions != 1) {
    pr_puts(b, ", num_partitions=");
    pr_put_i64(b, m->num_partitions);
  }
  if (m->frontend_attrs && m->frontend_attrs->n > 0) {
    pr_puts(b, ", frontend_attributes=");
    pr_kvlist(b, m->frontend_attrs);
  }
  for (int k = 0; k < m->nraw_attrs; k++) {
    pr_puts(b, ", ");
    pr_puts(b, m->raw_attrs[k].name ? m->raw_attrs[k].name : "");
    pr_putc(b, '=');
    pr_puts(b, m->raw_attrs[k].value ? m->raw_attrs[k].value : "");
  }
}

/* The stack frame tables (FileNames ... StackFrames) follow the header
 * after a blank line, as XLA prints them; they are metadata. */
static void print_trailer(StrBuf *b, const HloModule *m, const PrintOptions *o) {
  if (!o->print_metadata || !str_set(m->trailer))
    return;
  size_t n = strlen(m->trailer);
  while (n > 0 && (m->trailer[n - 1] == '\n' || m->trailer[n - 1] == ' ' ||
                   m->trailer[n - 1] == '\r' || m->trailer[n - 1] == '\t'))
    n--;
  if (n == 0)
    return;
  pr_puts(b, "\n\n");
  pr_putn(b, m->trailer, n);
  pr_putc(b, '\n');
}

static int ptr_cmp(const void *x, const void *y) {
  uintptr_t a = (uintptr_t) * (void *const *)x, b = (uintptr_t) * (void *const *)y;
  return a < b ? -1 : a > b;
}

static bool in_sorted(const PtrVec *v, const void *p) {
  return v->len && bsearch(&p, v->data, (size_t)v->len, sizeof(void *), ptr_cmp);
}

static bool async_sugared(const HloInstr *i) {
  return i->async_sugar && (i->op == HLO_ASYNC_START || i->op == HLO_ASYNC_UPDATE ||
                            i->op == HLO_ASYNC_DONE);
}

/* The computations sugared async-starts wrap, sorted for bsearch: XLA does
 * not print them, since "<op>-start" stands for them.  One that anything
 * else calls too is kept (and printed). */
static void collect_sugar_wrapped(const HloModule *m, PtrVec *out) {
  for (int c = 0; c < m->ncomps; c++) {
    const HloComp *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++)
      if (sugar_wrapped(comp->instrs[k]))
        vec_push(out, comp->instrs[k]->called[0]);
  }
  if (out->len == 0)
    return;
  qsort(out->data, (size_t)out->len, sizeof(void *), ptr_cmp);
  PtrVec other = {0};
  for (int c = 0; c < m->ncomps; c++) {
    const HloComp *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      const HloInstr *i = comp->instrs[k];
      if (async_sugared(i))
        continue;
      for (int j = 0; j < i->ncalled; j++)
        if (in_sorted(out, i->called[j]))
          vec_push(&other, i->called[j]);
    }
  }
  if (other.len) {
    qsort(other.data, (size_t)other.len, sizeof(void *), ptr_cmp);
    int n = 0;
    for (int k = 0; k < out->len; k++)
      if (!in_sorted(&other, out->data[k]))
        out->data[n++] = out->data[k];
    out->len = n;
  }
  vec_free(&other);
}

static void print_module(StrBuf *b, const HloModule *m, const PrintOptions *o,
                         Sink *sink) {
  if (!o)
    o = &print_options_default;
  print_header(b, m);
  print_trailer(b, m, o);
  pr_puts(b, "\n\n");
  PtrVec wrapped = {0};
  collect_sugar_wrapped(m, &wrapped);
  ShapeMemo memo[MEMO_SLOTS] = {{0}};
  for (int k = 0; k < m->ncomps; k++) {
    const HloComp *c = m->comps[k];
    if (in_sorted(&wrapped, c))
      continue;
    print_comp(b, c, o, memo, sink);
    pr_putn(b, "\n\n", 2);
  }
  vec_free(&wrapped);
  pr_finish(b);
  if (sink)
    sink_flush(b, sink, memo);
}

void hlo_print_module(StrBuf *b, const HloModule *m, const PrintOptions *o) {
  print_module(b, m, o, NULL);
}

bool hlo_write_module(FILE *f, const HloModule *m, const PrintOptions *o) {
  StrBuf b;
  sb_init(&b);
  Sink sink = {f, false};
  print_module(&b, m, o, &sink);
  sb_free(&b);
  return !sink.failed;
}
