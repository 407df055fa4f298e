#!/usr/bin/env python3
"""Independent h5py/NumPy reader of zerotron checkpoints for the tests (docs/checkpoints.md).

  h5_oracle.py same DIR_A DIR_B        every dataset of every .h5 file bitwise equal, same scalar state
  h5_oracle.py full DIR_A DIR_B        the reassembled full weights and optimizer states equal (any DP layout)
  h5_oracle.py close DIR_A DIR_B TOL HEAD_DIM
                                       the same, each array within TOL x its largest magnitude (sums rounded in
                                       another order); the key thirds of the fused QKV biases are left out: their
                                       gradient is zero but for rounding (softmax ignores a per-query shift), and
                                       Adam turns that noise into full steps
  h5_oracle.py check DIR               structure: names, shapes, slice mappings cover each tensor once
Exit 0 when equal / valid, 1 with a message otherwise, 77 when h5py is missing."""
import glob, os, re, sys
try:
    import h5py
    import numpy as np
except ImportError as e:
    print("SKIP: %s (apt-get install python3-h5py python3-numpy)" % e)
    sys.exit(77)

SCALARS = ["iteration", "consumed_train_samples", "consumed_valid_samples", "tokens", "skipped_steps", "step"]


def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out


def attrs(path):
    out = {}
    with h5py.File(path, "r") as f:
        def take(name, o):
            for k, v in o.attrs.items():
                out[(name, k)] = v
        take("/", f)
        f.visititems(take)
    return out


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def same(a, b):
    fa = sorted(os.path.basename(p) for p in glob.glob(a + "/*.h5"))
    fb = sorted(os.path.basename(p) for p in glob.glob(b + "/*.h5"))
    if fa != fb or not fa:
        fail("file lists differ: %s vs %s" % (fa, fb))
    for fn in fa:
        da, db = datasets(os.path.join(a, fn)), datasets(os.path.join(b, fn))
        if da.keys() != db.keys():
            fail("%s: datasets differ: %s" % (fn, sorted(set(da) ^ set(db))))
        for k in da:
            x, y = np.asarray(da[k]), np.asarray(db[k])
            if x.dtype == object or y.dtype == object:
                if x.tolist() != y.tolist():
                    fail("%s: %s differs" % (fn, k))
                continue
            if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
                fail("%s: %s differs (max abs diff %s)" % (fn, k, np.max(np.abs(x.astype(float) - y.astype(float)))
                                                          if x.shape == y.shape and x.dtype.kind == 'f' else "shape"))
        aa, ab = attrs(os.path.join(a, fn)), attrs(os.path.join(b, fn))
        for key, v in aa.items():
            if key[0].startswith("lr_scheduler") or key[0].startswith("loss_scaler") or key[1] in SCALARS:
                if key not in ab or np.asarray(ab[key]).tolist() != np.asarray(v).tolist():
                    fail("%s: attribute %s %s: %r vs %r" % (fn, key[0], key[1], v, ab.get(key)))
    print("equal: %d files, every dataset bitwise" % len(fa))


def weights_dtype_view(ds):
    x = ds[()]
    if ds.attrs.get("dtype") == "bf16":
        return (x.astype(np.uint32) << 16).view(np.float32)
    return x.astype(np.float32)


def full_state(d, strip_vocab=False):
    """{name: {"weights": full array, state: full flat array}} reassembled from slices and partitions."""
    models = sorted(glob.glob(d + "/mp_rank_*_model_states.h5"))
    out = {}

    def place(entry, key, local, sd, offset):
        """local (this model-parallel rank's slice) into the full array entry[key]."""
        full = entry["shape"]
        arr = entry.setdefault(key, np.full(full, np.nan, np.float32))
        if sd < 0 or local.shape == tuple(full):
            arr[...] = local
        else:
            idx = [slice(None)] * len(full)
            idx[sd] = slice(offset, offset + local.shape[sd])
            arr[tuple(idx)] = local

    for mp, path in enumerate(models):
        local_meta = {}
        with h5py.File(path, "r") as f:
            for name in [n.decode() if isinstance(n, bytes) else n for n in f["param_names"][()]]:
                ds = f["module"][name]
                full = tuple(int(s) for s in ds.attrs["full_shape"])
                entry = out.setdefault(name, {"shape": full})
                sd, off = int(ds.attrs["tp_split_dim"]), int(ds.attrs["slice_offset"])
                place(entry, "weights", weights_dtype_view(ds), sd, off)
                local_meta[name] = (ds.shape, sd, off)
        # optimizer partitions of this model-parallel rank: fragments of the local (sliced) tensors
        local = {}
        for path in glob.glob(d + "/*zero_pp_rank_*_mp_rank_%02d_optim_states.h5" % mp):
            with h5py.File(path, "r") as f:
                m = f["param_slice_mappings"]
                names = [n.decode() if isinstance(n, bytes) else n for n in m["names"][()]]
                for state in f["state"]:
                    data = f["state"][state][()]
                    for name, s, n, po in zip(names, m["start"][()], m["numel"][()], m["param_offset"][()]):
                        shape = local_meta[name][0]
                        e = local.setdefault((name, state), np.full(int(np.prod(shape)), np.nan, np.float32))
                        e[po:po + n] = data[s:s + n]
        for (name, state), flat in local.items():
            shape, sd, off = local_meta[name]
            place(out[name], state, flat.reshape(shape), sd, off)
    if not strip_vocab:
        return out
    with h5py.File(models[0], "r") as f:  # vocabulary padding depends on the TP size: compare the real rows
        vocab, padded = int(f.attrs["vocab_size"]), int(f.attrs["padded_vocab_size"])
    for name, e in out.items():
        if ("word_embeddings.weight" in name or "output_layer.weight" in name) and e["shape"][0] == padded:
            for k in list(e):
                if k != "shape":
                    e[k] = e[k].reshape(e["shape"])[:vocab].copy()
    return out


def key_bias_out(name, arr, head_dim):
    """The Q and V parts of a fused QKV bias laid out [heads, 3, head_dim] (Megatron's layout)."""
    if head_dim is None or not name.endswith("query_key_value.bias"):
        return arr
    return arr.reshape(-1, 3, head_dim)[:, [0, 2], :].ravel()


def full(a, b, tol=None, head_dim=None):
    x, y = full_state(a, True), full_state(b, True)
    # the last pipeline stage's copy of the tied embeddings: where only one side has it, it must equal the
    # other side's embedding (weights and optimizer states)
    copy, emb = "word_embeddings.weight", "language_model.embedding.word_embeddings.weight"
    for u, v in ((x, y), (y, x)):
        if copy in u and copy not in v and emb in v:
            v[copy] = v[emb]
    if x.keys() != y.keys():
        fail("tensor names differ: %s" % sorted(set(x) ^ set(y)))
    n, worst = 0, 0.0
    for name in x:
        for k in x[name]:
            if k == "shape":
                continue
            u, v = x[name][k], y[name].get(k)
            u = u.ravel() if v is not None and u.size == v.size else u
            v = v.ravel() if v is not None and u.size == v.size else v
            if v is None or u.shape != v.shape or np.isnan(u).any() or np.isnan(v).any():
                fail("%s %s differs or is not fully covered" % (name, k))
            if tol is None and u.tobytes() != v.tobytes():
                fail("%s %s differs" % (name, k))
            if tol is not None:
                u, v = key_bias_out(name, u, head_dim), key_bias_out(name, v, head_dim)
                d, m = float(np.abs(u.astype(np.float64) - v).max()), float(np.abs(u).max())
                worst = max(worst, d / m) if m > 0 else worst
                if d > tol * m:
                    fail("%s %s: largest difference %g is more than %g x the largest magnitude %g" % (name, k, d, tol, m))
            n += 1
    if tol is None:
        print("equal: %d tensors, %d arrays (weights and optimizer states) reassembled bitwise" % (len(x), n))
    else:
        print("close: %d tensors, %d arrays (weights and optimizer states) within %g relative (worst %.2g)"
              % (len(x), n, tol, worst))


def check(d):
    s = full_state(d)
    for name, e in s.items():
        for k, v in e.items():
            if k != "shape" and np.isnan(v).any():
                fail("%s %s: not every element covered by the slice mappings" % (name, k))
    print("valid: %d tensors" % len(s))


if __name__ == "__main__":
    if sys.argv[1] == "close":
        full(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
    else:
        {"same": same, "full": full, "check": check}[sys.argv[1]](*sys.argv[2:])
