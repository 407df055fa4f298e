/* Test driver of train/progress.c: prints zt_progress_eta for each "elapsed train_seconds done left" argument
 * quadruple, one line each, for test_tb_megatron.py to compare with Python's datetime.timedelta. */
#include <stdio.h>
#include <stdlib.h>

#include "train/progress.h"

int main(int argc, char **argv) {
  for (int i = 1; i + 3 < argc; i += 4) {
    char out[128];
    zt_progress_eta(out, sizeof out, strtod(argv[i], NULL), strtod(argv[i + 1], NULL), strtoll(argv[i + 2], NULL, 10),
                    strtoll(argv[i + 3], NULL, 10));
    printf("%s\n", out);
  }
  return 0;
}
