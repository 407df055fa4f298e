/* runtime/base/file.c (zt_read_file, the one whole-file reader of the user-file parsers): a regular file of every
 * size around its one-read boundary, an empty file, a pipe longer than the 64 KiB first buffer (a process
 * substitution such as --deepspeed_config <(...)), bytes including NULs kept exactly with the NUL after them, and
 * the failures (a missing file: ENOENT; a directory: EISDIR) returning NULL. Prints PASS/FAIL lines. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "runtime/base/file.h"
#include "tests/unit/testutil.h"

static char dir[] = "/tmp/zt_read_file_XXXXXX";

/* bytes i of a test file: every value, NULs included */
static unsigned char byte_at(size_t i) { return (unsigned char)(i * 131u + (i >> 8)); }

static int same(const char *buf, size_t len, size_t want) {
  if (len != want || buf[len] != 0) return 0;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)buf[i] != byte_at(i)) return 0;
  return 1;
}

int main(void) {
  if (!mkdtemp(dir)) return perror("mkdtemp"), 1;
  char path[256];
  const size_t sizes[] = {0, 1, 2, 4095, 65535, 65536, 65537, 1 << 20, (1 << 20) + 3};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    snprintf(path, sizeof path, "%s/f%zu", dir, k);
    FILE *f = fopen(path, "wb");
    for (size_t i = 0; i < sizes[k]; i++) fputc(byte_at(i), f);
    fclose(f);
    size_t len = 12345;
    char *b = zt_read_file(path, &len);
    char name[64];
    snprintf(name, sizeof name, "regular file of %zu bytes", sizes[k]);
    tu_check(b && same(b, len, sizes[k]), name, "got %s, %zu bytes", b ? "a buffer" : "NULL", len);
    free(b);
  }
  /* a pipe of 300000 bytes (five times the first buffer): a FIFO the child writes */
  snprintf(path, sizeof path, "%s/fifo", dir);
  const size_t piped = 300000;
  if (mkfifo(path, 0600) == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      FILE *f = fopen(path, "wb");
      for (size_t i = 0; i < piped; i++) fputc(byte_at(i), f);
      fclose(f);
      _exit(0);
    }
    size_t len = 0;
    char *b = zt_read_file(path, &len);
    int st;
    waitpid(pid, &st, 0);
    tu_check(b && same(b, len, piped), "a pipe of 300000 bytes (the buffer grows to EOF)", "got %zu bytes", len);
    free(b);
  } else {
    tu_check(0, "a pipe of 300000 bytes", "mkfifo: %s", strerror(errno));
  }
  snprintf(path, sizeof path, "%s/missing", dir);
  errno = 0;
  char *b = zt_read_file(path, NULL);
  tu_check(!b && errno == ENOENT, "a missing file: NULL, errno ENOENT", "errno %d", errno);
  errno = 0;
  b = zt_read_file(dir, NULL);
  tu_check(!b && errno == EISDIR, "a directory: NULL, errno EISDIR", "errno %d (%s)", errno, strerror(errno));
  free(b);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  printf("%d passed, %d failed\n", tu_passed, tu_failed);
  return tu_failed != 0;
}
