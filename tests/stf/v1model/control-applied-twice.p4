// One control instance applied twice with different arguments: its table is one table (one
// set of entries), but each application looks it up with that application's key, and its
// actions write that application's out and inout arguments. The second pair of applications
// passes expressions, the third the same arguments twice (aliased, as for one application).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> a;
    bit<16> b;
    bit<8>  ra;
    bit<8>  rb;
    bit<8>  oa;
    bit<8>  ob;
    bit<8>  x;
    bit<8>  y;
}
struct hs_t { h_t h; }
struct m_t { }

control Tag(in bit<16> k, inout bit<8> r, out bit<8> o) {
    action mark(bit<8> v) { r = r + v; o = v; }
    action none() { o = 0xee; }
    table t {
        key = { k : exact; }
        actions = { mark; none; }
        default_action = none();
    }
    apply { t.apply(); }
}

parser P(packet_in pk, out hs_t hd, inout m_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.h); transition accept; }
}
control V(inout hs_t hd, inout m_t m) { apply { } }
control I(inout hs_t hd, inout m_t m, inout standard_metadata_t sm) {
    Tag() tag;
    Tag() other;
    Tag() same;
    apply {
        sm.egress_spec = 2;
        tag.apply(hd.h.a, hd.h.ra, hd.h.oa);
        tag.apply(hd.h.b, hd.h.rb, hd.h.ob);
        if (hd.h.x == 1) {
            // Expressions as keys, another field as the second inout argument.
            other.apply(hd.h.a + 1, hd.h.ra, hd.h.oa);
            other.apply(hd.h.b ^ 16w0x00ff, hd.h.y, hd.h.ob);
        }
        if (hd.h.x == 2) {
            same.apply(hd.h.a, hd.h.ra, hd.h.oa);
            same.apply(hd.h.a, hd.h.ra, hd.h.oa);
        }
    }
}
control E(inout hs_t hd, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hd, inout m_t m) { apply { } }
control D(packet_out pk, in hs_t hd) { apply { pk.emit(hd.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
