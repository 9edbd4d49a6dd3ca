//! The POF configuration text format (docs/pof.md has the user's description): [`parse`]
//! reads a whole configuration or a fragment of one (what `koi ctl pof_*` commands take), with
//! `FILE:LINE:COL` errors, and [`print`] writes a configuration back in the same format.
//!
//! The text is words separated by white space, `{`, `}` and `;`; `#` starts a comment to the
//! end of the line. Every statement and instruction starts with its keyword and has a fixed
//! shape, so line breaks carry no meaning.
//!
//! ```text
//! protocol NAME { field NAME OFFSET LENGTH ... }
//! metadata { field NAME OFFSET LENGTH ... }
//! table NAME exact|lpm|ternary [size N] { key FIELD... }
//! first TABLE          cpu_port N          counters N          meters N
//! entry TABLE ID [priority N] [match VALUE...] { INSTRUCTION... }
//! ```

use crate::model::*;

/// A parse error: where and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub at: Loc,
    pub message: String,
}

impl ParseError {
    /// `NAME:LINE:COL: message`.
    pub fn render(&self, name: &str) -> String {
        format!("{name}:{}: {}", self.at, self.message)
    }
}

#[derive(Clone, Debug)]
struct Word<'a> {
    text: &'a str,
    at: Loc,
}

fn words(src: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    for (ln, line) in src.lines().enumerate() {
        let code = line.find('#').map_or(line, |i| &line[..i]);
        let mut start: Option<usize> = None;
        let loc = |i: usize| Loc {
            line: ln as u32 + 1,
            col: line[..i].chars().count() as u32 + 1,
        };
        for (i, c) in code.char_indices() {
            let sep = c.is_whitespace() || c == '{' || c == '}' || c == ';';
            if sep {
                if let Some(s) = start.take() {
                    out.push(Word {
                        text: &code[s..i],
                        at: loc(s),
                    });
                }
                if c == '{' || c == '}' {
                    out.push(Word {
                        text: &code[i..i + 1],
                        at: loc(i),
                    });
                }
            } else if start.is_none() {
                start = Some(i);
            }
        }
        if let Some(s) = start {
            out.push(Word {
                text: &code[s..],
                at: loc(s),
            });
        }
    }
    out
}

struct P<'a> {
    w: Vec<Word<'a>>,
    i: usize,
    end: Loc,
}

type R<T> = Result<T, ParseError>;

fn err<T>(at: Loc, message: impl Into<String>) -> R<T> {
    Err(ParseError {
        at,
        message: message.into(),
    })
}

impl<'a> P<'a> {
    fn peek(&self) -> Option<&Word<'a>> {
        self.w.get(self.i)
    }

    fn at(&self) -> Loc {
        self.peek().map_or(self.end, |w| w.at)
    }

    fn next(&mut self, what: &str) -> R<Word<'a>> {
        match self.w.get(self.i) {
            Some(w) => {
                self.i += 1;
                Ok(w.clone())
            }
            None => err(self.end, format!("expected {what}, found the end")),
        }
    }

    fn eat(&mut self, text: &str) -> bool {
        if self.peek().is_some_and(|w| w.text == text) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, text: &str) -> R<Loc> {
        let w = self.next(&format!("`{text}`"))?;
        if w.text != text {
            return err(w.at, format!("expected `{text}`, found `{}`", w.text));
        }
        Ok(w.at)
    }

    fn name(&mut self, what: &str) -> R<(String, Loc)> {
        let w = self.next(what)?;
        if !is_name(w.text) {
            return err(
                w.at,
                format!(
                    "expected {what} (letters, digits and `_`, not starting with a digit), found `{}`",
                    w.text
                ),
            );
        }
        Ok((w.text.to_string(), w.at))
    }

    fn u32(&mut self, what: &str) -> R<u32> {
        let w = self.next(what)?;
        match number(w.text) {
            Some(v) if v <= u32::MAX as u128 => Ok(v as u32),
            _ => err(
                w.at,
                format!("expected {what} (a number), found `{}`", w.text),
            ),
        }
    }

    fn u64(&mut self, what: &str) -> R<u64> {
        let w = self.next(what)?;
        match number(w.text) {
            Some(v) if v <= u64::MAX as u128 => Ok(v as u64),
            _ => err(
                w.at,
                format!("expected {what} (a number), found `{}`", w.text),
            ),
        }
    }

    fn value(&mut self, what: &str) -> R<u128> {
        let w = self.next(what)?;
        value(w.text).ok_or(()).or_else(|_| {
            err(
                w.at,
                format!(
                    "expected {what} (decimal, 0x hex, 0b binary, a.b.c.d or aa:bb:cc:dd:ee:ff), found `{}`",
                    w.text
                ),
            )
        })
    }

    fn field(&mut self) -> R<FieldRef> {
        let w = self.next("a field (PROTOCOL.FIELD, PROTOCOL.FIELD@BITS or meta.FIELD)")?;
        field_ref(w.text).ok_or(()).or_else(|_| {
            err(
                w.at,
                format!(
                    "expected a field (PROTOCOL.FIELD, PROTOCOL.FIELD@BITS or meta.FIELD), found `{}`",
                    w.text
                ),
            )
        })
    }

    fn meta(&mut self) -> R<String> {
        let at = self.at();
        match self.field()? {
            FieldRef::Meta(m) => Ok(m),
            f => err(
                at,
                format!("expected a metadata field meta.NAME, found `{f}`"),
            ),
        }
    }

    fn fields_block(&mut self) -> R<Vec<Field>> {
        self.expect("{")?;
        let mut fields = Vec::new();
        while !self.eat("}") {
            let at = self.at();
            let w = self.next("`field` or `}`")?;
            if w.text != "field" {
                return err(
                    w.at,
                    format!("expected `field` or `}}`, found `{}`", w.text),
                );
            }
            let (name, _) = self.name("a field name")?;
            let offset = self.u32("the field's offset in bits")?;
            let length = self.u32("the field's length in bits")?;
            if length == 0 {
                return err(at, format!("field {name} has length 0"));
            }
            if fields.iter().any(|f: &Field| f.name == name) {
                return err(at, format!("field {name} is defined twice"));
            }
            fields.push(Field {
                name,
                offset,
                length,
                at,
            });
        }
        Ok(fields)
    }

    fn statement(&mut self, c: &mut Config) -> R<()> {
        let w = self.next("a statement")?;
        let at = w.at;
        match w.text {
            "protocol" => {
                let (name, _) = self.name("a protocol name")?;
                if name == "meta" {
                    return err(
                        at,
                        "`meta` names the metadata; choose another protocol name",
                    );
                }
                let fields = self.fields_block()?;
                c.protocols.push(Protocol { name, fields, at });
            }
            "metadata" => {
                let fields = self.fields_block()?;
                c.metadata.extend(fields);
            }
            "table" => {
                let (name, _) = self.name("a table name")?;
                let kw = self.next("exact, lpm or ternary")?;
                let kind = match kw.text {
                    "exact" => MatchKind::Exact,
                    "lpm" => MatchKind::Lpm,
                    "ternary" => MatchKind::Ternary,
                    t => {
                        return err(
                            kw.at,
                            format!("expected exact, lpm or ternary, found `{t}`"),
                        );
                    }
                };
                let size = if self.eat("size") {
                    self.u32("the table size")?
                } else {
                    DEFAULT_TABLE_SIZE
                };
                self.expect("{")?;
                let mut keys = Vec::new();
                while !self.eat("}") {
                    let w = self.next("`key` or `}`")?;
                    if w.text != "key" {
                        return err(w.at, format!("expected `key` or `}}`, found `{}`", w.text));
                    }
                    keys.push(self.field()?);
                    while self
                        .peek()
                        .is_some_and(|w| w.text != "}" && w.text != "key")
                    {
                        keys.push(self.field()?);
                    }
                }
                c.tables.push(Table {
                    name,
                    kind,
                    size,
                    keys,
                    at,
                });
            }
            "first" => c.first = Some(self.name("a table name")?.0),
            "cpu_port" => c.cpu_port = Some(self.u64("the CPU port")?),
            "counters" => c.counters = Some(self.u32("the number of counters")?),
            "meters" => c.meters = Some(self.u32("the number of meters")?),
            "entry" => {
                let (table, _) = self.name("the entry's table")?;
                let id = self.u32("the entry's id")?;
                let priority = if self.eat("priority") {
                    self.u32("the priority")?
                } else {
                    0
                };
                let mut matches = Vec::new();
                if self.eat("match") {
                    while self.peek().is_some_and(|w| w.text != "{") {
                        let w = self.next("a match")?;
                        matches.push(match_value(w.text).ok_or(()).or_else(|_| {
                            err(
                                w.at,
                                format!(
                                    "expected a match (VALUE, VALUE/PREFIX, VALUE&&&MASK or *), found `{}`",
                                    w.text
                                ),
                            )
                        })?);
                    }
                }
                self.expect("{")?;
                let mut instructions = Vec::new();
                while !self.eat("}") {
                    instructions.push(self.instruction()?);
                }
                c.entries.push(Entry {
                    table,
                    id,
                    priority,
                    matches,
                    instructions,
                    at,
                });
            }
            "miss" => {
                let (table, _) = self.name("the miss's table")?;
                self.expect("{")?;
                let mut instructions = Vec::new();
                while !self.eat("}") {
                    instructions.push(self.instruction()?);
                }
                c.misses.push(Miss {
                    table,
                    instructions,
                    at,
                });
            }
            t => {
                return err(
                    at,
                    format!(
                        "expected protocol, metadata, table, entry, miss, first, cpu_port, counters or meters, found `{t}`"
                    ),
                );
            }
        }
        Ok(())
    }

    fn instruction(&mut self) -> R<Instruction> {
        let w = self.next("an instruction")?;
        let a = |a: Action| Ok(Instruction::Apply(a));
        match w.text {
            "apply" => match self.instruction()? {
                i @ Instruction::Apply(_) => Ok(i),
                _ => err(w.at, "`apply` takes an action, not an instruction"),
            },
            "goto" => {
                let (table, _) = self.name("a table name")?;
                let shift = if self.eat("shift") {
                    self.u32("the offset shift in bits")?
                } else {
                    0
                };
                Ok(Instruction::Goto { table, shift })
            }
            "write_metadata" => {
                let field = self.meta()?;
                let value = self.value("a value")?;
                Ok(Instruction::WriteMetadata { field, value })
            }
            "meter" => Ok(Instruction::Meter(self.u32("a meter index")?)),
            "output" => a(Action::Output(self.u64("a port")?)),
            "output_field" => a(Action::OutputField(self.field()?)),
            "drop" => a(Action::Drop),
            "packet_in" => a(Action::PacketIn),
            "set_field" => {
                let f = self.field()?;
                a(Action::SetField(f, self.value("a value")?))
            }
            "set_field_from_metadata" => {
                let f = self.field()?;
                a(Action::SetFieldFromMetadata(f, self.meta()?))
            }
            "modify_field" => {
                let f = self.field()?;
                let v = self.next("a value to add")?;
                let d = match v.text.strip_prefix('-') {
                    Some(rest) => value(rest).map(|x| -(x as i128)),
                    None => value(v.text).map(|x| x as i128),
                };
                match d {
                    Some(d) => a(Action::ModifyField(f, d)),
                    None => err(v.at, format!("expected a value to add, found `{}`", v.text)),
                }
            }
            "add_field" => {
                let offset = self.u32("the offset in bits")?;
                let length = self.u32("the length in bits")?;
                let v = self.next("the bits to insert (0x hex)")?;
                let Some(value) = hex_bytes(v.text) else {
                    return err(
                        v.at,
                        format!(
                            "expected the bits to insert as 0x hex digits, found `{}`",
                            v.text
                        ),
                    );
                };
                if length == 0 || length % 8 != 0 || value.len() * 8 != length as usize {
                    return err(
                        v.at,
                        format!(
                            "add_field inserts whole bytes: length {length} must be a multiple of 8 and the value exactly {length} bits ({} hex digits)",
                            length / 4
                        ),
                    );
                }
                a(Action::AddField {
                    offset,
                    length,
                    value,
                })
            }
            "delete_field" => {
                let offset = self.u32("the offset in bits")?;
                let length = self.u32("the length in bits")?;
                a(Action::DeleteField { offset, length })
            }
            "calculate_checksum" => {
                let field = self.field()?;
                let offset = self.u32("the offset in bits")?;
                let length = self.u32("the length in bits")?;
                a(Action::CalculateChecksum {
                    field,
                    offset,
                    length,
                })
            }
            "counter" => a(Action::Counter(self.u32("a counter index")?)),
            "group" => a(Action::Group(self.u32("a group")?)),
            t => err(
                w.at,
                format!(
                    "expected an instruction (goto, write_metadata, meter) or an action (output, output_field, drop, packet_in, set_field, set_field_from_metadata, modify_field, add_field, delete_field, calculate_checksum, counter, group), found `{t}`"
                ),
            ),
        }
    }
}

/// Parses a configuration (or a fragment: any statements).
pub fn parse(src: &str) -> Result<Config, ParseError> {
    let lines = src.lines().count() as u32;
    let mut p = P {
        w: words(src),
        i: 0,
        end: Loc {
            line: lines.max(1),
            col: src
                .lines()
                .last()
                .map_or(1, |l| l.chars().count() as u32 + 1),
        },
    };
    let mut c = Config::default();
    while p.peek().is_some() {
        p.statement(&mut c)?;
    }
    Ok(c)
}

fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn field_ref(s: &str) -> Option<FieldRef> {
    let (proto, rest) = s.split_once('.')?;
    let (field, base) = match rest.split_once('@') {
        Some((f, b)) => (
            f,
            Some(number(b).filter(|&v| v <= u32::MAX as u128)? as u32),
        ),
        None => (rest, None),
    };
    if !is_name(proto) || !is_name(field) {
        return None;
    }
    if proto == "meta" {
        return base.is_none().then(|| FieldRef::Meta(field.into()));
    }
    Some(FieldRef::Packet {
        protocol: proto.into(),
        field: field.into(),
        base,
    })
}

/// A number: decimal, `0x` hex or `0b` binary, `_` allowed between digits.
fn number(s: &str) -> Option<u128> {
    let s = s.replace('_', "");
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        (h.to_string(), 16)
    } else if let Some(b) = s.strip_prefix("0b") {
        (b.to_string(), 2)
    } else {
        (s.clone(), 10)
    };
    if digits.is_empty() {
        return None;
    }
    u128::from_str_radix(&digits, radix).ok()
}

/// A value: a number, an IPv4 address or a MAC address.
fn value(s: &str) -> Option<u128> {
    if s.contains('.') {
        let parts: Vec<&str> = s.split('.').collect();
        if parts.len() != 4 {
            return None;
        }
        let mut v = 0u128;
        for p in parts {
            v = v << 8 | p.parse::<u8>().ok()? as u128;
        }
        return Some(v);
    }
    if s.contains(':') {
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 6 {
            return None;
        }
        let mut v = 0u128;
        for p in parts {
            if p.len() != 2 {
                return None;
            }
            v = v << 8 | u8::from_str_radix(p, 16).ok()? as u128;
        }
        return Some(v);
    }
    number(s)
}

fn match_value(s: &str) -> Option<MatchValue> {
    if s == "*" {
        return Some(MatchValue::Any);
    }
    if let Some((v, m)) = s.split_once("&&&") {
        return Some(MatchValue::Masked(value(v)?, value(m)?));
    }
    if let Some((v, l)) = s.split_once('/') {
        let len = l.parse::<u32>().ok()?;
        return Some(MatchValue::Prefix(value(v)?, len));
    }
    value(s).map(MatchValue::Exact)
}

fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    let h = s.strip_prefix("0x")?.replace('_', "");
    if h.is_empty() || h.len() % 2 != 0 {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok())
        .collect()
}

fn hex(v: u128) -> String {
    format!("0x{v:x}")
}

/// Writes `c` in the text format ([`parse`] reads it back to an equal configuration).
pub fn print(c: &Config) -> String {
    let mut s = String::new();
    if let Some(p) = c.cpu_port {
        s.push_str(&format!("cpu_port {p}\n"));
    }
    if let Some(n) = c.counters {
        s.push_str(&format!("counters {n}\n"));
    }
    if let Some(n) = c.meters {
        s.push_str(&format!("meters {n}\n"));
    }
    let fields = |s: &mut String, fs: &[Field]| {
        for f in fs {
            s.push_str(&format!("  field {} {} {}\n", f.name, f.offset, f.length));
        }
    };
    if !c.metadata.is_empty() {
        s.push_str("metadata {\n");
        fields(&mut s, &c.metadata);
        s.push_str("}\n");
    }
    for p in &c.protocols {
        s.push_str(&format!("protocol {} {{\n", p.name));
        fields(&mut s, &p.fields);
        s.push_str("}\n");
    }
    for t in &c.tables {
        let keys: Vec<String> = t.keys.iter().map(|k| k.to_string()).collect();
        s.push_str(&format!(
            "table {} {} size {} {{ key {} }}\n",
            t.name,
            t.kind.name(),
            t.size,
            keys.join(" ")
        ));
    }
    if let Some(f) = &c.first {
        s.push_str(&format!("first {f}\n"));
    }
    for e in &c.entries {
        s.push_str(&print_entry(e));
    }
    for m in &c.misses {
        s.push_str(&format!("miss {} {{\n", m.table));
        print_instructions(&mut s, &m.instructions);
        s.push_str("}\n");
    }
    s
}

/// One entry in the text format.
pub fn print_entry(e: &Entry) -> String {
    let mut s = format!("entry {} {} priority {}", e.table, e.id, e.priority);
    if !e.matches.is_empty() {
        s.push_str(" match");
        for m in &e.matches {
            s.push(' ');
            s.push_str(&match m {
                MatchValue::Exact(v) => hex(*v),
                MatchValue::Prefix(v, l) => format!("{}/{l}", hex(*v)),
                MatchValue::Masked(v, m) => format!("{}&&&{}", hex(*v), hex(*m)),
                MatchValue::Any => "*".into(),
            });
        }
    }
    s.push_str(" {\n");
    print_instructions(&mut s, &e.instructions);
    s.push_str("}\n");
    s
}

/// Instructions in the text format, one a line.
fn print_instructions(s: &mut String, instructions: &[Instruction]) {
    for i in instructions {
        s.push_str("  ");
        s.push_str(&match i {
            Instruction::Goto { table, shift } => format!("goto {table} shift {shift}"),
            Instruction::WriteMetadata { field, value } => {
                format!("write_metadata meta.{field} {}", hex(*value))
            }
            Instruction::Meter(m) => format!("meter {m}"),
            Instruction::Apply(a) => match a {
                Action::Output(p) => format!("output {p}"),
                Action::OutputField(f) => format!("output_field {f}"),
                Action::Drop => "drop".into(),
                Action::PacketIn => "packet_in".into(),
                Action::SetField(f, v) => format!("set_field {f} {}", hex(*v)),
                Action::SetFieldFromMetadata(f, m) => {
                    format!("set_field_from_metadata {f} meta.{m}")
                }
                Action::ModifyField(f, d) if *d < 0 => format!("modify_field {f} -{}", -d),
                Action::ModifyField(f, d) => format!("modify_field {f} {d}"),
                Action::AddField {
                    offset,
                    length,
                    value,
                } => {
                    let h: String = value.iter().map(|b| format!("{b:02x}")).collect();
                    format!("add_field {offset} {length} 0x{h}")
                }
                Action::DeleteField { offset, length } => {
                    format!("delete_field {offset} {length}")
                }
                Action::CalculateChecksum {
                    field,
                    offset,
                    length,
                } => format!("calculate_checksum {field} {offset} {length}"),
                Action::Counter(n) => format!("counter {n}"),
                Action::Group(g) => format!("group {g}"),
            },
        });
        s.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../examples/pof/kpofvs.pof");

    #[test]
    fn the_example_parses_and_prints_back_to_the_same_configuration() {
        let c = parse(EXAMPLE).unwrap();
        assert_eq!(c.protocols.len(), 3);
        assert_eq!(c.protocol("ipv4").unwrap().fields.len(), 6);
        let eth = c.table("eth").unwrap();
        assert_eq!(eth.kind, MatchKind::Exact);
        let fwd = c.table("ipv4_fwd").unwrap();
        assert_eq!(fwd.kind, MatchKind::Lpm);
        assert_eq!(
            fwd.keys,
            vec![FieldRef::Packet {
                protocol: "ipv4".into(),
                field: "dst".into(),
                base: None
            }]
        );
        let e = c.entries_of("ipv4_fwd").next().unwrap();
        assert!(matches!(e.matches[0], MatchValue::Prefix(0x0a00_0100, 24)));
        let again = parse(&print(&c)).unwrap();
        assert_eq!(again, c);
    }

    #[test]
    fn a_miss_parses_and_prints_back() {
        let c = parse(&format!(
            "{EXAMPLE}\nmiss ipv4_fwd {{ counter 9 output 3 }}\nmiss eth {{ drop }}"
        ))
        .unwrap();
        assert_eq!(c.misses.len(), 2);
        let m = c.miss_of("ipv4_fwd").unwrap();
        assert_eq!(
            m.instructions,
            vec![
                Instruction::Apply(Action::Counter(9)),
                Instruction::Apply(Action::Output(3))
            ]
        );
        let printed = print(&c);
        assert!(
            printed.contains("miss ipv4_fwd {\n  counter 9\n  output 3\n}"),
            "{printed}"
        );
        assert_eq!(parse(&printed).unwrap(), c);
    }

    #[test]
    fn values_in_every_notation() {
        assert_eq!(value("10.0.1.2"), Some(0x0a00_0102));
        assert_eq!(value("00:11:22:33:44:55"), Some(0x0011_2233_4455));
        assert_eq!(value("0x08_00"), Some(0x800));
        assert_eq!(value("0b101"), Some(5));
        assert_eq!(value("300.1.1.1"), None);
        assert_eq!(match_value("*"), Some(MatchValue::Any));
        assert_eq!(
            match_value("0x800&&&0xff00"),
            Some(MatchValue::Masked(0x800, 0xff00))
        );
        assert_eq!(hex_bytes("0x0a0B"), Some(vec![0x0a, 0x0b]));
        assert_eq!(hex_bytes("0xabc"), None);
    }

    #[test]
    fn errors_say_where() {
        let e = parse("protocol eth {\n  field dst 0 48\n  feild src 48 48\n}\n").unwrap_err();
        assert_eq!((e.at.line, e.at.col), (3, 3));
        assert!(e.message.contains("`feild`"), "{}", e.message);
        assert_eq!(
            e.render("x.pof"),
            "x.pof:3:3: expected `field` or `}`, found `feild`"
        );
        let e = parse("entry t 1 match 1 { output }").unwrap_err();
        assert_eq!((e.at.line, e.at.col), (1, 28));
        assert!(e.message.contains("a port"), "{}", e.message);
        let e = parse("table t exact {\n key eth.x\n key 12\n}").unwrap_err();
        assert_eq!((e.at.line, e.at.col), (3, 6));
        let e = parse("entry t 1 {\n add_field 0 12 0x0a }").unwrap_err();
        assert!(e.message.contains("whole bytes"), "{}", e.message);
        let e = parse("protocol p { field a 0 8 field a 8 8 }").unwrap_err();
        assert!(e.message.contains("twice"), "{}", e.message);
    }
}
