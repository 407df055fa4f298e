/* UTF-8 coding and Unicode character properties for the tokenizers, over the tables that
 * scripts/gen_unicode_tables.py generates into unicode_tables.c (see unicode.h for the contract). */
#include "data/tokenizer/unicode.h"

#include <stdlib.h>

#include "runtime/base/error.h"

extern const char zt_unicode_tables_version[];
extern const uint16_t zt_uc_stage1[];
extern const uint8_t zt_uc_blocks[];
extern const uint32_t zt_uc_ccc_ranges[][3];
extern const int zt_uc_ccc_count;
extern const uint32_t zt_uc_nfd_cps[];
extern const uint16_t zt_uc_nfd_off[];
extern const uint32_t zt_uc_nfd_data[];
extern const uint64_t zt_uc_compose_keys[];
extern const uint32_t zt_uc_compose_cps[];
extern const int zt_uc_compose_count;
extern const int zt_uc_nfd_count;
extern const uint32_t zt_uc_lower_pairs[][2];
extern const int zt_uc_lower_pair_count;
extern const uint32_t zt_uc_lower_multi[][5];
extern const int zt_uc_lower_multi_count;
extern const uint32_t zt_uc_title_pairs[][2];
extern const int zt_uc_title_pair_count;
extern const uint32_t zt_uc_title_multi[][5];
extern const int zt_uc_title_multi_count;
extern const uint32_t zt_uc_sigma_ranges[][3];
extern const int zt_uc_sigma_count;

#define ZT_UC_MAX 0x10FFFFu

/* ---- UTF-8 ------------------------------------------------------------------------------------- */

/* Valid second-byte range for each lead byte (Unicode Table 3-7); the later bytes are 80..BF. */
static int utf8_lead(uint8_t b, int *need, uint8_t *lo, uint8_t *hi) {
  *lo = 0x80, *hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) { *need = 1; return 1; }
  if (b >= 0xE0 && b <= 0xEF) {
    *need = 2;
    if (b == 0xE0) *lo = 0xA0;
    if (b == 0xED) *hi = 0x9F; /* no surrogates */
    return 1;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    *need = 3;
    if (b == 0xF0) *lo = 0x90;
    if (b == 0xF4) *hi = 0x8F; /* nothing above U+10FFFF */
    return 1;
  }
  return 0; /* 80..C1 (continuation or overlong lead) and F5..FF */
}

uint32_t zt_utf8_decode(const uint8_t *s, size_t len, size_t *consumed) {
  uint8_t b = s[0];
  if (b < 0x80) { *consumed = 1; return b; }
  int need;
  uint8_t lo, hi;
  if (!utf8_lead(b, &need, &lo, &hi)) { *consumed = 1; return ZT_UNICODE_REPLACEMENT; }
  uint32_t cp = b & (0x3F >> need);
  size_t i = 1;
  for (int k = 0; k < need; k++, i++) {
    /* Maximal subpart: stop before the first byte that cannot continue the sequence. */
    if (i >= len || s[i] < lo || s[i] > hi) { *consumed = i; return ZT_UNICODE_REPLACEMENT; }
    cp = (cp << 6) | (s[i] & 0x3F);
    lo = 0x80, hi = 0xBF;
  }
  *consumed = i;
  return cp;
}

int zt_utf8_encode(uint32_t cp, uint8_t out[4]) {
  if (cp > ZT_UC_MAX || (cp >= 0xD800 && cp <= 0xDFFF)) cp = ZT_UNICODE_REPLACEMENT;
  if (cp < 0x80) { out[0] = (uint8_t)cp; return 1; }
  if (cp < 0x800) { out[0] = (uint8_t)(0xC0 | (cp >> 6)); out[1] = (uint8_t)(0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000) {
    out[0] = (uint8_t)(0xE0 | (cp >> 12));
    out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (uint8_t)(0xF0 | (cp >> 18));
  out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (uint8_t)(0x80 | (cp & 0x3F));
  return 4;
}

int zt_utf8_valid(const uint8_t *s, size_t len, size_t *bad_offset) {
  size_t i = 0;
  while (i < len) {
    if (s[i] < 0x80) { i++; continue; }
    size_t used;
    uint32_t cp = zt_utf8_decode(s + i, len - i, &used);
    /* A genuine U+FFFD in the input is 3 bytes EF BF BD; a replacement for an error never is. */
    if (cp == ZT_UNICODE_REPLACEMENT && !(used == 3 && s[i] == 0xEF)) {
      if (bad_offset) *bad_offset = i;
      return 0;
    }
    i += used;
  }
  return 1;
}

/* ---- properties ---------------------------------------------------------------------------------- */

zt_ucat zt_unicode_category(uint32_t cp) {
  if (cp > ZT_UC_MAX) return ZT_UC_Cn;
  return (zt_ucat)zt_uc_blocks[(uint32_t)zt_uc_stage1[cp >> 7] * 128u + (cp & 127u)];
}

int zt_unicode_is_letter(uint32_t cp) {
  zt_ucat c = zt_unicode_category(cp);
  return c >= ZT_UC_Lu && c <= ZT_UC_Lo;
}

int zt_unicode_is_number(uint32_t cp) {
  zt_ucat c = zt_unicode_category(cp);
  return c >= ZT_UC_Nd && c <= ZT_UC_No;
}

/* White_Space (PropList.txt, stable since Unicode 6.3): the generator checks that Zs/Zl/Zp are exactly
 * the code points listed here besides the controls and U+0085. */
int zt_unicode_is_white_space(uint32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return 0;
  switch (cp) {
  case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
    return 1;
  default:
    return cp >= 0x2000 && cp <= 0x200A;
  }
}

/* Index of the range of a sorted {first, last, value} table holding cp, or -1. */
static int range_find(const uint32_t (*r)[3], int n, uint32_t cp) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (cp < r[mid][0]) hi = mid - 1;
    else if (cp > r[mid][1]) lo = mid + 1;
    else return mid;
  }
  return -1;
}

int zt_unicode_ccc(uint32_t cp) {
  int k = range_find(zt_uc_ccc_ranges, zt_uc_ccc_count, cp);
  return k < 0 ? 0 : (int)zt_uc_ccc_ranges[k][2];
}

/* Hangul syllable decomposition constants (Unicode 3.12). */
enum { HG_SBASE = 0xAC00, HG_LBASE = 0x1100, HG_VBASE = 0x1161, HG_TBASE = 0x11A7, HG_VCOUNT = 21,
       HG_TCOUNT = 28, HG_NCOUNT = HG_VCOUNT * HG_TCOUNT, HG_SCOUNT = 19 * HG_NCOUNT };

int zt_unicode_nfd_char(uint32_t cp, uint32_t out[4]) {
  if (cp >= HG_SBASE && cp < HG_SBASE + HG_SCOUNT) {
    uint32_t s = cp - HG_SBASE, t = s % HG_TCOUNT;
    out[0] = HG_LBASE + s / HG_NCOUNT;
    out[1] = HG_VBASE + (s % HG_NCOUNT) / HG_TCOUNT;
    if (t == 0) return 2;
    out[2] = HG_TBASE + t;
    return 3;
  }
  int lo = 0, hi = zt_uc_nfd_count - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (cp < zt_uc_nfd_cps[mid]) hi = mid - 1;
    else if (cp > zt_uc_nfd_cps[mid]) lo = mid + 1;
    else {
      int n = zt_uc_nfd_off[mid + 1] - zt_uc_nfd_off[mid];
      for (int i = 0; i < n; i++) out[i] = zt_uc_nfd_data[zt_uc_nfd_off[mid] + i];
      return n;
    }
  }
  out[0] = cp;
  return 1;
}

size_t zt_unicode_nfd(const uint32_t *in, size_t n, uint32_t *out) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t d[4];
    int k = zt_unicode_nfd_char(in[i], d);
    for (int j = 0; j < k; j++) {
      /* Canonical ordering: insertion sort of each run of non-starters, stable by ccc. */
      uint32_t c = d[j];
      int cc = zt_unicode_ccc(c);
      size_t p = m;
      if (cc != 0)
        while (p > 0 && zt_unicode_ccc(out[p - 1]) > cc) { out[p] = out[p - 1]; p--; }
      out[p] = c;
      m++;
    }
  }
  return m;
}

/* The primary composite of a + b (Hangul by the algorithm), or 0. */
static uint32_t compose_pair(uint32_t a, uint32_t b) {
  enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7, LCOUNT = 19, VCOUNT = 21, TCOUNT = 28 };
  if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
    return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
  if (a >= SBASE && a < SBASE + LCOUNT * VCOUNT * TCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE &&
      b < TBASE + TCOUNT)
    return a + (b - TBASE);
  if (a >= (1u << 21) || b >= (1u << 21)) return 0;
  const uint64_t key = ((uint64_t)a << 21) | b;
  int lo = 0, hi = zt_uc_compose_count - 1;
  while (lo <= hi) {
    const int mid = (lo + hi) / 2;
    if (key < zt_uc_compose_keys[mid]) hi = mid - 1;
    else if (key > zt_uc_compose_keys[mid]) lo = mid + 1;
    else return zt_uc_compose_cps[mid];
  }
  return 0;
}

size_t zt_unicode_nfc(const uint32_t *in, size_t n, uint32_t *out) {
  const size_t m = zt_unicode_nfd(in, n, out);
  if (m == 0) return 0;
  /* canonical composition in place (UAX #15): a character joins the last starter unless a character between them
   * has a combining class of 0 or at least its own */
  size_t starter = 0, k = 1;
  int last = zt_unicode_ccc(out[0]) ? 256 : 0;
  for (size_t i = 1; i < m; i++) {
    const uint32_t c = out[i];
    const int cc = zt_unicode_ccc(c);
    const uint32_t comp = compose_pair(out[starter], c);
    if (comp && (last < cc || last == 0)) {
      out[starter] = comp;
      continue;
    }
    if (cc == 0) starter = k;
    last = cc;
    out[k++] = c;
  }
  return k;
}

/* cp through one case mapping's tables (sorted one-to-one pairs, then the longer mappings); itself if unmapped. */
static int case_map(const uint32_t (*pairs)[2], int npairs, const uint32_t (*multi)[5], int nmulti, uint32_t cp,
                    uint32_t out[3]) {
  int lo = 0, hi = npairs - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (cp < pairs[mid][0]) hi = mid - 1;
    else if (cp > pairs[mid][0]) lo = mid + 1;
    else { out[0] = pairs[mid][1]; return 1; }
  }
  for (int i = 0; i < nmulti; i++) {
    if (multi[i][0] == cp) {
      int n = (int)multi[i][1];
      for (int j = 0; j < n; j++) out[j] = multi[i][2 + j];
      return n;
    }
  }
  out[0] = cp;
  return 1;
}

int zt_unicode_lower(uint32_t cp, uint32_t out[3]) {
  if (cp < 0x80) { out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; return 1; }
  return case_map(zt_uc_lower_pairs, zt_uc_lower_pair_count, zt_uc_lower_multi, zt_uc_lower_multi_count, cp, out);
}

int zt_unicode_title(uint32_t cp, uint32_t out[3]) {
  if (cp < 0x80) { out[0] = (cp >= 'a' && cp <= 'z') ? cp - 32 : cp; return 1; }
  return case_map(zt_uc_title_pairs, zt_uc_title_pair_count, zt_uc_title_multi, zt_uc_title_multi_count, cp, out);
}

/* 0: neither, 1: case-ignorable, 2: cased and not case-ignorable (the Final_Sigma scan's view). */
static int sigma_class(uint32_t cp) {
  int k = range_find(zt_uc_sigma_ranges, zt_uc_sigma_count, cp);
  return k < 0 ? 0 : (int)zt_uc_sigma_ranges[k][2];
}

int zt_unicode_lower_at(const uint32_t *s, size_t n, size_t i, uint32_t out[3]) {
  if (s[i] != 0x03A3) return zt_unicode_lower(s[i], out);
  /* Final_Sigma: \p{cased} \p{case-ignorable}* U+03A3 !( \p{case-ignorable}* \p{cased} ) */
  size_t j = i;
  while (j > 0 && sigma_class(s[j - 1]) == 1) j--;
  int final = j > 0 && sigma_class(s[j - 1]) == 2;
  if (final) {
    j = i + 1;
    while (j < n && sigma_class(s[j]) == 1) j++;
    final = j == n || sigma_class(s[j]) != 2;
  }
  out[0] = final ? 0x03C2 : 0x03C3;
  return 1;
}

const char *zt_unicode_version(void) { return zt_unicode_tables_version; }

size_t zt_utf8_sanitize(const uint8_t *s, size_t n, uint8_t **buf, size_t *cap) {
  if (*cap < 3 * n + 1) {
    *cap = 3 * n + 1;
    free(*buf);
    *buf = zt_malloc(*cap, "UTF-8 replacement buffer");
  }
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    if (s[i] < 0x80) { (*buf)[m++] = s[i++]; continue; }
    size_t used;
    uint32_t cp = zt_utf8_decode(s + i, n - i, &used);
    m += (size_t)zt_utf8_encode(cp, *buf + m);
    i += used;
  }
  return m;
}
