/* Python's json.dumps spellings (pyjson.h). */
#include "evaluate/pyjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer/unicode.h"

void zt_pyjson_string(zt_strbuf *b, const char *s, size_t n) {
  char u[16];
  zt_strbuf_put(b, "\"", 1);
  for (size_t i = 0; i < n;) {
    size_t used = 1;
    const uint8_t c = (uint8_t)s[i];
    uint32_t cp = c;
    if (c >= 0x80) cp = zt_utf8_decode((const uint8_t *)s + i, n - i, &used);
    i += used;
    if (cp == '"') zt_strbuf_put(b, "\\\"", 2);
    else if (cp == '\\') zt_strbuf_put(b, "\\\\", 2);
    else if (cp == '\n') zt_strbuf_put(b, "\\n", 2);
    else if (cp == '\r') zt_strbuf_put(b, "\\r", 2);
    else if (cp == '\t') zt_strbuf_put(b, "\\t", 2);
    else if (cp == '\b') zt_strbuf_put(b, "\\b", 2);
    else if (cp == '\f') zt_strbuf_put(b, "\\f", 2);
    else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xFFFF))
      zt_strbuf_put(b, u, (size_t)snprintf(u, sizeof u, "\\u%04x", cp));
    else if (cp > 0xFFFF) {
      const uint32_t v = cp - 0x10000;
      zt_strbuf_put(b, u, (size_t)snprintf(u, sizeof u, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)));
    } else {
      const char ch = (char)cp;
      zt_strbuf_put(b, &ch, 1);
    }
  }
  zt_strbuf_put(b, "\"", 1);
}

void zt_pyjson_float(zt_strbuf *b, double x) {
  const char *special = isnan(x) ? "NaN" : isinf(x) ? (x > 0 ? "Infinity" : "-Infinity")
                        : x == 0.0 ? (signbit(x) ? "-0.0" : "0.0") : NULL;
  if (special) {
    zt_strbuf_put(b, special, strlen(special));
    return;
  }
  /* the fewest significant digits that read back as x (repr's rule), as d.ddde[+-]X */
  char e[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, x);
    if (strtod(e, NULL) == x) break;
  }
  char digits[24];
  int nd = 0, neg = e[0] == '-';
  const char *q = e + neg;
  for (; *q && *q != 'e'; q++)
    if (*q != '.') digits[nd++] = *q;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  const int exp = atoi(q + 1);
  char out[64];
  int o = 0;
  if (neg) out[o++] = '-';
  if (exp >= -4 && exp < 16) { /* fixed notation, at least one digit after the point */
    if (exp < 0) {
      out[o++] = '0', out[o++] = '.';
      for (int i = 0; i < -exp - 1; i++) out[o++] = '0';
      for (int i = 0; i < nd; i++) out[o++] = digits[i];
    } else {
      for (int i = 0; i <= exp; i++) out[o++] = i < nd ? digits[i] : '0';
      out[o++] = '.';
      if (nd > exp + 1)
        for (int i = exp + 1; i < nd; i++) out[o++] = digits[i];
      else
        out[o++] = '0';
    }
  } else {
    out[o++] = digits[0];
    if (nd > 1) {
      out[o++] = '.';
      for (int i = 1; i < nd; i++) out[o++] = digits[i];
    }
    o += snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  }
  zt_strbuf_put(b, out, (size_t)o);
}
