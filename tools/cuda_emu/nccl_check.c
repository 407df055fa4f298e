/* The emulated NCCL's own check (tools/cuda_emu/README.md, "NCCL"), run by scripts/cuda_emu_tests.sh under
 * mpirun -np 3 with ZT_EMU_DEVICES=3: every call against values each rank computes locally from the inputs every
 * rank generates (all types and ops, half types folded in fp32 in rank order and rounded once with
 * runtime/base/dtype.c's conversions, bit for bit), the in-place forms, groups, communicators of some ranks and of
 * one, and the refusals: NCCL's argument checks, ranks that disagree, a receive of the wrong size, a duplicate GPU. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/dtype.h"

static int R, P, passed, failed;
static cudaStream_t stream;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...) {
  if (ok) {
    passed++;
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  fprintf(stdout, "FAIL [rank %d] ", R);
  vfprintf(stdout, fmt, ap);
  fprintf(stdout, "\n");
  va_end(ap);
  fflush(stdout);
  failed++;
}
#define NC(call)                                                                                          \
  do {                                                                                                    \
    ncclResult_t r_ = (call);                                                                             \
    if (r_ != ncclSuccess) {                                                                              \
      printf("FAIL [rank %d] %s at line %d: %s\n", R, #call, __LINE__, ncclGetErrorString(r_));          \
      fflush(stdout);                                                                                     \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                       \
    }                                                                                                     \
  } while (0)
#define CK(call)                                                                                          \
  do {                                                                                                    \
    if ((call) != cudaSuccess) {                                                                          \
      printf("FAIL [rank %d] %s at line %d\n", R, #call, __LINE__);                                      \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                       \
    }                                                                                                     \
  } while (0)

static void *dev(size_t bytes) {
  void *p = NULL;
  CK(cudaMalloc(&p, bytes ? bytes : 1));
  return p;
}
static void up(void *d, const void *h, size_t bytes) { CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice)); }
static void down(void *h, const void *d, size_t bytes) { CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost)); }

/* ---- the types: generation, folding in rank order, as the emulator promises ------------------------------------ */
static const ncclDataType_t types[] = {ncclInt8,  ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                                       ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
static const char *type_names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                   "float16", "float32", "float64", "bfloat16"};
static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
static const char *op_names[] = {"sum", "prod", "max", "min", "avg"};
static size_t tsize(ncclDataType_t t) {
  return t == ncclInt8 || t == ncclUint8 ? 1 : t == ncclFloat16 || t == ncclBfloat16 ? 2
         : t == ncclInt64 || t == ncclUint64 || t == ncclFloat64 ? 8 : 4;
}
static int is_int(ncclDataType_t t) { return t <= ncclUint64; }
static int is_signed(ncclDataType_t t) { return t == ncclInt8 || t == ncclInt32 || t == ncclInt64; }

/* Element i of rank r's input (salt varies the case): small integers, products of three stay in range; floats
 * of both signs, exactly representable in the type. */
static double gen(int r, size_t i, int salt, ncclDataType_t t) {
  const long k = (long)((r * 7919 + i * 104729 + (size_t)salt * 31) % 2001);
  if (is_int(t)) return is_signed(t) ? (double)(k % 11 - 5) : (double)(k % 11);
  const float f = (float)(k - 1000) / 97.0f;
  if (t == ncclFloat16) return zt_fp16_to_fp32(zt_fp32_to_fp16(f));
  if (t == ncclBfloat16) return zt_bf16_to_fp32(zt_fp32_to_bf16(f));
  return t == ncclFloat64 ? (double)(k - 1000) / 97.0 : f;
}
static void store(void *buf, size_t i, ncclDataType_t t, double v) {
  switch (t) {
    /* integers through int64: a product past the type's range wraps, as on the device */
    case ncclInt8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
    case ncclUint8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
    case ncclInt32: ((int32_t *)buf)[i] = (int32_t)(int64_t)v; break;
    case ncclUint32: ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v; break;
    case ncclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case ncclUint64: ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v; break;
    case ncclFloat16: ((uint16_t *)buf)[i] = zt_fp32_to_fp16((float)v); break;
    case ncclBfloat16: ((uint16_t *)buf)[i] = zt_fp32_to_bf16((float)v); break;
    case ncclFloat32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
  }
}
static void fill(void *buf, int r, size_t n, int salt, ncclDataType_t t) {
  for (size_t i = 0; i < n; i++) store(buf, i, t, gen(r, i, salt, t));
}

/* The fold of contributions x[0..P-1] of element i in rank order: integers in 64 bits (the inputs keep every
 * result in range), fp32 for fp32 and the 16-bit types (rounded once by store), fp64 for fp64. */
static double fold(const double *x, int n, ncclDataType_t t, ncclRedOp_t op) {
  if (is_int(t)) {
    int64_t a = (int64_t)x[0];
    for (int r = 1; r < n; r++) {
      const int64_t v = (int64_t)x[r];
      a = op == ncclSum || op == ncclAvg ? a + v : op == ncclProd ? a * v : op == ncclMax ? (v > a ? v : a)
                                                                                            : (v < a ? v : a);
    }
    return (double)(op == ncclAvg ? a / n : a);
  }
  if (t == ncclFloat64) {
    const double inv = 1.0 / n;
    double a = x[0];
    if (op == ncclAvg) a *= inv;
    for (int r = 1; r < n; r++) {
      volatile double y = op == ncclAvg ? x[r] * inv : x[r]; /* no fused multiply-add: two roundings */
      a = op == ncclSum || op == ncclAvg ? a + y : op == ncclProd ? a * y : op == ncclMax ? fmax(a, y) : fmin(a, y);
    }
    return a;
  }
  const float inv = (float)(1.0 / n);
  float a = (float)x[0];
  if (op == ncclAvg) a *= inv;
  for (int r = 1; r < n; r++) {
    volatile float y = op == ncclAvg ? (float)x[r] * inv : (float)x[r];
    a = op == ncclSum || op == ncclAvg ? a + y : op == ncclProd ? a * y : op == ncclMax ? fmaxf(a, y) : fminf(a, y);
  }
  return a;
}

/* ---- collectives against the local computation ------------------------------------------------------------------- */
static void check_reductions(ncclComm_t comm, int cp, int cr, const int *members, size_t n, const char *name) {
  for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
    const ncclDataType_t t = types[ti];
    const size_t es = tsize(t);
    unsigned char *h = malloc(n * cp * es + 1), *want = malloc(n * cp * es + 1), *got = malloc(n * cp * es + 1);
    double x[16];
    for (int oi = 0; oi < 5; oi++) {
      const ncclRedOp_t op = ops[oi];
      const int salt = (int)(ti * 5 + oi);
      /* all-reduce, out of place then in place */
      fill(h, members[cr], n, salt, t);
      void *s = dev(n * es), *d = dev(n * es);
      up(s, h, n * es);
      NC(ncclAllReduce(s, d, n, t, op, comm, stream));
      for (size_t i = 0; i < n; i++) {
        for (int r = 0; r < cp; r++) x[r] = gen(members[r], i, salt, t);
        store(want, i, t, fold(x, cp, t, op));
      }
      down(got, d, n * es);
      check(!memcmp(got, want, n * es), "%s: ncclAllReduce %s %s, %zu elements: not the rank-order fold", name,
            type_names[ti], op_names[oi], n);
      NC(ncclAllReduce(s, s, n, t, op, comm, stream));
      down(got, s, n * es);
      check(!memcmp(got, want, n * es), "%s: ncclAllReduce in place %s %s", name, type_names[ti], op_names[oi]);
      /* reduce to the last rank, in place there; NULL recvbuff elsewhere */
      up(s, h, n * es);
      const int root = cp - 1;
      NC(ncclReduce(s, cr == root ? s : NULL, n, t, op, root, comm, stream));
      if (cr == root) {
        down(got, s, n * es);
        check(!memcmp(got, want, n * es), "%s: ncclReduce in place at the root, %s %s", name, type_names[ti],
              op_names[oi]);
      }
      cudaFree(s), cudaFree(d);
      /* reduce-scatter: out of place, then in place (recvbuff = sendbuff + rank * recvcount) */
      fill(h, members[cr], n * cp, salt + 100, t);
      s = dev(n * cp * es), d = dev(n * es);
      up(s, h, n * cp * es);
      NC(ncclReduceScatter(s, d, n, t, op, comm, stream));
      for (size_t i = 0; i < n; i++) {
        for (int r = 0; r < cp; r++) x[r] = gen(members[r], cr * n + i, salt + 100, t);
        store(want, i, t, fold(x, cp, t, op));
      }
      down(got, d, n * es);
      check(!memcmp(got, want, n * es), "%s: ncclReduceScatter %s %s", name, type_names[ti], op_names[oi]);
      NC(ncclReduceScatter(s, (char *)s + cr * n * es, n, t, op, comm, stream));
      down(got, (char *)s + cr * n * es, n * es);
      check(!memcmp(got, want, n * es), "%s: ncclReduceScatter in place %s %s", name, type_names[ti], op_names[oi]);
      cudaFree(s), cudaFree(d);
    }
    /* all-gather and broadcast move bits: out of place and in place */
    fill(h, members[cr], n, (int)ti, t);
    void *s = dev(n * es), *d = dev(n * cp * es);
    up(s, h, n * es);
    NC(ncclAllGather(s, d, n, t, comm, stream));
    for (int r = 0; r < cp; r++) fill(want + r * n * es, members[r], n, (int)ti, t);
    down(got, d, n * cp * es);
    check(!memcmp(got, want, n * cp * es), "%s: ncclAllGather %s", name, type_names[ti]);
    CK(cudaMemset(d, 0, n * cp * es));
    up((char *)d + cr * n * es, h, n * es);
    NC(ncclAllGather((char *)d + cr * n * es, d, n, t, comm, stream));
    down(got, d, n * cp * es);
    check(!memcmp(got, want, n * cp * es), "%s: ncclAllGather in place %s", name, type_names[ti]);
    NC(ncclBroadcast(s, d, n, t, 0, comm, stream));
    down(got, d, n * es);
    check(!memcmp(got, want, n * es), "%s: ncclBroadcast from rank 0 %s", name, type_names[ti]);
    NC(ncclBroadcast(s, s, n, t, cp - 1, comm, stream));
    down(got, s, n * es);
    check(!memcmp(got, want + (cp - 1) * n * es, n * es), "%s: ncclBroadcast in place from rank %d %s", name, cp - 1,
          type_names[ti]);
    cudaFree(s), cudaFree(d);
    free(h), free(want), free(got);
  }
}

/* ---- groups: sends and receives together, nested, with a collective and with the calling rank itself ------------ */
static void check_groups(ncclComm_t comm) {
  const size_t n = 1000;
  const int next = (R + 1) % P, prev = (R + P - 1) % P;
  float h[1000], got[1000];
  float *a = dev(n * 4), *b = dev(n * 4), *ra = dev(n * 4), *rb = dev(n * 4), *self = dev(n * 4), *sum = dev(4);
  fill(h, R, n, 1, ncclFloat32);
  up(a, h, n * 4);
  fill(h, R, n, 2, ncclFloat32);
  up(b, h, n * 4);
  float one = 1.0f;
  up(sum, &one, 4);
  NC(ncclGroupStart());
  NC(ncclSend(a, n, ncclFloat32, next, comm, stream));
  NC(ncclGroupStart()); /* nested: only the outermost end runs the group */
  NC(ncclRecv(ra, n, ncclFloat32, prev, comm, stream));
  NC(ncclSend(b, n, ncclFloat32, prev, comm, stream));
  NC(ncclGroupEnd());
  NC(ncclAllReduce(sum, sum, 1, ncclFloat32, ncclSum, comm, stream));
  NC(ncclRecv(rb, n, ncclFloat32, next, comm, stream));
  NC(ncclSend(a, n, ncclFloat32, R, comm, stream)); /* to itself */
  NC(ncclRecv(self, n, ncclFloat32, R, comm, stream));
  NC(ncclGroupEnd());
  float want[1000];
  fill(want, prev, n, 1, ncclFloat32);
  down(got, ra, n * 4);
  check(!memcmp(got, want, n * 4), "group: ring to the next rank");
  fill(want, next, n, 2, ncclFloat32);
  down(got, rb, n * 4);
  check(!memcmp(got, want, n * 4), "group: ring to the previous rank");
  fill(want, R, n, 1, ncclFloat32);
  down(got, self, n * 4);
  check(!memcmp(got, want, n * 4), "group: send to itself");
  down(got, sum, 4);
  check(got[0] == (float)P, "group: the all-reduce queued with the transfers (%g)", got[0]);
  /* outside a group: rank 0 sends, rank 1 receives (the blocking pair NCCL allows) */
  if (R == 0) NC(ncclSend(a, n, ncclFloat32, 1, comm, stream));
  if (R == 1) {
    NC(ncclRecv(ra, n, ncclFloat32, 0, comm, stream));
    fill(want, 0, n, 1, ncclFloat32);
    down(got, ra, n * 4);
    check(!memcmp(got, want, n * 4), "ncclSend/ncclRecv outside a group");
  }
  cudaFree(a), cudaFree(b), cudaFree(ra), cudaFree(rb), cudaFree(self), cudaFree(sum);
}

/* ---- refusals --------------------------------------------------------------------------------------------------- */
static void check_refusals(ncclComm_t comm) {
  float *d = dev(64 * 4), host[64];
  cudaStream_t dead;
  CK(cudaStreamCreate(&dead));
  CK(cudaStreamDestroy(dead));
  CK(cudaSetDevice((R + 1) % P));
  float *other = dev(64 * 4);
  CK(cudaSetDevice(R));
  /* each call, then its result and the message it left (the note on stderr says the same; "" for none) */
#define REFUSED(what, needle, want, call)                                                                       \
  do {                                                                                                          \
    const ncclResult_t got_ = (call);                                                                           \
    const char *last_ = ncclGetLastError(comm);                                                                 \
    check(got_ == (want) && strstr(last_, needle), "refusal of %s: %s (last error: %s)", what,  \
          ncclGetErrorString(got_), last_);                                                                     \
  } while (0)
  REFUSED("NULL sendbuff with count > 0", "sendbuff is NULL", ncclInvalidArgument,
          ncclAllReduce(NULL, d, 4, ncclFloat32, ncclSum, comm, stream));
  REFUSED("count 0 with NULL buffers", "", ncclSuccess,
          ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, comm, stream));
  REFUSED("a host buffer", "not device memory", ncclInvalidArgument,
          ncclAllReduce(host, d, 4, ncclFloat32, ncclSum, comm, stream));
  REFUSED("a buffer of another device", "memory of device", ncclInvalidArgument,
          ncclAllReduce(other, d, 4, ncclFloat32, ncclSum, comm, stream));
  REFUSED("a buffer past its allocation", "past the end", ncclInvalidArgument,
          ncclAllReduce(d, d, 65, ncclFloat32, ncclSum, comm, stream));
  REFUSED("root = nranks", "root 3", ncclInvalidArgument, ncclBroadcast(d, d, 4, ncclFloat32, P, comm, stream));
  REFUSED("peer -1", "peer -1", ncclInvalidArgument, ncclSend(d, 4, ncclFloat32, -1, comm, stream));
  REFUSED("all-reduce buffers overlapping, not equal", "overlap", ncclInvalidArgument,
          ncclAllReduce(d, d + 1, 8, ncclFloat32, ncclSum, comm, stream));
  REFUSED("all-gather overlapping, not in place", "in place means sendbuff = recvbuff + rank", ncclInvalidArgument,
          ncclAllGather(d + (R == 0 ? 1 : 0), d, 4, ncclFloat32, comm, stream));
  REFUSED("reduce-scatter overlapping, not in place", "in place means recvbuff = sendbuff + rank",
          ncclInvalidArgument, ncclReduceScatter(d, d + 1, 4, ncclFloat32, ncclSum, comm, stream));
  REFUSED("a destroyed stream", "not a live stream", ncclInvalidArgument,
          ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, comm, dead));
  REFUSED("fp8", "not emulated", ncclInvalidArgument, ncclAllReduce(d, d, 4, ncclFloat8e4m3, ncclSum, comm, stream));
  REFUSED("op 9", "not a built-in", ncclInvalidArgument,
          ncclAllReduce(d, d, 4, ncclFloat32, (ncclRedOp_t)9, comm, stream));
  REFUSED("a NULL communicator", "comm is NULL", ncclInvalidArgument,
          ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, NULL, stream));
  REFUSED("ncclGroupEnd without ncclGroupStart", "without ncclGroupStart", ncclInvalidUsage, ncclGroupEnd());
  REFUSED("a send to itself outside a group", "never completes", ncclInvalidUsage,
          ncclSend(d, 4, ncclFloat32, R, comm, stream));
#undef REFUSED
  /* a refused call inside a group: the group's end reports it and runs nothing */
  NC(ncclGroupStart());
  ncclResult_t bad = ncclSend(host, 4, ncclFloat32, (R + 1) % P, comm, stream);
  NC(ncclRecv(d, 4, ncclFloat32, (R + P - 1) % P, comm, stream));
  ncclResult_t end = ncclGroupEnd();
  check(bad == ncclInvalidArgument && end == ncclInvalidArgument, "a refused call in a group: %s, then ncclGroupEnd %s",
        ncclGetErrorString(bad), ncclGetErrorString(end));
  /* ranks that disagree on a collective are told so, instead of hanging */
  ncclResult_t r = ncclAllReduce(d, d, R == 1 ? 5 : 4, ncclFloat32, ncclSum, comm, stream);
  check(r == ncclInvalidUsage && strstr(ncclGetLastError(comm), "disagree"), "ranks disagreeing on count: %s (%s)",
        ncclGetErrorString(r), ncclGetLastError(comm));
  r = ncclBroadcast(d, d, 4, ncclFloat32, R == 2 ? 1 : 0, comm, stream);
  check(r == ncclInvalidUsage, "ranks disagreeing on the root: %s", ncclGetErrorString(r));
  /* a receive of another size than was sent */
  if (R < 2) {
    NC(ncclGroupStart());
    ncclResult_t s1 = R == 0 ? ncclSend(d, 10, ncclFloat32, 1, comm, stream)
                             : ncclRecv(d, 12, ncclFloat32, 0, comm, stream);
    ncclResult_t e1 = ncclGroupEnd();
    check(s1 == ncclSuccess && (R == 0 ? e1 == ncclSuccess
                                       : e1 == ncclInvalidUsage && strstr(ncclGetLastError(comm), "sent 40 bytes")),
          "a receive of 48 bytes fed 40: %s (%s)", ncclGetErrorString(e1), ncclGetLastError(comm));
    NC(ncclGroupStart());
    s1 = R == 0 ? ncclSend(d, 12, ncclFloat32, 1, comm, stream) : ncclRecv(d, 10, ncclFloat32, 0, comm, stream);
    e1 = ncclGroupEnd();
    check(R == 0 ? e1 == ncclSuccess : e1 == ncclInvalidUsage && strstr(ncclGetLastError(comm), "sent more"),
          "a receive of 40 bytes fed 48: %s (%s)", ncclGetErrorString(e1), ncclGetLastError(comm));
  }
  cudaFree(d), cudaFree(other);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  if (P != 3 || ndev < P) {
    if (R == 0)
      printf("nccl_check needs mpirun -np 3 and ZT_EMU_DEVICES=3 (%d ranks, %d devices)\n0 passed, 1 failed\n", P,
             ndev);
    MPI_Finalize();
    return 1;
  }
  CK(cudaSetDevice(R)); /* one device per rank, as on a node with P GPUs */
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int version = 0;
  NC(ncclGetVersion(&version));
  if (R == 0) printf("nccl_check: the emulated NCCL %d on %d ranks\n", version, P);

  /* the world, from rank 0's id */
  ncclUniqueId id;
  if (R == 0) NC(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t world;
  NC(ncclCommInitRank(&world, P, id, R));
  int cnt = -1, rank = -1, cdev = -1;
  NC(ncclCommCount(world, &cnt));
  NC(ncclCommUserRank(world, &rank));
  NC(ncclCommCuDevice(world, &cdev));
  check(cnt == P && rank == R && cdev == R, "ncclCommCount %d, UserRank %d, CuDevice %d", cnt, rank, cdev);

  /* ranks 2 and 0 (in that order), created by the members only; rank 2 (its rank 0) draws the id */
  const int pair[2] = {2, 0};
  ncclComm_t sub = NULL;
  if (R != 1) {
    ncclUniqueId sid;
    if (R == 2) {
      NC(ncclGetUniqueId(&sid));
      MPI_Send(&sid, sizeof sid, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
    } else {
      MPI_Recv(&sid, sizeof sid, MPI_BYTE, 2, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    NC(ncclCommInitRank(&sub, 2, sid, R == 2 ? 0 : 1));
  }
  /* a communicator of one rank (each rank its own) */
  ncclUniqueId oid;
  ncclComm_t alone;
  NC(ncclGetUniqueId(&oid));
  NC(ncclCommInitRank(&alone, 1, oid, 0));

  const int all[3] = {0, 1, 2}, me_only[1] = {R};
  const size_t sizes[2] = {1, 777};
  for (int pass = 0; pass < 2; pass++) {
    /* the second pass with 1 KiB chunks: every collective crosses chunk boundaries */
    if (pass == 1) setenv("ZT_EMU_NCCL_CHUNK_KB", "1", 1);
    for (int k = 0; k < 2; k++) {
      check_reductions(world, P, R, all, sizes[k], "world");
      if (sub) check_reductions(sub, 2, R == 2 ? 0 : 1, pair, sizes[k], "ranks {2, 0}");
      check_reductions(alone, 1, 0, me_only, sizes[k], "one rank");
    }
  }
  unsetenv("ZT_EMU_NCCL_CHUNK_KB");
  if (R == 0) printf("collectives: %d checks on rank 0\n", passed);
  check_groups(world);
  if (R == 0) fprintf(stderr, "nccl_check: the refusals below are expected\n");
  check_refusals(world);

  /* NCCL refuses two ranks of one communicator on one GPU */
  CK(cudaSetDevice(0));
  ncclUniqueId did;
  if (R == 0) NC(ncclGetUniqueId(&did));
  MPI_Bcast(&did, sizeof did, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t dup = NULL;
  ncclResult_t r = ncclCommInitRank(&dup, P, did, R);
  check(r == ncclInvalidUsage && !dup && strstr(ncclGetLastError(NULL), "Duplicate GPU"),
        "ranks on one device: ncclCommInitRank %s (%s)", ncclGetErrorString(r), ncclGetLastError(NULL));
  CK(cudaSetDevice(R));

  NC(ncclCommDestroy(alone));
  if (sub) NC(ncclCommDestroy(sub));
  NC(ncclCommDestroy(world));
  check(ncclCommCount(world, &cnt) == ncclInvalidArgument, "a destroyed communicator is refused");
  int totals[2] = {passed, failed}, sums[2];
  MPI_Reduce(totals, sums, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (R == 0) printf("%d passed, %d failed\n", sums[0], sums[1]);
  MPI_Finalize();
  return failed ? 1 : 0;
}
