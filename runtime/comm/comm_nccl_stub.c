/* Builds without CUDA or NCCL: no NCCL backend (zt_comm_enable_nccl refuses; no buffer is a device buffer). */
#include "runtime/base/error.h"
#include "runtime/comm/nccl_backend.h"

int zt_nccl_built(void) { return 0; }
size_t zt_nccl_id_bytes(void) { return 0; }
__attribute__((noreturn)) static void unbuilt(void) { zt_fatal("comm", "this build has no NCCL backend (built without CUDA or NCCL)"); }
void zt_nccl_get_id(void *id) { (void)id; unbuilt(); }
zt_nccl *zt_nccl_create(const void *id, int size, int rank, const char *desc) {
  (void)id, (void)size, (void)rank, (void)desc;
  unbuilt();
}
void zt_nccl_destroy(zt_nccl *c) { (void)c; }
int zt_nccl_on_device(const void *p) { (void)p; return 0; }
void zt_nccl_sync(void) {}
zt_nccl_type zt_nccl_type_of(zt_dtype dt) { return dt == ZT_DTYPE_BF16 ? ZT_NCCL_BF16 : dt == ZT_DTYPE_FP16 ? ZT_NCCL_F16 : ZT_NCCL_F32; }
void zt_nccl_allreduce(zt_nccl *c, const char *desc, void *buf, size_t n, zt_nccl_type t, zt_nccl_red op) {
  (void)c, (void)desc, (void)buf, (void)n, (void)t, (void)op;
  unbuilt();
}
void zt_nccl_allgather(zt_nccl *c, const char *desc, const void *send, void *recv, size_t n_per_rank,
                       zt_nccl_type t) {
  (void)c, (void)desc, (void)send, (void)recv, (void)n_per_rank, (void)t;
  unbuilt();
}
void zt_nccl_reduce_scatter(zt_nccl *c, const char *desc, const void *send, void *recv, size_t n_per_rank,
                            zt_nccl_type t) {
  (void)c, (void)desc, (void)send, (void)recv, (void)n_per_rank, (void)t;
  unbuilt();
}
void zt_nccl_reduce(zt_nccl *c, const char *desc, float *buf, size_t n, int root) {
  (void)c, (void)desc, (void)buf, (void)n, (void)root;
  unbuilt();
}
void zt_nccl_broadcast(zt_nccl *c, const char *desc, void *buf, size_t bytes, int root) {
  (void)c, (void)desc, (void)buf, (void)bytes, (void)root;
  unbuilt();
}
void zt_nccl_alltoall(zt_nccl *c, const char *desc, const void *send, void *recv, size_t block_bytes) {
  (void)c, (void)desc, (void)send, (void)recv, (void)block_bytes;
  unbuilt();
}
void zt_nccl_p2p(zt_nccl *c, const char *desc, const zt_p2p_op *ops, int n) {
  (void)c, (void)desc, (void)ops, (void)n;
  unbuilt();
}
