/* Test helper for the Hugging Face export: builds the GPT a checkpoint describes (its saved arguments), loads the
 * saved weights through the checkpoint reader and writes the logits of a fixed batch (evaluation mode) as .npy.
 * With LAYOUT.npy (int32 0/1 [heads, T/block, T/block], a block-sparse attention layout the test computed), attention
 * is the dense kernels' with that layout as a mask (the sparse_attention reference path, not the block-sparse
 * kernels).
 * Usage: ckpt_logits CHECKPOINT_DIR TOKENS.npy (int32 [B, T]) LOGITS.npy (float32 [B, T, padded vocab])
 *        [LAYOUT.npy BLOCK] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/ckpt_reader.h"
#include "models/gpt/gpt.h"
#include "runtime/ops/attn_layout.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"

static long arg(const zt_ckpt_reader *r, const char *name) {
  char v[64];
  zt_check(zt_ckpt_arg(r->args_text, name, v, sizeof v), "ckpt_logits", "saved argument %s is missing", name);
  return atol(v);
}

static double argf(const zt_ckpt_reader *r, const char *name) {
  char v[64];
  zt_check(zt_ckpt_arg(r->args_text, name, v, sizeof v), "ckpt_logits", "saved argument %s is missing", name);
  return atof(v);
}

int main(int argc, char **argv) {
  zt_check(argc == 4 || argc == 6, "usage", "ckpt_logits CHECKPOINT_DIR TOKENS.npy LOGITS.npy [LAYOUT.npy BLOCK]");
  zt_ckpt_reader r;
  zt_ckpt_open(&r, argv[1], NULL);
  int ndim;
  int64_t shape[4];
  int32_t *tokens = zt_npy_load(argv[2], "<i4", &ndim, shape);
  zt_check(ndim == 2, "ckpt_logits", "%s: tokens must be [B, T]", argv[2]);
  char untie[16] = "False";
  zt_ckpt_arg(r.args_text, "untie_embeddings_and_output_weights", untie, sizeof untie);
  zt_gpt_config c = {.num_layers = (int)arg(&r, "num_layers"), .hidden_size = (int)arg(&r, "hidden_size"),
                     .num_heads = (int)arg(&r, "num_attention_heads"), .ffn_hidden_size = (int)arg(&r, "ffn_hidden_size"),
                     .max_positions = (int)arg(&r, "max_position_embeddings"),
                     .padded_vocab_size = (int)r.padded_vocab_size, .ln_eps = (float)argf(&r, "layernorm_epsilon"),
                     .init_std = 0.02f, .untie_embeddings = strcmp(untie, "True") == 0,
                     .micro_batch = (int)shape[0], .seq_length = (int)shape[1]};
  zt_attn_layout_buf layout = {0};
  if (argc == 6) {
    int64_t lshape[4];
    int32_t *lay = zt_npy_load(argv[4], "<i4", &ndim, lshape);
    const int block = atoi(argv[5]);
    zt_check(ndim == 3 && lshape[0] == c.num_heads && lshape[1] == lshape[2] && block > 0 &&
             lshape[1] * block == shape[1], "ckpt_logits", "%s: a layout [heads, T/block, T/block] is expected", argv[4]);
    const size_t n = (size_t)(lshape[0] * lshape[1] * lshape[2]);
    uint8_t *mask = zt_malloc(n, "layout");
    for (size_t i = 0; i < n; i++) mask[i] = lay[i] != 0;
    zt_attn_layout_from_mask(&layout, mask, (int)lshape[0], (int)lshape[1], block);
    free(mask);
    free(lay);
    c.sparse_attention = &layout;
    c.sparse_as_mask = 1;
  }
  zt_gpt m;
  zt_gpt_build(&m, &c, 0);
  float *full = zt_malloc((size_t)r.padded_vocab_size * c.hidden_size * 4 + (size_t)c.ffn_hidden_size * c.hidden_size * 4 + 64,
                          "tensor");
  for (int i = 0; i < m.table.count; i++) {
    const zt_param *p = &m.table.params[i];
    const int k = zt_ckpt_find(&r, p->name);
    zt_check(k >= 0 && r.tensors[k].numel == p->numel, "ckpt_logits", "%s missing or of another size", p->name);
    zt_ckpt_read_weights(&r, k, full);
    memcpy(m.params + p->offset, full, p->numel * sizeof(float));
  }
  zt_pass pass = {.B = (int)shape[0], .T = (int)shape[1], .training = 0};
  zt_gpt_forward(&m, tokens, NULL, tokens, NULL, &pass);
  int64_t out[3] = {shape[0], shape[1], r.padded_vocab_size};
  zt_npy_save(argv[3], m.logits, "<f4", 3, out);
  free(full);
  free(tokens);
  zt_gpt_free(&m);
  if (layout.mem) zt_attn_layout_free(&layout);
  zt_ckpt_close(&r);
  return 0;
}
