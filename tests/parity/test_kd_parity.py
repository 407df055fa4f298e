#!/usr/bin/env python3
"""PyTorch parity of knowledge distillation's term (Megatron-DeepSpeed's calculate_mos_loss and loss_func) in the GPT
student: from the logits kd_parity_dump dumps (the student's, after its forward, and random teacher logits), float64
torch recomputes

  lm   = sum(mask * cross_entropy(s, targets)) / sum(mask)
  kd   = temp^2 * KLDivLoss(reduction='batchmean')(log_softmax(s / temp, dim=2), softmax(t / temp, dim=2))
         / seq_length * beta                                    (s, t: [B, T, V], batchmean divides by B)
  total = lm + moe (0: a dense student) + kd

and d(total)/d(s) x grad_scale by autograd, against the C's losses and the d(logits) its output-layer backward
applies; an evaluation pass has kd = 0. Usage: test_kd_parity.py KD_PARITY_DUMP_BINARY. Prints PASS/FAIL per check,
"N passed, M failed", exit status 1 on any failure.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

CASES = [  # temp, beta, seq_length (the divisor; --seq-length of the run), grad_scale
    (1.0, 1.0, 6, 1.0),
    (2.0, 0.7, 8, 0.5),
    (0.5, 3.0, 6, 0.25),
]

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {name} {detail}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def main():
    exe = sys.argv[1]
    for temp, beta, seq, gs in CASES:
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([exe, d, str(temp), str(beta), str(seq), str(gs)], check=True)
            ld = lambda n: np.load(os.path.join(d, n + ".npy"))
            s = torch.tensor(ld("student_logits"), dtype=torch.float64, requires_grad=True)
            t = torch.tensor(ld("teacher_logits"), dtype=torch.float64)
            y = torch.tensor(ld("targets"), dtype=torch.int64)
            mask = torch.tensor(ld("loss_mask"), dtype=torch.float64)
            got, got_eval, got_d = ld("losses"), ld("eval_losses"), ld("dlogits")
            B, T, V = s.shape
            ce = torch.nn.functional.cross_entropy(s.reshape(-1, V), y.reshape(-1), reduction="none")
            lm = (ce * mask.reshape(-1)).sum() / mask.sum()
            kd = temp * temp * torch.nn.KLDivLoss(reduction="batchmean")(
                torch.nn.functional.log_softmax(s / temp, dim=2), torch.nn.functional.softmax(t / temp, dim=2))
            kd = kd / seq * beta
            total = lm + kd
            (total * gs).backward()
            want = [total.item(), lm.item(), 0.0, kd.item()]
            tag = f"temp {temp} beta {beta} seq_length {seq} grad_scale {gs}"
            err = max(abs(a - b) for a, b in zip(got, want))
            check(f"losses {{total, lm, moe, mos}} ({tag})", err < 1e-5 and kd.item() > 0,
                  f"C {list(map(float, got))} torch {want} max err {err:.2e}")
            derr = float(np.abs(got_d - s.grad.numpy()).max())
            kd_part = float(np.abs(s.grad.numpy()).max())
            check(f"d(total)/d(logits) x grad_scale, all {B}x{T}x{V} ({tag})", derr < 1e-5,
                  f"max err {derr:.2e} (largest gradient {kd_part:.3e})")
            # the KD term's share of the gradient is there (not only the lm loss's)
            s2 = s.detach().clone().requires_grad_(True)
            ce2 = torch.nn.functional.cross_entropy(s2.reshape(-1, V), y.reshape(-1), reduction="none")
            ((ce2 * mask.reshape(-1)).sum() / mask.sum() * gs).backward()
            lm_only = float(np.abs(got_d - s2.grad.numpy()).max())
            check(f"the KD gradient is applied ({tag})", lm_only > 100 * max(derr, 1e-9),
                  f"|C - lm-only gradient| {lm_only:.2e}")
            eerr = max(abs(float(got_eval[1]) - lm.item()), abs(float(got_eval[3])), abs(float(got_eval[0]) - lm.item()))
            check(f"evaluation pass: mos loss 0, total = lm ({tag})", eerr < 1e-5, f"max err {eerr:.2e}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
