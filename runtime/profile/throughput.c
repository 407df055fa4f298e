/* MACs per iteration as Megatron-DeepSpeed counts them (note the integer 2 // gqa). */
#include "runtime/profile/throughput.h"

double zt_iteration_flops(const zt_flops_model *f, int64_t batch) {
  const double B = (double)batch, L = f->num_layers, h = f->hidden_size, s = f->seq_length;
  const int a = f->num_heads, kv = f->kv_heads > 0 ? f->kv_heads : a;
  const int gqa = a / kv;
  const double hd = h / a, m = f->swiglu ? 3 : 2, k = f->topk > 0 ? f->topk : 1;
  const double qkv_o = B * L * (1 + (2 / gqa) + 1) * h * h * s;
  const double attn = B * L * 2 * hd * a * s * s;
  const double ffn = B * L * m * f->ffn_hidden_size * h * s * k;
  const double logits = B * (double)f->padded_vocab_size * h * s;
  const double fwd = qkv_o + attn + ffn + logits;
  double macs = 3 * fwd;
  if (f->recompute_full) macs += fwd;
  else if (f->recompute_selective) macs += attn;
  return 2 * macs;
}
