/* Test driver for train/curriculum.c and the curriculum_learning block of train/ds_config.c. Usage:
 *   curriculum_schedule_tool CONFIG FIRST LAST
 *       loads the ds_config (dies with the loader's error) and prints "t get_difficulty(t) update_difficulty(t)" for
 *       t = FIRST..LAST, the scheduler stepped in order from its initial state (min_difficulty)
 *   curriculum_schedule_tool --check CONFIG SEQ_LENGTH TP SEQUENCE_PARALLEL LAST
 *       prints "ok" or "refused: <reason>" from zt_curriculum_check over steps 1..LAST */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "train/curriculum.h"
#include "train/ds_config.h"

int main(int argc, char **argv) {
  if (argc == 7 && !strcmp(argv[1], "--check")) {
    zt_ds_config c;
    zt_ds_config_load(&c, argv[2]);
    zt_check(c.curriculum.enabled, "curriculum_schedule_tool", "%s: curriculum_learning is not enabled", argv[2]);
    char err[512];
    if (zt_curriculum_check(&c.curriculum, atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), 1, atoll(argv[6]), err,
                            sizeof err))
      printf("ok\n");
    else
      printf("refused: %s\n", err);
    zt_ds_config_free(&c);
    return 0;
  }
  zt_check(argc == 4, "usage", "curriculum_schedule_tool CONFIG FIRST LAST | --check CONFIG SEQ TP SP LAST");
  zt_ds_config c;
  zt_ds_config_load(&c, argv[1]);
  if (!c.curriculum.enabled) {
    printf("disabled\n");
    zt_ds_config_free(&c);
    return 0;
  }
  zt_curriculum s;
  zt_curriculum_init(&s, &c.curriculum);
  const long long first = atoll(argv[2]), last = atoll(argv[3]);
  for (long long t = first; t <= last; t++) {
    const long long g = (long long)zt_curriculum_difficulty(&c.curriculum, t);
    printf("%lld %lld %lld\n", t, g, (long long)zt_curriculum_update(&s, t));
  }
  zt_ds_config_free(&c);
  return 0;
}
