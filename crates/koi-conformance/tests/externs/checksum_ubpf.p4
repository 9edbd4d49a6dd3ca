// A uBPF program calling the two functions of extern_modules/extern-checksum-ubpf.c in p4c's
// corpus, written as that file documents them (koi's extern ABI tests): a header by value,
// scalars by value, bool and bit<16> results.
#include <core.p4>
#define UBPF_MODEL_VERSION 20200515
#include <ubpf_model.p4>
header IPv4_h {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header res_h { bit<8> ok; bit<16> csum; }
struct Headers_t { IPv4_h ipv4; res_h r; }
struct metadata { }
extern bool verify_ipv4_checksum(in IPv4_h iphdr);
extern bit<16> incremental_checksum(in bit<16> csum, in bit<32> old, in bit<32> new);
parser prs(packet_in p, out Headers_t headers, inout metadata meta, inout standard_metadata std_meta) {
    state start { p.extract(headers.ipv4); p.extract(headers.r); transition accept; }
}
control pipe(inout Headers_t headers, inout metadata meta, inout standard_metadata std_meta) {
    apply {
        if (verify_ipv4_checksum(headers.ipv4)) { headers.r.ok = 1; } else { headers.r.ok = 0; }
        headers.r.csum = incremental_checksum(headers.ipv4.hdrChecksum, headers.ipv4.dstAddr, 32w0x0a000001);
    }
}
control dprs(packet_out packet, in Headers_t headers) { apply { packet.emit(headers.ipv4); packet.emit(headers.r); } }
ubpf(prs(), pipe(), dprs()) main;
