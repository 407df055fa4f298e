/* Test driver for test_prompt_dataset.py: finetune_llama's data provider (data/prompt_provider.h) over an
 * Alpaca-style JSON file with an HFTokenizer directory, printing every example's batch row.
 *   test_prompt_tool DIR JSON SEQ [--no-rows]
 * For each example i: "tokens i: <SEQ ids>", "labels i: <SEQ ids>", "mask i: <SEQ 0/1>" (get_batch_pipe's tokens,
 * labels and loss mask; a label under mask 0 is whatever the provider puts there). Errors exit non-zero with the
 * provider's message. --no-rows only builds the dataset (its log line: bench/prompt_data.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/prompt_provider.h"
#include "data/tokenizer/tokenizer.h"

int main(int argc, char **argv) {
  const int rows = argc == 4;
  if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "--no-rows"))) {
    fprintf(stderr, "usage: %s HF_TOKENIZER_DIR ALPACA_JSON SEQ_LENGTH [--no-rows]\n", argv[0]);
    return 2;
  }
  const int T = atoi(argv[3]);
  zt_tokenizer_spec spec = {.kind = ZT_TOK_HF, .tokenizer_model = argv[1]};
  zt_tokenizer *tok = zt_tokenizer_create(&spec);
  const char *paths[1] = {argv[2]};
  zt_data_setup s = {.data_path_n = 1, .data_path = paths, .micro_batch = 1, .seq_length = T, .train_sampled = 1,
                     .num_samples = {1, 0, 0}, .vocab_size = zt_tokenizer_vocab_size(tok), .tokenizer = tok,
                     .tokenizer_name = "HFTokenizer"};
  zt_data_provider *p = zt_prompt_provider_create(&s);
  const int64_t n = rows ? p->split_size(p, 0) : 0;
  for (int64_t i = 0; i < n; i++) {
    zt_batch b;
    p->load_ids(p, 0, &i, &b);
    const char *name[3] = {"tokens", "labels", "mask"};
    for (int k = 0; k < 3; k++) {
      printf("%s %lld:", name[k], (long long)i);
      for (int t = 0; t < T; t++)
        printf(" %d", k == 0 ? b.tokens[t] : k == 1 ? b.labels[t] : (int)b.loss_mask[t]);
      printf("\n");
    }
  }
  zt_data_free(p);
  zt_tokenizer_free(tok);
  return 0;
}
