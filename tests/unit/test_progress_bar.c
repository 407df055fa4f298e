/* The tools' progress bar (runtime/base/progress_bar.h): its text for known numbers (bytes and counts, known and
 * unknown totals, ETA), the H:MM:SS format, and when it is drawn (ZT_PROGRESS_BAR, a terminal). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/progress_bar.h"

static int pass, fail;
static void expect(const char *name, const char *got, const char *want) {
  if (strcmp(got, want) == 0) {
    printf("PASS %s: \"%s\"\n", name, got);
    pass++;
  } else {
    printf("FAIL %s: got \"%s\", want \"%s\"\n", name, got, want);
    fail++;
  }
}
static void check(const char *name, int ok) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", name);
  ok ? pass++ : fail++;
}

int main(void) {
  char out[192];
  const double MiB = 1048576.0;
  zt_progress_bar_format(out, sizeof out, "preprocess_data", 25 * MiB, 100 * MiB, "B", 5.0);
  expect("bytes, a quarter", out, "preprocess_data [#####...............]  25.0% 25.0 MB/100 MB 5.00 MB/s ETA 0:00:15");
  zt_progress_bar_format(out, sizeof out, "preprocess_data", 100 * MiB, 100 * MiB, "B", 20.0);
  expect("bytes, done", out, "preprocess_data [####################] 100.0% 100 MB/100 MB 5.00 MB/s ETA 0:00:00");
  zt_progress_bar_format(out, sizeof out, "preprocess_data", 3.5 * 1024 * MiB, -1, "B", 3725.0);
  expect("bytes, unknown total (.gz)", out, "preprocess_data 3.50 GB 985 KB/s elapsed 1:02:05");
  zt_progress_bar_format(out, sizeof out, "evaluate_zeroshot", 3, 40, "batches", 6.0);
  expect("counts", out, "evaluate_zeroshot [#...................]   7.5% 3/40 batches 0.50 batches/s ETA 0:01:14");
  zt_progress_bar_format(out, sizeof out, "x", 0, 40, "batches", 0.0);
  expect("nothing done yet", out, "x [....................]   0.0% 0/40 batches 0.00 batches/s ETA 0:00:00");
  zt_progress_bar_format(out, sizeof out, "x", 512, 0, "B", 1.0);
  expect("small byte counts", out, "x 512 B 512 B/s elapsed 0:00:01");

  zt_progress_hms(out, sizeof out, 59.9);
  expect("hms 59.9 s", out, "0:00:59");
  zt_progress_hms(out, sizeof out, 86400 + 3723);
  expect("hms 1 day", out, "1 day, 1:02:03");
  zt_progress_hms(out, sizeof out, 2 * 86400);
  expect("hms 2 days", out, "2 days, 0:00:00");
  zt_progress_hms(out, sizeof out, -5);
  expect("hms negative", out, "0:00:00");

  setenv("ZT_PROGRESS_BAR", "0", 1);
  check("ZT_PROGRESS_BAR=0: no bar", zt_progress_bar_start("x", 10, "B") == NULL);
  setenv("ZT_PROGRESS_BAR", "1", 1);
  zt_progress_bar *b = zt_progress_bar_start("x", 10, "B");
  check("ZT_PROGRESS_BAR=1: a bar", b != NULL);
  zt_progress_bar_update(b, 5);
  zt_progress_bar_finish(b, 10);
  unsetenv("ZT_PROGRESS_BAR");
  if (!isatty(2)) check("stderr not a terminal: no bar", zt_progress_bar_start("x", 10, "B") == NULL);
  zt_progress_bar_update(NULL, 1);
  zt_progress_bar_finish(NULL, 1);
  check("NULL bar accepted", 1);
  printf("%d passed, %d failed\n", pass, fail);
  return fail != 0;
}
