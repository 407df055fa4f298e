/* aio_bench: one DeepNVMe read or write throughput measurement, like one run of DeepSpeed's ds_io /
 * aio_bench_perf_sweep (same flag names): --folder DIR [DIR ...] --io_size 400M [--read] --block_size 1M
 * --queue_depth 32 [--single_submit] [--sequential_requests] --io_parallel 1 --loops 3 [--validate].
 * Prints the parameters, each figure in DeepSpeed's "E2E Read Speed: X GB/sec" form (GB = 2^30 bytes) and
 * a machine-readable summary line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/aio/bench.h"
#include "runtime/base/error.h"

#define TOOL "aio_bench"

static void usage(void) {
  printf("usage: aio_bench --folder DIR [DIR ...] [--io_size SIZE] [--read] [--block_size SIZE] [--queue_depth N]\n"
         "                 [--single_submit] [--sequential_requests] [--io_parallel N] [--loops N] [--warmup N]\n"
         "                 [--validate] [--lock_memory] [--keep] [--file PATH]\n\n"
         "Read or write --io_size bytes (split over one file per folder) with a DeepNVMe handle (libaio, O_DIRECT).\n"
         "  --folder DIR ...        folders on the devices to measure (files _zt_aio_bench_<pid>_<i>.swp, removed after)\n"
         "  --io_size SIZE          bytes per loop over all folders (default 400M; K/M/G are powers of 1024)\n"
         "  --read                  measure reads (the files are written first, untimed); default: writes\n"
         "  --block_size SIZE       bytes per libaio request (default 1M)\n"
         "  --queue_depth N         requests in flight per thread (default 32)\n"
         "  --single_submit         one io_submit call per request (default: one per batch)\n"
         "  --sequential_requests   submit a batch, reap it all, repeat (overlap_events false; default: overlap)\n"
         "  --io_parallel N         intra_op_parallelism: threads per handle, each with an equal byte range (default 1)\n"
         "  --loops N               timed repetitions (default 3), after --warmup N untimed ones (default 1)\n"
         "  --validate              check the data read (or written) against the pattern\n"
         "  --lock_memory           mlock the buffers (DeepSpeed's pinned tensors)\n"
         "  --keep                  keep the files\n"
         "  --file PATH             (zerotron) use this one file instead of --folder: kept; --read reads it as it is\n"
         "                          (it must hold --io_size bytes), e.g. to read the same file as fio\n");
}

int main(int argc, char **argv) {
  zt_aio_config cfg;
  zt_aio_config_defaults(&cfg);
  cfg.queue_depth = 32; /* ds_io's default */
  zt_aio_bench_spec s = {0};
  s.io_size = 400LL << 20;
  s.loops = 3;
  s.warmup = 1;
  const char **dirs = calloc((size_t)argc, sizeof *dirs);
  int ndirs = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage();
      return 0;
    } else if (!strcmp(a, "--folder")) {
      if (i + 1 >= argc || argv[i + 1][0] == '-') zt_fatal(TOOL, "argument --folder: expected at least one argument");
      while (i + 1 < argc && argv[i + 1][0] != '-') dirs[ndirs++] = argv[++i];
    } else if (!strcmp(a, "--io_size")) {
      s.io_size = zt_aio_arg_size(TOOL, a, zt_aio_arg_value(TOOL, argc, argv, &i));
    } else if (!strcmp(a, "--read")) {
      s.is_read = 1;
    } else if (!strcmp(a, "--block_size")) {
      cfg.block_size = zt_aio_arg_size(TOOL, a, zt_aio_arg_value(TOOL, argc, argv, &i));
    } else if (!strcmp(a, "--queue_depth")) {
      cfg.queue_depth = (int)zt_aio_arg_int(TOOL, a, zt_aio_arg_value(TOOL, argc, argv, &i), 1, 4096);
    } else if (!strcmp(a, "--single_submit")) {
      cfg.single_submit = 1;
    } else if (!strcmp(a, "--sequential_requests")) {
      cfg.overlap_events = 0;
    } else if (!strcmp(a, "--io_parallel")) {
      cfg.intra_op_parallelism = (int)zt_aio_arg_int(TOOL, a, zt_aio_arg_value(TOOL, argc, argv, &i), 1, 256);
    } else if (!strcmp(a, "--loops")) {
      s.loops = (int)zt_aio_arg_int(TOOL, a, zt_aio_arg_value(TOOL, argc, argv, &i), 1, 1000000);
    } else if (!strcmp(a, "--warmup")) {
      s.warmup = (int)zt_aio_arg_int(TOOL, a, zt_aio_arg_value(TOOL, argc, argv, &i), 0, 1000000);
    } else if (!strcmp(a, "--validate")) {
      s.validate = 1;
    } else if (!strcmp(a, "--lock_memory")) {
      cfg.lock_memory = 1;
    } else if (!strcmp(a, "--file")) {
      s.file = zt_aio_arg_value(TOOL, argc, argv, &i);
    } else if (!strcmp(a, "--keep")) {
      s.keep = 1;
    } else if (!strcmp(a, "--gpu") || !strcmp(a, "--use_gds") || !strcmp(a, "--slow_bounce_buffer")) {
      zt_fatal(TOOL, "argument %s is not supported: zerotron's aio handle moves host (CPU) buffers only; GPU "
               "transfers and GDS come with the CUDA offload work", a);
    } else if (!strcmp(a, "--multi_process") || !strcmp(a, "--folder_to_device_mapping") || !strcmp(a, "--handle")) {
      zt_fatal(TOOL, "argument %s is not supported: give several --folder values instead (one handle and file "
               "per folder, all in flight together)", a);
    } else {
      zt_fatal(TOOL, "unrecognized argument: %s (see --help)", a);
    }
  }
  if (ndirs == 0 && !s.file) zt_fatal(TOOL, "the following arguments are required: --folder (or --file)");
  if (ndirs > 0 && s.file) zt_fatal(TOOL, "--folder and --file exclude each other (--file %s)", s.file);
  if (s.file && s.validate && s.is_read)
    zt_fatal(TOOL, "--validate with --read --file %s: the file was not written by aio_bench, there is nothing to "
             "compare with", s.file);
  char err[1024];
  if (zt_aio_config_check(&cfg, err, sizeof err) != 0) zt_fatal(TOOL, "%s (from --block_size/--queue_depth/--io_parallel)", err);
  s.dirs = dirs;
  s.ndirs = ndirs;
  printf("aio_bench: %s %lld bytes (%.1f MiB) %s", s.is_read ? "read" : "write", (long long)s.io_size,
         (double)s.io_size / 1048576.0, s.is_read ? "from" : "to");
  for (int d = 0; d < ndirs; d++) printf(" %s", dirs[d]);
  if (s.file) printf(" %s", s.file);
  printf("\n  block_size %lld, queue_depth %d, single_submit %s, overlap_events %s, intra_op_parallelism %d, "
         "loops %d (+%d warm-up), lock_memory %s\n", (long long)cfg.block_size, cfg.queue_depth,
         cfg.single_submit ? "true" : "false", cfg.overlap_events ? "true" : "false", cfg.intra_op_parallelism,
         s.loops, s.warmup, cfg.lock_memory ? "true" : "false");
  zt_aio_bench_result r;
  if (zt_aio_bench_run(&cfg, &s, &r, err, sizeof err) != 0) zt_fatal(TOOL, "%s", err);
  printf("E2E %s Speed: %.3f GB/sec (mean of %d loops, %.3f s; best loop %.3f GB/sec; GB = 2^30 bytes)\n",
         s.is_read ? "Read" : "Write", r.mean_gbps, s.loops, r.seconds, r.best_gbps);
  if (s.validate) printf("validate: %s data matches\n", s.is_read ? "read" : "written");
  printf("result: op=%s bytes=%lld loops=%d seconds=%.6f mean_gbps=%.4f best_gbps=%.4f mean_bytes_per_s=%.0f\n",
         s.is_read ? "read" : "write", (long long)s.io_size, s.loops, r.seconds, r.mean_gbps, r.best_gbps,
         (double)s.io_size * s.loops / r.seconds);
  free(dirs);
  return 0;
}
