// Pins down v1model meters: `meter.execute_meter` (packets) and `direct_meter.read` (bytes),
// colours over time as an RFC 2698 two-rate three-colour marker computes them.
// Source: shared/reference/bmv2/simple_switch.md ("BMv2 direct_meter implementation notes"),
// STF.md §4 (meter_set_rates / meter_array_set_rates "rates use the CLI's units (per
// microsecond)"), RFC 2698 (colour-blind mode: a packet of B tokens is red if the peak bucket
// has fewer than B tokens; else it takes B peak tokens and is yellow if the committed bucket has
// fewer than B tokens; else green, taking B from both; buckets start full and refill at their
// rate up to their burst), BMv2's src/bm_sim/meters.cpp (whole tokens only: floor(elapsed
// microseconds * rate); unconfigured meters mark green; colours GREEN 0, YELLOW 1, RED 2 as in
// v1model.p4). The time base is koi's STF runner: packet k of the file (from 0) is processed at
// k microseconds (PACKET_GAP_NS = 1000 in crates/koi-conformance/src/stf.rs).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> kind;  // 0x10 + i: indirect meter m, index i; 1, 2: table t (direct meter dm)
    bit<8> color; // the colour written by the meter (the packet comes in with FF)
}

struct headers_t {
    h_t h;
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
    meter(2, MeterType.packets) pm;
    direct_meter<bit<8>>(MeterType.bytes) dm;

    action dread() {
        dm.read(hdr.h.color);
    }

    table t {
        key = {
            hdr.h.kind : exact;
        }
        actions = {
            dread;
        }
        meters = dm;
        size = 4;
    }

    apply {
        if (hdr.h.kind >= 0x10) {
            pm.execute_meter((bit<32>)(hdr.h.kind - 0x10), hdr.h.color);
        } else {
            t.apply();
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
