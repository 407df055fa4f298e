/* libFuzzer harness: evaluate_zeroshot's task-file side (evaluate/zeroshot_data.c) on arbitrary bytes. The first
 * byte picks the reader: the LAMBADA jsonl file (strict or not, through the path as --valid-data reads it, each
 * example laid out at a small --seq-length whose mask may only mark real label targets), or the WikiText side (the
 * wiki and ptb detokenizers, the original-token count, the windows at a small seq/overlap that score every target
 * once). The tokenizer is GPT-2 BPE over a byte-level vocabulary (every byte one token, no merges). */
#include "data/tokenizer/tokenizer.h"
#include "evaluate/zeroshot_data.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  zt_tokenizer *tok = zt_fuzz_byte_tokenizer();
  const int mode = data[0] & 3, seq = 1 + (data[0] >> 2) % 8;
  data++, size--;
  if (mode < 2) {
    const char *path = zt_fuzz_file("lambada.jsonl", data, size);
    ZT_FUZZ_TRY {
      zt_lambada set;
      zt_lambada_load(&set, path, tok, mode);
      int32_t text[9];
      float mask[8];
      for (int64_t i = 0; i < set.n; i++) {
        const int drop = zt_lambada_item(&set, i, seq, 256, text, mask);
        const int total = set.n_ctx[i] + set.n_label[i];
        if (drop != (total > seq + 1 ? total - seq - 1 : 0) || set.n_label[i] < 1) abort();
        for (int k = 0; k < seq; k++)
          if (mask[k] != 0.0f && (k + 1 >= total - drop || k + 1 < set.n_ctx[i] - drop)) abort();
      }
      zt_lambada_free(&set);
    }
    return 0;
  }
  size_t n1, n2;
  char *w = zt_wikitext_detokenize((const char *)data, size, &n1);
  char *p = zt_ptb_detokenize((const char *)data, size, &n2);
  if (strlen(w) != n1 || strlen(p) != n2) {
    if (!memchr(data, 0, size)) abort(); /* lengths agree with the text unless the input holds a NUL */
  }
  if (zt_count_original_tokens((const char *)data, size) < 1) abort();
  const int ov = 1 + (int)(size % (size_t)seq);
  const int64_t ntok = (int64_t)(size < 64 ? size : 64);
  int32_t tokens[64], text[9];
  float mask[8];
  for (int64_t i = 0; i < ntok; i++) tokens[i] = (int32_t)i;
  zt_lm_windows win;
  zt_lm_windows_init(&win, tokens, ntok, seq, ov);
  int scored[64] = {0};
  for (int64_t i = 0; i < win.count; i++) {
    zt_lm_window(&win, i, -1, text, mask);
    for (int k = 0; k < seq; k++)
      if (mask[k] != 0.0f) {
        if (text[k + 1] < 1 || text[k + 1] >= ntok) abort(); /* a scored target is a real token after the first */
        scored[text[k + 1]]++;
      }
  }
  for (int64_t t = 1; t < ntok; t++)
    if (scored[t] != 1) abort(); /* every target scored exactly once (ov <= seq) */
  free(w);
  free(p);
  return 0;
}
