/* Crash-safe file operations for checkpoints (see ckpt_fs.h). */
#define _GNU_SOURCE
#include "checkpoints/ckpt_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoints/h5io.h"
#include "runtime/base/crc32c.h"
#include "runtime/base/error.h"

void zt_ckpt_fsync(const char *path) {
  int fd = open(path, O_RDONLY);
  zt_check(fd >= 0, "checkpoint", "%s: cannot open for fsync: %s", path, strerror(errno));
  /* directories on some file systems refuse fsync with EINVAL; the data are then as safe as they get */
  if (fsync(fd) != 0 && errno != EINVAL) zt_fatal("checkpoint", "%s: fsync failed: %s", path, strerror(errno));
  close(fd);
}

void zt_ckpt_mkdirs(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST) zt_fatal("checkpoint", "%s: mkdir failed: %s", buf, strerror(errno));
      *p = '/';
    }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) zt_fatal("checkpoint", "%s: mkdir failed: %s", buf, strerror(errno));
}

void zt_ckpt_rmtree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        zt_ckpt_rmtree(sub);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

void zt_ckpt_write_atomic(const char *dir, const char *name, const char *text) {
  char tmp[4096], final[4096];
  snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
  snprintf(final, sizeof final, "%s/%s", dir, name);
  FILE *f = fopen(tmp, "w");
  zt_check(f, "checkpoint", "%s: cannot write: %s", tmp, strerror(errno));
  const size_t len = strlen(text);
  zt_check(fwrite(text, 1, len, f) == len && fflush(f) == 0 && fsync(fileno(f)) == 0, "checkpoint",
           "%s: write failed: %s", tmp, strerror(errno));
  fclose(f);
  zt_ckpt_phase(name);
  zt_check(rename(tmp, final) == 0, "checkpoint", "rename %s -> %s failed: %s", tmp, final, strerror(errno));
  zt_ckpt_fsync(dir);
}

int zt_ckpt_read_text(const char *dir, const char *name, char *buf, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t k = fread(buf, 1, n - 1, f);
  fclose(f);
  buf[k] = '\0';
  while (k > 0 && (buf[k - 1] == '\n' || buf[k - 1] == ' ' || buf[k - 1] == '\r' || buf[k - 1] == '\t')) buf[--k] = '\0';
  return 1;
}

void zt_ckpt_install_dir(const char *tmp, const char *final) {
  char parent[4096];
  snprintf(parent, sizeof parent, "%s", final);
  char *slash = strrchr(parent, '/');
  if (slash) *slash = '\0';
  else snprintf(parent, sizeof parent, ".");
  struct stat st;
  if (stat(final, &st) == 0) {
    /* the same tag saved again: swap the two directories in one step, then drop the old one */
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
      zt_ckpt_fsync(parent);
      zt_ckpt_rmtree(tmp);
      return;
    }
    char old[4200];
    snprintf(old, sizeof old, "%s.old", tmp);
    zt_ckpt_rmtree(old);
    zt_check(rename(final, old) == 0, "checkpoint", "rename %s -> %s failed: %s", final, old, strerror(errno));
    zt_check(rename(tmp, final) == 0, "checkpoint", "rename %s -> %s failed: %s", tmp, final, strerror(errno));
    zt_ckpt_fsync(parent);
    zt_ckpt_rmtree(old);
    return;
  }
  zt_check(rename(tmp, final) == 0, "checkpoint", "rename %s -> %s failed: %s", tmp, final, strerror(errno));
  zt_ckpt_fsync(parent);
}

/* ---- manifest ------------------------------------------------------------------------------------ */

/* zt_ckpt_file_crc, each buffer also given to the heap scan when there is one. */
static int file_crc_scan(const char *path, uint32_t *crc, uint64_t *size, zt_h5_heap_scan *scan) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  static char buf[1 << 20];
  uint32_t c = 0;
  uint64_t total = 0;
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) {
    c = zt_crc32c(c, buf, k);
    if (scan) zt_h5_heap_scan_bytes(scan, (const uint8_t *)buf, k);
    total += k;
  }
  int ok = !ferror(f);
  fclose(f);
  *crc = c;
  *size = total;
  return ok;
}

int zt_ckpt_file_crc(const char *path, uint32_t *crc, uint64_t *size) { return file_crc_scan(path, crc, size, NULL); }

static int by_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void zt_ckpt_manifest_write(const char *dir, char *const *names, int n) {
  size_t cap = 256 + (size_t)n * 300, len = 0;
  char *text = zt_malloc(cap, "checkpoint manifest");
  len += (size_t)snprintf(text + len, cap - len, "# zerotron checkpoint manifest v1: crc32c bytes file\n");
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    uint32_t crc;
    uint64_t size;
    zt_check(zt_ckpt_file_crc(path, &crc, &size), "checkpoint", "%s: cannot read back for its checksum", path);
    len += (size_t)snprintf(text + len, cap - len, "%08x %llu %s\n", crc, (unsigned long long)size, names[i]);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, ZT_CKPT_MANIFEST);
  FILE *f = fopen(path, "w");
  zt_check(f, "checkpoint", "%s: cannot write: %s", path, strerror(errno));
  zt_check(fwrite(text, 1, len, f) == len && fflush(f) == 0 && fsync(fileno(f)) == 0, "checkpoint",
           "%s: write failed: %s", path, strerror(errno));
  fclose(f);
  free(text);
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

int zt_ckpt_manifest_verify(const char *dir, char ***names_out) { return zt_ckpt_manifest_check(dir, names_out, 1); }

/* Size of a file, or 0 when it cannot be opened (then *ok is 0). */
static uint64_t file_size(const char *path, int *ok) {
  FILE *f = fopen(path, "rb");
  *ok = f != NULL;
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  fclose(f);
  return n > 0 ? (uint64_t)n : 0;
}

int zt_ckpt_manifest_check(const char *dir, char ***names_out, int check_crc) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, ZT_CKPT_MANIFEST);
  FILE *f = fopen(path, "r");
  if (!f) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int pt = 0;
    while (d && (e = readdir(d)))
      pt = pt || ends_with(e->d_name, ".pt");
    if (d) closedir(d);
    zt_check(!pt, "checkpoint", "%s holds PyTorch .pt files: a Megatron/DeepSpeed checkpoint, which zerotron cannot "
             "read (it reads its own HDF5 checkpoints; importers of .pt checkpoints are not written yet)", dir);
    zt_fatal("checkpoint", "%s: no manifest (%s): the checkpoint is incomplete or not a zerotron checkpoint", dir,
             ZT_CKPT_MANIFEST);
  }
  /* the whole manifest first, and the file closed: nothing below leaves a descriptor (or its memory) behind when
   * it refuses, which a process that catches refusals (the fuzzer) would otherwise collect */
  enum { k_max_manifest = 64 << 20 };
  size_t len = 0, room = 4096;
  char *text = zt_malloc(room + 1, "checkpoint manifest");
  for (size_t k; len <= k_max_manifest && (k = fread(text + len, 1, room - len, f)) > 0;)
    if ((len += k) == room && room <= k_max_manifest) {
      room *= 2;
      char *grown = realloc(text, room + 1);
      if (!grown) break; /* refused below as over-long or unreadable */
      text = grown;
    }
  const int bad_read = ferror(f) || (len == room && !feof(f) && len <= k_max_manifest);
  fclose(f);
  int n = 0, cap = 16, lineno = 0;
  char **names = zt_malloc((size_t)cap * sizeof(char *), "manifest names");
#define REFUSE_IF(cond, ...)                          \
  do {                                                \
    if (cond) {                                       \
      for (int i_ = 0; i_ < n; i_++) free(names[i_]); \
      free(names);                                    \
      free(text);                                     \
      zt_fatal("checkpoint", __VA_ARGS__);            \
    }                                                 \
  } while (0)
  REFUSE_IF(bad_read, "%s: cannot be read", path);
  REFUSE_IF(len > k_max_manifest, "%s: over %d MiB, not a manifest zerotron wrote", path, k_max_manifest >> 20);
  text[len] = '\0';
  for (char *line = text, *next; line < text + len; line = next) {
    char *nl = memchr(line, '\n', (size_t)(text + len - line));
    next = nl ? nl + 1 : text + len;
    if (nl) *nl = '\0';
    lineno++;
    if (line[0] == '#' || line[0] == '\0') continue;
    unsigned crc;
    unsigned long long size;
    char name[4096];
    REFUSE_IF(strlen(line) > 4400 || sscanf(line, "%8x %llu %4095s", &crc, &size, name) != 3 || strchr(name, '/'),
              "%s line %d: malformed manifest line", path, lineno);
    char fp[8200];
    snprintf(fp, sizeof fp, "%s/%s", dir, name);
    uint32_t got = crc;
    uint64_t got_size;
    int readable = 1;
    zt_h5_heap_scan scan = {0}; /* .h5 files: their global heaps, checked once the bytes are the manifest's */
    if (check_crc) readable = file_crc_scan(fp, &got, &got_size, ends_with(name, ".h5") ? &scan : NULL);
    else got_size = file_size(fp, &readable);
    if (!readable || got_size != size || got != crc) free(scan.found); /* refused below */
    REFUSE_IF(!readable, "%s: missing (listed in %s line %d)", fp, path, lineno);
    REFUSE_IF(got_size != size, "%s: %llu bytes, the manifest records %llu: the file is truncated or was replaced; "
              "refusing to load it", fp, (unsigned long long)got_size, size);
    REFUSE_IF(got != crc, "%s: crc32c %08x, the manifest records %08x: the file is corrupted; refusing to load it",
              fp, got, crc);
    char why[600];
    REFUSE_IF(!zt_h5_heap_scan_check(&scan, fp, got_size, why, sizeof why), "%s: %s: the file is corrupted; "
              "refusing to load it", fp, why);
    if (n == cap) names = realloc(names, (size_t)(cap *= 2) * sizeof(char *));
    names[n++] = strdup(name);
  }
  DIR *d = opendir(dir);
  REFUSE_IF(!d, "%s: cannot list: %s", dir, strerror(errno));
  struct dirent *e;
  char unlisted[300] = "";
  while (!unlisted[0] && (e = readdir(d))) {
    if (!ends_with(e->d_name, ".h5")) continue;
    int listed = 0;
    for (int i = 0; i < n && !listed; i++) listed = strcmp(names[i], e->d_name) == 0;
    if (!listed) snprintf(unlisted, sizeof unlisted, "%s", e->d_name);
  }
  closedir(d);
  REFUSE_IF(unlisted[0], "%s/%s is not in the manifest %s: the directory holds files of another save", dir, unlisted,
            path);
#undef REFUSE_IF
  free(text);
  qsort(names, (size_t)n, sizeof(char *), by_str);
  *names_out = names;
  return n;
}

/* ---- test hook ----------------------------------------------------------------------------------- */

void zt_ckpt_phase(const char *what) {
  static long count = 0, kill_at = -2;
  static int trace = 0;
  if (kill_at == -2) {
    const char *s = getenv("ZT_CKPT_TEST_KILL_AT");
    kill_at = s && *s ? atol(s) : -1;
    trace = getenv("ZT_CKPT_TEST_TRACE") != NULL;
  }
  count++;
  if (trace) fprintf(stderr, "ckpt phase %ld: %s\n", count, what);
  if (count == kill_at) {
    fprintf(stderr, "ZT_CKPT_TEST_KILL_AT=%ld: killing the process at write phase \"%s\"\n", kill_at, what);
    fflush(stderr);
    raise(SIGKILL);
  }
}
