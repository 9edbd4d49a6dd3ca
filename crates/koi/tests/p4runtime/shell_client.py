"""p4runtime-shell (p4runtime_sh, p4lang's interactive P4Runtime client) against `koi run`:
the test script of crates/koi/tests/p4rt_shell.rs.

Pushes crates/koi/tests/p4runtime/all_kinds.p4 (its P4Info and koi's device config, as
p4runtime-shell's `FwdPipeConfig` sends them), then for each table of every match kind
inserts, reads, modifies and deletes entries and checks each step with frames sent and
received in the host namespaces (hostnet.py), reads and writes counters and meters, programs
a multicast group, and exchanges packet-out and packet-in. State written through P4Runtime
is read back with `koi ctl`, and the reverse. Prints `ok: ...` for each check and exits
non-zero (with the failed check) when one fails.

Run (in the switch's namespace): python shell_client.py --grpc ADDR --device-id N
  --p4info FILE --device-config FILE --hosts NS:IF:PORT,... --koi KOI --ctl SOCK
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostnet import CPU_MAC, MAC, Ctl, check, client_args, frame, hosts_from  # noqa: E402

import p4runtime_sh.shell as sh  # noqa: E402
from p4runtime_sh.p4runtime import P4RuntimeWriteException  # noqa: E402
from scapy.layers.inet import IP, UDP, checksum  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402

ROUTER = "02:00:00:00:00:fe"
BCAST = "ff:ff:ff:ff:ff:ff"


def udp(src_mac, ip_src, ip_dst, dport, tag, ttl=64):
    return bytes(Ether(src=src_mac, dst=ROUTER) / IP(src=ip_src, dst=ip_dst, ttl=ttl)
                 / UDP(sport=4000, dport=dport) / tag.encode())


def has(tag):
    t = tag.encode()
    return lambda f: t in f


def entries(table):
    return list(sh.TableEntry(table).read())


def through(src, dsts, frm, expect, timeout=5):
    """Sends `frm` from host `src`; `expect` maps each host of `dsts` to whether it must
    receive it. A marker frame that every host of `dsts` receives (a broadcast through
    multicast group 9, which the caller set up) closes the check; the source, whose copies
    are pruned, gets none, and the others' markers show that koi is done with the frame."""
    caps = {d: d.capture() for d in dsts}
    try:
        src.send(frm)
        got = {}
        for d, cap in caps.items():
            got[d] = cap.wait_for(lambda f: f == frm, timeout if expect[d] else 0.0)
        # The marker: whatever koi was to send before it has been sent.
        mark = frame(MAC[src.port], "02:00:00:00:00:99", f"marker-{os.urandom(4).hex()}")
        src.send(mark)
        for d, cap in caps.items():
            if d is not src and cap.wait_for(lambda f: f == mark, timeout) is None:
                raise AssertionError(f"marker frame did not reach {d}")
            got[d] = frm in cap.frames
        return got
    finally:
        for cap in caps.values():
            cap.close()


def main():
    args = client_args()
    h1, h2, h3 = hosts_from(args.hosts)
    hosts = [h1, h2, h3]
    ctl = Ctl(args.koi, args.ctl)

    sh.setup(device_id=args.device_id, grpc_addr=args.grpc, election_id=(0, 1),
             config=sh.FwdPipeConfig(args.p4info, args.device_config), verbose=False)
    try:
        run(hosts, ctl)
    finally:
        sh.teardown()
    print("shell client: all checks passed", flush=True)


def run(hosts, ctl):
    h1, h2, h3 = hosts
    names = sorted(t.name for t in sh.P4Objects(sh.P4Type.table))
    check(names == ["AllIngress.acl", "AllIngress.known_src", "AllIngress.l2",
                    "AllIngress.policer", "AllIngress.routes"],
          f"pipeline pushed; tables from the device's P4Info: {names}")
    check("all_kinds.p4" in ctl("stats"), "koi ctl stats names the program pushed")

    # Marker frames: multicast group 9 to every port (destination 02:..:99).
    mg = sh.MulticastGroupEntry(9)
    for h in hosts:
        mg.add(h.port)
    mg.insert()
    te = sh.TableEntry("AllIngress.l2")(action="flood")
    te.match["hdr.eth.dst"] = "02:00:00:00:00:99"
    te.action["group"] = "9"
    te.insert()

    exact(hosts, ctl)
    multicast(hosts, ctl)
    lpm(hosts, ctl)
    ternary_range_optional(hosts, ctl)
    counters(hosts, ctl)
    meters(hosts, ctl)
    packet_io(hosts, ctl)


def exact(hosts, ctl):
    h1, h2, h3 = hosts
    te = sh.TableEntry("AllIngress.l2")(action="forward")
    te.match["hdr.eth.dst"] = MAC[2]
    te.action["port"] = "2"
    te.insert()
    got = [e for e in entries("AllIngress.l2") if e.match["hdr.eth.dst"].exact.value ==
           bytes.fromhex("020000000002")]
    check(len(got) == 1 and got[0].action["port"].value == b"\x02",
          "exact: entry inserted and read back (port 2, canonical bytestring)")
    dump = ctl("table_dump", "AllIngress.l2")
    check("02:00:00:00:00:02" in dump.lower() or "020000000002" in dump.lower(),
          "exact: koi ctl table_dump shows the entry")
    f = frame(MAC[1], MAC[2], "exact-1")
    got = through(h1, [h2, h3], f, {h2: True, h3: False})
    check(got[h2] and not got[h3], "exact: frame to 02:..:02 forwarded to port 2 only")

    te.action["port"] = "3"
    te.modify()
    got = through(h1, [h2, h3], f, {h2: False, h3: True})
    check(got[h3] and not got[h2], "exact: modified to port 3, the frame goes to port 3 only")

    try:
        te.insert()
        dup = False
    except P4RuntimeWriteException as e:
        dup = "ALREADY_EXISTS" in str(e)
    check(dup, "exact: inserting the same key again is ALREADY_EXISTS")

    te.delete()
    check(not [e for e in entries("AllIngress.l2") if e.match["hdr.eth.dst"].exact.value ==
               bytes.fromhex("020000000002")], "exact: entry deleted")
    got = through(h1, [h2, h3], f, {h2: False, h3: False})
    check(not got[h2] and not got[h3], "exact: after delete the frame is dropped (default)")

    # The reverse: koi ctl writes, P4Runtime reads.
    ctl("table_add", "AllIngress.l2", "forward", "02:00:00:00:00:77", "=>", "1")
    got = [e for e in entries("AllIngress.l2")
           if e.match["hdr.eth.dst"].exact.value == bytes.fromhex("020000000077")]
    check(len(got) == 1 and got[0].action.action_name == "AllIngress.forward"
          and got[0].action["port"].value == b"\x01",
          "exact: an entry added with koi ctl table_add reads back through P4Runtime")
    check("02:00:00:00:00:77" in ctl("table_dump", "AllIngress.l2"), "exact: koi ctl dump")
    got[0].delete()
    check("02:00:00:00:00:77" not in ctl("table_dump", "AllIngress.l2"),
          "exact: the koi ctl entry deleted through P4Runtime is gone from koi ctl's dump")


def multicast(hosts, ctl):
    h1, h2, h3 = hosts
    mg = sh.MulticastGroupEntry(1).add(2).add(3)
    mg.insert()
    te = sh.TableEntry("AllIngress.l2")(action="flood")
    te.match["hdr.eth.dst"] = BCAST
    te.action["group"] = "1"
    te.insert()
    read = list(sh.MulticastGroupEntry(1).read())
    ports = sorted(r.egress_port for r in read[0].replicas) if len(read) == 1 else None
    check(ports == [2, 3], f"multicast: group 1 reads back with ports {ports}")
    dump = ctl("mc_dump")
    check(re.search(r"mgrp\(1\)\n\s*-> \(L1h=\d+, rid=0\) -> \(ports=\[2, 3\]", dump),
          "multicast: koi ctl mc_dump shows group 1 with ports 2 and 3")
    f = frame(MAC[1], BCAST, "flood-1")
    got = through(h1, [h2, h3], f, {h2: True, h3: True})
    check(got[h2] and got[h3], "multicast: broadcast from port 1 reaches ports 2 and 3")

    mg = sh.MulticastGroupEntry(1).add(2)
    mg.modify()
    got = through(h1, [h2, h3], f, {h2: True, h3: False})
    check(got[h2] and not got[h3], "multicast: group modified to port 2 only")

    mg = sh.MulticastGroupEntry(1).add(1).add(2).add(3)
    mg.modify()
    f = frame(MAC[2], BCAST, "flood-2")
    got = through(h2, [h1, h2, h3], f, {h1: True, h2: False, h3: True})
    check(got[h1] and got[h3] and not got[h2],
          "multicast: group of every port; the copy back to the ingress port is pruned")

    te.delete()
    sh.MulticastGroupEntry(1).delete()
    check(not list(sh.MulticastGroupEntry(1).read()), "multicast: group 1 deleted")


def lpm(hosts, ctl):
    h1, h2, h3 = hosts
    wide = sh.TableEntry("AllIngress.routes")(action="route")
    wide.match["hdr.ipv4.dst"] = "10.0.0.0/8"
    wide.action["port"] = "2"
    wide.action["dmac"] = MAC[2]
    wide.insert()
    narrow = sh.TableEntry("AllIngress.routes")(action="route")
    narrow.match["hdr.ipv4.dst"] = "10.1.0.0/16"
    narrow.action["port"] = "3"
    narrow.action["dmac"] = MAC[3]
    narrow.insert()
    got = sorted((e.match["hdr.ipv4.dst"].lpm.value, e.match["hdr.ipv4.dst"].lpm.prefix_len)
                 for e in entries("AllIngress.routes"))
    check(got == [(bytes([10, 0, 0, 0]), 8), (bytes([10, 1, 0, 0]), 16)],
          f"lpm: two routes read back {got}")

    def routed(dst, tag, to, others):
        f = udp(MAC[1], "192.0.2.1", dst, 7, tag)
        caps = {h: h.capture() for h in [to] + others}
        try:
            h1.send(f)
            out = caps[to].wait_for(has(tag))
            mark = frame(MAC[1], "02:00:00:00:00:99", "marker-" + os.urandom(4).hex())
            h1.send(mark)
            for h in others:
                if caps[h].wait_for(lambda x: x == mark) is None:
                    raise AssertionError(f"marker did not reach {h}")
            stray = [h for h in others if caps[h].matching(has(tag))]
        finally:
            for c in caps.values():
                c.close()
        return out, stray

    out, stray = routed("10.1.2.3", "lpm-a", h3, [h2])
    ok = out is not None and not stray
    if ok:
        p = Ether(out)
        ok = (p.dst == MAC[3] and p.src == ROUTER and p[IP].ttl == 63
              and checksum(bytes(p[IP])[:20]) == 0)
    check(ok, "lpm: 10.1.2.3 takes the /16 to port 3 (MACs rewritten, TTL 63, checksum ok)")
    out, stray = routed("10.2.0.1", "lpm-b", h2, [h3])
    check(out is not None and not stray and Ether(out).dst == MAC[2],
          "lpm: 10.2.0.1 takes the /8 to port 2")

    narrow.action["port"] = "1"
    narrow.action["dmac"] = MAC[1]
    narrow.modify()
    out, stray = routed("10.1.9.9", "lpm-c", h1, [h2, h3])
    check(out is not None and not stray, "lpm: /16 modified to port 1")
    narrow.delete()
    out, stray = routed("10.1.2.3", "lpm-d", h2, [h3])
    check(out is not None and not stray, "lpm: /16 deleted, 10.1.2.3 falls back to the /8")
    dump = ctl("table_dump", "AllIngress.routes")
    check("LPM-0a:00:00:00/8" in dump and "AllIngress.route - 00:02, 02:00:00:00:00:02" in dump
          and "/16" not in dump, "lpm: koi ctl table_dump shows the /8 alone")


def ternary_range_optional(hosts, ctl):
    h1, h2, h3 = hosts
    # Route 10.5.0.0/16 to port 2 for these checks.
    r = sh.TableEntry("AllIngress.routes")(action="route")
    r.match["hdr.ipv4.dst"] = "10.5.0.0/16"
    r.action["port"] = "2"
    r.action["dmac"] = MAC[2]
    r.insert()

    deny = sh.TableEntry("AllIngress.acl")(action="deny")
    deny.match["hdr.ipv4.src"] = "192.0.2.0&&&255.255.255.0"
    deny.match["hdr.udp.dst_port"] = "1000..2000"
    deny.match["hdr.ipv4.protocol"] = "17"
    deny.priority = 10
    deny.insert()
    allow = sh.TableEntry("AllIngress.acl")(action="allow")
    allow.match["hdr.ipv4.src"] = "192.0.2.7&&&255.255.255.255"
    allow.priority = 20
    allow.insert()

    read = {e.priority: e for e in entries("AllIngress.acl")}
    d = read.get(10)
    ok = d is not None and d.match["hdr.ipv4.src"].ternary.value == bytes([192, 0, 2, 0]) \
        and d.match["hdr.ipv4.src"].ternary.mask == bytes([255, 255, 255, 0]) \
        and d.match["hdr.udp.dst_port"].range.low == (1000).to_bytes(2, "big") \
        and d.match["hdr.udp.dst_port"].range.high == (2000).to_bytes(2, "big") \
        and d.match["hdr.ipv4.protocol"].optional.value == b"\x11"
    check(ok, "ternary/range/optional: entry reads back with value&mask, low..high, optional")
    a = read.get(20)
    check(a is not None and len(a.msg().match) == 1,
          "ternary/range/optional: don't-care fields of the second entry are omitted")

    def passes(src, dport, tag):
        f = udp(MAC[1], src, "10.5.0.1", dport, tag)
        with h2.capture() as cap:
            h1.send(f)
            # Not UDP: no ACL entry here matches it.
            mark = bytes(Ether(src=MAC[1], dst=ROUTER) / IP(src="198.51.100.1", dst="10.5.0.1",
                         proto=253) / ("marker-" + os.urandom(4).hex()).encode())
            h1.send(mark)
            if cap.wait_for(lambda x: x[-8:] == mark[-8:]) is None:
                raise AssertionError("marker did not arrive")
            return bool(cap.matching(has(tag)))

    check(not passes("192.0.2.1", 1500, "acl-a|"), "acl: 192.0.2.1 -> UDP 1500 denied")
    check(passes("192.0.2.1", 2500, "acl-b|"), "acl: UDP 2500 (outside the range) allowed")
    check(passes("192.0.2.7", 1500, "acl-c|"), "acl: 192.0.2.7 allowed by priority 20")
    check(passes("198.51.100.1", 1000, "acl-d|"), "acl: another source allowed")

    c = sh.DirectCounterEntry("AllIngress.acl_hits")
    c.table_entry.match["hdr.ipv4.src"] = "192.0.2.0&&&255.255.255.0"
    c.table_entry.match["hdr.udp.dst_port"] = "1000..2000"
    c.table_entry.match["hdr.ipv4.protocol"] = "17"
    c.table_entry.priority = 10
    got = list(c.read())
    check(len(got) == 1 and got[0].packet_count == 1 and got[0].byte_count > 0,
          f"acl: direct counter of the deny entry: {got[0].packet_count if got else None}"
          " packet")
    deny.counter_data.packet_count = 0
    deny.counter_data.byte_count = 0
    deny.modify()  # the deny action, counters reset

    deny = sh.TableEntry("AllIngress.acl")(action="allow")
    deny.match["hdr.ipv4.src"] = "192.0.2.0&&&255.255.255.0"
    deny.match["hdr.udp.dst_port"] = "1000..2000"
    deny.match["hdr.ipv4.protocol"] = "17"
    deny.priority = 10
    deny.modify()
    check(passes("192.0.2.1", 1500, "acl-e|"), "acl: entry modified to allow")
    got = list(c.read())
    check(len(got) == 1 and got[0].packet_count == 1,
          "acl: direct counter reset by the modify, then counts 1 again")
    opt = sh.TableEntry("AllIngress.acl")(action="deny")
    opt.match["hdr.ipv4.protocol"] = "17"
    opt.priority = 5
    opt.insert()
    check(not passes("203.0.113.9", 9999, "acl-f|"), "acl: optional-only entry denies UDP")
    for e in (opt, deny, allow):
        e.delete()
    check(entries("AllIngress.acl") == [] and
          ctl("table_num_entries", "AllIngress.acl").split()[-1] == "0",
          "acl: every entry deleted (P4Runtime and koi ctl agree)")
    check(passes("192.0.2.1", 1500, "acl-g|"), "acl: empty table allows")
    r.delete()


def counters(hosts, ctl):
    h1, h2, h3 = hosts
    # Counts since the pipeline was pushed: read, send 5 frames from port 3, read again.
    def read(i):
        e = sh.CounterEntry("AllIngress.port_in")
        e.index = i
        got = list(e.read())
        return got[0].packet_count, got[0].byte_count

    before = read(3)
    f = frame(MAC[3], "02:00:00:00:00:99", "count")
    with h1.capture() as cap:
        h3.send(*([f] * 5))
        check(cap.wait_count(lambda x: x == f, 5) == 5, "counters: 5 frames from port 3 out")
    after = read(3)
    check(after[0] - before[0] == 5 and after[1] - before[1] == 5 * len(f),
          f"counters: port_in[3] counted 5 packets, {5 * len(f)} bytes ({before} -> {after})")
    out = ctl("counter_read", "AllIngress.port_in", "3")
    check(f"packets={after[0]}, bytes={after[1]}" in out,
          f"counters: koi ctl counter_read agrees: {out.strip()}")
    e = sh.CounterEntry("AllIngress.port_in")
    e.index = 3
    e.packet_count = 1000
    e.byte_count = 64000
    e.modify()
    check(read(3) == (1000, 64000), "counters: written through P4Runtime")
    out = ctl("counter_read", "AllIngress.port_in", "3")
    check("packets=1000, bytes=64000" in out, "counters: koi ctl reads the written value")
    ctl("counter_reset", "AllIngress.port_in")
    check(read(3) == (0, 0), "counters: koi ctl counter_reset reads back as 0 via P4Runtime")
    allcells = list(sh.CounterEntry("AllIngress.port_in").read())
    check(len(allcells) == 512, f"counters: wildcard read gives every cell ({len(allcells)})")


def meters(hosts, ctl):
    h1, h2, h3 = hosts
    burst = [frame(MAC[3], "02:00:00:00:00:99", f"meter-{i:02}") for i in range(20)]

    def through_count(src, frames, dst):
        with dst.capture() as cap:
            src.send(*frames)
            # A marker from port 1 (not metered here) closes the count.
            mark = frame(MAC[1], "02:00:00:00:00:99", "meter-mark-" + os.urandom(3).hex())
            h1.send(mark)
            if cap.wait_for(lambda x: x == mark) is None:
                raise AssertionError("marker did not arrive")
            return len([f for f in cap.frames if f in frames])

    check(through_count(h3, burst, h2) == 20, "meters: unconfigured, 20 of 20 frames pass")
    m = sh.MeterEntry("AllIngress.port_meter")
    m.index = 3
    m.cir, m.cburst, m.pir, m.pburst = 1, 1, 1, 1
    m.modify()
    got = list(sh.MeterEntry("AllIngress.port_meter")(index=3).read())
    c = got[0]._entry.config
    check((c.cir, c.cburst, c.pir, c.pburst) == (1, 1, 1, 1),
          "meters: port_meter[3] config reads back")
    rates = ctl("meter_get_rates", "AllIngress.port_meter", "3")
    check("0: info rate = 0.000001, burst size = 1\n1: info rate = 0.000001, burst size = 1"
          in rates, f"meters: koi ctl meter_get_rates: {rates.strip()}")
    n = through_count(h3, burst, h2)
    check(1 <= n <= 3, f"meters: 1 packet/s, burst 1: {n} of 20 frames pass (red dropped)")
    m = sh.MeterEntry("AllIngress.port_meter")
    m.index = 3
    m.modify()  # no config: back to the default
    check(through_count(h3, burst, h2) == 20, "meters: config removed, 20 of 20 pass again")

    # The direct meter of a policer entry (source MAC of host 3).
    p = sh.TableEntry("AllIngress.policer")(action="police")
    p.match["hdr.eth.src"] = MAC[3]
    p.meter_config.cir = 1
    p.meter_config.cburst = 1
    p.meter_config.pir = 1
    p.meter_config.pburst = 1
    p.insert()
    dm = sh.DirectMeterEntry("AllIngress.flow_meter")
    dm.table_entry.match["hdr.eth.src"] = MAC[3]
    got = list(dm.read())
    check(len(got) == 1 and got[0]._entry.config.cir == 1,
          "meters: direct meter config of the policer entry reads back")
    n = through_count(h3, burst, h2)
    check(1 <= n <= 3, f"meters: direct meter 1 packet/s: {n} of 20 frames pass")
    dm = sh.DirectMeterEntry("AllIngress.flow_meter")
    dm.table_entry.match["hdr.eth.src"] = MAC[3]
    dm.cir, dm.cburst, dm.pir, dm.pburst = 1000000, 1000, 1000000, 1000
    dm.modify()
    check(through_count(h3, burst, h2) == 20, "meters: direct meter raised, 20 of 20 pass")
    p.delete()


def packet_io(hosts, ctl):
    h1, h2, h3 = hosts
    payload = frame(MAC[1], MAC[2], "packet-out-1")
    with h2.capture() as cap:
        sh.PacketOut(payload, egress_port="2", _pad="0").send()
        check(cap.wait_for(lambda f: f == payload) is not None,
              "packet-out: the payload leaves on port 2 unchanged")
    te = sh.TableEntry("AllIngress.l2")(action="to_cpu")
    te.match["hdr.eth.dst"] = CPU_MAC
    te.insert()
    f = frame(MAC[3], CPU_MAC, "packet-in-1")
    pin = sh.PacketIn()
    h3.send(f)
    msgs = list(pin.sniff(timeout=5))
    check(len(msgs) == 1, f"packet-in: one PacketIn ({len(msgs)})")
    p = msgs[0].packet
    md = {m.metadata_id: m.value for m in p.metadata}
    check(p.payload == f and md.get(1) == b"\x03",
          f"packet-in: the frame, with ingress_port 3 (metadata {md})")
    te.delete()


if __name__ == "__main__":
    main()
