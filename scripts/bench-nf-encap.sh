#!/usr/bin/env bash
# koi bench of the tunnelling network functions (examples/mpls, upf, bng) at 10,000 flows,
# each beside L2L3-ACL at 10,000 flows in the same run, ROUNDS times alternated. Prints a
# table row per benchmark and round: cycles per packet, the compiled hit rate, megaflows,
# guarded megaflows, replayed megaflows and uncacheable runs (docs/benchmarks.md, "Network
# functions").
#
#   scripts/bench-nf-encap.sh            # ROUNDS=3 SECONDS_=3 WARMUP=2 FLOWS=10000
#
# Needs a release build (cargo build --release) and the Python venv (scripts/py-venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECONDS_=${SECONDS_:-3}
WARMUP=${WARMUP:-2}
FLOWS=${FLOWS:-10000}
KOI=${KOI:-target/release/koi}
PY=${KOI_PYTHON:-$(./scripts/py-venv.sh)}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
echo "traffic and reports in $OUT" >&2

for r in pe1 p pe2; do
    "$PY" examples/mpls/bench_pcap.py --role "$r" --flows "$FLOWS" "$OUT/mpls_$r.pcap"
done
for n in 100 1000; do
    "$PY" examples/upf/bench_pcap.py --flows "$FLOWS" --sessions "$n" \
        "$OUT/upf$n.pcap" "$OUT/upf$n.entries"
    "$PY" examples/bng/bench_pcap.py --flows "$FLOWS" --subscribers "$n" \
        "$OUT/bng$n.pcap" "$OUT/bng$n.entries"
done

bench() { # NAME PROGRAM ENTRIES (PCAP | --flows N)
    local name=$1 prog=$2 entries=$3
    shift 3
    "$KOI" bench "$prog" --entries "$entries" "$@" --seconds "$SECONDS_" --warmup "$WARMUP" \
        --json >"$OUT/$name.$round.json"
    "$PY" - "$OUT/$name.$round.json" "$name" "$round" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
c = v["cache"]
print("| %s | %s | %.0f | %.1f%% | %d | %d | %d | %d |" % (
    sys.argv[2], sys.argv[3], v["cycles_per_packet"] or 0, 100 * v["hit_rate"]["compiled"],
    c["megaflows"], c["guarded"], sum(v["replayed"].values()), v["warmup"]["uncacheable"]))
EOF
}

echo "| benchmark | round | cycles/packet | compiled | megaflows | guarded | replayed | uncacheable |"
echo "|---|---|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
    bench l2l3_acl examples/l2l3_acl.p4 examples/l2l3_acl.entries --flows "$FLOWS"
    for r in pe1 p pe2; do
        bench "mpls_$r" examples/mpls/mpls.p4 "examples/mpls/$r.entries" --pcap "$OUT/mpls_$r.pcap"
    done
    for n in 100 1000; do
        bench "upf_$n" examples/upf/upf.p4 "$OUT/upf$n.entries" --pcap "$OUT/upf$n.pcap"
        bench "bng_$n" examples/bng/bng.p4 "$OUT/bng$n.entries" --pcap "$OUT/bng$n.pcap"
    done
done
