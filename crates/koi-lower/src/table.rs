//! Tables: keys (with p4c's key names and match kinds), the action list with scopes, the
//! default action (p4c's implicit `NoAction`), entries with p4c's priorities, size,
//! implementation, direct resources and idle timeout.

use crate::ctx::{Bind, Lowerer, R, internal, unsupported};
use crate::names;
use koi_ir::{
    ActionCall, ActionId, ActionScope, Annotation, Cast, DefaultAction, Entry, ExternId,
    MatchField, MatchKind, Pattern, Table, TableAction, TableId, TableKey, Ty as IrTy,
};
use koi_sema::{CallTarget, DeclId, Resolution, TableInfo};
use koi_syntax::Span;
use koi_syntax::ast::{self, ExprKind, TablePropertyKind as P};

/// An entry before priorities are assigned.
struct RawEntry {
    entry: Entry,
    /// `priority = N:` in the entry.
    priority: Option<u64>,
    /// `@priority(N)` on the entry (BMv2's convention: a smaller number wins).
    annotated: Option<u64>,
}

impl Lowerer<'_> {
    /// The table declared by `decl` in the current block instance, lowered on first use.
    pub fn table_id(&mut self, decl: DeclId, span: Span) -> R<TableId> {
        let key = (self.path.clone(), decl);
        if let Some(t) = self.tables.get(&key) {
            return Ok(*t);
        }
        let Some(d) = self.idx.decls.get(&decl).copied() else {
            return internal(span, "table declaration not found");
        };
        let ast::DeclKind::Table { name, properties } = &d.kind else {
            return internal(span, "not a table");
        };
        let Some(info) = self.ck.tables.get(&decl).cloned() else {
            return internal(span, "table was not checked");
        };
        let cp = names::cp_name(&self.path, &d.annotations, &name.name);
        let t = self.table(cp, &d.annotations, properties, &info, d.span)?;
        let acts = t.1;
        let okey = self.order_key(&self.path, self.decl(decl)?.span.lo, self.table_keys.len());
        self.table_keys.push(okey);
        let id = self.p.tables.push(t.0);
        self.table_actions.insert(id, acts);
        self.tables.insert(key, id);
        Ok(id)
    }

    fn table(
        &mut self,
        cp: String,
        anns: &[ast::Annotation],
        props: &[ast::TableProperty],
        info: &TableInfo,
        span: Span,
    ) -> R<(Table, Vec<(DeclId, ActionId)>)> {
        let placeholder = <ActionId as koi_ir::entity::EntityId>::new(0);
        let mut t = Table::new(&cp, placeholder);
        t.preamble = names::preamble(cp, anns);
        t.actions.clear();
        t.size = info.size.unwrap_or(1024);
        let mut acts = Vec::new();
        for p in props {
            match &p.kind {
                P::Key(elems) => {
                    for k in elems {
                        let key = self.key(k, info, t.keys.len())?;
                        t.keys.push(key);
                    }
                }
                P::Actions(refs) => {
                    for (r, d) in refs.iter().zip(&info.actions) {
                        let a = self.action_ref(r, *d, &t.preamble.name)?;
                        acts.push((*d, a.action));
                        t.actions.push(a);
                    }
                }
                _ => {}
            }
        }
        self.default_action(&mut t, props, info, &mut acts, span)?;
        for p in props {
            self.table_property(&mut t, p, &acts)?;
        }
        Ok((t, acts))
    }

    /// `NoAction` from core.p4.
    fn no_action(&mut self, span: Span) -> R<ActionId> {
        let Some(d) = self.ck.top_level_named("NoAction") else {
            return unsupported(span, "tables in a program without core.p4's NoAction");
        };
        self.ref_pos = span.hi;
        self.action_in(d, &[], None, span)
    }

    fn key(&mut self, k: &ast::KeyElement, info: &TableInfo, i: usize) -> R<TableKey> {
        let (e, sty) = self.rvalue_s(&k.expr)?;
        let expr = match sty.ty {
            IrTy::Bool => e.cast(Cast::FromBool),
            _ => e,
        };
        let kind_name = info
            .match_kinds
            .get(i)
            .cloned()
            .unwrap_or_else(|| k.match_kind.name.clone());
        let kind = match kind_name.as_str() {
            "exact" => MatchKind::Exact,
            "ternary" => MatchKind::Ternary,
            "lpm" => MatchKind::Lpm,
            "range" => MatchKind::Range,
            "optional" => MatchKind::Optional,
            "selector" => MatchKind::Selector,
            other => MatchKind::Other(other.to_string()),
        };
        let name = names::name_annotation(&k.annotations)
            .or_else(|| self.key_name(&k.expr))
            .unwrap_or_else(|| format!("key{i}"));
        let ty = self.ty_of(&k.expr)?;
        let mut field = MatchField::new(&name, sty.width(), kind);
        field.type_name = self.type_name(ty, k.span)?;
        field.id = names::int_annotation(&k.annotations, "id").map(|v| v as u32);
        field.annotations = names::annotations(&k.annotations);
        Ok(TableKey { expr, field })
    }

    fn action_ref(&mut self, r: &ast::ActionRef, d: DeclId, table: &str) -> R<TableAction> {
        let mut bound = Vec::new();
        if let Some(args) = &r.args {
            let params = self.decl(d)?.params.clone();
            for (p, a) in params.iter().zip(args) {
                let dir = self.decl(*p)?.param().and_then(|pi| pi.dir);
                if dir.is_some() {
                    bound.push(self.lvalue(&a.value)?);
                }
            }
        }
        let table = table.to_string();
        self.ref_pos = r.span.lo;
        let action = self.action_in(d, &bound, Some(&table), r.span)?;
        let has = |n: &str| r.annotations.iter().any(|a| a.name.name == n);
        let scope = if has("defaultonly") {
            ActionScope::DefaultOnly
        } else if has("tableonly") {
            ActionScope::TableOnly
        } else {
            ActionScope::TableAndDefault
        };
        Ok(TableAction {
            action,
            scope,
            annotations: names::annotations(&r.annotations),
        })
    }

    fn default_action(
        &mut self,
        t: &mut Table,
        props: &[ast::TableProperty],
        info: &TableInfo,
        acts: &mut Vec<(DeclId, ActionId)>,
        span: Span,
    ) -> R<()> {
        let prop = props.iter().find_map(|p| match &p.kind {
            P::Other { name, value, .. } if name.name == "default_action" => Some(value),
            _ => None,
        });
        if let (Some(value), Some(d)) = (prop, info.default_action) {
            let call = self.action_call(value, d, acts)?;
            t.default_action = DefaultAction {
                call,
                is_const: info.const_default_action,
            };
            return Ok(());
        }
        let no_action = self.no_action(span)?;
        if !t.actions.iter().any(|a| a.action == no_action) {
            t.actions.push(TableAction {
                action: no_action,
                scope: ActionScope::DefaultOnly,
                annotations: vec![Annotation::flag("defaultonly")],
            });
            if let Some(d) = self.ck.top_level_named("NoAction") {
                acts.push((d, no_action));
            }
        }
        t.default_action = DefaultAction {
            call: ActionCall {
                action: no_action,
                args: vec![],
            },
            is_const: false,
        };
        Ok(())
    }

    /// An action invocation with constant control-plane arguments (default action, entry).
    fn action_call(
        &mut self,
        value: &ast::Expr,
        d: DeclId,
        acts: &[(DeclId, ActionId)],
    ) -> R<ActionCall> {
        let Some((_, action)) = acts.iter().find(|(x, _)| *x == d) else {
            return internal(value.span, "action not in the table's list");
        };
        let action = *action;
        let args: &[ast::Argument] = match &value.kind {
            ExprKind::Call { args, .. } => args,
            _ => &[],
        };
        let params = self.decl(d)?.params.clone();
        let widths: Vec<u32> = self.p.actions[action]
            .params
            .iter()
            .map(|p| p.ty.width())
            .collect();
        let mut out = Vec::new();
        let mut k = 0;
        for (i, p) in params.iter().enumerate() {
            let dir = self.decl(*p)?.param().and_then(|pi| pi.dir);
            if dir.is_some() {
                continue;
            }
            let Some(a) = args.get(i) else {
                return unsupported(value.span, "an action call with missing arguments");
            };
            let w = widths.get(k).copied().unwrap_or(0);
            out.push(self.const_bits(&a.value, w)?);
            k += 1;
        }
        Ok(ActionCall { action, args: out })
    }

    fn table_property(
        &mut self,
        t: &mut Table,
        p: &ast::TableProperty,
        acts: &[(DeclId, ActionId)],
    ) -> R<()> {
        match &p.kind {
            P::Entries { is_const, entries } => self.entries(t, *is_const, entries, acts),
            P::Other { name, value, .. } => match name.name.as_str() {
                "psa_idle_timeout" => {
                    t.support_timeout = matches!(
                        self.const_value(value),
                        Some(koi_sema::Value::Enum { member, .. }) if member == "NOTIFY_CONTROL"
                    );
                    Ok(())
                }
                // eBPF's table implementations (`hash_table(64)`) say how a map stores the
                // table: nothing to koi.
                "implementation"
                    if matches!(
                        self.p.arch,
                        koi_ir::Architecture::Ebpf | koi_ir::Architecture::Xdp
                    ) =>
                {
                    Ok(())
                }
                "implementation" | "psa_implementation" => {
                    t.implementation = Some(self.table_extern(value, &p.annotations, t, "")?);
                    Ok(())
                }
                "counters" | "psa_direct_counter" => {
                    let value = direct_resource(value)?;
                    t.direct_counter = Some(self.table_extern(value, &p.annotations, t, "")?);
                    Ok(())
                }
                "meters" | "psa_direct_meter" => {
                    let value = direct_resource(value)?;
                    t.direct_meter = Some(self.table_extern(value, &p.annotations, t, "")?);
                    Ok(())
                }
                "support_timeout" => {
                    t.support_timeout = self
                        .const_value(value)
                        .and_then(|v| v.as_bool())
                        .unwrap_or(false);
                    Ok(())
                }
                "largest_priority_wins" => {
                    t.largest_priority_wins = self
                        .const_value(value)
                        .and_then(|v| v.as_bool())
                        .unwrap_or(true);
                    Ok(())
                }
                "priority_delta" => {
                    t.priority_delta = self.const_u64(value)? as u32;
                    Ok(())
                }
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// The extern named or constructed in a table property.
    fn table_extern(
        &mut self,
        value: &ast::Expr,
        anns: &[ast::Annotation],
        t: &Table,
        _kind: &str,
    ) -> R<ExternId> {
        if let Some(Bind::Extern(id)) = self.instance_of(value)? {
            return Ok(id);
        }
        if let ExprKind::Call { args, .. } = &value.kind
            && let Some(info) = self.ck.calls.get(&value.id).cloned()
            && matches!(info.target, CallTarget::Constructor { .. })
        {
            let name = names::name_annotation(anns)
                .map(|n| n.trim_start_matches('.').to_string())
                .unwrap_or_else(|| format!("{}_implementation", t.preamble.name));
            let ext = self.make_extern(name, anns, &info, args, value.span)?;
            return Ok(self.p.externs.push(ext));
        }
        unsupported(value.span, "this table property value")
    }

    fn entries(
        &mut self,
        t: &mut Table,
        is_const: bool,
        entries: &[ast::Entry],
        acts: &[(DeclId, ActionId)],
    ) -> R<()> {
        t.entries_const = is_const;
        let mut raw = Vec::new();
        for e in entries {
            raw.push(self.entry(t, e, is_const, acts)?);
        }
        let needs = t.needs_priority();
        let prios = priorities(&raw, t.largest_priority_wins, t.priority_delta, needs);
        for (mut r, p) in raw.into_iter().zip(prios) {
            r.entry.priority = p;
            t.entries.push(r.entry);
        }
        Ok(())
    }

    fn entry(
        &mut self,
        t: &Table,
        e: &ast::Entry,
        is_const: bool,
        acts: &[(DeclId, ActionId)],
    ) -> R<RawEntry> {
        let items: Vec<&ast::Expr> = match &e.keyset.kind {
            ExprKind::List { items, .. } => items.iter().collect(),
            _ => vec![&e.keyset],
        };
        let whole_any = matches!(e.keyset.kind, ExprKind::Default | ExprKind::DontCare);
        let mut keys = Vec::new();
        for (i, k) in t.keys.iter().enumerate() {
            if whole_any {
                keys.push(Pattern::Any);
                continue;
            }
            let Some(item) = items.get(i) else {
                return internal(e.span, "entry keyset too short");
            };
            keys.push(self.pattern(item, &k.field.kind, k.field.width)?);
        }
        let callee = match &e.action.kind {
            ExprKind::Call { callee, .. } => callee,
            _ => &e.action,
        };
        let Some(Resolution::Decl(d)) = self.ck.resolutions.get(&callee.id) else {
            return internal(e.span, "entry action not resolved");
        };
        let call = self.action_call(&e.action, *d, acts)?;
        let priority = match &e.priority {
            Some(p) => Some(self.const_u64(p)?),
            None => None,
        };
        let annotated = names::int_annotation(&e.annotations, "priority");
        let annotations = e
            .annotations
            .iter()
            .filter(|a| a.name.name != "priority")
            .map(names::annotation)
            .collect();
        Ok(RawEntry {
            entry: Entry {
                keys,
                call,
                priority: None,
                is_const: is_const || e.is_const,
                annotations,
            },
            priority,
            annotated,
        })
    }

    /// The pattern of one keyset element for a key of `kind` and `width`.
    pub fn pattern(&mut self, item: &ast::Expr, kind: &MatchKind, width: u32) -> R<Pattern> {
        Ok(match &item.kind {
            ExprKind::Default | ExprKind::DontCare => Pattern::Any,
            ExprKind::Mask(v, m) => {
                let value = self.const_bits(v, width)?;
                let mask = self.const_bits(m, width)?;
                match (kind, mask.prefix_len()) {
                    (MatchKind::Lpm, Some(len)) => Pattern::Prefix {
                        value: value.and(&mask),
                        len,
                    },
                    _ => Pattern::Mask { value, mask },
                }
            }
            ExprKind::Range(lo, hi) => Pattern::Range {
                lo: self.const_bits(lo, width)?,
                hi: self.const_bits(hi, width)?,
            },
            _ => Pattern::Exact(self.const_bits(item, width)?),
        })
    }
}

/// p4c's entry priorities (frontends/p4/entryPriorities.cpp): without any explicit priority,
/// entries get `1, 1 + delta, ...` from the last entry up (largest wins) or from the first;
/// otherwise an entry without one continues from the previous entry's, by `-delta` (largest
/// wins) or `+delta`.
fn priorities(raw: &[RawEntry], largest_wins: bool, delta: u32, needed: bool) -> Vec<Option<u32>> {
    if !needed {
        return vec![None; raw.len()];
    }
    let delta = u64::from(delta.max(1));
    let n = raw.len();
    let mut out = vec![0u64; n];
    let explicit = raw.iter().any(|r| r.priority.is_some());
    if !explicit && raw.iter().any(|r| r.annotated.is_some()) {
        // p4c's BMv2 backend: `@priority(N)`, else the 1-based position; smaller wins.
        let bmv2: Vec<u64> = raw
            .iter()
            .enumerate()
            .map(|(i, r)| r.annotated.unwrap_or(i as u64 + 1))
            .collect();
        let top = bmv2.iter().copied().max().unwrap_or(0) + 1;
        let conv = |p: u64| if largest_wins { top - p } else { p };
        return bmv2
            .into_iter()
            .map(|p| Some(u32::try_from(conv(p)).unwrap_or(u32::MAX)))
            .collect();
    }
    if !explicit {
        let mut cur = 1u64;
        for i in 0..n {
            let idx = if largest_wins { n - i - 1 } else { i };
            out[idx] = cur;
            cur = cur.saturating_add(delta);
        }
    } else {
        let mut cur = 1u64;
        for (i, r) in raw.iter().enumerate() {
            if let Some(p) = r.priority {
                cur = p;
            }
            out[i] = cur;
            cur = if largest_wins {
                cur.saturating_sub(delta)
            } else {
                cur.saturating_add(delta)
            };
        }
    }
    out.into_iter()
        .map(|p| Some(u32::try_from(p).unwrap_or(u32::MAX)))
        .collect()
}

/// The instance a direct counter or meter property names: the instance itself, or a list of
/// one (`psa_direct_counter = { c };`, which p4c's eBPF PSA backend takes as the list of the
/// table's direct counters). A table keeps one direct counter and one direct meter, as a
/// P4Runtime table entry carries one of each, so a list of several is refused.
fn direct_resource(value: &ast::Expr) -> R<&ast::Expr> {
    match &value.kind {
        ExprKind::List { items, .. } if items.len() == 1 => Ok(&items[0]),
        ExprKind::List { .. } => unsupported(
            value.span,
            "several direct counters or meters on one table (P4Runtime gives an entry one of each)",
        ),
        _ => Ok(value),
    }
}
