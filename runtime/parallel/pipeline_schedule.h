/* Pipeline schedules as pure arithmetic (no MPI here; train/schedule.c runs them).
 * Megatron's interleaved pipeline schedule (schedules.py::forward_backward_pipelining_with_interleaving, the
 * batched point-to-point path without overlap): the steps one pipeline rank runs, each at most one forward and one
 * backward of a (model chunk, micro batch) followed by one batched exchange with the neighbouring stages.
 * 1F1B and the zero-bubble H1 schedule (DeepSpeed's ZeroBubbleH1Pipeline, --enable-zbh1-pipeline): the
 * computations one stage runs, in order. */
#ifndef ZT_PIPELINE_SCHEDULE_H
#define ZT_PIPELINE_SCHEDULE_H

/* Received tensors live in numbered buffers ("slots") from their receipt to the backward that uses them last (an
 * input is also the source of that backward's recompute); a slot is reused once free. */
typedef struct {
  int fwd_chunk, fwd_mb, fwd_slot;   /* the forward of this step (chunk -1: none); the slot of its input (-1: the
                                        embedding's chunk, which has no received input) */
  int bwd_chunk, bwd_mb;             /* the backward, after the forward (chunk -1: none) */
  int bwd_in_slot, bwd_grad_slot;    /* the slots of its input and of its output gradient (-1: none, the loss's
                                        chunk has no received gradient); both free after the backward */
  /* the exchange after the computation, posted at once (Megatron's batch_isend_irecv) */
  int send_next;                     /* 1: the forward's output goes to stage s+1 mod p */
  int send_prev;                     /* 1: the backward's input gradient goes to stage s-1 mod p */
  int recv_prev_chunk, recv_prev_mb, recv_prev_slot; /* the input of (chunk, mb) from stage s-1 mod p, or chunk -1 */
  int recv_next_chunk, recv_next_mb, recv_next_slot; /* the output gradient of (chunk, mb) from s+1 mod p, or -1 */
} zt_pipe_step;

/* Virtual micro step k (0 <= k < nmb * v, Megatron's microbatch_id) of p stages and v chunks: its model chunk,
 * (k mod p*v) / p for a forward and v - 1 minus that for a backward, and its micro batch, k / (p*v) * p + k mod p. */
int zt_pipe_chunk(int p, int v, int k, int forward);
int zt_pipe_micro(int p, int v, int k);
/* Warm-up forwards of stage s: all nmb * v when nmb == p, else min((p - s - 1) * 2 + (v - 1) * p, nmb * v). */
int zt_pipe_warmup(int p, int s, int v, int nmb);

/* Room zt_pipe_interleaved needs: 2 * nmb * v + 2 steps. */
int zt_pipe_max_steps(int v, int nmb);
/* Writes the steps of stage s (of p > 2 stages, v >= 1 chunks, nmb micro batches, a multiple of p) and returns
 * their count; *slots: the slots they use, the most received tensors held at once. Chunk c of stage s follows
 * chunk c of stage s-1 (chunk c-1 of stage p-1 when s = 0); every (chunk, micro batch) runs its forward once and
 * its backward once, micro batches in order within a chunk. */
int zt_pipe_interleaved(int p, int s, int v, int nmb, zt_pipe_step *steps, int *slots);

/* Megatron's 1F1B (forward_backward_pipelining_without_interleaving) on stage s of p over nmb micro batches, written
 * to ops (room for 2 nmb + 1) as a string of 'F' (a forward) and 'B' (a backward): min(p - s - 1, nmb) warm-up
 * forwards, then one forward and one backward in turn, then the remaining backwards. Returns its length. */
int zt_pipe_1f1b(int p, int s, int nmb, char *ops);
/* ZB-H1 on stage s of p over nmb micro batches, written to ops (room for 3 nmb + 1) as a string: 'F' a forward, 'B'
 * a whole backward, 'b' a backward's B pass (input and bias gradients; its weight gradients wait), 'W' the oldest
 * waiting weight pass. Forwards and backwards come in 1F1B's order (min(p - s - 1, nmb) warm-up forwards, then
 * one forward and one backward, then the remaining backwards). Stage 0 runs whole backwards; stage s > 0 runs the
 * first s steady backwards as 'b', then 'B' except the last steady one, which is 'b' 'W' (with exact semantics
 * every steady backward from the (s+1)-th is 'b' 'W'), each cool-down backward as 'b' 'W', and the waiting Ws at
 * the end. Returns the string's length. */
int zt_pipe_zbh1(int p, int s, int nmb, int exact, char *ops);

#endif
