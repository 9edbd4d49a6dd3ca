// An xdp program's output actions: XDP_REDIRECT leaves on omd.output_port, XDP_TX and
// XDP_PASS on the input port, XDP_DROP and XDP_ABORTED drop; the deparser's headers replace
// the parsed ones, the rest of the packet follows.
#include <core.p4>
#include <xdp_model.p4>

header h_t {
    bit<8>  action_code;
    bit<8>  port;
    bit<16> csum;
}
struct headers_t { h_t h; }

parser prs(packet_in p, out headers_t hdr) {
    state start {
        p.extract(hdr.h);
        transition accept;
    }
}

control sw(inout headers_t hdr, in xdp_input imd, out xdp_output omd) {
    apply {
        hdr.h.csum = csum_replace2(hdr.h.csum, 16w0, 16w1);
        omd.output_port = (bit<32>) hdr.h.port;
        if (hdr.h.action_code == 0) {
            omd.output_action = xdp_action.XDP_ABORTED;
        } else if (hdr.h.action_code == 1) {
            omd.output_action = xdp_action.XDP_DROP;
        } else if (hdr.h.action_code == 2) {
            omd.output_action = xdp_action.XDP_PASS;
        } else if (hdr.h.action_code == 3) {
            omd.output_action = xdp_action.XDP_TX;
        } else {
            omd.output_action = xdp_action.XDP_REDIRECT;
        }
    }
}

control deprs(in headers_t hdr, packet_out packet) {
    apply {
        packet.emit(hdr.h);
    }
}

xdp(prs(), sw(), deprs()) main;
