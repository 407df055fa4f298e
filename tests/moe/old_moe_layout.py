#!/usr/bin/env python3
"""Rewrites an MoE checkpoint tag directory into the layout of builds before DeepSpeed's per-expert files: every
layer_<l>_expert_<e>_mp_rank_<mp>_model_states.h5's tensors copied (with their attributes) into
mp_rank_<mp>_model_states.h5, its param_names extended, the expert files removed and zt_manifest.txt recomputed
(tests/checkpoint/manifest.py). tests/moe/test_moe_train.sh loads the result to check that such checkpoints still load.
Usage: old_moe_layout.py TAG_DIR"""
import os
import re
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "checkpoint"))
from manifest import remanifest  # noqa: E402


def main():
    d = sys.argv[1]
    experts = sorted(n for n in os.listdir(d) if re.match(r"layer_\d+_expert_\d+_mp_rank_\d+_model_states\.h5$", n))
    if not experts:
        sys.exit(f"{d}: no per-expert files")
    for name in experts:
        mp = int(re.search(r"mp_rank_(\d+)", name).group(1))
        with h5py.File(os.path.join(d, name), "r") as src, \
                h5py.File(os.path.join(d, "mp_rank_%02d_model_states.h5" % mp), "r+") as dst:
            names = [n.decode() if isinstance(n, bytes) else n for n in dst["param_names"][()]]
            for t in src["param_names"][()]:
                t = t.decode() if isinstance(t, bytes) else t
                src.copy(src["module"][t], dst["module"], name=t)
                names.append(t)
            del dst["param_names"]
            dst.create_dataset("param_names", data=np.array(names, dtype=h5py.string_dtype()))
        os.remove(os.path.join(d, name))
    remanifest(d)
    print(f"{len(experts)} expert files folded into the model states")


if __name__ == "__main__":
    main()
