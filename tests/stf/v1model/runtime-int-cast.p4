// Pins down casts of run-time values to `int` (p4c's parser-unroll-test1 writes
// `index = (int<32>)((int)index + 1)`): `(int)x` keeps x's value (an unsigned field stays
// positive, a signed one keeps its sign), arithmetic and comparisons on such values are
// those of integers, and a cast back to a fixed width takes the low bits.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    int<8>  b;
    bit<16> c;
    bit<8>  r1;  // (int)a + 1, back to 8 bits
    bit<8>  r2;  // (int)b * 3 - 5, back to 8 bits
    bit<16> r3;  // (int)c + (int)a, back to 16 bits
    bit<8>  r4;  // (int)b < (int)a
    bit<8>  r5;  // -(int)a + 2 * (int)b - ((int)c >> 4) + (8 - (int)a), back to 8 bits
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
        hdr.h.r1 = (bit<8>)((int)hdr.h.a + 1);
        hdr.h.r2 = (bit<8>)((int)hdr.h.b * 3 - 5);
        hdr.h.r3 = (bit<16>)((int)hdr.h.c + (int)hdr.h.a);
        hdr.h.r4 = ((int)hdr.h.b < (int)hdr.h.a) ? 8w1 : 8w0;
        hdr.h.r5 = (bit<8>)(-(int)hdr.h.a + 2 * (int)hdr.h.b - ((int)hdr.h.c >> 4)
                            + (8 - (int)hdr.h.a));
        sm.egress_spec = 1;
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
