/* CPU training-step benchmark: one full training iteration (forward, backward, clip, AdamW) of a GPT (default) or,
 * with --model bert / t5, a BERT or a T5 of a given shape through the real engine, beside two bounds measured in the
 * same run:
 * this machine's sgemm GFLOP/s, and the GEMM-only time of the step (every matrix product of the step's forward and
 * backward, the same shapes, layouts and threading, timed alone with the same BLAS and nothing else in between; one
 * pass after each timed step). Prints ms per step (min/median over the timed steps), achieved GFLOP/s with Megatron's
 * FLOPs formula, the ratio to the sgemm bound, and the GEMM-only time over the step time (median of the pairs). Default shapes: GPT-2 124M at seq 64, micro batch 4;
 * --model bert: BERT-base (12 layers, h=768, 12 heads, FFN 3072) at seq 128, micro batch 4, which reads a BERT
 * dataset (--data-path, --vocab-file after "--"; bench/cpu_step.sh --model bert prepares one); --model t5: T5-base's
 * shape as Megatron's examples/pretrain_t5.sh has it (12 + 12 layers, h=768, 12 heads, FFN 3072, 100 sentinels) at
 * encoder/decoder lengths 128/32 (its 512/128 scaled by 1/4), micro batch 4, on the same data. T5's achieved
 * GFLOP/s count the step's GEMM FLOPs (Megatron-DeepSpeed's log-line formula is GPT's and ignores the decoder). */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/blas.h"
#include "runtime/comm/comm.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "data/bert_provider.h"
#include "data/gpt_provider.h"
#include "data/t5_provider.h"
#include "models/bert/bert.h"
#include "models/gpt/gpt.h"
#include "models/t5/t5.h"
#include "train/args.h"
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

/* ---- the GEMM-only bound ------------------------------------------------------------------------------------- */

/* One operand of a GEMM: `floats` of its own storage; for the per-head calls, pair (b, h)'s matrix starts at
 * b * bs + h * hs within it (the attention op's strided views of the fused QKV, the context and the probabilities). */
typedef struct {
  size_t floats, bs, hs;
  float *p;
} gemm_operand;

/* One cblas_sgemm of the step (row-major). per_head: issued once per (sample, head) pair inside an OpenMP loop, as
 * the attention op does (single-threaded BLAS per task); otherwise one multi-threaded call, as the linear layers. */
typedef struct {
  int ta, tb, M, N, K, lda, ldb, ldc, per_head;
  float beta;
  gemm_operand A, B, C;
} gemm_call;

typedef struct {
  gemm_call *v;
  int n, cap, B, NH; /* B x NH pairs for the per-head calls */
  float *arena;
  size_t floats;
  double flop;
} gemm_list;

static gemm_operand whole(size_t floats) { return (gemm_operand){.floats = floats}; }

static void gemm_add(gemm_list *g, int ta, int tb, int M, int N, int K, int lda, int ldb, int ldc, float beta,
                     int per_head, gemm_operand A, gemm_operand B, gemm_operand C) {
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 256;
    g->v = realloc(g->v, (size_t)g->cap * sizeof *g->v);
    zt_check(g->v != NULL, "out of memory", "bench gemm list");
  }
  g->v[g->n++] = (gemm_call){.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc,
                             .per_head = per_head, .beta = beta, .A = A, .B = B, .C = C};
  g->flop += 2.0 * M * N * K * (per_head ? g->B * g->NH : 1);
}

/* Linear layer y[N, OC] = x[N, IC] W^T (runtime/ops/cpu/matmul.c): forward (beta 1 after the bias copy) and, for
 * backward, dx = dy W and dW += dy^T x. */
static void linear_fwd(gemm_list *g, int N, int IC, int OC) {
  gemm_add(g, 0, 1, N, OC, IC, IC, IC, OC, 1.0f, 0, whole((size_t)N * IC), whole((size_t)OC * IC),
           whole((size_t)N * OC));
}
static void linear_bwd(gemm_list *g, int N, int IC, int OC) {
  gemm_add(g, 0, 0, N, IC, OC, OC, IC, IC, 0.0f, 0, whole((size_t)N * OC), whole((size_t)OC * IC),
           whole((size_t)N * IC));
  gemm_add(g, 1, 0, OC, IC, N, OC, IC, IC, 1.0f, 0, whole((size_t)N * OC), whole((size_t)N * IC),
           whole((size_t)OC * IC));
}

/* Self-attention on the fused QKV [N, 3C] in Megatron's per-head layout (runtime/ops/cpu/attention.c), per
 * (sample, head): S = Q K^T and O = P V forward (with attention dropout the op computes P V row by row with sgemv:
 * the same product, timed here as the GEMM it is); dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q backward. */
static gemm_operand qkv_view(int T, int C, int HD) {
  return (gemm_operand){.floats = 0, .bs = (size_t)T * 3 * C, .hs = (size_t)3 * HD};
}
static void attn_calls(gemm_list *g, int T, int HD, int C, int backward) {
  const size_t N = (size_t)g->B * T;
  gemm_operand qkv = qkv_view(T, C, HD), ctx = {.bs = (size_t)T * C, .hs = (size_t)HD},
               prob = {.floats = (size_t)g->B * g->NH * T * T, .bs = (size_t)g->NH * T * T, .hs = (size_t)T * T};
  qkv.floats = N * 3 * C, ctx.floats = N * C;
  gemm_operand q2 = qkv, k2 = qkv; /* two distinct buffers where the op reads one and writes another */
  if (!backward) {
    gemm_add(g, 0, 1, T, T, HD, 3 * C, 3 * C, T, 0.0f, 1, qkv, qkv, prob);
    gemm_add(g, 0, 0, T, HD, T, T, 3 * C, C, 0.0f, 1, prob, qkv, ctx);
  } else {
    gemm_add(g, 1, 0, T, HD, T, T, C, 3 * C, 0.0f, 1, prob, ctx, qkv);
    gemm_add(g, 0, 1, T, T, HD, C, 3 * C, T, 0.0f, 1, ctx, qkv, prob);
    gemm_add(g, 0, 0, T, HD, T, T, 3 * C, 3 * C, 0.0f, 1, prob, k2, q2);
    gemm_add(g, 1, 0, T, HD, T, T, 3 * C, 3 * C, 0.0f, 1, prob, q2, k2);
  }
}

/* Cross-attention (a T5 decoder layer), per (sample, head): the query [Nd, C] (head h at h HD) against the key_value
 * [Ne, 2C] (head h's keys at 2 h HD, values after them); the same products as attn_calls with Tq = Td, Tk = Te. */
static void cross_calls(gemm_list *g, int Td, int Te, int HD, int C, int backward) {
  gemm_operand q = {.floats = (size_t)g->B * Td * C, .bs = (size_t)Td * C, .hs = (size_t)HD},
               kv = {.floats = (size_t)g->B * Te * 2 * C, .bs = (size_t)Te * 2 * C, .hs = (size_t)2 * HD},
               ctx = {.floats = (size_t)g->B * Td * C, .bs = (size_t)Td * C, .hs = (size_t)HD},
               prob = {.floats = (size_t)g->B * g->NH * Td * Te, .bs = (size_t)g->NH * Td * Te, .hs = (size_t)Td * Te};
  gemm_operand kv2 = kv;
  if (!backward) {
    gemm_add(g, 0, 1, Td, Te, HD, C, 2 * C, Te, 0.0f, 1, q, kv, prob);
    gemm_add(g, 0, 0, Td, HD, Te, Te, 2 * C, C, 0.0f, 1, prob, kv, ctx);
  } else {
    gemm_add(g, 1, 0, Te, HD, Td, Te, C, 2 * C, 0.0f, 1, prob, ctx, kv2); /* dV = P^T dO */
    gemm_add(g, 0, 1, Td, Te, HD, C, 2 * C, Te, 0.0f, 1, ctx, kv, prob);  /* dP = dO V^T */
    gemm_add(g, 0, 0, Td, HD, Te, Te, 2 * C, C, 0.0f, 1, prob, kv, q);    /* dQ = dS K */
    gemm_add(g, 1, 0, Te, HD, Td, Te, C, 2 * C, 0.0f, 1, prob, q, kv2);   /* dK = dS^T Q */
  }
}

/* One layer's forward products (self-attention over T tokens; a decoder layer's cross-attention over Te). */
static void layer_fwd(gemm_list *g, int B, int T, int C, int HD, int F, int cross_Te) {
  const int N = B * T;
  linear_fwd(g, N, C, 3 * C);
  attn_calls(g, T, HD, C, 0);
  linear_fwd(g, N, C, C);
  if (cross_Te > 0) {
    linear_fwd(g, N, C, C);                /* inter_attention.query */
    linear_fwd(g, B * cross_Te, C, 2 * C); /* inter_attention.key_value on the encoder output */
    cross_calls(g, T, cross_Te, HD, C, 0);
    linear_fwd(g, N, C, C);                /* inter_attention.dense */
  }
  linear_fwd(g, N, C, F);
  linear_fwd(g, N, F, C);
}
static void layer_bwd(gemm_list *g, int B, int T, int C, int HD, int F, int cross_Te) {
  const int N = B * T;
  linear_bwd(g, N, F, C);
  linear_bwd(g, N, C, F);
  if (cross_Te > 0) {
    linear_bwd(g, N, C, C);
    cross_calls(g, T, cross_Te, HD, C, 1);
    linear_bwd(g, N, C, C);
    linear_bwd(g, B * cross_Te, C, 2 * C);
  }
  linear_bwd(g, N, C, C);
  attn_calls(g, T, HD, C, 1);
  linear_bwd(g, N, C, 3 * C);
}

/* The matrix products of one training step of the model (one process, no tensor or pipeline parallelism), in the
 * order the step issues them. t5: the encoder's layers over seq_length tokens, then the decoder's over
 * decoder_seq_length with cross-attention, and the output layer on the decoder's tokens. */
static void step_gemms(gemm_list *g, const zt_args *a, int bert, int t5) {
  const int L = a->num_layers, C = a->hidden_size, NH = a->num_attention_heads, HD = C / NH;
  const int F = a->ffn_hidden_size, V = a->padded_vocab_size, B = a->micro_batch_size, T = a->seq_length;
  const int Ld = t5 ? a->decoder_num_layers : 0, Td = t5 ? a->decoder_seq_length : 0;
  const int N = B * (t5 ? Td : T), pooler = bert && a->bert_binary_head; /* N: the head's tokens */
  const int fwd_passes = a->recompute_granularity == ZT_RECOMPUTE_FULL ? 2 : 1; /* recompute: forward again */
  g->B = B, g->NH = NH;
  for (int pass = 0; pass < fwd_passes; pass++) {
    for (int l = 0; l < L; l++) layer_fwd(g, B, T, C, HD, F, 0);
    for (int l = 0; l < Ld; l++) layer_fwd(g, B, Td, C, HD, F, T);
  }
  if (pooler) {
    linear_fwd(g, B, C, C); /* pooler dense */
    linear_fwd(g, B, C, 2); /* binary head */
  }
  if (bert) linear_fwd(g, N, C, C); /* BertLMHead dense */
  linear_fwd(g, N, C, V);           /* tied output layer */
  linear_bwd(g, N, C, V);
  if (bert) linear_bwd(g, N, C, C);
  if (pooler) {
    linear_bwd(g, B, C, 2);
    linear_bwd(g, B, C, C);
  }
  for (int l = Ld - 1; l >= 0; l--) layer_bwd(g, B, Td, C, HD, F, T);
  for (int l = L - 1; l >= 0; l--) layer_bwd(g, B, T, C, HD, F, 0);
}

/* Gives every call operands of their own (a step's layers touch distinct weights and activations, so no call finds
 * another's in cache), filled with small values. */
static void gemm_list_alloc(gemm_list *g) {
  size_t total = 0;
  for (int i = 0; i < g->n; i++) total += g->v[i].A.floats + g->v[i].B.floats + g->v[i].C.floats;
  g->floats = total;
  g->arena = zt_aligned_alloc(total * sizeof(float), "bench gemm operands");
  #pragma omp parallel for schedule(static)
  for (size_t i = 0; i < total; i++) g->arena[i] = (float)(i % 13) * 0.01f - 0.06f;
  float *p = g->arena;
  for (int i = 0; i < g->n; i++) {
    gemm_call *c = &g->v[i];
    c->A.p = p, p += c->A.floats;
    c->B.p = p, p += c->B.floats;
    c->C.p = p, p += c->C.floats;
  }
}

static void gemm_run(const gemm_call *c, int B, int NH) {
  const CBLAS_TRANSPOSE ta = c->ta ? CblasTrans : CblasNoTrans, tb = c->tb ? CblasTrans : CblasNoTrans;
  if (!c->per_head) {
    cblas_sgemm(CblasRowMajor, ta, tb, c->M, c->N, c->K, 1.0f, c->A.p, c->lda, c->B.p, c->ldb, c->beta, c->C.p,
                c->ldc);
    return;
  }
  #pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      cblas_sgemm(CblasRowMajor, ta, tb, c->M, c->N, c->K, 1.0f, c->A.p + b * c->A.bs + h * c->A.hs, c->lda,
                  c->B.p + b * c->B.bs + h * c->B.hs, c->ldb, c->beta, c->C.p + b * c->C.bs + h * c->C.hs, c->ldc);
}

/* Best of `reps` passes over every GEMM of the step (after one untimed pass), in seconds (reps 0: the untimed pass). */
static double gemm_only_seconds(const gemm_list *g, int reps) {
  double best = 1e30;
  for (int r = 0; r <= reps; r++) {
    double t0 = zt_now();
    for (int i = 0; i < g->n; i++) gemm_run(&g->v[i], g->B, g->NH);
    double t = zt_now() - t0;
    if (r > 0 && t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  zt_blas_setup(argc, argv);
  zt_comm_init(&argc, &argv);
  int steps = 5, bert = 0, t5 = 0;
  /* bench flags before "--": --steps N, --model gpt|bert|t5; everything after "--" goes to the model's flag parser */
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      const char *m = argv[++i];
      zt_check(strcmp(m, "gpt") == 0 || strcmp(m, "bert") == 0 || strcmp(m, "t5") == 0, "bench_cpu_step",
               "--model %s: gpt, bert or t5", m);
      bert = strcmp(m, "bert") == 0, t5 = strcmp(m, "t5") == 0;
    } else
      zt_fatal("bench_cpu_step", "unknown option %s (usage: bench_cpu_step [--steps N] [--model gpt|bert|t5] "
               "[-- pretrain_gpt/pretrain_bert/pretrain_t5 flags])", argv[i]);
  }
  zt_check(steps >= 1 && steps <= 1000, "bench_cpu_step", "--steps %d outside [1, 1000]", steps);
  const char *gpt_defaults[] = {"bench_cpu_step", "--num-layers", "12", "--hidden-size", "768", "--num-attention-heads", "12",
                                "--seq-length", "64", "--max-position-embeddings", "1024", "--micro-batch-size", "4",
                                "--global-batch-size", "4", "--vocab-size", "50257", "--lr", "6e-4",
                                "--train-iters", "1000", "--mock-data", "--eval-iters", "0"};
  /* BERT-base; the data (--data-path, --vocab-file: bert-base-uncased's 30522 tokens) come after "--" */
  const char *bert_defaults[] = {"bench_cpu_step", "--num-layers", "12", "--hidden-size", "768", "--num-attention-heads", "12",
                                 "--seq-length", "128", "--max-position-embeddings", "512", "--micro-batch-size", "4",
                                 "--global-batch-size", "4", "--lr", "1e-4", "--train-iters", "1000", "--eval-iters", "0"};
  /* T5-base (Megatron's examples/pretrain_t5.sh shape) at 1/4 of its 512/128 lengths; the data as BERT's */
  const char *t5_defaults[] = {"bench_cpu_step", "--num-layers", "12", "--hidden-size", "768", "--num-attention-heads", "12",
                               "--seq-length", "128", "--decoder-seq-length", "32", "--max-position-embeddings", "512",
                               "--vocab-extra-ids", "100", "--micro-batch-size", "4", "--global-batch-size", "4",
                               "--lr", "1e-4", "--train-iters", "1000", "--eval-iters", "0"};
  const char **defaults = t5 ? t5_defaults : bert ? bert_defaults : gpt_defaults;
  int nd = t5     ? (int)(sizeof t5_defaults / sizeof *t5_defaults)
           : bert ? (int)(sizeof bert_defaults / sizeof *bert_defaults)
                  : (int)(sizeof gpt_defaults / sizeof *gpt_defaults);
  int extra = i < argc ? argc - i - 1 : 0;
  char **av = calloc((size_t)(nd + extra + 1), sizeof(char *));
  for (int k = 0; k < nd; k++) av[k] = (char *)defaults[k];
  for (int k = 0; k < extra; k++) av[nd + k] = argv[i + 1 + k]; /* later flags override defaults */
  zt_args args;
  if (bert) zt_args_model = "bert";
  if (t5) zt_args_model = "t5";
  zt_args_parse(&args, nd + extra, av, 1);
  zt_tokenizer *tok = zt_engine_tokenizer(&args); /* NULL with --mock-data */

  double bound = sgemm_gflops(2048, 2048, 2048);
  double model_shape = sgemm_gflops(args.micro_batch_size * args.seq_length, 4 * args.hidden_size, args.hidden_size);
  gemm_list gl = {0};
  step_gemms(&gl, &args, bert, t5);
  gemm_list_alloc(&gl);

  zt_engine e;
  const zt_model_kind gpt = {.name = "GPT", .build_model = zt_gpt_create, .build_data = zt_gpt_provider_create,
                             .count_params = zt_gpt_count};
  const zt_model_kind bert_kind = {.name = "BERT", .build_model = zt_bert_create,
                                   .build_data = zt_bert_provider_create, .count_params = zt_bert_count};
  const zt_model_kind t5_kind = {.name = "T5", .build_model = zt_t5_create, .build_data = zt_t5_provider_create,
                                 .count_params = zt_t5_count, .encoder_decoder = 1};
  zt_engine_init(&e, &args, tok, NULL, t5 ? &t5_kind : bert ? &bert_kind : &gpt); /* no DeepSpeed config */
  double norm, times[1000], gemms[1000], ratios[1000];
  for (int w = 0; w < 2; w++) zt_engine_train_step(&e, &norm); /* warm-up: page faults, BLAS buffers */
  gemm_only_seconds(&gl, 0);                                     /* the GEMM operands' first touch */
  /* each timed step is followed by one pass over the step's GEMMs alone: a neighbour's load on a shared machine
   * then falls on both figures of a pair, and the ratio is taken pair by pair */
  for (int s = 0; s < steps; s++) {
    double t0 = zt_now();
    zt_engine_train_step(&e, &norm);
    times[s] = zt_now() - t0;
    t0 = zt_now();
    for (int c = 0; c < gl.n; c++) gemm_run(&gl.v[c], gl.B, gl.NH);
    gemms[s] = zt_now() - t0;
    ratios[s] = gemms[s] / times[s];
  }
  /* the sgemm bound is measured again after the steps and the higher figure kept: on a shared or frequency-scaling
   * machine this makes the ratio conservative rather than flattering */
  double bound_after = sgemm_gflops(2048, 2048, 2048);
  if (bound_after > bound) bound = bound_after;
  qsort(times, (size_t)steps, sizeof(double), cmp_double);
  qsort(gemms, (size_t)steps, sizeof(double), cmp_double);
  qsort(ratios, (size_t)steps, sizeof(double), cmp_double);
  /* T5: the step's GEMM FLOPs (Megatron's log-line formula is GPT's: encoder layers at --seq-length only) */
  double med = times[steps / 2], gflop = (t5 ? gl.flop : e.flops_per_iteration) / 1e9, gmed = gemms[steps / 2];
  printf("machine: %d OpenMP threads, OpenBLAS %s kernels; sgemm 2048^3 (best before/after the steps): %.1f GFLOP/s; sgemm %dx%dx%d (MLP shape): %.1f GFLOP/s\n",
         omp_get_max_threads(), zt_blas_core(), bound, args.micro_batch_size * args.seq_length, 4 * args.hidden_size, args.hidden_size,
         model_shape);
  char dec[64] = "";
  if (t5) snprintf(dec, sizeof dec, " decoder L=%d seq=%d", args.decoder_num_layers, args.decoder_seq_length);
  printf("model: %s L=%d h=%d heads=%d ffn=%d V=%d seq=%d%s mbs=%d gbs=%d recompute=%s: %.1f GFLOP per step (%s)\n",
         t5 ? "T5" : bert ? "BERT" : "GPT", args.num_layers, args.hidden_size, args.num_attention_heads,
         args.ffn_hidden_size, args.padded_vocab_size, args.seq_length, dec, args.micro_batch_size,
         args.global_batch_size, args.recompute_granularity == ZT_RECOMPUTE_FULL ? "full" : "none", gflop,
         t5 ? "the step's GEMMs" : "Megatron's formula");
  printf("step: min %.1f ms, median %.1f ms over %d steps; achieved %.1f GFLOP/s = %.1f%% of the sgemm bound\n",
         times[0] * 1e3, med * 1e3, steps, gflop / med, 100.0 * gflop / med / bound);
  printf("gemm-only: the step's %d GEMM calls (%.1f GFLOP) alone, one pass after each step: min %.1f ms, median %.1f ms "
         "(%.1f GFLOP/s); gemm-only / step, pair by pair: median %.3f (min %.3f, max %.3f)\n",
         gl.n, gl.flop / 1e9, gemms[0] * 1e3, gmed * 1e3, gl.flop / 1e9 / gmed, ratios[steps / 2], ratios[0],
         ratios[steps - 1]);
  zt_engine_free(&e);
  if (tok) zt_tokenizer_free(tok);
  free(gl.arena);
  free(gl.v);
  free(av);
  zt_comm_finalize();
  return 0;
}
