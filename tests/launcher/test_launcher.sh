#!/usr/bin/env bash
# zt_deepspeed in dry-run mode (ZT_LAUNCHER_DRY_RUN=1: print the resolved resources and the mpirun command,
# exit 0): DeepSpeed's hostfile rules and error messages (deepspeed/launcher/runner.py), --include/--exclude,
# --num_nodes/--num_gpus, CUDA_VISIBLE_DEVICES, exported variables, .deepspeed_env / DS_ENV_FILE, refused
# options. Expected values are written by hand from DeepSpeed's semantics.
# Usage: test_launcher.sh ZT_DEEPSPEED
set -u
zt="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
mkdir home
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
# run: a clean environment (only what the case passes), dry run
run() { env -i PATH="$PATH" HOME="$tmp/home" ZT_LAUNCHER_DRY_RUN=1 "$@" 2>&1; }
ZT="$zt"
# expect_res NAME EXPECTED_RESOURCES ARGS...: success and the resources line
expect_res() {
  local name="$1" want="$2"; shift 2
  local out rc; out=$(run "$zt" "$@"); rc=$?
  if [ $rc -eq 0 ] && grep -qxF "zt_deepspeed: active resources = $want" <<<"$out"; then ok "$name"
  else bad "$name" "rc=$rc, want resources $want, got: $(grep -v '^zt_deepspeed: cmd' <<<"$out" | tail -3)"; fi
}
# expect_cmd NAME EXPECTED_CMD [VAR=VAL...] -- ARGS...
expect_cmd() {
  local name="$1" want="$2"; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local out rc; out=$(run "${envs[@]}" "$zt" "$@"); rc=$?
  if [ $rc -eq 0 ] && grep -qxF "zt_deepspeed: cmd = $want" <<<"$out"; then ok "$name"
  else bad "$name" "rc=$rc"; echo "  want: zt_deepspeed: cmd = $want"; echo "  got:  $(grep 'cmd =' <<<"$out" || tail -2 <<<"$out")"; fi
}
# expect_err NAME EXPECTED_MESSAGE ARGS...: exit status 1 and the message
expect_err() {
  local name="$1" want="$2"; shift 2
  local out rc; out=$(run "$zt" "$@"); rc=$?
  if [ $rc -eq 1 ] && grep -qF -- "$want" <<<"$out"; then ok "$name"
  else bad "$name" "rc=$rc, want '$want', got: $(tail -2 <<<"$out")"; fi
}
R="${root[*]}"; R="${R:+$R }"

# ---- hostfile parsing ----
printf '# a comment\nworker-0 slots=4\n\n   worker-1    slots=2   # trailing text is ignored\nworker-2\tslots=3\n' > hf
expect_res "hostfile: comments, blanks, tabs, trailing text" "{'worker-0': [0, 1, 2, 3], 'worker-1': [0, 1], 'worker-2': [0, 1, 2]}" -H hf --no_ssh_check --master_addr 10.1.1.1 prog
printf 'worker-0 slots=4\nworker-1 slots=2\nworker-0 slots=1\n' > dup
expect_err "hostfile: duplicate host" "error: --hostfile: Hostfile contains multiple entries for worker-0, unable to proceed with launching (dup line 3)" -H dup prog
printf 'worker-0 slots=4\nworker-1 slot=2\n' > badent
expect_err "hostfile: bad entry" "Hostfile contains a bad entry: worker-1 slot=2, unable to proceed with launching (badent line 2" -H badent prog
printf 'worker-0\n' > badent2
expect_err "hostfile: host without slots" "Hostfile contains a bad entry: worker-0, unable to proceed with launching" -H badent2 prog
printf 'worker-0 slots=x\n' > badent3
expect_err "hostfile: non-numeric slots" "Hostfile contains a bad entry: worker-0 slots=x," --hostfile badent3 prog
printf '# only a comment\n\n' > empty
expect_err "hostfile: empty" "error: --hostfile: Hostfile is empty or not formatted correctly, unable to proceed with launching." -H empty prog
: > empty2
expect_err "hostfile: zero-length file" "Hostfile is empty or not formatted correctly" --hostfile=empty2 prog
out=$(run "$zt" -H missing --num_gpus 3 prog)
if [ $? -eq 0 ] && grep -qF "warning: Unable to find hostfile, will proceed with training with local resources only." <<<"$out" \
   && grep -qxF "zt_deepspeed: active resources = {'localhost': [0, 1, 2]}" <<<"$out"; then ok "missing hostfile: warning, localhost"
else bad "missing hostfile" "$out"; fi

# ---- include / exclude ----
A=(-H hf --no_ssh_check --master_addr 10.1.1.1)
expect_res "include whole host + slots, hostfile order kept" "{'worker-0': [0, 1, 2, 3], 'worker-1': [1]}" "${A[@]}" -i 'worker-1:1@worker-0' prog
expect_res "include slots in the given order, duplicates dropped" "{'worker-2': [2, 0]}" "${A[@]}" --include 'worker-2:2,0,2' prog
expect_res "include: a later spec for the host replaces" "{'worker-0': [3]}" "${A[@]}" --include='worker-0:1@worker-0:3' prog
expect_res "exclude slots" "{'worker-0': [0, 3], 'worker-1': [0, 1], 'worker-2': [0, 1, 2]}" "${A[@]}" -e 'worker-0:1,2' prog
expect_res "-iHOST attached value" "{'worker-2': [1]}" -Hhf --no_ssh_check --master_addr 10.1.1.1 -iworker-2:1 prog
expect_res "exclude a whole host" "{'worker-0': [0, 1, 2, 3], 'worker-2': [0, 1, 2]}" "${A[@]}" -e worker-1 prog
expect_res "exclude all slots removes the host" "{'worker-0': [0, 1, 2, 3], 'worker-2': [0, 1, 2]}" "${A[@]}" --exclude 'worker-1:0,1' prog
expect_err "include and exclude" "error: --include/--exclude: include_str and exclude_str are mutually exclusive." "${A[@]}" -i worker-0 -e worker-1 prog
expect_err "include: unknown host" "error: --include: Hostname 'worker-9' not found in hostfile" "${A[@]}" -i 'worker-0@worker-9' prog
expect_err "exclude: unknown host" "error: --exclude: Hostname 'nope' not found in hostfile" "${A[@]}" -e 'nope:0' prog
expect_err "include: unknown slot" "error: --include: No slot '2' specified on host 'worker-1'" "${A[@]}" -i 'worker-1:0,2' prog
expect_err "exclude: unknown slot" "error: --exclude: No slot '3' specified on host 'worker-2'" "${A[@]}" -e 'worker-2:3' prog
expect_err "include: bad slot" "error: --include: invalid slot 'a' for host 'worker-0'" "${A[@]}" -i 'worker-0:a' prog
expect_err "include with num_gpus" "Cannot specify num_nodes/gpus with include/exclude" "${A[@]}" -i worker-0 --num_gpus 1 prog
expect_err "exclude with num_nodes" "Cannot specify num_nodes/gpus with include/exclude" "${A[@]}" -e worker-0 --num_nodes 1 prog
expect_err "exclude everything" "no slot is left to run on" "${A[@]}" -e 'worker-0@worker-1@worker-2' prog

# ---- num_nodes / num_gpus ----
expect_res "num_nodes 2 keeps the first two hosts" "{'worker-0': [0, 1, 2, 3], 'worker-1': [0, 1]}" "${A[@]}" --num_nodes 2 prog
expect_res "num_gpus 1 on every host" "{'worker-0': [0], 'worker-1': [0], 'worker-2': [0]}" "${A[@]}" --num_gpus 1 prog
expect_res "num_accelerators 3 + num_nodes 1" "{'worker-0': [0, 1, 2]}" "${A[@]}" --num_accelerators 3 --num_nodes 1 prog
expect_err "num_nodes 2 without a hostfile" "error: --num_nodes: Num nodes is >1 but no extra nodes available via hostfile" -H missing --num_nodes 2 prog
expect_err "num_gpus not an int" "error: --num_gpus: invalid int value: 'two'" --num_gpus two prog
out=$(run CUDA_VISIBLE_DEVICES=2,5 "$zt" -H missing prog)
if grep -qF "Detected CUDA_VISIBLE_DEVICES=2,5: setting --include=localhost:2,5" <<<"$out"; then ok "CUDA_VISIBLE_DEVICES becomes --include"
else bad "CUDA_VISIBLE_DEVICES" "$out"; fi

# ---- the mpirun command ----
expect_cmd "local: 2 ranks, master 127.0.0.1" "mpirun ${R}-n 2 --host localhost:2 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 prog --a 1" \
  -- -H missing --num_gpus 2 prog --a 1
expect_cmd "hostfile order, port, launcher_args, exported variables, quoting" \
  "mpirun ${R}--mca btl tcp,self -n 9 --host worker-0:4,worker-1:2,worker-2:3 -x MASTER_ADDR=10.1.1.1 -x MASTER_PORT=1234 -x NCCL_DEBUG=INFO -x OMP_NUM_THREADS=2 -x 'ZT_X=a b' -x UCX_TLS=tcp prog 'two words'" \
  NCCL_DEBUG=INFO OMP_NUM_THREADS=2 HIDDEN_VAR=1 ZT_X="a b" UCX_TLS=tcp -- "${A[@]}" --master_port 1234 --launcher_args "--mca btl 'tcp,self'" prog "two words"
expect_cmd "same slot subset everywhere: one CUDA_VISIBLE_DEVICES" \
  "mpirun ${R}-n 2 --host worker-0:1,worker-1:1 -x MASTER_ADDR=10.1.1.1 -x MASTER_PORT=29500 -x CUDA_VISIBLE_DEVICES=1 prog" \
  -- "${A[@]}" -i 'worker-1:1@worker-0:1' prog
expect_cmd "different slots per host: one app context per host" \
  "mpirun ${R}-n 2 --host worker-0:2 -x MASTER_ADDR=10.1.1.1 -x MASTER_PORT=29500 -x CUDA_VISIBLE_DEVICES=0,3 prog x : -n 3 --host worker-2:3 -x MASTER_ADDR=10.1.1.1 -x MASTER_PORT=29500 -x CUDA_VISIBLE_DEVICES=0,1,2 prog x" \
  -- "${A[@]}" -e 'worker-0:1,2@worker-1' prog x
expect_cmd "options after the program belong to it" \
  "mpirun ${R}-n 1 --host localhost:1 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 ./prog --num_gpus 5 -H x" \
  -- -H missing --no_local_rank --no_python --launcher OpenMPI ./prog --num_gpus 5 -H x
expect_cmd "dry-run master address stands for the first host" \
  "mpirun ${R}-n 2 --host worker-1:2 -x MASTER_ADDR=worker-1 -x MASTER_PORT=29500 prog" \
  -- -H hf --no_ssh_check -i worker-1 prog

# .deepspeed_env in ~ and ., the one in . wins; DS_ENV_FILE renames it
printf 'ZT_A=home\nZT_B = from home \n' > home/.deepspeed_env
printf '# comment\nZT_B=cwd=1\n\n' > .deepspeed_env
expect_cmd ".deepspeed_env in ~ then ." \
  "mpirun ${R}-n 1 --host localhost:1 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 -x ZT_A=home -x ZT_B=cwd=1 prog" -- -H missing prog
printf 'NCCL_IB_DISABLE=1\n' > my_env
expect_cmd "DS_ENV_FILE (DS_ENV_X is not a forwarded prefix)" \
  "mpirun ${R}-n 1 --host localhost:1 -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 -x NCCL_IB_DISABLE=1 prog" \
  DS_ENV_FILE=my_env DS_ENV_X=1 -- -H missing prog
rm -f home/.deepspeed_env
printf 'NOEQUALS\n' > .deepspeed_env
expect_err ".deepspeed_env: bad line" "./.deepspeed_env line 1: 'NOEQUALS' is not KEY=VAL" -H missing prog
rm -f .deepspeed_env

# ---- options ----
expect_err "--launcher pdsh refused" "error: --launcher: 'pdsh' is not supported by zt_deepspeed" --launcher pdsh prog
expect_err "--launcher unknown" "error: --launcher: Unknown launcher foo" --launcher=foo prog
for o in --module --elastic_training --autotuning=tune --node_rank --no_ssh --ssh_port --bind_core_list --enable_each_rank_log; do
  expect_err "$o refused" "error: ${o%%=*}: not supported by zt_deepspeed" "$o" prog
done
expect_err "unknown option" "error: --bogus: unrecognized argument" --bogus prog
expect_err "no program" "the following arguments are required: user_script" -H missing
expect_err "missing value" "error: --hostfile: expected one argument" --hostfile
expect_err "bad master port" "error: --master_port: 70000 is not a TCP port" --master_port 70000 prog
out=$(run "$zt" -H missing --save_pid prog)
grep -qE "zt_deepspeed: launcher pid: [0-9]+ \(in /tmp/[0-9]+\.deepspeed\)" <<<"$out" && ok "--save_pid" || bad "--save_pid" "$out"
out=$(run "$zt" -H missing --num_gpus 2 --bind_cores_to_rank prog)
if grep -qE "cmd = mpirun ${R}--bind-to core --map-by slot:PE=[0-9]+ -n 2 .* -x OMP_NUM_THREADS=[0-9]+ prog$" <<<"$out"; then ok "--bind_cores_to_rank"
else bad "--bind_cores_to_rank" "$out"; fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
