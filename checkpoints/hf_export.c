/* The body of the export_hf tool (checkpoints/cli/export_hf.c), also run by hf2megads_weight_converter --to-hf-ckpt:
 * a zerotron GPT checkpoint as a Hugging Face GPT2LMHeadModel directory (config.json and
 * model.safetensors, fp32). Weights come from the fp32 masters when the checkpoint has optimizer states (else the
 * saved weights); linear weights are transposed to Conv1D's [in, out]; the fused query_key_value rows, laid out per
 * head as [head][q|k|v][head_dim] (models/transformer/attention.c), are re-laid into c_attn's [q | k | v] column
 * blocks; the vocabulary padding rows are removed; the output layer stays tied to wte unless the model was trained
 * with --untie-embeddings-and-output-weights (then lm_head.weight and tie_word_embeddings false). The MLP's GELU is
 * the tanh approximation of Megatron's fused bias-GELU (runtime/ops/cpu/gelu.c): activation_function "gelu_new"; or
 * F.gelu's erf form without the fusion (--no-bias-gelu-fusion, --disable-bias-linear): "gelu"; --squared-relu:
 * "relu2" (mlp_gelu below).
 * A BERT checkpoint (recognized by its heads' tensors) becomes a MegatronBertForPreTraining directory (with the
 * binary head) or a MegatronBertForMaskedLM one (--bert-no-binary-head); a finetune_bert one a
 * MegatronBertForSequenceClassification (classification_head: GLUE, STS-B's regression) or a
 * MegatronBertForMultipleChoice (multichoice_head: RACE) directory: Hugging Face's MegatronBert key names, the fused
 * per-head query_key_value split into query/key/value, nn.Linear's [out, in] kept, the padded vocabulary kept (as
 * transformers' convert_megatron_bert_checkpoint.py does), the decoder tied to the word embeddings; export_bert
 * below. A checkpoint with exactly Llama's architecture (--normalization rmsnorm --swiglu --disable-bias-linear
 * --use-rotary-position-embeddings, rotary on the whole head, no learned positions; GQA and untied output allowed)
 * becomes a LlamaForCausalLM directory (export_llama below); other mixes of the Llama-style variants (docs/gpt.md)
 * are refused, naming the saved argument, before anything is written. docs/checkpoints.md. */
#include "checkpoints/hf_export.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoints/ckpt_fs.h"
#include "checkpoints/ckpt_reader.h"
#include "checkpoints/safetensors.h"
#include "runtime/base/error.h"
#include "runtime/base/pyfmt.h"

#define ENC "language_model.encoder"
#define EMB "language_model.embedding"

static const zt_ckpt_reader *R;
static float *buf;
static int ln_1p; /* --apply-layernorm-1p: the transformer's LayerNorm weights are stored as weight - 1 */
static int out_bf16; /* --dtype bf16: the tensors written as BF16 (rounded to nearest even), torch_dtype bfloat16 */

/* The index of a checkpoint tensor, its shape checked (fatal otherwise). */
static int need(const char *name, int ndim, int64_t d0, int64_t d1) {
  const int i = zt_ckpt_find(R, name);
  zt_check(i >= 0, "export_hf", "%s: tensor %s is missing (not a GPT checkpoint?)", R->dir, name);
  const zt_ckpt_tensor *t = &R->tensors[i];
  zt_check(t->ndim == ndim && t->full_shape[0] == d0 && (ndim == 1 || t->full_shape[1] == d1), "export_hf",
           "%s: %s has an unexpected shape (%d dimensions, first %lld)", R->dir, name, t->ndim,
           (long long)t->full_shape[0]);
  return i;
}

/* The full fp32 value of a checkpoint tensor, its shape checked; a zero-centred LayerNorm weight (--apply-layernorm-1p:
 * the transformer's norms, not BERT's lm_head.layernorm) comes back as the weight + 1 it scales by, which is what an
 * ordinary LayerNorm holds. */
static const float *get(const char *name, int ndim, int64_t d0, int64_t d1) {
  const int i = need(name, ndim, d0, d1);
  if (R->has_optim) zt_ckpt_read_state(R, i, "fp32", buf);
  else zt_ckpt_read_weights(R, i, buf);
  const size_t n = strlen(name), k = strlen("layernorm.weight");
  if (ln_1p && n >= k && !strcmp(name + n - k, "layernorm.weight") && strncmp(name, "lm_head.", 8))
    for (int64_t j = 0; j < d0; j++) buf[j] += 1.0f;
  return buf;
}

/* fmt appended to the "; "-separated list in dst (n bytes), truncated if need be. */
static void append(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *dst, size_t n, const char *fmt, ...) {
  size_t l = strlen(dst);
  if (l && l + 2 < n) strcpy(dst + l, "; "), l += 2;
  va_list ap;
  va_start(ap, fmt);
  if (l < n) vsnprintf(dst + l, n - l, fmt, ap);
  va_end(ap);
}

static long arg_int(const char *name) {
  char v[64];
  zt_check(zt_ckpt_arg(R->args_text, name, v, sizeof v), "export_hf", "%s: saved argument %s is missing", R->dir, name);
  return atol(v);
}

static double arg_double(const char *name, double dflt) {
  char v[64];
  return zt_ckpt_arg(R->args_text, name, v, sizeof v) ? atof(v) : dflt;
}

/* A saved True/False argument (a checkpoint older than the argument: dflt). */
static int arg_bool(const char *name, int dflt) {
  char v[16];
  return zt_ckpt_arg(R->args_text, name, v, sizeof v) ? strcmp(v, "True") == 0 : dflt;
}

/* The MLP's activation as Hugging Face names it (transformers' ACT2FN): Megatron's fused bias-GELU and --openai-gelu
 * are the tanh form ("gelu_new"); without the fusion (--no-bias-gelu-fusion, --disable-bias-linear) ParallelMLP calls
 * F.gelu, the erf form ("gelu"); --squared-relu is "relu2" (ReLUSquaredActivation: relu(x)^2). */
static const char *mlp_gelu(void) {
  if (arg_bool("squared_relu", 0)) return "relu2";
  const int erf = !arg_bool("openai_gelu", 0) && (!arg_bool("bias_gelu_fusion", 1) || !arg_bool("add_bias_linear", 1));
  return erf ? "gelu" : "gelu_new";
}

/* ---- BERT -> transformers' MegatronBert ------------------------------------------------------------------------
 * Key names of transformers/models/megatron_bert/modeling_megatron_bert.py (the names its conversion script writes).
 * MegatronBert has one activation, config.hidden_act, for the layers' MLP and for the masked-LM head's transform,
 * while Megatron's BERT (and ours) uses the tanh-approximated GELU in the layers' MLP (the fused bias_gelu) and the
 * exact erf GELU in lm_head: "gelu_new" (tanh) makes every layer exact and leaves the head's transform approximate
 * (|tanh GELU - erf GELU| < 5e-4 per element; test_bert_hf_export.py measures the effect on the logits). Both
 * forms agree, and the export is exact, with --openai-gelu (both tanh: "gelu_new") or --no-bias-gelu-fusion (both
 * erf: "gelu"). HF's
 * MegatronBert has no --apply-residual-connection-post-layernorm: such checkpoints are refused. Without the binary
 * head the directory is MegatronBertForMaskedLM's (no pooler, no cls.seq_relationship) and token_type_embeddings are
 * zeros (HF always adds token type 0; Megatron has no token types then).
 * A finetune_bert checkpoint (docs/finetune.md) holds the language model with two token types and the pooler, and one
 * task head instead of lm_head / binary_head: Megatron's Classification (classification_head [K, C]) becomes
 * MegatronBertForSequenceClassification (classifier [K, C], num_labels K as id2label / label2id; K == 1 is STS-B's
 * regression: problem_type "regression"), MultipleChoice (multichoice_head [1, C], a question's choices in
 * consecutive rows) MegatronBertForMultipleChoice (classifier [1, C]; HF flattens [b, choices, s] to rows and views
 * the logits as [-1, choices], the same grouping). Both read the pooler output (tanh of pooler.dense on position 0
 * of the final LayerNorm's output) through dropout (hidden_dropout_prob: Megatron's classification dropout is
 * --hidden-dropout), as Megatron does; hidden_act then only acts in the MLP, so the export is exact. Every tensor
 * of the checkpoint must have its place in the architecture its heads name (bert_check), checked before anything
 * is written: a task head beside pretraining heads, both task heads, a binary head without lm_head, or any other
 * tensor without a place (an MoE layer's, say) is refused, naming the tensors. */
enum { BERT_PRETRAINING, BERT_MASKED_LM, BERT_SEQUENCE_CLASSIFICATION, BERT_MULTIPLE_CHOICE };
static const char *const bert_arch[] = {"MegatronBertForPreTraining", "MegatronBertForMaskedLM",
                                        "MegatronBertForSequenceClassification", "MegatronBertForMultipleChoice"};

/* The checkpoint's tensors whose names begin with prefix, "; "-separated into dst (n bytes); their count. */
static int tensors_under(const char *prefix, char *dst, size_t n) {
  int k = 0;
  dst[0] = '\0';
  for (int i = 0; i < R->n_tensors; i++)
    if (!strncmp(R->tensors[i].name, prefix, strlen(prefix))) append(dst, n, "%s", R->tensors[i].name), k++;
  return k;
}

/* Whether the checkpoint is a BERT's: any of its heads' tensors. */
static int is_bert(void) {
  char s[8];
  return tensors_under("lm_head.", s, sizeof s) || tensors_under("binary_head.", s, sizeof s) ||
         tensors_under("classification_head.", s, sizeof s) || tensors_under("multichoice_head.", s, sizeof s);
}

/* The architecture the checkpoint's heads name (fatal, before anything is written, on a mix of them), and in *K the
 * rows of the task head (classification_head's classes; 1 for multichoice_head). */
static int bert_kind(long *K) {
  char lm[1024], bin[512], cls[512], mc[512];
  const int n_lm = tensors_under("lm_head.", lm, sizeof lm), n_bin = tensors_under("binary_head.", bin, sizeof bin);
  const int n_cls = tensors_under("classification_head.", cls, sizeof cls);
  const int n_mc = tensors_under("multichoice_head.", mc, sizeof mc);
  zt_check(!(n_cls && n_mc), "export_hf", "%s: holds both a classification head (%s) and a multiple-choice head (%s); "
           "a finetune_bert checkpoint has one of them, and MegatronBertForSequenceClassification and "
           "MegatronBertForMultipleChoice one classifier, so the checkpoint is not exported", R->dir, cls, mc);
  zt_check(!((n_cls || n_mc) && (n_lm || n_bin)), "export_hf", "%s: holds a fine-tuning head (%s) and pretraining "
           "heads (%s%s%s); a finetune_bert checkpoint has no lm_head or binary_head, a pretrain_bert one no task "
           "head, and no MegatronBert class holds both, so the checkpoint is not exported", R->dir,
           n_cls ? cls : mc, lm, n_lm && n_bin ? "; " : "", bin);
  zt_check(!n_bin || n_lm, "export_hf", "%s: holds a binary head (%s) without the masked-LM head lm_head; "
           "MegatronBertForPreTraining needs both, so the checkpoint is not exported", R->dir, bin);
  *K = 0;
  if (n_cls || n_mc) {
    const int i = zt_ckpt_find(R, n_cls ? "classification_head.weight" : "multichoice_head.weight");
    zt_check(i >= 0 && R->tensors[i].ndim == 2, "export_hf", "%s: the task head (%s) has no %s.weight of 2 "
             "dimensions, so the checkpoint is not exported", R->dir, n_cls ? cls : mc,
             n_cls ? "classification_head" : "multichoice_head");
    *K = (long)R->tensors[i].full_shape[0];
    zt_check(*K >= 1 && (n_cls || *K == 1), "export_hf", "%s: %s has %ld rows (MegatronBertForMultipleChoice's "
             "classifier has 1: one score a choice), so the checkpoint is not exported", R->dir,
             R->tensors[i].name, *K);
    return n_cls ? BERT_SEQUENCE_CLASSIFICATION : BERT_MULTIPLE_CHOICE;
  }
  return n_bin ? BERT_PRETRAINING : BERT_MASKED_LM;
}

/* A shape as "[d0]" or "[d0, d1]" (full shapes of up to ZT_MAX_DIMS dimensions) into dst (n bytes). */
static const char *shape_str(char *dst, size_t n, int nd, const int64_t *d) {
  dst[0] = '\0';
  for (int j = 0; j < nd && j < ZT_MAX_DIMS; j++) {
    const size_t l = strlen(dst);
    snprintf(dst + l, n - l, "%s%lld", j ? ", " : "[", (long long)d[j]);
  }
  const size_t l = strlen(dst);
  snprintf(dst + l, n - l, "%s", nd ? "]" : "[]");
  return dst;
}

/* The index of the tensor name, which the architecture arch reads with shape [d0] (nd 1) or [d0, d1]; fatal, naming
 * it, when it is missing or of another shape. */
static int bert_need(const char *name, const char *arch, int nd, long d0, long d1) {
  const int i = zt_ckpt_find(R, name);
  zt_check(i >= 0, "export_hf", "%s: tensor %s is missing, which %s needs, so the checkpoint is not exported", R->dir,
           name, arch);
  const zt_ckpt_tensor *t = &R->tensors[i];
  const int64_t want[2] = {d0, d1};
  char got_s[96], want_s[64];
  zt_check(t->ndim == nd && t->full_shape[0] == d0 && (nd == 1 || t->full_shape[1] == d1), "export_hf",
           "%s: %s has shape %s, %s expects %s, so the checkpoint is not exported", R->dir, name,
           shape_str(got_s, sizeof got_s, t->ndim, t->full_shape), arch, shape_str(want_s, sizeof want_s, nd, want));
  return i;
}

/* Every tensor the export of this kind reads, its shape checked, and no other in the checkpoint (the last pipeline
 * stage's copy of the tied word embeddings, "word_embeddings.weight", aside: it equals the embedding); fatal, naming
 * the tensor, before anything is written. */
static void bert_check(int kind, long L, long C, long F, long P, long VP, long K) {
  const char *arch = bert_arch[kind];
  int *used = zt_calloc((size_t)R->n_tensors, sizeof(int), "flags");
  char name[256];
#define NEED(nd, a, b, ...) (snprintf(name, sizeof name, __VA_ARGS__), used[bert_need(name, arch, nd, a, b)]++)
  NEED(2, VP, C, EMB ".word_embeddings.weight");
  NEED(2, P, C, EMB ".position_embeddings.weight");
  if (kind != BERT_MASKED_LM) NEED(2, 2, C, EMB ".tokentype_embeddings.weight");
  for (long l = 0; l < L; l++) {
    NEED(1, C, 0, ENC ".layers.%ld.input_layernorm.weight", l);
    NEED(1, C, 0, ENC ".layers.%ld.input_layernorm.bias", l);
    NEED(2, 3 * C, C, ENC ".layers.%ld.self_attention.query_key_value.weight", l);
    NEED(1, 3 * C, 0, ENC ".layers.%ld.self_attention.query_key_value.bias", l);
    NEED(2, C, C, ENC ".layers.%ld.self_attention.dense.weight", l);
    NEED(1, C, 0, ENC ".layers.%ld.self_attention.dense.bias", l);
    NEED(1, C, 0, ENC ".layers.%ld.post_attention_layernorm.weight", l);
    NEED(1, C, 0, ENC ".layers.%ld.post_attention_layernorm.bias", l);
    NEED(2, F, C, ENC ".layers.%ld.mlp.dense_h_to_4h.weight", l);
    NEED(1, F, 0, ENC ".layers.%ld.mlp.dense_h_to_4h.bias", l);
    NEED(2, C, F, ENC ".layers.%ld.mlp.dense_4h_to_h.weight", l);
    NEED(1, C, 0, ENC ".layers.%ld.mlp.dense_4h_to_h.bias", l);
  }
  NEED(1, C, 0, ENC ".final_layernorm.weight");
  NEED(1, C, 0, ENC ".final_layernorm.bias");
  if (kind != BERT_MASKED_LM) {
    NEED(2, C, C, "language_model.pooler.dense.weight");
    NEED(1, C, 0, "language_model.pooler.dense.bias");
  }
  if (kind == BERT_PRETRAINING || kind == BERT_MASKED_LM) {
    NEED(1, VP, 0, "lm_head.bias");
    NEED(2, C, C, "lm_head.dense.weight");
    NEED(1, C, 0, "lm_head.dense.bias");
    NEED(1, C, 0, "lm_head.layernorm.weight");
    NEED(1, C, 0, "lm_head.layernorm.bias");
  }
  if (kind == BERT_PRETRAINING) {
    NEED(2, 2, C, "binary_head.weight");
    NEED(1, 2, 0, "binary_head.bias");
  }
  if (kind == BERT_SEQUENCE_CLASSIFICATION) {
    NEED(2, K, C, "classification_head.weight");
    NEED(1, K, 0, "classification_head.bias");
  }
  if (kind == BERT_MULTIPLE_CHOICE) {
    NEED(2, 1, C, "multichoice_head.weight");
    NEED(1, 1, 0, "multichoice_head.bias");
  }
#undef NEED
  char extra[2048] = "";
  int n_extra = 0;
  for (int i = 0; i < R->n_tensors; i++)
    if (!used[i] && strcmp(R->tensors[i].name, "word_embeddings.weight"))
      append(extra, sizeof extra, "%s", R->tensors[i].name), n_extra++;
  zt_check(!n_extra, "export_hf", "%s: %d tensor%s without a place in Hugging Face's %s (saved arguments and tensors "
           "disagree?): %s; the checkpoint is not exported", R->dir, n_extra, n_extra == 1 ? "" : "s", arch, extra);
  free(used);
}

static void export_bert(const zt_ckpt_reader *r, const char *out, const char *act) {
  const long L = arg_int("num_layers"), C = arg_int("hidden_size"), H = arg_int("num_attention_heads");
  const long F = arg_int("ffn_hidden_size"), P = arg_int("max_position_embeddings");
  const long VP = (long)r->padded_vocab_size, HD = H > 0 ? C / H : 0;
  char v[32] = "False";
  zt_ckpt_arg(r->args_text, "apply_residual_connection_post_layernorm", v, sizeof v);
  zt_check(strcmp(v, "True") != 0, "export_hf",
           "%s: trained with --apply-residual-connection-post-layernorm, which Hugging Face's MegatronBert cannot "
           "express (its layers are pre-LN only)", r->dir);
  zt_check(H > 0 && C % H == 0 && VP > 0 && L > 0 && F > 0, "export_hf", "%s: hidden size %ld, %ld heads, %ld layers, "
           "ffn %ld, vocabulary %ld", r->dir, C, H, L, F, VP);
  long K;
  const int kind = bert_kind(&K);
  bert_check(kind, L, C, F, P, VP, K);
  const int binary = kind == BERT_PRETRAINING, lm = kind == BERT_PRETRAINING || kind == BERT_MASKED_LM;
  const int pooler = kind != BERT_MASKED_LM, task = !lm;
  const char *head = kind == BERT_SEQUENCE_CLASSIFICATION ? "classification_head" : "multichoice_head";

  const int n = 3 + 16 * (int)L + 2 + (pooler ? 2 : 0) + (lm ? 5 : 0) + (binary ? 2 : 0) + (task ? 2 : 0);
  zt_st_entry *e = zt_calloc((size_t)n, sizeof(zt_st_entry), "entries");
  int k = 0;
#define ENTRY(nd, a, b, ...) (snprintf(e[k].name, sizeof e[k].name, __VA_ARGS__), e[k].ndim = (nd), \
                              e[k].shape[0] = (a), e[k].shape[1] = (b), k++)
  ENTRY(2, VP, C, "bert.embeddings.word_embeddings.weight");
  ENTRY(2, P, C, "bert.embeddings.position_embeddings.weight");
  ENTRY(2, 2, C, "bert.embeddings.token_type_embeddings.weight");
  for (long l = 0; l < L; l++) {
    ENTRY(1, C, 0, "bert.encoder.layer.%ld.attention.ln.weight", l);
    ENTRY(1, C, 0, "bert.encoder.layer.%ld.attention.ln.bias", l);
    static const char *const qkv_name[3] = {"query", "key", "value"};
    for (int j = 0; j < 3; j++) {
      ENTRY(2, C, C, "bert.encoder.layer.%ld.attention.self.%s.weight", l, qkv_name[j]);
      ENTRY(1, C, 0, "bert.encoder.layer.%ld.attention.self.%s.bias", l, qkv_name[j]);
    }
    ENTRY(2, C, C, "bert.encoder.layer.%ld.attention.output.dense.weight", l);
    ENTRY(1, C, 0, "bert.encoder.layer.%ld.attention.output.dense.bias", l);
    ENTRY(1, C, 0, "bert.encoder.layer.%ld.ln.weight", l);
    ENTRY(1, C, 0, "bert.encoder.layer.%ld.ln.bias", l);
    ENTRY(2, F, C, "bert.encoder.layer.%ld.intermediate.dense.weight", l);
    ENTRY(1, F, 0, "bert.encoder.layer.%ld.intermediate.dense.bias", l);
    ENTRY(2, C, F, "bert.encoder.layer.%ld.output.dense.weight", l);
    ENTRY(1, C, 0, "bert.encoder.layer.%ld.output.dense.bias", l);
  }
  ENTRY(1, C, 0, "bert.encoder.ln.weight");
  ENTRY(1, C, 0, "bert.encoder.ln.bias");
  if (pooler) {
    ENTRY(2, C, C, "bert.pooler.dense.weight");
    ENTRY(1, C, 0, "bert.pooler.dense.bias");
  }
  if (lm) {
    ENTRY(1, VP, 0, "cls.predictions.bias");
    ENTRY(2, C, C, "cls.predictions.transform.dense.weight");
    ENTRY(1, C, 0, "cls.predictions.transform.dense.bias");
    ENTRY(1, C, 0, "cls.predictions.transform.LayerNorm.weight");
    ENTRY(1, C, 0, "cls.predictions.transform.LayerNorm.bias");
  }
  if (binary) {
    ENTRY(2, 2, C, "cls.seq_relationship.weight");
    ENTRY(1, 2, 0, "cls.seq_relationship.bias");
  }
  if (task) { /* MegatronBertForSequenceClassification's / MegatronBertForMultipleChoice's nn.Linear */
    ENTRY(2, K, C, "classifier.weight");
    ENTRY(1, K, 0, "classifier.bias");
  }
#undef ENTRY
  zt_check(k == n, "internal error", "export_hf: %d BERT entries of %d", k, n);
  size_t maxn = (size_t)(VP > P ? VP : P) * C;
  if ((size_t)F * C > maxn) maxn = (size_t)F * C;
  if ((size_t)3 * C * C > maxn) maxn = (size_t)3 * C * C;
  if ((size_t)K * C > maxn) maxn = (size_t)K * C;
  buf = zt_malloc(maxn * sizeof(float), "tensor");
  float *tmp = zt_malloc((maxn + (size_t)3 * C) * sizeof(float), "tensor"); /* + the split QKV bias */

  zt_ckpt_mkdirs(out);
  char path[4200];
  snprintf(path, sizeof path, "%s/model.safetensors", out);
  zt_st_writer w;
  zt_st_begin_dtype(&w, path, e, n, out_bf16);
  char name[256];
  zt_st_write(&w, get(EMB ".word_embeddings.weight", 2, VP, C), (size_t)VP * C);
  zt_st_write(&w, get(EMB ".position_embeddings.weight", 2, P, C), (size_t)P * C);
  if (kind != BERT_MASKED_LM) {
    zt_st_write(&w, get(EMB ".tokentype_embeddings.weight", 2, 2, C), (size_t)2 * C);
  } else {
    memset(tmp, 0, (size_t)2 * C * sizeof(float));
    zt_st_write(&w, tmp, (size_t)2 * C);
  }
  for (long l = 0; l < L; l++) {
    char pre[128];
    snprintf(pre, sizeof pre, ENC ".layers.%ld", l);
#define G(suffix, nd, a, b) (snprintf(name, sizeof name, "%s.%s", pre, suffix), get(name, nd, a, b))
    zt_st_write(&w, G("input_layernorm.weight", 1, C, 0), (size_t)C);
    zt_st_write(&w, G("input_layernorm.bias", 1, C, 0), (size_t)C);
    /* the fused rows (zt_hf_qkv_split_row) to HF's query / key / value: the weight into tmp in q, k, v blocks of C
     * rows, the bias to tmp + 3C*C */
    const float *qkv = G("self_attention.query_key_value.weight", 2, 3 * C, C);
    for (long r = 0; r < 3 * C; r++)
      memcpy(tmp + (size_t)zt_hf_qkv_split_row(r, H, H, HD) * C, qkv + (size_t)r * C, (size_t)C * sizeof(float));
    const float *qkvb = G("self_attention.query_key_value.bias", 1, 3 * C, 0);
    float *bias = tmp + (size_t)3 * C * C;
    for (long r = 0; r < 3 * C; r++) bias[zt_hf_qkv_split_row(r, H, H, HD)] = qkvb[r];
    for (long j = 0; j < 3; j++) {
      zt_st_write(&w, tmp + (size_t)j * C * C, (size_t)C * C);
      zt_st_write(&w, bias + j * C, (size_t)C);
    }
    zt_st_write(&w, G("self_attention.dense.weight", 2, C, C), (size_t)C * C);
    zt_st_write(&w, G("self_attention.dense.bias", 1, C, 0), (size_t)C);
    zt_st_write(&w, G("post_attention_layernorm.weight", 1, C, 0), (size_t)C);
    zt_st_write(&w, G("post_attention_layernorm.bias", 1, C, 0), (size_t)C);
    zt_st_write(&w, G("mlp.dense_h_to_4h.weight", 2, F, C), (size_t)F * C);
    zt_st_write(&w, G("mlp.dense_h_to_4h.bias", 1, F, 0), (size_t)F);
    zt_st_write(&w, G("mlp.dense_4h_to_h.weight", 2, C, F), (size_t)C * F);
    zt_st_write(&w, G("mlp.dense_4h_to_h.bias", 1, C, 0), (size_t)C);
#undef G
  }
  zt_st_write(&w, get(ENC ".final_layernorm.weight", 1, C, 0), (size_t)C);
  zt_st_write(&w, get(ENC ".final_layernorm.bias", 1, C, 0), (size_t)C);
  if (pooler) {
    zt_st_write(&w, get("language_model.pooler.dense.weight", 2, C, C), (size_t)C * C);
    zt_st_write(&w, get("language_model.pooler.dense.bias", 1, C, 0), (size_t)C);
  }
  if (lm) {
    zt_st_write(&w, get("lm_head.bias", 1, VP, 0), (size_t)VP);
    zt_st_write(&w, get("lm_head.dense.weight", 2, C, C), (size_t)C * C);
    zt_st_write(&w, get("lm_head.dense.bias", 1, C, 0), (size_t)C);
    zt_st_write(&w, get("lm_head.layernorm.weight", 1, C, 0), (size_t)C);
    zt_st_write(&w, get("lm_head.layernorm.bias", 1, C, 0), (size_t)C);
  }
  if (binary) {
    zt_st_write(&w, get("binary_head.weight", 2, 2, C), (size_t)2 * C);
    zt_st_write(&w, get("binary_head.bias", 1, 2, 0), (size_t)2);
  }
  if (task) {
    snprintf(name, sizeof name, "%s.weight", head);
    zt_st_write(&w, get(name, 2, K, C), (size_t)K * C);
    snprintf(name, sizeof name, "%s.bias", head);
    zt_st_write(&w, get(name, 1, K, 0), (size_t)K);
  }
  zt_st_end(&w);

  snprintf(path, sizeof path, "%s/config.json", out);
  FILE *f = fopen(path, "w");
  zt_check(f, "export_hf", "%s: cannot write: %s", path, strerror(errno));
  const char *arch = bert_arch[kind];
  fprintf(f,
          "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"megatron-bert\",\n  \"vocab_size\": %ld,\n"
          "  \"hidden_size\": %ld,\n  \"num_hidden_layers\": %ld,\n  \"num_attention_heads\": %ld,\n"
          "  \"intermediate_size\": %ld,\n  \"hidden_act\": \"%s\",\n  \"hidden_dropout_prob\": %.9g,\n"
          "  \"attention_probs_dropout_prob\": %.9g,\n  \"max_position_embeddings\": %ld,\n  \"type_vocab_size\": 2,\n"
          "  \"initializer_range\": %.9g,\n  \"layer_norm_eps\": %.9g,\n  \"pad_token_id\": 0,\n"
          "  \"position_embedding_type\": \"absolute\",\n  \"tie_word_embeddings\": true,\n  \"use_cache\": true,\n",
          arch, VP, C, L, H, F, act, arg_double("hidden_dropout", 0.1), arg_double("attention_dropout", 0.1), P,
          arg_double("init_method_std", 0.02), arg_double("layernorm_epsilon", 1e-5));
  /* transformers' PretrainedConfig takes num_labels from id2label (to_dict writes id2label / label2id, never
   * num_labels), with its default names LABEL_i: the checkpoint does not know its task's label names */
  char what[96] = "";
  if (kind == BERT_SEQUENCE_CLASSIFICATION) {
    const char *problem = K == 1 ? "regression" : "single_label_classification";
    fprintf(f, "  \"id2label\": {");
    for (long j = 0; j < K; j++) fprintf(f, "%s\"%ld\": \"LABEL_%ld\"", j ? ", " : "", j, j);
    fprintf(f, "},\n  \"label2id\": {");
    for (long j = 0; j < K; j++) fprintf(f, "%s\"LABEL_%ld\": %ld", j ? ", " : "", j, j);
    fprintf(f, "},\n  \"problem_type\": \"%s\",\n", problem);
    snprintf(what, sizeof what, " (%ld label%s, %s)", K, K == 1 ? "" : "s", problem);
  } else if (kind == BERT_MULTIPLE_CHOICE) {
    snprintf(what, sizeof what, " (classifier [1, %ld]: one score a choice)", C);
  }
  fprintf(f, "  \"torch_dtype\": \"%s\"\n}\n", out_bf16 ? "bfloat16" : "float32");
  zt_check(fclose(f) == 0, "export_hf", "%s: writing failed", path);
  printf("exported %s (iteration %lld, %s weights) to %s: %s%s, %ld layers, hidden %ld, %ld heads, vocabulary %ld "
         "(padded, kept), %ld positions, hidden_act %s\n", r->dir, (long long)r->iteration,
         r->has_optim ? "fp32 master" : zt_dtype_name(r->weights_dtype), out, arch, what, L, C, H, VP, P, act);
  free(buf);
  free(tmp);
  free(e);
}

/* ---- Llama -> transformers' LlamaForCausalLM ---------------------------------------------------------------------
 * For a checkpoint with exactly Llama's architecture (main checks it: --normalization rmsnorm, --swiglu,
 * --disable-bias-linear, --use-rotary-position-embeddings on the whole head, no learned positions, pre-norm). Key
 * names of transformers/models/llama/modeling_llama.py; nn.Linear's [out, in] is ours, nothing is transposed.
 * query_key_value is split from Megatron-DeepSpeed's grouped layout [G][R queries | key | value][HD] (R = NH / G;
 * G = NH, R = 1 is the plain per-head layout [NH][q|k|v][HD]): query head g R + j -> q_proj rows (g R + j) HD ..,
 * group g's key and value -> k_proj / v_proj rows g HD ..; HF's repeat_kv gives query head h the group h / R, as
 * ours does. The rotary rows need no permutation: Megatron's apply_rotary_pos_emb and HF's both turn the pairs
 * (i, i + HD/2) of a head by t * theta^(-2i/HD) (rotate_half = cat(-x2, x1) over the halves, emb = cat(freqs,
 * freqs)), so HF's row order is ours (a permutation is needed only from Meta's interleaved-pairs checkpoints).
 * dense_h_to_4h's rows [0, F) are Megatron's SwiGLU gate (chunk(2)'s first half, under silu) = gate_proj, rows
 * [F, 2F) the linear half = up_proj. The vocabulary padding rows are removed from the embeddings and lm_head. */
static void export_llama(const zt_ckpt_reader *r, const char *out, int untie) {
  const long L = arg_int("num_layers"), C = arg_int("hidden_size"), NH = arg_int("num_attention_heads");
  const long F = arg_int("ffn_hidden_size"), P = arg_int("max_position_embeddings");
  const long V = (long)r->vocab_size, VP = (long)r->padded_vocab_size;
  char v[64];
  const long G = zt_ckpt_arg(r->args_text, "num_key_value_heads", v, sizeof v) && strcmp(v, "None") != 0 ? atol(v)
                                                                                                           : NH;
  zt_check(NH > 0 && C % NH == 0 && G > 0 && NH % G == 0 && V > 0 && V <= VP && L > 0 && F > 0, "export_hf",
           "%s: hidden size %ld, %ld heads, %ld key/value heads, vocabulary %ld of %ld", r->dir, C, NH, G, V, VP);
  const long HD = C / NH, QKV = (NH + 2 * G) * HD;
  const double eps = arg_double("layernorm_epsilon", 1e-5), theta = arg_double("rope_theta", 10000);

  /* every tensor of the checkpoint is checked before anything is written, and must have its place here */
  char name[256];
  int *used = zt_calloc((size_t)r->n_tensors, sizeof(int), "flags");
#define NEED(nd, a, b, ...) (snprintf(name, sizeof name, __VA_ARGS__), used[need(name, nd, a, b)]++)
  NEED(2, VP, C, EMB ".word_embeddings.weight");
  for (long l = 0; l < L; l++) {
    NEED(1, C, 0, ENC ".layers.%ld.input_layernorm.weight", l);
    NEED(2, QKV, C, ENC ".layers.%ld.self_attention.query_key_value.weight", l);
    NEED(2, C, C, ENC ".layers.%ld.self_attention.dense.weight", l);
    NEED(1, C, 0, ENC ".layers.%ld.post_attention_layernorm.weight", l);
    NEED(2, 2 * F, C, ENC ".layers.%ld.mlp.dense_h_to_4h.weight", l);
    NEED(2, C, F, ENC ".layers.%ld.mlp.dense_4h_to_h.weight", l);
  }
  NEED(1, C, 0, ENC ".final_layernorm.weight");
  if (untie) NEED(2, VP, C, "language_model.output_layer.weight");
#undef NEED
  for (int i = 0; i < r->n_tensors; i++) /* (the last pipeline stage's copy of the tied embeddings equals them) */
    zt_check(used[i] == 1 || (!untie && !strcmp(r->tensors[i].name, "word_embeddings.weight")), "export_hf",
             "%s: tensor %s has no place in Hugging Face's LlamaForCausalLM (saved "
             "arguments and tensors disagree?), so the checkpoint is not exported", r->dir, r->tensors[i].name);
  free(used);

  const int n = 1 + 9 * (int)L + 1 + untie;
  zt_st_entry *e = zt_calloc((size_t)n, sizeof(zt_st_entry), "entries");
  int k = 0;
#define ENTRY(nd, a, b, ...) (snprintf(e[k].name, sizeof e[k].name, __VA_ARGS__), e[k].ndim = (nd), \
                              e[k].shape[0] = (a), e[k].shape[1] = (b), k++)
  ENTRY(2, V, C, "model.embed_tokens.weight");
  for (long l = 0; l < L; l++) {
    ENTRY(1, C, 0, "model.layers.%ld.input_layernorm.weight", l);
    ENTRY(2, NH * HD, C, "model.layers.%ld.self_attn.q_proj.weight", l);
    ENTRY(2, G * HD, C, "model.layers.%ld.self_attn.k_proj.weight", l);
    ENTRY(2, G * HD, C, "model.layers.%ld.self_attn.v_proj.weight", l);
    ENTRY(2, C, NH * HD, "model.layers.%ld.self_attn.o_proj.weight", l);
    ENTRY(1, C, 0, "model.layers.%ld.post_attention_layernorm.weight", l);
    ENTRY(2, F, C, "model.layers.%ld.mlp.gate_proj.weight", l);
    ENTRY(2, F, C, "model.layers.%ld.mlp.up_proj.weight", l);
    ENTRY(2, C, F, "model.layers.%ld.mlp.down_proj.weight", l);
  }
  ENTRY(1, C, 0, "model.norm.weight");
  if (untie) ENTRY(2, V, C, "lm_head.weight");
#undef ENTRY
  zt_check(k == n, "internal error", "export_hf: %d Llama entries of %d", k, n);
  size_t maxn = (size_t)VP * C;
  if ((size_t)2 * F * C > maxn) maxn = (size_t)2 * F * C;
  if ((size_t)QKV * C > maxn) maxn = (size_t)QKV * C;
  buf = zt_malloc(maxn * sizeof(float), "tensor");
  float *tmp = zt_malloc((size_t)QKV * C * sizeof(float), "tensor");

  zt_ckpt_mkdirs(out);
  char path[4200];
  snprintf(path, sizeof path, "%s/model.safetensors", out);
  zt_st_writer w;
  zt_st_begin_dtype(&w, path, e, n, out_bf16);
  zt_st_write(&w, get(EMB ".word_embeddings.weight", 2, VP, C), (size_t)V * C); /* padding rows dropped */
  for (long l = 0; l < L; l++) {
    char pre[128];
    snprintf(pre, sizeof pre, ENC ".layers.%ld", l);
#define G_(suffix, nd, a, b) (snprintf(name, sizeof name, "%s.%s", pre, suffix), get(name, nd, a, b))
    zt_st_write(&w, G_("input_layernorm.weight", 1, C, 0), (size_t)C);
    /* the fused rows (zt_hf_qkv_split_row) into tmp as q_proj [NH HD, C], then k_proj and v_proj [G HD, C] */
    const float *qkv = G_("self_attention.query_key_value.weight", 2, QKV, C);
    float *q = tmp, *kk = tmp + (size_t)NH * HD * C, *vv = kk + (size_t)G * HD * C;
    for (long r = 0; r < QKV; r++)
      memcpy(tmp + (size_t)zt_hf_qkv_split_row(r, NH, G, HD) * C, qkv + (size_t)r * C, (size_t)C * sizeof(float));
    zt_st_write(&w, q, (size_t)NH * HD * C);
    zt_st_write(&w, kk, (size_t)G * HD * C);
    zt_st_write(&w, vv, (size_t)G * HD * C);
    zt_st_write(&w, G_("self_attention.dense.weight", 2, C, C), (size_t)C * C);
    zt_st_write(&w, G_("post_attention_layernorm.weight", 1, C, 0), (size_t)C);
    const float *h4 = G_("mlp.dense_h_to_4h.weight", 2, 2 * F, C);
    zt_st_write(&w, h4, (size_t)F * C);                  /* gate: silu(x W_g^T) */
    zt_st_write(&w, h4 + (size_t)F * C, (size_t)F * C);  /* up: the linear half */
    zt_st_write(&w, G_("mlp.dense_4h_to_h.weight", 2, C, F), (size_t)C * F);
#undef G_
  }
  zt_st_write(&w, get(ENC ".final_layernorm.weight", 1, C, 0), (size_t)C);
  if (untie) zt_st_write(&w, get("language_model.output_layer.weight", 2, VP, C), (size_t)V * C);
  zt_st_end(&w);

  /* bos/eos are not written as ids: the checkpoint does not know its tokenizer's special tokens, and left out
   * LlamaConfig would default them to 1 and 2; null says unknown (generate() then stops at max_length only). */
  char eps_s[40], theta_s[40], drop_s[40];
  zt_py_float(eps_s, sizeof eps_s, eps, 0);
  zt_py_float(theta_s, sizeof theta_s, theta, 0);
  zt_py_float(drop_s, sizeof drop_s, arg_double("attention_dropout", 0.0), 0);
  snprintf(path, sizeof path, "%s/config.json", out);
  FILE *f = fopen(path, "w");
  zt_check(f, "export_hf", "%s: cannot write: %s", path, strerror(errno));
  fprintf(f,
          "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n  \"vocab_size\": %ld,\n"
          "  \"hidden_size\": %ld,\n  \"intermediate_size\": %ld,\n  \"num_hidden_layers\": %ld,\n"
          "  \"num_attention_heads\": %ld,\n  \"num_key_value_heads\": %ld,\n  \"head_dim\": %ld,\n"
          "  \"hidden_act\": \"silu\",\n  \"max_position_embeddings\": %ld,\n  \"rms_norm_eps\": %s,\n"
          "  \"rope_theta\": %s,\n  \"rope_scaling\": null,\n  \"attention_bias\": false,\n  \"mlp_bias\": false,\n"
          "  \"attention_dropout\": %s,\n  \"initializer_range\": %.9g,\n  \"pretraining_tp\": 1,\n"
          "  \"tie_word_embeddings\": %s,\n  \"bos_token_id\": null,\n  \"eos_token_id\": null,\n"
          "  \"pad_token_id\": null,\n  \"use_cache\": true,\n  \"torch_dtype\": \"%s\"\n}\n",
          V, C, F, L, NH, G, HD, P, eps_s, theta_s, drop_s, arg_double("init_method_std", 0.02),
          untie ? "false" : "true", out_bf16 ? "bfloat16" : "float32");
  zt_check(fclose(f) == 0, "export_hf", "%s: writing failed", path);
  printf("exported %s (iteration %lld, %s weights) to %s: LlamaForCausalLM, %ld layers, hidden %ld, %ld heads, %ld "
         "key/value heads, ffn %ld, vocabulary %ld (padding of %ld rows removed), rope_theta %s, %s\n", r->dir,
         (long long)r->iteration, r->has_optim ? "fp32 master" : zt_dtype_name(r->weights_dtype), out, L, C, NH, G,
         F, V, VP - V, theta_s, untie ? "untied lm_head" : "lm_head tied to embed_tokens");
  free(buf);
  free(tmp);
  free(e);
}

long zt_hf_qkv_split_row(long r, long NH, long G, long HD) {
  const long R = NH / G, g = r / ((R + 2) * HD), j = r / HD % (R + 2), d = r % HD;
  if (j < R) return (g * R + j) * HD + d;
  return NH * HD + (j - R) * G * HD + g * HD + d;
}

int zt_export_hf_main(int argc, char **argv) {
  const char *dir = NULL, *out = NULL, *tag = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: export_hf checkpoint_dir output_dir [--tag TAG] [--dtype fp32|bf16]\n\n"
             "Writes a Hugging Face GPT2LMHeadModel directory (config.json, model.safetensors) from a zerotron GPT\n"
             "checkpoint. Load it with transformers.GPT2LMHeadModel.from_pretrained(output_dir).\n"
             "A BERT checkpoint gives a MegatronBertForPreTraining directory (MegatronBertForMaskedLM when trained\n"
             "with --bert-no-binary-head): transformers.MegatronBertForPreTraining.from_pretrained(output_dir).\n"
             "A finetune_bert checkpoint gives MegatronBertForSequenceClassification (GLUE; STS-B as a regression)\n"
             "or MegatronBertForMultipleChoice (RACE).\n"
             "A Llama-style GPT checkpoint (--normalization rmsnorm --swiglu --disable-bias-linear\n"
             "--use-rotary-position-embeddings, optionally --num-key-value-heads and\n"
             "--untie-embeddings-and-output-weights) gives a LlamaForCausalLM directory:\n"
             "transformers.LlamaForCausalLM.from_pretrained(output_dir). Other mixes of those variants are refused.\n"
             "--dtype bf16 writes the tensors as BF16 (rounded to nearest even; config.json's torch_dtype\n"
             "bfloat16), half the size of the default fp32.\n");
      return 0;
    }
    if (!strcmp(argv[i], "--tag") || !strcmp(argv[i], "-t")) {
      zt_check(i + 1 < argc, "missing argument value", "%s expects one value", argv[i]);
      tag = argv[++i];
    } else if (!strcmp(argv[i], "--dtype")) {
      zt_check(i + 1 < argc, "missing argument value", "%s expects one value", argv[i]);
      const char *d = argv[++i];
      zt_check(!strcmp(d, "fp32") || !strcmp(d, "bf16"), "bad argument value", "--dtype: invalid choice: '%s' "
               "(choose from 'fp32', 'bf16')", d);
      out_bf16 = !strcmp(d, "bf16");
    } else if (argv[i][0] == '-') {
      zt_fatal("unrecognized argument", "%s (see --help)", argv[i]);
    } else if (!dir) {
      dir = argv[i];
    } else {
      zt_check(!out, "unrecognized argument", "%s: export_hf takes checkpoint_dir and output_dir", argv[i]);
      out = argv[i];
    }
  }
  zt_check(dir && out, "missing argument", "checkpoint_dir and output_dir are required (see --help)");
  char root[4096], tagbuf[256];
  tag = zt_ckpt_tool_dir(dir, tag, root, sizeof root, tagbuf, sizeof tagbuf);
  zt_ckpt_reader r;
  zt_ckpt_open(&r, root, tag);
  R = &r;
  for (int i = 0; i < r.n_tensors; i++) /* pretrain_t5's decoder (its lm_head.bias would pass for a BERT head) */
    zt_check(strncmp(r.tensors[i].name, "language_model.decoder.", 23) != 0, "export_hf", "%s: tensor %s belongs to "
             "an encoder-decoder (T5) model; export_hf writes GPT2LMHeadModel, LlamaForCausalLM and MegatronBert "
             "directories, none of which has T5's decoder, so the checkpoint is not exported", r.dir,
             r.tensors[i].name);
  const char *act = mlp_gelu(); /* refuses what the exported classes cannot express */
  ln_1p = arg_bool("apply_layernorm_1p", 0);
  if (is_bert()) { /* BERT: pretrain_bert's or finetune_bert's heads */
    char norm[32] = "layernorm";
    zt_ckpt_arg(r.args_text, "normalization", norm, sizeof norm);
    char kv[32] = "", heads[32] = "";
    zt_ckpt_arg(r.args_text, "num_key_value_heads", kv, sizeof kv);
    zt_ckpt_arg(r.args_text, "num_attention_heads", heads, sizeof heads);
    const int gqa = kv[0] && strcmp(kv, "None") && atol(kv) != atol(heads);
    zt_check(strcmp(norm, "rmsnorm") && !arg_bool("swiglu", 0) && arg_bool("add_bias_linear", 1) &&
                 strcmp(act, "relu2") && !arg_bool("use_rotary_position_embeddings", 0) &&
                 arg_bool("add_position_embedding", 1) && !gqa, "export_hf", "%s: a BERT trained with "
             "--normalization rmsnorm, --swiglu, --disable-bias-linear, --squared-relu, rotary or no position "
             "embeddings or --num-key-value-heads, which Hugging Face's MegatronBert (LayerNorm, one GELU for the MLP "
             "and the head, biases, learned positions, a key and value per head) cannot express, so the checkpoint is "
             "not exported", r.dir);
    export_bert(&r, out, act);
    zt_ckpt_close(&r);
    return 0;
  }
  for (int i = 0; i < r.n_tensors; i++) /* Hugging Face's GPT-2 and Llama have one MLP per layer */
    zt_check(r.tensors[i].expert_id < 0 && !strstr(r.tensors[i].name, ".deepspeed_moe."), "export_hf", "%s: tensor %s "
             "belongs to an MoE layer (docs/moe.md); Hugging Face's GPT2LMHeadModel and LlamaForCausalLM have no "
             "experts, so MoE checkpoints are not exported", r.dir, r.tensors[i].name);
  /* GPT-2's block (GPT2LMHeadModel), exactly Llama's (LlamaForCausalLM), or not exported. A key missing from the
   * saved arguments (a checkpoint older than the variants) has GPT-2's value. */
  static const struct { const char *key, *gpt2, *llama, *why; } variants[] = {
      {"normalization", "layernorm", "rmsnorm", "LlamaForCausalLM's norms are RMSNorm: --normalization rmsnorm"},
      {"swiglu", "False", "True", "a GELU MLP; LlamaForCausalLM's MLP is SwiGLU: --swiglu"},
      {"add_bias_linear", "True", "False", "linear biases; LlamaForCausalLM is exported without any: "
                                           "--disable-bias-linear"},
      {"use_rotary_position_embeddings", "False", "True", "LlamaForCausalLM's positions are rotary: "
                                                          "--use-rotary-position-embeddings"},
      {"add_position_embedding", "True", "False", "learned position embeddings, which LlamaForCausalLM has not"}};
  const int nv = (int)(sizeof variants / sizeof variants[0]);
  char val[5][64], not_llama[2048] = "";
  int gpt2_off = -1, llama_leaning = 0;
#define NOT_LLAMA(...) append(not_llama, sizeof not_llama, __VA_ARGS__)
  for (int i = 0; i < nv; i++) {
    if (!zt_ckpt_arg(r.args_text, variants[i].key, val[i], sizeof val[i]))
      snprintf(val[i], sizeof val[i], "%s", variants[i].gpt2);
    if (gpt2_off < 0 && strcmp(val[i], variants[i].gpt2) != 0) gpt2_off = i;
    if (strcmp(val[i], variants[i].llama) != 0) NOT_LLAMA("%s %s (%s)", variants[i].key, val[i], variants[i].why);
    else if (i < 2) llama_leaning = 1; /* RMSNorm or SwiGLU: Llama's block, not GPT-2's */
  }
  if (gpt2_off >= 0) { /* the rest of what LlamaForCausalLM cannot express */
    char pct[64] = "1.0", post[16] = "False";
    zt_ckpt_arg(r.args_text, "rotary_percent", pct, sizeof pct);
    if (!strcmp(val[3], "True") && atof(pct) != 1.0) {
      const long hd = arg_int("hidden_size") / arg_int("num_attention_heads");
      NOT_LLAMA("rotary_percent %s (--rotary-percent %s turns %ld of the head's %ld dimensions; LlamaForCausalLM "
                "turns all of them: --rotary-percent 1.0)", pct, pct, (long)(hd * atof(pct)), hd);
    }
    zt_ckpt_arg(r.args_text, "apply_residual_connection_post_layernorm", post, sizeof post);
    if (!strcmp(post, "True"))
      NOT_LLAMA("apply_residual_connection_post_layernorm True (LlamaForCausalLM's layers are pre-norm)");
  }
#undef NOT_LLAMA
  if (gpt2_off >= 0 && !not_llama[0]) {
    char untie_l[16] = "False";
    zt_ckpt_arg(r.args_text, "untie_embeddings_and_output_weights", untie_l, sizeof untie_l);
    export_llama(&r, out, strcmp(untie_l, "True") == 0);
    zt_ckpt_close(&r);
    return 0;
  }
  if (gpt2_off >= 0 && llama_leaning)
    zt_fatal("export_hf", "%s: a Llama-style variant (docs/gpt.md) that is not exactly Llama's architecture, which "
             "Hugging Face's LlamaForCausalLM needs: saved with %s. export_hf writes LlamaForCausalLM (or "
             "GPT2LMHeadModel for GPT-2's block), so the checkpoint is not exported", r.dir, not_llama);
  zt_check(gpt2_off < 0, "export_hf", "%s: saved with %s %s (a Llama-style variant, docs/gpt.md); Hugging Face's "
           "GPT2LMHeadModel has %s %s, and the checkpoint is not Llama's architecture either (%s), so it is not "
           "exported (export_hf writes GPT2LMHeadModel or LlamaForCausalLM)", r.dir, variants[gpt2_off].key,
           val[gpt2_off], variants[gpt2_off].key, variants[gpt2_off].gpt2, not_llama);
  const long L = arg_int("num_layers"), C = arg_int("hidden_size"), H = arg_int("num_attention_heads");
  const long F = arg_int("ffn_hidden_size"), P = arg_int("max_position_embeddings");
  const long V = (long)r.vocab_size, VP = (long)r.padded_vocab_size, HD = C / H;
  char untie_s[16] = "False";
  zt_ckpt_arg(r.args_text, "untie_embeddings_and_output_weights", untie_s, sizeof untie_s);
  const int untie = strcmp(untie_s, "True") == 0;
  zt_check(C % H == 0 && V > 0 && V <= VP, "export_hf", "%s: hidden size %ld, %ld heads, vocabulary %ld of %ld",
           r.dir, C, H, V, VP);

  /* the HF tensors, in the order written */
  const int n = 2 + 12 * (int)L + 2 + untie;
  zt_st_entry *e = zt_calloc((size_t)n, sizeof(zt_st_entry), "entries");
  int k = 0;
#define ENTRY(nd, a, b, ...) (snprintf(e[k].name, sizeof e[k].name, __VA_ARGS__), e[k].ndim = (nd), \
                              e[k].shape[0] = (a), e[k].shape[1] = (b), k++)
  ENTRY(2, V, C, "transformer.wte.weight");
  ENTRY(2, P, C, "transformer.wpe.weight");
  for (long l = 0; l < L; l++) {
    ENTRY(1, C, 0, "transformer.h.%ld.ln_1.weight", l);
    ENTRY(1, C, 0, "transformer.h.%ld.ln_1.bias", l);
    ENTRY(2, C, 3 * C, "transformer.h.%ld.attn.c_attn.weight", l);
    ENTRY(1, 3 * C, 0, "transformer.h.%ld.attn.c_attn.bias", l);
    ENTRY(2, C, C, "transformer.h.%ld.attn.c_proj.weight", l);
    ENTRY(1, C, 0, "transformer.h.%ld.attn.c_proj.bias", l);
    ENTRY(1, C, 0, "transformer.h.%ld.ln_2.weight", l);
    ENTRY(1, C, 0, "transformer.h.%ld.ln_2.bias", l);
    ENTRY(2, C, F, "transformer.h.%ld.mlp.c_fc.weight", l);
    ENTRY(1, F, 0, "transformer.h.%ld.mlp.c_fc.bias", l);
    ENTRY(2, F, C, "transformer.h.%ld.mlp.c_proj.weight", l);
    ENTRY(1, C, 0, "transformer.h.%ld.mlp.c_proj.bias", l);
  }
  ENTRY(1, C, 0, "transformer.ln_f.weight");
  ENTRY(1, C, 0, "transformer.ln_f.bias");
  if (untie) ENTRY(2, V, C, "lm_head.weight");
#undef ENTRY
  size_t maxn = (size_t)(VP > P ? VP : P) * C;
  if ((size_t)F * C > maxn) maxn = (size_t)F * C;
  if ((size_t)3 * C * C > maxn) maxn = (size_t)3 * C * C;
  buf = zt_malloc(maxn * sizeof(float), "tensor");
  float *tmp = zt_malloc(maxn * sizeof(float), "tensor");

  zt_ckpt_mkdirs(out);
  char path[4200];
  snprintf(path, sizeof path, "%s/model.safetensors", out);
  zt_st_writer w;
  zt_st_begin_dtype(&w, path, e, n, out_bf16);
  char name[256];
  /* [rows, cols] (our Linear [out, in]) -> [cols, rows] (Conv1D [in, out]) */
#define TRANSPOSED(src, rows, cols)                                                                      \
  do {                                                                                                   \
    for (long i_ = 0; i_ < (rows); i_++)                                                                 \
      for (long j_ = 0; j_ < (cols); j_++) tmp[(size_t)j_ * (rows) + i_] = (src)[(size_t)i_ * (cols) + j_]; \
    zt_st_write(&w, tmp, (size_t)(rows) * (cols));                                                      \
  } while (0)
  zt_st_write(&w, get(EMB ".word_embeddings.weight", 2, VP, C), (size_t)V * C); /* padding rows dropped */
  zt_st_write(&w, get(EMB ".position_embeddings.weight", 2, P, C), (size_t)P * C);
  for (long l = 0; l < L; l++) {
    char pre[128];
    snprintf(pre, sizeof pre, ENC ".layers.%ld", l);
#define G(suffix, nd, a, b) (snprintf(name, sizeof name, "%s.%s", pre, suffix), get(name, nd, a, b))
    zt_st_write(&w, G("input_layernorm.weight", 1, C, 0), (size_t)C);
    zt_st_write(&w, G("input_layernorm.bias", 1, C, 0), (size_t)C);
    /* our fused row r is HF's output column zt_hf_qkv_split_row(r) of c_attn's [q | k | v] */
    const float *qkv = G("self_attention.query_key_value.weight", 2, 3 * C, C);
    for (long r = 0; r < 3 * C; r++) {
      const float *row = qkv + (size_t)r * C;
      const long col = zt_hf_qkv_split_row(r, H, H, HD);
      for (long c = 0; c < C; c++) tmp[(size_t)c * 3 * C + col] = row[c];
    }
    zt_st_write(&w, tmp, (size_t)3 * C * C);
    const float *qkvb = G("self_attention.query_key_value.bias", 1, 3 * C, 0);
    for (long r = 0; r < 3 * C; r++) tmp[zt_hf_qkv_split_row(r, H, H, HD)] = qkvb[r];
    zt_st_write(&w, tmp, (size_t)3 * C);
    const float *proj = G("self_attention.dense.weight", 2, C, C);
    TRANSPOSED(proj, C, C);
    zt_st_write(&w, G("self_attention.dense.bias", 1, C, 0), (size_t)C);
    zt_st_write(&w, G("post_attention_layernorm.weight", 1, C, 0), (size_t)C);
    zt_st_write(&w, G("post_attention_layernorm.bias", 1, C, 0), (size_t)C);
    const float *fc = G("mlp.dense_h_to_4h.weight", 2, F, C);
    TRANSPOSED(fc, F, C);
    zt_st_write(&w, G("mlp.dense_h_to_4h.bias", 1, F, 0), (size_t)F);
    const float *fc2 = G("mlp.dense_4h_to_h.weight", 2, C, F);
    TRANSPOSED(fc2, C, F);
    zt_st_write(&w, G("mlp.dense_4h_to_h.bias", 1, C, 0), (size_t)C);
#undef G
  }
  zt_st_write(&w, get(ENC ".final_layernorm.weight", 1, C, 0), (size_t)C);
  zt_st_write(&w, get(ENC ".final_layernorm.bias", 1, C, 0), (size_t)C);
  if (untie) zt_st_write(&w, get("language_model.output_layer.weight", 2, VP, C), (size_t)V * C);
  zt_st_end(&w);
#undef TRANSPOSED

  snprintf(path, sizeof path, "%s/config.json", out);
  FILE *f = fopen(path, "w");
  zt_check(f, "export_hf", "%s: cannot write: %s", path, strerror(errno));
  char n_inner[32];
  if (F == 4 * C) snprintf(n_inner, sizeof n_inner, "null");
  else snprintf(n_inner, sizeof n_inner, "%ld", F);
  fprintf(f,
          "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
          "  \"activation_function\": \"%s\",\n  \"vocab_size\": %ld,\n  \"n_positions\": %ld,\n"
          "  \"n_ctx\": %ld,\n  \"n_embd\": %ld,\n  \"n_layer\": %ld,\n  \"n_head\": %ld,\n  \"n_inner\": %s,\n"
          "  \"layer_norm_epsilon\": %.9g,\n  \"initializer_range\": %.9g,\n  \"resid_pdrop\": %.9g,\n"
          "  \"embd_pdrop\": %.9g,\n  \"attn_pdrop\": %.9g,\n  \"scale_attn_weights\": true,\n"
          "  \"scale_attn_by_inverse_layer_idx\": false,\n  \"reorder_and_upcast_attn\": false,\n"
          "  \"tie_word_embeddings\": %s,\n  \"bos_token_id\": %ld,\n  \"eos_token_id\": %ld,\n"
          "  \"use_cache\": true,\n  \"torch_dtype\": \"%s\"\n}\n",
          act, V, P, P, C, L, H, n_inner, arg_double("layernorm_epsilon", 1e-5), arg_double("init_method_std", 0.02),
          arg_double("hidden_dropout", 0.1), arg_double("hidden_dropout", 0.1), arg_double("attention_dropout", 0.1),
          untie ? "false" : "true", V - 1, V - 1, out_bf16 ? "bfloat16" : "float32");
  fclose(f);
  printf("exported %s (iteration %lld, %s weights) to %s: GPT2LMHeadModel, %ld layers, hidden %ld, %ld heads, "
         "vocabulary %ld (padding of %ld rows removed), %ld positions\n", r.dir, (long long)r.iteration,
         r.has_optim ? "fp32 master" : zt_dtype_name(r.weights_dtype), out, L, C, H, V, VP - V, P);
  free(buf);
  free(tmp);
  free(e);
  zt_ckpt_close(&r);
  return 0;
}
