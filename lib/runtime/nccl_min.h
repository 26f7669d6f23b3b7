/*
 * nccl_min.h - the subset of NCCL's nccl.h that nccl.c and
 * collective_nccl.c use: handle types, result codes, data types and
 * reduction operators, with the names, values and ABI of NVIDIA's header
 * (NCCL 2.10 and later).  No functions are declared: libnccl.so.2 is opened
 * with dlopen and its entry points looked up by name (nccl.c), so xhlo-run
 * builds without NCCL installed.
 */
#ifndef XHLOC_NCCL_MIN_H
#define XHLOC_NCCL_MIN_H

typedef struct ncclComm *ncclComm_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

/* ncclCommSplit's color for a rank that joins no new communicator */
#define NCCL_SPLIT_NOCOLOR (-1)

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
} ncclDataType_t;

/* NCCL_VERSION(2, 10, 0): the oldest NCCL used (bfloat16 came with it) */
#define XHLO_NCCL_MIN_VERSION 21000

#endif
