/* generate_samples: Megatron-DeepSpeed's `tools/generate_samples_gpt.py` as one binary (text generation from a
 * pretrain_gpt checkpoint; evaluate/generate.c, docs/generate.md). */
#include "evaluate/generate.h"

int main(int argc, char **argv) { return zt_generate_main(argc, argv); }
