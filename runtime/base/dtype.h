/* Storage dtypes (fp32, fp16, bf16) and their conversions to and from fp32.
 * float -> half/bf16 rounds to nearest, ties to even; NaN stays NaN (quiet), overflow goes to infinity
 * (fp16 above 65504 after rounding), fp16 subnormals are produced and read exactly. */
#ifndef ZT_DTYPE_H
#define ZT_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum { ZT_DTYPE_FP32 = 0, ZT_DTYPE_FP16 = 1, ZT_DTYPE_BF16 = 2 } zt_dtype;

size_t zt_dtype_size(zt_dtype dt);
const char *zt_dtype_name(zt_dtype dt);

uint16_t zt_fp32_to_fp16(float f);
float zt_fp16_to_fp32(uint16_t h);
uint16_t zt_fp32_to_bf16(float f);
float zt_bf16_to_fp32(uint16_t b);

/* Converts n elements between storage dtypes (src and dst must not overlap unless equal dtype). */
void zt_convert(void *dst, zt_dtype dst_dt, const void *src, zt_dtype src_dt, size_t n);

/* Rounds n floats to the nearest value of dt (kept in fp32 slots: how the CPU path stores fp16/bf16
 * tensors it computes on in fp32); dst may equal src. Returns how many results are inf or nan. */
size_t zt_round_f32(float *dst, const float *src, size_t n, zt_dtype dt);
/* How many of n floats would not survive a conversion to dt: nan, or beyond its largest finite value
 * once rounded (fp16: |x| >= 65520). */
size_t zt_count_nonrepresentable(const float *x, size_t n, zt_dtype dt);

#endif
