/* Test driver for runtime/parallel/pipeline_schedule: prints the interleaved schedule of every stage for the
 * "p v nmb" lines read from stdin, for test_pipeline_schedule.py to compare against its transcription of
 * Megatron's forward_backward_pipelining_with_interleaving.
 * Output per schedule:
 *   P p v nmb
 *   T stage nsteps warmup slots
 *   X fwd_chunk fwd_mb fwd_slot bwd_chunk bwd_mb bwd_in_slot bwd_grad_slot send_next send_prev
 *     recv_prev_chunk recv_prev_mb recv_prev_slot recv_next_chunk recv_next_mb recv_next_slot
 *   E
 * With the argument "zbh1": reads "p nmb exact" lines and prints, per stage, "Z stage ops": zt_pipe_zbh1's string,
 * or zt_pipe_1f1b's where exact is -1, for test_zbh1_schedule.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/parallel/pipeline_schedule.h"

static int zbh1(void) {
  int p, nmb, exact;
  while (scanf("%d %d %d", &p, &nmb, &exact) == 3) {
    char *ops = zt_malloc((size_t)3 * nmb + 1, "schedule_tool");
    for (int s = 0; s < p; s++) {
      if (exact < 0) zt_pipe_1f1b(p, s, nmb, ops);
      else zt_pipe_zbh1(p, s, nmb, exact, ops);
      printf("Z %d %s\n", s, ops);
    }
    free(ops);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "zbh1")) return zbh1();
  int p, v, nmb;
  while (scanf("%d %d %d", &p, &v, &nmb) == 3) {
    printf("P %d %d %d\n", p, v, nmb);
    zt_pipe_step *steps = zt_malloc(sizeof(zt_pipe_step) * (size_t)zt_pipe_max_steps(v, nmb), "schedule_tool");
    for (int s = 0; s < p; s++) {
      int slots;
      const int n = zt_pipe_interleaved(p, s, v, nmb, steps, &slots);
      printf("T %d %d %d %d\n", s, n, zt_pipe_warmup(p, s, v, nmb), slots);
      for (int i = 0; i < n; i++) {
        const zt_pipe_step *x = &steps[i];
        printf("X %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\n", x->fwd_chunk, x->fwd_mb, x->fwd_slot, x->bwd_chunk,
               x->bwd_mb, x->bwd_in_slot, x->bwd_grad_slot, x->send_next, x->send_prev, x->recv_prev_chunk,
               x->recv_prev_mb, x->recv_prev_slot, x->recv_next_chunk, x->recv_next_mb, x->recv_next_slot);
      }
    }
    printf("E\n");
    free(steps);
  }
  return 0;
}
