#!/usr/bin/env python3
"""Traffic for `koi bench` on examples/ddos/ddos.p4: N flows in a pcap, one packet each, from
outside (port 1) to the protected server (02:00:00:00:0d:04 on port 4, 10.0.13.4): TCP
segments of established connections (ACK, 3 in 4 flows) and UDP datagrams (1 in 4) from
N / 4 client addresses, 4 flows each. Nobody is over a threshold, so this is the cost of
watching legitimate traffic: every packet updates the sketches.

    python3 examples/ddos/bench_pcap.py --flows 10000 --pcap /tmp/ddos.pcap
    koi bench examples/ddos/ddos.p4 --entries examples/ddos/ddos.entries --pcap /tmp/ddos.pcap
"""

import argparse

from scapy.all import IP, TCP, UDP, Ether, wrpcap


def frame(k):
    client = k // 4
    src = f"10.{64 + (client >> 16)}.{(client >> 8) & 0xFF}.{client & 0xFF}"
    ip = IP(src=src, dst="10.0.13.4", id=k & 0xFFFF)
    if k % 4 == 3:
        l4 = UDP(sport=20000 + k % 4, dport=53)
    else:
        l4 = TCP(sport=30000 + k % 4, dport=443, flags="A", seq=k, ack=1)
    f = Ether(src="02:00:00:00:0d:01", dst="02:00:00:00:0d:04") / ip / l4
    return f / (b"\0" * max(0, 60 - len(f)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("--pcap", required=True)
    args = ap.parse_args()
    wrpcap(args.pcap, [frame(k) for k in range(args.flows)])


if __name__ == "__main__":
    main()
