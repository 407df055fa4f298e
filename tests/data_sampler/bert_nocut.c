/* Test driver: pretrain_bert with the data sampler's order but without data_post_process's cut: the BERT kind run
 * the way the GPT one is (seqlen_truncate cuts each micro batch to its difficulty; without that metric the micro
 * batches keep --seq-length). The cut to the longest sample drops only padding, which the encoder masks and the
 * losses skip, so pretrain_bert under the sampler must train as this driver does (to rounding), and equal it bit for
 * bit where both cut at the same multiple of 8: tests/data_sampler/test_bert_data_sampling.sh compares them. */
#include "checkpoints/train_main.h"
#include "data/bert_provider.h"
#include "models/bert/bert.h"

static const zt_model_kind k_bert_nocut = {.name = "BERT", .build_model = zt_bert_create,
                                           .build_data = zt_bert_provider_create, .count_params = zt_bert_count,
                                           .seqlen_curriculum = 1};

int main(int argc, char **argv) { return zt_train_main(argc, argv, &k_bert_nocut, "bert"); }
