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

# Disk: a test build with incremental caches and line tables came to 7 GB, more than a CI
# machine may have free (a run failed with "No space left on device"). Without both it is
# about 2.4 GB; the checks lose nothing (panics still name file and line).
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=0
echo "disk: $(df -h . | awk 'NR==2 {print $4 " free of " $2}')"

corpus="${KOI_CORPUS:-../shared/corpus}"
if [ -d "$corpus" ]; then
  KOI_CORPUS="$(cd "$corpus" && pwd)"
  export KOI_CORPUS
  echo "p4c corpus: $KOI_CORPUS (corpus tests run)"
else
  unset KOI_CORPUS
  echo "p4c corpus: ABSENT ($corpus not found): the corpus tests are skipped (each prints a SKIP line)"
fi

# End-to-end tests (crates/koi/tests/e2e_*.rs): koi between network namespaces (root), with
# ping, ethtool, scapy, p4lang's PTF, memcached and twemproxy (nutcracker), nftables, iperf3. As root (CI) they must run: KOI_E2E_REQUIRED makes a
# missing prerequisite fail them instead of skipping them. The Python venvs are created once
# and reused (scripts/py-venv.sh): target/py-venv (scapy, ptf, the p4runtime stubs, finsy),
# found by the tests through KOI_PYTHON, and target/py-venv-shell (p4runtime-shell, which pins
# older protobuf), through KOI_PYTHON_SHELL (crates/koi/tests/p4rt_*.rs).
if [ "$(id -u)" = 0 ]; then
  missing=()
  command -v ip >/dev/null || missing+=(iproute2)
  command -v ping >/dev/null || missing+=(iputils-ping)
  command -v ethtool >/dev/null || missing+=(ethtool)
  # Real memcached servers and twemproxy, for the AppSwitch example's placement test.
  command -v memcached >/dev/null || missing+=(memcached)
  command -v nutcracker >/dev/null || missing+=(nutcracker)
  # nftables (the firewall example is checked against Linux conntrack) and iperf3 (the rate
  # limiter example's rates are measured with it).
  command -v nft >/dev/null || missing+=(nftables)
  command -v iperf3 >/dev/null || missing+=(iperf3)
  # A C compiler: user extern functions in C are built with `cc` (crates/koi-native; the
  # tests in crates/koi-conformance/tests/native_externs.rs and the corpus's
  # ebpf_conntrack_extern).
  command -v cc >/dev/null || missing+=(gcc libc6-dev)
  # A C++ compiler: BMv2 extern modules (C++) are built with `c++` (crates/koi-native's
  # koi_bm test, native_externs.rs's BMv2 tests).
  command -v c++ >/dev/null || missing+=(g++)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]} (end-to-end tests)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  KOI_E2E_REQUIRED=1
  export KOI_E2E_REQUIRED
  KOI_PYTHON="$(./scripts/py-venv.sh)"
  KOI_PYTHON_SHELL="$(./scripts/py-venv.sh shell)"
  export KOI_PYTHON KOI_PYTHON_SHELL
  echo "end-to-end tests: required (root); python: $KOI_PYTHON, p4runtime-shell: $KOI_PYTHON_SHELL"
elif KOI_PYTHON="$(./scripts/py-venv.sh)"; then
  export KOI_PYTHON
  echo "end-to-end tests: not root, the network namespace tests are skipped (they say SKIP)"
else
  unset KOI_PYTHON KOI_PYTHON_SHELL
  echo "end-to-end tests: not root and no Python venv: they are skipped (they say SKIP)"
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
echo "disk after the tests: $(du -sh target 2>/dev/null | cut -f1) in target, $(df -h . | awk 'NR==2 {print $4}') free"
echo "== fuzz (bounded: ${KOI_FUZZ_SECONDS:-60}s per target)"
./scripts/fuzz.sh "${KOI_FUZZ_SECONDS:-60}"
