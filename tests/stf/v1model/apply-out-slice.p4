// A sub-control's out and inout arguments that are slices of a header field are written
// back when the block returns (they are not plain locations, so they go through a copy).
#include <v1model.p4>

header h_t { bit<48> a; bit<16> b; }
struct H { h_t h; }
struct M {}

parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}

control Classify(in bit<16> x, out bit<16> ret) {
    apply {
        ret = 8;
        if (x == 1) { ret = 1; }
    }
}

control Bump(inout bit<8> v) {
    apply { v = v + 1; }
}

control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Classify() classify;
    Bump() bump;
    apply {
        classify.apply(hdr.h.b, hdr.h.a[47:32]);
        bump.apply(hdr.h.a[7:0]);
    }
}

control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control V(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }

V1Switch(P(), V(), I(), E(), V(), D()) main;
