// Pins down v1model clones (I2E and E2E) as BMv2 simple_switch performs them.
// Source: shared/reference/bmv2/simple_switch.md, "Pseudocode for what happens at the end of
// ingress and egress processing" and the `instance_type` entry of "Standard metadata":
// - an I2E clone carries the packet as it was when ingress began (ingress changes to headers
//   are not in it), is parsed again, gets instance_type 1 (PKT_INSTANCE_TYPE_INGRESS_CLONE)
//   and goes to the port of the session (`mirroring_add`);
// - an E2E clone carries the headers as they are at the end of egress (not re-parsed), with
//   metadata reset except the field list given to clone_preserving_field_list, instance_type
//   2 (PKT_INSTANCE_TYPE_EGRESS_CLONE); a session made with `mirroring_add_mc` sends one copy
//   per replica of the multicast group, with egress_rid set by the replication engine;
// - a clone to a session that is not configured makes nothing (STF.md §6 4.1: "if a clone
//   was requested and the session is configured").
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> itype;    // egress: standard_metadata.instance_type
    bit<8> eport;    // egress: standard_metadata.egress_port
    bit<8> rid;      // egress: standard_metadata.egress_rid
    bit<8> ing_mark; // set by ingress of the original packet
    bit<8> eg_mark;  // set by egress of the original packet
    bit<8> x;        // E2E clone: meta.x (in the field list)
    bit<8> y;        // E2E clone: meta.y (not in the field list)
    bit<8> pad;
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> x;
    bit<8> y;
}

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
        hdr.h.ing_mark = 0xAA;
        clone(CloneType.I2E, 5);
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.itype = (bit<8>)sm.instance_type;
        hdr.h.eport = (bit<8>)sm.egress_port;
        hdr.h.rid = (bit<8>)sm.egress_rid;
        if (sm.instance_type == 0) {
            hdr.h.eg_mark = 0xE0;
            m.x = 0x55;
            m.y = 0x66;
            clone_preserving_field_list(CloneType.E2E, 6, 1);
        } else if (sm.instance_type == 2) {
            hdr.h.x = m.x;
            hdr.h.y = m.y;
        }
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
