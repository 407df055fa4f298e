/* GPT's flops-profiler module tree (runtime/profile/flops_profiler.h): Megatron-DeepSpeed's GPTModel with the MACs
 * and flops of DeepSpeed's counting rules per module, and the latency slots the forward records into while the
 * profiler is attached (ZT_GPT_FT_SLOTS for the model-level modules, then ZT_FT_SLOTS per layer). */
#include "models/gpt/gpt.h"

zt_flops_profiler *zt_gpt_flops_profiler(const zt_gpt *g, const zt_flops_profiler_config *cfg) {
  const zt_gpt_config *c = &g->cfg;
  const double N = (double)g->lm.B * g->lm.T, C = c->hidden_size, V = g->lm.V; /* this rank's vocabulary slice */
  zt_flops_profiler *p = zt_flops_profiler_create(cfg, ZT_GPT_FT_SLOTS + c->num_layers * ZT_FT_SLOTS);
  /* GPTModel's own: the logits matmul with the (tied) output weight; the vocab-parallel cross-entropy
   * uses operators DeepSpeed does not patch (0 flops) */
  int root = zt_fp_add(p, -1, "", "GPTModel", ZT_GPT_FT_MODEL, N * C * V, 2 * N * C * V);
  int lm = zt_lm_flops_tree(p, root, &g->lm, ZT_GPT_FT_SLOTS);
  /* untied: the output_layer module holds the weight; GPTModel still calls the matmul with it */
  if (c->untie_embeddings) zt_fp_add(p, lm, "output_layer", "ColumnParallelLinear", -1, 0, 0);
  zt_fp_finish(p, &g->table);
  return p;
}
