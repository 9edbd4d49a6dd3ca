// SPDX-License-Identifier: Apache-2.0
//
// An Ethernet switch in PSA: a destination MAC table that forwards to a port, floods to a
// multicast group or drops (the default: PSA drops what ingress does not send), a
// per-ingress-port packet and byte counter, a register of packets seen per ingress port, and
// a per-egress-port counter. Entries: psa_l2.entries.
#include <core.p4>
#include <psa.p4>

typedef bit<48> mac_t;

header ethernet_t {
    mac_t   dst;
    mac_t   src;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t eth;
}

struct meta_t { }
struct empty_t { }

parser IngressParserImpl(packet_in pkt, out headers_t hdr, inout meta_t m,
                         in psa_ingress_parser_input_metadata_t istd,
                         in empty_t resubmit_meta, in empty_t recirculate_meta) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control ingress(inout headers_t hdr, inout meta_t m,
                in psa_ingress_input_metadata_t istd,
                inout psa_ingress_output_metadata_t ostd) {
    Counter<bit<64>, PortIdUint_t>(16, PSA_CounterType_t.PACKETS_AND_BYTES) rx;
    Register<bit<32>, PortIdUint_t>(16) seen;

    action forward(PortId_t port) {
        send_to_port(ostd, port);
    }
    action flood(MulticastGroup_t group) {
        multicast(ostd, group);
    }
    action drop() {
        ingress_drop(ostd);
    }
    table dmac {
        key = { hdr.eth.dst : exact; }
        actions = { forward; flood; drop; }
        default_action = drop();
        size = 1024;
    }

    apply {
        PortIdUint_t port = (PortIdUint_t) istd.ingress_port;
        rx.count(port);
        seen.write(port, seen.read(port) + 1);
        if (hdr.eth.isValid()) {
            dmac.apply();
        }
    }
}

control IngressDeparserImpl(packet_out pkt, out empty_t clone_i2e_meta,
                            out empty_t resubmit_meta, out empty_t normal_meta,
                            inout headers_t hdr, in meta_t m,
                            in psa_ingress_output_metadata_t istd) {
    apply {
        pkt.emit(hdr.eth);
    }
}

parser EgressParserImpl(packet_in pkt, out headers_t hdr, inout meta_t m,
                        in psa_egress_parser_input_metadata_t istd, in empty_t normal_meta,
                        in empty_t clone_i2e_meta, in empty_t clone_e2e_meta) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control egress(inout headers_t hdr, inout meta_t m,
               in psa_egress_input_metadata_t istd,
               inout psa_egress_output_metadata_t ostd) {
    Counter<bit<64>, PortIdUint_t>(16, PSA_CounterType_t.PACKETS) tx;

    apply {
        tx.count((PortIdUint_t) istd.egress_port);
    }
}

control EgressDeparserImpl(packet_out pkt, out empty_t clone_e2e_meta,
                           out empty_t recirculate_meta, inout headers_t hdr, in meta_t m,
                           in psa_egress_output_metadata_t istd,
                           in psa_egress_deparser_input_metadata_t edstd) {
    apply {
        pkt.emit(hdr.eth);
    }
}

IngressPipeline(IngressParserImpl(), ingress(), IngressDeparserImpl()) ip;
EgressPipeline(EgressParserImpl(), egress(), EgressDeparserImpl()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
