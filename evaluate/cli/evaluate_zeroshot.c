/* evaluate_zeroshot: Megatron-DeepSpeed's `tasks/main.py --task LAMBADA|WIKITEXT103` as one binary (zero-shot
 * evaluation of a pretrain_gpt checkpoint; evaluate/zeroshot.c, docs/evaluate.md). */
#include "evaluate/zeroshot.h"

int main(int argc, char **argv) { return zt_zeroshot_main(argc, argv); }
