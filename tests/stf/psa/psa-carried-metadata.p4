// The metadata PSA carries from block to block on each packet path: resubmit_meta to the
// resubmitted pass's ingress parser, recirculate_meta to the recirculated pass's, normal_meta
// to the egress parser of a unicast copy, clone_i2e_meta and clone_e2e_meta to the egress
// parser of a clone; psa_resubmit, psa_normal, psa_clone_i2e, psa_clone_e2e and
// psa_recirculate tell the deparsers which path a packet takes. A packet whose ingress
// neither sends nor multicasts it is dropped (ostd.drop starts true).
//
// h.op: 1 resubmit once, 2 recirculate once, 3 ingress clone to session 5, 4 egress clone to
// session 6, 0 nothing; h.port: where to send. The parsers write what they received into
// h.a (resubmit), h.b (recirculate), h.c (egress: normal, I2E or E2E metadata).
#include <core.p4>
#include <psa.p4>

header h_t {
    bit<8>  op;
    bit<8>  a;
    bit<8>  b;
    bit<8>  c;
    bit<32> port;
}
struct headers_t { h_t h; }
struct meta_t { bit<8> x; }
struct resub_t { bit<8> v; }
struct recirc_t { bit<8> v; }
struct normal_t { bit<8> v; }
struct ci2e_t { bit<8> v; }
struct ce2e_t { bit<8> v; }

parser IP(packet_in pkt, out headers_t hdr, inout meta_t m,
          in psa_ingress_parser_input_metadata_t istd,
          in resub_t resubmit_meta, in recirc_t recirculate_meta) {
    state start {
        pkt.extract(hdr.h);
        transition select(istd.packet_path == PSA_PacketPath_t.RESUBMIT,
                          istd.packet_path == PSA_PacketPath_t.RECIRCULATE) {
            (true, false): resubmitted;
            (false, true): recirculated;
            default: accept;
        }
    }
    state resubmitted {
        hdr.h.a = resubmit_meta.v;
        transition accept;
    }
    state recirculated {
        hdr.h.b = recirculate_meta.v;
        transition accept;
    }
}

control Ig(inout headers_t hdr, inout meta_t m,
           in psa_ingress_input_metadata_t istd,
           inout psa_ingress_output_metadata_t ostd) {
    apply {
        if (hdr.h.op == 0) {
            return;
        }
        if (hdr.h.op == 1 && istd.packet_path != PSA_PacketPath_t.RESUBMIT) {
            ostd.drop = false;
            ostd.resubmit = true;
        } else if (hdr.h.op == 2 && istd.packet_path != PSA_PacketPath_t.RECIRCULATE) {
            send_to_port(ostd, PSA_PORT_RECIRCULATE);
        } else {
            send_to_port(ostd, (PortId_t) hdr.h.port);
            if (hdr.h.op == 3) {
                ostd.clone = true;
                ostd.clone_session_id = (CloneSessionId_t) 5;
            }
        }
    }
}

control ID(packet_out pkt, out ci2e_t clone_i2e_meta, out resub_t resubmit_meta,
           out normal_t normal_meta, inout headers_t hdr, in meta_t m,
           in psa_ingress_output_metadata_t istd) {
    apply {
        if (psa_clone_i2e(istd)) {
            clone_i2e_meta.v = 0x77;
        }
        if (psa_resubmit(istd)) {
            resubmit_meta.v = 0x55;
        }
        if (psa_normal(istd)) {
            normal_meta.v = 0x66;
        }
        pkt.emit(hdr.h);
    }
}

parser EP(packet_in pkt, out headers_t hdr, inout meta_t m,
          in psa_egress_parser_input_metadata_t istd, in normal_t normal_meta,
          in ci2e_t clone_i2e_meta, in ce2e_t clone_e2e_meta) {
    state start {
        pkt.extract(hdr.h);
        transition select(istd.packet_path == PSA_PacketPath_t.CLONE_I2E,
                          istd.packet_path == PSA_PacketPath_t.CLONE_E2E) {
            (true, false): i2e;
            (false, true): e2e;
            default: normal;
        }
    }
    state normal {
        hdr.h.c = normal_meta.v;
        transition accept;
    }
    state i2e {
        hdr.h.c = clone_i2e_meta.v;
        transition accept;
    }
    state e2e {
        hdr.h.c = clone_e2e_meta.v;
        transition accept;
    }
}

control Eg(inout headers_t hdr, inout meta_t m,
           in psa_egress_input_metadata_t istd,
           inout psa_egress_output_metadata_t ostd) {
    apply {
        if (hdr.h.op == 4 && istd.packet_path != PSA_PacketPath_t.CLONE_E2E) {
            ostd.clone = true;
            ostd.clone_session_id = (CloneSessionId_t) 6;
        }
    }
}

control ED(packet_out pkt, out ce2e_t clone_e2e_meta, out recirc_t recirculate_meta,
           inout headers_t hdr, in meta_t m, in psa_egress_output_metadata_t istd,
           in psa_egress_deparser_input_metadata_t edstd) {
    apply {
        if (psa_clone_e2e(istd)) {
            clone_e2e_meta.v = 0x88;
        }
        if (psa_recirculate(istd, edstd)) {
            recirculate_meta.v = 0x99;
        }
        pkt.emit(hdr.h);
    }
}

IngressPipeline(IP(), Ig(), ID()) ip;
EgressPipeline(EP(), Eg(), ED()) ep;
PSA_Switch(ip, PacketReplicationEngine(), ep, BufferingQueueingEngine()) main;
