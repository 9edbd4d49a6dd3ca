//! A POF configuration's entries as **table writes**: the generated program declares its tables
//! without entries and one action per instruction shape ([`crate::codegen`]); each entry is a
//! write of its match (as control-plane patterns), its priority and its shape's action with
//! the entry's constants as arguments; a table's miss instructions are a write of its default
//! action, its shape's action with its constants. [`install`] applies them to a fresh state of the
//! program; the runtime applies the difference between two configurations of the same
//! structure ([`crate::Generated::same_structure`]) to a running one instead of compiling.

use crate::model::{Entry, MatchKind, MatchValue, Table};
use koi_ir::{Bits, Pattern};
use koi_state::{ActionSpec, EntrySpec, State};
use std::sync::Arc;

/// One entry's write into its table, or a table's miss instructions as its default action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableWrite {
    /// The POF table and entry id it installs (0 for a miss).
    pub pof_table: Arc<str>,
    pub id: u32,
    /// The table's miss instructions (its default action; no keys, no priority).
    pub miss: bool,
    /// The P4 table's control-plane name ([`crate::table_name`]).
    pub table: Arc<str>,
    /// One pattern per key.
    pub keys: Vec<Pattern>,
    /// The entry's priority (ternary tables only: higher wins).
    pub priority: Option<u32>,
    /// The control-plane name of its shape's action, and the entry's constants.
    pub action: Arc<str>,
    pub args: Vec<Bits>,
}

fn mask(w: u32) -> u128 {
    if w >= 128 {
        u128::MAX
    } else {
        (1u128 << w) - 1
    }
}

fn prefix_mask(w: u32, l: u32) -> u128 {
    if l == 0 { 0 } else { mask(w) & !mask(w - l) }
}

/// The control-plane pattern of match `m` on a key of width `w` in a table of `kind` (the
/// match was checked to fit).
fn pattern(kind: MatchKind, m: &MatchValue, w: u32) -> Pattern {
    let b = |v: u128| Bits::from_u128(w, v);
    match (kind, m) {
        (MatchKind::Exact, MatchValue::Exact(v)) => Pattern::Exact(b(*v)),
        (MatchKind::Lpm, MatchValue::Exact(v)) => Pattern::Prefix {
            value: b(*v),
            len: w,
        },
        (MatchKind::Lpm, MatchValue::Prefix(v, l)) => Pattern::Prefix {
            value: b(v & prefix_mask(w, *l)),
            len: *l,
        },
        (_, MatchValue::Exact(v)) => Pattern::Mask {
            value: b(*v),
            mask: b(mask(w)),
        },
        (_, MatchValue::Prefix(v, l)) => {
            let mk = prefix_mask(w, *l);
            Pattern::Mask {
                value: b(v & mk),
                mask: b(mk),
            }
        }
        (_, MatchValue::Masked(v, mk)) => Pattern::Mask {
            value: b(v & mk),
            mask: b(*mk),
        },
        (_, MatchValue::Any) => Pattern::Mask {
            value: b(0),
            mask: b(0),
        },
    }
}

impl TableWrite {
    pub(crate) fn new(
        t: &Table,
        pof_table: &Arc<str>,
        p4_table: &Arc<str>,
        e: &Entry,
        widths: &[u32],
        action: Arc<str>,
        args: Vec<Bits>,
    ) -> TableWrite {
        TableWrite {
            pof_table: pof_table.clone(),
            id: e.id,
            miss: false,
            table: p4_table.clone(),
            keys: e
                .matches
                .iter()
                .zip(widths)
                .map(|(m, w)| pattern(t.kind, m, *w))
                .collect(),
            priority: (t.kind == MatchKind::Ternary).then_some(e.priority),
            action,
            args,
        }
    }

    pub(crate) fn miss(
        pof_table: &Arc<str>,
        p4_table: &Arc<str>,
        action: Arc<str>,
        args: Vec<Bits>,
    ) -> TableWrite {
        TableWrite {
            pof_table: pof_table.clone(),
            id: 0,
            miss: true,
            table: p4_table.clone(),
            keys: Vec::new(),
            priority: None,
            action,
            args,
        }
    }

    /// The action it runs, as the state's API takes it.
    pub fn action_spec(&self) -> ActionSpec {
        ActionSpec::action(&self.action, self.args.clone())
    }

    /// The entry as the state's API takes it (not for a miss).
    pub fn spec(&self) -> EntrySpec {
        EntrySpec {
            keys: self.keys.clone(),
            action: ActionSpec::action(&self.action, self.args.clone()),
            priority: self.priority,
            timeout_ns: None,
        }
    }

    /// `entry ID of table T` (`the miss of table T`) for messages.
    pub fn what(&self) -> String {
        if self.miss {
            format!("the miss of table {}", self.pof_table)
        } else {
            format!("entry {} of table {}", self.id, self.pof_table)
        }
    }
}

/// The entries of ternary table `t` (`entries` in priority order) whose priority another one
/// shares, one line each.
pub(crate) fn ties(t: &Table, entries: &[&Entry]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| {
            entries
                .iter()
                .filter(|x| x.priority == e.priority)
                .nth(1)
                .is_some()
        })
        .map(|e| format!("{} {} {} {:?}", t.name, e.priority, e.id, e.matches))
        .collect()
}

/// Applies `writes` to `state` (a state of the program they were generated with, its POF
/// tables empty), in order.
pub fn install(state: &mut State, writes: &[TableWrite]) -> Result<(), String> {
    for w in writes {
        let r = if w.miss {
            state.table_set_default(&w.table, w.action_spec())
        } else {
            state.table_add(&w.table, w.spec()).map(drop)
        };
        r.map_err(|e| format!("{}: {e}", w.what()))?;
    }
    Ok(())
}
