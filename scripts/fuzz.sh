#!/usr/bin/env bash
# Runs koi's fuzz targets for a bounded time (default 60 s each) on seed corpora made from the
# p4c corpus: `frontend` (preprocessor + parser + type checker on P4 text, seeded with the
# samples) and `packets` (packets x programs through the interpreter and through the cached
# datapath with native code, compared; seeded with the STF files' packets). Needs a nightly
# toolchain (cargo-fuzz is installed into target/tools when missing, not into ~/.cargo).
# usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz: no nightly toolchain: fuzzing skipped"
  exit 0
fi
# cargo-fuzz lives in the repository's target directory, not in the user's ~/.cargo/bin.
export PATH="$PWD/target/tools/bin:$PATH"
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo install --locked --root target/tools cargo-fuzz@0.13.2
fi
corpus="${KOI_CORPUS:-../shared/corpus}"

seeds=fuzz/corpus/frontend
mkdir -p "$seeds"
if [ -d "$corpus/samples" ]; then
  cp -n "$corpus"/samples/*.p4 "$seeds"/ 2>/dev/null || true
fi
cp -n examples/*.p4 "$seeds"/ 2>/dev/null || true

pseeds=fuzz/corpus/packets
mkdir -p "$pseeds"
python3 - "$corpus" "$pseeds" <<'PY'
import glob, os, sys
corpus, out = sys.argv[1], sys.argv[2]
n = 0
for stf in sorted(glob.glob(os.path.join(corpus, "stf", "*", "*.stf"))):
    for line in open(stf, errors="replace"):
        w = line.split()
        if len(w) < 3 or w[0].lower() != "packet":
            continue
        try:
            data = bytes.fromhex("".join(w[2:]))
            port = int(w[1]) % 16
        except ValueError:
            continue
        with open(os.path.join(out, "seed%05d" % n), "wb") as f:
            f.write(bytes([n % 256, port]) + data)
        n += 1
print("packet seeds:", n)
PY

for target in frontend packets; do
  echo "== fuzz $target for ${secs}s on $(ls "fuzz/corpus/$target" | wc -l) seeds"
  KOI_CORPUS="$(cd "$corpus" 2>/dev/null && pwd || echo "$corpus")" \
    cargo +nightly fuzz run "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$secs" -max_len=65536 -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 2>&1 | tail -n 12
done
