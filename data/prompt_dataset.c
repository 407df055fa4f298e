/* SupervisedDataset of finetune_llama.py: Alpaca JSON -> prompt + output rows and their labels
 * (prompt_dataset.h). */
#include "data/prompt_dataset.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "data/tokenizer/unicode.h"
#include "runtime/base/error.h"
#include "runtime/base/file.h"
#include "runtime/base/timer.h"

/* Stanford Alpaca's PROMPT_DICT, split around its {instruction} and {input} fields. */
static const char k_head_input[] = "Below is an instruction that describes a task, paired with an input that provides "
                                   "further context. Write a response that appropriately completes the request.\n\n"
                                   "### Instruction:\n";
static const char k_mid_input[] = "\n\n### Input:\n";
static const char k_head_plain[] = "Below is an instruction that describes a task. Write a response that "
                                   "appropriately completes the request.\n\n### Instruction:\n";
static const char k_tail[] = "\n\n### Response:";

enum { BLOCK = 2048 };

typedef struct {
  const char *instruction, *input, *output; /* input NULL: the prompt without input */
} example;

static char *read_all(const char *path, size_t *n) {
  char *s = zt_read_file(path, n);
  zt_check(s, "--data-path", "cannot open %s (finetune_llama reads one Alpaca-style JSON file): %s", path,
           strerror(errno));
  return s;
}

/* The string value of key in example i, or NULL when absent (required: dies). */
static const char *field(const cJSON *ex, const char *key, int required, const char *path, int64_t i) {
  const cJSON *v = NULL, *it;
  cJSON_ArrayForEach(it, ex) if (it->string && !strcmp(it->string, key)) v = it; /* the last, as Python's json */
  if (!v) {
    zt_check(!required, "--data-path", "%s: example %lld has no \"%s\" (SupervisedDataset's format_map and "
             "example['output'] need \"instruction\" and \"output\")", path, (long long)i, key);
    return NULL;
  }
  zt_check(cJSON_IsString(v), "--data-path", "%s: example %lld: \"%s\" is not a string", path, (long long)i, key);
  const size_t n = strlen(v->valuestring);
  size_t bad;
  zt_check(zt_utf8_valid((const uint8_t *)v->valuestring, n, &bad), "--data-path", "%s: example %lld: \"%s\" is not "
           "valid UTF-8 (byte %zu)", path, (long long)i, key, bad);
  return v->valuestring;
}

static char *concat(const char *const *parts, int n, size_t *len) {
  size_t total = 0;
  for (int k = 0; k < n; k++) total += strlen(parts[k]);
  char *s = zt_malloc(total + 1, "prompt text"), *o = s;
  for (int k = 0; k < n; k++) {
    const size_t l = strlen(parts[k]);
    memcpy(o, parts[k], l);
    o += l;
  }
  *o = 0;
  *len = total;
  return s;
}

/* Example e's row of L ids and its prompt's non-pad count. */
static void tokenize_example(const zt_hf_tok *tok, zt_hf_state *st, const example *e, int L, int32_t *row,
                            int32_t *source_len) {
  const char *src[5];
  int ns = 0;
  src[ns++] = e->input ? k_head_input : k_head_plain;
  src[ns++] = e->instruction;
  if (e->input) src[ns++] = k_mid_input, src[ns++] = e->input;
  src[ns++] = k_tail;
  size_t slen, xlen;
  char *source = concat(src, ns, &slen);
  const char *whole[3] = {source, e->output, zt_hf_eos_token(tok)};
  char *text = concat(whole, 3, &xlen);
  *source_len = zt_hf_encode_padded(tok, st, source, slen, L, row);
  zt_hf_encode_padded(tok, st, text, xlen, L, row);
  free(source);
  free(text);
}

/* What a load holds while it reads the file: a refusal (zt_fatal) leaves it to the next load to free, so that a
 * process that goes on after refusals (the fuzz harness) does not grow. */
static struct {
  char *text;
  cJSON *root;
  example *ex;
} g_reading;

static void reading_free(void) {
  free(g_reading.text);
  cJSON_Delete(g_reading.root);
  free(g_reading.ex);
  memset(&g_reading, 0, sizeof g_reading);
}

void zt_prompt_dataset_load(zt_prompt_dataset *d, const char *path, const zt_hf_tok *tok, int L) {
  reading_free();
  memset(d, 0, sizeof *d);
  d->L = L;
  d->pad = zt_hf_pad(tok);
  const double t0 = zt_now();
  size_t n;
  char *s = g_reading.text = read_all(path, &n);
  cJSON *root = g_reading.root = cJSON_ParseWithLength(s, n);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    zt_fatal("--data-path", "%s is not valid JSON (error near byte %ld): finetune_llama reads an Alpaca-style JSON "
             "array of {\"instruction\", \"input\", \"output\"} objects", path, at ? (long)(at - s) : 0L);
  }
  zt_check(cJSON_IsArray(root), "--data-path", "%s: the top level is not a JSON array of examples", path);
  const int64_t N = cJSON_GetArraySize(root);
  zt_check(N > 0, "--data-path", "%s holds no examples", path);
  example *ex = g_reading.ex = zt_malloc((size_t)N * sizeof *ex, "prompt examples");
  int64_t i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, root) {
    zt_check(cJSON_IsObject(e), "--data-path", "%s: example %lld is not a JSON object", path, (long long)i);
    ex[i].instruction = field(e, "instruction", 1, path, i);
    ex[i].output = field(e, "output", 1, path, i);
    const char *in = field(e, "input", 0, path, i);
    ex[i].input = in && in[0] ? in : NULL; /* example.get("input", "") != "" */
    i++;
  }
  d->n = N;
  d->offset = zt_malloc((size_t)(N + 1) * sizeof(int64_t), "prompt offsets");
  d->source_len = zt_malloc((size_t)N * sizeof(int32_t), "prompt lengths");
  int32_t *rows = zt_malloc((size_t)BLOCK * L * sizeof(int32_t), "prompt rows");
  size_t cap = (size_t)N * 64 + 1024, used = 0;
  d->ids = zt_malloc(cap * sizeof(int32_t), "prompt ids");
  d->offset[0] = 0;
  for (int64_t b = 0; b < N; b += BLOCK) {
    const int nb = (int)(N - b < BLOCK ? N - b : BLOCK);
#pragma omp parallel
    {
      zt_hf_state *st = zt_hf_state_new(tok);
#pragma omp for schedule(dynamic, 16)
      for (int k = 0; k < nb; k++)
        tokenize_example(tok, st, &ex[b + k], L, rows + (size_t)k * L, &d->source_len[b + k]);
      zt_hf_state_free(st);
    }
    for (int k = 0; k < nb; k++) {
      const int32_t *row = rows + (size_t)k * L;
      int len = L;
      while (len > 0 && row[len - 1] == d->pad) len--; /* the padding is put back by zt_prompt_dataset_get */
      if (used + (size_t)len > cap) {
        cap = (used + (size_t)len) * 2;
        d->ids = realloc(d->ids, cap * sizeof(int32_t));
        zt_check(d->ids, "--data-path", "out of memory holding the token ids of %s", path);
      }
      memcpy(d->ids + used, row, (size_t)len * sizeof(int32_t));
      used += (size_t)len;
      d->offset[b + k + 1] = (int64_t)used;
      d->full_rows += len == L;
      int target = 0; /* a label the loss sees: a non-pad id past the prompt (labels are the ids shifted by one) */
      for (int j = d->source_len[b + k] > 1 ? d->source_len[b + k] : 1; j < L && !target; j++)
        target = row[j] != d->pad;
      d->no_target += !target;
    }
  }
  free(rows);
  reading_free();
  zt_log(" > %s: %lld examples, %lld token ids in rows of %d (max_length = --seq-length + 1); %lld fill their row "
         "(longer ones are cut there), %lld have no label left after their prompt; %.2f s\n",
         path, (long long)N, (long long)used, L, (long long)d->full_rows, (long long)d->no_target, zt_now() - t0);
}

void zt_prompt_dataset_free(zt_prompt_dataset *d) {
  free(d->offset);
  free(d->ids);
  free(d->source_len);
  memset(d, 0, sizeof *d);
}

void zt_prompt_dataset_get(const zt_prompt_dataset *d, int64_t i, int32_t *input_ids, int32_t *labels) {
  zt_check(i >= 0 && i < d->n, "internal error", "prompt example %lld of %lld", (long long)i, (long long)d->n);
  const int64_t b = d->offset[i];
  const int len = (int)(d->offset[i + 1] - b);
  for (int j = 0; j < d->L; j++) input_ids[j] = j < len ? d->ids[b + j] : d->pad;
  for (int j = 0; j < d->L; j++) labels[j] = j < d->source_len[i] ? d->pad : input_ids[j];
}
