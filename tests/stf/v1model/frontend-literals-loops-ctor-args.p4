// Pins down frontend features large programs rely on, end to end:
// - an int literal where a `type` (new type) over bit<W> is expected takes that type (P4-16
//   §7.6: `type` introduces a new type; p4c unifies an `int` with it in assignments,
//   initializers, arguments and return values): `port_t p = 2;`, `fwd(3)` in an entry;
// - `for (bit<8> i in 1 .. 3)` (literal range bounds take the loop variable's type) and
//   `for (bit<8> v in {10, 20, hdr.h.a})` (one iteration per list element, each element
//   evaluated before the first iteration; P4-16 §12.18 `for` statements);
// - enum members bound to a control's directionless constructor parameters, by argument and
//   by default value, and a local constant derived from one.
#include <core.p4>
#include <v1model.p4>

type bit<9> port_t;

header h_t {
    bit<8> a;     // input; also a list element of the list loop
    bit<8> range; // out: 1 + 2 + 3
    bit<8> list;  // out: 10 + 20 + (a before the loop clears it)
    bit<8> mode;  // out: what the Mode-parameterised controls wrote
}

struct headers_t {
    h_t h;
}

struct meta_t { }

enum Mode { Add, Set }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control Apply(inout bit<8> v)(Mode mode, bit<8> k = 5) {
    const Mode chosen = mode;
    apply {
        if (chosen == Mode.Add) {
            v = v + k;
        } else {
            v = k;
        }
    }
}

port_t port_of(in bit<8> a) {
    if (a == 0xFF) {
        return 4;
    }
    return 2;
}

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    Apply(Mode.Set, 40) set40;
    Apply(Mode.Add) add5;

    action fwd(port_t p) {
        sm.egress_spec = (bit<9>)p;
    }

    table t {
        key = { hdr.h.a: exact; }
        actions = { fwd; NoAction; }
        const entries = {
            0x01 : fwd(3);
        }
        default_action = NoAction();
    }

    apply {
        port_t p = port_of(hdr.h.a);
        sm.egress_spec = (bit<9>)p;
        t.apply();
        hdr.h.range = 0;
        for (bit<8> i in 1 .. 3) {
            hdr.h.range = hdr.h.range + i;
        }
        hdr.h.list = 0;
        for (bit<8> v in {10, 20, hdr.h.a}) {
            hdr.h.a = 0;
            hdr.h.list = hdr.h.list + v;
        }
        set40.apply(hdr.h.mode);
        add5.apply(hdr.h.mode);
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
