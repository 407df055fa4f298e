/* run_text_generation_server: Megatron-DeepSpeed's `tools/run_text_generation_server.py` as one binary (a REST server
 * generating text from a pretrain_gpt checkpoint; evaluate/text_generation_server.c, docs/generate.md). */
#include "evaluate/text_generation_server.h"

int main(int argc, char **argv) { return zt_text_generation_server_main(argc, argv); }
