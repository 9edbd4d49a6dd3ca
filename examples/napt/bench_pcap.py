#!/usr/bin/env python3
"""Traffic for `koi bench examples/napt/napt.p4`: established mappings, both directions.

    bench_pcap.py DIR [FLOWS] [ROUNDS]

writes DIR/inside.pcap (port 1: inside hosts 10.0.0.0/16 to servers in 198.51.100.0/24)
and DIR/outside.pcap (port 2: the servers' replies to the NAT's address 203.0.113.1 and the
port napt.p4 allocates for each connection, computed as make_stf.py computes it), to be
replayed together with bench.entries:

    koi bench examples/napt/napt.p4 --entries examples/napt/bench.entries \
        --pcap 1=DIR/inside.pcap --pcap 2=DIR/outside.pcap

FLOWS connections (default 10,000; four in five TCP, one in five UDP), ROUNDS (default 8)
packets each way, in groups of 32 per direction. A connection whose slot another holds is
dropped by the program (and its replies find no mapping): about 14% of 10,000 in 32,768
slots.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_stf import NAT, NAT_MAC, UP_MAC, packet, port_of  # noqa: E402

INSIDE_MAC = "020000000101"
GROUP = 32


def write_pcap(path, frames):
    import struct
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for us, fr in frames:
            f.write(struct.pack("<IIII", us // 1_000_000, us % 1_000_000, len(fr), len(fr)))
            f.write(fr)


def main():
    out_dir = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    conns = []
    for i in range(n):
        src = f"10.0.{(i >> 8) & 255}.{i & 255}"
        dst = f"198.51.100.{i % 250 + 1}"
        proto = 6 if i % 5 != 4 else 17
        sport = 1024 + (i * 7) % 60000
        dport = (80, 443, 8080, 22)[i % 4] if proto == 6 else 53
        conns.append((src, sport, dst, dport, proto, port_of(src, sport, dst, dport, proto)))
    per_port = {1: [], 2: []}
    t = 0
    for r in range(rounds):
        for g in range(0, n, GROUP):
            group = conns[g:g + GROUP]
            for src, sport, dst, dport, proto, mapped in group:
                per_port[1].append((t, packet(NAT_MAC, INSIDE_MAC, src, dst, proto, sport, dport,
                                              flags=0x10, payload=b"d" * 64)))
                t += 1
            for src, sport, dst, dport, proto, mapped in group:
                per_port[2].append((t, packet(NAT_MAC, UP_MAC, dst, NAT, proto, dport, mapped,
                                              flags=0x10, payload=b"e" * 512)))
                t += 1
    os.makedirs(out_dir, exist_ok=True)
    write_pcap(os.path.join(out_dir, "inside.pcap"), per_port[1])
    write_pcap(os.path.join(out_dir, "outside.pcap"), per_port[2])
    print(f"{n} connections: {len(per_port[1])} packets inside, {len(per_port[2])} outside")


if __name__ == "__main__":
    main()
