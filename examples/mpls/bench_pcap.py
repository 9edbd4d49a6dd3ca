#!/usr/bin/env python3
"""Writes the `koi bench` traffic of examples/mpls: N flows for one node of the example network.

    bench_pcap.py --role pe1|p|pe2 [--flows 10000] OUT.pcap

Each frame is a flow of its own (its UDP source port and destination host differ), spread
evenly over the node's ways through the program:

  pe1  ingress LER, frames from CE1 (port 1): IPv4 to FECs 1-4 (one label, one label with
       DSCP, two labels, a swap path), so every push action is in the mix
  p    LSR, labelled frames from PE1: 16001 (PHP to IPv4), 16002 (swap to explicit null),
       16003 over 24001 (PHP of a label over a label), 16004 (swap)
  pe2  egress LER, frames from P: explicit null, service label 24001, own label 17004 (all
       popped and routed), and IPv4 that P popped already

Run it with `koi bench examples/mpls/mpls.p4 --entries examples/mpls/<role>.entries --pcap OUT`.
"""

import argparse

from scapy.contrib.mpls import MPLS
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

PE1, P, PE2 = "02:00:00:00:0a:01", "02:00:00:00:0a:02", "02:00:00:00:0a:03"
CE1 = "02:00:00:00:01:01"


def inner(k, net):
    """Flow k's IPv4/UDP packet to a host of 10.2.<net>.0/24."""
    host = 1 + (k // 4) % 250
    return (IP(src="10.1.0.1", dst=f"10.2.{net}.{host}", ttl=64, id=k & 0xFFFF)
            / UDP(sport=1024 + k % 60000, dport=5000) / (b"koi-bench-mpls" + bytes(8)))


def labelled(src, dst, labels, payload):
    frame = Ether(src=src, dst=dst)
    for n, label in enumerate(labels):
        frame = frame / MPLS(label=label, s=int(n == len(labels) - 1), ttl=63)
    return frame / payload


def frame(role, k):
    way = k % 4
    if role == "pe1":
        return Ether(src=CE1, dst=PE1) / inner(k, way)
    if role == "p":
        labels = [[16001], [16002], [16003, 24001], [16004]][way]
        return labelled(PE1, P, labels, inner(k, way))
    if role == "pe2":
        if way == 3:
            return Ether(src=P, dst=PE2) / inner(k, 0)
        labels = [[0], [24001], [17004]][way]
        return labelled(P, PE2, labels, inner(k, way + 1))
    raise ValueError(role)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["pe1", "p", "pe2"], required=True)
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("out")
    args = ap.parse_args()
    wrpcap(args.out, [frame(args.role, k) for k in range(args.flows)])


if __name__ == "__main__":
    main()
