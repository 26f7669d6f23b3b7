/*
 * nccl.c - NCCL behind the CUDA platform's collectives (collective_nccl.c):
 * opening libnccl.so.2 with dlopen (found as cuBLASLt and cuDNN are,
 * cuda_libs.c, with the nvidia-nccl wheels' nvidia/nccl/lib), binding its
 * entry points, and the communicators of one GPU: one for each group of
 * devices it runs collectives with.
 *
 * A group's communicator is made the first time one of its collectives
 * runs: the group's first member makes a unique id (ncclGetUniqueId), the
 * members share it (coll_group_share: xchg_bcast over the run's exchange,
 * between threads of one process or over MPI between processes), and each
 * member joins with ncclCommInitRank from its own thread, its GPU current,
 * at its place in the group, so that NCCL's rank order is the group's order
 * (the order of an all-gather's pieces, a broadcast's root, the permute
 * pairs).
 * Only a group's members take part in making its communicator, so devices
 * that run different branches of a conditional meet nobody they do not run
 * collectives with.  A group of one has a communicator of one.
 *
 * Communicators are kept by their member list (the same group in another
 * thunk reuses it) and destroyed with the platform.  The library is never
 * unloaded.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "collective_exec.h"
#include "cuda_libs.h"

typedef struct NcclComm {
  char *members;                  /* "0,1,2,3": flattened ids, group order */
  ncclComm_t comm;
} NcclComm;

struct Nccl {
  void *lib;
  char *path;                     /* where it was found */
  NcclApi api;
  int version;                    /* ncclGetVersion: 21903 for 2.19.3 */
  int ncomms;
  NcclComm *comms;
};

static const char *const nccl_names[] = {"libnccl.so.2", NULL};
static const char *const nccl_wheels[] = {"nvidia/nccl/lib", NULL};
static const CudaLibSpec nccl_spec = {"NCCL", nccl_names, nccl_wheels};

static const CudaLibSym nccl_syms[] = {
#define SYM(field, name) {name, offsetof(NcclApi, field), false}
#define OPT(field, name) {name, offsetof(NcclApi, field), true}
  SYM(GetVersion, "ncclGetVersion"),
  SYM(GetUniqueId, "ncclGetUniqueId"),
  SYM(CommInitRank, "ncclCommInitRank"),
  SYM(CommDestroy, "ncclCommDestroy"),
  SYM(CommCount, "ncclCommCount"),
  SYM(CommUserRank, "ncclCommUserRank"),
  SYM(GetErrorString, "ncclGetErrorString"),
  OPT(GetLastError, "ncclGetLastError"),
  SYM(AllReduce, "ncclAllReduce"),
  SYM(AllGather, "ncclAllGather"),
  SYM(ReduceScatter, "ncclReduceScatter"),
  SYM(Broadcast, "ncclBroadcast"),
  SYM(Send, "ncclSend"),
  SYM(Recv, "ncclRecv"),
  SYM(GroupStart, "ncclGroupStart"),
  SYM(GroupEnd, "ncclGroupEnd"),
#undef OPT
#undef SYM
};

/* "2.19.3" from ncclGetVersion's number (major*1000 + ... before 2.9). */
static void version_text(int v, char *out, size_t cap) {
  if (v >= 20900) snprintf(out, cap, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  else snprintf(out, cap, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

bool nccl_open(Nccl **nc, const char *lib_path, Diag *d) {
  if (*nc) return true;
  Nccl *n = xcalloc(1, sizeof *n);
  if (!cuda_lib_open(&nccl_spec, lib_path, &n->lib, &n->path, d) ||
      !cuda_lib_bind(n->lib, n->path, nccl_syms, ARRAY_LEN(nccl_syms), &n->api, d)) {
    free(n->path);
    free(n);
    return false;
  }
  ncclResult_t r = n->api.GetVersion(&n->version);
  if (r != ncclSuccess || n->version < XHLO_NCCL_MIN_VERSION) {
    char v[32];
    version_text(n->version, v, sizeof v);
    diag_error(d, (Loc){0}, "%s is NCCL %s; collectives need NCCL 2.10 or newer (give "
               "the folder of a newer libnccl.so.2 with --lib-path=DIRS)",
               n->path, r == ncclSuccess ? v : "of an unknown version");
    free(n->path);
    free(n);
    return false;
  }
  *nc = n;
  return true;
}

const NcclApi *nccl_api(const Nccl *nc) { return &nc->api; }

bool nccl_check(const Nccl *nc, ncclResult_t r, const char *what, Diag *d) {
  if (r == ncclSuccess) return true;
  const char *text = nc->api.GetErrorString(r);
  const char *last = nc->api.GetLastError ? nc->api.GetLastError(NULL) : NULL;
  return diag_error(d, (Loc){0}, "NCCL: %s failed: %s (%d)%s%s", what,
                    text ? text : "unknown error", (int)r,
                    last && *last ? "; NCCL's last error: " : "", last && *last ? last : "");
}

bool nccl_comm(Nccl *nc, const CollGroup *g, ncclComm_t *out, Diag *d) {
  StrBuf key;
  sb_init(&key);
  for (int k = 0; k < g->n; k++) sb_printf(&key, "%s%lld", k ? "," : "", (long long)g->members[k]);
  for (int k = 0; k < nc->ncomms; k++)
    if (strcmp(nc->comms[k].members, key.s) == 0) {
      *out = nc->comms[k].comm;
      sb_free(&key);
      return true;
    }
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclComm_t comm = NULL;
  int count = 0, rank = -1;
  bool ok = (g->me != 0 || nccl_check(nc, nc->api.GetUniqueId(&id), "ncclGetUniqueId", d)) &&
            coll_group_share(g, &id, sizeof id, d) &&
            nccl_check(nc, nc->api.CommInitRank(&comm, g->n, id, g->me), "ncclCommInitRank", d);
  if (ok && (!nccl_check(nc, nc->api.CommCount(comm, &count), "ncclCommCount", d) ||
             !nccl_check(nc, nc->api.CommUserRank(comm, &rank), "ncclCommUserRank", d)))
    ok = false;
  if (ok && (count != g->n || rank != g->me))
    ok = diag_error(d, (Loc){0}, "NCCL: the communicator of devices {%s} has %d ranks and "
                    "this device is rank %d; expected %d and %d", key.s, count, rank, g->n,
                    g->me);
  if (!ok) {
    if (comm) nc->api.CommDestroy(comm);
    sb_free(&key);
    return false;
  }
  nc->comms = xreallocarray(nc->comms, (size_t)nc->ncomms + 1, sizeof *nc->comms);
  nc->comms[nc->ncomms].members = sb_detach(&key);
  nc->comms[nc->ncomms++].comm = comm;
  *out = comm;
  return true;
}

void nccl_free(Nccl *nc) {
  if (!nc) return;
  for (int k = 0; k < nc->ncomms; k++) {
    nc->api.CommDestroy(nc->comms[k].comm);
    free(nc->comms[k].members);
  }
  free(nc->comms);
  free(nc->path);
  free(nc);
}
