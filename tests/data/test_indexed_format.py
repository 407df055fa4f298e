"""MMapIndexedDataset compatibility of zerotron's reader and writer against the independent NumPy
oracle in idx_oracle.py, plus the refusal of corrupt files and of ids that do not fit the dtype.

usage: test_indexed_format.py TEST_INDEXED_TOOL MERGE_DATASETS"""
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import idx_oracle as ox  # noqa: E402

ox.require_numpy()
TOOL, MERGE = sys.argv[1], sys.argv[2]
C = ox.Checker()
RANGES = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767), "uint16": (0, 65535),
          "int32": (-2**31, 2**31 - 1), "int64": (-2**31, 2**31 - 1)}


def run(*args):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def random_docs(rng, lo, hi, n_docs=40):
    docs = []
    for _ in range(n_docs):
        kind = rng.random()
        if kind < 0.05:
            docs.append([])  # a document without items
            continue
        doc = []
        for _ in range(rng.randint(1, 4)):
            n = 0 if rng.random() < 0.05 else rng.randint(1, 30)
            doc.append([rng.choice([lo, hi, rng.randint(lo, hi)]) for _ in range(n)])
        docs.append(doc)
    return docs


def spec_of(docs, path):
    with open(path, "w") as f:
        for doc in docs:
            f.write("#\n" if not doc else "|".join(" ".join(str(t) for t in item) for item in doc) + "\n")


def parse_dump(text):
    lines = text.splitlines()
    dtype = lines[0].split()[1]
    doc_idx = [int(x) for x in lines[3].split()[1:]]
    items = []
    for line in lines[4:]:
        head, _, toks = line.partition(":")
        items.append([int(x) for x in toks.split()])
        assert int(head.split()[2]) == len(items[-1])
    docs = [items[doc_idx[k]:doc_idx[k + 1]] for k in range(len(doc_idx) - 1)]
    return dtype, docs


def main():
    tmp = tempfile.mkdtemp(prefix="zt_idx_")
    rng = random.Random(1234)
    try:
        # 1. our writer vs the NumPy writer (bytes) and reader (arrays), every integer dtype
        for dtype, (lo, hi) in RANGES.items():
            docs = random_docs(rng, lo, hi)
            spec = os.path.join(tmp, "spec_%s.txt" % dtype)
            spec_of(docs, spec)
            ours, ref = os.path.join(tmp, "ours_" + dtype), os.path.join(tmp, "ref_" + dtype)
            rc, _, err = run(TOOL, "write", ours, dtype, spec)
            C.check(rc == 0, "writer %s runs" % dtype, err)
            ox.write(ref, dtype, docs)
            C.check(ox.same_bytes(ours + ".bin", ref + ".bin") and ox.same_bytes(ours + ".idx", ref + ".idx"),
                    "writer %s: .bin/.idx byte-identical to the NumPy writer" % dtype)
            name, _, _, _, back = ox.read(ours)
            C.check(name == dtype and back == docs, "writer %s: NumPy reader gets the same documents" % dtype)
            C.check(not os.path.exists(ours + ".bin.tmp") and not os.path.exists(ours + ".idx.tmp"),
                    "writer %s: no temporaries left" % dtype)
            # 2. NumPy-written files read by our reader
            rc, out, err = run(TOOL, "dump", ref)
            C.check(rc == 0, "reader %s runs" % dtype, err)
            if rc == 0:
                got_dtype, got = parse_dump(out)
                C.check(got_dtype == dtype and got == docs, "reader %s: same tokens as written by NumPy" % dtype)

        # an empty dataset (no documents) round-trips
        ox.write(os.path.join(tmp, "empty"), "uint16", [])
        rc, out, err = run(TOOL, "dump", os.path.join(tmp, "empty"))
        C.check(rc == 0 and "items 0" in out and "doc_idx 0\n" in out, "reader: empty dataset", err)

        # 3. ids that do not fit the dtype are refused, naming the id and the dtype; nothing left behind
        for dtype, bad in (("uint16", 70000), ("uint16", -1), ("uint8", 256), ("int8", -129), ("int16", 40000)):
            spec = os.path.join(tmp, "bad.txt")
            spec_of([[[1, 2, bad]]], spec)
            out_prefix = os.path.join(tmp, "bad_" + dtype)
            rc, _, err = run(TOOL, "write", out_prefix, dtype, spec)
            C.check(rc != 0 and ("token id %d" % bad) in err and dtype in err and out_prefix in err,
                    "writer refuses id %d for %s" % (bad, dtype), err)
            C.check(not any(os.path.exists(out_prefix + s) for s in (".bin", ".idx", ".bin.tmp", ".idx.tmp")),
                    "writer %s: a refused write leaves no file" % dtype)

        # a failing write does not touch an earlier complete pair of the same prefix
        keep = os.path.join(tmp, "keep")
        ox.write(keep, "uint16", [[[1, 2, 3]], [[4]]])
        before = (open(keep + ".bin", "rb").read(), open(keep + ".idx", "rb").read())
        spec_of([[[5, 6]], [[70000]]], os.path.join(tmp, "bad2.txt"))
        rc, _, err = run(TOOL, "write", keep, "uint16", os.path.join(tmp, "bad2.txt"))
        after = (open(keep + ".bin", "rb").read(), open(keep + ".idx", "rb").read())
        C.check(rc != 0 and before == after and not os.path.exists(keep + ".bin.tmp"),
                "failed write keeps the earlier pair unchanged", err)

        # int64 values beyond int32 are refused by get
        big = os.path.join(tmp, "big")
        ox.write(big, "int64", [[[1, 2**40, 3]]])
        rc, _, err = run(TOOL, "dump", big)
        C.check(rc != 0 and str(2**40) in err and "int32" in err, "get refuses an int64 token beyond int32", err)

        corruptions(tmp)
        merges(tmp, rng)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    C.finish()


def corruptions(tmp):
    base = os.path.join(tmp, "base")
    docs = [[[1, 2, 3], [4, 5]], [[6]], [[7, 8, 9, 10]]]
    ox.write(base, "uint16", docs)
    good_idx, good_bin = open(base + ".idx", "rb").read(), open(base + ".bin", "rb").read()
    n, d = 4, 4

    def case(name, idx=good_idx, binary=good_bin, expect=(), file_suffix=".idx", prefix_suffix=""):
        p = os.path.join(tmp, "c_" + name.replace(" ", "_"))
        if idx is not None:
            open(p + ".idx", "wb").write(idx)
        if binary is not None:
            open(p + ".bin", "wb").write(binary)
        rc, out, err = run(TOOL, "dump", p + prefix_suffix)
        ok = rc != 0 and err.startswith("error: indexed dataset: ") and (p + file_suffix) in err
        ok = ok and all(e in err for e in expect)
        C.check(ok, "refuses %s" % name, "rc=%d stderr=%r" % (rc, err))

    def patch(data, offset, fmt, value):
        b = bytearray(data)
        struct.pack_into(fmt, b, offset, value)
        return bytes(b)

    expected_len = 34 + 12 * n + 8 * d
    case("truncated idx", idx=good_idx[:-8],
         expect=("expected %d bytes for %d items and %d doc_idx entries, found %d (truncated?)"
                 % (expected_len, n, d, expected_len - 8),))
    case("idx with trailing bytes", idx=good_idx + b"\0" * 8, expect=("found %d" % (expected_len + 8),))
    case("header-only idx", idx=good_idx[:20], expect=("shorter than the 34-byte header",))
    case("wrong magic", idx=b"XXIDIDX\0\0" + good_idx[9:], expect=("bad magic",))
    case("legacy magic", idx=b"TNTIDX\0\0" + good_idx[8:], expect=("legacy IndexedDataset",))
    case("bad version", idx=patch(good_idx, 9, "<Q", 2), expect=("version 2, expected 1",))
    case("unknown dtype code", idx=patch(good_idx, 17, "<B", 9), expect=("unknown dtype code 9",))
    case("huge item count", idx=patch(good_idx, 18, "<Q", 2**62), expect=("more than a",))
    case("bin too short", binary=good_bin[:-2], file_suffix=".bin", expect=(".bin too short", "%d bytes" % 18))
    case("bin too long", binary=good_bin + b"\0\0", file_suffix=".bin", expect=(".bin too long",))
    case("inconsistent pointers", idx=patch(good_idx, 34 + 4 * n + 8, "<q", 8),
         expect=("pointer of item 1 is 8, expected 6",))
    case("negative size", idx=patch(good_idx, 34 + 4, "<i", -2), expect=("item 1 has negative size -2",))
    case("doc_idx not starting at 0", idx=patch(good_idx, 34 + 12 * n, "<q", 1), expect=("doc_idx[0] is 1",))
    case("decreasing doc_idx", idx=patch(good_idx, 34 + 12 * n + 16, "<q", 1),
         expect=("doc_idx[2] = 1 is less than doc_idx[1] = 2",))
    case("doc_idx not ending at N", idx=patch(good_idx, 34 + 12 * n + 24, "<q", 3),
         expect=("last doc_idx entry (doc_idx[3]) is 3, expected the item count 4",))
    case("missing bin", binary=None, file_suffix=".bin", expect=("cannot open", "No such file"))
    case("missing idx", idx=None, expect=("cannot open", "No such file"))
    p = os.path.join(tmp, "c_suffix")
    open(p + ".idx", "wb").write(good_idx)
    open(p + ".bin", "wb").write(good_bin)
    rc, _, err = run(TOOL, "dump", p + ".bin")
    C.check(rc != 0 and "without the .bin/.idx extension" in err and p in err, "refuses a prefix ending in .bin",
            err)


def merges(tmp, rng):
    parts = []
    for k in range(3):
        docs = random_docs(rng, 0, 65535, 10 + k)
        prefix = os.path.join(tmp, "m%d" % k)
        ox.write(prefix, "uint16", docs)
        parts.append((prefix, docs))
    out = os.path.join(tmp, "merged")
    rc, _, err = run(TOOL, "merge", out, *[p for p, _ in parts])
    ref = os.path.join(tmp, "merged_ref")
    ox.write(ref, "uint16", [doc for _, docs in parts for doc in docs])
    C.check(rc == 0 and ox.same_bytes(out + ".bin", ref + ".bin") and ox.same_bytes(out + ".idx", ref + ".idx"),
            "builder_merge equals the NumPy writer over the concatenated documents", err)
    # merge_datasets on a directory: sorted prefix order, dtype mismatch refused by name
    d = os.path.join(tmp, "mdir")
    os.makedirs(d)
    order = ["b", "a", "c"]
    for name, (prefix, _) in zip(order, parts):
        shutil.copy(prefix + ".bin", os.path.join(d, name + ".bin"))
        shutil.copy(prefix + ".idx", os.path.join(d, name + ".idx"))
    rc, out_text, err = run(MERGE, "--input", d, "--output-prefix", os.path.join(tmp, "mds"))
    by_name = dict(zip(order, parts))
    ref2 = os.path.join(tmp, "mds_ref")
    ox.write(ref2, "uint16", [doc for name in sorted(order) for doc in by_name[name][1]])
    C.check(rc == 0 and ox.same_bytes(os.path.join(tmp, "mds.bin"), ref2 + ".bin")
            and ox.same_bytes(os.path.join(tmp, "mds.idx"), ref2 + ".idx"),
            "merge_datasets merges in sorted name order", err)
    ox.write(os.path.join(d, "d_int32"), "int32", [[[1, 2]]])
    rc, _, err = run(MERGE, "--input", d, "--output-prefix", os.path.join(tmp, "mds2"))
    C.check(rc != 0 and "d_int32" in err and "int32" in err and "uint16" in err and os.path.join(d, "a") in err,
            "merge_datasets refuses a dtype mismatch naming both datasets", err)
    C.check(not os.path.exists(os.path.join(tmp, "mds2.bin")) and not os.path.exists(os.path.join(tmp, "mds2.bin.tmp")),
            "refused merge leaves no output")
    open(os.path.join(d, "README"), "w").write("x")
    os.remove(os.path.join(d, "d_int32.bin"))
    os.remove(os.path.join(d, "d_int32.idx"))
    rc, _, err = run(MERGE, "--input", d, "--output-prefix", os.path.join(tmp, "mds3"))
    C.check(rc != 0 and "README" in err, "merge_datasets refuses a file without a .bin/.idx partner", err)


if __name__ == "__main__":
    main()
