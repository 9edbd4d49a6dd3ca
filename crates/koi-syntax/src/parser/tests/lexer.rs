//! Lexer tests: literals, operators, comments, preprocessor lines, pragmas and errors.

use crate::lexer::{Tok, lex, parse_int};

fn kinds(src: &str) -> Vec<Tok> {
    let (toks, d) = lex(src);
    assert!(d.list.is_empty(), "{:?}", d.list);
    toks.into_iter().map(|t| t.kind).collect()
}

fn int(src: &str) -> (String, Option<(bool, u32)>, u32) {
    let l = parse_int(src).unwrap_or_else(|| panic!("not an integer: {src}"));
    (l.value.to_string(), l.width, l.radix)
}

#[test]
fn integer_literals() {
    assert_eq!(int("0"), ("0".into(), None, 10));
    assert_eq!(int("1_000"), ("1000".into(), None, 10));
    assert_eq!(int("0x1F"), ("31".into(), None, 16));
    assert_eq!(int("0XfF"), ("255".into(), None, 16));
    assert_eq!(int("0b1010_1010"), ("170".into(), None, 2));
    assert_eq!(int("0o17"), ("15".into(), None, 8));
    assert_eq!(int("0d99"), ("99".into(), None, 10));
    assert_eq!(int("16w0377"), ("377".into(), Some((false, 16)), 10));
    assert_eq!(int("16w0o377"), ("255".into(), Some((false, 16)), 8));
    assert_eq!(int("32w0xFF"), ("255".into(), Some((false, 32)), 16));
    assert_eq!(int("32s0xFF"), ("255".into(), Some((true, 32)), 16));
    assert_eq!(int("8w0b_1010_1010"), ("170".into(), Some((false, 8)), 2));
    assert_eq!(int("32w0d255"), ("255".into(), Some((false, 32)), 10));
    assert_eq!(int("8s5"), ("5".into(), Some((true, 8)), 10));
}

#[test]
fn big_integer_literal_keeps_every_bit() {
    let (v, w, _) = int("128w0xffffffffffffffffffffffffffffffff");
    assert_eq!(v, "340282366920938463463374607431768211455");
    assert_eq!(w, Some((false, 128)));
}

#[test]
fn malformed_integers_are_errors() {
    for bad in ["0x", "0b", "8w0x"] {
        let (_, d) = lex(bad);
        assert!(d.has_errors(), "{bad}");
    }
    // A literal stops where its digits stop, as in p4c: `0b12` is `0b1` then `2`.
    assert_eq!(kinds("0b12").len(), 3);
}

#[test]
fn operators_longest_match() {
    use Tok::*;
    assert_eq!(
        kinds(
            "&&& && & ... .. . |+| |-| || | ++ + <<= << <= < >= > == = != ! |+|= |-|= += -= *= /= %= &= |= ^="
        ),
        vec![
            Mask,
            AndAnd,
            Amp,
            Dots,
            Range,
            Dot,
            PlusSat,
            MinusSat,
            OrOr,
            Pipe,
            PlusPlus,
            Plus,
            ShlAssign,
            Shl,
            Le,
            Lt,
            Ge,
            Gt,
            EqEq,
            Assign,
            Ne,
            Not,
            PlusSatAssign,
            MinusSatAssign,
            PlusAssign,
            MinusAssign,
            StarAssign,
            SlashAssign,
            PercentAssign,
            AmpAssign,
            PipeAssign,
            CaretAssign,
            Eof
        ]
    );
}

#[test]
fn greater_than_is_never_joined() {
    let (toks, _) = lex("a >> b");
    assert_eq!(toks.len(), 5);
    assert_eq!(toks[1].kind, Tok::Gt);
    assert_eq!(toks[2].kind, Tok::Gt);
    assert_eq!(toks[1].span.hi, toks[2].span.lo);
}

#[test]
fn keywords_identifiers_and_dont_care() {
    use Tok::*;
    assert_eq!(
        kinds("header_union headerx _ _x value_set list priority"),
        vec![
            HeaderUnion,
            Ident,
            DontCare,
            Ident,
            ValueSet,
            List,
            Priority,
            Eof
        ]
    );
}

#[test]
fn strings_keep_escapes_as_written() {
    let k = kinds(
        r#""a \" b" "c\\" "multi
line""#,
    );
    assert_eq!(k[0], Tok::Str(r#"a \" b"#.into()));
    assert_eq!(k[1], Tok::Str(r"c\\".into()));
    assert_eq!(k[2], Tok::Str("multi\nline".into()));
}

#[test]
fn comments_and_directive_lines_are_skipped() {
    let src = "# 1 \"x.p4\"\n  #pragma once\na // c\n/* b\n # */ c # d";
    let k = kinds(src);
    assert_eq!(k[0], Tok::Ident);
    assert_eq!(k[1], Tok::Ident);
    // A `#` that is not first on its line is an unexpected character.
    assert_eq!(k[2], Tok::Unexpected);
    assert_eq!(k[3], Tok::Ident);
}

#[test]
fn invalid_header_token() {
    assert_eq!(kinds("{#} { # }")[0], Tok::InvalidHeader);
    assert_eq!(kinds("{ # }")[1], Tok::Unexpected);
}

#[test]
fn pragma_runs_to_end_of_line() {
    use Tok::*;
    assert_eq!(
        kinds("@pragma name \"x\"\nheader"),
        vec![Pragma, Ident, Str("x".into()), EndPragma, Header, Eof]
    );
    // A string with a newline does not end the pragma.
    assert_eq!(kinds("@pragma n \"a\nb\" c\n").len(), 6);
}

#[test]
fn lexical_errors() {
    let (_, d) = lex("a /* never closed");
    assert_eq!(d.list.len(), 1);
    assert!(d.list[0].message.contains("unterminated comment"));
    let (_, d) = lex("\"open");
    assert!(d.list[0].message.contains("unterminated string"));
}

#[test]
fn eof_sits_at_the_end_of_the_last_token() {
    let (toks, _) = lex("x\n\n   ");
    assert_eq!(toks[1].kind, Tok::Eof);
    assert_eq!(toks[1].span.lo, 1);
}

#[test]
fn non_ascii_outside_strings_is_one_unexpected_token() {
    let (toks, d) = lex("a é b");
    assert!(d.list.is_empty());
    assert_eq!(toks[1].kind, Tok::Unexpected);
    assert_eq!(toks[1].span.hi - toks[1].span.lo, 2);
}
