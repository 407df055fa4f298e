/* Errors and rank-aware logging for every zerotron module.
 * zt_fatal/zt_check print "error: <what>: <detail>" ("error: [rank N] <what>: ..." on ranks other than 0)
 * and exit non-zero (through the fatal hook when one is set, e.g. MPI_Abort so the whole job ends);
 * zt_log prints on rank 0 only unless asked otherwise. */
#ifndef ZT_ERROR_H
#define ZT_ERROR_H

#include <stdio.h>
#include <stdlib.h>

/* Set once at start-up by the launcher code (1 process: rank 0 of 1). */
void zt_set_rank(int rank, int world_size);
int zt_rank(void);
int zt_world_size(void);

/* Called by zt_fatal after the message is printed, instead of exit(1) (runtime/comm installs one that calls
 * MPI_Abort so a failing rank ends every rank of the job). The hook should not return; if it does, exit(1). */
void zt_set_fatal_hook(void (*hook)(int exit_code));
/* The <what> and <detail> of the last zt_fatal in this process ("" before any; the detail cut at 8 KiB), for a
 * hook that passes the refusal on (a checkpoint reader's child process tells its parent). */
const char *zt_last_fatal_what(void);
const char *zt_last_fatal_detail(void);

/* Prints "error: <what>: <formatted detail>" to stderr and exits with status 1 (see zt_set_fatal_hook). */
void zt_fatal(const char *what, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* zt_check(cond, what, fmt, ...): zt_fatal unless cond holds. */
#define zt_check(cond, what, ...) do { if (!(cond)) zt_fatal((what), __VA_ARGS__); } while (0)

/* Rank-0 logging to stdout (flushed, so logs interleave correctly with child processes). */
void zt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Warning to stderr, every rank, prefixed "warning: ". */
void zt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Allocation that never returns NULL: dies naming what was being allocated and its size. */
void *zt_malloc(size_t bytes, const char *what);
void *zt_calloc(size_t count, size_t size, const char *what);
void *zt_aligned_alloc(size_t bytes, const char *what); /* 64-byte aligned, zeroed */

#endif
