/* generate_samples: Megatron-DeepSpeed's tools/generate_samples_gpt.py (megatron/text_generation_utils.py) as one
 * binary. The generation flags are taken out of the command line and the rest is parsed by pretrain_gpt's parser (the
 * model, parallelism, tokenizer and checkpoint flags); a forward-only GPT is built in this run's TP x PP layout and
 * loaded through the trainer's resharding loader (evaluate/eval_model.c). Three modes as Megatron's: contexts from
 * --sample-input-file (one per line, written to --sample-output-file), interactive from stdin, and --num-samples
 * unconditional samples (JSON lines in --genfile). Each step runs only the new token through the layers with a
 * key/value cache (models/transformer/decode.h), or the whole prefix with --recompute; the last stage picks the next
 * token (evaluate/sampling.h) and rank 0 gets it for the output. */
#include "evaluate/generate.h"

#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/unicode.h"
#include "evaluate/eval_args.h"
#include "evaluate/eval_model.h"
#include "evaluate/pyjson.h"
#include "evaluate/sampling.h"
#include "evaluate/strbuf.h"
#include "models/gpt/gpt.h"
#include "models/transformer/decode.h"
#include "runtime/base/blas.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/comm/comm.h"
#include "train/args.h"
#include "train/engine.h"

typedef struct {
  zt_sampling s;
  int out_seq_length;        /* --out-seq-length (1024) */
  const char *input, *output, *genfile, *dump_logits;
  int num_samples, recompute;
  int ds_inference; /* --ds-inference: DeepSpeed-Inference's injected kernels; the key/value cache path runs here */
  int temperature_given, top_given;
} gen_flags;

static void usage(void) {
  printf("usage: generate_samples --load CHECKPOINT_DIR MODEL_FLAGS... [--sample-input-file FILE\n"
         "                        [--sample-output-file FILE]] [--num-samples N --genfile FILE] [--greedy]\n"
         "                        [--temperature T] [--top_k K] [--top_p P] [--out-seq-length N] [--recompute]\n\n"
         "Text generation from a GPT checkpoint saved by pretrain_gpt (Megatron-DeepSpeed's\n"
         "tools/generate_samples_gpt.py). Runs under mpirun with --tensor-model-parallel-size and\n"
         "--pipeline-model-parallel-size in any layout, whatever layout the checkpoint was saved in.\n\n"
         "modes (Megatron's):\n"
         "  --sample-input-file FILE   one context per line; each is written to --sample-output-file (default\n"
         "                             FILE.out, a new file) as \"\\nContext:<line>\\n\\nMegatron-LM:<text>\\n\"; a\n"
         "                             line containing \"stop\" ends the run\n"
         "  (neither)                  interactive: contexts read from stdin (\"stop\" ends)\n"
         "  --num-samples N            N unconditional samples (from <|endoftext|>), --micro-batch-size at a time,\n"
         "  --genfile FILE             written to FILE (a new file) as JSON lines {\"text\", \"length\", \"finished\"}\n\n"
         "generation flags (Megatron's names and defaults):\n"
         "  --greedy                   the most likely token (temperature, top-k and top-p are not used)\n"
         "  --temperature T            logits / T before the filters (default 1.0)\n"
         "  --top_k K                  keep the K largest logits (default 0: off)\n"
         "  --top_p P                  keep the smallest set of most likely tokens whose probability reaches P\n"
         "                             (default 0.0: off); both filters may be given (top-k first)\n"
         "  --out-seq-length N         at most N + 1 new tokens (Megatron's loop), and at most up to position\n"
         "                             --seq-length - 1 (default 1024)\n"
         "  --recompute                recompute the whole prefix every step instead of the key/value cache\n"
         "  --seed S                   the sampling stream (default 1234; Philox, not torch's generator)\n"
         "  --local_rank N             accepted and ignored (set by launchers)\n"
         "  --ds-inference             DeepSpeed-Inference's fused fp16 kernels in Megatron-DeepSpeed: here the same\n"
         "                             forward as without it (fp32 compute, the key/value cache), said in the log\n"
         "  --dump-logits FILE         (testing) every step's logits of each row over the tokenizer's vocabulary as\n"
         "                             float32, a new file\n\n"
         "model and run flags are pretrain_gpt's (see pretrain_gpt --help): --num-layers, --hidden-size,\n"
         "--num-attention-heads, --seq-length, --max-position-embeddings, --micro-batch-size, --tokenizer-type,\n"
         "--vocab-file, --merge-file, --load, --load-tag, --use-checkpoint-args, --tensor-model-parallel-size,\n"
         "--pipeline-model-parallel-size, --fp16/--bf16 (weights rounded as the run held them). docs/generate.md\n");
}

static int exists(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f) fclose(f);
  return f != NULL;
}

/* Takes the generation flags out of argv; the rest (with placeholders for the training-only flags pretrain_gpt's
 * parser requires) goes to *rest. */
static void split_args(int argc, char **argv, gen_flags *gf, int *rest_n, char ***rest) {
  char **r = zt_malloc(((size_t)argc + 10) * sizeof(char *), "arguments");
  int n = 0;
  zt_eval_seen seen = {0};
  r[n++] = argv[0];
  gf->s.temperature = 1.0f;
  gf->out_seq_length = 1024;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    size_t key;
    const char *inl = zt_eval_flag_name(a, &key);
#define IS(name) (key == strlen(name) && !strncmp(a, name, key))
    if (IS("--greedy") || IS("--recompute") || IS("--ds-inference")) {
      zt_check(!inl, "bad argument value", "%.*s takes no value", (int)key, a);
      if (IS("--greedy")) gf->s.greedy = 1;
      else if (IS("--recompute")) gf->recompute = 1;
      else gf->ds_inference = 1;
    } else if (IS("--temperature") || IS("--top_p") || IS("--top_k") || IS("--out-seq-length") ||
               IS("--sample-input-file") || IS("--sample-output-file") || IS("--num-samples") || IS("--genfile") ||
               IS("--local_rank") || IS("--dump-logits")) {
      const char *v = zt_eval_flag_value(argc, argv, &i, a, key, inl);
      gf->temperature_given |= IS("--temperature");
      gf->top_given |= IS("--top_p") || IS("--top_k");
      if (IS("--temperature")) gf->s.temperature = (float)zt_eval_parse_num("--temperature", v, 0);
      else if (IS("--top_p")) gf->s.top_p = (float)zt_eval_parse_num("--top_p", v, 0);
      else if (IS("--top_k")) gf->s.top_k = (int)zt_eval_parse_num("--top_k", v, 1);
      else if (IS("--out-seq-length")) gf->out_seq_length = (int)zt_eval_parse_num("--out-seq-length", v, 1);
      else if (IS("--sample-input-file")) gf->input = v;
      else if (IS("--sample-output-file")) gf->output = v;
      else if (IS("--num-samples")) gf->num_samples = (int)zt_eval_parse_num("--num-samples", v, 1);
      else if (IS("--genfile")) gf->genfile = v;
      else if (IS("--dump-logits")) gf->dump_logits = v;
      else (void)zt_eval_parse_num("--local_rank", v, 1);
    } else {
      zt_eval_seen_arg(&seen, a, key);
      r[n++] = argv[i];
    }
#undef IS
  }
  n = zt_eval_placeholders(&seen, r, n, 1); /* contexts go one at a time; samples: one per batch */
  r[n] = NULL;
  *rest_n = n;
  *rest = r;
}

/* Every refusal before the model is built or a file is written. */
static void check_flags(gen_flags *gf, const zt_args *a, int vocab) {
  zt_check(!a->mock_data, "unsupported argument", "--mock-data: generate_samples needs a real tokenizer (--tokenizer-"
           "type and its files)");
  zt_check(gf->out_seq_length >= 0, "bad argument value", "--out-seq-length %d: expected 0 or more",
           gf->out_seq_length);
  zt_check(gf->num_samples >= 0, "bad argument value", "--num-samples %d: expected 0 or more", gf->num_samples);
  if (!gf->s.greedy) {
    zt_check(gf->s.temperature > 0.0f, "bad argument value", "--temperature %g: expected a positive number (the "
             "logits are divided by it; use --greedy for the most likely token)", (double)gf->s.temperature);
    zt_check(gf->s.top_k >= 0 && gf->s.top_k <= vocab, "bad argument value", "--top_k %d: expected 0 (off) to the "
             "vocabulary's %d tokens", gf->s.top_k, vocab);
    zt_check(gf->s.top_p >= 0.0f && gf->s.top_p <= 1.0f, "bad argument value", "--top_p %g: expected 0 (off) to 1",
             (double)gf->s.top_p);
  } else if (gf->temperature_given || gf->top_given) {
    zt_log(" > --greedy: --temperature, --top_k and --top_p are not used (as in Megatron)\n");
  }
  if (gf->num_samples > 0) {
    zt_check(gf->genfile != NULL, "missing argument", "--num-samples %d: --genfile FILE is required (the JSON lines "
             "of the samples)", gf->num_samples);
    zt_check(!gf->input && !gf->output, "inconsistent arguments", "--num-samples %d generates unconditionally into "
             "--genfile; --sample-input-file/--sample-output-file go without it", gf->num_samples);
    zt_check(!exists(gf->genfile), "bad argument value", "--genfile %s: the file exists; generate_samples does not "
             "overwrite it (give a new path)", gf->genfile);
  } else {
    if (gf->genfile) /* examples_deepspeed/generate_text.sh passes --genfile with --num-samples 0 */
      zt_log("WARNING: --genfile %s is not written: with --num-samples 0 generate_samples reads contexts (from "
             "--sample-input-file or stdin), as Megatron-DeepSpeed does\n", gf->genfile);
    zt_check(!gf->output || gf->input, "inconsistent arguments", "--sample-output-file %s goes with "
             "--sample-input-file (without it the contexts come from stdin)", gf->output);
  }
  if (gf->dump_logits)
    zt_check(!exists(gf->dump_logits), "bad argument value", "--dump-logits %s: the file exists; give a new path",
             gf->dump_logits);
}

/* ---- text on rank 0, shared with every rank --------------------------------------------------------------------- */

/* Broadcasts rank 0's string (NULL: end of input) to every rank. */
static char *bcast_text(char *s, size_t *len) {
  int64_t n = zt_comm_rank() == 0 ? (s ? (int64_t)*len : -1) : 0;
  zt_broadcast(zt_comm_world(), &n, sizeof n, 0);
  if (n < 0) return NULL;
  if (zt_comm_rank() != 0) s = zt_malloc((size_t)n + 1, "context");
  if (n) zt_broadcast(zt_comm_world(), s, (size_t)n, 0);
  s[n] = 0;
  *len = (size_t)n;
  return s;
}

/* The next line of f with its "\n" (readlines) or without (input()), NULL at the end; "\r\n" and "\r" end a
 * line as "\n" (Python's universal newlines); invalid UTF-8 is refused with
 * the line number (Python's strict decoding would stop there too). */
static char *read_line(FILE *f, const char *name, int64_t lineno, int keep_newline, size_t *len) {
  zt_strbuf b = {0};
  int c, any = 0;
  while ((c = fgetc(f)) != EOF) {
    any = 1;
    char ch = (char)c;
    if (ch == '\r') {
      const int d = fgetc(f);
      if (d != '\n' && d != EOF) ungetc(d, f);
      ch = '\n';
    }
    if (ch == '\n') {
      if (keep_newline) zt_strbuf_put(&b, "\n", 1);
      break;
    }
    zt_strbuf_put(&b, &ch, 1);
  }
  if (!any) {
    free(b.p);
    return NULL;
  }
  size_t n, bad;
  char *s = zt_strbuf_take(&b, &n);
  zt_check(zt_utf8_valid((const uint8_t *)s, n, &bad), "bad input", "%s line %lld: not UTF-8 (byte %zu)", name,
           (long long)lineno, bad + 1);
  *len = n;
  return s;
}

/* Python's len() of a UTF-8 string: its code points. */
static size_t code_points(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((uint8_t)s[i] & 0xC0) != 0x80;
  return k;
}

/* detokenize(tokens)[raw_text_len:]: what follows the first raw_len code points. */
static const char *skip_code_points(const char *s, size_t raw_len) {
  size_t k = 0;
  while (*s) {
    if (((uint8_t)*s & 0xC0) != 0x80) {
      if (k == raw_len) break;
      k++;
    }
    s++;
  }
  return s;
}

/* ---- the generation loop (sample_sequence_batch) ---------------------------------------------------------------- */

typedef struct {
  zt_args *args;
  gen_flags *gf;
  zt_lm_decoder dec;
  const zt_eval_placement *p;
  int tp, pp, B, T, V_full, V_tok, root; /* root: the last stage's first tensor-parallel rank */
  int32_t eod;
  float *logits;                  /* [B, V_full] (last stage) */
  int *order;
  float *work;
  int32_t *step_buf;              /* [3 B] new tokens, done flags, lengths */
  FILE *dump;
  int64_t tokens_out, forwards;   /* generated tokens, model forwards (statistics) */
  double seconds;
} generator;

/* Called after every step with the tokens so far (rank 0); counter counts the steps from 0. */
typedef void (*step_fn)(void *ctx, int counter, const int32_t *tokens, int B, int T, int upto);

/* Generates into tokens [B, T] (the contexts, padded with EOD) from the shortest context on; lengths[B] receives each
 * row's length (Megatron's: the position of its EOD, else maxlen). Returns the number of tokens of every row the
 * stream holds (get_token_stream's last slice). stream0: the sampling stream of row 0. */
static int generate(generator *g, int32_t *tokens, const int *ctx_len, int *lengths, uint64_t stream0, step_fn fn,
                    void *fn_ctx) {
  const int B = g->B, T = g->T;
  int context_length = ctx_len[0];
  for (int b = 1; b < B; b++)
    if (ctx_len[b] < context_length) context_length = ctx_len[b];
  int maxlen = T - 1;
  if (maxlen > context_length + g->gf->out_seq_length) maxlen = context_length + g->gf->out_seq_length;
  int *is_done = zt_calloc((size_t)B, sizeof(int), "generation");
  for (int b = 0; b < B; b++) lengths[b] = maxlen;
  int32_t *in = zt_malloc((size_t)B * T * sizeof(int32_t), "generation");
  const double t0 = zt_now();
  int counter = 0, upto = context_length;
  const zt_model *m = g->dec.lm->model;
  while (context_length <= maxlen) {
    int n, past, cached = !g->gf->recompute;
    if (!cached || counter == 0) n = context_length, past = 0;
    else n = 1, past = context_length - 1;
    for (int b = 0; b < B; b++)
      for (int t = 0; t < n; t++) in[(size_t)b * n + t] = tokens[(size_t)b * T + past + t];
    const int last = zt_eval_stage_decode(m, g->p, &g->dec, in, n, past, cached, 0, g->logits);
    g->forwards++;
    int32_t *sb = g->step_buf;
    if (last) {
      if (g->dump && g->p->c.tp == 0)
        for (int b = 0; b < B; b++)
          zt_check(fwrite(g->logits + (size_t)b * g->V_full, sizeof(float), (size_t)g->V_tok, g->dump) ==
                   (size_t)g->V_tok, "output", "--dump-logits: write failed: %s", strerror(errno));
      for (int b = 0; b < B; b++) {
        /* over the tokenizer's ids: Megatron's padding rows have no text (its detokenize fails on them) */
        const int32_t prev = zt_sample_token(&g->gf->s, g->logits + (size_t)b * g->V_full, g->V_tok,
                                             stream0 + (uint64_t)b, (uint64_t)context_length, g->order, g->work);
        const int started = ctx_len[b] <= context_length;
        sb[b] = started ? prev : tokens[(size_t)b * T + context_length];
        const int done_token = prev == g->eod && started;
        if (done_token && !is_done[b]) lengths[b] = context_length;
        is_done[b] |= done_token;
        sb[B + b] = is_done[b];
        sb[2 * B + b] = lengths[b];
      }
    }
    if (zt_comm_size() > 1) zt_broadcast(zt_comm_world(), sb, 3 * (size_t)B * sizeof(int32_t), g->root);
    int done = 1;
    for (int b = 0; b < B; b++) {
      tokens[(size_t)b * T + context_length] = sb[b];
      is_done[b] = sb[B + b];
      lengths[b] = sb[2 * B + b];
      done &= is_done[b];
    }
    upto = context_length + 1;
    if (fn) fn(fn_ctx, counter, tokens, B, T, upto);
    context_length++;
    counter++;
    if (done) break;
  }
  g->seconds += zt_now() - t0;
  g->tokens_out += (int64_t)counter * B;
  free(in);
  free(is_done);
  return upto;
}

/* ---- the three modes ---------------------------------------------------------------------------------------------- */

typedef struct {
  generator *g;
  const zt_tokenizer *tok;
  const char *raw;
  size_t raw_len; /* code points */
  int interactive_print;
} show_ctx;

/* print("\nContext:", raw_text) and print("\nMegatron-LM:", detokenize(tokens)[raw_text_len:]) */
static char *trimmed(const zt_tokenizer *tok, const int32_t *tokens, int upto, size_t raw_len) {
  size_t n;
  char *all = zt_tokenizer_decode(tok, tokens, (size_t)upto, &n);
  const char *t = skip_code_points(all, raw_len);
  char *out = zt_malloc(strlen(t) + 1, "generated text");
  memcpy(out, t, strlen(t) + 1);
  free(all);
  return out;
}

static void clear_screen(void) {
  if (isatty(STDOUT_FILENO)) fputs("\033[H\033[2J", stdout); /* os.system('clear') */
}

static void show(const show_ctx *c, const int32_t *tokens, int upto) {
  char *t = trimmed(c->tok, tokens, upto, c->raw_len);
  clear_screen();
  printf("\nContext: %s\n", c->raw);
  printf("\nMegatron-LM: %s\n", t);
  fflush(stdout);
  free(t);
}

/* generate_samples_interactive prints the stream every 24 steps */
static void interactive_step(void *ctx, int counter, const int32_t *tokens, int B, int T, int upto) {
  (void)B, (void)T;
  const show_ctx *c = ctx;
  if (counter % 24 != 0 || zt_comm_rank() != 0) return;
  show(c, tokens, upto);
}

/* The contexts of --sample-input-file (one per line) or stdin, one at a time (micro batch 1). */
static void contexts(generator *g, const zt_tokenizer *tok, int interactive) {
  const int T = g->T;
  FILE *in = NULL, *out = NULL;
  const char *name = interactive ? "stdin" : g->gf->input;
  char *outname = NULL;
  if (zt_comm_rank() == 0) {
    if (interactive) {
      in = stdin;
    } else {
      in = fopen(g->gf->input, "rb");
      zt_check(in != NULL, "bad argument value", "--sample-input-file %s: %s", g->gf->input, strerror(errno));
      if (g->gf->output) {
        outname = strdup(g->gf->output);
      } else {
        outname = zt_malloc(strlen(g->gf->input) + 5, "file name");
        sprintf(outname, "%s.out", g->gf->input);
        printf("`sample-output-file` not specified, setting it to %s\n", outname);
      }
      out = fopen(outname, "wbx");
      zt_check(out != NULL, "bad argument value", "--sample-output-file %s: %s (generate_samples does not overwrite "
               "a file; give a new path)", outname, errno == EEXIST ? "the file exists" : strerror(errno));
    }
  }
  zt_tok_state *st = zt_tok_state_new(tok);
  int32_t *tokens = zt_malloc((size_t)T * sizeof(int32_t), "context");
  int *ctx_len = zt_malloc((size_t)g->B * sizeof(int), "context"), *lengths = zt_malloc((size_t)g->B * sizeof(int), "context");
  int64_t lineno = 0, count = 0;
  for (;;) {
    size_t len = 0;
    char *raw = NULL;
    if (zt_comm_rank() == 0) {
      for (;;) {
        if (interactive) {
          printf("\nContext prompt (stop to exit) >>> ");
          fflush(stdout);
        }
        raw = read_line(in, name, ++lineno, !interactive, &len);
        if (!raw || !interactive || len) break;
        printf("Prompt should not be empty!\n");
        free(raw);
      }
      if (raw && strstr(raw, "stop")) { /* Megatron: a context containing "stop" ends the run */
        free(raw);
        raw = NULL;
      }
    }
    raw = bcast_text(raw, &len);
    if (!raw) break;
    zt_ids ids = {0};
    zt_tokenizer_encode(tok, st, raw, len, &ids);
    const int ctx = (int)ids.n;
    if (ctx >= T / 2) {
      if (zt_comm_rank() == 0)
        printf("\nContext length %d \nPlease give smaller context (half of the sequence length)!\n", ctx);
      fflush(stdout);
      zt_ids_free(&ids);
      free(raw);
      continue;
    }
    for (int t = 0; t < T; t++) tokens[t] = t < ctx ? ids.ids[t] : g->eod; /* pad_batch */
    zt_ids_free(&ids);
    zt_check(ctx > 0, "bad input", "%s line %lld: the context tokenizes to nothing", name, (long long)lineno);
    show_ctx sc = {.g = g, .tok = tok, .raw = raw, .raw_len = code_points(raw, len)};
    ctx_len[0] = ctx;
    const int upto = generate(g, tokens, ctx_len, lengths, (uint64_t)count, interactive ? interactive_step : NULL, &sc);
    count++;
    if (zt_comm_rank() == 0) {
      char *t = trimmed(tok, tokens, upto, sc.raw_len);
      clear_screen();
      printf("\nContext: %s\n", raw);
      printf("\nMegatron-LM: %s\n", t);
      fflush(stdout);
      if (!interactive) {
        const int ok = fputs("\nContext:", out) >= 0 && fputs(raw, out) >= 0 && fputs("\n\nMegatron-LM:", out) >= 0 &&
                       fputs(t, out) >= 0 && fputs("\n", out) >= 0 && fflush(out) == 0;
        zt_check(ok, "output", "%s: write failed: %s", outname, strerror(errno));
      }
      free(t);
    }
    free(raw);
    if (interactive) { /* input("\nPress Enter to continue >>>") */
      int more = 1;
      if (zt_comm_rank() == 0) {
        printf("\nPress Enter to continue >>>");
        fflush(stdout);
        size_t l2;
        char *x = read_line(in, name, ++lineno, 0, &l2);
        more = x != NULL;
        free(x);
      }
      zt_broadcast(zt_comm_world(), &more, sizeof more, 0);
      if (!more) break;
    }
  }
  if (zt_comm_rank() == 0) {
    if (out) zt_check(fclose(out) == 0, "output", "%s: write failed: %s", outname, strerror(errno));
    if (in && !interactive) fclose(in);
    if (!interactive) zt_log("> %lld contexts written to %s\n", (long long)count, outname);
  }
  free(outname);
  free(tokens);
  free(ctx_len);
  free(lengths);
  zt_tok_state_free(st);
}

/* generate_and_write_samples_unconditional: micro batches of [EOD] contexts until --num-samples. */
static void unconditional(generator *g, const zt_tokenizer *tok) {
  const int B = g->B, T = g->T;
  FILE *f = NULL;
  if (zt_comm_rank() == 0) {
    f = fopen(g->gf->genfile, "wbx");
    zt_check(f != NULL, "bad argument value", "--genfile %s: %s (generate_samples does not overwrite a file)",
             g->gf->genfile, errno == EEXIST ? "the file exists" : strerror(errno));
  }
  int32_t *tokens = zt_malloc((size_t)B * T * sizeof(int32_t), "samples");
  int *ctx = zt_malloc((size_t)B * sizeof(int), "samples"), *lengths = zt_malloc((size_t)B * sizeof(int), "samples");
  int ctr = 0;
  while (ctr < g->gf->num_samples) {
    for (size_t i = 0; i < (size_t)B * T; i++) tokens[i] = g->eod;
    for (int b = 0; b < B; b++) ctx[b] = 1;
    generate(g, tokens, ctx, lengths, (uint64_t)ctr, NULL, NULL);
    for (int b = 0; b < B && ctr < g->gf->num_samples; b++, ctr++) {
      if (zt_comm_rank() != 0) continue;
      /* tokens[1:length - 1], 'length': length - 1, 'finished': length < seq_length - 1 (Megatron's slice) */
      const int L = lengths[b];
      size_t n;
      char *text = zt_tokenizer_decode(tok, tokens + (size_t)b * T + 1, L - 2 > 0 ? (size_t)(L - 2) : 0, &n);
      zt_strbuf line = {0};
      zt_strbuf_put(&line, "{\"text\": ", 9);
      zt_pyjson_string(&line, text, n);
      char tail[96];
      zt_strbuf_put(&line, tail, (size_t)snprintf(tail, sizeof tail, ", \"length\": %d, \"finished\": %s}\n", L - 1,
                                                 L < T - 1 ? "true" : "false"));
      zt_check(fwrite(line.p, 1, line.n, f) == line.n && fflush(f) == 0, "output", "--genfile %s: write failed: %s",
               g->gf->genfile, strerror(errno));
      free(line.p);
      free(text);
    }
  }
  if (f) zt_check(fclose(f) == 0, "output", "--genfile %s: write failed: %s", g->gf->genfile, strerror(errno));
  zt_log("> %d samples written to %s\n", g->gf->num_samples, g->gf->genfile);
  free(tokens);
  free(ctx);
  free(lengths);
}

int zt_generate_main(int argc, char **argv) {
  if (zt_program_start(&argc, &argv, usage)) return 0;
  zt_eval_program = "generate_samples";
  gen_flags gf = {0};
  int rn;
  char **rest;
  split_args(argc, argv, &gf, &rn, &rest);
  zt_args args;
  zt_eval_parse(&args, rn, rest);
  zt_tokenizer *tok = zt_engine_tokenizer(&args);
  zt_check(tok != NULL && zt_tokenizer_eod(tok) >= 0, "missing argument", "generate_samples needs the tokenizer of "
           "the checkpoint, with an end-of-document token (--tokenizer-type GPT2BPETokenizer and its files)");
  gf.s.seed = args.seed;
  check_flags(&gf, &args, zt_tokenizer_vocab_size(tok));
  if (gf.num_samples == 0 && args.micro_batch_size != 1) {
    zt_log(" > --micro-batch-size %d: contexts are generated one at a time (Megatron sets it to 1)\n",
           args.micro_batch_size);
    args.micro_batch_size = 1;
  }
  zt_log("> host: %d OpenMP threads, OpenBLAS %s kernels\n", omp_get_max_threads(), zt_blas_core());
  zt_eval_decoding_setup(&args, tok, "generate from");
  generator g = {.args = &args, .gf = &gf, .eod = zt_tokenizer_eod(tok)};
  zt_eval_placement p;
  int V_valid;
  /* the one sequence dimension of a step is 1 token: --sequence-parallel (a training layout) is not used here */
  zt_model *m = zt_eval_load_gpt(&args, 0, 0, &p, &V_valid);
  g.p = &p;
  g.tp = args.tensor_model_parallel_size;
  g.pp = args.pipeline_model_parallel_size;
  g.B = args.micro_batch_size;
  g.T = args.seq_length;
  g.root = (g.pp - 1) * g.tp; /* TP fastest, then (one) DP, then PP */
  zt_gpt *gpt = m->impl;
  zt_lm_decoder_init(&g.dec, &gpt->lm);
  g.V_full = zt_lm_decoder_vocab(&g.dec);
  g.V_tok = zt_tokenizer_vocab_size(tok);
  zt_log("> key/value cache: %.1f MiB on this rank (%s)\n", (double)zt_lm_decoder_cache_bytes(&g.dec) / 1048576.0,
         gf.recompute ? "not used: --recompute" : "used");
  if (gf.ds_inference) /* Megatron-DeepSpeed's deepspeed.init_inference(dtype=torch.half, replace_with_kernel_inject) */
    zt_log("> --ds-inference: DeepSpeed-Inference's injected fp16 kernels are DeepSpeed's; generate_samples runs its own "
           "forward (the %s, fp32 compute, the weights rounded as the run held them)\n",
           gf.recompute ? "whole prefix each step" : "key/value cache");
  if (m->last) {
    g.logits = zt_malloc((size_t)g.B * g.V_full * sizeof(float), "logits");
    g.order = zt_malloc((size_t)g.V_full * sizeof(int), "sampling");
    g.work = zt_malloc((size_t)g.V_full * sizeof(float), "sampling");
    if (gf.dump_logits && p.c.tp == 0) {
      g.dump = fopen(gf.dump_logits, "wbx");
      zt_check(g.dump != NULL, "bad argument value", "--dump-logits %s: %s", gf.dump_logits, strerror(errno));
    }
  }
  g.step_buf = zt_calloc((size_t)3 * g.B, sizeof(int32_t), "generation");

  if (gf.num_samples > 0) unconditional(&g, tok);
  else contexts(&g, tok, gf.input == NULL);

  if (g.seconds > 0)
    zt_log("> generated %lld tokens in %lld forwards (%s) in %.3f s: %.1f tokens/s\n", (long long)g.tokens_out,
           (long long)g.forwards, gf.recompute ? "--recompute: the whole prefix each step" : "key/value cache",
           g.seconds, (double)g.tokens_out / g.seconds);
  if (g.dump) zt_check(fclose(g.dump) == 0, "output", "--dump-logits %s: write failed", gf.dump_logits);
  free(g.logits);
  free(g.order);
  free(g.work);
  free(g.step_buf);
  zt_lm_decoder_free(&g.dec);
  zt_model_free(m);
  zt_tokenizer_free(tok);
  free(rest);
  zt_comm_finalize();
  return 0;
}
