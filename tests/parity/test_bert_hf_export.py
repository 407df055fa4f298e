#!/usr/bin/env python3
"""export_hf of a BERT checkpoint against Hugging Face's MegatronBert layout (docs/checkpoints.md, "BERT").

Usage: test_bert_hf_export.py PRETRAIN_BERT PREPROCESS_DATA EXPORT_HF ZERO_TO_FP32

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
tolerance. A checkpoint trained with --apply-residual-connection-post-layernorm is refused."""
import json
import math
import os
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
from test_bert_parity import bert_forward  # noqa: E402  the Megatron-named twin

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


def hf_forward(W, cfg, b, act_mlp, act_head, pretraining):
    """MegatronBertForPreTraining / ForMaskedLM forward (eval mode) on HF-named weights W: (prediction_scores,
    seq_relationship_score or None, masked_lm_loss, next_sentence_loss or None)."""
    H, nh, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
    hd = H // nh
    lin = lambda x, p: x @ W[p + ".weight"].T + W[p + ".bias"]
    ln = lambda x, p: F.layer_norm(x, (H,), W[p + ".weight"], W[p + ".bias"], eps)
    ids = b["tokens"]
    Bb, S = ids.shape
    # MegatronBertEmbeddings (no LayerNorm): word + token_type + absolute position
    x = (W["bert.embeddings.word_embeddings.weight"][ids] + W["bert.embeddings.token_type_embeddings.weight"][b["types"]]
         + W["bert.embeddings.position_embeddings.weight"][torch.arange(S)])
    # get_extended_attention_mask: (1 - mask)[:, None, None, :] * finfo.min, added to the scores
    attn_mask = (~b["padding"]).double()
    ext = (1.0 - attn_mask)[:, None, None, :] * torch.finfo(torch.float64).min
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
    seq = ln(x, "bert.encoder.ln")
    # cls.predictions: transform (dense, act, LayerNorm) -> decoder tied to the word embeddings + bias
    t = ln(act_head(lin(seq, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
    scores = t @ W["bert.embeddings.word_embeddings.weight"].T + W["cls.predictions.bias"]
    labels = torch.where(b["loss_mask"] > 0, b["labels"], torch.full_like(b["labels"], -100))
    mlm = F.cross_entropy(scores.view(-1, cfg["vocab_size"]), labels.view(-1))  # CrossEntropyLoss(), ignore -100
    if not pretraining:
        return scores, None, mlm, None
    pooled = torch.tanh(lin(seq[:, 0], "bert.pooler.dense"))  # MegatronBertPooler
    rel = lin(pooled, "cls.seq_relationship")
    return scores, rel, mlm, F.cross_entropy(rel.view(-1, 2), b["sentence"].view(-1))


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
    labels = torch.where(loss_mask > 0, torch.randint(5, vocab_n, (B, T), generator=g), torch.zeros(B, T, dtype=torch.long))
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


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    pretrain, preprocess, export_hf, z2f = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="zt_bert_hf_") as tmp:
        vocab, data, vocab_n = make_data(tmp, preprocess)
        worst = 0.0
        for tag, binary, extra in [("pretraining", True, []), ("masked_lm", False, ["--bert-no-binary-head"])]:
            ck, _ = train(pretrain, tmp, data, vocab, tag, extra)
            try:
                worst = max(worst, check_export(tag, ck, tmp, export_hf, z2f, binary, vocab_n))
            except Exception as e:  # a missing or malformed file: report it, go on
                check(False, f"{tag} export", f"{type(e).__name__}: {e}")
        ck, p = train(pretrain, tmp, data, vocab, "post_ln", ["--apply-residual-connection-post-layernorm"])
        p = run(export_hf, ck, os.path.join(tmp, "hf_post_ln"), ok=False)
        check(p.returncode != 0 and "apply-residual-connection-post-layernorm" in p.stdout,
              "post-LN checkpoint refused", p.stdout.strip()[-200:])
        print(f"# worst logits difference (layout check) {worst:.2e}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
