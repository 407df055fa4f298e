/* Linear layers through OpenBLAS sgemm: y = x W^T + b with W stored [out, in] as in PyTorch. */
#include <cblas.h>
#include <string.h>

#include "runtime/ops/ops.h"

void zt_matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
                       int N, int IC, int OC) {
  float beta = 0.0f;
  if (bias) {
    #pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * OC, bias, (size_t)OC * sizeof(float));
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, weight, IC, beta, out, OC);
}

void zt_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, int N, int IC, int OC) {
  if (dinp)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, weight, IC, 0.0f, dinp, IC);
  if (dweight)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dweight, IC);
  if (dbias) zt_bias_grad(dbias, dout, N, OC); /* column sums in a fixed order: deterministic */
}
