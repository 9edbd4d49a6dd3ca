"""A P4Runtime switch connection in the style of p4lang's tutorial controllers, written for
koi's tests: the `p4runtime` package's generated stubs (p4.v1), P4Info read from its text
format, koi's device config wrapped in `p4.tmp.P4DeviceConfig`, election id (0, 1).

- `P4InfoHelper`: ids of tables, match fields, actions, parameters and counters by name, and
  table entries built from names and Python values.
- `SwitchConnection`: one device; `MasterArbitrationUpdate` (on the stream, which stays open
  while the connection lives), `SetForwardingPipelineConfig` (VERIFY_AND_COMMIT),
  `WriteTableEntry`, `ReadTableEntries`, `ReadCounters`.
"""

import queue
import threading

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.tmp import p4config_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


def encode(value, bitwidth):
    """A Python value as a P4Runtime bytestring of `bitwidth` bits: an int, a MAC
    ("aa:bb:..."), an IPv4 address ("10.0.0.1") or bytes."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str) and value.count(":") == 5:
        return bytes(int(b, 16) for b in value.split(":"))
    if isinstance(value, str) and value.count(".") == 3:
        return bytes(int(b) for b in value.split("."))
    return int(value).to_bytes((bitwidth + 7) // 8, "big")


class P4InfoHelper:
    def __init__(self, p4info_path):
        self.p4info = p4info_pb2.P4Info()
        with open(p4info_path) as f:
            text_format.Merge(f.read(), self.p4info)

    def _find(self, kind, name):
        for o in getattr(self.p4info, kind):
            if name in (o.preamble.name, o.preamble.alias):
                return o
        raise KeyError(f"no {kind} named {name!r} in the P4Info")

    def get_id(self, kind, name):
        return self._find(kind, name).preamble.id

    def get_name(self, kind, id_):
        for o in getattr(self.p4info, kind):
            if o.preamble.id == id_:
                return o.preamble.name
        raise KeyError(f"no {kind} with id {id_}")

    def get_tables_id(self, name):
        return self.get_id("tables", name)

    def get_actions_id(self, name):
        return self.get_id("actions", name)

    def get_counters_id(self, name):
        return self.get_id("counters", name)

    def get_match_field(self, table_name, field_name):
        for mf in self._find("tables", table_name).match_fields:
            if mf.name == field_name:
                return mf
        raise KeyError(f"table {table_name} has no match field {field_name}")

    def get_match_field_pb(self, table_name, field_name, value):
        mf = self.get_match_field(table_name, field_name)
        fm = p4runtime_pb2.FieldMatch(field_id=mf.id)
        kind = mf.match_type
        if kind == p4info_pb2.MatchField.EXACT:
            fm.exact.value = encode(value, mf.bitwidth)
        elif kind == p4info_pb2.MatchField.LPM:
            fm.lpm.value = encode(value[0], mf.bitwidth)
            fm.lpm.prefix_len = value[1]
        elif kind == p4info_pb2.MatchField.TERNARY:
            fm.ternary.value = encode(value[0], mf.bitwidth)
            fm.ternary.mask = encode(value[1], mf.bitwidth)
        elif kind == p4info_pb2.MatchField.RANGE:
            fm.range.low = encode(value[0], mf.bitwidth)
            fm.range.high = encode(value[1], mf.bitwidth)
        else:
            raise ValueError(f"match kind {kind} of {field_name}")
        return fm

    def get_action_param(self, action_name, param_name):
        for p in self._find("actions", action_name).params:
            if p.name == param_name:
                return p
        raise KeyError(f"action {action_name} has no parameter {param_name}")

    def build_table_entry(self, table_name, match_fields=None, action_name=None,
                          action_params=None, priority=0, default_action=False):
        entry = p4runtime_pb2.TableEntry(table_id=self.get_tables_id(table_name))
        if priority:
            entry.priority = priority
        if default_action:
            entry.is_default_action = True
        for name, value in (match_fields or {}).items():
            entry.match.append(self.get_match_field_pb(table_name, name, value))
        if action_name:
            action = entry.action.action
            action.action_id = self.get_actions_id(action_name)
            for name, value in (action_params or {}).items():
                p = self.get_action_param(action_name, name)
                action.params.add(param_id=p.id, value=encode(value, p.bitwidth))
        return entry


class SwitchConnection:
    """One P4Runtime device: `name` at `address`, device id `device_id`."""

    def __init__(self, name, address, device_id, election_id=(0, 1)):
        self.name, self.address, self.device_id = name, address, device_id
        self.election_id = election_id
        self.channel = grpc.insecure_channel(address)
        self.client_stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.requests = queue.Queue()
        self.responses = queue.Queue()
        self.stream = self.client_stub.StreamChannel(iter(self.requests.get, None))
        threading.Thread(target=self._receive, daemon=True).start()

    def _receive(self):
        try:
            for r in self.stream:
                self.responses.put(r)
        except grpc.RpcError as e:
            self.responses.put(e)

    def _election_id(self, msg):
        msg.election_id.high, msg.election_id.low = self.election_id

    def MasterArbitrationUpdate(self, timeout=10):
        """Asks to be the primary controller; returns the switch's answer (an exception if
        the stream failed or none came)."""
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        self._election_id(req.arbitration)
        self.requests.put(req)
        while True:
            r = self.responses.get(timeout=timeout)
            if isinstance(r, Exception):
                raise r
            if r.HasField("arbitration"):
                return r.arbitration

    def SetForwardingPipelineConfig(self, p4info, device_data):
        config = p4config_pb2.P4DeviceConfig(device_data=device_data, reassign=True)
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        self._election_id(req)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = config.SerializeToString()
        self.client_stub.SetForwardingPipelineConfig(req)

    def WriteTableEntry(self, table_entry, update_type=p4runtime_pb2.Update.INSERT):
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        self._election_id(req)
        update = req.updates.add(type=update_type)
        update.entity.table_entry.CopyFrom(table_entry)
        self.client_stub.Write(req)

    def ReadTableEntries(self, table_id=0):
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.add().table_entry.table_id = table_id
        for response in self.client_stub.Read(req):
            yield response

    def ReadCounters(self, counter_id=0, index=None):
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        entry = req.entities.add().counter_entry
        entry.counter_id = counter_id
        if index is not None:
            entry.index.index = index
        for response in self.client_stub.Read(req):
            yield response

    def shutdown(self):
        self.requests.put(None)
        self.channel.close()
