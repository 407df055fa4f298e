/* The step watchdog (see train/watchdog.h). The main thread publishes (what, iteration, start time) through
 * atomics; the watchdog thread polls ten times per timeout (at most every 100 ms) and, past the deadline,
 * dies through zt_fatal, whose hook aborts the whole MPI job (OpenMPI's MPI_Abort works from any thread). */
#include "train/watchdog.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/comm/comm.h"

struct zt_watchdog {
  pthread_t thread;
  double timeout;
  _Atomic(const char *) what;  /* NULL: disarmed */
  _Atomic int64_t iteration;
  _Atomic int64_t start_us;    /* zt_now() in microseconds when armed */
  atomic_int stop;
};

static int64_t now_us(void) { return (int64_t)llround(zt_now() * 1e6); }

static void *watch(void *arg) {
  zt_watchdog *w = arg;
  const double period = fmin(0.1, w->timeout / 10);
  const struct timespec ts = {(time_t)period, (long)((period - floor(period)) * 1e9)};
  while (!atomic_load(&w->stop)) {
    nanosleep(&ts, NULL);
    const char *what = atomic_load_explicit(&w->what, memory_order_acquire);
    if (!what) continue;
    const int64_t it = atomic_load(&w->iteration), t0 = atomic_load(&w->start_us);
    const double waited = (double)(now_us() - t0) * 1e-6;
    if (waited <= w->timeout || atomic_load_explicit(&w->what, memory_order_acquire) != what ||
        atomic_load(&w->iteration) != it)
      continue;
    char blocked[256], where[300] = "";
    if (zt_comm_describe_wait(blocked, sizeof blocked)) snprintf(where, sizeof where, "; it is blocked in %s", blocked);
    zt_fatal("step watchdog", "rank %d: the %s of iteration %lld has not finished after %.0f s (--step-timeout-seconds "
             "%g)%s: a rank is stopped, dead or stuck; ending the job", zt_rank(), what, (long long)it, waited,
             w->timeout, where);
  }
  return NULL;
}

zt_watchdog *zt_watchdog_start(double timeout_s) {
  zt_check(timeout_s > 0, "internal error", "watchdog: timeout %g s", timeout_s);
  zt_watchdog *w = zt_calloc(1, sizeof *w, "step watchdog");
  w->timeout = timeout_s;
  atomic_init(&w->what, NULL);
  atomic_init(&w->stop, 0);
  zt_check(pthread_create(&w->thread, NULL, watch, w) == 0, "step watchdog", "cannot start its thread");
  return w;
}

void zt_watchdog_arm(zt_watchdog *w, const char *what, int64_t iteration) {
  if (!w) return;
  atomic_store(&w->iteration, iteration);
  atomic_store(&w->start_us, now_us());
  atomic_store_explicit(&w->what, what, memory_order_release);
}

void zt_watchdog_disarm(zt_watchdog *w) {
  if (w) atomic_store_explicit(&w->what, NULL, memory_order_release);
}

void zt_watchdog_stop(zt_watchdog *w) {
  if (!w) return;
  atomic_store(&w->stop, 1);
  pthread_join(w->thread, NULL);
  free(w);
}
