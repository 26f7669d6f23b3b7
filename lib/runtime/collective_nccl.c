/*
 * collective_nccl.c - collective thunks through NCCL on the CUDA platform
 * (platform.h: coll_takes, coll_run).  Each GPU's executor hands its own
 * slices to NCCL on the executor's stream, with the communicator of its
 * group (nccl.c), whose ranks are the group's members in group order; all
 * of a thunk's calls go in one ncclGroupStart / ncclGroupEnd.  The results
 * are collective_exec.c's (which stays the reference):
 *
 *   all-reduce      ncclAllReduce per operand (pred: or and and as the max
 *                   and min of 0/1 bytes)
 *   reduce-scatter  ncclReduceScatter per block of the dimensions more
 *                   major than the scatter dimension (one call when those
 *                   are all 1, as XLA:GPU's layouts make them)
 *   all-gather      ncclAllGather per such block
 *   all-to-all      ncclSend and ncclRecv of each chunk with each other
 *                   member (the tuple form: operand k to member k), a
 *                   device copy for its own
 *   collective-permute  ncclSend to the members this one is the source
 *                   of, ncclRecv from its source (a device copy when it is
 *                   its own), zeros when none is
 *   collective-broadcast  ncclBroadcast from the first member
 *
 * A block is a run of bytes in the slices' physical order: the dimensions
 * more major than the collective's dimension (in minor_to_major) index the
 * blocks, the rest lie within one.  So NCCL takes a thunk whose operands
 * and results have the same layout (and the same dimensions, but for the
 * gathered or scattered one); the element type matters only where NCCL
 * reduces: s8, u8, s32, u32, s64, u64, f16, bf16, f32, f64 and pred.  A
 * thunk NCCL does not take (another reduced type, other layouts, operand
 * and result slices that overlap other than in place) is staged through
 * host memory, as on the host.
 *
 * NCCL sums in its own order (a ring or a tree), so a floating-point sum
 * may round otherwise than the host's left-to-right fold; its min and max
 * of floats drop a NaN (fminf, fmaxf) where the host's propagate it, as
 * XLA:GPU's do.
 */
#include <stdlib.h>
#include <string.h>

#include "collective_exec.h"
#include "cuda_libs.h"

/* The NCCL type and operator of a reduction of et; false: none. */
static bool reduction(ElemType et, CollReduction red, ncclDataType_t *t, ncclRedOp_t *op) {
  static const ncclRedOp_t ops[] = {
    [COLL_SUM] = ncclSum, [COLL_PRODUCT] = ncclProd, [COLL_MIN] = ncclMin,
    [COLL_MAX] = ncclMax,
  };
  *op = ops[red];
  switch (et) {
  case ET_PRED:
    /* or (sum) and and (product) of 0/1 */
    *t = ncclUint8;
    *op = red == COLL_SUM || red == COLL_MAX ? ncclMax : ncclMin;
    return true;
  case ET_S8: *t = ncclInt8; return true;
  case ET_U8: *t = ncclUint8; return true;
  case ET_S32: *t = ncclInt32; return true;
  case ET_U32: *t = ncclUint32; return true;
  case ET_S64: *t = ncclInt64; return true;
  case ET_U64: *t = ncclUint64; return true;
  case ET_F16: *t = ncclFloat16; return true;
  case ET_BF16: *t = ncclBfloat16; return true;
  case ET_F32: *t = ncclFloat32; return true;
  case ET_F64: *t = ncclFloat64; return true;
  default: return false;
  }
}

/* minor_to_major[k] (the identity's when there is no layout) */
static int64_t m2m(const Shape *s, int k) {
  return s->layout ? s->layout->minor_to_major[k] : s->rank - 1 - k;
}

/* Same rank, element type and physical order; the same dimensions but
 * for dim (-1: all the same). */
static bool alike(const Shape *a, const Shape *b, int64_t dim) {
  if (a->rank != b->rank || a->et != b->et) return false;
  for (int k = 0; k < a->rank; k++)
    if (m2m(a, k) != m2m(b, k) || (k != dim && a->dims[k] != b->dims[k])) return false;
  return true;
}

/* Elements of the blocks around dimension d in physical order: outer,
 * the product of the dimensions more major than d; inner, of d and the
 * more minor ones. */
static void blocks(const Shape *s, int64_t d, int64_t *outer, int64_t *inner) {
  *outer = *inner = 1;
  bool minor = true;
  for (int k = 0; k < s->rank; k++) {
    int64_t dim = m2m(s, k);
    *(minor ? inner : outer) *= s->dims[dim];
    if (dim == d) minor = false;
  }
}

static bool overlap(BufSlice a, BufSlice b) {
  return a.alloc == b.alloc && a.offset < b.offset + b.size && b.offset < a.offset + a.size &&
         a.size && b.size;
}

bool nccl_coll_takes(const CollExec *x) {
  const CollDesc *c = x->t->coll;
  if (c->n < 1) return false;
  int64_t dim = c->dim;
  for (int k = 0; k < c->n; k++) {
    const Shape *is = x->in[k], *os = x->out[k];
    if (!is || !os || (et_bits(is->et) % 8 != 0 && is->et != ET_PRED) || et_bytes(is->et) < 1)
      return false;
    ncclDataType_t t;
    ncclRedOp_t op;
    switch (c->kind) {
    case COLL_ALL_REDUCE:
      if (!alike(is, os, -1) || !reduction(is->et, c->reduction, &t, &op)) return false;
      break;
    case COLL_REDUCE_SCATTER:
      if (dim < 0 || dim >= is->rank || !alike(is, os, dim) ||
          !reduction(is->et, c->reduction, &t, &op))
        return false;
      break;
    case COLL_ALL_GATHER:
      if (dim < 0 || dim >= is->rank || !alike(is, os, dim)) return false;
      break;
    case COLL_ALL_TO_ALL:
      /* the tuple form moves whole operands between them: all alike */
      if (!alike(is, os, -1) || (dim < 0 && !alike(is, x->in[0], -1)) ||
          (dim >= is->rank))
        return false;
      break;
    case COLL_COLLECTIVE_PERMUTE:
    case COLL_COLLECTIVE_BROADCAST:
      if (!alike(is, os, -1)) return false;
      break;
    default:
      return false;
    }
    /* NCCL reads operands while it writes results: only all-reduce and
     * broadcast may work in place, operand k in result k */
    for (int j = 0; j < c->n; j++)
      if (overlap(c->in[k], c->out[j]) &&
          !(j == k && c->in[k].offset == c->out[j].offset && c->in[k].size == c->out[j].size &&
            (c->kind == COLL_ALL_REDUCE || c->kind == COLL_COLLECTIVE_BROADCAST)))
        return false;
  }
  return true;
}

/* Writes zeros over n bytes at dst (a permute's result no source sends). */
static bool zero(Platform *p, DevPtr dst, int64_t n, Diag *d) {
  if (n == 0) return true;
  if (dst % 4 == 0 && n % 4 == 0) return p->memset32(p, dst, 0, (size_t)n / 4, d);
  uint8_t *z = xcalloc(1, (size_t)n);
  bool ok = p->copy_h2d(p, dst, z, (size_t)n, d);
  free(z);
  return ok;
}

static void *ptr(DevPtr a) { return (void *)(uintptr_t)a; }

typedef struct Call {
  const Nccl *nc;
  const NcclApi *A;
  ncclComm_t comm;
  void *stream;
} Call;

/* The NCCL calls of operand k, inside the group. */
static bool issue(const Call *cl, const CollExec *x, const CollGroup *g, int k,
                  const DevPtr *in, const DevPtr *out, Diag *d) {
  const CollDesc *c = x->t->coll;
  const NcclApi *A = cl->A;
  const Shape *is = x->in[k];
  int n = g->n, me = g->me;
  int64_t eb = et_bytes(is->et), outer, inner;
  ncclDataType_t t = ncclUint8;
  ncclRedOp_t op = ncclSum;
  switch (c->kind) {
  case COLL_ALL_REDUCE:
    reduction(is->et, c->reduction, &t, &op);
    if (x->in_bytes[k] != x->out_bytes[k])
      return diag_error(d, (Loc){0}, "result size does not match");
    return x->in_bytes[k] == 0 ||
           nccl_check(cl->nc, A->AllReduce(ptr(in[k]), ptr(out[k]),
                                           (size_t)(x->in_bytes[k] / eb), t, op, cl->comm,
                                           cl->stream),
                      "ncclAllReduce", d);
  case COLL_REDUCE_SCATTER: {
    reduction(is->et, c->reduction, &t, &op);
    blocks(is, c->dim, &outer, &inner);
    if (is->dims[c->dim] % n)
      return diag_error(d, (Loc){0}, "bad scatter dimension");
    int64_t ce = inner / n;         /* elements each member gets per block */
    if (outer * ce * eb != x->out_bytes[k])
      return diag_error(d, (Loc){0}, "result size does not match");
    for (int64_t o = 0; o < outer && ce; o++)
      if (!nccl_check(cl->nc, A->ReduceScatter(ptr(in[k] + (DevPtr)(o * inner * eb)),
                                               ptr(out[k] + (DevPtr)(o * ce * eb)),
                                               (size_t)ce, t, op, cl->comm, cl->stream),
                      "ncclReduceScatter", d))
        return false;
    return true;
  }
  case COLL_ALL_GATHER: {
    blocks(is, c->dim, &outer, &inner);
    int64_t cb = inner * eb;        /* bytes each member brings per block */
    if (cb * outer * n != x->out_bytes[k])
      return diag_error(d, (Loc){0}, "result size does not match");
    for (int64_t o = 0; o < outer && cb; o++)
      if (!nccl_check(cl->nc, A->AllGather(ptr(in[k] + (DevPtr)(o * cb)),
                                           ptr(out[k] + (DevPtr)(o * n * cb)), (size_t)cb,
                                           ncclInt8, cl->comm, cl->stream),
                      "ncclAllGather", d))
        return false;
    return true;
  }
  case COLL_ALL_TO_ALL: {
    if (c->dim < 0) {
      /* operand k to member k, result k from member k */
      if (k == me || x->in_bytes[k] == 0) return true;
      return nccl_check(cl->nc, A->Send(ptr(in[k]), (size_t)x->in_bytes[k], ncclInt8, k,
                                        cl->comm, cl->stream), "ncclSend", d) &&
             nccl_check(cl->nc, A->Recv(ptr(out[k]), (size_t)x->out_bytes[k], ncclInt8, k,
                                        cl->comm, cl->stream), "ncclRecv", d);
    }
    blocks(is, c->dim, &outer, &inner);
    if (is->dims[c->dim] % n)
      return diag_error(d, (Loc){0}, "bad all-to-all dimension");
    int64_t cb = inner / n * eb;    /* one chunk */
    for (int64_t o = 0; o < outer && cb; o++)
      for (int m = 0; m < n; m++) {
        if (m == me) continue;
        DevPtr at = (DevPtr)((o * n + m) * cb);
        if (!nccl_check(cl->nc, A->Send(ptr(in[k] + at), (size_t)cb, ncclInt8, m, cl->comm,
                                        cl->stream), "ncclSend", d) ||
            !nccl_check(cl->nc, A->Recv(ptr(out[k] + at), (size_t)cb, ncclInt8, m, cl->comm,
                                        cl->stream), "ncclRecv", d))
          return false;
      }
    return true;
  }
  case COLL_COLLECTIVE_BROADCAST:
    return x->in_bytes[k] == 0 ||
           nccl_check(cl->nc, A->Broadcast(ptr(in[k]), ptr(out[k]), (size_t)x->in_bytes[k],
                                           ncclInt8, 0, cl->comm, cl->stream),
                      "ncclBroadcast", d);
  default:
    return diag_error(d, (Loc){0}, "no NCCL call for this collective");
  }
}

/* The member whose pair targets member m (the last such pair, as on the
 * host); -1: none. */
static int source_of(const CollDesc *c, int n, int m) {
  int src = -1;
  for (int q = 0; q < c->npairs; q++)
    if (c->pairs[q][1] == m && c->pairs[q][0] < n) src = (int)c->pairs[q][0];
  return src;
}

/* A permute's sends and receive for operand k, inside the group. */
static bool issue_permute(const Call *cl, const CollExec *x, const CollGroup *g, int k,
                          const DevPtr *in, const DevPtr *out, Diag *d) {
  const CollDesc *c = x->t->coll;
  size_t bytes = (size_t)x->in_bytes[k];
  if (!bytes) return true;
  for (int m = 0; m < g->n; m++)
    if (m != g->me && source_of(c, g->n, m) == g->me &&
        !nccl_check(cl->nc, cl->A->Send(ptr(in[k]), bytes, ncclInt8, m, cl->comm, cl->stream),
                    "ncclSend", d))
      return false;
  int src = source_of(c, g->n, g->me);
  return src < 0 || src == g->me ||
         nccl_check(cl->nc, cl->A->Recv(ptr(out[k]), bytes, ncclInt8, src, cl->comm,
                                        cl->stream), "ncclRecv", d);
}

/* What NCCL does not move: a member's own chunks and results, and zeros. */
static bool local_part(Platform *p, const CollExec *x, const CollGroup *g, const DevPtr *in,
                       const DevPtr *out, Diag *d) {
  const CollDesc *c = x->t->coll;
  int n = g->n, me = g->me;
  for (int k = 0; k < c->n; k++) {
    if (c->kind == COLL_COLLECTIVE_PERMUTE) {
      int src = source_of(c, n, me);
      if (src < 0 && !zero(p, out[k], x->out_bytes[k], d)) return false;
      if (src == me && x->in_bytes[k] &&
          !p->copy_d2d(p, out[k], in[k], (size_t)x->in_bytes[k], d))
        return false;
    } else if (c->kind == COLL_ALL_TO_ALL && c->dim < 0) {
      if (k == me && x->in_bytes[k] &&
          !p->copy_d2d(p, out[k], in[k], (size_t)x->in_bytes[k], d))
        return false;
    } else if (c->kind == COLL_ALL_TO_ALL) {
      int64_t outer, inner, eb = et_bytes(x->in[k]->et);
      blocks(x->in[k], c->dim, &outer, &inner);
      int64_t cb = inner / n * eb;
      for (int64_t o = 0; o < outer && cb; o++) {
        DevPtr at = (DevPtr)((o * n + me) * cb);
        if (!p->copy_d2d(p, out[k] + at, in[k] + at, (size_t)cb, d)) return false;
      }
    }
  }
  return true;
}

bool nccl_coll_run(Nccl **nc, const char *lib_path, Platform *p, void *stream, CollExec *x,
                   const CollGroup *g, const DevPtr *in, const DevPtr *out, Diag *d) {
  const CollDesc *c = x->t->coll;
  if (!nccl_open(nc, lib_path, d)) return false;
  Call cl = {.nc = *nc, .A = nccl_api(*nc), .stream = stream};
  if (!x->dev) {
    ncclComm_t comm;
    if (!nccl_comm(*nc, g, &comm, d)) return false;
    x->dev = comm;
  }
  cl.comm = x->dev;
  if (!nccl_check(cl.nc, cl.A->GroupStart(), "ncclGroupStart", d)) return false;
  bool ok = true;
  for (int k = 0; ok && k < c->n; k++)
    ok = c->kind == COLL_COLLECTIVE_PERMUTE ? issue_permute(&cl, x, g, k, in, out, d)
                                            : issue(&cl, x, g, k, in, out, d);
  /* the group is ended whatever happened in it (NCCL's group state is the
   * thread's); the first error is the one reported */
  ncclResult_t r = cl.A->GroupEnd();
  if (ok) ok = nccl_check(cl.nc, r, "ncclGroupEnd", d);
  return ok && local_part(p, x, g, in, out, d);
}
