//! Match-action tables: keys, the actions they may run, default action, entries declared in
//! the program, and the properties the control plane sees (P4Info's `Table`).

use crate::expr::Expr;
use crate::ids::{ActionId, ExternId};
use crate::matching::{MatchField, MatchKind, Pattern};
use crate::types::{Annotation, Preamble};
use crate::value::Bits;

/// Where an action may be used in a table (`@tableonly`, `@defaultonly`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ActionScope {
    TableAndDefault,
    TableOnly,
    DefaultOnly,
}

/// An action of a table's `actions` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableAction {
    pub action: ActionId,
    pub scope: ActionScope,
    /// Annotations on the reference (P4Info `ActionRef.annotations`), scope ones included.
    pub annotations: Vec<Annotation>,
}

impl TableAction {
    pub fn new(action: ActionId) -> TableAction {
        TableAction {
            action,
            scope: ActionScope::TableAndDefault,
            annotations: Vec::new(),
        }
    }
}

/// A key component: the expression looked up, and how the control plane sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableKey {
    /// Evaluated at lookup time; its width is `field.width` (a bool key is `bit<1>` after a
    /// cast).
    pub expr: Expr,
    pub field: MatchField,
}

/// An action with its control-plane arguments (one per parameter, of its width).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionCall {
    pub action: ActionId,
    pub args: Vec<Bits>,
}

/// The action run on a miss.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultAction {
    pub call: ActionCall,
    /// `const default_action`: the control plane may not change it.
    pub is_const: bool,
}

/// An entry declared in the program (`entries` / `const entries`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// One pattern per key, in key order.
    pub keys: Vec<Pattern>,
    pub call: ActionCall,
    /// The final priority (already computed from `priority_delta` and source order where the
    /// program gave none); `None` for tables whose keys need no priority.
    pub priority: Option<u32>,
    /// `const` on the entry: it may not be modified or deleted.
    pub is_const: bool,
    pub annotations: Vec<Annotation>,
}

/// A match-action table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// Control-plane name (`MyIngress.ipv4_lpm`), `@id`, annotations.
    pub preamble: Preamble,
    pub keys: Vec<TableKey>,
    /// The `actions` list; it includes the default action (lowering adds an implicit
    /// `NoAction` as `@defaultonly` where the program has no `default_action`).
    pub actions: Vec<TableAction>,
    pub default_action: DefaultAction,
    pub entries: Vec<Entry>,
    /// `const entries`: the table is immutable (P4Info `is_const_table`).
    pub entries_const: bool,
    /// `size`, or the architecture's default (1024 for p4c).
    pub size: u64,
    /// `implementation`: an action profile or action selector instance.
    pub implementation: Option<ExternId>,
    /// `counters`: a direct counter instance.
    pub direct_counter: Option<ExternId>,
    /// `meters`: a direct meter instance.
    pub direct_meter: Option<ExternId>,
    /// `support_timeout = true` (P4Info `idle_timeout_behavior = NOTIFY_CONTROL`).
    pub support_timeout: bool,
    /// `largest_priority_wins` (default true).
    pub largest_priority_wins: bool,
    /// `priority_delta` (default 1).
    pub priority_delta: u32,
}

impl Table {
    /// A keyless table with p4c's defaults that runs `default_action` (with no arguments),
    /// which is also its only action.
    pub fn new(name: &str, default_action: ActionId) -> Table {
        Table {
            preamble: Preamble::new(name),
            keys: Vec::new(),
            actions: vec![TableAction::new(default_action)],
            default_action: DefaultAction {
                call: ActionCall {
                    action: default_action,
                    args: Vec::new(),
                },
                is_const: false,
            },
            entries: Vec::new(),
            entries_const: false,
            size: 1024,
            implementation: None,
            direct_counter: None,
            direct_meter: None,
            support_timeout: false,
            largest_priority_wins: true,
            priority_delta: 1,
        }
    }

    /// Whether entries need priorities: some key is ternary, range or optional.
    pub fn needs_priority(&self) -> bool {
        self.keys.iter().any(|k| k.field.kind.needs_priority())
    }

    /// The entry in `actions` for `action`.
    pub fn action_ref(&self, action: ActionId) -> Option<&TableAction> {
        self.actions.iter().find(|a| a.action == action)
    }

    /// The match kinds of the key components, in order.
    pub fn match_kinds(&self) -> impl Iterator<Item = &MatchKind> {
        self.keys.iter().map(|k| &k.field.kind)
    }
}
