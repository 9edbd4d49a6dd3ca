// Pins down v1model multicast replication with replication ids.
// Source: shared/reference/bmv2/simple_switch.md (after-ingress pseudocode: "Make 0 or more
// copies ... based upon the list of (egress_port, egress_rid) values configured by the
// control plane for the mcast_grp value ... instance_type ... PKT_INSTANCE_TYPE_REPLICATION",
// `egress_rid` in "Intrinsic metadata"), STF.md §4 (mc_* commands, implicit node handles
// 0, 1, 2, ... in creation order) and §6 3-4 (mark_to_drop also sets mcast_grp to 0;
// multicast wins over egress_spec). Replication order: BMv2's McSimplePre replicates a
// group's nodes in the order they were associated and each node's ports in ascending order
// (its port map is a bitmap); each output port is a FIFO.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  grp;   // ingress: mcast_grp = grp
    bit<8>  drop;  // ingress: mark_to_drop after setting mcast_grp when 1
    bit<16> rid;   // egress: egress_rid
    bit<8>  eport; // egress: egress_port
    bit<8>  itype; // egress: instance_type
}

struct headers_t {
    h_t h;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.mcast_grp = (bit<16>)hdr.h.grp;
        sm.egress_spec = 4;
        if (hdr.h.drop == 1) {
            mark_to_drop(sm);
        }
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.rid = sm.egress_rid;
        hdr.h.eport = (bit<8>)sm.egress_port;
        hdr.h.itype = (bit<8>)sm.instance_type;
    }
}

control CC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
