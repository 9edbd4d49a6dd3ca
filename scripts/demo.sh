#!/usr/bin/env bash
# Builds koi and runs it on the built-in example examples/l2l3_acl.p4 (the six-table L2L3-ACL
# pipeline of the Open vSwitch baseline) with its table entries: checks the program, then
# traces two packets through it, one routed and one dropped by the ACL.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p koi
koi=target/release/koi

echo "== koi check examples/l2l3_acl.p4"
"$koi" check examples/l2l3_acl.p4 && echo "valid"

# Host 0 (02:00:00:00:01:00) on port 1 sends to the router MAC: 198.18.0.1 -> 198.19.16.5, UDP 1024 -> 53.
routed="0200000000fe 020000000100 0800 4500002e 00010000 4011 0000 c6120001 c6131005 04000035001a0000 000000000000000000000000000000000000"
# 198.18.200.1 -> 198.19.0.1 UDP 40000 -> 53 matches the first ACL drop entry.
dropped="0200000000fe 020000000100 0800 4500002e 00010000 4011 0000 c612c801 c6130001 9c400035001a0000 000000000000000000000000000000000000"

echo
echo "== koi trace: a routed packet (VLAN pushed and popped, MACs rewritten, TTL 64 -> 63)"
"$koi" trace examples/l2l3_acl.p4 --entries examples/l2l3_acl.entries --port 1 --packet "$routed"
echo
echo "== koi trace: a packet the ACL drops"
"$koi" trace examples/l2l3_acl.p4 --entries examples/l2l3_acl.entries --port 1 --packet "$dropped" | tail -n 4
