// Pins down an array of bits inside a header (`bit<8> arr[4]`, as in p4c's array2): the
// elements are consecutive header fields (extracted and emitted in order, `arr[0]` first),
// read and written by constant and run-time index, and copied with their header.
#include <core.p4>
#include <v1model.p4>

header data_t {
    bit<16>    f;
    bit<8>     arr[4];
    bit<4>     nib[2];
    bit<8>     sum;
    bit<8>     i;
    bit<8>     picked;
}

struct headers_t {
    data_t d;
    data_t copy;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.d);
        transition select(hdr.d.arr[3]) {
            0xFF: copy_it;
            default: accept;
        }
    }
    state copy_it {
        hdr.copy = hdr.d;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        bit<8> first = hdr.d.arr[0];
        hdr.d.arr[0] = hdr.d.arr[3];
        hdr.d.arr[3] = first;
        hdr.d.arr[1] = hdr.d.f[7:0];
        hdr.d.picked = hdr.d.arr[hdr.d.i];
        hdr.d.arr[hdr.d.i[1:0]] = hdr.d.arr[hdr.d.i[1:0]] + 1;
        hdr.d.arr[hdr.d.i[1:0] ^ 2w1] ^= 0x0F;
        hdr.d.sum = hdr.d.arr[0] + hdr.d.arr[1] + hdr.d.arr[2] + hdr.d.arr[3];
        hdr.d.nib[1] = hdr.d.nib[0];
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
        pkt.emit(hdr.d);
        pkt.emit(hdr.copy);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
