#!/usr/bin/env bash
# slurm.sh -- the project's Slurm test harness: slurmctld (and munged) in the root namespace
# and one slurmd inside each simulated host of internal/testhosts/hosts.sh (which must be up;
# this script never starts or stops the hosts). Needs root and Debian's slurm-wlm + munge:
#   apt-get install -y --no-install-recommends slurm-wlm munge
#
#   slurm.sh up         start munged, slurmctld, slurmd on every host; wait until all are idle.
#                       When up already, restarts the slurmd of a host that lost it (a test
#                       crashed and restarted the host) and waits for the nodes again.
#   slurm.sh down       stop them (by recorded PID), remove the state
#   slurm.sh status     recorded PIDs, liveness, sinfo
#   slurm.sh env        shell exports for the tests: eval "$(internal/testslurm/slurm.sh env)"
#   slurm.sh kill-slurmd H   SIGKILL host H's slurmd (a node whose daemon dies mid-job)
#   slurm.sh start-slurmd H  start host H's slurmd again
#
# Layout: node hI = host hI of hosts.sh (NodeAddr = its eth0 address); slurmd runs under
# nsenter into the host's net/mount/uts/ipc/pid namespaces, so slurmstepd and the tasks see
# the host's hostname, /dev/shm and PID space, like sshd's sessions do. slurmctld listens on
# the root namespace's bridge address. Ports are not Slurm's defaults (6817/6818) so that a
# cluster of ../shared/infra can run beside this one. Gotchas: `ip netns exec` remounts /sys
# without cgroups (slurmd then dies), so nsenter; slurmctld insists SlurmctldHost is its own
# hostname, so the machine's short name with the bridge address; proctrack/linuxproc, as
# cgroups cannot be delegated into the hosts. Knobs: HCCL_TS_STATE (/tmp/hcclrun-testslurm),
# HCCL_TS_CPUS (2: each node's CPUs, the tasks a node takes), HCCL_TS_PORT (6917: slurmctld,
# slurmd gets +1).
set -euo pipefail

D=${HCCL_TS_STATE:-/tmp/hcclrun-testslurm}
CPUS=${HCCL_TS_CPUS:-2}
PORT=${HCCL_TS_PORT:-6917}
HERE=$(cd "$(dirname "$0")" && pwd)
HOSTS_SH=$HERE/../testhosts/hosts.sh

die() { echo "slurm.sh: $*" >&2; exit 1; }
# kill -0 is true for zombies, and PID 1 here reaps orphans only after seconds: ask ps.
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1; [[ $st != Z* ]]; }

[ "$(id -u)" = 0 ] || die "must run as root"
export SLURM_CONF=$D/slurm.conf

hosts_env() {
  local e; e=$("$HOSTS_SH" env 2>/dev/null) || die "the simulated hosts are not up (internal/testhosts/hosts.sh up 3)"
  eval "$e"
  read -r -a NAMES <<< "$HCCL_TEST_HOST_NAMES"
  read -r -a ADDRS <<< "$HCCL_TEST_HOSTS"
  NET=${ADDRS[0]%.*}
}

start_munge() {
  mkdir -p "$D/munge" "$D/run"
  chmod 755 "$D" "$D/run"; chmod 700 "$D/munge"
  [ -f "$D/munge/munge.key" ] || mungekey --create --keyfile="$D/munge/munge.key"
  chmod 600 "$D/munge/munge.key"
  if [ -f "$D/munge.bgpid" ] && alive "$(cat "$D/munge.bgpid")"; then return 0; fi
  rm -f "$D/run/munge.socket"
  munged -F --key-file="$D/munge/munge.key" --socket="$D/run/munge.socket" \
    --pid-file="$D/munge/munged.pid" --log-file="$D/munge/munged.log" --seed-file="$D/munge/munged.seed" \
    > "$D/munge/munged.out" 2>&1 < /dev/null &
  echo $! > "$D/munge.bgpid"
  for _ in $(seq 1 50); do [ -S "$D/run/munge.socket" ] && return 0; sleep 0.1; done
  cat "$D/munge/munged.out" >&2; die "munged did not start"
}

write_conf() {
  local n=${#NAMES[@]} i nodes
  mkdir -p "$D/spool" "$D/log"
  cat > "$D/slurm.conf" <<EOC
ClusterName=hcclrun
SlurmctldHost=$(hostname -s)($NET.254)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/run/munge.socket
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SrunPortRange=$((PORT + 100))-$((PORT + 600))
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=10
InactiveLimit=0
KillWait=2
KillOnBadExit=1
MinJobAge=10
MessageTimeout=10
SchedulerType=sched/backfill
EOC
  nodes=""
  for i in "${!NAMES[@]}"; do
    echo "NodeName=${NAMES[$i]} NodeAddr=${ADDRS[$i]} CPUs=$CPUS RealMemory=1000 State=UNKNOWN" >> "$D/slurm.conf"
    nodes+="${nodes:+,}${NAMES[$i]}"
  done
  echo "PartitionName=debug Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >> "$D/slurm.conf"
  : "$n"
}

start_slurmd() { # $1 = host name
  local h=$1 init
  init=$(cat "$HCCL_TEST_STATE/$h/init.pid" 2>/dev/null) || die "$h is not running (hosts.sh status)"
  mkdir -p "$D/spool/$h"
  # -p: the host's /proc is its PID namespace's (slurmstepd reads /proc/<pid>/stat). With -p
  # nsenter forks: the recorded PID is nsenter's, slurmd is its child.
  nsenter -t "$init" -n -m -u -i -p env PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    slurmd -D -N "$h" -f "$D/slurm.conf" > "$D/log/slurmd-$h.out" 2>&1 < /dev/null &
  echo $! > "$D/slurmd-$h.bgpid"
  echo "$init" > "$D/slurmd-$h.init"
}

stop_pid() { # $1 = recorded pid file; a recorded nsenter's children go first
  local f=$1 p c
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  for c in $(ps -o pid= --ppid "$p" 2>/dev/null || true); do kill -"${2:-TERM}" "$c" 2>/dev/null || true; done
  if alive "$p"; then
    kill -"${2:-TERM}" "$p" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$p" || break; sleep 0.1; done
    alive "$p" && kill -KILL "$p" 2>/dev/null || true
  fi
  rm -f "$f"
}

wait_idle() {
  local n=${#NAMES[@]} t0=$SECONDS c
  while [ $((SECONDS - t0)) -lt 60 ]; do
    alive "$(cat "$D/slurmctld.bgpid")" || { tail -20 "$D/log/slurmctld.log" >&2; die "slurmctld died"; }
    c=$(timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2=="idle"' | wc -l || true)
    if [ "$c" -ge "$n" ]; then echo "slurm.sh: $c node(s) idle after $((SECONDS - t0))s"; return 0; fi
    sleep 0.3
  done
  sinfo -N >&2 || true; tail -20 "$D/log/slurmctld.log" >&2 || true
  die "nodes not idle after 60s"
}

up() {
  command -v slurmctld >/dev/null || die "apt-get install -y --no-install-recommends slurm-wlm munge"
  hosts_env
  if [ -f "$D/slurmctld.bgpid" ] && alive "$(cat "$D/slurmctld.bgpid")"; then
    local h fixed=0
    for h in "${NAMES[@]}"; do
      # a host restarted by hosts.sh has a new init: a slurmd outside it is stale
      if [ -f "$D/slurmd-$h.bgpid" ] && alive "$(cat "$D/slurmd-$h.bgpid")" && \
         [ "$(cat "$D/slurmd-$h.init" 2>/dev/null)" = "$(cat "$HCCL_TEST_STATE/$h/init.pid" 2>/dev/null)" ]; then
        continue
      fi
      stop_pid "$D/slurmd-$h.bgpid" KILL; start_slurmd "$h"; fixed=1
    done
    [ $fixed = 1 ] && wait_idle
    write_env; return 0
  fi
  start_munge
  write_conf
  rm -rf "$D/state"; mkdir -p "$D/state"   # no stale node or job state from a previous run
  slurmctld -D -i -f "$D/slurm.conf" > "$D/log/slurmctld.out" 2>&1 < /dev/null &
  echo $! > "$D/slurmctld.bgpid"
  for h in "${NAMES[@]}"; do start_slurmd "$h"; done
  wait_idle
  write_env
}

write_env() {
  { echo "export SLURM_CONF=$D/slurm.conf"; echo "export HCCL_TEST_SLURM_SCRIPT=$HERE/slurm.sh"; } > "$D/env"
}

down() {
  local f
  for f in "$D"/slurmd-*.bgpid "$D/slurmctld.bgpid" "$D/munge.bgpid"; do stop_pid "$f"; done
  rm -f "$D/env"
  echo "slurm.sh: down"
}

cmd=${1:-}; shift || true
case "$cmd" in
  up) up ;;
  down) down ;;
  status)
    for f in "$D"/*.bgpid; do [ -f "$f" ] && echo "$(basename "$f" .bgpid): $(cat "$f") $(alive "$(cat "$f")" && echo alive || echo dead)"; done
    sinfo -N || true ;;
  env) [ -f "$D/env" ] || die "not up (run: $HERE/slurm.sh up)"; cat "$D/env" ;;
  kill-slurmd) stop_pid "$D/slurmd-$1.bgpid" KILL ;;
  start-slurmd) hosts_env; start_slurmd "$1" ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
