"""Key placement as twemproxy (nutcracker) does it, so that koi's AppSwitch puts every key on
the server twemproxy would, from the same pool file.

- `Pool.load(path)`: one pool of a nutcracker YAML file (`listen`, `hash`, `distribution`,
  `servers`, `auto_eject_hosts`, `server_failure_limit`, `server_retry_timeout`).
- `key_hash(name, key)`: the hash functions the switch computes (`crc32`: twemproxy's
  libmemcached-compatible 15-bit CRC-32; `crc32a`: the whole CRC-32; `crc16`: CRC-16/XMODEM
  run through a 32-bit register, as twemproxy's hash_crc16 does; `fnv1a_64`, `fnv1_64`,
  `fnv1a_32`, `fnv1_32`: FNV as twemproxy's nc_fnv.c computes it, see `fnv`; `md5`,
  `murmur`, `jenkins`, `hsieh`, `one_at_a_time`: libmemcached's hashkit as twemproxy
  computes it on x86-64, see `HASHKIT`).
- `ketama(servers)`: the continuum twemproxy builds for the live servers (160 points per
  server, weighted, from MD5 of "NAME-i"), and `ring_ranges(...)`: the same continuum as
  ranges of hash values, each to the server that owns it, which is what the switch's `ring`
  table holds.
- `modula(servers)`: twemproxy's `modula` slots (each server as many times as its weight).
- `place(pool, key)`: the server a key goes to.

Each rule is twemproxy's (nc_conf.c, nc_ketama.c, nc_crc32.c, nc_fnv.c, hashkit/*.c),
written down here:
- A server line is `ADDR:PORT:WEIGHT [NAME]`; its name on the continuum is NAME, else ADDR
  when PORT is 11211, else ADDR:PORT.
- Points per server: floor(weight / total * 160 / 4 * live + 1e-10) * 4, computed in single
  precision as twemproxy does; for point group i of a server, MD5("NAME-i") gives four
  points, its bytes 4x..4x+3 read little-endian.
- A key goes to the first point whose value is at or above the key's hash, the first point
  of all when there is none.
- Servers are kept sorted by name, a shorter name first, then bytewise; `modula` gives each
  live server, in that order, as many slots as its weight, and a key goes to slot
  `hash % slots`. `random` gives each live server one slot and picks a slot at random.
"""

import hashlib
import struct
import zlib

KETAMA_POINTS = 160


def f32(x):
    """`x` rounded to single precision, as a C `float` holds it."""
    return struct.unpack("f", struct.pack("f", x))[0]


HASHES = ("crc32", "crc32a", "crc16", "fnv1a_64", "fnv1a_32", "fnv1_64", "fnv1_32",
          "md5", "murmur", "jenkins", "hsieh", "one_at_a_time")
M32 = 0xFFFFFFFF

# Twemproxy's FNV hashes as a 32-bit register: (offset basis, prime, FNV-1a). Its "64-bit"
# ones return the low 32 bits of 64-bit FNV, which only the low 32 bits of the 64-bit offset
# basis (0xcbf29ce484222325) and prime (0x100000001b3) decide (hash_fnv1a_64 keeps a uint32
# register seeded with them; hash_fnv1_64 a uint64 one, cut at the end).
FNV = {
    "fnv1a_64": (0x84222325, 0x000001B3, True),
    "fnv1_64": (0x84222325, 0x000001B3, False),
    "fnv1a_32": (0x811C9DC5, 0x01000193, True),
    "fnv1_32": (0x811C9DC5, 0x01000193, False),
}


def fnv(name, key):
    """Twemproxy's FNV hash `name` of `key` (bytes). It reads each byte as a C `char`, signed
    on x86, so a byte of 0x80 or more enters as 0xFFFFFF00 | byte (`(uint32_t)key[x]`); the
    switch computes the same (HashAlgorithm's `fnv1a_64_signed` and its kin)."""
    h, prime, a = FNV[name]
    for b in key:
        v = b | 0xFFFFFF00 if b >= 0x80 else b
        if a:
            h = ((h ^ v) * prime) & 0xFFFFFFFF
        else:
            h = ((h * prime) & 0xFFFFFFFF) ^ v
    return h


def signed_char(b):
    """Byte `b` as a C `signed char` converted to `uint32_t` (x86)."""
    return b | 0xFFFFFF00 if b >= 0x80 else b


def one_at_a_time(key):
    """Twemproxy's `one_at_a_time` (nc_one_at_a_time.c): each byte as a signed char."""
    h = 0
    for b in key:
        h = (h + signed_char(b)) & M32
        h = (h + (h << 10)) & M32
        h ^= h >> 6
    h = (h + (h << 3)) & M32
    h ^= h >> 11
    return (h + (h << 15)) & M32


def md5_hash(key):
    """Twemproxy's `md5` (nc_md5.c): the digest's first 4 bytes, little-endian."""
    return struct.unpack("<I", hashlib.md5(key).digest()[:4])[0]


def hsieh(key):
    """Twemproxy's `hsieh` (nc_hsieh.c): SuperFastHash from 0, 16-bit reads little-endian;
    with 3 bytes left, the third as a signed char."""
    if not key:
        return 0
    g16 = lambda i: key[i] | (key[i + 1] << 8)
    h, n = 0, len(key) // 4 * 4
    for i in range(0, n, 4):
        h = (h + g16(i)) & M32
        tmp = ((g16(i + 2) << 11) & M32) ^ h
        h = ((h << 16) & M32) ^ tmp
        h = (h + (h >> 11)) & M32
    rem = len(key) - n
    if rem == 3:
        h = (h + g16(n)) & M32
        h ^= (h << 16) & M32
        h ^= (signed_char(key[n + 2]) << 18) & M32
        h = (h + (h >> 11)) & M32
    elif rem == 2:
        h = (h + g16(n)) & M32
        h ^= (h << 11) & M32
        h = (h + (h >> 17)) & M32
    elif rem == 1:
        h = (h + key[n]) & M32
        h ^= (h << 10) & M32
        h = (h + (h >> 1)) & M32
    for shift, add in ((3, False), (5, True), (4, False), (17, True), (25, False), (6, True)):
        h = (h + (h >> shift)) & M32 if add else h ^ ((h << shift) & M32)
    return h


def murmur(key):
    """Twemproxy's `murmur` (nc_murmur.c): MurmurHash2 seeded with 0xdeadbeef * length."""
    m, n = 0x5BD1E995, len(key)
    h = ((0xDEADBEEF * n) & M32) ^ n
    full = n // 4 * 4
    for i in range(0, full, 4):
        k = (struct.unpack("<I", key[i:i + 4])[0] * m) & M32
        k ^= k >> 24
        k = (k * m) & M32
        h = ((h * m) & M32) ^ k
    rest = key[full:]
    if rest:
        for i, b in enumerate(rest):
            h ^= b << (8 * i)
        h = (h * m) & M32
    h ^= h >> 13
    h = (h * m) & M32
    return h ^ (h >> 15)


def jenkins(key):
    """Twemproxy's `jenkins` (nc_jenkins.c): lookup3's hashlittle, initial value 13."""
    rot = lambda x, k: ((x << k) | (x >> (32 - k))) & M32
    a = b = c = (0xDEADBEEF + len(key) + 13) & M32

    def mix(a, b, c):
        for x, y, z, r in ((0, 2, 1, 4), (1, 0, 2, 6), (2, 1, 0, 8),
                           (0, 2, 1, 16), (1, 0, 2, 19), (2, 1, 0, 4)):
            v = [a, b, c]
            v[x] = (v[x] - v[y]) & M32
            v[x] ^= rot(v[y], r)
            v[y] = (v[y] + v[z]) & M32
            a, b, c = v
        return a, b, c

    words = lambda blk: [struct.unpack("<I", blk[i:i + 4])[0] for i in (0, 4, 8)]
    n = len(key)
    i = 0
    while n - i > 12:
        wa, wb, wc = words(key[i:i + 12])
        a, b, c = (a + wa) & M32, (b + wb) & M32, (c + wc) & M32
        a, b, c = mix(a, b, c)
        i += 12
    if n - i == 0:
        return c
    wa, wb, wc = words(key[i:] + bytes(12 - (n - i)))
    a, b, c = (a + wa) & M32, (b + wb) & M32, (c + wc) & M32
    for x, y, r in ((2, 1, 14), (0, 2, 11), (1, 0, 25), (2, 1, 16), (0, 2, 4), (1, 0, 14),
                    (2, 1, 24)):
        v = [a, b, c]
        v[x] ^= v[y]
        v[x] = (v[x] - rot(v[y], r)) & M32
        a, b, c = v
    return c


HASHKIT = {"md5": md5_hash, "murmur": murmur, "jenkins": jenkins, "hsieh": hsieh,
           "one_at_a_time": one_at_a_time}


def crc16_xmodem_table():
    table = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        table.append(c & 0xFFFF)
    return table


CRC16_TABLE = crc16_xmodem_table()

# How the switch's `crc16_custom` calculations are set for twemproxy's `crc16`
# (simple_switch_CLI's `set_crc16_parameters` arguments after the name): CRC-16/XMODEM.
XMODEM = ("0x1021", "0x0", "0x0", "false", "false")
# appswitch.p4's crc16_custom calculations (its hash_crc16 action), as koi names them.
CRC16_CALCS = ("calc_0", "calc_1", "calc_2")


def key_hash(name, key):
    """The hash `name` (a nutcracker `hash:` value) of `key` (bytes)."""
    if name == "crc16":
        # Twemproxy's hash_crc16: the XMODEM table over a 32-bit register that is never
        # cut back to 16 bits.
        crc = 0
        for b in key:
            crc = ((crc << 8) ^ CRC16_TABLE[((crc >> 8) ^ b) & 0xFF]) & 0xFFFFFFFF
        return crc
    if name in FNV:
        return fnv(name, key)
    if name in HASHKIT:
        return HASHKIT[name](key)
    crc = zlib.crc32(key) & 0xFFFFFFFF
    if name == "crc32a":
        return crc
    if name == "crc32":
        return (crc >> 16) & 0x7FFF
    raise ValueError(f"hash {name}: the switch computes {', '.join(HASHES)}")


class Server:
    def __init__(self, line):
        parts = line.split()
        if len(parts) not in (1, 2):
            raise ValueError(f"server {line!r}: expected ADDR:PORT:WEIGHT [NAME]")
        fields = parts[0].rsplit(":", 2)
        if len(fields) != 3:
            raise ValueError(f"server {line!r}: expected ADDR:PORT:WEIGHT [NAME]")
        self.addr, port, weight = fields
        self.port, self.weight = int(port), int(weight)
        if self.weight <= 0:
            raise ValueError(f"server {line!r}: the weight must be positive")
        if len(parts) == 2:
            self.name = parts[1]
        elif self.port == 11211:
            self.name = self.addr
        else:
            self.name = f"{self.addr}:{self.port}"
        self.line = line

    def __repr__(self):
        return f"Server({self.line!r})"


class Pool:
    def __init__(self, name, conf):
        self.name = name
        listen = str(conf.get("listen", ""))
        host, _, port = listen.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"pool {name}: listen {listen!r}: expected ADDR:PORT")
        self.listen = (host, int(port))
        self.hash = conf.get("hash", "fnv1a_64")
        self.distribution = conf.get("distribution", "ketama")
        if self.distribution not in ("ketama", "modula", "random"):
            raise ValueError(f"pool {name}: distribution {self.distribution!r}")
        if "hash_tag" in conf:
            raise ValueError(f"pool {name}: hash_tag is not supported by the switch")
        self.auto_eject_hosts = bool(conf.get("auto_eject_hosts", False))
        self.server_failure_limit = int(conf.get("server_failure_limit", 2))
        self.server_retry_timeout = int(conf.get("server_retry_timeout", 30000))
        servers = [Server(s) for s in conf.get("servers", [])]
        if not servers:
            raise ValueError(f"pool {name}: no servers")
        # Twemproxy refuses duplicates and keeps its servers sorted by name, shorter names
        # first (`conf_validate_server`, `string_compare`): that order is modula's.
        for what, key in (("address", lambda s: (s.addr, s.port, s.weight)),
                          ("name", lambda s: s.name)):
            seen = set()
            for s in servers:
                if key(s) in seen:
                    raise ValueError(f"pool {name}: server {s.line!r}: a duplicate {what}")
                seen.add(key(s))
        self.servers = sorted(servers, key=lambda s: (len(s.name.encode()), s.name.encode()))

    @staticmethod
    def load(path, pool=None):
        import yaml

        with open(path) as f:
            doc = yaml.safe_load(f)
        if not isinstance(doc, dict) or not doc:
            raise ValueError(f"{path}: expected one or more pools")
        name = pool or next(iter(doc))
        if name not in doc:
            raise ValueError(f"{path}: no pool {name}")
        return Pool(name, doc[name])


def ketama(servers):
    """The sorted continuum of `servers` (the live ones): (value, server index) pairs. Ties
    keep the order the points were made in (twemproxy's qsort leaves it open)."""
    total = sum(s.weight for s in servers)
    live = len(servers)
    points = []
    for index, s in enumerate(servers):
        pct = f32(f32(s.weight) / f32(total))
        per_server = int(
            f32(
                float(f32(f32(f32(pct * KETAMA_POINTS) / 4) * f32(live))) + 0.0000000001
            )
            // 1
        ) * 4
        for group in range(per_server // 4):
            digest = hashlib.md5(f"{s.name}-{group}".encode()).digest()
            for x in range(4):
                value = struct.unpack_from("<I", digest, 4 * x)[0]
                points.append((value, index))
    points.sort(key=lambda p: p[0])
    return points


def dispatch(continuum, h):
    """The server index that hash `h` falls to."""
    lo, hi = 0, len(continuum)
    while lo < hi:
        mid = (lo + hi) // 2
        if continuum[mid][0] < h:
            lo = mid + 1
        else:
            hi = mid
    return continuum[lo if lo < len(continuum) else 0][1]


def ring_ranges(continuum, top=0xFFFFFFFF):
    """The continuum as `(low, high, server index)` ranges covering 0..`top`, in order, each
    range merged with its neighbours of the same server."""
    ranges = []
    low = 0
    for value, index in continuum:
        if value > top:
            break
        if value >= low:
            ranges.append([low, value, index])
            low = value + 1
    if low <= top:
        ranges.append([low, top, continuum[0][1]])
    merged = []
    for r in ranges:
        if merged and merged[-1][2] == r[2] and merged[-1][1] + 1 == r[0]:
            merged[-1][1] = r[1]
        else:
            merged.append(r)
    return [tuple(r) for r in merged]


def hash_top(name):
    """The largest value hash `name` gives (`crc16`'s register holds 32 bits)."""
    return 0x7FFF if name == "crc32" else 0xFFFFFFFF


def modula(servers):
    """Twemproxy's `modula` continuum of `servers` (the live ones): each server's index as
    many times as its weight, in pool order. A key goes to slot `hash % len(slots)`."""
    return [index for index, s in enumerate(servers) for _ in range(s.weight)]


def place(pool, key, live=None):
    """The server `key` (bytes) goes to, among `live` (default: all of the pool's). `random`
    places no key: each request goes to a server picked at random."""
    servers = live if live is not None else pool.servers
    h = key_hash(pool.hash, key)
    if pool.distribution == "modula":
        slots = modula(servers)
        return servers[slots[h % len(slots)]]
    if pool.distribution == "random":
        raise ValueError("distribution random places no key")
    return servers[dispatch(ketama(servers), h)]


class Entry:
    """A table entry of the AppSwitch program: `match` and `params` are (name, value) pairs in
    the program's key and parameter order; a range is a (low, high) pair. `default`: the
    table's default action instead."""

    def __init__(self, table, match, action, params=(), priority=None, default=False):
        self.table, self.match, self.action = table, list(match), action
        self.params, self.priority, self.default = list(params), priority, default

    def cli(self):
        """As a simple_switch_CLI command."""
        if self.default:
            return " ".join(["table_set_default", self.table, self.action]
                            + [str(v) for _, v in self.params])
        keys = [f"0x{v[0]:x}->0x{v[1]:x}" if isinstance(v, tuple) else str(v)
                for _, v in self.match]
        line = ["table_add", self.table, self.action] + keys + ["=>"]
        line += [str(v) for _, v in self.params]
        if self.priority is not None:
            line.append(str(self.priority))
        return " ".join(line)


def switch_entries(pool, hosts, vip_mac, live=None):
    """The AppSwitch program's table entries for `pool` ([`Entry`]): [`base_entries`], then
    [`placement_entries`] of the `live` servers (default: all)."""
    servers = live if live is not None else pool.servers
    return base_entries(pool, hosts, vip_mac) + placement_entries(pool, hosts, servers)


def base_entries(pool, hosts, vip_mac):
    """The entries that do not depend on which servers are live: the service address (and
    the switch's ARP answer for it), the hash mode, the servers' replies, and L2 forwarding
    to `hosts` (every known server's and client's address to (MAC, switch port); a broadcast
    floods)."""
    vip, vport = pool.listen
    if pool.hash not in HASHES:
        raise ValueError(f"hash {pool.hash}: the switch computes {', '.join(HASHES)}")
    entries = [
        Entry("vip", [("hdr.ipv4.dst", vip), ("hdr.udp.dport", vport)], "NoAction"),
        Entry("vip_address", [("hdr.ipv4.dst", vip)], "NoAction"),
        Entry("vip_arp", [("hdr.arp.tpa", vip)], "arp_reply", [("vip_mac", vip_mac)]),
        Entry("hash_mode", [], f"hash_{pool.hash}", default=True),
        Entry("l2", [("hdr.ethernet.dst", "ff:ff:ff:ff:ff:ff")], "flood"),
    ]
    for s in pool.servers:
        entries.append(Entry("servers", [("hdr.ipv4.src", s.addr), ("hdr.udp.sport", s.port)],
                             "from_server",
                             [("vip_mac", vip_mac), ("vip_ip", vip), ("vip_port", vport)]))
    for addr, (mac, port) in hosts.items():
        entries += l2_entries(mac, port)
    return entries


def l2_entries(mac, port):
    """A host's L2 entries: frames to `mac` go out of `port`, and frames from it on that port
    are known (no digest)."""
    return [Entry("l2", [("hdr.ethernet.dst", mac)], "forward", [("port", port)]),
            Entry("sources", [("hdr.ethernet.src", mac), ("std.ingress_port", port)],
                  "NoAction")]


def to_server(s, hosts):
    """The `to_server` action's parameters for server `s`."""
    mac, port = hosts[s.addr]
    return [("mac", mac), ("ip", s.addr), ("port", s.port), ("egress", port)]


def placement_entries(pool, hosts, servers):
    """The placement of the live `servers`, as entries: for `ketama`, the `ring` table's
    ranges; for `modula` and `random`, the `distribution` table's default (how many slots)
    and the `slots` table (each slot's server). A server whose place in the network is not
    known yet (not in `hosts`) keeps its share, without an entry: its requests miss and go
    to the fallback."""
    if pool.distribution == "ketama":
        out = [Entry("distribution", [], "dist_ketama", default=True)]
        for low, high, index in ring_ranges(ketama(servers), hash_top(pool.hash)):
            if servers[index].addr in hosts:
                out.append(Entry("ring", [("meta.point", (low, high))], "to_server",
                                 to_server(servers[index], hosts), priority=1))
        return out
    if pool.distribution == "modula":
        slots = modula(servers)
    else:
        slots = list(range(len(servers)))
    out = [Entry("distribution", [], f"dist_{pool.distribution}",
                 [("nslots", len(slots))], default=True)]
    for i, index in enumerate(slots):
        if servers[index].addr in hosts:
            out.append(Entry("slots", [("meta.slot", i)], "to_server",
                             to_server(servers[index], hosts)))
    return out


def changes(old, new):
    """What turns the entries `old` into `new`: (deletes, inserts, modifies), each a list of
    entries. An entry is known by its table and match; a default action is modified."""
    def key(e):
        return (e.table, "default" if e.default else repr(e.match))

    before = {key(e): e for e in old}
    after = {key(e): e for e in new}
    deletes = [e for k, e in before.items() if k not in after and not e.default]
    inserts = [e for k, e in after.items() if k not in before and not e.default]
    modifies = [e for k, e in after.items()
                if (k not in before and e.default)
                or (k in before and before[k].cli() != e.cli())]
    return deletes, inserts, modifies


if __name__ == "__main__":
    # ketama.py POOL.yml VIP_MAC ADDR=MAC@PORT...: the switch's entries for the pool.
    import sys

    pool = Pool.load(sys.argv[1])
    hosts = {}
    for h in sys.argv[3:]:
        addr, _, rest = h.partition("=")
        mac, _, port = rest.partition("@")
        hosts[addr] = (mac, int(port))
    if pool.hash == "crc16":
        for calc in CRC16_CALCS:
            print(" ".join(["set_crc16_parameters", calc, *XMODEM]))
    print("\n".join(e.cli() for e in switch_entries(pool, hosts, sys.argv[2])))
