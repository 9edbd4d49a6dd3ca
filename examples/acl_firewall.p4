// koi example: a two-port filtering bridge, meant to sit in front of another pipeline over a
// patch port (`koi run --pipeline fw=examples/acl_firewall.p4 --pipeline
// router=examples/l2l3_acl.p4 --patch fw:2=router:1 ...`).
//
// What enters on port 1 leaves on port 2 and the reverse, unchanged, unless the `filter`
// table drops it: a ternary match on the IPv4 source and destination addresses, the IP
// protocol and the TCP/UDP destination port (entries with priorities; the default lets
// everything through). Counters count what each verdict saw, per direction.

#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_IPV4 = 0x0800;

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header vlan_t { bit<3> pcp; bit<1> dei; bit<12> vid; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset;
    bit<8> ttl; bit<8> protocol; bit<16> checksum; bit<32> src; bit<32> dst;
}
header ports_t { bit<16> src; bit<16> dst; }

struct headers { ethernet_t eth; vlan_t vlan; ipv4_t ipv4; ports_t l4; }
struct meta_t { }

parser FwParser(packet_in pkt, out headers h, inout meta_t m,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(h.eth);
        transition select(h.eth.ether_type) {
            ETHERTYPE_VLAN: vlan;
            ETHERTYPE_IPV4: ipv4;
            default: accept;
        }
    }
    state vlan {
        pkt.extract(h.vlan);
        transition select(h.vlan.ether_type) {
            ETHERTYPE_IPV4: ipv4;
            default: accept;
        }
    }
    state ipv4 {
        pkt.extract(h.ipv4);
        transition select(h.ipv4.ihl, h.ipv4.frag_offset, h.ipv4.protocol) {
            (5, 0, 6): l4;
            (5, 0, 17): l4;
            default: accept;
        }
    }
    state l4 {
        pkt.extract(h.l4);
        transition accept;
    }
}

control FwVerify(inout headers h, inout meta_t m) { apply { } }

control FwIngress(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
    // Index: 2 * verdict (0 allowed, 1 dropped) + direction (0: from port 1, 1: from port 2).
    counter(4, CounterType.packets_and_bytes) verdicts;

    action allow() { }
    action deny() { mark_to_drop(sm); }

    table filter {
        key = {
            h.ipv4.src: ternary;
            h.ipv4.dst: ternary;
            h.ipv4.protocol: ternary;
            h.l4.dst: ternary;
        }
        actions = { allow; deny; }
        default_action = allow();
        size = 1024;
    }

    apply {
        bit<32> dir = sm.ingress_port == 1 ? 32w0 : 32w1;
        sm.egress_spec = sm.ingress_port == 1 ? 9w2 : 9w1;
        if (h.ipv4.isValid()) {
            switch (filter.apply().action_run) {
                deny: { verdicts.count(2 + dir); }
                default: { verdicts.count(dir); }
            }
        } else {
            verdicts.count(dir);
        }
    }
}

control FwEgress(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control FwChecksum(inout headers h, inout meta_t m) { apply { } }

control FwDeparser(packet_out pkt, in headers h) {
    apply {
        pkt.emit(h.eth);
        pkt.emit(h.vlan);
        pkt.emit(h.ipv4);
        pkt.emit(h.l4);
    }
}

V1Switch(FwParser(), FwVerify(), FwIngress(), FwEgress(), FwChecksum(), FwDeparser()) main;
