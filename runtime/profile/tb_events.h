/* TensorBoard event files written without TensorFlow: tensorflow.Event protocol buffers encoded by
 * hand, framed as TFRecords (length, masked CRC32C of the length, data, masked CRC32C of the data),
 * in the file torch.utils.tensorboard.SummaryWriter(log_dir) would create:
 * <log_dir>/events.out.tfevents.<10-digit unix time>.<hostname>.<pid>.<per-process writer uid>. */
#ifndef ZT_TB_EVENTS_H
#define ZT_TB_EVENTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct zt_tb_writer zt_tb_writer;

/* Creates log_dir (and its parents) and the event file, and writes the first record:
 * Event{wall_time, file_version: "brain.Event:2"}. Dies naming the path on any error. */
zt_tb_writer *zt_tb_open(const char *log_dir);
/* The event file's path. */
const char *zt_tb_path(const zt_tb_writer *w);
/* Appends Event{wall_time, step, summary{value{tag, simple_value: (float)value}}}; step 0 is
 * omitted from the encoding (proto3 default), as protobuf's own serializer does. */
void zt_tb_add_scalar(zt_tb_writer *w, const char *tag, double value, int64_t step, double wall_time);
void zt_tb_flush(zt_tb_writer *w);
void zt_tb_close(zt_tb_writer *w);

/* Encoders (exposed for tests). Each writes into buf (which must hold the result: an event with
 * a tag of n bytes needs at most n + 64) and returns the number of bytes. */
size_t zt_tb_encode_file_version_event(uint8_t *buf, double wall_time);
size_t zt_tb_encode_scalar_event(uint8_t *buf, const char *tag, double value, int64_t step, double wall_time);
/* One TFRecord: 8-byte LE length, masked CRC32C of those 8 bytes, data, masked CRC32C of data. */
size_t zt_tb_frame_record(uint8_t *out, const uint8_t *data, size_t len);

#endif
