// Pins down v1model action selectors set up through simple_switch_CLI's act_prof_* and
// table_indirect_* commands (checked in Rust: STF cannot express them).
// Source: BMv2 tools/runtime_CLI.py (act_prof_create_member, act_prof_create_group,
// act_prof_add_member_to_group, table_indirect_add, table_indirect_add_with_group; the
// commands are listed but not described in shared/reference/bmv2/runtime_CLI.md); BMv2
// src/bm_sim/action_profile.cpp (a group's member for a packet is the (hash % n)-th of its n
// members in ascending member-handle order; member and group handles are allocated lowest
// free first, so 0, 1, 2, ...). With HashAlgorithm.identity over the 8-bit selector field the
// hash is the field's value, so the member chosen is predictable.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;   // exact key
    bit<8> sel; // selector input
    bit<8> res; // written by the member's action
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
    action_selector(HashAlgorithm.identity, 16, 8) sel;

    action set_out(bit<8> v) {
        hdr.h.res = v;
    }

    table t {
        key = {
            hdr.h.k   : exact;
            hdr.h.sel : selector;
        }
        actions = {
            set_out;
            NoAction;
        }
        implementation = sel;
        default_action = NoAction();
    }

    apply {
        t.apply();
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { }
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
