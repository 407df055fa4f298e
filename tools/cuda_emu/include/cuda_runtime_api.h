/* cuda_runtime_api.h of the CPU emulator (tools/cuda_emu). */
#include "zt_emu/api.h"
