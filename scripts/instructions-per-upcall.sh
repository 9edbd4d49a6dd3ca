#!/bin/bash
# Instructions per slow-path upcall on the L2L3-ACL program: callgrind counts the
# `interp_l2l3 upcall` benchmark (the datapath's caches emptied before every packet, so that
# each packet is a traced interpreter run, a compiled program and a megaflow install) and
# divides the instructions under `Datapath::interp_path` by the upcalls it made. Instruction
# counts do not move with the machine's load the way cycle counts do: use them to compare two
# builds. Prints the count and the largest inclusive costs per upcall below it.
#   scripts/instructions-per-upcall.sh [FLOWS]    (default 2000)
# KEEP=FILE keeps callgrind's profile there (for callgrind_annotate). MODE=upcall-traced runs
# every upcall's tracer (no trace memo: what a run on a way not seen before costs).
# Needs valgrind.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FLOWS=${1:-2000}
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 2; }
cd "$ROOT"
cargo bench -q -p koi-conformance --bench interp_l2l3 --no-run 2>/dev/null
BIN=$(ls -t target/release/deps/interp_l2l3-* | grep -v '\.d$' | head -1)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" "$BIN" "$FLOWS" 0.5 "${MODE:-upcall}" --bench \
  > /dev/null 2> "$TMP/err"
if [ -n "${KEEP:-}" ]; then cp "$TMP/cg.out" "$KEEP"; fi
UPCALLS=$(grep -o "misses: [0-9]*" "$TMP/err" | head -1 | grep -o "[0-9]*")
callgrind_annotate --inclusive=yes "$TMP/cg.out" 2> /dev/null > "$TMP/annotate.txt"
python3 - "$TMP/annotate.txt" "$UPCALLS" <<'PY'
import re, sys
path, upcalls = sys.argv[1], int(sys.argv[2])
rows = []
for line in open(path):
    m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(\S.*)", line)
    if m:
        rows.append((int(m.group(1).replace(",", "")), m.group(2)))
top = [n for n, name in rows if "Datapath::interp_path [" in name]
if not top:
    sys.exit("no Datapath::interp_path in the profile (a release build with symbols is needed)")
print(f"{top[0] / upcalls:.0f} instructions per upcall (over {upcalls} upcalls)")
best = {}
for n, name in rows:
    for key in ("Interpreter::run", "DpObserver::start_tracer", "Tracer::new", "Tracer::stmt",
                "Tracer::finish", "Matcher::lookup", "FlowCache<V>::install", "memo::replay",
                "TraceMemo::find"):
        if name.split(" [")[0].endswith(key):
            best[key] = max(best.get(key, 0), n)
for key, n in sorted(best.items(), key=lambda kv: -kv[1]):
    print(f"  {n / upcalls:8.0f}  {key}")
PY
