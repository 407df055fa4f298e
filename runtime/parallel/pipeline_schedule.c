/* Megatron's interleaved schedule as a list of steps (see pipeline_schedule.h). The three phases and every
 * send/receive condition follow forward_backward_pipelining_with_interleaving (batch_p2p_comm, no overlap) line
 * by line; Python's modulo of negative step numbers is kept. Received tensors are labelled by counting (within a
 * chunk, inputs and gradients arrive in micro-batch order) and go to a free slot; a backward frees its two. */
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
  int n, v, nmb;
  int *nin, *ngrad;          /* [v] inputs and gradients received so far, per chunk */
  int *in_slot, *grad_slot;  /* [v * nmb] the slot holding the input / output gradient of (chunk, mb), or -1 */
  int *free_slots, nfree;    /* slots free for reuse */
  int slots;                 /* slots used so far */
} builder;

static zt_pipe_step *add(builder *b) {
  zt_pipe_step *st = &b->steps[b->n++];
  *st = (zt_pipe_step){-1, -1, -1, -1, -1, -1, -1, 0, 0, -1, -1, -1, -1, -1, -1};
  return st;
}

static int take_slot(builder *b) { return b->nfree > 0 ? b->free_slots[--b->nfree] : b->slots++; }

static void forward(builder *b, zt_pipe_step *st, int chunk, int mb, int received) {
  st->fwd_chunk = chunk;
  st->fwd_mb = mb;
  st->fwd_slot = b->in_slot[chunk * b->nmb + mb];
  zt_check(!received || st->fwd_slot >= 0, "internal error", "interleaved schedule: the forward of chunk %d, "
           "micro batch %d comes before its input", chunk, mb);
}

static void backward(builder *b, zt_pipe_step *st, int chunk, int mb, int received) {
  int *in = &b->in_slot[chunk * b->nmb + mb], *grad = &b->grad_slot[chunk * b->nmb + mb];
  st->bwd_chunk = chunk;
  st->bwd_mb = mb;
  st->bwd_in_slot = *in;
  st->bwd_grad_slot = *grad;
  zt_check(!received || *grad >= 0, "internal error", "interleaved schedule: the backward of chunk %d, micro batch "
           "%d comes before its output gradient", chunk, mb);
  if (*in >= 0) b->free_slots[b->nfree++] = *in;
  if (*grad >= 0) b->free_slots[b->nfree++] = *grad;
  *in = *grad = -1;
}

static void recv_input(builder *b, zt_pipe_step *st, int chunk) {
  const int mb = b->nin[chunk]++;
  st->recv_prev_chunk = chunk;
  st->recv_prev_mb = mb;
  st->recv_prev_slot = b->in_slot[chunk * b->nmb + mb] = take_slot(b);
}

static void recv_grad(builder *b, zt_pipe_step *st, int chunk) {
  const int mb = b->ngrad[chunk]++;
  st->recv_next_chunk = chunk;
  st->recv_next_mb = mb;
  st->recv_next_slot = b->grad_slot[chunk * b->nmb + mb] = take_slot(b);
}

int zt_pipe_interleaved(int p, int s, int v, int nmb, zt_pipe_step *steps, int *slots) {
  zt_check(p > 2 && s >= 0 && s < p && v >= 1 && nmb > 0 && nmb % p == 0, "internal error",
           "interleaved schedule: stage %d of %d, %d chunks, %d micro batches", s, p, v, nmb);
  const int first = s == 0, last = s == p - 1, total = nmb * v;
  const int warmup = zt_pipe_warmup(p, s, v, nmb), remaining = total - warmup, all_warmup = nmb == p;
  builder b = {.steps = steps, .v = v, .nmb = nmb};
  int *mem = zt_malloc(sizeof(int) * (2 * (size_t)v + 4 * (size_t)total), "interleaved schedule");
  b.nin = mem;
  b.ngrad = mem + v;
  b.in_slot = mem + 2 * v;
  b.grad_slot = b.in_slot + total;
  b.free_slots = b.grad_slot + total;
  for (int i = 0; i < 2 * v; i++) mem[i] = 0;
  for (int i = 0; i < 2 * total; i++) b.in_slot[i] = -1;
  /* recv_forward for chunk 0 (nothing on the first stage) */
  zt_pipe_step *st = add(&b);
  if (!first) recv_input(&b, st, 0);
  for (int k = 0; k < warmup; k++) {
    st = add(&b);
    const int c = zt_pipe_chunk(p, v, k, 1), next = zt_pipe_chunk(p, v, k + 1, 1);
    forward(&b, st, c, zt_pipe_micro(p, v, k), !(first && c == 0));
    st->send_next = !(last && c == v - 1);
    if (!(first && next == 0) && k != total - 1) recv_input(&b, st, next);
    if (k == warmup - 1 && !all_warmup && !last) recv_grad(&b, st, v - 1);
  }
  for (int i = 0; i < remaining; i++) {
    const int fk = i + warmup, fc = zt_pipe_chunk(p, v, fk, 1), bc = zt_pipe_chunk(p, v, i, 0);
    st = add(&b);
    forward(&b, st, fc, zt_pipe_micro(p, v, fk), !(first && fc == 0));
    backward(&b, st, bc, zt_pipe_micro(p, v, i), !(last && bc == v - 1));
    st->send_next = !(last && fc == v - 1);
    st->send_prev = !(first && bc == 0);
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
    const int c = zt_pipe_chunk(p, v, k, 0), next = zt_pipe_chunk(p, v, k + 1, 0);
    backward(&b, st, c, zt_pipe_micro(p, v, k), !(last && c == v - 1));
    st->send_prev = !(first && c == 0);
    if (!(last && next == v - 1) && k != total - 1) recv_grad(&b, st, next);
  }
  free(mem);
  *slots = b.slots;
  return b.n;
}

int zt_pipe_1f1b(int p, int s, int nmb, char *ops) {
  const int warmup = p - s - 1 < nmb ? p - s - 1 : nmb;
  int n = 0;
  for (int i = 0; i < warmup; i++) ops[n++] = 'F';
  for (int i = warmup; i < nmb; i++) ops[n++] = 'F', ops[n++] = 'B';
  for (int i = 0; i < warmup; i++) ops[n++] = 'B';
  ops[n] = '\0';
  return n;
}

int zt_pipe_zbh1(int p, int s, int nmb, int exact, char *ops) {
  const int warmup = p - s - 1 < nmb ? p - s - 1 : nmb, steady = nmb - warmup, first = s == 0;
  int n = 0, waiting = 0;
  for (int i = 0; i < warmup; i++) ops[n++] = 'F';
  for (int i = 0; i < steady; i++) {
    ops[n++] = 'F';
    const int split = !first && (i < s || exact || i == steady - 1);
    ops[n++] = split ? 'b' : 'B';
    waiting += split;
    if (split && i >= s) ops[n++] = 'W', waiting--;
  }
  for (int i = 0; i < warmup; i++) {
    ops[n++] = first ? 'B' : 'b';
    if (!first) ops[n++] = 'W';
  }
  for (; waiting > 0; waiting--) ops[n++] = 'W';
  ops[n] = '\0';
  return n;
}
