// koi example: the user plane of a 5G UPF (3GPP TS 23.501, GTP-U per TS 29.281, the PDU
// session container per TS 38.415) for v1model.
//
//   uplink   (N3 -> N6): a G-PDU from a gNB, outer IPv4/UDP 2152/GTP-U to one of the UPF's N3
//            addresses, is matched by its TEID (table `uplink`), checked to come from the UE
//            address of that session, taken apart (outer IPv4, UDP, GTP-U, its optional fields
//            and PDU session container removed), marked with the DSCP of its QoS flow (the QFI
//            of the container, table `qos`) and routed toward the data network.
//   downlink (N6 -> N3): an IPv4 packet to a UE address (table `downlink`) gets the session's
//            tunnel: outer IPv4 from the UPF's N3 address (table `n3_source`) to the gNB, UDP
//            2152 -> 2152 with its checksum, GTP-U G-PDU with the downlink TEID and a PDU
//            session container (DL PDU SESSION INFORMATION) with the session's QFI; the outer
//            DSCP is the QFI's (table `qos`, else the inner packet's). Then routed to the gNB.
//
// Sessions (the `uplink` and `downlink` entries) are written by a controller
// (examples/upf/controller.py) over P4Runtime; the tables of the UPF's own addresses, routes
// and the QoS map come from upf.entries. The UPF is an IP hop both ways: the UE packet's TTL
// is decremented (expired ones dropped and counted).
//
// Counters: `uplink_usage` and `downlink_usage` count each session's packets and bytes (bytes
// as the frame arrived: the N3 frame with its tunnel uplink, the N6 frame downlink), indexed
// by the session id its entries carry; `drops` counts every drop by reason (DROP_ constants).
// GTP-U messages other than G-PDUs (echo request, end marker, error indication) go to the
// controller (CPU port, packet-in), which answers echo requests.

#include <core.p4>
#include <v1model.p4>

const bit<9>  CPU_PORT = 255;
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  PROTO_UDP = 17;
const bit<16> GTPU_PORT = 2152;
const bit<8>  GTPU_GPDU = 255;
const bit<8>  GTPU_EXT_PDU_SESSION = 0x85;
const bit<4>  PDU_TYPE_DL = 0;
// The tunnel a downlink packet gets: IPv4 20 + UDP 8 + GTP-U 8 + optional fields 4 + PDU
// session container 4.
const bit<16> GTPU_TUNNEL_BYTES = 44;

#define MAX_SESSIONS 65536

// Drop reasons: the indices of counter `drops`.
const bit<32> DROP_MALFORMED = 0;      // a parser error (truncated headers, IHL < 5)
const bit<32> DROP_NOT_FOR_US = 1;     // destination MAC not the UPF's (`my_mac`)
const bit<32> DROP_NOT_IPV4 = 2;       // neither IPv4 nor a packet-out
const bit<32> DROP_NOT_N3 = 3;         // GTP-U to an address that is not one of ours (`n3_address`)
const bit<32> DROP_UNSUPPORTED = 4;    // a G-PDU koi does not take apart: an extension header
                                       // other than one 4-byte PDU session container, or a
                                       // T-PDU that is not IPv4 (IPv6 or Ethernet PDU sessions)
const bit<32> DROP_UNKNOWN_TEID = 5;   // uplink: no session with this TEID (`uplink` miss)
const bit<32> DROP_UE_MISMATCH = 6;    // uplink: inner source is not the session's UE address
const bit<32> DROP_UNKNOWN_UE = 7;     // downlink: no session for this destination (`downlink` miss)
const bit<32> DROP_TTL = 8;            // the UE packet's TTL expired
const bit<32> DROP_NO_ROUTE = 9;       // no route to the data network or the gNB (`routes` miss)
const bit<32> DROP_NO_N3_SOURCE = 10;  // downlink before `n3_source` was configured
const bit<32> NUM_DROP_REASONS = 11;

// Why a packet went to the controller (packet_in.reason).
const bit<7> TO_CPU_GTPU_SIGNALLING = 1;  // a GTP-U message other than a G-PDU, to an N3 address

typedef bit<48> mac_t;
typedef bit<32> ip4_t;
typedef bit<32> session_t;

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

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
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

header udp_t {
    bit<16> sport;
    bit<16> dport;
    bit<16> len;
    bit<16> checksum;
}

// GTP-U header (TS 29.281 5.1): version 1, PT 1, and flags E (an extension header follows),
// S (sequence number), PN (N-PDU number); any of them adds the 4 bytes of gtpu_opt_t.
header gtpu_t {
    bit<3>  version;
    bit<1>  pt;
    bit<1>  spare;
    bit<1>  e;
    bit<1>  s;
    bit<1>  pn;
    bit<8>  msg_type;
    bit<16> length;     // bytes after the first 8
    bit<32> teid;
}

header gtpu_opt_t {
    bit<16> seq;
    bit<8>  npdu;
    bit<8>  next_ext;
}

// PDU session container (TS 38.415 5.5.2), the 4-byte form (length 1): DL PDU SESSION
// INFORMATION (type 0) or UL (type 1), without the optional fields (QMP, SNP, PPP, delay
// reports).
header gtpu_psc_t {
    bit<8>  len;        // in units of 4 bytes
    bit<4>  pdu_type;
    bit<4>  flags;      // DL: QMP, SNP, spare; UL: QMP, DL delay, UL delay, SNP
    bit<2>  flags2;     // DL: PPP, RQI; UL: N3/N9 delay, spare
    bit<6>  qfi;
    bit<8>  next_ext;
}

// The headers as they are parsed: the first IPv4 header (and its UDP header) is the tunnel's
// on N3, the UE packet's on N6. The UE packet of a tunnel is inner_ipv4; downlink, the UE
// packet is moved there (inner_ipv4, inner_udp) and ipv4/udp become the new tunnel's.
// IPv4 options are not parsed: they stay in the payload, and the UE packet's checksum is
// updated incrementally (RFC 1624), so it covers them unseen.
struct headers_t {
    packet_in_t  packet_in;
    packet_out_t packet_out;
    ethernet_t   eth;
    ipv4_t       ipv4;
    udp_t        udp;
    gtpu_t       gtpu;
    gtpu_opt_t   gtpu_opt;
    gtpu_psc_t   gtpu_psc;
    ipv4_t       inner_ipv4;
    udp_t        inner_udp;
}

struct meta_t {
    session_t session;
    ip4_t     ue_addr;
    bit<6>    qfi;
    bit<1>    marked;       // `qos` gave a DSCP for the QFI
    bit<6>    dscp;
    ip4_t     route_dst;
    bit<1>    encap;        // downlink: the tunnel's checksums are to be computed
    bit<1>    ue_forwarded; // the UE packet was rewritten (TTL, DSCP): update its checksum
    // The UE packet's checksum and its two header words the UPF may rewrite (version, IHL,
    // DSCP, ECN; TTL, protocol), as they arrived, complemented: RFC 1624's ~HC and ~m.
    bit<16>   csum_in;
    bit<16>   word0_in;
    bit<16>   word4_in;
}

parser UpfParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
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
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    // GTP-U is UDP to port 2152 in an IPv4 packet without options that is not a fragment.
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl >= 5, error.HeaderTooShort);
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags[0:0], hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (5, 0, 0, PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dport) {
            GTPU_PORT: parse_gtpu;
            default: accept;
        }
    }
    state parse_gtpu {
        pkt.extract(hdr.gtpu);
        transition select(hdr.gtpu.version, hdr.gtpu.pt, hdr.gtpu.e, hdr.gtpu.s, hdr.gtpu.pn) {
            (1, 1, 0, 0, 0): parse_tpdu;
            (1, 1, _, _, _): parse_gtpu_opt;
            default: accept;    // GTP' or another version: not for the UPF's user plane
        }
    }
    state parse_gtpu_opt {
        pkt.extract(hdr.gtpu_opt);
        transition select(hdr.gtpu.e, hdr.gtpu_opt.next_ext) {
            (0, _): parse_tpdu;                     // next_ext means nothing without E
            (1, 0): parse_tpdu;
            (1, GTPU_EXT_PDU_SESSION): parse_gtpu_psc;
            default: accept;                        // another extension: DROP_UNSUPPORTED
        }
    }
    state parse_gtpu_psc {
        pkt.extract(hdr.gtpu_psc);
        transition select(hdr.gtpu_psc.len, hdr.gtpu_psc.next_ext) {
            (1, 0): parse_tpdu;
            default: accept;                        // longer container or more: DROP_UNSUPPORTED
        }
    }
    state parse_tpdu {
        transition select(hdr.gtpu.msg_type) {
            GTPU_GPDU: parse_tpdu_version;
            default: accept;                        // signalling: to the controller
        }
    }
    state parse_tpdu_version {
        transition select(pkt.lookahead<bit<4>>()) {
            4: parse_inner_ipv4;
            default: accept;                        // not IPv4: DROP_UNSUPPORTED
        }
    }
    state parse_inner_ipv4 {
        pkt.extract(hdr.inner_ipv4);
        verify(hdr.inner_ipv4.ihl >= 5, error.HeaderTooShort);
        transition accept;
    }
}

control UpfVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control UpfIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    counter(NUM_DROP_REASONS, CounterType.packets) drops;
    counter(MAX_SESSIONS, CounterType.packets_and_bytes) uplink_usage;
    counter(MAX_SESSIONS, CounterType.packets_and_bytes) downlink_usage;

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

    // The UPF's MAC addresses (its N3 and N6 interfaces).
    action for_us() { }
    table my_mac {
        key = { hdr.eth.dst : exact; }
        actions = { for_us; }
        size = 16;
    }

    // The UPF's N3 addresses: GTP-U to any other is dropped.
    action n3() { }
    table n3_address {
        key = { hdr.ipv4.dst : exact; }
        actions = { n3; }
        size = 16;
    }

    // The source address of the tunnels the UPF sends (its N3 address): the default action.
    action set_n3_source(ip4_t addr) {
        hdr.ipv4.src = addr;
    }
    action n3_unconfigured() {
        drop_for(DROP_NO_N3_SOURCE);
    }
    table n3_source {
        key = { }
        actions = { set_n3_source; n3_unconfigured; }
        default_action = n3_unconfigured();
    }

    // Uplink sessions: TEID (the one the UPF gave the gNB) -> session id, UE address.
    action set_uplink(session_t session, ip4_t ue_addr) {
        meta.session = session;
        meta.ue_addr = ue_addr;
    }
    action unknown_teid() {
        drop_for(DROP_UNKNOWN_TEID);
    }
    table uplink {
        key = { hdr.gtpu.teid : exact; }
        actions = { set_uplink; unknown_teid; }
        const default_action = unknown_teid();
        size = MAX_SESSIONS;
    }

    // Downlink sessions: UE address -> session id, the gNB's TEID and address, the QFI. The
    // UE packet moves inside (inner_ipv4, inner_udp); ipv4 and udp become the tunnel's.
    action set_downlink(session_t session, bit<32> teid, ip4_t gnb_addr, bit<6> qfi) {
        meta.session = session;
        meta.qfi = qfi;
        hdr.inner_ipv4 = hdr.ipv4;
        hdr.inner_udp = hdr.udp;
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.ecn = 0;
        hdr.ipv4.total_len = hdr.inner_ipv4.total_len + GTPU_TUNNEL_BYTES;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = 0;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.protocol = PROTO_UDP;
        hdr.ipv4.dst = gnb_addr;
        hdr.udp.setValid();
        hdr.udp.sport = GTPU_PORT;
        hdr.udp.dport = GTPU_PORT;
        hdr.udp.len = hdr.inner_ipv4.total_len + (GTPU_TUNNEL_BYTES - 20);
        hdr.udp.checksum = 0;
        hdr.gtpu.setValid();
        hdr.gtpu.version = 1;
        hdr.gtpu.pt = 1;
        hdr.gtpu.spare = 0;
        hdr.gtpu.e = 1;
        hdr.gtpu.s = 0;
        hdr.gtpu.pn = 0;
        hdr.gtpu.msg_type = GTPU_GPDU;
        hdr.gtpu.length = hdr.inner_ipv4.total_len + 8;
        hdr.gtpu.teid = teid;
        hdr.gtpu_opt.setValid();
        hdr.gtpu_opt.seq = 0;
        hdr.gtpu_opt.npdu = 0;
        hdr.gtpu_opt.next_ext = GTPU_EXT_PDU_SESSION;
        hdr.gtpu_psc.setValid();
        hdr.gtpu_psc.len = 1;
        hdr.gtpu_psc.pdu_type = PDU_TYPE_DL;
        hdr.gtpu_psc.flags = 0;
        hdr.gtpu_psc.flags2 = 0;
        hdr.gtpu_psc.qfi = qfi;
        hdr.gtpu_psc.next_ext = 0;
        meta.encap = 1;
        meta.route_dst = gnb_addr;
    }
    action unknown_ue() {
        drop_for(DROP_UNKNOWN_UE);
    }
    table downlink {
        key = { hdr.ipv4.dst : exact; }
        actions = { set_downlink; unknown_ue; }
        const default_action = unknown_ue();
        size = MAX_SESSIONS;
    }

    // QoS flow -> DSCP: of the UE packet uplink, of the tunnel downlink.
    action set_dscp(bit<6> dscp) {
        meta.marked = 1;
        meta.dscp = dscp;
    }
    table qos {
        key = { meta.qfi : exact; }
        actions = { set_dscp; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    // Routes toward the data network (uplink, by the UE packet's destination) and toward the
    // gNBs (downlink, by the gNB address).
    action set_nexthop(mac_t smac, mac_t dmac, bit<9> port) {
        hdr.eth.src = smac;
        hdr.eth.dst = dmac;
        std.egress_spec = port;
    }
    action no_route() {
        drop_for(DROP_NO_ROUTE);
    }
    table routes {
        key = { meta.route_dst : lpm; }
        actions = { set_nexthop; no_route; }
        const default_action = no_route();
        size = 4096;
    }

    // Keeps what the UE packet's checksum update needs (see meta_t).
    action keep_ue_header(in ipv4_t ue) {
        meta.csum_in = ~ue.hdr_checksum;
        meta.word0_in = ~(ue.version ++ ue.ihl ++ ue.dscp ++ ue.ecn);
        meta.word4_in = ~(ue.ttl ++ ue.protocol);
    }

    apply {
        if (hdr.packet_out.isValid()) {
            // The controller's packet (an echo response): out of the port it names, as it is.
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            return;
        }
        if (std.parser_error != error.NoError) {
            drop_for(DROP_MALFORMED);
            return;
        }
        if (!my_mac.apply().hit) {
            drop_for(DROP_NOT_FOR_US);
            return;
        }
        if (hdr.gtpu.isValid()) {
            // N3: a tunnelled packet to the UPF.
            if (!n3_address.apply().hit) {
                drop_for(DROP_NOT_N3);
                return;
            }
            if (hdr.gtpu.msg_type != GTPU_GPDU) {
                to_cpu(TO_CPU_GTPU_SIGNALLING);
                return;
            }
            if (!hdr.inner_ipv4.isValid()) {
                drop_for(DROP_UNSUPPORTED);
                return;
            }
            if (!uplink.apply().hit) {
                return;
            }
            if (hdr.inner_ipv4.src != meta.ue_addr) {
                drop_for(DROP_UE_MISMATCH);
                return;
            }
            if (hdr.inner_ipv4.ttl <= 1) {
                drop_for(DROP_TTL);
                return;
            }
            if (hdr.gtpu_psc.isValid()) {
                meta.qfi = hdr.gtpu_psc.qfi;
            }
            uplink_usage.count(meta.session);
            keep_ue_header(hdr.inner_ipv4);
            hdr.ipv4.setInvalid();
            hdr.udp.setInvalid();
            hdr.gtpu.setInvalid();
            hdr.gtpu_opt.setInvalid();
            hdr.gtpu_psc.setInvalid();
            qos.apply();
            if (meta.marked == 1) {
                hdr.inner_ipv4.dscp = meta.dscp;
            }
            hdr.inner_ipv4.ttl = hdr.inner_ipv4.ttl - 1;
            meta.route_dst = hdr.inner_ipv4.dst;
        } else if (hdr.ipv4.isValid()) {
            // N6: a packet to a UE (inner_ipv4 from here on; ipv4 is the tunnel's, its DSCP
            // the UE packet's unless the QFI has one).
            if (!downlink.apply().hit) {
                return;
            }
            if (hdr.inner_ipv4.ttl <= 1) {
                drop_for(DROP_TTL);
                return;
            }
            switch (n3_source.apply().action_run) {
                n3_unconfigured: { return; }
                default: { }
            }
            downlink_usage.count(meta.session);
            keep_ue_header(hdr.inner_ipv4);
            hdr.inner_ipv4.ttl = hdr.inner_ipv4.ttl - 1;
            qos.apply();
            if (meta.marked == 1) {
                hdr.ipv4.dscp = meta.dscp;
            }
        } else {
            drop_for(DROP_NOT_IPV4);
            return;
        }
        meta.ue_forwarded = 1;
        routes.apply();
    }
}

control UpfEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control UpfComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        // The UE packet's header checksum, updated for its rewritten words (RFC 1624, eqn.
        // 3: HC' = ~(~HC + ~m + m')), so that options need not be parsed.
        update_checksum(
            meta.ue_forwarded == 1,
            { meta.csum_in, meta.word0_in, meta.word4_in,
              hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.dscp,
              hdr.inner_ipv4.ecn, hdr.inner_ipv4.ttl, hdr.inner_ipv4.protocol },
            hdr.inner_ipv4.hdr_checksum,
            HashAlgorithm.csum16);
        update_checksum(
            meta.encap == 1,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
        // UDP over the pseudo-header, the tunnel headers, the UE packet and its payload (with
        // the UE packet's UDP header, when it has one, parsed).
        update_checksum_with_payload(
            meta.encap == 1 && hdr.inner_udp.isValid(),
            { hdr.ipv4.src, hdr.ipv4.dst, 8w0, hdr.ipv4.protocol, hdr.udp.len,
              hdr.udp.sport, hdr.udp.dport, hdr.udp.len,
              hdr.gtpu.version, hdr.gtpu.pt, hdr.gtpu.spare, hdr.gtpu.e, hdr.gtpu.s,
              hdr.gtpu.pn, hdr.gtpu.msg_type, hdr.gtpu.length, hdr.gtpu.teid,
              hdr.gtpu_opt.seq, hdr.gtpu_opt.npdu, hdr.gtpu_opt.next_ext,
              hdr.gtpu_psc.len, hdr.gtpu_psc.pdu_type, hdr.gtpu_psc.flags,
              hdr.gtpu_psc.flags2, hdr.gtpu_psc.qfi, hdr.gtpu_psc.next_ext,
              hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.dscp,
              hdr.inner_ipv4.ecn, hdr.inner_ipv4.total_len, hdr.inner_ipv4.identification,
              hdr.inner_ipv4.flags, hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.ttl,
              hdr.inner_ipv4.protocol, hdr.inner_ipv4.hdr_checksum, hdr.inner_ipv4.src,
              hdr.inner_ipv4.dst,
              hdr.inner_udp.sport, hdr.inner_udp.dport, hdr.inner_udp.len,
              hdr.inner_udp.checksum },
            hdr.udp.checksum,
            HashAlgorithm.csum16);
        update_checksum_with_payload(
            meta.encap == 1 && !hdr.inner_udp.isValid(),
            { hdr.ipv4.src, hdr.ipv4.dst, 8w0, hdr.ipv4.protocol, hdr.udp.len,
              hdr.udp.sport, hdr.udp.dport, hdr.udp.len,
              hdr.gtpu.version, hdr.gtpu.pt, hdr.gtpu.spare, hdr.gtpu.e, hdr.gtpu.s,
              hdr.gtpu.pn, hdr.gtpu.msg_type, hdr.gtpu.length, hdr.gtpu.teid,
              hdr.gtpu_opt.seq, hdr.gtpu_opt.npdu, hdr.gtpu_opt.next_ext,
              hdr.gtpu_psc.len, hdr.gtpu_psc.pdu_type, hdr.gtpu_psc.flags,
              hdr.gtpu_psc.flags2, hdr.gtpu_psc.qfi, hdr.gtpu_psc.next_ext,
              hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.dscp,
              hdr.inner_ipv4.ecn, hdr.inner_ipv4.total_len, hdr.inner_ipv4.identification,
              hdr.inner_ipv4.flags, hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.ttl,
              hdr.inner_ipv4.protocol, hdr.inner_ipv4.hdr_checksum, hdr.inner_ipv4.src,
              hdr.inner_ipv4.dst },
            hdr.udp.checksum,
            HashAlgorithm.csum16);
    }
}

control UpfDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.gtpu);
        pkt.emit(hdr.gtpu_opt);
        pkt.emit(hdr.gtpu_psc);
        pkt.emit(hdr.inner_ipv4);
        pkt.emit(hdr.inner_udp);
    }
}

V1Switch(UpfParser(), UpfVerifyChecksum(), UpfIngress(), UpfEgress(), UpfComputeChecksum(),
         UpfDeparser()) main;
