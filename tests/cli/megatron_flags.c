/* Test driver: every flag of Megatron-DeepSpeed's arguments.py (megatron_flags.txt, one per line, # comments) must
 * be known to zerotron's argument parser, accepted or refused by name (zt_args_flag_status). Prints the unknown
 * ones and exits 1 when there are any. Usage: megatron_flags FILE */
#include <stdio.h>
#include <string.h>

#include "train/args.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: megatron_flags FILE\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "r");
  if (!f) {
    fprintf(stderr, "megatron_flags: cannot read %s\n", argv[1]);
    return 2;
  }
  char line[256];
  int n = 0, accepted = 0, unknown = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0] || line[0] == '#') continue;
    n++;
    const int s = zt_args_flag_status(line);
    accepted += s == 1;
    if (s == 0) printf("FAIL unknown to zerotron: %s\n", line), unknown++;
  }
  fclose(f);
  printf("%s %d flags of Megatron-DeepSpeed's arguments.py: %d accepted, %d refused by name, %d unknown\n",
         unknown ? "FAIL" : "PASS", n, accepted, n - accepted - unknown, unknown);
  return unknown != 0 || n == 0;
}
