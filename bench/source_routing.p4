// Source routing (as in the P4 tutorials): a stack of 15-bit ports after the Ethernet
// header (type 0x1234), the first one taken as the egress port and popped. A benchmark
// program for `koi bench` (scripts/gen-feature-pcaps.py makes its traffic).
#include <core.p4>
#include <v1model.p4>
header route_t { bit<1> bos; bit<15> port; }
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers { eth_t eth; route_t[4] routes; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition select(hdr.eth.type) { 0x1234: route; default: accept; } }
    state route { pkt.extract(hdr.routes.next); transition select(hdr.routes.last.bos) { 1: accept; default: route; } }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.routes[0].isValid()) {
            sm.egress_spec = (bit<9>) hdr.routes[0].port;
            hdr.routes.pop_front(1);
        } else { sm.egress_spec = 9w5; }
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.routes); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
