// Pins down stacks of header unions (P4-16 §8.20: `U[N] u`, `u.next`, `u.last`,
// `u.lastIndex`, `u[i]` with a run-time index, `push_front`, `pop_front`):
// - the parser extracts elements of either member through `u.next.a` / `u.next.b`; each
//   extract advances the stack's next index, and `u.last` names the element just extracted;
// - an extract past the last element fails with `error.StackOutOfBounds`: ingress still runs
//   with the headers extracted before it, and the rest of the packet follows as payload;
// - `lastIndex` is the next index minus one (0xFFFFFFFF for an empty stack);
// - in ingress, `u[i]` with `i` read from the packet selects an element at run time: writes
//   to an element past the end are lost, and reading one gives an invalid union (koi's rule
//   for out-of-range stack indices, see koi-ir's `expr` module doc);
// - `setValid` on a member invalidates the union's other member; `pop_front` and
//   `push_front` shift whole unions;
// - a run-time element in a `select` key (`u.last`) and in an `if` condition (`u[i]`).
#include <core.p4>
#include <v1model.p4>

header tag_t {
    bit<8> op;    // what ingress does (see the control)
    bit<8> idx;   // the run-time index ingress uses
    bit<8> err;   // 1 if the parser failed with StackOutOfBounds, 2 for another error
    bit<8> last;  // the parser writes lastIndex here once the element list ends
}

header a_t {
    bit<8> t;     // 0x0A
    bit<8> data;
}

header b_t {
    bit<8> t;     // 0x0B
    bit<16> data;
}

header_union u_t {
    a_t a;
    b_t b;
}

struct headers_t {
    tag_t tag;
    u_t[2] u;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.tag);
        transition next_elem;
    }
    state next_elem {
        transition select(pkt.lookahead<bit<8>>()) {
            0x0A: elem_a;
            0x0B: elem_b;
            default: done;
        }
    }
    state elem_a {
        pkt.extract(hdr.u.next.a);
        hdr.u[hdr.u.lastIndex].a.data = hdr.u.last.a.data + 1;  // last itself is never an l-value
        transition select(hdr.u.last.a.data) {
            0x42: done;
            default: next_elem;
        }
    }
    state elem_b {
        pkt.extract(hdr.u.next.b);
        hdr.u[hdr.u.lastIndex].b.data = hdr.u.last.b.data + 1;
        transition next_elem;
    }
    state done {
        hdr.tag.last = (bit<8>) hdr.u.lastIndex;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.tag.err = 1;
        } else if (sm.parser_error != error.NoError) {
            hdr.tag.err = 2;
        }
        if (hdr.tag.op == 1) {
            hdr.u[hdr.tag.idx].b.setValid();
            hdr.u[hdr.tag.idx].b.t = 0x0B;
            hdr.u[hdr.tag.idx].b.data = 0x1234;
        } else if (hdr.tag.op == 2) {
            hdr.tag.err = hdr.u[hdr.tag.idx].a.data;
        } else if (hdr.tag.op == 3) {
            hdr.u.pop_front(1);
        } else if (hdr.tag.op == 4) {
            hdr.u.push_front(1);
            hdr.u[0].a.setValid();
            hdr.u[0].a.t = 0x0A;
            hdr.u[0].a.data = 0x77;
        } else if (hdr.tag.op == 5) {
            hdr.u[1] = hdr.u[hdr.tag.idx];
        } else if (hdr.tag.op == 6) {
            if (hdr.u[hdr.tag.idx].b.isValid()) {
                hdr.tag.err = 0xBB;
            } else {
                hdr.tag.err = 0xAA;
            }
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
        pkt.emit(hdr.tag);
        pkt.emit(hdr.u);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
