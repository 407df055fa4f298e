/* GPT's data provider (data/provider.h): Megatron's GPT datasets (data/gpt_data.h) or the --mock-data stream,
 * samples of seq_length + 1 tokens cut into inputs and next-token labels, with get_ltor_masks_and_position_ids'
 * loss mask, position ids and packed-document attention starts. */
#ifndef ZT_GPT_PROVIDER_H
#define ZT_GPT_PROVIDER_H

#include "data/provider.h"

/* Opens and validates the datasets (every problem dies naming the flag or the file), builds or loads the index
 * caches, and prints Megatron's dataset lines. */
zt_data_provider *zt_gpt_provider_create(const zt_data_setup *s);

#endif
