/* Test driver for the monitors (runtime/profile/monitor.h): test_monitor.py feeds it events and
 * inputs and checks what it writes with independent Python readers.
 *   monitor_driver events <events.tsv> <csv_out> <csv_job> <tb_out> <tb_job> [rank world]
 *       each line "name<TAB>value<TAB>step"; value "i:<int>" goes through zt_monitor_write_int,
 *       anything else through strtod and zt_monitor_write; a line "FLUSH" calls zt_monitor_flush.
 *       Prints "pid <pid>" and the event file's directory listing is left to the caller.
 *   monitor_driver repr      reads 16-hex-digit double bit patterns on stdin, prints zt_format_pyfloat
 *   monitor_driver crc       reads hex byte strings on stdin, prints "<crc32c> <crc32c_sw> <masked>"
 *                            of the bytes from offset 1 (unaligned) */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/crc32c.h"
#include "runtime/base/error.h"
#include "runtime/profile/monitor.h"

static int run_events(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: monitor_driver events <tsv> <csv_out> <csv_job> <tb_out> <tb_job> [rank world]\n");
    return 2;
  }
  if (argc >= 9) zt_set_rank(atoi(argv[7]), atoi(argv[8]));
  zt_monitor_config cfg = {0};
  /* "-" disables a backend; "DEFAULT" leaves a string NULL (DeepSpeed's default). */
  cfg.csv_enabled = strcmp(argv[3], "-") != 0;
  cfg.csv_output_path = strcmp(argv[3], "DEFAULT") == 0 ? NULL : argv[3];
  cfg.csv_job_name = strcmp(argv[4], "DEFAULT") == 0 ? NULL : argv[4];
  cfg.tb_enabled = strcmp(argv[5], "-") != 0;
  cfg.tb_output_path = strcmp(argv[5], "DEFAULT") == 0 ? NULL : argv[5];
  cfg.tb_job_name = strcmp(argv[6], "DEFAULT") == 0 ? NULL : argv[6];
  FILE *in = fopen(argv[2], "r");
  if (!in) {
    perror(argv[2]);
    return 2;
  }
  printf("pid %ld\n", (long)getpid());
  fflush(stdout);
  zt_monitor *m = zt_monitor_open(&cfg);
  printf("enabled %d\n", zt_monitor_enabled(m));
  char line[4096];
  while (fgets(line, sizeof line, in)) {
    line[strcspn(line, "\n")] = 0;
    if (strcmp(line, "FLUSH") == 0) {
      zt_monitor_flush(m);
      continue;
    }
    char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (!t2) continue;
    *t1 = *t2 = 0;
    int64_t step = strtoll(t2 + 1, NULL, 10);
    if (strncmp(t1 + 1, "i:", 2) == 0)
      zt_monitor_write_int(m, line, strtoll(t1 + 3, NULL, 10), step);
    else
      zt_monitor_write(m, line, strtod(t1 + 1, NULL), step);
  }
  fclose(in);
  zt_monitor_close(m);
  return 0;
}

static int run_repr(void) {
  char line[128], out[64];
  while (fgets(line, sizeof line, stdin)) {
    uint64_t bits = strtoull(line, NULL, 16);
    double v;
    memcpy(&v, &bits, 8);
    zt_format_pyfloat(v, out);
    puts(out);
  }
  return 0;
}

static int run_crc(void) {
  static char line[1 << 16];
  static uint8_t buf[1 << 15];
  while (fgets(line, sizeof line, stdin)) {
    size_t n = strcspn(line, "\n") / 2;
    for (size_t i = 0; i < n; i++) {
      unsigned b;
      sscanf(line + 2 * i, "%2x", &b);
      buf[1 + i] = (uint8_t)b;
    }
    printf("%08x %08x %08x\n", zt_crc32c(0, buf + 1, n), zt_crc32c_sw(0, buf + 1, n), zt_crc32c_masked(buf + 1, n));
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "events") == 0) return run_events(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "repr") == 0) return run_repr();
  if (argc >= 2 && strcmp(argv[1], "crc") == 0) return run_crc();
  fprintf(stderr, "usage: monitor_driver events|repr|crc ...\n");
  return 2;
}
