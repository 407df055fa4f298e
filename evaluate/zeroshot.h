/* evaluate_zeroshot (Megatron-DeepSpeed's tasks/main.py --task LAMBADA|WIKITEXT103 with
 * tasks/zeroshot_gpt/evaluate.py): the task flags, a forward-only GPT in the evaluation run's TP/PP/DP layout loaded
 * from any pretrain_gpt checkpoint through the trainer's resharding loader, the scoring (summed cross-entropy of the
 * scored targets, or LAMBADA's all-targets-correct count) and Megatron's result lines. docs/evaluate.md. */
#ifndef ZT_EVAL_ZEROSHOT_H
#define ZT_EVAL_ZEROSHOT_H

#include <stddef.h>
#include <stdint.h>

/* The metrics of a finished evaluation, as Megatron prints them. */
typedef struct {
  int lambada;                 /* 1: accuracy (LAMBADA), 0: loss (WIKITEXT103) */
  double total;                /* summed loss of the scored targets, or the number of correct examples */
  int64_t num_examples;        /* LAMBADA */
  int64_t num_tokenized, num_original; /* WIKITEXT103 */
} zt_zeroshot_result;

/* Megatron's result block (the dashes, " validation results on TASK | ...", the dashes) into out. */
void zt_zeroshot_format(const zt_zeroshot_result *r, const char *task, char *out, size_t n);

/* The whole program (evaluate/cli/evaluate_zeroshot.c); returns the exit status. */
int zt_zeroshot_main(int argc, char **argv);

#endif
