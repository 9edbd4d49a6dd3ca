#!/usr/bin/env python3
"""The firewall scenario: a fixed sequence of TCP, UDP and ICMP packets and real connections
between an inside and an outside host, each step's verdict (`pass` or `drop`) printed as one
JSON list. Run once through koi (examples/firewall/firewall.p4) and once through a Linux
router with nftables, the two lists must be equal (crates/koi/tests/e2e_nf_stateful.rs).

    scenario.py INSIDE_NS INSIDE_IF OUTSIDE_NS OUTSIDE_IF WAIT_SECONDS

The hosts (network namespaces, run as root) are 10.0.1.1 (inside) and 203.0.113.5 (outside),
each with the firewall's MAC 02:00:00:00:00:fe as its gateway. Crafted packets use two
addresses no host has, 10.0.1.50 and 203.0.113.50, which the firewall routes to the inside
and outside host's MAC: the hosts' kernels drop them without answering (they do not
forward), while this script sees every frame that arrives on the host interfaces. A
crafted packet passes when the same IP datagram (its IP identification is the step's)
arrives on the other side within half a second. WAIT_SECONDS is slept once, after the
steps that open the connections whose expiry the last steps test: it must exceed the
firewall's TCP CLOSE and UDP timeouts and stay below its ESTABLISHED timeout.
"""
import ctypes
import json
import os
import select
import socket
import sys
import threading
import time

from scapy.all import ICMP, IP, TCP, UDP, Ether, Raw, conf, get_if_hwaddr

GW = "02:00:00:00:00:fe"
IN_HOST, OUT_HOST = "10.0.1.1", "203.0.113.5"
IN_GHOST, OUT_GHOST = "10.0.1.50", "203.0.113.50"
CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL("libc.so.6", use_errno=True)


def enter(ns):
    """Moves this thread into network namespace `ns` (sockets made now live there)."""
    fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {ns}")
    finally:
        os.close(fd)


class Side:
    """A host interface: an L2 socket to send and watch frames, and the namespace."""

    def __init__(self, ns, ifname):
        enter(ns)
        self.ns, self.ifname = ns, ifname
        self.mac = get_if_hwaddr(ifname)
        self.l2 = conf.L2socket(iface=ifname)

    def drain(self):
        while select.select([self.l2], [], [], 0)[0]:
            self.l2.recv()

    def saw(self, ident, src, seconds=0.5):
        """Whether an IP datagram with identification `ident` from `src` arrives."""
        end = time.time() + seconds
        while time.time() < end:
            if not select.select([self.l2], [], [], 0.05)[0]:
                continue
            p = self.l2.recv()
            if p is not None and IP in p and p[IP].id == ident and p[IP].src == src:
                return True
        return False


class Scenario:
    def __init__(self, inside, outside):
        self.inside, self.outside = inside, outside
        self.verdicts = []
        self.ident = 1000

    def note(self, name, ok):
        self.verdicts.append([name, "pass" if ok else "drop"])

    def crafted(self, name, direction, l4):
        """Sends `l4` from one ghost to the other; `direction` "in" is inside -> outside."""
        self.ident += 1
        if direction == "in":
            tx, rx, src, dst = self.inside, self.outside, IN_GHOST, OUT_GHOST
        else:
            tx, rx, src, dst = self.outside, self.inside, OUT_GHOST, IN_GHOST
        rx.drain()
        tx.l2.send(Ether(src=tx.mac, dst=GW) / IP(src=src, dst=dst, id=self.ident, ttl=64) / l4)
        self.note(name, rx.saw(self.ident, src))


def tcp_server(sock):
    """Echoes every connection's bytes back until it closes."""
    while True:
        try:
            c, _ = sock.accept()
        except OSError:
            return
        with c:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                c.sendall(d)


def udp_echo(sock):
    while True:
        try:
            d, a = sock.recvfrom(65536)
        except OSError:
            return
        sock.sendto(d, a)


def main():
    in_ns, in_if, out_ns, out_if, wait = sys.argv[1:6]
    inside, outside = Side(in_ns, in_if), Side(out_ns, out_if)
    # Real sockets, each made in its host's namespace.
    enter(out_ns)
    out_tcp = socket.socket()
    out_tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    out_tcp.bind((OUT_HOST, 8080))
    out_tcp.listen(4)
    out_udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    out_udp.bind((OUT_HOST, 9000))
    out_client = socket.socket()
    out_client.settimeout(2)
    enter(in_ns)
    in_tcp = socket.socket()
    in_tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    in_tcp.bind((IN_HOST, 8081))
    in_tcp.listen(4)
    in_client = socket.socket()
    in_client.settimeout(5)
    in_udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    in_udp.settimeout(1)
    for target, sock in ((tcp_server, out_tcp), (tcp_server, in_tcp), (udp_echo, out_udp)):
        threading.Thread(target=target, args=(sock,), daemon=True).start()

    s = Scenario(inside, outside)
    # Real connections: from the inside a TCP connection carries 256 KiB both ways; from the
    # outside one is never answered; a UDP request from the inside gets its reply.
    try:
        in_client.connect((OUT_HOST, 8080))
        data = bytes((i * 7) & 0xFF for i in range(256 << 10))
        in_client.sendall(data)
        got = b""
        while len(got) < len(data):
            d = in_client.recv(65536)
            if not d:
                break
            got += d
        s.note("tcp_connect_from_inside", got == data)
        in_client.close()
    except OSError:
        s.note("tcp_connect_from_inside", False)
    try:
        out_client.connect((IN_HOST, 8081))
        s.note("tcp_connect_from_outside", True)
    except OSError:
        s.note("tcp_connect_from_outside", False)
    try:
        in_udp.sendto(b"ping", (OUT_HOST, 9000))
        s.note("udp_request_reply", in_udp.recvfrom(100)[0] == b"ping")
    except OSError:
        s.note("udp_request_reply", False)

    # Crafted TCP connection A (ghost 10.0.1.50:40000 -> 203.0.113.50:80), with consistent
    # sequence numbers (Linux tracks the TCP window).
    s.crafted("a_syn", "in", TCP(sport=40000, dport=80, flags="S", seq=1000))
    s.crafted("a_synack", "out", TCP(sport=80, dport=40000, flags="SA", seq=5000, ack=1001))
    s.crafted("a_ack", "in", TCP(sport=40000, dport=80, flags="A", seq=1001, ack=5001))
    s.crafted("a_data_out", "out",
              TCP(sport=80, dport=40000, flags="PA", seq=5001, ack=1001) / Raw(b"hello"))
    s.crafted("a_data_in", "in",
              TCP(sport=40000, dport=80, flags="PA", seq=1001, ack=5006) / Raw(b"world"))
    # What the outside may not start.
    s.crafted("syn_from_outside", "out", TCP(sport=5555, dport=22, flags="S", seq=77))
    s.crafted("stray_ack_from_outside", "out",
              TCP(sport=80, dport=40001, flags="A", seq=5000, ack=1001))
    s.crafted("stray_ack_from_inside", "in",
              TCP(sport=40002, dport=80, flags="A", seq=1001, ack=5001))
    # UDP: a request lets its reply in; a datagram from another port is new from the outside.
    s.crafted("udp_c_request", "in", UDP(sport=5000, dport=53) / Raw(b"q"))
    s.crafted("udp_c_reply", "out", UDP(sport=53, dport=5000) / Raw(b"r"))
    s.crafted("udp_from_other_port", "out", UDP(sport=54, dport=5000) / Raw(b"r"))
    # ICMP echo: a request from the inside lets its reply in; a request from the outside not.
    s.crafted("echo_request_in", "in", ICMP(type=8, id=77, seq=1))
    s.crafted("echo_reply_out", "out", ICMP(type=0, id=77, seq=1))
    s.crafted("echo_request_from_outside", "out", ICMP(type=8, id=99, seq=1))
    # TCP connection B, closed by a RST from the outside.
    s.crafted("b_syn", "in", TCP(sport=40003, dport=443, flags="S", seq=2000))
    s.crafted("b_synack", "out", TCP(sport=443, dport=40003, flags="SA", seq=7000, ack=2001))
    s.crafted("b_ack", "in", TCP(sport=40003, dport=443, flags="A", seq=2001, ack=7001))
    s.crafted("b_rst", "out", TCP(sport=443, dport=40003, flags="R", seq=7001))
    # UDP D: a request whose reply comes too late.
    s.crafted("udp_d_request", "in", UDP(sport=5001, dport=53) / Raw(b"q"))
    time.sleep(float(wait))
    s.crafted("b_after_close_timeout", "out",
              TCP(sport=443, dport=40003, flags="A", seq=7001, ack=2001))
    s.crafted("udp_d_reply_after_timeout", "out", UDP(sport=53, dport=5001) / Raw(b"r"))
    s.crafted("a_still_established", "out",
              TCP(sport=80, dport=40000, flags="A", seq=5006, ack=1006))
    print(json.dumps(s.verdicts), flush=True)


if __name__ == "__main__":
    main()
