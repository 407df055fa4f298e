/* The Mixture-of-Experts flags a model is built with (DeepSpeed's MoE as Megatron-DeepSpeed constructs it in
 * ParallelTransformerLayer): which layers hold how many experts, the gate (top-k, capacity factors, token dropping,
 * noise) and the residual variant. Plain data with no dependencies, so that the model contract (models/model.h) can
 * carry it; models/moe/moe.h implements the layer. */
#ifndef ZT_MOE_CONFIG_H
#define ZT_MOE_CONFIG_H

struct zt_group; /* runtime/comm/comm.h */

/* DeepSpeed's noisy_gate_policy: None; 'Jitter' multiplies the router's input by U(1 - 1e-2, 1 + 1e-2); 'RSample'
 * adds Gumbel(0, 1) noise to the logits for top-1's choice. Both in training passes only. */
typedef enum { ZT_MOE_NOISE_NONE = 0, ZT_MOE_NOISE_JITTER = 1, ZT_MOE_NOISE_RSAMPLE = 2 } zt_moe_noise;

typedef struct {
  int num_layers;
  const int *num_experts; /* [num_layers] host: experts of layer l (1: the dense MLP); Megatron-DeepSpeed's
                             get_num_experts_per_layer of --num-experts and --expert-interval */
  int topk;               /* --topk: 1, 2 or k */
  float train_capacity_factor, eval_capacity_factor; /* --moe-train-capacity-factor, --moe-eval-capacity-factor */
  int min_capacity;       /* --moe-min-capacity */
  int drop_tokens;        /* 0: --disable-moe-token-dropping (capacity = the largest expert count) */
  int top2_sampling;      /* 0: --disable-moe-top2-2nd-expert-sampling (the second expert by argmax) */
  zt_moe_noise noise;     /* --noisy-gate-policy */
  int residual;           /* --mlp-type residual: Residual MoE */
  float loss_coeff;       /* --moe-loss-coeff: the summed auxiliary losses' weight in the loss */
  /* --moe-expert-parallel-size: DeepSpeed's expert-parallel group (carved from the data-parallel group) over which a
   * layer's experts are spread, E / ep_size on each member (member r runs experts [r E / ep_size, (r + 1) E /
   * ep_size)); ep_size 0 or 1 (and a NULL group): every expert runs in this process. Set by whoever builds the
   * groups (the training engine); the gate's flags above come from the arguments. */
  const struct zt_group *ep_group;
  int ep_size, ep_rank;
  /* With ep_size > 1: 1 registers only this member's experts (their global ids in the names), as DeepSpeed holds
   * them; 0 registers every expert (ZeRO-3 partitions them all over the data-parallel group). Set by the engine. */
  int local_experts;
  /* --enable-expert-tensor-parallelism: with tensor parallelism each expert's MLP (and Residual MoE's dense branch) is
   * split over the tensor-parallel ranks as the dense MLP is (dense_h_to_4h column-parallel, dense_4h_to_h
   * row-parallel, its partial outputs summed over the group); 0: every tensor-parallel rank holds whole experts. */
  int expert_tp;
} zt_moe_config;

/* Megatron-DeepSpeed's get_num_experts_per_layer: out[l] = experts of layer l of num_layers, from the --num-experts
 * values list[0..n) (one for every MoE layer, or one per MoE layer) and --expert-interval: layer l + 1 is an MoE layer
 * when it divides by the interval. n == 0 (or a list of the wrong length, which the caller refuses) gives 1s past the
 * list's end. */
static inline void zt_moe_layer_experts(const int *list, int n, int num_layers, int interval, int *out) {
  for (int l = 0; l < num_layers; l++) {
    const int idx = n == 1 ? 0 : l / (interval > 0 ? interval : 1);
    out[l] = interval > 0 && (l + 1) % interval == 0 && idx < n ? list[idx] : 1;
  }
}

/* Experts of layer l (1 without MoE). */
static inline int zt_moe_experts(const zt_moe_config *m, int l) {
  return m && m->num_experts && l >= 0 && l < m->num_layers ? m->num_experts[l] : 1;
}
/* Whether any layer is an MoE layer. */
static inline int zt_moe_on(const zt_moe_config *m) {
  for (int l = 0; m && l < m->num_layers; l++)
    if (zt_moe_experts(m, l) > 1) return 1;
  return 0;
}

#endif
