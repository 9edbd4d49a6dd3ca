//! Tables and actions.
//!
//! A table lists its key elements as match fields (in key order, `selector` ones left out),
//! its `actions` as action refs (with the scope and the annotations of the list entry), its
//! default action (`initial_default_action` always, `const_default_action_id` when const),
//! `size`, implementation (action profile or selector), direct counter then direct meter, idle
//! timeout, and whether it has (const) entries. Actions list their directionless parameters.

use koi_ir::control::Action;
use koi_ir::ids::ActionId;
use koi_ir::matching::{MatchField, MatchKind};
use koi_ir::table::{ActionScope, Table};
use koi_proto::ids::Prefix;
use koi_proto::p4info::{
    self, ActionRef, action, action_ref, match_field, table, table_action_call,
};

use crate::error::Problem;
use crate::symbols::extern_prefix;
use crate::{Gen, annotations, fields, hidden};

/// p4c's table size when the program gives none (or 0).
pub(crate) const DEFAULT_TABLE_SIZE: i64 = 1024;

/// P4Info's encoding of a match kind; `None` for `selector` (not a lookup key).
pub(crate) fn match_kind(kind: &MatchKind) -> Option<match_field::Match> {
    use match_field::MatchType as T;
    let t = match kind {
        MatchKind::Exact => T::Exact,
        MatchKind::Ternary => T::Ternary,
        MatchKind::Lpm => T::Lpm,
        MatchKind::Range => T::Range,
        MatchKind::Optional => T::Optional,
        MatchKind::Selector => return None,
        MatchKind::Other(name) => return Some(match_field::Match::OtherMatchType(name.clone())),
    };
    Some(match_field::Match::MatchType(t as i32))
}

impl<'p> Gen<'p> {
    /// P4Info match fields of `keys`: ids over all of them, `selector` ones left out. Value
    /// set fields (`typed` false) get no `type_name` and add nothing to `type_info`, as in
    /// p4c; `skip_annotations` are not copied.
    pub(crate) fn match_fields<'a>(
        &mut self,
        owner: &str,
        keys: impl Iterator<Item = &'a MatchField> + Clone,
        typed: bool,
        skip_annotations: &[&str],
    ) -> Vec<p4info::MatchField> {
        let named: Vec<(&str, Option<u32>)> =
            keys.clone().map(|k| (k.name.as_str(), k.id)).collect();
        let ids = fields::field_ids(owner, &named, &mut self.problems);
        let mut out = Vec::new();
        for (k, id) in keys.zip(ids) {
            let Some(m) = match_kind(&k.kind) else {
                continue;
            };
            let type_name = if typed { k.type_name.as_deref() } else { None };
            let c = self.types.constrained(k.width, type_name, owner);
            let anns = annotations::convert(&k.annotations, skip_annotations);
            out.push(p4info::MatchField {
                id,
                name: k.name.clone(),
                annotations: anns.annotations,
                structured_annotations: anns.structured,
                bitwidth: c.bitwidth,
                doc: annotations::doc(&k.annotations),
                type_name: c.type_name,
                r#match: Some(m),
                ..Default::default()
            });
        }
        out
    }

    /// The tables P4Info lists (all but `@hidden` ones).
    pub(crate) fn tables(&mut self) -> Vec<p4info::Table> {
        let p = self.p;
        p.tables
            .values()
            .filter(|t| !hidden(&t.preamble.annotations))
            .map(|t| self.table(t))
            .collect()
    }

    fn action_id(&mut self, owner: &str, id: ActionId) -> Option<(u32, &'p Action)> {
        let p = self.p;
        match p.actions.get(id) {
            Some(a) => Some((self.symbols.id(Prefix::Action, a.control_plane_name()), a)),
            None => {
                self.problems.push(Problem::Dangling {
                    owner: owner.to_string(),
                    what: "action",
                    detail: format!("{id}"),
                });
                None
            }
        }
    }

    fn extern_id(&mut self, owner: &str, id: koi_ir::ids::ExternId) -> Option<u32> {
        let p = self.p;
        let found = p.externs.get(id).and_then(|e| {
            extern_prefix(&e.kind).map(|prefix| self.symbols.id(prefix, &e.preamble.name))
        });
        if found.is_none() {
            self.problems.push(Problem::Dangling {
                owner: owner.to_string(),
                what: "action profile, direct counter or direct meter",
                detail: format!("{id}"),
            });
        }
        found
    }

    fn table(&mut self, t: &Table) -> p4info::Table {
        let owner = format!("table {}", t.preamble.name);
        let match_fields = self.match_fields(&owner, t.keys.iter().map(|k| &k.field), true, &[]);
        let mut action_refs = Vec::new();
        for r in &t.actions {
            let Some((id, _)) = self.action_id(&owner, r.action) else {
                continue;
            };
            let anns = annotations::convert(&r.annotations, &[]);
            let scope = match r.scope {
                ActionScope::TableAndDefault => action_ref::Scope::TableAndDefault,
                ActionScope::TableOnly => action_ref::Scope::TableOnly,
                ActionScope::DefaultOnly => action_ref::Scope::DefaultOnly,
            };
            action_refs.push(ActionRef {
                id,
                scope: scope as i32,
                annotations: anns.annotations,
                structured_annotations: anns.structured,
                ..Default::default()
            });
        }
        let call = &t.default_action.call;
        let mut initial = None;
        if let Some((action_id, action)) = self.action_id(&owner, call.action) {
            let widths = self.param_widths(action);
            let ids = param_ids(action);
            let arguments = call
                .args
                .iter()
                .zip(ids.iter().zip(widths))
                .map(|(v, (&param_id, w))| {
                    let w = if w > 0 { w } else { v.width() };
                    table_action_call::Argument {
                        param_id,
                        value: v.resize(w).to_be_bytes(),
                    }
                })
                .collect();
            initial = Some(p4info::TableActionCall {
                action_id,
                arguments,
            });
        }
        let const_default_action_id = match (&initial, t.default_action.is_const) {
            (Some(c), true) => c.action_id,
            _ => 0,
        };
        let implementation_id = match t.implementation {
            Some(i) => self.extern_id(&owner, i).unwrap_or(0),
            None => 0,
        };
        let direct_resource_ids = [t.direct_counter, t.direct_meter]
            .into_iter()
            .flatten()
            .filter_map(|e| self.extern_id(&owner, e))
            .collect();
        let size = match i64::try_from(t.size) {
            Ok(0) | Err(_) => DEFAULT_TABLE_SIZE,
            Ok(s) => s,
        };
        let idle = if t.support_timeout {
            table::IdleTimeoutBehavior::NotifyControl
        } else {
            table::IdleTimeoutBehavior::NoTimeout
        };
        p4info::Table {
            preamble: Some(self.preamble(Prefix::Table, &t.preamble, &[])),
            match_fields,
            action_refs,
            const_default_action_id,
            initial_default_action: initial,
            implementation_id,
            direct_resource_ids,
            size,
            idle_timeout_behavior: idle as i32,
            is_const_table: t.entries_const,
            has_initial_entries: t.entries_const || !t.entries.is_empty(),
            other_properties: None,
        }
    }

    /// The P4Info widths of an action's parameters (0 when P4Info gives none).
    fn param_widths(&mut self, a: &Action) -> Vec<u32> {
        let owner = format!("action {}", a.preamble.name);
        a.params
            .iter()
            .map(|p| {
                let c = self
                    .types
                    .constrained(p.ty.width(), p.type_name.as_deref(), &owner);
                u32::try_from(c.bitwidth).unwrap_or(0)
            })
            .collect()
    }

    /// The actions P4Info lists (see `usage.rs`; `@hidden` ones left out), with their
    /// control-plane parameters.
    pub(crate) fn actions(&mut self) -> Vec<p4info::Action> {
        let p = self.p;
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for a in p.actions.values() {
            // p4c serializes an action once per control-plane name (the specialisations of
            // an action whose directional parameters tables bind differently share it).
            let name = a.control_plane_name();
            if !seen.insert(name) {
                continue;
            }
            if self.uses.listed_name(name) && !hidden(&a.preamble.annotations) {
                let with_params = self.uses.in_table_name(name);
                out.push(self.action(a, with_params));
            }
        }
        out
    }

    /// An action; its parameters are listed when a table uses it (`with_params`).
    fn action(&mut self, a: &Action, with_params: bool) -> p4info::Action {
        let owner = format!("action {}", a.control_plane_name());
        let cp_params = if with_params { &a.params[..] } else { &[] };
        let named: Vec<(&str, Option<u32>)> =
            cp_params.iter().map(|p| (p.name.as_str(), p.id)).collect();
        let ids = fields::field_ids(&owner, &named, &mut self.problems);
        let params = cp_params
            .iter()
            .zip(ids)
            .map(|(p, id)| {
                let c = self
                    .types
                    .constrained(p.ty.width(), p.type_name.as_deref(), &owner);
                let anns = annotations::convert(&p.annotations, &[]);
                action::Param {
                    id,
                    name: p.name.clone(),
                    annotations: anns.annotations,
                    structured_annotations: anns.structured,
                    bitwidth: c.bitwidth,
                    doc: annotations::doc(&p.annotations),
                    type_name: c.type_name,
                    ..Default::default()
                }
            })
            .collect();
        p4info::Action {
            preamble: Some(self.preamble(Prefix::Action, &cp_preamble(a), &[])),
            params,
        }
    }
}

/// An action's preamble under its control-plane name.
fn cp_preamble(a: &Action) -> koi_ir::types::Preamble {
    koi_ir::types::Preamble {
        name: a.control_plane_name().to_string(),
        ..a.preamble.clone()
    }
}

/// An action's parameter ids (problems are reported where the action itself is listed).
fn param_ids(a: &Action) -> Vec<u32> {
    let named: Vec<(&str, Option<u32>)> =
        a.params.iter().map(|p| (p.name.as_str(), p.id)).collect();
    fields::field_ids("", &named, &mut Vec::new())
}
