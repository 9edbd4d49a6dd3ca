//! Compiling a POF configuration: [`generate`] writes the v1model P4-16 program that forwards
//! as the configuration says, and [`compile`] runs koi's frontend over it into a verified
//! [`koi_ir::Pipeline`], the same IR a P4 program becomes, so a POF pipeline gets every
//! cache, compiled action program, trace and counter a P4 one has.
//!
//! # From {offset, length} to headers
//!
//! Every table has a **static cursor**: 0 for the first table, and for a table reached by
//! `goto T shift S` from a table at cursor C, C + S. A table reached along two paths with
//! different cursors, a goto cycle, or an offset shift read from the packet (a variable
//! offset) is refused: POF's variable offsets are represented only as the sum of constant
//! shifts along the table graph. A table not reachable from the first one is kept in the
//! configuration but not compiled (it has no cursor).
//!
//! With the cursors known, every field a table or its entries use is an absolute bit range
//! of the received packet. The packet's front is cut into **segments** (P4 headers extracted
//! one after the other) at the byte end of what each table uses (its keys, its entries' and
//! its miss's fields) and at every `add_field` / `delete_field` point; each segment is cut into
//! **pieces** (P4 fields) at every used range's bit boundaries. A POF field is then the concatenation of its pieces (`a ++ b`), a write
//! assigns each piece its slice, and the megaflow of a packet masks only the pieces read.
//! A packet shorter than a segment stops the parser there (BMv2's `PacketTooShort`: later
//! segments stay invalid and the rest is payload); a table whose fields (keys, every
//! entry's and its miss's) reach an invalid segment is not applied (nor is its miss run).
//!
//! A table's **miss** instructions (POF's table-miss entry) are one more instruction list
//! of the table: its gotos are edges of the table graph, its fields uses of the table, its
//! shape one of the table's shapes.
//!
//! Offsets always refer to the packet as received: `add_field` and `delete_field` change what
//! is sent (an inserted header, a segment not emitted), not the offsets later instructions
//! see. Insertions at the same offset appear in the order written.
//!
//! # The program
//!
//! - The ingress (control `pof`) starts with the packet dropped (`mark_to_drop`): a packet no
//!   `output` reaches goes nowhere, as in POF. `meta.pof_next` holds the next table's number
//!   (0: none); the tables are applied in a topological order, each under
//!   `if (meta.pof_next == N)`.
//! - Each instruction **shape** of a table (an entry's instruction list with the constants
//!   left out: ports, values written or added, counter, meter and group numbers, inserted
//!   bytes; see [`shape`]) is one action `a_TABLE_K` (K: the shape's rank among the table's
//!   shapes) holding its instructions in order, the constants as its parameters. The tables
//!   have no `entries`: [`Generated::writes`] installs each entry as a control-plane write
//!   of its match, its priority (ternary) and its shape's action with its constants, and the
//!   miss instructions as the table's default action (its shape's action with its
//!   constants). The program's default action `pof_miss` does nothing (the packet stays
//!   dropped).
//! - So the program depends on the configuration's structure alone. What it depends on of
//!   the entries (the cursors from their `goto` shifts, the segments and pieces from the
//!   fields they use and where they insert and delete, the checksums they compute) is part
//!   of their shapes, never of their values: two configurations that differ only in the
//!   entries' matches, priorities and constants (and in which entries have a shape the
//!   table has already) generate the same program, and one changes into the other by table
//!   writes ([`Generated::same_structure`]).
//! - `counter N` counts in the indexed counter `pof.pof_counter`, `meter N` executes
//!   `pof.pof_meter` (a red packet is dropped after the last table); both exist in every
//!   POF program, so their values carry over every change.
//! - `calculate_checksum` sets a flag the v1model checksum control tests: the checksum is
//!   computed over the range's pieces (the checksum field excluded, i.e. counted as zero)
//!   after every other change, as IPv4's header checksum needs.

use crate::model::*;
use crate::writes::TableWrite;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::sync::Arc;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Why a configuration does not compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    /// The definition at fault, when there is one.
    pub at: Option<Loc>,
    pub message: String,
}

impl CompileError {
    /// `NAME:LINE:COL: message` (or `NAME: message`).
    pub fn render(&self, name: &str) -> String {
        match self.at {
            Some(at) => format!("{name}:{at}: {}", self.message),
            None => format!("{name}: {}", self.message),
        }
    }
}

type R<T> = Result<T, CompileError>;

fn err<T>(at: Loc, message: impl Into<String>) -> R<T> {
    Err(CompileError {
        at: Some(at),
        message: message.into(),
    })
}

/// The P4 control-plane name of a POF table.
pub fn table_name(table: &str) -> String {
    format!("pof.t_{table}")
}

/// What [`generate`] found about the configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Every compiled table's cursor (bits), in application order.
    pub cursors: Vec<(String, u32)>,
    /// Tables not reachable from the first one (not compiled).
    pub unreachable: Vec<String>,
    /// The segments extracted: byte ranges of the packet.
    pub segments: Vec<(u32, u32)>,
}

/// A compiled configuration: the generated P4 program, its layout, and the table writes that
/// install the configuration's entries into a fresh state of the program.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The program: it depends only on the configuration's *structure* (protocols, metadata,
    /// tables, the entries' instruction shapes), never on the entries' values.
    pub p4: String,
    pub layout: Layout,
    /// One write per entry of a compiled table, each table's in priority order (higher
    /// first, then the lower id).
    pub writes: Vec<TableWrite>,
    /// The entries of ternary tables whose priority another entry of the table shares, in
    /// their order: their order is their tie-break, which only a fresh table keeps, so they
    /// belong to the structure ([`Generated::same_structure`]).
    pub ties: Vec<String>,
}

impl Generated {
    /// Whether `other`'s entries can be installed as table writes into a running program of
    /// `self` (the same program, the same tie-breaks), rather than by compiling `other`.
    pub fn same_structure(&self, other: &Generated) -> bool {
        self.p4 == other.p4 && self.ties == other.ties
    }
}

/// A field use: an absolute bit range in the packet or in the metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Range {
    Packet(u32, u32),
    Meta(u32, u32),
}

impl Range {
    fn len(self) -> u32 {
        match self {
            Range::Packet(_, l) | Range::Meta(_, l) => l,
        }
    }
}

struct Gen<'c> {
    c: &'c Config,
    cursors: HashMap<&'c str, u32>,
    /// Packet bit cuts and byte cuts.
    bit_cuts: BTreeSet<u32>,
    byte_cuts: BTreeSet<u32>,
    meta_cuts: BTreeSet<u32>,
    /// Packet pieces: start bit → (segment, width).
    pieces: BTreeMap<u32, (usize, u32)>,
    segments: Vec<(u32, u32)>,
    meta_pieces: BTreeMap<u32, u32>,
    /// Each compiled table's entries and instruction shapes.
    shapes: HashMap<&'c str, Shapes<'c>>,
    /// Each compiled table's key widths, in key order.
    key_widths: HashMap<String, Vec<u32>>,
}

/// A table's entries in priority order (higher first, then the lower id), each with the
/// rank of its shape, and one entry of each shape, in the order of the shapes.
struct Shapes<'c> {
    entries: Vec<(&'c Entry, usize)>,
    /// The rank of the miss's shape, when the table has a miss.
    miss: Option<usize>,
    /// One instruction list of each shape, with its owner.
    reps: Vec<(Loc, What<'c>, &'c [Instruction])>,
}

impl<'c> Shapes<'c> {
    fn of(c: &'c Config, t: &'c str) -> Shapes<'c> {
        let mut entries: Vec<&Entry> = c.entries_of(t).collect();
        entries.sort_by_key(|e| (std::cmp::Reverse(e.priority), e.id));
        // The distinct shapes in the order first seen, and each entry's among them (an
        // entry's shape is mostly the one before's).
        let mut seen: FastMap<Vec<Op<'c>>, usize> = FastMap::default();
        let mut firsts: Vec<(Loc, What<'c>, &'c [Instruction])> = Vec::new();
        let mut of_entry = Vec::with_capacity(entries.len() + 1);
        let mut last: Option<(Vec<Op<'c>>, usize)> = None;
        let miss = c
            .miss_of(t)
            .map(|m| (m.at, What::Miss(t), &m.instructions[..]));
        let all = entries
            .iter()
            .map(|e| (e.at, What::Entry(e.id, t), &e.instructions[..]))
            .chain(miss);
        for list in all {
            let k = shape(list.2);
            let i = match &last {
                Some((l, i)) if *l == k => *i,
                _ => {
                    let i = *seen.entry(k.clone()).or_insert_with(|| {
                        firsts.push(list);
                        firsts.len() - 1
                    });
                    last = Some((k, i));
                    i
                }
            };
            of_entry.push(i);
        }
        // Ranked in the order of the shapes, so that the ranks depend on the shapes alone.
        let mut by_shape: Vec<(&Vec<Op>, usize)> = seen.iter().map(|(k, &i)| (k, i)).collect();
        by_shape.sort();
        let mut rank = vec![0; by_shape.len()];
        for (r, (_, i)) in by_shape.iter().enumerate() {
            rank[*i] = r;
        }
        Shapes {
            entries: entries
                .iter()
                .zip(&of_entry)
                .map(|(e, i)| (*e, rank[*i]))
                .collect(),
            miss: c.miss_of(t).map(|_| rank[of_entry[entries.len()]]),
            reps: by_shape.iter().map(|(_, i)| firsts[*i]).collect(),
        }
    }
}

/// Writes the P4 program of `c` (see the module doc).
pub fn generate(c: &Config) -> R<Generated> {
    check_names(c)?;
    let (order, cursors, unreachable) = graph(c)?;
    let mut g = Gen {
        c,
        cursors,
        bit_cuts: BTreeSet::new(),
        byte_cuts: BTreeSet::new(),
        meta_cuts: BTreeSet::new(),
        pieces: BTreeMap::new(),
        segments: Vec::new(),
        meta_pieces: BTreeMap::new(),
        shapes: order.iter().map(|t| (*t, Shapes::of(c, t))).collect(),
        key_widths: HashMap::new(),
    };
    g.layout(&order)?;
    let p4 = g.program(&order)?;
    let mut writes = Vec::with_capacity(c.entries.len());
    let mut ties = Vec::new();
    let mut params = Vec::new();
    for t in &order {
        let table = c.table(t).expect("checked");
        let shapes = &g.shapes[t];
        let entries: Vec<&Entry> = shapes.entries.iter().map(|(e, _)| *e).collect();
        let widths = &g.key_widths[*t];
        let p4_table: Arc<str> = table_name(t).into();
        let pof_table: Arc<str> = table.name.as_str().into();
        let actions: Vec<Arc<str>> = (0..shapes.reps.len())
            .map(|k| format!("pof.a_{t}_{k}").into())
            .collect();
        let first = writes.len();
        for (e, k) in &shapes.entries {
            params.clear();
            for i in &e.instructions {
                g.params(i, &mut params);
            }
            let args = params
                .iter()
                .map(|&(w, v)| koi_ir::Bits::from_u128(w, v))
                .collect();
            writes.push(TableWrite::new(
                table,
                &pof_table,
                &p4_table,
                e,
                widths,
                actions[*k].clone(),
                args,
            ));
        }
        // Two entries matching the same packets (with the same priority) cannot both be in
        // the table.
        let mut seen: FastMap<(&[koi_ir::Pattern], Option<u32>), u32> =
            FastMap::with_capacity_and_hasher(entries.len(), Default::default());
        for (w, e) in writes[first..].iter().zip(&entries) {
            if let Some(other) = seen.insert((&w.keys, w.priority), e.id) {
                return err(
                    e.at,
                    format!(
                        "entry {} of table {t} matches what entry {other} matches{}",
                        e.id,
                        if w.priority.is_some() {
                            ", at the same priority"
                        } else {
                            ""
                        }
                    ),
                );
            }
        }
        if let (Some(m), Some(k)) = (c.miss_of(t), shapes.miss) {
            params.clear();
            for i in &m.instructions {
                g.params(i, &mut params);
            }
            let args = params
                .iter()
                .map(|&(w, v)| koi_ir::Bits::from_u128(w, v))
                .collect();
            writes.push(TableWrite::miss(
                &pof_table,
                &p4_table,
                actions[k].clone(),
                args,
            ));
        }
        if table.kind == MatchKind::Ternary {
            ties.extend(crate::writes::ties(table, &entries));
        }
    }
    let layout = Layout {
        cursors: order
            .iter()
            .map(|t| (t.to_string(), g.cursors[t]))
            .collect(),
        unreachable,
        segments: g.segments.clone(),
    };
    Ok(Generated {
        p4,
        layout,
        writes,
        ties,
    })
}

/// One instruction of a [`shape`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Op<'c> {
    Goto(&'c str, u32),
    WriteMetadata(&'c str),
    Meter,
    Output,
    OutputField(&'c FieldRef),
    Drop,
    PacketIn,
    SetField(&'c FieldRef),
    SetFieldFromMetadata(&'c FieldRef, &'c str),
    ModifyField(&'c FieldRef),
    AddField(u32, u32),
    DeleteField(u32, u32),
    CalculateChecksum(&'c FieldRef, u32, u32),
    Counter,
    Group,
}

/// An instruction list's **shape**: the instructions with the constants that become action
/// parameters ([`Gen::params`]) left out. Entries of one table with the same shape run the
/// same action with their own arguments.
pub(crate) fn shape(instructions: &[Instruction]) -> Vec<Op<'_>> {
    instructions
        .iter()
        .map(|i| match i {
            Instruction::Goto { table, shift } => Op::Goto(table, *shift),
            Instruction::WriteMetadata { field, .. } => Op::WriteMetadata(field),
            Instruction::Meter(_) => Op::Meter,
            Instruction::Apply(a) => match a {
                Action::Output(_) => Op::Output,
                Action::OutputField(f) => Op::OutputField(f),
                Action::Drop => Op::Drop,
                Action::PacketIn => Op::PacketIn,
                Action::SetField(f, _) => Op::SetField(f),
                Action::SetFieldFromMetadata(f, m) => Op::SetFieldFromMetadata(f, m),
                Action::ModifyField(f, _) => Op::ModifyField(f),
                Action::AddField { offset, length, .. } => Op::AddField(*offset, *length),
                Action::DeleteField { offset, length } => Op::DeleteField(*offset, *length),
                Action::CalculateChecksum {
                    field,
                    offset,
                    length,
                } => Op::CalculateChecksum(field, *offset, *length),
                Action::Counter(_) => Op::Counter,
                Action::Group(_) => Op::Group,
            },
        })
        .collect()
}

/// Compiles `c` to a verified pipeline (through [`generate`] and koi's frontend).
pub fn compile(c: &Config) -> R<(Generated, koi_ir::Pipeline)> {
    let g = generate(c)?;
    let compiled = koi_conformance::compile_str("pof.p4", &g.p4, &koi_syntax::PpOptions::default())
        .map_err(|e| CompileError {
            at: None,
            message: format!(
                "the P4 program generated for this configuration does not compile (a koi bug):\n{}",
                e.render()
            ),
        })?;
    Ok((g, compiled.pipeline))
}

fn check_names(c: &Config) -> R<()> {
    let mut seen = HashMap::new();
    for p in &c.protocols {
        if seen.insert(p.name.as_str(), p.at).is_some() {
            return err(p.at, format!("protocol {} is defined twice", p.name));
        }
        for f in &p.fields {
            if f.length > MAX_FIELD_BITS {
                return err(
                    f.at,
                    format!(
                        "field {}.{} is wider than {MAX_FIELD_BITS} bits",
                        p.name, f.name
                    ),
                );
            }
        }
    }
    let mut names = BTreeSet::new();
    for m in &c.metadata {
        if !names.insert(&m.name) {
            return err(m.at, format!("metadata field {} is defined twice", m.name));
        }
        if m.length > MAX_FIELD_BITS {
            return err(
                m.at,
                format!(
                    "metadata field {} is wider than {MAX_FIELD_BITS} bits",
                    m.name
                ),
            );
        }
    }
    let mut tables = BTreeSet::new();
    for t in &c.tables {
        if !tables.insert(&t.name) {
            return err(t.at, format!("table {} is defined twice", t.name));
        }
        if t.keys.is_empty() {
            return err(t.at, format!("table {} has no key", t.name));
        }
        if t.kind == MatchKind::Lpm && t.keys.len() != 1 {
            return err(
                t.at,
                format!("lpm table {} must have exactly one key", t.name),
            );
        }
        if t.size == 0 {
            return err(t.at, format!("table {} has size 0", t.name));
        }
        let mut total = 0;
        for k in &t.keys {
            total += width(c, k, t.at)?;
        }
        if t.kind == MatchKind::Lpm && total > MAX_FIELD_BITS {
            return err(
                t.at,
                format!(
                    "the key of lpm table {} is wider than {MAX_FIELD_BITS} bits",
                    t.name
                ),
            );
        }
    }
    if let Some(f) = &c.first
        && c.table(f).is_none()
    {
        return Err(CompileError {
            at: None,
            message: format!("the first table {f} is not defined"),
        });
    }
    let mut ids: FastMap<(&str, u32), ()> =
        FastMap::with_capacity_and_hasher(c.entries.len(), Default::default());
    for e in &c.entries {
        let Some(t) = c.table(&e.table) else {
            return err(e.at, format!("entry {}: no table {}", e.id, e.table));
        };
        if ids.insert((&e.table, e.id), ()).is_some() {
            return err(
                e.at,
                format!("entry {} of table {} is defined twice", e.id, e.table),
            );
        }
        check_entry(c, t, e)?;
    }
    let mut missed = BTreeSet::new();
    for m in &c.misses {
        if c.table(&m.table).is_none() {
            return err(m.at, format!("miss: no table {}", m.table));
        }
        if !missed.insert(&m.table) {
            return err(m.at, format!("table {} has two misses", m.table));
        }
        check_instructions(c, m.at, &What::Miss(&m.table), &m.instructions)?;
    }
    for t in &c.tables {
        let n = c.entries_of(&t.name).count();
        if n > t.size as usize {
            return err(
                t.at,
                format!(
                    "table {} has {n} entries, more than its size {}",
                    t.name, t.size
                ),
            );
        }
    }
    Ok(())
}

fn field_of<'c>(c: &'c Config, f: &FieldRef, at: Loc) -> R<&'c Field> {
    match f {
        FieldRef::Packet {
            protocol, field, ..
        } => {
            let Some(p) = c.protocol(protocol) else {
                return err(at, format!("{f}: no protocol {protocol}"));
            };
            match p.fields.iter().find(|x| &x.name == field) {
                Some(x) => Ok(x),
                None => err(at, format!("{f}: protocol {protocol} has no field {field}")),
            }
        }
        FieldRef::Meta(m) => match c.metadata.iter().find(|x| &x.name == m) {
            Some(x) => Ok(x),
            None => err(at, format!("{f}: no metadata field {m}")),
        },
    }
}

fn width(c: &Config, f: &FieldRef, at: Loc) -> R<u32> {
    field_of(c, f, at).map(|x| x.length)
}

fn mask(w: u32) -> u128 {
    if w >= 128 {
        u128::MAX
    } else {
        (1u128 << w) - 1
    }
}

/// An instruction list's owner, for messages (formatted only for an error): `entry ID of
/// table T` or `the miss of table T`.
#[derive(Clone, Copy, Debug)]
enum What<'a> {
    Entry(u32, &'a str),
    Miss(&'a str),
}

impl std::fmt::Display for What<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            What::Entry(id, t) => write!(f, "entry {id} of table {t}"),
            What::Miss(t) => write!(f, "the miss of table {t}"),
        }
    }
}

/// The instruction lists of table `t`: its entries', then its miss's.
fn lists<'c>(
    c: &'c Config,
    t: &'c str,
) -> impl Iterator<Item = (Loc, What<'c>, &'c [Instruction])> + 'c {
    c.entries_of(t)
        .map(move |e| (e.at, What::Entry(e.id, t), &e.instructions[..]))
        .chain(
            c.miss_of(t)
                .map(move |m| (m.at, What::Miss(t), &m.instructions[..])),
        )
}

fn check_entry(c: &Config, t: &Table, e: &Entry) -> R<()> {
    let what = What::Entry(e.id, &t.name);
    if e.matches.len() != t.keys.len() {
        return err(
            e.at,
            format!(
                "{what}: {} matches for {} keys",
                e.matches.len(),
                t.keys.len()
            ),
        );
    }
    for (m, k) in e.matches.iter().zip(&t.keys) {
        let w = width(c, k, t.at)?;
        let ok = match (t.kind, m) {
            (_, MatchValue::Exact(v)) => *v <= mask(w),
            (MatchKind::Lpm | MatchKind::Ternary, MatchValue::Prefix(v, l)) => {
                *l <= w && *v <= mask(w)
            }
            (MatchKind::Ternary, MatchValue::Masked(v, m)) => *v <= mask(w) && *m <= mask(w),
            (MatchKind::Ternary, MatchValue::Any) => true,
            _ => {
                return err(
                    e.at,
                    format!(
                        "{what}: a {} table cannot match {k} that way",
                        t.kind.name()
                    ),
                );
            }
        };
        if !ok {
            return err(
                e.at,
                format!("{what}: the match on {k} does not fit its {w} bits"),
            );
        }
    }
    check_instructions(c, e.at, &what, &e.instructions)
}

fn check_instructions(c: &Config, at: Loc, what: &What, instructions: &[Instruction]) -> R<()> {
    for i in instructions {
        match i {
            Instruction::Goto { table, .. } if c.table(table).is_none() => {
                return err(at, format!("{what}: goto: no table {table}"));
            }
            Instruction::WriteMetadata { field, value } => {
                let w = width(c, &FieldRef::Meta(field.clone()), at)?;
                if *value > mask(w) {
                    return err(at, format!("{what}: {value:#x} does not fit meta.{field}"));
                }
            }
            Instruction::Meter(m) if *m >= c.meters.unwrap_or(DEFAULT_METERS) => {
                return err(
                    at,
                    format!("{what}: meter {m} is beyond the meters (set `meters N`)"),
                );
            }
            Instruction::Apply(a) => check_action(c, at, what, a)?,
            _ => {}
        }
    }
    Ok(())
}

fn check_action(c: &Config, at: Loc, what: &What, a: &Action) -> R<()> {
    match a {
        Action::Output(p) if *p >= 511 => err(
            at,
            format!("{what}: port {p} is beyond v1model's 9-bit ports (511 drops)"),
        ),
        Action::OutputField(f) => width(c, f, at).map(|_| ()),
        Action::PacketIn if c.cpu_port.is_none() => {
            err(at, format!("{what}: packet_in needs `cpu_port N`"))
        }
        Action::SetField(f, v) => {
            let w = width(c, f, at)?;
            if *v > mask(w) {
                return err(at, format!("{what}: {v:#x} does not fit {f} ({w} bits)"));
            }
            Ok(())
        }
        Action::SetFieldFromMetadata(f, m) => {
            let w = width(c, f, at)?;
            let mw = width(c, &FieldRef::Meta(m.clone()), at)?;
            if w != mw {
                return err(at, format!("{what}: {f} has {w} bits, meta.{m} {mw}"));
            }
            Ok(())
        }
        Action::ModifyField(f, _) => width(c, f, at).map(|_| ()),
        // The parser makes sure of it; the action's parameters (the bytes) depend on it.
        Action::AddField { length, value, .. } if value.len() as u64 * 8 != *length as u64 => err(
            at,
            format!(
                "{what}: add_field inserts {length} bits but its value has {} bytes",
                value.len()
            ),
        ),
        Action::AddField { offset, .. } | Action::DeleteField { offset, .. } if offset % 8 != 0 => {
            err(
                at,
                format!(
                    "{what}: add_field and delete_field work on whole bytes: offset {offset} is not a multiple of 8"
                ),
            )
        }
        Action::DeleteField { length, .. } if length % 8 != 0 || *length == 0 => err(
            at,
            format!(
                "{what}: delete_field works on whole bytes: length {length} is not a positive multiple of 8"
            ),
        ),
        Action::CalculateChecksum {
            field,
            offset,
            length,
        } => {
            if matches!(field, FieldRef::Meta(_)) || width(c, field, at)? != 16 {
                return err(
                    at,
                    format!("{what}: the checksum field must be a 16-bit packet field"),
                );
            }
            if offset % 8 != 0 || length % 16 != 0 || *length == 0 {
                return err(
                    at,
                    format!(
                        "{what}: the checksum covers whole 16-bit words: offset {offset} must be a multiple of 8 and length {length} of 16"
                    ),
                );
            }
            Ok(())
        }
        Action::Counter(n) if *n >= c.counters.unwrap_or(DEFAULT_COUNTERS) => err(
            at,
            format!("{what}: counter {n} is beyond the counters (set `counters N`)"),
        ),
        Action::Group(g) if *g == 0 || *g > 0xffff => err(
            at,
            format!("{what}: group {g} is not a multicast group (1 to 65535)"),
        ),
        _ => Ok(()),
    }
}

type GraphResult<'c> = (Vec<&'c str>, HashMap<&'c str, u32>, Vec<String>);

/// The compiled tables in application order, their cursors, and the unreachable ones.
fn graph<'c>(c: &'c Config) -> R<GraphResult<'c>> {
    let mut cursors: HashMap<&str, u32> = HashMap::new();
    let Some(first) = c.first_table() else {
        return Ok((Vec::new(), cursors, Vec::new()));
    };
    let first = c.table(first).map(|t| t.name.as_str()).unwrap_or(first);
    let gotos = |t: &'c str| -> Vec<(Loc, What<'c>, &'c str, u32)> {
        let mut v = Vec::new();
        for (at, what, is) in lists(c, t) {
            for i in is {
                if let Instruction::Goto { table, shift } = i {
                    v.push((at, what, table.as_str(), *shift));
                }
            }
        }
        v
    };
    cursors.insert(first, 0);
    let mut work = vec![first];
    while let Some(t) = work.pop() {
        let at = cursors[t];
        for (loc, what, to, shift) in gotos(t) {
            let Some(to_t) = c.table(to) else { continue };
            let to = to_t.name.as_str();
            let Some(cur) = at.checked_add(shift) else {
                return err(loc, "the offset shift overflows");
            };
            match cursors.get(to) {
                Some(&old) if old != cur => {
                    return err(
                        loc,
                        format!(
                            "{what} goes to table {to} with the cursor at bit {cur}, another path reaches it at bit {old}: koi needs one cursor per table"
                        ),
                    );
                }
                Some(_) => {}
                None => {
                    cursors.insert(to, cur);
                    work.push(to);
                }
            }
        }
    }
    // Topological order by depth-first search; a back edge is a cycle.
    let mut state: HashMap<&str, u8> = HashMap::new();
    let mut post = Vec::new();
    fn dfs<'c>(
        c: &'c Config,
        t: &'c str,
        state: &mut HashMap<&'c str, u8>,
        post: &mut Vec<&'c str>,
    ) -> R<()> {
        state.insert(t, 1);
        for (at, what, is) in lists(c, t) {
            for i in is {
                if let Instruction::Goto { table, .. } = i {
                    match state.get(table.as_str()) {
                        Some(1) => {
                            return err(
                                at,
                                format!(
                                    "{what} goes back to table {table}: goto cycles are refused"
                                ),
                            );
                        }
                        Some(_) => {}
                        None => dfs(c, table, state, post)?,
                    }
                }
            }
        }
        state.insert(t, 2);
        post.push(t);
        Ok(())
    }
    dfs(c, first, &mut state, &mut post)?;
    post.reverse();
    let unreachable = c
        .tables
        .iter()
        .filter(|t| !cursors.contains_key(t.name.as_str()))
        .map(|t| t.name.clone())
        .collect();
    Ok((post, cursors, unreachable))
}

fn div_ceil8(b: u32) -> u32 {
    b.div_ceil(8)
}

impl<'c> Gen<'c> {
    /// Appends to `out` the constants of `i` that its action takes as parameters, in order:
    /// (width, value).
    fn params(&self, i: &Instruction, out: &mut Vec<(u32, u128)>) {
        let w = |f: &FieldRef| width(self.c, f, Loc::default()).expect("checked");
        match i {
            Instruction::WriteMetadata { field, value } => {
                let f = self.c.metadata.iter().find(|m| &m.name == field);
                out.push((f.expect("checked").length, *value));
            }
            Instruction::Meter(m) => out.push((32, *m as u128)),
            Instruction::Apply(a) => match a {
                Action::Output(p) => out.push((9, *p as u128)),
                Action::SetField(f, v) => out.push((w(f), *v)),
                Action::ModifyField(f, d) => {
                    let w = w(f);
                    out.push((w, (*d as u128) & mask(w)));
                }
                Action::AddField { value, .. } => out.extend(value.chunks(8).map(|c| {
                    let v = c.iter().fold(0u128, |a, b| a << 8 | *b as u128);
                    (c.len() as u32 * 8, v)
                })),
                Action::Counter(n) => out.push((32, *n as u128)),
                Action::Group(g) => out.push((16, *g as u128)),
                _ => {}
            },
            Instruction::Goto { .. } => {}
        }
    }

    fn range(&self, f: &FieldRef, cursor: u32) -> Range {
        let field = field_of(self.c, f, Loc::default()).expect("checked");
        match f {
            FieldRef::Packet { base, .. } => {
                Range::Packet(base.unwrap_or(cursor) + field.offset, field.length)
            }
            FieldRef::Meta(_) => Range::Meta(field.offset, field.length),
        }
    }

    /// The packet bit ranges table `t` and its entries use, and the byte points where they
    /// insert or delete.
    fn uses(&self, t: &Table) -> (Vec<(u32, u32)>, Vec<u32>) {
        let cur = self.cursors[t.name.as_str()];
        let mut ranges = Vec::new();
        let mut points = Vec::new();
        for k in &t.keys {
            ranges.push(self.range(k, cur));
        }
        // The fields and offsets an entry uses are in its shape: one entry of each will do.
        for (_, _, is) in &self.shapes[t.name.as_str()].reps {
            for i in *is {
                for f in i.fields() {
                    ranges.push(self.range(f, cur));
                }
                match i {
                    Instruction::Apply(Action::AddField { offset, .. }) => {
                        points.push(cur + offset);
                    }
                    Instruction::Apply(Action::DeleteField { offset, length }) => {
                        points.push(cur + offset);
                        points.push(cur + offset + length);
                    }
                    Instruction::Apply(Action::CalculateChecksum { offset, length, .. }) => {
                        ranges.push(Range::Packet(cur + offset, *length));
                    }
                    _ => {}
                }
            }
        }
        let packet = ranges
            .into_iter()
            .filter_map(|r| match r {
                Range::Packet(s, l) => Some((s, l)),
                Range::Meta(..) => None,
            })
            .collect();
        (packet, points)
    }

    /// The end bit of the packet bytes table `t` needs.
    fn extent(&self, t: &Table) -> u32 {
        let (ranges, points) = self.uses(t);
        let r = ranges.iter().map(|(s, l)| s + l).max().unwrap_or(0);
        r.max(points.into_iter().max().unwrap_or(0))
    }

    fn layout(&mut self, order: &[&'c str]) -> R<()> {
        for t in order {
            let t = self.c.table(t).expect("checked");
            let extent = self.extent(t);
            self.byte_cuts.insert(div_ceil8(extent));
            let (ranges, points) = self.uses(t);
            for (s, l) in ranges {
                self.bit_cuts.insert(s);
                self.bit_cuts.insert(s + l);
            }
            for p in points {
                self.byte_cuts.insert(p / 8);
            }
        }
        for m in &self.c.metadata {
            self.meta_cuts.insert(m.offset);
            self.meta_cuts.insert(m.offset + m.length);
        }
        self.byte_cuts.insert(0);
        let bytes: Vec<u32> = self.byte_cuts.iter().copied().collect();
        for w in bytes.windows(2) {
            let k = self.segments.len();
            self.segments.push((w[0], w[1]));
            let (lo, hi) = (w[0] * 8, w[1] * 8);
            let mut cuts: Vec<u32> = self.bit_cuts.range(lo..hi).copied().collect();
            if cuts.first() != Some(&lo) {
                cuts.insert(0, lo);
            }
            cuts.push(hi);
            for p in cuts.windows(2) {
                self.pieces.insert(p[0], (k, p[1] - p[0]));
            }
        }
        let mcuts: Vec<u32> = self.meta_cuts.iter().copied().collect();
        let mut prev = 0;
        for &m in &mcuts {
            if m > prev {
                self.meta_pieces.insert(prev, m - prev);
            }
            prev = m;
        }
        Ok(())
    }

    /// The pieces of a range: (P4 lvalue, start, width).
    fn pieces_of(&self, r: Range) -> Vec<(String, u32, u32)> {
        match r {
            Range::Packet(s, l) => self
                .pieces
                .range(s..s + l)
                .map(|(&p, &(k, w))| (format!("hdr.s{k}.b{p}"), p - s, w))
                .collect(),
            Range::Meta(s, l) => self
                .meta_pieces
                .range(s..s + l)
                .map(|(&p, &w)| (format!("meta.m{p}"), p - s, w))
                .collect(),
        }
    }

    fn read(&self, r: Range) -> String {
        let ps: Vec<String> = self.pieces_of(r).into_iter().map(|p| p.0).collect();
        if ps.len() == 1 {
            ps[0].clone()
        } else {
            format!("({})", ps.join(" ++ "))
        }
    }

    /// Statements assigning the `len`-bit expression `x` to `r` (`tmp` names a local).
    fn write(&self, r: Range, x: &str, tmp: &str, out: &mut String) {
        let ps = self.pieces_of(r);
        let len = r.len();
        if ps.len() == 1 {
            let _ = writeln!(out, "        {} = {x};", ps[0].0);
            return;
        }
        let _ = writeln!(out, "        bit<{len}> {tmp} = {x};");
        for (p, o, w) in ps {
            let _ = writeln!(out, "        {p} = {tmp}[{}:{}];", len - 1 - o, len - o - w);
        }
    }

    /// The segment whose end is the byte end of `end_bit`, as a validity test.
    fn guard(&self, end_bit: u32) -> Option<String> {
        if end_bit == 0 {
            return None;
        }
        let e = div_ceil8(end_bit);
        self.segments
            .iter()
            .position(|s| s.1 == e)
            .map(|k| format!("hdr.s{k}.isValid()"))
    }

    fn program(&mut self, order: &[&'c str]) -> R<String> {
        let c = self.c;
        let number: HashMap<&str, usize> =
            order.iter().enumerate().map(|(i, t)| (*t, i + 1)).collect();
        let mut headers = String::new();
        let mut actions = String::new();
        let mut tables = String::new();
        let mut apply = String::new();
        let mut checksums: Vec<(String, String, String)> = Vec::new();
        // Insertions: byte position → headers, in order.
        let mut inserts: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        let mut n_ins = 0usize;
        for (k, (lo, hi)) in self.segments.iter().enumerate() {
            let _ = writeln!(headers, "header seg{k}_t {{");
            for (p, (_, w)) in self.pieces.range(lo * 8..hi * 8) {
                let _ = writeln!(headers, "    bit<{w}> b{p};");
            }
            let _ = writeln!(headers, "}}");
        }
        let mut ins_headers = String::new();
        for t in order {
            let table = c.table(t).expect("checked");
            let cur = self.cursors[t];
            let end = self.extent(table);
            // One action per instruction shape (its constants are the action's parameters),
            // numbered in the order of the shapes, so that the program depends on the shapes
            // alone, never on the entries' values.
            let reps = self.shapes[t].reps.clone();
            let mut names = Vec::new();
            for (k, &(at, what, instructions)) in reps.iter().enumerate() {
                let name = format!("a_{t}_{k}");
                let mut params = Vec::new();
                for i in instructions {
                    self.params(i, &mut params);
                }
                let decl: Vec<String> = params
                    .iter()
                    .enumerate()
                    .map(|(j, (w, _))| format!("bit<{w}> p{j}"))
                    .collect();
                let _ = writeln!(actions, "    action {name}({}) {{", decl.join(", "));
                let mut param = 0usize;
                let mut next = || {
                    param += 1;
                    format!("p{}", param - 1)
                };
                for (n, i) in instructions.iter().enumerate() {
                    let tmp = format!("t{n}");
                    match i {
                        Instruction::Goto { table, .. } => {
                            let _ = writeln!(
                                actions,
                                "        meta.pof_next = {};",
                                number[table.as_str()]
                            );
                        }
                        Instruction::WriteMetadata { field, .. } => {
                            let r = self.range(&FieldRef::Meta(field.clone()), cur);
                            self.write(r, &next(), &tmp, &mut actions);
                        }
                        Instruction::Meter(_) => {
                            let _ = writeln!(
                                actions,
                                "        pof_meter.execute_meter({}, meta.pof_color);",
                                next()
                            );
                        }
                        Instruction::Apply(a) => match a {
                            Action::Output(_) => {
                                let _ = writeln!(actions, "        sm.egress_spec = {};", next());
                            }
                            Action::OutputField(f) => {
                                let r = self.range(f, cur);
                                let _ = writeln!(
                                    actions,
                                    "        sm.egress_spec = (bit<9>){};",
                                    self.read(r)
                                );
                            }
                            Action::Drop => {
                                let _ = writeln!(actions, "        mark_to_drop(sm);");
                            }
                            Action::PacketIn => {
                                let _ = writeln!(
                                    actions,
                                    "        sm.egress_spec = {};",
                                    c.cpu_port.expect("checked")
                                );
                                let _ = writeln!(actions, "        hdr.pof_packet_in.setValid();");
                                let _ = writeln!(
                                    actions,
                                    "        hdr.pof_packet_in.ingress_port = sm.ingress_port;"
                                );
                                let _ = writeln!(actions, "        hdr.pof_packet_in.pad = 0;");
                            }
                            Action::SetField(f, _) => {
                                let r = self.range(f, cur);
                                self.write(r, &next(), &tmp, &mut actions);
                            }
                            Action::SetFieldFromMetadata(f, m) => {
                                let r = self.range(f, cur);
                                let src = self.read(self.range(&FieldRef::Meta(m.clone()), cur));
                                self.write(r, &src, &tmp, &mut actions);
                            }
                            Action::ModifyField(f, _) => {
                                let r = self.range(f, cur);
                                let x = format!("{} + {}", self.read(r), next());
                                self.write(r, &x, &tmp, &mut actions);
                            }
                            Action::AddField { offset, value, .. } => {
                                let h = format!("ins{n_ins}");
                                n_ins += 1;
                                let _ = writeln!(ins_headers, "header {h}_t {{");
                                let _ = writeln!(actions, "        hdr.{h}.setValid();");
                                for (j, chunk) in value.chunks(8).enumerate() {
                                    let _ =
                                        writeln!(ins_headers, "    bit<{}> c{j};", chunk.len() * 8);
                                    let _ = writeln!(actions, "        hdr.{h}.c{j} = {};", next());
                                }
                                let _ = writeln!(ins_headers, "}}");
                                inserts.entry((cur + offset) / 8).or_default().push(h);
                            }
                            Action::DeleteField { offset, length } => {
                                let (lo, hi) = ((cur + offset) / 8, (cur + offset + length) / 8);
                                for (k, s) in self.segments.iter().enumerate() {
                                    if s.0 >= lo && s.1 <= hi {
                                        let _ = writeln!(actions, "        hdr.s{k}.setInvalid();");
                                    }
                                }
                            }
                            Action::CalculateChecksum {
                                field,
                                offset,
                                length,
                            } => {
                                let fr = self.range(field, cur);
                                let dst = self.pieces_of(fr);
                                if dst.len() != 1 {
                                    return err(
                                        at,
                                        format!(
                                            "{what}: the checksum field {field} overlaps another field koi cuts it at"
                                        ),
                                    );
                                }
                                let Range::Packet(fs, _) = fr else {
                                    unreachable!("check_action: a packet field")
                                };
                                let (s, l) = (cur + offset, *length);
                                let data: Vec<String> = self
                                    .pieces_of(Range::Packet(s, l))
                                    .into_iter()
                                    .filter(|p| p.1 + s != fs)
                                    .map(|p| p.0)
                                    .collect();
                                let guard =
                                    self.guard((s + l).max(fs + 16)).unwrap_or("true".into());
                                // Entries computing the same checksum share its flag.
                                let what = (data.join(", "), dst[0].0.clone(), guard);
                                let flag = match checksums.iter().position(|c| *c == what) {
                                    Some(i) => i,
                                    None => {
                                        checksums.push(what);
                                        checksums.len() - 1
                                    }
                                };
                                let _ = writeln!(actions, "        meta.pof_csum{flag} = 1;");
                            }
                            Action::Counter(_) => {
                                let _ = writeln!(actions, "        pof_counter.count({});", next());
                            }
                            Action::Group(_) => {
                                let _ = writeln!(actions, "        sm.mcast_grp = {};", next());
                            }
                        },
                    }
                }
                let _ = writeln!(actions, "    }}");
                names.push(name);
            }
            // The table.
            let keys: Vec<(String, String, u32)> = table
                .keys
                .iter()
                .map(|k| {
                    let r = self.range(k, cur);
                    (self.read(r), k.to_string(), r.len())
                })
                .collect();
            let kind = table.kind.name();
            let _ = writeln!(tables, "    table t_{t} {{\n        key = {{");
            for (x, name, _) in &keys {
                let _ = writeln!(tables, "            {x} : {kind} @name(\"{name}\");");
            }
            let _ = writeln!(tables, "        }}\n        actions = {{");
            for n in &names {
                let _ = writeln!(tables, "            {n};");
            }
            let _ = writeln!(tables, "            pof_miss;\n        }}");
            let _ = writeln!(
                tables,
                "        default_action = pof_miss();\n        size = {};",
                table.size
            );
            self.key_widths.insert(
                t.to_string(),
                keys.iter().map(|(_, _, w)| *w).collect::<Vec<u32>>(),
            );
            let _ = writeln!(tables, "    }}");
            let _ = writeln!(apply, "        if (meta.pof_next == {}) {{", number[t]);
            let _ = writeln!(apply, "            meta.pof_next = 0;");
            match self.guard(end) {
                Some(g) => {
                    let _ = writeln!(apply, "            if ({g}) {{ t_{t}.apply(); }}");
                }
                None => {
                    let _ = writeln!(apply, "            t_{t}.apply();");
                }
            }
            let _ = writeln!(apply, "        }}");
        }
        // Assemble.
        let mut p = String::new();
        let _ = writeln!(
            p,
            "// Generated by koi from a POF configuration (crates/koi-pof): do not edit."
        );
        let _ = writeln!(p, "#include <core.p4>\n#include <v1model.p4>\n");
        p.push_str(&headers);
        p.push_str(&ins_headers);
        let _ = writeln!(
            p,
            "@controller_header(\"packet_in\")\nheader pof_packet_in_t {{\n    bit<9> ingress_port;\n    bit<7> pad;\n}}"
        );
        let _ = writeln!(p, "struct headers_t {{\n    pof_packet_in_t pof_packet_in;");
        for k in 0..self.segments.len() {
            let _ = writeln!(p, "    seg{k}_t s{k};");
        }
        for i in 0..n_ins {
            let _ = writeln!(p, "    ins{i}_t ins{i};");
        }
        let _ = writeln!(p, "}}");
        let _ = writeln!(
            p,
            "struct meta_t {{\n    bit<16> pof_next;\n    bit<2> pof_color;"
        );
        for i in 0..checksums.len() {
            let _ = writeln!(p, "    bit<1> pof_csum{i};");
        }
        for (s, w) in &self.meta_pieces {
            let _ = writeln!(p, "    bit<{w}> m{s};");
        }
        let _ = writeln!(p, "}}\n");
        let _ = writeln!(
            p,
            "parser pof_parser(packet_in packet, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{"
        );
        if self.segments.is_empty() {
            let _ = writeln!(p, "    state start {{ transition accept; }}");
        }
        for k in 0..self.segments.len() {
            let name = if k == 0 {
                "start".to_string()
            } else {
                format!("seg{k}")
            };
            let next = if k + 1 == self.segments.len() {
                "accept".to_string()
            } else {
                format!("seg{}", k + 1)
            };
            let _ = writeln!(
                p,
                "    state {name} {{ packet.extract(hdr.s{k}); transition {next}; }}"
            );
        }
        let _ = writeln!(p, "}}\n");
        let _ = writeln!(
            p,
            "control pof_verify(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}\n"
        );
        let _ = writeln!(
            p,
            "control pof(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{"
        );
        let _ = writeln!(
            p,
            "    counter({}, CounterType.packets_and_bytes) pof_counter;",
            c.counters.unwrap_or(DEFAULT_COUNTERS)
        );
        let _ = writeln!(
            p,
            "    meter({}, MeterType.bytes) pof_meter;",
            c.meters.unwrap_or(DEFAULT_METERS)
        );
        let _ = writeln!(p, "    action pof_miss() {{ }}");
        p.push_str(&actions);
        p.push_str(&tables);
        let _ = writeln!(p, "    apply {{\n        mark_to_drop(sm);");
        if let Some(first) = order.first() {
            let _ = writeln!(p, "        meta.pof_next = {};", number[first]);
        }
        p.push_str(&apply);
        let _ = writeln!(
            p,
            "        if (meta.pof_color == 2) {{ mark_to_drop(sm); }}\n    }}\n}}\n"
        );
        let _ = writeln!(
            p,
            "control pof_egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}\n"
        );
        let _ = writeln!(
            p,
            "control pof_checksum(inout headers_t hdr, inout meta_t meta) {{\n    apply {{"
        );
        for (flag, (data, dst, guard)) in checksums.iter().enumerate() {
            let _ = writeln!(
                p,
                "        update_checksum(meta.pof_csum{flag} == 1 && {guard}, {{ {data} }}, {dst}, HashAlgorithm.csum16);"
            );
        }
        let _ = writeln!(p, "    }}\n}}\n");
        let _ = writeln!(
            p,
            "control pof_deparser(packet_out packet, in headers_t hdr) {{\n    apply {{\n        packet.emit(hdr.pof_packet_in);"
        );
        let mut positions: BTreeSet<u32> = self.segments.iter().map(|s| s.0).collect();
        positions.extend(inserts.keys().copied());
        for pos in positions {
            for h in inserts.get(&pos).into_iter().flatten() {
                let _ = writeln!(p, "        packet.emit(hdr.{h});");
            }
            if let Some(k) = self.segments.iter().position(|s| s.0 == pos) {
                let _ = writeln!(p, "        packet.emit(hdr.s{k});");
            }
        }
        let _ = writeln!(p, "    }}\n}}\n");
        let _ = writeln!(
            p,
            "V1Switch(pof_parser(), pof_verify(), pof(), pof_egress(), pof_checksum(), pof_deparser()) main;"
        );
        Ok(p)
    }
}
