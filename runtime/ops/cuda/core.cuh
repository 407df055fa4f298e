// Internal to the CUDA op files: the shared cuBLASLt handle and workspace of the context (core.cu). Ops may
// also use the workspace as scratch between their own kernels: every op runs on the one stream, so no two
// ops use it at the same time.
#pragma once
#include <cublasLt.h>
#include <stddef.h>

cublasLtHandle_t zt_cuda_lt(void);
void *zt_cuda_workspace(size_t *bytes);
