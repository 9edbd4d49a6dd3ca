#!/usr/bin/env python3
"""scapy frames through koi's network-function examples (MPLS, UPF, BNG), for the end-to-end
tests in crates/koi/tests/e2e_nf_encap.rs.

    nf_frames.py send IFACE SUITE [--file F] [--before F] [--open IDS]
    nf_frames.py sniff IFACE SUITE [--file F] [--before F] [--open IDS] [--sink-udp PORT]
    nf_frames.py ask IFACE SUITE [--file F] [--open IDS]
    nf_frames.py ping-gtp IFACE --file SESSIONS --count N
    nf_frames.py ping-pppoe IFACE --file SUBSCRIBERS --count N
    nf_frames.py police IFACE --count N          (sender: core; receiver: count-police)
    nf_frames.py count-police IFACE --count N

A suite is a list of cases (tests/scapy/koi_frames.py's machinery: a marker in each payload,
an end frame last): the frame one side sends, built with scapy, and what must come out where
the other side sniffs: exactly these bytes, built independently of the P4 program with the
protocols' scapy layers (MPLS, GTP-U and the PDU session container, Dot1AD, Dot1Q, PPPoE,
PPPoED, PPP), or nothing. `send` prints, per session or subscriber, the packets and bytes it
sent that the switch must count (`usage DIR ID PACKETS BYTES`). `ask` sends requests and
checks the answers on the same interface (PPPoE discovery, GTP-U and LCP echo: the
controllers' answers). The ping modes play a UE or a CPE that pings a real Linux host behind
the function and check every reply. `--file` is the sessions (UPF) or subscribers (BNG) file
the controller was given; `--before` the previous one (sessions it no longer has must be
dropped); `--open` the subscribers whose PPPoE session is open. `--sink-udp PORT` binds a UDP
socket so that the sniffing host's kernel sends no port-unreachable errors back.

Suites: mpls_ce1 (what CE1 sends; sniffed as mpls_link_a between PE1 and P, mpls_link_b
between P and PE2, mpls_ce2 at CE2), upf_ul (gNB -> data network), upf_dl (data network ->
gNB), upf_echo (ask), bng_up (CPE -> core), bng_down (core -> CPE), bng_discovery (ask).
"""

import argparse
import ipaddress
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import koi_frames as kf  # noqa: E402
from koi_frames import Case, marker  # noqa: E402
from scapy.contrib.gtp import (GTP_U_Header, GTPEchoRequest, GTPEchoResponse,  # noqa: E402
                               GTPPDUSessionContainer, IE_Recovery)
from scapy.contrib.mpls import MPLS  # noqa: E402
from scapy.layers.inet import ICMP, IP, TCP, UDP  # noqa: E402
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether  # noqa: E402
from scapy.layers.ppp import (PPP, PPP_LCP_Echo, PPPoE, PPPoED, PPPoED_Tags,  # noqa: E402
                              PPPoETag)
from scapy.packet import Raw  # noqa: E402


def pad(n, name):
    return Raw(marker(n, name) + b"." * 20)


# ---------------------------------------------------------------------------------------------
# MPLS: examples/mpls's three routers (pe1.entries, p.entries, pe2.entries)

PE1, P_MAC, PE2 = "02:00:00:00:0a:01", "02:00:00:00:0a:02", "02:00:00:00:0a:03"
CE1, CE2 = "02:00:00:00:01:01", "02:00:00:00:01:02"

# (destination, the stack PE1 pushes: bottom last, what P sends: None for IPv4 after PHP)
MPLS_FECS = [
    ("10.2.0.1", [16001], None),
    ("10.2.1.1", [16002], [0]),
    ("10.2.2.1", [16003, 24001], [24001]),
    ("10.2.3.1", [16004], [17004]),
]


def stack(labels, ttl, tc=0):
    s = None
    for k, label in enumerate(labels):
        m = MPLS(label=label, cos=tc, s=int(k == len(labels) - 1), ttl=ttl)
        s = m if s is None else s / m
    return s


def mpls_cases(where):
    """The probes CE1 sends and what `where` (ce1: the frames themselves; link_a, link_b,
    ce2) must see of each."""
    cases = []

    def add(name, dst, ttl, a, b, c):
        n = len(cases)
        body = UDP(sport=41000 + n, dport=5000) / pad(n, name)
        ip = lambda t: IP(src="10.1.0.1", dst=dst, ttl=t, id=100 + n) / body  # noqa: E731
        frame = bytes(Ether(src=CE1, dst=PE1) / ip(ttl))
        expect = {"ce1": frame}
        expect["link_a"] = a(ip) if a else None
        expect["link_b"] = b(ip) if b else None
        expect["ce2"] = c(ip) if c else None
        cases.append(Case(name, frame, None if expect[where] is None else bytes(expect[where])))

    for k, (dst, pushed, swapped) in enumerate(MPLS_FECS):
        # Uniform TTL: PE1 decrements (64 -> 63) and copies; P decrements the label (62) and
        # on PHP writes it into the IP header; PE2 routes (PHP'd: 62 -> 61) or pops (62 ->
        # IP 61).
        def at_a(ip, pushed=pushed):
            return Ether(src=PE1, dst=P_MAC) / stack(pushed, 63) / ip(63)

        def at_b(ip, swapped=swapped):
            if swapped is None:
                return Ether(src=P_MAC, dst=PE2) / ip(62)
            return Ether(src=P_MAC, dst=PE2) / stack(swapped, 62) / ip(63)

        def at_ce2(ip):
            return Ether(src=PE2, dst=CE2) / ip(61)

        add(f"fec{k + 1}_{dst}", dst, 64, at_a, at_b, at_ce2)
    add("ttl2_expires_at_p", "10.2.0.1", 2,
        lambda ip: Ether(src=PE1, dst=P_MAC) / stack([16001], 1) / ip(1), None, None)
    add("end", "10.2.3.1", 64,
        lambda ip: Ether(src=PE1, dst=P_MAC) / stack([16004], 63) / ip(63),
        lambda ip: Ether(src=P_MAC, dst=PE2) / stack([17004], 62) / ip(63),
        lambda ip: Ether(src=PE2, dst=CE2) / ip(61))
    return cases


# ---------------------------------------------------------------------------------------------
# UPF: examples/upf (upf.entries; sessions from --file)

UPF_N3_MAC, UPF_N6_MAC = "02:00:00:00:0b:03", "02:00:00:00:0b:06"
GNB_MAC = {"10.100.0.2": "02:00:00:00:01:01", "10.100.0.3": "02:00:00:00:01:03"}
DN_MAC, UPF_N3, DN_HOST = "02:00:00:00:01:02", "10.100.0.1", "10.200.0.2"
QOS_DSCP = {1: 46, 2: 34}


def read_sessions(path):
    out = {}
    if not path:
        return out
    for raw in open(path).read().splitlines():
        w = raw.split("#", 1)[0].split()
        if w:
            sid, ue, up, dn, gnb, qfi = w
            out[int(sid)] = (ue, int(up, 0), int(dn, 0), gnb, int(qfi))
    return out


def g_pdu(teid, inner, gnb="10.100.0.2", qfi=None):
    if qfi is None:
        tun = GTP_U_Header(gtp_type=255, teid=teid)
    else:
        tun = (GTP_U_Header(gtp_type=255, teid=teid, E=1, next_ex=0x85)
               / GTPPDUSessionContainer(type=1, QFI=qfi))
    return (Ether(src=GNB_MAC.get(gnb, GNB_MAC["10.100.0.2"]), dst=UPF_N3_MAC)
            / IP(src=gnb, dst=UPF_N3, ttl=64, id=7) / UDP(sport=2152, dport=2152) / tun / inner)


def downlink_tunnel(session, inner):
    """What the UPF sends to the gNB for `inner` (the UE packet as it leaves, TTL already
    decremented): TS 29.281 G-PDU with a DL PDU session container."""
    ue, _, teid_dn, gnb, qfi = session
    tos = QOS_DSCP[qfi] << 2 if qfi in QOS_DSCP else inner[IP].tos & 0xFC
    return (Ether(src=UPF_N3_MAC, dst=GNB_MAC[gnb])
            / IP(src=UPF_N3, dst=gnb, ttl=64, id=0, flags=0, tos=tos)
            / UDP(sport=2152, dport=2152)
            / GTP_U_Header(gtp_type=255, teid=teid_dn, E=1, next_ex=0x85)
            / GTPPDUSessionContainer(type=0, QFI=qfi) / inner)


def upf_ul_cases(args):
    now, before = read_sessions(args.file), read_sessions(args.before)
    cases, usage = [], {}

    def add(name, frame, expect, sid=None):
        cases.append(Case(name, bytes(frame), None if expect is None else bytes(expect)))
        if sid is not None and expect is not None:
            p, b = usage.get(sid, (0, 0))
            usage[sid] = (p + 1, b + len(bytes(frame)))

    for sid, (ue, up, _, gnb, qfi) in sorted(now.items()):
        for tos in (0x00, 0x29):
            n = len(cases)
            inner = lambda ttl, t: (IP(src=ue, dst=DN_HOST, ttl=ttl, tos=t, id=n)  # noqa: E731
                                    / UDP(sport=40000 + n, dport=5000) / pad(n, f"ul{sid}"))
            out_tos = (QOS_DSCP[qfi] << 2) | (tos & 3) if qfi in QOS_DSCP else tos
            add(f"session{sid}_qfi{qfi}_tos{tos:#x}", g_pdu(up, inner(64, tos), gnb, qfi),
                Ether(src=UPF_N6_MAC, dst=DN_MAC) / inner(63, out_tos), sid)
    first = min(now) if now else None
    if first is not None:
        ue, up, _, gnb, qfi = now[first]
        n = len(cases)
        inner = lambda ttl: (IP(src=ue, dst=DN_HOST, ttl=ttl, id=n)  # noqa: E731
                             / UDP(sport=40000 + n, dport=5000) / pad(n, "noext"))
        add("no_extension_header", g_pdu(up, inner(64), gnb),
            Ether(src=UPF_N6_MAC, dst=DN_MAC) / inner(63), first)
        n = len(cases)
        add("spoofed_ue_dropped", g_pdu(up, IP(src="10.45.9.9", dst=DN_HOST) / UDP(dport=5000)
                                        / pad(n, "spoof"), gnb, qfi), None)
    n = len(cases)
    add("unknown_teid_dropped", g_pdu(0x999, IP(src="10.45.0.1", dst=DN_HOST) / UDP(dport=5000)
                                      / pad(n, "teid"), qfi=9), None)
    for sid in sorted(set(before) - set(now)):
        ue, up, _, gnb, qfi = before[sid]
        n = len(cases)
        add(f"removed_session{sid}_dropped", g_pdu(up, IP(src=ue, dst=DN_HOST) / UDP(dport=5000)
                                                   / pad(n, "gone"), gnb, qfi), None)
    if first is not None:
        ue, up, _, gnb, qfi = now[first]
        n = len(cases)
        inner = lambda ttl, t: (IP(src=ue, dst=DN_HOST, ttl=ttl, tos=t, id=n)  # noqa: E731
                                / UDP(sport=40999, dport=5000) / pad(n, "end"))
        add("end", g_pdu(up, inner(64, 0), gnb, qfi),
            Ether(src=UPF_N6_MAC, dst=DN_MAC) / inner(63, QOS_DSCP.get(qfi, 0) << 2), first)
    return cases, {("ul", k): v for k, v in usage.items()}


def upf_dl_cases(args):
    now, before = read_sessions(args.file), read_sessions(args.before)
    cases, usage = [], {}

    def add(name, frame, expect, sid=None):
        cases.append(Case(name, bytes(frame), None if expect is None else bytes(expect)))
        if sid is not None and expect is not None:
            p, b = usage.get(sid, (0, 0))
            usage[sid] = (p + 1, b + len(bytes(frame)))

    from_dn = lambda inner: Ether(src=DN_MAC, dst=UPF_N6_MAC) / inner  # noqa: E731
    for sid, session in sorted(now.items()):
        ue = session[0]
        n = len(cases)
        inner = lambda ttl: (IP(src=DN_HOST, dst=ue, ttl=ttl, tos=0x48, id=n)  # noqa: E731
                             / UDP(sport=5000, dport=40000 + n) / pad(n, f"dl{sid}"))
        add(f"session{sid}_udp", from_dn(inner(64)), downlink_tunnel(session, inner(63)), sid)
        n = len(cases)
        inner = lambda ttl: (IP(src=DN_HOST, dst=ue, ttl=ttl, id=n)  # noqa: E731
                             / TCP(sport=443, dport=50000 + n, flags="PA", seq=1, ack=1)
                             / pad(n, f"tcp{sid}"))
        add(f"session{sid}_tcp", from_dn(inner(64)), downlink_tunnel(session, inner(63)), sid)
    n = len(cases)
    add("unknown_ue_dropped", from_dn(IP(src=DN_HOST, dst="10.45.9.9") / UDP(dport=7)
                                      / pad(n, "noue")), None)
    for sid in sorted(set(before) - set(now)):
        n = len(cases)
        add(f"removed_session{sid}_dropped", from_dn(IP(src=DN_HOST, dst=before[sid][0])
                                                     / UDP(dport=7) / pad(n, "gone")), None)
    first = min(now)
    session = now[first]
    n = len(cases)
    inner = lambda ttl: (IP(src=DN_HOST, dst=session[0], ttl=ttl, id=n)  # noqa: E731
                         / UDP(sport=5000, dport=40999) / pad(n, "end"))
    add("end", from_dn(inner(64)), downlink_tunnel(session, inner(63)), first)
    return cases, {("dl", k): v for k, v in usage.items()}


def upf_echo_cases(args):
    req = (Ether(src=GNB_MAC["10.100.0.2"], dst=UPF_N3_MAC)
           / IP(src="10.100.0.2", dst=UPF_N3, id=3) / UDP(sport=2152, dport=2152)
           / GTP_U_Header(gtp_type=1, S=1, seq=0x4242) / GTPEchoRequest())
    # TS 29.281 7.2.2: an echo response with the request's sequence number, TEID 0 and a
    # Recovery IE (restart counter 0), from the address the request went to.
    resp = (Ether(src=UPF_N3_MAC, dst=GNB_MAC["10.100.0.2"])
            / IP(src=UPF_N3, dst="10.100.0.2") / UDP(sport=2152, dport=2152)
            / GTP_U_Header(gtp_type=2, teid=0, S=1, seq=0x4242)
            / GTPEchoResponse(IE_list=[IE_Recovery(restart_counter=0)]))
    return [Case("gtpu_echo", bytes(req), bytes(resp))], {}


# ---------------------------------------------------------------------------------------------
# BNG: examples/bng (bng.entries; subscribers from --file)

AC_MAC, CORE_MAC, ROUTER_MAC = "02:00:00:00:0c:01", "02:00:00:00:0c:02", "02:00:00:00:01:02"
CORE_HOST = "10.0.0.2"


def read_subscribers(path):
    out = {}
    for raw in open(path).read().splitlines():
        w = raw.split("#", 1)[0].split()
        if w:
            sid, port, s, c, addr, rate = w
            out[int(sid)] = (int(port), int(s), int(c), addr, int(rate))
    return out


def cpe_mac(sid):
    return "02:00:00:00:02:%02x" % sid


def qinq(sub, ether_type):
    _, s, c, _, _ = sub
    return Dot1AD(vlan=s, type=0x8100) / Dot1Q(vlan=c, type=ether_type)


def opened(args):
    return [int(x) for x in args.open.split(",") if x] if args.open else []


def bng_up_cases(args):
    subs, open_ = read_subscribers(args.file), opened(args)
    cases, usage = [], {}

    def add(name, frame, expect, sid=None):
        cases.append(Case(name, bytes(frame), None if expect is None else bytes(expect)))
        if sid is not None and expect is not None:
            p, b = usage.get(sid, (0, 0))
            usage[sid] = (p + 1, b + len(bytes(frame)))

    def frame(sid, inner, mac=None):
        return (Ether(src=mac or cpe_mac(sid), dst=AC_MAC) / qinq(subs[sid], 0x8864)
                / PPPoE(sessionid=sid) / PPP(proto=0x0021) / inner)

    for sid in sorted(subs):
        addr = subs[sid][3]
        n = len(cases)
        inner = lambda ttl: (IP(src=addr, dst=CORE_HOST, ttl=ttl, id=n)  # noqa: E731
                             / UDP(sport=40000 + n, dport=5000) / pad(n, f"up{sid}"))
        expect = Ether(src=CORE_MAC, dst=ROUTER_MAC) / inner(63) if sid in open_ else None
        add(f"subscriber{sid}_" + ("open" if sid in open_ else "closed_dropped"),
            frame(sid, inner(64)), expect, sid)
    first = min(open_)
    n = len(cases)
    add("spoofed_source_dropped", frame(first, IP(src="100.64.9.9", dst=CORE_HOST)
                                        / UDP(dport=5000) / pad(n, "spoof")), None)
    n = len(cases)
    add("other_cpe_mac_dropped", frame(first, IP(src=subs[first][3], dst=CORE_HOST)
                                       / UDP(dport=5000) / pad(n, "mac"), mac=cpe_mac(0x99)),
        None)
    n = len(cases)
    inner = lambda ttl: (IP(src=subs[first][3], dst=CORE_HOST, ttl=ttl, id=n)  # noqa: E731
                         / UDP(sport=40999, dport=5000) / pad(n, "end"))
    add("end", frame(first, inner(64)), Ether(src=CORE_MAC, dst=ROUTER_MAC) / inner(63), first)
    return cases, {("up", k): v for k, v in usage.items()}


def bng_down_cases(args):
    subs, open_ = read_subscribers(args.file), opened(args)
    cases, usage = [], {}

    def add(name, frame, expect, sid=None):
        cases.append(Case(name, bytes(frame), None if expect is None else bytes(expect)))
        if sid is not None and expect is not None:
            p, b = usage.get(sid, (0, 0))
            usage[sid] = (p + 1, b + len(bytes(frame)))

    def to_cpe(sid, inner):
        return (Ether(src=AC_MAC, dst=cpe_mac(sid)) / qinq(subs[sid], 0x8864)
                / PPPoE(sessionid=sid) / PPP(proto=0x0021) / inner)

    from_core = lambda inner: Ether(src=ROUTER_MAC, dst=CORE_MAC) / inner  # noqa: E731
    for sid in sorted(subs):
        addr = subs[sid][3]
        n = len(cases)
        inner = lambda ttl: (IP(src=CORE_HOST, dst=addr, ttl=ttl, id=n)  # noqa: E731
                             / UDP(sport=5000, dport=40000 + n) / pad(n, f"down{sid}"))
        expect = to_cpe(sid, inner(63)) if sid in open_ else None
        add(f"subscriber{sid}_" + ("open" if sid in open_ else "closed_dropped"),
            from_core(inner(64)), expect, sid)
    n = len(cases)
    add("unknown_subscriber_dropped", from_core(IP(src=CORE_HOST, dst="100.64.9.9") / UDP()
                                                / pad(n, "nosub")), None)
    first = min(open_)
    n = len(cases)
    inner = lambda ttl: (IP(src=CORE_HOST, dst=subs[first][3], ttl=ttl, id=n)  # noqa: E731
                         / UDP(sport=5000, dport=40999) / pad(n, "end"))
    add("end", from_core(inner(64)), to_cpe(first, inner(63)), first)
    return cases, {("down", k): v for k, v in usage.items()}


SERVICE = PPPoETag(tag_type=0x0101, tag_value=b"")


def host_uniq(sid):
    return PPPoETag(tag_type=0x0103, tag_value=struct.pack("!I", 0xC0DE0000 + sid))


def bng_discovery_cases(args):
    """For each subscriber in --open: PADI -> PADO, PADR -> PADS (session id = subscriber
    id), then an LCP echo request in the session -> echo reply (RFC 2516, RFC 1661)."""
    subs = read_subscribers(args.file)
    cases = []
    for sid in opened(args):
        sub, mac = subs[sid], cpe_mac(sid)
        tags = [SERVICE, host_uniq(sid)]
        padi = (Ether(src=mac, dst="ff:ff:ff:ff:ff:ff") / qinq(sub, 0x8863)
                / PPPoED(code=0x09) / PPPoED_Tags(tag_list=tags))
        pado = (Ether(src=AC_MAC, dst=mac) / qinq(sub, 0x8863) / PPPoED(code=0x07)
                / PPPoED_Tags(tag_list=[PPPoETag(tag_type=0x0102, tag_value=b"koi-bng")] + tags))
        cases.append(Case(f"padi{sid}_pado", bytes(padi), bytes(pado)))
        padr = (Ether(src=mac, dst=AC_MAC) / qinq(sub, 0x8863) / PPPoED(code=0x19)
                / PPPoED_Tags(tag_list=tags))
        pads = (Ether(src=AC_MAC, dst=mac) / qinq(sub, 0x8863) / PPPoED(code=0x65, sessionid=sid)
                / PPPoED_Tags(tag_list=tags))
        cases.append(Case(f"padr{sid}_pads", bytes(padr), bytes(pads)))
        echo = (Ether(src=mac, dst=AC_MAC) / qinq(sub, 0x8864) / PPPoE(sessionid=sid)
                / PPP(proto=0xC021) / PPP_LCP_Echo(code=9, id=sid, magic_number=0x1234abcd,
                                                   data=b"keepalive"))
        reply = (Ether(src=AC_MAC, dst=mac) / qinq(sub, 0x8864) / PPPoE(sessionid=sid)
                 / PPP(proto=0xC021) / PPP_LCP_Echo(code=10, id=sid, magic_number=0,
                                                    data=b"keepalive"))
        cases.append(Case(f"lcp_echo{sid}", bytes(echo), bytes(reply)))
    return cases, {}


def padt_frame(subs, sid):
    return bytes(Ether(src=cpe_mac(sid), dst=AC_MAC) / qinq(subs[sid], 0x8863)
                 / PPPoED(code=0xA7, sessionid=sid))


SUITES = {
    "mpls_ce1": lambda a: (mpls_cases("ce1"), {}),
    "mpls_link_a": lambda a: (mpls_cases("link_a"), {}),
    "mpls_link_b": lambda a: (mpls_cases("link_b"), {}),
    "mpls_ce2": lambda a: (mpls_cases("ce2"), {}),
    "upf_ul": upf_ul_cases,
    "upf_dl": upf_dl_cases,
    "upf_echo": upf_echo_cases,
    "bng_up": bng_up_cases,
    "bng_down": bng_down_cases,
    "bng_discovery": bng_discovery_cases,
}


# ---------------------------------------------------------------------------------------------
# Modes

def ask(iface, cases, timeout):
    """Sends each request, waits for its answer (at most 3 s), and at the end checks that
    each answer came exactly once and nothing else came."""
    s = kf.open_socket(iface)
    s.setsockopt(kf.SOL_PACKET, kf.PACKET_AUXDATA, 1)
    try:
        s.setsockopt(kf.SOL_PACKET, kf.PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass
    got = {}

    def collect(until, want=None):
        while time.monotonic() < until:
            r, _, _ = select.select([s], [], [], 0.05)
            f = kf.recv_frame(s) if r else None
            if f is None:
                continue
            k = next((i for i, c in enumerate(cases) if c.expect == f), None)
            got.setdefault(k, []).append(f)
            if want is not None and k == want:
                return

    end = time.monotonic() + timeout
    for i, c in enumerate(cases):
        s.send(c.frame)
        # Each answer before the next request: a controller takes them in order.
        collect(min(end, time.monotonic() + 3.0), want=i)
    collect(time.monotonic() + 0.3)
    failed = 0
    for i, c in enumerate(cases):
        n = len(got.get(i, []))
        if n == 1:
            print("ok   %-40s answered, %d bytes identical" % (c.name, len(c.expect)))
        else:
            failed += 1
            print("FAIL %-40s answered %d times (expected %s)" % (c.name, n, c.expect.hex()))
    for f in got.get(None, []):
        failed += 1
        print("FAIL other frame: %s" % f.hex())
    print("scapy ask on %s: %d cases ok, %d failed" % (iface, len(cases) - failed, failed))
    return 1 if failed else 0


def csum_ok(pkt):
    """Whether scapy, recomputing the IPv4 and L4 checksums, gets the ones received."""
    again = pkt.__class__(bytes(pkt))
    for layer in (IP, ICMP, UDP, TCP):
        if layer in again:
            del again[layer].chksum
    return bytes(again.__class__(bytes(again))) == bytes(pkt)


def ping_gtp(iface, args):
    """A UE of the first session pings the data-network host through the UPF: G-PDUs with
    echo requests up; each echo reply must come back down as the G-PDU TS 29.281 says, the
    reply itself an exact echo (identifier, sequence, data) with valid checksums."""
    sessions = read_sessions(args.file)
    session = sessions[min(sessions)]
    ue, up, _, gnb, qfi = session
    s = kf.open_socket(iface)
    s.setsockopt(kf.SOL_PACKET, kf.PACKET_AUXDATA, 1)
    s.setsockopt(kf.SOL_PACKET, kf.PACKET_IGNORE_OUTGOING, 1)
    ok, up_bytes, down_bytes = 0, 0, 0
    sid = min(sessions)
    for seq in range(1, args.count + 1):
        data = b"koi-ping-gtp:%d" % seq
        frame = bytes(g_pdu(up, IP(src=ue, dst=DN_HOST, ttl=64) / ICMP(id=0x77, seq=seq) / data,
                            gnb, qfi))
        up_bytes += len(frame)
        s.send(frame)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            r, _, _ = select.select([s], [], [], 0.05)
            f = kf.recv_frame(s) if r else None
            if f is None or data not in f:
                continue
            pkt = Ether(f)
            if GTPPDUSessionContainer not in pkt or IP not in pkt[GTPPDUSessionContainer]:
                print("FAIL reply %d is no G-PDU with a container: %s" % (seq, f.hex()))
                return 1
            reply = pkt[GTPPDUSessionContainer][IP]
            # The reply the Linux host sent, as it must leave the UPF: its own IP id and
            # flags (chosen by the host), TTL 64 - 1, the echo's fields, computed checksums.
            inner = (IP(src=DN_HOST, dst=ue, ttl=63, id=reply.id, flags=reply.flags,
                        tos=reply.tos) / ICMP(type=0, id=0x77, seq=seq) / data)
            want = bytes(downlink_tunnel(session, inner))
            if f != want:
                print("FAIL reply %d differs: %s" % (seq, kf.hexdiff(want, f)))
                return 1
            if not csum_ok(reply):
                print("FAIL reply %d: bad checksum" % seq)
                return 1
            # As it reached the UPF: an Ethernet frame of the reply with TTL 64.
            down_bytes += 14 + len(reply)
            ok += 1
            break
        else:
            print("FAIL echo %d: no reply" % seq)
            return 1
    print("ping through the UPF: %d/%d answered" % (ok, args.count))
    print("usage ul %d %d %d" % (sid, ok, up_bytes))
    print("usage dl %d %d %d" % (sid, ok, down_bytes))
    return 0


def ping_pppoe(iface, args):
    """The CPE of the first open subscriber pings the core host through the BNG: each echo
    reply must come back as the PPPoE session frame RFC 2516 says, an exact echo inside."""
    subs = read_subscribers(args.file)
    sid = opened(args)[0]
    sub, addr = subs[sid], subs[sid][3]
    s = kf.open_socket(iface)
    s.setsockopt(kf.SOL_PACKET, kf.PACKET_AUXDATA, 1)
    s.setsockopt(kf.SOL_PACKET, kf.PACKET_IGNORE_OUTGOING, 1)
    ok, up_bytes, down_bytes = 0, 0, 0
    for seq in range(1, args.count + 1):
        data = b"koi-ping-pppoe:%d" % seq
        frame = bytes(Ether(src=cpe_mac(sid), dst=AC_MAC) / qinq(sub, 0x8864)
                      / PPPoE(sessionid=sid) / PPP(proto=0x0021)
                      / IP(src=addr, dst=CORE_HOST, ttl=64) / ICMP(id=0x66, seq=seq) / data)
        up_bytes += len(frame)
        s.send(frame)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            r, _, _ = select.select([s], [], [], 0.05)
            f = kf.recv_frame(s) if r else None
            if f is None or data not in f:
                continue
            reply = Ether(f)[IP]
            inner = (IP(src=CORE_HOST, dst=addr, ttl=63, id=reply.id, flags=reply.flags,
                        tos=reply.tos) / ICMP(type=0, id=0x66, seq=seq) / data)
            want = bytes(Ether(src=AC_MAC, dst=cpe_mac(sid)) / qinq(sub, 0x8864)
                         / PPPoE(sessionid=sid) / PPP(proto=0x0021) / inner)
            if f != want:
                print("FAIL reply %d differs: %s" % (seq, kf.hexdiff(want, f)))
                return 1
            if not csum_ok(reply):
                print("FAIL reply %d: bad checksum" % seq)
                return 1
            down_bytes += 14 + len(reply)
            ok += 1
            break
        else:
            print("FAIL echo %d: no reply" % seq)
            return 1
    print("ping through the BNG: %d/%d answered" % (ok, args.count))
    print("usage up %d %d %d" % (sid, ok, up_bytes))
    print("usage down %d %d %d" % (sid, ok, down_bytes))
    return 0


def police_frames(args):
    subs = read_subscribers(args.file)
    sid = opened(args)[0]
    return sid, [bytes(Ether(src=ROUTER_MAC, dst=CORE_MAC)
                       / IP(src=CORE_HOST, dst=subs[sid][3], id=k)
                       / UDP(sport=5000, dport=6000) / Raw(b"koi-police:%d;" % k + b"p" * 960))
                 for k in range(args.count)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["send", "sniff", "ask", "ping-gtp", "ping-pppoe", "police",
                                    "count-police", "padt"])
    p.add_argument("iface")
    p.add_argument("suite", nargs="?", choices=sorted(SUITES))
    p.add_argument("--file")
    p.add_argument("--before")
    p.add_argument("--open", default="")
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--timeout", type=float, default=15.0)
    p.add_argument("--sink-udp", type=int)
    a = p.parse_args()
    if a.sink_udp:
        sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sink.bind(("0.0.0.0", a.sink_udp))
    if a.mode == "ping-gtp":
        return ping_gtp(a.iface, a)
    if a.mode == "ping-pppoe":
        return ping_pppoe(a.iface, a)
    if a.mode == "padt":
        subs = read_subscribers(a.file)
        s = kf.open_socket(a.iface)
        for sid in opened(a):
            s.send(padt_frame(subs, sid))
        print("sent PADT for %s" % a.open)
        return 0
    if a.mode in ("police", "count-police"):
        sid, frames = police_frames(a)
        if a.mode == "police":
            s = kf.open_socket(a.iface)
            for f in frames:
                s.send(f)
            print("sent %d frames of %d bytes to subscriber %d" % (len(frames), len(frames[0]),
                                                                   sid))
            return 0
        s = kf.open_socket(a.iface)
        s.setsockopt(kf.SOL_PACKET, kf.PACKET_AUXDATA, 1)
        s.setsockopt(kf.SOL_PACKET, kf.PACKET_IGNORE_OUTGOING, 1)
        print("ready", flush=True)
        seen, deadline, last = set(), time.monotonic() + a.timeout, None
        while time.monotonic() < deadline:
            r, _, _ = select.select([s], [], [], 0.05)
            f = kf.recv_frame(s) if r else None
            if f is None or b"koi-police:" not in f:
                if last and time.monotonic() - last > 1.0:
                    break
                continue
            k = int(f.split(b"koi-police:")[1].split(b";")[0])
            seen.add(k)
            last = time.monotonic()
        print("policed: received %d of %d" % (len(seen), a.count))
        # Each frame that passed the meter was counted as the core sent it.
        print("usage down %d %d %d" % (sid, len(seen), sum(len(frames[k]) for k in seen)))
        return 0
    cases, usage = SUITES[a.suite](a)
    if a.mode == "send":
        kf.cmd_send(a.iface, cases)
        for (direction, key), (pk, by) in sorted(usage.items()):
            print("usage %s %d %d %d" % (direction, key, pk, by))
        return 0
    if a.mode == "ask":
        return ask(a.iface, cases, a.timeout)
    return kf.cmd_sniff(a.iface, cases, a.timeout)


if __name__ == "__main__":
    sys.exit(main())
