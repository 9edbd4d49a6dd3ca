// Pins down uBPF `hash(result, HashAlgorithm.lookup3, data)`: p4c's uBPF back end copies the
// data into a C struct of host-order (little-endian) integers and calls
// ubpf_hash(&key, sizeof(key)) = hashlittle(&key, sizeof(key), 0) (Bob Jenkins' lookup3).
// Source: p4c backends/ubpf/ubpfControl.cpp (createHashKeyInstance, ubpf_hash call) and
// backends/ubpf/runtime (ubpf_hash -> hashlittle with initval 0); header fields are in host
// order after the parser. The expected values in the STF file were computed with an
// independent Python implementation of hashlittle, checked against lookup3.c's own test
// vector (hashlittle("Four score and seven years ago", 30, 0) = 0x17770551). Only layouts
// without padding are used: { bit<32> } (4 bytes) and { bit<16>, bit<16> } (4 bytes).
#include <core.p4>
#include <ubpf_model.p4>

header h_t {
    bit<32> x;
    bit<16> p;
    bit<16> q;
    bit<32> hx;  // hash of { x }
    bit<32> hpq; // hash of { p, q }
}

struct headers_t {
    h_t h;
}

struct metadata_t { }

parser prs(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata std) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control pipe(inout headers_t hdr, inout metadata_t meta, inout standard_metadata std) {
    apply {
        hash(hdr.h.hx, HashAlgorithm.lookup3, { hdr.h.x });
        hash(hdr.h.hpq, HashAlgorithm.lookup3, { hdr.h.p, hdr.h.q });
    }
}

control dprs(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.h);
    }
}

ubpf(prs(), pipe(), dprs()) main;
