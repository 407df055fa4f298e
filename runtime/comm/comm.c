/* The MPI backend of runtime/comm: start-up and the fatal hook, groups, and collectives on CPU buffers.
 * Reductions are our own ring (reduce-scatter then allgather over MPI_Sendrecv) so the summation order is
 * fixed by the group size alone: bitwise the same result on every rank and on every rerun. Messages are cut
 * into chunks of at most g_chunk_bytes so element counts above 2^31 never reach an int MPI count. */
#include "runtime/comm/comm.h"

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/comm/comms_logger.h"
#include "runtime/comm/nccl_backend.h"

struct zt_group {
  MPI_Comm comm;
  int rank, size;
  int *world_ranks; /* size entries: group rank -> world rank */
  char desc[112];   /* "group of 4 (world ranks 0,2,4,6)" for error messages */
  zt_nccl *nccl;    /* the NCCL communicator for device buffers, once zt_comm_enable_nccl ran */
  zt_group *next;   /* list of live groups, freed by zt_comm_finalize */
};

enum { TAG_COLL = 7001, TAG_P2P = 7002, TAG_AGREE = 7003, TAG_VERDICT = 7004 };
typedef enum { RED_SUM_F32, RED_SUM_F64, RED_MAX_F64, RED_MAX_F32 } red_op;

static int g_inited = 0;
static int g_we_started_mpi = 0;
static zt_group g_world;
static zt_group *g_groups = NULL;
static size_t g_chunk_bytes = (size_t)1 << 30;
static double g_startup_timeout_s = 600.0; /* Megatron's --distributed-timeout-minutes default, 10 */
static char *g_acc = NULL, *g_tmp = NULL; /* ring scratch, grown on demand and kept (no per-call malloc) */
static size_t g_acc_cap = 0, g_tmp_cap = 0;
static int g_nccl = 0; /* zt_comm_enable_nccl ran: groups get NCCL communicators */

/* What the main thread is blocked in, for zt_comm_describe_wait (read by the step watchdog's thread): the
 * operation, its group and the group rank it exchanges with (-1: all of them). Cleared when the call returns. */
static _Atomic(const char *) g_wait_op;
static _Atomic(const zt_group *) g_wait_group;
static atomic_int g_wait_peer;

static void wait_on(const char *op, const zt_group *g, int peer) {
  atomic_store_explicit(&g_wait_group, g, memory_order_relaxed);
  atomic_store_explicit(&g_wait_peer, peer, memory_order_relaxed);
  atomic_store_explicit(&g_wait_op, op, memory_order_release);
}
static void wait_done(void) { atomic_store_explicit(&g_wait_op, NULL, memory_order_release); }

static void need_init(const char *op) {
  zt_check(g_inited, "comm", "%s called before zt_comm_init (or after zt_comm_finalize)", op);
}

/* Dies naming the operation, the group, the sizes (fmt, ...) and MPI's own text for the error code. */
static void mpi_fail(const char *op, const zt_group *g, int rc, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
static void mpi_fail(const char *op, const zt_group *g, int rc, const char *fmt, ...) {
  char msg[MPI_MAX_ERROR_STRING + 1];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) len = snprintf(msg, sizeof msg, "MPI error code %d", rc);
  msg[len >= 0 && len < (int)sizeof msg ? len : (int)sizeof msg - 1] = '\0';
  char detail[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  zt_fatal("comm", "%s on %s (%s) failed: %s", op, g ? g->desc : "MPI_COMM_WORLD", detail, msg);
}

#define CHECK_MPI(call, op, g, ...) \
  do { int rc_ = (call); if (rc_ != MPI_SUCCESS) mpi_fail((op), (g), rc_, __VA_ARGS__); } while (0)

static void describe(zt_group *g) {
  int len = snprintf(g->desc, sizeof g->desc, "group of %d (world ranks ", g->size);
  for (int i = 0; i < g->size && len < (int)sizeof g->desc; i++) {
    if (len > (int)sizeof g->desc - 16) { len += snprintf(g->desc + len, sizeof g->desc - len, "..."); break; }
    len += snprintf(g->desc + len, sizeof g->desc - len, i ? ",%d" : "%d", g->world_ranks[i]);
  }
  if (len < (int)sizeof g->desc) snprintf(g->desc + len, sizeof g->desc - len, ")");
}

static void abort_hook(int exit_code) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (inited && !finalized && g_world.size > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
  exit(exit_code);
}

void zt_comm_init(int *argc, char ***argv) {
  zt_check(!g_inited, "comm", "zt_comm_init called twice");
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    int provided = 0;
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) zt_fatal("comm", "MPI_Init_thread failed with code %d (is the launcher's MPI the one "
                                            "zerotron was built with?)", rc);
    g_we_started_mpi = 1;
    if (provided < MPI_THREAD_FUNNELED)
      zt_warn("comm: MPI provides thread level %d, below MPI_THREAD_FUNNELED (%d)", provided, MPI_THREAD_FUNNELED);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  memset(&g_world, 0, sizeof g_world);
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g_world.comm), "MPI_Comm_dup", NULL, "the world communicator");
  CHECK_MPI(MPI_Comm_set_errhandler(g_world.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", NULL,
            "MPI_ERRORS_RETURN");
  MPI_Comm_rank(g_world.comm, &g_world.rank);
  MPI_Comm_size(g_world.comm, &g_world.size);
  g_world.world_ranks = zt_malloc(sizeof(int) * (size_t)g_world.size, "comm: world rank table");
  for (int i = 0; i < g_world.size; i++) g_world.world_ranks[i] = i;
  describe(&g_world);
  zt_set_rank(g_world.rank, g_world.size);
  zt_set_fatal_hook(abort_hook);
  g_inited = 1;
}

void zt_comm_finalize(void) {
  if (!g_inited) return;
  while (g_groups) zt_group_free(g_groups);
  zt_nccl_destroy(g_world.nccl);
  g_world.nccl = NULL;
  g_nccl = 0;
  MPI_Comm_free(&g_world.comm);
  free(g_world.world_ranks);
  free(g_acc);
  free(g_tmp);
  g_acc = g_tmp = NULL;
  g_acc_cap = g_tmp_cap = 0;
  g_inited = 0;
  zt_set_fatal_hook(NULL);
  if (g_we_started_mpi) MPI_Finalize();
}

int zt_comm_rank(void) { need_init("zt_comm_rank"); return g_world.rank; }
int zt_comm_size(void) { need_init("zt_comm_size"); return g_world.size; }
const zt_group *zt_comm_world(void) { need_init("zt_comm_world"); return &g_world; }

void zt_comm_set_chunk_bytes(size_t bytes) {
  bytes = bytes / 8 * 8;
  g_chunk_bytes = bytes < 8 ? 8 : bytes;
}

static void broadcast_impl(const zt_group *g, void *buf, size_t bytes, int root_group_rank);

/* The group's NCCL communicator: its rank 0 draws the unique id, MPI carries it to the others. */
static void nccl_attach(zt_group *g) {
  char id[256];
  const size_t idb = zt_nccl_id_bytes();
  zt_check(idb <= sizeof id, "comm", "NCCL unique id of %zu bytes (at most %zu expected)", idb, sizeof id);
  if (g->rank == 0) zt_nccl_get_id(id);
  broadcast_impl(g, id, idb, 0);
  g->nccl = zt_nccl_create(id, g->size, g->rank, g->desc);
}

void zt_comm_enable_nccl(void) {
  need_init("zt_comm_enable_nccl");
  zt_check(zt_nccl_built(), "comm", "the NCCL backend was requested but this build has none (built without CUDA "
           "or without NCCL: see the CMake output's 'NCCL backend' line)");
  if (g_nccl) return;
  g_nccl = 1;
  nccl_attach(&g_world);
  int n = 0; /* the groups created so far, in creation order (the list is newest first) */
  for (zt_group *g = g_groups; g; g = g->next) n++;
  zt_group **order = zt_malloc(sizeof(zt_group *) * (size_t)(n ? n : 1), "comm: group list");
  int i = n;
  for (zt_group *g = g_groups; g; g = g->next) order[--i] = g;
  for (i = 0; i < n; i++) nccl_attach(order[i]);
  free(order);
}

int zt_comm_local_rank(int *local_size) {
  need_init("zt_comm_local_rank");
  MPI_Comm node;
  CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_world.rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type", &g_world, "the processes of this node");
  int r = 0, n = 1;
  MPI_Comm_rank(node, &r);
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  if (local_size) *local_size = n;
  return r;
}

/* Device buffers of a group with an NCCL communicator go through NCCL. */
static int on_nccl(const zt_group *g, const void *buf) { return g && g->nccl && zt_nccl_on_device(buf); }

zt_group *zt_group_create(const int *world_ranks, int n) {
  need_init("zt_group_create");
  zt_check(n >= 1 && n <= g_world.size, "comm", "zt_group_create: %d ranks for a world of %d", n, g_world.size);
  int me = -1;
  for (int i = 0; i < n; i++) {
    zt_check(world_ranks[i] >= 0 && world_ranks[i] < g_world.size, "comm",
             "zt_group_create: rank list entry %d is %d, outside the world of %d", i, world_ranks[i], g_world.size);
    for (int j = 0; j < i; j++)
      zt_check(world_ranks[j] != world_ranks[i], "comm", "zt_group_create: world rank %d listed twice (entries %d "
               "and %d)", world_ranks[i], j, i);
    if (world_ranks[i] == g_world.rank) me = i;
  }
  if (me < 0) return NULL;
  zt_group *g = zt_calloc(1, sizeof *g, "comm: group");
  g->size = n;
  g->rank = me;
  g->world_ranks = zt_malloc(sizeof(int) * (size_t)n, "comm: group rank table");
  memcpy(g->world_ranks, world_ranks, sizeof(int) * (size_t)n);
  describe(g);
  MPI_Group wg, ng;
  CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg), "MPI_Comm_group", g, "%d ranks", n);
  CHECK_MPI(MPI_Group_incl(wg, n, world_ranks, &ng), "MPI_Group_incl", g, "%d ranks", n);
  CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, ng, TAG_COLL, &g->comm), "MPI_Comm_create_group", g,
            "%d ranks", n);
  MPI_Group_free(&ng);
  MPI_Group_free(&wg);
  CHECK_MPI(MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", g,
            "MPI_ERRORS_RETURN");
  int r = -1;
  MPI_Comm_rank(g->comm, &r);
  zt_check(r == me, "comm", "zt_group_create: MPI gave group rank %d to world rank %d, expected %d", r,
           g_world.rank, me);
  g->next = g_groups;
  g_groups = g;
  if (g_nccl) nccl_attach(g);
  return g;
}

void zt_group_free(zt_group *g) {
  if (!g) return;
  need_init("zt_group_free");
  zt_check(g != &g_world, "comm", "zt_group_free: the world group is freed by zt_comm_finalize");
  for (zt_group **p = &g_groups; *p; p = &(*p)->next)
    if (*p == g) { *p = g->next; break; }
  zt_nccl_destroy(g->nccl);
  MPI_Comm_free(&g->comm);
  free(g->world_ranks);
  free(g);
}

int zt_group_rank(const zt_group *g) { zt_check(g, "comm", "zt_group_rank of a NULL group"); return g->rank; }
int zt_group_size(const zt_group *g) { zt_check(g, "comm", "zt_group_size of a NULL group"); return g->size; }
int zt_group_world_rank(const zt_group *g, int group_rank) {
  zt_check(g && group_rank >= 0 && group_rank < g->size, "comm", "zt_group_world_rank: rank %d of %s", group_rank,
           g ? g->desc : "a NULL group");
  return g->world_ranks[group_rank];
}

static void check_group(const zt_group *g, const char *op) {
  need_init(op);
  zt_check(g, "comm", "%s on a NULL group (this rank, world rank %d, is not a member)", op, g_world.rank);
}

static void *grow(char **p, size_t *cap, size_t bytes, const char *what) {
  if (bytes > *cap) {
    free(*p);
    *p = zt_malloc(bytes, what);
    *cap = bytes;
  }
  return *p;
}

/* Number of messages for `bytes` bytes: none for an empty block, so sender and receiver always agree. */
static size_t n_chunks(size_t bytes) { return (bytes + g_chunk_bytes - 1) / g_chunk_bytes; }

/* Sends sbytes to dst while receiving rbytes from src, in chunks; a chunk index one side has no data for
 * talks to MPI_PROC_NULL. */
static void xfer(const zt_group *g, const char *op, const void *sbuf, size_t sbytes, int dst, void *rbuf,
                 size_t rbytes, int src, int tag) {
  size_t ns = n_chunks(sbytes), nr = n_chunks(rbytes), nk = ns > nr ? ns : nr;
  wait_on(op, g, src);
  for (size_t k = 0; k < nk; k++) {
    size_t off = k * g_chunk_bytes;
    size_t sc = k < ns ? (sbytes - off < g_chunk_bytes ? sbytes - off : g_chunk_bytes) : 0;
    size_t rc = k < nr ? (rbytes - off < g_chunk_bytes ? rbytes - off : g_chunk_bytes) : 0;
    CHECK_MPI(MPI_Sendrecv(k < ns ? (const char *)sbuf + off : NULL, (int)sc, MPI_BYTE, k < ns ? dst : MPI_PROC_NULL,
                           tag, k < nr ? (char *)rbuf + off : NULL, (int)rc, MPI_BYTE, k < nr ? src : MPI_PROC_NULL,
                           tag, g->comm, MPI_STATUS_IGNORE),
              op, g, "sending %zu bytes, receiving %zu bytes", sbytes, rbytes);
  }
  wait_done();
}

/* Block b of n elements over p ranks: the first n % p blocks hold one element more. */
static size_t block_off(size_t n, int p, int b) { return (n / p) * b + ((size_t)b < n % p ? (size_t)b : n % p); }
static size_t block_len(size_t n, int p, int b) { return n / p + ((size_t)b < n % p ? 1 : 0); }

static size_t elem_size(red_op op) { return op == RED_SUM_F32 || op == RED_MAX_F32 ? sizeof(float) : sizeof(double); }

/* dst[i] = in[i] (+ or max) own[i]; dst may alias in. */
static void reduce(red_op op, void *dst, const void *in, const void *own, size_t count) {
  if (op == RED_SUM_F32) {
    float *d = dst; const float *a = in, *b = own;
    for (size_t i = 0; i < count; i++) d[i] = a[i] + b[i];
  } else if (op == RED_SUM_F64) {
    double *d = dst; const double *a = in, *b = own;
    for (size_t i = 0; i < count; i++) d[i] = a[i] + b[i];
  } else if (op == RED_MAX_F32) {
    float *d = dst; const float *a = in, *b = own;
    for (size_t i = 0; i < count; i++) d[i] = (isnan(a[i]) || isnan(b[i])) ? NAN : (a[i] > b[i] ? a[i] : b[i]);
  } else {
    double *d = dst; const double *a = in, *b = own;
    for (size_t i = 0; i < count; i++) d[i] = (isnan(a[i]) || isnan(b[i])) ? NAN : (a[i] > b[i] ? a[i] : b[i]);
  }
}

/* Ring reduce-scatter of src (n elements, block layout above). Returns scratch holding this rank's block
 * (block `rank`), reduced over the group. At step s rank r sends its partial of block (r-s-1) to r+1 and
 * receives block (r-s-2) from r-1, adding its own contribution: block b is summed starting at rank b+1
 * and ending at rank b, an order fixed by p alone. */
static void *ring_reduce_scatter(const zt_group *g, const char *op_name, red_op op, const void *src, size_t n) {
  int p = g->size, r = g->rank;
  size_t es = elem_size(op), maxb = block_len(n, p, 0) * es;
  char *acc = grow(&g_acc, &g_acc_cap, maxb, "comm: ring accumulator");
  char *tmp = grow(&g_tmp, &g_tmp_cap, maxb < g_chunk_bytes ? maxb : g_chunk_bytes, "comm: ring receive chunk");
  int right = (r + 1) % p, left = (r - 1 + p) % p;
  wait_on(op_name, g, left);
  for (int s = 0; s < p - 1; s++) {
    int sb = ((r - s - 1) % p + p) % p, rb = ((r - s - 2) % p + p) % p;
    const char *sendp = s == 0 ? (const char *)src + block_off(n, p, sb) * es : acc;
    const char *own = (const char *)src + block_off(n, p, rb) * es;
    size_t sbytes = block_len(n, p, sb) * es, rbytes = block_len(n, p, rb) * es;
    size_t ns = n_chunks(sbytes), nr = n_chunks(rbytes), nk = ns > nr ? ns : nr;
    /* chunk k sends acc[k*C, ...) before it writes the same range, and later chunks only touch higher ranges */
    for (size_t k = 0; k < nk; k++) {
      size_t off = k * g_chunk_bytes;
      size_t sc = k < ns ? (sbytes - off < g_chunk_bytes ? sbytes - off : g_chunk_bytes) : 0;
      size_t rc = k < nr ? (rbytes - off < g_chunk_bytes ? rbytes - off : g_chunk_bytes) : 0;
      CHECK_MPI(MPI_Sendrecv(k < ns ? sendp + off : NULL, (int)sc, MPI_BYTE, k < ns ? right : MPI_PROC_NULL, TAG_COLL,
                             tmp, (int)rc, MPI_BYTE, k < nr ? left : MPI_PROC_NULL, TAG_COLL, g->comm,
                             MPI_STATUS_IGNORE),
                op_name, g, "n = %zu elements, ring chunk of %zu bytes", n, g_chunk_bytes);
      if (rc) reduce(op, acc + off, tmp, own + off, rc / es);
    }
  }
  wait_done();
  if (p == 1) memcpy(acc, src, n * es);
  return acc;
}

/* Ring allgather in place: buf holds n elements in the block layout and this rank's block is filled. */
static void ring_allgather(const zt_group *g, const char *op_name, void *buf, size_t n, size_t es) {
  int p = g->size, r = g->rank, right = (r + 1) % p, left = (r - 1 + p) % p;
  for (int s = 0; s < p - 1; s++) {
    int sb = ((r - s) % p + p) % p, rb = ((r - s - 1) % p + p) % p;
    xfer(g, op_name, (char *)buf + block_off(n, p, sb) * es, block_len(n, p, sb) * es, right,
         (char *)buf + block_off(n, p, rb) * es, block_len(n, p, rb) * es, left, TAG_COLL);
  }
}

/* A host buffer of a half type cannot be reduced here (the ring sums fp32). */
static void host_fp32_only(const zt_group *g, const char *op, zt_dtype dt) {
  zt_check(dt == ZT_DTYPE_FP32, "comm", "%s on %s: a %s buffer in host memory; the MPI backend reduces fp32 only "
           "(half-precision reductions run on device buffers through NCCL)", op, g->desc, zt_dtype_name(dt));
}

/* op is the host ring's reduction; dt the elements' storage type (fp32 for the f64 reductions' doubles aside). */
static void allreduce(const zt_group *g, const char *op_name, red_op op, zt_dtype dt, void *buf, size_t n) {
  check_group(g, op_name);
  zt_check(buf || n == 0, "comm", "%s: NULL buffer for %zu elements on %s", op_name, n, g->desc);
  if (n == 0) return;
  if (on_nccl(g, buf)) {
    const int f64 = op == RED_SUM_F64 || op == RED_MAX_F64;
    zt_nccl_allreduce(g->nccl, g->desc, buf, n, f64 ? ZT_NCCL_F64 : zt_nccl_type_of(dt),
                      op == RED_MAX_F64 || op == RED_MAX_F32 ? ZT_NCCL_MAX : ZT_NCCL_SUM);
    return;
  }
  host_fp32_only(g, op_name, dt);
  if (g->size == 1) return;
  size_t es = elem_size(op);
  void *mine = ring_reduce_scatter(g, op_name, op, buf, n);
  memcpy((char *)buf + block_off(n, g->size, g->rank) * es, mine, block_len(n, g->size, g->rank) * es);
  ring_allgather(g, op_name, buf, n, es);
}

static void allgather_impl(const zt_group *g, const char *op, zt_dtype dt, const void *send, size_t n_per_rank,
                           void *recv) {
  check_group(g, op);
  if (n_per_rank == 0) return;
  zt_check(send && recv, "comm", "%s: NULL buffer for %zu elements per rank on %s", op, n_per_rank, g->desc);
  if (on_nccl(g, recv)) { /* in place when send is this rank's block of recv, as NCCL defines it */
    zt_nccl_allgather(g->nccl, g->desc, send, recv, n_per_rank, zt_nccl_type_of(dt));
    return;
  }
  const size_t es = zt_dtype_size(dt), n = n_per_rank * (size_t)g->size;
  memmove((char *)recv + n_per_rank * (size_t)g->rank * es, send, n_per_rank * es); /* send may be that block */
  if (g->size > 1) ring_allgather(g, op, recv, n, es);
}

static void reduce_scatter_impl(const zt_group *g, const char *op, zt_dtype dt, const void *send, size_t n_per_rank,
                                void *recv) {
  check_group(g, op);
  if (n_per_rank == 0) return;
  zt_check(send && recv, "comm", "%s: NULL buffer for %zu elements per rank on %s", op, n_per_rank, g->desc);
  if (on_nccl(g, send)) {
    zt_nccl_reduce_scatter(g->nccl, g->desc, send, recv, n_per_rank, zt_nccl_type_of(dt));
    return;
  }
  host_fp32_only(g, op, dt);
  if (g->size == 1) { memmove(recv, send, n_per_rank * sizeof(float)); return; }
  void *mine = ring_reduce_scatter(g, op, RED_SUM_F32, send, n_per_rank * (size_t)g->size);
  memcpy(recv, mine, n_per_rank * sizeof(float));
}

/* A binomial tree toward the root in a fixed order (each node adds its children's partial sums in turn), in
 * pieces of at most 1 Mi floats: deterministic, and only the root needs a receive buffer per level. */
static void reduce_sum_f32_impl(const zt_group *g, float *buf, size_t n, int root) {
  const char *op = "zt_reduce_sum_f32";
  check_group(g, op);
  zt_check(root >= 0 && root < g->size, "comm", "%s: root %d outside %s", op, root, g->desc);
  zt_check(buf || n == 0, "comm", "%s: NULL buffer for %zu elements on %s", op, n, g->desc);
  if (n == 0) return;
  if (on_nccl(g, buf)) {
    zt_nccl_reduce(g->nccl, g->desc, buf, n, root);
    return;
  }
  if (g->size == 1) return;
  const int D = g->size, rel = (g->rank - root + D) % D;
  size_t piece = g_chunk_bytes / sizeof(float);
  if (piece > ((size_t)1 << 20)) piece = (size_t)1 << 20;
  float *tmp = NULL;
  for (size_t off = 0; off < n; off += piece) {
    const size_t c = n - off < piece ? n - off : piece;
    for (int mask = 1; mask < D; mask <<= 1) {
      if (rel & mask) {
        const int dst = (rel - mask + root) % D;
        wait_on(op, g, dst);
        CHECK_MPI(MPI_Send(buf + off, (int)c, MPI_FLOAT, dst, TAG_COLL, g->comm), op, g,
                  "%zu floats to group rank %d", c, dst);
        break;
      }
      if (rel + mask >= D) continue;
      const int src = (rel + mask + root) % D;
      if (!tmp) tmp = zt_malloc(piece * sizeof(float), "reduce buffer");
      MPI_Status st;
      wait_on(op, g, src);
      CHECK_MPI(MPI_Recv(tmp, (int)c, MPI_FLOAT, src, TAG_COLL, g->comm, &st), op, g,
                "%zu floats from group rank %d", c, src);
      for (size_t i = 0; i < c; i++) buf[off + i] += tmp[i];
    }
  }
  wait_done();
  free(tmp);
}

static void broadcast_impl(const zt_group *g, void *buf, size_t bytes, int root_group_rank) {
  const char *op = "zt_broadcast";
  check_group(g, op);
  zt_check(root_group_rank >= 0 && root_group_rank < g->size, "comm", "%s: root %d outside %s", op, root_group_rank,
           g->desc);
  zt_check(buf || bytes == 0, "comm", "%s: NULL buffer for %zu bytes on %s", op, bytes, g->desc);
  if (bytes && on_nccl(g, buf)) {
    zt_nccl_broadcast(g->nccl, g->desc, buf, bytes, root_group_rank);
    return;
  }
  wait_on(op, g, root_group_rank);
  for (size_t off = 0; off < bytes; off += g_chunk_bytes) {
    size_t c = bytes - off < g_chunk_bytes ? bytes - off : g_chunk_bytes;
    CHECK_MPI(MPI_Bcast((char *)buf + off, (int)c, MPI_BYTE, root_group_rank, g->comm), op, g,
              "%zu bytes from group rank %d", bytes, root_group_rank);
  }
  wait_done();
}

static void check_peer(const zt_group *g, const char *op, const char *role, int peer, size_t n, const void *buf) {
  check_group(g, op);
  zt_check(peer >= 0 && peer < g->size, "comm", "%s: %s %d outside %s", op, role, peer, g->desc);
  zt_check(buf || n == 0, "comm", "%s: NULL buffer for %zu elements on %s", op, n, g->desc);
}

/* How messages name their elements: "floats", or "bf16 elements". */
static const char *elems(zt_dtype dt) {
  return dt == ZT_DTYPE_FP32 ? "floats" : dt == ZT_DTYPE_BF16 ? "bf16 elements" : "fp16 elements";
}

static void send_impl(const zt_group *g, const char *op, zt_dtype dt, const void *buf, size_t n, int dst) {
  check_peer(g, op, "destination", dst, n, buf);
  if (n && on_nccl(g, buf)) {
    zt_p2p_op o = {(void *)buf, n, dst, 1, dt};
    zt_nccl_p2p(g->nccl, g->desc, &o, 1);
    return;
  }
  size_t bytes = n * zt_dtype_size(dt);
  wait_on(op, g, dst);
  for (size_t k = 0; k < n_chunks(bytes); k++) {
    size_t off = k * g_chunk_bytes, c = bytes - off < g_chunk_bytes ? bytes - off : g_chunk_bytes;
    CHECK_MPI(MPI_Send((const char *)buf + off, (int)c, MPI_BYTE, dst, TAG_P2P, g->comm), op, g,
              "%zu %s to group rank %d", n, elems(dt), dst);
  }
  wait_done();
}

static void recv_impl(const zt_group *g, const char *op, zt_dtype dt, void *buf, size_t n, int src) {
  check_peer(g, op, "source", src, n, buf);
  if (n && on_nccl(g, buf)) {
    zt_p2p_op o = {buf, n, src, 0, dt};
    zt_nccl_p2p(g->nccl, g->desc, &o, 1);
    return;
  }
  size_t bytes = n * zt_dtype_size(dt);
  wait_on(op, g, src);
  for (size_t k = 0; k < n_chunks(bytes); k++) {
    size_t off = k * g_chunk_bytes, c = bytes - off < g_chunk_bytes ? bytes - off : g_chunk_bytes;
    MPI_Status st;
    CHECK_MPI(MPI_Recv((char *)buf + off, (int)c, MPI_BYTE, src, TAG_P2P, g->comm, &st), op, g,
              "%zu %s from group rank %d", n, elems(dt), src);
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    zt_check((size_t)got == c, "comm", "%s on %s: expected %zu %s from group rank %d, the message held %d bytes "
             "where %zu were due (sender and receiver disagree on the size)", op, g->desc, n, elems(dt), src, got, c);
  }
  wait_done();
}

static void sendrecv_impl(const zt_group *g, const char *op, zt_dtype dt, const void *send, size_t n_send, int dst,
                          void *recv, size_t n_recv, int src) {
  check_peer(g, op, "destination", dst, n_send, send);
  check_peer(g, op, "source", src, n_recv, recv);
  if (on_nccl(g, n_send ? (const void *)send : recv)) {
    zt_p2p_op o[2] = {{(void *)send, n_send, dst, 1, dt}, {recv, n_recv, src, 0, dt}};
    zt_nccl_p2p(g->nccl, g->desc, o, 2);
    return;
  }
  const size_t es = zt_dtype_size(dt);
  xfer(g, op, send, n_send * es, dst, recv, n_recv * es, src, TAG_P2P);
}

void zt_sendrecv_f32(const zt_group *g, const float *send, size_t n_send, int dst, float *recv, size_t n_recv,
                     int src) {
  sendrecv_impl(g, "zt_sendrecv_f32", ZT_DTYPE_FP32, send, n_send, dst, recv, n_recv, src);
}

void zt_sendrecv(const zt_group *g, zt_dtype dt, const void *send, size_t n_send, int dst, void *recv, size_t n_recv,
                 int src) {
  sendrecv_impl(g, "zt_sendrecv", dt, send, n_send, dst, recv, n_recv, src);
}

void zt_batch_sendrecv_f32(const zt_group *g, const zt_p2p_op *ops, int n) { zt_batch_sendrecv(g, ops, n); }

void zt_batch_sendrecv(const zt_group *g, const zt_p2p_op *ops, int n) {
  const char *op = "zt_batch_sendrecv";
  size_t nreq = 0;
  for (int i = 0; i < n; i++) {
    check_peer(g, op, ops[i].send ? "destination" : "source", ops[i].peer, ops[i].n, ops[i].buf);
    nreq += n_chunks(ops[i].n * zt_dtype_size(ops[i].dt));
  }
  int dev = -1; /* device buffers: all of them (one NCCL group call) or none */
  for (int i = 0; i < n; i++) {
    if (!ops[i].n) continue;
    const int d = on_nccl(g, ops[i].buf);
    zt_check(dev < 0 || d == dev, "comm", "%s on %s: operation %d's buffer is %s memory, an earlier one's %s "
             "memory (one batch is all device or all host)", op, g->desc, i, d ? "device" : "host",
             dev ? "device" : "host");
    dev = d;
  }
  if (dev == 1) {
    zt_nccl_p2p(g->nccl, g->desc, ops, n);
    return;
  }
  MPI_Request local_req[16];
  MPI_Status local_st[16];
  MPI_Request *req = nreq <= 16 ? local_req : zt_malloc(nreq * sizeof(MPI_Request), "p2p requests");
  MPI_Status *st = nreq <= 16 ? local_st : zt_malloc(nreq * sizeof(MPI_Status), "p2p statuses");
  size_t r = 0;
  for (int i = 0; i < n; i++) {
    const size_t bytes = ops[i].n * zt_dtype_size(ops[i].dt);
    for (size_t k = 0; k < n_chunks(bytes); k++, r++) {
      const size_t off = k * g_chunk_bytes, c = bytes - off < g_chunk_bytes ? bytes - off : g_chunk_bytes;
      char *p = (char *)ops[i].buf + off;
      if (ops[i].send)
        CHECK_MPI(MPI_Isend(p, (int)c, MPI_BYTE, ops[i].peer, TAG_P2P, g->comm, &req[r]), op, g,
                  "%zu floats to group rank %d", ops[i].n, ops[i].peer);
      else
        CHECK_MPI(MPI_Irecv(p, (int)c, MPI_BYTE, ops[i].peer, TAG_P2P, g->comm, &req[r]), op, g,
                  "%zu floats from group rank %d", ops[i].n, ops[i].peer);
    }
  }
  wait_on(op, g, n == 1 ? ops[0].peer : -1);
  CHECK_MPI(MPI_Waitall((int)nreq, req, st), op, g, "%d sends and receives", n);
  wait_done();
  r = 0;
  for (int i = 0; i < n; i++) {
    const size_t bytes = ops[i].n * zt_dtype_size(ops[i].dt);
    for (size_t k = 0; k < n_chunks(bytes); k++, r++) {
      const size_t off = k * g_chunk_bytes, c = bytes - off < g_chunk_bytes ? bytes - off : g_chunk_bytes;
      int got = 0;
      if (ops[i].send) continue;
      MPI_Get_count(&st[r], MPI_BYTE, &got);
      zt_check((size_t)got == c, "comm", "%s on %s: expected %zu floats from group rank %d, the message held %d "
               "bytes where %zu were due (sender and receiver disagree on the size)", op, g->desc, ops[i].n,
               ops[i].peer, got, c);
    }
  }
  if (req != local_req) {
    free(req);
    free(st);
  }
}

/* Pairwise exchange: at step k this rank sends its block for (me + k) % p and receives the block of
 * (me - k + p) % p, so every step pairs each rank with one sender and one receiver (no rank is flooded) and each
 * block goes in messages of at most the chunk size (xfer). The own block is a local copy. */
static void alltoall_impl(const zt_group *g, const char *op, zt_dtype dt, const void *send, size_t n_per_rank,
                          void *recv) {
  need_init(op);
  const int p = g ? g->size : 1, me = g ? g->rank : 0;
  const size_t es = zt_dtype_size(dt), blk = n_per_rank * es, total = blk * (size_t)p;
  if (n_per_rank == 0) return;
  zt_check(send && recv, "comm", "%s: NULL buffer for %zu %s per rank on %s", op, n_per_rank, elems(dt),
           g ? g->desc : "no group (a copy)");
  const uintptr_t s0 = (uintptr_t)send, r0 = (uintptr_t)recv;
  zt_check(s0 + total <= r0 || r0 + total <= s0, "comm", "%s on %s: send and recv overlap (%zu bytes each, %zu %s "
           "per rank); an all-to-all cannot run in place", op, g ? g->desc : "no group", total, n_per_rank, elems(dt));
  if (!g) { /* no group: this rank alone, host memory (a device copy needs a group with an NCCL communicator) */
    zt_check(!zt_nccl_on_device(send) && !zt_nccl_on_device(recv), "comm", "%s without a group on device buffers: "
             "pass a group (one of a single rank is fine) that has an NCCL communicator", op);
    memcpy(recv, send, blk);
    return;
  }
  if (on_nccl(g, send)) {
    zt_nccl_alltoall(g->nccl, g->desc, send, recv, blk);
    return;
  }
  memcpy((char *)recv + blk * (size_t)me, (const char *)send + blk * (size_t)me, blk);
  for (int k = 1; k < p; k++) {
    const int dst = (me + k) % p, src = (me - k + p) % p;
    xfer(g, op, (const char *)send + blk * (size_t)dst, blk, dst, (char *)recv + blk * (size_t)src, blk, src,
         TAG_COLL);
  }
}

static void barrier_impl(const zt_group *g) {
  check_group(g, "zt_barrier");
  wait_on("zt_barrier", g, -1);
  CHECK_MPI(MPI_Barrier(g->comm), "zt_barrier", g, "no payload");
  wait_done();
}

/* The public collectives: with the comms logger on, each call is timed and recorded under DeepSpeed's op
 * name and message size (runtime/comm/comms_logger.h); off, the one branch is all it costs. With NCCL on, the
 * stream is drained before and after the call so the time is the collective's own (as DeepSpeed's logger
 * synchronizes). */
#define ZT_LOGGED(op, bytes, g, call) \
  do { \
    if (zt_comms_logger_on) { \
      if (g_nccl) zt_nccl_sync(); \
      double t0_ = zt_now(); \
      call; \
      if (g_nccl) zt_nccl_sync(); \
      zt_comms_logger_record((op), (bytes), 1e3 * (zt_now() - t0_), (g) ? zt_group_size(g) : 1); \
    } else { \
      call; \
    } \
  } while (0)

void zt_allreduce_sum_f32(const zt_group *g, float *buf, size_t n) {
  ZT_LOGGED("all_reduce", n * sizeof(float), g,
            allreduce(g, "zt_allreduce_sum_f32", RED_SUM_F32, ZT_DTYPE_FP32, buf, n));
}
void zt_allreduce_sum_f64(const zt_group *g, double *buf, size_t n) {
  ZT_LOGGED("all_reduce", n * sizeof(double), g,
            allreduce(g, "zt_allreduce_sum_f64", RED_SUM_F64, ZT_DTYPE_FP32, buf, n));
}
void zt_allreduce_max_f64(const zt_group *g, double *buf, size_t n) {
  ZT_LOGGED("all_reduce", n * sizeof(double), g,
            allreduce(g, "zt_allreduce_max_f64", RED_MAX_F64, ZT_DTYPE_FP32, buf, n));
}
void zt_allreduce_sum(const zt_group *g, zt_dtype dt, void *buf, size_t n) {
  ZT_LOGGED("all_reduce", n * zt_dtype_size(dt), g, allreduce(g, "zt_allreduce_sum", RED_SUM_F32, dt, buf, n));
}
void zt_allreduce_max(const zt_group *g, zt_dtype dt, void *buf, size_t n) {
  ZT_LOGGED("all_reduce", n * zt_dtype_size(dt), g, allreduce(g, "zt_allreduce_max", RED_MAX_F32, dt, buf, n));
}
/* DeepSpeed logs all_gather(tensor_list, tensor) by its input tensor (one rank's share) and
 * reduce_scatter(output, input_list) by its input list (every rank's share). */
void zt_allgather_f32(const zt_group *g, const float *send, size_t n_per_rank, float *recv) {
  ZT_LOGGED("all_gather", n_per_rank * sizeof(float), g,
            allgather_impl(g, "zt_allgather_f32", ZT_DTYPE_FP32, send, n_per_rank, recv));
}
void zt_allgather(const zt_group *g, zt_dtype dt, const void *send, size_t n_per_rank, void *recv) {
  ZT_LOGGED("all_gather", n_per_rank * zt_dtype_size(dt), g,
            allgather_impl(g, "zt_allgather", dt, send, n_per_rank, recv));
}
/* DeepSpeed's sharded_moe _AllToAll calls dist.all_to_all_single(output, input): logged as all_to_all_single with
 * its input tensor (every rank's blocks) as the message size. */
void zt_alltoall(const zt_group *g, zt_dtype dt, const void *send, size_t n_per_rank, void *recv) {
  ZT_LOGGED("all_to_all_single", n_per_rank * zt_dtype_size(dt) * (size_t)(g ? g->size : 1), g,
            alltoall_impl(g, "zt_alltoall", dt, send, n_per_rank, recv));
}
void zt_reduce_scatter_sum_f32(const zt_group *g, const float *send, size_t n_per_rank, float *recv) {
  ZT_LOGGED("reduce_scatter", n_per_rank * sizeof(float) * (size_t)(g ? g->size : 1), g,
            reduce_scatter_impl(g, "zt_reduce_scatter_sum_f32", ZT_DTYPE_FP32, send, n_per_rank, recv));
}
void zt_reduce_scatter_sum(const zt_group *g, zt_dtype dt, const void *send, size_t n_per_rank, void *recv) {
  ZT_LOGGED("reduce_scatter", n_per_rank * zt_dtype_size(dt) * (size_t)(g ? g->size : 1), g,
            reduce_scatter_impl(g, "zt_reduce_scatter_sum", dt, send, n_per_rank, recv));
}
void zt_reduce_sum_f32(const zt_group *g, float *buf, size_t n, int root_group_rank) {
  ZT_LOGGED("reduce", n * sizeof(float), g, reduce_sum_f32_impl(g, buf, n, root_group_rank));
}
void zt_broadcast(const zt_group *g, void *buf, size_t bytes, int root_group_rank) {
  ZT_LOGGED("broadcast", bytes, g, broadcast_impl(g, buf, bytes, root_group_rank));
}
void zt_send_f32(const zt_group *g, const float *buf, size_t n, int dst) {
  ZT_LOGGED("send", n * sizeof(float), g, send_impl(g, "zt_send_f32", ZT_DTYPE_FP32, buf, n, dst));
}
void zt_recv_f32(const zt_group *g, float *buf, size_t n, int src) {
  ZT_LOGGED("recv", n * sizeof(float), g, recv_impl(g, "zt_recv_f32", ZT_DTYPE_FP32, buf, n, src));
}
void zt_send(const zt_group *g, zt_dtype dt, const void *buf, size_t n, int dst) {
  ZT_LOGGED("send", n * zt_dtype_size(dt), g, send_impl(g, "zt_send", dt, buf, n, dst));
}
void zt_recv(const zt_group *g, zt_dtype dt, void *buf, size_t n, int src) {
  ZT_LOGGED("recv", n * zt_dtype_size(dt), g, recv_impl(g, "zt_recv", dt, buf, n, src));
}
void zt_barrier(const zt_group *g) { ZT_LOGGED("barrier", 0, g, barrier_impl(g)); }

/* ---- start-up agreement and the watchdog's view ------------------------------------------------------------ */

int zt_comm_describe_wait(char *buf, size_t n) {
  const char *op = atomic_load_explicit(&g_wait_op, memory_order_acquire);
  if (!op) return 0;
  const zt_group *g = atomic_load_explicit(&g_wait_group, memory_order_relaxed);
  const int peer = atomic_load_explicit(&g_wait_peer, memory_order_relaxed);
  if (peer >= 0 && g && peer < g->size)
    snprintf(buf, n, "%s on %s, exchanging with world rank %d", op, g->desc, g->world_ranks[peer]);
  else
    snprintf(buf, n, "%s on %s", op, g ? g->desc : "?");
  return 1;
}

static void pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Lists the group ranks with missing[r] set, as world ranks: "1, 3" (at most 16, then a count). */
static void list_ranks(const zt_group *g, const unsigned char *flag, char *buf, size_t n) {
  size_t len = 0;
  int shown = 0, total = 0;
  buf[0] = 0;
  for (int r = 0; r < g->size; r++) {
    if (!flag[r]) continue;
    total++;
    if (shown < 16 && len < n) {
      len += (size_t)snprintf(buf + len, n - len, "%s%d", shown ? ", " : "", g->world_ranks[r]);
      shown++;
    }
  }
  if (total > shown && len < n) snprintf(buf + len, n - len, " and %d more", total - shown);
}

void zt_comm_set_startup_timeout(double seconds) { g_startup_timeout_s = seconds; }
double zt_comm_startup_timeout(void) { return g_startup_timeout_s; }

void zt_comm_agree(const zt_group *g, const char *what, const void *mine, size_t bytes, double timeout_s,
                   zt_agree_explain explain) {
  const char *op = "zt_comm_agree";
  check_group(g, op);
  zt_check(bytes < g_chunk_bytes && bytes <= INT32_MAX, "comm", "%s: %zu bytes of %s, at most %zu", op, bytes, what,
           g_chunk_bytes);
  if (g->size == 1) return;
  /* the other members wait twice as long for group rank 0 as it waits for their reports: a silent member is then
   * named by rank 0, which knows who is missing, instead of a member that only knows rank 0 did not answer (the two
   * clocks start apart, and a loaded machine let the members' run out first) */
  const double wait_s = g->rank == 0 ? timeout_s : 2 * timeout_s;
  const double t0 = zt_now(), deadline = timeout_s > 0 ? t0 + wait_s : INFINITY;
  char limit[64];
  snprintf(limit, sizeof limit, timeout_s > 0 ? "%.0f s" : "ever", wait_s);
  if (g->rank != 0) {
    /* report to group rank 0, then wait for its verdict: 1 = all agree (a disagreement ends the job there) */
    MPI_Request req[2];
    int verdict = 0;
    CHECK_MPI(MPI_Isend(mine, (int)bytes, MPI_BYTE, 0, TAG_AGREE, g->comm, &req[0]), op, g, "%zu bytes of %s",
              bytes, what);
    CHECK_MPI(MPI_Irecv(&verdict, 1, MPI_INT, 0, TAG_VERDICT, g->comm, &req[1]), op, g, "the verdict on %s", what);
    wait_on(op, g, 0);
    for (int done = 0;;) {
      CHECK_MPI(MPI_Testall(2, req, &done, MPI_STATUSES_IGNORE), op, g, "waiting for group rank 0 on %s", what);
      if (done) break;
      if (zt_now() > deadline)
        zt_fatal("comm", "%s on %s: world rank %d waited %s for world rank %d to confirm that all ranks agree on %s; "
                 "it did not answer (stopped, dead or stuck; --distributed-timeout-minutes sets the wait)", op,
                 g->desc, g_world.rank, limit, g->world_ranks[0], what);
      pause_ms(1);
    }
    wait_done();
    return;
  }
  /* group rank 0: collects every report, compares it with its own */
  unsigned char *missing = zt_calloc((size_t)g->size, 1, "comm: agreement table");
  unsigned char *differs = zt_calloc((size_t)g->size, 1, "comm: agreement table");
  char *buf = zt_malloc(bytes + 1, "comm: agreement buffer"), *first = NULL;
  int first_rank = -1, pending = g->size - 1, ndiff = 0;
  size_t first_len = 0;
  for (int r = 1; r < g->size; r++) missing[r] = 1;
  wait_on(op, g, -1);
  while (pending > 0 && zt_now() <= deadline) {
    int flag = 0;
    MPI_Status st;
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, TAG_AGREE, g->comm, &flag, &st), op, g, "probing for reports on %s", what);
    if (!flag) {
      pause_ms(1);
      continue;
    }
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    char *dst = (size_t)count <= bytes ? buf : zt_malloc((size_t)count, "comm: agreement buffer");
    CHECK_MPI(MPI_Recv(dst, count, MPI_BYTE, st.MPI_SOURCE, TAG_AGREE, g->comm, MPI_STATUS_IGNORE), op, g,
              "%d bytes of %s from group rank %d", count, what, st.MPI_SOURCE);
    const int r = st.MPI_SOURCE;
    missing[r] = 0;
    pending--;
    if ((size_t)count != bytes || memcmp(dst, mine, bytes) != 0) {
      differs[r] = 1;
      ndiff++;
      if (first_rank < 0 || r < first_rank) {
        free(first);
        first = zt_malloc((size_t)count + 1, "comm: agreement buffer");
        memcpy(first, dst, (size_t)count);
        first[count] = 0;
        first_len = (size_t)count;
        first_rank = r;
      }
    }
    if (dst != buf) free(dst);
  }
  wait_done();
  char ranks[256];
  if (pending > 0) {
    list_ranks(g, missing, ranks, sizeof ranks);
    zt_fatal("comm", "%s on %s: world rank %d waited %s for every rank's report on %s; world rank%s %s sent none "
             "(stopped, dead, stuck or not started; --distributed-timeout-minutes sets the wait)", op, g->desc,
             g_world.rank, limit, what, pending > 1 ? "s" : "", ranks);
  }
  if (ndiff > 0) {
    char detail[2048] = "";
    if (explain) explain(mine, bytes, first, first_len, g->world_ranks[first_rank], detail, sizeof detail);
    list_ranks(g, differs, ranks, sizeof ranks);
    zt_fatal("inconsistent ranks", "world rank %d disagrees with world rank %d on %s%s%s (%d of %d ranks differ from "
             "world rank %d: %s)", g->world_ranks[first_rank], g_world.rank, what, detail[0] ? ": " : "", detail,
             ndiff, g->size, g_world.rank, ranks);
  }
  free(first);
  free(buf);
  free(differs);
  free(missing);
  const int ok = 1;
  MPI_Request *req = zt_malloc(sizeof(MPI_Request) * (size_t)g->size, "comm: verdict requests");
  for (int r = 1; r < g->size; r++)
    CHECK_MPI(MPI_Isend(&ok, 1, MPI_INT, r, TAG_VERDICT, g->comm, &req[r - 1]), op, g, "the verdict to %d", r);
  CHECK_MPI(MPI_Waitall(g->size - 1, req, MPI_STATUSES_IGNORE), op, g, "the verdict on %s", what);
  free(req);
}
