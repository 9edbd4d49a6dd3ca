//! Digests (spec "DigestEntry", "Digest Messages"): the controller's configuration of each
//! digest (`DigestEntry`), and the messages the program produces as P4Runtime digest data.
//!
//! INSERT enables a digest with its config (`ALREADY_EXISTS` if enabled), MODIFY changes it
//! and DELETE disables it (`NOT_FOUND` if not enabled); INSERT and MODIFY need a config with
//! no negative field (`INVALID_ARGUMENT`). Reads give the configs written (id 0: every enabled
//! digest). The buffering, acknowledgement and timeouts the config asks for are the server's.
//!
//! A message ([`koi_state::DigestMessage`]) is the values of the digest's data leaves in order
//! (a v1model `digest<T>` of a struct names the digest after `T`); [`digest_data`] gives them
//! as the `P4Data` of the digest's P4Info type spec ([`crate::p4data`]).

use crate::error::{Result, exists, invalid, not_found};
use crate::p4data::Types;
use crate::target::Target;
use crate::undo::Step;
use crate::write::{Cx, Effect, Op, object};
use koi_ir::Bits;
use koi_proto::p4runtime::{DigestEntry, Entity, P4Data, digest_entry, entity};
use koi_state::DigestMessage;

pub(crate) fn write(cx: &mut Cx, op: Op, d: &DigestEntry) -> Result<Effect> {
    let info = object(&cx.schema.digests, d.digest_id, "digest")?;
    let id = info.id;
    let enabled = cx.data.digests.contains_key(&id);
    let config = match (op, enabled) {
        (Op::Insert, true) => {
            return Err(exists(format!("digest {} is enabled already", info.name)));
        }
        (Op::Modify | Op::Delete, false) => {
            return Err(not_found(format!("digest {} is not enabled", info.name)));
        }
        (Op::Delete, true) => None,
        _ => {
            let Some(c) = d.config else {
                return Err(invalid(format!("digest {}: a config is needed", info.name)));
            };
            if c.max_timeout_ns < 0 || c.max_list_size < 0 || c.ack_timeout_ns < 0 {
                return Err(invalid(format!(
                    "digest {}: config values cannot be negative",
                    info.name
                )));
            }
            Some(c)
        }
    };
    let before = match config {
        Some(c) => cx.data.digests.insert(id, c),
        None => cx.data.digests.remove(&id),
    };
    cx.undo.push(Step::Digest { id, before });
    Ok(Effect::None)
}

pub(crate) fn read(t: &Target, d: &DigestEntry, out: &mut dyn FnMut(Entity)) -> Result<()> {
    if d.digest_id != 0 && t.schema.digests.get(d.digest_id).is_none() {
        return Err(not_found(format!(
            "no digest with id {} in the P4Info",
            d.digest_id
        )));
    }
    for info in t.schema.digests.iter() {
        if d.digest_id != 0 && d.digest_id != info.id {
            continue;
        }
        if let Some(c) = t.data.digests.get(&info.id) {
            out(Entity {
                entity: Some(entity::Entity::DigestEntry(DigestEntry {
                    digest_id: info.id,
                    config: Some(*c),
                })),
            });
        }
    }
    Ok(())
}

/// The config the controller wrote for a digest (DigestEntry), if any: max_timeout_ns,
/// max_list_size, ack_timeout_ns.
pub fn digest_config(t: &Target, digest_id: u32) -> Option<digest_entry::Config> {
    t.data.digests.get(&digest_id).copied()
}

/// A digest message the program produced, as the P4Runtime digest id and its P4Data (a struct
/// per the P4Info type spec). `NOT_FOUND` for a digest P4Info does not list.
pub fn digest_data(t: &Target, m: &DigestMessage) -> Result<(u32, P4Data)> {
    let info = t
        .schema
        .digest_by_name
        .get(&m.name)
        .and_then(|id| t.schema.digests.get(*id))
        .ok_or_else(|| not_found(format!("digest {} is not in the P4Info", m.name)))?;
    let Some(spec) = &info.spec else {
        return Err(invalid(format!(
            "digest {} has no type in the P4Info",
            info.name
        )));
    };
    let values: Vec<Bits> = m.fields.iter().map(|(_, v)| v.clone()).collect();
    let data = Types::of(&t.schema).encode(&t.strings, spec, &values)?;
    Ok((info.id, data))
}
