#!/usr/bin/env bash
# A podsim sweep through a real Slurm: installs slurmctld, slurmd and munge from Debian if they
# are missing, starts a one-node cluster on this machine under a private configuration, submits
# the job array `podsim sweep --emit slurm` writes, waits for it and merges the rows with
# `--collect`; then the same for `podsim plan --emit slurm`. Exit 77 (CTest: skipped) with the reason when Slurm cannot be installed or
# started here; any other failure is a test failure.
#   usage: run_slurm_sweep.sh PODSIM_BINARY
set -uo pipefail
podsim=$(realpath "$1")
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*"; exit 1; }

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo -n)
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null ||
   ! command -v munged >/dev/null; then
  echo "installing slurmctld slurmd slurm-client munge"
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
      slurmctld slurmd slurm-client munge >/dev/null 2>&1 ||
    { DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get update -qq >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurm-client munge >/dev/null 2>&1; } ||
    skip "cannot install Slurm from Debian packages here (no root, or no package mirror)"
fi
[ "$(id -u)" -eq 0 ] || skip "starting slurmd needs root; run the test suite as root to include it"

work=$(mktemp -d /tmp/podsim-slurm.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  sleep 1
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

# munge: its own key, socket and state in the work directory.
mkdir -p "$work/munge" && chmod 700 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
    --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" --seed-file="$work/munge/seed" ||
  skip "munged would not start: $(tail -n 3 "$work/munge/munged.log" 2>/dev/null)"
sleep 0.5
[ -f "$work/munge/munged.pid" ] && pids+=("$(cat "$work/munge/munged.pid")")

host=$(hostname -s)
port=$((20000 + RANDOM % 20000))
mkdir -p "$work/state" "$work/spool"
cat > "$work/slurm.conf" <<CONF
ClusterName=podsim
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=podsim Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"
slurmctld -f "$SLURM_CONF" -i || skip "slurmctld would not start: $(tail -n 3 "$work/slurmctld.log" 2>/dev/null)"
sleep 1
[ -f "$work/slurmctld.pid" ] && pids+=("$(cat "$work/slurmctld.pid")")
slurmd -f "$SLURM_CONF" || skip "slurmd would not start: $(tail -n 3 "$work/slurmd.log" 2>/dev/null)"
sleep 1
[ -f "$work/slurmd.pid" ] && pids+=("$(cat "$work/slurmd.pid")")
for _ in $(seq 30); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %t 2>/dev/null | grep -q idle ||
  skip "the Slurm node did not come up: $(sinfo 2>&1 | tail -n 2); $(tail -n 3 "$work/slurmd.log" 2>/dev/null)"
echo "Slurm is up: $(sinfo -h -o '%P %D %t %c CPUs')"

# The sweep: three points of a collectives scenario, one failing on purpose.
out="$work/sweep"
scenario="$source_dir/scenarios/v5e_8x4_allgather_y.yaml"
"$podsim" sweep "$scenario" --set topology.mesh.Y=2,4,0 -o "$out" --emit slurm || fail "podsim sweep --emit slurm"
grep -q -- "--array=0-2" "$out/sweep.sbatch" || fail "no job array in sweep.sbatch"
timeout 180 sbatch --wait "$out/sweep.sbatch"
status=$?
# Slurm that accepts jobs but cannot launch them here (cgroups, credentials) is this
# machine's limit, not podsim's: skip with its log. Tasks that ran must have done it right.
[ -d "$out/points" ] ||
  skip "Slurm ran none of the array's tasks (sbatch status $status): $(tail -n 3 "$work/slurmd.log" 2>/dev/null)"
[ "$status" -eq 0 ] || fail "the job array did not finish (status $status): $(cat "$out"/slurm-*.out 2>/dev/null)"
# A failed point fails the collected sweep (exit 1), naming the first failure (issue 42).
collected=$("$podsim" sweep "$scenario" --set topology.mesh.Y=2,4,0 -o "$out" --collect 2>&1)
[ $? -eq 1 ] || fail "podsim sweep --collect with a failed point did not exit 1: $collected"
echo "$collected" | grep -q "the first, point 2 (topology.mesh.Y=0)" || fail "no first failure named: $collected"
csv="$out/sweep.csv"
[ "$(grep -c ',ok,' "$csv")" -eq 2 ] || fail "expected 2 ok rows in $csv: $(cat "$csv")"
[ "$(grep -c '^2,0,error,' "$csv")" -eq 1 ] || fail "expected 1 error row in $csv: $(cat "$csv")"
ls "$out"/slurm-*_0.out "$out"/slurm-*_2.out >/dev/null 2>&1 || fail "no per-task Slurm logs"
echo "sweep: 3 array tasks through Slurm; sweep.csv has 2 ok rows and 1 recorded error"

# The planner's array: the planner tests' pod (LLaMA-2 7B cut to 2 layers on v5p 4x4), a task a
# plan; the collected ranking must be `podsim plan --exhaustive`'s, byte for byte.
cat > "$work/plan.yaml" <<YAML
version: 1
name: plan-array
hardware: {preset: v5p}
topology: {mesh: {X: 4, Y: 4}}
workload:
  kind: training
  model: {preset: llama2-7b, layers: 2}
  batch_tokens: 65536
  sequence_length: 1024
  attention_flops: false
YAML
plan_out="$work/plan"
"$podsim" plan "$work/plan.yaml" --emit slurm -o "$plan_out" || fail "podsim plan --emit slurm"
timeout 300 sbatch --wait "$plan_out/plan.sbatch" || fail "the plan's job array did not finish: $(cat "$plan_out"/slurm-*.out 2>/dev/null)"
"$podsim" plan "$work/plan.yaml" --collect -o "$plan_out" || fail "podsim plan --collect"
"$podsim" plan "$work/plan.yaml" --exhaustive -o "$work/plan-local" >/dev/null || fail "podsim plan --exhaustive"
cmp "$plan_out/plan.csv" "$work/plan-local/plan.csv" || fail "the collected plan.csv differs from plan --exhaustive's"
tasks=$(ls -d "$plan_out"/tasks/* | wc -l)
echo "PASSED: the sweep, and the planner's $tasks tasks through Slurm collected into plan --exhaustive's plan.csv"
