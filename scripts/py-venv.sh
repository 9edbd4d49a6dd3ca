#!/usr/bin/env bash
# Creates (once) and reuses the Python virtual environment that koi's end-to-end tests use for
# scapy and p4lang's PTF: target/py-venv (or $KOI_PY_VENV). Prints the environment's python on
# stdout, so a developer can run the tests that need it with plain cargo:
#
#   export KOI_PYTHON="$(./scripts/py-venv.sh)"; cargo test -p koi --test e2e_scapy
#
# scripts/test.sh does exactly that. Progress goes to stderr. When `python3 -m venv` cannot work
# (Debian's python3 without ensurepip) and we are root, python3-venv is installed with apt, the
# way scripts/demo.sh installs the tools it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${KOI_PY_VENV:-target/py-venv}"
# The packages, pinned; the stamp file records what the environment was built with.
requirements="scapy==2.8.0 ptf==0.12.0"
stamp="$venv/.koi-requirements"

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$requirements" ] &&
  "$venv/bin/python" -c 'import scapy.all, ptf.testutils' >/dev/null 2>&1; then
  echo "python venv: $venv (reused)" >&2
  echo "$(cd "$venv" && pwd)/bin/python"
  exit 0
fi

echo "python venv: creating $venv ($requirements)" >&2
command -v python3 >/dev/null || {
  echo "py-venv: python3 not found" >&2
  exit 1
}
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
if ! python3 -m venv "$venv" >/dev/null 2>&1; then
  rm -rf "$venv"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "python venv: installing python3-venv (ensurepip is missing)" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv" >&2
  else
    echo "py-venv: \`python3 -m venv\` failed; install python3-venv (Debian) and retry" >&2
    exit 1
  fi
fi
# ptf needs netifaces, which PyPI has only as source: it is compiled (a C compiler and the
# Python headers); as root these are installed with apt when the first attempt fails.
# shellcheck disable=SC2086 # the requirements are words
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check $requirements >&2; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "python venv: installing a C compiler and the Python headers, then retrying" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential python3-dev >/dev/null
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install -q --disable-pip-version-check $requirements >&2
  else
    echo "py-venv: pip install $requirements failed" >&2
    exit 1
  fi
fi
"$venv/bin/python" -c 'import scapy.all, ptf.testutils' >&2
echo "$requirements" >"$stamp"
echo "$(cd "$venv" && pwd)/bin/python"
