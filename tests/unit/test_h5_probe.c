/* checkpoints/h5_probe.c, what the checkpoint readers do before trusting HDF5 with a file.
 * zt_h5_in_child, the child process they try HDF5 reads in: a refusal the child forwards
 * (zt_h5_child_forward_refusals) becomes the parent's own with the same words, printed once, without the parent
 * doing the reads; one the child does not forward is left to the parent, which goes on; a crash is a refusal naming
 * the file; a long detail arrives whole.
 * zt_h5_heap_scan: global heap collections found in a synthetic file fed whole or in pieces of 1..4096 bytes
 * (signatures across pieces); a well-formed one passes; a free-space object of 0 bytes (HDF5 1.10 loops forever
 * on it), an object past the collection's end and a collection past the end of the file are refused with the
 * collection's offset.
 * zt_ckpt_manifest_check refusing 3000 times (a damaged heap, a wrong crc32c, a wrong size) under a fatal hook that
 * returns: no file descriptor left open (the checkpoint fuzzer ran out of them at 80,982 inputs). */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/stat.h>

#include "checkpoints/ckpt_fs.h"
#include "checkpoints/h5io.h"
#include "runtime/base/crc32c.h"
#include "runtime/base/error.h"
#include "tests/unit/testutil.h"

static char g_long[8000];

static void refuse_forwarded(void *arg) {
  (void)arg;
  zt_h5_child_forward_refusals(1);
  zt_fatal("checkpoint", "damaged heap in %s: %d", "x.h5", 7);
}

static void refuse_not_forwarded(void *arg) {
  (void)arg;
  zt_fatal("checkpoint", "left to the parent");
}

static void refuse_after_forwarding_ends(void *arg) {
  (void)arg;
  zt_h5_child_forward_refusals(1);
  zt_h5_child_forward_refusals(0);
  zt_fatal("checkpoint", "read the parent never does");
}

static void crash(void *arg) {
  (void)arg;
  zt_h5_child_forward_refusals(1);
  zt_h5_child_note("/some/file.h5");
  raise(SIGSEGV);
}

static void refuse_long(void *arg) {
  (void)arg;
  zt_h5_child_forward_refusals(1);
  zt_fatal("tensor", "%s", g_long);
}

/* In a process of its own (tu_expect_fatal): zt_h5_in_child(fn), then "returned" on stderr if it came back. */
static void run_in_child(void *fn) {
  zt_h5_in_child("dir/t", (void (*)(void *))fn, NULL);
  fprintf(stderr, "returned\n");
  exit(1);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* Runs run_in_child(fn) and returns its stderr and exit status. */
static int stderr_of(void (*fn)(void *), char *err, size_t cap) {
  int pfd[2];
  if (pipe(pfd) != 0) exit(2);
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pfd[1], 2);
    close(pfd[0]);
    run_in_child((void *)fn);
  }
  close(pfd[1]);
  size_t n = 0;
  ssize_t r;
  while (n < cap - 1 && (r = read(pfd[0], err + n, cap - 1 - n)) > 0) n += (size_t)r;
  err[n] = '\0';
  close(pfd[0]);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ---- global heap collections ---- */

static uint8_t g_file[10000];
static size_t g_file_n;
static const char *g_path = "/tmp/zt_test_h5_probe.h5";

static void put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* A collection of `size` bytes at `at`: objects 1 ("hello") and 2 (11 bytes), then free space (object 0). */
static void put_collection(uint64_t at, uint64_t size) {
  uint8_t *c = g_file + at;
  memcpy(c, "GCOL\1\0\0\0", 8);
  put_le(c + 8, size, 8);
  uint8_t *o = c + 16;
  put_le(o, 1, 2), put_le(o + 2, 1, 2), put_le(o + 8, 5, 8), memcpy(o + 16, "hello", 5);
  o += 24;
  put_le(o, 2, 2), put_le(o + 2, 1, 2), put_le(o + 8, 11, 8), memcpy(o + 16, "hello world", 11);
  o += 32;
  put_le(o, 0, 2), put_le(o + 8, size - 16 - 24 - 32, 8);
}

static void make_file(void) {
  memset(g_file, 0x47, sizeof g_file); /* 'G' everywhere: many partial matches for the search */
  memcpy(g_file, "\211HDF\r\n\032\n", 8);
  g_file[8] = 0, g_file[13] = 8, g_file[14] = 8; /* superblock version 0, 8-byte offsets and lengths */
  put_collection(101, 4096);
  put_collection(101 + 4096 + 51, 4096);
  memcpy(g_file + 9000, "GCOL\2\0\0\0", 8); /* another version: not a collection HDF5 1.10 reads */
  g_file_n = 9500;
}

static void write_file(void) {
  FILE *f = fopen(g_path, "wb");
  if (!f || fwrite(g_file, 1, g_file_n, f) != g_file_n || fclose(f) != 0) exit(2);
}

/* The check's answer for g_file ("" when sound). */
static const char *scan_and_check(void) {
  static char why[600];
  zt_h5_heap_scan s = {0};
  zt_h5_heap_scan_bytes(&s, g_file, g_file_n);
  if (zt_h5_heap_scan_check(&s, g_path, g_file_n, why, sizeof why)) why[0] = '\0';
  return why;
}

static void heap_tests(void) {
  make_file();
  write_file();
  static const size_t pieces[] = {1, 3, 7, 8, 9, 13, 101, 4096, 9500};
  int same = 1;
  for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++) {
    zt_h5_heap_scan s = {0};
    for (size_t at = 0; at < g_file_n; at += pieces[k])
      zt_h5_heap_scan_bytes(&s, g_file + at, at + pieces[k] <= g_file_n ? pieces[k] : g_file_n - at);
    same = same && s.n == 2 && s.found[0] == 101 && s.found[1] == 101 + 4096 + 51 && s.at == g_file_n;
    if (!same) printf("pieces of %zu: %d found, first %llu\n", pieces[k], s.n, s.n ? (unsigned long long)s.found[0] : 0);
    char why[600] = "";
    same = zt_h5_heap_scan_check(&s, g_path, g_file_n, why, sizeof why) && same;
    if (why[0]) printf("%s\n", why);
  }
  tu_check(same, "collections found whole and in pieces of 1..9500 bytes, and pass", "see above");

  put_le(g_file + 101 + 16 + 24 + 32 + 8, 0, 8); /* the free space: 0 bytes */
  write_file();
  const char *why = scan_and_check();
  tu_check(strcmp(why, "the global heap collection at byte 101 (4096 bytes) holds a free-space object of 0 bytes "
                       "(HDF5 1.10 would decode it forever) at byte 173") == 0,
           "free-space object of 0 bytes refused", "%s", why);
  make_file();
  put_le(g_file + 101 + 16 + 24 + 8, 4050, 8); /* object 2 claims 4050 bytes */
  write_file();
  why = scan_and_check();
  tu_check(strcmp(why, "the global heap collection at byte 101 (4096 bytes) holds an object running past the "
                       "collection's end at byte 141") == 0,
           "object past the collection's end refused", "%s", why);
  make_file();
  put_le(g_file + 101 + 4096 + 51 + 8, (uint64_t)1 << 40, 8);
  write_file();
  why = scan_and_check();
  tu_check(strcmp(why, "the global heap collection at byte 4248 claims 1099511627776 bytes, past the end of the "
                       "file (9500 bytes)") == 0,
           "collection past the end of the file refused", "%s", why);
  unlink(g_path);
}

/* ---- refusals of the manifest pass leave no descriptor open ---- */

static jmp_buf g_jmp;
static void jump_back(int code) {
  (void)code;
  longjmp(g_jmp, 1);
}

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  while (d && readdir(d)) n++;
  if (d) closedir(d);
  return n;
}

/* zt_ckpt_manifest_check(dir) `times` times, each refusal caught; returns how many refused. */
static int refusals(const char *dir, int times) {
  volatile int refused = 0;
  const int saved = dup(2), null = open("/dev/null", O_WRONLY); /* the 3000 messages */
  dup2(null, 2);
  for (int i = 0; i < times; i++) {
    char **names = NULL;
    if (setjmp(g_jmp) == 0) {
      zt_set_fatal_hook(jump_back);
      const int n = zt_ckpt_manifest_check(dir, &names, 1);
      for (int k = 0; k < n; k++) free(names[k]);
      free(names);
    } else {
      refused++;
    }
  }
  zt_set_fatal_hook(NULL);
  dup2(saved, 2);
  close(saved);
  close(null);
  return refused;
}

static void manifest_tests(void) {
  const char *dir = "/tmp/zt_test_h5_probe_tag";
  char path[256], line[256];
  mkdir(dir, 0700);
  make_file();
  put_le(g_file + 101 + 16 + 24 + 32 + 8, 0, 8); /* a collection HDF5 would decode forever */
  snprintf(path, sizeof path, "%s/mp_rank_00_model_states.h5", dir);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(g_file, 1, g_file_n, f) != g_file_n || fclose(f) != 0) exit(2);
  const uint32_t crc = zt_crc32c(0, g_file, g_file_n);
  static const char *const cases[3] = {"heap", "crc", "size"};
  for (int c = 0; c < 3; c++) {
    snprintf(path, sizeof path, "%s/zt_manifest.txt", dir);
    f = fopen(path, "w");
    snprintf(line, sizeof line, "# zerotron checkpoint manifest v1: crc32c bytes file\n%08x %zu %s\n",
             c == 1 ? crc ^ 1 : crc, c == 2 ? g_file_n + 1 : g_file_n, "mp_rank_00_model_states.h5");
    if (!f || fputs(line, f) < 0 || fclose(f) != 0) exit(2);
    const int before = open_fds(), refused = refusals(dir, 3000), after = open_fds();
    tu_check(refused == 3000 && after == before, cases[c], "%d of 3000 refused, %d descriptors before, %d after",
             refused, before, after);
  }
  unlink(path);
  snprintf(path, sizeof path, "%s/mp_rank_00_model_states.h5", dir);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  heap_tests();
  manifest_tests();
  static char err[20000];
  int st = stderr_of(refuse_forwarded, err, sizeof err);
  tu_check(st == 1 && count(err, "error: checkpoint: damaged heap in x.h5: 7\n") == 1 && !strstr(err, "returned"),
           "forwarded refusal is the parent's, printed once", "exit %d, stderr: %s", st, err);
  st = stderr_of(refuse_not_forwarded, err, sizeof err);
  tu_check(st == 1 && strcmp(err, "returned\n") == 0, "refusal not forwarded: the parent goes on",
           "exit %d, stderr: %s", st, err);
  st = stderr_of(refuse_after_forwarding_ends, err, sizeof err);
  tu_check(st == 1 && strcmp(err, "returned\n") == 0, "refusal after forwarding ends: the parent goes on",
           "exit %d, stderr: %s", st, err);
  st = stderr_of(crash, err, sizeof err);
  tu_check(st == 1 && strstr(err, "error: checkpoint: /some/file.h5: the HDF5 library crashed (signal 11)"),
           "crash: refused naming the noted file", "exit %d, stderr: %s", st, err);
  for (size_t i = 0; i + 1 < sizeof g_long; i++) g_long[i] = (char)('a' + i % 26);
  g_long[sizeof g_long - 2] = 'Z';
  st = stderr_of(refuse_long, err, sizeof err);
  tu_check(st == 1 && strstr(err, "error: tensor: abcdef") && strstr(err, "Z\n") &&
               strlen(err) == strlen("error: tensor: ") + strlen(g_long) + 1,
           "a 8 KB detail arrives whole", "exit %d, %zu bytes", st, strlen(err));
  printf("%d passed, %d failed\n", tu_passed, tu_failed);
  return tu_failed != 0;
}
