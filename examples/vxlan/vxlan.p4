// koi example: a VXLAN tunnel endpoint (VTEP, RFC 7348) with MAC learning by a P4Runtime
// controller (examples/vxlan/controller.py). README.md beside this file tells the whole story.
//
// Ports: UPLINK_PORT (1 unless -D UPLINK_PORT=N) faces the underlay (IPv4); every other port
// is an access port, whose frames (untagged or 802.1Q-tagged) belong to a bridge domain.
//
// - Access frame: (port, VLAN) -> bridge domain (`port_bd`), tag removed. Its source MAC,
//   unknown in `smac` or seen elsewhere than `smac` says, is reported by digest (bridge
//   domain, MAC, port, VTEP 0). `dmac` (bridge domain, destination MAC) sends it to a local
//   port or to a remote VTEP; an unknown or broadcast destination floods the bridge domain's
//   multicast group (group number = bridge domain): its local ports (replication id 0) and,
//   one copy each, its remote VTEPs (replication id = `flood_vtep` entry, on the uplink).
// - A copy for a remote VTEP is encapsulated in egress: outer Ethernet (next hop from
//   `vtep_arp`), IPv4 (source from `vtep_source`, TTL 64, checksum computed), UDP (source
//   port from a CRC-32 of the inner flow spread over 32768-60999 as Linux's
//   udp_flow_src_port does, destination 4789, checksum 0), VXLAN (I flag, VNI from `bd_vni`).
// - Uplink frame: IPv4/UDP 4789/VXLAN to one of our addresses (`local_vtep`) with a VNI of
//   `vni_bd` is decapsulated into that bridge domain; its inner source MAC is learnt as
//   behind the outer source address (digest: port 0, VTEP = outer source). A frame from a
//   VTEP is never sent back into the overlay (split horizon).
// - Frames leave an access port untagged or tagged as `port_vlan_out` says for the
//   (port, bridge domain); a port without an entry there gets nothing of that domain.
// - `drops` counts what is dropped, by reason (the DROP_* constants).

#include <core.p4>
#include <v1model.p4>

#ifndef UPLINK_PORT
#define UPLINK_PORT 1
#endif

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_VLAN = 0x8100;
const bit<16> VXLAN_PORT = 4789;
// Linux's default local port range (net.ipv4.ip_local_port_range), from which its VXLAN
// device draws the outer UDP source port: [32768, 60999].
const bit<64> SRC_PORT_MIN = 32768;
const bit<64> SRC_PORT_SPAN = 28231;   // 60999 - 32768

// Reasons in the `drops` counter.
const bit<32> DROP_NO_BD = 1;          // access frame whose (port, VLAN) has no bridge domain
const bit<32> DROP_NOT_VXLAN = 2;      // uplink frame that is not IPv4/UDP 4789/VXLAN
const bit<32> DROP_NOT_LOCAL = 3;      // VXLAN to an address that is not ours, or no I flag
const bit<32> DROP_UNKNOWN_VNI = 4;    // VXLAN with a VNI no bridge domain has
const bit<32> DROP_INNER_VLAN = 5;     // decapsulated frame with an 802.1Q tag
const bit<32> DROP_SAME_PORT = 6;      // destination behind the port the frame came in on
const bit<32> DROP_SPLIT_HORIZON = 7;  // from a VTEP to a VTEP
const bit<32> DROP_NO_ROUTE = 8;       // remote VTEP without `vtep_route` or `vtep_arp`
const bit<32> DROP_NO_VNI = 9;         // bridge domain without `bd_vni` sent to a VTEP
const bit<32> DROP_NOT_MEMBER = 10;    // access port without `port_vlan_out` for the domain
const bit<32> DROP_REASONS = 11;

header ethernet_t {
    bit<48> dst;
    bit<48> src;
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
    bit<32> src;
    bit<32> dst;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header vxlan_t {
    bit<8>  flags;      // 0x08: the VNI is valid (the I flag)
    bit<24> reserved;
    bit<24> vni;
    bit<8>  reserved2;
}

// The first four bytes of TCP and UDP: the ports, for the flow hash.
header l4_ports_t {
    bit<16> src;
    bit<16> dst;
}

struct headers_t {
    ethernet_t outer_eth;
    ipv4_t     outer_ipv4;
    udp_t      outer_udp;
    vxlan_t    vxlan;
    ethernet_t eth;       // the bridged frame: an access port's, or the decapsulated one
    vlan_t     vlan;
    ipv4_t     ipv4;
    l4_ports_t ports;
}

// Reported to the controller for a source MAC to learn (or that moved).
struct learn_t {
    bit<16> bd;
    bit<48> mac;
    bit<9>  port;   // the access port it came in on; 0 when it came from a VTEP
    bit<32> vtep;   // the remote VTEP it came from; 0 when local
}

struct meta_t {
    bit<16> bd;
    bit<12> vid;           // the access frame's VLAN, 0 when untagged
    bit<9>  in_port;
    bit<1>  from_tunnel;
    bit<9>  src_port;      // the source's access port (0 when it came from a VTEP)
    bit<32> src_vtep;      // the source's VTEP (0 when it came in on an access port)
    bit<32> remote_vtep;   // where the frame goes when it goes into the overlay
    bit<9>  known_port;    // where `smac` has the source
    bit<32> known_vtep;
    bit<16> inner_len;     // the bridged frame's length, untagged
    bit<16> udp_src;       // the outer UDP source port, from the inner flow's hash
    bit<32> flow_hash;
}

parser VtepParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    state start {
        transition select(std.ingress_port) {
            UPLINK_PORT: parse_outer_eth;
            default: parse_eth;
        }
    }
    state parse_outer_eth {
        pkt.extract(hdr.outer_eth);
        transition select(hdr.outer_eth.ether_type) {
            TYPE_IPV4: parse_outer_ipv4;
            default: accept;
        }
    }
    state parse_outer_ipv4 {
        pkt.extract(hdr.outer_ipv4);
        transition select(hdr.outer_ipv4.ihl, hdr.outer_ipv4.frag_offset,
                          hdr.outer_ipv4.protocol) {
            (5, 0, 17): parse_outer_udp;
            default: accept;
        }
    }
    state parse_outer_udp {
        pkt.extract(hdr.outer_udp);
        transition select(hdr.outer_udp.dst_port) {
            VXLAN_PORT: parse_vxlan;
            default: accept;
        }
    }
    state parse_vxlan {
        pkt.extract(hdr.vxlan);
        transition parse_eth;
    }
    state parse_eth {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            TYPE_VLAN: parse_vlan;
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, 6): parse_ports;
            (5, 0, 17): parse_ports;
            default: accept;
        }
    }
    state parse_ports {
        pkt.extract(hdr.ports);
        transition accept;
    }
}

control VtepVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control VtepIngress(inout headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t std) {
    counter(DROP_REASONS, CounterType.packets) drops;

    action drop_for(bit<32> reason) {
        drops.count(reason);
        mark_to_drop(std);
    }

    // Underlay: is the outer destination one of this VTEP's addresses?
    action vtep_ok() { }
    table local_vtep {
        key = { hdr.outer_ipv4.dst : exact; }
        actions = { vtep_ok; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    action set_bd(bit<16> bd) {
        meta.bd = bd;
    }
    // VXLAN network identifier -> bridge domain (decapsulation).
    table vni_bd {
        key = { hdr.vxlan.vni : exact; }
        actions = { set_bd; NoAction; }
        default_action = NoAction();
        size = 4096;
    }
    // Access port and VLAN (0: untagged) -> bridge domain.
    table port_bd {
        key = {
            std.ingress_port : exact;
            meta.vid : exact @name("vid");
        }
        actions = { set_bd; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    action learn() {
        digest<learn_t>(1, { meta.bd, hdr.eth.src, meta.src_port, meta.src_vtep });
    }
    action learnt(bit<9> port, bit<32> vtep) {
        meta.known_port = port;
        meta.known_vtep = vtep;
    }
    // What the controller learnt: (bridge domain, source MAC) -> where it is. Idle entries
    // are reported to the controller, which ages them out.
    table smac {
        key = {
            meta.bd : exact @name("bd");
            hdr.eth.src : exact @name("mac");
        }
        actions = { learnt; learn; }
        default_action = learn();
        support_timeout = true;
        size = 65536;
    }

    action to_port(bit<9> port) {
        std.egress_spec = port;
    }
    action to_vtep(bit<32> vtep) {
        meta.remote_vtep = vtep;
    }
    action flood() {
        std.mcast_grp = meta.bd;
    }
    // (bridge domain, destination MAC) -> a local port or a remote VTEP; else flooded.
    table dmac {
        key = {
            meta.bd : exact @name("bd");
            hdr.eth.dst : exact @name("mac");
        }
        actions = { to_port; to_vtep; flood; }
        default_action = flood();
        size = 65536;
    }

    action via(bit<9> port) {
        std.egress_spec = port;
    }
    // Underlay route: remote VTEP address -> the port its next hop is behind.
    table vtep_route {
        key = { meta.remote_vtep : exact; }
        actions = { via; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    apply {
        if (std.ingress_port == UPLINK_PORT) {
            if (!hdr.vxlan.isValid()) {
                drop_for(DROP_NOT_VXLAN);
                return;
            }
            if ((hdr.vxlan.flags & 0x08) == 0 || !local_vtep.apply().hit) {
                drop_for(DROP_NOT_LOCAL);
                return;
            }
            if (!vni_bd.apply().hit) {
                drop_for(DROP_UNKNOWN_VNI);
                return;
            }
            if (hdr.vlan.isValid()) {
                drop_for(DROP_INNER_VLAN);
                return;
            }
            meta.from_tunnel = 1;
            meta.src_vtep = hdr.outer_ipv4.src;
            hdr.outer_eth.setInvalid();
            hdr.outer_ipv4.setInvalid();
            hdr.outer_udp.setInvalid();
            hdr.vxlan.setInvalid();
        } else {
            if (hdr.vlan.isValid()) {
                meta.vid = hdr.vlan.vid;
            }
            if (!port_bd.apply().hit) {
                drop_for(DROP_NO_BD);
                return;
            }
            meta.inner_len = (bit<16>)std.packet_length;
            if (hdr.vlan.isValid()) {
                hdr.eth.ether_type = hdr.vlan.ether_type;
                hdr.vlan.setInvalid();
                meta.inner_len = meta.inner_len - 4;
            }
            // The inner flow's hash (addresses and, for TCP and UDP, ports), as the outer
            // UDP source port: hash ^ hash << 16, scaled into [32768, 60999] (Linux).
            bit<32> a = 0;
            bit<32> b = 0;
            bit<8> proto = 0;
            bit<16> sport = 0;
            bit<16> dport = 0;
            if (hdr.ipv4.isValid()) {
                a = hdr.ipv4.src;
                b = hdr.ipv4.dst;
                proto = hdr.ipv4.protocol;
            }
            if (hdr.ports.isValid()) {
                sport = hdr.ports.src;
                dport = hdr.ports.dst;
            }
            hash(meta.flow_hash, HashAlgorithm.crc32, 32w0,
                 { hdr.eth.dst, hdr.eth.src, hdr.eth.ether_type, a, b, proto, sport, dport },
                 64w0x100000000);
            bit<64> h = (bit<64>)(meta.flow_hash ^ (meta.flow_hash << 16));
            meta.udp_src = (bit<16>)(((h * SRC_PORT_SPAN) >> 32) + SRC_PORT_MIN);
        }
        meta.in_port = std.ingress_port;
        if (meta.from_tunnel == 0) {
            meta.src_port = std.ingress_port;
        }

        // Learning: a new source, or one that is not where the controller has it. A
        // multicast source address is never learnt.
        if (hdr.eth.src[40:40] == 0) {
            switch (smac.apply().action_run) {
                learnt: {
                    if (meta.known_port != meta.src_port || meta.known_vtep != meta.src_vtep) {
                        learn();
                    }
                }
            }
        }

        switch (dmac.apply().action_run) {
            to_port: {
                if (std.egress_spec == std.ingress_port) {
                    drop_for(DROP_SAME_PORT);
                    return;
                }
            }
            to_vtep: {
                if (meta.from_tunnel == 1) {
                    drop_for(DROP_SPLIT_HORIZON);
                    return;
                }
                if (!vtep_route.apply().hit) {
                    drop_for(DROP_NO_ROUTE);
                    return;
                }
            }
        }
    }
}

control VtepEgress(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    counter(DROP_REASONS, CounterType.packets) egress_drops;

    action drop_for(bit<32> reason) {
        egress_drops.count(reason);
        mark_to_drop(std);
    }

    action flood_to(bit<32> vtep) {
        meta.remote_vtep = vtep;
    }
    // Head-end replication: a flooded copy's replication id -> the remote VTEP it is for.
    table flood_vtep {
        key = { std.egress_rid : exact; }
        actions = { flood_to; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    action set_vni(bit<24> vni) {
        hdr.vxlan.vni = vni;
    }
    // Bridge domain -> VXLAN network identifier (encapsulation).
    table bd_vni {
        key = { meta.bd : exact; }
        actions = { set_vni; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    action set_nexthop(bit<48> mac) {
        hdr.outer_eth.dst = mac;
    }
    // Underlay neighbour: remote VTEP address -> the next hop's MAC address.
    table vtep_arp {
        key = { meta.remote_vtep : exact; }
        actions = { set_nexthop; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    action set_source(bit<48> mac, bit<32> addr) {
        hdr.outer_eth.src = mac;
        hdr.outer_ipv4.src = addr;
    }
    // This VTEP's MAC and IPv4 address on the underlay (`table_set_default`).
    table vtep_source {
        key = { }
        actions = { set_source; }
        default_action = set_source(0, 0);
    }

    action untagged() { }
    action tagged(bit<12> vid) {
        hdr.vlan.setValid();
        hdr.vlan.pcp = 0;
        hdr.vlan.dei = 0;
        hdr.vlan.vid = vid;
        hdr.vlan.ether_type = hdr.eth.ether_type;
        hdr.eth.ether_type = TYPE_VLAN;
    }
    // (access port, bridge domain) -> how frames of the domain leave the port.
    table port_vlan_out {
        key = {
            std.egress_port : exact;
            meta.bd : exact;
        }
        actions = { untagged; tagged; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        if (std.egress_rid != 0) {
            // A flooded copy for a remote VTEP.
            if (meta.from_tunnel == 1) {
                drop_for(DROP_SPLIT_HORIZON);
                return;
            }
            if (!flood_vtep.apply().hit) {
                drop_for(DROP_NO_ROUTE);
                return;
            }
        } else if (std.mcast_grp != 0 && std.egress_port == meta.in_port) {
            // A flooded copy never goes back where the frame came from (not counted).
            mark_to_drop(std);
            return;
        }

        if (meta.remote_vtep != 0) {
            hdr.outer_eth.setValid();
            hdr.outer_ipv4.setValid();
            hdr.outer_udp.setValid();
            hdr.vxlan.setValid();
            if (!bd_vni.apply().hit) {
                drop_for(DROP_NO_VNI);
                return;
            }
            if (!vtep_arp.apply().hit) {
                drop_for(DROP_NO_ROUTE);
                return;
            }
            vtep_source.apply();
            hdr.outer_eth.ether_type = TYPE_IPV4;
            hdr.outer_ipv4.version = 4;
            hdr.outer_ipv4.ihl = 5;
            hdr.outer_ipv4.diffserv = 0;
            hdr.outer_ipv4.total_len = meta.inner_len + 50 - 14;
            hdr.outer_ipv4.identification = 0;
            hdr.outer_ipv4.flags = 0;
            hdr.outer_ipv4.frag_offset = 0;
            hdr.outer_ipv4.ttl = 64;
            hdr.outer_ipv4.protocol = 17;
            hdr.outer_ipv4.dst = meta.remote_vtep;
            hdr.outer_udp.src_port = meta.udp_src;
            hdr.outer_udp.dst_port = VXLAN_PORT;
            hdr.outer_udp.length = meta.inner_len + 16;
            hdr.outer_udp.checksum = 0;
            hdr.vxlan.flags = 0x08;
            hdr.vxlan.reserved = 0;
            hdr.vxlan.reserved2 = 0;
        } else {
            switch (port_vlan_out.apply().action_run) {
                NoAction: {
                    drop_for(DROP_NOT_MEMBER);
                    return;
                }
            }
        }
    }
}

control VtepComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.outer_ipv4.isValid(),
            { hdr.outer_ipv4.version, hdr.outer_ipv4.ihl, hdr.outer_ipv4.diffserv,
              hdr.outer_ipv4.total_len, hdr.outer_ipv4.identification,
              hdr.outer_ipv4.flags, hdr.outer_ipv4.frag_offset, hdr.outer_ipv4.ttl,
              hdr.outer_ipv4.protocol, hdr.outer_ipv4.src, hdr.outer_ipv4.dst },
            hdr.outer_ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control VtepDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.outer_eth);
        pkt.emit(hdr.outer_ipv4);
        pkt.emit(hdr.outer_udp);
        pkt.emit(hdr.vxlan);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ports);
    }
}

V1Switch(VtepParser(), VtepVerifyChecksum(), VtepIngress(), VtepEgress(),
         VtepComputeChecksum(), VtepDeparser()) main;
