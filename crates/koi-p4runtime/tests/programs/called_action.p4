// An action with a parameter that only the program calls (no table lists it), beside a
// table whose action has one: P4Info lists the called action without parameters.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t std) {
    counter(4, CounterType.packets) drops;
    action drop_for(bit<32> reason) {
        drops.count(reason);
        mark_to_drop(std);
    }
    action fwd(bit<9> port) { std.egress_spec = port; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { fwd; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.h.a == 0) {
            drop_for(2);
        } else {
            t.apply();
        }
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t std) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
