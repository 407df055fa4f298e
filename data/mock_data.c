/* The synthetic stream: documents of 16..(seq+16) tokens, strides from a small set of 8. */
#include "data/mock_data.h"

#include "runtime/base/philox.h"

static uint32_t draw(const zt_mock_data *d, uint64_t index, uint64_t k) {
  zt_philox_ctr c = {{(uint32_t)k, (uint32_t)(k >> 32), (uint32_t)index, (uint32_t)(index >> 32)}};
  uint32_t k0, k1;
  zt_philox_key(d->seed ^ (d->split_id * 0x9E3779B97F4A7C15ull), ZT_RNG_DATA, &k0, &k1);
  return zt_philox4x32(c, k0, k1).v[0];
}

void zt_mock_data_sample(const zt_mock_data *d, uint64_t index, int32_t *out) {
  const int V = d->vocab_size, eod = V - 1, n = d->seq_length + 1;
  const int strides[8] = {1, 2, 3, 5, 7, 11, 13, 17};
  int t = 0;
  uint64_t doc = 0;
  while (t < n) {
    uint32_t len = 16 + draw(d, index, 3 * doc) % (uint32_t)(d->seq_length + 1);
    int32_t x = (int32_t)(draw(d, index, 3 * doc + 1) % (uint32_t)(V - 1));
    int stride = strides[draw(d, index, 3 * doc + 2) % 8];
    for (uint32_t i = 0; i < len && t < n; i++) {
      out[t++] = x;
      x = (x + stride) % (V - 1);
    }
    if (t < n) out[t++] = eod;
    doc++;
  }
}
