/* The flops profiler's module tree of DeepSpeed MoE layers (models/moe/moe.c moe_flops_tree) on a tiny GPT (2 layers,
 * h=16, 2 heads, ffn 64, T=8, B=2, V=32, 4 experts in layer 2): after a profiled forward, for top-1 (token dropping),
 * top-2 with Residual MoE and a pyramid, top-2 without token dropping and top-3, it checks here that the MoE
 * modules are in DeepSpeed's places, that every timed one recorded a latency and that the tree's parameters are the
 * parameter table's; and it writes each case's modules (path, class, params, MACs, flops) and the gate's capacity
 * and counts, one per line, to PATH for check_moe_flops.py, which recounts them independently with numpy's
 * einsum_path as DeepSpeed's profiler does. Usage: test_moe_flops PATH */
#include <stdio.h>
#include <string.h>

#include "../unit/testutil.h"
#include "models/gpt/gpt.h"
#include "models/moe/moe.h"
#include "runtime/profile/flops_profiler.h"

enum { L = 2, C = 16, NH = 2, FFN = 64, T = 8, B = 2, V = 32, P = 8 };

typedef struct {
  const char *name;
  int experts[L], topk, drop, residual;
  float cf;
} moe_case;

static void run_case(const moe_case *mc, FILE *out) {
  zt_moe_config moe = {.num_layers = L, .num_experts = mc->experts, .topk = mc->topk,
                       .train_capacity_factor = mc->cf, .eval_capacity_factor = mc->cf, .min_capacity = 4,
                       .drop_tokens = mc->drop, .top2_sampling = 1, .residual = mc->residual, .loss_coeff = 0.01f};
  zt_gpt_config c = {.num_layers = L, .hidden_size = C, .num_heads = NH, .ffn_hidden_size = FFN,
                     .max_positions = P, .padded_vocab_size = V, .ln_eps = 1e-5f, .attn_dropout = 0.1f,
                     .hidden_dropout = 0.1f, .init_std = 0.02f, .micro_batch = B, .seq_length = T, .moe = &moe};
  zt_gpt m;
  zt_gpt_build(&m, &c, 0);
  zt_gpt_init_params(&m, 7);
  zt_flops_profiler_config cfg = {.module_depth = -1, .top_modules = 1, .detailed = true};
  zt_flops_profiler *p = zt_gpt_flops_profiler(&m, &cfg);
  int32_t tokens[B * T], targets[B * T];
  for (int i = 0; i < B * T; i++) tokens[i] = (i * 5 + 1) % V, targets[i] = (i * 3 + 2) % V;
  zt_pass pass = {.B = B, .T = T, .first_sample = 3, .seed = 11, .training = 1};
  zt_model_profile_attach(&m.model, p);
  zt_gpt_forward(&m, tokens, NULL, targets, NULL, &pass);
  zt_model_profile_detach(&m.model);
  /* as the engine reports: the tree again after the forward, with its latencies */
  zt_flops_profiler *q = zt_gpt_flops_profiler(&m, &cfg);
  memcpy(q->times, p->times, (size_t)p->nslots * sizeof(double));
  char name[160];
  int missing = 0;
  for (int k = 0; k < q->count; k++)
    if (q->mods[k].slot >= 0 && !(q->times[q->mods[k].slot] > 0)) missing++;
  snprintf(name, sizeof name, "%s: every timed module recorded a latency", mc->name);
  tu_check(missing == 0, name, "%d without", missing);
  snprintf(name, sizeof name, "%s: the tree's parameters are the table's", mc->name);
  tu_check(q->mods[0].params == (int64_t)zt_gpt_num_params(&m), name, "%lld vs %zu", (long long)q->mods[0].params,
           zt_gpt_num_params(&m));
  const char *want[] = {"language_model.encoder.layers.1.mlp", "language_model.encoder.layers.1.mlp.deepspeed_moe",
                        "language_model.encoder.layers.1.mlp.deepspeed_moe.gate.wg",
                        "language_model.encoder.layers.1.mlp.deepspeed_moe.experts.deepspeed_experts.3.dense_4h_to_h"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    snprintf(name, sizeof name, "%s: module %s", mc->name, want[i]);
    tu_check(zt_flops_profiler_find(q, want[i]) >= 0, name, "not in the tree");
  }
  fprintf(out, "case %s topk %d drop %d residual %d cf %.9g experts", mc->name, mc->topk, mc->drop, mc->residual,
          (double)mc->cf);
  for (int l = 0; l < L; l++) fprintf(out, " %d", mc->experts[l]);
  fprintf(out, "\n");
  for (int l = 0; l < L; l++) {
    const zt_moe_gating *g = zt_moe_last_gating(&m.lm.stack.ffns[l]);
    if (!g) continue;
    fprintf(out, "gate %d S %d capacity %d routed", l, g->S, g->capacity);
    for (int e = 0; e < g->E; e++) fprintf(out, " %d", g->routed[e]);
    fprintf(out, "\n");
  }
  for (int k = 0; k < q->count; k++)
    fprintf(out, "module %s %s %lld %.0f %.0f\n", q->mods[k].path[0] ? q->mods[k].path : "-", q->mods[k].cls,
            (long long)q->mods[k].params, q->mods[k].macs, q->mods[k].flops);
  zt_flops_profiler_free(p);
  zt_flops_profiler_free(q);
  zt_gpt_free(&m);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_moe_flops PATH\n");
    return 2;
  }
  FILE *out = fopen(argv[1], "w");
  if (!out) {
    perror(argv[1]);
    return 2;
  }
  const moe_case cases[] = {
    {"top-1", {1, 4}, 1, 1, 0, 1.0f},
    {"top-2 residual pyramid", {2, 4}, 2, 1, 1, 1.0f},
    {"top-2 no dropping", {1, 4}, 2, 0, 0, 1.0f},
    {"top-3", {1, 4}, 3, 1, 0, 0.5f},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], out);
  fclose(out);
  return tu_finish();
}
