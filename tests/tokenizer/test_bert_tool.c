/* Test driver for the tokenizer oracle scripts (BERT WordPiece, SentencePiece and HFTokenizer tests): runs
 * zt_tokenizer over texts given as hex-encoded UTF-8 lines (so any byte, newline or control
 * character survives the trip).
 *   test_bert_tool KIND [--vocab-file F] [--merge-file F] [--tokenizer-model F] [--vocab-size N]
 *                  [--vocab-extra-ids N] MODE < input > output
 * MODE: info    prints "vocab_size N" and "eod N" (HFTokenizer: also "pad N" and "bos N")
 *       encode  each input line (hex) -> one line of space-separated ids
 *       decode  each input line (space-separated ids) -> one line (hex of the text)
 *       basic-lower / basic-case (KIND ignored, no files): BasicTokenizer output tokens joined by
 *               single spaces, hex-encoded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer/hf_tokenizer.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/wordpiece.h"

static char *read_line(FILE *f, size_t *len) {
  static char *buf;
  static size_t cap;
  size_t n = 0;
  int c;
  while ((c = fgetc(f)) != EOF && c != '\n') {
    if (n + 2 > cap) {
      cap = cap ? cap * 2 : 1 << 16;
      buf = realloc(buf, cap);
      if (!buf) exit(2);
    }
    buf[n++] = (char)c;
  }
  if (c == EOF && n == 0) return NULL;
  if (!buf) {
    cap = 16;
    buf = malloc(cap);
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  fprintf(stderr, "test_bert_tool: bad hex digit '%c'\n", c);
  exit(2);
}

static char *unhex(const char *h, size_t n, size_t *out_len) {
  char *s = malloc(n / 2 + 1);
  for (size_t i = 0; i + 1 < n; i += 2) s[i / 2] = (char)(hexval(h[i]) << 4 | hexval(h[i + 1]));
  *out_len = n / 2;
  s[n / 2] = 0;
  return s;
}

static void put_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) printf("%02x", (unsigned char)s[i]);
  printf("\n");
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s KIND [--vocab-file F] [--merge-file F] [--tokenizer-model F] [--vocab-size N] "
            "[--vocab-extra-ids N] info|encode|decode|basic-lower|basic-case\n", argv[0]);
    return 2;
  }
  const char *mode = argv[argc - 1];
  size_t len;
  char *line;
  if (strncmp(mode, "basic-", 6) == 0) {
    zt_wordpiece_scratch *s = zt_wordpiece_scratch_new();
    int lower = strcmp(mode, "basic-lower") == 0;
    while ((line = read_line(stdin, &len))) {
      size_t tl, ol;
      char *text = unhex(line, len, &tl);
      char *out = zt_wordpiece_basic_tokenize(lower, s, text, tl, &ol);
      put_hex(out, ol);
      free(out);
      free(text);
    }
    zt_wordpiece_scratch_free(s);
    return 0;
  }
  zt_tokenizer_spec spec = {0};
  if (zt_tokenizer_parse_kind(argv[1], &spec.kind) != 0) {
    fprintf(stderr, "test_bert_tool: unknown kind %s\n", argv[1]);
    return 2;
  }
  for (int i = 2; i + 1 < argc - 1; i += 2) {
    if (strcmp(argv[i], "--vocab-file") == 0) spec.vocab_file = argv[i + 1];
    else if (strcmp(argv[i], "--merge-file") == 0) spec.merge_file = argv[i + 1];
    else if (strcmp(argv[i], "--tokenizer-model") == 0) spec.tokenizer_model = argv[i + 1];
    else if (strcmp(argv[i], "--vocab-size") == 0) spec.vocab_size = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--vocab-extra-ids") == 0) spec.vocab_extra_ids = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "test_bert_tool: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  zt_tokenizer *t = zt_tokenizer_create(&spec);
  if (strcmp(mode, "info") == 0) {
    printf("vocab_size %d\neod %d\n", zt_tokenizer_vocab_size(t), (int)zt_tokenizer_eod(t));
    const zt_hf_tok *hf = zt_tokenizer_hf(t);
    if (hf) printf("pad %d\nbos %d\n", (int)zt_hf_pad(hf), (int)zt_hf_bos(hf));
  } else if (strcmp(mode, "encode") == 0) {
    zt_tok_state *s = zt_tok_state_new(t);
    zt_ids ids = {0};
    while ((line = read_line(stdin, &len))) {
      size_t tl;
      char *text = unhex(line, len, &tl);
      ids.n = 0;
      zt_tokenizer_encode(t, s, text, tl, &ids);
      for (size_t i = 0; i < ids.n; i++) printf(i ? " %d" : "%d", ids.ids[i]);
      printf("\n");
      free(text);
    }
    zt_ids_free(&ids);
    zt_tok_state_free(s);
  } else if (strcmp(mode, "decode") == 0) {
    zt_ids ids = {0};
    while ((line = read_line(stdin, &len))) {
      ids.n = 0;
      for (char *p = line; *p;) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p) break;
        zt_ids_push(&ids, (int32_t)v);
        p = e;
      }
      size_t ol;
      char *out = zt_tokenizer_decode(t, ids.ids, ids.n, &ol);
      put_hex(out, ol);
      free(out);
    }
    zt_ids_free(&ids);
  } else {
    fprintf(stderr, "test_bert_tool: unknown mode %s\n", mode);
    return 2;
  }
  fflush(stdout);
  zt_tokenizer_free(t);
  return 0;
}
