#!/usr/bin/env python3
"""scapy frames through a running koi switch, for koi's end-to-end tests (crates/koi/tests/e2e_scapy.rs).

    koi_frames.py sniff IFACE SUITE [--timeout S]
    koi_frames.py send IFACE SUITE

A suite is a list of cases: a frame that scapy crafts, sent on the sending host's interface into
one koi port, and what the program must make of it on the port that `sniff` listens on:
exactly these bytes, or nothing (dropped). Both sides build the same cases. Each frame carries a
marker (KOI-E2E:<n>:) in its payload so that the sniffer can tell what arrived; the last frame
of a suite (`end`) is one the program forwards, sent after all the others on the same path, so
once it has arrived everything before it has been decided.

`sniff` prints `ready` once its socket is open, captures until the end frame (plus a short
linger) or the timeout, prints one line per case and exits 1 if any case failed. Forwarded
IPv4 frames also have their header checksum verified independently of scapy.

Suites:
  l2l3_acl          examples/l2l3_acl.p4 with examples/l2l3_acl.entries, sent on port 1 (host
                    02:00:00:00:01:00, VLAN 100), sniffed on port 2: routed IPv4 UDP and TCP
                    (MACs rewritten, TTL decremented, checksum recomputed, longest prefix
                    match), a VLAN-tagged frame (the tag is popped), ACL drops and their near
                    misses, unknown MACs, unroutable sources, ARP, a foreign VLAN.
  l2_forward        examples/l2_forward.p4 (port 1 <-> 2): every kind of frame crosses
                    unchanged (IPv4, TCP, ARP, IPv6, 802.1Q, QinQ, a test ethertype, a bare
                    14-byte header, a full 1514-byte frame, multicast).
"""

import argparse
import re
import select
import socket
import struct
import sys
import time

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Raw

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_AUXDATA = 8
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40

MARK = re.compile(rb"KOI-E2E:(\d+):")

ROUTER = "02:00:00:00:00:fe"
HOST_A = "02:00:00:00:01:00"  # port 1, VLAN 100 (examples/l2l3_acl.entries)


def nexthop(n):
    return "02:00:00:00:02:%02x" % n


class Case:
    def __init__(self, name, frame, expect):
        self.name = name
        self.frame = frame  # bytes sent
        self.expect = expect  # bytes that must arrive, or None: must not arrive


def marker(n, name):
    return b"KOI-E2E:%d:%s;" % (n, name.encode())


def ipv4_checksum_ok(frame):
    """Whether the IPv4 header of an Ethernet (optionally 802.1Q) frame sums to 0xffff."""
    off = 14
    ethertype = struct.unpack("!H", frame[12:14])[0]
    if ethertype == 0x8100:
        off, ethertype = 18, struct.unpack("!H", frame[16:18])[0]
    if ethertype != 0x0800:
        return True
    ihl = (frame[off] & 0x0F) * 4
    hdr = frame[off : off + ihl]
    s = sum(struct.unpack("!%dH" % (len(hdr) // 2), hdr))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def routed(frame, nh):
    """What L2L3-ACL makes of a frame it routes: VLAN popped, MACs rewritten, TTL - 1, IPv4
    checksum recomputed, everything else unchanged."""
    e = Ether(frame)  # every field concrete, as sent
    if Dot1Q in e:
        e = Ether(dst=e.dst, src=e.src, type=e[Dot1Q].type) / e[Dot1Q].payload
    e.dst = nh
    e.src = ROUTER
    e[IP].ttl = (e[IP].ttl - 1) & 0xFF
    del e[IP].chksum
    return bytes(e)


def l2l3_acl_cases():
    cases = []

    def add(name, pkt, nh):
        """pkt: a scapy packet without payload; nh: the next hop MAC it is routed to, or None."""
        n = len(cases)
        frame = bytes(pkt / Raw(marker(n, name) + b"." * 24))
        cases.append(Case(name, frame, routed(frame, nh) if nh else None))

    def udp(dst, src="198.18.0.1", sport=1234, dport=5678, ttl=64, mac_src=HOST_A, mac_dst=ROUTER):
        return Ether(dst=mac_dst, src=mac_src) / IP(src=src, dst=dst, ttl=ttl, id=7) / UDP(sport=sport, dport=dport)

    def tcp(dst, src="198.18.0.1", sport=40001, dport=80, ttl=64):
        return Ether(dst=ROUTER, src=HOST_A) / IP(src=src, dst=dst, ttl=ttl, id=8) / TCP(sport=sport, dport=dport, flags="S", seq=1000)

    add("udp_routed_slash20", udp("198.19.16.5"), nexthop(1))
    add("tcp_routed_slash24", tcp("198.19.1.7"), nexthop(1))
    add("udp_routed_slash24_longest_prefix", udp("198.19.17.9"), nexthop(2))
    add("udp_routed_slash16", udp("198.19.200.1"), nexthop(3))
    add("tcp_routed_default_route", tcp("198.51.100.9"), nexthop(0))
    add("udp_ttl_1_forwarded_with_ttl_0", udp("198.19.16.5", ttl=1), nexthop(1))
    vlan = Ether(dst=ROUTER, src=HOST_A) / Dot1Q(vlan=100) / IP(src="198.18.0.1", dst="198.19.32.7", ttl=17) / UDP(sport=7, dport=9)
    add("vlan100_tagged_routed_and_popped", vlan, nexthop(2))
    foreign = Ether(dst=ROUTER, src=HOST_A) / Dot1Q(vlan=200) / IP(src="198.18.0.1", dst="198.19.32.7") / UDP()
    add("vlan200_tagged_on_port1_dropped", foreign, None)
    add("acl_udp_dropped", udp("198.19.0.1", src="198.18.200.1", sport=40000, dport=53), None)
    add("acl_udp_other_dport_allowed", udp("198.19.0.1", src="198.18.200.1", sport=40000, dport=54), nexthop(0))
    add("acl_tcp_dropped", tcp("198.19.16.2", src="198.18.201.2", sport=40001, dport=80), None)
    add("acl_tcp_other_source_allowed", tcp("198.19.16.2", src="198.18.201.3", sport=40001, dport=80), nexthop(1))
    add("unknown_dst_mac_dropped", udp("198.19.16.5", mac_dst="02:00:00:00:09:99"), None)
    add("unroutable_src_mac_dropped", udp("198.19.16.5", mac_src="02:00:00:00:01:09"), None)
    add("host_mac_of_other_vlan_dropped", udp("198.19.16.5", mac_dst="02:00:00:00:01:03"), None)
    arp = Ether(dst=ROUTER, src=HOST_A) / ARP(op=1, hwsrc=HOST_A, psrc="198.18.0.1", pdst="198.18.0.254")
    add("arp_to_router_dropped", arp, None)
    add("end", udp("198.19.16.5", sport=999, dport=999), nexthop(1))
    return cases


def l2_forward_cases(src, dst):
    cases = []

    def add(name, pkt):
        n = len(cases)
        frame = bytes(pkt / Raw(marker(n, name) + b"-" * 16))
        cases.append(Case(name, frame, frame))

    e = Ether(dst=dst, src=src)
    add("ipv4_udp", e / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2))
    add("ipv4_tcp", e / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=3, dport=4, flags="PA"))
    add("arp_broadcast", Ether(dst="ff:ff:ff:ff:ff:ff", src=src) / ARP(psrc="10.0.0.1", pdst="10.0.0.2"))
    add("ipv6_udp", e / IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=5, dport=6))
    add("dot1q_tagged", e / Dot1Q(vlan=7, prio=5) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP())
    add("qinq", e / Dot1AD(vlan=20) / Dot1Q(vlan=30) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP())
    add("test_ethertype", Ether(dst=dst, src=src, type=0x88B5))
    add("ipv4_multicast", Ether(dst="01:00:5e:00:00:fb", src=src) / IP(src="10.0.0.1", dst="224.0.0.251") / UDP())
    n = len(cases)
    payload = marker(n, "full_1514_bytes").ljust(1514 - 42, b"f")
    frame = bytes(e / IP(src="10.0.0.1", dst="10.0.0.2") / UDP() / Raw(payload))
    assert len(frame) == 1514
    cases.append(Case("full_1514_bytes", frame, frame))
    # A bare Ethernet header: no room for a marker, recognised by its bytes.
    bare = bytes(Ether(dst=dst, src=src, type=0x88B6))
    cases.append(Case("bare_14_byte_header", bare, bare))
    add("end", Ether(dst=dst, src=src, type=0x88B5))
    return cases


SUITES = {
    "l2l3_acl": l2l3_acl_cases,
    "l2_forward": lambda: l2_forward_cases("02:00:00:00:01:01", "02:00:00:00:01:02"),
    "l2_forward_back": lambda: l2_forward_cases("02:00:00:00:01:02", "02:00:00:00:01:01"),
}


def open_socket(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    return s


def recv_frame(s):
    """One received frame with its VLAN tag put back (the kernel strips it into metadata), or
    None for the interface's own transmissions."""
    data, anc, flags, addr = s.recvmsg(65536, socket.CMSG_SPACE(32))
    if addr[2] == PACKET_OUTGOING:
        return None
    if flags & socket.MSG_TRUNC:
        raise RuntimeError("frame truncated")
    for level, typ, cdata in anc:
        if level == SOL_PACKET and typ == PACKET_AUXDATA and len(cdata) >= 20:
            status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", cdata[:20])
            if status & TP_STATUS_VLAN_VALID:
                if not status & TP_STATUS_VLAN_TPID_VALID:
                    tpid = 0x8100
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data


def hexdiff(want, got):
    if len(want) != len(got):
        where = "length %d, expected %d" % (len(got), len(want))
    else:
        first = next(i for i in range(len(want)) if want[i] != got[i])
        where = "first difference at byte %d" % first
    return "%s\n      expected %s\n      received %s" % (where, want.hex(), got.hex())


def cmd_send(iface, cases):
    s = open_socket(iface)
    for c in cases:
        s.send(c.frame)
    print("sent %d frames on %s" % (len(cases), iface))


def cmd_sniff(iface, cases, timeout):
    s = open_socket(iface)
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass  # old kernel: outgoing frames are recognised by their packet type
    print("ready", flush=True)
    end = len(cases) - 1
    got = {}  # case number -> frames
    other = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([s], [], [], 0.1)
        if not r:
            continue
        f = recv_frame(s)
        if f is None:
            continue
        m = MARK.search(f)
        n = int(m.group(1)) if m else next((k for k, c in enumerate(cases) if c.expect == f), None)
        if n is None or n >= len(cases):
            other.append(f)
            continue
        got.setdefault(n, []).append(f)
        if n == end and deadline - time.monotonic() > 0.5:
            deadline = time.monotonic() + 0.5  # linger for anything out of order

    failed = 0
    for n, c in enumerate(cases):
        frames = got.get(n, [])
        problem = None
        if c.expect is None:
            if frames:
                problem = "must be dropped, arrived %d time(s): %s" % (len(frames), frames[0].hex())
        elif not frames:
            problem = "did not arrive (expected %s)" % c.expect.hex()
        elif len(frames) > 1:
            problem = "arrived %d times" % len(frames)
        elif frames[0] != c.expect:
            problem = "differs: " + hexdiff(c.expect, frames[0])
        elif not ipv4_checksum_ok(frames[0]):
            problem = "bad IPv4 header checksum"
        if problem:
            failed += 1
            print("FAIL %-40s %s" % (c.name, problem))
        else:
            what = "dropped" if c.expect is None else "forwarded, %d bytes identical" % len(c.expect)
            print("ok   %-40s %s" % (c.name, what))
    for f in other:
        print("note: other frame on %s: %s" % (iface, f[:64].hex()))
    print("scapy %s on %s: %d cases ok, %d failed" % (sys.argv[3], iface, len(cases) - failed, failed))
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["send", "sniff"])
    p.add_argument("iface")
    p.add_argument("suite", choices=sorted(SUITES))
    p.add_argument("--timeout", type=float, default=15.0)
    a = p.parse_args()
    cases = SUITES[a.suite]()
    if a.mode == "send":
        cmd_send(a.iface, cases)
        return 0
    return cmd_sniff(a.iface, cases, a.timeout)


if __name__ == "__main__":
    sys.exit(main())
