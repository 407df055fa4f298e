/* Knowledge distillation's term in the GPT student (models/transformer/kd.c through models/gpt/gpt.c), dumped for
 * test_kd_parity.py: a tiny GPT with the KD term (temperature, beta and the --seq-length divisor of each case) runs a
 * forward against random teacher logits and a backward with a loss-gradient scale; the dump holds the student's
 * logits, the teacher's, the targets and loss mask, the four losses and d(total)/d(logits) as the output layer's
 * backward applies it (the language-model loss's gradient plus the KD term's, times the scale).
 * Usage: kd_parity_dump OUTDIR TEMP BETA SEQ_LENGTH GRAD_SCALE */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt/gpt.h"
#include "parity_dump.h"
#include "runtime/base/error.h"

int main(int argc, char **argv) {
  zt_check(argc == 6, "usage", "kd_parity_dump OUTDIR TEMP BETA SEQ_LENGTH GRAD_SCALE");
  g_dir = argv[1];
  const float temp = (float)atof(argv[2]), beta = (float)atof(argv[3]), scale = (float)atof(argv[5]);
  const int B = 2, T = 6, V = 40;
  const zt_kd_config kd = {.temp = temp, .beta = beta, .seq_length = atoi(argv[4]), .name = "mos loss"};
  const zt_gpt_config cfg = {.num_layers = 2, .hidden_size = 16, .num_heads = 2, .ffn_hidden_size = 64,
                             .max_positions = T, .padded_vocab_size = V, .ln_eps = 1e-5f, .init_std = 0.3f,
                             .micro_batch = B, .seq_length = T, .zero_partitions = 1, .tp_size = 1, .pp_size = 1,
                             .vpp = 1, .pp_buffers = 1, .dtype = ZT_DTYPE_FP32, .kd = &kd};
  zt_gpt *m = zt_calloc(1, sizeof *m, "gpt");
  zt_gpt_build(m, &cfg, 0);
  zt_gpt_init_params(m, 7);
  g_rng = 99;
  int32_t tokens[2 * 6], targets[2 * 6];
  float mask[2 * 6], *teacher = zt_malloc((size_t)B * T * V * sizeof(float), "teacher");
  for (int i = 0; i < B * T; i++) {
    tokens[i] = (int32_t)(next_u64() % V);
    targets[i] = (int32_t)(next_u64() % V);
    mask[i] = i % 5 == 3 ? 0.0f : 1.0f;
  }
  for (int i = 0; i < B * T * V; i++) /* sharp and flat rows: N(0, 3) by Box-Muller */
    teacher[i] = (float)(3.0 * sqrt(-2.0 * log(1.0 - next_uniform())) * cos(6.283185307179586 * next_uniform()));
  const zt_batch b = {.B = B, .T = T, .tokens = tokens, .labels = targets, .loss_mask = mask};
  const zt_pass p = {.B = B, .T = T, .seed = 1, .training = 1, .kd_teacher_logits = teacher};
  zt_losses l;
  m->model.ops->forward(&m->model, 0, &b, &p, &l);
  const int64_t shape[3] = {B, T, V}, bt[2] = {B, T}, four[1] = {4};
  save("student_logits", m->lm.logits, "<f4", 3, shape);
  save("teacher_logits", teacher, "<f4", 3, shape);
  save("targets", targets, "<i4", 2, bt);
  save("loss_mask", mask, "<f4", 2, bt);
  zt_check(l.n == 4 && !strcmp(l.name[0], "total loss") && !strcmp(l.name[3], "mos loss"), "kd parity",
           "the losses are not {total loss, lm loss, moe loss, mos loss}");
  save("losses", l.value, "<f4", 1, four);
  m->model.ops->backward(&m->model, scale);
  save("dlogits", m->lm.logits, "<f4", 3, shape); /* the output layer's backward leaves d(logits) there */
  /* an evaluation pass (no teacher logits): the KD term is 0 and the other losses unchanged */
  zt_pass pe = p;
  pe.kd_teacher_logits = NULL;
  pe.training = 0;
  m->model.ops->forward(&m->model, 0, &b, &pe, &l);
  save("eval_losses", l.value, "<f4", 1, four);
  free(teacher);
  zt_gpt_free(m);
  free(m);
  return 0;
}
