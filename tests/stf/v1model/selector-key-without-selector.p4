// Pins down a table with a `selector` key and no implementation (p4c accepts it, as in its
// issue1560-bmv2, and leaves the key out of the P4Info): the key feeds no action selector, so
// entries match on the other keys alone and the selector key's value changes nothing.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<8> s; bit<8> res; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.res = v; }
    table t {
        key = { hdr.h.k : exact; hdr.h.s : selector; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { sm.egress_spec = 1; t.apply(); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
