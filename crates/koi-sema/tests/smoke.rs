//! First end-to-end checks: a complete v1model program.
mod common;

#[test]
fn v1model_program_checks() {
    common::ok(
        r#"
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
struct headers { ethernet_t ethernet; }
struct metadata { bit<8> m; }
parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x800: accept;
            default: reject;
        }
    }
}
control MyVerify(inout headers hdr, inout metadata meta) { apply { } }
control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.ethernet.dst: exact; }
        actions = { drop; fwd; NoAction; }
        size = 1024;
        default_action = drop();
    }
    apply {
        if (hdr.ethernet.isValid()) { t.apply(); }
        meta.m = meta.m + 1;
    }
}
control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out packet, in headers hdr) { apply { packet.emit(hdr.ethernet); } }
V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
"#,
    );
}

#[test]
fn errors_are_found() {
    common::err("const bit<8> x = true;\n", 1, "type mismatch");
}
