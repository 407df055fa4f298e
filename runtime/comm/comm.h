/* Collective communication: start-up, process groups and the collectives the parallel layers need (allreduce,
 * allgather, reduce-scatter, all-to-all, broadcast, point-to-point, barrier), over MPI for CPU buffers and over NCCL for
 * device buffers (zt_comm_enable_nccl).
 * Every MPI failure ends the job through zt_fatal naming the operation, the group and the sizes. */
#ifndef ZT_COMM_H
#define ZT_COMM_H

#include <stddef.h>

#include "runtime/base/dtype.h"

/* A set of world ranks (in the order given at creation) with its own MPI communicator. */
typedef struct zt_group zt_group;

/* Starts MPI (MPI_Init_thread, FUNNELED: only the main thread calls MPI), sets zt_set_rank(world rank,
 * world size) and installs a fatal hook so zt_fatal on any rank aborts the whole job (MPI_Abort).
 * Works under mpirun, srun (--mpi=pmix) and as a plain process (a world of 1). Call once, early. */
void zt_comm_init(int *argc, char ***argv);
/* Frees the groups' communicators still alive and ends MPI. Every rank must call it. */
void zt_comm_finalize(void);
int zt_comm_rank(void);
int zt_comm_size(void);
/* This process's rank among the processes of its node (shared memory), and how many there are (*local_size):
 * which GPU of the node a process drives. Collective over the world. */
int zt_comm_local_rank(int *local_size);

/* All processes, world rank order. */
const zt_group *zt_comm_world(void);
/* Collective over the listed members only (MPI_Comm_create_group): every rank may call it with the same
 * list; ranks not in the list get NULL without communicating. Members calling for several groups must
 * create them in the same order. Group rank i is world rank world_ranks[i]. */
zt_group *zt_group_create(const int *world_ranks, int n);
void zt_group_free(zt_group *g); /* members only; NULL is fine */
int zt_group_rank(const zt_group *g);
int zt_group_size(const zt_group *g);
int zt_group_world_rank(const zt_group *g, int group_rank); /* world rank of a member */

/* Sums in place over the group. Deterministic: a fixed ring order (reduce-scatter then allgather, written
 * over MPI_Sendrecv), so every rank gets bitwise the same result and a rerun with the same group size and n
 * gets the same bits. (Results can differ in the last bits between different group sizes.) */
void zt_allreduce_sum_f32(const zt_group *g, float *buf, size_t n);
void zt_allreduce_sum_f64(const zt_group *g, double *buf, size_t n);
void zt_allreduce_max_f64(const zt_group *g, double *buf, size_t n);
/* recv[r * n_per_rank + i] = send[i] of group rank r; recv holds size * n_per_rank. send may be this rank's
 * own block of recv (in place); it may not overlap any other part of recv. */
void zt_allgather_f32(const zt_group *g, const float *send, size_t n_per_rank, float *recv);
/* recv[i] = sum over ranks of send[rank_me * n_per_rank + i]; send holds size * n_per_rank (same ring order
 * as the allreduce, so equal to the matching block of zt_allreduce_sum_f32 bit for bit). recv may be this
 * rank's own block of send (written after the ring has read it). */
void zt_reduce_scatter_sum_f32(const zt_group *g, const float *send, size_t n_per_rank, float *recv);
/* The sum over the group of buf lands in the root's buf (a fixed binomial tree: the same bits every run); on
 * the other ranks buf is used as scratch and left undefined. */
void zt_reduce_sum_f32(const zt_group *g, float *buf, size_t n, int root_group_rank);
void zt_broadcast(const zt_group *g, void *buf, size_t bytes, int root_group_rank);
/* Point to point with group ranks; blocking. A ring of zt_send_f32 may deadlock on large messages: use
 * zt_sendrecv_f32 for exchanges. */
void zt_send_f32(const zt_group *g, const float *buf, size_t n, int dst);
void zt_recv_f32(const zt_group *g, float *buf, size_t n, int src);
void zt_sendrecv_f32(const zt_group *g, const float *send, size_t n_send, int dst, float *recv, size_t n_recv,
                     int src);
/* Megatron's batch_isend_irecv: posts every send and receive of ops[0, n) at once (non-blocking MPI) and returns
 * when all have completed, so exchanges with both neighbours cannot deadlock on the order in which the ranks reach
 * them. Messages between two ranks match in the order they are posted. */
typedef struct {
  void *buf;
  size_t n;    /* elements of dt */
  int peer;    /* group rank */
  int send;    /* 1: send buf; 0: receive into it */
  zt_dtype dt; /* fp32 when left out of an initializer */
} zt_p2p_op;
void zt_batch_sendrecv_f32(const zt_group *g, const zt_p2p_op *ops, int n);
void zt_barrier(const zt_group *g);

/* Typed forms for tensors stored in fp32, bf16 or fp16 (the GPU path keeps activations in its half type), with
 * the semantics of the fp32 calls above. Device buffers of a group with an NCCL communicator go through NCCL in
 * that type (a half-precision sum is NCCL's, reduced in the half type as Megatron's bf16 all-reduces are); host
 * buffers go through the MPI ring, which sums and takes maxima of fp32 only (the CPU path computes in fp32):
 * a half-precision host reduction is refused. Gathers and point-to-point messages move any type. */
void zt_allreduce_sum(const zt_group *g, zt_dtype dt, void *buf, size_t n);
void zt_allreduce_max(const zt_group *g, zt_dtype dt, void *buf, size_t n);
void zt_allgather(const zt_group *g, zt_dtype dt, const void *send, size_t n_per_rank, void *recv);
/* recv[r * n_per_rank + i] = send[me * n_per_rank + i] of group rank r: block r of this rank's send goes to rank r,
 * and recv's block r comes from rank r (MPI_Alltoall / torch's all_to_all_single with equal splits: DeepSpeed MoE's
 * token dispatch to the experts and back). send and recv hold size * n_per_rank elements each and must not overlap.
 * Any dtype (moves bytes). Host buffers: a pairwise exchange over MPI_Sendrecv (step k sends to me+k, receives from
 * me-k), each block in messages of at most the chunk size. A NULL group (no expert-parallel group: this rank alone)
 * copies send to recv in host memory. */
void zt_alltoall(const zt_group *g, zt_dtype dt, const void *send, size_t n_per_rank, void *recv);
void zt_reduce_scatter_sum(const zt_group *g, zt_dtype dt, const void *send, size_t n_per_rank, void *recv);
void zt_send(const zt_group *g, zt_dtype dt, const void *buf, size_t n, int dst);
void zt_recv(const zt_group *g, zt_dtype dt, void *buf, size_t n, int src);
void zt_sendrecv(const zt_group *g, zt_dtype dt, const void *send, size_t n_send, int dst, void *recv, size_t n_recv,
                 int src);
/* Each operation in its own dt (zt_batch_sendrecv_f32 is this function). */
void zt_batch_sendrecv(const zt_group *g, const zt_p2p_op *ops, int n);

/* "Agree or fail", for start-up waits (the arguments, what each rank found on disk): every member sends its
 * `bytes` bytes to group rank 0, which compares them with its own and answers once all have reported. A rank
 * that has not reported within timeout_s seconds ends the job with a message from rank 0 naming it; rank 0
 * silent for 2 x timeout_s ends it from the waiting ranks (longer, so that rank 0 names a silent member first); a difference ends it with "error: inconsistent ranks:
 * world rank R disagrees with world rank 0 on <what>: <explain's text> (...)". timeout_s <= 0 waits forever.
 * explain (may be NULL) words the first difference: rank 0's bytes, then those of world rank `other`. Nothing
 * is sent with a group of one. Collective over g; the bytes are at most the chunk size (1 GiB). */
typedef void (*zt_agree_explain)(const void *mine, size_t n_mine, const void *theirs, size_t n_theirs, int other,
                                 char *msg, size_t cap);
void zt_comm_agree(const zt_group *g, const char *what, const void *mine, size_t bytes, double timeout_s,
                   zt_agree_explain explain);
/* The wait of start-up agreements that code below the argument parser makes (index caches): the argument parser
 * sets it from --distributed-timeout-minutes; 600 s until then. */
void zt_comm_set_startup_timeout(double seconds);
double zt_comm_startup_timeout(void);
/* What this rank's main thread is blocked in right now ("zt_allreduce_sum_f32 on group of 2 (world ranks 0,1),
 * exchanging with world rank 1"), for a watchdog thread: returns 0 (buf untouched) when it is not in an MPI
 * call. */
int zt_comm_describe_wait(char *buf, size_t n);

/* NCCL for device buffers (GPU tensors). After zt_cuda_init, every rank calls zt_comm_enable_nccl (collective
 * over the world): the world and every group, those created before and after, get an NCCL communicator (its
 * unique id drawn by group rank 0 and broadcast over MPI). From then on a collective or send/receive given
 * device memory runs through NCCL on the CUDA backend's stream: ordered with the kernels around it, returning
 * once enqueued; host memory still goes through MPI. Refused with a clear error in a build without NCCL. */
void zt_comm_enable_nccl(void);

/* Largest single MPI message in bytes (default 1 GiB, so counts stay below 2^31); larger buffers go in
 * several messages. A knob for tests of the chunking; rounded down to a multiple of 8, at least 8. */
void zt_comm_set_chunk_bytes(size_t bytes);

#endif
