/* cuda_fp16.h of the CPU emulator (tools/cuda_emu): __half and its conversions. */
#pragma once
#include "zt_emu/half.h"
