/* Test driver for finetune_bert's data (data/finetune_data.h), for test_finetune_data.py:
 *   finetune_data_dump TASK SEQLEN VOCAB_FILE LOWER NAME PATH...  loads the dataset (Megatron's log lines on
 *                                       stdout), then one JSON line a sample: {"uid", "label", "ids", "types",
 *                                       "paddings"} with one list per choice, then {"name", "n", "choices"};
 *                                       LOWER: 1 BertWordPieceLowerCase, 0 BertWordPieceCase, null NullTokenizer
 *   finetune_data_dump --perm SEED N    zt_torch_randperm (data/pretraining_sampler.h), one line of N indices
 *   finetune_data_dump --loader N W B DROP EPOCH   every rank's batches: a line "r q: i0 i1 ..." per batch (-1 for a
 *                                       slot past the end), after a line "per_rank batches"
 *   finetune_data_dump --name TASK PATH zt_ft_name_from_path
 *   finetune_data_dump --clean          clean_text of each stdin line (hex of UTF-8 in, hex out) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/finetune_data.h"
#include "data/finetune_text.h"
#include "data/pretraining_sampler.h"
#include "runtime/base/error.h"

static zt_ft_task task_arg(const char *s) {
  zt_ft_task t;
  zt_check(zt_ft_task_parse(s, &t) == 0, "usage", "unknown task %s", s);
  return t;
}

static int dump_dataset(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: finetune_data_dump TASK SEQLEN VOCAB_FILE LOWER NAME PATH...\n");
    return 2;
  }
  const zt_ft_task task = task_arg(argv[1]);
  const int T = atoi(argv[2]);
  zt_tokenizer_spec spec = {.kind = atoi(argv[4]) ? ZT_TOK_BERT_LOWER : ZT_TOK_BERT_CASE, .vocab_file = argv[3]};
  if (!strcmp(argv[4], "null")) spec = (zt_tokenizer_spec){.kind = ZT_TOK_NULL, .vocab_size = 100}; /* no [CLS] */
  zt_tokenizer *tok = zt_tokenizer_create(&spec);
  zt_ft_dataset d;
  zt_ft_dataset_load(&d, task, argv[5], (const char *const *)(argv + 6), argc - 6, tok, T);
  const size_t rows = (size_t)(d.choices > 0 ? d.choices : 1) * (size_t)(T > 0 ? T : 1);
  int32_t *ids = malloc(rows * sizeof(int32_t)), *types = malloc(rows * sizeof(int32_t));
  uint8_t *pads = malloc(rows);
  for (int64_t s = 0; s < d.n; s++) {
    printf("{\"uid\": %" PRId64 ", \"label\": %d, ", d.uids[s], d.labels[s]);
    for (int c = 0; c < d.choices; c++)
      zt_ft_dataset_row(&d, s, c, ids + (size_t)c * T, types + (size_t)c * T, pads + (size_t)c * T);
    const char *keys[3] = {"ids", "types", "paddings"};
    for (int k = 0; k < 3; k++) {
      printf("\"%s\": [", keys[k]);
      for (int c = 0; c < d.choices; c++) {
        const size_t off = (size_t)c * (size_t)T;
        printf(c ? ", [" : "[");
        for (int i = 0; i < T; i++)
          printf(i ? ", %d" : "%d", k == 0 ? ids[off + i] : k == 1 ? types[off + i] : (int)pads[off + i]);
        printf("]");
      }
      printf(k < 2 ? "], " : "]}\n");
    }
  }
  free(ids), free(types), free(pads);
  printf("{\"name\": \"%s\", \"n\": %" PRId64 ", \"choices\": %d}\n", d.name, d.n, d.choices);
  zt_ft_dataset_free(&d);
  zt_tokenizer_free(tok);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--perm")) {
    const uint64_t seed = strtoull(argv[2], NULL, 10);
    const int64_t n = strtoll(argv[3], NULL, 10);
    int64_t *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    zt_torch_randperm(seed, n, p);
    for (int64_t i = 0; i < n; i++) printf(i ? " %" PRId64 : "%" PRId64, p[i]);
    printf("\n");
    free(p);
    return 0;
  }
  if (argc == 7 && !strcmp(argv[1], "--loader")) {
    zt_ft_loader l;
    zt_ft_loader_init(&l, strtoll(argv[2], NULL, 10), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    const uint64_t epoch = strtoull(argv[6], NULL, 10);
    printf("%" PRId64 " %" PRId64 "\n", l.per_rank, l.batches);
    for (int r = 0; r < l.world; r++)
      for (int64_t q = 0; q < l.batches; q++) {
        printf("%d %" PRId64 ":", r, q);
        for (int j = 0; j < l.batch; j++) printf(" %" PRId64, zt_ft_loader_index(&l, epoch, r, q, j));
        printf("\n");
      }
    zt_ft_loader_free(&l);
    return 0;
  }
  if (argc == 4 && !strcmp(argv[1], "--name")) {
    char out[256];
    zt_ft_name_from_path(task_arg(argv[2]), argv[3], out, sizeof out);
    printf("%s\n", out);
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "--clean")) {
    char line[1 << 16];
    zt_ftbuf in = {0}, out = {0};
    while (fgets(line, sizeof line, stdin)) {
      in.n = 0;
      for (size_t i = 0; line[i] && line[i + 1] && line[i] != '\n'; i += 2) {
        char byte = (char)strtol((char[3]){line[i], line[i + 1], 0}, NULL, 16);
        zt_ftbuf_put(&in, &byte, 1);
      }
      zt_ft_clean_text((zt_span){in.p ? in.p : "", in.n}, &out);
      for (size_t i = 0; i < out.n; i++) printf("%02x", (unsigned char)out.p[i]);
      printf("\n");
    }
    zt_ftbuf_free(&in);
    zt_ftbuf_free(&out);
    return 0;
  }
  return dump_dataset(argc, argv);
}
