// An action profile and an action selector, indexed counters and meters, registers (a bit<32>
// one and one of a struct), a parser value set, a digest of a struct with a nested struct,
// and controller packet-in / packet-out headers.
#include <core.p4>
#include <v1model.p4>

@p4runtime_translation("koi.test/port", 32)
type bit<9> port_t;

@controller_header("packet_in")
header packet_in_t { port_t ingress_port; bit<7> pad; bit<16> reason; }
@controller_header("packet_out")
header packet_out_t { bit<9> egress_port; bit<1> flag; bit<6> pad; }

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header h_t { bit<8> a; bit<8> b; }
struct headers { packet_out_t po; packet_in_t pi; eth_t eth; h_t h; }
struct inner_t { bit<4> x; bit<12> y; }
struct learn_t { bit<48> src; bit<9> port; inner_t inner; bit<1> flag; bool typed; }
struct pair_t { bit<16> first; bit<8> second; }
struct meta_t { bit<8> x; }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) vs_types;
    state start {
        transition select(sm.ingress_port) { 64: parse_po; default: parse_eth; }
    }
    state parse_po { pkt.extract(hdr.po); transition parse_eth; }
    state parse_eth {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { vs_types: parse_h; default: accept; }
    }
    state parse_h { pkt.extract(hdr.h); transition accept; }
}

control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets) c_pkts;
    counter(4, CounterType.bytes) c_bytes;
    meter(8, MeterType.packets) m_pkts;
    register<bit<32>>(16) r32;
    register<pair_t>(4) r_pair;
    action_profile(16) ap;
    action_selector(HashAlgorithm.crc16, 16, 16) sel;
    bit<2> color = 0;

    action fwd(bit<9> port) { sm.egress_spec = port; }
    action set_x(bit<8> v) { meta.x = v; }
    action nop() { }
    action count_it() { c_pkts.count(0); c_bytes.count(1); m_pkts.execute_meter(0, color); }

    table t_ap {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; set_x; }
        implementation = ap;
    }
    table t_sel {
        key = { hdr.eth.type: exact; hdr.eth.src: selector; }
        actions = { fwd; set_x; nop; }
        implementation = sel;
    }
    table t_plain {
        key = { hdr.h.a: exact; }
        actions = { count_it; nop; }
    }

    apply {
        if (hdr.po.isValid()) {
            sm.egress_spec = hdr.po.egress_port;
            hdr.po.setInvalid();
        } else {
            t_ap.apply();
            t_sel.apply();
            t_plain.apply();
            bit<32> v;
            r32.read(v, 0);
            r32.write(1, v + 1);
            pair_t p;
            r_pair.read(p, 0);
            p.second = p.second + 1;
            r_pair.write(0, p);
            learn_t l = { hdr.eth.src, sm.ingress_port, { 4w1, 12w2 }, 1w1, hdr.eth.type == 0x1234 };
            digest<learn_t>(1, l);
            if (sm.egress_spec == 64) {
                hdr.pi.setValid();
                hdr.pi.ingress_port = (port_t)sm.ingress_port;
                hdr.pi.reason = 7;
            }
        }
    }
}

control V(inout headers hdr, inout meta_t meta) { apply { } }
control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.pi); pkt.emit(hdr.eth); pkt.emit(hdr.h); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
