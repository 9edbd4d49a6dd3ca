#!/usr/bin/env python3
"""Traffic for `koi bench` on examples/vxlan/vxlan.p4: N flows in a pcap, one packet each, and
the entries that go with it (vxlan.entries plus what the controller would have learnt).

- `--direction encap` (replay on access port 2): 60-byte UDP and TCP frames from 64 hosts on
  port 2 to 64 hosts behind the remote VTEP 10.99.0.2, every flow its own 5-tuple: each is
  encapsulated.
- `--direction decap` (replay on the uplink, port 1): the same flows coming back, VXLAN from
  10.99.0.2 with VNI 5000: each is decapsulated to port 2.

    python3 examples/vxlan/bench_pcap.py --flows 10000 --direction encap \\
        --pcap /tmp/vx-encap.pcap --entries /tmp/vx.entries
    koi bench examples/vxlan/vxlan.p4 --entries /tmp/vx.entries --pcap /tmp/vx-encap.pcap --port 2
"""

import argparse
from pathlib import Path

from scapy.all import IP, TCP, UDP, Ether, wrpcap
from scapy.layers.vxlan import VXLAN

HERE = Path(__file__).resolve().parent
HOSTS = 64


def local_mac(i):
    return f"02:00:00:01:00:{i:02x}"


def remote_mac(i):
    return f"02:00:00:02:00:{i:02x}"


def inner(k, back):
    """Flow k's inner frame (back: from the remote host to the local one)."""
    a, b = k % HOSTS, (k // HOSTS) % HOSTS
    sport, dport = 1024 + k // (HOSTS * HOSTS) * 7 + k % 7, 80 if k % 2 else 53
    l4 = TCP(sport=sport, dport=dport, flags="A") if k % 2 else UDP(sport=sport, dport=dport)
    src, dst = f"10.0.1.{a}", f"10.0.2.{b}"
    smac, dmac = local_mac(a), remote_mac(b)
    if back:
        src, dst, smac, dmac = dst, src, dmac, smac
        l4.sport, l4.dport = l4.dport, l4.sport
    frame = Ether(src=smac, dst=dmac) / IP(src=src, dst=dst, id=k & 0xFFFF) / l4
    return frame / (b"\0" * max(0, 60 - len(frame)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("--direction", choices=["encap", "decap"], default="encap")
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--entries", required=True, help="where to write the entries file")
    args = ap.parse_args()
    if args.direction == "encap":
        frames = [inner(k, False) for k in range(args.flows)]
    else:
        frames = [Ether(src="02:00:00:99:00:02", dst="02:00:00:99:00:01")
                  / IP(src="10.99.0.2", dst="10.99.0.1", ttl=64)
                  / UDP(sport=32768 + k % 28000, dport=4789, chksum=0)
                  / VXLAN(flags=0x08, vni=5000) / inner(k, True) for k in range(args.flows)]
    wrpcap(args.pcap, frames)
    lines = [(HERE / "vxlan.entries").read_text(), "# Learnt (as the controller would)"]
    for i in range(HOSTS):
        lines += [f"table_add smac learnt 1 {local_mac(i)} => 2 0",
                  f"table_add dmac to_port 1 {local_mac(i)} => 2",
                  f"table_add smac learnt 1 {remote_mac(i)} => 0 10.99.0.2",
                  f"table_add dmac to_vtep 1 {remote_mac(i)} => 10.99.0.2"]
    Path(args.entries).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
