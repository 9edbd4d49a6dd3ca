#!/usr/bin/env python3
"""Traffic for `koi bench` on programs that parse more than L2/L3 headers.

usage: gen-feature-pcaps.py DIR

Writes DIR/options.pcap: 1,000 Ethernet/IPv4/TCP frames to port 80, every other one with
4 bytes of IPv4 options (IHL 6), 20 payload bytes, flows spread over 200 destinations and
1,000 source ports (for p4c's checksum1-bmv2.p4 and checksum-l4-bmv2.p4, which parse the
options as a varbit); and DIR/source_routing.pcap: 1,000 frames of type 0x1234 with three
source routes each, first ports 1-4 (for bench/source_routing.p4).
"""
import struct
import sys

from scapy.all import IP, TCP, Ether, Raw, wrpcap

out = sys.argv[1]
frames = [
    Ether(dst="00:00:00:00:00:01")
    / IP(src="10.0.0.1", dst="10.1.0.%d" % (i % 200), options=[] if i % 2 else b"\x01\x01\x01\x00")
    / TCP(sport=1000 + i, dport=80)
    / ("x" * 20)
    for i in range(1000)
]
wrpcap(out + "/options.pcap", frames)
frames = []
for i in range(1000):
    routes = b"".join(struct.pack(">H", ((1 if j == 2 else 0) << 15) | ((i + j) % 4 + 1)) for j in range(3))
    frames.append(Ether(dst="00:00:00:00:00:01", type=0x1234) / Raw(routes + b"x" * 30))
wrpcap(out + "/source_routing.pcap", frames)
