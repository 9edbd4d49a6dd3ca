"""p4.tmp.p4config_pb2: the `P4DeviceConfig` message of package `p4.tmp`, the wrapper p4lang's
tutorial controllers put around a target's device data in SetForwardingPipelineConfig.

The `p4runtime` package on PyPI does not ship this module. koi's copy builds the message class
from a descriptor made here (the same names and field numbers as
crates/koi-proto/proto/p4/tmp/p4config.proto), with no generated code and no protoc, so it
works with every protobuf runtime the test environments use (3.20 and 6.x).
scripts/py-venv.sh installs it as p4/tmp/p4config_pb2.py in the test venv.
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto


def _file():
    f = descriptor_pb2.FileDescriptorProto()
    f.name = "p4/tmp/p4config.proto"
    f.package = "p4.tmp"
    f.syntax = "proto3"
    m = f.message_type.add()
    m.name = "P4DeviceConfig"

    extras = m.nested_type.add()
    extras.name = "Extras"
    entry = extras.nested_type.add()
    entry.name = "KvEntry"
    entry.options.map_entry = True
    for number, name in ((1, "key"), (2, "value")):
        fd = entry.field.add()
        fd.name, fd.number = name, number
        fd.type, fd.label = _F.TYPE_STRING, _F.LABEL_OPTIONAL
    kv = extras.field.add()
    kv.name, kv.number = "kv", 1
    kv.type, kv.label = _F.TYPE_MESSAGE, _F.LABEL_REPEATED
    kv.type_name = ".p4.tmp.P4DeviceConfig.Extras.KvEntry"

    for number, name, kind, type_name in (
        (1, "reassign", _F.TYPE_BOOL, None),
        (2, "extras", _F.TYPE_MESSAGE, ".p4.tmp.P4DeviceConfig.Extras"),
        (3, "device_data", _F.TYPE_BYTES, None),
    ):
        fd = m.field.add()
        fd.name, fd.number = name, number
        fd.type, fd.label = kind, _F.LABEL_OPTIONAL
        if type_name:
            fd.type_name = type_name
    return f


def _pool_file():
    pool = descriptor_pool.Default()
    try:
        return pool.FindFileByName("p4/tmp/p4config.proto")
    except KeyError:
        return pool.Add(_file()) or pool.FindFileByName("p4/tmp/p4config.proto")


DESCRIPTOR = _pool_file()
_desc = DESCRIPTOR.message_types_by_name["P4DeviceConfig"]

if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.21
    P4DeviceConfig = message_factory.GetMessageClass(_desc)
else:  # protobuf 3.x
    P4DeviceConfig = message_factory.MessageFactory().GetPrototype(_desc)
