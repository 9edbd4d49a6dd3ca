#!/usr/bin/env python3
"""The controller of koi's DDoS mitigation example (examples/ddos/ddos.p4), written with finsy
(an asyncio P4Runtime framework).

It attaches to the program `koi run` is running (it reads the P4Info from the switch and
loads nothing, so the static configuration of `koi run --entries examples/ddos/ddos.entries`
stays), turns on the `alarm_t` digest, and then:

- an alarm (source address, reason, estimates) for a source over a threshold: the source goes
  into `blocklist` (action `block`) with an idle timeout, unless it is allowed (`--allow`)
  or already blocked;
- an idle-timeout notification for a `blocklist` entry (the source has sent nothing for that
  long): the entry is deleted, the source unblocked; it is blocked again if it comes back
  over a threshold.

Each event is one line on the output, with the time (`blocked ...`, `unblocked ...`,
`allowed ...`); with `--stats SECONDS` the blocked sources' drop counters too.
See examples/ddos/README.md for how to run it.
"""

import argparse
import asyncio
import ipaddress
import logging
import os
import time

import finsy as fy

REASONS = {1: "packets", 2: "half-open connections", 3: "packets and half-open connections"}


def say(*words):
    print(f"{time.time():.3f}", *words, flush=True)


def ip_str(value):
    return str(ipaddress.IPv4Address(int(value)))


class Mitigator:
    """What the controller blocked: source address (int) -> when."""

    def __init__(self, sw, idle_timeout_ns, allowed):
        self.sw = sw
        self.idle_timeout_ns = idle_timeout_ns
        self.allowed = allowed
        self.blocked = {}
        self.lock = asyncio.Lock()

    def entry(self, src):
        return fy.P4TableEntry("blocklist", match=fy.Match(src=src), action=fy.Action("block"),
                               idle_timeout_ns=self.idle_timeout_ns)

    async def alarm(self, src, reason, packets, half_open):
        async with self.lock:
            why = (f"{REASONS.get(reason, reason)}: {packets} packets, {half_open} half-open "
                   f"connections this interval")
            if any(ipaddress.IPv4Address(src) in net for net in self.allowed):
                say(f"allowed {ip_str(src)} ({why})")
                return
            if src in self.blocked:
                return
            await self.sw.insert([self.entry(src)])
            self.blocked[src] = time.time()
            say(f"blocked {ip_str(src)} ({why})")

    async def expire(self, src):
        async with self.lock:
            since = self.blocked.pop(src, None)
            # strict=False: an entry already gone is no error.
            await self.sw.delete([self.entry(src)], strict=False)
            held = f" after {time.time() - since:.1f} s" if since else ""
            say(f"unblocked {ip_str(src)}{held} (quiet for "
                f"{self.idle_timeout_ns / 1e9:g} s)")

    async def stats(self, every):
        while True:
            await asyncio.sleep(every)
            async for e in self.sw.read(fy.P4TableEntry("blocklist",
                                                          counter_data=fy.P4CounterData())):
                c = e.counter_data
                say(f"blocking {ip_str(e.match['src'])}: {c.packet_count if c else 0} packets "
                    f"dropped")


async def on_ready(sw, idle_timeout_ns, allowed, stats_every):
    mitigator = Mitigator(sw, idle_timeout_ns, allowed)
    # Blocks an earlier controller made expire with it: start from an empty blocklist.
    await sw.delete_many([fy.P4TableEntry("blocklist")])
    await sw.insert([
        fy.P4DigestEntry("alarm_t", max_list_size=64, max_timeout_ns=1_000_000,
                         ack_timeout_ns=1_000_000_000),
    ])
    say(f"ready: device {sw.device_id}, block idle timeout {idle_timeout_ns / 1e9:g} s, "
        f"allowed {', '.join(map(str, allowed)) or 'none'}")

    async def digests():
        async for dl in sw.read_digests("alarm_t"):
            for d in dl.data:
                await mitigator.alarm(int(d["src"]), int(d["reason"]), int(d["packets"]),
                                      int(d["half_open"]))
            await sw.write([fy.P4DigestListAck(dl.digest_id, dl.list_id)])

    async def idle():
        async for note in sw.read_idle_timeouts():
            for entry in note.table_entry:
                if entry.table_id.endswith("blocklist"):
                    await mitigator.expire(int(entry.match["src"]))

    tasks = [digests(), idle()]
    if stats_every:
        tasks.append(mitigator.stats(stats_every))
    await asyncio.gather(*tasks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grpc", default="127.0.0.1:9559",
                    help="koi run's P4Runtime address (default: %(default)s)")
    ap.add_argument("--device-id", type=int, default=1, help="its device id (default: 1)")
    ap.add_argument("--idle-timeout", type=float, default=30.0,
                    help="seconds a blocked source must be quiet to be unblocked "
                         "(default: 30)")
    ap.add_argument("--allow", default="",
                    help="sources never blocked, comma-separated prefixes (e.g. 10.0.0.0/24)")
    ap.add_argument("--stats", type=float, default=0,
                    help="every SECONDS, print the drop counters of the blocked sources")
    ap.add_argument("--verbose", action="store_true", help="finsy's log too")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR)
    allowed = [ipaddress.IPv4Network(p, strict=False) for p in args.allow.split(",") if p]

    async def ready(sw):
        await on_ready(sw, int(args.idle_timeout * 1e9), allowed, args.stats)

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
