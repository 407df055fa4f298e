/* HFTokenizer: transformers' slow LlamaTokenizer, GPT2Tokenizer and Qwen2Tokenizer, and the fast
 * PreTrainedTokenizerFast of a byte-level BPE tokenizer.json (Llama-3's), as Megatron-DeepSpeed's _HFTokenizer loads
 * them from a directory (hf_tokenizer.h). */
#include "data/tokenizer/hf_tokenizer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/tokenizer/gpt2_bpe.h"
#include "data/tokenizer/sentencepiece_shim.h"
#include "data/tokenizer/unicode.h"
#include "runtime/base/error.h"
#include "runtime/base/file.h"

#define FLAG "--tokenizer-model"
#define SPIECE "\xE2\x96\x81" /* U+2581, SentencePiece's whitespace */

enum { BOS, EOS, UNK, PAD, N_SPECIAL };
static const char *const special_key[N_SPECIAL] = {"bos_token", "eos_token", "unk_token", "pad_token"};

typedef struct {
  char *content; /* NULL: the tokenizer has none */
  size_t len;
  int32_t id;
  int lstrip, rstrip;
} hf_special;

/* An added token of a PreTrainedTokenizerFast (tokenizer.json's added_tokens, then the special tokens transformers
 * and Megatron add). */
typedef struct {
  char *content;
  size_t len;
  int32_t id;
  int normalized; /* matched in the second pass, inside the text the normalized=false tokens left */
  int special;
} hf_added;

enum { CLASS_LLAMA = 0, CLASS_GPT2 = 1, CLASS_FAST = 2, CLASS_QWEN2 = 3 };

struct zt_hf_tok {
  int gpt2;        /* 0: LlamaTokenizer (or the fast class), 1: GPT2Tokenizer */
  int fast;        /* the added-token list and byte-level BPE below: PreTrainedTokenizerFast or Qwen2Tokenizer */
  int qwen2;       /* Qwen2Tokenizer (slow): vocab.json + merges.txt, NFC, its regex; non-special added tokens decode
                    * as their text */
  char *dir;
  zt_spm *sp;      /* LlamaTokenizer: tokenizer.model (without its dummy prefix when not legacy) */
  zt_gpt2_bpe *bpe; /* GPT2Tokenizer */
  int base;        /* tokenizer.vocab_size */
  int legacy, add_prefix_space, add_bos, add_eos, clean_up;
  int unk_len;     /* non-legacy Llama: the pieces of the unk token's text */
  hf_special sp_tok[N_SPECIAL];
  /* the ids encode() puts before and after the text: the slow classes' bos/eos, the fast class's template */
  int32_t pre[8], post[8];
  int npre, npost;
  /* PreTrainedTokenizerFast */
  hf_added *added;
  int n_added;
  uint8_t added_first[2][256]; /* [normalized][byte]: some added token of that pass starts with the byte */
  int n_normalized;            /* added tokens with normalized true (matched in the second pass) */
  int nfc;                     /* tokenizer.json's normalizer is NFC */
};

struct zt_hf_state {
  zt_gpt2_bpe_cache *cache;
  char *buf;
  size_t cap;
  zt_ids tmp;
};

/* ---- loading ----------------------------------------------------------------------------------------------- */

static char *path_in(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = zt_malloc(n, "HFTokenizer path");
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The parsed JSON file DIR/name, or NULL when it does not exist; malformed JSON dies naming it. */
static cJSON *read_json(const char *dir, const char *name) {
  char *path = path_in(dir, name);
  size_t n;
  char *s = zt_read_file(path, &n);
  if (!s) {
    zt_check(errno == ENOENT, FLAG, "%s: cannot read: %s", path, strerror(errno));
    free(path);
    return NULL;
  }
  cJSON *j = cJSON_ParseWithLength(s, n);
  if (!j) {
    const char *at = cJSON_GetErrorPtr();
    zt_fatal(FLAG, "%s is not valid JSON (error near byte %ld)", path, at ? (long)(at - s) : 0L);
  }
  zt_check(cJSON_IsObject(j), FLAG, "%s: the top level is not a JSON object", path);
  free(s);
  free(path);
  return j;
}

static int json_bool(const cJSON *j, const char *key, int dflt, const char *dir, const char *file) {
  const cJSON *v = j ? cJSON_GetObjectItemCaseSensitive(j, key) : NULL;
  if (!v || cJSON_IsNull(v)) return dflt;
  zt_check(cJSON_IsBool(v), FLAG, "%s/%s: \"%s\" must be true, false or null", dir, file, key);
  return cJSON_IsTrue(v);
}

static void set_special(hf_special *t, const char *content, int lstrip, int rstrip) {
  free(t->content);
  t->content = NULL;
  t->len = 0;
  if (!content) return;
  t->len = strlen(content);
  t->content = zt_malloc(t->len + 1, "HFTokenizer special token");
  memcpy(t->content, content, t->len + 1);
  t->lstrip = lstrip;
  t->rstrip = rstrip;
}

/* A special token's value: a string, an AddedToken object {"content", "lstrip", "rstrip", ...}, or null. */
static void read_special(hf_special *t, const cJSON *v, const char *key, const char *dir, const char *file) {
  if (!v) return;
  if (cJSON_IsNull(v)) {
    set_special(t, NULL, 0, 0);
  } else if (cJSON_IsString(v)) {
    set_special(t, v->valuestring, 0, 0);
  } else if (cJSON_IsObject(v)) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "content");
    zt_check(cJSON_IsString(c), FLAG, "%s/%s: \"%s\" has no \"content\" string", dir, file, key);
    zt_check(!json_bool(v, "single_word", 0, dir, file), FLAG, "%s/%s: \"%s\" (\"%s\") has single_word true, "
             "which HFTokenizer does not support", dir, file, key, c->valuestring);
    set_special(t, c->valuestring, json_bool(v, "lstrip", 0, dir, file), json_bool(v, "rstrip", 0, dir, file));
  } else {
    zt_fatal(FLAG, "%s/%s: \"%s\" must be a string, an AddedToken object or null", dir, file, key);
  }
  zt_check(!t->content || t->len > 0, FLAG, "%s/%s: \"%s\" is the empty string", dir, file, key);
}

/* Keys naming more special or added tokens than bos/eos/unk/pad, which would change the splitting: refused unless
 * they only repeat those four. */
static void check_extra_tokens(const zt_hf_tok *h, const cJSON *j, const char *file) {
  if (!j) return;
  static const char *const extra[] = {"cls_token", "sep_token", "mask_token"};
  for (int k = 0; k < 3; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, extra[k]);
    if (!v || cJSON_IsNull(v)) continue;
    const cJSON *c = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "content") : v;
    int known = 0;
    for (int s = 0; s < N_SPECIAL && cJSON_IsString(c); s++)
      known |= h->sp_tok[s].content && strcmp(h->sp_tok[s].content, c->valuestring) == 0;
    zt_check(known, FLAG, "%s/%s: \"%s\" adds a special token besides bos/eos/unk/pad, which HFTokenizer does not "
             "support", h->dir, file, extra[k]);
  }
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "additional_special_tokens");
  zt_check(!a || cJSON_IsNull(a) || (cJSON_IsArray(a) && cJSON_GetArraySize(a) == 0), FLAG,
           "%s/%s: \"additional_special_tokens\" is not supported by HFTokenizer (only bos/eos/unk/pad)", h->dir,
           file);
}

/* The id of a string in the base vocabulary, or -1. */
static int32_t base_id(const zt_hf_tok *h, const cJSON *vocab, const char *s) {
  if (!h->gpt2) return zt_spm_piece_to_id_exact(h->sp, s);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(vocab, s);
  return cJSON_IsNumber(v) ? (int32_t)v->valueint : -1;
}

/* tokenizer_config.json's "added_tokens_decoder": each entry must be one of the special tokens; its id and its
 * lstrip/rstrip are the ones transformers uses. */
static void read_added_tokens(zt_hf_tok *h, const cJSON *cfg) {
  const cJSON *dec = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "added_tokens_decoder") : NULL;
  if (!dec) return;
  zt_check(cJSON_IsObject(dec), FLAG, "%s/tokenizer_config.json: \"added_tokens_decoder\" must be an object",
           h->dir);
  const cJSON *e;
  cJSON_ArrayForEach(e, dec) {
    char *end;
    long id = strtol(e->string, &end, 10);
    zt_check(*e->string && !*end && id >= 0 && id < (1L << 30), FLAG, "%s/tokenizer_config.json: "
             "added_tokens_decoder key \"%s\" is not a token id", h->dir, e->string);
    const cJSON *c = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "content") : NULL;
    zt_check(cJSON_IsString(c), FLAG, "%s/tokenizer_config.json: added_tokens_decoder[\"%s\"] has no \"content\"",
             h->dir, e->string);
    int s = 0;
    while (s < N_SPECIAL && !(h->sp_tok[s].content && strcmp(h->sp_tok[s].content, c->valuestring) == 0)) s++;
    zt_check(s < N_SPECIAL, FLAG, "%s/tokenizer_config.json: added token %ld \"%s\" is not the bos, eos, unk or pad "
             "token; HFTokenizer supports no other added tokens", h->dir, id, c->valuestring);
    zt_check(!json_bool(e, "single_word", 0, h->dir, "tokenizer_config.json"), FLAG, "%s/tokenizer_config.json: "
             "added token \"%s\" has single_word true, which HFTokenizer does not support", h->dir, c->valuestring);
    h->sp_tok[s].id = (int32_t)id;
    h->sp_tok[s].lstrip = json_bool(e, "lstrip", 0, h->dir, "tokenizer_config.json");
    h->sp_tok[s].rstrip = json_bool(e, "rstrip", 0, h->dir, "tokenizer_config.json");
  }
}

/* The class (CLASS_*): tokenizer_config.json's tokenizer_class, else config.json's model_type. */
static int choose_class(const char *dir, const cJSON *cfg) {
  const cJSON *c = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "tokenizer_class") : NULL;
  if (c && !cJSON_IsNull(c)) {
    zt_check(cJSON_IsString(c), FLAG, "%s/tokenizer_config.json: \"tokenizer_class\" must be a string", dir);
    const char *s = c->valuestring;
    if (!strcmp(s, "LlamaTokenizer") || !strcmp(s, "LlamaTokenizerFast")) return CLASS_LLAMA;
    if (!strcmp(s, "GPT2Tokenizer") || !strcmp(s, "GPT2TokenizerFast")) return CLASS_GPT2;
    if (!strcmp(s, "PreTrainedTokenizerFast")) return CLASS_FAST;
    if (!strcmp(s, "Qwen2Tokenizer") || !strcmp(s, "Qwen2TokenizerFast")) return CLASS_QWEN2;
    zt_fatal(FLAG, "%s/tokenizer_config.json: tokenizer_class \"%s\" is not supported: HFTokenizer reads the slow "
             "LlamaTokenizer (tokenizer.model), GPT2Tokenizer and Qwen2Tokenizer (vocab.json + merges.txt) "
             "directories, and PreTrainedTokenizerFast directories with a byte-level BPE tokenizer.json (Llama-3's)", dir, s);
  }
  cJSON *model = read_json(dir, "config.json");
  const cJSON *t = model ? cJSON_GetObjectItemCaseSensitive(model, "model_type") : NULL;
  int gpt2 = -1;
  if (cJSON_IsString(t) && !strcmp(t->valuestring, "llama")) gpt2 = 0;
  if (cJSON_IsString(t) && !strcmp(t->valuestring, "gpt2")) gpt2 = 1;
  if (cJSON_IsString(t) && !strcmp(t->valuestring, "qwen2")) gpt2 = CLASS_QWEN2;
  if (gpt2 < 0)
    zt_fatal(FLAG, "%s: no tokenizer_class in tokenizer_config.json and config.json's model_type is %s%s%s: "
             "HFTokenizer reads LlamaTokenizer (model_type llama), GPT2Tokenizer (gpt2) and Qwen2Tokenizer (qwen2) "
             "directories", dir,
             cJSON_IsString(t) ? "\"" : "", cJSON_IsString(t) ? t->valuestring : "missing",
             cJSON_IsString(t) ? "\"" : "");
  cJSON_Delete(model);
  return gpt2;
}

/* ---- PreTrainedTokenizerFast: a byte-level BPE tokenizer.json --------------------------------------------- */

#define TJ "tokenizer.json"

/* Llama-3's Split pre-tokenizer regex, as tokenizer.json spells it */
static const char LLAMA3_REGEX[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                                   "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static const cJSON *item(const cJSON *o, const char *key) {
  return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static int is_type(const cJSON *o, const char *type) {
  const cJSON *t = item(o, "type");
  return cJSON_IsString(t) && !strcmp(t->valuestring, type);
}

static int is_null(const cJSON *v) { return !v || cJSON_IsNull(v); }

/* Dies naming tokenizer.json, the key and (the start of) its value. */
static void refuse_json(const zt_hf_tok *h, const char *key, const cJSON *v, const char *why) {
  char *txt = v ? cJSON_PrintUnformatted(v) : NULL;
  zt_fatal(FLAG, "%s/" TJ ": %s %.300s%s is not supported: %s", h->dir, key, txt ? txt : "null",
           txt && strlen(txt) > 300 ? "..." : "", why);
}

/* The pre-tokenizer: GPT-2's ByteLevel (its regex, no prefix space) or Llama-3's Sequence [Split on the regex,
 * Isolated; ByteLevel without regex or prefix space]. */
static zt_bpe_pretok fast_pre_tokenizer(zt_hf_tok *h, const cJSON *pt) {
  if (is_type(pt, "ByteLevel") && json_bool(pt, "use_regex", 1, h->dir, TJ)) {
    if (json_bool(pt, "add_prefix_space", 1, h->dir, TJ))
      refuse_json(h, "pre_tokenizer", pt, "its add_prefix_space true is read by transformers before 4.49 and replaced "
                  "by tokenizer_config.json's add_prefix_space (default false) since; set it to false");
    return ZT_BPE_PRETOK_GPT2;
  }
  const cJSON *l = is_type(pt, "Sequence") ? item(pt, "pretokenizers") : NULL;
  if (cJSON_IsArray(l) && cJSON_GetArraySize(l) == 2) {
    const cJSON *sp = l->child, *bl = l->child->next, *re = item(item(sp, "pattern"), "Regex");
    const cJSON *beh = item(sp, "behavior");
    if (is_type(sp, "Split") && cJSON_IsString(re) && !strcmp(re->valuestring, LLAMA3_REGEX) &&
        cJSON_IsString(beh) && !strcmp(beh->valuestring, "Isolated") && !json_bool(sp, "invert", 0, h->dir, TJ) &&
        is_type(bl, "ByteLevel") && !json_bool(bl, "add_prefix_space", 1, h->dir, TJ) &&
        !json_bool(bl, "use_regex", 1, h->dir, TJ))
      return ZT_BPE_PRETOK_LLAMA3;
  }
  refuse_json(h, "pre_tokenizer", pt, "HFTokenizer reads GPT-2's ByteLevel pre-tokenizer and Llama-3's Split on its "
              "regex (Isolated) followed by ByteLevel without regex");
  return ZT_BPE_PRETOK_GPT2;
}

/* One post-processor: ByteLevel (no effect on ids) or TemplateProcessing's single-sequence template. */
static void fast_post_one(zt_hf_tok *h, const cJSON *pp, int *templates) {
  if (is_type(pp, "ByteLevel")) return;
  if (!is_type(pp, "TemplateProcessing"))
    refuse_json(h, "post_processor", pp, "HFTokenizer reads ByteLevel and TemplateProcessing post-processors");
  if ((*templates)++)
    refuse_json(h, "post_processor", pp, "a second TemplateProcessing would apply the pair template to the first "
                "one's output");
  const cJSON *single = item(pp, "single"), *specials = item(pp, "special_tokens"), *e;
  if (!cJSON_IsArray(single)) refuse_json(h, "post_processor.single", single, "it must be an array");
  int seen_a = 0;
  cJSON_ArrayForEach(e, single) {
    const cJSON *seq = item(e, "Sequence"), *sp = item(e, "SpecialToken");
    if (seq) {
      const cJSON *id = item(seq, "id");
      if (seen_a || !cJSON_IsString(id) || strcmp(id->valuestring, "A"))
        refuse_json(h, "post_processor.single", single, "the single template must hold the sequence $A once");
      seen_a = 1;
      continue;
    }
    const cJSON *name = item(sp, "id");
    const cJSON *ids = cJSON_IsString(name) ? item(item(specials, name->valuestring), "ids") : NULL;
    if (!cJSON_IsArray(ids)) refuse_json(h, "post_processor.single", single, "a SpecialToken without its ids in "
                                         "special_tokens");
    const cJSON *v;
    cJSON_ArrayForEach(v, ids) {
      int *n = seen_a ? &h->npost : &h->npre;
      int32_t *dst = seen_a ? h->post : h->pre;
      zt_check(cJSON_IsNumber(v) && v->valuedouble >= 0 && *n < 8, FLAG, "%s/" TJ ": post_processor special token "
               "\"%s\": ids must be at most 8 token ids in all", h->dir, name->valuestring);
      dst[(*n)++] = (int32_t)v->valuedouble;
    }
  }
  if (!seen_a) refuse_json(h, "post_processor.single", single, "the single template has no sequence $A");
}

/* The id tokenizers gives a new added token: after the largest added id when that is past the model's vocabulary,
 * else the vocabulary size (AddedVocabulary::add_tokens). */
static int32_t next_added_id(const zt_hf_tok *h) {
  int32_t max = -1;
  for (int i = 0; i < h->n_added; i++)
    if (h->added[i].id > max) max = h->added[i].id;
  return max >= h->base ? max + 1 : h->base;
}

static int32_t find_added(const zt_hf_tok *h, const char *content) {
  for (int i = 0; i < h->n_added; i++)
    if (!strcmp(h->added[i].content, content)) return h->added[i].id;
  return -1;
}

static void push_added(zt_hf_tok *h, const char *content, int32_t id, int normalized, int special) {
  h->added = realloc(h->added, (size_t)(h->n_added + 1) * sizeof *h->added);
  zt_check(h->added != NULL, FLAG, "out of memory for added tokens");
  hf_added *a = &h->added[h->n_added++];
  a->len = strlen(content);
  a->content = zt_malloc(a->len + 1, "HFTokenizer added token");
  memcpy(a->content, content, a->len + 1);
  a->id = id;
  a->normalized = normalized;
  a->special = special;
  h->added_first[normalized][(uint8_t)content[0]] = 1;
  h->n_normalized += normalized;
}

/* A special token transformers or Megatron adds: its id as an added token, else as a model token (it still becomes
 * an added token, which splits the text), else a new id. normalized: the AddedToken's own flag (false for a
 * string: a special token's default). */
static int32_t ensure_added(zt_hf_tok *h, const char *content, int normalized) {
  int32_t id = find_added(h, content);
  if (id >= 0) return id;
  id = zt_gpt2_bpe_token_id(h->bpe, content);
  if (id < 0) id = next_added_id(h);
  push_added(h, content, id, normalized, 1);
  return id;
}

/* The "normalized" flag of a special token's value (an AddedToken object may set it; a string cannot). */
static int special_normalized(const zt_hf_tok *h, const cJSON *v) {
  return cJSON_IsObject(v) ? json_bool(v, "normalized", 0, h->dir, "tokenizer_config.json") : 0;
}

static void fast_added_tokens(zt_hf_tok *h, const cJSON *list) {
  if (is_null(list)) return;
  if (!cJSON_IsArray(list)) refuse_json(h, "added_tokens", list, "it must be an array");
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    const cJSON *id = item(e, "id"), *c = item(e, "content");
    zt_check(cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < (1 << 30) && cJSON_IsString(c) &&
             c->valuestring[0], FLAG, "%s/" TJ ": an added_tokens entry needs an \"id\" and a non-empty \"content\"",
             h->dir);
    static const char *const flags[] = {"single_word", "lstrip", "rstrip"};
    for (int f = 0; f < 3; f++)
      zt_check(!json_bool(e, flags[f], 0, h->dir, TJ), FLAG, "%s/" TJ ": added token \"%s\" has %s true, which "
               "HFTokenizer does not support", h->dir, c->valuestring, flags[f]);
    zt_check(find_added(h, c->valuestring) < 0, FLAG, "%s/" TJ ": added token \"%s\" is listed twice", h->dir,
             c->valuestring);
    /* the tokenizers library does not take the file's ids: add_tokens numbers them (a vocabulary token keeps its
     * id, a new one takes the next id), and a different id in the file only draws a warning */
    int32_t want = zt_gpt2_bpe_token_id(h->bpe, c->valuestring);
    if (want < 0) want = next_added_id(h);
    zt_check((int32_t)id->valuedouble == want, FLAG, "%s/" TJ ": added token \"%s\" has id %d, but the tokenizers "
             "library gives it id %d (%s)", h->dir, c->valuestring, (int)id->valuedouble, (int)want,
             want < h->base ? "its vocabulary token's" : "the next one after the vocabulary and the added tokens "
             "before it");
    push_added(h, c->valuestring, want, json_bool(e, "normalized", 0, h->dir, TJ), json_bool(e, "special", 0, h->dir,
               TJ));
  }
}

/* The special tokens of tokenizer_config.json / special_tokens_map.json, in transformers' order (bos, eos, unk,
 * sep, pad, cls, mask, additional_special_tokens): each becomes an added token unless it is one. */
static void fast_special_tokens(zt_hf_tok *h, const cJSON *cfg, const char *const *defaults) {
  const char *file = "tokenizer_config.json";
  const int has_decoder = cfg && item(cfg, "added_tokens_decoder");
  cJSON *map = has_decoder ? NULL : read_json(h->dir, "special_tokens_map.json");
  static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                                     "mask_token"};
  static const int slot[] = {BOS, EOS, UNK, -1, PAD, -1, -1};
  for (int k = 0; k < 7; k++) {
    hf_special t = {0};
    if (defaults) set_special(&t, defaults[k], 0, 0); /* the class's, replaced by the files' (null included) */
    read_special(&t, item(cfg, keys[k]), keys[k], h->dir, file);
    read_special(&t, item(map, keys[k]), keys[k], h->dir, "special_tokens_map.json");
    if (!t.content) continue;
    zt_check(!t.lstrip && !t.rstrip, FLAG, "%s: \"%s\" (\"%s\") has lstrip or rstrip true, which HFTokenizer does not "
             "support with a tokenizer.json", h->dir, keys[k], t.content);
    const int32_t id = ensure_added(h, t.content, special_normalized(h, item(map, keys[k]) ? item(map, keys[k])
                                                                                           : item(cfg, keys[k])));
    if (slot[k] >= 0) {
      h->sp_tok[slot[k]] = t;
      h->sp_tok[slot[k]].id = id;
    } else {
      free(t.content);
    }
  }
  const cJSON *extra = item(map, "additional_special_tokens");
  if (!extra) extra = item(cfg, "additional_special_tokens");
  if (!is_null(extra)) {
    zt_check(cJSON_IsArray(extra), FLAG, "%s: \"additional_special_tokens\" must be a list", h->dir);
    const cJSON *e;
    cJSON_ArrayForEach(e, extra) {
      hf_special t = {0};
      read_special(&t, e, "additional_special_tokens", h->dir, file);
      zt_check(t.content && !t.lstrip && !t.rstrip, FLAG, "%s: an additional_special_tokens entry is null or has "
               "lstrip or rstrip true, which HFTokenizer does not support with a tokenizer.json", h->dir);
      ensure_added(h, t.content, special_normalized(h, e));
      free(t.content);
    }
  }
  cJSON_Delete(map);
  /* Megatron's _HFTokenizer: pad "[PAD]", eos "</s>", bos "<s>", unk "<unk>" where the tokenizer has none */
  static const int order[] = {PAD, EOS, BOS, UNK};
  static const char *const text[] = {"[PAD]", "</s>", "<s>", "<unk>"};
  for (int k = 0; k < 4; k++) {
    hf_special *t = &h->sp_tok[order[k]];
    if (t->content) continue;
    set_special(t, text[k], 0, 0);
    t->id = ensure_added(h, text[k], 0);
  }
}

static void load_fast(zt_hf_tok *h, const cJSON *cfg) {
  h->fast = 1;
  cJSON *tj = read_json(h->dir, TJ);
  zt_check(tj != NULL, FLAG, "%s: no " TJ ": tokenizer_class PreTrainedTokenizerFast loads the tokenizers library's "
           "file", h->dir);
  const cJSON *norm = item(tj, "normalizer");
  h->nfc = is_type(norm, "NFC");
  if (!is_null(norm) && !h->nfc)
    refuse_json(h, "normalizer", norm, "HFTokenizer reads tokenizers without a normalizer (as Llama-3's) or with NFC");
  static const char *const must_be_null[] = {"truncation", "padding"};
  for (int k = 0; k < 2; k++)
    if (!is_null(item(tj, must_be_null[k])))
      refuse_json(h, must_be_null[k], item(tj, must_be_null[k]), "it would change what encode() returns");
  const zt_bpe_pretok pretok = fast_pre_tokenizer(h, item(tj, "pre_tokenizer"));
  const cJSON *m = item(tj, "model");
  if (!is_type(m, "BPE")) refuse_json(h, "model.type", item(m, "type"), "HFTokenizer reads BPE models");
  static const char *const empty_ok[] = {"dropout", "continuing_subword_prefix", "end_of_word_suffix"};
  for (int k = 0; k < 3; k++) {
    const cJSON *v = item(m, empty_ok[k]);
    if (!is_null(v) && !(cJSON_IsString(v) && !v->valuestring[0]))
      refuse_json(h, empty_ok[k], v, "HFTokenizer reads byte-level BPE models without it");
  }
  if (json_bool(m, "byte_fallback", 0, h->dir, TJ))
    refuse_json(h, "model.byte_fallback", item(m, "byte_fallback"), "byte-level BPE needs no byte fallback");
  const cJSON *dec = item(tj, "decoder");
  if (!is_type(dec, "ByteLevel")) refuse_json(h, "decoder", dec, "HFTokenizer reads the ByteLevel decoder");
  char where[4200];
  snprintf(where, sizeof where, "%s/" TJ, h->dir);
  h->bpe = zt_gpt2_bpe_from_json(item(m, "vocab"), item(m, "merges"), pretok, json_bool(m, "ignore_merges", 0,
                                 h->dir, TJ), where);
  h->base = zt_gpt2_bpe_vocab_size(h->bpe);
  const cJSON *pp = item(tj, "post_processor");
  int templates = 0;
  if (is_type(pp, "Sequence")) {
    const cJSON *e, *l = item(pp, "processors");
    if (!cJSON_IsArray(l)) refuse_json(h, "post_processor.processors", l, "it must be an array");
    cJSON_ArrayForEach(e, l) fast_post_one(h, e, &templates);
  } else if (!is_null(pp)) {
    fast_post_one(h, pp, &templates);
  }
  fast_added_tokens(h, item(tj, "added_tokens"));
  cJSON_Delete(tj);
  /* the tokenizer_config.json settings a PreTrainedTokenizerFast reads */
  const char *file = "tokenizer_config.json";
  zt_check(!json_bool(cfg, "add_prefix_space", 0, h->dir, file), FLAG, "%s/%s: \"add_prefix_space\" true with a "
           TJ " is not supported by HFTokenizer", h->dir, file);
  zt_check(!json_bool(cfg, "split_special_tokens", 0, h->dir, file), FLAG, "%s/%s: \"split_special_tokens\" true "
           "(special tokens encoded as text) is not supported by HFTokenizer", h->dir, file);
  zt_check(!item(cfg, "auto_map"), FLAG, "%s/%s: \"auto_map\" names custom tokenizer code (trust_remote_code), which "
           "HFTokenizer cannot run", h->dir, file);
  char *added = path_in(h->dir, "added_tokens.json");
  zt_check(!file_exists(added), FLAG, "%s: added_tokens.json beside a " TJ " is not supported by HFTokenizer "
           "(the added tokens are tokenizer.json's added_tokens)", added);
  free(added);
  h->clean_up = json_bool(cfg, "clean_up_tokenization_spaces", 0, h->dir, file);
  const cJSON *dec_map = item(cfg, "added_tokens_decoder"), *e;
  if (dec_map) {
    zt_check(cJSON_IsObject(dec_map), FLAG, "%s/%s: \"added_tokens_decoder\" must be an object", h->dir, file);
    cJSON_ArrayForEach(e, dec_map) {
      const cJSON *c = item(e, "content");
      const long id = strtol(e->string, NULL, 10);
      zt_check(cJSON_IsString(c) && find_added(h, c->valuestring) == id, FLAG, "%s/%s: added_tokens_decoder[\"%s\"] "
               "is not tokenizer.json's added token %s; HFTokenizer reads the added tokens from " TJ, h->dir, file,
               e->string, e->string);
      /* transformers re-adds an entry whose flags differ, and the tokenizers library then takes its flags */
      static const char *const flags[] = {"single_word", "lstrip", "rstrip"};
      for (int f = 0; f < 3; f++)
        zt_check(!json_bool(e, flags[f], 0, h->dir, file), FLAG, "%s/%s: added_tokens_decoder[\"%s\"] has %s true, "
                 "which HFTokenizer does not support", h->dir, file, e->string, flags[f]);
      const hf_added *a = NULL;
      for (int k = 0; k < h->n_added && !a; k++)
        if (h->added[k].id == id) a = &h->added[k];
      zt_check(is_null(item(e, "normalized")) || json_bool(e, "normalized", 0, h->dir, file) == a->normalized, FLAG,
               "%s/%s: added_tokens_decoder[\"%s\"] sets normalized to %s where " TJ " has %s; HFTokenizer does "
               "not support the change", h->dir, file, e->string, a->normalized ? "false" : "true",
               a->normalized ? "true" : "false");
    }
  }
  fast_special_tokens(h, cfg, NULL);
}

/* ---- Qwen2Tokenizer: transformers' slow class over vocab.json + merges.txt -------------------------------------- */

static void load_qwen2(zt_hf_tok *h, const cJSON *cfg) {
  const char *file = "tokenizer_config.json";
  h->fast = h->qwen2 = 1;
  char *vj = path_in(h->dir, "vocab.json"), *mt = path_in(h->dir, "merges.txt");
  zt_check(file_exists(vj) && file_exists(mt), FLAG, "%s: Qwen2Tokenizer needs vocab.json and merges.txt", h->dir);
  h->bpe = zt_gpt2_bpe_load_hf(vj, mt, ZT_BPE_PRETOK_QWEN2);
  h->base = zt_gpt2_bpe_vocab_size(h->bpe);
  free(vj);
  free(mt);
  const cJSON *errors = item(cfg, "errors");
  zt_check(is_null(errors) || (cJSON_IsString(errors) && !strcmp(errors->valuestring, "replace")), FLAG, "%s/%s: "
           "\"errors\" other than \"replace\" is not supported by HFTokenizer (decoding replaces invalid UTF-8)",
           h->dir, file);
  zt_check(!json_bool(cfg, "split_special_tokens", 0, h->dir, file), FLAG, "%s/%s: \"split_special_tokens\" true "
           "(special tokens encoded as text) is not supported by HFTokenizer", h->dir, file);
  zt_check(!item(cfg, "auto_map"), FLAG, "%s/%s: \"auto_map\" names custom tokenizer code (trust_remote_code), which "
           "HFTokenizer cannot run", h->dir, file);
  char *added = path_in(h->dir, "added_tokens.json");
  zt_check(!file_exists(added), FLAG, "%s: added_tokens.json is not supported by HFTokenizer (give the tokens in "
           "tokenizer_config.json's added_tokens_decoder)", added);
  free(added);
  /* clean_up_tokenization_spaces is read but never applies: Qwen2Tokenizer.decode passes False to the base class */
  (void)json_bool(cfg, "clean_up_tokenization_spaces", 0, h->dir, file);
  /* added_tokens_decoder: the added tokens with their ids, as the slow tokenizer takes them */
  const cJSON *dec = item(cfg, "added_tokens_decoder"), *e;
  zt_check(!dec || cJSON_IsObject(dec), FLAG, "%s/%s: \"added_tokens_decoder\" must be an object", h->dir, file);
  if (dec) cJSON_ArrayForEach(e, dec) {
      char *end;
      const long id = strtol(e->string, &end, 10);
      const cJSON *c = item(e, "content");
      zt_check(*e->string && !*end && id >= 0 && id < (1L << 30) && cJSON_IsString(c) && c->valuestring[0], FLAG,
               "%s/%s: added_tokens_decoder[\"%s\"] needs a token id as its key and a non-empty \"content\"", h->dir,
               file, e->string);
      static const char *const flags[] = {"single_word", "lstrip", "rstrip"};
      for (int f = 0; f < 3; f++)
        zt_check(!json_bool(e, flags[f], 0, h->dir, file), FLAG, "%s/%s: added token \"%s\" has %s true, which "
                 "HFTokenizer does not support", h->dir, file, c->valuestring, flags[f]);
      zt_check(find_added(h, c->valuestring) < 0, FLAG, "%s/%s: added token \"%s\" is listed twice", h->dir, file,
               c->valuestring);
      push_added(h, c->valuestring, (int32_t)id, 0, json_bool(e, "special", 0, h->dir, file));
    }
  /* Qwen2Tokenizer's defaults: unk, eos and pad <|endoftext|>, no bos */
  static const char *const defaults[] = {NULL, "<|endoftext|>", "<|endoftext|>", NULL, "<|endoftext|>", NULL, NULL};
  fast_special_tokens(h, cfg, defaults);
}

zt_hf_tok *zt_hf_tok_load(const char *dir) {
  zt_check(dir && dir[0], FLAG, "--tokenizer-type HFTokenizer needs --tokenizer-model, the Hugging Face tokenizer "
           "directory");
  struct stat st;
  zt_check(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), FLAG, "%s is not a directory: --tokenizer-type HFTokenizer "
           "reads a Hugging Face tokenizer directory (tokenizer_config.json with tokenizer.model, or vocab.json and "
           "merges.txt)", dir);
  zt_hf_tok *h = zt_calloc(1, sizeof *h, "HFTokenizer");
  h->dir = path_in(dir, "");
  h->dir[strlen(h->dir) - 1] = 0;
  cJSON *cfg = read_json(dir, "tokenizer_config.json");
  const int cls = choose_class(dir, cfg);
  if (cls == CLASS_FAST || cls == CLASS_QWEN2) {
    if (cls == CLASS_FAST) load_fast(h, cfg);
    else load_qwen2(h, cfg);
    cJSON_Delete(cfg);
    return h;
  }
  h->gpt2 = cls;
  const char *file = "tokenizer_config.json";
  cJSON *vocab = NULL;
  if (!h->gpt2) {
    char *model = path_in(dir, "tokenizer.model");
    zt_check(file_exists(model), FLAG, "%s: no tokenizer.model: the slow LlamaTokenizer that Megatron-DeepSpeed's "
             "HFTokenizer loads (use_fast=False) needs the SentencePiece model", dir);
    const cJSON *kw = cfg ? cJSON_GetObjectItemCaseSensitive(cfg, "sp_model_kwargs") : NULL;
    zt_check(!kw || cJSON_IsNull(kw) || (cJSON_IsObject(kw) && !kw->child), FLAG, "%s/%s: sp_model_kwargs (sampling) "
             "is not supported by HFTokenizer", dir, file);
    h->legacy = json_bool(cfg, "legacy", 1, dir, file);
    h->add_prefix_space = json_bool(cfg, "add_prefix_space", 1, dir, file);
    h->add_bos = json_bool(cfg, "add_bos_token", 1, dir, file);
    h->add_eos = json_bool(cfg, "add_eos_token", 0, dir, file);
    h->clean_up = json_bool(cfg, "clean_up_tokenization_spaces", 0, dir, file);
    h->sp = h->legacy ? zt_spm_load(model) : zt_spm_load_no_dummy_prefix(model);
    h->base = zt_spm_piece_size(h->sp);
    set_special(&h->sp_tok[BOS], "<s>", 0, 0);
    set_special(&h->sp_tok[EOS], "</s>", 0, 0);
    set_special(&h->sp_tok[UNK], "<unk>", 0, 0);
    free(model);
  } else {
    char *vj = path_in(dir, "vocab.json"), *mt = path_in(dir, "merges.txt");
    zt_check(file_exists(vj) && file_exists(mt), FLAG, "%s: GPT2Tokenizer needs vocab.json and merges.txt", dir);
    h->bpe = zt_gpt2_bpe_load(vj, mt);
    h->base = zt_gpt2_bpe_vocab_size(h->bpe);
    vocab = read_json(dir, "vocab.json");
    h->add_prefix_space = json_bool(cfg, "add_prefix_space", 0, dir, file);
    h->add_bos = json_bool(cfg, "add_bos_token", 0, dir, file);
    h->clean_up = json_bool(cfg, "clean_up_tokenization_spaces", 0, dir, file);
    for (int s = BOS; s <= UNK; s++) set_special(&h->sp_tok[s], "<|endoftext|>", 0, 0);
    free(vj);
    free(mt);
  }
  /* special_tokens_map.json overrides tokenizer_config.json, and transformers (>= 4.34) reads it only when
   * tokenizer_config.json has no added_tokens_decoder */
  const int has_decoder = cfg && cJSON_GetObjectItemCaseSensitive(cfg, "added_tokens_decoder");
  cJSON *map = has_decoder ? NULL : read_json(dir, "special_tokens_map.json");
  for (int s = 0; s < N_SPECIAL; s++) {
    if (cfg) read_special(&h->sp_tok[s], cJSON_GetObjectItemCaseSensitive(cfg, special_key[s]), special_key[s], dir,
                          file);
    if (map) read_special(&h->sp_tok[s], cJSON_GetObjectItemCaseSensitive(map, special_key[s]), special_key[s], dir,
                          "special_tokens_map.json");
  }
  check_extra_tokens(h, cfg, file);
  check_extra_tokens(h, map, "special_tokens_map.json");
  char *added = path_in(dir, "added_tokens.json");
  zt_check(!file_exists(added), FLAG, "%s: added tokens are not supported by HFTokenizer (only bos/eos/unk/pad)",
           added);
  free(added);
  zt_check(!cfg || !cJSON_GetObjectItemCaseSensitive(cfg, "auto_map"), FLAG, "%s/%s: \"auto_map\" names custom "
           "tokenizer code (trust_remote_code), which HFTokenizer cannot run", dir, file);
  for (int s = 0; s < N_SPECIAL; s++) h->sp_tok[s].id = -1;
  read_added_tokens(h, cfg);
  int next_id = h->base; /* past the vocabulary and the added ids */
  for (int s = 0; s < N_SPECIAL; s++)
    if (h->sp_tok[s].id >= next_id) next_id = h->sp_tok[s].id + 1;
  /* ids: added_tokens_decoder's, else the vocabulary's, else the next new id (transformers' _add_tokens), first for
   * the directory's tokens (bos, eos, unk, pad), then for the ones _HFTokenizer adds where the directory has none
   * (in its order: pad "[PAD]", eos "</s>", bos "<s>", unk "<unk>"). Tokens with the same text share an id. */
  static const int megatron_order[N_SPECIAL] = {PAD, EOS, BOS, UNK};
  static const char *const megatron_text[N_SPECIAL] = {"<s>", "</s>", "<unk>", "[PAD]"};
  int from_dir[N_SPECIAL];
  for (int s = 0; s < N_SPECIAL; s++) from_dir[s] = h->sp_tok[s].content != NULL;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < N_SPECIAL; k++) {
      const int s = pass == 0 ? k : megatron_order[k];
      if (from_dir[s] != (pass == 0)) continue;
      hf_special *t = &h->sp_tok[s];
      if (pass == 1) set_special(t, megatron_text[s], 0, 0);
      if (t->id >= 0) continue;
      for (int r = 0; r < N_SPECIAL && t->id < 0; r++)
        if (r != s && h->sp_tok[r].content && h->sp_tok[r].id >= 0 && !strcmp(h->sp_tok[r].content, t->content))
          t->id = h->sp_tok[r].id;
      if (t->id < 0) t->id = base_id(h, vocab, t->content);
      if (t->id < 0) t->id = next_id++;
    }
  if (!h->gpt2 && !h->legacy) {
    zt_ids ids = {0};
    zt_spm_encode(h->sp, h->sp_tok[UNK].content, h->sp_tok[UNK].len, &ids);
    h->unk_len = (int)ids.n;
    zt_ids_free(&ids);
  }
  if (h->add_bos) h->pre[h->npre++] = h->sp_tok[BOS].id;
  if (h->add_eos) h->post[h->npost++] = h->sp_tok[EOS].id;
  cJSON_Delete(vocab);
  cJSON_Delete(map);
  cJSON_Delete(cfg);
  return h;
}

void zt_hf_tok_free(zt_hf_tok *h) {
  if (!h) return;
  for (int s = 0; s < N_SPECIAL; s++) free(h->sp_tok[s].content);
  for (int i = 0; i < h->n_added; i++) free(h->added[i].content);
  free(h->added);
  if (h->sp) zt_spm_free(h->sp);
  if (h->bpe) zt_gpt2_bpe_free(h->bpe);
  free(h->dir);
  free(h);
}

int zt_hf_vocab_size(const zt_hf_tok *h) { return h->base; }
int32_t zt_hf_eos(const zt_hf_tok *h) { return h->sp_tok[EOS].id; }
int32_t zt_hf_bos(const zt_hf_tok *h) { return h->sp_tok[BOS].id; }
int32_t zt_hf_pad(const zt_hf_tok *h) { return h->sp_tok[PAD].id; }
const char *zt_hf_eos_token(const zt_hf_tok *h) { return h->sp_tok[EOS].content; }

zt_hf_state *zt_hf_state_new(const zt_hf_tok *h) {
  zt_hf_state *s = zt_calloc(1, sizeof *s, "HFTokenizer state");
  if (h->gpt2 || h->fast) s->cache = zt_gpt2_bpe_cache_new();
  return s;
}

void zt_hf_state_free(zt_hf_state *s) {
  if (!s) return;
  if (s->cache) zt_gpt2_bpe_cache_free(s->cache);
  free(s->buf);
  zt_ids_free(&s->tmp);
  free(s);
}

/* ---- encoding ---------------------------------------------------------------------------------------------- */

/* Python's str.isspace (what str.strip removes). */
static int py_space(uint32_t cp) { return zt_unicode_is_white_space(cp) || (cp >= 0x1C && cp <= 0x1F); }

static size_t lstrip_len(const char *s, size_t n) {
  size_t i = 0, used;
  while (i < n) {
    if (!py_space(zt_utf8_decode((const uint8_t *)s + i, n - i, &used))) break;
    i += used;
  }
  return i;
}

static size_t rstrip_end(const char *s, size_t n) {
  size_t e = n, used;
  while (e > 0) {
    size_t b = e - 1;
    while (b > 0 && ((uint8_t)s[b] & 0xC0) == 0x80) b--;
    if (!py_space(zt_utf8_decode((const uint8_t *)s + b, e - b, &used))) break;
    e = b;
  }
  return e;
}

typedef struct {
  size_t b, e;
  int special; /* index into sp_tok, or -1 for text */
} chunk;

/* The special token that starts at text[p] (the longest when several do), or -1. */
static int special_at(const zt_hf_tok *h, const char *text, size_t len, size_t p) {
  int best = -1;
  for (int s = 0; s < N_SPECIAL; s++) {
    const hf_special *t = &h->sp_tok[s];
    if (t->content && p + t->len <= len && memcmp(text + p, t->content, t->len) == 0 &&
        (best < 0 || t->len > h->sp_tok[best].len))
      best = s;
  }
  return best;
}

static void scratch(zt_hf_state *st, size_t need) {
  if (st->cap >= need) return;
  free(st->buf);
  st->cap = need * 2;
  st->buf = zt_malloc(st->cap, "HFTokenizer text buffer");
}

/* The class's _tokenize of one text chunk. */
static void tokenize_chunk(const zt_hf_tok *h, zt_hf_state *st, const char *c, size_t n, zt_ids *out) {
  if (h->gpt2) {
    zt_gpt2_bpe_encode(h->bpe, st->cache, c, n, out);
    return;
  }
  if (h->legacy || !(n > 0 && (c[0] == ' ' || (n >= 3 && !memcmp(c, SPIECE, 3))))) {
    zt_spm_encode(h->sp, c, n, out);
    return;
  }
  /* non-legacy text that starts with a space: encode "<unk>" + text and drop the unk token's pieces, so that
   * SentencePiece (without its dummy prefix) keeps the leading "\u2581" on the first word */
  const hf_special *u = &h->sp_tok[UNK];
  char *joined = zt_malloc(u->len + n, "HFTokenizer chunk");
  memcpy(joined, u->content, u->len);
  memcpy(joined + u->len, c, n);
  st->tmp.n = 0;
  zt_spm_encode(h->sp, joined, u->len + n, &st->tmp);
  free(joined);
  size_t from = st->tmp.n >= (size_t)h->unk_len ? (size_t)h->unk_len : 0;
  for (size_t i = from; i < st->tmp.n; i++) zt_ids_push(out, st->tmp.ids[i]);
}

/* PreTrainedTokenizer.tokenize (+ LlamaTokenizer's non-legacy wrapping) and convert_tokens_to_ids. */
static void encode_plain(const zt_hf_tok *h, zt_hf_state *st, const char *text, size_t len, zt_ids *out) {
  if (!h->gpt2 && !h->legacy && len == 0) return;
  /* the text as the class prepares it */
  if (!h->gpt2 && !h->legacy) { /* "\u2581" -> " ", then "\u2581" in front */
    scratch(st, len + 4);
    size_t o = 0;
    if (h->add_prefix_space) memcpy(st->buf, SPIECE, 3), o = 3;
    for (size_t i = 0; i < len; i++) {
      if (i + 3 <= len && !memcmp(text + i, SPIECE, 3)) {
        st->buf[o++] = ' ';
        i += 2;
      } else {
        st->buf[o++] = text[i];
      }
    }
    text = st->buf;
    len = o;
  } else if (h->gpt2 && h->add_prefix_space) {
    scratch(st, len + 2);
    st->buf[0] = ' ';
    memcpy(st->buf + 1, text, len);
    text = st->buf;
    len++;
  }
  /* split on the special tokens */
  size_t cap = 16, n = 0, start = 0;
  chunk *ch = zt_malloc(cap * sizeof *ch, "HFTokenizer chunks");
  for (size_t p = 0; p < len;) {
    int s = special_at(h, text, len, p);
    if (s < 0) {
      p++;
      continue;
    }
    if (n + 2 > cap) ch = realloc(ch, (cap *= 2) * sizeof *ch);
    zt_check(ch, "HFTokenizer", "out of memory");
    if (p > start) ch[n++] = (chunk){start, p, -1};
    ch[n++] = (chunk){p, p + h->sp_tok[s].len, s};
    p += h->sp_tok[s].len;
    start = p;
  }
  if (len > start) {
    if (n + 1 > cap) ch = realloc(ch, (cap += 1) * sizeof *ch);
    zt_check(ch, "HFTokenizer", "out of memory");
    ch[n++] = (chunk){start, len, -1};
  }
  /* lstrip / rstrip of the neighbours of a special token */
  for (size_t i = 0; i < n; i++) {
    if (ch[i].special < 0) continue;
    const hf_special *t = &h->sp_tok[ch[i].special];
    if (t->rstrip && i + 1 < n && ch[i + 1].e > ch[i + 1].b)
      ch[i + 1].b += lstrip_len(text + ch[i + 1].b, ch[i + 1].e - ch[i + 1].b);
    if (t->lstrip && i > 0 && ch[i - 1].e > ch[i - 1].b)
      ch[i - 1].e = ch[i - 1].b + rstrip_end(text + ch[i - 1].b, ch[i - 1].e - ch[i - 1].b);
  }
  const size_t first = out->n;
  int second_special = 0;
  for (size_t i = 0; i < n; i++) {
    if (ch[i].e == ch[i].b) continue;
    if (ch[i].special >= 0) {
      if (out->n == first + 1) second_special = 1;
      zt_ids_push(out, h->sp_tok[ch[i].special].id);
    } else {
      tokenize_chunk(h, st, text + ch[i].b, ch[i].e - ch[i].b, out);
    }
  }
  free(ch);
  /* non-legacy: a lone "\u2581" before a leading special token is dropped */
  if (!h->gpt2 && !h->legacy && second_special && out->ids[first] < h->base &&
      !strcmp(zt_spm_id_to_piece(h->sp, out->ids[first]), SPIECE)) {
    memmove(out->ids + first, out->ids + first + 1, (out->n - first - 1) * sizeof(int32_t));
    out->n--;
  }
}

/* The added token of the given pass (normalized 0 or 1) that starts at text[p], the longest when several do; -1. */
static int added_at(const zt_hf_tok *h, const char *text, size_t len, size_t p, int normalized) {
  if (!h->added_first[normalized][(uint8_t)text[p]]) return -1;
  int best = -1;
  for (int i = 0; i < h->n_added; i++) {
    const hf_added *a = &h->added[i];
    if (a->normalized == normalized && p + a->len <= len && !memcmp(text + p, a->content, a->len) &&
        (best < 0 || a->len > h->added[best].len))
      best = i;
  }
  return best;
}

/* The byte-level BPE of a run of (valid UTF-8) text between added tokens. */
static void fast_piece(const zt_hf_tok *h, zt_hf_state *st, const char *c, size_t n, zt_ids *out) {
  zt_gpt2_bpe_encode_utf8(h->bpe, st->cache, c, n, out);
}

/* The next position from p on where an added token of the pass may start (its first byte), or e. */
static size_t next_candidate(const zt_hf_tok *h, const char *text, size_t p, size_t e, int normalized) {
  const uint8_t *first = h->added_first[normalized];
  while (p < e && !first[(uint8_t)text[p]]) p++;
  return p;
}

/* The NFC normalizer on the valid UTF-8 c[0..n), into st->buf; *len gets its length. */
static const char *nfc_piece(zt_hf_state *st, const char *c, size_t n, size_t *len) {
  uint32_t *cps = zt_malloc((n + 1) * sizeof *cps, "NFC"), *nfc = zt_malloc((4 * n + 1) * sizeof *nfc, "NFC");
  size_t k = 0;
  for (size_t i = 0, used; i < n; i += used) cps[k++] = zt_utf8_decode((const uint8_t *)c + i, n - i, &used);
  k = zt_unicode_nfc(cps, k, nfc);
  scratch(st, 4 * k + 1);
  size_t m = 0;
  for (size_t i = 0; i < k; i++) m += (size_t)zt_utf8_encode(nfc[i], (uint8_t *)st->buf + m);
  free(cps);
  free(nfc);
  *len = m;
  return st->buf;
}

/* Pass 2 over text[b, e), which pass 1 left as text: the normalizer (NFC; ASCII needs none), then the normalized
 * added tokens. */
static void fast_pass2(const zt_hf_tok *h, zt_hf_state *st, const char *text, size_t b, size_t e, zt_ids *out) {
  if (h->nfc && e > b) {
    size_t i = b;
    while (i < e && (uint8_t)text[i] < 0x80) i++;
    if (i < e) {
      text = nfc_piece(st, text + b, e - b, &e);
      b = 0;
    }
  }
  if (e > b && !h->n_normalized) { /* Llama-3: no normalized added token */
    fast_piece(h, st, text + b, e - b, out);
    return;
  }
  size_t start = b;
  for (size_t p = next_candidate(h, text, b, e, 1); p < e; p = next_candidate(h, text, p, e, 1)) {
    const int a = added_at(h, text, e, p, 1);
    if (a < 0) {
      p++;
      continue;
    }
    if (p > start) fast_piece(h, st, text + start, p - start, out);
    zt_ids_push(out, h->added[a].id);
    start = p += h->added[a].len;
  }
  if (e > start) fast_piece(h, st, text + start, e - start, out);
}

/* tokenizers' encode without the post-processor: the added tokens split the text (leftmost, longest; the
 * normalized=false ones first, then the normalized ones inside what is left), the rest is byte-level BPE. */
static void fast_encode_plain(const zt_hf_tok *h, zt_hf_state *st, const char *text, size_t len, zt_ids *out) {
  uint8_t *clean = NULL;
  size_t cap = 0;
  if (!zt_utf8_valid((const uint8_t *)text, len, NULL)) { /* a Python str: invalid bytes read as U+FFFD */
    len = zt_utf8_sanitize((const uint8_t *)text, len, &clean, &cap);
    text = (const char *)clean;
  }
  if (h->qwen2) { /* Qwen2Tokenizer.prepare_for_tokenization: NFC of the whole text, before the added tokens */
    size_t i = 0;
    while (i < len && (uint8_t)text[i] < 0x80) i++;
    if (i < len) text = nfc_piece(st, text, len, &len);
  }
  size_t start = 0;
  for (size_t p = next_candidate(h, text, 0, len, 0); p < len; p = next_candidate(h, text, p, len, 0)) {
    const int a = added_at(h, text, len, p, 0);
    if (a < 0) {
      p++;
      continue;
    }
    fast_pass2(h, st, text, start, p, out);
    zt_ids_push(out, h->added[a].id);
    start = p += h->added[a].len;
  }
  fast_pass2(h, st, text, start, len, out);
  free(clean);
}

static void plain_ids(const zt_hf_tok *h, zt_hf_state *s, const char *text, size_t len, zt_ids *out) {
  if (h->fast) fast_encode_plain(h, s, text, len, out);
  else encode_plain(h, s, text, len, out);
}

void zt_hf_encode(const zt_hf_tok *h, zt_hf_state *s, const char *text, size_t len, zt_ids *out) {
  for (int i = 0; i < h->npre; i++) zt_ids_push(out, h->pre[i]);
  plain_ids(h, s, text, len, out);
  for (int i = 0; i < h->npost; i++) zt_ids_push(out, h->post[i]);
}

int zt_hf_encode_padded(const zt_hf_tok *h, zt_hf_state *s, const char *text, size_t len, int L, int32_t *out) {
  const int nspec = h->npre + h->npost;
  zt_check(L >= nspec, "HFTokenizer", "max_length %d leaves no room for the %d special tokens", L, nspec);
  zt_ids ids = {0};
  plain_ids(h, s, text, len, &ids);
  const size_t keep = ids.n < (size_t)(L - nspec) ? ids.n : (size_t)(L - nspec);
  int o = 0;
  for (int i = 0; i < h->npre; i++) out[o++] = h->pre[i];
  for (size_t i = 0; i < keep; i++) out[o++] = ids.ids[i];
  for (int i = 0; i < h->npost; i++) out[o++] = h->post[i];
  zt_ids_free(&ids);
  const int32_t pad = h->sp_tok[PAD].id;
  while (o < L) out[o++] = pad;
  int real = 0;
  for (int i = 0; i < L; i++) real += out[i] != pad;
  return real;
}

/* ---- decoding ---------------------------------------------------------------------------------------------- */

/* Appends SentencePiece's decode of run[0..k) (the length is known only once the call has returned). */
static void put_pieces(zt_text *b, const zt_spm *sp, const char *const *run, size_t k) {
  size_t len;
  char *s = zt_spm_decode_pieces(sp, run, k, &len);
  zt_text_put(b, s, len);
  free(s);
}

static int special_of(const zt_hf_tok *h, int32_t id) {
  for (int s = 0; s < N_SPECIAL; s++)
    if (h->sp_tok[s].content && h->sp_tok[s].id == id) return s;
  return -1;
}

/* LlamaTokenizer.convert_tokens_to_string over every token (special ones written as their text). */
static void llama_decode(const zt_hf_tok *h, const int32_t *ids, size_t n, zt_text *b) {
  const char **run = zt_malloc((n + 1) * sizeof *run, "HFTokenizer decode");
  size_t k = 0;
  int prev_special = 0;
  for (size_t i = 0; i < n; i++) {
    const int s = special_of(h, ids[i]);
    if (s >= 0) {
      if (!prev_special && i != 0 && h->legacy) zt_text_put(b, " ", 1);
      put_pieces(b, h->sp, run, k);
      zt_text_put(b, h->sp_tok[s].content, h->sp_tok[s].len);
      prev_special = 1;
      k = 0;
      continue;
    }
    const char *piece = zt_spm_id_to_piece(h->sp, ids[i]);
    /* the prefix space the tokenizer put in front is taken off the first token */
    if (i == 0 && h->add_prefix_space && !strncmp(piece, SPIECE, 3)) piece += 3;
    if (prev_special && i == 1 && h->add_prefix_space && strncmp(piece, SPIECE, 3)) zt_text_put(b, " ", 1);
    run[k++] = piece;
    prev_special = 0;
  }
  put_pieces(b, h->sp, run, k);
  free(run);
}

/* The clean-up of tokenization spaces (clean_up_tokenization_spaces): Python's str.replace, in this order. */
static void clean_up(zt_text *b) {
  static const char *const from[] = {" .", " ?", " !", " ,", " ' ", " n't", " 'm", " 's", " 've", " 're"};
  static const char *const to[] = {".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re"};
  for (int r = 0; r < 10; r++) {
    const size_t fl = strlen(from[r]), tl = strlen(to[r]);
    size_t o = 0;
    for (size_t i = 0; i < b->n;) {
      if (i + fl <= b->n && !memcmp(b->p + i, from[r], fl)) {
        memmove(b->p + o, to[r], tl);
        o += tl;
        i += fl;
      } else {
        b->p[o++] = b->p[i++];
      }
    }
    b->n = o;
    b->p[o] = 0;
  }
}

/* tokenizers' decode: each id's token (an added token first, else the model's), through the ByteLevel decoder (a
 * token with a character outside the byte alphabet gives its own UTF-8), then invalid UTF-8 replaced. */
static void fast_decode(const zt_hf_tok *h, const int32_t *ids, size_t n, zt_text *b) {
  zt_text raw = {0};
  uint8_t *tmp = NULL;
  for (size_t i = 0; i < n; i++) {
    const hf_added *a = NULL;
    for (int k = 0; k < h->n_added && !a; k++)
      if (h->added[k].id == ids[i]) a = &h->added[k];
    if (a) { /* Qwen2Tokenizer's _decode writes a non-special added token as its text */
      tmp = realloc(tmp, a->len + 1);
      zt_check(tmp != NULL, "HFTokenizer", "out of memory");
      const long m = h->qwen2 && !a->special ? -1 : zt_gpt2_bpe_chars_to_bytes(a->content, a->len, tmp);
      if (m >= 0) zt_text_put(&raw, (const char *)tmp, (size_t)m);
      else zt_text_put(&raw, a->content, a->len);
      continue;
    }
    size_t len;
    const uint8_t *bytes = zt_gpt2_bpe_id_bytes(h->bpe, ids[i], &len);
    if (!bytes) zt_fatal("HFTokenizer", "id %d (position %zu) is neither an added token nor a token of %s/" TJ
                         "'s byte-level vocabulary", ids[i], i, h->dir);
    zt_text_put(&raw, (const char *)bytes, len);
  }
  free(tmp);
  uint8_t *clean = NULL;
  size_t cap = 0;
  const size_t m = zt_utf8_sanitize((const uint8_t *)raw.p, raw.n, &clean, &cap);
  zt_text_put(b, (const char *)clean, m);
  free(clean);
  free(raw.p);
}

char *zt_hf_decode(const zt_hf_tok *h, const int32_t *ids, size_t n, size_t *len_out) {
  if (h->fast) {
    zt_text b = {0};
    zt_text_put(&b, "", 0);
    fast_decode(h, ids, n, &b);
    if (h->clean_up) clean_up(&b);
    if (len_out) *len_out = b.n;
    return b.p;
  }
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || (ids[i] >= h->base && special_of(h, ids[i]) < 0))
      zt_fatal("HFTokenizer", "id %d (position %zu) is outside the vocabulary [0, %d) and is no added token", ids[i],
               i, h->base);
  zt_text b = {0};
  zt_text_put(&b, "", 0);
  if (!h->gpt2) {
    llama_decode(h, ids, n, &b);
  } else { /* byte-level runs, the special tokens as their text */
    size_t last = 0, len;
    for (size_t i = 0; i <= n; i++) {
      const int s = i < n ? special_of(h, ids[i]) : -1;
      if (i < n && s < 0) continue;
      if (i > last) {
        char *run = zt_gpt2_bpe_decode(h->bpe, ids + last, i - last, &len);
        zt_text_put(&b, run, len);
        free(run);
      }
      if (s >= 0) zt_text_put(&b, h->sp_tok[s].content, h->sp_tok[s].len);
      last = i + 1;
    }
  }
  if (h->clean_up) clean_up(&b);
  if (len_out) *len_out = b.n;
  return b.p;
}
