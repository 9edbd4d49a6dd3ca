// koi example: an MPLS label edge router (LER) and label switching router (LSR) for v1model.
//
// One program plays every role; the entries decide which a node takes (see README.md):
//
//   ingress LER  IPv4 in, labelled out: the destination prefix gives a FEC (table `fec`), the
//                FEC a label stack of one or two labels and a next hop (table `ftn`).
//   LSR          labelled in, labelled out: the top label (table `lfib`) is swapped (or
//                swapped and another pushed on top); the penultimate hop pops it (implicit
//                null) and forwards what is under it, or swaps it to explicit null (label 0).
//   egress LER   labelled in, IPv4 out: a label of its own (or explicit null) is popped and the
//                IPv4 packet under it routed by `fec` (action `route`).
//
// TTL: the uniform model of RFC 3443. A router decrements the TTL it forwards by: the IPv4
// TTL at the ingress LER, which is then copied into every label it pushes; the top label's at
// an LSR (a label pushed on top gets it too); and on a pop the decremented TTL is written into
// what becomes the top (the next label, or the IPv4 header, whose checksum is then updated). A
// TTL of 1 or 0 cannot be decremented: the packet is dropped and counted (DROP_TTL).
// DiffServ: a pushed label's traffic class is the IP precedence (the top 3 bits of the DSCP);
// a swap keeps it; a pop leaves the IP header's DSCP as it was.
//
// Every drop is counted in `drops`, indexed by its reason (the DROP_ constants); `ftn` and
// `lfib` count the packets and bytes of each entry (direct counters).

#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_MPLS = 0x8847;
#define MAX_LABELS 4

// Drop reasons: the indices of counter `drops`.
const bit<32> DROP_MALFORMED = 0;    // a parser error: truncated, more than MAX_LABELS labels, IHL < 5
const bit<32> DROP_NOT_FOR_US = 1;   // destination MAC not one of this router's (`my_mac`)
const bit<32> DROP_ETHERTYPE = 2;    // neither IPv4 nor MPLS
const bit<32> DROP_TTL = 3;          // TTL expired (IPv4 at the ingress LER, top label elsewhere)
const bit<32> DROP_NO_ROUTE = 4;     // IPv4 destination without a FEC or route (`fec` miss)
const bit<32> DROP_NO_FTN = 5;       // a FEC without a label stack (`ftn` miss)
const bit<32> DROP_UNKNOWN_LABEL = 6; // top label not in `lfib`
const bit<32> DROP_BAD_POP = 7;      // popped the bottom label over a payload that is not IPv4,
                                     // or pop_lookup of a label that is not the bottom one
const bit<32> DROP_STACK_FULL = 8;   // a push onto a stack of MAX_LABELS labels
const bit<32> DROP_NO_NEXTHOP = 9;   // next hop not in `nexthop`
const bit<32> NUM_DROP_REASONS = 10;

typedef bit<48> mac_t;
typedef bit<32> ip4_t;
typedef bit<20> label_t;
typedef bit<16> nhop_t;
typedef bit<16> fec_t;

header ethernet_t {
    mac_t   dst;
    mac_t   src;
    bit<16> ether_type;
}

// An MPLS label stack entry (RFC 3032).
header mpls_t {
    label_t label;
    bit<3>  tc;
    bit<1>  bos;
    bit<8>  ttl;
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

// IPv4 options (IHL above 5), carried unchanged and covered by the header checksum.
header ipv4_options_t {
    varbit<320> options;
}

struct headers_t {
    ethernet_t         eth;
    mpls_t[MAX_LABELS] mpls;
    ipv4_t             ipv4;
    ipv4_options_t     ipv4_options;
}

struct meta_t {
    fec_t   fec;
    nhop_t  nhop;
    bit<1>  pop;        // lfib: pop the top label
    bit<1>  ip_lookup;  // lfib: then route the IPv4 packet under it (`fec`)
    bit<1>  push;       // lfib: swap_push: push push_label on top after the swap
    label_t push_label;
    bit<1>  ip_changed; // the IPv4 header was rewritten: update its checksum
}

parser MplsParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            ETHERTYPE_MPLS: parse_mpls;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    // The label stack, down to the entry with bottom-of-stack set; a fifth label is a parser
    // error (StackOutOfBounds).
    state parse_mpls {
        pkt.extract(hdr.mpls.next);
        transition select(hdr.mpls.last.bos) {
            0: parse_mpls;
            1: parse_payload;
        }
    }
    // RFC 3032 has no payload type: the first nibble tells IPv4 from anything else.
    state parse_payload {
        transition select(pkt.lookahead<bit<4>>()) {
            4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl >= 5, error.HeaderTooShort);
        transition select(hdr.ipv4.ihl) {
            5: accept;
            default: parse_ipv4_options;
        }
    }
    state parse_ipv4_options {
        pkt.extract(hdr.ipv4_options, ((bit<32>)hdr.ipv4.ihl - 5) * 32);
        transition accept;
    }
}

control MplsVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MplsIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    counter(NUM_DROP_REASONS, CounterType.packets) drops;
    direct_counter(CounterType.packets_and_bytes) ftn_stats;
    direct_counter(CounterType.packets_and_bytes) lfib_stats;

    // Drops the packet and counts it under `reason`.
    action drop_for(bit<32> reason) {
        drops.count(reason);
        mark_to_drop(std);
    }

    // The router's own MAC addresses: frames to any other are not routed.
    action for_us() { }
    table my_mac {
        key = { hdr.eth.dst : exact; }
        actions = { for_us; }
        size = 16;
    }

    // IPv4 destination prefix -> FEC (ingress LER), or a plain IPv4 route (egress LER, and
    // traffic that stays unlabelled).
    action set_fec(fec_t fec) {
        meta.fec = fec;
    }
    action route(nhop_t nhop) {
        meta.nhop = nhop;
    }
    action no_route() {
        drop_for(DROP_NO_ROUTE);
    }
    table fec {
        key = { hdr.ipv4.dst : lpm; }
        actions = { set_fec; route; no_route; }
        const default_action = no_route();
        size = 65536;
    }

    // FEC -> label stack and next hop (the FEC-to-NHLFE map). Each pushed label gets the
    // (decremented) IPv4 TTL and the IP precedence as its traffic class.
    action push_one(label_t label, nhop_t nhop) {
        hdr.mpls.push_front(1);
        hdr.mpls[0].setValid();
        hdr.mpls[0].label = label;
        hdr.mpls[0].tc = hdr.ipv4.diffserv[7:5];
        hdr.mpls[0].bos = 1;
        hdr.mpls[0].ttl = hdr.ipv4.ttl;
        hdr.eth.ether_type = ETHERTYPE_MPLS;
        meta.nhop = nhop;
    }
    // Two labels: `bottom` (a service label, say) under `top` (the transport label).
    action push_two(label_t bottom, label_t top, nhop_t nhop) {
        hdr.mpls.push_front(2);
        hdr.mpls[0].setValid();
        hdr.mpls[1].setValid();
        hdr.mpls[0].label = top;
        hdr.mpls[0].tc = hdr.ipv4.diffserv[7:5];
        hdr.mpls[0].bos = 0;
        hdr.mpls[0].ttl = hdr.ipv4.ttl;
        hdr.mpls[1].label = bottom;
        hdr.mpls[1].tc = hdr.ipv4.diffserv[7:5];
        hdr.mpls[1].bos = 1;
        hdr.mpls[1].ttl = hdr.ipv4.ttl;
        hdr.eth.ether_type = ETHERTYPE_MPLS;
        meta.nhop = nhop;
    }
    action no_ftn() {
        drop_for(DROP_NO_FTN);
    }
    table ftn {
        key = { meta.fec : exact; }
        actions = { push_one; push_two; no_ftn; }
        const default_action = no_ftn();
        counters = ftn_stats;
        size = 65536;
    }

    // Incoming top label -> what to do with it (the label forwarding information base).
    action swap(label_t label, nhop_t nhop) {
        hdr.mpls[0].label = label;
        hdr.mpls[0].ttl = hdr.mpls[0].ttl - 1;
        meta.nhop = nhop;
    }
    // Swap, then push `push_label` on top (into a tunnel): both carry the decremented TTL.
    action swap_push(label_t label, label_t push_label, nhop_t nhop) {
        hdr.mpls[0].label = label;
        hdr.mpls[0].ttl = hdr.mpls[0].ttl - 1;
        meta.push = 1;
        meta.push_label = push_label;
        meta.nhop = nhop;
    }
    // Penultimate hop popping (the next hop advertised implicit null, label 3): pop the top
    // label and send what is under it (a label stack, or the IPv4 packet) to `nhop`.
    action php(nhop_t nhop) {
        meta.pop = 1;
        meta.nhop = nhop;
    }
    // The egress LER's own label, or explicit null (label 0): pop the bottom label and route
    // the IPv4 packet by `fec`.
    action pop_lookup() {
        meta.pop = 1;
        meta.ip_lookup = 1;
    }
    action unknown_label() {
        drop_for(DROP_UNKNOWN_LABEL);
    }
    table lfib {
        key = { hdr.mpls[0].label : exact; }
        actions = { swap; swap_push; php; pop_lookup; unknown_label; }
        const default_action = unknown_label();
        counters = lfib_stats;
        size = 65536;
    }

    // Next hop -> the frame's MAC addresses and egress port.
    action set_nexthop(mac_t smac, mac_t dmac, bit<9> port) {
        hdr.eth.src = smac;
        hdr.eth.dst = dmac;
        std.egress_spec = port;
    }
    action no_nexthop() {
        drop_for(DROP_NO_NEXTHOP);
    }
    table nexthop {
        key = { meta.nhop : exact; }
        actions = { set_nexthop; no_nexthop; }
        const default_action = no_nexthop();
        size = 4096;
    }

    apply {
        if (std.parser_error != error.NoError) {
            drop_for(DROP_MALFORMED);
            return;
        }
        if (!my_mac.apply().hit) {
            drop_for(DROP_NOT_FOR_US);
            return;
        }
        bool ip_in = false;
        if (hdr.mpls[0].isValid()) {
            // Labelled: the top label's TTL must survive this hop.
            if (hdr.mpls[0].ttl <= 1) {
                drop_for(DROP_TTL);
                return;
            }
            switch (lfib.apply().action_run) {
                unknown_label: { return; }
                default: { }
            }
            if (meta.push == 1) {
                if (hdr.mpls[MAX_LABELS - 1].isValid()) {
                    drop_for(DROP_STACK_FULL);
                    return;
                }
                hdr.mpls.push_front(1);
                hdr.mpls[0].setValid();
                hdr.mpls[0].label = meta.push_label;
                hdr.mpls[0].tc = hdr.mpls[1].tc;
                hdr.mpls[0].bos = 0;
                hdr.mpls[0].ttl = hdr.mpls[1].ttl;
            }
            if (meta.pop == 1) {
                bit<8> ttl = hdr.mpls[0].ttl - 1;
                if (hdr.mpls[0].bos == 1) {
                    hdr.mpls.pop_front(1);
                    if (!hdr.ipv4.isValid()) {
                        drop_for(DROP_BAD_POP);
                        return;
                    }
                    hdr.ipv4.ttl = ttl;
                    meta.ip_changed = 1;
                    hdr.eth.ether_type = ETHERTYPE_IPV4;
                } else {
                    if (meta.ip_lookup == 1) {
                        drop_for(DROP_BAD_POP);
                        return;
                    }
                    hdr.mpls.pop_front(1);
                    hdr.mpls[0].ttl = ttl;
                }
            }
        } else if (hdr.ipv4.isValid()) {
            // Unlabelled IPv4: this router is a hop of the IP path.
            if (hdr.ipv4.ttl <= 1) {
                drop_for(DROP_TTL);
                return;
            }
            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
            meta.ip_changed = 1;
            ip_in = true;
        } else {
            drop_for(DROP_ETHERTYPE);
            return;
        }
        if (ip_in || meta.ip_lookup == 1) {
            switch (fec.apply().action_run) {
                set_fec: {
                    if (!ftn.apply().hit) {
                        return;
                    }
                }
                no_route: { return; }
                default: { }
            }
        }
        nexthop.apply();
    }
}

control MplsEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control MplsComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid() && meta.ip_changed == 1,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

control MplsDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.mpls);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
    }
}

V1Switch(MplsParser(), MplsVerifyChecksum(), MplsIngress(), MplsEgress(),
         MplsComputeChecksum(), MplsDeparser()) main;
