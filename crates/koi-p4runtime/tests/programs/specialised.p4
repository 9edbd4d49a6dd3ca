// One action, `setbyte`, whose `out` parameter each table binds to a field of its own:
// lowering makes a specialisation per table, the control plane sees one action.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> a;
    bit<8> b;
    bit<8> c;
}
struct headers { h_t h; }
struct meta_t {}

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply {} }

control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action setbyte(out bit<8> reg, bit<8> val) { reg = val; }
    table tbl1 {
        key = { hdr.h.k : exact; }
        actions = { setbyte(hdr.h.a); NoAction; }
        default_action = NoAction();
    }
    table tbl2 {
        key = { hdr.h.k : exact; }
        actions = { setbyte(hdr.h.b); NoAction; }
        default_action = NoAction();
    }
    table tbl3 {
        key = { hdr.h.k : exact; }
        actions = { setbyte(hdr.h.c); NoAction; }
        implementation = action_profile(4);
    }
    apply {
        sm.egress_spec = 2;
        tbl1.apply();
        tbl2.apply();
        tbl3.apply();
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply {} }
control CC(inout headers hdr, inout meta_t m) { apply {} }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
