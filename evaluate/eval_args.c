/* The evaluation programs' command lines (eval_args.h). */
#include "evaluate/eval_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/ckpt_reader.h"
#include "evaluate/eval_model.h"
#include "runtime/base/error.h"
#include "runtime/comm/comm.h"

const char *zt_eval_flag_name(const char *a, size_t *key) {
  const char *eq = strncmp(a, "--", 2) ? NULL : strchr(a, '=');
  *key = eq ? (size_t)(eq - a) : strlen(a);
  return eq ? eq + 1 : NULL;
}

const char *zt_eval_flag_value(int argc, char **argv, int *i, const char *a, size_t key, const char *inl) {
  if (inl) return inl;
  zt_check(*i + 1 < argc, "missing argument value", "%.*s expects a value", (int)key, a);
  return argv[++*i];
}

double zt_eval_parse_num(const char *flag, const char *v, int integer) {
  char *end;
  errno = 0;
  const double x = integer ? (double)strtol(v, &end, 10) : strtod(v, &end);
  zt_check(*v && !*end && !errno && (!integer || (x >= -2147483647.0 && x <= 2147483647.0)), "bad argument value",
           "%s %s: expected %s", flag, v, integer ? "an integer" : "a number");
  return x;
}

void zt_eval_seen_arg(zt_eval_seen *s, const char *a, size_t key) {
#define IS(name) (key == strlen(name) && !strncmp(a, name, key))
  if (IS("--lr")) s->lr = 1;
  if (IS("--train-iters") || IS("--train-samples")) s->iters = 1;
  if (IS("--data-path") || IS("--mock-data") || IS("--train-data-path") || IS("--valid-data-path") ||
      IS("--test-data-path"))
    s->data = 1;
  if (IS("--micro-batch-size")) s->mbs = 1;
#undef IS
}

int zt_eval_placeholders(const zt_eval_seen *s, char **r, int n, int mbs) {
  static char data[96];
  if (!s->lr) r[n++] = "--lr", r[n++] = "0.0";
  if (!s->iters) r[n++] = "--train-iters", r[n++] = "1";
  if (!s->data) { /* the parser wants training data; the evaluation programs open none */
    snprintf(data, sizeof data, "%s-reads-no-training-data", zt_eval_program);
    r[n++] = "--data-path", r[n++] = data;
  }
  if (mbs && !s->mbs) r[n++] = "--micro-batch-size", r[n++] = "1";
  return n;
}

void zt_eval_parse(zt_args *args, int n, char **rest) {
  zt_args_model = "gpt";
  zt_args_checkpoint_reader = zt_ckpt_saved_args;
  zt_args_parse(args, n, rest, zt_comm_size());
}

void zt_eval_decoding_setup(zt_args *a, const zt_tokenizer *tok, const char *what) {
  const char *prog = zt_eval_program;
  zt_check(a->load != NULL, "missing argument", "--load CHECKPOINT_DIR is required (the pretrain_gpt checkpoint to "
           "%s)", what);
  zt_check(a->virtual_pipeline_model_parallel_size <= 0, "unsupported argument", "--num-layers-per-virtual-pipeline-"
           "stage: Interleaved pipeline schedule is not yet supported for text generation. (Megatron refuses it too; "
           "any layout loads any checkpoint)");
  zt_check(a->data_parallel_size == 1, "unsupported argument", "%s runs one model replica: %d processes for "
           "--tensor-model-parallel-size %d x --pipeline-model-parallel-size %d make %d data-parallel replicas; start "
           "%d processes", prog, zt_comm_size(), a->tensor_model_parallel_size, a->pipeline_model_parallel_size,
           a->data_parallel_size, a->tensor_model_parallel_size * a->pipeline_model_parallel_size);
  zt_check(!a->reset_position_ids && !a->reset_attention_mask, "unsupported argument", "%s: %s uses positions 0..n-1 "
           "and a plain causal mask", a->reset_position_ids ? "--reset-position-ids" : "--reset-attention-mask", prog);
  a->no_load_optim = 1;
  a->no_load_rng = 1;
  a->finetune = 0;
  a->exit_on_missing_checkpoint = 1;
  const int ckpt_rows = zt_eval_checkpoint_vocab(a);
  zt_check(zt_tokenizer_vocab_size(tok) <= ckpt_rows, "checkpoint", "the tokenizer has %d ids, the checkpoint's output "
           "layer %d rows: another tokenizer than the one it was trained with?", zt_tokenizer_vocab_size(tok),
           ckpt_rows);
}
