#!/usr/bin/env python3
"""Writes the STF tests of examples/mpls (ingress_ler.stf, lsr.stf, egress_ler.stf) with scapy.

Every frame, sent and expected, is built with scapy's Ether, MPLS (scapy.contrib.mpls) and IP
layers from what RFC 3032 and RFC 3443 (uniform TTL model) say the router must send, not from
the P4 program; scapy computes the IPv4 checksums. Each file loads the entries of one node of
the example network (pe1.entries, p.entries, pe2.entries) and sends that node's cases.

    gen_stf.py            write the .stf files next to this script
    gen_stf.py --check    compare them with what scapy builds now (exit 1 on a difference)
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests" / "scapy"))

from nf_stf import Stf, main  # noqa: E402
from scapy.contrib.mpls import MPLS  # noqa: E402
from scapy.layers.inet import IP, TCP, UDP, IPOption  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import ARP, Ether  # noqa: E402

PE1, P, PE2 = "02:00:00:00:0a:01", "02:00:00:00:0a:02", "02:00:00:00:0a:03"
CE1, CE2 = "02:00:00:00:01:01", "02:00:00:00:01:02"

KEYS = {
    "my_mac": [("hdr.eth.dst", "exact", 48)],
    "fec": [("hdr.ipv4.dst", "lpm", 32)],
    "ftn": [("meta.fec", "exact", 16)],
    "lfib": [("hdr.mpls[0].label", "exact", 20)],
    "nexthop": [("meta.nhop", "exact", 16)],
}
PARAMS = {
    "for_us": [],
    "set_fec": ["fec"],
    "route": ["nhop"],
    "push_one": ["label", "nhop"],
    "push_two": ["bottom", "top", "nhop"],
    "swap": ["label", "nhop"],
    "swap_push": ["label", "push_label", "nhop"],
    "php": ["nhop"],
    "pop_lookup": [],
    "set_nexthop": ["smac", "dmac", "port"],
}


def payload(name):
    return b"koi-mpls:" + name.encode()


def ip(dst, ttl, src="10.1.0.1", tos=0, l4=None, name="", **kw):
    """An IPv4 packet; scapy fills in lengths and the checksum."""
    if l4 is None:
        l4 = UDP(sport=40000, dport=5000)
    return IP(src=src, dst=dst, ttl=ttl, tos=tos, id=7, **kw) / l4 / payload(name)


def ingress_ler():
    s = Stf("examples/mpls: PE1 as the ingress LER (CE1 on port 1, P on port 2), and as the\n"
            "egress of CE2's traffic that P popped. Built by gen_stf.py with scapy.", KEYS, PARAMS)
    s.entries(HERE / "pe1.entries")
    fwd = lambda *labels: Ether(src=PE1, dst=P) / labels_of(*labels)  # noqa: E731

    def labels_of(*labels):
        stack = None
        for k, (label, tc, ttl) in enumerate(labels):
            m = MPLS(label=label, cos=tc, s=int(k == len(labels) - 1), ttl=ttl)
            stack = m if stack is None else stack / m
        return stack

    def from_ce1(inner):
        return Ether(src=CE1, dst=PE1) / inner

    s.case("FEC 1: one label 16001, label TTL = IP TTL - 1, IP TTL decremented too", 1,
           from_ce1(ip("10.2.0.1", 64, name="fec1")),
           [(2, fwd((16001, 0, 63)) / ip("10.2.0.1", 63, name="fec1"))])
    s.case("FEC 2: label 16002; traffic class from the IP precedence (DSCP EF -> 5)", 1,
           from_ce1(ip("10.2.1.9", 20, tos=0xb8, name="fec2")),
           [(2, fwd((16002, 5, 19)) / ip("10.2.1.9", 19, tos=0xb8, name="fec2"))])
    s.case("FEC 3: two labels, transport 16003 over service 24001, both with the TTL", 1,
           from_ce1(ip("10.2.2.1", 64, tos=0x28, name="fec3")),
           [(2, fwd((16003, 1, 63), (24001, 1, 63)) / ip("10.2.2.1", 63, tos=0x28, name="fec3"))])
    s.case("FEC 4: TCP, label 16004", 1,
           from_ce1(ip("10.2.3.200", 255, l4=TCP(sport=33000, dport=80, flags="S", seq=1),
                       name="fec4")),
           [(2, fwd((16004, 0, 254)) / ip("10.2.3.200", 254,
                                          l4=TCP(sport=33000, dport=80, flags="S", seq=1),
                                          name="fec4"))])
    opts = [IPOption(b"\x94\x04\x00\x00")]  # router alert: IHL 6, covered by the checksum
    s.case("IPv4 with options: pushed, checksum over the options", 1,
           from_ce1(ip("10.2.0.77", 9, options=opts, name="opts")),
           [(2, fwd((16001, 0, 8)) / ip("10.2.0.77", 8, options=opts, name="opts"))])
    s.case("IP TTL 2: leaves with label TTL 1 (the next hop drops it)", 1,
           from_ce1(ip("10.2.0.1", 2, name="ttl2")),
           [(2, fwd((16001, 0, 1)) / ip("10.2.0.1", 1, name="ttl2"))])
    s.case("IP TTL 1: expires here, dropped (DROP_TTL)", 1, from_ce1(ip("10.2.0.1", 1, name="ttl1")))
    s.case("IP TTL 0: dropped (DROP_TTL)", 1, from_ce1(ip("10.2.0.1", 0, name="ttl0")))
    s.case("no FEC and no route for 10.9.0.1: dropped (DROP_NO_ROUTE)", 1,
           from_ce1(ip("10.9.0.1", 64, name="noroute")))
    s.case("not this router's MAC: dropped (DROP_NOT_FOR_US)", 1,
           Ether(src=CE1, dst="02:00:00:00:0a:99") / ip("10.2.0.1", 64, name="mac"))
    s.case("ARP: dropped (DROP_ETHERTYPE)", 1,
           Ether(src=CE1, dst=PE1) / ARP(psrc="10.1.0.1", pdst="10.1.255.254", hwsrc=CE1))
    s.case("truncated IPv4 header: dropped (DROP_MALFORMED)", 1,
           Ether(src=CE1, dst=PE1, type=0x0800) / bytes(ip("10.2.0.1", 64))[:12])
    ihl4 = bytearray(bytes(ip("10.2.0.1", 64, name="ihl4")))
    ihl4[0] = 0x44
    s.case("IHL 4: dropped (DROP_MALFORMED)", 1, Ether(src=CE1, dst=PE1, type=0x0800) / bytes(ihl4))
    s.case("CE2's packet popped by P (PHP) arrives as IPv4: routed to CE1, TTL decremented", 2,
           Ether(src=P, dst=PE1) / ip("10.1.0.1", 61, src="10.2.0.1", name="back"),
           [(1, Ether(src=PE1, dst=CE1) / ip("10.1.0.1", 60, src="10.2.0.1", name="back"))])
    return s


def mpls_frame(src, dst, labels, inner):
    frame = Ether(src=src, dst=dst)
    for k, (label, tc, ttl) in enumerate(labels):
        frame = frame / MPLS(label=label, cos=tc, s=int(k == len(labels) - 1), ttl=ttl)
    return frame / inner


def lsr():
    s = Stf("examples/mpls: P as the LSR between PE1 (port 1) and PE2 (port 2).\n"
            "Built by gen_stf.py with scapy.", KEYS, PARAMS)
    s.entries(HERE / "p.entries")
    s.comment("a tunnel entry of this test's own: swap 16005 to 17005 and push 18005 on top")
    s.add("lfib", "swap_push", ["16005"], ["17005", "18005", "2"])
    inner = lambda ttl, name, dst="10.2.0.1": ip(dst, ttl, name=name)  # noqa: E731
    from_pe1 = lambda labels, inner_: mpls_frame(PE1, P, labels, inner_)  # noqa: E731
    to_pe2 = lambda labels, inner_: mpls_frame(P, PE2, labels, inner_)  # noqa: E731

    s.case("PHP of the bottom label 16001: the IP TTL becomes the label TTL - 1 (uniform)", 1,
           from_pe1([(16001, 3, 40)], inner(63, "php")),
           [(2, Ether(src=P, dst=PE2) / ip("10.2.0.1", 39, name="php"))])
    s.case("16002 swapped to explicit null 0, TTL decremented, traffic class kept", 1,
           from_pe1([(16002, 5, 63)], inner(63, "null", "10.2.1.9")),
           [(2, to_pe2([(0, 5, 62)], inner(63, "null", "10.2.1.9")))])
    s.case("PHP of transport label 16003 over 24001: the service label gets TTL - 1", 1,
           from_pe1([(16003, 1, 63), (24001, 1, 63)], inner(63, "php2", "10.2.2.1")),
           [(2, to_pe2([(24001, 1, 62)], inner(63, "php2", "10.2.2.1")))])
    s.case("16004 swapped to 17004", 1,
           from_pe1([(16004, 0, 100)], inner(63, "swap", "10.2.3.1")),
           [(2, to_pe2([(17004, 0, 99)], inner(63, "swap", "10.2.3.1")))])
    s.case("a stack of four labels: only the top one is swapped", 1,
           from_pe1([(16004, 2, 50), (30001, 2, 64), (30002, 2, 64), (30003, 2, 64)],
                    inner(64, "deep")),
           [(2, to_pe2([(17004, 2, 49), (30001, 2, 64), (30002, 2, 64), (30003, 2, 64)],
                       inner(64, "deep")))])
    s.case("swap_push: 16005 swapped to 17005, 18005 pushed on top with its TTL and TC", 1,
           from_pe1([(16005, 4, 30)], inner(63, "tunnel")),
           [(2, to_pe2([(18005, 4, 29), (17005, 4, 29)], inner(63, "tunnel")))])
    s.case("swap_push onto a full stack of four: dropped (DROP_STACK_FULL)", 1,
           from_pe1([(16005, 0, 30), (1, 0, 1), (2, 0, 1), (30003, 0, 1)], inner(63, "full")))
    s.case("five labels: more than the stack holds, dropped (DROP_MALFORMED)", 1,
           from_pe1([(16004, 0, 9), (1, 0, 1), (2, 0, 1), (4, 0, 1), (5, 0, 1)],
                    inner(63, "five")))
    s.case("swap over an IPv6 payload: the LSR does not look under the stack", 1,
           from_pe1([(16004, 0, 64)], IPv6(src="2001:db8::1", dst="2001:db8::2", hlim=9)
                    / UDP(sport=1, dport=2) / payload("v6")),
           [(2, to_pe2([(17004, 0, 63)], IPv6(src="2001:db8::1", dst="2001:db8::2", hlim=9)
                       / UDP(sport=1, dport=2) / payload("v6")))])
    s.case("PHP of a bottom label over IPv6: no IPv4 to pass on, dropped (DROP_BAD_POP)", 1,
           from_pe1([(16001, 0, 64)], IPv6(src="2001:db8::1", dst="2001:db8::2")
                    / UDP(sport=1, dport=2) / payload("v6pop")))
    s.case("label TTL 1: expires here, dropped (DROP_TTL)", 1,
           from_pe1([(16004, 0, 1)], inner(63, "ttl1")))
    s.case("unknown label 99999: dropped (DROP_UNKNOWN_LABEL)", 1,
           from_pe1([(99999, 0, 64)], inner(63, "unknown")))
    s.case("PE2 -> PE1: PHP of 16101, routed to PE1 as IPv4", 2,
           mpls_frame(PE2, P, [(16101, 0, 63)], ip("10.1.0.1", 63, src="10.2.0.1", name="back")),
           [(1, Ether(src=P, dst=PE1) / ip("10.1.0.1", 62, src="10.2.0.1", name="back"))])
    s.case("truncated label stack (2 of 4 bytes): dropped (DROP_MALFORMED)", 1,
           Ether(src=PE1, dst=P, type=0x8847) / b"\x03\xe8")
    return s


def egress_ler():
    s = Stf("examples/mpls: PE2 as the egress LER (P on port 1, CE2 on port 2), and as the\n"
            "ingress of CE2's traffic. Built by gen_stf.py with scapy.", KEYS, PARAMS)
    s.entries(HERE / "pe2.entries")
    from_p = lambda labels, inner_: mpls_frame(P, PE2, labels, inner_)  # noqa: E731
    to_ce2 = lambda inner_: Ether(src=PE2, dst=CE2) / inner_  # noqa: E731

    s.case("explicit null: popped, IP TTL = label TTL - 1, routed to CE2", 1,
           from_p([(0, 5, 62)], ip("10.2.1.9", 63, tos=0xb8, name="null")),
           [(2, to_ce2(ip("10.2.1.9", 61, tos=0xb8, name="null")))])
    s.case("service label 24001 (bottom): popped and routed", 1,
           from_p([(24001, 1, 62)], ip("10.2.2.1", 63, name="svc")),
           [(2, to_ce2(ip("10.2.2.1", 61, name="svc")))])
    s.case("own label 17004: popped and routed; a label TTL above the IP TTL wins too", 1,
           from_p([(17004, 0, 200)], ip("10.2.3.1", 10, name="own")),
           [(2, to_ce2(ip("10.2.3.1", 199, name="own")))])
    s.case("explicit null over a service label: pop_lookup of a label not at the bottom, "
           "dropped (DROP_BAD_POP)", 1,
           from_p([(0, 0, 62), (24001, 0, 62)], ip("10.2.2.1", 63, name="nullsvc")))
    s.case("label 16001 is not PE2's (P should have popped it): dropped (DROP_UNKNOWN_LABEL)",
           1, from_p([(16001, 0, 62)], ip("10.2.0.1", 63, name="notmine")))
    s.case("popped by P (PHP): IPv4 routed to CE2, TTL decremented", 1,
           Ether(src=P, dst=PE2) / ip("10.2.0.1", 62, name="php"),
           [(2, to_ce2(ip("10.2.0.1", 61, name="php")))])
    s.case("explicit null with TTL 1: dropped (DROP_TTL)", 1,
           from_p([(0, 0, 1)], ip("10.2.1.9", 63, name="ttl")))
    s.case("CE2 -> CE1: pushed as 16101 toward P", 2,
           Ether(src=CE2, dst=PE2) / ip("10.1.0.1", 64, src="10.2.0.1", name="back"),
           [(1, mpls_frame(PE2, P, [(16101, 0, 63)],
                           ip("10.1.0.1", 63, src="10.2.0.1", name="back")))])
    return s


if __name__ == "__main__":
    main({"ingress_ler.stf": ingress_ler, "lsr.stf": lsr, "egress_ler.stf": egress_ler},
         __doc__.split("\n\n")[0])
