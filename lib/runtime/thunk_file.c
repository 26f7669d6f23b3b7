/*
 * thunk_file.c - the artifact's file, PREFIX.thunks: writing, reading and
 * checking it, and reading the kernel file it names.
 *
 * The format (version 5) is line-oriented text with binary sections at the
 * end, so that `head` shows what a file holds:
 *
 *   XHLO-THUNKS 5
 *   module STR
 *   target STR
 *   host-cpu STR STR                 (host: the CPU the kernels were built
 *                                     for and the features they may use,
 *                                     comma-separated (host_cpu.h); '-'
 *                                     '-' for a GPU artifact)
 *   kernel-file STR HEX16            (the kernel file's checksum64)
 *   result-shape STR
 *   allocations N
 *   alloc size=S flags=F param=P index={i,j} param-shape=STR output-shape=STR
 *   parameters N
 *   leaf SLICE STR                   (slice, then shape text)
 *   outputs N
 *   leaf SLICE STR
 *   constants N
 *   constant SLICE
 *   thunks
 *   seq N                            (the entry sequence; then its thunks)
 *   kernel name=STR annotation=STR grid=X,Y,Z block=X,Y,Z shmem=S args=N
 *     arg SLICE read|write           (N lines, one deeper)
 *   copy annotation=STR src=SLICE dst=SLICE
 *   memset32 annotation=STR dst=SLICE value=V
 *   while annotation=STR cond-result=SLICE trip-count=T
 *     seq N ... (condition)  seq N ... (body), one deeper
 *   conditional annotation=STR index=SLICE index-type=pred|s32 branches=N
 *     seq N ... per branch, one deeper
 *   gemm annotation=STR target=STR batch=B m=M n=N k=K alpha=X,X beta=X
 *        act=NAME bias=ET|- tf32=0|1 workspace=W
 *     matrix et=ET|- rows=R cols=C strides=BS,RS,CS (A, B, C, D; one deeper;
 *       '-': a C that beta 0 leaves unread)
 *     lib SLICE|-                    (GEMM_NSLICES lines, one deeper)
 *   conv annotation=STR target=STR kind=NAME spatial=S groups=G alpha=X
 *        side-scale=X act=NAME bias=ET|- tf32=0|1 workspace=W
 *     tensor et=ET dims=D,... strides=S,...      (x, w, y; 2+S numbers each)
 *     window stride=.. dilation=.. pad-lo=.. pad-hi=..   (S numbers each)
 *     lib SLICE|-                    (CONV_NSLICES lines)
 *   routine annotation=STR kind=reduce et=ET op=add|max|min init=X
 *        outer=A size=R inner=B     (X may be an infinity)
 *   routine annotation=STR kind=topk et=ET rows=R n=N k=K largest=0|1
 *     lib SLICE|-                    (ROUTINE_NSLICES lines)
 *   command-buffer commands=N        (N >= 1 kernels, copies, memsets,
 *     seq N ...                       gemms or convs, one deeper)
 *   collective op=NAME annotation=STR reduction=NAME dim=D channel=C
 *        mode=NAME replicas=R partitions=P groups=G pairs=Q operands=N
 *        async=A done=D              (A: -1, or the asynchronous pair's id;
 *                                     D 1: the pair's done thunk, no
 *                                     operands or results)
 *     group K IDS                    (G lines, one deeper: K ids)
 *     pair S,T                       (Q lines)
 *     in SLICE STR                   (N lines: operand slice and shape)
 *     out SLICE STR                  (N lines; replica-id and partition-id:
 *                                     one, and no operands)
 *   end-thunks
 *   section constant K LEN\n<LEN bytes>\n     (one per constant, in order)
 *   section original-hlo LEN|-\n<LEN bytes>\n
 *   section optimized-hlo LEN|-\n<LEN bytes>\n
 *   checksum HEX16                   (checksum64 of every byte before it)
 *
 * STR is LEN:BYTES (any bytes, newlines included) or '-' for none; SLICE is
 * {index:A, offset:O, size:S} as XLA prints a BufferAllocation::Slice; X is
 * a double as the 16 hex digits of its bits (exact); ET an element type
 * name; lists are comma-separated; F is
 * flag names joined by '|' ('-': none).  Every line at nesting depth k starts
 * with 2k spaces.  Numbers are decimal.
 *
 * Reading never trusts the file: the magic and version are checked first (an
 * unknown version is named), then the final checksum line (missing:
 * "truncated"; wrong: "corrupted"), then the body is parsed with every count
 * and length bounded by the bytes that remain (so nothing is allocated that
 * the file could not describe), nesting limited, and no byte left over;
 * finally artifact_validate checks the structure (slices inside their
 * allocations, kernel arguments present, leaf sizes).
 */
#include "thunks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define CHECKSUM_LINE_LEN 26        /* "checksum " + 16 hex + "\n" */

/*
 * Writing
 */
static void put_str(StrBuf *b, const char *s) {
  if (!s) {
    sb_putc(b, '-');
    return;
  }
  size_t n = strlen(s);
  sb_printf(b, "%zu:", n);
  sb_putn(b, s, n);
}

static void put_slice(StrBuf *b, const BufSlice *s) {
  sb_printf(b, "{index:%d, offset:%lld, size:%lld}", (int)s->alloc,
            (long long)s->offset, (long long)s->size);
}

static const struct {
  unsigned bit;
  const char *name;
} flag_names[] = {
    {ALLOC_PARAMETER, "parameter"}, {ALLOC_OUTPUT, "output"},
    {ALLOC_CONSTANT, "constant"}, {ALLOC_TEMP, "temp"},
    {ALLOC_MAYBE_LIVE_OUT, "maybe-live-out"},
    {ALLOC_THREAD_LOCAL, "thread-local"},
};

static void put_indent(StrBuf *b, int depth) {
  for (int k = 0; k < depth * 2; k++)
    sb_putc(b, ' ');
}

static void put_seq(StrBuf *b, const ThunkSeq *q, int depth);
static void put_collective(StrBuf *b, const Thunk *t, int depth);

static void put_double(StrBuf *b, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  sb_printf(b, "%016llx", (unsigned long long)bits);
}

static void put_i64s(StrBuf *b, const int64_t *v, int n) {
  for (int k = 0; k < n; k++)
    sb_printf(b, "%s%lld", k ? "," : "", (long long)v[k]);
}

static void put_libcall_head(StrBuf *b, const Thunk *t, LibActivation act,
                             bool has_bias, ElemType bias_et, bool tf32,
                             int64_t workspace) {
  sb_printf(b, " act=%s bias=%s tf32=%d workspace=%lld\n",
            lib_activation_name(act), has_bias ? et_name(bias_et) : "-",
            tf32 ? 1 : 0, (long long)workspace);
}

static void put_lib_slices(StrBuf *b, const Thunk *t, int n, int depth) {
  for (int k = 0; k < n; k++) {
    put_indent(b, depth + 1);
    sb_puts(b, "lib ");
    if (t->lib[k].alloc < 0)
      sb_putc(b, '-');
    else
      put_slice(b, &t->lib[k]);
    sb_putc(b, '\n');
  }
}

static void put_gemm(StrBuf *b, const Thunk *t, int depth) {
  const GemmDesc *g = t->gemm;
  sb_puts(b, "gemm annotation=");
  put_str(b, t->annotation);
  sb_puts(b, " target=");
  put_str(b, t->target);
  sb_printf(b, " batch=%lld m=%lld n=%lld k=%lld alpha=", (long long)g->batch,
            (long long)g->m, (long long)g->n, (long long)g->k);
  put_double(b, g->alpha_re);
  sb_putc(b, ',');
  put_double(b, g->alpha_im);
  sb_puts(b, " beta=");
  put_double(b, g->beta);
  put_libcall_head(b, t, g->act, g->has_bias, g->bias_et, g->allow_tf32,
                   g->workspace_bytes);
  const GemmMatrix *mats[4] = {&g->a, &g->b, &g->c, &g->d};
  for (int k = 0; k < 4; k++) {
    put_indent(b, depth + 1);
    sb_printf(b, "matrix et=%s rows=%lld cols=%lld strides=%lld,%lld,%lld\n",
              mats[k]->et == ET_INVALID ? "-" : et_name(mats[k]->et), (long long)mats[k]->rows,
              (long long)mats[k]->cols, (long long)mats[k]->batch_stride,
              (long long)mats[k]->row_stride, (long long)mats[k]->col_stride);
  }
  put_lib_slices(b, t, GEMM_NSLICES, depth);
}

static void put_conv(StrBuf *b, const Thunk *t, int depth) {
  const ConvDesc *c = t->conv;
  sb_puts(b, "conv annotation=");
  put_str(b, t->annotation);
  sb_puts(b, " target=");
  put_str(b, t->target);
  sb_printf(b, " kind=%s spatial=%d groups=%lld alpha=", conv_kind_name(c->kind),
            c->nspatial, (long long)c->groups);
  put_double(b, c->alpha);
  sb_puts(b, " side-scale=");
  put_double(b, c->side_scale);
  put_libcall_head(b, t, c->act, c->has_bias, c->bias_et, c->allow_tf32,
                   c->workspace_bytes);
  const ConvTensor *ts[3] = {&c->x, &c->w, &c->y};
  for (int k = 0; k < 3; k++) {
    put_indent(b, depth + 1);
    sb_printf(b, "tensor et=%s dims=", et_name(ts[k]->et));
    put_i64s(b, ts[k]->dims, 2 + c->nspatial);
    sb_puts(b, " strides=");
    put_i64s(b, ts[k]->strides, 2 + c->nspatial);
    sb_putc(b, '\n');
  }
  put_indent(b, depth + 1);
  sb_puts(b, "window stride=");
  put_i64s(b, c->stride, c->nspatial);
  sb_puts(b, " dilation=");
  put_i64s(b, c->dilation, c->nspatial);
  sb_puts(b, " pad-lo=");
  put_i64s(b, c->pad_lo, c->nspatial);
  sb_puts(b, " pad-hi=");
  put_i64s(b, c->pad_hi, c->nspatial);
  sb_putc(b, '\n');
  put_lib_slices(b, t, CONV_NSLICES, depth);
}

static void put_routine(StrBuf *b, const Thunk *t, int depth) {
  const RoutineDesc *r = t->routine;
  sb_puts(b, "routine annotation=");
  put_str(b, t->annotation);
  sb_printf(b, " kind=%s et=%s", routine_kind_name(r->kind), et_name(r->et));
  if (r->kind == ROUTINE_REDUCE) {
    sb_printf(b, " op=%s init=", routine_op_name(r->op));
    put_double(b, r->init);
    sb_printf(b, " outer=%lld size=%lld inner=%lld\n", (long long)r->outer,
              (long long)r->size, (long long)r->inner);
  } else {
    sb_printf(b, " rows=%lld n=%lld k=%lld largest=%d\n", (long long)r->rows,
              (long long)r->n, (long long)r->k, r->largest ? 1 : 0);
  }
  put_lib_slices(b, t, ROUTINE_NSLICES, depth);
}

static void put_thunk(StrBuf *b, const Thunk *t, int depth) {
  put_indent(b, depth);
  switch (t->kind) {
  case THUNK_KERNEL:
    sb_puts(b, "kernel name=");
    put_str(b, t->kernel_name);
    sb_puts(b, " annotation=");
    put_str(b, t->annotation);
    sb_printf(b, " grid=%u,%u,%u block=%u,%u,%u shmem=%u args=%d\n",
              t->grid[0], t->grid[1], t->grid[2], t->block[0], t->block[1],
              t->block[2], t->shmem_bytes, t->nargs);
    for (int k = 0; k < t->nargs; k++) {
      put_indent(b, depth + 1);
      sb_puts(b, "arg ");
      put_slice(b, &t->args[k]);
      sb_puts(b, t->written[k] ? " write\n" : " read\n");
    }
    return;
  case THUNK_COPY:
    sb_puts(b, "copy annotation=");
    put_str(b, t->annotation);
    sb_puts(b, " src=");
    put_slice(b, &t->src);
    sb_puts(b, " dst=");
    put_slice(b, &t->dst);
    sb_putc(b, '\n');
    return;
  case THUNK_MEMSET32:
    sb_puts(b, "memset32 annotation=");
    put_str(b, t->annotation);
    sb_puts(b, " dst=");
    put_slice(b, &t->dst);
    sb_printf(b, " value=%u\n", t->memset_value);
    return;
  case THUNK_WHILE:
    sb_puts(b, "while annotation=");
    put_str(b, t->annotation);
    sb_puts(b, " cond-result=");
    put_slice(b, &t->cond_result);
    sb_printf(b, " trip-count=%lld\n", (long long)t->trip_count);
    put_seq(b, t->cond, depth + 1);
    put_seq(b, t->body, depth + 1);
    return;
  case THUNK_CONDITIONAL:
    sb_puts(b, "conditional annotation=");
    put_str(b, t->annotation);
    sb_puts(b, " index=");
    put_slice(b, &t->branch_index);
    sb_printf(b, " index-type=%s branches=%d\n",
              t->index_is_pred ? "pred" : "s32", t->nbranches);
    for (int k = 0; k < t->nbranches; k++)
      put_seq(b, &t->branches[k], depth + 1);
    return;
  case THUNK_GEMM:
    put_gemm(b, t, depth);
    return;
  case THUNK_CONV:
    put_conv(b, t, depth);
    return;
  case THUNK_COMMAND_BUFFER:
    sb_printf(b, "command-buffer commands=%d\n", t->commands->n);
    put_seq(b, t->commands, depth + 1);
    return;
  case THUNK_COLLECTIVE:
    put_collective(b, t, depth);
    return;
  case THUNK_ROUTINE:
    put_routine(b, t, depth);
    return;
  }
  die("unknown thunk kind %d", (int)t->kind);
}

static void put_collective(StrBuf *b, const Thunk *t, int depth) {
  const CollDesc *c = t->coll;
  sb_printf(b, "collective op=%s annotation=", coll_kind_name(c->kind));
  put_str(b, t->annotation);
  sb_printf(b, " reduction=%s dim=%lld channel=%lld mode=%s replicas=%lld "
            "partitions=%lld groups=%d pairs=%d operands=%d async=%lld done=%d\n",
            coll_reduction_name(c->reduction), (long long)c->dim,
            (long long)c->channel_id, coll_mode_name(c->mode),
            (long long)c->replica_count, (long long)c->num_partitions,
            c->ngroups, c->npairs, c->n, (long long)c->async_id, c->done ? 1 : 0);
  for (int g = 0; g < c->ngroups; g++) {
    put_indent(b, depth + 1);
    sb_printf(b, "group %lld ", (long long)c->group_sizes[g]);
    put_i64s(b, c->groups[g], (int)c->group_sizes[g]);
    sb_putc(b, '\n');
  }
  for (int k = 0; k < c->npairs; k++) {
    put_indent(b, depth + 1);
    sb_printf(b, "pair %lld,%lld\n", (long long)c->pairs[k][0],
              (long long)c->pairs[k][1]);
  }
  int nout = c->done ? 0 : c->n ? c->n : 1;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < (pass ? nout : c->n); k++) {
      put_indent(b, depth + 1);
      sb_puts(b, pass ? "out " : "in ");
      put_slice(b, pass ? &c->out[k] : &c->in[k]);
      sb_putc(b, ' ');
      put_str(b, pass ? c->out_shape[k] : c->in_shape[k]);
      sb_putc(b, '\n');
    }
}

static void put_seq(StrBuf *b, const ThunkSeq *q, int depth) {
  put_indent(b, depth);
  sb_printf(b, "seq %d\n", q->n);
  for (int k = 0; k < q->n; k++)
    put_thunk(b, &q->thunks[k], depth);
}

static void put_section(StrBuf *b, const char *name, const char *bytes,
                        size_t n, bool present) {
  sb_printf(b, "section %s ", name);
  if (!present) {
    sb_puts(b, "-\n\n");
    return;
  }
  sb_printf(b, "%zu\n", n);
  sb_putn(b, bytes, n);
  sb_putc(b, '\n');
}

void artifact_serialize(const Artifact *a, StrBuf *out) {
  size_t start = out->len;
  StrBuf *b = out;
  sb_printf(b, "%s %d\n", THUNK_FILE_MAGIC, THUNK_FILE_VERSION);
  sb_puts(b, "module ");
  put_str(b, a->module_name);
  sb_puts(b, "\ntarget ");
  put_str(b, a->target);
  sb_puts(b, "\nhost-cpu ");
  put_str(b, a->host_cpu);
  sb_putc(b, ' ');
  put_str(b, a->host_features);
  sb_puts(b, "\nkernel-file ");
  put_str(b, a->kernel_file);
  sb_printf(b, " %016llx\nresult-shape ",
            (unsigned long long)a->kernel_checksum);
  put_str(b, a->result_shape);
  sb_printf(b, "\nallocations %d\n", a->nallocs);
  for (int k = 0; k < a->nallocs; k++) {
    const BufAlloc *al = &a->allocs[k];
    sb_printf(b, "alloc size=%lld flags=", (long long)al->size);
    bool first = true;
    for (size_t f = 0; f < ARRAY_LEN(flag_names); f++)
      if (al->flags & flag_names[f].bit) {
        sb_printf(b, "%s%s", first ? "" : "|", flag_names[f].name);
        first = false;
      }
    if (first)
      sb_putc(b, '-');
    sb_printf(b, " param=%lld index={", (long long)al->param_number);
    for (int j = 0; j < al->nparam_index; j++)
      sb_printf(b, "%s%lld", j ? "," : "", (long long)al->param_index[j]);
    sb_puts(b, "} param-shape=");
    put_str(b, al->param_shape);
    sb_puts(b, " output-shape=");
    put_str(b, al->output_shape);
    sb_putc(b, '\n');
  }
  sb_printf(b, "parameters %d\n", a->nparams);
  for (int k = 0; k < a->nparams; k++) {
    sb_puts(b, "leaf ");
    put_slice(b, &a->params[k].slice);
    sb_putc(b, ' ');
    put_str(b, a->params[k].shape);
    sb_putc(b, '\n');
  }
  sb_printf(b, "outputs %d\n", a->noutputs);
  for (int k = 0; k < a->noutputs; k++) {
    sb_puts(b, "leaf ");
    put_slice(b, &a->outputs[k].slice);
    sb_putc(b, ' ');
    put_str(b, a->outputs[k].shape);
    sb_putc(b, '\n');
  }
  sb_printf(b, "constants %d\n", a->nconsts);
  for (int k = 0; k < a->nconsts; k++) {
    sb_puts(b, "constant ");
    put_slice(b, &a->consts[k].slice);
    sb_putc(b, '\n');
  }
  sb_puts(b, "thunks\n");
  put_seq(b, &a->entry, 0);
  sb_puts(b, "end-thunks\n");
  for (int k = 0; k < a->nconsts; k++) {
    char name[32];
    snprintf(name, sizeof name, "constant %d", k);
    put_section(b, name, (const char *)a->consts[k].bytes,
                (size_t)a->consts[k].slice.size, true);
  }
  put_section(b, "original-hlo", a->original_hlo,
              a->original_hlo ? strlen(a->original_hlo) : 0,
              a->original_hlo != NULL);
  put_section(b, "optimized-hlo", a->optimized_hlo,
              a->optimized_hlo ? strlen(a->optimized_hlo) : 0,
              a->optimized_hlo != NULL);
  uint64_t sum = checksum64(b->s + start, b->len - start);
  sb_printf(b, "checksum %016llx\n", (unsigned long long)sum);
}

/*
 * Reading
 */
typedef struct Rd {
  const char *base, *p, *end;
  const char *name;
  Diag *d;
  Arena *ar;
  bool failed;
} Rd;

static int line_of(const Rd *r) {
  int line = 1;
  for (const char *q = r->base; q < r->p && q < r->end; q++)
    line += *q == '\n';
  return line;
}

static bool fail(Rd *r, const char *what) {
  if (!r->failed) {
    r->failed = true;
    if (r->p >= r->end)
      diag_error(r->d, (Loc){0}, "%s: truncated: the file ends where %s was "
                 "expected", r->name, what);
    else
      diag_error(r->d, (Loc){0}, "%s: line %d: expected %s", r->name,
                 line_of(r), what);
  }
  return false;
}

static size_t left(const Rd *r) { return (size_t)(r->end - r->p); }

static bool lit(Rd *r, const char *s) {
  size_t n = strlen(s);
  if (r->failed)
    return false;
  if (left(r) < n || memcmp(r->p, s, n) != 0) {
    char what[80];
    snprintf(what, sizeof what, "\"%s\"", s[0] == '\n' ? "\\n" : s);
    return fail(r, what);
  }
  r->p += n;
  return true;
}

static bool indent(Rd *r, int depth) {
  for (int k = 0; k < depth * 2; k++)
    if (!lit(r, " "))
      return false;
  return true;
}

/* A decimal number in [lo, hi]. */
static bool num(Rd *r, int64_t lo, int64_t hi, int64_t *out) {
  if (r->failed)
    return false;
  bool neg = false;
  if (r->p < r->end && *r->p == '-' && lo < 0) {
    neg = true;
    r->p++;
  }
  if (r->p >= r->end || *r->p < '0' || *r->p > '9')
    return fail(r, "a number");
  uint64_t v = 0;
  int digits = 0;
  while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
    if (++digits > 19)
      return fail(r, "a number of at most 19 digits");
    v = v * 10 + (uint64_t)(*r->p++ - '0');
  }
  if (v > (uint64_t)INT64_MAX)
    return fail(r, "a smaller number");
  /* One spelling per number: no leading zeros, no "-0". */
  if ((digits > 1 && r->p[-digits] == '0') || (neg && v == 0))
    return fail(r, "a number without leading zeros");
  int64_t s = neg ? -(int64_t)v : (int64_t)v;
  if (s < lo || s > hi) {
    char what[96];
    snprintf(what, sizeof what, "a number in [%lld, %lld]", (long long)lo,
             (long long)hi);
    return fail(r, what);
  }
  *out = s;
  return true;
}

static bool num_int(Rd *r, int64_t lo, int64_t hi, int *out) {
  int64_t v;
  if (!num(r, lo, hi, &v))
    return false;
  *out = (int)v;
  return true;
}

static bool num_u32(Rd *r, uint32_t *out) {
  int64_t v;
  if (!num(r, 0, UINT32_MAX, &v))
    return false;
  *out = (uint32_t)v;
  return true;
}

/* A count of things that each take at least `min_bytes` of what is left. */
static bool count(Rd *r, size_t min_bytes, int *out) {
  int64_t lim = (int64_t)(left(r) / min_bytes);
  if (lim > INT32_MAX / 2)
    lim = INT32_MAX / 2;
  return num_int(r, 0, lim, out);
}

static bool hex64(Rd *r, uint64_t *out) {
  if (r->failed)
    return false;
  if (left(r) < 16)
    return fail(r, "16 hex digits");
  uint64_t v = 0;
  for (int k = 0; k < 16; k++) {
    char c = r->p[k];
    int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                                   : -1;
    if (h < 0)
      return fail(r, "16 lowercase hex digits");
    v = v << 4 | (uint64_t)h;
  }
  r->p += 16;
  *out = v;
  return true;
}

/* STR: '-' (NULL) or LEN:BYTES. */
static bool str(Rd *r, char **out) {
  if (r->failed)
    return false;
  if (r->p < r->end && *r->p == '-') {
    r->p++;
    *out = NULL;
    return true;
  }
  int64_t n;
  if (!num(r, 0, INT64_MAX, &n) || !lit(r, ":"))
    return false;
  if ((uint64_t)n > left(r))
    return fail(r, "a string as long as its length says");
  if (memchr(r->p, 0, (size_t)n))
    return fail(r, "a string without NUL bytes");
  *out = arena_strndup(r->ar, r->p, (size_t)n);
  r->p += n;
  return true;
}

static bool slice(Rd *r, BufSlice *s) {
  int alloc;
  return lit(r, "{index:") && num_int(r, 0, INT32_MAX, &alloc) &&
         (s->alloc = alloc, lit(r, ", offset:")) &&
         num(r, 0, INT64_MAX, &s->offset) && lit(r, ", size:") &&
         num(r, 0, INT64_MAX, &s->size) && lit(r, "}");
}

static bool read_seq(Rd *r, ThunkSeq *q, int depth);

static bool read_kernel(Rd *r, Thunk *t, int depth) {
  t->kind = THUNK_KERNEL;
  if (!(lit(r, "name=") && str(r, &t->kernel_name) &&
        lit(r, " annotation=") && str(r, &t->annotation) &&
        lit(r, " grid=") && num_u32(r, &t->grid[0]) && lit(r, ",") &&
        num_u32(r, &t->grid[1]) && lit(r, ",") && num_u32(r, &t->grid[2]) &&
        lit(r, " block=") && num_u32(r, &t->block[0]) && lit(r, ",") &&
        num_u32(r, &t->block[1]) && lit(r, ",") &&
        num_u32(r, &t->block[2]) && lit(r, " shmem=") &&
        num_u32(r, &t->shmem_bytes) && lit(r, " args=") &&
        count(r, 16, &t->nargs) && lit(r, "\n")))
    return false;
  t->args = ARENA_ARRAY(r->ar, BufSlice, t->nargs);
  t->written = ARENA_ARRAY(r->ar, bool, t->nargs);
  for (int k = 0; k < t->nargs; k++) {
    if (!(indent(r, depth + 1) && lit(r, "arg ") && slice(r, &t->args[k]) &&
          lit(r, " ")))
      return false;
    if (left(r) >= 5 && memcmp(r->p, "write", 5) == 0) {
      t->written[k] = true;
      r->p += 5;
    } else if (!lit(r, "read")) {
      return false;
    }
    if (!lit(r, "\n"))
      return false;
  }
  return true;
}

/* A double written as the hex digits of its bits; NaN and infinities are
 * refused (no descriptor scalar is one). */
static bool dbl(Rd *r, double *out) {
  uint64_t bits;
  if (!hex64(r, &bits))
    return false;
  memcpy(out, &bits, sizeof bits);
  if (*out != *out || *out - *out != 0)
    return fail(r, "a finite number");
  return true;
}

/* An element type name, up to the next space or newline. */
static bool elem_type(Rd *r, bool allow_none, ElemType *out) {
  if (r->failed)
    return false;
  if (allow_none && r->p < r->end && *r->p == '-') {
    r->p++;
    *out = ET_INVALID;
    return true;
  }
  size_t n = 0;
  while (n < left(r) && r->p[n] != ' ' && r->p[n] != '\n' && r->p[n] != ',')
    n++;
  ElemType t = et_from_name(r->p, n);
  if (t == ET_INVALID || !et_is_array(t) || et_bytes(t) <= 0)
    return fail(r, "an array element type");
  r->p += n;
  *out = t;
  return true;
}

static bool i64s(Rd *r, int n, int64_t lo, int64_t *out) {
  for (int k = 0; k < n; k++)
    if ((k && !lit(r, ",")) || !num(r, lo, INT64_MAX, &out[k]))
      return false;
  return true;
}

static bool activation(Rd *r, LibActivation *out) {
  for (int a = LIB_ACT_NONE; a <= LIB_ACT_GELU_ERF; a++) {
    const char *n = lib_activation_name((LibActivation)a);
    size_t len = strlen(n);
    if (left(r) > len && memcmp(r->p, n, len) == 0 && r->p[len] == ' ') {
      r->p += len;
      *out = (LibActivation)a;
      return true;
    }
  }
  return fail(r, "an activation (none, relu, gelu_tanh, gelu_erf)");
}

static bool flag01(Rd *r, bool *out) {
  int v;
  if (!num_int(r, 0, 1, &v))
    return false;
  *out = v != 0;
  return true;
}

/* " act=NAME bias=ET|- tf32=0|1 workspace=W\n" */
static bool read_libcall_tail(Rd *r, LibActivation *act, bool *has_bias,
                              ElemType *bias_et, bool *tf32, int64_t *ws) {
  if (!(lit(r, " act=") && activation(r, act) && lit(r, " bias=") &&
        elem_type(r, true, bias_et) && lit(r, " tf32=") && flag01(r, tf32) &&
        lit(r, " workspace=") && num(r, 0, INT64_MAX, ws) && lit(r, "\n")))
    return false;
  *has_bias = *bias_et != ET_INVALID;
  return true;
}

static bool read_lib_slices(Rd *r, Thunk *t, int n, int depth) {
  for (int k = 0; k < LIB_MAX_SLICES; k++)
    t->lib[k] = (BufSlice){-1, 0, 0};
  for (int k = 0; k < n; k++) {
    if (!(indent(r, depth + 1) && lit(r, "lib ")))
      return false;
    if (r->p < r->end && *r->p == '-')
      r->p++;
    else if (!slice(r, &t->lib[k]))
      return false;
    if (!lit(r, "\n"))
      return false;
  }
  return true;
}

static bool read_gemm(Rd *r, Thunk *t, int depth) {
  t->kind = THUNK_GEMM;
  GemmDesc *g = t->gemm = ARENA_NEW(r->ar, GemmDesc);
  if (!(lit(r, "annotation=") && str(r, &t->annotation) &&
        lit(r, " target=") && str(r, &t->target) && lit(r, " batch=") &&
        num(r, 1, INT64_MAX, &g->batch) && lit(r, " m=") &&
        num(r, 1, INT64_MAX, &g->m) && lit(r, " n=") &&
        num(r, 1, INT64_MAX, &g->n) && lit(r, " k=") &&
        num(r, 1, INT64_MAX, &g->k) && lit(r, " alpha=") &&
        dbl(r, &g->alpha_re) && lit(r, ",") && dbl(r, &g->alpha_im) &&
        lit(r, " beta=") && dbl(r, &g->beta) &&
        read_libcall_tail(r, &g->act, &g->has_bias, &g->bias_et,
                          &g->allow_tf32, &g->workspace_bytes)))
    return false;
  GemmMatrix *mats[4] = {&g->a, &g->b, &g->c, &g->d};
  for (int k = 0; k < 4; k++) {
    GemmMatrix *x = mats[k];
    int64_t st[3];
    if (!(indent(r, depth + 1) && lit(r, "matrix et=") &&
          elem_type(r, true, &x->et) && lit(r, " rows=") &&
          num(r, 0, INT64_MAX, &x->rows) && lit(r, " cols=") &&
          num(r, 0, INT64_MAX, &x->cols) && lit(r, " strides=") &&
          i64s(r, 3, 0, st) && lit(r, "\n")))
      return false;
    x->batch_stride = st[0];
    x->row_stride = st[1];
    x->col_stride = st[2];
  }
  return read_lib_slices(r, t, GEMM_NSLICES, depth);
}

/* One of n names (names[k] for value k) followed by a space or newline. */
static bool name_of(Rd *r, const char *const *names, int n, const char *what,
                    int *out) {
  if (r->failed)
    return false;
  for (int k = 0; k < n; k++) {
    size_t len = strlen(names[k]);
    if (left(r) > len && memcmp(r->p, names[k], len) == 0 &&
        (r->p[len] == ' ' || r->p[len] == '\n')) {
      r->p += len;
      *out = k;
      return true;
    }
  }
  return fail(r, what);
}

static bool read_routine(Rd *r, Thunk *t, int depth) {
  t->kind = THUNK_ROUTINE;
  RoutineDesc *rd = t->routine = ARENA_NEW(r->ar, RoutineDesc);
  static const char *const kinds[] = {"reduce", "topk"};
  static const char *const ops[] = {"add", "max", "min"};
  int kind = 0, op = 0;
  if (!(lit(r, "annotation=") && str(r, &t->annotation) && lit(r, " kind=") &&
        name_of(r, kinds, 2, "a routine (reduce, topk)", &kind) && lit(r, " et=") &&
        elem_type(r, false, &rd->et)))
    return false;
  rd->kind = (RoutineKind)kind;
  if (rd->kind == ROUTINE_REDUCE) {
    uint64_t bits;
    if (!(lit(r, " op=") && name_of(r, ops, 3, "a reducer (add, max, min)", &op) &&
          lit(r, " init=") && hex64(r, &bits) && lit(r, " outer=") &&
          num(r, 1, INT64_MAX, &rd->outer) && lit(r, " size=") &&
          num(r, 1, INT64_MAX, &rd->size) && lit(r, " inner=") &&
          num(r, 1, INT64_MAX, &rd->inner) && lit(r, "\n")))
      return false;
    rd->op = (RoutineOp)op;
    memcpy(&rd->init, &bits, sizeof bits);
    if (rd->init != rd->init)
      return fail(r, "an init value that is not NaN");
  } else if (!(lit(r, " rows=") && num(r, 1, INT64_MAX, &rd->rows) && lit(r, " n=") &&
               num(r, 1, INT64_MAX, &rd->n) && lit(r, " k=") &&
               num(r, 1, INT64_MAX, &rd->k) && lit(r, " largest=") &&
               flag01(r, &rd->largest) && lit(r, "\n"))) {
    return false;
  }
  return read_lib_slices(r, t, ROUTINE_NSLICES, depth);
}

static bool read_conv_kind(Rd *r, ConvKind *out) {
  for (int k = CONV_FORWARD; k <= CONV_BACKWARD_FILTER; k++) {
    const char *n = conv_kind_name((ConvKind)k);
    size_t len = strlen(n);
    if (left(r) > len && memcmp(r->p, n, len) == 0 && r->p[len] == ' ') {
      r->p += len;
      *out = (ConvKind)k;
      return true;
    }
  }
  return fail(r, "a convolution kind (forward, backward_input, "
                 "backward_filter)");
}

static bool read_conv(Rd *r, Thunk *t, int depth) {
  t->kind = THUNK_CONV;
  ConvDesc *c = t->conv = ARENA_NEW(r->ar, ConvDesc);
  if (!(lit(r, "annotation=") && str(r, &t->annotation) &&
        lit(r, " target=") && str(r, &t->target) && lit(r, " kind=") &&
        read_conv_kind(r, &c->kind) && lit(r, " spatial=") &&
        num_int(r, 1, CONV_MAX_SPATIAL, &c->nspatial) && lit(r, " groups=") &&
        num(r, 1, INT64_MAX, &c->groups) && lit(r, " alpha=") &&
        dbl(r, &c->alpha) && lit(r, " side-scale=") &&
        dbl(r, &c->side_scale) &&
        read_libcall_tail(r, &c->act, &c->has_bias, &c->bias_et,
                          &c->allow_tf32, &c->workspace_bytes)))
    return false;
  int nd = 2 + c->nspatial, ns = c->nspatial;
  ConvTensor *ts[3] = {&c->x, &c->w, &c->y};
  for (int k = 0; k < 3; k++)
    if (!(indent(r, depth + 1) && lit(r, "tensor et=") &&
          elem_type(r, false, &ts[k]->et) && lit(r, " dims=") &&
          i64s(r, nd, 1, ts[k]->dims) && lit(r, " strides=") &&
          i64s(r, nd, 0, ts[k]->strides) && lit(r, "\n")))
      return false;
  if (!(indent(r, depth + 1) && lit(r, "window stride=") &&
        i64s(r, ns, 1, c->stride) && lit(r, " dilation=") &&
        i64s(r, ns, 1, c->dilation) && lit(r, " pad-lo=") &&
        i64s(r, ns, 0, c->pad_lo) && lit(r, " pad-hi=") &&
        i64s(r, ns, 0, c->pad_hi) && lit(r, "\n")))
    return false;
  return read_lib_slices(r, t, CONV_NSLICES, depth);
}

/* A command buffer: its count, then its commands as a nested sequence of
 * exactly that many thunks, none of them control flow or another command
 * buffer. */
static bool read_command_buffer(Rd *r, Thunk *t, int depth) {
  t->kind = THUNK_COMMAND_BUFFER;
  t->trip_count = -1;
  int n = 0;
  if (!(lit(r, "commands=") && count(r, 16, &n) && lit(r, "\n")))
    return false;
  if (n < 1)
    return fail(r, "a command buffer with at least one command");
  const char *at = r->p;
  t->commands = ARENA_NEW(r->ar, ThunkSeq);
  if (!read_seq(r, t->commands, depth + 1))
    return false;
  if (t->commands->n != n) {
    r->p = at;
    return fail(r, "a sequence of as many commands as 'commands=' says");
  }
  for (int k = 0; k < n; k++) {
    ThunkKind kk = t->commands->thunks[k].kind;
    if (kk == THUNK_WHILE || kk == THUNK_CONDITIONAL ||
        kk == THUNK_COMMAND_BUFFER) {
      r->p = at;
      return fail(r, "commands that are kernels, copies, memsets, gemms or "
                     "convs (no control flow or nested command buffer)");
    }
  }
  return true;
}

static bool read_collective(Rd *r, Thunk *t, int depth) {
  t->kind = THUNK_COLLECTIVE;
  CollDesc *c = ARENA_NEW(r->ar, CollDesc);
  t->coll = c;
  const char *kinds[COLL_NKINDS], *reds[COLL_MAX + 1], *modes[4];
  for (int k = 0; k < COLL_NKINDS; k++) kinds[k] = coll_kind_name(k);
  for (int k = 0; k <= COLL_MAX; k++) reds[k] = coll_reduction_name(k);
  for (int k = 0; k < 4; k++) modes[k] = coll_mode_name(k);
  int kind = 0, red = 0, mode = 0;
  int64_t done = 0;
  if (!(lit(r, "op=") && name_of(r, kinds, COLL_NKINDS, "a collective", &kind) &&
        lit(r, " annotation=") && str(r, &t->annotation) &&
        lit(r, " reduction=") && name_of(r, reds, COLL_MAX + 1, "a reduction", &red) &&
        lit(r, " dim=") && num(r, -1, 63, &c->dim) &&
        lit(r, " channel=") && num(r, -1, INT64_MAX, &c->channel_id) &&
        lit(r, " mode=") && name_of(r, modes, 4, "a group mode", &mode) &&
        lit(r, " replicas=") && num(r, 1, 1 << 20, &c->replica_count) &&
        lit(r, " partitions=") && num(r, 1, 1 << 20, &c->num_partitions) &&
        lit(r, " groups=") && count(r, 8, &c->ngroups) &&
        lit(r, " pairs=") && count(r, 8, &c->npairs) &&
        lit(r, " operands=") && count(r, 16, &c->n) &&
        lit(r, " async=") && num(r, -1, INT64_MAX, &c->async_id) &&
        lit(r, " done=") && num(r, 0, 1, &done) && lit(r, "\n")))
    return false;
  c->done = done != 0;
  c->kind = kind;
  c->reduction = red;
  c->mode = mode;
  c->group_sizes = ARENA_ARRAY(r->ar, int64_t, c->ngroups);
  c->groups = ARENA_ARRAY(r->ar, int64_t *, c->ngroups);
  for (int g = 0; g < c->ngroups; g++) {
    int n;
    if (!(indent(r, depth + 1) && lit(r, "group ") && count(r, 2, &n) && lit(r, " ")))
      return false;
    if (n < 1)
      return fail(r, "a group of at least one device");
    c->group_sizes[g] = n;
    c->groups[g] = ARENA_ARRAY(r->ar, int64_t, n);
    if (!(i64s(r, n, 0, c->groups[g]) && lit(r, "\n")))
      return false;
  }
  c->pairs = arena_array(r->ar, (size_t)c->npairs, sizeof *c->pairs);
  for (int k = 0; k < c->npairs; k++)
    if (!(indent(r, depth + 1) && lit(r, "pair ") && i64s(r, 2, 0, c->pairs[k]) &&
          lit(r, "\n")))
      return false;
  bool ids = c->kind == COLL_REPLICA_ID || c->kind == COLL_PARTITION_ID;
  if (c->done && (ids || c->n != 0 || c->async_id < 0))
    return fail(r, "a done thunk of an asynchronous collective, without operands");
  if (!c->done && ids != (c->n == 0))
    return fail(r, ids ? "no operands for replica-id and partition-id"
                       : "at least one operand");
  int nout = c->done ? 0 : c->n ? c->n : 1;
  c->in = ARENA_ARRAY(r->ar, BufSlice, c->n);
  c->in_shape = ARENA_ARRAY(r->ar, char *, c->n);
  c->out = ARENA_ARRAY(r->ar, BufSlice, nout);
  c->out_shape = ARENA_ARRAY(r->ar, char *, nout);
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < (pass ? nout : c->n); k++)
      if (!(indent(r, depth + 1) && lit(r, pass ? "out " : "in ") &&
            slice(r, pass ? &c->out[k] : &c->in[k]) && lit(r, " ") &&
            str(r, pass ? &c->out_shape[k] : &c->in_shape[k]) && lit(r, "\n")))
        return false;
  return true;
}

static bool read_thunk(Rd *r, Thunk *t, int depth) {
  if (!indent(r, depth))
    return false;
  if (left(r) >= 7 && memcmp(r->p, "kernel ", 7) == 0) {
    r->p += 7;
    return read_kernel(r, t, depth);
  }
  if (left(r) >= 5 && memcmp(r->p, "copy ", 5) == 0) {
    r->p += 5;
    t->kind = THUNK_COPY;
    return lit(r, "annotation=") && str(r, &t->annotation) &&
           lit(r, " src=") && slice(r, &t->src) && lit(r, " dst=") &&
           slice(r, &t->dst) && lit(r, "\n");
  }
  if (left(r) >= 9 && memcmp(r->p, "memset32 ", 9) == 0) {
    r->p += 9;
    t->kind = THUNK_MEMSET32;
    return lit(r, "annotation=") && str(r, &t->annotation) &&
           lit(r, " dst=") && slice(r, &t->dst) && lit(r, " value=") &&
           num_u32(r, &t->memset_value) && lit(r, "\n");
  }
  if (left(r) >= 6 && memcmp(r->p, "while ", 6) == 0) {
    r->p += 6;
    t->kind = THUNK_WHILE;
    t->cond = ARENA_NEW(r->ar, ThunkSeq);
    t->body = ARENA_NEW(r->ar, ThunkSeq);
    return lit(r, "annotation=") && str(r, &t->annotation) &&
           lit(r, " cond-result=") && slice(r, &t->cond_result) &&
           lit(r, " trip-count=") && num(r, -1, INT64_MAX, &t->trip_count) &&
           lit(r, "\n") && read_seq(r, t->cond, depth + 1) &&
           read_seq(r, t->body, depth + 1);
  }
  if (left(r) >= 12 && memcmp(r->p, "conditional ", 12) == 0) {
    r->p += 12;
    t->kind = THUNK_CONDITIONAL;
    if (!(lit(r, "annotation=") && str(r, &t->annotation) &&
          lit(r, " index=") && slice(r, &t->branch_index) &&
          lit(r, " index-type=")))
      return false;
    if (left(r) >= 4 && memcmp(r->p, "pred", 4) == 0) {
      t->index_is_pred = true;
      r->p += 4;
    } else if (!lit(r, "s32")) {
      return false;
    }
    if (!(lit(r, " branches=") && count(r, 8, &t->nbranches) &&
          lit(r, "\n")))
      return false;
    t->branches = ARENA_ARRAY(r->ar, ThunkSeq, t->nbranches);
    for (int k = 0; k < t->nbranches; k++)
      if (!read_seq(r, &t->branches[k], depth + 1))
        return false;
    return true;
  }
  if (left(r) >= 5 && memcmp(r->p, "gemm ", 5) == 0) {
    r->p += 5;
    return read_gemm(r, t, depth);
  }
  if (left(r) >= 5 && memcmp(r->p, "conv ", 5) == 0) {
    r->p += 5;
    return read_conv(r, t, depth);
  }
  if (left(r) >= 8 && memcmp(r->p, "routine ", 8) == 0) {
    r->p += 8;
    return read_routine(r, t, depth);
  }
  if (left(r) >= 15 && memcmp(r->p, "command-buffer ", 15) == 0) {
    r->p += 15;
    return read_command_buffer(r, t, depth);
  }
  if (left(r) >= 11 && memcmp(r->p, "collective ", 11) == 0) {
    r->p += 11;
    return read_collective(r, t, depth);
  }
  return fail(r, "a thunk (kernel, copy, memset32, while, conditional, gemm, "
                 "conv, routine, command-buffer or collective)");
}

static bool read_seq(Rd *r, ThunkSeq *q, int depth) {
  if (depth > MAX_DEPTH) {
    diag_error(r->d, (Loc){0}, "%s: line %d: thunk sequences nested more "
               "than %d deep", r->name, line_of(r), MAX_DEPTH);
    r->failed = true;
    return false;
  }
  if (!(indent(r, depth) && lit(r, "seq ") && count(r, 16, &q->n) &&
        lit(r, "\n")))
    return false;
  q->thunks = ARENA_ARRAY(r->ar, Thunk, q->n);
  for (int k = 0; k < q->n; k++) {
    q->thunks[k].trip_count = -1;
    if (!read_thunk(r, &q->thunks[k], depth))
      return false;
  }
  return true;
}

static bool read_flags(Rd *r, unsigned *flags) {
  *flags = 0;
  if (r->p < r->end && *r->p == '-') {
    r->p++;
    return true;
  }
  for (;;) {
    size_t k = 0;
    for (; k < ARRAY_LEN(flag_names); k++) {
      size_t n = strlen(flag_names[k].name);
      /* The longest name that matches and ends at '|' or ' '. */
      if (left(r) > n && memcmp(r->p, flag_names[k].name, n) == 0 &&
          (r->p[n] == '|' || r->p[n] == ' ')) {
        *flags |= flag_names[k].bit;
        r->p += n;
        break;
      }
    }
    if (k == ARRAY_LEN(flag_names))
      return fail(r, "an allocation flag name");
    if (r->p < r->end && *r->p == '|') {
      r->p++;
      continue;
    }
    return true;
  }
}

static bool read_alloc(Rd *r, BufAlloc *al) {
  if (!(lit(r, "alloc size=") && num(r, 0, INT64_MAX, &al->size) &&
        lit(r, " flags=") && read_flags(r, &al->flags) &&
        lit(r, " param=") && num(r, -1, INT64_MAX, &al->param_number) &&
        lit(r, " index={")))
    return false;
  /* Indices: count the commas first (bounded by the line's bytes). */
  const char *q = r->p;
  int n = 0;
  if (q < r->end && *q != '}') {
    n = 1;
    for (; q < r->end && *q != '}' && *q != '\n'; q++)
      n += *q == ',';
  }
  al->nparam_index = n;
  al->param_index = ARENA_ARRAY(r->ar, int64_t, n);
  for (int k = 0; k < n; k++)
    if ((k > 0 && !lit(r, ",")) || !num(r, 0, INT64_MAX, &al->param_index[k]))
      return false;
  return lit(r, "} param-shape=") && str(r, &al->param_shape) &&
         lit(r, " output-shape=") && str(r, &al->output_shape) &&
         lit(r, "\n");
}

static bool read_leaves(Rd *r, const char *head, int *n, ArtLeaf **out) {
  if (!(lit(r, head) && count(r, 16, n) && lit(r, "\n")))
    return false;
  *out = ARENA_ARRAY(r->ar, ArtLeaf, *n);
  for (int k = 0; k < *n; k++)
    if (!(lit(r, "leaf ") && slice(r, &(*out)[k].slice) && lit(r, " ") &&
          str(r, &(*out)[k].shape) && lit(r, "\n")))
      return false;
  return true;
}

/* "section NAME LEN\n<bytes>\n" or "section NAME -\n\n"; *present false for
 * the second form. */
static bool read_section(Rd *r, const char *name, const char **bytes,
                         size_t *len, bool *present) {
  if (!(lit(r, "section ") && lit(r, name) && lit(r, " ")))
    return false;
  *present = true;
  if (r->p < r->end && *r->p == '-') {
    r->p++;
    *present = false;
    *bytes = NULL;
    *len = 0;
    return lit(r, "\n") && lit(r, "\n");
  }
  int64_t n;
  if (!num(r, 0, INT64_MAX, &n) || !lit(r, "\n"))
    return false;
  if ((uint64_t)n >= left(r))
    return fail(r, "a section as long as its length says");
  *bytes = r->p;
  *len = (size_t)n;
  if (strncmp(name, "constant", 8) != 0 && memchr(r->p, 0, (size_t)n))
    return fail(r, "a text section without NUL bytes");
  r->p += n;
  return lit(r, "\n");
}

static bool read_body(Rd *r, Artifact *a) {
  if (!(lit(r, "module ") && str(r, &a->module_name) && lit(r, "\ntarget ") &&
        str(r, &a->target) && lit(r, "\nhost-cpu ") && str(r, &a->host_cpu) &&
        lit(r, " ") && str(r, &a->host_features) && lit(r, "\nkernel-file ") &&
        str(r, &a->kernel_file) && lit(r, " ") &&
        hex64(r, &a->kernel_checksum) && lit(r, "\nresult-shape ") &&
        str(r, &a->result_shape) && lit(r, "\nallocations ") &&
        count(r, 32, &a->nallocs) && lit(r, "\n")))
    return false;
  a->allocs = ARENA_ARRAY(a->arena, BufAlloc, a->nallocs);
  for (int k = 0; k < a->nallocs; k++)
    if (!read_alloc(r, &a->allocs[k]))
      return false;
  if (!read_leaves(r, "parameters ", &a->nparams, &a->params) ||
      !read_leaves(r, "outputs ", &a->noutputs, &a->outputs))
    return false;
  if (!(lit(r, "constants ") && count(r, 16, &a->nconsts) && lit(r, "\n")))
    return false;
  a->consts = ARENA_ARRAY(a->arena, ArtConstant, a->nconsts);
  for (int k = 0; k < a->nconsts; k++)
    if (!(lit(r, "constant ") && slice(r, &a->consts[k].slice) &&
          lit(r, "\n")))
      return false;
  if (!(lit(r, "thunks\n") && read_seq(r, &a->entry, 0) &&
        lit(r, "end-thunks\n")))
    return false;
  for (int k = 0; k < a->nconsts; k++) {
    char name[32];
    snprintf(name, sizeof name, "constant %d", k);
    const char *bytes;
    size_t len;
    bool present;
    if (!read_section(r, name, &bytes, &len, &present))
      return false;
    if (!present || (int64_t)len != a->consts[k].slice.size) {
      diag_error(r->d, (Loc){0},
                 "%s: line %d: constant %d has %zu bytes; its slice has %lld",
                 r->name, line_of(r), k, len,
                 (long long)a->consts[k].slice.size);
      return r->failed = true, false;
    }
    a->consts[k].bytes = arena_memdup(a->arena, bytes, len);
  }
  const char *names[2] = {"original-hlo", "optimized-hlo"};
  char **texts[2] = {&a->original_hlo, &a->optimized_hlo};
  for (int k = 0; k < 2; k++) {
    const char *bytes;
    size_t len;
    bool present;
    if (!read_section(r, names[k], &bytes, &len, &present))
      return false;
    *texts[k] = present ? arena_strndup(a->arena, bytes, len) : NULL;
  }
  if (r->p != r->end) {
    diag_error(r->d, (Loc){0},
               "%s: line %d: unexpected bytes after the last section",
               r->name, line_of(r));
    return r->failed = true, false;
  }
  return true;
}

/* The first line: magic and version. */
static bool read_header(const char *data, size_t len, const char *name,
                        size_t *body, Diag *d) {
  const char *magic = THUNK_FILE_MAGIC " ";
  size_t ml = strlen(magic);
  if (len == 0)
    return diag_error(d, (Loc){0}, "%s: empty file, not a thunk file", name);
  size_t cmp = len < ml ? len : ml;
  if (memcmp(data, magic, cmp) != 0)
    return diag_error(d, (Loc){0}, "%s: not a thunk file (it does not start "
                      "with \"%s\")", name, THUNK_FILE_MAGIC);
  if (len < ml)
    return diag_error(d, (Loc){0}, "%s: truncated: the file ends in its first "
                      "line", name);
  size_t p = ml;
  uint64_t v = 0;
  int digits = 0;
  while (p < len && data[p] >= '0' && data[p] <= '9' && digits < 10) {
    v = v * 10 + (uint64_t)(data[p++] - '0');
    digits++;
  }
  if (p >= len)
    return diag_error(d, (Loc){0}, "%s: truncated: the file ends in its first "
                      "line", name);
  if (digits == 0 || data[p] != '\n')
    return diag_error(d, (Loc){0}, "%s: bad first line: expected \"%s N\"",
                      name, THUNK_FILE_MAGIC);
  if (v != THUNK_FILE_VERSION)
    return diag_error(d, (Loc){0}, "%s: thunk file version %llu; this build "
                      "reads version %d only (recompile with this xhloc)",
                      name, (unsigned long long)v, THUNK_FILE_VERSION);
  *body = p + 1;
  return true;
}

Artifact *artifact_parse(const char *data, size_t len, const char *name,
                         Diag *d) {
  size_t body = 0;
  if (!read_header(data, len, name, &body, d))
    return NULL;
  /* The last line: "checksum HEX16\n". */
  if (len < body + CHECKSUM_LINE_LEN || data[len - 1] != '\n' ||
      memcmp(data + len - CHECKSUM_LINE_LEN, "checksum ", 9) != 0) {
    diag_error(d, (Loc){0}, "%s: truncated: it does not end with its "
               "checksum line", name);
    return NULL;
  }
  const char *tail = data + len - CHECKSUM_LINE_LEN;
  Rd cr = {data, tail + 9, data + len - 1, name, d, NULL, false};
  uint64_t want;
  if (!hex64(&cr, &want)) {
    diag_clear(d);
    diag_error(d, (Loc){0}, "%s: corrupted: bad checksum line", name);
    return NULL;
  }
  uint64_t got = checksum64(data, len - CHECKSUM_LINE_LEN);
  if (got != want) {
    diag_error(d, (Loc){0}, "%s: corrupted: checksum %016llx does not match "
               "its contents (%016llx)", name, (unsigned long long)want,
               (unsigned long long)got);
    return NULL;
  }
  Artifact *a = artifact_new();
  Rd r = {data, data + body, tail, name, d, a->arena, false};
  if (!read_body(&r, a)) {
    if (!d->has_error)
      diag_error(d, (Loc){0}, "%s: malformed", name);
    artifact_free(a);
    return NULL;
  }
  Diag vd = {0};
  if (!artifact_validate(a, &vd)) {
    diag_error(d, (Loc){0}, "%s: inconsistent: %s", name,
               vd.msg ? vd.msg : "");
    diag_clear(&vd);
    artifact_free(a);
    return NULL;
  }
  return a;
}

Artifact *artifact_read(const char *path, Diag *d) {
  SrcFile *f = srcfile_read(path, d);
  if (!f)
    return NULL;
  Artifact *a = artifact_parse(f->text, f->len, path, d);
  srcfile_free(f);
  return a;
}

uint8_t *artifact_read_kernel_file(const Artifact *a, const char *thunks_path,
                                   size_t *len, Diag *d) {
  const char *slash = strrchr(thunks_path, '/');
  StrBuf path;
  sb_init(&path);
  if (slash)
    sb_putn(&path, thunks_path, (size_t)(slash - thunks_path + 1));
  sb_puts(&path, a->kernel_file);
  FILE *f = fopen(path.s, "rb");
  if (!f) {
    diag_error(d, (Loc){0}, "cannot open kernel file '%s' named by %s: %s",
               path.s, thunks_path, strerror(errno));
    sb_free(&path);
    return NULL;
  }
  StrBuf b;
  sb_init(&b);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    sb_putn(&b, buf, n);
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    diag_error(d, (Loc){0}, "cannot read kernel file '%s'", path.s);
    sb_free(&b);
    sb_free(&path);
    return NULL;
  }
  uint64_t sum = checksum64(b.s ? b.s : "", b.len);
  if (sum != a->kernel_checksum) {
    diag_error(d, (Loc){0}, "%s does not match %s: checksum %016llx, the "
               "thunk file expects %016llx (rebuild both with xhloc)",
               path.s, thunks_path, (unsigned long long)sum,
               (unsigned long long)a->kernel_checksum);
    sb_free(&b);
    sb_free(&path);
    return NULL;
  }
  sb_free(&path);
  *len = b.len;
  /* NUL-terminated (PTX is text), the terminator not counted. */
  return b.s ? (uint8_t *)b.s : (uint8_t *)xcalloc(1, 1);
}
