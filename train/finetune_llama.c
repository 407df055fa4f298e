/* finetune_llama: Megatron-DeepSpeed's finetune_llama.py as one binary: the GPT model kind (the Llama flags of
 * pretrain_gpt) trained on Alpaca-style supervised data (data/prompt_provider.h) with the loss on the responses
 * only, run by the shared main program (checkpoints/train_main.c). Checkpoints are pretrain_gpt's: --load takes
 * hf2megads_weight_converter's output, and pretrain_gpt, export_hf and hf2megads_weight_converter --to-hf-ckpt
 * read what it saves. */
#include "checkpoints/train_main.h"
#include "data/prompt_provider.h"
#include "models/gpt/gpt.h"
#include "train/args.h"

static const zt_model_kind k_sft = {
    .name = "GPT", .build_model = zt_gpt_create, .build_data = zt_prompt_provider_create,
    .count_params = zt_gpt_count, .causal = 1, .seqlen_curriculum = 1,
    .no_data_sampling = "finetune_llama.py's data_post_process reads a 'text' field its SupervisedDataset does not "
                        "have (Megatron-DeepSpeed fails there): use ds_config's legacy curriculum_learning block "
                        "instead"};

int main(int argc, char **argv) {
  zt_args_data_usage = "--data-path ALPACA.json --tokenizer-type HFTokenizer --tokenizer-model HF_DIR\n"
                       "       [--load CKPT --finetune]";
  return zt_train_main(argc, argv, &k_sft, "gpt");
}
