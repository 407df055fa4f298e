/* The NCCL backend of runtime/comm for device buffers (built with CUDA when NCCL is found). Each group's
 * communicator is created once from a unique id its rank 0 draws (comm.c broadcasts it over MPI); collectives
 * run on the CUDA backend's stream, so they are ordered with the kernels around them and the host does not
 * wait for them. NCCL's ring and tree reductions give every rank the same bits, but unlike the MPI backend the
 * summation order depends on NCCL's algorithm choice (NCCL_ALGO, topology), not on the group size alone. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/comm/nccl_backend.h"
#include "runtime/ops/cuda/cuda_ops.h"

struct zt_nccl {
  ncclComm_t comm;
  int size, rank;
};

static cudaStream_t stream(void) { return (cudaStream_t)zt_cuda_stream(); }

static void check(ncclResult_t r, const char *op, const char *desc) {
  if (r != ncclSuccess)
    zt_fatal("comm", "NCCL %s on %s failed: %s (%s)", op, desc, ncclGetErrorString(r), ncclGetLastError(NULL));
}

int zt_nccl_built(void) { return 1; }
size_t zt_nccl_id_bytes(void) { return sizeof(ncclUniqueId); }

void zt_nccl_get_id(void *id) { check(ncclGetUniqueId((ncclUniqueId *)id), "ncclGetUniqueId", "this rank"); }

zt_nccl *zt_nccl_create(const void *id, int size, int rank, const char *desc) {
  zt_nccl *c = zt_calloc(1, sizeof *c, "comm: NCCL communicator");
  ncclUniqueId uid;
  memcpy(&uid, id, sizeof uid);
  check(ncclCommInitRank(&c->comm, size, uid, rank), "ncclCommInitRank", desc);
  c->size = size;
  c->rank = rank;
  return c;
}

void zt_nccl_destroy(zt_nccl *c) {
  if (!c) return;
  ncclCommDestroy(c->comm);
  free(c);
}

int zt_nccl_on_device(const void *p) {
  struct cudaPointerAttributes a;
  if (!p || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

void zt_nccl_sync(void) {
  cudaError_t e = cudaStreamSynchronize(stream());
  zt_check(e == cudaSuccess, "comm", "waiting for the NCCL stream failed: %s", cudaGetErrorString(e));
}

zt_nccl_type zt_nccl_type_of(zt_dtype dt) {
  return dt == ZT_DTYPE_BF16 ? ZT_NCCL_BF16 : dt == ZT_DTYPE_FP16 ? ZT_NCCL_F16 : ZT_NCCL_F32;
}

static ncclDataType_t nccl_type(zt_nccl_type t) {
  switch (t) {
    case ZT_NCCL_F64: return ncclFloat64;
    case ZT_NCCL_F16: return ncclFloat16;
    case ZT_NCCL_BF16: return ncclBfloat16;
    default: return ncclFloat32;
  }
}

void zt_nccl_allreduce(zt_nccl *c, const char *desc, void *buf, size_t n, zt_nccl_type t, zt_nccl_red op) {
  check(ncclAllReduce(buf, buf, n, nccl_type(t), op == ZT_NCCL_MAX ? ncclMax : ncclSum, c->comm, stream()),
        "ncclAllReduce", desc);
}

void zt_nccl_allgather(zt_nccl *c, const char *desc, const void *send, void *recv, size_t n_per_rank,
                       zt_nccl_type t) {
  check(ncclAllGather(send, recv, n_per_rank, nccl_type(t), c->comm, stream()), "ncclAllGather", desc);
}

void zt_nccl_reduce_scatter(zt_nccl *c, const char *desc, const void *send, void *recv, size_t n_per_rank,
                            zt_nccl_type t) {
  check(ncclReduceScatter(send, recv, n_per_rank, nccl_type(t), ncclSum, c->comm, stream()), "ncclReduceScatter",
        desc);
}

void zt_nccl_reduce(zt_nccl *c, const char *desc, float *buf, size_t n, int root) {
  check(ncclReduce(buf, buf, n, ncclFloat32, ncclSum, root, c->comm, stream()), "ncclReduce", desc);
}

void zt_nccl_broadcast(zt_nccl *c, const char *desc, void *buf, size_t bytes, int root) {
  check(ncclBroadcast(buf, buf, bytes, ncclUint8, root, c->comm, stream()), "ncclBroadcast", desc);
}

void zt_nccl_alltoall(zt_nccl *c, const char *desc, const void *send, void *recv, size_t block_bytes) {
  check(ncclGroupStart(), "ncclGroupStart", desc);
  for (int r = 0; r < c->size; r++) {
    check(ncclSend((const char *)send + block_bytes * (size_t)r, block_bytes, ncclUint8, r, c->comm, stream()),
          "ncclSend", desc);
    check(ncclRecv((char *)recv + block_bytes * (size_t)r, block_bytes, ncclUint8, r, c->comm, stream()),
          "ncclRecv", desc);
  }
  check(ncclGroupEnd(), "ncclGroupEnd", desc);
}

void zt_nccl_p2p(zt_nccl *c, const char *desc, const zt_p2p_op *ops, int n) {
  check(ncclGroupStart(), "ncclGroupStart", desc);
  for (int i = 0; i < n; i++) {
    if (ops[i].n == 0) continue;
    const ncclDataType_t t = nccl_type(zt_nccl_type_of(ops[i].dt));
    if (ops[i].send)
      check(ncclSend(ops[i].buf, ops[i].n, t, ops[i].peer, c->comm, stream()), "ncclSend", desc);
    else
      check(ncclRecv(ops[i].buf, ops[i].n, t, ops[i].peer, c->comm, stream()), "ncclRecv", desc);
  }
  check(ncclGroupEnd(), "ncclGroupEnd", desc);
}
