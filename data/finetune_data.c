/* Megatron-DeepSpeed's finetuning data for finetune_bert: the GLUE and RACE readers, build_tokens_types_paddings,
 * and torch's randperm / DistributedSampler / DataLoader order (see finetune_data.h). */
#include "data/finetune_data.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "data/finetune_text.h"
#include "data/jsonl.h"
#include "data/pretraining_sampler.h"
#include "data/tokenizer/unicode.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"

#define WHAT "finetune data"
#define RACE_CHOICES 4
#define RACE_MAX_QA_LENGTH 128

/* ---- tasks ----------------------------------------------------------------------------------------------------- */

static const char *const TASK_NAMES[] = {"MNLI", "QQP", "QNLI", "SST-2", "CoLA", "MRPC", "RTE", "RACE", "STS-B"};
#define N_TASKS ((int)(sizeof TASK_NAMES / sizeof TASK_NAMES[0]))

int zt_ft_task_parse(const char *name, zt_ft_task *out) {
  for (int i = 0; i < N_TASKS; i++)
    if (!strcmp(name, TASK_NAMES[i])) {
      *out = (zt_ft_task)i;
      return 0;
    }
  return -1;
}

const char *zt_ft_task_name(zt_ft_task task) { return (int)task >= 0 && (int)task < N_TASKS ? TASK_NAMES[task] : "?"; }
int zt_ft_task_classes(zt_ft_task task) {
  return task == ZT_FT_MNLI ? 3 : task == ZT_FT_RACE || task == ZT_FT_STSB ? 1 : 2;
}
int zt_ft_task_choices(zt_ft_task task) { return task == ZT_FT_RACE ? RACE_CHOICES : 1; }

/* str.split(sep)[-1]: what follows the last of the non-overlapping occurrences found left to right. */
static zt_span after_last(zt_span s, const char *sep) {
  const size_t k = strlen(sep);
  size_t from = 0;
  for (size_t i = 0; i + k <= s.n;) {
    if (!memcmp(s.p + i, sep, k)) {
      i += k;
      from = i;
    } else {
      i++;
    }
  }
  return (zt_span){s.p + from, s.n - from};
}

void zt_ft_name_from_path(zt_ft_task task, const char *path, char *out, size_t n) {
  if (n == 0) return;
  zt_span s = after_last((zt_span){path, strlen(path)}, zt_ft_task_name(task));
  if (task != ZT_FT_RACE) s = zt_py_strip_chars(s, ".tsv");
  s = zt_py_strip_chars(s, "/");
  size_t m = s.n < n - 1 ? s.n : n - 1;
  for (size_t i = 0; i < m; i++) {
    char c = s.p[i];
    out[i] = task == ZT_FT_RACE ? (c == '/' ? '-' : c) : (c == '_' ? '-' : c);
  }
  out[m] = 0;
}

/* ---- samples --------------------------------------------------------------------------------------------------- */

/* RACE's JSON reading: one line's keys and the article's ids */
typedef struct {
  zt_jsonl_doc *doc;
  zt_jsonl_texts article, questions, answers;
  zt_jsonl_lists options;
  zt_ids context;
  char err[512];
} race_state;

/* A load's working state: everything it allocates besides the dataset's arrays, so that a load abandoned by a
 * refusal whose fatal hook returns (the fuzzer's) is released by the next load (builder_free). */
typedef struct {
  zt_ft_dataset *d;
  const zt_tokenizer *tok;
  zt_tok_state *st;
  int32_t cls, sep, pad;
  int64_t cap, ids_cap;
  zt_ids a, b;         /* token ids of text_a / text_b (RACE: qa / context) */
  zt_ftbuf ca, cb, qa; /* cleaned texts */
  zt_ftrow row;
  zt_ftbuf msg;
  zt_ftlines lines;    /* the file being read (the whole of it) */
  race_state race;
  char **files;        /* a RACE directory's *.txt files */
  size_t n_files;
} builder;

static builder *g_live; /* the load under way, or one a refusal abandoned */

static void builder_free(builder *B) {
  zt_tok_state_free(B->st);
  zt_ids_free(&B->a);
  zt_ids_free(&B->b);
  zt_ftbuf_free(&B->ca);
  zt_ftbuf_free(&B->cb);
  zt_ftbuf_free(&B->qa);
  zt_ftbuf_free(&B->msg);
  zt_ftrow_free(&B->row);
  zt_ftlines_close(&B->lines);
  if (B->race.doc) zt_jsonl_doc_free(B->race.doc);
  zt_jsonl_texts_free(&B->race.article);
  zt_jsonl_texts_free(&B->race.questions);
  zt_jsonl_texts_free(&B->race.answers);
  zt_jsonl_lists_free(&B->race.options);
  zt_ids_free(&B->race.context);
  for (size_t f = 0; f < B->n_files; f++) free(B->files[f]);
  free(B->files);
  free(B);
}

/* Room for sample d->n (its rows' offsets and type boundaries). */
static void reserve_sample(builder *B) {
  zt_ft_dataset *d = B->d;
  if (d->n < B->cap) return;
  B->cap = B->cap ? 2 * B->cap : 1024;
  const size_t rows = (size_t)B->cap * (size_t)d->choices;
  d->off = realloc(d->off, (rows + 1) * sizeof(int64_t));
  d->b_start = realloc(d->b_start, rows * sizeof(int32_t));
  d->labels = realloc(d->labels, (size_t)B->cap * sizeof(int32_t));
  d->uids = realloc(d->uids, (size_t)B->cap * sizeof(int64_t));
  zt_check(d->off && d->b_start && d->labels && d->uids, "out of memory", "finetune data: %lld samples of %d rows",
           (long long)B->cap, d->choices);
  if (d->n == 0) d->off[0] = 0;
}

/* build_tokens_types_paddings_from_ids into choice `choice` of sample d->n: [CLS] a [SEP] (b), cut to seq_length - 1
 * when it reaches seq_length, then a final [SEP] when b is there or it was cut (type 1 with b, else 0); kept
 * unpadded (zt_ft_dataset_row pads it). Rows are added in order. */
static void build_sequence(builder *B, int choice, const zt_ids *a, const zt_ids *b) {
  zt_ft_dataset *d = B->d;
  const size_t T = (size_t)d->seq_length, r = (size_t)d->n * (size_t)d->choices + (size_t)choice;
  const size_t na = a->n, nb = b ? b->n : 0, len = na + 2 + nb;
  const int trimmed = len >= T;
  const size_t keep = trimmed ? T - 1 : len, L = keep + (b || trimmed);
  const int64_t at = d->off[r];
  if (at + (int64_t)L > B->ids_cap) {
    while (at + (int64_t)L > B->ids_cap) B->ids_cap = B->ids_cap ? 2 * B->ids_cap : 65536;
    d->ids = realloc(d->ids, (size_t)B->ids_cap * sizeof(int32_t));
    zt_check(d->ids, "out of memory", "finetune data: %lld tokens", (long long)B->ids_cap);
  }
  int32_t *ids = d->ids + at;
  size_t first_b = L; /* the first type-1 position */
  for (size_t k = 0; k < keep; k++) {
    if (k == 0) ids[k] = B->cls;
    else if (k <= na) ids[k] = a->ids[k - 1];
    else if (k == na + 1) ids[k] = B->sep;
    else ids[k] = b->ids[k - na - 2], first_b = first_b < k ? first_b : k;
  }
  if (b || trimmed) {
    ids[keep] = B->sep;
    if (b && first_b > keep) first_b = keep;
  }
  d->b_start[r] = (int32_t)first_b;
  d->off[r + 1] = at + (int64_t)L;
}

void zt_ft_dataset_row(const zt_ft_dataset *d, int64_t s, int choice, int32_t *ids, int32_t *types, uint8_t *pads) {
  const size_t r = (size_t)s * (size_t)d->choices + (size_t)choice, T = (size_t)d->seq_length;
  const size_t L = (size_t)(d->off[r + 1] - d->off[r]), b = (size_t)d->b_start[r];
  memcpy(ids, d->ids + d->off[r], L * sizeof(int32_t));
  for (size_t k = 0; k < L; k++) types[k] = k >= b, pads[k] = 1;
  for (size_t k = L; k < T; k++) ids[k] = types[k] = d->pad, pads[k] = 0; /* Megatron pads the types with pad_id */
}

static void push_sample(builder *B, int label, int64_t uid) {
  B->d->labels[B->d->n] = label;
  B->d->uids[B->d->n] = uid;
  B->d->n++;
}

static void encode(builder *B, const zt_ftbuf *text, zt_ids *out) {
  out->n = 0;
  zt_tokenizer_encode(B->tok, B->st, text->p ? text->p : "", text->n, out);
}

/* ---- GLUE ------------------------------------------------------------------------------------------------------ */

typedef struct {
  zt_ft_task task;
  const char *file;
  long line;
  int is_test;
  int64_t total;
} glue_ctx;

/* row[i].strip() (i < 0 counts from the end) */
static zt_span col(const zt_ftrow *r, long i) { return zt_py_strip(r->f[i < 0 ? (long)r->n + i : i]); }
#define COL(r, i) (int)col((r), (i)).n, col((r), (i)).p

/* Megatron indexes row[k - 1]: fewer than k columns is its IndexError. */
static void need_columns(const glue_ctx *c, const zt_ftrow *r, size_t k) {
  zt_check(r->n >= k, WHAT, "%s:%ld: %zu column(s); Megatron's %s reader reads column %zu of this line and fails with "
           "IndexError", c->file, c->line, r->n, zt_ft_task_name(c->task), k - 1);
}

static void assert_columns(const glue_ctx *c, const zt_ftrow *r, size_t k) {
  zt_check(r->n == k, WHAT, "%s:%ld: %zu column(s) where Megatron's %s reader asserts %zu", c->file, c->line, r->n,
           zt_ft_task_name(c->task), k);
}

/* The first line. Returns 1 when it is a header (skipped), 0 when it is read as data (CoLA's train files have no
 * header: Megatron's CoLA reader falls through to the data rules for a first line that is not a test header). */
static int glue_header(glue_ctx *c, const zt_ftrow *r) {
  switch (c->task) {
  case ZT_FT_MNLI:
    need_columns(c, r, 10);
    if (r->n == 10) {
      c->is_test = 1;
      zt_log("   reading %.*s, %.*s and %.*s columns and setting labels to contradiction\n", COL(r, 0), COL(r, 8),
             COL(r, 9));
    } else {
      zt_log("    reading %.*s , %.*s, %.*s, and %.*s columns ...\n", COL(r, 0), COL(r, 8), COL(r, 9), COL(r, -1));
    }
    return 1;
  case ZT_FT_QQP: case ZT_FT_QNLI: case ZT_FT_RTE:
    if (r->n == 3) {
      c->is_test = 1;
      zt_log("   reading %.*s, %.*s, and %.*s columns and setting labels to %s\n", COL(r, 0), COL(r, 1), COL(r, 2),
             c->task == ZT_FT_QQP ? "0" : "entailment");
    } else if (c->task == ZT_FT_QQP) {
      assert_columns(c, r, 6);
      zt_log("    reading %.*s, %.*s, %.*s, and %.*s columns ...\n", COL(r, 0), COL(r, 3), COL(r, 4), COL(r, 5));
    } else {
      assert_columns(c, r, 4);
      zt_log("    reading %.*s, %.*s, %.*s, and %.*s columns ...\n", COL(r, 0), COL(r, 1), COL(r, 2), COL(r, 3));
    }
    return 1;
  case ZT_FT_SST2: {
    zt_span first = col(r, 0);
    if (first.n == 5 && !memcmp(first.p, "index", 5)) {
      need_columns(c, r, 2);
      c->is_test = 1;
      zt_log("   reading %.*s and %.*s columns and setting labels to 0\n", COL(r, 0), COL(r, 1));
    } else {
      assert_columns(c, r, 2);
      zt_log("    reading %.*s and %.*s columns ...\n", COL(r, 0), COL(r, 1));
    }
    return 1;
  }
  case ZT_FT_COLA:
    if (r->n != 2) return 0;
    c->is_test = 1;
    zt_log("   reading %.*s and %.*s columns and setting labels to 0\n", COL(r, 0), COL(r, 1));
    return 1;
  case ZT_FT_MRPC: {
    zt_span first = col(r, 0);
    if (first.n == 5 && !memcmp(first.p, "index", 5)) {
      need_columns(c, r, 5);
      c->is_test = 1;
      zt_log("   reading %.*s, %.*s, and %.*s columns and setting labels to 0\n", COL(r, 0), COL(r, 3), COL(r, 4));
    } else {
      assert_columns(c, r, 5);
      zt_log("    reading %.*s, %.*s, and %.*s columns ...\n", COL(r, 0), COL(r, 3), COL(r, 4));
    }
    return 1;
  }
  default: return 1;
  }
}

/* int(row[i].strip()); Python's ValueError is a refusal. */
static zt_pyint int_column(builder *B, const glue_ctx *c, const zt_ftrow *r, long i, const char *what) {
  zt_span s = col(r, i);
  zt_pyint v = zt_py_int(s);
  if (!v.ok) {
    B->msg.n = 0;
    zt_py_repr_str(s, &B->msg);
    zt_fatal(WHAT, "%s:%ld: the %s column is %s, not an integer (Megatron's int() fails with ValueError)", c->file,
             c->line, what, B->msg.p);
  }
  return v;
}

static void warn_skip(builder *B, const glue_ctx *c, const zt_ftrow *r, const char *why) {
  B->msg.n = 0;
  zt_py_repr_row(r, &B->msg);
  zt_log("***WARNING*** %s, skipping: %s (%s:%ld)\n", why, B->msg.p, c->file, c->line);
}

static int span_is(zt_span s, const char *lit) { return s.n == strlen(lit) && !memcmp(s.p, lit, s.n); }

/* A string label of MNLI / QNLI / RTE; -1 when it is not one of LABELS. */
static int string_label(zt_ft_task task, zt_span s) {
  if (task == ZT_FT_MNLI)
    return span_is(s, "contradiction") ? 0 : span_is(s, "entailment") ? 1 : span_is(s, "neutral") ? 2 : -1;
  return span_is(s, "entailment") ? 0 : span_is(s, "not_entailment") ? 1 : -1;
}

/* One data line of a GLUE file: adds its sample, or skips it with Megatron's warning. */
static void glue_row(builder *B, glue_ctx *c, const zt_ftrow *r) {
  const zt_ft_task t = c->task;
  const int pair = t != ZT_FT_SST2 && t != ZT_FT_COLA;
  zt_pyint uid = {1, 0, 0}, ilabel = {1, 0, 0};
  zt_span slabel = {0, 0};
  int string_labels = t == ZT_FT_MNLI || t == ZT_FT_QNLI || t == ZT_FT_RTE;
  long ia, ib = -1;
  if (t == ZT_FT_MNLI) {
    need_columns(c, r, 10);
    ia = 8, ib = 9;
  } else if (c->is_test) {
    const size_t cols = t == ZT_FT_SST2 || t == ZT_FT_COLA ? 2 : t == ZT_FT_MRPC ? 5 : 3;
    assert_columns(c, r, cols);
    ia = t == ZT_FT_MRPC ? 3 : 1;
    ib = t == ZT_FT_MRPC ? 4 : pair ? 2 : -1;
  } else {
    const size_t cols = t == ZT_FT_QQP ? 6 : t == ZT_FT_SST2 ? 2 : t == ZT_FT_MRPC ? 5 : 4;
    if (r->n != cols) {
      warn_skip(B, c, r, "index error");
      return;
    }
    ia = t == ZT_FT_QQP || t == ZT_FT_COLA || t == ZT_FT_MRPC ? 3 : t == ZT_FT_SST2 ? 0 : 1;
    ib = t == ZT_FT_QQP || t == ZT_FT_MRPC ? 4 : pair ? 2 : -1;
  }
  /* Megatron's order: text_a, text_b, uid, label (MNLI); uid, text_a, text_b, label (the others) */
  if (t != ZT_FT_MNLI && (c->is_test || t == ZT_FT_QQP || t == ZT_FT_QNLI || t == ZT_FT_RTE))
    uid = int_column(B, c, r, 0, "uid");
  zt_ft_clean_text(col(r, ia), &B->ca);
  if (ib >= 0) zt_ft_clean_text(col(r, ib), &B->cb);
  if (t == ZT_FT_MNLI) uid = int_column(B, c, r, 0, "uid");
  if (!c->is_test && (t == ZT_FT_SST2 || t == ZT_FT_COLA || t == ZT_FT_MRPC)) uid.v = c->total;
  if (c->is_test) {
    string_labels = 0; /* the test_label: index 0 of every task's LABELS */
  } else if (string_labels) {
    slabel = col(r, -1);
  } else {
    ilabel = int_column(B, c, r, t == ZT_FT_COLA ? 1 : t == ZT_FT_MRPC ? 0 : -1, "label");
  }
  if (t == ZT_FT_MNLI || c->is_test) {
    zt_check(B->ca.n > 0, WHAT, "%s:%ld: empty text a (column %ld) where Megatron's %s reader asserts a text", c->file,
             c->line, ia, zt_ft_task_name(t));
    zt_check(ib < 0 || B->cb.n > 0, WHAT, "%s:%ld: empty text b (column %ld) where Megatron's %s reader asserts a "
             "text", c->file, c->line, ib, zt_ft_task_name(t));
  } else {
    if (B->ca.n == 0) {
      warn_skip(B, c, r, "zero length a");
      return;
    }
    if (ib >= 0 && B->cb.n == 0) {
      warn_skip(B, c, r, "zero length b");
      return;
    }
  }
  int label = 0;
  if (string_labels) {
    label = string_label(t, slabel);
    if (label < 0) {
      B->msg.n = 0;
      zt_py_repr_str(slabel, &B->msg);
      zt_fatal(WHAT, "%s:%ld: label %s is not one of %s (Megatron's %s reader asserts label in LABELS)", c->file,
               c->line, B->msg.p, t == ZT_FT_MNLI ? "'contradiction', 'entailment', 'neutral'"
                                                  : "'entailment', 'not_entailment'", zt_ft_task_name(t));
    }
  } else if (!c->is_test) {
    zt_check(!ilabel.overflow && (ilabel.v == 0 || ilabel.v == 1), WHAT, "%s:%ld: label %.*s is not 0 or 1 "
             "(Megatron's %s reader asserts label in LABELS)", c->file, c->line,
             COL(r, t == ZT_FT_COLA ? 1 : t == ZT_FT_MRPC ? 0 : -1), zt_ft_task_name(t));
    label = (int)ilabel.v;
  }
  zt_check(!uid.overflow && uid.v >= 0, WHAT, "%s:%ld: uid %.*s is %s", c->file, c->line, COL(r, 0),
           uid.overflow ? "outside int64 (Megatron's batches carry uids as int64)"
                        : "negative (Megatron's reader asserts uid >= 0)");
  reserve_sample(B);
  encode(B, &B->ca, &B->a);
  if (ib >= 0) encode(B, &B->cb, &B->b);
  build_sequence(B, 0, &B->a, ib >= 0 ? &B->b : NULL);
  push_sample(B, label, uid.v);
  c->total++;
  if (c->total % 50000 == 0) zt_log("  > processed %lld so far ...\n", (long long)c->total);
}

/* Python's float() of a stripped column: an optional sign, digits with single underscores between them, a point, an
 * exponent; or inf, infinity, nan in any case. 0 when it would raise ValueError. */
static int py_float(zt_span s, double *out) {
  char buf[128];
  size_t k = 0;
  if (s.n == 0 || s.n >= sizeof buf) return 0;
  for (size_t i = 0; i < s.n; i++) {
    const char ch = s.p[i];
    if (ch == '_') { /* between two digits only */
      const int before = i > 0 && s.p[i - 1] >= '0' && s.p[i - 1] <= '9';
      const int after = i + 1 < s.n && s.p[i + 1] >= '0' && s.p[i + 1] <= '9';
      if (!before || !after) return 0;
      continue;
    }
    buf[k++] = ch;
  }
  buf[k] = 0;
  const char *w = buf + (buf[0] == '+' || buf[0] == '-');
  if (!strcasecmp(w, "inf") || !strcasecmp(w, "infinity") || !strcasecmp(w, "nan")) {
    *out = strtod(buf, NULL);
    return 1;
  }
  for (const char *q = buf; *q; q++)
    if (!strchr("0123456789+-.eE", *q)) return 0;
  char *end;
  *out = strtod(buf, &end);
  return end != buf && *end == 0;
}

/* STS-B (tasks/glue/stsb.py): train and dev files of 10 columns, test files of 9 (the header tells them apart);
 * sentence1 and sentence2 are columns 7 and 8, the score the last column. */
static int stsb_header(glue_ctx *c, const zt_ftrow *r) {
  if (r->n == 9) {
    c->is_test = 1;
    zt_log("   reading %.*s, %.*s, and %.*s columns and setting labels to 0.0\n", COL(r, 0), COL(r, 7), COL(r, 8));
  } else {
    assert_columns(c, r, 10);
    zt_log("    reading %.*s, %.*s, %.*s, and %.*s columns ...\n", COL(r, 0), COL(r, 7), COL(r, 8), COL(r, -1));
  }
  return 1;
}

static void stsb_row(builder *B, glue_ctx *c, const zt_ftrow *r) {
  if (c->is_test) {
    assert_columns(c, r, 9);
  } else if (r->n != 10) {
    warn_skip(B, c, r, "index error");
    return;
  }
  const zt_pyint uid = int_column(B, c, r, 0, "uid");
  zt_ft_clean_text(col(r, 7), &B->ca);
  zt_ft_clean_text(col(r, 8), &B->cb);
  double score = 0.0;
  if (!c->is_test && !py_float(col(r, -1), &score)) {
    B->msg.n = 0;
    zt_py_repr_str(col(r, -1), &B->msg);
    zt_fatal(WHAT, "%s:%ld: the score column is %s, not a number (Megatron's float() fails with ValueError)", c->file,
             c->line, B->msg.p);
  }
  if (c->is_test) {
    zt_check(B->ca.n > 0 && B->cb.n > 0, WHAT, "%s:%ld: empty text %s (column %d) where Megatron's STS-B reader "
             "asserts a text", c->file, c->line, B->ca.n ? "b" : "a", B->ca.n ? 8 : 7);
  } else if (B->ca.n == 0 || B->cb.n == 0) {
    warn_skip(B, c, r, B->ca.n == 0 ? "zero length a" : "zero length b");
    return;
  }
  zt_check(!uid.overflow && uid.v >= 0, WHAT, "%s:%ld: uid %.*s is %s", c->file, c->line, COL(r, 0),
           uid.overflow ? "outside int64 (Megatron's batches carry uids as int64)"
                        : "negative (Megatron's reader asserts uid >= 0)");
  zt_check(!isnan(score), WHAT, "%s:%ld: score %.*s: Megatron's build_sample takes int() of it and fails with "
           "ValueError", c->file, c->line, COL(r, -1));
  zt_check(fabs(score) < 2147483648.0, WHAT, "%s:%ld: score %.*s: int() of it %s", c->file, c->line, COL(r, -1),
           isinf(score) ? "fails with OverflowError (Megatron's build_sample)"
                        : "does not fit zerotron's int32 labels");
  reserve_sample(B);
  encode(B, &B->ca, &B->a);
  encode(B, &B->cb, &B->b);
  build_sequence(B, 0, &B->a, &B->b);
  push_sample(B, (int)score, uid.v); /* build_sample's int(label): truncated toward zero */
  c->total++;
  if (c->total % 50000 == 0) zt_log("  > processed %lld so far ...\n", (long long)c->total);
}

static void glue_file(builder *B, zt_ft_task task, const char *file) {
  zt_log(" > Processing %s ...\n", file);
  zt_ftlines *L = &B->lines;
  zt_ftlines_open(L, file);
  glue_ctx c = {.task = task, .file = file};
  zt_span line;
  int first = 1;
  while (zt_ftlines_next(L, &line)) {
    c.line = L->no;
    zt_ft_split_tab(zt_py_strip(line), &B->row);
    if (first) {
      first = 0;
      if (task == ZT_FT_STSB ? stsb_header(&c, &B->row) : glue_header(&c, &B->row)) continue;
    }
    if (task == ZT_FT_STSB) stsb_row(B, &c, &B->row);
    else glue_row(B, &c, &B->row);
  }
  zt_ftlines_close(L);
  zt_log(" >> processed %lld samples.\n", (long long)c.total);
}

/* ---- RACE ------------------------------------------------------------------------------------------------------ */

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* glob(os.path.join(datapath, '*.txt')), sorted bytewise (see finetune_data.h), into B->files and B->n_files. */
static void race_files(builder *B, const char *datapath) {
  DIR *dir = opendir(datapath);
  zt_check(dir != NULL, WHAT, "RACE data path %s: cannot open the directory: %s", datapath, strerror(errno));
  char **names = NULL;
  size_t cap = 0, *n = &B->n_files;
  *n = 0;
  struct dirent *e;
  const size_t dl = strlen(datapath);
  const int slash = dl > 0 && datapath[dl - 1] == '/';
  while ((e = readdir(dir)) != NULL) {
    const size_t k = strlen(e->d_name);
    if (e->d_name[0] == '.' || k < 4 || strcmp(e->d_name + k - 4, ".txt") != 0) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      names = realloc(names, cap * sizeof *names);
      zt_check(names != NULL, "out of memory", "RACE file names (%zu)", cap);
      B->files = names;
    }
    names[*n] = zt_malloc(dl + k + 2, "RACE file name");
    snprintf(names[*n], dl + k + 2, "%s%s%s", datapath, slash || dl == 0 ? "" : "/", e->d_name);
    (*n)++;
  }
  closedir(dir);
  zt_check(*n > 0, WHAT, "RACE data path %s: no *.txt file in the directory (Megatron reads glob(os.path.join("
           "datapath, '*.txt')))", datapath);
  qsort(names, *n, sizeof *names, by_name);
}


static void race_get(race_state *R, const char *file, long line, const char *key, int kind, zt_jsonl_texts *out) {
  const int k = zt_jsonl_kind(R->doc, key);
  zt_check(k != ZT_JSONL_MISSING, WHAT, "%s:%ld: no \"%s\" key (Megatron's RACE reader fails with KeyError)", file,
           line, key);
  zt_check(k == kind, WHAT, "%s:%ld: \"%s\" is not %s", file, line, key,
           kind == ZT_JSONL_STRING ? "a string" : "a list of strings");
  if (zt_jsonl_get(R->doc, key, out, R->err, sizeof R->err) != 0) zt_fatal(WHAT, "%s:%ld: %s", file, line, R->err);
}

/* One JSON line: an article and its questions; adds one sample per question. */
static void race_line(builder *B, race_state *R, const char *file, long line, zt_span text, int64_t *num_questions,
                      int64_t *num_samples) {
  if (zt_jsonl_parse(R->doc, text.p, text.n, R->err, sizeof R->err) != 0)
    zt_fatal(WHAT, "%s:%ld: %s (Megatron's json.loads fails)", file, line, R->err);
  race_get(R, file, line, "article", ZT_JSONL_STRING, &R->article);
  race_get(R, file, line, "questions", ZT_JSONL_LIST, &R->questions);
  zt_check(zt_jsonl_kind(R->doc, "options") != ZT_JSONL_MISSING, WHAT, "%s:%ld: no \"options\" key (Megatron's "
           "RACE reader fails with KeyError)", file, line);
  if (zt_jsonl_get_lists(R->doc, "options", &R->options, R->err, sizeof R->err) != 0)
    zt_fatal(WHAT, "%s:%ld: %s", file, line, R->err);
  race_get(R, file, line, "answers", ZT_JSONL_LIST, &R->answers);
  const size_t nq = R->questions.n;
  zt_check(nq == R->answers.n, WHAT, "%s:%ld: %zu questions and %zu answers (Megatron's RACE reader asserts equal "
           "lengths)", file, line, nq, R->answers.n);
  zt_check(nq == R->options.n, WHAT, "%s:%ld: %zu questions and %zu options lists (Megatron's RACE reader asserts "
           "equal lengths)", file, line, nq, R->options.n);
  zt_ft_clean_text((zt_span){R->article.text[0], R->article.len[0]}, &B->cb);
  encode(B, &B->cb, &R->context);
  size_t first_choice = 0;
  for (size_t qi = 0; qi < nq; qi++) {
    (*num_questions)++;
    const zt_span ans = {R->answers.text[qi], R->answers.len[qi]};
    size_t used = 0;
    const uint32_t cp = ans.n ? zt_utf8_decode((const uint8_t *)ans.p, ans.n, &used) : 0;
    B->msg.n = 0;
    zt_py_repr_str(ans, &B->msg);
    zt_check(ans.n > 0 && used == ans.n, WHAT, "%s:%ld: answer %zu is %s, not one character (Megatron's ord() fails)",
             file, line, qi, B->msg.p);
    zt_check(cp >= 'A' && cp < 'A' + RACE_CHOICES, WHAT, "%s:%ld: answer %zu is %s; Megatron's RACE reader asserts "
             "0 <= ord(answer) - ord('A') < %d", file, line, qi, B->msg.p, RACE_CHOICES);
    zt_check(R->options.count[qi] == RACE_CHOICES, WHAT, "%s:%ld: question %zu has %zu options; Megatron's RACE "
             "reader asserts %d", file, line, qi, R->options.count[qi], RACE_CHOICES);
    const zt_span q = {R->questions.text[qi], R->questions.len[qi]};
    const int blank = memchr(q.p, '_', q.n) != NULL;
    reserve_sample(B);
    for (int ci = 0; ci < RACE_CHOICES; ci++) {
      const char *ch = R->options.texts.text[first_choice + (size_t)ci];
      const size_t chn = R->options.texts.len[first_choice + (size_t)ci];
      B->qa.n = 0;
      if (blank) { /* question.replace("_", choice) */
        for (size_t i = 0; i < q.n; i++) {
          if (q.p[i] == '_') zt_ftbuf_put(&B->qa, ch, chn);
          else zt_ftbuf_put(&B->qa, q.p + i, 1);
        }
      } else { /* " ".join([question, choice]) */
        zt_ftbuf_put(&B->qa, q.p, q.n);
        zt_ftbuf_put(&B->qa, " ", 1);
        zt_ftbuf_put(&B->qa, ch, chn);
      }
      zt_ft_clean_text((zt_span){B->qa.p, B->qa.n}, &B->ca);
      encode(B, &B->ca, &B->a);
      if (B->a.n > RACE_MAX_QA_LENGTH) B->a.n = RACE_MAX_QA_LENGTH;
      build_sequence(B, ci, &B->a, &R->context);
    }
    first_choice += R->options.count[qi];
    push_sample(B, (int)(cp - 'A'), *num_samples);
    (*num_samples)++;
  }
}

static void race_path(builder *B, const char *datapath) {
  zt_log("   > working on %s\n", datapath);
  const double t0 = zt_now();
  race_files(B, datapath);
  race_state *R = &B->race;
  if (!R->doc) R->doc = zt_jsonl_doc_new();
  int64_t num_docs = 0, num_questions = 0, num_samples = 0;
  for (size_t f = 0; f < B->n_files; f++) {
    zt_ftlines *L = &B->lines;
    zt_ftlines_open(L, B->files[f]);
    zt_span line;
    while (zt_ftlines_next(L, &line)) {
      num_docs++;
      race_line(B, R, B->files[f], L->no, line, &num_questions, &num_samples);
    }
    zt_ftlines_close(L);
  }
  for (size_t f = 0; f < B->n_files; f++) free(B->files[f]);
  free(B->files);
  B->files = NULL, B->n_files = 0;
  zt_log("    > processed %lld document, %lld questions, and %lld samples in %.2f seconds\n", (long long)num_docs,
         (long long)num_questions, (long long)num_samples, zt_now() - t0);
}

/* ---- the dataset ----------------------------------------------------------------------------------------------- */

static int32_t special_id(const zt_tokenizer *tok, const char *token, zt_ft_task task) {
  const int32_t id = zt_tokenizer_token_to_id(tok, token);
  zt_check(id >= 0, WHAT, "--tokenizer-type %s has no %s token; %s finetuning needs a BERT WordPiece tokenizer "
           "(BertWordPieceLowerCase or BertWordPieceCase)", zt_tokenizer_kind_name(zt_tokenizer_kind_of(tok)), token,
           zt_ft_task_name(task));
  return id;
}

void zt_ft_dataset_load(zt_ft_dataset *d, zt_ft_task task, const char *name, const char *const *paths, int npaths,
                        const zt_tokenizer *tok, int seq_length) {
  zt_check((int)task >= 0 && (int)task < N_TASKS, WHAT, "unknown task %d", (int)task);
  zt_check(seq_length >= 1, WHAT, "--seq-length %d: %s samples need at least 1 token", seq_length,
           zt_ft_task_name(task));
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "%s", name);
  d->choices = zt_ft_task_choices(task);
  d->seq_length = seq_length;
  if (g_live) builder_free(g_live); /* a load a refusal abandoned (its fatal hook returned to the caller) */
  builder *B = g_live = zt_calloc(1, sizeof *B, "finetune data");
  B->d = d, B->tok = tok;
  B->cls = special_id(tok, "[CLS]", task);
  B->sep = special_id(tok, "[SEP]", task);
  B->pad = d->pad = special_id(tok, "[PAD]", task);
  B->st = zt_tok_state_new(tok);
  zt_log(" > building %s dataset for %s:\n", zt_ft_task_name(task), name);
  zt_ftbuf *line = &B->msg;
  line->n = 0;
  zt_ftbuf_put(line, "  > paths:", 10);
  for (int i = 0; i < npaths; i++) {
    zt_ftbuf_put(line, " ", 1);
    zt_ftbuf_put(line, paths[i], strlen(paths[i]));
  }
  zt_log("%s\n", line->p);
  for (int i = 0; i < npaths; i++) {
    if (task == ZT_FT_RACE) race_path(B, paths[i]);
    else glue_file(B, task, paths[i]);
  }
  zt_log("  >> total number of samples: %lld\n", (long long)d->n);
  if (d->n > 0) { /* give back the doubling's slack (up to half of the arrays) */
    const size_t n = (size_t)d->n, rows = n * (size_t)d->choices;
    int32_t *ids = realloc(d->ids, (size_t)d->off[rows] * sizeof(int32_t) + 1);
    int64_t *off = realloc(d->off, (rows + 1) * sizeof(int64_t));
    int32_t *bs = realloc(d->b_start, rows * sizeof(int32_t));
    int32_t *labels = realloc(d->labels, n * sizeof(int32_t));
    int64_t *uids = realloc(d->uids, n * sizeof(int64_t));
    if (ids) d->ids = ids;
    if (off) d->off = off;
    if (bs) d->b_start = bs;
    if (labels) d->labels = labels;
    if (uids) d->uids = uids;
  }
  builder_free(B);
  g_live = NULL;
}

void zt_ft_dataset_free(zt_ft_dataset *d) {
  free(d->ids);
  free(d->off);
  free(d->b_start);
  free(d->labels);
  free(d->uids);
  memset(d, 0, sizeof *d);
}

/* ---- torch's order --------------------------------------------------------------------------------------------- */

/* torch.randperm: zt_torch_randperm of data/pretraining_sampler.h (the cyclic loader uses it too) */

void zt_ft_loader_init(zt_ft_loader *l, int64_t n, int world, int batch, int drop_last) {
  zt_check(n >= 0 && world >= 1 && batch >= 1, WHAT, "loader of %lld samples, %d data-parallel ranks, batch %d",
           (long long)n, world, batch);
  memset(l, 0, sizeof *l);
  l->n = n;
  l->world = world;
  l->batch = batch;
  l->drop_last = drop_last != 0;
  l->per_rank = (n + world - 1) / world;
  l->batches = l->drop_last ? l->per_rank / batch : (l->per_rank + batch - 1) / batch;
}

int64_t zt_ft_loader_index(zt_ft_loader *l, uint64_t epoch, int rank, int64_t q, int j) {
  zt_check(rank >= 0 && rank < l->world && q >= 0 && q < l->batches && j >= 0 && j < l->batch, WHAT,
           "loader slot %d of batch %lld of rank %d: outside %lld batches of %d on %d ranks", j, (long long)q, rank,
           (long long)l->batches, l->batch, l->world);
  const int64_t k = q * l->batch + j;
  if (k >= l->per_rank) return -1;
  if (!l->perm_valid || l->perm_epoch != epoch) {
    if (!l->perm) l->perm = zt_malloc((size_t)l->n * sizeof(int64_t), "finetune sample permutation");
    zt_torch_randperm(epoch, l->n, l->perm);
    l->perm_epoch = epoch;
    l->perm_valid = 1;
  }
  return l->perm[(rank + k * l->world) % l->n];
}

void zt_ft_loader_free(zt_ft_loader *l) {
  free(l->perm);
  memset(l, 0, sizeof *l);
}
