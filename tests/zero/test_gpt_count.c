/* The GPT parameter count and largest layer that feed DeepSpeed's memory estimators (zt_gpt_count_params, from
 * the one-process table) against the built model: the parameter table that zt_gpt_build registers (every parameter
 * once, tied weights once), with DeepSpeed's largest layer = the largest sum of one module's own parameters (names
 * grouped by everything before ".weight"/".bias"); and the hand-computed GPT-2 124M count. (The zero_memory_estimate
 * tool's own shape arithmetic is checked by test_zero_estimate.py against the same hand count.) */
#include <string.h>

#include "models/gpt/gpt.h"
#include "runtime/zero/estimate.h"
#include "tests/unit/testutil.h"

static void check(int layers, int hidden, int heads, int ffn, int maxpos, int vocab, int untie) {
  zt_gpt_config c = {.num_layers = layers, .hidden_size = hidden, .num_heads = heads, .ffn_hidden_size = ffn,
                     .max_positions = maxpos, .padded_vocab_size = vocab, .ln_eps = 1e-5f, .init_std = 0.02f,
                     .untie_embeddings = untie, .micro_batch = 1, .seq_length = maxpos};
  zt_gpt m;
  zt_gpt_build(&m, &c, 0);
  int64_t total = 0, largest = 0;
  for (int i = 0; i < m.table.count; i++) {
    const zt_param *p = &m.table.params[i];
    total += (int64_t)p->numel;
    const char *dot = strrchr(p->name, '.');
    size_t mlen = dot ? (size_t)(dot - p->name) : strlen(p->name);
    int64_t mod = 0; /* this module's own parameters */
    for (int j = 0; j < m.table.count; j++) {
      const char *dj = strrchr(m.table.params[j].name, '.');
      size_t lj = dj ? (size_t)(dj - m.table.params[j].name) : strlen(m.table.params[j].name);
      if (lj == mlen && !strncmp(m.table.params[j].name, p->name, mlen)) mod += (int64_t)m.table.params[j].numel;
    }
    if (mod > largest) largest = mod;
  }
  int64_t et, el;
  zt_gpt_count_params(&c, &et, &el);
  char name[160];
  snprintf(name, sizeof name, "GPT L=%d h=%d ffn=%d pos=%d V=%d %s: total and largest layer = model table", layers,
           hidden, ffn, maxpos, vocab, untie ? "untied" : "tied");
  tu_check(et == total && el == largest && (size_t)total == zt_gpt_num_params(&m), name,
           "estimate %lld / %lld, table %lld / %lld", (long long)et, (long long)el, (long long)total,
           (long long)largest);
  zt_gpt_free(&m);
}

int main(void) {
  check(2, 16, 2, 64, 32, 128, 0);   /* word embeddings largest */
  check(3, 32, 4, 128, 16, 64, 1);   /* fc1/fc2 (4h x h) largest */
  check(1, 24, 3, 200, 512, 48, 0);  /* position embeddings largest */
  check(2, 40, 5, 40, 8, 16, 1);     /* QKV largest */
  int64_t t, l;
  const zt_gpt_config gpt2 = {.num_layers = 12, .hidden_size = 768, .num_heads = 12, .ffn_hidden_size = 3072,
                              .max_positions = 1024, .padded_vocab_size = 50304, .micro_batch = 1, .seq_length = 1024};
  zt_gpt_count_params(&gpt2, &t, &l);
  tu_check(t == 124475904 && l == 50304LL * 768, "GPT-2 124M shape: 124,475,904 parameters (hand-computed)",
           "%lld %lld", (long long)t, (long long)l);
  tu_check(zt_zero_pad_vocab(50257, 128, 1) == 50304 && zt_zero_pad_vocab(50304, 128, 1) == 50304 &&
           zt_zero_pad_vocab(50257, 128, 2) == 50432, "Megatron vocabulary padding", "%lld",
           (long long)zt_zero_pad_vocab(50257, 128, 2));
  return tu_finish();
}
