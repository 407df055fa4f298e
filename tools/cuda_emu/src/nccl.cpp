// The CPU emulator's NCCL (include/nccl.h; README.md, "NCCL"): communicators between the processes of an MPI job,
// each backed by an MPI communicator of its members; every operation runs with MPI when it is called (an emulated
// stream is always idle), on emulated device memory (host memory in the registry of src/runtime.cpp). Reductions
// are deterministic: each rank folds all contributions in rank order (src/nccl_reduce.h). NCCL's documented
// argument checks are made (refused with ncclInvalidArgument/ncclInvalidUsage and a note on stderr), plus what a
// GPU run would show only as a hang or garbage: ranks that disagree on a collective's arguments, a send or receive
// that is never matched (after ZT_EMU_NCCL_TIMEOUT_S), a receive of another size than was sent.
#include "nccl.h"

// the C API only (OpenMPI's and MPICH's C++ bindings would need their own library)
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "internal.h"
#include "nccl_reduce.h"

namespace zt_emu {
namespace nccl {
namespace {

// ---- errors -------------------------------------------------------------------------------------------------------
std::string last_error;

ncclResult_t fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ncclResult_t fail(ncclResult_t r, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  last_error = buf;
  note("%s", buf);
  return r;
}

bool mpi_up() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

int world_rank() {
  int r = 0;
  if (mpi_up()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Waits for MPI requests, polling so that a send or receive nobody matches ends the job with a message instead of a
// hang (on a GPU it would hang). Sleeps between polls: the waiting ranks leave the cores to the working ones.
int wait_all(std::vector<MPI_Request> &req, std::vector<MPI_Status> &st, const char *what) {
  st.resize(req.size());
  if (req.empty()) return MPI_SUCCESS;
  const double limit = env_int("ZT_EMU_NCCL_TIMEOUT_S", 300);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long nap_ns = 2000;
  for (;;) {
    int done = 0;
    const int rc = MPI_Testall((int)req.size(), req.data(), &done, st.data());
    if (rc != MPI_SUCCESS || done) return rc;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec + 1e-9 * (t.tv_nsec - t0.tv_nsec) > limit)
      fatal("%s: not matched by the other ranks after %.0f s (ZT_EMU_NCCL_TIMEOUT_S): on a GPU this hangs. A rank "
          "skipped the call, called it with another communicator or peer, or a send waits for a receive queued "
          "behind it (pair sends and receives inside ncclGroupStart/ncclGroupEnd)", what, limit);
    struct timespec nap = {0, nap_ns};
    nanosleep(&nap, NULL);
    nap_ns = std::min(nap_ns * 2, 1000000L);
  }
}

std::string mpi_message(int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return std::string(msg, (size_t)len);
}

}  // namespace
}  // namespace nccl
}  // namespace zt_emu

using namespace zt_emu;
using namespace zt_emu::nccl;

// ---- communicators ------------------------------------------------------------------------------------------------
struct ncclComm {
  uint32_t magic;
  int nranks, rank, device;
  MPI_Comm mpi;  // MPI_COMM_NULL for a communicator of one rank (no MPI needed)
  std::vector<int> world;  // world rank of each member
};

namespace {

enum : uint32_t { kCommMagic = 0x4e43434cu, kIdMagic = 0x7a4e4331u, kDead = 0xdeadu };
// MPI_COMM_WORLD tags of the communicator bootstrap: a join and its answer per id, 2 * kIdSpan tags from kTagBase
// (within the 32767 every MPI allows); runtime/comm uses its own communicators, never MPI_COMM_WORLD's tags
enum : int { kTagBase = 20000, kIdSpan = 4096, kP2PTag = 1 };

// What ncclGetUniqueId writes into the 128 bytes: who drew it (the coordinator of the bootstrap) and which of its ids.
struct IdBody {
  uint32_t magic;
  int32_t creator;  // world rank; -1 when MPI was not initialized (only a communicator of one rank can use it)
  uint64_t seq;     // per process
  int64_t pid;      // the creator's process, to tell its own ids from a stale or foreign one
};
static_assert(sizeof(IdBody) <= NCCL_UNIQUE_ID_BYTES, "unique id");
uint64_t id_seq;

struct Join {  // a member to the coordinator
  uint64_t seq;
  int32_t nranks, rank, device, world;
  char host[64];
};
struct Answer {  // the coordinator to each member: the outcome, then the member table
  int32_t result;
  char why[448];
};

std::string host_name() {
  char h[64] = {0};
  gethostname(h, sizeof h - 1);
  return h;
}

bool comm_live(ncclComm_t c) { return c && c->magic == kCommMagic; }

ncclResult_t bootstrap_failed(ncclComm *c, const char *what, int rc) {
  delete c;
  return fail(ncclSystemError, "%s: MPI failed: %s", what, mpi_message(rc).c_str());
}

// The coordinator's view: every member's join (its own included), checked as NCCL checks them.
ncclResult_t check_joins(const std::vector<Join> &joins, int nranks, std::vector<int> &world, std::string &why) {
  world.assign((size_t)nranks, -1);
  std::vector<const Join *> by_rank((size_t)nranks, nullptr);
  char buf[448];
  for (const Join &j : joins) {
    if (j.nranks != nranks) {
      snprintf(buf, sizeof buf, "world rank %d says nranks = %d, the id's creator says %d", j.world, j.nranks, nranks);
      why = buf;
      return ncclInvalidArgument;
    }
    if (by_rank[(size_t)j.rank]) {
      snprintf(buf, sizeof buf, "world ranks %d and %d both asked for rank %d", by_rank[(size_t)j.rank]->world,
               j.world, j.rank);
      why = buf;
      return ncclInvalidArgument;
    }
    by_rank[(size_t)j.rank] = &j;
    world[(size_t)j.rank] = j.world;
  }
  // NCCL refuses two ranks of a communicator on one GPU: ZT_EMU_DEVICES devices per host, shared by its processes
  for (int a = 0; a < nranks; a++)
    for (int b = 0; b < a; b++)
      if (by_rank[(size_t)a]->device == by_rank[(size_t)b]->device &&
          !strcmp(by_rank[(size_t)a]->host, by_rank[(size_t)b]->host)) {
        snprintf(buf, sizeof buf,
                 "Duplicate GPU detected: rank %d (world rank %d) and rank %d (world rank %d) both on emulated CUDA "
                 "device %d of host %s (each rank needs its own device: cudaSetDevice before ncclCommInitRank, and "
                 "ZT_EMU_DEVICES large enough)",
                 b, by_rank[(size_t)b]->world, a, by_rank[(size_t)a]->world, by_rank[(size_t)a]->device,
                 by_rank[(size_t)a]->host);
        why = buf;
        return ncclInvalidUsage;
      }
  return ncclSuccess;
}

int group_depth;  // ncclGroupStart nesting

}  // namespace

extern "C" {

const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (see the cuda emulator's note on stderr)";
    case ncclSystemError: return "unhandled system error (see the cuda emulator's note on stderr)";
    case ncclInternalError: return "internal error (see the cuda emulator's note on stderr)";
    case ncclInvalidArgument: return "invalid argument (see the cuda emulator's note on stderr)";
    case ncclInvalidUsage: return "invalid usage (see the cuda emulator's note on stderr)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char *ncclGetLastError(ncclComm_t comm) { return last_error.c_str(); }

ncclResult_t ncclGetVersion(int *version) {
  if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  IdBody b = {kIdMagic, mpi_up() ? world_rank() : -1, id_seq++, (int64_t)getpid()};
  memset(id, 0, sizeof *id);
  memcpy(id->internal, &b, sizeof b);
  return ncclSuccess;
}

// The members find each other through the id's creator (the coordinator): each sends it a join over MPI_COMM_WORLD,
// it checks them all and answers with the member table, then the members create an MPI communicator of their own
// (MPI_Comm_create_group: collective over the members only, as ncclCommInitRank is).
ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
  const char *op = "ncclCommInitRank";
  if (!out) return fail(ncclInvalidArgument, "%s: comm is NULL", op);
  *out = NULL;
  if (group_depth > 0)
    return fail(ncclInvalidUsage, "%s inside ncclGroupStart/ncclGroupEnd: not emulated (create communicators "
                "outside groups)", op);
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "%s: rank %d of nranks %d (0 <= rank < nranks)", op, rank, nranks);
  IdBody b;
  memcpy(&b, id.internal, sizeof b);
  if (b.magic != kIdMagic)
    return fail(ncclInvalidArgument, "%s: the unique id was not made by ncclGetUniqueId (of this emulator)", op);
  const bool mpi = mpi_up();
  if (nranks > 1 && (!mpi || b.creator < 0))
    return fail(ncclInvalidUsage, "%s: %d ranks, but the emulated NCCL runs over MPI and MPI %s", op, nranks,
                mpi ? "was not initialized when the id was drawn" : "is not initialized (call MPI_Init first)");
  const int me = mpi ? world_rank() : 0;
  const bool coordinator = mpi ? me == b.creator : true;
  if (coordinator && b.pid != (int64_t)getpid())
    return fail(ncclInvalidArgument, "%s: the unique id names world rank %d as its creator, but this process did "
                "not draw it (an id from another job, or copied between processes wrongly)", op, me);
  int device = current_device_id();
  ncclComm *c = new ncclComm{kCommMagic, nranks, rank, device, MPI_COMM_NULL, {}};
  if (nranks == 1) {
    c->world.assign(1, me);
    *out = c;
    return ncclSuccess;
  }
  const int tag = kTagBase + 2 * (int)(b.seq % kIdSpan);
  Join mine = {b.seq, nranks, rank, device, me, {0}};
  snprintf(mine.host, sizeof mine.host, "%s", host_name().c_str());
  std::vector<int> world;
  std::vector<MPI_Request> req;
  std::vector<MPI_Status> st;
  char what[160];
  Answer ans = {ncclSuccess, {0}};
  if (coordinator) {
    std::vector<Join> joins((size_t)nranks);
    joins[0] = mine;
    for (int i = 1; i < nranks; i++) {
      req.assign(1, MPI_REQUEST_NULL);
      snprintf(what, sizeof what, "%s (rank %d of %d, coordinator): waiting for %d more member(s)", op, rank, nranks,
               nranks - i);
      int rc = MPI_Irecv(&joins[(size_t)i], (int)sizeof(Join), MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &req[0]);
      if (rc || (rc = wait_all(req, st, what))) return bootstrap_failed(c, what, rc);
      if (joins[(size_t)i].seq != b.seq)
        fatal("%s: world rank %d joined communicator id %llu of world rank %d while id %llu is being created (more "
            "than %d communicators created at once?)", op, joins[(size_t)i].world,
            (unsigned long long)joins[(size_t)i].seq, me, (unsigned long long)b.seq, (int)kIdSpan);
    }
    std::string why;
    ans.result = check_joins(joins, nranks, world, why);
    snprintf(ans.why, sizeof ans.why, "%s", why.c_str());
    snprintf(what, sizeof what, "%s (rank %d of %d, coordinator): answering the members", op, rank, nranks);
    for (int i = 1; i < nranks; i++) {
      int rc = MPI_Send(&ans, (int)sizeof ans, MPI_BYTE, joins[(size_t)i].world, tag + 1, MPI_COMM_WORLD);
      if (!rc && ans.result == ncclSuccess)
        rc = MPI_Send(world.data(), nranks, MPI_INT, joins[(size_t)i].world, tag + 1, MPI_COMM_WORLD);
      if (rc) return bootstrap_failed(c, what, rc);
    }
  } else {
    snprintf(what, sizeof what, "%s (rank %d of %d): waiting for world rank %d, which drew the id (it must be a "
             "member and call ncclCommInitRank too)", op, rank, nranks, b.creator);
    req.assign(1, MPI_REQUEST_NULL);
    int rc = MPI_Send(&mine, (int)sizeof mine, MPI_BYTE, b.creator, tag, MPI_COMM_WORLD);
    if (!rc) rc = MPI_Irecv(&ans, (int)sizeof ans, MPI_BYTE, b.creator, tag + 1, MPI_COMM_WORLD, &req[0]);
    if (!rc) rc = wait_all(req, st, what);
    if (!rc && ans.result == ncclSuccess) {
      world.resize((size_t)nranks);
      rc = MPI_Recv(world.data(), nranks, MPI_INT, b.creator, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rc) return bootstrap_failed(c, what, rc);
  }
  if (ans.result != ncclSuccess) {
    delete c;
    return fail((ncclResult_t)ans.result, "%s (rank %d of %d): %s", op, rank, nranks, ans.why);
  }
  MPI_Group wg, g;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_incl(wg, nranks, world.data(), &g);
  const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, g, tag, &c->mpi);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  if (rc != MPI_SUCCESS) {
    delete c;
    return fail(ncclSystemError, "%s: MPI_Comm_create_group failed: %s", op, mpi_message(rc).c_str());
  }
  MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN);
  int r = -1;
  MPI_Comm_rank(c->mpi, &r);
  if (r != rank) fatal("%s: MPI gave rank %d to the member that asked for rank %d", op, r, rank);
  c->world = world;
  *out = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
  if (!c) return ncclSuccess;  // NCCL accepts NULL
  if (!comm_live(c)) return fail(ncclInvalidArgument, "ncclCommDestroy: not a live communicator (destroyed twice?)");
  if (c->mpi != MPI_COMM_NULL && mpi_up()) MPI_Comm_free(&c->mpi);
  c->magic = kDead;  // kept, so that a later use is refused rather than read from freed memory
  return ncclSuccess;
}

// A query of a communicator: its value, or the refusal naming what is wrong.
static ncclResult_t query(const char *op, const ncclComm_t c, int *out, int value) {
  if (!out) return fail(ncclInvalidArgument, "%s: the result pointer is NULL", op);
  if (!comm_live(c)) return fail(ncclInvalidArgument, "%s: not a live communicator", op);
  *out = value;
  return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t c, int *count) {
  return query("ncclCommCount", c, count, comm_live(c) ? c->nranks : 0);
}
ncclResult_t ncclCommUserRank(const ncclComm_t c, int *rank) {
  return query("ncclCommUserRank", c, rank, comm_live(c) ? c->rank : 0);
}
ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *device) {
  return query("ncclCommCuDevice", c, device, comm_live(c) ? c->device : 0);
}

}  // extern "C"

// ---- operations ---------------------------------------------------------------------------------------------------
namespace {

enum Kind { K_ALLREDUCE, K_BROADCAST, K_REDUCE, K_ALLGATHER, K_REDUCESCATTER, K_SEND, K_RECV };
const char *const kind_name[] = {"ncclAllReduce", "ncclBroadcast",  "ncclReduce", "ncclAllGather",
                                 "ncclReduceScatter", "ncclSend", "ncclRecv"};
const char *const type_name[] = {"ncclInt8",  "ncclUint8",   "ncclInt32",   "ncclUint32",
                                 "ncclInt64", "ncclUint64",  "ncclFloat16", "ncclFloat32",
                                 "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
const char *const red_name[] = {"ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"};

struct Op {
  Kind kind;
  ncclComm *comm;
  const void *send;
  void *recv;
  size_t count;  // NCCL's: per rank for all-gather (sendcount) and reduce-scatter (recvcount)
  ncclDataType_t type;
  ncclRedOp_t red;  // reductions only
  int root;         // broadcast, reduce: the root; send, recv: the peer
};

std::vector<Op> queued;                    // inside a group
ncclResult_t group_error = ncclSuccess;    // the first refused call of the group: the group is not run
std::vector<char> stage_a, stage_b;        // staging of the chunked collectives

bool has_red(Kind k) { return k == K_ALLREDUCE || k == K_REDUCE || k == K_REDUCESCATTER; }
bool has_root(Kind k) { return k == K_BROADCAST || k == K_REDUCE; }
bool is_p2p(Kind k) { return k == K_SEND || k == K_RECV; }

bool overlap(const void *a, size_t na, const void *b, size_t nb) {
  return na && nb && (const char *)a < (const char *)b + nb && (const char *)b < (const char *)a + na;
}

ncclResult_t check_buffer(const Op &o, const char *name, const void *p, size_t bytes) {
  const char *op = kind_name[o.kind];
  if (!p) return fail(ncclInvalidArgument, "%s: %s is NULL with count %zu", op, name, o.count);
  if (!in_allocation(p, bytes, MEM_DEVICE)) {
    char buf[256];
    const Allocation *al = find_allocation(p);
    if (al && al->kind == MEM_PINNED)
      snprintf(buf, sizeof buf, "%p is pinned host memory (cudaMallocHost)", p);
    else
      describe_range(p, bytes, buf, sizeof buf);
    return fail(ncclInvalidArgument, "%s: %s of %zu bytes is not device memory: %s", op, name, bytes, buf);
  }
  const Allocation *al = find_allocation(p);
  if (al->device != o.comm->device)
    return fail(ncclInvalidArgument, "%s: %s is memory of device %d, the communicator's device is %d", op, name,
                al->device, o.comm->device);
  return ncclSuccess;
}

// NCCL's argument checks, and the emulator's (buffers on the communicator's device, no partial overlap).
ncclResult_t check(const Op &o) {
  const char *op = kind_name[o.kind];
  if (!o.comm) return fail(ncclInvalidArgument, "%s: comm is NULL", op);
  if (!comm_live(o.comm)) return fail(ncclInvalidArgument, "%s: comm is not a live communicator (destroyed?)", op);
  const int P = o.comm->nranks, me = o.comm->rank;
  const size_t es = type_size(o.type);
  if ((int)o.type < 0 || (int)o.type >= ncclNumTypes)
    return fail(ncclInvalidArgument, "%s: datatype %d is not an ncclDataType_t", op, (int)o.type);
  if (!es) return fail(ncclInvalidArgument, "%s: %s is not emulated (no fp8)", op, type_name[o.type]);
  if (has_red(o.kind) && ((int)o.red < 0 || (int)o.red >= ncclNumOps))
    return fail(ncclInvalidArgument, "%s: op %d is not a built-in ncclRedOp_t (custom ops are not emulated)", op,
                (int)o.red);
  if ((has_root(o.kind) || is_p2p(o.kind)) && (o.root < 0 || o.root >= P))
    return fail(ncclInvalidArgument, "%s: %s %d of a communicator of %d ranks", op, is_p2p(o.kind) ? "peer" : "root",
                o.root, P);
  if (o.count > (SIZE_MAX / 2) / es / (size_t)P)
    return fail(ncclInvalidArgument, "%s: count %zu is too large", op, o.count);
  if (o.count == 0) return ncclSuccess;  // nothing to move: NCCL returns at once, buffers unchecked
  const size_t b = o.count * es, bP = b * (size_t)P;
  ncclResult_t r = ncclSuccess;
  switch (o.kind) {
    case K_ALLREDUCE:
      if ((r = check_buffer(o, "sendbuff", o.send, b)) || (r = check_buffer(o, "recvbuff", o.recv, b))) return r;
      if (o.send != o.recv && overlap(o.send, b, o.recv, b))
        return fail(ncclInvalidArgument, "%s: sendbuff %p and recvbuff %p overlap (in place means equal)", op, o.send,
                    o.recv);
      break;
    case K_BROADCAST:  // sendbuff is read on the root only
      if (me == o.root && (r = check_buffer(o, "sendbuff", o.send, b))) return r;
      if ((r = check_buffer(o, "recvbuff", o.recv, b))) return r;
      if (me == o.root && o.send != o.recv && overlap(o.send, b, o.recv, b))
        return fail(ncclInvalidArgument, "%s: sendbuff %p and recvbuff %p overlap (in place means equal)", op, o.send,
                    o.recv);
      break;
    case K_REDUCE:  // recvbuff is written on the root only (NULL elsewhere is fine)
      if ((r = check_buffer(o, "sendbuff", o.send, b))) return r;
      if (me == o.root && (r = check_buffer(o, "recvbuff", o.recv, b))) return r;
      if (me == o.root && o.send != o.recv && overlap(o.send, b, o.recv, b))
        return fail(ncclInvalidArgument, "%s: sendbuff %p and recvbuff %p overlap (in place means equal)", op, o.send,
                    o.recv);
      break;
    case K_ALLGATHER:
      if ((r = check_buffer(o, "sendbuff", o.send, b)) || (r = check_buffer(o, "recvbuff", o.recv, bP))) return r;
      if (o.send != (const char *)o.recv + (size_t)me * b && overlap(o.send, b, o.recv, bP))
        return fail(ncclInvalidArgument, "%s: sendbuff %p overlaps recvbuff %p (in place means sendbuff = recvbuff + "
                    "rank * sendcount, here %p)", op, o.send, o.recv, (void *)((char *)o.recv + (size_t)me * b));
      break;
    case K_REDUCESCATTER:
      if ((r = check_buffer(o, "sendbuff", o.send, bP)) || (r = check_buffer(o, "recvbuff", o.recv, b))) return r;
      if (o.recv != (const char *)o.send + (size_t)me * b && overlap(o.send, bP, o.recv, b))
        return fail(ncclInvalidArgument, "%s: recvbuff %p overlaps sendbuff %p (in place means recvbuff = sendbuff + "
                    "rank * recvcount, here %p)", op, o.recv, o.send,
                    (const void *)((const char *)o.send + (size_t)me * b));
      break;
    case K_SEND: return check_buffer(o, "sendbuff", o.send, b);
    case K_RECV: return check_buffer(o, "recvbuff", o.recv, b);
  }
  return ncclSuccess;
}

ncclResult_t check_stream(const Op &o, cudaStream_t s) {
  if (!stream_valid(s)) return fail(ncclInvalidArgument, "%s: the stream is not a live stream", kind_name[o.kind]);
  if (stream_device(s) != o.comm->device)
    return fail(ncclInvalidArgument, "%s: the stream belongs to device %d, the communicator's device is %d",
                kind_name[o.kind], stream_device(s), o.comm->device);
  return ncclSuccess;
}

std::string describe(const int64_t *d) {
  char buf[200];
  const Kind k = (Kind)d[0];
  int n = snprintf(buf, sizeof buf, "%s(count %lld, %s", kind_name[k], (long long)d[1], type_name[d[2]]);
  if (has_red(k)) n += snprintf(buf + n, sizeof buf - n, ", %s", red_name[d[3]]);
  if (has_root(k)) n += snprintf(buf + n, sizeof buf - n, ", root %lld", (long long)d[4]);
  snprintf(buf + n, sizeof buf - n, ")");
  return buf;
}

// Every rank's arguments of this collective against rank 0's: on a GPU, a disagreement hangs or computes garbage.
ncclResult_t agree(const Op &o) {
  const int P = o.comm->nranks;
  const int64_t mine[5] = {o.kind, (int64_t)o.count, o.type, has_red(o.kind) ? o.red : -1,
                           has_root(o.kind) ? o.root : -1};
  std::vector<int64_t> all((size_t)P * 5);
  std::vector<MPI_Request> req(1);
  std::vector<MPI_Status> st;
  MPI_Iallgather(mine, 5, MPI_INT64_T, all.data(), 5, MPI_INT64_T, o.comm->mpi, &req[0]);
  char what[160];
  snprintf(what, sizeof what, "%s (rank %d of %d)", kind_name[o.kind], o.comm->rank, P);
  if (int rc = wait_all(req, st, what))
    return fail(ncclSystemError, "%s: MPI_Iallgather failed: %s", what, mpi_message(rc).c_str());
  for (int r = 1; r < P; r++)
    if (memcmp(&all[(size_t)r * 5], all.data(), 5 * sizeof(int64_t)))
      return fail(ncclInvalidUsage, "%s: the ranks disagree: rank 0 called %s, rank %d %s", what,
                  describe(all.data()).c_str(), r, describe(&all[(size_t)r * 5]).c_str());
  return ncclSuccess;
}

ncclResult_t mpi_failed(const Op &o, const char *call, int rc) {
  return fail(ncclSystemError, "%s (rank %d of %d): %s failed: %s", kind_name[o.kind], o.comm->rank,
              o.comm->nranks, call, mpi_message(rc).c_str());
}

// A collective, at once. Data moves in chunks of at most ZT_EMU_NCCL_CHUNK_KB (64 MiB) of staging per rank, which
// also keeps MPI's int counts in range; each rank folds every contribution in rank order (src/nccl_reduce.h), so
// all ranks get the same bits, whatever the chunking.
ncclResult_t run_collective(const Op &o) {
  const DeviceAccess access;
  const int P = o.comm->nranks, me = o.comm->rank;
  const size_t es = type_size(o.type), n = o.count;
  if (n == 0) return ncclSuccess;
  char *recv = (char *)o.recv;
  const char *send = (const char *)o.send;
  if (P == 1) {  // a copy (the fold of one contribution is itself, ncclAvg's x * 1 too)
    if (o.kind != K_REDUCE || me == o.root)
      if (recv != send) memmove(recv, send, n * es);
    return ncclSuccess;
  }
  if (ncclResult_t r = agree(o)) return r;
  MPI_Comm comm = o.comm->mpi;
  const size_t chunk = (size_t)std::max(1, env_int("ZT_EMU_NCCL_CHUNK_KB", 65536)) << 10;
  const size_t C = std::max<size_t>(1, std::min<size_t>(chunk, (size_t)1 << 30) / ((size_t)P * es));
  int rc = MPI_SUCCESS;
  if (o.kind == K_BROADCAST) {
    if (me == o.root && recv != send) memmove(recv, send, n * es);
    for (size_t off = 0; off < n * es && !rc; off += (size_t)1 << 30)
      rc = MPI_Bcast(recv + off, (int)std::min<size_t>((size_t)1 << 30, n * es - off), MPI_BYTE, o.root, comm);
    return rc ? mpi_failed(o, "MPI_Bcast", rc) : ncclSuccess;
  }
  for (size_t off = 0; off < n; off += C) {
    const size_t L = std::min(C, n - off), lb = L * es;
    stage_a.resize((size_t)P * lb);
    switch (o.kind) {
      case K_ALLREDUCE:
        if ((rc = MPI_Allgather(send + off * es, (int)lb, MPI_BYTE, stage_a.data(), (int)lb, MPI_BYTE, comm)))
          return mpi_failed(o, "MPI_Allgather", rc);
        reduce(recv + off * es, stage_a.data(), lb, P, L, o.type, o.red);
        break;
      case K_REDUCE:
        if ((rc = MPI_Gather(send + off * es, (int)lb, MPI_BYTE, stage_a.data(), (int)lb, MPI_BYTE, o.root, comm)))
          return mpi_failed(o, "MPI_Gather", rc);
        if (me == o.root) reduce(recv + off * es, stage_a.data(), lb, P, L, o.type, o.red);
        break;
      case K_ALLGATHER:
        if ((rc = MPI_Allgather(send + off * es, (int)lb, MPI_BYTE, stage_a.data(), (int)lb, MPI_BYTE, comm)))
          return mpi_failed(o, "MPI_Allgather", rc);
        for (int r = 0; r < P; r++) memmove(recv + ((size_t)r * n + off) * es, stage_a.data() + (size_t)r * lb, lb);
        break;
      case K_REDUCESCATTER:
        stage_b.resize((size_t)P * lb);
        for (int r = 0; r < P; r++) memcpy(stage_b.data() + (size_t)r * lb, send + ((size_t)r * n + off) * es, lb);
        if ((rc = MPI_Alltoall(stage_b.data(), (int)lb, MPI_BYTE, stage_a.data(), (int)lb, MPI_BYTE, comm)))
          return mpi_failed(o, "MPI_Alltoall", rc);
        reduce(recv + off * es, stage_a.data(), lb, P, L, o.type, o.red);
        break;
      default: break;
    }
  }
  return ncclSuccess;
}

// Sends and receives, and the collectives queued with them: all sends and receives to other ranks are posted first
// (so they progress together, as in one NCCL group), the collectives run, then the transfers are awaited. Sends to
// the calling rank itself are matched with its receives from itself in call order, by copy.
ncclResult_t run_ops(const std::vector<Op> &ops, bool synchronous_send, const char *who) {
  const DeviceAccess access;
  struct Xfer { const Op *op; size_t bytes; };
  std::vector<MPI_Request> req;
  std::vector<Xfer> xfer;
  std::vector<const Op *> self_send, self_recv;
  const size_t kMsg = (size_t)1 << 30;
  for (const Op &o : ops) {
    if (!is_p2p(o.kind) || o.count == 0) continue;
    if (o.root == o.comm->rank) {
      (o.kind == K_SEND ? self_send : self_recv).push_back(&o);
      continue;
    }
    const size_t bytes = o.count * type_size(o.type);
    for (size_t off = 0; off < bytes; off += kMsg) {
      const int len = (int)std::min(kMsg, bytes - off);
      const char *src = (const char *)o.send + off;
      MPI_Request r;
      int rc = o.kind == K_RECV ? MPI_Irecv((char *)o.recv + off, len, MPI_BYTE, o.root, kP2PTag, o.comm->mpi, &r)
               : synchronous_send ? MPI_Issend(src, len, MPI_BYTE, o.root, kP2PTag, o.comm->mpi, &r)
                                  : MPI_Isend(src, len, MPI_BYTE, o.root, kP2PTag, o.comm->mpi, &r);
      if (rc) return mpi_failed(o, o.kind == K_RECV ? "MPI_Irecv" : "MPI_Isend", rc);
      req.push_back(r);
      xfer.push_back({&o, (size_t)len});
    }
  }
  // self transfers: per communicator, the k-th send to itself feeds the k-th receive from itself
  for (const Op *s : self_send) {
    auto it = std::find_if(self_recv.begin(), self_recv.end(), [&](const Op *r) { return r && r->comm == s->comm; });
    const size_t sb = s->count * type_size(s->type);
    if (it == self_recv.end())
      return fail(ncclInvalidUsage, "ncclSend to the calling rank %d (%zu bytes) has no ncclRecv from itself in the "
                  "same group", s->comm->rank, sb);
    const size_t rb = (*it)->count * type_size((*it)->type);
    if (rb != sb)
      return fail(ncclInvalidUsage, "ncclSend of %zu bytes to the calling rank %d, its ncclRecv from itself of %zu "
                  "bytes (they must agree on count and type)", sb, s->comm->rank, rb);
    memmove((*it)->recv, s->send, sb);
    *it = nullptr;
  }
  for (const Op *r : self_recv)
    if (r) return fail(ncclInvalidUsage, "ncclRecv from the calling rank %d has no ncclSend to itself in the same "
                       "group", r->comm->rank);
  for (const Op &o : ops)
    if (!is_p2p(o.kind))
      if (ncclResult_t r = run_collective(o)) return r;
  std::vector<MPI_Status> st;
  char what[200] = "";
  if (!req.empty()) {
    const Op &o = *xfer[0].op;
    snprintf(what, sizeof what, "%s (rank %d of %d, %zu transfer(s), the first %s %s peer %d)", who, o.comm->rank,
             o.comm->nranks, req.size(), kind_name[o.kind], o.kind == K_SEND ? "to" : "from", o.root);
  }
  const int rc = wait_all(req, st, what);
  for (size_t i = 0; i < req.size(); i++) {
    const Op &o = *xfer[i].op;
    int err = rc == MPI_ERR_IN_STATUS ? st[i].MPI_ERROR : rc;
    if (o.kind == K_RECV && err == MPI_SUCCESS) {
      int got = 0;
      MPI_Get_count(&st[i], MPI_BYTE, &got);
      if ((size_t)got != xfer[i].bytes)
        return fail(ncclInvalidUsage, "ncclRecv (rank %d of %d) of %zu bytes from peer %d: the peer sent %d bytes "
                    "(ncclSend and ncclRecv must agree on count and type)", o.comm->rank, o.comm->nranks,
                    xfer[i].bytes, o.root, got);
    }
    if (err == MPI_ERR_TRUNCATE)
      return fail(ncclInvalidUsage, "ncclRecv (rank %d of %d) of %zu bytes from peer %d: the peer sent more "
                  "(ncclSend and ncclRecv must agree on count and type)", o.comm->rank, o.comm->nranks,
                  xfer[i].bytes, o.root);
    if (err != MPI_SUCCESS) return mpi_failed(o, "a transfer", err);
  }
  return ncclSuccess;
}

// Checks a call; in a group, queues it; outside, runs it.
ncclResult_t issue(const Op &o, cudaStream_t stream) {
  ncclResult_t r = check(o);
  if (!r) r = check_stream(o, stream);
  if (r) {
    if (group_depth > 0 && !group_error) group_error = r;
    return r;
  }
  if (group_depth > 0) {
    queued.push_back(o);
    return ncclSuccess;
  }
  if (is_p2p(o.kind)) {
    if (o.count && o.root == o.comm->rank)
      return fail(ncclInvalidUsage, "%s to/from the calling rank %d outside ncclGroupStart/ncclGroupEnd: it never "
                  "completes on a GPU (pair it with its counterpart in a group)", kind_name[o.kind], o.root);
    // NCCL's send blocks its stream until the peer receives: a synchronous send, so that a rank whose send waits
    // for a receive it has queued behind it shows up (as the timeout's message) instead of passing here
    return run_ops(std::vector<Op>{o}, true, kind_name[o.kind]);
  }
  return run_collective(o);
}

}  // namespace

extern "C" {

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return issue(Op{K_ALLREDUCE, comm, sendbuff, recvbuff, count, datatype, op, 0}, stream);
}
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return issue(Op{K_BROADCAST, comm, sendbuff, recvbuff, count, datatype, ncclSum, root}, stream);
}
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(Op{K_REDUCE, comm, sendbuff, recvbuff, count, datatype, op, root}, stream);
}
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  return issue(Op{K_ALLGATHER, comm, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0}, stream);
}
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return issue(Op{K_REDUCESCATTER, comm, sendbuff, recvbuff, recvcount, datatype, op, 0}, stream);
}
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return issue(Op{K_SEND, comm, sendbuff, NULL, count, datatype, ncclSum, peer}, stream);
}
ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return issue(Op{K_RECV, comm, NULL, recvbuff, count, datatype, ncclSum, peer}, stream);
}

ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (group_depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group_depth > 0) return ncclSuccess;  // nested: the outermost end runs the group
  std::vector<Op> ops;
  ops.swap(queued);
  const ncclResult_t err = group_error;
  group_error = ncclSuccess;
  if (err) {
    const std::string first = last_error;
    return fail(err, "ncclGroupEnd: the group's %zu other operation(s) were not run: a call in it was refused (%s)",
                ops.size(), first.c_str());
  }
  return run_ops(ops, false, "ncclGroupEnd");
}

}  // extern "C"
