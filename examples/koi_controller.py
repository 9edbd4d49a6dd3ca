"""What koi's example controllers share: finding the koi binary, compiling the program they
control with `koi compile` (its P4Info, and the device config a controller pushes), and
printing MAC addresses and log lines.

The controllers import it from the examples folder (each puts that folder on `sys.path`).
"""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def say(*words):
    """A log line, at once (the controllers run under supervisors that read their output)."""
    print(*words, flush=True)


def find_koi(given, who="controller"):
    """The koi binary: `given` (--koi), else `koi` on the PATH, else the repository's build."""
    if given:
        return given
    for candidate in (shutil.which("koi"), REPO / "target/release/koi", REPO / "target/debug/koi"):
        if candidate and Path(candidate).exists():
            return str(candidate)
    sys.exit(f"{who}: koi not found; give --koi PATH (or build it: cargo build --release)")


def koi_compile(koi, program, workdir, emits=("p4info",), who="controller"):
    """Runs `koi compile PROGRAM --emit E` for each of `emits` into files in `workdir`;
    returns their paths in that order (exits with koi's diagnostics if it fails)."""
    names = {"p4info": "p4info.txt", "device-config": "device_config.bin"}
    paths = []
    for emit in emits:
        path = Path(workdir) / f"{Path(program).stem}.{names.get(emit, emit)}"
        with open(path, "wb") as f:
            r = subprocess.run([koi, "compile", str(program), "--emit", emit], stdout=f,
                               stderr=subprocess.PIPE)
        if r.returncode != 0:
            sys.exit(f"{who}: koi compile {program} --emit {emit} failed:\n"
                     + r.stderr.decode(errors="replace"))
        paths.append(path)
    return paths


def mac_str(value):
    """A MAC address (an int, or a string as finsy may hand it over) as aa:bb:cc:dd:ee:ff."""
    if isinstance(value, str):
        return value.lower()
    return ":".join(f"{b:02x}" for b in int(value).to_bytes(6, "big"))
