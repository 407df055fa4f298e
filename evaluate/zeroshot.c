/* evaluate_zeroshot: Megatron-DeepSpeed's zero-shot GPT evaluation (tasks/main.py --task LAMBADA|WIKITEXT103,
 * tasks/zeroshot_gpt/evaluate.py). The task flags are taken out of the command line and the rest is parsed by
 * pretrain_gpt's argument parser (the same model, parallelism, tokenizer and checkpoint flags); a forward-only GPT is
 * built in this run's layout (TP x PP x DP over mpirun) and loaded through the trainer's resharding loader
 * (checkpoints/checkpoint.c), whatever layout the checkpoint was saved in. Each data-parallel replica scores every
 * dp-th micro batch; the pipeline passes activations stage to stage; the last stage sums the scored targets' losses
 * (WIKITEXT103) or counts the examples whose every label token is the argmax over the whole (padded) vocabulary
 * (LAMBADA), and the last rank prints Megatron's result block. */
#include "evaluate/zeroshot.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/checkpoint.h"
#include "evaluate/eval_args.h"
#include "evaluate/eval_model.h"
#include "evaluate/harness_generate.h"
#include "evaluate/harness_tasks.h"
#include "evaluate/zeroshot_data.h"
#include "models/gpt/gpt.h"
#include "runtime/base/blas.h"
#include "runtime/base/error.h"
#include "runtime/base/file.h"
#include "runtime/base/progress_bar.h"
#include "runtime/base/pyfmt.h"
#include "runtime/base/timer.h"
#include "runtime/comm/comm.h"
#include "runtime/parallel/parallel_state.h"
#include "train/args.h"
#include "train/engine.h"

typedef struct {
  const char *task;        /* LAMBADA | WIKITEXT103 */
  const char *valid_data;  /* the task file */
  int strict;              /* --strict-lambada */
  int overlap;             /* --overlapping-eval (32) */
  int overlap_given;
  /* lm-evaluation-harness tasks (--tasks; evaluate/harness_tasks.c) */
  const char *tasks;         /* comma list */
  const char **data, **fewshot; /* --task-data / --fewshot-data NAME=PATH entries */
  int n_data, n_fewshot;
  int nshot, fewshot_seed;   /* --num-fewshot (0), --fewshot-seed (1234, the harness's fewshot_random_seed) */
  int nshot_given;           /* without --num-fewshot each task takes its YAML's num_fewshot (gsm8k 5, gsm8k_cot 8) */
  int bootstrap_iters;       /* --bootstrap-iters (100000, the harness's): the bootstrapped stderrs */
  int max_gen;               /* --max-gen-toks (256, HFLM's max_gen_toks): a generation task's longest continuation */
  int max_gen_given;
  const char *output_path;   /* --output-path: the results JSON */
  /* the lm-evaluation-harness command line of Megatron-DeepSpeed's tasks/eval_harness/evaluate.py (its
   * ds_evalharness scripts in examples_deepspeed): --task_list, --results_path, --num_fewshot mean --tasks,
   * --output-path, --num-fewshot; the model arguments come from the checkpoint */
  int harness_cli;
  int adaptive;              /* --adaptive_seq_len: each micro batch at its longest request's length */
  int given_ours;            /* --tasks, --output-path or --num-fewshot given */
  const char *task_list_arg; /* --task_list as given */
  char *task_list;           /* --task_list with the old harness's names mapped (lambada: lambada_openai) */
  char **renamed;            /* the --task-data / --fewshot-data entries it renamed (n_renamed) */
  int n_renamed;
} task_flags;

static void usage(void) {
  printf("usage: evaluate_zeroshot --task {LAMBADA,WIKITEXT103} --valid-data FILE [--strict-lambada]\n"
         "                         [--overlapping-eval N] --load CHECKPOINT_DIR MODEL_FLAGS...\n"
         "       evaluate_zeroshot --tasks piqa,arc_easy,... --task-data piqa=FILE ... [--num-fewshot N\n"
         "                         --fewshot-data piqa=FILE ...] [--output-path FILE] --load CHECKPOINT_DIR MODEL_FLAGS...\n\n"
         "Zero-shot evaluation of a GPT checkpoint saved by pretrain_gpt (Megatron-DeepSpeed's\n"
         "tasks/main.py --task LAMBADA|WIKITEXT103). Runs under mpirun with --tensor-model-parallel-size and\n"
         "--pipeline-model-parallel-size in any layout, whatever layout the checkpoint was saved in.\n\n"
         "task flags:\n"
         "  --task NAME              LAMBADA (accuracy: every token of the last word is the argmax) or\n"
         "                           WIKITEXT103 (perplexity and word-level adjusted perplexity)\n"
         "  --valid-data FILE        LAMBADA: jsonl, one {\"text\": ...} per line; WIKITEXT103: raw text, detokenized\n"
         "                           by the first of ptb/wiki/lambada its path contains (else kept as is)\n"
         "  --strict-lambada         the label is the whole last word (tokenized as ' ' + word), not the last token\n"
         "  --overlapping-eval N     WIKITEXT103: windows of --seq-length start every N tokens and score their last N\n"
         "                           targets (default 32, or --seq-length when that is smaller; a given N must not\n"
         "                           exceed --seq-length)\n\n"
         "lm-evaluation-harness tasks (scored as the harness's loglikelihood and generate_until requests):\n"
         "  --tasks a,b,...          piqa, arc_easy, arc_challenge, openbookqa, hellaswag (acc, acc_norm and their\n"
         "                           standard errors), sciq, logiqa, mathqa, prost (the same), boolq, winogrande,\n"
         "                           race, anli_r1, anli_r2, anli_r3, copa, multirc, rte, sglue_rte, wic, wsc,\n"
         "                           pubmedqa, mnli, mnli_mismatch, qnli, sst2, wnli (acc), cb, mrpc, qqp,\n"
         "                           mc_taco (acc, f1), cola (mcc), truthfulqa_mc1, truthfulqa_mc2 (acc; mc2's\n"
         "                           is the probability mass of the true answers), social_iqa, commonsense_qa\n"
         "                           (acc), record (f1, em), swag, headqa_en, headqa_es, qa4mre_2011,\n"
         "                           qa4mre_2012, qa4mre_2013 (acc, acc_norm), storycloze_2016, storycloze_2018,\n"
         "                           wsc273 (acc),\n"
         "                           webqs (exact_match), triviaqa, nq_open, gsm8k, gsm8k_cot, gsm8k_cot_zeroshot\n"
         "                           (exact_match of a greedy generation; the GSM8K tasks under the filters\n"
         "                           strict-match and flexible-extract),\n"
         "                           lambada_openai, lambada_standard, lambada_openai_cloze_yaml,\n"
         "                           lambada_standard_cloze_yaml, lambada_openai_mt_de, lambada_openai_mt_en,\n"
         "                           lambada_openai_mt_es, lambada_openai_mt_fr, lambada_openai_mt_it\n"
         "                           (perplexity of the last word, acc: it is the\n"
         "                           greedy continuation), arithmetic_1dc, arithmetic_2da, arithmetic_2dm,\n"
         "                           arithmetic_2ds, arithmetic_3da, arithmetic_3ds, arithmetic_4da,\n"
         "                           arithmetic_4ds, arithmetic_5da, arithmetic_5ds (acc: the greedy answer),\n"
         "                           wikitext, c4 (detokenized), pile_10k, paloma_<subset> (the 16 of\n"
         "                           allenai/paloma: paloma_4chan_meta_sep, ..., paloma_wikitext_103) (word/byte\n"
         "                           perplexity, bits per byte of whole documents),\n"
         "                           mmlu (acc of its 57 subjects mmlu_<subject> and of its groups mmlu_humanities,\n"
         "                           mmlu_other, mmlu_social_sciences, mmlu_stem, each weighted by its documents),\n"
         "                           mmlu_continuation (the same subjects scored on the answers' texts,\n"
         "                           mmlu_continuation_<subject>: acc, acc_norm; its groups stem, other, social\n"
         "                           sciences, humanities),\n"
         "                           blimp (acc of its 67 phenomena blimp_<uid> and their plain mean),\n"
         "                           xcopa (xcopa_et, xcopa_ht, xcopa_id, xcopa_it, xcopa_qu, xcopa_sw, xcopa_ta,\n"
         "                           xcopa_th, xcopa_tr, xcopa_vi, xcopa_zh), xstorycloze (xstorycloze_ar,\n"
         "                           xstorycloze_en, xstorycloze_es, xstorycloze_eu, xstorycloze_hi,\n"
         "                           xstorycloze_id, xstorycloze_my, xstorycloze_ru, xstorycloze_sw,\n"
         "                           xstorycloze_te, xstorycloze_zh), xwinograd (xwinograd_en, xwinograd_fr,\n"
         "                           xwinograd_jp, xwinograd_pt, xwinograd_ru, xwinograd_zh), xnli (xnli_ar,\n"
         "                           xnli_bg, xnli_de, xnli_el, xnli_en, xnli_es, xnli_fr, xnli_hi, xnli_ru,\n"
         "                           xnli_sw, xnli_th, xnli_tr, xnli_ur, xnli_vi, xnli_zh), pawsx (paws_de,\n"
         "                           paws_en, paws_es, paws_fr, paws_ja, paws_ko, paws_zh) (acc of each\n"
         "                           language's task and of the group, weighted by documents); a group or one of\n"
         "                           its tasks may be named alone; the tags anli, arithmetic, glue, headqa,\n"
         "                           lambada, lambada_cloze, lambada_multilingual, paloma, qa4mre, storycloze name\n"
         "                           their tasks, each with its own --task-data\n"
         "  --task-data T=FILE ...   each task's documents, jsonl with the Hugging Face fields (docs/evaluate.md);\n"
         "                           a group's one file holds its tasks' (cais/mmlu \"all\", split by \"subject\";\n"
         "                           BLiMP's phenomena, split by \"UID\"); pawsx's, xcopa's, xnli's,\n"
         "                           xstorycloze's and xwinograd's tasks read a file each (xcopa_et=FILE ...)\n"
         "  --num-fewshot N          N examples before each document (default: each task's YAML num_fewshot, 5\n"
         "                           for gsm8k, 8 for gsm8k_cot, 0 for the others), drawn as the harness's sampler\n"
         "                           does (Python's random.Random(--fewshot-seed).sample; gsm8k_cot: the first N of\n"
         "                           the 8 examples in its YAML, an MMLU subject: the first N of its dev\n"
         "                           documents; gsm8k_cot_zeroshot, truthfulqa_mc1, truthfulqa_mc2 and\n"
         "                           BLiMP's tasks stay 0-shot, their YAMLs' num_fewshot: 0 kept as the harness\n"
         "                           keeps it)\n"
         "  --fewshot-data T=FILE    the pool the examples come from (the task's training split, else its\n"
         "                           validation split, else its test split, as the harness draws; MMLU's dev split);\n"
         "                           needed with N > 0 (not for gsm8k_cot)\n"
         "  --fewshot-seed S         default 1234 (the harness's fewshot_random_seed)\n"
         "  --output-path FILE       the results JSON (the harness's shape); a new file (else printed)\n"
         "  --bootstrap-iters N      resamples for the stderr of lambada_openai's perplexity, the f1 of mrpc,\n"
         "                           qqp and mc_taco and cola's mcc (default 100000; 0: none)\n"
         "  --max-gen-toks N         a generation task's longest continuation in tokens (default 256, the harness's\n"
         "                           max_gen_toks); its context keeps its last --seq-length - N tokens\n\n"
         "Megatron-DeepSpeed's tasks/eval_harness/evaluate.py command line (its ds_evalharness scripts) also runs:\n"
         "  --task_list a,b --results_path FILE --num_fewshot N   as --tasks, --output-path (default results.json)\n"
         "                           and --num-fewshot; the old harness's lambada is lambada_openai, its sst\n"
         "                           sst2; the model arguments come from the checkpoint (the scripts' -1\n"
         "                           placeholders), as there\n"
         "  --adaptive_seq_len       each micro batch runs at its longest request's length, the requests longest\n"
         "                           first (the harness's order): the same scores, less work\n"
         "  --eval_fp32              the model computes in fp32 (always here; the weights rounded as the run held\n"
         "                           them); without it the harness computes an fp16 or bf16 run's model in half\n"
         "  --inference              Megatron-DeepSpeed's no-optimizer mode: what evaluate_zeroshot always does\n\n"
         "model and run flags are pretrain_gpt's (see pretrain_gpt --help): --num-layers, --hidden-size,\n"
         "--num-attention-heads, --seq-length, --max-position-embeddings, --micro-batch-size, --tokenizer-type,\n"
         "--vocab-file, --merge-file, --load, --load-tag, --use-checkpoint-args, --tensor-model-parallel-size,\n"
         "--pipeline-model-parallel-size, --log-interval, --fp16/--bf16 (weights rounded as the run held them).\n"
         "Training-only flags (--lr, --train-iters, --data-path) may be given and are not used.\n\n"
         "prints Megatron's block:  validation results on WIKITEXT103 | avg loss: .. | ppl: .. | adjusted ppl: .. |\n"
         "token ratio: .. |   or   validation results on LAMBADA | number correct: .. | total examples: .. | avg\n"
         "accuracy: ..   (docs/evaluate.md)\n");
}

static int parse_int(const char *flag, const char *v) {
  char *end;
  errno = 0;
  const long x = strtol(v, &end, 10);
  zt_check(*v && !*end && !errno && x >= -2147483647L && x <= 2147483647L, "bad argument value",
           "%s %s: expected an integer", flag, v);
  return (int)x;
}

/* The old harness's task names (lm-evaluation-harness 0.2, which tasks/eval_harness/evaluate.py ran) as ours. */
static const char *harness_task_name(const char *name, size_t n) {
  if (n == strlen("lambada") && !strncmp(name, "lambada", n)) return "lambada_openai";
  if (n == strlen("sst") && !strncmp(name, "sst", n)) return "sst2";
  return NULL;
}

/* evaluate.py's command line: --task_list with its names mapped, --results_path (default ./results.json), the model
 * arguments from the checkpoint (--use-checkpoint-args with zt_args_checkpoint_overrides); r has room for one more
 * word. */
static void harness_cli(task_flags *tf, char **r, int *n) {
  zt_check(!tf->given_ours, "inconsistent arguments", "--task_list, --results_path, --num_fewshot, --adaptive_seq_len "
           "and --eval_fp32 (tasks/eval_harness/evaluate.py's command line) go without --tasks, --output-path and "
           "--num-fewshot (evaluate_zeroshot's): give one or the other");
  zt_check(tf->tasks != NULL && strcmp(tf->tasks, "all") != 0, "unsupported argument", "--task_list %s: name the "
           "tasks (evaluate_zeroshot runs lambada, %s from --task-data files; it does not download the harness's "
           "tasks)", tf->tasks ? tf->tasks : "all (its default)", zt_mc_task_names());
  tf->nshot_given = 1; /* evaluate.py's --num_fewshot defaults to 0 for every task */
  char *out = zt_malloc(strlen(tf->tasks) * 3 + 16, "task list");
  size_t k = 0;
  for (const char *p = tf->tasks; *p;) {
    const size_t len = strcspn(p, ",");
    const char *mapped = harness_task_name(p, len);
    k += (size_t)sprintf(out + k, "%s%.*s", k ? "," : "", mapped ? (int)strlen(mapped) : (int)len, mapped ? mapped : p);
    p += len + (p[len] == ',');
  }
  tf->task_list_arg = tf->tasks;
  tf->tasks = tf->task_list = out;
  tf->renamed = zt_malloc(((size_t)tf->n_data + tf->n_fewshot + 1) * sizeof(char *), "task list");
  for (int i = 0; i < tf->n_data + tf->n_fewshot; i++) { /* lambada=FILE: the mapped name's file */
    const char **e = i < tf->n_data ? &tf->data[i] : &tf->fewshot[i - tf->n_data];
    const size_t len = strcspn(*e, "=");
    const char *mapped = harness_task_name(*e, len);
    if (!mapped || !(*e)[len]) continue;
    char *m = zt_malloc(strlen(mapped) + strlen(*e + len) + 1, "task list");
    sprintf(m, "%s%s", mapped, *e + len);
    *e = tf->renamed[tf->n_renamed++] = m;
  }
  if (!tf->output_path) tf->output_path = "results.json";
  int given = 0;
  for (int i = 1; i < *n; i++) given |= !strcmp(r[i], "--use-checkpoint-args");
  if (!given) r[(*n)++] = "--use-checkpoint-args";
  zt_args_checkpoint_overrides = 1;
}

/* Takes the task flags out of argv; the rest (with placeholders for the training-only flags pretrain_gpt's parser
 * requires) goes to *rest. */
static void split_args(int argc, char **argv, task_flags *tf, int *rest_n, char ***rest) {
  char **r = zt_malloc(((size_t)argc + 9) * sizeof(char *), "arguments");
  int n = 0;
  zt_eval_seen seen = {0};
  r[n++] = argv[0];
  tf->overlap = 32;
  tf->fewshot_seed = 1234;
  tf->bootstrap_iters = 100000;
  tf->max_gen = 256;
  tf->data = zt_malloc(((size_t)argc + 1) * sizeof(char *), "arguments");
  tf->fewshot = zt_malloc(((size_t)argc + 1) * sizeof(char *), "arguments");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    size_t key;
    const char *inl = zt_eval_flag_name(a, &key);
#define IS(name) (key == strlen(name) && !strncmp(a, name, key))
    if (IS("--adaptive_seq_len") || IS("--eval_fp32") || IS("--inference")) {
      zt_check(!inl, "bad argument value", "%.*s takes no value", (int)key, a);
      if (IS("--adaptive_seq_len")) tf->adaptive = tf->harness_cli = 1;
      else if (IS("--eval_fp32")) tf->harness_cli = 1; /* the model computes in fp32 here anyway */
    } else if (IS("--task_list") || IS("--results_path") || IS("--num_fewshot")) {
      const char *v = zt_eval_flag_value(argc, argv, &i, a, key, inl);
      tf->harness_cli = 1;
      if (IS("--task_list")) tf->tasks = v;
      else if (IS("--results_path")) tf->output_path = v;
      else tf->nshot = parse_int("--num_fewshot", v), tf->nshot_given = 1;
    } else if (IS("--tasks") || IS("--num-fewshot") || IS("--fewshot-seed") || IS("--output-path") ||
        IS("--bootstrap-iters") || IS("--max-gen-toks")) {
      const char *v = zt_eval_flag_value(argc, argv, &i, a, key, inl);
      if (IS("--tasks") || IS("--num-fewshot") || IS("--output-path")) tf->given_ours = 1;
      if (IS("--tasks")) tf->tasks = v;
      else if (IS("--num-fewshot")) tf->nshot = parse_int("--num-fewshot", v), tf->nshot_given = 1;
      else if (IS("--fewshot-seed")) tf->fewshot_seed = parse_int("--fewshot-seed", v);
      else if (IS("--bootstrap-iters")) tf->bootstrap_iters = parse_int("--bootstrap-iters", v);
      else if (IS("--max-gen-toks")) tf->max_gen = parse_int("--max-gen-toks", v), tf->max_gen_given = 1;
      else tf->output_path = v;
    } else if (IS("--task-data") || IS("--fewshot-data")) {
      const int few = IS("--fewshot-data");
      const char ***list = few ? &tf->fewshot : &tf->data;
      int *cnt = few ? &tf->n_fewshot : &tf->n_data, k = 0;
      if (inl) {
        (*list)[(*cnt)++] = inl;
        k++;
      }
      while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
        (*list)[(*cnt)++] = argv[++i];
        k++;
      }
      zt_check(k >= 1, "missing argument value", "%s expects TASK=FILE.jsonl entries", few ? "--fewshot-data"
               : "--task-data");
    } else if (IS("--task") || IS("--overlapping-eval")) {
      const char *v = zt_eval_flag_value(argc, argv, &i, a, key, inl);
      if (IS("--task")) tf->task = v;
      else tf->overlap = parse_int("--overlapping-eval", v), tf->overlap_given = 1;
    } else if (IS("--valid-data")) {
      int k = 0;
      if (inl) {
        tf->valid_data = inl;
        k = 1;
      }
      while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
        tf->valid_data = argv[++i];
        k++;
      }
      zt_check(k == 1, "bad argument value", "--valid-data takes one file for LAMBADA and WIKITEXT103 (got %d; "
               "Megatron asserts len(args.valid_data) == 1)", k);
    } else if (IS("--strict-lambada")) {
      zt_check(!inl, "bad argument value", "--strict-lambada takes no value");
      tf->strict = 1;
    } else {
      zt_eval_seen_arg(&seen, a, key);
      r[n++] = argv[i];
    }
#undef IS
  }
  n = zt_eval_placeholders(&seen, r, n, 0); /* evaluate_zeroshot reads --valid-data or --task-data only */
  if (tf->harness_cli) harness_cli(tf, r, &n);
  r[n] = NULL;
  *rest_n = n;
  *rest = r;
}

static void check_harness_flags(const task_flags *tf) {
  zt_check(!tf->task && !tf->valid_data && !tf->strict && !tf->overlap_given, "inconsistent arguments", "--tasks "
           "(lm-evaluation-harness tasks, read from --task-data) goes without --task, --valid-data, --strict-lambada "
           "and --overlapping-eval (Megatron's LAMBADA and WIKITEXT103)");
  zt_check(tf->nshot >= 0, "bad argument value", "--num-fewshot %d: expected 0 or more", tf->nshot);
  zt_check(tf->bootstrap_iters >= 0, "bad argument value", "--bootstrap-iters %d: expected 0 or more",
           tf->bootstrap_iters);
  zt_check(tf->fewshot_seed >= 0, "bad argument value", "--fewshot-seed %d: expected 0 or more", tf->fewshot_seed);
  zt_check(tf->max_gen >= 1, "bad argument value", "--max-gen-toks %d: expected 1 or more", tf->max_gen);
  zt_check(tf->n_fewshot == 0 || tf->nshot > 0 || !tf->nshot_given, "inconsistent arguments", "--fewshot-data is "
           "read only with --num-fewshot N > 0");
  if (tf->output_path) {
    FILE *f = fopen(tf->output_path, "rb");
    if (f) fclose(f);
    zt_check(f == NULL, "bad argument value", "%s %s: the file exists; evaluate_zeroshot does not overwrite it "
             "(give a new path)", tf->harness_cli ? "--results_path" : "--output-path", tf->output_path);
  }
}

static void check_task_flags(task_flags *tf, const zt_args *a) {
  if (tf->tasks) {
    check_harness_flags(tf);
  } else {
  zt_check(!tf->n_data && !tf->n_fewshot && !tf->nshot && !tf->output_path && !tf->max_gen_given, "inconsistent "
           "arguments", "--task-data, --fewshot-data, --num-fewshot, --output-path and --max-gen-toks go with --tasks "
           "(lm-evaluation-harness tasks), not --task");
  zt_check(tf->task != NULL, "missing argument", "--task is required (LAMBADA or WIKITEXT103)");
  zt_check(!strcmp(tf->task, "LAMBADA") || !strcmp(tf->task, "WIKITEXT103"), "unsupported argument",
           "--task %s: evaluate_zeroshot runs LAMBADA and WIKITEXT103 (Megatron's zero-shot GPT tasks; finetune_bert runs "
           "the GLUE tasks and RACE)", tf->task);
  zt_check(tf->valid_data != NULL, "missing argument", "--valid-data FILE is required (the %s file)", tf->task);
  zt_check(!tf->strict || !strcmp(tf->task, "LAMBADA"), "inconsistent arguments",
           "--strict-lambada applies to --task LAMBADA, not %s", tf->task);
  if (!tf->overlap_given && tf->overlap > a->seq_length && !strcmp(tf->task, "WIKITEXT103")) {
    zt_log(" > --overlapping-eval: the default 32 is larger than --seq-length %d; using %d (disjoint windows)\n",
           a->seq_length, a->seq_length);
    tf->overlap = a->seq_length;
  }
  zt_check(tf->overlap <= a->seq_length || strcmp(tf->task, "WIKITEXT103") != 0, "inconsistent arguments", "--overlapping-eval %d is larger than --seq-length "
           "%d: windows would start past the previous one's end and the tokens between would never be scored "
           "(while the average still divides by them); pass --overlapping-eval %d or less", tf->overlap,
           a->seq_length, a->seq_length);
  }
  zt_check(a->load != NULL, "missing argument", "--load CHECKPOINT_DIR is required (the pretrain_gpt checkpoint to "
           "evaluate)");
  zt_check(a->virtual_pipeline_model_parallel_size <= 0, "unsupported argument", "--num-layers-per-virtual-pipeline-"
           "stage: Interleaved pipeline schedule is not yet supported for text generation. (Megatron refuses it "
           "too; evaluate without it: any layout loads any checkpoint)");
  zt_check(!a->reset_position_ids && !a->reset_attention_mask, "unsupported argument", "%s: evaluate_zeroshot "
           "scores with positions 0..seq-1 and a plain causal mask", a->reset_position_ids ? "--reset-position-ids"
           : "--reset-attention-mask");
  zt_check(!a->mock_data, "unsupported argument", "--mock-data: evaluate_zeroshot tokenizes --valid-data; give "
           "--tokenizer-type and its files (--vocab-file, --merge-file)");
}

void zt_zeroshot_format(const zt_zeroshot_result *r, const char *task, char *out, size_t n) {
  char s[512], a[64], b[64], c[64];
  int k = snprintf(s, sizeof s, " validation results on %s | ", task);
  if (!r->lambada) {
    /* Megatron's output is a float32 tensor: avg loss and its product with the (double) token ratio stay float32 */
    const float val_loss = (float)r->total / (float)(r->num_tokenized - 1);
    const double ratio = (double)(r->num_tokenized - 1) / (double)(r->num_original - 1);
    const float adj = (float)((double)val_loss * ratio);
    zt_py_float(c, sizeof c, ratio, 0);
    snprintf(s + k, sizeof s - (size_t)k, "avg loss: %.4E | ppl: %.4E | adjusted ppl: %.4E | token ratio: %s |",
             (double)val_loss, exp(val_loss < 20 ? (double)val_loss : 20.0), exp(adj < 20 ? (double)adj : 20.0), c);
  } else {
    snprintf(a, sizeof a, "%.4E", (double)(float)r->total);
    snprintf(b, sizeof b, "%.4E", (double)r->num_examples);
    snprintf(c, sizeof c, "%.4E", (double)((float)r->total / (float)r->num_examples));
    snprintf(s + k, sizeof s - (size_t)k, "number correct: %s | total examples: %s | avg accuracy: %s", a, b, c);
  }
  const size_t len = strlen(s) + 1;
  char dashes[600];
  const size_t nd = len < sizeof dashes - 1 ? len : sizeof dashes - 1;
  memset(dashes, '-', nd);
  dashes[nd] = 0;
  snprintf(out, n, "%s\n%s\n%s\n", dashes, s, dashes);
}

/* The task's examples: LM windows over the tokenized file, or LAMBADA examples. */
typedef struct {
  int lambada, harness;
  zt_lambada set;     /* LAMBADA's examples, or the harness's (context, continuation) requests */
  zt_mc_task *mc;     /* the harness tasks */
  int n_mc;
  char *names;        /* the --tasks copy their names point into */
  zt_ids ids;
  zt_lm_windows win;
  int64_t n_examples, num_original, truncated, dropped;
  int64_t long_continuations; /* --tasks requests whose continuation alone exceeds --seq-length tokens */
  zt_gen_requests gen; /* the generation tasks' requests, one per document, in task order */
  int64_t gen_truncated, gen_dropped;
} task_data;

/* the tasks of the tag or group s[0..len) that read a file each into members (zt_mc_own_file_tasks); 0 when it names
 * none; *is_tag whether it is a tag */
static int tag_tasks(const char *s, size_t len, const char *members[ZT_MC_GROUP_MAX], int *is_tag) {
  char tag[64];
  if (len >= sizeof tag) return 0;
  memcpy(tag, s, len);
  tag[len] = 0;
  if (is_tag) *is_tag = zt_mc_tag_tasks(tag, members) > 0;
  return zt_mc_own_file_tasks(tag, members);
}

/* The path of NAME's entry in a --task-data / --fewshot-data list (NAME=PATH), or NULL; every entry must name one
 * of the --tasks or a task of a tag or group there whose tasks read a file each, and none such a tag or group
 * itself. */
static const char *entry_for(const char *const *list, int n, const char *name, const char *flag, const char *tasks) {
  const char *found = NULL;
  for (int i = 0; i < n; i++) {
    const char *eq = strchr(list[i], '=');
    zt_check(eq && eq != list[i] && eq[1], "bad argument value", "%s %s: expected TASK=FILE.jsonl", flag, list[i]);
    const size_t k = (size_t)(eq - list[i]);
    int listed = 0;
    for (const char *t = tasks; *t;) { /* an entry of --tasks, or a task of a tag there (each has its own file) */
      const size_t tl = strcspn(t, ",");
      listed |= tl == k && !strncmp(t, list[i], k);
      const char *members[ZT_MC_GROUP_MAX];
      const int nm = tag_tasks(t, tl, members, NULL);
      for (int m = 0; m < nm; m++) listed |= strlen(members[m]) == k && !strncmp(members[m], list[i], k);
      t += tl + (t[tl] == ',');
    }
    zt_check(listed, "bad argument value", "%s %s: %.*s is not one of --tasks %s (nor a task of a tag or group "
             "there)", flag, list[i], (int)k, list[i], tasks);
    const char *members[ZT_MC_GROUP_MAX];
    int is_tag = 0;
    const int nm = tag_tasks(list[i], k, members, &is_tag);
    zt_check(nm == 0, "bad argument value", "%s %s: %.*s is the harness's %s for %d tasks (%s, ...), each read from "
             "its own file: give %s %s=FILE.jsonl and the others'", flag, list[i], (int)k, list[i],
             is_tag ? "tag" : "group", nm, members[0], flag, members[0]);
    if (strlen(name) == k && !strncmp(list[i], name, k)) {
      zt_check(!found, "bad argument value", "%s: two files for %s", flag, name);
      found = eq + 1;
    }
  }
  return found;
}

/* Appends one request (context tokens, continuation tokens) to the set. */
static void push_request(zt_lambada *set, const zt_ids *ctx, const zt_ids *cont, size_t *cap) {
  if ((size_t)set->n == *cap) {
    *cap = *cap ? 2 * *cap : 256;
    set->tokens = realloc(set->tokens, *cap * sizeof *set->tokens);
    set->n_ctx = realloc(set->n_ctx, *cap * sizeof *set->n_ctx);
    set->n_label = realloc(set->n_label, *cap * sizeof *set->n_label);
    zt_check(set->tokens && set->n_ctx && set->n_label, "out of memory", "requests: %zu", *cap);
  }
  int32_t *t = zt_malloc((ctx->n + cont->n) * sizeof(int32_t) + 1, "request");
  if (ctx->n) memcpy(t, ctx->ids, ctx->n * sizeof(int32_t));
  if (cont->n) memcpy(t + ctx->n, cont->ids, cont->n * sizeof(int32_t));
  set->tokens[set->n] = t;
  set->n_ctx[set->n] = (int)ctx->n;
  set->n_label[set->n] = (int)cont->n;
  set->n++;
}

/* Appends one generation request (its context tokens) to r. */
static void push_gen(zt_gen_requests *r, const int32_t *ids, int n, size_t *cap) {
  if ((size_t)r->n == *cap) {
    *cap = *cap ? 2 * *cap : 256;
    r->ctx = realloc(r->ctx, *cap * sizeof *r->ctx);
    r->n_ctx = realloc(r->n_ctx, *cap * sizeof *r->n_ctx);
    zt_check(r->ctx && r->n_ctx, "out of memory", "generation requests: %zu", *cap);
  }
  r->ctx[r->n] = zt_malloc((size_t)n * sizeof(int32_t) + 1, "request");
  memcpy(r->ctx[r->n], ids, (size_t)n * sizeof(int32_t));
  r->n_ctx[r->n++] = n;
}

/* --tasks: every task file read (and refused, naming the file and line) before the first request is built; then
 * each document's context (with --num-fewshot examples) and one request per choice. */
static void load_harness(task_data *d, const task_flags *tf, const zt_args *a, const zt_tokenizer *tok) {
  d->harness = 1;
  int n = 1;
  for (const char *c = tf->tasks; *c; c++) n += *c == ',';
  n *= ZT_MC_GROUP_MAX; /* a group or a tag names up to 67 tasks */
  d->mc = zt_malloc((size_t)n * sizeof(zt_mc_task), "tasks");
  zt_mc_task *pools = zt_malloc((size_t)n * sizeof(zt_mc_task), "tasks");
  memset(pools, 0, (size_t)n * sizeof(zt_mc_task));
  char *names = d->names = zt_malloc(strlen(tf->tasks) + 1, "tasks");
  memcpy(names, tf->tasks, strlen(tf->tasks) + 1);
  char *save = NULL;
  for (char *t = strtok_r(names, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    const char *why, *members[ZT_MC_GROUP_MAX];
    int nm = zt_mc_group_tasks(t, members); /* a group (mmlu, mmlu_stem, blimp, ...): its tasks */
    const int group = nm > 0;
    if (!group) nm = zt_mc_tag_tasks(t, members); /* a tag (arithmetic, glue, ...): its tasks, each on its own */
    if (!nm && !zt_mc_supported(t, &why)) {
      zt_check(why == NULL, "unsupported argument", "--tasks %s: %s is not supported yet: it %s", tf->tasks, t, why);
      zt_fatal("unsupported argument", "--tasks %s: unknown task %s (supported: %s)", tf->tasks, t,
               zt_mc_task_names());
    }
    if (!nm) members[nm++] = t;
    for (int i = 0; i < nm; i++) {
      for (int k = 0; k < d->n_mc; k++) {
        if (strcmp(d->mc[k].name, members[i]) != 0) continue;
        char where[160] = ""; /* the groups that named it */
        const char *g0 = d->mc[k].group, *g1 = group ? t : NULL;
        if (g0 || g1)
          snprintf(where, sizeof where, " (in %s%s%s)", g0 ? g0 : g1, g0 && g1 ? " and in " : "", g0 && g1 ? g1 : "");
        zt_fatal("bad argument value", "--tasks %s: %s is listed twice%s", tf->tasks, members[i], where);
      }
      memset(&d->mc[d->n_mc], 0, sizeof d->mc[d->n_mc]);
      d->mc[d->n_mc].name = members[i];
      d->mc[d->n_mc++].group = group ? t : NULL;
    }
  }
  zt_check(d->n_mc > 0, "bad argument value", "--tasks '%s': no task named", tf->tasks);
  for (int k = 0; k < d->n_mc; k++) {
    const char *name = d->mc[k].name, *group = d->mc[k].group;
    /* the tasks of a group that shares one file (MMLU's, BLiMP's) read it (and its pool) together: k starts the run
     * of them; XCOPA's and its siblings' read a file each */
    const int shared = group && zt_mc_group_one_file(group);
    const char *key = shared ? group : name;
    int run = 1;
    while (shared && k + run < d->n_mc && d->mc[k + run].group == group) run++;
    const int first = !shared || k == 0 || d->mc[k - 1].group != group;
    const char *path = entry_for(tf->data, tf->n_data, key, "--task-data", tf->tasks);
    zt_check(path != NULL, "missing argument", "--task-data %s=FILE.jsonl is required (the %s documents; "
             "docs/evaluate.md lists the fields)", key, key);
    int64_t aside = 0, fewshot_aside = 0;
    if (first) zt_mc_load_split(&d->mc[k], run, key, path, "--task-data", &aside);
    const char *fpath = entry_for(tf->fewshot, tf->n_fewshot, key, "--fewshot-data", tf->tasks);
    /* evaluator.py: --num_fewshot sets each task's num_fewshot except where its YAML sets 0 ("Manual configuration
     * will be ignored"); without it a YAML's num_fewshot stands, and none is 0 */
    const int yaml = zt_mc_yaml_fewshot(name), pinned = yaml == 0;
    const int nshot = tf->nshot_given && !pinned ? tf->nshot : yaml > 0 ? yaml : 0;
    if (pinned && tf->nshot_given && tf->nshot > 0)
      zt_log("> %s: num_fewshot is 0 in its YAML, which the harness keeps over --num-fewshot %d: it runs 0-shot\n",
             name, tf->nshot);
    d->mc[k].nshot = nshot;
    const int fixed = !group && zt_mc_fixed_fewshot(&pools[k], name); /* gsm8k_cot: the YAML's samples, in order */
    zt_check(!fixed || !fpath, "inconsistent arguments", "--fewshot-data %s=%s: %s's examples are the %lld of its YAML "
             "(fewshot_config.samples, sampler first_n); it reads no few-shot file", name, fpath, name,
             (long long)pools[k].n);
    zt_check(!fixed || nshot <= pools[k].n, "bad argument value", "--num-fewshot %d: %s's examples are the %lld of its "
             "YAML, taken in order (the harness's first_n sampler stops: \"number of fewshot samples requested exceeds "
             "the %lld that are available\")", nshot, name, (long long)pools[k].n, (long long)pools[k].n);
    zt_check(!nshot || !zt_mc_is_rolling(name), "inconsistent arguments", "--num-fewshot %d: %s scores whole "
             "documents (loglikelihood_rolling) and takes no examples (the harness's rolling requests never use a "
             "context)", nshot, name);
    zt_check(!nshot || strcmp(name, "webqs") != 0, "unsupported argument", "--num-fewshot %d: webqs's few-shot "
             "examples are not well defined in the harness (its target is the list of every answer's index: 0.4.9's "
             "sampler writes the index \"0\" as the answer, later versions fail on it); run webqs zero-shot",
             nshot);
    zt_check(!fpath || nshot > 0, "inconsistent arguments", "--fewshot-data %s=%s: %s runs 0-shot (%s)", key, fpath,
             key, pinned ? "its YAML sets num_fewshot: 0, which the harness keeps over --num-fewshot"
                          : "its YAML's num_fewshot; give --num-fewshot N > 0 for examples");
    if (nshot > 0 && !fixed) {
      if (tf->nshot_given)
        zt_check(fpath != NULL, "missing argument", "--num-fewshot %d: --fewshot-data %s=FILE.jsonl is required (the "
                 "harness draws %s's examples from its %s)", nshot, key, key, zt_mc_fewshot_split(name));
      else
        zt_check(fpath != NULL, "missing argument", "%s runs %d-shot by default (its YAML's num_fewshot, as the "
                 "harness does without --num-fewshot): --fewshot-data %s=FILE.jsonl is required (the harness draws the "
                 "examples from its %s), or give --num-fewshot 0", name, nshot, name, zt_mc_fewshot_split(name));
      if (first) {
        for (int q = k; q < k + run; q++) pools[q].name = d->mc[q].name;
        zt_mc_load_split(&pools[k], run, key, fpath, "--fewshot-data", &fewshot_aside);
      }
    }
    if (nshot > 0 && !fixed && zt_mc_first_n(name)) /* an MMLU subject: its dev documents in order */
      zt_check(nshot <= pools[k].n, "bad argument value", "--num-fewshot %d: --fewshot-data %s=%s holds %lld %s "
               "documents, taken in order (the harness's first_n sampler stops: \"number of fewshot samples requested "
               "exceeds the %lld that are available\")", nshot, key, fpath, (long long)pools[k].n,
               name + (strncmp(name, "mmlu_continuation_", 18) ? 5 : 18),
               (long long)pools[k].n);
    if (!first) continue;
    const int blimp = !strncmp(name, "blimp_", 6); /* its documents are routed by "UID", MMLU's by "subject" */
    if (shared) {
      int64_t docs = 0;
      for (int q = k; q < k + run; q++) docs += d->mc[q].n;
      zt_log("> %s: %lld documents of its %d %s from %s", group, (long long)docs, run, blimp ? "phenomena" :
             "subjects", path);
      if (aside) zt_log(" (%lld of other %s set aside)", (long long)aside, blimp ? "phenomena" : "subjects");
      if (fpath) zt_log(", few-shot pool %s (each subject's first %d%s)", fpath, nshot,
                        fewshot_aside ? "; other subjects' set aside" : "");
      zt_log("\n");
    } else {
      zt_log("> %s: %lld documents from %s%s%s%s%s", name, (long long)d->mc[k].n, path, aside ? " (its " : "",
             aside ? (blimp ? "phenomenon's; the others set aside)" : "subject's; the others set aside)") : "",
             fpath ? ", few-shot pool " : fixed && nshot ? ", the examples of its YAML" : "", fpath ? fpath : "");
      if (d->mc[k].filtered)
        zt_log(" (%lld more with an empty sentence dropped, as the harness's process_docs drops them)",
               (long long)d->mc[k].filtered);
      zt_log("\n");
    }
  }
  zt_tok_state *st = zt_tok_state_new(tok);
  size_t cap = 0, gcap = 0;
  for (int k = 0; k < d->n_mc; k++) {
    const int generate = zt_mc_is_generation(d->mc[k].name), keep = a->seq_length - tf->max_gen;
    zt_check(!generate || keep >= 1, "inconsistent arguments", "--max-gen-toks %d: %s generates up to %d tokens "
             "after its context within --seq-length %d, which leaves no room for the context (the harness asserts "
             "max_length > max_gen_toks); give a smaller --max-gen-toks", tf->max_gen, d->mc[k].name, tf->max_gen,
             a->seq_length);
    zt_pyrandom rnd;
    zt_pyrandom_seed(&rnd, (uint32_t)tf->fewshot_seed); /* one Random(seed) per task, drawn doc by doc */
    for (int64_t i = 0; i < d->mc[k].n; i++) {
      if (zt_mc_is_rolling(d->mc[k].name)) { /* loglikelihood_rolling: disjoint windows of --seq-length targets */
        zt_mc_doc *doc = &d->mc[k].docs[i];
        zt_ids all = {0}, ci = {0}, co = {0};
        zt_tokenizer_encode(tok, st, doc->text, strlen(doc->text), &all);
        const int64_t n = (int64_t)all.n, L = a->seq_length;
        int64_t predicted = 0;
        doc->n_req = 0;
        while (predicted < n) { /* get_rolling_token_windows(context_len=1) + make_disjoint_window */
          const int64_t wp = predicted == 0 ? (n < L ? n : L) : (n - predicted < L ? n - predicted : L);
          const int64_t end = predicted + wp;
          ci.n = co.n = 0;
          if (predicted == 0) zt_ids_push(&ci, zt_tokenizer_eod(tok));
          else
            for (int64_t q = end - L - 1; q < end - wp; q++) zt_ids_push(&ci, all.ids[q]);
          for (int64_t q = end - wp; q < end; q++) zt_ids_push(&co, all.ids[q]);
          push_request(&d->set, &ci, &co, &cap);
          doc->n_req++;
          predicted = end;
        }
        zt_ids_free(&all);
        zt_ids_free(&ci);
        zt_ids_free(&co);
        continue;
      }
      char *ctx = zt_mc_context(&d->mc[k], i, &pools[k], d->mc[k].nshot, &rnd);
      if (generate) { /* generate_until: the context's last --seq-length - max_gen tokens (tok_batch_encode's
                       * left_truncate_len) */
        zt_ids ci = {0};
        zt_tokenizer_encode(tok, st, ctx, strlen(ctx), &ci);
        zt_check(ci.n > 0, "bad task file", "%s document %lld: the context encodes to no tokens", d->mc[k].name,
                 (long long)i + 1);
        const size_t off = ci.n > (size_t)keep ? ci.n - (size_t)keep : 0;
        if (off) {
          d->gen_truncated++;
          d->gen_dropped += (int64_t)off;
        }
        push_gen(&d->gen, ci.ids + off, (int)(ci.n - off), &gcap);
        zt_ids_free(&ci);
        free(ctx);
        d->mc[k].docs[i].n_req = 1;
        continue;
      }
      d->mc[k].docs[i].n_req = d->mc[k].docs[i].n_choices;
      for (int c = 0; c < d->mc[k].docs[i].n_choices; c++) {
        const zt_mc_doc *doc = &d->mc[k].docs[i];
        /* (context, " " + choice), or for a multiple-input task (context + choice, " " + target); a loglikelihood
         * task's (context, target) */
        const char *choice = doc->choices[c], *after = doc->target ? doc->target : choice;
        /* the task's target_delimiter (" ", PAWS-X's ""); a loglikelihood request's target is sent as it is */
        const char *delim = zt_mc_is_loglikelihood(d->mc[k].name) ? "" : zt_mc_target_delimiter(d->mc[k].name);
        const size_t nd = strlen(delim);
        char *cont = zt_malloc(nd + strlen(after) + 1, "request"), *full = NULL;
        memcpy(cont, delim, nd);
        memcpy(cont + nd, after, strlen(after) + 1);
        if (doc->target) {
          full = zt_malloc(strlen(ctx) + strlen(choice) + 1, "request");
          memcpy(full, ctx, strlen(ctx));
          memcpy(full + strlen(ctx), choice, strlen(choice) + 1);
        }
        zt_ids ci = {0}, co = {0};
        zt_mc_encode_pair(tok, st, full ? full : ctx, cont, &ci, &co);
        free(full);
        zt_check(co.n > 0, "bad task file", "%s document %lld, choice %d: the continuation encodes to no tokens",
                 d->mc[k].name, (long long)i + 1, c);
        push_request(&d->set, &ci, &co, &cap);
        const int total = (int)(ci.n + co.n);
        if (total > a->seq_length + 1) {
          d->truncated++;
          d->dropped += total - (a->seq_length + 1);
        }
        d->long_continuations += (int)co.n > a->seq_length;
        zt_ids_free(&ci);
        zt_ids_free(&co);
        free(cont);
      }
      free(ctx);
    }
    zt_mc_free(&pools[k]);
  }
  zt_tok_state_free(st);
  free(pools);
  d->n_examples = d->set.n;
  zt_log(" > %lld requests (one per choice)\n", (long long)d->n_examples);
  if (d->gen.n)
    zt_log(" > %lld generation requests (one per document, greedy, up to --max-gen-toks %d tokens)\n",
           (long long)d->gen.n, tf->max_gen);
  if (d->gen_truncated)
    zt_log(" > %lld of them have contexts longer than --seq-length %d - --max-gen-toks %d tokens: their first %lld "
           "tokens in all are dropped (left truncation, as the harness does)\n", (long long)d->gen_truncated,
           a->seq_length, tf->max_gen, (long long)d->gen_dropped);
  if (d->truncated)
    zt_log(" > %lld of them are longer than --seq-length %d + 1 tokens: their first %lld tokens in all are dropped "
           "(left truncation, as the harness does)\n", (long long)d->truncated, a->seq_length, (long long)d->dropped);
  if (d->long_continuations)
    zt_log(" > %lld of them have a continuation longer than --seq-length %d tokens: only its last %d tokens are "
           "scored (the harness cannot score such a request: its scored logits and the continuation's tokens differ "
           "in length)\n", (long long)d->long_continuations, a->seq_length, a->seq_length);
}

static void load_task(task_data *d, const task_flags *tf, const zt_args *a, const zt_tokenizer *tok) {
  memset(d, 0, sizeof *d);
  if (tf->tasks) {
    load_harness(d, tf, a, tok);
    return;
  }
  d->lambada = !strcmp(tf->task, "LAMBADA");
  if (d->lambada) {
    zt_log("> building lambada dataset from %s ...\n", tf->valid_data);
    zt_lambada_load(&d->set, tf->valid_data, tok, tf->strict);
    d->n_examples = d->set.n;
    for (int64_t i = 0; i < d->set.n; i++) {
      const int total = d->set.n_ctx[i] + d->set.n_label[i];
      if (total > a->seq_length + 1) {
        d->truncated++;
        d->dropped += total - (a->seq_length + 1);
      }
    }
    zt_log(" > found %lld samples.\n", (long long)d->n_examples);
    if (d->truncated)
      zt_log(" > %lld of them are longer than --seq-length %d + 1 tokens: their first %lld tokens in all are dropped "
             "(left truncation: the label and the context nearest to it are kept)\n", (long long)d->truncated,
             a->seq_length, (long long)d->dropped);
    return;
  }
  size_t n;
  char *text = zt_read_file(tf->valid_data, &n);
  zt_check(text != NULL, "bad task file", "--valid-data %s: cannot open: %s", tf->valid_data, strerror(errno));
  zt_check(memchr(text, 0, n) == NULL, "bad task file", "--valid-data %s: holds a NUL byte at offset %zu (not a text "
           "file?)", tf->valid_data, (size_t)((char *)memchr(text, 0, n) - text));
  d->num_original = zt_count_original_tokens(text, n);
  const char *kind = zt_detokenizer_for_path(tf->valid_data);
  if (!kind)
    zt_log(" > %s names none of ptb, wiki, lambada: the text is not detokenized (Megatron's get_detokenizer returns "
           "None there)\n", tf->valid_data);
  size_t dn;
  char *detok = zt_detokenize(kind, text, n, &dn);
  free(text);
  zt_tok_state *st = zt_tok_state_new(tok);
  zt_tokenizer_encode(tok, st, detok, dn, &d->ids);
  zt_tok_state_free(st);
  free(detok);
  zt_check(d->ids.n >= 2, "bad task file", "--valid-data %s: %zu token(s) after tokenization; perplexity needs at "
           "least 2 (one target)", tf->valid_data, d->ids.n);
  zt_check(d->num_original >= 2, "bad task file", "--valid-data %s: %lld original (space-separated) token(s); the "
           "adjusted perplexity divides by their number minus one", tf->valid_data, (long long)d->num_original);
  zt_lm_windows_init(&d->win, d->ids.ids, (int64_t)d->ids.n, a->seq_length, tf->overlap);
  d->n_examples = d->win.count;
  zt_log(" > number of original tokens: %lld, number of detokenized tokens: %zu\n", (long long)d->num_original,
         d->ids.n);
}

static void free_task(task_data *d) {
  if (d->lambada || d->harness) zt_lambada_free(&d->set);
  if (d->harness) {
    for (int64_t r = 0; r < d->gen.n; r++) free(d->gen.ctx[r]);
    free(d->gen.ctx), free(d->gen.n_ctx);
    for (int k = 0; k < d->n_mc; k++) zt_mc_free(&d->mc[k]);
    free(d->mc);
    free(d->names);
  }
  zt_ids_free(&d->ids);
}

/* Scores every token of the last forward over the checkpoint's vocabulary rows [0, V_valid) (its padded vocabulary:
 * what Megatron's softmax and argmax run over in the layout that saved it; rows this layout adds as zeros are left
 * out, so every layout scores the same): the cross-entropy against labels (the model's own when this layout adds
 * no rows, else computed here over the checkpoint's rows, in double) and the argmax (first index among
 * equal maxima, as torch.argmax). Each tensor-parallel rank reduces its vocabulary slice, then the group combines. */
typedef struct {
  double *mx, *sums;  /* [NF] max; [2 NF] sum of exp, target logit */
  float *pairs, *all; /* [2 NF] this rank's (max, index); [tp 2 NF] gathered */
} score_buf;

static int scores_own(int model_rows, int V_valid) { return model_rows != V_valid; }

/* logits [NF, lm->V] and losses [NF]: host memory (on a GPU, the rows score_rows_to_host copied). Tokens outside the
 * loss mask are not scored (loss 0, argmax -1): no task reads them. */
static void score_tokens(const zt_lm *lm, const float *logits, const float *losses, const float *mask,
                         const zt_eval_placement *p, int tp, int NF, int V_valid, int model_rows,
                         const int32_t *labels, int want_argmax, score_buf *sb, double *loss, int32_t *argmax) {
  const int own = scores_own(model_rows, V_valid); /* rows past the checkpoint's: the cross-entropy is computed here */
  int Vl = V_valid - lm->v0;
  if (Vl > lm->V) Vl = lm->V;
  if (Vl < 0) Vl = 0;
  if (own || want_argmax)
    for (int n = 0; n < NF; n++) {
      if (mask[n] == 0.0f) {
        sb->mx[n] = 0.0;
        sb->pairs[2 * n] = -INFINITY;
        sb->pairs[2 * n + 1] = -1.0f;
        continue;
      }
      const float *row = logits + (size_t)n * lm->V;
      int best = 0;
      for (int v = 1; v < Vl; v++)
        if (row[v] > row[best]) best = v;
      sb->mx[n] = Vl ? row[best] : -INFINITY;
      sb->pairs[2 * n] = Vl ? row[best] : -INFINITY;
      sb->pairs[2 * n + 1] = (float)(lm->v0 + best);
    }
  if (!own) { /* the model's own (vocab-parallel) cross-entropy runs over exactly the checkpoint's rows */
    for (int n = 0; n < NF; n++) loss[n] = mask[n] != 0.0f ? losses[n] : 0.0;
  } else {
    if (tp > 1) zt_allreduce_max_f64(p->tp, sb->mx, (size_t)NF);
    for (int n = 0; n < NF; n++) {
      if (mask[n] == 0.0f) {
        sb->sums[n] = 1.0;
        sb->sums[NF + n] = 0.0;
        continue;
      }
      const float *row = logits + (size_t)n * lm->V;
      double se = 0.0;
      for (int v = 0; v < Vl; v++) se += exp((double)row[v] - sb->mx[n]);
      const int t = labels[n] - lm->v0;
      sb->sums[n] = se;
      sb->sums[NF + n] = t >= 0 && t < Vl ? (double)row[t] : 0.0;
    }
    if (tp > 1) zt_allreduce_sum_f64(p->tp, sb->sums, 2 * (size_t)NF);
    for (int n = 0; n < NF; n++) loss[n] = mask[n] != 0.0f ? log(sb->sums[n]) + sb->mx[n] - sb->sums[NF + n] : 0.0;
  }
  if (!want_argmax) return;
  if (tp > 1) zt_allgather_f32(p->tp, sb->pairs, 2 * (size_t)NF, sb->all);
  else memcpy(sb->all, sb->pairs, 2 * (size_t)NF * sizeof(float));
  for (int n = 0; n < NF; n++) {
    float bv = sb->all[2 * n];
    int bi = (int)sb->all[2 * n + 1];
    for (int r = 1; r < tp; r++) {
      const float *q = sb->all + (size_t)r * 2 * NF + 2 * n;
      if (q[0] > bv) {
        bv = q[0];
        bi = (int)q[1];
      }
    }
    argmax[n] = bi;
  }
}

/* On a device backend: the logits rows score_tokens reads (the tokens inside the loss mask, in runs of consecutive
 * rows) copied into host[NF, lm->V]; the losses the forward already copied (lm->h_losses). Returns the host logits
 * and sets *losses; on the CPU both are the model's own buffers. */
static const float *score_rows_to_host(const zt_model *m, const zt_lm *lm, const float *mask, int NF, int need_logits,
                                       float *host, const float **losses) {
  if (m->be->host_visible) {
    *losses = lm->losses;
    return lm->logits;
  }
  *losses = lm->h_losses;
  if (!need_logits) return host;
  const size_t row = (size_t)lm->V * sizeof(float);
  for (int n = 0; n < NF;) {
    if (mask[n] == 0.0f) {
      n++;
      continue;
    }
    int e = n + 1;
    while (e < NF && mask[e] != 0.0f) e++;
    m->be->to_host((char *)host + (size_t)n * row, (const char *)lm->logits + (size_t)n * row, (size_t)(e - n) * row);
    n = e;
  }
  return host;
}

static void task_flags_free(task_flags *tf) {
  free(tf->task_list);
  for (int i = 0; i < tf->n_renamed; i++) free(tf->renamed[i]);
  free(tf->renamed);
  free(tf->data);
  free(tf->fewshot);
}

/* --adaptive_seq_len: the requests in the harness's order (lm-evaluation-harness's Reorderer: the longest context
 * plus continuation first, equal lengths by their tokens ascending), so a micro batch's requests have like lengths. */
static const zt_lambada *sort_set;
static int longer_first(const void *x, const void *y) {
  const int64_t i = *(const int64_t *)x, j = *(const int64_t *)y;
  const int li = sort_set->n_ctx[i] + sort_set->n_label[i], lj = sort_set->n_ctx[j] + sort_set->n_label[j];
  if (li != lj) return li > lj ? -1 : 1;
  for (int k = 0; k < li; k++)
    if (sort_set->tokens[i][k] != sort_set->tokens[j][k])
      return sort_set->tokens[i][k] < sort_set->tokens[j][k] ? -1 : 1;
  return i < j ? -1 : i > j;
}
static int64_t *longest_first(const zt_lambada *set, int64_t n) {
  int64_t *order = zt_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t), "request order");
  for (int64_t i = 0; i < n; i++) order[i] = i;
  sort_set = set;
  qsort(order, (size_t)n, sizeof *order, longer_first);
  return order;
}
/* The input length of the micro batch of requests order[at .. at + B): the longest one's context and continuation
 * but the last token, at most T, rounded up to a multiple of mult. */
static int batch_length(const zt_lambada *set, const int64_t *order, int64_t at, int64_t n, int B, int T, int mult) {
  int L = 1;
  for (int64_t r = at; r < at + B && r < n; r++) {
    const int len = set->n_ctx[order[r]] + set->n_label[order[r]] - 1;
    if (len > L) L = len;
  }
  L = (L + mult - 1) / mult * mult;
  return L < T ? L : T;
}

/* The harness's results: per task acc (and acc_norm) with their standard errors, the markdown table on stdout and
 * the JSON on stdout or in --output-path. */
static void report_harness(const task_data *d, const task_flags *tf, const double *req, const double *gen) {
  double *metrics = zt_malloc((size_t)d->n_mc * 4 * sizeof(double), "metrics");
  const int64_t most = d->n_examples > d->gen.n ? d->n_examples : d->gen.n;
  double *lls = zt_malloc((size_t)most * sizeof(double) + 8, "metrics");
  double *greedy = zt_malloc(2 * (size_t)most * sizeof(double) + 8, "metrics");
  int64_t at = 0, gat = 0;
  for (int k = 0; k < d->n_mc; k++) {
    if (zt_mc_is_generation(d->mc[k].name)) { /* gen: each document's exact_match per filter, tokens generated */
      double ntok = 0.0;
      for (int64_t i = 0; i < d->mc[k].n; i++) {
        greedy[2 * i] = gen[3 * (gat + i)];
        greedy[2 * i + 1] = gen[3 * (gat + i) + 1];
        ntok += gen[3 * (gat + i) + 2];
      }
      zt_mc_metrics(&d->mc[k], lls, greedy, tf->bootstrap_iters, metrics + 4 * k);
      printf("> %s: %lld documents, %lld generations, %.0f tokens generated\n", d->mc[k].name,
             (long long)d->mc[k].n, (long long)d->mc[k].n, ntok);
      gat += d->mc[k].n;
      continue;
    }
    int64_t nreq = 0;
    for (int64_t i = 0; i < d->mc[k].n; i++) nreq += d->mc[k].docs[i].n_req;
    double sum = 0.0;
    for (int64_t q = 0; q < nreq; q++) {
      sum += lls[q] = req[2 * (at + q)];
      greedy[q] = req[2 * (at + q) + 1];
    }
    zt_mc_metrics(&d->mc[k], lls, greedy, tf->bootstrap_iters, metrics + 4 * k);
    printf("> %s: %lld documents, %lld requests, summed log-likelihood %.17g\n", d->mc[k].name,
           (long long)d->mc[k].n, (long long)nreq, sum);
    at += nreq;
  }
  char *table = zt_mc_results_table(d->mc, d->n_mc, metrics);
  char *json = zt_mc_results_json(d->mc, d->n_mc, metrics, tf->nshot_given ? tf->nshot : -1,
                                  tf->fewshot_seed);
  if (tf->output_path) {
    FILE *f = fopen(tf->output_path, "wx");
    zt_check(f != NULL, "results", "--output-path %s: cannot create: %s", tf->output_path, strerror(errno));
    const int ok = fputs(json, f) >= 0 && fputc('\n', f) != EOF;
    zt_check(fclose(f) == 0 && ok, "results", "--output-path %s: write failed: %s", tf->output_path, strerror(errno));
    printf("> results written to %s\n", tf->output_path);
  } else {
    printf("%s\n", json);
  }
  fputs(table, stdout);
  fflush(stdout);
  free(table);
  free(json);
  free(lls);
  free(greedy);
  free(metrics);
}

/* The generation tasks' requests on every rank (each replica runs its micro batches), task by task with its stop
 * strings and the end-of-document text (handle_stop_sequences adds the eos); returns [3 n]: each request's scores
 * (zt_mc_score_generation, one per filter) and the tokens it generated, summed over the world (one rank holds each). */
static double *run_generation(task_data *d, const task_flags *tf, zt_model *m, const zt_eval_placement *p, int dp,
                              const zt_tokenizer *tok, int V_valid) {
  double *out = zt_calloc((size_t)d->gen.n * 3 + 1, sizeof(double), "generations");
  const int32_t eod = zt_tokenizer_eod(tok);
  size_t eod_len;
  char *eod_text = zt_tokenizer_decode(tok, &eod, 1, &eod_len);
  int64_t at = 0;
  const double t0 = zt_now();
  for (int k = 0; k < d->n_mc; k++) {
    if (!zt_mc_is_generation(d->mc[k].name)) continue;
    const char *until[16];
    int nu = 0;
    for (const char *const *u = zt_mc_until(d->mc[k].name); *u && nu < 14; u++) until[nu++] = *u;
    until[nu++] = eod_text;
    until[nu] = NULL;
    zt_gen_requests r = {.n = d->mc[k].n, .ctx = d->gen.ctx + at, .n_ctx = d->gen.n_ctx + at};
    zt_harness_generate(m, p, dp, tok, V_valid, tf->max_gen, until, &r);
    for (int64_t i = 0; i < r.n; i++) {
      if (r.text[i]) {
        double sc[2];
        zt_mc_score_generation(&d->mc[k], i, r.text[i], r.text_len[i], sc);
        out[3 * (at + i)] = sc[0];
        out[3 * (at + i) + 1] = isnan(sc[1]) ? 0.0 : sc[1];
        out[3 * (at + i) + 2] = r.n_gen[i];
      }
      free(r.text[i]);
    }
    free(r.text), free(r.text_len), free(r.n_gen);
    at += r.n;
  }
  free(eod_text);
  zt_allreduce_sum_f64(zt_comm_world(), out, 3 * (size_t)d->gen.n);
  const double secs = zt_now() - t0;
  double ntok = 0.0;
  for (int64_t i = 0; i < d->gen.n; i++) ntok += out[3 * i + 2];
  if (zt_comm_rank() == 0 && secs > 0)
    zt_log("> generated %.0f tokens for %lld requests in %.3f s: %.1f tokens/s over %d model replica(s) (greedy, "
           "key/value cache)\n", ntok, (long long)d->gen.n, secs, ntok / secs, dp);
  return out;
}

int zt_zeroshot_main(int argc, char **argv) {
  const double t_start = zt_now();
  if (zt_program_start(&argc, &argv, usage)) return 0;
  task_flags tf = {0};
  int rn;
  char **rest;
  split_args(argc, argv, &tf, &rn, &rest);
  zt_args args;
  zt_eval_parse(&args, rn, rest);
  check_task_flags(&tf, &args);
  zt_tokenizer *tok = zt_engine_tokenizer(&args);
  zt_check(tok != NULL, "missing argument", "evaluate_zeroshot needs the tokenizer of the checkpoint "
           "(--tokenizer-type and its files)");
  /* evaluation loads the weights only; a missing checkpoint is an error, not a random model */
  args.no_load_optim = 1;
  args.no_load_rng = 1;
  args.finetune = 0;
  args.exit_on_missing_checkpoint = 1;
  zt_log("> host: %d OpenMP threads, OpenBLAS %s kernels\n", omp_get_max_threads(), zt_blas_core());

  /* the task's data before the model, so a bad file is refused before anything is allocated */
  task_data d;
  load_task(&d, &tf, &args, tok);
  zt_eval_placement p;
  int V_valid;
  const int generating = d.gen.n > 0;
  if (generating && args.sequence_parallel) {
    zt_log(" > --sequence-parallel is not used: the generation tasks decode with the key/value cache, which splits "
           "no sequence (the same scores)\n");
    args.sequence_parallel = 0;
  }
  zt_model *m = zt_eval_load_gpt(&args, args.sequence_parallel, !generating, &p, &V_valid);
  const int tp = args.tensor_model_parallel_size;
  const int dp = args.data_parallel_size;
  const int B = args.micro_batch_size, T = args.seq_length, NF = B * T;
  zt_gpt *g = m->impl;
  const zt_lm *lm = &g->lm;
  const int last = m->last, first = m->first;
  int32_t *text = zt_malloc((size_t)B * (T + 1) * sizeof(int32_t), "batch");
  int32_t *tokens = zt_malloc((size_t)NF * sizeof(int32_t), "batch"), *labels = zt_malloc((size_t)NF * 4, "batch");
  int32_t *pred = zt_malloc((size_t)NF * sizeof(int32_t), "batch");
  float *mask = zt_malloc((size_t)NF * sizeof(float), "batch");
  score_buf sb = {.mx = zt_malloc((size_t)NF * sizeof(double), "scores"),
                  .sums = zt_malloc((size_t)NF * 2 * sizeof(double), "scores"),
                  .pairs = zt_malloc((size_t)NF * 2 * sizeof(float), "scores"),
                  .all = zt_malloc((size_t)NF * 2 * (size_t)tp * sizeof(float), "scores")};
  double *loss = zt_malloc((size_t)NF * sizeof(double), "scores");
  const int want_argmax = d.lambada || d.harness;
  const int need_logits = want_argmax || scores_own(args.padded_vocab_size, V_valid);
  /* on a GPU: the scored tokens' logits rows, copied to the host after each forward (fp32: the model's storage) */
  float *h_logits = !m->be->host_visible && last && need_logits
                        ? zt_malloc((size_t)NF * lm->V * sizeof(float), "logits on the host") : NULL;
  const int32_t pad = zt_tokenizer_eod(tok);
  const int64_t nbatch = (d.n_examples + B - 1) / B;
  double total = 0.0, t0 = zt_now();
  /* --tasks: each request's log-likelihood and whether it is the greedy continuation (filled by the replica that
   * scores it, summed over the world after the loop) */
  double *req = d.harness ? zt_malloc((size_t)d.n_examples * 2 * sizeof(double) + 8, "requests") : NULL;
  if (req) memset(req, 0, (size_t)d.n_examples * 2 * sizeof(double));
  int64_t done = 0, tokens_done = 0;
  int64_t *order = tf.adaptive ? longest_first(&d.set, d.n_examples) : NULL;
  zt_progress_bar *bar =
      zt_rank() == 0 ? zt_progress_bar_start("evaluate_zeroshot", (double)((nbatch - p.c.dp + dp - 1) / dp), "batches")
                     : NULL;
  for (int64_t j = p.c.dp; j < nbatch; j += dp) {
    const int64_t it = j / dp;
    zt_progress_bar_update(bar, (double)it);
    if (args.log_interval > 0 && it % args.log_interval == 0) zt_log("> working on iteration: %lld\n", (long long)it);
    /* --adaptive_seq_len: this micro batch at its longest request's input length (a multiple of the tensor-parallel
     * size with --sequence-parallel), set on every stage before the first receives */
    const int Tb = order ? batch_length(&d.set, order, j * B, d.n_examples, B, T, args.sequence_parallel ? tp : 1) : T;
    const int NFb = B * Tb;
    if (order) zt_lm_set_seq_length(&g->lm, Tb);
    int rows = 0;
    for (int r = 0; r < B; r++) {
      const int64_t at = j * B + r, ex = order && at < d.n_examples ? order[at] : at;
      int32_t *tr = text + (size_t)r * (Tb + 1);
      float *mr = mask + (size_t)r * Tb;
      if (at >= d.n_examples) { /* drop_last=False: the last micro batch is short; its missing rows score nothing */
        for (int k = 0; k <= Tb; k++) tr[k] = pad;
        for (int k = 0; k < Tb; k++) mr[k] = 0.0f;
        continue;
      }
      rows++;
      if (d.lambada || d.harness) zt_lambada_item(&d.set, ex, Tb, pad, tr, mr);
      else zt_lm_window(&d.win, ex, pad, tr, mr);
    }
    for (int r = 0; r < B; r++)
      for (int k = 0; k < Tb; k++) {
        tokens[r * Tb + k] = text[(size_t)r * (Tb + 1) + k];
        labels[r * Tb + k] = text[(size_t)r * (Tb + 1) + k + 1];
      }
    const zt_batch b = {.B = B, .T = Tb, .tokens = tokens, .labels = labels, .loss_mask = mask};
    const zt_pass pass = {.B = B, .T = Tb, .first_sample = (uint64_t)(j * B), .seed = args.seed, .training = 0};
    if (!first)
      for (int i = 0; i < m->n_stage; i++)
        zt_recv(p.pp, m->stage_in[i].dt, m->stage_in[i].buf, m->stage_in[i].n, p.c.pp - 1);
    zt_losses out;
    zt_model_forward(m, 0, &b, &pass, &out);
    if (!last)
      for (int i = 0; i < m->n_stage; i++)
        zt_send(p.pp, m->stage_out[i].dt, m->stage_out[i].buf, m->stage_out[i].n, p.c.pp + 1);
    done++;
    tokens_done += NFb;
    if (!last) continue;
    const float *losses_h, *logits_h = score_rows_to_host(m, lm, mask, NFb, need_logits, h_logits, &losses_h);
    score_tokens(lm, logits_h, losses_h, mask, &p, tp, NFb, V_valid, args.padded_vocab_size, labels, want_argmax, &sb,
                 loss, pred);
    if (d.harness) {
      for (int r = 0; r < rows; r++) {
        double ll = 0.0;
        int greedy = 1;
        for (int k = 0; k < Tb; k++)
          if (mask[r * Tb + k] != 0.0f) {
            ll -= loss[r * Tb + k];
            greedy &= pred[r * Tb + k] == labels[r * Tb + k];
          }
        const int64_t ex = order ? order[j * B + r] : j * B + r;
        req[2 * ex] = ll;
        req[2 * ex + 1] = greedy;
      }
    } else if (!d.lambada) {
      for (int n = 0; n < NFb; n++) total += (double)mask[n] * loss[n];
    } else {
      for (int r = 0; r < rows; r++) {
        int ok = 1;
        for (int k = 0; k < Tb; k++)
          if (mask[r * Tb + k] != 0.0f && pred[r * Tb + k] != labels[r * Tb + k]) ok = 0;
        total += ok;
      }
    }
  }
  zt_progress_bar_finish(bar, (double)((nbatch - p.c.dp + dp - 1) / dp));
  const double secs = zt_now() - t0;
  if (d.harness) {
    if (!(last && p.c.tp == 0)) memset(req, 0, (size_t)d.n_examples * 2 * sizeof(double));
    zt_allreduce_sum_f64(zt_comm_world(), req, (size_t)d.n_examples * 2);
  }
  /* one contribution per model replica: its last stage's first tensor-parallel rank */
  double v = last && p.c.tp == 0 ? total : 0.0;
  zt_allreduce_sum_f64(zt_comm_world(), &v, 1);
  if (zt_comm_rank() == 0 && secs > 0 && d.n_examples > 0)
    zt_log("> evaluated %lld micro batches of %d x %s%d tokens (%lld in all) in %.3f s: %.1f tokens/s per model "
           "replica (forward only)\n", (long long)done, B, order ? "up to " : "", T, (long long)tokens_done, secs,
           (double)tokens_done / secs);
  free(order);
  double *gen = NULL;
  if (generating) {
    zt_lm_set_seq_length(&g->lm, T);
    gen = run_generation(&d, &tf, m, &p, dp, tok, V_valid);
  }
  if (d.harness && zt_comm_rank() == zt_comm_size() - 1) {
    report_harness(&d, &tf, req, gen);
    if (tf.harness_cli) { /* evaluate.py's closing line */
      const double el = zt_now() - t_start;
      printf("evaluation of %s ends in %.2f sec, or %.2f min, or %.2f hr\n", tf.task_list_arg, el, el / 60.0,
             el / 3600.0);
      fflush(stdout);
    }
  } else if (zt_comm_rank() == zt_comm_size() - 1) {
    zt_zeroshot_result res = {.lambada = d.lambada, .total = v, .num_examples = d.n_examples,
                              .num_tokenized = (int64_t)d.ids.n, .num_original = d.num_original};
    if (d.lambada)
      printf("> %.17g of %lld examples correct\n", v, (long long)d.n_examples);
    else
      printf("> summed loss %.17g over %lld tokenized and %lld original tokens\n", v, (long long)d.ids.n,
             (long long)d.num_original);
    char block[2048];
    zt_zeroshot_format(&res, tf.task, block, sizeof block);
    fputs(block, stdout);
    fflush(stdout);
  }
  zt_log("done :-)\n");
  free(text);
  free(tokens);
  free(labels);
  free(pred);
  free(mask);
  free(sb.mx);
  free(sb.sums);
  free(sb.pairs);
  free(sb.all);
  free(loss);
  free(h_logits);
  free(req);
  free(gen);
  task_flags_free(&tf);
  free_task(&d);
  zt_model_free(m);
  zt_tokenizer_free(tok);
  free(rest);
  zt_comm_finalize();
  return 0;
}
