/* The language model's part of the flops profiler's module tree (runtime/profile/flops_profiler.h), shared by the
 * models built on it: Megatron-DeepSpeed's TransformerLanguageModel (embedding, encoder layers, final layernorm; an
 * encoder-decoder's decoder with its cross-attention) with the MACs and flops of DeepSpeed's counting rules per module
 * and the latency slots the forward records into. */
#include <stdio.h>

#include "models/transformer/language_model.h"
#include "runtime/base/error.h"

/* CoreAttention of B x NH heads, Tq queries over Tk keys of HD: baddbmm Q K^T (B*NH*Tq*Tk*HD MACs; flops 2*MACs +
 * the B*NH*Tq*Tk output it scales), softmax (1 flop per element), bmm P V (the same MACs). */
static void add_core(zt_flops_profiler *p, int parent, int slot, double B, int NH, int Tq, int Tk, int HD) {
  const double s = B * NH * Tq * Tk, mm = s * HD;
  zt_fp_add(p, parent, "core_attention", "CoreAttention", slot, 2 * mm, 2 * mm + s + s + 2 * mm);
}

/* A norm: LayerNorm (F.layer_norm, 5 flops per element) or, with --normalization rmsnorm, RMSNorm (0). */
static void add_norm(zt_flops_profiler *p, int parent, const char *name, int slot, double N, int C, double eps,
                     int rms) {
  if (rms) zt_fp_add_rmsnorm(p, parent, name, slot);
  else zt_fp_add_layernorm(p, parent, name, slot, N, C, eps);
}

/* A ParallelTransformer (encoder or decoder: the stack st) over B x T tokens, its layers' slots from layer_slots; a
 * decoder's layers cross-attend to Tk encoder positions (cross = 1). As DeepSpeed counts one GPU of a tensor-parallel
 * model: this rank's heads (A = NH/tp x HD columns of the column-parallel linears, rows of the row-parallel ones) and
 * MLP columns, and with --sequence-parallel the LayerNorms over this rank's N/tp tokens (the linears gather all N). */
static void add_stack(zt_flops_profiler *p, int parent, const char *name, int slot, int final_ln_slot,
                      const zt_lm_config *c, const zt_stack *st, int B, int T, int Tk, int cross, int layer_slots) {
  const zt_block_config *bc = st->cfg;
  const int C = c->hidden_size, NH = bc->NH, HD = bc->HD, A = NH * HD, L = st->nlayers;
  const double N = (double)B * T, Nk = (double)B * Tk, eps = c->ln_eps;
  const double Nln = zt_tp_sp(bc->tp) ? N / bc->tp->size : N;
  int stack = zt_fp_add(p, parent, name, "ParallelTransformer", slot, 0, 0);
  int layers = zt_fp_add(p, stack, "layers", "ModuleList", -1, 0, 0);
  p->mods[layers].is_list = true;
  for (int l = 0; l < L; l++) {
    char nm[16];
    snprintf(nm, sizeof nm, "%d", l);
    const int base = layer_slots + l * ZT_FT_SLOTS;
    int lay = zt_fp_add(p, layers, nm, "ParallelTransformerLayer", base + ZT_FT_LAYER, 0, 0);
    add_norm(p, lay, "input_layernorm", base + ZT_FT_LN1, Nln, C, eps, bc->rmsnorm);
    int att = zt_fp_add(p, lay, "self_attention", "ParallelAttention", base + ZT_FT_ATTN, 0, 0);
    /* grouped-query attention: NH queries, KV keys and KV values (then repeated to NH heads for the core) */
    zt_fp_add_linear(p, att, "query_key_value", "ColumnParallelLinear", base + ZT_FT_QKV, N, C, A + 2 * bc->KV * HD);
    add_core(p, att, base + ZT_FT_CORE, B, NH, T, T, HD);
    zt_fp_add_linear(p, att, "dense", "RowParallelLinear", base + ZT_FT_DENSE, N, A, C);
    add_norm(p, lay, "post_attention_layernorm", base + ZT_FT_LN2, Nln, C, eps, bc->rmsnorm);
    if (cross) { /* inter_attention: query on the decoder's tokens, key_value on the encoder output's */
      int inter = zt_fp_add(p, lay, "inter_attention", "ParallelAttention", base + ZT_FT_INTER, 0, 0);
      zt_fp_add_linear(p, inter, "query", "ColumnParallelLinear", base + ZT_FT_IQ, N, C, A);
      zt_fp_add_linear(p, inter, "key_value", "ColumnParallelLinear", base + ZT_FT_IKV, Nk, C, 2 * A);
      add_core(p, inter, base + ZT_FT_ICORE, B, NH, T, Tk, HD);
      zt_fp_add_linear(p, inter, "dense", "RowParallelLinear", base + ZT_FT_IDENSE, N, A, C);
      add_norm(p, lay, "post_inter_attention_layernorm", base + ZT_FT_LN3, Nln, C, eps, bc->rmsnorm);
    }
    const zt_ffn *ffn = &st->blocks[l].ffn; /* the MLP slot's tree: dense, or an MoE layer's (models/moe) */
    ffn->flops_tree(ffn, p, lay, base, N, st->cfg);
  }
  add_norm(p, stack, "final_layernorm", final_ln_slot, Nln, C, eps, bc->rmsnorm);
}

int zt_lm_flops_tree(zt_flops_profiler *p, int parent, const zt_lm *lm, int layer_slots) {
  const zt_lm_config *c = &lm->cfg;
  zt_check(lm->pp == 1, "unsupported argument", "the flops profiler with --pipeline-model-parallel-size %d is not "
           "supported yet", lm->pp);
  const int L = c->num_layers, C = c->hidden_size;
  int root = zt_fp_add(p, parent, "language_model", "TransformerLanguageModel", ZT_LM_FT_LM, 0, 0);
  int emb = zt_fp_add(p, root, "embedding", "Embedding", ZT_LM_FT_EMB, 0, 0);
  zt_fp_add(p, emb, "word_embeddings", "VocabParallelEmbedding", ZT_LM_FT_WORD, 0, 0); /* F.embedding: 0 */
  char extra[96];
  if (!c->rotary_dims && !c->no_position_embedding) { /* learned absolute positions */
    int pos = zt_fp_add(p, emb, "position_embeddings", "Embedding", ZT_LM_FT_POS, 0, 0);
    snprintf(extra, sizeof extra, "%d, %d", c->max_positions, C);
    zt_fp_set_extra(p, pos, extra);
  }
  if (c->num_tokentypes > 0) { /* not timed apart: the embedding's latency covers it */
    int tt = zt_fp_add(p, emb, "tokentype_embeddings", "Embedding", -1, 0, 0);
    snprintf(extra, sizeof extra, "%d, %d", c->num_tokentypes, C);
    zt_fp_set_extra(p, tt, extra);
  }
  /* TransformerLanguageModel.rotary_pos_emb: RotaryEmbedding's einsum is the torch.einsum its module imported
   * before the profiler patched it, and the rest are operators: 0 */
  if (c->rotary_dims) zt_fp_add(p, root, "rotary_pos_emb", "RotaryEmbedding", -1, 0, 0);
  add_stack(p, root, "encoder", ZT_LM_FT_ENCODER, ZT_LM_FT_FINAL_LN, c, &lm->stack, lm->B, lm->T, 0, 0, layer_slots);
  if (lm->enc_dec)
    add_stack(p, root, "decoder", ZT_LM_FT_DECODER, ZT_LM_FT_DEC_FINAL_LN, c, &lm->dec, lm->B, lm->Td, lm->T, 1,
              layer_slots + L * ZT_FT_SLOTS);
  return root;
}
