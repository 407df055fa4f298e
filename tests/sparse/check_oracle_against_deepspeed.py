"""Checks the NumPy transcription (sparsity_oracle.py) against DeepSpeed's own sparsity_config.py: every case
of test_sparse_layout.py (the sweep, DeepSpeed's refusals, our stricter refusals) is built by both with Python's
random module seeded alike before each, so even the random blocks must agree; layouts must be identical and
DeepSpeed's errors the same type and text (torch's and NumPy's own failures, worded differently, must both fail).
usage: check_oracle_against_deepspeed.py [PATH/TO/deepspeed/ops/sparse_attention/sparsity_config.py]
Without a path it uses an installed deepspeed, or $ZT_DEEPSPEED_SPARSITY_CONFIG; SKIP (77) when none is there
or torch is missing (DeepSpeed's file builds torch tensors).
"""
import importlib.util
import os
import random
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
try:
    import numpy as np
    import torch  # noqa: F401
except ImportError:
    print("SKIP: NumPy or torch not available")
    sys.exit(77)

path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ZT_DEEPSPEED_SPARSITY_CONFIG", "")
if not path:
    spec = importlib.util.find_spec("deepspeed")
    if spec and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "ops", "sparse_attention", "sparsity_config.py")
if not path or not os.path.exists(path):
    print("SKIP: DeepSpeed's sparsity_config.py not found (pass its path or set ZT_DEEPSPEED_SPARSITY_CONFIG)")
    sys.exit(77)
spec = importlib.util.spec_from_file_location("ds_sparsity_config", path)
ds = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ds)

import sparsity_oracle as orc  # noqa: E402
import test_sparse_layout as t  # noqa: E402

t.sweep_cases = t.sweep()
cases = t.sweep_cases + t.ds_error_cases() + t.strict_cases()
classes = {"dense": ds.DenseSparsityConfig, "fixed": ds.FixedSparsityConfig, "variable": ds.VariableSparsityConfig,
           "bigbird": ds.BigBirdSparsityConfig, "bslongformer": ds.BSLongformerSparsityConfig}
same_layout = same_error = 0
bad = []
for i, cs in enumerate(cases):
    if cs["seq"] > 1 << 20:
        continue  # the layout-size refusals: DeepSpeed would try to allocate it
    cfg = t.oracle_config(cs)
    kw = {k: v for k, v in cfg.items() if k != "mode"}
    if cfg["mode"] == "dense":
        kw.pop("different_layout_per_head", None)

    def deepspeed():
        return classes[cfg["mode"]](num_heads=cs["heads"], **kw).make_layout(cs["seq"]).numpy()

    def oracle():
        return orc.from_config(cfg, cs["heads"]).make_layout(cs["seq"])

    res = []
    for build in (deepspeed, oracle):
        random.seed(i)
        try:
            res.append(("ok", build()))
        except Exception as ex:
            res.append(("err", ex))
    (k1, a), (k2, b) = res
    if k1 != k2:
        bad.append(f"{t.case_line(cs)}: DeepSpeed {k1} {a if k1 == 'err' else ''}, oracle {k2} {b if k2 == 'err' else ''}")
    elif k1 == "ok":
        if not np.array_equal(a, b):
            bad.append(f"{t.case_line(cs)}: layouts differ")
        same_layout += 1
    else:
        # DeepSpeed's own messages (and random.sample's) word for word; torch's and NumPy's own failures (an
        # index or a negative size) only as failures: their wording differs
        ours = str(a).startswith(t.DS_MESSAGES) or str(a) == t.SAMPLE_ERR
        if ours and (type(a) is not type(b) or str(a) != str(b)):
            bad.append(f"{t.case_line(cs)}: DeepSpeed {type(a).__name__}: {a} / oracle {type(b).__name__}: {b}")
        same_error += 1
print(f"{same_layout} layouts and {same_error} errors of DeepSpeed's sparsity_config.py reproduced by the oracle")
for b in bad[:20]:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
