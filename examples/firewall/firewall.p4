// koi example: a stateful firewall (connection tracking in registers) for v1model.
//
// An IPv4 router between an inside and an outside network. Connections opened from the
// inside are tracked; packets of a tracked connection pass both ways; anything else from the
// outside is dropped. It does what this nftables ruleset does on a Linux router:
//
//     ct state established,related accept; ct state new iif inside accept; drop
//
// State: a hash table of CT_SLOTS slots in three register arrays, indexed by a CRC-32 of the
// connection's 5-tuple written inside-first (inside address and port, outside address and
// port, protocol), so both directions of a connection find the same slot. A slot holds the
// tuple itself (a slot holding another tuple holds another connection: no false matches),
// the connection's state, and the time it expires (the ingress timestamp of its last packet
// plus its state's timeout). See README.md for the states, the timeouts and the counters.

#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
typedef bit<32> ip4_t;
typedef bit<9>  port_t;
typedef bit<48> time_t;   // microseconds, as v1model's ingress_global_timestamp

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  PROTO_ICMP = 1;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;

const bit<32> CT_SLOTS = 65536;

// Zones (table `zone`).
const bit<2> ZONE_NONE = 0;
const bit<2> ZONE_INSIDE = 1;
const bit<2> ZONE_OUTSIDE = 2;

// Connection states (register ct_state).
const bit<8> CT_NONE = 0;
const bit<8> CT_SYN_SENT = 1;      // TCP: SYN from the inside seen
const bit<8> CT_SYN_RECV = 2;      // TCP: SYN+ACK from the outside seen
const bit<8> CT_ESTABLISHED = 3;   // TCP: the inside's ACK of the SYN+ACK seen
const bit<8> CT_FIN_IN = 4;        // TCP: FIN from the inside seen (FIN_WAIT)
const bit<8> CT_FIN_OUT = 5;       // TCP: FIN from the outside seen (FIN_WAIT)
const bit<8> CT_TIME_WAIT = 6;     // TCP: FINs from both sides seen
const bit<8> CT_CLOSE = 7;         // TCP: RST seen
const bit<8> CT_UDP = 8;           // UDP: packets from the inside only
const bit<8> CT_UDP_REPLIED = 9;   // UDP: a reply from the outside seen
const bit<8> CT_ICMP = 10;         // ICMP echo: a request from the inside seen
const bit<8> CT_BUSY = 0xff;       // (not stored) the slot holds another live connection

// Verdicts (indices of counter `verdict`).
const bit<32> V_NEW = 0;              // accepted: opened a connection from the inside
const bit<32> V_ESTABLISHED = 1;      // accepted: belongs to a tracked connection
const bit<32> V_DROP_OUTSIDE = 2;     // dropped: new, from the outside
const bit<32> V_DROP_INVALID = 3;     // dropped: cannot open a connection, or not valid in its state
const bit<32> V_DROP_COLLISION = 4;   // dropped: new, its slot held by another live connection
const bit<32> V_DROP_UNSUPPORTED = 5; // dropped: not IPv4 TCP/UDP/ICMP echo (or options, fragments, TTL)
const bit<32> V_DROP_NO_ROUTE = 6;    // dropped: no zone for the port, or no route

// What a packet is to the state machine: its direction ++ its kind.
const bit<4> EV_OUT = 8;              // from the outside (else from the inside)
const bit<4> EV_TCP = 0;              // TCP: anything below but the others (ACK, data)
const bit<4> EV_SYN = 1;              // TCP: SYN without ACK (and without FIN, RST)
const bit<4> EV_SYNACK = 2;           // TCP: SYN+ACK
const bit<4> EV_FIN = 3;              // TCP: FIN (without RST)
const bit<4> EV_RST = 4;              // TCP: RST
const bit<4> EV_UDP = 5;              // UDP
const bit<4> EV_ECHO = 6;             // ICMP echo request
const bit<4> EV_REPLY = 7;            // ICMP echo reply

const bit<8> TCP_FIN = 0x01;
const bit<8> TCP_SYN = 0x02;
const bit<8> TCP_RST = 0x04;
const bit<8> TCP_ACK = 0x10;

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

header icmp_t {
    bit<8>  type;
    bit<8>  code;
    bit<16> checksum;
    bit<16> id;
    bit<16> seq;
}

struct headers_t {
    ethernet_t eth;
    ipv4_t     ipv4;
    tcp_t      tcp;
    udp_t      udp;
    icmp_t     icmp;
}

struct meta_t {
    bit<2>  zone;
    bit<4>  event;
    bit<32> slot;
    bit<64> addrs;    // ct_addrs's layout: inside address ++ outside address
    bit<40> ports;    // ct_info's layout without the state: inside port ++ outside port ++ protocol
    bit<8>  ct;       // the connection's state as far as this packet is concerned
    // What the state machine decided.
    bit<8>  next;
    time_t  timeout;
    bit<32> verdict;
    bool    accept;
    bool    create;   // a new connection: the slot's tuple is written
    bool    store;    // the state changes: ct_info is written
    // Timeouts (table ct_timeouts).
    time_t  t_syn_sent;
    time_t  t_syn_recv;
    time_t  t_established;
    time_t  t_fin_wait;
    time_t  t_time_wait;
    time_t  t_close;
    time_t  t_udp;
    time_t  t_udp_stream;
    time_t  t_icmp;
}

parser FwParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, PROTO_TCP): parse_tcp;
            (5, 0, PROTO_UDP): parse_udp;
            (5, 0, PROTO_ICMP): parse_icmp;
            default: accept;
        }
    }
    state parse_tcp { pkt.extract(hdr.tcp); transition accept; }
    state parse_udp { pkt.extract(hdr.udp); transition accept; }
    state parse_icmp { pkt.extract(hdr.icmp); transition accept; }
}

control FwVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control FwIngress(inout headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    // Slot i: ct_addrs = inside address ++ outside address; ct_info = inside port ++
    // outside port ++ IP protocol ++ state (ICMP echo: the identifier as both ports);
    // ct_expires = when the connection expires (microseconds since the switch started).
    register<bit<64>>(CT_SLOTS) ct_addrs;
    register<bit<48>>(CT_SLOTS) ct_info;
    register<time_t>(CT_SLOTS) ct_expires;
    counter(7, CounterType.packets_and_bytes) verdict;

    action drop() {
        mark_to_drop(std);
    }

    // Which side of the firewall a port is on.
    action set_zone(bit<2> zone) {
        meta.zone = zone;
    }
    table zone {
        key = { std.ingress_port : exact; }
        actions = { set_zone; drop; }
        const default_action = drop();
        size = 64;
    }

    // IPv4 routing: the next hop's MAC and port; the firewall's own MAC as the source.
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

    // Timeouts per state, in microseconds. The default is Linux's (nf_conntrack_*_timeout_*);
    // `table_set_default ct_timeouts set_timeouts ...` changes them.
    action set_timeouts(time_t syn_sent, time_t syn_recv, time_t established,
                        time_t fin_wait, time_t time_wait, time_t close,
                        time_t udp, time_t udp_stream, time_t icmp) {
        meta.t_syn_sent = syn_sent;
        meta.t_syn_recv = syn_recv;
        meta.t_established = established;
        meta.t_fin_wait = fin_wait;
        meta.t_time_wait = time_wait;
        meta.t_close = close;
        meta.t_udp = udp;
        meta.t_udp_stream = udp_stream;
        meta.t_icmp = icmp;
    }
    table ct_timeouts {
        key = { }
        actions = { set_timeouts; }
        default_action = set_timeouts(120000000, 60000000, 432000000000, 120000000,
                                      120000000, 10000000, 30000000, 120000000, 30000000);
        size = 1;
    }

    // What the state machine decides (`ct_*`, called from the apply block below).
    // A new connection in a free slot: its tuple, state and expiry are written.
    action ct_open(bit<8> next, time_t timeout) {
        meta.verdict = V_NEW;
        meta.accept = true;
        meta.create = true;
        meta.store = true;
        meta.next = next;
        meta.timeout = timeout;
    }
    // The inside opens a closed connection again (a SYN in TIME_WAIT or CLOSE).
    action ct_reopen(time_t timeout) {
        meta.verdict = V_NEW;
        meta.accept = true;
        meta.store = true;
        meta.next = CT_SYN_SENT;
        meta.timeout = timeout;
    }
    // A packet of the connection moves it to state `next`.
    action ct_move(bit<8> next, time_t timeout) {
        meta.verdict = V_ESTABLISHED;
        meta.accept = true;
        meta.store = true;
        meta.next = next;
        meta.timeout = timeout;
    }
    // A packet of the connection; the state stays, the expiry moves.
    action ct_stay(time_t timeout) {
        meta.verdict = V_ESTABLISHED;
        meta.accept = true;
        meta.timeout = timeout;
    }
    action ct_refuse(bit<32> v) {
        meta.verdict = v;
    }

    apply {
        if (!zone.apply().hit) {
            verdict.count(V_DROP_NO_ROUTE);
            return;
        }
        bool echo = hdr.icmp.isValid() && hdr.icmp.code == 0
            && (hdr.icmp.type == 8 || hdr.icmp.type == 0);
        if (!hdr.ipv4.isValid() || hdr.ipv4.ttl <= 1
            || !(hdr.tcp.isValid() || hdr.udp.isValid() || echo)) {
            verdict.count(V_DROP_UNSUPPORTED);
            drop();
            return;
        }
        if (!routing.apply().hit) {
            verdict.count(V_DROP_NO_ROUTE);
            return;
        }
        ct_timeouts.apply();

        // What the packet is, and its connection's tuple, inside first: all from the packet,
        // before any state is read.
        bit<16> sport;
        bit<16> dport;
        bit<4> kind;
        if (hdr.tcp.isValid()) {
            sport = hdr.tcp.sport;
            dport = hdr.tcp.dport;
            bit<8> f = hdr.tcp.flags;
            if ((f & TCP_RST) != 0) {
                kind = EV_RST;
            } else if ((f & (TCP_SYN | TCP_ACK | TCP_FIN)) == TCP_SYN) {
                kind = EV_SYN;
            } else if ((f & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK)) {
                kind = EV_SYNACK;
            } else if ((f & TCP_FIN) != 0) {
                kind = EV_FIN;
            } else {
                kind = EV_TCP;
            }
        } else if (hdr.udp.isValid()) {
            sport = hdr.udp.sport;
            dport = hdr.udp.dport;
            kind = EV_UDP;
        } else {
            sport = hdr.icmp.id;
            dport = hdr.icmp.id;
            kind = hdr.icmp.type == 8 ? EV_ECHO : EV_REPLY;
        }
        ip4_t in_addr = hdr.ipv4.src;
        ip4_t out_addr = hdr.ipv4.dst;
        bit<16> in_port = sport;
        bit<16> out_port = dport;
        meta.event = kind;
        if (meta.zone != ZONE_INSIDE) {
            in_addr = hdr.ipv4.dst;
            out_addr = hdr.ipv4.src;
            in_port = dport;
            out_port = sport;
            meta.event = EV_OUT | kind;
        }
        hash(meta.slot, HashAlgorithm.crc32, 32w0,
             { in_addr, out_addr, in_port, out_port, hdr.ipv4.protocol }, CT_SLOTS);
        meta.addrs = in_addr ++ out_addr;
        meta.ports = in_port ++ out_port ++ hdr.ipv4.protocol;

        // The slot.
        bit<64> addrs;
        bit<48> info;
        time_t expires;
        ct_addrs.read(addrs, meta.slot);
        ct_info.read(info, meta.slot);
        ct_expires.read(expires, meta.slot);
        time_t now = std.ingress_global_timestamp;
        bool live = now < expires;
        bool mine = live && addrs == meta.addrs && info[47:8] == meta.ports;
        meta.ct = mine ? info[7:0] : (live ? CT_BUSY : CT_NONE);

        // The state machine (README.md has it as a table). The state is a guard of the
        // compiled program; the event is part of the megaflow's key.
        bit<4> ev = meta.event;
        bit<4> base = ev & 7;
        switch (meta.ct) {
            CT_ESTABLISHED: {
                if (base == EV_RST) {
                    ct_move(CT_CLOSE, meta.t_close);
                } else if (ev == EV_FIN) {
                    ct_move(CT_FIN_IN, meta.t_fin_wait);
                } else if (ev == (EV_OUT | EV_FIN)) {
                    ct_move(CT_FIN_OUT, meta.t_fin_wait);
                } else {
                    ct_stay(meta.t_established);
                }
            }
            CT_UDP: {
                if (ev == (EV_OUT | EV_UDP)) {
                    ct_move(CT_UDP_REPLIED, meta.t_udp_stream);
                } else {
                    ct_stay(meta.t_udp);
                }
            }
            CT_UDP_REPLIED: {
                ct_stay(meta.t_udp_stream);
            }
            CT_NONE: {
                // No connection (or an expired one): the inside may open one; the outside not.
                if (ev == EV_SYN) {
                    ct_open(CT_SYN_SENT, meta.t_syn_sent);
                } else if (ev == EV_UDP) {
                    ct_open(CT_UDP, meta.t_udp);
                } else if (ev == EV_ECHO) {
                    ct_open(CT_ICMP, meta.t_icmp);
                } else if ((ev & EV_OUT) != 0) {
                    ct_refuse(V_DROP_OUTSIDE);
                } else {
                    ct_refuse(V_DROP_INVALID);
                }
            }
            CT_BUSY: {
                // The slot holds another live connection: a new one cannot be tracked.
                if (ev == EV_SYN || ev == EV_UDP || ev == EV_ECHO) {
                    ct_refuse(V_DROP_COLLISION);
                } else if ((ev & EV_OUT) != 0) {
                    ct_refuse(V_DROP_OUTSIDE);
                } else {
                    ct_refuse(V_DROP_INVALID);
                }
            }
            CT_SYN_SENT: {
                if (base == EV_RST) {
                    ct_move(CT_CLOSE, meta.t_close);
                } else if (ev == EV_SYN) {
                    ct_stay(meta.t_syn_sent);
                } else if (ev == (EV_OUT | EV_SYNACK)) {
                    ct_move(CT_SYN_RECV, meta.t_syn_recv);
                } else {
                    ct_refuse(V_DROP_INVALID);
                }
            }
            CT_SYN_RECV: {
                if (base == EV_RST) {
                    ct_move(CT_CLOSE, meta.t_close);
                } else if (ev == EV_TCP) {
                    ct_move(CT_ESTABLISHED, meta.t_established);
                } else if (ev == EV_FIN) {
                    ct_move(CT_FIN_IN, meta.t_fin_wait);
                } else {
                    ct_stay(meta.t_syn_recv);
                }
            }
            CT_FIN_IN: {
                if (base == EV_RST) {
                    ct_move(CT_CLOSE, meta.t_close);
                } else if (ev == (EV_OUT | EV_FIN)) {
                    ct_move(CT_TIME_WAIT, meta.t_time_wait);
                } else {
                    ct_stay(meta.t_fin_wait);
                }
            }
            CT_FIN_OUT: {
                if (base == EV_RST) {
                    ct_move(CT_CLOSE, meta.t_close);
                } else if (ev == EV_FIN) {
                    ct_move(CT_TIME_WAIT, meta.t_time_wait);
                } else {
                    ct_stay(meta.t_fin_wait);
                }
            }
            CT_TIME_WAIT: {
                if (base == EV_RST) {
                    ct_move(CT_CLOSE, meta.t_close);
                } else if (ev == EV_SYN) {
                    ct_reopen(meta.t_syn_sent);
                } else {
                    ct_stay(meta.t_time_wait);
                }
            }
            CT_CLOSE: {
                if (ev == EV_SYN) {
                    ct_reopen(meta.t_syn_sent);
                } else {
                    ct_stay(meta.t_close);
                }
            }
            CT_ICMP: {
                if (ev == EV_ECHO || ev == (EV_OUT | EV_REPLY)) {
                    ct_stay(meta.t_icmp);
                } else {
                    ct_refuse(V_DROP_INVALID);
                }
            }
            default: {
                ct_refuse(V_DROP_INVALID);
            }
        }
        verdict.count(meta.verdict);
        if (!meta.accept) {
            drop();
            return;
        }
        if (meta.create) {
            ct_addrs.write(meta.slot, meta.addrs);
        }
        if (meta.store) {
            ct_info.write(meta.slot, meta.ports ++ meta.next);
        }
        ct_expires.write(meta.slot, now + meta.timeout);
    }
}

control FwEgress(inout headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t std) {
    apply { }
}

control FwComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control FwDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.icmp);
    }
}

V1Switch(FwParser(), FwVerifyChecksum(), FwIngress(), FwEgress(), FwComputeChecksum(),
         FwDeparser()) main;
