/* libFuzzer harness: the ds_config.json reader, parser and validator (train/ds_config.c) on arbitrary
 * bytes, through the file path as pretrain_gpt --deepspeed_config reads it. */
#include "tests/fuzz/fuzz.h"
#include "train/ds_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = zt_fuzz_file("ds_config.json", data, size);
  zt_ds_config c;
  memset(&c, 0, sizeof c);
  ZT_FUZZ_TRY {
    zt_ds_config_load(&c, path);
    zt_ds_config_free(&c);
  }
  return 0;
}
