/* hf2megads_weight_converter: Megatron-DeepSpeed's tools/hf2megads_weight_converter.py (the first step of
 * examples_deepspeed/finetune_hf_llama/finetune_llama.sh): a Hugging Face LlamaForCausalLM directory (config.json and
 * its safetensors), or a GPT2LMHeadModel one (which the Python converter does not read), becomes a pretrain_gpt
 * checkpoint at iteration 0 (weights only, global_step0), which `pretrain_gpt --finetune --load DIR` trains from in
 * any layout. The command line is the converter's flags and the run's model flags, which must describe the Hugging
 * Face model: each disagreement with config.json is refused with both values before anything is read or written.
 * The mappings are export_hf's inverted (docs/checkpoints.md "hf2megads_weight_converter"): Llama's q/k/v_proj into
 * query_key_value's grouped rows and gate/up_proj into dense_h_to_4h's two halves; GPT-2's Conv1D weights transposed
 * and c_attn's [q | k | v] blocks into per-head rows; the vocabulary padding rows set to the mean of the token rows
 * (as the Python converter sets them). Under mpirun each rank writes its tensor- and pipeline-parallel part; one
 * process writes the whole model as one part, which --load reshards to any layout. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/ckpt_fs.h"
#include "checkpoints/ckpt_reader.h"
#include "checkpoints/hf_export.h"
#include "checkpoints/safetensors.h"
#include "evaluate/eval_model.h"
#include "models/gpt/gpt.h"
#include "runtime/base/error.h"
#include "runtime/base/file.h"
#include "runtime/comm/comm.h"
#include "train/args.h"
#include "train/engine.h"

#define PROG "hf2megads_weight_converter"

static void usage(void) {
  printf("usage: " PROG " --hf-ckpt-dir DIR --load-mode safetensor|auto [--hf-ckpt-num-shards N] --save OUT\n"
         "       [pretrain_gpt's model flags: --num-layers --hidden-size --num-attention-heads --ffn-hidden-size\n"
         "        (Llama: --swiglu --normalization rmsnorm --disable-bias-linear --use-rotary-position-embeddings\n"
         "        [--num-key-value-heads G]) [--untie-embeddings-and-output-weights] --tokenizer-type ...]\n\n"
         "Megatron-DeepSpeed's tools/hf2megads_weight_converter.py: a Hugging Face LlamaForCausalLM (or\n"
         "GPT2LMHeadModel) directory (config.json and safetensors) as a checkpoint of pretrain_gpt at iteration 0\n"
         "(weights only), which `pretrain_gpt --finetune --load OUT` trains from in any parallel layout.\n"
         "  --hf-ckpt-dir DIR          the Hugging Face directory\n"
         "  --load-mode MODE           safetensor: model.safetensors, or model-0000K-of-0000N.safetensors with\n"
         "                             --hf-ckpt-num-shards N; auto: what from_pretrained reads (the shards of\n"
         "                             model.safetensors.index.json, else model.safetensors); torchbin (pickled\n"
         "                             pytorch_model-*.bin) is refused: save the model with safetensors\n"
         "  --hf-ckpt-num-shards N     the shards of --load-mode safetensor (read by no other mode)\n"
         "  --save OUT                 a new or empty directory (an existing checkpoint there is refused)\n"
         "The model flags must describe config.json (each difference is refused with both values); the tokenizer's\n"
         "vocabulary must be config.json's vocab_size. The training flags (--lr, --micro-batch-size, data, ...)\n"
         "may be given, as finetune_llama.sh gives them, and are not used. Under mpirun -np TP x PP (x DP) each\n"
         "model-parallel rank writes its part; one process writes the whole model as one part (--load reshards\n"
         "it). docs/checkpoints.md \"hf2megads_weight_converter\".\n\n"
         "With --to-hf-ckpt --load CKPT (finetune_llama.sh's convert_mds2hf) it converts back: CKPT as a Hugging\n"
         "Face directory in OUT/release (export_hf's tensors, --hf-ckpt-dir's config.json), the flags and CKPT\n"
         "checked against that config.json.\n");
}

typedef struct {
  const char *dir, *mode;
  int shards, to_hf, finetune, tp_asked, pp_asked;
} conv_flags;

/* Takes the converter's flags out of argv; the rest goes to the run's parser. One process: the tensor- and
 * pipeline-parallel sizes become 1 (the parts are written as one; the sizes asked for are kept for the log). */
static char **split_args(int argc, char **argv, conv_flags *f, int *rest_n) {
  char **r = zt_malloc(((size_t)argc + 8) * sizeof(char *), "arguments");
  int n = 0;
  r[n++] = argv[0];
  const int single = zt_comm_size() == 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *eq = strchr(a, '=');
    const int flag = strncmp(a, "--", 2) == 0;
    const size_t key = eq && flag ? (size_t)(eq - a) : strlen(a);
#define IS(s) (key == strlen(s) && strncmp(a, s, key) == 0)
    const int conv = IS("--hf-ckpt-dir") || IS("--hf-ckpt-num-shards") || IS("--load-mode");
    const int par = single && (IS("--tensor-model-parallel-size") || IS("--pipeline-model-parallel-size"));
    if (conv || par) {
      const char *v = eq && flag ? eq + 1 : NULL;
      if (!v) {
        zt_check(i + 1 < argc, "missing argument value", "%.*s expects a value", (int)key, a);
        v = argv[++i];
      }
      char *end;
      const long x = strtol(v, &end, 10);
      const int is_int = *v && !*end && x >= -2147483647L && x <= 2147483647L;
      if (IS("--hf-ckpt-dir")) {
        f->dir = v;
      } else if (IS("--load-mode")) {
        f->mode = v;
      } else {
        zt_check(is_int, "bad argument value", "%.*s: invalid int value: '%s'", (int)key, a, v);
        if (IS("--hf-ckpt-num-shards")) f->shards = (int)x;
        else if (IS("--tensor-model-parallel-size")) f->tp_asked = (int)x;
        else f->pp_asked = (int)x;
      }
    } else if (IS("--to-hf-ckpt")) {
      f->to_hf = 1;
    } else if (IS("--finetune")) { /* finetune_llama.sh passes it here too, without --load; nothing is loaded */
      f->finetune = 1;
    } else {
      r[n++] = argv[i];
    }
#undef IS
  }
  /* the parser's requirements of a training run, which the converter does not train: placeholders when absent */
  int lr = 0, mbs = 0, iters = 0;
#define GIVEN(flag) (!strcmp(r[i], flag) || !strncmp(r[i], flag "=", strlen(flag "=")))
  for (int i = 1; i < n; i++) {
    lr |= GIVEN("--lr");
    mbs |= GIVEN("--micro-batch-size");
    iters |= GIVEN("--train-iters") || GIVEN("--train-samples");
  }
#undef GIVEN
  if (!lr) r[n++] = "--lr", r[n++] = "0";
  if (!mbs) r[n++] = "--micro-batch-size", r[n++] = "1";
  if (!iters) r[n++] = "--train-iters", r[n++] = "1";
  r[n] = NULL;
  *rest_n = n;
  return r;
}

/* ---- the Hugging Face side: config.json and the tensors of its safetensors files ------------------------------- */

typedef struct {
  int gpt2;                /* GPT2LMHeadModel (model_type gpt2), else LlamaForCausalLM */
  long L, C, NH, G, HD, F, V, P;  /* P: GPT-2's n_positions */
  double eps, theta;
  int tie;
  const char *act;         /* GPT-2's activation_function: gelu_new (tanh), gelu (erf) or relu2 */
  const char *pre;         /* GPT-2's key prefix: "transformer." (GPT2LMHeadModel's save), "" (GPT2Model's: the
                              hub's gpt2 files) */
} hf_config;

typedef struct {
  zt_st_reader *files;
  int n_files;
  int *file_of, *tensor_of, n; /* every tensor: its file and index there */
  const char **names;
} hf_tensors;

static char *read_text(const char *path) {
  char *s = zt_read_file(path, NULL);
  zt_check(s, PROG, "%s: cannot open: %s", path, strerror(errno));
  return s;
}

/* A number of config.json; def when absent (or NAN: required). */
static double cfg_num(const cJSON *j, const char *path, const char *key, double def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  if (!v || cJSON_IsNull(v)) {
    zt_check(!isnan(def), PROG, "%s: \"%s\" is missing", path, key);
    return def;
  }
  zt_check(cJSON_IsNumber(v), PROG, "%s: \"%s\" is not a number", path, key);
  return v->valuedouble;
}

static long cfg_int(const cJSON *j, const char *path, const char *key, double def) {
  const double x = cfg_num(j, path, key, def);
  zt_check(x == floor(x) && x >= 0 && x < 1e12, PROG, "%s: \"%s\" is %.17g, not a count", path, key, x);
  return (long)x;
}

static int cfg_bool(const cJSON *j, const char *path, const char *key, int def) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  if (!v || cJSON_IsNull(v)) return def;
  zt_check(cJSON_IsBool(v), PROG, "%s: \"%s\" is not true or false", path, key);
  return cJSON_IsTrue(v);
}

/* transformers' GPT2Config: what GPT2LMHeadModel computes (Megatron's GPT: LayerNorm, learned positions, biases, the
 * attention scaled by 1/sqrt(head size)), or refused naming the key */
static void read_gpt2_config(hf_config *c, const cJSON *j, const char *path) {
  c->L = cfg_int(j, path, "n_layer", NAN);
  c->C = cfg_int(j, path, "n_embd", NAN);
  c->NH = cfg_int(j, path, "n_head", NAN);
  c->G = c->NH;
  c->V = cfg_int(j, path, "vocab_size", NAN);
  c->P = cfg_int(j, path, "n_positions", NAN);
  zt_check(c->L > 0 && c->C > 0 && c->NH > 0 && c->C % c->NH == 0 && c->V > 0 && c->P > 0, PROG, "%s: %ld layers, "
           "n_embd %ld, %ld heads, vocab_size %ld, n_positions %ld: not a model (the heads must divide n_embd)", path,
           c->L, c->C, c->NH, c->V, c->P);
  c->HD = c->C / c->NH;
  c->F = cfg_int(j, path, "n_inner", (double)(4 * c->C)); /* null: 4 n_embd */
  c->eps = cfg_num(j, path, "layer_norm_epsilon", 1e-5);
  c->tie = cfg_bool(j, path, "tie_word_embeddings", 1);
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "activation_function");
  const char *a = cJSON_IsString(act) ? act->valuestring : act ? "(not a string)" : "gelu_new";
  c->act = !strcmp(a, "gelu_new") || !strcmp(a, "gelu_pytorch_tanh") ? "gelu_new" : !strcmp(a, "gelu") ? "gelu"
         : !strcmp(a, "relu2") ? "relu2" : NULL;
  zt_check(c->act != NULL, PROG, "%s: activation_function %s: Megatron's GPT has the tanh GELU (gelu_new, "
           "gelu_pytorch_tanh), the erf GELU (gelu: --no-bias-gelu-fusion) and the squared ReLU (relu2: "
           "--squared-relu)", path, a);
  zt_check(cfg_bool(j, path, "scale_attn_weights", 1) && !cfg_bool(j, path, "scale_attn_by_inverse_layer_idx", 0) &&
           !cfg_bool(j, path, "reorder_and_upcast_attn", 0) && !cfg_bool(j, path, "add_cross_attention", 0), PROG,
           "%s: scale_attn_weights false, scale_attn_by_inverse_layer_idx, reorder_and_upcast_attn or "
           "add_cross_attention: Megatron's attention is softmax(q k / sqrt(head size)) without them", path);
}

/* transformers' LlamaConfig: what LlamaForCausalLM computes, or refused naming the key */
static hf_config read_config(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/config.json", dir);
  char *text = read_text(path);
  cJSON *j = cJSON_Parse(text);
  zt_check(cJSON_IsObject(j), PROG, "%s: not a JSON object", path);
  const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "model_type");
  zt_check(cJSON_IsString(mt), PROG, "%s: no \"model_type\"", path);
  zt_check(!strcmp(mt->valuestring, "llama") || !strcmp(mt->valuestring, "gpt2"), PROG, "%s: model_type \"%s\": "
           "the converter reads LlamaForCausalLM (model_type \"llama\", as Megatron-DeepSpeed's does) and "
           "GPT2LMHeadModel (\"gpt2\")", path, mt->valuestring);
  hf_config c = {.gpt2 = !strcmp(mt->valuestring, "gpt2")};
  if (c.gpt2) {
    read_gpt2_config(&c, j, path);
    cJSON_Delete(j);
    free(text);
    return c;
  }
  c.L = cfg_int(j, path, "num_hidden_layers", NAN);
  c.C = cfg_int(j, path, "hidden_size", NAN);
  c.NH = cfg_int(j, path, "num_attention_heads", NAN);
  c.G = cfg_int(j, path, "num_key_value_heads", (double)c.NH);
  c.F = cfg_int(j, path, "intermediate_size", NAN);
  c.V = cfg_int(j, path, "vocab_size", NAN);
  zt_check(c.L > 0 && c.C > 0 && c.NH > 0 && c.C % c.NH == 0 && c.G > 0 && c.NH % c.G == 0 && c.F > 0 && c.V > 0,
           PROG, "%s: %ld layers, hidden_size %ld, %ld heads, %ld key/value heads, intermediate_size %ld, vocab_size "
           "%ld: not a model (the heads must divide the hidden size, the key/value heads the heads)", path, c.L, c.C,
           c.NH, c.G, c.F, c.V);
  c.HD = c.C / c.NH;
  zt_check(cfg_int(j, path, "head_dim", (double)c.HD) == c.HD, PROG, "%s: head_dim %ld is not hidden_size / "
           "num_attention_heads = %ld, which Megatron's attention has", path, cfg_int(j, path, "head_dim", 0), c.HD);
  c.eps = cfg_num(j, path, "rms_norm_eps", 1e-6);
  c.theta = cfg_num(j, path, "rope_theta", 10000.0);
  c.tie = cfg_bool(j, path, "tie_word_embeddings", 0);
  const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "hidden_act");
  zt_check(!act || (cJSON_IsString(act) && !strcmp(act->valuestring, "silu")), PROG, "%s: hidden_act %s: Megatron's "
           "--swiglu is silu's", path, cJSON_IsString(act) ? act->valuestring : "(not a string)");
  const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "rope_scaling");
  zt_check(!rs || cJSON_IsNull(rs), PROG, "%s: rope_scaling is set; Megatron-DeepSpeed's rotary embeddings have no "
           "scaling (linear, dynamic, llama3, yarn), so this model would compute other positions", path);
  zt_check(!cfg_bool(j, path, "attention_bias", 0) && !cfg_bool(j, path, "mlp_bias", 0), PROG, "%s: attention_bias "
           "or mlp_bias is true; the Llama architecture of --disable-bias-linear has no linear biases", path);
  cJSON_Delete(j);
  free(text);
  return c;
}

/* The safetensors files of --load-mode, their headers read; every tensor name once. */
static hf_tensors open_tensors(const conv_flags *f) {
  hf_tensors h = {0};
  char path[4200], **paths = NULL;
  int n = 0;
  if (!strcmp(f->mode, "safetensor")) {
    zt_check(f->shards >= 1, "missing argument", "--load-mode safetensor needs --hf-ckpt-num-shards (the number of "
             "model-0000K-of-0000N.safetensors files, 1 for model.safetensors); it is %d", f->shards);
    paths = zt_malloc((size_t)f->shards * sizeof(char *), "paths");
    for (int k = 1; k <= f->shards; k++) {
      if (f->shards == 1) snprintf(path, sizeof path, "%s/model.safetensors", f->dir);
      else snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", f->dir, k, f->shards);
      paths[n++] = strdup(path);
    }
  } else { /* auto: transformers' from_pretrained: the index's shards, else the one file */
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", f->dir);
    struct stat sb;
    if (stat(path, &sb) == 0) {
      char *text = read_text(path);
      cJSON *j = cJSON_Parse(text);
      const cJSON *map = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
      zt_check(cJSON_IsObject(map), PROG, "%s: no \"weight_map\" object", path);
      paths = zt_malloc(((size_t)cJSON_GetArraySize(map) + 1) * sizeof(char *), "paths");
      for (const cJSON *e = map->child; e; e = e->next) {
        zt_check(cJSON_IsString(e) && !strchr(e->valuestring, '/'), PROG, "%s: weight_map[\"%s\"] is not a file name "
                 "of the directory", path, e->string);
        char p2[4200];
        snprintf(p2, sizeof p2, "%s/%s", f->dir, e->valuestring);
        int seen = 0;
        for (int k = 0; k < n && !seen; k++) seen = !strcmp(paths[k], p2);
        if (!seen) paths[n++] = strdup(p2);
      }
      cJSON_Delete(j);
      free(text);
    } else {
      snprintf(path, sizeof path, "%s/model.safetensors", f->dir);
      if (stat(path, &sb) != 0) {
        char bin[4200];
        snprintf(bin, sizeof bin, "%s/pytorch_model.bin", f->dir);
        struct stat b2;
        const int pickled = stat(bin, &b2) == 0 || (snprintf(bin, sizeof bin, "%s/pytorch_model.bin.index.json",
                                                            f->dir), stat(bin, &b2) == 0);
        zt_fatal(PROG, "%s: no model.safetensors or model.safetensors.index.json%s", f->dir, pickled ?
                 " (only pickled pytorch_model*.bin, which zerotron does not read: save the model with "
                 "transformers' save_pretrained(dir, safe_serialization=True) first)" : "");
      }
      paths = zt_malloc(sizeof(char *), "paths");
      paths[n++] = strdup(path);
    }
  }
  h.files = zt_calloc((size_t)n, sizeof(zt_st_reader), "safetensors files");
  h.n_files = n;
  for (int k = 0; k < n; k++) {
    char err[1024];
    zt_check(zt_st_open(&h.files[k], paths[k], err, sizeof err) == 0, PROG, "%s", err);
    h.n += h.files[k].n;
    free(paths[k]);
  }
  free(paths);
  h.file_of = zt_malloc((size_t)h.n * sizeof(int) + 1, "tensors");
  h.tensor_of = zt_malloc((size_t)h.n * sizeof(int) + 1, "tensors");
  h.names = zt_malloc((size_t)h.n * sizeof(char *) + 1, "tensors");
  int t = 0;
  for (int k = 0; k < n; k++)
    for (int i = 0; i < h.files[k].n; i++, t++) {
      h.file_of[t] = k, h.tensor_of[t] = i, h.names[t] = h.files[k].tensors[i].name;
      for (int u = 0; u < t; u++)
        zt_check(strcmp(h.names[u], h.names[t]) != 0, PROG, "tensor %s is in both %s and %s", h.names[t],
                 h.files[h.file_of[u]].path, h.files[k].path);
    }
  return h;
}

static int ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

static int hf_find(const hf_tensors *h, const char *name) {
  for (int t = 0; t < h->n; t++)
    if (!strcmp(h->names[t], name)) return t;
  return -1;
}

/* The tensors LlamaForCausalLM has for c, each present with its shape, and nothing else (rotary inv_freq buffers,
 * which older files hold, aside): checked before anything is built. */
static void check_tensors(const hf_tensors *h, const hf_config *c, const char *dir) {
  int *used = zt_calloc((size_t)h->n + 1, sizeof(int), "flags");
  char name[256];
  const long QR = c->NH * c->HD, KR = c->G * c->HD;
#define EXPECT(nd, a, b, ...)                                                                                          \
  do {                                                                                                                 \
    snprintf(name, sizeof name, __VA_ARGS__);                                                                          \
    const int t_ = hf_find(h, name);                                                                                   \
    zt_check(t_ >= 0, PROG, "%s: tensor %s is missing (config.json describes %ld layers%s)", dir, name, c->L,          \
             c->tie ? ", tied embeddings" : ", an untied lm_head");                                                    \
    const zt_st_tensor *s_ = &h->files[h->file_of[t_]].tensors[h->tensor_of[t_]];                                      \
    zt_check(s_->ndim == (nd) && s_->shape[0] == (a) && ((nd) == 1 || s_->shape[1] == (b)), PROG,                      \
             "%s: %s has shape [%lld%s%lld], config.json makes it [%ld%s%ld]", h->files[h->file_of[t_]].path, name,    \
             (long long)s_->shape[0], s_->ndim > 1 ? ", " : "", s_->ndim > 1 ? (long long)s_->shape[1] : 0LL,         \
             (long)(a), (nd) > 1 ? ", " : "", (nd) > 1 ? (long)(b) : 0L);                                              \
    zt_check(s_->dtype != ZT_ST_OTHER, PROG, "%s: %s is %s; the converter reads F32, F16, BF16 and F64 weights",     \
             h->files[h->file_of[t_]].path, name, s_->dtype_name);                                                     \
    used[t_] = 1;                                                                                                      \
  } while (0)
  if (c->gpt2) {
    EXPECT(2, c->V, c->C, "%swte.weight", c->pre);
    EXPECT(2, c->P, c->C, "%swpe.weight", c->pre);
    for (long l = 0; l < c->L; l++) {
      static const char *const ln[] = {"ln_1", "ln_2"};
      for (int k = 0; k < 2; k++) {
        EXPECT(1, c->C, 0, "%sh.%ld.%s.weight", c->pre, l, ln[k]);
        EXPECT(1, c->C, 0, "%sh.%ld.%s.bias", c->pre, l, ln[k]);
      }
      EXPECT(2, c->C, 3 * c->C, "%sh.%ld.attn.c_attn.weight", c->pre, l); /* Conv1D: [in, out] */
      EXPECT(1, 3 * c->C, 0, "%sh.%ld.attn.c_attn.bias", c->pre, l);
      EXPECT(2, c->C, c->C, "%sh.%ld.attn.c_proj.weight", c->pre, l);
      EXPECT(1, c->C, 0, "%sh.%ld.attn.c_proj.bias", c->pre, l);
      EXPECT(2, c->C, c->F, "%sh.%ld.mlp.c_fc.weight", c->pre, l);
      EXPECT(1, c->F, 0, "%sh.%ld.mlp.c_fc.bias", c->pre, l);
      EXPECT(2, c->F, c->C, "%sh.%ld.mlp.c_proj.weight", c->pre, l);
      EXPECT(1, c->C, 0, "%sh.%ld.mlp.c_proj.bias", c->pre, l);
    }
    EXPECT(1, c->C, 0, "%sln_f.weight", c->pre);
    EXPECT(1, c->C, 0, "%sln_f.bias", c->pre);
  } else {
    EXPECT(2, c->V, c->C, "model.embed_tokens.weight");
    for (long l = 0; l < c->L; l++) {
      EXPECT(1, c->C, 0, "model.layers.%ld.input_layernorm.weight", l);
      EXPECT(2, QR, c->C, "model.layers.%ld.self_attn.q_proj.weight", l);
      EXPECT(2, KR, c->C, "model.layers.%ld.self_attn.k_proj.weight", l);
      EXPECT(2, KR, c->C, "model.layers.%ld.self_attn.v_proj.weight", l);
      EXPECT(2, c->C, QR, "model.layers.%ld.self_attn.o_proj.weight", l);
      EXPECT(1, c->C, 0, "model.layers.%ld.post_attention_layernorm.weight", l);
      EXPECT(2, c->F, c->C, "model.layers.%ld.mlp.gate_proj.weight", l);
      EXPECT(2, c->F, c->C, "model.layers.%ld.mlp.up_proj.weight", l);
      EXPECT(2, c->C, c->F, "model.layers.%ld.mlp.down_proj.weight", l);
    }
    EXPECT(1, c->C, 0, "model.norm.weight");
  }
  if (!c->tie) EXPECT(2, c->V, c->C, "lm_head.weight");
#undef EXPECT
  for (int t = 0; t < h->n; t++) {
    const char *s = h->names[t];
    /* buffers of older files: Llama's rotary inv_freq, GPT-2's causal mask (attn.bias, attn.masked_bias) */
    const int buffer = ends_with(s, ".rotary_emb.inv_freq") || (c->gpt2 && (ends_with(s, ".attn.bias") ||
                                                                            ends_with(s, ".attn.masked_bias")));
    zt_check(used[t] || buffer || (c->tie && !strcmp(s, "lm_head.weight")), PROG, "%s: tensor %s has no place in "
             "Megatron's GPT of config.json (%ld layers; a model of another architecture?)",
             h->files[h->file_of[t]].path, s, c->L);
  }
  free(used);
}

static void hf_read(const hf_tensors *h, const char *name, float *out) {
  const int t = hf_find(h, name);
  zt_check(t >= 0, "internal error", PROG ": tensor %s", name);
  char err[1024];
  zt_check(zt_st_read_f32(&h->files[h->file_of[t]], h->tensor_of[t], out, err, sizeof err) == 0, PROG, "%s", err);
}

/* ---- the run's flags against config.json ------------------------------------------------------------------------ */

static void append(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t n, const char *fmt, ...) {
  const size_t len = strlen(buf);
  if (len + 3 >= n) return;
  if (len) strcat(buf, "; ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + strlen(buf), n - strlen(buf), fmt, ap);
  va_end(ap);
}

/* The activation of the flags' MLP as GPT2Config names it (export_hf's mlp_gelu): the tanh GELU of Megatron's fused
 * bias-GELU or --openai-gelu, the erf GELU without the fusion, the squared ReLU. */
static const char *flags_act(const zt_args *a) {
  if (a->squared_relu) return "relu2";
  return !a->openai_gelu && (!a->bias_gelu_fusion || !a->add_bias_linear) ? "gelu" : "gelu_new";
}

static void check_gpt2_flags(const zt_args *a, const hf_config *c, char *bad, size_t n) {
#define DIFF(cond, ...) \
  if (cond) append(bad, n, __VA_ARGS__)
  DIFF(a->num_layers != c->L, "--num-layers %d, n_layer %ld", a->num_layers, c->L);
  DIFF(a->hidden_size != c->C, "--hidden-size %d, n_embd %ld", a->hidden_size, c->C);
  DIFF(a->num_attention_heads != c->NH, "--num-attention-heads %d, n_head %ld", a->num_attention_heads, c->NH);
  DIFF(a->num_key_value_heads > 0 && a->num_key_value_heads != c->NH, "--num-key-value-heads %d (GPT-2 has no "
       "grouped-query attention)", a->num_key_value_heads);
  DIFF(a->ffn_hidden_size != c->F, "--ffn-hidden-size %d, n_inner %ld", a->ffn_hidden_size, c->F);
  DIFF(a->max_position_embeddings != c->P, "--max-position-embeddings %d, n_positions %ld (the position embedding "
       "rows)", a->max_position_embeddings, c->P);
  DIFF(a->normalization != 0, "--normalization rmsnorm (GPT2LMHeadModel's norms are LayerNorm)");
  DIFF(a->swiglu, "--swiglu (GPT2LMHeadModel's MLP is c_fc, the activation, c_proj)");
  DIFF(!a->add_bias_linear, "--disable-bias-linear (GPT2LMHeadModel's linears have biases)");
  DIFF(a->use_rotary_position_embeddings || !a->add_position_embedding, "no learned position embeddings "
       "(GPT2LMHeadModel's are wpe)");
  DIFF(strcmp(flags_act(a), c->act) != 0, "the flags' MLP activation %s, activation_function %s", flags_act(a),
       c->act);
#undef DIFF
}

static void check_llama_flags(const zt_args *a, const hf_config *c, char *bad, size_t n) {
#define DIFF(cond, ...) \
  if (cond) append(bad, n, __VA_ARGS__)
  DIFF(a->num_layers != c->L, "--num-layers %d, num_hidden_layers %ld", a->num_layers, c->L);
  DIFF(a->hidden_size != c->C, "--hidden-size %d, hidden_size %ld", a->hidden_size, c->C);
  DIFF(a->num_attention_heads != c->NH, "--num-attention-heads %d, num_attention_heads %ld", a->num_attention_heads,
       c->NH);
  const long g = a->num_key_value_heads > 0 ? a->num_key_value_heads : a->num_attention_heads;
  DIFF(g != c->G, "--num-key-value-heads %s%ld, num_key_value_heads %ld", a->num_key_value_heads > 0 ? "" :
       "not given: ", g, c->G);
  DIFF(a->ffn_hidden_size != c->F, "--ffn-hidden-size %d, intermediate_size %ld", a->ffn_hidden_size, c->F);
  DIFF(!a->swiglu, "no --swiglu (LlamaForCausalLM's MLP is SwiGLU)");
  DIFF(a->normalization != 1, "--normalization layernorm (LlamaForCausalLM's norms are RMSNorm: --normalization "
       "rmsnorm)");
  DIFF(a->add_bias_linear, "linear biases (LlamaForCausalLM has none: --disable-bias-linear)");
  DIFF(!a->use_rotary_position_embeddings, "no --use-rotary-position-embeddings (LlamaForCausalLM's positions are "
       "rotary)");
  DIFF(a->use_rotary_position_embeddings && a->rotary_percent != 1.0f, "--rotary-percent %g (LlamaForCausalLM turns "
       "the whole head)", (double)a->rotary_percent);
  DIFF(a->add_position_embedding, "learned position embeddings, which LlamaForCausalLM has not");
  DIFF(a->rope_theta != c->theta, "--rotary-position-embeddings-theta %d, rope_theta %.17g", a->rope_theta, c->theta);
#undef DIFF
}

/* Every difference between the flags' model and config.json's, refused in one message before anything is read. */
static void check_flags(const zt_args *a, const hf_config *c, const char *dir) {
  char bad[4096] = "";
  const char *arch = c->gpt2 ? "GPT2LMHeadModel" : "LlamaForCausalLM";
  if (c->gpt2) check_gpt2_flags(a, c, bad, sizeof bad);
  else check_llama_flags(a, c, bad, sizeof bad);
#define DIFF(cond, ...) \
  if (cond) append(bad, sizeof bad, __VA_ARGS__)
  DIFF(a->apply_residual_connection_post_layernorm, "--apply-residual-connection-post-layernorm (%s's layers are "
       "pre-norm)", arch);
  DIFF(a->apply_layernorm_1p, "--apply-layernorm-1p (Hugging Face's norm weights are not zero-centred)");
  DIFF(c->tie == a->untie_embeddings_and_output_weights, "%s, tie_word_embeddings %s",
       a->untie_embeddings_and_output_weights ? "--untie-embeddings-and-output-weights" :
       "embeddings tied to the output layer (no --untie-embeddings-and-output-weights)", c->tie ? "true" : "false");
  DIFF(a->layernorm_epsilon != (float)c->eps, "--layernorm-epsilon %g, %s %g", (double)a->layernorm_epsilon,
       c->gpt2 ? "layer_norm_epsilon" : "rms_norm_eps", c->eps);
  DIFF(zt_moe_on(&a->moe), "MoE layers (--num-experts), which %s has not", arch);
#undef DIFF
  zt_check(!bad[0], "inconsistent arguments", "the model flags do not describe %s/config.json: %s. Nothing was "
           "written", dir, bad);
}

/* ---- the Megatron tensor of each parameter, from the Hugging Face ones ------------------------------------------- */

/* rows x cols of src into cols x rows of dst (Conv1D's [in, out] into Linear's [out, in]) */
static void transpose(float *dst, const float *src, long rows, long cols) {
  for (long i = 0; i < rows; i++)
    for (long j = 0; j < cols; j++) dst[(size_t)j * rows + i] = src[(size_t)i * cols + j];
}

/* The token rows of a vocabulary matrix read into full, the padding rows up to VP the mean of them (the Python
 * converter's _embedding_refactor). */
static void vocab_matrix(const hf_tensors *h, const hf_config *c, const char *hf, long VP, float *full, float *tmp) {
  hf_read(h, hf, full);
  for (long j = 0; j < c->C; j++) {
    double s = 0;
    for (long v = 0; v < c->V; v++) s += full[v * c->C + j];
    tmp[j] = (float)(s / (double)c->V);
  }
  for (long v = c->V; v < VP; v++) memcpy(full + v * c->C, tmp, (size_t)c->C * sizeof(float));
}

/* GPT-2 (export_hf's GPT-2 mapping inverted): Conv1D weights transposed; c_attn's [q | k | v] column blocks into
 * query_key_value's per-head rows [head][q|k|v][head_dim] (our row h 3HD + j HD + d is column j C + h HD + d). */
static int megatron_gpt2_tensor(const hf_tensors *h, const hf_config *c, const char *name, long VP, float *full,
                                float *tmp) {
  char hf[256];
  long l;
  int used = 0;
  const long C = c->C, HD = c->HD, F = c->F;
  if (!strcmp(name, "language_model.embedding.word_embeddings.weight") || !strcmp(name, "word_embeddings.weight") ||
      !strcmp(name, "language_model.output_layer.weight")) {
    if (strstr(name, "output_layer")) snprintf(hf, sizeof hf, "lm_head.weight");
    else snprintf(hf, sizeof hf, "%swte.weight", c->pre);
    vocab_matrix(h, c, hf, VP, full, tmp);
    return 1;
  }
  if (!strcmp(name, "language_model.embedding.position_embeddings.weight"))
    return snprintf(hf, sizeof hf, "%swpe.weight", c->pre), hf_read(h, hf, full), 1;
  if (!strncmp(name, "language_model.encoder.final_layernorm.", 39))
    return snprintf(hf, sizeof hf, "%sln_f.%s", c->pre, name + 39), hf_read(h, hf, full), 1;
  if (sscanf(name, "language_model.encoder.layers.%ld.%n", &l, &used) != 1 || used == 0) return 0;
  const char *s = name + used;
#define HF(suffix, dst) (snprintf(hf, sizeof hf, "%sh.%ld.%s", c->pre, l, suffix), hf_read(h, hf, dst))
  if (!strncmp(s, "input_layernorm.", 16)) {
    HF(!strcmp(s + 16, "weight") ? "ln_1.weight" : "ln_1.bias", full);
  } else if (!strncmp(s, "post_attention_layernorm.", 25)) {
    HF(!strcmp(s + 25, "weight") ? "ln_2.weight" : "ln_2.bias", full);
  } else if (!strcmp(s, "self_attention.query_key_value.weight")) {
    HF("attn.c_attn.weight", tmp); /* [C, 3C] */
    for (long r = 0; r < 3 * C; r++) {
      float *row = full + (size_t)r * C;
      const long col = zt_hf_qkv_split_row(r, c->NH, c->NH, HD);
      for (long k = 0; k < C; k++) row[k] = tmp[(size_t)k * 3 * C + col];
    }
  } else if (!strcmp(s, "self_attention.query_key_value.bias")) {
    HF("attn.c_attn.bias", tmp);
    for (long r = 0; r < 3 * C; r++) full[r] = tmp[zt_hf_qkv_split_row(r, c->NH, c->NH, HD)];
  } else if (!strcmp(s, "self_attention.dense.weight")) {
    HF("attn.c_proj.weight", tmp);
    transpose(full, tmp, C, C);
  } else if (!strcmp(s, "self_attention.dense.bias")) {
    HF("attn.c_proj.bias", full);
  } else if (!strcmp(s, "mlp.dense_h_to_4h.weight")) {
    HF("mlp.c_fc.weight", tmp); /* [C, F] */
    transpose(full, tmp, C, F);
  } else if (!strcmp(s, "mlp.dense_h_to_4h.bias")) {
    HF("mlp.c_fc.bias", full);
  } else if (!strcmp(s, "mlp.dense_4h_to_h.weight")) {
    HF("mlp.c_proj.weight", tmp); /* [F, C] */
    transpose(full, tmp, F, C);
  } else if (!strcmp(s, "mlp.dense_4h_to_h.bias")) {
    HF("mlp.c_proj.bias", full);
  } else {
    return 0;
  }
#undef HF
  return 1;
}

/* The full (one-process) value of our parameter `name` into full (rows x cols), or 0 when the name is not one of
 * Llama's. */
static int megatron_tensor(const hf_tensors *h, const hf_config *c, const char *name, long VP, float *full,
                           float *tmp) {
  char hf[256];
  long l;
  int used = 0;
  if (c->gpt2) return megatron_gpt2_tensor(h, c, name, VP, full, tmp);
  const long C = c->C, HD = c->HD, G = c->G, F = c->F;
  if (!strcmp(name, "language_model.embedding.word_embeddings.weight") ||
      !strcmp(name, "language_model.output_layer.weight") || !strcmp(name, "word_embeddings.weight")) {
    vocab_matrix(h, c, strstr(name, "output_layer") ? "lm_head.weight" : "model.embed_tokens.weight", VP, full, tmp);
    return 1;
  }
  if (!strcmp(name, "language_model.encoder.final_layernorm.weight")) {
    hf_read(h, "model.norm.weight", full);
    return 1;
  }
  if (sscanf(name, "language_model.encoder.layers.%ld.%n", &l, &used) != 1 || used == 0) return 0;
  const char *s = name + used;
  char pre[64];
  snprintf(pre, sizeof pre, "model.layers.%ld", l);
#define HF(suffix, dst) (snprintf(hf, sizeof hf, "%s.%s", pre, suffix), hf_read(h, hf, dst))
  if (!strcmp(s, "input_layernorm.weight")) HF("input_layernorm.weight", full);
  else if (!strcmp(s, "post_attention_layernorm.weight")) HF("post_attention_layernorm.weight", full);
  else if (!strcmp(s, "self_attention.dense.weight")) HF("self_attn.o_proj.weight", full);
  else if (!strcmp(s, "mlp.dense_4h_to_h.weight")) HF("mlp.down_proj.weight", full);
  else if (!strcmp(s, "mlp.dense_h_to_4h.weight")) { /* [gate; up]: Megatron's chunk(2), silu of the first half */
    HF("mlp.gate_proj.weight", full);
    HF("mlp.up_proj.weight", full + (size_t)F * C);
  } else if (!strcmp(s, "self_attention.query_key_value.weight")) {
    /* q, k, v concatenated in tmp; the fused rows taken from their places (zt_hf_qkv_split_row) */
    float *q = tmp, *k = tmp + (size_t)c->NH * HD * C, *v = k + (size_t)G * HD * C;
    HF("self_attn.q_proj.weight", q);
    HF("self_attn.k_proj.weight", k);
    HF("self_attn.v_proj.weight", v);
    for (long r = 0; r < (c->NH + 2 * G) * HD; r++)
      memcpy(full + (size_t)r * C, tmp + (size_t)zt_hf_qkv_split_row(r, c->NH, G, HD) * C, (size_t)C * sizeof(float));
  } else {
    return 0;
  }
#undef HF
  return 1;
}

/* Copies src to dst (a new file). */
static void copy_file(const char *src, const char *dst) {
  char *text = read_text(src);
  FILE *f = fopen(dst, "wb");
  zt_check(f && fwrite(text, 1, strlen(text), f) == strlen(text) && fclose(f) == 0, PROG, "%s: cannot write: %s",
           dst, strerror(errno));
  free(text);
}

/* --to-hf-ckpt (finetune_llama.sh's convert_mds2hf): --load's checkpoint as a Hugging Face directory in
 * --save/release, where the Python converter's save_pretrained writes it: export_hf's tensors (the fp32 masters when
 * the checkpoint has them, else its weights; BF16 when config.json's torch_dtype is bfloat16, as save_pretrained of
 * the Python converter's bfloat16 model writes them, else F32) with --hf-ckpt-dir's config.json (its token ids and
 * the rest, as save_pretrained of a model built from that config keeps them), once the exported config agrees with
 * it on the architecture. Rank 0 writes, into a temporary directory renamed at the end. */
static void to_hf(const conv_flags *f, const zt_args *a) {
  zt_check(a->load != NULL, "missing argument", "--to-hf-ckpt: --load, the checkpoint to convert");
  zt_check(a->save != NULL, "missing argument", "--to-hf-ckpt: --save, the directory whose release/ receives the "
           "Hugging Face files");
  const hf_config c = read_config(f->dir);
  check_flags(a, &c, f->dir);
  char out[4200], tmp[4200], src[4200], dst[4300];
  snprintf(out, sizeof out, "%s/release", a->save);
  snprintf(tmp, sizeof tmp, "%s/.release.tmp", a->save);
  struct stat sb;
  zt_check(stat(out, &sb) != 0, "checkpoint", "--save %s already holds %s; the converter overwrites nothing: give a "
           "new directory", a->save, out);
  if (zt_comm_rank() == 0) {
    const int created = stat(a->save, &sb) != 0;
    zt_ckpt_mkdirs(a->save);
    zt_ckpt_rmtree(tmp); /* left by a conversion that was killed */
    /* BF16 tensors for a bfloat16 model, as save_pretrained of the Python converter's bfloat16 model writes them */
    snprintf(src, sizeof src, "%s/config.json", f->dir);
    char *text = read_text(src);
    cJSON *j = cJSON_Parse(text);
    const cJSON *td = cJSON_GetObjectItemCaseSensitive(j, "torch_dtype");
    const int bf16 = cJSON_IsString(td) && !strcmp(td->valuestring, "bfloat16");
    cJSON_Delete(j);
    free(text);
    char *argv[8] = {"export_hf", (char *)a->load, tmp, "--dtype", bf16 ? "bf16" : "fp32", NULL, NULL, NULL};
    if (a->load_tag) argv[5] = "--tag", argv[6] = (char *)a->load_tag;
    zt_export_hf_main(a->load_tag ? 7 : 5, argv);
    const hf_config e = read_config(tmp);
    char bad[2048] = "";
#define SAME(field, key, fmt)                                                                                    \
  if (e.field != c.field)                                                                                        \
  append(bad, sizeof bad, "%s " fmt " in the checkpoint, " fmt " in config.json", key, e.field, c.field)
    SAME(L, "layers", "%ld");
    SAME(C, "hidden size", "%ld");
    SAME(NH, "heads", "%ld");
    SAME(G, "key/value heads", "%ld");
    SAME(F, "MLP width", "%ld");
    SAME(V, "vocabulary", "%ld");
    SAME(P, "positions", "%ld");
    SAME(tie, "tied embeddings", "%d");
    SAME(theta, "rope_theta", "%g");
#undef SAME
    if ((float)e.eps != (float)c.eps) append(bad, sizeof bad, "norm epsilon %g in the checkpoint, %g in config.json",
                                             e.eps, c.eps);
    if (e.gpt2 != c.gpt2 || (c.gpt2 && strcmp(e.act, c.act)))
      append(bad, sizeof bad, "%s in the checkpoint, %s in config.json", e.gpt2 ? e.act : "llama",
             c.gpt2 ? c.act : "llama");
    if (bad[0]) {
      zt_ckpt_rmtree(tmp);
      if (created) rmdir(a->save);
    }
    zt_check(!bad[0], "inconsistent arguments", "--load %s is not the model of %s/config.json: %s. Nothing was "
             "written", a->load, f->dir, bad);
    snprintf(dst, sizeof dst, "%s/config.json", tmp);
    copy_file(src, dst);
    zt_ckpt_install_dir(tmp, out);
    zt_log("> %s --to-hf-ckpt: %s written to %s with %s's config.json\n", PROG, a->load, out, src);
  }
  zt_barrier(zt_comm_world());
}

int main(int argc, char **argv) {
  if (zt_program_start(&argc, &argv, usage)) return 0;
  conv_flags f = {.shards = -1};
  int rn;
  char **rest = split_args(argc, argv, &f, &rn);
  zt_check(f.dir != NULL, "missing argument", "--hf-ckpt-dir: the Hugging Face directory to convert");
  zt_check(f.mode != NULL, "missing argument", "--load-mode: safetensor or auto (the Python converter has no "
           "default either)");
  zt_check(strcmp(f.mode, "torchbin") != 0, "unsupported argument", "--load-mode torchbin: pytorch_model-*.bin files "
           "are Python pickles, which zerotron does not read; save the model with safetensors (transformers' "
           "save_pretrained(dir, safe_serialization=True), the default since transformers 4.35) and use "
           "--load-mode safetensor or auto");
  zt_check(!strcmp(f.mode, "safetensor") || !strcmp(f.mode, "auto"), "bad argument value", "--load-mode: invalid "
           "choice: '%s' (choose from 'torchbin', 'safetensor', 'auto')", f.mode);
  zt_args args;
  zt_args_model = "gpt";
  zt_args_checkpoint_reader = zt_ckpt_saved_args;
  zt_args_parse(&args, rn, rest, zt_comm_size());
  if (f.to_hf) {
    to_hf(&f, &args);
    free(rest);
    zt_comm_finalize();
    return 0;
  }
  zt_check(args.save != NULL, "missing argument", "--save: the directory the checkpoint is written to");
  char latest[4200];
  snprintf(latest, sizeof latest, "%s/latest", args.save);
  struct stat sb;
  zt_check(stat(latest, &sb) != 0, "checkpoint", "--save %s already holds a checkpoint (%s); the converter writes "
           "iteration 0 and overwrites nothing: give a new or empty directory", args.save, latest);

  hf_config c = read_config(f.dir);
  check_flags(&args, &c, f.dir);
  hf_tensors h = open_tensors(&f);
  c.pre = c.gpt2 && hf_find(&h, "transformer.wte.weight") < 0 ? "" : "transformer.";
  check_tensors(&h, &c, f.dir);
  zt_tokenizer *tok = zt_engine_tokenizer(&args);
  zt_check(args.vocab_size == c.V, "inconsistent arguments", "the tokenizer's vocabulary is %d tokens, "
           "%s/config.json's vocab_size %ld: the embedding rows are the tokenizer's ids (the Python converter asserts "
           "the same)",
           args.vocab_size, f.dir, c.V);
  zt_args_print(&args);
  if (f.tp_asked > 1 || f.pp_asked > 1)
    zt_log("> one process: the model is written as one tensor- and pipeline-parallel part (--load reshards it to "
           "--tensor-model-parallel-size %d --pipeline-model-parallel-size %d, or any layout); under mpirun -np %d "
           "each part is written by its rank\n", f.tp_asked > 0 ? f.tp_asked : 1, f.pp_asked > 0 ? f.pp_asked : 1,
           (f.tp_asked > 0 ? f.tp_asked : 1) * (f.pp_asked > 0 ? f.pp_asked : 1));
  zt_log("> %s: the training flags (data, batches, optimizer%s, the DeepSpeed config) are parsed and not used, as "
         "in Megatron-DeepSpeed's converter\n", PROG, f.finetune ? ", --finetune" : "");
  if (c.gpt2)
    zt_log("> %s: %s (%d safetensors file%s, %d tensors): GPT2LMHeadModel, %ld layers, hidden %ld, %ld heads, "
           "inner %ld, vocabulary %ld, %ld positions, %s, layer_norm_epsilon %g, %s\n", PROG, f.dir, h.n_files,
           h.n_files == 1 ? "" : "s", h.n, c.L, c.C, c.NH, c.F, c.V, c.P, c.act, c.eps,
           c.tie ? "tied embeddings" : "untied lm_head");
  else
    zt_log("> %s: %s (%d safetensors file%s, %d tensors): LlamaForCausalLM, %ld layers, hidden %ld, %ld heads, %ld "
           "key/value heads, intermediate %ld, vocabulary %ld, rope_theta %g, rms_norm_eps %g, %s\n", PROG, f.dir,
           h.n_files, h.n_files == 1 ? "" : "s", h.n, c.L, c.C, c.NH, c.G, c.F, c.V, c.theta, c.eps,
           c.tie ? "tied embeddings" : "untied lm_head");

  /* the model of the flags in this rank's place, fp32 (every Hugging Face dtype exactly), forward-only */
  const zt_eval_placement pl = zt_eval_place(&args);
  const int tp = args.tensor_model_parallel_size, pp = args.pipeline_model_parallel_size;
  zt_model_setup s = {.backend = zt_pick_backend(NULL, 1), .dtype = ZT_DTYPE_FP32, .micro_batch = 1,
                      .seq_length = args.seq_length, .forward_only = 1, .zero_partitions = 1, .tp_group = pl.tp,
                      .tp_size = tp, .tp_rank = pl.c.tp, .pp_group = pl.pp, .pp_size = pp, .pp_rank = pl.c.pp,
                      .vpp = 1, .pp_buffers = 1};
  int *ds_stages = zt_args_pipe_stages(&args);
  s.stage_first = ds_stages;
  zt_model_args margs = {.num_layers = args.num_layers, .hidden_size = args.hidden_size,
                         .num_heads = args.num_attention_heads, .ffn_hidden_size = args.ffn_hidden_size,
                         .max_positions = args.max_position_embeddings, .padded_vocab_size = args.padded_vocab_size,
                         .ln_eps = args.layernorm_epsilon, .init_std = args.init_method_std,
                         .untie_embeddings = args.untie_embeddings_and_output_weights};
  zt_args_model_variants(&args, &margs);
  zt_log("building GPT model ...\n");
  zt_model *m = zt_gpt_create(&margs, &s);
  free(ds_stages);

  const zt_param_table *t = m->table;
  const long VP = args.padded_vocab_size;
  size_t maxfull = (size_t)VP * c.C, maxpart = 1;
  if ((size_t)c.P * c.C > maxfull) maxfull = (size_t)c.P * c.C;
  if ((size_t)c.F * c.C > maxfull) maxfull = (size_t)c.F * c.C;
  if ((size_t)3 * c.C * c.C > maxfull) maxfull = (size_t)3 * c.C * c.C;
  if ((size_t)2 * c.F * c.C > maxfull) maxfull = (size_t)2 * c.F * c.C;
  const size_t qkv = (size_t)(c.NH + 2 * c.G) * c.HD * c.C;
  if (qkv > maxfull) maxfull = qkv;
  for (int i = 0; i < t->count; i++) maxpart = t->params[i].numel > maxpart ? t->params[i].numel : maxpart;
  float *full = zt_malloc(maxfull * sizeof(float), "tensor"), *tmp = zt_malloc(maxfull * sizeof(float), "tensor");
  float *part = zt_malloc(maxpart * sizeof(float), "tensor");
  for (int i = 0; i < t->count; i++) {
    const zt_param *p = &t->params[i];
    zt_check(megatron_tensor(&h, &c, p->name, VP, full, tmp), "internal error", PROG ": parameter %s has no "
             "Llama tensor (the flag checks let a variant through)", p->name);
    if (p->tp_split_dim < 0) {
      memcpy(part, full, p->numel * sizeof(float));
    } else {
      int64_t fs[ZT_MAX_DIMS];
      for (int k = 0; k < p->ndim; k++) fs[k] = p->shape[k] * (k == p->tp_split_dim ? tp : 1);
      const int64_t len = p->shape[p->tp_split_dim];
      zt_ckpt_slice_copy(part, full, p->ndim, fs, p->tp_split_dim, (int64_t)pl.c.tp * len, len, 0,
                         p->tp_parts > 1 ? p->tp_parts : 1);
    }
    zt_model_set_params(m, part, p->offset, p->offset + p->numel, ZT_DTYPE_FP32);
  }
  free(full);
  free(tmp);
  free(part);
  for (int k = 0; k < h.n_files; k++) zt_st_close(&h.files[k]);
  free(h.files), free(h.file_of), free(h.tensor_of), free(h.names);

  /* Megatron-DeepSpeed's save_checkpoint(0, [engine], None, None): the weights, iteration 0, no optimizer */
  args.no_save_optim = 1;
  zt_train_state st;
  memset(&st, 0, sizeof st);
  st.args = &args;
  st.ds_config_path = "";
  st.model = m;
  st.tp_rank = pl.c.tp, st.tp_size = tp, st.pp_rank = pl.c.pp, st.pp_size = pp;
  st.dp_rank = pl.c.dp, st.dp_size = args.data_parallel_size;
  st.half_dtype = ZT_DTYPE_FP32;
  st.part_hi = m->flat;
  st.random_ltd_layer_tokens = -1;
  st.data_sampler_step = -1;
  zt_ckpt_save(&st);
  zt_log("> %s: %s written to %s (global_step0, fp32 weights, no optimizer state); train from it with "
         "pretrain_gpt --finetune --load %s and the same model flags\n", PROG, f.dir, args.save, args.save);
  zt_model_free(m);
  if (tok) zt_tokenizer_free(tok);
  free(rest);
  zt_comm_finalize();
  return 0;
}
