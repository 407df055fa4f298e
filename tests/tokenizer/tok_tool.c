/* tok_tool: runs any tokenizer of tokenizer.h (through zt_tokenizer_create) on stdin, for tests and
 * benchmarks.
 *
 *   tok_tool encode|decode|bench --tokenizer-type NAME [--vocab-file F] [--merge-file F]
 *            [--tokenizer-model F] [--vocab-size N] [--vocab-extra-ids N] [--lines | --records]
 *
 * Input framing: the whole of stdin is one text (default); --lines: each line (without its '\n') is one
 * text; --records: stdin is a sequence of "<byte count>\n<bytes>" records.
 * encode: one line of space-separated ids per text.
 * decode: reads texts of space-separated ids and writes each decoded string; with --records as a record,
 *         with --lines followed by '\n', else as is.
 * bench:  encodes every text (one thread) and prints "<bytes> bytes, <tokens> tokens, <s> s, <MB/s> MB/s". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/tokenizer/tokenizer.h"
#include "runtime/base/error.h"

typedef struct {
  char *data;
  size_t len;
} text;

static char *read_all(size_t *len) {
  size_t cap = 1 << 20, n = 0, got;
  char *buf = zt_malloc(cap + 1, "tok_tool input");
  while ((got = fread(buf + n, 1, cap - n, stdin)) > 0) {
    n += got;
    if (n == cap) {
      cap *= 2;
      buf = realloc(buf, cap + 1);
      zt_check(buf, "tok_tool", "out of memory reading stdin (%zu bytes)", cap);
    }
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

/* Splits the input in place into texts according to the framing. */
static text *split(char *buf, size_t len, int lines, int records, size_t *count) {
  size_t cap = 1024, n = 0;
  text *t = zt_malloc(cap * sizeof *t, "tok_tool texts");
  size_t i = 0;
  while (i < len || (n == 0 && !lines && !records)) {
    if (n == cap) {
      cap *= 2;
      t = realloc(t, cap * sizeof *t);
      zt_check(t, "tok_tool", "out of memory for %zu texts", cap);
    }
    if (records) {
      char *end;
      unsigned long long k = strtoull(buf + i, &end, 10);
      zt_check(end != buf + i && *end == '\n' && (size_t)(end + 1 - buf) + k <= len, "tok_tool",
               "--records: bad record header at byte %zu of stdin", i);
      t[n++] = (text){end + 1, (size_t)k};
      i = (size_t)(end + 1 - buf) + k;
    } else if (lines) {
      char *nl = memchr(buf + i, '\n', len - i);
      size_t e = nl ? (size_t)(nl - buf) : len;
      t[n++] = (text){buf + i, e - i};
      i = e + 1;
    } else {
      t[n++] = (text){buf, len};
      break;
    }
  }
  *count = n;
  return t;
}

static const char *arg_value(int argc, char **argv, int *i) {
  zt_check(*i + 1 < argc, "tok_tool", "%s needs a value", argv[*i]);
  return argv[++*i];
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: tok_tool encode|decode|bench --tokenizer-type NAME [--vocab-file F] [--merge-file F] "
                    "[--tokenizer-model F] [--vocab-size N] [--vocab-extra-ids N] [--lines | --records]\n");
    return 2;
  }
  const char *mode = argv[1];
  int encode = !strcmp(mode, "encode"), decode = !strcmp(mode, "decode"), bench = !strcmp(mode, "bench");
  zt_check(encode || decode || bench, "tok_tool", "unknown mode '%s' (expected encode, decode or bench)", mode);
  zt_tokenizer_spec spec = {0};
  const char *type = NULL;
  int lines = 0, records = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--tokenizer-type")) type = arg_value(argc, argv, &i);
    else if (!strcmp(argv[i], "--vocab-file")) spec.vocab_file = arg_value(argc, argv, &i);
    else if (!strcmp(argv[i], "--merge-file")) spec.merge_file = arg_value(argc, argv, &i);
    else if (!strcmp(argv[i], "--tokenizer-model")) spec.tokenizer_model = arg_value(argc, argv, &i);
    else if (!strcmp(argv[i], "--vocab-size")) spec.vocab_size = atoi(arg_value(argc, argv, &i));
    else if (!strcmp(argv[i], "--vocab-extra-ids")) spec.vocab_extra_ids = atoi(arg_value(argc, argv, &i));
    else if (!strcmp(argv[i], "--lines")) lines = 1;
    else if (!strcmp(argv[i], "--records")) records = 1;
    else zt_fatal("tok_tool", "unknown argument '%s'", argv[i]);
  }
  zt_check(type, "tok_tool", "--tokenizer-type is required");
  zt_check(!(lines && records), "tok_tool", "--lines and --records exclude each other");
  zt_check(zt_tokenizer_parse_kind(type, &spec.kind) == 0, "tok_tool", "--tokenizer-type: unknown type '%s'", type);
  zt_tokenizer *tok = zt_tokenizer_create(&spec);
  zt_tok_state *st = zt_tok_state_new(tok);
  size_t len, count;
  char *buf = read_all(&len);
  text *texts = split(buf, len, lines, records, &count);
  zt_ids ids = {0};
  if (bench) {
    struct timespec t0, t1;
    size_t bytes = 0, tokens = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t k = 0; k < count; k++) {
      ids.n = 0;
      zt_tokenizer_encode(tok, st, texts[k].data, texts[k].len, &ids);
      bytes += texts[k].len;
      tokens += ids.n;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("%zu bytes, %zu tokens, %.3f s, %.1f MB/s\n", bytes, tokens, s, (double)bytes / 1e6 / s);
  } else if (encode) {
    for (size_t k = 0; k < count; k++) {
      ids.n = 0;
      zt_tokenizer_encode(tok, st, texts[k].data, texts[k].len, &ids);
      for (size_t i = 0; i < ids.n; i++) printf(i ? " %d" : "%d", ids.ids[i]);
      putchar('\n');
    }
  } else {
    for (size_t k = 0; k < count; k++) {
      ids.n = 0;
      char *p = texts[k].data, *end = texts[k].data + texts[k].len;
      while (p < end) {
        char *q;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
        if (p >= end) break;
        long v = strtol(p, &q, 10);
        zt_check(q != p && q <= end, "tok_tool", "decode: text %zu is not a list of integer ids", k);
        zt_ids_push(&ids, (int32_t)v);
        p = q;
      }
      size_t out_len;
      char *s = zt_tokenizer_decode(tok, ids.ids, ids.n, &out_len);
      if (records) printf("%zu\n", out_len);
      fwrite(s, 1, out_len, stdout);
      if (lines) putchar('\n');
      free(s);
    }
  }
  zt_ids_free(&ids);
  free(texts);
  free(buf);
  zt_tok_state_free(st);
  zt_tokenizer_free(tok);
  return 0;
}
