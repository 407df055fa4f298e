/* lm-evaluation-harness-style tasks for evaluate_zeroshot --tasks (issue 19 item 2; docs/evaluate.md): multiple choice
 * (piqa, arc_easy, arc_challenge, openbookqa, hellaswag, boolq, winogrande, race; anli_r1-3, cb, copa, multirc,
 * record, rte, sglue_rte, wic, wsc, webqs; sciq, logiqa, mathqa, prost, pubmedqa, mc_taco; cola, mnli, mnli_mismatch,
 * mrpc, qnli, qqp, sst2, wnli; truthfulqa_mc1, truthfulqa_mc2; social_iqa, commonsense_qa; MMLU's 57 subjects and
 * its groups, as letters and as continuations; BLiMP's 67 phenomena and its group; swag, headqa_*, qa4mre_*,
 * storycloze_*, wsc273; the groups pawsx, xcopa, xnli, xstorycloze, xwinograd), loglikelihood (lambada_openai, lambada_standard,
 * their cloze prompts, lambada_openai_mt_*, arithmetic_*), loglikelihood_rolling (wikitext, c4, pile_10k, paloma_*)
 * and generate_until (triviaqa, gsm8k, gsm8k_cot, gsm8k_cot_zeroshot: the prompts and the scoring of the generated text): the task files (the
 * harness's Hugging Face field names, one JSON object per line), each task's prompt and choices as its lm_eval/tasks
 * YAML/utils.py builds them, the few-shot context drawn by Python's random.Random(seed).sample (the harness's
 * ContextSampler), the (context, continuation) encoding of HFLM._encode_pair, the acc / acc_norm metrics with
 * mean_stderr (f1 and mcc with bootstrap_stderr), and the results as the harness's JSON and markdown table. No model
 * here: evaluate/zeroshot.c scores the requests these build. */
#ifndef ZT_EVAL_HARNESS_TASKS_H
#define ZT_EVAL_HARNESS_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer/tokenizer.h"

/* One document: the prompt (doc_to_text), its choices (doc_to_choice) and the gold index (doc_to_target). A
 * multiple-input task (WinoGrande) has target != NULL: each choice is a context and target the one continuation. */
typedef struct {
  char *text;
  int n_choices;
  char **choices;
  int gold;
  char *target;
  int n_req;              /* its requests: n_choices, or a rolling task's windows (set when they are built) */
  int64_t words, bytes;   /* wikitext: re.split(r"\s+", page) and its UTF-8 bytes */
  double *scores;         /* record: per choice, the SQuAD token f1 and exact match of its entity against the
                           * answers, best over them (f1 at 2c, em at 2c + 1) */
  int *labels;            /* truthfulqa_mc2: per choice, 1 for a true answer */
} zt_mc_doc;

typedef struct {
  const char *name;   /* one of the supported tasks (zt_mc_supported) */
  const char *group;  /* the group --tasks named it in (mmlu, mmlu_stem, ...; zt_mc_group_tasks), or NULL: set by the
                       * caller, read by the results (the group rows) */
  int nshot;          /* its few-shot examples (set by the caller: --num-fewshot, or the task's default) */
  int64_t n;
  zt_mc_doc *docs;
  int64_t filtered;   /* documents the task's process_docs dropped (PAWS-X's with an empty sentence) */
  /* while zt_mc_load reads the file: its bytes and the current line's JSON; zt_mc_load releases them, and zt_mc_free
   * does when a fatal hook (the fuzzers') caught a refusal midway, as it frees the documents read so far */
  char *raw;
  void *json;
} zt_mc_task;

/* Whether the harness task `name` is supported here; for a known task that is not, *why names what it lands with. */
int zt_mc_supported(const char *name, const char **why);
/* The groups (a group adds its own entry to the results, its acc aggregated over its tasks):
 * - MMLU (lm-eval 0.4.9's mmlu/default): the task mmlu_<subject> of each of its 57 subjects, and its groups mmlu (the
 *   four below, its score over all 57 subjects), mmlu_humanities, mmlu_other, mmlu_social_sciences and mmlu_stem
 *   (their subjects'); acc weighted by the subjects' documents;
 * - mmlu_continuation (mmlu/continuation): the task mmlu_continuation_<subject> of each subject, its inline groups
 *   stem, other, social sciences and humanities (not named alone), weighted as MMLU's;
 * - BLiMP (blimp): the task blimp_<uid> of each of its 67 phenomena; acc the plain mean of theirs (weight_by_size
 *   False);
 * - pawsx, xcopa, xnli, xstorycloze, xwinograd: the task of each language (xcopa_et, ...), weighted as MMLU's.
 * A group's task names, in its YAML's order (the names' order but for pawsx's), into names; returns how many (0: not
 * a group). */
#define ZT_MC_GROUP_MAX 67
int zt_mc_group_tasks(const char *group, const char *names[ZT_MC_GROUP_MAX]);
/* Whether a group's tasks share one file (MMLU's, routed by "subject"; BLiMP's, by "UID"), 0 where each reads its
 * own (pawsx, xcopa, xnli, xstorycloze, xwinograd: one dataset config per language). */
int zt_mc_group_one_file(const char *group);
/* The harness's tags (anli, arithmetic, glue, headqa, lambada, lambada_cloze, lambada_multilingual, paloma, qa4mre,
 * storycloze): a tag's tasks into names; returns how many (0: not a tag). Each is then a task of its own, as if named
 * alone. */
int zt_mc_tag_tasks(const char *tag, const char *names[ZT_MC_GROUP_MAX]);
/* The task's target_delimiter, between an example's text and its answer and before each choice: " ", "" for
 * arithmetic_* and PAWS-X's paws_* (their YAMLs'). */
const char *zt_mc_target_delimiter(const char *name);
/* The tasks that `name` names and that each read their own --task-data / --fewshot-data file: a tag's, or a group's
 * whose tasks do not share one (zt_mc_group_one_file); 0 for another name. */
int zt_mc_own_file_tasks(const char *name, const char *names[ZT_MC_GROUP_MAX]);
/* The supported tasks' names, ", "-separated. */
const char *zt_mc_task_names(void);
/* The task's version (the harness's metadata.version; NaN where its YAML sets none: the harness reports "Yaml"). */
double zt_mc_version(const char *name);
/* A task's metrics (its YAML's metric_list), into keys: "acc" then "acc_norm" (piqa, arc_*, openbookqa, hellaswag,
 * sciq, logiqa, mathqa, prost) or "f1" (cb, mrpc, qqp, mc_taco), "f1" then "em" (record), "mcc" alone (cola),
 * "exact_match" alone (webqs, the generation tasks), "perplexity" then "acc" (the lambada tasks), "acc" alone (the
 * other multiple-choice tasks, arithmetic_*); returns how many (0 for the rolling task). */
int zt_mc_metric_names(const char *name, const char *keys[2]);
/* triviaqa, gsm8k, gsm8k_cot, gsm8k_cot_zeroshot: output_type generate_until (one greedy generation per document,
 * evaluate/harness_generate.c; metric exact_match after each of the task's filters). */
int zt_mc_is_generation(const char *name);
/* A generation task's stop strings (generation_kwargs until), NULL-ended; NULL for the other tasks. */
const char *const *zt_mc_until(const char *name);
/* The filters the task's metrics are reported under, in its filter_list's order, into names; returns how many:
 * triviaqa "remove_whitespace", the GSM8K tasks "strict-match" and "flexible-extract", the other tasks "none". */
int zt_mc_filters(const char *name, const char *names[2]);
/* The task's YAML num_fewshot: gsm8k 5, gsm8k_cot 8, gsm8k_cot_zeroshot and truthfulqa_mc1/mc2 0 (which the harness
 * keeps over --num_fewshot), -1 where the YAML sets none (0-shot without --num-fewshot). */
int zt_mc_yaml_fewshot(const char *name);
/* A task whose few-shot examples are fixed in its YAML (gsm8k_cot: fewshot_config.samples, taken in order by the
 * first_n sampler): fills pool with them and returns 1; otherwise leaves pool empty and returns 0 (the examples come
 * from a --fewshot-data file). */
int zt_mc_fixed_fewshot(zt_mc_task *pool, const char *name);
/* Whether the task's examples are its pool's first N, in order (the harness's first_n sampler): gsm8k_cot (its YAML's
 * samples) and the MMLU subjects (their dev documents). */
int zt_mc_first_n(const char *name);
/* Where the harness draws the task's examples from (Task.fewshot_docs: its training split, else its validation split,
 * else its test split), as words: "training split", "dev split" (MMLU), "validation split", ... */
const char *zt_mc_fewshot_split(const char *name);
/* A generation task's scores of document i, one per filter (zt_mc_filters): text[0..len) (the continuation cut at
 * the stop strings) through the filter and exact_match_hf_evaluate as NumPy computes it (np.char.lower's result cut
 * to the array's itemsize), 1 or 0. triviaqa: lstrip, take_first, then ignore_case and ignore_punctuation against
 * every alias, 1 if any matches. The GSM8K tasks: the regex filter (strict-match: the first group of
 * "#### (\-?[0-9\.\,]+)", the CoT tasks' of "The answer is (\-?[0-9\.\,]+)."; flexible-extract: the last match of
 * "(-?[$0-9.,]{2,})|(-?[0-9]+)"; "[invalid]" when none), then exact_match against the target with regexes_to_ignore
 * ",", "\$", "(?s).*#### ", "\.$" and ignore_case. */
void zt_mc_score_generation(const zt_mc_task *t, int64_t i, const char *text, size_t len, double scores[2]);
/* The lambada tasks and arithmetic_*: output_type loglikelihood (one request per document, (context, target) with no
 * delimiter; perplexity and acc, or acc alone). */
int zt_mc_is_loglikelihood(const char *name);
/* wikitext, c4, pile_10k, paloma_*: output_type loglikelihood_rolling (the text, wikitext's and c4's detokenized,
 * scored in disjoint windows of --seq-length tokens, the first after [eod]; word_perplexity, byte_perplexity,
 * bits_per_byte). */
int zt_mc_is_rolling(const char *name);

/* Reads path (jsonl, the task's fields; docs/evaluate.md) into t. Fatal, naming the file and the line, on an
 * unreadable or empty file, an empty or malformed line, a missing field or one of the wrong type, or a gold label
 * outside the choices. `flag` names where the path came from (--task-data or --fewshot-data). An MMLU subject task
 * keeps the documents of its "subject" (the file may hold all of MMLU's: cais/mmlu "all"), a BLiMP task those of its
 * "UID". */
void zt_mc_load(zt_mc_task *t, const char *name, const char *path, const char *flag);
/* One file for the n tasks ts[0..n) of one group's family (their names set; key, the --tasks entry the file is given
 * for, names it in messages): each document goes to the task of its "subject" (MMLU) or "UID" (BLiMP); those of the
 * family's other tasks are counted into *set_aside; a value outside the family, or a task left without documents, is
 * refused. n == 1 with a task of no family: zt_mc_load. Each task keeps its name and group; its other fields are
 * reset. */
void zt_mc_load_split(zt_mc_task *ts, int n, const char *key, const char *path, const char *flag,
                      int64_t *set_aside);
void zt_mc_free(zt_mc_task *t);

/* Python's random.Random(seed) (MT19937, init_by_array of the seed's 32-bit words) and its sample(range(n), k). */
typedef struct {
  uint32_t mt[624];
  int mti;
} zt_pyrandom;
void zt_pyrandom_seed(zt_pyrandom *r, uint32_t seed);
uint32_t zt_pyrandom_u32(zt_pyrandom *r);
/* random.sample(range(n), k) into out[k] (k <= n). */
void zt_pyrandom_sample(zt_pyrandom *r, int64_t n, int64_t k, int64_t *out);

/* The context of doc `i` of t with nshot examples (Task.fewshot_context with ContextSampler.get_context): the task's
 * description (MMLU: "The following are multiple choice questions (with answers) about {subject}.\n\n"), then the
 * examples: sample(pool, nshot + 1) with doc i left out (pool == t: the harness's fewshot split equal to the test
 * split) or sample(pool, nshot) (a separate --fewshot-data pool) or the pool's first nshot (the first_n sampler:
 * zt_mc_fixed_fewshot's, an MMLU subject's dev documents),
 * each "text target" joined by "\n\n", then "\n\n" and the doc's text (a multiple-input task: the examples only;
 * each request's context is that plus a choice). malloc'd. */
char *zt_mc_context(const zt_mc_task *t, int64_t i, const zt_mc_task *pool, int nshot, zt_pyrandom *rnd);

/* HFLM._encode_pair: trailing spaces of the context move to the continuation; the continuation's tokens are those
 * of encode(context + continuation) after the first len(encode(context)); an empty context is [eod]. Appends to
 * ctx and cont. */
void zt_mc_encode_pair(const zt_tokenizer *tok, zt_tok_state *st, const char *context, const char *continuation,
                       zt_ids *ctx, zt_ids *cont);

/* process_results + mean / mean_stderr over the docs: lls[k] are the requests' log-likelihoods in doc-major order (doc
 * 0's choices, doc 1's, ...), greedy[k] 1 where the continuation is the greedy one. out: the metrics of
 * zt_mc_metric_names, each with its stderr (acc, acc_stderr, acc_norm, acc_norm_stderr; cb: acc, acc_stderr, f1, NaN;
 * mrpc, qqp, mc_taco: acc, acc_stderr, sklearn's binary f1 of (gold, argmax), its bootstrap stderr; cola: sklearn's
 * matthews_corrcoef, its bootstrap stderr, NaN, NaN; truthfulqa_mc2: acc is each document's probability mass of the
 * choices labelled 1; webqs: exact_match, its stderr; record: f1, its stderr, em, its stderr; a generation task:
 * greedy[2 i + f] is document i's score under filter f, exact_match and its stderr per filter, NaN past the task's
 * filters); for a loglikelihood task (lambada_openai): perplexity = exp(-mean(ll)), its bootstrap stderr (the harness's
 * bootstrap_stderr with bootstrap_iters resamples, NaN when 0), acc, acc_stderr (arithmetic_*: acc, acc_stderr, NaN,
 * NaN); for a rolling task (wikitext, c4, pile_10k, paloma_*; lls in
 * each doc's n_req windows): word_perplexity, byte_perplexity, bits_per_byte, NaN. */
void zt_mc_metrics(const zt_mc_task *t, const double *lls, const double *greedy, int bootstrap_iters,
                   double out[4]);

/* The results of several tasks as the harness's JSON ({"results": {...}, "groups", "group_subtasks", "versions",
 * "n-shot", "higher_is_better", "n-samples", "config"}) and its markdown tables (the tasks', then the groups'), the
 * entries sorted by name at each level as prepare_print_tasks sorts them, a group's subtasks after it, their aliases
 * indented ("mmlu", " - humanities", "  - formal_logic"); a group's acc is its tasks' weighted by their documents
 * (aggregate_subtask_metrics; blimp's their plain mean) with pooled_sample_stderr. metrics[4 * k] belongs to tasks[k], as zt_mc_metrics writes
 * it: each metric and its stderr in slot sl (metrics[4 k + 2 sl], then the stderr) of filter sl / nk and key sl % nk
 * (nk: zt_mc_metric_names's count; wikitext its three); each task's
 * n-shot is its nshot; num_fewshot is the command line's (-1: not given, written null as the harness does). Both
 * malloc'd. */
char *zt_mc_results_json(const zt_mc_task *tasks, int n_tasks, const double *metrics, int num_fewshot, int seed);
char *zt_mc_results_table(const zt_mc_task *tasks, int n_tasks, const double *metrics);

#endif
