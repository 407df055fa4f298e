#!/usr/bin/env bash
# DeepNVMe throughput against fio (issue: ZeRO / aio). In the same run and on the same directory, fio
# (libaio, O_DIRECT, one job; --thread --gtod_reduce=1, its fastest settings on the dev VM: 15-25% above its
# defaults) and our aio_bench (one handle, intra_op_parallelism 1, overlap engine) read and
# write the same size with the same block size and queue depth, alternating (who goes first alternates too),
# ROUNDS times each. Every write run writes a fresh file, a hole of the final size made by truncate for fio
# as by ftruncate in our handle (blocks are allocated as the writes land; --fallocate=none); both read the same file (written once by fio before the read rounds). Prints each run, the medians and our ratio to fio (target >= 90%). GB/s = 2^30 bytes per second
# (DeepSpeed's GB). Usage:
#   bench/aio.sh [--dir DIR] [--size 1G] [--bs 1M] [--qd 32] [--rounds 7]
# The build is taken from $ZT_BUILD_DIR (default build/; built with scripts/build.sh when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${TMPDIR:-/tmp}"
SIZE=1G BS=1M QD=32 ROUNDS=7
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --bs) BS=$2; shift 2 ;;
    --qd) QD=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) echo "bench/aio.sh: unknown argument $1 (--dir, --size, --bs, --qd, --rounds)" >&2; exit 2 ;;
  esac
done
BUILD=${ZT_BUILD_DIR:-build}
[ -x "$BUILD/bin/aio_bench" ] || bash scripts/build.sh >/dev/null
command -v fio >/dev/null || { echo "bench/aio.sh: fio not found: apt-get install fio" >&2; exit 1; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
WORK=$(mktemp -d "$DIR/zt_aio_bench_XXXXXX")
trap 'rm -rf "$WORK"' EXIT

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); cores: $(nproc); kernel: $(uname -r)"
echo "directory: $WORK on $(df --output=source "$WORK" | tail -1) ($(df --output=fstype "$WORK" | tail -1), $(df -h --output=size "$WORK" | tail -1 | tr -d ' '))"
echo "$(fio --version); size $SIZE, block size $BS, queue depth $QD, $ROUNDS rounds"

fio_run() {  # op -> bytes/s
  local op=$1 f="$WORK/fio.dat"
  # a fresh sparse file of the final size, as aio_bench's writes see it (ftruncate before writing)
  if [ "$op" = write ]; then rm -f "$f"; truncate -s "$SIZE" "$f"; fi
  fio --name=zt_aio --filename="$f" --ioengine=libaio --direct=1 --bs="$BS" --iodepth="$QD" --rw="$op" \
    --size="$SIZE" --numjobs=1 --thread --gtod_reduce=1 --fallocate=none --output-format=json |
    "$PY" -c "import json,sys; j=json.load(sys.stdin)['jobs'][0]['$op']; print(j['bw_bytes'])"
}
ours_run() {  # op -> bytes/s; reads read fio's file
  local op=$1
  local -a where=(--folder "$WORK")
  [ "$op" = read ] && where=(--file "$WORK/fio.dat" --read)
  "$BUILD/bin/aio_bench" "${where[@]}" --io_size "$SIZE" --block_size "$BS" --queue_depth "$QD" --io_parallel 1 \
    --loops 1 --warmup 0 | sed -n 's/.*mean_bytes_per_s=\([0-9]*\).*/\1/p'
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for op in write read; do
  fio_all="" ours_all=""
  for r in $(seq 1 "$ROUNDS"); do
    if [ "$op" = read ] && [ "$r" = 1 ]; then fio_run write >/dev/null; fi  # the file fio reads
    if [ $((r % 2)) = 1 ]; then f=$(fio_run "$op"); o=$(ours_run "$op"); else o=$(ours_run "$op"); f=$(fio_run "$op"); fi
    fio_all="$fio_all $f" ours_all="$ours_all $o"
    awk -v op="$op" -v r="$r" -v f="$f" -v o="$o" \
      'BEGIN {printf "%-5s round %d: fio %6.3f GB/s  aio_bench %6.3f GB/s  (%.0f%%)\n", op, r, f/2^30, o/2^30, 100*o/f}'
  done
  fm=$(echo "$fio_all" | median)
  om=$(echo "$ours_all" | median)
  awk -v op="$op" -v f="$fm" -v o="$om" \
    'BEGIN {printf "%s: median fio %.3f GB/s, aio_bench %.3f GB/s: aio_bench / fio = %.1f%% (target >= 90%%)\n", op, f/2^30, o/2^30, 100*o/f}'
done
