#!/usr/bin/env bash
# aio_bench and nvme_tune: small runs (validated data, DeepSpeed's output lines, the "aio" block chosen as the
# best read + write of the printed table, checked by an independent parse) and argument errors that name the
# flag and the value. Usage: test_aio_tools.sh <aio_bench> <nvme_tune>
set -u
BENCH=$1
TUNE=$2
DIR=$(mktemp -d "${TMPDIR:-/tmp}/zt_aio_tools_XXXXXX")
trap 'rm -rf "$DIR"' EXIT
fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }

out=$("$BENCH" --folder "$DIR" --io_size 8M --block_size 256K --queue_depth 4 --io_parallel 2 --loops 2 --validate 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "does not support O_DIRECT" <<<"$out"; then
  echo "SKIP: $DIR does not support O_DIRECT ($out); set TMPDIR to a directory on a disk file system"
  exit 77
fi
if [ $rc -eq 0 ] && grep -q "^E2E Write Speed: [0-9.]* GB/sec" <<<"$out" && grep -q "validate: written data matches" <<<"$out"; then
  pass "aio_bench write 8M, validated"
else fail "aio_bench write: rc $rc: $out"; fi

out=$("$BENCH" --folder "$DIR" "$DIR" --io_size 8M --read --sequential_requests --single_submit --loops 1 --validate 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "^E2E Read Speed: [0-9.]* GB/sec" <<<"$out" && grep -q "validate: read data matches" <<<"$out" \
   && grep -q "overlap_events false" <<<"$out"; then
  pass "aio_bench read over two folders, sequential engine, single submit, validated"
else fail "aio_bench read: rc $rc: $out"; fi
[ -z "$(ls -A "$DIR")" ] && pass "aio_bench removes its files" || fail "files left: $(ls "$DIR")"

expect_err() {  # name, needle, command...
  local name=$1 needle=$2
  shift 2
  local o
  o=$("$@" 2>&1)
  local r=$?
  if [ $r -eq 1 ] && grep -qF -- "$needle" <<<"$o"; then pass "$name"; echo "  $o"; else fail "$name: rc $r: $o"; fi
}
expect_err "aio_bench --queue_depth 0" "argument --queue_depth: 0 is out of range" "$BENCH" --folder "$DIR" --queue_depth 0
expect_err "aio_bench --block_size 1Q" "argument --block_size: invalid size '1Q'" "$BENCH" --folder "$DIR" --block_size 1Q
expect_err "aio_bench --block_size 1000" "aio block_size 1000 must be a positive multiple of 512" "$BENCH" --folder "$DIR" --block_size 1000
expect_err "aio_bench --io_size 1000" "--io_size 1000 must be a positive multiple of 4096" "$BENCH" --folder "$DIR" --io_size 1000
expect_err "aio_bench --io_parallel x" "argument --io_parallel: invalid int value: 'x'" "$BENCH" --folder "$DIR" --io_parallel x
expect_err "aio_bench missing --folder" "the following arguments are required: --folder" "$BENCH" --read
expect_err "aio_bench unknown flag" "unrecognized argument: --qd" "$BENCH" --folder "$DIR" --qd 3
expect_err "aio_bench --gpu refused" "argument --gpu is not supported" "$BENCH" --folder "$DIR" --gpu
expect_err "aio_bench unwritable folder" "cannot open $DIR/missing/_zt_aio_bench_" "$BENCH" --folder "$DIR/missing" --io_size 1M

cat > "$DIR/sweep.json" <<'EOF'
{"block_size": ["128K", 262144], "queue_depth": [2, 8], "sequential_requests": [true, false],
 "single_submit": [false], "io_parallel": [1, 2]}
EOF
out=$("$TUNE" --nvme_dir "$DIR" --io_size 4M --sweep_config "$DIR/sweep.json" --log_dir "$DIR/logs" 2>&1)
rc=$?
echo "$out"
if [ $rc -eq 0 ] && [ "$(grep -c 'intra_op_parallelism .*GB/sec' <<<"$out")" = 16 ]; then
  pass "nvme_tune: 16 configurations measured"
else fail "nvme_tune sweep: rc $rc"; fi
[ "$(wc -l < "$DIR/logs/nvme_tune.txt")" = 17 ] && pass "nvme_tune: --log_dir table" || fail "log table"
PY=/usr/bin/python3
if [ -x "$PY" ]; then
  if "$PY" - "$out" <<'EOF'
import json, re, sys
out = sys.argv[1]
rows = re.findall(r"block_size +(\d+) +queue_depth +(\d+) +single_submit (\w+) +overlap_events (\w+) +"
                  r"intra_op_parallelism +(\d+): +read +([\d.]+) +write +([\d.]+) GB/sec", out)
assert len(rows) == 16, len(rows)
# the sweep's product, each exactly once
want = {(b, q, s, o, p) for b in ("131072", "262144") for q in ("2", "8") for s in ("false",)
        for o in ("false", "true") for p in ("1", "2")}
assert {r[:5] for r in rows} == want, "sweep product differs"
best = max(rows, key=lambda r: float(r[5]) + float(r[6]))  # perf_generate_param: best read + write
# the rows within the printed rounding of the best sum: the tool compares the unrounded rates, so any of them may win
ties = [r for r in rows if abs(float(r[5]) + float(r[6]) - (float(best[5]) + float(best[6]))) < 0.011]
m = re.search(r"Best performance \(GB/sec\): read = +([\d.]+), write = +([\d.]+)", out)
assert m and any(abs(float(m.group(1)) - float(r[5])) < 0.006 and abs(float(m.group(2)) - float(r[6])) < 0.006
                 for r in ties), m
block = json.loads(out[out.index("{"):])
aio = block["aio"]
assert any((str(aio["block_size"]), str(aio["queue_depth"]), str(aio["single_submit"]).lower(),
            str(aio["overlap_events"]).lower(), str(aio["intra_op_parallelism"])) == r[:5] for r in ties), aio
assert set(aio) == {"single_submit", "overlap_events", "intra_op_parallelism", "queue_depth", "block_size"}
assert isinstance(aio["single_submit"], bool) and isinstance(aio["overlap_events"], bool)
EOF
  then pass "nvme_tune: the aio block is the best read + write row, valid JSON with booleans"
  else fail "nvme_tune: aio block check"; fi
else
  echo "note: $PY missing, the JSON check of nvme_tune's block is skipped"
fi

echo '{"block_sz": ["1M"]}' > "$DIR/bad.json"
expect_err "nvme_tune unknown sweep key" "--sweep_config $DIR/bad.json: unknown key \"block_sz\"" "$TUNE" --nvme_dir "$DIR" --sweep_config "$DIR/bad.json"
echo '{"queue_depth": [0]}' > "$DIR/bad2.json"
expect_err "nvme_tune queue_depth 0 in sweep" "queue_depth[0] must be a positive integer" "$TUNE" --nvme_dir "$DIR" --sweep_config "$DIR/bad2.json"
expect_err "nvme_tune missing dir" "--nvme_dir $DIR/nope: not a writable directory" "$TUNE" --nvme_dir "$DIR/nope"
expect_err "nvme_tune --gds refused" "argument --gds is not supported" "$TUNE" --nvme_dir "$DIR" --gds
expect_err "nvme_tune --io_size misaligned" "--io_size 4096 must be a multiple of 4096 x io_parallel 2 x 1 folder(s) = 8192 bytes" "$TUNE" --nvme_dir "$DIR" --io_size 4K
expect_err "nvme_tune --no_read --no_write" "leave nothing to measure" "$TUNE" --nvme_dir "$DIR" --no_read --no_write

echo "$fails failed"
[ $fails -eq 0 ]
