#!/usr/bin/env bash
# Time to apply one POF entry change on a running switch, at a number of routes.
#
#   scripts/bench-pof-change.sh
#   ROUTES="1000 10000" CHANGES=20 KOI=target/release/koi scripts/bench-pof-change.sh
#
# Per route count N: a configuration like examples/pof/router.pof's with N /24 routes
# (`entry route I match 10.A.B.0/24 { set_field ethernet.dst@0 MAC modify_field ipv4.ttl -1
# calculate_checksum ipv4.checksum 0 160 output 2 }`), started with `koi run --pof
# --pof-config` on a pcap port (no traffic: the switch is idle), then over its control socket,
# CHANGES times each:
#   modify  pof_entry_modify of route 5's port (2 <-> 3): the values of an entry;
#   add     pof_entry_add of a new route of the same shape;
#   remove  pof_entry_remove of that route;
#   shape   pof_entry_modify of route 7 to { drop } and back: a new instruction shape, which
#           recompiles (run CHANGES/4 times).
# For each kind: the time until the change applies, as the reply says it (written: the
# writes' time; recompiled: compiling plus swapping in), and the round trip of the command
# as a client sees it (a recompile's includes waiting for the poll threads to leave the old
# image, up to their idle poll timeout). Minimum / median / maximum in milliseconds.
#
# Knobs (environment): ROUTES ("1000 10000"), CHANGES (20), KOI (target/release/koi, built
# unless given).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUTES=${ROUTES:-"1000 10000"}
CHANGES=${CHANGES:-20}
. scripts/koi-release.sh
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

for n in $ROUTES; do
  python3 - "$n" "$CHANGES" > "$tmp/routes.pof" <<'EOF'
import sys
n, changes = int(sys.argv[1]), int(sys.argv[2])
print("protocol ethernet { field dst 0 48 field src 48 48 field type 96 16 }")
print("protocol ipv4 { field ttl 64 8 field checksum 80 16 field dst 128 32 }")
print("table eth exact size 4 { key ethernet.type }")
print(f"table route lpm size {n + changes + 16} {{ key ipv4.dst }}")
print("entry eth 1 match 0x0800 { goto route shift 112 }")
for i in range(1, n + 1):
    print(f"entry route {i} match 10.{i >> 8}.{i & 255}.0/24 {{ set_field ethernet.dst@0 "
          f"02:00:00:00:{i >> 8:02x}:{i & 255:02x} modify_field ipv4.ttl -1 "
          f"calculate_checksum ipv4.checksum 0 160 output 2 }}")
EOF
  rm -f "$tmp/ctl.sock"
  "$KOI" run --pof --pof-config "$tmp/routes.pof" --port "1=pcap:,$tmp/out.pcap" \
    --grpc none --ctl "$tmp/ctl.sock" > "$tmp/run.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do [ -S "$tmp/ctl.sock" ] && break; sleep 0.1; done
  [ -S "$tmp/ctl.sock" ] || { cat "$tmp/run.log" >&2; exit 1; }
  echo "== $n routes ($("$KOI" --version 2>/dev/null || echo koi))"
  python3 - "$tmp/ctl.sock" "$n" "$CHANGES" <<'EOF'
import re, socket, statistics, sys, time
path, n, changes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.connect(path)
f = s.makefile("rwb")
def cmd(line):
    t = time.perf_counter()
    f.write(line.encode() + b"\n"); f.flush()
    out = []
    while True:
        l = f.readline().decode()
        if l in (".\n", ""):
            break
        out.append(l[1:] if l.startswith("..") else l)
    rtt = (time.perf_counter() - t) * 1e3
    text = "".join(out)
    if text.startswith("error:"):
        sys.exit(f"{line}: {text}")
    # written ... in X ms | compiled in X ms + loaded (generation N) in Y ms
    m = re.search(r"table writes in ([0-9.]+) ms", text)
    if m:
        live = float(m.group(1))
    else:
        c = re.search(r"compiled in ([0-9.]+) ms", text)
        w = re.search(r"\) in ([0-9.]+) ms", text)
        live = float(c.group(1)) + float(w.group(1))
    return live, rtt, "not recompiled" in text
def route(i, port):
    return (f"entry route {i} match 10.{i >> 8}.{i & 255}.0/24 {{ set_field ethernet.dst@0 "
            f"02:00:00:00:{i >> 8:02x}:{i & 255:02x} modify_field ipv4.ttl -1 "
            f"calculate_checksum ipv4.checksum 0 160 output {port} }}")
res = {"modify": [], "add": [], "remove": [], "shape": []}
for k in range(changes):
    res["modify"].append(cmd("pof_entry_modify " + route(5, 3 if k % 2 == 0 else 2)))
    res["add"].append(cmd("pof_entry_add " + route(n + 1 + k, 2)))
    res["remove"].append(cmd(f"pof_entry_remove route {n + 1 + k}"))
for k in range(max(1, changes // 4)):
    res["shape"].append(cmd("pof_entry_modify entry route 7 match 10.0.7.0/24 { drop }"))
    res["shape"].append(cmd("pof_entry_modify " + route(7, 2)))
for kind, rs in res.items():
    live = [r[0] for r in rs]; rtt = [r[1] for r in rs]
    written = sum(r[2] for r in rs)
    print(f"{kind:7} {len(rs):3} changes ({written} written, {len(rs) - written} recompiled): "
          f"live after {min(live):.2f} / {statistics.median(live):.2f} / {max(live):.2f} ms, "
          f"round trip {min(rtt):.2f} / {statistics.median(rtt):.2f} / {max(rtt):.2f} ms")
EOF
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
done
