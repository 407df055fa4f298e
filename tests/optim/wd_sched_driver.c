/* Test driver for the weight-decay increment of runtime/optim/lr_schedule (Megatron's get_wd):
 *   wd_sched_driver <constant|linear|cosine> <start_wd> <end_wd> <wd_incr_steps> <increment> <steps>
 * prints "num_steps wd" (%.17g) before the first step and after each of `steps` steps of `increment` samples,
 * the values Megatron's OptimizerParamScheduler.step() writes into each parameter group. The oracle is
 * test_wd_schedule.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/optim/lr_schedule.h"

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s <constant|linear|cosine> <start_wd> <end_wd> <wd_incr_steps> <increment> <steps>\n",
            argv[0]);
    return 2;
  }
  static const char *const styles[] = {"constant", "linear", "cosine"};
  int style = -1;
  for (int k = 0; k < 3; k++)
    if (strcmp(argv[1], styles[k]) == 0) style = k;
  zt_check(style >= 0, "wd_sched_driver", "unknown style '%s'", argv[1]);
  /* a learning-rate schedule around it, so that stepping runs as in the engine */
  zt_lr_schedule s = {.max_lr = 1e-3, .min_lr = 1e-4, .warmup_steps = 0, .decay_steps = 1 << 30,
                      .style = ZT_DECAY_LINEAR, .start_wd = strtod(argv[2], NULL), .end_wd = strtod(argv[3], NULL),
                      .wd_incr_steps = strtoll(argv[4], NULL, 10), .wd_style = (zt_wd_style)style};
  const int64_t increment = strtoll(argv[5], NULL, 10);
  const int steps = atoi(argv[6]);
  printf("%lld %.17g\n", (long long)s.num_steps, zt_wd_get(&s));
  for (int i = 0; i < steps; i++) {
    zt_lr_step(&s, increment);
    printf("%lld %.17g\n", (long long)s.num_steps, zt_wd_get(&s));
  }
  return 0;
}
