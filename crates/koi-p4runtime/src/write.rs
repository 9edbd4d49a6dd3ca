//! The `Write` RPC's updates (spec "Write RPC"): [`apply`] one `Update` to koi-state and the
//! [`Target`], recording how to take it back in an [`Undo`].
//!
//! Each update is atomic: one that is refused changes nothing, even when it takes several
//! steps (a multicast group replaced, a one-shot selector group built): its own steps are
//! kept in a scratch log and rolled back before the error is returned. A batch's atomicity
//! mode is the server's business: `CONTINUE_ON_ERROR` ignores the undo log,
//! `ROLLBACK_ON_ERROR` and `DATAPLANE_ATOMIC` (under the state lock the data plane never sees
//! a half-applied batch) pass it to [`crate::rollback`] when an update fails.
//!
//! Every P4 object id must be non-zero in a write (`INVALID_ARGUMENT`); an id P4Info does not
//! have is `NOT_FOUND`; an update without an entity, or of type `UNSPECIFIED`, is
//! `INVALID_ARGUMENT`; `ExternEntry` is `UNIMPLEMENTED` (koi's architectures have no such
//! externs).

use crate::error::{Result, invalid, not_found, unimplemented};
use crate::schema::{Objects, Schema};
use crate::target::{Data, Target};
use crate::translate::Strings;
use crate::undo::{Undo, rollback};
use crate::{counters, digest, meters, profile, register, replication, table_write, value_set};
use koi_ir::TableId;
use koi_proto::p4runtime::{Update, entity::Entity, update};
use koi_state::State;

/// What a successful update changed, for the datapath's flow caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing the data plane reads (a digest configuration, a counter value).
    None,
    /// The entries or default action of one table (megaflows tagged with it go).
    Table(TableId),
    /// One entry of a table, by its index (koi-state's handle without its version): its
    /// action, parameters or direct meter changed, or it was removed. Only packets that hit
    /// it are decided differently.
    Entry(TableId, u32),
    /// What misses a table: its default action, or a new entry of a table whose keys are all
    /// exact (which only a packet that missed it can hit). Only packets that missed it are
    /// decided differently.
    Misses(TableId),
    /// Anything else the data plane reads (profiles, multicast, clone sessions, registers,
    /// meters, value sets): every megaflow goes.
    All,
}

impl Effect {
    /// The table a table effect concerns.
    pub fn table(self) -> Option<TableId> {
        match self {
            Effect::Table(t) | Effect::Entry(t, _) | Effect::Misses(t) => Some(t),
            Effect::None | Effect::All => None,
        }
    }

    /// The effect of doing both.
    pub fn join(self, other: Effect) -> Effect {
        match (self, other) {
            (Effect::None, e) | (e, Effect::None) => e,
            (a, b) if a == b => a,
            (a, b) => match (a.table(), b.table()) {
                (Some(x), Some(y)) if x == y => Effect::Table(x),
                _ => Effect::All,
            },
        }
    }
}

/// The update types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Insert,
    Modify,
    Delete,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "INSERT",
            Op::Modify => "MODIFY",
            Op::Delete => "DELETE",
        }
    }
}

/// What an update works on.
pub(crate) struct Cx<'a> {
    pub schema: &'a Schema,
    pub strings: &'a mut Strings,
    pub data: &'a mut Data,
    pub s: &'a mut State,
    pub undo: &'a mut Undo,
}

/// The object `id` of `list`, for a write: 0 is `INVALID_ARGUMENT`, an unknown id
/// `NOT_FOUND`.
pub(crate) fn object<'a, T>(list: &'a Objects<T>, id: u32, kind: &str) -> Result<&'a T> {
    if id == 0 {
        return Err(invalid(format!("a {kind} id of 0 in a write")));
    }
    list.get(id)
        .ok_or_else(|| not_found(format!("no {kind} with id {id} in the P4Info")))
}

/// Refuses update types other than MODIFY (counters, meters, registers, value sets).
pub(crate) fn modify_only(op: Op, what: &str) -> Result<()> {
    match op {
        Op::Modify => Ok(()),
        _ => Err(invalid(format!(
            "{what} can only be modified, not {}",
            op.name()
        ))),
    }
}

/// Applies one update; on success records how to take it back in `undo`.
pub fn apply(t: &mut Target, s: &mut State, u: &Update, undo: &mut Undo) -> Result<Effect> {
    let op = match update::Type::try_from(u.r#type) {
        Ok(update::Type::Insert) => Op::Insert,
        Ok(update::Type::Modify) => Op::Modify,
        Ok(update::Type::Delete) => Op::Delete,
        _ => return Err(invalid(format!("update type {} is not valid", u.r#type))),
    };
    let Some(entity) = u.entity.as_ref().and_then(|e| e.entity.as_ref()) else {
        return Err(invalid("update without an entity"));
    };
    let mut local = Undo::default();
    let mut cx = Cx {
        schema: &t.schema,
        strings: &mut t.strings,
        data: &mut t.data,
        s,
        undo: &mut local,
    };
    let r = match entity {
        Entity::TableEntry(e) => table_write::write(&mut cx, op, e),
        Entity::ActionProfileMember(m) => profile::write_member(&mut cx, op, m),
        Entity::ActionProfileGroup(g) => profile::write_group(&mut cx, op, g),
        Entity::CounterEntry(c) => counters::write(&mut cx, op, c),
        Entity::DirectCounterEntry(c) => counters::write_direct(&mut cx, op, c),
        Entity::MeterEntry(m) => meters::write(&mut cx, op, m),
        Entity::DirectMeterEntry(m) => meters::write_direct(&mut cx, op, m),
        Entity::RegisterEntry(r) => register::write(&mut cx, op, r),
        Entity::PacketReplicationEngineEntry(p) => replication::write(&mut cx, op, p),
        Entity::ValueSetEntry(v) => value_set::write(&mut cx, op, v),
        Entity::DigestEntry(d) => digest::write(&mut cx, op, d),
        Entity::ExternEntry(_) => Err(unimplemented("ExternEntry: koi has no such externs")),
    };
    match r {
        Ok(effect) => {
            undo.append(&mut local);
            Ok(effect)
        }
        Err(e) => {
            rollback(t, s, local);
            Err(e)
        }
    }
}
