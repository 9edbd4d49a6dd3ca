// A policer: a two-rate three-colour byte meter per IPv4 source (its low byte). Red packets
// are dropped, yellow ones get DSCP 8 (low priority), green and yellow ones are routed out
// of port 2 with the TTL decremented and the IPv4 checksum recomputed. A benchmark program
// for `koi bench` with the L2L3 traffic (`--flows N`) and bench/policer.entries: the colour
// is decided per packet, so each megaflow has a compiled program per colour (guards).
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<6> dscp; bit<2> ecn; bit<16> len; bit<16> id;
    bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum;
    bit<32> src; bit<32> dst;
}
struct headers { eth_t eth; ipv4_t ipv4; }
struct meta_t { bit<8> color; }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x0800: ipv4; default: accept; }
    }
    state ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    meter(256, MeterType.bytes) police;
    apply {
        if (!hdr.ipv4.isValid()) {
            mark_to_drop(sm);
            return;
        }
        police.execute_meter((bit<32>) hdr.ipv4.src[7:0], m.color);
        if (m.color == V1MODEL_METER_COLOR_RED) {
            mark_to_drop(sm);
            return;
        }
        if (m.color == V1MODEL_METER_COLOR_YELLOW) {
            hdr.ipv4.dscp = 8;
        }
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        sm.egress_spec = 2;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.len,
              hdr.ipv4.id, hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.ipv4); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
