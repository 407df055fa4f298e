/* Python's repr() of a float, for output that Python-based tools (and their users) compare to. */
#include "runtime/base/pyfmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void zt_py_float(char *out, size_t n, double v, int as_float) {
  if (isnan(v)) { snprintf(out, n, "nan"); return; }
  if (isinf(v)) { snprintf(out, n, v < 0 ? "-inf" : "inf"); return; }
  char buf[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, v);
    if (as_float ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v) break;
  }
  /* buf is "[-]d[.ddd]e[+-]XX": split into sign, digit string and decimal exponent. */
  const char *s = buf;
  int neg = (*s == '-');
  if (neg) s++;
  char digits[24];
  int nd = 0;
  for (; *s != 'e'; s++)
    if (*s != '.') digits[nd++] = *s;
  int exp = atoi(s + 1);
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = '\0';

  char body[64];
  int k = 0;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      k += sprintf(body + k, "0.");
      for (int i = 0; i < -exp - 1; i++) body[k++] = '0';
      k += sprintf(body + k, "%s", digits);
    } else {
      for (int i = 0; i <= exp; i++) body[k++] = i < nd ? digits[i] : '0';
      body[k++] = '.';
      if (nd > exp + 1) k += sprintf(body + k, "%s", digits + exp + 1);
      else body[k++] = '0';
      body[k] = '\0';
    }
  } else {
    body[k++] = digits[0];
    if (nd > 1) k += sprintf(body + k, ".%s", digits + 1);
    sprintf(body + k, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
  }
  snprintf(out, n, "%s%s", neg ? "-" : "", body);
}
