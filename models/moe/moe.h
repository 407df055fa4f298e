/* DeepSpeed's Mixture-of-Experts layer (deepspeed/moe: TopKGate, MOELayer, Experts, MoE with use_residual) as an
 * implementation of the MLP slot (zt_ffn, models/transformer/transformer.h), and its gate as host functions.
 *
 * The gate runs on the host in double precision over the router's fp32 logits: S tokens x E experts is small next to
 * the experts' GEMMs. Tokens are taken in Megatron's [s, b] order (token s = t * B + b of the micro batch), which
 * decides the capacity locations and so which tokens an over-full expert drops. The experts run where the model
 * runs (the backend op table): the kept tokens are gathered expert by expert, each expert's MLP runs as two GEMMs
 * over its rows, and the outputs are scaled by their combine weights and summed back into the token rows; slots an
 * expert leaves empty are not computed (DeepSpeed computes them on zero rows and weights them 0: the same results).
 *
 * Random numbers (Random Token Selection's priorities, top-2's Gumbel sampling, the noisy gate policies) are Philox
 * draws keyed by (seed, global sample, position, layer), so they do not depend on the micro batch layout or backend.
 *
 * With expert parallelism (zt_moe_config.ep_size > 1) each member of the expert-parallel group runs E / ep_size of
 * the experts over the rows every member sends it (all-to-all there and back); with zt_moe_config.local_experts it
 * registers only those (DeepSpeed's layout), else every expert (the others' gradients stay zero, so the data-parallel
 * average is DeepSpeed's expert-data-parallel one). With tensor parallelism every rank computes the whole layer; with
 * pipeline stages the aux losses' sum travels with the hidden state (language_model.c). docs/moe.md. */
#ifndef ZT_MOE_H
#define ZT_MOE_H

#include <stddef.h>
#include <stdint.h>

#include "models/moe/moe_config.h"
#include "models/transformer/transformer.h"

/* ---- the gate ------------------------------------------------------------------------------------------------- */
/* The random numbers of one layer's gate for one pass, in token order s (NULL where unused):
 * rts [S, E] uniform in (0, 1) (top-1's Random Token Selection), gumbel [S, E] (top-2's second choice, or RSample),
 * jitter [S, C] in [1 - 1e-2, 1 + 1e-2) (the Jitter policy). */
typedef struct {
  float *rts, *gumbel, *jitter;
} zt_moe_draws;

/* One pass's gating decisions of S tokens (order s) with k choices each. */
typedef struct {
  int S, E, k, capacity;
  double aux;          /* l_aux (before --moe-loss-coeff) */
  int32_t *expert;     /* [S k] choice j of token s at s * k + j */
  uint8_t *kept;       /* [S k] 0: dropped by the capacity */
  float *weight;       /* [S k] combine weight (0 when dropped) */
  int32_t *counts;     /* [E] tokens each expert processes (kept choices) */
  int32_t *routed;     /* [E] choices routed before dropping (DeepSpeed's exp_counts) */
  double *gates;       /* [S E] softmax of the logits (for the backward) */
  double *denom;       /* [S] the renormalization's denominator (k >= 2) */
  int64_t dropped;     /* S k - kept choices */
} zt_moe_gating;

void zt_moe_gating_alloc(zt_moe_gating *g, int S, int E, int k);
void zt_moe_gating_free(zt_moe_gating *g);
/* DeepSpeed's top1gating / top2gating / topkgating (drop_policy 'probs') over logits [S, E] (token order s) for a
 * training or eval pass (the capacity factor and the noise policy follow it; top-2's sampling does not). */
void zt_moe_gate_forward(zt_moe_gating *g, const float *logits, const zt_moe_config *mc, int training,
                         const zt_moe_draws *draws);
/* dlogits [S, E] (=) from the gradients of the combine weights dweight [S k] and of l_aux (aux_grad). */
void zt_moe_gate_backward(const zt_moe_gating *g, float *dlogits, const float *dweight, double aux_grad);
/* The capacity per expert for S tokens of E experts with k choices and capacity factor cf (DeepSpeed's _capacity in
 * fp32: max(ceil(S / E * k cf), min_capacity)). */
int zt_moe_capacity(int S, int E, int k, float cf, int min_capacity);

/* Fills the arrays of d that are not NULL with layer `layer`'s draws for B samples (first_sample ...) of T positions,
 * in token order s = t * B + b; each value is keyed by (seed, sample, position, layer, its kind, expert or channel). */
void zt_moe_draw(zt_moe_draws *d, uint64_t seed, uint64_t first_sample, int layer, int B, int T, int E, int C);
/* The same for positions pos0 .. pos0 + T - 1 of each sample (incremental decoding: the pass's tokens sit after the
 * kv_past cached ones, and draw what a full pass draws at those positions). */
void zt_moe_draw_at(zt_moe_draws *d, uint64_t seed, uint64_t first_sample, int layer, int B, int T, int pos0, int E,
                    int C);

/* ---- the layer ------------------------------------------------------------------------------------------------ */
/* Layer `layer`'s MLP slot for the model's MoE flags (ctx: a zt_moe_config): an MoE layer where it has more than one
 * expert, else the dense MLP. The factory a model puts in zt_block_config.make_ffn. */
zt_ffn zt_moe_make_ffn(const void *ctx, int layer);

/* Statistics of the layer's last forward (NULL for a dense slot): its gating (host). */
const zt_moe_gating *zt_moe_last_gating(const zt_ffn *ffn);

#endif
