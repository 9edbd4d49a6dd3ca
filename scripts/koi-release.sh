# Sourced by the benchmark scripts: sets KOI to the absolute path of the koi binary they
# measure, the one given in KOI, else target/release/koi built now (saying so: it takes
# minutes on a fresh clone).
if [ -z "${KOI:-}" ]; then
  echo "building koi (release) ..." >&2
  cargo build --release -q -p koi
  KOI=target/release/koi
fi
KOI=$(realpath "$KOI")
