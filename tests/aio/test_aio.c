/* DeepNVMe handle tests (runtime/aio): sync and async write/read round trips over several block sizes,
 * queue depths, engines and intra_op_parallelism, compared byte for byte with the source and with an
 * independent plain read(); file offsets; file sizes; and the error messages for misaligned sizes,
 * offsets and buffers, indivisible sizes, unwritable paths and short reads.
 * Usage: test_aio [dir]  (default: a fresh directory under $TMPDIR or /tmp; it must support O_DIRECT) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/aio/aio.h"
#include "tests/unit/testutil.h"

static char g_dir[512];

static void fill_bytes(unsigned char *p, size_t n, uint64_t seed) {
  tu_rng r = {seed};
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = tu_next(&r);
    size_t k = n - i < 8 ? n - i : 8;
    memcpy(p + i, &v, k);
  }
}

/* Independent reader: plain open/read without O_DIRECT. Returns bytes read or -1. */
static ssize_t plain_read(const char *path, unsigned char *out, size_t cap) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  size_t got = 0;
  ssize_t r;
  while (got < cap && (r = read(fd, out + got, cap - got)) > 0) got += (size_t)r;
  close(fd);
  return (ssize_t)got;
}

static long long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static zt_aio_handle *make(int64_t bs, int qd, int T, int overlap, int single) {
  zt_aio_config c;
  zt_aio_config_defaults(&c);
  c.block_size = bs;
  c.queue_depth = qd;
  c.intra_op_parallelism = T;
  c.overlap_events = overlap;
  c.single_submit = single;
  char err[512];
  zt_aio_handle *h = zt_aio_handle_create(&c, err, sizeof err);
  if (!h) {
    printf("FAIL handle create: %s\n", err);
    exit(1);
  }
  return h;
}

static void round_trip(int64_t bs, int qd, int T, int overlap, int single, size_t nbytes) {
  char name[160], path[700];
  snprintf(name, sizeof name, "rt bs=%lld qd=%d T=%d overlap=%d single=%d n=%zu", (long long)bs, qd, T, overlap,
           single, nbytes);
  snprintf(path, sizeof path, "%s/rt_%lld_%d_%d_%d_%d.swp", g_dir, (long long)bs, qd, T, overlap, single);
  zt_aio_handle *h = make(bs, qd, T, overlap, single);
  char err[256];
  unsigned char *src = zt_aio_alloc(nbytes, 0, err, sizeof err), *dst = zt_aio_alloc(nbytes, 1, err, sizeof err);
  if (!dst) dst = zt_aio_alloc(nbytes, 0, err, sizeof err); /* mlock may be limited; the locked path is optional */
  unsigned char *plain = malloc(nbytes + 4096);
  fill_bytes(src, nbytes, (uint64_t)nbytes * 31 + (uint64_t)bs);
  int w = zt_aio_sync_pwrite(h, src, nbytes, path, 0);
  char n2[200];
  snprintf(n2, sizeof n2, "%s: sync write returns 1", name);
  tu_check(w == 1, n2, "got %d: %s", w, zt_aio_error(h));
  snprintf(n2, sizeof n2, "%s: file size", name);
  tu_check(file_size(path) == (long long)nbytes, n2, "%lld != %zu", file_size(path), nbytes);
  ssize_t pr = plain_read(path, plain, nbytes + 4096);
  snprintf(n2, sizeof n2, "%s: plain read() equals source", name);
  tu_check(pr == (ssize_t)nbytes && memcmp(plain, src, nbytes) == 0, n2, "read %zd bytes", pr);
  int r = zt_aio_sync_pread(h, dst, nbytes, path, 0);
  snprintf(n2, sizeof n2, "%s: sync read equals source", name);
  tu_check(r == 1 && memcmp(dst, src, nbytes) == 0, n2, "ret %d %s", r, zt_aio_error(h));
  /* async: overwrite with new content, then read back into a zeroed buffer */
  fill_bytes(src, nbytes, (uint64_t)nbytes * 77 + 5);
  memset(dst, 0, nbytes);
  int a = zt_aio_async_pwrite(h, src, nbytes, path, 0);
  int wa = zt_aio_wait(h);
  int b = zt_aio_async_pread(h, dst, nbytes, path, 0);
  int wb = zt_aio_wait(h);
  snprintf(n2, sizeof n2, "%s: async write+read (wait returns 1 each)", name);
  tu_check(a == 0 && wa == 1 && b == 0 && wb == 1 && memcmp(dst, src, nbytes) == 0, n2,
           "async %d wait %d async %d wait %d: %s", a, wa, b, wb, zt_aio_error(h));
  zt_aio_free(src, nbytes, 0);
  zt_aio_free(dst, nbytes, 0);
  free(plain);
  unlink(path);
  zt_aio_handle_destroy(h);
}

/* Several async requests in flight at once, to different files and to two ranges of one file. */
static void many_async(void) {
  zt_aio_handle *h = make(8192, 4, 2, 1, 0);
  enum { K = 5 };
  size_t n = 6 * 8192 + 2 * 4096; /* not a multiple of block_size */
  char err[256], path[K][700];
  unsigned char *bufs[K], *back[K];
  for (int i = 0; i < K; i++) {
    snprintf(path[i], sizeof path[i], "%s/many_%d.swp", g_dir, i);
    bufs[i] = zt_aio_alloc(n, 0, err, sizeof err);
    back[i] = zt_aio_alloc(n, 0, err, sizeof err);
    fill_bytes(bufs[i], n, 1000 + (uint64_t)i);
    if (zt_aio_async_pwrite(h, bufs[i], n, path[i], 0) != 0) printf("queue failed: %s\n", zt_aio_error(h));
  }
  int w = zt_aio_wait(h);
  tu_check(w == K, "async: wait() counts 5 queued writes", "got %d: %s", w, zt_aio_error(h));
  for (int i = 0; i < K; i++) zt_aio_async_pread(h, back[i], n, path[i], 0);
  int r = zt_aio_wait(h);
  int same = 1;
  for (int i = 0; i < K; i++) same &= memcmp(bufs[i], back[i], n) == 0;
  tu_check(r == K && same, "async: 5 reads in flight equal their sources", "wait %d same %d", r, same);
  tu_check(zt_aio_wait(h) == 0, "async: wait() with nothing queued returns 0", "%s", "");
  /* file offsets: two halves written separately at offsets 0 and n, read back as one request */
  char off_path[700];
  snprintf(off_path, sizeof off_path, "%s/offsets.swp", g_dir);
  unlink(off_path);
  unsigned char *whole = zt_aio_alloc(2 * n, 0, err, sizeof err);
  zt_aio_async_pwrite(h, bufs[1], n, off_path, (int64_t)n);
  zt_aio_async_pwrite(h, bufs[0], n, off_path, 0);
  int wo = zt_aio_wait(h);
  int ro = zt_aio_sync_pread(h, whole, 2 * n, off_path, 0);
  tu_check(wo == 2 && ro == 1 && memcmp(whole, bufs[0], n) == 0 && memcmp(whole + n, bufs[1], n) == 0 &&
           file_size(off_path) == (long long)(2 * n), "offsets: writes at 0 and n read back as one 2n request",
           "wait %d read %d size %lld: %s", wo, ro, file_size(off_path), zt_aio_error(h));
  /* a read at an offset */
  unsigned char *half = zt_aio_alloc(n, 0, err, sizeof err);
  int rh = zt_aio_sync_pread(h, half, n, off_path, (int64_t)n);
  tu_check(rh == 1 && memcmp(half, bufs[1], n) == 0, "offsets: read of the second half at offset n", "%d %s", rh,
           zt_aio_error(h));
  /* rewriting a shorter payload keeps the file's tail (no truncation, as DeepSpeed) */
  zt_aio_sync_pwrite(h, bufs[2], 4096 * 2, off_path, 0);
  tu_check(file_size(off_path) == (long long)(2 * n), "no truncation: a shorter rewrite keeps the size", "%lld",
           file_size(off_path));
  zt_aio_free(whole, 2 * n, 0);
  zt_aio_free(half, n, 0);
  for (int i = 0; i < K; i++) {
    zt_aio_free(bufs[i], n, 0);
    zt_aio_free(back[i], n, 0);
    unlink(path[i]);
  }
  unlink(off_path);
  zt_aio_handle_destroy(h);
}

static void expect_err(const char *name, int ret, zt_aio_handle *h, const char *n1, const char *n2, const char *n3) {
  const char *e = zt_aio_error(h);
  tu_check(ret == -1 && strstr(e, n1) && (!n2 || strstr(e, n2)) && (!n3 || strstr(e, n3)), name,
           "ret %d, message: %s", ret, e);
  printf("  message: %s\n", e);
}

static void errors(void) {
  zt_aio_handle *h = make(1048576, 8, 1, 1, 0);
  zt_aio_handle *h3 = make(1048576, 8, 3, 1, 0);
  char err[256], path[700], msg[64];
  snprintf(path, sizeof path, "%s/err.swp", g_dir);
  size_t n = 65536;
  unsigned char *buf = zt_aio_alloc(n + 4096, 0, err, sizeof err);
  fill_bytes(buf, n, 9);
  expect_err("error: size not a multiple of the O_DIRECT alignment", zt_aio_sync_pwrite(h, buf, 1000, path, 0), h,
             "not O_DIRECT-aligned", path, "1000 bytes");
  expect_err("error: file offset not aligned", zt_aio_sync_pwrite(h, buf, 4096, path, 100), h, "file offset 100",
             "not O_DIRECT-aligned", path);
  expect_err("error: size not divisible by intra_op_parallelism", zt_aio_sync_pwrite(h3, buf, 4096, path, 0), h3,
             "num_bytes = 4096 is not divisible by intra_op_parallelism = 3", path, NULL);
  snprintf(msg, sizeof msg, "%p", (void *)(buf + 8));
  expect_err("error: misaligned buffer", zt_aio_sync_pwrite(h, buf + 8, 4096, path, 0), h, "is not aligned to", msg,
             path);
  expect_err("error: zero bytes", zt_aio_sync_pwrite(h, buf, 0, path, 0), h, "0 bytes", path, NULL);
  char bad[700];
  snprintf(bad, sizeof bad, "%s/no-such-dir/x.swp", g_dir);
  expect_err("error: unwritable path (missing directory)", zt_aio_sync_pwrite(h, buf, 4096, bad, 0), h,
             "cannot open", bad, "for writing");
  expect_err("error: unwritable path (a directory)", zt_aio_sync_pwrite(h, buf, 4096, g_dir, 0), h, "cannot open",
             g_dir, "Is a directory");
  char ro[700];
  snprintf(ro, sizeof ro, "/proc/version");
  expect_err("error: unwritable path (/proc/version)", zt_aio_sync_pwrite(h, buf, 4096, ro, 0), h, "cannot open", ro,
             "for writing");
  /* short read: file of 4096 bytes, read of 8192 */
  int w = zt_aio_sync_pwrite(h, buf, 4096, path, 0);
  tu_check(w == 1, "short-read setup write", "%s", zt_aio_error(h));
  expect_err("error: short read names the file and both sizes", zt_aio_sync_pread(h, buf, 8192, path, 0), h,
             "short read", "holds 4096 bytes", "cannot read 8192 bytes at file offset 0");
  expect_err("error: read past the end at an offset", zt_aio_sync_pread(h, buf, 4096, path, 4096), h, "short read",
             "at file offset 4096", path);
  char missing[700];
  snprintf(missing, sizeof missing, "%s/missing.swp", g_dir);
  expect_err("error: reading a missing file", zt_aio_sync_pread(h, buf, 4096, missing, 0), h, "cannot open", missing,
             "No such file");
  /* the handle stays usable after refusals */
  tu_check(zt_aio_sync_pread(h, buf + 4096, 4096, path, 0) == 1 && memcmp(buf, buf + 4096, 4096) == 0,
           "handle usable after errors", "%s", zt_aio_error(h));
  unlink(path);
  zt_aio_free(buf, n + 4096, 0);
  zt_aio_handle_destroy(h);
  zt_aio_handle_destroy(h3);
}

static void config_and_sizes(void) {
  zt_aio_config c;
  zt_aio_config_defaults(&c);
  tu_check(c.block_size == 1048576 && c.queue_depth == 8 && c.intra_op_parallelism == 1 && c.single_submit == 0 &&
           c.overlap_events == 1, "ds_config aio defaults (1048576, 8, 1, false, true)", "%lld %d %d %d %d",
           (long long)c.block_size, c.queue_depth, c.intra_op_parallelism, c.single_submit, c.overlap_events);
  char err[256];
  c.queue_depth = 0;
  tu_check(zt_aio_handle_create(&c, err, sizeof err) == NULL && strstr(err, "queue_depth 0"),
           "config: queue_depth 0 refused", "%s", err);
  zt_aio_config_defaults(&c);
  c.block_size = 1000;
  tu_check(zt_aio_config_check(&c, err, sizeof err) != 0 && strstr(err, "block_size 1000"),
           "config: block_size 1000 refused", "%s", err);
  zt_aio_config_defaults(&c);
  c.intra_op_parallelism = 0;
  tu_check(zt_aio_config_check(&c, err, sizeof err) != 0 && strstr(err, "intra_op_parallelism 0"),
           "config: intra_op_parallelism 0 refused", "%s", err);
  zt_aio_config_defaults(&c);
  c.intra_op_parallelism = 4;
  zt_aio_handle *h = zt_aio_handle_create(&c, err, sizeof err);
  tu_check(h && zt_aio_get_block_size(h) == 1048576 && zt_aio_get_queue_depth(h) == 8 &&
           zt_aio_get_intra_op_parallelism(h) == 4 && zt_aio_get_overlap_events(h) == 1 &&
           zt_aio_get_single_submit(h) == 0, "getters", "%s", err);
  tu_check(zt_aio_padded_size(h, 1) == 16384 && zt_aio_padded_size(h, 16384) == 16384 &&
           zt_aio_padded_size(h, 16385) == 32768, "padded size: multiples of 4096 x 4", "%zu %zu %zu",
           zt_aio_padded_size(h, 1), zt_aio_padded_size(h, 16384), zt_aio_padded_size(h, 16385));
  zt_aio_handle_destroy(h);
  int64_t v = 0;
  int ok = zt_aio_parse_size("400M", &v) == 0 && v == 400LL * 1048576;
  ok &= zt_aio_parse_size("1m", &v) == 0 && v == 1048576;
  ok &= zt_aio_parse_size("8K", &v) == 0 && v == 8192;
  ok &= zt_aio_parse_size("2G", &v) == 0 && v == 2LL << 30;
  ok &= zt_aio_parse_size("4096", &v) == 0 && v == 4096;
  ok &= zt_aio_parse_size("1MB", &v) == 0 && v == 1048576;
  ok &= zt_aio_parse_size("1X", &v) != 0 && zt_aio_parse_size("", &v) != 0 && zt_aio_parse_size("-1", &v) != 0 &&
        zt_aio_parse_size("M", &v) != 0;
  tu_check(ok, "sizes: 400M 1m 8K 2G 4096 1MB parse, 1X '' -1 M refused", "%s", "");
  void *p = zt_aio_alloc(5000, 0, err, sizeof err);
  tu_check(p && (uintptr_t)p % (uintptr_t)sysconf(_SC_PAGESIZE) == 0, "alloc: page aligned", "%p", p);
  zt_aio_free(p, 5000, 0);
  p = zt_aio_alloc(8192, 1, err, sizeof err);
  if (p) tu_check(1, "alloc: locked buffer", "%s", "");
  else printf("note: locked allocation refused here (%s)\n", err);
  zt_aio_free(p, 8192, 1);
}

int main(int argc, char **argv) {
  if (argc > 1) snprintf(g_dir, sizeof g_dir, "%s", argv[1]);
  else {
    const char *t = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/zt_aio_test_XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(g_dir)) {
      perror("mkdtemp");
      return 1;
    }
  }
  /* O_DIRECT must work in the directory, or the round trips cannot run */
  char probe[700];
  snprintf(probe, sizeof probe, "%s/probe", g_dir);
  int fd = open(probe, O_WRONLY | O_CREAT | O_DIRECT, 0600);
  if (fd < 0) {
    printf("SKIP: %s does not support O_DIRECT (%s); set TMPDIR to a directory on a disk file system\n", g_dir,
           strerror(errno));
    rmdir(g_dir);
    return 77;
  }
  close(fd);
  unlink(probe);
  config_and_sizes();
  /* block size, queue depth, threads, engine, single submit; sizes not multiples of the block size */
  round_trip(4096, 1, 1, 0, 1, 4096 * 5);
  round_trip(4096, 2, 1, 1, 0, 4096 * 7);
  round_trip(65536, 4, 2, 1, 0, 2 * (3 * 65536 + 4096));
  round_trip(65536, 3, 3, 0, 0, 3 * (5 * 65536 + 8192));
  round_trip(1048576, 8, 1, 1, 0, 3 * 1048576 + 512 * 3);
  round_trip(1048576, 8, 4, 1, 1, 4 * (2 * 1048576 + 4096));
  round_trip(131072, 32, 8, 1, 0, 8 * 131072 * 3);
  round_trip(8192, 16, 2, 0, 1, 2 * 8192 * 40);
  many_async();
  errors();
  if (argc <= 1) rmdir(g_dir);
  return tu_finish();
}
