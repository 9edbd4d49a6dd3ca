#!/usr/bin/env python3
"""The controller of koi's learning-switch example (examples/l2_learning.p4), written with
finsy (an asyncio P4Runtime framework).

It connects to `koi run`'s P4Runtime server, loads the program (its P4Info and koi's device
config, made with `koi compile`), creates multicast group 1 with the switch's ports (the
flood group) and turns on the `learn_t` digest. Then:

- a digest (source MAC, ingress port) for an unknown source: the MAC goes into `smac` (action
  `known`, with an idle timeout) and into `dmac` (`forward` to that port); a MAC seen on
  another port moves there;
- an idle-timeout notification for an `smac` entry (the host fell silent): the MAC leaves
  `smac` and `dmac`, so that it is flooded and learnt afresh when it comes back;
- packets sent to the CPU port are counted and logged.

Each event is printed on a line of its own (`learnt ...`, `moved ...`, `aged out ...`).
See examples/l2_learning/README.md for how to run it.
"""

import argparse
import asyncio
import logging
import os
import signal
import sys
import tempfile
from pathlib import Path

import finsy as fy

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from koi_controller import find_koi, koi_compile, mac_str, say  # noqa: E402
FLOOD_GROUP = 1


class Learner:
    """What the controller knows: MAC (int) -> port."""

    def __init__(self, sw, idle_timeout_ns):
        self.sw = sw
        self.idle_timeout_ns = idle_timeout_ns
        self.hosts = {}
        self.lock = asyncio.Lock()

    def entries(self, mac, port):
        smac = fy.P4TableEntry("smac", match=fy.Match(src=mac), action=fy.Action("known"),
                               idle_timeout_ns=self.idle_timeout_ns)
        dmac = fy.P4TableEntry("dmac", match=fy.Match(dst=mac),
                               action=fy.Action("forward", port=port))
        return smac, dmac

    async def learn(self, mac, port):
        async with self.lock:
            old = self.hosts.get(mac)
            if old == port:
                return
            smac, dmac = self.entries(mac, port)
            if old is None:
                await self.sw.insert([smac, dmac])
                say(f"learnt {mac_str(mac)} on port {port}")
            else:
                await self.sw.modify([smac, dmac])
                say(f"moved {mac_str(mac)} from port {old} to port {port}")
            self.hosts[mac] = port

    async def forget(self, mac):
        async with self.lock:
            port = self.hosts.pop(mac, None)
            smac, dmac = self.entries(mac, port or 0)
            # strict=False: an entry already gone is no error.
            await self.sw.delete([smac, dmac], strict=False)
            say(f"aged out {mac_str(mac)} (was on port {port})")


async def on_ready(sw, ports, idle_timeout_ns):
    learner = Learner(sw, idle_timeout_ns)
    await sw.delete_all()
    await sw.insert([
        fy.P4MulticastGroupEntry(FLOOD_GROUP, replicas=ports),
        fy.P4DigestEntry("learn_t", max_list_size=64, max_timeout_ns=1_000_000,
                         ack_timeout_ns=1_000_000_000),
    ])
    say(f"ready: device {sw.device_id}, flood group {FLOOD_GROUP} = ports "
        f"{', '.join(map(str, ports))}, idle timeout {idle_timeout_ns / 1e9:g} s")

    async def digests():
        async for dl in sw.read_digests("learn_t"):
            for d in dl.data:
                await learner.learn(d["src"], d["port"])
            await sw.write([fy.P4DigestListAck(dl.digest_id, dl.list_id)])

    async def idle():
        async for note in sw.read_idle_timeouts():
            for entry in note.table_entry:
                if entry.table_id.endswith("smac"):
                    await learner.forget(entry.match["src"])

    async def packet_ins():
        async for p in sw.read_packets():
            say(f"packet-in from port {p['ingress_port']}: {len(p.payload)} bytes")

    await asyncio.gather(digests(), idle(), packet_ins())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grpc", default="127.0.0.1:9559",
                    help="koi run's P4Runtime address (default: %(default)s)")
    ap.add_argument("--device-id", type=int, default=1, help="its device id (default: 1)")
    ap.add_argument("--ports", required=True,
                    help="the switch's ports, the flood group's members: e.g. 1,2,3")
    ap.add_argument("--idle-timeout", type=float, default=10.0,
                    help="seconds of silence before a host is forgotten (default: 10)")
    ap.add_argument("--program", default=str(REPO / "examples/l2_learning.p4"),
                    help="the P4 program (default: examples/l2_learning.p4)")
    ap.add_argument("--koi", help="the koi binary (default: koi on the PATH, or target/)")
    ap.add_argument("--verbose", action="store_true", help="finsy's log too")
    args = ap.parse_args()
    # Stopped with SIGTERM (by a supervisor, a test) as with Ctrl-C: its temporary files go.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    ports = [int(p) for p in args.ports.split(",") if p]
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR)

    with tempfile.TemporaryDirectory(prefix="koi-l2-learning-") as tmp:
        p4info, device_config = koi_compile(find_koi(args.koi), args.program, tmp,
                                                ("p4info", "device-config"))

        async def ready(sw):
            await on_ready(sw, ports, int(args.idle_timeout * 1e9))

        opts = fy.SwitchOptions(p4info=p4info, p4blob=device_config, device_id=args.device_id,
                                ready_handler=ready, p4force=True)
        say(f"connecting to {args.grpc} (device {args.device_id})")
        try:
            fy.run(fy.Controller([fy.Switch("koi", args.grpc, opts)]).run())
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
