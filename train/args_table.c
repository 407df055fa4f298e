/* The Megatron-DeepSpeed flags zerotron knows but does not support yet, grouped by the work they land
 * with (names from megatron/arguments.py and deepspeed.add_config_arguments, odd spellings kept), and
 * the deprecated flags Megatron itself refuses. Used by args.c to refuse them by name. */
#include "train/args_table.h"

#include <stddef.h>

/* Each entry: the work a group of flags lands with (or, after a leading '=', the whole reason they are refused), then
 * its flags separated by single spaces. */
const zt_args_known_group zt_args_known_groups[] = {
  {"mixed-precision variant (fp32 residual, fp16 cross-entropy, fp32 embeddings)",
   "--fp32-residual-connection --fp16-lm-cross-entropy --embedding-weights-in-fp32"},
  {"FP8/Transformer-Engine",
   "--transformer-impl --fp8-e4m3 --fp8-hybrid --no-fp8-wgrad --fp8-margin --fp8-interval "
   "--fp8-amax-history-len --fp8-amax-compute-algo"},
  {"=Megatron-DeepSpeed parses it but never reads it; ZeRO's buckets and reduce-scatter are set in the ds_config's "
   "zero_optimization block (docs/zero.md)",
   "--zero-reduce-scatter --zero-contigious-gradients --zero-reduce-bucket-size --zero-allgather-bucket-size"},
  {"=Megatron-DeepSpeed parses it but never reads it (its zero.Init call passes no pin_memory); the ds_config's "
   "offload_param.pin_memory sets pinned memory (docs/zero.md)", "--use-pin-memory"},
  {"=zerotron keys its dropout and initialization by the sample's position and the parameter, never by the rank (so "
   "every parallel layout trains alike); per-data-parallel-rank random streams are what this flag asks for",
   "--data-parallel-random-init"},
  {"=Megatron-LM's switch-MLP MoE layer, which zerotron does not support (DeepSpeed's MoE layers, --num-experts, are "
   "what Megatron-DeepSpeed's MoE scripts use: docs/moe.md)", "--num-experts-switch"},
  {"=Megatron-DeepSpeed parses it but never does what it says: --scattered-embeddings, --memory-centric-tiled-linear "
   "and --tile-factor are never read, and --split-transformers only doubles the num_checkpoints it passes to "
   "deepspeed.checkpointing.configure; no layer is split or tiled and no memory is saved",
   "--scattered-embeddings --split-transformers --memory-centric-tiled-linear --tile-factor"},
  {"=a flag of Megatron-DeepSpeed's evaluation and generation tools, not of training: evaluate_zeroshot takes "
   "--inference (tasks/eval_harness/evaluate.py's command line) and generate_samples --ds-inference "
   "(docs/evaluate.md, docs/generate.md)", "--ds-inference --inference"},
  {"=a flag of Megatron-DeepSpeed's vision models (ViT, DINO, Swin), which zerotron does not have",
   "--num-classes --img-h --img-w --num-channels --patch-dim --classes-fraction --data-per-class-fraction "
   "--vision-pretraining --vision-pretraining-type --vision-backbone-type --swin-backbone-type --mask-type "
   "--mask-factor --iter-per-epoch --head-lr-mult --dino-local-img-size --dino-local-crops-number "
   "--dino-head-hidden-size --dino-bottleneck-size --dino-freeze-last-layer --dino-norm-last-layer "
   "--dino-warmup-teacher-temp --dino-teacher-temp --dino-warmup-teacher-temp-epochs"},
  {"=a flag of Megatron's Retro (retrieval-enhanced GPT), which zerotron does not have",
   "--retro-workdir --retro-add-retriever --retro-cyclic-train-iters --retro-encoder-layers "
   "--retro-encoder-hidden-dropout --retro-encoder-attention-dropout --retro-num-neighbors "
   "--retro-num-retrieved-chunks --retro-return-doc-ids"},
  {"=a flag of Megatron's REALM/ICT retriever and biencoder tasks, which zerotron does not have",
   "--ict-head-size --biencoder-projection-dim --biencoder-shared-query-context-model --ict-load --bert-load "
   "--titles-data-path --query-in-block-prob --use-one-sent-docs --evidence-data-path "
   "--retriever-report-topk-accuracies --retriever-score-scaling --block-data-path --embedding-path "
   "--indexer-batch-size --indexer-log-interval --retriever-seq-length --bert-embedder-type "
   "--output-bert-embeddings --sample-rate"},
  {"=a flag of Megatron's text-generation server, not of training: run_text_generation_server takes "
   "--max-tokens-to-oom (docs/generate.md)", "--max-tokens-to-oom"},
  {"=Megatron's text-generation server splits a batch above this many tokens into micro-batches to pipeline them; "
   "run_text_generation_server always sends --micro-batch-size rows at a time through the stages (docs/generate.md)",
   "--inference-batch-times-seqlen-threshold"},
  {"=a hook of NVIDIA's ADLR cluster (automatic resubmission), which zerotron does not have; "
   "--exit-duration-in-mins and --exit-signal-handler save and stop a run for a scheduler to resubmit",
   "--adlr-autoresume --adlr-autoresume-interval"},
  {"=a mode for external trainers and exporters (an uninitialized or dataset-only Megatron, ONNX workarounds), which "
   "zerotron's programs do not have", "--lazy-mpu-init --use-dataset-only --onnx-safe"},
  {NULL, NULL},
};

/* Megatron asserts on these itself; we name the replacement. */
const zt_args_deprecated zt_args_deprecated_flags[] = {
  {"--batch-size", "--micro-batch-size and --global-batch-size"},
  {"--warmup", "--lr-warmup-fraction"},
  {"--model-parallel-size", "--tensor-model-parallel-size"},
  {NULL, NULL},
};
