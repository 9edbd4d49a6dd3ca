#!/usr/bin/env bash
# koi's main job on its built-in example: builds koi, wires two hosts (network namespaces) to a
# koi switch running examples/l2l3_acl.p4 (the six-table L2L3-ACL pipeline of the Open vSwitch
# baseline) with its entries, pings and transfers data between the hosts through it (routed:
# VLAN pushed and popped, MACs rewritten, TTL decremented), replaces the program while a ping
# runs (`koi ctl load`, state carried over), changes a table with `koi ctl`, prints the
# counters and cleans up. Needs root (network namespaces); without it, it traces
# packets through the program instead.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "Building koi (release; the first build takes a few minutes)..."
cargo build --release --locked -q -p koi
koi="$PWD/target/release/koi"
routed="0200000000fe 020000000100 0800 4500002e 00010000 4011 0000 c6120001 c6131005 04000035001a0000 000000000000000000000000000000000000"

if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "Not root (or no network namespaces): tracing a packet through examples/l2l3_acl.p4 instead."
  "$koi" trace examples/l2l3_acl.p4 --entries examples/l2l3_acl.entries --port 1 --packet "$routed"
  exit 0
fi

# Tools the demo uses: iproute2, ping, ethtool (to turn off checksum offload on the hosts).
missing=()
command -v ping >/dev/null || missing+=(iputils-ping)
command -v ethtool >/dev/null || missing+=(ethtool)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

sw=koi-demo-sw; a=koi-demo-a; b=koi-demo-b
tmp=$(mktemp -d)
koi_pid=""
cleanup() {
  [ -n "$koi_pid" ] && kill -INT "$koi_pid" 2>/dev/null && wait "$koi_pid" 2>/dev/null || true
  for ns in $sw $a $b; do ip netns del $ns 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
for ns in $sw $a $b; do ip netns del $ns 2>/dev/null || true; ip netns add $ns; done

router=02:00:00:00:00:fe
# Host A is the baseline's host 0 (port 1, VLAN 100); host B is host 3 (port 2, VLAN 200).
ip -n $a link add h0 type veth peer name p1 netns $sw
ip -n $b link add h0 type veth peer name p2 netns $sw
ip -n $a link set h0 address 02:00:00:00:01:00
ip -n $b link set h0 address 02:00:00:00:01:03
for ns in $a $b; do
  ip -n $ns link set lo up
  ip -n $ns link set h0 up
  ip netns exec $ns ethtool -K h0 tx off >/dev/null 2>&1 || true
done
ip -n $sw link set p1 up
ip -n $sw link set p2 up
ip -n $a addr add 198.18.0.1/24 dev h0
ip -n $a neigh add 198.18.0.254 lladdr $router dev h0
ip -n $a route add 198.19.16.0/24 via 198.18.0.254
ip -n $b addr add 198.19.16.5/24 dev h0
ip -n $b neigh add 198.19.16.254 lladdr $router dev h0
ip -n $b route add 198.18.0.0/24 via 198.19.16.254

# The baseline's entries, plus a host route to each demo host (next hop = the host itself).
cp examples/l2l3_acl.entries "$tmp/demo.entries"
cat >> "$tmp/demo.entries" <<ENTRIES
table_add routing set_nexthop 198.18.0.1/32 => $router 02:00:00:00:01:00 1
table_add routing set_nexthop 198.19.16.5/32 => $router 02:00:00:00:01:03 2
ENTRIES

echo "== koi run examples/l2l3_acl.p4 --port 1=p1 --port 2=p2 (in namespace $sw)"
ip netns exec $sw "$koi" run examples/l2l3_acl.p4 --port 1=p1 --port 2=p2 \
  --entries "$tmp/demo.entries" --ctl "$tmp/koi.sock" > "$tmp/koi.out" 2> "$tmp/koi.err" &
koi_pid=$!
for _ in $(seq 100); do [ -S "$tmp/koi.sock" ] && break; sleep 0.1; done
[ -S "$tmp/koi.sock" ] || { cat "$tmp/koi.err"; echo "koi did not start"; exit 1; }

echo
echo "== ping from host A (198.18.0.1, port 1) to host B (198.19.16.5, port 2), routed by koi"
ip netns exec $a ping -c 3 -i 0.2 198.19.16.5

echo
echo "== TCP transfer of 4 MiB from A to B through koi"
ip netns exec $b python3 - > "$tmp/received" <<'PY' &
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.19.16.5", 5001)); s.listen(1); s.settimeout(30)
c, _ = s.accept(); n = 0
while True:
    d = c.recv(65536)
    if not d: break
    n += len(d)
print(n)
PY
server=$!
sleep 0.5
ip netns exec $a python3 -c '
import socket, time
s = socket.create_connection(("198.19.16.5", 5001), timeout=30)
t = time.time(); s.sendall(b"k" * (4 << 20)); s.close()
print("sent 4194304 bytes in %.2f s" % (time.time() - t))'
wait $server
echo "host B received $(cat "$tmp/received") bytes"

echo
echo "== koi ctl: the routing table's entries and the ports' counters"
"$koi" ctl --ctl "$tmp/koi.sock" table_num_entries routing
"$koi" ctl --ctl "$tmp/koi.sock" port_show

echo
echo "== koi ctl load: the program replaced while A pings B every 10 ms (its tables carried over)"
ip netns exec $a ping -c 150 -i 0.01 -q 198.19.16.5 > "$tmp/ping.swap" &
pinger=$!
sleep 0.5
"$koi" ctl --ctl "$tmp/koi.sock" load "$PWD/examples/l2l3_acl.p4"
wait $pinger || true
grep -E "packets transmitted" "$tmp/ping.swap"
"$koi" ctl --ctl "$tmp/koi.sock" table_num_entries routing

echo
echo "== koi ctl: an ACL entry that drops ICMP from A to B, then ping again (expect loss)"
"$koi" ctl --ctl "$tmp/koi.sock" table_add acl drop '1&&&0xff' '198.18.0.1&&&0xffffffff' \
  '198.19.16.5&&&0xffffffff' '0&&&0' '0&&&0' '=>' 1
ip netns exec $a ping -c 2 -i 0.2 -W 1 198.19.16.5 || echo "ping failed, as the new ACL entry says"

kill -INT "$koi_pid"; wait "$koi_pid" || true; koi_pid=""
echo
echo "== koi's final counters"
cat "$tmp/koi.out"
