/* Tensor descriptions. */
#include "runtime/tensor/tensor.h"

#include <stdio.h>

#include "runtime/base/error.h"

zt_tensor zt_tensor_make(void *data, zt_dtype dtype, int ndim, const int64_t *shape) {
  zt_check(ndim >= 1 && ndim <= ZT_MAX_DIMS, "tensor", "ndim %d outside [1, %d]", ndim, ZT_MAX_DIMS);
  zt_tensor t = {.dtype = dtype, .device = ZT_DEVICE_CPU, .ndim = ndim, .data = data};
  for (int i = 0; i < ndim; i++) {
    zt_check(shape[i] > 0, "tensor", "dimension %d has size %lld", i, (long long)shape[i]);
    t.shape[i] = shape[i];
  }
  return t;
}

size_t zt_tensor_numel(const zt_tensor *t) {
  size_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
  return n;
}

size_t zt_tensor_nbytes(const zt_tensor *t) { return zt_tensor_numel(t) * zt_dtype_size(t->dtype); }

const char *zt_tensor_describe(const zt_tensor *t, char *buf, size_t len) {
  int n = snprintf(buf, len, "[");
  for (int i = 0; i < t->ndim && n < (int)len; i++)
    n += snprintf(buf + n, len - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
  if (n < (int)len) snprintf(buf + n, len - n, "] %s", zt_dtype_name(t->dtype));
  return buf;
}
