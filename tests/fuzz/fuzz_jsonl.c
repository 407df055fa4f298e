/* libFuzzer harness: preprocess_data's input path on arbitrary bytes: the jsonl line reader (plain or gzip, with a
 * 64 KiB line bound so long lines are refused rather than grown), the length-counted JSON reader, the extraction of
 * the "text" key (a string or a list of strings) and the sentence splitter on each text. Invariants checked beyond
 * "no crash": every text is NUL-terminated at its length, and every sentence lies inside its text. */
#include "data/jsonl.h"
#include "data/sentence_split.h"
#include "tests/fuzz/fuzz.h"

static zt_jsonl_reader *g_reader; /* left open by a refusal inside the reader: closed at the next input */
static zt_jsonl_chunk g_chunk;
static zt_jsonl_doc *g_doc;
static zt_jsonl_texts g_texts;
static zt_sentences g_sents;

static void check_texts(int keep_newlines) {
  for (size_t t = 0; t < g_texts.n; t++) {
    const char *s = g_texts.text[t];
    size_t n = g_texts.len[t];
    if (s[n] != '\0') {
      fprintf(stderr, "fuzz_jsonl: text %zu is not NUL-terminated at its length %zu\n", t, n);
      abort();
    }
    zt_sentence_split(s, n, keep_newlines, &g_sents);
    for (size_t k = 0; k < g_sents.n; k++)
      if (g_sents.start[k] > n || g_sents.len[k] > n - g_sents.start[k]) {
        fprintf(stderr, "fuzz_jsonl: sentence %zu [%zu, +%zu) outside its text of %zu bytes\n", k, g_sents.start[k],
                g_sents.len[k], n);
        abort();
      }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (g_reader) {
    zt_jsonl_close(g_reader);
    g_reader = NULL;
  }
  if (!g_doc) g_doc = zt_jsonl_doc_new();
  const char *path = zt_fuzz_file("input.jsonl", data, size);
  const int keep_newlines = size > 0 && (data[0] & 1);
  ZT_FUZZ_TRY {
    g_reader = zt_jsonl_open(path);
    zt_jsonl_set_max_line(g_reader, 1 << 16);
    while (zt_jsonl_read_chunk(g_reader, &g_chunk, 4096) > 0) {
      for (size_t i = 0; i < g_chunk.n; i++) {
        char err[512] = "";
        if (zt_jsonl_parse(g_doc, g_chunk.buf + g_chunk.start[i], g_chunk.len[i], err, sizeof err) != 0) {
          if (!err[0]) abort(); /* a refusal always says why */
          continue;
        }
        if (zt_jsonl_get(g_doc, "text", &g_texts, err, sizeof err) == 0) check_texts(keep_newlines);
        else if (!err[0]) abort();
      }
    }
    zt_jsonl_close(g_reader);
    g_reader = NULL;
  }
  return 0;
}
