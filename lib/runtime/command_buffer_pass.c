/*
 * command_buffer_pass.c - XLA's CommandBufferConversionPass on an artifact's
 * thunk sequence: each run of consecutive thunks that a command buffer can
 * hold (kernels, copies and memsets, GEMMs, convolutions: the kinds chosen
 * by --command-buffer) becomes one COMMAND_BUFFER thunk whose nested
 * sequence is that run, in order.  xhlo-run records such a sequence once
 * into a CUDA graph and replays it (executor.c, platform_cuda.c).
 *
 * A run shorter than the minimum size (XLA's --xla_gpu_graph_min_graph_size)
 * stays as it is: replaying a graph of one or two launches saves nothing.
 * While and conditional thunks end a run (xhloc does not put control flow in
 * a command buffer: conditional nodes need CUDA 12.4); the pass recurses
 * into their nested sequences, so a loop body of many kernels becomes one
 * graph replayed per trip.
 */
#include "thunks.h"

#include <string.h>
#include <strings.h>

static const struct {
  const char *name;
  unsigned bit;
} type_names[] = {
    {"fusion", CMDBUF_FUSION},
    {"cublas", CMDBUF_CUBLAS},
    {"cublaslt", CMDBUF_CUBLASLT},
    {"cudnn", CMDBUF_CUDNN},
    {"copy", CMDBUF_COPY},
    {"custom_call", CMDBUF_CUSTOM_CALL},
    {"collectives", CMDBUF_COLLECTIVES},
    {"conditional", CMDBUF_CONDITIONAL},
    {"conditionals", CMDBUF_CONDITIONAL},
    {"while", CMDBUF_WHILE},
};

bool cmdbuf_parse_types(const char *list, unsigned *types, Diag *d) {
  *types = 0;
  const char *p = list;
  while (*p) {
    size_t n = strcspn(p, ",");
    bool found = false;
    for (size_t k = 0; k < ARRAY_LEN(type_names) && !found; k++)
      if (strlen(type_names[k].name) == n &&
          strncasecmp(type_names[k].name, p, n) == 0) {
        *types |= type_names[k].bit;
        found = true;
      }
    if (!found)
      return diag_error(d, (Loc){0},
                        "unknown command buffer type '%.*s' (supported: "
                        "fusion, cublas, cublaslt, cudnn, copy, custom_call, "
                        "collectives, conditional, while)",
                        (int)n, p);
    p += n;
    if (*p == ',')
      p++;
  }
  return true;
}

/* Whether t may go into a command buffer of the given types. */
static bool convertible(const Thunk *t, unsigned types) {
  switch (t->kind) {
  case THUNK_KERNEL:
    return types & CMDBUF_FUSION;
  case THUNK_COPY:
  case THUNK_MEMSET32:
    return types & CMDBUF_COPY;
  case THUNK_GEMM:
    return t->target && strcmp(t->target, "__cublas$lt$matmul") == 0
               ? types & CMDBUF_CUBLASLT
               : types & CMDBUF_CUBLAS;
  case THUNK_CONV:
    return types & CMDBUF_CUDNN;
  case THUNK_WHILE:
  case THUNK_CONDITIONAL:
  case THUNK_COMMAND_BUFFER:
  case THUNK_COLLECTIVE:          /* meets other devices on the host */
  case THUNK_ROUTINE:             /* host only */
    return false;
  }
  return false;
}

static int convert_seq(Arena *ar, ThunkSeq *q, unsigned types, int min_size);

/* Converts the sequences nested in t. */
static int convert_nested(Arena *ar, Thunk *t, unsigned types, int min_size) {
  int made = 0;
  if (t->kind == THUNK_WHILE) {
    if (t->cond)
      made += convert_seq(ar, t->cond, types, min_size);
    if (t->body)
      made += convert_seq(ar, t->body, types, min_size);
  } else if (t->kind == THUNK_CONDITIONAL) {
    for (int b = 0; b < t->nbranches; b++)
      made += convert_seq(ar, &t->branches[b], types, min_size);
  }
  return made;
}

static int convert_seq(Arena *ar, ThunkSeq *q, unsigned types, int min_size) {
  int made = 0;
  Thunk *out = ARENA_ARRAY(ar, Thunk, q->n + 1);
  int n = 0;
  for (int k = 0; k < q->n;) {
    int end = k;
    while (end < q->n && convertible(&q->thunks[end], types))
      end++;
    if (end - k >= min_size && end > k) {
      ThunkSeq *cmds = ARENA_NEW(ar, ThunkSeq);
      cmds->n = end - k;
      cmds->thunks = arena_memdup(ar, &q->thunks[k], sizeof *cmds->thunks * (size_t)cmds->n);
      out[n++] = (Thunk){.kind = THUNK_COMMAND_BUFFER, .trip_count = -1,
                         .commands = cmds};
      made++;
      k = end;
      continue;
    }
    if (end == k) {
      made += convert_nested(ar, &q->thunks[k], types, min_size);
      end = k + 1;
    }
    for (; k < end; k++)
      out[n++] = q->thunks[k];
  }
  if (made) {
    q->n = n;
    q->thunks = out;
  }
  return made;
}

int cmdbuf_convert(Artifact *a, unsigned types, int min_size) {
  if (!types)
    return 0;
  return convert_seq(a->arena, &a->entry, types, min_size < 1 ? 1 : min_size);
}
