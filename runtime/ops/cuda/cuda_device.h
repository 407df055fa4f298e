/* CUDA device discovery: how many devices and what they are. Without a CUDA build these report no device, so
 * callers need no #ifdefs; the ops are runtime/ops/cuda/cuda_ops.h, the op table runtime/ops/backend.h. */
#ifndef ZT_CUDA_DEVICE_H
#define ZT_CUDA_DEVICE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices (0 without a CUDA build, a driver or a GPU). */
int zt_cuda_device_count(void);
/* Writes "NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB" for device i into buf; returns 0 on success. */
int zt_cuda_device_describe(int device, char *buf, int len);

#ifdef __cplusplus
}
#endif
#endif
