#!/usr/bin/env python3
"""The MAC-learning controller of koi's VXLAN VTEP example (examples/vxlan/vxlan.p4), written
with finsy (an asyncio P4Runtime framework).

It attaches to the program `koi run` is running (it reads the P4Info from the switch and
loads nothing, so the static configuration `koi run --entries examples/vxlan/vxlan.entries`
installed stays), turns on the `learn_t` digest, and then:

- a digest (bridge domain, MAC, port, VTEP) for a source the switch does not know, or knows
  elsewhere: the MAC goes into `smac` (action `learnt`, with an idle timeout) and into `dmac`
  (`to_port` for a host on an access port, `to_vtep` for one behind a remote VTEP); a MAC
  already known elsewhere moves (both entries modified);
- an idle-timeout notification for an `smac` entry (the host fell silent): the MAC leaves
  `smac` and `dmac`, so that frames to it are flooded again and it is learnt afresh when it
  speaks.

Each event is one line on the output (`learnt ...`, `moved ...`, `aged out ...`).
See examples/vxlan/README.md for how to run it.
"""

import argparse
import asyncio
import ipaddress
import logging
import os
import sys
from pathlib import Path

import finsy as fy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from koi_controller import mac_str, say  # noqa: E402


def where_str(port, vtep):
    if vtep:
        return f"behind VTEP {ipaddress.IPv4Address(int(vtep))}"
    return f"on port {port}"


class Learner:
    """What the controller knows: (bridge domain, MAC) -> (port, VTEP)."""

    def __init__(self, sw, idle_timeout_ns):
        self.sw = sw
        self.idle_timeout_ns = idle_timeout_ns
        self.hosts = {}
        self.lock = asyncio.Lock()

    def entries(self, bd, mac, port, vtep):
        smac = fy.P4TableEntry("smac", match=fy.Match(bd=bd, mac=mac),
                               action=fy.Action("learnt", port=port, vtep=vtep),
                               idle_timeout_ns=self.idle_timeout_ns)
        if vtep:
            forward = fy.Action("to_vtep", vtep=vtep)
        else:
            forward = fy.Action("to_port", port=port)
        dmac = fy.P4TableEntry("dmac", match=fy.Match(bd=bd, mac=mac), action=forward)
        return smac, dmac

    async def learn(self, bd, mac, port, vtep):
        async with self.lock:
            old = self.hosts.get((bd, mac))
            if old == (port, vtep):
                return
            smac, dmac = self.entries(bd, mac, port, vtep)
            if old is None:
                await self.sw.insert([smac, dmac])
                say(f"learnt {mac_str(mac)} in bd {bd} {where_str(port, vtep)}")
            else:
                await self.sw.modify([smac, dmac])
                say(f"moved {mac_str(mac)} in bd {bd} from {where_str(*old)} to "
                    f"{where_str(port, vtep)}")
            self.hosts[(bd, mac)] = (port, vtep)

    async def forget(self, bd, mac):
        async with self.lock:
            old = self.hosts.pop((bd, mac), None)
            smac, dmac = self.entries(bd, mac, *(old or (0, 0)))
            # strict=False: an entry already gone is no error.
            await self.sw.delete([smac, dmac], strict=False)
            was = f" (was {where_str(*old)})" if old else ""
            say(f"aged out {mac_str(mac)} in bd {bd}{was}")


async def on_ready(sw, idle_timeout_ns):
    learner = Learner(sw, idle_timeout_ns)
    # What an earlier controller learnt is relearnt: start from empty learning tables, and
    # leave the operator's configuration (every other table) as it is.
    await sw.delete_many([fy.P4TableEntry("smac"), fy.P4TableEntry("dmac")])
    await sw.insert([
        fy.P4DigestEntry("learn_t", max_list_size=64, max_timeout_ns=1_000_000,
                         ack_timeout_ns=1_000_000_000),
    ])
    say(f"ready: device {sw.device_id}, idle timeout {idle_timeout_ns / 1e9:g} s")

    async def digests():
        async for dl in sw.read_digests("learn_t"):
            for d in dl.data:
                await learner.learn(int(d["bd"]), int(d["mac"]), int(d["port"]),
                                    int(d["vtep"]))
            await sw.write([fy.P4DigestListAck(dl.digest_id, dl.list_id)])

    async def idle():
        async for note in sw.read_idle_timeouts():
            for entry in note.table_entry:
                if entry.table_id.endswith("smac"):
                    await learner.forget(int(entry.match["bd"]), int(entry.match["mac"]))

    await asyncio.gather(digests(), idle())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grpc", default="127.0.0.1:9559",
                    help="koi run's P4Runtime address (default: %(default)s)")
    ap.add_argument("--device-id", type=int, default=1, help="its device id (default: 1)")
    ap.add_argument("--idle-timeout", type=float, default=60.0,
                    help="seconds of silence before a MAC is forgotten (default: 60)")
    ap.add_argument("--verbose", action="store_true", help="finsy's log too")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR)

    async def ready(sw):
        await on_ready(sw, int(args.idle_timeout * 1e9))

    # No p4info/p4blob: finsy reads the running program's P4Info and loads nothing.
    opts = fy.SwitchOptions(device_id=args.device_id, ready_handler=ready)
    say(f"connecting to {args.grpc} (device {args.device_id})")
    try:
        fy.run(fy.Controller([fy.Switch("koi", args.grpc, opts)]).run())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
