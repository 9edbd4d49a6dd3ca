//! Verification of tables (keys, actions, default action, entries, implementation and direct
//! resources), value sets, digests, errors, and the uniqueness of control-plane names.

use super::layout::oor;
use super::typing::{TypeEnv, type_of};
use super::{ErrorKind, Verifier};
use crate::entity::EntityId;
use crate::externs::ExternKind;
use crate::ids::{ExternId, TableId};
use crate::matching::{MatchKind, Pattern};
use crate::table::{ActionCall, ActionScope, Table};
use crate::types::Ty;
use std::collections::HashSet;

type Check = Result<(), ErrorKind>;

/// Whether `p` may be written for a key of kind `kind` and `width` bits.
fn pattern_fits(kind: &MatchKind, p: &Pattern, width: u32) -> bool {
    match (kind, p) {
        (_, Pattern::Exact(_)) => true,
        (MatchKind::Exact, _) => false,
        (_, Pattern::Any) => true,
        (MatchKind::Ternary, Pattern::Mask { .. }) => true,
        (MatchKind::Lpm, Pattern::Prefix { len, .. }) => *len <= width,
        (MatchKind::Lpm, Pattern::Mask { mask, .. }) => mask.prefix_len().is_some(),
        (MatchKind::Range, Pattern::Range { .. }) => true,
        (MatchKind::Other(_), _) => true,
        _ => false,
    }
}

impl Verifier<'_> {
    pub(super) fn check_tables(&mut self) {
        for id in self.p.tables.keys() {
            self.check_table(id);
        }
    }

    fn check_table(&mut self, id: TableId) {
        let t = &self.p.tables[id];
        let loc = format!("table {}", t.preamble.name);
        let env = TypeEnv {
            pipeline: self.p,
            params: None,
        };
        for (i, k) in t.keys.iter().enumerate() {
            let r = type_of(&k.expr, &env).and_then(|ty| {
                if ty == Ty::Bits(k.field.width) {
                    Ok(())
                } else {
                    Err(ErrorKind::TypeMismatch {
                        expected: Ty::Bits(k.field.width),
                        found: ty,
                    })
                }
            });
            if let Err(e) = r {
                self.err(format!("{loc} key {i}"), e);
            }
        }
        for a in &t.actions {
            if !self.p.actions.contains(a.action) {
                self.err(&loc, oor("action", a.action.index()));
            }
        }
        let d = &t.default_action.call;
        if let Err(e) = self.check_call(t, d, ActionScope::TableOnly) {
            self.err(format!("{loc} default_action"), e);
        }
        for (i, e) in t.entries.iter().enumerate() {
            if let Err(k) = self.check_entry(t, e) {
                self.err(format!("{loc} entry {i}"), k);
            }
        }
        if let Err(e) = self.check_table_externs(t) {
            self.err(&loc, e);
        }
    }

    /// `call` names an action of the table usable outside `forbidden` scope, with arguments
    /// of its parameters' widths.
    fn check_call(&self, t: &Table, call: &ActionCall, forbidden: ActionScope) -> Check {
        let a = self
            .p
            .actions
            .get(call.action)
            .ok_or(oor("action", call.action.index()))?;
        let allowed = t
            .action_ref(call.action)
            .is_some_and(|r| r.scope != forbidden);
        if !allowed {
            return Err(ErrorKind::ActionNotAllowed {
                action: a.preamble.name.clone(),
            });
        }
        if a.params.len() != call.args.len() {
            return Err(ErrorKind::CountMismatch {
                expected: a.params.len(),
                found: call.args.len(),
            });
        }
        for (p, v) in a.params.iter().zip(&call.args) {
            if p.ty.width() != v.width() || matches!(p.ty, Ty::Varbit(_)) {
                return Err(ErrorKind::WidthMismatch {
                    expected: p.ty.width(),
                    found: v.width(),
                });
            }
        }
        Ok(())
    }

    fn check_entry(&self, t: &Table, e: &crate::table::Entry) -> Check {
        if e.keys.len() != t.keys.len() {
            return Err(ErrorKind::CountMismatch {
                expected: t.keys.len(),
                found: e.keys.len(),
            });
        }
        for (k, p) in t.keys.iter().zip(&e.keys) {
            let w = k.field.width;
            if let Some(&bad) = p.widths().iter().find(|&&pw| pw != w) {
                return Err(ErrorKind::WidthMismatch {
                    expected: w,
                    found: bad,
                });
            }
            if !pattern_fits(&k.field.kind, p, w) {
                return Err(ErrorKind::BadPattern {
                    kind: k.field.kind.to_string(),
                });
            }
        }
        if e.priority.is_some() != t.needs_priority() {
            return Err(ErrorKind::Priority {
                needed: t.needs_priority(),
            });
        }
        self.check_call(t, &e.call, ActionScope::DefaultOnly)
    }

    fn extern_kind(&self, id: ExternId) -> Result<&ExternKind, ErrorKind> {
        self.p
            .externs
            .get(id)
            .map(|e| &e.kind)
            .ok_or(oor("extern", id.index()))
    }

    fn check_table_externs(&self, t: &Table) -> Check {
        let selector = t.match_kinds().any(|k| *k == MatchKind::Selector);
        // Selector keys are inputs to the table's action selector, not lookup keys. A table
        // without an implementation may have some (p4c accepts it and leaves them out of the
        // P4Info): they feed nothing. With an action profile they would need a selector.
        if let Some(i) = t.implementation {
            match self.extern_kind(i)? {
                ExternKind::ActionSelector { .. } => {}
                ExternKind::ActionProfile { .. } if !selector => {}
                _ => {
                    return Err(ErrorKind::WrongExternKind {
                        expected: "action profile or selector",
                    });
                }
            }
        }
        if let Some(c) = t.direct_counter
            && !matches!(self.extern_kind(c)?, ExternKind::DirectCounter { .. })
        {
            return Err(ErrorKind::WrongExternKind {
                expected: "direct counter",
            });
        }
        if let Some(m) = t.direct_meter
            && !matches!(self.extern_kind(m)?, ExternKind::DirectMeter { .. })
        {
            return Err(ErrorKind::WrongExternKind {
                expected: "direct meter",
            });
        }
        Ok(())
    }

    /// Control-plane names unique per kind; error names unique; value sets and digests
    /// non-empty.
    pub(super) fn check_objects(&mut self) {
        let p = self.p;
        self.unique("table", p.tables.values().map(|t| &t.preamble.name));
        self.unique("action", p.actions.values().map(|a| &a.preamble.name));
        self.shared_names();
        self.unique("extern", p.externs.values().map(|e| &e.preamble.name));
        self.unique("value set", p.value_sets.values().map(|v| &v.preamble.name));
        self.unique("digest", p.digests.values().map(|d| &d.preamble.name));
        self.unique("error", p.errors.iter());
        for v in p.value_sets.values() {
            if v.fields.is_empty() {
                let loc = format!("value set {}", v.preamble.name);
                self.err(
                    loc,
                    ErrorKind::CountMismatch {
                        expected: 1,
                        found: 0,
                    },
                );
            }
        }
    }

    /// Actions sharing a control-plane name (specialisations of one source action) have the
    /// same parameters, and no table lists two of them.
    fn shared_names(&mut self) {
        let p = self.p;
        let mut first: std::collections::HashMap<&str, &crate::control::Action> =
            std::collections::HashMap::new();
        for a in p.actions.values() {
            let name = a.control_plane_name();
            let prev = *first.entry(name).or_insert(a);
            let params = |a: &crate::control::Action| {
                a.params
                    .iter()
                    .map(|x| (x.name.clone(), x.ty.width()))
                    .collect::<Vec<_>>()
            };
            if params(prev) != params(a) {
                self.err(
                    format!("action {}", a.preamble.name),
                    ErrorKind::SharedName {
                        name: name.to_string(),
                        why: "their parameters differ",
                    },
                );
            }
        }
        for t in p.tables.values() {
            let mut seen = HashSet::new();
            for r in &t.actions {
                let Some(a) = p.actions.get(r.action) else {
                    continue;
                };
                if !seen.insert(a.control_plane_name()) {
                    self.err(
                        format!("table {}", t.preamble.name),
                        ErrorKind::SharedName {
                            name: a.control_plane_name().to_string(),
                            why: "a table lists two of them",
                        },
                    );
                }
            }
        }
    }

    fn unique<'n>(&mut self, what: &str, names: impl Iterator<Item = &'n String>) {
        let mut seen = HashSet::new();
        for n in names {
            if !seen.insert(n) {
                self.err(
                    what.to_string(),
                    ErrorKind::DuplicateName { name: n.clone() },
                );
            }
        }
    }
}
