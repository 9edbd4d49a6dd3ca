// An action with a parameter that the program only calls (from a table's action and from
// apply), never a table: P4Info lists it without its parameter, as p4c does.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    counter(4, CounterType.packets) drops;
    action drop_for(bit<32> reason) { drops.count(reason); mark_to_drop(sm); }
    action deny() { drop_for(1); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t { key = { hdr.h.k : exact; } actions = { deny; fwd; } }
    apply {
        if (!hdr.h.isValid()) { drop_for(0); return; }
        t.apply();
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
