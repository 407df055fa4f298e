/* Megatron-compatible command line: a table of the supported flags (type, field, default, help),
 * refusal by name of the Megatron-DeepSpeed flags we do not support yet (args_table.c), strict value
 * parsing, cross-checks before anything is allocated, and Megatron's argument summary. */
#include "train/args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/gpt_dataset.h"
#include "data/tokenizer/tokenizer.h"
#include "runtime/base/blas.h"
#include "runtime/base/edit_distance.h"
#include "runtime/base/error.h"
#include "runtime/base/pyfmt.h"
#include "runtime/comm/comm.h"
#include "runtime/ops/ops.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/parallel/parallel_state.h"
#include "train/args_table.h"
#include "train/rampup.h"

/* Enum fields are written through int pointers by the table. */
_Static_assert(sizeof(zt_lr_decay_style) == sizeof(int), "enum size");
_Static_assert(sizeof(zt_optimizer_kind) == sizeof(int), "enum size");
_Static_assert(sizeof(zt_recompute_granularity) == sizeof(int), "enum size");

/* ---- the supported flags ------------------------------------------------------------------------ */

typedef enum { F_INT, F_I64, F_U64, F_FLOAT, F_DOUBLE, F_TRUE, F_CONST, F_CHOICE, F_STR, F_LIST, F_HELP } flag_kind;

typedef struct {
  const char *name;
  int value;       /* < 0: a Megatron choice we do not support yet */
  const char *why; /* for those: why, and what to use instead */
} choice;

typedef struct {
  const char *name;
  flag_kind kind;
  size_t offset;
  const choice *choices; /* F_CHOICE: the valid values; F_CONST: choices[0].value is stored */
  const char *group;
  const char *deflt;
  const char *help;
} flag;

static const choice k_norms[] = {{"layernorm", 0, NULL}, {"rmsnorm", 1, NULL}, {NULL, 0, NULL}};
static const choice k_remote_devices[] = {{"none", 0, NULL}, {"cpu", 1, NULL}, {"nvme", 2, NULL}, {NULL, 0, NULL}};
static const choice k_optimizers[] = {{"adam", ZT_OPTIMIZER_ADAM, NULL}, {"sgd", ZT_OPTIMIZER_SGD, NULL}, {NULL, 0, NULL}};
static const choice k_decay_styles[] = {{"constant", ZT_LR_DECAY_CONSTANT, NULL}, {"linear", ZT_LR_DECAY_LINEAR, NULL},
                                        {"cosine", ZT_LR_DECAY_COSINE, NULL},
                                        {"inverse-square-root", ZT_LR_DECAY_INVSQRT, NULL}, {NULL, 0, NULL}};
static const choice k_wd_styles[] = {{"constant", ZT_WD_CONSTANT, NULL}, {"linear", ZT_WD_LINEAR, NULL},
                                     {"cosine", ZT_WD_COSINE, NULL}, {NULL, 0, NULL}};
static const choice k_granularity[] = {
    {"full", ZT_RECOMPUTE_FULL, NULL},
    {"selective", ZT_RECOMPUTE_SELECTIVE, NULL},
    {NULL, 0, NULL}};
static const choice k_tokenizers[] = {
    {"GPT2BPETokenizer", ZT_TOK_GPT2BPE, NULL},
    {"BertWordPieceLowerCase", ZT_TOK_BERT_LOWER, NULL},
    {"BertWordPieceCase", ZT_TOK_BERT_CASE, NULL},
    {"SentencePieceTokenizer", ZT_TOK_SENTENCEPIECE, NULL},
    {"GPTSentencePieceTokenizer", ZT_TOK_GPT_SENTENCEPIECE, NULL},
    {"NullTokenizer", ZT_TOK_NULL, NULL},
    {"HFTokenizer", ZT_TOK_HF, NULL},
    {NULL, 0, NULL}};
static const choice k_data_impl[] = {{"mmap", 0, NULL}, {"infer", 1, NULL}, {NULL, 0, NULL}};
static const choice k_dataloader[] = {
    {"single", 0, NULL},
    {"cyclic", 1, NULL},
    {NULL, 0, NULL}};
static const choice k_recompute_methods[] = {{"uniform", 1, NULL}, {"block", 0, NULL}, {NULL, 0, NULL}};
static const choice k_full[] = {{"full", ZT_RECOMPUTE_FULL, NULL}, {NULL, 0, NULL}};
static const choice k_off[] = {{"", 0, NULL}, {NULL, 0, NULL}};
static const choice k_backends[] = {
    {"nccl", 0, NULL}, {"gloo", 1, NULL},
    {"ccl", -1, "Intel oneCCL is not one of zerotron's backends (collectives run over MPI for host tensors and NCCL "
                "for GPU tensors); use --distributed-backend nccl or gloo"},
    {"hccl", -1, "Habana HCCL is not one of zerotron's backends (collectives run over MPI for host tensors and NCCL "
                 "for GPU tensors); use --distributed-backend nccl or gloo"},
    {NULL, 0, NULL}};
static const choice k_ddp[] = {
    {"local", 0, NULL}, {"torch", 1, NULL},
    {"FSDP", -1, "PyTorch's FSDP is not one of zerotron's data-parallel implementations (DeepSpeed's ZeRO-3, the "
                 "ds_config's zero_optimization.stage 3, shards parameters, gradients and optimizer state)"},
    {NULL, 0, NULL}};
static const choice k_profile[] = {{"pt", 1, NULL}, {"pt-full", 2, NULL}, {NULL, 0, NULL}};
static const choice k_mlp_types[] = {{"standard", 0, NULL}, {"residual", 1, NULL}, {NULL, 0, NULL}};
static const choice k_noisy_gate[] = {{"None", ZT_MOE_NOISE_NONE, NULL}, {"Jitter", ZT_MOE_NOISE_JITTER, NULL},
                                      {"RSample", ZT_MOE_NOISE_RSAMPLE, NULL}, {NULL, 0, NULL}};
static const choice k_timing_options[] = {{"max", 0, NULL}, {"minmax", 1, NULL}, {"all", 2, NULL}, {NULL, 0, NULL}};

#define OFF(field) offsetof(zt_args, field)
#define SHAPE "model shape"
#define REG "regularization and initialization"
#define OPT "optimizer"
#define BATCH "batch size and iterations"
#define LR "learning-rate schedule"
#define RECOMP "activation recompute"
#define MIXP "mixed precision"
#define PAR "parallelism"
#define DATA "data"
#define LOG "logging and validation"
#define DS "DeepSpeed (docs/ds_config.md)"
#define CKPT "checkpoints (docs/checkpoints.md)"
#define HANG "timeouts (hangs)"
#define NOOP "implementation knobs (recorded in the argument dump; docs/arguments.md)"
#define TB "TensorBoard and timers (docs/monitors.md)"
#define MOE "Mixture of Experts (docs/moe.md)"
#define KD "knowledge distillation and Mixture-of-Students (docs/moe.md)"

/* Ordered by help group. */
static const flag k_flags[] = {
  {"--num-layers", F_INT, OFF(num_layers), NULL, SHAPE, "None (required)", "Number of transformer layers."},
  {"--hidden-size", F_INT, OFF(hidden_size), NULL, SHAPE, "None (required)", "Transformer hidden size."},
  {"--ffn-hidden-size", F_INT, OFF(ffn_hidden_size), NULL, SHAPE, "4 x hidden size", "Hidden size of the MLP."},
  {"--num-attention-heads", F_INT, OFF(num_attention_heads), NULL, SHAPE, "None (required)",
   "Number of attention heads."},
  {"--kv-channels", F_INT, OFF(kv_channels), NULL, SHAPE, "hidden size / heads",
   "Projection size per attention head (only the default is supported)."},
  {"--max-position-embeddings", F_INT, OFF(max_position_embeddings), NULL, SHAPE, "None (required)",
   "Number of learned positions; must be >= --seq-length."},
  {"--make-vocab-size-divisible-by", F_INT, OFF(make_vocab_size_divisible_by), NULL, SHAPE, "128",
   "Pad the vocabulary to a multiple of this times the tensor-parallel size."},
  {"--layernorm-epsilon", F_FLOAT, OFF(layernorm_epsilon), NULL, SHAPE, "1e-05", "LayerNorm epsilon."},
  {"--untie-embeddings-and-output-weights", F_TRUE, OFF(untie_embeddings_and_output_weights), NULL, SHAPE,
   "False", "Give the output layer its own weights instead of the word embeddings."},
  {"--apply-residual-connection-post-layernorm", F_TRUE, OFF(apply_residual_connection_post_layernorm), NULL, SHAPE,
   "False", "Original BERT residual order: each residual add takes the LayerNorm output."},
  {"--normalization", F_CHOICE, OFF(normalization), k_norms, SHAPE, "layernorm",
   "layernorm, or rmsnorm (Llama's: x / sqrt(mean x^2 + eps) * weight, no bias) for every norm."},
  {"--swiglu", F_TRUE, OFF(swiglu), NULL, SHAPE, "False",
   "SwiGLU MLP: dense_h_to_4h has 2 x --ffn-hidden-size outputs, silu(first half) * second half."},
  {"--disable-bias-linear", F_CONST, OFF(add_bias_linear), k_off, SHAPE, "biases on",
   "No biases in the attention's and the MLP's linear layers."},
  {"--use-rotary-position-embeddings", F_TRUE, OFF(use_rotary_position_embeddings), NULL, SHAPE, "False",
   "Rotary position embeddings on the queries and keys (and no learned position embeddings)."},
  {"--rotary-position-embeddings-theta", F_INT, OFF(rope_theta), NULL, SHAPE, "10000", "Rotary base theta."},
  {"--rotary-percent", F_FLOAT, OFF(rotary_percent), NULL, SHAPE, "1.0",
   "Fraction of each head's dimensions that rotate (int(head size x percent), even)."},
  {"--num-key-value-heads", F_INT, OFF(num_key_value_heads), NULL, SHAPE, "None (the heads)",
   "Grouped-query attention: key/value heads, each shared by --num-attention-heads / this many query heads."},
  {"--no-position-embedding", F_CONST, OFF(add_position_embedding), k_off, SHAPE, "position embeddings on",
   "No learned absolute position embeddings."},
  {"--no-query-key-layer-scaling", F_CONST, OFF(apply_query_key_layer_scaling), k_off, SHAPE, "scaling on",
   "Megatron's fp16 overflow guard (scores / layer number, softmax x layer number): the same numbers here, whose "
   "softmax is fp32 either way; recorded."},
  {"--openai-gelu", F_TRUE, OFF(openai_gelu), NULL, SHAPE, "False",
   "The MLP's (and BERT's LM head's) GELU in OpenAI's tanh form, unfused (the default fused bias-GELU is that form)."},
  {"--squared-relu", F_TRUE, OFF(squared_relu), NULL, SHAPE, "False", "The MLP's activation is relu(x)^2."},
  {"--init-method-xavier-uniform", F_TRUE, OFF(init_method_xavier_uniform), NULL, SHAPE, "False",
   "Every weight matrix drawn from N(0, --init-method-std) starts U(+-sqrt(6 / (fan_in + fan_out))) instead."},
  {"--apply-layernorm-1p", F_TRUE, OFF(apply_layernorm_1p), NULL, SHAPE, "False",
   "Zero-centred LayerNorm weights: each LayerNorm of the transformer scales by weight + 1, the weight starting at 0."},
  {"--bert-no-binary-head", F_CONST, OFF(bert_binary_head), k_off, SHAPE, "binary head on",
   "pretrain_bert: no sentence-order head (and no pooler, no token types)."},
  {"--seq-length", F_INT, OFF(seq_length), NULL, SHAPE, "None (required)", "Tokens per training sample."},
  {"--encoder-num-layers", F_INT, OFF(encoder_num_layers), NULL, SHAPE, "None",
   "Another name of --num-layers (give one of them): the encoder's layers."},
  {"--decoder-num-layers", F_INT, OFF(decoder_num_layers), NULL, SHAPE, "--num-layers",
   "pretrain_t5: the decoder's layers."},
  {"--encoder-seq-length", F_INT, OFF(encoder_seq_length), NULL, SHAPE, "None",
   "Another name of --seq-length (give one of them): the encoder's tokens per sample."},
  {"--decoder-seq-length", F_INT, OFF(decoder_seq_length), NULL, SHAPE, "None (required by pretrain_t5)",
   "pretrain_t5: the decoder's tokens per sample."},
  {"--vocab-size", F_INT, OFF(vocab_size), NULL, SHAPE, "50257",
   "Vocabulary size for --mock-data and NullTokenizer (otherwise the tokenizer's)."},
  {"--attention-dropout", F_FLOAT, OFF(attention_dropout), NULL, REG, "0.1", "Dropout on attention probabilities."},
  {"--hidden-dropout", F_FLOAT, OFF(hidden_dropout), NULL, REG, "0.1", "Dropout on the residual branches."},
  {"--weight-decay", F_FLOAT, OFF(weight_decay), NULL, REG, "0.01", "Weight-decay coefficient."},
  {"--start-weight-decay", F_DOUBLE, OFF(start_weight_decay), NULL, REG, "None",
   "Weight decay of the first step with --weight-decay-incr-style linear or cosine (>= 0)."},
  {"--end-weight-decay", F_DOUBLE, OFF(end_weight_decay), NULL, REG, "None",
   "Weight decay reached after --train-iters x global batch (or --train-samples) samples, then kept (>= start)."},
  {"--weight-decay-incr-style", F_CHOICE, OFF(weight_decay_incr_style), k_wd_styles, REG, "constant",
   "constant: --weight-decay throughout; linear or cosine: from --start-weight-decay to --end-weight-decay by "
   "consumed samples (Megatron's OptimizerParamScheduler; docs/schedulers.md)."},
  {"--clip-grad", F_FLOAT, OFF(clip_grad), NULL, REG, "1.0", "Clip the global gradient norm to this; 0 disables."},
  {"--init-method-std", F_FLOAT, OFF(init_method_std), NULL, REG, "0.02",
   "Std of the normal init (output projections use std / sqrt(2 x layers))."},
  {"--seed", F_U64, OFF(seed), NULL, REG, "1234", "Random seed (dropout, init, data order)."},
  {"--optimizer", F_CHOICE, OFF(optimizer), k_optimizers, OPT, "adam",
   "adam is Adam with decoupled weight decay (AdamW), as in Megatron."},
  {"--adam-beta1", F_FLOAT, OFF(adam_beta1), NULL, OPT, "0.9", "Adam beta1."},
  {"--adam-beta2", F_FLOAT, OFF(adam_beta2), NULL, OPT, "0.999", "Adam beta2."},
  {"--adam-eps", F_FLOAT, OFF(adam_eps), NULL, OPT, "1e-08", "Adam epsilon."},
  {"--cpu-optimizer", F_TRUE, OFF(cpu_optimizer), NULL, OPT, "False",
   "Megatron-DeepSpeed's DeepSpeedCPUAdam (ZeRO-Offload): accepted when the optimizer step runs on the CPU (the "
   "ds_config's zero_optimization.offload_optimizer, or a CPU run); needs --optimizer adam."},
  {"--cpu_torch_adam", F_TRUE, OFF(cpu_torch_adam), NULL, OPT, "False",
   "With --cpu-optimizer: torch's AdamW instead of DeepSpeedCPUAdam (the same AdamW step here)."},
  {"--ds_fused_adam", F_TRUE, OFF(ds_fused_adam), NULL, OPT, "False",
   "DeepSpeed's FusedAdam kernel for --optimizer adam: recorded (the same AdamW step here)."},
  {"--sgd-momentum", F_FLOAT, OFF(sgd_momentum), NULL, OPT, "0.9", "SGD momentum."},
  {"--micro-batch-size", F_INT, OFF(micro_batch_size), NULL, BATCH, "None (required)",
   "Samples per data-parallel rank per forward/backward."},
  {"--global-batch-size", F_INT, OFF(global_batch_size), NULL, BATCH, "micro batch x data-parallel size",
   "Samples per optimizer step; the rest is gradient accumulation."},
  {"--rampup-batch-size", F_LIST, OFF(rampup_batch_size), NULL, BATCH, "None",
   "<start> <increment> <ramp-up samples>: the global batch size grows from start by increment up to "
   "--global-batch-size over the ramp-up samples (Megatron's ramp-up; with --train-samples)."},
  {"--train-iters", F_I64, OFF(train_iters), NULL, BATCH, "None", "Iterations to train (or --train-samples)."},
  {"--train-samples", F_I64, OFF(train_samples), NULL, BATCH, "None", "Samples to train (or --train-iters)."},
  {"--train-tokens", F_I64, OFF(train_tokens), NULL, BATCH, "None",
   "Also stop once this many tokens are consumed (--train-iters or --train-samples is still required)."},
  {"--lr", F_DOUBLE, OFF(lr), NULL, LR, "None (required)", "Peak learning rate."},
  {"--min-lr", F_DOUBLE, OFF(min_lr), NULL, LR, "0.0", "Learning rate at the end of decay."},
  {"--lr-decay-style", F_CHOICE, OFF(lr_decay_style), k_decay_styles, LR, "linear", "Decay after warmup."},
  {"--lr-decay-iters", F_I64, OFF(lr_decay_iters), NULL, LR, "--train-iters", "Iterations to decay over."},
  {"--lr-decay-samples", F_I64, OFF(lr_decay_samples), NULL, LR, "--train-samples", "Samples to decay over."},
  {"--lr-warmup-iters", F_I64, OFF(lr_warmup_iters), NULL, LR, "0", "Iterations of linear warmup."},
  {"--lr-warmup-samples", F_I64, OFF(lr_warmup_samples), NULL, LR, "0", "Samples of linear warmup."},
  {"--lr-warmup-fraction", F_DOUBLE, OFF(lr_warmup_fraction), NULL, LR, "None",
   "Warmup as a fraction of the decay length (excludes the two above)."},
  {"--lr-warmup-tokens", F_I64, OFF(lr_warmup_tokens), NULL, LR, "None",
   "Linear warmup over this many consumed tokens (replaces the iteration/sample warmup; docs/schedulers.md)."},
  {"--lr-decay-tokens", F_I64, OFF(lr_decay_tokens), NULL, LR, "None",
   "Decay over this many consumed tokens (replaces the iteration/sample decay length)."},
  {"--fp16", F_TRUE, OFF(fp16), NULL, MIXP, "False",
   "fp16 weights and gradients with fp32 master weights and a loss scaler (docs/mixed_precision.md)."},
  {"--bf16", F_TRUE, OFF(bf16), NULL, MIXP, "False", "bf16 weights with fp32 master weights and fp32 gradients."},
  {"--loss-scale", F_DOUBLE, OFF(loss_scale), NULL, MIXP, "None", "Static loss scale (fp16); unset: dynamic."},
  {"--initial-loss-scale", F_DOUBLE, OFF(initial_loss_scale), NULL, MIXP, "4294967296",
   "First dynamic loss scale (fp16)."},
  {"--min-loss-scale", F_DOUBLE, OFF(min_loss_scale), NULL, MIXP, "1.0", "Floor of the dynamic loss scale."},
  {"--loss-scale-window", F_INT, OFF(loss_scale_window), NULL, MIXP, "1000",
   "Overflow-free iterations before the dynamic scale doubles."},
  {"--hysteresis", F_INT, OFF(hysteresis), NULL, MIXP, "2", "Overflows tolerated before the scale halves."},
  {"--accumulate-allreduce-grads-in-fp32", F_TRUE, OFF(accumulate_allreduce_grads_in_fp32), NULL, MIXP, "False",
   "Accumulate and all-reduce gradients in fp32 (always on with --bf16)."},
  {"--checkpoint-activations", F_CONST, OFF(recompute_granularity), k_full, RECOMP, "False",
   "Recompute activations in the backward pass (= --recompute-granularity full)."},
  {"--recompute-granularity", F_CHOICE, OFF(recompute_granularity), k_granularity, RECOMP, "None",
   "full recomputes whole layers; selective only the core attention's probabilities (where they are kept: the "
   "CPU; the GPU's attention keeps none, as Megatron's flash path)."},
  {"--recompute-activations", F_TRUE, OFF(recompute_activations), NULL, RECOMP, "False",
   "= --recompute-granularity selective (with --checkpoint-activations: whole layers, which keep nothing more)."},
  {"--recompute-method", F_CHOICE, OFF(recompute_method_uniform), k_recompute_methods, RECOMP, "uniform",
   "uniform: recompute every layer; block: only the first --recompute-num-layers layers of each pipeline stage "
   "(model chunk), the others keep their activations."},
  {"--recompute-num-layers", F_INT, OFF(recompute_num_layers), NULL, RECOMP, "1",
   "block: the layers recomputed per stage; uniform: Megatron's chunk size (every layer is recomputed here)."},
  {"--checkpoint-num-layers", F_INT, OFF(recompute_num_layers), NULL, RECOMP, "1",
   "Old name of --recompute-num-layers."},
  {"--distribute-checkpointed-activations", F_TRUE, OFF(distribute_checkpointed_activations), NULL, RECOMP, "False",
   "With --checkpoint-activations: each tensor-parallel rank keeps 1/TP of every checkpointed layer input, "
   "all-gathered before the layer's recompute (Megatron's CheckpointFunction; the same results, less memory)."},
  {"--distribute-saved-activations", F_TRUE, OFF(distribute_saved_activations), NULL, RECOMP, "False",
   "The same for --recompute-granularity full with a --recompute-method and tensor parallelism (Megatron's "
   "asserts); off with --sequence-parallel, whose layer inputs are split over the ranks already."},
  {"--deepspeed-activation-checkpointing", F_TRUE, OFF(deepspeed_activation_checkpointing), NULL, RECOMP, "False",
   "With --deepspeed and --checkpoint-activations: DeepSpeed's checkpointing, configured by the five flags below "
   "(they replace the ds_config's activation_checkpointing block, as deepspeed.checkpointing.configure does)."},
  {"--partition-activations", F_TRUE, OFF(partition_activations), NULL, RECOMP, "False",
   "Split each saved layer input over the tensor-parallel ranks."},
  {"--contigious-checkpointing", F_TRUE, OFF(contigious_checkpointing), NULL, RECOMP, "False",
   "Keep the checkpoints in one contiguous region (needs --partition-activations)."},
  {"--checkpoint-in-cpu", F_TRUE, OFF(checkpoint_in_cpu), NULL, RECOMP, "False", "Keep the checkpoints in host memory."},
  {"--synchronize-each-layer", F_TRUE, OFF(synchronize_each_layer), NULL, RECOMP, "False",
   "Synchronize the device at each checkpointed layer's start and end."},
  {"--profile-backward", F_TRUE, OFF(profile_backward), NULL, RECOMP, "False",
   "Print DeepSpeed's forward/backward time of each checkpointed layer."},
  {"--tensor-model-parallel-size", F_INT, OFF(tensor_model_parallel_size), NULL, PAR, "1",
   "Tensor-parallel degree (Megatron's column/row-parallel layers, vocab-parallel embedding and loss)."},
  {"--sequence-parallel", F_TRUE, OFF(sequence_parallel), NULL, PAR, "False",
   "Megatron's sequence parallelism: layernorm/dropout regions split over the sequence (off with TP 1)."},
  {"--pipeline-model-parallel-size", F_INT, OFF(pipeline_model_parallel_size), NULL, PAR, "1",
   "Pipeline-parallel degree (layers split evenly over the stages, Megatron's 1F1B schedule; pretrain_gpt with "
   "--deepspeed: as DeepSpeed partitions GPTModelPipe, which need not divide them)."},
  {"--pipeline-model-parallel-split-rank", F_INT, OFF(pipeline_model_parallel_split_rank), NULL, PAR, "None",
   "pretrain_t5 with pipeline stages: the first decoder stage (stages before it hold the encoder)."},
  {"--num-layers-per-virtual-pipeline-stage", F_INT, OFF(num_layers_per_virtual_pipeline_stage), NULL, PAR, "None",
   "Megatron's interleaved schedule: each stage holds num_layers / (pp x this) chunks of this many layers "
   "(pp > 2, micro batches a multiple of pp)."},
  {"--data-efficiency-curriculum-learning", F_TRUE, OFF(data_efficiency_curriculum_learning), NULL, DS, "False",
   "DeepSpeed's data-efficiency curriculum: training samples drawn by the ds_config's "
   "data_efficiency.data_sampling.curriculum_learning metrics (docs/data_efficiency.md); both must be given."},
  {"--random-ltd", F_TRUE, OFF(random_ltd), NULL, DS, "False",
   "Random-LTD (random layer token drop): the layers of the ds_config's data_efficiency.data_routing.random_ltd "
   "block train on a random subset of each sample's tokens (docs/data_efficiency.md); both must be given."},
  {"--no-pipeline-parallel", F_TRUE, OFF(no_pipeline_parallel), NULL, PAR, "False",
   "Megatron-DeepSpeed's non-pipeline model class; --pipeline-model-parallel-size must then be 1."},
  {"--remote-device", F_CHOICE, OFF(remote_device), k_remote_devices, DS, "none",
   "Where deepspeed.zero.Init builds the ZeRO-3 partitions (with --zero-stage 3): none, cpu or nvme; a ds_config "
   "offload_param block replaces it, and nvme needs that block (DeepSpeed's asserts; docs/zero.md)."},
  {"--standalone-embedding-stage", F_TRUE, OFF(standalone_embedding_stage), NULL, PAR, "False",
   "Megatron's embedding-only first pipeline stage: stage 0 holds the input embedding alone and the layers are split "
   "over the other stages (T5: the encoder's over stages 1 to split rank - 1); no effect with pretrain_gpt --deepspeed "
   "(DeepSpeed's stages)."},
  {"--enable-zbh1-pipeline", F_TRUE, OFF(enable_zbh1_pipeline), NULL, PAR, "False",
   "The zero-bubble H1 pipeline schedule (needs --deepspeed): the stages after the first split a micro batch's "
   "backward into B (input gradients, sent upstream at once) and W (the linear layers' weight gradients, run later) "
   "to fill the pipeline's bubble; without --enable-zbh1-exact-semantics the first micro batches' W run last, so "
   "their weight gradients add up in another order (docs/parallelism.md)."},
  {"--enable-zbh1-exact-semantics", F_TRUE, OFF(enable_zbh1_exact_semantics), NULL, PAR, "False",
   "With --enable-zbh1-pipeline: every W in micro-batch order, so training is bit for bit the 1F1B schedule's."},
  {"--ds-sequence-parallel-size", F_INT, OFF(ds_sequence_parallel_size), NULL, PAR, "1",
   "DeepSpeed-Ulysses sequence parallelism: each of this many consecutive ranks holds 1/size of every sequence and "
   "the attention all-to-alls its heads (GPT, without tensor or pipeline parallelism; docs/parallelism.md)."},
  {"--force-ds-sequence-parallel", F_TRUE, OFF(force_ds_sequence_parallel), NULL, NOOP, "False",
   "Megatron-DeepSpeed's distributed attention with one sequence-parallel rank: no effect (it is the identity there; "
   "recorded in the argument dump)."},
  {"--ds-sequence-parallel-fpdt", F_TRUE, OFF(ds_sequence_parallel_fpdt), NULL, PAR, "False",
   "DeepSpeed's FPDT (GPT): the sequence dealt to the --ds-sequence-parallel-size ranks in chunks, the "
   "self-attention computed chunk by chunk keeping only log-sum-exps, the layers without hidden dropout, as "
   "Megatron-DeepSpeed's (docs/parallelism.md)."},
  {"--ds-sequence-parallel-fpdt-chunk-size", F_INT, OFF(ds_sequence_parallel_fpdt_chunk_size), NULL, PAR, "65536",
   "FPDT's chunk of the whole sequence, in tokens: must divide --seq-length and be a multiple of "
   "--ds-sequence-parallel-size."},
  {"--ds-sequence-parallel-fpdt-offloading", F_TRUE, OFF(ds_sequence_parallel_fpdt_offloading), NULL, PAR, "False",
   "FPDT keeps the attention's chunks in host memory: where they already are on a CPU run; a GPU run has no host "
   "offload path yet and trains on the CPU, saying so (docs/parallelism.md)."},
  {"--data-path", F_LIST, OFF(data_path), NULL, DATA, "None",
   "Dataset prefix (P for P.bin/P.idx), or weight prefix pairs to blend."},
  {"--aml-data-download-path", F_STR, OFF(aml_data_download_path), NULL, DATA, "None",
   "Azure ML's mounted dataset folder: every --data-path word becomes DIR/word (Megatron-DeepSpeed's rule)."},
  {"--split", F_STR, OFF(split), NULL, DATA, "969, 30, 1", "Train/valid/test proportions of the documents."},
  {"--train-data-path", F_LIST, OFF(train_data_path), NULL, DATA, "None", "Separate training set(s)."},
  {"--valid-data-path", F_LIST, OFF(valid_data_path), NULL, DATA, "None", "Separate validation set(s)."},
  {"--test-data-path", F_LIST, OFF(test_data_path), NULL, DATA, "None", "Separate test set(s)."},
  {"--data-cache-path", F_STR, OFF(data_cache_path), NULL, DATA, "None",
   "Where index caches are looked up after dirname(prefix)/index-cache, and written."},
  {"--data-impl", F_CHOICE, OFF(data_impl), k_data_impl, DATA, "infer",
   "Indexed dataset implementation (mmap; infer checks the file)."},
  {"--mmap-warmup", F_TRUE, OFF(mmap_warmup), NULL, DATA, "False", "Read the token files once at start."},
  {"--tokenizer-type", F_CHOICE, OFF(tokenizer_type), k_tokenizers, DATA,
   "GPT2BPETokenizer (pretrain_bert: BertWordPieceLowerCase)",
   "Tokenizer (HFTokenizer: a Hugging Face Llama, GPT-2 or Qwen2 tokenizer directory in --tokenizer-model)."},
  {"--vocab-file", F_STR, OFF(vocab_file), NULL, DATA, "None", "GPT-2 vocab.json or BERT vocab.txt."},
  {"--merge-file", F_STR, OFF(merge_file), NULL, DATA, "None", "GPT-2 merges.txt."},
  {"--tokenizer-model", F_STR, OFF(tokenizer_model), NULL, DATA, "None",
   "SentencePiece .model file; HFTokenizer: the Hugging Face tokenizer directory."},
  {"--trust-remote-code", F_TRUE, OFF(trust_remote_code), NULL, DATA, "False",
   "HFTokenizer: let the directory's own tokenizer code run. Recorded: only the built-in LlamaTokenizer, "
   "GPT2Tokenizer, Qwen2Tokenizer and PreTrainedTokenizerFast (tokenizer.json) are read, and a directory naming "
   "custom code (auto_map) is refused either way."},
  {"--vocab-extra-ids", F_INT, OFF(vocab_extra_ids), NULL, DATA, "0", "Extra <extra_id_N> tokens (T5)."},
  {"--reset-position-ids", F_TRUE, OFF(reset_position_ids), NULL, DATA, "False",
   "Restart position ids after each end-of-document token."},
  {"--reset-attention-mask", F_TRUE, OFF(reset_attention_mask), NULL, DATA, "False",
   "Tokens attend only within their own document."},
  {"--eod-mask-loss", F_TRUE, OFF(eod_mask_loss), NULL, DATA, "False", "No loss on end-of-document tokens."},
  {"--mask-prob", F_FLOAT, OFF(mask_prob), NULL, DATA, "0.15",
   "pretrain_bert: probability of masking a token (Megatron's masked-LM data), in (0, 1)."},
  {"--short-seq-prob", F_FLOAT, OFF(short_seq_prob), NULL, DATA, "0.1",
   "pretrain_bert: probability of a shorter target sequence length for a sample, in [0, 1]."},
  {"--train-data-exact-num-epochs", F_I64, OFF(train_data_exact_num_epochs), NULL, DATA, "None",
   "Build the training set from exactly this many epochs."},
  {"--dataloader-type", F_CHOICE, OFF(dataloader_type), k_dataloader, DATA, "single",
   "single: Megatron's sequential sampler from the consumed samples; cyclic: its random sampler, a torch.randperm "
   "order per epoch (seeded by the epoch) that never runs out (docs/data.md)."},
  {"--no-data-sharding", F_CONST, OFF(data_sharding), k_off, DATA, "sharding on",
   "--dataloader-type cyclic: one permutation of the split that the data-parallel ranks stride through, instead of "
   "each rank shuffling its own contiguous bucket; no effect with single."},
  {"--repeated-dataloader", F_TRUE, OFF(repeated_dataloader), NULL, DATA, "False",
   "DeepSpeed's RepeatingLoader: a split that runs out (single sampler) is replayed from the loader's first sample "
   "(the resume point); no effect with cyclic."},
  {"--num-workers", F_INT, OFF(num_workers), NULL, DATA, "2",
   "Megatron's loader worker processes: any N >= 0 is accepted and has no effect (batches are gathered from the "
   "mmap'd files in the training process in microseconds; bench/loader.sh)."},
  {"--train-desc-path", F_STR, OFF(train_desc_path), NULL, DATA, "None",
   "The training index cache's .dsc file to use instead of {md5}.dsc (Megatron-DeepSpeed)."},
  {"--train-doc-idx-path", F_STR, OFF(train_doc_idx_path), NULL, DATA, "None",
   "The training doc_idx .npy to use instead of {md5}_doc_idx.npy."},
  {"--train-sample-idx-path", F_STR, OFF(train_sample_idx_path), NULL, DATA, "None",
   "The training sample_idx .npy to use instead of {md5}_sample_idx.npy."},
  {"--train-shuffle-idx-path", F_STR, OFF(train_shuffle_idx_path), NULL, DATA, "None",
   "The training shuffle_idx .npy to use instead of {md5}_shuffle_idx.npy."},
  {"--return-data-index", F_TRUE, OFF(return_data_index), NULL, DATA, "False",
   "Megatron-DeepSpeed's datasets add each sample's index to its dict, which only the data analyzer reads "
   "(analyze_data); pretraining ignores it there as here."},
  {"--train-idx-path", F_STR, OFF(train_idx_path), NULL, DATA, "None",
   "BERT and T5: the training samples mapping (.npy) to use instead of Megatron's {prefix}_train_indexmap_... name "
   "(built there when missing)."},
  {"--mock-data", F_TRUE, OFF(mock_data), NULL, DATA, "False",
   "Train on a synthetic patterned token stream instead of --data-path."},
  {"--deepspeed", F_TRUE, OFF(deepspeed), NULL, DS, "False", "Enable DeepSpeed: read --deepspeed_config."},
  {"--deepspeed_config", F_STR, OFF(deepspeed_config), NULL, DS, "None", "The ds_config.json file."},
  {"--deepscale", F_TRUE, OFF(deepspeed), NULL, DS, "False", "Old name of --deepspeed."},
  {"--deepscale_config", F_STR, OFF(deepspeed_config), NULL, DS, "None", "Old name of --deepspeed_config."},
  {"--zero-stage", F_INT, OFF(zero_stage), NULL, DS, "1.0",
   "Megatron-DeepSpeed's copy of zero_optimization.stage: given, it must equal the ds_config's stage."},
  {"--save", F_STR, OFF(save), NULL, CKPT, "None", "Directory to save checkpoints to (DeepSpeed layout, HDF5)."},
  {"--save-interval", F_INT, OFF(save_interval), NULL, CKPT, "None",
   "Iterations between checkpoint saves (and one at the end of training)."},
  {"--load", F_STR, OFF(load), NULL, CKPT, "None", "Directory containing a checkpoint to resume from."},
  {"--load-tag", F_STR, OFF(load_tag), NULL, CKPT, "None", "Tag to load (e.g. global_step100) instead of latest."},
  {"--no-save-optim", F_TRUE, OFF(no_save_optim), NULL, CKPT, "None", "Do not save optimizer states."},
  {"--no-save-rng", F_TRUE, OFF(no_save_rng), NULL, CKPT, "None", "Do not save the random state (seed)."},
  {"--no-load-optim", F_TRUE, OFF(no_load_optim), NULL, CKPT, "None",
   "Do not load optimizer states, scheduler and loss scaler."},
  {"--no-load-rng", F_TRUE, OFF(no_load_rng), NULL, CKPT, "None",
   "Do not load the random state (a different --seed is then accepted)."},
  {"--finetune", F_TRUE, OFF(finetune), NULL, CKPT, "False",
   "Load the weights only: iteration 0, no optimizer or rng state."},
  {"--universal-checkpoint", F_TRUE, OFF(universal_checkpoint), NULL, CKPT, "False",
   "Megatron-DeepSpeed's load of a universal checkpoint: --load follows DIR/latest_universal when it names one of "
   "zerotron's tags, DIR/latest otherwise (zerotron's checkpoints load into any TP/PP/DP/ZeRO layout as they are)."},
  {"--use-checkpoint-args", F_TRUE, OFF(use_checkpoint_args), NULL, CKPT, "False",
   "Take the model shape from the --load checkpoint's saved arguments."},
  {"--exit-on-missing-checkpoint", F_TRUE, OFF(exit_on_missing_checkpoint), NULL, CKPT, "False",
   "With --load: stop when there is no checkpoint instead of starting from random."},
  {"--exit-interval", F_INT, OFF(exit_interval), NULL, CKPT, "None",
   "Save (with --save) and exit when the iteration is a multiple of this."},
  {"--exit-duration-in-mins", F_INT, OFF(exit_duration_in_mins), NULL, CKPT, "None",
   "Save (with --save) and exit after this many minutes."},
  {"--exit-signal-handler", F_TRUE, OFF(exit_signal_handler), NULL, CKPT, "False",
   "On SIGTERM: save (with --save) after the current iteration and exit."},
  {"--kill-switch-file", F_STR, OFF(kill_switch_file), NULL, CKPT, "None",
   "Exit before any work when this file exists, or after the iteration that finds it (saving first, with --save)."},
  {"--no-initialization", F_CONST, OFF(perform_initialization), k_off, CKPT, "initialization on",
   "Skip the weights' random initialization (a faster start): the --load checkpoint fills them; a run that loads "
   "none is refused."},
  {"--no-load-lr-state", F_TRUE, OFF(no_load_lr_state), NULL, CKPT, "False",
   "Load the optimizer states but not the learning-rate scheduler (it starts afresh)."},
  {"--override-opt_param-scheduler", F_TRUE, OFF(override_opt_param_scheduler), NULL, CKPT, "False",
   "Take the schedule (lr, min lr, warmup, decay) from the command line, not the checkpoint."},
  {"--use-checkpoint-opt_param-scheduler", F_TRUE, OFF(use_checkpoint_opt_param_scheduler), NULL, CKPT, "False",
   "Take the schedule from the checkpoint, not the command line."},
  {"--log-interval", F_INT, OFF(log_interval), NULL, LOG, "100", "Iterations between log lines."},
  {"--eval-interval", F_INT, OFF(eval_interval), NULL, LOG, "1000", "Iterations between evaluations."},
  {"--eval-iters", F_INT, OFF(eval_iters), NULL, LOG, "100", "Iterations per evaluation."},
  {"--skip-train", F_TRUE, OFF(skip_train), NULL, LOG, "False", "Only evaluate."},
  {"--profile", F_CHOICE, OFF(profile), k_profile, TB, "None",
   "Trace the --profile_steps steps into --tensorboard-dir (Megatron-DeepSpeed's PyTorch profiler): each step's "
   "batches, forward and backward, layers, gradient reduction and optimizer as a gzip Chrome trace; pt-full adds "
   "each event's enclosing events (docs/monitors.md)."},
  {"--profile_steps", F_STR, OFF(profile_steps), NULL, TB, "2,3",
   "The first and last training steps of this run to trace: START,END."},
  {"--profile-ranks", F_LIST, OFF(profile_ranks), NULL, TB, "None",
   "The ranks that trace (default: all)."},
  {"--tensorboard-dir", F_STR, OFF(tensorboard_dir), NULL, TB, "None",
   "Write TensorBoard event files (Megatron's tags) to this directory, from the last rank."},
  {"--tensorboard-log-interval", F_INT, OFF(tensorboard_log_interval), NULL, TB, "1",
   "Iterations between TensorBoard writes."},
  {"--tensorboard-queue-size", F_INT, OFF(tensorboard_queue_size), NULL, TB, "1000",
   "Events held in memory before a write forces a flush to disk."},
  {"--log-timers-to-tensorboard", F_TRUE, OFF(log_timers_to_tensorboard), NULL, TB, "False",
   "Write iteration-time and the timers of --timing-log-level to TensorBoard."},
  {"--log-batch-size-to-tensorboard", F_TRUE, OFF(log_batch_size_to_tensorboard), NULL, TB, "False",
   "Write batch-size to TensorBoard."},
  {"--no-log-learnig-rate-to-tensorboard", F_CONST, OFF(log_learning_rate_to_tensorboard), k_off, TB, "",
   "Do not write learning-rate to TensorBoard (Megatron's spelling)."},
  {"--no-log-loss-scale-to-tensorboard", F_CONST, OFF(log_loss_scale_to_tensorboard), k_off, TB, "",
   "Do not write loss-scale (fp16) to TensorBoard."},
  {"--log-validation-ppl-to-tensorboard", F_TRUE, OFF(log_validation_ppl_to_tensorboard), NULL, TB, "False",
   "Write validation perplexity to TensorBoard."},
  {"--log-optimizer-states-to-tensorboard", F_TRUE, OFF(log_optimizer_states_to_tensorboard), NULL, TB, "False",
   "Write norms of the Adam moments and weights (optimizer/...) to TensorBoard."},
  {"--log-memory-to-tensorboard", F_TRUE, OFF(log_memory_to_tensorboard), NULL, TB, "False",
   "Write memory figures to TensorBoard (process RSS and the memory plan; docs/monitors.md)."},
  {"--log-world-size-to-tensorboard", F_TRUE, OFF(log_world_size_to_tensorboard), NULL, TB, "False",
   "Write world-size to TensorBoard."},
  {"--log-params-norm", F_TRUE, OFF(log_params_norm), NULL, TB, "False",
   "Compute the parameters' L2 norm: 'params norm:' on the log line and params-norm in TensorBoard."},
  {"--log-num-zeros-in-grad", F_TRUE, OFF(log_num_zeros_in_grad), NULL, TB, "False",
   "Count the zero gradient entries: 'num zeros:' on the log line and num-zeros in TensorBoard."},
  {"--timing-log-level", F_INT, OFF(timing_log_level), NULL, TB, "0",
   "0: iteration time only; 1: + forward-backward, grads-all-reduce, optimizer; 2: + forward/backward-compute, "
   "batch-generator (printed after each log line, and written with --log-timers-to-tensorboard)."},
  {"--timing-log-option", F_CHOICE, OFF(timing_log_option), k_timing_options, TB, "minmax",
   "How the printed timers combine the ranks: max, (min, max), or every rank."},
  {"--no-barrier-with-level-1-timing", F_CONST, OFF(barrier_with_L1_time), k_off, TB, "",
   "Accepted: level-1 timers synchronize no ranks here (each rank times its own phases; the maximum is printed)."},
  {"--wandb-project", F_STR, OFF(wandb_project), NULL, TB, "", "Refused unless empty: Weights & Biases needs its "
   "Python client and network access."},
  {"--wandb-exp-name", F_STR, OFF(wandb_exp_name), NULL, TB, "", "Refused unless empty (see --wandb-project)."},
  {"--wandb-save-dir", F_STR, OFF(wandb_save_dir), NULL, TB, "", "Refused unless empty (see --wandb-project)."},
  {"--log-eta", F_TRUE, OFF(log_eta), NULL, TB, "False",
   "zerotron's: append ' elapsed: H:MM:SS | ETA: H:MM:SS |' to each log line (off: Megatron's line as it is)."},
  {"--distributed-timeout-minutes", F_DOUBLE, OFF(distributed_timeout_minutes), NULL, HANG, "10",
   "Longest wait of a start-up agreement across ranks (the arguments, ...); a rank that has not answered "
   "by then is named and the job ends (the other ranks wait twice that for rank 0). Fractions are accepted "
   "(0.5 = 30 s)."},
  {"--step-timeout-seconds", F_DOUBLE, OFF(step_timeout_seconds), NULL, HANG, "0 (off)",
   "Watchdog: a training step (its logging, an evaluation) still running after this many seconds ends the job, naming the rank, the "
   "iteration and the collective it waits in (a stopped or stuck rank). Off by default (debuggers)."},
  {"--disable-mem-efficient-ln", F_CONST, OFF(mem_efficient_ln), k_off, NOOP, "on",
   "Apex's memory-efficient fused LayerNorm off: no effect (one LayerNorm per backend, same numbers)."},
  {"--use-flash-attn", F_TRUE, OFF(use_flash_attn_v1), NULL, NOOP, "False",
   "FlashAttention (v1): recorded; attention is exact either way (on a GPU it is already the fused flash-style "
   "kernel), dropout included, as Megatron-DeepSpeed's flash path."},
  {"--use-flash-attn-v1", F_TRUE, OFF(use_flash_attn_v1), NULL, NOOP, "False", "Same as --use-flash-attn."},
  {"--use-flash-attn-v2", F_TRUE, OFF(use_flash_attn_v2), NULL, NOOP, "False",
   "FlashAttention-2: recorded, as --use-flash-attn."},
  {"--use-flash-attn-builder", F_TRUE, OFF(use_flash_attn_builder), NULL, NOOP, "False",
   "DeepSpeed's FlashAttention op builder: recorded, as --use-flash-attn."},
  {"--use-flash-attn-triton", F_TRUE, OFF(use_flash_attn_triton), NULL, NOOP, "False",
   "Triton FlashAttention: recorded; needs --attention-dropout 0 (Megatron-DeepSpeed's Triton path applies none)."},
  {"--no-masked-softmax-fusion", F_CONST, OFF(masked_softmax_fusion), k_off, NOOP, "fusion on",
   "Megatron's CUDA fused scale-mask-softmax off: no effect (one softmax path per backend, same numbers)."},
  {"--no-bias-gelu-fusion", F_CONST, OFF(bias_gelu_fusion), k_off, SHAPE, "fusion on",
   "Megatron's fused bias+GeLU (the tanh form) off: the MLP then uses torch's F.gelu, the exact erf form."},
  {"--no-bias-dropout-fusion", F_CONST, OFF(bias_dropout_fusion), k_off, NOOP, "fusion on",
   "Megatron's fused bias+dropout+add off: no effect (same math either way)."},
  {"--no-gradient-accumulation-fusion", F_CONST, OFF(gradient_accumulation_fusion), k_off, NOOP, "fusion on",
   "Megatron's fused fp32 weight-gradient accumulation off: no effect (gradients always accumulate in place)."},
  {"--no-persist-layer-norm", F_TRUE, OFF(no_persist_layer_norm), NULL, NOOP, "False",
   "Apex's persistent LayerNorm kernel off: no effect."},
  {"--no-async-tensor-model-parallel-allreduce", F_CONST, OFF(async_tensor_model_parallel_allreduce), k_off, NOOP,
   "async on", "Megatron's overlap of a tensor-parallel all-reduce with the weight gradient off: no effect (the "
   "all-reduce is synchronous)."},
  {"--distributed-backend", F_CHOICE, OFF(distributed_backend), k_backends, NOOP, "nccl",
   "torch.distributed's backend: recorded; collectives run over MPI for host tensors and NCCL for GPU tensors."},
  {"--local-rank", F_INT, OFF(local_rank), NULL, NOOP, "None",
   "The launcher's local rank (deepspeed passes --local_rank=N): recorded; ranks come from MPI."},
  {"--local_rank", F_INT, OFF(local_rank), NULL, NOOP, "None", "Same as --local-rank."},
  {"--use-distributed-optimizer", F_TRUE, OFF(use_distributed_optimizer), NULL, OPT, "False",
   "Megatron's distributed optimizer (without --deepspeed): the optimizer state and fp32 masters partitioned over "
   "the data-parallel ranks, the gradients reduced into the partitions, the parameters gathered (ZeRO stage 1; "
   "docs/zero.md)."},
  {"--DDP-impl", F_CHOICE, OFF(ddp_impl), k_ddp, NOOP, "local",
   "Megatron's DistributedDataParallel (local or torch): recorded; the gradients are averaged over the "
   "data-parallel ranks one way, from one flat buffer (as local DDP's contiguous buffers)."},
  {"--no-contiguous-buffers-in-local-ddp", F_CONST, OFF(use_contiguous_buffers_in_local_ddp), k_off, NOOP, "on",
   "Local DDP without its contiguous gradient buffer: recorded (the gradients always live in one flat buffer)."},
  {"--use-cpu-initialization", F_TRUE, OFF(use_cpu_initialization), NULL, NOOP, "None",
   "Initialize whole weights, then take this rank's slice: recorded; zerotron always does (the same weights in "
   "every layout)."},
  {"--attention-softmax-in-fp32", F_TRUE, OFF(attention_softmax_in_fp32), NULL, NOOP, "False",
   "Megatron's masking and softmax in fp32 (with --no-query-key-layer-scaling): recorded; the attention's softmax "
   "runs in fp32 on every backend, as Megatron's fused kernel does."},
  {"--no-scatter-gather-tensors-in-pipeline", F_CONST, OFF(scatter_gather_tensors_in_pipeline), k_off, NOOP, "on",
   "Megatron's 1/TP pipeline sends with an all-gather after them, off: recorded (the same tensors arrive)."},
  {"--use-ring-exchange-p2p", F_TRUE, OFF(use_ring_exchange_p2p), NULL, NOOP, "False",
   "Megatron's custom ring-exchange p2p kernel: recorded (pipeline stages exchange over MPI or NCCL)."},
  {"--overlap-p2p-communication", F_TRUE, OFF(overlap_p2p_comm), NULL, NOOP, "False",
   "Megatron's overlap of the interleaved schedule's p2p with compute: recorded (the same sends, synchronous)."},
  {"--empty-unused-memory-level", F_INT, OFF(empty_unused_memory_level), NULL, NOOP, "0",
   "torch.cuda.empty_cache() each iteration (1, 2): recorded; zerotron plans its memory once and has no caching "
   "allocator to empty."},
  {"--num-experts", F_LIST, OFF(num_experts), NULL, MOE, "[1]",
   "Experts per MoE layer: one value for every MoE layer, or one per MoE layer (PR-MoE's pyramid); 1 is the dense "
   "MLP (docs/moe.md)."},
  {"--mlp-type", F_CHOICE, OFF(mlp_type), k_mlp_types, MOE, "standard",
   "standard, or residual: Residual MoE (a dense MLP beside the experts, mixed per token by a learned softmax)."},
  {"--topk", F_INT, OFF(topk), NULL, MOE, "1", "Experts per token: 1 (top-1 with Random Token Selection), 2, or k."},
  {"--expert-interval", F_INT, OFF(expert_interval), NULL, MOE, "2",
   "Layer i (1-based) is an MoE layer when i %% interval == 0."},
  {"--moe-expert-parallel-size", F_INT, OFF(moe_expert_parallel_size), NULL, MOE, "1",
   "Expert-parallel degree: each MoE layer's experts run spread over this many data-parallel ranks (DeepSpeed's "
   "expert-parallel groups), tokens sent to them and back by all-to-all; must divide the data-parallel size and "
   "every layer's experts (docs/moe.md)."},
  {"--moe-train-capacity-factor", F_DOUBLE, OFF(moe_train_capacity_factor), NULL, MOE, "1.0",
   "Expert capacity in training: ceil(tokens / experts x factor x k), at least --moe-min-capacity."},
  {"--moe-eval-capacity-factor", F_DOUBLE, OFF(moe_eval_capacity_factor), NULL, MOE, "1.0",
   "Expert capacity factor in evaluation."},
  {"--moe-min-capacity", F_INT, OFF(moe_min_capacity), NULL, MOE, "4", "Minimum capacity of an expert (tokens)."},
  {"--moe-loss-coeff", F_DOUBLE, OFF(moe_loss_coeff), NULL, MOE, "0.1",
   "Weight of the summed load-balancing losses in the loss (the log's moe loss)."},
  {"--create-moe-param-group", F_TRUE, OFF(create_moe_param_group), NULL, MOE, "False",
   "Expert parameters in their own optimizer groups: recorded (the groups share every hyperparameter, so the update "
   "is the same)."},
  {"--disable-moe-token-dropping", F_CONST, OFF(moe_token_dropping), k_off, MOE, "dropping on",
   "No token dropping: an expert's capacity is the largest number of tokens routed to one expert."},
  {"--disable-moe-top2-2nd-expert-sampling", F_CONST, OFF(moe_top2_2nd_expert_sampling), k_off, MOE, "sampling on",
   "Top-2 gating's second expert by argmax instead of sampled with Gumbel noise."},
  {"--noisy-gate-policy", F_CHOICE, OFF(noisy_gate_policy), k_noisy_gate, MOE, "None",
   "DeepSpeed's noisy_gate_policy (not a Megatron-DeepSpeed flag): Jitter (router input times U(0.99, 1.01)) or "
   "RSample (top-1 argmax over Gumbel-noised logits), in training."},
  {"--use-tutel", F_TRUE, OFF(use_tutel), NULL, MOE, "False",
   "Tutel's top-1 dispatch kernels: recorded (DeepSpeed falls back to its own dispatch without tutel; same results)."},
  {"--enable-expert-tensor-parallelism", F_TRUE, OFF(enable_expert_tensor_parallelism), NULL, MOE, "False",
   "Tensor parallelism inside experts: each expert's MLP (and Residual MoE's dense branch) split over the "
   "tensor-parallel ranks as the dense MLP is; without it every tensor-parallel rank holds whole experts."},
  {"--num-layers-teacher", F_INT, OFF(num_layers_teacher), NULL, KD, "None",
   "Number of the teacher's transformer layers (required with --mos/--kd)."},
  {"--num-experts-teacher", F_LIST, OFF(num_experts_teacher), NULL, KD, "[1]",
   "The teacher's experts per MoE layer, as --num-experts (the other MoE flags are the student's)."},
  {"--hidden-size-teacher", F_INT, OFF(hidden_size_teacher), NULL, KD, "None",
   "The teacher's hidden size (required with --mos/--kd)."},
  {"--num-attention-heads-teacher", F_INT, OFF(num_attention_heads_teacher), NULL, KD, "None",
   "The teacher's attention heads (required with --mos/--kd)."},
  {"--mos", F_TRUE, OFF(mos), NULL, KD, "False",
   "Mixture-of-Students: train with the teacher's KD term added to the loss (the log's mos loss)."},
  {"--kd", F_TRUE, OFF(kd), NULL, KD, "False", "Knowledge distillation: as --mos, logged as kd loss."},
  {"--kd-alpha-ce", F_DOUBLE, OFF(kd_alpha_ce), NULL, KD, "1",
   "Read and unused, as in Megatron-DeepSpeed (the language-model loss keeps weight 1)."},
  {"--kd-beta-ce", F_DOUBLE, OFF(kd_beta_ce), NULL, KD, "1", "Weight of the KD term."},
  {"--kd-temp", F_DOUBLE, OFF(kd_temp), NULL, KD, "1.0",
   "Softmax temperature of the KD term (the term is multiplied by its square)."},
  {"--reset-iteration", F_TRUE, OFF(reset_iteration), NULL, KD, "False",
   "After --load: iteration 0, consumed samples and tokens not restored (optimizer, scheduler and rng are)."},
  {"--load-teacher", F_STR, OFF(load_teacher), NULL, KD, "None",
   "Directory of the teacher's checkpoint (weights only; any saved TP/PP/DP layout)."},
  {"--help", F_HELP, 0, NULL, "other", "", "Print this help and exit."},
};
enum { NFLAGS = sizeof k_flags / sizeof k_flags[0] };

static const flag *find_flag(const char *name) {
  for (int i = 0; i < NFLAGS; i++)
    if (strcmp(k_flags[i].name, name) == 0) return &k_flags[i];
  return NULL;
}

/* Whether `name` was given on the command line (names come from the code, so a typo is a bug). */
static int given(const unsigned char *seen, const char *name);
int zt_args_given(const zt_args *a, const char *flag) { return given(a->given_, flag); }

static int given(const unsigned char *seen, const char *name) {
  const flag *f = find_flag(name);
  if (!f) zt_fatal("internal error", "args: no flag %s in the table", name);
  return seen[f - k_flags];
}

/* ---- Python float repr, for messages and the summary --------------------------------------------- */

/* ---- value parsing ------------------------------------------------------------------------------- */

static const char *metavar(const flag *f) {
  switch (f->kind) {
  case F_INT: case F_I64: case F_U64: return "INT";
  case F_FLOAT: case F_DOUBLE: return "FLOAT";
  case F_STR: return "STR";
  case F_LIST: return "[STR ...]";
  default: return "";
  }
}

/* "adam, sgd" for messages, "adam,sgd" (sep ",") for the help's {choices}. */
static void choices_text(const choice *c, const char *sep, char *out, size_t n) {
  size_t k = 0;
  out[0] = '\0';
  for (; c->name && k < n; c++) k += snprintf(out + k, n - k, "%s%s", k ? sep : "", c->name);
}

static long long parse_int(const char *flag, const char *s, long long lo, long long hi) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  /* Python int() would also take " 12" and "1_000"; plain digits are enough and cannot be misread. */
  if (end == s || *end != '\0' || s[0] == ' ' || s[0] == '\t')
    zt_fatal("bad argument value", "%s %s: expected an integer", flag, s);
  if (errno == ERANGE || v < lo || v > hi)
    zt_fatal("bad argument value", "%s %s: out of range [%lld, %lld]", flag, s, lo, hi);
  return v;
}

static double parse_double(const char *flag, const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || s[0] == ' ' || s[0] == '\t')
    zt_fatal("bad argument value", "%s %s: expected a number", flag, s);
  if (!isfinite(v)) zt_fatal("bad argument value", "%s %s: must be a finite number", flag, s);
  return v;
}

static void set_value(zt_args *a, const flag *f, const char *value) {
  char *field = (char *)a + f->offset;
  switch (f->kind) {
  case F_INT: *(int *)field = (int)parse_int(f->name, value, INT_MIN, INT_MAX); break;
  case F_I64: *(int64_t *)field = parse_int(f->name, value, LLONG_MIN, LLONG_MAX); break;
  case F_U64: *(uint64_t *)field = (uint64_t)parse_int(f->name, value, 0, LLONG_MAX); break;
  case F_FLOAT: {
    double v = parse_double(f->name, value);
    if (isinf((float)v)) zt_fatal("bad argument value", "%s %s: too large for a float", f->name, value);
    *(float *)field = (float)v;
    break;
  }
  case F_DOUBLE: *(double *)field = parse_double(f->name, value); break;
  case F_TRUE: *(int *)field = 1; break;
  case F_CONST: *(int *)field = f->choices[0].value; break;
  case F_CHOICE: {
    const choice *c = f->choices;
    while (c->name && strcmp(c->name, value) != 0) c++;
    if (!c->name) {
      char list[160];
      choices_text(f->choices, ", ", list, sizeof list);
      zt_fatal("bad argument value", "%s %s: invalid choice (choose from %s)", f->name, value, list);
    }
    if (c->value < 0) zt_fatal("unsupported argument", "%s %s is not supported: %s", f->name, value, c->why);
    *(int *)field = c->value;
    break;
  }
  case F_STR: *(const char **)field = value; break;
  case F_LIST: break; /* filled by the parser, which sees the following words */
  case F_HELP: break;
  }
}

/* ---- unknown and known-unsupported flags --------------------------------------------------------- */

/* Calls fn(name, ctx) on each space-separated flag of a known-group list; stops when fn returns 1. */
static int each_token(const char *list, int (*fn)(const char *name, void *ctx), void *ctx) {
  char tok[96];
  while (*list) {
    size_t len = strcspn(list, " ");
    if (len > 0 && len < sizeof tok) {
      memcpy(tok, list, len);
      tok[len] = '\0';
      if (fn(tok, ctx)) return 1;
    }
    list += len;
    while (*list == ' ') list++;
  }
  return 0;
}

static int token_equals(const char *name, void *ctx) { return strcmp(name, (const char *)ctx) == 0; }

typedef struct {
  const char *typed;
  int best, limit; /* limit: the farthest a suggestion may be */
  char name[96];
} suggestion;

static int consider(const char *name, void *ctx) {
  suggestion *s = ctx;
  const int bound = s->best - 1 < s->limit ? s->best - 1 : s->limit; /* only a nearer name changes the answer */
  int d = zt_edit_distance_within(s->typed, name, bound);
  if (d < s->best) {
    s->best = d;
    snprintf(s->name, sizeof s->name, "%s", name);
  }
  return 0;
}

int zt_args_flag_status(const char *name) {
  for (int i = 0; i < NFLAGS; i++)
    if (strcmp(k_flags[i].name, name) == 0) return 1;
  for (const zt_args_deprecated *d = zt_args_deprecated_flags; d->flag; d++)
    if (strcmp(d->flag, name) == 0) return 2;
  for (const zt_args_known_group *g = zt_args_known_groups; g->area; g++)
    if (each_token(g->flags, token_equals, (void *)name)) return 2;
  return 0;
}

/* Refuses `name` (a flag without its "=value"): as deprecated, as known but unsupported, or as unknown
 * with the closest supported or known flag when that one is near enough to be a typo. */
static void refuse_flag(const char *name) __attribute__((noreturn));
static void refuse_flag(const char *name) {
  for (const zt_args_deprecated *d = zt_args_deprecated_flags; d->flag; d++)
    if (strcmp(d->flag, name) == 0)
      zt_fatal("unsupported argument", "%s is deprecated (Megatron refuses it too); use %s", name, d->replacement);
  for (const zt_args_known_group *g = zt_args_known_groups; g->area; g++)
    if (each_token(g->flags, token_equals, (void *)name)) {
      if (g->area[0] == '=') zt_fatal("unsupported argument", "%s: %s; remove it", name, g->area + 1);
      zt_fatal("unsupported argument", "%s is a Megatron-DeepSpeed flag that zerotron does not support yet "
               "(it lands with the %s work); remove it", name, g->area);
    }

  const int len = (int)strlen(name), limit = len / 3 > 2 ? len / 3 : 2;
  suggestion s = {name, INT_MAX, limit, ""};
  for (int i = 0; i < NFLAGS; i++) consider(k_flags[i].name, &s);
  for (const zt_args_known_group *g = zt_args_known_groups; g->area; g++) each_token(g->flags, consider, &s);
  if (s.best <= limit) zt_fatal("unrecognized argument", "%s; did you mean %s?", name, s.name);
  zt_fatal("unrecognized argument", "%s (see --help for the supported flags)", name);
}

/* ---- help ---------------------------------------------------------------------------------------- */

static void print_help(const char *prog) {
  zt_log("usage: %s --num-layers INT --hidden-size INT --num-attention-heads INT --seq-length INT\n"
         "       --max-position-embeddings INT --micro-batch-size INT --lr FLOAT\n"
         "       (--train-iters INT | --train-samples INT)\n"
         "       %s [options]\n\n"
         "Megatron-compatible flags, as --flag value or --flag=value. Megatron-DeepSpeed flags not listed\n"
         "here are refused by name until the work they belong to lands.\n", prog,
         zt_args_data_usage                   ? zt_args_data_usage
         : strcmp(zt_args_model, "bert") == 0 ? "--data-path PREFIX_text_sentence --vocab-file vocab.txt"
                                              : "(--data-path PREFIX --vocab-file FILE --merge-file FILE | --mock-data)");
  const char *group = NULL;
  for (int i = 0; i < NFLAGS; i++) {
    const flag *f = &k_flags[i];
    if (!group || strcmp(group, f->group) != 0) {
      group = f->group;
      zt_log("\n%s:\n", group);
    }
    char left[256];
    if (f->kind == F_CHOICE) {
      char list[160];
      choices_text(f->choices, ",", list, sizeof list);
      snprintf(left, sizeof left, "%s {%s}", f->name, list);
    } else {
      snprintf(left, sizeof left, "%s %s", f->name, metavar(f));
    }
    if (strlen(left) > 38) zt_log("  %s\n  %-38s", left, "");
    else zt_log("  %-38s", left);
    if (f->deflt[0]) zt_log(" %s [default: %s]\n", f->help, f->deflt);
    else zt_log(" %s\n", f->help);
  }
}

/* ---- validation and derived values --------------------------------------------------------------- */

const char *zt_args_model = "gpt";
const char *zt_args_data_usage = NULL;

static void check_positive(const char *flag, long long v) {
  zt_check(v > 0, "bad argument value", "%s %lld: must be > 0", flag, v);
}

/* DeepSpeed FPDT (--ds-sequence-parallel-fpdt; models/transformer/ulysses.h): GPT only, with FPDT_InputConstruct's
 * asserts as refusals naming the numbers. */
static void fpdt_check(const zt_args *a, const unsigned char *seen) {
  static const char *const sub[] = {"--ds-sequence-parallel-fpdt-chunk-size", "--ds-sequence-parallel-fpdt-offloading"};
  if (!a->ds_sequence_parallel_fpdt) {
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++)
      if (given(seen, sub[i]))
        zt_log("WARNING: %s has no effect without --ds-sequence-parallel-fpdt (as in Megatron-DeepSpeed)\n", sub[i]);
    return;
  }
  zt_check(strcmp(zt_args_model, "gpt") == 0, "unsupported argument", "--ds-sequence-parallel-fpdt: DeepSpeed's FPDT "
           "runs GPT models (Megatron-DeepSpeed's pretrain_gpt, causal attention); this program trains %s",
           zt_args_model);
  const int K = a->ds_sequence_parallel_fpdt_chunk_size, S = a->seq_length, P = a->ds_sequence_parallel_size;
  check_positive("--ds-sequence-parallel-fpdt-chunk-size", K);
  zt_check(S % K == 0, "inconsistent arguments", "--ds-sequence-parallel-fpdt-chunk-size %d does not divide "
           "--seq-length %d (FPDT cuts every sequence into chunks of that many tokens)", K, S);
  zt_check(K % P == 0, "inconsistent arguments", "--ds-sequence-parallel-fpdt-chunk-size %d is not a multiple of "
           "--ds-sequence-parallel-size %d (each chunk splits evenly over the sequence-parallel ranks)", K, P);
  zt_check(!a->random_ltd, "unsupported argument", "--random-ltd with --ds-sequence-parallel-fpdt: random-LTD drops "
           "tokens of the sequences FPDT deals out in chunks (not supported)");
  if (a->hidden_dropout > 0.0)
    zt_log("WARNING: --ds-sequence-parallel-fpdt: the layers add their residuals without the hidden dropout "
           "(--hidden-dropout %g), as Megatron-DeepSpeed's (DeepSpeed's FPDT has no dropout); the embedding dropout "
           "stays\n", a->hidden_dropout);
}

static void check_real(int ok, const char *flag, double v, int as_float, const char *rule) {
  if (ok) return;
  char text[40];
  zt_py_float(text, sizeof text, v, as_float);
  zt_fatal("bad argument value", "%s %s: must be %s", flag, text, rule);
}

static void pad_vocab(zt_args *a) {
  long long multiple = (long long)a->make_vocab_size_divisible_by * a->tensor_model_parallel_size;
  long long padded = (a->vocab_size + multiple - 1) / multiple * multiple;
  zt_check(padded <= INT_MAX, "bad argument value", "vocabulary size %d padded to a multiple of %lld overflows",
           a->vocab_size, multiple);
  a->padded_vocab_size = (int)padded;
}

/* The data source (exactly one of --mock-data, --data-path, the per-split paths) and the files its
 * tokenizer needs; the files themselves are opened, and checked, before the model is built. */
static void check_data(zt_args *a, const unsigned char *seen) {
  if (a->aml_data_download_path) { /* Megatron-DeepSpeed: data_path = [f"{aml}/{path}" for path in data_path] */
    zt_check(a->data_path.n == 1, "inconsistent arguments", "--aml-data-download-path %s with %d --data-path words: "
             "Megatron-DeepSpeed prefixes every word, a blend's weights too (which then are no numbers); give one "
             "dataset prefix%s", a->aml_data_download_path, a->data_path.n,
             a->data_path.n ? ", or write the folder into the blend's paths yourself" : "");
    const char **v = zt_malloc(sizeof *v, "--data-path");
    const size_t n = strlen(a->aml_data_download_path) + strlen(a->data_path.v[0]) + 2;
    char *p = zt_malloc(n, "--data-path");
    snprintf(p, n, "%s/%s", a->aml_data_download_path, a->data_path.v[0]);
    v[0] = p;
    a->data_path.v = v; /* lives as long as the arguments */
  }
  const int paths = a->data_path.n > 0, split_paths = a->train_data_path.n > 0 || a->valid_data_path.n > 0 ||
                    a->test_data_path.n > 0;
  static const char *const list_flags[] = {"--data-path", "--train-data-path", "--valid-data-path",
                                           "--test-data-path"};
  const zt_strlist *lists[] = {&a->data_path, &a->train_data_path, &a->valid_data_path, &a->test_data_path};
  for (int i = 0; i < 4; i++)
    zt_check(!given(seen, list_flags[i]) || lists[i]->n > 0, "missing argument value",
             "%s expects a prefix, or weight prefix pairs", list_flags[i]);
  zt_check(a->mock_data || paths || split_paths, "missing argument",
           "no training data: give --data-path PREFIX (a preprocess_data output such as my-gpt2_text_document), "
           "--train-data-path/--valid-data-path/--test-data-path, or --mock-data");
  zt_check(!(a->mock_data && (paths || split_paths)), "inconsistent arguments",
           "--mock-data and %s are mutually exclusive", paths ? "--data-path" : "--train-data-path");
  zt_check(!(paths && split_paths), "inconsistent arguments",
           "--data-path and --train-data-path/--valid-data-path/--test-data-path are mutually exclusive");
  int64_t bounds[4];
  zt_split_bounds(a->split, 1000, bounds); /* syntax only; the real split is over the documents */
  zt_check(a->num_workers >= 0, "bad argument value", "--num-workers %d: must be >= 0", a->num_workers);
  zt_check(a->vocab_extra_ids >= 0, "bad argument value", "--vocab-extra-ids %d: must be >= 0",
           a->vocab_extra_ids);
  if (given(seen, "--train-data-exact-num-epochs"))
    check_positive("--train-data-exact-num-epochs", a->train_data_exact_num_epochs);
  a->vocab_size_given = given(seen, "--vocab-size");
  if (a->mock_data) return;
  const char *tok = zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type);
  switch ((zt_tokenizer_kind)a->tokenizer_type) {
  case ZT_TOK_GPT2BPE:
    zt_check(a->vocab_file && a->merge_file, "missing argument", "--tokenizer-type %s needs --vocab-file "
             "(vocab.json) and --merge-file (merges.txt)%s", tok, a->vocab_file ? "; --merge-file is missing" :
             a->merge_file ? "; --vocab-file is missing" : "");
    break;
  case ZT_TOK_BERT_LOWER:
  case ZT_TOK_BERT_CASE:
    zt_check(a->vocab_file != NULL, "missing argument", "--tokenizer-type %s needs --vocab-file (vocab.txt)", tok);
    break;
  case ZT_TOK_SENTENCEPIECE:
  case ZT_TOK_GPT_SENTENCEPIECE:
    zt_check(a->tokenizer_model != NULL, "missing argument", "--tokenizer-type %s needs --tokenizer-model", tok);
    break;
  case ZT_TOK_HF:
    zt_check(a->tokenizer_model != NULL, "missing argument", "--tokenizer-type HFTokenizer needs --tokenizer-model, "
             "the Hugging Face tokenizer directory");
    break;
  case ZT_TOK_NULL:
    zt_check(a->vocab_size_given, "missing argument", "--tokenizer-type NullTokenizer needs --vocab-size");
    break;
  }
}

/* ---- counts derived from the flags ---------------------------------------------------------------- */

/* Sample counts are multiplied out of iterations x global batch and then run through the learning-rate
 * schedule in double precision: each is held to 2^53 (exact in a double, and far from int64's wrap, which
 * turned --train-iters 2^62 into an lr of 0 from iteration 5). Token counts (samples x sequence length)
 * are held to int64. */
#define ZT_ARGS_MAX_SAMPLES 9007199254740992LL /* 2^53 */

/* a x b, or a refusal naming both flags, their values and what the product counts. */
static long long checked_product(const char *fa, long long a, const char *fb, long long b, const char *what,
                                 long long limit, const char *why) {
  long long r;
  if (__builtin_mul_overflow(a, b, &r))
    zt_fatal("bad argument value", "%s %lld x %s %lld = %.4g %s: more than %lld, %s", fa, a, fb, b,
             (double)a * (double)b, what, limit, why);
  if (r > limit)
    zt_fatal("bad argument value", "%s %lld x %s %lld = %lld %s: more than %lld, %s", fa, a, fb, b, r, what, limit,
             why);
  return r;
}

static void check_count(const char *flag, long long v, const char *what) {
  zt_check(v <= ZT_ARGS_MAX_SAMPLES, "bad argument value", "%s %lld %s: more than 2^53 = %lld, the largest count "
           "the learning-rate schedule (double precision) holds exactly", flag, v, what, ZT_ARGS_MAX_SAMPLES);
}

static void check_counts(const zt_args *a, int by_iters) {
  static const char *const exact = "the largest count the learning-rate schedule (double precision) holds exactly "
                                   "(2^53)";
  const long long gbs = a->global_batch_size;
  long long train;
  if (by_iters) {
    train = checked_product("--train-iters", a->train_iters, "--global-batch-size", gbs, "training samples",
                            ZT_ARGS_MAX_SAMPLES, exact);
  } else {
    check_count("--train-samples", a->train_samples, "training samples");
    train = a->train_samples;
  }
  checked_product(by_iters ? "training samples (--train-iters x --global-batch-size)" : "--train-samples", train,
                  "--seq-length", a->seq_length, "training tokens", LLONG_MAX, "the int64 token counter");
  if (a->lr_decay_iters >= 0)
    checked_product("--lr-decay-iters", a->lr_decay_iters, "--global-batch-size", gbs, "decay samples",
                    ZT_ARGS_MAX_SAMPLES, exact);
  if (a->lr_decay_samples >= 0) check_count("--lr-decay-samples", a->lr_decay_samples, "decay samples");
  checked_product("--lr-warmup-iters", a->lr_warmup_iters, "--global-batch-size", gbs, "warmup samples",
                  ZT_ARGS_MAX_SAMPLES, exact);
  check_count("--lr-warmup-samples", a->lr_warmup_samples, "warmup samples");
  if (a->eval_iters > 0) { /* Megatron's validation samples: (train_iters // eval_interval + 1) x eval_iters x gbs */
    const long long evals = a->train_iters / a->eval_interval + 1;
    const long long per_eval = checked_product("--eval-iters", a->eval_iters, "--global-batch-size", gbs,
                                               "samples per evaluation", ZT_ARGS_MAX_SAMPLES, exact);
    char fa[96];
    snprintf(fa, sizeof fa, "evaluations (--train-iters %lld / --eval-interval %d + 1)", (long long)a->train_iters,
             a->eval_interval);
    checked_product(fa, evals, "samples per evaluation (--eval-iters x --global-batch-size)", per_eval,
                    "validation samples", ZT_ARGS_MAX_SAMPLES, exact);
  }
}

/* The checks of a model with MoE layers (max_e experts in the largest, min_e in the smallest). */
static void check_moe_layers(const zt_args *a, int min_e, int max_e) {
  zt_check(strcmp(zt_args_model, "gpt") == 0, "unsupported argument", "--num-experts %d: MoE layers in %s are not "
           "supported (Megatron-DeepSpeed's pretrain_%s.py does not add the MoE layers' loss); MoE trains GPT models",
           max_e, zt_args_model, zt_args_model);
  zt_check(a->topk <= min_e, "inconsistent arguments", "--topk %d: an MoE layer has only %d experts to route a token to",
           a->topk, min_e);
  for (int l = 0; l < a->num_layers; l++)
    zt_check(a->moe_layer_experts[l] <= 1 || a->moe_layer_experts[l] % a->moe_expert_parallel_size == 0,
             "inconsistent arguments", "layer %d has %d "
             "experts, not divisible by --moe-expert-parallel-size %d (DeepSpeed asserts num_experts %% ep_size == 0)",
             l + 1, a->moe_layer_experts[l], a->moe_expert_parallel_size);
  const long long tokens = (long long)a->micro_batch_size * a->seq_length;
  zt_check(a->topk != 1 || tokens >= a->moe_min_capacity, "inconsistent arguments", "--micro-batch-size %d x "
           "--seq-length %d = %lld tokens per MoE layer, fewer than --moe-min-capacity %d (DeepSpeed's top-1 gate "
           "asserts \"No. of tokens (batch-size) should be greater than min_capacity\")", a->micro_batch_size,
           a->seq_length, tokens, a->moe_min_capacity);
}

/* The MoE flags (Megatron-DeepSpeed's training args, DeepSpeed's MoE asserts): the experts of each layer
 * (get_num_experts_per_layer), the gate's numbers, and the layouts MoE does not run in yet, refused by name. */
static void check_moe_flags(zt_args *a, const unsigned char *seen) {
  if (given(seen, "--num-experts"))
    zt_check(a->num_experts.n > 0, "missing argument value", "--num-experts expects at least one value (INT ...)");
  check_positive("--expert-interval", a->expert_interval);
  const int moe_layers = a->num_layers / a->expert_interval;
  zt_check(a->num_experts.n <= 1 || a->num_experts.n == moe_layers, "inconsistent arguments", "--num-experts has %d "
           "values: num_experts must be either a single value or a list of the same length as the number of MoE layers "
           "(%d: --num-layers %d / --expert-interval %d), as Megatron-DeepSpeed asserts", a->num_experts.n, moe_layers,
           a->num_layers, a->expert_interval);
  int max_e = 1, min_e = INT_MAX;
  for (int i = 0; i < a->num_experts.n; i++) {
    const long long e = parse_int("--num-experts", a->num_experts.v[i], INT_MIN, INT_MAX);
    zt_check(e >= 1 && e <= 65536, "bad argument value", "--num-experts %s: an expert count must be in [1, 65536] (1 "
             "is the dense MLP)", a->num_experts.v[i]);
    max_e = e > max_e ? (int)e : max_e;
  }
  free(a->moe_layer_experts);
  a->moe_layer_experts = zt_malloc((size_t)(a->num_layers > 0 ? a->num_layers : 1) * sizeof(int), "MoE layers");
  int *values = zt_malloc((size_t)(a->num_experts.n > 0 ? a->num_experts.n : 1) * sizeof(int), "MoE layers");
  for (int i = 0; i < a->num_experts.n; i++) values[i] = atoi(a->num_experts.v[i]);
  zt_moe_layer_experts(values, a->num_experts.n, a->num_layers, a->expert_interval, a->moe_layer_experts);
  free(values);
  for (int l = 0; l < a->num_layers; l++)
    if (a->moe_layer_experts[l] > 1 && a->moe_layer_experts[l] < min_e) min_e = a->moe_layer_experts[l];
  check_positive("--topk", a->topk);
  check_positive("--moe-expert-parallel-size", a->moe_expert_parallel_size);
  zt_check(a->moe_min_capacity >= 0, "bad argument value", "--moe-min-capacity %d: must be >= 0 (a number of tokens)",
           a->moe_min_capacity);
  zt_check(a->moe_train_capacity_factor > 0 && a->moe_eval_capacity_factor > 0, "bad argument value",
           "--moe-train-capacity-factor %g / --moe-eval-capacity-factor %g: must be > 0", a->moe_train_capacity_factor,
           a->moe_eval_capacity_factor);
  a->moe = (zt_moe_config){.num_layers = a->num_layers, .num_experts = a->moe_layer_experts, .topk = a->topk,
                           .train_capacity_factor = (float)a->moe_train_capacity_factor,
                           .eval_capacity_factor = (float)a->moe_eval_capacity_factor,
                           .min_capacity = a->moe_min_capacity, .drop_tokens = a->moe_token_dropping,
                           .top2_sampling = a->moe_top2_2nd_expert_sampling, .noise = a->noisy_gate_policy,
                           .residual = a->mlp_type == 1, .loss_coeff = (float)a->moe_loss_coeff,
                           .expert_tp = a->enable_expert_tensor_parallelism};
  if (max_e <= 1) { /* the dense model: the MoE flags change nothing (Megatron-DeepSpeed reads them in MoE layers) */
    if (a->mlp_type == 1)
      zt_log("WARNING: --mlp-type residual has no effect without MoE layers (--num-experts > 1), as in "
             "Megatron-DeepSpeed\n");
  } else {
    check_moe_layers(a, min_e, max_e);
  }
  a->load_universal = a->universal_checkpoint; /* the engine adds the ds_config's checkpoint.load_universal */
  /* Megatron-DeepSpeed's get_megatron_optimizer: the CPU branch asserts Adam, takes torch's AdamW with
   * --cpu_torch_adam and ignores --ds_fused_adam; the engine checks that the step really runs on the CPU */
  zt_check(!a->cpu_optimizer || a->optimizer == ZT_OPTIMIZER_ADAM, "inconsistent arguments", "--cpu-optimizer needs "
           "--optimizer adam (CPU offloading is for Adam, as Megatron-DeepSpeed asserts)");
  if (a->cpu_torch_adam && !a->cpu_optimizer)
    zt_log("WARNING: --cpu_torch_adam has no effect without --cpu-optimizer (as in Megatron-DeepSpeed)\n");
  if (a->ds_fused_adam && (a->cpu_optimizer || a->optimizer != ZT_OPTIMIZER_ADAM))
    zt_log("WARNING: --ds_fused_adam has no effect with %s (as in Megatron-DeepSpeed)\n",
           a->cpu_optimizer ? "--cpu-optimizer" : "--optimizer sgd");
}

/* Megatron-DeepSpeed's script flags (docs/arguments.md), after the parallel layout is known. */
/* --profile: Megatron-DeepSpeed's setup_profiler (its step range, its ranks, the trace handler's directory). */
static void check_profile_flags(zt_args *a, int world_size) {
  a->profile_start = a->profile_end = 0;
  if (!a->profile) return;
  zt_check(a->tensorboard_dir != NULL, "missing argument", "--profile %s writes its trace into --tensorboard-dir "
           "(PyTorch's tensorboard_trace_handler there): give --tensorboard-dir DIR",
           a->profile == 2 ? "pt-full" : "pt");
  char tail = 0;
  zt_check(sscanf(a->profile_steps, "%d,%d%c", &a->profile_start, &a->profile_end, &tail) == 2 &&
           a->profile_start >= 1 && a->profile_end >= a->profile_start, "bad argument value", "--profile_steps %s: "
           "expected START,END with 1 <= START <= END (the training steps of this run, counted from 1)",
           a->profile_steps);
  for (int i = 0; i < a->profile_ranks.n; i++) {
    const long long r = parse_int("--profile-ranks", a->profile_ranks.v[i], 0, INT_MAX);
    zt_check(r < world_size, "bad argument value", "--profile-ranks %lld: the world has %d ranks", r, world_size);
  }
}

static void check_script_flags(zt_args *a, const unsigned char *seen) {
  /* token-based length and schedule (Megatron-DeepSpeed's training loop and OptimizerParamScheduler) */
  if (given(seen, "--train-tokens")) check_positive("--train-tokens", a->train_tokens);
  if (given(seen, "--lr-decay-tokens")) check_positive("--lr-decay-tokens", a->lr_decay_tokens);
  zt_check(!given(seen, "--lr-warmup-tokens") || a->lr_warmup_tokens >= 0, "bad argument value",
           "--lr-warmup-tokens %lld: must be >= 0", (long long)a->lr_warmup_tokens);
  /* the ds_config's zero_optimization.stage is compared in train/ds_config.c */
  if (given(seen, "--zero-stage")) {
    zt_check(a->zero_stage >= 0 && a->zero_stage <= 3, "bad argument value", "--zero-stage %d: must be 0, 1, 2 or 3 "
             "(DeepSpeed's ZeRO stages)", a->zero_stage);
    zt_check(a->deepspeed || a->zero_stage == 0, "inconsistent arguments", "--zero-stage %d without --deepspeed: ZeRO "
             "is DeepSpeed's (zero_optimization.stage in the ds_config); add --deepspeed --deepspeed_config FILE or "
             "drop --zero-stage", a->zero_stage);
  }
  check_positive("--ds-sequence-parallel-size", a->ds_sequence_parallel_size);
  const int usp = a->ds_sequence_parallel_size;
  if (usp > 1) { /* DeepSpeed-Ulysses (docs/parallelism.md): GPT without tensor or pipeline parallelism */
    zt_check(strcmp(zt_args_model, "gpt") == 0, "unsupported argument", "--ds-sequence-parallel-size %d: "
             "DeepSpeed's sequence parallelism runs GPT models (pretrain_gpt); this program trains %s", usp,
             zt_args_model);
    zt_check(!a->random_ltd, "unsupported argument", "--random-ltd with --ds-sequence-parallel-size %d: random-LTD "
             "drops tokens of whole sequences, which DeepSpeed-Ulysses splits over its ranks (not supported)", usp);
    zt_check(!a->mos && !a->kd, "unsupported argument", "%s with --ds-sequence-parallel-size %d: the teacher of "
             "knowledge distillation does not run sequence-parallel (not supported)", a->mos ? "--mos" : "--kd", usp);
  }
  fpdt_check(a, seen);
  zt_check(!a->no_pipeline_parallel || a->pipeline_model_parallel_size == 1, "inconsistent arguments",
           "--no-pipeline-parallel contradicts --pipeline-model-parallel-size %d (pipeline parallelism disabled needs "
           "size 1, as Megatron-DeepSpeed asserts)", a->pipeline_model_parallel_size);
  if (a->remote_device && !a->deepspeed) /* with --deepspeed: train/engine.c remote_device_check */
    zt_log("> --remote-device: no effect without --deepspeed (deepspeed.zero.Init is enabled by --zero-stage 3, which "
           "needs it)\n");
  /* the zero-bubble schedule: Megatron-DeepSpeed's validate_args asserts, as refusals */
  zt_check(!a->enable_zbh1_exact_semantics || a->enable_zbh1_pipeline, "inconsistent arguments",
           "--enable-zbh1-exact-semantics without --enable-zbh1-pipeline: exact semantics require the ZB-H1 pipeline "
           "enabled (as Megatron-DeepSpeed asserts)");
  if (a->enable_zbh1_pipeline) {
    zt_check(a->deepspeed, "inconsistent arguments", "--enable-zbh1-pipeline without --deepspeed: the zero-bubble "
             "H1 schedule replaces DeepSpeed's pipeline schedule (Megatron-DeepSpeed asserts \"Use DeepSpeed to use "
             "zero-bubble H1 pipeline\")");
    zt_check(!given(seen, "--sequence-parallel"), "unsupported argument", "--enable-zbh1-pipeline with "
             "--sequence-parallel: Megatron-DeepSpeed asserts \"Sequence Parallel not tested\" for the zero-bubble "
             "schedule; drop one of them");
    zt_check(!given(seen, "--num-layers-per-virtual-pipeline-stage"), "unsupported argument",
             "--enable-zbh1-pipeline with --num-layers-per-virtual-pipeline-stage %d: the zero-bubble H1 schedule "
             "replaces DeepSpeed's pipeline schedule, which has no interleaving; drop one of them",
             a->num_layers_per_virtual_pipeline_stage);
  }
  /* DeepSpeed activation checkpointing: the flags replace the ds_config's block (train/ds_config.c) */
  static const char *const ac_flags[] = {"--partition-activations", "--contigious-checkpointing",
                                         "--checkpoint-in-cpu", "--synchronize-each-layer", "--profile-backward"};
  const int ac_active = a->deepspeed && a->deepspeed_activation_checkpointing;
  for (size_t i = 0; i < sizeof ac_flags / sizeof ac_flags[0]; i++)
    if (given(seen, ac_flags[i]) && !ac_active)
      zt_log("WARNING: %s has no effect without --deepspeed and --deepspeed-activation-checkpointing (as in "
             "Megatron-DeepSpeed)\n", ac_flags[i]);
  if (a->deepspeed_activation_checkpointing && !a->deepspeed)
    zt_log("WARNING: --deepspeed-activation-checkpointing has no effect without --deepspeed (as in "
           "Megatron-DeepSpeed)\n");
  zt_check(!ac_active || !a->contigious_checkpointing || a->partition_activations, "inconsistent arguments",
           "--contigious-checkpointing needs --partition-activations (DeepSpeed: Contiguous Checkpointing is only "
           "available with partitioned activations)");
  /* Megatron's CheckpointFunction(distribute_saved_activations): validate_args' asserts, in its order */
  zt_check(!a->distribute_checkpointed_activations || given(seen, "--checkpoint-activations"), "inconsistent "
           "arguments", "--distribute-checkpointed-activations: for distribute-checkpointed-activations to work you "
           "need to enable checkpoint-activations (--checkpoint-activations)");
  if (a->distribute_saved_activations) {
    zt_check(a->tensor_model_parallel_size > 1, "inconsistent arguments", "--distribute-saved-activations with "
             "--tensor-model-parallel-size %d: can distribute recomputed activations only across tensor model "
             "parallel groups", a->tensor_model_parallel_size);
    zt_check(given(seen, "--recompute-granularity") && a->recompute_granularity == ZT_RECOMPUTE_FULL,
             "inconsistent arguments", "--distribute-saved-activations: distributed recompute activations is only "
             "application to full recompute granularity (--recompute-granularity full)");
    zt_check(given(seen, "--recompute-method"), "inconsistent arguments", "--distribute-saved-activations: for "
             "distributed recompute activations to work you need to use a recompute method (--recompute-method)");
  }
  const char *dflag = a->distribute_saved_activations ? "--distribute-saved-activations"
                      : a->distribute_checkpointed_activations ? "--distribute-checkpointed-activations" : NULL;
  a->distribute_activations = 0;
  if (dflag && ac_active)
    zt_log("WARNING: %s has no effect with --deepspeed-activation-checkpointing: DeepSpeed's checkpointing "
           "(--partition-activations) runs the checkpointed layers instead, as in Megatron-DeepSpeed\n", dflag);
  else if (dflag && a->pipeline_model_parallel_size > 1)
    zt_log("WARNING: %s has no effect with --pipeline-model-parallel-size %d: a pipeline stage keeps only its input "
           "for each micro batch in flight and recomputes its layers from it before the backward (Megatron-"
           "DeepSpeed's pipeline checkpoints through DeepSpeed's checkpointing, which does not read it either)\n",
           dflag, a->pipeline_model_parallel_size);
  else if (dflag) { /* the stack's partitioned activations (models/transformer/stack.c) */
    a->distribute_activations = 1;
    if (a->tensor_model_parallel_size > 1 && !a->sequence_parallel)
      zt_log("> %s: each tensor-parallel rank keeps 1/%d of every checkpointed layer input\n", dflag,
             a->tensor_model_parallel_size);
  }
  /* recorded knobs: Megatron-DeepSpeed's own adjustments of what it prints */
  if (a->sequence_parallel || a->deepspeed) a->async_tensor_model_parallel_allreduce = 0;
  /* the training index files (data/gpt_dataset.c): GPT's datasets only */
  static const char *const idx_flags[] = {"--train-desc-path", "--train-doc-idx-path", "--train-sample-idx-path",
                                          "--train-shuffle-idx-path"};
  for (size_t i = 0; i < sizeof idx_flags / sizeof idx_flags[0]; i++) {
    if (!given(seen, idx_flags[i])) continue;
    zt_check(strcmp(zt_args_model, "gpt") == 0, "unsupported argument", "%s: Megatron-DeepSpeed reads it for GPT's "
             "datasets only; this program trains %s", idx_flags[i], zt_args_model);
    zt_check(!a->mock_data, "inconsistent arguments", "%s names an index file of a --data-path dataset; --mock-data "
             "has none", idx_flags[i]);
  }
  /* the training samples mapping (data/bert_dataset.c): BERT's and T5's datasets only */
  zt_check(!given(seen, "--train-idx-path") || strcmp(zt_args_model, "gpt") != 0, "unsupported argument",
           "--train-idx-path: Megatron-DeepSpeed reads it for BERT's and T5's samples mapping only (GPT's index files "
           "are --train-desc-path, --train-doc-idx-path, --train-sample-idx-path, --train-shuffle-idx-path)");
  if (given(seen, "--local-rank") || given(seen, "--local_rank"))
    zt_check(a->local_rank >= 0, "bad argument value", "--local-rank %d: must be >= 0", a->local_rank);
  check_moe_flags(a, seen);
}

/* The dimensions of each head the rotary embedding turns (Megatron-DeepSpeed's rotary_dim: the head size, times
 * --rotary-percent when it is below 1), 0 without rotary embeddings. */
static int rotary_dims(const zt_args *a, int head_dim) {
  if (!a->use_rotary_position_embeddings) return 0;
  return a->rotary_percent < 1.0f ? (int)(head_dim * a->rotary_percent) : head_dim;
}

/* The MLP's activation flags: ParallelMLP takes the first of --openai-gelu, --swiglu, --squared-relu.
 * Megatron-DeepSpeed crashes on --openai-gelu with --swiglu (the doubled dense_h_to_4h output meets dense_4h_to_h) and
 * silently drops the later of the others; each pair is refused here, naming both. And LayerNorm-1p with RMSNorm. */
static void check_activation_flags(const zt_args *a) {
  zt_check(!a->apply_layernorm_1p || !a->normalization, "inconsistent arguments", "--apply-layernorm-1p with "
           "--normalization rmsnorm: the flag makes LayerNorm weights zero-centred, and Megatron-DeepSpeed's RMSNorm "
           "has no such form (it ignores the flag); give one");
  const char *f[3] = {a->openai_gelu ? "--openai-gelu" : NULL, a->swiglu ? "--swiglu" : NULL,
                      a->squared_relu ? "--squared-relu" : NULL};
  for (int i = 0; i < 3; i++)
    for (int j = i + 1; j < 3; j++)
      zt_check(!f[i] || !f[j], "inconsistent arguments", "%s with %s: both choose the MLP's activation (Megatron-"
               "DeepSpeed's ParallelMLP takes %s%s); give one", f[i], f[j], f[i],
               i == 0 && j == 1 ? " and then fails on the doubled dense_h_to_4h output" : " and ignores the other");
}

/* The Llama-style variants: what Megatron-DeepSpeed checks, and the combinations not built yet, refused by name. */
static void check_llama_flags(zt_args *a, const unsigned char *seen, int head_dim) {
  /* Megatron-DeepSpeed's GQA checks (validate_args) */
  if (given(seen, "--num-key-value-heads")) check_positive("--num-key-value-heads", a->num_key_value_heads);
  else a->num_key_value_heads = a->num_attention_heads;
  zt_check(a->num_attention_heads % a->num_key_value_heads == 0, "inconsistent arguments", "num_attention_heads must "
           "be divisible by num_key_value_heads (got `num_attention_heads`: %d and `num_key_value_heads`: %d).",
           a->num_attention_heads, a->num_key_value_heads);
  const int gqa = a->num_key_value_heads != a->num_attention_heads;
  zt_check(!gqa || !a->mos, "inconsistent arguments", "GQA currently does not support args.mos "
           "(--num-key-value-heads %d with --mos, as Megatron-DeepSpeed asserts)", a->num_key_value_heads);
  zt_check(!gqa || !a->kd, "inconsistent arguments", "GQA currently does not support args.kd "
           "(--num-key-value-heads %d with --kd, as Megatron-DeepSpeed asserts)", a->num_key_value_heads);
  const int any = a->normalization || a->swiglu || !a->add_bias_linear || a->use_rotary_position_embeddings ||
                  !a->add_position_embedding || gqa;
  if (given(seen, "--rotary-position-embeddings-theta")) check_positive("--rotary-position-embeddings-theta",
                                                                       a->rope_theta);
  zt_check(a->rotary_percent > 0.0f && a->rotary_percent <= 1.0f, "bad argument value", "--rotary-percent %g: must "
           "be in (0, 1]", a->rotary_percent);
  if (a->use_rotary_position_embeddings) {
    const int rot = rotary_dims(a, head_dim); /* and no learned positions, as Megatron-DeepSpeed sets */
    zt_check(rot >= 2 && rot % 2 == 0, "inconsistent arguments", "--rotary-percent %g of the head size %d gives "
             "%d rotary dimensions; they turn in pairs (RotaryEmbedding's arange(0, dim, 2)), so an even number "
             ">= 2 is needed", a->rotary_percent, head_dim, rot);
    a->add_position_embedding = 0;
  }
  if (!any) return;
  /* BERT and T5 take every variant (the shared layer), but T5 no grouped-query attention */
  zt_check(!gqa || strcmp(zt_args_model, "t5") != 0, "unsupported argument", "--num-key-value-heads %d of %d heads "
           "in T5: Megatron-DeepSpeed's cross-attention asserts 'GQA + cross-attn not tested yet'",
           a->num_key_value_heads, a->num_attention_heads);
}

/* Knowledge distillation and Mixture-of-Students (Megatron-DeepSpeed's _add_distillation_args, setup_teacher_model):
 * the teacher is a GPT of the teacher flags with the student's other shape flags, loaded from --load-teacher. */
static void check_kd_flags(zt_args *a, const unsigned char *seen) {
  static const char *const teacher_flags[] = {"--load-teacher", "--num-layers-teacher", "--hidden-size-teacher",
                                              "--num-attention-heads-teacher", "--num-experts-teacher",
                                              "--kd-alpha-ce", "--kd-beta-ce", "--kd-temp"};
  if (!a->mos && !a->kd) {
    for (size_t i = 0; i < sizeof teacher_flags / sizeof teacher_flags[0]; i++)
      if (given(seen, teacher_flags[i]))
        zt_log("WARNING: %s has no effect without --mos or --kd (as in Megatron-DeepSpeed)\n", teacher_flags[i]);
    return;
  }
  const char *how = a->mos ? "--mos" : "--kd";
  zt_check(strcmp(zt_args_model, "gpt") == 0, "unsupported argument", "%s: knowledge distillation trains GPT models "
           "(Megatron-DeepSpeed's pretrain_%s.py has no teacher)", how, zt_args_model);
  const struct { const char *flag; int v; } shape[3] = {{"--num-layers-teacher", a->num_layers_teacher},
                                                      {"--hidden-size-teacher", a->hidden_size_teacher},
                                                      {"--num-attention-heads-teacher", a->num_attention_heads_teacher}};
  for (int i = 0; i < 3; i++) {
    zt_check(given(seen, shape[i].flag), "missing argument", "%s is required with %s: Megatron-DeepSpeed's "
             "setup_teacher_model builds the teacher with it (its default None fails there)", shape[i].flag, how);
    check_positive(shape[i].flag, shape[i].v);
  }
  zt_check(a->load_teacher != NULL, "missing argument", "%s needs --load-teacher DIR, the teacher's checkpoint "
           "(without it Megatron-DeepSpeed distills from a randomly initialized teacher)", how);
  zt_check(a->hidden_size_teacher % a->num_attention_heads_teacher == 0, "inconsistent arguments",
           "--hidden-size-teacher %d is not divisible by --num-attention-heads-teacher %d", a->hidden_size_teacher,
           a->num_attention_heads_teacher);
  zt_check(isfinite(a->kd_temp) && a->kd_temp > 0, "bad argument value", "--kd-temp %g: must be > 0 (the logits are "
           "divided by it)", a->kd_temp);
  zt_check(isfinite(a->kd_beta_ce), "bad argument value", "--kd-beta-ce %g: must be finite", a->kd_beta_ce);
  const int tp = a->tensor_model_parallel_size; /* the teacher is split over the student's tensor-parallel ranks */
  zt_check(a->num_attention_heads_teacher % tp == 0, "inconsistent arguments", "%s: --num-attention-heads-teacher %d "
           "is not divisible by --tensor-model-parallel-size %d (the teacher is split over the student's "
           "tensor-parallel ranks)", how, a->num_attention_heads_teacher, tp);
  zt_check(a->pipeline_model_parallel_size == 1, "unsupported argument", "%s with --pipeline-model-parallel-size %d: "
           "a teacher beside a pipelined student is not supported, as in Megatron-DeepSpeed (its weights-only teacher "
           "load asserts \"Weight loading only mode is not supported in pipeline parallelism yet\"); train the student "
           "with 1", how,
           a->pipeline_model_parallel_size);
  /* the teacher's experts per layer, as get_num_experts_per_layer does for the student */
  const int tl = a->num_layers_teacher, moe_layers = tl / a->expert_interval;
  const zt_strlist *ne = &a->num_experts_teacher;
  zt_check(!given(seen, "--num-experts-teacher") || ne->n > 0, "missing argument value", "--num-experts-teacher "
           "expects at least one value (INT ...)");
  zt_check(ne->n <= 1 || ne->n == moe_layers, "inconsistent arguments", "--num-experts-teacher has %d values: a single "
           "value or one per MoE layer of the teacher (%d: --num-layers-teacher %d / --expert-interval %d)", ne->n,
           moe_layers, tl, a->expert_interval);
  free(a->teacher_layer_experts);
  a->teacher_layer_experts = zt_malloc((size_t)tl * sizeof(int), "teacher MoE layers");
  int min_e = INT_MAX, max_e = 1;
  for (int i = 0; i < ne->n; i++)
    zt_check(parse_int("--num-experts-teacher", ne->v[i], 1, INT_MAX) >= 1, "bad argument value",
             "--num-experts-teacher %s: must be >= 1", ne->v[i]);
  for (int l = 0; l < tl; l++) {
    const int idx = ne->n == 1 ? 0 : l / a->expert_interval;
    const int e = (l + 1) % a->expert_interval == 0 && idx < ne->n ? atoi(ne->v[idx]) : 1;
    a->teacher_layer_experts[l] = e;
    if (e > 1 && e < min_e) min_e = e;
    if (e > max_e) max_e = e;
  }
  a->teacher_moe = a->moe;
  a->teacher_moe.num_layers = tl;
  a->teacher_moe.num_experts = a->teacher_layer_experts;
  if (max_e > 1) { /* the teacher's MoE layers run under the student's MoE flags: the same checks */
    zt_args t = *a;
    t.num_layers = tl;
    t.moe_layer_experts = a->teacher_layer_experts;
    check_moe_layers(&t, min_e, max_e);
  }
  /* setup_teacher_model swaps in only the four teacher flags: ffn_hidden_size stays what the student's parse derived,
   * so a teacher of the student's hidden size takes the student's MLP width; a teacher of another hidden size could
   * not load in Megatron-DeepSpeed (its MLP is 4 x its own hidden size), and takes 4 x --hidden-size-teacher here */
  a->teacher_ffn_hidden_size = a->hidden_size_teacher == a->hidden_size ? a->ffn_hidden_size
                                                                        : 4 * a->hidden_size_teacher;
  zt_check(a->teacher_ffn_hidden_size % tp == 0, "inconsistent arguments", "%s: the teacher's MLP width %d is not "
           "divisible by --tensor-model-parallel-size %d (the teacher is split over the student's tensor-parallel "
           "ranks)", how, a->teacher_ffn_hidden_size, tp);
}

/* Megatron's validate_args for the weight-decay increment: the constant style takes --weight-decay for both ends (and
 * refuses the end flags); linear and cosine need both, and its OptimizerParamScheduler asserts 0 <= start <= end. */
static void check_weight_decay_schedule(zt_args *a, const unsigned char *seen) {
  static const char *const ends[] = {"--start-weight-decay", "--end-weight-decay"};
  const double values[] = {a->start_weight_decay, a->end_weight_decay};
  const char *style = k_wd_styles[a->weight_decay_incr_style].name;
  char v[2][40], wd[40];
  for (int k = 0; k < 2; k++) zt_py_float(v[k], sizeof v[k], values[k], 0);
  zt_py_float(wd, sizeof wd, a->weight_decay, 1);
  if (a->weight_decay_incr_style == ZT_WD_CONSTANT) {
    for (int k = 0; k < 2; k++)
      zt_check(!given(seen, ends[k]), "inconsistent arguments", "%s %s with --weight-decay-incr-style constant (the "
               "default): the weight decay is then --weight-decay %s throughout; give --weight-decay-incr-style linear "
               "or cosine for a schedule from --start-weight-decay to --end-weight-decay (Megatron asserts "
               "%s_weight_decay is None)", ends[k], v[k], wd, k ? "end" : "start");
    a->start_weight_decay = a->end_weight_decay = strtod(wd, NULL); /* Python's float of the flag's value */
    return;
  }
  const int have[] = {given(seen, ends[0]), given(seen, ends[1])};
  zt_check(have[0] && have[1], "missing argument", "--weight-decay-incr-style %s needs --start-weight-decay and "
           "--end-weight-decay (the weight decay goes from the one to the other over the run); %s", style,
           !have[0] && !have[1] ? "both are missing" : !have[0] ? "--start-weight-decay is missing"
                                                                : "--end-weight-decay is missing");
  check_real(a->start_weight_decay >= 0, "--start-weight-decay", a->start_weight_decay, 0, ">= 0");
  zt_check(a->end_weight_decay >= a->start_weight_decay, "inconsistent arguments", "--end-weight-decay %s is smaller "
           "than --start-weight-decay %s: the weight decay only increases (Megatron's OptimizerParamScheduler asserts "
           "end_wd >= start_wd)", v[1], v[0]);
}

/* Megatron's validate_args for the encoder-decoder flags: --encoder-num-layers names --num-layers and
 * --encoder-seq-length names --seq-length (never both of a pair); the decoder's flags are pretrain_t5's, its
 * --decoder-num-layers defaulting to --num-layers. */
static void encoder_decoder_flags(zt_args *a, const unsigned char *seen) {
  static const char *const pairs[2][2] = {{"--num-layers", "--encoder-num-layers"},
                                          {"--seq-length", "--encoder-seq-length"}};
  int *main_v[2] = {&a->num_layers, &a->seq_length}, *enc_v[2] = {&a->encoder_num_layers, &a->encoder_seq_length};
  for (int k = 0; k < 2; k++) {
    zt_check(!(given(seen, pairs[k][0]) && given(seen, pairs[k][1])), "inconsistent arguments", "%s %d and %s %d: "
             "cannot have both %s and %s specified (the same value under two names; give one)", pairs[k][0],
             *main_v[k], pairs[k][1], *enc_v[k], pairs[k][0] + 2, pairs[k][1] + 2);
    zt_check(given(seen, pairs[k][0]) || given(seen, pairs[k][1]), "missing argument", "%s (or %s) is required",
             pairs[k][0], pairs[k][1]);
    if (given(seen, pairs[k][1])) *main_v[k] = *enc_v[k];
    *enc_v[k] = *main_v[k];
  }
  static const char *const dec_flags[] = {"--decoder-num-layers", "--decoder-seq-length"};
  if (strcmp(zt_args_model, "t5") != 0) {
    for (int k = 0; k < 2; k++)
      zt_check(!given(seen, dec_flags[k]), "unsupported argument", "%s is a pretrain_t5 flag (the decoder of "
               "Megatron's encoder-decoder); this program trains %s", dec_flags[k], zt_args_model);
    return;
  }
  zt_check(given(seen, "--decoder-seq-length"), "missing argument", "--decoder-seq-length is required by "
           "pretrain_t5 (the decoder's tokens per sample: Megatron's T5 dataset pads its decoder input and labels to "
           "it)");
  if (!given(seen, "--decoder-num-layers")) a->decoder_num_layers = a->num_layers;
}

int zt_args_gpt_model_pipe(const zt_args *a) {
  return a->pipeline_model_parallel_size > 1 && a->deepspeed && strcmp(zt_args_model, "gpt") == 0;
}

int *zt_args_pipe_stages(const zt_args *a) {
  const int pp = a->pipeline_model_parallel_size, L = a->num_layers;
  if (pp <= 1 || a->num_layers_per_virtual_pipeline_stage > 0) return NULL;
  const int model_pipe = zt_args_gpt_model_pipe(a), t5 = strcmp(zt_args_model, "t5") == 0;
  if (!model_pipe && !a->standalone_embedding_stage) return NULL;
  int *first = zt_malloc(sizeof(int) * (size_t)(pp + 1), "pipeline stages");
  if (model_pipe) {
    zt_check(L <= 16384, "unsupported argument", "--num-layers %d over --pipeline-model-parallel-size %d with "
             "--deepspeed: DeepSpeed's partition of GPTModelPipe's layers is a dynamic program quadratic in the layers "
             "(seconds at 10000); more than 16384 layers are not supported", L, pp);
    zt_layout_ds_partition(L, pp, 2, zt_moe_on(&a->moe) + 2 + (a->fp16 || a->bf16), first);
    for (int s = 0; s < pp; s++)
      zt_check(first[s + 1] > first[s], "inconsistent arguments", "--num-layers %d over --pipeline-model-parallel-size "
               "%d: DeepSpeed's partition of GPTModelPipe's layers (type:transformer) leaves stage %d without a "
               "transformer layer; use at least as many layers as stages", L, pp, s);
    return first;
  }
  /* the standalone embedding stage: the (encoder's) layers over stages 1 .. enc - 1, none on the decoder's */
  const int enc = t5 ? a->pipeline_model_parallel_split_rank : pp, n = enc > 1 ? L / (enc - 1) : 0;
  zt_check(enc > 1 && n * (enc - 1) == L, "internal error", "args: %d layers over stages 1 to %d", L, enc - 1);
  first[0] = 0;
  for (int s = 1; s <= pp; s++) first[s] = s <= enc ? (s - 1) * n : L;
  return first;
}

static void finalize(zt_args *a, const unsigned char *seen, int world_size) {
  encoder_decoder_flags(a, seen);
  static const char *const required[] = {"--hidden-size", "--num-attention-heads", "--max-position-embeddings",
                                         "--micro-batch-size", "--lr"};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
    zt_check(given(seen, required[i]), "missing argument", "%s is required", required[i]);
  int by_iters = given(seen, "--train-iters"), by_samples = given(seen, "--train-samples");
  zt_check(!(by_iters && by_samples), "inconsistent arguments",
           "--train-iters and --train-samples are mutually exclusive (got --train-iters %lld and "
           "--train-samples %lld)", (long long)a->train_iters, (long long)a->train_samples);
  zt_check(by_iters || by_samples, "missing argument", "one of --train-iters or --train-samples is required");
  check_data(a, seen);
  const int bert = strcmp(zt_args_model, "bert") == 0, t5 = strcmp(zt_args_model, "t5") == 0;
  zt_check(bert || !given(seen, "--bert-no-binary-head"), "unsupported argument", "--bert-no-binary-head is a "
           "pretrain_bert flag (Megatron's BERT head); this program trains %s", zt_args_model);
  if (!bert && !t5) {
    static const char *const masking[] = {"--mask-prob", "--short-seq-prob"};
    for (size_t i = 0; i < sizeof masking / sizeof masking[0]; i++)
      zt_check(!given(seen, masking[i]), "unsupported argument", "%s is a pretrain_bert and pretrain_t5 flag "
               "(Megatron's masked samples); this program trains %s", masking[i], zt_args_model);
  } else {
    const char *model = bert ? "BERT" : "T5", *prog = bert ? "pretrain_bert" : "pretrain_t5";
    check_real(a->mask_prob > 0.0f && a->mask_prob < 1.0f, "--mask-prob", a->mask_prob, 1, "in (0, 1)");
    check_real(a->short_seq_prob >= 0.0f && a->short_seq_prob <= 1.0f, "--short-seq-prob", a->short_seq_prob, 1,
               "in [0, 1]");
    zt_check(!a->untie_embeddings_and_output_weights, "inconsistent arguments", "--untie-embeddings-and-output-"
             "weights: %s's output layer is tied to the word embeddings (Megatron's %s asserts it)", model,
             bert ? "BertModel" : "TransformerLanguageModel with a decoder");
    zt_check(!a->mock_data, "unsupported argument", "--mock-data: %s reads Megatron's %s samples from "
             "sentence-split data (preprocess_data --split-sentences); give --data-path", prog, model);
  }
  zt_check(!(a->deepspeed_config && !a->deepspeed), "inconsistent arguments",
           "--deepspeed_config %s is given without --deepspeed (Megatron-DeepSpeed would silently ignore the "
           "file): add --deepspeed", a->deepspeed_config);
  zt_check(!(a->deepspeed && !a->deepspeed_config), "missing argument",
           "--deepspeed needs --deepspeed_config FILE (the ds_config.json)");
  /* checkpoints */
  if (given(seen, "--save-interval")) check_positive("--save-interval", a->save_interval);
  if (given(seen, "--exit-interval")) check_positive("--exit-interval", a->exit_interval);
  zt_check(a->perform_initialization || a->load, "missing argument", "--no-initialization leaves the weights for a "
           "checkpoint to fill: give --load DIR (Megatron-DeepSpeed would train on torch.empty's memory)");
  if (given(seen, "--exit-duration-in-mins")) check_positive("--exit-duration-in-mins", a->exit_duration_in_mins);
  zt_check(!(a->load_tag && !a->load), "missing argument", "--load-tag %s needs --load DIR", a->load_tag);
  zt_check(!(a->finetune && !a->load), "missing argument", "--finetune needs --load DIR (the checkpoint to start "
           "from)");
  zt_check(!(a->override_opt_param_scheduler && a->use_checkpoint_opt_param_scheduler), "inconsistent arguments",
           "--override-opt_param-scheduler and --use-checkpoint-opt_param-scheduler: both override and use-checkpoint "
           "are set (choose one)");

  /* sizes */
  check_positive("--num-layers", a->num_layers);
  check_positive("--hidden-size", a->hidden_size);
  check_positive("--num-attention-heads", a->num_attention_heads);
  check_positive("--max-position-embeddings", a->max_position_embeddings);
  check_positive("--seq-length", a->seq_length);
  check_positive("--micro-batch-size", a->micro_batch_size);
  check_positive("--make-vocab-size-divisible-by", a->make_vocab_size_divisible_by);
  check_positive("--vocab-size", a->vocab_size);
  check_positive("--log-interval", a->log_interval);
  check_positive("--eval-interval", a->eval_interval);
  zt_check(a->eval_iters >= 0, "bad argument value", "--eval-iters %d: must be >= 0", a->eval_iters);
  check_real(a->distributed_timeout_minutes > 0 && a->distributed_timeout_minutes <= 1e6,
             "--distributed-timeout-minutes", a->distributed_timeout_minutes, 0, "in (0, 1000000]");
  check_real(a->step_timeout_seconds >= 0 && a->step_timeout_seconds <= 1e9, "--step-timeout-seconds",
             a->step_timeout_seconds, 0, "in [0, 1e9] (0 turns the watchdog off)");
  /* TensorBoard and timers; Weights & Biases needs the network */
  check_positive("--tensorboard-log-interval", a->tensorboard_log_interval);
  check_positive("--tensorboard-queue-size", a->tensorboard_queue_size);
  zt_check(a->timing_log_level >= 0 && a->timing_log_level <= 2, "bad argument value",
           "--timing-log-level %d: invalid choice (choose from 0, 1, 2)", a->timing_log_level);
  zt_check(!(a->tensorboard_dir && !a->tensorboard_dir[0]), "bad argument value",
           "--tensorboard-dir: an empty path (give the directory for the event files, or leave the flag out)");
  static const char *const wandb_flags[] = {"--wandb-project", "--wandb-exp-name", "--wandb-save-dir"};
  const char *const wandb_values[] = {a->wandb_project, a->wandb_exp_name, a->wandb_save_dir};
  for (int i = 0; i < 3; i++)
    zt_check(!wandb_values[i][0], "unsupported argument", "%s %s: Weights & Biases logging is not supported (it "
             "needs the wandb Python client and network access to its server); use --tensorboard-dir DIR, whose "
             "event files TensorBoard (and `wandb sync --sync-tensorboard`) read, or leave the flag empty",
             wandb_flags[i], wandb_values[i]);
  if (given(seen, "--ffn-hidden-size")) check_positive("--ffn-hidden-size", a->ffn_hidden_size);
  if (given(seen, "--kv-channels")) check_positive("--kv-channels", a->kv_channels);
  if (given(seen, "--global-batch-size")) check_positive("--global-batch-size", a->global_batch_size);
  if (by_iters) check_positive("--train-iters", a->train_iters);
  if (by_samples) check_positive("--train-samples", a->train_samples);
  if (given(seen, "--lr-decay-iters")) check_positive("--lr-decay-iters", a->lr_decay_iters);
  if (given(seen, "--lr-decay-samples")) check_positive("--lr-decay-samples", a->lr_decay_samples);
  zt_check(a->lr_warmup_iters >= 0, "bad argument value", "--lr-warmup-iters %lld: must be >= 0",
           (long long)a->lr_warmup_iters);
  zt_check(a->lr_warmup_samples >= 0, "bad argument value", "--lr-warmup-samples %lld: must be >= 0",
           (long long)a->lr_warmup_samples);

  /* shape */
  zt_check(a->hidden_size % a->num_attention_heads == 0, "inconsistent arguments",
           "--hidden-size %d is not divisible by --num-attention-heads %d", a->hidden_size, a->num_attention_heads);
  int head_dim = a->hidden_size / a->num_attention_heads;
  if (given(seen, "--kv-channels"))
    zt_check(a->kv_channels == head_dim, "unsupported argument",
             "--kv-channels %d differs from --hidden-size %d / --num-attention-heads %d = %d; other values are "
             "not supported yet", a->kv_channels, a->hidden_size, a->num_attention_heads, head_dim);
  a->kv_channels = head_dim;
  if (!given(seen, "--ffn-hidden-size")) {
    zt_check(a->hidden_size <= INT_MAX / 4, "bad argument value", "--hidden-size %d: too large", a->hidden_size);
    /* Megatron-DeepSpeed's: with SwiGLU two thirds of 4h (its parameters match the GELU MLP's), a multiple of 64 */
    a->ffn_hidden_size = a->swiglu ? (int)(4.0 * a->hidden_size * 2.0 / 3.0 / 64.0) * 64 : 4 * a->hidden_size;
    zt_check(a->ffn_hidden_size > 0, "inconsistent arguments", "--swiglu: the default --ffn-hidden-size "
             "int(4 x %d x 2 / 3 / 64) x 64 is 0; give --ffn-hidden-size", a->hidden_size);
  }
  check_llama_flags(a, seen, head_dim);
  check_activation_flags(a);
  zt_check(a->seq_length <= a->max_position_embeddings, "inconsistent arguments",
           "--seq-length %d is larger than --max-position-embeddings %d", a->seq_length, a->max_position_embeddings);
  if (strcmp(zt_args_model, "t5") == 0) {
    zt_check(!a->random_ltd, "unsupported argument", "--random-ltd: Megatron-DeepSpeed's random-LTD converts GPT and "
             "BERT layers only (pretrain_t5 has none)");
    check_positive("--decoder-num-layers", a->decoder_num_layers);
    check_positive("--decoder-seq-length", a->decoder_seq_length);
    zt_check(a->decoder_seq_length <= a->max_position_embeddings, "inconsistent arguments", "--decoder-seq-length %d "
             "is larger than --max-position-embeddings %d (the decoder's positions share the table)",
             a->decoder_seq_length, a->max_position_embeddings);
    zt_check(!a->use_rotary_position_embeddings || a->decoder_seq_length <= a->seq_length, "inconsistent arguments",
             "--decoder-seq-length %d is above --encoder-seq-length %d with --use-rotary-position-embeddings: "
             "Megatron-DeepSpeed builds the rotary table for the encoder's length and slices it for the decoder",
             a->decoder_seq_length, a->seq_length);
  }

  /* regularization, optimizer, init */
  check_real(a->layernorm_epsilon > 0, "--layernorm-epsilon", a->layernorm_epsilon, 1, "> 0");
  check_real(a->attention_dropout >= 0 && a->attention_dropout < 1, "--attention-dropout", a->attention_dropout, 1,
             "in [0, 1)");
  /* Megatron-DeepSpeed's Triton FlashAttention calls flash_attn_func without a dropout probability: its runs have
   * no attention dropout. Without --attention-dropout that is the run to reproduce (examples_deepspeed's scripts
   * rely on it); a dropout asked for explicitly contradicts the flag and is refused */
  if (a->use_flash_attn_triton && a->attention_dropout != 0.0f) {
    zt_check(!given(seen, "--attention-dropout"), "unsupported argument",
             "--use-flash-attn-triton with --attention-dropout %g: Megatron-DeepSpeed's Triton FlashAttention applies "
             "no attention dropout, so that run would not be the one asked for; use --attention-dropout 0, or "
             "--use-flash-attn-v2, which applies it", (double)a->attention_dropout);
    a->attention_dropout = 0.0f;
    zt_log("> --use-flash-attn-triton: attention dropout 0, as Megatron-DeepSpeed's Triton FlashAttention runs\n");
  }
  check_real(a->hidden_dropout >= 0 && a->hidden_dropout < 1, "--hidden-dropout", a->hidden_dropout, 1, "in [0, 1)");
  check_real(a->weight_decay >= 0, "--weight-decay", a->weight_decay, 1, ">= 0");
  check_weight_decay_schedule(a, seen);
  check_real(a->clip_grad >= 0, "--clip-grad", a->clip_grad, 1, ">= 0 (0 disables clipping)");
  check_real(a->adam_beta1 >= 0 && a->adam_beta1 < 1, "--adam-beta1", a->adam_beta1, 1, "in [0, 1)");
  check_real(a->adam_beta2 >= 0 && a->adam_beta2 < 1, "--adam-beta2", a->adam_beta2, 1, "in [0, 1)");
  check_real(a->adam_eps > 0, "--adam-eps", a->adam_eps, 1, "> 0");
  check_real(a->sgd_momentum >= 0 && a->sgd_momentum < 1, "--sgd-momentum", a->sgd_momentum, 1, "in [0, 1)");
  check_real(a->init_method_std > 0, "--init-method-std", a->init_method_std, 1, "> 0");

  /* learning-rate schedule; Megatron's rules: the schedule is in the unit of the training length, and a
   * warmup fraction excludes an explicit warmup length. */
  check_real(a->lr >= 0, "--lr", a->lr, 0, ">= 0");
  check_real(a->min_lr >= 0, "--min-lr", a->min_lr, 0, ">= 0");
  if (a->min_lr > a->lr) {
    char lo[40], hi[40];
    zt_py_float(lo, sizeof lo, a->min_lr, 0);
    zt_py_float(hi, sizeof hi, a->lr, 0);
    zt_fatal("inconsistent arguments", "--min-lr %s is larger than --lr %s", lo, hi);
  }
  if (given(seen, "--lr-warmup-fraction")) {
    check_real(a->lr_warmup_fraction >= 0 && a->lr_warmup_fraction <= 1, "--lr-warmup-fraction",
               a->lr_warmup_fraction, 0, "in [0, 1]");
    zt_check(a->lr_warmup_iters == 0, "inconsistent arguments", "--lr-warmup-fraction and --lr-warmup-iters are "
             "mutually exclusive (got --lr-warmup-iters %lld)", (long long)a->lr_warmup_iters);
    zt_check(a->lr_warmup_samples == 0, "inconsistent arguments", "--lr-warmup-fraction and --lr-warmup-samples "
             "are mutually exclusive (got --lr-warmup-samples %lld)", (long long)a->lr_warmup_samples);
  }
  const char *unit = by_iters ? "--train-iters" : "--train-samples";
  const char *bad_decay = by_iters ? "--lr-decay-samples" : "--lr-decay-iters";
  const char *bad_warmup = by_iters ? "--lr-warmup-samples" : "--lr-warmup-iters";
  zt_check(!given(seen, bad_decay), "inconsistent arguments", "%s cannot be used with %s: the schedule is counted "
           "in the unit of the training length", bad_decay, unit);
  zt_check((by_iters ? a->lr_warmup_samples : a->lr_warmup_iters) == 0, "inconsistent arguments", "%s cannot be "
           "used with %s: the schedule is counted in the unit of the training length", bad_warmup, unit);

  /* mixed precision */
  zt_check(!(a->fp16 && a->bf16), "inconsistent arguments", "--fp16 and --bf16 cannot be used together");
  zt_check(a->empty_unused_memory_level >= 0 && a->empty_unused_memory_level <= 2, "bad argument value",
           "--empty-unused-memory-level %d: invalid choice (choose from 0, 1, 2)", a->empty_unused_memory_level);
  if (a->ddp_impl != 0) a->use_contiguous_buffers_in_local_ddp = 0; /* Megatron: only local DDP has them */
  if (a->bf16 && !a->accumulate_allreduce_grads_in_fp32) { /* as Megatron's arguments.py */
    a->accumulate_allreduce_grads_in_fp32 = 1;
    zt_log("accumulate and all-reduce gradients in fp32 for bfloat16 data type.\n");
  }
  zt_check(!a->use_distributed_optimizer || (a->ddp_impl == 0 && a->use_contiguous_buffers_in_local_ddp),
           "inconsistent arguments", "--use-distributed-optimizer with %s: Megatron's distributed optimizer needs its "
           "local DDP with contiguous buffers (its assert)",
           a->ddp_impl ? "--DDP-impl torch" : "--no-contiguous-buffers-in-local-ddp");
  zt_check(!a->use_distributed_optimizer || !a->deepspeed, "inconsistent arguments", "--use-distributed-optimizer "
           "with --deepspeed: Megatron-DeepSpeed then hands its distributed optimizer to DeepSpeed as a client "
           "optimizer; shard the optimizer state with the ds_config's zero_optimization.stage 1 instead "
           "(docs/zero.md)");
  zt_check(!a->accumulate_allreduce_grads_in_fp32 || (a->ddp_impl == 0 && a->use_contiguous_buffers_in_local_ddp),
           "inconsistent arguments", "%s with %s: Megatron accumulates and all-reduces the gradients in fp32 only in "
           "its local DDP with contiguous buffers (its assert)", a->bf16 ? "--bf16 (gradients accumulated and "
           "all-reduced in fp32)" : "--accumulate-allreduce-grads-in-fp32",
           a->ddp_impl ? "--DDP-impl torch" : "--no-contiguous-buffers-in-local-ddp");
  if (given(seen, "--loss-scale"))
    check_real(a->loss_scale > 0, "--loss-scale", a->loss_scale, 0, "> 0 (leave it out for a dynamic scale)");
  check_real(a->initial_loss_scale > 0, "--initial-loss-scale", a->initial_loss_scale, 0, "> 0");
  check_real(a->min_loss_scale > 0, "--min-loss-scale", a->min_loss_scale, 0, "> 0");
  check_real(a->min_loss_scale <= a->initial_loss_scale, "--min-loss-scale", a->min_loss_scale, 0,
             "<= --initial-loss-scale");
  check_positive("--loss-scale-window", a->loss_scale_window);
  check_positive("--hysteresis", a->hysteresis);

  /* activation recompute */
  check_positive("--recompute-num-layers", a->recompute_num_layers);
  zt_check(a->recompute_num_layers <= a->num_layers, "inconsistent arguments",
           "--recompute-num-layers %d is larger than --num-layers %d", a->recompute_num_layers, a->num_layers);
  if (a->recompute_activations) /* Megatron: recompute_granularity = 'selective'; its --checkpoint-activations (our
                                  * full) still checkpoints whole layers, which then keep no probabilities anyway */
    a->recompute_granularity = given(seen, "--checkpoint-activations") ? ZT_RECOMPUTE_FULL : ZT_RECOMPUTE_SELECTIVE;
  zt_check(a->recompute_granularity != ZT_RECOMPUTE_SELECTIVE || !given(seen, "--recompute-method"),
           "inconsistent arguments", "--recompute-method with --recompute-granularity selective: recompute method is "
           "not yet supported for selective recomputing granularity (Megatron's assert)");

  /* parallel layout and batch */
  zt_check(world_size >= 1, "internal error", "args: world size %d", world_size);
  int tp = a->tensor_model_parallel_size, pp = a->pipeline_model_parallel_size;
  check_positive("--tensor-model-parallel-size", tp);
  check_positive("--pipeline-model-parallel-size", pp);
  if (tp > world_size) tp = a->tensor_model_parallel_size = world_size; /* Megatron clips it to the world */
  if (pp > world_size / tp) pp = a->pipeline_model_parallel_size = world_size / tp; /* Megatron's clipping */
  const int split = a->pipeline_model_parallel_split_rank; /* t5: as above, in this function */
  zt_check(split < 0 || t5, "unsupported argument", "--pipeline-model-parallel-split-rank %d is a pretrain_t5 flag (the "
           "first decoder stage of an encoder-decoder); this program trains %s", split, zt_args_model);
  if (t5 && pp > 1) { /* Megatron's validate_args and _get_num_layers for encoder_and_decoder models */
    zt_check(split >= 0, "missing argument", "--pipeline-model-parallel-split-rank is required with "
             "--pipeline-model-parallel-size %d: the stages before it hold the encoder, the others the decoder", pp);
    zt_check(split < pp, "inconsistent arguments", "--pipeline-model-parallel-split-rank %d: split rank needs to be "
             "less than pipeline model parallel size (%d)", split, pp);
    const int sa = a->standalone_embedding_stage; /* Megatron: the embedding's stage is taken from the encoder's */
    zt_check(split >= 1 + sa, "inconsistent arguments", "--pipeline-model-parallel-split-rank %d: the encoder needs at "
             "least one stage%s (a split rank in [%d, %d]%s)", split, sa ? " of layers" : "", 1 + sa, pp - 1,
             sa ? "; --standalone-embedding-stage takes stage 0 for the embedding" : "");
    zt_check(a->num_layers % (split - sa) == 0, "inconsistent arguments", "encoder_num_layers (%d) must be divisible "
             "by number of ranks given to encoder (%d) (--pipeline-model-parallel-split-rank%s)", a->num_layers,
             split - sa, sa ? " - 1: --standalone-embedding-stage" : "");
    zt_check(a->decoder_num_layers % (pp - split) == 0, "inconsistent arguments", "decoder_num_layers (%d) must be "
             "divisible by number of ranks given to decoder (%d) (--pipeline-model-parallel-size %d - split rank %d)",
             a->decoder_num_layers, pp - split, pp, split);
    zt_check(!given(seen, "--num-layers-per-virtual-pipeline-stage"), "unsupported argument",
             "--num-layers-per-virtual-pipeline-stage with pretrain_t5: Megatron's interleaved schedule does not "
             "split an encoder-decoder model");
  } else if (t5) {
    zt_check(split < 0, "inconsistent arguments", "--pipeline-model-parallel-split-rank %d needs "
             "--pipeline-model-parallel-size > 1 (one stage holds the whole encoder and decoder)", split);
  }
  /* --standalone-embedding-stage (Megatron's transformer_pipeline_model_parallel_size = pp - 1): stage 0 holds the
   * embedding alone; not with the interleaved schedule (Megatron's virtual chunks of stage 0 would hold no layers),
   * no effect without stages or where GPTModelPipe's DeepSpeed partition applies (pretrain_gpt --deepspeed) */
  const int gpt = strcmp(zt_args_model, "gpt") == 0, ds_gpt = gpt && a->deepspeed;
  if (a->standalone_embedding_stage) {
    zt_check(!given(seen, "--num-layers-per-virtual-pipeline-stage"), "unsupported argument", "--standalone-embedding-"
             "stage with --num-layers-per-virtual-pipeline-stage %d: the interleaved schedule with an embedding-only "
             "stage is not supported (drop one of them)", a->num_layers_per_virtual_pipeline_stage);
    if (pp == 1 || ds_gpt)
      zt_log("> --standalone-embedding-stage: no effect %s\n", pp == 1 ? "without pipeline stages (--pipeline-model-"
             "parallel-size 1)" : "with --deepspeed (pretrain_gpt's stages are DeepSpeed's partition of GPTModelPipe, "
             "which Megatron-DeepSpeed builds there and which does not read the flag)");
    else if (!t5)
      zt_check(pp > 1 && a->num_layers % (pp - 1) == 0, "inconsistent arguments", "--num-layers %d must be divisible "
               "by transformer_pipeline_model_parallel_size %d (--pipeline-model-parallel-size %d - 1: "
               "--standalone-embedding-stage takes stage 0 for the embedding)", a->num_layers, pp - 1, pp);
  }
  /* pretrain_gpt under --deepspeed builds GPTModelPipe, whose stages DeepSpeed cuts by transformer layers: they need
   * not divide (zt_args_pipe_stages), but every stage needs one; Megatron's own pipeline model (without --deepspeed,
   * or interleaved) asserts that they divide */
  int *stages = zt_args_pipe_stages(a);
  const int own_stages = stages != NULL;
  free(stages);
  zt_check(pp == 1 || t5 || own_stages || a->num_layers % pp == 0, "inconsistent arguments", "--num-layers %d is not "
           "divisible by --pipeline-model-parallel-size %d%s", a->num_layers, pp, gpt && !a->deepspeed ? " (with "
           "--deepspeed, pretrain_gpt's stages are DeepSpeed's, which need not divide them)" : "");
  zt_check(world_size % (tp * pp) == 0, "inconsistent arguments", "world size %d is not divisible by "
           "--tensor-model-parallel-size %d x --pipeline-model-parallel-size %d = %d", world_size, tp, pp, tp * pp);
  const int usp = a->ds_sequence_parallel_size;
  zt_check(usp == 1 || (tp == 1 && pp == 1), "inconsistent arguments", "DeepSpeed's sequence parallel does not work "
           "with tensor parallel or pipeline parallel (--ds-sequence-parallel-size %d with "
           "--tensor-model-parallel-size %d and --pipeline-model-parallel-size %d)", usp, tp, pp);
  zt_check(world_size % usp == 0, "inconsistent arguments", "world size (%d) is not divisible by tensor parallel size "
           "(%d) times pipeline parallel size (%d) times seqence parallel size (%d) (--ds-sequence-parallel-size)",
           world_size, tp, pp, usp);
  zt_check(usp == 1 || a->seq_length % usp == 0, "inconsistent arguments", "--seq-length %d is not divisible by "
           "--ds-sequence-parallel-size %d (each rank holds an equal share of every sequence)", a->seq_length, usp);
  zt_check(usp == 1 || a->num_attention_heads % usp == 0, "inconsistent arguments", "--num-attention-heads %d is not "
           "divisible by --ds-sequence-parallel-size %d (the attention splits the heads over the sequence-parallel "
           "ranks)", a->num_attention_heads, usp);
  /* the data-parallel size excludes the sequence-parallel ranks, which read the same samples (Megatron-DeepSpeed) */
  a->data_parallel_size = world_size / (tp * pp * usp);
  a->virtual_pipeline_model_parallel_size = -1;
  if (given(seen, "--num-layers-per-virtual-pipeline-stage")) { /* Megatron's asserts, with the numbers */
    const int n = a->num_layers_per_virtual_pipeline_stage;
    check_positive("--num-layers-per-virtual-pipeline-stage", n);
    zt_check(pp > 2, "inconsistent arguments", "--pipeline-model-parallel-size %d must be greater than 2 with the "
             "interleaved schedule (--num-layers-per-virtual-pipeline-stage %d)", pp, n);
    zt_check(a->num_layers % ((long long)pp * n) == 0, "inconsistent arguments", "--num-layers %d is not divisible "
             "by --pipeline-model-parallel-size %d x --num-layers-per-virtual-pipeline-stage %d = %lld",
             a->num_layers, pp, n, (long long)pp * n);
    a->virtual_pipeline_model_parallel_size = a->num_layers / (pp * n);
  }
  /* tensor parallelism splits the heads, the MLP columns and (with --sequence-parallel) the sequence */
  zt_check(a->num_attention_heads % tp == 0, "inconsistent arguments", "--num-attention-heads %d is not divisible "
           "by --tensor-model-parallel-size %d", a->num_attention_heads, tp);
  zt_check(a->num_key_value_heads % tp == 0, "inconsistent arguments", "--num-key-value-heads %d is not divisible by "
           "--tensor-model-parallel-size %d (each rank holds whole key/value groups, as Megatron-DeepSpeed divides "
           "them)", a->num_key_value_heads, tp);
  zt_check(a->ffn_hidden_size % tp == 0, "inconsistent arguments", "--ffn-hidden-size %d%s is not divisible by "
           "--tensor-model-parallel-size %d", a->ffn_hidden_size, given(seen, "--ffn-hidden-size") ? "" :
           " (4 x --hidden-size)", tp);
  if (tp == 1) a->sequence_parallel = 0; /* Megatron turns it off with one tensor-parallel rank */
  zt_check(!a->sequence_parallel || a->seq_length % tp == 0, "inconsistent arguments", "--seq-length %d is not "
           "divisible by --tensor-model-parallel-size %d (--sequence-parallel splits the sequence over the "
           "tensor-parallel ranks)", a->seq_length, tp);
  long long per_step = (long long)a->micro_batch_size * a->data_parallel_size;
  if (!given(seen, "--global-batch-size")) {
    zt_check(per_step <= INT_MAX, "bad batch size", "--micro-batch-size %d x data-parallel size %d is too large",
             a->micro_batch_size, a->data_parallel_size);
    a->global_batch_size = (int)per_step;
  }
  zt_check(a->global_batch_size % per_step == 0, "bad batch size", "--global-batch-size %d is not divisible by "
           "--micro-batch-size %d x data-parallel size %d = %lld", a->global_batch_size, a->micro_batch_size,
           a->data_parallel_size, per_step);
  a->num_microbatches = (int)(a->global_batch_size / per_step);
  zt_rampup ramp; /* --rampup-batch-size: checked here, the run's iterations counted with it (train/rampup.h); with
                   * --deepspeed and no --global-batch-size the ds_config's train_batch_size ends it (checked there) */
  if (a->deepspeed && !given(seen, "--global-batch-size")) zt_rampup_parse(&ramp, a), ramp.on = 0;
  else zt_rampup_init(&ramp, a, "--global-batch-size");
  if (by_samples) {
    a->train_iters = zt_rampup_train_iters(&ramp, a->train_samples);
    zt_check(a->train_iters > 0, "inconsistent arguments", "--train-samples %lld is less than one global batch "
             "(--global-batch-size %d)", (long long)a->train_samples, a->global_batch_size);
  }

  check_counts(a, by_iters);
  check_script_flags(a, seen);
  check_profile_flags(a, world_size);
  zt_check(!zt_moe_on(&a->moe) || a->data_parallel_size % a->moe_expert_parallel_size == 0, "inconsistent arguments",
           "data-parallel size %d (world size %d / (--tensor-model-parallel-size %d x --pipeline-model-parallel-size "
           "%d)) is not divisible by --moe-expert-parallel-size %d: the expert-parallel groups are carved from the "
           "data-parallel group (DeepSpeed asserts dp_world_size %% expert_parallel_size == 0)", a->data_parallel_size,
           world_size, a->tensor_model_parallel_size, a->pipeline_model_parallel_size, a->moe_expert_parallel_size);
  zt_check(!zt_moe_on(&a->moe) || a->ds_sequence_parallel_size == 1, "unsupported argument", "--num-experts with "
           "--ds-sequence-parallel-size %d: MoE layers with DeepSpeed's sequence parallelism land with the MoE "
           "expert-parallel work (issue 18)", a->ds_sequence_parallel_size);
  check_kd_flags(a, seen);
  pad_vocab(a);
}

void zt_args_model_variants(const zt_args *a, zt_model_args *m) {
  const int head_dim = a->hidden_size / a->num_attention_heads;
  m->rmsnorm = a->normalization;
  m->swiglu = a->swiglu;
  m->no_bias_linear = !a->add_bias_linear;
  m->rotary_dims = rotary_dims(a, head_dim);
  m->rope_theta = (float)a->rope_theta;
  m->no_position_embedding = !a->add_position_embedding;
  m->kv_heads = a->num_key_value_heads > 0 ? a->num_key_value_heads : a->num_attention_heads;
  /* ParallelMLP's choice: openai_gelu, then swiglu, squared_relu, else F.gelu, fused with the bias (the tanh form)
   * when bias_gelu_fusion holds (Megatron-DeepSpeed clears it without linear biases) */
  m->mlp_act = a->openai_gelu ? ZT_ACT_GELU_TANH
               : a->squared_relu ? ZT_ACT_SQUARED_RELU
               : a->bias_gelu_fusion && a->add_bias_linear ? ZT_ACT_GELU_TANH : ZT_ACT_GELU_ERF;
  m->head_gelu_tanh = a->openai_gelu;
  m->layernorm_1p = a->apply_layernorm_1p && !a->normalization;
  m->init_xavier = a->init_method_xavier_uniform;
}

void zt_args_set_vocab_size(zt_args *a, int vocab_size, const char *tokenizer_name) {
  if (a->vocab_size_given && a->tokenizer_type != ZT_TOK_NULL)
    zt_check(a->vocab_size == vocab_size, "inconsistent arguments",
             "--vocab-size %d differs from the %d tokens of the %s tokenizer (drop --vocab-size)", a->vocab_size,
             vocab_size, tokenizer_name);
  a->vocab_size = vocab_size;
  pad_vocab(a);
}

/* ---- entry points -------------------------------------------------------------------------------- */

static void set_defaults(zt_args *a) {
  memset(a, 0, sizeof *a);
  a->num_layers = a->hidden_size = a->ffn_hidden_size = a->num_attention_heads = -1;
  a->kv_channels = a->max_position_embeddings = a->seq_length = a->micro_batch_size = -1;
  a->encoder_num_layers = a->decoder_num_layers = a->encoder_seq_length = a->decoder_seq_length = -1;
  a->pipeline_model_parallel_split_rank = -1;
  a->global_batch_size = a->padded_vocab_size = -1;
  a->make_vocab_size_divisible_by = 128;
  a->layernorm_epsilon = 1e-5f;
  a->vocab_size = 50257;
  a->split = "969, 30, 1";
  a->tokenizer_type = strcmp(zt_args_model, "gpt") != 0 ? ZT_TOK_BERT_LOWER : ZT_TOK_GPT2BPE; /* BERT, T5 */
  a->bert_binary_head = 1;
  a->mask_prob = 0.15f;
  a->short_seq_prob = 0.1f;
  a->data_impl = 1;
  a->train_data_exact_num_epochs = -1;
  a->attention_dropout = a->hidden_dropout = 0.1f;
  a->weight_decay = 0.01f;
  a->clip_grad = 1.0f;
  a->adam_beta1 = 0.9f;
  a->adam_beta2 = 0.999f;
  a->adam_eps = 1e-8f;
  a->sgd_momentum = 0.9f;
  a->optimizer = ZT_OPTIMIZER_ADAM;
  a->init_method_std = 0.02f;
  a->seed = 1234;
  a->train_iters = a->train_samples = -1;
  a->lr = -1.0;
  a->min_lr = 0.0;
  a->lr_decay_style = ZT_LR_DECAY_LINEAR;
  a->lr_decay_iters = a->lr_decay_samples = -1;
  a->lr_warmup_fraction = -1.0;
  a->loss_scale = -1.0;
  a->initial_loss_scale = 4294967296.0;
  a->min_loss_scale = 1.0;
  a->loss_scale_window = 1000;
  a->hysteresis = 2;
  a->recompute_granularity = ZT_RECOMPUTE_NONE;
  a->recompute_method_uniform = 1;
  a->recompute_num_layers = 1;
  a->tensor_model_parallel_size = a->pipeline_model_parallel_size = a->data_parallel_size = 1;
  a->num_layers_per_virtual_pipeline_stage = a->virtual_pipeline_model_parallel_size = -1;
  a->log_interval = 100;
  a->eval_interval = 1000;
  a->eval_iters = 100;
  a->save_interval = a->exit_interval = a->exit_duration_in_mins = -1;
  a->distributed_timeout_minutes = 10;
  a->step_timeout_seconds = 0;
  a->num_workers = 2; /* Megatron's default (it has no effect here) */
  a->train_tokens = a->lr_warmup_tokens = a->lr_decay_tokens = -1;
  a->zero_stage = 1;  /* Megatron-DeepSpeed's default=1.0 */
  a->ds_sequence_parallel_size = 1;
  a->ds_sequence_parallel_fpdt_chunk_size = 65536;
  a->mlp_type = 0, a->topk = 1, a->expert_interval = 2, a->moe_expert_parallel_size = 1, a->moe_min_capacity = 4;
  a->moe_train_capacity_factor = a->moe_eval_capacity_factor = 1.0, a->moe_loss_coeff = 0.1;
  a->moe_token_dropping = a->moe_top2_2nd_expert_sampling = 1;
  a->num_layers_teacher = a->hidden_size_teacher = a->num_attention_heads_teacher = -1;
  a->kd_alpha_ce = a->kd_beta_ce = a->kd_temp = 1.0;
  a->add_bias_linear = a->add_position_embedding = a->apply_query_key_layer_scaling = 1;
  a->rope_theta = 10000;
  a->rotary_percent = 1.0f;
  a->num_key_value_heads = -1;
  a->data_sharding = 1;
  a->perform_initialization = 1;
  a->profile_steps = "2,3";
  a->use_contiguous_buffers_in_local_ddp = 1;
  a->scatter_gather_tensors_in_pipeline = 1;
  a->masked_softmax_fusion = a->bias_gelu_fusion = a->bias_dropout_fusion = a->gradient_accumulation_fusion = 1;
  a->mem_efficient_ln = 1;
  a->async_tensor_model_parallel_allreduce = 1;
  a->local_rank = -1;
  a->tensorboard_log_interval = 1;
  a->tensorboard_queue_size = 1000;
  a->log_learning_rate_to_tensorboard = a->log_loss_scale_to_tensorboard = 1;
  a->timing_log_option = 1;
  a->barrier_with_L1_time = 1;
  a->wandb_project = a->wandb_exp_name = a->wandb_save_dir = "";
}

/* A value follows a flag unless the next word is itself a flag; "-5" or "-.5" are values. */
static int is_value(const char *s) {
  return s[0] != '-' || (s[1] >= '0' && s[1] <= '9') || (s[1] == '.' && s[2] >= '0' && s[2] <= '9');
}

/* --use-checkpoint-args: Megatron's load_args_from_checkpoint. The model shape comes from the saved arguments of
 * the --load checkpoint where the command line leaves it out (always for the ones Megatron forces); the
 * vocabulary (size, padding multiple) and the tokenizer type follow it. */
char *(*zt_args_checkpoint_reader)(const char *root, const char *tag) = NULL;
int zt_args_checkpoint_overrides = 0;

/* A saved list argument ("[2, 2]", Python's repr of a list of ints) as the words of an F_LIST flag; the words live as
 * long as the program (the parsed arguments point at them, as at argv's). */
static void set_list_from_repr(zt_strlist *list, const char *value) {
  char *text = strdup(value);
  const char **words = zt_malloc((strlen(value) / 2 + 2) * sizeof(char *), "checkpoint arguments");
  int n = 0;
  for (char *tok = strtok(text, "[], '"); tok; tok = strtok(NULL, "[], '")) words[n++] = tok;
  list->n = n;
  list->v = words;
}

int zt_args_summary_value(const char *text, const char *name, char *buf, size_t n) {
  const size_t len = strlen(name);
  for (const char *p = text; p && *p;) {
    const char *eol = strchr(p, '\n');
    size_t linelen = eol ? (size_t)(eol - p) : strlen(p);
    if (linelen > len && strncmp(p, name, len) == 0 && p[len] == ' ') {
      size_t vlen = linelen - len - 1;
      if (vlen >= n) vlen = n - 1;
      memcpy(buf, p + len + 1, vlen);
      buf[vlen] = '\0';
      return 1;
    }
    p = eol ? eol + 1 : NULL;
  }
  return 0;
}

static void apply_checkpoint_args(zt_args *a, unsigned char *seen) {
  zt_check(a->load != NULL, "missing argument", "--use-checkpoint-args needs --load DIR");
  zt_check(zt_args_checkpoint_reader != NULL, "unsupported argument", "--use-checkpoint-args: this program reads "
           "no checkpoints");
  char *text = zt_args_checkpoint_reader(a->load, a->load_tag);
  if (!text) {
    zt_check(!a->exit_on_missing_checkpoint, "checkpoint", "--exit-on-missing-checkpoint: no checkpoint in --load "
             "%s to provide arguments", a->load);
    zt_log("Checkpoint not found to provide arguments, using provided arguments.\n");
    return;
  }
  /* flag: where the argument's flag is not --<name> (an F_CONST flag, "--no-x", stores its value when the saved
   * argument is False, else the default); harness: taken only for the lm-evaluation-harness command line
   * (zt_args_checkpoint_overrides), whose tasks/eval_harness/evaluate.py takes every model argument from the
   * checkpoint, the MoE layers and the precision among them */
  static const struct { const char *name; int force; const char *flag; int harness; } keys[] = {
    {"num_layers", 0, NULL, 0}, {"hidden_size", 0, NULL, 0}, {"ffn_hidden_size", 0, NULL, 0},
    {"seq_length", 0, NULL, 0}, {"num_attention_heads", 0, NULL, 0}, {"num_key_value_heads", 0, NULL, 0},
    {"kv_channels", 0, NULL, 0}, {"max_position_embeddings", 0, NULL, 0},
    {"add_position_embedding", 1, "--no-position-embedding", 0}, {"use_rotary_position_embeddings", 1, NULL, 0},
    {"rotary_percent", 1, NULL, 0}, {"add_bias_linear", 1, "--disable-bias-linear", 0}, {"swiglu", 1, NULL, 0},
    {"untie_embeddings_and_output_weights", 1, NULL, 0}, {"apply_residual_connection_post_layernorm", 1, NULL, 0},
    {"apply_layernorm_1p", 1, NULL, 0},
    {"decoder_num_layers", 0, NULL, 0}, {"decoder_seq_length", 0, NULL, 0}, {"tokenizer_type", 0, NULL, 0},
    {"vocab_size", 0, NULL, 0}, {"make_vocab_size_divisible_by", 0, NULL, 0},
    {"tensor_model_parallel_size", 1, NULL, 0},
    {"pipeline_model_parallel_size", 1, NULL, 0},
    {"normalization", 0, NULL, 1}, {"layernorm_epsilon", 0, NULL, 1}, {"rope_theta", 0,
    "--rotary-position-embeddings-theta", 1}, {"openai_gelu", 0, NULL, 1}, {"squared_relu", 0, NULL, 1},
    {"bias_gelu_fusion", 0, "--no-bias-gelu-fusion", 1}, {"apply_query_key_layer_scaling", 0,
    "--no-query-key-layer-scaling", 1}, {"num_experts", 0, NULL, 1}, {"mlp_type", 0, NULL, 1}, {"topk", 0, NULL, 1},
    {"expert_interval", 0, NULL, 1}, {"moe_eval_capacity_factor", 0, NULL, 1}, {"moe_min_capacity", 0, NULL, 1},
    {"moe_top2_2nd_expert_sampling", 0, "--disable-moe-top2-2nd-expert-sampling", 1},
    {"enable_expert_tensor_parallelism", 0, NULL, 1}, {"fp16", 0, NULL, 1}, {"bf16", 0, NULL, 1}};
  const int harness = zt_args_checkpoint_overrides > 0;
  /* the harness's model runs the command line's tensor and pipeline sizes (its skip_keys) */
  if (harness) zt_log("> lm-evaluation-harness command line: the model arguments come from the checkpoint\n");
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char value[256], flagname[96];
    if (keys[i].harness && !harness) continue;
    if (harness && (!strcmp(keys[i].name, "tensor_model_parallel_size") ||
                    !strcmp(keys[i].name, "pipeline_model_parallel_size")))
      continue;
    if (!zt_args_summary_value(text, keys[i].name, value, sizeof value) || strcmp(value, "None") == 0) continue;
    snprintf(flagname, sizeof flagname, "--%s", keys[i].name);
    for (char *p = flagname + 2; *p; p++)
      if (*p == '_') *p = '-';
    const flag *f = find_flag(keys[i].flag ? keys[i].flag : flagname);
    /* the harness replaces what the command line gave (its placeholders), but its tokenizer is the command line's */
    const int force = keys[i].force || (harness && strcmp(keys[i].name, "tokenizer_type") != 0);
    if (!f || (seen[f - k_flags] && !force)) continue;
    if (f->kind == F_TRUE) *(int *)((char *)a + f->offset) = strcmp(value, "True") == 0;
    else if (f->kind == F_LIST) set_list_from_repr((zt_strlist *)((char *)a + f->offset), value);
    else if (f->kind == F_CONST) *(int *)((char *)a + f->offset) = strcmp(value, "False") == 0 ? f->choices[0].value : 1;
    else set_value(a, f, value);
    seen[f - k_flags] = 1;
    zt_log("Setting %s to %s from checkpoint\n", keys[i].name, value);
  }
  free(text);
}

int zt_program_start(int *argc, char ***argv, void (*usage)(void)) {
  for (int i = 1; i < *argc; i++)
    if (!strcmp((*argv)[i], "--help") || !strcmp((*argv)[i], "-h")) {
      usage();
      return 1;
    }
  zt_blas_setup(*argc, *argv);
  zt_comm_init(argc, argv);
  return 0;
}

void zt_args_parse(zt_args *args, int argc, char **argv, int world_size) {
  /* --help wins wherever it is, as with argparse. */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      print_help(argc > 0 ? argv[0] : "pretrain_gpt");
      exit(0);
    }
  set_defaults(args);
  _Static_assert(NFLAGS <= sizeof args->given_, "zt_args.given_ is too small for the flag table");
  unsigned char *seen = args->given_;
  const flag *prev = NULL;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (arg[0] != '-' || strcmp(arg, "-") == 0 || strcmp(arg, "--") == 0) {
      if (prev && (prev->kind == F_TRUE || prev->kind == F_CONST))
        zt_fatal("unrecognized argument", "%s: %s is a switch and takes no value", arg, prev->name);
      zt_fatal("unrecognized argument", "%s: positional arguments are not accepted (flags start with --)", arg);
    }
    char name[128];
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), arg);
    const flag *f = find_flag(name);
    if (!f) refuse_flag(name);

    const char *value = NULL;
    if (f->kind == F_LIST) { /* argparse's nargs='*': every following word up to the next flag */
      zt_strlist *list = (zt_strlist *)((char *)args + f->offset);
      if (eq) {
        list->n = 1;
        list->v = (const char *const *)&argv[i];
        argv[i] = (char *)eq + 1;
      } else {
        int first = i + 1;
        while (i + 1 < argc && is_value(argv[i + 1])) i++;
        list->n = i + 1 - first;
        list->v = (const char *const *)&argv[first];
      }
      seen[f - k_flags] = 1;
      prev = f;
      continue;
    }
    if (f->kind == F_TRUE || f->kind == F_CONST) {
      zt_check(!eq, "bad argument value", "%s: %s is a switch and takes no value", arg, name);
    } else if (eq) {
      value = eq + 1;
    } else if (i + 1 < argc && is_value(argv[i + 1])) {
      value = argv[++i];
    } else if (f->kind == F_CHOICE) {
      char list[160];
      choices_text(f->choices, ", ", list, sizeof list);
      zt_fatal("missing argument value", "%s expects one value (one of %s)", name, list);
    } else {
      zt_fatal("missing argument value", "%s expects one value (%s)", name, metavar(f));
    }
    set_value(args, f, value);
    seen[f - k_flags] = 1;
    prev = f;
  }
  if (args->use_checkpoint_args) apply_checkpoint_args(args, seen);
  finalize(args, seen, world_size);
  if (zt_world_size() > 1) zt_args_check_across_ranks(args);
}

/* ---- the same arguments on every rank ---------------------------------------------------------------- */

/* Summary entries that may differ between ranks: paths (node-local disks mount the same data at different
 * places; what they hold is checked where it is read). */
static const char *const k_per_rank[] = {"data_path", "train_data_path", "valid_data_path", "test_data_path",
                                         "data_cache_path", "vocab_file", "merge_file", "tokenizer_model",
                                         "deepspeed_config", "save", "load", "tensorboard_dir",
                                         /* the launcher's --local_rank differs by design; index files are paths */
                                         "local_rank", "train_desc_path", "train_doc_idx_path",
                                         "train_sample_idx_path", "train_shuffle_idx_path", "train_idx_path", NULL};

/* The flag behind a summary name: "lr_decay_iters" -> "--lr-decay-iters"; names without a flag of their own
 * (padded_vocab_size, world_size, ...) are shown as they are. */
static void flag_of(const char *name, char *out, size_t n) {
  snprintf(out, n, "--%s", name);
  for (char *p = out + 2; *p; p++)
    if (*p == '_') *p = '-';
  if (find_flag(out)) return;
  snprintf(out, n, "--%s", name);
  if (find_flag(out)) return;
  snprintf(out, n, "%s", name);
}

/* zt_comm_agree's explanation: the summary lines that differ (the first four, alphabetical as the summary is),
 * as "--lr 0.0002 on world rank 1, 0.0001 on world rank 0; ...". Both lists hold the same names in the same
 * order (one program, one table), so they are walked in step. */
static void explain_args(const void *mine, size_t n_mine, const void *theirs, size_t n_theirs, int other, char *msg,
                         size_t cap) {
  const char *a = mine, *b = theirs, *ae = a + n_mine, *be = b + n_theirs;
  size_t len = 0;
  int shown = 0, more = 0;
  msg[0] = 0;
  while (a < ae && b < be && len < cap) {
    const char *al = memchr(a, '\n', (size_t)(ae - a)), *bl = memchr(b, '\n', (size_t)(be - b));
    if (!al) al = ae;
    if (!bl) bl = be;
    if (al - a != bl - b || memcmp(a, b, (size_t)(al - a)) != 0) {
      const char *as = memchr(a, ' ', (size_t)(al - a)), *bs = memchr(b, ' ', (size_t)(bl - b));
      if (!as) as = al;
      if (!bs) bs = bl;
      if (shown == 4) {
        more++;
      } else if (as - a == bs - b && memcmp(a, b, (size_t)(as - a)) == 0) {
        char name[96], flag[100];
        snprintf(name, sizeof name, "%.*s", (int)(as - a), a);
        flag_of(name, flag, sizeof flag);
        len += (size_t)snprintf(msg + len, cap - len, "%s%s %.*s on world rank %d, %.*s on world rank 0",
                                shown ? "; " : "", flag, (int)(bl - bs - (bs < bl)), bs + (bs < bl), other,
                                (int)(al - as - (as < al)), as + (as < al));
        shown++;
      } else {
        snprintf(msg + len, cap - len, "%sthe argument lists differ at \"%.*s\" on world rank %d, \"%.*s\" on world "
                 "rank 0", shown ? "; " : "", (int)(bl - b), b, other, (int)(al - a), a);
        return;
      }
    }
    a = al + 1;
    b = bl + 1;
  }
  if (more && len < cap) snprintf(msg + len, cap - len, "; %d more", more);
  if (!shown) snprintf(msg, cap, "world rank %d's argument list is %s", other, n_theirs > n_mine ? "longer" : "shorter");
}

void zt_args_check_across_ranks(const zt_args *a) {
  char *all = zt_args_summary(a);
  size_t cap = strlen(all) + 1, n = 0;
  char *keep = zt_malloc(cap, "argument check");
  for (char *line = all; *line;) {
    char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
    int per_rank = 0;
    for (int i = 0; k_per_rank[i]; i++) {
      size_t l = strlen(k_per_rank[i]);
      if (strncmp(line, k_per_rank[i], l) == 0 && line[l] == ' ') per_rank = 1;
    }
    if (!per_rank) {
      memcpy(keep + n, line, len);
      n += len;
    }
    line += len;
  }
  zt_comm_set_startup_timeout(a->distributed_timeout_minutes * 60.0); /* for the waits below the parser */
  zt_comm_agree(zt_comm_world(), "the arguments", keep, n, a->distributed_timeout_minutes * 60.0, explain_args);
  free(keep);
  free(all);
}

/* ---- Megatron's argument summary ----------------------------------------------------------------- */

typedef struct {
  const char *name;
  char value[256];
} summary_line;

/* Python's repr of a list of strings (or None), as Megatron prints nargs='*' arguments. */
static void py_list_q(char *out, size_t n, const zt_strlist *l, const char *quote) {
  if (l->n == 0) {
    snprintf(out, n, "None");
    return;
  }
  size_t k = (size_t)snprintf(out, n, "[");
  for (int i = 0; i < l->n && k < n; i++)
    k += (size_t)snprintf(out + k, n - k, "%s%s%s%s", i ? ", " : "", quote, l->v[i], quote);
  if (k < n) snprintf(out + k, n - k, "]");
}
static void py_list(char *out, size_t n, const zt_strlist *l) { py_list_q(out, n, l, "'"); }

/* zt_args_summary: set while zt_args_print collects the lines into a string instead of logging them */
static char **summary_sink = NULL;

static int by_name(const void *x, const void *y) {
  return strcmp(((const summary_line *)x)->name, ((const summary_line *)y)->name);
}

void zt_args_print(const zt_args *a) {
  summary_line lines[240];
  int n = 0;
#define INT_LINE(nm, v) (lines[n].name = (nm), snprintf(lines[n++].value, 256, "%lld", (long long)(v)))
#define OPT_LINE(nm, v) ((v) < 0 ? (lines[n].name = (nm), snprintf(lines[n++].value, 256, "None")) : INT_LINE(nm, v))
#define STR_LINE(nm, s) (lines[n].name = (nm), snprintf(lines[n++].value, 256, "%s", (s)))
#define BOOL_LINE(nm, v) STR_LINE(nm, (v) ? "True" : "False")
#define FLT_LINE(nm, v, f) (lines[n].name = (nm), zt_py_float(lines[n++].value, 256, (v), (f)))
  INT_LINE("num_layers", a->num_layers);
  INT_LINE("hidden_size", a->hidden_size);
  INT_LINE("ffn_hidden_size", a->ffn_hidden_size);
  INT_LINE("num_attention_heads", a->num_attention_heads);
  OPT_LINE("num_key_value_heads", a->num_key_value_heads);
  INT_LINE("kv_channels", a->kv_channels);
  INT_LINE("max_position_embeddings", a->max_position_embeddings);
  INT_LINE("make_vocab_size_divisible_by", a->make_vocab_size_divisible_by);
  FLT_LINE("layernorm_epsilon", a->layernorm_epsilon, 1);
  BOOL_LINE("untie_embeddings_and_output_weights", a->untie_embeddings_and_output_weights);
  BOOL_LINE("apply_residual_connection_post_layernorm", a->apply_residual_connection_post_layernorm);
  STR_LINE("normalization", a->normalization ? "rmsnorm" : "layernorm");
  BOOL_LINE("swiglu", a->swiglu);
  BOOL_LINE("openai_gelu", a->openai_gelu);
  BOOL_LINE("squared_relu", a->squared_relu);
  BOOL_LINE("apply_layernorm_1p", a->apply_layernorm_1p);
  BOOL_LINE("init_method_xavier_uniform", a->init_method_xavier_uniform);
  BOOL_LINE("add_bias_linear", a->add_bias_linear);
  BOOL_LINE("use_rotary_position_embeddings", a->use_rotary_position_embeddings);
  INT_LINE("rope_theta", a->rope_theta);
  FLT_LINE("rotary_percent", a->rotary_percent, 1);
  BOOL_LINE("add_position_embedding", a->add_position_embedding);
  BOOL_LINE("apply_query_key_layer_scaling", a->apply_query_key_layer_scaling);
  BOOL_LINE("bert_binary_head", a->bert_binary_head);
  INT_LINE("seq_length", a->seq_length);
  OPT_LINE("encoder_num_layers", a->encoder_num_layers);
  OPT_LINE("decoder_num_layers", a->decoder_num_layers);
  OPT_LINE("encoder_seq_length", a->encoder_seq_length);
  OPT_LINE("decoder_seq_length", a->decoder_seq_length);
  INT_LINE("vocab_size", a->vocab_size);
  INT_LINE("padded_vocab_size", a->padded_vocab_size);
  FLT_LINE("attention_dropout", a->attention_dropout, 1);
  FLT_LINE("hidden_dropout", a->hidden_dropout, 1);
  FLT_LINE("weight_decay", a->weight_decay, 1);
  FLT_LINE("start_weight_decay", a->start_weight_decay, 0);
  FLT_LINE("end_weight_decay", a->end_weight_decay, 0);
  STR_LINE("weight_decay_incr_style", k_wd_styles[a->weight_decay_incr_style].name);
  FLT_LINE("clip_grad", a->clip_grad, 1);
  FLT_LINE("adam_beta1", a->adam_beta1, 1);
  FLT_LINE("adam_beta2", a->adam_beta2, 1);
  FLT_LINE("adam_eps", a->adam_eps, 1);
  FLT_LINE("sgd_momentum", a->sgd_momentum, 1);
  STR_LINE("optimizer", a->optimizer == ZT_OPTIMIZER_SGD ? "sgd" : "adam");
  FLT_LINE("init_method_std", a->init_method_std, 1);
  lines[n].name = "seed";
  snprintf(lines[n++].value, 256, "%llu", (unsigned long long)a->seed);
  INT_LINE("micro_batch_size", a->micro_batch_size);
  INT_LINE("global_batch_size", a->global_batch_size);
  OPT_LINE("train_iters", a->train_iters);
  OPT_LINE("train_samples", a->train_samples);
  FLT_LINE("lr", a->lr, 0);
  FLT_LINE("min_lr", a->min_lr, 0);
  const char *style = "linear";
  for (const choice *c = k_decay_styles; c->name; c++)
    if (c->value == (int)a->lr_decay_style) style = c->name;
  STR_LINE("lr_decay_style", style);
  OPT_LINE("lr_decay_iters", a->lr_decay_iters);
  OPT_LINE("lr_decay_samples", a->lr_decay_samples);
  INT_LINE("lr_warmup_iters", a->lr_warmup_iters);
  INT_LINE("lr_warmup_samples", a->lr_warmup_samples);
  if (a->lr_warmup_fraction < 0) STR_LINE("lr_warmup_fraction", "None");
  else FLT_LINE("lr_warmup_fraction", a->lr_warmup_fraction, 0);
  BOOL_LINE("fp16", a->fp16);
  BOOL_LINE("bf16", a->bf16);
  if (a->loss_scale > 0) FLT_LINE("loss_scale", a->loss_scale, 0);
  else STR_LINE("loss_scale", "None");
  FLT_LINE("initial_loss_scale", a->initial_loss_scale, 0);
  FLT_LINE("min_loss_scale", a->min_loss_scale, 0);
  INT_LINE("loss_scale_window", a->loss_scale_window);
  INT_LINE("hysteresis", a->hysteresis);
  BOOL_LINE("accumulate_allreduce_grads_in_fp32", a->accumulate_allreduce_grads_in_fp32);
  STR_LINE("params_dtype", a->fp16 ? "torch.float16" : a->bf16 ? "torch.bfloat16" : "torch.float32");
  int recompute = a->recompute_granularity == ZT_RECOMPUTE_FULL;
  STR_LINE("recompute_granularity", recompute ? "full"
                                    : a->recompute_granularity == ZT_RECOMPUTE_SELECTIVE ? "selective" : "None");
  STR_LINE("recompute_method", !recompute ? "None" : a->recompute_method_uniform ? "uniform" : "block");
  INT_LINE("recompute_num_layers", a->recompute_num_layers);
  INT_LINE("tensor_model_parallel_size", a->tensor_model_parallel_size);
  BOOL_LINE("sequence_parallel", a->sequence_parallel);
  INT_LINE("pipeline_model_parallel_size", a->pipeline_model_parallel_size);
  OPT_LINE("pipeline_model_parallel_split_rank", a->pipeline_model_parallel_split_rank);
  OPT_LINE("num_layers_per_virtual_pipeline_stage", a->num_layers_per_virtual_pipeline_stage);
  OPT_LINE("virtual_pipeline_model_parallel_size", a->virtual_pipeline_model_parallel_size);
  INT_LINE("data_parallel_size", a->data_parallel_size);
  INT_LINE("world_size", (long long)a->data_parallel_size * a->tensor_model_parallel_size *
                             a->pipeline_model_parallel_size);
  BOOL_LINE("mock_data", a->mock_data);
#define LIST_LINE(nm, l) (lines[n].name = (nm), py_list(lines[n++].value, 256, (l)))
#define OPTSTR_LINE(nm, s) STR_LINE(nm, (s) ? (s) : "None")
  LIST_LINE("data_path", &a->data_path);
  LIST_LINE("train_data_path", &a->train_data_path);
  LIST_LINE("valid_data_path", &a->valid_data_path);
  LIST_LINE("test_data_path", &a->test_data_path);
  LIST_LINE("rampup_batch_size", &a->rampup_batch_size);
  STR_LINE("profile", a->profile == 2 ? "pt-full" : a->profile ? "pt" : "None");
  STR_LINE("profile_steps", a->profile_steps);
  lines[n].name = "profile_ranks", py_list_q(lines[n++].value, 256, &a->profile_ranks, ""); /* nargs '+' ints */
  STR_LINE("split", a->split);
  OPTSTR_LINE("data_cache_path", a->data_cache_path);
  OPTSTR_LINE("aml_data_download_path", a->aml_data_download_path);
  STR_LINE("data_impl", a->data_impl ? "infer" : "mmap");
  BOOL_LINE("mmap_warmup", a->mmap_warmup);
  STR_LINE("tokenizer_type", zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type));
  OPTSTR_LINE("vocab_file", a->vocab_file);
  OPTSTR_LINE("merge_file", a->merge_file);
  OPTSTR_LINE("tokenizer_model", a->tokenizer_model);
  BOOL_LINE("trust_remote_code", a->trust_remote_code);
  INT_LINE("vocab_extra_ids", a->vocab_extra_ids);
  BOOL_LINE("reset_position_ids", a->reset_position_ids);
  BOOL_LINE("reset_attention_mask", a->reset_attention_mask);
  BOOL_LINE("eod_mask_loss", a->eod_mask_loss);
  FLT_LINE("mask_prob", a->mask_prob, 1);
  FLT_LINE("short_seq_prob", a->short_seq_prob, 1);
  OPT_LINE("train_data_exact_num_epochs", a->train_data_exact_num_epochs);
  STR_LINE("dataloader_type", a->dataloader_type ? "cyclic" : "single");
  BOOL_LINE("data_sharding", a->data_sharding);
  BOOL_LINE("repeated_dataloader", a->repeated_dataloader);
  INT_LINE("num_workers", a->num_workers);
#undef LIST_LINE
#undef OPTSTR_LINE
  BOOL_LINE("deepspeed", a->deepspeed);
  STR_LINE("deepspeed_config", a->deepspeed_config ? a->deepspeed_config : "None");
  INT_LINE("log_interval", a->log_interval);
  INT_LINE("eval_interval", a->eval_interval);
  INT_LINE("eval_iters", a->eval_iters);
  FLT_LINE("distributed_timeout_minutes", a->distributed_timeout_minutes, 0);
  FLT_LINE("step_timeout_seconds", a->step_timeout_seconds, 0);
  BOOL_LINE("skip_train", a->skip_train);
  STR_LINE("save", a->save ? a->save : "None");
  STR_LINE("load", a->load ? a->load : "None");
  STR_LINE("load_tag", a->load_tag ? a->load_tag : "None");
  OPT_LINE("save_interval", a->save_interval);
  STR_LINE("no_save_optim", a->no_save_optim ? "True" : "None");
  STR_LINE("no_save_rng", a->no_save_rng ? "True" : "None");
  STR_LINE("no_load_optim", a->no_load_optim ? "True" : "None");
  STR_LINE("no_load_rng", a->no_load_rng ? "True" : "None");
  BOOL_LINE("finetune", a->finetune);
  BOOL_LINE("use_checkpoint_args", a->use_checkpoint_args);
  BOOL_LINE("exit_on_missing_checkpoint", a->exit_on_missing_checkpoint);
  STR_LINE("kill_switch_file", a->kill_switch_file ? a->kill_switch_file : "None");
  BOOL_LINE("perform_initialization", a->perform_initialization);
  OPT_LINE("exit_interval", a->exit_interval);
  OPT_LINE("exit_duration_in_mins", a->exit_duration_in_mins);
  BOOL_LINE("exit_signal_handler", a->exit_signal_handler);
  BOOL_LINE("no_load_lr_state", a->no_load_lr_state);
  BOOL_LINE("override_opt_param_scheduler", a->override_opt_param_scheduler);
  BOOL_LINE("use_checkpoint_opt_param_scheduler", a->use_checkpoint_opt_param_scheduler);
  /* Megatron-DeepSpeed's script flags, with the values Megatron-DeepSpeed prints */
  OPT_LINE("train_tokens", a->train_tokens);
  OPT_LINE("lr_warmup_tokens", a->lr_warmup_tokens);
  OPT_LINE("lr_decay_tokens", a->lr_decay_tokens);
  if (zt_args_given(a, "--zero-stage")) INT_LINE("zero_stage", a->zero_stage);
  else STR_LINE("zero_stage", "1.0");
  BOOL_LINE("no_pipeline_parallel", a->no_pipeline_parallel);
  BOOL_LINE("ds_pipeline_enabled", !a->no_pipeline_parallel);
  STR_LINE("remote_device", a->remote_device == 2 ? "nvme" : a->remote_device == 1 ? "cpu" : "none");
  BOOL_LINE("standalone_embedding_stage", a->standalone_embedding_stage);
  INT_LINE("transformer_pipeline_model_parallel_size",
           a->pipeline_model_parallel_size - (a->standalone_embedding_stage ? 1 : 0));
  BOOL_LINE("enable_zbh1_pipeline", a->enable_zbh1_pipeline);
  BOOL_LINE("enable_zbh1_exact_semantics", a->enable_zbh1_exact_semantics);
  INT_LINE("ds_sequence_parallel_size", a->ds_sequence_parallel_size);
  BOOL_LINE("force_ds_sequence_parallel", a->force_ds_sequence_parallel);
  BOOL_LINE("ds_sequence_parallel_fpdt", a->ds_sequence_parallel_fpdt);
  INT_LINE("ds_sequence_parallel_fpdt_chunk_size", a->ds_sequence_parallel_fpdt_chunk_size);
  BOOL_LINE("ds_sequence_parallel_fpdt_offloading", a->ds_sequence_parallel_fpdt_offloading);
  BOOL_LINE("deepspeed_activation_checkpointing", a->deepspeed_activation_checkpointing);
  BOOL_LINE("partition_activations", a->partition_activations);
  BOOL_LINE("contigious_checkpointing", a->contigious_checkpointing);
  BOOL_LINE("checkpoint_in_cpu", a->checkpoint_in_cpu);
  BOOL_LINE("synchronize_each_layer", a->synchronize_each_layer);
  BOOL_LINE("profile_backward", a->profile_backward);
  BOOL_LINE("distribute_checkpointed_activations", a->distribute_checkpointed_activations);
  BOOL_LINE("distribute_saved_activations", a->distribute_saved_activations);
  BOOL_LINE("mem_efficient_ln", a->mem_efficient_ln);
  BOOL_LINE("use_flash_attn", a->use_flash_attn_v1 || a->use_flash_attn_v2 || a->use_flash_attn_triton ||
                                  a->use_flash_attn_builder);
  BOOL_LINE("use_flash_attn_v1", a->use_flash_attn_v1);
  BOOL_LINE("use_flash_attn_v2", a->use_flash_attn_v2);
  BOOL_LINE("use_flash_attn_triton", a->use_flash_attn_triton);
  BOOL_LINE("use_flash_attn_builder", a->use_flash_attn_builder);
  BOOL_LINE("masked_softmax_fusion", a->masked_softmax_fusion);
  BOOL_LINE("bias_gelu_fusion", a->bias_gelu_fusion);
  BOOL_LINE("bias_dropout_fusion", a->bias_dropout_fusion);
  BOOL_LINE("gradient_accumulation_fusion", a->gradient_accumulation_fusion);
  BOOL_LINE("no_persist_layer_norm", a->no_persist_layer_norm);
  BOOL_LINE("async_tensor_model_parallel_allreduce", a->async_tensor_model_parallel_allreduce);
  STR_LINE("distributed_backend", k_backends[a->distributed_backend].name);
  STR_LINE("DDP_impl", k_ddp[a->ddp_impl].name);
  BOOL_LINE("use_distributed_optimizer", a->use_distributed_optimizer);
  BOOL_LINE("use_contiguous_buffers_in_local_ddp", a->use_contiguous_buffers_in_local_ddp);
  STR_LINE("use_cpu_initialization", a->use_cpu_initialization ? "True" : "None");
  INT_LINE("empty_unused_memory_level", a->empty_unused_memory_level);
  BOOL_LINE("attention_softmax_in_fp32", a->attention_softmax_in_fp32);
  BOOL_LINE("scatter_gather_tensors_in_pipeline", a->scatter_gather_tensors_in_pipeline);
  BOOL_LINE("use_ring_exchange_p2p", a->use_ring_exchange_p2p);
  BOOL_LINE("overlap_p2p_comm", a->overlap_p2p_comm);
  OPT_LINE("local_rank", a->local_rank);
  STR_LINE("train_desc_path", a->train_desc_path ? a->train_desc_path : "None");
  STR_LINE("train_doc_idx_path", a->train_doc_idx_path ? a->train_doc_idx_path : "None");
  STR_LINE("train_sample_idx_path", a->train_sample_idx_path ? a->train_sample_idx_path : "None");
  STR_LINE("train_shuffle_idx_path", a->train_shuffle_idx_path ? a->train_shuffle_idx_path : "None");
  STR_LINE("train_idx_path", a->train_idx_path ? a->train_idx_path : "None");
  BOOL_LINE("return_data_index", a->return_data_index);
  lines[n].name = "num_experts";
  if (a->num_experts.n == 0) snprintf(lines[n].value, 256, "[1]");
  for (int i = 0, k = 0; i < a->num_experts.n && k < 250; i++) /* validated: each entry is the integer 1 */
    k += snprintf(lines[n].value + k, 256 - (size_t)k, "%s%d%s", i ? ", " : "[", atoi(a->num_experts.v[i]),
                  i + 1 == a->num_experts.n ? "]" : "");
  n++;
  STR_LINE("mlp_type", k_mlp_types[a->mlp_type].name);
  INT_LINE("topk", a->topk);
  INT_LINE("expert_interval", a->expert_interval);
  INT_LINE("moe_expert_parallel_size", a->moe_expert_parallel_size);
  INT_LINE("moe_min_capacity", a->moe_min_capacity);
  FLT_LINE("moe_train_capacity_factor", a->moe_train_capacity_factor, 0);
  FLT_LINE("moe_eval_capacity_factor", a->moe_eval_capacity_factor, 0);
  FLT_LINE("moe_loss_coeff", a->moe_loss_coeff, 0);
  BOOL_LINE("create_moe_param_group", a->create_moe_param_group);
  BOOL_LINE("moe_token_dropping", a->moe_token_dropping);
  BOOL_LINE("moe_top2_2nd_expert_sampling", a->moe_top2_2nd_expert_sampling);
  STR_LINE("noisy_gate_policy", k_noisy_gate[a->noisy_gate_policy].name); /* DeepSpeed's; checked across ranks */
  BOOL_LINE("mos", a->mos);
  BOOL_LINE("kd", a->kd);
  STR_LINE("load_teacher", a->load_teacher ? a->load_teacher : "None");
  OPT_LINE("num_layers_teacher", a->num_layers_teacher);
  OPT_LINE("hidden_size_teacher", a->hidden_size_teacher);
  OPT_LINE("num_attention_heads_teacher", a->num_attention_heads_teacher);
  lines[n].name = "num_experts_teacher";
  if (a->num_experts_teacher.n == 0) snprintf(lines[n].value, 256, "[1]");
  for (int i = 0, k = 0; i < a->num_experts_teacher.n && k < 250; i++) /* validated integers */
    k += snprintf(lines[n].value + k, 256 - (size_t)k, "%s%d%s", i ? ", " : "[", atoi(a->num_experts_teacher.v[i]),
                  i + 1 == a->num_experts_teacher.n ? "]" : "");
  n++;
  /* argparse's default=1 stays the int 1 until the flag is given (type=float) */
  if (zt_args_given(a, "--kd-alpha-ce")) FLT_LINE("kd_alpha_ce", a->kd_alpha_ce, 0);
  else STR_LINE("kd_alpha_ce", "1");
  if (zt_args_given(a, "--kd-beta-ce")) FLT_LINE("kd_beta_ce", a->kd_beta_ce, 0);
  else STR_LINE("kd_beta_ce", "1");
  FLT_LINE("kd_temp", a->kd_temp, 0);
  BOOL_LINE("reset_iteration", a->reset_iteration);
  BOOL_LINE("use_tutel", a->use_tutel);
  BOOL_LINE("enable_expert_tensor_parallelism", a->enable_expert_tensor_parallelism);
  BOOL_LINE("universal_checkpoint", a->universal_checkpoint);
  BOOL_LINE("cpu_optimizer", a->cpu_optimizer);
  BOOL_LINE("cpu_torch_adam", a->cpu_torch_adam);
  BOOL_LINE("ds_fused_adam", a->ds_fused_adam);
  STR_LINE("tensorboard_dir", a->tensorboard_dir ? a->tensorboard_dir : "None");
  INT_LINE("tensorboard_log_interval", a->tensorboard_log_interval);
  INT_LINE("tensorboard_queue_size", a->tensorboard_queue_size);
  BOOL_LINE("log_timers_to_tensorboard", a->log_timers_to_tensorboard);
  BOOL_LINE("log_batch_size_to_tensorboard", a->log_batch_size_to_tensorboard);
  BOOL_LINE("log_learning_rate_to_tensorboard", a->log_learning_rate_to_tensorboard);
  BOOL_LINE("log_loss_scale_to_tensorboard", a->log_loss_scale_to_tensorboard);
  BOOL_LINE("log_validation_ppl_to_tensorboard", a->log_validation_ppl_to_tensorboard);
  BOOL_LINE("log_optimizer_states_to_tensorboard", a->log_optimizer_states_to_tensorboard);
  BOOL_LINE("log_memory_to_tensorboard", a->log_memory_to_tensorboard);
  BOOL_LINE("log_world_size_to_tensorboard", a->log_world_size_to_tensorboard);
  BOOL_LINE("log_params_norm", a->log_params_norm);
  BOOL_LINE("log_num_zeros_in_grad", a->log_num_zeros_in_grad);
  INT_LINE("timing_log_level", a->timing_log_level);
  STR_LINE("timing_log_option", k_timing_options[a->timing_log_option].name);
  BOOL_LINE("barrier_with_L1_time", a->barrier_with_L1_time);
  STR_LINE("wandb_project", a->wandb_project);
  STR_LINE("wandb_exp_name", a->wandb_exp_name);
  STR_LINE("wandb_save_dir", a->wandb_save_dir);
  BOOL_LINE("log_eta", a->log_eta);
#undef INT_LINE
#undef OPT_LINE
#undef STR_LINE
#undef BOOL_LINE
#undef FLT_LINE
  qsort(lines, (size_t)n, sizeof lines[0], by_name);
  if (summary_sink) {
    const size_t cap = (size_t)n * (sizeof lines[0].value + 64) + 1;
    size_t k = 0;
    char *s = zt_malloc(cap, "argument summary");
    s[0] = '\0';
    for (int i = 0; i < n; i++) k += (size_t)snprintf(s + k, cap - k, "%s %s\n", lines[i].name, lines[i].value);
    *summary_sink = s;
    return;
  }
  static const char dots[] = "................................................"; /* 48 */
  zt_log("------------------------ arguments ------------------------\n");
  for (int i = 0; i < n; i++) {
    int pad = 48 - (int)strlen(lines[i].name);
    zt_log("  %s %.*s %s\n", lines[i].name, pad > 0 ? pad : 0, dots, lines[i].value);
  }
  zt_log("-------------------- end of arguments ---------------------\n");
}

char *zt_args_summary(const zt_args *a) {
  char *s = NULL;
  summary_sink = &s;
  zt_args_print(a);
  summary_sink = NULL;
  return s;
}
