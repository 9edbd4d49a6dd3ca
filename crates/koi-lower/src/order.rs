//! The final ordering of actions and tables: p4c lists them (and P4Info follows) by block
//! instance (top-level declarations first, then each instance in the order it is entered, an
//! instance's own declarations before those of the instances it applies) and, within one, by
//! declaration order. Lowering creates them on first use, so this pass renumbers the arenas
//! and every reference to them.

use koi_ir::entity::{Arena, EntityId};
use koi_ir::{ActionId, ApplyNext, Body, Pipeline, Stmt, TableId, Terminator};

/// The sort key of an object: (instance order, class, position, creation order). Top-level
/// actions are class 0 at the position of their first reference in the instance (p4c copies
/// them into the block that uses them, first), the instance's own objects class 1 at their
/// declaration.
pub type Key = (u32, u32, u32, u32);

/// The permutation sorting `keys` (indexed by old id): `new_of[old]`.
fn permutation(keys: &[Key]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    let mut new_of = vec![0u32; keys.len()];
    for (new, old) in order.into_iter().enumerate() {
        new_of[old] = new as u32;
    }
    new_of
}

fn reorder<K: EntityId, V: Clone>(arena: &mut Arena<K, V>, new_of: &[u32]) {
    let old = std::mem::take(arena);
    let mut slots: Vec<Option<V>> = (0..old.len()).map(|_| None).collect();
    for (i, v) in old.values().cloned().enumerate() {
        if let Some(&n) = new_of.get(i) {
            slots[n as usize] = Some(v);
        }
    }
    for v in slots.into_iter().flatten() {
        arena.push(v);
    }
}

/// Renumbers actions and tables of `p` by their keys (one per id, in id order).
pub fn sort(p: &mut Pipeline, action_keys: &[Key], table_keys: &[Key]) {
    if action_keys.len() != p.actions.len() || table_keys.len() != p.tables.len() {
        return;
    }
    let an = permutation(action_keys);
    let tn = permutation(table_keys);
    let a = |id: ActionId| ActionId::new(an[id.index() as usize]);
    let t = |id: TableId| TableId::new(tn[id.index() as usize]);
    for (_, table) in p.tables.iter_mut() {
        for ta in &mut table.actions {
            ta.action = a(ta.action);
        }
        let d = &mut table.default_action.call.action;
        *d = a(*d);
        for e in &mut table.entries {
            e.call.action = a(e.call.action);
        }
    }
    for (_, c) in p.controls.iter_mut() {
        remap_body(&mut c.body, &a, &t);
    }
    for (_, act) in p.actions.iter_mut() {
        remap_body(&mut act.body, &a, &t);
    }
    reorder(&mut p.actions, &an);
    reorder(&mut p.tables, &tn);
}

fn remap_body(body: &mut Body, a: &impl Fn(ActionId) -> ActionId, t: &impl Fn(TableId) -> TableId) {
    for (_, b) in body.blocks.iter_mut() {
        for s in &mut b.stmts {
            if let Stmt::CallAction { action, .. } = s {
                *action = a(*action);
            }
        }
        if let Some(Terminator::Apply { table, next }) = &mut b.term {
            *table = t(*table);
            if let ApplyNext::Actions { cases, .. } = next {
                for (act, _) in cases {
                    *act = a(*act);
                }
            }
        }
    }
}
