/* Megatron's MMapIndexedDataset: the validating mmap reader and the crash-safe builder (writer).
 * Format and field meanings: data/indexed_dataset.h and megatron-deepspeed.md §4.1.
 *
 * Reader: one sequential pass over sizes/pointers/doc_idx checks every invariant Megatron relies on
 * (a 100M-item index is ~1.2 GB, read once at memory speed).
 * Writer: tokens go through a 1 MiB buffer to prefix.bin.tmp; finish writes prefix.idx.tmp, fsyncs
 * both, removes a stale prefix.idx, then renames .bin and .idx into place (signals blocked), so an
 * interruption leaves either the old pair, a lone .bin, or the new pair, never a mixed pair.
 * Builders that are still open when the process exits (zt_fatal) or is signalled (after
 * zt_indexed_cleanup_on_signals) have their temporaries removed. */
#define _GNU_SOURCE
#include "data/indexed_dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/error.h"

#define WHAT "indexed dataset"

static const uint8_t k_magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
static const uint8_t k_legacy_magic[8] = {'T', 'N', 'T', 'I', 'D', 'X', 0, 0};

static int dtype_itemsize(int code) {
  switch (code) {
    case ZT_IDX_UINT8: case ZT_IDX_INT8: return 1;
    case ZT_IDX_INT16: case ZT_IDX_UINT16: return 2;
    case ZT_IDX_INT32: case ZT_IDX_FLOAT32: return 4;
    case ZT_IDX_INT64: case ZT_IDX_FLOAT64: return 8;
    default: return 0;
  }
}

const char *zt_idx_dtype_name(zt_idx_dtype dtype) {
  switch (dtype) {
    case ZT_IDX_UINT8: return "uint8";
    case ZT_IDX_INT8: return "int8";
    case ZT_IDX_INT16: return "int16";
    case ZT_IDX_INT32: return "int32";
    case ZT_IDX_INT64: return "int64";
    case ZT_IDX_FLOAT64: return "float64";
    case ZT_IDX_FLOAT32: return "float32";
    case ZT_IDX_UINT16: return "uint16";
  }
  return "unknown";
}

zt_idx_dtype zt_indexed_best_dtype(int64_t vocab_size) {
  return vocab_size < 65500 ? ZT_IDX_UINT16 : ZT_IDX_INT32;
}

static uint64_t ld_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static int64_t ld_i64(const uint8_t *p) { int64_t v; memcpy(&v, p, 8); return v; }
static int32_t ld_i32(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return v; }

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static char *str_concat(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  char *s = zt_malloc(n + m + 1, "indexed dataset path");
  memcpy(s, a, n);
  memcpy(s + n, b, m + 1);
  return s;
}

/* A prefix must not carry the extension: Megatron appends .bin/.idx itself. */
static void check_prefix(const char *prefix) {
  zt_check(prefix && prefix[0], WHAT, "empty dataset prefix");
  if (ends_with(prefix, ".bin") || ends_with(prefix, ".idx")) {
    size_t n = strlen(prefix) - 4;
    zt_fatal(WHAT, "%s: give the dataset prefix without the .bin/.idx extension (e.g. %.*s): Megatron appends "
             ".bin and .idx to the prefix", prefix, (int)n, prefix);
  }
}

/* Maps a whole file read-only; *bytes receives its size. An empty file maps to a static empty buffer. */
static const uint8_t *map_file(const char *path, size_t *bytes, const char *pair_hint) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) zt_fatal(WHAT, "cannot open %s: %s%s", path, strerror(errno), pair_hint);
  struct stat st;
  if (fstat(fd, &st) != 0) zt_fatal(WHAT, "cannot stat %s: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) zt_fatal(WHAT, "%s is not a regular file", path);
  *bytes = (size_t)st.st_size;
  static const uint8_t empty[8];
  const uint8_t *p = empty;
  if (*bytes > 0) {
    void *m = mmap(NULL, *bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) zt_fatal(WHAT, "cannot map %s (%zu bytes): %s", path, *bytes, strerror(errno));
    madvise(m, *bytes, MADV_SEQUENTIAL);
    p = m;
  }
  close(fd);
  return p;
}

static void unmap(const uint8_t *p, size_t bytes) {
  if (p && bytes > 0) munmap((void *)p, bytes);
}

/* Validates the .idx mapping (header, exact length, sizes/pointers/doc_idx) and returns the number of
 * .bin bytes it describes. */
static int64_t validate_index(const char *path, const uint8_t *idx, size_t bytes, zt_idx_dtype *dtype_out,
                              int64_t *n_out, int64_t *d_out) {
  if (bytes >= 8 && memcmp(idx, k_legacy_magic, 8) == 0)
    zt_fatal(WHAT, "%s is in the legacy IndexedDataset format (magic TNTIDX, --dataset-impl lazy/cached), which "
             "zerotron does not read; re-run preprocess_data with --dataset-impl mmap", path);
  if (bytes < ZT_IDX_HEADER_BYTES)
    zt_fatal(WHAT, "%s: %zu bytes, shorter than the %d-byte header (truncated?)", path, bytes, ZT_IDX_HEADER_BYTES);
  if (memcmp(idx, k_magic, 9) != 0) {
    char hex[40];
    for (int i = 0; i < 9; i++) snprintf(hex + 3 * i, 4, "%02x ", idx[i]);
    hex[26] = 0;
    zt_fatal(WHAT, "%s: bad magic (first 9 bytes %s, expected 4d 4d 49 44 49 44 58 00 00 = \"MMIDIDX\\0\\0\"): "
             "not a Megatron mmap .idx file", path, hex);
  }
  uint64_t version = ld_u64(idx + 9);
  if (version != 1) zt_fatal(WHAT, "%s: version %llu, expected 1", path, (unsigned long long)version);
  int code = idx[17];
  int itemsize = dtype_itemsize(code);
  if (itemsize == 0)
    zt_fatal(WHAT, "%s: unknown dtype code %d (known: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, "
             "7 float32, 8 uint16)", path, code);
  uint64_t n = ld_u64(idx + 18), d = ld_u64(idx + 26);
  /* Bound N and D by the file size before any arithmetic can overflow. */
  if (n > bytes / 12 || d > bytes / 8 || ZT_IDX_HEADER_BYTES + 12 * n + 8 * d != bytes) {
    if (n > bytes / 12 || d > bytes / 8)
      zt_fatal(WHAT, "%s: header claims %llu items and %llu doc_idx entries, more than a %zu-byte file can hold "
               "(truncated or corrupt?)", path, (unsigned long long)n, (unsigned long long)d, bytes);
    uint64_t expected = ZT_IDX_HEADER_BYTES + 12 * n + 8 * d;
    zt_fatal(WHAT, "%s: expected %llu bytes for %llu items and %llu doc_idx entries, found %zu (%s)", path,
             (unsigned long long)expected, (unsigned long long)n, (unsigned long long)d, bytes,
             bytes < expected ? "truncated?" : "trailing bytes: corrupt or not Megatron's format");
  }
  if (d < 1) zt_fatal(WHAT, "%s: doc_idx has 0 entries, expected at least 1 (doc_idx starts with 0)", path);
  const uint8_t *sizes = idx + ZT_IDX_HEADER_BYTES, *pointers = sizes + 4 * n, *docs = pointers + 8 * n;
  int64_t total = 0;
  for (uint64_t i = 0; i < n; i++) {
    int32_t s = ld_i32(sizes + 4 * i);
    int64_t p = ld_i64(pointers + 8 * i);
    if (s < 0) zt_fatal(WHAT, "%s: item %llu has negative size %d", path, (unsigned long long)i, s);
    if (p != total)
      zt_fatal(WHAT, "%s: pointer of item %llu is %lld, expected %lld (the sum of the previous sizes x itemsize "
               "%d): inconsistent index", path, (unsigned long long)i, (long long)p, (long long)total, itemsize);
    total += (int64_t)s * itemsize;
  }
  int64_t prev = ld_i64(docs);
  if (prev != 0) zt_fatal(WHAT, "%s: doc_idx[0] is %lld, expected 0", path, (long long)prev);
  for (uint64_t k = 1; k < d; k++) {
    int64_t v = ld_i64(docs + 8 * k);
    if (v < prev)
      zt_fatal(WHAT, "%s: doc_idx[%llu] = %lld is less than doc_idx[%llu] = %lld (must be non-decreasing)", path,
               (unsigned long long)k, (long long)v, (unsigned long long)(k - 1), (long long)prev);
    prev = v;
  }
  if (prev != (int64_t)n)
    zt_fatal(WHAT, "%s: last doc_idx entry (doc_idx[%llu]) is %lld, expected the item count %llu", path,
             (unsigned long long)(d - 1), (long long)prev, (unsigned long long)n);
  *dtype_out = (zt_idx_dtype)code;
  *n_out = (int64_t)n;
  *d_out = (int64_t)d;
  return total;
}

void zt_indexed_open(zt_indexed_dataset *ds, const char *prefix) {
  check_prefix(prefix);
  memset(ds, 0, sizeof *ds);
  char *idx_path = str_concat(prefix, ".idx"), *bin_path = str_concat(prefix, ".bin");
  char hint[64 + 2 * PATH_MAX];
  snprintf(hint, sizeof hint, " (a dataset prefix %s needs both %s and %s)", prefix, idx_path, bin_path);
  ds->idx = map_file(idx_path, &ds->idx_bytes, hint);
  int64_t n, d;
  int64_t bin_expected = validate_index(idx_path, ds->idx, ds->idx_bytes, &ds->dtype, &n, &d);
  ds->bin = map_file(bin_path, &ds->bin_bytes, hint);
  if ((int64_t)ds->bin_bytes != bin_expected)
    zt_fatal(WHAT, "%s: %zu bytes, but %s describes %lld items totalling %lld bytes (%s)", bin_path, ds->bin_bytes,
             idx_path, (long long)n, (long long)bin_expected,
             (int64_t)ds->bin_bytes < bin_expected ? ".bin too short: truncated?" : ".bin too long: wrong pair?");
  ds->prefix = str_concat(prefix, "");
  ds->itemsize = dtype_itemsize(ds->dtype);
  ds->num_items = n;
  ds->num_docs = d - 1;
  madvise((void *)ds->idx, ds->idx_bytes, MADV_NORMAL);
  if (ds->bin_bytes) madvise((void *)ds->bin, ds->bin_bytes, MADV_NORMAL);
  free(idx_path);
  free(bin_path);
}

void zt_indexed_close(zt_indexed_dataset *ds) {
  unmap(ds->idx, ds->idx_bytes);
  unmap(ds->bin, ds->bin_bytes);
  free(ds->prefix);
  memset(ds, 0, sizeof *ds);
}

void zt_indexed_get(const zt_indexed_dataset *ds, int64_t i, int64_t offset, int64_t length, int32_t *out) {
  if (i < 0 || i >= ds->num_items)
    zt_fatal(WHAT, "%s: item %lld out of range (%lld items)", ds->prefix, (long long)i, (long long)ds->num_items);
  int64_t size = zt_indexed_size(ds, i);
  if (offset < 0 || length < 0 || offset > size || length > size - offset)
    zt_fatal(WHAT, "%s: get(item %lld, offset %lld, length %lld) outside the item's %lld tokens", ds->prefix,
             (long long)i, (long long)offset, (long long)length, (long long)size);
  const uint8_t *p = ds->bin + zt_indexed_pointer(ds, i) + offset * ds->itemsize;
  switch (ds->dtype) {
    case ZT_IDX_UINT8: for (int64_t k = 0; k < length; k++) out[k] = p[k]; break;
    case ZT_IDX_INT8: for (int64_t k = 0; k < length; k++) out[k] = (int8_t)p[k]; break;
    case ZT_IDX_UINT16:
      for (int64_t k = 0; k < length; k++) { uint16_t v; memcpy(&v, p + 2 * k, 2); out[k] = v; }
      break;
    case ZT_IDX_INT16:
      for (int64_t k = 0; k < length; k++) { int16_t v; memcpy(&v, p + 2 * k, 2); out[k] = v; }
      break;
    case ZT_IDX_INT32: memcpy(out, p, 4 * (size_t)length); break;
    case ZT_IDX_INT64:
      for (int64_t k = 0; k < length; k++) {
        int64_t v = ld_i64(p + 8 * k);
        if (v < INT32_MIN || v > INT32_MAX)
          zt_fatal(WHAT, "%s: token %lld of item %lld is %lld, which does not fit int32", ds->prefix,
                   (long long)(offset + k), (long long)i, (long long)v);
        out[k] = (int32_t)v;
      }
      break;
    case ZT_IDX_FLOAT32: case ZT_IDX_FLOAT64:
      zt_fatal(WHAT, "%s: dtype %s holds no token ids", ds->prefix, zt_idx_dtype_name(ds->dtype));
  }
}

/* ---- cleanup registry: temporaries of open builders, removed at exit and on signals -------------- */

#define MAX_BUILDERS 256
static char *volatile g_tmp_bin[MAX_BUILDERS], *volatile g_tmp_idx[MAX_BUILDERS];
static volatile sig_atomic_t g_active[MAX_BUILDERS];
static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_atexit_installed;

static void remove_all_temporaries(void) {
  for (int i = 0; i < MAX_BUILDERS; i++)
    if (g_active[i]) {
      g_active[i] = 0;
      unlink(g_tmp_bin[i]);
      unlink(g_tmp_idx[i]);
    }
}

static void on_signal(int sig) {
  remove_all_temporaries(); /* unlink is async-signal-safe */
  signal(sig, SIG_DFL);
  raise(sig);
}

void zt_indexed_cleanup_on_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

static int registry_add(const char *bin_tmp, const char *idx_tmp) {
  pthread_mutex_lock(&g_registry_lock);
  if (!g_atexit_installed) {
    atexit(remove_all_temporaries);
    g_atexit_installed = 1;
  }
  int slot = -1;
  for (int i = 0; i < MAX_BUILDERS && slot < 0; i++)
    if (!g_active[i]) slot = i;
  if (slot < 0) {
    pthread_mutex_unlock(&g_registry_lock);
    zt_fatal(WHAT, "more than %d builders open at once", MAX_BUILDERS);
  }
  free(g_tmp_bin[slot]);
  free(g_tmp_idx[slot]);
  g_tmp_bin[slot] = str_concat(bin_tmp, "");
  g_tmp_idx[slot] = str_concat(idx_tmp, "");
  g_active[slot] = 1;
  pthread_mutex_unlock(&g_registry_lock);
  return slot;
}

static void registry_remove(int slot) {
  pthread_mutex_lock(&g_registry_lock);
  g_active[slot] = 0;
  pthread_mutex_unlock(&g_registry_lock);
}

/* ---- builder ------------------------------------------------------------------------------------- */

#define BIN_BUFFER_BYTES (1u << 20)

struct zt_indexed_builder {
  char *prefix, *bin_path, *idx_path, *bin_tmp, *idx_tmp;
  zt_idx_dtype dtype;
  int itemsize;
  int fd;
  uint8_t *buf;
  size_t buf_len;
  int64_t bin_bytes;
  int32_t *sizes;
  int64_t n_items, cap_items;
  int64_t *doc_idx;
  int64_t n_docs, cap_docs; /* entries in doc_idx (documents + 1) */
  int slot;
  int synced;
};

static void flush_bin(zt_indexed_builder *b) {
  size_t off = 0;
  while (off < b->buf_len) {
    ssize_t w = write(b->fd, b->buf + off, b->buf_len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      zt_fatal(WHAT, "writing %s: %s (after %lld bytes)", b->bin_tmp, w < 0 ? strerror(e) : "short write",
               (long long)b->bin_bytes);
    }
    off += (size_t)w;
  }
  b->buf_len = 0;
}

static void write_bin(zt_indexed_builder *b, const void *data, size_t bytes) {
  const uint8_t *p = data;
  while (bytes > 0) {
    size_t room = BIN_BUFFER_BYTES - b->buf_len, take = bytes < room ? bytes : room;
    memcpy(b->buf + b->buf_len, p, take);
    b->buf_len += take;
    p += take;
    bytes -= take;
    b->bin_bytes += (int64_t)take;
    if (b->buf_len == BIN_BUFFER_BYTES) flush_bin(b);
  }
}

static void push_doc(zt_indexed_builder *b, int64_t v) {
  if (b->n_docs == b->cap_docs) {
    b->cap_docs = b->cap_docs ? 2 * b->cap_docs : 1024;
    b->doc_idx = realloc(b->doc_idx, (size_t)b->cap_docs * sizeof(int64_t));
    zt_check(b->doc_idx, "out of memory", "doc_idx of %s (%lld entries)", b->prefix, (long long)b->cap_docs);
  }
  b->doc_idx[b->n_docs++] = v;
}

static void push_sizes(zt_indexed_builder *b, const void *s, int64_t n) {
  if (b->n_items + n > b->cap_items) {
    int64_t cap = b->cap_items ? b->cap_items : 1024;
    while (cap < b->n_items + n) cap *= 2;
    b->sizes = realloc(b->sizes, (size_t)cap * sizeof(int32_t));
    zt_check(b->sizes, "out of memory", "sizes of %s (%lld entries)", b->prefix, (long long)cap);
    b->cap_items = cap;
  }
  memcpy(b->sizes + b->n_items, s, (size_t)n * sizeof(int32_t));
  b->n_items += n;
}

static char *dir_of(const char *path) {
  char *copy = str_concat(path, "");
  char *d = str_concat(dirname(copy), "");
  free(copy);
  return d;
}

zt_indexed_builder *zt_indexed_builder_open(const char *prefix, zt_idx_dtype dtype) {
  check_prefix(prefix);
  int itemsize = dtype_itemsize(dtype);
  zt_check(itemsize > 0 && dtype != ZT_IDX_FLOAT32 && dtype != ZT_IDX_FLOAT64, WHAT,
           "%s: cannot write token ids as dtype code %d", prefix, (int)dtype);
  zt_indexed_builder *b = zt_calloc(1, sizeof *b, "indexed dataset builder");
  b->prefix = str_concat(prefix, "");
  b->bin_path = str_concat(prefix, ".bin");
  b->idx_path = str_concat(prefix, ".idx");
  b->bin_tmp = str_concat(prefix, ".bin.tmp");
  b->idx_tmp = str_concat(prefix, ".idx.tmp");
  b->dtype = dtype;
  b->itemsize = itemsize;
  b->slot = registry_add(b->bin_tmp, b->idx_tmp);
  b->fd = open(b->bin_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (b->fd < 0) {
    int e = errno;
    char *dir = dir_of(b->bin_tmp);
    struct stat st;
    if (e == ENOENT && stat(dir, &st) != 0)
      zt_fatal(WHAT, "cannot create %s: the output directory %s does not exist", b->bin_tmp, dir);
    zt_fatal(WHAT, "cannot create %s: %s", b->bin_tmp, strerror(e));
  }
  b->buf = zt_malloc(BIN_BUFFER_BYTES, "indexed dataset write buffer");
  push_doc(b, 0);
  return b;
}

void zt_indexed_builder_add_item(zt_indexed_builder *b, const int32_t *ids, int64_t n) {
  zt_check(n >= 0 && n <= INT32_MAX, WHAT, "%s: item %lld has %lld tokens (an item holds at most %d)", b->prefix,
           (long long)b->n_items, (long long)n, INT32_MAX);
  int64_t lo, hi;
  switch (b->dtype) {
    case ZT_IDX_UINT8: lo = 0; hi = UINT8_MAX; break;
    case ZT_IDX_INT8: lo = INT8_MIN; hi = INT8_MAX; break;
    case ZT_IDX_UINT16: lo = 0; hi = UINT16_MAX; break;
    case ZT_IDX_INT16: lo = INT16_MIN; hi = INT16_MAX; break;
    default: lo = INT32_MIN; hi = INT32_MAX; break;
  }
  uint8_t tmp[4096];
  int64_t done = 0;
  while (done < n) {
    int64_t take = n - done, cap = (int64_t)sizeof tmp / b->itemsize;
    if (take > cap) take = cap;
    for (int64_t k = 0; k < take; k++) {
      int32_t v = ids[done + k];
      if (v < lo || v > hi)
        zt_fatal(WHAT, "%s: token id %d (position %lld of item %lld) does not fit the dataset dtype %s (%lld..%lld)",
                 b->prefix, v, (long long)(done + k), (long long)b->n_items, zt_idx_dtype_name(b->dtype),
                 (long long)lo, (long long)hi);
      switch (b->itemsize) {
        case 1: tmp[k] = (uint8_t)v; break;
        case 2: { uint16_t u = (uint16_t)v; memcpy(tmp + 2 * k, &u, 2); break; }
        case 4: memcpy(tmp + 4 * k, &v, 4); break;
        default: { int64_t w = v; memcpy(tmp + 8 * k, &w, 8); break; }
      }
    }
    write_bin(b, tmp, (size_t)(take * b->itemsize));
    done += take;
  }
  int32_t s = (int32_t)n;
  push_sizes(b, &s, 1);
}

void zt_indexed_builder_end_document(zt_indexed_builder *b) { push_doc(b, b->n_items); }

int64_t zt_indexed_builder_num_items(const zt_indexed_builder *b) { return b->n_items; }
int64_t zt_indexed_builder_num_docs(const zt_indexed_builder *b) { return b->n_docs - 1; }

void zt_indexed_builder_merge(zt_indexed_builder *b, const char *other_prefix) {
  zt_indexed_dataset o;
  zt_indexed_open(&o, other_prefix);
  if (o.dtype != b->dtype)
    zt_fatal(WHAT, "cannot merge %s (dtype %s) into %s (dtype %s): the dtypes must match", other_prefix,
             zt_idx_dtype_name(o.dtype), b->prefix, zt_idx_dtype_name(b->dtype));
  int64_t offset = b->n_items;
  push_sizes(b, o.idx + ZT_IDX_HEADER_BYTES, o.num_items);
  for (int64_t k = 1; k <= o.num_docs; k++) push_doc(b, offset + zt_indexed_doc(&o, k));
  write_bin(b, o.bin, o.bin_bytes);
  zt_indexed_close(&o);
}

static void fsync_or_die(int fd, const char *path) {
  if (fsync(fd) != 0) zt_fatal(WHAT, "fsync %s: %s", path, strerror(errno));
}

void zt_indexed_builder_sync(zt_indexed_builder *b) {
  if (b->synced) return;
  flush_bin(b);
  fsync_or_die(b->fd, b->bin_tmp);
  if (close(b->fd) != 0) zt_fatal(WHAT, "closing %s: %s", b->bin_tmp, strerror(errno));
  b->fd = -1;

  FILE *f = fopen(b->idx_tmp, "wb");
  if (!f) zt_fatal(WHAT, "cannot create %s: %s", b->idx_tmp, strerror(errno));
  setvbuf(f, NULL, _IOFBF, 1 << 20);
  uint8_t hdr[ZT_IDX_HEADER_BYTES];
  memcpy(hdr, k_magic, 9);
  uint64_t version = 1, n = (uint64_t)b->n_items, d = (uint64_t)b->n_docs;
  memcpy(hdr + 9, &version, 8);
  hdr[17] = (uint8_t)b->dtype;
  memcpy(hdr + 18, &n, 8);
  memcpy(hdr + 26, &d, 8);
  int ok = fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr;
  ok = ok && fwrite(b->sizes, sizeof(int32_t), (size_t)b->n_items, f) == (size_t)b->n_items;
  int64_t ptr[512], pos = 0;
  for (int64_t i = 0; ok && i < b->n_items;) {
    int64_t m = 0;
    for (; m < 512 && i < b->n_items; m++, i++) {
      ptr[m] = pos;
      pos += (int64_t)b->sizes[i] * b->itemsize;
    }
    ok = fwrite(ptr, sizeof(int64_t), (size_t)m, f) == (size_t)m;
  }
  ok = ok && fwrite(b->doc_idx, sizeof(int64_t), (size_t)b->n_docs, f) == (size_t)b->n_docs;
  ok = ok && fflush(f) == 0;
  if (!ok) zt_fatal(WHAT, "writing %s: %s", b->idx_tmp, strerror(errno));
  fsync_or_die(fileno(f), b->idx_tmp);
  if (fclose(f) != 0) zt_fatal(WHAT, "closing %s: %s", b->idx_tmp, strerror(errno));
  zt_check(pos == b->bin_bytes, WHAT, "%s: internal error: sizes describe %lld bytes, wrote %lld", b->prefix,
           (long long)pos, (long long)b->bin_bytes);
  b->synced = 1;
}

static void builder_free(zt_indexed_builder *b) {
  free(b->prefix);
  free(b->bin_path);
  free(b->idx_path);
  free(b->bin_tmp);
  free(b->idx_tmp);
  free(b->buf);
  free(b->sizes);
  free(b->doc_idx);
  free(b);
}

void zt_indexed_builder_finish(zt_indexed_builder *b) {
  zt_indexed_builder_sync(b);
  /* Signals are held during the renames: the handler would otherwise find the .bin renamed but the
   * .idx not yet (a SIGKILL there leaves a lone .bin: never a mixed pair, see the file comment). */
  sigset_t block, old;
  sigfillset(&block);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  if (unlink(b->idx_path) != 0 && errno != ENOENT)
    zt_fatal(WHAT, "cannot replace %s: %s", b->idx_path, strerror(errno));
  if (rename(b->bin_tmp, b->bin_path) != 0)
    zt_fatal(WHAT, "cannot rename %s to %s: %s", b->bin_tmp, b->bin_path, strerror(errno));
  if (rename(b->idx_tmp, b->idx_path) != 0)
    zt_fatal(WHAT, "cannot rename %s to %s: %s", b->idx_tmp, b->idx_path, strerror(errno));
  registry_remove(b->slot);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  char *dir = dir_of(b->idx_path);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  free(dir);
  builder_free(b);
}

void zt_indexed_builder_abort(zt_indexed_builder *b) {
  if (b->fd >= 0) close(b->fd);
  unlink(b->bin_tmp);
  unlink(b->idx_tmp);
  registry_remove(b->slot);
  builder_free(b);
}
