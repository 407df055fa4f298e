#!/usr/bin/env python3
"""zerotron checkpoint manifests for the tests: crc32c (Castagnoli, what zt_manifest.txt and the datasets record) and
remanifest, which rewrites a tag directory's zt_manifest.txt after a test changed files in it: each listed file's
crc32c and size recomputed, files no longer there dropped. Imported by fuzz_input_to_dir.py and
tests/moe/old_moe_layout.py; test_mixed.sh and test_crash.sh run it on a tag directory.
Usage: manifest.py TAG_DIR"""
import os
import sys

_TAB = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TAB.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TAB[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def remanifest(tag_dir):
    path = os.path.join(tag_dir, "zt_manifest.txt")
    lines = []
    for line in open(path):
        if line.startswith("#"):
            lines.append(line)
            continue
        name = line.split()[2]
        if not os.path.exists(os.path.join(tag_dir, name)):
            continue
        data = open(os.path.join(tag_dir, name), "rb").read()
        lines.append("%08x %d %s\n" % (crc32c(data), len(data), name))
    open(path, "w").write("".join(lines))


if __name__ == "__main__":
    remanifest(sys.argv[1])
