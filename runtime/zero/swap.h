/* Optimizer-state offload to NVMe (ZeRO-Infinity's optimizer swapper, for ZeRO stages 1-2 here): the
 * optimizer state of this rank's partition (Adam's exp_avg and exp_avg_sq, and the fp32 master weights in
 * mixed precision) lives in files under <nvme_path>/zero_stage_<s>/optimizer/rank<r>/, one file per state
 * and sub-group (sub_group_size elements); each step swaps a sub-group in through the aio handle
 * (runtime/aio), updates it and swaps it out, optionally pipelined (the next sub-group is read and the
 * previous one written while the current one computes). The files are created at start (zero moments, the
 * initial masters) and removed at exit. See docs/zero.md. */
#ifndef ZT_ZERO_SWAP_H
#define ZT_ZERO_SWAP_H

#include <stddef.h>

#include "runtime/aio/aio.h"
#include "runtime/optim/optimizer.h"

typedef struct {
  zt_aio_handle *aio;
  char dir[1024];
  int nstates;               /* 2 (exp_avg, exp_avg_sq) or 3 (+ fp32 master) */
  size_t lo, n;              /* the partition: flat elements [lo, lo + n) */
  size_t sub, nsub;          /* elements per sub-group, number of sub-groups */
  size_t bytes;              /* bytes per swapped sub-group tensor, padded for O_DIRECT */
  int pipeline, lock;
  float *buf[2][3];          /* [buffer set][state]: exp_avg, exp_avg_sq, master */
  double bytes_read, bytes_written, seconds; /* totals, for the log */
} zt_opt_swapper;

/* Creates the folder and the swap files: zero moments, and the masters from master0 (n floats, or NULL
 * without mixed precision). Dies with the path and the aio message when the folder cannot be created or
 * written, or the disk is full. */
void zt_opt_swapper_init(zt_opt_swapper *s, const zt_aio_config *aio, const char *nvme_path, int stage, int rank,
                         size_t lo, size_t n, size_t sub_group_size, int with_master, const float *master0,
                         int pipeline, int pin_memory);
/* One optimizer step over the partition, sub-group by sub-group: o supplies the configuration and step
 * count (its m, v are not used); weights are the partition's fp32 weights when there are no masters
 * (updated in place), grads the partition's gradients; with masters, the updated masters are rounded to
 * half_dtype into half_out (the partition of the model's weights). */
void zt_opt_swapper_step(zt_opt_swapper *s, zt_optimizer *o, float *weights, float *grads, double lr,
                         float grad_scale, float *half_out, int half_dtype);
/* Reads the whole state back into m, v and master (n floats each; master may be NULL): for checkpoints. */
void zt_opt_swapper_read_all(zt_opt_swapper *s, float *m, float *v, float *master);
/* Writes state into the swap files (checkpoint loading): m, v, master hold n floats each; a NULL one keeps
 * what the files hold for that state. */
void zt_opt_swapper_write_all(zt_opt_swapper *s, const float *m, const float *v, const float *master);
/* Removes the swap files and the folders this run created; frees the buffers. */
void zt_opt_swapper_free(zt_opt_swapper *s);

/* mkdir -p of a swap folder; dies naming `what` (the ds_config block) and the folder that cannot be made or
 * written. */
void zt_swap_make_dirs(const char *what, const char *path);
/* Removes dir and up to levels - 1 of its parents, deepest first, stopping at the first that is not empty
 * (folders something else uses are left alone). */
void zt_swap_remove_dirs(const char *dir, int levels);

#endif
