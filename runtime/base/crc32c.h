/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78), as used by TFRecord framing of TensorBoard
 * event files; SSE4.2's crc32 instruction when the CPU has it, a slicing-by-8 table otherwise. */
#ifndef ZT_CRC32C_H
#define ZT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C of data continuing from a previous value (0 to start): zt_crc32c(zt_crc32c(0, a), b) is
 * the CRC of a followed by b. crc32c("123456789") = 0xE3069283. */
uint32_t zt_crc32c(uint32_t crc, const void *data, size_t len);
/* The table implementation alone (tests compare it with the hardware path). */
uint32_t zt_crc32c_sw(uint32_t crc, const void *data, size_t len);
/* TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8 of crc32c(data). */
uint32_t zt_crc32c_masked(const void *data, size_t len);

#endif
