// Idioms of large public v1model programs (DASH, SAI P4, p4-guide demos), end to end:
// - DASH's macro-generated actions: `push_ ## u ## (`, `hdr. ## u ## _h` and
//   `bit<8> ## u ## _delta` are pastes cpp (as p4c runs it, in assembler mode) leaves as two
//   tokens; `t ## i.apply()` in a macro names a table; structured annotations (`@SaiTable[..]`,
//   `@SaiVal[..]`) on the generated table and parameter;
// - SAI P4's packet-in header filled from a struct expression whose fields are cast to a
//   `@p4runtime_translation` new type: the header becomes valid (P4-16 §8.12) and is emitted;
// - a field typed `bit` without a width (fabric.p4's `typedef bit pcc_gate_status_t`), and an
//   empty declaration (`;;`) at top level;
// - a top-level action with an `inout` parameter bound in the table's action list, and the
//   default action giving the rest;
// - a top-level action with an `inout` parameter both bound in a table's action list and
//   called directly, and an `if` whose condition is known at compile time (skipped);
// - `_` as the default label of a select; `|-|` (saturating subtraction);
// - annotations whose bodies hold nested annotations (`@composite_field(@sai_field(..), ..)`);
// - `#if __p4c__`: not defined (p4c defines no such macro), so the block is skipped.
#include <core.p4>
#include <v1model.p4>

@p4runtime_translation("", string)
type bit<9> port_id_t;
typedef bit flag_t;;

header u0_h_t { bit<8> x; bit<8> y; }
header cust_h_t { bit<8> x; bit<8> y; }
header pin_t { port_id_t port; flag_t f; bit<6> pad; }

struct headers_t { pin_t pin; cust_h_t customer_h; u0_h_t u0_h; }
struct meta_t { bit<8> k; bit<8> ttl; }
enum bit<8> Encap { VXLAN = 1, NVGRE = 2 }

#define PUSH_DEF(u, o) \
action push_ ## u ## (inout headers_t hdr, @SaiVal[type="sai_uint8_t"] in bit<8> ## u ## _delta) { \
    hdr. ## u ## _h.setValid(); \
    hdr. ## u ## _h.x = hdr. ## o ## _h.x + u ## _delta; \
    hdr. ## u ## _h.y = hdr. ## o ## _h.y |-| u ## _delta; \
}
PUSH_DEF(u0, customer)

action set_k(inout meta_t m, bit<8> k) { m.k = k; }
// Bound in table bt's action list and also called directly (DASH's tunnel_decap): one action.
action bump(inout headers_t hdr, bit<8> d) { hdr.customer_h.y = hdr.customer_h.y + d; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.customer_h);
        transition select(hdr.customer_h.x) {
            0xff: reject;
            _ : accept;
        }
    }
}

control V(inout headers_t hdr, inout meta_t m) { apply { } }

#define STAGE(i) @SaiTable[name="stage", api="dash_acl", order=i] table t ## i { key = { m.k : exact @composite_field(@sai_field(A ## i), @sai_field(B)); } \
    actions = { NoAction; } const entries = { 3 : NoAction(); } }
#define HIT(i) t ## i.apply().hit
#define ENCAP_VXLAN Encap.VXLAN
#define ENCAP_NVGRE Encap.NVGRE

control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    table kt {
        actions = { set_k(m); }
        default_action = set_k(m, 3);
    }
    table bt {
        actions = { bump(hdr); }
        default_action = bump(hdr, 2);
    }
    STAGE(1)
    apply {
        kt.apply();
        sm.egress_spec = 2;
        if (HIT(1)) {
            push_u0(hdr, m.k);
        }
        if (ENCAP_VXLAN == ENCAP_NVGRE) {
            bump(hdr, 0x40);
        }
        bump(hdr, 1);
        bt.apply();
        hdr.pin = {
            port = (port_id_t) sm.ingress_port,
            f = 1,
            pad = 0
        };
    }
}

control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.pin); pkt.emit(hdr.u0_h); pkt.emit(hdr.customer_h); }
}

#if __p4c__
bit<32> not_a_declaration = __p4c_version__;
#endif

V1Switch(P(), V(), I(), E(), C(), D()) main;
