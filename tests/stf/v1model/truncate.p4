// Pins down v1model `truncate(length)`: the packet that leaves is cut to `length` bytes
// after deparsing (so header changes made by the program are in the bytes kept), and a
// length larger than the packet leaves it whole. Works when called in ingress or egress.
// Source: p4include/v1model.p4 (`truncate`: "Cuts the packet that leaves the switch to at
// most `length` bytes (after deparsing)"); p4c's v1model.p4 ("Truncate the outgoing packet to
// the specified length"); BMv2 primitives.cpp `truncate_` (the cut is applied when the packet
// is transmitted, so "at most": a shorter packet is unchanged).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> n_ing; // when not 0: truncate(n_ing) in ingress
    bit<8> n_eg;  // when not 0: truncate(n_eg) in egress
    bit<8> mark;  // set to EE by ingress (visible in the bytes kept)
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
        hdr.h.mark = 0xEE;
        if (hdr.h.n_ing != 0) {
            truncate((bit<32>)hdr.h.n_ing);
        }
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.n_eg != 0) {
            truncate((bit<32>)hdr.h.n_eg);
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
