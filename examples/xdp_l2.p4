// SPDX-License-Identifier: Apache-2.0
//
// An Ethernet forwarder in p4c's XDP model (xdp_model.p4): a destination MAC table redirects
// to a port (XDP_REDIRECT) or drops (XDP_DROP); frames to an unknown destination go to the
// host (XDP_PASS: koi has no host stack, so they leave on their input port). A frame that
// is too short for its Ethernet header is dropped by the parser. Entries: xdp_l2.entries.
#include <core.p4>
#include <xdp_model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t eth;
}

parser prs(packet_in pkt, out headers_t hdr) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control sw(inout headers_t hdr, in xdp_input imd, out xdp_output omd) {
    action redirect(bit<32> port) {
        omd.output_action = xdp_action.XDP_REDIRECT;
        omd.output_port = port;
    }
    action drop() {
        omd.output_action = xdp_action.XDP_DROP;
    }
    action to_host() {
        omd.output_action = xdp_action.XDP_PASS;
    }
    table dmac {
        key = { hdr.eth.dst : exact; }
        actions = { redirect; drop; to_host; }
        default_action = to_host();
        size = 1024;
    }
    apply {
        dmac.apply();
    }
}

control deprs(in headers_t hdr, packet_out pkt) {
    apply {
        pkt.emit(hdr.eth);
    }
}

xdp(prs(), sw(), deprs()) main;
