/* Drives zt_loss_scaler over an overflow sequence for the oracle test:
 *   scaler_driver <kind> <init_scale> <window> <hysteresis> <consecutive> <min_scale> <flags>
 * kind: static | ds_dynamic | ds_fused | megatron; flags: a string of 0/1 (1 = overflow).
 * Prints one line per iteration: "<skip> <cur_scale> <cur_hysteresis> <event>", or "AT_MIN" and stops
 * where DeepSpeed would raise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/optim/loss_scaler.h"

int main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: scaler_driver kind init window hysteresis consecutive min flags\n");
    return 2;
  }
  zt_loss_scaler s;
  const char *k = argv[1];
  if (!strcmp(k, "static")) {
    zt_loss_scaler_init_static(&s, atof(argv[2]));
  } else {
    zt_scaler_kind kind = !strcmp(k, "ds_dynamic") ? ZT_SCALER_DS_DYNAMIC
                          : !strcmp(k, "ds_fused") ? ZT_SCALER_DS_FUSED : ZT_SCALER_MEGATRON;
    zt_loss_scaler_init_dynamic(&s, kind, atof(argv[2]), atoll(argv[3]), atoi(argv[4]), atoi(argv[5]), atof(argv[6]));
  }
  static const char *const ev[] = {"kept", "reduced", "hysteresis", "grew", "at_min"};
  for (const char *f = argv[7]; *f; f++) {
    int skip = zt_loss_scaler_update(&s, *f == '1');
    if (s.event == ZT_SCALE_AT_MIN) {
      printf("AT_MIN\n");
      return 0;
    }
    printf("%d %.17g %d %s\n", skip, s.cur_scale, s.cur_hysteresis, ev[s.event]);
  }
  return 0;
}
