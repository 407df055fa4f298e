/* DeepSpeed's block-sparse attention layouts (deepspeed/ops/sparse_attention/sparsity_config.py): the
 * configuration of the five modes of ds_config's `sparse_attention` (dense, fixed, variable, bigbird,
 * bslongformer), the checks DeepSpeed's constructors and make_layout perform (with DeepSpeed's messages), and
 * the layout itself: layout[num_heads][nb][nb], nb = seq_len / block, 1 where a block of scores is computed. */
#ifndef ZT_SPARSITY_H
#define ZT_SPARSITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZT_SPARSE_MAX_LIST 64 /* longest local_window_blocks / global_block_(end_)indices list */

typedef enum { ZT_SPARSE_DENSE, ZT_SPARSE_FIXED, ZT_SPARSE_VARIABLE, ZT_SPARSE_BIGBIRD, ZT_SPARSE_BSLONGFORMER } zt_sparse_mode;

typedef struct {
  zt_sparse_mode mode;
  int block;                                      /* tokens per block side */
  bool different_layout_per_head;                 /* else head 0's layout is copied to every head */
  int num_local_blocks, num_global_blocks;        /* fixed; bigbird uses num_global_blocks too */
  bool unidirectional;                            /* attention: "unidirectional" (else "bidirectional") */
  bool horizontal_global_attention;               /* fixed, variable */
  int num_different_global_patterns;              /* fixed */
  int num_random_blocks;                          /* variable, bigbird */
  int local_window_blocks[ZT_SPARSE_MAX_LIST], n_local_window_blocks;             /* variable */
  int global_block_indices[ZT_SPARSE_MAX_LIST], n_global_block_indices;           /* variable, bslongformer */
  int global_block_end_indices[ZT_SPARSE_MAX_LIST], n_global_block_end_indices;   /* -1: None */
  int num_sliding_window_blocks;                  /* bigbird, bslongformer */
} zt_sparsity_config;

/* The defaults DeepSpeed's ds_config parsing gives `mode` (runtime/config.py get_sparse_*_config with the
 * constants of runtime/constants.py): block 16, one layout for all heads, bidirectional; fixed 4 local / 1
 * global block, 1 pattern; variable 0 random blocks, windows [4], global indices [0], no end indices;
 * bigbird 0 random blocks (the ds_config default; the class's own default is 1), 3 sliding, 1 global;
 * bslongformer 3 sliding, global indices [0]. Fields a mode does not read are set to the same values. */
void zt_sparsity_config_defaults(zt_sparsity_config *c, zt_sparse_mode mode);

/* "dense", "fixed", "variable", "bigbird", "bslongformer" ("?" for anything else). */
const char *zt_sparse_mode_name(zt_sparse_mode m);
/* The mode named `name` (as ds_config's "mode" spells it); false for anything else, which DeepSpeed refuses
 * with "Given sparsity mode, <name>, has not been implemented yet!". */
bool zt_sparse_mode_from_name(const char *name, zt_sparse_mode *m);

/* DeepSpeed's constructor and make_layout checks in DeepSpeed's order with its messages, plus what DeepSpeed
 * would crash on or silently mis-handle (num_heads, block or seq_len below 1, zero or negative counts and
 * window sizes, negative block indices, an empty local_window_blocks, lists longer than ZT_SPARSE_MAX_LIST,
 * random blocks Python's random.sample cannot draw, a layout too large for memory indices).
 * Returns 1 when valid; else 0 with one line (no newline) in err[0..n). After a 1, zt_sparsity_make_layout
 * with the same arguments cannot fail. */
int zt_sparsity_check(const zt_sparsity_config *c, int num_heads, int seq_len, char *err, size_t n);

/* Writes layout[num_heads][nb][nb] (nb = seq_len / block; 0 or 1 per byte) exactly as DeepSpeed's make_layout
 * for the deterministic parts. The random blocks of variable and bigbird are drawn without replacement from
 * DeepSpeed's ranges (all nb columns; bigbird unidirectional: columns 0..row) by a Philox stream keyed by
 * `seed` alone, so every process draws the same layout (DeepSpeed broadcasts rank 0's instead). The config
 * must have passed zt_sparsity_check. */
void zt_sparsity_make_layout(const zt_sparsity_config *c, int num_heads, int seq_len, uint64_t seed,
                             uint8_t *layout);

/* The layout a model's self-attention uses at seq_len tokens: make_layout's for layout_seq_len (the length the
 * layout is made for: --seq-length of the training run) with `seed`, cut to its first seq_len / block rows and
 * columns of blocks, as DeepSpeed's SparseSelfAttention slices its master layout for a shorter input; with causal
 * the blocks above the diagonal are dropped (the causal mask hides them anyway). Writes [num_heads][nb][nb],
 * nb = seq_len / block. seq_len must be a multiple of the block and at most layout_seq_len, and the config must
 * have passed zt_sparsity_check for layout_seq_len. */
void zt_sparsity_model_layout(const zt_sparsity_config *c, int num_heads, int layout_seq_len, int seq_len,
                              uint64_t seed, int causal, uint8_t *layout);

/* The random columns make_layout draws for (head, row): sets mark[col] = 1 for each of the
 * num_random_blocks columns (mark[0..nb) must be zero on entry). `head` is the layout head (0 unless
 * different_layout_per_head). For tests and the log; make_layout uses the very same draws. */
void zt_sparsity_random_row(const zt_sparsity_config *c, int nb, uint64_t seed, int head, int row, uint8_t *mark);

/* One line for the log: mode, block, nb, heads, blocks computed / total and the density in percent. */
void zt_sparsity_describe(const zt_sparsity_config *c, const uint8_t *layout, int num_heads, int nb, char *out,
                          size_t n);

#endif
