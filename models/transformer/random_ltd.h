/* Random-LTD in the layer stack (DeepSpeed's RandomLayerTokenDrop with GatherTokens / ScatterTokens): a training
 * pass with pass->ltd_keep = r below its length T runs each random-LTD layer (zt_block_config.ltd_layers) on r
 * tokens of every sample, drawn uniformly without replacement and kept in their order; the layer's outputs go back
 * to those positions and the other tokens pass the layer unchanged (their gradient too). With a causal model the
 * kept tokens attend causally among themselves, as DeepSpeed's decoder mask [:r, :r] does; with a padding mask
 * (an encoder) they attend to the kept tokens that are not padding, as DeepSpeed's bert_sample_tokens gathers the
 * mask's rows and columns. The draw is keyed by
 * (--seed, the step, the global sample, the layer), so every data- and tensor-parallel layout and the recompute
 * draw the same tokens. Gather and scatter are exact row copies on the backend (its embedding gather), so a layer
 * that keeps every token computes what it computes without random-LTD, bit for bit. */
#ifndef ZT_RANDOM_LTD_LAYER_H
#define ZT_RANDOM_LTD_LAYER_H

#include <stdint.h>

#include "models/model.h"

/* The r sorted positions (of 0..T-1) that `layer` keeps of global sample `sample` at `step`; perm: T ints of work
 * space. */
void zt_ltd_draw(uint64_t seed, uint64_t step, uint64_t sample, int layer, int T, int r, int32_t *perm,
                 int32_t *kept);

/* Whether a pass runs random-LTD layers dropping tokens: training with 0 < ltd_keep < T. */
static inline int zt_ltd_active(const zt_pass *p) { return p->training && p->ltd_keep > 0 && p->ltd_keep < p->T; }

#endif
