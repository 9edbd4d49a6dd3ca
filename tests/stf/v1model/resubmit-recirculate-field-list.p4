// Pins down resubmit and recirculate with preserved field lists on v1model.
// Source: shared/reference/bmv2/simple_switch.md ("Pseudocode for what happens at the end of
// ingress and egress processing", "Notes on recirculate, resubmit, and clone operations",
// `instance_type` in "Standard metadata") and STF.md §6 (4.3, 5.4):
// - resubmit: ingress starts again on the original, unmodified packet; metadata is reset
//   except the @field_list fields named; instance_type is 6 (PKT_INSTANCE_TYPE_RESUBMIT);
//   the first pass's changes to headers and its egress_spec are lost;
// - recirculate: the deparsed packet (with every change made in ingress and egress) goes back
//   to the parser; metadata reset except the field list; instance_type 4 (RECIRC);
// - a packet unicast from ingress is NORMAL (0) in egress, whatever its ingress pass was.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> p1_mark; // set by the first ingress pass (lost by the resubmit)
    bit<8> rs_type; // resubmitted ingress pass: instance_type
    bit<8> rs_a;    // resubmitted ingress pass: m.a (field list 1)
    bit<8> rs_b;    // resubmitted ingress pass: m.b (not in a field list)
    bit<8> eg_type; // first egress: instance_type
    bit<8> rc_type; // recirculated ingress pass: instance_type
    bit<8> rc_c;    // recirculated ingress pass: m.c (field list 2)
    bit<8> rc_a;    // recirculated ingress pass: m.a (field list 1 only, not kept)
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> a;
    bit<8> b;
    @field_list(2)
    bit<8> c;
    bit<8> pass;
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
        if (sm.instance_type == 0) {
            hdr.h.p1_mark = 0xFF;
            m.a = 0x11;
            m.b = 0x22;
            sm.egress_spec = 1;
            resubmit_preserving_field_list(1);
        } else if (sm.instance_type == 6) {
            hdr.h.rs_type = (bit<8>)sm.instance_type;
            hdr.h.rs_a = m.a;
            hdr.h.rs_b = m.b;
            sm.egress_spec = 1;
        } else if (sm.instance_type == 4) {
            hdr.h.rc_type = (bit<8>)sm.instance_type;
            hdr.h.rc_c = m.c;
            hdr.h.rc_a = m.a;
            sm.egress_spec = 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.rc_type != 4) {
            hdr.h.eg_type = (bit<8>)sm.instance_type;
            m.c = 0x33;
            m.a = 0x44;
            recirculate_preserving_field_list(2);
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
