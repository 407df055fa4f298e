/* Megatron's interleaved schedule as a list of steps (see pipeline_schedule.h). The three phases and every
 * send/receive condition follow forward_backward_pipelining_with_interleaving (batch_p2p_comm, no overlap) line
 * by line; Python's modulo of negative step numbers is kept. Received tensors are labelled by counting: within a
 * chunk, inputs and gradients arrive in micro-batch order. */
#include "runtime/parallel/pipeline_schedule.h"

#include <stdlib.h>

#include "runtime/base/error.h"

static int pymod(int a, int m) { return ((a % m) + m) % m; }

int zt_pipe_chunk(int p, int v, int k, int forward) {
  const int c = pymod(k, p * v) / p;
  return forward ? c : v - 1 - c;
}

int zt_pipe_micro(int p, int v, int k) { return k / (p * v) * p + k % p; }

int zt_pipe_warmup(int p, int s, int v, int nmb) {
  const int total = nmb * v;
  if (nmb == p) return total; /* all forwards, then all backwards */
  const int w = (p - s - 1) * 2 + (v - 1) * p;
  return w < total ? w : total;
}

int zt_pipe_max_steps(int v, int nmb) { return 2 * nmb * v + 2; }

typedef struct {
  zt_pipe_step *steps;
  int n, *nin, *ngrad; /* inputs and gradients received so far, per chunk */
} builder;

static zt_pipe_step *add(builder *b) {
  zt_pipe_step *st = &b->steps[b->n++];
  *st = (zt_pipe_step){-1, -1, -1, -1, 0, 0, -1, -1, -1, -1};
  return st;
}

static void recv_input(builder *b, zt_pipe_step *st, int chunk) {
  st->recv_prev_chunk = chunk;
  st->recv_prev_mb = b->nin[chunk]++;
}

static void recv_grad(builder *b, zt_pipe_step *st, int chunk) {
  st->recv_next_chunk = chunk;
  st->recv_next_mb = b->ngrad[chunk]++;
}

int zt_pipe_interleaved(int p, int s, int v, int nmb, zt_pipe_step *steps) {
  zt_check(p > 2 && s >= 0 && s < p && v >= 1 && nmb > 0 && nmb % p == 0, "internal error",
           "interleaved schedule: stage %d of %d, %d chunks, %d micro batches", s, p, v, nmb);
  const int first = s == 0, last = s == p - 1, total = nmb * v;
  const int warmup = zt_pipe_warmup(p, s, v, nmb), remaining = total - warmup, all_warmup = nmb == p;
  builder b = {steps, 0, zt_calloc((size_t)v, sizeof(int), "schedule"), zt_calloc((size_t)v, sizeof(int), "schedule")};
  /* recv_forward for chunk 0 (nothing on the first stage) */
  zt_pipe_step *st = add(&b);
  if (!first) recv_input(&b, st, 0);
  for (int k = 0; k < warmup; k++) {
    st = add(&b);
    st->fwd_chunk = zt_pipe_chunk(p, v, k, 1);
    st->fwd_mb = zt_pipe_micro(p, v, k);
    st->send_next = !(last && st->fwd_chunk == v - 1);
    const int next = zt_pipe_chunk(p, v, k + 1, 1);
    if (!(first && next == 0) && k != total - 1) recv_input(&b, st, next);
    if (k == warmup - 1 && !all_warmup && !last) recv_grad(&b, st, v - 1);
  }
  for (int i = 0; i < remaining; i++) {
    const int fk = i + warmup;
    st = add(&b);
    st->fwd_chunk = zt_pipe_chunk(p, v, fk, 1);
    st->fwd_mb = zt_pipe_micro(p, v, fk);
    st->bwd_chunk = zt_pipe_chunk(p, v, i, 0);
    st->bwd_mb = zt_pipe_micro(p, v, i);
    st->send_next = !(last && st->fwd_chunk == v - 1);
    st->send_prev = !(first && st->bwd_chunk == 0);
    /* the first stage is p - 1 forwards ahead of the last, the last p - 1 backwards ahead of the first */
    int recv_prev = 1, next_f;
    if (first) {
      next_f = zt_pipe_chunk(p, v, fk - (p - 1), 1);
      recv_prev = next_f != v - 1;
      next_f++;
    } else {
      next_f = zt_pipe_chunk(p, v, fk + 1, 1);
    }
    int recv_next = 1, next_b;
    if (last) {
      next_b = zt_pipe_chunk(p, v, i - (p - 1), 0);
      recv_next = next_b != 0;
      next_b--;
    } else {
      next_b = zt_pipe_chunk(p, v, i + 1, 0);
    }
    if (i == remaining - 1) recv_prev = 0;
    if (recv_prev) recv_input(&b, st, next_f);
    if (recv_next) recv_grad(&b, st, next_b);
  }
  if (all_warmup && !last) recv_grad(&b, add(&b), v - 1); /* recv_backward for the first backward */
  for (int k = remaining; k < total; k++) {
    st = add(&b);
    st->bwd_chunk = zt_pipe_chunk(p, v, k, 0);
    st->bwd_mb = zt_pipe_micro(p, v, k);
    st->send_prev = !(first && st->bwd_chunk == 0);
    const int next = zt_pipe_chunk(p, v, k + 1, 0);
    if (!(last && next == v - 1) && k != total - 1) recv_grad(&b, st, next);
  }
  free(b.nin);
  free(b.ngrad);
  return b.n;
}

void zt_pipe_buffers(const zt_pipe_step *steps, int n, int v, int *inputs, int *grads) {
  int *cnt = zt_calloc(4 * (size_t)v, sizeof(int), "schedule buffers");
  int *rin = cnt, *rgrad = cnt + v, *done_in = cnt + 2 * v, *done_grad = cnt + 3 * v;
  *inputs = *grads = 0;
  for (int i = 0; i < n; i++) {
    const zt_pipe_step *st = &steps[i];
    const int c = st->bwd_chunk;
    if (c >= 0 && rin[c] > done_in[c]) done_in[c]++; /* chunks that never receive (embedding, loss) hold none */
    if (c >= 0 && rgrad[c] > done_grad[c]) done_grad[c]++;
    if (st->recv_prev_chunk >= 0) rin[st->recv_prev_chunk]++;
    if (st->recv_next_chunk >= 0) rgrad[st->recv_next_chunk]++;
    for (int k = 0; k < v; k++) {
      if (rin[k] - done_in[k] > *inputs) *inputs = rin[k] - done_in[k];
      if (rgrad[k] - done_grad[k] > *grads) *grads = rgrad[k] - done_grad[k];
    }
  }
  free(cnt);
}
