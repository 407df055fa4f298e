/* libFuzzer harness: evaluate_zeroshot --tasks's task side (evaluate/harness_tasks.c) on arbitrary bytes. The first
 * byte picks the task from the list below (its value modulo the list's length: the multiple-choice, loglikelihood,
 * rolling (one text, its words and bytes) and generation tasks, MMLU's and BLiMP's with the documents of their
 * "subject" or "UID", the others set aside), the second byte's bits 0-1 the number of few-shot examples (0-3); the
 * rest is the task's jsonl file, read both as the documents and as the few-shot
 * pool (gsm8k_cot: its first N, as its first_n sampler takes the YAML's). Each document must have its gold label among
 * its choices; each context is built (Python's random.sample over the pool) and each request encoded by _encode_pair,
 * whose context and continuation tokens must together be the encoding of the whole text (with an empty context: [eod]
 * then the continuation's own encoding). RACE's "problems" field is a Python literal, parsed by a small reader of its
 * own. The tokenizer is GPT-2 BPE over a byte-level vocabulary (every byte one token, no merges). A generation task's
 * scores of any text (the context) are 0 or 1; triviaqa's of an ASCII alias without leading whitespace 1; gsm8k's of
 * "#### N" both 1 when the answer ends in "#### N" (N ASCII digits), the CoT tasks' of "The answer is N." both 1 when N
 * is the target (gsm8k_cot) or ends the answer after "#### " (gsm8k_cot_zeroshot). A refused file's documents read so
 * far are freed (zt_mc_free): 450k refusals leaked 2.5 GB before, an out-of-memory finding of a long run. */
#include "data/tokenizer/tokenizer.h"
#include "evaluate/harness_tasks.h"
#include "evaluate/zeroshot_data.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const tasks[] = {"piqa", "arc_easy", "arc_challenge", "openbookqa", "hellaswag", "boolq",
                                      "winogrande", "race", "lambada_openai", "anli_r1", "anli_r2", "anli_r3", "cb",
                                      "copa", "multirc", "record", "sglue_rte", "rte", "wic", "wsc", "webqs",
                                      "triviaqa", "gsm8k", "gsm8k_cot", "gsm8k_cot_zeroshot", "c4", "pile_10k",
                                      "paloma_gab", "mmlu_continuation_anatomy", "xcopa_zh", "wsc273", "qa4mre_2011",
                                      "headqa_en", "sciq", "logiqa", "mathqa", "prost", "pubmedqa", "mc_taco",
                                      "mrpc", "qnli", "qqp", "sst2", "wnli", "cola", "mnli", "mnli_mismatch",
                                      "truthfulqa_mc1", "truthfulqa_mc2", "mmlu_anatomy", "mmlu_world_religions",
                                      "social_iqa", "commonsense_qa", "lambada_openai_cloze_yaml", "arithmetic_3ds",
                                      "blimp_passive_1", "blimp_wh_island", "swag", "storycloze_2016",
                                      "xstorycloze_en", "xwinograd_jp", "xnli_ur", "paws_en", "paws_ja", "nq_open"};
  enum { N_TASKS = sizeof tasks / sizeof tasks[0] };
  if (size < 2) return 0;
  zt_tokenizer *tok = zt_fuzz_byte_tokenizer();
  const char *name = tasks[data[0] % N_TASKS];
  const int nshot = data[1] & 3;
  const char *path = zt_fuzz_file("task.jsonl", data + 2, size - 2);
  static zt_mc_task t; /* static: its contents survive the longjmp of a refusal, which zt_mc_free then releases */
  ZT_FUZZ_TRY {
    zt_mc_load(&t, name, path, "--task-data");
    zt_tok_state *st = zt_tok_state_new(tok);
    zt_pyrandom rnd;
    zt_pyrandom_seed(&rnd, 1234);
    for (int64_t i = 0; i < t.n; i++) {
      const zt_mc_doc *d = &t.docs[i];
      if (zt_mc_is_rolling(name)) { /* a whole text, no choices: at least one word, and no more than its bytes + 1 */
        if (d->n_choices != 0 || !d->text || d->words < 1 || d->words > d->bytes + 1) abort();
        continue;
      }
      if (d->n_choices < 1 || d->gold < 0 || d->gold >= d->n_choices || !d->text) abort();
      if (nshot + 1 > t.n) break; /* refused by zt_mc_context (a pool smaller than the draw) */
      char *ctx = zt_mc_context(&t, i, &t, nshot, &rnd);
      if (zt_mc_is_generation(name)) {
        const char *filters[2];
        const int nf = zt_mc_filters(name, filters);
        double sc[2];
        zt_mc_score_generation(&t, i, ctx, strlen(ctx), sc);
        for (int f = 0; f < nf; f++)
          if (sc[f] != 0.0 && sc[f] != 1.0) abort();
        if (!strncmp(name, "gsm8k", 5)) {
          const char *a = d->choices[0], *h = NULL, *num = NULL;
          const int cot = strcmp(name, "gsm8k") != 0;
          for (const char *q = strstr(a, "#### "); q; q = strstr(q + 1, "#### ")) h = q;
          num = !strcmp(name, "gsm8k_cot") ? a : h ? h + 5 : NULL; /* gsm8k_cot: the target itself */
          size_t nd = 0;
          if (num)
            while (num[nd] >= '0' && num[nd] <= '9') nd++;
          if (num && nd > 0 && num[nd] == 0 && (!cot || nd <= 40)) {
            char said[64];
            if (cot) snprintf(said, sizeof said, "The answer is %s.", num);
            zt_mc_score_generation(&t, i, cot ? said : h, strlen(cot ? said : h), sc);
            if (sc[0] != 1.0 || sc[1] != 1.0) abort();
          }
        } else {
          for (int c = 0; c < d->n_choices; c++) {
            const char *a = d->choices[c];
            int ascii = 1;
            for (const char *q = a; *q; q++) ascii &= (unsigned char)*q < 128;
            if (ascii && zt_utf8_space(a, strlen(a)) <= 0) {
              zt_mc_score_generation(&t, i, a, strlen(a), sc);
              if (sc[0] != 1.0) abort();
            }
          }
        }
      }
      for (int c = 0; c < d->n_choices; c++) {
        /* (ctx, " " + choice), or a multiple-input task's (ctx + choice, " " + target), or a loglikelihood task's
         * (ctx, target) (evaluate_zeroshot refuses an empty continuation) */
        const char *pre = d->target ? d->choices[c] : "", *after = d->target ? d->target : d->choices[c];
        const int delim = !zt_mc_is_loglikelihood(name);
        if (!delim && !*after) continue;
        const size_t lp = strlen(ctx) + strlen(pre), lo = strlen(after) + (size_t)delim - 1;
        char *whole = malloc(lp + lo + 2);
        memcpy(whole, ctx, strlen(ctx));
        memcpy(whole + strlen(ctx), pre, strlen(pre));
        whole[lp] = ' ';
        memcpy(whole + lp + (size_t)delim, after, strlen(after) + 1);
        char *ctxc = malloc(lp + 1);
        memcpy(ctxc, whole, lp);
        ctxc[lp] = 0;
        const size_t lc = lp;
        zt_ids a = {0}, b = {0}, all = {0};
        zt_mc_encode_pair(tok, st, ctxc, whole + lc, &a, &b);
        if (lc == 0) {
          if (a.n != 1 || a.ids[0] != zt_tokenizer_eod(tok)) abort();
          zt_tokenizer_encode(tok, st, whole, lc + lo + 1, &all);
          if (all.n != b.n || (b.n && memcmp(all.ids, b.ids, b.n * sizeof(int32_t)))) abort();
        } else {
          zt_tokenizer_encode(tok, st, whole, lc + lo + 1, &all);
          if (all.n != a.n + b.n || b.n < 1) abort();
          if (a.n && memcmp(all.ids, a.ids, a.n * sizeof(int32_t))) abort();
          if (memcmp(all.ids + a.n, b.ids, b.n * sizeof(int32_t))) abort();
        }
        zt_ids_free(&a);
        zt_ids_free(&b);
        zt_ids_free(&all);
        free(whole);
        free(ctxc);
      }
      free(ctx);
    }
    zt_tok_state_free(st);
  }
  zt_mc_free(&t); /* also the documents read before a refused line (the tools exit there instead) */
  return 0;
}
