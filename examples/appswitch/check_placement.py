#!/usr/bin/env python3
"""Checks that ketama.py places keys where a running twemproxy does.

    check_placement.py POOL.yml KEYS [high]

Empties every server of the pool (`flush_all`), stores KEYS keys (of 16, 80, 250, 1, 2 and 3
bytes in turn; with `high`, keys whose bytes are 0x80 or more but for their number) through
the pool's `listen` address
(twemproxy, memcached's ASCII protocol over TCP), then asks every server of the pool
directly which keys it holds, and compares each key's server with `ketama.place`. Prints
`placed N keys: M as twemproxy, per server: ...` and the keys that differ; exits 1 when any
does.
"""

import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ketama  # noqa: E402


def key_of(i, high=False):
    """Key `i`: `key-I-xxx...` of 16, 80 or 250 bytes, or a short one of 1, 2 or 3 bytes, in
    turn. A short key is i // 6 in base 94, a printable character ('!' to '~') per digit,
    lowest first: distinct for the first 564 keys. `high`: every byte but the digits of I is
    0x80 | b instead of b, and a short key's digits are 0xa1 to 0xfe."""
    size = (16, 80, 250, 1, 2, 3)[i % 6]
    if size <= 3:
        n, out = i // 6, b""
        for _ in range(size):
            out += bytes([(0xA1 if high else 33) + n % 94])
            n //= 94
        return out
    key = (f"key-{i}-" + "x" * size)[:size].encode()
    if not high:
        return key
    return bytes(b if b in b"0123456789" else 0x80 | b for b in key)


def ask(sock, line, until):
    sock.sendall(line)
    data = b""
    while not data.endswith(until):
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError(f"connection closed after {data[-80:]!r}")
        data += chunk
    return data


def main():
    pool = ketama.Pool.load(sys.argv[1])
    n = int(sys.argv[2])
    high = sys.argv[3:] == ["high"]
    if sys.argv[3:] and not high:
        sys.exit(f"usage: {sys.argv[0]} POOL.yml KEYS [high]")
    keys = [key_of(i, high) for i in range(n)]
    # Start from empty servers.
    for s in pool.servers:
        conn = socket.create_connection((s.addr, s.port), timeout=10)
        if ask(conn, b"flush_all\r\n", b"\r\n") != b"OK\r\n":
            raise RuntimeError(f"flush_all on {s.name} failed")
    proxy = socket.create_connection(pool.listen, timeout=10)
    for k in keys:
        reply = ask(proxy, b"set " + k + b" 0 0 1\r\nv\r\n", b"\r\n")
        if reply != b"STORED\r\n":
            raise RuntimeError(f"set through twemproxy: {reply!r}")
    where = {}
    for s in pool.servers:
        conn = socket.create_connection((s.addr, s.port), timeout=10)
        for k in keys:
            if ask(conn, b"get " + k + b"\r\n", b"END\r\n").startswith(b"VALUE "):
                where.setdefault(k, []).append(s.name)
    same = 0
    wrong = []
    per = {s.name: 0 for s in pool.servers}
    for k in keys:
        want = ketama.place(pool, k).name
        got = where.get(k, [])
        per[want] += 1
        if got == [want]:
            same += 1
        else:
            wrong.append((k[:24], want, got))
    print(f"placed {n} keys: {same} as twemproxy, per server: {per}")
    for k, want, got in wrong[:10]:
        print(f"  {k!r}...: ketama.py says {want}, twemproxy put it on {got}")
    sys.exit(0 if not wrong else 1)


if __name__ == "__main__":
    main()
