/* The tools' progress bar and the H:MM:SS duration format (progress_bar.h). */
#include "runtime/base/progress_bar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct zt_progress_bar {
  char what[48], unit[16];
  double total, start, last_draw;
  int width; /* characters of the last drawing, to blank a shorter one */
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void zt_progress_hms(char *out, size_t cap, double seconds) {
  if (!(seconds >= 0) || seconds > 9.2e15) seconds = 0;
  long long s = (long long)seconds, days = s / 86400;
  s %= 86400;
  if (days > 0)
    snprintf(out, cap, "%lld day%s, %lld:%02lld:%02lld", days, days == 1 ? "" : "s", s / 3600, s / 60 % 60, s % 60);
  else
    snprintf(out, cap, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
}

/* A count or rate with its unit: bytes as B/KB/MB/GB/TB (1024-based, about 3 significant digits), other counts as
 * integers, other rates with 3 significant digits. */
static void amount(char *out, size_t cap, double v, const char *unit, int rate) {
  if (strcmp(unit, "B") != 0) {
    snprintf(out, cap, !rate ? "%.0f" : v < 10 ? "%.2f" : v < 100 ? "%.1f" : "%.0f", v);
    return;
  }
  static const char *const k[] = {"B", "KB", "MB", "GB", "TB"};
  int i = 0;
  while (v >= 1024 && i < 4) v /= 1024, i++;
  snprintf(out, cap, i == 0 ? "%.0f %s" : v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, k[i]);
}

void zt_progress_bar_format(char *out, size_t cap, const char *what, double done, double total, const char *unit,
                            double elapsed) {
  const int bytes = strcmp(unit, "B") == 0;
  const char *sp = bytes ? "" : " ", *word = bytes ? "" : unit; /* "1.2 GB" vs "120 docs" */
  char d[32], t[32], r[32], time[48];
  const double rate = elapsed > 0 ? done / elapsed : 0;
  amount(d, sizeof d, done, unit, 0);
  amount(r, sizeof r, rate, unit, 1);
  if (total > 0) {
    const double f = done >= total ? 1.0 : done / total;
    char bar[21];
    for (int i = 0; i < 20; i++) bar[i] = i < (int)(f * 20) ? '#' : '.';
    bar[20] = 0;
    amount(t, sizeof t, total, unit, 0);
    zt_progress_hms(time, sizeof time, rate > 0 ? (total - done) / rate : 0);
    snprintf(out, cap, "%s [%s] %5.1f%% %s/%s%s%s %s%s%s/s ETA %s", what, bar, f * 100, d, t, sp, word, r, sp, word,
             time);
  } else {
    zt_progress_hms(time, sizeof time, elapsed);
    snprintf(out, cap, "%s %s%s%s %s%s%s/s elapsed %s", what, d, sp, word, r, sp, word, time);
  }
}

zt_progress_bar *zt_progress_bar_start(const char *what, double total, const char *unit) {
  const char *env = getenv("ZT_PROGRESS_BAR");
  const int on = env && *env ? strcmp(env, "0") != 0 : isatty(STDERR_FILENO);
  if (!on) return NULL;
  zt_progress_bar *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  snprintf(b->what, sizeof b->what, "%s", what);
  snprintf(b->unit, sizeof b->unit, "%s", unit);
  b->total = total;
  b->start = b->last_draw = now_s();
  return b;
}

static void draw(zt_progress_bar *b, double done, double now) {
  char line[192];
  zt_progress_bar_format(line, sizeof line, b->what, done, b->total, b->unit, now - b->start);
  const int n = (int)strlen(line);
  fprintf(stderr, "\r%s%*s", line, b->width > n ? b->width - n : 0, "");
  fflush(stderr);
  b->width = n;
  b->last_draw = now;
}

void zt_progress_bar_update(zt_progress_bar *b, double done) {
  if (!b) return;
  const double now = now_s();
  if (now - b->last_draw >= 0.2) draw(b, done, now);
}

void zt_progress_bar_finish(zt_progress_bar *b, double done) {
  if (!b) return;
  draw(b, done, now_s());
  fputc('\n', stderr);
  fflush(stderr);
  free(b);
}
