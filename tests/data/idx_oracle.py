"""An independent NumPy reader and writer of Megatron's MMapIndexedDataset (.bin/.idx), written from
the format description (megatron-deepspeed.md section 4.1), not from zerotron's C code:

.idx: b"MMIDIDX\\x00\\x00", <Q version 1, <B dtype code, <Q N items, <Q D doc_idx entries,
      <i4 sizes[N], <i8 pointers[N] (byte offsets: exclusive prefix sum of sizes * itemsize),
      <i8 doc_idx[D]. .bin: the items' tokens back to back in the dtype.

A dataset in Python is a list of documents; a document is a list of items; an item is a list of ints.
Shared by test_indexed_format.py and test_preprocess.py."""
import struct
import sys

try:
    import numpy as np
except ImportError:  # the tests print SKIP and exit 77
    np = None

MAGIC = b"MMIDIDX\x00\x00"
CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float64": 6, "float32": 7, "uint16": 8}
NP_DTYPES = {1: "<u1", 2: "<i1", 3: "<i2", 4: "<i4", 5: "<i8", 6: "<f8", 7: "<f4", 8: "<u2"}


def require_numpy():
    if np is None:
        print("SKIP: NumPy is not available to %s (install python3-numpy)" % sys.executable)
        sys.exit(77)


def write(prefix, dtype_name, docs):
    """Writes docs as prefix.bin/.idx with dtype dtype_name (e.g. "uint16")."""
    code = CODES[dtype_name]
    dt = np.dtype(NP_DTYPES[code])
    sizes, doc_idx = [], [0]
    with open(prefix + ".bin", "wb") as f:
        for doc in docs:
            for item in doc:
                arr = np.array(item, dtype=np.int64)
                assert arr.size == 0 or (arr.min() >= np.iinfo(dt).min and arr.max() <= np.iinfo(dt).max)
                f.write(arr.astype(dt).tobytes())
                sizes.append(len(item))
            doc_idx.append(len(sizes))
    sizes_arr = np.array(sizes, dtype="<i4")
    byte_sizes = sizes_arr.astype(np.int64) * dt.itemsize
    pointers = np.zeros(len(sizes), dtype="<i8")
    if len(sizes) > 1:
        pointers[1:] = np.cumsum(byte_sizes)[:-1]
    with open(prefix + ".idx", "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", code))
        f.write(struct.pack("<Q", len(sizes)))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(sizes_arr.tobytes())
        f.write(pointers.tobytes())
        f.write(np.array(doc_idx, dtype="<i8").tobytes())


def read(prefix):
    """Returns (dtype_name, sizes, pointers, doc_idx, docs) after checking the format's invariants."""
    with open(prefix + ".idx", "rb") as f:
        idx = f.read()
    assert idx[:9] == MAGIC, "bad magic"
    (version,) = struct.unpack_from("<Q", idx, 9)
    assert version == 1, "version %d" % version
    code = idx[17]
    n, d = struct.unpack_from("<QQ", idx, 18)
    assert len(idx) == 34 + 12 * n + 8 * d, "idx length %d, expected %d" % (len(idx), 34 + 12 * n + 8 * d)
    sizes = np.frombuffer(idx, dtype="<i4", count=n, offset=34)
    pointers = np.frombuffer(idx, dtype="<i8", count=n, offset=34 + 4 * n)
    doc_idx = np.frombuffer(idx, dtype="<i8", count=d, offset=34 + 12 * n)
    dt = np.dtype(NP_DTYPES[code])
    expect_ptr = np.zeros(n, dtype=np.int64)
    if n > 1:
        expect_ptr[1:] = np.cumsum(sizes.astype(np.int64) * dt.itemsize)[:-1]
    assert np.array_equal(pointers, expect_ptr), "pointers are not the prefix sums of sizes"
    assert doc_idx[0] == 0 and doc_idx[-1] == n and np.all(np.diff(doc_idx) >= 0), "bad doc_idx"
    data = np.fromfile(prefix + ".bin", dtype=dt)
    assert data.size == int(sizes.astype(np.int64).sum()), ".bin holds %d tokens, sizes sum to %d" % (
        data.size, int(sizes.sum()))
    items = []
    for i in range(n):
        start = int(pointers[i]) // dt.itemsize
        items.append([int(x) for x in data[start:start + int(sizes[i])]])
    docs = [items[int(doc_idx[k]):int(doc_idx[k + 1])] for k in range(d - 1)]
    name = [k for k, v in CODES.items() if v == code][0]
    return name, sizes, pointers, doc_idx, docs


def same_bytes(path_a, path_b):
    with open(path_a, "rb") as a, open(path_b, "rb") as b:
        return a.read() == b.read()


class Checker:
    """Counts checks; prints PASS/FAIL lines."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, cond, name, detail=""):
        if cond:
            self.passed += 1
            print("PASS %s" % name)
        else:
            self.failed += 1
            print("FAIL %s %s" % (name, detail))
        sys.stdout.flush()
        return cond

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)
