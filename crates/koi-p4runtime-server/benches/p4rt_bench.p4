// The program of the P4Runtime benchmark (benches/p4runtime.rs): one large exact table on the
// destination MAC that forwards to a port, as an L2 switch's controller fills it.

#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t { ethernet_t eth; }
struct meta_t { }

parser BP(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control BV(inout headers_t hdr, inout meta_t meta) { apply { } }
control BI(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    action forward(bit<9> port) { std.egress_spec = port; }
    action drop() { mark_to_drop(std); }
    table fwd {
        key = { hdr.eth.dst : exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 1048576;
    }
    apply { fwd.apply(); }
}
control BE(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) { apply { } }
control BC(inout headers_t hdr, inout meta_t meta) { apply { } }
control BD(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(BP(), BV(), BI(), BE(), BC(), BD()) main;
