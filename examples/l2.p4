// koi example: L2 switching (the "L2" program of the PISCES evaluation) for v1model.
//
// One table on the destination MAC picks the output port; unknown destinations are dropped.
// Entries for the OVS baseline's hosts are in l2.entries.

#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t eth;
}

struct meta_t { }

parser L2Parser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control L2VerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control L2Ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action drop() {
        mark_to_drop(std);
    }
    action forward(bit<9> port) {
        std.egress_spec = port;
    }
    table dmac {
        key = { hdr.eth.dst : exact; }
        actions = { forward; drop; }
        const default_action = drop();
        size = 4096;
    }
    apply {
        dmac.apply();
    }
}

control L2Egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control L2ComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control L2Deparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
    }
}

V1Switch(L2Parser(), L2VerifyChecksum(), L2Ingress(), L2Egress(), L2ComputeChecksum(),
         L2Deparser()) main;
