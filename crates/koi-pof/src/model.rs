//! The POF configuration model: what a controller defines at run time (protocols made of
//! named `{offset, length}` bit ranges, metadata fields, tables over them, entries with their
//! instructions and actions, the tables' miss instructions), and the edits `koi ctl pof_*`
//! makes to it.
//!
//! Offsets and lengths are in bits. A protocol field's offset is relative to the table's
//! **cursor** (the bit where the packet's "current header" starts, 0 at the first table, moved
//! by `GOTO_TABLE`'s offset shift); `proto.field@BITS` names the same field relative to bit
//! `BITS` of the packet instead (for an earlier header, as the IPv4 table rewriting the
//! Ethernet addresses). Metadata fields are bit ranges of the per-packet metadata.

/// Where a definition was written (line and column, from 1); never compared.
#[derive(Clone, Copy, Debug, Default)]
pub struct Loc {
    pub line: u32,
    pub col: u32,
}

impl PartialEq for Loc {
    fn eq(&self, _: &Loc) -> bool {
        true
    }
}
impl Eq for Loc {}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A whole POF configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    pub protocols: Vec<Protocol>,
    /// The metadata fields (offsets into the packet's metadata).
    pub metadata: Vec<Field>,
    pub tables: Vec<Table>,
    /// The first table (`None`: the first declared).
    pub first: Option<String>,
    pub entries: Vec<Entry>,
    /// The tables' miss instructions (POF's table-miss entries), at most one per table.
    pub misses: Vec<Miss>,
    /// The port `PACKET_IN` sends to (required when an entry uses it).
    pub cpu_port: Option<u64>,
    /// How many counters `COUNTER` indexes (default [`DEFAULT_COUNTERS`]).
    pub counters: Option<u32>,
    /// How many meters `METER` indexes (default [`DEFAULT_METERS`]).
    pub meters: Option<u32>,
}

/// Counters when the configuration does not say.
pub const DEFAULT_COUNTERS: u32 = 1024;
/// Meters when the configuration does not say.
pub const DEFAULT_METERS: u32 = 1024;
/// The widest field a value, a key or a match can be (bits).
pub const MAX_FIELD_BITS: u32 = 128;

/// A named set of fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protocol {
    pub name: String,
    pub fields: Vec<Field>,
    pub at: Loc,
}

/// A named `{offset, length}` bit range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub offset: u32,
    pub length: u32,
    pub at: Loc,
}

/// A field as an instruction or key names it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FieldRef {
    /// `proto.field` (relative to the cursor), or `proto.field@BASE` (relative to bit BASE of
    /// the packet).
    Packet {
        protocol: String,
        field: String,
        base: Option<u32>,
    },
    /// `meta.field`.
    Meta(String),
}

impl std::fmt::Display for FieldRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldRef::Packet {
                protocol,
                field,
                base: None,
            } => write!(f, "{protocol}.{field}"),
            FieldRef::Packet {
                protocol,
                field,
                base: Some(b),
            } => write!(f, "{protocol}.{field}@{b}"),
            FieldRef::Meta(m) => write!(f, "meta.{m}"),
        }
    }
}

/// How a table matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    /// Longest prefix on its one key.
    Lpm,
    /// Value and mask per key; the entry with the highest priority wins.
    Ternary,
}

impl MatchKind {
    pub fn name(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            MatchKind::Ternary => "ternary",
        }
    }
}

/// A flow table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    pub kind: MatchKind,
    /// The most entries it holds.
    pub size: u32,
    pub keys: Vec<FieldRef>,
    pub at: Loc,
}

/// Table size when the configuration does not say.
pub const DEFAULT_TABLE_SIZE: u32 = 1024;

/// One key's match in an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchValue {
    Exact(u128),
    /// Value and prefix length.
    Prefix(u128, u32),
    /// Value and mask.
    Masked(u128, u128),
    /// Anything (`*`).
    Any,
}

/// A flow entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub table: String,
    /// Its id in its table (what `pof_entry_modify` and `pof_entry_remove` name).
    pub id: u32,
    /// Higher wins (ternary tables).
    pub priority: u32,
    pub matches: Vec<MatchValue>,
    pub instructions: Vec<Instruction>,
    pub at: Loc,
}

/// What a table runs for a packet none of its entries matches (POF's table-miss entry):
/// without one, a miss does nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Miss {
    pub table: String,
    pub instructions: Vec<Instruction>,
    pub at: Loc,
}

/// A POF flow instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Instruction {
    /// `GOTO_TABLE`: continue at `table`, the cursor moved by `shift` bits.
    Goto { table: String, shift: u32 },
    /// `WRITE_METADATA`.
    WriteMetadata { field: String, value: u128 },
    /// `METER`: a red packet is dropped at the end of the pipeline.
    Meter(u32),
    /// One action of `APPLY_ACTIONS` (a list of them is written one after the other).
    Apply(Action),
}

/// A POF action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Output(u64),
    /// `OUTPUT` to the port a field holds.
    OutputField(FieldRef),
    Drop,
    /// Send to the CPU port with a `packet_in` controller header (the ingress port).
    PacketIn,
    SetField(FieldRef, u128),
    SetFieldFromMetadata(FieldRef, String),
    /// `MODIFY_FIELD`: add a value (modulo the field's width; negative subtracts).
    ModifyField(FieldRef, i128),
    /// `ADD_FIELD`: insert `value` (`length` bits, whole bytes) at `offset` bits from the
    /// cursor (a byte boundary).
    AddField {
        offset: u32,
        length: u32,
        value: Vec<u8>,
    },
    /// `DELETE_FIELD`: remove `length` bits at `offset` from the cursor (whole bytes).
    DeleteField {
        offset: u32,
        length: u32,
    },
    /// `CALCULATE_CHECKSUM`: the 16-bit ones'-complement checksum over `length` bits from
    /// `offset` (relative to the cursor) into `field`, computed after every other change.
    CalculateChecksum {
        field: FieldRef,
        offset: u32,
        length: u32,
    },
    Counter(u32),
    /// `GROUP`: the multicast group `N` (configured with `koi ctl mc_*`).
    Group(u32),
}

impl Config {
    pub fn protocol(&self, name: &str) -> Option<&Protocol> {
        self.protocols.iter().find(|p| p.name == name)
    }

    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// The first table's name.
    pub fn first_table(&self) -> Option<&str> {
        self.first
            .as_deref()
            .or_else(|| self.tables.first().map(|t| t.name.as_str()))
    }

    /// The miss instructions of `table`, if it has them.
    pub fn miss_of(&self, table: &str) -> Option<&Miss> {
        self.misses.iter().find(|m| m.table == table)
    }

    /// The entries of `table`.
    pub fn entries_of<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries.iter().filter(move |e| e.table == table)
    }

    /// Adds every definition of `other` to this configuration: a protocol, table or entry
    /// that exists already is an error unless `replace`, when it takes the old one's place.
    pub fn merge(&mut self, other: Config, replace: bool) -> Result<(), String> {
        for p in other.protocols {
            match self.protocols.iter_mut().find(|q| q.name == p.name) {
                Some(q) if replace => *q = p,
                Some(_) => return Err(format!("protocol {} exists already", p.name)),
                None => self.protocols.push(p),
            }
        }
        for m in other.metadata {
            match self.metadata.iter_mut().find(|q| q.name == m.name) {
                Some(q) if replace => *q = m,
                Some(_) => return Err(format!("metadata field {} exists already", m.name)),
                None => self.metadata.push(m),
            }
        }
        for t in other.tables {
            match self.tables.iter_mut().find(|q| q.name == t.name) {
                Some(q) if replace => *q = t,
                Some(_) => return Err(format!("table {} exists already", t.name)),
                None => self.tables.push(t),
            }
        }
        for e in other.entries {
            match self
                .entries
                .iter_mut()
                .find(|q| q.table == e.table && q.id == e.id)
            {
                Some(q) if replace => *q = e,
                Some(_) => {
                    return Err(format!(
                        "entry {} of table {} exists already",
                        e.id, e.table
                    ));
                }
                None => self.entries.push(e),
            }
        }
        for m in other.misses {
            match self.misses.iter_mut().find(|q| q.table == m.table) {
                Some(q) if replace => *q = m,
                Some(_) => return Err(format!("table {} has a miss already", m.table)),
                None => self.misses.push(m),
            }
        }
        if other.first.is_some() {
            self.first = other.first;
        }
        if other.cpu_port.is_some() {
            self.cpu_port = other.cpu_port;
        }
        if other.counters.is_some() {
            self.counters = other.counters;
        }
        if other.meters.is_some() {
            self.meters = other.meters;
        }
        Ok(())
    }

    /// Removes protocol `name` (refused while a table or entry uses it).
    pub fn remove_protocol(&mut self, name: &str) -> Result<(), String> {
        let Some(i) = self.protocols.iter().position(|p| p.name == name) else {
            return Err(format!("no protocol {name}"));
        };
        let uses =
            |f: &FieldRef| matches!(f, FieldRef::Packet { protocol, .. } if protocol == name);
        if let Some(t) = self.tables.iter().find(|t| t.keys.iter().any(uses)) {
            return Err(format!("table {} matches on protocol {name}", t.name));
        }
        if let Some(e) = self
            .entries
            .iter()
            .find(|e| e.instructions.iter().any(|i| i.fields().any(uses)))
        {
            return Err(format!(
                "entry {} of table {} uses protocol {name}",
                e.id, e.table
            ));
        }
        if let Some(m) = self
            .misses
            .iter()
            .find(|m| m.instructions.iter().any(|i| i.fields().any(uses)))
        {
            return Err(format!(
                "the miss of table {} uses protocol {name}",
                m.table
            ));
        }
        self.protocols.remove(i);
        Ok(())
    }

    /// Removes table `name` and its entries (refused while an entry of another table goes to
    /// it).
    pub fn remove_table(&mut self, name: &str) -> Result<usize, String> {
        let Some(i) = self.tables.iter().position(|t| t.name == name) else {
            return Err(format!("no table {name}"));
        };
        if let Some(e) = self.entries.iter().find(|e| {
            e.table != name
                && e.instructions
                    .iter()
                    .any(|i| matches!(i, Instruction::Goto { table, .. } if table == name))
        }) {
            return Err(format!(
                "entry {} of table {} goes to table {name}",
                e.id, e.table
            ));
        }
        let goes = |is: &[Instruction]| {
            is.iter()
                .any(|i| matches!(i, Instruction::Goto { table, .. } if table == name))
        };
        if let Some(m) = self
            .misses
            .iter()
            .find(|m| m.table != name && goes(&m.instructions))
        {
            return Err(format!(
                "the miss of table {} goes to table {name}",
                m.table
            ));
        }
        self.tables.remove(i);
        self.misses.retain(|m| m.table != name);
        let before = self.entries.len();
        self.entries.retain(|e| e.table != name);
        if self.first.as_deref() == Some(name) {
            self.first = None;
        }
        Ok(before - self.entries.len())
    }

    /// Removes the miss instructions of `table`.
    pub fn remove_miss(&mut self, table: &str) -> Result<(), String> {
        let Some(i) = self.misses.iter().position(|m| m.table == table) else {
            return Err(format!("table {table} has no miss"));
        };
        self.misses.remove(i);
        Ok(())
    }

    /// Removes entry `id` of `table`.
    pub fn remove_entry(&mut self, table: &str, id: u32) -> Result<(), String> {
        let Some(i) = self
            .entries
            .iter()
            .position(|e| e.table == table && e.id == id)
        else {
            return Err(format!("no entry {id} in table {table}"));
        };
        self.entries.remove(i);
        Ok(())
    }
}

impl Instruction {
    /// The fields the instruction reads or writes.
    pub fn fields(&self) -> impl Iterator<Item = &FieldRef> {
        let v: Vec<&FieldRef> = match self {
            Instruction::Apply(
                Action::OutputField(f)
                | Action::SetField(f, _)
                | Action::SetFieldFromMetadata(f, _)
                | Action::ModifyField(f, _)
                | Action::CalculateChecksum { field: f, .. },
            ) => vec![f],
            _ => Vec::new(),
        };
        v.into_iter()
    }
}
