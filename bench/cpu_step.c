/* CPU training-step benchmark: one full GPT training iteration (forward, backward, clip, AdamW) of a
 * given shape through the real engine, beside this machine's sgemm GFLOP/s measured in the same run.
 * Prints ms per step (min/median over the timed steps), achieved GFLOP/s with Megatron's FLOPs formula,
 * and the ratio to the sgemm bound. Default shape: GPT-2 124M, seq 64, micro batch 4. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/blas.h"
#include "runtime/comm/comm.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "data/gpt_provider.h"
#include "models/gpt/gpt.h"
#include "train/engine.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Best-of-10 sgemm rate for an M x N x K product (C = A B^T, our linear layers' layout). */
static double sgemm_gflops(int M, int N, int K) {
  float *A = zt_aligned_alloc((size_t)M * K * 4, "bench A"), *B = zt_aligned_alloc((size_t)N * K * 4, "bench B");
  float *C = zt_aligned_alloc((size_t)M * N * 4, "bench C");
  for (size_t i = 0; i < (size_t)M * K; i++) A[i] = (float)(i % 7) * 0.1f;
  for (size_t i = 0; i < (size_t)N * K; i++) B[i] = (float)(i % 5) * 0.1f;
  double best = 1e30;
  for (int r = 0; r < 11; r++) {
    double t0 = zt_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
    double t = zt_now() - t0;
    if (r > 0 && t < best) best = t;
  }
  free(A);
  free(B);
  free(C);
  return 2.0 * M * N * K / best / 1e9;
}

int main(int argc, char **argv) {
  zt_blas_setup(argc, argv);
  zt_comm_init(&argc, &argv);
  int steps = 5;
  /* bench flags before "--": --steps N; everything after "--" is passed to the pretrain_gpt parser */
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
    else zt_fatal("bench_cpu_step", "unknown option %s (usage: bench_cpu_step [--steps N] [-- pretrain_gpt flags])", argv[i]);
  }
  zt_check(steps >= 1 && steps <= 1000, "bench_cpu_step", "--steps %d outside [1, 1000]", steps);
  const char *defaults[] = {"bench_cpu_step", "--num-layers", "12", "--hidden-size", "768", "--num-attention-heads", "12",
                            "--seq-length", "64", "--max-position-embeddings", "1024", "--micro-batch-size", "4",
                            "--global-batch-size", "4", "--vocab-size", "50257", "--lr", "6e-4",
                            "--train-iters", "1000", "--mock-data", "--eval-iters", "0"};
  int nd = (int)(sizeof defaults / sizeof defaults[0]);
  int extra = i < argc ? argc - i - 1 : 0;
  char **av = calloc((size_t)(nd + extra + 1), sizeof(char *));
  for (int k = 0; k < nd; k++) av[k] = (char *)defaults[k];
  for (int k = 0; k < extra; k++) av[nd + k] = argv[i + 1 + k]; /* later flags override defaults */
  zt_args args;
  zt_args_parse(&args, nd + extra, av, 1);

  double bound = sgemm_gflops(2048, 2048, 2048);
  double model_shape = sgemm_gflops(args.micro_batch_size * args.seq_length, 4 * args.hidden_size, args.hidden_size);

  zt_engine e;
  const zt_model_kind gpt = {.name = "GPT", .build_model = zt_gpt_create, .build_data = zt_gpt_provider_create,
                             .count_params = zt_gpt_count};
  zt_engine_init(&e, &args, NULL, NULL, &gpt); /* --mock-data, no DeepSpeed config */
  double norm, times[1000];
  for (int w = 0; w < 2; w++) zt_engine_train_step(&e, &norm); /* warm-up: page faults, BLAS buffers */
  for (int s = 0; s < steps; s++) {
    double t0 = zt_now();
    zt_engine_train_step(&e, &norm);
    times[s] = zt_now() - t0;
  }
  /* the bound is measured again after the steps and the higher figure kept: on a shared or
   * frequency-scaling machine this makes the ratio conservative rather than flattering */
  double bound_after = sgemm_gflops(2048, 2048, 2048);
  if (bound_after > bound) bound = bound_after;
  qsort(times, (size_t)steps, sizeof(double), cmp_double);
  double med = times[steps / 2], gflop = e.flops_per_iteration / 1e9;
  printf("machine: %d OpenMP threads, OpenBLAS %s kernels; sgemm 2048^3 (best before/after the steps): %.1f GFLOP/s; sgemm %dx%dx%d (MLP shape): %.1f GFLOP/s\n",
         omp_get_max_threads(), zt_blas_core(), bound, args.micro_batch_size * args.seq_length, 4 * args.hidden_size, args.hidden_size,
         model_shape);
  printf("model: L=%d h=%d heads=%d V=%d seq=%d mbs=%d gbs=%d recompute=%s: %.1f GFLOP per step\n", args.num_layers,
         args.hidden_size, args.num_attention_heads, args.padded_vocab_size, args.seq_length, args.micro_batch_size,
         args.global_batch_size, args.recompute_granularity == ZT_RECOMPUTE_FULL ? "full" : "none", gflop);
  printf("step: min %.1f ms, median %.1f ms over %d steps; achieved %.1f GFLOP/s = %.1f%% of the sgemm bound\n",
         times[0] * 1e3, med * 1e3, steps, gflop / med, 100.0 * gflop / med / bound);
  zt_engine_free(&e);
  free(av);
  zt_comm_finalize();
  return 0;
}
