/* pretrain_gpt: Megatron-DeepSpeed's pretrain_gpt.py as one binary: the GPT model kind (model, data provider,
 * parameter count) run by the shared main program (checkpoints/train_main.c). */
#include "checkpoints/train_main.h"
#include "data/gpt_provider.h"
#include "models/gpt/gpt.h"

static const zt_model_kind k_gpt = {.name = "GPT", .build_model = zt_gpt_create,
                                    .build_data = zt_gpt_provider_create, .count_params = zt_gpt_count,
                                    .causal = 1, .seqlen_curriculum = 1};

int main(int argc, char **argv) { return zt_train_main(argc, argv, &k_gpt, "gpt"); }
