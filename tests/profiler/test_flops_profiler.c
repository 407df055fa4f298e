/* Flops profiler checks on a tiny GPT (2 layers, h=16, 2 heads, ffn 64, T=8, B=2, V=32): parameters,
 * MACs and flops per module against hand-computed values, totals against the parameter table and
 * Megatron's TFLOPs formula, the Llama-style and activation variants, DeepSpeed's number formatting, latencies
 * recorded only while attached, and bit-identical loss and gradients with the profiler attached. With an argument
 * PATH it also writes the report (profile step 3, world 1, top_modules 2, detailed) to PATH and PATH.depth2
 * (module_depth 2, not detailed) for check_report.py. */
#include <math.h>
#include <string.h>

#include "../unit/testutil.h"
#include "models/gpt/gpt.h"
#include "runtime/profile/flops_profiler.h"
#include "runtime/profile/throughput.h"
#include "train/ds_config.h"

enum { L = 2, C = 16, NH = 2, FFN = 64, T = 8, B = 2, V = 32, P = 8 };

static void build(zt_gpt *m, int recompute) {
  zt_gpt_config c = {.num_layers = L, .hidden_size = C, .num_heads = NH, .ffn_hidden_size = FFN,
                     .max_positions = P, .padded_vocab_size = V, .ln_eps = 1e-5f, .attn_dropout = 0.1f,
                     .hidden_dropout = 0.1f, .init_std = 0.02f, .recompute_full = recompute,
                     .micro_batch = B, .seq_length = T};
  zt_gpt_build(m, &c, 0);
  zt_gpt_init_params(m, 7);
}

static float fwd(zt_gpt *m) {
  int32_t tokens[B * T], targets[B * T];
  for (int i = 0; i < B * T; i++) { tokens[i] = (i * 5 + 1) % V; targets[i] = (i * 3 + 2) % V; }
  zt_pass pass = {.B = B, .T = T, .first_sample = 3, .seed = 11, .training = 1};
  return zt_gpt_forward(m, tokens, NULL, targets, NULL, &pass);
}

static void expect(const zt_flops_profiler *p, const char *path, double params, double macs, double flops) {
  int k = zt_flops_profiler_find(p, path);
  char name[200];
  snprintf(name, sizeof name, "module '%s'", path);
  if (!tu_check(k >= 0, name, "not in the tree")) return;
  const zt_fp_module *m = &p->mods[k];
  tu_check((double)m->params == params && m->macs == macs && m->flops == flops, name,
           "params %lld MACs %.0f flops %.0f, expected %.0f %.0f %.0f", (long long)m->params, m->macs, m->flops,
           params, macs, flops);
}

static zt_flops_profiler_config config(int depth, int top, bool detailed, const char *file) {
  return (zt_flops_profiler_config){.recompute_fwd_factor = 0.0, .module_depth = depth, .top_modules = top,
                                    .detailed = detailed, .output_file = file};
}

static void test_counts(void) {
  zt_gpt m;
  build(&m, 0);
  zt_flops_profiler_config cfg = config(-1, 1, true, NULL);
  zt_flops_profiler *p = zt_gpt_flops_profiler(&m, &cfg);
  /* N = B*T = 16 tokens.
   * params: word 32*16 = 512, position 8*16 = 128 -> embedding 640; per layer: layernorms 2*16 = 32 each,
   *   qkv 48*16+48 = 816, dense 16*16+16 = 272 -> attention 1088; h_to_4h 64*16+64 = 1088,
   *   4h_to_h 16*64+16 = 1040 -> mlp 2128; layer 32+1088+32+2128 = 3280; encoder 2*3280+32 = 6592;
   *   model 640+6592 = 7232 (the tied output layer adds none).
   * MACs: qkv 16*16*48 = 12288, core attention QK^T + PV = 2 * (B*NH*T*T*HD = 2*2*8*8*8 = 2048) = 4096,
   *   dense 16*16*16 = 4096 -> attention 20480; h_to_4h = 4h_to_h = 16*16*64 = 16384 -> mlp 32768;
   *   layer 53248; logits 16*16*32 = 8192 at GPTModel level; model 2*53248+8192 = 114688.
   * flops: 2*MACs plus layernorm 5*16*16 = 1280, baddbmm output + softmax 2*(2*2*8*8 = 256) = 512 in core
   *   attention (8192+512 = 8704), the GELU 0 (DeepSpeed does not see the fused bias-GELU) in the mlp (65536);
   *   attention 24576+8704+8192 = 41472; layer 1280+41472+1280+65536 = 109568;
   *   model 2*109568 + 1280 + 16384 = 236800. */
  expect(p, "", 7232, 114688, 236800);
  expect(p, "language_model", 7232, 106496, 220416);
  expect(p, "language_model.embedding", 640, 0, 0);
  expect(p, "language_model.embedding.word_embeddings", 512, 0, 0);
  expect(p, "language_model.embedding.position_embeddings", 128, 0, 0);
  expect(p, "language_model.encoder", 6592, 106496, 220416);
  expect(p, "language_model.encoder.layers", 6560, 106496, 219136);
  expect(p, "language_model.encoder.layers.1", 3280, 53248, 109568);
  expect(p, "language_model.encoder.layers.0.input_layernorm", 32, 0, 1280);
  expect(p, "language_model.encoder.layers.0.self_attention", 1088, 20480, 41472);
  expect(p, "language_model.encoder.layers.0.self_attention.query_key_value", 816, 12288, 24576);
  expect(p, "language_model.encoder.layers.0.self_attention.core_attention", 0, 4096, 8704);
  expect(p, "language_model.encoder.layers.0.self_attention.dense", 272, 4096, 8192);
  expect(p, "language_model.encoder.layers.1.post_attention_layernorm", 32, 0, 1280);
  expect(p, "language_model.encoder.layers.1.mlp", 2128, 32768, 65536);
  expect(p, "language_model.encoder.layers.1.mlp.dense_h_to_4h", 1088, 16384, 32768);
  expect(p, "language_model.encoder.layers.1.mlp.dense_4h_to_h", 1040, 16384, 32768);
  expect(p, "language_model.encoder.final_layernorm", 32, 0, 1280);
  tu_check(zt_flops_profiler_find(p, "language_model.output_layer") < 0, "tied: no output_layer module", " ");
  tu_check(p->mods[0].params == (int64_t)zt_gpt_num_params(&m), "params = parameter table", "%lld vs %zu",
           (long long)p->mods[0].params, zt_gpt_num_params(&m));
  /* Megatron's formula: 2 * 3 * fwd matmul MACs per sample batch (4x with full recompute) */
  zt_flops_model fm = {.num_layers = L, .hidden_size = C, .num_heads = NH, .ffn_hidden_size = FFN,
                       .padded_vocab_size = V, .seq_length = T};
  double meg = zt_iteration_flops(&fm, B);
  tu_check(meg == 3 * 2 * p->mods[0].macs && meg == 688128, "Megatron flops = 3 x 2 x fwd MACs", "%.0f vs 6 x %.0f",
           meg, p->mods[0].macs);
  fm.recompute_full = 1;
  meg = zt_iteration_flops(&fm, B);
  tu_check(meg == 4 * 2 * p->mods[0].macs, "Megatron flops (recompute) = 4 x 2 x fwd MACs", "%.0f", meg);
  tu_check(p->mods[0].flops - 2 * p->mods[0].macs == 7424, "elementwise flops", "%.0f",
           p->mods[0].flops - 2 * p->mods[0].macs);
  zt_flops_profiler_free(p);

  /* untied: output_layer holds V*C = 512 more parameters, no MACs of its own */
  zt_gpt u;
  zt_gpt_config c = m.cfg;
  c.untie_embeddings = 1;
  zt_gpt_build(&u, &c, 0);
  p = zt_gpt_flops_profiler(&u, &cfg);
  expect(p, "", 7744, 114688, 236800);
  expect(p, "language_model.output_layer", 512, 0, 0);
  zt_flops_profiler_free(p);
  zt_gpt_free(&u);
  zt_gpt_free(&m);
}

/* The variants, as DeepSpeed counts Megatron-DeepSpeed's modules (N = 16 tokens, C = 16, HD = 8, FFN = 64):
 * RMSNorm (x * torch.rsqrt(...) * weight: unpatched operators) 0 flops; SwiGLU's dense_h_to_4h has 2 FFN columns
 * (16*16*128 = 32768 MACs) and its F.silu 16*64 = 1024 flops; one key/value head of two: query_key_value has
 * 16 + 2*8 = 32 columns (8192 MACs) while the core attention repeats them to 2 heads (4096 MACs, 8704 flops); rotary
 * embeddings: a RotaryEmbedding module of 0 flops and no position_embeddings; no biases. The squared ReLU's F.relu
 * counts 1024 flops; the erf GELU (the F.gelu ParallelMLP stored before the profiler patched it) and --openai-gelu's
 * TorchScript count 0. */
static void test_variants(void) {
  zt_gpt m;
  zt_gpt_config c = {.num_layers = L, .hidden_size = C, .num_heads = NH, .ffn_hidden_size = FFN, .max_positions = P,
                     .padded_vocab_size = V, .ln_eps = 1e-5f, .init_std = 0.02f, .micro_batch = B, .seq_length = T,
                     .rmsnorm = 1, .swiglu = 1, .no_bias_linear = 1, .rotary_dims = 8, .rope_theta = 10000.0f,
                     .no_position_embedding = 1, .kv_heads = 1};
  zt_gpt_build(&m, &c, 0);
  zt_flops_profiler_config cfg = config(-1, 1, true, NULL);
  zt_flops_profiler *p = zt_gpt_flops_profiler(&m, &cfg);
  /* params: qkv 32*16 = 512, dense 256 -> attention 768; mlp 128*16 + 16*64 = 3072; norms 16 each -> layer 3872 */
  expect(p, "language_model.encoder.layers.0.input_layernorm", 16, 0, 0);
  expect(p, "language_model.encoder.layers.0.self_attention.query_key_value", 512, 8192, 16384);
  expect(p, "language_model.encoder.layers.0.self_attention.core_attention", 0, 4096, 8704);
  expect(p, "language_model.encoder.layers.0.self_attention", 768, 16384, 33280);
  expect(p, "language_model.encoder.layers.0.mlp.dense_h_to_4h", 2048, 32768, 65536);
  expect(p, "language_model.encoder.layers.0.mlp", 3072, 49152, 99328);
  expect(p, "language_model.encoder.layers.1", 3872, 65536, 132608);
  expect(p, "language_model.encoder.final_layernorm", 16, 0, 0);
  expect(p, "language_model.rotary_pos_emb", 0, 0, 0);
  expect(p, "language_model.embedding", 512, 0, 0);
  tu_check(zt_flops_profiler_find(p, "language_model.embedding.position_embeddings") < 0,
           "rotary: no position_embeddings module", " ");
  tu_check(strcmp(p->mods[zt_flops_profiler_find(p, "language_model.encoder.final_layernorm")].cls, "RMSNorm") == 0,
           "RMSNorm modules", " ");
  tu_check(p->mods[0].params == (int64_t)zt_gpt_num_params(&m), "variants: params = parameter table", "%lld vs %zu",
           (long long)p->mods[0].params, zt_gpt_num_params(&m));
  zt_flops_profiler_free(p);
  zt_gpt_free(&m);
  const int acts[3] = {ZT_ACT_SQUARED_RELU, ZT_ACT_GELU_ERF, ZT_ACT_GELU_TANH};
  const double act_flops[3] = {1024, 0, 0};
  const char *names[3] = {"squared ReLU: F.relu 1024 flops", "erf GELU: 0", "--openai-gelu: 0"};
  for (int k = 0; k < 3; k++) {
    zt_gpt_config a = {.num_layers = L, .hidden_size = C, .num_heads = NH, .ffn_hidden_size = FFN,
                       .max_positions = P, .padded_vocab_size = V, .ln_eps = 1e-5f, .init_std = 0.02f,
                       .micro_batch = B, .seq_length = T, .mlp_act = acts[k], .head_gelu_tanh = k == 2};
    zt_gpt_build(&m, &a, 0);
    p = zt_gpt_flops_profiler(&m, &cfg);
    const zt_fp_module *mlp = &p->mods[zt_flops_profiler_find(p, "language_model.encoder.layers.0.mlp")];
    tu_check(mlp->flops == 65536 + act_flops[k] && mlp->macs == 32768, names[k], "mlp flops %.0f", mlp->flops);
    zt_flops_profiler_free(p);
    zt_gpt_free(&m);
  }
}

static void test_format(void) {
  char b[64];
  struct { double v; const char *suffix, *want; } cases[] = {
    {336230000, "", "336.23 M"}, {0, "MACs", "0 MACs"}, {0.0123456, "s", "12.35 ms"}, {2.5e-5, "s", "25 us"},
    {44.7e9, "MACs", "44.7 GMACs"}, {1234, "FLOPS", "1.23 KFLOPS"}, {3.5e12, "", "3.5 T"}, {999, "", "999 "},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    zt_fp_number(b, sizeof b, cases[i].v, cases[i].suffix);
    tu_check(strcmp(b, cases[i].want) == 0, "number_to_string", "%g -> \"%s\", expected \"%s\"", cases[i].v, b,
             cases[i].want);
  }
}

static void test_bit_identical(const char *report_path) {
  for (int rc = 0; rc < 2; rc++) {
    zt_gpt a, b;
    build(&a, rc);
    build(&b, rc);
    zt_flops_profiler_config cfg = config(-1, 2, true, report_path);
    zt_flops_profiler *p = zt_gpt_flops_profiler(&b, &cfg);
    float la = fwd(&a);
    zt_gpt_backward(&a, 1.0f);
    zt_model_profile_attach(&b.model, p);
    float lb = fwd(&b);
    zt_model_profile_detach(&b.model);
    zt_gpt_backward(&b, 1.0f);
    size_t diff = 0;
    for (size_t i = 0; i < a.table.numel; i++) diff += memcmp(&a.grads[i], &b.grads[i], 4) != 0;
    tu_check(memcmp(&la, &lb, 4) == 0 && diff == 0, rc ? "attached (recompute): bit-identical loss and grads"
                                                       : "attached: bit-identical loss and grads",
             "loss %.9g vs %.9g, %zu of %zu grads differ", la, lb, diff, a.table.numel);
    /* latencies: every timed module recorded time; DeepSpeed's ModuleList duration = its children's */
    int missing = 0;
    for (int k = 0; k < p->count; k++)
      if (p->mods[k].slot >= 0 && !(p->times[p->mods[k].slot] > 0)) missing++;
    int lst = zt_flops_profiler_find(p, "language_model.encoder.layers");
    double sum = p->times[p->mods[lst + 1].slot];
    for (int k = lst + 2; k < p->count; k++)
      if (p->mods[k].parent == lst) sum += p->times[p->mods[k].slot];
    tu_check(missing == 0 && zt_flops_profiler_duration(p, lst) == sum &&
             zt_flops_profiler_duration(p, 0) >= zt_flops_profiler_duration(p, lst),
             "latencies recorded", "%d modules without a latency", missing);
    /* detached: a further forward records nothing */
    double before = p->times[0];
    fwd(&b);
    tu_check(p->times[0] == before, "detached: nothing recorded", "%g vs %g", p->times[0], before);
    if (rc == 0 && report_path) {
      zt_flops_report_args r = {.profile_step = 3, .world_size = 1, .dp_size = 1, .mp_size = 1, .micro_batch = B,
                                .fwd_latency = 0.002, .bwd_latency = 0.004, .step_latency = 0.001};
      zt_flops_profiler_report(p, &r);
      char path2[600];
      snprintf(path2, sizeof path2, "%s.depth2", report_path);
      zt_flops_profiler_config c2 = config(2, 1, false, path2);
      zt_flops_profiler *p2 = zt_gpt_flops_profiler(&b, &c2);
      r.bwd_latency = 0;
      zt_flops_profiler_report(p2, &r);
      zt_flops_profiler_free(p2);
    }
    zt_flops_profiler_free(p);
    zt_gpt_free(&a);
    zt_gpt_free(&b);
  }
}

static void test_ds_config(void) {
  zt_ds_config d;
  zt_ds_config_load_string(&d, "{\"flops_profiler\": {\"enabled\": true, \"recompute_fwd_factor\": 1.0, "
                               "\"profile_step\": 4, \"module_depth\": 3, \"top_modules\": 2, "
                               "\"detailed\": false, \"output_file\": \"out/prof.txt\"}}", "inline");
  tu_check(d.flops_profiler_enabled && d.fp_recompute_fwd_factor == 1.0 && d.fp_profile_step == 4 &&
           d.fp_module_depth == 3 && d.fp_top_modules == 2 && !d.fp_detailed &&
           strcmp(d.fp_output_file, "out/prof.txt") == 0, "ds_config flops_profiler fields", " ");
  zt_ds_config_free(&d);
  zt_ds_config_load_string(&d, "{\"flops_profiler\": {}}", "inline");
  tu_check(!d.flops_profiler_enabled && d.fp_recompute_fwd_factor == 0.0 && d.fp_profile_step == 1 &&
           d.fp_module_depth == -1 && d.fp_top_modules == 1 && d.fp_detailed && d.fp_output_file[0] == '\0',
           "ds_config flops_profiler defaults", "step %d depth %d top %d", d.fp_profile_step, d.fp_module_depth,
           d.fp_top_modules);
  zt_ds_config_free(&d);
}

int main(int argc, char **argv) {
  test_ds_config();
  test_counts();
  test_variants();
  test_format();
  test_bit_identical(argc > 1 ? argv[1] : NULL);
  return tu_finish();
}
