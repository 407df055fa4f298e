/* Wall-clock timing: a monotonic clock in seconds and a named accumulating timer. */
#ifndef ZT_TIMER_H
#define ZT_TIMER_H

#include <time.h>

static inline double zt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Accumulates elapsed seconds between start/stop pairs. */
typedef struct {
  double started;
  double elapsed;
} zt_timer;

static inline void zt_timer_start(zt_timer *t) { t->started = zt_now(); }
static inline void zt_timer_stop(zt_timer *t) { t->elapsed += zt_now() - t->started; }
static inline double zt_timer_reset(zt_timer *t) { double e = t->elapsed; t->elapsed = 0; return e; }

#endif
