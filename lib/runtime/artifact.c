/*
 * artifact.c - the compiled artifact in memory: creating and freeing it, its
 * checksum function, the structural checks every reader and writer runs, and
 * its two texts (XLA's thunk_sequence.txt and xhlo-run --describe).
 *
 * Thunk text.  artifact_print_thunks follows XLA's SequentialThunk::ToString
 * (xla/backends/gpu/runtime/sequential_thunk.cc): one line per thunk,
 *   <indent>%03d: <kind padded to the longest kind of its sequence>\t<detail>
 * with the thunk id first.  Ids are given here in pre-order (a while,
 * conditional or command buffer before the thunks nested in it), counting from 0 over the whole
 * artifact, so every id is unique as XLA's are.  Details are XLA's:
 *   kKernel       ", kernel = NAME, launch dimensions = blocks: {x, y, z},
 *                  threads/block: {x, y, z}, cluster_dim = nullopt"
 *   kWhile        "\ncondition:\n" <nested>, "body:\n" <nested>
 *   kConditional  "\n" then "false_branch:"/"true_branch:" (pred index) or
 *                 "branch_N:" blocks with their nested sequences.
 *   kCommandBuffer "\n" then its commands as a nested sequence, one level
 *                 deeper.
 *   kAllReduce, kAllGather, kReduceScatter, kAllToAll, kCollectivePermute,
 *   kCollectiveBroadcast
 *                 ", replica_groups = {{0,1},{2,3}}" (or
 *                 "source_target_pairs = {{0,1}}"), then the group mode,
 *                 channel_id, reduction or dimension where they apply,
 *                 operands and results as slices, ", async_id = N" for
 *                 the -start of an asynchronous pair; kReplicaId and
 *                 kPartitionId their destination.
 *   kAsyncDone    the pair's -done: ", async_id = N, of = kAllReduce".
 *   kTopK         XLA CPU's TopKThunk: ", batch_size = B, input_size = N,
 *                 k = K, largest = true", then its slices.
 *   kReduce       xhloc's own (XLA runs a library fusion there): ", reduce
 *                 = add, type = f32, init = 0, x = [A,R,B] -> [A,B]", then
 *                 its slices.
 * Differences from XLA, on purpose: XLA prints a pred conditional's
 * branches[0] under "false_branch:" although it runs it when the pred is
 * true; here each label is over the sequence it really runs.  kCopy and
 * kMemset32BitValue print their slices (XLA prints nothing for them).  An
 * empty sequence prints "No thunks." on a line of its own (XLA leaves the
 * newline out).  The buffer-dependency annotations of newer XLA versions
 * (prev=/next=) are not printed.
 */
#include "thunks.h"

#include <string.h>

#include "../hlo/hlo.h"

#define MAX_DEPTH 64                /* nesting of while/conditional */

Artifact *artifact_new(void) {
  Arena *ar = arena_new();
  Artifact *a = ARENA_NEW(ar, Artifact);
  a->arena = ar;
  return a;
}

void artifact_free(Artifact *a) {
  if (a)
    arena_free(a->arena);
}

uint64_t checksum64(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0xcbf29ce484222325ull;           /* FNV-1a 64 */
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/*
 * Validation
 */
typedef struct Checker {
  const Artifact *a;
  Diag *d;
  Arena *arena;                     /* shapes parsed for size checks */
} Checker;

static Loc noloc(void) { return (Loc){0}; }

static bool check_slice(Checker *c, const BufSlice *s, const char *what) {
  const Artifact *a = c->a;
  if (s->alloc < 0 || s->alloc >= a->nallocs)
    return diag_error(c->d, noloc(),
                      "%s: slice names allocation %d; there are %d", what,
                      (int)s->alloc, a->nallocs);
  int64_t size = a->allocs[s->alloc].size;
  if (s->offset < 0 || s->size < 0 || s->offset > size ||
      s->size > size - s->offset)
    return diag_error(c->d, noloc(),
                      "%s: slice {index:%d, offset:%lld, size:%lld} is outside "
                      "allocation %d (size %lld)",
                      what, (int)s->alloc, (long long)s->offset,
                      (long long)s->size, (int)s->alloc, (long long)size);
  return true;
}

static bool check_seq(Checker *c, const ThunkSeq *q, int depth);
static bool check_collective(Checker *c, const CollDesc *cd);

static bool check_thunk(Checker *c, const Thunk *t, int depth) {
  char what[64];
  switch (t->kind) {
  case THUNK_KERNEL:
    if (!t->kernel_name || !t->kernel_name[0])
      return diag_error(c->d, noloc(), "kernel thunk without a kernel name");
    if (t->nargs < 0 || (t->nargs > 0 && (!t->args || !t->written)))
      return diag_error(c->d, noloc(), "kernel %s: kernel args missing",
                        t->kernel_name);
    for (int k = 0; k < t->nargs; k++) {
      snprintf(what, sizeof what, "kernel argument %d", k);
      if (!check_slice(c, &t->args[k], what))
        return false;
    }
    for (int k = 0; k < 3; k++)
      if (t->grid[k] == 0 || t->block[k] == 0)
        return diag_error(c->d, noloc(),
                          "kernel %s: a launch dimension is zero",
                          t->kernel_name);
    return true;
  case THUNK_COPY:
    if (!check_slice(c, &t->src, "copy source") ||
        !check_slice(c, &t->dst, "copy destination"))
      return false;
    if (t->src.size != t->dst.size)
      return diag_error(c->d, noloc(),
                        "copy of %lld bytes into a slice of %lld bytes",
                        (long long)t->src.size, (long long)t->dst.size);
    return true;
  case THUNK_MEMSET32:
    if (!check_slice(c, &t->dst, "memset destination"))
      return false;
    if (t->dst.size % 4 != 0)
      return diag_error(c->d, noloc(),
                        "32-bit memset of %lld bytes (not a multiple of 4)",
                        (long long)t->dst.size);
    return true;
  case THUNK_WHILE:
    if (!t->cond || !t->body)
      return diag_error(c->d, noloc(), "while thunk without its sequences");
    if (!check_slice(c, &t->cond_result, "while condition result"))
      return false;
    if (t->cond_result.size < 1)
      return diag_error(c->d, noloc(), "while condition result is empty");
    if (t->trip_count < -1)
      return diag_error(c->d, noloc(), "while trip count %lld",
                        (long long)t->trip_count);
    return check_seq(c, t->cond, depth + 1) && check_seq(c, t->body, depth + 1);
  case THUNK_CONDITIONAL:
    if (t->nbranches < 1 || !t->branches)
      return diag_error(c->d, noloc(), "conditional thunk without branches");
    if (t->index_is_pred && t->nbranches != 2)
      return diag_error(c->d, noloc(),
                        "conditional on a pred has %d branches, not 2",
                        t->nbranches);
    if (!check_slice(c, &t->branch_index, "conditional branch index"))
      return false;
    if (t->branch_index.size != (t->index_is_pred ? 1 : 4))
      return diag_error(c->d, noloc(),
                        "conditional branch index is %lld bytes",
                        (long long)t->branch_index.size);
    for (int k = 0; k < t->nbranches; k++)
      if (!check_seq(c, &t->branches[k], depth + 1))
        return false;
    return true;
  case THUNK_GEMM:
  case THUNK_CONV:
  case THUNK_ROUTINE:
    for (int k = 0; k < LIB_MAX_SLICES; k++) {
      snprintf(what, sizeof what, "library call slice %d", k);
      if (t->lib[k].alloc >= 0 && !check_slice(c, &t->lib[k], what))
        return false;
    }
    if (t->kind == THUNK_ROUTINE)
      return t->gemm || t->conv ? diag_error(c->d, noloc(), "routine thunk with a "
                                                            "library descriptor")
                                : routine_check(t->routine, t->lib, c->d);
    if (t->kind == THUNK_GEMM)
      return t->conv ? diag_error(c->d, noloc(), "GEMM thunk with a "
                                                 "convolution descriptor")
                     : libcall_check_gemm(t->gemm, t->lib, c->d);
    return t->gemm ? diag_error(c->d, noloc(), "convolution thunk with a GEMM "
                                               "descriptor")
                   : libcall_check_conv(t->conv, t->lib, c->d);
  case THUNK_COMMAND_BUFFER:
    if (!t->commands)
      return diag_error(c->d, noloc(), "command buffer thunk without its "
                                       "commands");
    if (t->commands->n < 1)
      return diag_error(c->d, noloc(), "command buffer thunk with no commands");
    for (int k = 0; k < t->commands->n; k++) {
      ThunkKind kk = t->commands->thunks ? t->commands->thunks[k].kind
                                         : THUNK_KERNEL;
      if (kk == THUNK_WHILE || kk == THUNK_CONDITIONAL ||
          kk == THUNK_COMMAND_BUFFER)
        return diag_error(c->d, noloc(),
                          "command buffer thunk holds a %s thunk (only "
                          "kernels, copies, memsets, GEMMs and convolutions)",
                          kk == THUNK_WHILE         ? "while"
                          : kk == THUNK_CONDITIONAL ? "conditional"
                                                    : "command buffer");
    }
    return check_seq(c, t->commands, depth + 1);
  case THUNK_COLLECTIVE:
    return check_collective(c, t->coll);
  }
  return diag_error(c->d, noloc(), "unknown thunk kind %d", (int)t->kind);
}

static bool check_collective(Checker *c, const CollDesc *cd) {
  if (!cd)
    return diag_error(c->d, noloc(), "collective thunk without its description");
  if ((unsigned)cd->kind >= COLL_NKINDS || (unsigned)cd->reduction > COLL_MAX ||
      cd->mode < 0 || cd->mode > 3 || cd->n < 0 || cd->replica_count < 1 ||
      cd->num_partitions < 1)
    return diag_error(c->d, noloc(), "malformed collective thunk");
  bool ids = cd->kind == COLL_REPLICA_ID || cd->kind == COLL_PARTITION_ID;
  if (cd->done)
    return ids || cd->n != 0 || cd->async_id < 0
               ? diag_error(c->d, noloc(), "malformed done thunk of an asynchronous %s",
                            coll_kind_name(cd->kind))
               : true;
  if (cd->async_id < -1 || (ids && cd->async_id >= 0))
    return diag_error(c->d, noloc(), "malformed asynchronous %s thunk",
                      coll_kind_name(cd->kind));
  int nout = ids ? 1 : cd->n;
  if (ids != (cd->n == 0))
    return diag_error(c->d, noloc(), "%s thunk with %d operands",
                      coll_kind_name(cd->kind), cd->n);
  for (int k = 0; k < cd->n; k++)
    if (!check_slice(c, &cd->in[k], "collective operand"))
      return false;
  for (int k = 0; k < nout; k++)
    if (!check_slice(c, &cd->out[k], "collective result"))
      return false;
  if (ids && cd->out[0].size != 4)
    return diag_error(c->d, noloc(), "%s result is %lld bytes, not 4",
                      coll_kind_name(cd->kind), (long long)cd->out[0].size);
  return true;
}

static bool check_seq(Checker *c, const ThunkSeq *q, int depth) {
  if (depth > MAX_DEPTH)
    return diag_error(c->d, noloc(),
                      "thunk sequences nested more than %d deep", MAX_DEPTH);
  if (q->n < 0 || (q->n > 0 && !q->thunks))
    return diag_error(c->d, noloc(), "thunk sequence without its thunks");
  for (int k = 0; k < q->n; k++)
    if (!check_thunk(c, &q->thunks[k], depth))
      return false;
  return true;
}

/* A leaf's shape must read and its slice must be exactly its size. */
static bool check_leaf(Checker *c, const ArtLeaf *l, const char *what, int k) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s %d", what, k);
  if (!check_slice(c, &l->slice, buf))
    return false;
  if (!l->shape)
    return diag_error(c->d, noloc(), "%s: no shape", buf);
  Diag sd = {0};
  Shape *s = hlo_parse_shape(c->arena, l->shape, &sd);
  bool ok = s != NULL;
  if (!ok)
    diag_error(c->d, noloc(), "%s: bad shape \"%s\": %s", buf, l->shape,
               sd.msg ? sd.msg : "");
  diag_clear(&sd);
  if (!ok)
    return false;
  if (s->et == ET_TUPLE)
    return diag_error(c->d, noloc(), "%s: shape %s is a tuple, not a leaf",
                      buf, l->shape);
  int64_t size = et_is_array(s->et) ? shape_buffer_size(s) : 0;
  if (size != l->slice.size)
    return diag_error(c->d, noloc(),
                      "%s: slice of %lld bytes for shape %s (%lld bytes)", buf,
                      (long long)l->slice.size, l->shape, (long long)size);
  return true;
}

bool artifact_validate(const Artifact *a, Diag *d) {
  if (!a->module_name || !a->target || !a->kernel_file)
    return diag_error(d, noloc(), "artifact without module name, target or "
                                  "kernel file");
  if (strchr(a->kernel_file, '/'))
    return diag_error(d, noloc(),
                      "kernel file name \"%s\" has a directory in it",
                      a->kernel_file);
  if (a->nallocs < 0 || (a->nallocs > 0 && !a->allocs) || a->nconsts < 0 ||
      (a->nconsts > 0 && !a->consts) || a->nparams < 0 ||
      (a->nparams > 0 && !a->params) || a->noutputs < 0 ||
      (a->noutputs > 0 && !a->outputs))
    return diag_error(d, noloc(), "artifact tables missing");
  const unsigned known = ALLOC_PARAMETER | ALLOC_OUTPUT | ALLOC_CONSTANT |
                         ALLOC_TEMP | ALLOC_MAYBE_LIVE_OUT | ALLOC_THREAD_LOCAL;
  for (int k = 0; k < a->nallocs; k++) {
    const BufAlloc *al = &a->allocs[k];
    if (al->size < 0)
      return diag_error(d, noloc(), "allocation %d has size %lld", k,
                        (long long)al->size);
    if (al->flags & ~known)
      return diag_error(d, noloc(), "allocation %d has unknown flags 0x%x", k,
                        al->flags & ~known);
    if ((al->flags & ALLOC_PARAMETER) &&
        (al->param_number < 0 || al->nparam_index < 0 ||
         (al->nparam_index > 0 && !al->param_index) || !al->param_shape))
      return diag_error(d, noloc(),
                        "parameter allocation %d without its parameter", k);
  }
  Checker c = {a, d, arena_new()};
  bool ok = true;
  for (int k = 0; ok && k < a->nconsts; k++) {
    const ArtConstant *ct = &a->consts[k];
    char what[48];
    snprintf(what, sizeof what, "constant %d", k);
    ok = check_slice(&c, &ct->slice, what);
    if (ok && !(a->allocs[ct->slice.alloc].flags & ALLOC_CONSTANT))
      ok = diag_error(d, noloc(),
                      "constant %d is in allocation %d, not a constant one", k,
                      (int)ct->slice.alloc);
    if (ok && ct->slice.size > 0 && !ct->bytes)
      ok = diag_error(d, noloc(), "constant %d has no bytes", k);
  }
  for (int k = 0; ok && k < a->nparams; k++) {
    ok = check_leaf(&c, &a->params[k], "parameter leaf", k);
    if (ok && a->params[k].slice.size > 0 &&
        !(a->allocs[a->params[k].slice.alloc].flags & ALLOC_PARAMETER))
      ok = diag_error(d, noloc(),
                      "parameter leaf %d is in allocation %d, not a parameter "
                      "one",
                      k, (int)a->params[k].slice.alloc);
  }
  for (int k = 0; ok && k < a->noutputs; k++)
    ok = check_leaf(&c, &a->outputs[k], "output leaf", k);
  if (ok)
    ok = check_seq(&c, &a->entry, 0);
  arena_free(c.arena);
  return ok;
}

const char *coll_kind_name(int kind) {
  static const char *const names[] = {
      "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
      "collective-permute", "replica-id", "partition-id", "collective-broadcast"};
  return kind >= 0 && kind < (int)ARRAY_LEN(names) ? names[kind] : "?";
}

const char *coll_reduction_name(int reduction) {
  static const char *const names[] = {"sum", "product", "min", "max"};
  return reduction >= 0 && reduction < (int)ARRAY_LEN(names) ? names[reduction] : "?";
}

const char *coll_mode_name(int mode) {
  return hlo_collective_group_mode_name((CollectiveGroupMode)mode);
}

/*
 * Text
 */
static const char *coll_thunk_name(const CollDesc *c) {
  static const char *const names[] = {
      "kAllReduce", "kAllGather", "kReduceScatter", "kAllToAll",
      "kCollectivePermute", "kReplicaId", "kPartitionId", "kCollectiveBroadcast"};
  return c && (unsigned)c->kind < COLL_NKINDS ? names[c->kind] : "kUnknown";
}

static const char *kind_name(const Thunk *t) {
  switch (t->kind) {
  case THUNK_KERNEL: return "kKernel";
  case THUNK_COPY: return "kCopy";
  case THUNK_MEMSET32: return "kMemset32BitValue";
  case THUNK_WHILE: return "kWhile";
  case THUNK_CONDITIONAL: return "kConditional";
  case THUNK_GEMM:
    return t->target && strcmp(t->target, "__cublas$lt$matmul") == 0
               ? "kCublasLtMatmul"
               : "kGemm";
  case THUNK_CONV: return "kConvolution";
  case THUNK_COMMAND_BUFFER: return "kCommandBuffer";
  case THUNK_COLLECTIVE:
    return t->coll && t->coll->done ? "kAsyncDone" : coll_thunk_name(t->coll);
  case THUNK_ROUTINE:
    return t->routine && t->routine->kind == ROUTINE_TOPK ? "kTopK" : "kReduce";
  }
  return "kUnknown";
}

static void put_indent(StrBuf *b, int indent) {
  for (int k = 0; k < indent * 2; k++)
    sb_putc(b, ' ');
}

static void put_slice(StrBuf *b, const BufSlice *s) {
  sb_printf(b, "{index:%d, offset:%lld, size:%lld}", (int)s->alloc,
            (long long)s->offset, (long long)s->size);
}

static void print_seq(StrBuf *b, const ThunkSeq *q, int indent, int *next_id,
                      int depth);

static void print_collective(StrBuf *b, const CollDesc *c) {
  if (!c)
    return;
  if (c->done) {
    sb_printf(b, ", async_id = %lld, of = %s", (long long)c->async_id, coll_thunk_name(c));
    return;
  }
  if (c->kind == COLL_REPLICA_ID || c->kind == COLL_PARTITION_ID) {
    sb_puts(b, ", destination = ");
    put_slice(b, &c->out[0]);
    return;
  }
  if (c->kind == COLL_COLLECTIVE_PERMUTE) {
    sb_puts(b, ", source_target_pairs = {");
    for (int k = 0; k < c->npairs; k++)
      sb_printf(b, "%s{%lld,%lld}", k ? "," : "", (long long)c->pairs[k][0],
                (long long)c->pairs[k][1]);
  } else {
    sb_puts(b, ", replica_groups = {");
    for (int g = 0; g < c->ngroups; g++) {
      sb_puts(b, g ? ",{" : "{");
      for (int64_t k = 0; k < c->group_sizes[g]; k++)
        sb_printf(b, "%s%lld", k ? "," : "", (long long)c->groups[g][k]);
      sb_putc(b, '}');
    }
  }
  sb_printf(b, "}, group_mode = %s", coll_mode_name(c->mode));
  if (c->channel_id >= 0)
    sb_printf(b, ", channel_id = %lld", (long long)c->channel_id);
  if (c->kind == COLL_ALL_REDUCE || c->kind == COLL_REDUCE_SCATTER)
    sb_printf(b, ", reduction = %s", coll_reduction_name(c->reduction));
  if (c->dim >= 0)
    sb_printf(b, ", dimension = %lld", (long long)c->dim);
  for (int k = 0; k < c->n; k++) {
    sb_printf(b, ", operand %d = ", k);
    put_slice(b, &c->in[k]);
    sb_printf(b, " %s, result %d = ", c->in_shape[k] ? c->in_shape[k] : "?", k);
    put_slice(b, &c->out[k]);
    sb_printf(b, " %s", c->out_shape[k] ? c->out_shape[k] : "?");
  }
  if (c->async_id >= 0)
    sb_printf(b, ", async_id = %lld", (long long)c->async_id);
}

static void print_thunk(StrBuf *b, const Thunk *t, int indent, int *next_id,
                        int depth) {
  switch (t->kind) {
  case THUNK_KERNEL:
    sb_printf(b,
              ", kernel = %s, launch dimensions = blocks: {%u, %u, %u}, "
              "threads/block: {%u, %u, %u}, cluster_dim = nullopt",
              t->kernel_name ? t->kernel_name : "", t->grid[0], t->grid[1],
              t->grid[2], t->block[0], t->block[1], t->block[2]);
    break;
  case THUNK_COPY:
    sb_puts(b, ", source = ");
    put_slice(b, &t->src);
    sb_puts(b, ", destination = ");
    put_slice(b, &t->dst);
    break;
  case THUNK_MEMSET32:
    sb_printf(b, ", value = 0x%08x, destination = ", t->memset_value);
    put_slice(b, &t->dst);
    break;
  case THUNK_WHILE:
    put_indent(b, indent);
    sb_puts(b, "\ncondition:\n");
    if (t->cond)
      print_seq(b, t->cond, indent + 1, next_id, depth + 1);
    put_indent(b, indent);
    sb_puts(b, "body:\n");
    if (t->body)
      print_seq(b, t->body, indent + 1, next_id, depth + 1);
    break;
  case THUNK_CONDITIONAL:
    put_indent(b, indent);
    sb_puts(b, "\n");
    if (t->index_is_pred && t->nbranches == 2) {
      put_indent(b, indent);
      sb_puts(b, "false_branch:\n");
      print_seq(b, &t->branches[1], indent + 1, next_id, depth + 1);
      put_indent(b, indent);
      sb_puts(b, "true_branch:\n");
      print_seq(b, &t->branches[0], indent + 1, next_id, depth + 1);
    } else {
      for (int k = 0; k < t->nbranches; k++) {
        put_indent(b, indent);
        sb_printf(b, "branch_%d:\n", k);
        print_seq(b, &t->branches[k], indent + 1, next_id, depth + 1);
      }
    }
    break;
  case THUNK_GEMM:
    if (t->gemm)
      libcall_print_gemm(b, t->gemm, t->lib);
    break;
  case THUNK_CONV:
    if (t->conv)
      libcall_print_conv(b, t->conv, t->lib);
    break;
  case THUNK_COMMAND_BUFFER:
    sb_puts(b, "\n");
    if (t->commands)
      print_seq(b, t->commands, indent, next_id, depth + 1);
    break;
  case THUNK_COLLECTIVE:
    print_collective(b, t->coll);
    break;
  case THUNK_ROUTINE:
    if (t->routine)
      routine_print(b, t->routine, t->lib);
    break;
  }
}

static void print_seq(StrBuf *b, const ThunkSeq *q, int indent, int *next_id,
                      int depth) {
  if (depth > MAX_DEPTH)
    return;
  if (q->n == 0) {
    put_indent(b, indent);
    sb_puts(b, "No thunks.\n");
    return;
  }
  size_t longest = 0;
  for (int k = 0; k < q->n; k++) {
    size_t n = strlen(kind_name(&q->thunks[k]));
    if (n > longest)
      longest = n;
  }
  for (int k = 0; k < q->n; k++) {
    const Thunk *t = &q->thunks[k];
    const char *kn = kind_name(t);
    put_indent(b, indent);
    sb_printf(b, "%03d: %s", (*next_id)++, kn);
    for (size_t p = strlen(kn); p < longest; p++)
      sb_putc(b, ' ');
    sb_putc(b, '\t');
    print_thunk(b, t, indent + 1, next_id, depth);
    /* Nested sequences end their own lines. */
    if (t->kind != THUNK_WHILE && t->kind != THUNK_CONDITIONAL &&
        t->kind != THUNK_COMMAND_BUFFER)
      sb_putc(b, '\n');
  }
}

void artifact_print_thunks(StrBuf *b, const Artifact *a) {
  int next_id = 0;
  print_seq(b, &a->entry, 0, &next_id, 0);
}

static void put_flags(StrBuf *b, unsigned f) {
  static const struct { unsigned bit; const char *name; } names[] = {
      {ALLOC_PARAMETER, "parameter"}, {ALLOC_OUTPUT, "output"},
      {ALLOC_CONSTANT, "constant"}, {ALLOC_TEMP, "temp"},
      {ALLOC_MAYBE_LIVE_OUT, "maybe-live-out"},
      {ALLOC_THREAD_LOCAL, "thread-local"},
  };
  bool first = true;
  for (size_t k = 0; k < ARRAY_LEN(names); k++)
    if (f & names[k].bit) {
      sb_printf(b, "%s%s", first ? "" : ", ", names[k].name);
      first = false;
    }
  if (first)
    sb_puts(b, "-");
}

void artifact_describe(StrBuf *b, const Artifact *a) {
  sb_printf(b, "module: %s\n", a->module_name ? a->module_name : "?");
  sb_printf(b, "target: %s\n", a->target ? a->target : "?");
  if (a->host_cpu)
    sb_printf(b, "host cpu: %s (features %s)\n", a->host_cpu,
              a->host_features && *a->host_features ? a->host_features : "-");
  sb_printf(b, "kernel file: %s (checksum %016llx)\n",
            a->kernel_file ? a->kernel_file : "?",
            (unsigned long long)a->kernel_checksum);
  if (a->result_shape)
    sb_printf(b, "result shape: %s\n", a->result_shape);
  int64_t total = 0;
  for (int k = 0; k < a->nallocs; k++)
    total += a->allocs[k].size;
  sb_printf(b, "allocations: %d (%lld bytes)\n", a->nallocs, (long long)total);
  for (int k = 0; k < a->nallocs; k++) {
    const BufAlloc *al = &a->allocs[k];
    sb_printf(b, "  %d: size %lld, ", k, (long long)al->size);
    put_flags(b, al->flags);
    if (al->flags & ALLOC_PARAMETER) {
      sb_printf(b, ", parameter %lld at {", (long long)al->param_number);
      for (int j = 0; j < al->nparam_index; j++)
        sb_printf(b, "%s%lld", j ? "," : "", (long long)al->param_index[j]);
      sb_printf(b, "} of %s", al->param_shape ? al->param_shape : "?");
    }
    if ((al->flags & ALLOC_OUTPUT) && al->output_shape)
      sb_printf(b, ", output %s", al->output_shape);
    sb_putc(b, '\n');
  }
  sb_printf(b, "parameters: %d\n", a->nparams);
  for (int k = 0; k < a->nparams; k++) {
    sb_printf(b, "  %d: %s at ", k, a->params[k].shape);
    put_slice(b, &a->params[k].slice);
    sb_putc(b, '\n');
  }
  sb_printf(b, "outputs: %d\n", a->noutputs);
  for (int k = 0; k < a->noutputs; k++) {
    sb_printf(b, "  %d: %s at ", k, a->outputs[k].shape);
    put_slice(b, &a->outputs[k].slice);
    sb_putc(b, '\n');
  }
  sb_printf(b, "constants: %d\n", a->nconsts);
  for (int k = 0; k < a->nconsts; k++) {
    sb_printf(b, "  %d: ", k);
    put_slice(b, &a->consts[k].slice);
    sb_putc(b, '\n');
  }
  sb_puts(b, "thunks:\n");
  artifact_print_thunks(b, a);
}
