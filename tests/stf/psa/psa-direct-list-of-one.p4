// A table's direct meter and direct counter named as lists of one instance
// (`psa_direct_meter = { dm };`, the form p4c's eBPF PSA programs use) behave as the bare
// instances do (psa-direct-meter-counter.p4): the entry's meter colours its packets, GREEN
// while unconfigured, then GREEN and RED with bursts of one packet.
#include <core.p4>
#include <psa.p4>

header h_t {
    bit<8>  key;
    bit<8>  color;
}
struct headers_t { h_t h; }
struct empty_t { }

parser IP(packet_in pkt, out headers_t hdr, inout empty_t m,
          in psa_ingress_parser_input_metadata_t istd, in empty_t r, in empty_t c) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control Ig(inout headers_t hdr, inout empty_t m,
           in psa_ingress_input_metadata_t istd,
           inout psa_ingress_output_metadata_t ostd) {
    DirectMeter(PSA_MeterType_t.PACKETS) dm;
    DirectCounter<bit<32>>(PSA_CounterType_t.PACKETS) dc;
    action metered() {
        PSA_MeterColor_t c = dm.execute();
        if (c == PSA_MeterColor_t.RED) {
            hdr.h.color = 0xee;
        } else if (c == PSA_MeterColor_t.GREEN) {
            hdr.h.color = 0x99;
        } else {
            hdr.h.color = 0x77;
        }
        dc.count();
    }
    table t {
        key = { hdr.h.key : exact; }
        actions = { metered; NoAction; }
        psa_direct_meter = { dm };
        psa_direct_counter = { dc };
    }
    apply {
        t.apply();
        send_to_port(ostd, (PortId_t) 1);
    }
}

control ID(packet_out pkt, out empty_t a, out empty_t b, out empty_t c, inout headers_t hdr,
           in empty_t m, in psa_ingress_output_metadata_t istd) {
    apply { pkt.emit(hdr.h); }
}

parser EP(packet_in pkt, out headers_t hdr, inout empty_t m,
          in psa_egress_parser_input_metadata_t istd, in empty_t n, in empty_t a, in empty_t b) {
    state start { transition accept; }
}

control Eg(inout headers_t hdr, inout empty_t m, in psa_egress_input_metadata_t istd,
           inout psa_egress_output_metadata_t ostd) {
    apply { }
}

control ED(packet_out pkt, out empty_t a, out empty_t b, inout headers_t hdr, in empty_t m,
           in psa_egress_output_metadata_t istd, in psa_egress_deparser_input_metadata_t e) {
    apply { }
}

IngressPipeline(IP(), Ig(), ID()) ip;
EgressPipeline(EP(), Eg(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
