//! The L2L3-ACL example end to end: `examples/l2l3_acl.p4` lowered, the entries of
//! `examples/l2l3_acl.entries` executed through the simple_switch_CLI executor, and packets
//! switched, routed (MACs rewritten, TTL decremented, checksum updated) and dropped by the
//! ACL.

use koi_control::command;
use koi_interp::Interpreter;
use koi_ir::Pipeline;
use koi_state::{ManualClock, State, cli};
use std::path::Path;

fn lower() -> Pipeline {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join("examples/l2l3_acl.p4");
    let opts = koi_syntax::PpOptions {
        include_dirs: vec![root.join("p4include"), root.join("examples")],
        defines: Vec::new(),
    };
    let (_sm, program, diags) = koi_syntax::parse_file(&path, &opts);
    assert!(!diags.has_errors(), "parse errors");
    let (checked, d) = koi_sema::check(&program, &koi_sema::CheckOptions::default());
    assert!(!d.has_errors(), "type errors");
    match koi_lower::lower(&program, &checked) {
        Ok(p) => p,
        Err(_) => panic!("lowering failed"),
    }
}

fn loaded(p: &Pipeline) -> State {
    let mut s = State::new(p).unwrap();
    let text = include_str!("../../../examples/l2l3_acl.entries");
    let mut n = 0;
    for line in text.lines() {
        if let Some(c) = command::parse(line).unwrap() {
            cli::execute(&mut s, &c).unwrap_or_else(|e| panic!("{line}: {e}"));
            n += 1;
        }
    }
    assert_eq!(n, 53);
    s
}

fn mac(last: u8, host: bool) -> [u8; 6] {
    [2, 0, 0, 0, if host { 1 } else { 0 }, last]
}

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut f = mac(0xfe, false).to_vec();
    f.extend_from_slice(&mac(0, true));
    f.extend_from_slice(&[0x08, 0x00]);
    let mut ip = vec![0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = csum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 8, 0, 0]);
    f
}

fn csum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[test]
fn switch_route_and_filter() {
    let p = lower();
    let mut s = loaded(&p);
    let clock = ManualClock::new(0);
    let mut it = Interpreter::new(&p).unwrap();
    let mut send = |s: &mut State, pkt: &[u8], port| {
        let o = it.process(s, pkt, port, &clock).unwrap();
        o.outputs
            .into_iter()
            .map(|x| (x.port, x.bytes))
            .collect::<Vec<_>>()
    };
    // L2: untagged on port 1 (VLAN 100) to a host of VLAN 100: tagged, switched, untagged.
    let mut l2 = mac(2, true).to_vec();
    l2.extend_from_slice(&mac(0, true));
    l2.extend_from_slice(&[0x12, 0x34, 9, 9, 9]);
    assert_eq!(send(&mut s, &l2, 1), [(1, l2.clone())]);
    // Unknown destination: the switching table's default drops it.
    let mut unknown = l2.clone();
    unknown[5] = 0x77;
    assert!(send(&mut s, &unknown, 1).is_empty());
    // L3: to the router, 198.19.1.5 takes the /24 route to port 2.
    let pkt = udp([198, 18, 0, 1], [198, 19, 1, 5], 1234, 80);
    let out = send(&mut s, &pkt, 1);
    assert_eq!(out.len(), 1);
    let (port, o) = &out[0];
    assert_eq!(*port, 2);
    assert_eq!(&o[..6], &[2, 0, 0, 0, 2, 1], "next hop MAC");
    assert_eq!(&o[6..12], &mac(0xfe, false), "router MAC");
    assert_eq!(&o[12..14], &[0x08, 0x00], "untagged again");
    assert_eq!(o[14 + 8], 63, "TTL decremented");
    assert_eq!(csum(&o[14..34]), 0, "checksum updated");
    assert_eq!(o.len(), pkt.len());
    // The ACL drops this five-tuple.
    let denied = udp([198, 18, 200, 1], [198, 19, 0, 1], 40000, 53);
    assert!(send(&mut s, &denied, 1).is_empty());
    let c = s.table("acl").unwrap().len();
    assert_eq!(c, 16);
}
