"""Unpacks an input of the checkpoint fuzzer (tests/fuzz/fuzz_checkpoint.c: sections separated by b"ZTFZSEC\\x01":
latest, mp_rank_00 model file, optimizer file, latest_checkpointed_iteration.txt, manifest) into a checkpoint
directory OUT (OUT/latest, OUT/t/...), with the manifest computed as the harness computes it when the input has
none. Used by test_damaged.sh to replay the fuzzer's findings through the real tools.
Usage: fuzz_input_to_dir.py INPUT OUT"""
import os
import sys

from manifest import crc32c

SEP = b"ZTFZSEC\x01"
NAMES = ["mp_rank_00_model_states.h5", "zero_pp_rank_0_mp_rank_00_optim_states.h5"]


def main():
    data = open(sys.argv[1], "rb").read()
    out = sys.argv[2]
    sec = data.split(SEP, 4)
    os.makedirs(os.path.join(out, "t"), exist_ok=True)
    open(os.path.join(out, "latest"), "wb").write(sec[0])
    if len(sec) > 3:
        open(os.path.join(out, "latest_checkpointed_iteration.txt"), "wb").write(sec[3])
    manifest = "# zerotron checkpoint manifest v1: crc32c bytes file\n"
    for i, name in enumerate(NAMES):
        if len(sec) <= 1 + i or (i == 1 and not sec[2]):
            continue
        open(os.path.join(out, "t", name), "wb").write(sec[1 + i])
        manifest += "%08x %d %s\n" % (crc32c(sec[1 + i]), len(sec[1 + i]), name)
    mpath = os.path.join(out, "t", "zt_manifest.txt")
    if len(sec) > 4:
        open(mpath, "wb").write(sec[4])
    else:
        open(mpath, "w").write(manifest)


if __name__ == "__main__":
    main()
