/* preprocess_data: Megatron-DeepSpeed's tools/preprocess_data.py in C. Loose JSON lines (plain or
 * gzip) -> {prefix}_{key}_{document|sentence}.bin/.idx, byte-identical to Megatron's for the same
 * tokenizer ids (docs/preprocess.md).
 *
 * Pipeline: a reader thread cuts the input into chunks of whole lines; --workers threads parse,
 * split and tokenize chunks (each with its own tokenizer state); the main thread writes the chunks
 * strictly in input order, so the output does not depend on the number of workers. Errors name the
 * file and line (the first bad line in input order); on any error or signal the temporaries are
 * removed and an earlier complete output pair stays untouched. */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data/indexed_dataset.h"
#include "data/jsonl.h"
#include "data/sentence_split.h"
#include "data/tokenizer/tokenizer.h"
#include "runtime/base/edit_distance.h"
#include "runtime/base/error.h"
#include "runtime/base/progress_bar.h"

/* ---- arguments (names, defaults and choices of Megatron-DeepSpeed's get_args) ---------------------- */

typedef struct {
  const char *input;
  const char **json_keys;
  int n_keys;
  int split_sentences, keep_newlines;
  const char *tokenizer_type, *tokenizer_model, *vocab_file, *merge_file, *hf_model;
  int vocab_size, vocab_extra_ids;
  int seq_length, trust_remote_code; /* HFTokenizer's model_max_length and trust_remote_code: recorded */
  int append_eod;
  const char *lang;
  const char *output_prefix;
  const char *dataset_impl;
  int workers, partitions, log_interval;
  long long max_line_bytes;
} options;

/* More threads than this only cost memory (each holds chunks in flight): --workers is capped here. */
#define MAX_WORKERS 256

enum { A_STR, A_INT, A_I64, A_FLAG, A_LIST };
typedef struct {
  const char *name;
  int kind;
  size_t offset;
  const char *help;
} flag_def;

#define OFF(f) offsetof(options, f)
static const flag_def k_flags[] = {
  {"--input", A_STR, OFF(input), "path to the input JSON lines (.gz read through zlib); required"},
  {"--json-keys", A_LIST, OFF(json_keys), "keys to extract from each line (default: text); one output per key"},
  {"--split-sentences", A_FLAG, OFF(split_sentences), "split documents into sentences (rule-based, not NLTK)"},
  {"--keep-newlines", A_FLAG, OFF(keep_newlines), "keep newlines between sentences when splitting"},
  {"--tokenizer-type", A_STR, OFF(tokenizer_type),
   "BertWordPieceLowerCase, BertWordPieceCase, GPT2BPETokenizer, SentencePieceTokenizer, "
   "GPTSentencePieceTokenizer, HFTokenizer or NullTokenizer; required"},
  {"--hf_autotokenizer_model", A_STR, OFF(hf_model), "HFAutoTokenizer model (not supported)"},
  {"--tokenizer-model", A_STR, OFF(tokenizer_model), "SentencePiece model file; HFTokenizer: the Hugging Face "
   "tokenizer directory (docs/tokenizers.md)"},
  {"--seq-length", A_INT, OFF(seq_length), "HFTokenizer's model_max_length: recorded (transformers only warns "
   "about longer documents; their ids are all written)"},
  {"--trust-remote-code", A_FLAG, OFF(trust_remote_code), "HFTokenizer: recorded (only the built-in Llama, GPT-2, "
   "Qwen2 and tokenizer.json tokenizers are read; a directory naming its own code is refused)"},
  {"--vocab-file", A_STR, OFF(vocab_file), "vocabulary file (GPT-2 vocab.json, BERT vocab.txt)"},
  {"--vocab-size", A_INT, OFF(vocab_size), "vocabulary size of the NullTokenizer (default 786)"},
  {"--vocab-extra-ids", A_INT, OFF(vocab_extra_ids), "number of <extra_id_N> tokens (BERT/SentencePiece; default 0)"},
  {"--merge-file", A_STR, OFF(merge_file), "BPE merges file (GPT-2 merges.txt)"},
  {"--append-eod", A_FLAG, OFF(append_eod), "append the end-of-document token to each document"},
  {"--lang", A_STR, OFF(lang), "language of sentence splitting (only english; default english)"},
  {"--output-prefix", A_STR, OFF(output_prefix), "output path without suffix; required"},
  {"--dataset-impl", A_STR, OFF(dataset_impl), "lazy, cached or mmap (only mmap is written; default mmap)"},
  {"--workers", A_INT, OFF(workers), "tokenizing threads (default 1; more than 256 are capped at 256)"},
  {"--partitions", A_INT, OFF(partitions), "file partitions, Megatron's document order (default 1)"},
  {"--log-interval", A_INT, OFF(log_interval), "documents between progress lines (default 1000)"},
  {"--max-line-bytes", A_I64, OFF(max_line_bytes), "zerotron: the longest input line accepted, in bytes; a longer "
   "line is an error naming the file and line (default 1073741824 = 1 GiB)"},
};
#define N_FLAGS ((int)(sizeof k_flags / sizeof k_flags[0]))

static void usage(void) {
  printf("usage: preprocess_data --input FILE --tokenizer-type TYPE --output-prefix PREFIX [options]\n\n"
         "Megatron-DeepSpeed's tools/preprocess_data.py: flags as --flag value or --flag=value (unique\n"
         "prefixes accepted, as argparse does).\n\n");
  for (int i = 0; i < N_FLAGS; i++) printf("  %-26s %s\n", k_flags[i].name, k_flags[i].help);
}

static const flag_def *find_flag(const char *name) {
  for (int i = 0; i < N_FLAGS; i++)
    if (strcmp(k_flags[i].name, name) == 0) return &k_flags[i];
  const flag_def *hit = NULL;
  int hits = 0;
  size_t n = strlen(name);
  for (int i = 0; i < N_FLAGS; i++)
    if (n > 2 && strncmp(k_flags[i].name, name, n) == 0) {
      hit = &k_flags[i];
      hits++;
    }
  if (hits == 1) return hit;
  if (hits > 1) {
    char list[512] = "";
    for (int i = 0; i < N_FLAGS; i++)
      if (strncmp(k_flags[i].name, name, n) == 0) {
        strncat(list, list[0] ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, k_flags[i].name, sizeof list - strlen(list) - 1);
      }
    zt_fatal("ambiguous argument", "%s could match %s", name, list);
  }
  int best = INT_MAX;
  const char *best_name = NULL;
  for (int i = 0; i < N_FLAGS; i++) {
    int d = zt_edit_distance(name, k_flags[i].name);
    if (d < best) {
      best = d;
      best_name = k_flags[i].name;
    }
  }
  int limit = (int)n / 3 > 2 ? (int)n / 3 : 2;
  if (best <= limit) zt_fatal("unrecognized argument", "%s; did you mean %s?", name, best_name);
  zt_fatal("unrecognized argument", "%s (see --help for the supported flags)", name);
}

static int parse_int(const char *flag, const char *v) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || end == v || *end || x < INT_MIN || x > INT_MAX)
    zt_fatal(flag, "invalid int value: '%s'", v);
  return (int)x;
}

static long long parse_i64(const char *flag, const char *v) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end) zt_fatal(flag, "invalid int value: '%s'", v);
  return x;
}

static void parse_args(options *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  static const char *default_keys[] = {"text"};
  o->json_keys = default_keys;
  o->n_keys = 1;
  o->vocab_size = 786;
  o->lang = "english";
  o->dataset_impl = "mmap";
  o->workers = 1;
  o->partitions = 1;
  o->log_interval = 1000;
  o->max_line_bytes = (long long)ZT_JSONL_DEFAULT_MAX_LINE;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      usage();
      exit(0);
    }
    if (strncmp(arg, "--", 2) != 0) zt_fatal("unrecognized argument", "%s (flags start with --)", arg);
    char name[128];
    const char *eq = strchr(arg, '=');
    size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    zt_check(nlen < sizeof name, "unrecognized argument", "%.60s...", arg);
    memcpy(name, arg, nlen);
    name[nlen] = 0;
    const flag_def *f = find_flag(name);
    char *field = (char *)o + f->offset;
    if (f->kind == A_FLAG) {
      zt_check(!eq, f->name, "takes no value (got '%s')", eq ? eq + 1 : "");
      *(int *)field = 1;
      continue;
    }
    if (f->kind == A_LIST) {
      const char **list = zt_malloc((size_t)argc * sizeof(char *), "--json-keys");
      int n = 0;
      if (eq) list[n++] = eq + 1;
      while (!eq && i + 1 < argc && !(argv[i + 1][0] == '-' && argv[i + 1][1] != 0)) list[n++] = argv[++i];
      zt_check(n > 0, f->name, "expected at least one argument");
      o->json_keys = list;
      o->n_keys = n;
      continue;
    }
    const char *v = eq ? eq + 1 : NULL;
    if (!v) {
      zt_check(i + 1 < argc && !(argv[i + 1][0] == '-' && argv[i + 1][1] == '-'), f->name, "expected one argument");
      v = argv[++i];
    }
    if (f->kind == A_STR) *(const char **)field = v;
    else if (f->kind == A_I64) *(long long *)field = parse_i64(f->name, v);
    else *(int *)field = parse_int(f->name, v);
  }
  const char *missing[3];
  int nm = 0;
  if (!o->input) missing[nm++] = "--input";
  if (!o->tokenizer_type) missing[nm++] = "--tokenizer-type";
  if (!o->output_prefix) missing[nm++] = "--output-prefix";
  if (nm) zt_fatal("missing argument", "the following arguments are required: %s%s%s%s%s", missing[0],
                   nm > 1 ? ", " : "", nm > 1 ? missing[1] : "", nm > 2 ? ", " : "", nm > 2 ? missing[2] : "");
  for (int k = 0; k < o->n_keys; k++) {
    zt_check(o->json_keys[k][0], "--json-keys", "empty key");
    for (int j = 0; j < k; j++)
      zt_check(strcmp(o->json_keys[k], o->json_keys[j]) != 0, "--json-keys",
               "key \"%s\" given twice (both would write the same output files)", o->json_keys[k]);
  }
  zt_check(o->workers >= 1, "--workers", "must be at least 1, got %d", o->workers);
  if (o->workers > MAX_WORKERS) {
    fprintf(stderr, "warning: --workers %d: capped at %d threads (more only hold more input in memory; this "
            "machine has %ld cores)\n", o->workers, MAX_WORKERS, sysconf(_SC_NPROCESSORS_ONLN));
    o->workers = MAX_WORKERS;
  }
  zt_check(o->max_line_bytes >= 1 && (unsigned long long)o->max_line_bytes <= (unsigned long long)SIZE_MAX / 4,
           "--max-line-bytes", "must be between 1 and %zu, got %lld", SIZE_MAX / 4, o->max_line_bytes);
  zt_check(o->partitions >= 1, "--partitions", "must be at least 1, got %d", o->partitions);
  zt_check(o->log_interval >= 1, "--log-interval", "must be at least 1, got %d", o->log_interval);
  zt_check(o->vocab_extra_ids >= 0, "--vocab-extra-ids", "must be >= 0, got %d", o->vocab_extra_ids);
  if (strcmp(o->dataset_impl, "mmap") != 0) {
    if (strcmp(o->dataset_impl, "lazy") == 0 || strcmp(o->dataset_impl, "cached") == 0)
      zt_fatal("--dataset-impl", "%s writes the legacy IndexedDataset format, which zerotron does not write; use "
               "mmap (the default), which Megatron's --data-impl mmap/infer reads", o->dataset_impl);
    zt_fatal("--dataset-impl", "invalid choice: '%s' (choose from 'lazy', 'cached', 'mmap')", o->dataset_impl);
  }
  if (o->split_sentences && strcmp(o->lang, "english") != 0)
    zt_fatal("--lang", "'%s': zerotron's rule-based sentence splitter only knows english (Megatron loads NLTK's "
             "punkt/%s.pickle)", o->lang, o->lang);
}

/* ---- shared pipeline state --------------------------------------------------------------------- */

#define CHUNK_BYTES (256u << 10)
#define MAX_PIECE_CHARS 1000000 /* Megatron splits texts into 1,000,000-character pieces before NLTK */

typedef struct {
  zt_ids tok;
  int32_t *sizes;
  size_t n_sizes, cap_sizes;
  int32_t *doc_items; /* items of each line's document */
  size_t cap_docs;
} key_out;

enum { SLOT_FREE, SLOT_READING, SLOT_READY, SLOT_DONE };

typedef struct {
  int state;
  int64_t seq;
  int file;
  zt_jsonl_chunk in;
  key_out *out;
  int has_err;
  int64_t err_line;
  char err[512];
} slot;

typedef struct {
  const options *o;
  const zt_tokenizer *tok;
  int32_t eod;
  char **files;
  int n_files;
  slot *slots;
  int n_slots;
  pthread_mutex_t mu;
  pthread_cond_t cv_free, cv_ready, cv_done;
  int64_t produced, next_work, total;
  int reader_done;
} pipeline;

static void push_size(key_out *k, int32_t n) {
  if (k->n_sizes == k->cap_sizes) {
    k->cap_sizes = k->cap_sizes ? 2 * k->cap_sizes : 1024;
    k->sizes = realloc(k->sizes, k->cap_sizes * sizeof(int32_t));
    zt_check(k->sizes, "out of memory", "item sizes (%zu)", k->cap_sizes);
  }
  k->sizes[k->n_sizes++] = n;
}

/* ---- reader ------------------------------------------------------------------------------------ */

static void *reader_main(void *arg) {
  pipeline *p = arg;
  int64_t seq = 0;
  for (int f = 0; f < p->n_files; f++) {
    zt_jsonl_reader *r = zt_jsonl_open(p->files[f]);
    zt_jsonl_set_max_line(r, (size_t)p->o->max_line_bytes);
    for (;;) {
      slot *s = &p->slots[seq % p->n_slots];
      pthread_mutex_lock(&p->mu);
      while (s->state != SLOT_FREE) pthread_cond_wait(&p->cv_free, &p->mu);
      s->state = SLOT_READING;
      pthread_mutex_unlock(&p->mu);
      size_t n = zt_jsonl_read_chunk(r, &s->in, CHUNK_BYTES);
      pthread_mutex_lock(&p->mu);
      if (n == 0) {
        s->state = SLOT_FREE;
        pthread_mutex_unlock(&p->mu);
        break;
      }
      s->seq = seq;
      s->file = f;
      s->state = SLOT_READY;
      p->produced = ++seq;
      pthread_cond_broadcast(&p->cv_ready);
      pthread_mutex_unlock(&p->mu);
    }
    zt_jsonl_close(r);
  }
  pthread_mutex_lock(&p->mu);
  p->total = seq;
  p->reader_done = 1;
  pthread_cond_broadcast(&p->cv_ready);
  pthread_cond_broadcast(&p->cv_done);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* ---- workers ----------------------------------------------------------------------------------- */

typedef struct {
  pipeline *p;
  zt_tok_state *ts;
  zt_jsonl_doc *doc;
  zt_jsonl_texts texts;
  zt_sentences sents;
} worker;

/* Where a worker is, for errors raised inside the tokenizer (which knows no file or line): an atexit
 * hook run by the thread that dies prints the location after the tokenizer's own message. */
static __thread const char *t_file;
static __thread int64_t t_line;
static __thread const char *t_key;
static volatile int g_finished;

static void report_location(void) {
  if (!g_finished && t_file && t_line > 0)
    fprintf(stderr, "error: --input: %s:%lld: the error above happened while tokenizing this line (key \"%s\")\n",
            t_file, (long long)t_line, t_key ? t_key : "");
}

/* Tokenizes one piece of text as one item (dropped when it has no ids, as Megatron does). */
static void encode_item(worker *w, key_out *k, const char *text, size_t len, int32_t *items) {
  size_t before = k->tok.n;
  zt_tokenizer_encode(w->p->tok, w->ts, text, len, &k->tok);
  size_t n = k->tok.n - before;
  if (n == 0) return;
  zt_check(n <= INT32_MAX, "preprocess_data", "an item of %zu tokens exceeds the format's int32 size", n);
  push_size(k, (int32_t)n);
  (*items)++;
}

/* Megatron's split step: the text in 1,000,000-character pieces, each through the sentence splitter. */
static void encode_sentences(worker *w, key_out *k, const char *text, size_t len, int32_t *items) {
  size_t pos = 0;
  while (pos < len) {
    size_t end = pos, chars = 0;
    while (end < len && chars < MAX_PIECE_CHARS) {
      end++;
      while (end < len && ((unsigned char)text[end] & 0xC0) == 0x80) end++;
      chars++;
    }
    zt_sentence_split(text + pos, end - pos, w->p->o->keep_newlines, &w->sents);
    for (size_t s = 0; s < w->sents.n; s++)
      encode_item(w, k, text + pos + w->sents.start[s], w->sents.len[s], items);
    pos = end;
  }
}

static void process_slot(worker *w, slot *s) {
  const options *o = w->p->o;
  s->has_err = 0;
  for (int key = 0; key < o->n_keys; key++) {
    key_out *k = &s->out[key];
    k->tok.n = 0;
    k->n_sizes = 0;
    if (s->in.n > k->cap_docs) {
      k->cap_docs = s->in.n;
      k->doc_items = realloc(k->doc_items, k->cap_docs * sizeof(int32_t));
      zt_check(k->doc_items, "out of memory", "document table (%zu)", k->cap_docs);
    }
  }
  for (size_t i = 0; i < s->in.n; i++) {
    const char *line = s->in.buf + s->in.start[i];
    t_file = w->p->files[s->file];
    t_line = s->in.first_line + (int64_t)i;
    if (zt_jsonl_parse(w->doc, line, s->in.len[i], s->err, sizeof s->err) != 0) goto fail;
    for (int key = 0; key < o->n_keys; key++) {
      key_out *k = &s->out[key];
      t_key = o->json_keys[key];
      if (zt_jsonl_get(w->doc, o->json_keys[key], &w->texts, s->err, sizeof s->err) != 0) goto fail;
      int32_t items = 0;
      for (size_t t = 0; t < w->texts.n; t++) {
        if (o->split_sentences) encode_sentences(w, k, w->texts.text[t], w->texts.len[t], &items);
        else encode_item(w, k, w->texts.text[t], w->texts.len[t], &items);
      }
      if (items > 0 && o->append_eod) { /* Megatron: doc_ids.append(eod); sentence_lens[-1] += 1 */
        zt_ids_push(&k->tok, w->p->eod);
        k->sizes[k->n_sizes - 1]++;
      }
      k->doc_items[i] = items;
    }
    t_line = 0;
    continue;
  fail:
    t_line = 0;
    s->has_err = 1;
    s->err_line = s->in.first_line + (int64_t)i;
    s->in.n = i; /* the lines before the bad one are complete */
    return;
  }
}

static void *worker_main(void *arg) {
  worker *w = arg;
  pipeline *p = w->p;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (p->next_work >= p->produced && !p->reader_done) pthread_cond_wait(&p->cv_ready, &p->mu);
    if (p->next_work >= p->produced) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    slot *s = &p->slots[p->next_work % p->n_slots];
    p->next_work++;
    pthread_mutex_unlock(&p->mu);
    process_slot(w, s);
    pthread_mutex_lock(&p->mu);
    s->state = SLOT_DONE;
    pthread_cond_broadcast(&p->cv_done);
    pthread_mutex_unlock(&p->mu);
  }
}

/* ---- main: writer ------------------------------------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *fmt_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_path(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) zt_fatal("out of memory", "formatting a path");
  va_end(ap);
  return s;
}

static void check_output_dir(const char *prefix) {
  char *copy = strdup(prefix);
  const char *dir = dirname(copy);
  struct stat st;
  if (stat(dir, &st) != 0)
    zt_fatal("--output-prefix", "%s: the output directory %s does not exist", prefix, dir);
  if (!S_ISDIR(st.st_mode)) zt_fatal("--output-prefix", "%s: %s is not a directory", prefix, dir);
  if (access(dir, W_OK) != 0) zt_fatal("--output-prefix", "%s: cannot write into %s: %s", prefix, dir,
                                       strerror(errno));
  free(copy);
}

/* --input: one file, or with --partitions > 1 a glob pattern (Megatron: glob.glob; here sorted). */
static void resolve_inputs(const options *o, pipeline *p) {
  if (o->partitions == 1) {
    p->files = zt_malloc(sizeof(char *), "input list");
    p->files[0] = strdup(o->input);
    p->n_files = 1;
  } else {
    glob_t g;
    int rc = glob(o->input, 0, NULL, &g);
    if (rc == GLOB_NOMATCH) zt_fatal("--input", "%s: no file matches this pattern", o->input);
    zt_check(rc == 0, "--input", "%s: glob failed (%d)", o->input, rc);
    p->files = zt_malloc(g.gl_pathc * sizeof(char *), "input list");
    for (size_t i = 0; i < g.gl_pathc; i++) p->files[i] = strdup(g.gl_pathv[i]);
    p->n_files = (int)g.gl_pathc;
    globfree(&g);
  }
  for (int f = 0; f < p->n_files; f++) { /* fail before any work on a missing input */
    struct stat st;
    if (stat(p->files[f], &st) != 0) zt_fatal("--input", "cannot open %s: %s", p->files[f], strerror(errno));
    if (S_ISDIR(st.st_mode)) zt_fatal("--input", "%s is a directory, expected a JSON lines file", p->files[f]);
    if (access(p->files[f], R_OK) != 0) zt_fatal("--input", "cannot read %s: %s", p->files[f], strerror(errno));
  }
}

int main(int argc, char **argv) {
  options o;
  parse_args(&o, argc, argv);
  double startup_start = now_s();

  zt_tokenizer_spec spec = {0};
  zt_check(zt_tokenizer_parse_kind(o.tokenizer_type, &spec.kind) == 0 || strcmp(o.tokenizer_type, "HFAutoTokenizer")
           == 0, "--tokenizer-type", "invalid choice: '%s' (choose from 'BertWordPieceLowerCase', "
           "'BertWordPieceCase', 'GPT2BPETokenizer', 'SentencePieceTokenizer', 'GPTSentencePieceTokenizer', "
           "'HFTokenizer', 'NullTokenizer')", o.tokenizer_type);
  if (strcmp(o.tokenizer_type, "HFAutoTokenizer") == 0)
    zt_fatal("--tokenizer-type", "HFAutoTokenizer (Hugging Face AutoTokenizer) is not supported by zerotron; use "
             "one of its native tokenizers");
  if (!strncmp(o.tokenizer_type, "Bert", 4) && !o.split_sentences)
    printf("Are you sure you don't want to split sentences?\n");
  pipeline p;
  memset(&p, 0, sizeof p);
  p.o = &o;
  resolve_inputs(&o, &p);
  check_output_dir(o.output_prefix);

  spec.vocab_file = o.vocab_file;
  spec.merge_file = o.merge_file;
  spec.tokenizer_model = o.tokenizer_model;
  spec.vocab_size = o.vocab_size;
  spec.vocab_extra_ids = o.vocab_extra_ids;
  zt_tokenizer *tok = zt_tokenizer_create(&spec);
  p.tok = tok;
  p.eod = zt_tokenizer_eod(tok);
  if (o.append_eod && p.eod < 0)
    zt_fatal("--append-eod", "%s has no end-of-document token (Megatron raises NotImplementedError for its eod)",
             o.tokenizer_type);
  zt_idx_dtype dtype = zt_indexed_best_dtype(zt_tokenizer_vocab_size(tok));
  const char *level = o.split_sentences ? "sentence" : "document";

  /* builders: [key] the output; with partitions, [key * P + part] Megatron's per-partition outputs */
  int P = o.partitions, K = o.n_keys;
  zt_indexed_cleanup_on_signals();
  atexit(report_location);
  zt_indexed_builder **parts = zt_calloc((size_t)K * P, sizeof *parts, "builders");
  char **part_prefix = zt_calloc((size_t)K * P, sizeof(char *), "builder prefixes");
  for (int k = 0; k < K; k++)
    for (int q = 0; q < P; q++) {
      part_prefix[k * P + q] = P == 1 ? fmt_path("%s_%s_%s", o.output_prefix, o.json_keys[k], level)
                                      : fmt_path("%s_%d_%s_%s", o.output_prefix, q, o.json_keys[k], level);
      parts[k * P + q] = zt_indexed_builder_open(part_prefix[k * P + q], dtype);
    }

  for (int f = 0; f < p.n_files; f++) printf("Opening %s\n", p.files[f]);
  p.n_slots = 4 * o.workers + 2;
  p.slots = zt_calloc((size_t)p.n_slots, sizeof(slot), "pipeline slots");
  for (int s = 0; s < p.n_slots; s++) p.slots[s].out = zt_calloc((size_t)K, sizeof(key_out), "slot outputs");
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.cv_free, NULL);
  pthread_cond_init(&p.cv_ready, NULL);
  pthread_cond_init(&p.cv_done, NULL);

  /* Threads start with the termination signals blocked so that only this thread runs the cleanup
   * handler (and never while it holds signals blocked in zt_indexed_builder_finish). */
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGINT);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGHUP);
  sigaddset(&term, SIGQUIT);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  pthread_t reader;
  pthread_t *threads = zt_calloc((size_t)o.workers, sizeof(pthread_t), "worker threads");
  worker *workers = zt_calloc((size_t)o.workers, sizeof(worker), "workers");
  pthread_create(&reader, NULL, reader_main, &p);
  for (int t = 0; t < o.workers; t++) {
    workers[t].p = &p;
    workers[t].ts = zt_tok_state_new(tok);
    workers[t].doc = zt_jsonl_doc_new();
    pthread_create(&threads[t], NULL, worker_main, &workers[t]);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);

  double proc_start = now_s();
  printf("Time to startup: %g\n", proc_start - startup_start);
  fflush(stdout);
  int64_t docs = 0, total_bytes = 0, next_log = o.log_interval;
  /* the bar's total: the input's bytes when every file is plain text (a .gz holds more than its size) */
  double input_bytes = 0;
  for (int f = 0; f < p.n_files; f++) {
    struct stat st;
    const size_t len = strlen(p.files[f]);
    if (input_bytes < 0 || (len > 3 && strcmp(p.files[f] + len - 3, ".gz") == 0) || stat(p.files[f], &st) != 0 ||
        !S_ISREG(st.st_mode))
      input_bytes = -1;
    else
      input_bytes += (double)st.st_size;
  }
  zt_progress_bar *bar = zt_progress_bar_start("preprocess_data", input_bytes, "B");
  for (int64_t seq = 0;; seq++) {
    slot *s = &p.slots[seq % p.n_slots];
    pthread_mutex_lock(&p.mu);
    while (!(s->state == SLOT_DONE && s->seq == seq) && !(p.reader_done && seq >= p.total))
      pthread_cond_wait(&p.cv_done, &p.mu);
    int end = !(s->state == SLOT_DONE && s->seq == seq);
    pthread_mutex_unlock(&p.mu);
    if (end) break;
    /* walk the chunk's documents in order; keys advance through their own token/size streams */
    size_t tok_off[64], size_off[64];
    zt_check(K <= 64, "--json-keys", "at most 64 keys, got %d", K);
    for (int k = 0; k < K; k++) tok_off[k] = size_off[k] = 0;
    for (size_t i = 0; i < s->in.n; i++) {
      int q = (int)(docs % P);
      for (int k = 0; k < K; k++) {
        key_out *ko = &s->out[k];
        zt_indexed_builder *b = parts[k * P + q];
        for (int32_t it = 0; it < ko->doc_items[i]; it++) {
          int32_t n = ko->sizes[size_off[k]++];
          zt_indexed_builder_add_item(b, ko->tok.ids + tok_off[k], n);
          tok_off[k] += (size_t)n;
        }
        zt_indexed_builder_end_document(b);
      }
      docs++;
      total_bytes += (int64_t)s->in.len[i] + 1;
      if (docs == next_log && !bar) { /* the bar, where it is drawn, replaces Megatron's progress lines */
        double el = now_s() - proc_start;
        fprintf(stderr, "Processed %lld documents (%.3f docs/s, %.3f MB/s).\n", (long long)docs, docs / el,
                total_bytes / el / 1024 / 1024);
        next_log += o.log_interval;
      }
    }
    zt_progress_bar_update(bar, (double)total_bytes);
    if (s->has_err) {
      zt_progress_bar_finish(bar, (double)total_bytes); /* ends the bar's line before the error */
      for (int b = 0; b < K * P; b++) zt_indexed_builder_abort(parts[b]);
      zt_fatal("--input", "%s:%lld: %s", p.files[s->file], (long long)s->err_line, s->err);
    }
    pthread_mutex_lock(&p.mu);
    s->state = SLOT_FREE;
    pthread_cond_signal(&p.cv_free);
    pthread_mutex_unlock(&p.mu);
  }
  zt_progress_bar_finish(bar, (double)total_bytes);
  pthread_join(reader, NULL);
  for (int t = 0; t < o.workers; t++) pthread_join(threads[t], NULL);

  for (int b = 0; b < K * P; b++) zt_indexed_builder_sync(parts[b]);
  int64_t *items = zt_calloc((size_t)K, sizeof(int64_t), "counts");
  for (int k = 0; k < K; k++)
    for (int q = 0; q < P; q++) items[k] += zt_indexed_builder_num_items(parts[k * P + q]);
  for (int b = 0; b < K * P; b++) zt_indexed_builder_finish(parts[b]);
  if (P > 1) { /* Megatron's merge of the partition outputs, in partition order */
    for (int k = 0; k < K; k++) {
      char *out = fmt_path("%s_%s_%s", o.output_prefix, o.json_keys[k], level);
      zt_indexed_builder *m = zt_indexed_builder_open(out, dtype);
      for (int q = 0; q < P; q++) zt_indexed_builder_merge(m, part_prefix[k * P + q]);
      zt_indexed_builder_finish(m);
      for (int q = 0; q < P; q++) {
        char *bin = fmt_path("%s.bin", part_prefix[k * P + q]), *idx = fmt_path("%s.idx", part_prefix[k * P + q]);
        unlink(idx);
        unlink(bin);
        free(bin);
        free(idx);
      }
      free(out);
    }
  }
  double el = now_s() - proc_start;
  printf("Done: %lld documents, %.2f MB of JSON lines in %.2f s (%.1f docs/s, %.2f MB/s, %d worker%s)\n",
         (long long)docs, total_bytes / 1048576.0, el, docs / (el > 0 ? el : 1), total_bytes / 1048576.0 /
         (el > 0 ? el : 1), o.workers, o.workers > 1 ? "s" : "");
  for (int k = 0; k < K; k++)
    printf("  %s_%s_%s.bin/.idx: %lld items (%s)\n", o.output_prefix, o.json_keys[k], level,
           (long long)items[k], zt_idx_dtype_name(dtype));
  for (int t = 0; t < o.workers; t++) {
    zt_tok_state_free(workers[t].ts);
    zt_jsonl_doc_free(workers[t].doc);
    zt_jsonl_texts_free(&workers[t].texts);
    zt_sentences_free(&workers[t].sents);
  }
  zt_tokenizer_free(tok);
  g_finished = 1;
  return 0;
}
