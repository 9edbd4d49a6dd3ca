// Pins down v1model `random(out result, lo, hi)`: the result always lies in [lo, hi]
// (bounds included), including run-time bounds, a range that is not a power of 2, and
// lo == hi (always lo).
// Source: p4c's v1model.p4 (`random`: "a random value in the range lo..hi, inclusive") and
// shared/reference/bmv2/simple_switch.md ("BMv2 random implementation notes": lo and hi may
// be run-time values and hi - lo + 1 need not be a power of 2).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> lo;
    bit<8> hi;
    bit<8> in_range; // 1 if every one of 8 draws was in [lo, hi]
    bit<8> eq;       // the draw when lo == hi, else 0
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
    bit<8> r;
    bool ok = true;

    action draw() {
        random(r, hdr.h.lo, hdr.h.hi);
        if (r < hdr.h.lo || r > hdr.h.hi) {
            ok = false;
        }
    }

    apply {
        draw(); draw(); draw(); draw();
        draw(); draw(); draw(); draw();
        hdr.h.in_range = ok ? 8w1 : 8w0;
        if (hdr.h.lo == hdr.h.hi) {
            hdr.h.eq = r;
        }
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
