/* Parameter offload to NVMe for ZeRO stage 3 (ZeRO-Infinity's partitioned-parameter swapper): this rank's
 * piece of each fetch unit's parameters lives in <nvme_path>/zero_stage_3/float32params/rank<r>/<u>_param.tensor.swp
 * and comes into the flat buffer only while the unit is fetched (and for the optimizer step). Transfers go
 * through the aio handle (runtime/aio, O_DIRECT) in pieces of buffer_size elements, buffer_count of them in
 * flight, through page-aligned bounce buffers (locked with pin_memory). The files are removed at exit. */
#ifndef ZT_ZERO_PARAM_SWAP_H
#define ZT_ZERO_PARAM_SWAP_H

#include <stddef.h>

#include "runtime/aio/aio.h"

typedef struct {
  zt_aio_handle *aio;
  char dir[1024];
  int n;                     /* units */
  size_t *len;               /* elements of unit u's piece on NVMe (0: none) */
  float **buf;               /* buffer_count bounce buffers of buf_bytes */
  int nbuf, lock;
  size_t buf_elems, buf_bytes;
  double bytes_read, bytes_written, seconds;
} zt_param_swapper;

/* Creates the folder; len[u] elements of unit u are swapped (0: the unit stays in memory). Dies with the path
 * when the folder cannot be created or written. */
void zt_param_swapper_init(zt_param_swapper *s, const zt_aio_config *aio, const char *nvme_path, int rank, int n,
                           const size_t *len, int buffer_count, size_t buffer_size, int pin_memory);
/* Unit u's piece from src to its file, and from its file to dst (len[u] floats). A failed transfer (a full
 * disk, an I/O error) removes the files and stops the run naming the file. */
void zt_param_swapper_write(zt_param_swapper *s, int u, const float *src);
void zt_param_swapper_read(zt_param_swapper *s, int u, float *dst);
/* Removes the files and the folders this run created; frees the buffers. */
void zt_param_swapper_free(zt_param_swapper *s);

#endif
