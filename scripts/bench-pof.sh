#!/usr/bin/env bash
# K_POFVS's set-up: two hosts in network namespaces through the switch running K_POFVS's
# example (ARP broadcast, IPv4 by destination with TTL and checksum), as a POF configuration
# (`koi run --pof --pof-config examples/pof/kpofvs.pof`), as the same pipeline in P4
# (examples/pof/kpofvs.p4 with examples/pof/kpofvs.entries), and through a Linux bridge.
# Needs root; creates its namespaces and veths and always removes them (trap).
#
#   sudo scripts/bench-pof.sh
#   RUNS=3 SECONDS_EACH=5 KOI=target/release/koi scripts/bench-pof.sh
#
#   ns h1: h1 ══ s1 ─┐ ns sw: koi (one poll thread, core 1) ┌─ s2 ══ h2 :ns h2
#
# Per datapath and run: an iperf3 TCP transfer h1 -> h2 with a fixed MSS (1,400 bytes) for
# SECONDS_EACH, and 60-byte UDP frames from h1 to h2 as fast as one core sends them (on core
# 0, scripts/veth-traffic.c) over 2,000 and over 10,000 flows (distinct source ports), the
# frames h2 received counted (the generator's frames, 198.18.0.1 -> 198.18.1.2, get a route
# of their own to h2 in both pipelines). The hosts are 10.0.1.1/16 and 10.0.2.1/16 (one segment: the
# example routes /24s to ports without rewriting MACs), with transmit checksum offload off.
#
# Knobs (environment): RUNS (3), SECONDS_EACH (5), PACKETS (1000000 per UDP run), DATAPATHS
# ("bridge koi-pof koi-p4"), KOI (target/release/koi, built unless given).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SECONDS_EACH=${SECONDS_EACH:-5}
PACKETS=${PACKETS:-1000000}
DATAPATHS=${DATAPATHS:-"bridge koi-pof koi-p4"}
for t in iperf3 gcc ethtool; do
  command -v $t >/dev/null || { echo "bench-pof: needs $t" >&2; exit 2; }
done
. scripts/koi-release.sh
tmp=$(mktemp -d)
tag="kp$$"
H1="${tag}h1" H2="${tag}h2" SW="${tag}sw"
MAC1=02:00:00:00:01:01 MAC2=02:00:00:00:02:01
koi_pid=""
cleanup() {
  [ -n "$koi_pid" ] && kill "$koi_pid" 2>/dev/null && wait "$koi_pid" 2>/dev/null
  for ns in $H1 $H2 $SW; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
gcc -O2 -o "$tmp/vt" scripts/veth-traffic.c

topo_up() {
  for ns in $H1 $H2 $SW; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
  ip link add h1 netns $H1 type veth peer name s1 netns $SW
  ip link add h2 netns $H2 type veth peer name s2 netns $SW
  ip -n $H1 link set h1 address $MAC1
  ip -n $H2 link set h2 address $MAC2
  ip -n $H1 addr add 10.0.1.1/16 dev h1
  ip -n $H2 addr add 10.0.2.1/16 dev h2
  for x in "$H1 h1" "$H2 h2" "$SW s1" "$SW s2"; do
    set -- $x
    ip -n "$1" link set "$2" up
    ip netns exec "$1" ethtool -K "$2" tx off >/dev/null 2>&1 || true
  done
}
topo_down() {
  if [ -n "$koi_pid" ]; then kill -INT "$koi_pid" 2>/dev/null; wait "$koi_pid" 2>/dev/null || true; fi
  koi_pid=""
  for ns in $H1 $H2 $SW; do ip netns del "$ns" 2>/dev/null || true; done
}

start_koi() {
  rm -f "$tmp/koi.sock"
  ip netns exec $SW taskset -c 1 "$KOI" run "$@" --port 1=s1 --port 2=s2 --threads 1 \
    --grpc none --ctl "$tmp/koi.sock" >"$tmp/koi.out" 2>"$tmp/koi.err" &
  koi_pid=$!
  for _ in $(seq 100); do
    [ -S "$tmp/koi.sock" ] && return 0
    sleep 0.1
  done
  echo "koi did not start: $(tail -3 "$tmp/koi.err")" >&2
  return 1
}

measure() { # DATAPATH RUN
  ip netns exec $H1 ping -c 3 -i 0.2 -W 1 10.0.2.1 >/dev/null ||
    { echo "  $1: no ping through it" >&2; return 1; }
  ip netns exec $H2 iperf3 -s -1 -D -p 5201 >/dev/null 2>&1
  sleep 0.3
  local gbps
  gbps=$(ip netns exec $H1 taskset -c 0 iperf3 -c 10.0.2.1 -p 5201 -M 1400 -t "$SECONDS_EACH" -J |
    python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))')
  local line="$1 run $2: TCP (MSS 1400) ${gbps} Gbit/s"
  for flows in 2000 10000; do
    ip netns exec $H2 "$tmp/vt" count h2 20 300 >"$tmp/rx" &
    local rx=$!
    sleep 0.2
    ip netns exec $H1 taskset -c 0 "$tmp/vt" send h1 "$PACKETS" $MAC2 "$flows" 64 60 10 >"$tmp/tx"
    wait $rx
    line="$line; UDP $flows flows: $(python3 - "$tmp/tx" "$tmp/rx" <<'PY'
import sys
def kv(p): return dict(x.split("=", 1) for x in open(p).read().split() if "=" in x)
t, r = kv(sys.argv[1]), kv(sys.argv[2])
sent, rx = int(t["sent"]), int(r["rx"])
span = (int(r["last_ns"]) - int(t["start_ns"])) / 1e9
print(f"{rx / span / 1e3:.0f} kpps received of {float(t['pps']) / 1e3:.0f} kpps offered ({max(0.0, 100 * (sent - rx) / sent):.1f}% lost)")
PY
)"
  done
  echo "$line" | tee -a "$tmp/all"
}

echo "koi: $KOI; $RUNS runs of ${SECONDS_EACH} s TCP and $PACKETS UDP frames; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq "$RUNS"); do
  for dp in $DATAPATHS; do
    topo_up
    case $dp in
      bridge)
        ip -n $SW link add br0 type bridge
        ip -n $SW link set s1 master br0
        ip -n $SW link set s2 master br0
        ip -n $SW link set br0 up
        ;;
      koi-pof)
        printf 'mc_mgrp_create 1\nmc_node_create 0 1 2\nmc_node_associate 1 0\n' >"$tmp/groups"
        start_koi --pof --pof-config examples/pof/kpofvs.pof --entries "$tmp/groups"
        # The UDP generator's frames (198.18.0.1 -> 198.18.1.2) routed to h2 as well.
        "$KOI" ctl --ctl "$tmp/koi.sock" "pof_entry_add entry ipv4_fwd 3 match 198.18.1.0/24 { modify_field ipv4.ttl -1 calculate_checksum ipv4.checksum 0 160 counter 3 output 2 }" >/dev/null
        ;;
      koi-p4)
        start_koi examples/pof/kpofvs.p4 --entries examples/pof/kpofvs.entries
        "$KOI" ctl --ctl "$tmp/koi.sock" "table_add ipv4_fwd route_to 198.18.1.0/24 => 2 3" >/dev/null
        ;;
      *) echo "unknown datapath $dp" >&2; exit 2 ;;
    esac
    measure "$dp" "$run" || true
    topo_down
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
