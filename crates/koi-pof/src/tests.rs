//! Tests of compiled POF configurations: packets through the interpreter and the cached
//! datapath (which must agree), and the configurations koi refuses.

use crate::{Config, compile, parse};
use koi_interp::Output;
use koi_state::{ManualClock, State};

const EXAMPLE: &str = include_str!("../../../examples/pof/kpofvs.pof");

/// A compiled configuration with its state; packets go through both engines.
struct Sw {
    pipeline: koi_ir::Pipeline,
    interp_state: State,
    cached_state: State,
}

impl Sw {
    fn new(src: &str) -> Sw {
        let c: Config = parse(src).unwrap_or_else(|e| panic!("{}", e.render("test.pof")));
        let (g, pipeline) = compile(&c).unwrap_or_else(|e| panic!("{}", e.render("test.pof")));
        assert!(!g.p4.is_empty());
        let mut interp_state = State::new(&pipeline).unwrap();
        crate::install(&mut interp_state, &g.writes).unwrap();
        let mut cached_state = State::new(&pipeline).unwrap();
        crate::install(&mut cached_state, &g.writes).unwrap();
        Sw {
            pipeline,
            interp_state,
            cached_state,
        }
    }

    fn cli(&mut self, line: &str) {
        let cmd = koi_control::command::parse(line).unwrap().unwrap();
        koi_state::cli::execute(&mut self.interp_state, &cmd).unwrap();
        koi_state::cli::execute(&mut self.cached_state, &cmd).unwrap();
    }

    /// The outputs of `pkt` received on `port`, the same through both engines.
    fn send(&mut self, pkt: &[u8], port: u64) -> Vec<Output> {
        let clock = ManualClock::new(0);
        let mut i = koi_interp::Interpreter::new(&self.pipeline).unwrap();
        let a = i
            .process(&mut self.interp_state, pkt, port, &clock)
            .unwrap()
            .outputs;
        let mut d = koi_datapath::Datapath::new(&self.pipeline).unwrap();
        // Twice: the second packet is served from the caches the first installed.
        let b = d
            .process(&mut self.cached_state, pkt, port, &clock)
            .unwrap()
            .outputs;
        let b2 = d
            .process(&mut self.cached_state, pkt, port, &clock)
            .unwrap()
            .outputs;
        assert_eq!(a, b, "interpreter and datapath differ");
        assert_eq!(b, b2, "cached replay differs");
        a
    }

    fn counter(&self, i: u64) -> u64 {
        self.interp_state
            .counter_read("pof.pof_counter", i)
            .unwrap()
            .packets
    }
}

fn ipv4(dst: [u8; 4], ttl: u8) -> Vec<u8> {
    let mut p = vec![
        0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00, // ethernet
        0x45, 0, 0, 28, 0, 1, 0, 0, ttl, 17, 0, 0, 10, 0, 1, 1, dst[0], dst[1], dst[2], dst[3],
        0x30, 0x39, 0x00, 0x35, 0, 8, 0, 0, // udp
    ];
    let c = csum(&p[14..34]);
    p[24..26].copy_from_slice(&c.to_be_bytes());
    p
}

fn csum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|w| u16::from_be_bytes([w[0], w[1]]) as u32)
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[test]
fn the_example_forwards_ipv4_by_destination_with_ttl_and_checksum() {
    let mut sw = Sw::new(EXAMPLE);
    let pkt = ipv4([10, 0, 2, 7], 64);
    let out = sw.send(&pkt, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 2);
    let o = &out[0].bytes;
    assert_eq!(o.len(), pkt.len());
    assert_eq!(o[22], 63, "ttl decremented");
    let mut hdr = o[14..34].to_vec();
    assert_eq!(csum(&hdr), 0, "checksum valid");
    hdr[10] = 0;
    hdr[11] = 0;
    assert_ne!(o[24..26], pkt[24..26], "checksum recomputed");
    assert_eq!(o[..22], pkt[..22]);
    assert_eq!(o[34..], pkt[34..]);
    assert_eq!(sw.counter(2), 1);
    assert_eq!(sw.counter(1), 0);
    let out = sw.send(&ipv4([10, 0, 1, 9], 5), 2);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 1);
    assert_eq!(sw.counter(1), 1);
    assert!(
        sw.send(&ipv4([10, 0, 3, 1], 64), 1).is_empty(),
        "no route: dropped"
    );
}

#[test]
fn the_example_broadcasts_arp_and_drops_what_it_does_not_know() {
    let mut sw = Sw::new(EXAMPLE);
    sw.cli("mc_mgrp_create 1");
    sw.cli("mc_node_create 0 1 2");
    sw.cli("mc_node_associate 1 0");
    let mut arp = vec![0xff; 6];
    arp.extend([0, 0, 0, 0, 0, 1, 0x08, 0x06]);
    arp.extend([0, 1, 8, 0, 6, 4, 0, 1]);
    arp.extend([0, 0, 0, 0, 0, 1, 10, 0, 1, 1, 0, 0, 0, 0, 0, 0, 10, 0, 2, 7]);
    let out = sw.send(&arp, 1);
    let mut ports: Vec<u64> = out.iter().map(|o| o.port).collect();
    ports.sort();
    assert_eq!(ports, vec![1, 2]);
    assert!(out.iter().all(|o| o.bytes == arp));
    let mut other = arp.clone();
    other[12] = 0x86;
    other[13] = 0xdd;
    assert!(sw.send(&other, 1).is_empty(), "unknown ethertype dropped");
    // Too short for the IPv4 table's fields: its segment is invalid, the table is not applied.
    let short = &ipv4([10, 0, 2, 7], 64)[..20];
    assert!(sw.send(short, 1).is_empty());
    assert!(sw.send(&[], 1).is_empty());
}

#[test]
fn add_field_encapsulates_and_delete_field_decapsulates() {
    let src = "
protocol ethernet { field dst 0 48 field src 48 48 field type 96 16 }
table eth exact { key ethernet.type }
entry eth 1 match 0x0800 { add_field 0 112 0x0000000000aa0000000000bb88b5 output 3 }
entry eth 2 match 0x88b5 { delete_field 0 112 output 4 }
";
    let mut sw = Sw::new(src);
    let pkt = ipv4([10, 0, 2, 7], 64);
    let out = sw.send(&pkt, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 3);
    let mut want = vec![0, 0, 0, 0, 0, 0xaa, 0, 0, 0, 0, 0, 0xbb, 0x88, 0xb5];
    want.extend(&pkt);
    assert_eq!(out[0].bytes, want);
    let back = sw.send(&want, 1);
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].port, 4);
    assert_eq!(back[0].bytes, pkt);
}

#[test]
fn ternary_priorities_metadata_and_output_from_a_field() {
    let src = "
metadata { field port 0 16 field tag 16 8 }
protocol ethernet { field dst 0 48 field type 96 16 }
protocol ipv4 { field proto 72 8 field dst 128 32 field dst_lo 152 8 }
table acl ternary size 8 { key ethernet.type ethernet.dst }
table route exact { key meta.tag ipv4.proto }
entry acl 1 priority 1 match 0x0800 * { write_metadata meta.tag 7 goto route shift 112 }
entry acl 2 priority 5 match 0x0800 00:00:00:00:00:09&&&0xff { drop }
entry acl 3 priority 9 match 0x0800 00:00:00:00:00:02&&&0xffffffffffff { write_metadata meta.port 6 write_metadata meta.tag 8 goto route shift 112 }
entry route 1 match 7 17 { output_field ipv4.dst_lo }
entry route 2 match 8 17 { set_field ipv4.dst 10.9.9.9 output_field meta.port }
";
    let mut sw = Sw::new(src);
    let mut pkt = ipv4([10, 0, 2, 5], 64);
    pkt[5] = 3;
    let out = sw.send(&pkt, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 5, "the port is the destination's last byte");
    assert_eq!(out[0].bytes, pkt);
    pkt[5] = 9;
    assert!(sw.send(&pkt, 1).is_empty(), "priority 5 beats priority 1");
    pkt[5] = 2;
    let out = sw.send(&pkt, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 6);
    assert_eq!(out[0].bytes[30..34], [10, 9, 9, 9]);
}

fn refused(src: &str) -> String {
    let c = parse(src).unwrap();
    compile(&c).map(|_| ()).unwrap_err().render("t.pof")
}

#[test]
fn configurations_koi_cannot_compile_are_refused_with_the_reason() {
    let base = "protocol p { field a 0 8 field b 8 8 }\ntable t exact { key p.a }\ntable u exact { key p.b }\n";
    let e = refused(&format!(
        "{base}entry t 1 match 1 {{ goto u shift 8 }}\nentry t 2 match 2 {{ goto u shift 16 }}\n"
    ));
    assert!(e.contains("one cursor per table"), "{e}");
    assert!(e.starts_with("t.pof:5:1:"), "{e}");
    let e = refused(&format!(
        "{base}entry t 1 match 1 {{ goto u }}\nentry u 1 match 1 {{ goto t }}\n"
    ));
    assert!(e.contains("cycles are refused"), "{e}");
    let e = refused(&format!("{base}entry t 1 match 1 {{ packet_in }}\n"));
    assert!(e.contains("cpu_port"), "{e}");
    let e = refused(&format!("{base}entry t 1 match 1 2 {{ drop }}\n"));
    assert!(e.contains("2 matches for 1 keys"), "{e}");
    let e = refused(&format!("{base}entry t 1 match 256 {{ drop }}\n"));
    assert!(e.contains("does not fit"), "{e}");
    let e = refused(&format!("{base}entry t 1 match 1/4 {{ drop }}\n"));
    assert!(e.contains("cannot match"), "{e}");
    let e = refused(&format!("{base}entry t 1 match 1 {{ goto nowhere }}\n"));
    assert!(e.contains("no table nowhere"), "{e}");
    let e = refused(&format!("{base}entry t 1 match 1 {{ set_field p.c 1 }}\n"));
    assert!(e.contains("no field c"), "{e}");
    let e = refused(&format!("{base}entry t 1 match 1 {{ delete_field 4 8 }}\n"));
    assert!(e.contains("whole bytes"), "{e}");
    let e = refused("protocol p { field a 0 8 }\ntable t lpm { key p.a p.a }\n");
    assert!(e.contains("exactly one key"), "{e}");
    let e = refused(&format!(
        "{base}entry t 1 match 1 {{ drop }}\nentry t 1 match 2 {{ drop }}\n"
    ));
    assert!(e.contains("defined twice"), "{e}");
    let e = refused(&format!(
        "{base}entry t 1 match 1 {{ drop }}\nentry t 2 match 1 {{ output 1 }}\n"
    ));
    assert!(
        e.contains("entry 2 of table t matches what entry 1 matches"),
        "{e}"
    );
    let e = refused(
        "protocol p { field a 0 8 }\ntable t lpm { key p.a }\nentry t 1 match 8 { drop }\nentry t 2 match 8/8 { drop }\n",
    );
    assert!(e.contains("matches what entry 1 matches"), "{e}");
    // A configuration built in code rather than parsed: the bytes must fill the length.
    let mut c = parse(&format!(
        "{base}entry t 1 match 1 {{ add_field 0 16 0xaabb }}\n"
    ))
    .unwrap();
    c.entries[0].instructions[0] = crate::Instruction::Apply(crate::Action::AddField {
        offset: 0,
        length: 16,
        value: vec![0xaa],
    });
    let e = compile(&c).map(|_| ()).unwrap_err().render("t.pof");
    assert!(
        e.contains("inserts 16 bits but its value has 1 bytes"),
        "{e}"
    );
}

#[test]
fn an_empty_configuration_drops_everything() {
    let mut sw = Sw::new("");
    assert!(sw.send(&ipv4([10, 0, 2, 7], 64), 1).is_empty());
}

#[test]
fn unreachable_tables_and_cursors_are_reported() {
    let c = parse(EXAMPLE).unwrap();
    let (g, _) = compile(&c).unwrap();
    assert_eq!(
        g.layout.cursors,
        vec![("eth".to_string(), 0), ("ipv4_fwd".to_string(), 112)]
    );
    let mut c2 = c.clone();
    c2.remove_entry("eth", 2).unwrap();
    let (g, _) = compile(&c2).unwrap();
    assert_eq!(g.layout.unreachable, vec!["ipv4_fwd".to_string()]);
}

#[test]
fn packet_in_meter_and_metadata_copies_compile_and_run() {
    let src = "
cpu_port 64
meters 8
metadata { field mac 0 48 }
protocol ethernet { field dst 0 48 field src 48 48 field type 96 16 }
table eth ternary { key ethernet.type }
entry eth 1 priority 2 match 0x0806 { packet_in }
entry eth 2 priority 1 match * {
  meter 3
  write_metadata meta.mac 0x0a0b0c0d0e0f
  set_field_from_metadata ethernet.src meta.mac
  output 7
}
";
    let mut sw = Sw::new(src);
    let mut arp = vec![0xff; 6];
    arp.extend([0, 0, 0, 0, 0, 1, 0x08, 0x06]);
    arp.extend([0u8; 28]);
    let out = sw.send(&arp, 5);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 64);
    // The packet_in header (9-bit ingress port 5, 7 bits of padding) before the packet.
    assert_eq!(out[0].bytes[..2], [0x02, 0x80]);
    assert_eq!(out[0].bytes[2..], arp[..]);
    let pkt = ipv4([10, 0, 2, 7], 64);
    let out = sw.send(&pkt, 5);
    assert_eq!(out.len(), 1, "an unconfigured meter is green");
    assert_eq!(out[0].port, 7);
    assert_eq!(out[0].bytes[6..12], [0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f]);
    assert_eq!(out[0].bytes[12..], pkt[12..]);
    let e = refused(
        "meters 2\nprotocol p { field a 0 8 }\ntable t exact { key p.a }\nentry t 1 match 1 { meter 2 }\n",
    );
    assert!(e.contains("beyond the meters"), "{e}");
}

fn generated(src: &str) -> crate::Generated {
    crate::generate(&parse(src).unwrap()).unwrap_or_else(|e| panic!("{}", e.render("t.pof")))
}

const ROUTES: &str = "
protocol ethernet { field dst 0 48 field src 48 48 field type 96 16 }
protocol ipv4 { field ttl 64 8 field checksum 80 16 field dst 128 32 }
table eth exact size 4 { key ethernet.type }
table route lpm size 8 { key ipv4.dst }
entry eth 1 match 0x0800 { goto route shift 112 }
entry route 1 match 10.0.1.0/24 { set_field ethernet.dst@0 02:00:00:00:00:01 modify_field ipv4.ttl -1 counter 1 output 1 }
";

#[test]
fn entries_that_differ_only_in_values_share_the_program_and_differ_in_their_writes() {
    let base = generated(ROUTES);
    // Another match, other constants, and a second entry of the same shape.
    let other = generated(&format!(
        "{}{}",
        ROUTES.replace(
            "10.0.1.0/24 { set_field ethernet.dst@0 02:00:00:00:00:01 modify_field ipv4.ttl -1 counter 1 output 1",
            "10.0.9.0/24 { set_field ethernet.dst@0 02:00:00:00:00:07 modify_field ipv4.ttl -3 counter 5 output 4"
        ),
        "entry route 2 match 10.0.2.0/23 { set_field ethernet.dst@0 2 modify_field ipv4.ttl 1 counter 2 output 2 }\n"
    ));
    assert!(base.same_structure(&other));
    assert_eq!(base.p4, other.p4);
    assert!(!base.p4.contains("entries"), "no entries in the program");
    assert_eq!(base.writes.len(), 2);
    assert_eq!(other.writes.len(), 3);
    let w = &other.writes[1];
    assert_eq!(
        (&*w.pof_table, w.id, &*w.table),
        ("route", 1, "pof.t_route")
    );
    assert_eq!(w.action, other.writes[2].action, "one action for the shape");
    assert_eq!(
        w.keys,
        vec![koi_ir::Pattern::Prefix {
            value: koi_ir::Bits::from_u128(32, 0x0a00_0900),
            len: 24
        }]
    );
    assert_eq!(w.priority, None);
    let args: Vec<u128> = w.args.iter().map(|b| b.to_u128().unwrap()).collect();
    assert_eq!(
        args,
        vec![0x0200_0000_0007, 0xfd, 5, 4],
        "dst, -3 mod 2^8, counter, port"
    );
    let w2 = &other.writes[2];
    assert_eq!(
        w2.keys,
        vec![koi_ir::Pattern::Prefix {
            value: koi_ir::Bits::from_u128(32, 0x0a00_0200),
            len: 23
        }]
    );
}

#[test]
fn a_new_shape_a_new_field_or_a_new_shift_changes_the_program() {
    let base = generated(ROUTES);
    for (what, extra) in [
        ("a new shape", "entry route 2 match 10.0.2.0/24 { drop }"),
        (
            "a field no entry used",
            "entry route 2 match 10.0.2.0/24 { set_field ethernet.src@0 1 modify_field ipv4.ttl -1 counter 1 output 1 }",
        ),
        (
            "a checksum",
            "entry route 2 match 10.0.2.0/24 { set_field ethernet.dst@0 1 modify_field ipv4.ttl -1 counter 1 output 1 calculate_checksum ipv4.checksum 0 160 }",
        ),
    ] {
        let g = generated(&format!("{ROUTES}{extra}\n"));
        assert!(!base.same_structure(&g), "{what}");
    }
    let shifted = generated(&ROUTES.replace("shift 112", "shift 120"));
    assert!(!base.same_structure(&shifted), "another cursor");
}

#[test]
fn tied_ternary_priorities_are_structure() {
    let src = "
protocol ethernet { field dst 0 48 field type 96 16 }
table acl ternary size 8 { key ethernet.type }
entry acl 1 priority 3 match 0x0800&&&0xff00 { output 1 }
entry acl 2 priority 5 match 0x0800 { output 2 }
";
    let base = generated(src);
    // Another priority of its own: values only.
    let other = generated(&src.replace("priority 5", "priority 7"));
    assert!(base.same_structure(&other));
    assert_eq!(other.writes[0].priority, Some(7));
    // Two entries of one priority: their order (the lower id first) is the tie-break.
    let tied = generated(&src.replace("priority 5", "priority 3"));
    assert!(!base.same_structure(&tied));
    assert_eq!(tied.ties.len(), 2);
}

#[test]
fn ternary_entries_of_one_priority_go_to_the_lower_id() {
    // Written out of id order: the write order (priority, then id) is the tie-break.
    let src = "
protocol ethernet { field dst 0 48 field type 96 16 }
table acl ternary size 8 { key ethernet.type }
entry acl 9 match 0x0800&&&0xff00 { output 3 }
entry acl 2 match 0x0800 { output 2 }
entry acl 5 priority 1 match 0x0806 { output 5 }
";
    let mut sw = Sw::new(src);
    let pkt = ipv4([10, 0, 2, 7], 64);
    let out = sw.send(&pkt, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 2, "entry 2 beats entry 9 at priority 0");
    let mut other = pkt.clone();
    other[13] = 0x99;
    assert_eq!(sw.send(&other, 1)[0].port, 3, "entry 9 alone matches");
    other[13] = 0x06;
    assert_eq!(sw.send(&other, 1)[0].port, 5, "priority 1 beats both");
}

const MISSES: &str = "
protocol ethernet { field dst 0 48 field src 48 48 field type 96 16 }
protocol ipv4 { field ttl 64 8 field dst 128 32 }
table eth exact size 4 { key ethernet.type }
table route lpm size 8 { key ipv4.dst }
table fallback exact size 4 { key ipv4.ttl }
entry eth 1 match 0x0800 { goto route shift 112 }
entry route 1 match 10.0.1.0/24 { output 1 }
entry fallback 1 match 64 { set_field ethernet.src@0 0x0200000000ff output 7 }
miss eth { counter 3 output 9 }
miss route { goto fallback shift 0 }
";

#[test]
fn a_miss_runs_its_instructions_and_may_go_to_another_table() {
    let mut sw = Sw::new(MISSES);
    let out = sw.send(&ipv4([10, 0, 1, 7], 64), 1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 1, "an entry matches: no miss");
    // No route: route's miss goes to fallback (cursor 112, as route's), which matches the TTL.
    let pkt = ipv4([10, 0, 2, 7], 64);
    let out = sw.send(&pkt, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 7);
    assert_eq!(out[0].bytes[6..12], [2, 0, 0, 0, 0, 0xff]);
    assert!(
        sw.send(&ipv4([10, 0, 2, 7], 9), 1).is_empty(),
        "fallback misses too: dropped"
    );
    // Not IPv4: eth's miss counts and outputs.
    let mut other = pkt.clone();
    other[12] = 0x86;
    let out = sw.send(&other, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 9);
    assert_eq!(sw.counter(3), 1);
    // Too short for eth's key: the table is not applied, its miss does not run either.
    assert!(sw.send(&pkt[..10], 1).is_empty());
    let g = generated(MISSES);
    assert_eq!(
        g.layout.cursors,
        vec![
            ("eth".to_string(), 0),
            ("route".to_string(), 112),
            ("fallback".to_string(), 112)
        ]
    );
    let miss: Vec<_> = g.writes.iter().filter(|w| w.miss).collect();
    assert_eq!(miss.len(), 2);
    assert_eq!((&*miss[0].pof_table, miss[0].keys.len()), ("eth", 0));
}

#[test]
fn a_miss_of_a_known_shape_is_values_and_a_new_one_is_structure() {
    let base = generated(MISSES);
    let other = generated(&MISSES.replace("counter 3 output 9", "counter 4 output 2"));
    assert!(base.same_structure(&other), "another counter and port");
    let w = other
        .writes
        .iter()
        .find(|w| w.miss && &*w.pof_table == "eth");
    let args: Vec<u128> = w
        .unwrap()
        .args
        .iter()
        .map(|b| b.to_u128().unwrap())
        .collect();
    assert_eq!(args, vec![4, 2]);
    let new_shape = generated(&MISSES.replace("counter 3 output 9", "drop"));
    assert!(!base.same_structure(&new_shape));
    let gone = generated(&MISSES.replace("miss route { goto fallback shift 0 }", ""));
    assert_eq!(gone.layout.unreachable, vec!["fallback".to_string()]);
    let e = refused(&format!("{MISSES}miss nowhere {{ drop }}\n"));
    assert!(e.contains("miss: no table nowhere"), "{e}");
    let e = refused(&format!("{MISSES}miss eth {{ drop }}\n"));
    assert!(e.contains("table eth has two misses"), "{e}");
    let e = refused(&format!("{MISSES}miss fallback {{ goto eth }}\n"));
    assert!(
        e.contains("the miss of table fallback goes to table eth with the cursor at bit 112"),
        "{e}"
    );
}

#[test]
fn misses_are_edited_with_their_tables() {
    let mut c = parse(MISSES).unwrap();
    let e = c.remove_table("fallback").unwrap_err();
    assert!(
        e.contains("the miss of table route goes to table fallback"),
        "{e}"
    );
    let e = c.remove_protocol("ipv4").unwrap_err();
    assert!(e.contains("table route"), "{e}");
    let dup = parse("miss eth { drop }").unwrap();
    assert!(
        c.clone()
            .merge(dup.clone(), false)
            .unwrap_err()
            .contains("has a miss already")
    );
    c.merge(dup, true).unwrap();
    assert_eq!(
        c.miss_of("eth").unwrap().instructions,
        vec![crate::Instruction::Apply(crate::Action::Drop)]
    );
    c.remove_miss("route").unwrap();
    assert!(c.remove_miss("route").unwrap_err().contains("has no miss"));
    c.remove_table("eth").unwrap();
    assert!(c.miss_of("eth").is_none(), "gone with its table");
}
