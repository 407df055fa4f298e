/* The CPU throughput of evaluate_zeroshot's forward against the training forward, same model, same run: one GPT of
 * the given shape built twice from the same initial weights, as pretrain_gpt builds it (gradients, optimizer state,
 * dropout on) and as evaluate_zeroshot does (forward only, dropout off); each runs warmup + N forwards of one
 * B x T micro batch of random tokens, alternating so a shared machine's load falls on both.
 * Usage: eval_speed [LAYERS HIDDEN HEADS SEQ MICRO_BATCH PADDED_VOCAB N]  (default: scripts/main_job.sh's GPT,
 * 4 256 4 128 8 50304 5) */
#include <stdio.h>
#include <stdlib.h>

#include "models/gpt/gpt.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"

int main(int argc, char **argv) {
  int v[7] = {4, 256, 4, 128, 8, 50304, 5};
  for (int i = 1; i < argc && i <= 7; i++) v[i - 1] = atoi(argv[i]);
  const int B = v[4], T = v[3], N = v[6];
  const zt_model_args a = {.num_layers = v[0], .hidden_size = v[1], .num_heads = v[2], .ffn_hidden_size = 4 * v[1],
                           .max_positions = T, .padded_vocab_size = v[5], .ln_eps = 1e-5f, .attn_dropout = 0.1f,
                           .hidden_dropout = 0.1f, .init_std = 0.02f};
  zt_model_setup s = {.dtype = ZT_DTYPE_FP32, .micro_batch = B, .seq_length = T, .zero_partitions = 1, .vpp = 1,
                      .pp_buffers = 1};
  zt_model *train = zt_gpt_create(&a, &s);
  s.forward_only = 1;
  zt_model *eval = zt_gpt_create(&a, &s);
  zt_model_init_range(train, 1234, 0, train->table->numel, ZT_DTYPE_FP32);
  zt_model_init_range(eval, 1234, 0, eval->table->numel, ZT_DTYPE_FP32);
  int32_t *tok = zt_malloc((size_t)B * T * 4, "tokens"), *lab = zt_malloc((size_t)B * T * 4, "labels");
  srand(7);
  for (int i = 0; i < B * T; i++) tok[i] = rand() % 50257, lab[i] = rand() % 50257;
  const zt_batch b = {.B = B, .T = T, .tokens = tok, .labels = lab};
  double tt = 0, te = 0;
  float lt = 0, le = 0;
  for (int it = 0; it <= N; it++) {
    zt_losses o;
    zt_pass p = {.B = B, .T = T, .seed = 1234, .training = 1, .first_sample = (uint64_t)it * B};
    double t0 = zt_now();
    zt_model_forward(train, 0, &b, &p, &o);
    double t1 = zt_now();
    lt = o.value[0];
    p.training = 0;
    zt_model_forward(eval, 0, &b, &p, &o);
    double t2 = zt_now();
    le = o.value[0];
    if (it) tt += t1 - t0, te += t2 - t1; /* iteration 0 warms up */
  }
  printf("GPT %d layers, hidden %d, %d heads, seq %d, micro batch %d, padded vocab %d; %d timed forwards each\n", v[0],
         v[1], v[2], T, B, v[5], N);
  printf("training forward (dropout on, model with gradients):  %.1f tokens/s (loss %.4f)\n", N * B * T / tt, lt);
  printf("evaluation forward (forward-only model, no dropout):  %.1f tokens/s (loss %.4f)\n", N * B * T / te, le);
  printf("evaluation / training forward throughput: %.3f\n", tt / te);
  zt_model_free(train);
  zt_model_free(eval);
  free(tok);
  free(lab);
  return 0;
}
