//! koi's reader for the STF packet-test format, exactly as p4c's runners implement it
//! (`shared/reference/STF.md`), and the STF packet comparison.
//!
//! An STF file is line oriented. The first word of a line is a case-insensitive keyword; `#`
//! starts a comment except on `packet`/`expect` lines, whose data is hex digits with whitespace
//! anywhere (`*` nibble wildcards and a final `$` only in `expect`). [`parse`] reads a whole file
//! and reports every bad line with its line number; a file with any error must fail its test.
//!
//! Table entries (`add`) keep their numbers as written ([`Number`]): ternary masks and LPM prefix
//! lengths come from the digits written, so the conversion to a value needs the key's width and
//! match kind ([`Number::ternary`], [`Number::lpm`], [`Number::exact`]). Commands that p4c's bmv2
//! runner passes verbatim to `simple_switch_CLI` (multicast, mirroring, registers, meters,
//! counters) are kept as their raw line ([`Stmt::Cli`]).

mod lex;
mod number;
mod packet;

pub use number::{Number, NumberError};
pub use packet::{Expected, Mismatch};

use lex::{Lexer, Tok};

/// One STF statement with the 1-based line it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub line: u32,
    pub stmt: Stmt,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyMatch {
    /// The key field name as written (`$N` already rewritten to `[N]`).
    pub name: String,
    pub value: Number,
    /// A `/len` written after the value (an extension of koi's and p4c's eBPF runner).
    pub prefix_len: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionCall {
    pub name: String,
    pub args: Vec<(String, Number)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stmt {
    /// `add TABLE [PRIO] KEY:VAL... ACTION(ARG:VAL, ...) [= NAME]`
    Add {
        table: String,
        priority: Option<u64>,
        keys: Vec<KeyMatch>,
        action: ActionCall,
    },
    /// `setdefault TABLE ACTION(ARGS)`
    SetDefault { table: String, action: ActionCall },
    /// `packet PORT HEX`
    Packet { port: u64, data: Vec<u8> },
    /// `expect PORT [HEX-with-*] [$]`
    Expect { port: u64, expected: Expected },
    /// `wait`: no effect (p4c's runners ignore it).
    Wait,
    /// `remove all`: no effect (p4c's runners ignore it).
    RemoveAll,
    /// `check_counter ...`: parsed but not checked by p4c's runners.
    CheckCounter { text: String },
    /// `no_packet`: p4c's bmv2 runner fails on it.
    NoPacket,
    /// A command that goes to the switch CLI as written (`mc_mgrp_create 1`,
    /// `mirroring_add 5 2`, `register_write r 0 7`, ...). `command` is lower case.
    Cli { command: String, line: String },
}

/// A problem in an STF file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StfError {
    pub line: u32,
    pub message: String,
}

impl std::fmt::Display for StfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The commands p4c's bmv2 runner sends verbatim to the switch CLI.
const CLI_COMMANDS: &[&str] = &[
    "mirroring_add",
    "mirroring_add_mc",
    "mirroring_delete",
    "mirroring_get",
    "mc_mgrp_create",
    "mc_node_create",
    "mc_node_update",
    "mc_node_associate",
    "counter_read",
    "counter_write",
    "register_read",
    "register_write",
    "register_reset",
    "meter_get_rates",
    "meter_set_rates",
    "meter_array_set_rates",
];

/// Parses a whole STF file. Returns every statement, or every error found.
pub fn parse(text: &str) -> Result<Vec<Line>, Vec<StfError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i as u32 + 1;
        match parse_line(raw) {
            Ok(Some(stmt)) => out.push(Line { line, stmt }),
            Ok(None) => {}
            Err(message) => errors.push(StfError { line, message }),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn parse_line(raw: &str) -> Result<Option<Stmt>, String> {
    let trimmed = raw.trim_start();
    let kw_len = trimmed
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(trimmed.len());
    let (kw, rest) = trimmed.split_at(kw_len);
    if kw.is_empty() {
        return match trimmed.chars().next() {
            None | Some('#') => Ok(None),
            Some(c) => Err(format!("unexpected '{c}' at the start of a line")),
        };
    }
    let kw = kw.to_ascii_lowercase();
    match kw.as_str() {
        "packet" => packet::parse_packet(rest).map(Some),
        "expect" => packet::parse_expect(rest).map(Some),
        "add" => parse_add(rest).map(Some),
        "setdefault" => parse_setdefault(rest).map(Some),
        "wait" => no_args(rest, Stmt::Wait),
        "no_packet" => no_args(rest, Stmt::NoPacket),
        "remove" => {
            let mut lx = Lexer::new(rest);
            match lx.next_tok()? {
                Tok::Id(w) if w.eq_ignore_ascii_case("all") => {}
                t => return Err(format!("expected 'all' after 'remove', found {t}")),
            }
            lx.expect_end()?;
            Ok(Some(Stmt::RemoveAll))
        }
        "check_counter" => Ok(Some(Stmt::CheckCounter {
            text: strip_comment(rest).trim().to_string(),
        })),
        k if CLI_COMMANDS.contains(&k) => Ok(Some(Stmt::Cli {
            command: k.to_string(),
            line: format!("{k}{}", strip_comment(rest).trim_end()),
        })),
        _ => Err(format!("unknown STF command '{kw}'")),
    }
}

fn strip_comment(s: &str) -> &str {
    match s.find('#') {
        Some(i) => &s[..i],
        None => s,
    }
}

fn no_args(rest: &str, stmt: Stmt) -> Result<Option<Stmt>, String> {
    Lexer::new(rest).expect_end()?;
    Ok(Some(stmt))
}

fn parse_add(rest: &str) -> Result<Stmt, String> {
    let mut lx = Lexer::new(rest);
    let table = lx.qualified_name()?;
    let priority = match lx.peek()? {
        Tok::Num(n) if n.is_decimal() => {
            lx.next_tok()?;
            Some(
                n.digits()
                    .parse::<u64>()
                    .map_err(|_| format!("priority '{}' is too large", n.digits()))?,
            )
        }
        _ => None,
    };
    let mut keys = Vec::new();
    loop {
        let name = lx.qualified_name()?;
        match lx.next_tok()? {
            Tok::Colon => {
                let value = lx.number()?;
                let prefix_len = if lx.peek()? == Tok::Slash {
                    lx.next_tok()?;
                    let n = lx.number()?;
                    Some(n.digits().parse::<u32>().map_err(|_| {
                        format!("prefix length '{}' must be a decimal number", n.digits())
                    })?)
                } else {
                    None
                };
                keys.push(KeyMatch {
                    name,
                    value,
                    prefix_len,
                });
            }
            Tok::LParen => {
                if keys.is_empty() {
                    return Err("an 'add' needs at least one key field".into());
                }
                let action = action_args(&mut lx, name)?;
                if lx.peek()? == Tok::Assign {
                    lx.next_tok()?;
                    lx.next_tok()?;
                }
                lx.expect_end()?;
                return Ok(Stmt::Add {
                    table,
                    priority,
                    keys,
                    action,
                });
            }
            t => return Err(format!("expected ':' or '(' after '{name}', found {t}")),
        }
    }
}

fn parse_setdefault(rest: &str) -> Result<Stmt, String> {
    let mut lx = Lexer::new(rest);
    let table = lx.qualified_name()?;
    let name = lx.qualified_name()?;
    match lx.next_tok()? {
        Tok::LParen => {}
        t => return Err(format!("expected '(' after action '{name}', found {t}")),
    }
    let action = action_args(&mut lx, name)?;
    lx.expect_end()?;
    Ok(Stmt::SetDefault { table, action })
}

/// Reads `ARG:VAL, ...)` after an action name and its `(`.
fn action_args(lx: &mut Lexer<'_>, name: String) -> Result<ActionCall, String> {
    let mut args = Vec::new();
    if lx.peek()? == Tok::RParen {
        lx.next_tok()?;
        return Ok(ActionCall { name, args });
    }
    loop {
        let arg = match lx.next_tok()? {
            Tok::Id(a) => a,
            t => return Err(format!("expected an argument name, found {t}")),
        };
        match lx.next_tok()? {
            Tok::Colon => {}
            t => return Err(format!("expected ':' after argument '{arg}', found {t}")),
        }
        args.push((arg, lx.number()?));
        match lx.next_tok()? {
            Tok::Comma => {}
            Tok::RParen => return Ok(ActionCall { name, args }),
            t => {
                return Err(format!(
                    "expected ',' or ')' in action arguments, found {t}"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests;
