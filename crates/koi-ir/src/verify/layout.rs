//! Verification of the PHV layout: slots inside the layout and disjoint, slot types matching
//! widths and kinds, headers byte-aligned and contiguous, and the back-references between
//! slots, headers, stacks and unions consistent. Also intrinsics and field lists.

use super::{ErrorKind, Verifier};
use crate::entity::EntityId;
use crate::ids::{HeaderId, SlotId, StackId, UnionId};
use crate::phv::SlotKind;
use crate::types::Ty;

impl Verifier<'_> {
    pub(super) fn check_layout(&mut self) {
        self.check_slots();
        self.check_overlaps();
        for id in self.p.phv.headers.keys() {
            self.check_header(id);
        }
        for id in self.p.phv.stacks.keys() {
            self.check_stack(id);
        }
        for id in self.p.phv.unions.keys() {
            self.check_union(id);
        }
        self.check_slot_lists();
    }

    fn bad_layout(&mut self, loc: String, why: String) {
        self.err(loc, ErrorKind::BadLayout(why));
    }

    fn check_slots(&mut self) {
        let phv = &self.p.phv;
        for (id, s) in phv.slots.iter() {
            let loc = format!("phv slot {id} ({})", s.name);
            if s.end() > u64::from(phv.width) {
                self.err(
                    &loc,
                    ErrorKind::SlotOutsideLayout {
                        end: s.end(),
                        layout: phv.width,
                    },
                );
            }
            let kind_ty_ok = match s.kind {
                SlotKind::Validity(_) => s.ty == Ty::Bool,
                SlotKind::NextIndex(_) => s.ty == Ty::Bits(32),
                SlotKind::VarbitLength(_) => matches!(s.ty, Ty::Bits(_)),
                _ => true,
            };
            if s.width != s.ty.width() || !kind_ty_ok {
                self.err(
                    &loc,
                    ErrorKind::SlotType {
                        width: s.width,
                        ty: s.ty,
                    },
                );
            }
            if let Some(why) = self.slot_backref_problem(id) {
                self.bad_layout(loc, why);
            }
        }
    }

    /// Whether the slot's kind and length agree with what they point at.
    fn slot_backref_problem(&self, id: SlotId) -> Option<String> {
        let phv = &self.p.phv;
        let s = &phv.slots[id];
        let ok = match s.kind {
            SlotKind::HeaderField(h) => phv.headers.get(h).is_some_and(|h| h.fields.contains(&id)),
            SlotKind::Validity(h) => phv.headers.get(h).is_some_and(|h| h.valid == id),
            SlotKind::VarbitLength(v) => phv.slots.get(v).is_some_and(|v| v.length == Some(id)),
            SlotKind::NextIndex(st) => phv.stacks.get(st).is_some_and(|st| st.next_index == id),
            SlotKind::Metadata | SlotKind::Local | SlotKind::Temp => true,
        };
        if !ok {
            return Some(format!("slot kind {:?} does not point back at it", s.kind));
        }
        let length_ok = match (s.ty, s.length) {
            (Ty::Varbit(_), Some(l)) => phv
                .slots
                .get(l)
                .is_some_and(|l| l.kind == SlotKind::VarbitLength(id)),
            (Ty::Varbit(_), None) => false,
            (_, l) => l.is_none(),
        };
        (!length_ok).then(|| "varbit slot without a matching length slot".to_string())
    }

    fn check_overlaps(&mut self) {
        let phv = &self.p.phv;
        let mut spans: Vec<(u64, u64, SlotId)> = phv
            .slots
            .iter()
            .filter(|(_, s)| s.width > 0)
            .map(|(id, s)| (u64::from(s.offset), s.end(), id))
            .collect();
        spans.sort();
        let mut errs = Vec::new();
        let mut reach: Option<(u64, SlotId)> = None;
        for &(start, end, id) in &spans {
            if let Some((r_end, r_id)) = reach
                && start < r_end
            {
                errs.push((id, r_id));
            }
            if reach.is_none_or(|(r_end, _)| end > r_end) {
                reach = Some((end, id));
            }
        }
        for (id, other) in errs {
            let loc = format!("phv slot {id} ({})", phv.slots[id].name);
            self.err(
                loc,
                ErrorKind::SlotOverlap {
                    other: phv.slots[other].name.clone(),
                },
            );
        }
    }

    fn check_header(&mut self, id: HeaderId) {
        let phv = &self.p.phv;
        let h = &phv.headers[id];
        let loc = format!("phv header {}", h.name);
        if !h.offset.is_multiple_of(8) {
            self.bad_layout(
                loc.clone(),
                format!("starts at bit {}, not a byte boundary", h.offset),
            );
        }
        let mut at = u64::from(h.offset);
        for &f in &h.fields {
            match phv.slots.get(f) {
                Some(s) if u64::from(s.offset) == at && s.kind == SlotKind::HeaderField(id) => {
                    at = s.end()
                }
                Some(s) => {
                    let why = format!("field {} is not next in the header's wire layout", s.name);
                    return self.bad_layout(loc, why);
                }
                None => return self.err(loc, oor("slot", f.index())),
            }
        }
        if at != u64::from(h.offset) + u64::from(h.width) {
            self.bad_layout(
                loc.clone(),
                format!(
                    "fields cover {} bits, header says {}",
                    at - u64::from(h.offset),
                    h.width
                ),
            );
        }
        if phv
            .slots
            .get(h.valid)
            .is_none_or(|s| s.kind != SlotKind::Validity(id))
        {
            self.bad_layout(
                loc.clone(),
                "validity slot is not this header's".to_string(),
            );
        }
        let stack_ok = h.stack.is_none_or(|(s, i)| {
            phv.stacks
                .get(s)
                .is_some_and(|s| s.elems.get(i as usize) == Some(&id))
        });
        let union_ok = h
            .union
            .is_none_or(|u| phv.unions.get(u).is_some_and(|u| u.members.contains(&id)));
        if !stack_ok || !union_ok {
            self.bad_layout(loc, "stack or union does not list the header".to_string());
        }
    }

    fn check_stack(&mut self, id: StackId) {
        let phv = &self.p.phv;
        let st = &phv.stacks[id];
        let loc = format!("phv stack {}", st.name);
        let elems_ok = st.elems.iter().enumerate().all(|(i, &h)| {
            phv.headers
                .get(h)
                .is_some_and(|h| h.stack == Some((id, i as u32)))
        });
        let same_type = st
            .elems
            .iter()
            .filter_map(|&h| phv.headers.get(h))
            .all(|h| h.type_name == st.type_name);
        if !elems_ok || !same_type {
            self.bad_layout(
                loc.clone(),
                "elements do not point back at the stack".to_string(),
            );
        }
        if phv
            .slots
            .get(st.next_index)
            .is_none_or(|s| s.kind != SlotKind::NextIndex(id))
        {
            self.bad_layout(loc, "next index slot is not this stack's".to_string());
        }
    }

    fn check_union(&mut self, id: UnionId) {
        let phv = &self.p.phv;
        let u = &phv.unions[id];
        if !u
            .members
            .iter()
            .all(|&h| phv.headers.get(h).is_some_and(|h| h.union == Some(id)))
        {
            let loc = format!("phv union {}", u.name);
            self.bad_layout(loc, "members do not point back at the union".to_string());
        }
    }

    fn check_slot_lists(&mut self) {
        let phv = &self.p.phv;
        for (name, s) in &self.p.intrinsics {
            if !phv.slots.contains(*s) {
                self.err(format!("intrinsic {name}"), oor("slot", s.index()));
            }
        }
        for (id, l) in self.p.field_lists.iter() {
            for s in &l.slots {
                if !phv.slots.contains(*s) {
                    self.err(format!("field list {id}"), oor("slot", s.index()));
                }
            }
        }
    }
}

pub(super) fn oor(what: &'static str, id: u32) -> ErrorKind {
    ErrorKind::IdOutOfRange { what, id }
}
