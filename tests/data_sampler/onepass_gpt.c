/* Test driver: pretrain_gpt whose model is planned for $ZT_PASS_ROWS rows instead of --micro-batch-size. Under the
 * seqlen_reshape metric a micro batch re-cut into R <= $ZT_PASS_ROWS rows then runs as one pass (padded with rows of
 * no loss), where pretrain_gpt runs it as several passes of --micro-batch-size rows weighted by their shares of the
 * loss mask (train/schedule.c): the two must train alike, which tests/data_sampler/test_data_sampler_train.sh checks.
 * Only re-cut micro batches fit this model: the schedule must stay below --seq-length and evaluation be off. */
#include <stdlib.h>

#include "checkpoints/train_main.h"
#include "data/gpt_provider.h"
#include "models/gpt/gpt.h"
#include "runtime/base/error.h"

static zt_model *build_model(const zt_model_args *a, const zt_model_setup *s) {
  const char *rows = getenv("ZT_PASS_ROWS");
  zt_check(rows && atoi(rows) >= s->micro_batch, "data_sampler_onepass_gpt", "set ZT_PASS_ROWS to the rows of a "
           "pass (at least --micro-batch-size %d)", s->micro_batch);
  zt_model_setup t = *s;
  t.micro_batch = atoi(rows);
  return zt_gpt_create(a, &t);
}

static const zt_model_kind k_onepass_gpt = {.name = "GPT", .build_model = build_model,
                                            .build_data = zt_gpt_provider_create, .count_params = zt_gpt_count,
                                            .causal = 1, .seqlen_curriculum = 1};

int main(int argc, char **argv) { return zt_train_main(argc, argv, &k_onepass_gpt, "gpt"); }
