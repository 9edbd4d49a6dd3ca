// A hash or checksum over a data list leaves the fields of an invalid header out (BMv2's
// BufBuilder skips them), also when the list is written out item by item: `{ hdr.b.x,
// hdr.c.x }` with `b` never extracted hashes `c.x` alone.
#include <core.p4>
#include <v1model.p4>

header byte_t { bit<8> x; }
header out_t { bit<32> skipped; bit<32> both; bit<16> sum; }
struct headers_t { byte_t a; byte_t b; byte_t c; out_t res; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.a); pkt.extract(hdr.c); transition accept; }
}
control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t std) {
    apply {
        hdr.res.setValid();
        hash(hdr.res.skipped, HashAlgorithm.crc32, 32w0, { hdr.b.x, hdr.c.x }, 64w0x100000000);
        hash(hdr.res.both, HashAlgorithm.crc32, 32w0, { hdr.a.x, hdr.c.x }, 64w0x100000000);
        std.egress_spec = 0;
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t std) { apply { } }
control C(inout headers_t hdr, inout meta_t m) {
    apply {
        // The Internet checksum of b (invalid, left out) and c: c's byte as the high byte.
        update_checksum(true, { hdr.b.x, hdr.c.x }, hdr.res.sum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.a); pkt.emit(hdr.c); pkt.emit(hdr.res); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
