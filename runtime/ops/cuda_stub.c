/* Device discovery for builds without CUDA: no device. */
#ifndef ZT_HAVE_CUDA
#include "runtime/ops/cuda/cuda_device.h"

int zt_cuda_device_count(void) { return 0; }
int zt_cuda_device_describe(int device, char *buf, int len) { (void)device; (void)buf; (void)len; return -1; }
#endif
