// koi example: DDoS mitigation. The switch finds heavy hitters and SYN flooders per source
// IPv4 address in count-min sketches held in registers and reports them by digest; a
// P4Runtime controller (examples/ddos/controller.py) blocks them in `blocklist`. README.md
// beside this file tells the whole story.
//
// Per IPv4 packet, in order:
// - `blocklist` (source address): a blocked source's packets are dropped and counted (the
//   entry's direct counter); entries have an idle timeout, so a source is unblocked once it
//   has been quiet for that long.
// - Packets per source: a count-min sketch of 3 rows x 4096 cells (`cm_packets0..2`), each
//   row indexed by its own hash of the source address.
// - Half-open TCP connections per source: a pure SYN adds one in a second sketch
//   (`cm_half_open0..2`) and marks the connection (a hash of its 5-tuple) in `syn_pending`;
//   the client's first ACK on a marked connection takes the mark and the one back off. A
//   source whose SYNs never complete their handshakes keeps its count.
// - Counts are per interval of 2^EPOCH_SHIFT microseconds (20: 1.05 s) of the ingress
//   timestamp. Every cell carries the interval it counts in (its top 8 bits: 0x80 | the
//   interval's number mod 128); a cell from an earlier interval reads as 0. Nobody resets the
//   sketches: they start afresh every interval by themselves.
// - A source whose estimate reaches its threshold (`thresholds`, set by the operator) is
//   reported by digest `alarm_t` once per interval (`reported`, a cell per hash of the
//   source, holds the interval it was last reported in).
// The sketch updates are written without branches (masks from comparisons), so the only
// decision on state is whether to report: a cached flow's compiled program has two arms.
//
// Forwarding is plain Ethernet: `l2_fwd` (destination MAC -> port), else flooded through
// multicast group 1, never back out of the ingress port.

#include <core.p4>
#include <v1model.p4>

#ifndef EPOCH_SHIFT
#define EPOCH_SHIFT 20
#endif
#define SKETCH_CELLS 4096
#define PENDING_CELLS 65536
#define REPORTED_CELLS 65536

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> FLOOD_GROUP = 1;
const bit<8> REASON_PACKETS = 1;    // over the packets threshold
const bit<8> REASON_HALF_OPEN = 2;  // over the half-open connections threshold

header ethernet_t {
    bit<48> dst;
    bit<48> src;
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

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq;
    bit<32> ack;
    bit<4>  data_offset;
    bit<4>  reserved;
    bit<8>  flags;   // CWR ECE URG ACK PSH RST SYN FIN
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent;
}

struct headers_t {
    ethernet_t eth;
    ipv4_t     ipv4;
    tcp_t      tcp;
}

// Reported to the controller: a source over a threshold in this interval.
struct alarm_t {
    bit<32> src;
    bit<8>  reason;      // REASON_PACKETS | REASON_HALF_OPEN
    bit<32> packets;     // the source's packets so far this interval (estimate)
    bit<32> half_open;   // its half-open connections this interval (estimate)
}

struct meta_t {
    bit<9>  in_port;
    bit<24> packet_threshold;
    bit<24> half_open_threshold;
    bit<8>  tag;          // 0x80 | the interval's number mod 128
    bit<32> i0;
    bit<32> i1;
    bit<32> i2;
    bit<24> packets;
    bit<24> half_open;
    bit<8>  reason;
}

parser DdosParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, 6): parse_tcp;
            default: accept;
        }
    }
    state parse_tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }
}

control DdosVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

// All ones when `b` is 1, else 0.
#define MASK24(b) (24w0 - (bit<24>)(b))
// The smaller of two counts, without a branch.
#define MIN24(x, y) ((y) ^ (((x) ^ (y)) & MASK24((bit<1>)((x) < (y)))))

// Sketch cell `c` in the interval `tag`, plus `add` and minus `sub` (saturating): a cell of
// an earlier interval counts from 0.
bit<32> bump(in bit<32> c, in bit<8> tag, in bit<1> add, in bit<1> sub) {
    bit<24> n = c[23:0] & MASK24((bit<1>)(c[31:24] == tag));
    return tag ++ ((n |+| (bit<24>)add) |-| (bit<24>)sub);
}

control DdosIngress(inout headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t std) {
    register<bit<32>>(SKETCH_CELLS) cm_packets0;
    register<bit<32>>(SKETCH_CELLS) cm_packets1;
    register<bit<32>>(SKETCH_CELLS) cm_packets2;
    register<bit<32>>(SKETCH_CELLS) cm_half_open0;
    register<bit<32>>(SKETCH_CELLS) cm_half_open1;
    register<bit<32>>(SKETCH_CELLS) cm_half_open2;
    register<bit<8>>(PENDING_CELLS) syn_pending;
    register<bit<8>>(REPORTED_CELLS) reported;
    // Reports sent, by reason: 1 packets, 2 half-open connections, 3 both.
    counter(4, CounterType.packets) reports;
    direct_counter(CounterType.packets_and_bytes) blocked;

    action block() {
        blocked.count();
        mark_to_drop(std);
    }
    // Blocked sources (the controller's).
    table blocklist {
        key = { hdr.ipv4.src : exact @name("src"); }
        actions = { block; NoAction; }
        default_action = NoAction();
        counters = blocked;
        support_timeout = true;
        size = 16384;
    }

    action set_thresholds(bit<24> packets, bit<24> half_open) {
        meta.packet_threshold = packets;
        meta.half_open_threshold = half_open;
    }
    // Per source and interval: packets, half-open connections (`table_set_default`).
    table thresholds {
        key = { }
        actions = { set_thresholds; }
        default_action = set_thresholds(2000, 100);
    }

    action forward(bit<9> port) {
        std.egress_spec = port;
    }
    action flood() {
        std.mcast_grp = FLOOD_GROUP;
    }
    table l2_fwd {
        key = { hdr.eth.dst : exact @name("dst"); }
        actions = { forward; flood; }
        default_action = flood();
        size = 4096;
    }

    apply {
        meta.in_port = std.ingress_port;
        l2_fwd.apply();
        if (!hdr.ipv4.isValid()) {
            return;
        }
        if (blocklist.apply().hit) {
            return;
        }
        thresholds.apply();
        meta.tag = 8w0x80 | (bit<8>)((std.ingress_global_timestamp >> EPOCH_SHIFT)[6:0]);

        hash(meta.i0, HashAlgorithm.crc32, 32w0, { hdr.ipv4.src }, (bit<32>)SKETCH_CELLS);
        hash(meta.i1, HashAlgorithm.crc16, 32w0, { hdr.ipv4.src }, (bit<32>)SKETCH_CELLS);
        hash(meta.i2, HashAlgorithm.crc32, 32w0, { hdr.ipv4.src, 32w0x9e3779b9 },
             (bit<32>)SKETCH_CELLS);

        // Packets: every cell + 1; the estimate is the smallest.
        bit<32> c0;
        bit<32> c1;
        bit<32> c2;
        cm_packets0.read(c0, meta.i0);
        cm_packets1.read(c1, meta.i1);
        cm_packets2.read(c2, meta.i2);
        c0 = bump(c0, meta.tag, 1, 0);
        c1 = bump(c1, meta.tag, 1, 0);
        c2 = bump(c2, meta.tag, 1, 0);
        cm_packets0.write(meta.i0, c0);
        cm_packets1.write(meta.i1, c1);
        cm_packets2.write(meta.i2, c2);
        meta.packets = MIN24(MIN24(c0[23:0], c1[23:0]), c2[23:0]);

        // Half-open connections: + 1 for a pure SYN, - 1 for the ACK that completes a
        // handshake this interval saw begin.
        bit<1> syn = 0;
        bit<1> done = 0;
        if (hdr.tcp.isValid()) {
            bit<32> ic;
            hash(ic, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.src, hdr.ipv4.dst, hdr.tcp.src_port, hdr.tcp.dst_port },
                 (bit<32>)PENDING_CELLS);
            bit<8> pending;
            syn_pending.read(pending, ic);
            // Flags: SYN without ACK (and without RST), or ACK without SYN and RST.
            syn = (bit<1>)((hdr.tcp.flags & 0x16) == 0x02);
            bit<1> ack = (bit<1>)((hdr.tcp.flags & 0x16) == 0x10);
            done = ack & (bit<1>)(pending == meta.tag);
            // A SYN marks the connection, the completing ACK clears it, else it stays.
            bit<8> keep = 8w0 - (bit<8>)(~syn & ~done);
            syn_pending.write(ic, (pending & keep) | (meta.tag & (8w0 - (bit<8>)syn)));
        }
        cm_half_open0.read(c0, meta.i0);
        cm_half_open1.read(c1, meta.i1);
        cm_half_open2.read(c2, meta.i2);
        c0 = bump(c0, meta.tag, syn, done);
        c1 = bump(c1, meta.tag, syn, done);
        c2 = bump(c2, meta.tag, syn, done);
        cm_half_open0.write(meta.i0, c0);
        cm_half_open1.write(meta.i1, c1);
        cm_half_open2.write(meta.i2, c2);
        meta.half_open = MIN24(MIN24(c0[23:0], c1[23:0]), c2[23:0]);

        // Over a threshold and not yet reported this interval: report (once).
        bit<8> over_packets = (bit<8>)(bit<1>)(meta.packets >= meta.packet_threshold);
        bit<8> over_half_open =
            (bit<8>)(bit<1>)(meta.half_open >= meta.half_open_threshold) << 1;
        bit<32> ir;
        hash(ir, HashAlgorithm.crc32, 32w0, { hdr.ipv4.src, 32w0x85ebca6b },
             (bit<32>)REPORTED_CELLS);
        bit<8> last;
        reported.read(last, ir);
        meta.reason = (over_packets | over_half_open)
                      & (8w0 - (bit<8>)(bit<1>)(last != meta.tag));
        bit<8> report = 8w0 - (bit<8>)(bit<1>)(meta.reason != 0);
        reported.write(ir, (last & ~report) | (meta.tag & report));
        if (meta.reason != 0) {
            reports.count((bit<32>)meta.reason);
            digest<alarm_t>(1, { hdr.ipv4.src, meta.reason, (bit<32>)meta.packets,
                                 (bit<32>)meta.half_open });
        }
    }
}

control DdosEgress(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    apply {
        // A flooded copy never goes back where the frame came from.
        if (std.mcast_grp != 0 && std.egress_port == meta.in_port) {
            mark_to_drop(std);
        }
    }
}

control DdosComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control DdosDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
    }
}

V1Switch(DdosParser(), DdosVerifyChecksum(), DdosIngress(), DdosEgress(),
         DdosComputeChecksum(), DdosDeparser()) main;
