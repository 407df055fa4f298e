#!/usr/bin/env python3
"""Tests of zerotron's DeepSpeed monitors (runtime/profile/monitor.c, csv_monitor.c, tb_events.c).

Every check uses an oracle independent of the code under test:
  repr  - zt_format_pyfloat against Python's own repr() on edge cases and random bit patterns
  crc   - CRC32C against a bitwise CRC32C written here from the definition (checked on the standard
          vector crc32c(b"123456789") = 0xE3069283), and the TFRecord mask
  csv   - the CSV files DeepSpeed's csv_monitor.py would write for the same events: paths
          (<out>/<job>/<name with '/' and ' ' -> '_'>.csv), header `step,<last component>`, rows
          `step,repr(value)`, csv.writer's "\\r\\n" endings and quoting, append on reopen
  tb    - the TensorBoard event file read by a TFRecord + protobuf reader written here from the
          format spec: every record's two masked CRCs, the file_version record, each scalar's
          wall_time, tag, step and float32 value; the file name
  defaults, rank, errors - DeepSpeed's default directory, rank != 0 writes nothing, unwritable
          directory and disk-full errors name the path and the errno text.
usage: test_monitor.py <area> <monitor_driver>
"""
import math
import os
import random
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time

AREA, DRIVER = sys.argv[1], sys.argv[2]
failures = 0


def check(cond, msg):
    global failures
    if cond:
        print("PASS", msg)
    else:
        failures += 1
        print("FAIL", msg)


from tfevents import crc32c, masked, read_records, varint, decode, to_float32, parse_event  # noqa: F401


# ---- the driver ---------------------------------------------------------------------------------
def run_driver(tmp, events, csv_out, csv_job, tb_out, tb_job, extra=(), cwd=None, expect_rc=0):
    tsv = os.path.join(tmp, "events.tsv")
    with open(tsv, "w") as f:
        for e in events:
            f.write(e if isinstance(e, str) else "%s\t%s\t%d" % e)
            f.write("\n")
    p = subprocess.run([DRIVER, "events", tsv, csv_out, csv_job, tb_out, tb_job, *extra], cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != expect_rc:
        print(p.stdout, p.stderr)
    check(p.returncode == expect_rc, "driver exit status %d (expected %d)" % (p.returncode, expect_rc))
    return p


NAMES = ["Train/Samples/train_loss", "Train/Samples/lr", "Train/Samples/loss_scale",
         "Train/Samples/elapsed_time_ms_forward", "Train/Samples/elapsed_time_ms_backward",
         "Train/Samples/elapsed_time_ms_backward_inner", "Train/Samples/elapsed_time_ms_backward_allreduce",
         "Train/Samples/elapsed_time_ms_step", "Train/Eigenvalues/ModelBlockParam_0", "plain", "with space/and,comma \"q\""]
VALUES = [0.1, 1e-05, 2.0, 10.123456789, -3.5, 1e-300, 5e-324, 1.7976931348623157e308, -1e20, 0.0, -0.0,
          65536.0, 1e16, 1234567890123456.0, 0.0001, 3.4028235e38, 3.4028236e38, 1e39, 6e-46, 1.5e-45,
          math.inf, -math.inf, 2.5e-8, 7.0e22]


def make_events(seed):
    rng = random.Random(seed)
    evs = []
    step = 0
    for i in range(40):
        name = NAMES[i % len(NAMES)]
        value = VALUES[i % len(VALUES)] if i < 2 * len(VALUES) else rng.uniform(-10, 10) * 10 ** rng.randint(-12, 12)
        evs.append((name, repr(value), step))
        step += rng.choice([0, 8, 16, 1 << 40]) if i != 30 else -5
    return evs


def expected_csv(events):
    """What csv_monitor.py writes for these events in one process: {path-relative name: text}."""
    files, order = {}, []
    for name, value, step in (e for e in events if not isinstance(e, str)):
        if value.startswith("i:"):
            value = str(int(value[2:]))
        else:
            value = repr(float(value))
        fname = name.replace("/", "_").replace(" ", "_")
        if fname not in files:
            header = name.split("/")[-1]
            files[fname] = [["step", header]]
            order.append(fname)
        files[fname].append([str(step), value])
    import csv, io
    out = {}
    for fname, rows in files.items():
        buf = io.StringIO()
        w = csv.writer(buf)  # DeepSpeed: csv.writer on a file opened 'a+' without newline='' (Linux: no translation)
        for r in rows:
            w.writerow(r)
        out[fname + ".csv"] = buf.getvalue()
    return out


def area_repr():
    rng = random.Random(1234)
    vals = [0.1, 1e-05, 2.0, 1e16, 1e15, 9999999999999998.0, 1e-4, 0.001, 123456789012345678.0, 5e-324,
            2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308, 0.3, 2 / 3, 100.0, 1e22,
            1e23, 9.5367431640625e-07, -1.5, 0.0, -0.0, math.inf, -math.inf, math.nan, 4.35, 0.5e-4, 1.0e-5]
    vals += [2.0 ** e for e in range(-1074, 1024)]
    vals += [math.nextafter(2.0 ** e, 0) for e in range(-1070, 1024, 7)]
    vals += [float("%de%d" % (rng.randint(1, 99999), rng.randint(-330, 310))) for _ in range(20000)]
    while len(vals) < 120000:
        bits = rng.getrandbits(64)
        vals.append(struct.unpack("<d", struct.pack("<Q", bits))[0])
    stdin = "".join("%016x\n" % struct.unpack("<Q", struct.pack("<d", v))[0] for v in vals)
    p = subprocess.run([DRIVER, "repr"], input=stdin, capture_output=True, text=True, timeout=120)
    got = p.stdout.split("\n")
    bad = [(repr(v), g) for v, g in zip(vals, got) if repr(v) != g]
    check(p.returncode == 0 and len(got) >= len(vals), "repr driver ran on %d values" % len(vals))
    check(not bad, "zt_format_pyfloat == Python repr() on %d values (edge cases, powers of two, random); "
          "first mismatches: %s" % (len(vals), bad[:5]))


def area_crc():
    rng = random.Random(7)
    inputs = [b"123456789", b"", b"a", bytes(32), bytes([0xFF] * 32)]
    inputs += [bytes(rng.getrandbits(8) for _ in range(n)) for n in list(range(1, 40)) + [100, 1000, 4097]]
    stdin = "".join(x.hex() + "\n" for x in inputs)
    p = subprocess.run([DRIVER, "crc"], input=stdin, capture_output=True, text=True, timeout=60)
    lines = p.stdout.split("\n")
    ok = p.returncode == 0 and len(lines) > len(inputs) - 1
    for x, line in zip(inputs, lines):
        hw, sw, m = (int(t, 16) for t in line.split())
        ok = ok and hw == crc32c(x) and sw == crc32c(x) and m == masked(x)
    check(lines[0].split()[0] == "e3069283", "crc32c(\"123456789\") = e3069283 (got %s)" % lines[0])
    check(ok, "crc32c (dispatch and table), masked crc on %d inputs (lengths 0..4097, unaligned)" % len(inputs))


def area_csv(tmp):
    events = make_events(1) + [("Train/Samples/loss_scale", "i:65536", 96), "FLUSH",
                               ("Train/Samples/loss_scale", "32768.0", 128)]
    run_driver(tmp, events, os.path.join(tmp, "out"), "job", "-", "-")
    expect = expected_csv(events)
    d = os.path.join(tmp, "out", "job")
    have = sorted(os.listdir(d))
    check(have == sorted(expect), "CSV file names %s" % have)
    for name, text in expect.items():
        got = open(os.path.join(d, name), newline="").read() if os.path.exists(os.path.join(d, name)) else None
        check(got == text, "%s content matches csv.writer + repr (%d rows)" % (name, text.count("\n")))
        if got != text:
            print("expected:", repr(text[:300]), "\ngot:     ", repr((got or "")[:300]))
    # Reopen (a second run): DeepSpeed opens 'a+' and writes the header again in the new process.
    more = [("Train/Samples/lr", "0.25", 200)]
    run_driver(tmp, more, os.path.join(tmp, "out"), "job", "-", "-")
    lr = open(os.path.join(d, "Train_Samples_lr.csv"), newline="").read()
    check(lr == expect["Train_Samples_lr.csv"] + "step,lr\r\n200,0.25\r\n", "reopen appends a header and rows")
    # output_path with a trailing slash and an absolute job_name behave as os.path.join.
    run_driver(tmp, [("a/b", "1.0", 1)], os.path.join(tmp, "o2") + "/", "j", "-", "-")
    check(os.path.exists(os.path.join(tmp, "o2", "j", "a_b.csv")), "output_path with trailing '/'")
    absjob = os.path.join(tmp, "absjob")
    run_driver(tmp, [("a/b", "1.0", 1)], os.path.join(tmp, "ignored"), absjob, "-", "-")
    check(os.path.exists(os.path.join(absjob, "a_b.csv")), "absolute job_name replaces output_path (os.path.join)")


def area_tb(tmp):
    events = make_events(2) + [("Train/Samples/loss_scale", "i:65536", 96), "FLUSH", ("", "1.0", 3)]
    t0 = time.time()
    p = run_driver(tmp, events, "-", "-", os.path.join(tmp, "tb"), "tbjob")
    t1 = time.time()
    pid = re.search(r"pid (\d+)", p.stdout).group(1)
    d = os.path.join(tmp, "tb", "tbjob")
    files = os.listdir(d)
    check(len(files) == 1, "one event file in %s: %s" % (d, files))
    m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)", files[0])
    check(m is not None and m.group(2) == socket.gethostname() and m.group(3) == pid and m.group(4) == "0"
          and int(t0) - 1 <= int(m.group(1)) <= t1 + 1,
          "file name events.out.tfevents.<time>.<host>.<pid>.0: %s" % files[0])
    try:
        recs = read_records(os.path.join(d, files[0]))
        check(True, "all %d records' length and data CRCs verify" % len(recs))
    except ValueError as e:
        check(False, "TFRecord framing: %s" % e)
        return
    # The reader must catch damage: flip one bit in the length, in a payload and in a data CRC.
    raw = open(os.path.join(d, files[0]), "rb").read()
    first_len = struct.unpack("<Q", raw[:8])[0]
    for off, what in ((0, "length"), (12 + first_len + 16 + 20, "second record's data"),
                      (12 + first_len, "first data CRC")):
        bad = bytearray(raw)
        bad[off] ^= 0x04
        path = os.path.join(tmp, "corrupt")
        open(path, "wb").write(bytes(bad))
        try:
            read_records(path)
            check(False, "corrupted %s not detected" % what)
        except ValueError as e:
            check(True, "corrupted %s detected: %s" % (what, e))
    evs = [parse_event(r) for r in recs]
    check(evs[0].get("file_version") == "brain.Event:2" and "values" not in evs[0], "first record: file_version brain.Event:2")
    check(all(t0 - 1 <= e["wall_time"] <= t1 + 1 for e in evs), "every wall_time within the run")
    check(all(evs[i]["wall_time"] <= evs[i + 1]["wall_time"] for i in range(len(evs) - 1)), "wall_time non-decreasing")
    scal = [e for e in events if not isinstance(e, str)]
    check(len(evs) == 1 + len(scal), "%d scalar records (expected %d)" % (len(evs) - 1, len(scal)))
    ok, first_bad = True, None
    for (name, value, step), ev in zip(scal, evs[1:]):
        v = float(value[2:]) if value.startswith("i:") else float(value)
        want = to_float32(v)
        got = ev["values"][0] if ev.get("values") and len(ev["values"]) == 1 else None
        good = got is not None and got[0] == name and ev["step"] == step and \
            (got[1] == want or (math.isnan(want) and math.isnan(got[1]))) and \
            math.copysign(1, got[1]) == math.copysign(1, want)
        if not good and first_bad is None:
            first_bad = (name, value, step, ev)
        ok = ok and good
    check(ok, "every scalar's tag, step (incl. 0, 2^40 sums, negative) and float32 value; first bad: %s" % (first_bad,))
    try:  # a second reader, only if TensorBoard happens to be installed (it is not required)
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
        n = sum(1 for _ in EventFileLoader(os.path.join(d, files[0])).Load())
        check(n == len(evs), "tensorboard's own EventFileLoader reads %d events" % n)
    except ImportError:
        print("NOTE tensorboard not installed: second reader not run")


def area_defaults(tmp):
    cwd = os.path.join(tmp, "cwd")
    os.makedirs(cwd)
    run_driver(tmp, [("Train/Samples/lr", "0.5", 8)], "DEFAULT", "DEFAULT", "DEFAULT", "DEFAULT", cwd=cwd)
    d = os.path.join(cwd, "DeepSpeedJobName")
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    check(len(names) == 2 and names[0] == "Train_Samples_lr.csv" and names[1].startswith("events.out.tfevents."),
          "defaults: both backends write into ./DeepSpeedJobName (os.path.join('', job_name)): %s" % names)


def area_rank(tmp):
    p = run_driver(tmp, [("Train/Samples/lr", "0.5", 8)], os.path.join(tmp, "r"), "job", os.path.join(tmp, "r"),
                   "tb", extra=("1", "2"))
    check(not os.path.exists(os.path.join(tmp, "r")) and "enabled 0" in p.stdout, "rank 1 of 2 writes nothing")


def area_errors(tmp):
    blocker = os.path.join(tmp, "file")
    open(blocker, "w").write("x")
    for which, args in (("csv_monitor", (os.path.join(blocker, "sub"), "job", "-", "-")),
                        ("tensorboard", ("-", "-", os.path.join(blocker, "sub"), "job"))):
        p = run_driver(tmp, [("a", "1.0", 1)], *args, expect_rc=1)
        check(("error: %s:" % which) in p.stderr and blocker in p.stderr and "Not a directory" in p.stderr,
              "%s: output under a regular file dies naming the path and errno text: %s" % (which, p.stderr.strip()))
    if os.path.exists("/dev/full"):
        d = os.path.join(tmp, "full", "job")
        os.makedirs(d)
        os.symlink("/dev/full", os.path.join(d, "Train_Samples_lr.csv"))
        p = run_driver(tmp, [("Train/Samples/lr", "0.5", 8), "FLUSH"], os.path.join(tmp, "full"), "job", "-", "-",
                       expect_rc=1)
        check("error: csv_monitor:" in p.stderr and "Train_Samples_lr.csv" in p.stderr and
              "No space left on device" in p.stderr, "disk full on flush dies naming the file: %s" % p.stderr.strip())
    else:
        print("NOTE /dev/full missing: disk-full check not run")
    if os.geteuid() != 0:
        ro = os.path.join(tmp, "ro")
        os.makedirs(ro)
        os.chmod(ro, 0o500)
        p = run_driver(tmp, [("a", "1.0", 1)], "-", "-", ro, "job", expect_rc=1)
        check("Permission denied" in p.stderr and ro in p.stderr, "read-only directory: %s" % p.stderr.strip())
        os.chmod(ro, 0o700)


with tempfile.TemporaryDirectory(prefix="zt_monitor_") as tmp:
    if AREA == "repr":
        area_repr()
    elif AREA == "crc":
        area_crc()
    else:
        {"csv": area_csv, "tb": area_tb, "defaults": area_defaults, "rank": area_rank, "errors": area_errors}[AREA](tmp)
print("%s: %s" % (AREA, "FAILED (%d)" % failures if failures else "all passed"))
sys.exit(1 if failures else 0)
