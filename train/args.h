/* Megatron-compatible command-line arguments for pretrain_gpt (and the later drivers):
 * names and defaults of megatron/arguments.py, parsing, validation with clear errors before any
 * allocation, the closest-name suggestion for unknown flags, and Megatron's argument summary. */
#ifndef ZT_ARGS_H
#define ZT_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "models/model.h"
#include "models/moe/moe_config.h"

typedef enum { ZT_LR_DECAY_LINEAR = 0, ZT_LR_DECAY_COSINE, ZT_LR_DECAY_CONSTANT, ZT_LR_DECAY_INVSQRT } zt_lr_decay_style;
typedef enum { ZT_OPTIMIZER_ADAM = 0, ZT_OPTIMIZER_SGD } zt_optimizer_kind;
typedef enum { ZT_RECOMPUTE_NONE = 0, ZT_RECOMPUTE_FULL, ZT_RECOMPUTE_SELECTIVE } zt_recompute_granularity;

typedef struct {
  int n;
  const char *const *v;
} zt_strlist;

typedef struct {
  /* model shape (--num-layers, --hidden-size, ...). Unset ints are -1 after defaults are applied
   * unless noted; derived values are filled in by zt_args_finalize. */
  int num_layers;
  int hidden_size;
  int ffn_hidden_size;              /* default 4 * hidden_size */
  int num_attention_heads;
  int kv_channels;                  /* default hidden_size / heads; other values refused */
  int max_position_embeddings;
  int make_vocab_size_divisible_by; /* 128 */
  float layernorm_epsilon;          /* 1e-5 */
  int untie_embeddings_and_output_weights; /* 0: output layer tied to word embeddings */
  int apply_residual_connection_post_layernorm; /* the residual adds take the LayerNorm output (original BERT) */
  /* the Llama-style variants (docs/gpt.md "Llama-style models"): --normalization layernorm|rmsnorm (normalization: 0
   * layernorm, 1 rmsnorm), --swiglu, --disable-bias-linear (add_bias_linear 0), --use-rotary-position-embeddings with
   * --rotary-position-embeddings-theta (rope_theta, 10000) and --rotary-percent (1.0), --no-position-embedding
   * (add_position_embedding 0, also implied by rotary), --no-query-key-layer-scaling (apply_query_key_layer_scaling 0:
   * the same numbers here, the softmax being fp32 either way) */
  int normalization, swiglu, add_bias_linear, use_rotary_position_embeddings, rope_theta, add_position_embedding;
  int apply_query_key_layer_scaling;
  float rotary_percent;
  /* the other model variants (docs/gpt.md "Other model variants"): --openai-gelu, --squared-relu (the MLP's
   * activation), --apply-layernorm-1p (zero-centred LayerNorm weights), --init-method-xavier-uniform */
  int openai_gelu, squared_relu, apply_layernorm_1p, init_method_xavier_uniform;
  int num_key_value_heads;          /* --num-key-value-heads: grouped-query attention; -1 None (= the heads) */
  int bert_binary_head;             /* pretrain_bert: 1 (default), 0 with --bert-no-binary-head */
  /* finetune_bert (not flags: the task sets them): the classification head's outputs and the rows a sample spans
   * (zt_model_args' cls_classes, cls_choices); 0 for pretraining */
  int finetune_classes, finetune_choices, finetune_regression;
  float mask_prob, short_seq_prob;  /* pretrain_bert and pretrain_t5: --mask-prob 0.15, --short-seq-prob 0.1 */
  int seq_length;
  /* Megatron's encoder-decoder flags: --encoder-num-layers and --encoder-seq-length are other names of --num-layers and
   * --seq-length (one of each pair; derived equal after parsing); the decoder's are pretrain_t5's (-1 None: the
   * decoder's layers default to --num-layers; its length is required) */
  int encoder_num_layers, decoder_num_layers, encoder_seq_length, decoder_seq_length;
  int vocab_size;                   /* --vocab-size; with --mock-data default 50257 (GPT-2) */
  int padded_vocab_size;            /* derived: multiple of make_vocab_size_divisible_by * TP */

  /* regularization and init */
  float attention_dropout;          /* 0.1 */
  float hidden_dropout;             /* 0.1 */
  float weight_decay;               /* 0.01 */
  /* Megatron's weight-decay increment: --weight-decay-incr-style (zt_wd_style: constant, linear, cosine) from
   * --start-weight-decay to --end-weight-decay over the run; after parsing both hold --weight-decay with constant */
  double start_weight_decay, end_weight_decay;
  int weight_decay_incr_style;
  float clip_grad;                  /* 1.0; 0 disables */
  float adam_beta1, adam_beta2, adam_eps; /* 0.9, 0.999, 1e-8 */
  float sgd_momentum;               /* 0.9 */
  zt_optimizer_kind optimizer;      /* --optimizer {adam, sgd}; adam is decoupled (AdamW) as in Megatron */
  float init_method_std;            /* 0.02 */
  uint64_t seed;                    /* 1234 */

  /* batch and iterations */
  int micro_batch_size;
  int global_batch_size;            /* default micro_batch_size * data_parallel_size */
  int64_t train_iters;              /* -1 unset */
  int64_t train_samples;            /* -1 unset */
  int num_microbatches;             /* derived: gbs / (mbs * dp) */
  zt_strlist rampup_batch_size;     /* --rampup-batch-size <start> <increment> <samples> (train/rampup.h); v NULL: off */

  /* learning-rate schedule (Megatron counts it in samples) */
  double lr;                        /* required */
  double min_lr;                    /* 0.0 */
  zt_lr_decay_style lr_decay_style; /* linear */
  int64_t lr_decay_iters;           /* -1 unset */
  int64_t lr_decay_samples;         /* -1 unset */
  int64_t lr_warmup_iters;          /* 0 */
  int64_t lr_warmup_samples;        /* 0 */
  double lr_warmup_fraction;        /* -1 unset */

  /* mixed precision (docs/mixed_precision.md) */
  int fp16, bf16;                   /* --fp16 / --bf16: half-precision weights with fp32 masters */
  double loss_scale;                /* --loss-scale: static scale; <= 0 unset (dynamic) */
  double initial_loss_scale;        /* 2**32 */
  double min_loss_scale;            /* 1.0 */
  int loss_scale_window;            /* 1000 */
  int hysteresis;                   /* 2 */
  int accumulate_allreduce_grads_in_fp32; /* forced on by --bf16, as Megatron does */

  /* activation recompute */
  zt_recompute_granularity recompute_granularity; /* --checkpoint-activations or --recompute-granularity full;
                                                   * selective: --recompute-granularity selective or
                                                   * --recompute-activations */
  int recompute_activations;        /* --recompute-activations (folded into recompute_granularity) */
  int recompute_method_uniform;     /* --recompute-method {uniform, block}: 1 uniform (default), 0 block */
  int recompute_num_layers;         /* 1; --checkpoint-num-layers is its old name */

  /* parallelism: tensor and pipeline parallelism (clipped to the world size as Megatron clips them) */
  int tensor_model_parallel_size;
  int sequence_parallel;            /* --sequence-parallel (Megatron's; turned off when TP is 1) */
  int pipeline_model_parallel_size;
  int pipeline_model_parallel_split_rank; /* T5: the first decoder stage; -1 None */
  int num_layers_per_virtual_pipeline_stage; /* -1 unset; set: Megatron's interleaved schedule */
  int virtual_pipeline_model_parallel_size;  /* derived: num_layers / (pp * that); -1 without interleaving */
  int data_parallel_size;           /* derived: world / (tp * pp) */

  /* data (lists point into argv) */
  int mock_data;                    /* --mock-data: synthetic patterned token stream */
  zt_strlist data_path;             /* --data-path: prefix, or weight prefix pairs (with --aml-data-download-path DIR:
                                     * DIR/prefix) */
  const char *aml_data_download_path; /* --aml-data-download-path, or NULL */
  zt_strlist train_data_path, valid_data_path, test_data_path;
  const char *split;                /* "969, 30, 1" */
  const char *data_cache_path;      /* NULL */
  int mmap_warmup;
  int data_impl;                    /* 0 mmap, 1 infer (both read Megatron's mmap format) */
  int dataloader_type;              /* 0 single, 1 cyclic (data/pretraining_sampler.h) */
  int data_sharding;                /* 1; --no-data-sharding 0 (cyclic: each rank shuffles its own bucket) */
  int trust_remote_code;            /* --trust-remote-code (HFTokenizer; recorded) */
  int repeated_dataloader;          /* --repeated-dataloader: a split that runs out is replayed from the resume point */
  const char *vocab_file, *merge_file, *tokenizer_model; /* NULL */
  int tokenizer_type;               /* zt_tokenizer_kind; GPT2BPETokenizer by default */
  int vocab_size_given;             /* --vocab-size was on the command line */
  int vocab_extra_ids;              /* 0 */
  int reset_position_ids, reset_attention_mask, eod_mask_loss;
  int64_t train_data_exact_num_epochs; /* -1 unset */
  int num_workers;                  /* Megatron's 2; any N >= 0: batches are read in the training process */
  int return_data_index;            /* --return-data-index: recorded (only Megatron's data analyzer reads the index) */

  /* DeepSpeed */
  int deepspeed;                    /* --deepspeed */
  const char *deepspeed_config;     /* --deepspeed_config (or its old name --deepscale_config) */

  /* Megatron-DeepSpeed's script flags (docs/arguments.md): token-based length and schedule, the mirrors of
   * ds_config/layout settings, DeepSpeed activation checkpointing, and knobs recorded for the argument dump */
  int64_t train_tokens;             /* -1 None: training also stops once the consumed tokens reach it */
  int64_t lr_warmup_tokens;         /* -1 None: when set, warmup counts consumed tokens */
  int64_t lr_decay_tokens;          /* -1 None: when set, decay counts consumed tokens */
  int zero_stage;                   /* Megatron-DS's default 1 (printed 1.0); given: must equal the ds_config's */
  int data_efficiency_curriculum_learning; /* --data-efficiency-curriculum-learning: the data sampler (train/data_sampler.h) */
  int random_ltd;                   /* --random-ltd: the ds_config's random_ltd block applies (train/random_ltd.h) */
  int no_pipeline_parallel;         /* DeepSpeed's pipeline engine off: --pipeline-model-parallel-size must be 1 */
  int remote_device;                /* --remote-device: 0 none, 1 cpu, 2 nvme (deepspeed.zero.Init's remote_device) */
  int standalone_embedding_stage;   /* Megatron's embedding-only stage 0 (zt_args_pipe_stages) */
  int enable_zbh1_pipeline;         /* the zero-bubble H1 schedule (train/schedule.c, runtime/ops/wgrad_store.h) */
  int enable_zbh1_exact_semantics;  /* ZB-H1 with every weight pass in micro-batch order (bitwise 1F1B) */
  int ds_sequence_parallel_size;    /* DeepSpeed-Ulysses sequence parallelism over this many ranks (1: off) */
  int force_ds_sequence_parallel;   /* Megatron-DeepSpeed's distributed attention at size 1: recorded (no effect) */
  int ds_sequence_parallel_fpdt;    /* DeepSpeed FPDT: Ulysses in chunks (models/transformer/ulysses.h) */
  int ds_sequence_parallel_fpdt_chunk_size; /* FPDT's chunk of the whole sequence (tokens) */
  int ds_sequence_parallel_fpdt_offloading; /* FPDT's host offload of the attention's chunks (CPU runs: in place) */
  int deepspeed_activation_checkpointing; /* with --deepspeed: the flags below replace the ds_config's block */
  int partition_activations, contigious_checkpointing, checkpoint_in_cpu, synchronize_each_layer, profile_backward;
  /* Megatron's CheckpointFunction with distribute_saved_activations: each tensor-parallel rank keeps 1/TP of every
   * checkpointed layer input (the old flag with --checkpoint-activations, the new with --recompute-granularity full) */
  int distribute_checkpointed_activations, distribute_saved_activations;
  int distribute_activations;       /* derived: one of them takes effect (no DeepSpeed checkpointing, one stage) */
  int masked_softmax_fusion, bias_gelu_fusion, bias_dropout_fusion, gradient_accumulation_fusion; /* 1; --no-* 0 */
  int use_flash_attn_v1, use_flash_attn_v2, use_flash_attn_triton, use_flash_attn_builder; /* recorded (exact attention) */
  int mem_efficient_ln;             /* 1; --disable-mem-efficient-ln 0 (recorded) */
  int no_persist_layer_norm;        /* recorded only (a CUDA LayerNorm kernel choice) */
  int async_tensor_model_parallel_allreduce; /* 1; 0 with --no-async-..., --sequence-parallel or --deepspeed */
  int distributed_backend;          /* 0 nccl, 1 gloo (recorded: collectives are MPI on CPU, NCCL on GPU) */
  int local_rank;                   /* -1 None; --local_rank from the deepspeed launcher, recorded */
  const char *train_desc_path, *train_doc_idx_path, *train_sample_idx_path, *train_shuffle_idx_path; /* NULL */
  const char *train_idx_path;       /* --train-idx-path (BERT, T5): the training samples mapping; NULL */
  /* Mixture of Experts (docs/moe.md): a model whose every --num-experts entry is 1 has no MoE layer, so the others
   * change nothing */
  zt_strlist num_experts;           /* --num-experts (nargs '+', ints): empty = Megatron's default [1] */
  int mlp_type;                     /* 0 standard, 1 residual (Residual MoE) */
  int noisy_gate_policy;            /* --noisy-gate-policy: zt_moe_noise (None) */
  int *moe_layer_experts;           /* derived: [num_layers] experts of each layer (1: dense) */
  zt_moe_config moe;                /* derived: the model's MoE flags (num_experts points at moe_layer_experts) */
  int topk, expert_interval, moe_expert_parallel_size, moe_min_capacity; /* 1, 2, 1, 4 */
  double moe_train_capacity_factor, moe_eval_capacity_factor, moe_loss_coeff; /* 1.0, 1.0, 0.1 */
  int create_moe_param_group, moe_token_dropping, moe_top2_2nd_expert_sampling; /* False, True, True */
  int use_tutel, enable_expert_tensor_parallelism; /* False */
  /* knowledge distillation and Mixture-of-Students (docs/moe.md): Megatron-DeepSpeed's _add_distillation_args */
  int mos, kd;                      /* --mos, --kd: the teacher's KD term in training ('mos loss' / 'kd loss') */
  const char *load_teacher;         /* --load-teacher: the teacher's checkpoint (any saved TP/PP/DP layout) */
  int num_layers_teacher, hidden_size_teacher, num_attention_heads_teacher; /* -1 None */
  zt_strlist num_experts_teacher;   /* --num-experts-teacher (nargs '+', ints): empty = [1] */
  double kd_alpha_ce, kd_beta_ce, kd_temp; /* 1, 1, 1.0 (alpha is read and unused, as in Megatron-DeepSpeed) */
  int reset_iteration;              /* --reset-iteration: after --load, iteration and consumed samples start at 0 */
  int *teacher_layer_experts;       /* derived: [num_layers_teacher] experts of each teacher layer */
  zt_moe_config teacher_moe;        /* derived: the teacher's MoE flags (the student's, with its experts) */
  int teacher_ffn_hidden_size;      /* derived: the teacher's MLP width (see check_kd_flags) */
  int universal_checkpoint;         /* --universal-checkpoint: --load follows latest_universal when it names ours */
  int load_universal;               /* the flag, or the ds_config's checkpoint.load_universal (set by the engine) */
  /* DeepSpeed's checkpoint tag validation at each save (set by the engine from the ds_config's
   * checkpoint.tag_validation): 0 none (no --deepspeed, or Ignore), 1 Warn, 2 Fail */
  int ckpt_tag_validation;
  int cpu_optimizer, cpu_torch_adam, ds_fused_adam; /* Megatron-DS's client optimizer choice (train/engine.c) */

  /* checkpoints (docs/checkpoints.md) */
  const char *save, *load, *load_tag; /* --save, --load, --load-tag: NULL */
  int save_interval;                /* -1 None: save at the end of training only */
  int no_save_optim, no_save_rng, no_load_optim, no_load_rng;
  int finetune;                     /* load weights only; iteration and consumed samples start at 0 */
  int use_checkpoint_args;          /* model shape from the --load checkpoint's saved arguments */
  int exit_on_missing_checkpoint;
  int exit_interval;                /* -1 None */
  int exit_duration_in_mins;        /* -1 None */
  int exit_signal_handler;          /* SIGTERM: save (with --save) and exit */
  const char *kill_switch_file;     /* --kill-switch-file: exit when it exists (at start, after each iteration) */
  int perform_initialization;       /* 1; --no-initialization 0: the weights wait for the --load checkpoint */
  /* recorded implementation knobs (docs/arguments.md): --DDP-impl (0 local, 1 torch), local DDP's contiguous
   * buffers (1; --no-contiguous-buffers-in-local-ddp 0), --use-cpu-initialization, --empty-unused-memory-level */
  int ddp_impl, use_contiguous_buffers_in_local_ddp, use_cpu_initialization, empty_unused_memory_level;
  int use_distributed_optimizer;    /* Megatron's DistributedOptimizer (no --deepspeed): ZeRO stage 1's partitions */
  /* more recorded knobs: --attention-softmax-in-fp32 (the softmax is fp32 anyway), and the pipeline's p2p variants */
  int attention_softmax_in_fp32, scatter_gather_tensors_in_pipeline, use_ring_exchange_p2p, overlap_p2p_comm;
  int no_load_lr_state;             /* load the optimizer but not the learning-rate scheduler */
  int override_opt_param_scheduler, use_checkpoint_opt_param_scheduler; /* Megatron's scheduler check */

  /* logging and validation */
  int log_interval;                 /* 100 */
  int eval_interval;                /* 1000 */
  int eval_iters;                   /* 100 */
  int skip_train;                   /* --skip-train: only evaluate */

  /* Megatron's TensorBoard writer and timers (train/tb_log.c, docs/monitors.md) */
  const char *tensorboard_dir;      /* NULL: no event files */
  int profile;                      /* --profile: 0 off, 1 pt, 2 pt-full (runtime/profile/trace.h) */
  const char *profile_steps;        /* --profile_steps "START,END" (default "2,3") */
  zt_strlist profile_ranks;         /* --profile-ranks: empty = every rank */
  int profile_start, profile_end;   /* parsed --profile_steps (0 when --profile is off) */
  int tensorboard_log_interval;     /* 1 */
  int tensorboard_queue_size;       /* 1000: events held before a write forces a flush */
  int log_timers_to_tensorboard, log_batch_size_to_tensorboard, log_validation_ppl_to_tensorboard;
  int log_learning_rate_to_tensorboard, log_loss_scale_to_tensorboard; /* 1; --no-log-... clear them */
  int log_optimizer_states_to_tensorboard, log_memory_to_tensorboard, log_world_size_to_tensorboard;
  int log_params_norm, log_num_zeros_in_grad; /* also printed on the log line */
  int timing_log_level;             /* 0: iteration time only; 1: + forward-backward, optimizer, ...; 2: + compute */
  int timing_log_option;            /* 0 max, 1 minmax (default), 2 all: the printed timers block */
  int barrier_with_L1_time;         /* 1; --no-barrier-with-level-1-timing */
  const char *wandb_project, *wandb_exp_name, *wandb_save_dir; /* only "" (Megatron's off) is accepted */
  int log_eta;                      /* ours: elapsed time and ETA at the end of the log line */

  /* hangs: start-up agreements and the step watchdog */
  double distributed_timeout_minutes; /* Megatron's flag, 10: the wait of every start-up agreement across ranks */
  double step_timeout_seconds;      /* 0 (off): a training step running longer ends the job (the watchdog) */
  unsigned char given_[256];        /* which flags were on the command line (zt_args_given) */
} zt_args;

/* The model family of the program parsing the flags ("gpt" by default, "bert" for pretrain_bert; set before
 * zt_args_parse): BERT's default tokenizer is BertWordPieceLowerCase, and its data flags are refused elsewhere. */
extern const char *zt_args_model;
/* The data part of --help's usage line where the driver's differs from its family's (finetune_llama), or NULL. */
extern const char *zt_args_data_usage;
/* The pipeline stages' layers where they are not Megatron's even split (with stages and no interleaved schedule), as
 * a malloc'ed [pp + 1], stage s holding layers [first[s], first[s + 1]) (an encoder-decoder: its encoder's), or NULL:
 * - GPTModelPipe's: under --deepspeed pretrain_gpt (and the evaluation programs) build Megatron-DeepSpeed's
 *   GPTModelPipe, whose layers DeepSpeed partitions by type:transformer (zt_layout_ds_partition: 2 items before the
 *   layers, the MoE loss with MoE layers, the final norm, the output layer and float16_to_fp32 with --fp16/--bf16
 *   after them), so they need not divide over the stages; refuses a partition that leaves a stage without a layer;
 * - --standalone-embedding-stage: stage 0 holds the embedding alone, the (encoder's) layers are split evenly over
 *   stages 1 .. pp - 1 (T5: 1 .. split rank - 1; the argument checks made them divide). */
int *zt_args_pipe_stages(const zt_args *a);
/* Whether the run is Megatron-DeepSpeed's GPTModelPipe under DeepSpeed's PipelineEngine: pretrain_gpt with --deepspeed
 * and pipeline stages (its partition print and pipeline log line; the partition itself without interleaving). */
int zt_args_gpt_model_pipe(const zt_args *a);

/* Parses argv (argv[0] is the program name) into args with Megatron's defaults, then validates and
 * derives values for a world of `world_size` processes. Any error (unknown flag, with the closest
 * valid name; a known Megatron flag we do not support yet; a bad value; inconsistent values) is
 * reported through zt_fatal before anything is allocated. --help prints usage and exits 0. */
void zt_args_parse(zt_args *args, int argc, char **argv, int world_size);
/* The start of the tools with their own flags (generate_samples, evaluate_zeroshot, finetune_bert,
 * hf2megads_weight_converter): --help or -h anywhere prints usage() and returns 1 (the caller exits 0, before MPI
 * starts); otherwise OpenBLAS's thread setup (which may re-execute the program) and MPI, and returns 0. */
int zt_program_start(int *argc, char ***argv, void (*usage)(void));
/* Under MPI with more than one rank, zt_args_parse ends with this check (runtime/comm zt_comm_agree within
 * --distributed-timeout-minutes): every rank must have parsed the same values (MPMD launches with per-rank
 * --lr, --seed or model flags would train diverged replicas); paths, which may differ between nodes, are not
 * compared. A mismatch dies naming the ranks and the first differing flag with both values. */
void zt_args_check_across_ranks(const zt_args *args);

/* Prints Megatron's "------------------------ arguments ------------------------" block: every
 * argument, sorted by name, as "  name ....... value" with Python's formatting of values. */
void zt_args_print(const zt_args *args);
/* The same summary as "name value" lines (malloc'd), as checkpoints store it. */
char *zt_args_summary(const zt_args *args);
/* The value of one argument (Megatron's name, e.g. "num_layers") in such a summary into buf; 0 when absent. */
int zt_args_summary_value(const char *summary, const char *name, char *buf, size_t n);
/* --use-checkpoint-args reads the saved summary of the --load checkpoint through this function (root, tag or NULL
 * for `latest`; a malloc'd summary, or NULL when there is no checkpoint). checkpoints/ sits above train/, so the
 * driver sets it (to zt_ckpt_saved_args) before parsing; left NULL, the flag is refused. */
extern char *(*zt_args_checkpoint_reader)(const char *root, const char *tag);
/* evaluate_zeroshot's lm-evaluation-harness command line (Megatron-DeepSpeed's tasks/eval_harness/evaluate.py) sets
 * this before parsing: 1 makes --use-checkpoint-args take every model argument from the checkpoint, over what the
 * command line gives (the scripts' -1 placeholders) but for the tokenizer and the parallel sizes, the MoE layers and
 * the precision (the weights' rounding) included. 0: Megatron's load_args_from_checkpoint. */
extern int zt_args_checkpoint_overrides;

/* 1 if `flag` (e.g. "--clip-grad") was given on the command line. */
int zt_args_given(const zt_args *args, const char *flag);
/* Whether a flag is one of the table's (1), refused by name as deprecated or not supported (2), or unknown (0). */
int zt_args_flag_status(const char *name);

/* Sets the vocabulary size from the tokenizer (named in messages) and recomputes the padded size;
 * a --vocab-size that disagrees is refused with both numbers. */
void zt_args_set_vocab_size(zt_args *args, int vocab_size, const char *tokenizer_name);
/* The Llama-style variants of the parsed flags into a model's architecture (zt_model_args). */
void zt_args_model_variants(const zt_args *args, zt_model_args *m);

#endif
