/* DeepSpeed's communication logger (ds_config "comms_logger", deepspeed/utils/comms_logging.py) over
 * runtime/comm: every collective, when enabled, records (op name, message size, latency); verbose prints
 * one line per op on rank 0, zt_comms_logger_log_summary prints DeepSpeed's summary table (rank 0).
 * Op names and message sizes are DeepSpeed's: all_reduce (the buffer), all_gather (one rank's input),
 * reduce_scatter (the whole input), all_to_all_single (the whole input), broadcast (the buffer), send / recv (the
 * buffer), barrier (0 B). */
#ifndef ZT_COMMS_LOGGER_H
#define ZT_COMMS_LOGGER_H

#include <stdbool.h>
#include <stddef.h>

#define ZT_COMMS_MAX_PROF_OPS 9

typedef struct {
  bool enabled, verbose, prof_all;             /* DeepSpeed defaults: false, false, true */
  int n_prof_ops;                              /* prof_ops: ops recorded when prof_all is false */
  char prof_ops[ZT_COMMS_MAX_PROF_OPS][24];
} zt_comms_logger_config;

/* Nonzero while the logger is enabled: the single branch runtime/comm takes per collective. */
extern int zt_comms_logger_on;

/* Sets the configuration (copied); does not clear records. Any rank, before or after zt_comm_init. */
void zt_comms_logger_configure(const zt_comms_logger_config *c);
/* Whether op is logged (enabled and prof_all or op listed in prof_ops). */
bool zt_comms_logger_wants(const char *op);
/* Adds one record (when zt_comms_logger_wants(op)); n = the group size for the bandwidth math. */
void zt_comms_logger_record(const char *op, size_t msg_size, double latency_ms, int n);
/* DeepSpeed's deepspeed.comm.log_summary(): the table on rank 0 via zt_log (records are kept). */
void zt_comms_logger_log_summary(void);
/* Drops every record. */
void zt_comms_logger_reset(void);

/* For tests: how many records op has with msg_size (0 when none), and their summed latency in ms. */
long zt_comms_logger_count(const char *op, size_t msg_size, double *total_latency_ms);
/* DeepSpeed's helpers: convert_size ("0B", "4.0 KB", "1.5 MB"), calc_bw_log (Gbps, latency in ms; n the
 * group size), trim_mean (sorts v in place; 10% trimmed each end with Python's round-half-even). */
void zt_comms_convert_size(size_t bytes, char *out, size_t out_size);
void zt_comms_calc_bw(const char *op, size_t msg_size, double latency_ms, int n, double *algbw, double *busbw);
double zt_comms_trim_mean(double *v, long n, double trim);

#endif
