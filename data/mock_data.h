/* --mock-data: a synthetic, patterned token stream. Each document starts at a random token and
 * walks with a fixed random stride (x_{t+1} = (x_t + stride) mod V), documents are separated by the
 * end-of-document token V-1, and everything is a pure function of (seed, sample index): the same
 * samples for any parallel layout, and learnable (the next token follows from the previous two),
 * so the loss can fall far below the unigram entropy ln(V). */
#ifndef ZT_MOCK_DATA_H
#define ZT_MOCK_DATA_H

#include <stdint.h>

typedef struct {
  int vocab_size;       /* the tokenizer's vocabulary (not padded) */
  int seq_length;
  uint64_t seed;
  uint64_t split_id;    /* 0 train, 1 valid, 2 test: disjoint streams */
} zt_mock_data;

/* Writes sample `index` as seq_length+1 tokens (Megatron's text[:, :s+1]). */
void zt_mock_data_sample(const zt_mock_data *d, uint64_t index, int32_t *out);

#endif
