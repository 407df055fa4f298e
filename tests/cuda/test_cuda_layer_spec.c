/* The layer spec's paths GPT does not take, on the GPU against the CPU (models/transformer/transformer.h): a T5
 * decoder layer (causal self-attention, cross-attention over an encoder output of another length with a key padding)
 * and a bidirectional layer with a key padding (BERT, the T5 encoder), each built from the zt_block_* functions once
 * on zt_backend_cpu() in fp32 and once on zt_backend_cuda(0) in fp32 and bf16, from the same parameters and inputs
 * (rounded to the storage dtype, uploaded through the backend's from_host and convert), with attention and hidden
 * dropout on (the masks are keyed the same way on both backends). The forward output, the input gradient, the
 * encoder output's gradient and every parameter's gradient agree to 1e-4 (fp32) or the harness's bf16 tolerance of
 * each tensor's largest magnitude; the padded encoder positions' gradient is exactly zero on the GPU too. The GPU
 * keeps the attention's log-sum-exp where the CPU keeps probabilities: the blocks size that through the table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/transformer/transformer.h"
#include "tests/cuda/harness.h"

enum { B = 2, T = 8, C = 16, NH = 2, HD = 8, FFN = 64, LAYER = 1, TK_MAX = 11 };
#define NX ((size_t)B * T * C)

/* Key paddings: sample 0 pads its tail, sample 1 positions inside the sequence too; the encoder's likewise (the last
 * two positions of sample 0, positions 0 and 3 of sample 1: mem_padding). */
static const uint8_t k_pad[B * T] = {0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 1};

static void mem_padding(uint8_t *pad, int tk) {
  for (int j = 0; j < tk; j++) pad[j] = j >= tk - 2, pad[tk + j] = j == 0 || j == 3;
}

/* The host values both backends start from: parameters in table order, input, encoder output [B, tk, C] and its
 * key padding, d(output). */
typedef struct {
  float *params, *x, *mem, *dout;
  int tk;
  uint8_t mem_pad[B * TK_MAX];
} inputs;

/* One layer on a backend, everything it touches in one memory plan on that backend. */
typedef struct {
  const zt_backend *be;
  zt_dtype dt;
  size_t es;
  zt_layer_spec spec;
  const char *prefix;
  zt_tp tp;
  zt_block_config cfg;
  zt_param_table table;
  zt_memplan plan;
  zt_block blk;
  zt_block_scratch s;
  int tk;
  size_t nm; /* B * tk * C */
  void *params, *grads, *x, *out, *dres, *mem, *dmem;
  uint8_t *pad, *mem_pad;
  float *stage; /* fp32 staging for the conversions */
  size_t nstage;
} layer;

static void plan_layer(layer *L) {
  zt_memplan *p = &L->plan;
  const int cross = L->spec.cross_attention;
  const size_t P = L->table.numel;
  L->params = zt_memplan_bytes(p, ZT_MEM_PARAMS, P * L->es);
  L->grads = zt_memplan_bytes(p, ZT_MEM_GRADS, P * L->es);
  L->x = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NX * L->es);
  L->out = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NX * L->es);
  L->dres = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, NX * L->es);
  L->mem = cross ? zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, L->nm * L->es) : NULL;
  L->dmem = cross ? zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, L->nm * L->es) : NULL;
  L->pad = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, B * T);
  L->mem_pad = zt_memplan_bytes(p, ZT_MEM_ACTIVATIONS, (size_t)B * L->tk);
  L->nstage = P > NX ? P : NX;
  L->stage = zt_memplan_floats(p, ZT_MEM_ACTIVATIONS, L->nstage);
  zt_block_plan_acts(&L->blk, p, &L->cfg, B, T, L->tk);
  zt_block_plan_scratch(&L->s, p, &L->spec, &L->cfg, &L->blk.ffn, 1, B, T, L->tk);
}

/* host fp32 -> n elements of the layer's dtype in backend memory */
static void upload(layer *L, void *dst, const float *host, size_t n) {
  if (L->dt == ZT_DTYPE_FP32) {
    L->be->from_host(dst, host, n * sizeof(float));
    return;
  }
  L->be->from_host(L->stage, host, n * sizeof(float));
  L->be->convert(dst, L->dt, L->stage, ZT_DTYPE_FP32, n);
}

static void download(layer *L, float *host, const void *src, size_t n) {
  if (L->dt == ZT_DTYPE_FP32) {
    L->be->to_host(host, src, n * sizeof(float));
    return;
  }
  L->be->convert(L->stage, ZT_DTYPE_FP32, src, L->dt, n);
  L->be->to_host(host, L->stage, n * sizeof(float));
}

static void layer_build(layer *L, const zt_backend *be, zt_dtype dt, const zt_layer_spec *spec, const char *prefix,
                        const inputs *in) {
  memset(L, 0, sizeof *L);
  L->be = be;
  L->dt = dt;
  L->es = zt_dtype_size(dt);
  L->spec = *spec;
  L->prefix = prefix;
  L->tk = in->tk;
  L->nm = (size_t)B * in->tk * C;
  L->tp = (zt_tp){.size = 1, .be = be, .dt = dt};
  L->cfg = (zt_block_config){.C = C, .NH = NH, .HD = HD, .FFN = FFN, .ln_eps = 1e-5f, .attn_dropout = 0.1f,
                             .hidden_dropout = 0.1f, .init_std = 0.02f, .out_init_std = 0.01f, .tp = &L->tp};
  L->blk.spec = *spec;
  L->blk.layer = LAYER;
  L->blk.ffn = zt_ffn_make(spec->mlp);
  zt_param_table_init(&L->table);
  zt_block_register(&L->table, prefix, spec, &L->cfg, &L->blk.ffn);
  L->plan.alloc = be->host_visible ? NULL : be->alloc;
  L->plan.release = be->host_visible ? NULL : be->release;
  plan_layer(L); /* sizing */
  zt_memplan_allocate(&L->plan);
  plan_layer(L); /* carving */
  zt_block_bind(&L->blk, &L->table, prefix, L->params, L->grads, L->es);
  upload(L, L->params, in->params, L->table.numel);
  upload(L, L->x, in->x, NX);
  if (L->mem) upload(L, L->mem, in->mem, L->nm);
  be->from_host(L->pad, k_pad, sizeof k_pad);
  be->from_host(L->mem_pad, in->mem_pad, (size_t)B * L->tk);
}

static void layer_free(layer *L) {
  zt_ffn_destroy(&L->blk.ffn);
  zt_param_table_free(&L->table);
  zt_memplan_free(&L->plan);
}

/* What a run gives back on the host: the output, the input's, encoder output's and parameters' gradients. */
typedef struct {
  float *out, *dx, *dmem, *grads;
} results;

/* Forward and backward (d(out) = in->dout) with dropout on; the self-attention gets the key padding when the layer
 * is bidirectional. */
static results run(layer *L, const inputs *in) {
  const int cross = L->spec.cross_attention;
  const zt_pass pass = {.B = B, .T = T, .first_sample = 6, .seed = 21, .training = 1,
                        .key_padding = cross ? NULL : L->pad};
  const zt_cross_input mem = {.x = L->mem, .Tk = L->tk, .padding = L->mem_pad, .grad = L->dmem};
  L->be->memset(L->grads, 0, L->table.numel * L->es);
  if (cross) L->be->memset(L->dmem, 0, L->nm * L->es);
  zt_block_forward(&L->blk, L->out, L->x, cross ? &mem : NULL, &L->cfg, &pass, &L->s);
  upload(L, L->dres, in->dout, NX);
  zt_block_backward(&L->blk, L->dres, L->x, cross ? &mem : NULL, &L->cfg, &pass, &L->s, 0.0f);
  results r = {h_alloc(NX), h_alloc(NX), cross ? h_alloc(L->nm) : NULL, h_alloc(L->table.numel)};
  download(L, r.out, L->out, NX);
  download(L, r.dx, L->dres, NX);
  if (cross) download(L, r.dmem, L->dmem, L->nm);
  download(L, r.grads, L->grads, L->table.numel);
  return r;
}

static void results_free(results *r) { free(r->out), free(r->dx), free(r->dmem), free(r->grads); }

/* x[n] = U(lo, hi) from the data stream (seed, stream). */
static void uniform_fill(float *x, size_t n, float lo, float hi, uint64_t seed, uint64_t stream) {
  for (size_t j = 0; j < n; j++) x[j] = lo + (hi - lo) * zt_philox_uniform(seed, ZT_RNG_DATA, stream, j);
}

/* Values drawn from seed and rounded to dt: linear weights U(-a, a) with a = sqrt(3 / fan_in) (O(1) attention scores
 * and GELU inputs), norm weights U(0.8, 1.2), biases U(-0.2, 0.2); input and encoder output U(-1.5, 1.5); d(output)
 * U(-1, 1). */
static inputs make_inputs(const zt_param_table *t, zt_dtype dt, int tk, uint64_t seed) {
  const size_t nm = (size_t)B * tk * C;
  inputs in = {h_alloc(t->numel), h_alloc(NX), h_alloc(nm), h_alloc(NX), .tk = tk};
  mem_padding(in.mem_pad, tk);
  uint64_t stream = 0;
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    const float a = p->ndim == 2 ? sqrtf(3.0f / (float)p->shape[1]) : 0.2f, mid = p->init == ZT_INIT_ONES ? 1.0f : 0.0f;
    uniform_fill(in.params + p->offset, p->numel, mid - a, mid + a, seed, stream++);
  }
  uniform_fill(in.x, NX, -1.5f, 1.5f, seed, stream++);
  uniform_fill(in.mem, nm, -1.5f, 1.5f, seed, stream++);
  uniform_fill(in.dout, NX, -1.0f, 1.0f, seed, stream++);
  zt_round_f32(in.params, in.params, t->numel, dt);
  zt_round_f32(in.x, in.x, NX, dt);
  zt_round_f32(in.mem, in.mem, nm, dt);
  zt_round_f32(in.dout, in.dout, NX, dt);
  return in;
}

static void parity(const char *kind, const zt_layer_spec *spec, const char *prefix, int tk, zt_dtype dt) {
  char tag[96], what[256];
  snprintf(tag, sizeof tag, "%s %s", kind, zt_dtype_name(dt));
  const double tol = dt == ZT_DTYPE_FP32 ? 1e-4 : h_tol(dt);
  /* the table (for the inputs' layout) from a throw-away registration */
  zt_param_table t;
  zt_param_table_init(&t);
  {
    const zt_tp one = {.size = 1, .be = zt_backend_cpu(), .dt = ZT_DTYPE_FP32};
    const zt_block_config cfg = {.C = C, .NH = NH, .HD = HD, .FFN = FFN, .tp = &one};
    zt_ffn f = zt_ffn_make(spec->mlp);
    zt_block_register(&t, prefix, spec, &cfg, &f);
    zt_ffn_destroy(&f);
  }
  inputs in = make_inputs(&t, dt, tk, 1000 + (uint64_t)dt + 7 * (uint64_t)tk);
  layer cpu, gpu;
  layer_build(&cpu, zt_backend_cpu(), ZT_DTYPE_FP32, spec, prefix, &in);
  layer_build(&gpu, zt_backend_cuda(0), dt, spec, prefix, &in);
  if (gpu.table.numel != t.numel || cpu.table.numel != t.numel) {
    printf("FAIL %s: tables of %zu and %zu elements, expected %zu\n", tag, gpu.table.numel, cpu.table.numel, t.numel);
    h_fail++;
  } else {
    results want = run(&cpu, &in), got = run(&gpu, &in);
    snprintf(what, sizeof what, "%s: output", tag);
    h_check_host(what, got.out, want.out, NX, tol);
    snprintf(what, sizeof what, "%s: d input", tag);
    h_check_host(what, got.dx, want.dx, NX, tol);
    if (spec->cross_attention) {
      snprintf(what, sizeof what, "%s: d encoder output", tag);
      h_check_host(what, got.dmem, want.dmem, (size_t)B * tk * C, tol);
      /* padded encoder positions: exactly zero on the GPU too (either sign) */
      size_t nonzero = 0;
      for (int n = 0; n < B * tk; n++)
        for (int c = 0; c < C && in.mem_pad[n]; c++) nonzero += got.dmem[(size_t)n * C + c] != 0.0f;
      if (nonzero)
        printf("FAIL %s: %zu gradient elements of padded encoder positions are not 0\n", tag, nonzero), h_fail++;
      else
        printf("PASS %s: padded encoder positions get exactly zero gradient\n", tag), h_pass++;
    }
    for (int i = 0; i < t.count; i++) {
      const zt_param *p = &t.params[i];
      snprintf(what, sizeof what, "%s: grad %s", tag, p->name + strlen(prefix) + 1);
      h_check_host(what, got.grads + p->offset, want.grads + p->offset, p->numel, tol);
    }
    results_free(&want);
    results_free(&got);
  }
  layer_free(&gpu);
  layer_free(&cpu);
  free(in.params), free(in.x), free(in.mem), free(in.dout);
  zt_param_table_free(&t);
}

int main(void) {
  h_init("test_cuda_layer_spec");
  const zt_layer_spec decoder = {.self_mask = ZT_ATTN_CAUSAL, .cross_attention = 1, .mlp = ZT_MLP_DENSE};
  const zt_layer_spec bidir = {.self_mask = ZT_ATTN_NONE, .cross_attention = 0, .mlp = ZT_MLP_DENSE};
  const zt_dtype dts[2] = {ZT_DTYPE_FP32, ZT_DTYPE_BF16};
  for (int d = 0; d < 2; d++) {
    parity("decoder layer (cross-attention over 6 padded encoder positions)", &decoder,
           "language_model.decoder.layers.1", 6, dts[d]);
    parity("decoder layer (cross-attention over 11 padded encoder positions)", &decoder,
           "language_model.decoder.layers.1", 11, dts[d]);
    parity("bidirectional layer (key padding)", &bidir, "language_model.encoder.layers.1", 0, dts[d]);
  }
  return h_done();
}
