//! Carrying the state of a running program over to a new program (pipeline swap: P4Runtime's
//! `RECONCILE_AND_COMMIT`, `koi ctl load PROG.p4`).
//!
//! The switch builds a fresh [`State`] for the new program ([`State::new`]: its own const
//! entries, initial default actions, everything else empty) and calls [`carry_over`] with the
//! running program's state, under that state's lock. [`carry_over`] copies into the new state
//! what still fits the new program and either returns a [`CarryReport`] (what was carried, and
//! every allowed loss) or refuses the swap with every [`CarryProblem`] it found (it does not
//! stop at the first). On a refusal the new state may be half-filled: the caller throws it
//! away and keeps running the old program, whose state [`carry_over`] never changes.
//!
//! # The rules
//!
//! Objects of the two programs correspond by their **full control-plane name**
//! (`MyIngress.ipv4_lpm`), never by id, and never by suffix. A "non-zero" cell is one that
//! differs from what a freshly loaded program holds (a register value other than 0, a counter
//! with packets or bytes, a configured meter).
//!
//! 1. **Tables.** A table has *control-plane state* when it has *control-plane entries*, or
//!    when its default action differs from the program's initial one. A control-plane entry
//!    is one that is not const and is not one of the old program's own entries as it loaded
//!    it (an entry declared with `entries` without `const` counts once the control plane has
//!    changed, or deleted and re-added, it). Such
//!    a table must exist in the new program with the **same key**: as many match fields, each
//!    with the same name, width and match kind, in the same order (`selector` fields may
//!    change). Otherwise the swap is refused. A table without control-plane state may change
//!    or vanish (non-zero direct counters and configured direct meters of its entries are then
//!    reported lost).
//!
//!    Every control-plane entry is carried **under the same handle** (the table's handle versions
//!    too, so that a handle of a deleted entry still names nothing), with its match key,
//!    priority, cookie, `last_hit_ns`, and:
//!    - its action, by name: the action must be one of the new table's actions, not
//!      `@defaultonly`, with the same parameter names and widths in the same order; an entry
//!      that runs an action profile member or group keeps it (same handle) when the new
//!      table's implementation is the same-named profile and that profile is carried (rule
//!      2). An entry running an action directly cannot go to a table that now has an action
//!      profile, nor a member or group to one that now has none;
//!    - its direct counter value, when the new table has a direct counter (of any unit:
//!      packets and bytes are both counted always); else a non-zero value is reported lost;
//!    - its direct meter (configuration and buckets), when the new table has a direct meter
//!      of the same unit; else a configured meter is reported lost;
//!    - its idle timeout (and idle notification time), when the new table has
//!      `support_timeout`; else a timeout is reported lost.
//!
//!    Refused too: control-plane entries going to a table the new program declares with
//!    `const entries`; an entry whose match key and priority are those of a const entry of the
//!    new program; more entries than the new table's `size`. A changed default action is
//!    carried like an entry's action (it must not be `@tableonly`); refused if the new
//!    program's default action is `const` and differs from it.
//!
//!    The new program's own entries stay. One whose match key and priority are those of an
//!    old program's own entry takes that entry's handle, direct counter, direct meter and
//!    `last_hit_ns` (its action is the new program's); one with the key of a carried
//!    control-plane entry is replaced by it (when it is not const); the others get the lowest
//!    free handles. Tables only in the new program start as the new program made them.
//!
//!    Every problem of a table is listed: a changed key does not hide refused actions.
//! 2. **Action profiles and selectors**, by name: members (action by name, parameters as in
//!    rule 1, the action one of those of the tables using the profile in the new program, if
//!    any table uses it) and
//!    groups (their members) are carried **under the same handles**. Refused: groups going to
//!    a profile without selector; more members than the new profile's size. A profile with
//!    members or groups that is not in the new program (or is no longer a profile) is
//!    reported lost, unless a table whose entries are carried runs its members or groups:
//!    then the swap is refused. The selector's algorithm may change.
//! 3. **Registers**, by name: the same cell type (width, and `bit` / `int` / `bool`); the size
//!    may change: the cells below both sizes keep their values, new cells are 0, and the
//!    non-zero cells beyond a smaller size are reported lost. A register whose name now
//!    designates another cell type or another kind of extern: refused if any cell is
//!    non-zero (an all-zero register may change freely). A register not in the new program:
//!    its non-zero cells are reported lost.
//! 4. **Counters** (indexed), by name: the same unit (packets, bytes, both); resized as
//!    registers. **Meters** (indexed), by name: the same unit (packets, bytes); each meter's
//!    configuration (and buckets) carried by index, resized as registers (configured meters
//!    count as non-zero). Changed type or kind, or gone: as registers.
//! 5. **Parser value sets**, by name: the same fields (as many, each with the same width and
//!    match kind); members carried. Refused: a value set with members that is not in the new
//!    program or whose fields changed; more members than the new size.
//! 6. **Multicast groups and nodes, clone sessions** belong to the architecture, not to the
//!    program: carried whole (node handles included) when both programs are of the same
//!    architecture; otherwise refused if there are any.
//! 7. Digest messages waiting in the old state's queue are not carried (the caller delivers
//!    them first). The state's time ([`State::now_ns`]) is carried, and so are the
//!    parameters of custom CRC calculations with the same name and width (`calc_N`; one
//!    that does not fit keeps BMv2's initial parameters).
//!
//! The report lists, per object, what was carried ([`Carried`]: counts of entries, members,
//! groups, non-zero cells, ...; objects that carried nothing are not listed) and every loss
//! ([`CarryLoss`]); [`CarryReport::lines`] gives them as text.
//!
//! Not recorded by the state, so not carried: a group's maximum size (P4Runtime's
//! `max_group_size`) and member weights (koi's groups have neither).

use crate::arrays::CounterValue;
use crate::profile::{Group, Member};
use crate::schema::{ActionSchema, KeySchema, TableSchema};
use crate::state::{ExternState, State};
use crate::table::{Entry, EntryAction, TableState};
use koi_ir::entity::EntityId;
use koi_ir::{
    ActionCall, ActionId, ActionScope, CounterUnit, ExternId, ExternKind, MeterUnit, P4Type,
    Pattern, Pipeline, TableId,
};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// The kind of object a line of the report or a problem is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    /// The programs themselves (a state that was not built from the program given with it).
    Program,
    Table,
    /// An action profile or action selector.
    ActionProfile,
    Register,
    Counter,
    Meter,
    ValueSet,
    /// The multicast groups and nodes.
    Multicast,
    /// The clone (mirroring) sessions.
    CloneSessions,
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ObjectKind::Program => "program",
            ObjectKind::Table => "table",
            ObjectKind::ActionProfile => "action profile",
            ObjectKind::Register => "register",
            ObjectKind::Counter => "counter",
            ObjectKind::Meter => "meter",
            ObjectKind::ValueSet => "value set",
            ObjectKind::Multicast => "multicast groups",
            ObjectKind::CloneSessions => "clone sessions",
        })
    }
}

/// `kind name: why`, or `kind: why` for objects without a name.
fn write_line(f: &mut fmt::Formatter<'_>, kind: ObjectKind, name: &str, why: &str) -> fmt::Result {
    if name.is_empty() {
        write!(f, "{kind}: {why}")
    } else {
        write!(f, "{kind} {name}: {why}")
    }
}

/// Why the swap is refused, for one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CarryProblem {
    pub kind: ObjectKind,
    /// The object's control-plane name (empty for multicast, clone sessions, the program).
    pub name: String,
    pub why: String,
}

impl fmt::Display for CarryProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_line(f, self.kind, &self.name, &self.why)
    }
}

impl std::error::Error for CarryProblem {}

/// State dropped by an accepted swap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CarryLoss {
    pub kind: ObjectKind,
    pub name: String,
    pub why: String,
}

impl fmt::Display for CarryLoss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_line(f, self.kind, &self.name, &self.why)
    }
}

/// What was carried for one object: counts, each with what it counts (`entries`,
/// `members`, `non-zero cells`, ...; `default action` counts 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Carried {
    pub kind: ObjectKind,
    pub name: String,
    pub counts: Vec<(u64, &'static str)>,
}

impl Carried {
    /// The count of `what` (0 if not listed).
    pub fn count(&self, what: &str) -> u64 {
        self.counts
            .iter()
            .filter(|(_, w)| *w == what)
            .map(|(n, _)| n)
            .sum()
    }
}

impl fmt::Display for Carried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .counts
            .iter()
            .map(|(n, what)| match *what {
                "default action" => what.to_string(),
                _ => count(*n as usize, singular(what), what),
            })
            .collect();
        write_line(f, self.kind, &self.name, &parts.join(", "))
    }
}

/// What an accepted swap carried and what it lost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CarryReport {
    pub carried: Vec<Carried>,
    pub losses: Vec<CarryLoss>,
}

impl CarryReport {
    /// One line per carried object (`carried table I.t: 3 entries, default action`), then
    /// one per loss (`lost: register I.r: resized 16 -> 8 cells: ...`).
    pub fn lines(&self) -> Vec<String> {
        let carried = self.carried.iter().map(|c| format!("carried {c}"));
        let lost = self.losses.iter().map(|l| format!("lost: {l}"));
        carried.chain(lost).collect()
    }

    /// One line per carried object, without the `carried` of [`CarryReport::lines`]
    /// (`table I.t: 3 entries, default action`).
    pub fn carried_lines(&self) -> Vec<String> {
        self.carried.iter().map(|c| c.to_string()).collect()
    }

    /// One line per loss, without the `lost:` of [`CarryReport::lines`]
    /// (`register I.r: resized 16 -> 8 cells: 1 non-zero cell beyond 8 dropped`).
    pub fn loss_lines(&self) -> Vec<String> {
        self.losses.iter().map(|l| l.to_string()).collect()
    }

    /// What was carried for the object `kind` `name`.
    pub fn carried_for(&self, kind: ObjectKind, name: &str) -> Option<&Carried> {
        self.carried
            .iter()
            .find(|c| c.kind == kind && c.name == name)
    }
}

impl fmt::Display for CarryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}

/// Copies into `new` (a fresh state of `new_p`) the state of `old` (of `old_p`) that fits
/// `new_p`, by the rules of the module doc. `old` is not changed; on `Err`, `new` may be
/// half-filled and is to be thrown away.
pub fn carry_over(
    old: &State,
    old_p: &Pipeline,
    new: &mut State,
    new_p: &Pipeline,
) -> Result<CarryReport, Vec<CarryProblem>> {
    carry_over_from(old, None, old_p, new, new_p)
}

/// [`carry_over`], given `initial`: a fresh state of `old_p` (the old program as it loaded,
/// to tell its own entries from the control plane's) that the caller built beforehand, so
/// that the lock on `old` is held for the copy alone. Without one, or with one not built from
/// `old_p`, it is built here.
pub fn carry_over_from(
    old: &State,
    initial: Option<&State>,
    old_p: &Pipeline,
    new: &mut State,
    new_p: &Pipeline,
) -> Result<CarryReport, Vec<CarryProblem>> {
    carry_over_except(old, initial, old_p, new, new_p, &|_| false)
}

/// [`carry_over_from`], leaving out the old tables whose names `skip` takes: their entries
/// and default actions are neither carried nor checked nor reported, and the new tables of
/// those names stay as `new` has them. For the caller that fills those tables itself (a POF
/// pipeline's tables, whose entries are its configuration's).
pub fn carry_over_except(
    old: &State,
    initial: Option<&State>,
    old_p: &Pipeline,
    new: &mut State,
    new_p: &Pipeline,
    skip: &dyn Fn(&str) -> bool,
) -> Result<CarryReport, Vec<CarryProblem>> {
    let built;
    let initial = match initial {
        Some(s) if s.is_for(old_p) => Some(s),
        _ => {
            built = State::new(old_p).ok();
            built.as_ref()
        }
    };
    let mut problems = Vec::new();
    for (s, p, which) in [(old, old_p, "old"), (&*new, new_p, "new")] {
        if !s.is_for(p) {
            problems.push(CarryProblem {
                kind: ObjectKind::Program,
                name: String::new(),
                why: format!("the {which} state was not built from the {which} program"),
            });
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut cx = Cx::new(old, old_p, initial, new, new_p);
    cx.profiles();
    for t in old.tables() {
        if !skip(t.name()) {
            cx.table(t);
        }
    }
    cx.arrays();
    cx.value_sets();
    cx.replication();
    let Cx {
        new,
        problems,
        report,
        ..
    } = cx;
    new.now_ns = old.now_ns.max(new.now_ns);
    new.carry_calcs(old);
    if problems.is_empty() {
        Ok(report)
    } else {
        Err(problems)
    }
}

/// What became of an old action profile.
#[derive(Clone, Debug)]
enum ProfileFate {
    /// Carried into the new program's extern of this id.
    Carried(ExternId),
    /// Refused, with a problem already reported.
    Refused,
    /// Not carried: why (`is not in the new program`).
    Missing(String),
}

/// Where an action is used, for the checks of [`Cx::map_call`].
enum Use<'s> {
    Entry(&'s TableSchema),
    Default(&'s TableSchema),
    /// A profile member: the actions the profile's tables may run (any action when no table
    /// uses the profile).
    Member(&'s [ActionId]),
}

struct Cx<'a> {
    old: &'a State,
    old_p: &'a Pipeline,
    new: &'a mut State,
    new_p: &'a Pipeline,
    problems: Vec<CarryProblem>,
    report: CarryReport,
    new_actions: HashMap<String, ActionId>,
    new_tables: HashMap<String, TableId>,
    new_externs: HashMap<String, ExternId>,
    new_value_sets: HashMap<String, usize>,
    /// By old extern index.
    profiles: HashMap<u32, ProfileFate>,
    /// The old program's state as loaded, to tell its own entries from the control plane's.
    initial: Option<&'a State>,
}

/// `1 entry`, `3 entries`.
fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn singular(plural: &str) -> &str {
    match plural {
        "entries" => "entry",
        "non-zero cells" => "non-zero cell",
        "configured meters" => "configured meter",
        "program entries' direct counters/meters" => "program entry's direct counter/meter",
        _ => plural.strip_suffix('s').unwrap_or(plural),
    }
}

fn pattern_text(p: &Pattern) -> String {
    match p {
        Pattern::Exact(v) => format!("{v:#x}"),
        Pattern::Prefix { value, len } => format!("{value:#x}/{len}"),
        Pattern::Mask { value, mask } => format!("{value:#x}&&&{mask:#x}"),
        Pattern::Range { lo, hi } => format!("{lo:#x}->{hi:#x}"),
        Pattern::Any => "*".to_string(),
    }
}

/// `3 (hdr.eth.dst=0x1, hdr.h.a=0x5&&&0xff)`: an entry's handle and match key.
fn entry_label(t: &TableSchema, e: &Entry) -> String {
    let keys: Vec<String> = t
        .keys
        .iter()
        .zip(&e.keys)
        .map(|(k, p)| format!("{}={}", k.name, pattern_text(p)))
        .collect();
    format!("{} ({})", e.handle, keys.join(", "))
}

/// `entry 3 (...)`, `entries 3 (...), 4 (...) and 7 more`.
fn entries_text(labels: &[String]) -> String {
    const SHOWN: usize = 5;
    let shown = labels[..labels.len().min(SHOWN)].join(", ");
    match labels.len() {
        1 => format!("entry {shown}"),
        n if n <= SHOWN => format!("entries {shown}"),
        n => format!("entries {shown} and {} more", n - SHOWN),
    }
}

fn key_field_text(k: &KeySchema) -> String {
    format!("{} {} bit<{}>", k.name, k.kind, k.width)
}

/// Why two tables' keys differ, one message per difference.
fn key_differences(o: &TableSchema, n: &TableSchema) -> Vec<String> {
    let list = |t: &TableSchema| {
        let fields: Vec<String> = t.keys.iter().map(key_field_text).collect();
        match fields.is_empty() {
            true => "no key".to_string(),
            false => format!(
                "{} ({})",
                count(fields.len(), "field", "fields"),
                fields.join(", ")
            ),
        }
    };
    if o.keys.len() != n.keys.len() {
        return vec![format!("key: was {}, is now {}", list(o), list(n))];
    }
    let mut out = Vec::new();
    for (i, (a, b)) in o.keys.iter().zip(&n.keys).enumerate() {
        if a.name != b.name {
            out.push(format!(
                "key field {}: was {}, is now {}",
                i + 1,
                key_field_text(a),
                key_field_text(b)
            ));
        } else if a.kind != b.kind || a.width != b.width {
            out.push(format!(
                "key field {}: was {} bit<{}>, is now {} bit<{}>",
                a.name, a.kind, a.width, b.kind, b.width
            ));
        }
    }
    out
}

fn params_text(a: &ActionSchema) -> String {
    let ps: Vec<String> = a
        .params
        .iter()
        .map(|(n, w)| format!("{n}: bit<{w}>"))
        .collect();
    format!("({})", ps.join(", "))
}

fn call_text(s: &State, a: &EntryAction) -> String {
    match a {
        EntryAction::Action(c) => {
            let name = s
                .action_schema(c.action)
                .map_or("?", |x| x.name.as_str())
                .to_string();
            let args: Vec<String> = c.args.iter().map(|v| format!("{v:#x}")).collect();
            format!("{name}({})", args.join(", "))
        }
        EntryAction::Member(m) => format!("member {m}"),
        EntryAction::Group(g) => format!("group {g}"),
    }
}

/// The table's control-plane state in words: `3 entries added by the control plane`.
fn control_state_text(entries: usize, default_changed: bool) -> String {
    let e = count(entries, "entry", "entries");
    match (entries, default_changed) {
        (0, _) => "a default action set by the control plane".to_string(),
        (_, false) => format!("{e} added by the control plane"),
        (_, true) => format!("{e} added by the control plane and a default action set by it"),
    }
}

fn direct_counter_unit(s: &State, t: &TableSchema) -> Option<CounterUnit> {
    match s.extern_state(t.direct_counter?)? {
        ExternState::DirectCounter { unit, .. } => Some(*unit),
        _ => None,
    }
}

fn direct_meter_unit(s: &State, t: &TableSchema) -> Option<MeterUnit> {
    match s.extern_state(t.direct_meter?)? {
        ExternState::DirectMeter { unit, .. } => Some(*unit),
        _ => None,
    }
}

fn counter_unit_text(u: CounterUnit) -> &'static str {
    match u {
        CounterUnit::Packets => "packets",
        CounterUnit::Bytes => "bytes",
        CounterUnit::PacketsAndBytes => "packets and bytes",
    }
}

fn meter_unit_text(u: MeterUnit) -> &'static str {
    match u {
        MeterUnit::Packets => "packets",
        MeterUnit::Bytes => "bytes",
    }
}

/// A register's cell type as P4 writes it: `bit<32>`, `int<8>`, `bool`.
fn cell_type(p: &Pipeline, e: ExternId, width: u32) -> String {
    let ext = p.externs.values().nth(e.index() as usize);
    match ext.and_then(|x| x.type_args.first()) {
        Some(P4Type::Int(w)) => format!("int<{w}>"),
        Some(P4Type::Bool) => "bool".to_string(),
        _ => format!("bit<{width}>"),
    }
}

/// What an extern is, in words: `a register of bit<32>`, `a counter of packets`.
fn extern_text(p: &Pipeline, s: &State, e: ExternId) -> String {
    let kind = p.externs.values().nth(e.index() as usize).map(|x| &x.kind);
    match (s.extern_state(e), kind) {
        (Some(ExternState::Register(r)), _) => {
            format!("a register of {}", cell_type(p, e, r.width))
        }
        (Some(ExternState::Counter(c)), _) => {
            format!("a counter of {}", counter_unit_text(c.unit))
        }
        (Some(ExternState::Meter(m)), _) => format!("a meter of {}", meter_unit_text(m.unit)),
        (Some(ExternState::DirectCounter { .. }), _) => "a direct counter".to_string(),
        (Some(ExternState::DirectMeter { .. }), _) => "a direct meter".to_string(),
        (Some(ExternState::Profile(pr)), _) if pr.selector.is_some() => {
            "an action selector".to_string()
        }
        (Some(ExternState::Profile(_)), _) => "an action profile".to_string(),
        (_, Some(ExternKind::Checksum16)) => "a checksum unit".to_string(),
        _ => {
            let t = p.externs.values().nth(e.index() as usize);
            format!(
                "a {}",
                t.map_or("stateless extern", |x| x.type_name.as_str())
            )
        }
    }
}

impl<'a> Cx<'a> {
    fn new(
        old: &'a State,
        old_p: &'a Pipeline,
        initial: Option<&'a State>,
        new: &'a mut State,
        new_p: &'a Pipeline,
    ) -> Cx<'a> {
        let new_actions = (0..)
            .zip(&new.actions)
            .map(|(i, a)| (a.ir_name.clone(), ActionId::new(i)))
            .collect();
        let new_tables = new
            .tables
            .iter()
            .map(|t| (t.name().to_string(), t.schema.id))
            .collect();
        let new_externs = (0..)
            .zip(&new.extern_names)
            .map(|(i, n)| (n.clone(), ExternId::new(i)))
            .collect();
        let new_value_sets = new
            .value_sets
            .iter()
            .enumerate()
            .map(|(i, v)| (v.name.clone(), i))
            .collect();
        Cx {
            old,
            old_p,
            new,
            new_p,
            problems: Vec::new(),
            report: CarryReport::default(),
            new_actions,
            new_tables,
            new_externs,
            new_value_sets,
            profiles: HashMap::new(),
            initial,
        }
    }

    /// Whether entry `e` of old table `ot` is control-plane state: not const, and not one the
    /// old program declares as it loaded it (same handle, match key, priority and action).
    fn is_cp(&self, ot: &TableState, e: &Entry) -> bool {
        if e.is_const {
            return false;
        }
        let loaded = self
            .initial
            .as_ref()
            .and_then(|s| s.table_by_id(ot.schema.id))
            .and_then(|t| t.get(e.handle));
        !loaded
            .is_some_and(|l| l.keys == e.keys && l.priority == e.priority && l.action == e.action)
    }

    fn problem(&mut self, kind: ObjectKind, name: &str, why: String) {
        self.problems.push(CarryProblem {
            kind,
            name: name.to_string(),
            why,
        });
    }

    fn loss(&mut self, kind: ObjectKind, name: &str, why: String) {
        self.report.losses.push(CarryLoss {
            kind,
            name: name.to_string(),
            why,
        });
    }

    fn carried(&mut self, kind: ObjectKind, name: &str, counts: Vec<(u64, &'static str)>) {
        let counts: Vec<_> = counts.into_iter().filter(|(n, _)| *n > 0).collect();
        if !counts.is_empty() {
            self.report.carried.push(Carried {
                kind,
                name: name.to_string(),
                counts,
            });
        }
    }

    /// `call` of the old program as a call of the new one, checked for `use_`.
    fn map_call(&self, call: &ActionCall, use_: Use<'_>) -> Result<ActionCall, String> {
        let Some(os) = self.old.action_schema(call.action) else {
            return Err(format!("action {} is unknown", call.action));
        };
        let name = &os.name;
        // In a table, the table's action of that control-plane name (its own specialisation);
        // elsewhere the action of the same IR name.
        let in_table = match use_ {
            Use::Entry(t) | Use::Default(t) => t.actions.iter().map(|(a, _)| *a).find(|a| {
                self.new
                    .action_schema(*a)
                    .is_some_and(|x| x.name == os.name)
            }),
            Use::Member(_) => None,
        };
        let Some(id) = in_table.or_else(|| self.new_actions.get(&os.ir_name).copied()) else {
            return Err(format!("action {name} is not in the new program"));
        };
        let Some(ns) = self.new.action_schema(id) else {
            return Err(format!("action {name} is not in the new program"));
        };
        let not_in_table =
            || format!("action {name} is not an action of the table in the new program");
        match use_ {
            Use::Entry(t) => match t.scope(id) {
                None => return Err(not_in_table()),
                Some(ActionScope::DefaultOnly) => {
                    return Err(format!(
                        "action {name} is @defaultonly in the new program: entries cannot run it"
                    ));
                }
                Some(_) => {}
            },
            Use::Default(t) => match t.scope(id) {
                None => return Err(not_in_table()),
                Some(ActionScope::TableOnly) => {
                    return Err(format!(
                        "action {name} is @tableonly in the new program: it cannot be the default action"
                    ));
                }
                Some(_) => {}
            },
            Use::Member(actions) => {
                if !actions.is_empty() && !actions.contains(&id) {
                    return Err(format!(
                        "action {name} is not an action of the tables using the profile in the new program"
                    ));
                }
            }
        }
        if os.params != ns.params {
            return Err(format!(
                "action {name}: parameters were {}, are now {}",
                params_text(os),
                params_text(ns)
            ));
        }
        Ok(ActionCall {
            action: id,
            args: call.args.clone(),
        })
    }

    /// Rule 2: action profiles and selectors, before the tables whose entries use them.
    fn profiles(&mut self) {
        let old = self.old;
        for (i, st) in (0u32..).zip(&old.externs) {
            let ExternState::Profile(op) = st else {
                continue;
            };
            let name = op.name.as_str();
            let has_state = !op.members.is_empty() || !op.groups.is_empty();
            let target = self.new_externs.get(name).copied();
            let np = target.and_then(|e| match self.new.extern_state(e) {
                Some(ExternState::Profile(p)) => Some((e, p)),
                _ => None,
            });
            let Some((ne, np)) = np else {
                let why = match target {
                    None => "is not in the new program".to_string(),
                    Some(e) => format!(
                        "is {} in the new program",
                        extern_text(self.new_p, self.new, e)
                    ),
                };
                if has_state && !self.profile_in_use(ExternId::new(i)) {
                    let what = match op.groups.len() {
                        0 => count(op.members.len(), "member", "members"),
                        g => format!(
                            "{} and {}",
                            count(op.members.len(), "member", "members"),
                            count(g, "group", "groups")
                        ),
                    };
                    self.loss(
                        ObjectKind::ActionProfile,
                        name,
                        format!("{why}: its {what} dropped"),
                    );
                }
                self.profiles.insert(i, ProfileFate::Missing(why));
                continue;
            };
            let mut whys = Vec::new();
            if !op.groups.is_empty() && np.selector.is_none() {
                whys.push(format!(
                    "it has {}, but in the new program it is an action profile without selector (no groups)",
                    count(op.groups.len(), "group", "groups")
                ));
            }
            if np.size > 0 && op.members.len() as u64 > np.size {
                whys.push(format!(
                    "it has {}, the new program's profile holds {}",
                    count(op.members.len(), "member", "members"),
                    np.size
                ));
            }
            let mut members = Vec::new();
            for (h, m) in op.members.iter() {
                match self.map_call(&m.call, Use::Member(&np.actions)) {
                    Ok(call) => members.push((h, call)),
                    Err(why) => whys.push(format!("member {h}: {why}")),
                }
            }
            if !whys.is_empty() {
                for why in whys {
                    self.problem(ObjectKind::ActionProfile, name, why);
                }
                self.profiles.insert(i, ProfileFate::Refused);
                continue;
            }
            let Some(ExternState::Profile(np)) = self.new.extern_state_mut(ne) else {
                continue;
            };
            for (h, call) in members {
                np.members.insert_at(h, Member { call, refs: 0 });
            }
            for (h, g) in op.groups.iter() {
                np.groups.insert_at(
                    h,
                    Group {
                        members: g.members.clone(),
                        refs: 0,
                    },
                );
                for m in &g.members {
                    if let Some(x) = np.members.get_mut(*m) {
                        x.refs += 1;
                    }
                }
            }
            self.profiles.insert(i, ProfileFate::Carried(ne));
            let counts = vec![
                (op.members.len() as u64, "members"),
                (op.groups.len() as u64, "groups"),
            ];
            self.carried(ObjectKind::ActionProfile, name, counts);
        }
    }

    /// Whether a table of the old program that is also in the new one has control-plane
    /// entries or a default action running members or groups of profile `e`.
    fn profile_in_use(&self, e: ExternId) -> bool {
        self.old.tables().any(|t| {
            t.schema.implementation == Some(e)
                && self.new_tables.contains_key(t.name())
                && (t
                    .entries()
                    .any(|x| !x.is_const && !matches!(x.action, EntryAction::Action(_)))
                    || !matches!(t.default_action(), EntryAction::Action(_)))
        })
    }

    /// The direct state (non-zero counters, configured meters) of `entries` reported lost.
    fn direct_loss<'e>(
        &mut self,
        table: &str,
        entries: impl Iterator<Item = &'e Entry>,
        why: &str,
    ) {
        let (mut counters, mut meters) = (0, 0);
        for e in entries {
            counters += usize::from(e.counter != CounterValue::default());
            meters += usize::from(e.meter.rates().is_some());
        }
        if counters > 0 {
            let n = count(counters, "entry", "entries");
            self.loss(
                ObjectKind::Table,
                table,
                format!("{why}: the direct counters of {n} dropped"),
            );
        }
        if meters > 0 {
            let n = count(meters, "entry", "entries");
            self.loss(
                ObjectKind::Table,
                table,
                format!("{why}: the direct meter configurations of {n} dropped"),
            );
        }
    }

    /// Rule 1 for one table of the old program.
    fn table(&mut self, ot: &'a TableState) {
        let name = ot.name();
        let cp: Vec<&Entry> = ot.entries().filter(|e| self.is_cp(ot, e)).collect();
        let initial = EntryAction::Action(ot.schema.default_action.call.clone());
        let default_changed = *ot.default_action() != initial;
        let has_cp = !cp.is_empty() || default_changed;
        let state_text = control_state_text(cp.len(), default_changed);
        let Some(&nid) = self.new_tables.get(name) else {
            if has_cp {
                self.problem(
                    ObjectKind::Table,
                    name,
                    format!("is not in the new program, but it has {state_text}"),
                );
            } else {
                self.direct_loss(name, ot.entries(), "not in the new program");
            }
            return;
        };
        let Some(nt) = self.new.table_by_id(nid) else {
            return;
        };
        let ns = nt.schema.clone();
        let program: Vec<Entry> = nt.entries().cloned().collect();
        let before = self.problems.len();
        let diffs = key_differences(&ot.schema, &ns);
        let key_ok = diffs.is_empty();
        if !key_ok && !has_cp {
            self.direct_loss(name, ot.entries(), "its key changed");
            return;
        }
        for d in diffs {
            self.problem(
                ObjectKind::Table,
                name,
                format!("{d} (it has {state_text})"),
            );
        }
        if ns.entries_const && !cp.is_empty() {
            self.problem(
                ObjectKind::Table,
                name,
                format!(
                    "the new program declares its entries const: the {} added by the control plane cannot be kept",
                    count(cp.len(), "entry", "entries")
                ),
            );
        }
        let profile_ok = self.check_table_profile(ot, &ns, &cp);
        let new_dc = direct_counter_unit(self.new, &ns);
        let old_dm = direct_meter_unit(self.old, &ot.schema);
        let new_dm = direct_meter_unit(self.new, &ns);
        let meter_fits = new_dm.is_some() && new_dm == old_dm;

        // The entries added by the control plane, their actions mapped.
        let mut carried = Vec::new();
        let mut refused: Vec<(String, Vec<String>)> = Vec::new();
        let mut refuse =
            |why: String, label: String| match refused.iter_mut().find(|(w, _)| *w == why) {
                Some((_, labels)) => labels.push(label),
                None => refused.push((why, vec![label])),
            };
        let (mut lost_counters, mut lost_meters, mut lost_timeouts) = (0, 0, 0);
        let mut direct_in_indirect = 0;
        for e in &cp {
            let action = match &e.action {
                EntryAction::Action(_) if ns.implementation.is_some() => {
                    direct_in_indirect += 1;
                    continue;
                }
                EntryAction::Action(call) => match self.map_call(call, Use::Entry(&ns)) {
                    Ok(c) => EntryAction::Action(c),
                    Err(why) => {
                        refuse(why, entry_label(&ot.schema, e));
                        continue;
                    }
                },
                other if profile_ok => other.clone(),
                _ => continue,
            };
            let mut ne = (*e).clone();
            ne.action = action;
            if new_dc.is_none() && ne.counter != CounterValue::default() {
                lost_counters += 1;
                ne.counter = CounterValue::default();
            }
            if !meter_fits && ne.meter.rates().is_some() {
                lost_meters += 1;
            }
            if !meter_fits {
                ne.meter.reset();
            }
            if !ns.support_timeout {
                lost_timeouts += usize::from(ne.timeout_ns.is_some());
                ne.timeout_ns = None;
                ne.idle_notified_ns = None;
            }
            carried.push(ne);
        }
        if direct_in_indirect > 0 {
            let prof = ns
                .implementation
                .and_then(|e| self.new.extern_name(e))
                .unwrap_or("?");
            self.problem(
                ObjectKind::Table,
                name,
                format!(
                    "{} run actions directly, but in the new program the table's entries run members of action profile {prof}",
                    count(direct_in_indirect, "entry", "entries")
                ),
            );
        }
        if key_ok && !ns.entries_const {
            for pe in program.iter().filter(|e| e.is_const) {
                if let Some(oe) = old_entry_like(ot, pe).filter(|oe| self.is_cp(ot, oe)) {
                    refuse(
                        "the new program has a const entry with this match key".to_string(),
                        entry_label(&ot.schema, oe),
                    );
                }
            }
        }
        for (why, labels) in refused {
            self.problem(
                ObjectKind::Table,
                name,
                format!("{}: {why}", entries_text(&labels)),
            );
        }

        // The default action.
        let mut new_default = None;
        if default_changed {
            let mapped = match ot.default_action() {
                EntryAction::Action(call) => self
                    .map_call(call, Use::Default(&ns))
                    .map(EntryAction::Action)
                    .map(Some),
                _ if profile_ok => Ok(Some(ot.default_action().clone())),
                _ => Ok(None),
            };
            match mapped {
                Ok(Some(a)) if ns.default_action.is_const => {
                    if a != EntryAction::Action(ns.default_action.call.clone()) {
                        let text = call_text(self.old, ot.default_action());
                        self.problem(
                            ObjectKind::Table,
                            name,
                            format!(
                                "the default action was set to {text}, but the new program's default action is const ({})",
                                call_text(self.new, &EntryAction::Action(ns.default_action.call.clone()))
                            ),
                        );
                    }
                }
                Ok(a) => new_default = a,
                Err(why) => self.problem(ObjectKind::Table, name, format!("default action: {why}")),
            }
        }

        // Size: the carried entries and the program's entries they do not replace.
        let kept_program = program
            .iter()
            .filter(|pe| pe.is_const || old_entry_like(ot, pe).is_none_or(|oe| !self.is_cp(ot, oe)))
            .count();
        let total = carried.len() + kept_program;
        if key_ok && ns.size > 0 && total as u64 > ns.size {
            let own = match kept_program {
                0 => String::new(),
                n => format!(
                    " besides {} of the new program",
                    count(n, "entry", "entries")
                ),
            };
            self.problem(
                ObjectKind::Table,
                name,
                format!(
                    "the new program's table holds at most {} entries: {} would be carried{own}",
                    ns.size,
                    carried.len()
                ),
            );
        }
        if self.problems.len() > before {
            return;
        }

        let n_carried = carried.len() as u64;
        let kept = self.rebuild(ot, nid, carried, program, new_dc.is_some(), meter_fits);
        if let Some(a) = &new_default
            && let Some(t) = self.new.table_by_id_mut(nid)
        {
            t.set_default(a.clone());
            self.new.adjust_refs(nid, a, 1);
        }
        if lost_counters > 0 {
            let n = count(lost_counters, "entry", "entries");
            self.loss(
                ObjectKind::Table,
                name,
                format!(
                    "the new program's table has no direct counter: the counters of {n} dropped"
                ),
            );
        }
        if lost_meters > 0 {
            let why = match new_dm {
                None => "has no direct meter".to_string(),
                Some(u) => format!("has a direct meter of {}", meter_unit_text(u)),
            };
            let n = count(lost_meters, "entry", "entries");
            self.loss(
                ObjectKind::Table,
                name,
                format!("the new program's table {why}: the meter configurations of {n} dropped"),
            );
        }
        if lost_timeouts > 0 {
            let n = count(lost_timeouts, "entry", "entries");
            self.loss(
                ObjectKind::Table,
                name,
                format!("the new program's table does not support idle timeouts: the timeouts of {n} dropped"),
            );
        }
        let counts = vec![
            (n_carried, "entries"),
            (u64::from(new_default.is_some()), "default action"),
            (kept as u64, "program entries' direct counters/meters"),
        ];
        self.carried(ObjectKind::Table, name, counts);
    }

    /// Whether the members and groups that the control-plane entries and default action of
    /// `ot` run can be kept; reports a problem if not (unless the profile's own refusal was
    /// reported).
    fn check_table_profile(&mut self, ot: &TableState, ns: &TableSchema, cp: &[&Entry]) -> bool {
        let indirect = cp
            .iter()
            .filter(|e| !matches!(e.action, EntryAction::Action(_)))
            .count();
        let default_indirect = !matches!(ot.default_action(), EntryAction::Action(_));
        if indirect == 0 && !default_indirect {
            return true;
        }
        let Some(oe) = ot.schema.implementation else {
            return false;
        };
        let oname = self.old.extern_name(oe).unwrap_or("?").to_string();
        let who = match (indirect, default_indirect) {
            (0, _) => "its default action runs a member or group".to_string(),
            (n, false) => format!("{} run members or groups", count(n, "entry", "entries")),
            (n, true) => format!(
                "{} and its default action run members or groups",
                count(n, "entry", "entries")
            ),
        };
        let why = match self.profiles.get(&oe.index()).cloned() {
            Some(ProfileFate::Carried(ne)) if ns.implementation == Some(ne) => return true,
            Some(ProfileFate::Carried(_)) => match ns.implementation {
                None => "the new program's table has no action profile".to_string(),
                Some(e) => format!(
                    "the new program's table uses {}",
                    self.new.extern_name(e).unwrap_or("?")
                ),
            },
            Some(ProfileFate::Refused) | None => return false,
            Some(ProfileFate::Missing(why)) => format!("which {why}"),
        };
        self.problem(
            ObjectKind::Table,
            ot.name(),
            format!("{who} of action profile {oname}, {why}"),
        );
        false
    }

    /// Refills table `nid` of the new state: the carried entries under their handles, then
    /// the program's entries (under the handle of the old program's entry with their key, or
    /// the lowest free one). Returns how many program entries took an old entry's direct
    /// counter or meter.
    fn rebuild(
        &mut self,
        ot: &TableState,
        nid: TableId,
        carried: Vec<Entry>,
        program: Vec<Entry>,
        counter: bool,
        meter: bool,
    ) -> usize {
        let name = ot.name();
        let mut failures = Vec::new();
        let mut kept = 0;
        let mut refs = Vec::new();
        let mut lost_direct = Vec::new();
        let mut matched = HashSet::new();
        let cp: HashSet<u32> = ot
            .entries()
            .filter(|e| self.is_cp(ot, e))
            .map(|e| e.handle)
            .collect();
        {
            let Some(t) = self.new.table_by_id_mut(nid) else {
                return 0;
            };
            t.take_all();
            t.set_versions(ot.versions().to_vec());
            for e in carried {
                refs.push(e.action.clone());
                let h = e.handle;
                if let Err(err) = t.restore(e) {
                    failures.push(format!("entry {h}: {err}"));
                }
            }
            let mut fresh = Vec::new();
            for mut pe in program {
                match old_entry_like(ot, &pe) {
                    Some(oe) if !cp.contains(&oe.handle) => {
                        matched.insert(oe.handle);
                        pe.handle = oe.handle;
                        pe.last_hit_ns = oe.last_hit_ns;
                        let direct =
                            oe.counter != CounterValue::default() || oe.meter.rates().is_some();
                        if counter {
                            pe.counter = oe.counter;
                        }
                        if meter {
                            pe.meter = oe.meter.clone();
                        }
                        if (counter || meter) && direct {
                            kept += 1;
                        }
                        if (!counter && oe.counter != CounterValue::default())
                            || (!meter && oe.meter.rates().is_some())
                        {
                            lost_direct.push(oe);
                        }
                        if let Err(err) = t.restore(pe) {
                            failures.push(format!("program entry {}: {err}", oe.handle));
                        }
                    }
                    Some(_) => {} // replaced by the carried entry with its key
                    None => fresh.push(pe),
                }
            }
            for pe in fresh {
                if let Err(err) = t.insert_entry(pe) {
                    failures.push(format!("program entry: {err}"));
                }
            }
        }
        for a in &refs {
            self.new.adjust_refs(nid, a, 1);
        }
        let gone = ot
            .entries()
            .filter(|e| !cp.contains(&e.handle) && !matched.contains(&e.handle));
        self.direct_loss(name, gone, "program entries not in the new program");
        self.direct_loss(
            name,
            lost_direct.into_iter(),
            "the new program's table lacks their direct resource",
        );
        for f in failures {
            self.problem(ObjectKind::Table, name, f);
        }
        kept
    }

    /// Rules 3 and 4: registers, counters and meters.
    fn arrays(&mut self) {
        let old = self.old;
        for (i, st) in (0u32..).zip(&old.externs) {
            let oe = ExternId::new(i);
            let (kind, nonzero) = match st {
                ExternState::Register(r) => (ObjectKind::Register, r.count_nonzero()),
                ExternState::Counter(c) => (ObjectKind::Counter, c.count_nonzero()),
                ExternState::Meter(m) => (ObjectKind::Meter, m.count_configured()),
                _ => continue,
            };
            let name = old.extern_name(oe).unwrap_or("?");
            let what = match kind {
                ObjectKind::Meter => "configured meters",
                _ => "non-zero cells",
            };
            let Some(&ne) = self.new_externs.get(name) else {
                if nonzero > 0 {
                    let n = count(nonzero as usize, singular(what), what);
                    self.loss(
                        kind,
                        name,
                        format!("not in the new program: its {n} dropped"),
                    );
                }
                continue;
            };
            let was = extern_text(self.old_p, old, oe);
            let is = extern_text(self.new_p, self.new, ne);
            let (size, lost) = match (st, self.new.extern_state_mut(ne)) {
                (ExternState::Register(o), Some(ExternState::Register(n))) if was == is => {
                    let (r, lost) = o.resized(n.len());
                    *n = r;
                    (n.len(), lost)
                }
                (ExternState::Counter(o), Some(ExternState::Counter(n))) if o.unit == n.unit => {
                    let (c, lost) = o.resized(n.len());
                    *n = c;
                    (n.len(), lost)
                }
                (ExternState::Meter(o), Some(ExternState::Meter(n))) if o.unit == n.unit => {
                    let (m, lost) = o.resized(n.cells.len());
                    *n = m;
                    (n.cells.len(), lost)
                }
                _ => {
                    if nonzero > 0 {
                        let n = count(nonzero as usize, singular(what), what);
                        self.problem(kind, name, format!("was {was}, is now {is} (it has {n})"));
                    }
                    continue;
                }
            };
            let old_size = match st {
                ExternState::Register(r) => r.len(),
                ExternState::Counter(c) => c.len(),
                ExternState::Meter(m) => m.cells.len(),
                _ => size,
            };
            if lost > 0 {
                let n = count(lost as usize, singular(what), what);
                self.loss(
                    kind,
                    name,
                    format!("resized {old_size} -> {size} cells: {n} beyond {size} dropped"),
                );
            }
            self.carried(kind, name, vec![(nonzero - lost, what)]);
        }
    }

    /// Rule 5: parser value sets.
    fn value_sets(&mut self) {
        let old = self.old;
        for ov in &old.value_sets {
            let members = ov.members();
            if members.is_empty() {
                continue;
            }
            let name = ov.name.as_str();
            let n = count(members.len(), "member", "members");
            let Some(&i) = self.new_value_sets.get(name) else {
                self.problem(
                    ObjectKind::ValueSet,
                    name,
                    format!("is not in the new program, but it has {n}"),
                );
                continue;
            };
            let fields = |f: &[(String, u32, koi_ir::MatchKind)]| {
                let v: Vec<String> = f.iter().map(|(_, w, k)| format!("{k} bit<{w}>")).collect();
                format!("({})", v.join(", "))
            };
            let nv = &mut self.new.value_sets[i];
            let same = ov.fields.len() == nv.fields.len()
                && ov
                    .fields
                    .iter()
                    .zip(&nv.fields)
                    .all(|(a, b)| a.1 == b.1 && a.2 == b.2);
            if !same {
                let why = format!(
                    "fields were {}, are now {} (it has {n})",
                    fields(&ov.fields),
                    fields(&nv.fields)
                );
                self.problem(ObjectKind::ValueSet, name, why);
                continue;
            }
            if members.len() as u64 > u64::from(nv.size) {
                let why = format!("it has {n}, the new program's value set holds {}", nv.size);
                self.problem(ObjectKind::ValueSet, name, why);
                continue;
            }
            let mut failed = Vec::new();
            for m in members {
                if let Err(e) = nv.add(m) {
                    failed.push(e.to_string());
                }
            }
            for f in failed {
                self.problem(ObjectKind::ValueSet, name, f);
            }
            self.carried(
                ObjectKind::ValueSet,
                name,
                vec![(members.len() as u64, "members")],
            );
        }
    }

    /// Rule 6: multicast groups and nodes, clone sessions.
    fn replication(&mut self) {
        let old = self.old;
        let (groups, nodes) = (old.pre.group_count(), old.pre.node_count());
        let sessions = old.mirroring.len();
        if old.arch == self.new.arch {
            self.new.pre = old.pre.clone();
            self.new.mirroring = old.mirroring.clone();
            self.carried(
                ObjectKind::Multicast,
                "",
                vec![(groups as u64, "groups"), (nodes as u64, "nodes")],
            );
            self.carried(
                ObjectKind::CloneSessions,
                "",
                vec![(sessions as u64, "sessions")],
            );
            return;
        }
        let archs = format!(
            "the old program is for {}, the new one for {}",
            old.arch.name(),
            self.new.arch.name()
        );
        if groups + nodes > 0 {
            let why = format!(
                "{archs}: {} and {} cannot be carried",
                count(groups, "group", "groups"),
                count(nodes, "node", "nodes")
            );
            self.problem(ObjectKind::Multicast, "", why);
        }
        if sessions > 0 {
            let why = format!(
                "{archs}: {} cannot be carried",
                count(sessions, "session", "sessions")
            );
            self.problem(ObjectKind::CloneSessions, "", why);
        }
    }
}

/// The entry of `ot` with the match key and priority of `e` (an entry of the same-keyed new
/// table).
fn old_entry_like<'t>(ot: &'t TableState, e: &Entry) -> Option<&'t Entry> {
    let h = ot.find(&e.keys, e.priority).ok()??;
    ot.get(h)
}
