/* libFuzzer harness: the tokenizers preprocess_data runs on jsonl texts: GPT-2 byte-level BPE, BERT WordPiece
 * (lower-case and cased), the NullTokenizer and HFTokenizer on a GPT2Tokenizer directory (the synthetic GPT-2 files,
 * add_prefix_space and add_bos_token on, an eos token with lstrip and rstrip) and on a Llama-3-like tokenizer.json
 * directory (the same vocabulary, Llama-3's regex, ignore_merges, a bos template) and a Qwen2Tokenizer directory (NFC,
 * Qwen2's regex, added tokens), on arbitrary bytes (the first byte picks the tokenizer, the rest is
 * the text; NULs included, as texts may hold them). The vocabularies are small synthetic ones written at start-up
 * (the 256 byte tokens and some English merges for GPT-2; letters, digits, words and ## pieces for BERT), plus the
 * real GPT-2 files when scripts/fetch_data.sh has cached them (then the first byte's value 4 picks them).
 * Invariants beyond "no crash": GPT-2 BPE decodes back to the exact text when the text is valid UTF-8; decoding the
 * ids of any tokenizer never fails; the NullTokenizer's ids re-encode to themselves; HFTokenizer decodes valid UTF-8
 * without special tokens back to bos + " " + the text, the tokenizer.json directory to bos + the text, and the
 * Qwen2Tokenizer directory to the text's NFC. */
#define _GNU_SOURCE /* memmem */
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/unicode.h"
#include "tests/fuzz/fuzz.h"

enum { K_GPT2, K_BERT_LOWER, K_BERT_CASE, K_NULL, K_GPT2_REAL, K_HF, K_HF_FAST, K_HF_QWEN2, K_N };
static zt_tokenizer *g_tok[K_N];
static zt_tok_state *g_state[K_N];

/* GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to 256, 257, ... in byte order. */
static uint32_t byte_char(int b) {
  if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) return (uint32_t)b;
  int n = 0;
  for (int c = 0; c < b; c++)
    if (!((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF))) n++;
  return 256u + (uint32_t)n;
}

static void put_utf8(FILE *f, uint32_t cp) {
  if (cp == '"' || cp == '\\') fprintf(f, "\\%c", (char)cp);
  else if (cp < 0x80) fputc((int)cp, f);
  else if (cp < 0x800) fprintf(f, "%c%c", 0xC0 | (cp >> 6), 0x80 | (cp & 0x3F));
  else fprintf(f, "%c%c%c", 0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F));
}

static char *scratch(const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "/tmp/zt_fuzz_%d", (int)getpid());
  mkdir(p, 0700);
  snprintf(p + strlen(p), 512 - strlen(p), "/%s", name);
  return p;
}

/* merges over the byte alphabet ("Ġ" is the space byte 0x20 -> U+0120) */
static const char *const g_merges[][2] = {
  {"\xc4\xa0", "t"}, {"h", "e"}, {"\xc4\xa0t", "he"}, {"i", "n"}, {"\xc4\xa0", "a"}, {"e", "r"}, {"o", "n"}, {"r", "e"},
  {"\xc4\xa0", "s"}, {"e", "d"}, {"in", "g"}, {"\xc4\xa0", "w"}, {"o", "r"}, {"\xc4\xa0w", "or"}, {"l", "d"},
  {"\xc4\xa0wor", "ld"}, {"\xc4\xa0", "\xc4\xa0"}, {"\xc4\x8a", "\xc4\x8a"}, {"1", "2"},
  {"\xc3\x83", "\xc2\xa9"}}; /* the bytes of "é" */
enum { N_MERGES = sizeof g_merges / sizeof g_merges[0] };

/* The vocabulary as a JSON object: the 256 byte tokens, the merges' results, <|endoftext|>. */
static void put_vocab(FILE *f) {
  fputc('{', f);
  for (int b = 0; b < 256; b++) {
    fprintf(f, "%s\"", b ? ", " : "");
    put_utf8(f, byte_char(b));
    fprintf(f, "\": %d", b);
  }
  for (int i = 0; i < N_MERGES; i++) fprintf(f, ", \"%s%s\": %d", g_merges[i][0], g_merges[i][1], 256 + i);
  fprintf(f, ", \"<|endoftext|>\": %d}", 256 + N_MERGES);
}

static void write_gpt2(const char *vocab, const char *merges) {
  FILE *f = fopen(vocab, "wb");
  put_vocab(f);
  fclose(f);
  f = fopen(merges, "wb");
  fprintf(f, "#version: 0.2\n");
  for (int i = 0; i < N_MERGES; i++) fprintf(f, "%s %s\n", g_merges[i][0], g_merges[i][1]);
  fclose(f);
}

/* A Llama-3-like PreTrainedTokenizerFast directory (tokenizer.json) over the same vocabulary and merges. */
static void write_fast(const char *dir) {
  char path[600];
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  FILE *f = fopen(path, "wb");
  const int bos = 257 + N_MERGES;
  fprintf(f, "{\"truncation\": null, \"padding\": null, \"normalizer\": null, \"added_tokens\": ["
             "{\"id\": %d, \"content\": \"<|begin_of_text|>\", \"special\": true, \"normalized\": false}, "
             "{\"id\": %d, \"content\": \"<|end_of_text|>\", \"special\": true, \"normalized\": false}], "
             "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "
             "{\"Regex\": \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| "
             "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}, "
             "\"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
             "\"use_regex\": false}]}, \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
             "[{\"SpecialToken\": {\"id\": \"B\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], "
             "\"special_tokens\": {\"B\": {\"id\": \"B\", \"ids\": [%d]}}}, \"decoder\": {\"type\": \"ByteLevel\"}, "
             "\"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"vocab\": ", bos, bos + 1, bos);
  put_vocab(f);
  fprintf(f, ", \"merges\": [");
  for (int i = 0; i < N_MERGES; i++) fprintf(f, "%s[\"%s\", \"%s\"]", i ? ", " : "", g_merges[i][0], g_merges[i][1]);
  fprintf(f, "]}}");
  fclose(f);
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  f = fopen(path, "wb");
  fprintf(f, "{\"tokenizer_class\": \"PreTrainedTokenizerFast\", \"bos_token\": \"<|begin_of_text|>\", "
             "\"eos_token\": \"<|end_of_text|>\"}");
  fclose(f);
}

static void write_bert(const char *path) {
  FILE *f = fopen(path, "wb");
  fprintf(f, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
  for (char c = 'a'; c <= 'z'; c++) fprintf(f, "%c\n##%c\n", c, c);
  for (char c = 'A'; c <= 'Z'; c++) fprintf(f, "%c\n", c);
  for (char c = '0'; c <= '9'; c++) fprintf(f, "%c\n##%c\n", c, c);
  fprintf(f, ".\n,\n!\n?\n'\n\"\n-\nthe\nhello\nworld\nHello\nun\n##able\n##ing\n##ed\ncaf\n##\xc3\xa9\n\xe6\x97\xa5\n");
  fclose(f);
}

/* vocab.json and merges.txt in dir, as an HF directory holds them */
static void write_gpt2_dir(const char *dir) {
  char vocab[600], merges[600];
  snprintf(vocab, sizeof vocab, "%s/vocab.json", dir);
  snprintf(merges, sizeof merges, "%s/merges.txt", dir);
  write_gpt2(vocab, merges);
}

/* A Qwen2Tokenizer directory (vocab.json + merges.txt, added tokens in tokenizer_config.json) over the same model. */
static void write_qwen2(const char *dir) {
  char path[600];
  write_gpt2_dir(dir);
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  FILE *f = fopen(path, "wb");
  fprintf(f, "{\"tokenizer_class\": \"Qwen2Tokenizer\", \"bos_token\": null, \"unk_token\": null, \"eos_token\": "
             "\"<|im_end|>\", \"added_tokens_decoder\": {\"%d\": {\"content\": \"<|im_start|>\", \"special\": true}, "
             "\"%d\": {\"content\": \"<|im_end|>\", \"special\": true}, \"%d\": {\"content\": \"<tool_call>\", "
             "\"special\": false}}}", 257 + N_MERGES, 258 + N_MERGES, 259 + N_MERGES);
  fclose(f);
}

/* NFC of valid UTF-8 s[0..n) as a malloc'd string (*m its length). */
static char *nfc_utf8(const char *s, size_t n, size_t *m) {
  uint32_t *cps = malloc((n + 1) * sizeof *cps), *o = malloc((4 * n + 1) * sizeof *o);
  size_t k = 0;
  for (size_t i = 0, used; i < n; i += used) cps[k++] = zt_utf8_decode((const uint8_t *)s + i, n - i, &used);
  k = zt_unicode_nfc(cps, k, o);
  char *out = malloc(4 * k + 1);
  *m = 0;
  for (size_t i = 0; i < k; i++) *m += (size_t)zt_utf8_encode(o[i], (uint8_t *)out + *m);
  free(cps);
  free(o);
  return out;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  char *vocab = scratch("vocab.json"), *merges = scratch("merges.txt"), *bert = scratch("vocab.txt");
  write_gpt2(vocab, merges);
  write_bert(bert);
  zt_tokenizer_spec s[K_N] = {{.kind = ZT_TOK_GPT2BPE, .vocab_file = vocab, .merge_file = merges},
                              {.kind = ZT_TOK_BERT_LOWER, .vocab_file = bert},
                              {.kind = ZT_TOK_BERT_CASE, .vocab_file = bert},
                              {.kind = ZT_TOK_NULL, .vocab_size = 1000}};
  for (int k = 0; k < K_NULL + 1; k++) g_tok[k] = zt_tokenizer_create(&s[k]);
  const char *cache = getenv("ZT_DATA_CACHE");
  char real_v[600], real_m[600];
  snprintf(real_v, sizeof real_v, "%s%s/gpt2/gpt2-vocab.json", cache ? cache : getenv("HOME") ? getenv("HOME") : "",
           cache ? "" : "/.cache/zerotron");
  snprintf(real_m, sizeof real_m, "%.*sgpt2-merges.txt", (int)(strlen(real_v) - strlen("gpt2-vocab.json")), real_v);
  if (access(real_v, R_OK) == 0 && access(real_m, R_OK) == 0) {
    zt_tokenizer_spec r = {.kind = ZT_TOK_GPT2BPE, .vocab_file = real_v, .merge_file = real_m};
    g_tok[K_GPT2_REAL] = zt_tokenizer_create(&r);
  } else {
    g_tok[K_GPT2_REAL] = g_tok[K_GPT2];
  }
  /* an HFTokenizer directory over the synthetic GPT-2 files */
  char *dir = scratch("hf");
  mkdir(dir, 0700);
  char path[600];
  write_gpt2_dir(dir);
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  FILE *f = fopen(path, "wb");
  fprintf(f, "{\"tokenizer_class\": \"GPT2Tokenizer\", \"add_prefix_space\": true, \"add_bos_token\": true, "
             "\"eos_token\": {\"content\": \"<|endoftext|>\", \"lstrip\": true, \"rstrip\": true}}");
  fclose(f);
  zt_tokenizer_spec h = {.kind = ZT_TOK_HF, .tokenizer_model = dir};
  g_tok[K_HF] = zt_tokenizer_create(&h);
  char *fast = scratch("hf_fast");
  mkdir(fast, 0700);
  write_fast(fast);
  zt_tokenizer_spec hf = {.kind = ZT_TOK_HF, .tokenizer_model = fast};
  g_tok[K_HF_FAST] = zt_tokenizer_create(&hf);
  char *qwen = scratch("hf_qwen2");
  mkdir(qwen, 0700);
  write_qwen2(qwen);
  zt_tokenizer_spec hq = {.kind = ZT_TOK_HF, .tokenizer_model = qwen};
  g_tok[K_HF_QWEN2] = zt_tokenizer_create(&hq);
  for (int k = 0; k < K_N; k++) g_state[k] = zt_tok_state_new(g_tok[k]);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const int k = data[0] % K_N;
  const char *text = (const char *)data + 1;
  const size_t len = size - 1;
  static zt_ids ids;
  ids.n = 0;
  int encoded = 0;
  ZT_FUZZ_TRY { /* only the NullTokenizer refuses text (not integers, out of range) */
    zt_tokenizer_encode(g_tok[k], g_state[k], text, len, &ids);
    encoded = 1;
  }
  zt_set_fatal_hook(NULL); /* from here a zt_fatal is a finding */
  if (!encoded) {
    if (k != K_NULL) abort();
    return 0;
  }
  size_t out_len = 0;
  char *back = zt_tokenizer_decode(g_tok[k], ids.ids, ids.n, &out_len);
  size_t bad;
  if ((k == K_GPT2 || k == K_GPT2_REAL) && zt_utf8_valid((const uint8_t *)text, len, &bad) &&
      (out_len != len || memcmp(back, text, len) != 0)) {
    fprintf(stderr, "fuzz_tokenizer: GPT-2 BPE round trip lost the text: %zu bytes in, %zu out\n", len, out_len);
    abort();
  }
  if (k == K_HF && zt_utf8_valid((const uint8_t *)text, len, &bad) && !memmem(text, len, "<|endoftext|>", 13) &&
      !memmem(text, len, "[PAD]", 5) &&
      (out_len != len + 14 || memcmp(back, "<|endoftext|> ", 14) != 0 || memcmp(back + 14, text, len) != 0)) {
    fprintf(stderr, "fuzz_tokenizer: HFTokenizer (GPT2Tokenizer) round trip lost the text: %zu bytes in, %zu out\n",
            len, out_len);
    abort();
  }
  static const char *const fast_added[] = {"<|begin_of_text|>", "<|end_of_text|>", "[PAD]", "<unk>"};
  int plain = k == K_HF_FAST && zt_utf8_valid((const uint8_t *)text, len, &bad);
  for (int a = 0; a < 4 && plain; a++) plain = !memmem(text, len, fast_added[a], strlen(fast_added[a]));
  if (plain && (out_len != len + 17 || memcmp(back, "<|begin_of_text|>", 17) != 0 ||
                memcmp(back + 17, text, len) != 0)) {
    fprintf(stderr, "fuzz_tokenizer: HFTokenizer (tokenizer.json) round trip lost the text: %zu bytes in, %zu out\n",
            len, out_len);
    abort();
  }
  static const char *const qwen_added[] = {"<|im_start|>", "<|im_end|>", "<tool_call>", "<s>", "<unk>"};
  if (k == K_HF_QWEN2 && zt_utf8_valid((const uint8_t *)text, len, &bad)) {
    size_t m;
    char *want = nfc_utf8(text, len, &m);
    int clean = 1;
    for (int a = 0; a < 5 && clean; a++) clean = !memmem(want, m, qwen_added[a], strlen(qwen_added[a]));
    if (clean && (out_len != m || memcmp(back, want, m) != 0)) {
      fprintf(stderr, "fuzz_tokenizer: HFTokenizer (Qwen2Tokenizer) did not give back the text's NFC: %zu bytes in, "
              "%zu out, %zu expected\n", len, out_len, m);
      abort();
    }
    free(want);
  }
  if (k == K_NULL) {
    zt_ids again = {0};
    zt_tokenizer_encode(g_tok[k], g_state[k], back, out_len, &again);
    if (again.n != ids.n || (ids.n && memcmp(again.ids, ids.ids, ids.n * sizeof(int32_t)) != 0)) {
      fprintf(stderr, "fuzz_tokenizer: NullTokenizer ids do not re-encode to themselves\n");
      abort();
    }
    zt_ids_free(&again);
  }
  free(back);
  return 0;
}
