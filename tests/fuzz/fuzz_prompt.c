/* libFuzzer harness: finetune_llama's Alpaca JSON reader and SupervisedDataset rows (data/prompt_dataset.h) on
 * arbitrary bytes as the JSON file, with an HFTokenizer GPT2Tokenizer directory over the one-token-per-byte vocabulary
 * (add_bos_token on, eos <|endoftext|> with rstrip, [PAD] added as id 257); the first byte picks max_length (2..65).
 * Invariants beyond "no crash": every accepted example's row holds at most max_length ids, each below 258, the first
 * bos; its prompt length is at most max_length; zt_prompt_dataset_get gives the row padded with [PAD] and labels equal
 * to the ids past the prompt and [PAD] before. */
#include "data/prompt_dataset.h"
#include "data/tokenizer/hf_tokenizer.h"
#include "tests/fuzz/fuzz.h"

enum { BOS = 256, PAD = 257 };
static zt_hf_tok *g_tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  char dir[512], vocab[512], merges[512];
  snprintf(dir, sizeof dir, "%s", zt_fuzz_file("probe", (const uint8_t *)"", 0));
  snprintf(dir + strlen(dir) - strlen("probe"), sizeof dir - strlen(dir) + strlen("probe"), "hf");
  mkdir(dir, 0700);
  zt_fuzz_byte_vocab("hf/", vocab, merges);
  static const char cfg[] = "{\"tokenizer_class\": \"GPT2Tokenizer\", \"add_bos_token\": true, \"eos_token\": "
                            "{\"content\": \"<|endoftext|>\", \"rstrip\": true}}";
  zt_fuzz_file("hf/tokenizer_config.json", (const uint8_t *)cfg, sizeof cfg - 1);
  g_tok = zt_hf_tok_load(dir);
  if (zt_hf_pad(g_tok) != PAD || zt_hf_bos(g_tok) != BOS) {
    fprintf(stderr, "fuzz_prompt: the tokenizer's pad %d and bos %d are not %d and %d\n", zt_hf_pad(g_tok),
            zt_hf_bos(g_tok), PAD, BOS);
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int L = 2 + data[0] % 64;
  const char *path = zt_fuzz_file("alpaca.json", data + 1, size - 1);
  zt_prompt_dataset d;
  int loaded = 0;
  ZT_FUZZ_TRY {
    zt_prompt_dataset_load(&d, path, g_tok, L);
    loaded = 1;
  }
  zt_set_fatal_hook(NULL); /* from here a zt_fatal is a finding */
  if (!loaded) return 0;
  int32_t ids[65], labels[65];
  for (int64_t i = 0; i < d.n; i++) {
    const int64_t len = d.offset[i + 1] - d.offset[i];
    int ok = len >= 1 && len <= L && d.ids[d.offset[i]] == BOS && d.source_len[i] >= 1 && d.source_len[i] <= L;
    for (int64_t j = d.offset[i]; j < d.offset[i + 1] && ok; j++) ok = d.ids[j] >= 0 && d.ids[j] <= PAD;
    zt_prompt_dataset_get(&d, i, ids, labels);
    for (int j = 0; j < L && ok; j++)
      ok = ids[j] == (j < len ? d.ids[d.offset[i] + j] : PAD) && labels[j] == (j < d.source_len[i] ? PAD : ids[j]);
    if (!ok) {
      fprintf(stderr, "fuzz_prompt: example %lld: row of %lld ids, prompt %d, max_length %d breaks an invariant\n",
              (long long)i, (long long)len, d.source_len[i], L);
      abort();
    }
  }
  zt_prompt_dataset_free(&d);
  return 0;
}
