/* Test driver for T5's samples (data/t5_dataset.h): builds the samples mapping of one sentence-split dataset over all
 * its documents with T5's settings (max_seq_length - 2, no binary head) and dumps it and every field of every sample as
 * .npy files for the NumPy transcription of Megatron's t5_dataset.py (test_t5_dataset.py).
 *   t5_dataset_dump OUTDIR --vocab FILE --data PREFIX [--seq N] [--seq-dec N] [--seed S] [--samples N]
 *                   [--mask-prob P] [--short-seq-prob P] [--extra-ids K]
 * Writes mapping.npy (int64 [n, 3]), {text_enc,enc_valid}.npy (int32 [n, seq]), {text_dec,labels,loss_mask,
 * dec_valid}.npy (int32 [n, seq_dec]), truncated.npy and spans.npy (int32 [n]), ids.txt (bos eos mask pad cls sep and
 * the first sentinel). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bert_provider.h"
#include "data/t5_dataset.h"
#include "data/tokenizer/tokenizer.h"
#include "runtime/base/error.h"
#include "runtime/base/npy.h"

static void save(const char *outdir, const char *name, const void *data, int ndim, int64_t a, int64_t b) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.npy", outdir, name);
  const int64_t shape[2] = {a, b};
  zt_npy_save(path, data, ndim == 2 && b == 3 && !strcmp(name, "mapping") ? "<i8" : "<i4", ndim, shape);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: see the comment at the top of t5_dataset_dump.c\n");
    return 2;
  }
  const char *outdir = argv[1], *vocab_file = NULL, *prefix = NULL;
  int seq = 64, seq_dec = 32, extra = 100;
  int64_t samples = 50;
  uint64_t seed = 1234;
  double mask_prob = 0.15, ssp = 0.1;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--vocab")) vocab_file = v, i++;
    else if (!strcmp(a, "--data")) prefix = v, i++;
    else if (!strcmp(a, "--seq")) seq = atoi(v), i++;
    else if (!strcmp(a, "--seq-dec")) seq_dec = atoi(v), i++;
    else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10), i++;
    else if (!strcmp(a, "--samples")) samples = atoll(v), i++;
    else if (!strcmp(a, "--mask-prob")) mask_prob = atof(v), i++;
    else if (!strcmp(a, "--short-seq-prob")) ssp = atof(v), i++;
    else if (!strcmp(a, "--extra-ids")) extra = atoi(v), i++;
    else {
      fprintf(stderr, "t5_dataset_dump: unknown flag %s\n", a);
      return 2;
    }
  }
  zt_check(vocab_file && prefix, "usage", "t5_dataset_dump needs --vocab and --data");
  zt_tokenizer_spec ts = {.kind = ZT_TOK_BERT_LOWER, .vocab_file = vocab_file, .vocab_extra_ids = extra};
  zt_tokenizer *tok = zt_tokenizer_create(&ts);
  zt_bert_vocab bv;
  zt_bert_vocab_from_tokenizer(&bv, tok, "BertWordPieceLowerCase");
  int32_t *sent = zt_malloc((size_t)(extra > 0 ? extra : 1) * 4, "sentinels");
  for (int k = 0; k < extra; k++) {
    char name[32];
    snprintf(name, sizeof name, "<extra_id_%d>", k);
    sent[k] = zt_tokenizer_token_to_id(tok, name);
  }
  const zt_t5_vocab t5 = {.bos = zt_tokenizer_token_to_id(tok, "[BOS]"), .eos = zt_tokenizer_token_to_id(tok, "[EOS]"),
                          .sentinels = sent, .num_sentinels = extra, .max_seq_length_dec = seq_dec};
  zt_indexed_dataset data;
  zt_indexed_open(&data, prefix);
  const zt_bert_dataset_spec sp = {.prefix = prefix, .name = "train", .doc_begin = 0, .doc_end = data.num_docs,
                                   .num_samples = samples, .max_seq_length = seq, .added_tokens = 2,
                                   .masked_lm_prob = mask_prob, .short_seq_prob = ssp, .seed = seed, .binary_head = 0,
                                   .cache_path = outdir, .vocab = &bv};
  zt_bert_dataset d;
  zt_bert_dataset_build(&d, &data, &sp);
  const int64_t n = d.num_samples;
  int64_t *rows = zt_malloc((size_t)n * 3 * sizeof(int64_t), "rows");
  for (int64_t r = 0; r < n; r++) zt_bert_dataset_row(&d, r, rows + 3 * r, rows + 3 * r + 1, rows + 3 * r + 2);
  save(outdir, "mapping", rows, 2, n, 3);
  int32_t *enc = zt_malloc((size_t)n * seq * 4, "dump"), *ev = zt_malloc((size_t)n * seq * 4, "dump");
  int32_t *dec = zt_malloc((size_t)n * seq_dec * 4, "dump"), *lab = zt_malloc((size_t)n * seq_dec * 4, "dump");
  int32_t *lm = zt_malloc((size_t)n * seq_dec * 4, "dump"), *dv = zt_malloc((size_t)n * seq_dec * 4, "dump");
  int32_t *tr = zt_malloc((size_t)n * 4, "dump"), *sp_n = zt_malloc((size_t)n * 4, "dump");
  uint8_t *lm8 = zt_malloc((size_t)seq_dec, "dump"), *dv8 = zt_malloc((size_t)seq_dec, "dump");
  uint8_t *ev8 = zt_malloc((size_t)seq, "dump");
  zt_bert_scratch *sc = zt_bert_scratch_new();
  for (int64_t i = 0; i < n; i++) {
    zt_t5_sample smp = {.text_enc = enc + i * seq, .text_dec = dec + i * seq_dec, .labels = lab + i * seq_dec,
                        .loss_mask = lm8, .enc_valid = ev8, .dec_valid = dv8};
    zt_t5_dataset_get(&d, &t5, i, sc, &smp);
    for (int k = 0; k < seq; k++) ev[i * seq + k] = ev8[k];
    for (int k = 0; k < seq_dec; k++) lm[i * seq_dec + k] = lm8[k], dv[i * seq_dec + k] = dv8[k];
    tr[i] = smp.truncated, sp_n[i] = smp.num_spans;
  }
  save(outdir, "text_enc", enc, 2, n, seq);
  save(outdir, "enc_valid", ev, 2, n, seq);
  save(outdir, "text_dec", dec, 2, n, seq_dec);
  save(outdir, "labels", lab, 2, n, seq_dec);
  save(outdir, "loss_mask", lm, 2, n, seq_dec);
  save(outdir, "dec_valid", dv, 2, n, seq_dec);
  save(outdir, "truncated", tr, 1, n, 0);
  save(outdir, "spans", sp_n, 1, n, 0);
  char path[4096];
  snprintf(path, sizeof path, "%s/ids.txt", outdir);
  FILE *f = fopen(path, "w");
  zt_check(f != NULL, "t5_dataset_dump", "cannot write %s", path);
  fprintf(f, "%d %d %d %d %d %d %d\n", t5.bos, t5.eos, bv.mask, bv.pad, bv.cls, bv.sep, extra > 0 ? sent[0] : -1);
  fclose(f);
  printf("%lld samples, mapping %s\n", (long long)n, d.cache_file);
  zt_bert_scratch_free(sc);
  zt_bert_dataset_free(&d);
  zt_indexed_close(&data);
  zt_tokenizer_free(tok);
  free(rows), free(enc), free(ev), free(dec), free(lab), free(lm), free(dv), free(tr), free(sp_n), free(lm8), free(dv8);
  free(ev8), free(sent), free((void *)bv.subword);
  return 0;
}
