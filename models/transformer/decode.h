/* Incremental decoding of a language model (text generation: evaluate/generate.c): per-layer key/value caches on the
 * model's backend and the forward of only the new tokens of each step, as Megatron's get_key_value/layer_past path
 * (ParallelAttention's inference cache); or, without the cache, the whole prefix again at every step (Megatron's
 * --recompute). The layers run the training code itself (zt_stack_forward with pass->kv_cache set: the attention
 * appends the new keys/values and attends over the cache, models/transformer/attention.c); the last stage's logits
 * are computed for the last token of each sequence only and gathered over the tensor-parallel vocabulary slices.
 * Pipeline stages pass the stage output between them (the caller sends and receives). */
#ifndef ZT_DECODE_H
#define ZT_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "models/transformer/language_model.h"

typedef struct {
  zt_lm *lm;
  int B, Tmax;            /* the model's micro batch and sequence length: the cache holds Tmax positions per row */
  int rows;               /* the rows each cache holds: B, or a multiple of B for a beam search (zt_lm_decoder_rows) */
  void **cache;           /* [stack layers] each [rows, Tmax, 3A] on the backend */
  size_t row_bytes;       /* one row of one layer's cache */
  size_t cache_bytes;     /* per layer (rows x row_bytes) */
  int32_t *h_tok, *h_pos; /* host [B * Tmax] */
  float *logits32;        /* backend [rows, V] the logits in fp32 (half storage converted) */
  float *h_local, *h_all; /* host [rows, V] this rank's slice, [tp, rows, V] gathered */
  size_t rows_cap;        /* the rows those hold (B; B x n after a call with all positions) */
  void *swap;             /* backend [rows, Tmax, 3A]: zt_lm_decoder_reorder's copy (allocated at its first call) */
} zt_lm_decoder;

/* Allocates the caches for lm's micro batch and sequence length (forward-only model, no --sequence-parallel, one
 * virtual chunk) and points each layer's attention at its cache. */
void zt_lm_decoder_init(zt_lm_decoder *d, zt_lm *lm);
void zt_lm_decoder_free(zt_lm_decoder *d);
/* Bytes of key/value cache this stage holds. */
size_t zt_lm_decoder_cache_bytes(const zt_lm_decoder *d);

/* One forward of this stage over n new tokens per row: tokens [B, n] (host, read on the first stage) at positions
 * past .. past+n-1. cached: the layers read and extend the caches (past > 0 needs n == 1); 0: no cache, past must
 * be 0 (the whole prefix). A stage that is not the first finds its input at zt_lm_decoder_input (B n C elements of
 * the model's dtype, received by the caller). Returns 1 on the last stage, with logits [B, V_full] (host, fp32: the
 * logits of each row's last token over the whole padded vocabulary, gathered over the tensor-parallel ranks), or
 * with all set [B, n, V_full] (every one of the n tokens' logits: the text-generation server's log-probabilities);
 * else 0, the output at zt_lm_decoder_output(d, n) for the next stage. */
int zt_lm_decode(zt_lm_decoder *d, const int32_t *tokens, int n, int past, int cached, int all, float *logits);
void *zt_lm_decoder_input(const zt_lm_decoder *d);
void *zt_lm_decoder_output(const zt_lm_decoder *d, int n);
/* Beam search (Megatron's InferenceParams.swap_key_value_dict): for b < n (at most the caches' rows), row b of every
 * cache becomes row from[b] (from[b] < 0: row b stays; from[b] < n). */
void zt_lm_decoder_reorder(zt_lm_decoder *d, const int *from, int n);
/* More rows than the micro batch (a beam search wider than it): the caches hold `rows` rows (a multiple of B; grown,
 * their contents lost, never shrunk), which the forwards use B at a time from the row zt_lm_decoder_select chose. */
void zt_lm_decoder_rows(zt_lm_decoder *d, int rows);
/* The next forwards read and extend cache rows row0 .. row0 + B - 1 (row0 a multiple of B below rows). */
void zt_lm_decoder_select(zt_lm_decoder *d, int row0);
/* Bytes of key/value cache per row on this stage (every layer). */
size_t zt_lm_decoder_row_bytes(const zt_lm_decoder *d);
/* Elements of the stage tensor for n tokens per row (B n C). */
size_t zt_lm_decoder_stage_elems(const zt_lm_decoder *d, int n);
/* The width of the gathered logits (V of every tensor-parallel rank together). */
int zt_lm_decoder_vocab(const zt_lm_decoder *d);

#endif
