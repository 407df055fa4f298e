/* The evaluation programs' command lines (evaluate_zeroshot, generate_samples, run_text_generation_server): each takes
 * its own flags out of argv and passes the rest to pretrain_gpt's parser, with placeholders for the training-only
 * flags that parser requires; and the checks and load settings shared by the two decoding programs. */
#ifndef ZT_EVAL_ARGS_H
#define ZT_EVAL_ARGS_H

#include <stddef.h>

#include "data/tokenizer/tokenizer.h"
#include "train/args.h"

/* Argument a's flag name length (*key: up to a '=' in "--name=value", else the whole argument); returns the text
 * after the '=' or NULL. */
const char *zt_eval_flag_name(const char *a, size_t *key);
/* The value of the flag a (its name key characters long): the text after '=' (inl, or NULL) or the next argument
 * (*i advances); dies naming the flag when there is none. */
const char *zt_eval_flag_value(int argc, char **argv, int *i, const char *a, size_t key, const char *inl);
/* The number v of flag (integer: a whole number within int32); dies naming the flag otherwise. */
double zt_eval_parse_num(const char *flag, const char *v, int integer);

/* Which of the flags pretrain_gpt's parser requires for training were passed on. */
typedef struct {
  int lr, iters, data, mbs;
} zt_eval_seen;
/* Notes argument a (its flag name key characters long) passed on to the parser. */
void zt_eval_seen_arg(zt_eval_seen *s, const char *a, size_t key);
/* Appends to r[n..] what was not given: --lr 0.0, --train-iters 1, --data-path "<program>-reads-no-training-data"
 * (never opened) and, with mbs, --micro-batch-size 1; returns the new count (r needs room for 8 more). */
int zt_eval_placeholders(const zt_eval_seen *s, char **r, int n, int mbs);

/* pretrain_gpt's parser (a GPT) on the arguments passed on; --use-checkpoint-args reads the checkpoint's saved
 * arguments. */
void zt_eval_parse(zt_args *args, int n, char **rest);

/* generate_samples' and run_text_generation_server's checks before any work: --load given (what: the checkpoint's
 * use, for the message), no interleaved pipeline (Megatron refuses it for text generation), one data-parallel
 * replica, plain positions and causal mask, and the tokenizer's ids within the checkpoint's output layer; then the
 * load settings (no optimizer or RNG state, no --finetune, a missing checkpoint an error). */
void zt_eval_decoding_setup(zt_args *a, const zt_tokenizer *tok, const char *what);

#endif
