/* The data provider of finetune_llama (data/provider.h): Megatron-DeepSpeed's finetune_llama.py, whose training
 * data is one SupervisedDataset (data/prompt_dataset.h) read from the first --data-path word with the
 * HFTokenizer, and no validation or test data (its provider returns None for both, whatever --split says). A batch
 * is get_batch_pipe's: tokens = input_ids[:-1], labels = labels[1:], loss mask = labels != pad, position ids and
 * attention mask as get_ltor_masks_and_position_ids makes them with eod = the eos token. */
#ifndef ZT_PROMPT_PROVIDER_H
#define ZT_PROMPT_PROVIDER_H

#include "data/provider.h"

/* Builds the dataset; dies before training when the setup cannot run (another tokenizer, several data paths,
 * fewer examples than the training samples without --repeated-dataloader or --dataloader-type cyclic). */
zt_data_provider *zt_prompt_provider_create(const zt_data_setup *s);

#endif
