#!/usr/bin/env python3
"""export_hf of a BERT checkpoint against Hugging Face's MegatronBert layout (docs/checkpoints.md, "BERT").

Usage: test_bert_hf_export.py PRETRAIN_BERT PREPROCESS_DATA EXPORT_HF ZERO_TO_FP32 FINETUNE_BERT

transformers is not a dependency here, so the exported directory is checked with a PyTorch twin: a float64 forward
written after transformers' modeling_megatron_bert.py (MegatronBertEmbeddings, MegatronBertSelfAttention with the
extended additive key mask, MegatronBertAttention's ln, MegatronBertLayer's ln / intermediate / output,
MegatronBertEncoder's final ln, MegatronBertPooler, MegatronBertPredictionHeadTransform, the decoder tied to the word
embeddings plus cls.predictions.bias, cls.seq_relationship, MegatronBertForPreTraining's losses with labels -100
where not masked) that reads the exported model.safetensors by HF key names. It must equal the Megatron-named float64
twin of test_bert_parity.py (checked there against the C model) fed the same checkpoint's fp32 weights (zero_to_fp32
--safe_serialization): logits, lm loss and sop loss within 1e-6 (relative to max |logit| / the loss).

Two configurations: a checkpoint with the binary head (MegatronBertForPreTraining) and one trained with
--bert-no-binary-head (MegatronBertForMaskedLM: no pooler, no seq_relationship, token_type_embeddings zeros). Each is
a tiny BERT trained 2 iterations by pretrain_bert (lr 1e-2, so biases and norms have moved away from 0 and 1) on a
generated corpus preprocessed with --split-sentences.

The activation: HF's MegatronBert uses config.hidden_act both in the layers' MLP and in the head's transform, while
Megatron (and zerotron) use the tanh GELU in the MLP and the erf GELU in lm_head. The layout check runs the HF twin
with those two activations (tanh, erf); the exported config's single "gelu_new" (what from_pretrained computes) is
then measured against it and must stay within 1e-3 of max |logit| (it is ~1e-5 here). Negative controls: reading the
fused QKV without the per-head split, and dropping cls.predictions.bias, must change the logits by far more than the
tolerance. A checkpoint trained with --apply-residual-connection-post-layernorm is refused.

Fine-tuned checkpoints: the pretraining checkpoint above fine-tuned one epoch by finetune_bert (lr 1e-2) on small
GLUE- and RACE-format files written here from the test's vocabulary: MNLI (3 classes) and STS-B (1 output, the
regression) become MegatronBertForSequenceClassification, RACE (4 choices) MegatronBertForMultipleChoice. Checked:
the exact key set and shapes (bert.* with the pooler, classifier [K, C]; no cls.*), config.json's architecture,
num_labels as transformers reads it (id2label / label2id of K entries) and problem_type ("regression" for K 1), and
the twin of MegatronBertForSequenceClassification (outputs[1], the pooler output, dropout off, classifier) /
MegatronBertForMultipleChoice (input_ids, token_type_ids, attention_mask [b, 4, s] flattened to [-1, s], logits
viewed [-1, 4]) with config.hidden_act (exact here: no lm_head) against test_bert_parity.py's cls_forward on a batch
with padding: logits and the loss the HF class computes from labels (CrossEntropyLoss, MSELoss for regression)
within 1e-6. Negative controls: the classifier on the [CLS] hidden state without the pooler, and (multiple choice)
the logits viewed strided, view(4, -1).t(), must miss by far more. Checkpoints holding a task head beside lm_head /
binary_head, or both task heads (written here by copying the datasets into a fine-tuned checkpoint's model file,
the manifest recomputed), are refused naming the tensors, leaving no output directory."""
import json
import math
import os
import shutil
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"FAIL bert_hf_export: {e}; install the oracle with `apt-get install -y python3-torch python3-numpy`")
    print("0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_lib import check, read_safetensors, run, summary  # noqa: E402
from test_bert_parity import bert_forward, cls_forward  # noqa: E402  the Megatron-named twins

torch.set_default_dtype(torch.float64)
TOL = 1e-6          # the layout check: HF twin (tanh MLP, erf head) vs Megatron twin
TOL_GELU_NEW = 1e-3  # HF's single hidden_act "gelu_new" vs the exact model



# ---- fixtures ------------------------------------------------------------------------------------------------------
WORDS = ("the a of and to in is was he she it they we you that this with for on at by from cat dog house tree run "
         "walk jump think know see look make take give go come happy quick slow green blue red old new great small "
         "large good bad").split()


def make_data(tmp, preprocess):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(".,!?") + WORDS + ["##ing", "##ed", "##s", "##ly"]
    vocab += list("bcdefghijklmnopqrsuvxyz")
    vocab = list(dict.fromkeys(vocab))
    vpath = os.path.join(tmp, "vocab.txt")
    with open(vpath, "w") as f:
        f.write("".join(t + "\n" for t in vocab))
    rng = np.random.RandomState(5)
    src = os.path.join(tmp, "corpus.jsonl")
    with open(src, "w") as f:
        for _ in range(120):
            sents = []
            for _ in range(rng.randint(2, 8)):
                ws = [WORDS[rng.randint(len(WORDS))] + (["", "ing", "ed", "s"][rng.randint(4)] if rng.rand() < 0.3
                                                        else "") for _ in range(rng.randint(3, 14))]
                sents.append(" ".join(ws).capitalize() + ".")
            f.write(json.dumps({"text": " ".join(sents)}) + "\n")
    prefix = os.path.join(tmp, "corp")
    run(preprocess, "--input", src, "--output-prefix", prefix, "--vocab-file", vpath, "--tokenizer-type",
        "BertWordPieceLowerCase", "--workers", "1", "--split-sentences")
    return vpath, prefix + "_text_sentence", len(vocab)


L, C, NH, FFN, T, MAXPOS = 2, 48, 4, 192, 32, 40


def train(pretrain, tmp, data, vocab, tag, extra, ok=True):
    ck = os.path.join(tmp, "ck_" + tag)
    p = run(pretrain, "--data-path", data, "--vocab-file", vocab, "--num-layers", L, "--hidden-size", C,
            "--num-attention-heads", NH, "--ffn-hidden-size", FFN, "--seq-length", T, "--max-position-embeddings",
            MAXPOS, "--micro-batch-size", 4, "--global-batch-size", 8, "--lr", "1e-2", "--lr-decay-style", "constant",
            "--train-iters", 2, "--split", "949,50,1", "--log-interval", 1, "--eval-iters", 0, "--eval-interval", 100,
            "--save", ck, *extra, ok=ok)
    return ck, p


# ---- the HF twin ---------------------------------------------------------------------------------------------------
def gelu_new(x):  # transformers.activations.NewGELUActivation
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def hf_lin(W, x, p):  # nn.Linear on HF-named weights
    return x @ W[p + ".weight"].T + W[p + ".bias"]


def hf_encoder(W, cfg, ids, token_types, attention_mask, act_mlp):
    """MegatronBertModel's sequence_output (eval mode): embeddings, the layers and MegatronBertEncoder's final ln, on
    input_ids / token_type_ids / attention_mask (1 real, 0 padding) [N, S]."""
    H, nh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    hd = H // nh
    lin = lambda x, p: hf_lin(W, x, p)
    ln = lambda x, p: F.layer_norm(x, (H,), W[p + ".weight"], W[p + ".bias"], eps)
    Bb, S = ids.shape
    # MegatronBertEmbeddings (no LayerNorm): word + token_type + absolute position
    x = (W["bert.embeddings.word_embeddings.weight"][ids]
         + W["bert.embeddings.token_type_embeddings.weight"][token_types]
         + W["bert.embeddings.position_embeddings.weight"][torch.arange(S)])
    # get_extended_attention_mask: (1 - mask)[:, None, None, :] * finfo.min, added to the scores
    ext = (1.0 - attention_mask.double())[:, None, None, :] * torch.finfo(torch.float64).min
    split = lambda t: t.view(Bb, S, nh, hd).permute(0, 2, 1, 3)
    for i in range(cfg["num_hidden_layers"]):
        p = f"bert.encoder.layer.{i}."
        # MegatronBertAttention: ln -> self -> output (dense + residual with the layer input)
        h = ln(x, p + "attention.ln")
        q, k, v = (split(lin(h, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd) + ext
        ctx = (torch.softmax(scores, dim=-1) @ v).permute(0, 2, 1, 3).reshape(Bb, S, H)
        attn_out = x + lin(ctx, p + "attention.output.dense")
        # MegatronBertLayer.feed_forward_chunk: ln -> intermediate (dense + act) -> output (dense + residual)
        x = attn_out + lin(act_mlp(lin(ln(attn_out, p + "ln"), p + "intermediate.dense")), p + "output.dense")
    return ln(x, "bert.encoder.ln")


def hf_pooler(W, seq):  # MegatronBertPooler: dense and tanh on the first token
    return torch.tanh(hf_lin(W, seq[:, 0], "bert.pooler.dense"))


def hf_forward(W, cfg, b, act_mlp, act_head, pretraining):
    """MegatronBertForPreTraining / ForMaskedLM forward (eval mode) on HF-named weights W: (prediction_scores,
    seq_relationship_score or None, masked_lm_loss, next_sentence_loss or None)."""
    H, eps = cfg["hidden_size"], cfg["layer_norm_eps"]
    lin = lambda x, p: hf_lin(W, x, p)
    ln = lambda x, p: F.layer_norm(x, (H,), W[p + ".weight"], W[p + ".bias"], eps)
    seq = hf_encoder(W, cfg, b["tokens"], b["types"], (~b["padding"]).long(), act_mlp)
    # cls.predictions: transform (dense, act, LayerNorm) -> decoder tied to the word embeddings + bias
    t = ln(act_head(lin(seq, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
    scores = t @ W["bert.embeddings.word_embeddings.weight"].T + W["cls.predictions.bias"]
    labels = torch.where(b["loss_mask"] > 0, b["labels"], torch.full_like(b["labels"], -100))
    mlm = F.cross_entropy(scores.view(-1, cfg["vocab_size"]), labels.view(-1))  # CrossEntropyLoss(), ignore -100
    if not pretraining:
        return scores, None, mlm, None
    rel = lin(hf_pooler(W, seq), "cls.seq_relationship")
    return scores, rel, mlm, F.cross_entropy(rel.view(-1, 2), b["sentence"].view(-1))


def hf_sequence_classification(W, cfg, input_ids, token_type_ids, attention_mask, act_mlp, labels=None, pool=True):
    """MegatronBertForSequenceClassification.forward (eval mode): the classifier on outputs[1] (the pooler output)
    after its dropout (the identity in eval mode): logits [N, num_labels], and with labels the loss of
    config.problem_type ("regression": MSELoss of logits.squeeze() and labels.squeeze(); "single_label_classification":
    CrossEntropyLoss over logits.view(-1, num_labels)). pool False is a negative control: the [CLS] hidden state
    without the pooler."""
    seq = hf_encoder(W, cfg, input_ids, token_type_ids, attention_mask, act_mlp)
    logits = hf_lin(W, hf_pooler(W, seq) if pool else seq[:, 0], "classifier")
    if labels is None:
        return logits, None
    if cfg.get("problem_type") == "regression":
        return logits, F.mse_loss(logits.squeeze(), labels.squeeze().to(logits.dtype))
    return logits, F.cross_entropy(logits.view(-1, hf_num_labels(cfg)), labels.view(-1))


def hf_multiple_choice(W, cfg, input_ids, token_type_ids, attention_mask, act_mlp, labels=None, strided=False,
                       pool=True):
    """MegatronBertForMultipleChoice.forward (eval mode) on [b, num_choices, s] inputs: num_choices =
    input_ids.shape[1], input_ids / token_type_ids / attention_mask viewed [-1, s], the classifier [1, C] on the pooler
    output (after the dropout), logits.view(-1, num_choices), CrossEntropyLoss with labels. strided and pool False are
    negative controls: the choices viewed view(num_choices, -1).t(), the [CLS] hidden state without the pooler."""
    num_choices = input_ids.shape[1]
    flat = lambda t: t.view(-1, t.size(-1))
    seq = hf_encoder(W, cfg, flat(input_ids), flat(token_type_ids), flat(attention_mask), act_mlp)
    logits = hf_lin(W, hf_pooler(W, seq) if pool else seq[:, 0], "classifier")
    reshaped = logits.view(num_choices, -1).t() if strided else logits.view(-1, num_choices)
    return reshaped, (F.cross_entropy(reshaped, labels) if labels is not None else None)


def hf_num_labels(cfg):
    """PretrainedConfig's num_labels: len(id2label) when config.json has id2label, else its num_labels, default 2."""
    return len(cfg["id2label"]) if cfg.get("id2label") is not None else cfg.get("num_labels", 2)


HF_ACT = {"gelu_new": gelu_new, "gelu": F.gelu}  # transformers' ACT2FN, the two a MegatronBert export names


def expected_hf_keys(nl, pretraining):
    keys = ["bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
            "bert.embeddings.token_type_embeddings.weight", "bert.encoder.ln.weight", "bert.encoder.ln.bias",
            "cls.predictions.bias", "cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
            "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias"]
    for i in range(nl):
        p = f"bert.encoder.layer.{i}."
        for s in ["attention.ln", "attention.self.query", "attention.self.key", "attention.self.value",
                  "attention.output.dense", "ln", "intermediate.dense", "output.dense"]:
            keys += [p + s + ".weight", p + s + ".bias"]
    if pretraining:
        keys += ["bert.pooler.dense.weight", "bert.pooler.dense.bias", "cls.seq_relationship.weight",
                 "cls.seq_relationship.bias"]
    return keys


def make_batch(V, vocab_n, binary):
    g = torch.Generator().manual_seed(7)
    B = 3
    tokens = torch.randint(5, vocab_n, (B, T), generator=g)
    padding = torch.zeros(B, T, dtype=torch.bool)
    for r, npad in enumerate([0, 5, 13]):
        if npad:
            padding[r, T - npad:] = True
    tokens[:, 0] = 2  # [CLS]
    tokens[padding] = 0
    types = torch.zeros(B, T, dtype=torch.long)
    if binary:
        for r in range(B):
            real = int((~padding[r]).sum())
            types[r, real // 2:real] = 1
    loss_mask = ((torch.rand(B, T, generator=g) < 0.2) & ~padding).double()
    loss_mask[:, 1] = 1.0
    labels = torch.where(loss_mask > 0, torch.randint(5, vocab_n, (B, T), generator=g),
                         torch.zeros(B, T, dtype=torch.long))
    return {"tokens": tokens, "types": types, "padding": padding, "labels": labels, "loss_mask": loss_mask,
            "sentence": torch.tensor([0, 1, 1])}


def check_export(tag, ck, tmp, export_hf, z2f, binary, vocab_n):
    hf = os.path.join(tmp, "hf_" + tag)
    out = run(export_hf, ck, hf).stdout
    arch = "MegatronBertForPreTraining" if binary else "MegatronBertForMaskedLM"
    cfg = json.load(open(os.path.join(hf, "config.json")))
    W = {k: torch.from_numpy(v) for k, v in read_safetensors(os.path.join(hf, "model.safetensors")).items()}
    z = os.path.join(tmp, "fp32_" + tag)
    run(z2f, ck, z, "--safe_serialization")
    P = {k: torch.from_numpy(v) for k, v in read_safetensors(os.path.join(z, "model.safetensors")).items()}
    V = P["language_model.embedding.word_embeddings.weight"].shape[0]
    want_cfg = {"architectures": [arch], "model_type": "megatron-bert", "vocab_size": V, "hidden_size": C,
                "num_hidden_layers": L, "num_attention_heads": NH, "intermediate_size": FFN, "hidden_act": "gelu_new",
                "max_position_embeddings": MAXPOS, "type_vocab_size": 2, "layer_norm_eps": 1e-5,
                "tie_word_embeddings": True, "torch_dtype": "float32"}
    bad = {k: (cfg.get(k), v) for k, v in want_cfg.items() if cfg.get(k) != v}
    check(not bad and arch in out, f"{tag} config.json", "model_type megatron-bert, " + arch +
          (f"; wrong: {bad}" if bad else ""))
    keys = expected_hf_keys(L, binary)
    shapes_ok = all(k in W for k in keys) and W["cls.predictions.bias"].shape == (V,) and \
        W["bert.embeddings.word_embeddings.weight"].shape == (V, C) and \
        W["bert.encoder.layer.0.intermediate.dense.weight"].shape == (FFN, C)
    check(sorted(W) == sorted(keys) and shapes_ok, f"{tag} safetensors keys", f"{len(W)} tensors, HF MegatronBert "
          f"names; missing {sorted(set(keys) - set(W))}, extra {sorted(set(W) - set(keys))}")
    if not binary:
        check(float(W["bert.embeddings.token_type_embeddings.weight"].abs().max()) == 0.0, f"{tag} token types zero",
              "no token types in Megatron: HF's token type 0 adds nothing")

    mcfg = {"L": L, "C": C, "NH": NH, "V": V, "post_ln": 0, "binary_head": binary}
    b = make_batch(V, vocab_n, binary)
    with torch.no_grad():
        ref_logits, ref_rel, ref_lm, ref_sop = bert_forward(P, b, mcfg)
        scale = float(ref_logits.abs().max())
        tanh_gelu = lambda x: F.gelu(x, approximate="tanh")
        logits, rel, lm, sop = hf_forward(W, cfg, b, tanh_gelu, F.gelu, binary)
        # only the real (non-pad) positions: Megatron masks pad query rows, HF does not (their rows never matter)
        real = ~b["padding"]
        e = float((logits - ref_logits)[real].abs().max()) / scale
        check(e <= TOL, f"{tag} logits (HF twin with tanh MLP / erf head vs Megatron twin)",
              f"max |diff| / max |logit| = {e:.2e} (tol {TOL:.0e}, max |logit| {scale:.3f})")
        e_lm = abs(float(lm - ref_lm)) / abs(float(ref_lm))
        check(e_lm <= TOL, f"{tag} lm loss", f"hf {float(lm):.9f} megatron {float(ref_lm):.9f} rel {e_lm:.2e}")
        if binary:
            e_r = float((rel - ref_rel).abs().max()) / float(ref_rel.abs().max())
            e_s = abs(float(sop - ref_sop)) / abs(float(ref_sop))
            check(e_r <= TOL and e_s <= TOL, f"{tag} seq_relationship logits and sop loss",
                  f"logits rel {e_r:.2e}, loss hf {float(sop):.9f} megatron {float(ref_sop):.9f} rel {e_s:.2e}")
        # what from_pretrained computes: config.hidden_act "gelu_new" in the MLP and in the head's transform
        g_logits, _, g_lm, _ = hf_forward(W, cfg, b, gelu_new, gelu_new, binary)
        e_g = float((g_logits - ref_logits)[real].abs().max()) / scale
        e_g_mlp = float((hf_forward(W, cfg, b, gelu_new, F.gelu, binary)[0] - ref_logits)[real].abs().max()) / scale
        check(e_g <= TOL_GELU_NEW and e_g_mlp <= 1e-9,
              f"{tag} hidden_act gelu_new (HF's one activation, tanh in the head too)",
              f"logits max |diff| / max |logit| = {e_g:.2e} (tol {TOL_GELU_NEW:.0e}); lm loss rel "
              f"{abs(float(g_lm - ref_lm)) / float(ref_lm):.2e}; gelu_new in the MLP alone {e_g_mlp:.1e}")
        e_erf = float((hf_forward(W, cfg, b, F.gelu, F.gelu, binary)[0] - ref_logits)[real].abs().max()) / scale
        print(f"# {tag}: hidden_act 'gelu' (erf everywhere) would give {e_erf:.2e}, 'gelu_new' gives {e_g:.2e}")
        # negative controls: the layout check sees the QKV split and the output bias
        Wb = dict(W)
        for i in range(L):
            p = f"language_model.encoder.layers.{i}.self_attention.query_key_value."
            for j, n in enumerate(("query", "key", "value")):  # Megatron's fused rows cut in thirds, no per-head split
                Wb[f"bert.encoder.layer.{i}.attention.self.{n}.weight"] = P[p + "weight"][j * C:(j + 1) * C]
                Wb[f"bert.encoder.layer.{i}.attention.self.{n}.bias"] = P[p + "bias"][j * C:(j + 1) * C]
        e_bad = float((hf_forward(Wb, cfg, b, tanh_gelu, F.gelu, binary)[0] - ref_logits)[real].abs().max()) / scale
        Wb = dict(W)
        Wb["cls.predictions.bias"] = torch.zeros_like(W["cls.predictions.bias"])
        e_bias = float((hf_forward(Wb, cfg, b, tanh_gelu, F.gelu, binary)[0] - ref_logits)[real].abs().max()) / scale
        check(min(e_bad, e_bias) > 100 * max(e, 1e-9), f"{tag} negative controls",
              f"without the per-head QKV split {e_bad:.2e}, without cls.predictions.bias {e_bias:.2e}")
    return e


# ---- fine-tuned checkpoints (finetune_bert): MegatronBertForSequenceClassification / ForMultipleChoice -------------
def sentence(rng, n, extra=None):
    w = [WORDS[rng.randint(len(WORDS))] for _ in range(n)]
    if extra is not None:
        w.insert(rng.randint(len(w) + 1), extra)
    return " ".join(w).capitalize() + "."


def make_tasks(tmp):
    """GLUE-format MNLI and STS-B files and RACE directories over the test's vocabulary (the label is a keyword of the
    second sentence / the option repeating the article's first word, as tests/finetune/make_tasks.py does)."""
    rng = np.random.RandomState(11)
    d = os.path.join(tmp, "tasks")
    mnli_head = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
                 "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"]
    keys = {"contradiction": "bad", "entailment": "good", "neutral": "blue"}
    stsb_head = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2",
                 "score"]
    os.makedirs(d)
    for name, n in (("train", 16), ("dev", 8)):
        with open(os.path.join(d, f"mnli_{name}.tsv"), "w") as f:
            f.write("\t".join(mnli_head) + "\n")
            for i in range(n):
                label = sorted(keys)[i % 3]
                row = [str(i), str(100 + i), f"{i}e", "fiction", "( x )", "( y )", "(ROOT x)", "(ROOT y)",
                       sentence(rng, rng.randint(3, 9)), sentence(rng, rng.randint(2, 6), keys[label]), label, label]
                f.write("\t".join(row) + "\n")
        with open(os.path.join(d, f"stsb_{name}.tsv"), "w") as f:
            f.write("\t".join(stsb_head) + "\n")
            for i in range(n):
                k = i % 3  # the score grows with the "good"s of sentence2
                s2 = " ".join(["good"] * k + [WORDS[rng.randint(len(WORDS))] for _ in range(3)]).capitalize() + "."
                f.write(f"{i}\tmain-news\tf\t2012\t{i}\tnone\tnone\t{sentence(rng, 5)}\t{s2}\t{2.0 * k + 0.5:.3f}\n")
        race = os.path.join(d, "race_" + name)
        os.makedirs(race)
        with open(os.path.join(race, "1.txt"), "w") as f:
            for a in range(2 if name == "train" else 1):
                art = [WORDS[rng.randint(len(WORDS))] for _ in range(rng.randint(8, 16))]
                qs, opts, answers = [], [], []
                for q in range(2):
                    ans = rng.randint(4)
                    o = [w for w in WORDS if w != art[0]]
                    o = [o[rng.randint(len(o))] for _ in range(4)]
                    o[ans] = art[0]
                    qs.append("which word comes first ?" if q == 0 else "what is the first word ?")
                    opts.append(o)
                    answers.append("ABCD"[ans])
                f.write(json.dumps({"article": " ".join(art) + ".", "questions": qs, "options": opts,
                                    "answers": answers, "id": f"{a}.txt"}) + "\n")
    return {"MNLI": ([os.path.join(d, "mnli_train.tsv")], [os.path.join(d, "mnli_dev.tsv")], 4),
            "STS-B": ([os.path.join(d, "stsb_train.tsv")], [os.path.join(d, "stsb_dev.tsv")], 4),
            "RACE": ([os.path.join(d, "race_train")], [os.path.join(d, "race_dev")], 2)}


def finetune(ft_bin, tmp, vocab, pre, task, files):
    train_files, valid_files, mbs = files
    ck = os.path.join(tmp, "ft_" + task)
    run(ft_bin, "--task", task, "--epochs", 1, "--pretrained-checkpoint", pre, "--train-data", *train_files,
        "--valid-data", *valid_files, "--vocab-file", vocab, "--num-layers", L, "--hidden-size", C,
        "--num-attention-heads", NH, "--ffn-hidden-size", FFN, "--seq-length", T, "--max-position-embeddings", MAXPOS,
        "--micro-batch-size", mbs, "--global-batch-size", mbs, "--lr", "1e-2", "--log-interval", 100,
        "--eval-iters", 1, "--eval-interval", 100, "--save", ck)
    return ck


def expected_hf_shapes(nl, V, K):
    """MegatronBertForSequenceClassification's / ForMultipleChoice's state: MegatronBertModel with the pooler, then
    classifier [K, C] (K 1 for multiple choice); no cls.*."""
    sh = {"bert.embeddings.word_embeddings.weight": (V, C), "bert.embeddings.position_embeddings.weight": (MAXPOS, C),
          "bert.embeddings.token_type_embeddings.weight": (2, C), "bert.encoder.ln.weight": (C,),
          "bert.encoder.ln.bias": (C,), "bert.pooler.dense.weight": (C, C), "bert.pooler.dense.bias": (C,),
          "classifier.weight": (K, C), "classifier.bias": (K,)}
    for i in range(nl):
        p = f"bert.encoder.layer.{i}."
        for s, out, inp in [("attention.ln", C, 0), ("attention.self.query", C, C), ("attention.self.key", C, C),
                            ("attention.self.value", C, C), ("attention.output.dense", C, C), ("ln", C, 0),
                            ("intermediate.dense", FFN, C), ("output.dense", C, FFN)]:
            sh[p + s + ".weight"] = (out, inp) if inp else (out,)
            sh[p + s + ".bias"] = (out,)
    return sh


def make_cls_batch(rows, vocab_n, seed):
    """[rows, T] of [CLS] a [SEP] b [SEP]-like rows: token types 0 then 1 over the real tokens, padding ids and types
    0 at the end (0 to 16 pads, so that choices of one question differ in length)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(5, vocab_n, (rows, T), generator=g)
    padding = torch.zeros(rows, T, dtype=torch.bool)
    types = torch.zeros(rows, T, dtype=torch.long)
    for r in range(rows):
        npad = [0, 5, 13, 9, 16, 2, 11, 7][r % 8]
        real = T - npad
        padding[r, real:] = True
        types[r, real // 2:real] = 1
    tokens[:, 0] = 2  # [CLS]
    tokens[padding] = 0
    return {"tokens": tokens, "types": types, "padding": padding}


def check_finetuned(task, ck, tmp, export_hf, z2f, vocab_n):
    hf = os.path.join(tmp, "hf_" + task)
    out = run(export_hf, ck, hf).stdout
    choice = task == "RACE"
    arch = "MegatronBertForMultipleChoice" if choice else "MegatronBertForSequenceClassification"
    cfg = json.load(open(os.path.join(hf, "config.json")))
    W = {k: torch.from_numpy(v) for k, v in read_safetensors(os.path.join(hf, "model.safetensors")).items()}
    z = os.path.join(tmp, "fp32_" + task)
    run(z2f, ck, z, "--safe_serialization")
    P = {k: torch.from_numpy(v) for k, v in read_safetensors(os.path.join(z, "model.safetensors")).items()}
    V = P["language_model.embedding.word_embeddings.weight"].shape[0]
    head = "multichoice_head" if choice else "classification_head"
    K = P[head + ".weight"].shape[0]
    want_k = {"MNLI": 3, "STS-B": 1, "RACE": 1}[task]
    problem = None if choice else ("regression" if K == 1 else "single_label_classification")

    # config.json: the architecture, num_labels as transformers reads it (id2label), problem_type
    want_cfg = {"architectures": [arch], "model_type": "megatron-bert", "vocab_size": V, "hidden_size": C,
                "num_hidden_layers": L, "num_attention_heads": NH, "intermediate_size": FFN, "hidden_act": "gelu_new",
                "max_position_embeddings": MAXPOS, "type_vocab_size": 2, "layer_norm_eps": 1e-5,
                "torch_dtype": "float32"}
    if not choice:
        want_cfg.update({"id2label": {str(i): f"LABEL_{i}" for i in range(K)},
                         "label2id": {f"LABEL_{i}": i for i in range(K)}, "problem_type": problem})
    bad = {k: (cfg.get(k), v) for k, v in want_cfg.items() if cfg.get(k) != v}
    if choice and ("problem_type" in cfg or "id2label" in cfg):
        bad["problem_type/id2label"] = (cfg.get("problem_type"), cfg.get("id2label"))
    check(not bad and K == want_k and arch in out and (choice or f"{K} label" in out), f"{task} config.json",
          f"{arch}, {K} output{'s' if K > 1 else ''}" + ("" if choice else f", num_labels {hf_num_labels(cfg)} "
          f"(id2label), problem_type {cfg.get('problem_type')}") + (f"; wrong: {bad}" if bad else ""))

    # the key set and every shape, exactly
    want = expected_hf_shapes(L, V, K)
    got = {k: tuple(v.shape) for k, v in W.items()}
    wrong = {k: (got[k], want[k]) for k in want if k in got and got[k] != want[k]}
    check(sorted(got) == sorted(want) and not wrong, f"{task} safetensors keys and shapes",
          f"{len(got)} tensors, classifier {got.get('classifier.weight')}; missing {sorted(set(want) - set(got))}, "
          f"extra {sorted(set(got) - set(want))}, wrong shapes {wrong}")

    # the HF class's forward against Megatron's Classification / MultipleChoice (cls_forward)
    mcfg = {"L": L, "C": C, "NH": NH, "V": V, "post_ln": 0, "binary_head": 0, "cls": K, "choices": 4 if choice else 1,
            "regression": int(problem == "regression")}
    nq = 2  # questions of 4 choices, or samples
    b = make_cls_batch(4 * nq if choice else 3, vocab_n, 13)
    g = torch.Generator().manual_seed(17)
    labels = torch.randint(0, 4 if choice else K, (nq if choice else 3,), generator=g)
    if problem == "regression":
        labels = torch.tensor([0, 3, 5])  # Megatron's int() of STS-B's scores
    b["sentence"] = labels
    act = HF_ACT[cfg["hidden_act"]]  # what from_pretrained computes: exact without lm_head
    with torch.no_grad():
        ref, ref_loss = cls_forward(P, b, mcfg)
        scale = float(ref.abs().max())
        ids, types, mask = b["tokens"], b["types"], (~b["padding"]).long()
        if choice:  # HF's inputs are [b, num_choices, s]: a question's 4 rows, consecutive in Megatron's batch
            as3 = lambda t: t.view(nq, 4, T)
            fwd = lambda **kw: hf_multiple_choice(W, cfg, as3(ids), as3(types), as3(mask), act, labels, **kw)
        else:
            fwd = lambda **kw: hf_sequence_classification(W, cfg, ids, types, mask, act, labels, **kw)
        logits, loss = fwd()
        e = float((logits - ref).abs().max()) / scale if logits.shape == ref.shape else math.inf
        e_loss = abs(float(loss - ref_loss)) / abs(float(ref_loss))
        check(e <= TOL and e_loss <= TOL, f"{task} {arch} logits and loss vs Megatron's "
              f"{'MultipleChoice' if choice else 'Classification'}",
              f"logits {list(logits.shape)} max |diff| / max |logit| = {e:.2e} (tol {TOL:.0e}, max |logit| "
              f"{scale:.3f}); loss hf {float(loss):.9f} megatron {float(ref_loss):.9f} rel {e_loss:.2e}")
        # negative controls: the [CLS] hidden state without the pooler; the choices viewed strided
        controls = [("[CLS] hidden state without the pooler", fwd(pool=False)[0])]
        if choice:
            controls.append(("choices viewed strided", fwd(strided=True)[0]))
        misses = [(what, float((x - ref).abs().max()) / scale) for what, x in controls]
        check(min(m for _, m in misses) > 100 * max(e, 1e-9), f"{task} negative controls",
              ", ".join(f"{what} {m:.2e}" for what, m in misses))
    return e


def with_tensors(tmp, name, ck, donors):
    """A copy of the checkpoint ck whose model file also holds every dataset under the given prefixes of each donor
    checkpoint's model file (param_names extended, the manifest recomputed, as tests/moe/old_moe_layout.py does)."""
    import h5py
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "checkpoint"))
    from manifest import remanifest
    dst_root = os.path.join(tmp, name)
    shutil.copytree(ck, dst_root)
    tag = open(os.path.join(dst_root, "latest")).read().strip()
    with h5py.File(os.path.join(dst_root, tag, "mp_rank_00_model_states.h5"), "r+") as dst:
        names = [n.decode() if isinstance(n, bytes) else n for n in dst["param_names"][()]]
        for donor, prefixes in donors:
            dtag = open(os.path.join(donor, "latest")).read().strip()
            with h5py.File(os.path.join(donor, dtag, "mp_rank_00_model_states.h5"), "r") as src:
                for t in src["param_names"][()]:
                    t = t.decode() if isinstance(t, bytes) else t
                    if t.startswith(prefixes):
                        src.copy(src["module"][t], dst["module"], name=t)
                        names.append(t)
        del dst["param_names"]
        dst.create_dataset("param_names", data=np.array(names, dtype=h5py.string_dtype()))
    remanifest(os.path.join(dst_root, tag))
    return dst_root


def check_refusals(tmp, export_hf, pre, ft):
    cases = [("classification and pretraining heads", ft["MNLI"], [(pre, ("lm_head.", "binary_head."))],
              ["classification_head.weight", "lm_head.dense.weight", "binary_head.weight", "pretraining heads"]),
             ("classification and multiple-choice heads", ft["MNLI"], [(ft["RACE"], ("multichoice_head.",))],
              ["classification_head.weight", "multichoice_head.weight", "multiple-choice head"]),
             ("multiple-choice head and lm_head", ft["RACE"], [(pre, ("lm_head.",))],
              ["multichoice_head.bias", "lm_head.bias"])]
    for i, (what, ck, donors, words) in enumerate(cases):
        mixed = with_tensors(tmp, f"mixed_{i}", ck, donors)
        out = os.path.join(tmp, f"hf_mixed_{i}")
        p = run(export_hf, mixed, out, ok=False)
        msg = p.stdout.strip()
        check(p.returncode == 1 and all(w in msg for w in words) and not os.path.exists(out),
              f"refused: {what}", f"exit {p.returncode}, output directory "
              f"{'LEFT' if os.path.exists(out) else 'absent'}: ...{msg[-300:]}")


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    pretrain, preprocess, export_hf, z2f, ft_bin = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="zt_bert_hf_") as tmp:
        vocab, data, vocab_n = make_data(tmp, preprocess)
        worst = 0.0
        cks = {}
        for tag, binary, extra in [("pretraining", True, []), ("masked_lm", False, ["--bert-no-binary-head"])]:
            ck, _ = train(pretrain, tmp, data, vocab, tag, extra)
            cks[tag] = ck
            try:
                worst = max(worst, check_export(tag, ck, tmp, export_hf, z2f, binary, vocab_n))
            except Exception as e:  # a missing or malformed file: report it, go on
                check(False, f"{tag} export", f"{type(e).__name__}: {e}")
        ck, p = train(pretrain, tmp, data, vocab, "post_ln", ["--apply-residual-connection-post-layernorm"])
        p = run(export_hf, ck, os.path.join(tmp, "hf_post_ln"), ok=False)
        check(p.returncode != 0 and "apply-residual-connection-post-layernorm" in p.stdout,
              "post-LN checkpoint refused", p.stdout.strip()[-200:])
        print(f"# worst logits difference (layout check) {worst:.2e}")

        # fine-tuned from the pretraining checkpoint: MNLI, STS-B (regression), RACE (multiple choice)
        tasks = make_tasks(tmp)
        ft, worst = {}, 0.0
        for task in ("MNLI", "STS-B", "RACE"):
            ft[task] = finetune(ft_bin, tmp, vocab, cks["pretraining"], task, tasks[task])
            try:
                worst = max(worst, check_finetuned(task, ft[task], tmp, export_hf, z2f, vocab_n))
            except Exception as e:  # a missing or malformed file: report it, go on
                check(False, f"{task} export", f"{type(e).__name__}: {e}")
        print(f"# worst logits difference (fine-tuned) {worst:.2e}")
        check_refusals(tmp, export_hf, cks["pretraining"], ft)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
