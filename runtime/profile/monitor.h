/* DeepSpeed's monitors in C: `csv_monitor` (one CSV file per metric, as deepspeed/monitor/
 * csv_monitor.py writes them) and `tensorboard` (TensorBoard event files, as torch's SummaryWriter
 * writes them for deepspeed/monitor/tensorboard.py). Events are (name, value, step) like DeepSpeed's
 * write_events; only rank 0 writes. See docs/monitors.md. */
#ifndef ZT_MONITOR_H
#define ZT_MONITOR_H

#include <stddef.h>
#include <stdint.h>

/* ds_config keys: csv_monitor.{enabled, output_path, job_name}, tensorboard.{enabled, output_path,
 * job_name}. NULL strings mean DeepSpeed's defaults: output_path "" and job_name "DeepSpeedJobName".
 * Each backend writes into os.path.join(output_path, job_name), so the default is
 * ./DeepSpeedJobName relative to the working directory. */
typedef struct {
  int csv_enabled;
  const char *csv_output_path, *csv_job_name;
  int tb_enabled;
  const char *tb_output_path, *tb_job_name;
} zt_monitor_config;

#define ZT_MONITOR_DEFAULT_JOB_NAME "DeepSpeedJobName"

typedef struct zt_monitor zt_monitor;

/* Never NULL. On ranks other than 0, or with no backend enabled, every call is a no-op. Creates the
 * directories; dies naming the path and errno text when it cannot. */
zt_monitor *zt_monitor_open(const zt_monitor_config *cfg);
/* 1 when some backend writes on this rank (lets callers skip computing events). */
int zt_monitor_enabled(const zt_monitor *m);
/* One event. The CSV row holds Python's str() of the float (repr: shortest round-trip digits). */
void zt_monitor_write(zt_monitor *m, const char *name, double value, int64_t step);
/* Same for a value DeepSpeed holds as a Python int (e.g. fp16 loss_scale 65536 before the first
 * overflow): the CSV row shows "65536" rather than "65536.0"; TensorBoard stores a float either way. */
void zt_monitor_write_int(zt_monitor *m, const char *name, int64_t value, int64_t step);
/* Pushes buffered rows/records to the files (DeepSpeed flushes after every write_events batch). */
void zt_monitor_flush(zt_monitor *m);
/* Flushes and closes everything; m may be NULL. */
void zt_monitor_close(zt_monitor *m);

/* Python's repr()/str() of a float ("0.1", "1e-05", "2.0", "1e+16", "inf", "nan", "-0.0") into
 * out (at least 32 bytes); returns its length. */
int zt_format_pyfloat(double v, char *out);

/* ---- shared by the backends (monitor.c) ---- */
/* os.path.join(a, b) for two components: b if absolute, else a + '/' + b (no '/' after "" or a
 * trailing '/'). Caller frees. */
char *zt_monitor_path_join(const char *a, const char *b);
/* mkdir -p; dies "error: <what>: cannot create directory <path>: <errno text>". */
void zt_monitor_mkdirs(const char *path, const char *what);
/* Seconds since the epoch, as Python's time.time(). */
double zt_monitor_wall_time(void);

/* CSV backend (csv_monitor.c). */
typedef struct zt_csv_monitor zt_csv_monitor;
zt_csv_monitor *zt_csv_monitor_open(const char *output_path, const char *job_name);
void zt_csv_monitor_write(zt_csv_monitor *c, const char *name, const char *value_text, int64_t step);
void zt_csv_monitor_flush(zt_csv_monitor *c);
void zt_csv_monitor_close(zt_csv_monitor *c);

#endif
