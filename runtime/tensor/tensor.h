/* A small tensor: dtype, device, up to 4 dims, contiguous row-major data it may or may not own.
 * Tensors point into the memory plan's big allocations; they are descriptions, not allocators. */
#ifndef ZT_TENSOR_H
#define ZT_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/dtype.h"

typedef enum { ZT_DEVICE_CPU = 0, ZT_DEVICE_CUDA = 1 } zt_device;

#define ZT_MAX_DIMS 4

typedef struct {
  zt_dtype dtype;
  zt_device device;
  int ndim;
  int64_t shape[ZT_MAX_DIMS];
  void *data;
} zt_tensor;

zt_tensor zt_tensor_make(void *data, zt_dtype dtype, int ndim, const int64_t *shape);
size_t zt_tensor_numel(const zt_tensor *t);
size_t zt_tensor_nbytes(const zt_tensor *t);
/* "[768, 2304] fp32" style description into buf. */
const char *zt_tensor_describe(const zt_tensor *t, char *buf, size_t len);

#endif
