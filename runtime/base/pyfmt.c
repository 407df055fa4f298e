/* Python's repr() of a float: the shortest digit string that reads back as the value (dtoa mode 0),
 * fixed notation for decimal exponents -4..15, exponent form otherwise. */
#include "runtime/base/pyfmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether x (the digits read back as a double) is v: exactly, or as a float32 when as_float. */
static int reads_back(double x, double v, int as_float) { return as_float ? (float)x == (float)v : x == v; }


/* Digits (no dot) and decimal exponent of v > 0 at `prec` significant digits, correctly rounded;
 * value = 0.d1d2... * 10^decpt. */
static void sci_digits(double v, int prec, char *digits, int *decpt) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
  int n = 0;
  char *p = buf;
  for (; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9') digits[n++] = *p;
  digits[n] = 0;
  *decpt = atoi(p + 1) + 1;
}

static double digits_value(const char *digits, int decpt) {
  char buf[64];
  snprintf(buf, sizeof buf, "0.%se%d", digits, decpt);
  return strtod(buf, NULL);
}

/* Adds delta (+1 / -1) to the last digit with carry/borrow; 0 when that leaves p digits impossible. */
static int step_digits(char *digits, int *decpt, int delta) {
  int n = (int)strlen(digits);
  int i = n - 1;
  if (delta > 0) {
    while (i >= 0 && digits[i] == '9') digits[i--] = '0';
    if (i < 0) { /* 99..9 + 1 = 100..0: one more power of ten */
      digits[0] = '1';
      for (int k = 1; k < n; k++) digits[k] = '0';
      (*decpt)++;
      return 1;
    }
    digits[i]++;
    return 1;
  }
  while (i >= 0 && digits[i] == '0') digits[i--] = '9';
  if (i < 0) return 0;
  digits[i]--;
  if (digits[0] == '0') { /* 100..0 - 1 = 099..9: renormalise to 99..9 at one less power */
    if (n == 1) return 0;
    memmove(digits, digits + 1, n);
    digits[n - 1] = '9';
    (*decpt)--;
  }
  return 1;
}

/* Shortest digit string that reads back as v (Python's repr, dtoa mode 0); ties go to the
 * candidate nearest v, as dtoa does. */
static void shortest_digits(double v, int as_float, char *digits, int *decpt) {
  for (int prec = 1; prec <= 17; prec++) {
    char d[32];
    int e;
    sci_digits(v, prec, d, &e);
    if (reads_back(digits_value(d, e), v, as_float)) {
      strcpy(digits, d);
      *decpt = e;
      goto strip;
    }
    /* At a power of two the rounding interval is lopsided: a neighbour at this length may read
     * back as v even when the nearest does not. */
    for (int delta = -1; delta <= 1; delta += 2) {
      char d2[32];
      int e2 = e;
      strcpy(d2, d);
      if (step_digits(d2, &e2, delta) && reads_back(digits_value(d2, e2), v, as_float)) {
        strcpy(digits, d2);
        *decpt = e2;
        goto strip;
      }
    }
  }
  sci_digits(v, 17, digits, decpt);
strip:;
  size_t n = strlen(digits);
  while (n > 1 && digits[n - 1] == '0') digits[--n] = 0;
}

static int format_repr(double v, int as_float, char *out) {
  if (isnan(v)) return sprintf(out, "nan");
  if (isinf(v)) return sprintf(out, v < 0 ? "-inf" : "inf");
  char *o = out;
  if (signbit(v)) {
    *o++ = '-';
    v = -v;
  }
  if (v == 0.0) return (int)(o - out) + sprintf(o, "0.0");
  char digits[32];
  int decpt;
  shortest_digits(v, as_float, digits, &decpt);
  int nd = (int)strlen(digits);
  if (decpt <= -4 || decpt > 16) { /* Python's repr switches to exponent form here */
    *o++ = digits[0];
    if (nd > 1) {
      *o++ = '.';
      memcpy(o, digits + 1, nd - 1);
      o += nd - 1;
    }
    int e = decpt - 1;
    o += sprintf(o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
  } else if (decpt <= 0) {
    o += sprintf(o, "0.");
    for (int i = 0; i < -decpt; i++) *o++ = '0';
    memcpy(o, digits, nd);
    o += nd;
  } else {
    for (int i = 0; i < decpt; i++) *o++ = i < nd ? digits[i] : '0';
    *o++ = '.';
    if (nd > decpt) {
      memcpy(o, digits + decpt, nd - decpt);
      o += nd - decpt;
    } else {
      *o++ = '0';
    }
  }
  *o = 0;
  return (int)(o - out);
}

void zt_py_float(char *out, size_t n, double v, int as_float) {
  char buf[40];
  format_repr(v, as_float, buf);
  snprintf(out, n, "%s", buf);
}
