/* The layout-independent checkpoint reader: finds the tag (`latest` or an explicit one), verifies every
 * file against the tag's manifest before anything is read, opens the model-state files of every model-
 * parallel rank and the optimizer-state partitions of every data-parallel rank, and returns any tensor
 * as its FULL fp32 value, whatever tensor-parallel slicing and data-parallel partitioning the saving run
 * used: weights are assembled from the per-rank slices (full shape, split dimension, offset), optimizer
 * states (fp32 masters, moments) from the partitions' slice mappings. Memory stays near one tensor.
 * Used by the engine's --load, zero_to_fp32, export_hf and inspect_checkpoint. docs/checkpoints.md. */
#ifndef ZT_CKPT_READER_H
#define ZT_CKPT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoints/h5io.h"
#include "runtime/tensor/tensor.h"

#define ZT_CKPT_FORMAT "zerotron-checkpoint"
#define ZT_CKPT_FORMAT_VERSION 1
#define ZT_CKPT_MEGATRON_VERSION 3.0 /* Megatron's checkpoint_version */

typedef struct {
  char name[128];
  int ndim;
  int64_t full_shape[ZT_MAX_DIMS];
  size_t numel;                /* of the full tensor */
  int tp_split_dim;            /* -1 replicated */
  int tp_parts;                /* blocks split over the ranks each (zt_param.tp_parts; 1 when the file says nothing) */
  int tied_group, no_weight_decay, expert_id;
  zt_dtype dtype;              /* stored dtype of the weights */
  int efile;                   /* -1: in the model-state files; else its expert file (zt_ckpt_reader.experts) */
} zt_ckpt_tensor;

typedef struct {               /* one optimizer partition file's slice mapping */
  size_t n;
  char **names;
  int64_t *start, *numel, *param_offset;
} zt_ckpt_slice_map;

typedef struct {
  char root[4096], tag[256], dir[4352];
  int n_files;
  char **files;                /* verified against the manifest, sorted */
  int mp_size, tp_size, pp_size, dp_size;
  zt_h5 *model;                /* [mp_size], by mp rank */
  int n_experts;               /* DeepSpeed's per-expert files (layer_<l>_expert_<e>_mp_rank_<mp>_model_states) */
  zt_h5 *experts;              /* [n_experts] */
  int *expert_mp;              /* [n_experts] the model-parallel rank of each */
  int *expert_key;             /* [n_experts] 2 each: the file's MoE layer and expert ids (its name's <l> and <e>) */
  int has_optim;               /* optimizer partitions present (not --no-save-optim) */
  zt_h5 *optim;                /* [mp_size * dp_size]: mp * dp_size + dp */
  zt_ckpt_slice_map *maps;     /* same indexing */
  unsigned char *verified;     /* [mp_size * dp_size * 4]: which optimizer-state datasets had their crc32c checked */
  char optimizer[16];          /* "adam", "sgd", "lamb" */
  int n_tensors;
  zt_ckpt_tensor *tensors;     /* the union over model files, in saved order */
  /* scalar metadata of mp_rank_00 */
  int64_t iteration, consumed_train_samples, consumed_valid_samples, tokens, skipped_steps;
  int64_t random_ltd_layer_tokens; /* random-LTD's consumed layer tokens, -1 when the run had no random-LTD */
  int64_t data_sampler_step;       /* the data sampler's curriculum step, -1 when the run had no data sampler */
  uint64_t data_sampler_digest;    /* its state's digest then (train/data_sampler.h) */
  int64_t vocab_size, padded_vocab_size;
  int zero_stage;
  zt_dtype weights_dtype;
  char *args_text;             /* "name value" lines, Megatron's argument summary */
  char *ds_config;             /* the DeepSpeed config file's text, "" without --deepspeed */
} zt_ckpt_reader;

/* What a --load directory holds: 1 with the tag to load in tag_out (`tag` when given, else the contents of
 * root/latest), 0 when there is nothing to load (root or root/latest absent: a new run), -1 with the reason in
 * err (naming the file) when a tracker file is present but unusable (a directory, unreadable, empty, a NUL or
 * other control byte, latest_checkpointed_iteration.txt not an iteration or "release"), -2 (err) when the tag's
 * directory is missing. Nothing fatal: the engine gathers every rank's answer before deciding. */
int zt_ckpt_discover(const char *root, const char *tag, char *tag_out, size_t n, char *err, size_t errn);
/* --universal-checkpoint (or the ds_config's checkpoint.load_universal): the tag named by root/latest_universal,
 * the tracker DeepSpeed's ds_to_universal.py writes. 1 with the tag in tag_out when it names one of zerotron's
 * checkpoint folders (holding the manifest), 0 when root/latest_universal does not exist, -1 with the reason in err
 * (naming the file) otherwise: an unusable tracker, a missing folder, a DeepSpeed universal checkpoint (torch
 * files) or any folder without the manifest. */
int zt_ckpt_universal_tag(const char *root, char *tag_out, size_t n, char *err, size_t errn);
/* The same, fatal on -1 (naming the file); returns 0 (tag_out empty) when there is nothing to load. */
int zt_ckpt_resolve(const char *root, const char *tag, char *tag_out, size_t n);
/* The tools' argument: `dir` is a checkpoint root (holding `latest`, or any tag with `tag`) or a tag folder
 * itself (it holds the manifest). Writes the root to root (n bytes) and returns the tag to open: `tag` when
 * given, the tag folder's name (copied to tagbuf), or NULL for root/latest. */
const char *zt_ckpt_tool_dir(const char *dir, const char *tag, char *root, size_t n, char *tagbuf, size_t tn);
/* Opens root/<tag> (tag NULL: latest; fatal when there is none): verifies the manifest, reads metadata. */
void zt_ckpt_open(zt_ckpt_reader *r, const char *root, const char *tag);
/* The same; verify 0 checks the manifest's listing and sizes but not the checksums (a rank whose files another
 * rank has verified: data-parallel ranks share one checkpoint). */
void zt_ckpt_open_ex(zt_ckpt_reader *r, const char *root, const char *tag, int verify);
void zt_ckpt_close(zt_ckpt_reader *r);

/* Index of a tensor by name, or -1. */
int zt_ckpt_find(const zt_ckpt_reader *r, const char *name);
/* The full fp32 weights of tensor i (out holds tensors[i].numel floats). */
void zt_ckpt_read_weights(const zt_ckpt_reader *r, int i, float *out);
/* The full fp32 optimizer state `state` ("fp32", "exp_avg", "exp_avg_sq", "momentum_buffer") of tensor i;
 * fatal when the checkpoint has no optimizer partitions. */
void zt_ckpt_read_state(const zt_ckpt_reader *r, int i, const char *state, float *out);
/* The value of a saved argument (Megatron's name, e.g. "num_layers") into buf; 0 when absent. */
int zt_ckpt_arg(const char *args_text, const char *name, char *buf, size_t n);

/* --use-checkpoint-args: the saved argument summary of root/<tag or latest> (malloc'd "name value\n"
 * lines), or NULL when there is no checkpoint. */
char *zt_ckpt_saved_args(const char *root, const char *tag);

/* Copies the slice [offset, offset + len) along dimension dim of the full tensor src (shape full) into dst
 * (the same shape with len along dim); direction reversed when to_full is set. With parts > 1 (dim 0 only: SwiGLU's
 * dense_h_to_4h, zt_param.tp_parts) the full tensor is parts equal blocks and the slice a rank's share of each:
 * block j of the len / parts rows of dst is rows [j F / parts + offset / parts, ...) of the full tensor (F its rows). */
void zt_ckpt_slice_copy(float *dst, const float *src, int ndim, const int64_t *full, int dim, int64_t offset,
                        int64_t len, int to_full, int parts);

#endif
