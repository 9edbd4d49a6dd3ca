// K_POFVS's example in P4: the same forwarding as examples/pof/kpofvs.pof (ARP broadcast
// through multicast group 1; IPv4 by destination prefix, the TTL decremented, the checksum
// computed again, a counter per route), for scripts/bench-pof.sh to measure beside it. Its
// routes and group: examples/pof/kpofvs.entries.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<8> ver_ihl; bit<8> tos; bit<16> len; bit<16> id; bit<16> frag;
    bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
struct headers_t { ethernet_t eth; ipv4_t ip; }
struct meta_t { }

parser P(packet_in pk, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pk.extract(h.eth);
        transition select(h.eth.type) { 0x0800: ip; default: accept; }
    }
    state ip { pk.extract(h.ip); transition accept; }
}
control V(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    counter(16, CounterType.packets) routes;
    action broadcast() { sm.mcast_grp = 1; }
    action route_to(bit<9> port, bit<32> index) {
        h.ip.ttl = h.ip.ttl - 1;
        routes.count(index);
        sm.egress_spec = port;
    }
    action miss() { }
    table eth {
        key = { h.eth.type : exact; }
        actions = { broadcast; miss; }
        default_action = miss();
        size = 16;
    }
    table ipv4_fwd {
        key = { h.ip.dst : lpm; }
        actions = { route_to; miss; }
        default_action = miss();
        size = 1024;
    }
    apply {
        mark_to_drop(sm);
        if (h.ip.isValid()) { ipv4_fwd.apply(); } else { eth.apply(); }
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) {
    apply {
        update_checksum(h.ip.isValid(), { h.ip.ver_ihl, h.ip.tos, h.ip.len, h.ip.id, h.ip.frag,
            h.ip.ttl, h.ip.proto, h.ip.src, h.ip.dst }, h.ip.csum, HashAlgorithm.csum16);
    }
}
control D(packet_out pk, in headers_t h) { apply { pk.emit(h.eth); pk.emit(h.ip); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
