//! The `Write` and `Read` RPCs of one device, over the codec (`koi_p4runtime`) and the
//! runtime's [`koi_runtime::Image::update`].
//!
//! **Write.** Only the primary of the request's role writes (PERMISSION_DENIED otherwise);
//! without a program the answer is FAILED_PRECONDITION. The whole batch runs under the state
//! lock in one `update`, so every batch lands between two packets in every mode (koi's
//! CONTINUE_ON_ERROR is data-plane atomic too). CONTINUE_ON_ERROR attempts every update;
//! ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC stop at the first failure and take back what the
//! batch applied (the codec's undo log), so the state is as before the batch; the failed
//! update reports its error and every other one ABORTED. A failed batch answers UNKNOWN with
//! one `p4.v1.Error` per update, in order. Tables written are reported to the caches (every
//! poll thread drops the flows computed from them before its next packet).
//!
//! **Read.** Each entity of the request is a query (wildcards as the spec allows); the reads
//! run under the state lock, and a failed query answers UNKNOWN with one `p4.v1.Error` per
//! query after the entities the others found.

use crate::arbitration::election_id;
use crate::device::{Device, no_pipeline};
use crate::status::{self, batch, status};
use koi_p4runtime as codec;
use koi_p4runtime::Target;
use koi_proto::p4runtime::{
    Entity, Error as P4Error, ReadRequest, Update, WriteRequest, write_request::Atomicity,
};
use koi_runtime::Changes;
use koi_state::State;
use tonic::{Code, Status};

/// Applies `updates` to `state` through `target`; `atomic`: all or nothing. Reports what
/// changed to `changes` (none for a saved config's state, which no thread forwards with).
/// Returns one error per update, or `None` when all succeeded.
fn apply(
    target: &mut Target,
    state: &mut State,
    updates: &[Update],
    atomic: bool,
    mut changes: Option<&mut Changes>,
) -> Option<Vec<P4Error>> {
    let mut undo = codec::Undo::default();
    let mut errors: Vec<P4Error> = Vec::new();
    for (i, u) in updates.iter().enumerate() {
        match codec::apply(target, state, u, &mut undo) {
            Ok(effect) => {
                if let Some(ch) = changes.as_deref_mut() {
                    match effect {
                        codec::Effect::None => {}
                        codec::Effect::Table(t) => ch.table(t),
                        codec::Effect::Entry(t, i) => ch.entry(t, i),
                        codec::Effect::Misses(t) => ch.misses(t),
                        codec::Effect::All => ch.all(),
                    }
                }
                if !errors.is_empty() {
                    errors.push(status::ok());
                }
            }
            Err(e) => {
                if errors.is_empty() {
                    errors = vec![status::ok(); i];
                }
                errors.push(e.to_update_error());
                if atomic {
                    codec::rollback(target, state, undo);
                    if let Some(ch) = changes.as_deref_mut() {
                        ch.all();
                    }
                    let why = format!("rolled back: update {i} of the batch failed");
                    for (j, slot) in errors.iter_mut().enumerate() {
                        if j != i {
                            *slot = status::error(Code::Aborted, why.clone());
                        }
                    }
                    errors.extend(
                        (i + 1..updates.len()).map(|_| status::error(Code::Aborted, why.clone())),
                    );
                    return Some(errors);
                }
            }
        }
    }
    (!errors.is_empty()).then_some(errors)
}

/// The `Write` RPC on device `d`.
pub fn write(d: &Device, req: &WriteRequest) -> Result<(), Status> {
    let atomic = match Atomicity::try_from(req.atomicity) {
        Ok(Atomicity::ContinueOnError) => false,
        Ok(Atomicity::RollbackOnError | Atomicity::DataplaneAtomic) => true,
        Err(_) => {
            return Err(status(
                Code::InvalidArgument,
                format!("unknown atomicity {}", req.atomicity),
            ));
        }
    };
    let _writes = d.writes.lock().unwrap_or_else(|p| p.into_inner());
    d.check_primary(&req.role, election_id(&req.election_id))?;
    if req.updates.is_empty() {
        return Ok(());
    }
    let image = d.pipeline.image();
    let mut v = d.view();
    let v = &mut *v;
    let errors = if let Some(saved) = v.saved.as_mut() {
        apply(
            &mut saved.target,
            &mut saved.state,
            &req.updates,
            atomic,
            None,
        )
    } else {
        let (Some(image), Some(bound)) = (image, v.bound.as_mut()) else {
            return Err(no_pipeline(d));
        };
        if bound.generation != image.generation() {
            return Err(status(
                Code::Unavailable,
                "the program changed during the request: try again",
            ));
        }
        image
            .update(|s, ch| apply(&mut bound.target, s, &req.updates, atomic, Some(ch)))
            .map_err(|e| status(Code::Unavailable, e.to_string()))?
    };
    match errors {
        None => Ok(()),
        Some(errors) => Err(batch("write", errors)),
    }
}

/// The `Read` RPC on device `d`: the entities found, or the batch error after them.
pub fn read(d: &Device, req: &ReadRequest) -> (Vec<Entity>, Option<Status>) {
    let mut found = Vec::new();
    let mut errors: Vec<P4Error> = Vec::new();
    let mut query = |target: &Target, state: &State| {
        for (i, e) in req.entities.iter().enumerate() {
            match codec::read(target, state, e, &mut |x| found.push(x)) {
                Ok(()) => {
                    if !errors.is_empty() {
                        errors.push(status::ok());
                    }
                }
                Err(err) => {
                    if errors.is_empty() {
                        errors = vec![status::ok(); i];
                    }
                    errors.push(err.to_update_error());
                }
            }
        }
    };
    let image = d.pipeline.image();
    let v = d.view();
    if let Some(saved) = &v.saved {
        query(&saved.target, &saved.state);
    } else {
        match (image, &v.bound) {
            (Some(image), Some(b)) if b.generation == image.generation() => {
                // `time_since_last_hit` counts up to the state's clock.
                let now = koi_state::Clock::now_ns(d.switch.clock());
                let done = image.update(|s, _| {
                    s.set_now_ns(now.max(s.now_ns()));
                    query(&b.target, s)
                });
                if let Err(e) = done {
                    return (Vec::new(), Some(status(Code::Unavailable, e.to_string())));
                }
            }
            _ => return (Vec::new(), Some(no_pipeline(d))),
        }
    }
    drop(v);
    let err = (!errors.is_empty()).then(|| batch("read", errors));
    (found, err)
}
