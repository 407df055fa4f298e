#!/usr/bin/env python3
"""finetune_llama (Megatron-DeepSpeed's finetune_llama.py, examples_deepspeed/finetune_hf_llama/finetune_llama.sh's
training step): a Hugging Face Llama directory with its tokenizer, converted by hf2megads_weight_converter, then
fine-tuned on Alpaca-style JSON with --tokenizer-type HFTokenizer (docs/finetune_llama.md).

Usage: test_finetune_llama.py FINETUNE_LLAMA CONVERTER PROMPT_TOOL PREPROCESS_DATA PRETRAIN_GPT

The directory is written here (no transformers): a SentencePiece model of 256 pieces trained on generated text as
tokenizer.model with a LlamaTokenizer tokenizer_config.json (pad_token null, so HFTokenizer adds "[PAD]" as id 256,
past the 256-row embedding), and test_hf_import.py's tiny random LlamaForCausalLM (2 layers, hidden 48, 4 heads,
2 key/value groups, untied) with vocab_size 256. The Alpaca file holds 20 generated examples, some with an "input".
1. forward: iteration 1's lm loss (before any update) equals the float64 Hugging Face twin's (test_llama_hf_export.py
   hf_forward) on the directory's weights: for each of the 4 micro batches of 2 examples, the cross entropy of
   labels[1:] over the positions where labels != pad (the rows as test_prompt_tool prints them: test_prompt_dataset.py
   checks those against an independent transcription of SupervisedDataset), averaged over the micro batches; 1e-5.
   The pad positions' inputs are given the twin as id 0: they follow the example under the causal mask and carry no
   loss, so any input there gives the same loss (which the zero embedding of the id past the table also relies on).
2. layouts: 6 iterations with --repeated-dataloader (20 examples, 8 per iteration: the third iteration starts over at
   example 0 after the dropped last 4) at lr 1e-2: TP 2 and PP 2 (mpirun -np 2) give one process's losses (1e-5).
3. the script: finetune_llama.sh's flags (scaled down) with its ds_config (bf16, ZeRO 0) train; the checkpoint saved
   converts back with --to-hf-ckpt.
4. pretraining data: preprocess_data --tokenizer-type HFTokenizer --append-eod writes each document as
   tokenizer.encode(text) (bos first, legacy SentencePiece ids) + eos, the .bin holding exactly those ids (uint16), and
   pretrain_gpt trains on it with the same tokenizer flags.
5. refusals (exit 1 before training): --tokenizer-type GPTSentencePieceTokenizer, two --data-path words,
   --eod-mask-loss, --data-efficiency-curriculum-learning, more samples than examples without
   --repeated-dataloader (the numbers named), an example without "output" (the file and the example named)."""
import json
import os
import random
import re
import shutil
import sys
import tempfile

try:
    import numpy  # noqa: F401
    import sentencepiece as spm
    import torch
except ImportError as e:
    print(f"FAIL finetune_llama: {e}; install the oracle with `apt-get install -y python3-torch python3-numpy "
          "python3-sentencepiece`")
    print("0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_lib import check, run, summary  # noqa: E402
import test_hf_import as H  # noqa: E402  the tiny Llama directory writer
import test_llama_hf_export as X  # noqa: E402  the float64 Hugging Face twin

torch.set_default_dtype(torch.float64)
V, T, MBS, GBS = 256, 128, 2, 8
MPI = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-x", "OMP_NUM_THREADS=1", "-np", "2"]
WORDS = ("the of and to in is was for on that with as by at from his her they which this be are an it not or "
         "have had one were all their there been has but more when can who also its into other after first new "
         "time two may only about would these over most such many some then three between where year").split()


def sentence(rng, lo, hi):
    s = " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))
    return s[0].upper() + s[1:] + "."


def write_tokenizer(d, tmp):
    rng = random.Random(7)
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        for _ in range(3000):
            f.write(sentence(rng, 3, 14) + "\n")
        f.write("Below is an instruction that describes a task, paired with an input that provides further context. "
                "Write a response that appropriately completes the request. ### Instruction: Input: Response:\n")
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(tmp, "sp"), model_type="bpe",
                                   vocab_size=V, unk_id=0, bos_id=1, eos_id=2, pad_id=-1, character_coverage=1.0,
                                   remove_extra_whitespaces=False, normalization_rule_name="identity",
                                   minloglevel=2)
    shutil.copy(os.path.join(tmp, "sp.model"), os.path.join(d, "tokenizer.model"))
    tok = lambda c: {"__type": "AddedToken", "content": c, "lstrip": False, "normalized": False,  # noqa: E731
                     "rstrip": False, "single_word": False}
    json.dump({"tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "add_eos_token": False,
               "bos_token": tok("<s>"), "eos_token": tok("</s>"), "unk_token": tok("<unk>"), "pad_token": None,
               "clean_up_tokenization_spaces": False, "model_max_length": 2048, "sp_model_kwargs": {}},
              open(os.path.join(d, "tokenizer_config.json"), "w"), indent=2)


def write_alpaca(path, n):
    rng = random.Random(11)
    ex = []
    for i in range(n):
        e = {"instruction": sentence(rng, 2, 6), "output": sentence(rng, 1, 5)}
        if i % 3 == 1:
            e["input"] = sentence(rng, 1, 3)
        elif i % 3 == 2:
            e["input"] = ""
        ex.append(e)
    json.dump(ex, open(path, "w"), indent=1)


def losses(text):
    return [float(x) for x in re.findall(r"lm loss: ([0-9.E+-]+)", text)]


def rows(tool, hf, data):
    """test_prompt_tool's batch rows: {i: (tokens, labels, mask)}."""
    out = {}
    for line in run(tool, hf, data, T).stdout.splitlines():
        m = re.match(r"(tokens|labels|mask) (\d+): (.*)", line)
        if m:
            out.setdefault(int(m.group(2)), {})[m.group(1)] = [int(x) for x in m.group(3).split()]
    return out


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    ft, conv, tool, prep, pretrain = sys.argv[1:]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="zt_finetune_llama_") as tmp:
        hf = os.path.join(tmp, "llama-hf")
        H.V = V
        W, cfg = H.scratch_model()
        H.write_hf_dir(hf, W, cfg)
        write_tokenizer(hf, tmp)
        data = os.path.join(tmp, "alpaca_data.json")
        write_alpaca(data, 20)
        model = ["--num-layers", H.L, "--hidden-size", H.C, "--num-attention-heads", H.NH, "--num-key-value-heads",
                 H.NKV, "--ffn-hidden-size", H.FFN, "--attention-dropout", 0, "--hidden-dropout", 0,
                 "--no-query-key-layer-scaling", "--disable-bias-linear", "--normalization", "rmsnorm",
                 "--use-rotary-position-embeddings", "--untie-embeddings-and-output-weights", "--swiglu",
                 "--rotary-position-embeddings-theta", H.THETA, "--seq-length", T, "--max-position-embeddings", T,
                 "--tokenizer-type", "HFTokenizer", "--tokenizer-model", hf]
        script = ["--weight-decay", 0.1, "--clip-grad", 1, "--finetune", "--micro-batch-size", MBS,
                  "--global-batch-size", GBS, "--lr-decay-style", "cosine", "--lr-decay-iters", 320000,
                  "--log-interval", 1, "--eval-iters", 100, "--eval-interval", 100, "--data-path", data, "--split",
                  "100,0,0", "--zero-stage", 0, "--distributed-backend", "nccl", "--num-workers", 0,
                  "--no-masked-softmax-fusion", "--no-bias-gelu-fusion", "--no-bias-dropout-fusion",
                  "--no-gradient-accumulation-fusion", "--repeated-dataloader"]
        ck = os.path.join(tmp, "llama-mega-ds")
        p = run(conv, "--hf-ckpt-dir", hf, "--load-mode", "auto", "--save", ck, *model, *script)
        check("global_step0" in p.stdout, "converted", "hf2megads_weight_converter with --tokenizer-type HFTokenizer "
              "(vocabulary 256 = config.json's vocab_size)")

        # ---- 1. iteration 1's loss against the float64 twin ----------------------------------------------------
        p = run(ft, "--load", ck, *model, *script, "--train-iters", 1, "--lr", "1e-2", "--lr-warmup-iters", 0)
        got = losses(p.stdout)
        R = rows(tool, hf, data)
        Wd = {k: v.double() for k, v in W.items()}
        micro = []
        for m in range(GBS // MBS):
            idx = list(range(m * MBS, (m + 1) * MBS))
            ids = torch.tensor([[t if t < V else 0 for t in R[i]["tokens"]] for i in idx])
            lab = torch.tensor([R[i]["labels"] for i in idx])
            mask = torch.tensor([R[i]["mask"] for i in idx], dtype=torch.float64)
            with torch.no_grad():
                logp = torch.log_softmax(X.hf_forward(Wd, cfg, ids), dim=-1)
            lab = torch.where(mask > 0, lab, torch.zeros_like(lab))
            ce = -logp.gather(-1, lab.unsqueeze(-1)).squeeze(-1)
            micro.append(float((ce * mask).sum() / mask.sum()))
        want = sum(micro) / len(micro)
        e = abs(got[0] - want) / want if got else 1.0
        masked = sum(1 for i in range(GBS) for k in R[i]["mask"] if k == 0)
        check(len(got) == 1 and e <= 1e-5, "forward: iteration 1 lm loss", f"zerotron {got} vs the float64 twin "
              f"{want:.7f} (micro batches {[round(x, 5) for x in micro]}), rel {e:.1e} (tol 1e-5); {masked} of "
              f"{GBS * T} positions masked (prompt and padding)")
        pads = sum(1 for i in range(GBS) for t in R[i]["tokens"] if t == V)
        check(pads > 0 and "have no label left" in p.stdout, "forward: the [PAD] id past the table",
              f"{pads} input positions hold [PAD] = {V} (the embedding has {V} rows); dataset line printed")

        # ---- 2. layouts -----------------------------------------------------------------------------------------
        train = ["--load", ck, *model, *script, "--train-iters", 6, "--lr", "1e-2", "--lr-warmup-iters", 0]
        base = losses(run(ft, *train).stdout)
        check(len(base) == 6 and all(x == x for x in base), "layouts: one process", f"losses {base}")
        if shutil.which("mpirun"):
            for tag, extra in (("TP 2", ["--tensor-model-parallel-size", 2]),
                               ("PP 2", ["--pipeline-model-parallel-size", 2])):
                got = losses(run(*MPI, ft, *train, *extra).stdout)
                e = max(abs(a - b) / abs(b) for a, b in zip(got, base)) if len(got) == len(base) else 1.0
                check(e <= 1e-5, f"layouts: {tag}", f"losses {got}, max rel diff to one process {e:.1e} (tol 1e-5)")
        else:
            print("SKIP layouts: no mpirun")

        # ---- 3. the script's ds_config (bf16, ZeRO 0) -------------------------------------------------------------
        dsc = os.path.join(tmp, "ds_config.json")
        json.dump({"train_batch_size": GBS, "train_micro_batch_size_per_gpu": MBS, "steps_per_print": 100,
                   "zero_optimization": {"stage": 0}, "bf16": {"enabled": True}}, open(dsc, "w"))
        out = os.path.join(tmp, "sft")
        p = run(ft, "--load", ck, *model, *script, "--train-iters", 4, "--lr", "2e-5", "--lr-warmup-iters", 2,
                "--bf16", "--deepspeed", "--deepspeed_config", dsc, "--save", out, "--save-interval", 4)
        got = losses(p.stdout)
        check(len(got) == 4 and all(0 < x < 10 for x in got) and os.path.isdir(os.path.join(out, "global_step4")),
              "script: bf16 with its ds_config", f"losses {got}; global_step4 saved")
        back = os.path.join(tmp, "back")
        p = run(conv, "--hf-ckpt-dir", hf, "--load-mode", "auto", "--to-hf-ckpt", "--load", out, "--save", back,
                *model, *script, ok=False)
        check(p.returncode == 0 and os.path.exists(os.path.join(back, "release", "model.safetensors")),
              "script: --to-hf-ckpt of the fine-tuned checkpoint", p.stdout.strip()[-200:])

        # ---- 4. pretraining data through the same tokenizer ----------------------------------------------------
        docs = [e["output"] + " " + e["instruction"] for e in json.load(open(data))]
        jl = os.path.join(tmp, "docs.jsonl")
        with open(jl, "w") as f:
            for d in docs:
                f.write(json.dumps({"text": d}) + "\n")
        prefix = os.path.join(tmp, "sft_docs")
        run(prep, "--input", jl, "--output-prefix", prefix, "--tokenizer-type", "HFTokenizer", "--tokenizer-model",
            hf, "--seq-length", T, "--append-eod", "--workers", 2)
        sp = spm.SentencePieceProcessor(model_file=os.path.join(hf, "tokenizer.model"))
        want = [i for d in docs for i in [1] + sp.encode(d) + [2]]
        got = numpy.fromfile(prefix + "_text_document.bin", dtype=numpy.uint16).tolist()
        check(got == want, "preprocess_data: HFTokenizer ids", f"{len(got)} ids in the .bin, {len(want)} expected "
              f"(bos + SentencePiece ids + eos per document); first differing at "
              f"{next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))}")
        p = run(pretrain, *model, "--micro-batch-size", MBS, "--global-batch-size", GBS, "--train-iters", 2, "--lr",
                "1e-3", "--log-interval", 1, "--eval-iters", 0, "--data-path", prefix + "_text_document", "--split",
                "100,0,0")
        got = losses(p.stdout)
        check(len(got) == 2 and all(0 < x < 10 for x in got), "pretrain_gpt: HFTokenizer data", f"losses {got}")

        # ---- 5. refusals ------------------------------------------------------------------------------------------
        bad = os.path.join(tmp, "bad.json")
        json.dump([{"instruction": "a", "output": "b"}, {"instruction": "c"}], open(bad, "w"))
        norep = [a for a in script if a != "--repeated-dataloader"]
        cases = [
            ("another tokenizer", ["--train-iters", 1, "--tokenizer-type", "GPTSentencePieceTokenizer",
                                   "--tokenizer-model", os.path.join(hf, "tokenizer.model")],
             "needs --tokenizer-type HFTokenizer"),
            ("two data paths", ["--train-iters", 1, "--data-path", data, data], "reads one JSON file"),
            ("--eod-mask-loss", ["--train-iters", 1, "--eod-mask-loss"], "--eod-mask-loss"),
            ("data-efficiency curriculum", ["--train-iters", 1, "--data-efficiency-curriculum-learning"],
             "data_post_process"),
            ("an example without output", ["--train-iters", 1, "--data-path", bad], "bad.json: example 1 has no"),
        ]
        for tag, extra, want in cases:
            q = run(ft, "--load", ck, *model, *script, "--lr", "1e-2", *extra, ok=False)
            check(q.returncode != 0 and want in q.stdout and "iteration        1" not in q.stdout,
                  f"refused: {tag}", q.stdout.strip().splitlines()[-1][:300] if q.stdout.strip() else "")
        q = run(ft, "--load", ck, *model, *norep, "--train-iters", 3, "--lr", "1e-2", ok=False)
        check(q.returncode != 0 and "needs 24 samples" in q.stdout and "holds 20 examples" in q.stdout,
              "refused: more samples than examples", q.stdout.strip().splitlines()[-1][:300])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
