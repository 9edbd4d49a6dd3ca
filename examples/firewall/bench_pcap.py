#!/usr/bin/env python3
"""Traffic for `koi bench examples/firewall/firewall.p4`: established connections, both ways.

    bench_pcap.py DIR [FLOWS] [ROUNDS]

writes DIR/inside.pcap (the packets arriving on port 1, from inside hosts 10.0.0.0/16) and
DIR/outside.pcap (port 2, from servers in 198.51.100.0/24), to be replayed together:

    koi bench examples/firewall/firewall.p4 --entries examples/firewall/bench.entries \
        --pcap 1=DIR/inside.pcap --pcap 2=DIR/outside.pcap

FLOWS connections (default 10,000): four in five TCP (SYN, SYN+ACK, ACK, then ROUNDS data
segments each way, default 8), one in five UDP (ROUNDS requests and as many replies). The
packets' timestamps put each connection's opening first and interleave the connections in
groups of 32, one direction after the other (so koi bench hands the datapath batches of 32
packets of one port, as a poll thread's batch is). Replayed in a loop, a connection's SYN
and SYN+ACK come again once it is established: the firewall lets them through as part of it.
"""
import os
import sys

from scapy.all import IP, TCP, UDP, Ether, Raw, wrpcap

FW = "02:00:00:00:00:fe"
INSIDE_MAC = "02:00:00:00:01:01"
OUTSIDE_MAC = "02:00:00:00:02:01"
GROUP = 32


def conn(i):
    """Connection i: (inside address, inside port, outside address, outside port, tcp?)."""
    inside = f"10.0.{(i >> 8) & 255}.{i & 255}"
    outside = f"198.51.100.{i % 250 + 1}"
    tcp = i % 5 != 4
    return inside, 1024 + (i * 7) % 60000, outside, (80, 443, 8080, 22)[i % 4] if tcp else 53, tcp


def frames(i, kind):
    """The inside->outside (out=False) or outside->inside frame of connection i for `kind`."""
    a, ap, b, bp, tcp = conn(i)
    out = Ether(src=INSIDE_MAC, dst=FW) / IP(src=a, dst=b, ttl=64)
    back = Ether(src=OUTSIDE_MAC, dst=FW) / IP(src=b, dst=a, ttl=64)
    if not tcp:
        if kind == "data":
            return [(1, out / UDP(sport=ap, dport=bp) / Raw(b"q" * 32)),
                    (2, back / UDP(sport=bp, dport=ap) / Raw(b"r" * 96))]
        return []
    if kind == "syn":
        return [(1, out / TCP(sport=ap, dport=bp, flags="S", seq=1000))]
    if kind == "synack":
        return [(2, back / TCP(sport=bp, dport=ap, flags="SA", seq=5000, ack=1001))]
    if kind == "ack":
        return [(1, out / TCP(sport=ap, dport=bp, flags="A", seq=1001, ack=5001))]
    return [(1, out / TCP(sport=ap, dport=bp, flags="PA", seq=1001, ack=5001) / Raw(b"d" * 64)),
            (2, back / TCP(sport=bp, dport=ap, flags="PA", seq=5001, ack=1065) / Raw(b"e" * 512))]


def main():
    out_dir = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    per_port = {1: [], 2: []}
    t = 0
    groups = [range(g, min(g + GROUP, n)) for g in range(0, n, GROUP)]
    phases = ["syn", "synack", "ack"] + ["data"] * rounds
    for phase in phases:
        for g in groups:
            built = [f for i in g for f in frames(i, phase)]
            # One direction of the group, then the other.
            for port in (1, 2):
                for p, f in built:
                    if p == port:
                        f.time = t * 1e-6
                        t += 1
                        per_port[port].append(f)
    os.makedirs(out_dir, exist_ok=True)
    wrpcap(os.path.join(out_dir, "inside.pcap"), per_port[1])
    wrpcap(os.path.join(out_dir, "outside.pcap"), per_port[2])
    print(f"{n} connections: {len(per_port[1])} packets inside, {len(per_port[2])} outside")


if __name__ == "__main__":
    main()
