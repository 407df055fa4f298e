// cub/cub.cuh of the CPU emulator (tools/cuda_emu): the emulated subset of CUB.
#pragma once
#include <cub/device/device_radix_sort.cuh>
