//! The [`State`] of one pipeline image and how it is built from the [`Pipeline`]: a
//! [`TableState`] per table (with the program's const entries installed), per extern instance
//! its registers, counters, meters or action profile, value sets, the multicast engine, clone
//! sessions and the digest queue.

use crate::arrays::{CounterArray, MeterArray, RegisterArray};
use crate::error::{Result, StateError};
use crate::pre::{Mirroring, Pre};
use crate::profile::Profile;
use crate::schema::{ActionSchema, Schema};
use crate::table::{EntryAction, NewEntry, TableState};
use crate::value_set::{DigestQueue, ValueSetState};
use koi_ir::entity::EntityId;
use koi_ir::{
    ActionId, Architecture, ConstArg, CounterUnit, Entry as IrEntry, ExternId, ExternKind,
    MeterUnit, Pipeline, TableId,
};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// The state kept for one extern instance.
#[derive(Clone, Debug)]
pub enum ExternState {
    Register(RegisterArray),
    Counter(CounterArray),
    Meter(MeterArray),
    /// A direct counter: its values live in the entries of `table`.
    DirectCounter {
        unit: CounterUnit,
        table: Option<TableId>,
    },
    /// A direct meter: its configurations live in the entries of `table`.
    DirectMeter {
        unit: MeterUnit,
        table: Option<TableId>,
    },
    Profile(Profile),
    /// Externs without state (`Checksum16`, unknown externs).
    Stateless,
}

/// The runtime state of one pipeline image.
#[derive(Clone, Debug)]
pub struct State {
    pub(crate) fingerprint: u64,
    pub(crate) arch: Architecture,
    pub(crate) actions: Vec<ActionSchema>,
    pub(crate) tables: Vec<TableState>,
    pub(crate) externs: Vec<ExternState>,
    pub(crate) extern_names: Vec<String>,
    pub(crate) value_sets: Vec<ValueSetState>,
    pub(crate) digests: DigestQueue,
    /// The multicast engine.
    pub pre: Pre,
    /// Clone sessions.
    pub mirroring: Mirroring,
    /// The latest time the state was told (by the data plane or [`State::set_now_ns`]);
    /// new entries start their idle time from it.
    pub(crate) now_ns: u64,
    /// The P4 width of each user-defined `type` of the program (P4Info gives only the
    /// controller's width of a translated one).
    pub(crate) type_widths: Vec<(String, u32)>,
    /// The custom CRC calculations' parameters ([`crate::calc`]).
    pub(crate) calcs: crate::calc::Calcs,
    /// For a replica of a master state, its tie to it ([`crate::replica`]).
    pub(crate) link: Option<Box<crate::replica::Link>>,
}

/// The width in bits of the values of a P4 type, when it is a bitstring-like one.
fn type_width(types: &koi_ir::types::TypeTable, t: &koi_ir::P4Type, depth: u32) -> Option<u32> {
    use koi_ir::P4Type as T;
    use koi_ir::types::TypeDecl;
    match t {
        T::Bit(w) | T::Int(w) => Some(*w),
        T::Bool => Some(1),
        T::NewType(n) | T::SerEnum(n) if depth < 16 => match types.get(n)? {
            TypeDecl::NewType { ty, .. } => type_width(types, ty, depth + 1),
            TypeDecl::SerEnum { members, .. } => members.first().map(|(_, v)| v.width()),
            _ => None,
        },
        _ => None,
    }
}

/// A number identifying the control-plane shape of a pipeline (architecture, names and
/// counts of tables, actions, externs, value sets, digests): a state built from one
/// pipeline is only used with a pipeline of the same fingerprint.
pub fn fingerprint(p: &Pipeline) -> u64 {
    let mut h = DefaultHasher::new();
    p.arch.name().hash(&mut h);
    for t in p.tables.values() {
        (&t.preamble.name, t.keys.len(), t.actions.len()).hash(&mut h);
    }
    for a in p.actions.values() {
        (&a.preamble.name, a.params.len()).hash(&mut h);
    }
    for e in p.externs.values() {
        (&e.preamble.name, &e.type_name).hash(&mut h);
    }
    p.value_sets.len().hash(&mut h);
    p.digests.len().hash(&mut h);
    h.finish()
}

fn extern_state(kind: &ExternKind, name: &str) -> ExternState {
    match kind {
        ExternKind::Register { size, elem, .. } => {
            ExternState::Register(RegisterArray::new(*size, elem.width()))
        }
        ExternKind::Counter { size, unit, .. } => {
            ExternState::Counter(CounterArray::new(*size, *unit))
        }
        ExternKind::Meter { size, unit, .. } => ExternState::Meter(MeterArray::new(*size, *unit)),
        ExternKind::DirectCounter { unit } => ExternState::DirectCounter {
            unit: *unit,
            table: None,
        },
        ExternKind::DirectMeter { unit } => ExternState::DirectMeter {
            unit: *unit,
            table: None,
        },
        ExternKind::ActionProfile { size } => ExternState::Profile(Profile::new(name, None, *size)),
        ExternKind::ActionSelector { algo, size, .. } => {
            ExternState::Profile(Profile::new(name, Some(*algo), *size))
        }
        // (PSA's checksum units hold a packet's sum only: the interpreter keeps it with the
        // packet.)
        ExternKind::Checksum16
        | ExternKind::Hash { .. }
        | ExternKind::Checksum { .. }
        | ExternKind::InternetChecksum
        | ExternKind::Random { .. }
        | ExternKind::Other => ExternState::Stateless,
    }
}

impl State {
    /// The state of a freshly loaded pipeline: empty tables except for the program's
    /// entries, registers and counters at 0, meters unconfigured, no multicast group, no
    /// clone session. Fails only if the program's own entries do not fit their tables.
    pub fn new(p: &Pipeline) -> Result<State> {
        let schema = Schema::new(p);
        let max_port = match p.arch {
            Architecture::V1Model => 511,
            _ => u32::MAX,
        };
        let mut s = State {
            fingerprint: fingerprint(p),
            arch: p.arch,
            actions: schema.actions,
            tables: schema.tables.into_iter().map(TableState::new).collect(),
            externs: p
                .externs
                .values()
                .map(|e| {
                    let mut st = extern_state(&e.kind, &e.preamble.name);
                    // PSA's `Register(size, initial_value)`: every cell starts at the value.
                    if let (ExternState::Register(r), "Register", Some(ConstArg::Bits(v))) =
                        (&mut st, e.type_name.as_str(), e.ctor_args.get(1))
                    {
                        r.fill(v);
                    }
                    st
                })
                .collect(),
            extern_names: p
                .externs
                .values()
                .map(|e| e.preamble.name.clone())
                .collect(),
            value_sets: p.value_sets.values().map(ValueSetState::new).collect(),
            digests: DigestQueue::default(),
            pre: Pre::new(max_port),
            mirroring: Mirroring::default(),
            now_ns: 0,
            type_widths: p
                .types
                .decls
                .iter()
                .filter_map(|d| match d {
                    koi_ir::types::TypeDecl::NewType { name, ty, .. } => {
                        Some((name.clone(), type_width(&p.types, ty, 0)?))
                    }
                    _ => None,
                })
                .collect(),
            calcs: crate::calc::Calcs::new(&p.calculations),
            link: None,
        };
        s.link_table_externs();
        for (id, t) in p.tables.iter() {
            for e in &t.entries {
                s.install_program_entry(id, e)?;
            }
        }
        Ok(s)
    }

    /// Records which table each direct resource belongs to, and which actions each profile's
    /// members may run.
    fn link_table_externs(&mut self) {
        for t in &self.tables {
            let s = &t.schema;
            for e in [s.direct_counter, s.direct_meter].into_iter().flatten() {
                match self.externs.get_mut(e.index() as usize) {
                    Some(ExternState::DirectCounter { table, .. })
                    | Some(ExternState::DirectMeter { table, .. }) => *table = Some(s.id),
                    _ => {}
                }
            }
            if let Some(ExternState::Profile(prof)) = s
                .implementation
                .and_then(|e| self.externs.get_mut(e.index() as usize))
            {
                for (a, _) in &s.actions {
                    if !prof.actions.contains(a) {
                        prof.actions.push(*a);
                    }
                }
            }
        }
    }

    fn install_program_entry(&mut self, id: TableId, e: &IrEntry) -> Result<()> {
        let now = self.now_ns;
        let Some(t) = self.tables.get_mut(id.index() as usize) else {
            return Ok(());
        };
        let keys = t
            .schema
            .keys
            .iter()
            .filter_map(|k| e.keys.get(k.position).cloned())
            .collect();
        let priority = e.priority.map(|p| match t.schema.largest_priority_wins {
            true => p,
            false => u32::MAX - p,
        });
        let entry = NewEntry {
            keys,
            action: EntryAction::Action(e.call.clone()),
            priority,
            timeout_ns: None,
        };
        let is_const = e.is_const || t.schema.entries_const;
        t.add(entry, is_const, now).map(|_| ())
    }

    /// Whether this state was built from a pipeline shaped like `p` (see [`fingerprint`]).
    pub fn is_for(&self, p: &Pipeline) -> bool {
        self.fingerprint == fingerprint(p)
    }

    /// The fingerprint of the pipeline the state was built from.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    pub fn arch(&self) -> Architecture {
        self.arch
    }

    /// Tells the state the current time (new entries start their idle time from it).
    pub fn set_now_ns(&mut self, ns: u64) {
        self.now_ns = ns;
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// The table with id `t`.
    pub fn table_by_id(&self, t: TableId) -> Option<&TableState> {
        self.tables.get(t.index() as usize)
    }

    pub(crate) fn table_by_id_mut(&mut self, t: TableId) -> Option<&mut TableState> {
        self.tables.get_mut(t.index() as usize)
    }

    /// All tables in id order.
    pub fn tables(&self) -> impl Iterator<Item = &TableState> {
        self.tables.iter()
    }

    /// The name and parameters of action `a`.
    pub fn action_schema(&self, a: ActionId) -> Option<&ActionSchema> {
        self.actions.get(a.index() as usize)
    }

    /// The state of extern `e`.
    pub fn extern_state(&self, e: ExternId) -> Option<&ExternState> {
        self.externs.get(e.index() as usize)
    }

    pub(crate) fn extern_state_mut(&mut self, e: ExternId) -> Option<&mut ExternState> {
        self.externs.get_mut(e.index() as usize)
    }

    /// The control-plane name of extern `e`.
    pub fn extern_name(&self, e: ExternId) -> Option<&str> {
        self.extern_names
            .get(e.index() as usize)
            .map(|s| s.as_str())
    }

    /// Resolves an extern instance name (see [`crate::names`]).
    pub fn extern_id(&self, name: &str) -> Result<ExternId> {
        crate::names::resolve(
            "extern",
            name,
            self.extern_names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str(), ExternId::new(i as u32))),
        )
    }

    /// Resolves a table name (see [`crate::names`]).
    pub fn table_id(&self, name: &str) -> Result<TableId> {
        crate::names::resolve(
            "table",
            name,
            self.tables.iter().map(|t| (t.name(), t.schema.id)),
        )
    }

    /// The table named `name`.
    pub fn table(&self, name: &str) -> Result<&TableState> {
        let id = self.table_id(name)?;
        self.table_by_id(id).ok_or(StateError::Unknown {
            kind: "table",
            name: name.to_string(),
        })
    }
}
