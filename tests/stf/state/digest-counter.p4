// Pins down v1model digests and counters (checked in Rust: STF cannot observe them).
// Source: shared/reference/bmv2/simple_switch.md (after-ingress pseudocode: the digest is sent
// after the I2E clone and before the drop decision, so a dropped packet still sends its
// digest; "BMv2 direct_counter implementation notes"), STF.md §4 (counter_read reads what
// count() counted), BMv2 counters (packets, and bytes = the packet's length as received).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;  // bit 0: send a digest; bit 1: drop
    bit<8>  idx; // counter index / table key
    bit<16> val; // in the digest
}

struct headers_t {
    h_t h;
}

struct learn_t {
    bit<16> val;
    bit<9>  port;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t m) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    counter(4, CounterType.packets_and_bytes) c;
    direct_counter(CounterType.packets_and_bytes) dc;

    action hit() {
    }

    table t {
        key = {
            hdr.h.idx : exact;
        }
        actions = {
            hit;
            NoAction;
        }
        counters = dc;
        default_action = NoAction();
    }

    apply {
        c.count((bit<32>)hdr.h.idx);
        t.apply();
        if (hdr.h.op & 1 == 1) {
            digest<learn_t>(7, { hdr.h.val, sm.ingress_port });
        }
        if (hdr.h.op & 2 == 2) {
            mark_to_drop(sm);
        }
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
