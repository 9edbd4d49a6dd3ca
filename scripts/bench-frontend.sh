#!/usr/bin/env bash
# Speed of koi's frontend (a benchmark, not a test): `koi check` on the L2L3-ACL example, and
# on every program of the p4c samples corpus. Release build.
# usage: scripts/bench-frontend.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
cargo build --release --locked -q -p koi
koi=target/release/koi
corpus="${KOI_CORPUS:-../shared/corpus}"
ms() { date +%s%N; }

t0=$(ms)
for _ in $(seq "$runs"); do "$koi" check examples/l2l3_acl.p4; done
t1=$(ms)
echo "koi check examples/l2l3_acl.p4: $(( (t1 - t0) / runs / 1000 )) us per run (mean of $runs, process start included)"

if [ -d "$corpus/samples" ]; then
  n=0; ok=0
  t0=$(ms)
  for f in "$corpus"/samples/*.p4; do
    n=$((n + 1))
    if "$koi" check -I "$corpus/../reference/p4include" "$f" >/dev/null 2>&1; then ok=$((ok + 1)); fi
  done
  t1=$(ms)
  echo "koi check on $n samples: $(( (t1 - t0) / 1000000 )) ms in all ($ok accepted)"
else
  echo "corpus absent: samples timing skipped"
fi
