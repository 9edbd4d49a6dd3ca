//! Which actions P4Info lists, and with which parameters.
//!
//! p4c's P4Info holds the actions left after its frontend: it removes the actions nothing
//! uses, inlines action calls made from other actions, and turns the parameters of actions
//! called directly (`a(1);` in an apply block) into locals. So an action is listed when a
//! table refers to it (its `actions`, default action or entries) or a control calls it
//! ([`Stmt::CallAction`] in a control body), and its parameters are listed only when a table
//! refers to it: an action only called directly has no control-plane parameters
//! (`issue323.p4`: `my_a(bit<32> v)` called as `my_a(0)` is listed without `v`). An action
//! only called from other actions (`xor_test.p4`'s `srcAddr`) or never used (an unused
//! `NoAction`) is not listed, and is not a symbol either.
//!
//! Specialisations of one action (its directional parameters bound differently in several
//! tables) share a control-plane name ([`koi_ir::control::Action::control_plane_name`]):
//! P4Info lists that name once, if any of them is listed, with parameters if any of them is
//! in a table ([`ActionUse::listed_name`], [`ActionUse::in_table_name`]).

use std::collections::HashSet;

use koi_ir::control::Body;
use koi_ir::ids::ActionId;
use koi_ir::pipeline::Pipeline;
use koi_ir::stmt::Stmt;

/// The actions a body calls.
fn calls(body: &Body) -> impl Iterator<Item = ActionId> + '_ {
    body.blocks
        .values()
        .flat_map(|b| &b.stmts)
        .filter_map(|s| match s {
            Stmt::CallAction { action, .. } => Some(*action),
            _ => None,
        })
}

/// How the pipeline uses its actions.
#[derive(Clone, Debug, Default)]
pub(crate) struct ActionUse {
    in_table: HashSet<ActionId>,
    listed: HashSet<ActionId>,
    runs: HashSet<ActionId>,
    in_table_names: HashSet<String>,
    listed_names: HashSet<String>,
}

impl ActionUse {
    pub fn new(p: &Pipeline) -> ActionUse {
        let mut u = ActionUse::default();
        for t in p.tables.values() {
            let refs = t.actions.iter().map(|r| r.action);
            let entries = t.entries.iter().map(|e| e.call.action);
            u.in_table
                .extend(refs.chain(entries).chain([t.default_action.call.action]));
        }
        u.listed.extend(u.in_table.iter().copied());
        for c in p.controls.values() {
            u.listed.extend(calls(&c.body));
        }
        for (id, a) in p.actions.iter() {
            let name = a.control_plane_name();
            if u.listed.contains(&id) {
                u.listed_names.insert(name.to_string());
            }
            if u.in_table.contains(&id) {
                u.in_table_names.insert(name.to_string());
            }
        }
        // Everything a listed action runs, through calls from actions.
        let mut todo: Vec<ActionId> = u.listed.iter().copied().collect();
        while let Some(a) = todo.pop() {
            if !u.runs.insert(a) {
                continue;
            }
            if let Some(action) = p.actions.get(a) {
                todo.extend(calls(&action.body));
            }
        }
        u
    }

    /// Whether the action's parameters are control-plane parameters (a table uses it).
    pub fn in_table(&self, a: ActionId) -> bool {
        self.in_table.contains(&a)
    }

    /// Whether P4Info lists the control-plane name (one of its actions is listed).
    pub fn listed_name(&self, name: &str) -> bool {
        self.listed_names.contains(name)
    }

    /// Whether the control-plane name has control-plane parameters (a table uses one of its
    /// actions).
    pub fn in_table_name(&self, name: &str) -> bool {
        self.in_table_names.contains(name)
    }

    /// Whether the action's body runs as part of a listed action (itself or called by one).
    pub fn runs(&self, a: ActionId) -> bool {
        self.runs.contains(&a)
    }
}
