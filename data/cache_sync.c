/* Bounded, agreed waits for index caches across ranks (see data/cache_sync.h). */
#define _POSIX_C_SOURCE 200809L
#include "data/cache_sync.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/comm/comm.h"

#define PATH_BYTES 1024 /* a rank's path as the others see it (longer paths are cut in the message only) */

double zt_cache_wait_timeout(void) {
  const char *s = getenv("ZT_DATA_CACHE_TIMEOUT");
  if (!s || !s[0]) return ZT_CACHE_DEFAULT_TIMEOUT_S;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  zt_check(end != s && !*end && !errno && isfinite(v) && v > 0, "ZT_DATA_CACHE_TIMEOUT",
           "'%s': expected a number of seconds > 0 (default %.0f)", s, ZT_CACHE_DEFAULT_TIMEOUT_S);
  return v;
}

/* 1 when the ranks are MPI processes that can meet (zt_comm_init started MPI); the data tools may also act as a
 * rank without MPI (zt_set_rank), and then only the bounded poll applies. */
static int ranks_can_meet(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin && zt_world_size() > 1;
}

void zt_cache_sync(const char *what, const char *file, int found, int (*complete)(const void *ctx), const void *ctx) {
  const int meet = ranks_can_meet(), rank = zt_rank();
  const double timeout = zt_cache_wait_timeout();
  if (meet) { /* rank 0 has written (or found) its cache: a stopped or dead rank ends the wait (--distributed-
               * timeout-minutes, as Megatron's barrier after building the indices) */
    char about[1200];
    snprintf(about, sizeof about, "%s being ready (rank 0 writes or finds %s)", what, file);
    const char here = 1;
    zt_comm_agree(zt_comm_world(), about, &here, 1, zt_comm_startup_timeout(), NULL);
  }
  const double start = zt_now();
  double next_note = start + 60;
  int seen = found || rank == 0;
  while (!seen) {
    if (complete(ctx)) {
      seen = 1;
      break;
    }
    const double waited = zt_now() - start;
    if (waited >= timeout) break;
    if (zt_now() > next_note) {
      zt_warn("rank %d: still waiting for rank 0 to write %s (%.0f s of ZT_DATA_CACHE_TIMEOUT=%g s)\n", rank, file,
              waited, timeout);
      next_note += 60;
    }
    nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 100000000}, NULL);
  }
  const double waited = zt_now() - start;
  if (!meet) {
    zt_check(seen, "dataset cache", "rank %d waited %.0f s (ZT_DATA_CACHE_TIMEOUT) for rank 0 to write the %s "
             "index cache %s, and it did not appear: is rank 0 running, and does it see the same directory? (per-rank "
             "paths on node-local disks cannot share a cache: give every rank the same --data-cache-path on a shared "
             "file system)", rank, waited, what, file);
    return;
  }
  /* every rank reports what it saw, and its path: all of them end the job with the same message on a mismatch */
  const int W = zt_world_size();
  typedef struct {
    int32_t seen, pad;
    double waited;
    char path[PATH_BYTES];
  } report;
  report me = {.seen = seen, .waited = waited};
  snprintf(me.path, sizeof me.path, "%s", file);
  report *all = zt_malloc((size_t)W * sizeof(report), "cache reports");
  zt_allgather(zt_comm_world(), ZT_DTYPE_BF16, &me, sizeof me / 2, all); /* bytes, as 2-byte units */
  int missing = 0, first = -1;
  for (int r = 0; r < W; r++)
    if (!all[r].seen) {
      missing++;
      if (first < 0) first = r;
    }
  if (missing) {
    char msg[3 * PATH_BYTES], others[64] = "";
    if (missing > 1) snprintf(others, sizeof others, " (and %d other rank%s)", missing - 1, missing > 2 ? "s" : "");
    snprintf(msg, sizeof msg, "rank %d%s cannot see the %s index cache that rank 0 wrote: rank %d looked for %s for "
             "%.0f s (ZT_DATA_CACHE_TIMEOUT); rank 0's is %s. Per-rank paths on node-local disks cannot share a cache: "
             "give every rank the same --data-cache-path on a shared file system", first, others, what, first,
             all[first].path, all[first].waited, all[0].path);
    free(all);
    zt_fatal("dataset cache", "%s", msg);
  }
  free(all);
}
