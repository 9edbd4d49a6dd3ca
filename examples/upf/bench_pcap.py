#!/usr/bin/env python3
"""Writes the `koi bench` traffic of examples/upf: N flows over S sessions, half uplink (G-PDUs
from gNB 1 with a PDU session container) and half downlink (IPv4 from the data network to the
UEs), and the entries file that holds those sessions (upf.entries plus a table_add per session
and direction, as controller.py would write them).

    bench_pcap.py [--flows 10000] [--sessions 1000] OUT.pcap OUT.entries

Session k (0-based) is UE 10.45.x.y (k + 1 in the low 16 bits), uplink TEID 0x10000 + k,
downlink TEID 0x20000 + k, QFI 9 (no remarking), 1 or 2 (EF, AF41) in turn. Frame n belongs
to session n % S; its UDP ports make it a flow of its own.

Run it with `koi bench examples/upf/upf.p4 --entries OUT.entries --pcap OUT.pcap`.
"""

import argparse
from pathlib import Path

from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

HERE = Path(__file__).resolve().parent
UPF_N3_MAC, UPF_N6_MAC = "02:00:00:00:0b:03", "02:00:00:00:0b:06"
GNB1_MAC, DN_MAC = "02:00:00:00:01:01", "02:00:00:00:01:02"
UPF_N3, GNB1, DN_HOST = "10.100.0.1", "10.100.0.2", "10.200.0.2"
QFIS = [9, 1, 2]


def ue_addr(k):
    n = k + 1
    return f"10.45.{n >> 8}.{n & 0xFF}"


def frame(n, sessions):
    k = n % sessions
    flow = n // sessions
    ue, qfi = ue_addr(k), QFIS[k % 3]
    body = b"koi-bench-upf" + bytes(9)
    if flow % 2 == 0:
        inner = IP(src=ue, dst=DN_HOST, id=n & 0xFFFF) / UDP(sport=1024 + flow, dport=5000) / body
        return (Ether(src=GNB1_MAC, dst=UPF_N3_MAC) / IP(src=GNB1, dst=UPF_N3)
                / UDP(sport=2152, dport=2152)
                / GTP_U_Header(gtp_type=255, teid=0x10000 + k, E=1, next_ex=0x85)
                / GTPPDUSessionContainer(type=1, QFI=qfi) / inner)
    inner = IP(src=DN_HOST, dst=ue, id=n & 0xFFFF) / UDP(sport=5000, dport=1024 + flow) / body
    return Ether(src=DN_MAC, dst=UPF_N6_MAC) / inner


def entries(sessions):
    lines = [(HERE / "upf.entries").read_text(), "# bench sessions (bench_pcap.py)"]
    for k in range(sessions):
        sid, ue = k + 1, ue_addr(k)
        lines.append(f"table_add uplink set_uplink {0x10000 + k} => {sid} {ue}")
        lines.append(f"table_add downlink set_downlink {ue} => {sid} {0x20000 + k} {GNB1} "
                     f"{QFIS[k % 3]}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("pcap")
    ap.add_argument("entries")
    args = ap.parse_args()
    if not 0 < args.sessions < 65535:
        ap.error("--sessions: 1 to 65534")
    wrpcap(args.pcap, [frame(n, args.sessions) for n in range(args.flows)])
    Path(args.entries).write_text(entries(args.sessions))


if __name__ == "__main__":
    main()
