/* nvme_tune: DeepSpeed's ds_nvme_tune in C. Sweeps block_size x queue_depth x sequential_requests
 * (overlap_events) x single_submit x io_parallel (intra_op_parallelism) over the --nvme_dir folders,
 * measuring reads and writes of --io_size bytes per configuration, then prints the best configuration
 * (largest read + write GB/s, as perf_generate_param.py picks it) and the matching ds_config "aio" block.
 * Flags as ds_nvme_tune: --nvme_dir DIR [DIR ...], --sweep_config FILE, --no_read, --no_write, --io_size,
 * --flush_page_cache, --log_dir, --loops, --verbose (--gpu and --gds are refused: no GPU path yet). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/aio/bench.h"
#include "runtime/base/error.h"
#include "runtime/base/file.h"

#define TOOL "nvme_tune"
#define MAXV 32

typedef struct {
  int64_t block_size[MAXV];
  int nbs;
  long queue_depth[MAXV];
  int nqd;
  int sequential[2];
  int nseq;
  int single[2];
  int nsingle;
  long io_parallel[MAXV];
  int npar;
} sweep;

/* DeepSpeed's DEFAULT_SWEEP_CONFIG (deepspeed/nvme/perf_run_sweep.py). */
static void default_sweep(sweep *s) {
  memset(s, 0, sizeof *s);
  s->block_size[0] = 1 << 20;
  s->block_size[1] = 8 << 20;
  s->nbs = 2;
  s->queue_depth[0] = 32;
  s->queue_depth[1] = 128;
  s->nqd = 2;
  s->sequential[0] = 1;
  s->sequential[1] = 0;
  s->nseq = 2;
  s->single[0] = 0;
  s->single[1] = 1;
  s->nsingle = 2;
  long par[] = {1, 2, 4, 8};
  memcpy(s->io_parallel, par, sizeof par);
  s->npar = 4;
}

/* A JSON sweep file as DeepSpeed's: {"block_size": ["1M", "8M"], "queue_depth": [32, 128],
 * "sequential_requests": [true, false], "single_submit": [false, true], "io_parallel": [1, 2, 4, 8]};
 * missing keys keep the default list, unknown keys are refused. */
static void load_sweep(const char *path, sweep *s) {
  char *text = zt_read_file(path, NULL);
  if (!text) zt_fatal(TOOL, "--sweep_config %s: cannot read the file", path);
  cJSON *root = cJSON_Parse(text);
  if (!root || !cJSON_IsObject(root))
    zt_fatal(TOOL, "--sweep_config %s: not a JSON object (parse error near: %.40s)", path,
             cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
  for (cJSON *it = root->child; it; it = it->next) {
    const char *k = it->string;
    if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) < 1 || cJSON_GetArraySize(it) > MAXV)
      zt_fatal(TOOL, "--sweep_config %s: key \"%s\" must be a list of 1 to %d values", path, k, MAXV);
    int i = 0;
    for (cJSON *v = it->child; v; v = v->next, i++) {
      if (!strcmp(k, "block_size")) {
        int64_t b = 0;
        if (cJSON_IsString(v)) {
          if (zt_aio_parse_size(v->valuestring, &b) != 0)
            zt_fatal(TOOL, "--sweep_config %s: block_size[%d] \"%s\" is not a size (1M, 8M, 131072)", path, i,
                     v->valuestring);
        } else if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble == (double)(int64_t)v->valuedouble) {
          b = (int64_t)v->valuedouble;
        } else {
          zt_fatal(TOOL, "--sweep_config %s: block_size[%d] must be a size string or a byte count", path, i);
        }
        s->block_size[i] = b;
        s->nbs = i + 1;
      } else if (!strcmp(k, "queue_depth") || !strcmp(k, "io_parallel")) {
        if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble != (double)(long)v->valuedouble)
          zt_fatal(TOOL, "--sweep_config %s: %s[%d] must be a positive integer", path, k, i);
        if (k[0] == 'q') {
          s->queue_depth[i] = (long)v->valuedouble;
          s->nqd = i + 1;
        } else {
          s->io_parallel[i] = (long)v->valuedouble;
          s->npar = i + 1;
        }
      } else if (!strcmp(k, "sequential_requests") || !strcmp(k, "single_submit")) {
        if (!cJSON_IsBool(v) || i >= 2)
          zt_fatal(TOOL, "--sweep_config %s: %s must be a list of at most two booleans (true/false)", path, k);
        if (k[1] == 'e') {
          s->sequential[i] = cJSON_IsTrue(v);
          s->nseq = i + 1;
        } else {
          s->single[i] = cJSON_IsTrue(v);
          s->nsingle = i + 1;
        }
      } else {
        zt_fatal(TOOL, "--sweep_config %s: unknown key \"%s\" (valid: block_size, queue_depth, sequential_requests, "
                 "single_submit, io_parallel)", path, k);
      }
    }
  }
  cJSON_Delete(root);
  free(text);
}

static void usage(void) {
  printf("usage: nvme_tune [-h] --nvme_dir NVME_DIR [NVME_DIR ...] [--sweep_config SWEEP_CONFIG] [--no_read]\n"
         "                 [--no_write] [--io_size IO_SIZE] [--flush_page_cache] [--log_dir LOG_DIR] [--loops LOOPS]\n"
         "                 [--verbose]\n\n"
         "Sweeps DeepNVMe handle settings on the folders and prints the best read/write GB/s (GB = 2^30 bytes) and\n"
         "the matching ds_config \"aio\" block. Default sweep (DeepSpeed's): block_size 1M 8M, queue_depth 32 128,\n"
         "sequential_requests true false, single_submit false true, io_parallel 1 2 4 8; --io_size 400M; --loops 1.\n");
}

static void flush_page_cache(int verbose) {
  sync();
  FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
  if (!f || fputs("1\n", f) < 0 || fclose(f) != 0) {
    zt_warn("nvme_tune: --flush_page_cache: cannot write /proc/sys/vm/drop_caches (needs root); O_DIRECT bypasses "
            "the page cache anyway");
    return;
  }
  if (verbose) printf("  flushed the page cache\n");
}

int main(int argc, char **argv) {
  sweep sw;
  default_sweep(&sw);
  const char **dirs = calloc((size_t)argc, sizeof *dirs);
  int ndirs = 0, no_read = 0, no_write = 0, flush = 0, verbose = 0, loops = 1;
  int64_t io_size = 400LL << 20;
  const char *sweep_path = NULL, *log_dir = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage();
      return 0;
    } else if (!strcmp(a, "--nvme_dir")) {
      if (i + 1 >= argc || argv[i + 1][0] == '-') zt_fatal(TOOL, "argument --nvme_dir: expected at least one argument");
      while (i + 1 < argc && argv[i + 1][0] != '-') dirs[ndirs++] = argv[++i];
    } else if (!strcmp(a, "--sweep_config")) {
      sweep_path = zt_aio_arg_value(TOOL, argc, argv, &i);
    } else if (!strcmp(a, "--no_read")) {
      no_read = 1;
    } else if (!strcmp(a, "--no_write")) {
      no_write = 1;
    } else if (!strcmp(a, "--io_size")) {
      io_size = zt_aio_arg_size(TOOL, a, zt_aio_arg_value(TOOL, argc, argv, &i));
    } else if (!strcmp(a, "--flush_page_cache")) {
      flush = 1;
    } else if (!strcmp(a, "--log_dir")) {
      log_dir = zt_aio_arg_value(TOOL, argc, argv, &i);
    } else if (!strcmp(a, "--loops")) {
      loops = (int)zt_aio_arg_int(TOOL, a, zt_aio_arg_value(TOOL, argc, argv, &i), 1, 1000000);
    } else if (!strcmp(a, "--verbose")) {
      verbose = 1;
    } else if (!strcmp(a, "--gpu") || !strcmp(a, "--gds")) {
      zt_fatal(TOOL, "argument %s is not supported: zerotron's aio handle moves host (CPU) buffers only; GPU "
               "transfers and GDS come with the CUDA offload work", a);
    } else {
      zt_fatal(TOOL, "unrecognized argument: %s (see --help)", a);
    }
  }
  if (ndirs == 0) zt_fatal(TOOL, "the following arguments are required: --nvme_dir");
  if (no_read && no_write) zt_fatal(TOOL, "--no_read and --no_write together leave nothing to measure");
  for (int d = 0; d < ndirs; d++) {
    struct stat st;
    if (stat(dirs[d], &st) != 0 || !S_ISDIR(st.st_mode) || access(dirs[d], W_OK) != 0)
      zt_fatal(TOOL, "--nvme_dir %s: not a writable directory", dirs[d]);
  }
  if (sweep_path) load_sweep(sweep_path, &sw);
  /* check every value before the first measurement */
  for (int b = 0; b < sw.nbs; b++)
    for (int q = 0; q < sw.nqd; q++)
      for (int p = 0; p < sw.npar; p++) {
        zt_aio_config c;
        zt_aio_config_defaults(&c);
        c.block_size = sw.block_size[b];
        c.queue_depth = (int)sw.queue_depth[q];
        c.intra_op_parallelism = (int)sw.io_parallel[p];
        char err[512];
        if (zt_aio_config_check(&c, err, sizeof err) != 0)
          zt_fatal(TOOL, "%s%s: %s", sweep_path ? "--sweep_config " : "default sweep", sweep_path ? sweep_path : "",
                   err);
        int64_t unit = 4096LL * c.intra_op_parallelism * ndirs;
        if (io_size % unit != 0)
          zt_fatal(TOOL, "--io_size %lld must be a multiple of 4096 x io_parallel %d x %d folder(s) = %lld bytes",
                   (long long)io_size, c.intra_op_parallelism, ndirs, (long long)unit);
      }
  FILE *log = NULL;
  if (log_dir) {
    mkdir(log_dir, 0755);
    char lp[4096];
    snprintf(lp, sizeof lp, "%s/nvme_tune.txt", log_dir);
    log = fopen(lp, "w");
    if (!log) zt_fatal(TOOL, "--log_dir %s: cannot create %s", log_dir, lp);
  }
  printf("Running DeepNVMe performance sweep on [");
  for (int d = 0; d < ndirs; d++) printf("%s'%s'", d ? ", " : "", dirs[d]);
  int total = sw.nbs * sw.nqd * sw.nseq * sw.nsingle * sw.npar;
  printf("]: %d configurations x %s%s%s of %lld bytes, %d loop%s\n", total, no_read ? "" : "read",
         (!no_read && !no_write) ? " + " : "", no_write ? "" : "write", (long long)io_size, loops, loops > 1 ? "s" : "");
  if (log) fprintf(log, "block_size queue_depth single_submit overlap_events intra_op_parallelism read_gbps write_gbps\n");
  double best_sum = -1, best_r = 0, best_w = 0;
  zt_aio_config best_cfg;
  zt_aio_config_defaults(&best_cfg);
  zt_aio_bench_spec spec = {.dirs = dirs, .ndirs = ndirs, .io_size = io_size, .loops = loops, .warmup = 0};
  for (int b = 0; b < sw.nbs; b++)
    for (int q = 0; q < sw.nqd; q++)
      for (int e = 0; e < sw.nseq; e++)
        for (int s = 0; s < sw.nsingle; s++)
          for (int p = 0; p < sw.npar; p++) {
            zt_aio_config c;
            zt_aio_config_defaults(&c);
            c.block_size = sw.block_size[b];
            c.queue_depth = (int)sw.queue_depth[q];
            c.overlap_events = !sw.sequential[e];
            c.single_submit = sw.single[s];
            c.intra_op_parallelism = (int)sw.io_parallel[p];
            double gb[2] = {0, 0};
            for (int op = 0; op < 2; op++) {
              if ((op == 0 && no_read) || (op == 1 && no_write)) continue;
              if (flush) flush_page_cache(verbose);
              spec.is_read = op == 0;
              zt_aio_bench_result r;
              char err[1024];
              if (zt_aio_bench_run(&c, &spec, &r, err, sizeof err) != 0) zt_fatal(TOOL, "%s", err);
              gb[op] = r.mean_gbps;
            }
            printf("  block_size %8lld  queue_depth %4d  single_submit %-5s  overlap_events %-5s  "
                   "intra_op_parallelism %3d:  read %6.2f  write %6.2f GB/sec\n", (long long)c.block_size,
                   c.queue_depth, c.single_submit ? "true" : "false", c.overlap_events ? "true" : "false",
                   c.intra_op_parallelism, gb[0], gb[1]);
            fflush(stdout);
            if (log)
              fprintf(log, "%lld %d %d %d %d %.4f %.4f\n", (long long)c.block_size, c.queue_depth, c.single_submit,
                      c.overlap_events, c.intra_op_parallelism, gb[0], gb[1]);
            if (gb[0] + gb[1] > best_sum) {
              best_sum = gb[0] + gb[1];
              best_r = gb[0];
              best_w = gb[1];
              best_cfg = c;
            }
          }
  if (log) fclose(log);
  printf("Best performance (GB/sec): read = %5.2f, write = %5.2f\n", best_r, best_w);
  printf("{\n   \"aio\": {\n      \"single_submit\": %s,\n      \"overlap_events\": %s,\n"
         "      \"intra_op_parallelism\": %d,\n      \"queue_depth\": %d,\n      \"block_size\": %lld\n   }\n}\n",
         best_cfg.single_submit ? "true" : "false", best_cfg.overlap_events ? "true" : "false",
         best_cfg.intra_op_parallelism, best_cfg.queue_depth, (long long)best_cfg.block_size);
  free(dirs);
  return 0;
}
