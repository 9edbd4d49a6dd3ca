// An ebpfFilter program's verdicts: an accepted packet leaves unchanged on the port it came
// in on, even when the filter changed its headers (the model has no deparser); a packet the
// filter does not accept, or the parser rejects, is dropped.
#include <core.p4>
#include <ebpf_model.p4>

header h_t {
    bit<8> verdict;
    bit<8> scratch;
}
struct headers_t { h_t h; }

parser prs(packet_in p, out headers_t hdr) {
    state start {
        p.extract(hdr.h);
        transition select(hdr.h.verdict) {
            0xff: reject;
            default: accept;
        }
    }
}

control pipe(inout headers_t hdr, out bool pass) {
    CounterArray(32w4, false) seen;
    apply {
        seen.increment((bit<32>) hdr.h.verdict);
        hdr.h.scratch = 0xee;
        pass = hdr.h.verdict == 1;
    }
}

ebpfFilter(prs(), pipe()) main;
