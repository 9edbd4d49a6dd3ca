#!/usr/bin/env bash
# Builds koi and runs it on the built-in example program examples/l2l3_acl.p4.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p koi
koi=target/release/koi
echo "== koi check examples/l2l3_acl.p4"
"$koi" check examples/l2l3_acl.p4 && echo "examples/l2l3_acl.p4: valid"
