/*
 * mpi_min.h - the part of OpenMPI's ABI (mpi.h of OpenMPI 4 and 5) that
 * exchange_mpi.c uses, so that xhlo-run builds without MPI's headers and
 * opens libmpi with dlopen at run time.  In OpenMPI a handle (MPI_Comm,
 * MPI_Datatype, MPI_Op, MPI_Errhandler) is a pointer, and the predefined
 * ones are the addresses of global objects (MPI_COMM_WORLD is
 * &ompi_mpi_comm_world), which dlsym gives.  tests/unit/test_exchange.c
 * checks these declarations against mpi.h where libopenmpi-dev is there.
 */
#ifndef XHLOC_MPI_MIN_H
#define XHLOC_MPI_MIN_H

#include <stddef.h>

typedef struct ompi_communicator_t *XMPI_Comm;
typedef struct ompi_datatype_t *XMPI_Datatype;
typedef struct ompi_op_t *XMPI_Op;
typedef struct ompi_request_t *XMPI_Request;
typedef struct ompi_errhandler_t *XMPI_Errhandler;

typedef struct XMPI_Status {
  int MPI_SOURCE;
  int MPI_TAG;
  int MPI_ERROR;
  int _cancelled;                  /* OpenMPI's own */
  size_t _ucount;
} XMPI_Status;

#define XMPI_SUCCESS 0
#define XMPI_ANY_SOURCE (-1)
#define XMPI_ANY_TAG (-1)
#define XMPI_STATUS_IGNORE ((XMPI_Status *)0)
#define XMPI_MAX_ERROR_STRING 256  /* OpenMPI's; the buffer we give */
#define XMPI_THREAD_SERIALIZED 2

/* The functions, as libmpi exports them. */
typedef int (*XMPI_Init_thread_fn)(int *argc, char ***argv, int required, int *provided);
typedef int (*XMPI_Initialized_fn)(int *flag);
typedef int (*XMPI_Finalize_fn)(void);
typedef int (*XMPI_Comm_rank_fn)(XMPI_Comm comm, int *rank);
typedef int (*XMPI_Comm_size_fn)(XMPI_Comm comm, int *size);
typedef int (*XMPI_Comm_set_errhandler_fn)(XMPI_Comm comm, XMPI_Errhandler e);
typedef int (*XMPI_Isend_fn)(const void *buf, int count, XMPI_Datatype type, int dest,
                             int tag, XMPI_Comm comm, XMPI_Request *req);
typedef int (*XMPI_Irecv_fn)(void *buf, int count, XMPI_Datatype type, int source,
                             int tag, XMPI_Comm comm, XMPI_Request *req);
typedef int (*XMPI_Cancel_fn)(XMPI_Request *req);
typedef int (*XMPI_Request_free_fn)(XMPI_Request *req);
typedef int (*XMPI_Test_fn)(XMPI_Request *req, int *flag, XMPI_Status *status);
typedef int (*XMPI_Iprobe_fn)(int source, int tag, XMPI_Comm comm, int *flag,
                              XMPI_Status *status);
typedef int (*XMPI_Get_count_fn)(const XMPI_Status *status, XMPI_Datatype type,
                                 int *count);
typedef int (*XMPI_Error_string_fn)(int code, char *s, int *len);
typedef int (*XMPI_Allreduce_fn)(const void *send, void *recv, int count,
                                 XMPI_Datatype type, XMPI_Op op, XMPI_Comm comm);

#endif
