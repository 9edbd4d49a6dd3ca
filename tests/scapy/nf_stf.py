"""Helpers of the network-function examples' STF generators (examples/{mpls,upf,bng}/gen_stf.py).

Each generator builds its cases with scapy (the frame sent, and the frame that must come out,
built from the protocol's own scapy layers, independently of the P4 program) and writes them
as p4c STF files that `koi test` runs. The table entries of an STF file are those of the
example's `.entries` files (simple_switch_CLI `table_add` lines), translated here into STF
`add` lines, so the tests check the entries the example ships.

    Stf(keys, params)       an STF file being written: .entries(file), .add(...), .case(...)
    main(files)             the generators' command line: write the files, or --check them
"""

import argparse
import difflib
import ipaddress
import re
import sys
from pathlib import Path


def hex_value(text):
    """A simple_switch_CLI value (MAC, IPv4 address, decimal or 0x number) as STF hex."""
    if re.fullmatch(r"([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}", text):
        return "0x" + text.replace(":", "").lower()
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", text):
        return "0x%08x" % int(ipaddress.IPv4Address(text))
    if text.startswith("0x"):
        return text
    return str(int(text))


def lpm_value(text, width):
    """`a.b.c.d/len` (or `value/len`) as STF LPM hex: `*` for every nibble past the prefix."""
    addr, length = text.split("/")
    length = int(length)
    if length % 4:
        raise ValueError(f"{text}: an STF prefix length is a multiple of 4")
    value = int(ipaddress.IPv4Address(addr)) if "." in addr else int(addr, 0)
    digits = "%0*x" % (width // 4, value)
    keep = length // 4
    return "0x" + digits[:keep] + "*" * (len(digits) - keep)


class Stf:
    """An STF file being written.

    keys: table -> [(STF key field name, match kind, width)]; params: action -> [names].
    """

    def __init__(self, title, keys, params):
        self.lines = [f"# {line}" if line else "#" for line in title.splitlines()]
        self.keys = keys
        self.params = params
        self.cases = 0

    def comment(self, text):
        self.lines.append("")
        for line in text.splitlines():
            self.lines.append(f"# {line}")

    def add(self, table, action, keys, args, priority=None):
        """An `add` line: `keys` and `args` as simple_switch_CLI writes them."""
        fields = self.keys[table]
        if len(keys) != len(fields):
            raise ValueError(f"{table}: {len(fields)} key fields, got {keys}")
        names = self.params[action]
        if len(args) != len(names):
            raise ValueError(f"{action}: parameters {names}, got {args}")
        match = []
        for (name, kind, width), value in zip(fields, keys):
            if kind == "lpm":
                match.append(f"{name}:{lpm_value(value, width)}")
            else:
                match.append(f"{name}:{hex_value(value)}")
        call = ", ".join(f"{n}:{hex_value(v)}" for n, v in zip(names, args))
        prio = f" {priority}" if priority is not None else ""
        self.lines.append(f"add {table}{prio} {' '.join(match)} {action}({call})")

    def setdefault(self, table, action, args):
        """A `setdefault` line (simple_switch_CLI's table_set_default)."""
        names = self.params[action]
        if len(args) != len(names):
            raise ValueError(f"{action}: parameters {names}, got {args}")
        call = ", ".join(f"{n}:{hex_value(v)}" for n, v in zip(names, args))
        self.lines.append(f"setdefault {table} {action}({call})")

    def entries(self, path):
        """Every `table_add` (and `table_set_default`) line of a simple_switch_CLI file, as
        `add` (and `setdefault`) lines."""
        self.comment(f"entries: {path.name}")
        for raw in path.read_text().splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            if words[0] == "table_set_default":
                self.setdefault(words[1], words[2], words[3:])
                continue
            if words[0] != "table_add":
                raise ValueError(f"{path}: only table_add and table_set_default lines are "
                                 f"translated: {raw}")
            arrow = words.index("=>")
            table, action, keys, args = words[1], words[2], words[3:arrow], words[arrow + 1:]
            self.add(table, action, keys, args)

    def case(self, name, port, frame, expect=None):
        """A packet sent on `port`; `expect`: None (dropped) or [(port, frame)]."""
        self.cases += 1
        self.comment(f"case {self.cases}: {name}")
        self.lines.append(f"packet {port} {bytes(frame).hex()}")
        if not expect:
            self.lines.append("# dropped: nothing comes out")
        for out_port, out in expect or []:
            self.lines.append(f"expect {out_port} {bytes(out).hex()}$")

    def text(self):
        return "\n".join(self.lines) + "\n"


def main(files, description):
    """`files`: name -> function returning the Stf; writes them next to the script's caller,
    or with --check compares them with the files there (exit 1 on a difference)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--check", action="store_true",
                    help="compare with the files in the directory instead of writing them")
    ap.add_argument("--dir", default=None, help="where the .stf files are (default: the script's)")
    args = ap.parse_args()
    here = Path(args.dir) if args.dir else Path(sys.argv[0]).resolve().parent
    bad = 0
    for name, build in files.items():
        text = build().text()
        path = here / name
        if args.check:
            old = path.read_text() if path.exists() else ""
            if old != text:
                bad += 1
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), str(path), "scapy"))
            else:
                print(f"{name}: as scapy builds it")
        else:
            path.write_text(text)
            print(f"wrote {path}")
    sys.exit(1 if bad else 0)
