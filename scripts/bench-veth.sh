#!/usr/bin/env bash
# Throughput over veth: packets/s forwarded from a sender namespace to a receiver namespace
# through the kernel alone, through koi (AF_PACKET, and AF_XDP when `koi run` accepts `xdp:`
# ports) and through Open vSwitch's userspace datapath (netdev bridge with system ports, and
# afxdp ports when the OVS build has them), on the same veth setup. Needs root; creates its
# namespaces, veths and a private OVS instance and always removes them (trap).
#
#   sudo scripts/bench-veth.sh                       # everything, 3 runs each
#   PACKETS=500000 RUNS=5 DATAPATHS="kernel-bridge koi-afpacket" scripts/bench-veth.sh
#
# Setup, per datapath (rebuilt from scratch each time):
#
#   ns tx: tx0 ══ vethA ─┐ ns sw: the datapath ┌─ vethB ══ rx0 :ns rx
#
# Datapaths: kernel-bridge (a Linux bridge over vethA and vethB), kernel-tc (tc ingress u32
# match-all + mirred redirect vethA -> vethB: the cheapest kernel forward), koi-afpacket (`koi run
# examples/l2_forward.p4 --port 1=vethA --port 2=vethB`), koi-afxdp (`--port 1=xdp:vethA
# --port 2=xdp:vethB`: XDP in veth's driver, copy mode), koi-afxdp-generic (`xdp-generic:`,
# generic XDP), koi-afpacket-swaps (koi-afpacket with `koi ctl load` swapping the program,
# state carried over, every 100 ms during the runs; not in the default list), ovs-netdev (ovs-vswitchd, bridge datapath_type=netdev, vethA/vethB as
# system ports (AF_PACKET sockets), OpenFlow in_port=1,actions=output:2), ovs-afxdp (the same
# with type=afxdp ports; one PMD thread).
#
# Traffic (scripts/veth-traffic.c, compiled with gcc into a temporary directory): a bounded
# generator in ns tx sends PACKETS 64-byte (60 + FCS) Ethernet/IPv4/UDP frames (to a unicast
# MAC that no interface has: every datapath forwards them, rx0 counts and drops them) as fast
# as it can (raw AF_PACKET socket, sendmmsg batches of 64, at most MAXSEC seconds), after
# a 1000-frame warm-up per datapath. Forwarded packets are counted from rx0's rx_packets
# counter (sampled every 5 ms in ns rx), not by a userspace sink. Each run reports the offered
# rate (frames sent / sender time), the forwarded rate (rx0's increase / time from the first
# frame sent to the last frame counted), the loss, and CPU from schedstat over the time frames
# arrived: the switch process (all threads), its busiest thread (koi's poll thread, OVS's main
# thread for system ports or its PMD thread for afxdp) with the share of time that thread was
# runnable but waiting for a CPU, the sender, and the machine's softirq time (veth forwarding
# runs in softirq; when the kernel has no CONFIG_IRQ_TIME_ACCOUNTING, softirq work done in a
# task's context also counts as that task's CPU). 100% = one core.
#
# CPU placement (PIN=1, the default): the sender on core 0, the switch (koi, ovs-vswitchd and
# its PMD) on core 1. On a veth the receive side of a transmission runs in the transmitter's
# context: the kernel datapaths forward on the sender's core; a userspace switch receives on the
# sender's core (into its socket ring) and does the rest (its pipeline, the send, the receiver
# namespace's input) on its own core.
#
# Knobs (environment): PACKETS (default 1000000), RUNS (3), MAXSEC (12, per run), FLOWS (1:
# distinct UDP source ports), DATAPATHS (all seven), PIN (1), KOI (target/release/koi, built with
# cargo build --release -p koi unless KOI is given), NICE (-10: the sender and the switch run
# with this niceness, in sessions (autogroups) of their own, so that builds sharing the machine
# disturb the measurement less; NICE=0 to compete with them as equals).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKETS=${PACKETS:-1000000}
RUNS=${RUNS:-3}
MAXSEC=${MAXSEC:-12}
FLOWS=${FLOWS:-1}
PIN=${PIN:-1}
NICE=${NICE:--10}
DATAPATHS=${DATAPATHS:-"kernel-bridge kernel-tc koi-afpacket koi-afxdp koi-afxdp-generic ovs-netdev ovs-afxdp"}
BATCH=64
SIZE=60
IDLE_MS=1000
# The frames' destination: a MAC address no interface has, so that rx0 counts each frame and its
# stack drops it at once (PACKET_OTHERHOST) instead of routing it: the receiver's input path
# runs in the forwarder's context on a veth, and should cost as little as it can.
DSTMAC=02:00:00:00:00:02

if [ "$(id -u)" != 0 ]; then
  echo "bench-veth.sh needs root (network namespaces, raw sockets)" >&2
  exit 2
fi
for t in gcc ip taskset python3; do
  command -v $t >/dev/null || { echo "bench-veth.sh: $t is not installed" >&2; exit 2; }
done

if [ -z "${KOI:-}" ]; then
  cargo build --release -q -p koi
  KOI="$PWD/target/release/koi"
fi

tag=kbv$$
TX=$tag-tx; SW=$tag-sw; RX=$tag-rx
tmp=$(mktemp -d /tmp/bench-veth.XXXXXX)
VT=$tmp/veth-traffic
koi_pid=""
cnt_pid=""
snd_pid=""

# Whether process $1 runs (a zombie does not: the daemons' parents may not reap them at once).
alive() {
  [ -r "/proc/$1/stat" ] && ! grep -q ') Z ' "/proc/$1/stat" 2>/dev/null
}

ovs_stop() {
  for p in ovs-vswitchd ovsdb-server; do
    local f=$tmp/ovs/$p.pid
    [ -f "$f" ] || continue
    local pid; pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 40); do alive "$pid" || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

koi_stop() {
  [ -n "$koi_pid" ] || return 0
  kill -INT "$koi_pid" 2>/dev/null || true
  for _ in $(seq 50); do alive "$koi_pid" || break; sleep 0.1; done
  kill -9 "$koi_pid" 2>/dev/null || true
  wait "$koi_pid" 2>/dev/null || true
  koi_pid=""
}

topo_down() {
  for ns in $TX $SW $RX; do ip netns del "$ns" 2>/dev/null || true; done
}

cleanup() {
  for p in $snd_pid $cnt_pid; do kill "$p" 2>/dev/null || true; done
  koi_stop
  ovs_stop
  topo_down
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gcc -O2 -Wall -o "$VT" scripts/veth-traffic.c

topo_up() {
  topo_down
  for ns in $TX $SW $RX; do
    ip netns add "$ns"
    # No IPv6: the kernel would send neighbour discovery and MLD frames of its own.
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip -n "$ns" link set lo up
  done
  ip -n $TX link add tx0 type veth peer name vethA netns $SW
  ip -n $RX link add rx0 type veth peer name vethB netns $SW
  ip -n $TX link set tx0 up
  ip -n $RX link set rx0 up
  ip -n $SW link set vethA up
  ip -n $SW link set vethB up
}

if [ "$PIN" = 1 ]; then
  on_sender=(taskset -c 0)
  on_switch=(taskset -c 1)
else
  on_sender=()
  on_switch=()
fi
if [ "$NICE" != 0 ]; then
  # With autogroup scheduling (sched_autogroup_enabled) a nice value only counts inside the
  # session's group: give the sender and the switch sessions of their own, with that niceness.
  # (setsid does not fork here: a background job of a script is no process group leader, so
  # $! stays the process's id.)
  prio=(setsid sh -c 'echo "$0" > /proc/self/autogroup 2>/dev/null; exec nice -n "$0" "$@"' "$NICE")
  on_sender=("${prio[@]}" "${on_sender[@]}")
  on_switch=("${prio[@]}" "${on_switch[@]}")
fi

# measure LABEL COUNT TASK...: one bounded run; appends a result line to $tmp/results.
measure() {
  local label=$1 count=$2
  shift 2
  ip netns exec $RX "$VT" count rx0 $((MAXSEC + 10)) $IDLE_MS "$@" > "$tmp/cnt" &
  cnt_pid=$!
  for _ in $(seq 100); do grep -q ready "$tmp/cnt" 2>/dev/null && break; sleep 0.02; done
  # In the background and waited for, so that a signal runs the trap at once.
  ip netns exec $TX "${on_sender[@]}" "$VT" send tx0 "$count" $DSTMAC $FLOWS $BATCH $SIZE $MAXSEC > "$tmp/snd" &
  snd_pid=$!
  wait $snd_pid
  snd_pid=""
  wait $cnt_pid || true
  cnt_pid=""
  echo "dp=$label $(tail -1 "$tmp/snd") $(tail -1 "$tmp/cnt")" >> "$tmp/results"
}

# run_dp NAME TASK...: the warm-up and the RUNS measured runs of one datapath.
run_dp() {
  local name=$1
  shift
  : > "$tmp/results"
  measure warmup 1000 "$@"
  if ! grep -q ' rx=[1-9]' "$tmp/results"; then
    echo "  $name: nothing forwarded in the warm-up; skipped"
    echo "$name skipped: nothing forwarded in the warm-up" >> "$tmp/skipped"
    return
  fi
  : > "$tmp/results"
  for r in $(seq "$RUNS"); do
    measure "$name" "$PACKETS" "$@"
    python3 - "$tmp/results" "$r" <<'PY'
import sys
d = dict(kv.split("=", 1) for kv in open(sys.argv[1]).read().splitlines()[-1].split())
sent, rx = int(d["sent"]), int(d["rx"])
win = (int(d["last_ns"]) - int(d["start_ns"])) / 1e9 if rx else 0
print(f"  run {sys.argv[2]}: sent {sent} at {float(d['pps'])/1e3:.0f} kpps, received {rx} "
      f"at {rx/win/1e3 if win else 0:.0f} kpps, loss {100*(sent-rx)/sent:.1f}%, "
      f"switch cpu {d.get('cpu0','-')}% (busiest thread {d.get('cpu1','-')}%, "
      f"waiting {d.get('wait1','-')}%), sender cpu {d['cpu_pct']}%, softirq {d['sys_softirq']}%, "
      f"machine busy {d['sys_busy']}%")
PY
  done
  cat "$tmp/results" >> "$tmp/all"
}

# koi_start SPEC1 SPEC2: starts koi in ns sw; returns 1 (with the reason in $tmp/why) if it
# does not come up.
koi_start() {
  rm -f "$tmp/koi.sock"
  ip netns exec $SW "${on_switch[@]}" "$KOI" run examples/l2_forward.p4 \
    --entries examples/l2_forward.entries --port "1=$1" --port "2=$2" --ctl "$tmp/koi.sock" \
    > "$tmp/koi.out" 2> "$tmp/koi.err" &
  koi_pid=$!
  for _ in $(seq 100); do
    [ -S "$tmp/koi.sock" ] && grep -q forwarding "$tmp/koi.err" && return 0
    kill -0 $koi_pid 2>/dev/null || break
    sleep 0.1
  done
  wait $koi_pid 2>/dev/null || true
  koi_pid=""
  grep -v '^\s*$' "$tmp/koi.err" | tail -3 > "$tmp/why"
  return 1
}

koi_dp() {
  local name=$1 a=$2 b=$3
  if ! koi_start "$a" "$b"; then
    echo "  $name: koi run --port 1=$a --port 2=$b did not start: $(tr '\n' ' ' < "$tmp/why")"
    echo "$name skipped: koi run --port 1=$a --port 2=$b: $(tr '\n' ' ' < "$tmp/why")" >> "$tmp/skipped"
    return
  fi
  local poll swapper=""
  poll=$(dirname "$(grep -l '^koi-poll' /proc/$koi_pid/task/*/comm | head -1)")
  if [ "${name%-swaps}" != "$name" ]; then
    # The program swapped (state carried over) every 100 ms while the traffic flows.
    : > "$tmp/swapping"; : > "$tmp/swaps.log"
    (while [ -e "$tmp/swapping" ]; do
      "$KOI" ctl --ctl "$tmp/koi.sock" load "$PWD/examples/l2_forward.p4" >> "$tmp/swaps.log" 2>&1
      sleep 0.1
    done) &
    swapper=$!
  fi
  run_dp "$name" /proc/$koi_pid "$poll"
  if [ -n "$swapper" ]; then
    rm -f "$tmp/swapping"; wait "$swapper" || true
    echo "  swaps: $(grep -c 'state carried over' "$tmp/swaps.log") done, $(grep -c '^error' "$tmp/swaps.log") refused; $(sed -n 's/.*) in \([0-9.]*\) ms.*/\1/p' "$tmp/swaps.log" | sort -n | awk '{a[NR]=$1} END {if (NR) printf "new program in place after %s ms (median), %s ms (max)", a[int((NR+1)/2)], a[NR]}')"
  fi
  koi_stop
  echo "  koi's counters at exit (all runs and the warm-up):"
  sed 's/^/    /' "$tmp/koi.out"
}

# ovs_dp NAME TYPE: OVS userspace datapath with vethA/vethB as ports of TYPE (system|afxdp).
ovs_dp() {
  local name=$1 type=$2 O=$tmp/ovs
  rm -rf "$O"; mkdir -p "$O"
  export OVS_RUNDIR=$O OVS_LOGDIR=$O OVS_DBDIR=$O OVS_SYSCONFDIR=$O
  local vsctl=(ovs-vsctl --db=unix:$O/db.sock --timeout=30)
  ovsdb-tool create "$O/conf.db" /usr/share/openvswitch/vswitch.ovsschema
  ovsdb-server "$O/conf.db" --remote=punix:$O/db.sock --pidfile=$O/ovsdb-server.pid \
    --detach --log-file=$O/ovsdb-server.log 2> "$O/ovsdb-server.stderr"
  "${vsctl[@]}" --no-wait init
  "${vsctl[@]}" --no-wait set Open_vSwitch . other_config:pmd-cpu-mask=0x2
  # The bpf file system, for libxdp, in the mount namespace `ip netns exec` makes.
  ip netns exec $SW "${on_switch[@]}" sh -c "mount -t bpf bpf /sys/fs/bpf 2>/dev/null; exec ovs-vswitchd \
    unix:$O/db.sock --pidfile=$O/ovs-vswitchd.pid --detach --log-file=$O/ovs-vswitchd.log -vconsole:off" 2> "$O/ovs-vswitchd.stderr"
  if [ "$type" = afxdp ] && ! "${vsctl[@]}" get Open_vSwitch . iface_types | grep -qw afxdp; then
    echo "  $name: this ovs-vswitchd has no afxdp port type; skipped"
    echo "$name skipped: ovs-vswitchd has no afxdp port type" >> "$tmp/skipped"
    ovs_stop; return
  fi
  local opts=()
  [ "$type" = afxdp ] && opts=(type=afxdp options:xdp-mode=best-effort options:n_rxq=1)
  "${vsctl[@]}" add-br br0 -- set bridge br0 datapath_type=netdev fail_mode=secure
  "${vsctl[@]}" add-port br0 vethA -- set Interface vethA ofport_request=1 "${opts[@]}"
  "${vsctl[@]}" add-port br0 vethB -- set Interface vethB ofport_request=2 "${opts[@]}"
  ovs-ofctl del-flows br0
  ovs-ofctl add-flow br0 in_port=1,actions=output:2
  local err
  err=$("${vsctl[@]}" --columns=name,error find Interface 'error!=[]' 2>/dev/null || true)
  if [ -n "$err" ]; then
    echo "  $name: port errors: $(echo $err)"
    echo "$name skipped: $(echo $err)" >> "$tmp/skipped"
    ovs_stop; return
  fi
  local pid thread
  pid=$(cat "$O/ovs-vswitchd.pid")
  thread=/proc/$pid/task/$pid
  if [ "$type" = afxdp ]; then
    sleep 1
    local pmd
    pmd=$(grep -l '^pmd' /proc/$pid/task/*/comm 2>/dev/null | head -1)
    [ -n "$pmd" ] && thread=$(dirname "$pmd")
  fi
  if [ "$NICE" != 0 ]; then
    # ovs-vswitchd --detach starts a session of its own: give it (and its threads) the niceness.
    echo "$NICE" > /proc/$pid/autogroup 2>/dev/null || true
    for t in /proc/$pid/task/*; do renice -n "$NICE" -p "${t##*/}" >/dev/null || true; done
  fi
  run_dp "$name" /proc/$pid "$thread"
  echo "  ovs-ofctl dump-ports br0 (all runs and the warm-up):"
  ovs-ofctl dump-ports br0 2>/dev/null | sed -n "/port/,\$p" | sed "s/^ */    /"
  ovs_stop
}

echo "== bench-veth: $PACKETS frames of $((SIZE + 4)) bytes per run, $RUNS runs per datapath, $FLOWS flow(s), PIN=$PIN NICE=$NICE"
echo "   $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); kernel $(uname -r); koi $KOI"
start=$(date +%s)
: > "$tmp/all"; : > "$tmp/skipped"
for dp in $DATAPATHS; do
  echo "== $dp (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  topo_up
  case $dp in
    kernel-bridge)
      ip -n $SW link add br0 type bridge
      ip -n $SW link set vethA master br0
      ip -n $SW link set vethB master br0
      ip -n $SW link set br0 up
      run_dp "$dp"
      ;;
    kernel-tc)
      ip netns exec $SW tc qdisc add dev vethA ingress
      ip netns exec $SW tc filter add dev vethA ingress u32 match u32 0 0 action mirred egress redirect dev vethB
      run_dp "$dp"
      ;;
    koi-afpacket) koi_dp "$dp" vethA vethB ;;
    koi-afxdp) koi_dp "$dp" xdp:vethA xdp:vethB ;;
    koi-afxdp-generic) koi_dp "$dp" xdp-generic:vethA xdp-generic:vethB ;;
    koi-afpacket-swaps) koi_dp "$dp" vethA vethB ;;
    ovs-netdev) ovs_dp "$dp" system ;;
    ovs-afxdp) ovs_dp "$dp" afxdp ;;
    *) echo "  unknown datapath $dp" ;;
  esac
  topo_down
done

echo
echo "== summary: medians over $RUNS runs of $PACKETS frames ($((SIZE + 4)) bytes, $FLOWS flow(s)); $(($(date +%s) - start)) s; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/all" "$tmp/skipped" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    d = dict(kv.split("=", 1) for kv in line.split())
    sent, rx = int(d["sent"]), int(d["rx"])
    win = (int(d["last_ns"]) - int(d["start_ns"])) / 1e9 if rx else 0
    r = rows.setdefault(d["dp"], {k: [] for k in
        ["off", "fwd", "loss", "cpu", "thr", "wait", "snd", "sirq", "busy"]})
    r["off"].append(float(d["pps"]) / 1e3)
    r["fwd"].append(rx / win / 1e3 if win else 0)
    r["loss"].append(100 * (sent - rx) / sent)
    for k, src in [("cpu", "cpu0"), ("thr", "cpu1"), ("wait", "wait1")]:
        if src in d:
            r[k].append(float(d[src]))
    r["snd"].append(float(d["cpu_pct"]))
    r["sirq"].append(float(d["sys_softirq"]))
    r["busy"].append(float(d["sys_busy"]))
med = lambda v, f="{:.0f}": f.format(statistics.median(v)) if v else "-"
ref = statistics.median(rows["kernel-bridge"]["fwd"]) if "kernel-bridge" in rows else None
print("| datapath | offered kpps | forwarded kpps | vs kernel-bridge | loss % | kpps per forwarding core | switch CPU % | busiest thread CPU % (waiting %) | sender CPU % | softirq % | machine busy % |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for dp, r in rows.items():
    rel = f"{statistics.median(r['fwd']) / ref:.2f}x" if ref else "-"
    thr = f"{med(r['thr'])} ({med(r['wait'])})" if r["thr"] else "-"
    # Forwarded packets per second of CPU of whoever forwards: the switch's busiest thread, or
    # for the kernel datapaths the sender (the forward runs in its context).
    per = [f / (c / 100) for f, c in zip(r["fwd"], r["thr"] or r["snd"]) if c > 0]
    star = "" if r["thr"] else "*"
    print(f"| {dp} | {med(r['off'])} | {med(r['fwd'])} | {rel} | {med(r['loss'], '{:.1f}')} | "
          f"{med(per)}{star} | {med(r['cpu'])} | {thr} | {med(r['snd'])} | {med(r['sirq'])} | {med(r['busy'])} |")
for line in open(sys.argv[2]):
    print(f"| {line.split(' skipped: ')[0]} | skipped: {line.split(' skipped: ', 1)[1].strip()} ||||||||||")
PY
echo "(kpps per forwarding core: forwarded kpps / CPU of the busiest switch thread; * kernel datapaths: / the sender's CPU, as the kernel forwards in the sender's context, so that core also generates the traffic)"
echo "(CPU: 100% = one core ($(nproc) here), from schedstat/getrusage; softirq = the machine's softirq time, which without CONFIG_IRQ_TIME_ACCOUNTING is also counted in the CPU of the task it ran in; waiting = the busiest switch thread was runnable but had no CPU, i.e. other work competed for it: a run whose switch waited much measures the machine's load more than the datapath)"
