//! Unit tests of the STF reader.

use super::*;

fn one(s: &str) -> Stmt {
    let mut v = parse(s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
    assert_eq!(v.len(), 1, "{s}");
    v.remove(0).stmt
}

fn err(s: &str) -> String {
    parse(s).expect_err(s)[0].message.clone()
}

#[test]
fn packet_hex_with_spaces_anywhere() {
    assert_eq!(
        one("packet 2 00 11 2233 44"),
        Stmt::Packet {
            port: 2,
            data: vec![0x00, 0x11, 0x22, 0x33, 0x44]
        }
    );
    assert_eq!(
        one("PACKET 01 ab"),
        Stmt::Packet {
            port: 1,
            data: vec![0xab]
        }
    );
}

#[test]
fn packet_errors_are_hard_errors() {
    assert!(err("packet 0 abc").contains("odd number"));
    assert!(err("packet 0 ab # comment").contains("invalid packet data"));
    assert!(err("packet 0 0xab").contains("invalid packet data"));
    assert!(err("packet").contains("port"));
}

#[test]
fn expect_wildcards_and_dollar() {
    let Stmt::Expect { port, expected } = one("expect 3 0a ** $") else {
        panic!()
    };
    assert_eq!(port, 3);
    assert_eq!(expected.nibbles, vec![Some(0), Some(0xa), None, None]);
    assert!(expected.exact_len);
    assert_eq!(expected.compare(&[0x0a, 0x77]), Ok(()));
    assert!(matches!(
        expected.compare(&[0x0a, 0x77, 0x00]),
        Err(Mismatch::TooLong { .. })
    ));
    assert!(matches!(
        expected.compare(&[0x0a]),
        Err(Mismatch::TooShort { .. })
    ));
    assert!(err("expect 0 ab $ cd").contains("last"));
}

#[test]
fn expect_is_a_prefix_match_without_dollar() {
    let Stmt::Expect { expected, .. } = one("expect 0 0a0b") else {
        panic!()
    };
    assert_eq!(expected.compare(&[0x0a, 0x0b, 0xff]), Ok(()));
    assert_eq!(
        expected.compare(&[0x0a, 0x0c]),
        Err(Mismatch::Differs {
            byte: 1,
            expected: "0B".into(),
            got: "0C".into()
        })
    );
}

#[test]
fn expect_without_data_matches_any_packet() {
    let Stmt::Expect { expected, .. } = one("expect 5") else {
        panic!()
    };
    assert!(expected.any);
    assert_eq!(expected.compare(&[1, 2, 3]), Ok(()));
}

#[test]
fn add_with_priority_keys_action_and_handle() {
    let s = one("add test1 503 data.f1:0x****0202 ingress.setb1(val:7, port:3) = h1 # c");
    let Stmt::Add {
        table,
        priority,
        keys,
        action,
    } = s
    else {
        panic!()
    };
    assert_eq!(table, "test1");
    assert_eq!(priority, Some(503));
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].name, "data.f1");
    assert_eq!(action.name, "ingress.setb1");
    assert_eq!(action.args[0].0, "val");
    assert_eq!(action.args[1].1.exact(9).unwrap(), vec![0, 3]);
}

#[test]
fn add_rewrites_dollar_indices_and_accepts_prefix_lengths() {
    let Stmt::Add { keys, .. } = one("add ex1 100 extra$0.h:0x25** act1(val:0x25)") else {
        panic!()
    };
    assert_eq!(keys[0].name, "extra[0].h");
    let Stmt::Add { keys, .. } = one("add t ipv4.dst:0x0a000000/8 a()") else {
        panic!()
    };
    assert_eq!(keys[0].prefix_len, Some(8));
    let Stmt::Add { keys, .. } = one("add t hdr.s[1].f:1 a()") else {
        panic!()
    };
    assert_eq!(keys[0].name, "hdr.s[1].f");
}

#[test]
fn add_needs_a_key() {
    assert!(err("add t a()").contains("at least one key"));
}

#[test]
fn ternary_mask_comes_from_digits_written() {
    let n = Number::lex("0x****0101").unwrap().0;
    assert_eq!(
        n.ternary(32).unwrap(),
        (vec![0, 0, 1, 1], vec![0, 0, 0xff, 0xff])
    );
    // Digits not written are wildcards too.
    let n = Number::lex("0x1").unwrap().0;
    assert_eq!(n.ternary(16).unwrap(), (vec![0, 1], vec![0, 0x0f]));
    let n = Number::lex("0b1*0").unwrap().0;
    assert_eq!(n.ternary(4).unwrap(), (vec![0b100], vec![0b101]));
    assert!(matches!(
        Number::decimal(3).ternary(8),
        Err(NumberError::Decimal { .. })
    ));
}

#[test]
fn lpm_prefix_comes_from_digits_written() {
    let n = Number::lex("0x0a01****").unwrap().0;
    assert_eq!(n.lpm(32).unwrap(), (vec![0x0a, 0x01, 0, 0], 16));
}

#[test]
fn exact_values_are_checked_against_the_width() {
    assert_eq!(Number::decimal(511).exact(9).unwrap(), vec![1, 0xff]);
    assert!(matches!(
        Number::decimal(512).exact(9),
        Err(NumberError::TooWide { .. })
    ));
    let big = Number::lex("340282366920938463463374607431768211455")
        .unwrap()
        .0;
    assert_eq!(big.exact(128).unwrap(), vec![0xff; 16]);
    assert!(Number::lex("0x*1").unwrap().0.exact(8).is_err());
}

#[test]
fn setdefault_and_misc_commands() {
    assert_eq!(
        one("setdefault t a(x:1)"),
        Stmt::SetDefault {
            table: "t".into(),
            action: ActionCall {
                name: "a".into(),
                args: vec![("x".into(), Number::decimal(1))]
            }
        }
    );
    assert_eq!(one("wait"), Stmt::Wait);
    assert_eq!(one("remove all"), Stmt::RemoveAll);
    assert_eq!(
        one("mc_node_create 400 1 2 # c"),
        Stmt::Cli {
            command: "mc_node_create".into(),
            line: "mc_node_create 400 1 2".into()
        }
    );
    assert!(err("frobnicate 1").contains("unknown"));
}

#[test]
fn errors_carry_line_numbers_and_all_are_reported() {
    let e = parse("# c\npacket 0 0\nwait\nbogus\n").unwrap_err();
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].line, 2);
    assert_eq!(e[1].line, 4);
}
