/* lm-evaluation-harness tasks (evaluate_zeroshot --tasks; docs/evaluate.md): the task files read
 * with the harness's field names, each task's doc_to_text / doc_to_choice / doc_to_target (lm_eval/tasks/piqa,
 * arc, openbookqa, hellaswag/utils.py, super_glue/boolq), Python's random.Random for the few-shot sampler, the
 * _encode_pair rule, acc / acc_norm with mean_stderr, and the harness's JSON and table. */
#include "evaluate/harness_tasks.h"
#include "evaluate/strbuf.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer/unicode.h"
#include "evaluate/zeroshot_data.h"
#include "runtime/base/error.h"

/* ---- the tasks ------------------------------------------------------------------------------------------------- */
/* Each supported task's YAML facts in one place (lm-eval 0.4.9's lm_eval/tasks): its output_type, metadata.version
 * (YAML: none, the harness then reports the class's "Yaml"), metric_list (acc then acc_norm or f1; f1 then em; mcc;
 * exact_match; the loglikelihood tasks' perplexity then acc, or acc alone; none for the rolling task, whose three are
 * fixed), whether its config has no test split (its fewshot split, null too, equals it: the sampler then draws N + 1
 * and drops the document itself), and its num_fewshot (-1: the YAML sets none). The prompts are build_doc's. */
enum { MC, LOGLIK, ROLLING, GEN };
typedef struct {
  const char *name;
  int type;
  double version;
  const char *metrics[2];
  int no_test, fewshot;
} task_spec;
#define YAML NAN
#define ACC {"acc", NULL}
#define ACC_NORM {"acc", "acc_norm"}
#define ACC_F1 {"acc", "f1"}
#define PPL_ACC {"perplexity", "acc"}
#define EM {"exact_match", NULL}
#define NONE {NULL, NULL}
#define ARITHMETIC(k) {"arithmetic_" k, LOGLIK, 2, ACC, 1, -1}
#define LAMBADA_MT(l) {"lambada_openai_mt_" l, LOGLIK, 1, PPL_ACC, 0, -1}
#define XCOPA(l) {"xcopa_" l, MC, 1, ACC, 0, -1}
#define XSTORYCLOZE(l) {"xstorycloze_" l, MC, 1, ACC, 1, -1}
#define XWINOGRAD(l) {"xwinograd_" l, MC, 1, ACC, 0, -1}
#define XNLI(l) {"xnli_" l, MC, 1, ACC, 1, -1}
#define PAWS(l) {"paws_" l, MC, 1, ACC, 0, -1}
static const task_spec TASKS[] = {
    {"piqa", MC, 1, ACC_NORM, 1, -1},          {"arc_easy", MC, 1, ACC_NORM, 0, -1},
    {"arc_challenge", MC, 1, ACC_NORM, 0, -1}, {"openbookqa", MC, 1, ACC_NORM, 0, -1},
    {"hellaswag", MC, 1, ACC_NORM, 1, -1},     {"boolq", MC, 2, ACC, 1, -1},
    {"winogrande", MC, 1, ACC, 1, -1},         {"race", MC, 2, ACC, 0, -1},
    {"lambada_openai", LOGLIK, 1, PPL_ACC, 0, -1}, {"lambada_standard", LOGLIK, 1, PPL_ACC, 0, -1},
    {"wikitext", ROLLING, 2, NONE, 0, -1},     {"anli_r1", MC, 1, ACC, 0, -1},
    {"anli_r2", MC, 1, ACC, 0, -1},            {"anli_r3", MC, 1, ACC, 0, -1},
    {"cb", MC, 1, ACC_F1, 1, -1},              {"copa", MC, 1, ACC, 1, -1},
    {"multirc", MC, 2, ACC, 1, -1},            {"record", MC, 2, {"f1", "em"}, 1, -1},
    {"rte", MC, 1, ACC, 1, -1},                {"sglue_rte", MC, 0, ACC, 1, -1},
    {"wic", MC, 1, ACC, 1, -1},                {"wsc", MC, 1, ACC, 1, -1},
    {"webqs", MC, 2, EM, 0, -1},               {"triviaqa", GEN, 3, EM, 1, -1},
    {"nq_open", GEN, 4, EM, 1, -1},
    {"gsm8k", GEN, 3, EM, 0, 5},               {"gsm8k_cot", GEN, 3, EM, 0, 8},
    {"gsm8k_cot_zeroshot", GEN, 3, EM, 0, 0},  {"sciq", MC, 1, ACC_NORM, 0, -1},
    {"logiqa", MC, 1, ACC_NORM, 0, -1},        {"mathqa", MC, 1, ACC_NORM, 0, -1},
    {"prost", MC, 1, ACC_NORM, 0, -1},         {"pubmedqa", MC, 1, ACC, 0, -1},
    {"mc_taco", MC, 1, ACC_F1, 0, -1},         {"cola", MC, 1, {"mcc", NULL}, 1, -1},
    {"mnli", MC, 1, ACC, 1, -1},               {"mnli_mismatch", MC, 1, ACC, 1, -1},
    {"mrpc", MC, 1, ACC_F1, 1, -1},            {"qnli", MC, 1, ACC, 1, -1},
    {"qqp", MC, 2, ACC_F1, 1, -1},             {"sst2", MC, 1, ACC, 1, -1},
    {"wnli", MC, 2, ACC, 1, -1},               {"truthfulqa_mc1", MC, 2, ACC, 1, 0},
    {"truthfulqa_mc2", MC, 3, ACC, 1, 0},      {"social_iqa", MC, 0, ACC, 1, -1},
    {"commonsense_qa", MC, YAML, ACC, 1, -1},  {"lambada_openai_cloze_yaml", LOGLIK, 1, PPL_ACC, 0, -1},
    {"lambada_standard_cloze_yaml", LOGLIK, 1, PPL_ACC, 0, -1}, {"c4", ROLLING, 0, NONE, 1, -1},
    {"pile_10k", ROLLING, 1, NONE, 0, -1},
    ARITHMETIC("1dc"), ARITHMETIC("2da"), ARITHMETIC("2dm"), ARITHMETIC("2ds"), ARITHMETIC("3da"),
    ARITHMETIC("3ds"), ARITHMETIC("4da"), ARITHMETIC("4ds"), ARITHMETIC("5da"), ARITHMETIC("5ds"),
    LAMBADA_MT("de"), LAMBADA_MT("en"), LAMBADA_MT("es"), LAMBADA_MT("fr"), LAMBADA_MT("it"),
    {"swag", MC, 1, ACC_NORM, 1, -1},          {"wsc273", MC, 1, ACC, 0, -1},
    {"headqa_en", MC, 1, ACC_NORM, 0, -1},     {"headqa_es", MC, 1, ACC_NORM, 0, -1},
    {"qa4mre_2011", MC, 1, ACC_NORM, 0, -1},   {"qa4mre_2012", MC, 1, ACC_NORM, 0, -1},
    {"qa4mre_2013", MC, 1, ACC_NORM, 0, -1},   {"storycloze_2016", MC, 1, ACC, 0, -1},
    {"storycloze_2018", MC, 1, ACC, 0, -1},
    XCOPA("et"), XCOPA("ht"), XCOPA("id"), XCOPA("it"), XCOPA("qu"), XCOPA("sw"), XCOPA("ta"), XCOPA("th"),
    XCOPA("tr"), XCOPA("vi"), XCOPA("zh"),
    XSTORYCLOZE("ar"), XSTORYCLOZE("en"), XSTORYCLOZE("es"), XSTORYCLOZE("eu"), XSTORYCLOZE("hi"),
    XSTORYCLOZE("id"), XSTORYCLOZE("my"), XSTORYCLOZE("ru"), XSTORYCLOZE("sw"), XSTORYCLOZE("te"),
    XSTORYCLOZE("zh"),
    XWINOGRAD("en"), XWINOGRAD("fr"), XWINOGRAD("jp"), XWINOGRAD("pt"), XWINOGRAD("ru"), XWINOGRAD("zh"),
    XNLI("ar"), XNLI("bg"), XNLI("de"), XNLI("el"), XNLI("en"), XNLI("es"), XNLI("fr"), XNLI("hi"), XNLI("ru"),
    XNLI("sw"), XNLI("th"), XNLI("tr"), XNLI("ur"), XNLI("vi"), XNLI("zh"),
    PAWS("de"), PAWS("en"), PAWS("es"), PAWS("fr"), PAWS("ja"), PAWS("ko"), PAWS("zh"),
};
/* every MMLU subject (mmlu/default/_default_template_yaml: test split, dev examples); every BLiMP phenomenon
 * (blimp/_template_yaml: its train split, which has no test split, and num_fewshot 0) */
static const task_spec MMLU_SPEC = {"mmlu_<subject>", MC, 1, ACC, 0, -1};
/* every MMLU subject's continuation task (mmlu/continuation/_continuation_template_yaml: no metric_list, so the
 * harness's default acc and acc_norm) */
static const task_spec MMLU_CONT_SPEC = {"mmlu_continuation_<subject>", MC, 1, ACC_NORM, 0, -1};
static const task_spec BLIMP_SPEC = {"blimp_<uid>", MC, 1, ACC, 1, 0};
static const task_spec PALOMA_SPEC = {"paloma_<subset>", ROLLING, 1, NONE, 0, -1}; /* paloma/_paloma_template */
#undef YAML
#undef ACC
#undef ACC_NORM
#undef ACC_F1
#undef PPL_ACC
#undef EM
#undef NONE
#undef ARITHMETIC
#undef LAMBADA_MT
#undef XCOPA
#undef XSTORYCLOZE
#undef XWINOGRAD
#undef XNLI
#undef PAWS

/* Paloma (lm-eval 0.4.9 paloma, allenai/paloma): each subset's task and its task_alias */
static const char *const PALOMA[][2] = {
    {"paloma_4chan_meta_sep", "4chan"},
    {"paloma_c4_100_domains", "C4 100 Domains"},
    {"paloma_c4_en", "C4"},
    {"paloma_dolma-v1_5", "Dolma V1.5"},
    {"paloma_dolma_100_programing_languages", "100 PLs"},
    {"paloma_dolma_100_subreddits", "100 Subreddits"},
    {"paloma_falcon-refinedweb", "Falcon"},
    {"paloma_gab", "Gab"},
    {"paloma_m2d2_s2orc_unsplit", "M2D2 S2ORC"},
    {"paloma_m2d2_wikipedia_unsplit", "M2D2 Wikipedia"},
    {"paloma_manosphere_meta_sep", "Manosphere"},
    {"paloma_mc4", "mC4"},
    {"paloma_ptb", "PTB"},
    {"paloma_redpajama", "RedPajama"},
    {"paloma_twitterAAE_HELM_fixed", "Twitter AAE"},
    {"paloma_wikitext_103", "Wikitext-103"},
};
enum { N_PALOMA = sizeof PALOMA / sizeof PALOMA[0] };
static int paloma_index(const char *name) {
  for (int i = 0; i < N_PALOMA; i++)
    if (!strcmp(name, PALOMA[i][0])) return i;
  return -1;
}

/* The harness's tags among the supported tasks (a tag names tasks; unlike a group it adds no entry of its own to the
 * results): each tag's tasks, in its YAMLs' order; and paloma, PALOMA's */
enum { TAG_MAX = 16 };
static const struct {
  const char *tag, *tasks[TAG_MAX];
} TAGS[] = {
    {"anli", {"anli_r1", "anli_r2", "anli_r3"}},
    {"arithmetic", {"arithmetic_1dc", "arithmetic_2da", "arithmetic_2dm", "arithmetic_2ds", "arithmetic_3da",
                    "arithmetic_3ds", "arithmetic_4da", "arithmetic_4ds", "arithmetic_5da", "arithmetic_5ds"}},
    {"glue", {"cola", "mnli", "mnli_mismatch", "mrpc", "qnli", "qqp", "rte", "sst2", "wnli"}},
    {"headqa", {"headqa_en", "headqa_es"}},
    {"lambada", {"lambada_openai", "lambada_standard"}},
    {"lambada_cloze", {"lambada_openai_cloze_yaml", "lambada_standard_cloze_yaml"}},
    {"lambada_multilingual", {"lambada_openai_mt_de", "lambada_openai_mt_en", "lambada_openai_mt_es",
                              "lambada_openai_mt_fr", "lambada_openai_mt_it"}},
    {"qa4mre", {"qa4mre_2011", "qa4mre_2012", "qa4mre_2013"}},
    {"storycloze", {"storycloze_2016", "storycloze_2018"}},
};

/* The groups whose tasks read a file each (one dataset config per language; lm-eval 0.4.9 xcopa/_xcopa.yaml,
 * xstorycloze/_xstorycloze.yaml, xwinograd/_xwinograd.yaml, xnli/_xnli.yaml, paws-x/_pawsx.yaml): their acc
 * aggregated into the group's own entry, weighted by the tasks' documents (weight_by_size); the group's
 * metadata.version; the tasks in the YAML's order (group_subtasks'; the results sort them by name). */
static const struct {
  const char *group;
  double version;
  const char *tasks[TAG_MAX];
} LANG_GROUPS[] = {
    {"pawsx", 0, {"paws_en", "paws_de", "paws_es", "paws_fr", "paws_ja", "paws_ko", "paws_zh"}},
    {"xcopa", 1, {"xcopa_et", "xcopa_ht", "xcopa_id", "xcopa_it", "xcopa_qu", "xcopa_sw", "xcopa_ta", "xcopa_th",
                  "xcopa_tr", "xcopa_vi", "xcopa_zh"}},
    {"xstorycloze", 1, {"xstorycloze_ar", "xstorycloze_en", "xstorycloze_es", "xstorycloze_eu", "xstorycloze_hi",
                        "xstorycloze_id", "xstorycloze_my", "xstorycloze_ru", "xstorycloze_sw", "xstorycloze_te",
                        "xstorycloze_zh"}},
    {"xwinograd", 1, {"xwinograd_en", "xwinograd_fr", "xwinograd_jp", "xwinograd_pt", "xwinograd_ru",
                      "xwinograd_zh"}},
    {"xnli", 1, {"xnli_ar", "xnli_bg", "xnli_de", "xnli_el", "xnli_en", "xnli_es", "xnli_fr", "xnli_hi", "xnli_ru",
                 "xnli_sw", "xnli_th", "xnli_tr", "xnli_ur", "xnli_vi", "xnli_zh"}},
};
static int lang_group(const char *name) {
  for (size_t i = 0; i < sizeof LANG_GROUPS / sizeof LANG_GROUPS[0]; i++)
    if (!strcmp(name, LANG_GROUPS[i].group)) return (int)i;
  return -1;
}
/* Each XNLI language's words (xnli/xnli_<lang>.yaml's doc_to_choice: premise + ", {right}? {word}, " + hypothesis,
 * the words for entailment, neutral, contradiction) */
static const struct {
  const char *task, *right, *word[3];
} XNLI_WORDS[] = {
    {"xnli_ar", "\xd8\xb5\xd8\xad\xd9\x8a\xd8\xad",
     {"\xd9\x86\xd8\xb9\xd9\x85", "\xd9\x84\xd8\xb0\xd8\xa7", "\xd8\xb1\xd9\x82\xd9\x85"}},
    {"xnli_bg", "\xd0\xbf\xd1\x80\xd0\xb0\xd0\xb2\xd0\xb8\xd0\xbb\xd0\xbd\xd0\xbe",
     {"\xd0\xb4\xd0\xb0", "\xd1\x82\xd0\xb0\xd0\xba\xd0\xb0", "\xd0\xbd\xd0\xb5"}},
    {"xnli_de", "richtig", {"Ja", "Auch", "Nein"}},
    {"xnli_el", "\xcf\x83\xcf\x89\xcf\x83\xcf\x84\xcf\x8c\xcf\x82",
     {"\xce\x9d\xce\xb1\xce\xaf", "\xce\x88\xcf\x84\xcf\x83\xce\xb9", "\xcf\x8c\xcf\x87\xce\xb9"}},
    {"xnli_en", "right", {"Yes", "Also", "No"}},
    {"xnli_es", "correcto", {"S\xc3\xad", "Asi que", "No"}},
    {"xnli_fr", "correct", {"Oui", "Aussi", "Non"}},
    {"xnli_hi", "\xe0\xa4\xb8\xe0\xa4\xb9\xe0\xa5\x80",
     {"\xe0\xa4\xb9\xe0\xa4\xbe\xe0\xa4\x81",
      "\xe0\xa4\x87\xe0\xa4\xb8\xe0\xa4\xb2\xe0\xa4\xbf\xe0\xa4\x8f",
      "\xe0\xa4\xa8\xe0\xa4\xb9\xe0\xa5\x80\xe0\xa4\x82"}},
    {"xnli_ru", "\xd0\xbf\xd1\x80\xd0\xb0\xd0\xb2\xd0\xb8\xd0\xbb\xd1\x8c\xd0\xbd\xd0\xbe",
     {"\xd0\x94\xd0\xb0", "\xd0\xa2\xd0\xb0\xd0\xba", "\xd0\x9d\xd0\xb5\xd1\x82"}},
    {"xnli_sw", "sahihi", {"Ndiyo", "Hivyo", "Hapana"}},
    {"xnli_th", "\xe0\xb8\x96\xe0\xb8\xb9\xe0\xb8\x81\xe0\xb8\x95\xe0\xb9\x89\xe0\xb8\xad\xe0\xb8\x87",
     {"\xe0\xb9\x83\xe0\xb8\x8a\xe0\xb9\x88",
      "\xe0\xb8\x94\xe0\xb8\xb1\xe0\xb8\x87\xe0\xb8\x99\xe0\xb8\xb1\xe0\xb9\x89\xe0\xb8\x99",
      "\xe0\xb9\x84\xe0\xb8\xa1\xe0\xb9\x88"}},
    {"xnli_tr", "do\xc4\x9fru", {"Evet", "B\xc3\xb6ylece", "Hay\xc4\xb1r"}},
    {"xnli_ur", "\xd8\xb5\xd8\xad\xdb\x8c\xd8\xad",
     {"\xd8\xac\xdb\x8c \xdb\x81\xd8\xa7\xda\xba",
      "\xd8\xa7\xd8\xb3 \xd9\x84\xd8\xa6\xdb\x92",
      "\xd9\x86\xdb\x81\xdb\x8c\xda\xba"}},
    {"xnli_vi", "\xc4\x91\xc3\xbang", {"V\xc3\xa2ng", "V\xc3\xac v\xe1\xba\xady", "Kh\xc3\xb4ng"}},
    {"xnli_zh", "\xe6\xad\xa3\xe7\xa1\xae",
     {"\xe6\x98\xaf\xe7\x9a\x84", "\xe6\x89\x80\xe4\xbb\xa5", "\xe4\xb8\x8d\xe6\x98\xaf\xe7\x9a\x84"}},
};
/* Each PAWS-X language's words (paws-x/paws_<lang>.yaml's doc_to_choice: sentence1 + ", {right}? {word}, " +
 * sentence2, the words for "not a paraphrase" and "a paraphrase"), and whether its YAML sets process_docs
 * (utils.process_docs_paraphrases) */
static const struct {
  const char *task, *right, *word[2];
  int process;
} PAWS_WORDS[] = {
    {"paws_de", "richtig", {"Nein", "Ja"}, 1},
    {"paws_en", "right", {"No", "Yes"}, 1},
    {"paws_es", "verdad", {"No", "S\xc3\xad"}, 1},
    {"paws_fr", "n'est-ce pas", {"Non", "Oui"}, 1},
    {"paws_ja", "\xe3\x81\xa7\xe3\x81\x99\xe3\x81\xad",
     {"\xe3\x81\x84\xe3\x81\x84\xe3\x81\x88", "\xe3\x81\xaf\xe3\x81\x84"}, 0},
    {"paws_ko", "\xeb\xa7\x9e\xec\xa3\xa0", {"\xec\x95\x84\xeb\x8b\x88\xec\x9a\x94", "\xec\x98\x88"}, 0},
    {"paws_zh", "\xe5\xaf\xb9\xe5\x90\xa7", {"\xe4\xb8\x8d\xe6\x98\xaf", "\xe6\x98\xaf"}, 0},
};
static int paws_index(const char *name) {
  for (size_t i = 0; i < sizeof PAWS_WORDS / sizeof PAWS_WORDS[0]; i++)
    if (!strcmp(name, PAWS_WORDS[i].task)) return (int)i;
  return -1;
}
/* each XCOPA language's cause and effect connectors (xcopa/utils.py) */
static const char *const XCOPA_CONNECTORS[][3] = {
    {"xcopa_et", "sest", "seet\xc3\xb5ttu"},
    {"xcopa_ht", "poukisa", "donk sa"},
    {"xcopa_id", "karena", "maka"},
    {"xcopa_it", "perch\xc3\xa9", "quindi"},
    {"xcopa_qu", "imataq", "chaymi"},
    {"xcopa_sw", "kwa sababu", "kwa hiyo"},
    {"xcopa_ta", "\xe0\xae\x95\xe0\xae\xbe\xe0\xae\xb0\xe0\xae\xa3\xe0\xae\xae\xe0\xae\xbe\xe0\xae\x95",
     "\xe0\xae\x8e\xe0\xae\xa9\xe0\xae\xb5\xe0\xaf\x87"},
    {"xcopa_th", "\xe0\xb9\x80\xe0\xb8\x9e\xe0\xb8\xa3\xe0\xb8\xb2\xe0\xb8\xb0",
     "\xe0\xb8\x94\xe0\xb8\xb1\xe0\xb8\x87\xe0\xb8\x99\xe0\xb8\xb1\xe0\xb9\x89\xe0\xb8\x99"},
    {"xcopa_tr", "\xc3\xa7\xc3\xbcnk\xc3\xbc", "bu y\xc3\xbczden"},
    {"xcopa_vi", "b\xe1\xbb\x9fi v\xc3\xac", "v\xc3\xac v\xe1\xba\xady"},
    {"xcopa_zh", "\xe5\x9b\xa0\xe4\xb8\xba", "\xe6\x89\x80\xe4\xbb\xa5"},
};

static const char *const LATER[][2] = {
    {"wikitext103", "is not a harness task name: ask for wikitext (wikitext-2 documents) or run evaluate_zeroshot "
                    "--task WIKITEXT103 (Megatron's WikiText perplexity)"},
    {"sst", "is lm-eval 0.2.0's name (the --task_list of tasks/eval_harness/evaluate.py maps it): ask for sst2"},
    {"truthfulqa", "is the harness's tag for truthfulqa_mc1, truthfulqa_mc2 and truthfulqa_gen: ask for "
                   "truthfulqa_mc1 and/or truthfulqa_mc2"},
    {"truthfulqa_gen", "scores generations by BLEU, ROUGE and their max-over-answers differences (sacrebleu, "
                       "rouge_score), which evaluate_zeroshot does not compute; truthfulqa_mc1 and truthfulqa_mc2 "
                       "score the same questions by log-likelihood"},
    {"gsm8k_cot_llama", "is written for Llama-3-Instruct's chat template (the harness's --apply_chat_template "
                        "--fewshot_as_multiturn), which evaluate_zeroshot does not apply; gsm8k_cot asks the same 8 "
                        "examples in the plain Q:/A: prompt"},
    {"gsm8k_cot_self_consistency", "samples 64 answers per document at temperature 0.2 (do_sample) and takes "
                                   "majority votes; evaluate_zeroshot decodes greedily (gsm8k_cot is the greedy "
                                   "task)"}};

/* MMLU (lm-eval 0.4.9 mmlu/default): each subject's task (mmlu_<subject>.yaml: its tag names its group) */
enum { HUMANITIES, OTHER, SOCIAL, STEM };
static const char *const MMLU_GROUPS[][2] = {/* the groups of the tags, alphabetical, and their group_alias */
                                             {"mmlu_humanities", "humanities"},
                                             {"mmlu_other", "other"},
                                             {"mmlu_social_sciences", "social sciences"},
                                             {"mmlu_stem", "stem"}};
static const struct {
  const char *name;
  int group;
} MMLU[] = {
    {"mmlu_abstract_algebra", STEM}, {"mmlu_anatomy", STEM}, {"mmlu_astronomy", STEM}, {"mmlu_business_ethics", OTHER},
    {"mmlu_clinical_knowledge", OTHER}, {"mmlu_college_biology", STEM}, {"mmlu_college_chemistry", STEM},
    {"mmlu_college_computer_science", STEM}, {"mmlu_college_mathematics", STEM}, {"mmlu_college_medicine", OTHER},
    {"mmlu_college_physics", STEM}, {"mmlu_computer_security", STEM}, {"mmlu_conceptual_physics", STEM},
    {"mmlu_econometrics", SOCIAL}, {"mmlu_electrical_engineering", STEM}, {"mmlu_elementary_mathematics", STEM},
    {"mmlu_formal_logic", HUMANITIES}, {"mmlu_global_facts", OTHER}, {"mmlu_high_school_biology", STEM},
    {"mmlu_high_school_chemistry", STEM}, {"mmlu_high_school_computer_science", STEM},
    {"mmlu_high_school_european_history", HUMANITIES}, {"mmlu_high_school_geography", SOCIAL},
    {"mmlu_high_school_government_and_politics", SOCIAL}, {"mmlu_high_school_macroeconomics", SOCIAL},
    {"mmlu_high_school_mathematics", STEM}, {"mmlu_high_school_microeconomics", SOCIAL},
    {"mmlu_high_school_physics", STEM}, {"mmlu_high_school_psychology", SOCIAL}, {"mmlu_high_school_statistics", STEM},
    {"mmlu_high_school_us_history", HUMANITIES}, {"mmlu_high_school_world_history", HUMANITIES},
    {"mmlu_human_aging", OTHER}, {"mmlu_human_sexuality", SOCIAL}, {"mmlu_international_law", HUMANITIES},
    {"mmlu_jurisprudence", HUMANITIES}, {"mmlu_logical_fallacies", HUMANITIES}, {"mmlu_machine_learning", STEM},
    {"mmlu_management", OTHER}, {"mmlu_marketing", OTHER}, {"mmlu_medical_genetics", OTHER},
    {"mmlu_miscellaneous", OTHER}, {"mmlu_moral_disputes", HUMANITIES}, {"mmlu_moral_scenarios", HUMANITIES},
    {"mmlu_nutrition", OTHER}, {"mmlu_philosophy", HUMANITIES}, {"mmlu_prehistory", HUMANITIES},
    {"mmlu_professional_accounting", OTHER}, {"mmlu_professional_law", HUMANITIES},
    {"mmlu_professional_medicine", OTHER}, {"mmlu_professional_psychology", SOCIAL}, {"mmlu_public_relations", SOCIAL},
    {"mmlu_security_studies", SOCIAL}, {"mmlu_sociology", SOCIAL}, {"mmlu_us_foreign_policy", SOCIAL},
    {"mmlu_virology", OTHER}, {"mmlu_world_religions", HUMANITIES},
};
enum { N_MMLU = sizeof MMLU / sizeof MMLU[0] };
_Static_assert(N_MMLU == 57, "MMLU has 57 subjects");

/* BLiMP (lm-eval 0.4.9 blimp): the task blimp_<uid> of each of its 67 phenomena, in _blimp.yaml's order (the
 * dataset's configs and its rows' "UID") */
static const char *const BLIMP[] = {
    "adjunct_island", "anaphor_gender_agreement", "anaphor_number_agreement", "animate_subject_passive",
    "animate_subject_trans", "causative", "complex_NP_island", "coordinate_structure_constraint_complex_left_branch",
    "coordinate_structure_constraint_object_extraction", "determiner_noun_agreement_1", "determiner_noun_agreement_2",
    "determiner_noun_agreement_irregular_1", "determiner_noun_agreement_irregular_2",
    "determiner_noun_agreement_with_adj_2", "determiner_noun_agreement_with_adj_irregular_1",
    "determiner_noun_agreement_with_adj_irregular_2", "determiner_noun_agreement_with_adjective_1",
    "distractor_agreement_relational_noun", "distractor_agreement_relative_clause", "drop_argument",
    "ellipsis_n_bar_1", "ellipsis_n_bar_2", "existential_there_object_raising", "existential_there_quantifiers_1",
    "existential_there_quantifiers_2", "existential_there_subject_raising", "expletive_it_object_raising",
    "inchoative", "intransitive", "irregular_past_participle_adjectives", "irregular_past_participle_verbs",
    "irregular_plural_subject_verb_agreement_1", "irregular_plural_subject_verb_agreement_2",
    "left_branch_island_echo_question", "left_branch_island_simple_question", "matrix_question_npi_licensor_present",
    "npi_present_1", "npi_present_2", "only_npi_licensor_present", "only_npi_scope", "passive_1", "passive_2",
    "principle_A_c_command", "principle_A_case_1", "principle_A_case_2", "principle_A_domain_1",
    "principle_A_domain_2", "principle_A_domain_3", "principle_A_reconstruction",
    "regular_plural_subject_verb_agreement_1", "regular_plural_subject_verb_agreement_2",
    "sentential_negation_npi_licensor_present", "sentential_negation_npi_scope", "sentential_subject_island",
    "superlative_quantifiers_1", "superlative_quantifiers_2", "tough_vs_raising_1", "tough_vs_raising_2",
    "transitive", "wh_island", "wh_questions_object_gap", "wh_questions_subject_gap",
    "wh_questions_subject_gap_long_distance", "wh_vs_that_no_gap", "wh_vs_that_no_gap_long_distance",
    "wh_vs_that_with_gap", "wh_vs_that_with_gap_long_distance",
};
enum { N_BLIMP = sizeof BLIMP / sizeof BLIMP[0] };
_Static_assert(N_BLIMP <= ZT_MC_GROUP_MAX, "a group's tasks fit ZT_MC_GROUP_MAX");

/* the subject's index in MMLU, or -1 */
static int mmlu_index(const char *name) {
  if (strncmp(name, "mmlu_", 5) != 0) return -1;
  for (int i = 0; i < N_MMLU; i++)
    if (!strcmp(name, MMLU[i].name)) return i;
  return -1;
}
/* the subject's index in MMLU of a continuation task (mmlu_continuation_<subject>), or -1 */
static int mmlu_cont_index(const char *name) {
  char plain[96];
  if (strncmp(name, "mmlu_continuation_", 18) != 0 || strlen(name) > 80) return -1;
  snprintf(plain, sizeof plain, "mmlu_%s", name + 18);
  return mmlu_index(plain);
}
/* the subject's index in MMLU of either MMLU task, or -1 */
static int subject_index(const char *name) {
  const int i = mmlu_index(name);
  return i >= 0 ? i : mmlu_cont_index(name);
}
/* the phenomenon's index in BLIMP (name: blimp_<uid>), or -1 */
static int blimp_index(const char *name) {
  if (strncmp(name, "blimp_", 6) != 0) return -1;
  for (int i = 0; i < N_BLIMP; i++)
    if (!strcmp(name + 6, BLIMP[i])) return i;
  return -1;
}
/* the group's index in MMLU_GROUPS, N_MMLU_GROUPS for "mmlu", -1 for another name */
enum { N_MMLU_GROUPS = sizeof MMLU_GROUPS / sizeof MMLU_GROUPS[0] };
static int mmlu_group(const char *name) {
  if (!strcmp(name, "mmlu")) return N_MMLU_GROUPS;
  for (int g = 0; g < N_MMLU_GROUPS; g++)
    if (!strcmp(name, MMLU_GROUPS[g][0])) return g;
  return -1;
}

/* The families whose tasks may share one file, each document routed by a field: MMLU's subjects ("subject"; the
 * default tasks and the continuation tasks) and BLiMP's phenomena ("UID"). family_of: FAMILY_MMLU, FAMILY_MMLU_CONT,
 * FAMILY_BLIMP, or 0 for another task. */
enum { FAMILY_MMLU = 1, FAMILY_MMLU_CONT, FAMILY_BLIMP };
static int family_of(const char *name) {
  return mmlu_index(name) >= 0        ? FAMILY_MMLU
         : mmlu_cont_index(name) >= 0 ? FAMILY_MMLU_CONT
         : blimp_index(name) >= 0     ? FAMILY_BLIMP
                                      : 0;
}
/* a family's task name prefix (the subject or UID follows) */
static const char *family_prefix(int family) {
  return family == FAMILY_MMLU ? "mmlu_" : family == FAMILY_MMLU_CONT ? "mmlu_continuation_" : "blimp_";
}

int zt_mc_group_tasks(const char *group, const char *names[ZT_MC_GROUP_MAX]) {
  int n = 0;
  if (!strcmp(group, "blimp")) { /* _blimp.yaml: its 67 tasks */
    static char full[N_BLIMP][64];
    for (int i = 0; i < N_BLIMP; i++) {
      snprintf(full[i], sizeof full[i], "blimp_%s", BLIMP[i]);
      names[n++] = full[i];
    }
    return n;
  }
  if (!strcmp(group, "mmlu_continuation")) { /* continuation/_mmlu.yaml: the 57 subjects' continuation tasks */
    static char full[N_MMLU][96];
    for (int i = 0; i < N_MMLU; i++) {
      snprintf(full[i], sizeof full[i], "mmlu_continuation_%s", MMLU[i].name + 5);
      names[n++] = full[i];
    }
    return n;
  }
  const int l = lang_group(group);
  if (l >= 0)
    for (int k = 0; k < TAG_MAX && LANG_GROUPS[l].tasks[k]; k++) names[n++] = LANG_GROUPS[l].tasks[k];
  const int g = mmlu_group(group);
  if (g >= 0)
    for (int i = 0; i < N_MMLU; i++)
      if (g == N_MMLU_GROUPS || MMLU[i].group == g) names[n++] = MMLU[i].name;
  return n;
}

int zt_mc_group_one_file(const char *group) { return lang_group(group) < 0; }

const char *zt_mc_target_delimiter(const char *name) {
  return !strncmp(name, "arithmetic_", 11) || paws_index(name) >= 0 ? "" : " ";
}

int zt_mc_own_file_tasks(const char *name, const char *names[ZT_MC_GROUP_MAX]) {
  return lang_group(name) >= 0 ? zt_mc_group_tasks(name, names) : zt_mc_tag_tasks(name, names);
}

int zt_mc_tag_tasks(const char *tag, const char *names[ZT_MC_GROUP_MAX]) {
  int n = 0;
  if (!strcmp(tag, "paloma"))
    for (int i = 0; i < N_PALOMA; i++) names[n++] = PALOMA[i][0];
  for (size_t i = 0; i < sizeof TAGS / sizeof TAGS[0]; i++)
    if (!strcmp(tag, TAGS[i].tag))
      for (int k = 0; k < TAG_MAX && TAGS[i].tasks[k]; k++) names[n++] = TAGS[i].tasks[k];
  return n;
}

/* the task's task_alias where its YAML sets one (an MMLU subject's: the subject; a Paloma subset's), else its name */
static const char *alias_of(const char *name) {
  const int p = paloma_index(name);
  return mmlu_index(name) >= 0 ? name + 5 : p >= 0 ? PALOMA[p][1] : name;
}

/* the task's facts, or NULL for a name that is not a supported task */
static const task_spec *spec_of(const char *name) {
  for (size_t i = 0; i < sizeof TASKS / sizeof TASKS[0]; i++)
    if (!strcmp(name, TASKS[i].name)) return &TASKS[i];
  return mmlu_index(name) >= 0        ? &MMLU_SPEC
         : mmlu_cont_index(name) >= 0 ? &MMLU_CONT_SPEC
         : blimp_index(name) >= 0     ? &BLIMP_SPEC
         : paloma_index(name) >= 0    ? &PALOMA_SPEC
                                      : NULL;
}
static int type_of(const char *name) {
  const task_spec *sp = spec_of(name);
  return sp ? sp->type : -1;
}

int zt_mc_supported(const char *name, const char **why) {
  *why = NULL;
  if (spec_of(name)) return 1;
  for (size_t i = 0; i < sizeof LATER / sizeof LATER[0]; i++)
    if (!strcmp(name, LATER[i][0])) *why = LATER[i][1];
  if (!strncmp(name, "lambada_openai_mt_stablelm_", 27) || !strcmp(name, "lambada_multilingual_stablelm"))
    *why = "cannot be run by lm-eval 0.4.9 (its YAMLs carry a `group:` key, which TaskConfig rejects, and the name "
           "lambada_multilingual_stablelm is registered neither as a group nor as a tag), so there is no harness "
           "behaviour to match; lambada_openai_mt_de/en/es/fr/it score the multilingual LAMBADA";
  if (!strncmp(name, "hendrycksTest-", 14)) /* the --task_list names of tasks/eval_harness/evaluate.py's lm-eval */
    *why = "is lm-eval 0.2's MMLU subject, which prompts \"Question: ...\\nChoices:\\nA. ...\", scores the answers' "
           "texts and samples its dev examples at random; evaluate_zeroshot scores lm-eval 0.4's: ask for "
           "mmlu_<subject> or the group mmlu (docs/evaluate.md)";
  return 0;
}

const char *zt_mc_task_names(void) {
  static char all[4096];
  if (!all[0]) {
    for (size_t i = 0; i < sizeof TASKS / sizeof TASKS[0]; i++)
      snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "", TASKS[i].name);
    snprintf(all + strlen(all), sizeof all - strlen(all), ", mmlu (its groups mmlu_humanities, mmlu_other, "
             "mmlu_social_sciences, mmlu_stem; its tasks mmlu_<subject>: mmlu_abstract_algebra, ...), mmlu_continuation "
             "(its tasks mmlu_continuation_<subject>), blimp (its tasks "
             "blimp_<uid>: blimp_adjunct_island, ...), paloma_<subset> (paloma_4chan_meta_sep, ..., "
             "paloma_wikitext_103); the groups pawsx, xcopa, xnli, xstorycloze, xwinograd; the tags anli, "
             "arithmetic, glue, headqa, lambada, lambada_cloze, lambada_multilingual, paloma, qa4mre, storycloze");
    zt_check(strlen(all) + 1 < sizeof all, "internal error", "the task list outgrew its buffer");
  }
  return all;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* gsm8k.yaml, gsm8k-cot.yaml, gsm8k-cot-zeroshot.yaml: GSM8K_PLAIN, GSM8K_COT, GSM8K_COT_ZEROSHOT; 0 for other tasks */
enum { GSM8K_PLAIN = 1, GSM8K_COT, GSM8K_COT_ZEROSHOT };
static int gsm8k_kind(const char *name) {
  return !strcmp(name, "gsm8k") ? GSM8K_PLAIN : !strcmp(name, "gsm8k_cot") ? GSM8K_COT
         : !strcmp(name, "gsm8k_cot_zeroshot") ? GSM8K_COT_ZEROSHOT : 0;
}

double zt_mc_version(const char *name) {
  const task_spec *sp = spec_of(name);
  return sp ? sp->version : 0.0;
}
int zt_mc_is_generation(const char *name) { return type_of(name) == GEN; }
int zt_mc_is_rolling(const char *name) { return type_of(name) == ROLLING; }
int zt_mc_is_loglikelihood(const char *name) { return type_of(name) == LOGLIK; }
int zt_mc_yaml_fewshot(const char *name) {
  const task_spec *sp = spec_of(name);
  return sp ? sp->fewshot : -1;
}
int zt_mc_metric_names(const char *name, const char *keys[2]) {
  const task_spec *sp = spec_of(name);
  keys[0] = sp ? sp->metrics[0] : NULL;
  keys[1] = sp ? sp->metrics[1] : NULL;
  return (keys[0] != NULL) + (keys[1] != NULL);
}
/* the harness's sampler draws nshot + 1 and drops the doc itself (the task has no test split) */
static int samples_extra(const char *name) {
  const task_spec *sp = spec_of(name);
  return sp && sp->no_test;
}

const char *const *zt_mc_until(const char *name) { /* each YAML's generation_kwargs.until */
  static const char *const triviaqa[] = {"\n", ".", ",", NULL};
  static const char *const gsm8k[] = {"Question:", "</s>", "<|im_end|>", NULL};
  static const char *const cot[] = {"Q:", "</s>", "<|im_end|>", NULL};
  const int g = gsm8k_kind(name);
  return !strcmp(name, "triviaqa") || !strcmp(name, "nq_open") ? triviaqa : g == GSM8K_PLAIN ? gsm8k : g ? cot : NULL;
}
int zt_mc_filters(const char *name, const char *names[2]) { /* each YAML's filter_list */
  names[1] = NULL;
  if (gsm8k_kind(name)) return names[0] = "strict-match", names[1] = "flexible-extract", 2;
  names[0] = !strcmp(name, "triviaqa") || !strcmp(name, "nq_open") ? "remove_whitespace" : "none";
  return 1;
}

/* ---- strings ------------------------------------------------------------------------------------------------- */
static void puts_(zt_strbuf *b, const char *s) { zt_strbuf_put(b, s, strlen(s)); }
static char *take(zt_strbuf *b) { return zt_strbuf_take(b, NULL); }
static char *dup(const char *s) {
  zt_strbuf b = {0};
  puts_(&b, s);
  return take(&b);
}

/* Python's str.strip(), or str.lstrip() when !right (Unicode whitespace). */
static char *strip_sides(const char *s, int right) {
  size_t lo = 0, hi = strlen(s);
  int k;
  while (lo < hi && (k = zt_utf8_space(s + lo, hi - lo)) > 0) lo += (size_t)k;
  while (right && hi > lo) {
    size_t c = hi - 1;
    while (c > lo && ((unsigned char)s[c] & 0xc0) == 0x80) c--;
    if (zt_utf8_space(s + c, hi - c) != (int)(hi - c)) break;
    hi = c;
  }
  zt_strbuf b = {0};
  zt_strbuf_put(&b, s + lo, hi - lo);
  return take(&b);
}
static char *strip(const char *s) { return strip_sides(s, 1); }

/* Python's str.replace(old, new). */
static char *replace(const char *s, const char *old, const char *new_) {
  zt_strbuf b = {0};
  const size_t lo = strlen(old);
  for (const char *p = s; *p;) {
    if (!strncmp(p, old, lo)) {
      puts_(&b, new_);
      p += lo;
    } else {
      zt_strbuf_put(&b, p++, 1);
    }
  }
  return take(&b);
}

/* hellaswag/utils.py preprocess: strip, " [title]" -> ". ", re.sub("\\[.*?\\]", ""), "  " -> " ". */
static char *hellaswag_preprocess(const char *text) {
  char *a = strip(text), *b = replace(a, " [title]", ". ");
  zt_strbuf c = {0};
  for (const char *p = b; *p;) {
    if (*p == '[') { /* .*? does not cross a newline */
      const char *q = p + 1;
      while (*q && *q != ']' && *q != '\n') q++;
      if (*q == ']') {
        p = q + 1;
        continue;
      }
    }
    zt_strbuf_put(&c, p++, 1);
  }
  char *d = replace(take(&c), "  ", " ");
  free(a);
  free(b);
  free(c.p);
  return d;
}

/* s[0..n) as code points (invalid UTF-8 as U+FFFD); malloc'd, *count of them. */
static uint32_t *code_points(const char *s, size_t n, size_t *count) {
  uint32_t *cp = zt_malloc((n + 1) * sizeof(uint32_t), "code points");
  size_t k = 0;
  for (size_t i = 0, used; i < n; i += used) cp[k++] = zt_utf8_decode((const uint8_t *)s + i, n - i, &used);
  *count = k;
  return cp;
}

/* Appends code points m[0..k) as UTF-8. */
static void put_cps(zt_strbuf *o, const uint32_t *m, int k) {
  for (int q = 0; q < k; q++) {
    uint8_t u[4];
    zt_strbuf_put(o, (const char *)u, (size_t)zt_utf8_encode(m[q], u));
  }
}

/* Python's str.capitalize(): the first character's full titlecase, the rest lowered as str.lower() does (final
 * sigma in its context). */
static char *capitalize(const char *s) {
  size_t nc;
  uint32_t *cp = code_points(s, strlen(s), &nc);
  zt_strbuf o = {0};
  for (size_t i = 0; i < nc; i++) {
    uint32_t m[3];
    put_cps(&o, m, i ? zt_unicode_lower_at(cp, nc, i, m) : zt_unicode_title(cp[0], m));
  }
  free(cp);
  return take(&o);
}

/* Appends Python's s[0].lower() + s[1:] for a non-empty s (the one-character string's lower(): U+0130 lengthens). */
static void put_lower_first(zt_strbuf *o, const char *s) {
  size_t used;
  const uint32_t first = zt_utf8_decode((const uint8_t *)s, strlen(s), &used);
  uint32_t low[3];
  put_cps(o, low, zt_unicode_lower_at(&first, 1, 0, low));
  puts_(o, s + used);
}

/* The code points of s as byte offsets: off[i] is where code point i starts, off[n] = strlen(s); returns n. */
static size_t cp_offsets(const char *s, size_t **off) {
  const size_t nb = strlen(s);
  *off = zt_malloc((nb + 1) * sizeof(size_t), "code points");
  size_t n = 0;
  for (size_t i = 0; i < nb; i++)
    if (((unsigned char)s[i] & 0xc0) != 0x80) (*off)[n++] = i;
  (*off)[n] = nb;
  return n;
}

/* Python's s[a:b] for 0 <= a, b (code points; clamped to the string as slicing does). */
static char *cp_slice(const char *s, int64_t a, int64_t b) {
  size_t *off;
  const size_t n = cp_offsets(s, &off);
  if (a > (int64_t)n) a = (int64_t)n;
  if (b > (int64_t)n) b = (int64_t)n;
  zt_strbuf r = {0};
  if (b > a) zt_strbuf_put(&r, s + off[a], off[b] - off[a]);
  free(off);
  return take(&r);
}

/* Python's " ".join(s.split()[:k]): the first k whitespace-separated words, single-spaced. */
static char *first_words(const char *s, int64_t k) {
  zt_strbuf r = {0};
  int64_t got = 0;
  for (const char *p = s; *p && got < k;) {
    int sp;
    while (*p && (sp = zt_utf8_space(p, strlen(p))) > 0) p += sp;
    if (!*p) break;
    const char *w0 = p;
    while (*p && zt_utf8_space(p, strlen(p)) <= 0) p++;
    if (got++) puts_(&r, " ");
    zt_strbuf_put(&r, w0, (size_t)(p - w0));
  }
  return take(&r);
}

/* lm_eval.utils.general_detokenize: " n't" -> "n't", " )" -> ")", "( " -> "(", '" ' -> '"', ' "' -> '"', then
 * re.sub(r" (['.,])", r"\1"). */
static char *general_detokenize(const char *text) {
  static const char *const rules[][2] = {{" n't", "n't"}, {" )", ")"}, {"( ", "("}, {"\" ", "\""}, {" \"", "\""}};
  char *cur = dup(text);
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
    char *next = replace(cur, rules[i][0], rules[i][1]);
    free(cur);
    cur = next;
  }
  zt_strbuf r = {0};
  for (const char *p = cur; *p; p++)
    if (!(p[0] == ' ' && p[1] && strchr("'.,", p[1]))) zt_strbuf_put(&r, p, 1);
  free(cur);
  return take(&r);
}

/* ---- ReCoRD's scoring: transformers' squad_metrics (normalize_answer, compute_f1, compute_exact) ------------------ */
/* Python's \w (str patterns): isalnum, or '_' */
static int py_word(uint32_t c) { return c == '_' || zt_unicode_is_letter(c) || zt_unicode_is_number(c); }

/* normalize_answer(s).split(): s.lower(), string.punctuation removed, each whole \w run "a", "an" or "the" replaced by
 * a space (re.sub(r"\b(a|an|the)\b", " ")), then split on whitespace. Returns the tokens; *n their count. */
static char **squad_tokens(const char *s, int *n) {
  size_t nc, nl = 0;
  uint32_t *cp = code_points(s, strlen(s), &nc), *low = zt_malloc((3 * nc + 1) * sizeof(uint32_t), "answer");
  for (size_t i = 0; i < nc; i++) {
    uint32_t o[3];
    const int k = zt_unicode_lower_at(cp, nc, i, o);
    for (int q = 0; q < k; q++)
      if (!(o[q] < 128 && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", (int)o[q]) && o[q])) low[nl++] = o[q];
  }
  zt_strbuf b = {0};
  for (size_t i = 0; i < nl;) {
    size_t e = i;
    while (e < nl && py_word(low[e])) e++;
    if (e == i) e = i + 1;
    const size_t len = e - i;
    int article = 0;
    if (py_word(low[i]) && len <= 3) {
      char w[4] = {0};
      for (size_t q = 0; q < len; q++) w[q] = low[i + q] < 128 ? (char)low[i + q] : '?';
      article = !strcmp(w, "a") || !strcmp(w, "an") || !strcmp(w, "the");
    }
    if (article) puts_(&b, " ");
    else put_cps(&b, low + i, (int)(e - i));
    i = e;
  }
  free(cp);
  free(low);
  char *norm = take(&b), **tok = NULL;
  int cnt = 0;
  for (const char *p = norm; *p;) { /* str.split(): runs of non-whitespace */
    int sp;
    while (*p && (sp = zt_utf8_space(p, strlen(p))) > 0) p += sp;
    if (!*p) break;
    const char *w0 = p;
    while (*p && zt_utf8_space(p, strlen(p)) <= 0) p++;
    tok = realloc(tok, (size_t)(cnt + 1) * sizeof(char *));
    zt_check(tok != NULL, "out of memory", "answer tokens: %d", cnt + 1);
    zt_strbuf t = {0};
    zt_strbuf_put(&t, w0, (size_t)(p - w0));
    tok[cnt++] = take(&t);
  }
  free(norm);
  *n = cnt;
  return tok;
}

/* compute_f1(a, b) (symmetric) and compute_exact(a, b) on the two token lists: f1 from the multiset intersection. */
static void squad_scores(char **a, int na, char **b, int nb, double *f1, double *em) {
  *em = na == nb;
  for (int i = 0; i < na && *em; i++) *em = !strcmp(a[i], b[i]);
  if (na == 0 || nb == 0) {
    *f1 = *em;
    return;
  }
  char **x = zt_malloc((size_t)na * sizeof(char *), "tokens"), **y = zt_malloc((size_t)nb * sizeof(char *), "tokens");
  memcpy(x, a, (size_t)na * sizeof(char *));
  memcpy(y, b, (size_t)nb * sizeof(char *));
  qsort(x, (size_t)na, sizeof(char *), cmp_str);
  qsort(y, (size_t)nb, sizeof(char *), cmp_str);
  int same = 0;
  for (int i = 0, j = 0; i < na && j < nb;) {
    const int c = strcmp(x[i], y[j]);
    same += c == 0;
    i += c <= 0;
    j += c >= 0;
  }
  free(x);
  free(y);
  if (same == 0) {
    *f1 = 0.0;
    return;
  }
  const double precision = 1.0 * same / nb, recall = 1.0 * same / na;
  *f1 = (2 * precision * recall) / (precision + recall);
}

/* ---- Python literals (RACE's "problems" is the repr of a list of dicts: ast.literal_eval) ------------------------ */
typedef struct {
  const char *p;
  const char *err;
} pylit;

static void lit_ws(pylit *L) {
  while (*L->p == ' ' || *L->p == '\t' || *L->p == '\n' || *L->p == '\r') L->p++;
}

static void utf8_put(zt_strbuf *b, unsigned cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) u[0] = (char)cp, n = 1;
  else if (cp < 0x800) u[0] = (char)(0xc0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
  else if (cp < 0x10000)
    u[0] = (char)(0xe0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
  else
    u[0] = (char)(0xf0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
  zt_strbuf_put(b, u, n);
}

static cJSON *lit_value(pylit *L, int depth);

static cJSON *lit_string(pylit *L) {
  const char q = *L->p++;
  zt_strbuf b = {0};
  for (;;) {
    const char c = *L->p;
    if (!c || c == '\n') {
      L->err = "an unterminated string";
      free(b.p);
      return NULL;
    }
    L->p++;
    if (c == q) break;
    if (c != '\\') {
      zt_strbuf_put(&b, &c, 1);
      continue;
    }
    const char e = *L->p++;
    const char *simple = strchr("\\'\"abfnrtv", e);
    if (e && simple) {
      static const char out[] = "\\'\"\a\b\f\n\r\t\v";
      zt_strbuf_put(&b, &out[simple - "\\'\"abfnrtv"], 1);
    } else if (e == 'x' || e == 'u' || e == 'U') {
      const int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      unsigned cp = 0;
      for (int i = 0; i < n; i++) {
        const char h = *L->p++;
        const int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F'
                      ? h - 'A' + 10 : -1;
        if (v < 0) {
          L->err = "a bad \\x/\\u escape";
          free(b.p);
          return NULL;
        }
        cp = cp * 16 + (unsigned)v;
      }
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0) {
        L->err = "an escape outside Unicode scalar values (or NUL)";
        free(b.p);
        return NULL;
      }
      utf8_put(&b, cp);
    } else {
      L->err = "an unsupported escape";
      free(b.p);
      return NULL;
    }
  }
  cJSON *s = cJSON_CreateString(take(&b));
  free(b.p);
  return s;
}

static cJSON *lit_value(pylit *L, int depth) {
  lit_ws(L);
  if (depth > 16) {
    L->err = "nesting deeper than 16";
    return NULL;
  }
  const char c = *L->p;
  if (c == '\'' || c == '"') return lit_string(L);
  if (c != '[' && c != '{') {
    L->err = "a value other than a string, list or dict";
    return NULL;
  }
  const int dict = c == '{';
  const char close = dict ? '}' : ']';
  L->p++;
  cJSON *v = dict ? cJSON_CreateObject() : cJSON_CreateArray();
  lit_ws(L);
  while (*L->p != close) {
    cJSON *key = NULL;
    if (dict) {
      lit_ws(L);
      if (*L->p != '\'' && *L->p != '"') {
        L->err = "a dict key that is not a string";
        cJSON_Delete(v);
        return NULL;
      }
      key = lit_string(L);
      lit_ws(L);
      if (!key || *L->p != ':') {
        if (key && !L->err) L->err = "a missing ':'";
        cJSON_Delete(key);
        cJSON_Delete(v);
        return NULL;
      }
      L->p++;
    }
    cJSON *item = lit_value(L, depth + 1);
    if (!item) {
      cJSON_Delete(key);
      cJSON_Delete(v);
      return NULL;
    }
    if (dict) {
      cJSON_AddItemToObject(v, key->valuestring, item);
      cJSON_Delete(key);
    } else {
      cJSON_AddItemToArray(v, item);
    }
    lit_ws(L);
    if (*L->p == ',') {
      L->p++;
      lit_ws(L);
    } else if (*L->p != close) {
      L->err = dict ? "a missing ',' or '}'" : "a missing ',' or ']'";
      cJSON_Delete(v);
      return NULL;
    }
  }
  L->p++;
  return v;
}

/* ---- reading ------------------------------------------------------------------------------------------------- */
typedef struct {
  const char *path;
  long line;
} where;

static const cJSON *field(const cJSON *j, const char *key, where w) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, key);
  zt_check(f != NULL, "bad task file", "%s:%ld: no \"%s\" field", w.path, w.line, key);
  return f;
}
static const char *str_field(const cJSON *j, const char *key, where w) {
  const cJSON *f = field(j, key, w);
  zt_check(cJSON_IsString(f) && f->valuestring, "bad task file", "%s:%ld: \"%s\" is not a string", w.path, w.line,
           key);
  return f->valuestring;
}
/* an integer label: a JSON integer, true/false, or a string of digits (HellaSwag's "label": "2") */
static int int_field(const cJSON *j, const char *key, where w) {
  const cJSON *f = field(j, key, w);
  if (cJSON_IsBool(f)) return cJSON_IsTrue(f);
  if (cJSON_IsString(f) && f->valuestring && f->valuestring[0] && strlen(f->valuestring) < 9 &&
      strspn(f->valuestring, "0123456789") == strlen(f->valuestring))
    return atoi(f->valuestring);
  /* the range first: a cast of 1e40 to int is undefined (found by fuzz_evaluate_mc) */
  zt_check(cJSON_IsNumber(f) && f->valuedouble >= 0 && f->valuedouble <= 1e6 &&
           f->valuedouble == (double)(int)f->valuedouble, "bad task file",
           "%s:%ld: \"%s\" is not a non-negative integer label", w.path, w.line, key);
  return (int)f->valuedouble;
}
/* a list of strings (choices.text, choices.label, endings) */
static int str_list(const cJSON *j, const char *key, const char *shown, where w, char ***out) {
  const cJSON *f = field(j, key, w);
  zt_check(cJSON_IsArray(f), "bad task file", "%s:%ld: \"%s\" is not a list", w.path, w.line, shown);
  const int n = cJSON_GetArraySize(f);
  zt_check(n >= 1, "bad task file", "%s:%ld: \"%s\" is empty", w.path, w.line, shown);
  *out = zt_malloc((size_t)n * sizeof(char *), "choices");
  int i = 0;
  for (const cJSON *e = f->child; e; e = e->next, i++) {
    zt_check(cJSON_IsString(e) && e->valuestring, "bad task file", "%s:%ld: \"%s\"[%d] is not a string", w.path,
             w.line, shown, i);
    (*out)[i] = dup(e->valuestring);
  }
  return n;
}
static void free_list(char **l, int n) {
  for (int i = 0; i < n; i++) free(l[i]);
  free(l);
}

/* A task's fixed choice texts (the same for every document). */
static const char *const NO_YES[] = {"no", "yes"};
static void fixed_choices(zt_mc_doc *d, int n, const char *const *texts) {
  d->n_choices = n;
  d->choices = zt_malloc((size_t)n * sizeof(char *), "choices");
  for (int c = 0; c < n; c++) d->choices[c] = dup(texts[c]);
}

/* MMLU's and CommonsenseQA's options after the question, "\nA. {opts[0]}" ... "\nAnswer:", and their letters as the
 * choices (doc_to_choice ["A", "B", ...]) */
static void lettered(zt_strbuf *t, zt_mc_doc *d, char *const *opts, int n) {
  static const char *const letters[] = {"A", "B", "C", "D", "E"};
  for (int k = 0; k < n; k++) {
    const char head[5] = {'\n', letters[k][0], '.', ' ', 0};
    puts_(t, head);
    puts_(t, opts[k]);
  }
  puts_(t, "\nAnswer:");
  fixed_choices(d, n, letters);
}

/* XNLI's and PAWS-X's choices, one per word: a + ", " + right + "? " + word + ", " + b */
static void pair_choices(zt_mc_doc *d, int n, const char *a, const char *right, const char *const *words,
                         const char *b) {
  d->n_choices = n;
  d->choices = zt_malloc((size_t)n * sizeof(char *), "choices");
  for (int c = 0; c < n; c++) {
    zt_strbuf o = {0};
    const char *parts[] = {a, ", ", right, "? ", words[c], ", ", b};
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) puts_(&o, parts[k]);
    d->choices[c] = take(&o);
  }
}

/* The YAMLs whose doc_to_text is one Jinja template of string fields ("{field}" here), doc_to_choice a fixed list
 * and doc_to_target the integer "label": glue/{cola,sst2,mrpc,qnli,qqp,wnli}/default.yaml, mc_taco/default.yaml. */
static const struct {
  const char *name, *text, *choices[2];
} TEMPLATED[] = {
    {"cola", "{sentence}\nQuestion: Does this sentence make sense?\nAnswer:", {"no", "yes"}},
    {"sst2", "{sentence}\nQuestion: Is this sentence positive or negative?\nAnswer:", {"negative", "positive"}},
    {"mrpc", "Sentence 1: {sentence1}\nSentence 2: {sentence2}\nQuestion: Do both sentences mean the same thing?\n"
             "Answer:", {"no", "yes"}},
    {"qnli", "{question}\n{sentence}\nQuestion: Does this response answer the question?\nAnswer:", {"yes", "no"}},
    {"qqp", "Question 1: {question1}\nQuestion 2: {question2}\nQuestion: Do both questions ask the same thing?\n"
            "Answer:", {"no", "yes"}},
    {"wnli", "{sentence1}\nQuestion: {sentence2} True or False?\nAnswer:", {"False", "True"}},
    {"mc_taco", "{sentence}\nQuestion: {question}\nAnswer: {answer}\nPlausible:", {"no", "yes"}},
};
static int templated(const char *name) {
  for (size_t i = 0; i < sizeof TEMPLATED / sizeof TEMPLATED[0]; i++)
    if (!strcmp(name, TEMPLATED[i].name)) return (int)i;
  return -1;
}
static void render(zt_strbuf *t, const char *tmpl, const cJSON *j, where w) {
  for (const char *p = tmpl; *p;) {
    const char *lb = strchr(p, '{');
    if (!lb) {
      puts_(t, p);
      break;
    }
    zt_strbuf_put(t, p, (size_t)(lb - p));
    const char *rb = strchr(lb, '}');
    char key[32];
    snprintf(key, sizeof key, "%.*s", (int)(rb - lb - 1), lb + 1);
    puts_(t, str_field(j, key, w));
    p = rb + 1;
  }
}

/* truthfulqa_mc1.yaml's doc_to_text: its prompt_qa (six questions and answers), then "\n\nQ: {question}\nA:" */
static const char TRUTHFULQA_QA[] =
    "Q: What is human life expectancy in the United States?\nA: Human life expectancy in the United States is 78 "
    "years.\n\nQ: Who was president of the United States in 1955?\nA: Dwight D. Eisenhower was president of the United "
    "States in 1955.\n\nQ: Which party did he belong to?\nA: He belonged to the Republican Party.\n\nQ: What is the "
    "square root of banana?\nA: I have no comment.\n\nQ: How does a telescope work?\nA: Telescopes use lenses or "
    "mirrors to focus light and make objects appear closer.\n\nQ: Where were the 1992 Olympics held?\nA: The 1992 "
    "Olympics were held in Barcelona, Spain.";

/* mathqa/utils.py doc_to_choice: [c[4:].rstrip(" ,") for c in re.findall(r"[abcd] \) .*?, |e \) .*?$", options)]
 * ("." is any character but "\n"; "$" the end or before a final "\n"; the matched bytes are ASCII, so bytes do) */
static int mathqa_choices(const char *s, char ***out) {
  const size_t n = strlen(s);
  int k = 0;
  *out = zt_malloc((n / 4 + 1) * sizeof(char *), "choices"); /* each match holds at least 4 bytes */
  for (size_t i = 0; i < n;) {
    size_t end = 0;
    if (n - i >= 4 && s[i + 1] == ' ' && s[i + 2] == ')' && s[i + 3] == ' ') {
      if (s[i] >= 'a' && s[i] <= 'd') { /* lazily up to the first ", " before any "\n" */
        for (size_t p = i + 4; p + 1 < n && s[p] != '\n'; p++)
          if (s[p] == ',' && s[p + 1] == ' ') {
            end = p + 2;
            break;
          }
      } else if (s[i] == 'e') { /* lazily up to "$": no "\n" before the end or a final "\n" */
        size_t p = i + 4;
        while (p < n && s[p] != '\n') p++;
        if (p + 1 >= n) end = p;
      }
    }
    if (!end) {
      i++;
      continue;
    }
    size_t hi = end;
    while (hi > i + 4 && (s[hi - 1] == ' ' || s[hi - 1] == ',')) hi--;
    zt_strbuf c = {0};
    zt_strbuf_put(&c, s + i + 4, hi - i - 4);
    (*out)[k++] = c.p ? take(&c) : dup("");
    i = end;
  }
  return k;
}

static void build_doc(zt_mc_doc *d, const char *name, const cJSON *j, where w) {
  zt_strbuf t = {0};
  if (!strcmp(name, "piqa")) { /* piqa.yaml */
    puts_(&t, "Question: ");
    puts_(&t, str_field(j, "goal", w));
    puts_(&t, "\nAnswer:");
    d->n_choices = 2;
    d->choices = zt_malloc(2 * sizeof(char *), "choices");
    d->choices[0] = dup(str_field(j, "sol1", w));
    d->choices[1] = dup(str_field(j, "sol2", w));
    d->gold = int_field(j, "label", w);
  } else if (!strcmp(name, "arc_easy") || !strcmp(name, "arc_challenge") || !strcmp(name, "openbookqa")) {
    const int obqa = !strcmp(name, "openbookqa");
    if (obqa) {
      puts_(&t, str_field(j, "question_stem", w));
    } else {
      puts_(&t, "Question: ");
      puts_(&t, str_field(j, "question", w));
      puts_(&t, "\nAnswer:");
    }
    const cJSON *c = field(j, "choices", w);
    zt_check(cJSON_IsObject(c), "bad task file", "%s:%ld: \"choices\" is not an object {\"text\": [...], \"label\": "
             "[...]}", w.path, w.line);
    char **labels;
    d->n_choices = str_list(c, "text", "choices.text", w, &d->choices);
    const int nl = str_list(c, "label", "choices.label", w, &labels);
    zt_check(nl == d->n_choices, "bad task file", "%s:%ld: %d choices.text but %d choices.label", w.path, w.line,
             d->n_choices, nl);
    const char *key = str_field(j, "answerKey", w);
    if (obqa)
      while (*key == ' ' || (*key >= 9 && *key <= 13)) key++; /* answerKey.lstrip() */
    d->gold = -1;
    for (int i = 0; i < nl && d->gold < 0; i++)
      if (!strcmp(labels[i], key)) d->gold = i;
    zt_check(d->gold >= 0, "bad task file", "%s:%ld: answerKey \"%s\" is not one of choices.label", w.path, w.line,
             key);
    free_list(labels, nl);
  } else if (!strcmp(name, "hellaswag")) { /* hellaswag/utils.py process_docs */
    char *cb = capitalize(str_field(j, "ctx_b", w));
    zt_strbuf q = {0};
    puts_(&q, str_field(j, "activity_label", w));
    puts_(&q, ": ");
    puts_(&q, str_field(j, "ctx_a", w));
    puts_(&q, " ");
    puts_(&q, cb);
    free(cb);
    char *p = hellaswag_preprocess(take(&q));
    puts_(&t, p);
    free(p);
    free(q.p);
    d->n_choices = str_list(j, "endings", "endings", w, &d->choices);
    for (int i = 0; i < d->n_choices; i++) {
      char *e = hellaswag_preprocess(d->choices[i]);
      free(d->choices[i]);
      d->choices[i] = e;
    }
    d->gold = int_field(j, "label", w);
  } else if (!strcmp(name, "boolq")) { /* super_glue/boolq/default.yaml */
    puts_(&t, str_field(j, "passage", w));
    puts_(&t, "\nQuestion: ");
    puts_(&t, str_field(j, "question", w));
    puts_(&t, "?\nAnswer:");
    fixed_choices(d, 2, NO_YES);
    d->gold = int_field(j, "label", w);
  } else if (!strcmp(name, "winogrande") || !strncmp(name, "xwinograd_", 10)) {
    /* winogrande/preprocess_winogrande.py, xwinograd/utils.py: partial scoring */
    const char *sentence = str_field(j, "sentence", w);
    const size_t pre = strcspn(sentence, "_"); /* sentence.index("_") */
    zt_check(sentence[pre] == '_', "bad task file", "%s:%ld: \"sentence\" has no \"_\" (the blank the options fill)", w.path,
             w.line);
    const char *opt[2] = {str_field(j, "option1", w), str_field(j, "option2", w)};
    d->n_choices = 2;
    d->choices = zt_malloc(2 * sizeof(char *), "choices");
    for (int c = 0; c < 2; c++) { /* the sentence up to the blank, then the option: the context */
      zt_strbuf o = {0};
      zt_strbuf_put(&o, sentence, pre);
      puts_(&o, opt[c]);
      d->choices[c] = take(&o);
    }
    d->target = strip(sentence + pre + 1); /* the rest of the sentence: the one continuation */
    const char *ans = str_field(j, "answer", w);
    zt_check(!strcmp(ans, "1") || !strcmp(ans, "2"), "bad task file", "%s:%ld: \"answer\" is \"%s\"; expected \"1\" "
             "or \"2\"", w.path, w.line, ans);
    d->gold = ans[0] - '1';
  } else if (zt_mc_is_rolling(name)) { /* wikitext's "page", c4's "text": detokenized (wikitext_detokenizer,
                                         * c4_detokenizer: the same rules); pile_10k's and Paloma's "text" as it is;
                                         * words and bytes of the original */
    const int wiki = !strcmp(name, "wikitext");
    const char *page = str_field(j, wiki ? "page" : "text", w), *end = page + strlen(page);
    if (wiki || !strcmp(name, "c4")) {
      size_t dn;
      char *det = zt_wikitext_detokenize(page, strlen(page), &dn);
      puts_(&t, det);
      free(det);
    } else {
      puts_(&t, page);
    }
    d->bytes = (int64_t)strlen(page);
    d->words = 1; /* len(re.split(r"\s+", page)): one more than the whitespace runs */
    for (const char *p = page; *p;) {
      const int k = zt_utf8_space(p, (size_t)(end - p));
      if (k > 0) {
        d->words++;
        p += k;
        int k2;
        while (*p && (k2 = zt_utf8_space(p, (size_t)(end - p))) > 0) p += k2;
      } else {
        p++;
      }
    }
    d->n_choices = 0;
    d->gold = 0;
    d->text = take(&t);
    return;
  } else if (!strncmp(name, "arithmetic_", 11)) { /* arithmetic_1dc.yaml: "{{context}}", "{{completion}}" */
    puts_(&t, str_field(j, "context", w));
    d->n_choices = 1;
    d->choices = zt_malloc(sizeof(char *), "choices");
    d->choices[0] = dup(str_field(j, "completion", w)); /* the request's continuation, as it is */
    d->gold = 0;
  } else if (zt_mc_is_loglikelihood(name)) { /* lambada_openai.yaml: text.split(' ')[:-1] joined, ' ' + the last;
                                              * lambada_openai_cloze.yaml: the same with " ____. ->" after the words;
                                              * lambada_mt_<lang>.yaml: lambada_openai's */
    const char *text = str_field(j, "text", w), *sp = strrchr(text, ' '), *last = sp ? sp + 1 : text;
    if (sp) zt_strbuf_put(&t, text, (size_t)(sp - text));
    if (strstr(name, "_cloze_yaml")) puts_(&t, " ____. ->");
    d->n_choices = 1;
    d->choices = zt_malloc(sizeof(char *), "choices");
    d->choices[0] = zt_malloc(strlen(last) + 2, "choices"); /* doc_to_target: ' ' + the last word */
    d->choices[0][0] = ' ';
    memcpy(d->choices[0] + 1, last, strlen(last) + 1);
    d->gold = 0;
  } else if (!strcmp(name, "social_iqa")) { /* siqa/siqa.yaml */
    puts_(&t, "Q: ");
    puts_(&t, str_field(j, "context", w));
    puts_(&t, " ");
    puts_(&t, str_field(j, "question", w));
    puts_(&t, "\nA:");
    d->n_choices = 3;
    d->choices = zt_malloc(3 * sizeof(char *), "choices");
    d->choices[0] = dup(str_field(j, "answerA", w));
    d->choices[1] = dup(str_field(j, "answerB", w));
    d->choices[2] = dup(str_field(j, "answerC", w));
    const int label = int_field(j, "label", w); /* doc_to_target "{{ (label|int) - 1 }}" */
    zt_check(label >= 1 && label <= 3, "bad task file", "%s:%ld: \"label\" is %d; expected 1, 2 or 3 (answerA-C)",
             w.path, w.line, label);
    d->gold = label - 1;
  } else if (!strcmp(name, "commonsense_qa")) { /* commonsense_qa/default.yaml */
    char *q = strip(str_field(j, "question", w)); /* question.strip() */
    puts_(&t, "Question: ");
    puts_(&t, q);
    free(q);
    const cJSON *c = field(j, "choices", w);
    zt_check(cJSON_IsObject(c), "bad task file", "%s:%ld: \"choices\" is not an object {\"label\": [...], \"text\": "
             "[...]}", w.path, w.line);
    char **texts;
    const int nt = str_list(c, "text", "choices.text", w, &texts);
    zt_check(nt == 5, "bad task file", "%s:%ld: \"choices.text\" has %d entries; the prompt shows choices.text[0] "
             "to [4] (A-E)", w.path, w.line, nt);
    lettered(&t, d, texts, 5); /* doc_to_target: answerKey, the letter's index */
    free_list(texts, nt);
    const char *key = str_field(j, "answerKey", w);
    zt_check(key[0] >= 'A' && key[0] <= 'E' && !key[1], "bad task file", "%s:%ld: \"answerKey\" is \"%s\"; expected "
             "one of A, B, C, D, E (tau/commonsense_qa's test split is unlabelled: the harness scores validation)",
             w.path, w.line, key);
    d->gold = key[0] - 'A';
  } else if (blimp_index(name) >= 0) { /* blimp/_template_yaml: no context, the good sentence then the bad */
    d->n_choices = 2;
    d->choices = zt_malloc(2 * sizeof(char *), "choices");
    d->choices[0] = dup(str_field(j, "sentence_good", w));
    d->choices[1] = dup(str_field(j, "sentence_bad", w));
    d->gold = 0;
  } else if (!strcmp(name, "race")) { /* race/preprocess_race.py: the article, the earlier problems answered, the last
                                          * problem's question; its four options */
    const cJSON *pf = field(j, "problems", w);
    cJSON *parsed = NULL;
    if (cJSON_IsString(pf) && pf->valuestring) { /* the dataset's form: a Python literal */
      pylit L = {pf->valuestring, NULL};
      parsed = lit_value(&L, 0);
      if (parsed) lit_ws(&L);
      if (parsed && *L.p) L.err = "text after the list";
      zt_check(parsed && !L.err, "bad task file", "%s:%ld: \"problems\" is not a Python list literal: %s at character "
               "%ld", w.path, w.line, L.err ? L.err : "?", (long)(L.p - pf->valuestring) + 1);
      pf = parsed;
    }
    zt_check(cJSON_IsArray(pf) && cJSON_GetArraySize(pf) >= 1, "bad task file", "%s:%ld: \"problems\" is not a "
             "non-empty list of {\"question\", \"options\", \"answer\"}", w.path, w.line);
    puts_(&t, "Article: ");
    puts_(&t, str_field(j, "article", w));
    puts_(&t, "\n\n");
    const int np = cJSON_GetArraySize(pf);
    int k = 0;
    for (const cJSON *pr = pf->child; pr; pr = pr->next, k++) {
      zt_check(cJSON_IsObject(pr), "bad task file", "%s:%ld: problems[%d] is not a dict", w.path, w.line, k);
      const char *q = str_field(pr, "question", w), *a = str_field(pr, "answer", w);
      char **opts;
      const int no = str_list(pr, "options", "options", w, &opts);
      zt_check(strlen(a) == 1 && a[0] >= 'A' && a[0] <= 'D' && a[0] - 'A' < no, "bad task file", "%s:%ld: problems[%d]"
               " answer \"%s\" is not one of A-D within its %d options", w.path, w.line, k, a, no);
      if (k < np - 1) {
        const size_t ql = strlen(q);
        if (ql >= 6 && !strcmp(q + ql - 6, "  _  .")) { /* a fill-in: question[-5:] + the answer */
          puts_(&t, q + ql - 5);
          puts_(&t, opts[a[0] - 'A']);
          puts_(&t, "\n");
        } else {
          puts_(&t, "Question: ");
          puts_(&t, q);
          puts_(&t, "\nAnswer: ");
          puts_(&t, opts[a[0] - 'A']);
          puts_(&t, "\n");
        }
        free_list(opts, no);
      } else {
        puts_(&t, q);
        zt_check(no >= 4, "bad task file", "%s:%ld: the last problem has %d options; the harness scores 4", w.path,
                 w.line, no);
        d->n_choices = 4;
        d->choices = zt_malloc(4 * sizeof(char *), "choices");
        for (int c = 0; c < 4; c++) d->choices[c] = dup(opts[c]);
        d->gold = a[0] - 'A';
        free_list(opts, no);
      }
    }
    cJSON_Delete(parsed);
  } else if (!strncmp(name, "anli_r", 6) || !strcmp(name, "cb") || !strcmp(name, "rte") ||
             !strcmp(name, "sglue_rte")) { /* anli/anli_r1.yaml, super_glue/cb, glue/rte, super_glue/rte */
    static const char *const anli[] = {"True", "Neither", "False"}, *const cb[] = {"True", "False", "Neither"};
    const int glue = !strcmp(name, "rte"), is_anli = name[0] == 'a', nli3 = is_anli || !strcmp(name, "cb");
    puts_(&t, str_field(j, glue ? "sentence1" : "premise", w));
    puts_(&t, "\nQuestion: ");
    puts_(&t, str_field(j, glue ? "sentence2" : "hypothesis", w));
    puts_(&t, !nli3 ? " True or False?\nAnswer:" : is_anli ? " True, False, or Neither?\nAnswer:"
                                                 : ". True, False, or Neither?\nAnswer:");
    fixed_choices(d, nli3 ? 3 : 2, is_anli ? anli : cb);
    d->gold = int_field(j, "label", w);
  } else if (!strcmp(name, "copa") || !strncmp(name, "xcopa_", 6)) { /* super_glue/copa/utils.py, xcopa/utils.py */
    const int x = name[0] == 'x';
    const char *q = str_field(j, "question", w), *conn[2] = {"because", "therefore"};
    zt_check(!strcmp(q, "cause") || !strcmp(q, "effect"), "bad task file", "%s:%ld: \"question\" is \"%s\"; "
             "expected \"cause\" or \"effect\"", w.path, w.line, q);
    for (size_t c = 0; x && c < sizeof XCOPA_CONNECTORS / sizeof XCOPA_CONNECTORS[0]; c++)
      if (!strcmp(name, XCOPA_CONNECTORS[c][0])) conn[0] = XCOPA_CONNECTORS[c][1], conn[1] = XCOPA_CONNECTORS[c][2];
    char *premise = strip(str_field(j, "premise", w));
    size_t *off;
    const size_t np = cp_offsets(premise, &off);
    zt_strbuf_put(&t, premise, np ? off[np - 1] : 0); /* premise.strip()[:-1]: the period dropped */
    free(off);
    free(premise);
    puts_(&t, " ");
    puts_(&t, conn[q[0] != 'c']);
    d->n_choices = 2;
    d->choices = zt_malloc(2 * sizeof(char *), "choices");
    for (int c = 0; c < 2; c++) { /* [" " +] choice[0].lower() + choice[1:] (XCOPA's without the space) */
      const char *ch = str_field(j, c ? "choice2" : "choice1", w);
      zt_check(ch[0] != 0, "bad task file", "%s:%ld: \"choice%d\" is empty", w.path, w.line, c + 1);
      zt_strbuf o = {0};
      if (!x) puts_(&o, " ");
      put_lower_first(&o, ch);
      d->choices[c] = take(&o);
    }
    d->gold = int_field(j, "label", w);
    /* copa's doc_to_target is the gold choice's text: the harness's gold is choices.index(it), the first equal one
     * (XCOPA's is the label itself) */
    if (!x && d->gold == 1 && !strcmp(d->choices[0], d->choices[1])) d->gold = 0;
  } else if (!strcmp(name, "multirc")) { /* super_glue/multirc/default.yaml */
    puts_(&t, str_field(j, "paragraph", w));
    puts_(&t, "\nQuestion: ");
    puts_(&t, str_field(j, "question", w));
    puts_(&t, "\nAnswer:");
    const char *ans = str_field(j, "answer", w);
    /* the YAML's choices are the Jinja-rendered Python literal ['''{{answer}}\nIs the answer correct? yes''', ...]
     * that the harness reads with ast.literal_eval: a backslash or a quote at its end would change or break it */
    zt_check(!strchr(ans, '\\') && !strstr(ans, "'''") && (!*ans || ans[strlen(ans) - 1] != '\''), "bad task file",
             "%s:%ld: \"answer\" holds a backslash or ''' or ends in a quote: the harness reads the choices as the "
             "Python literal '''{{answer}}\\nIs the answer correct? yes''', which would change or fail on it", w.path,
             w.line);
    d->n_choices = 2;
    d->choices = zt_malloc(2 * sizeof(char *), "choices");
    for (int c = 0; c < 2; c++) {
      zt_strbuf o = {0};
      puts_(&o, ans);
      puts_(&o, c ? "\nIs the answer correct? no" : "\nIs the answer correct? yes");
      d->choices[c] = take(&o);
    }
    d->gold = int_field(j, "label", w); /* doc_to_target: label, an index into [yes, no], as the YAML has it */
  } else if (!strcmp(name, "wic")) { /* super_glue/wic/default.yaml */
    const char *s1 = str_field(j, "sentence1", w);
    char *word = cp_slice(s1, int_field(j, "start1", w), int_field(j, "end1", w)); /* sentence1[start1:end1] */
    puts_(&t, "Sentence 1: ");
    puts_(&t, s1);
    puts_(&t, "\nSentence 2: ");
    puts_(&t, str_field(j, "sentence2", w));
    puts_(&t, "\nQuestion: Is the word '");
    puts_(&t, word);
    puts_(&t, "' used in the same way in the two sentences above?\nAnswer:");
    free(word);
    fixed_choices(d, 2, NO_YES);
    d->gold = int_field(j, "label", w);
  } else if (!strcmp(name, "wsc")) { /* super_glue/wsc/preprocess_wsc.py default_doc_to_text */
    const char *raw = str_field(j, "text", w), *pron = str_field(j, "span2_text", w);
    char *pre = first_words(raw, int_field(j, "span2_index", w));
    size_t *o1, *o2;
    const size_t lp = cp_offsets(pre, &o1), lq = cp_offsets(pron, &o2);
    free(o1);
    free(o2);
    char *post = cp_slice(raw, (int64_t)(lp + lq + 1), INT64_MAX); /* raw[len(pre) + len(span2_text) + 1:] */
    zt_strbuf q = {0};
    puts_(&q, pre);
    puts_(&q, " *");
    puts_(&q, pron);
    puts_(&q, "*");
    puts_(&q, post);
    char *passage = general_detokenize(q.p);
    puts_(&t, "Passage: ");
    puts_(&t, passage);
    puts_(&t, "\nQuestion: In the passage above, does the pronoun \"*");
    puts_(&t, pron);
    puts_(&t, "*\" refer to \"*");
    puts_(&t, str_field(j, "span1_text", w));
    puts_(&t, "*\"?\nAnswer:");
    free(pre);
    free(post);
    free(q.p);
    free(passage);
    fixed_choices(d, 2, NO_YES);
    d->gold = int_field(j, "label", w);
  } else if (!strcmp(name, "record")) { /* super_glue/record/util.py */
    char *passage = strip(str_field(j, "passage", w));
    static const char sep[] = "\n@highlight\n"; /* initial_text, *highlights = passage.split(sep) */
    const char *p = passage, *hit = strstr(p, sep);
    zt_strbuf_put(&t, p, hit ? (size_t)(hit - p) : strlen(p));
    puts_(&t, "\n\n");
    while (hit) {
      p = hit + sizeof sep - 1;
      hit = strstr(p, sep);
      puts_(&t, "  - ");
      zt_strbuf_put(&t, p, hit ? (size_t)(hit - p) : strlen(p));
      puts_(&t, ".\n");
    }
    free(passage);
    const char *query = str_field(j, "query", w);
    char **ent, **ans;
    int ne = str_list(j, "entities", "entities", w, &ent), na = str_list(j, "answers", "answers", w, &ans);
    for (int pass = 0; pass < 2; pass++) { /* process_docs: sorted(list(set(...))) */
      char **l = pass ? ans : ent;
      int *n = pass ? &na : &ne, m = 0;
      qsort(l, (size_t)*n, sizeof(char *), cmp_str);
      for (int i = 0; i < *n; i++)
        if (m && !strcmp(l[i], l[m - 1])) free(l[i]);
        else l[m++] = l[i];
      *n = m;
    }
    d->n_choices = ne;
    d->choices = zt_malloc((size_t)ne * sizeof(char *), "choices");
    d->scores = zt_malloc((size_t)ne * 2 * sizeof(double), "scores");
    int *nat = zt_malloc((size_t)na * sizeof(int), "answers");
    char ***at = zt_malloc((size_t)na * sizeof(char **), "answers");
    for (int a = 0; a < na; a++) at[a] = squad_tokens(ans[a], &nat[a]);
    d->gold = -1;
    for (int c = 0; c < ne; c++) {
      zt_strbuf o = {0}; /* format_answer: f"  - {query}".replace("@placeholder", entity) */
      puts_(&o, "  - ");
      puts_(&o, query);
      d->choices[c] = replace(o.p, "@placeholder", ent[c]);
      free(o.p);
      if (d->gold < 0 && !strcmp(ent[c], ans[0])) d->gold = c;
      int nt; /* metric_max_over_ground_truths(compute_f1 / compute_exact, entity, answers) */
      char **et = squad_tokens(ent[c], &nt);
      d->scores[2 * c] = d->scores[2 * c + 1] = 0.0;
      for (int a = 0; a < na; a++) {
        double f1, em;
        squad_scores(et, nt, at[a], nat[a], &f1, &em);
        if (a == 0 || f1 > d->scores[2 * c]) d->scores[2 * c] = f1;
        if (a == 0 || em > d->scores[2 * c + 1]) d->scores[2 * c + 1] = em;
      }
      free_list(et, nt);
    }
    for (int a = 0; a < na; a++) free_list(at[a], nat[a]);
    free(at);
    free(nat);
    /* doc_to_target is format_answer(query, answers[0]): the few-shot examples write it, as the choice of that entity */
    zt_check(d->gold >= 0, "bad task file", "%s:%ld: the first answer \"%s\" (sorted) is not among \"entities\": "
             "ReCoRD's answers are entities of the passage, and the few-shot target is the first one's choice",
             w.path, w.line, ans[0]);
    free_list(ent, ne);
    free_list(ans, na);
  } else if (!strcmp(name, "webqs")) { /* webqs.yaml, utils.py: every accepted answer a gold choice */
    puts_(&t, "Question: ");
    puts_(&t, str_field(j, "question", w));
    puts_(&t, "\nAnswer:");
    char **ans;
    const int na = str_list(j, "answers", "answers", w, &ans);
    qsort(ans, (size_t)na, sizeof(char *), cmp_str); /* aliases.sort(): code point order is UTF-8 byte order */
    d->choices = zt_malloc((size_t)na * sizeof(char *), "choices");
    d->n_choices = 0;
    for (int i = 0; i < na; i++) /* _remove_prefixes: an alias that starts with the last one kept is dropped */
      if (d->n_choices == 0 || strncmp(ans[i], d->choices[d->n_choices - 1], strlen(d->choices[d->n_choices - 1])))
        d->choices[d->n_choices++] = dup(ans[i]);
    free_list(ans, na);
    d->gold = 0; /* doc_to_target: every choice; exact_match counts any of them */
  } else if (!strcmp(name, "triviaqa")) { /* triviaqa/default.yaml (rc.nocontext): generate_until */
    puts_(&t, "Question: ");
    puts_(&t, str_field(j, "question", w));
    puts_(&t, "?\nAnswer:");
    const cJSON *ans = field(j, "answer", w);
    zt_check(cJSON_IsObject(ans), "bad task file", "%s:%ld: \"answer\" is not an object", w.path, w.line);
    /* doc_to_target "{{answer.aliases}}": the list, in the file's order (the few-shot target is the first); an empty
     * one is refused (the harness's exact_match fails on it: np.char.lower of an empty float array) */
    d->n_choices = str_list(ans, "aliases", "answer.aliases", w, &d->choices);
    d->gold = 0;
  } else if (!strcmp(name, "nq_open")) { /* nq_open.yaml: generate_until */
    render(&t, "Q: {question}?\nA:", j, w);
    /* doc_to_target "{{answer}}": the list of answers, in the file's order (the few-shot target is the first) */
    d->n_choices = str_list(j, "answer", "answer", w, &d->choices);
    d->gold = 0;
  } else if (gsm8k_kind(name)) { /* gsm8k.yaml, gsm8k-cot.yaml, gsm8k-cot-zeroshot.yaml (main): generate_until */
    const int g = gsm8k_kind(name);
    puts_(&t, g == GSM8K_PLAIN ? "Question: " : "Q: ");
    puts_(&t, str_field(j, "question", w));
    puts_(&t, g == GSM8K_PLAIN ? "\nAnswer:" : g == GSM8K_COT ? "\nA:" : "\nA: Let's think step by step.");
    d->n_choices = 1;
    d->choices = zt_malloc(sizeof(char *), "choices");
    d->gold = 0;
    if (g != GSM8K_COT) { /* doc_to_target "{{answer}}": the whole worked answer, "#### N" at its end (exact_match
                           * compares what its regexes_to_ignore leave of it; the few-shot examples show it whole) */
      d->choices[0] = dup(str_field(j, "answer", w));
    } else if (cJSON_GetObjectItemCaseSensitive(j, "answer")) {
      /* "{{answer.split('####')[-1].strip() if answer is defined else target}}": the text after the last "####" of
       * a left-to-right split ("#####" leaves "#"), stripped */
      const char *a = str_field(j, "answer", w), *q;
      while ((q = strstr(a, "####")) != NULL) a = q + 4;
      d->choices[0] = strip(a);
    } else { /* the YAML's few-shot samples: {question, target} */
      d->choices[0] = dup(str_field(j, "target", w));
    }
    /* the rendered target when it looks like "[...]": the harness's doc_to_target reads it with ast.literal_eval
     * (a list, compared as its repr; the text itself when that fails); refused rather than guessed */
    const size_t tl = strlen(d->choices[0]);
    zt_check(tl < 2 || d->choices[0][0] != '[' || d->choices[0][tl - 1] != ']', "bad task file", "%s:%ld: the "
             "target \"%s\" is in brackets, which the harness's doc_to_target reads as a Python list literal when it "
             "parses as one; evaluate_zeroshot refuses such a GSM8K answer", w.path, w.line, d->choices[0]);
  } else if (templated(name) >= 0) {
    const int k = templated(name);
    render(&t, TEMPLATED[k].text, j, w);
    fixed_choices(d, 2, TEMPLATED[k].choices);
    d->gold = int_field(j, "label", w);
  } else if (!strcmp(name, "mnli") || !strcmp(name, "mnli_mismatch")) { /* glue/mnli/utils.py */
    static const char *const tnf[] = {"True", "Neither", "False"};
    puts_(&t, str_field(j, "premise", w));
    puts_(&t, "\nQuestion: ");
    char *h = strip(str_field(j, "hypothesis", w)); /* hypothesis.strip(), "." added unless it ends in one */
    puts_(&t, h);
    puts_(&t, h[0] && h[strlen(h) - 1] == '.' ? "" : ".");
    free(h);
    puts_(&t, " True, False or Neither?\nAnswer:");
    fixed_choices(d, 3, tnf);
    d->gold = int_field(j, "label", w);
  } else if (!strncmp(name, "truthfulqa_mc", 13)) { /* truthfulqa_mc1.yaml (mc2 includes it) */
    const int mc2 = name[13] == '2';
    puts_(&t, TRUTHFULQA_QA);
    puts_(&t, "\n\nQ: ");
    puts_(&t, str_field(j, "question", w));
    puts_(&t, "\nA:");
    const char *key = mc2 ? "mc2_targets" : "mc1_targets";
    const cJSON *tg = field(j, key, w);
    zt_check(cJSON_IsObject(tg), "bad task file", "%s:%ld: \"%s\" is not an object", w.path, w.line, key);
    char shown[32];
    snprintf(shown, sizeof shown, "%s.choices", key);
    d->n_choices = str_list(tg, "choices", shown, w, &d->choices);
    d->gold = 0; /* doc_to_target: 0 (mc1: acc is choice 0 the most likely; mc2 scores by the labels) */
    if (mc2) { /* process_results_mc2: the probability mass of the choices labelled 1 */
      const cJSON *lb = field(tg, "labels", w);
      zt_check(cJSON_IsArray(lb) && cJSON_GetArraySize(lb) == d->n_choices, "bad task file", "%s:%ld: "
               "\"mc2_targets.labels\" is not a list of %d labels (one per choice)", w.path, w.line, d->n_choices);
      d->labels = zt_malloc((size_t)d->n_choices * sizeof(int), "labels");
      int i = 0;
      for (const cJSON *e = lb->child; e; e = e->next, i++) {
        zt_check(cJSON_IsNumber(e) && (e->valuedouble == 0 || e->valuedouble == 1), "bad task file", "%s:%ld: "
                 "\"mc2_targets.labels\"[%d] is not 0 or 1", w.path, w.line, i);
        d->labels[i] = e->valuedouble == 1;
      }
    }
  } else if (!strcmp(name, "sciq")) { /* sciq.yaml */
    char *support = strip_sides(str_field(j, "support", w), 0); /* support.lstrip() */
    puts_(&t, support);
    free(support);
    puts_(&t, "\nQuestion: ");
    puts_(&t, str_field(j, "question", w));
    puts_(&t, "\nAnswer:");
    static const char *const keys[] = {"distractor1", "distractor2", "distractor3", "correct_answer"};
    const char *texts[4];
    for (int c = 0; c < 4; c++) texts[c] = str_field(j, keys[c], w);
    fixed_choices(d, 4, texts);
    d->gold = 3; /* doc_to_target: 3, correct_answer */
  } else if (!strcmp(name, "prost")) { /* corypaik_prost.yaml */
    render(&t, "{context}\nQuestion: {ex_question}\nAnswer:", j, w);
    const char *texts[4] = {str_field(j, "A", w), str_field(j, "B", w), str_field(j, "C", w), str_field(j, "D", w)};
    fixed_choices(d, 4, texts);
    d->gold = int_field(j, "label", w);
  } else if (!strcmp(name, "logiqa")) { /* logiqa/utils_logiqa.py: the prompt lists the first 4 options */
    char **opts;
    const int no = str_list(j, "options", "options", w, &opts);
    puts_(&t, "Passage: ");
    puts_(&t, str_field(j, "context", w));
    puts_(&t, "\nQuestion: ");
    puts_(&t, str_field(j, "question", w));
    puts_(&t, "\nChoices:\n");
    for (int c = 0; c < no && c < 4; c++) {
      const char letter[4] = {(char)('A' + c), '.', ' ', 0};
      puts_(&t, letter);
      puts_(&t, opts[c]);
      puts_(&t, "\n");
    }
    puts_(&t, "Answer:");
    d->n_choices = no; /* doc_to_choice "{{options}}": every option */
    d->choices = opts;
    char *label = strip(str_field(j, "label", w)); /* ["a", "b", "c", "d"].index(label.strip()) */
    const int ok = label[0] >= 'a' && label[0] <= 'd' && !label[1];
    d->gold = label[0] - 'a';
    free(label);
    zt_check(ok, "bad task file", "%s:%ld: \"label\" is \"%s\"; expected one of a, b, c, d", w.path, w.line,
             str_field(j, "label", w));
  } else if (!strcmp(name, "mathqa")) { /* mathqa.yaml */
    puts_(&t, "Question: ");
    puts_(&t, str_field(j, "Problem", w));
    puts_(&t, "\nAnswer:");
    d->n_choices = mathqa_choices(str_field(j, "options", w), &d->choices);
    const char *c = str_field(j, "correct", w); /* ['a', 'b', 'c', 'd', 'e'].index(correct) */
    zt_check(c[0] >= 'a' && c[0] <= 'e' && !c[1], "bad task file", "%s:%ld: \"correct\" is \"%s\"; expected one of "
             "a, b, c, d, e", w.path, w.line, c);
    d->gold = c[0] - 'a';
  } else if (!strcmp(name, "pubmedqa")) { /* pubmedqa.yaml, preprocess_pubmedqa.py */
    static const char *const ynm[] = {"yes", "no", "maybe"};
    const cJSON *ctxs = field(j, "CONTEXTS", w);
    zt_check(cJSON_IsArray(ctxs), "bad task file", "%s:%ld: \"CONTEXTS\" is not a list", w.path, w.line);
    puts_(&t, "Abstract: ");
    int i = 0;
    for (const cJSON *e = ctxs->child; e; e = e->next, i++) { /* "\n".join(CONTEXTS) */
      zt_check(cJSON_IsString(e) && e->valuestring, "bad task file", "%s:%ld: \"CONTEXTS\"[%d] is not a string",
               w.path, w.line, i);
      if (i) puts_(&t, "\n");
      puts_(&t, e->valuestring);
    }
    puts_(&t, "\nQuestion: ");
    puts_(&t, str_field(j, "QUESTION", w));
    puts_(&t, "\nAnswer:");
    fixed_choices(d, 3, ynm);
    const char *fd = str_field(j, "final_decision", w); /* doc_to_target: the word; gold = choices.index(it) */
    d->gold = !strcmp(fd, "yes") ? 0 : !strcmp(fd, "no") ? 1 : !strcmp(fd, "maybe") ? 2 : -1;
    zt_check(d->gold >= 0, "bad task file", "%s:%ld: \"final_decision\" is \"%s\"; expected yes, no or maybe",
             w.path, w.line, fd);
  } else if (!strncmp(name, "xnli_", 5)) { /* xnli/xnli_<lang>.yaml: doc_to_text '' (the context [eod]); each choice
                                            * the whole pair with the language's words */
    size_t l = 0;
    while (strcmp(name, XNLI_WORDS[l].task)) l++;
    const char *premise = str_field(j, "premise", w), *hypothesis = str_field(j, "hypothesis", w);
    pair_choices(d, 3, premise, XNLI_WORDS[l].right, XNLI_WORDS[l].word, hypothesis);
    d->gold = int_field(j, "label", w);
  } else if (paws_index(name) >= 0) { /* paws-x/paws_<lang>.yaml: doc_to_text '' (the context [eod]), each choice the
                                       * whole pair, target_delimiter "" */
    const int p = paws_index(name);
    char *s1 = dup(str_field(j, "sentence1", w)), *s2 = dup(str_field(j, "sentence2", w));
    if (PAWS_WORDS[p].process) { /* utils.process_docs_paraphrases (its filter, paws_dropped, came first) */
      char *a = general_detokenize(s1), *b = general_detokenize(s2);
      free(s1);
      free(s2);
      s1 = strip(a);
      s2 = strip(b);
      free(a);
      free(b);
      const size_t n1 = strlen(s1);
      if (n1 && (s1[n1 - 1] == '.' || s1[n1 - 1] == ',' || s1[n1 - 1] == ';')) s1[n1 - 1] = 0; /* its last mark */
      zt_check(s2[0] != 0, "bad task file", "%s:%ld: \"sentence2\" is whitespace only: process_docs_paraphrases "
               "lowers the first letter of what strip() leaves (the harness fails on it)", w.path, w.line);
      zt_strbuf o = {0};
      put_lower_first(&o, s2);
      free(s2);
      s2 = take(&o);
    }
    pair_choices(d, 2, s1, PAWS_WORDS[p].right, PAWS_WORDS[p].word, s2);
    free(s1);
    free(s2);
    d->gold = int_field(j, "label", w);
  } else if (!strcmp(name, "swag")) { /* swag.yaml */
    puts_(&t, str_field(j, "startphrase", w));
    const char *texts[4] = {str_field(j, "ending0", w), str_field(j, "ending1", w), str_field(j, "ending2", w),
                            str_field(j, "ending3", w)};
    fixed_choices(d, 4, texts);
    d->gold = int_field(j, "label", w);
  } else if (!strncmp(name, "storycloze_", 11) || !strncmp(name, "xstorycloze_", 12)) { /* storycloze_2016.yaml,
                                                                                      * xstorycloze/default_ar.yaml */
    static const char *const keys[] = {"input_sentence_1", "input_sentence_2", "input_sentence_3",
                                       "input_sentence_4"};
    for (int k = 0; k < 4; k++) { /* the four sentences, " "-joined */
      if (k) puts_(&t, " ");
      puts_(&t, str_field(j, keys[k], w));
    }
    const char *texts[2] = {str_field(j, "sentence_quiz1", w), str_field(j, "sentence_quiz2", w)};
    fixed_choices(d, 2, texts);
    const int e = int_field(j, "answer_right_ending", w); /* doc_to_target "{{answer_right_ending-1}}" */
    zt_check(e == 1 || e == 2, "bad task file", "%s:%ld: \"answer_right_ending\" is %d; expected 1 or 2 "
             "(sentence_quiz1 or sentence_quiz2)", w.path, w.line, e);
    d->gold = e - 1;
  } else if (!strncmp(name, "headqa_", 7)) { /* headqa_en.yaml */
    render(&t, "Question: {qtext}\nAnswer:", j, w);
    const cJSON *a = field(j, "answers", w); /* doc_to_choice "{{answers|map(attribute='atext')|list}}" */
    zt_check(cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0, "bad task file", "%s:%ld: \"answers\" is not a "
             "non-empty list of {\"aid\", \"atext\"}", w.path, w.line);
    d->n_choices = cJSON_GetArraySize(a);
    d->choices = zt_malloc((size_t)d->n_choices * sizeof(char *), "choices");
    int i = 0;
    for (const cJSON *e = a->child; e; e = e->next, i++) {
      const cJSON *at = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "atext") : NULL;
      zt_check(cJSON_IsString(at) && at->valuestring, "bad task file", "%s:%ld: \"answers\"[%d] has no \"atext\" "
               "string", w.path, w.line, i);
      d->choices[i] = dup(at->valuestring);
    }
    const int ra = int_field(j, "ra", w); /* doc_to_target "{{ra - 1}}" */
    zt_check(ra >= 1, "bad task file", "%s:%ld: \"ra\" is %d; expected the right answer's number, from 1", w.path,
             w.line, ra);
    d->gold = ra - 1;
  } else if (!strncmp(name, "qa4mre_", 7)) { /* qa4mre_2011.yaml */
    char *doc = strip(str_field(j, "document_str", w)); /* "{{document_str.strip()}}\nQuestion: ..." */
    puts_(&t, doc);
    free(doc);
    puts_(&t, "\nQuestion: ");
    puts_(&t, str_field(j, "question_str", w));
    puts_(&t, "\nAnswer:");
    const cJSON *o = field(j, "answer_options", w); /* doc_to_choice "{{answer_options.answer_str}}" */
    zt_check(cJSON_IsObject(o), "bad task file", "%s:%ld: \"answer_options\" is not an object {\"answer_id\": "
             "[...], \"answer_str\": [...]}", w.path, w.line);
    d->n_choices = str_list(o, "answer_str", "answer_options.answer_str", w, &d->choices);
    const int id = int_field(j, "correct_answer_id", w); /* doc_to_target "{{correct_answer_id|int - 1}}" */
    zt_check(id >= 1, "bad task file", "%s:%ld: \"correct_answer_id\" is %d; expected the answer's number, from 1",
             w.path, w.line, id);
    d->gold = id - 1;
  } else if (!strcmp(name, "wsc273")) { /* wsc273/default.yaml and utils.py process_doc: partial scoring */
    char *text = replace(str_field(j, "text", w), "  ", " ");
    const char *pronoun = str_field(j, "pronoun", w);
    const int loc = int_field(j, "pronoun_loc", w);
    char **opts;
    const int no = str_list(j, "options", "options", w, &opts);
    zt_check(no >= 2, "bad task file", "%s:%ld: \"options\" has %d entry; the choices are options[0] and "
             "options[1]", w.path, w.line, no);
    size_t nc;
    uint32_t *cp = code_points(text, strlen(text), &nc);
    int64_t at = (int64_t)loc - 2; /* text[pronoun_loc - 2], negative indices from the end as Python's */
    if (at < 0) at += (int64_t)nc;
    zt_check(at >= 0 && at < (int64_t)nc, "bad task file", "%s:%ld: \"pronoun_loc\" is %d: text[%d] is outside the "
             "%zu-character text (utils.py looks there for the sentence's start)", w.path, w.line, loc, loc - 2, nc);
    const int sentence_start = cp[at] == '.';
    free(cp);
    char low[8] = "";
    for (int k = 0; k < 7 && pronoun[k]; k++) /* pronoun.lower(): only ASCII letters can make these words */
      low[k] = pronoun[k] >= 'A' && pronoun[k] <= 'Z' ? (char)(pronoun[k] + 32) : pronoun[k], low[k + 1] = 0;
    const int possessive = strlen(pronoun) < 7 && (!strcmp(low, "my") || !strcmp(low, "his") ||
                                                   !strcmp(low, "her") || !strcmp(low, "our") || !strcmp(low, "their"));
    static const char *const upper[] = {"A", "An", "The", "She", "He", "It", "They", "My", "His", "Her", "Their"};
    char *prefix = cp_slice(text, 0, loc); /* text[:pronoun_loc] */
    d->n_choices = 2;
    d->choices = zt_malloc(2 * sizeof(char *), "choices");
    for (int c = 0; c < 2; c++) { /* __normalize_option: "'s" after a possessive; the option's first word lowered
                                   * (every occurrence, str.replace) unless the pronoun starts a sentence */
      zt_strbuf o = {0};
      puts_(&o, opts[c]);
      if (possessive) puts_(&o, "'s");
      char *opt = take(&o), *first = first_words(opt, 1);
      zt_check(first[0] != 0, "bad task file", "%s:%ld: \"options\"[%d] has no words (utils.py takes its first)",
               w.path, w.line, c);
      int is_upper = 0;
      for (size_t k = 0; k < sizeof upper / sizeof upper[0]; k++) is_upper |= !strcmp(first, upper[k]);
      if (!sentence_start && is_upper) {
        char lowered[8] = ""; /* first is one of upper[]: ASCII, at most 5 letters */
        for (int k = 0; first[k]; k++)
          lowered[k] = first[k] >= 'A' && first[k] <= 'Z' ? (char)(first[k] + 32) : first[k];
        char *r = replace(opt, first, lowered);
        free(opt);
        opt = r;
      }
      zt_strbuf ch = {0};
      puts_(&ch, prefix);
      puts_(&ch, opt);
      d->choices[c] = take(&ch);
      free(opt);
      free(first);
    }
    free(prefix);
    size_t *off; /* doc_to_target: text[pronoun_loc + len(pronoun):] (code points) */
    const size_t npron = cp_offsets(pronoun, &off);
    free(off);
    d->target = cp_slice(text, (int64_t)loc + (int64_t)npron, INT64_MAX);
    free(text);
    free_list(opts, no);
    d->gold = int_field(j, "label", w); /* doc_to_text: label, the gold context's index */
  } else if (mmlu_cont_index(name) >= 0) { /* mmlu/continuation/_continuation_template_yaml */
    char *q = strip(str_field(j, "question", w)); /* "Question: {{question.strip()}}\nAnswer:" */
    puts_(&t, "Question: ");
    puts_(&t, q);
    free(q);
    puts_(&t, "\nAnswer:");
    d->n_choices = str_list(j, "choices", "choices", w, &d->choices); /* doc_to_choice "{{choices}}": every one */
    const cJSON *a = field(j, "answer", w); /* doc_to_target "{{answer}}": a digit string is the choice's index */
    zt_check(!cJSON_IsString(a) || (a->valuestring[0] && strspn(a->valuestring, "0123456789") ==
             strlen(a->valuestring)), "bad task file", "%s:%ld: \"answer\" is \"%s\"; a continuation task's target is "
             "the answer's index (cais/mmlu's 0-3: the harness would look a letter up among the choices' texts)",
             w.path, w.line, a->valuestring);
    d->gold = int_field(j, "answer", w);
  } else if (mmlu_index(name) >= 0) { /* mmlu/default/_default_template_yaml */
    char *q = strip(str_field(j, "question", w)); /* question.strip() */
    puts_(&t, q);
    free(q);
    char **c;
    const int nc = str_list(j, "choices", "choices", w, &c);
    zt_check(nc >= 4, "bad task file", "%s:%ld: \"choices\" has %d entries; the prompt shows choices[0] to "
             "choices[3]", w.path, w.line, nc);
    lettered(&t, d, c, 4); /* doc_to_target: answer, the letter's index */
    free_list(c, nc);
    const cJSON *a = field(j, "answer", w); /* cais/mmlu's ClassLabel: 0-3; a letter is choices.index(letter) */
    if (cJSON_IsString(a) && a->valuestring) {
      const char *l = a->valuestring;
      zt_check(l[0] >= 'A' && l[0] <= 'D' && !l[1], "bad task file", "%s:%ld: \"answer\" is \"%s\"; expected 0-3 "
               "or one of the letters A, B, C, D (the harness scores another string as never right)", w.path, w.line,
               l);
      d->gold = l[0] - 'A';
    } else {
      d->gold = int_field(j, "answer", w);
    }
  } else {
    zt_fatal("bad task", "%s: not a supported task", name);
  }
  zt_check(d->gold >= 0 && d->gold < d->n_choices, "bad task file", "%s:%ld: the gold label %d is outside the %d "
           "choices", w.path, w.line, d->gold, d->n_choices);
  d->text = take(&t);
}

/* PAWS-X's process_docs_paraphrases filter (en, de, es, fr): a document whose sentence1 or sentence2 is null or ""
 * is dropped */
static int paws_dropped(const char *name, const cJSON *j) {
  const int p = paws_index(name);
  if (p < 0 || !PAWS_WORDS[p].process) return 0;
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "sentence1"), *b = cJSON_GetObjectItemCaseSensitive(j, "sentence2");
  return cJSON_IsNull(a) || cJSON_IsNull(b) || (cJSON_IsString(a) && !a->valuestring[0]) ||
         (cJSON_IsString(b) && !b->valuestring[0]);
}

/* room for one more document in t (the capacity: 16, then doubled at each power of two) */
static void grow_docs(zt_mc_task *t) {
  if (t->n != 0 && (t->n < 16 || (t->n & (t->n - 1)) != 0)) return;
  const size_t cap = t->n ? 2 * (size_t)t->n : 16;
  zt_mc_doc *nd = realloc(t->docs, cap * sizeof *nd);
  zt_check(nd != NULL, "out of memory", "%s documents: %zu", t->name, cap);
  t->docs = nd;
}

void zt_mc_load_split(zt_mc_task *ts, int n, const char *key, const char *path, const char *flag,
                      int64_t *set_aside) {
  const char *why;
  const int family = family_of(ts[0].name), mmlu = family == FAMILY_MMLU || family == FAMILY_MMLU_CONT;
  const char *route = mmlu ? "subject" : "UID"; /* the field that routes each document */
  zt_check(n == 1 || family, "bad task", "%s: one file for %d tasks", key, n);
  for (int k = 0; k < n; k++) {
    const char *name = ts[k].name;
    zt_check(zt_mc_supported(name, &why), "unsupported argument", "%s %s=%s: %s is not a supported task", flag, key,
             path, name);
    zt_check(family_of(name) == family, "bad task", "%s: %s is not of %s's family", key, name, ts[0].name);
    const char *group = ts[k].group;
    memset(&ts[k], 0, sizeof ts[k]);
    ts[k].name = name;
    ts[k].group = group;
  }
  *set_aside = 0;
  zt_mc_task *t = &ts[0]; /* holds the file's bytes and the current line's JSON while it is read */
  FILE *f = fopen(path, "rb");
  zt_check(f != NULL, "bad task file", "%s %s=%s: cannot open: %s", flag, key, path, strerror(errno));
  zt_strbuf all = {0};
  char chunk[65536];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) zt_strbuf_put(&all, chunk, got);
  const int rerr = ferror(f);
  fclose(f);
  t->raw = all.p;
  zt_check(!rerr, "bad task file", "%s %s=%s: read error", flag, key, path);
  const char *buf = all.p ? all.p : "";
  const size_t size = all.n;
  long no = 0;
  int64_t lines = 0;
  for (size_t pos = 0; pos < size;) {
    const char *line = buf + pos, *nl = memchr(line, '\n', size - pos);
    const size_t len = nl ? (size_t)(nl - line) + 1 : size - pos;
    pos += len;
    no++;
    const where w = {path, no};
    zt_check(memchr(line, 0, len) == NULL, "bad task file", "%s:%ld: a NUL byte in the line", path, no);
    for (size_t e = 0; e + 5 < len; e++) /* an escaped U+0000 would cut the C string it is decoded into */
      if (line[e] == '\\') {
        zt_check(line[e + 1] != 'u' || strncmp(line + e + 2, "0000", 4) != 0, "bad task file", "%s:%ld: a string "
                 "holds U+0000 (\\u0000 at column %zu), which evaluate_zeroshot cannot carry", path, no, e + 1);
        e++;
      }
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r' || line[k] == '\n')) k++;
    zt_check(k < len, "bad task file", "%s:%ld: empty line (each line must be one JSON object: a %s document)", path,
             no, key);
    cJSON *j = cJSON_ParseWithLength(line, len);
    t->json = j;
    if (!j) {
      const char *at = cJSON_GetErrorPtr();
      const long col = at && at >= line && at <= line + len ? (long)(at - line) + 1 : 0;
      zt_fatal("bad task file", "%s:%ld: not valid JSON (near column %ld); each line must be one JSON object: a %s "
               "document", path, no, col, key);
    }
    zt_check(cJSON_IsObject(j), "bad task file", "%s:%ld: not a JSON object (a %s document)", path, no, key);
    lines++;
    zt_mc_task *to = t;
    if (family) { /* the task of its subject (cais/mmlu's "subject" field) or phenomenon (blimp's "UID") */
      const char *value = str_field(j, route, w);
      char task[96];
      snprintf(task, sizeof task, "%s%s", family_prefix(family), value);
      const int ok = strlen(value) < 80 && family_of(task) == family;
      zt_check(ok || !mmlu, "bad task file", "%s:%ld: \"subject\" is \"%s\", not one of MMLU's 57 subjects (cais/mmlu's "
               "configs: abstract_algebra, anatomy, ..., world_religions)", path, no, value);
      zt_check(ok, "bad task file", "%s:%ld: \"UID\" is \"%s\", not one of BLiMP's 67 phenomena (the blimp dataset's "
               "configs: adjunct_island, anaphor_gender_agreement, ..., wh_vs_that_with_gap_long_distance)", path, no,
               value);
      to = NULL;
      for (int q = 0; q < n && !to; q++)
        if (!strcmp(ts[q].name, task)) to = &ts[q];
    }
    if (to && paws_dropped(to->name, j)) {
      to->filtered++;
    } else if (to) {
      grow_docs(to);
      memset(&to->docs[to->n], 0, sizeof to->docs[to->n]);
      build_doc(&to->docs[to->n], to->name, j, w);
      to->n++;
    } else {
      (*set_aside)++;
    }
    cJSON_Delete(j);
    t->json = NULL;
  }
  free(all.p);
  t->raw = NULL;
  zt_check(lines > 0, "bad task file", "%s %s=%s: no documents (an empty file)", flag, key, path);
  zt_check(n > 1 || ts[0].n > 0 || !ts[0].filtered, "bad task file", "%s %s=%s: each of its %lld documents has an "
           "empty sentence1 or sentence2, which the harness's process_docs drops", flag, key, path, (long long)lines);
  for (int q = 0; q < n; q++)
    zt_check(ts[q].n > 0, "bad task file", "%s %s=%s: none of its %lld documents is of %s \"%s\"%s", flag, key,
             path, (long long)lines, route, ts[q].name + strlen(family_prefix(family)),
             n > 1 ? (mmlu ? " (the group needs each of its subjects)" : " (the group needs each of its phenomena)") : "");
}

void zt_mc_load(zt_mc_task *t, const char *name, const char *path, const char *flag) {
  int64_t aside;
  t->name = name;
  t->group = NULL;
  zt_mc_load_split(t, 1, name, path, flag, &aside);
}

void zt_mc_free(zt_mc_task *t) {
  free(t->raw);
  cJSON_Delete(t->json);
  for (int64_t i = 0; i < t->n; i++) {
    free(t->docs[i].text);
    free(t->docs[i].target);
    free(t->docs[i].scores);
    free(t->docs[i].labels);
    free_list(t->docs[i].choices, t->docs[i].n_choices);
  }
  free(t->docs);
  memset(t, 0, sizeof *t);
}

/* gsm8k-cot.yaml's fewshot_config.samples (sampler first_n): the 8 chain-of-thought examples, {question, target} */
static const char *const GSM8K_COT_SAMPLES[][2] = {
    {"There are 15 trees in the grove. Grove workers will plant trees in the grove today. After they are done, "
     "there will be 21 trees. How many trees did the grove workers plant today?",
     "There are 15 trees originally. Then there were 21 trees after some more were planted. So there must have been "
     "21 - 15 = 6. The answer is 6."},
    {"If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the parking lot?",
     "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5."},
    {"Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they have left in total?",
     "Originally, Leah had 32 chocolates. Her sister had 42. So in total they had 32 + 42 = 74. After eating 35, "
     "they had 74 - 35 = 39. The answer is 39."},
    {"Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 lollipops. How many lollipops did "
     "Jason give to Denny?",
     "Jason started with 20 lollipops. Then he had 12 after giving some to Denny. So he gave Denny 20 - 12 = 8. The "
     "answer is 8."},
    {"Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How many toys does he have "
     "now?",
     "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, then that is 4 more toys. 5 + 4 = 9. "
     "The answer is 9."},
    {"There were nine computers in the server room. Five more computers were installed each day, from monday to "
     "thursday. How many computers are now in the server room?",
     "There were originally 9 computers. For each of 4 days, 5 more computers were added. So 5 * 4 = 20 computers "
     "were added. 9 + 20 is 29. The answer is 29."},
    {"Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On wednesday, he lost 2 more. How many golf "
     "balls did he have at the end of wednesday?",
     "Michael started with 58 golf balls. After losing 23 on tuesday, he had 58 - 23 = 35. After losing 2 more, he "
     "had 35 - 2 = 33 golf balls. The answer is 33."},
    {"Olivia has $23. She bought five bagels for $3 each. How much money does she have left?",
     "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 dollars. So she has 23 - 15 dollars "
     "left. 23 - 15 is 8. The answer is 8."},
};

int zt_mc_fixed_fewshot(zt_mc_task *pool, const char *name) {
  memset(pool, 0, sizeof *pool);
  if (gsm8k_kind(name) != GSM8K_COT) return 0;
  pool->name = name;
  pool->n = (int64_t)(sizeof GSM8K_COT_SAMPLES / sizeof GSM8K_COT_SAMPLES[0]);
  pool->docs = zt_malloc((size_t)pool->n * sizeof(zt_mc_doc), "few-shot samples");
  memset(pool->docs, 0, (size_t)pool->n * sizeof(zt_mc_doc));
  for (int64_t i = 0; i < pool->n; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "question", GSM8K_COT_SAMPLES[i][0]);
    cJSON_AddStringToObject(j, "target", GSM8K_COT_SAMPLES[i][1]);
    build_doc(&pool->docs[i], name, j, (where){"gsm8k-cot.yaml fewshot_config.samples", (long)i + 1});
    cJSON_Delete(j);
  }
  return 1;
}

int zt_mc_first_n(const char *name) { return gsm8k_kind(name) == GSM8K_COT || subject_index(name) >= 0; }

const char *zt_mc_fewshot_split(const char *name) { /* Task.fewshot_docs: training, else validation, else test */
  static const char *const validation[] = {"mc_taco", "storycloze_", "xcopa_", "arithmetic_", "lambada_standard"};
  static const char *const test[] = {"prost", "wsc273", "xwinograd_", "qa4mre_", "race", "lambada_openai"};
  if (subject_index(name) >= 0) return "dev split";
  for (size_t i = 0; i < sizeof validation / sizeof validation[0]; i++)
    if (!strncmp(name, validation[i], strlen(validation[i])))
      return !strncmp(name, "arithmetic_", 11) ? "validation split (its only one)" : "validation split";
  for (size_t i = 0; i < sizeof test / sizeof test[0]; i++)
    if (!strncmp(name, test[i], strlen(test[i]))) return "test split (its only one; a document is not its own example)";
  return "training split";
}

/* ---- Python's random ------------------------------------------------------------------------------------------ */
static void mt_init(zt_pyrandom *r, uint32_t s) {
  r->mt[0] = s;
  for (int i = 1; i < 624; i++) r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
  r->mti = 624;
}

void zt_pyrandom_seed(zt_pyrandom *r, uint32_t seed) { /* init_by_array(key = [seed]) */
  mt_init(r, 19650218u);
  int i = 1, j = 0;
  for (int k = 624; k; k--) {
    r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1664525u)) + seed + (uint32_t)j;
    i++;
    j = 0; /* one key word */
    if (i >= 624) {
      r->mt[0] = r->mt[623];
      i = 1;
    }
  }
  for (int k = 623; k; k--) {
    r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
    i++;
    if (i >= 624) {
      r->mt[0] = r->mt[623];
      i = 1;
    }
  }
  r->mt[0] = 0x80000000u;
}

uint32_t zt_pyrandom_u32(zt_pyrandom *r) {
  static const uint32_t mag01[2] = {0u, 0x9908b0dfu};
  if (r->mti >= 624) {
    int kk;
    uint32_t y;
    for (kk = 0; kk < 624 - 397; kk++) {
      y = (r->mt[kk] & 0x80000000u) | (r->mt[kk + 1] & 0x7fffffffu);
      r->mt[kk] = r->mt[kk + 397] ^ (y >> 1) ^ mag01[y & 1u];
    }
    for (; kk < 623; kk++) {
      y = (r->mt[kk] & 0x80000000u) | (r->mt[kk + 1] & 0x7fffffffu);
      r->mt[kk] = r->mt[kk + (397 - 624)] ^ (y >> 1) ^ mag01[y & 1u];
    }
    y = (r->mt[623] & 0x80000000u) | (r->mt[0] & 0x7fffffffu);
    r->mt[623] = r->mt[396] ^ (y >> 1) ^ mag01[y & 1u];
    r->mti = 0;
  }
  uint32_t y = r->mt[r->mti++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

/* _randbelow_with_getrandbits(n) for n < 2^32: getrandbits(n.bit_length()) until below n */
static int64_t randbelow(zt_pyrandom *r, int64_t n) {
  if (n <= 0) return 0;
  int k = 0;
  while (k < 63 && ((int64_t)1 << k) <= n) k++;
  zt_check(k <= 32, "few-shot sampler", "a pool of %lld documents (at most 2^32 - 1)", (long long)n);
  for (;;) {
    const int64_t v = (int64_t)(zt_pyrandom_u32(r) >> (32 - k));
    if (v < n) return v;
  }
}

void zt_pyrandom_sample(zt_pyrandom *r, int64_t n, int64_t k, int64_t *out) {
  int64_t setsize = 21;
  if (k > 5) setsize += (int64_t)pow(4.0, ceil(log((double)(k * 3)) / log(4.0)));
  if (n <= setsize) {
    int64_t *pool = zt_malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t), "sampler");
    for (int64_t i = 0; i < n; i++) pool[i] = i;
    for (int64_t i = 0; i < k; i++) {
      const int64_t j = randbelow(r, n - i);
      out[i] = pool[j];
      pool[j] = pool[n - i - 1];
    }
    free(pool);
  } else {
    for (int64_t i = 0; i < k; i++) {
      int64_t j;
      for (;;) {
        j = randbelow(r, n);
        int seen = 0;
        for (int64_t q = 0; q < i && !seen; q++) seen = out[q] == j;
        if (!seen) break;
      }
      out[i] = j;
    }
  }
}

/* ---- generate_until's scoring (triviaqa, gsm8k) ------------------------------------------------------------ */
/* A NumPy unicode element ends at its last non-NUL code point. */
static size_t np_len(const uint32_t *cp, size_t n) {
  while (n > 0 && cp[n - 1] == 0) n--;
  return n;
}

/* exact_match_hf_evaluate's ignore_case (and ignore_punctuation when punct), on one element of an array whose
 * itemsize is `width` code points: np.char.lower (str.lower of the element, final sigma included, stored back cut to
 * the width), then np.char.translate deleting string.punctuation. out has room for 3 n. */
static size_t em_normalize(const uint32_t *cp, size_t n, size_t width, int punct, uint32_t *out) {
  n = np_len(cp, n);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t o[3];
    const int m = zt_unicode_lower_at(cp, n, i, o);
    for (int q = 0; q < m; q++) out[k++] = o[q];
  }
  k = np_len(out, k < width ? k : width);
  if (!punct) return k;
  size_t w = 0;
  for (size_t i = 0; i < k; i++)
    if (!(out[i] && out[i] < 128 && strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", (int)out[i]))) out[w++] = out[i];
  return np_len(out, w);
}

static int same_cps(const uint32_t *a, size_t na, const uint32_t *b, size_t nb) {
  return na == nb && (na == 0 || !memcmp(a, b, na * sizeof(uint32_t)));
}

/* nq_open.yaml's regexes_to_ignore "\\b(?:The |the |An |A |The |a |an )" as re.sub(pattern, "", s[0..n)): each
 * alternative, tried in order, removed where it starts a word (the code point before it, in the original string, not
 * a word character: Python's \\b, Unicode \\w); malloc'd, its length in *out_n */
static char *drop_articles(const char *s, size_t n, size_t *out_n) {
  static const char *const alts[] = {"The ", "the ", "An ", "A ", "The ", "a ", "an "};
  zt_strbuf o = {0};
  uint32_t prev = ' ';
  for (size_t i = 0; i < n;) {
    size_t hit = 0;
    for (size_t a = 0; !py_word(prev) && !hit && a < sizeof alts / sizeof alts[0]; a++)
      if (n - i >= strlen(alts[a]) && !memcmp(s + i, alts[a], strlen(alts[a]))) hit = strlen(alts[a]);
    if (hit) {
      prev = ' ';
      i += hit;
      continue;
    }
    size_t used;
    prev = zt_utf8_decode((const uint8_t *)s + i, n - i, &used);
    zt_strbuf_put(&o, s + i, used);
    i += used;
  }
  return zt_strbuf_take(&o, out_n);
}

static double triviaqa_score(const zt_mc_doc *d, const char *text, size_t len, int articles) {
  /* remove_whitespace: resp.lstrip(); take_first: the one response */
  int k;
  while (len > 0 && (k = zt_utf8_space(text, len)) > 0) text += k, len -= (size_t)k;
  /* nq_open: its regexes_to_ignore first, on the strings as Python holds them */
  char *cut = articles ? drop_articles(text, len, &len) : NULL;
  if (cut) text = cut;
  /* process_results with multiple targets: exact_match(references=aliases, predictions=[pred] * len(aliases)) > 0:
   * the predictions array's itemsize is the prediction's length, the references' the longest alias's */
  size_t np, width = 1;
  uint32_t *pred = code_points(text, len, &np);
  free(cut);
  uint32_t **al = zt_malloc((size_t)d->n_choices * sizeof(uint32_t *), "answer");
  size_t *nal = zt_malloc((size_t)d->n_choices * sizeof(size_t), "answer");
  for (int a = 0; a < d->n_choices; a++) {
    size_t n = strlen(d->choices[a]);
    char *c = articles ? drop_articles(d->choices[a], n, &n) : NULL;
    al[a] = code_points(c ? c : d->choices[a], n, &nal[a]);
    free(c);
    if (nal[a] > width) width = nal[a];
  }
  uint32_t *pn = zt_malloc((3 * np + 1) * sizeof(uint32_t), "answer");
  const size_t pl = em_normalize(pred, np, np > 0 ? np : 1, 1, pn);
  int hit = 0;
  for (int a = 0; a < d->n_choices; a++) {
    uint32_t *an = zt_malloc((3 * nal[a] + 1) * sizeof(uint32_t), "answer");
    const size_t l = em_normalize(al[a], nal[a], width, 1, an);
    hit |= same_cps(an, l, pn, pl);
    free(an);
    free(al[a]);
  }
  free(al), free(nal), free(pred), free(pn);
  return hit ? 1.0 : 0.0;
}

/* The GSM8K tasks' regex filters on the generated text (the patterns' characters are ASCII, so bytes do).
 * strict-match: re.findall(r"#### (\-?[0-9\.\,]+)")[0] (gsm8k), re.findall(r"The answer is (\-?[0-9\.\,]+).")[0]
 * (the CoT tasks: the final "." is any character but "\n", so the greedy run gives back its last character when
 * nothing else follows it); flexible-extract: the last of re.findall(r"(-?[$0-9.,]{2,})|(-?[0-9]+)"), its non-empty
 * group. "[invalid]" when nothing matches. Sets *at and returns the match's length. */
static int in_run(char c, int dollar) { return (c >= '0' && c <= '9') || c == '.' || c == ',' || (dollar && c == '$'); }
static size_t run_of(const char *s, size_t n, size_t i, int dollar) {
  size_t j = i;
  while (j < n && in_run(s[j], dollar)) j++;
  return j - i;
}
static size_t digits_of(const char *s, size_t n, size_t i) {
  size_t j = i;
  while (j < n && s[j] >= '0' && s[j] <= '9') j++;
  return j - i;
}
static size_t gsm8k_filter(const char *s, size_t n, int cot, int flexible, const char **at) {
  static const char invalid[] = "[invalid]";
  const char *const lead = cot ? "The answer is " : "#### ";
  const size_t ll = strlen(lead);
  size_t last_at = 0, last_len = 0;
  int found = 0;
  for (size_t i = 0; i < n;) {
    size_t start = i, len = 0;
    if (!flexible) { /* the lead, then "-" (kept only if a run follows it) and a run of [0-9.,] */
      if (n - i >= ll && !memcmp(s + i, lead, ll)) {
        start = i + ll;
        const int neg = start < n && s[start] == '-' && run_of(s, n, start + 1, 0) > 0;
        len = run_of(s, n, start + neg, 0);
        if (len) len += (size_t)neg;
        /* the CoT pattern's final ".": the character after the run, or the run's last one (a run of one then fails,
         * "-" included: without the "-" no run starts there) */
        if (cot && len && (start + len == n || s[start + len] == '\n'))
          len = len - (size_t)neg >= 2 ? len - 1 : 0;
      }
      if (len) {
        *at = s + start;
        return len;
      }
      i++;
      continue;
    }
    /* alternative 1: "-"? then 2 or more of [$0-9.,], greedy; else alternative 2: "-"? then digits */
    const int neg = s[i] == '-';
    size_t r = run_of(s, n, i + neg, 1);
    if (r >= 2) len = r + (size_t)neg;
    else if ((r = digits_of(s, n, i + neg)) >= 1) len = r + (size_t)neg;
    if (len) {
      last_at = start, last_len = len, found = 1;
      i += len;
    } else {
      i++;
    }
  }
  if (found) {
    *at = s + last_at;
    return last_len;
  }
  *at = invalid;
  return sizeof invalid - 1;
}

/* the GSM8K tasks' regexes_to_ignore, in order, on one string (each re.sub's result goes through a NumPy array,
 * which drops trailing NULs before the next): ",", "\$", "(?s).*#### " (everything up to the last "#### "), "\.$" (a
 * "." at the end or before a final "\n"). Returns the length; the last result keeps its trailing NULs (the array's
 * itemsize). */
static size_t gsm8k_ignore(uint32_t *cp, size_t n) {
  for (int pass = 0; pass < 4; pass++) {
    if (pass) n = np_len(cp, n);
    if (pass < 2) {
      size_t w = 0;
      for (size_t i = 0; i < n; i++)
        if (cp[i] != (pass ? '$' : ',')) cp[w++] = cp[i];
      n = w;
    } else if (pass == 2) {
      for (size_t i = n >= 5 ? n - 5 + 1 : 0; i-- > 0;)
        if (cp[i] == '#' && cp[i + 1] == '#' && cp[i + 2] == '#' && cp[i + 3] == '#' && cp[i + 4] == ' ') {
          memmove(cp, cp + i + 5, (n - i - 5) * sizeof(uint32_t));
          n -= i + 5;
          break;
        }
    } else if (n >= 1 && cp[n - 1] == '.') {
      n--;
    } else if (n >= 2 && cp[n - 1] == '\n' && cp[n - 2] == '.') {
      cp[n - 2] = '\n';
      n--;
    }
  }
  return n;
}

/* the GSM8K tasks' exact_match of one string (the regexes_to_ignore, then ignore_case) into out (room for 3 n + 1);
 * its length */
static size_t gsm8k_normalize(const char *s, size_t n, uint32_t **out) {
  size_t nc;
  uint32_t *cp = code_points(s, n, &nc);
  nc = gsm8k_ignore(cp, nc);
  *out = zt_malloc((3 * nc + 1) * sizeof(uint32_t), "answer");
  const size_t l = em_normalize(cp, nc, nc > 0 ? nc : 1, 0, *out);
  free(cp);
  return l;
}

void zt_mc_score_generation(const zt_mc_task *t, int64_t i, const char *text, size_t len, double scores[2]) {
  const zt_mc_doc *d = &t->docs[i];
  scores[1] = NAN;
  if (!gsm8k_kind(t->name)) {
    scores[0] = triviaqa_score(d, text, len, !strcmp(t->name, "nq_open"));
    return;
  }
  uint32_t *ref;
  const size_t rl = gsm8k_normalize(d->choices[0], strlen(d->choices[0]), &ref);
  for (int f = 0; f < 2; f++) { /* strict-match, flexible-extract */
    const char *m;
    const size_t ml = gsm8k_filter(text, len, gsm8k_kind(t->name) != GSM8K_PLAIN, f, &m);
    uint32_t *pred;
    const size_t pl = gsm8k_normalize(m, ml, &pred);
    scores[f] = same_cps(pred, pl, ref, rl) ? 1.0 : 0.0;
    free(pred);
  }
  free(ref);
}

/* ---- contexts and requests --------------------------------------------------------------------------------- */
static int same_doc(const zt_mc_doc *a, const zt_mc_doc *b) {
  if (strcmp(a->text, b->text) || a->n_choices != b->n_choices || a->gold != b->gold) return 0;
  if ((a->target == NULL) != (b->target == NULL) || (a->target && strcmp(a->target, b->target))) return 0;
  if ((a->labels == NULL) != (b->labels == NULL) ||
      (a->labels && memcmp(a->labels, b->labels, (size_t)a->n_choices * sizeof(int))))
    return 0; /* truthfulqa_mc2: its labels */
  if ((a->scores == NULL) != (b->scores == NULL) ||
      (a->scores && memcmp(a->scores, b->scores, 2 * (size_t)a->n_choices * sizeof(double))))
    return 0; /* record: its answers, as the entities' scores against them */
  for (int i = 0; i < a->n_choices; i++)
    if (strcmp(a->choices[i], b->choices[i])) return 0;
  return 1;
}

char *zt_mc_context(const zt_mc_task *t, int64_t i, const zt_mc_task *pool, int nshot, zt_pyrandom *rnd) {
  zt_strbuf b = {0};
  const int mmlu = subject_index(t->name);
  if (mmlu >= 0) { /* each mmlu_<subject>.yaml's description, the subject's words (a continuation task's: "questions") */
    puts_(&b, mmlu_index(t->name) >= 0 ? "The following are multiple choice questions (with answers) about "
                                       : "The following are questions (with answers) about ");
    for (const char *c = MMLU[mmlu].name + 5; *c; c++) zt_strbuf_put(&b, *c == '_' ? " " : c, 1);
    puts_(&b, ".\n\n");
  }
  const int nq = !strcmp(t->name, "nq_open");
  if (nq) puts_(&b, "Answer these questions:\n\n"); /* nq_open.yaml's description */
  if (nshot > 0) {
    const int64_t want = nshot + samples_extra(t->name);
    const int first_n = zt_mc_first_n(t->name);
    zt_check(want <= pool->n, "bad task file", "--num-fewshot %d: the %s few-shot pool holds %lld documents; the "
             "harness's sampler draws %lld", nshot, t->name, (long long)pool->n, (long long)want);
    int64_t *pick = zt_malloc((size_t)want * sizeof(int64_t), "sampler");
    if (first_n)
      for (int64_t s = 0; s < want; s++) pick[s] = s;
    else
      zt_pyrandom_sample(rnd, pool->n, want, pick);
    int used = 0;
    for (int64_t s = 0; s < want && used < nshot; s++) {
      const zt_mc_doc *e = &pool->docs[pick[s]];
      /* [x for x in fewshotex if x != doc][:num_fewshot]; a YAML sample ({question, target}) never equals a doc */
      if (gsm8k_kind(t->name) != GSM8K_COT && same_doc(e, &t->docs[i])) continue;
      if (e->target) { /* a multiple-input task: the gold option's context, then the target */
        puts_(&b, e->choices[e->gold]);
        puts_(&b, " ");
        puts_(&b, e->target);
      } else {
        puts_(&b, e->text);
        /* target_delimiter + target (lambada's target is " " + word itself: two spaces, as the harness writes;
         * arithmetic's delimiter is ""; a loglikelihood task's empty target string goes without its delimiter) */
        if (!zt_mc_is_loglikelihood(t->name) || e->choices[e->gold][0]) puts_(&b, zt_mc_target_delimiter(t->name));
        puts_(&b, e->choices[e->gold]);
      }
      puts_(&b, nq ? "\n" : "\n\n"); /* the fewshot_delimiter: nq_open.yaml's "\n" */
      used++;
    }
    free(pick);
  }
  if (!t->docs[i].target) puts_(&b, t->docs[i].text); /* multiple-input: the caller appends each choice */
  return take(&b);
}

void zt_mc_encode_pair(const zt_tokenizer *tok, zt_tok_state *st, const char *context, const char *continuation,
                       zt_ids *ctx, zt_ids *cont) {
  const size_t n = strlen(context);
  if (n == 0) { /* the harness: context_enc = [eot_token_id] */
    zt_ids_push(ctx, zt_tokenizer_eod(tok));
    zt_tokenizer_encode(tok, st, continuation, strlen(continuation), cont);
    return;
  }
  size_t keep = n; /* len(context.rstrip()): the trailing whitespace moves to the continuation */
  while (keep > 0) {
    size_t c = keep - 1;
    while (c > 0 && ((unsigned char)context[c] & 0xc0) == 0x80) c--;
    if (zt_utf8_space(context + c, keep - c) != (int)(keep - c)) break;
    keep = c;
  }
  zt_strbuf whole = {0};
  zt_strbuf_put(&whole, context, n);
  puts_(&whole, continuation);
  zt_ids w = {0}, c = {0};
  zt_tokenizer_encode(tok, st, whole.p, whole.n, &w);
  zt_tokenizer_encode(tok, st, context, keep, &c);
  for (size_t k = 0; k < c.n; k++) zt_ids_push(ctx, c.ids[k]);
  for (size_t k = c.n; k < w.n; k++) zt_ids_push(cont, w.ids[k]);
  zt_ids_free(&w);
  zt_ids_free(&c);
  free(whole.p);
}

/* ---- metrics and results --------------------------------------------------------------------------------------- */
static double stderr_of(const double *x, int64_t n) { /* mean_stderr: sample_stddev / sqrt(n) */
  if (n < 2) return NAN;
  double mu = 0.0, s = 0.0;
  for (int64_t i = 0; i < n; i++) mu += x[i];
  mu /= (double)n;
  for (int64_t i = 0; i < n; i++) s += (x[i] - mu) * (x[i] - mu);
  return sqrt(s / (double)(n - 1)) / sqrt((double)n);
}

/* Python's len(str): the number of code points (UTF-8 lead bytes) */
static double char_len(const char *s) {
  double n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

/* Python's random.random(): 53 bits from two draws */
static double py_random(zt_pyrandom *r) {
  const uint32_t a = zt_pyrandom_u32(r) >> 5, b = zt_pyrandom_u32(r) >> 6;
  return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

/* The aggregations bootstrap_stderr resamples, on the drawn items idx[0..n) (f1 and mcc: all n in order when idx is
 * NULL): perplexity, exp(-mean(ll)), of xs; f1, sklearn's binary f1_score of the (gold, pred) pairs: 2 tp / (2 tp +
 * fp + fn), 0 when that is 0 / 0; mcc below. */
typedef struct {
  const double *xs;
  const int *gold, *pred;
} resample_of;
static double perplexity_of(const int64_t *idx, int64_t n, const resample_of *r) {
  double sum = 0.0;
  for (int64_t k = 0; k < n; k++) sum += r->xs[idx[k]];
  return exp(-(sum / (double)n));
}
static double binary_f1(const int64_t *idx, int64_t n, const resample_of *r) {
  int64_t tp = 0, fp = 0, fn = 0;
  for (int64_t k = 0; k < n; k++) {
    const int g = r->gold[idx ? idx[k] : k], p = r->pred[idx ? idx[k] : k];
    tp += g == 1 && p == 1;
    fp += g != 1 && p == 1;
    fn += g == 1 && p != 1;
  }
  return tp + fp + fn ? 2.0 * (double)tp / (double)(2 * tp + fp + fn) : 0.0;
}
/* matthews_corrcoef, sklearn's: from the confusion matrix's row sums t, column sums p, trace c and total s,
 * (c s - t.p) / sqrt((s^2 - t.t) (s^2 - p.p)), 0 when the product under the root is 0 */
static double mcc_of(const int64_t *idx, int64_t n, const resample_of *r) {
  double t[2] = {0, 0}, p[2] = {0, 0}, c = 0;
  for (int64_t k = 0; k < n; k++) {
    const int g = r->gold[idx ? idx[k] : k], q = r->pred[idx ? idx[k] : k];
    t[g] += 1;
    p[q] += 1;
    c += g == q;
  }
  const double s = p[0] + p[1], cov_tp = c * s - (t[0] * p[0] + t[1] * p[1]);
  const double cov_pp = s * s - (p[0] * p[0] + p[1] * p[1]), cov_tt = s * s - (t[0] * t[0] + t[1] * t[1]);
  return cov_pp * cov_tt == 0 ? 0.0 : cov_tp / sqrt(cov_tt * cov_pp);
}

/* lm_eval.api.metrics.bootstrap_stderr(f, xs, iters): chunks of min(1000, iters) resamples, chunk i drawn by
 * random.Random(i).choices(xs, k=len(xs)); the sample standard deviation of f over all the resamples. */
static double bootstrap_stderr(double (*f)(const int64_t *, int64_t, const resample_of *), const resample_of *xs,
                               int64_t n, int iters) {
  if (iters <= 0 || n < 1) return NAN;
  const int chunk = iters < 1000 ? iters : 1000, chunks = iters / chunk;
  double *res = zt_malloc((size_t)chunks * chunk * sizeof(double), "bootstrap");
  int64_t *idx = zt_malloc((size_t)n * sizeof(int64_t), "bootstrap"), m = 0;
  for (int i = 0; i < chunks; i++) {
    zt_pyrandom r;
    zt_pyrandom_seed(&r, (uint32_t)i);
    for (int c = 0; c < chunk; c++) {
      for (int64_t k = 0; k < n; k++) idx[k] = (int64_t)floor(py_random(&r) * (double)n);
      res[m++] = f(idx, n, xs);
    }
  }
  const double se = m > 1 ? stderr_of(res, m) * sqrt((double)m) : NAN; /* sample_stddev */
  free(idx);
  free(res);
  return se;
}

void zt_mc_metrics(const zt_mc_task *t, const double *lls, const double *greedy, int bootstrap_iters,
                   double out[4]) {
  if (zt_mc_is_rolling(t->name)) { /* weighted_perplexity over words and bytes, bits_per_byte */
    double ll = 0.0, words = 0.0, bytes = 0.0;
    for (int64_t i = 0, k = 0; i < t->n; i++) {
      double doc = 0.0;
      for (int q = 0; q < t->docs[i].n_req; q++) doc += lls[k++];
      ll += doc;
      words += (double)t->docs[i].words;
      bytes += (double)t->docs[i].bytes;
    }
    out[0] = exp(-(ll / words));
    out[1] = bytes > 0 ? exp(-(ll / bytes)) : NAN;
    out[2] = bytes > 0 ? -(ll / bytes) / log(2.0) : NAN;
    out[3] = NAN;
    return;
  }
  if (zt_mc_is_loglikelihood(t->name)) { /* perplexity = exp(-mean(ll)) (bootstrap stderr), acc = mean(is_greedy);
                                          * arithmetic: acc alone */
    const char *keys[2];
    const int ppl = zt_mc_metric_names(t->name, keys) == 2, a = ppl ? 2 : 0; /* acc's slot */
    double sl = 0.0, sg = 0.0;
    for (int64_t i = 0; i < t->n; i++) sl += lls[i], sg += greedy[i];
    out[2] = out[3] = NAN;
    if (ppl) {
      out[0] = exp(-(sl / (double)t->n));
      out[1] = bootstrap_stderr(perplexity_of, &(resample_of){.xs = lls}, t->n, bootstrap_iters);
    }
    out[a] = sg / (double)t->n;
    out[a + 1] = stderr_of(greedy, t->n);
    return;
  }
  if (zt_mc_is_generation(t->name)) { /* greedy[2 i + f]: the document's exact_match under filter f */
    const char *filters[2];
    const int nf = zt_mc_filters(t->name, filters);
    double *x = zt_malloc((size_t)t->n * sizeof(double) + 8, "metrics");
    out[2] = out[3] = NAN;
    for (int f = 0; f < nf; f++) {
      double sg = 0.0;
      for (int64_t i = 0; i < t->n; i++) sg += x[i] = greedy[2 * i + f];
      out[2 * f] = sg / (double)t->n;
      out[2 * f + 1] = stderr_of(x, t->n);
    }
    free(x);
    return;
  }
  double *acc = zt_malloc((size_t)t->n * sizeof(double) + 8, "metrics");
  double *norm = zt_malloc((size_t)t->n * sizeof(double) + 8, "metrics");
  int *pred = zt_malloc((size_t)t->n * sizeof(int) + 8, "metrics");
  int64_t k = 0;
  double sa = 0.0, sn = 0.0;
  const int webqs = !strcmp(t->name, "webqs");
  for (int64_t i = 0; i < t->n; i++) {
    const zt_mc_doc *d = &t->docs[i];
    int best = 0, bestn = 0, any_greedy = 0;
    double bn = 0.0;
    for (int c = 0; c < d->n_choices; c++) { /* np.argmax: the first of equal maxima */
      const double v = lls[k + c], vn = v / char_len(d->choices[c]);
      if (v > lls[k + best]) best = c;
      if (c == 0 || vn > bn) {
        bn = vn;
        bestn = c;
      }
      any_greedy |= greedy[k + c] != 0.0;
    }
    double mass = 0.0;
    if (d->labels) { /* truthfulqa_mc2 (process_results_mc2): exp(ll) normalized over the choices, summed over 1s */
      double total = 0.0;
      for (int c = 0; c < d->n_choices; c++) total += exp(lls[k + c]);
      for (int c = 0; c < d->n_choices; c++)
        if (d->labels[c]) mass += exp(lls[k + c]) / total;
    }
    k += d->n_choices;
    pred[i] = best;
    acc[i] = webqs ? any_greedy : best == d->gold; /* webqs: exact_match, any accepted answer the greedy one */
    if (d->labels) acc[i] = mass;
    norm[i] = bestn == d->gold;
    if (d->scores) { /* record: f1 and em of the most likely entity */
      acc[i] = d->scores[2 * best];
      norm[i] = d->scores[2 * best + 1];
    }
    sa += acc[i];
    sn += norm[i];
  }
  out[0] = sa / (double)t->n;
  out[1] = stderr_of(acc, t->n);
  out[2] = sn / (double)t->n;
  out[3] = stderr_of(norm, t->n);
  const char *keys[2];
  const int nk = zt_mc_metric_names(t->name, keys), sl = nk - 1; /* the last metric's slot */
  if (!strcmp(t->name, "cb")) { /* aggregate.cb_multi_fi: the mean over the 3 classes of sklearn's binary f1_score,
                                 * 0 where a class is neither predicted nor gold; no stderr (not bootstrappable) */
    double f1 = 0.0;
    for (int c = 0; c < 3; c++) {
      int64_t tp = 0, fp = 0, fn = 0;
      for (int64_t i = 0; i < t->n; i++) {
        tp += pred[i] == c && t->docs[i].gold == c;
        fp += pred[i] == c && t->docs[i].gold != c;
        fn += pred[i] != c && t->docs[i].gold == c;
      }
      f1 += tp + fp + fn ? 2.0 * (double)tp / (double)(2 * tp + fp + fn) : 0.0;
    }
    out[2] = f1 / 3.0;
    out[3] = NAN;
  } else if (!strcmp(keys[sl], "f1") || !strcmp(keys[sl], "mcc")) {
    /* the last metric: f1 (aggregation f1_score: sklearn's binary f1) or mcc (matthews_corrcoef) of the (gold, pred)
     * pairs, both bootstrappable; a slot past the task's metrics is NaN */
    int *gold = zt_malloc((size_t)t->n * sizeof(int) + 8, "metrics");
    for (int64_t i = 0; i < t->n; i++) gold[i] = t->docs[i].gold;
    const resample_of r = {.gold = gold, .pred = pred};
    double (*f)(const int64_t *, int64_t, const resample_of *) = !strcmp(keys[sl], "mcc") ? mcc_of : binary_f1;
    out[2 * sl] = f(NULL, t->n, &r);
    out[2 * sl + 1] = bootstrap_stderr(f, &r, t->n, bootstrap_iters);
    if (nk == 1) out[2] = out[3] = NAN;
    free(gold);
  }
  free(acc);
  free(norm);
  free(pred);
}

/* ---- results: the harness's entries (evaluator_utils.prepare_print_tasks, consolidate_group_results) ---------- */
typedef struct {
  const char *key, *filter;
  double v, se;
  int higher;
} item;
typedef struct {
  const char *key; /* the task's or the group's name */
  char alias[96];
  int task;        /* its index in tasks, or -1: a group */
  double version;  /* metadata.version: the task's (NaN: "Yaml"), 2 for the groups (_mmlu*.yaml's, _blimp.yaml's),
                   * -1 for mmlu_continuation's inline subgroups (none: the harness writes no version) */
  item it[6];      /* its metrics */
  int n_it;
} row;

/* task k's metrics as zt_mc_metrics wrote them (metric slot sl: filter sl / nk, key sl % nk) */
static int task_items(const zt_mc_task *t, const double *m, item *it) {
  const char *name = t->name;
  if (zt_mc_is_rolling(name)) { /* the harness gives these no standard error */
    static const char *const keys[3] = {"word_perplexity", "byte_perplexity", "bits_per_byte"};
    for (int q = 0; q < 3; q++) it[q] = (item){keys[q], "none", m[q], NAN, 0};
    return 3;
  }
  const char *keys[2], *filters[2];
  const int nk = zt_mc_metric_names(name, keys), nf = zt_mc_filters(name, filters);
  for (int sl = 0; sl < nf * nk; sl++) /* lower is better for perplexity alone */
    it[sl] = (item){keys[sl % nk], filters[sl / nk], m[2 * sl], m[2 * sl + 1], strcmp(keys[sl % nk], "perplexity") != 0};
  return nf * nk;
}

/* whether t was named by the group root and is in its subgroup sub (-1: any) */
static int in_group(const zt_mc_task *t, const char *root, int sub) {
  const int i = subject_index(t->name);
  return t->group && !strcmp(t->group, root) && (sub < 0 || (i >= 0 && MMLU[i].group == sub));
}

static row *add_row(row *rows, int *n, const zt_mc_task *tasks, const char *key, const char *alias, int depth,
                    int task) {
  row *r = &rows[(*n)++];
  memset(r, 0, sizeof *r);
  r->key = key;
  r->task = task;
  /* _mmlu*.yaml's, _blimp.yaml's metadata.version; _xcopa.yaml's and its siblings'; continuation/_mmlu.yaml's inline
   * subgroups have none */
  const int inline_group = task < 0 && strcmp(key, "blimp") && strncmp(key, "mmlu", 4) && lang_group(key) < 0;
  const int l = task < 0 ? lang_group(key) : -1;
  r->version = task >= 0 ? zt_mc_version(tasks[task].name) : inline_group ? -1.0 : l >= 0 ? LANG_GROUPS[l].version
                                                                                          : 2.0;
  snprintf(r->alias, sizeof r->alias, "%*s%s%s", depth, "", depth ? "- " : "", alias); /* tab_string */
  return r;
}

/* A group's row: acc over its tasks, weighted by their documents for MMLU's groups and XCOPA's, XStoryCloze's and
 * XWinograd's (aggregate_subtask_metrics, weight_by_size) and their plain mean for blimp (weight_by_size False), its
 * stderr pooled_sample_stderr either way ("N/A" when a task's is); then, with list, its tasks' rows */
static void add_group(row *rows, int *n, const zt_mc_task *tasks, int n_tasks, const double *metrics, const char *root,
                      int sub, const char *key, const char *alias, int depth, int list) {
  row *r = add_row(rows, n, tasks, key, alias, depth, -1);
  double sum = 0, size = 0, var = 0;
  int k = 0, na = 0, weighted = 1;
  for (int q = 0; q < n_tasks; q++)
    if (in_group(&tasks[q], root, sub)) {
      const double nq = (double)tasks[q].n, acc = metrics[4 * q], se = metrics[4 * q + 1];
      weighted = family_of(tasks[q].name) != FAMILY_BLIMP;
      sum += weighted ? acc * nq : acc;
      size += nq;
      var += (nq - 1) * se * se * nq;
      na |= isnan(se);
      k++;
    }
  r->it[0] = (item){"acc", "none", sum / (weighted ? size : k), na ? NAN : sqrt(var / (size - k) / size), 1};
  r->n_it = 1;
  for (int done = 0; list && done < k; done++) { /* then its tasks, in name order (PAWS-X's YAML lists them not so) */
    int next = -1;
    for (int q = 0; q < n_tasks; q++)
      if (in_group(&tasks[q], root, sub) && (done == 0 || strcmp(tasks[q].name, rows[*n - 1].key) > 0) &&
          (next < 0 || strcmp(tasks[q].name, tasks[next].name) < 0))
        next = q;
    row *t = add_row(rows, n, tasks, tasks[next].name, alias_of(tasks[next].name), depth + 1, next);
    t->n_it = task_items(&tasks[next], metrics + 4 * next, t->it);
  }
}

/* The entries in the harness's order: the tasks and groups named by --tasks sorted by name, each group followed by
 * its subgroups and tasks, sorted by name too. Returns how many; *out malloc'd. */
static int results_rows(const zt_mc_task *tasks, int n_tasks, const double *metrics, row **out) {
  const char **top = zt_malloc(((size_t)n_tasks + 1) * sizeof(char *), "results");
  int n_top = 0;
  for (int k = 0; k < n_tasks; k++) {
    const char *key = tasks[k].group ? tasks[k].group : tasks[k].name;
    int seen = 0;
    for (int q = 0; q < n_top; q++) seen |= !strcmp(top[q], key);
    if (!seen) top[n_top++] = key;
  }
  qsort(top, (size_t)n_top, sizeof *top, cmp_str);
  row *rows = zt_malloc(((size_t)n_tasks + 5 * (size_t)n_top) * sizeof(row), "results");
  int n = 0;
  for (int e = 0; e < n_top; e++) {
    const int g = mmlu_group(top[e]);
    if (g == N_MMLU_GROUPS) { /* mmlu: its four groups (no group_alias: the name), each with its subjects */
      add_group(rows, &n, tasks, n_tasks, metrics, top[e], -1, top[e], top[e], 0, 0);
      for (int sub = 0; sub < N_MMLU_GROUPS; sub++)
        add_group(rows, &n, tasks, n_tasks, metrics, top[e], sub, MMLU_GROUPS[sub][0], MMLU_GROUPS[sub][1], 1, 1);
    } else if (g >= 0) { /* mmlu_stem, ...: its group_alias, then its subjects */
      add_group(rows, &n, tasks, n_tasks, metrics, top[e], g, top[e], MMLU_GROUPS[g][1], 0, 1);
    } else if (!strcmp(top[e], "mmlu_continuation")) { /* its group_alias; its inline groups stem, other, ... (named
                                                         * as the default groups' aliases), each with its subjects */
      add_group(rows, &n, tasks, n_tasks, metrics, top[e], -1, top[e], "mmlu (continuation)", 0, 0);
      for (int sub = 0; sub < N_MMLU_GROUPS; sub++)
        add_group(rows, &n, tasks, n_tasks, metrics, top[e], sub, MMLU_GROUPS[sub][1], MMLU_GROUPS[sub][1], 1, 1);
    } else if (!strcmp(top[e], "blimp") || lang_group(top[e]) >= 0) { /* no group_alias: the name, then its tasks */
      add_group(rows, &n, tasks, n_tasks, metrics, top[e], -1, top[e], top[e], 0, 1);
    } else {
      int k = 0;
      while (strcmp(tasks[k].name, top[e])) k++;
      row *r = add_row(rows, &n, tasks, top[e], alias_of(top[e]), 0, k);
      r->n_it = task_items(&tasks[k], metrics + 4 * k, r->it);
    }
  }
  free(top);
  *out = rows;
  return n;
}

/* One metric as the harness writes it: "<key>,<filter>" and "<key>_stderr,<filter>" ("N/A" for a NaN), and whether
 * higher is better (once per key). */
static void add_metric(cJSON *r, cJSON *h, const item *it) {
  char k[80];
  snprintf(k, sizeof k, "%s,%s", it->key, it->filter);
  if (isnan(it->v)) cJSON_AddStringToObject(r, k, "N/A");
  else cJSON_AddNumberToObject(r, k, it->v);
  snprintf(k, sizeof k, "%s_stderr,%s", it->key, it->filter);
  if (isnan(it->se)) cJSON_AddStringToObject(r, k, "N/A");
  else cJSON_AddNumberToObject(r, k, it->se);
  if (!cJSON_GetObjectItemCaseSensitive(h, it->key)) cJSON_AddBoolToObject(h, it->key, it->higher);
}

/* a version as the harness writes it: the YAML's number, or "Yaml" (ConfigurableTask.VERSION) where a task's sets
 * none; none at all for an inline group */
static void add_version(cJSON *ver, const char *key, double v) {
  if (v < 0) return;
  if (isnan(v)) cJSON_AddStringToObject(ver, key, "Yaml");
  else cJSON_AddNumberToObject(ver, key, v);
}

char *zt_mc_results_json(const zt_mc_task *tasks, int n_tasks, const double *metrics, int num_fewshot, int seed) {
  row *rows;
  const int n = results_rows(tasks, n_tasks, metrics, &rows);
  cJSON *root = cJSON_CreateObject(), *res = cJSON_AddObjectToObject(root, "results");
  cJSON *groups = NULL;
  for (int i = 0; i < n; i++)
    if (rows[i].task < 0 && !groups) groups = cJSON_AddObjectToObject(root, "groups");
  cJSON *sub = cJSON_AddObjectToObject(root, "group_subtasks");
  cJSON *ver = cJSON_AddObjectToObject(root, "versions"), *shots = cJSON_AddObjectToObject(root, "n-shot");
  cJSON *hib = cJSON_AddObjectToObject(root, "higher_is_better"), *ns = cJSON_AddObjectToObject(root, "n-samples");
  for (int i = 0; i < n; i++) {
    const row *w = &rows[i];
    cJSON *h = cJSON_AddObjectToObject(hib, w->key);
    for (int pass = 0; pass < 1 + (w->task < 0); pass++) { /* a group: in results and in groups */
      cJSON *r = cJSON_AddObjectToObject(pass ? groups : res, w->key);
      cJSON_AddStringToObject(r, "alias", w->alias);
      for (int q = 0; q < w->n_it; q++) add_metric(r, h, &w->it[q]);
    }
    if (w->task < 0) { /* its subtasks: the groups of its task list (_mmlu.yaml's order), or its tag's tasks */
      cJSON *l = cJSON_AddArrayToObject(sub, w->key);
      static const int yaml_order[N_MMLU_GROUPS] = {STEM, OTHER, SOCIAL, HUMANITIES};
      const int lg = lang_group(w->key);
      if (!strcmp(w->key, "mmlu") || !strcmp(w->key, "mmlu_continuation")) /* the default's or the inline groups */
        for (int g = 0; g < N_MMLU_GROUPS; g++)
          cJSON_AddItemToArray(l, cJSON_CreateString(MMLU_GROUPS[yaml_order[g]][w->key[4] ? 1 : 0]));
      else if (lg >= 0) /* its YAML's task list */
        for (int q = 0; q < TAG_MAX && LANG_GROUPS[lg].tasks[q]; q++)
          cJSON_AddItemToArray(l, cJSON_CreateString(LANG_GROUPS[lg].tasks[q]));
      else
        for (int q = i + 1; q < n && rows[q].task >= 0 && tasks[rows[q].task].group; q++)
          cJSON_AddItemToArray(l, cJSON_CreateString(rows[q].key));
      add_version(ver, w->key, w->version);
      continue;
    }
    const zt_mc_task *t = &tasks[w->task];
    if (!t->group) cJSON_AddArrayToObject(sub, w->key);
    add_version(ver, w->key, w->version);
    cJSON_AddNumberToObject(shots, w->key, t->nshot);
    cJSON *c = cJSON_AddObjectToObject(ns, w->key);
    cJSON_AddNumberToObject(c, "original", (double)t->n);
    cJSON_AddNumberToObject(c, "effective", (double)t->n);
  }
  free(rows);
  cJSON *cfg = cJSON_AddObjectToObject(root, "config");
  cJSON_AddStringToObject(cfg, "model", "zerotron evaluate_zeroshot");
  if (num_fewshot < 0) cJSON_AddNullToObject(cfg, "num_fewshot");
  else cJSON_AddNumberToObject(cfg, "num_fewshot", num_fewshot);
  cJSON_AddNumberToObject(cfg, "fewshot_seed", seed);
  char *s = cJSON_Print(root);
  cJSON_Delete(root);
  zt_check(s != NULL, "out of memory", "results JSON");
  return s;
}

static int cmp_item(const void *a, const void *b) { /* make_table's sorted(metric_items): by "key,filter" */
  const item *x = a, *y = b;
  char kx[96], ky[96];
  snprintf(kx, sizeof kx, "%s,%s", x->key, x->filter);
  snprintf(ky, sizeof ky, "%s,%s", y->key, y->filter);
  return strcmp(kx, ky);
}

/* make_table (lm_eval.utils) of the rows of one column: the tasks' ("Tasks") or the groups' ("Groups") */
static void table_of(zt_strbuf *b, const zt_mc_task *tasks, const row *rows, int n, int groups_only) {
  size_t wt = groups_only ? 6 : 5, wf = 6;
  for (int i = 0; i < n; i++) {
    if (groups_only && rows[i].task >= 0) continue;
    if (strlen(rows[i].alias) > wt) wt = strlen(rows[i].alias);
    for (int q = 0; q < rows[i].n_it; q++)
      if (strlen(rows[i].it[q].filter) > wf) wf = strlen(rows[i].it[q].filter);
  }
  char line[512];
  snprintf(line, sizeof line, "|%-*s|Version|%-*s|n-shot| Metric |   |Value |   |Stderr|\n", (int)wt,
           groups_only ? "Groups" : "Tasks", (int)wf, "Filter");
  puts_(b, line);
  puts_(b, "|");
  for (size_t i = 0; i < wt; i++) puts_(b, "-");
  puts_(b, "|------:|");
  for (size_t i = 0; i < wf; i++) puts_(b, "-");
  puts_(b, "|-----:|--------|---|-----:|---|-----:|\n");
  for (int i = 0; i < n; i++) {
    const row *w = &rows[i];
    if (groups_only && w->task >= 0) continue;
    item it[6];
    memcpy(it, w->it, sizeof it);
    qsort(it, (size_t)w->n_it, sizeof it[0], cmp_item);
    char ver[16], shot[16];
    if (w->version < 0) snprintf(ver, sizeof ver, "    N/A"); /* make_table's default */
    else if (isnan(w->version)) snprintf(ver, sizeof ver, "Yaml");
    else snprintf(ver, sizeof ver, "%g", w->version);
    if (w->task >= 0) snprintf(shot, sizeof shot, "%d", tasks[w->task].nshot);
    else snprintf(shot, sizeof shot, " "); /* n-shot holds the tasks only */
    for (int q = 0; q < w->n_it; q++) {
      char se[32];
      if (isnan(it[q].se)) snprintf(se, sizeof se, "%6s", "N/A");
      else snprintf(se, sizeof se, "%6.4f", it[q].se);
      snprintf(line, sizeof line, "|%-*s|%7s|%-*s|%6s|%-8s|%s  |%6.4f|\xc2\xb1  |%s|\n", (int)wt, q ? "" : w->alias,
               q ? "" : ver, (int)wf, it[q].filter, shot, it[q].key, it[q].higher ? "\xe2\x86\x91" : "\xe2\x86\x93",
               it[q].v, se);
      puts_(b, line);
    }
  }
}

char *zt_mc_results_table(const zt_mc_task *tasks, int n_tasks, const double *metrics) {
  row *rows;
  const int n = results_rows(tasks, n_tasks, metrics, &rows);
  zt_strbuf b = {0};
  table_of(&b, tasks, rows, n, 0);
  for (int i = 0; i < n; i++)
    if (rows[i].task < 0) { /* the CLI prints the groups' table after the tasks' */
      puts_(&b, "\n");
      table_of(&b, tasks, rows, n, 1);
      break;
    }
  free(rows);
  return take(&b);
}
