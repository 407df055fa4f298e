/* DeepSpeed's csv_monitor (deepspeed/monitor/csv_monitor.py): one file per metric,
 *   os.path.join(output_path, job_name) + '/' + name.replace('/', '_').replace(' ', '_') + '.csv'
 * opened for append; the first event of a metric in this process appends the header row
 * `step,<name after its last '/'>`, then each event a row `step,value`. Rows are written as
 * Python's csv.writer writes them: QUOTE_MINIMAL and "\r\n" line endings. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/profile/monitor.h"

typedef struct {
  char *filename; /* sanitized metric name: the key, as DeepSpeed's self.filenames */
  char *path;
  FILE *f;
} csv_metric;

struct zt_csv_monitor {
  char *log_dir;
  csv_metric *metrics;
  int count, cap;
};

zt_csv_monitor *zt_csv_monitor_open(const char *output_path, const char *job_name) {
  zt_csv_monitor *c = zt_calloc(1, sizeof *c, "csv_monitor");
  c->log_dir = zt_monitor_path_join(output_path, job_name);
  zt_monitor_mkdirs(c->log_dir, "csv_monitor");
  return c;
}

/* One field as csv.writer (QUOTE_MINIMAL, excel dialect) writes it. */
static void csv_put_field(FILE *f, const char *s) {
  if (strpbrk(s, ",\"\r\n") == NULL) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void csv_check(const csv_metric *m) {
  if (ferror(m->f)) zt_fatal("csv_monitor", "writing %s: %s", m->path, strerror(errno ? errno : EIO));
}

void zt_csv_monitor_write(zt_csv_monitor *c, const char *name, const char *value_text, int64_t step) {
  size_t n = strlen(name);
  char *filename = zt_malloc(n + 1, "csv_monitor name");
  for (size_t i = 0; i <= n; i++) filename[i] = (name[i] == '/' || name[i] == ' ') ? '_' : name[i];
  csv_metric *m = NULL;
  for (int i = 0; i < c->count; i++)
    if (strcmp(c->metrics[i].filename, filename) == 0) m = &c->metrics[i];
  if (m) {
    free(filename);
  } else {
    if (c->count == c->cap) {
      c->cap = c->cap ? 2 * c->cap : 16;
      csv_metric *grown = zt_malloc((size_t)c->cap * sizeof *grown, "csv_monitor metrics");
      if (c->count) memcpy(grown, c->metrics, (size_t)c->count * sizeof *grown);
      free(c->metrics);
      c->metrics = grown;
    }
    m = &c->metrics[c->count++];
    m->filename = filename;
    size_t plen = strlen(c->log_dir) + n + 8;
    m->path = zt_malloc(plen, "csv_monitor path");
    snprintf(m->path, plen, "%s/%s.csv", c->log_dir, filename);
    m->f = fopen(m->path, "a");
    if (!m->f) zt_fatal("csv_monitor", "cannot open %s for append: %s", m->path, strerror(errno));
    const char *slash = strrchr(name, '/');
    fputs("step,", m->f);
    csv_put_field(m->f, slash ? slash + 1 : name);
    fputs("\r\n", m->f);
  }
  errno = 0;
  fprintf(m->f, "%" PRId64 ",", step);
  csv_put_field(m->f, value_text);
  fputs("\r\n", m->f);
  csv_check(m);
}

void zt_csv_monitor_flush(zt_csv_monitor *c) {
  for (int i = 0; i < c->count; i++) {
    errno = 0;
    if (fflush(c->metrics[i].f) != 0) zt_fatal("csv_monitor", "writing %s: %s", c->metrics[i].path, strerror(errno));
  }
}

void zt_csv_monitor_close(zt_csv_monitor *c) {
  if (!c) return;
  for (int i = 0; i < c->count; i++) {
    csv_metric *m = &c->metrics[i];
    errno = 0;
    if (fflush(m->f) != 0 || fclose(m->f) != 0)
      zt_fatal("csv_monitor", "writing %s: %s", m->path, strerror(errno ? errno : EIO));
    free(m->filename);
    free(m->path);
  }
  free(c->metrics);
  free(c->log_dir);
  free(c);
}
