/* libFuzzer harness: the Megatron mmap .idx/.bin reader (data/indexed_dataset.c) on arbitrary bytes. Input: a
 * 4-byte little-endian length L, then L bytes of .idx, then the .bin. An accepted pair must give every item's tokens
 * (zt_indexed_get over the first 256 items) without reading outside the mappings (ASan watches the copies). */
#include "data/indexed_dataset.h"
#include "tests/fuzz/fuzz.h"

static zt_indexed_dataset g_ds;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  uint32_t idx_len = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
  data += 4, size -= 4;
  if (idx_len > size) idx_len = (uint32_t)size;
  const char *idx = zt_fuzz_file("d.idx", data, idx_len);
  zt_fuzz_file("d.bin", data + idx_len, size - idx_len);
  char prefix[512];
  snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(idx) - 4), idx);
  static int32_t out[1 << 16];
  ZT_FUZZ_TRY {
    zt_indexed_open(&g_ds, prefix);
    for (int64_t i = 0; i < g_ds.num_items && i < 256; i++) {
      int64_t n = zt_indexed_size(&g_ds, i);
      if (n > (int64_t)(sizeof out / sizeof out[0])) n = sizeof out / sizeof out[0];
      zt_indexed_get(&g_ds, i, 0, n, out);
    }
    for (int64_t k = 0; k <= g_ds.num_docs; k++) (void)zt_indexed_doc(&g_ds, k);
  }
  zt_indexed_close(&g_ds); /* also after a refusal: open leaves what it mapped in g_ds */
  return 0;
}
