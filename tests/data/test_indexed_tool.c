/* Test helper for the indexed-dataset tests (driven by test_indexed_format.py):
 *   test_indexed_tool dump PREFIX            read with zt_indexed_open/get and print everything
 *   test_indexed_tool write PREFIX DTYPE SPEC write with the builder from a text spec
 *   test_indexed_tool merge OUT PREFIX...     builder_merge of several datasets into OUT
 * dump prints: "dtype NAME", "items N", "docs D", "doc_idx v0 v1 ...", then one line per item:
 * "item I SIZE: t0 t1 ...". SPEC: one document per line, its items separated by '|', an item's tokens
 * by spaces; a line "#" is a document without items ("1 2||3" is three items, the middle one empty). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/indexed_dataset.h"
#include "runtime/base/error.h"

static zt_idx_dtype parse_dtype(const char *s) {
  for (int c = 1; c <= 8; c++)
    if (!strcmp(zt_idx_dtype_name((zt_idx_dtype)c), s)) return (zt_idx_dtype)c;
  zt_fatal("test_indexed_tool", "unknown dtype %s", s);
}

static int dump(const char *prefix) {
  zt_indexed_dataset d;
  zt_indexed_open(&d, prefix);
  printf("dtype %s\nitems %lld\ndocs %lld\ndoc_idx", zt_idx_dtype_name(d.dtype), (long long)d.num_items,
         (long long)d.num_docs);
  for (int64_t k = 0; k <= d.num_docs; k++) printf(" %lld", (long long)zt_indexed_doc(&d, k));
  printf("\n");
  int32_t *buf = NULL;
  for (int64_t i = 0; i < d.num_items; i++) {
    int32_t n = zt_indexed_size(&d, i);
    buf = realloc(buf, ((size_t)n + 1) * sizeof(int32_t));
    zt_indexed_get(&d, i, 0, n, buf);
    printf("item %lld %d:", (long long)i, n);
    for (int32_t k = 0; k < n; k++) printf(" %d", buf[k]);
    printf("\n");
    if (n >= 3) { /* get(i, offset, length) on a middle slice agrees with the full item */
      int32_t part[2];
      zt_indexed_get(&d, i, 1, 2, part);
      if (part[0] != buf[1] || part[1] != buf[2]) {
        fprintf(stderr, "FAIL: get(%lld, 1, 2) = %d %d, expected %d %d\n", (long long)i, part[0], part[1], buf[1],
                buf[2]);
        return 1;
      }
    }
  }
  free(buf);
  zt_indexed_close(&d);
  return 0;
}

static int write_spec(const char *prefix, const char *dtype, const char *spec) {
  FILE *f = fopen(spec, "r");
  if (!f) zt_fatal("test_indexed_tool", "cannot open %s", spec);
  zt_indexed_builder *b = zt_indexed_builder_open(prefix, parse_dtype(dtype));
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int32_t *ids = malloc(sizeof(int32_t) * 1024 * 1024);
  while ((len = getline(&line, &cap, f)) >= 0) {
    if (len > 0 && line[len - 1] == '\n') line[--len] = 0;
    if (strcmp(line, "#") != 0) {
      char *save = NULL;
      /* items are '|'-separated; strtok would drop empty items, so split by hand */
      char *p = line;
      for (;;) {
        char *bar = strchr(p, '|');
        if (bar) *bar = 0;
        int64_t n = 0;
        for (char *t = strtok_r(p, " ", &save); t; t = strtok_r(NULL, " ", &save)) ids[n++] = (int32_t)atol(t);
        zt_indexed_builder_add_item(b, ids, n);
        if (!bar) break;
        p = bar + 1;
      }
    }
    zt_indexed_builder_end_document(b);
  }
  free(line);
  free(ids);
  fclose(f);
  zt_indexed_builder_finish(b);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "dump")) return dump(argv[2]);
  if (argc == 5 && !strcmp(argv[1], "write")) return write_spec(argv[2], argv[3], argv[4]);
  if (argc >= 4 && !strcmp(argv[1], "merge")) {
    zt_indexed_dataset first;
    zt_indexed_open(&first, argv[3]);
    zt_indexed_builder *b = zt_indexed_builder_open(argv[2], first.dtype);
    zt_indexed_close(&first);
    for (int i = 3; i < argc; i++) zt_indexed_builder_merge(b, argv[i]);
    zt_indexed_builder_finish(b);
    return 0;
  }
  fprintf(stderr, "usage: test_indexed_tool dump PREFIX | write PREFIX DTYPE SPEC | merge OUT PREFIX...\n");
  return 2;
}
