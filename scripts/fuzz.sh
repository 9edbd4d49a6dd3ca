#!/usr/bin/env bash
# Runs koi's fuzz targets for a bounded time (default 60 s each) on a seed corpus made from the
# p4c samples. Needs a nightly toolchain (cargo-fuzz is installed when missing).
# usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz: no nightly toolchain: fuzzing skipped"
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo install --locked cargo-fuzz@0.13.2
fi
seeds=fuzz/corpus/frontend
mkdir -p "$seeds"
corpus="${KOI_CORPUS:-../shared/corpus}"
if [ -d "$corpus/samples" ]; then
  cp -n "$corpus"/samples/*.p4 "$seeds"/ 2>/dev/null || true
fi
cp -n examples/*.p4 "$seeds"/ 2>/dev/null || true
echo "== fuzz frontend for ${secs}s on $(ls "$seeds" | wc -l) seeds"
cargo +nightly fuzz run frontend "$seeds" -- -max_total_time="$secs" -max_len=65536 -rss_limit_mb=4096 -timeout=20
