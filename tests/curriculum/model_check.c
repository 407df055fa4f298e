/* The model core at a shorter pass length (the legacy seqlen curriculum): a GPT planned for 24 tokens running at
 * T < 24 (zt_lm_set_seq_length, the first rows of its buffers) gives bit for bit the loss and gradients of a GPT
 * planned for T tokens, for each T in a list and back at 24 (which must equal a fresh 24-token model), with dropout,
 * with given positions and packed documents (key_start), with full recompute and on every backend this build has.
 * Prints one PASS/FAIL line per check and exits non-zero on a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt/gpt.h"
#include "runtime/base/error.h"

enum { B = 2, TP = 24, V = 64 };
static int fails, passes;

static void build(zt_gpt *m, int T, int recompute) {
  zt_gpt_config c = {.num_layers = 2, .hidden_size = 24, .num_heads = 3, .ffn_hidden_size = 96, .max_positions = 32,
                     .padded_vocab_size = V, .ln_eps = 1e-5f, .attn_dropout = 0.2f, .hidden_dropout = 0.1f,
                     .init_std = 0.02f, .recompute_full = recompute, .micro_batch = B, .seq_length = T};
  zt_gpt_build(m, &c, 0);
  zt_gpt_init_params(m, 42);
}

/* Sample rows of TP tokens; the pass uses the first T of each row (copied to [B, T]). */
static float run(zt_gpt *m, int T, int packed) {
  int32_t full_tok[B * TP], full_tgt[B * TP], full_pos[B * TP], full_ks[B * TP];
  for (int r = 0; r < B; r++)
    for (int t = 0; t < TP; t++) {
      const int i = r * TP + t, doc0 = t < 7 ? 0 : 7; /* two documents per row when packed */
      full_tok[i] = (i * 7 + 3) % V;
      full_tgt[i] = (i * 5 + 1) % V;
      full_pos[i] = t - doc0;
      full_ks[i] = doc0;
    }
  int32_t tok[B * TP], tgt[B * TP], pos[B * TP], ks[B * TP];
  for (int r = 0; r < B; r++) {
    memcpy(tok + r * T, full_tok + r * TP, (size_t)T * 4);
    memcpy(tgt + r * T, full_tgt + r * TP, (size_t)T * 4);
    memcpy(pos + r * T, full_pos + r * TP, (size_t)T * 4);
    memcpy(ks + r * T, full_ks + r * TP, (size_t)T * 4);
  }
  zt_pass pass = {.B = B, .T = T, .first_sample = 5, .seed = 99, .training = 1, .key_start = packed ? ks : NULL};
  const float loss = zt_gpt_forward(m, tok, packed ? pos : NULL, tgt, NULL, &pass);
  memset(m->grads, 0, m->table.numel * sizeof(float));
  zt_gpt_backward(m, 1.0f);
  return loss;
}

static void compare(const char *what, zt_gpt *a, float la, zt_gpt *b, float lb) {
  size_t diff = 0;
  for (size_t i = 0; i < a->table.numel; i++) diff += memcmp(&a->grads[i], &b->grads[i], 4) != 0;
  if (la == lb && diff == 0) {
    printf("PASS %s\n", what);
    passes++;
  } else {
    printf("FAIL %s: loss %.9g vs %.9g, %zu of %zu gradients differ\n", what, la, lb, diff, a->table.numel);
    fails++;
  }
}

int main(void) {
  const int lengths[] = {8, 1, 23, 16, 24};
  for (int recompute = 0; recompute <= 1; recompute++)
    for (int packed = 0; packed <= 1; packed++) {
      zt_gpt big;
      build(&big, TP, recompute);
      for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
        const int T = lengths[k];
        zt_gpt small;
        build(&small, T, recompute);
        const float lb = run(&big, T, packed), ls = run(&small, T, packed);
        char what[160];
        snprintf(what, sizeof what, "planned %d, run at %d = planned %d (dropout%s%s)", TP, T, T,
                 packed ? ", packed documents" : "", recompute ? ", full recompute" : "");
        compare(what, &big, lb, &small, ls);
        zt_gpt_free(&small);
      }
      zt_gpt_free(&big);
    }
  printf("%d passed, %d failed\n", passes, fails);
  return fails ? 1 : 0;
}
