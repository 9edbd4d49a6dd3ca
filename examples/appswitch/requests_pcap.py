#!/usr/bin/env python3
"""Writes a pcap of memcached binary requests to AppSwitch's service address, for `koi bench`.

    python3 examples/appswitch/requests_pcap.py KEYS KEY_BYTES OUT.pcap

KEYS random keys of KEY_BYTES bytes (letters and digits), each once as a GET and once as a
SET (8 bytes of extras, a 32-byte value), in random order (seeded: the same file every
time): Ethernet (02:00:00:00:00:01 to the service's 02:00:00:00:00:64), IPv4 10.0.0.1 to
10.0.0.100 with both checksums, UDP to port 11211 from ports 40000-40999, memcached's UDP
frame header (one datagram). The topology of `appswitch.entries` and of the benchmark in
docs/benchmarks.md ("Hash keys").
"""
import random
import struct
import sys


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(payload, sport):
    client, vip = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 100])
    udp_len = 8 + len(payload)
    udp = struct.pack("!HHHH", sport, 11211, udp_len, 0) + payload
    c = csum(client + vip + b"\0\x11" + struct.pack("!H", udp_len) + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0, 64, 17, 0,
                               client, vip))
    ip[10:12] = struct.pack("!H", csum(bytes(ip)))
    return bytes([2, 0, 0, 0, 0, 0x64, 2, 0, 0, 0, 0, 1]) + b"\x08\x00" + bytes(ip) + udp


def request(op, key, seq):
    extras = b"\0" * 8 if op == 1 else b""
    value = b"v" * 32 if op == 1 else b""
    body = extras + key + value
    header = struct.pack("!BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, len(body),
                         seq, 0)
    return struct.pack("!HHHH", seq & 0xFFFF, 0, 1, 0) + header + body


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    n, key_bytes, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    if not 1 <= key_bytes <= 250:
        sys.exit("memcached keys are 1 to 250 bytes")
    rnd = random.Random(7)
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789"
    keys = [bytes(rnd.choice(alphabet) for _ in range(key_bytes)) for _ in range(n)]
    requests = [(op, k) for k in keys for op in (0, 1)]
    rnd.shuffle(requests)
    with open(out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, (op, k) in enumerate(requests):
            fr = frame(request(op, k, i), 40000 + i % 1000)
            f.write(struct.pack("<IIII", i // 1000000, i % 1000000, len(fr), len(fr)))
            f.write(fr)


if __name__ == "__main__":
    main()
