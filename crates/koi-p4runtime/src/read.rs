//! The `Read` RPC's entities (spec "Read RPC", "Wildcard Reads"): [`read`] answers one entity
//! of a `ReadRequest`, calling `out` for each entity it selects. Ids left at 0 and unset
//! indices or keys are wildcards, as each entity's module says; an id P4Info does not have is
//! `NOT_FOUND`; an entity without a type is `INVALID_ARGUMENT`; `ExternEntry` is
//! `UNIMPLEMENTED`. A key that names no object selects nothing (no error), except for direct
//! counter and meter reads, where the spec asks for `NOT_FOUND`. A read changes nothing.

use crate::error::{Result, invalid, unimplemented};
use crate::target::Target;
use crate::{counters, digest, meters, profile, register, replication, table_read, value_set};
use koi_proto::p4runtime::{Entity, entity::Entity as E};
use koi_state::State;

/// Answers one entity of a ReadRequest: calls `out` for each matching entity (wildcards per
/// the spec).
pub fn read(t: &Target, s: &State, e: &Entity, out: &mut dyn FnMut(Entity)) -> Result<()> {
    match &e.entity {
        None => Err(invalid("a read entity without type")),
        Some(E::TableEntry(te)) => table_read::read(t, s, te, out),
        Some(E::ActionProfileMember(m)) => profile::read_members(t, s, m, out),
        Some(E::ActionProfileGroup(g)) => profile::read_groups(t, g, out),
        Some(E::CounterEntry(c)) => counters::read(t, s, c, out),
        Some(E::DirectCounterEntry(c)) => counters::read_direct(t, s, c, out),
        Some(E::MeterEntry(m)) => meters::read(t, s, m, out),
        Some(E::DirectMeterEntry(m)) => meters::read_direct(t, s, m, out),
        Some(E::RegisterEntry(r)) => register::read(t, s, r, out),
        Some(E::PacketReplicationEngineEntry(p)) => replication::read(t, s, p, out),
        Some(E::ValueSetEntry(v)) => value_set::read(t, s, v, out),
        Some(E::DigestEntry(d)) => digest::read(t, d, out),
        Some(E::ExternEntry(_)) => Err(unimplemented("ExternEntry: koi has no such externs")),
    }
}
