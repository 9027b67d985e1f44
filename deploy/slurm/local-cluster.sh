#!/usr/bin/env bash
# A single-node Slurm cluster in a folder of its own, to try the array script on one machine
# (and for the tests): munged with a generated key, slurmctld and slurmd with a generated
# slurm.conf, all state and logs in DIR, nothing under /etc.
#
#   deploy/slurm/local-cluster.sh up DIR     start it; prints `export SLURM_CONF=DIR/slurm.conf`
#   deploy/slurm/local-cluster.sh down DIR   stop it (the daemons started by `up`)
#
# Needs Debian's slurmctld, slurmd and munge (scripts/test-deps.sh install_slurm). slurmd
# starts jobs as other users only as root; as another user the jobs run as that user.
set -euo pipefail

# A daemon that stops before it forks writes why only to its log file: on any failure, say
# which command failed and show the logs, so a failed start is never silent.
on_error() {
  local rc=$? cmd="$1"
  echo "local-cluster.sh: \`$cmd\` failed (exit $rc)" >&2
  if [ -n "${dir:-}" ] && [ -d "$dir/log" ]; then
    tail -n 20 "$dir"/log/*.log >&2 2>/dev/null || true
  fi
}
trap 'on_error "$BASH_COMMAND"' ERR

cmd="${1:-}"
dir="${2:-}"
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: $0 up|down DIR" >&2
  exit 2
fi

stop_pidfile() {
  local f="$1" pid i
  [ -f "$f" ] || return 0
  pid="$(cat "$f" 2>/dev/null || true)"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for i in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

if [ "$cmd" = down ]; then
  stop_pidfile "$dir/slurmd.pid"
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munged.pid"
  exit 0
fi
if [ "$cmd" != up ]; then
  echo "usage: $0 up|down DIR" >&2
  exit 2
fi

for p in munged slurmctld slurmd scontrol sbatch; do
  if ! command -v "$p" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$p" ]; then
    echo "$p is not installed; install slurmctld, slurmd and munge (as root: apt-get install --no-install-recommends slurmctld slurmd munge slurm-client)" >&2
    exit 2
  fi
done
export PATH="$PATH:/usr/sbin"

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
chmod 700 "$dir"
mkdir -p "$dir/state" "$dir/spool" "$dir/log"

# munge: a fresh key, a socket in DIR
head -c 1024 /dev/urandom >"$dir/munge.key"
chmod 600 "$dir/munge.key"
munged --key-file="$dir/munge.key" --socket="$dir/munge.sock" --pid-file="$dir/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed" --force

# two free TCP ports for slurmctld and slurmd
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ctld_port="$(free_port)"
slurmd_port="$(free_port)"
while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port="$(free_port)"; done

# a one-node cluster for trying things: jobs are scheduled at once (a real cluster batches
# its scheduling passes, a few seconds per array task and dependency)
user="$(id -un)"
cpus="$(nproc)"
mem_mb="$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)"
cat >"$dir/slurm.conf" <<CONF
ClusterName=ufo-local
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/plugstack.conf
SchedulerType=sched/builtin
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0
MinJobAge=600
InactiveLimit=0
KillWait=10
NodeName=ufo-local NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=local Nodes=ufo-local Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
: >"$dir/plugstack.conf"
export SLURM_CONF="$dir/slurm.conf"

slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF" -N ufo-local

# bounded wait until the node takes jobs
# (scontrol fails until slurmctld listens, later on a loaded machine: that is a retry, not an
# error, so the pipeline must not end the script under `set -e -o pipefail`)
for i in $(seq 100); do
  state="$(scontrol show node ufo-local 2>/dev/null | sed -n 's/.*State=\([A-Z+_]*\).*/\1/p' | head -1)" || state=""
  case "$state" in
    IDLE* | MIXED* | ALLOCATED*)
      echo "export SLURM_CONF=$SLURM_CONF"
      exit 0
      ;;
  esac
  sleep 0.2
done
echo "the local Slurm node did not come up (state: ${state:-none}); see $dir/log" >&2
tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
exit 1
