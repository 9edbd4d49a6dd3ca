// Pins down `_` as an `out` argument (P4-16 §6.7: the value written is discarded):
// - `pkt.extract<T>(_)` reads a header of type T and drops it (it is not emitted);
// - a function and an action called with `_` for an `out` parameter run as usual;
// - an extern method's `out` argument (`register.read`) may be `_`.
#include <core.p4>
#include <v1model.p4>

header skip_t {
    bit<32> x;
}

header h_t {
    bit<32> data;
}

struct headers_t {
    h_t h;
}

struct meta_t { }

bit<8> next_of(out bit<8> copy, in bit<8> v) {
    copy = v;
    return v + 1;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract<skip_t>(_);
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(1) r;

    action bump(out bit<16> flag, inout bit<32> d) {
        flag = 0xFFFF;
        d = d + 1;
    }

    apply {
        r.read(_, 0);
        hdr.h.data[7:0] = next_of(_, hdr.h.data[15:8]);
        bump(_, hdr.h.data);
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
