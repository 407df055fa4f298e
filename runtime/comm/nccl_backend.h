/* Internal to runtime/comm: the NCCL half of the collectives (comm_nccl.c; comm_nccl_stub.c in builds without
 * CUDA or NCCL). comm.c bootstraps each communicator (the unique id broadcast over the group's MPI
 * communicator) and routes device buffers here. Every call enqueues on the CUDA backend's stream and returns;
 * failures end the job naming the operation and the group (desc). */
#ifndef ZT_NCCL_BACKEND_H
#define ZT_NCCL_BACKEND_H

#include <stddef.h>

#include "runtime/comm/comm.h"

typedef struct zt_nccl zt_nccl;
typedef enum { ZT_NCCL_F32, ZT_NCCL_F64, ZT_NCCL_F16, ZT_NCCL_BF16 } zt_nccl_type;
typedef enum { ZT_NCCL_SUM, ZT_NCCL_MAX } zt_nccl_red;
/* The NCCL element type of a storage dtype. */
zt_nccl_type zt_nccl_type_of(zt_dtype dt);

int zt_nccl_built(void);            /* 1 when this build has the NCCL backend */
size_t zt_nccl_id_bytes(void);      /* size of a unique id (NCCL_UNIQUE_ID_BYTES) */
void zt_nccl_get_id(void *id);      /* on the group's rank 0 */
zt_nccl *zt_nccl_create(const void *id, int size, int rank, const char *desc);
void zt_nccl_destroy(zt_nccl *c);
int zt_nccl_on_device(const void *p); /* p points into device (or managed) memory */
void zt_nccl_sync(void);              /* waits for the stream (the comms logger's timings) */

void zt_nccl_allreduce(zt_nccl *c, const char *desc, void *buf, size_t n, zt_nccl_type t, zt_nccl_red op);
void zt_nccl_allgather(zt_nccl *c, const char *desc, const void *send, void *recv, size_t n_per_rank, zt_nccl_type t);
void zt_nccl_reduce_scatter(zt_nccl *c, const char *desc, const void *send, void *recv, size_t n_per_rank,
                            zt_nccl_type t);
void zt_nccl_reduce(zt_nccl *c, const char *desc, float *buf, size_t n, int root);
void zt_nccl_broadcast(zt_nccl *c, const char *desc, void *buf, size_t bytes, int root);
/* All-to-all of equal blocks of block_bytes: one ncclSend and one ncclRecv per rank (itself included) in one group
 * call, NCCL's documented all-to-all. */
void zt_nccl_alltoall(zt_nccl *c, const char *desc, const void *send, void *recv, size_t block_bytes);
/* Sends and receives (each in its op's dt) in one NCCL group call (ncclGroupStart/End): batch_isend_irecv. */
void zt_nccl_p2p(zt_nccl *c, const char *desc, const zt_p2p_op *ops, int n);

#endif
