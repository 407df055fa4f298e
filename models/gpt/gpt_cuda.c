/* GPT on one GPU as one object (see gpt_cuda.h): the shared model on the CUDA backend and an Adam step over its
 * parameter ranges. Nothing here computes the model: gpt.c does, on whichever backend it is built. */
#include "models/gpt/gpt_cuda.h"

#include <math.h>
#include <stdlib.h>

#include "runtime/base/error.h"
#include "runtime/ops/cuda/cuda_device.h"

struct zt_gpt_cuda {
  zt_gpt m;
  size_t *off, *len; /* the parameters' ranges of the flat buffers (Adam's multi-tensor launch) */
  float *wd;         /* their weight decay of the last step's configuration */
};

static zt_gpt_config device_config(const zt_gpt_config *cfg, zt_dtype dt) {
  zt_check(cfg->tp_size <= 1, "unsupported configuration", "the one-GPU model object runs without tensor "
           "parallelism (--tensor-model-parallel-size %d): the trainer runs the parallel layouts", cfg->tp_size);
  zt_check(cfg->pp_size <= 1, "unsupported configuration", "the one-GPU model object runs without pipeline "
           "parallelism (--pipeline-model-parallel-size %d): the trainer runs the parallel layouts", cfg->pp_size);
  zt_check(cfg->zero_partitions <= 1 && !cfg->optim_offloaded, "unsupported configuration", "the one-GPU model "
           "object runs without ZeRO partitions or optimizer offload: the trainer runs them");
  const zt_backend *be = zt_cuda_device_count() > 0 ? zt_backend_cuda(0) : NULL;
  zt_check(be != NULL, "gpt", "no CUDA device (or a build without CUDA): the GPU model cannot be built");
  zt_gpt_config c = *cfg;
  c.backend = be;
  c.dtype = dt;
  c.master_weights = dt != ZT_DTYPE_FP32;
  return c;
}

zt_gpt_cuda_bytes zt_gpt_cuda_plan(const zt_gpt_config *cfg, zt_dtype dt, int B) {
  const zt_gpt_config c = device_config(cfg, dt);
  size_t k[ZT_MEM_KINDS];
  const size_t total = zt_gpt_plan_bytes(&c, B, k);
  return (zt_gpt_cuda_bytes){k[ZT_MEM_PARAMS], k[ZT_MEM_GRADS], k[ZT_MEM_OPTIM], k[ZT_MEM_ACTIVATIONS], total};
}

zt_gpt_cuda *zt_gpt_cuda_build(const zt_gpt_config *cfg, zt_dtype dt) {
  const zt_gpt_config c = device_config(cfg, dt);
  zt_gpt_cuda *g = zt_calloc(1, sizeof *g, "gpt_cuda");
  zt_gpt_build(&g->m, &c, 0);
  const zt_param_table *t = &g->m.table;
  g->off = zt_malloc(sizeof(size_t) * (size_t)t->count, "adam ranges");
  g->len = zt_malloc(sizeof(size_t) * (size_t)t->count, "adam ranges");
  g->wd = zt_malloc(sizeof(float) * (size_t)t->count, "adam ranges");
  for (int i = 0; i < t->count; i++) g->off[i] = t->params[i].offset, g->len[i] = t->params[i].numel;
  return g;
}

void zt_gpt_cuda_free(zt_gpt_cuda *g) {
  if (!g) return;
  g->m.model.be->synchronize();
  zt_gpt_free(&g->m);
  free(g->off), free(g->len), free(g->wd);
  free(g);
}

const zt_param_table *zt_gpt_cuda_table(const zt_gpt_cuda *g) { return &g->m.table; }

/* The fp32 weights the optimizer updates: the masters with a half dt, else the parameters. */
static float *weights(const zt_gpt_cuda *g) { return g->m.master ? g->m.master : (float *)g->m.model.params; }

void zt_gpt_cuda_set_params(zt_gpt_cuda *g, const float *host) {
  const size_t n = g->m.table.numel;
  if (g->m.master) g->m.model.be->from_host(g->m.master, host, n * sizeof(float));
  zt_model_set_params(&g->m.model, host, 0, n, ZT_DTYPE_FP32);
}
void zt_gpt_cuda_get_params(const zt_gpt_cuda *g, float *host) {
  g->m.model.be->to_host(host, weights(g), g->m.table.numel * sizeof(float));
}
void zt_gpt_cuda_set_moments(zt_gpt_cuda *g, const float *m, const float *v) {
  const size_t n = g->m.table.numel;
  g->m.model.be->from_host(g->m.optim_state, m, n * sizeof(float));
  g->m.model.be->from_host(g->m.optim_state + n, v, n * sizeof(float));
}
void zt_gpt_cuda_get_moments(const zt_gpt_cuda *g, float *m, float *v) {
  const size_t n = g->m.table.numel;
  g->m.model.be->to_host(m, g->m.optim_state, n * sizeof(float));
  g->m.model.be->to_host(v, g->m.optim_state + n, n * sizeof(float));
}
void zt_gpt_cuda_get_grads(const zt_gpt_cuda *g, float *host) {
  g->m.model.be->to_host(host, g->m.grads, g->m.table.numel * sizeof(float));
}

float zt_gpt_cuda_forward(zt_gpt_cuda *g, const int32_t *tokens, const int32_t *positions, const int32_t *targets,
                          const float *loss_mask, const zt_pass *pass) {
  return zt_gpt_forward(&g->m, tokens, positions, targets, loss_mask, pass);
}
void zt_gpt_cuda_backward(zt_gpt_cuda *g, float grad_scale) { zt_gpt_backward(&g->m, grad_scale); }

double zt_gpt_cuda_grad_norm(zt_gpt_cuda *g) { return g->m.model.be->norm2(g->m.grads, g->m.table.numel); }

void zt_gpt_cuda_zero_grads(zt_gpt_cuda *g) {
  g->m.model.be->memset(g->m.grads, 0, g->m.table.numel * sizeof(float));
}

void zt_gpt_cuda_adam_step(zt_gpt_cuda *g, const zt_opt_config *cfg, double lr, float grad_scale, int64_t step) {
  zt_check(cfg->kind == ZT_OPT_ADAM, "unsupported configuration", "the GPU model's optimizer is Adam/AdamW for now "
           "(--optimizer adam)");
  const zt_param_table *t = &g->m.table;
  for (int i = 0; i < t->count; i++) g->wd[i] = t->params[i].no_weight_decay ? 0.0f : cfg->weight_decay;
  const float bc1 = 1.0f - powf(cfg->beta1, (float)step), bc2 = 1.0f - powf(cfg->beta2, (float)step);
  const zt_adam_args a = {.lr = (float)lr, .beta1 = cfg->beta1, .beta2 = cfg->beta2, .eps = cfg->eps,
                          .inv_bc1 = 1.0f / bc1, .inv_sqrt_bc2 = 1.0f / sqrtf(bc2), .grad_scale = grad_scale,
                          .adam_w_mode = cfg->adam_w_mode};
  const size_t n = t->numel;
  g->m.model.be->adam_step(weights(g), g->m.grads, g->m.optim_state, g->m.optim_state + n,
                           g->m.master ? g->m.model.params : NULL, g->m.model.dt, g->off, g->len, g->wd, t->count, &a);
}
