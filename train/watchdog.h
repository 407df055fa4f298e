/* The step watchdog (--step-timeout-seconds): a thread that ends the job when the training step (its logging, or
 * an evaluation) it was told about runs past the timeout, with a message naming this rank, the iteration, the seconds waited
 * and the collective the main thread is blocked in. A rank stopped (SIGSTOP), dead without MPI noticing, or
 * stuck leaves every other rank waiting in a collective; their watchdogs end the job instead of a silent hang.
 * Off unless started (debuggers pause ranks for as long as they like). */
#ifndef ZT_WATCHDOG_H
#define ZT_WATCHDOG_H

#include <stdint.h>

typedef struct zt_watchdog zt_watchdog;

/* Starts the thread; timeout_s > 0. */
zt_watchdog *zt_watchdog_start(double timeout_s);
/* The main thread enters the step of `iteration` ("iteration 6"; what: "training step", "evaluation"); the
 * clock starts now. */
void zt_watchdog_arm(zt_watchdog *w, const char *what, int64_t iteration);
/* The step finished in time. */
void zt_watchdog_disarm(zt_watchdog *w);
/* Stops and joins the thread; NULL is fine. */
void zt_watchdog_stop(zt_watchdog *w);

#endif
