//! Table entries: keysets against the table's keys and match kinds, entry actions against the
//! action list, duplicate exact-match keys, LPM masks, and entry priorities.

use crate::checker::Checker;
use crate::table::{Listed, TableState};
use crate::types::TypeId;
use crate::value::Value;
use koi_syntax::Span;
use koi_syntax::ast::{Entry, Expr, ExprKind, Ident};

impl Checker<'_> {
    pub(crate) fn check_entries(
        &mut self,
        table: &Ident,
        span: Span,
        entries: &[Entry],
        st: &mut TableState,
    ) {
        for e in entries {
            self.check_annotations(&e.annotations);
        }
        // p4c resolves every name of the program before it type-checks any: an entry whose
        // action is not declared is reported before any keyset of the list is checked.
        let resolved: Vec<bool> = entries
            .iter()
            .map(|e| self.entry_action_resolves(&e.action))
            .collect();
        if !st.key_seen && st.has_key {
            self.error(
                span,
                format!("Entries list must be after table key {}", table.name),
            );
            return;
        }
        if (!st.has_key || st.key_types.is_empty()) && !entries.is_empty() {
            self.error(
                table.span,
                format!(
                    "Entries cannot be specified for a table with no key {}",
                    table.name
                ),
            );
            return;
        }
        let needs_priority = st
            .info
            .match_kinds
            .iter()
            .any(|m| m != "exact" && m != "lpm");
        let any_priority = entries.iter().any(|e| e.priority.is_some());
        let with_priority = entries.iter().find(|e| e.priority.is_some());
        if st.info.const_entries
            && let Some(e) = with_priority
        {
            // p4c's EntryPriorities: priorities of `const entries` are implied by their order.
            self.error(
                e.span,
                "Entry: Table with 'const' entries cannot have priorities",
            );
        } else if any_priority && !needs_priority {
            self.error(
                st.key_span,
                "Key match type does not require priorities, but some are specified",
            );
        }
        if any_priority
            && needs_priority
            && !st.info.const_entries
            && let Some(first) = entries.first().filter(|e| e.priority.is_none())
        {
            self.error(first.span, "Entry entry must have a priority");
        }
        if st.key_types.is_empty() {
            return;
        }
        let empty = Vec::new();
        let listed = st.listed.as_ref().unwrap_or(&empty);
        let mut prios = Vec::new();
        for (e, resolved) in entries.iter().zip(resolved) {
            prios.push(self.check_entry(e, st, listed, resolved));
        }
        st.priorities = prios;
        if st.info.match_kinds.iter().all(|m| m == "exact") {
            self.check_duplicate_entries(entries);
        }
    }

    /// Entries of an exact-match table must have distinct keys.
    fn check_duplicate_entries(&mut self, entries: &[Entry]) {
        let mut seen: Vec<Value> = Vec::new();
        for e in entries {
            let Some(v) = self.keyset_value(&e.keyset) else {
                continue;
            };
            if seen.contains(&v) {
                self.error(e.keyset.span, "Duplicate entry keys");
            } else {
                seen.push(v);
            }
        }
    }

    fn keyset_value(&mut self, ks: &Expr) -> Option<Value> {
        match &ks.kind {
            ExprKind::List { items, .. } => items
                .iter()
                .map(|i| {
                    self.converted_const(i)
                        .map(|v| v.as_int().map(|x| Value::Int(x.clone())).unwrap_or(v))
                })
                .collect::<Option<Vec<_>>>()
                .map(Value::Tuple),
            _ => self.converted_const(ks).map(|v| Value::Tuple(vec![v])),
        }
    }

    fn check_entry(
        &mut self,
        e: &Entry,
        st: &TableState,
        listed: &[Listed],
        action_resolved: bool,
    ) -> Option<num_bigint::BigInt> {
        let mut prio = None;
        if let Some(p) = &e.priority {
            let t = self.check_expr(p);
            prio = self.const_of(p).and_then(|v| v.as_int()).cloned();
            if !self.is_err(t) && self.const_of(p).and_then(|v| v.as_u64()).is_none() {
                self.error(
                    p.span,
                    "entry priority must be a non-negative compile-time constant",
                );
            }
        }
        let items: Vec<&Expr> = match &e.keyset.kind {
            ExprKind::List { items, .. } => items.iter().collect(),
            _ => vec![&e.keyset],
        };
        let n = match &e.keyset.kind {
            ExprKind::Default | ExprKind::DontCare => st.key_types.len(),
            _ => items.len(),
        };
        let keys: Vec<(&Expr, TypeId, &str)> = items
            .iter()
            .zip(&st.key_types)
            .zip(&st.info.match_kinds)
            .map(|((i, t), m)| (*i, *t, m.as_str()))
            .collect();
        if n != st.key_types.len() {
            self.error(
                e.keyset.span,
                "Size of entry keyset must match the table key set size",
            );
        } else if !matches!(e.keyset.kind, ExprKind::Default | ExprKind::DontCare) {
            for (k, t, m) in keys {
                self.check_entry_key(k, t, m);
            }
        }
        if action_resolved
            && let Some(d) = self.check_action_invocation(&e.action, listed, "entry")
            && listed.iter().any(|l| l.decl == d && l.default_only)
        {
            {
                self.error(
                    e.span,
                    "Entry: Action marked with defaultonly used in table",
                );
            }
        }
        prio
    }

    /// Whether the action an entry invokes names a declaration, reporting it when it does not
    /// (anything but a plain or dot-prefixed name is left to the entry's own check).
    fn entry_action_resolves(&mut self, action: &Expr) -> bool {
        let callee = match &action.kind {
            ExprKind::Call { callee, .. } => callee.as_ref(),
            _ => action,
        };
        let ExprKind::Path(p) = &callee.kind else {
            return true;
        };
        if !self.lookup_path(p).is_empty() {
            return true;
        }
        self.report_not_found(&p.name.name, p.span);
        false
    }

    fn check_entry_key(&mut self, k: &Expr, t: TypeId, match_kind: &str) {
        self.check_keyset_elem(k, t);
        let bad = matches!(
            (&k.kind, match_kind),
            (
                ExprKind::Mask(..) | ExprKind::Range(..),
                "exact" | "optional"
            ) | (ExprKind::Mask(..), "range")
        );
        if bad {
            self.error(
                k.span,
                format!("invalid key expression for a {match_kind} key"),
            );
            return;
        }
        if let (ExprKind::Mask(_, m), "lpm") = (&k.kind, match_kind) {
            self.check_lpm_mask(m, t);
        }
    }

    fn check_lpm_mask(&mut self, m: &Expr, t: TypeId) {
        let (Some(v), Some((_, w))) = (
            self.converted_const(m).and_then(|v| v.as_int().cloned()),
            self.out.types.fixed(t),
        ) else {
            return;
        };
        let full = (num_bigint::BigInt::from(1) << (w as usize)) - 1;
        let inv = &full ^ &v;
        let is_prefix = (&inv & (&inv + 1u32)) == num_bigint::BigInt::from(0);
        if !is_prefix {
            // A back-end rule in p4c (it checks masks when it serializes the entries), so it
            // follows every front-end error of the program.
            self.late_error(m.span, format!("{v}: invalid mask for LPM key"));
        }
    }

    /// Priorities of entries without an explicit one follow from the previous entry's and
    /// `priority_delta`; they must stay non-negative.
    pub(crate) fn check_priorities(&mut self, table: &Ident, st: &TableState) {
        if st.priorities.iter().all(Option::is_none) {
            return;
        }
        let mut cur: Option<num_bigint::BigInt> = None;
        for p in &st.priorities {
            let next = match (p, &cur) {
                (Some(v), _) => v.clone(),
                (None, Some(c)) if st.largest_priority_wins => c - &st.priority_delta,
                (None, Some(c)) => c + &st.priority_delta,
                (None, None) => continue,
            };
            if next < 0.into() || next >= (num_bigint::BigInt::from(1) << 32usize) {
                self.error(
                    table.span,
                    format!("{} Overflow in priority computation", table.name),
                );
                return;
            }
            cur = Some(next);
        }
    }
}
