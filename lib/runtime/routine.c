/*
 * routine.c - routine descriptors (routine.h): their names, the structural
 * check the thunk file reader, the writer and the executor run on them, and
 * their one-line text for --stage=thunks and xhlo-run --describe.
 */
#include "thunks.h"

#include <string.h>

const char *routine_kind_name(RoutineKind k) {
  switch (k) {
  case ROUTINE_REDUCE: return "reduce";
  case ROUTINE_TOPK: return "topk";
  }
  return "?";
}

const char *routine_op_name(RoutineOp op) {
  switch (op) {
  case ROUTINE_ADD: return "add";
  case ROUTINE_MAX: return "max";
  case ROUTINE_MIN: return "min";
  }
  return "?";
}

static Loc noloc(void) { return (Loc){0}; }

/* a * b * c, or -1 when any is negative or the product overflows. */
static int64_t product3(int64_t a, int64_t b, int64_t c) {
  if (a < 0 || b < 0 || c < 0)
    return -1;
  if (a != 0 && b > INT64_MAX / a)
    return -1;
  int64_t ab = a * b;
  if (ab != 0 && c > INT64_MAX / ab)
    return -1;
  return ab * c;
}

/* Slice `what` holds exactly elems elements of et. */
static bool sized(const char *what, BufSlice s, ElemType et, int64_t elems,
                  Diag *d) {
  if (s.alloc < 0)
    return diag_error(d, noloc(), "routine thunk: the %s slice is missing", what);
  int64_t bytes = product3(elems, et_bytes(et), 1);
  if (bytes < 0 || bytes != s.size)
    return diag_error(d, noloc(), "routine thunk: the %s slice has %lld bytes, "
                      "not the %lld of its array", what, (long long)s.size,
                      (long long)bytes);
  return true;
}

bool routine_check(const RoutineDesc *r, const BufSlice lib[], Diag *d) {
  if (!r)
    return diag_error(d, noloc(), "routine thunk without its descriptor");
  for (int k = ROUTINE_NSLICES; k < LIB_MAX_SLICES; k++)
    if (lib[k].alloc >= 0)
      return diag_error(d, noloc(), "routine thunk: a slice %d it does not use", k);
  switch (r->kind) {
  case ROUTINE_REDUCE:
    if (r->et != ET_F32)
      return diag_error(d, noloc(), "routine thunk: no reduce routine for %s",
                        et_name(r->et));
    if ((unsigned)r->op > ROUTINE_MIN)
      return diag_error(d, noloc(), "routine thunk: unknown reducer %d", (int)r->op);
    if (r->outer < 1 || r->size < 1 || r->inner < 1 || product3(r->outer, r->size, r->inner) < 0)
      return diag_error(d, noloc(), "routine thunk: reduce sizes %lld, %lld, %lld",
                        (long long)r->outer, (long long)r->size, (long long)r->inner);
    if (r->init != r->init || (double)(float)r->init != r->init)
      return diag_error(d, noloc(), "routine thunk: an init value that is NaN or not "
                        "an f32");
    if (lib[ROUTINE_INDICES].alloc >= 0)
      return diag_error(d, noloc(), "routine thunk: an indices slice for a reduce");
    return sized("input", lib[ROUTINE_X], r->et, product3(r->outer, r->size, r->inner), d) &&
           sized("result", lib[ROUTINE_Y], r->et, product3(r->outer, r->inner, 1), d);
  case ROUTINE_TOPK:
    if (r->et != ET_F32)
      return diag_error(d, noloc(), "routine thunk: no top-k routine for %s",
                        et_name(r->et));
    if (r->rows < 1 || r->n < 1 || r->k < 1 || r->k > r->n || r->n > INT32_MAX ||
        product3(r->rows, r->n, 1) < 0)
      return diag_error(d, noloc(), "routine thunk: top-k sizes rows %lld, n %lld, k %lld",
                        (long long)r->rows, (long long)r->n, (long long)r->k);
    return sized("input", lib[ROUTINE_X], ET_F32, product3(r->rows, r->n, 1), d) &&
           sized("values", lib[ROUTINE_Y], ET_F32, product3(r->rows, r->k, 1), d) &&
           sized("indices", lib[ROUTINE_INDICES], ET_S32, product3(r->rows, r->k, 1), d);
  }
  return diag_error(d, noloc(), "routine thunk: unknown routine %d", (int)r->kind);
}

static void put_slice(StrBuf *b, const char *name, BufSlice s) {
  if (s.alloc < 0)
    return;
  sb_printf(b, ", %s = {index:%d, offset:%lld, size:%lld}", name, (int)s.alloc,
            (long long)s.offset, (long long)s.size);
}

void routine_print(StrBuf *b, const RoutineDesc *r, const BufSlice lib[]) {
  if (r->kind == ROUTINE_REDUCE) {
    sb_printf(b, ", reduce = %s, type = %s, init = %g, x = [%lld,%lld,%lld] -> [%lld,%lld]",
              routine_op_name(r->op), et_name(r->et), r->init, (long long)r->outer,
              (long long)r->size, (long long)r->inner, (long long)r->outer,
              (long long)r->inner);
    put_slice(b, "input", lib[ROUTINE_X]);
    put_slice(b, "output", lib[ROUTINE_Y]);
    return;
  }
  sb_printf(b, ", batch_size = %lld, input_size = %lld, k = %lld, largest = %s",
            (long long)r->rows, (long long)r->n, (long long)r->k,
            r->largest ? "true" : "false");
  put_slice(b, "values", lib[ROUTINE_X]);
  put_slice(b, "output", lib[ROUTINE_Y]);
  put_slice(b, "indices", lib[ROUTINE_INDICES]);
}
