#!/usr/bin/env python3
"""The controller of koi's BNG example (examples/bng/bng.p4), written with finsy (an asyncio
P4Runtime framework): the PPPoE access concentrator's control plane.

It connects to `koi run`'s P4Runtime server, which runs bng.p4 with the BNG's own
configuration (bng.entries: its MACs and routes), and serves the subscribers of a
subscribers file:

- each subscriber's access line (port, S-VLAN, C-VLAN) is an entry of table `lines`, and its
  downstream rate configures its meter (`downstream_policer`);
- PPPoE discovery (RFC 2516) reaches it as packet-ins: a PADI from a known line is answered
  with a PADO (AC-Name, the Service-Name and Host-Uniq echoed), a PADR with a PADS that opens
  the subscriber's session: session id = subscriber id, and the session's entries go into
  `sessions` (session id, the CPE's MAC -> the subscriber's address) and `downstream` (the
  address -> port, VLANs, session, MACs); a PADT (from the CPE) closes the session and
  removes them;
- LCP echo requests in an open session are answered with echo replies (the PPP keepalive);
  other PPP control packets (LCP negotiation, IPCP, PAP, CHAP) are logged and not answered:
  this controller opens sessions by discovery only, it does not negotiate PPP;
- on SIGUSR1 it prints each subscriber's counters (upstream_usage, downstream_usage) and the
  drop counters.

Answers leave as packet-outs on the port the request came in on. Each event is a line on its
output (`PADO to ...`, `session 1 up ...`, `lcp echo ...`). It never pushes a pipeline and
writes only the tables and meters named above. See examples/bng/README.md.
"""

import argparse
import asyncio
import ipaddress
import logging
import os
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import finsy as fy

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from koi_controller import find_koi, koi_compile, say  # noqa: E402
DROP_REASONS = [
    "malformed", "not for us", "not subscriber", "unknown line", "unknown session",
    "spoofed", "unsupported", "TTL", "no route", "unknown subscriber", "policed", "not IPv4",
]
TO_CPU_DISCOVERY, TO_CPU_PPP_CONTROL = 1, 2
PADI, PADO, PADR, PADS, PADT = 0x09, 0x07, 0x19, 0x65, 0xA7
TAG_SERVICE_NAME, TAG_AC_NAME, TAG_HOST_UNIQ = 0x0101, 0x0102, 0x0103


@dataclass(frozen=True)
class Subscriber:
    sid: int
    port: int
    s_vlan: int
    c_vlan: int
    address: str
    rate_kbps: int

    def line(self):
        return f"{self.port}/{self.s_vlan}/{self.c_vlan}"


def read_subscribers(path):
    """The subscribers file: `id port s_vlan c_vlan address rate` a line, `#` comments."""
    subs = {}
    for n, raw in enumerate(Path(path).read_text().splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        try:
            sid, port, s, c, addr, rate = words
            sub = Subscriber(int(sid), int(port), int(s), int(c),
                             str(ipaddress.IPv4Address(addr)), int(rate))
        except ValueError as e:
            raise ValueError(f"{path}:{n}: {e} (want: id port s_vlan c_vlan address rate)") from e
        if not (0 < sub.sid < 65536 and 0 < sub.s_vlan < 4095 and 0 < sub.c_vlan < 4095
                and sub.rate_kbps >= 0):
            raise ValueError(f"{path}:{n}: id 1-65535 (the PPPoE session id), VLANs 1-4094")
        if sub.sid in subs:
            raise ValueError(f"{path}:{n}: subscriber {sub.sid} twice")
        subs[sub.sid] = sub
    lines = [(s.port, s.s_vlan, s.c_vlan) for s in subs.values()]
    addrs = [s.address for s in subs.values()]
    if len(set(lines)) != len(lines) or len(set(addrs)) != len(addrs):
        raise ValueError(f"{path}: two subscribers on one line or with one address")
    return subs


def mac_int(mac):
    return int(mac.replace(":", ""), 16)


class Bng:
    """The subscribers and their open sessions (subscriber id -> CPE MAC)."""

    def __init__(self, sw, subs, ac_mac, ac_name):
        self.sw = sw
        self.subs = subs
        self.by_line = {(s.port, s.s_vlan, s.c_vlan): s for s in subs.values()}
        self.ac_mac = ac_mac
        self.ac_name = ac_name
        self.open = {}
        self.lock = asyncio.Lock()

    async def setup(self):
        """Lines and meters of every subscriber; no session open (entries of an earlier run
        removed)."""
        old = []
        for table in ("lines", "sessions", "downstream"):
            old += [e async for e in self.sw.read(fy.P4TableEntry(table))]
        if old:
            await self.sw.delete(old)
        lines = [fy.P4TableEntry("lines", match=fy.Match(port=s.port, s_vid=s.s_vlan,
                                                         c_vid=s.c_vlan),
                                 action=fy.Action("set_line", subscriber=s.sid))
                 for s in self.subs.values()]
        await self.sw.insert(lines)
        meters = []
        for s in self.subs.values():
            config = None
            if s.rate_kbps:
                rate = s.rate_kbps * 1000 // 8               # bytes per second
                burst = max(3000, rate // 10)                # 100 ms of traffic
                config = fy.P4MeterConfig(cir=rate, cburst=burst, pir=rate, pburst=burst)
            meters.append(fy.P4MeterEntry("downstream_policer", index=s.sid, config=config))
        await self.sw.modify(meters)

    def entries(self, s, cpe_mac):
        session = fy.P4TableEntry("sessions", match=fy.Match(**{
            "meta.subscriber": s.sid, "hdr.pppoe.session_id": s.sid, "hdr.eth.src": cpe_mac}),
            action=fy.Action("session_up", addr=s.address))
        down = fy.P4TableEntry("downstream", match=fy.Match(**{"hdr.ipv4.dst": s.address}),
                               action=fy.Action("to_subscriber", subscriber=s.sid, port=s.port,
                                                s_vid=s.s_vlan, c_vid=s.c_vlan,
                                                session_id=s.sid, cpe_mac=cpe_mac,
                                                ac_mac=self.ac_mac))
        return [session, down]

    async def open_session(self, s, cpe_mac):
        async with self.lock:
            old = self.open.get(s.sid)
            if old is not None:
                await self.sw.delete(self.entries(s, old))
            await self.sw.insert(self.entries(s, cpe_mac))
            self.open[s.sid] = cpe_mac
        say(f"session {s.sid} up: subscriber {s.sid} on line {s.line()}, CPE {cpe_mac}, "
            f"address {s.address}")

    async def close_session(self, s, cpe_mac):
        async with self.lock:
            if self.open.get(s.sid) != cpe_mac:
                say(f"PADT from {cpe_mac} on line {s.line()} for no open session: ignored")
                return
            await self.sw.delete(self.entries(s, cpe_mac))
            del self.open[s.sid]
        say(f"session {s.sid} down (PADT from {cpe_mac})")

    async def report(self):
        async with self.lock:
            for sid, s in sorted(self.subs.items()):
                counts = []
                for name in ("upstream_usage", "downstream_usage"):
                    [c] = [e async for e in self.sw.read(fy.P4CounterEntry(name, index=sid))]
                    counts.append(f"{c.packet_count} packets {c.byte_count} bytes")
                say(f"usage subscriber {sid} ({s.address}): upstream {counts[0]}, "
                    f"downstream {counts[1]}")
            drops = [e async for e in self.sw.read(fy.P4CounterEntry("drops"))]
            parts = [f"{DROP_REASONS[d.index]} {d.packet_count}" for d in
                     sorted(drops, key=lambda d: d.index) if d.index < len(DROP_REASONS)]
            say("drops: " + ", ".join(parts))

    async def packet_in(self, port, reason, frame):
        from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
        from scapy.layers.ppp import PPP, PPP_LCP_Echo, PPPoE, PPPoED, PPPoED_Tags, PPPoETag

        pkt = Ether(frame)
        if Dot1AD not in pkt or Dot1Q not in pkt:
            say(f"packet-in from port {port} without QinQ: ignored")
            return
        s_vlan, c_vlan = pkt[Dot1AD].vlan, pkt[Dot1Q].vlan
        sub = self.by_line.get((port, s_vlan, c_vlan))
        if sub is None:
            say(f"packet-in from unknown line {port}/{s_vlan}/{c_vlan}: ignored")
            return
        cpe = pkt.src

        def reply(ether_type, body):
            return bytes(Ether(src=self.ac_mac, dst=cpe) / Dot1AD(vlan=s_vlan, type=0x8100)
                         / Dot1Q(vlan=c_vlan, type=ether_type) / body)

        async def send(frame_out):
            await self.sw.write([fy.P4PacketOut(frame_out, egress_port=port, _pad=0)])

        if reason == TO_CPU_DISCOVERY and PPPoED in pkt:
            code = pkt[PPPoED].code
            tags = pkt[PPPoED_Tags].tag_list if PPPoED_Tags in pkt else []
            echoed = [t for t in tags if t.tag_type in (TAG_SERVICE_NAME, TAG_HOST_UNIQ)]
            if code == PADI:
                offer = [PPPoETag(tag_type=TAG_AC_NAME, tag_value=self.ac_name.encode())]
                await send(reply(0x8863, PPPoED(code=PADO) / PPPoED_Tags(tag_list=offer
                                                                          + echoed)))
                say(f"PADO to {cpe} on line {sub.line()} (subscriber {sub.sid})")
            elif code == PADR:
                await self.open_session(sub, cpe)
                await send(reply(0x8863, PPPoED(code=PADS, sessionid=sub.sid)
                                 / PPPoED_Tags(tag_list=echoed)))
                say(f"PADS to {cpe}: session {sub.sid}")
            elif code == PADT:
                await self.close_session(sub, cpe)
            else:
                say(f"PPPoE discovery code {code:#04x} from {cpe}: ignored")
            return
        if reason == TO_CPU_PPP_CONTROL and PPPoE in pkt and PPP in pkt:
            session = pkt[PPPoE].sessionid
            proto = pkt[PPP].proto
            if self.open.get(sub.sid) != cpe or session != sub.sid:
                say(f"PPP control from {cpe} outside an open session ({session}): ignored")
                return
            if proto == 0xC021 and PPP_LCP_Echo in pkt and pkt[PPP_LCP_Echo].code == 9:
                req = pkt[PPP_LCP_Echo]
                await send(reply(0x8864, PPPoE(sessionid=session) / PPP(proto=0xC021)
                                 / PPP_LCP_Echo(code=10, id=req.id, magic_number=0,
                                                data=req.data)))
                say(f"lcp echo from subscriber {sub.sid} (id {req.id}): answered")
                return
            say(f"ppp control protocol {proto:#06x} from subscriber {sub.sid}: not handled "
                "(this controller does not negotiate PPP)")
            return
        say(f"packet-in from port {port} (reason {reason}) ignored")


async def on_ready(sw, subs, ac_mac, ac_name):
    bng = Bng(sw, subs, ac_mac, ac_name)
    await bng.setup()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, lambda: asyncio.ensure_future(bng.report()))
    say(f"ready: device {sw.device_id}, {len(subs)} subscribers, access concentrator "
        f"{ac_mac} ({ac_name})")
    async for p in sw.read_packets():
        await bng.packet_in(p["ingress_port"], p["reason"], p.payload)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grpc", default="127.0.0.1:9559",
                    help="koi run's P4Runtime address (default: %(default)s)")
    ap.add_argument("--device-id", type=int, default=1, help="its device id (default: 1)")
    ap.add_argument("--subscribers", default=str(HERE / "subscribers.txt"),
                    help="the subscribers file (default: examples/bng/subscribers.txt)")
    ap.add_argument("--ac-mac", default="02:00:00:00:0c:01",
                    help="the BNG's access MAC, the CPEs' PPPoE peer (default: %(default)s)")
    ap.add_argument("--ac-name", default="koi-bng",
                    help="the AC-Name of its PADOs (default: %(default)s)")
    ap.add_argument("--program", default=str(HERE / "bng.p4"),
                    help="the P4 program koi runs, for its P4Info (default: examples/bng/bng.p4)")
    ap.add_argument("--koi", help="the koi binary (default: koi on the PATH, or target/)")
    ap.add_argument("--verbose", action="store_true", help="finsy's log too")
    args = ap.parse_args()
    # Stopped with SIGTERM (by a supervisor, a test) as with Ctrl-C: its temporary files go.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR)
    try:
        subs = read_subscribers(args.subscribers)
        mac_int(args.ac_mac)
    except (OSError, ValueError) as e:
        sys.exit(f"controller: {e}")

    with tempfile.TemporaryDirectory(prefix="koi-bng-") as tmp:
        p4info = koi_compile(find_koi(args.koi), args.program, tmp)[0]

        async def ready(sw):
            await on_ready(sw, subs, args.ac_mac, args.ac_name)

        opts = fy.SwitchOptions(p4info=p4info, device_id=args.device_id, ready_handler=ready)
        say(f"connecting to {args.grpc} (device {args.device_id})")
        try:
            fy.run(fy.Controller([fy.Switch("bng", args.grpc, opts)]).run())
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
