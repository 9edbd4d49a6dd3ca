// IPv4 forwarding for koi's tutorial-style controller test (crates/koi/tests/p4rt_tutorial.rs,
// tutorial_controller.py): the shape of p4lang's tutorials' "basic" exercise, written for koi.
//
// `ipv4_lpm` (LPM on the IPv4 destination): `ipv4_forward(dst_mac, port)` sends the packet to
// `port` with the destination MAC `dst_mac`, the old destination as source, the TTL one less
// (the checksum recomputed); the default drops. `rx_packets` counts what each port received.

#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    ethernet_t eth;
    ipv4_t ipv4;
}

struct meta_t { }

parser BasicParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
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

control BasicVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control BasicIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    counter(512, CounterType.packets_and_bytes) rx_packets;

    action drop() {
        mark_to_drop(std);
    }
    action ipv4_forward(bit<48> dst_mac, bit<9> port) {
        std.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dst : lpm; }
        actions = { ipv4_forward; drop; NoAction; }
        size = 1024;
        default_action = drop();
    }

    apply {
        rx_packets.count((bit<32>) std.ingress_port);
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        } else {
            drop();
        }
    }
}

control BasicEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control BasicComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control BasicDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(BasicParser(), BasicVerifyChecksum(), BasicIngress(), BasicEgress(),
         BasicComputeChecksum(), BasicDeparser()) main;
