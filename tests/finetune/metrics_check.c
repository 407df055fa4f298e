/* metrics_check: tasks/metrics.h on numbers from stdin, for test_metrics.py. Each input line is
 *   pearson N x_1..x_N y_1..y_N   -> Pearson's r, then Spearman's (zt_pearson of zt_rankdata's ranks)
 *   ranks N v_1..v_N              -> the ranks
 *   mcc TP TN FP FN               -> the Matthews correlation
 * and prints the result(s) with %.17g, one line per input line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/metrics.h"

int main(void) {
  char op[16];
  while (scanf("%15s", op) == 1) {
    if (!strcmp(op, "mcc")) {
      double c[4];
      if (scanf("%lf %lf %lf %lf", &c[0], &c[1], &c[2], &c[3]) != 4) return 2;
      printf("%.17g\n", zt_matthews(c[0], c[1], c[2], c[3]));
      continue;
    }
    long long n;
    if (scanf("%lld", &n) != 1 || n < 0) return 2;
    const int two = !strcmp(op, "pearson");
    double *v = malloc((size_t)(n + 1) * 4 * sizeof(double)), *r = v + 2 * (n + 1);
    for (long long i = 0; i < n * (two ? 2 : 1); i++)
      if (scanf("%lf", &v[i]) != 1) return 2;
    if (two) {
      double *rx = r, *ry = r + n;
      zt_rankdata(v, n, rx);
      zt_rankdata(v + n, n, ry);
      printf("%.17g %.17g\n", zt_pearson(v, v + n, n), zt_pearson(rx, ry, n));
    } else {
      zt_rankdata(v, n, r);
      for (long long i = 0; i < n; i++) printf(i ? " %.17g" : "%.17g", r[i]);
      printf("\n");
    }
    free(v);
  }
  return 0;
}
