/* GPU op benchmark (issue: CUDA backend): each op of runtime/ops/cuda at the GPT-2 124M training shapes (micro
 * batch B, seq T, bf16 by default) timed with CUDA events after warm-up (median of the repeats), beside the two
 * ceilings measured in the same run: a device-to-device copy (bytes read + written per second) and the best of
 * large square bf16 matrix products through our own zt_cuda_matmul_forward (the GEMM peak). Matrix ops print
 * TFLOP/s, their share of that peak and of the dense bf16 datasheet peak (989 TFLOP/s, H100 SXM and H200);
 * memory-bound ops print GB/s of their fewest bytes (inputs read once, outputs written once) and their share
 * of the copy bandwidth.
 *   bench_gpu_ops [--batch B] [--seq T] [--dtype bf16|fp16|fp32] [--repeat R] */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/dtype.h"
#include "runtime/base/philox.h"
#include "runtime/ops/cuda/cuda_device.h"
#include "runtime/ops/cuda/cuda_ops.h"

#define DENSE_PEAK_TFLOPS 989.0

static int repeat = 20;
static cudaStream_t st;

static void ck(cudaError_t e, const char *what) {
  if (e != cudaSuccess) { fprintf(stderr, "bench_gpu_ops: %s: %s\n", what, cudaGetErrorString(e)); exit(1); }
}

static int cmp_f(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Median milliseconds of fn over `repeat` timed runs after 3 warm-ups. */
typedef void (*bench_fn)(void *ctx);
static float time_ms(bench_fn fn, void *ctx) {
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a), "event");
  ck(cudaEventCreate(&b), "event");
  for (int i = 0; i < 3; i++) fn(ctx);
  float *ms = malloc(sizeof(float) * repeat);
  for (int i = 0; i < repeat; i++) {
    ck(cudaEventRecord(a, st), "record");
    fn(ctx);
    ck(cudaEventRecord(b, st), "record");
    ck(cudaEventSynchronize(b), "sync");
    ck(cudaEventElapsedTime(&ms[i], a, b), "elapsed");
  }
  qsort(ms, repeat, sizeof(float), cmp_f);
  float med = ms[repeat / 2];
  free(ms);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return med;
}

/* Random device values (never zeros: they run faster than real data). */
static void *dev_randn(size_t n, zt_dtype dt, float std, uint64_t stream) {
  float *h = malloc(n * sizeof(float));
  zt_philox_normal_fill(h, n, 0, 0.0f, std, 7, ZT_RNG_DATA, stream);
  void *tmp = malloc(n * zt_dtype_size(dt));
  zt_convert(tmp, dt, h, ZT_DTYPE_FP32, n);
  void *d = zt_cuda_malloc(n * zt_dtype_size(dt), "bench input");
  zt_cuda_memcpy_h2d(d, tmp, n * zt_dtype_size(dt));
  free(h);
  free(tmp);
  return d;
}

typedef struct {
  zt_dtype dt;
  int N, IC, OC;
  void *out, *pre, *inp, *w, *bias, *dinp, *dw, *dbias, *dout;
} mm_ctx;
static void mm_fwd(void *c) {
  mm_ctx *m = c;
  zt_cuda_matmul_forward(m->dt, m->out, m->pre, m->inp, m->w, m->bias, m->N, m->IC, m->OC);
}
static void mm_bwd(void *c) {
  mm_ctx *m = c;
  zt_cuda_matmul_backward(m->dt, m->dinp, m->dw, m->dbias, m->dout, m->inp, m->w, NULL, m->N, m->IC, m->OC);
}

static double gemm_peak;

/* Times the forward (and with bwd the backward) of one matmul shape; with calibrate, only raises gemm_peak. */
static void bench_matmul(zt_dtype dt, int N, int IC, int OC, const char *name, int with_bias, int gelu, int bwd,
                         int calibrate) {
  size_t es = zt_dtype_size(dt);
  mm_ctx m = {dt, N, IC, OC, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  m.inp = dev_randn((size_t)N * IC, dt, 1.0f, 1);
  m.w = dev_randn((size_t)OC * IC, dt, 0.02f, 2);
  m.bias = with_bias ? dev_randn((size_t)OC, dt, 0.02f, 3) : NULL;
  m.out = zt_cuda_malloc((size_t)N * OC * es, "out");
  m.pre = gelu ? zt_cuda_malloc((size_t)N * OC * es, "pre") : NULL;
  double flops = 2.0 * N * IC * OC;
  float ms = time_ms(mm_fwd, &m);
  double tf = flops / (ms * 1e-3) / 1e12;
  if (calibrate) {
    if (tf > gemm_peak) gemm_peak = tf;
  } else {
    printf("matmul fwd %-14s %6d x %5d -> %5d %s: %8.3f ms %7.1f TFLOP/s  %.2f of GEMM peak  %.2f of dense peak\n", name,
           N, IC, OC, zt_dtype_name(dt), ms, tf, tf / gemm_peak, tf / DENSE_PEAK_TFLOPS);
  }
  if (bwd) {
    m.dout = dev_randn((size_t)N * OC, dt, 1.0f, 4);
    m.dinp = zt_cuda_malloc((size_t)N * IC * es, "dinp");
    m.dw = dev_randn((size_t)OC * IC, dt, 0.0f, 5);
    m.dbias = with_bias ? dev_randn((size_t)OC, dt, 0.0f, 6) : NULL;
    ms = time_ms(mm_bwd, &m);
    tf = 2 * flops / (ms * 1e-3) / 1e12;
    printf("matmul bwd %-14s %6d x %5d -> %5d %s: %8.3f ms %7.1f TFLOP/s  %.2f of GEMM peak  %.2f of dense peak\n", name,
           N, IC, OC, zt_dtype_name(dt), ms, tf, tf / gemm_peak, tf / DENSE_PEAK_TFLOPS);
    zt_cuda_free(m.dout), zt_cuda_free(m.dinp), zt_cuda_free(m.dw), zt_cuda_free(m.dbias);
  }
  zt_cuda_free(m.inp), zt_cuda_free(m.w), zt_cuda_free(m.bias), zt_cuda_free(m.out), zt_cuda_free(m.pre);
}

typedef struct {
  zt_dtype dt;
  zt_attention_desc a;
  void *qkv, *out, *dout, *dqkv;
  float *lse;
} at_ctx;
static void at_fwd(void *c) {
  at_ctx *t = c;
  const size_t HD = t->a.HD;
  char *q = t->qkv;
  size_t es = zt_dtype_size(t->dt);
  zt_cuda_attention_forward(t->dt, t->out, t->lse, q, q + HD * es, q + 2 * HD * es, &t->a);
}
static void at_bwd(void *c) {
  at_ctx *t = c;
  const size_t HD = t->a.HD, es = zt_dtype_size(t->dt);
  char *q = t->qkv, *d = t->dqkv;
  zt_cuda_attention_backward(t->dt, d, d + HD * es, d + 2 * HD * es, t->dout, t->out, t->lse, q, q + HD * es,
                             q + 2 * HD * es, &t->a);
}

typedef struct {
  zt_dtype dt;
  int N, C, V;
  void *x, *y, *w, *b, *dx, *dw, *db, *logits;
  float *mean, *rstd, *losses, *lse, *dloss;
  int32_t *ids;
} mem_ctx;
static void ln_fwd(void *c) {
  mem_ctx *m = c;
  zt_cuda_layernorm_forward(m->dt, m->y, m->mean, m->rstd, m->x, m->w, m->b, m->N, m->C, 1e-5f);
}
static void ln_bwd(void *c) {
  mem_ctx *m = c;
  zt_cuda_layernorm_backward(m->dt, m->dx, m->dw, m->db, m->y, m->x, m->w, m->mean, m->rstd, m->N, m->C);
}
static void gelu_fwd(void *c) {
  mem_ctx *m = c;
  zt_cuda_gelu_forward(m->dt, m->y, m->x, (size_t)m->N * m->C);
}
static void ce_fwd(void *c) {
  mem_ctx *m = c;
  zt_cuda_cross_entropy_forward(m->dt, m->losses, m->lse, m->logits, m->ids, m->N, m->V);
}
static void ce_bwd(void *c) {
  mem_ctx *m = c;
  zt_cuda_cross_entropy_backward(m->dt, m->logits, m->logits, m->lse, m->ids, m->dloss, m->N, m->V);
}
typedef struct { void *dst, *src; size_t bytes; } cp_ctx;
static void copy_fn(void *c) {
  cp_ctx *p = c;
  ck(cudaMemcpyAsync(p->dst, p->src, p->bytes, cudaMemcpyDeviceToDevice, st), "copy");
}

static double copy_gbs;
static void report_mem(const char *name, float ms, double bytes) {
  double gbs = bytes / (ms * 1e-3) / 1e9;
  printf("%-34s: %8.3f ms %7.0f GB/s  %.2f of copy bandwidth\n", name, ms, gbs, gbs / copy_gbs);
}

int main(int argc, char **argv) {
  int B = 8, T = 1024;
  zt_dtype dt = ZT_DTYPE_BF16;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--batch") && i + 1 < argc) B = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seq") && i + 1 < argc) T = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
      const char *d = argv[++i];
      dt = !strcmp(d, "fp32") ? ZT_DTYPE_FP32 : !strcmp(d, "fp16") ? ZT_DTYPE_FP16 : ZT_DTYPE_BF16;
    } else {
      fprintf(stderr, "usage: bench_gpu_ops [--batch B] [--seq T] [--dtype bf16|fp16|fp32] [--repeat R]\n");
      return 2;
    }
  }
  if (B < 1 || T < 1 || repeat < 1) { fprintf(stderr, "bench_gpu_ops: --batch, --seq and --repeat must be >= 1\n"); return 2; }
  if (zt_cuda_device_count() == 0) { printf("SKIP: no CUDA device\n"); return 77; }
  char desc[256];
  zt_cuda_device_describe(0, desc, sizeof desc);
  zt_cuda_init(0);
  st = (cudaStream_t)zt_cuda_stream();
  printf("device: %s; batch %d, seq %d, %s, median of %d runs\n", desc, B, T, zt_dtype_name(dt), repeat);

  /* ceilings */
  cp_ctx cp = {NULL, NULL, (size_t)1 << 30};
  cp.src = dev_randn(cp.bytes / 4, ZT_DTYPE_FP32, 1.0f, 9);
  cp.dst = zt_cuda_malloc(cp.bytes, "copy");
  copy_gbs = 2.0 * cp.bytes / (time_ms(copy_fn, &cp) * 1e-3) / 1e9;
  printf("ceiling: device-to-device copy %.0f GB/s (read + write)\n", copy_gbs);
  zt_cuda_free(cp.src), zt_cuda_free(cp.dst);
  for (int s = 4096; s <= 8192; s *= 2) bench_matmul(ZT_DTYPE_BF16, s, s, s, "square", 0, 0, 0, 1);
  printf("ceiling: GEMM peak %.1f TFLOP/s (bf16, best square product through zt_cuda_matmul_forward), %.2f of the "
         "dense peak %.0f\n", gemm_peak, gemm_peak / DENSE_PEAK_TFLOPS, DENSE_PEAK_TFLOPS);

  /* GPT-2 124M layer shapes */
  const int C = 768, NH = 12, HD = 64, V = 50304, N = B * T;
  bench_matmul(dt, N, C, 3 * C, "qkv", 1, 0, 1, 0);
  bench_matmul(dt, N, C, C, "attn proj", 1, 0, 1, 0);
  bench_matmul(dt, N, C, 4 * C, "fc (+gelu)", 1, 1, 1, 0);
  bench_matmul(dt, N, 4 * C, C, "fc proj", 1, 0, 1, 0);
  bench_matmul(dt, N, C, V, "lm head", 0, 0, 1, 0);

  size_t es = zt_dtype_size(dt);
  at_ctx at = {dt, {0}, NULL, NULL, NULL, NULL, NULL};
  at.a = (zt_attention_desc){.B = B, .Tq = T, .Tk = T, .NH = NH, .HD = HD, .ld_q = 3 * C, .hs_q = 3 * HD,
                             .ld_kv = 3 * C, .hs_k = 3 * HD, .hs_v = 3 * HD, .mask = ZT_ATTN_CAUSAL,
                             .scale = 0.125f};
  at.qkv = dev_randn((size_t)N * 3 * C, dt, 1.0f, 10);
  at.out = zt_cuda_malloc((size_t)N * C * es, "attn out");
  at.dout = dev_randn((size_t)N * C, dt, 1.0f, 11);
  at.dqkv = zt_cuda_malloc((size_t)N * 3 * C * es, "dqkv");
  at.lse = zt_cuda_malloc((size_t)B * NH * T * sizeof(float), "lse");
  double aflops = 4.0 * B * NH * (double)T * T * HD / 2; /* causal: half of QK^T and PV */
  float ms = time_ms(at_fwd, &at);
  printf("attention fwd causal B%d T%d NH%d HD%d: %8.3f ms %7.1f TFLOP/s  %.2f of GEMM peak\n", B, T, NH, HD, ms,
         aflops / (ms * 1e-3) / 1e12, aflops / (ms * 1e-3) / 1e12 / gemm_peak);
  ms = time_ms(at_bwd, &at);
  printf("attention bwd causal B%d T%d NH%d HD%d: %8.3f ms %7.1f TFLOP/s  %.2f of GEMM peak (2.5x the forward's "
         "FLOPs)\n", B, T, NH, HD, ms, 2.5 * aflops / (ms * 1e-3) / 1e12, 2.5 * aflops / (ms * 1e-3) / 1e12 / gemm_peak);
  zt_cuda_free(at.qkv), zt_cuda_free(at.out), zt_cuda_free(at.dout), zt_cuda_free(at.dqkv), zt_cuda_free(at.lse);

  mem_ctx m = {dt, N, C, V, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  m.x = dev_randn((size_t)N * C, dt, 1.0f, 12);
  m.y = zt_cuda_malloc((size_t)N * C * es, "y");
  m.dx = zt_cuda_malloc((size_t)N * C * es, "dx");
  m.w = dev_randn(C, dt, 1.0f, 13), m.b = dev_randn(C, dt, 0.1f, 14);
  m.dw = dev_randn(C, dt, 0.0f, 15), m.db = dev_randn(C, dt, 0.0f, 16);
  m.mean = zt_cuda_malloc((size_t)N * sizeof(float), "mean");
  m.rstd = zt_cuda_malloc((size_t)N * sizeof(float), "rstd");
  const double act = (double)N * C * es;
  report_mem("layernorm fwd", time_ms(ln_fwd, &m), 2 * act);
  report_mem("layernorm bwd", time_ms(ln_bwd, &m), 3 * act);
  zt_cuda_free(m.y), zt_cuda_free(m.x);
  m.x = dev_randn((size_t)N * 4 * C, dt, 1.0f, 17);
  m.y = zt_cuda_malloc((size_t)N * 4 * C * es, "y");
  m.C = 4 * C;
  report_mem("gelu fwd (4C)", time_ms(gelu_fwd, &m), 2 * 4 * act);
  m.logits = dev_randn((size_t)N * V, dt, 1.0f, 18);
  int32_t *ids = malloc(sizeof(int32_t) * N);
  float *dl = malloc(sizeof(float) * N);
  for (int i = 0; i < N; i++) ids[i] = (int32_t)((i * 7919u) % V), dl[i] = 1.0f / N;
  m.ids = zt_cuda_malloc(sizeof(int32_t) * N, "ids");
  zt_cuda_memcpy_h2d(m.ids, ids, sizeof(int32_t) * N);
  m.dloss = zt_cuda_malloc(sizeof(float) * N, "dloss");
  zt_cuda_memcpy_h2d(m.dloss, dl, sizeof(float) * N);
  m.losses = zt_cuda_malloc(sizeof(float) * N, "losses");
  m.lse = zt_cuda_malloc(sizeof(float) * N, "lse");
  report_mem("cross-entropy fwd (V=50304)", time_ms(ce_fwd, &m), (double)N * V * es);
  report_mem("cross-entropy bwd in place", time_ms(ce_bwd, &m), 2.0 * N * V * es);
  free(ids), free(dl);
  zt_cuda_shutdown();
  return 0;
}
