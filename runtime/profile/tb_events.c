/* TensorBoard event files: hand-written protobuf encoding of tensorflow.Event / Summary (field
 * numbers from tensorflow/core/util/event.proto and framework/summary.proto) and TFRecord framing.
 *   Event:   wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5
 *   Summary: value = 1 (repeated Value); Value: tag = 1 (string), simple_value = 2 (float, oneof) */
#define _GNU_SOURCE
#include "runtime/profile/tb_events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/crc32c.h"
#include "runtime/base/error.h"
#include "runtime/profile/monitor.h"

struct zt_tb_writer {
  FILE *f;
  char *path;
  uint8_t *buf;
  size_t cap;
};

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

static size_t put_key(uint8_t *p, unsigned field, unsigned wire) { return put_varint(p, (uint64_t)field << 3 | wire); }

static size_t put_le(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
  return (size_t)bytes;
}

static size_t put_double(uint8_t *p, unsigned field, double d) {
  uint64_t bits;
  memcpy(&bits, &d, 8);
  size_t n = put_key(p, field, WIRE_FIXED64);
  return n + put_le(p + n, bits, 8);
}

static size_t put_bytes(uint8_t *p, unsigned field, const void *s, size_t len) {
  size_t n = put_key(p, field, WIRE_LEN);
  n += put_varint(p + n, len);
  memcpy(p + n, s, len);
  return n + len;
}

size_t zt_tb_encode_file_version_event(uint8_t *buf, double wall_time) {
  static const char version[] = "brain.Event:2";
  size_t n = 0;
  if (wall_time != 0.0) n += put_double(buf + n, 1, wall_time);
  n += put_bytes(buf + n, 3, version, sizeof version - 1);
  return n;
}

size_t zt_tb_encode_scalar_event(uint8_t *buf, const char *tag, double value, int64_t step, double wall_time) {
  size_t tag_len = strlen(tag);
  /* Summary.Value{tag, simple_value} */
  uint8_t *val = malloc(tag_len + 32);
  zt_check(val != NULL, "tensorboard", "out of memory encoding tag '%s'", tag);
  size_t vn = 0;
  if (tag_len > 0) vn += put_bytes(val + vn, 1, tag, tag_len);
  float f = (float)value;
  uint32_t fbits;
  memcpy(&fbits, &f, 4);
  vn += put_key(val + vn, 2, WIRE_FIXED32);
  vn += put_le(val + vn, fbits, 4);
  /* Summary{value: [Value]} */
  uint8_t hdr[16];
  size_t hn = put_key(hdr, 1, WIRE_LEN);
  hn += put_varint(hdr + hn, vn);
  size_t summary_len = hn + vn;
  /* Event */
  size_t n = 0;
  if (wall_time != 0.0) n += put_double(buf + n, 1, wall_time);
  if (step != 0) {
    n += put_key(buf + n, 2, WIRE_VARINT);
    n += put_varint(buf + n, (uint64_t)step); /* negative int64: 10-byte two's complement */
  }
  n += put_key(buf + n, 5, WIRE_LEN);
  n += put_varint(buf + n, summary_len);
  memcpy(buf + n, hdr, hn);
  n += hn;
  memcpy(buf + n, val, vn);
  n += vn;
  free(val);
  return n;
}

size_t zt_tb_frame_record(uint8_t *out, const uint8_t *data, size_t len) {
  put_le(out, (uint64_t)len, 8);
  put_le(out + 8, zt_crc32c_masked(out, 8), 4);
  memmove(out + 12, data, len);
  put_le(out + 12 + len, zt_crc32c_masked(out + 12, len), 4);
  return len + 16;
}

static void tb_write_record(zt_tb_writer *w, const uint8_t *data, size_t len) {
  uint8_t head[12], tail[4];
  put_le(head, (uint64_t)len, 8);
  put_le(head + 8, zt_crc32c_masked(head, 8), 4);
  put_le(tail, zt_crc32c_masked(data, len), 4);
  errno = 0;
  if (fwrite(head, 1, 12, w->f) != 12 || fwrite(data, 1, len, w->f) != len || fwrite(tail, 1, 4, w->f) != 4)
    zt_fatal("tensorboard", "writing %s: %s", w->path, errno ? strerror(errno) : "short write");
}

static void tb_reserve(zt_tb_writer *w, size_t need) {
  if (need <= w->cap) return;
  w->cap = need * 2;
  free(w->buf);
  w->buf = zt_malloc(w->cap, "tensorboard event buffer");
}

zt_tb_writer *zt_tb_open(const char *log_dir) {
  static int writer_uid = 0; /* tensorboard's per-process _global_uid, starting at 0 */
  zt_monitor_mkdirs(log_dir, "tensorboard");
  char host[256] = "localhost";
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
  host[sizeof host - 1] = 0;
  zt_tb_writer *w = zt_calloc(1, sizeof *w, "tensorboard writer");
  double now = zt_monitor_wall_time();
  size_t plen = strlen(log_dir) + strlen(host) + 96;
  w->path = zt_malloc(plen, "tensorboard path");
  int sep = log_dir[0] != 0 && log_dir[strlen(log_dir) - 1] != '/';
  snprintf(w->path, plen, "%s%sevents.out.tfevents.%010lld.%s.%ld.%d", log_dir, sep ? "/" : "", (long long)now,
           host, (long)getpid(), writer_uid++);
  w->f = fopen(w->path, "wb");
  if (!w->f) zt_fatal("tensorboard", "cannot create event file %s: %s", w->path, strerror(errno));
  tb_reserve(w, 256);
  size_t n = zt_tb_encode_file_version_event(w->buf, now);
  tb_write_record(w, w->buf, n);
  zt_tb_flush(w);
  return w;
}

const char *zt_tb_path(const zt_tb_writer *w) { return w->path; }

void zt_tb_add_scalar(zt_tb_writer *w, const char *tag, double value, int64_t step, double wall_time) {
  tb_reserve(w, strlen(tag) + 96);
  size_t n = zt_tb_encode_scalar_event(w->buf, tag, value, step, wall_time);
  tb_write_record(w, w->buf, n);
}

void zt_tb_flush(zt_tb_writer *w) {
  errno = 0;
  if (fflush(w->f) != 0) zt_fatal("tensorboard", "writing %s: %s", w->path, strerror(errno));
}

void zt_tb_close(zt_tb_writer *w) {
  if (!w) return;
  zt_tb_flush(w);
  errno = 0;
  if (fclose(w->f) != 0) zt_fatal("tensorboard", "closing %s: %s", w->path, strerror(errno));
  free(w->buf);
  free(w->path);
  free(w);
}
