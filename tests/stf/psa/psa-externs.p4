// PSA's Hash (get_hash(base, data, max)), InternetChecksum (add, subtract, get, get_state,
// set_state), Checksum (CRC16 over the data given since clear) and Random (a range of one
// value), with values known from their definitions.
#include <core.p4>
#include <psa.p4>

header h_t {
    bit<16> w0;
    bit<16> w1;
    bit<16> hash;
    bit<16> sum;
    bit<16> state;
    bit<16> cleared;
    bit<16> crc;
    bit<8>  rnd;
}
header s_t { bit<72> digits; }
struct headers_t { h_t h; s_t s; }
struct empty_t { }

parser IP(packet_in pkt, out headers_t hdr, inout empty_t m,
          in psa_ingress_parser_input_metadata_t istd, in empty_t r, in empty_t c) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.s);
        transition accept;
    }
}

control Ig(inout headers_t hdr, inout empty_t m,
           in psa_ingress_input_metadata_t istd,
           inout psa_ingress_output_metadata_t ostd) {
    Hash<bit<16>>(PSA_HashAlgorithm_t.IDENTITY) id;
    InternetChecksum() ck;
    Checksum<bit<16>>(PSA_HashAlgorithm_t.CRC16) crc;
    Random<bit<8>>(8w5, 8w5) rnd;
    apply {
        // 10 + (0x1234 % 0x100)
        hdr.h.hash = id.get_hash(16w10, { hdr.h.w0 }, 16w0x100);
        ck.clear();
        ck.add({ hdr.h.w0, hdr.h.w1 });
        hdr.h.sum = ck.get();
        ck.subtract({ hdr.h.w1 });
        hdr.h.state = ck.get_state();
        ck.set_state(16w0xffff);
        hdr.h.cleared = ck.get();
        crc.clear();
        crc.update({ hdr.s.digits });
        hdr.h.crc = crc.get();
        hdr.h.rnd = rnd.read();
        send_to_port(ostd, (PortId_t) 1);
    }
}

control ID(packet_out pkt, out empty_t a, out empty_t b, out empty_t c, inout headers_t hdr,
           in empty_t m, in psa_ingress_output_metadata_t istd) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.s); }
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
