/* cuda_runtime.h of the CPU emulator (tools/cuda_emu): the runtime API, and for C++ the device side. */
#ifndef ZT_EMU_CUDA_RUNTIME_H
#define ZT_EMU_CUDA_RUNTIME_H
#include "zt_emu/api.h"
#ifdef __cplusplus
#include "zt_emu/device.h"
#endif
#endif
