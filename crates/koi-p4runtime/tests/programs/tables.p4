// Tables of every match kind, a const-entries table, initial entries, a keyless table, a
// const default action, action scopes, direct counter and meter, idle timeout, and
// @p4runtime_translation types (bit<32> and string controller types).
#include <core.p4>
#include <v1model.p4>

@p4runtime_translation("koi.test/port", 32)
type bit<9> port_t;
@p4runtime_translation("koi.test/vrf", string)
type bit<8> vrf_t;

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<8> ver_ihl; bit<8> tos; bit<16> len; bit<16> id; bit<16> frag;
    bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
struct headers { eth_t eth; ipv4_t ipv4; }
struct meta_t { port_t port; vrf_t vrf; bit<12> small; }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}

control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) dc;
    direct_meter<bit<2>>(MeterType.bytes) dm;
    bit<2> color = 0;

    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action fwd_m(bit<9> port) { sm.egress_spec = port; dm.read(color); }
    action set_port(port_t p) { meta.port = p; }
    action set_vrf(vrf_t v) { meta.vrf = v; }
    action set_small(bit<12> v) { meta.small = v; }
    @name("route") action route(bit<48> dmac, bit<9> port) {
        hdr.eth.dst = dmac; sm.egress_spec = port;
    }

    table t_exact {
        key = { hdr.eth.dst: exact; meta.small: exact; }
        actions = { fwd_m; drop; }
        counters = dc;
        meters = dm;
        support_timeout = true;
        size = 4;
    }
    table t_lpm {
        key = { hdr.ipv4.dst: lpm; }
        actions = { route; drop; NoAction; }
        default_action = drop();
        size = 64;
    }
    table t_ternary {
        key = { hdr.ipv4.src: ternary; hdr.ipv4.proto: exact; }
        actions = { fwd; @defaultonly drop; @tableonly set_small; }
        default_action = drop();
    }
    table t_range {
        key = { hdr.ipv4.len: range; }
        actions = { fwd; NoAction; }
    }
    table t_optional {
        key = { hdr.ipv4.ttl: optional; hdr.ipv4.proto: exact; }
        actions = { fwd; NoAction; }
    }
    table t_const {
        key = { hdr.eth.type: ternary; }
        actions = { fwd; drop; }
        const entries = {
            0x0800 &&& 0xffff : fwd(1);
            0x0806 &&& 0xffff : fwd(2);
            _ : drop();
        }
    }
    table t_init {
        key = { hdr.ipv4.proto: exact; }
        actions = { fwd; drop; }
        entries = {
            6 : fwd(6);
            17 : fwd(17);
        }
    }
    table t_keyless {
        actions = { fwd; drop; }
        default_action = fwd(3);
    }
    table t_const_default {
        key = { hdr.ipv4.tos: exact; }
        actions = { fwd; drop; }
        const default_action = drop();
    }
    table t_translated {
        key = { meta.port: exact; meta.vrf: exact; }
        actions = { set_port; set_vrf; NoAction; }
    }
    table t_translated_lpm {
        key = { meta.port: lpm; }
        actions = { set_port; NoAction; }
    }

    apply {
        t_exact.apply();
        t_lpm.apply();
        t_ternary.apply();
        t_range.apply();
        t_optional.apply();
        t_const.apply();
        t_init.apply();
        t_keyless.apply();
        t_const_default.apply();
        t_translated.apply();
        t_translated_lpm.apply();
    }
}

control V(inout headers hdr, inout meta_t meta) { apply { } }
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.ipv4); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
