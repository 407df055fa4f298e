/* DeepSpeed's log lines, so that tools that parse DeepSpeed logs keep working:
 *   [2026-11-21 14:30:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[0.0001, 0.0001], mom=[(0.9, 0.999), (0.9, 0.999)]
 *   ... [Rank 0] time (ms) | fwd: 12.34 | bwd: 23.45 | bwd_inner: 22.10 | bwd_allreduce: 0.00 | step: 5.67
 *   ... [Rank 0] epoch=0/micro_step=20/global_step=10, RunningAvgSamplesPerSec=..., CurrSamplesPerSec=..., MemAllocated=...GB, MaxMemAllocated=...GB
 * Values use Python's float formatting. Rank 0 only. */
#ifndef ZT_DS_LOG_H
#define ZT_DS_LOG_H

#include <stdint.h>

/* log_dist(message, ranks=[0]) with DeepSpeed's logger prefix. */
void zt_ds_log_dist(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* logger.info(message) from DeepSpeed module code (rank 0): "[<stamp>] [INFO] [<where>] <message>";
 * where is "file.py:function" (DeepSpeed's logger also prints the source line number, which changes
 * with every DeepSpeed release and is left out). */
void zt_ds_logger_info(const char *where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* engine._report_progress: lr and (beta1, beta2) of each of the n parameter groups. */
void zt_ds_report_progress(int64_t step, int64_t skipped, const double *lr, const double (*mom)[2], int n);

/* SynchronizedWallClockTimer.log: "time (ms) | name: x.xx | ..." for n timers (milliseconds). */
void zt_ds_timers_log(const char *const *names, const double *ms, int n);

/* ThroughputTimer, as the engine drives it: start before each micro batch's forward, stop after it
 * (global_step = 1 at the gradient-accumulation boundary); logs every steps_per_output global steps.
 * Timing starts at global step start_step (2), as DeepSpeed's does. Memory is this process's
 * resident set (the CPU accelerator's memory_allocated) and its peak. */
typedef struct {
  int64_t batch_size, steps_per_output, start_step;
  int64_t micro_step, global_step, epoch;
  double start_time, total_elapsed, step_elapsed;
  int started;
} zt_ds_throughput;

void zt_ds_throughput_init(zt_ds_throughput *t, int64_t batch_size, int64_t steps_per_output);
void zt_ds_throughput_start(zt_ds_throughput *t);
void zt_ds_throughput_stop(zt_ds_throughput *t, int global_step);

#endif
