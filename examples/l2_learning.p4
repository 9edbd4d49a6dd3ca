// koi example: an Ethernet learning switch whose learning is done by a P4Runtime controller
// (examples/l2_learning/controller.py).
//
// - A frame whose source MAC the `smac` table does not know sends a digest (source MAC and
//   ingress port) to the controller, which installs the MAC in `smac` (with an idle timeout)
//   and in `dmac` (MAC -> port).
// - `dmac` forwards known destinations to their port; unknown ones are flooded through
//   multicast group 1 (the controller creates it with every port), never back out of the port
//   they came in on.
// - When a host falls silent, its `smac` entry's idle timeout expires; the controller is told
//   and removes the host from both tables, so that the MAC is learnt afresh.
// - Frames to the CPU port (255) reach the controller as PacketIn with a `packet_in` header
//   (the ingress port); PacketOut frames carry a `packet_out` header naming the egress port.
// Per-port direct counters on `dmac` count forwarded frames.
//
// Run: koi run examples/l2_learning.p4 --cpu-port 255 --port 1=veth1 --port 2=veth2 ...

#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;
const bit<16> FLOOD_GROUP = 1;

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

struct headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t eth;
}

struct learn_t {
    bit<48> src;
    bit<9> port;
}

struct meta_t {
    bit<9> ingress_port;
}

parser LearnParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
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
        transition accept;
    }
}

control LearnVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control LearnIngress(inout headers_t hdr, inout meta_t meta,
                     inout standard_metadata_t std) {
    direct_counter(CounterType.packets_and_bytes) forwarded;

    action learn() {
        digest<learn_t>(1, { hdr.eth.src, std.ingress_port });
    }
    action known() { }
    table smac {
        key = { hdr.eth.src : exact; }
        actions = { known; learn; }
        default_action = learn();
        support_timeout = true;
        size = 4096;
    }

    action forward(bit<9> port) {
        std.egress_spec = port;
        forwarded.count();
    }
    action flood() {
        std.mcast_grp = FLOOD_GROUP;
        forwarded.count();
    }
    action to_cpu() {
        std.egress_spec = CPU_PORT;
        forwarded.count();
    }
    table dmac {
        key = { hdr.eth.dst : exact; }
        actions = { forward; flood; to_cpu; }
        default_action = flood();
        counters = forwarded;
        size = 4096;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            return;
        }
        meta.ingress_port = std.ingress_port;
        smac.apply();
        dmac.apply();
    }
}

control LearnEgress(inout headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t std) {
    apply {
        // A flooded copy never goes back where the frame came from.
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

control LearnComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control LearnDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.eth);
    }
}

V1Switch(LearnParser(), LearnVerifyChecksum(), LearnIngress(), LearnEgress(),
         LearnComputeChecksum(), LearnDeparser()) main;
