/* Loading only a model's weights from a checkpoint (see checkpoint.h's zt_ckpt_load_weights). */
#include <string.h>

#include "checkpoints/checkpoint.h"

void zt_ckpt_load_weights(zt_model *m, const zt_args *a, int tp_rank, int tp_size, int pp_rank, int pp_size,
                          int dp_rank, int dp_size) {
  zt_train_state st;
  memset(&st, 0, sizeof st);
  st.args = a;
  st.ds_config_path = "";
  st.model = m;
  st.tp_rank = tp_rank;
  st.tp_size = tp_size;
  st.pp_rank = pp_rank;
  st.pp_size = pp_size;
  st.dp_rank = dp_rank;
  st.dp_size = dp_size;
  st.half_dtype = a->bf16 ? ZT_DTYPE_BF16 : a->fp16 ? ZT_DTYPE_FP16 : ZT_DTYPE_FP32;
  st.part_lo = 0;
  st.part_hi = m->flat;
  st.random_ltd_layer_tokens = -1;
  st.data_sampler_step = -1;
  zt_ckpt_start(&st); /* the weights, resharded to this layout and rounded to --fp16/--bf16 as the run holds them */
}
