// koi example: the L2L3 pipeline (PISCES's L2L3 program: l2l3_acl.p4 without the ACL) for v1model.
//
// Five tables: VLAN ingress (tag untagged frames by port), L2 switching on destination MAC
// and VLAN, a "routable" check for frames addressed to the router, IPv4 longest-prefix
// routing (rewrite MACs, decrement TTL), and VLAN egress (untag and send).
// The entries in l2l3.entries are the Open vSwitch baseline's rules without the ACL.

#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
typedef bit<32> ip4_t;
typedef bit<9>  port_t;

const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;

header ethernet_t {
    mac_t   dst;
    mac_t   src;
    bit<16> ether_type;
}

header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    ip4_t   src;
    ip4_t   dst;
}

header tcp_t {
    bit<16> sport;
    bit<16> dport;
    bit<32> seq;
    bit<32> ack;
    bit<4>  data_offset;
    bit<4>  reserved;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent;
}

header udp_t {
    bit<16> sport;
    bit<16> dport;
    bit<16> len;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t eth;
    vlan_t     vlan;
    ipv4_t     ipv4;
    tcp_t      tcp;
    udp_t      udp;
}

struct meta_t { }

parser L2L3Parser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, PROTO_TCP): parse_tcp;
            (5, 0, PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control L2L3VerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control L2L3Ingress(inout headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t std) {
    action drop() {
        mark_to_drop(std);
    }

    // Table 0: frames arriving untagged get the VLAN of their port.
    action push_vlan(bit<12> vid) {
        hdr.vlan.setValid();
        hdr.vlan.pcp = 0;
        hdr.vlan.dei = 0;
        hdr.vlan.vid = vid;
        hdr.vlan.ether_type = hdr.eth.ether_type;
        hdr.eth.ether_type = ETHERTYPE_VLAN;
    }
    action tagged() { }
    table vlan_ingress {
        key = {
            std.ingress_port  : exact;
            hdr.vlan.isValid(): exact;
            hdr.vlan.vid      : ternary;
        }
        actions = { push_vlan; tagged; drop; }
        const default_action = drop();
        size = 64;
    }

    // Table 1: L2 switching. The router's MAC continues to routing.
    action to_router() { }
    action switch_to(port_t port) {
        std.egress_spec = port;
    }
    table switching {
        key = {
            hdr.eth.dst  : exact;
            hdr.vlan.vid : exact;
        }
        actions = { to_router; switch_to; drop; }
        const default_action = drop();
        size = 1024;
    }

    // Table 2: which hosts may be routed.
    action routable_ok() { }
    table routable {
        key = {
            hdr.eth.src  : exact;
            hdr.eth.dst  : exact;
            hdr.vlan.vid : exact;
        }
        actions = { routable_ok; drop; }
        const default_action = drop();
        size = 1024;
    }

    // Table 3: IPv4 routing.
    action set_nexthop(mac_t router_mac, mac_t nexthop_mac, port_t port) {
        hdr.eth.src = router_mac;
        hdr.eth.dst = nexthop_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        std.egress_spec = port;
    }
    table routing {
        key = { hdr.ipv4.dst : lpm; }
        actions = { set_nexthop; drop; }
        const default_action = drop();
        size = 4096;
    }

    apply {
        switch (vlan_ingress.apply().action_run) {
            drop: { return; }
            default: { }
        }
        switch (switching.apply().action_run) {
            to_router: {
                if (!hdr.ipv4.isValid() || !routable.apply().hit) {
                    drop();
                    return;
                }
                switch (routing.apply().action_run) {
                    drop: { return; }
                    default: { }
                }
            }
            switch_to: { }
            default: { return; }
        }
    }
}

control L2L3Egress(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    // Table 5: untag and send.
    action pop_vlan() {
        hdr.eth.ether_type = hdr.vlan.ether_type;
        hdr.vlan.setInvalid();
    }
    action drop() {
        mark_to_drop(std);
    }
    table vlan_egress {
        key = {
            std.egress_port : exact;
            hdr.vlan.vid    : exact;
        }
        actions = { pop_vlan; drop; }
        const default_action = drop();
        size = 64;
    }
    apply {
        vlan_egress.apply();
    }
}

control L2L3ComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control L2L3Deparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

V1Switch(L2L3Parser(), L2L3VerifyChecksum(), L2L3Ingress(), L2L3Egress(),
         L2L3ComputeChecksum(), L2L3Deparser()) main;
