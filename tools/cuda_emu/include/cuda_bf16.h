/* cuda_bf16.h of the CPU emulator (tools/cuda_emu): __nv_bfloat16 and its conversions. */
#pragma once
#include "zt_emu/half.h"
