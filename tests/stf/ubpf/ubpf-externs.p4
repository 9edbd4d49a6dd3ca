// Pins down uBPF externs and pass/drop: `output_port` chooses the output port (0 by default),
// `mark_to_drop` drops, a later `mark_to_pass` cancels it, `Register` keeps state across
// packets (read of an unwritten index gives 0; dropped packets still run the pipeline), and
// `csum_replace2` updates an Internet checksum incrementally (RFC 1624 eqn. 3).
// Source: STF.md §7 (uBPF: output on std_meta.output_port initialised to 0; drop after
// mark_to_drop); p4c's ubpf_model.p4 and backends/ubpf/runtime/ubpf_common.h (csum_replace2 =
// ~csum16_add(csum16_sub(~csum, old), new)); RFC 1624. The expected checksums in the STF file
// are full RFC 1071 recomputations of the modified header, not incremental ones.
#include <core.p4>
#include <ubpf_model.p4>

header h_t {
    bit<8>  op;   // 1: drop; 2: drop then pass; 3: decrement ip.ttl and fix the checksum
    bit<8>  port; // output_port
    bit<32> cnt;  // packets seen so far, this one included (register cell 0)
}

header ipv4_t {
    bit<8>  version_ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<16> flags_frag;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> csum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    h_t    h;
    ipv4_t ip;
}

struct metadata_t { }

parser prs(packet_in p, out headers_t hdr, inout metadata_t meta, inout standard_metadata std) {
    state start {
        p.extract(hdr.h);
        transition select(hdr.h.op) {
            3: parse_ip;
            default: accept;
        }
    }
    state parse_ip {
        p.extract(hdr.ip);
        transition accept;
    }
}

control pipe(inout headers_t hdr, inout metadata_t meta, inout standard_metadata std) {
    Register<bit<32>, bit<32>>(4) r;

    apply {
        if (hdr.h.port != 0) {
            std.output_port = (bit<32>)hdr.h.port;
        }
        bit<32> c = r.read(0);
        c = c + 1;
        r.write(0, c);
        hdr.h.cnt = c;
        if (hdr.h.op == 1) {
            mark_to_drop();
        } else if (hdr.h.op == 2) {
            mark_to_drop();
            mark_to_pass();
        } else if (hdr.h.op == 3) {
            bit<16> old = hdr.ip.ttl ++ hdr.ip.protocol;
            hdr.ip.ttl = hdr.ip.ttl - 1;
            hdr.ip.csum = csum_replace2(hdr.ip.csum, old, hdr.ip.ttl ++ hdr.ip.protocol);
        }
    }
}

control dprs(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.h);
        packet.emit(hdr.ip);
    }
}

ubpf(prs(), pipe(), dprs()) main;
