/* The model side of the evaluation programs (see eval_model.h). */
#include "evaluate/eval_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/ckpt_reader.h"
#include "models/gpt/gpt.h"
#include "runtime/base/error.h"
#include "train/engine.h"

const char *zt_eval_program = "evaluate_zeroshot";

zt_eval_placement zt_eval_place(const zt_args *a) {
  zt_eval_placement p = {.c = {0, 0, 0}, .tp = NULL, .pp = NULL, .dp = zt_comm_world()};
  const int tp = a->tensor_model_parallel_size, pp = a->pipeline_model_parallel_size;
  if (tp == 1 && pp == 1) {
    p.c.dp = zt_comm_rank();
    return p;
  }
  zt_layout l;
  zt_layout_init(&l, zt_comm_size(), tp, pp, 1, 1, a->num_layers);
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

/* A BERT (or other) checkpoint is refused by what it holds, before any shape check; returns the checkpoint's padded
 * vocabulary size. */
static int64_t checkpoint_kind(const zt_args *a) {
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
  const int64_t padded = r.padded_vocab_size;
  zt_ckpt_close(&r);
  return padded;
}

int zt_eval_checkpoint_vocab(const zt_args *a) {
  double v = zt_comm_rank() == 0 ? (double)checkpoint_kind(a) : 0.0;
  zt_allreduce_sum_f64(zt_comm_world(), &v, 1);
  return (int)v;
}

zt_model *zt_eval_load_gpt(zt_args *args, int sequence_parallel, zt_eval_placement *p, int *v_valid) {
  double ckpt_padded = zt_comm_rank() == 0 ? (double)checkpoint_kind(args) : 0.0;
  zt_allreduce_sum_f64(zt_comm_world(), &ckpt_padded, 1);
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
  const zt_model_args margs = {.num_layers = args->num_layers, .hidden_size = args->hidden_size,
                               .num_heads = args->num_attention_heads, .ffn_hidden_size = args->ffn_hidden_size,
                               .max_positions = args->max_position_embeddings,
                               .padded_vocab_size = args->padded_vocab_size, .ln_eps = args->layernorm_epsilon,
                               .init_std = args->init_method_std,
                               .untie_embeddings = args->untie_embeddings_and_output_weights,
                               .residual_post_ln = args->apply_residual_connection_post_layernorm};
  zt_log("building GPT model ...\n");
  zt_model *m = zt_gpt_create(&margs, &s);
  zt_train_state st;
  memset(&st, 0, sizeof st);
  st.args = args;
  st.ds_config_path = "";
  st.model = m;
  st.tp_rank = pl.c.tp;
  st.tp_size = tp;
  st.pp_rank = pl.c.pp;
  st.pp_size = pp;
  st.dp_rank = pl.c.dp;
  st.dp_size = dp;
  st.half_dtype = args->bf16 ? ZT_DTYPE_BF16 : args->fp16 ? ZT_DTYPE_FP16 : ZT_DTYPE_FP32;
  st.part_lo = 0;
  st.part_hi = m->flat;
  zt_ckpt_start(&st); /* the weights, resharded to this layout (and rounded to --fp16/--bf16 as the run held them) */

  return m;
}
