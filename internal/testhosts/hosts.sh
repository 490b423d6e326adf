#!/usr/bin/env bash
# hosts.sh -- the project's multi-host test harness: N simulated hosts h1..hN on this machine,
# each a set of Linux namespaces running one real OpenSSH sshd. Needs root.
#
#   hosts.sh up N         create h1..hN (default 3) and start their sshd; idempotent
#   hosts.sh down         kill every process of every host (by PID), delete namespaces, links, routes
#   hosts.sh status       hosts, recorded PIDs, liveness, faults
#   hosts.sh env          shell exports for the tests: eval "$(internal/testhosts/hosts.sh env)"
#   hosts.sh crash H      SIGKILL every process of host H at once (a power cut)
#   hosts.sh start H      boot host H again after a crash (same keys, same address)
#   hosts.sh cut H [silent]  take H off the network: root-side link down (carrier lost), or with
#                         "silent" an nftables drop of everything on H's eth0 (link stays up, no RST)
#   hosts.sh heal H       undo cut (both kinds)
#   hosts.sh pids H       root-namespace PIDs of every process in H's network namespace
#   hosts.sh exec H CMD.. run CMD inside host H's namespaces without ssh (as root)
#
# Layout: host hI = network namespace "hct-hI" with eth0 = $NET.I/24, joined by the veth
# "hctv-hI" to the bridge hctbr0 in the root namespace, which holds $NET.254 so that tests
# running in the root namespace reach the hosts. Each host's sshd runs under
#   nsenter --net=/run/netns/hct-hI unshare --mount --uts --ipc [--pid --fork --kill-child --mount-proc]
# so a host has its own hostname (hI), its own /dev/shm tmpfs, its own SysV IPC, its own /sys
# (shows only its lo and eth0), and with HCCL_TH_PIDNS=1 (the default) its own PID space.
# sshd listens on port 22 and on $ALT_PORT (2222), so tests can check "[host]:port" known_hosts.
#
# Knobs: HCCL_TH_STATE (/tmp/hcclrun-testhosts), HCCL_TH_NET (10.78.0: the /24 this script
# owns; not the 10.77.0 of ../shared/infra so both can run at once), HCCL_TH_PIDNS (1),
# HCCL_TH_SHM_SIZE (512m).
set -euo pipefail

STATE=${HCCL_TH_STATE:-/tmp/hcclrun-testhosts}
NET=${HCCL_TH_NET:-10.78.0}
PIDNS=${HCCL_TH_PIDNS:-1}
SHM_SIZE=${HCCL_TH_SHM_SIZE:-512m}
NSP=hct-          # namespace name = $NSP$host
VP=hctv-          # root-side veth = $VP$host
BR=hctbr0
ALT_PORT=2222
GUARD_METRIC=4242
HERE=$(cd "$(dirname "$0")" && pwd)
# commands after "up" keep the knobs "up" was given
if [ "${1:-}" != up ] && [ -f "$STATE/settings" ]; then . "$STATE/settings"; fi

die() { echo "hosts.sh: $*" >&2; exit 1; }
# kill -0 succeeds on zombies, and PID 1 here reaps orphans only after seconds: ask ps.
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1; [[ $st != Z* ]]; }
hostidx() { [[ $1 =~ ^h([0-9]+)$ ]] || die "bad host name '$1' (want h1, h2, ...)"; echo "${BASH_REMATCH[1]}"; }
# hosts recorded by "up", in order (no "| grep -q" anywhere: SIGPIPE under pipefail)
hosts() { [ -f "$STATE/hosts" ] && cat "$STATE/hosts" || true; }

ensure_packages() {
  local pkgs=(iproute2 openssh-server openssh-client nftables) missing=() st
  # one dpkg-query for all (each process costs ~0.1 s when the machine is loaded)
  st=$(dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" 2>/dev/null || true)
  for p in "${pkgs[@]}"; do
    [[ $'\n'$st$'\n' == *$'\n'"$p install ok installed"$'\n'* ]] || missing+=("$p")
  done
  [ ${#missing[@]} = 0 ] && return 0
  echo "hosts.sh: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends iproute2 openssh-server openssh-client nftables >/dev/null
}

# prepare writes keys and configs once; later "up"s reuse the keys so known_hosts stays valid.
prepare() {
  local n=$1 i h ip
  mkdir -p "$STATE/authorized_keys"
  chmod 755 "$STATE"
  [ -f "$STATE/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C hcclrun-testhosts -f "$STATE/id_ed25519"
  # one file per user (%u): only root may log in, so "wrong user" is refused at authentication
  install -m 644 "$STATE/id_ed25519.pub" "$STATE/authorized_keys/root"
  # root's real ~/.bashrc runs `pyenv init` (+1.2 s per ssh command); hosts get this one instead
  printf '%s\n' 'export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' > "$STATE/bashrc"
  { echo "127.0.0.1 localhost"; echo "$NET.254 h0"; for i in $(seq 1 "$n"); do echo "$NET.$i h$i"; done; } > "$STATE/etc_hosts"
  chmod 644 "$STATE/bashrc" "$STATE/etc_hosts"
  cat > "$STATE/hostinit.sh" <<'EOF'
#!/bin/sh
# First process of a simulated host, already inside its own mount/uts/ipc[/pid] namespaces.
set -e
h=$1; D=$2; SHM=$3
hostname "$h"
# A sysfs mounted from inside the netns shows this host's links only; keep the cgroup tree.
mkdir -p "$D/$h/cg"; mount --rbind /sys/fs/cgroup "$D/$h/cg"
umount -l /sys; mount -t sysfs hctsys /sys; mount --move "$D/$h/cg" /sys/fs/cgroup
# sshd needs /run/sshd (made by systemd-tmpfiles at boot, absent here): a private /run.
mount -t tmpfs -o mode=755,size=4m hctrun /run; mkdir -m 755 /run/sshd
mount -t tmpfs -o "size=$SHM,mode=1777" hctshm /dev/shm
mount --bind "$D/etc_hosts" /etc/hosts
[ -f /root/.bashrc ] && mount --bind "$D/bashrc" /root/.bashrc
exec /usr/sbin/sshd -D -e -f "$D/$h/sshd_config"
EOF
  chmod 755 "$STATE/hostinit.sh"
  : > "$STATE/known_hosts"
  : > "$STATE/ssh_config"
  for i in $(seq 1 "$n"); do
    h=h$i; ip=$NET.$i
    mkdir -p "$STATE/$h"
    [ -f "$STATE/$h/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C "$h" -f "$STATE/$h/ssh_host_ed25519_key"
    # a second host key type, so tests can check that the client asks for the one known_hosts holds
    [ -f "$STATE/$h/ssh_host_ecdsa_key" ] || ssh-keygen -q -t ecdsa -b 256 -N '' -C "$h" -f "$STATE/$h/ssh_host_ecdsa_key"
    local k kt kb; read -r kt kb _ < "$STATE/$h/ssh_host_ed25519_key.pub"; k="$kt $kb"
    echo "$h,$ip $k" >> "$STATE/known_hosts"
    echo "[$h]:$ALT_PORT,[$ip]:$ALT_PORT $k" >> "$STATE/known_hosts"
    printf 'Host %s\n  HostName %s\n' "$h" "$ip" >> "$STATE/ssh_config"
    cat > "$STATE/$h/sshd_config" <<EOF
ListenAddress $ip:22
ListenAddress $ip:$ALT_PORT
HostKey $STATE/$h/ssh_host_ed25519_key
HostKey $STATE/$h/ssh_host_ecdsa_key
PidFile $STATE/$h/sshd.pid
AuthorizedKeysFile $STATE/authorized_keys/%u
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# keys live under /tmp (mode 1777): StrictModes yes refuses them
StrictModes no
# Session.Setenv fails for names not listed here
AcceptEnv HCCL_* HCCLRUN_* LANG LC_*
# defaults (10 sessions per connection, 10:30:100 unauthenticated) break fan-out tests
MaxSessions 256
MaxStartups 256:30:512
# drop a vanished client after ~6-15 s
ClientAliveInterval 2
ClientAliveCountMax 3
PrintMotd no
LogLevel VERBOSE
EOF
  done
  # OpenSSH reads the first value it finds, so the per-host HostName blocks come first
  cat >> "$STATE/ssh_config" <<EOF
Host h* $NET.*
  User root
  IdentityFile $STATE/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $STATE/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 5
  LogLevel ERROR
EOF
  chmod 600 "$STATE/id_ed25519"
}

# net_up creates the bridge, the guard route and host $1's namespace and link.
net_bridge() {
  ip link show "$BR" >/dev/null 2>&1 || ip link add "$BR" type bridge stp_state 0 forward_delay 0
  ip link set "$BR" up
  # The root namespace has a default route to the outside: if the bridge goes away, traffic
  # for the test subnet must fail with "no route to host", never leave the machine.
  ip route replace unreachable "$NET.0/24" metric $GUARD_METRIC
  ip addr replace "$NET.254/24" dev "$BR"
}
net_host() {
  local h=$1 i; i=$(hostidx "$h")
  [ -e "/run/netns/$NSP$h" ] || ip netns add "$NSP$h"
  ip -n "$NSP$h" link set lo up
  ip -n "$NSP$h" link show eth0 >/dev/null 2>&1 || ip link add "$VP$h" type veth peer name eth0 netns "$NSP$h"
  ip link set "$VP$h" master "$BR" up
  ip -n "$NSP$h" addr replace "$NET.$i/24" dev eth0
  ip -n "$NSP$h" link set eth0 up
}

# boot starts host $1's init (hostinit.sh -> sshd) in the background and records its PID.
boot() {
  local h=$1 un=(unshare --mount --uts --ipc --propagation private)
  [ "$PIDNS" = 1 ] && un+=(--pid --fork --kill-child --mount-proc)
  rm -f "$STATE/$h/sshd.pid" "$STATE/$h/init.pid"
  nsenter --net="/run/netns/$NSP$h" "${un[@]}" "$STATE/hostinit.sh" "$h" "$STATE" "$SHM_SIZE" \
    > "$STATE/$h/sshd.log" 2>&1 < /dev/null &
  echo $! > "$STATE/$h/host.pid"
}

# booted waits until host $1's sshd has written its PidFile (it does so after binding).
booted() {
  local h=$1 hp init
  hp=$(< "$STATE/$h/host.pid")
  for i in $(seq 1 100); do
    if [ -s "$STATE/$h/sshd.pid" ]; then
      # with --fork the host's init is unshare's child; without, unshare exec'd sshd itself
      init=$(ps -o pid= --ppid "$hp" | tr -d ' ' || true)
      echo "${init:-$hp}" > "$STATE/$h/init.pid"
      return 0
    fi
    if [ $((i % 10)) = 0 ]; then alive "$hp" || break; fi
    sleep 0.05
  done
  cat "$STATE/$h/sshd.log" >&2
  die "$h: sshd did not come up"
}

# kill_host stops every process of host $1, by PID: the recorded unshare (KILL: with --kill-child
# the kernel then kills the whole PID namespace), then whatever is still in its netns.
kill_host() {
  local h=$1 p left
  if [ -f "$STATE/$h/host.pid" ]; then
    p=$(cat "$STATE/$h/host.pid")
    alive "$p" && kill -KILL "$p" 2>/dev/null || true
    rm -f "$STATE/$h/host.pid" "$STATE/$h/init.pid" "$STATE/$h/sshd.pid"
  fi
  for _ in $(seq 1 50); do
    left=$(ip netns pids "$NSP$h" 2>/dev/null || true)
    [ -z "$left" ] && return 0
    kill -KILL $left 2>/dev/null || true
    sleep 0.05
  done
  die "$h: processes survive SIGKILL: $(echo $left)"
}

up() {
  local n=${1:-3} i h
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die "N must be 1..250"
  ensure_packages
  if [ -f "$STATE/hosts" ] && [ "$(wc -l < "$STATE/hosts")" != "$n" ]; then
    die "already up with $(wc -l < "$STATE/hosts") hosts; run down first"
  fi
  prepare "$n"
  seq -f 'h%g' 1 "$n" > "$STATE/hosts"
  printf 'PIDNS=%q\nSHM_SIZE=%q\n' "$PIDNS" "$SHM_SIZE" > "$STATE/settings"
  net_bridge
  for h in $(hosts); do net_host "$h"; done
  for h in $(hosts); do
    if [ -f "$STATE/$h/host.pid" ] && alive "$(cat "$STATE/$h/host.pid")"; then continue; fi
    kill_host "$h"; boot "$h"
  done
  for h in $(hosts); do booted "$h"; done
  write_env
  echo "hosts.sh: up: $(hosts | tr '\n' ' ')on $NET.0/24; eval \"\$($HERE/hosts.sh env)\""
}

write_env() {
  {
    echo "export HCCL_TEST_HOSTS=\"$(for h in $(hosts); do printf '%s ' "$NET.$(hostidx "$h")"; done | sed 's/ $//')\""
    echo "export HCCL_TEST_HOST_NAMES=\"$(hosts | tr '\n' ' ' | sed 's/ $//')\""
    echo "export HCCL_TEST_SSH_USER=root"
    echo "export HCCL_TEST_SSH_KEY=$STATE/id_ed25519"
    echo "export HCCL_TEST_SSH_KNOWN_HOSTS=$STATE/known_hosts"
    echo "export HCCL_TEST_SSH_CONFIG=$STATE/ssh_config"
    echo "export HCCL_TEST_SSH_ALT_PORT=$ALT_PORT"
    echo "export HCCL_TEST_STATE=$STATE"
    echo "export HCCL_TEST_HOSTS_SCRIPT=$HERE/hosts.sh"
  } > "$STATE/env"
}

down() {
  local h ns listed
  listed=" $(hosts | tr '\n' ' ') "
  for h in $(hosts); do kill_host "$h"; done
  # also namespaces and links of ours that the state file no longer lists (an interrupted run)
  for ns in $(ip netns list | awk '{print $1}'); do
    [[ $ns == "$NSP"* ]] || continue
    [[ $listed == *" ${ns#"$NSP"} "* ]] || kill_host "${ns#"$NSP"}"
    ip netns del "$ns"
  done
  for ns in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do
    [[ $ns == "$VP"* ]] && ip link del "$ns" 2>/dev/null || true
  done
  ! ip link show "$BR" >/dev/null 2>&1 || ip link del "$BR"
  ip route del unreachable "$NET.0/24" metric $GUARD_METRIC 2>/dev/null || true
  rm -f "$STATE/hosts" "$STATE/env" "$STATE/settings"
  echo "hosts.sh: down"
}

status() {
  local h hp st
  [ -n "$(hosts)" ] || { echo "hosts.sh: not up"; return 1; }
  for h in $(hosts); do
    hp=$(cat "$STATE/$h/host.pid" 2>/dev/null || echo -)
    st=down; [ "$hp" != - ] && alive "$hp" && st=up
    printf '%s %s: %s host.pid=%s init.pid=%s link=%s%s netns pids: %s\n' "$h" "$NET.$(hostidx "$h")" "$st" "$hp" \
      "$(cat "$STATE/$h/init.pid" 2>/dev/null || echo -)" \
      "$(ip -br link show "$VP$h" 2>/dev/null | awk '{print $2}')" \
      "$(ip netns exec "$NSP$h" nft list table inet hctcut >/dev/null 2>&1 && echo ' silent-cut' || true)" \
      "$(ip netns pids "$NSP$h" 2>/dev/null | tr '\n' ' ')"
  done
}

need_host() { hostidx "$1" >/dev/null; [ -e "/run/netns/$NSP$1" ] || die "$1 is not up"; }

[ "$(id -u)" = 0 ] || die "must run as root"
cmd=${1:-}; shift || true
case "$cmd" in
  up) up "${1:-3}" ;;
  down) down ;;
  status) status ;;
  env) [ -f "$STATE/env" ] || die "not up (run: $HERE/hosts.sh up 3)"; cat "$STATE/env" ;;
  crash) need_host "$1"; kill_host "$1" ;;
  start) need_host "$1"; kill_host "$1"; boot "$1"; booted "$1" ;;
  cut)
    need_host "$1"
    if [ "${2:-}" = silent ]; then
      # input and output on eth0 dropped, lo untouched: TCP peers see nothing at all, not even RST
      ip netns exec "$NSP$1" nft -f - <<'EOF'
table inet hctcut {
  chain in  { type filter hook input  priority 0; policy accept; iifname "eth0" drop; }
  chain out { type filter hook output priority 0; policy accept; oifname "eth0" drop; }
}
EOF
    else
      ip link set "$VP$1" down
    fi ;;
  heal)
    need_host "$1"
    ip netns exec "$NSP$1" nft delete table inet hctcut 2>/dev/null || true
    ip link set "$VP$1" up ;;
  pids) need_host "$1"; ip netns pids "$NSP$1" ;;
  exec)
    need_host "$1"; h=$1; shift
    init=$(cat "$STATE/$h/init.pid" 2>/dev/null) || die "$h is not running"
    if [ "$PIDNS" = 1 ]; then exec nsenter -t "$init" -n -m -u -i -p "$@"; else exec nsenter -t "$init" -n -m -u -i "$@"; fi ;;
  *) sed -n '2,27p' "$0"; exit 2 ;;
esac
