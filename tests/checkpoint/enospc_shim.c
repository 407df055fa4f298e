/* Test shim (LD_PRELOAD) that simulates a full disk for checkpoint saves without root or a small file system:
 * writes to files whose path contains ZT_ENOSPC_DIR fail with ENOSPC once ZT_ENOSPC_BYTES bytes have been
 * written to such files in this process (a partial write up to the limit first, as a real full disk does).
 * Other files (MPI's shared memory, logs) are untouched. Used by test_full_disk.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static long long g_written = 0;

/* Whether fd is a file under ZT_ENOSPC_DIR. */
static int watched(int fd) {
  const char *dir = getenv("ZT_ENOSPC_DIR");
  if (!dir || !*dir || !getenv("ZT_ENOSPC_BYTES")) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t k = readlink(link, path, sizeof path - 1);
  if (k <= 0) return 0;
  path[k] = '\0';
  return strstr(path, dir) != NULL;
}

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);

/* The bytes of n a watched file may still take; -1 (errno ENOSPC) when none. */
static ssize_t budget(int fd, size_t n, size_t *take) {
  *take = n;
  if (n == 0 || !watched(fd)) return 0;
  const long long left = atoll(getenv("ZT_ENOSPC_BYTES")) - g_written;
  if (left <= 0) {
    errno = ENOSPC;
    return -1;
  }
  if ((long long)n > left) *take = (size_t)left;
  return 1;
}

ssize_t write(int fd, const void *buf, size_t n) {
  static write_fn real = NULL;
  if (!real) real = (write_fn)dlsym(RTLD_NEXT, "write");
  size_t take;
  const ssize_t w = budget(fd, n, &take);
  if (w < 0) return -1;
  const ssize_t r = real(fd, buf, take);
  if (w && r > 0) g_written += r;
  return r;
}

static ssize_t do_pwrite(pwrite_fn real, int fd, const void *buf, size_t n, off_t off) {
  size_t take;
  const ssize_t w = budget(fd, n, &take);
  if (w < 0) return -1;
  const ssize_t r = real(fd, buf, take, off);
  if (w && r > 0) g_written += r;
  return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  static pwrite_fn real = NULL;
  if (!real) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
  return do_pwrite(real, fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
  static pwrite_fn real = NULL;
  if (!real) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
  return do_pwrite(real, fd, buf, n, off);
}
