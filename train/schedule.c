/* The schedules of the engine (see schedule.h).
 *
 * No pipelining: per micro batch, load, forward, backward (DeepSpeed's fwd and bwd_inner timers around them).
 *
 * Megatron's 1F1B schedule (forward_backward_pipelining_without_interleaving): stage s runs min(P - s - 1, nmb)
 * warm-up forwards, then alternates one forward and one backward, then drains the backwards; activations and
 * their gradients go to the neighbouring stages with blocking point-to-point messages, paired (sendrecv) where
 * Megatron pairs them.
 *
 * DeepSpeed's zero-bubble H1 schedule (--enable-zbh1-pipeline): 1F1B with the backwards of the stages after the first
 * split into B and W passes (below).
 *
 * The interleaved schedule (forward_backward_pipelining_with_interleaving): each stage holds vpp chunks, and the
 * output of the last stage's chunk c feeds chunk c+1 of the first stage, so the chunks form a pipeline of P vpp
 * virtual stages with 1/vpp of the work each. The stage runs the steps of runtime/parallel/pipeline_schedule (at
 * most one forward and one backward, then one batched exchange with stages s+1 and s-1 mod P, Megatron's
 * batch_isend_irecv).
 *
 * Activation memory, both pipeline schedules: a stage (chunk) keeps only the input of each micro batch in flight
 * and recomputes its forward right before that micro batch's backward unless that forward was the last one it ran
 * (a stage-level activation checkpoint; the recompute is bit-identical, dropout being keyed by sample and layer),
 * so one activation set per stage suffices. The interleaved schedule's buffers (the model's pp_buffers): the slots
 * of its steps, which hold each received input and output gradient until the backward that uses them (as many as
 * are held at once), and a copy of the last forward's output, which the backward of the same step would otherwise
 * overwrite before the exchange sends it. */
#include "train/schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/ops/wgrad_store.h"
#include "runtime/parallel/pipeline_schedule.h"

typedef struct {
  zt_engine *e;
  int nmb;
  int last_chunk, last_mb;       /* the forward whose activations the model holds */
  zt_loss_sums *sum;
  int overflow;                  /* fp16: a micro batch's gradient left the fp16 range */
} pipe_state;

static zt_pass make_pass(const zt_engine *e, uint64_t first, int training) {
  const zt_args *a = e->args;
  /* training: the curriculum's length (--seq-length without one) and random-LTD's reserved length for this step
   * (DeepSpeed's global_steps: the iterations done); evaluation: --seq-length, every token */
  return (zt_pass){.B = a->micro_batch_size, .T = training ? e->train_T : a->seq_length, .first_sample = first,
                   .seed = a->seed, .training = training, .ltd_keep = training && e->ltd_on ? (int)e->ltd.current : 0,
                   .ltd_step = (uint64_t)e->st.iteration};
}

/* Megatron's sampler: each step-slice of mbs x dp samples; this rank takes its mbs rows. */
static uint64_t first_sample(const zt_engine *e, int mb) {
  const zt_args *a = e->args;
  return (uint64_t)e->st.consumed_samples + (uint64_t)mb * a->micro_batch_size * a->data_parallel_size +
         (uint64_t)e->st.dp_rank * a->micro_batch_size;
}

static void add_losses(const zt_engine *e, zt_loss_sums *sum, const zt_losses *l, int mb) {
  for (int i = 0; i < l->n; i++) {
    zt_engine_check_finite_loss(e, l->value[i], mb, l->name[i]);
    sum->value[i] += l->value[i];
  }
  sum->total += l->total;
}

/* ---- no pipelining ------------------------------------------------------------------------------------------ */

/* Knowledge distillation: the teacher's forward of the micro batch the student trains on next (training_step sets
 * teacher_forward around forward_backward only, so evaluation has no KD term), in eval mode: no dropout, its MoE
 * gates with the eval capacity factor and no noise (issue 18 asks for a teacher without dropout; Megatron-DeepSpeed
 * never calls .eval() on its teacher: docs/moe.md). Its MoE draws are keyed apart from the student's. Returns its
 * logits. */
static const void *teacher_forward(zt_engine *e, const zt_pass *student) {
  zt_pass p = *student;
  p.ltd_keep = 0;
  p.training = 0;
  p.seed = student->seed ^ 0x7eac4e55d15711ULL;
  zt_losses l;
  zt_model_forward(e->teacher, 0, &e->batch, &p, &l);
  return e->teacher->out_logits;
}

/* seqlen_reshape below --seq-length: micro batch mb re-cut into R rows of train_T tokens (Megatron-DeepSpeed's
 * data_post_process) runs as passes of the model's rows (--micro-batch-size), the last one padded with rows of no
 * loss. Each pass's mean loss and its backward are weighted by its share of the loss mask, so that the micro batch's
 * loss and gradient are those of one pass over the R rows (loss_func: the sum over them all / the mask's sum); a pass
 * with no loss is skipped. Dropout of pass c > 0 is keyed by a seed of its own (the rows are not samples). */
static void train_reshaped(zt_engine *e, int mb, uint64_t first, int nmb, zt_loss_sums *sum, int *overflow) {
  zt_model *m = e->model;
  const int P = m->micro_batch, R = zt_engine_load_reshaped(e, mb), T = e->train_T;
  e->reshape_rows = R;
  const zt_batch all = e->batch;
  double total = 0;
  for (size_t i = 0; i < (size_t)R * T; i++) total += all.loss_mask[i];
  if (total == 0) zt_engine_check_finite_loss(e, NAN, mb, "lm loss (a re-cut micro batch with no token in its loss)");
  zt_losses acc = {0};
  for (int c = 0; c * P < R; c++) {
    zt_batch b;
    zt_curriculum_rows(&all, c * P, P, &e->reshape_buf, &b);
    double share = 0;
    for (size_t i = 0; i < (size_t)P * T; i++) share += b.loss_mask[i];
    if (share == 0) continue;
    const double w = share / total, t0 = zt_now();
    zt_pass pass = make_pass(e, first, 1);
    pass.B = P;
    pass.seed ^= (uint64_t)c * 0x9e3779b97f4a7c15ULL;
    zt_losses l;
    zt_model_forward(m, 0, &b, &pass, &l);
    acc.n = l.n;
    for (int i = 0; i < l.n; i++) {
      acc.name[i] = l.name[i];
      acc.value[i] += (float)(w * l.value[i]);
    }
    acc.total += (float)(w * l.total);
    const double t1 = zt_now();
    zt_model_backward(m, (float)(e->st.scaler.cur_scale / nmb * w));
    *overflow |= zt_engine_half_grads_after_backward(e);
    e->t_fwd += t1 - t0;
    e->t_bwd_inner += zt_now() - t1;
  }
  add_losses(e, sum, &acc, mb);
}

static void train_no_pipelining(zt_engine *e, int nmb, int profiling, zt_loss_sums *sum, int *overflow) {
  zt_model *m = e->model;
  for (int mb = 0; mb < nmb; mb++) {
    if (e->ds) zt_ds_throughput_start(&e->tput);
    const uint64_t first = first_sample(e, mb);
    if (e->reshape && e->train_T < e->args->seq_length) {
      train_reshaped(e, mb, first, nmb, sum, overflow);
      if (e->ds && mb + 1 < nmb) zt_ds_throughput_stop(&e->tput, 0);
      continue;
    }
    zt_engine_load_micro_batch(e, 0, first, mb);
    const double t0 = zt_now(); /* DeepSpeed's fwd timer: the forward pass alone, not the batch loading */
    zt_pass pass = make_pass(e, first, 1);
    if (e->teacher) pass.kd_teacher_logits = teacher_forward(e, &pass);
    if (profiling) zt_model_profile_attach(m, e->fprof); /* the last micro batch's times remain */
    zt_losses l;
    zt_model_forward(m, 0, &e->batch, &pass, &l);
    if (profiling) zt_model_profile_detach(m);
    add_losses(e, sum, &l, mb);
    zt_engine_trace_span(e, "forward", t0);
    const double t1 = zt_now();
    zt_model_backward(m, (float)e->st.scaler.cur_scale / nmb); /* the loss scale is 1 without fp16 */
    *overflow |= zt_engine_half_grads_after_backward(e);
    zt_engine_trace_span(e, "backward", t1);
    const double t2 = zt_now();
    e->t_fwd += t1 - t0;
    e->t_bwd_inner += t2 - t1;
    if (e->ds && mb + 1 < nmb) zt_ds_throughput_stop(&e->tput, 0);
  }
}

/* ---- pipelines ---------------------------------------------------------------------------------------------- */

/* Loads micro batch mb and runs the forward of `chunk` (its input in place); the losses count when `count`. */
static void pipe_run_forward(pipe_state *st, int chunk, int mb, int count) {
  zt_engine *e = st->e;
  const uint64_t first = first_sample(e, mb);
  zt_engine_load_micro_batch(e, 0, first, mb);
  const zt_pass pass = make_pass(e, first, 1);
  zt_losses l;
  const double t0 = zt_now();
  zt_model_forward(e->model, chunk, &e->batch, &pass, &l);
  zt_engine_trace_span(e, count ? "forward" : "forward (recompute)", t0);
  if (count && l.n) add_losses(e, st->sum, &l, mb);
  st->last_chunk = chunk;
  st->last_mb = mb;
}

static void pipe_run_backward(pipe_state *st) {
  zt_engine *e = st->e;
  const double t0 = zt_now();
  zt_model_backward(e->model, (float)e->st.scaler.cur_scale / st->nmb);
  st->overflow |= zt_engine_half_grads_after_backward(e);
  zt_engine_trace_span(e, "backward", t0);
}

/* Sends (send 1) or receives the stage tensors `t` to or from group rank `peer`, one message each. */
static void stage_p2p(const zt_engine *e, const zt_stage_tensor *t, int peer, int send) {
  for (int i = 0; i < e->model->n_stage; i++) {
    if (send) zt_send(e->pp_group, t[i].dt, t[i].buf, t[i].n, peer);
    else zt_recv(e->pp_group, t[i].dt, t[i].buf, t[i].n, peer);
  }
}

/* Sends `out` to dst while receiving `in` from src (Megatron's paired exchanges). */
static void stage_sendrecv(const zt_engine *e, const zt_stage_tensor *out, int dst, const zt_stage_tensor *in,
                           int src) {
  for (int i = 0; i < e->model->n_stage; i++)
    zt_sendrecv(e->pp_group, out[i].dt, out[i].buf, out[i].n, dst, in[i].buf, in[i].n, src);
}

/* ---- 1F1B and zero-bubble H1 ---------------------------------------------------------------------------- */

static void pipe_forward(pipe_state *st, int mb) {
  zt_model *m = st->e->model;
  zt_model_stash_save(m, m->stage_in, mb % st->e->st.pp_size); /* middle stages keep the input for the recompute */
  pipe_run_forward(st, 0, mb, 1);
}

static void pipe_backward(pipe_state *st, int mb) {
  zt_model *m = st->e->model;
  if (st->last_mb != mb) { /* recompute the stage's forward of this micro batch (the gradient is not touched) */
    zt_model_stash_load(m, m->stage_in, mb % st->e->st.pp_size);
    pipe_run_forward(st, 0, mb, 0);
  }
  pipe_run_backward(st);
}

/* DeepSpeed's ZeroBubbleH1Pipeline as Megatron-DeepSpeed installs it (--enable-zbh1-pipeline): the computations of
 * runtime/parallel/pipeline_schedule's zt_pipe_zbh1, 1F1B's forwards and backwards with the backwards of the stages
 * after the first split where it says so into B (the input and bias gradients, which the previous stage waits for)
 * and W (the linear layers' weight gradients, runtime/ops/wgrad_store.h). The exchanges are 1F1B's. A steady step's
 * W runs before the step's exchange, while the previous stage computes the forward that the exchange waits for; the
 * last steady step's and the cool-down's after their gradient has left (tests/parallel/test_zbh1_schedule.py
 * simulates this placement: it reaches the zero-bubble paper's bound at unit costs). The Ws run first in, first
 * out: with exact semantics each weight's gradient adds its micro batches in 1F1B's order (bit for bit 1F1B's
 * step); without, the first s micro batches' weight gradients on stage s come after the others'. */
static void zb_backward(pipe_state *st, int mb, int split) {
  zt_wgrad_store *w = st->e->wgrad;
  if (!split) {
    pipe_backward(st, mb);
    return;
  }
  zt_wgrad_store_defer(w, 1);
  pipe_backward(st, mb);
  zt_wgrad_store_flush(w);
  zt_wgrad_store_defer(w, 0);
}

static void zb_weight(pipe_state *st) {
  zt_engine *e = st->e;
  const double t0 = zt_now();
  zt_wgrad_store_pop(e->wgrad);
  st->overflow |= zt_engine_half_grads_after_backward(e);
  zt_engine_trace_span(e, "weight pass", t0);
}

/* 1F1B (ops "F" x warm-up, "FB" x steady, "B" x warm-up) or ZB-H1 (zt_pipe_zbh1), with 1F1B's exchanges: the
 * warm-up forwards receive and send alone, a steady forward sends its output while receiving the output gradient
 * of the step's backward, which sends its input gradient while receiving the next forward's input (the last one
 * sends alone), and the cool-down backwards receive and send alone. */
static void train_1f1b(pipe_state *st) {
  zt_engine *e = st->e;
  zt_model *m = e->model;
  const int s = e->st.pp_rank, P = e->st.pp_size, first = s == 0, last = s == P - 1, nmb = st->nmb;
  const zt_stage_tensor *in = m->stage_in, *out = m->stage_out, *grad = m->stage_grad;
  const int warmup = P - s - 1 < nmb ? P - s - 1 : nmb, steady = nmb - warmup;
  char *ops = zt_malloc((size_t)3 * nmb + 1, "pipeline schedule");
  if (e->wgrad) zt_pipe_zbh1(P, s, nmb, e->args->enable_zbh1_exact_semantics, ops);
  else zt_pipe_1f1b(P, s, nmb, ops);
  int fwd = 0, bwd = 0;
  for (const char *op = ops; *op; op++) {
    if (*op == 'W') {
      zb_weight(st);
    } else if (*op == 'F' && fwd < warmup) { /* the exchanges of 1F1B's phases */
      if (!first) stage_p2p(e, in, s - 1, 0);
      pipe_forward(st, fwd++);
      if (!last) stage_p2p(e, out, s + 1, 1);
    } else if (*op == 'F') {
      if (fwd == warmup && !first) stage_p2p(e, in, s - 1, 0);
      pipe_forward(st, fwd++);
      if (!last) stage_sendrecv(e, out, s + 1, grad, s + 1); /* send forward, receive backward */
    } else if (bwd < steady) {
      zb_backward(st, bwd++, *op == 'b');
      if (op[1] == 'W' && bwd < steady) { /* before the exchange, which waits for the previous stage's forward */
        zb_weight(st);
        op++;
      }
      if (first) continue;
      if (bwd == steady) stage_p2p(e, grad, s - 1, 1);
      else stage_sendrecv(e, grad, s - 1, in, s - 1); /* send backward, receive forward */
    } else {
      if (!last) stage_p2p(e, grad, s + 1, 0);
      zb_backward(st, bwd++, *op == 'b');
      if (!first) stage_p2p(e, grad, s - 1, 1);
    }
  }
  free(ops);
}

/* ---- interleaved --------------------------------------------------------------------------------------- */

/* The model's schedule buffers: the steps' slots, then the copy of the last forward's output. */
static int output_copy_slot(const zt_engine *e) { return e->pp_buffers - 1; }

/* The chunks whose output goes to another stage: all but the one with the loss. */
static int sends_output(const zt_engine *e, int chunk) {
  return !(e->st.pp_rank == e->st.pp_size - 1 && chunk == e->vpp - 1);
}

static void chunk_forward(pipe_state *st, const zt_pipe_step *x) {
  zt_engine *e = st->e;
  zt_model *m = e->model;
  if (x->fwd_slot >= 0) zt_model_stash_load(m, m->stage_in, x->fwd_slot);
  pipe_run_forward(st, x->fwd_chunk, x->fwd_mb, 1);
  if (sends_output(e, x->fwd_chunk)) zt_model_stash_save(m, m->stage_out, output_copy_slot(e));
}

static void chunk_backward(pipe_state *st, const zt_pipe_step *x) {
  zt_engine *e = st->e;
  zt_model *m = e->model;
  if (st->last_chunk != x->bwd_chunk || st->last_mb != x->bwd_mb) {
    if (x->bwd_in_slot >= 0) zt_model_stash_load(m, m->stage_in, x->bwd_in_slot);
    pipe_run_forward(st, x->bwd_chunk, x->bwd_mb, 0);
  }
  if (x->bwd_grad_slot >= 0) zt_model_stash_load(m, m->stage_grad, x->bwd_grad_slot);
  pipe_run_backward(st);
}

/* Adds the exchange of the stage tensors held in stash slot `slot` (or `t` itself when slot < 0). */
static int add_ops(zt_model *m, zt_p2p_op *ops, int k, const zt_stage_tensor *t, int slot, int peer, int send) {
  char *buf = slot >= 0 ? zt_model_stash(m, slot) : NULL;
  for (int i = 0; i < m->n_stage; i++) {
    ops[k++] = (zt_p2p_op){buf ? buf : t[i].buf, t[i].n, peer, send, t[i].dt};
    if (buf) buf += t[i].n * zt_dtype_size(t[i].dt);
  }
  return k;
}

static void train_interleaved(pipe_state *st) {
  zt_engine *e = st->e;
  zt_model *m = e->model;
  const int s = e->st.pp_rank, P = e->st.pp_size, next = (s + 1) % P, prev = (s + P - 1) % P;
  for (int i = 0; i < e->pipe_nsteps; i++) {
    const zt_pipe_step *x = &e->pipe_steps[i];
    if (x->fwd_chunk >= 0) chunk_forward(st, x);
    if (x->bwd_chunk >= 0) chunk_backward(st, x);
    zt_p2p_op ops[4 * ZT_MAX_STAGE_TENSORS];
    int k = 0;
    if (x->send_next) k = add_ops(m, ops, k, m->stage_out, output_copy_slot(e), next, 1);
    if (x->send_prev) k = add_ops(m, ops, k, m->stage_grad, -1, prev, 1); /* d(input) of the backward */
    if (x->recv_prev_chunk >= 0) k = add_ops(m, ops, k, m->stage_in, x->recv_prev_slot, prev, 0);
    if (x->recv_next_chunk >= 0) k = add_ops(m, ops, k, m->stage_grad, x->recv_next_slot, next, 0);
    if (k) zt_batch_sendrecv(e->pp_group, ops, k);
  }
}

void zt_schedule_setup(zt_engine *e) {
  const zt_args *a = e->args;
  const int P = e->st.pp_size, s = e->st.pp_rank, nmb = e->cur_nmb;
  e->interleaved = P > 1 && a->virtual_pipeline_model_parallel_size > 0;
  e->vpp = e->interleaved ? a->virtual_pipeline_model_parallel_size : 1;
  if (!e->interleaved) { /* 1F1B: middle stages stash the inputs of their micro batches in flight */
    e->pp_buffers = P > 1 && s > 0 && s < P - 1 ? P : 0;
    if (a->enable_zbh1_pipeline && P == 1)
      zt_log("> --enable-zbh1-pipeline: no effect without pipeline stages (--pipeline-model-parallel-size 1)\n");
    else if (a->enable_zbh1_pipeline)
      zt_log("> zero-bubble H1 pipeline schedule%s: stages 1 to %d split their backwards into B and W passes (stage s "
             "holds the W passes of up to s + 1 micro batches)\n", a->enable_zbh1_exact_semantics ?
             " with exact semantics (weight gradients in 1F1B's order)" : "", P - 1);
    return;
  }
  zt_check(nmb % P == 0, "inconsistent arguments", "number of microbatches (%d) is not divisible by "
           "pipeline-model-parallel-size (%d) when using interleaved schedule (--global-batch-size %d / "
           "(--micro-batch-size %d x data-parallel size %d); --num-layers-per-virtual-pipeline-stage %d)", nmb, P,
           a->global_batch_size, a->micro_batch_size, a->data_parallel_size, a->num_layers_per_virtual_pipeline_stage);
  /* --rampup-batch-size: every micro-batch count of the ramp must divide too (Megatron checks each step's); the
   * steps' room and the model's slots are those of the largest need */
  const int nsizes = e->ramp.on ? zt_rampup_batches(&e->ramp, NULL, 0) : 0;
  int64_t *sizes = zt_malloc(sizeof(int64_t) * (size_t)(nsizes + 1), "ramp-up batch sizes");
  zt_rampup_batches(&e->ramp, sizes, nsizes);
  int max_nmb = nmb;
  for (int i = 0; i < nsizes; i++) {
    const int n = (int)(sizes[i] / e->ramp.per_step);
    zt_check(n % P == 0, "inconsistent arguments", "number of microbatches (%d) is not divisible by "
             "pipeline-model-parallel-size (%d) when using interleaved schedule (global batch size %lld of "
             "--rampup-batch-size / (--micro-batch-size %d x data-parallel size %d))", n, P, (long long)sizes[i],
             a->micro_batch_size, a->data_parallel_size);
    if (n > max_nmb) max_nmb = n;
  }
  e->pipe_steps = zt_malloc(sizeof(zt_pipe_step) * (size_t)zt_pipe_max_steps(e->vpp, max_nmb), "pipeline schedule");
  int slots = 0, max_slots = 0;
  for (int i = 0; i < nsizes; i++) {
    zt_pipe_interleaved(P, s, e->vpp, (int)(sizes[i] / e->ramp.per_step), e->pipe_steps, &slots);
    if (slots > max_slots) max_slots = slots;
  }
  free(sizes);
  e->pipe_nsteps = zt_pipe_interleaved(P, s, e->vpp, nmb, e->pipe_steps, &slots);
  e->pipe_nmb = nmb;
  e->pp_buffers = (slots > max_slots ? slots : max_slots) + 1;
  const int n = a->num_layers_per_virtual_pipeline_stage;
  zt_log("> interleaved pipeline schedule: %d stages x %d chunks of %d layer%s, %d micro batches (%d virtual steps); "
         "bubble (p-1)/(v m) = %.3f of the compute time, (p-1)/m = %.3f without interleaving\n", P, e->vpp, n,
         n == 1 ? "" : "s", nmb, nmb * e->vpp, (double)(P - 1) / (e->vpp * nmb), (double)(P - 1) / nmb);
}

zt_loss_sums zt_loss_sums_empty(const zt_model *m) {
  zt_loss_sums l = {.n = m->n_losses};
  for (int i = 0; i < l.n; i++) l.name[i] = m->loss_names[i];
  return l;
}

void zt_schedule_train(zt_engine *e, int nmb, int profiling, zt_loss_sums *sum, int *overflow) {
  *sum = zt_loss_sums_empty(e->model);
  *overflow = 0;
  if (e->st.pp_size == 1) {
    train_no_pipelining(e, nmb, profiling, sum, overflow);
    return;
  }
  pipe_state st = {.e = e, .nmb = nmb, .last_chunk = -1, .last_mb = -1, .sum = sum};
  const double t0 = zt_now();
  if (e->ds) zt_ds_throughput_start(&e->tput);
  if (e->interleaved && nmb != e->pipe_nmb) { /* --rampup-batch-size: the steps of this number of micro batches */
    int slots;
    e->pipe_nsteps = zt_pipe_interleaved(e->st.pp_size, e->st.pp_rank, e->vpp, nmb, e->pipe_steps, &slots);
    e->pipe_nmb = nmb;
    zt_check(slots < e->pp_buffers, "internal error", "interleaved schedule of %d micro batches needs %d slots, %d "
             "planned", nmb, slots, e->pp_buffers - 1);
  }
  if (e->interleaved) train_interleaved(&st);
  else train_1f1b(&st);
  if (e->wgrad && !e->wgrad_said && e->st.pp_rank > 0 && e->st.tp_rank == 0 && e->st.dp_rank == 0) {
    printf("> zero-bubble H1 pipeline, stage %d: at most %d micro batches' weight passes waited at once, their "
           "copies of the linear layers' inputs and output gradients %.2f MiB\n", e->st.pp_rank,
           zt_wgrad_store_peak_pending(e->wgrad), (double)zt_wgrad_store_peak_bytes(e->wgrad) / (1 << 20));
    fflush(stdout);
  }
  e->wgrad_said = e->wgrad != NULL;
  e->t_bwd_inner += zt_now() - t0;
  *overflow = st.overflow;
  zt_schedule_from_last(e, sum);
}

/* Receive, forward, send, chunk after chunk (the chunks in order are one chain through the stages: no cycle). */
void zt_schedule_eval_forward(zt_engine *e, const zt_pass *pass, zt_loss_sums *sum) {
  zt_model *m = e->model;
  const int s = e->st.pp_rank, P = e->st.pp_size;
  zt_losses l = {.n = 0};
  for (int c = 0; c < e->vpp; c++) {
    if (P > 1 && !(s == 0 && c == 0)) stage_p2p(e, m->stage_in, (s + P - 1) % P, 0);
    zt_model_forward(m, c, &e->batch, pass, &l);
    if (P > 1 && sends_output(e, c)) stage_p2p(e, m->stage_out, (s + 1) % P, 1);
  }
  for (int i = 0; i < l.n; i++) sum->value[i] += l.value[i];
  sum->total += l.total;
}

void zt_schedule_from_last(const zt_engine *e, zt_loss_sums *l) {
  if (e->st.pp_size == 1) return;
  double v[ZT_MAX_LOSSES + 1] = {0};
  for (int i = 0; i < l->n; i++) v[i] = l->value[i];
  v[ZT_MAX_LOSSES] = l->total;
  zt_broadcast(e->pp_group, v, sizeof v, e->st.pp_size - 1);
  for (int i = 0; i < l->n; i++) l->value[i] = v[i];
  l->total = v[ZT_MAX_LOSSES];
}
