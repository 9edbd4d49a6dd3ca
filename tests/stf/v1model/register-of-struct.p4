// Pins down a register whose cells are a struct (p4c's issue907): `write` stores every field
// of the struct (a bool and a nested struct among them), `read` gives them back, cells are
// independent and start as zeros, and they keep their values across packets.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;     // 1: write the cell first
    bit<8>  idx;
    bit<8>  x;
    bit<16> y;
    bit<8>  flag;
    bit<4>  c;
    bit<4>  pad;
    bit<8>  ox;     // the cell read back
    bit<16> oy;
    bit<8>  oflag;
    bit<4>  oc;
    bit<4>  opad;
}

struct inner_t {
    bit<4> c;
}

struct cell_t {
    bit<8>  x;
    bit<16> y;
    bool    flag;
    inner_t inner;
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
    register<cell_t>(8) cells;
    apply {
        if (hdr.h.op == 1) {
            cell_t w;
            w.x = hdr.h.x;
            w.y = hdr.h.y;
            w.flag = hdr.h.flag != 0;
            w.inner.c = hdr.h.c;
            cells.write((bit<32>)hdr.h.idx, w);
        }
        cell_t r;
        cells.read(r, (bit<32>)hdr.h.idx);
        hdr.h.ox = r.x;
        hdr.h.oy = r.y;
        hdr.h.oflag = r.flag ? 8w1 : 8w0;
        hdr.h.oc = r.inner.c;
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
