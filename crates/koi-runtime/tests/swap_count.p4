// The program of koi-runtime's swap test and benchmark: counts every packet in `count[0]`,
// writes VERSION (a -D flag, 1 by default) into the frame's `version` byte, and forwards by
// destination MAC through `route` (else to port 9, which the test switch does not have).
// EXTRA_KEY (a -D flag) adds a key field to `route`, which makes its entries impossible to
// carry over.
#include <core.p4>
#include <v1model.p4>

#ifndef VERSION
#define VERSION 1
#endif

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header seq_t { bit<32> seq; bit<8> version; }
struct headers { eth_t eth; seq_t seq; }
struct meta_t { }

parser P(packet_in p, out headers h, inout meta_t m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); p.extract(h.seq); transition accept; }
}
control VC(inout headers h, inout meta_t m) { apply { } }
control I(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(4) count;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table route {
        key = {
            h.eth.dst: exact;
#ifdef EXTRA_KEY
            h.eth.src: exact;
#endif
        }
        actions = { fwd; NoAction; }
        default_action = NoAction();
    }
    apply {
        bit<32> n;
        count.read(n, 0);
        count.write(0, n + 1);
        h.seq.version = VERSION;
        sm.egress_spec = 9;
        route.apply();
    }
}
control E(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers h, inout meta_t m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h.eth); p.emit(h.seq); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
