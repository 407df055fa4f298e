"""Oracle for the comms_logger tests: runs test_commslog and checks its rank-0 output against DeepSpeed's
formats (deepspeed/utils/comms_logging.py: convert_size, calc_bw_log, the verbose append line, log_all's
table, utils/timer.py trim_mean), recomputed here independently in Python.
usage: check_commslog.py BINARY unit | BINARY mpi NP   (exit 77 = SKIP when mpirun is missing)"""
import math
import re
import shutil
import subprocess
import sys


def convert_size(b):
    if b == 0:
        return "0B"
    names = ("B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB")
    i = int(math.floor(math.log(b, 1024)))
    return "%s %s" % (round(b / math.pow(1024, i), 2), names[i])


def calc_bw(op, size, t, n):
    if op in ("all_gather", "reduce_scatter"):
        size *= n
        tput, bus = size / t, size / t * ((n - 1) / n)
    elif op == "all_reduce":
        tput, bus = size * 2 / t, size / t * (2 * (n - 1) / n)
    elif op == "all_to_all_single":
        tput, bus = size / t, size / t * ((n - 1) / n)
    else:
        tput = bus = size / t
    return tput * 8 / 1e6, bus * 8 / 1e6


def trim_mean(v, p):
    v = sorted(v)
    k = int(round(len(v) * p))
    v = v[k:len(v) - k]
    return sum(v) / len(v)


HEADER = (f"{'Comm. Op': <20}{'Message Size': <20}{'Count': <20}{'Total Latency(ms)': <20}{'Avg Latency(ms)': <20}"
          f"{'tput_avg (Gbps)': <20}{'busbw_avg (Gbps)': <20}")
VERBOSE = re.compile(r"^\[Rank 0\] comm op: (\w+) \| time \(ms\): (\d+\.\d\d) \| msg size: (.+?) \| "
                     r"algbw \(Gbps\): (\d+\.\d\d) \| busbw \(Gbps\): (\d+\.\d\d)$")
fails = []


def check(cond, msg):
    if not cond:
        fails.append(msg)


def expected_table(records, n):
    """records: list of (op, size, ms) in call order -> DeepSpeed's table lines."""
    d = {}
    for op, size, ms in records:
        d.setdefault(op, {}).setdefault(size, []).append(ms)
    out = [HEADER]
    for op in d:
        out.append(op)
        for size, lats in sorted(d[op].items()):
            bws = [calc_bw(op, size, t, n) for t in lats]
            out.append(f"{' ': <20}{convert_size(size): <20}{len(lats): <20}{sum(lats): <20.2f}"
                       f"{trim_mean(lats, 0.1): <20.2f}{trim_mean([b[0] for b in bws], 0.1): <20.2f}"
                       f"{trim_mean([b[1] for b in bws], 0.1): <20.2f}")
    return out


def run_unit(binary):
    recs = [("all_reduce", 4096, 1.0), ("broadcast", 1536, 0.5), ("all_reduce", 4096, 2.0), ("all_reduce", 1024, 0.25),
            ("all_gather", 1234567, 3.5), ("barrier", 0, 0.125), ("all_reduce", 4096, 3.0),
            ("reduce_scatter", 1048576, 1.75), ("send", 400, 0.01), ("recv", 3 << 30, 700.0),
            ("all_reduce", 4096, 40.0), ("all_to_all_single", 65536, 0.5), ("all_to_all_single", 65536, 1.5)]
    out = subprocess.run([binary, "unit"], capture_output=True, text=True)
    check(out.returncode == 0, f"test_commslog unit exited {out.returncode}: {out.stderr}")
    lines = out.stdout.splitlines()
    want = []
    for op, size, ms in recs:
        a, b = calc_bw(op, size, ms, 4)
        want.append(f"[Rank 0] comm op: {op} | time (ms): {ms:.2f} | msg size: {convert_size(size)} | "
                    f"algbw (Gbps): {a:.2f} | busbw (Gbps): {b:.2f}")
    want += expected_table(recs, 4)
    check(len(lines) == len(want), f"{len(lines)} output lines, expected {len(want)}")
    for i, (g, w) in enumerate(zip(lines, want)):
        check(g == w, f"line {i + 1}:\n  got  {g!r}\n  want {w!r}")
    # convert_size edge cases, spelled out (Python's str(round(x, 2)))
    for b, s in [(0, "0B"), (1, "1.0 B"), (1023, "1023.0 B"), (1024, "1.0 KB"), (1536, "1.5 KB"),
                 (1234567, "1.18 MB"), (1048575, "1024.0 KB"), (3 << 30, "3.0 GB")]:
        check(convert_size(b) == s, f"oracle convert_size({b}) = {convert_size(b)}, expected {s}")
    check("1.18 MB" in out.stdout and "3.0 GB" in out.stdout and "0B" in out.stdout, "sizes 1.18 MB/3.0 GB/0B absent")


def run_mpi(binary, np):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("SKIP: mpirun not found")
        sys.exit(77)
    base = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(np), binary, "mpi"]
    sizes = {"all_reduce": [4096, 2097152], "all_gather": [1024], "reduce_scatter": [1024 * np],
             "all_to_all_single": [1024 * np], "broadcast": [1536],
             "send": [400], "recv": [400], "barrier": [0]}
    counts = {("all_reduce", 4096): 3, ("all_reduce", 2097152): 2, ("all_gather", 1024): 4,
              ("reduce_scatter", 1024 * np): 2, ("all_to_all_single", 1024 * np): 3, ("broadcast", 1536): 5, ("send", 400): 2, ("recv", 400): 2,
              ("barrier", 0): 3}
    for mode in ("all", "filter", "off"):
        out = subprocess.run(base + [mode], capture_output=True, text=True, timeout=120)
        check(out.returncode == 0, f"np {np} {mode}: exit {out.returncode}: {out.stderr[-2000:]}")
        lines = [l for l in out.stdout.splitlines() if l.strip() != ""]
        verbose = [VERBOSE.match(l) for l in lines if l.startswith("[Rank 0]")]
        check(all(verbose), f"np {np} {mode}: a verbose line is not in DeepSpeed's format: {lines}")
        verbose = [m for m in verbose if m]
        table = [l for l in lines if not l.startswith("[Rank 0]")]
        check(table[:1] == [HEADER], f"np {np} {mode}: table header {table[:1]}")
        ops = [op for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all_single", "broadcast", "send",
                             "recv", "barrier")
               if mode == "all" or (mode == "filter" and op == "all_reduce")]
        # verbose: one line per op in call order; bandwidths recomputed from the printed size and time
        want_seq = []
        for op in ops:
            for size in sizes[op]:
                want_seq += [(op, convert_size(size), size)] * counts[(op, size)]
        if mode == "all":  # calls interleave send/recv on rank 0
            want_seq = [s for s in want_seq if s[0] not in ("send", "recv", "barrier")]
            want_seq += [("send", "400.0 B", 400), ("recv", "400.0 B", 400)] * 2 + [("barrier", "0B", 0)] * 3
        got_seq = [(m.group(1), m.group(3)) for m in verbose]
        check(got_seq == [(o, s) for o, s, _ in want_seq], f"np {np} {mode}: verbose ops {got_seq}")
        for m, (op, _, size) in zip(verbose, want_seq):
            t = float(m.group(2))
            if t < 0.02:
                continue  # the printed time is too coarse to bound the bandwidth
            for col, idx in ((4, 0), (5, 1)):
                lo, hi = calc_bw(op, size, t + 0.005, np)[idx], calc_bw(op, size, t - 0.005, np)[idx]
                v = float(m.group(col))
                check(lo - 0.006 <= v <= hi + 0.006, f"np {np} {mode}: {m.group(0)}: column {col} {v} outside "
                      f"[{lo:.4f}, {hi:.4f}] from calc_bw_log")
        # summary: op order, sizes, counts, positive latencies, total = sum of the verbose times (rounded)
        want_rows = []
        for op in ops:
            want_rows.append(op)
            for size in sizes[op]:
                want_rows.append((convert_size(size), counts[(op, size)], op, size))
        check(len(table) - 1 == len(want_rows), f"np {np} {mode}: table has {len(table) - 1} rows, expected "
              f"{len(want_rows)}: {table}")
        for row, w in zip(table[1:], want_rows):
            if isinstance(w, str):
                check(row == w, f"np {np} {mode}: op row {row!r}, expected {w!r}")
                continue
            prefix = f"{' ': <20}{w[0]: <20}{w[1]: <20}"
            check(row.startswith(prefix), f"np {np} {mode}: row {row!r} does not start with {prefix!r}")
            nums = [float(x) for x in row[60:].split()]
            check(len(nums) == 4 and all(len(row[60 + 20 * i:80 + 20 * i]) == 20 for i in range(4)),
                  f"np {np} {mode}: row {row!r}: expected 4 columns of 20")
            times = [float(m.group(2)) for m in verbose if (m.group(1), m.group(3)) == (w[2], w[0])]
            check(abs(nums[0] - sum(times)) <= 0.005 * (len(times) + 1) + 1e-9,
                  f"np {np} {mode}: {w[2]} {w[0]} total {nums[0]} vs verbose times {times}")
        print(f"np {np} {mode}: {len(verbose)} verbose lines, {len(table) - 1} table rows")


if __name__ == "__main__":
    if sys.argv[2] == "unit":
        run_unit(sys.argv[1])
    else:
        run_mpi(sys.argv[1], int(sys.argv[3]))
    if fails:
        print("FAIL:\n" + "\n".join(fails))
        sys.exit(1)
    print("PASS")
