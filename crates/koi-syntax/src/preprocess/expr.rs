//! Evaluation of `#if` and `#elif` expressions, after macro expansion: C's integer constant
//! expressions in `intmax_t`/`uintmax_t` (64-bit) arithmetic with the usual arithmetic
//! conversions, short-circuit `&&`, `||` and `?:` (an unevaluated operand may divide by zero),
//! and identifiers that are not macros read as 0. Errors never panic: division by zero,
//! malformed literals and nesting deeper than a limit are reported.

use super::lex::{Kind, Tok};

/// How deeply an expression may nest (parentheses, unary operators, `?:`).
const MAX_DEPTH: u32 = 200;

/// A value: 64 bits, signed or unsigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Val {
    pub bits: u64,
    pub unsigned: bool,
}

impl Val {
    fn signed(v: i64) -> Val {
        Val {
            bits: v as u64,
            unsigned: false,
        }
    }

    fn truth(b: bool) -> Val {
        Val::signed(i64::from(b))
    }

    fn is_true(self) -> bool {
        self.bits != 0
    }

    fn as_i64(self) -> i64 {
        self.bits as i64
    }
}

/// An error in an expression, at a byte column of the directive.
#[derive(Debug, PartialEq, Eq)]
pub struct ExprError {
    pub col: u32,
    pub msg: String,
}

/// Evaluates the expanded tokens of an `#if`; `end_col` is where the directive ends.
pub fn eval(toks: &[Tok], end_col: u32) -> Result<Val, ExprError> {
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
        end_col,
    };
    if toks.is_empty() {
        return Err(p.err_at(end_col, "#if with no expression"));
    }
    let v = p.comma(true)?;
    match p.peek() {
        None => Ok(v),
        Some(t) if t.is_punct(")") => Err(p.err_at(t.col, "missing '(' in expression")),
        Some(t) => Err(p.err_at(
            t.col,
            format!("missing binary operator before token \"{}\"", t.text),
        )),
    }
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
    depth: u32,
    end_col: u32,
}

/// Binary operators and their precedence (higher binds tighter).
fn binary_prec(t: &Tok) -> Option<u8> {
    if t.kind != Kind::Punct {
        return None;
    }
    Some(match &*t.text {
        "*" | "/" | "%" => 10,
        "+" | "-" => 9,
        "<<" | ">>" => 8,
        "<" | "<=" | ">" | ">=" => 7,
        "==" | "!=" => 6,
        "&" => 5,
        "^" => 4,
        "|" => 3,
        "&&" => 2,
        "||" => 1,
        _ => return None,
    })
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos)
    }

    fn err_at(&self, col: u32, msg: impl Into<String>) -> ExprError {
        ExprError {
            col,
            msg: msg.into(),
        }
    }

    fn col(&self) -> u32 {
        self.peek().map_or(self.end_col, |t| t.col)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.peek().is_some_and(|t| t.is_punct(p)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err_at(self.col(), "#if expression nested too deeply"));
        }
        Ok(())
    }

    /// `a , b`
    fn comma(&mut self, ev: bool) -> Result<Val, ExprError> {
        let mut v = self.cond(ev)?;
        while self.eat(",") {
            v = self.cond(ev)?;
        }
        Ok(v)
    }

    /// `c ? a : b`
    fn cond(&mut self, ev: bool) -> Result<Val, ExprError> {
        self.enter()?;
        let c = self.binary(0, ev)?;
        let v = if self.eat("?") {
            let a = self.comma(ev && c.is_true())?;
            if !self.eat(":") {
                return Err(self.err_at(self.col(), "'?' without following ':'"));
            }
            let b = self.cond(ev && !c.is_true())?;
            let unsigned = a.unsigned || b.unsigned;
            let bits = if c.is_true() { a.bits } else { b.bits };
            Val { bits, unsigned }
        } else {
            c
        };
        self.depth -= 1;
        Ok(v)
    }

    /// Binary operators of precedence above `min`, by precedence climbing.
    fn binary(&mut self, min: u8, ev: bool) -> Result<Val, ExprError> {
        let mut lhs = self.unary(ev)?;
        while let Some(op) = self.peek() {
            let Some(prec) = binary_prec(op).filter(|p| *p > min) else {
                break;
            };
            self.pos += 1;
            let rhs_ev = match &*op.text {
                "&&" => ev && lhs.is_true(),
                "||" => ev && !lhs.is_true(),
                _ => ev,
            };
            let rhs = self.binary(prec, rhs_ev)?;
            lhs = apply(op, lhs, rhs, ev)?;
        }
        Ok(lhs)
    }

    fn unary(&mut self, ev: bool) -> Result<Val, ExprError> {
        let Some(t) = self.peek() else {
            return Err(self.err_at(self.end_col, "#if expression ends unexpectedly"));
        };
        if t.kind == Kind::Punct && matches!(&*t.text, "+" | "-" | "~" | "!") {
            self.pos += 1;
            self.enter()?;
            let v = self.unary(ev)?;
            self.depth -= 1;
            return Ok(match &*t.text {
                "-" => Val {
                    bits: v.bits.wrapping_neg(),
                    ..v
                },
                "~" => Val { bits: !v.bits, ..v },
                "!" => Val::truth(!v.is_true()),
                _ => v,
            });
        }
        self.primary(ev)
    }

    fn primary(&mut self, ev: bool) -> Result<Val, ExprError> {
        let Some(t) = self.peek() else {
            return Err(self.err_at(self.end_col, "#if expression ends unexpectedly"));
        };
        self.pos += 1;
        match t.kind {
            Kind::Number => parse_number(&t.text).map_err(|m| self.err_at(t.col, m)),
            Kind::Char => parse_char(&t.text).map_err(|m| self.err_at(t.col, m)),
            Kind::Ident => Ok(Val::signed(0)),
            Kind::Punct if t.is_punct("(") => {
                if self.peek().is_some_and(|n| n.is_punct(")")) {
                    return Err(self.err_at(t.col, "missing expression between '(' and ')'"));
                }
                self.enter()?;
                let v = self.comma(ev)?;
                self.depth -= 1;
                if !self.eat(")") {
                    return Err(self.err_at(self.col(), "missing ')' in expression"));
                }
                Ok(v)
            }
            _ => Err(self.err_at(
                t.col,
                format!(
                    "token \"{}\" is not valid in preprocessor expressions",
                    t.text
                ),
            )),
        }
    }
}

/// Applies binary operator `op`; `ev` is false in an unevaluated operand.
fn apply(op: &Tok, a: Val, b: Val, ev: bool) -> Result<Val, ExprError> {
    let unsigned = a.unsigned || b.unsigned;
    let arith = |bits| Val { bits, unsigned };
    let cmp = |lt: bool, eq: bool| -> bool {
        match &*op.text {
            "<" => lt,
            "<=" => lt || eq,
            ">" => !lt && !eq,
            ">=" => !lt,
            "==" => eq,
            _ => !eq,
        }
    };
    Ok(match &*op.text {
        "*" => arith(a.bits.wrapping_mul(b.bits)),
        "/" | "%" => divide(op, a, b, ev)?,
        "+" => arith(a.bits.wrapping_add(b.bits)),
        "-" => arith(a.bits.wrapping_sub(b.bits)),
        "<<" | ">>" => shift(&op.text, a, b),
        "<" | "<=" | ">" | ">=" | "==" | "!=" => {
            let lt = if unsigned {
                a.bits < b.bits
            } else {
                a.as_i64() < b.as_i64()
            };
            Val::truth(cmp(lt, a.bits == b.bits))
        }
        "&" => arith(a.bits & b.bits),
        "^" => arith(a.bits ^ b.bits),
        "|" => arith(a.bits | b.bits),
        "&&" => Val::truth(a.is_true() && b.is_true()),
        _ => Val::truth(a.is_true() || b.is_true()),
    })
}

fn divide(op: &Tok, a: Val, b: Val, ev: bool) -> Result<Val, ExprError> {
    let unsigned = a.unsigned || b.unsigned;
    if b.bits == 0 {
        if ev {
            return Err(ExprError {
                col: op.col,
                msg: "division by zero in #if".to_string(),
            });
        }
        return Ok(Val { bits: 0, unsigned });
    }
    let div = &*op.text == "/";
    let bits = match (unsigned, div) {
        (true, true) => a.bits / b.bits,
        (true, false) => a.bits % b.bits,
        (false, true) => a.as_i64().wrapping_div(b.as_i64()) as u64,
        (false, false) => a.as_i64().wrapping_rem(b.as_i64()) as u64,
    };
    Ok(Val { bits, unsigned })
}

/// `<<` and `>>`: the result has the left operand's type; a negative count shifts the
/// other way and counts of 64 or more shift everything out.
fn shift(op: &str, a: Val, b: Val) -> Val {
    let neg = !b.unsigned && b.as_i64() < 0;
    let count = if neg {
        b.as_i64().unsigned_abs()
    } else {
        b.bits
    };
    let left = (op == "<<") != neg;
    let bits = if left {
        if count >= 64 { 0 } else { a.bits << count }
    } else if a.unsigned {
        if count >= 64 { 0 } else { a.bits >> count }
    } else {
        (a.as_i64() >> count.min(63)) as u64
    };
    Val {
        bits,
        unsigned: a.unsigned,
    }
}

/// An integer literal: decimal, `0x` hex, `0b` binary or `0` octal, with `u`/`l` suffixes.
pub fn parse_number(text: &str) -> Result<Val, String> {
    let invalid = || format!("invalid integer constant \"{text}\" in #if");
    let body = text.trim_end_matches(['u', 'U', 'l', 'L']);
    let suffix = text.get(body.len()..).unwrap_or("");
    let suffix_u = suffix.contains(['u', 'U']);
    if suffix.len() > 3 || suffix.matches(['u', 'U']).count() > 1 {
        return Err(invalid());
    }
    let lower = body.to_ascii_lowercase();
    let (digits, radix) = if let Some(h) = lower.strip_prefix("0x") {
        (h, 16)
    } else if let Some(b) = lower.strip_prefix("0b") {
        (b, 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (lower.get(1..).unwrap_or(""), 8)
    } else {
        (lower.as_str(), 10)
    };
    if digits.contains('.') || (radix == 10 && digits.contains('e')) {
        return Err(format!("floating constant \"{text}\" in #if"));
    }
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(invalid());
    }
    let bits = u64::from_str_radix(digits, radix)
        .map_err(|_| format!("integer constant \"{text}\" is too large"))?;
    Ok(Val {
        bits,
        unsigned: suffix_u || bits > i64::MAX as u64,
    })
}

/// A character literal such as `'a'` or `'\n'` (multi-character literals combine bytes).
pub fn parse_char(text: &str) -> Result<Val, String> {
    let inner = text
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or("");
    let bytes = inner.as_bytes();
    let mut i = 0;
    let mut value: u64 = 0;
    let mut n = 0;
    while i < bytes.len() {
        let (b, used) = char_unit(bytes.get(i..).unwrap_or(&[]));
        value = (value << 8) | u64::from(b);
        i += used.max(1);
        n += 1;
    }
    if n == 0 {
        return Err("empty character constant in #if".to_string());
    }
    if n == 1 {
        // `char` is signed: '\xff' is -1, as with GCC on x86.
        return Ok(Val::signed(i64::from(value as u8 as i8)));
    }
    Ok(Val::signed(value as i64))
}

/// One byte of a character literal and how many bytes of source it took.
fn char_unit(s: &[u8]) -> (u8, usize) {
    let Some(&c) = s.first() else {
        return (0, 1);
    };
    if c != b'\\' {
        return (c, 1);
    }
    let Some(&e) = s.get(1) else {
        return (b'\\', 1);
    };
    let simple = match e {
        b'n' => Some(b'\n'),
        b't' => Some(b'\t'),
        b'r' => Some(b'\r'),
        b'a' => Some(7),
        b'b' => Some(8),
        b'f' => Some(12),
        b'v' => Some(11),
        b'e' => Some(27),
        b'x' | b'0'..=b'7' => None,
        other => Some(other),
    };
    if let Some(v) = simple {
        return (v, 2);
    }
    let (radix, start, max) = if e == b'x' { (16, 2, 18) } else { (8, 1, 3) };
    let mut v: u32 = 0;
    let mut i = start;
    while i < s.len() && i - start < max {
        let Some(d) = s.get(i).and_then(|d| char::from(*d).to_digit(radix)) else {
            break;
        };
        v = v.wrapping_mul(radix).wrapping_add(d);
        i += 1;
    }
    (v as u8, i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preprocess::lex::tokens;

    fn ev(src: &str) -> Result<i64, String> {
        let (toks, _) = tokens(src, false);
        eval(&toks, 99).map(Val::as_i64).map_err(|e| e.msg)
    }

    #[test]
    fn arithmetic_and_precedence() {
        assert_eq!(ev("1 + 2 * 3"), Ok(7));
        assert_eq!(ev("(1 + 2) * 3"), Ok(9));
        assert_eq!(ev("10 / 3 % 2"), Ok(1));
        assert_eq!(ev("-7 / 2"), Ok(-3));
        assert_eq!(ev("-7 % 2"), Ok(-1));
        assert_eq!(ev("1 << 4 >> 2"), Ok(4));
        assert_eq!(ev("~0"), Ok(-1));
        assert_eq!(ev("!0 + !5"), Ok(1));
        assert_eq!(ev("6 & 3 | 8 ^ 1"), Ok(11));
        assert_eq!(ev("1 ? 2 : 3"), Ok(2));
        assert_eq!(ev("0 ? 2 : 0 ? 3 : 4"), Ok(4));
        assert_eq!(ev("1, 2"), Ok(2));
        assert_eq!(ev("0x10 + 010 + 0b11 + 'A'"), Ok(16 + 8 + 3 + 65));
        assert_eq!(ev("20180101 >= 20200408"), Ok(0));
        assert_eq!(ev("UNDEFINED_NAME + 1"), Ok(1));
    }

    #[test]
    fn unsigned_conversions() {
        assert_eq!(ev("-1 < 0"), Ok(1));
        assert_eq!(ev("-1 < 0u"), Ok(0));
        assert_eq!(ev("0xFFFFFFFFFFFFFFFF == -1"), Ok(1));
        assert_eq!(ev("18446744073709551615 > 0"), Ok(1));
        assert_eq!(ev("-1 >> 63"), Ok(-1));
        assert_eq!(ev("1 << 64"), Ok(0));
        assert_eq!(ev("1 << -1"), Ok(0));
        assert_eq!(ev("(-9223372036854775807 - 1) / -1 < 0"), Ok(1));
        assert_eq!(ev("'\\xff'"), Ok(-1));
    }

    #[test]
    fn short_circuit_skips_errors() {
        assert_eq!(ev("0 && 1 / 0"), Ok(0));
        assert_eq!(ev("1 || 1 % 0"), Ok(1));
        assert_eq!(ev("1 ? 1 : 1 / 0"), Ok(1));
        assert_eq!(ev("1 / 0"), Err("division by zero in #if".to_string()));
    }

    #[test]
    fn errors() {
        assert!(ev("").is_err());
        assert!(ev("1 +").is_err());
        assert!(ev("(1").is_err());
        assert!(ev("1)").is_err());
        assert!(ev("()").is_err());
        assert!(ev("1 2").is_err());
        assert!(ev("1 = 2").is_err());
        assert!(ev("\"s\"").is_err());
        assert!(ev("8w5").is_err());
        assert!(ev("1.5").is_err());
        assert!(ev("08").is_err());
        assert!(ev("99999999999999999999").is_err());
        assert!(ev("1 ? 2").is_err());
        let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
        assert_eq!(
            ev(&deep),
            Err("#if expression nested too deeply".to_string())
        );
        let neg = format!("{}1", "- ".repeat(5000));
        assert!(ev(&neg).is_err());
    }
}
