// koi example: the smallest useful switch. Every frame that arrives on a port is sent out of
// the port that the `fwd` table maps its ingress port to (l2_forward.entries: 1 <-> 2); frames
// from unmapped ports are dropped. The frame is not parsed beyond its Ethernet header and is
// sent unchanged, so any protocol (ARP, IPv4, IPv6, test ethertypes) crosses it.

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

parser FwdParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control FwdVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control FwdIngress(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    action drop() {
        mark_to_drop(std);
    }
    action set_port(bit<9> port) {
        std.egress_spec = port;
    }
    table fwd {
        key = { std.ingress_port : exact; }
        actions = { set_port; drop; }
        default_action = drop();
    }
    apply {
        fwd.apply();
    }
}

control FwdEgress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    apply { }
}

control FwdComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control FwdDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
    }
}

V1Switch(FwdParser(), FwdVerifyChecksum(), FwdIngress(), FwdEgress(),
         FwdComputeChecksum(), FwdDeparser()) main;
