/* Pipeline schedules of the engine (see pipeline.h).
 *
 * Megatron's 1F1B schedule (forward_backward_pipelining_without_interleaving): stage s runs min(P - s - 1, nmb)
 * warm-up forwards, then alternates one forward and one backward, then drains the backwards; activations and
 * their gradients go to the neighbouring stages with blocking point-to-point messages, paired (MPI_Sendrecv) where
 * Megatron pairs them.
 *
 * The interleaved schedule (forward_backward_pipelining_with_interleaving): each stage holds vpp chunks, and the
 * output of the last stage's chunk c feeds chunk c+1 of the first stage, so the chunks form a pipeline of P vpp
 * virtual stages with 1/vpp of the work each. The stage runs the steps of runtime/parallel/pipeline_schedule (at
 * most one forward and one backward, then one batched exchange with stages s+1 and s-1 mod P, Megatron's
 * batch_isend_irecv).
 *
 * Activation memory, both schedules: a stage (chunk) keeps only the input of each micro batch in flight and
 * recomputes its forward right before that micro batch's backward unless that forward was the last one it ran (a
 * stage-level activation checkpoint; the recompute is bit-identical, dropout being keyed by sample and layer), so
 * one activation set per stage suffices. The interleaved schedule's buffers (the model's pp_buffers): the slots
 * of its steps, which hold each received input and output gradient until the backward that uses them (as many as
 * are held at once), and a copy of the last forward's output, which the backward of the same step would
 * otherwise overwrite before the exchange sends it. */
#include "train/pipeline.h"

#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"

typedef struct {
  zt_engine *e;
  int nmb;
  int last_chunk, last_mb;       /* the forward whose activations the model holds */
  double loss_sum;
  int overflow;                  /* fp16: a micro batch's gradient left the fp16 range */
} pipe_state;

static zt_pass pipe_load(zt_engine *e, int split, uint64_t first, int training) {
  const zt_args *a = e->args;
  zt_engine_load_micro_batch(e, split, first);
  return (zt_pass){.B = a->micro_batch_size, .T = a->seq_length, .first_sample = first, .seed = a->seed,
                   .training = training, .key_start = e->key_start};
}

static uint64_t pipe_first_sample(const zt_engine *e, int mb) {
  const zt_args *a = e->args;
  return (uint64_t)e->consumed_samples + (uint64_t)mb * a->micro_batch_size * a->data_parallel_size +
         (uint64_t)e->dp_rank * a->micro_batch_size;
}

/* Loads micro batch mb and runs the forward of `chunk` (its input in place); the loss counts when `count`. */
static void pipe_run_forward(pipe_state *st, int chunk, int mb, int count) {
  zt_engine *e = st->e;
  zt_gpt *m = &e->model;
  zt_pass pass = pipe_load(e, 0, pipe_first_sample(e, mb), 1);
  float loss = zt_gpt_forward_chunk(m, chunk, e->tokens, e->positions, e->targets, e->loss_mask, &pass);
  if (count && m->last && chunk == m->vpp - 1) {
    zt_engine_check_finite_loss(e, loss, mb, "lm loss");
    st->loss_sum += loss;
  }
  st->last_chunk = chunk;
  st->last_mb = mb;
}

static void pipe_run_backward(pipe_state *st) {
  zt_engine *e = st->e;
  zt_gpt_backward(&e->model, (float)e->scaler.cur_scale / st->nmb);
  st->overflow |= zt_engine_half_grads_after_backward(e);
}

/* ---- 1F1B ---------------------------------------------------------------------------------------------- */

static void pipe_forward(pipe_state *st, int mb) {
  zt_gpt *m = &st->e->model;
  float *slot = zt_gpt_stash(m, mb % st->e->pp_size); /* middle stages keep the input for the recompute */
  if (slot) memcpy(slot, zt_gpt_stage_input(m), zt_gpt_stage_numel(m) * sizeof(float));
  pipe_run_forward(st, 0, mb, 1);
}

static void pipe_backward(pipe_state *st, int mb) {
  zt_gpt *m = &st->e->model;
  if (st->last_mb != mb) { /* recompute the stage's forward of this micro batch (dres is not touched) */
    float *slot = zt_gpt_stash(m, mb % st->e->pp_size);
    if (slot) memcpy(zt_gpt_stage_input(m), slot, zt_gpt_stage_numel(m) * sizeof(float));
    pipe_run_forward(st, 0, mb, 0);
  }
  pipe_run_backward(st);
}

static void train_1f1b(pipe_state *st) {
  zt_engine *e = st->e;
  zt_gpt *m = &e->model;
  const zt_group *g = e->pp_group;
  const int s = e->pp_rank, P = e->pp_size, first = s == 0, last = s == P - 1, nmb = st->nmb;
  const size_t n = zt_gpt_stage_numel(m);
  float *in = zt_gpt_stage_input(m), *out = zt_gpt_stage_output(m), *grad = zt_gpt_stage_grad(m);
  const int warmup = P - s - 1 < nmb ? P - s - 1 : nmb, remaining = nmb - warmup;
  int fwd = 0, bwd = 0;
  for (int i = 0; i < warmup; i++) {
    if (!first) zt_recv_f32(g, in, n, s - 1);
    pipe_forward(st, fwd++);
    if (!last) zt_send_f32(g, out, n, s + 1);
  }
  if (remaining > 0 && !first) zt_recv_f32(g, in, n, s - 1);
  for (int i = 0; i < remaining; i++) {
    pipe_forward(st, fwd++);
    if (!last) zt_sendrecv_f32(g, out, n, s + 1, grad, n, s + 1); /* send forward, receive backward */
    pipe_backward(st, bwd++);
    if (first) continue;
    if (i == remaining - 1) zt_send_f32(g, grad, n, s - 1);
    else zt_sendrecv_f32(g, grad, n, s - 1, in, n, s - 1); /* send backward, receive forward */
  }
  for (int i = 0; i < warmup; i++) {
    if (!last) zt_recv_f32(g, grad, n, s + 1);
    pipe_backward(st, bwd++);
    if (!first) zt_send_f32(g, grad, n, s - 1);
  }
}

/* ---- interleaved --------------------------------------------------------------------------------------- */

/* The model's schedule buffers: the steps' slots, then the copy of the last forward's output. */
static float *slot_buffer(zt_engine *e, int slot) { return zt_gpt_stash(&e->model, slot); }
static float *output_copy(zt_engine *e) { return zt_gpt_stash(&e->model, e->pp_buffers - 1); }

/* The chunks whose output goes to another stage: all but the one with the loss. */
static int sends_output(const zt_engine *e, int chunk) { return !(e->pp_rank == e->pp_size - 1 && chunk == e->vpp - 1); }

static void chunk_forward(pipe_state *st, const zt_pipe_step *x) {
  zt_engine *e = st->e;
  zt_gpt *m = &e->model;
  const size_t bytes = zt_gpt_stage_numel(m) * sizeof(float);
  if (x->fwd_slot >= 0) memcpy(zt_gpt_stage_input(m), slot_buffer(e, x->fwd_slot), bytes);
  pipe_run_forward(st, x->fwd_chunk, x->fwd_mb, 1);
  if (sends_output(e, x->fwd_chunk)) memcpy(output_copy(e), zt_gpt_stage_output(m), bytes);
}

static void chunk_backward(pipe_state *st, const zt_pipe_step *x) {
  zt_engine *e = st->e;
  zt_gpt *m = &e->model;
  const size_t bytes = zt_gpt_stage_numel(m) * sizeof(float);
  if (st->last_chunk != x->bwd_chunk || st->last_mb != x->bwd_mb) {
    if (x->bwd_in_slot >= 0) memcpy(zt_gpt_stage_input(m), slot_buffer(e, x->bwd_in_slot), bytes);
    pipe_run_forward(st, x->bwd_chunk, x->bwd_mb, 0);
  }
  if (x->bwd_grad_slot >= 0) memcpy(zt_gpt_stage_grad(m), slot_buffer(e, x->bwd_grad_slot), bytes);
  pipe_run_backward(st);
}

static void train_interleaved(pipe_state *st) {
  zt_engine *e = st->e;
  zt_gpt *m = &e->model;
  const int s = e->pp_rank, P = e->pp_size, next = (s + 1) % P, prev = (s + P - 1) % P;
  const size_t n = zt_gpt_stage_numel(m);
  for (int i = 0; i < e->pipe_nsteps; i++) {
    const zt_pipe_step *x = &e->pipe_steps[i];
    if (x->fwd_chunk >= 0) chunk_forward(st, x);
    if (x->bwd_chunk >= 0) chunk_backward(st, x);
    zt_p2p_op ops[4];
    int k = 0;
    if (x->send_next) ops[k++] = (zt_p2p_op){output_copy(e), n, next, 1, ZT_DTYPE_FP32};
    if (x->send_prev) ops[k++] = (zt_p2p_op){zt_gpt_stage_grad(m), n, prev, 1, ZT_DTYPE_FP32}; /* d(input) of the backward */
    if (x->recv_prev_chunk >= 0) ops[k++] = (zt_p2p_op){slot_buffer(e, x->recv_prev_slot), n, prev, 0, ZT_DTYPE_FP32};
    if (x->recv_next_chunk >= 0) ops[k++] = (zt_p2p_op){slot_buffer(e, x->recv_next_slot), n, next, 0, ZT_DTYPE_FP32};
    if (k) zt_batch_sendrecv_f32(e->pp_group, ops, k);
  }
}

void zt_pipeline_setup(zt_engine *e) {
  const zt_args *a = e->args;
  const int P = e->pp_size, s = e->pp_rank, nmb = a->num_microbatches;
  e->interleaved = P > 1 && a->virtual_pipeline_model_parallel_size > 0;
  e->vpp = e->interleaved ? a->virtual_pipeline_model_parallel_size : 1;
  if (!e->interleaved) { /* 1F1B: middle stages stash the inputs of their micro batches in flight */
    e->pp_buffers = P > 1 && s > 0 && s < P - 1 ? P : 0;
    return;
  }
  zt_check(nmb % P == 0, "inconsistent arguments", "number of microbatches (%d) is not divisible by "
           "pipeline-model-parallel-size (%d) when using interleaved schedule (--global-batch-size %d / "
           "(--micro-batch-size %d x data-parallel size %d); --num-layers-per-virtual-pipeline-stage %d)", nmb, P,
           a->global_batch_size, a->micro_batch_size, a->data_parallel_size, a->num_layers_per_virtual_pipeline_stage);
  e->pipe_steps = zt_malloc(sizeof(zt_pipe_step) * (size_t)zt_pipe_max_steps(e->vpp, nmb), "pipeline schedule");
  int slots;
  e->pipe_nsteps = zt_pipe_interleaved(P, s, e->vpp, nmb, e->pipe_steps, &slots);
  e->pp_buffers = slots + 1;
  const int n = a->num_layers_per_virtual_pipeline_stage;
  zt_log("> interleaved pipeline schedule: %d stages x %d chunks of %d layer%s, %d micro batches (%d virtual steps); "
         "bubble (p-1)/(v m) = %.3f of the compute time, (p-1)/m = %.3f without interleaving\n", P, e->vpp, n,
         n == 1 ? "" : "s", nmb, nmb * e->vpp, (double)(P - 1) / (e->vpp * nmb), (double)(P - 1) / nmb);
}

double zt_pipeline_train(zt_engine *e, int nmb, int *overflow) {
  pipe_state st = {.e = e, .nmb = nmb, .last_chunk = -1, .last_mb = -1};
  const double t0 = zt_now();
  if (e->ds) zt_ds_throughput_start(&e->tput);
  if (e->interleaved) train_interleaved(&st);
  else train_1f1b(&st);
  e->t_bwd_inner += zt_now() - t0;
  *overflow = st.overflow;
  return zt_pipeline_from_last(e, st.loss_sum);
}

/* Receive, forward, send, chunk after chunk (the chunks in order are one chain through the stages: no cycle). */
float zt_pipeline_eval_forward(zt_engine *e, const zt_pass *pass) {
  zt_gpt *m = &e->model;
  if (e->pp_size == 1) return zt_gpt_forward(m, e->tokens, e->positions, e->targets, e->loss_mask, pass);
  const int s = e->pp_rank, P = e->pp_size;
  const size_t n = zt_gpt_stage_numel(m);
  float loss = 0.0f;
  for (int c = 0; c < e->vpp; c++) {
    if (!(s == 0 && c == 0)) zt_recv_f32(e->pp_group, zt_gpt_stage_input(m), n, (s + P - 1) % P);
    loss = zt_gpt_forward_chunk(m, c, e->tokens, e->positions, e->targets, e->loss_mask, pass);
    if (sends_output(e, c)) zt_send_f32(e->pp_group, zt_gpt_stage_output(m), n, (s + 1) % P);
  }
  return loss;
}

double zt_pipeline_from_last(const zt_engine *e, double v) {
  if (e->pp_size > 1) zt_broadcast(e->pp_group, &v, sizeof v, e->pp_size - 1);
  return v;
}
