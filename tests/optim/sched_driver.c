/* Test driver for runtime/optim/ds_lr_schedules: builds a DeepSpeed scheduler from the command line
 *   sched_driver <Kind> <base_lr> <steps> [key=value ...]
 * (keys are DeepSpeed's params names; optional beta1=/beta2= give the optimizer's configured betas),
 * then prints one line per state "t lr beta1 beta2" from the constructor (t = -1) through `steps`
 * calls of step(), with %.17g. A line "restore t lr beta1 beta2" checks state/restore at the middle, a line
 * "restore0 ..." a restore to the constructed state.
 * The oracle is test_ds_lr_schedules.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/optim/ds_lr_schedules.h"

static void set_param(zt_ds_sched_params *p, const char *key, const char *val, double *b1, double *b2) {
  double d = strtod(val, NULL);
  struct { const char *name; double *field; } dbl[] = {
    {"lr_range_test_min_lr", &p->lr_range_test_min_lr}, {"lr_range_test_step_size", &p->lr_range_test_step_size},
    {"lr_range_test_step_rate", &p->lr_range_test_step_rate}, {"cycle_min_lr", &p->cycle_min_lr},
    {"cycle_max_lr", &p->cycle_max_lr}, {"decay_lr_rate", &p->decay_lr_rate},
    {"cycle_first_step_size", &p->cycle_first_step_size}, {"cycle_second_step_size", &p->cycle_second_step_size},
    {"decay_step_size", &p->decay_step_size}, {"cycle_min_mom", &p->cycle_min_mom},
    {"cycle_max_mom", &p->cycle_max_mom}, {"decay_mom_rate", &p->decay_mom_rate},
    {"warmup_min_lr", &p->warmup_min_lr}, {"warmup_max_lr", &p->warmup_max_lr},
    {"warmup_num_steps", &p->warmup_num_steps}, {"total_num_steps", &p->total_num_steps},
    {"warmup_min_ratio", &p->warmup_min_ratio}, {"cos_min_ratio", &p->cos_min_ratio},
    {"beta1", b1}, {"beta2", b2},
  };
  for (size_t i = 0; i < sizeof(dbl) / sizeof(dbl[0]); i++)
    if (strcmp(key, dbl[i].name) == 0) { *dbl[i].field = d; return; }
  if (strcmp(key, "lr_range_test_staircase") == 0) { p->lr_range_test_staircase = atoi(val); return; }
  if (strcmp(key, "cycle_momentum") == 0) { p->cycle_momentum = atoi(val); return; }
  if (strcmp(key, "last_batch_iteration") == 0) { p->last_batch_iteration = atoll(val); return; }
  if (strcmp(key, "cycle_first_stair_count") == 0) { p->cycle_first_stair_count = atoi(val); return; }
  if (strcmp(key, "cycle_second_stair_count") == 0) { p->cycle_second_stair_count = atoi(val); return; }
  if (strcmp(key, "warmup_type") == 0) { snprintf(p->warmup_type, sizeof(p->warmup_type), "%s", val); return; }
  zt_fatal("sched_driver", "unknown parameter '%s'", key);
}

static void print_state(const char *tag, const zt_ds_sched *s, double b1, double b2) {
  zt_ds_sched_mom(s, &b1, &b2);
  printf("%s %lld %.17g %.17g %.17g\n", tag, (long long)zt_ds_sched_state(s), zt_ds_sched_lr(s), b1, b2);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s <Kind> <base_lr> <steps> [key=value ...]\n", argv[0]);
    return 2;
  }
  int kind = zt_ds_sched_kind_from_name(argv[1]);
  zt_check(kind >= 0, "sched_driver", "unknown scheduler '%s'", argv[1]);
  double base_lr = strtod(argv[2], NULL);
  int steps = atoi(argv[3]);
  double b1 = 0.9, b2 = 0.999;
  zt_ds_sched_params p;
  zt_ds_sched_defaults((zt_ds_sched_kind)kind, &p);
  for (int i = 4; i < argc; i++) {
    char key[128];
    const char *eq = strchr(argv[i], '=');
    zt_check(eq && (size_t)(eq - argv[i]) < sizeof(key), "sched_driver", "bad argument '%s'", argv[i]);
    memcpy(key, argv[i], (size_t)(eq - argv[i]));
    key[eq - argv[i]] = 0;
    set_param(&p, key, eq + 1, &b1, &b2);
  }
  if (strcmp(argv[1], "OneCycle") == 0 && getenv("SCHED_NO_BETAS")) {
    zt_ds_sched s0;
    zt_ds_sched_init(&s0, (zt_ds_sched_kind)kind, &p, base_lr);
    zt_ds_sched_disable_momentum(&s0, "SGD");
    print_state("state", &s0, b1, b2);
    return 0;
  }
  zt_ds_sched s;
  zt_ds_sched_init(&s, (zt_ds_sched_kind)kind, &p, base_lr);
  print_state("state", &s, b1, b2);
  int64_t mid_state = -1;
  for (int i = 0; i < steps; i++) {
    zt_ds_sched_step(&s);
    print_state("state", &s, b1, b2);
    if (i == steps / 2) mid_state = zt_ds_sched_state(&s);
  }
  /* a fresh scheduler restored from the middle state must give that state's values */
  zt_ds_sched r;
  zt_ds_sched_init(&r, (zt_ds_sched_kind)kind, &p, base_lr);
  zt_ds_sched_restore(&r, mid_state);
  print_state("restore", &r, b1, b2);
  /* and one restored to the state it was constructed in (a checkpoint saved before any step was applied) */
  zt_ds_sched r0;
  zt_ds_sched_init(&r0, (zt_ds_sched_kind)kind, &p, base_lr);
  zt_ds_sched_restore(&r0, p.last_batch_iteration);
  print_state("restore0", &r0, b1, b2);
  return 0;
}
