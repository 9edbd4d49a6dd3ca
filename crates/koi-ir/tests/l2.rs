//! The hand-built L2 switch verifies and prints as expected.

mod common;

#[test]
fn l2_switch_verifies() {
    let l2 = common::l2_switch();
    assert_eq!(koi_ir::verify(&l2.p), Ok(()));
}

const EXPECTED: &str = r#"// koi IR, architecture v1model
package(parser = MyParser, verify_checksum = MyVerifyChecksum, ingress = MyIngress, egress = MyEgress, compute_checksum = MyComputeChecksum, deparser = MyDeparser)
error bit<32> { NoError = 0, PacketTooShort = 1, NoMatch = 2, StackOutOfBounds = 3, HeaderTooShort = 4, ParserTimeout = 5, ParserInvalidArgument = 6 }
match_kind { exact, ternary, lpm, range, optional, selector }

phv 228 bits {
  header hdr.ethernet: ethernet_t (112 bits)
    @0     bit<48>     hdr.ethernet.dstAddr
    @48    bit<48>     hdr.ethernet.srcAddr
    @96    bit<16>     hdr.ethernet.etherType
    @112   bool        hdr.ethernet.$valid
  header hdr.vlan: vlan_t (32 bits)
    @120   bit<3>      hdr.vlan.pcp
    @123   bit<1>      hdr.vlan.dei
    @124   bit<12>     hdr.vlan.vid
    @136   bit<16>     hdr.vlan.etherType
    @152   bool        hdr.vlan.$valid
  @153   bit<9>      standard_metadata.ingress_port
  @162   bit<9>      standard_metadata.egress_spec
  @171   bit<9>      standard_metadata.egress_port
  @180   bit<16>     standard_metadata.mcast_grp
  @196   bit<32>     standard_metadata.parser_error
  intrinsic ingress_port = standard_metadata.ingress_port
  intrinsic egress_spec = standard_metadata.egress_spec
  intrinsic egress_port = standard_metadata.egress_port
  intrinsic mcast_grp = standard_metadata.mcast_grp
  intrinsic parser_error = standard_metadata.parser_error
}

parser MyParser {
  state start {
    extract(hdr.ethernet);
    transition select(hdr.ethernet.etherType) {
      16w0x8100: parse_vlan;
      default: accept;
    }
  }
  state parse_vlan {
    extract(hdr.vlan);
    transition accept;
  }
}

control MyVerifyChecksum {
}

control MyIngress {
  bb0:  // entry
    apply MyIngress.dmac hit bb1 miss bb2
  bb1:
    return
  bb2:
    standard_metadata.mcast_grp = 16w1;
    return
}

control MyEgress {
}

control MyComputeChecksum {
}

control MyDeparser {
  emit(hdr.ethernet);
  emit(hdr.vlan);
}

@noWarn("unused") action NoAction() {
}

action MyIngress.forward(bit<9> port) {
  standard_metadata.egress_spec = port;
}

action MyIngress.drop() {
  mark_to_drop();
}

table MyIngress.dmac {
  key = {
    hdr.ethernet.dstAddr: exact;
  }
  actions = { MyIngress.forward; MyIngress.drop; @defaultonly NoAction; }
  default_action = NoAction();
  size = 1024;
  entries = {
    (48w0xffffffffffff): MyIngress.drop();
  }
}
"#;

#[test]
fn l2_switch_prints() {
    let l2 = common::l2_switch();
    let text = l2.p.to_string();
    if text != EXPECTED {
        println!("{text}");
    }
    assert_eq!(text, EXPECTED);
}

#[test]
fn two_images_coexist_and_match_by_name() {
    let old = common::l2_switch().p;
    let mut new = old.clone();
    let t = new.table_by_name("MyIngress.dmac").unwrap();
    new.tables[t].size = 4096;
    assert_eq!(
        old.tables[old.table_by_name("MyIngress.dmac").unwrap()].size,
        1024
    );
    assert_eq!(koi_ir::verify(&new), Ok(()));
}
