#!/usr/bin/env python3
"""Compares zt_fp32_to_fp16 with NumPy's float32 -> float16 cast (an independent round-to-nearest-even
implementation) on a few million floats dumped by `test_dtype --dump`.

Usage: test_dtype_oracle.py TEST_DTYPE_BINARY [N]. Exits 77 (ctest SKIP) when NumPy is missing."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP numpy not available")
    sys.exit(77)


def main():
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 4_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fp16.bin")
        subprocess.run([binary, "--dump", path, str(n)], check=True)
        raw = np.fromfile(path, dtype=np.uint8)
    if raw.size != 6 * n:
        print(f"FAIL fp16_numpy_oracle: dump has {raw.size} bytes, want {6 * n}")
        print("0 passed, 1 failed")
        return 1
    bits = raw[: 4 * n].view(np.uint32)
    got = raw[4 * n:].view(np.uint16)
    x = bits.view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    x_nan = np.isnan(x)
    got_nan = ((got & 0x7C00) == 0x7C00) & ((got & 0x3FF) != 0)
    bad = np.where(x_nan, ~got_nan, got != want)
    nbad = int(bad.sum())
    if nbad:
        i = int(np.argmax(bad))
        print(f"FAIL fp16_numpy_oracle: {nbad} of {n} differ; first: in {x[i]!r} (0x{bits[i]:08x}) "
              f"got 0x{got[i]:04x} numpy 0x{want[i]:04x}")
        print("0 passed, 1 failed")
        return 1
    # Guard against a vacuous comparison: the sample must cover normals, subnormals,
    # overflow and NaN.
    h = got[~x_nan]
    cover = {
        "subnormal": int((((h & 0x7C00) == 0) & ((h & 0x3FF) != 0)).sum()),
        "normal": int((((h & 0x7C00) != 0) & ((h & 0x7C00) != 0x7C00)).sum()),
        "inf": int(((h & 0x7FFF) == 0x7C00).sum()),
        "nan": int(x_nan.sum()),
    }
    if min(cover.values()) == 0:
        print(f"FAIL fp16_numpy_oracle_coverage: {cover}")
        print("0 passed, 1 failed")
        return 1
    print(f"PASS fp16_numpy_oracle ({n} floats, {cover})")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
