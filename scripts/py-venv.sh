#!/usr/bin/env bash
# Creates (once) and reuses the Python virtual environments of koi's end-to-end tests, and
# prints the environment's python on stdout, so that a developer can run the tests that need
# it with plain cargo:
#
#   export KOI_PYTHON="$(./scripts/py-venv.sh)"; cargo test -p koi --test e2e_scapy
#   export KOI_PYTHON_SHELL="$(./scripts/py-venv.sh shell)"; cargo test -p koi --test p4rt_shell
#
# - `scripts/py-venv.sh`: target/py-venv (or $KOI_PY_VENV): scapy and p4lang's PTF (e2e_*),
#   the `p4runtime` package's stubs and finsy (p4rt_*, examples/l2_learning/controller.py),
#   PyYAML (examples/appswitch: twemproxy's pool files).
# - `scripts/py-venv.sh shell`: target/py-venv-shell (or $KOI_PY_VENV_SHELL): p4runtime-shell,
#   which pins protobuf 3.20 and p4runtime 1.4.1 and so needs an environment of its own, and
#   scapy.
#
# Both get koi's p4/tmp/p4config_pb2.py (crates/koi/tests/p4runtime/p4config_pb2.py: the
# p4.tmp.P4DeviceConfig message p4lang's tutorial controllers import, which no PyPI package
# ships). scripts/test.sh exports both. Progress goes to stderr. When `python3 -m venv` cannot
# work (Debian's python3 without ensurepip) and we are root, python3-venv is installed with
# apt, the way scripts/demo.sh installs the tools it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

# p4runtime 1.6.0's generated modules need protobuf's pure-Python implementation under
# protobuf 6 (the tests set this too).
export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python
p4config=crates/koi/tests/p4runtime/p4config_pb2.py

case "${1:-}" in
"")
  venv="${KOI_PY_VENV:-target/py-venv}"
  # The packages, pinned; the stamp file records what the environment was built with.
  requirements="scapy==2.8.0 ptf==0.12.0 p4runtime==1.6.0 finsy==0.30.0 PyYAML==6.0.3"
  imports="import scapy.all, ptf.testutils, finsy, yaml, p4.v1.p4runtime_pb2, p4.tmp.p4config_pb2"
  ;;
shell)
  venv="${KOI_PY_VENV_SHELL:-target/py-venv-shell}"
  requirements="p4runtime-shell==0.0.6 scapy==2.8.0"
  imports="import p4runtime_sh.shell, scapy.all, p4.tmp.p4config_pb2"
  ;;
*)
  echo "usage: scripts/py-venv.sh [shell]" >&2
  exit 2
  ;;
esac
stamp="$venv/.koi-requirements"

# Installs (or refreshes) koi's p4/tmp/p4config_pb2.py beside the p4runtime package's p4/.
install_p4config() {
  local site
  site="$("$venv/bin/python" -c 'import os, p4; print(os.path.dirname(p4.__file__))')"
  mkdir -p "$site/tmp"
  [ -f "$site/tmp/__init__.py" ] || : >"$site/tmp/__init__.py"
  cmp -s "$p4config" "$site/tmp/p4config_pb2.py" || cp "$p4config" "$site/tmp/p4config_pb2.py"
}

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$requirements" ]; then
  install_p4config
  if "$venv/bin/python" -c "$imports" >/dev/null 2>&1; then
    echo "python venv: $venv (reused)" >&2
    echo "$(cd "$venv" && pwd)/bin/python"
    exit 0
  fi
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
install_p4config
"$venv/bin/python" -c "$imports" >&2
echo "$requirements" >"$stamp"
echo "$(cd "$venv" && pwd)/bin/python"
