#!/usr/bin/env bash
# Sets up and runs every koi test: formatting, lints, unit and integration tests, and the p4c
# conformance corpus when it is present (../shared/corpus, or $KOI_CORPUS).
set -euo pipefail
cd "$(dirname "$0")/.."

# Rust components the checks need (present with a rustup toolchain; added when missing).
if command -v rustup >/dev/null 2>&1; then
  for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
  done
fi

corpus="${KOI_CORPUS:-../shared/corpus}"
if [ -d "$corpus" ]; then
  KOI_CORPUS="$(cd "$corpus" && pwd)"
  export KOI_CORPUS
  echo "p4c corpus: $KOI_CORPUS (corpus tests run)"
else
  unset KOI_CORPUS
  echo "p4c corpus: ABSENT ($corpus not found): the corpus tests are skipped"
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
echo "== fuzz (bounded: ${KOI_FUZZ_SECONDS:-60}s per target)"
./scripts/fuzz.sh "${KOI_FUZZ_SECONDS:-60}"
