/* pretrain_t5: Megatron-DeepSpeed's pretrain_t5.py as one binary: the T5 model kind (models/t5/t5.h, the T5 data
 * provider data/t5_provider.h, the parameter count) run by the shared main program (checkpoints/train_main.c).
 * BertWordPieceLowerCase is the default tokenizer; the log line shows lm loss. */
#include "checkpoints/train_main.h"
#include "data/t5_provider.h"
#include "models/t5/t5.h"

static const zt_model_kind k_t5 = {.name = "T5", .build_model = zt_t5_create, .build_data = zt_t5_provider_create,
                                   .count_params = zt_t5_count, .encoder_decoder = 1};

int main(int argc, char **argv) { return zt_train_main(argc, argv, &k_t5, "t5"); }
