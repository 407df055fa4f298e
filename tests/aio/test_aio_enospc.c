/* Full disk: mounts a 4 MiB tmpfs (kernel >= 6.6 tmpfs accepts O_DIRECT), checks that a write that fits
 * round-trips, then that a sync and an async write of 8 MiB fail with ENOSPC and a message naming the file
 * and the bytes written, which must be between 1 byte and the file system's 4 MiB. Needs the right to
 * mount (root / CAP_SYS_ADMIN); otherwise prints SKIP with the reason and exits 77. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "runtime/aio/aio.h"
#include "tests/unit/testutil.h"

static char g_dir[512];

static void cleanup(void) {
  umount2(g_dir, MNT_DETACH);
  rmdir(g_dir);
}

/* Checks the failure message and returns the "N of M bytes written" count N (or -1). */
static long long check_enospc(const char *name, int ret, zt_aio_handle *h, const char *path, size_t n) {
  const char *e = zt_aio_error(h);
  printf("  message: %s\n", e);
  char want[64];
  snprintf(want, sizeof want, " of %zu bytes written", n);
  const char *p = strstr(e, want);
  long long written = -1;
  if (p) {
    const char *q = p;
    while (q > e && q[-1] >= '0' && q[-1] <= '9') q--;
    written = atoll(q);
  }
  tu_check(ret == -1 && strstr(e, "no space left on device") && strstr(e, path) && p && written > 0 &&
           written <= 4 * 1048576, name, "ret %d written %lld: %s", ret, written, e);
  return written;
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/zt_aio_enospc_XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  if (mount("tmpfs", g_dir, "tmpfs", 0, "size=4m") != 0) {
    printf("SKIP: cannot mount a 4 MiB tmpfs on %s to fill it: %s (needs root or CAP_SYS_ADMIN)\n", g_dir,
           strerror(errno));
    rmdir(g_dir);
    return 77;
  }
  char probe[700];
  snprintf(probe, sizeof probe, "%s/probe", g_dir);
  int fd = open(probe, O_WRONLY | O_CREAT | O_DIRECT, 0600);
  if (fd < 0) {
    printf("SKIP: tmpfs here does not accept O_DIRECT (%s; needs Linux >= 6.6)\n", strerror(errno));
    cleanup();
    return 77;
  }
  close(fd);
  unlink(probe);

  zt_aio_config c;
  zt_aio_config_defaults(&c);
  c.block_size = 1048576;
  c.queue_depth = 4;
  c.intra_op_parallelism = 2;
  char err[256];
  zt_aio_handle *h = zt_aio_handle_create(&c, err, sizeof err);
  if (!h) {
    printf("FAIL handle: %s\n", err);
    cleanup();
    return 1;
  }
  size_t big = 8 * 1048576, small = 1048576;
  unsigned char *buf = zt_aio_alloc(big, 0, err, sizeof err), *back = zt_aio_alloc(small, 0, err, sizeof err);
  for (size_t i = 0; i < big; i++) buf[i] = (unsigned char)(i * 2654435761u >> 24);
  char fits[700], full[700], full2[700];
  snprintf(fits, sizeof fits, "%s/fits.swp", g_dir);
  snprintf(full, sizeof full, "%s/full.swp", g_dir);
  snprintf(full2, sizeof full2, "%s/full_async.swp", g_dir);
  int w = zt_aio_sync_pwrite(h, buf, small, fits, 0);
  int r = zt_aio_sync_pread(h, back, small, fits, 0);
  tu_check(w == 1 && r == 1 && memcmp(buf, back, small) == 0, "tmpfs: a 1 MiB write fits and reads back",
           "%d %d %s", w, r, zt_aio_error(h));
  unlink(fits);
  check_enospc("ENOSPC: sync write of 8 MiB on a 4 MiB tmpfs", zt_aio_sync_pwrite(h, buf, big, full, 0), h, full, big);
  unlink(full);
  int a = zt_aio_async_pwrite(h, buf, big, full2, 0);
  tu_check(a == 0, "ENOSPC: the async write is queued", "%d %s", a, zt_aio_error(h));
  check_enospc("ENOSPC: async write of 8 MiB fails at wait()", zt_aio_wait(h), h, full2, big);
  unlink(full2);
  /* after freeing the space the handle works again */
  w = zt_aio_sync_pwrite(h, buf, small, fits, 0);
  tu_check(w == 1, "tmpfs: the handle works again once space is freed", "%d %s", w, zt_aio_error(h));
  unlink(fits);
  zt_aio_free(buf, big, 0);
  zt_aio_free(back, small, 0);
  zt_aio_handle_destroy(h);
  cleanup();
  return tu_finish();
}
