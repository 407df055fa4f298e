/* libFuzzer harness: finetune_bert's task readers (data/finetune_data.c) on arbitrary bytes. The first byte picks the
 * task (MNLI, QQP, QNLI, SST-2, CoLA, MRPC, RTE, RACE, STS-B: its value mod 9) and the sequence length (its value / 9
 * mod 8: 1..8, then 16 and 64 above 6); the rest is the task's file (GLUE: a .tsv; RACE: the one *.txt of a
 * directory). Whenever the load accepts the file, every row framed by zt_ft_dataset_row must be Megatron's shape:
 * [CLS] first ([SEP] alone at length 1), real tokens then padding, types 0 then 1 on real tokens and the pad id on padding, ids inside the
 * vocabulary; labels inside the task's classes (STS-B's truncated scores any int); and torch's loader must hand out
 * each index once per epoch. The tokenizer is BERT WordPiece (lowercase) over a small vocabulary written once. */
#include <sys/stat.h>

#include "data/finetune_data.h"
#include "data/pretraining_sampler.h"
#include "tests/fuzz/fuzz.h"

static zt_tokenizer *bert_tokenizer(void) {
  static zt_tokenizer *tok;
  if (tok) return tok;
  char vocab[4096], *p = vocab;
  p += sprintf(p, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\ndog\n##s\n##ing\n");
  for (char c = 'a'; c <= 'z'; c++) p += sprintf(p, "%c\n##%c\n", c, c);
  for (char c = '0'; c <= '9'; c++) p += sprintf(p, "%c\n", c);
  p += sprintf(p, ".\n,\n?\n!\n_\n'\n\"\n-\n");
  const char *path = zt_fuzz_file("vocab.txt", (const uint8_t *)vocab, (size_t)(p - vocab));
  zt_tokenizer_spec spec = {.kind = ZT_TOK_BERT_LOWER, .vocab_file = path};
  tok = zt_tokenizer_create(&spec);
  return tok;
}

static void check_dataset(const zt_ft_dataset *d, zt_ft_task task, const zt_tokenizer *tok) {
  const int T = d->seq_length, V = zt_tokenizer_vocab_size(tok);
  const int32_t cls = zt_tokenizer_token_to_id(tok, "[CLS]"), sep = zt_tokenizer_token_to_id(tok, "[SEP]");
  const int classes = task == ZT_FT_RACE ? 4 : zt_ft_task_classes(task);
  int32_t ids[64], types[64];
  uint8_t pads[64];
  for (int64_t s = 0; s < d->n; s++) {
    if (task != ZT_FT_STSB && (d->labels[s] < 0 || d->labels[s] >= classes)) abort();
    for (int c = 0; c < d->choices; c++) {
      zt_ft_dataset_row(d, s, c, ids, types, pads);
      /* [CLS] first; at --seq-length 1 Megatron's cut keeps none of [CLS] a and appends the final [SEP] */
      if (ids[0] != (T >= 2 ? cls : sep) || !pads[0]) abort();
      int real = 1, b = 0;
      for (int t = 1; t < T; t++) {
        if (pads[t] && !pads[t - 1]) abort(); /* real tokens, then padding */
        if (pads[t]) real++;
      }
      for (int t = 0; t < T; t++) {
        if (ids[t] < 0 || ids[t] >= V) abort();
        if (t < real && (types[t] < b || types[t] > 1)) abort(); /* 0 ... 0 1 ... 1 */
        if (t < real) b = types[t];
        if (t >= real && (ids[t] != d->pad || types[t] != d->pad)) abort();
      }
    }
  }
}

/* torch's loader over n samples: each index once per epoch at most (and all of them with one rank, no drop). */
static void check_loader(int64_t n) {
  if (n < 1 || n > 4096) return;
  static uint8_t seen[4096 + 64];
  zt_ft_loader l;
  zt_ft_loader_init(&l, n, 1, 3, 0);
  memset(seen, 0, (size_t)n);
  for (int64_t q = 0; q < l.batches; q++)
    for (int j = 0; j < 3; j++) {
      const int64_t i = zt_ft_loader_index(&l, 1234, 0, q, j);
      if (i < -1 || i >= n || (i >= 0 && seen[i]++)) abort();
    }
  for (int64_t i = 0; i < n; i++)
    if (!seen[i]) abort();
  zt_ft_loader_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  zt_set_rank(1, 2); /* the readers' log lines (zt_log prints on rank 0 only) would dominate the run */
  zt_tokenizer *tok = bert_tokenizer();
  const zt_ft_task task = (zt_ft_task)(data[0] % 9);
  static const int lens[8] = {1, 2, 3, 5, 8, 13, 16, 64};
  const int T = lens[(data[0] / 9) % 8];
  const char *path;
  if (task == ZT_FT_RACE) { /* a directory holding the input as its one *.txt file */
    const char *f = zt_fuzz_file("race_input.txt", data + 1, size - 1);
    static char dir[512], txt[600];
    snprintf(dir, sizeof dir, "%.*s/race", (int)(strrchr(f, '/') - f), f);
    mkdir(dir, 0700);
    snprintf(txt, sizeof txt, "%s/a.txt", dir);
    if (rename(f, txt) != 0) abort();
    path = dir;
  } else {
    path = zt_fuzz_file("input.tsv", data + 1, size - 1);
  }
  static zt_ft_dataset d; /* static: a refusal's partial arrays are freed by the next input */
  zt_ft_dataset_free(&d);
  ZT_FUZZ_TRY {
    const char *paths[1] = {path};
    zt_ft_dataset_load(&d, task, "training", paths, 1, tok, T);
    check_dataset(&d, task, tok);
    check_loader(d.n);
  }
  return 0;
}
