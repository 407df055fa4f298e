/* zero_memory_estimate: DeepSpeed's estimate_zero2/3_model_states_mem_needs_all_cold tables for a parameter
 * count (--params, and --largest-layer-params for ZeRO-3) or a Megatron GPT shape (--num-layers
 * --hidden-size --seq-length --vocab-size ...), on --num-nodes x --num-gpus-per-node GPUs. Flags may be
 * spelt with '-' or '_' (DeepSpeed's Python argument names: --num_gpus_per_node, --total_params, ...). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/zero/estimate.h"

#define TOOL "zero_memory_estimate"

static void usage(void) {
  printf("usage: zero_memory_estimate (--params N [--largest-layer-params N] | --num-layers L --hidden-size H\n"
         "                             --seq-length S --vocab-size V [--max-position-embeddings P]\n"
         "                             [--ffn-hidden-size F] [--make-vocab-size-divisible-by 128]\n"
         "                             [--untie-embeddings-and-output-weights])\n"
         "                            [--num-gpus-per-node 1] [--num-nodes 1] [--stage 2|3]\n"
         "                            [--additional-buffer-factor 1.5] [--enum-names]\n\n"
         "Prints DeepSpeed's ZeRO-2 and ZeRO-3 model-states memory tables (estimate_zero2/3_model_states_mem_needs_\n"
         "all_cold): per CPU | per GPU | options, GB = 2^30 bytes. N accepts 1.3e9, 1.3B, 350M, 124439808.\n"
         "--enum-names writes the offload device as Python >= 3.11 prints it (OffloadDeviceEnum.cpu).\n");
}

/* A Megatron GPT's parameters (tensor parallel size 1): word embeddings padded_vocab x h, learned positions
 * max_positions x h, per layer 2 LayerNorms, fused QKV (3h x h + 3h), dense (h x h + h), fc1 (ffn x h + ffn), fc2
 * (h x ffn + h), final LayerNorm, an untied output layer padded_vocab x h. total = every parameter once (tied weights
 * once); largest = the largest single module's own parameters (DeepSpeed's model_to_params). The trainer counts
 * its model's parameter table instead (models/gpt counts the table); tests/zero checks both against the same
 * hand counts. */
static void gpt_params(int64_t layers, int64_t h, int64_t ffn, int64_t max_pos, int64_t Vp, int untie,
                       int64_t *total, int64_t *largest) {

  int64_t word = Vp * h, pos = max_pos * h, ln = 2 * h;
  int64_t qkv = 3 * h * h + 3 * h, dense = h * h + h, fc1 = ffn * h + ffn, fc2 = h * ffn + h;
  int64_t per_layer = 2 * ln + qkv + dense + fc1 + fc2;
  *total = word + pos + layers * per_layer + ln + (untie ? word : 0);
  int64_t mods[] = {word, pos, layers > 0 ? qkv : 0, layers > 0 ? dense : 0, layers > 0 ? fc1 : 0,
                    layers > 0 ? fc2 : 0, ln};
  int64_t best = 0;
  for (unsigned i = 0; i < sizeof mods / sizeof mods[0]; i++)
    if (mods[i] > best) best = mods[i];
  *largest = best; /* an untied output layer has the word embeddings' size: no new maximum */
}


/* "13e9", "1.3B", "350M", "7K", "2T", "124439808" -> an integer count; zt_fatal naming the flag otherwise. */
static int64_t parse_count(const char *flag, const char *s) {
  char *end;
  double v = strtod(s, &end);
  double mult = 1;
  if (end != s && *end && !end[1]) {
    switch (*end) {
      case 'K': case 'k': mult = 1e3; end++; break;
      case 'M': case 'm': mult = 1e6; end++; break;
      case 'B': case 'b': case 'G': case 'g': mult = 1e9; end++; break;
      case 'T': case 't': mult = 1e12; end++; break;
      default: break;
    }
  }
  double x = v * mult;
  if (end == s || *end || !(x >= 1) || x > 9e15 || x != floor(x))
    zt_fatal(TOOL, "argument %s: '%s' is not a positive whole number of parameters (e.g. 1.3e9, 1.3B, 350M)", flag, s);
  return (int64_t)x;
}

static int64_t parse_int(const char *flag, const char *s, int64_t lo, int64_t hi) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end) zt_fatal(TOOL, "argument %s: invalid int value: '%s'", flag, s);
  if (v < lo || v > hi) zt_fatal(TOOL, "argument %s: %lld is out of range [%lld, %lld]", flag, v, (long long)lo,
                                 (long long)hi);
  return v;
}

int main(int argc, char **argv) {
  int64_t params = 0, largest = 0, layers = 0, hidden = 0, seq = 0, vocab = 0, maxpos = 0, ffn = 0, divisible = 128;
  int64_t gpn = 1, nodes = 1, stage = 0;
  int untie = 0, enum_names = 0;
  double abf = 1.5;
  for (int i = 1; i < argc; i++) {
    char flag[128];
    snprintf(flag, sizeof flag, "%s", argv[i]);
    for (char *p = flag + 2; *p; p++)
      if (*p == '_') *p = '-';
    const char *a = flag;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage();
      return 0;
    }
    if (!strcmp(a, "--untie-embeddings-and-output-weights")) {
      untie = 1;
      continue;
    }
    if (!strcmp(a, "--enum-names")) {
      enum_names = 1;
      continue;
    }
    if (i + 1 >= argc) zt_fatal(TOOL, "argument %s: expected one argument", argv[i]);
    const char *v = argv[++i];
    if (!strcmp(a, "--params") || !strcmp(a, "--total-params")) params = parse_count(argv[i - 1], v);
    else if (!strcmp(a, "--largest-layer-params")) largest = parse_count(argv[i - 1], v);
    else if (!strcmp(a, "--num-layers")) layers = parse_int(argv[i - 1], v, 1, 1 << 20);
    else if (!strcmp(a, "--hidden-size")) hidden = parse_int(argv[i - 1], v, 1, 1 << 24);
    else if (!strcmp(a, "--seq-length")) seq = parse_int(argv[i - 1], v, 1, 1 << 30);
    else if (!strcmp(a, "--max-position-embeddings")) maxpos = parse_int(argv[i - 1], v, 1, 1 << 30);
    else if (!strcmp(a, "--vocab-size")) vocab = parse_int(argv[i - 1], v, 1, 1 << 30);
    else if (!strcmp(a, "--ffn-hidden-size")) ffn = parse_int(argv[i - 1], v, 1, 1 << 26);
    else if (!strcmp(a, "--make-vocab-size-divisible-by")) divisible = parse_int(argv[i - 1], v, 1, 1 << 20);
    else if (!strcmp(a, "--num-gpus-per-node")) gpn = parse_int(argv[i - 1], v, 1, 1 << 16);
    else if (!strcmp(a, "--num-nodes")) nodes = parse_int(argv[i - 1], v, 1, 1 << 20);
    else if (!strcmp(a, "--stage")) {
      stage = parse_int(argv[i - 1], v, 0, 3);
      if (stage < 2)
        zt_fatal(TOOL, "argument --stage: %lld has no DeepSpeed estimator (DeepSpeed provides "
                 "estimate_zero2_model_states_mem_needs and estimate_zero3_model_states_mem_needs only; stage 1 keeps "
                 "full 16-bit gradients, so the ZeRO-2 figures underestimate it)", (long long)stage);
    } else if (!strcmp(a, "--additional-buffer-factor")) {
      char *end;
      abf = strtod(v, &end);
      if (end == v || *end || !(abf > 0) || !isfinite(abf))
        zt_fatal(TOOL, "argument %s: '%s' is not a positive number", argv[i - 1], v);
    } else {
      zt_fatal(TOOL, "unrecognized argument: %s (see --help)", argv[i - 1]);
    }
  }
  int shape = layers || hidden || seq || vocab || maxpos || ffn;
  if (params && shape)
    zt_fatal(TOOL, "give either --params (with --largest-layer-params) or a GPT shape (--num-layers ...), not both");
  if (!params && !shape) zt_fatal(TOOL, "nothing to estimate: give --params N or a GPT shape (see --help)");
  if (shape) {
    if (!layers || !hidden || !vocab || !(seq || maxpos))
      zt_fatal(TOOL, "a GPT shape needs --num-layers, --hidden-size, --vocab-size and --seq-length (or "
               "--max-position-embeddings); got --num-layers %lld --hidden-size %lld --vocab-size %lld --seq-length "
               "%lld", (long long)layers, (long long)hidden, (long long)vocab, (long long)seq);
    if (maxpos && seq && seq > maxpos)
      zt_fatal(TOOL, "--seq-length %lld is larger than --max-position-embeddings %lld", (long long)seq,
               (long long)maxpos);
    if (!maxpos) maxpos = seq;
    if (!ffn) ffn = 4 * hidden;
    int64_t padded = zt_zero_pad_vocab(vocab, divisible, 1);
    gpt_params(layers, hidden, ffn, maxpos, padded, untie, &params, &largest);
    printf("GPT: %lld layers, hidden %lld, ffn %lld, %lld positions, vocabulary %lld padded to %lld (multiple of "
           "%lld), %s output layer: %lld parameters, largest layer %lld\n", (long long)layers, (long long)hidden,
           (long long)ffn, (long long)maxpos, (long long)vocab, (long long)padded, (long long)divisible,
           untie ? "untied" : "tied", (long long)params, (long long)largest);
  }
  if (stage == 3 || stage == 0) {
    if (!largest)
      zt_fatal(TOOL, "ZeRO-3 needs --largest-layer-params with --params %lld (or use --stage 2)", (long long)params);
    if (largest > params)
      zt_fatal(TOOL, "--largest-layer-params %lld is larger than --params %lld", (long long)largest,
               (long long)params);
  }
  if (stage == 2 || stage == 0) zt_zero2_print_table(stdout, params, (int)gpn, (int)nodes, abf, enum_names);
  if (stage == 3 || stage == 0) zt_zero3_print_table(stdout, params, largest, (int)gpn, (int)nodes, abf, enum_names);
  return 0;
}
