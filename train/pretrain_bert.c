/* pretrain_bert: Megatron-DeepSpeed's pretrain_bert.py as one binary: the BERT model kind (models/bert/bert.h, the
 * BERT data provider data/bert_provider.h, the parameter count) run by the shared main program
 * (checkpoints/train_main.c). BertWordPieceLowerCase is the default tokenizer; the log line shows lm loss and
 * sop loss; under the data sampler each micro batch is cut to its longest sample (pretrain_bert.py's
 * data_post_process). */
#include "checkpoints/train_main.h"
#include "data/bert_provider.h"
#include "models/bert/bert.h"

static const zt_model_kind k_bert = {.name = "BERT", .build_model = zt_bert_create,
                                     .build_data = zt_bert_provider_create, .count_params = zt_bert_count,
                                     .longest_cut = 1};

int main(int argc, char **argv) { return zt_train_main(argc, argv, &k_bert, "bert"); }
