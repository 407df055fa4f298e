/* GPT-2 byte-level BPE, as Megatron's GPT2Tokenizer (OpenAI's encoder.py) computes it.
 *
 * Tokens live in byte space: vocab.json and merges.txt spell each byte as one character of GPT-2's
 * byte-to-unicode table, which is a bijection, so every token is stored as the byte string it stands
 * for. Strings are interned as symbols (vocab tokens plus the results of merges); merges are a hash
 * (left symbol, right symbol) -> (rank, merged symbol). Encoding = pre-tokenization (the GPT-2 regex,
 * hand-coded with Python `regex` semantics), then per pre-token a cache lookup or the rank-ordered merge
 * loop. Python's encoder.get(token, 0) is kept: a final symbol that is not in vocab.json is id 0. */
#include "data/tokenizer/gpt2_bpe.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "data/tokenizer/unicode.h"
#include "runtime/base/error.h"
#include "runtime/base/file.h"

#define WHAT "GPT2BPETokenizer"
#define NO_RANK INT32_MAX

/* ---- hashing ------------------------------------------------------------------------------------ */

static inline uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

static inline uint64_t hash_bytes(const uint8_t *p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0x100000001B3ull);
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  memcpy(&w, p, n);
  return mix64(h ^ w);
}

/* ---- the loaded tokenizer ----------------------------------------------------------------------- */

typedef struct {
  uint64_t key; /* (left << 32) | right, both + 1 so that 0 marks an empty slot */
  int32_t rank;
  int32_t result;
} merge_slot;

struct zt_gpt2_bpe {
  /* symbols: byte strings in one arena */
  uint8_t *bytes;
  size_t bytes_len, bytes_cap;
  uint32_t *sym_off, *sym_len;
  int32_t *sym_token; /* vocab id, or -1 when the string is not in vocab.json (encodes as 0) */
  int n_sym, cap_sym;
  int32_t *sym_slots; /* open addressing: symbol index + 1, 0 = empty */
  size_t sym_mask;
  int32_t byte_sym[256];
  /* merges */
  merge_slot *merges;
  size_t merge_mask, n_merges;
  /* decoding: id -> symbol (-1: no such id, -2: token has characters outside the byte alphabet) */
  int32_t *id_sym;
  int32_t n_ids;
  int vocab_size;
  int32_t eod;
  zt_bpe_pretok pretok;
  int ignore_merges; /* tokenizer.json's BPE: a pre-token that is itself a vocab token is that token */
};

static int32_t sym_find(const zt_gpt2_bpe *b, const uint8_t *s, size_t n, uint64_t h) {
  size_t i = h & b->sym_mask;
  for (;;) {
    int32_t v = b->sym_slots[i];
    if (!v) return -1;
    v--;
    if (b->sym_len[v] == n && memcmp(b->bytes + b->sym_off[v], s, n) == 0) return v;
    i = (i + 1) & b->sym_mask;
  }
}

static void sym_rehash(zt_gpt2_bpe *b, size_t slots) {
  free(b->sym_slots);
  b->sym_slots = zt_calloc(slots, sizeof(int32_t), "GPT-2 BPE symbol table");
  b->sym_mask = slots - 1;
  for (int v = 0; v < b->n_sym; v++) {
    size_t i = hash_bytes(b->bytes + b->sym_off[v], b->sym_len[v]) & b->sym_mask;
    while (b->sym_slots[i]) i = (i + 1) & b->sym_mask;
    b->sym_slots[i] = v + 1;
  }
}

/* Returns the symbol for s[0..n), creating it (not in the vocab) when new. */
static int32_t sym_intern(zt_gpt2_bpe *b, const uint8_t *s, size_t n) {
  uint64_t h = hash_bytes(s, n);
  int32_t v = sym_find(b, s, n, h);
  if (v >= 0) return v;
  if ((size_t)(b->n_sym + 1) * 2 > b->sym_mask + 1) {
    sym_rehash(b, (b->sym_mask + 1) * 2);
  }
  if (b->n_sym == b->cap_sym) {
    b->cap_sym = b->cap_sym ? b->cap_sym * 2 : 1024;
    b->sym_off = realloc(b->sym_off, (size_t)b->cap_sym * sizeof(uint32_t));
    b->sym_len = realloc(b->sym_len, (size_t)b->cap_sym * sizeof(uint32_t));
    b->sym_token = realloc(b->sym_token, (size_t)b->cap_sym * sizeof(int32_t));
    zt_check(b->sym_off && b->sym_len && b->sym_token, WHAT, "out of memory for %d symbols", b->cap_sym);
  }
  if (b->bytes_len + n > b->bytes_cap) {
    while (b->bytes_len + n > b->bytes_cap) b->bytes_cap = b->bytes_cap ? b->bytes_cap * 2 : 65536;
    b->bytes = realloc(b->bytes, b->bytes_cap);
    zt_check(b->bytes, WHAT, "out of memory for %zu bytes of tokens", b->bytes_cap);
  }
  zt_check(b->bytes_len + n <= UINT32_MAX, WHAT, "vocabulary and merges exceed 4 GiB of token text");
  memcpy(b->bytes + b->bytes_len, s, n);
  v = b->n_sym++;
  b->sym_off[v] = (uint32_t)b->bytes_len;
  b->sym_len[v] = (uint32_t)n;
  b->sym_token[v] = -1;
  b->bytes_len += n;
  size_t i = h & b->sym_mask;
  while (b->sym_slots[i]) i = (i + 1) & b->sym_mask;
  b->sym_slots[i] = v + 1;
  return v;
}

static inline const merge_slot *merge_find(const zt_gpt2_bpe *b, int32_t l, int32_t r) {
  uint64_t key = ((uint64_t)(uint32_t)(l + 1) << 32) | (uint32_t)(r + 1);
  size_t i = mix64(key) & b->merge_mask;
  for (;;) {
    const merge_slot *m = &b->merges[i];
    if (m->key == key) return m;
    if (!m->key) return NULL;
    i = (i + 1) & b->merge_mask;
  }
}

/* Inserts or overwrites (a later duplicate line takes the later rank, as Python's dict does). */
static void merge_put(zt_gpt2_bpe *b, int32_t l, int32_t r, int32_t rank, int32_t result) {
  uint64_t key = ((uint64_t)(uint32_t)(l + 1) << 32) | (uint32_t)(r + 1);
  size_t i = mix64(key) & b->merge_mask;
  while (b->merges[i].key && b->merges[i].key != key) i = (i + 1) & b->merge_mask;
  if (!b->merges[i].key) b->n_merges++;
  b->merges[i] = (merge_slot){key, rank, result};
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes to U+0100.. in
 * byte order. Returns the byte a code point stands for, or -1. */
static int byte_of_char(uint32_t cp) {
  if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF)) return (int)cp;
  if (cp < 0x100 || cp >= 0x100 + 68) return -1;
  int n = (int)(cp - 0x100);
  for (int byte = 0; byte < 256; byte++) {
    if ((byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF)) continue;
    if (n-- == 0) return byte;
  }
  return -1;
}

/* Converts a token spelled in the byte alphabet (UTF-8 s[0..n)) to its bytes in out (room for n).
 * Returns the byte count, or -1 (and the offending code point) if a character is outside the alphabet. */
static long token_to_bytes(const int16_t *char_byte, const uint8_t *s, size_t n, uint8_t *out, uint32_t *bad) {
  size_t i = 0, m = 0;
  while (i < n) {
    size_t used;
    uint32_t cp = zt_utf8_decode(s + i, n - i, &used);
    int byte = cp < 0x144 ? char_byte[cp] : -1;
    if (byte < 0) { *bad = cp; return -1; }
    out[m++] = (uint8_t)byte;
    i += used;
  }
  return (long)m;
}

static char *read_file(const char *path, const char *role, size_t *len) {
  char *buf = zt_read_file(path, len);
  if (!buf) zt_fatal(WHAT, "cannot open %s %s: %s", role, path, strerror(errno));
  return buf;
}

static int line_of(const char *text, const char *pos) {
  int line = 1;
  for (const char *p = text; p < pos && *p; p++) line += *p == '\n';
  return line;
}

/* The token -> id entries of a JSON object (vocab.json, or tokenizer.json's model.vocab); `where` names it in errors.
 * Returns the number of distinct tokens. */
static int vocab_from_object(zt_gpt2_bpe *b, const int16_t *char_byte, const cJSON *root, const char *where) {
  zt_check(cJSON_IsObject(root), WHAT, "%s: the top-level JSON value is not an object of token -> id", where);
  int32_t max_id = -1;
  int n_keys = 0;
  size_t longest = 0;
  for (cJSON *it = root->child; it; it = it->next) {
    n_keys++;
    double v = it->valuedouble;
    if (!cJSON_IsNumber(it))
      zt_fatal(WHAT, "%s: token \"%s\" (entry %d): the id is not a number (expected an integer in 0..%d)", where,
               it->string, n_keys, INT32_MAX - 1);
    if (!(v >= 0 && v < (double)INT32_MAX) || v != (double)(int32_t)v)
      zt_fatal(WHAT, "%s: token \"%s\" (entry %d): id %g is not an integer in 0..%d", where, it->string, n_keys, v,
               INT32_MAX - 1);
    if ((int32_t)v > max_id) max_id = (int32_t)v;
    if (strlen(it->string) > longest) longest = strlen(it->string);
  }
  zt_check(n_keys > 0, WHAT, "%s: empty vocabulary", where);
  b->n_ids = max_id + 1;
  b->id_sym = zt_malloc((size_t)b->n_ids * sizeof(int32_t), "GPT-2 BPE id table");
  for (int32_t i = 0; i < b->n_ids; i++) b->id_sym[i] = -1;
  uint8_t *tmp = zt_malloc(longest + 1, "GPT-2 BPE token buffer");
  int distinct = 0;
  b->eod = -1;
  for (cJSON *it = root->child; it; it = it->next) {
    int32_t id = (int32_t)it->valuedouble;
    const char *key = it->string;
    size_t klen = strlen(key);
    uint32_t bad;
    long n = token_to_bytes(char_byte, (const uint8_t *)key, klen, tmp, &bad);
    if (strcmp(key, "<|endoftext|>") == 0) b->eod = id;
    if (n < 0) {
      /* Python keeps such a token: it can never come out of encoding, and decoding it fails. */
      b->id_sym[id] = -2;
      distinct++; /* keys with foreign characters cannot collide with byte-alphabet keys */
      continue;
    }
    int before = b->n_sym;
    int32_t s = sym_intern(b, tmp, (size_t)n);
    distinct += b->n_sym > before; /* only vocab tokens are symbols yet: a new symbol is a new key */
    b->sym_token[s] = id; /* a duplicate key: the later id wins, as in Python's json.load */
    b->id_sym[id] = s;    /* a duplicate id: the later key decodes, as in Python's {v: k} */
  }
  free(tmp);
  return distinct;
}

static void load_vocab(zt_gpt2_bpe *b, const int16_t *char_byte, const char *path, int need_eod) {
  size_t len;
  char *text = read_file(path, "vocab file (--vocab-file)", &len);
  size_t bad_off;
  if (!zt_utf8_valid((const uint8_t *)text, len, &bad_off))
    zt_fatal(WHAT, "vocab file %s line %d: invalid UTF-8 at byte offset %zu", path, line_of(text, text + bad_off),
             bad_off);
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    int line = (at && at >= text && at <= text + len) ? line_of(text, at) : 0;
    zt_fatal(WHAT, "vocab file %s line %d: not valid JSON (expected an object of token -> id)", path, line);
  }
  char where[4200];
  snprintf(where, sizeof where, "vocab file %s", path);
  b->vocab_size = vocab_from_object(b, char_byte, root, where);
  cJSON_Delete(root);
  free(text);
  zt_check(b->eod >= 0 || !need_eod, WHAT, "vocab file %s has no \"<|endoftext|>\" token (Megatron's eod)", path);
}

/* Adds merge (l, r) -> res with its rank, growing the table (a later duplicate takes the later rank). */
static void merge_insert(zt_gpt2_bpe *b, int32_t l, int32_t r, int32_t rank, int32_t res) {
  if ((b->n_merges + 1) * 2 > b->merge_mask + 1) {
    merge_slot *old = b->merges;
    size_t old_slots = b->merge_mask + 1;
    b->merges = zt_calloc(old_slots * 2, sizeof(merge_slot), "GPT-2 BPE merge table");
    b->merge_mask = old_slots * 2 - 1;
    b->n_merges = 0;
    for (size_t i = 0; i < old_slots; i++)
      if (old[i].key) {
        size_t j = mix64(old[i].key) & b->merge_mask;
        while (b->merges[j].key) j = (j + 1) & b->merge_mask;
        b->merges[j] = old[i];
        b->n_merges++;
      }
    free(old);
  }
  merge_put(b, l, r, rank, res);
}

/* hf: transformers' slow tokenizers' reading (Qwen2Tokenizer): each line stripped, a first line starting with
 * "#version:" skipped, the last line kept without its newline; else Megatron's. */
static void load_merges(zt_gpt2_bpe *b, const int16_t *char_byte, const char *path, int hf) {
  size_t len;
  char *text = read_file(path, "merges file (--merge-file)", &len);
  size_t bad_off;
  if (!zt_utf8_valid((const uint8_t *)text, len, &bad_off))
    zt_fatal(WHAT, "merges file %s line %d: invalid UTF-8 at byte offset %zu", path,
             line_of(text, text + bad_off), bad_off);
  /* Megatron: read().split('\n')[1:-1], one merge per line, rank = position. Line 1 is the
   * "#version" header; a last line without a newline is dropped, as Python's slice drops it. */
  char *p = text, *end = text + len;
  char *nl = memchr(p, '\n', (size_t)(end - p));
  int line = 1;
  if (!hf) {
    if (!nl || strncmp(p, "#version", 8) != 0)
      zt_fatal(WHAT, "merges file %s line 1: expected the \"#version: ...\" header line (Megatron's loader "
               "skips line 1 unconditionally, so a merge there would be lost)", path);
    p = nl + 1;
  } else {
    const char *q = p;
    while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\v' || *q == '\f')) q++;
    if ((size_t)(end - q) >= 9 && !strncmp(q, "#version:", 9)) p = nl ? nl + 1 : end;
    else line = 0; /* line 1 is a merge */
  }
  uint8_t *tmp = zt_malloc(len + 1, "GPT-2 BPE merge buffer");
  int foreign = 0, first_foreign = 0;
  while (p < end) {
    line++;
    nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl && !hf) {
      zt_warn("%s: merges file %s line %d has no final newline; it is ignored, as Megatron's loader ignores it",
              WHAT, path, line);
      break;
    }
    char *e = nl ? nl : end;
    /* Fields split on whitespace (Python's str.split()); an empty line is an empty, harmless merge. */
    char *f[3];
    size_t fl[3];
    int nf = 0;
    for (char *q = p; q < e;) {
      while (q < e && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\v' || *q == '\f')) q++;
      if (q >= e) break;
      char *s = q;
      while (q < e && !(*q == ' ' || *q == '\t' || *q == '\r' || *q == '\v' || *q == '\f')) q++;
      if (nf < 3) { f[nf] = s; fl[nf] = (size_t)(q - s); }
      nf++;
    }
    if (nf != 0 && nf != 2)
      zt_fatal(WHAT, "merges file %s line %d: expected two space-separated tokens, found %d", path, line, nf);
    if (nf == 2) {
      uint32_t bad;
      long na = token_to_bytes(char_byte, (const uint8_t *)f[0], fl[0], tmp, &bad);
      long nb = na < 0 ? -1 : token_to_bytes(char_byte, (const uint8_t *)f[1], fl[1], tmp + na, &bad);
      if (na < 0 || nb < 0) {
        if (!foreign++) first_foreign = line;
      } else {
        int32_t l = sym_intern(b, tmp, (size_t)na), r = sym_intern(b, tmp + na, (size_t)nb);
        int32_t res = sym_intern(b, tmp, (size_t)(na + nb));
        merge_insert(b, l, r, line, res);
      }
    }
    p = e + 1;
  }
  if (foreign)
    zt_warn("%s: merges file %s: %d merges (first on line %d) use characters outside GPT-2's byte alphabet and "
            "can never apply", WHAT, path, foreign, first_foreign);
  free(tmp);
  free(text);
}

static zt_gpt2_bpe *bpe_new(int16_t *char_byte) {
  zt_gpt2_bpe *b = zt_calloc(1, sizeof *b, "GPT-2 BPE tokenizer");
  for (uint32_t cp = 0; cp < 0x144; cp++) char_byte[cp] = (int16_t)byte_of_char(cp);
  sym_rehash(b, 1 << 17);
  b->merges = zt_calloc(1 << 16, sizeof(merge_slot), "GPT-2 BPE merge table");
  b->merge_mask = (1 << 16) - 1;
  return b;
}

/* vocab.json and merges.txt; hf: as transformers' slow tokenizers read them, else as Megatron does. */
static zt_gpt2_bpe *load_files(const char *vocab_json, const char *merges_txt, int hf, zt_bpe_pretok pretok) {
  int16_t char_byte[0x144];
  zt_gpt2_bpe *b = bpe_new(char_byte);
  load_vocab(b, char_byte, vocab_json, !hf);
  for (int byte = 0; byte < 256; byte++) {
    uint8_t c = (uint8_t)byte;
    b->byte_sym[byte] = sym_intern(b, &c, 1);
  }
  load_merges(b, char_byte, merges_txt, hf);
  b->pretok = pretok;
  return b;
}

zt_gpt2_bpe *zt_gpt2_bpe_load(const char *vocab_json, const char *merges_txt) {
  zt_check(vocab_json && *vocab_json, WHAT, "no vocab file: pass --vocab-file <gpt2-vocab.json>");
  zt_check(merges_txt && *merges_txt, WHAT, "no merges file: pass --merge-file <gpt2-merges.txt>");
  return load_files(vocab_json, merges_txt, 0, ZT_BPE_PRETOK_GPT2);
}

zt_gpt2_bpe *zt_gpt2_bpe_load_hf(const char *vocab_json, const char *merges_txt, zt_bpe_pretok pretok) {
  return load_files(vocab_json, merges_txt, 1, pretok);
}

/* A vocab token spelled s[0..n) in the byte alphabet: its symbol, or -1 (with *bytes_out its bytes in buf). */
static int32_t token_sym(const zt_gpt2_bpe *b, const int16_t *char_byte, const char *s, size_t n, uint8_t *buf,
                         long *bytes_out) {
  uint32_t bad;
  long m = token_to_bytes(char_byte, (const uint8_t *)s, n, buf, &bad);
  *bytes_out = m;
  if (m < 0) return -1;
  int32_t v = sym_find(b, buf, (size_t)m, hash_bytes(buf, (size_t)m));
  return v >= 0 && b->sym_token[v] >= 0 ? v : -1;
}

zt_gpt2_bpe *zt_gpt2_bpe_from_json(const struct cJSON *vocab, const struct cJSON *merges, zt_bpe_pretok pretok,
                                   int ignore_merges, const char *where) {
  int16_t char_byte[0x144];
  zt_gpt2_bpe *b = bpe_new(char_byte);
  char w[4200];
  snprintf(w, sizeof w, "%s: model.vocab", where);
  b->vocab_size = vocab_from_object(b, char_byte, vocab, w);
  zt_check(b->n_ids == b->vocab_size, WHAT, "%s: model.vocab's %d tokens do not have the ids 0..%d (the largest is "
           "%d): the tokenizers library numbers new tokens from the token count, so ids would collide", where,
           b->vocab_size, b->vocab_size - 1, b->n_ids - 1);
  b->eod = -1;
  b->pretok = pretok;
  b->ignore_merges = ignore_merges;
  for (int byte = 0; byte < 256; byte++) {
    uint8_t c = (uint8_t)byte;
    int32_t v = sym_find(b, &c, 1, hash_bytes(&c, 1));
    zt_check(v >= 0 && b->sym_token[v] >= 0, WHAT, "%s: model.vocab has no token for the byte 0x%02X; with unk_token "
             "null the tokenizers library drops such bytes from the text, which zerotron refuses", where, byte);
    b->byte_sym[byte] = v;
  }
  zt_check(cJSON_IsArray(merges), WHAT, "%s: model.merges is not an array", where);
  size_t cap = 0;
  uint8_t *buf = NULL;
  int32_t rank = 0;
  for (const cJSON *m = merges->child; m; m = m->next, rank++) {
    const char *a, *c;
    size_t al, cl;
    if (cJSON_IsString(m)) { /* "a b" */
      const char *sp = strchr(m->valuestring, ' ');
      zt_check(sp && !strchr(sp + 1, ' '), WHAT, "%s: model.merges[%d] \"%s\" is not two tokens separated by one "
               "space", where, (int)rank, m->valuestring);
      a = m->valuestring, al = (size_t)(sp - a), c = sp + 1, cl = strlen(c);
    } else { /* ["a", "b"] */
      zt_check(cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
               cJSON_IsString(m->child->next), WHAT, "%s: model.merges[%d] is neither \"a b\" nor [\"a\", \"b\"]",
               where, (int)rank);
      a = m->child->valuestring, al = strlen(a), c = m->child->next->valuestring, cl = strlen(c);
    }
    if (al + cl + 1 > cap) {
      cap = 2 * (al + cl + 1);
      free(buf);
      buf = zt_malloc(cap, "tokenizer.json merge buffer");
    }
    long na, nc;
    int32_t l = token_sym(b, char_byte, a, al, buf, &na), r = token_sym(b, char_byte, c, cl, buf + (na > 0 ? na : 0),
                                                                        &nc);
    zt_check(l >= 0 && r >= 0, WHAT, "%s: model.merges[%d] (\"%.*s\", \"%.*s\"): \"%.*s\" is not a token of "
             "model.vocab", where, (int)rank, (int)al, a, (int)cl, c, l < 0 ? (int)al : (int)cl, l < 0 ? a : c);
    int32_t res = sym_find(b, buf, (size_t)(na + nc), hash_bytes(buf, (size_t)(na + nc)));
    zt_check(res >= 0 && b->sym_token[res] >= 0, WHAT, "%s: model.merges[%d] (\"%.*s\", \"%.*s\"): the merged token "
             "\"%.*s%.*s\" is not in model.vocab", where, (int)rank, (int)al, a, (int)cl, c, (int)al, a, (int)cl, c);
    merge_insert(b, l, r, rank, res);
  }
  free(buf);
  return b;
}

int32_t zt_gpt2_bpe_token_id(const zt_gpt2_bpe *b, const char *token) {
  const size_t n = strlen(token);
  uint8_t *buf = zt_malloc(n + 1, "GPT-2 BPE token");
  long m = zt_gpt2_bpe_chars_to_bytes(token, n, buf);
  int32_t v = m < 0 ? -1 : sym_find(b, buf, (size_t)m, hash_bytes(buf, (size_t)m));
  free(buf);
  return v >= 0 ? b->sym_token[v] : -1;
}

const uint8_t *zt_gpt2_bpe_id_bytes(const zt_gpt2_bpe *b, int32_t id, size_t *len) {
  const int32_t s = id >= 0 && id < b->n_ids ? b->id_sym[id] : -1;
  if (s < 0) return NULL;
  *len = b->sym_len[s];
  return b->bytes + b->sym_off[s];
}

long zt_gpt2_bpe_chars_to_bytes(const char *s, size_t n, uint8_t *out) {
  size_t i = 0, m = 0;
  while (i < n) {
    size_t used;
    int byte = byte_of_char(zt_utf8_decode((const uint8_t *)s + i, n - i, &used));
    if (byte < 0) return -1;
    out[m++] = (uint8_t)byte;
    i += used;
  }
  return (long)m;
}

void zt_gpt2_bpe_free(zt_gpt2_bpe *b) {
  if (!b) return;
  free(b->bytes);
  free(b->sym_off);
  free(b->sym_len);
  free(b->sym_token);
  free(b->sym_slots);
  free(b->merges);
  free(b->id_sym);
  free(b);
}

int zt_gpt2_bpe_vocab_size(const zt_gpt2_bpe *b) { return b->vocab_size; }
int32_t zt_gpt2_bpe_eod(const zt_gpt2_bpe *b) { return b->eod; }

/* ---- per-thread cache and scratch --------------------------------------------------------------- */

enum {
  CACHE_SLOTS = 1 << 17,        /* open addressing, at most half full */
  CACHE_MAX_ENTRIES = 1 << 16,
  CACHE_KEY_BYTES = 1 << 21,    /* bounded memory: ~5 MiB in all; the cache is emptied when full */
  CACHE_ID_COUNT = 1 << 18,
  CACHE_MAX_WORD = 256,         /* longer pre-tokens are not cached */
  LINEAR_MAX = 48,              /* words up to this many bytes use the plain O(n^2) merge loop */
};

typedef struct {
  uint64_t hash;
  uint32_t key_off, ids_off;
  uint16_t key_len, n_ids;
} cache_entry;

struct zt_gpt2_bpe_cache {
  const zt_gpt2_bpe *owner;
  uint32_t *slots; /* entry index + 1 */
  cache_entry *entries;
  uint8_t *keys;
  int32_t *ids;
  size_t n_entries, keys_len, ids_len;
  /* merge-loop scratch, grown to the longest word seen */
  int32_t *sym, *rank, *res, *next, *prev;
  uint64_t *heap, *pending;
  size_t scratch_cap;
  /* valid-UTF-8 copy of the text when the input has errors */
  uint8_t *clean;
  size_t clean_cap;
};

zt_gpt2_bpe_cache *zt_gpt2_bpe_cache_new(void) {
  zt_gpt2_bpe_cache *c = zt_calloc(1, sizeof *c, "GPT-2 BPE cache");
  c->slots = zt_calloc(CACHE_SLOTS, sizeof(uint32_t), "GPT-2 BPE cache");
  c->entries = zt_malloc(CACHE_MAX_ENTRIES * sizeof(cache_entry), "GPT-2 BPE cache");
  c->keys = zt_malloc(CACHE_KEY_BYTES, "GPT-2 BPE cache");
  c->ids = zt_malloc(CACHE_ID_COUNT * sizeof(int32_t), "GPT-2 BPE cache");
  return c;
}

void zt_gpt2_bpe_cache_free(zt_gpt2_bpe_cache *c) {
  if (!c) return;
  free(c->slots);
  free(c->entries);
  free(c->keys);
  free(c->ids);
  free(c->sym);
  free(c->rank);
  free(c->res);
  free(c->next);
  free(c->prev);
  free(c->heap);
  free(c->pending);
  free(c->clean);
  free(c);
}

static void cache_clear(zt_gpt2_bpe_cache *c) {
  memset(c->slots, 0, CACHE_SLOTS * sizeof(uint32_t));
  c->n_entries = c->keys_len = c->ids_len = 0;
}

static void scratch_reserve(zt_gpt2_bpe_cache *c, size_t n) {
  if (n <= c->scratch_cap) return;
  size_t cap = c->scratch_cap ? c->scratch_cap : 64;
  while (cap < n) cap *= 2;
  c->sym = realloc(c->sym, cap * sizeof(int32_t));
  c->rank = realloc(c->rank, cap * sizeof(int32_t));
  c->res = realloc(c->res, cap * sizeof(int32_t));
  c->next = realloc(c->next, cap * sizeof(int32_t));
  c->prev = realloc(c->prev, cap * sizeof(int32_t));
  /* the heap receives at most n - 1 initial pairs plus 2 per merge; pending at most 2 per merge */
  c->heap = realloc(c->heap, 3 * cap * sizeof(uint64_t));
  c->pending = realloc(c->pending, 2 * cap * sizeof(uint64_t));
  zt_check(c->sym && c->rank && c->res && c->next && c->prev && c->heap && c->pending, WHAT,
           "out of memory for a %zu-byte word", n);
  c->scratch_cap = cap;
}

/* ---- the merge loop ----------------------------------------------------------------------------- */

static inline void pair_rank(const zt_gpt2_bpe *b, zt_gpt2_bpe_cache *c, int32_t p) {
  int32_t q = c->next[p];
  const merge_slot *m = q >= 0 ? merge_find(b, c->sym[p], c->sym[q]) : NULL;
  c->rank[p] = m ? m->rank : NO_RANK;
  c->res[p] = m ? m->result : -1;
}

/* Merges position p with its successor (the pair's result symbol is in res[p]). */
static inline void merge_at(zt_gpt2_bpe_cache *c, int32_t p) {
  int32_t q = c->next[p];
  c->sym[p] = c->res[p];
  c->next[p] = c->next[q];
  if (c->next[q] >= 0) c->prev[c->next[q]] = p;
  c->sym[q] = -1;
}

/* Python's loop: take the lowest-ranked pair, merge all its occurrences left to right, repeat. A pair
 * created by a merge never equals the pair being merged, so ranks can be refreshed in the same pass. */
static void bpe_linear(const zt_gpt2_bpe *b, zt_gpt2_bpe_cache *c) {
  for (;;) {
    int32_t best = NO_RANK;
    for (int32_t p = 0; p >= 0; p = c->next[p])
      if (c->rank[p] < best) best = c->rank[p];
    if (best == NO_RANK) return;
    for (int32_t p = 0; p >= 0; p = c->next[p]) {
      if (c->rank[p] != best) continue;
      merge_at(c, p);
      pair_rank(b, c, p);
      if (c->prev[p] >= 0) pair_rank(b, c, c->prev[p]);
    }
  }
}

/* Min-heap of (rank << 32 | position). */
static void heap_push(uint64_t *h, size_t *n, uint64_t v) {
  size_t i = (*n)++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (h[parent] <= v) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
  uint64_t top = h[0], v = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1;
    if (l >= *n) break;
    size_t m = (l + 1 < *n && h[l + 1] < h[l]) ? l + 1 : l;
    if (h[m] >= v) break;
    h[i] = h[m];
    i = m;
  }
  if (*n) h[i] = v;
  return top;
}

/* The same result for long words in O(n log n): occurrences of one rank are merged in position order,
 * and the pairs they create wait in `pending` until that rank is done (Python's pass structure). */
static void bpe_heap(const zt_gpt2_bpe *b, zt_gpt2_bpe_cache *c, int32_t n) {
  size_t nh = 0, np = 0;
  for (int32_t p = 0; p < n; p++)
    if (c->rank[p] != NO_RANK) heap_push(c->heap, &nh, ((uint64_t)c->rank[p] << 32) | (uint32_t)p);
  while (nh) {
    int32_t r = (int32_t)(c->heap[0] >> 32);
    while (nh && (int32_t)(c->heap[0] >> 32) == r) {
      int32_t p = (int32_t)(uint32_t)heap_pop(c->heap, &nh);
      if (c->sym[p] < 0 || c->rank[p] != r) continue; /* merged away or a stale pair */
      merge_at(c, p);
      pair_rank(b, c, p);
      if (c->rank[p] != NO_RANK) c->pending[np++] = ((uint64_t)c->rank[p] << 32) | (uint32_t)p;
      int32_t pp = c->prev[p];
      if (pp >= 0) {
        pair_rank(b, c, pp);
        if (c->rank[pp] != NO_RANK) c->pending[np++] = ((uint64_t)c->rank[pp] << 32) | (uint32_t)pp;
      }
    }
    for (size_t i = 0; i < np; i++) heap_push(c->heap, &nh, c->pending[i]);
    np = 0;
  }
}

/* BPE of one pre-token w[0..n); appends the ids to out (and returns them via *ids_out when cached). */
static void bpe_word(const zt_gpt2_bpe *b, zt_gpt2_bpe_cache *c, const uint8_t *w, size_t n, int32_t *ids,
                     size_t *n_ids) {
  if (b->ignore_merges) { /* the word is a vocabulary token: that token (cached like any other result) */
    const int32_t v = sym_find(b, w, n, hash_bytes(w, n));
    if (v >= 0 && b->sym_token[v] >= 0) {
      ids[0] = b->sym_token[v];
      *n_ids = 1;
      return;
    }
  }
  scratch_reserve(c, n);
  int32_t len = (int32_t)n;
  for (int32_t i = 0; i < len; i++) {
    c->sym[i] = b->byte_sym[w[i]];
    c->next[i] = i + 1 < len ? i + 1 : -1;
    c->prev[i] = i - 1;
  }
  for (int32_t i = 0; i < len; i++) pair_rank(b, c, i);
  if (n <= LINEAR_MAX) bpe_linear(b, c);
  else bpe_heap(b, c, len);
  size_t k = 0;
  for (int32_t p = 0; p >= 0; p = c->next[p]) {
    int32_t t = b->sym_token[c->sym[p]];
    ids[k++] = t < 0 ? 0 : t; /* Megatron: self.encoder.get(token, 0) */
  }
  *n_ids = k;
}

/* ---- pre-tokenization ---------------------------------------------------------------------------- */

enum { CL_L = 0, CL_N, CL_WS, CL_O };

/* Classes of the ASCII characters (L: letters, N: digits, W: \t \n \v \f \r and space, O: the rest). */
#define L CL_L
#define N CL_N
#define W CL_WS
#define O CL_O
static const uint8_t ascii_class[128] = {
  O, O, O, O, O, O, O, O, O, W, W, W, W, W, O, O,
  O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O,
  W, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O,
  N, N, N, N, N, N, N, N, N, N, O, O, O, O, O, O,
  O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
  L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O,
  O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
  L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O,
};
#undef L
#undef N
#undef W
#undef O

/* Class of the code point at s[i] (valid UTF-8) and its byte length. */
static inline int char_class(const uint8_t *s, size_t n, size_t i, size_t *w) {
  if (s[i] < 0x80) { *w = 1; return ascii_class[s[i]]; }
  uint32_t cp = zt_utf8_decode(s + i, n - i, w);
  if (zt_unicode_is_white_space(cp)) return CL_WS;
  zt_ucat cat = zt_unicode_category(cp);
  if (cat >= ZT_UC_Lu && cat <= ZT_UC_Lo) return CL_L;
  if (cat >= ZT_UC_Nd && cat <= ZT_UC_No) return CL_N;
  return CL_O;
}

static inline size_t run_end(const uint8_t *s, size_t n, size_t i, int cls) {
  while (i < n) {
    if (s[i] < 0x80) {
      if (ascii_class[s[i]] != cls) break;
      i++;
    } else {
      size_t w;
      if (char_class(s, n, i, &w) != cls) break;
      i += w;
    }
  }
  return i;
}

/* End of the pre-token starting at s[i]: the first alternative of
 * 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ that matches there. */
static size_t pretoken_end(const uint8_t *s, size_t n, size_t i) {
  uint8_t c0 = s[i];
  if (c0 == '\'' && i + 1 < n) {
    uint8_t a = s[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (i + 2 < n) {
      uint8_t z = s[i + 2];
      if ((a == 'r' && z == 'e') || (a == 'v' && z == 'e') || (a == 'l' && z == 'l')) return i + 3;
    }
  }
  size_t w;
  if (c0 == ' ' && i + 1 < n) {
    int c1 = char_class(s, n, i + 1, &w);
    if (c1 != CL_WS) return run_end(s, n, i + 1 + w, c1);
  }
  int cls = char_class(s, n, i, &w);
  if (cls != CL_WS) return run_end(s, n, i + w, cls);
  /* \s+(?!\S): the whitespace run, less its last character when a non-space follows; \s+ when the run
   * is a single character followed by a non-space. */
  size_t j = i + w, last = i;
  int count = 1;
  while (j < n) {
    size_t w2;
    if (char_class(s, n, j, &w2) != CL_WS) break;
    last = j;
    j += w2;
    count++;
  }
  if (j == n || count == 1) return j;
  return last;
}

static inline int is_crlf(uint8_t c) { return c == '\r' || c == '\n'; }

/* The case folding (?i) applies to the contractions: ASCII letters and U+017F (long s, which folds to s). */
static inline uint32_t fold_lower(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  return cp == 0x17F ? 's' : cp;
}

/* End of the pre-token starting at s[i] under Llama-3's Split regex (tiktoken's cl100k pattern; with digits 1,
 * Qwen2Tokenizer's, whose \p{N} takes one digit at a time):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * (Python `regex` semantics: the first alternative that matches, each greedy with backtracking). */
static size_t llama3_pretoken_end(const uint8_t *s, size_t n, size_t i, int digits) {
  size_t w, w1, w2;
  if (s[i] == '\'' && i + 1 < n) {
    const uint32_t a = fold_lower(zt_utf8_decode(s + i + 1, n - i - 1, &w1));
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 1 + w1;
    if ((a == 'r' || a == 'v' || a == 'l') && i + 1 + w1 < n) {
      const uint32_t z = fold_lower(zt_utf8_decode(s + i + 1 + w1, n - i - 1 - w1, &w2));
      if (z == (a == 'l' ? 'l' : 'e')) return i + 1 + w1 + w2;
    }
  }
  const int c0 = char_class(s, n, i, &w);
  if (c0 == CL_L) return run_end(s, n, i + w, CL_L);
  if (c0 != CL_N && !is_crlf(s[i]) && i + w < n && char_class(s, n, i + w, &w1) == CL_L)
    return run_end(s, n, i + w + w1, CL_L);
  if (c0 == CL_N) { /* \p{N}{1,3} (Qwen2's: \p{N}) */
    size_t j = i + w;
    for (int k = 1; k < digits && j < n && char_class(s, n, j, &w1) == CL_N; k++) j += w1;
    return j;
  }
  if (c0 == CL_O || (s[i] == ' ' && i + 1 < n && char_class(s, n, i + 1, &w1) == CL_O)) {
    size_t j = run_end(s, n, c0 == CL_O ? i + w : i + 1 + w1, CL_O);
    while (j < n && is_crlf(s[j])) j++;
    return j;
  }
  /* whitespace: \s*[\r\n]+ ends after the run's last CR or LF; else \s+(?!\S) leaves the run's last character
   * to the next pre-token when a non-space follows, and \s+ takes a single character */
  size_t j = i, last = i, nl = SIZE_MAX;
  int count = 0;
  while (j < n && char_class(s, n, j, &w1) == CL_WS) {
    if (is_crlf(s[j])) nl = j;
    last = j;
    j += w1;
    count++;
  }
  if (nl != SIZE_MAX) return nl + 1;
  if (j == n || count == 1) return j;
  return last;
}

size_t zt_gpt2_bpe_pretokenize(const char *text, size_t len, size_t *ends, size_t max_ends) {
  const uint8_t *s = (const uint8_t *)text;
  size_t k = 0;
  for (size_t i = 0; i < len;) {
    i = pretoken_end(s, len, i);
    if (k < max_ends) ends[k] = i;
    k++;
  }
  return k;
}

/* ---- encode / decode ------------------------------------------------------------------------------ */

static void emit_word(const zt_gpt2_bpe *b, zt_gpt2_bpe_cache *c, const uint8_t *w, size_t n, zt_ids *out) {
  if (n == 1) {
    int32_t t = b->sym_token[b->byte_sym[w[0]]];
    zt_ids_push(out, t < 0 ? 0 : t);
    return;
  }
  if (n > CACHE_MAX_WORD) {
    scratch_reserve(c, n);
    int32_t *ids = zt_malloc(n * sizeof(int32_t), "GPT-2 BPE word ids");
    size_t k;
    bpe_word(b, c, w, n, ids, &k);
    for (size_t i = 0; i < k; i++) zt_ids_push(out, ids[i]);
    free(ids);
    return;
  }
  uint64_t h = hash_bytes(w, n);
  size_t i = h & (CACHE_SLOTS - 1);
  for (;;) {
    uint32_t v = c->slots[i];
    if (!v) break;
    const cache_entry *e = &c->entries[v - 1];
    if (e->hash == h && e->key_len == n && memcmp(c->keys + e->key_off, w, n) == 0) {
      const int32_t *ids = c->ids + e->ids_off;
      for (uint16_t k = 0; k < e->n_ids; k++) zt_ids_push(out, ids[k]);
      return;
    }
    i = (i + 1) & (CACHE_SLOTS - 1);
  }
  if (c->n_entries == CACHE_MAX_ENTRIES || c->keys_len + n > CACHE_KEY_BYTES || c->ids_len + n > CACHE_ID_COUNT) {
    cache_clear(c);
    i = h & (CACHE_SLOTS - 1);
  }
  int32_t *ids = c->ids + c->ids_len;
  size_t k;
  bpe_word(b, c, w, n, ids, &k);
  memcpy(c->keys + c->keys_len, w, n);
  c->entries[c->n_entries] = (cache_entry){h, (uint32_t)c->keys_len, (uint32_t)c->ids_len, (uint16_t)n, (uint16_t)k};
  c->slots[i] = (uint32_t)(++c->n_entries);
  c->keys_len += n;
  c->ids_len += k;
  for (size_t j = 0; j < k; j++) zt_ids_push(out, ids[j]);
}

void zt_gpt2_bpe_encode(const zt_gpt2_bpe *b, zt_gpt2_bpe_cache *c, const char *text, size_t len, zt_ids *out) {
  const uint8_t *s = (const uint8_t *)text;
  if (!zt_utf8_valid(s, len, NULL)) {
    len = zt_utf8_sanitize(s, len, &c->clean, &c->clean_cap);
    s = c->clean;
  }
  zt_gpt2_bpe_encode_utf8(b, c, (const char *)s, len, out);
}

void zt_gpt2_bpe_encode_utf8(const zt_gpt2_bpe *b, zt_gpt2_bpe_cache *c, const char *text, size_t len,
                             zt_ids *out) {
  if (c->owner != b) {
    cache_clear(c);
    c->owner = b;
  }
  const uint8_t *s = (const uint8_t *)text;
  for (size_t i = 0; i < len;) {
    const size_t e = b->pretok == ZT_BPE_PRETOK_LLAMA3   ? llama3_pretoken_end(s, len, i, 3)
                     : b->pretok == ZT_BPE_PRETOK_QWEN2 ? llama3_pretoken_end(s, len, i, 1)
                                                        : pretoken_end(s, len, i);
    emit_word(b, c, s + i, e - i, out);
    i = e;
  }
}

char *zt_gpt2_bpe_decode(const zt_gpt2_bpe *b, const int32_t *ids, size_t n, size_t *len_out) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t id = ids[i];
    int32_t s = (id >= 0 && id < b->n_ids) ? b->id_sym[id] : -1;
    if (s == -1)
      zt_fatal(WHAT, "cannot decode id %d (position %zu): not in the vocabulary (%d tokens, ids 0..%d)", id, i,
               b->vocab_size, b->n_ids - 1);
    if (s == -2)
      zt_fatal(WHAT, "cannot decode id %d (position %zu): its vocab.json token has characters outside GPT-2's "
               "byte alphabet", id, i);
    total += b->sym_len[s];
  }
  uint8_t *raw = zt_malloc(total + 1, "GPT-2 BPE decode buffer");
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t s = b->id_sym[ids[i]];
    memcpy(raw + m, b->bytes + b->sym_off[s], b->sym_len[s]);
    m += b->sym_len[s];
  }
  if (zt_utf8_valid(raw, m, NULL)) {
    raw[m] = 0;
    *len_out = m;
    return (char *)raw;
  }
  uint8_t *clean = NULL;
  size_t cap = 0;
  size_t k = zt_utf8_sanitize(raw, m, &clean, &cap);
  clean[k] = 0;
  free(raw);
  *len_out = k;
  return (char *)clean;
}
