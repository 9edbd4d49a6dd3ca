#!/usr/bin/env python3
"""Writes the STF tests of examples/upf (uplink.stf, downlink.stf) with scapy.

Every frame, sent and expected, is built with scapy's layers: GTP-U from scapy.contrib.gtp
(GTP_U_Header, GTPPDUSessionContainer), which computes the GTP-U length, and IP/UDP, which
compute the lengths and checksums (the UDP checksum of a downlink tunnel over the whole UE
packet). The expected frames say what TS 29.281 and TS 38.415 make of the sessions, not what
the P4 program does. The entries are upf.entries; the sessions those of sessions.txt, written
as the controller writes them (controller.py: table uplink by TEID, downlink by UE address).

    gen_stf.py            write the .stf files next to this script
    gen_stf.py --check    compare them with what scapy builds now (exit 1 on a difference)
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests" / "scapy"))

from nf_stf import Stf, main  # noqa: E402
from scapy.contrib.gtp import GTP_U_Header, GTPEchoRequest, GTPPDUSessionContainer  # noqa: E402
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import ARP, Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402

UPF_N3_MAC, UPF_N6_MAC = "02:00:00:00:0b:03", "02:00:00:00:0b:06"
GNB1_MAC, GNB2_MAC, DN_MAC = "02:00:00:00:01:01", "02:00:00:00:01:03", "02:00:00:00:01:02"
UPF_N3 = "10.100.0.1"
DN_HOST = "10.200.0.2"
N3_PORT, N6_PORT, CPU_PORT = 1, 2, 255

KEYS = {
    "my_mac": [("hdr.eth.dst", "exact", 48)],
    "n3_address": [("hdr.ipv4.dst", "exact", 32)],
    "qos": [("meta.qfi", "exact", 6)],
    "routes": [("meta.route_dst", "lpm", 32)],
    "uplink": [("hdr.gtpu.teid", "exact", 32)],
    "downlink": [("hdr.ipv4.dst", "exact", 32)],
}
PARAMS = {
    "for_us": [],
    "n3": [],
    "set_n3_source": ["addr"],
    "set_dscp": ["dscp"],
    "set_nexthop": ["smac", "dmac", "port"],
    "set_uplink": ["session", "ue_addr"],
    "set_downlink": ["session", "teid", "gnb_addr", "qfi"],
}


def sessions():
    """sessions.txt: [(id, ue, teid_up, teid_dn, gnb, qfi)]."""
    out = []
    for raw in (HERE / "sessions.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].split()
        if line:
            sid, ue, up, dn, gnb, qfi = line
            out.append((int(sid), ue, int(up, 0), int(dn, 0), gnb, int(qfi)))
    return out


SESSIONS = sessions()
GNB_MAC = {"10.100.0.2": GNB1_MAC, "10.100.0.3": GNB2_MAC}


def stf(title):
    s = Stf(title + "\nBuilt by gen_stf.py with scapy.", KEYS, PARAMS)
    s.entries(HERE / "upf.entries")
    s.comment("sessions.txt, as controller.py writes them")
    for sid, ue, up, dn, gnb, qfi in SESSIONS:
        s.add("uplink", "set_uplink", [hex(up)], [str(sid), ue])
        s.add("downlink", "set_downlink", [ue], [str(sid), hex(dn), gnb, str(qfi)])
    return s


def payload(name):
    return b"koi-upf:" + name.encode()


def ue_packet(src, dst, ttl=64, tos=0, l4=None, name="", **kw):
    if l4 is None:
        l4 = UDP(sport=40000, dport=5000)
    return IP(src=src, dst=dst, ttl=ttl, tos=tos, id=11, **kw) / l4 / payload(name)


def n3_frame(teid, inner, gnb="10.100.0.2", dst=UPF_N3, qfi=None, **gtp):
    """A G-PDU from a gNB: with an UL PDU session container when `qfi` is given."""
    if qfi is not None:
        tun = GTP_U_Header(gtp_type=255, teid=teid, E=1, next_ex=0x85, **gtp) \
            / GTPPDUSessionContainer(type=1, QFI=qfi)
    else:
        tun = GTP_U_Header(gtp_type=255, teid=teid, **gtp)
    return (Ether(src=GNB_MAC.get(gnb, GNB1_MAC), dst=UPF_N3_MAC)
            / IP(src=gnb, dst=dst, ttl=60, id=99) / UDP(sport=2152, dport=2152) / tun / inner)


def to_dn(inner):
    return Ether(src=UPF_N6_MAC, dst=DN_MAC) / inner


def uplink():
    s = stf("examples/upf: uplink, N3 (port 1) -> N6 (port 2), and GTP-U signalling to the\n"
            "controller (CPU port 255).")
    (s1, ue1, up1, _, _, _), (s2, ue2, up2, _, _, _), (s3, ue3, up3, _, gnb3, _) = SESSIONS
    s.case("session 1, UL PDU session container QFI 9 (no DSCP for it): decapsulated, TTL - 1",
           N3_PORT, n3_frame(up1, ue_packet(ue1, DN_HOST, tos=0x20, name="ul1"), qfi=9),
           [(N6_PORT, to_dn(ue_packet(ue1, DN_HOST, ttl=63, tos=0x20, name="ul1")))])
    s.case("session 2, QFI 1: decapsulated and marked EF (DSCP 46), ECN kept", N3_PORT,
           n3_frame(up2, ue_packet(ue2, "8.8.8.8", tos=0x02, name="ul2"), qfi=1),
           [(N6_PORT, to_dn(ue_packet(ue2, "8.8.8.8", ttl=63, tos=(46 << 2) | 2, name="ul2")))])
    s.case("session 3 from gNB 2, QFI 2: marked AF41 (34); TCP", N3_PORT,
           n3_frame(up3, ue_packet(ue3, DN_HOST, l4=TCP(sport=50000, dport=443, flags="PA",
                                                       seq=5, ack=9), name="ul3"),
                    gnb=gnb3, qfi=2),
           [(N6_PORT, to_dn(ue_packet(ue3, DN_HOST, ttl=63, tos=34 << 2,
                                      l4=TCP(sport=50000, dport=443, flags="PA", seq=5,
                                             ack=9), name="ul3")))])
    s.case("no extension header (E=0, QFI unknown): decapsulated, DSCP kept", N3_PORT,
           n3_frame(up1, ue_packet(ue1, DN_HOST, tos=0xb8, name="noext")),
           [(N6_PORT, to_dn(ue_packet(ue1, DN_HOST, ttl=63, tos=0xb8, name="noext")))])
    s.case("sequence number present (S=1, E=0): decapsulated", N3_PORT,
           n3_frame(up1, ue_packet(ue1, DN_HOST, name="seq"), S=1, seq=0x1234),
           [(N6_PORT, to_dn(ue_packet(ue1, DN_HOST, ttl=63, name="seq")))])
    s.case("sequence number and the container (S=1, E=1): decapsulated", N3_PORT,
           n3_frame(up2, ue_packet(ue2, DN_HOST, name="seqext"), qfi=1, S=1, seq=7),
           [(N6_PORT, to_dn(ue_packet(ue2, DN_HOST, ttl=63, tos=46 << 2, name="seqext")))])
    opts = [IPOption(b"\x94\x04\x00\x00")]
    s.case("UE packet with IPv4 options: decapsulated, checksum over the options", N3_PORT,
           n3_frame(up1, ue_packet(ue1, DN_HOST, options=opts, name="opts"), qfi=9),
           [(N6_PORT, to_dn(ue_packet(ue1, DN_HOST, ttl=63, options=opts, name="opts")))])
    s.case("ICMP echo from the UE", N3_PORT,
           n3_frame(up1, IP(src=ue1, dst=DN_HOST, id=3) / ICMP(id=1, seq=1) / payload("ping"),
                    qfi=9),
           [(N6_PORT, to_dn(IP(src=ue1, dst=DN_HOST, id=3, ttl=63) / ICMP(id=1, seq=1)
                            / payload("ping")))])
    s.case("unknown TEID 0x999: dropped (DROP_UNKNOWN_TEID)", N3_PORT,
           n3_frame(0x999, ue_packet(ue1, DN_HOST, name="teid"), qfi=9))
    s.case("session 1's TEID with session 2's UE address: dropped (DROP_UE_MISMATCH)", N3_PORT,
           n3_frame(up1, ue_packet(ue2, DN_HOST, name="spoof"), qfi=9))
    s.case("UE packet with TTL 1: dropped (DROP_TTL)", N3_PORT,
           n3_frame(up1, ue_packet(ue1, DN_HOST, ttl=1, name="ttl"), qfi=9))
    s.case("GTP-U to 10.100.0.9, not an N3 address of this UPF: dropped (DROP_NOT_N3)", N3_PORT,
           n3_frame(up1, ue_packet(ue1, DN_HOST, name="notn3"), dst="10.100.0.9", qfi=9))
    s.case("another extension header (UDP port, 0x40): dropped (DROP_UNSUPPORTED)", N3_PORT,
           Ether(src=GNB1_MAC, dst=UPF_N3_MAC) / IP(src="10.100.0.2", dst=UPF_N3, id=99)
           / UDP(sport=2152, dport=2152)
           / GTP_U_Header(gtp_type=255, teid=up1, E=1, next_ex=0x40)
           / Raw(b"\x01\x08\x68\x00") / ue_packet(ue1, DN_HOST, name="ext40"))
    s.case("IPv6 T-PDU: dropped (DROP_UNSUPPORTED)", N3_PORT,
           n3_frame(up1, IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP() / payload("v6"),
                    qfi=9))
    s.case("GTP-U header cut short: dropped (DROP_MALFORMED)", N3_PORT,
           Ether(src=GNB1_MAC, dst=UPF_N3_MAC) / IP(src="10.100.0.2", dst=UPF_N3, id=99)
           / UDP(sport=2152, dport=2152) / b"\x34\xff\x00")
    echo = (Ether(src=GNB1_MAC, dst=UPF_N3_MAC) / IP(src="10.100.0.2", dst=UPF_N3, id=99)
            / UDP(sport=2152, dport=2152) / GTP_U_Header(gtp_type=1, S=1, seq=42)
            / GTPEchoRequest())
    # packet_in: ingress_port (9 bits) = 1, reason (7 bits) = 1 (TO_CPU_GTPU_SIGNALLING)
    s.case("GTP-U echo request: to the controller, with a packet_in header (port 1, reason 1)",
           N3_PORT, echo, [(CPU_PORT, bytes.fromhex("0081") + bytes(echo))])
    reply = (Ether(src=UPF_N3_MAC, dst=GNB1_MAC) / IP(src=UPF_N3, dst="10.100.0.2")
             / UDP(sport=2152, dport=2152) / GTP_U_Header(gtp_type=2, S=1, seq=42))
    # packet_out: egress_port (9 bits) = 1, 7 bits of padding
    s.case("the controller's echo response (packet-out to port 1): sent as it is", CPU_PORT,
           bytes.fromhex("0080") + bytes(reply), [(N3_PORT, reply)])
    s.case("ARP on N3: dropped (DROP_NOT_IPV4)", N3_PORT,
           Ether(src=GNB1_MAC, dst=UPF_N3_MAC) / ARP(psrc="10.100.0.2", pdst=UPF_N3))
    return s


def downlink():
    s = stf("examples/upf: downlink, N6 (port 2) -> N3 (port 1).")

    def to_gnb(sid, inner, dscp=None):
        _, ue, _, teid, gnb, qfi = SESSIONS[sid - 1]
        tos = (dscp << 2) if dscp is not None else inner[IP].tos & 0xFC
        return (Ether(src=UPF_N3_MAC, dst=GNB_MAC[gnb])
                / IP(src=UPF_N3, dst=gnb, ttl=64, id=0, flags=0, tos=tos)
                / UDP(sport=2152, dport=2152)
                / GTP_U_Header(gtp_type=255, teid=teid, E=1, next_ex=0x85)
                / GTPPDUSessionContainer(type=0, QFI=qfi) / inner)

    def from_dn(inner):
        return Ether(src=DN_MAC, dst=UPF_N6_MAC) / inner

    ue = {sid: u for sid, u, *_ in SESSIONS}
    s.case("to UE 1 (QFI 9, not remarked): tunnelled to gNB 1, outer DSCP copied", N6_PORT,
           from_dn(ue_packet(DN_HOST, ue[1], tos=0x28, name="dl1")),
           [(N3_PORT, to_gnb(1, ue_packet(DN_HOST, ue[1], ttl=63, tos=0x28, name="dl1")))])
    s.case("to UE 2 (QFI 1): outer DSCP EF (46), the UE packet's DSCP kept", N6_PORT,
           from_dn(ue_packet("8.8.8.8", ue[2], tos=0x01, name="dl2")),
           [(N3_PORT, to_gnb(2, ue_packet("8.8.8.8", ue[2], ttl=63, tos=0x01, name="dl2"),
                             dscp=46))])
    s.case("to UE 3 (QFI 2) on gNB 2: outer DSCP AF41 (34); TCP", N6_PORT,
           from_dn(ue_packet(DN_HOST, ue[3], l4=TCP(sport=443, dport=50000, flags="A", seq=1,
                                                     ack=2), name="dl3")),
           [(N3_PORT, to_gnb(3, ue_packet(DN_HOST, ue[3], ttl=63,
                                          l4=TCP(sport=443, dport=50000, flags="A", seq=1,
                                                 ack=2), name="dl3"), dscp=34))])
    big = b"x" * 1000
    s.case("a 1,000-byte payload: the UDP checksum covers all of it", N6_PORT,
           from_dn(ue_packet(DN_HOST, ue[1], name="big") / big),
           [(N3_PORT, to_gnb(1, ue_packet(DN_HOST, ue[1], ttl=63, name="big") / big))])
    opts = [IPOption(b"\x94\x04\x00\x00")]
    s.case("UE packet with IPv4 options: tunnelled whole", N6_PORT,
           from_dn(ue_packet(DN_HOST, ue[1], options=opts, name="opts")),
           [(N3_PORT, to_gnb(1, ue_packet(DN_HOST, ue[1], ttl=63, options=opts,
                                          name="opts")))])
    s.case("ICMP echo reply to UE 1", N6_PORT,
           from_dn(IP(src=DN_HOST, dst=ue[1], id=3) / ICMP(type=0, id=1, seq=1)
                   / payload("pong")),
           [(N3_PORT, to_gnb(1, IP(src=DN_HOST, dst=ue[1], id=3, ttl=63)
                             / ICMP(type=0, id=1, seq=1) / payload("pong")))])
    s.case("to 10.45.0.99, no session: dropped (DROP_UNKNOWN_UE)", N6_PORT,
           from_dn(ue_packet(DN_HOST, "10.45.0.99", name="nosession")))
    s.case("to UE 1 with TTL 1: dropped (DROP_TTL)", N6_PORT,
           from_dn(ue_packet(DN_HOST, ue[1], ttl=1, name="ttl")))
    s.case("not the UPF's MAC: dropped (DROP_NOT_FOR_US)", N6_PORT,
           Ether(src=DN_MAC, dst="02:00:00:00:0b:99") / ue_packet(DN_HOST, ue[1], name="mac"))
    s.case("IPv4 header cut short: dropped (DROP_MALFORMED)", N6_PORT,
           Ether(src=DN_MAC, dst=UPF_N6_MAC, type=0x0800) / bytes(ue_packet(DN_HOST, ue[1]))[:16])
    return s


if __name__ == "__main__":
    main({"uplink.stf": uplink, "downlink.stf": downlink}, __doc__.split("\n\n")[0])
