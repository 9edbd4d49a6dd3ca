#!/usr/bin/env python3
"""Real traffic through the NAPT example between network namespaces (as root), its results
printed as one JSON object (crates/koi/tests/e2e_nf_stateful.rs checks them).

    traffic.py A_NS B_NS OUT_NS WAIT_SECONDS

Inside hosts A (10.0.1.1) and B (10.0.1.2), outside host 203.0.113.5; the NAT's outside
address 203.0.113.1 forwards TCP 8080 to B:80. With sockets made in each namespace:

- `tcp`: A and B at once each send 2 MiB to an outside echo server and read it back; per
  connection, whether the bytes came back intact and the address and port the server saw.
- `udp`: A and B each exchange 20 datagrams with an outside UDP echo server; the replies
  that came back and the addresses the server saw.
- `forward`: the outside host sends 1 MiB to 203.0.113.1:8080 and reads it back from B's
  server on port 80; whether intact, and the address B's server saw.
- `hairpin`: A does the same through 203.0.113.1:8080; whether intact, and the address B's
  server saw (the NAT's, so that its replies go back through it).
- `timeout`: A sends a datagram to an outside server, which answers at once (`first`), then
  from another port (`other_port`: must not arrive), then once more after WAIT_SECONDS
  (`late`: must not arrive once the mapping timed out).
"""
import ctypes
import hashlib
import json
import os
import socket
import sys
import threading
import time

A, B, OUT, NAT = "10.0.1.1", "10.0.1.2", "203.0.113.5", "203.0.113.1"
CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL("libc.so.6", use_errno=True)


def enter(ns):
    fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {ns}")
    finally:
        os.close(fd)


def listener(ns, addr, port, kind=socket.SOCK_STREAM):
    enter(ns)
    s = socket.socket(socket.AF_INET, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    if kind == socket.SOCK_STREAM:
        s.listen(8)
    return s


def echo_tcp(sock, peers):
    """Echoes each connection; records its peer."""
    def serve(c, peer):
        with c:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                c.sendall(d)
    while True:
        try:
            c, peer = sock.accept()
        except OSError:
            return
        peers.append(list(peer))
        threading.Thread(target=serve, args=(c, peer), daemon=True).start()


def echo_udp(sock, peers):
    while True:
        try:
            d, peer = sock.recvfrom(65536)
        except OSError:
            return
        peers.append(list(peer))
        sock.sendto(d, peer)


def client(ns, dst, port, size):
    """A TCP client made in `ns`: sends `size` bytes and reads them back; intact?"""
    enter(ns)
    c = socket.socket()
    c.settimeout(20)
    data = os.urandom(size)
    result = {}

    def run():
        try:
            c.connect((dst, port))
            sender = threading.Thread(target=c.sendall, args=(data,), daemon=True)
            sender.start()
            h, n = hashlib.sha256(), 0
            while n < size:
                d = c.recv(65536)
                if not d:
                    break
                h.update(d)
                n += len(d)
            sender.join()
            result["intact"] = n == size and h.digest() == hashlib.sha256(data).digest()
        except OSError as e:
            result["intact"] = False
            result["error"] = str(e)
        finally:
            c.close()
    return threading.Thread(target=run, daemon=True), result


def main():
    a_ns, b_ns, out_ns, wait = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    results = {}
    out_peers, out_udp_peers, b_peers = [], [], []
    servers = [
        (echo_tcp, listener(out_ns, OUT, 7000), out_peers),
        (echo_udp, listener(out_ns, OUT, 7001, socket.SOCK_DGRAM), out_udp_peers),
        (echo_tcp, listener(b_ns, B, 80), b_peers),
    ]
    for f, s, peers in servers:
        threading.Thread(target=f, args=(s, peers), daemon=True).start()

    # TCP from both inside hosts at once.
    runs = [client(a_ns, OUT, 7000, 2 << 20), client(b_ns, OUT, 7000, 2 << 20)]
    for t, _ in runs:
        t.start()
    for t, _ in runs:
        t.join(30)
    results["tcp"] = {"intact": [r.get("intact", False) for _, r in runs],
                      "peers": out_peers[:]}

    # UDP from both.
    got = []
    for ns in (a_ns, b_ns):
        enter(ns)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(1)
        n = 0
        for i in range(20):
            msg = b"datagram %d" % i
            u.sendto(msg, (OUT, 7001))
            try:
                n += u.recvfrom(100)[0] == msg
            except socket.timeout:
                pass
        got.append(n)
        u.close()
    results["udp"] = {"replies": got, "peers": sorted({tuple(p) for p in out_udp_peers})}

    # The port-forward from the outside, then the hairpin from A.
    for name, ns in (("forward", out_ns), ("hairpin", a_ns)):
        before = len(b_peers)
        t, r = client(ns, NAT, 8080, 1 << 20)
        t.start()
        t.join(30)
        results[name] = {"intact": r.get("intact", False), "peers": b_peers[before:]}

    # A UDP mapping that times out.
    enter(out_ns)
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind((OUT, 7002))
    srv.settimeout(2)
    other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    other.bind((OUT, 7003))
    enter(a_ns)
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    a.settimeout(1)
    a.sendto(b"hello", (OUT, 7002))
    res = {}
    try:
        _, mapped = srv.recvfrom(100)
        res["mapped"] = list(mapped)

        def arrives(sock, msg):
            sock.sendto(msg, mapped)
            try:
                return a.recvfrom(100)[0] == msg
            except socket.timeout:
                return False
        res["first"] = arrives(srv, b"first")
        res["other_port"] = arrives(other, b"other")
        time.sleep(wait)
        res["late"] = arrives(srv, b"late")
    except socket.timeout:
        res["error"] = "the first datagram never reached the server"
    results["timeout"] = res
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main()
