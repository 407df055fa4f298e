/* The step-range trace (see trace.h): events in a growing array, nested by time when written. */
#include "runtime/profile/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "runtime/base/error.h"

typedef struct {
  char name[96];
  double t0, t1;
} event;

static struct {
  int on, full;
  event *ev;
  size_t n, cap;
} g;

void zt_trace_begin(int full) {
  g.on = 1;
  g.full = full;
  g.n = 0;
}

int zt_trace_active(void) { return g.on; }

void zt_trace_span(const char *name, double t0, double t1) {
  if (!g.on) return;
  if (g.n == g.cap) {
    g.cap = g.cap ? 2 * g.cap : 1024;
    g.ev = realloc(g.ev, g.cap * sizeof *g.ev);
    zt_check(g.ev != NULL, "out of memory", "profile trace: %zu events", g.cap);
  }
  event *e = &g.ev[g.n++];
  snprintf(e->name, sizeof e->name, "%s", name);
  e->t0 = t0;
  e->t1 = t1;
}

/* Outer events first: by start, the longer first at equal starts. */
static int by_start(const void *pa, const void *pb) {
  const event *a = pa, *b = pb;
  if (a->t0 != b->t0) return a->t0 < b->t0 ? -1 : 1;
  return a->t1 > b->t1 ? -1 : a->t1 < b->t1;
}

size_t zt_trace_write(const char *path, int rank) {
  g.on = 0;
  qsort(g.ev, g.n, sizeof *g.ev, by_start);
  gzFile f = gzopen(path, "wb");
  zt_check(f != NULL, "profile", "cannot write the trace %s", path);
  const double base = g.n ? g.ev[0].t0 : 0;
  int ok = gzprintf(f, "{\"schemaVersion\": 1, \"displayTimeUnit\": \"ms\", \"traceEvents\": [\n"
                       "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": "
                       "\"rank %d\"}}", rank, rank) > 0;
  size_t *encl = zt_malloc((g.n + 1) * sizeof *encl, "profile trace"), depth = 0; /* the enclosing events */
  for (size_t i = 0; i < g.n && ok; i++) {
    const event *e = &g.ev[i];
    while (depth && g.ev[encl[depth - 1]].t1 <= e->t0) depth--;
    ok = gzprintf(f, ",\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": %d, \"tid\": 0, "
                     "\"ts\": %.3f, \"dur\": %.3f", e->name, rank, 1e6 * (e->t0 - base), 1e6 * (e->t1 - e->t0)) > 0;
    if (ok && g.full) {
      ok = gzprintf(f, ", \"args\": {\"stack\": [") > 0;
      for (size_t d = 0; d < depth && ok; d++) ok = gzprintf(f, "%s\"%s\"", d ? ", " : "", g.ev[encl[d]].name) > 0;
      ok = ok && gzprintf(f, "]}") > 0;
    }
    ok = ok && gzprintf(f, "}") > 0;
    encl[depth++] = i;
  }
  free(encl);
  ok = ok && gzprintf(f, "\n]}\n") > 0;
  ok = gzclose(f) == Z_OK && ok;
  zt_check(ok, "profile", "writing the trace %s failed (disk full?)", path);
  return g.n;
}
