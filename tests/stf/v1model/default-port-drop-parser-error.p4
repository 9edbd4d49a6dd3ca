// Pins down v1model drop and default-port behaviour and parser errors.
// Source: STF.md §6 items 2, 3, 5.2 and 6; shared/reference/bmv2/simple_switch.md
// (`egress_spec` and `parser_error` in "Standard metadata", after-egress pseudocode):
// - a packet whose ingress never sets egress_spec goes to port 0;
// - egress_spec = 511 (the drop port) in ingress drops the packet;
// - mark_to_drop(standard_metadata) in egress drops the packet;
// - a parser error (here PacketTooShort from extract) is recorded in
//   standard_metadata.parser_error and ingress still runs; the deparser emits the valid
//   headers followed by the bytes the parser did not consume.
#include <core.p4>
#include <v1model.p4>

header op_t {
    bit<8> op;   // 1: drop in ingress, 2: drop in egress, 3: port 0 by default
    bit<8> err;  // ingress writes 1 if parser_error is PacketTooShort
}

header big_t {
    bit<64> f;
}

struct headers_t {
    op_t op;
    big_t big;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.op);
        transition select(hdr.op.op) {
            4: parse_big;
            default: accept;
        }
    }
    state parse_big {
        pkt.extract(hdr.big);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.PacketTooShort) {
            hdr.op.err = 1;
            sm.egress_spec = 5;
        } else if (hdr.op.op == 1) {
            sm.egress_spec = 511;
        } else if (hdr.op.op == 2) {
            sm.egress_spec = 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.op.op == 2) {
            mark_to_drop(sm);
        }
    }
}

control CC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.op);
        pkt.emit(hdr.big);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
