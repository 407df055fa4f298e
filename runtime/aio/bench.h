/* One DeepNVMe throughput measurement, shared by the aio_bench and nvme_tune tools: read or write
 * io_size bytes split over one file per directory (one handle per directory, all in flight together, as
 * DeepSpeed's ds_io runs one process per folder), `loops` timed repetitions after `warmup` untimed ones.
 * GB/s here is DeepSpeed's: 2^30 bytes per GB. */
#ifndef ZT_AIO_BENCH_H
#define ZT_AIO_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/aio/aio.h"

typedef struct {
  const char *const *dirs;
  int ndirs;
  int64_t io_size;  /* total bytes per loop, over all directories */
  int is_read;
  int loops, warmup;
  int validate;     /* compare the data read (or written, read back) with the pattern */
  int keep;         /* keep the files */
  const char *file; /* instead of dirs: this one file (kept; a read needs it to hold io_size bytes and
                       skips the untimed write) */
} zt_aio_bench_spec;

typedef struct {
  double mean_gbps;   /* io_size * loops / total time */
  double best_gbps;   /* fastest loop */
  double seconds;     /* total timed seconds */
  int validated;      /* 1 if validate ran and passed */
} zt_aio_bench_result;

/* Returns 0, or -1 with a message in err (naming the flag the value came from where there is one). */
int zt_aio_bench_run(const zt_aio_config *cfg, const zt_aio_bench_spec *spec, zt_aio_bench_result *res, char *err,
                     size_t n);

/* Command-line helpers of the aio tools: the value of `flag` as an integer in [lo, hi] or as a size
 * ("1M", "400M", "4096"); zt_fatal naming the tool, the flag and the value otherwise. */
long zt_aio_arg_int(const char *tool, const char *flag, const char *val, long lo, long hi);
int64_t zt_aio_arg_size(const char *tool, const char *flag, const char *val);
/* The value after argv[*i] (advancing *i), or zt_fatal "<flag> expects a value". */
const char *zt_aio_arg_value(const char *tool, int argc, char **argv, int *i);

#endif
