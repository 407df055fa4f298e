/* CRC32C (Castagnoli): slicing-by-8 tables built on first use, and the SSE4.2 crc32 instruction on
 * x86-64 CPUs that report it (checked once at run time, so one binary runs on every x86-64). */
#include "runtime/base/crc32c.h"

#include <pthread.h>
#include <string.h>

#define ZT_CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_build_tables(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ ZT_CRC32C_POLY : c >> 1;
    crc_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t zt_crc32c_sw(uint32_t crc, const void *data, size_t len) {
  pthread_once(&crc_once, crc_build_tables);
  const uint8_t *p = data;
  uint32_t c = ~crc;
  while (len >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    lo = __builtin_bswap32(lo);
    hi = __builtin_bswap32(hi);
#endif
    lo ^= c;
    c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
        crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
        crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
  return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *data, size_t len) {
  const uint8_t *p = data;
  uint64_t c = ~crc;
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (len--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return ~c32;
}

uint32_t zt_crc32c(uint32_t crc, const void *data, size_t len) {
  static int have_hw = -1;
  if (have_hw < 0) {
    __builtin_cpu_init();
    have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
  }
  return have_hw ? crc32c_hw(crc, data, len) : zt_crc32c_sw(crc, data, len);
}
#else
uint32_t zt_crc32c(uint32_t crc, const void *data, size_t len) { return zt_crc32c_sw(crc, data, len); }
#endif

uint32_t zt_crc32c_masked(const void *data, size_t len) {
  uint32_t c = zt_crc32c(0, data, len);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
