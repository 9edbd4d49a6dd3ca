// koi example: the PPPoE data plane of a broadband network gateway (BNG) for v1model.
//
// Subscribers reach the BNG over an access network of QinQ VLANs: an 802.1ad S-tag (TPID
// 0x88a8) for the access node or aggregation, an 802.1Q C-tag (0x8100) for the subscriber's
// line; over it, PPPoE (RFC 2516) carries the subscriber's PPP session.
//
//   upstream   (access -> core): the access line (ingress port, S-VLAN, C-VLAN) gives the
//              subscriber (table `lines`); the PPPoE session (subscriber, session id, the CPE's
//              MAC) must be one the control plane opened (table `sessions`), and the IPv4
//              source the address it gave the subscriber. The S-tag, C-tag, PPPoE and PPP
//              headers are removed and the IPv4 packet is routed toward the core (`routes`).
//   downstream (core -> access): an IPv4 packet to a subscriber's address (`downstream`) is
//              policed by the subscriber's meter (red is dropped), then gets the subscriber's
//              PPPoE session header, PPP (IPv4), C-tag and S-tag, and leaves on its access
//              port to the CPE's MAC.
//
// Control traffic goes to the controller (CPU port, packet-in with the ingress port and a
// reason), never dropped silently: PPPoE discovery (0x8863: PADI, PADR, PADT), and PPP
// control protocols in the session stage (LCP 0xc021, IPCP 0x8021, PAP, CHAP, ...: every
// protocol number with its top bit set). The controller's answers come back as packet-outs
// and leave on the port they name, unchanged.
//
// The BNG is an IP hop both ways: the TTL is decremented (expired packets dropped and
// counted) and the header checksum updated incrementally (RFC 1624), so IPv4 options are
// carried unparsed. Counters: `upstream_usage` and `downstream_usage` (packets and bytes per
// subscriber, as the frames arrived), `drops` by reason (the DROP_ constants); the meter
// `downstream_policer` (bytes) polices each subscriber's downstream traffic.

#include <core.p4>
#include <v1model.p4>

const bit<9>  CPU_PORT = 255;
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_QINQ = 0x88a8;
const bit<16> ETHERTYPE_PPPOE_DISCOVERY = 0x8863;
const bit<16> ETHERTYPE_PPPOE_SESSION = 0x8864;
const bit<16> PPP_IPV4 = 0x0021;

#define MAX_SUBSCRIBERS 65536

// Drop reasons: the indices of counter `drops`.
const bit<32> DROP_MALFORMED = 0;       // a parser error (truncated headers, IHL < 5)
const bit<32> DROP_NOT_FOR_US = 1;      // a unicast frame to another MAC than the BNG's
const bit<32> DROP_NOT_SUBSCRIBER = 2;  // not S-tag, C-tag and PPPoE (QinQ of another
                                        // kind, a single tag, PPPoE untagged)
const bit<32> DROP_UNKNOWN_LINE = 3;    // no subscriber on this port, S-VLAN and C-VLAN
const bit<32> DROP_UNKNOWN_SESSION = 4; // no open session of this id from this MAC
const bit<32> DROP_SPOOFED = 5;         // IPv4 source not the subscriber's address
const bit<32> DROP_UNSUPPORTED = 6;     // a PPP data protocol other than IPv4 (IPv6: 0x0057),
                                        // a session-stage PPPoE code other than 0
const bit<32> DROP_TTL = 7;             // the TTL expired
const bit<32> DROP_NO_ROUTE = 8;        // upstream: no route toward the core
const bit<32> DROP_UNKNOWN_SUBSCRIBER = 9; // downstream: no subscriber has the address
const bit<32> DROP_POLICED = 10;        // downstream: the subscriber's meter said red
const bit<32> DROP_NOT_IPV4 = 11;       // on the core side, not IPv4
const bit<32> NUM_DROP_REASONS = 12;

// Why a packet went to the controller (packet_in.reason).
const bit<7> TO_CPU_DISCOVERY = 1;      // PPPoE discovery
const bit<7> TO_CPU_PPP_CONTROL = 2;    // a PPP control protocol in a session

typedef bit<48> mac_t;
typedef bit<32> ip4_t;
typedef bit<32> subscriber_t;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> reason;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    mac_t   dst;
    mac_t   src;
    bit<16> ether_type;
}

// A VLAN tag after its TPID (which is the previous header's ether_type).
header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> ether_type;
}

// The PPPoE header (RFC 2516): version 1, type 1; code 0 in the session stage.
header pppoe_t {
    bit<4>  version;
    bit<4>  type;
    bit<8>  code;
    bit<16> session_id;
    bit<16> length;     // of the PPPoE payload: the PPP protocol and what follows
}

header ppp_t {
    bit<16> protocol;
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

struct headers_t {
    packet_in_t  packet_in;
    packet_out_t packet_out;
    ethernet_t   eth;
    vlan_t       s_tag;
    vlan_t       c_tag;
    pppoe_t      pppoe;
    ppp_t        ppp;
    ipv4_t       ipv4;
}

struct meta_t {
    subscriber_t subscriber;
    ip4_t        sub_addr;
    bit<2>       color;
    bit<1>       ip_forwarded;  // the TTL was decremented: update the checksum
    bit<16>      csum_in;       // ~checksum and ~(TTL, protocol) as they arrived (RFC 1624)
    bit<16>      word4_in;
}

parser BngParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
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
            ETHERTYPE_QINQ: parse_s_tag;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_s_tag {
        pkt.extract(hdr.s_tag);
        transition select(hdr.s_tag.ether_type) {
            ETHERTYPE_VLAN: parse_c_tag;
            default: accept;
        }
    }
    state parse_c_tag {
        pkt.extract(hdr.c_tag);
        transition select(hdr.c_tag.ether_type) {
            ETHERTYPE_PPPOE_DISCOVERY: parse_pppoe;
            ETHERTYPE_PPPOE_SESSION: parse_pppoe_session;
            default: accept;
        }
    }
    state parse_pppoe {
        pkt.extract(hdr.pppoe);
        transition accept;
    }
    state parse_pppoe_session {
        pkt.extract(hdr.pppoe);
        pkt.extract(hdr.ppp);
        transition select(hdr.ppp.protocol) {
            PPP_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl >= 5, error.HeaderTooShort);
        transition accept;
    }
}

control BngVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control BngIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    counter(NUM_DROP_REASONS, CounterType.packets) drops;
    counter(MAX_SUBSCRIBERS, CounterType.packets_and_bytes) upstream_usage;
    counter(MAX_SUBSCRIBERS, CounterType.packets_and_bytes) downstream_usage;
    meter(MAX_SUBSCRIBERS, MeterType.bytes) downstream_policer;

    action drop_for(bit<32> reason) {
        drops.count(reason);
        mark_to_drop(std);
    }

    action to_cpu(bit<7> reason) {
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = std.ingress_port;
        hdr.packet_in.reason = reason;
        std.egress_spec = CPU_PORT;
    }

    // The BNG's MACs: its access concentrator MAC (the PPPoE peer of the CPEs) and its
    // core-facing MAC.
    action for_us() { }
    table my_mac {
        key = { hdr.eth.dst : exact; }
        actions = { for_us; }
        size = 16;
    }

    // Access lines: (port, S-VLAN, C-VLAN) -> subscriber.
    action set_line(subscriber_t subscriber) {
        meta.subscriber = subscriber;
    }
    action unknown_line() {
        drop_for(DROP_UNKNOWN_LINE);
    }
    table lines {
        key = {
            std.ingress_port : exact @name("port");
            hdr.s_tag.vid    : exact @name("s_vid");
            hdr.c_tag.vid    : exact @name("c_vid");
        }
        actions = { set_line; unknown_line; }
        const default_action = unknown_line();
        size = MAX_SUBSCRIBERS;
    }

    // Open PPPoE sessions: (subscriber, session id, CPE MAC) -> the subscriber's address.
    action session_up(ip4_t addr) {
        meta.sub_addr = addr;
    }
    action unknown_session() {
        drop_for(DROP_UNKNOWN_SESSION);
    }
    table sessions {
        key = {
            meta.subscriber       : exact;
            hdr.pppoe.session_id  : exact;
            hdr.eth.src           : exact;
        }
        actions = { session_up; unknown_session; }
        const default_action = unknown_session();
        size = MAX_SUBSCRIBERS;
    }

    // Routes toward the core (upstream, by destination).
    action set_nexthop(mac_t smac, mac_t dmac, bit<9> port) {
        hdr.eth.src = smac;
        hdr.eth.dst = dmac;
        std.egress_spec = port;
    }
    action no_route() {
        drop_for(DROP_NO_ROUTE);
    }
    table routes {
        key = { hdr.ipv4.dst : lpm; }
        actions = { set_nexthop; no_route; }
        const default_action = no_route();
        size = 4096;
    }

    // Downstream: the subscriber's address -> its session: access port, S-VLAN, C-VLAN,
    // PPPoE session id, the CPE's MAC and the BNG's access MAC.
    action to_subscriber(subscriber_t subscriber, bit<9> port, bit<12> s_vid, bit<12> c_vid,
                         bit<16> session_id, mac_t cpe_mac, mac_t ac_mac) {
        meta.subscriber = subscriber;
        std.egress_spec = port;
        hdr.eth.dst = cpe_mac;
        hdr.eth.src = ac_mac;
        hdr.eth.ether_type = ETHERTYPE_QINQ;
        hdr.s_tag.setValid();
        hdr.s_tag.pcp = 0;
        hdr.s_tag.dei = 0;
        hdr.s_tag.vid = s_vid;
        hdr.s_tag.ether_type = ETHERTYPE_VLAN;
        hdr.c_tag.setValid();
        hdr.c_tag.pcp = 0;
        hdr.c_tag.dei = 0;
        hdr.c_tag.vid = c_vid;
        hdr.c_tag.ether_type = ETHERTYPE_PPPOE_SESSION;
        hdr.pppoe.setValid();
        hdr.pppoe.version = 1;
        hdr.pppoe.type = 1;
        hdr.pppoe.code = 0;
        hdr.pppoe.session_id = session_id;
        hdr.pppoe.length = hdr.ipv4.total_len + 2;
        hdr.ppp.setValid();
        hdr.ppp.protocol = PPP_IPV4;
    }
    action unknown_subscriber() {
        drop_for(DROP_UNKNOWN_SUBSCRIBER);
    }
    table downstream {
        key = { hdr.ipv4.dst : exact; }
        actions = { to_subscriber; unknown_subscriber; }
        const default_action = unknown_subscriber();
        size = MAX_SUBSCRIBERS;
    }

    // Keeps what the checksum update needs (see meta_t), then decrements the TTL.
    action decrement_ttl() {
        meta.csum_in = ~hdr.ipv4.hdr_checksum;
        meta.word4_in = ~(hdr.ipv4.ttl ++ hdr.ipv4.protocol);
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        meta.ip_forwarded = 1;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            // The controller's packet (a PADO, PADS, LCP reply): out of the port it names.
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            return;
        }
        if (std.parser_error != error.NoError) {
            drop_for(DROP_MALFORMED);
            return;
        }
        if (hdr.c_tag.ether_type == ETHERTYPE_PPPOE_DISCOVERY && hdr.pppoe.isValid()) {
            // Discovery: a PADI is broadcast, so before the MAC check.
            to_cpu(TO_CPU_DISCOVERY);
            return;
        }
        if (!my_mac.apply().hit) {
            drop_for(DROP_NOT_FOR_US);
            return;
        }
        if (hdr.ppp.isValid()) {
            // Upstream, a PPPoE session frame.
            if (hdr.pppoe.code != 0) {
                drop_for(DROP_UNSUPPORTED);
                return;
            }
            if (hdr.ppp.protocol[15:15] == 1) {
                to_cpu(TO_CPU_PPP_CONTROL);
                return;
            }
            if (!hdr.ipv4.isValid()) {
                drop_for(DROP_UNSUPPORTED);
                return;
            }
            if (!lines.apply().hit) {
                return;
            }
            if (!sessions.apply().hit) {
                return;
            }
            if (hdr.ipv4.src != meta.sub_addr) {
                drop_for(DROP_SPOOFED);
                return;
            }
            if (hdr.ipv4.ttl <= 1) {
                drop_for(DROP_TTL);
                return;
            }
            if (!routes.apply().hit) {
                return;
            }
            upstream_usage.count(meta.subscriber);
            decrement_ttl();
            hdr.s_tag.setInvalid();
            hdr.c_tag.setInvalid();
            hdr.pppoe.setInvalid();
            hdr.ppp.setInvalid();
            hdr.eth.ether_type = ETHERTYPE_IPV4;
        } else if (hdr.s_tag.isValid()) {
            drop_for(DROP_NOT_SUBSCRIBER);
        } else if (hdr.ipv4.isValid()) {
            // Downstream, from the core.
            if (!downstream.apply().hit) {
                return;
            }
            if (hdr.ipv4.ttl <= 1) {
                drop_for(DROP_TTL);
                return;
            }
            downstream_policer.execute_meter(meta.subscriber, meta.color);
            if (meta.color == V1MODEL_METER_COLOR_RED) {
                drop_for(DROP_POLICED);
                return;
            }
            downstream_usage.count(meta.subscriber);
            decrement_ttl();
        } else if (hdr.eth.ether_type == ETHERTYPE_VLAN
                   || hdr.eth.ether_type == ETHERTYPE_PPPOE_DISCOVERY
                   || hdr.eth.ether_type == ETHERTYPE_PPPOE_SESSION) {
            // A single tag, or PPPoE untagged: no access line to tell the subscriber by.
            drop_for(DROP_NOT_SUBSCRIBER);
        } else {
            drop_for(DROP_NOT_IPV4);
        }
    }
}

control BngEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control BngComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        // RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), m the (TTL, protocol) word.
        update_checksum(
            meta.ip_forwarded == 1,
            { meta.csum_in, meta.word4_in, hdr.ipv4.ttl, hdr.ipv4.protocol },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

control BngDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.s_tag);
        pkt.emit(hdr.c_tag);
        pkt.emit(hdr.pppoe);
        pkt.emit(hdr.ppp);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(BngParser(), BngVerifyChecksum(), BngIngress(), BngEgress(), BngComputeChecksum(),
         BngDeparser()) main;
