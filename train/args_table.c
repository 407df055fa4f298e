/* The Megatron-DeepSpeed flags zerotron knows but does not support yet, grouped by the work they land
 * with (names from megatron/arguments.py and deepspeed.add_config_arguments, odd spellings kept), and
 * the deprecated flags Megatron itself refuses. Used by args.c to refuse them by name. */
#include "train/args_table.h"

#include <stddef.h>

/* Each entry: the work a group of flags lands with, then its flags separated by single spaces. */
const zt_args_known_group zt_args_known_groups[] = {
  {"mixed-precision",
   "--fp32-residual-connection --no-query-key-layer-scaling --attention-softmax-in-fp32 "
   "--fp16-lm-cross-entropy --embedding-weights-in-fp32"},
  {"FP8/Transformer-Engine",
   "--transformer-impl --fp8-e4m3 --fp8-hybrid --no-fp8-wgrad --fp8-margin --fp8-interval "
   "--fp8-amax-history-len --fp8-amax-compute-algo"},
  {"CUDA kernel-fusion",
   "--no-masked-softmax-fusion --no-bias-gelu-fusion --no-bias-dropout-fusion "
   "--no-gradient-accumulation-fusion --no-persist-layer-norm --no-async-tensor-model-parallel-allreduce "
   "--disable-mem-efficient-ln --use-flash-attn --use-flash-attn-v1 --use-flash-attn-v2 "
   "--use-flash-attn-triton --use-flash-attn-builder"},
  {"DeepSpeed config",
   "--cpu-optimizer --cpu_torch_adam --ds_fused_adam"},
  {"ZeRO",
   "--zero-stage --zero-reduce-scatter --zero-contigious-gradients --zero-reduce-bucket-size "
   "--zero-allgather-bucket-size --remote-device --use-pin-memory --use-distributed-optimizer"},
  {"data-efficiency (curriculum learning)",
   "--return-data-index --repeated-dataloader --train-idx-path --train-desc-path --train-doc-idx-path "
   "--train-sample-idx-path --train-shuffle-idx-path"},
  {"Hugging Face tokenizer", "--trust-remote-code"},
  {"checkpoint",
   "--no-initialization --universal-checkpoint --kill-switch-file"},
  {"3D-parallelism",
   "--standalone-embedding-stage --no-pipeline-parallel "
   "--enable-zbh1-pipeline --enable-zbh1-exact-semantics --no-scatter-gather-tensors-in-pipeline "
   "--use-ring-exchange-p2p --overlap-p2p-communication --DDP-impl --no-contiguous-buffers-in-local-ddp "
   "--data-parallel-random-init --use-cpu-initialization --distributed-backend "
   "--local-rank --local_rank"},
  {"sequence-parallelism",
   "--ds-sequence-parallel-size --ds-sequence-parallel-fpdt "
   "--ds-sequence-parallel-fpdt-chunk-size --ds-sequence-parallel-fpdt-offloading "
   "--force-ds-sequence-parallel"},
  {"MoE",
   "--num-experts --mlp-type --topk --expert-interval --num-experts-switch --moe-expert-parallel-size "
   "--enable-expert-tensor-parallelism --moe-train-capacity-factor --moe-eval-capacity-factor "
   "--moe-min-capacity --disable-moe-token-dropping --moe-loss-coeff --create-moe-param-group "
   "--disable-moe-top2-2nd-expert-sampling --use-tutel"},
  {"knowledge-distillation",
   "--mos --kd --load-teacher --num-layers-teacher --hidden-size-teacher --num-attention-heads-teacher "
   "--num-experts-teacher --kd-alpha-ce --kd-beta-ce --kd-temp --reset-iteration"},
  {"model-variant (rotary, GQA, RMSNorm, SwiGLU)",
   "--num-key-value-heads --use-rotary-position-embeddings --rotary-position-embeddings-theta "
   "--rotary-percent --no-position-embedding --normalization --apply-layernorm-1p "
   "--openai-gelu --squared-relu --swiglu "
   "--disable-bias-linear --init-method-xavier-uniform"},
  {"encoder-decoder (BERT/T5)",
   "--encoder-num-layers --decoder-num-layers --encoder-seq-length --decoder-seq-length "
   "--pipeline-model-parallel-split-rank"},
  {"token-based schedule", "--train-tokens --lr-decay-tokens --lr-warmup-tokens"},
  {"batch-size ramp-up", "--rampup-batch-size"},
  {"weight-decay schedule", "--start-weight-decay --end-weight-decay --weight-decay-incr-style"},
  {"curriculum-learning", "--data-efficiency-curriculum-learning --random-ltd"},
  {"activation-memory",
   "--deepspeed-activation-checkpointing --partition-activations --contigious-checkpointing "
   "--checkpoint-in-cpu --synchronize-each-layer --profile-backward --distribute-checkpointed-activations "
   "--distribute-saved-activations --scattered-embeddings --split-transformers "
   "--memory-centric-tiled-linear --tile-factor --empty-unused-memory-level"},
  {"selective-recompute", "--recompute-activations"},
  {"monitoring",
   "--tensorboard-dir --tensorboard-log-interval --tensorboard-queue-size --log-timers-to-tensorboard "
   "--log-batch-size-to-tensorboard --log-validation-ppl-to-tensorboard "
   "--log-optimizer-states-to-tensorboard --log-memory-to-tensorboard --log-world-size-to-tensorboard "
   "--no-log-learnig-rate-to-tensorboard --log-params-norm --log-num-zeros-in-grad --timing-log-level "
   "--timing-log-option --wandb-project --wandb-exp-name --wandb-save-dir --profile --profile_steps "
   "--profile-ranks"},
  {"inference", "--ds-inference --inference"},
  {NULL, NULL},
};

/* Megatron asserts on these itself; we name the replacement. */
const zt_args_deprecated zt_args_deprecated_flags[] = {
  {"--batch-size", "--micro-batch-size and --global-batch-size"},
  {"--warmup", "--lr-warmup-fraction"},
  {"--model-parallel-size", "--tensor-model-parallel-size"},
  {NULL, NULL},
};
