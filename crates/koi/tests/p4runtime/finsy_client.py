"""finsy (an asyncio P4Runtime controller framework) against `koi run`: the test script of
crates/koi/tests/p4rt_finsy.rs.

Connects with finsy's `Switch` (arbitration, then finsy pushes
crates/koi/tests/p4runtime/all_kinds.p4's P4Info and koi's device config), and checks the
core of P4Runtime with frames sent and received in the host namespaces (hostnet.py): table
entries of every match kind inserted, read, modified and deleted; counters and meters direct
and indirect; a multicast group; packet-out and packet-in; and digests: configured with a
DigestEntry, received as DigestLists (source MAC and port of unknown senders), acknowledged,
duplicates suppressed, and no digest once the controller knows the source. Prints `ok: ...`
for each check; exits non-zero when one fails.

Run (in the switch's namespace): python finsy_client.py --grpc ADDR --device-id N
  --p4info FILE --device-config FILE --hosts NS:IF:PORT,... --koi KOI --ctl SOCK
"""

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostnet import (  # noqa: E402
    CPU_MAC, MAC, Ctl, check, client_args, frame, hosts_from, mac_bytes)

import finsy as fy  # noqa: E402

MARK = "02:00:00:00:00:99"


def mac_int(m):
    return int.from_bytes(mac_bytes(m), "big")


def ipv4_udp(src_mac, dst_mac, ip_src, ip_dst, dport, tag):
    """Ethernet/IPv4/UDP, IPv4 checksum set (the standard library only)."""
    payload = tag.encode()
    udp = (4000).to_bytes(2, "big") + dport.to_bytes(2, "big") + \
        (8 + len(payload)).to_bytes(2, "big") + b"\0\0" + payload
    ip = bytearray(b"\x45\x00" + (20 + len(udp)).to_bytes(2, "big") + b"\0\1\0\0\x40\x11\0\0"
                   + bytes(map(int, ip_src.split("."))) + bytes(map(int, ip_dst.split("."))))
    s = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    ip[10:12] = (~s & 0xFFFF).to_bytes(2, "big")
    return mac_bytes(dst_mac) + mac_bytes(src_mac) + b"\x08\x00" + bytes(ip) + udp


def arrivals(src, frm, dsts, marker_from=None, same=None):
    """Blocking: sends `frm` from `src` and a marker (broadcast through group 9) after it;
    returns the hosts of `dsts` that received `frm` (as `same` says: by default, unchanged)
    once each has the marker (the source gets no marker: its copy is pruned)."""
    same = same or (lambda f: f == frm)
    caps = {d: d.capture() for d in dsts}
    try:
        src.send(frm)
        sender = marker_from or src
        mark = frame(MAC[sender.port], MARK, "marker-" + os.urandom(4).hex())
        sender.send(mark)
        for d, cap in caps.items():
            if d is not sender and cap.wait_for(lambda f: f == mark) is None:
                raise AssertionError(f"marker did not reach {d}")
        return {d for d, cap in caps.items() if any(map(same, cap.frames))}
    finally:
        for c in caps.values():
            c.close()


async def main():
    args = client_args()
    hosts = hosts_from(args.hosts)
    ctl = Ctl(args.koi, args.ctl)
    opts = fy.SwitchOptions(p4info=Path(args.p4info), p4blob=Path(args.device_config),
                            device_id=args.device_id)
    async with fy.Switch("koi", args.grpc, opts) as sw:
        check(sw.is_primary, "finsy: connected, primary")
        check("all_kinds.p4" in ctl("stats"), "finsy pushed the pipeline (koi ctl stats)")
        await run(sw, hosts, ctl)
    print("finsy client: all checks passed", flush=True)


async def blocking(f, *a):
    return await asyncio.to_thread(f, *a)


async def read_all(sw, entity):
    return [e async for e in sw.read(entity)]


async def run(sw, hosts, ctl):
    h1, h2, h3 = hosts
    # Marker frames: group 9 to every port.
    await sw.insert([
        fy.P4MulticastGroupEntry(9, replicas=[h.port for h in hosts]),
        fy.P4TableEntry("l2", match=fy.Match(dst=MARK), action=fy.Action("flood", group=9)),
    ])

    # Exact.
    fwd = fy.P4TableEntry("AllIngress.l2", match=fy.Match({"hdr.eth.dst": MAC[2]}),
                          action=fy.Action("forward", port=2))
    await sw.insert([fwd])
    got = await read_all(sw, fy.P4TableEntry("l2"))
    mine = [e for e in got if e.match["dst"] == mac_int(MAC[2])]
    check(len(mine) == 1 and mine[0].action.args == {"port": 2},
          "exact: entry inserted and read back")
    f = frame(MAC[1], MAC[2], "exact")
    check(await blocking(arrivals, h1, f, [h2, h3]) == {h2}, "exact: frame forwarded to port 2")
    await sw.modify([fy.P4TableEntry("l2", match=fy.Match(dst=MAC[2]),
                                     action=fy.Action("forward", port=3))])
    check(await blocking(arrivals, h1, f, [h2, h3]) == {h3}, "exact: modified to port 3")
    await sw.delete([fwd])
    check(await blocking(arrivals, h1, f, [h2, h3]) == set(), "exact: deleted, frame dropped")
    check("02:00:00:00:00:02" not in ctl("table_dump", "AllIngress.l2"),
          "exact: koi ctl table_dump no longer shows it")

    # Multicast.
    await sw.insert([
        fy.P4MulticastGroupEntry(1, replicas=[1, 2, 3]),
        fy.P4TableEntry("l2", match=fy.Match(dst="ff:ff:ff:ff:ff:ff"),
                        action=fy.Action("flood", group=1)),
    ])
    got = await read_all(sw, fy.P4MulticastGroupEntry(1))
    check(len(got) == 1 and sorted(r[0] if isinstance(r, tuple) else r
                                   for r in got[0].replicas) == [1, 2, 3],
          f"multicast: group 1 reads back ({got[0].replicas if got else None})")
    f = frame(MAC[3], "ff:ff:ff:ff:ff:ff", "bcast")
    check(await blocking(arrivals, h3, f, hosts) == {h1, h2},
          "multicast: broadcast from port 3 reaches ports 1 and 2, not 3")
    await sw.modify([fy.P4MulticastGroupEntry(1, replicas=[1])])
    check(await blocking(arrivals, h3, f, hosts) == {h1}, "multicast: group modified to port 1")

    # LPM.
    await sw.insert([
        fy.P4TableEntry("routes", match=fy.Match(dst="10.0.0.0/8"),
                        action=fy.Action("route", port=2, dmac=MAC[2])),
        fy.P4TableEntry("routes", match=fy.Match(dst="10.1.0.0/16"),
                        action=fy.Action("route", port=3, dmac=MAC[3])),
    ])
    got = sorted(e.match_str(sw.p4info) for e in await read_all(sw, fy.P4TableEntry("routes")))
    check(got == ["dst=0xa000000/8", "dst=0xa010000/16"], f"lpm: routes read back {got}")
    f = ipv4_udp(MAC[1], "02:00:00:00:00:fe", "192.0.2.1", "10.1.2.3", 7, "lpm-a")
    cap = await blocking(h3.capture)
    try:
        await blocking(h1.send, f)
        out = await blocking(cap.wait_for, lambda x: x.endswith(b"lpm-a"))
    finally:
        cap.close()
    check(out is not None and out[:6] == mac_bytes(MAC[3]) and out[22] == 63,
          "lpm: 10.1.2.3 routed by the /16 to port 3 (TTL 63)")
    await sw.delete([fy.P4TableEntry("routes", match=fy.Match(dst="10.1.0.0/16"))])
    f = ipv4_udp(MAC[1], "02:00:00:00:00:fe", "192.0.2.1", "10.1.2.3", 7, "lpm-b")
    routed = lambda x: x.endswith(b"lpm-b")  # noqa: E731
    check(await blocking(arrivals, h1, f, [h2, h3], None, routed) == {h2},
          "lpm: /16 deleted, 10.1.2.3 takes the /8 to port 2")

    # Ternary, range, optional (and the ACL's direct counter).
    deny = fy.P4TableEntry("acl", match=fy.Match({"hdr.ipv4.src": "192.0.2.0/255.255.255.0",
                                                  "hdr.udp.dst_port": "1000...2000",
                                                  "hdr.ipv4.protocol": 17}),
                           action=fy.Action("deny"), priority=10)
    await sw.insert([deny])
    got = await read_all(sw, fy.P4TableEntry("acl"))
    check(len(got) == 1 and got[0].priority == 10 and got[0].match_dict(sw.p4info) ==
          {"src": "0xc0000200/24", "dst_port": "0x3e8...0x7d0", "protocol": "0x11"},
          f"ternary/range/optional: entry read back {got[0].match_str(sw.p4info) if got else ''}")
    denied = ipv4_udp(MAC[1], "02:00:00:00:00:fe", "192.0.2.9", "10.1.0.1", 1500, "acl-a")
    allowed = ipv4_udp(MAC[1], "02:00:00:00:00:fe", "192.0.2.9", "10.1.0.1", 2001, "acl-b")
    def tag(t):
        return lambda x: x.endswith(t)

    check(await blocking(arrivals, h1, denied, [h2], None, tag(b"acl-a")) == set(),
          "acl: UDP 1500 from 192.0.2.9 denied")
    check(await blocking(arrivals, h1, allowed, [h2], None, tag(b"acl-b")) == {h2},
          "acl: UDP 2001 allowed")
    got = await read_all(sw, fy.P4DirectCounterEntry("acl_hits"))
    check(len(got) == 1 and got[0].packet_count == 1,
          f"acl: direct counter of the entry counts 1 ({[g.packet_count for g in got]})")
    await sw.delete([deny])
    check(await blocking(arrivals, h1, denied, [h2], None, tag(b"acl-a")) == {h2},
          "acl: entry deleted, allowed")

    # Counters.
    got = await read_all(sw, fy.P4CounterEntry("port_in", index=3))
    n3 = got[0].packet_count
    ctl_out = ctl("counter_read", "AllIngress.port_in", "3")
    check(f"packets={n3}," in ctl_out, f"counters: port_in[3] = {n3}, as koi ctl reads it")
    await sw.modify([fy.P4CounterEntry("port_in", index=3,
                                       data=fy.P4CounterData(packet_count=7, byte_count=700))])
    check("packets=7, bytes=700" in ctl("counter_read", "AllIngress.port_in", "3"),
          "counters: written through P4Runtime, read by koi ctl")

    # Meters: port 2's indirect meter at 1 packet/s.
    burst = [frame(MAC[2], MARK, f"m{i:02}") for i in range(20)]

    def passed(frames):
        with h1.capture() as c:
            h2.send(*frames)
            mark = frame(MAC[3], MARK, "marker-" + os.urandom(4).hex())
            h3.send(mark)
            if c.wait_for(lambda x: x == mark) is None:
                raise AssertionError("marker lost")
            return sum(1 for x in c.frames if x in frames)

    cfg = fy.P4MeterConfig(cir=1, cburst=1, pir=1, pburst=1)
    await sw.modify([fy.P4MeterEntry("port_meter", index=2, config=cfg)])
    got = await read_all(sw, fy.P4MeterEntry("port_meter", index=2))
    check(got and got[0].config == cfg, "meters: port_meter[2] config reads back")
    n = await blocking(passed, burst)
    check(1 <= n <= 3, f"meters: 1 packet/s: {n} of 20 pass")
    await sw.modify([fy.P4MeterEntry("port_meter", index=2)])
    check(await blocking(passed, burst) == 20, "meters: config cleared, 20 of 20 pass")
    await sw.insert([fy.P4TableEntry("policer", match=fy.Match(src=MAC[2]),
                                     action=fy.Action("police"), meter_config=cfg)])
    got = await read_all(sw, fy.P4DirectMeterEntry(table_entry=fy.P4TableEntry("policer")))
    check(len(got) == 1 and got[0].config == cfg, "meters: direct meter config reads back")
    n = await blocking(passed, burst)
    check(1 <= n <= 3, f"meters: direct meter 1 packet/s: {n} of 20 pass")

    # Packet-out, packet-in.
    payload = frame(MAC[1], MAC[3], "packet-out")
    cap = await blocking(h3.capture)
    try:
        await sw.write([fy.P4PacketOut(payload, egress_port=3, _pad=0)])
        got = await blocking(cap.wait_for, lambda x: x == payload)
    finally:
        cap.close()
    check(got is not None, "packet-out: payload leaves on port 3")
    await sw.insert([fy.P4TableEntry("l2", match=fy.Match(dst=CPU_MAC),
                                     action=fy.Action("to_cpu"))])
    f = frame(MAC[1], CPU_MAC, "packet-in")

    async def first_packet():
        async for p in sw.read_packets():
            return p

    task = asyncio.create_task(first_packet())
    await asyncio.sleep(0)
    await blocking(h1.send, f)
    p = await asyncio.wait_for(task, 10)
    check(p.payload == f and p["ingress_port"] == 1,
          f"packet-in: the frame with ingress_port {p['ingress_port']}")

    await digests(sw, hosts)


async def digests(sw, hosts):
    h1, h2, h3 = hosts
    await sw.insert([fy.P4DigestEntry("seen_t", max_list_size=4, max_timeout_ns=50_000_000,
                                      ack_timeout_ns=2_000_000_000)])
    got = await read_all(sw, fy.P4DigestEntry("seen_t"))
    check(len(got) == 1 and got[0].max_list_size == 4, "digests: DigestEntry reads back")
    queue = asyncio.Queue()

    async def reader():
        async for d in sw.read_digests("seen_t"):
            await queue.put(d)

    task = asyncio.create_task(reader())
    await asyncio.sleep(0)

    async def next_list(timeout=10):
        return await asyncio.wait_for(queue.get(), timeout)

    # Two new sources, each sending twice: one digest each, in one or two lists.
    a, b = mac_int("02:00:00:00:0a:01"), mac_int("02:00:00:00:0a:02")
    c = mac_int("02:00:00:00:0a:03")

    def src(m, tag):
        return frame("%012x" % m, MARK, tag)

    await blocking(h1.send, src(a, "d1"), src(a, "d2"))
    await blocking(h2.send, src(b, "d3"), src(b, "d4"))
    seen = []
    while len(seen) < 2:
        d = await next_list()
        seen += [(x["src"], x["port"]) for x in d.data]
        await sw.write([fy.P4DigestListAck(d.digest_id, d.list_id)])
    check(sorted(seen) == [(a, 1), (b, 2)],
          f"digests: one per unknown source, with its port ({seen})")

    # The controller learns `a`: no digest for it any more; `c` is new.
    await sw.insert([fy.P4TableEntry("known_src", match=fy.Match(src=a),
                                     action=fy.Action("known"))])
    await blocking(h1.send, src(a, "d5"))
    await blocking(h3.send, src(c, "d6"))
    d = await next_list()
    await sw.write([fy.P4DigestListAck(d.digest_id, d.list_id)])
    check([(x["src"], x["port"]) for x in d.data] == [(c, 3)],
          "digests: a learnt source sends none, a new one does")
    # Still unknown and already acknowledged: `b` again gives a new digest after the ack.
    await blocking(h2.send, src(b, "d7"))
    d = await next_list()
    check([(x["src"], x["port"]) for x in d.data] == [(b, 2)],
          "digests: after the ack, an unknown source is reported again")
    task.cancel()
    await sw.delete([fy.P4DigestEntry("seen_t")])
    check(not await read_all(sw, fy.P4DigestEntry("seen_t")), "digests: DigestEntry deleted")


if __name__ == "__main__":
    asyncio.run(main())
