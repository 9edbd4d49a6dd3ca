// koi example: a rate limiter for v1model: per-source and per-class two-rate three-colour
// meters (RFC 2698), policing (red dropped) and marking (yellow remarked to a DSCP).
//
// A bump in the wire between ports (table `wire`): frames go through unchanged but for the
// DSCP of yellow IPv4 packets (and the IPv4 checksum). Each IPv4 packet is metered by up to
// three meters, each configured by the control plane (`meter_set_rates` in simple_switch_CLI
// syntax, or P4Runtime MeterConfig): a byte meter of its source (table `source`: a source
// prefix names a meter of `source_bytes`), and a byte and a packet meter of its class (table
// `class`: DSCP and protocol name a meter of `class_bytes` and of `class_packets`). An
// unconfigured meter, or a packet no entry names a meter for, is green. The packet's colour
// is the worst of its meters': red is dropped, yellow gets the DSCP its class entry gives
// (or the `source` entry's when the class table misses). Counter `colors` counts packets and
// bytes per colour (0 green, 1 yellow, 2 red). See README.md.

#include <core.p4>
#include <v1model.p4>

typedef bit<9> port_t;

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    ethernet_t eth;
    ipv4_t     ipv4;
}

struct meta_t {
    bit<32> source_meter;
    bit<32> class_meter;
    bool    by_source;
    bool    by_class;
    bit<6>  yellow_dscp;
    bit<2>  color_source;
    bit<2>  color_class_bytes;
    bit<2>  color_class_packets;
}

parser RlParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control RlVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control RlIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    meter(1024, MeterType.bytes) source_bytes;
    meter(64, MeterType.bytes) class_bytes;
    meter(64, MeterType.packets) class_packets;
    counter(3, CounterType.packets_and_bytes) colors;

    action drop() {
        mark_to_drop(std);
    }

    // Where a port's frames go.
    action send(port_t port) {
        std.egress_spec = port;
    }
    table wire {
        key = { std.ingress_port : exact; }
        actions = { send; drop; }
        const default_action = drop();
        size = 64;
    }

    // Per-source metering: the meter of source_bytes for a source prefix, and the DSCP its
    // yellow packets get when their class names none.
    action meter_source(bit<32> index, bit<6> yellow_dscp) {
        meta.by_source = true;
        meta.source_meter = index;
        meta.yellow_dscp = yellow_dscp;
    }
    table source {
        key = { hdr.ipv4.src : lpm; }
        actions = { meter_source; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    // Per-class metering: the meters of class_bytes and class_packets for a DSCP and an IP
    // protocol (ternary), and the DSCP of the class's yellow packets.
    action meter_class(bit<32> index, bit<6> yellow_dscp) {
        meta.by_class = true;
        meta.class_meter = index;
        meta.yellow_dscp = yellow_dscp;
    }
    table class {
        key = {
            hdr.ipv4.dscp     : ternary;
            hdr.ipv4.protocol : ternary;
        }
        actions = { meter_class; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        if (!wire.apply().hit || !hdr.ipv4.isValid()) {
            return;
        }
        meta.color_source = V1MODEL_METER_COLOR_GREEN;
        meta.color_class_bytes = V1MODEL_METER_COLOR_GREEN;
        meta.color_class_packets = V1MODEL_METER_COLOR_GREEN;
        source.apply();
        class.apply();
        if (meta.by_source) {
            source_bytes.execute_meter(meta.source_meter, meta.color_source);
        }
        if (meta.by_class) {
            class_bytes.execute_meter(meta.class_meter, meta.color_class_bytes);
            class_packets.execute_meter(meta.class_meter, meta.color_class_packets);
        }
        if (meta.color_source == V1MODEL_METER_COLOR_RED
            || meta.color_class_bytes == V1MODEL_METER_COLOR_RED
            || meta.color_class_packets == V1MODEL_METER_COLOR_RED) {
            colors.count(2);
            drop();
        } else if (meta.color_source == V1MODEL_METER_COLOR_YELLOW
                   || meta.color_class_bytes == V1MODEL_METER_COLOR_YELLOW
                   || meta.color_class_packets == V1MODEL_METER_COLOR_YELLOW) {
            colors.count(1);
            hdr.ipv4.dscp = meta.yellow_dscp;
        } else {
            colors.count(0);
        }
    }
}

control RlEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t std) {
    apply { }
}

control RlComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RlDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(RlParser(), RlVerifyChecksum(), RlIngress(), RlEgress(), RlComputeChecksum(),
         RlDeparser()) main;
