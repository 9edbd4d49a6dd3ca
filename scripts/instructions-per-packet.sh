#!/bin/bash
# Steady-state instructions per packet of `koi bench` on the L2L3-ACL program: callgrind
# counts two runs (2 s and 5 s after the same warm-up) and divides the difference of their
# instructions in the benchmark loop by the difference of their packets, so that start-up,
# warm-up upcalls and native-code compilation cancel out. Instruction counts do not move with
# the machine's load the way cycle counts do: use them to compare two builds.
#   scripts/instructions-per-packet.sh FLOWS [koi bench flags...]
# KOI=path/to/koi picks the binary (default: target/release/koi). Needs valgrind.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KOI=${KOI:-$ROOT/target/release/koi}
FLOWS=${1:?usage: $0 FLOWS [koi bench flags...]}
shift
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for s in 2 5; do
  valgrind --tool=callgrind --callgrind-out-file="$TMP/cg$s.out" "$KOI" bench \
    "$ROOT/examples/l2l3_acl.p4" --entries "$ROOT/examples/l2l3_acl.entries" \
    --flows "$FLOWS" --seconds "$s" --warmup 0.5 --no-profile --json "$@" \
    > "$TMP/bench$s.json" 2> /dev/null
  callgrind_annotate --inclusive=yes "$TMP/cg$s.out" 2> /dev/null > "$TMP/annotate$s.txt"
done
python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
def run(s):
    d = json.load(open(f"{tmp}/bench{s}.json"))
    packets = d["packets"] + d["warmup"]["packets"]
    for line in open(f"{tmp}/annotate{s}.txt"):
        if "Runner::burst " in line and "{{closure}}" not in line:
            return packets, int(line.split()[0].replace(",", ""))
    sys.exit("no Runner::burst in the profile (a release build with symbols is needed)")
(p2, i2), (p5, i5) = run(2), run(5)
print(f"{(i5 - i2) / (p5 - p2):.1f} instructions per packet (over {p5 - p2} packets)")
PY
