/* A step-range trace of where the time goes (Megatron-DeepSpeed's --profile pt|pt-full, which runs PyTorch's
 * profiler): complete events (the Trace Event Format's "X" phase, as PyTorch's Kineto traces hold them) recorded
 * while on, one process per rank, written as gzip JSON that Perfetto, chrome://tracing and TensorBoard's profiler
 * read. Recording is a branch when off. */
#ifndef ZT_TRACE_H
#define ZT_TRACE_H

#include <stddef.h>

/* Starts recording (earlier events dropped). full: each event also carries the names of the events it nests in
 * (args.stack), the counterpart of pt-full's call stacks. */
void zt_trace_begin(int full);
int zt_trace_active(void);
/* One event named `name` (copied; at most 95 bytes kept) from t0 to t1 (zt_now() seconds). */
void zt_trace_span(const char *name, double t0, double t1);
/* Writes the recorded events to path (gzip JSON, pid = rank) and stops recording; dies naming the path on an error.
 * Returns the number of events. */
size_t zt_trace_write(const char *path, int rank);

#endif
