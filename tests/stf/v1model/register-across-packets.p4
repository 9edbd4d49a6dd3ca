// Pins down v1model `register` state across packets and its control-plane writes: a
// per-index packet counter kept in a register (read, +1, write), a `register_write` from the
// control plane seen by the next packet's read, `register_reset` back to zero, and cells that
// start at zero and are independent of each other.
// Source: shared/reference/bmv2/simple_switch.md ("BMv2 register implementation notes");
// STF.md §4 (register_write / register_reset are passed to simple_switch_CLI and change
// state); shared/reference/bmv2/runtime_CLI.md (register_write REGISTER INDEX VALUE,
// register_reset REGISTER); BMv2 register arrays are zero-initialised.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  idx; // register index
    bit<16> val; // the value written back (count after this packet)
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
    register<bit<16>>(4) r;

    apply {
        bit<16> v;
        r.read(v, (bit<32>)hdr.h.idx);
        v = v + 1;
        r.write((bit<32>)hdr.h.idx, v);
        hdr.h.val = v;
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
