#!/bin/bash
# koi bench beside Open vSwitch + DPDK on the L2L3-ACL program, alternating the two in one
# run (the machines are shared and noisy: compare within a run). Needs a release build of koi
# and the baseline set up (`../shared/bench/ovs-dpdk/setup.sh`, root).
#   scripts/bench-vs-ovs.sh [ROUNDS] [SECONDS]
# Prints one line per measurement: cycles per packet (koi: TSC time of the pinned thread, OVS:
# time on the CPU), koi's per-stage split and hit rates, then the slow path of both.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OVS=${OVS_BENCH:-$ROOT/../shared/bench/ovs-dpdk}
ROUNDS=${1:-2}; SECS=${2:-6}
KOI="$ROOT/target/release/koi bench $ROOT/examples/l2l3_acl.p4 --entries $ROOT/examples/l2l3_acl.entries --json"
cycles() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["cycles_per_packet"]), round(d["mpps"], 2), "Mpps")'; }
split() { python3 -c 'import json,sys; d=json.load(sys.stdin); print({k: round(v) for k, v in d["stage_cycles_per_packet"].items()}, {k: round(v, 2) for k, v in d["hit_rate"].items() if v}, "megaflows", d["cache"]["megaflows"])'; }
ovs() { bash "$OVS/bench_ovs.sh" l2l3 "$1" "$2" "$SECS" "$3" 2>&1 | tail -1 | grep -o 'cpu_cyc_pkt=[0-9.]*\|emc_pct=[0-9.]*\|megaflows=[0-9]*' | tr '\n' ' '; }
# 100,000 flows: OVS's pcap written by koi (the frames gen_pcap.py makes; a test checks that).
PCAPS=$(. "$OVS/ovs_env.sh" >/dev/null 2>&1; echo "$A/pcap")
[ -f "$PCAPS/l2l3_100000.pcap" ] || "$ROOT/target/release/koi" bench --write-pcap "$PCAPS/l2l3_100000.pcap" --flows 100000 >/dev/null
for f in 1 100 10000 100000; do
    for r in $(seq "$ROUNDS"); do
        echo "flows=$f round=$r koi                $($KOI --flows "$f" --seconds "$SECS" --no-profile | cycles)"
        echo "flows=$f round=$r koi (per stage)    $($KOI --flows "$f" --seconds "$SECS" | split)"
        echo "flows=$f round=$r koi megaflow only  $($KOI --flows "$f" --seconds "$SECS" --no-profile --no-microflow | cycles)"
        echo "flows=$f round=$r ovs emc+megaflow   $(ovs "$f" on "r$r")"
        echo "flows=$f round=$r ovs megaflow only  $(ovs "$f" off "r$r")"
        echo "flows=$f round=$r ovs emc+smc+mega   $(SMC=true ovs "$f" def "r$r")"
    done
done
slow() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["slow_path_cycles_per_upcall"]), "cycles per upcall")'; }
for r in $(seq "$ROUNDS"); do
    echo "slow path round=$r koi  $($KOI --flows 10000 --seconds 4 --no-microflow --max-megaflows 1 | slow)"
    echo "slow path round=$r ovs  $(bash "$OVS/bench_upcall.sh" l2l3 10000 off "r$r" 2>&1 | grep -o '[0-9.]* us/upcall')"
done
uptime
