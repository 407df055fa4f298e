/* Dumps what data/tokenizer/unicode.c computes so that test_unicode.py can compare it with Python's
 * unicodedata, str.lower(), str.title() and bytes.decode('utf-8', 'replace').
 *   test_unicode version            the tables' Unicode version
 *   test_unicode table              one line per code point: cp cat ccc L N WS nfd lower title utf8
 *   test_unicode decode|lower|nfd|nfc   reads records "<len>\n<bytes>" from stdin and writes, per record,
 *                                   decode: the code points in hex and the zt_utf8_valid result;
 *                                   lower / nfd / nfc: the converted string as a record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer/unicode.h"

static const char *cat_names[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc",
                                  "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp",
                                  "Cc", "Cf", "Cs", "Co"};

static void dump_table(void) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
    uint32_t d[4], l[3], t[3];
    uint8_t u[4];
    int nd = zt_unicode_nfd_char(cp, d), nl = zt_unicode_lower(cp, l), nt = zt_unicode_title(cp, t);
    printf("%X %s %d %d %d %d ", cp, cat_names[zt_unicode_category(cp)], zt_unicode_ccc(cp),
           zt_unicode_is_letter(cp), zt_unicode_is_number(cp), zt_unicode_is_white_space(cp));
    for (int i = 0; i < nd; i++) printf(i ? ",%X" : "%X", d[i]);
    putchar(' ');
    for (int i = 0; i < nl; i++) printf(i ? ",%X" : "%X", l[i]);
    putchar(' ');
    for (int i = 0; i < nt; i++) printf(i ? ",%X" : "%X", t[i]);
    putchar(' ');
    int nu = zt_utf8_encode(cp, u);
    for (int i = 0; i < nu; i++) printf("%02X", u[i]);
    putchar('\n');
  }
}

/* Reads one "<len>\n<bytes>" record; returns NULL at end of input. */
static uint8_t *read_record(size_t *len) {
  unsigned long n;
  if (scanf("%lu", &n) != 1) return NULL;
  if (getchar() != '\n') { fprintf(stderr, "test_unicode: bad record header\n"); exit(2); }
  uint8_t *b = malloc(n + 1);
  if (!b || fread(b, 1, n, stdin) != n) { fprintf(stderr, "test_unicode: short record (%lu bytes)\n", n); exit(2); }
  *len = n;
  return b;
}

static uint32_t *decode_all(const uint8_t *b, size_t len, size_t *n) {
  uint32_t *cps = malloc((len + 1) * sizeof *cps);
  size_t k = 0;
  for (size_t i = 0; i < len;) {
    size_t used;
    cps[k++] = zt_utf8_decode(b + i, len - i, &used);
    i += used;
  }
  *n = k;
  return cps;
}

static void write_record(const uint32_t *cps, size_t n) {
  uint8_t *o = malloc(4 * n + 1);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) m += (size_t)zt_utf8_encode(cps[i], o + m);
  printf("%zu\n", m);
  fwrite(o, 1, m, stdout);
  free(o);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "version")) { printf("%s\n", zt_unicode_version()); return 0; }
  if (!strcmp(mode, "table")) { dump_table(); return 0; }
  int decode = !strcmp(mode, "decode"), lower = !strcmp(mode, "lower"), nfd = !strcmp(mode, "nfd");
  int nfc = !strcmp(mode, "nfc");
  if (!decode && !lower && !nfd && !nfc) {
    fprintf(stderr, "usage: test_unicode version|table|decode|lower|nfd|nfc\n");
    return 2;
  }
  size_t len;
  uint8_t *b;
  while ((b = read_record(&len))) {
    size_t n;
    uint32_t *cps = decode_all(b, len, &n);
    if (decode) {
      for (size_t i = 0; i < n; i++) printf(i ? " %X" : "%X", cps[i]);
      size_t bad = 0;
      int ok = zt_utf8_valid(b, len, &bad);
      printf(ok ? " | valid\n" : " | invalid %zu\n", bad);
    } else if (lower) {
      uint32_t *o = malloc((3 * n + 1) * sizeof *o);
      size_t m = 0;
      for (size_t i = 0; i < n; i++) m += (size_t)zt_unicode_lower_at(cps, n, i, o + m);
      write_record(o, m);
      free(o);
    } else {
      uint32_t *o = malloc((4 * n + 1) * sizeof *o);
      write_record(o, nfc ? zt_unicode_nfc(cps, n, o) : zt_unicode_nfd(cps, n, o));
      free(o);
    }
    free(cps);
    free(b);
  }
  return 0;
}
