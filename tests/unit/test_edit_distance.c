/* runtime/base/edit_distance.c: the Levenshtein distance on known pairs, and the bounded form (the "did you mean"
 * search of the argument parser) against the full one on 20,000 random pairs over a small alphabet, for every bound
 * from -1 to 12: the distance when within the bound, else bound + 1. Prints PASS/FAIL lines. */
#include <stdio.h>
#include <string.h>

#include "runtime/base/edit_distance.h"

static int passes, fails;

static void check(int cond, const char *what) {
  printf("%s %s\n", cond ? "PASS" : "FAIL", what);
  cond ? passes++ : fails++;
}

int main(void) {
  check(zt_edit_distance("kitten", "sitting") == 3 && zt_edit_distance("", "abc") == 3 &&
            zt_edit_distance("--num-layers", "--num-layers") == 0 && zt_edit_distance("--lr", "--lrr") == 1,
        "known distances");
  unsigned long long x = 88172645463325252ULL;
  int bad = 0;
  char a[200], b[200];
  for (int n = 0; n < 20000; n++) {
    const int la = (int)((x ^= x << 13, x ^= x >> 7, x ^= x << 17) % 24);
    const int lb = (int)((x ^= x << 13, x ^= x >> 7, x ^= x << 17) % 24) + (n % 50 == 0 ? 150 : 0);
    for (int i = 0; i < la; i++) a[i] = "abc-"[(x ^= x << 13, x ^= x >> 7, x ^= x << 17) % 4];
    for (int i = 0; i < lb; i++) b[i] = "abc-"[(x ^= x << 13, x ^= x >> 7, x ^= x << 17) % 4];
    a[la] = b[lb] = 0;
    const int d = zt_edit_distance(a, b);
    for (int max = -1; max <= 12; max++) {
      const int want = d <= max ? d : max + 1;
      if (zt_edit_distance_within(a, b, max) != want && bad++ < 3)
        printf("  \"%s\" \"%s\" max %d: %d, want %d\n", a, b, max, zt_edit_distance_within(a, b, max), want);
    }
  }
  check(bad == 0, "bounded distance = min(distance, bound + 1) on 20,000 pairs x 14 bounds (some longer than 128)");
  printf("%d passed, %d failed\n", passes, fails);
  return fails ? 1 : 0;
}
