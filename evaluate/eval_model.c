/* The model side of the evaluation programs (see eval_model.h). */
#include "evaluate/eval_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/ckpt_reader.h"
#include "models/gpt/gpt.h"
#include "models/transformer/sparsity.h"
#include "runtime/base/error.h"
#include "train/ds_config.h"
#include "train/engine.h"

const char *zt_eval_program = "evaluate_zeroshot";

zt_eval_placement zt_eval_place(const zt_args *a) {
  zt_eval_placement p = {.c = {0, 0, 0}, .tp = NULL, .pp = NULL, .dp = zt_comm_world()};
  const int tp = a->tensor_model_parallel_size, pp = a->pipeline_model_parallel_size;
  if (tp == 1 && pp == 1) {
    p.c.dp = zt_comm_rank();
    return p;
  }
  int *ds_stages = zt_args_pipe_stages(a); /* --deepspeed: GPTModelPipe's stages need not divide the layers */
  zt_layout l;
  zt_layout_init(&l, zt_comm_size(), tp, pp, 1, 1, ds_stages ? 0 : a->num_layers);
  free(ds_stages);
  int *members = zt_malloc((size_t)l.world * sizeof(int), "process groups");
  const zt_group_kind kinds[3] = {ZT_GROUP_DATA, ZT_GROUP_TENSOR, ZT_GROUP_PIPELINE};
  for (int k = 0; k < (pp > 1 ? 3 : 2); k++) {
    int size, count = zt_layout_all_groups(&l, kinds[k], members, &size);
    for (int g = 0; g < count; g++) {
      zt_group *grp = zt_group_create(members + (size_t)g * size, size);
      if (grp && kinds[k] == ZT_GROUP_DATA) p.dp = grp;
      if (grp && kinds[k] == ZT_GROUP_TENSOR) p.tp = grp;
      if (grp && kinds[k] == ZT_GROUP_PIPELINE) p.pp = grp;
    }
  }
  free(members);
  p.c = zt_layout_coords(&l, zt_comm_rank());
  if (tp == 1) p.tp = NULL;
  return p;
}

/* What the checkpoint's run attended with: the sparse_attention block of the ds_config it saved (present = 0 for
 * dense attention), the --seq-length its layout was made for, --seed (the random blocks) and its head count. */
typedef struct {
  int present, seq_length, num_heads;
  int64_t seed;
  zt_sparsity_config c;
} saved_sparsity;

static int64_t saved_int(const zt_ckpt_reader *r, const char *name) {
  char v[64];
  zt_check(zt_ckpt_arg(r->args_text, name, v, sizeof v), "checkpoint", "%s: the saved arguments lack %s, which the "
           "sparse_attention layout of its ds_config needs", r->dir, name);
  return atoll(v);
}

static void read_sparsity(const zt_ckpt_reader *r, saved_sparsity *out) {
  memset(out, 0, sizeof *out);
  if (!r->ds_config || !*r->ds_config) return; /* trained without --deepspeed */
  char name[4400];
  snprintf(name, sizeof name, "%s (the ds_config the checkpoint saved)", r->dir);
  zt_ds_config *dc = zt_malloc(sizeof *dc, "ds_config");
  zt_ds_config_load_string(dc, r->ds_config, name);
  if (dc->sparse_attention) {
    out->present = 1;
    out->c = dc->sparse;
    out->seq_length = (int)saved_int(r, "seq_length");
    out->num_heads = (int)saved_int(r, "num_attention_heads");
    out->seed = saved_int(r, "seed");
  }
  zt_ds_config_free(dc);
  free(dc);
}

/* A BERT (or other) checkpoint is refused by what it holds, before any shape check; returns the checkpoint's padded
 * vocabulary size and, with sparse non-NULL, what read_sparsity finds. */
static int64_t checkpoint_kind(const zt_args *a, saved_sparsity *sparse) {
  char tag[256];
  zt_check(zt_ckpt_resolve(a->load, a->load_tag, tag, sizeof tag) != 0, "checkpoint", "--load %s: no checkpoint "
           "there (no %s/latest%s%s)", a->load, a->load, a->load_tag ? " and no tag " : "",
           a->load_tag ? a->load_tag : "");
  zt_ckpt_reader r;
  zt_ckpt_open_ex(&r, a->load, tag, 0);
  static const char *const bert_only[] = {"lm_head.", "binary_head.", "language_model.pooler.", "tokentype_embeddings"};
  for (int i = 0; i < r.n_tensors; i++)
    for (int k = 0; k < 4; k++)
      zt_check(!strstr(r.tensors[i].name, bert_only[k]), "checkpoint", "%s: a BERT checkpoint (it holds %s, which "
               "pretrain_bert saves): %s reads GPT language models (pretrain_gpt checkpoints)",
               r.dir, r.tensors[i].name, zt_eval_program);
  /* MoE layers: the model is built from the flags, so they must name the checkpoint's experts (the reader then
   * checks every tensor); a dense model of an MoE checkpoint is refused here with the run's saved MoE flags */
  for (int i = 0; i < r.n_tensors && !zt_moe_on(&a->moe); i++) {
    if (!strstr(r.tensors[i].name, ".deepspeed_moe.")) continue;
    char ne[128] = "?", ei[32] = "?", tk[32] = "?", mt[32] = "?";
    zt_ckpt_arg(r.args_text, "num_experts", ne, sizeof ne);
    zt_ckpt_arg(r.args_text, "expert_interval", ei, sizeof ei);
    zt_ckpt_arg(r.args_text, "topk", tk, sizeof tk);
    zt_ckpt_arg(r.args_text, "mlp_type", mt, sizeof mt);
    zt_fatal("checkpoint", "%s holds MoE layers (%s; docs/moe.md) and the flags describe a dense model: give the run's "
             "MoE flags (it saved num_experts %s, expert_interval %s, topk %s, mlp_type %s)", r.dir,
             r.tensors[i].name, ne, ei, tk, mt);
  }
  const int64_t padded = r.padded_vocab_size;
  if (sparse) read_sparsity(&r, sparse);
  zt_ckpt_close(&r);
  return padded;
}

int zt_eval_checkpoint_vocab(const zt_args *a) {
  double v = zt_comm_rank() == 0 ? (double)checkpoint_kind(a, NULL) : 0.0;
  zt_allreduce_sum_f64(zt_comm_world(), &v, 1);
  return (int)v;
}

/* The layout the checkpoint's run trained with, cut to this run's --seq-length (DeepSpeed slices its master layout
 * the same way for a shorter input); refused where it cannot apply. NULL for dense attention. */
static const zt_attn_layout_buf *sparse_layout(const zt_args *a, const saved_sparsity *sp, int allow_sparse) {
  static zt_attn_layout_buf buf; /* lives as long as the model */
  if (!sp->present) return NULL;
  const zt_sparsity_config *c = &sp->c;
  zt_check(allow_sparse, "checkpoint", "%s: --load %s was trained with sparse_attention (mode %s, block %d, in the "
           "ds_config it saved): %s runs the model on prefixes of every length (with or without the key/value "
           "cache), where a block-sparse layout is not supported yet (it lands with the sparse-attention decoding "
           "work), and dense attention would not be the model that was trained", zt_eval_program, a->load,
           zt_sparse_mode_name(c->mode), c->block, zt_eval_program);
  zt_check(a->num_attention_heads == sp->num_heads, "checkpoint", "--num-attention-heads %d: --load %s was trained "
           "with %d heads, and its sparse_attention layout (mode %s) is made per head", a->num_attention_heads, a->load,
           sp->num_heads, zt_sparse_mode_name(c->mode));
  zt_check(a->seq_length % c->block == 0 && a->seq_length <= sp->seq_length, "arguments", "--seq-length %d: --load %s "
           "was trained with sparse_attention (mode %s, block %d) made for --seq-length %d; evaluate at a multiple of "
           "the block up to %d, where the trained layout's first blocks apply", a->seq_length, a->load,
           zt_sparse_mode_name(c->mode), c->block, sp->seq_length, sp->seq_length);
  char err[512];
  zt_check(zt_sparsity_check(c, sp->num_heads, sp->seq_length, err, sizeof err), "checkpoint", "--load %s: the "
           "sparse_attention block of the ds_config it saved: %s", a->load, err);
  const int H = a->num_attention_heads, nb = a->seq_length / c->block;
  uint8_t *mask = zt_malloc((size_t)H * nb * nb, "sparse attention layout");
  zt_sparsity_model_layout(c, H, sp->seq_length, a->seq_length, (uint64_t)sp->seed, 1, mask);
  char line[256];
  zt_sparsity_describe(c, mask, H, nb, line, sizeof line);
  zt_attn_layout_from_mask(&buf, mask, H, nb, c->block);
  free(mask);
  zt_log("> %s as the checkpoint's run trained (its ds_config; made for --seq-length %d with --seed %lld%s; causal: "
         "tiles above the diagonal left out)\n", line, sp->seq_length, (long long)sp->seed,
         nb * c->block < sp->seq_length ? ", its first blocks used" : "");
  return &buf;
}

zt_model *zt_eval_load_gpt(zt_args *args, int sequence_parallel, int allow_sparse, zt_eval_placement *p,
                           int *v_valid) {
  saved_sparsity sp;
  memset(&sp, 0, sizeof sp);
  double ckpt_padded = zt_comm_rank() == 0 ? (double)checkpoint_kind(args, &sp) : 0.0;
  zt_allreduce_sum_f64(zt_comm_world(), &ckpt_padded, 1);
  if (zt_comm_size() > 1) zt_broadcast(zt_comm_world(), &sp, sizeof sp, 0);
  const zt_attn_layout_buf *layout = sparse_layout(args, &sp, allow_sparse);
  /* the output layer holds the checkpoint's padded rows (rounded up to this layout's tensor-parallel size), and the
   * scores run over them: the numbers do not depend on the padding this layout would choose */
  const int V_valid = (int)ckpt_padded;
  *v_valid = V_valid;
  const int tpz = args->tensor_model_parallel_size;
  if (V_valid > 0 && args->padded_vocab_size != (V_valid + tpz - 1) / tpz * tpz) {
    zt_log(" > padded vocab: the checkpoint's %d rows (this layout alone would pad to %d); scored over those %d\n",
           V_valid, args->padded_vocab_size, V_valid);
    args->padded_vocab_size = (V_valid + tpz - 1) / tpz * tpz;
  }

  zt_check(args->ds_sequence_parallel_size == 1, "unsupported argument", "--ds-sequence-parallel-size %d: the "
           "evaluation and generation tools run whole sequences on each rank (DeepSpeed's sequence parallelism is "
           "pretrain_gpt's; use data or tensor parallelism here)", args->ds_sequence_parallel_size);
  const zt_eval_placement pl = zt_eval_place(args);
  *p = pl;
  const int tp = args->tensor_model_parallel_size, pp = args->pipeline_model_parallel_size;
  const int dp = args->data_parallel_size;
  const int B = args->micro_batch_size, T = args->seq_length;
  /* fp32 storage on either backend: the GPU computes what the CPU does, to fp32 rounding (--fp16/--bf16 round the
   * weights to those values, as the run held them, on both) */
  const zt_backend *be = zt_pick_backend(NULL, 1);
  zt_model_setup s = {.backend = be, .dtype = ZT_DTYPE_FP32, .micro_batch = B, .seq_length = T,
                      .forward_only = 1, .zero_partitions = 1, .tp_group = pl.tp, .tp_size = tp, .tp_rank = pl.c.tp,
                      .sequence_parallel = sequence_parallel, .pp_group = pl.pp, .pp_size = pp,
                      .pp_rank = pl.c.pp, .vpp = 1, .pp_buffers = 1};
  int *ds_stages = zt_args_pipe_stages(args);
  s.stage_first = ds_stages;
  zt_model_args margs = {.num_layers = args->num_layers, .hidden_size = args->hidden_size,
                               .num_heads = args->num_attention_heads, .ffn_hidden_size = args->ffn_hidden_size,
                               .max_positions = args->max_position_embeddings,
                               .padded_vocab_size = args->padded_vocab_size, .ln_eps = args->layernorm_epsilon,
                               .init_std = args->init_method_std,
                               .untie_embeddings = args->untie_embeddings_and_output_weights,
                               .residual_post_ln = args->apply_residual_connection_post_layernorm,
                               .sparse_attention = layout, .moe = zt_moe_on(&args->moe) ? &args->moe : NULL};
  zt_args_model_variants(args, &margs);
  zt_log("building GPT model ...\n");
  zt_model *m = zt_gpt_create(&margs, &s);
  free(ds_stages); /* read at build only */
  zt_ckpt_load_weights(m, args, pl.c.tp, tp, pl.c.pp, pp, pl.c.dp, dp); /* resharded to this layout */
  return m;
}

int zt_eval_stage_decode(const zt_model *m, const zt_eval_placement *p, zt_lm_decoder *dec, const int32_t *in, int n,
                         int past, int cached, int all, float *logits) {
  if (!m->first) zt_recv(p->pp, m->dt, zt_lm_decoder_input(dec), zt_lm_decoder_stage_elems(dec, n), p->c.pp - 1);
  const int last = zt_lm_decode(dec, in, n, past, cached, all, logits);
  if (!last) zt_send(p->pp, m->dt, zt_lm_decoder_output(dec, n), zt_lm_decoder_stage_elems(dec, n), p->c.pp + 1);
  return last;
}
