// Pins down `verify(check, e)` with an error `e` computed at run time: a failed check sets
// `parser_error` to the value of `e` (one of the program's errors or a core one) and ends the
// parse; v1model's ingress still runs, with the headers extracted before it. A failed check
// with `error.NoMatch` reports NoMatch (BMv2's verify op raises the error it is given; only a
// select without a matching case accepts with no error under v1model).
#include <core.p4>
#include <v1model.p4>

error { BadKind, BadLength }

header h_t {
    bit<8> kind;
    bit<8> len;     // the check: len < 10
    bit<8> result;  // ingress: 0 no error, 1 BadKind, 2 BadLength, 3 NoMatch, 0xFF other
}

struct headers_t {
    h_t h;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        error e = hdr.h.kind == 1 ? error.BadKind
                : (hdr.h.kind == 2 ? error.BadLength : error.NoMatch);
        verify(hdr.h.len < 10, e);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoError) {
            hdr.h.result = 0;
        } else if (sm.parser_error == error.BadKind) {
            hdr.h.result = 1;
        } else if (sm.parser_error == error.BadLength) {
            hdr.h.result = 2;
        } else if (sm.parser_error == error.NoMatch) {
            hdr.h.result = 3;
        } else {
            hdr.h.result = 0xFF;
        }
        sm.egress_spec = 1;
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { }
}

control CC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
