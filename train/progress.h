/* Start-up progress and run-time estimates: Megatron's "time to initialize megatron", "[<what>] datetime: ..."
 * lines and setup timers, and zerotron's optional elapsed / ETA suffix of the training log line (--log-eta). */
#ifndef ZT_PROGRESS_H
#define ZT_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/progress_bar.h" /* zt_progress_hms */

/* Megatron's print_datetime: "[<what>] datetime: YYYY-MM-DD HH:MM:SS " (local time, rank 0). */
void zt_print_datetime(const char *what);
/* "time to initialize megatron (seconds): X.XXX" (since the earliest rank's program start, as Megatron takes the
 * minimum start time over the ranks) and "[after megatron is initialized] datetime: ...". Collective. */
void zt_progress_initialized(void);
/* Seconds since this process started (its program image was loaded). */
double zt_progress_since_start(void);
/* Megatron's Timers.log: the times of n timers over all ranks, divided by `normalizer`, in ms, after a header:
 * option 0 'max' and 1 'minmax' ("(min, max) time across ranks (ms):" and one "    <name> ....: (min, max)" line
 * per timer that some rank ran), 2 'all' ("times across ranks (ms):", each rank's time). Nothing when no timer
 * ran. Collective (every rank calls it); rank 0 prints. */
void zt_timers_log(const char *const *names, const double *seconds, int n, int option, double normalizer);
/* " elapsed: H:MM:SS | ETA: H:MM:SS |" into out: elapsed wall seconds, and the remaining iterations at the mean
 * seconds per training iteration so far (validation excluded). */
void zt_progress_eta(char *out, size_t cap, double elapsed, double train_seconds, int64_t iters_done,
                     int64_t iters_left);

#endif
