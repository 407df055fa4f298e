/* BERT WordPiece in C alone: tokenizations worked out by hand on a small vocab.txt written here
 * (Megatron's bert_tokenization.py rules: clean-up, CJK spacing, lower + NFD + drop Mn for the
 * LowerCase kind, punctuation split, greedy longest match with "##", 200-character limit), the
 * vocab_size with Megatron's added [BOS]/[EOS]/<extra_id_N>, eod = -1, decode, and the errors. */
#include <stdio.h>
#include <string.h>

#include "data/tokenizer/tokenizer.h"
#include "tests/unit/testutil.h"

/* line i of the vocabulary has id i */
static const char *VOCAB[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "hello", "world",       /* 0-9 */
    ",", "!", "##s", "cat", "the", ".", "x", "##x", "中", "文",                                     /* 10-19 */
    "i", "ο", "##δ", "##ο", "##ς", "##σ", "a", "##b", "'", "s",                                    /* 20-29 */
    "Hello", "##é", "h", "n", "##'", "t", "don", "e",                                               /* 30-37 */
};
#define NV ((int)(sizeof VOCAB / sizeof VOCAB[0]))

static char vocab_path[256];

static zt_tokenizer *bert(int lower, int extra) {
  zt_tokenizer_spec spec = {.kind = lower ? ZT_TOK_BERT_LOWER : ZT_TOK_BERT_CASE, .vocab_file = vocab_path,
                            .vocab_extra_ids = extra};
  return zt_tokenizer_create(&spec);
}

static void expect(const char *name, zt_tokenizer *t, const char *text, const int32_t *want, size_t nwant) {
  zt_tok_state *s = zt_tok_state_new(t);
  zt_ids ids = {0};
  zt_tokenizer_encode(t, s, text, strlen(text), &ids);
  int ok = ids.n == nwant && (nwant == 0 || memcmp(ids.ids, want, nwant * sizeof(int32_t)) == 0);
  char got[512] = "", exp[512] = "";
  for (size_t i = 0; i < ids.n && strlen(got) < 480; i++) snprintf(got + strlen(got), 16, " %d", ids.ids[i]);
  for (size_t i = 0; i < nwant && strlen(exp) < 480; i++) snprintf(exp + strlen(exp), 16, " %d", want[i]);
  tu_check(ok, name, "got [%s ] want [%s ]", got, exp);
  zt_ids_free(&ids);
  zt_tok_state_free(s);
}
#define EXPECT(name, t, text, ...)                                                                                   \
  expect(name, t, text, (const int32_t[]){__VA_ARGS__}, sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

static void expect_decode(const char *name, zt_tokenizer *t, const int32_t *ids, size_t n, const char *want) {
  size_t len;
  char *s = zt_tokenizer_decode(t, ids, n, &len);
  tu_check(strcmp(s, want) == 0 && len == strlen(want), name, "got \"%s\" want \"%s\"", s, want);
  free(s);
}

/* Runs fn in a child; expects exit status 1 and needle in its stderr. */
static void run_void(void *fn) { ((void (*)(void))fn)(); }
static void expect_death(const char *name, void (*fn)(void), const char *needle) {
  tu_expect_fatal(name, run_void, (void *)fn, needle);
}

static char bad_vocab_path[256];
static void load_missing_file(void) {
  zt_tokenizer_spec spec = {.kind = ZT_TOK_BERT_LOWER, .vocab_file = "/nonexistent/vocab.txt"};
  zt_tokenizer_create(&spec);
}
static void load_no_mask(void) {
  zt_tokenizer_spec spec = {.kind = ZT_TOK_BERT_CASE, .vocab_file = bad_vocab_path};
  zt_tokenizer_create(&spec);
}
static void load_no_flag(void) {
  zt_tokenizer_spec spec = {.kind = ZT_TOK_BERT_CASE};
  zt_tokenizer_create(&spec);
}
static void decode_bad_id(void) {
  zt_tokenizer *t = bert(1, 0);
  int32_t ids[] = {5, 40};
  zt_tokenizer_decode(t, ids, 2, NULL);
}

int main(void) {
  snprintf(vocab_path, sizeof vocab_path, "/tmp/zt_test_bert_vocab_%d.txt", (int)getpid());
  FILE *f = fopen(vocab_path, "w");
  for (int i = 0; i < NV; i++) fprintf(f, "%s\n", VOCAB[i]);
  fclose(f);
  snprintf(bad_vocab_path, sizeof bad_vocab_path, "/tmp/zt_test_bert_bad_%d.txt", (int)getpid());
  f = fopen(bad_vocab_path, "w");
  fprintf(f, "[PAD]\n[UNK]\n[CLS]\n[SEP]\nword\n");
  fclose(f);

  zt_tokenizer *lo = bert(1, 0), *ca = bert(0, 0), *lo3 = bert(1, 3);
  /* vocab_size: the lines plus [BOS] and [EOS] (ids NV, NV+1), plus <extra_id_0..2>; BERT has no eod */
  tu_check(zt_tokenizer_vocab_size(lo) == NV + 2 && zt_tokenizer_eod(lo) == -1, "vocab_size/eod",
           "vocab_size %d (want %d) eod %d", zt_tokenizer_vocab_size(lo), NV + 2, zt_tokenizer_eod(lo));
  tu_check(zt_tokenizer_vocab_size(lo3) == NV + 5, "vocab_size with 3 extra ids", "vocab_size %d want %d",
           zt_tokenizer_vocab_size(lo3), NV + 5);

  EXPECT("lower: unaffable -> un ##aff ##able", lo, "Unaffable", 5, 6, 7);
  EXPECT("lower: accents stripped, punctuation split", lo, "H\xc3\xa9llo, World!", 8, 10, 9, 11);
  EXPECT("case: accent kept, no match from H -> [UNK]", ca, "H\xc3\xa9llo", 1);
  EXPECT("case: Hello matches the cased token", ca, "Hello world", 30, 9);
  EXPECT("case: capital not lowered -> [UNK]", ca, "World", 1);
  EXPECT("lower: U+0130 -> i + U+0307 -> i", lo, "\xc4\xb0", 20);
  EXPECT("lower: final sigma (ΟΔΟΣ -> ο ##δ ##ο ##ς)", lo, "\xce\x9f\xce\x94\xce\x9f\xce\xa3", 21, 22, 23, 24);
  EXPECT("lower: non-final sigma (ΟΣΟ -> ο ##σ ##ο)", lo, "\xce\x9f\xce\xa3\xce\x9f", 21, 25, 23);
  EXPECT("CJK spaced out", lo, "\xe4\xb8\xad\xe6\x96\x87" "cat", 18, 19, 13);
  EXPECT("control chars, NUL, U+FFFD and ZWSP dropped", lo, "a\x01\xef\xbf\xbd\xe2\x80\x8b" "b", 26, 27);
  EXPECT("whitespace runs, tab, newline, NBSP", lo, " \t the\n\xc2\xa0 cats\r\n", 14, 13, 12);
  EXPECT("unknown word -> one [UNK]", lo, "the zebra cat", 14, 1, 13);
  EXPECT("word with an unmatched tail -> [UNK] only", lo, "unaffablez", 1);
  EXPECT("apostrophes split", lo, "don't", 36, 28, 35);
  EXPECT("invalid UTF-8 -> U+FFFD -> dropped", lo, "a\xff\xfe" "b", 26, 27);
  {
    char w200[202], w201[203];
    memset(w200, 'x', 200);
    w200[200] = 0;
    memset(w201, 'x', 201);
    w201[201] = 0;
    int32_t want[200];
    want[0] = 16;
    for (int i = 1; i < 200; i++) want[i] = 17;
    expect("200 characters: x ##x*199", lo, w200, want, 200);
    EXPECT("201 characters: [UNK] (max_input_chars_per_word 200)", lo, w201, 1);
  }
  EXPECT("empty text", lo, "", );

  /* decode: ' '.join, " ##" merged, then Megatron's clean-up of spaces before punctuation */
  expect_decode("decode merges ##", lo, (const int32_t[]){5, 6, 7, 10, 8, 9, 11}, 7, "unaffable, hello world!");
  expect_decode("decode ' n't 's clean-up", lo, (const int32_t[]){36, 33, 28, 35, 8, 28, 29}, 7, "donn't hello's");
  expect_decode("decode added tokens", lo, (const int32_t[]){NV, 8, NV + 1}, 3, "[BOS] hello [EOS]");
  expect_decode("decode extra id", lo3, (const int32_t[]){NV + 4}, 1, "<extra_id_2>");

  expect_death("missing vocab file", load_missing_file, "/nonexistent/vocab.txt");
  expect_death("vocab without [MASK]", load_no_mask, "has no [MASK]");
  expect_death("no --vocab-file", load_no_flag, "--vocab-file");
  expect_death("decode of an id outside the vocabulary", decode_bad_id, "id 40 (position 1)");
  zt_tokenizer_free(lo);
  zt_tokenizer_free(ca);
  zt_tokenizer_free(lo3);
  remove(vocab_path);
  remove(bad_vocab_path);
  return tu_finish();
}
