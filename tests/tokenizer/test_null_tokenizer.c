/* NullTokenizer and the generic tokenizer layer: Megatron's --tokenizer-type names, and the
 * _NullTokenizer semantics (vocab_size = --vocab-size + 1, eod = --vocab-size, tokenize =
 * [int(x) for x in text.split(' ')], detokenize = ' '.join(map(str, ids))). The expected values are
 * what Python's int()/str.split(' ') give for the same inputs (worked out by hand). Bad input must
 * die (exit 1) with a message naming the token; that runs in a forked child. */
#include <string.h>

#include "data/tokenizer/tokenizer.h"
#include "tests/unit/testutil.h"

static zt_tokenizer *null_tok(int v) {
  zt_tokenizer_spec spec = {.kind = ZT_TOK_NULL, .vocab_size = v};
  return zt_tokenizer_create(&spec);
}

static void check_encode(const char *name, zt_tokenizer *t, const char *text, const int32_t *want, size_t nwant) {
  zt_tok_state *s = zt_tok_state_new(t);
  zt_ids ids = {0};
  zt_tokenizer_encode(t, s, text, strlen(text), &ids);
  int ok = ids.n == nwant && (nwant == 0 || memcmp(ids.ids, want, nwant * sizeof(int32_t)) == 0);
  tu_check(ok, name, "got %zu ids (first %d), want %zu (first %d)", ids.n, ids.n ? ids.ids[0] : -1, nwant,
           nwant ? want[0] : -1);
  zt_ids_free(&ids);
  zt_tok_state_free(s);
}

typedef struct {
  int vocab;
  const char *text;
} encode_case;

static void encode_in_child(void *ctx) {
  const encode_case *c = ctx;
  zt_tokenizer *t = null_tok(c->vocab);
  zt_tok_state *s = zt_tok_state_new(t);
  zt_ids ids = {0};
  zt_tokenizer_encode(t, s, c->text, strlen(c->text), &ids);
}

/* Runs encode(text) in a child; expects exit status 1 and `needle` in its stderr. */
static void check_dies(const char *name, int vocab, const char *text, const char *needle) {
  encode_case c = {vocab, text};
  tu_expect_fatal(name, encode_in_child, &c, needle);
}

int main(void) {
  /* names */
  const char *names[] = {"GPT2BPETokenizer", "BertWordPieceLowerCase", "BertWordPieceCase",
                         "SentencePieceTokenizer", "GPTSentencePieceTokenizer", "NullTokenizer", "HFTokenizer"};
  const zt_tokenizer_kind kinds[] = {ZT_TOK_GPT2BPE, ZT_TOK_BERT_LOWER, ZT_TOK_BERT_CASE,
                                     ZT_TOK_SENTENCEPIECE, ZT_TOK_GPT_SENTENCEPIECE, ZT_TOK_NULL, ZT_TOK_HF};
  for (int i = 0; i < 7; i++) {
    zt_tokenizer_kind k = ZT_TOK_NULL;
    int rc = zt_tokenizer_parse_kind(names[i], &k);
    tu_check(rc == 0 && k == kinds[i] && strcmp(zt_tokenizer_kind_name(k), names[i]) == 0, names[i],
             "rc %d kind %d name %s", rc, (int)k, zt_tokenizer_kind_name(k));
  }
  const char *unsupported[] = {"HFAutoTokenizer", "HuggingFaceTokenizer", "Llama2Tokenizer", "nulltokenizer", "",
                               "GPT2BPETokenizer ", "hftokenizer"};
  for (int i = 0; i < 7; i++) {
    zt_tokenizer_kind k;
    char nm[64];
    snprintf(nm, sizeof nm, "unsupported name \"%s\"", unsupported[i]);
    tu_check(zt_tokenizer_parse_kind(unsupported[i], &k) == -1, nm, "parse_kind accepted it");
  }

  /* vocab_size / eod: _NullTokenizer(V): eod = V, vocab_size = V + 1 */
  zt_tokenizer *t = null_tok(50257);
  tu_check(zt_tokenizer_vocab_size(t) == 50258 && zt_tokenizer_eod(t) == 50257, "null vocab_size/eod",
           "vocab_size %d eod %d", zt_tokenizer_vocab_size(t), zt_tokenizer_eod(t));

  check_encode("encode plain", t, "1 2 3", (const int32_t[]){1, 2, 3}, 3);
  check_encode("encode eod id", t, "0 50257", (const int32_t[]){0, 50257}, 2);
  /* int() strips surrounding whitespace (incl. \n \t \r \v \f, \x1c-\x1f, U+00A0, U+3000) */
  check_encode("encode trailing newline", t, "5 6\n", (const int32_t[]){5, 6}, 2);
  check_encode("encode tab/newline inside pieces", t, "\t7\r\n 8\x0b", (const int32_t[]){7, 8}, 2);
  check_encode("encode unicode spaces", t, "\xc2\xa0" "9\xe3\x80\x80 \x1f" "10", (const int32_t[]){9, 10}, 2);
  /* int() takes a sign, leading zeros and single underscores between digits */
  check_encode("encode sign/zeros/underscores", t, "+12 007 1_0 -0", (const int32_t[]){12, 7, 10, 0}, 4);
  check_encode("encode one", t, "42", (const int32_t[]){42}, 1);

  /* detokenize */
  {
    int32_t ids[] = {0, 17, 50257};
    size_t len;
    char *s = zt_tokenizer_decode(t, ids, 3, &len);
    tu_check(strcmp(s, "0 17 50257") == 0 && len == 10, "decode", "got \"%s\" (%zu)", s, len);
    free(s);
    s = zt_tokenizer_decode(t, ids, 0, &len);
    tu_check(strcmp(s, "") == 0 && len == 0, "decode empty", "got \"%s\"", s);
    free(s);
  }
  zt_tokenizer_free(t);

  /* text.split(' ') keeps empty pieces, and int('') fails */
  check_dies("dies: double space", 100, "1  2", "token 1 \"\"");
  check_dies("dies: leading space", 100, " 1", "token 0 \"\"");
  check_dies("dies: empty text", 100, "", "token 0 \"\"");
  check_dies("dies: word", 100, "1 2 cat 3", "token 2 \"cat\"");
  check_dies("dies: float", 100, "1.5", "\"1.5\"");
  check_dies("dies: double underscore", 100, "1__0", "\"1__0\"");
  check_dies("dies: trailing underscore", 100, "10_", "\"10_\"");
  check_dies("dies: out of vocab", 100, "3 101", "token 1 \"101\" (byte offset 2) is outside the vocabulary [0, 101)");
  check_dies("dies: negative", 100, "-1", "outside the vocabulary");
  check_dies("dies: huge", 100, "99999999999999999999999", "outside the vocabulary");
  /* 20 digits once wrapped the overflow guard itself (issue 25: "1 99999999999999999999 3" gave 1 19 3) */
  check_dies("dies: 20 digits", 100, "1 99999999999999999999 3", "token 1 \"99999999999999999999\" (byte offset 2) is "
             "outside the vocabulary");
  check_dies("dies: 2^64 + 19", 100, "18446744073709551635", "outside the vocabulary");
  check_dies("dies: 2^63", 100, "9223372036854775808", "outside the vocabulary");
  check_dies("dies: -2^63 - 1", 100, "-9223372036854775809", "outside the vocabulary");
  check_dies("dies: 40 digits", 100, "1234567890123456789012345678901234567890", "outside the vocabulary");
  check_dies("dies: newline separated", 100, "1\n2", "\"1\n2\"");
  return tu_finish();
}
