#!/usr/bin/env python3
"""The session controller of koi's UPF example (examples/upf/upf.p4), written with finsy (an
asyncio P4Runtime framework).

It connects to `koi run`'s P4Runtime server, which runs upf.p4 with the UPF's own
configuration (upf.entries: its MACs, N3 address, routes, QoS map), and keeps the PDU
sessions of a sessions file in the data plane, as an SMF would through N4:

- each session (id, UE address, uplink TEID, downlink TEID, gNB address, QFI) is an entry of
  table `uplink` (TEID -> session id, UE address) and one of `downlink` (UE address ->
  session id, downlink TEID, gNB address, QFI);
- on SIGHUP it reads the file again and installs the sessions that are new, modifies the
  ones that changed (an entry whose key changed, a new TEID or UE address, is replaced) and
  removes the ones that are gone;
- on SIGUSR1 it prints each session's counters (uplink_usage, downlink_usage: packets and
  bytes) and the drop counters;
- GTP-U echo requests from a gNB reach it as packet-ins (the program sends GTP-U signalling to
  the CPU port): it answers each with an echo response (TS 29.281 7.2.2, with the Recovery
  IE) through a packet-out on the port the request came in on.

It never pushes a pipeline and touches no other table than `uplink` and `downlink`. Each
event is a line on its output (`session 1 installed ...`, `sessions: ...`, `echo ...`). See
examples/upf/README.md for how to run it.
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
    "malformed", "not for us", "not IPv4", "not N3", "unsupported", "unknown TEID",
    "UE mismatch", "unknown UE", "TTL", "no route", "no N3 source",
]
TO_CPU_GTPU_SIGNALLING = 1


@dataclass(frozen=True)
class Session:
    sid: int
    ue: str
    teid_up: int
    teid_dn: int
    gnb: str
    qfi: int

    def describe(self):
        return (f"UE {self.ue}, TEID up {self.teid_up:#x} down {self.teid_dn:#x}, "
                f"gNB {self.gnb}, QFI {self.qfi}")


def read_sessions(path):
    """The sessions file: `id ue teid_up teid_dn gnb qfi` a line, `#` comments."""
    sessions = {}
    for n, raw in enumerate(Path(path).read_text().splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        try:
            sid, ue, up, dn, gnb, qfi = words
            s = Session(int(sid), str(ipaddress.IPv4Address(ue)), int(up, 0), int(dn, 0),
                        str(ipaddress.IPv4Address(gnb)), int(qfi))
        except ValueError as e:
            raise ValueError(f"{path}:{n}: {e} (want: id ue teid_up teid_dn gnb qfi)") from e
        if not (0 <= s.sid < 65536 and 0 <= s.qfi < 64 and s.teid_up < 2**32
                and s.teid_dn < 2**32):
            raise ValueError(f"{path}:{n}: id 0-65535, QFI 0-63, TEIDs of 32 bits")
        if s.sid in sessions:
            raise ValueError(f"{path}:{n}: session {s.sid} twice")
        sessions[s.sid] = s
    ues = [s.ue for s in sessions.values()]
    teids = [s.teid_up for s in sessions.values()]
    if len(set(ues)) != len(ues) or len(set(teids)) != len(teids):
        raise ValueError(f"{path}: two sessions with one UE address or uplink TEID")
    return sessions


def uplink_entry(s):
    return fy.P4TableEntry("uplink", match=fy.Match(**{"hdr.gtpu.teid": s.teid_up}),
                           action=fy.Action("set_uplink", session=s.sid, ue_addr=s.ue))


def downlink_entry(s):
    return fy.P4TableEntry("downlink", match=fy.Match(**{"hdr.ipv4.dst": s.ue}),
                           action=fy.Action("set_downlink", session=s.sid, teid=s.teid_dn,
                                            gnb_addr=s.gnb, qfi=s.qfi))


class Sessions:
    """What the controller installed, by session id."""

    def __init__(self, sw, path):
        self.sw = sw
        self.path = path
        self.installed = {}
        self.lock = asyncio.Lock()

    async def clear(self):
        """Removes whatever session entries the tables hold (a restarted controller)."""
        old = [e async for e in self.sw.read(fy.P4TableEntry("uplink"))]
        old += [e async for e in self.sw.read(fy.P4TableEntry("downlink"))]
        if old:
            await self.sw.delete(old)

    async def sync(self):
        """Makes the data plane hold the file's sessions."""
        async with self.lock:
            try:
                want = read_sessions(self.path)
            except (OSError, ValueError) as e:
                say(f"sessions file not loaded, sessions kept: {e}")
                return
            added = modified = removed = 0
            for sid in sorted(set(self.installed) - set(want)):
                old = self.installed.pop(sid)
                await self.sw.delete([uplink_entry(old), downlink_entry(old)])
                say(f"session {sid} removed ({old.describe()})")
                removed += 1
            # Changed keys first (their old entries go), so that a TEID or UE address moved
            # from one session to another is free when the other is written.
            changed = [sid for sid in sorted(want) if sid in self.installed
                       and self.installed[sid] != want[sid]]
            for sid in changed:
                old, new = self.installed[sid], want[sid]
                if old.teid_up != new.teid_up:
                    await self.sw.delete([uplink_entry(old)])
                if old.ue != new.ue:
                    await self.sw.delete([downlink_entry(old)])
            for sid in changed:
                old, new = self.installed[sid], want[sid]
                up, down = uplink_entry(new), downlink_entry(new)
                await (self.sw.insert if old.teid_up != new.teid_up else self.sw.modify)([up])
                await (self.sw.insert if old.ue != new.ue else self.sw.modify)([down])
                self.installed[sid] = new
                say(f"session {sid} modified ({new.describe()})")
                modified += 1
            for sid in sorted(set(want) - set(self.installed)):
                s = want[sid]
                await self.sw.insert([uplink_entry(s), downlink_entry(s)])
                self.installed[sid] = s
                say(f"session {sid} installed ({s.describe()})")
                added += 1
            say(f"sessions: {added} installed, {modified} modified, {removed} removed, "
                f"{len(self.installed)} active")

    async def report(self):
        """Prints every session's counters and the drop counters."""
        async with self.lock:
            for sid, s in sorted(self.installed.items()):
                counts = []
                for name in ("uplink_usage", "downlink_usage"):
                    [c] = [e async for e in self.sw.read(fy.P4CounterEntry(name, index=sid))]
                    counts.append(f"{c.packet_count} packets {c.byte_count} bytes")
                say(f"usage session {sid} ({s.ue}): uplink {counts[0]}, downlink {counts[1]}")
            drops = [e async for e in self.sw.read(fy.P4CounterEntry("drops"))]
            parts = [f"{DROP_REASONS[d.index]} {d.packet_count}" for d in
                     sorted(drops, key=lambda d: d.index) if d.index < len(DROP_REASONS)]
            say("drops: " + ", ".join(parts))


def echo_response(frame):
    """The GTP-U echo response to the echo request `frame` (Ethernet), or None."""
    from scapy.contrib.gtp import GTP_U_Header, GTPEchoResponse, IE_Recovery
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    pkt = Ether(frame)
    if not pkt.haslayer(GTP_U_Header) or pkt[GTP_U_Header].gtp_type != 1:
        return None
    req = pkt[GTP_U_Header]
    # TS 29.281 7.2.2: the sequence number of the request, TEID 0, and a Recovery IE whose
    # restart counter is 0; sent back to the request's source address and port.
    return bytes(Ether(src=pkt.dst, dst=pkt.src)
                 / IP(src=pkt[IP].dst, dst=pkt[IP].src)
                 / UDP(sport=2152, dport=pkt[UDP].sport)
                 / GTP_U_Header(gtp_type=2, teid=0, S=1, seq=req.seq)
                 / GTPEchoResponse(IE_list=[IE_Recovery(restart_counter=0)])), pkt[IP].src, req.seq


async def on_ready(sw, path):
    sessions = Sessions(sw, path)
    await sessions.clear()
    await sessions.sync()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(sessions.sync()))
    loop.add_signal_handler(signal.SIGUSR1, lambda: asyncio.ensure_future(sessions.report()))
    say(f"ready: device {sw.device_id}, {len(sessions.installed)} sessions from {path}")
    async for p in sw.read_packets():
        if p["reason"] != TO_CPU_GTPU_SIGNALLING:
            say(f"packet-in from port {p['ingress_port']} (reason {p['reason']}) ignored")
            continue
        answer = echo_response(p.payload)
        if answer is None:
            say(f"GTP-U signalling from port {p['ingress_port']} ignored: "
                f"{len(p.payload)} bytes")
            continue
        frame, peer, seq = answer
        await sw.write([fy.P4PacketOut(frame, egress_port=p["ingress_port"], _pad=0)])
        say(f"echo request from {peer} (sequence {seq}): answered")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grpc", default="127.0.0.1:9559",
                    help="koi run's P4Runtime address (default: %(default)s)")
    ap.add_argument("--device-id", type=int, default=1, help="its device id (default: 1)")
    ap.add_argument("--sessions", default=str(HERE / "sessions.txt"),
                    help="the sessions file (default: examples/upf/sessions.txt)")
    ap.add_argument("--program", default=str(HERE / "upf.p4"),
                    help="the P4 program koi runs, for its P4Info (default: examples/upf/upf.p4)")
    ap.add_argument("--koi", help="the koi binary (default: koi on the PATH, or target/)")
    ap.add_argument("--verbose", action="store_true", help="finsy's log too")
    args = ap.parse_args()
    # Stopped with SIGTERM (by a supervisor, a test) as with Ctrl-C: its temporary files go.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR)
    try:
        read_sessions(args.sessions)
    except (OSError, ValueError) as e:
        sys.exit(f"controller: {e}")

    with tempfile.TemporaryDirectory(prefix="koi-upf-") as tmp:
        p4info = koi_compile(find_koi(args.koi), args.program, tmp)[0]

        async def ready(sw):
            await on_ready(sw, args.sessions)

        # No p4blob: the controller uses the pipeline koi runs and never replaces it.
        opts = fy.SwitchOptions(p4info=p4info, device_id=args.device_id, ready_handler=ready)
        say(f"connecting to {args.grpc} (device {args.device_id})")
        try:
            fy.run(fy.Controller([fy.Switch("upf", args.grpc, opts)]).run())
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
