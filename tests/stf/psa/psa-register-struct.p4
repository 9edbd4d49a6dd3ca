// PSA Register<T, I> of a struct T: read returns the struct (koi keeps a cell packed, fields
// in order, and unpacks what read returns); write stores one; cells start at zero.
#include <core.p4>
#include <psa.p4>

header h_t {
    bit<8>  index;
    bit<16> a;
    bit<8>  b;
}
struct pair_t {
    bit<16> a;
    bit<8>  b;
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
    Register<pair_t, bit<8>>(4) r;
    apply {
        pair_t v = r.read(hdr.h.index);
        hdr.h.a = v.a;
        hdr.h.b = v.b;
        v.a = v.a + 1;
        v.b = v.b + 2;
        r.write(hdr.h.index, v);
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
