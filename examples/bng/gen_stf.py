#!/usr/bin/env python3
"""Writes the STF tests of examples/bng (upstream.stf, downstream.stf, control.stf) with scapy.

Every frame, sent and expected, is built with scapy's layers: Ether, Dot1AD (the 802.1ad
S-tag), Dot1Q (the C-tag), PPPoE and PPPoED (scapy.layers.ppp, which compute the PPPoE
length), PPP and IP (which computes the checksum), from what RFC 2516 and the subscribers'
sessions say the BNG must send, not from the P4 program. The entries are bng.entries; the
subscribers those of subscribers.txt, written as the controller writes them once each has
opened its PPPoE session (controller.py: session id = subscriber id, the CPE's MAC
02:00:00:00:02:<id>).

    gen_stf.py            write the .stf files next to this script
    gen_stf.py --check    compare them with what scapy builds now (exit 1 on a difference)
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests" / "scapy"))

from nf_stf import Stf, main  # noqa: E402
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption  # noqa: E402
from scapy.layers.inet6 import IPv6  # noqa: E402
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether  # noqa: E402
from scapy.layers.ppp import (PPP, PPP_IPCP, PPP_LCP_Echo, PPPoE, PPPoED,  # noqa: E402
                              PPPoED_Tags, PPPoETag)

AC_MAC, CORE_MAC, ROUTER_MAC = "02:00:00:00:0c:01", "02:00:00:00:0c:02", "02:00:00:00:01:02"
ACCESS_PORT, CORE_PORT, CPU_PORT = 1, 2, 255
SERVER = "10.0.0.2"

KEYS = {
    "my_mac": [("hdr.eth.dst", "exact", 48)],
    "routes": [("hdr.ipv4.dst", "lpm", 32)],
    "lines": [("port", "exact", 9), ("s_vid", "exact", 12), ("c_vid", "exact", 12)],
    "sessions": [("meta.subscriber", "exact", 32), ("hdr.pppoe.session_id", "exact", 16),
                 ("hdr.eth.src", "exact", 48)],
    "downstream": [("hdr.ipv4.dst", "exact", 32)],
}
PARAMS = {
    "for_us": [],
    "set_nexthop": ["smac", "dmac", "port"],
    "set_line": ["subscriber"],
    "session_up": ["addr"],
    "to_subscriber": ["subscriber", "port", "s_vid", "c_vid", "session_id", "cpe_mac",
                      "ac_mac"],
}


def subscribers():
    """subscribers.txt: [(id, port, s_vlan, c_vlan, address, rate)]."""
    out = []
    for raw in (HERE / "subscribers.txt").read_text().splitlines():
        words = raw.split("#", 1)[0].split()
        if words:
            sid, port, s, c, addr, rate = words
            out.append((int(sid), int(port), int(s), int(c), addr, int(rate)))
    return out


SUBS = {s[0]: s for s in subscribers()}


def cpe_mac(sid):
    return "02:00:00:00:02:%02x" % sid


def stf(title):
    s = Stf(title + "\nBuilt by gen_stf.py with scapy.", KEYS, PARAMS)
    s.entries(HERE / "bng.entries")
    s.comment("subscribers.txt with their sessions open, as controller.py writes them")
    for sid, port, sv, cv, addr, _ in SUBS.values():
        s.add("lines", "set_line", [str(port), str(sv), str(cv)], [str(sid)])
        s.add("sessions", "session_up", [str(sid), str(sid), cpe_mac(sid)], [addr])
        s.add("downstream", "to_subscriber", [addr],
              [str(sid), str(port), str(sv), str(cv), str(sid), cpe_mac(sid), AC_MAC])
    return s


def payload(name):
    return b"koi-bng:" + name.encode()


def ip(src, dst, ttl=64, l4=None, name="", **kw):
    if l4 is None:
        l4 = UDP(sport=40000, dport=53)
    return IP(src=src, dst=dst, ttl=ttl, id=21, **kw) / l4 / payload(name)


def tags(sid, s_vlan=None, c_vlan=None, inner_type=0x8864):
    _, _, sv, cv, _, _ = SUBS[sid]
    return (Dot1AD(vlan=sv if s_vlan is None else s_vlan, type=0x8100)
            / Dot1Q(vlan=cv if c_vlan is None else c_vlan, type=inner_type))


def from_cpe(sid, inner, session=None, mac=None, dst=AC_MAC, **tag):
    """A PPPoE session frame of subscriber `sid` (PPP protocol of `inner`: IPv4 unless a PPP
    layer is given)."""
    body = inner if isinstance(inner, PPP) else PPP(proto=0x0021) / inner
    return (Ether(src=mac or cpe_mac(sid), dst=dst) / tags(sid, **tag)
            / PPPoE(sessionid=sid if session is None else session) / body)


def to_core(inner):
    return Ether(src=CORE_MAC, dst=ROUTER_MAC) / inner


def upstream():
    s = stf("examples/bng: upstream, access (port 1) -> core (port 2).")
    addr = {sid: sub[4] for sid, sub in SUBS.items()}
    s.case("subscriber 1, UDP: tags, PPPoE and PPP removed, TTL - 1", ACCESS_PORT,
           from_cpe(1, ip(addr[1], SERVER, name="up1")),
           [(CORE_PORT, to_core(ip(addr[1], SERVER, ttl=63, name="up1")))])
    tcp = TCP(sport=50000, dport=443, flags="S", seq=77)
    s.case("subscriber 2, TCP", ACCESS_PORT,
           from_cpe(2, ip(addr[2], "198.51.100.7", l4=tcp, name="up2")),
           [(CORE_PORT, to_core(ip(addr[2], "198.51.100.7", ttl=63, l4=tcp, name="up2")))])
    s.case("subscriber 3 (S-VLAN 200), ICMP echo", ACCESS_PORT,
           from_cpe(3, ip(addr[3], SERVER, ttl=9, l4=ICMP(id=5, seq=1), name="ping")),
           [(CORE_PORT, to_core(ip(addr[3], SERVER, ttl=8, l4=ICMP(id=5, seq=1),
                                   name="ping")))])
    opts = [IPOption(b"\x94\x04\x00\x00")]
    s.case("IPv4 with options: the incremental checksum update covers them", ACCESS_PORT,
           from_cpe(1, ip(addr[1], SERVER, options=opts, name="opts")),
           [(CORE_PORT, to_core(ip(addr[1], SERVER, ttl=63, options=opts, name="opts")))])
    s.case("unknown line (C-VLAN 99): dropped (DROP_UNKNOWN_LINE)", ACCESS_PORT,
           from_cpe(1, ip(addr[1], SERVER, name="line"), c_vlan=99))
    s.case("subscriber 1's line with session id 7: dropped (DROP_UNKNOWN_SESSION)", ACCESS_PORT,
           from_cpe(1, ip(addr[1], SERVER, name="session"), session=7))
    s.case("subscriber 1's session from another MAC: dropped (DROP_UNKNOWN_SESSION)",
           ACCESS_PORT, from_cpe(1, ip(addr[1], SERVER, name="mac"), mac="02:00:00:00:02:99"))
    s.case("subscriber 1 with subscriber 2's source address: dropped (DROP_SPOOFED)",
           ACCESS_PORT, from_cpe(1, ip(addr[2], SERVER, name="spoof")))
    s.case("TTL 1: dropped (DROP_TTL)", ACCESS_PORT,
           from_cpe(1, ip(addr[1], SERVER, ttl=1, name="ttl")))
    s.case("IPv6 over PPP (0x0057): dropped (DROP_UNSUPPORTED)", ACCESS_PORT,
           from_cpe(1, PPP(proto=0x0057) / IPv6(src="2001:db8::1", dst="2001:db8::2")
                    / UDP() / payload("v6")))
    s.case("PPPoE session frame with code 0x09: dropped (DROP_UNSUPPORTED)", ACCESS_PORT,
           Ether(src=cpe_mac(1), dst=AC_MAC) / tags(1) / PPPoE(code=0x09, sessionid=1)
           / PPP(proto=0x0021) / ip(addr[1], SERVER, name="code"))
    s.case("PPPoE under a single C-tag: dropped (DROP_NOT_SUBSCRIBER)", ACCESS_PORT,
           Ether(src=cpe_mac(1), dst=AC_MAC) / Dot1Q(vlan=11, type=0x8864) / PPPoE(sessionid=1)
           / PPP(proto=0x0021) / ip(addr[1], SERVER, name="single"))
    s.case("IPv4 straight in QinQ: dropped (DROP_NOT_SUBSCRIBER)", ACCESS_PORT,
           Ether(src=cpe_mac(1), dst=AC_MAC) / tags(1, inner_type=0x0800)
           / ip(addr[1], SERVER, name="qinq"))
    s.case("to another MAC than the BNG's: dropped (DROP_NOT_FOR_US)", ACCESS_PORT,
           from_cpe(1, ip(addr[1], SERVER, name="notus"), dst="02:00:00:00:0c:99"))
    s.case("PPPoE header cut short: dropped (DROP_MALFORMED)", ACCESS_PORT,
           Ether(src=cpe_mac(1), dst=AC_MAC) / tags(1) / b"\x11\x00\x00")
    return s


def downstream():
    s = stf("examples/bng: downstream, core (port 2) -> access (port 1).")

    def to_cpe(sid, inner):
        return (Ether(src=AC_MAC, dst=cpe_mac(sid)) / tags(sid) / PPPoE(sessionid=sid)
                / PPP(proto=0x0021) / inner)

    def from_core(inner):
        return Ether(src=ROUTER_MAC, dst=CORE_MAC) / inner

    addr = {sid: sub[4] for sid, sub in SUBS.items()}
    s.case("to subscriber 1: PPPoE session 1, PPP, C-VLAN 11, S-VLAN 100; TTL - 1", CORE_PORT,
           from_core(ip(SERVER, addr[1], name="down1")),
           [(ACCESS_PORT, to_cpe(1, ip(SERVER, addr[1], ttl=63, name="down1")))])
    tcp = TCP(sport=443, dport=50000, flags="SA", seq=9, ack=78)
    s.case("to subscriber 2 (policed; its meter not configured here: green)", CORE_PORT,
           from_core(ip("198.51.100.7", addr[2], l4=tcp, name="down2")),
           [(ACCESS_PORT, to_cpe(2, ip("198.51.100.7", addr[2], ttl=63, l4=tcp,
                                       name="down2")))])
    s.case("to subscriber 3 (S-VLAN 200)", CORE_PORT,
           from_core(ip(SERVER, addr[3], l4=ICMP(type=0, id=5, seq=1), name="pong")),
           [(ACCESS_PORT, to_cpe(3, ip(SERVER, addr[3], ttl=63, l4=ICMP(type=0, id=5, seq=1),
                                       name="pong")))])
    big = b"b" * 1400
    s.case("1,400 bytes of payload: the PPPoE length covers them", CORE_PORT,
           from_core(ip(SERVER, addr[1], name="big") / big),
           [(ACCESS_PORT, to_cpe(1, ip(SERVER, addr[1], ttl=63, name="big") / big))])
    opts = [IPOption(b"\x94\x04\x00\x00")]
    s.case("IPv4 with options", CORE_PORT,
           from_core(ip(SERVER, addr[1], options=opts, name="opts")),
           [(ACCESS_PORT, to_cpe(1, ip(SERVER, addr[1], ttl=63, options=opts, name="opts")))])
    s.case("to 100.64.0.99, no subscriber: dropped (DROP_UNKNOWN_SUBSCRIBER)", CORE_PORT,
           from_core(ip(SERVER, "100.64.0.99", name="nosub")))
    s.case("to subscriber 1 with TTL 1: dropped (DROP_TTL)", CORE_PORT,
           from_core(ip(SERVER, addr[1], ttl=1, name="ttl")))
    s.case("ARP from the core: dropped (DROP_NOT_IPV4)", CORE_PORT,
           Ether(src=ROUTER_MAC, dst=CORE_MAC) / ARP(psrc=SERVER, pdst="10.0.0.1"))
    return s


def control():
    s = stf("examples/bng: control traffic to the controller (CPU port 255, packet-in header:\n"
            "9 bits of ingress port, 7 of reason), and the controller's packet-outs.")

    def to_cpu(reason, frame):
        # packet_in: ingress_port 1 (9 bits), reason (7 bits)
        return bytes([ACCESS_PORT >> 1, ((ACCESS_PORT & 1) << 7) | reason]) + bytes(frame)

    host_uniq = PPPoETag(tag_type=0x0103, tag_value=b"\x00\x00\x12\x34")
    service = PPPoETag(tag_type=0x0101, tag_value=b"")
    padi = (Ether(src=cpe_mac(1), dst="ff:ff:ff:ff:ff:ff") / tags(1, inner_type=0x8863)
            / PPPoED(code=0x09) / PPPoED_Tags(tag_list=[service, host_uniq]))
    s.case("PADI (broadcast): to the controller, reason 1 (discovery)", ACCESS_PORT, padi,
           [(CPU_PORT, to_cpu(1, padi))])
    padr = (Ether(src=cpe_mac(1), dst=AC_MAC) / tags(1, inner_type=0x8863)
            / PPPoED(code=0x19) / PPPoED_Tags(tag_list=[service, host_uniq]))
    s.case("PADR: to the controller", ACCESS_PORT, padr, [(CPU_PORT, to_cpu(1, padr))])
    padt = (Ether(src=cpe_mac(1), dst=AC_MAC) / tags(1, inner_type=0x8863)
            / PPPoED(code=0xa7, sessionid=1))
    s.case("PADT: to the controller", ACCESS_PORT, padt, [(CPU_PORT, to_cpu(1, padt))])
    echo = from_cpe(1, PPP(proto=0xc021) / PPP_LCP_Echo(code=9, id=3, magic_number=0x1234))
    s.case("LCP echo request in session 1: to the controller, reason 2 (PPP control)",
           ACCESS_PORT, echo, [(CPU_PORT, to_cpu(2, echo))])
    ipcp = from_cpe(1, PPP(proto=0x8021) / PPP_IPCP(code=1, id=1))
    s.case("IPCP configure request: to the controller", ACCESS_PORT, ipcp,
           [(CPU_PORT, to_cpu(2, ipcp))])
    s.case("LCP from an unknown line: to the controller all the same", ACCESS_PORT,
           from_cpe(1, PPP(proto=0xc021) / PPP_LCP_Echo(code=9, id=4), c_vlan=98),
           [(CPU_PORT, to_cpu(2, from_cpe(1, PPP(proto=0xc021) / PPP_LCP_Echo(code=9, id=4),
                                          c_vlan=98)))])
    pado = (Ether(src=AC_MAC, dst=cpe_mac(1)) / tags(1, inner_type=0x8863)
            / PPPoED(code=0x07) / PPPoED_Tags(tag_list=[
                PPPoETag(tag_type=0x0102, tag_value=b"koi-bng"), service, host_uniq]))
    # packet_out: egress_port 1 (9 bits), 7 bits of padding
    s.case("the controller's PADO (packet-out to port 1): sent as it is", CPU_PORT,
           bytes([0x00, 0x80]) + bytes(pado), [(ACCESS_PORT, pado)])
    return s


if __name__ == "__main__":
    main({"upstream.stf": upstream, "downstream.stf": downstream, "control.stf": control},
         __doc__.split("\n\n")[0])
