/* Regression test of a long fuzz run's out-of-memory finding (fuzz_evaluate_mc, docs/reliability.md): a harness task
 * file refused midway (here: 300 good piqa documents, then a line that is not JSON) must leave nothing allocated once
 * zt_mc_free runs after the refusal was caught by a fatal hook (as a fuzzer or a library user catches it). Loads the
 * file 3000 times under the hook and checks that the resident set grew by less than 16 MiB (before the fix each
 * refusal kept the documents array, each document's strings and the file's bytes: about 3000 x 60 KB = 180 MB). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evaluate/harness_tasks.h"
#include "runtime/base/error.h"

static jmp_buf jmp;
static void hook(int code) { (void)code; longjmp(jmp, 1); }

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) {
    fprintf(stderr, "cannot read /proc/self/statm\n");
    exit(1);
  }
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(void) {
  char path[] = "/tmp/zt_mc_leak_XXXXXX";
  const int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) return 1;
  for (int i = 0; i < 300; i++)
    fprintf(f, "{\"goal\": \"goal number %d of a long enough text\", \"sol1\": \"first solution %d\", \"sol2\": "
               "\"second solution %d\", \"label\": %d}\n", i, i, i, i & 1);
  fprintf(f, "this line is not JSON\n");
  fclose(f);
  static zt_mc_task t; /* static: its contents survive the longjmp */
  long before = 0;
  fflush(stderr); /* the 3000 refusal messages go to /dev/null */
  const int saved = dup(2), null = open("/dev/null", O_WRONLY);
  if (saved < 0 || null < 0 || dup2(null, 2) < 0) return 1;
  int refused = 0;
  for (int k = 0; k < 3000; k++) {
    if (k == 100) before = rss_kib(); /* after the allocator's arenas settle */
    if (setjmp(jmp) == 0) {
      zt_set_fatal_hook(hook);
      zt_mc_load(&t, "piqa", path, "--task-data");
    } else {
      refused++;
    }
    zt_mc_free(&t);
  }
  fflush(stderr);
  dup2(saved, 2);
  close(null), close(saved);
  unlink(path);
  const long grew = rss_kib() - before;
  const int ok = refused == 3000 && grew < 16 * 1024;
  printf("%s refused task file loaded 3000 times: %d refusals, resident set grew by %ld KiB (limit 16384)\n",
         ok ? "PASS" : "FAIL", refused, grew);
  printf("%d passed, %d failed\n", ok, !ok);
  return ok ? 0 : 1;
}
