/* Test helper for evaluate/zeroshot_data.c: exposes the detokenizers, the original-token count, the LM windows and
 * the LAMBADA examples on stdin/stdout so that test_evaluate.py can check them against Megatron's Python.
 *   eval_tool detok KIND           stdin: records "<len>\n<bytes>"; stdout: the same for each detokenized text
 *   eval_tool count                stdin: records; stdout: one count per record
 *   eval_tool windows N SEQ OV PAD stdout: per window, "text ids | mask" over tokens 0..N-1
 *   eval_tool lambada FILE SEQ STRICT VOCAB MERGES   stdout: per example, "text ids | mask | dropped"
 *   eval_tool sample SEED N K TIMES  stdout: TIMES lines of random.Random(SEED).sample(range(N), K), one generator
 *   eval_tool mc TASK FILE NSHOT POOL SEED  stdout: per document, JSON {"context", "choices", "gold"} (the
 *                                  harness's prompt with NSHOT examples from POOL ("-": none, or gsm8k_cot's
 *                                  YAML samples); record: "scores", each entity's [f1, em])
 *   eval_tool em TASK FILE         stdin: one record per document (a generated continuation); stdout: the document's
 *                                  scores (zt_mc_score_generation: the task's filters and exact_match), one line
 *                                  per document, one score per filter
 *   eval_tool metrics TASK FILE ITERS  stdin: each request's log-likelihood (the documents' choices in turn, none
 *                                  greedy); stdout: zt_mc_metrics' four slots with ITERS bootstrap resamples */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer/tokenizer.h"
#include "evaluate/harness_tasks.h"
#include "evaluate/zeroshot_data.h"
#include <cjson/cJSON.h>
#include "runtime/base/error.h"

static char *read_record(size_t *n) {
  unsigned long len;
  if (scanf("%lu", &len) != 1) return NULL;
  getchar(); /* the newline after the length */
  char *s = zt_malloc(len + 1, "record");
  if (fread(s, 1, len, stdin) != len) zt_fatal("eval_tool", "short record");
  s[len] = 0;
  *n = len;
  return s;
}

static void print_row(const int32_t *text, const float *mask, int seq) {
  for (int k = 0; k <= seq; k++) printf("%s%d", k ? " " : "", text[k]);
  printf(" |");
  for (int k = 0; k < seq; k++) printf(" %d", (int)mask[k]);
}

int main(int argc, char **argv) {
  zt_check(argc >= 2, "usage", "eval_tool detok|count|windows|lambada ...");
  if (!strcmp(argv[1], "detok") || !strcmp(argv[1], "count")) {
    size_t n;
    char *s;
    while ((s = read_record(&n)) != NULL) {
      if (!strcmp(argv[1], "count")) {
        printf("%lld\n", (long long)zt_count_original_tokens(s, n));
      } else {
        size_t m;
        char *d = zt_detokenize(argc > 2 && strcmp(argv[2], "none") ? argv[2] : NULL, s, n, &m);
        printf("%zu\n", m);
        fwrite(d, 1, m, stdout);
        free(d);
      }
      free(s);
    }
    return 0;
  }
  if (!strcmp(argv[1], "windows")) {
    zt_check(argc == 6, "usage", "eval_tool windows N SEQ OV PAD");
    const int n = atoi(argv[2]), seq = atoi(argv[3]), ov = atoi(argv[4]), pad = atoi(argv[5]);
    int32_t *tokens = zt_malloc((size_t)n * 4 + 4, "tokens"), *text = zt_malloc((size_t)(seq + 1) * 4, "text");
    float *mask = zt_malloc((size_t)seq * 4, "mask");
    for (int i = 0; i < n; i++) tokens[i] = i;
    zt_lm_windows w;
    zt_lm_windows_init(&w, tokens, n, seq, ov);
    for (int64_t i = 0; i < w.count; i++) {
      zt_lm_window(&w, i, pad, text, mask);
      print_row(text, mask, seq);
      printf("\n");
    }
    return 0;
  }
  if (!strcmp(argv[1], "lambada")) {
    zt_check(argc == 7, "usage", "eval_tool lambada FILE SEQ STRICT VOCAB MERGES");
    const int seq = atoi(argv[3]);
    zt_tokenizer_spec spec = {.kind = ZT_TOK_GPT2BPE, .vocab_file = argv[5], .merge_file = argv[6]};
    zt_tokenizer *tok = zt_tokenizer_create(&spec);
    zt_lambada set;
    zt_lambada_load(&set, argv[2], tok, atoi(argv[4]));
    int32_t *text = zt_malloc((size_t)(seq + 1) * 4, "text");
    float *mask = zt_malloc((size_t)seq * 4, "mask");
    for (int64_t i = 0; i < set.n; i++) {
      const int drop = zt_lambada_item(&set, i, seq, zt_tokenizer_eod(tok), text, mask);
      print_row(text, mask, seq);
      printf(" | %d\n", drop);
    }
    zt_lambada_free(&set);
    zt_tokenizer_free(tok);
    return 0;
  }
  if (!strcmp(argv[1], "sample")) {
    zt_check(argc == 6, "usage", "eval_tool sample SEED N K TIMES");
    zt_pyrandom r;
    zt_pyrandom_seed(&r, (uint32_t)atoll(argv[2]));
    const int64_t n = atoll(argv[3]), k = atoll(argv[4]);
    int64_t *out = zt_malloc((size_t)k * 8 + 8, "sample");
    for (int t = 0; t < atoi(argv[5]); t++) {
      zt_pyrandom_sample(&r, n, k, out);
      for (int64_t i = 0; i < k; i++) printf("%s%lld", i ? " " : "", (long long)out[i]);
      printf("\n");
    }
    free(out);
    return 0;
  }
  if (!strcmp(argv[1], "mc")) {
    zt_check(argc == 7, "usage", "eval_tool mc TASK FILE NSHOT POOL SEED");
    zt_mc_task t, pool = {0};
    zt_mc_load(&t, argv[2], argv[3], "--task-data");
    if (strcmp(argv[5], "-")) zt_mc_load(&pool, argv[2], argv[5], "--fewshot-data");
    else zt_mc_fixed_fewshot(&pool, argv[2]); /* gsm8k_cot: its YAML's examples */
    zt_pyrandom r;
    zt_pyrandom_seed(&r, (uint32_t)atoll(argv[6]));
    for (int64_t i = 0; i < t.n; i++) {
      char *ctx = zt_mc_context(&t, i, &pool, atoi(argv[4]), &r);
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "context", ctx);
      cJSON *ch = cJSON_AddArrayToObject(o, "choices");
      for (int c = 0; c < t.docs[i].n_choices; c++) cJSON_AddItemToArray(ch, cJSON_CreateString(t.docs[i].choices[c]));
      cJSON_AddNumberToObject(o, "gold", t.docs[i].gold);
      if (t.docs[i].target) cJSON_AddStringToObject(o, "target", t.docs[i].target);
      if (t.docs[i].scores) { /* record: each entity's [f1, em] */
        cJSON *sc = cJSON_AddArrayToObject(o, "scores");
        for (int c = 0; c < t.docs[i].n_choices; c++)
          cJSON_AddItemToArray(sc, cJSON_CreateDoubleArray(t.docs[i].scores + 2 * c, 2));
      }
      char *s = cJSON_PrintUnformatted(o);
      printf("%s\n", s);
      free(s);
      cJSON_Delete(o);
      free(ctx);
    }
    zt_mc_free(&t);
    if (pool.n) zt_mc_free(&pool);
    return 0;
  }
  if (!strcmp(argv[1], "em")) {
    zt_check(argc == 4, "usage", "eval_tool em TASK FILE");
    zt_mc_task t;
    zt_mc_load(&t, argv[2], argv[3], "--task-data");
    char *s;
    size_t n;
    for (int64_t i = 0; i < t.n && (s = read_record(&n)) != NULL; i++) {
      double sc[2];
      zt_mc_score_generation(&t, i, s, n, sc);
      const char *filters[2];
      if (zt_mc_filters(t.name, filters) == 2) printf("%g %g\n", sc[0], sc[1]);
      else printf("%g\n", sc[0]);
      free(s);
    }
    zt_mc_free(&t);
    return 0;
  }
  if (!strcmp(argv[1], "metrics")) {
    zt_check(argc == 5, "usage", "eval_tool metrics TASK FILE ITERS");
    zt_mc_task t;
    zt_mc_load(&t, argv[2], argv[3], "--task-data");
    int64_t n = 0;
    for (int64_t i = 0; i < t.n; i++) n += t.docs[i].n_choices;
    double *ll = zt_malloc((size_t)n * sizeof(double) + 8, "lls"), *greedy = calloc((size_t)n + 1, sizeof(double));
    for (int64_t k = 0; k < n; k++) zt_check(scanf("%lf", &ll[k]) == 1, "eval_tool", "%lld log-likelihoods expected",
                                             (long long)n);
    double out[4];
    zt_mc_metrics(&t, ll, greedy, atoi(argv[4]), out);
    for (int k = 0; k < 4; k++) {
      if (isnan(out[k])) printf("%snan", k ? " " : "");
      else printf("%s%.17g", k ? " " : "", out[k]);
    }
    printf("\n");
    free(ll);
    free(greedy);
    zt_mc_free(&t);
    return 0;
  }
  zt_fatal("usage", "eval_tool: unknown mode %s", argv[1]);
}
