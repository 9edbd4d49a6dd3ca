"""A controller written the way p4lang's tutorials write theirs, for two koi switches
(crates/koi/tests/p4rt_tutorial.rs): host h1 (10.0.1.1) on s1's port 1, s1's port 2 wired to
s2's port 2, host h2 (10.0.2.2) on s2's port 1. Each switch is its own `koi run` with its own
P4Runtime address and device id.

For each switch: MasterArbitrationUpdate with election id (0, 1), SetForwardingPipelineConfig
(basic.p4's P4Info, koi's device config wrapped in p4.tmp.P4DeviceConfig), the routes written
with WriteTableEntry, then read back with ReadTableEntries and printed. With --wait-packets N
it then reads the `rx_packets` counters (ReadCounters) until each switch's port 1 has seen N
packets (the test pings meanwhile) and prints them.

Run: python tutorial_controller.py --p4info FILE --device-config FILE
       --s1 ADDR --s2 ADDR [--wait-packets N]
"""

import argparse
import os
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from switch_connection import P4InfoHelper, SwitchConnection  # noqa: E402

TABLE = "BasicIngress.ipv4_lpm"
FORWARD = "BasicIngress.ipv4_forward"
COUNTER = "BasicIngress.rx_packets"

# (switch, device id, routes: (prefix, length, next-hop MAC, port))
TOPOLOGY = {
    "s1": (1, [("10.0.1.1", 32, "02:00:00:00:01:01", 1),
               ("10.0.2.0", 24, "02:00:00:00:02:fe", 2)]),
    "s2": (2, [("10.0.2.2", 32, "02:00:00:00:02:02", 1),
               ("10.0.1.0", 24, "02:00:00:00:01:fe", 2)]),
}


def write_routes(helper, sw, routes):
    for prefix, length, mac, port in routes:
        entry = helper.build_table_entry(
            table_name=TABLE,
            match_fields={"hdr.ipv4.dst": (prefix, length)},
            action_name=FORWARD,
            action_params={"dst_mac": mac, "port": port})
        sw.WriteTableEntry(entry)
        print(f"{sw.name}: installed {prefix}/{length} -> {mac} port {port}", flush=True)


def print_table_rules(helper, sw):
    """Reads every entry of the switch back and prints it by names."""
    n = 0
    for response in sw.ReadTableEntries():
        for entity in response.entities:
            e = entity.table_entry
            table = helper.get_name("tables", e.table_id)
            match = []
            for m in e.match:
                name = helper._find("tables", table).match_fields[m.field_id - 1].name
                match.append(f"{name}={'.'.join(map(str, m.lpm.value))}/{m.lpm.prefix_len}")
            a = e.action.action
            action = helper.get_name("actions", a.action_id)
            params = ", ".join(
                f"{helper._find('actions', action).params[p.param_id - 1].name}={p.value.hex()}"
                for p in a.params)
            print(f"{sw.name}: entry {table} {' '.join(match)} -> {action}({params})",
                  flush=True)
            n += 1
    return n


def read_counter(helper, sw, index):
    for response in sw.ReadCounters(helper.get_counters_id(COUNTER), index):
        for entity in response.entities:
            d = entity.counter_entry.data
            return d.packet_count, d.byte_count
    return 0, 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--p4info", required=True)
    ap.add_argument("--device-config", required=True)
    ap.add_argument("--s1", required=True)
    ap.add_argument("--s2", required=True)
    ap.add_argument("--wait-packets", type=int, default=0)
    args = ap.parse_args()

    helper = P4InfoHelper(args.p4info)
    with open(args.device_config, "rb") as f:
        device_data = f.read()
    switches = []
    try:
        for name, addr in (("s1", args.s1), ("s2", args.s2)):
            device_id, routes = TOPOLOGY[name]
            sw = SwitchConnection(name, addr, device_id)
            switches.append(sw)
            arb = sw.MasterArbitrationUpdate()
            if arb.status.code != 0:
                sys.exit(f"{name}: not primary: {arb.status}")
            print(f"{name}: primary controller of device {device_id} at {addr}", flush=True)
            sw.SetForwardingPipelineConfig(helper.p4info, device_data)
            print(f"{name}: pipeline installed", flush=True)
            write_routes(helper, sw, routes)
        for sw in switches:
            n = print_table_rules(helper, sw)
            if n != len(TOPOLOGY[sw.name][1]):
                sys.exit(f"{sw.name}: read {n} entries back")
        print("rules installed", flush=True)

        if args.wait_packets:
            deadline = time.monotonic() + 30
            while True:
                counts = {sw.name: read_counter(helper, sw, 1) for sw in switches}
                if all(c[0] >= args.wait_packets for c in counts.values()):
                    break
                if time.monotonic() > deadline:
                    sys.exit(f"counters did not reach {args.wait_packets}: {counts}")
                time.sleep(0.2)
            for name, (packets, octets) in counts.items():
                print(f"{name}: {COUNTER}[1] = {packets} packets, {octets} bytes", flush=True)
    except grpc.RpcError as e:
        sys.exit(f"P4Runtime error: {e.code().name}: {e.details()}")
    finally:
        for sw in switches:
            sw.shutdown()


if __name__ == "__main__":
    main()
