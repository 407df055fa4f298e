/* BERT's flops-profiler module tree (runtime/profile/flops_profiler.h): Megatron-DeepSpeed's BertModel with the MACs
 * and flops of DeepSpeed's counting rules per module (F.linear 2 flops per MAC; the head's GELU, the F.gelu BertLMHead
 * stored before the profiler patched it, torch.tanh and the vocab-parallel cross-entropy: 0), and the latency slots
 * its forward records into; fine-tuned (finetune_bert), Classification's or MultipleChoice's. */
#include "models/bert/bert.h"

zt_flops_profiler *zt_bert_flops_profiler(const zt_bert *m, const zt_flops_profiler_config *cfg) {
  const zt_bert_config *c = &m->cfg;
  /* this rank's vocabulary slice; BertLMHead's dense, GELU and layernorm over this rank's tokens (N/tp with
   * --sequence-parallel; parallel_lm_logits gathers them) */
  const double B = m->lm.B, N = B * m->lm.T, V = m->lm.V, Nh = zt_tp_sp(&m->lm.tp) ? N / m->lm.tp.size : N;
  const int C = c->hidden_size;
  zt_flops_profiler *p = zt_flops_profiler_create(cfg, ZT_BERT_FT_SLOTS + c->num_layers * ZT_FT_SLOTS);
  int root = zt_fp_add(p, -1, "", m->cls ? (c->cls_choices > 1 ? "MultipleChoice" : "Classification") : "BertModel",
                       ZT_LM_FT_MODEL, 0, 0);
  int lm = zt_lm_flops_tree(p, root, &m->lm, ZT_BERT_FT_SLOTS);
  if (m->cls) { /* Megatron's Classification / MultipleChoice: the pooler, dropout (no flops), the head */
    int pool = zt_fp_add(p, lm, "pooler", "Pooler", ZT_BERT_FT_POOLER, 0, 0);
    zt_fp_add_linear(p, pool, "dense", "Linear", -1, B, C, C);
    zt_fp_add_linear(p, root, zt_bert_cls_head_name(c), "Linear", ZT_BERT_FT_BINARY_HEAD, B, C, c->cls_classes);
    zt_fp_finish(p, &m->table);
    return p;
  }
  if (m->binary_head) { /* the pooler runs on the first token of each sample */
    int pool = zt_fp_add(p, lm, "pooler", "Pooler", ZT_BERT_FT_POOLER, 0, 0);
    zt_fp_add_linear(p, pool, "dense", "Linear", -1, B, C, C);
  }
  /* BertLMHead's own: parallel_lm_logits' F.linear with the tied word embeddings */
  int head = zt_fp_add(p, root, "lm_head", "BertLMHead", ZT_BERT_FT_LM_HEAD, N * C * V, 2 * N * C * V);
  zt_fp_add_linear(p, head, "dense", "Linear", -1, Nh, C, C);
  zt_fp_add_layernorm(p, head, "layernorm", -1, Nh, C, c->ln_eps);
  if (m->binary_head) zt_fp_add_linear(p, root, "binary_head", "Linear", ZT_BERT_FT_BINARY_HEAD, B, C, 2);
  zt_fp_finish(p, &m->table);
  return p;
}
