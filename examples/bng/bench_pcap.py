#!/usr/bin/env python3
"""Writes the `koi bench` traffic of examples/bng: N flows over S subscribers, half upstream
(PPPoE session frames in QinQ from the CPEs) and half downstream (IPv4 from the core to the
subscribers), and the entries file that holds those subscribers with their sessions open
(bng.entries plus their lines, sessions and downstream entries, as controller.py writes
them, and each subscriber's meter at 1 Gbit/s, so that the policer runs on every downstream
packet and lets it through).

    bench_pcap.py [--flows 10000] [--subscribers 1000] OUT.pcap OUT.entries

Subscriber k (1-based) is on S-VLAN 100 + k // 4000, C-VLAN 1 + k % 4000, address
100.64.x.y (k in the low 16 bits), session id k, CPE MAC 02:00:00:xx:xx:xx. Frame n belongs
to subscriber 1 + n % S; its UDP ports make it a flow of its own.

Run it with `koi bench examples/bng/bng.p4 --entries OUT.entries --pcap OUT.pcap`.
"""

import argparse
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
from scapy.layers.ppp import PPP, PPPoE
from scapy.utils import wrpcap

HERE = Path(__file__).resolve().parent
AC_MAC, CORE_MAC, ROUTER_MAC = "02:00:00:00:0c:01", "02:00:00:00:0c:02", "02:00:00:00:01:02"
SERVER = "10.0.0.2"


def sub(k):
    """Subscriber k: (S-VLAN, C-VLAN, address, CPE MAC)."""
    return (100 + k // 4000, 1 + k % 4000, f"100.64.{k >> 8}.{k & 0xFF}",
            "02:00:00:%02x:%02x:%02x" % (k >> 16, (k >> 8) & 0xFF, k & 0xFF))


def frame(n, subscribers):
    k = 1 + n % subscribers
    flow = n // subscribers
    sv, cv, addr, mac = sub(k)
    body = b"koi-bench-bng" + bytes(9)
    if flow % 2 == 0:
        return (Ether(src=mac, dst=AC_MAC) / Dot1AD(vlan=sv, type=0x8100)
                / Dot1Q(vlan=cv, type=0x8864) / PPPoE(sessionid=k) / PPP(proto=0x0021)
                / IP(src=addr, dst=SERVER, id=n & 0xFFFF) / UDP(sport=1024 + flow, dport=53)
                / body)
    return (Ether(src=ROUTER_MAC, dst=CORE_MAC) / IP(src=SERVER, dst=addr, id=n & 0xFFFF)
            / UDP(sport=53, dport=1024 + flow) / body)


def entries(subscribers):
    lines = [(HERE / "bng.entries").read_text(), "# bench subscribers (bench_pcap.py)"]
    for k in range(1, subscribers + 1):
        sv, cv, addr, mac = sub(k)
        lines.append(f"table_add lines set_line 1 {sv} {cv} => {k}")
        lines.append(f"table_add sessions session_up {k} {k} {mac} => {addr}")
        lines.append(f"table_add downstream to_subscriber {addr} => {k} 1 {sv} {cv} {k} "
                     f"{mac} {AC_MAC}")
        # 1 Gbit/s = 125 bytes per microsecond, bursts of 100 ms.
        lines.append(f"meter_set_rates downstream_policer {k} 125:12500000 125:12500000")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("--subscribers", type=int, default=1000)
    ap.add_argument("pcap")
    ap.add_argument("entries")
    args = ap.parse_args()
    if not 0 < args.subscribers < 65536:
        ap.error("--subscribers: 1 to 65535")
    wrpcap(args.pcap, [frame(n, args.subscribers) for n in range(args.flows)])
    Path(args.entries).write_text(entries(args.subscribers))


if __name__ == "__main__":
    main()
