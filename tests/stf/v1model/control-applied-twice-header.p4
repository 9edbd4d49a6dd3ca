// A control instance applied to two headers in turn: its table keys on the header of that
// application, and an action that invalidates it invalidates that header only.
#include <core.p4>
#include <v1model.p4>
header b_t { bit<8> k; bit<8> v; }
struct hs_t { b_t a; b_t b; }
struct m_t { }
control Fix(inout b_t x) {
    action set(bit<8> v) { x.v = v; }
    action inval() { x.setInvalid(); }
    table t { key = { x.k : exact; } actions = { set; inval; NoAction; } default_action = NoAction(); }
    apply { if (x.isValid()) { t.apply(); } }
}
parser P(packet_in pk, out hs_t hd, inout m_t m, inout standard_metadata_t sm) {
    state start { pk.extract(hd.a); pk.extract(hd.b); transition accept; }
}
control V(inout hs_t hd, inout m_t m) { apply { } }
control I(inout hs_t hd, inout m_t m, inout standard_metadata_t sm) {
    Fix() f;
    apply { sm.egress_spec = 2; f.apply(hd.a); f.apply(hd.b); }
}
control E(inout hs_t hd, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hd, inout m_t m) { apply { } }
control D(packet_out pk, in hs_t hd) { apply { pk.emit(hd); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
