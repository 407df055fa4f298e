/* Megatron's pretrain loop over any model kind (see engine.h), on the CPU or this rank's GPU. */
#include "train/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/error.h"
#include "runtime/base/pyfmt.h"
#include "runtime/base/timer.h"
#include "runtime/comm/comm.h"
#include "runtime/comm/comms_logger.h"
#include "runtime/ops/cuda/cuda_device.h"
#include "runtime/ops/wgrad_store.h"
#include "runtime/parallel/parallel_state.h"
#include "runtime/profile/monitor.h"
#include "runtime/profile/throughput.h"
#include "runtime/profile/trace.h"
#include "runtime/zero/estimate.h"
#include "train/progress.h"
#include "train/schedule.h"
#include "train/tb_log.h"
#include "train/watchdog.h"

_Static_assert((int)ZT_LR_DECAY_LINEAR == (int)ZT_DECAY_LINEAR && (int)ZT_LR_DECAY_COSINE == (int)ZT_DECAY_COSINE &&
                   (int)ZT_LR_DECAY_CONSTANT == (int)ZT_DECAY_CONSTANT && (int)ZT_LR_DECAY_INVSQRT == (int)ZT_DECAY_INVSQRT,
               "args and schedule decay styles must match");

static void explain_vocab(const void *mine, size_t n_mine, const void *theirs, size_t n_theirs, int other, char *msg,
                          size_t cap) {
  snprintf(msg, cap, "%.*s on world rank %d, %.*s on world rank 0 (--vocab-file / --tokenizer-model differ in content)",
           (int)n_theirs, (const char *)theirs, other, (int)n_mine, (const char *)mine);
}

zt_tokenizer *zt_engine_tokenizer(zt_args *a) {
  zt_tokenizer *tok = NULL;
  if (!a->mock_data) {
    const char *name = zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type);
    zt_log("> building %s tokenizer ...\n", name);
    zt_tokenizer_spec spec = {.kind = (zt_tokenizer_kind)a->tokenizer_type, .vocab_file = a->vocab_file,
                              .merge_file = a->merge_file, .tokenizer_model = a->tokenizer_model,
                              .vocab_size = a->vocab_size, .vocab_extra_ids = a->vocab_extra_ids};
    tok = zt_tokenizer_create(&spec);
    zt_args_set_vocab_size(a, zt_tokenizer_vocab_size(tok), name);
    if (zt_world_size() > 1) { /* vocabulary paths may differ per node; what they hold may not */
      char mine[96];
      const int n = snprintf(mine, sizeof mine, "%d tokens from the %s tokenizer", a->vocab_size, name);
      zt_comm_agree(zt_comm_world(), "the vocabulary size", mine, (size_t)n, a->distributed_timeout_minutes * 60.0,
                    explain_vocab);
    }
  }
  zt_log(" > padded vocab (size: %d) with %d dummy tokens (new size: %d)\n", a->vocab_size,
         a->padded_vocab_size - a->vocab_size, a->padded_vocab_size);
  return tok;
}

/* Megatron's train_val_test_num_samples and the model kind's datasets behind them. */
static void build_data(zt_engine *e, const zt_tokenizer *tok) {
  const zt_args *a = e->args;
  const int64_t gbs = a->global_batch_size;
  const zt_data_setup s = {
      .mock_data = a->mock_data, .data_path_n = a->data_path.n, .data_path = a->data_path.v,
      .split_path_n = {a->train_data_path.n, a->valid_data_path.n, a->test_data_path.n},
      .split_path = {a->train_data_path.v, a->valid_data_path.v, a->test_data_path.v},
      .split = a->split, .cache_path = a->data_cache_path, .micro_batch = a->micro_batch_size,
      .train_index_files = {a->train_desc_path, a->train_doc_idx_path, a->train_sample_idx_path,
                            a->train_shuffle_idx_path},
      .seq_length = a->seq_length, .seed = a->seed,
      .train_exact_num_epochs = a->train_data_exact_num_epochs > 0 ? a->train_data_exact_num_epochs : 0,
      .train_idx_path = a->train_idx_path,
      .train_sampled = a->data_efficiency_curriculum_learning || a->dataloader_type == 1 || a->repeated_dataloader,
      .num_samples = {a->train_samples >= 0 ? a->train_samples : a->train_iters * gbs,
                      (a->train_iters / a->eval_interval + 1) * a->eval_iters * gbs, (int64_t)a->eval_iters * gbs},
      .mmap_warmup = a->mmap_warmup, .vocab_size = a->vocab_size, .tokenizer = tok,
      .tokenizer_name = zt_tokenizer_kind_name((zt_tokenizer_kind)a->tokenizer_type),
      .reset_position_ids = a->reset_position_ids, .reset_attention_mask = a->reset_attention_mask,
      .eod_mask_loss = a->eod_mask_loss, .eval_iters = a->eval_iters, .mask_prob = a->mask_prob,
      .short_seq_prob = a->short_seq_prob, .binary_head = a->bert_binary_head,
      .dec_seq_length = a->decoder_seq_length};
  e->data = e->kind->build_data(&s);
}

/* ---- --deepspeed ----------------------------------------------------------------------------- */

/* --remote-device: Megatron-DeepSpeed passes it to deepspeed.zero.Init, which it enables with --zero-stage 3 only;
 * a ds_config offload_param block replaces it there (zero.Init takes the block's device), and nvme without that block
 * fails DeepSpeed's assert. What remains is where zero.Init first builds the partitions: zerotron initializes each
 * parameter straight into its partition where the run keeps it, so nothing is built whole anywhere. */
static void remote_device_check(const zt_args *a, const zt_ds_config *c) {
  if (!a->remote_device) return;
  const char *rd = a->remote_device == 2 ? "nvme" : "cpu";
  if (a->zero_stage != 3) {
    zt_log("> --remote-device %s: no effect without --zero-stage 3 (Megatron-DeepSpeed enables deepspeed.zero.Init "
           "with it only)\n", rd);
    return;
  }
  if (c->offload_param_block) {
    zt_log("> --remote-device %s: replaced by zero_optimization.offload_param.device \"%s\" of %s, as "
           "deepspeed.zero.Init does\n", rd, c->offload_param_device, c->path);
    return;
  }
  zt_check(a->remote_device != 2, "inconsistent arguments", "--remote-device nvme: \"offload_param\" must be defined in "
           "DeepSpeed Config if remote device is nvme (DeepSpeed's assert; %s has no zero_optimization.offload_param "
           "block with an nvme_path)", c->path);
  zt_log("> --remote-device cpu: the ZeRO-3 partitions are initialized where the run keeps them, each parameter "
         "straight into its partition (deepspeed.zero.Init builds them in host memory first)\n");
}

zt_ds_config *zt_engine_deepspeed_setup(zt_args *a, const zt_model_kind *kind) {
  if (!a->deepspeed) return NULL;
  zt_ds_config *c = zt_malloc(sizeof(*c), "ds_config");
  zt_ds_config_load(c, a->deepspeed_config);
  zt_ds_megatron m;
  zt_ds_megatron_from_args(&m, a);
  /* the schedule may be longer than the run (e.g. a range test): --train-iters only fills "auto" */
  m.train_iters.explicit_ = false;
  zt_ds_config_reconcile(c, &m);
  zt_ds_config_batch(c, a->data_parallel_size);
  /* fp16 / bf16: the config governs, "auto" takes the flag, an explicit flag the config disables is refused */
  const int fp16 = c->fp16_auto ? a->fp16 : c->fp16_enabled, bf16 = c->bf16_auto ? a->bf16 : c->bf16_enabled;
  zt_check(!(fp16 && bf16), "ds_config", "%s: bfloat16 and fp16 modes cannot be simultaneously enabled (--%s "
           "and the %s block)", c->path, a->fp16 ? "fp16" : "bf16", a->fp16 ? "bf16" : "fp16");
  zt_check(!(a->fp16 && !fp16), "inconsistent arguments", "--fp16 contradicts fp16.enabled false in %s", c->path);
  zt_check(!(a->bf16 && !bf16), "inconsistent arguments", "--bf16 contradicts bf16.enabled false in %s", c->path);
  a->fp16 = fp16;
  a->bf16 = bf16;
  if (c->load_universal) a->load_universal = 1; /* DeepSpeed then loads the tag named by latest_universal */
  a->ckpt_tag_validation = !strcmp(c->tag_validation, "Fail") ? 2 : !strcmp(c->tag_validation, "Warn") ? 1 : 0;
  /* DeepSpeed's triple drives the batch; Megatron's derived values follow it */
  a->micro_batch_size = (int)c->train_micro_batch_size_per_gpu.value;
  a->global_batch_size = (int)c->train_batch_size.value;
  a->num_microbatches = (int)c->gradient_accumulation_steps.value;
  char src[64 + sizeof c->path];
  snprintf(src, sizeof src, "train_batch_size %d in %s", a->global_batch_size, c->path);
  zt_rampup ramp; /* --rampup-batch-size ramps up to train_batch_size */
  zt_rampup_init(&ramp, a, src);
  if (a->train_samples >= 0) {
    a->train_iters = zt_rampup_train_iters(&ramp, a->train_samples);
    zt_check(a->train_iters > 0, "inconsistent arguments", "--train-samples %lld is less than one global batch "
             "(train_batch_size %d in %s)", (long long)a->train_samples, a->global_batch_size, c->path);
  }
  /* the Hugging Face integration's "auto" ZeRO sizes, from the hidden size */
  const double h = a->hidden_size;
  if (c->zero_auto_reduce_bucket) c->zero_reduce_bucket_size = h * h;
  if (c->zero_auto_prefetch) c->zero_prefetch_bucket_size = floor(0.9 * h * h);
  if (c->zero_auto_persistence) c->zero_param_persistence_threshold = 10 * h;
  if (c->zero_auto_reduce_bucket || c->zero_auto_prefetch || c->zero_auto_persistence)
    zt_log("> ds_config \"auto\" ZeRO sizes from --hidden-size %d: reduce_bucket_size %.0f, "
           "stage3_prefetch_bucket_size %.0f, stage3_param_persistence_threshold %.0f\n", a->hidden_size,
           c->zero_reduce_bucket_size, c->zero_prefetch_bucket_size, c->zero_param_persistence_threshold);
  remote_device_check(a, c);
  zt_engine_check_curriculum(a, c, kind);
  zt_engine_check_data_sampling(a, c, kind);
  zt_engine_check_random_ltd(a, c, kind);
  if (c->sparse_attention) { /* DeepSpeed's SparsityConfig checks against the model, before any work */
    char err[512];
    zt_check(zt_sparsity_check(&c->sparse, a->num_attention_heads, a->seq_length, err, sizeof err), "ds_config",
             "%s: sparse_attention (mode \"%s\", --num-attention-heads %d, --seq-length %d): %s", c->path,
             zt_sparse_mode_name(c->sparse.mode), a->num_attention_heads, a->seq_length, err);
  }
  zt_ds_config_print(c);
  return c;
}

void zt_engine_check_curriculum(const zt_args *a, const zt_ds_config *ds, const zt_model_kind *kind) {
  if (!ds || !ds->curriculum.enabled) return;
  const zt_curriculum_config *cl = &ds->curriculum;
  zt_check(!ds->sparse_attention, "ds_config", "%s: curriculum_learning and sparse_attention cannot be combined: the "
           "block-sparse layout is made for --seq-length %d tokens and the curriculum shortens the sequences",
           ds->path, a->seq_length);
  zt_check(!kind || kind->seqlen_curriculum, "ds_config", "%s: curriculum_learning (seqlen) is supported for GPT only: "
           "Megatron-DeepSpeed's %s model takes no curriculum_seqlen", ds->path, kind ? kind->name : "");
  char err[512];
  zt_check(zt_curriculum_check(cl, a->seq_length, a->tensor_model_parallel_size, a->sequence_parallel, 1,
                               a->train_iters > 0 ? a->train_iters : 1, err, sizeof err),
           "ds_config", "%s: curriculum_learning (%s, min_difficulty %lld, max_difficulty %lld, --seq-length %d%s): %s",
           ds->path, zt_curriculum_type_name(cl->type), (long long)cl->min_difficulty, (long long)cl->max_difficulty,
           a->seq_length, a->sequence_parallel ? ", --sequence-parallel" : "", err);
}

void zt_engine_check_data_sampling(const zt_args *a, const zt_ds_config *ds, const zt_model_kind *kind) {
  zt_check(!a->data_efficiency_curriculum_learning || !kind || !kind->no_data_sampling,
           "--data-efficiency-curriculum-learning", "%s", kind->no_data_sampling);
  const int block = ds && ds->data_sampling.enabled;
  zt_check(!a->data_efficiency_curriculum_learning || block, "arguments", "--data-efficiency-curriculum-learning needs "
           "the ds_config's data_efficiency.data_sampling.curriculum_learning block with \"enabled\": true (%s): "
           "Megatron-DeepSpeed then gets no data loader from DeepSpeed", ds ? ds->path : "no --deepspeed_config given");
  if (!block) return;
  const zt_data_sampling_config *d = &ds->data_sampling;
  zt_check(a->data_efficiency_curriculum_learning, "arguments", "%s: data_efficiency.data_sampling.curriculum_learning "
           "is enabled without --data-efficiency-curriculum-learning: Megatron-DeepSpeed hands DeepSpeed the training "
           "data only with the flag (and trains in Megatron's order without it); give both", ds->path);
  zt_check(!kind || !kind->encoder_decoder, "arguments", "--data-efficiency-curriculum-learning with %s: "
           "Megatron-DeepSpeed's data sampling runs GPT and BERT", kind ? kind->name : "");
  zt_check(!kind || kind->seqlen_curriculum || kind->longest_cut, "arguments", "--data-efficiency-curriculum-learning "
           "with %s: the model kind has no data_post_process", kind ? kind->name : "");
  if (kind && kind->longest_cut) { /* each micro batch its own length (pretrain_bert's data_post_process) */
    zt_check(a->pipeline_model_parallel_size <= 1, "arguments", "%s --data-efficiency-curriculum-learning with "
             "--pipeline-model-parallel-size %d is not supported: each micro batch is cut to its own length, and "
             "the pipeline's messages have one shape (Megatron's too)", kind->name, a->pipeline_model_parallel_size);
    zt_check(!a->sequence_parallel || 8 % a->tensor_model_parallel_size == 0, "arguments", "%s "
             "--data-efficiency-curriculum-learning with --sequence-parallel over %d tensor-parallel ranks: the micro "
             "batches' lengths (multiples of 8) do not split over them", kind->name, a->tensor_model_parallel_size);
    zt_check(!ds->flops_profiler_enabled, "ds_config", "%s: the flops_profiler with %s "
             "--data-efficiency-curriculum-learning is not supported: each micro batch has its own length",
             ds->path, kind->name);
  }
  zt_check(!ds->curriculum.enabled, "ds_config", "%s: the legacy curriculum_learning block and "
           "data_efficiency.data_sampling.curriculum_learning are both enabled: use one (both would set the sequence "
           "length)", ds->path);
  zt_check(!a->rampup_batch_size.n, "arguments", "--rampup-batch-size with --data-efficiency-curriculum-learning: "
           "DeepSpeed's data sampler draws global batches of train_batch_size %d from the first step",
           a->global_batch_size);
  zt_check(a->ds_sequence_parallel_size <= 1, "unsupported argument", "--ds-sequence-parallel-size %d with "
           "--data-efficiency-curriculum-learning: not supported (each rank holds a share of every sequence)",
           a->ds_sequence_parallel_size);
  const int sm = zt_data_sampling_seqlen_metric(d);
  if (sm >= 0) {
    const zt_curriculum_config *cl = &d->metric[sm].schedule;
    const char *name = d->metric[sm].name;
    zt_check(!ds->sparse_attention, "ds_config", "%s: the %s metric and sparse_attention cannot be combined: the "
             "block-sparse layout is made for --seq-length %d tokens", ds->path, name, a->seq_length);
    char err[512];
    zt_check(zt_curriculum_check(cl, a->seq_length, a->tensor_model_parallel_size, a->sequence_parallel, 1,
                                 a->train_iters > 0 ? a->train_iters : 1, err, sizeof err),
             "ds_config", "%s: data_efficiency.data_sampling metric %s (%s, min_difficulty %lld, max_difficulty "
             "%lld, --seq-length %d%s): %s", ds->path, name, zt_curriculum_type_name(cl->type),
             (long long)cl->min_difficulty, (long long)cl->max_difficulty, a->seq_length,
             a->sequence_parallel ? ", --sequence-parallel" : "", err);
  }
  if (!zt_data_sampling_reshape(d) || !kind || !kind->seqlen_curriculum) return; /* (BERT takes the longest) */
  /* seqlen_reshape runs each re-cut micro batch as several passes of --micro-batch-size rows (train/schedule.c) */
  const char *why = a->pipeline_model_parallel_size > 1 ? "--pipeline-model-parallel-size above 1 (the pipeline "
                                                          "schedule runs one pass per micro batch)"
                    : zt_moe_on(&a->moe) ? "--num-experts above 1 (the MoE auxiliary loss is a mean over the tokens of "
                                           "one pass)"
                    : a->mos || a->kd ? "--mos/--kd (the teacher runs one pass per micro batch)"
                    : ds->flops_profiler_enabled ? "the flops_profiler (it profiles one pass per micro batch)"
                                                 : NULL;
  zt_check(!why, "ds_config", "%s: the seqlen_reshape metric with %s is not supported: each micro batch re-cut into "
           "rows of the difficulty's length runs as several passes of --micro-batch-size %d rows; use seqlen_truncate",
           ds->path, why ? why : "", a->micro_batch_size);
}

/* The data sampler over the training split (after the data is built), the whole run inside its num_epochs. As
 * DeepSpeed's, it lives on world rank 0 (its index files read and checked there, its clusters held there) and each
 * global batch is broadcast: the other ranks hold only the batch (sampler_msg). */
static void data_sampler_setup(zt_engine *e) {
  const zt_args *a = e->args;
  e->st.data_sampler_step = -1;
  if (!e->sampler_on) return;
  zt_check(e->data->load_ids && e->data->split_size, "arguments", "--data-efficiency-curriculum-learning: the %s data "
           "provider cannot load samples by index", e->data->kind);
  const zt_data_sampling_config *d = &e->ds->data_sampling;
  const int64_t one_epoch = e->data->split_size(e->data, 0), need = (int64_t)a->train_iters * a->global_batch_size;
  zt_check(need <= one_epoch * d->num_epochs, "ds_config", "%s: data_efficiency.data_sampling: the run draws %lld "
           "samples (--train-iters %lld x %d) but the sampler stops after %lld (%lld samples x num_epochs %lld): "
           "raise num_epochs", e->ds->path, (long long)need, (long long)a->train_iters, a->global_batch_size,
           (long long)(one_epoch * d->num_epochs), (long long)one_epoch, (long long)d->num_epochs);
  e->sampler_msg = zt_malloc((size_t)(3 + a->global_batch_size) * sizeof(int64_t), "data sampler batch");
  if (zt_comm_rank() == 0) {
    zt_data_sampler_init(&e->sampler, d, one_epoch, a->global_batch_size);
    if (d->num_workers > 0)
      zt_log("> data sampling: num_workers %lld has no effect: the batches are drawn and loaded in the training "
             "process (docs/data_efficiency.md)\n", (long long)d->num_workers);
    char line[2048];
    zt_data_sampler_describe(&e->sampler, line, sizeof line);
    zt_log("%s\n", line);
  }
  e->st.data_sampler_step = 0;
  e->st.data_sampler_digest = 0;
}

/* --dataloader-type cyclic and --repeated-dataloader: the data loads by id, and the random sampler has a micro batch
 * on every data-parallel rank in each split it reads (its epoch is len(dataset) less the last partial slice). */
static void pretraining_sampler_setup(zt_engine *e) {
  const zt_args *a = e->args;
  e->psampler_on = a->dataloader_type == 1 || a->repeated_dataloader;
  if (!e->psampler_on) return;
  const char *flag = a->dataloader_type == 1 ? "--dataloader-type cyclic" : "--repeated-dataloader";
  zt_check(e->data->load_ids && e->data->split_size, "arguments", "%s: the %s data provider cannot load samples by "
           "index", flag, e->data->kind);
  if (a->dataloader_type != 1) return; /* the repeated sequential sampler checks its split when it starts */
  static const char *const names[3] = {"training", "validation", "test"};
  for (int k = 0; k < 3; k++) {
    if (!zt_data_has_split(e->data, k) || (k == 0 ? a->train_iters == 0 || e->sampler_on : a->eval_iters == 0))
      continue;
    const int64_t n = e->data->split_size(e->data, k), step = (int64_t)a->micro_batch_size * a->data_parallel_size;
    zt_check(n >= step, "dataset", "--dataloader-type cyclic: the %s split holds %lld samples, fewer than one micro "
             "batch on every data-parallel rank (--micro-batch-size %d x %d ranks): Megatron's random sampler "
             "would divide by zero", names[k], (long long)n, a->micro_batch_size, a->data_parallel_size);
  }
}

/* Before each training iteration: the sampler's next global batch (a resumed run first replays the checkpoint's
 * steps and checks the state reached) and the sequence length of its seqlen_truncate metric, drawn on world rank 0
 * and broadcast as [step, length, digest, ids...]. */
static void data_sampler_step(zt_engine *e) {
  zt_train_state *st = &e->st;
  int64_t *msg = e->sampler_msg;
  const int64_t gbs = e->args->global_batch_size;
  if (zt_comm_rank() == 0) {
    zt_data_sampler *s = &e->sampler;
    if (s->step < st->data_sampler_step) {
      s->quiet = 1;
      while (s->step < st->data_sampler_step) zt_data_sampler_next(s);
      s->quiet = 0;
      zt_check(!st->data_sampler_digest || zt_data_sampler_digest(s) == st->data_sampler_digest, "checkpoint",
               "the data sampler replayed to the checkpoint's step %lld does not reach the checkpoint's state: the "
               "ds_config's data_efficiency block, the index files, the data or the batch sizes differ from the run "
               "that saved it", (long long)st->data_sampler_step);
    }
    zt_data_sampler_next(s);
    msg[0] = s->step;
    msg[1] = zt_data_sampler_seqlen(s, e->args->seq_length);
    msg[2] = (int64_t)zt_data_sampler_digest(s);
    memcpy(msg + 3, s->batch, (size_t)gbs * sizeof *msg);
  }
  zt_broadcast(zt_comm_world(), msg, (size_t)(3 + gbs) * sizeof *msg, 0);
  st->data_sampler_step = msg[0];
  e->train_T = e->sampler_T = (int)msg[1];
  st->data_sampler_digest = (uint64_t)msg[2];
}

/* What an encoder-decoder (T5) does not run: the ds_config blocks Megatron-DeepSpeed applies to GPT and BERT only. */
static void check_encoder_decoder(const zt_ds_config *ds, const zt_model_kind *kind) {
  if (!ds || !kind->encoder_decoder) return;
  zt_check(!ds->sparse_attention, "ds_config", "%s: sparse_attention with %s: DeepSpeed's sparse self-attention "
           "replaces a BERT or GPT layer's attention (Megatron-DeepSpeed has no sparse T5); remove the block",
           ds->path, kind->name);
  zt_check(!ds->random_ltd.enabled, "ds_config", "%s: data_efficiency.data_routing.random_ltd with %s: "
           "Megatron-DeepSpeed converts GPT and BERT layers only; remove the block", ds->path, kind->name);
}

void zt_engine_check_random_ltd(const zt_args *a, const zt_ds_config *ds, const zt_model_kind *kind) {
  const int block = ds && ds->random_ltd.enabled;
  zt_check(!a->random_ltd || block, "arguments", "--random-ltd needs the ds_config's data_efficiency.data_routing."
           "random_ltd block with \"enabled\": true (%s), as Megatron-DeepSpeed asserts",
           ds ? ds->path : "no --deepspeed_config given");
  if (!block) return;
  const zt_random_ltd_config *c = &ds->random_ltd;
  zt_check(a->random_ltd, "arguments", "%s: data_efficiency.data_routing.random_ltd is enabled without --random-ltd: "
           "Megatron-DeepSpeed converts the layers only with the flag (and DeepSpeed then finds no random-LTD layer "
           "and stops); give both", ds->path);
  zt_check(!a->sequence_parallel, "arguments", "--sequence-parallel with random-LTD (%s): the kept tokens of a sample "
           "are spread over the tensor-parallel ranks' sequence pieces; run random-LTD without --sequence-parallel",
           ds->path);
  zt_check(!a->reset_attention_mask, "arguments", "--reset-attention-mask with random-LTD (%s): DeepSpeed's decoder "
           "keeps the first r x r block of the attention mask for the r kept tokens, which is not their documents' "
           "mask; run random-LTD without --reset-attention-mask", ds->path);
  char err[512];
  zt_check(zt_random_ltd_check(c, a->num_layers, a->seq_length, kind ? kind->causal != 0 : -1, err, sizeof err),
           "ds_config", "%s: data_efficiency.data_routing.random_ltd (--num-layers %d, --seq-length %d): %s", ds->path,
           a->num_layers, a->seq_length, err);
}

/* Random-LTD's scheduler and the model's random-LTD layers (the ds_config's block, checked against the model). */
static void random_ltd_setup(zt_engine *e, const zt_model_kind *kind) {
  const zt_args *a = e->args;
  const zt_ds_config *ds = e->ds;
  zt_engine_check_random_ltd(a, ds, kind);
  e->ltd_on = ds && ds->random_ltd.enabled;
  e->st.random_ltd_layer_tokens = e->ltd_on ? 0 : -1;
  if (!e->ltd_on) return;
  const zt_random_ltd_config *c = &ds->random_ltd;
  zt_random_ltd_init(&e->ltd, c);
  e->ltd_layers = zt_calloc((size_t)a->num_layers, 1, "random-LTD layers");
  for (int i = 0; i < c->n_layer_id; i++) e->ltd_layers[c->layer_id[i]] = 1;
  char list[256];
  int len = 0;
  for (int l = 0; l < a->num_layers && len < (int)sizeof list - 16; l++)
    if (e->ltd_layers[l]) len += snprintf(list + len, sizeof list - (size_t)len, "%s%d", len ? "," : "", l);
  zt_log("> random-LTD: layers %s (%lld of %d) train on a reserved length of %lld tokens growing to %lld over %lld "
         "steps in multiples of %lld (fixed_linear), the other tokens passing them unchanged; evaluation on all "
         "tokens\n", list, (long long)c->random_ltd_layer_num, a->num_layers, (long long)c->min_value,
         (long long)c->max_value, (long long)c->require_steps, (long long)c->seq_per_step);
}

/* The ds_config's optimizer block (adam, adamw, lamb) over Megatron's --optimizer. */
static void ds_optimizer(const zt_ds_config *ds, zt_opt_config *oc) {
  if (strcmp(ds->optimizer_type, "lamb") == 0) {
    zt_opt_config_lamb_defaults(oc);
    oc->max_coeff = (float)ds->max_coeff.value;
    oc->min_coeff = (float)ds->min_coeff.value;
    oc->bias_correction = ds->bias_correction;
  } else {
    oc->kind = ZT_OPT_ADAM;
    oc->adam_w_mode = strcmp(ds->optimizer_type, "adamw") == 0 ? 1 : ds->adam_w_mode;
  }
  oc->beta1 = (float)ds->beta1.value;
  oc->beta2 = (float)ds->beta2.value;
  oc->eps = (float)ds->eps.value;
  oc->weight_decay = (float)ds->weight_decay.value;
}

/* The ds_config's scheduler block: DeepSpeed's parameter names, only the keys the file gives. */
static void ds_scheduler(zt_engine *e, const zt_ds_config *ds, double base_lr) {
  const int kind = zt_ds_sched_kind_from_name(ds->scheduler_type);
  zt_check(kind >= 0, "ds_config", "%s: scheduler type \"%s\" is not one of DeepSpeed's", ds->path,
           ds->scheduler_type);
  zt_ds_sched_params p;
  zt_ds_sched_defaults((zt_ds_sched_kind)kind, &p);
#define TAKE(f) if (ds->sched.f.given) p.f = ds->sched.f.value
  TAKE(lr_range_test_min_lr); TAKE(lr_range_test_step_size); TAKE(lr_range_test_step_rate);
  TAKE(cycle_min_lr); TAKE(cycle_max_lr); TAKE(decay_lr_rate); TAKE(cycle_first_step_size);
  TAKE(cycle_second_step_size); TAKE(decay_step_size); TAKE(cycle_min_mom); TAKE(cycle_max_mom);
  TAKE(decay_mom_rate); TAKE(warmup_min_lr); TAKE(warmup_max_lr); TAKE(warmup_num_steps); TAKE(total_num_steps);
  TAKE(warmup_min_ratio); TAKE(cos_min_ratio);
#undef TAKE
  if (ds->sched.cycle_first_stair_count.given) p.cycle_first_stair_count = (int)ds->sched.cycle_first_stair_count.value;
  if (ds->sched.cycle_second_stair_count.given)
    p.cycle_second_stair_count = (int)ds->sched.cycle_second_stair_count.value;
  p.lr_range_test_staircase = ds->sched.lr_range_test_staircase;
  p.cycle_momentum = ds->sched.cycle_momentum;
  if (ds->sched.last_batch_iteration.given) p.last_batch_iteration = (int64_t)ds->sched.last_batch_iteration.value;
  if (ds->sched.warmup_type[0]) snprintf(p.warmup_type, sizeof p.warmup_type, "%s", ds->sched.warmup_type);
  zt_ds_sched_init(&e->st.ds_sched, (zt_ds_sched_kind)kind, &p, base_lr);
  if (e->st.opt.cfg.kind == ZT_OPT_SGD) zt_ds_sched_disable_momentum(&e->st.ds_sched, "SGD");
  e->st.use_ds_sched = 1;
  zt_log("> DeepSpeed scheduler %s from %s replaces Megatron's learning-rate schedule\n", ds->scheduler_type,
         ds->path);
}

/* Megatron's OptimizerParamScheduler sets every parameter group's weight_decay (wd_mult 0 for no_weight_decay
 * parameters: the optimizer's per-parameter flag) to get_wd() when it is built, then after each applied step. A
 * ds_config scheduler block replaces it after it was built (DeepSpeed 0.16 prefers the configured scheduler and never
 * steps the client's): the weight decay then stays at its first value, start_wd. */
static void weight_decay_setup(zt_engine *e) {
  zt_train_state *st = &e->st;
  const zt_lr_schedule *s = &st->sched;
  st->opt.cfg.weight_decay = (float)zt_wd_get(s);
  if (s->wd_style == ZT_WD_CONSTANT) return;
  char from[40], to[40];
  zt_py_float(from, sizeof from, s->start_wd, 0);
  zt_py_float(to, sizeof to, s->end_wd, 0);
  const char *style = s->wd_style == ZT_WD_LINEAR ? "linear" : "cosine";
  if (st->use_ds_sched)
    zt_log("> --weight-decay-incr-style %s: the ds_config's scheduler block replaces Megatron's OptimizerParamScheduler, "
           "which increments the weight decay; it stays at --start-weight-decay %s for the whole run, as in "
           "Megatron-DeepSpeed\n", style, from);
  else
    zt_log("> weight decay: %s increment from %s to %s over %lld samples, then %s%s\n", style, from, to,
           (long long)s->wd_incr_steps, to,
           e->ds && e->ds->has_optimizer ? " (it replaces the ds_config's optimizer.params.weight_decay)" : "");
}

/* The flops profiler's module tree of the model at its current pass length (DeepSpeed's profiler measures the
 * forward it watches: under a curriculum, the profiled iteration's length). */
static zt_flops_profiler *make_flops_profiler(zt_engine *e) {
  const zt_ds_config *ds = e->ds;
  zt_flops_profiler_config fc = {.recompute_fwd_factor = ds->fp_recompute_fwd_factor,
                                 .module_depth = ds->fp_module_depth, .top_modules = ds->fp_top_modules,
                                 .detailed = ds->fp_detailed, .output_file = ds->fp_output_file};
  return e->model->ops->flops_profiler(e->model, &fc);
}

static void ds_engine_init(zt_engine *e, const zt_ds_config *ds) {
  const zt_args *a = e->args;
  e->clip_grad = (float)ds->gradient_clipping.value;
  if (!ds->gradient_clipping.given)
    zt_log("> gradient_clipping is not in %s: DeepSpeed's default 0.0, no clipping (Megatron's --clip-grad is "
           "not used with --deepspeed)\n", ds->path);
  if (ds->has_scheduler) ds_scheduler(e, ds, ds->has_optimizer ? ds->lr.value : a->lr);
  zt_monitor_config mc = {.csv_enabled = ds->csv_monitor_enabled, .csv_output_path = ds->csv_monitor_output_path,
                          .csv_job_name = ds->csv_monitor_job_name, .tb_enabled = ds->tensorboard_enabled,
                          .tb_output_path = ds->tensorboard_output_path, .tb_job_name = ds->tensorboard_job_name};
  if (ds->csv_monitor_enabled || ds->tensorboard_enabled) e->monitor = zt_monitor_open(&mc);
  /* timers.throughput.enabled false silences DeepSpeed's throughput lines; "synchronized" is a device
   * synchronization, which the CPU does not need */
  zt_ds_throughput_init(&e->tput, a->global_batch_size,
                        ds->steps_per_print.given && ds->timers_throughput_enabled ? (int64_t)ds->steps_per_print.value
                                                                                    : 0);
  e->wall_clock = ds->wall_clock_breakdown || ds->flops_profiler_enabled; /* as DeepSpeed's config does */
  if (ds->comms_logger_enabled) {
    zt_comms_logger_config cc = {.enabled = true, .verbose = ds->cl_verbose, .prof_all = ds->cl_prof_all,
                                 .n_prof_ops = ds->cl_n_prof_ops};
    memcpy(cc.prof_ops, ds->cl_prof_ops, sizeof cc.prof_ops);
    zt_comms_logger_configure(&cc);
  }
  if (ds->flops_profiler_enabled) e->fprof = make_flops_profiler(e);
}

/* flops_profiler: the report of the profiled iteration, with that iteration's engine timings. */
static void flops_report(zt_engine *e, double fwd, double bwd, double step) {
  const zt_args *a = e->args;
  zt_flops_report_args r = {.profile_step = (int)e->st.iteration, .world_size = zt_world_size(),
                            .dp_size = a->data_parallel_size, .mp_size = a->tensor_model_parallel_size,
                            .micro_batch = a->micro_batch_size, .fwd_latency = fwd, .bwd_latency = bwd,
                            .step_latency = step};
  /* the tree again, now that the profiled forward ran: an MoE layer's counts follow its capacity of that forward */
  zt_flops_profiler *p = make_flops_profiler(e);
  zt_check(p->nslots == e->fprof->nslots, "internal error", "flops profiler: %d latency slots, then %d",
           e->fprof->nslots, p->nslots);
  memcpy(p->times, e->fprof->times, (size_t)p->nslots * sizeof(double));
  if (zt_rank() == 0) zt_flops_profiler_report(p, &r);
  zt_flops_profiler_free(p);
  zt_flops_profiler_free(e->fprof);
  e->fprof = NULL;
}

/* ---- mixed precision (docs/mixed_precision.md) ----------------------------------------------- */

static zt_dtype dtype_from_name(const char *s) {
  return !strcmp(s, "fp16") ? ZT_DTYPE_FP16 : !strcmp(s, "bf16") ? ZT_DTYPE_BF16 : ZT_DTYPE_FP32;
}

/* The half type, where gradients accumulate, the all-reduce type and the loss scaler: Megatron's
 * rules (--fp16/--bf16, --loss-scale, --initial-loss-scale, ...) or, with --deepspeed, the fp16/bf16
 * blocks as DeepSpeed's engine reads them (the optimizer DeepSpeed would wrap decides the scaler). */
static void mixed_precision_setup(zt_engine *e) {
  const zt_args *a = e->args;
  const zt_ds_config *ds = e->ds;
  e->st.half_dtype = a->fp16 ? ZT_DTYPE_FP16 : a->bf16 ? ZT_DTYPE_BF16 : ZT_DTYPE_FP32;
  zt_loss_scaler_init_static(&e->st.scaler, 1.0);
  if (!ds) {
    e->grads_half = a->fp16 && !a->accumulate_allreduce_grads_in_fp32;
    e->comm_dtype = e->grads_half ? e->st.half_dtype : ZT_DTYPE_FP32;
    if (a->fp16) {
      if (a->loss_scale > 0) zt_loss_scaler_init_static(&e->st.scaler, a->loss_scale);
      else zt_loss_scaler_init_dynamic(&e->st.scaler, ZT_SCALER_MEGATRON, a->initial_loss_scale, a->loss_scale_window,
                                       a->hysteresis, 0, a->min_loss_scale);
    }
    return;
  }
  const zt_dtype accum = dtype_from_name(ds->grad_accum_dtype);
  if (a->bf16) {
    zt_check(!ds->grad_accum_dtype[0] || accum == ZT_DTYPE_FP32 || ds->zero_stage > 0, "ds_config",
             "%s: Bfloat16 wrapper must use a gradient accumulation type of fp32, enable ZeRO to use Bfloat16 "
             "gradient accumulation (data_types.grad_accum_dtype is \"%s\")", ds->path, ds->grad_accum_dtype);
    e->grads_half = ds->zero_stage > 0 && (!ds->grad_accum_dtype[0] || accum == ZT_DTYPE_BF16);
  } else if (a->fp16) {
    zt_check(!ds->grad_accum_dtype[0] || accum != ZT_DTYPE_BF16, "ds_config", "%s: data_types.grad_accum_dtype "
             "\"bf16\" with an fp16 model is not supported (use fp16 or fp32)", ds->path);
    e->grads_half = !ds->grad_accum_dtype[0] || accum == ZT_DTYPE_FP16;
  } else {
    zt_check(!ds->grad_accum_dtype[0] || accum == ZT_DTYPE_FP32, "ds_config", "%s: data_types.grad_accum_dtype "
             "\"%s\" needs fp16 or bf16 enabled", ds->path, ds->grad_accum_dtype);
  }
  /* communication_data_type: None follows the model (fp16, bf16 or fp32); with DeepSpeed-Ulysses DeepSpeed's engine
   * takes seq_parallel_comm_data_type instead (fp32 unless set) */
  e->comm_dtype = ds->communication_data_type[0] ? dtype_from_name(ds->communication_data_type) : e->st.half_dtype;
  if (a->ds_sequence_parallel_size > 1) e->comm_dtype = dtype_from_name(ds->seq_parallel_comm_data_type);
  if (!a->fp16) return;
  if (ds->loss_scale.value > 0) {
    zt_loss_scaler_init_static(&e->st.scaler, ds->loss_scale.value);
    return;
  }
  const double power_scale = ldexp(1.0, (int)ds->initial_scale_power.value);
  if (ds->zero_stage == 0) { /* FP16_Optimizer: 2**initial_scale_power, no hysteresis */
    zt_loss_scaler_init_dynamic(&e->st.scaler, ZT_SCALER_DS_FUSED, power_scale, (int64_t)ds->loss_scale_window.value,
                                1, 0, ds->min_loss_scale.value);
  } else if (ds->dynamic_loss_args) { /* ZeRO: get_dynamic_loss_scale_args */
    zt_loss_scaler_init_dynamic(&e->st.scaler, ZT_SCALER_DS_DYNAMIC, power_scale, (int64_t)ds->loss_scale_window.value,
                                (int)ds->hysteresis.value, ds->consecutive_hysteresis, ds->min_loss_scale.value);
  } else { /* ZeRO with none of the five keys: DynamicLossScaler()'s own defaults */
    zt_loss_scaler_init_dynamic(&e->st.scaler, ZT_SCALER_DS_DYNAMIC, ldexp(1.0, 32), 1000, 1, 0, 1.0);
  }
  e->st.scaler.scale_is_int = 1;
}


/* ZT_SPARSE_ATTENTION=mask: the dense kernels with the layout as a mask, the reference the block-sparse kernels
 * are compared with (docs/sparse_attention.md); unset or "sparse": the block-sparse kernels. */
static int sparse_as_mask(void) {
  const char *v = getenv("ZT_SPARSE_ATTENTION");
  if (!v || !*v || !strcmp(v, "sparse")) return 0;
  zt_check(!strcmp(v, "mask"), "environment", "ZT_SPARSE_ATTENTION=%s: expected \"sparse\" (the default) or "
           "\"mask\"", v);
  return 1;
}

/* The ds_config's sparse_attention layout for --num-attention-heads and --seq-length (DeepSpeed's make_layout;
 * random blocks from --seed, the same on every rank); a causal model leaves out the tiles above the diagonal,
 * which its mask hides anyway. The config was checked at start-up (zt_engine_deepspeed_setup). */
static void sparse_setup(zt_engine *e) {
  const zt_args *a = e->args;
  if (!e->ds || !e->ds->sparse_attention) return;
  const zt_sparsity_config *c = &e->ds->sparse;
  const int H = a->num_attention_heads, nb = a->seq_length / c->block;
  const size_t per_head = (size_t)nb * (size_t)nb;
  uint8_t *mask = zt_malloc((size_t)H * per_head, "sparse attention layout");
  zt_sparsity_model_layout(c, H, a->seq_length, a->seq_length, (uint64_t)a->seed, e->kind->causal, mask);
  char line[256];
  zt_sparsity_describe(c, mask, H, nb, line, sizeof line);
  zt_attn_layout_from_mask(&e->sparse, mask, H, nb, c->block);
  free(mask);
  zt_log("> sparse attention (%s): %s%s%s\n", e->ds->path, line, e->kind->causal ? " (causal: tiles above the "
         "diagonal left out)" : "", sparse_as_mask() ? "; ZT_SPARSE_ATTENTION=mask: dense kernels with the layout "
         "as a mask" : "");
}

/* The architecture flags of the model kinds (Megatron's args, and the ds_config's sparse_attention layout once
 * sparse_setup made it). */
static zt_model_args args_model(const zt_args *a) {
  zt_model_args m = {.num_layers = a->num_layers, .hidden_size = a->hidden_size,
                         .num_heads = a->num_attention_heads, .ffn_hidden_size = a->ffn_hidden_size,
                         .max_positions = a->max_position_embeddings, .padded_vocab_size = a->padded_vocab_size,
                         .ln_eps = a->layernorm_epsilon, .attn_dropout = a->attention_dropout,
                         .hidden_dropout = a->hidden_dropout, .init_std = a->init_method_std,
                         .untie_embeddings = a->untie_embeddings_and_output_weights,
                         .residual_post_ln = a->apply_residual_connection_post_layernorm,
                         .binary_head = a->bert_binary_head, .cls_classes = a->finetune_classes,
                         .cls_choices = a->finetune_choices, .cls_regression = a->finetune_regression, .moe = zt_moe_on(&a->moe) ? &a->moe : NULL,
                         .dec_layers = a->decoder_num_layers, .dec_seq_length = a->decoder_seq_length};
  zt_args_model_variants(a, &m);
  return m;
}

static zt_model_args model_args(const zt_engine *e) {
  zt_model_args m = args_model(e->args);
  m.sparse_attention = e->sparse.mem ? &e->sparse : NULL;
  m.random_ltd_layers = e->ltd_layers;
  m.sparse_as_mask = e->sparse.mem && sparse_as_mask();
  m.kd = e->args->mos || e->args->kd ? &e->kd : NULL;
  if (m.moe) m.moe = &e->moe; /* with the expert-parallel group */
  return m;
}

void zt_engine_teacher_args(const zt_args *a, zt_args *t) {
  *t = *a;
  t->num_layers = a->num_layers_teacher;
  t->hidden_size = a->hidden_size_teacher;
  t->num_attention_heads = a->num_attention_heads_teacher;
  t->kv_channels = a->hidden_size_teacher / a->num_attention_heads_teacher;
  t->ffn_hidden_size = a->teacher_ffn_hidden_size;
  t->num_experts = a->num_experts_teacher;
  t->moe_layer_experts = a->teacher_layer_experts;
  t->moe = a->teacher_moe;
  t->mos = t->kd = 0;
  /* load_model_weights_only: the weights of --load-teacher (whatever layout saved them), nothing else */
  t->load = a->load_teacher;
  t->load_tag = NULL;
  t->finetune = t->reset_iteration = t->use_checkpoint_args = 0;
  t->no_load_optim = t->no_load_rng = 1;
  t->exit_on_missing_checkpoint = 1;
  t->exit_signal_handler = 0;
}

zt_model *zt_engine_build_teacher(const zt_engine *e) {
  const zt_args *a = e->args;
  zt_check(!e->sparse.mem, "unsupported argument", "--%s with the ds_config's sparse_attention: a teacher attending "
           "with the student's block layout is not supported yet (it lands with the sparse-attention KD work)",
           a->mos ? "mos" : "kd");
  zt_args t;
  zt_engine_teacher_args(a, &t);
  /* forward-only on the student's backend and storage type, split over the student's tensor-parallel group as
   * Megatron-DeepSpeed builds it (its logits the same vocabulary slices as the student's), in one stage (the student
   * runs with one); no gradients, optimizer state or masters planned */
  const zt_model_setup s = {.backend = e->be, .dtype = e->model->dt, .micro_batch = a->micro_batch_size,
                            .seq_length = a->seq_length, .forward_only = 1, .zero_partitions = 1,
                            .tp_group = e->tp_group, .tp_size = a->tensor_model_parallel_size, .tp_rank = e->st.tp_rank,
                            .sequence_parallel = a->sequence_parallel, .pp_size = 1, .vpp = 1, .pp_buffers = 1};
  zt_model_args margs = args_model(&t);
  margs.moe = zt_moe_on(&a->teacher_moe) ? &a->teacher_moe : NULL; /* t lives on this stack: the model keeps it */
  zt_log("building the teacher %s model (--num-layers-teacher %d, --hidden-size-teacher %d, "
         "--num-attention-heads-teacher %d, ffn %d, forward only) ...\n", e->kind->name, t.num_layers, t.hidden_size,
         t.num_attention_heads, t.ffn_hidden_size);
  return e->kind->build_model(&margs, &s);
}

/* The fp32 masters of [lo, lo + n) of the flat buffer (inside the partition) from the weights as the model holds
 * them (already rounded to the half type). */
static void masters_from_weights(zt_engine *e, size_t lo, size_t n) {
  const zt_model *m = e->model;
  if (!e->st.master || !n) return;
  const size_t at = lo >= e->st.xpart_lo && lo < e->st.xpart_hi ? e->st.xpart_at + (lo - e->st.xpart_lo)
                                                                 : lo - e->st.part_lo;
  e->be->convert(e->st.master + at, ZT_DTYPE_FP32, zt_at(m->params, m->dt, lo), m->dt, n);
}

/* ... of this rank's whole partition (both of its ranges with the experts partitioned apart) */
static void masters_from_partition(zt_engine *e) {
  masters_from_weights(e, e->st.part_lo, e->st.part_hi - e->st.part_lo);
  masters_from_weights(e, e->st.xpart_lo, e->st.xpart_hi - e->st.xpart_lo);
}

/* ... and the partition's weights from its updated masters: rounded to the half type in fp32 slots (the CPU) or
 * converted to the storage type (a GPU). */
static void weights_from_masters(zt_engine *e) {
  const zt_model *m = e->model;
  for (int r = 0; r < 2; r++) { /* the partition, and the experts' (when partitioned apart) */
    const size_t lo = r ? e->st.xpart_lo : e->st.part_lo, len = r ? e->st.xpart_hi - lo : e->st.part_hi - lo;
    const float *src = e->st.master + (r ? e->st.xpart_at : 0);
    if (!len) continue;
    if (m->dt == ZT_DTYPE_FP32) e->be->round_f32((float *)m->params + lo, src, len, e->st.half_dtype);
    else e->be->convert(zt_at(m->params, m->dt, lo), m->dt, src, ZT_DTYPE_FP32, len);
  }
}

/* The model's fp32 initialization; the weights then become half values and the masters copy them (as DeepSpeed
 * and Megatron build the fp32 masters from the already-converted half model). ZeRO-3 initializes unit by unit
 * and keeps only the resident parameters of each (DeepSpeed's zero.Init: the whole model is never resident). */
static void init_weights(zt_engine *e) {
  zt_model *m = e->model;
  const uint64_t seed = e->args->seed;
  const zt_dtype half = e->st.half_dtype;
  if (!e->args->perform_initialization) {
    /* --no-initialization (Megatron's perform_initialization False): no draws; the --load checkpoint fills every
     * weight and master (zt_ckpt_start refuses a run that loads none) */
    zt_log("> --no-initialization: the weights are left for the checkpoint to fill\n");
    if (e->st.zero_stage == 3) {
      zt_zero3_reset(&e->st.zero3);
    } else {
      e->be->memset(m->params, 0, m->table->numel * zt_dtype_size(m->dt));
      masters_from_partition(e);
    }
  }
  for (int u = 0; e->args->perform_initialization && e->st.zero_stage == 3 && u < m->nunits; u++) {
    zt_model_init_range(m, seed, m->unit_off[u], m->unit_off[u + 1], half);
    masters_from_weights(e, e->st.zero3.ox[u], e->st.zero3.olen[u]); /* this rank's piece */
    zt_zero3_discard(&e->st.zero3, u);
  }
  if (e->args->perform_initialization && e->st.zero_stage != 3) {
    e->be->memset(m->params, 0, m->table->numel * zt_dtype_size(m->dt)); /* the alignment padding stays zero */
    zt_model_init_range(m, seed, 0, m->table->numel, half);
    /* the masters of this rank's partition (all of them without ZeRO; on NVMe with optimizer offload) */
    masters_from_partition(e);
  }
  if (half == ZT_DTYPE_FP32) return;
  char scale[40] = "1";
  if (half == ZT_DTYPE_FP16) zt_py_float(scale, sizeof scale, e->st.scaler.cur_scale, 0);
  static const char *const kinds[] = {"static", "DeepSpeed DynamicLossScaler", "DeepSpeed FP16_Optimizer",
                                      "Megatron DynamicGradScaler"};
  zt_log("> mixed precision: %s weights with fp32 master weights; gradients %s in %s; all-reduce in %s; "
         "loss scale %s (%s)\n", zt_dtype_name(half), e->grads_half ? "stored" : "accumulated",
         zt_dtype_name(e->grads_half ? half : ZT_DTYPE_FP32), zt_dtype_name(e->comm_dtype), scale,
         kinds[e->st.scaler.kind]);
}

/* DeepSpeed's print of the partition (PipelineModule._partition_layers, global rank 0) under --deepspeed with pipeline
 * stages, before the model is built: each stage's items with their index, then the loss function. */
static void ds_pipe_partition_log(const zt_engine *e) {
  const zt_args *a = e->args;
  if (!e->stage_first || !zt_args_gpt_model_pipe(a) || zt_comm_rank() != 0) return;
  const int pp = e->st.pp_size, L = a->num_layers, moe = zt_moe_on(&a->moe), half = a->fp16 || a->bf16;
  const int gpu = !e->be->host_visible;
  const char *norm = a->normalization == 1 ? (gpu ? "MixedFusedRMSNorm" : "RMSNorm")
                     : gpu ? "MixedFusedLayerNorm" : "LayerNorm";
  const char *tail[4];
  int nt = 0;
  if (moe) tail[nt++] = "_calculate_moe_loss";
  tail[nt++] = norm;
  tail[nt++] = a->untie_embeddings_and_output_weights ? "LMHeadPipe" : "EmbeddingPipe";
  if (half) tail[nt++] = "float16_to_fp32";
  zt_ds_logger_info("module.py:_partition_layers", "Partitioning pipeline stages with method type:transformer");
  const int n = 2 + L + nt;
  for (int s = 0; s < pp; s++) { /* items [lo, hi): stage 0 from the front, the last to the end */
    const int lo = s == 0 ? 0 : 2 + e->stage_first[s], hi = s == pp - 1 ? n : 2 + e->stage_first[s + 1];
    printf("stage=%d layers=%d\n", s, hi - lo);
    for (int i = lo; i < hi; i++)
      printf("    %2d: %s\n", i, i == 0 ? "_to_float16" : i == 1 ? "EmbeddingPipe" : i < 2 + L
             ? "ParallelTransformerLayerPipe" : tail[i - 2 - L]);
  }
  printf("  loss: loss_func\n");
  fflush(stdout);
}

/* Megatron's process groups (runtime/parallel): with tensor parallelism every rank creates the data groups then
 * the tensor groups, all of them in Megatron's order, and keeps its own; without it the data group is the world. */
static void setup_groups(zt_engine *e) {
  const zt_args *a = e->args;
  zt_train_state *st = &e->st;
  e->dp_group = zt_comm_world();
  st->dp_rank = zt_group_rank(e->dp_group);
  st->dp_size = a->data_parallel_size;
  e->tp_group = e->pp_group = e->emb_group = e->ep_group = e->ep_dp_group = e->usp_group = e->loss_group = NULL;
  st->tp_rank = st->pp_rank = 0;
  e->moe = a->moe;
  const int ep = zt_moe_on(&a->moe) ? a->moe_expert_parallel_size : 1;
  st->tp_size = a->tensor_model_parallel_size;
  st->pp_size = a->pipeline_model_parallel_size;
  zt_check(st->pp_size == 1 || !(e->ds && e->ds->flops_profiler_enabled), "unsupported argument", "the "
           "flops_profiler of %s with --pipeline-model-parallel-size %d is not supported yet", e->ds ? e->ds->path : "",
           st->pp_size);
  st->usp_rank = 0;
  st->usp_size = a->ds_sequence_parallel_size;
  if (a->ds_sequence_parallel_fpdt) { /* DeepSpeed FPDT (models/transformer/ulysses.h) */
    const zt_ds_config *ds = e->ds;
    const int K = a->ds_sequence_parallel_fpdt_chunk_size, P = st->usp_size;
    zt_check(!ds || (!ds->sparse_attention && !ds->curriculum.enabled), "unsupported argument",
             "--ds-sequence-parallel-fpdt with the %s block of %s: not supported (FPDT deals out and attends over "
             "whole sequences of --seq-length in chunks of %d tokens)",
             !ds ? "" : ds->sparse_attention ? "sparse_attention" : "curriculum_learning", ds ? ds->path : "", K);
    zt_log("> DeepSpeed FPDT: the attention in chunks of %d tokens, keeping log-sum-exps%s; the layers without hidden "
           "dropout\n", K, P > 1 ? "" : " (one sequence-parallel rank)");
    if (P > 1)
      zt_log("> DeepSpeed FPDT: each sequence-parallel rank r holds chunks r, r + %d, ... of %d tokens (%d per rank)"
             "\n", P, K / P, a->seq_length / P);
  }
  if (st->usp_size > 1) { /* DeepSpeed-Ulysses (TP = PP = 1): groups of consecutive ranks, as Megatron-DeepSpeed's
                           * parallel_state builds them; the gradients go over the world (sequence-data-parallel) */
    const int P = st->usp_size, W = zt_comm_size(), me = zt_comm_rank();
    const zt_ds_config *ds = e->ds;
    zt_check(!ds || (!ds->flops_profiler_enabled && !ds->sparse_attention && !ds->curriculum.enabled),
             "unsupported argument", "--ds-sequence-parallel-size %d with the %s block of %s: not supported (each rank "
             "holds a share of every sequence)", P, !ds ? "" : ds->flops_profiler_enabled ? "flops_profiler"
             : ds->sparse_attention ? "sparse_attention" : "curriculum_learning", ds ? ds->path : "");
    int *members = zt_malloc((size_t)W * sizeof(int), "sequence-parallel groups");
    for (int g = 0; g < W / P; g++) {
      for (int i = 0; i < P; i++) members[i] = g * P + i;
      zt_group *grp = zt_group_create(members, P);
      if (grp) e->usp_group = grp;
    }
    for (int j = 0; j < P; j++) { /* Megatron-DeepSpeed's data-parallel groups: range(j, W, P) */
      for (int i = 0; i < W / P; i++) members[i] = j + i * P;
      zt_group *grp = zt_group_create(members, W / P);
      if (grp) e->loss_group = grp;
    }
    free(members);
    zt_check(e->usp_group && zt_group_rank(e->usp_group) == me % P, "internal error", "rank %d: no sequence-parallel "
             "group of %d", me, P);
    st->usp_rank = me % P;
    st->dp_rank = me / P;
    zt_log("> DeepSpeed-Ulysses sequence parallelism: %d groups of %d consecutive ranks, each rank %d of every %d "
           "tokens; gradients summed over all %d ranks / data-parallel size %d\n", W / P, P, a->seq_length / P,
           a->seq_length, W, a->data_parallel_size);
    return;
  }
  if (a->tensor_model_parallel_size == 1 && st->pp_size == 1 && ep == 1) return;
  const int vpp = a->virtual_pipeline_model_parallel_size > 0 ? a->virtual_pipeline_model_parallel_size : 1;
  e->stage_first = zt_args_pipe_stages(a); /* GPTModelPipe's or the standalone embedding stage's, or NULL */
  zt_layout l; /* T5's layers split at the split rank; GPTModelPipe's as DeepSpeed partitions them */
  zt_layout_init(&l, zt_comm_size(), a->tensor_model_parallel_size, st->pp_size, ep, vpp,
                 e->kind->encoder_decoder || e->stage_first ? 0 : a->num_layers);
  l.ep_data_first = e->ds && e->ds->use_data_before_expert_parallelism; /* DeepSpeed's D + E expert groups */
  int *members = zt_malloc((size_t)l.world * sizeof(int), "process groups");
  /* the model-parallel groups (none with one tensor and one pipeline rank: the data group is the world), then
   * DeepSpeed's expert-parallel groups */
  const zt_group_kind kinds[6] = {ZT_GROUP_DATA, ZT_GROUP_TENSOR, ZT_GROUP_PIPELINE, ZT_GROUP_EMBEDDING,
                                  ZT_GROUP_EXPERT, ZT_GROUP_EXPERT_DATA};
  const int model_parallel = a->tensor_model_parallel_size > 1 || st->pp_size > 1;
  for (int k = 0; k < 6; k++) {
    if ((k < 2 && !model_parallel) || ((k == 2 || k == 3) && st->pp_size == 1) || (k >= 4 && ep == 1)) continue;
    int size, count = zt_layout_all_groups(&l, kinds[k], members, &size);
    if (kinds[k] == ZT_GROUP_EXPERT) { /* DeepSpeed's line (groups.py, log_dist on rank 0), then the groups */
      if (e->ds)
        zt_ds_logger_info("groups.py:_create_expert_data_and_model_parallel", "Creating deepspeed groups with "
                          "model parallel size %d, pipeline parallel size %d, expert parallel size %d, world size %d, "
                          "dp world size %d", l.tp, l.pp, ep, l.world, l.dp);
      zt_log("> expert-parallel groups (%s):", l.ep_data_first ? "D + E, use_data_before_expert_parallelism" : "E + D");
      for (int i = 0; i < count * size; i++)
        zt_log("%s%d%s", i % size ? ", " : " [", members[i], i % size == size - 1 ? "]" : "");
      zt_log("\n");
    }
    for (int g = 0; g < count; g++) {
      zt_group *grp = zt_group_create(members + (size_t)g * size, size);
      if (grp && kinds[k] == ZT_GROUP_DATA) e->dp_group = grp;
      if (grp && kinds[k] == ZT_GROUP_TENSOR) e->tp_group = grp;
      if (grp && kinds[k] == ZT_GROUP_PIPELINE) e->pp_group = grp;
      if (grp && kinds[k] == ZT_GROUP_EMBEDDING) e->emb_group = grp;
      if (grp && kinds[k] == ZT_GROUP_EXPERT) e->ep_group = grp;
      if (grp && kinds[k] == ZT_GROUP_EXPERT_DATA) e->ep_dp_group = grp;
    }
  }
  free(members);
  zt_coords c = zt_layout_coords(&l, zt_comm_rank());
  st->dp_rank = c.dp;
  st->tp_rank = c.tp;
  st->pp_rank = c.pp;
  zt_check(st->pp_size == 1 || (e->pp_group && zt_group_rank(e->pp_group) == c.pp), "internal error",
           "rank %d: pipeline group disagrees with the layout (stage %d)", zt_comm_rank(), c.pp);
  if (a->tensor_model_parallel_size == 1) e->tp_group = NULL; /* one rank: the model needs no group */
  if (ep > 1) {
    zt_check(e->ep_group && zt_group_size(e->ep_group) == ep, "internal error",
             "rank %d: no expert-parallel group of %d", zt_comm_rank(), ep);
    e->moe.ep_group = e->ep_group, e->moe.ep_size = ep, e->moe.ep_rank = zt_group_rank(e->ep_group);
  }
  zt_check((!e->tp_group || zt_group_rank(e->tp_group) == c.tp) && zt_group_rank(e->dp_group) == c.dp,
           "internal error", "rank %d: tensor/data groups disagree with the layout (tp %d, dp %d)", zt_comm_rank(),
           c.tp, c.dp);
}

/* activation_checkpointing (DeepSpeed's checkpointing.configure): the options of the recomputed layers.
 * partition_activations splits each saved layer input over the tensor-parallel ranks (models/transformer/stack.c);
 * checkpoints are kept in one planned contiguous region (contiguous_memory_optimization), on the host on the
 * CPU path (cpu_checkpointing); profile prints DeepSpeed's per-layer forward/backward timer lines. */
static void activation_checkpointing_setup(zt_engine *e, zt_model_setup *s) {
  const zt_ds_config *ds = e->ds;
  const zt_args *a = e->args;
  /* Megatron's own CheckpointFunction with distribute_saved_activations (train/args.c): the same split of the saved
   * layer inputs (the stack leaves it off under --sequence-parallel, as Megatron-DeepSpeed does) */
  s->partition_activations = a->distribute_activations;
  if (!ds) return;
  const int any = ds->ac_partition || ds->ac_cpu || ds->ac_contiguous || ds->ac_synchronize || ds->ac_profile ||
                  ds->ac_number_checkpoints >= 0;
  if (!any) return;
  zt_check(a->recompute_granularity == ZT_RECOMPUTE_FULL, "ds_config", "%s: activation_checkpointing applies to "
           "checkpointed (recomputed) layers: add --checkpoint-activations (or --recompute-granularity full)",
           ds->path);
  const int layers = (a->num_layers + a->recompute_num_layers - 1) / a->recompute_num_layers;
  zt_check(!ds->ac_contiguous || ds->ac_number_checkpoints >= layers, "ds_config", "%s: "
           "activation_checkpointing.contiguous_memory_optimization needs number_checkpoints >= %d (the checkpointed "
           "layers), got %d", ds->path, layers, ds->ac_number_checkpoints);
  zt_check(!ds->ac_partition || a->pipeline_model_parallel_size == 1, "ds_config", "%s: "
           "activation_checkpointing.partition_activations with --pipeline-model-parallel-size %d is not supported yet",
           ds->path, a->pipeline_model_parallel_size);
  s->partition_activations = s->partition_activations || ds->ac_partition;
  char nl[24] = "None";
  if (ds->ac_number_checkpoints >= 0) snprintf(nl, sizeof nl, "%d", ds->ac_number_checkpoints);
  static const char *const tf[2] = {"False", "True"};
  const char *where = "checkpointing.py:forward";
  zt_ds_logger_info(where, "Activation Checkpointing Information");
  zt_ds_logger_info(where, "----Partition Activations %s, CPU CHECKPOINTING %s", tf[ds->ac_partition], tf[ds->ac_cpu]);
  zt_ds_logger_info(where, "----contiguous Memory Checkpointing %s with %s total layers", tf[ds->ac_contiguous], nl);
  zt_ds_logger_info(where, "----Synchronization %s", tf[ds->ac_synchronize]);
  zt_ds_logger_info(where, "----Profiling time in checkpointing %s", tf[ds->ac_profile]);
  if (ds->ac_partition && a->tensor_model_parallel_size > 1)
    zt_log("> partition_activations: each tensor-parallel rank keeps 1/%d of every saved layer input%s\n",
           a->tensor_model_parallel_size, a->sequence_parallel ? " (with --sequence-parallel they are split over the "
           "sequence already)" : "");
}
/* activation_checkpointing.profile: DeepSpeed's timers.log after each checkpointed forward and backward. */
static void checkpoint_profile_line(void *ctx, const char *name, double ms) {
  (void)ctx;
  const char *names[1] = {name};
  zt_ds_timers_log(names, &ms, 1);
}

/* Expert parallelism: says which experts this rank holds. */
static void expert_setup_log(const zt_engine *e) {
  const zt_moe_config *mc = &e->moe;
  if (mc->ep_size <= 1 || !zt_moe_on(mc)) return;
  const zt_param_table *t = e->model->table;
  size_t held = 0;
  for (int i = 0; i < t->count; i++)
    if (t->params[i].expert_id >= 0) held += t->params[i].numel;
  if (!mc->local_experts) {
    zt_log("> expert parallelism: every rank holds all experts' parameters (%zu elements), partitioned with the others "
           "over the data-parallel group (%s); each runs only its own (docs/moe.md)\n", held,
           e->st.zero_stage == 3 ? "ZeRO stage 3" : "offload_optimizer nvme swaps one partition");
    return;
  }
  const int dp = zt_group_size(e->ep_dp_group);
  zt_log("> expert parallelism: expert-parallel rank %d of %d holds only its own 1/%d of each MoE layer's experts "
         "(%zu of the %zu expert parameter elements); their gradients are averaged over the %d rank%s holding them\n",
         mc->ep_rank, mc->ep_size, mc->ep_size, held, held * (size_t)mc->ep_size, dp, dp > 1 ? "s" : "");
}

/* ZeRO stages 1-3 over the data-parallel group: this rank's partition of the flat buffers. */
static void zero_setup(zt_engine *e) {
  zt_train_state *st = &e->st;
  const size_t n = e->model->table->numel;
  st->part_lo = 0;
  st->part_hi = n;
  if (st->zero_stage == 0) return;
  const zt_ds_config *ds = e->zcfg;
  const zt_args *a = e->args;
  zt_check(st->zero_stage == 1 || a->pipeline_model_parallel_size == 1, "ds_config", "%s: ZeRO-2 and ZeRO-3 are "
           "incompatible with pipeline parallelism (zero_optimization.stage %d with --pipeline-model-parallel-size "
           "%d; stage 1 runs there)", ds->path, st->zero_stage, a->pipeline_model_parallel_size);
  const zt_param_table *t = e->model->table;
  const int split = st->local_experts && t->expert_lo > 0; /* this rank's experts, laid out last, partitioned apart */
  zt_zero_init(&st->zero, st->zero_stage, e->dp_group, split ? t->dense_numel : n, (size_t)ds->zero_reduce_bucket_size,
               (size_t)ds->zero_allgather_bucket_size, ds->zero_reduce_scatter, e->be, e->model->dt);
  st->part_lo = st->zero.lo;
  st->part_hi = st->zero.hi;
  if (split) { /* DeepSpeed's expert-data-parallel partitioning of the experts' parameter group */
    zt_zero_init(&st->zero_x, st->zero_stage, e->ep_dp_group, n - t->expert_lo, (size_t)ds->zero_reduce_bucket_size,
                 (size_t)ds->zero_allgather_bucket_size, ds->zero_reduce_scatter, e->be, e->model->dt);
    st->zero_x.base = t->expert_lo;
    st->xpart_lo = t->expert_lo + st->zero_x.lo;
    st->xpart_hi = t->expert_lo + st->zero_x.hi;
    st->xpart_at = st->zero.part;
    zt_log("> ZeRO stage %d with expert parallelism: the dense parameters (%zu) over the %d data-parallel ranks, this "
           "rank's experts (%zu) over the %d rank%s holding them: partitions of %zu and %zu elements\n", st->zero_stage,
           t->dense_numel, st->zero.dp_size, n - t->expert_lo, st->zero_x.dp_size, st->zero_x.dp_size > 1 ? "s" : "",
           st->zero.part, st->zero_x.part);
  }
  if (!e->ds) { /* Megatron's DistributedOptimizer: the same partition of the state, none of DeepSpeed's lines */
    zt_log("> --use-distributed-optimizer: %zu parameters, the optimizer state%s in %d partitions of %zu (%.1f MiB "
           "per rank), the gradients reduced into them and the updated parameters gathered (ZeRO stage 1)\n", n,
           st->half_dtype != ZT_DTYPE_FP32 ? " and fp32 masters" : "", st->zero.dp_size, st->zero.part,
           (double)(st->zero.part + st->zero_x.part) * 4 * (st->half_dtype != ZT_DTYPE_FP32 ? 3 : 2) / (1 << 20));
    return;
  }
  zt_log("> ZeRO stage %d: %zu parameters in %d partitions of %zu (optimizer state%s per rank: %.1f MiB)\n",
         st->zero_stage, split ? t->dense_numel : n, st->zero.dp_size, st->zero.part,
         st->half_dtype != ZT_DTYPE_FP32 ? " and fp32 masters" : "",
         (double)(st->zero.part + st->zero_x.part) * 4 * (st->half_dtype != ZT_DTYPE_FP32 ? 3 : 2) / (1 << 20));
  /* DeepSpeed's estimator for the same model and data-parallel size, next to this rank's plan */
  int64_t total, largest;
  const zt_model_args margs = model_args(e);
  e->kind->count_params(&margs, &total, &largest);
  const int opt_off = strcmp(ds->offload_optimizer_device, "none") != 0;
  const zt_memplan *p = e->model->plan;
  if (st->zero_stage == 3) { /* the per-rank figures come with the fetch units (zero3_setup) */
    const zt_zero_mem est = zt_zero3_mem_needs(total, largest, a->data_parallel_size, 1, opt_off,
                                               strcmp(ds->offload_param_device, "none") != 0, 1, 1.5);
    zt_log("> ZeRO memory: DeepSpeed's estimate_zero3_model_states_mem_needs(%lld params, largest layer %lld, %d "
           "GPUs): %.1f MiB per GPU, %.1f MiB per CPU (fp16 model states on a GPU)\n", (long long)total,
           (long long)largest, a->data_parallel_size, (double)est.gpu_bytes / (1 << 20),
           (double)est.cpu_bytes / (1 << 20));
    return;
  }
  const zt_zero_mem est = zt_zero2_mem_needs(total, a->data_parallel_size, 1, opt_off, 1.5);
  zt_log("> ZeRO memory: DeepSpeed's estimate_zero2_model_states_mem_needs(%lld params, %d GPUs): %.1f MiB per GPU, "
         "%.1f MiB per CPU (fp16 model states on a GPU); this rank's plan (%s): params %.1f | "
         "grads %.1f | optimizer state %.1f MiB\n", (long long)total, a->data_parallel_size,
         (double)est.gpu_bytes / (1 << 20), (double)est.cpu_bytes / (1 << 20),
         e->be->host_visible ? "CPU path, fp32 slots" : e->be->name, (double)p->bytes[ZT_MEM_PARAMS] / (1 << 20),
         (double)p->bytes[ZT_MEM_GRADS] / (1 << 20), (double)p->bytes[ZT_MEM_OPTIM] / (1 << 20));
}

/* The ds_config's aio block as the handle's configuration, checked. */
/* The ds_config's aio block as the handle's configuration, checked. */
static zt_aio_config ds_aio_config(const zt_ds_config *ds) {
  zt_aio_config ac;
  zt_aio_config_defaults(&ac);
  ac.block_size = ds->aio_block_size;
  ac.queue_depth = ds->aio_queue_depth;
  ac.intra_op_parallelism = ds->aio_intra_op_parallelism;
  ac.single_submit = ds->aio_single_submit;
  ac.overlap_events = ds->aio_overlap_events;
  char err[256];
  zt_check(zt_aio_config_check(&ac, err, sizeof err) == 0, "ds_config", "%s: aio: %s", ds->path, err);
  return ac;
}

/* The parameter swap files go at exit too (zt_fatal exits through exit()). */
static zt_zero3 *live_zero3;
static void remove_param_swap_files(void) {
  if (live_zero3 && live_zero3->ps) zt_param_swapper_free(live_zero3->ps);
  live_zero3 = NULL;
}

static void zero3_hook(void *ctx, int event, int unit) {
  zt_engine *e = ctx;
  zt_zero3 *s = &e->st.zero3;
  if (event == ZT_PARAM_FETCH) {
    zt_zero3_fetch(s, unit);
  } else if (event == ZT_PARAM_RELEASE) {
    zt_zero3_release(s, unit);
  } else { /* --sequence-parallel: the unit's layernorm and bias gradients summed over TP first */
    zt_model_sync_sequence_parallel(e->model, e->model->unit_off[unit], e->model->unit_off[unit + 1]);
    zt_zero3_grad_ready(s, unit);
  }
}

/* Stage 3: each rank keeps its partition and the persistent parameters; the model fetches the rest unit by
 * unit. */
static void zero3_setup(zt_engine *e) {
  zt_train_state *st = &e->st;
  if (st->zero_stage != 3) return;
  const zt_ds_config *ds = e->ds;
  const int W = e->args->data_parallel_size;
  const double f = ds->gradient_predivide_factor.value;
  const char *poison = getenv("ZT_ZERO3_POISON");
  zt_model *m = e->model;
  const int nvme = !strcmp(ds->offload_param_device, "nvme");
  const zt_aio_config ac = nvme ? ds_aio_config(ds) : (zt_aio_config){0};
  const zt_zero3_config zc = {
      .prefetch_bucket = (size_t)ds->zero_prefetch_bucket_size, .max_live = (size_t)ds->zero_max_live_parameters,
      .max_reuse = (size_t)ds->zero_max_reuse_distance, .persistence = (size_t)ds->zero_param_persistence_threshold,
      .model_persistence = ds->zero_model_persistence_threshold >= 9.2e18 ? (size_t)-1
                                                                          : (size_t)ds->zero_model_persistence_threshold,
      .reduce_bucket = (size_t)ds->zero_reduce_bucket_size,
      .grad_round = e->grads_half ? st->half_dtype : ZT_DTYPE_FP32,
      .fp16_check = st->half_dtype == ZT_DTYPE_FP16 && !e->grads_half, .comm_dtype = e->comm_dtype,
      .pre_scale = ds->prescale_gradients ? (float)(1.0 / W) : (float)(1.0 / f),
      .post_scale = ds->prescale_gradients ? 1.0f : (float)(f / W), .poison = poison && !strcmp(poison, "1"),
      .param_nvme_path = nvme ? ds->offload_param_nvme_path : NULL, .aio = &ac,
      .max_in_cpu = (size_t)ds->offload_param_max_in_cpu, .buffer_count = ds->offload_param_buffer_count,
      .buffer_size = (size_t)ds->offload_param_buffer_size, .pin_memory = ds->offload_param_pin_memory,
      .rank = zt_comm_rank()};
  zt_zero3_init(&st->zero3, &st->zero, &zc, m->table, m->params, m->grads, m->nunits, m->unit_off, m->unit_off + 1);
  if (st->zero3.ps) {
    live_zero3 = &st->zero3;
    atexit(remove_param_swap_files);
  }
  m->param_hook = zero3_hook;
  m->param_hook_ctx = e;
  size_t largest = 0;
  for (int u = 0; u < m->nunits; u++)
    if (m->unit_off[u + 1] - m->unit_off[u] > largest) largest = m->unit_off[u + 1] - m->unit_off[u];
  const size_t res = zt_zero3_resident(&st->zero3);
  zt_log("> ZeRO stage 3: parameters resident per rank: %zu of %zu (partition %zu; persistent %zu elements in %d "
         "ranges of parameters under %zu elements), %.1f MiB; %d fetch units, the largest %zu elements; prefetch "
         "%zu, max live %zu, max reuse distance %zu elements%s\n", res, m->table->numel, st->part_hi - st->part_lo,
         st->zero3.persist_elems, st->zero3.npersist, zc.persistence, (double)res * zt_dtype_size(m->dt) / (1 << 20), m->nunits, largest,
         zc.prefetch_bucket, zc.max_live, zc.max_reuse,
         zc.poison ? " (ZT_ZERO3_POISON: released parameters become NaN)" : "");
  if (!m->be->host_visible)
    zt_log("> ZeRO stage 3 on %s: released parameters keep their device memory (the device pool of stage 3 lands "
           "with the GPU offload work)\n", m->be->name);
  if (!strcmp(ds->offload_param_device, "cpu"))
    zt_log("> offload_param cpu: the parameter partitions are in host memory (on the CPU path they always are)\n");
  size_t on_nvme = 0;
  for (int u = 0; nvme && u < m->nunits; u++) on_nvme += st->zero3.ps->len[u];
  if (nvme)
    zt_log("> offload_param nvme: %zu of this rank's %zu partition elements in %s (max_in_cpu %zu; %d buffers of "
           "%zu elements)\n", on_nvme, st->part_hi - st->part_lo, st->zero3.ps->dir, zc.max_in_cpu, zc.buffer_count,
           st->zero3.ps->buf_elems);
}

/* The swap files go at exit too when the run stops on an error (zt_fatal exits through exit()). */
static zt_opt_swapper *live_swapper;
static void remove_swap_files(void) {
  if (live_swapper) zt_opt_swapper_free(live_swapper);
  live_swapper = NULL;
}

/* offload_optimizer: "cpu" keeps the state where the CPU path has it already (host memory, the step on the
 * CPU); "nvme" moves the partition's state to swap files (runtime/zero/swap.h). */
static void offload_setup(zt_engine *e) {
  const zt_ds_config *ds = e->ds;
  if (!ds || !strcmp(ds->offload_optimizer_device, "none")) return;
  if (!strcmp(ds->offload_optimizer_device, "cpu")) {
    zt_log("> offload_optimizer cpu: the optimizer state and its step are in host memory (on the CPU path they "
           "always are)\n");
    if (ds->offload_optimizer_ratio != 1.0)
      zt_log("> offload_optimizer ratio %g: DeepSpeed keeps the other %g of the state on the accelerator; this run's "
             "whole state is in host memory (the run is on the CPU)\n", ds->offload_optimizer_ratio,
             1.0 - ds->offload_optimizer_ratio);
    return;
  }
  zt_train_state *st = &e->st;
  const int with_master = st->half_dtype != ZT_DTYPE_FP32;
  const int sets = ds->offload_optimizer_pipeline ? 2 : 1, states = with_master ? 3 : 2;
  zt_check(ds->offload_optimizer_buffer_count >= states * sets, "ds_config", "%s: "
           "zero_optimization.offload_optimizer.buffer_count %d is less than the %d swap buffers needed (%d states%s)",
           ds->path, ds->offload_optimizer_buffer_count, states * sets, states, sets > 1 ? " x 2 for pipelining" : "");
  const zt_aio_config ac = ds_aio_config(ds);
  st->swap = zt_malloc(sizeof *st->swap, "optimizer swapper");
  if (st->zero_stage == 3) zt_zero3_partition_in(&st->zero3); /* the initial masters come from the weights */
  const size_t n = st->part_hi - st->part_lo;
  zt_opt_swapper_init(st->swap, &ac, ds->offload_optimizer_nvme_path, st->zero_stage, zt_comm_rank(), st->part_lo, n,
                      (size_t)ds->zero_sub_group_size, with_master, (float *)e->model->params + st->part_lo,
                      ds->offload_optimizer_pipeline, ds->offload_optimizer_pin_memory);
  if (st->zero_stage == 3) zt_zero3_partition_out(&st->zero3, 0);
  live_swapper = st->swap;
  atexit(remove_swap_files);
  zt_log("> offload_optimizer nvme: %zu elements x %d states per rank in %s (%zu sub-groups of %zu)%s\n", n, states,
         st->swap->dir, st->swap->nsub, st->swap->sub, ds->offload_optimizer_pipeline ? ", pipelined" : "");
}


const zt_backend *zt_pick_backend(const char *config_why, int say_cpu) {
  const int ndev = zt_cuda_device_count();
  int local_size = 1;
  const int local = zt_comm_local_rank(&local_size);
  char why[240] = "";
  if (ndev == 0) snprintf(why, sizeof why, "no CUDA device");
  else if (local_size > ndev)
    snprintf(why, sizeof why, "%d processes on this node share %d GPU%s (one GPU per process)", local_size, ndev,
             ndev == 1 ? "" : "s");
  else if (config_why && config_why[0]) snprintf(why, sizeof why, "%s", config_why);
  double cpu = why[0] ? 1.0 : 0.0;
  if (zt_world_size() > 1) zt_allreduce_max_f64(zt_comm_world(), &cpu, 1);
  if (cpu > 0) {
    if (ndev > 0)
      zt_log("> compute: a CUDA device is present but this run uses the CPU: %s\n",
             why[0] ? why : "another rank cannot use its GPU");
    else if (say_cpu)
      zt_log("> compute: CPU\n");
    return zt_backend_cpu();
  }
  const zt_backend *be = zt_backend_cuda(local % ndev);
  if (zt_world_size() > 1) zt_comm_enable_nccl(); /* collectives and stage transfers on device buffers: NCCL */
  zt_log("> compute: %s%s\n", be->name,
         zt_world_size() > 1 ? " and one GPU per process on the others (collectives through NCCL)" : "");
  return be;
}

/* Where this run trains (zt_pick_backend), with the configurations the GPU path does not run yet as the reason to
 * stay on the CPU (docs/cuda.md). */
static const zt_backend *choose_backend(zt_engine *e) {
  const zt_args *a = e->args;
  const zt_ds_config *ds = e->ds;
  char why[200] = "";
  if (a->optimizer == ZT_OPTIMIZER_SGD && !(ds && ds->has_optimizer))
    snprintf(why, sizeof why, "--optimizer sgd (no GPU kernel yet)");
  else if (ds && ds->has_optimizer && !strcmp(ds->optimizer_type, "lamb"))
    snprintf(why, sizeof why, "the Lamb optimizer (no GPU kernel yet)");
  else if (ds && strcmp(ds->offload_optimizer_device, "none"))
    snprintf(why, sizeof why, "offload_optimizer %s (ZeRO-Offload on the GPU path is next)",
             ds->offload_optimizer_device);
  else if (ds && strcmp(ds->offload_param_device, "none"))
    snprintf(why, sizeof why, "offload_param %s (ZeRO-Infinity on the GPU path is next)", ds->offload_param_device);
  else if (a->ds_sequence_parallel_fpdt && a->ds_sequence_parallel_fpdt_offloading)
    snprintf(why, sizeof why, "--ds-sequence-parallel-fpdt-offloading (FPDT's host offload of the attention's chunks "
             "has no GPU path yet: issue 22)");
  else if (ds && ds->flops_profiler_enabled) snprintf(why, sizeof why, "the flops profiler");
  else if (ds && ds->ac_profile) snprintf(why, sizeof why, "activation_checkpointing.profile");
  return zt_pick_backend(why, 0);
}

/* --cpu-optimizer: Megatron-DeepSpeed then builds DeepSpeedCPUAdam, the optimizer DeepSpeed's ZeRO-Offload runs on
 * the CPU. Here the step runs on the CPU with the ds_config's offload_optimizer (cpu or nvme) or on a CPU run;
 * a run that keeps the optimizer on the GPU would not do what the flag asks, so it is refused naming the key. */
static void cpu_optimizer_check(const zt_engine *e) {
  const zt_args *a = e->args;
  const zt_ds_config *ds = e->ds;
  if (!a->cpu_optimizer) return;
  const char *adam = a->cpu_torch_adam ? "torch's AdamW" : "DeepSpeedCPUAdam";
  if (ds && strcmp(ds->offload_optimizer_device, "none") != 0)
    zt_log("> --cpu-optimizer (%s): the optimizer step runs on the CPU (zero_optimization.offload_optimizer.device "
           "%s in %s)\n", adam, ds->offload_optimizer_device, ds->path);
  else if (e->be->host_visible)
    zt_log("> --cpu-optimizer (%s): the optimizer step runs on the CPU (this run computes on the CPU)\n", adam);
  else
    zt_fatal("unsupported argument", "--cpu-optimizer: Megatron-DeepSpeed builds %s to run the optimizer on the CPU "
             "(DeepSpeed's ZeRO-Offload), but this run keeps it on the GPU; zerotron offloads it with "
             "zero_optimization.offload_optimizer {\"device\": \"cpu\"}: add that to %s, or drop --cpu-optimizer",
             adam, ds ? ds->path : "a ds_config (--deepspeed --deepspeed_config FILE)");
}

void zt_engine_init(zt_engine *e, const zt_args *a, const zt_tokenizer *tok, const zt_ds_config *ds,
                    const zt_model_kind *kind) {
  memset(e, 0, sizeof(*e));
  e->args = a;
  e->ds = ds;
  e->kind = kind;
  e->clip_grad = a->clip_grad;
  zt_train_state *st = &e->st;
  st->args = a;
  st->ds_config_path = ds ? ds->path : "";
  st->ds_config_text = ds ? ds->text : "";
  zt_tb_log_check(a, ds);
  e->tb = zt_tb_log_open(a);
  e->num_zeros = NAN;
  zt_progress_initialized();
  setup_groups(e);
  zt_rampup_init(&e->ramp, a, "--global-batch-size");
  e->cur_gbs = a->global_batch_size;
  e->cur_nmb = a->num_microbatches;
  if (e->ramp.on)
    zt_log("will use batch size rampup starting from global batch size %lld to global batch size %lld with batch "
           "size increments %lld over %lld samples.\n", (long long)e->ramp.start, (long long)e->ramp.global,
           (long long)e->ramp.increment, (long long)e->ramp.samples);
  zt_engine_check_curriculum(a, ds, kind); /* before the data and the model are built */
  zt_engine_check_data_sampling(a, ds, kind);
  check_encoder_decoder(ds, kind);
  e->train_T = e->actual_T = a->seq_length;
  random_ltd_setup(e, kind);
  e->curriculum = ds && ds->curriculum.enabled;
  if (e->curriculum) {
    const zt_curriculum_config *cl = &ds->curriculum;
    zt_curriculum_init(&e->curr, cl);
    if (cl->type == ZT_CURRICULUM_FIXED_DISCRETE)
      zt_log("> curriculum_learning: seqlen, fixed_discrete over %d difficulties, min_difficulty %lld, "
             "max_difficulty %lld (evaluation at --seq-length %d)\n", cl->n_difficulty, (long long)cl->min_difficulty,
             (long long)cl->max_difficulty, a->seq_length);
    else
      zt_log("> curriculum_learning: seqlen, %s from %lld to %lld tokens over %lld steps in multiples of %lld, root "
             "degree %lld (evaluation at --seq-length %d)\n", zt_curriculum_type_name(cl->type),
             (long long)cl->min_difficulty, (long long)cl->max_difficulty, (long long)cl->total_curriculum_step,
             (long long)cl->difficulty_step, (long long)cl->root_degree, a->seq_length);
  }
  zt_schedule_setup(e);
  zt_check(zt_group_size(e->dp_group) == a->data_parallel_size * e->st.usp_size, "internal error",
           "data-parallel group of %d ranks, expected %d x %d sequence-parallel", zt_group_size(e->dp_group),
           a->data_parallel_size, e->st.usp_size);
  const double t_data = zt_now();
  build_data(e, tok);
  e->sampler_on = ds && ds->data_sampling.enabled;
  data_sampler_setup(e);
  pretraining_sampler_setup(e);
  /* train_T follows the sampler (seqlen_truncate, seqlen_reshape, --seq-length without them) or the micro batches
   * (longest_cut); the log line shows it, as Megatron-DeepSpeed's shows curriculum_seqlen with the flag */
  if (e->sampler_on) e->curriculum = 1;
  e->longest_cut = e->sampler_on && kind->longest_cut;
  e->reshape = e->sampler_on && kind->seqlen_curriculum && zt_data_sampling_reshape(&ds->data_sampling);
  zt_check(!e->reshape || e->data->load_ids_reshape, "ds_config", "%s: the seqlen_reshape metric: the %s data "
           "provider cannot re-cut its samples (Megatron-DeepSpeed's pretrain_gpt.py does)", ds ? ds->path : "",
           e->data->kind);
  e->setup_seconds[1] = zt_now() - t_data;
  zt_print_datetime("after dataloaders are built");
  const double t_model = zt_now();
  mixed_precision_setup(e);
  e->zcfg = ds;
  if (!ds && a->use_distributed_optimizer) { /* Megatron's DistributedOptimizer: ZeRO stage 1 at DeepSpeed's defaults */
    zt_ds_config_load_string(&e->zero_default, "{\"zero_optimization\": {\"stage\": 1}}",
                             "--use-distributed-optimizer");
    e->zcfg = &e->zero_default;
  }
  st->zero_stage = e->zcfg ? e->zcfg->zero_stage : 0;
  /* DeepSpeed's expert parallelism holds each rank's experts only (ZeRO 1/2 partitioning them over the ranks holding
   * them); ZeRO-3 (which DeepSpeed refuses with MoE) and the NVMe optimizer swap keep every expert, partitioned with
   * the other parameters over the data-parallel group (docs/moe.md) */
  const int nvme_optim = e->zcfg && !strcmp(e->zcfg->offload_optimizer_device, "nvme");
  e->moe.local_experts = e->moe.ep_size > 1 && st->zero_stage < 3 && !nvme_optim;
  st->local_experts = e->moe.local_experts;
  st->ep_dp_rank = e->ep_dp_group ? zt_group_rank(e->ep_dp_group) : 0;
  st->ep_dp_size = e->ep_dp_group ? zt_group_size(e->ep_dp_group) : 1;
  e->be = choose_backend(e);
  cpu_optimizer_check(e);
  const int gpu = !e->be->host_visible;
  /* the zero-bubble schedule's weight passes: the model runs on the store's copy of the backend */
  if (a->enable_zbh1_pipeline && st->pp_size > 1) e->wgrad = zt_wgrad_store_create(e->be);
  zt_model_setup s = {
      .backend = e->wgrad ? zt_wgrad_store_backend(e->wgrad) : e->be, .dtype = gpu ? st->half_dtype : ZT_DTYPE_FP32,
      .micro_batch = a->micro_batch_size,
      .seq_length = a->seq_length, .recompute = a->recompute_granularity != ZT_RECOMPUTE_FULL ? 0
                    : a->recompute_method_uniform           ? ZT_RECOMPUTE_ALL_LAYERS
                                                            : a->recompute_num_layers,
      .recompute_core_attention = a->recompute_granularity == ZT_RECOMPUTE_SELECTIVE,
      .master_weights = st->half_dtype != ZT_DTYPE_FP32,
      .zero_partitions = st->zero_stage > 0 ? a->data_parallel_size * a->ds_sequence_parallel_size : 1,
      .optim_offloaded = ds && !strcmp(ds->offload_optimizer_device, "nvme"), .tp_group = e->tp_group,
      .tp_size = a->tensor_model_parallel_size, .tp_rank = st->tp_rank, .sequence_parallel = a->sequence_parallel,
      .pp_group = e->pp_group, .pp_size = st->pp_size, .pp_rank = st->pp_rank, .vpp = e->vpp,
      .pp_buffers = e->pp_buffers, .pp_split = a->pipeline_model_parallel_split_rank, .stage_first = e->stage_first,
      .usp_group = e->usp_group,
      .usp_size = st->usp_size, .usp_rank = st->usp_rank,
      .fpdt_chunk = a->ds_sequence_parallel_fpdt ? a->ds_sequence_parallel_fpdt_chunk_size : 0};
  activation_checkpointing_setup(e, &s);
  if (s.recompute && s.recompute != ZT_RECOMPUTE_ALL_LAYERS)
    zt_log("> --recompute-method block: the first %d layer%s of each pipeline stage%s recomputed in backward; "
           "the other layers keep their activations\n", s.recompute, s.recompute > 1 ? "s" : "",
           e->vpp > 1 ? "'s model chunks are" : s.recompute > 1 ? " are" : " is");
  e->kd = (zt_kd_config){.temp = (float)a->kd_temp, .beta = (float)a->kd_beta_ce, .seq_length = a->seq_length,
                         .name = a->mos ? "mos loss" : "kd loss"};
  zt_log("building %s model ...\n", kind->name);
  ds_pipe_partition_log(e);
  sparse_setup(e);
  const zt_model_args margs = model_args(e);
  e->model = st->model = kind->build_model(&margs, &s);
  st->master = e->model->master;
  if (ds && ds->ac_profile) {
    e->model->ckpt_profile = checkpoint_profile_line;
    e->model->ckpt_profile_ctx = e;
  }
  expert_setup_log(e);
  zero_setup(e);
  zero3_setup(e);
  init_weights(e);
  if (st->dp_rank == 0) { /* Megatron: every rank of data-parallel rank 0 prints its own count */
    printf(" > number of parameters on (tensor, pipeline) model parallel rank (%d, %d): %zu\n", st->tp_rank,
           st->pp_rank, zt_model_num_params(e->model));
    fflush(stdout);
  }

  zt_opt_config oc = {.kind = a->optimizer == ZT_OPTIMIZER_SGD ? ZT_OPT_SGD : ZT_OPT_ADAM,
                      .beta1 = a->adam_beta1, .beta2 = a->adam_beta2, .eps = a->adam_eps, .adam_w_mode = 1,
                      .momentum = a->sgd_momentum, .weight_decay = a->weight_decay};
  if (ds && ds->has_optimizer) ds_optimizer(ds, &oc);
  if (st->zero_x.dp) /* the experts partitioned apart (this rank's share of them may be empty) */
    zt_optimizer_init_ranges(&st->opt, &oc, e->model->table, e->model->optim_state, st->part_lo, st->part_hi,
                             st->xpart_lo, st->xpart_hi, st->xpart_at);
  else if (st->zero_stage > 0)
    zt_optimizer_init_range(&st->opt, &oc, e->model->table, e->model->optim_state, st->part_lo, st->part_hi);
  else
    zt_optimizer_init(&st->opt, &oc, e->model->table, e->model->optim_state);
  zt_optimizer_set_backend(&st->opt, e->be);
  offload_setup(e);
  e->beta_cfg[0] = ds && ds->has_optimizer ? ds->beta1.value : a->adam_beta1;
  e->beta_cfg[1] = ds && ds->has_optimizer ? ds->beta2.value : a->adam_beta2;

  /* Megatron's scheduler works in samples: iteration counts are multiplied by the global batch */
  const int64_t gbs = a->global_batch_size;
  int64_t decay = a->lr_decay_samples >= 0 ? a->lr_decay_samples
                  : a->lr_decay_iters >= 0 ? a->lr_decay_iters * gbs
                  : a->train_samples >= 0 ? a->train_samples : a->train_iters * gbs;
  int64_t warmup = a->lr_warmup_fraction >= 0 ? (int64_t)(a->lr_warmup_fraction * decay)
                   : a->lr_warmup_samples > 0 ? a->lr_warmup_samples : a->lr_warmup_iters * gbs;
  zt_check(decay > 0 && warmup <= decay, "learning-rate schedule",
           "warmup of %lld samples exceeds the decay length of %lld samples", (long long)warmup, (long long)decay);
  st->sched = (zt_lr_schedule){.max_lr = a->lr, .min_lr = a->min_lr, .warmup_steps = warmup, .decay_steps = decay,
                               .style = (zt_decay_style)a->lr_decay_style, .num_steps = 0,
                               .has_warmup_tokens = a->lr_warmup_tokens >= 0, .warmup_tokens = a->lr_warmup_tokens,
                               .has_decay_tokens = a->lr_decay_tokens >= 0, .decay_tokens = a->lr_decay_tokens,
                               .start_wd = a->start_weight_decay, .end_wd = a->end_weight_decay,
                               .wd_style = (zt_wd_style)a->weight_decay_incr_style,
                               /* Megatron's wd_incr_steps: train_iters x global batch, or train_samples */
                               .wd_incr_steps = a->train_samples >= 0 ? a->train_samples : a->train_iters * gbs};
  /* the constant style keeps the weight decay the optimizer applies: --weight-decay, or the ds_config optimizer
   * block's (docs/ds_config.md) */
  if (a->weight_decay_incr_style == ZT_WD_CONSTANT && ds && ds->has_optimizer)
    st->sched.start_wd = st->sched.end_wd = ds->weight_decay.value;
  /* Megatron-DeepSpeed counts a token decay from the token warmup's end; without --lr-warmup-tokens that end is the
   * tokens consumed when the sample warmup ends exactly (get_lr's side effect). A linear or cosine decay that never
   * gets it fails there with a TypeError (None in a subtraction): refused here instead. */
  if (a->lr_decay_tokens >= 0 && a->lr_warmup_tokens < 0 && !(ds && ds->has_scheduler) &&
      (a->lr_decay_style == ZT_LR_DECAY_LINEAR || a->lr_decay_style == ZT_LR_DECAY_COSINE) &&
      (warmup <= 0 || !zt_rampup_reaches(&e->ramp, warmup))) {
    char why[96] = "never ends";
    if (warmup > 0) snprintf(why, sizeof why, "does not end on an iteration (global batch size %lld)", (long long)gbs);
    zt_fatal("inconsistent arguments", "--lr-decay-tokens %lld without --lr-warmup-tokens: the %s decay counts "
             "tokens from the end of the warmup, and a warmup of %lld samples %s; give --lr-warmup-tokens (0 for "
             "none) or a warmup of whole iterations (Megatron-DeepSpeed fails here with a TypeError in get_lr)",
             (long long)a->lr_decay_tokens, a->lr_decay_style == ZT_LR_DECAY_LINEAR ? "linear" : "cosine",
             (long long)warmup, why);
  }

  if (ds) ds_engine_init(e, ds);
  weight_decay_setup(e);

  zt_flops_model fm = {.num_layers = a->num_layers, .hidden_size = a->hidden_size,
                       .num_heads = a->num_attention_heads, .ffn_hidden_size = a->ffn_hidden_size,
                       .padded_vocab_size = a->padded_vocab_size, .seq_length = a->seq_length,
                       .recompute_full = a->recompute_granularity == ZT_RECOMPUTE_FULL,
                       /* Megatron-DeepSpeed's formula adds the attention's MACs under selective recompute */
                       .recompute_selective = a->recompute_granularity == ZT_RECOMPUTE_SELECTIVE,
                       .topk = a->topk, /* Megatron-DeepSpeed multiplies the MLP by --topk in every layer */
                       .swiglu = a->swiglu, /* its 3 MLP matrices */
                       .kv_heads = a->num_key_value_heads}; /* and GQA's 2 // gqa */
  e->flops_per_iteration = zt_iteration_flops(&fm, gbs);
  e->flops_model = fm;
  e->setup_seconds[0] = zt_now() - t_model;
  zt_print_datetime("after model, optimizer, and learning rate scheduler are built");
}

static void profile_write(const zt_engine *e);

void zt_engine_free(zt_engine *e) {
  zt_train_state *st = &e->st;
  if (zt_trace_active()) profile_write(e); /* the run stopped inside --profile_steps */
  if (e->zcfg == &e->zero_default) zt_ds_config_free(&e->zero_default);
  free(e->ltd_layers);
  e->ltd_layers = NULL;
  if (st->swap) {
    zt_log("> offload_optimizer nvme: %.1f GiB read, %.1f GiB written in %.2f s of optimizer steps; swap files "
           "removed\n", st->swap->bytes_read / (1 << 30), st->swap->bytes_written / (1 << 30), st->swap->seconds);
    zt_opt_swapper_free(st->swap);
    free(st->swap);
    st->swap = NULL;
    live_swapper = NULL;
  }
  if (st->zero_stage == 3) {
    const zt_zero3 *s = &st->zero3;
    zt_log("> ZeRO stage 3: %zu parameter fetches (%zu broadcasts, %.1f MiB received by this rank), %zu gradient "
           "reduces (%.1f MiB), at most %zu parameter elements gathered at once\n", s->gathers, s->broadcasts,
           (double)s->gathered_elems * zt_dtype_size(e->model->dt) / (1 << 20), s->reduces,
           (double)s->reduced_elems * 4 / (1 << 20), s->peak_live);
    zt_zero3_free(&st->zero3);
  }
  if (st->zero_stage > 0) zt_zero_free(&st->zero);
  if (st->zero_x.dp) zt_zero_free(&st->zero_x);
  zt_optimizer_free(&st->opt);
  zt_model_free(e->model);
  zt_wgrad_store_destroy(e->wgrad);
  e->wgrad = NULL;
  if (e->teacher) zt_model_free(e->teacher);
  e->teacher = NULL;
  e->model = st->model = NULL;
  zt_attn_layout_free(&e->sparse);
  zt_curriculum_batch_free(&e->curr_buf);
  zt_curriculum_batch_free(&e->reshape_buf);
  if (e->sampler_on && zt_comm_rank() == 0) zt_data_sampler_free(&e->sampler);
  free(e->sampler_msg);
  for (int k = 0; k < 3; k++) zt_pretraining_sampler_free(&e->psampler[k]);
  free(e->pipe_steps);
  free(e->stage_first);
  e->stage_first = NULL;
  zt_data_free(e->data);
  zt_monitor_close(e->monitor);
  zt_tb_log_close(e->tb);
  e->tb = NULL;
  if (e->fprof) zt_flops_profiler_free(e->fprof); /* the run ended before profile_step */
}

/* pretrain_bert's data_post_process: the seqlen_truncate difficulty, else the longest sample of the micro batch (its
 * tokens that are not padding) over the data-parallel group, rounded up to a multiple of 8; at most --seq-length. */
static int longest_cut_length(const zt_engine *e) {
  const zt_batch *b = &e->batch;
  const zt_data_sampling_config *d = &e->ds->data_sampling;
  int len = 0;
  if (zt_data_sampling_seqlen_metric(d) >= 0 && !zt_data_sampling_reshape(d)) {
    len = e->sampler_T;
  } else {
    for (int r = 0; r < b->B; r++) {
      int n = 0;
      for (int t = 0; t < b->T; t++) n += !b->padding[(size_t)r * b->T + t];
      if (n > len) len = n;
    }
    if (zt_group_size(e->dp_group) > 1) {
      double v = len;
      zt_allreduce_max_f64(e->dp_group, &v, 1);
      len = (int)v;
    }
  }
  len = (len + 7) / 8 * 8;
  return len >= 1 && len < e->args->seq_length ? len : e->args->seq_length;
}

void zt_engine_load_micro_batch(zt_engine *e, int split, uint64_t first, int mb) {
  const double t0 = zt_now();
  if (split == 0 && e->sampler_on)
    e->data->load_ids(e->data, 0, zt_data_sampler_slice(e->sampler_msg + 3, mb, e->st.dp_rank,
                                                        e->args->micro_batch_size, e->args->data_parallel_size),
                      &e->batch);
  else if (e->psampler_on) {
    static const char *const names[3] = {"training", "validation", "test"};
    const zt_args *a = e->args;
    zt_pretraining_sampler *ps = &e->psampler[split];
    const int64_t consumed = (int64_t)first - (int64_t)e->st.dp_rank * a->micro_batch_size;
    if (!ps->ids)
      zt_pretraining_sampler_init(ps, a->dataloader_type == 1, a->data_sharding, names[split],
                                  e->data->split_size(e->data, split), a->micro_batch_size, a->data_parallel_size,
                                  e->st.dp_rank, consumed);
    e->data->load_ids(e->data, split, zt_pretraining_sampler_ids(ps, consumed), &e->batch);
  } else
    zt_data_load(e->data, split, first, &e->batch);
  if (split == 0 && e->longest_cut) e->train_T = longest_cut_length(e);
  if (split == 0 && e->train_T < e->batch.T) { /* Megatron-DeepSpeed's GPTModel.forward / get_batch_pipe */
    const zt_batch full = e->batch;
    zt_curriculum_truncate(&full, e->train_T, &e->curr_buf, &e->batch);
  }
  if (split == 0) e->t_batch += zt_now() - t0; /* Megatron's batch-generator timer */
  if (split == 0) zt_engine_trace_span(e, "batch", t0);
}

int zt_engine_load_reshaped(zt_engine *e, int mb) {
  const double t0 = zt_now();
  const int rows = e->data->load_ids_reshape(e->data, 0, zt_data_sampler_slice(e->sampler_msg + 3, mb, e->st.dp_rank,
                                                                                e->args->micro_batch_size,
                                                                                e->args->data_parallel_size),
                                             e->train_T, &e->batch);
  e->t_batch += zt_now() - t0;
  return rows;
}

void zt_engine_check_finite_loss(const zt_engine *e, float loss, int micro, const char *what) {
  if (isfinite(loss)) return;
  zt_fatal("non-finite loss", "%s is %s at iteration %lld (micro batch %d); the run stops: lower --lr or "
           "check --init-method-std", what, isnan(loss) ? "nan" : "inf", (long long)e->st.iteration + 1, micro);
}
/* The learning rate the next optimizer step uses. */
static double current_lr(const zt_engine *e) {
  return e->st.use_ds_sched ? zt_ds_sched_lr(&e->st.ds_sched) : zt_lr_get(&e->st.sched);
}

/* DeepSpeed's gradient averaging over the data-parallel group (engine.allreduce_bucket): with
 * prescale_gradients the gradients are divided by the world size before the sum; otherwise they are
 * divided by gradient_predivide_factor before it and multiplied by factor / world after it. With one
 * data-parallel rank the sum is the identity and only the scaling remains. */
static void scale_floats(zt_engine *e, float *x, float f, size_t n) { e->be->scale_f32(x, f, n); }

/* The data-parallel sum in the communication type (fp16/bf16 all-reduce: operands and result rounded
 * to it, as a half-precision NCCL reduction delivers them). */
static void allreduce_grads(zt_engine *e, float *g, size_t n) {
  if (e->comm_dtype != ZT_DTYPE_FP32) e->be->round_f32(g, g, n, e->comm_dtype);
  if (!e->st.local_experts) {
    zt_allreduce_sum_f32(e->dp_group, g, n);
  } else { /* the dense parameters over the data-parallel group, this rank's experts (laid out last) over the ranks
            * holding them */
    const size_t x0 = e->model->table->expert_lo;
    zt_allreduce_sum_f32(e->dp_group, g, x0);
    if (zt_group_size(e->ep_dp_group) > 1) zt_allreduce_sum_f32(e->ep_dp_group, g + x0, n - x0);
  }
  if (e->comm_dtype != ZT_DTYPE_FP32) e->be->round_f32(g, g, n, e->comm_dtype);
}

static void reduce_gradients(zt_engine *e) {
  /* W divides; the sum goes over dp_group, which under DeepSpeed-Ulysses also holds the sequence-parallel ranks: their
   * partial gradients add up, and the division stays by the data-parallel size (DeepSpeed's dp_world_size / sp) */
  const int W = e->args->data_parallel_size;
  float *g = e->model->grads;
  const size_t n = e->model->table->numel;
  if (!e->ds) { /* Megatron: divide by the data-parallel size, then sum */
    if (zt_group_size(e->dp_group) > 1) {
      scale_floats(e, g, 1.0f / (float)W, n);
      allreduce_grads(e, g, n);
    }
    return;
  }
  const double f = e->ds->gradient_predivide_factor.value;
  if (e->ds->prescale_gradients) {
    scale_floats(e, g, (float)(1.0 / W), n);
    if (zt_group_size(e->dp_group) > 1) allreduce_grads(e, g, n);
    return;
  }
  if (f != 1.0) scale_floats(e, g, (float)(1.0 / f), n);
  if (zt_group_size(e->dp_group) > 1) allreduce_grads(e, g, n);
  if (f != W) scale_floats(e, g, (float)(f / W), n);
}

/* The means of the named losses over `count` micro batches, averaged over the data-parallel group in one
 * all-reduce (Megatron's average_losses_across_data_parallel_group of the loss dict); with one loss the total is
 * that loss, else it joins the same all-reduce. */
static void dp_mean_losses(const zt_engine *e, zt_loss_sums *l, int count) {
  const zt_group *g = e->loss_group ? e->loss_group : e->dp_group;
  const int W = zt_group_size(g), n = l->n, k = n > 1 ? n + 1 : n;
  double v[ZT_MAX_LOSSES + 1];
  for (int i = 0; i < n; i++) v[i] = count ? l->value[i] / count : 0.0;
  if (n > 1) v[n] = count ? l->total / count : 0.0;
  if (W > 1 && count) {
    zt_allreduce_sum_f64(g, v, (size_t)k);
    for (int i = 0; i < k; i++) v[i] /= W;
  }
  for (int i = 0; i < n; i++) l->value[i] = (float)v[i];
  l->total = n > 1 ? (float)v[n] : n == 1 ? l->value[0] : 0.0;
}

/* DeepSpeed's per-step output: monitor events, the step/lr/mom line and the timers. */
static void ds_after_step(zt_engine *e, double train_loss, int64_t samples_before) {
  const zt_ds_config *ds = e->ds;
  const double lr = current_lr(e);
  const double ms[5] = {1e3 * e->t_fwd, 1e3 * (e->t_bwd_inner + e->t_bwd_allreduce), 1e3 * e->t_bwd_inner,
                        1e3 * e->t_bwd_allreduce, 1e3 * e->t_step};
  if (e->monitor) {
    zt_monitor_write(e->monitor, "Train/Samples/train_loss", train_loss, samples_before);
    zt_monitor_write(e->monitor, "Train/Samples/lr", lr, e->st.consumed_samples);
    if (e->st.half_dtype == ZT_DTYPE_FP16)
      zt_monitor_write(e->monitor, "Train/Samples/loss_scale", e->st.scaler.cur_scale, e->st.consumed_samples);
    if (e->wall_clock) {
      static const char *const events[5] = {
          "Train/Samples/elapsed_time_ms_forward", "Train/Samples/elapsed_time_ms_backward",
          "Train/Samples/elapsed_time_ms_backward_inner", "Train/Samples/elapsed_time_ms_backward_allreduce",
          "Train/Samples/elapsed_time_ms_step"};
      for (int i = 0; i < 5; i++) zt_monitor_write(e->monitor, events[i], ms[i], e->st.consumed_samples);
    }
    zt_monitor_flush(e->monitor);
  }
  const int64_t every = ds->steps_per_print.given ? (int64_t)ds->steps_per_print.value : 0;
  const int report = every > 0 && e->st.iteration % every == 0;
  if (report) { /* the betas as the config gives them (or as OneCycle sets them), not as float32 */
    double mom[1][2] = {{e->beta_cfg[0], e->beta_cfg[1]}};
    if (e->st.use_ds_sched) zt_ds_sched_mom(&e->st.ds_sched, &mom[0][0], &mom[0][1]);
    zt_ds_report_progress(e->st.iteration, e->st.skipped_iters, &lr, (const double(*)[2])mom, 1);
  }
  if (e->wall_clock && (report || every == 0)) {
    static const char *const names[5] = {"fwd", "bwd", "bwd_inner", "bwd_allreduce", "step"};
    zt_ds_timers_log(names, ms, 5);
    e->t_fwd = e->t_bwd_inner = e->t_bwd_allreduce = e->t_step = 0;
  }
  /* DeepSpeed's PipelineEngine.train_batch (pretrain_gpt with pipeline stages builds GPTModelPipe under --deepspeed):
   * on global rank 0 every steps_per_print batches, the mean loss of the batch (micro batches and data-parallel
   * ranks), GPTModelPipe's additional losses with MoE layers, and the batch time over those batches */
  if (report && zt_args_gpt_model_pipe(e->args) && zt_comm_rank() == 0) {
    const double iter_time = e->pipe_batch_time / (double)every;
    char extra[160] = "";
    const zt_loss_sums *l = &e->last_losses;
    if (l->n > 1 && !strcmp(l->name[0], "lm loss") && !strcmp(l->name[1], "moe loss"))
      snprintf(extra, sizeof extra, "lm loss: %.4f moe loss: %.4f ", l->value[0], l->value[1]);
    printf("steps: %lld loss: %.4f %siter time (s): %.3f samples/sec: %.3f\n", (long long)e->st.iteration, train_loss,
           extra, iter_time, (double)e->args->global_batch_size / iter_time);
    fflush(stdout);
  }
  if (report || every == 0) e->pipe_batch_time = 0;
}


/* ZeRO: DeepSpeed's averaging (prescale_gradients: 1/W before the sum; otherwise 1/predivide before and
 * predivide/W after) into this rank's partition, in the communication type. */
static void zero_reduce_gradients(zt_engine *e) {
  zt_train_state *st = &e->st;
  const int W = e->args->data_parallel_size;
  const double f = e->zcfg->gradient_predivide_factor.value;
  /* Megatron's distributed optimizer (no ds_config): divide by the data-parallel size, then sum, as its DDP */
  const int prescale = e->zcfg->prescale_gradients || !e->ds;
  const float pre = prescale ? (float)(1.0 / W) : (float)(1.0 / f);
  const float post = prescale ? 1.0f : (float)(f / W);
  float *g = e->model->grads;
  const int G = zt_group_size(e->dp_group); /* W, and DeepSpeed-Ulysses' sequence-parallel ranks */
  if (e->comm_dtype != ZT_DTYPE_FP32 && G > 1) e->be->round_f32(g, g, e->model->flat, e->comm_dtype);
  zt_zero_reduce_gradients(&st->zero, g, pre, post);
  /* the experts over the ranks holding them, divided by the data-parallel size (DeepSpeed's
   * _reduce_expert_gradients) */
  if (st->zero_x.dp) zt_zero_reduce_gradients(&st->zero_x, g + st->zero_x.base, pre, post);
  if (e->comm_dtype != ZT_DTYPE_FP32 && G > 1) {
    e->be->round_f32(g + st->part_lo, g + st->part_lo, st->part_hi - st->part_lo, e->comm_dtype);
    e->be->round_f32(g + st->xpart_lo, g + st->xpart_lo, st->xpart_hi - st->xpart_lo, e->comm_dtype);
  }
}

/* This rank's partition of the gradients (element part_lo first): stage 3 accumulates it apart. */
static float *partition_grads(zt_engine *e) {
  return e->st.zero_stage == 3 ? e->st.zero3.acc : e->model->grads + e->st.part_lo;
}

/* ZeRO: the global gradient norm from the partitions (tensor-parallel replicas counted once; with pipeline
 * stages summed over them, the last stage's copy of the tied embeddings left out). */
static double zero_grad_norm(zt_engine *e) {
  zt_train_state *st = &e->st;
  int copy = -1;
  for (int i = 0; i < e->model->table->count; i++)
    if (e->model->table->params[i].shared) copy = i;
  double s = zt_zero_partition_sumsq(&st->zero, e->model->table, partition_grads(e), st->tp_rank == 0, copy);
  if (st->zero_x.dp) /* each expert element in one partition of one rank of the data-parallel group */
    s += zt_zero_partition_sumsq(&st->zero_x, e->model->table, e->model->grads + st->xpart_lo, st->tp_rank == 0, copy);
  zt_allreduce_sum_f64(e->dp_group, &s, 1);
  if (e->tp_group) zt_allreduce_sum_f64(e->tp_group, &s, 1);
  if (e->pp_group) zt_allreduce_sum_f64(e->pp_group, &s, 1);
  return sqrt(s);
}

/* The loss scaler's lines, as DeepSpeed prints them (rank 0), and DeepSpeed's stop at the minimum
 * scale. Megatron's scaler prints nothing (the log line shows the scale and the skipped iterations). */
static void log_scaler_event(const zt_engine *e) {
  const zt_loss_scaler *s = &e->st.scaler;
  char prev[40], cur[40];
  if (s->event == ZT_SCALE_AT_MIN)
    zt_fatal("loss scale", "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run. "
             "(iteration %lld, loss scale %g = min_loss_scale)", (long long)e->st.iteration + 1, s->cur_scale);
  if (s->kind == ZT_SCALER_DS_DYNAMIC && s->event == ZT_SCALE_REDUCED)
    zt_ds_logger_info("loss_scaler.py:update_scale", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss "
                      "scale: %lld, reducing to %lld", (long long)s->prev_scale, (long long)s->cur_scale);
  if (s->kind == ZT_SCALER_DS_DYNAMIC && s->event == ZT_SCALE_HYSTERESIS)
    zt_ds_logger_info("loss_scaler.py:update_scale", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss "
                      "scale: %lld, but hysteresis is %d. Reducing hysteresis to %d", (long long)s->prev_scale,
                      s->cur_hysteresis + 1, s->cur_hysteresis);
  if (s->kind == ZT_SCALER_DS_FUSED && s->event == ZT_SCALE_REDUCED) {
    /* Python prints the initial 2**power as an int, every later (halved or doubled) value as a float */
    if (s->prev_is_int) snprintf(prev, sizeof prev, "%lld", (long long)s->prev_scale);
    else zt_py_float(prev, sizeof prev, s->prev_scale, 0);
    zt_py_float(cur, sizeof cur, s->cur_scale, 0);
    zt_ds_logger_info("fused_optimizer.py:_update_scale", "\nGrad overflow on iteration %lld",
                      (long long)s->cur_iter - 1);
    zt_ds_logger_info("fused_optimizer.py:_update_scale", "Reducing dynamic loss scale from %s to %s", prev, cur);
    zt_ds_log_dist("Overflow detected. Skipping step. Attempted loss scale: %s, reducing to %s", prev, cur);
  }
  if (s->kind == ZT_SCALER_DS_DYNAMIC && s->consecutive_hysteresis &&
      (s->event == ZT_SCALE_KEPT || s->event == ZT_SCALE_GREW))
    zt_ds_logger_info("loss_scaler.py:update_scale", "Consecutive hysteresis is enabled. Restoring hysteresis to %d",
                      s->delayed_shift);
  if (s->kind == ZT_SCALER_DS_FUSED && s->event == ZT_SCALE_GREW) {
    if (s->prev_is_int) snprintf(prev, sizeof prev, "%lld", (long long)s->prev_scale);
    else zt_py_float(prev, sizeof prev, s->prev_scale, 0);
    zt_py_float(cur, sizeof cur, s->cur_scale, 0);
    zt_ds_logger_info("fused_optimizer.py:_update_scale", "No Grad overflow for %lld iterations",
                      (long long)s->scale_window);
    zt_ds_logger_info("fused_optimizer.py:_update_scale", "Increasing dynamic loss scale from %s to %s", prev, cur);
  }
}

/* After a micro batch's backward: gradients stored in the half type are rounded to it (a value beyond its range
 * becomes infinite); an fp16 model's fp32-accumulated gradients are checked against the fp16 range. Returns 1
 * on an fp16 overflow. */

/* After a micro batch's backward: gradients stored in the half type are rounded to it (a value beyond its range
 * becomes infinite); an fp16 model's fp32-accumulated gradients are checked against the fp16 range. Returns 1
 * on an fp16 overflow. */
int zt_engine_half_grads_after_backward(zt_engine *e) {
  if (e->st.zero_stage == 3) { /* done unit by unit as the gradients are reduced (zt_zero3_grad_ready) */
    zt_zero3_flush_grads(&e->st.zero3);
    return 0;
  }
  const size_t n = e->model->table->numel;
  float *g = e->model->grads;
  if (e->grads_half) return e->be->round_f32(g, g, n, e->st.half_dtype) > 0;
  if (e->st.half_dtype == ZT_DTYPE_FP16) return e->be->count_nonrepresentable(g, n, ZT_DTYPE_FP16) > 0;
  return 0;
}

/* --rampup-batch-size: the global batch and micro batches of the step that starts now (Megatron's
 * update_num_microbatches(consumed_train_samples) with its consistency check, which a checkpoint of another ramp
 * can fail); without a ramp they never change. */
static void update_batch(zt_engine *e) {
  if (!e->ramp.on) return;
  const int64_t gbs = zt_rampup_batch(&e->ramp, e->st.consumed_samples);
  zt_check(gbs % e->ramp.per_step == 0, "inconsistent arguments", "--rampup-batch-size: current global batch size "
           "(%lld, after %lld consumed samples) is not divisible by micro-batch-size (%d) times data parallel size "
           "(%d) (a checkpoint of another ramp-up?)", (long long)gbs, (long long)e->st.consumed_samples,
           e->args->micro_batch_size, e->args->data_parallel_size);
  e->cur_gbs = gbs;
  e->cur_nmb = (int)(gbs / e->ramp.per_step);
}

/* --profile: this run's step counts from 1 (Megatron-DeepSpeed's on_step_begin); the chosen ranks trace the range */
static void profile_step_begin(zt_engine *e) {
  const zt_args *a = e->args;
  e->profile_step++;
  if (!a->profile || e->profile_step != a->profile_start) return;
  e->profile_me = a->profile_ranks.n == 0;
  for (int i = 0; i < a->profile_ranks.n; i++) e->profile_me |= atoi(a->profile_ranks.v[i]) == zt_rank();
  if (e->profile_me) zt_trace_begin(a->profile == 2);
}

/* Writes the trace where PyTorch's tensorboard_trace_handler would: {dir}/{host}_{pid}.{time in ns}.pt.trace.json.gz */
static void profile_write(const zt_engine *e) {
  const zt_args *a = e->args;
  char host[128] = "host", path[4600];
  gethostname(host, sizeof host - 1);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  zt_monitor_mkdirs(a->tensorboard_dir, "profile");
  snprintf(path, sizeof path, "%s/%s_%d.%lld.pt.trace.json.gz", a->tensorboard_dir, host, (int)getpid(),
           (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
  const size_t n = zt_trace_write(path, zt_rank());
  printf(" > rank %d: the profile of steps %d-%d (%zu events) is in %s%s\n", zt_rank(), a->profile_start,
         e->profile_step, n, path, e->profile_step < a->profile_end ? " (the run ended before the last step asked)"
                                                                    : "");
  fflush(stdout);
}

static void profile_step_end(zt_engine *e, double t0) {
  if (!zt_trace_active()) return;
  if (e->be->synchronize) e->be->synchronize();
  char name[48];
  snprintf(name, sizeof name, "ProfilerStep#%d", e->profile_step);
  zt_trace_span(name, t0, zt_now());
  if (e->profile_step == e->args->profile_end) profile_write(e);
}

/* A traced span (--profile): from t0 to now, the device's queue drained first so that the span holds its work. */
void zt_engine_trace_span(const zt_engine *e, const char *name, double t0) {
  if (!zt_trace_active()) return;
  if (e->be->synchronize) e->be->synchronize();
  zt_trace_span(name, t0, zt_now());
}

float zt_engine_train_step(zt_engine *e, double *grad_norm) {
  const zt_args *a = e->args;
  zt_train_state *st = &e->st;
  zt_model *m = e->model;
  profile_step_begin(e);
  const double step0 = zt_now();
  update_batch(e);
  const int nmb = e->cur_nmb;
  const int64_t gbs = e->cur_gbs;
  /* flops_profiler: DeepSpeed profiles the iteration that starts after profile_step steps */
  const int profiling = e->fprof && st->iteration == e->ds->fp_profile_step;
  const size_t n = m->table->numel;
  const double fwd0 = e->t_fwd, bwd0 = e->t_bwd_inner, batch0 = e->t_batch;
  int overflow = 0; /* fp16: some micro batch's gradient does not fit the half type */
  if (st->zero_stage == 3) zt_zero3_set_training(&st->zero3, 1);
  if (e->sampler_on) data_sampler_step(e); /* DeepSpeed's data loader: the next global batch */
  if (e->curriculum && !e->longest_cut) {
    /* Megatron-DeepSpeed: curriculum_scheduler.update_difficulty(args.iteration + 1), or the sampler's length */
    if (!e->sampler_on) e->train_T = (int)zt_curriculum_update(&e->curr, st->iteration + 1);
    zt_model_set_seq_length(m, e->train_T);
    if (e->teacher) zt_model_set_seq_length(e->teacher, e->train_T); /* calculate_mos_loss truncates its tokens too */
    if (profiling) { /* the module tree's MACs at this iteration's length */
      zt_flops_profiler_free(e->fprof);
      e->fprof = make_flops_profiler(e);
    }
  }
  e->reshape_rows = 0; /* set by a re-cut micro batch (seqlen_reshape below --seq-length) */
  int64_t reserved = 0;  /* DeepSpeed's engine.forward: random_ltd_scheduler.update_seq(global_steps) */
  if (e->ltd_on) reserved = zt_random_ltd_update(&e->ltd, st->iteration, a->global_batch_size,
                                                 &st->random_ltd_layer_tokens);
  zt_loss_sums sum;
  zt_schedule_train(e, nmb, profiling, &sum, &overflow);
  /* Megatron-DeepSpeed's args.actual_seq_length after train_step: the curriculum's length (longest_cut: the last
   * micro batch's), mixed with random-LTD's reserved length; throughput_calculator's seq_len */
  e->actual_T = e->train_T;
  if (e->ltd_on)
    e->actual_T = (int)zt_random_ltd_actual_seq_length(&e->ds->random_ltd, e->train_T, a->num_layers, reserved);
  if (e->curriculum || e->ltd_on) {
    zt_flops_model fm = e->flops_model;
    fm.seq_length = e->actual_T;
    e->flops_per_iteration = zt_iteration_flops(&fm, e->args->global_batch_size);
  }
  const double it_fwd = e->t_fwd - fwd0, it_bwd = e->t_bwd_inner - bwd0;
  double t3 = zt_now();
  if (st->zero_stage != 3) /* --sequence-parallel: layernorm/bias grads over TP (stage 3: per unit, zero3_hook) */
    zt_model_sync_sequence_parallel(m, 0, n);
  zt_model_sync_shared(m, e->emb_group, e->comm_dtype); /* tied embeddings: first + last stage */
  if (st->zero_stage == 3) overflow |= zt_zero3_take_grads(&st->zero3); /* reduced during the backward into acc */
  else if (st->zero_stage > 0) zero_reduce_gradients(e);
  else reduce_gradients(e);
  zt_engine_trace_span(e, "gradients all-reduce", t3);
  double t4 = zt_now();
  const double scale = st->scaler.cur_scale;
  double norm = (st->zero_stage > 0 ? zero_grad_norm(e) : zt_model_grad_norm(m, m->grads)) / scale; /* unscaled */
  int skip = 0;
  if (st->half_dtype == ZT_DTYPE_FP16) { /* the overflow test of every data-parallel rank, then the scaler */
    double ov = overflow || !isfinite(norm);
    if (zt_group_size(e->dp_group) > 1) zt_allreduce_max_f64(e->dp_group, &ov, 1);
    if (e->tp_group) zt_allreduce_max_f64(e->tp_group, &ov, 1); /* and of every tensor-parallel rank */
    if (e->pp_group) zt_allreduce_max_f64(e->pp_group, &ov, 1); /* and of every pipeline stage */
    skip = zt_loss_scaler_update(&st->scaler, ov != 0.0);
    log_scaler_event(e);
  } else if (!isfinite(norm)) {
    zt_fatal("non-finite gradient", "grad norm is %s at iteration %lld; the run stops", isnan(norm) ? "nan" : "inf",
             (long long)st->iteration + 1);
  }
  e->last_skipped = skip;
  e->num_zeros = NAN; /* Megatron's optimizer counts them only for an applied step */
  if (!skip && a->log_num_zeros_in_grad) e->num_zeros = zt_tb_count_zeros(e);
  if (skip) { /* DeepSpeed and Megatron: no update, no scheduler step; the iteration still counts */
    if (st->zero_stage == 3) zt_zero3_after_step(&st->zero3, 0);
    else e->be->memset(m->grads, 0, n * sizeof(float));
    st->skipped_iters++;
    norm = NAN;
  } else {
    /* clipping on the unscaled norm; unscaling and clipping fused into one factor (DeepSpeed's
     * unscale_and_clip_grads; Megatron's unscale-then-clip rounds the same way for power-of-two scales) */
    double clip = 1.0;
    if (e->clip_grad > 0) {
      double coeff = e->clip_grad / (norm + 1e-6);
      if (coeff < 1.0) clip = coeff;
    }
    const float factor = scale == 1.0 ? (float)clip : (float)(clip / scale);
    if (st->use_ds_sched) { /* OneCycle cycles beta1 (and holds beta2 at 0.99) */
      double b1 = e->beta_cfg[0], b2 = e->beta_cfg[1];
      if (zt_ds_sched_mom(&st->ds_sched, &b1, &b2)) {
        st->opt.cfg.beta1 = (float)b1;
        st->opt.cfg.beta2 = (float)b2;
      }
    }
    /* this rank's partition (everything without ZeRO); then the half copy of the masters, and with ZeRO the
     * all-gather of the updated partitions and the gradients of the others' partitions cleared */
    const size_t lo = st->part_lo;
    if (st->zero_stage == 3) zt_zero3_partition_in(&st->zero3); /* offload_param nvme: the pieces on NVMe */
    if (st->swap) { /* NVMe: sub-group by sub-group through the swap buffers */
      float *params = (float *)m->params;
      zt_opt_swapper_step(st->swap, &st->opt, params + lo, partition_grads(e), current_lr(e), factor, params + lo,
                          st->half_dtype);
    } else {
      float *weights = st->master ? st->master : (float *)m->params + lo;
      float *weights2 = st->master ? st->master + st->xpart_at : (float *)m->params + st->xpart_lo;
      zt_optimizer_step2(&st->opt, weights, partition_grads(e), weights2, m->grads + st->xpart_lo, current_lr(e),
                         factor);
      if (st->master) weights_from_masters(e);
    }
    if (st->zero_stage == 3) {
      zt_zero3_after_step(&st->zero3, 1); /* the gathered copies are stale; persistent parameters re-gathered */
    } else if (st->zero_stage > 0) {
      zt_zero_allgather_params(&st->zero, m->params);
      if (st->zero_x.dp) zt_zero_allgather_params(&st->zero_x, zt_at(m->params, m->dt, st->zero_x.base));
      e->be->memset(m->grads, 0, m->flat * sizeof(float));
    }
    if (st->use_ds_sched) {
      zt_ds_sched_step(&st->ds_sched);
    } else {
      zt_lr_step_tokens(&st->sched, gbs, st->consumed_tokens); /* tokens before this iteration */
      st->opt.cfg.weight_decay = (float)zt_wd_get(&st->sched); /* the next step's, as Megatron's step() sets it */
    }
  }
  const int64_t samples_before = st->consumed_samples;
  st->iteration++;
  st->consumed_samples += gbs;
  /* new_samples * args.actual_seq_length (curriculum, random-LTD); seqlen_reshape: the re-cut rows of each micro
   * batch (Megatron-DeepSpeed's act_mbsz = data_efficiency_curriculum_learning_numel / curriculum_seqlen) */
  st->consumed_tokens += (e->reshape_rows ? (int64_t)a->data_parallel_size * nmb * e->reshape_rows : gbs) * e->actual_T;
  zt_engine_trace_span(e, "optimizer.step", t4);
  const double t5 = zt_now();
  e->t_bwd_allreduce += t4 - t3;
  e->t_step += t5 - t4;
  e->last_phases = (zt_step_phases){.fwd = it_fwd, .bwd = it_bwd, .batch = e->t_batch - batch0,
                                    .grads_reduce = t4 - t3, .optimizer = t5 - t4};
  /* per micro batch, the unit of the profile's MACs (the iteration ran nmb of them) */
  if (profiling) flops_report(e, e->wall_clock ? it_fwd / nmb : 0, e->wall_clock ? (it_bwd + (t4 - t3)) / nmb : 0,
                              e->wall_clock ? t5 - t4 : 0);
  *grad_norm = norm;
  dp_mean_losses(e, &sum, nmb);
  e->last_losses = sum;
  const float mean = (float)sum.total;
  if (e->ds) {
    zt_ds_throughput_stop(&e->tput, 1);
    e->pipe_batch_time += zt_now() - step0;
    ds_after_step(e, mean, samples_before);
  }
  profile_step_end(e, step0);
  return mean;
}

zt_loss_sums zt_engine_evaluate(zt_engine *e, int split) {
  const zt_args *a = e->args;
  const int B = a->micro_batch_size, nmb = e->cur_nmb; /* Megatron's current number of micro batches */
  zt_loss_sums sum = zt_loss_sums_empty(e->model);
  int count = 0;
  uint64_t base = split == 1 ? (uint64_t)e->st.consumed_valid_samples : 0;
  if (e->st.zero_stage == 3) zt_zero3_set_training(&e->st.zero3, 0);
  if (e->curriculum) zt_model_set_seq_length(e->model, a->seq_length); /* evaluation is never truncated */
  for (int it = 0; it < a->eval_iters; it++)
    for (int mb = 0; mb < nmb; mb++) {
      uint64_t first = base + ((uint64_t)it * nmb + mb) * B * a->data_parallel_size +
                       (uint64_t)e->st.dp_rank * B;
      zt_engine_load_micro_batch(e, split, first, -1);
      const zt_pass pass = {.B = B, .T = a->seq_length, .first_sample = first, .seed = a->seed, .training = 0};
      zt_schedule_eval_forward(e, &pass, &sum);
      count++;
    }
  zt_schedule_from_last(e, &sum);
  if (split == 1) e->st.consumed_valid_samples += (int64_t)a->eval_iters * e->cur_gbs;
  dp_mean_losses(e, &sum, count);
  return sum;
}

/* Megatron's evaluate_and_print_results: each named loss's value and perplexity. */
static void print_validation(const char *prefix, const zt_loss_sums *l) {
  char line[1024];
  int len = snprintf(line, sizeof line, " validation loss at %s |", prefix);
  for (int i = 0; i < l->n && len < (int)sizeof line; i++) {
    const float loss = (float)l->value[i];
    const double ppl = exp(loss < 20 ? loss : 20);
    len += snprintf(line + len, sizeof line - (size_t)len, " %s value: %.6E | %s PPL: %.6E |", l->name[i], loss,
                    l->name[i], ppl);
  }
  if (len < (int)sizeof line - 1) line[len++] = ' ', line[len] = '\0';
  char dashes[1024];
  int n = len + 1 < (int)sizeof dashes - 1 ? len + 1 : (int)sizeof dashes - 1;
  memset(dashes, '-', (size_t)n);
  dashes[n] = 0;
  zt_log("%s\n%s\n%s\n", dashes, line, dashes);
}

/* Megatron's training_log line. Each named loss is the mean over the interval's applied (not skipped) iterations
 * and is left out when all were skipped; the grad norm is the last iteration's, left out when that one was
 * skipped (Megatron's None). */
static void print_log_line(const zt_engine *e, double elapsed_per_iter, int applied, const zt_loss_sums *acc,
                           double grad_norm, int skipped, const char *eta) {
  const zt_args *a = e->args;
  const double samples_per_s = (double)e->cur_gbs / elapsed_per_iter; /* the current batch (a ramp-up's) */
  const double flops = e->ramp.on ? e->flops_per_iteration / a->global_batch_size * (double)e->cur_gbs
                                  : e->flops_per_iteration;
  const int world = zt_world_size();
  char losses[256] = "", gn[64] = "", extras[96], curr[96] = "";
  for (int i = 0, len = 0; i < acc->n; i++) {
    const float loss = applied > 0 ? (float)(acc->value[i] / applied) : 0.0f;
    if (loss > 0 && len < (int)sizeof losses)
      len += snprintf(losses + len, sizeof losses - (size_t)len, " %s: %.6E |", acc->name[i], loss);
  }
  if (!isnan(grad_norm)) snprintf(gn, sizeof gn, " grad norm: %.3f |", grad_norm);
  zt_tb_log_line_extras(e->tb, e, extras, sizeof extras); /* num zeros, params norm */
  int cl = e->curriculum ? snprintf(curr, sizeof curr, " curriculum seqlen: %5d |", e->train_T) : 0;
  if (e->ltd_on) snprintf(curr + cl, sizeof curr - (size_t)cl, " random ltd reserved length: %5d |", (int)e->ltd.current);
  zt_log(" iteration %8lld/%8lld | consumed samples: %12lld | consumed tokens: %12lld |"
         " elapsed time per iteration (ms): %.1f | learning rate: %.3E | global batch size: %5d |"
         "%s loss scale: %.1f |%s%s%s number of skipped iterations: %3d |"
         " number of nan iterations: %3d | samples per second: %.3f | tokens per gpu per second (tgs): %.3f |"
         " TFLOPs: %.2f |%s\n",
         (long long)e->st.iteration, (long long)a->train_iters, (long long)e->st.consumed_samples,
         (long long)e->st.consumed_tokens, elapsed_per_iter * 1000.0, current_lr(e), (int)e->cur_gbs,
         losses, e->st.scaler.cur_scale, gn, extras, curr, skipped, 0, samples_per_s, samples_per_s * e->actual_T / world,
         flops / (elapsed_per_iter * world * 1e12), eta);
}

void zt_engine_run(zt_engine *e) {
  const zt_args *a = e->args;
  zt_watchdog *wd = a->step_timeout_seconds > 0 ? zt_watchdog_start(a->step_timeout_seconds) : NULL;
  if (wd) zt_log("> step watchdog: a training step or evaluation running past %g s ends the job\n",
                 a->step_timeout_seconds);
  static const char *const setup_names[2] = {"model-and-optimizer-setup", "train/valid/test-data-iterators-setup"};
  update_batch(e); /* after --load: Megatron's update_num_microbatches(consumed_train_samples) */
  zt_log("done with setup ...\n");
  zt_timers_log(setup_names, e->setup_seconds, 2, a->timing_log_option, 1.0);
  if (!a->skip_train) {
    zt_log("training ...\n");
    zt_print_datetime("before the start of training step");
    double interval_start = zt_now(), train_seconds = 0;
    const int64_t first_iteration = e->st.iteration;
    zt_loss_sums acc = zt_loss_sums_empty(e->model);
    int in_interval = 0, applied = 0, skipped = 0;
    /* Megatron-DeepSpeed's loop: --train-tokens also ends training once the consumed tokens reach it */
    while (e->st.iteration < a->train_iters && (a->train_tokens < 0 || e->st.consumed_tokens < a->train_tokens)) {
      double norm;
      zt_watchdog_arm(wd, "training step", e->st.iteration + 1);
      zt_engine_train_step(e, &norm);
      /* the logging meets the other ranks too (the timers' max, --log-params-norm, TensorBoard): a rank stopped
       * between its step and these collectives would otherwise hang this one outside the watch */
      zt_watchdog_arm(wd, "logging", e->st.iteration);
      const zt_tb_step ts = {.lr = current_lr(e), .grad_norm = norm, .loss_scale = e->st.scaler.cur_scale,
                             .skipped = e->last_skipped};
      zt_tb_log_after_step(e->tb, e, &ts);
      in_interval++;
      if (e->last_skipped) {
        skipped++;
      } else {
        for (int i = 0; i < acc.n; i++) acc.value[i] += (float)e->last_losses.value[i];
        applied++;
      }
      if (e->st.iteration % a->log_interval == 0) {
        double now = zt_now();
        char eta[96] = "";
        train_seconds += now - interval_start;
        if (a->log_eta)
          zt_progress_eta(eta, sizeof eta, zt_progress_since_start(), train_seconds, e->st.iteration - first_iteration,
                          a->train_iters - e->st.iteration);
        print_log_line(e, (now - interval_start) / in_interval, applied, &acc, norm, skipped, eta);
        zt_tb_log_interval(e->tb, e, (now - interval_start) / in_interval);
        interval_start = now;
        acc = zt_loss_sums_empty(e->model);
        in_interval = applied = skipped = 0;
      }
      zt_watchdog_disarm(wd);
      if (a->eval_iters > 0 && zt_data_has_split(e->data, 1) && e->st.iteration % a->eval_interval == 0) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "iteration %lld", (long long)e->st.iteration);
        double t0 = zt_now();
        zt_watchdog_arm(wd, "evaluation", e->st.iteration);
        const zt_loss_sums v = zt_engine_evaluate(e, 1);
        zt_watchdog_disarm(wd);
        print_validation(prefix, &v);
        zt_tb_log_validation(e->tb, e, &v, 0);
        interval_start += zt_now() - t0; /* validation time is not training time */
      }
      /* --save-interval; --exit-*: saved, the program ends (Megatron's sys.exit) */
      if (e->hooks.after_step && e->hooks.after_step(&e->st)) {
        zt_watchdog_stop(wd);
        return;
      }
    }
    zt_print_datetime("after training is done");
    if (e->ltd_on) { /* DeepSpeed's RandomLTDScheduler state: the layer tokens the layers have run on */
      const zt_random_ltd_config *c = &e->ds->random_ltd;
      const double full = (double)e->st.iteration * (double)a->global_batch_size * (double)c->max_value *
                          (double)c->total_layer_num;
      zt_log("> random-LTD: %lld layer tokens consumed in %lld iterations, %.1f%% of the %.0f without random-LTD\n",
             (long long)e->st.random_ltd_layer_tokens, (long long)e->st.iteration,
             full > 0 ? 100.0 * (double)e->st.random_ltd_layer_tokens / full : 0.0, full);
    }
    if (e->ds && e->ds->comms_logger_enabled) zt_comms_logger_log_summary(); /* deepspeed.comm.log_summary() */
    if (e->hooks.end_of_training) e->hooks.end_of_training(&e->st);
  } else {
    zt_log("skipping training (--skip-train is on) ...\n");
  }
  if (a->eval_iters > 0 && !e->final_eval_off) {
    if (zt_data_has_split(e->data, 1)) {
      zt_watchdog_arm(wd, "evaluation", e->st.iteration);
      const zt_loss_sums v = zt_engine_evaluate(e, 1);
      zt_watchdog_disarm(wd);
      print_validation("the end of training for val data", &v);
      if (!a->skip_train) zt_tb_log_validation(e->tb, e, &v, 0);
    }
    if (zt_data_has_split(e->data, 2)) {
      zt_watchdog_arm(wd, "evaluation", e->st.iteration);
      const zt_loss_sums v = zt_engine_evaluate(e, 2);
      zt_watchdog_disarm(wd);
      print_validation("the end of training for test data", &v);
      if (!a->skip_train) zt_tb_log_validation(e->tb, e, &v, 1);
    }
  }
  zt_watchdog_stop(wd);
}
