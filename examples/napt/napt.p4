// koi example: NAPT (source NAT with port translation) and DNAT port-forwards for v1model.
//
// An IPv4 router between inside ports and outside ports (table `zone`). TCP and UDP from the
// inside to the outside leave from the NAT's one outside address (table `nat_config`; table
// `nat_address` knows it as a destination) and a port of a pool the data plane allocates:
// the connection's 5-tuple hashes to one of NAT_SLOTS register slots, and the slot is the
// port (NAT_BASE + slot). Packets from the outside to that port, from the same remote
// address and port, are translated back to the inside host (address, port, and the MAC and
// switch port it came from). Port-forwards (table `port_forward`) send connections to a
// port of the outside address to an inside server; its replies leave from that port (table
// `forward_reverse`). An inside host reaching the outside address is hairpinned: both
// addresses are translated, so the server sees the NAT's address and its reply goes back
// through it. Mappings expire after a timeout per protocol. The IPv4, TCP and UDP checksums
// are updated incrementally (RFC 1624, eq. 3), never recomputed. See README.md.

#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
typedef bit<32> ip4_t;
typedef bit<9>  port_t;
typedef bit<48> time_t;   // microseconds, as v1model's ingress_global_timestamp

const bit<8> PROTO_TCP = 6;
const bit<8> PROTO_UDP = 17;

// The port pool: NAT_BASE .. NAT_BASE + NAT_SLOTS - 1.
const bit<32> NAT_SLOTS = 32768;
const bit<16> NAT_BASE = 32768;

const bit<2> ZONE_INSIDE = 1;
const bit<2> ZONE_OUTSIDE = 2;

// Verdicts (indices of counter `nat`).
const bit<32> N_SNAT_NEW = 0;        // translated, a new mapping allocated
const bit<32> N_SNAT = 1;            // translated by a mapping (or a port-forward's reply)
const bit<32> N_INBOUND = 2;         // to the outside address: translated by a mapping
const bit<32> N_FORWARD = 3;         // to the outside address: a port-forward
const bit<32> N_ROUTED = 4;          // routed without translation (inside to inside)
const bit<32> N_DROP_NO_MAPPING = 5; // to the outside address: no live mapping or forward
const bit<32> N_DROP_COLLISION = 6;  // new, its slot held by another live mapping
const bit<32> N_DROP_UNSUPPORTED = 7; // not IPv4 TCP/UDP (or options, fragments, TTL <= 1)
const bit<32> N_DROP_NO_ROUTE = 8;   // no zone, no route, or from the outside to the inside

header ethernet_t {
    mac_t   dst;
    mac_t   src;
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

header ports_t {
    bit<16> sport;
    bit<16> dport;
}

header tcp_rest_t {
    bit<32> seq;
    bit<32> ack;
    bit<4>  data_offset;
    bit<4>  reserved;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent;
}

header udp_rest_t {
    bit<16> len;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t eth;
    ipv4_t     ipv4;       // as received: only read
    ports_t    ports;      // as received: only read
    ipv4_t     ipv4_out;   // as sent: the translated copies
    ports_t    ports_out;
    tcp_rest_t tcp;
    udp_rest_t udp;
}

struct meta_t {
    bit<2>  zone;
    bit<2>  route_zone;
    ip4_t   nat_addr;
    mac_t   router_mac;
    time_t  t_tcp;
    time_t  t_udp;
    // The packet's addresses and ports after translation.
    ip4_t   saddr;
    ip4_t   daddr;
    bit<16> sport;
    bit<16> dport;
    bit<32> verdict;
}

parser NatParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x0800: parse_ipv4;
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
        pkt.extract(hdr.ports);
        pkt.extract(hdr.tcp);
        transition accept;
    }
    state parse_udp {
        pkt.extract(hdr.ports);
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control NatVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

// The ones' complement sum of the 16-bit words summed in `a` (RFC 1071: the carries
// folded back in, twice).
bit<16> fold(in bit<32> a) {
    bit<32> b = (bit<32>) a[15:0] + (a >> 16);
    return b[15:0] + b[31:16];
}

// For RFC 1624's eq. 3, HC' = ~(~HC + ~m + m'): the words of a 32-bit field changed from
// `o` to `n`, to sum with ~HC.
bit<32> delta32(in bit<32> o, in bit<32> n) {
    return (bit<32>) ~o[31:16] + (bit<32>) ~o[15:0] + (bit<32>) n[31:16] + (bit<32>) n[15:0];
}

// The same for a 16-bit field.
bit<32> delta16(in bit<16> o, in bit<16> n) {
    return (bit<32>) ~o + (bit<32>) n;
}

control NatIngress(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    // Slot i (port NAT_BASE + i): nat_inside = inside address ++ inside port ++ protocol ++
    // 0; nat_remote = remote address ++ remote port; nat_l2 = the inside host's MAC ++ the
    // port it is on (16 bits); nat_expires = when the mapping expires (microseconds).
    register<bit<64>>(NAT_SLOTS) nat_inside;
    register<bit<48>>(NAT_SLOTS) nat_remote;
    register<bit<64>>(NAT_SLOTS) nat_l2;
    register<time_t>(NAT_SLOTS) nat_expires;
    counter(9, CounterType.packets_and_bytes) nat;

    action drop() {
        mark_to_drop(std);
    }

    // Which side a port is on: 1 inside, 2 outside.
    action set_zone(bit<2> zone) {
        meta.zone = zone;
    }
    table zone {
        key = { std.ingress_port : exact; }
        actions = { set_zone; drop; }
        const default_action = drop();
        size = 64;
    }

    // The NAT's outside address and MAC, and the mappings' timeouts (microseconds of
    // idleness; RFC 5382's 2 h 4 min for TCP, RFC 4787's 5 min for UDP by default).
    action set_nat(ip4_t addr, mac_t mac, time_t tcp_timeout, time_t udp_timeout) {
        meta.nat_addr = addr;
        meta.router_mac = mac;
        meta.t_tcp = tcp_timeout;
        meta.t_udp = udp_timeout;
    }
    table nat_config {
        key = { }
        actions = { set_nat; }
        default_action = set_nat(0xcb007101, 0x0200000000fe, 7440000000, 300000000);
        size = 1;
    }

    // The NAT's outside address (as in nat_config), as a destination.
    action to_nat() { }
    table nat_address {
        key = { hdr.ipv4.dst : exact; }
        actions = { to_nat; NoAction; }
        default_action = NoAction();
        size = 4;
    }

    // The pool's ports (NAT_BASE = 32768 .. 65535: the top bit). A ternary table, so that a
    // megaflow matches that bit only (a comparison in the program would match the port).
    action pool_port() { }
    table pool {
        key = { hdr.ports.dport : ternary; }
        actions = { pool_port; NoAction; }
        default_action = NoAction();
        const entries = { 0x8000 &&& 0x8000 : pool_port(); }
        size = 1;
    }

    // Port-forwards: (protocol, port of the outside address) -> inside server: its address,
    // port, MAC and the switch port it is on.
    action forward_to(ip4_t addr, bit<16> port, mac_t mac, port_t egress) {
        meta.daddr = addr;
        meta.dport = port;
        hdr.eth.src = meta.router_mac;
        hdr.eth.dst = mac;
        std.egress_spec = egress;
        meta.route_zone = ZONE_INSIDE;
    }
    table port_forward {
        key = {
            hdr.ipv4.protocol : exact;
            hdr.ports.dport   : exact;
        }
        actions = { forward_to; NoAction; }
        default_action = NoAction();
        size = 256;
    }

    // The forwarded servers' replies: (server address, port, protocol) -> the outside
    // address's port they are forwarded from.
    action reply_from(bit<16> port) {
        meta.saddr = meta.nat_addr;
        meta.sport = port;
    }
    table forward_reverse {
        key = {
            hdr.ipv4.src      : exact;
            hdr.ports.sport   : exact;
            hdr.ipv4.protocol : exact;
        }
        actions = { reply_from; NoAction; }
        default_action = NoAction();
        size = 256;
    }

    // IPv4 routing of what is not sent to the outside address: MACs, port, and the side it
    // is on. (Keyed by the packet's destination: a translated destination comes with its
    // next hop, from the port-forward or the mapping.)
    action set_nexthop(mac_t nexthop_mac, port_t port, bit<2> zone) {
        hdr.eth.src = meta.router_mac;
        hdr.eth.dst = nexthop_mac;
        std.egress_spec = port;
        meta.route_zone = zone;
    }
    table routing {
        key = { hdr.ipv4.dst : lpm; }
        actions = { set_nexthop; drop; }
        const default_action = drop();
        size = 4096;
    }

    apply {
        if (!zone.apply().hit) {
            nat.count(N_DROP_NO_ROUTE);
            return;
        }
        if (!hdr.ipv4.isValid() || hdr.ipv4.ttl <= 1 || !hdr.ports.isValid()) {
            nat.count(N_DROP_UNSUPPORTED);
            drop();
            return;
        }
        nat_config.apply();
        bool tcp = hdr.tcp.isValid();
        time_t timeout = tcp ? meta.t_tcp : meta.t_udp;
        time_t now = std.ingress_global_timestamp;
        mac_t host_mac = hdr.eth.src;   // (routing rewrites it)
        meta.saddr = hdr.ipv4.src;
        meta.daddr = hdr.ipv4.dst;
        meta.sport = hdr.ports.sport;
        meta.dport = hdr.ports.dport;
        meta.verdict = N_ROUTED;
        bool inside = meta.zone == ZONE_INSIDE;
        // (A table, not a comparison: a megaflow then matches the bits that tell the
        // address apart, not the whole address.)
        bool to_nat = nat_address.apply().hit;

        // Destination: a port-forward, or a mapping, of the outside address.
        if (to_nat) {
            if (port_forward.apply().hit) {
                meta.verdict = N_FORWARD;
            } else if (pool.apply().hit) {
                bit<32> slot = (bit<32>) (hdr.ports.dport - NAT_BASE);
                bit<64> held;
                bit<48> remote;
                bit<64> l2;
                time_t expires;
                nat_inside.read(held, slot);
                nat_remote.read(remote, slot);
                nat_expires.read(expires, slot);
                nat_l2.read(l2, slot);
                // (Decided into a local first: a branch on a state-dependent value is a
                // guard, but the packet fields read in its condition would be matched whole.)
                bool theirs = now < expires && remote == hdr.ipv4.src ++ hdr.ports.sport
                    && held[15:8] == hdr.ipv4.protocol;
                if (theirs) {
                    meta.daddr = held[63:32];
                    meta.dport = held[31:16];
                    nat_expires.write(slot, now + timeout);
                    hdr.eth.src = meta.router_mac;
                    hdr.eth.dst = l2[63:16];
                    std.egress_spec = (port_t) l2[8:0];
                    meta.verdict = N_INBOUND;
                } else {
                    nat.count(N_DROP_NO_MAPPING);
                    drop();
                    return;
                }
            } else {
                nat.count(N_DROP_NO_MAPPING);
                drop();
                return;
            }
        } else if (!inside) {
            // The inside is reachable from the outside only through the outside address.
            nat.count(N_DROP_NO_ROUTE);
            drop();
            return;
        }
        if (!to_nat) {
            if (!routing.apply().hit) {
                nat.count(N_DROP_NO_ROUTE);
                return;
            }
            if (!inside && meta.route_zone != ZONE_INSIDE) {
                nat.count(N_DROP_NO_ROUTE);
                drop();
                return;
            }
        }

        // Source: from the inside to the outside, or hairpinned through the outside address.
        if (inside && (to_nat || meta.route_zone == ZONE_OUTSIDE)) {
            if (forward_reverse.apply().hit) {
                meta.verdict = N_SNAT;
            } else {
                bit<32> slot;
                hash(slot, HashAlgorithm.crc32, 32w0,
                     { hdr.ipv4.src, hdr.ports.sport, meta.daddr, meta.dport, hdr.ipv4.protocol },
                     NAT_SLOTS);
                bit<64> held;
                bit<48> remote;
                time_t expires;
                nat_inside.read(held, slot);
                nat_remote.read(remote, slot);
                nat_expires.read(expires, slot);
                bit<64> mine = hdr.ipv4.src ++ hdr.ports.sport ++ hdr.ipv4.protocol ++ 8w0;
                bit<48> theirs = meta.daddr ++ meta.dport;
                bool live = now < expires;
                bool same = live && held == mine && remote == theirs;
                if (same) {
                    meta.verdict = N_SNAT;
                } else if (live) {
                    nat.count(N_DROP_COLLISION);
                    drop();
                    return;
                } else {
                    nat_inside.write(slot, mine);
                    nat_remote.write(slot, theirs);
                    nat_l2.write(slot, host_mac ++ 7w0 ++ std.ingress_port);
                    meta.verdict = N_SNAT_NEW;
                }
                nat_expires.write(slot, now + timeout);
                meta.saddr = meta.nat_addr;
                meta.sport = NAT_BASE + (bit<16>) slot;
            }
        }
        nat.count(meta.verdict);

        // The rewrite, with the checksums updated incrementally: the old words'
        // complements and the new words summed with the checksum's complement, folded.
        bit<32> addrs = delta32(hdr.ipv4.src, meta.saddr) + delta32(hdr.ipv4.dst, meta.daddr);
        bit<16> ip_csum = ~fold((bit<32>) ~hdr.ipv4.hdr_checksum + addrs
            + delta16(hdr.ipv4.ttl ++ hdr.ipv4.protocol, (hdr.ipv4.ttl - 1) ++ hdr.ipv4.protocol));
        // TCP and UDP: the pseudo-header's addresses and the ports.
        bit<32> l4 = addrs + delta16(hdr.ports.sport, meta.sport)
            + delta16(hdr.ports.dport, meta.dport);
        if (tcp) {
            hdr.tcp.checksum = ~fold((bit<32>) ~hdr.tcp.checksum + l4);
        } else {
            // A UDP checksum of 0 means none and stays 0; a computed 0 is sent as 0xffff.
            bit<16> c = ~fold((bit<32>) ~hdr.udp.checksum + l4);
            hdr.udp.checksum = hdr.udp.checksum == 0 ? 16w0 : (c == 0 ? 16w0xffff : c);
        }
        // Written into copies: the received headers keep the values the decisions read (a
        // received field written from state would make every megaflow match the fields
        // the state's index came from).
        hdr.ipv4_out = hdr.ipv4;
        hdr.ipv4_out.hdr_checksum = ip_csum;
        hdr.ipv4_out.ttl = hdr.ipv4.ttl - 1;
        hdr.ipv4_out.src = meta.saddr;
        hdr.ipv4_out.dst = meta.daddr;
        hdr.ports_out.setValid();
        hdr.ports_out.sport = meta.sport;
        hdr.ports_out.dport = meta.dport;
        hdr.ipv4.setInvalid();
        hdr.ports.setInvalid();
    }
}

control NatEgress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    apply { }
}

control NatComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control NatDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4_out);
        pkt.emit(hdr.ports_out);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

V1Switch(NatParser(), NatVerifyChecksum(), NatIngress(), NatEgress(), NatComputeChecksum(),
         NatDeparser()) main;
