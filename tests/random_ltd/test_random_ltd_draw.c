/* Random-LTD's kept-token draw (models/transformer/random_ltd.c) and schedule (train/random_ltd.c):
 * - every draw is r sorted, distinct positions of 0..T-1, the same for the same (seed, step, sample, layer) and
 *   another for another step, sample, layer or seed;
 * - over 20000 draws each position is kept r/T of the time (within 4 standard deviations) and a pair of positions
 *   r(r-1)/(T(T-1)) of the time: uniform without replacement, as torch.multinomial over equal weights is;
 * - the reserved length, the consumed layer tokens and Megatron-DeepSpeed's actual_seq_length against values
 *   worked out by hand from DeepSpeed's scheduler.py (fixed_linear) and training.py. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/transformer/random_ltd.h"
#include "train/random_ltd.h"

static int pass_n, fail_n;
static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  if (ok) pass_n++;
  else fail_n++;
}

static int valid(const int32_t *k, int r, int T) {
  for (int j = 0; j < r; j++)
    if (k[j] < 0 || k[j] >= T || (j > 0 && k[j] <= k[j - 1])) return 0;
  return 1;
}

int main(void) {
  enum { T = 24, R = 9 };
  int32_t perm[T], a[T], b[T];
  int ok = 1;
  for (int T2 = 1; T2 <= T; T2++)
    for (int r = 1; r <= T2; r++)
      for (uint64_t s = 0; s < 20; s++) {
        zt_ltd_draw(7, s, s * 31, (int)s % 5, T2, r, perm, a);
        ok &= valid(a, r, T2);
      }
  check(ok, "every draw: r sorted distinct positions of 0..T-1 (T 1..24, r 1..T, 20 keys each)");
  zt_ltd_draw(1234, 5, 77, 3, T, R, perm, a);
  zt_ltd_draw(1234, 5, 77, 3, T, R, perm, b);
  check(memcmp(a, b, sizeof(int32_t) * R) == 0, "the same (seed, step, sample, layer): the same draw");
  const uint64_t keys[4][4] = {{1235, 5, 77, 3}, {1234, 6, 77, 3}, {1234, 5, 78, 3}, {1234, 5, 77, 4}};
  const char *names[4] = {"seed", "step", "sample", "layer"};
  for (int k = 0; k < 4; k++) {
    int differ = 0; /* over 20 neighbours: one equal draw by chance is possible, all equal is not */
    for (uint64_t d = 0; d < 20; d++) {
      zt_ltd_draw(keys[k][0] + (k == 0) * d, keys[k][1] + (k == 1) * d, keys[k][2] + (k == 2) * d,
                  (int)(keys[k][3] + (k == 3) * d), T, R, perm, b);
      differ += memcmp(a, b, sizeof(int32_t) * R) != 0;
    }
    char what[96];
    snprintf(what, sizeof what, "another %s: another draw (%d of 20 differ)", names[k], differ);
    check(differ >= 19, what);
  }
  /* uniformity */
  enum { DRAWS = 20000 };
  static double single[T], pair[T][T];
  for (int n = 0; n < DRAWS; n++) {
    zt_ltd_draw(99, (uint64_t)n / 7, (uint64_t)n, n % 7, T, R, perm, a);
    for (int j = 0; j < R; j++) {
      single[a[j]] += 1;
      for (int q = j + 1; q < R; q++) pair[a[j]][a[q]] += 1;
    }
  }
  const double p1 = (double)R / T, p2 = (double)R * (R - 1) / (T * (T - 1.0));
  double worst1 = 0, worst2 = 0;
  for (int i = 0; i < T; i++) {
    worst1 = fmax(worst1, fabs(single[i] / DRAWS - p1) / sqrt(p1 * (1 - p1) / DRAWS));
    for (int j = i + 1; j < T; j++) worst2 = fmax(worst2, fabs(pair[i][j] / DRAWS - p2) / sqrt(p2 * (1 - p2) / DRAWS));
  }
  char what[128];
  snprintf(what, sizeof what, "each position kept %d/%d of the time (worst %.2f standard deviations of %d draws)", R, T,
           worst1, DRAWS);
  check(worst1 < 4.0, what);
  snprintf(what, sizeof what, "each pair kept together r(r-1)/(T(T-1)) of the time (worst %.2f sd over %d pairs)",
           worst2, T * (T - 1) / 2);
  check(worst2 < 4.5, what);

  /* the schedule: min 16, max 64, require_steps 8, seq_per_step 8, 2 of 4 layers, global batch 4 */
  zt_random_ltd_config c = {.enabled = true, .total_layer_num = 4, .random_ltd_layer_num = 2, .n_layer_id = 2,
                            .layer_id = {1, 2}, .min_value = 16, .max_value = 64, .require_steps = 8,
                            .seq_per_step = 8};
  snprintf(c.model_type, sizeof c.model_type, "decoder");
  /* floor(t/8 * 48 + 16) = 16 22 28 34 40 46 52 58 64 70, down to multiples of 8, at most 64 */
  const int64_t want[10] = {16, 16, 24, 32, 40, 40, 48, 56, 64, 64};
  zt_random_ltd s;
  zt_random_ltd_init(&s, &c);
  int good = s.current == 16;
  int64_t tokens = 0, counted = 0;
  for (int t = 0; t < 10; t++) {
    good &= zt_random_ltd_value(&c, t) == want[t];
    good &= zt_random_ltd_update(&s, t, 4, &counted) == want[t];
    zt_random_ltd_update(&s, t, 4, &counted); /* a second forward of the same step counts nothing */
    tokens += 4 * (want[t] * 2 + 64 * 2);
    good &= counted == tokens;
    good &= zt_random_ltd_actual_seq_length(&c, 64, 4, want[t]) == (want[t] < 64 ? (64 * 2 + want[t] * 2) / 4 : 64);
  }
  check(good, "fixed_linear 16 -> 64 over 8 steps by 8: reserved lengths 16 16 24 32 40 40 48 56 64 64, layer "
              "tokens batch x (r x 2 + 64 x 2) per step, once per step, actual_seq_length (64 x 2 + r x 2) // 4");
  /* Megatron-DeepSpeed's GPT example: 128 -> 2048 over 200000 steps by 16, 22 of 24 layers */
  zt_random_ltd_config g = {.enabled = true, .total_layer_num = 24, .random_ltd_layer_num = 22, .min_value = 128,
                            .max_value = 2048, .require_steps = 200000, .seq_per_step = 16};
  check(zt_random_ltd_value(&g, 100000) == 1088 && zt_random_ltd_value(&g, 1) == 128 &&
            zt_random_ltd_value(&g, 1667) == 128 + 16 && zt_random_ltd_value(&g, 199999) == 2032 &&
            zt_random_ltd_value(&g, 10000000) == 2048 &&
            zt_random_ltd_actual_seq_length(&g, 2048, 24, 1088) == (2048 * 2 + 1088 * 22) / 24,
        "the GPT example's schedule: 128 at step 1, 144 at 1667, 1088 at 100000, 2032 at 199999, 2048 after; "
        "actual_seq_length (2048 x 2 + 1088 x 22) // 24");
  printf("%d passed, %d failed\n", pass_n, fail_n);
  return fail_n != 0;
}
