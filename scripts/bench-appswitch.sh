#!/usr/bin/env bash
# AppSwitch beside twemproxy, and beside clients that hash keys themselves (the floor), on
# one machine: a client, three memcached servers (UDP and TCP on, one thread each) and a
# proxy host, each in a network namespace of its own, all behind one koi switch.
#
# - appswitch: koi runs examples/appswitch (the controller from the same pool file):
#   mcload -> the service address over UDP, binary protocol; one switch hop each way.
# - twemproxy: koi runs examples/l2.p4 (plain switching), Debian's nutcracker on the proxy
#   host: mcload -> nutcracker over TCP, ASCII protocol (what twemproxy speaks); the proxy
#   adds a hop through the switch each way.
# - floor: the same plain switch, mcload sends each request straight to its server over UDP
#   (binary), hashing keys itself.
#
# koi's ports are AF_XDP by default (PORT_KIND=xdp:; PORT_KIND= for AF_PACKET).
#
# For each, keys of 16, 80 and 250 bytes, 50% GETs / 50% SETs of 32-byte values over 10,000
# preloaded keys: closed loop with CLIENTS clients (requests/s and latency), and open loop
# at RATE requests/s (latency at a load every set-up carries). Prints one line per run and a
# table at the end. Needs root, memcached, nutcracker, ethtool (installed with apt if
# missing). Benchmarks are never tests: nothing here asserts a speed.
#
# For the closed loop it also reports the CPU time koi (and, for twemproxy, nutcracker) spent
# per request: "at the same CPU".
#
# STATS=1 prints the switch's `koi ctl stats` after each run (slow-path runs, caches).
#
# RESULTS=FILE keeps the runs' mcload JSON (one line per set-up and key length) and PLOT=FILE
# draws their latency percentiles as an SVG (scripts/appswitch-results.py).
#
#   SECONDS_EACH=3 CLIENTS=8 RATE=5000 scripts/bench-appswitch.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH="${SECONDS_EACH:-3}"
CLIENTS="${CLIENTS:-8}"
RATE="${RATE:-5000}"
KEYS="${KEYS:-10000}"
KEY_LENS="${KEY_LENS:-16 80 250}"
# How koi opens its ports: "xdp:" (AF_XDP: each frame handed over at once) or "" (AF_PACKET,
# whose TPACKET_V3 ring hands frames over a block at a time: up to 2 ms late at low load).
PORT_KIND="${PORT_KIND-xdp:}"

[ "$(id -u)" = 0 ] || { echo "bench-appswitch: needs root (network namespaces)" >&2; exit 1; }
missing=()
for t in memcached nutcracker ethtool; do command -v "$t" >/dev/null || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cargo build --release -q -p koi -p koi-mcload
koi="$PWD/target/release/koi"
mcload="$PWD/target/release/mcload"
py="$(./scripts/py-venv.sh)"

tag="kab$$"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.5
  for n in sw c m1 m2 m3 px; do ip netns del "$tag$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# name, address, MAC, switch port
hosts=("c 10.0.0.1 02:00:00:00:00:01 1" "m1 10.0.0.11 02:00:00:00:00:0b 2"
       "m2 10.0.0.12 02:00:00:00:00:0c 3" "m3 10.0.0.13 02:00:00:00:00:0d 4"
       "px 10.0.0.50 02:00:00:00:00:50 5")
vip=10.0.0.100
vip_mac=02:00:00:00:00:64

ip netns add "${tag}sw"
ip -n "${tag}sw" link set lo up
for h in "${hosts[@]}"; do
  read -r n addr mac port <<<"$h"
  ip netns add "$tag$n"
  ip -n "$tag$n" link add vh type veth peer name "s$port" netns "${tag}sw"
  ip -n "$tag$n" link set vh address "$mac"
  ip -n "$tag$n" addr add "$addr/24" dev vh
  ip -n "$tag$n" link set vh up
  ip -n "$tag$n" link set lo up
  ip -n "${tag}sw" link set "s$port" up
  # Checksums computed by the sender (koi rewrites the bytes it sees).
  ip netns exec "$tag$n" ethtool -K vh tx off >/dev/null
done
# Static neighbours everywhere (the plain switch floods nothing).
for h in "${hosts[@]}"; do
  read -r n _ _ _ <<<"$h"
  for o in "${hosts[@]}"; do
    read -r _ oaddr omac _ <<<"$o"
    ip -n "$tag$n" neigh replace "$oaddr" lladdr "$omac" dev vh
  done
  ip -n "$tag$n" neigh replace "$vip" lladdr "$vip_mac" dev vh
done
declare -A addr_of
for h in "${hosts[@]}"; do
  read -r n a _ _ <<<"$h"
  addr_of[$n]="$a"
done
for m in m1 m2 m3; do
  addr="${addr_of[$m]}"
  ip netns exec "$tag$m" memcached -u root -l "$addr" -p 11211 -U 11211 -t 1 -m 256 &
  pids+=($!)
done
servers="   - 10.0.0.11:11211:1
   - 10.0.0.12:11211:1
   - 10.0.0.13:11211:1"
printf 'bench:\n  listen: 10.0.0.50:22121\n  hash: crc32a\n  distribution: ketama\n  servers:\n%s\n' \
  "$servers" >"$work/proxy.yml"
printf 'bench:\n  listen: %s:11211\n  hash: crc32a\n  distribution: ketama\n  servers:\n%s\n' \
  "$vip" "$servers" >"$work/switch.yml"
ip netns exec "${tag}px" nutcracker -c "$work/proxy.yml" -p "$work/nc.pid" -o "$work/nc.log" -s 22222 &
ncpid=$!  # (ip netns exec execs nutcracker: the same process)
pids+=($ncpid)

ports=()
host_args=()
: >"$work/l2.entries"
for h in "${hosts[@]}"; do
  read -r n addr mac port <<<"$h"
  ports+=(--port "$port=${PORT_KIND}s$port")
  host_args+=(--host "$addr=$mac@$port")
  echo "table_add dmac forward $mac => $port" >>"$work/l2.entries"
done

wait_for() { # file text seconds
  for _ in $(seq 1 $(($3 * 10))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "bench-appswitch: timed out waiting for '$2' in $1:" >&2; cat "$1" >&2; return 1
}

results="$work/results"
: >"$results"
cpu="$work/cpu"
: >"$cpu"
# CPU time (user + system, clock ticks) of the processes whose pids are given.
ticks() {
  local t=0 p f
  for p in "$@"; do
    read -r -a f <"/proc/$p/stat" || continue
    t=$((t + f[13] + f[14]))
  done
  echo "$t"
}
hz="$(getconf CLK_TCK)"
# The processes that balance in the current set-up: koi (always), and nutcracker for
# twemproxy. measure() reports their CPU time per request in the closed loop.
koi_pids=()
proxy_pids=()
measure() { # label transport protocol target...
  local label="$1" transport="$2" protocol="$3"; shift 3
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  for k in $KEY_LENS; do
    local base=(--transport "$transport" --protocol "$protocol" --keys "$KEYS" --key-len "$k"
                --value-len 32 --gets 0.5 --json)
    local common=("${base[@]}" --seconds "$SECONDS_EACH" --warmup 1)
    local closed open k0 p0 k1 p1
    # (The preload runs first, outside the CPU accounting: its own run.)
    ip netns exec "${tag}c" "$mcload" "${targets[@]}" "${base[@]}" --clients "$CLIENTS" \
      --preload --seconds 0.2 --warmup 0 >/dev/null
    k0="$(ticks "${koi_pids[@]}")"; p0="$(ticks "${proxy_pids[@]}")"
    closed="$(ip netns exec "${tag}c" "$mcload" "${targets[@]}" "${common[@]}" --clients "$CLIENTS")"
    k1="$(ticks "${koi_pids[@]}")"; p1="$(ticks "${proxy_pids[@]}")"
    python3 - "$label" "$k" "$closed" "$((k1 - k0))" "$((p1 - p0))" "$hz" >>"$cpu" <<'PY'
import json, sys
label, k, closed, kt, pt, hz = sys.argv[1:]
answered = json.loads(closed)["answered"] or 1
us = lambda ticks: int(ticks) * 1e6 / int(hz) / answered
print(f"| {label} | {k} | {us(kt):.1f} | {us(pt):.1f} | {us(int(kt) + int(pt)):.1f} |")
PY
    open="$(ip netns exec "${tag}c" "$mcload" "${targets[@]}" "${common[@]}" --clients 4 --rate "$RATE")"
    echo "$label key $k closed $closed"
    echo "$label key $k open@$RATE $open"
    # STATS=1: what the switch counted so far (slow-path runs and their cost, caches).
    if [ -n "${STATS:-}" ] && [ -n "${ctl_sock:-}" ]; then
      "$koi" ctl --ctl "$ctl_sock" stats | sed "s/^/  $label $k stats: /"
    fi
    echo "$label $k $closed $open" >>"$results"
  done
}

# Plain switching: the floor and twemproxy.
ip netns exec "${tag}sw" "$koi" run examples/l2.p4 --entries "$work/l2.entries" "${ports[@]}" \
  --ctl "$work/l2.sock" --grpc none >"$work/l2.out" 2>&1 &
kpid=$!
pids+=($kpid)
wait_for "$work/l2.out" "forwarding" 30
koi_pids=("$kpid")
ctl_sock="$work/l2.sock"
measure floor udp binary 10.0.0.11:11211 10.0.0.12:11211 10.0.0.13:11211
proxy_pids=("$ncpid")
measure twemproxy tcp ascii 10.0.0.50:22121
proxy_pids=()
kill -INT "$kpid"; wait "$kpid" 2>/dev/null || true

# The switch balances.
ip netns exec "${tag}sw" env PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python "$py" \
  examples/appswitch/appswitch --config "$work/switch.yml" --koi "$koi" "${ports[@]}" \
  "${host_args[@]}" --vip-mac "$vip_mac" --ctl "$work/as.sock" >"$work/as.out" 2>&1 &
apid=$!
pids+=($apid)
wait_for "$work/as.out" "ready:" 60
koi_pids=($(pgrep -f -- "--grpc 127.0.0.1:9559 --cpu-port 255" || true))
ctl_sock="$work/as.sock"
measure appswitch udp binary "$vip:11211"
kill -TERM "$apid"; wait "$apid" 2>/dev/null || true

echo
echo "| set-up | key bytes | closed loop ($CLIENTS clients): requests/s, p50 / p99 us | open loop at $RATE/s: p50 / p99 / p99.9 us, lost |"
echo "|---|---|---|---|"
python3 scripts/appswitch-results.py table "$results"
echo
echo "CPU per request in the closed loop (user + system, us, counted in ${hz} Hz ticks):"
echo "| set-up | key bytes | koi | nutcracker | together |"
echo "|---|---|---|---|---|"
cat "$cpu"
if [ -n "${RESULTS:-}" ]; then cp "$results" "$RESULTS"; fi
if [ -n "${PLOT:-}" ]; then
  python3 scripts/appswitch-results.py plot "$results" "$PLOT" \
    "memcached latency through koi: $KEYS keys, $CLIENTS clients closed loop, $RATE/s open loop"
  echo "latency plot: $PLOT"
fi
