/* Bounds for the preprocess_data benchmark (bench/preprocess_bench.sh), measured on one thread over
 * the same input: (1) read + UTF-8 check + JSON parse + key extraction, without tokenizing; (2) the
 * tokenizer alone over the texts extracted in (1), held in memory. A preprocess_data worker does both,
 * so one worker can at best reach 1 / (1/parse + 1/tokenize) MB/s of JSON lines.
 *
 * usage: bench_preprocess_bounds INPUT.jsonl TOKENIZER_TYPE VOCAB_FILE MERGE_FILE [KEY] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/jsonl.h"
#include "data/tokenizer/tokenizer.h"
#include "runtime/base/error.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s INPUT.jsonl TOKENIZER_TYPE VOCAB_FILE MERGE_FILE [KEY]\n", argv[0]);
    return 2;
  }
  const char *key = argc > 5 ? argv[5] : "text";
  zt_tokenizer_spec spec = {0};
  zt_check(zt_tokenizer_parse_kind(argv[2], &spec.kind) == 0, "--tokenizer-type", "unknown %s", argv[2]);
  spec.vocab_file = argv[3];
  spec.merge_file = argv[4];
  zt_tokenizer *tok = zt_tokenizer_create(&spec);
  zt_tok_state *st = zt_tok_state_new(tok);

  /* (1) parse pass; keeps the texts for (2) */
  double t0 = now_s();
  zt_jsonl_reader *r = zt_jsonl_open(argv[1]);
  zt_jsonl_chunk c = {0};
  zt_jsonl_doc *doc = zt_jsonl_doc_new();
  zt_jsonl_texts texts = {0};
  char err[512];
  size_t input_bytes = 0, text_bytes = 0, docs = 0, cap = 1 << 20;
  char *all = malloc(cap);
  size_t *offs = NULL, n_offs = 0, cap_offs = 0;
  while (zt_jsonl_read_chunk(r, &c, 1 << 18) > 0) {
    input_bytes += c.input_bytes;
    for (size_t i = 0; i < c.n; i++) {
      if (zt_jsonl_parse(doc, c.buf + c.start[i], c.len[i], err, sizeof err) != 0 ||
          zt_jsonl_get(doc, key, &texts, err, sizeof err) != 0)
        zt_fatal("bench", "%s:%lld: %s", argv[1], (long long)(c.first_line + (int64_t)i), err);
      for (size_t t = 0; t < texts.n; t++) {
        while (text_bytes + texts.len[t] + 1 > cap) all = realloc(all, cap *= 2);
        memcpy(all + text_bytes, texts.text[t], texts.len[t]);
        if (n_offs + 2 > cap_offs) offs = realloc(offs, (cap_offs = cap_offs ? 2 * cap_offs : 1024) * sizeof(size_t));
        offs[n_offs++] = text_bytes;
        text_bytes += texts.len[t];
      }
      docs++;
    }
  }
  offs[n_offs] = text_bytes;
  double t_parse = now_s() - t0;
  zt_jsonl_close(r);

  /* (2) tokenize the in-memory texts */
  zt_ids ids = {0};
  size_t tokens = 0;
  t0 = now_s();
  for (size_t k = 0; k < n_offs; k++) {
    ids.n = 0;
    zt_tokenizer_encode(tok, st, all + offs[k], offs[k + 1] - offs[k], &ids);
    tokens += ids.n;
  }
  double t_tok = now_s() - t0;

  double mb = input_bytes / 1048576.0;
  double parse = mb / t_parse, tokenize = mb / t_tok, ideal = mb / (t_parse + t_tok);
  printf("input: %zu documents, %.2f MB of JSON lines, %.2f MB of text, %zu tokens\n", docs, mb,
         text_bytes / 1048576.0, tokens);
  printf("bound parse_only: %.2f MB/s (%.3f s)\n", parse, t_parse);
  printf("bound tokenize_only: %.2f MB/s of JSON lines (%.3f s; %.0f tokens/s)\n", tokenize, t_tok, tokens / t_tok);
  printf("bound one_worker: %.2f MB/s (parse then tokenize on one thread)\n", ideal);
  zt_ids_free(&ids);
  zt_jsonl_texts_free(&texts);
  zt_jsonl_doc_free(doc);
  zt_jsonl_chunk_free(&c);
  zt_tok_state_free(st);
  zt_tokenizer_free(tok);
  free(all);
  free(offs);
  return 0;
}
