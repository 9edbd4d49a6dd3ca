// The program of koi's P4Runtime client tests (crates/koi/tests/p4rt_shell.rs, p4rt_finsy.rs):
// a table of every match kind, counters and meters direct and indirect, a multicast group
// use, a digest and controller headers, each with a behaviour a packet shows.
//
// Per packet from a port (not the CPU port):
// - `port_in` (indirect counter) counts it at index ingress_port; `port_meter` (indirect
//   meter, packets) at index ingress_port colours it, and red is dropped.
// - `known_src` (exact source MAC): a miss sends digest `seen_t {src, port}`.
// - `policer` (exact source MAC, direct meter `flow_meter`, packets): red is dropped.
// - IPv4: `acl` (ternary IPv4 source, range UDP destination port, optional IP protocol,
//   direct counter `acl_hits`, priorities): `deny` drops; then `routes` (LPM IPv4
//   destination): `route(port, dmac)` rewrites the MACs (new source: the old destination),
//   decrements the TTL (checksum updated), default drop.
// - Otherwise `l2` (exact destination MAC): `forward(port)`, `flood(group)` (multicast; the
//   copy back to the ingress port is pruned in egress), `to_cpu()` (PacketIn with the
//   ingress port), default drop.
// From the CPU port: the `packet_out` header's egress port, the rest sent as is.

#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    bit<32> src;
    bit<32> dst;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> len;
    bit<16> checksum;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t eth;
    ipv4_t ipv4;
    udp_t udp;
}

struct seen_t {
    bit<48> src;
    bit<9> port;
}

struct meta_t {
    bit<9> ingress_port;
    bit<2> color;
    bit<2> port_color;
}

parser AllParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t std) {
    state start {
        transition select(std.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control AllVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control AllIngress(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    counter(512, CounterType.packets_and_bytes) port_in;
    meter(512, MeterType.packets) port_meter;
    direct_counter(CounterType.packets_and_bytes) acl_hits;
    direct_meter<bit<2>>(MeterType.packets) flow_meter;

    action drop() {
        mark_to_drop(std);
    }
    action forward(bit<9> port) {
        std.egress_spec = port;
    }
    action flood(bit<16> group) {
        std.mcast_grp = group;
    }
    action to_cpu() {
        std.egress_spec = CPU_PORT;
    }

    action learn() {
        digest<seen_t>(1, { hdr.eth.src, std.ingress_port });
    }
    action known() { }
    table known_src {
        key = { hdr.eth.src : exact; }
        actions = { known; learn; }
        default_action = learn();
        size = 64;
    }

    action police() {
        flow_meter.read(meta.color);
    }
    table policer {
        key = { hdr.eth.src : exact; }
        actions = { police; NoAction; }
        default_action = NoAction();
        meters = flow_meter;
        size = 64;
    }

    action allow() { }
    action deny() {
        mark_to_drop(std);
    }
    table acl {
        key = {
            hdr.ipv4.src : ternary;
            hdr.udp.dst_port : range;
            hdr.ipv4.protocol : optional;
        }
        actions = { allow; deny; }
        default_action = allow();
        counters = acl_hits;
        size = 64;
    }

    action route(bit<9> port, bit<48> dmac) {
        std.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table routes {
        key = { hdr.ipv4.dst : lpm; }
        actions = { route; drop; }
        default_action = drop();
        size = 64;
    }

    table l2 {
        key = { hdr.eth.dst : exact; }
        actions = { forward; flood; to_cpu; drop; }
        default_action = drop();
        size = 64;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            return;
        }
        meta.ingress_port = std.ingress_port;
        port_in.count((bit<32>) std.ingress_port);
        known_src.apply();
        port_meter.execute_meter((bit<32>) std.ingress_port, meta.port_color);
        if (meta.port_color == 2) {
            drop();
            return;
        }
        policer.apply();
        if (meta.color == 2) {
            drop();
            return;
        }
        if (hdr.ipv4.isValid()) {
            switch (acl.apply().action_run) {
                deny: { return; }
                default: { }
            }
            routes.apply();
        } else {
            l2.apply();
        }
    }
}

control AllEgress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    apply {
        if (std.mcast_grp != 0 && std.egress_port == meta.ingress_port) {
            mark_to_drop(std);
        }
        if (std.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = meta.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control AllComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control AllDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
    }
}

V1Switch(AllParser(), AllVerifyChecksum(), AllIngress(), AllEgress(), AllComputeChecksum(),
         AllDeparser()) main;
