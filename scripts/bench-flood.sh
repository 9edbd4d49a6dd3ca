#!/usr/bin/env bash
# Overload: what a flood of new flows into one port costs the established flows through koi.
# Needs root; creates its namespaces and veths and always removes them (trap).
#
#   sudo scripts/bench-flood.sh
#   SECONDS_EACH=5 RATE=20000 KOI=target/release/koi RUNS=3 scripts/bench-flood.sh
#
# Setup: koi runs examples/l2l3_acl.p4 with the three routed hosts of the end-to-end tests
# (crates/koi/tests/e2e/mod.rs, THREE_HOSTS) and one more ACL entry that drops UDP to port 7
# from 198.18.0.0/16, on one poll thread pinned to core 1 (`--threads 1`):
#
#   ns h1: h1 ══ s1 ─┐                 ┌─ s2 ══ h2 :ns h2 (receiver)
#                    ns sw: koi run ───┤
#   ns h3: h3 ══ s3 ─┘
#
# Traffic (scripts/veth-traffic.c, built with gcc into a temporary directory; all senders on
# core 0):
# - established flows, RATE frames/s each: E1 from h1 (198.18.0.1 -> 198.19.16.5:5001, the
#   flood's port) and E2 from h3 (198.20.0.1 -> 198.19.16.5:5002, another port), counted by
#   UDP port (and reordering by sequence number) on h2;
# - the flood, as fast as one core sends, from h1, of one of two kinds (FLOOD):
#   - `tuples`: every frame a new 5-tuple (source address and port change each frame) to
#     198.19.16.5:7, which an ACL entry drops; as koi's megaflows match only the bits the
#     program's decisions read, these few share a handful of megaflows: cache hits;
#   - `misses` (the default): the worst case, every frame a slow-path run: frames go to
#     MISS_MACS (1,000) destinations in turn, each a `switching` entry of its own (to port 9,
#     which does not exist), and koi runs with `--max-megaflows 256`, so that the flood's
#     megaflows churn and nearly every frame misses;
# - throughput: E2 as fast as it can be sent (PPS 0), without and with the flood.
# Each run reports, without and with the flood: E1's and E2's loss and reordering, E2's
# forwarded rate at full speed, and koi's counters over the flood (frames received, slow-path
# runs and their average time, misses dropped at a full queue, ring_full drops) and whether
# `koi ctl stats` and a metrics scrape answered during it.
#
# Knobs (environment): SECONDS_EACH (5), RATE (20000), RUNS (1), FLOOD (misses),
# MISS_MACS (1000), KOI (target/release/koi,
# built with cargo build --release -p koi unless KOI is given), EXTRA (more `koi run`
# arguments, e.g. "--upcall-rate 50000"), PERF (a file: `perf record` of koi during the flood
# with the established flows paced).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${SECONDS_EACH:-5}
RATE=${RATE:-20000}
RUNS=${RUNS:-1}
EXTRA=${EXTRA:-}
FLOOD=${FLOOD:-misses}
MISS_MACS=${MISS_MACS:-1000}
case "$FLOOD" in
tuples) NEW=1 ;;
misses) NEW=$MISS_MACS; EXTRA="--max-megaflows 256 $EXTRA" ;;
*) echo "FLOOD is tuples or misses" >&2; exit 2 ;;
esac
. scripts/koi-release.sh
tmp=$(mktemp -d)
tag="kf$$"
SW="${tag}sw"
koi_pid=""
cleanup() {
  [ -n "$koi_pid" ] && kill "$koi_pid" 2>/dev/null && wait "$koi_pid" 2>/dev/null
  for ns in "$SW" "${tag}h1" "${tag}h2" "${tag}h3"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
gcc -O2 -o "$tmp/vt" scripts/veth-traffic.c

ROUTER=02:00:00:00:00:fe
MAC1=02:00:00:00:01:00
MAC2=02:00:00:00:01:03
MAC3=02:00:00:00:01:10
ip netns add "$SW"
ip -n "$SW" link set lo up
for i in 1 2 3; do
  ip netns add "${tag}h$i"
  ip -n "${tag}h$i" link add "h$i" type veth peer name "s$i" netns "$SW"
  sysctl -q -w "net.ipv6.conf.all.disable_ipv6=1" >/dev/null 2>&1 || true
  ip netns exec "${tag}h$i" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
  ip -n "${tag}h$i" link set "h$i" up
  ip -n "$SW" link set "s$i" up
done
ip -n "${tag}h2" link set h2 address "$MAC2"

{
  cat examples/l2l3_acl.entries
  cat <<EOF
table_add vlan_ingress push_vlan 3 0 0&&&0 => 300 10
table_add vlan_ingress tagged 3 1 300&&&0xfff => 10
table_add switching to_router 02:00:00:00:00:fe 300 =>
table_add routable routable_ok 02:00:00:00:01:10 02:00:00:00:00:fe 300 =>
table_add routing set_nexthop 198.18.0.1/32 => 02:00:00:00:00:fe 02:00:00:00:01:00 1
table_add routing set_nexthop 198.19.16.5/32 => 02:00:00:00:00:fe 02:00:00:00:01:03 2
table_add routing set_nexthop 198.20.0.1/32 => 02:00:00:00:00:fe 02:00:00:00:01:10 3
table_add vlan_egress pop_vlan 1 300 =>
table_add vlan_egress pop_vlan 2 300 =>
table_add vlan_egress pop_vlan 3 100 =>
table_add vlan_egress pop_vlan 3 200 =>
table_add vlan_egress pop_vlan 3 300 =>
table_add acl drop 17&&&0xff 198.18.0.0&&&0xffff0000 198.19.16.5&&&0xffffffff 0&&&0 7&&&0xffff => 1
EOF
  if [ "$FLOOD" = misses ]; then
    for n in $(seq 0 $((MISS_MACS - 1))); do
      printf 'table_add switching switch_to 02:aa:00:00:%02x:%02x 100 => 9\n' $((n >> 8)) $((n & 255))
    done
  fi
} >"$tmp/entries"

in_ns() { ip netns exec "$1" "${@:2}"; }
sender() { in_ns "$1" taskset -c 0 "$tmp/vt" flow "${@:2}"; }
ctl() { "$KOI" ctl --ctl "$tmp/koi.sock" "$@"; }
stat() { # KEY TEXT: the number after KEY in TEXT
  tr ' ,' '\n\n' <<<"$2" | grep -A1 -x "$1" | tail -n 1
}

start_koi() {
  # shellcheck disable=SC2086
  # (Not through in_ns: $! is then koi's pid, as `ip netns exec` and taskset exec it.)
  ip netns exec "$SW" taskset -c 1 "$KOI" run examples/l2l3_acl.p4 --entries "$tmp/entries" \
    --port 1=s1 --port 2=s2 --port 3=s3 --threads 1 --grpc none --ctl "$tmp/koi.sock" \
    --metrics 127.0.0.1:9109 $EXTRA >"$tmp/koi.out" 2>"$tmp/koi.err" &
  koi_pid=$!
  for _ in $(seq 100); do ctl stats >/dev/null 2>&1 && return; sleep 0.1; done
  echo "koi did not start:" >&2
  cat "$tmp/koi.err" >&2
  exit 1
}

# Runs the established flows (at RATE, or E2 alone at full speed with "full") for
# SECONDS_EACH, with the flood alongside if $1 is "flood"; prints the receiver's lines.
phase() {
  local flood=$1 mode=$2
  in_ns "${tag}h2" "$tmp/vt" recvudp h2 $((SECONDS_EACH + 2)) 5001 5002 >"$tmp/rx" &
  local rx=$!
  sleep 0.3
  local fl=""
  if [ "$flood" = flood ]; then
    sender "${tag}h1" h1 "$ROUTER" "$MAC1" 198.18.0.1 198.19.16.5 7 0 "$((SECONDS_EACH + 1))" "$NEW" >"$tmp/flood" &
    fl=$!
    sleep 0.5
  fi
  if [ "$mode" = full ]; then
    sender "${tag}h3" h3 "$ROUTER" "$MAC3" 198.20.0.1 198.19.16.5 5002 0 "$SECONDS_EACH" >"$tmp/e2"
    : >"$tmp/e1"
  else
    sender "${tag}h1" h1 "$ROUTER" "$MAC1" 198.18.0.1 198.19.16.5 5001 "$RATE" "$SECONDS_EACH" >"$tmp/e1" &
    local e1=$!
    sender "${tag}h3" h3 "$ROUTER" "$MAC3" 198.20.0.1 198.19.16.5 5002 "$RATE" "$SECONDS_EACH" >"$tmp/e2" &
    local e2=$!
    if [ -n "${PERF:-}" ] && [ "$flood" = flood ]; then
      perf record -q -e cpu-clock -F 999 -g -p "$koi_pid" -o "$PERF" -- sleep $((SECONDS_EACH - 1)) >/dev/null 2>&1 &
    fi
    # The control socket and the metrics endpoint, asked during the run.
    answered=0
    slowest=0
    for _ in 1 2 3; do
      sleep 1
      local t0 ok=1
      t0=$(date +%s%N)
      ctl stats >/dev/null 2>&1 || { ok=0; echo "  (koi ctl stats did not answer)" >&2; }
      # (Read whole, not piped into grep -q: with pipefail, curl's broken pipe would fail it.)
      local scraped
      scraped=$(in_ns "$SW" curl -s -m 5 http://127.0.0.1:9109/metrics || true)
      grep -q koi_upcalls_total <<<"$scraped" ||
        { ok=0; echo "  (the metrics scrape did not answer within 5 s)" >&2; }
      local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
      [ "$ms" -gt "$slowest" ] && slowest=$ms
      answered=$((answered + ok))
    done
    wait "$e1" "$e2"
  fi
  [ -n "$fl" ] && wait "$fl"
  wait "$rx"
}

loss() { # SENT_FILE DPORT
  local sent rx
  sent=$(stat "sent=" "$(sed 's/=/= /g' "$1")")
  rx=$(grep "dport=$2 " "$tmp/rx" | sed 's/.*rx=\([0-9]*\).*/\1/')
  awk -v s="$sent" -v r="$rx" 'BEGIN { if (s > 0) printf "%d/%d lost (%.2f%%)", s - r, s, 100 * (s - r) / s; else print "-" }'
}
reordered() { grep "dport=$1 " "$tmp/rx" | sed 's/.*reordered=\([0-9]*\).*/\1/'; }
rate() { # DPORT: received per second
  grep "dport=$1 " "$tmp/rx" | sed 's/.*rx=\([0-9]*\).*/\1/' | awk -v t="$SECONDS_EACH" '{ printf "%.0f", $1 / t }'
}

echo "koi: $KOI ${EXTRA:+($EXTRA) }; flood of $FLOOD; $SECONDS_EACH s each, established flows at $RATE frames/s"
for run in $(seq "$RUNS"); do
  start_koi
  # Warm-up: the established flows' megaflows.
  sender "${tag}h1" h1 "$ROUTER" "$MAC1" 198.18.0.1 198.19.16.5 5001 1000 0.5 >/dev/null
  sender "${tag}h3" h3 "$ROUTER" "$MAC3" 198.20.0.1 198.19.16.5 5002 1000 0.5 >/dev/null

  phase none paced
  base="E1 (flood's port) $(loss "$tmp/e1" 5001), reordered $(reordered 5001); E2 (other port) $(loss "$tmp/e2" 5002), reordered $(reordered 5002); answered $answered/3"
  before=$(ctl stats)
  misses0=$(ctl cache_show | sed -n 's/^  misses *\([0-9]*\).*/\1/p' | head -n 1)
  phase flood paced
  after=$(ctl stats)
  misses1=$(ctl cache_show | sed -n 's/^  misses *\([0-9]*\).*/\1/p' | head -n 1)
  flood="E1 $(loss "$tmp/e1" 5001), reordered $(reordered 5001); E2 $(loss "$tmp/e2" 5002), reordered $(reordered 5002); ctl and metrics answered $answered/3 (slowest pair ${slowest} ms)"
  offered=$(sed 's/.*pps=\([0-9]*\).*/\1/' "$tmp/flood")
  num() { # SED_EXPR TEXT: the number, 0 if absent (a koi without the counter)
    local v
    v=$(sed -n "$1" <<<"$2")
    echo "${v:-0}"
  }
  runs=$(($(num 's/^slow path: \([0-9]*\) runs.*/\1/p' "$after") - $(num 's/^slow path: \([0-9]*\) runs.*/\1/p' "$before")))
  rx=$(($(num 's/^packets in: \([0-9]*\).*/\1/p' "$after") - $(num 's/^packets in: \([0-9]*\).*/\1/p' "$before")))
  each=$(num 's/^slow path: [0-9]* runs, \([0-9]*\) us each.*/\1/p' "$after")
  d() {
    local a b
    a=$(stat "$1" "$after")
    b=$(stat "$1" "$before")
    echo $((${a:-0} - ${b:-0}))
  }
  counters="flood offered $offered frames/s; koi received $((rx / SECONDS_EACH)) frames/s (all ports), $(((${misses1:-0} - ${misses0:-0}) / SECONDS_EACH)) cache misses/s run by the slow path, of them $((runs / SECONDS_EACH))/s from the queues (${each} us each on average since start), dropped at a full queue $(d upcall_queue_full), ring_full $(d ring_full)"
  phase none full
  full0=$(rate 5002)
  phase flood full
  full1=$(rate 5002)
  kill "$koi_pid" 2>/dev/null && wait "$koi_pid" 2>/dev/null || true
  koi_pid=""
  echo "run $run:"
  echo "  no flood:   $base"
  echo "  flood:      $flood"
  echo "  counters:   $counters"
  echo "  E2 at full speed: $full0 frames/s without the flood, $full1 with it ($(awk -v a="$full0" -v b="$full1" 'BEGIN { if (a > 0) printf "%.0f%%", 100 * b / a }'))"
done
