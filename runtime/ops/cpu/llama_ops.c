/* The CPU reference of the Llama-style layer's ops (Megatron-DeepSpeed's --normalization rmsnorm, --swiglu,
 * --use-rotary-position-embeddings and --num-key-value-heads): RMSNorm, SwiGLU, the rotary position embedding and
 * grouped-query attention's repeat_kv; fp32 buffers, row sums in double, rows in parallel, deterministic (column sums of
 * the weight gradient in row order). */
#include <math.h>

#include "runtime/ops/cpu/vmath.h"
#include "runtime/ops/ops.h"

void zt_rmsnorm_forward(float *out, float *rstd, const float *inp, const float *weight, int N, int C, float eps) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *x = inp + (size_t)n * C;
    float *y = out + (size_t)n * C;
    double ss = 0.0;
    for (int i = 0; i < C; i++) ss += (double)x[i] * x[i];
    const float s = (float)(1.0 / sqrt(ss / C + (double)eps));
    for (int i = 0; i < C; i++) y[i] = x[i] * s * weight[i];
    rstd[n] = s;
  }
}

/* y = w * x * s with s = (mean x^2 + eps)^-1/2: dx_i = s (w_i dy_i) - x_i s^3 / C * sum_j (w_j dy_j x_j) */
void zt_rmsnorm_backward(float *dinp, float *dweight, const float *dout, const float *inp, const float *weight,
                         const float *rstd, int N, int C) {
  #pragma omp parallel
  {
    #pragma omp for schedule(static)
    for (int n = 0; n < N; n++) {
      const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
      float *dx = dinp + (size_t)n * C;
      const double s = rstd[n];
      double dot = 0.0;
      for (int i = 0; i < C; i++) dot += (double)weight[i] * dy[i] * x[i];
      const double k = dot * s * s * s / C;
      for (int i = 0; i < C; i++) dx[i] = (float)(s * weight[i] * dy[i] - k * x[i]);
    }
    #pragma omp for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 64) {
      const int c1 = c0 + 64 < C ? c0 + 64 : C;
      double gw[64] = {0};
      for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        const double s = rstd[n];
        for (int i = c0; i < c1; i++) gw[i - c0] += (double)x[i] * s * dy[i];
      }
      for (int i = c0; i < c1; i++) dweight[i] += (float)gw[i - c0];
    }
  }
}

/* SwiGLU in fp32 as the CUDA kernel, with the vectorizable exp of vmath.h (about 1 ulp; glibc's scalar exp in double
 * made the op 5-9% of bench/llama_step.sh's step) */
static inline float sigmoidf(float g) { return 1.0f / (1.0f + zt_expf(-g)); }

void zt_swiglu_forward(float *out, const float *inp, int N, int F) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *g = inp + (size_t)n * 2 * F, *u = g + F;
    float *y = out + (size_t)n * F;
    #pragma omp simd
    for (int f = 0; f < F; f++) y[f] = g[f] * sigmoidf(g[f]) * u[f];
  }
}

/* silu(g) u: d/dg = u sig(g) (1 + g (1 - sig(g))), d/du = silu(g) */
void zt_swiglu_backward(float *dinp, const float *dout, const float *inp, int N, int F) {
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    const float *g = inp + (size_t)n * 2 * F, *u = g + F, *dy = dout + (size_t)n * F;
    float *dg = dinp + (size_t)n * 2 * F, *du = dg + F;
    #pragma omp simd
    for (int f = 0; f < F; f++) {
      const float sg = sigmoidf(g[f]), gf = g[f], uf = u[f], d = dy[f];
      dg[f] = d * uf * sg * (1.0f + gf * (1.0f - sg));
      du[f] = d * gf * sg;
    }
  }
}

void zt_rope(float *x, const float *cs, int B, int T, int NH, int ld, int hs, int rot, int inverse) {
  const int half = rot / 2;
  const float sign = inverse ? -1.0f : 1.0f;
  #pragma omp parallel for schedule(static)
  for (int r = 0; r < B * T; r++) {
    const float *c = cs + (size_t)(r % T) * rot;
    for (int h = 0; h < NH; h++) {
      float *v = x + (size_t)r * ld + (size_t)h * hs;
      for (int i = 0; i < half; i++) {
        const float co = c[2 * i], si = sign * c[2 * i + 1], a = v[i], b = v[i + half];
        v[i] = a * co - b * si;
        v[i + half] = b * co + a * si;
      }
    }
  }
}

void zt_rope_table(float *cs, int pos0, int T, int rot, float theta) {
  for (int i = 0; i < rot / 2; i++) {
    const float e = (float)(2 * i) / (float)rot, inv = 1.0f / (float)pow((double)theta, (double)e);
    for (int t = 0; t < T; t++) {
      const float ang = (float)(pos0 + t) * inv;
      cs[(size_t)t * rot + 2 * i] = (float)cos((double)ang);
      cs[(size_t)t * rot + 2 * i + 1] = (float)sin((double)ang);
    }
  }
}

void zt_gqa_pack(float *packed, float *grouped, int N, int G, int R, int HD, int inverse) {
  const size_t gs = (size_t)(R + 2) * HD, prow = (size_t)3 * R * G * HD, grow = (size_t)G * gs;
  #pragma omp parallel for schedule(static)
  for (int n = 0; n < N; n++) {
    float *p = packed + (size_t)n * prow, *q = grouped + (size_t)n * grow;
    for (int g = 0; g < G; g++) {
      float *grp = q + (size_t)g * gs, *k = grp + (size_t)R * HD, *v = k + HD;
      if (inverse) { /* the key and value gradients summed over the group's heads, in head order */
        for (int d = 0; d < HD; d++) {
          float sk = 0.0f, sv = 0.0f;
          for (int j = 0; j < R; j++) {
            const float *h = p + (size_t)(g * R + j) * 3 * HD;
            sk += h[HD + d];
            sv += h[2 * HD + d];
          }
          k[d] = sk;
          v[d] = sv;
        }
      }
      for (int j = 0; j < R; j++) {
        float *h = p + (size_t)(g * R + j) * 3 * HD, *qj = grp + (size_t)j * HD;
        for (int d = 0; d < HD; d++) {
          if (inverse) {
            qj[d] = h[d];
          } else {
            h[d] = qj[d];
            h[HD + d] = k[d];
            h[2 * HD + d] = v[d];
          }
        }
      }
    }
  }
}
