// CUDA device discovery through the runtime API.
#include <cuda_runtime.h>
#include <stdio.h>

#include "runtime/ops/cuda/cuda_device.h"

extern "C" int zt_cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

extern "C" int zt_cuda_device_describe(int device, char *buf, int len) {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    cudaGetLastError();  // not a device: clear the error, or the next launch check would report it
    return -1;
  }
  snprintf(buf, len, "%s, sm_%d%d, %.1f GiB", p.name, p.major, p.minor, p.totalGlobalMem / 1073741824.0);
  return 0;
}
