// Multicast whose group comes from a table (so the megaflow fixes it and the cached datapath
// compiles the run into one action program with several outputs): table grp_t maps h.grp to
// mcast_grp; egress writes each copy's egress_rid, egress_port and instance_type into the
// header, so every copy's bytes differ. Groups and replication order as in multicast-rid.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  grp;   // ingress: the key of grp_t
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
    action set_grp(bit<16> g) {
        sm.mcast_grp = g;
    }
    table grp_t {
        key = { hdr.h.grp : exact; }
        actions = { set_grp; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 4;
        grp_t.apply();
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
