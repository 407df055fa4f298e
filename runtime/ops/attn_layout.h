/* Block-sparse attention layouts as the kernels read them (zt_attn_layout in runtime/ops/ops.h): built from a
 * 0/1 block mask [heads][nb][nb] (DeepSpeed's layout tensor), with its transpose, in host memory, and copied into
 * a backend's memory for its kernels. The DeepSpeed modes that make the mask are models/transformer/sparsity.h. */
#ifndef ZT_ATTN_LAYOUT_H
#define ZT_ATTN_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/ops/backend.h"
#include "runtime/ops/ops.h"

/* A layout and the memory its arrays live in (host: malloc'd; backend: be->alloc'd). */
typedef struct {
  zt_attn_layout l;
  const zt_backend *be; /* NULL: host arrays */
  void *mem;            /* one allocation holding the five arrays */
  size_t bytes;
} zt_attn_layout_buf;

/* From mask[heads][nb][nb] (nonzero = computed): heads collapses to 1 when every head's mask is the same. */
void zt_attn_layout_from_mask(zt_attn_layout_buf *out, const uint8_t *mask, int heads, int nb, int block);
/* A copy of a host layout in be's memory (the same struct on the CPU backend, whose memory is the host's). */
void zt_attn_layout_to_backend(zt_attn_layout_buf *out, const zt_attn_layout_buf *host, const zt_backend *be);
void zt_attn_layout_free(zt_attn_layout_buf *b);

/* The layout index of op head h (local) with global head offset head0. */
static inline int zt_attn_layout_head(const zt_attn_layout *l, int head0, int h) {
  return l->heads == 1 ? 0 : head0 + h;
}
/* Listed tiles of the NH heads head0 .. head0 + NH - 1 (host layout). */
int64_t zt_attn_layout_heads_nnz(const zt_attn_layout *l, int head0, int NH);
/* Whether tile (i, j) of layout head g is listed (host layout; binary search of the row). */
int zt_attn_layout_has(const zt_attn_layout *l, int g, int i, int j);

#endif
