//! One P4Runtime device: a pipeline of the switch seen through P4Runtime. It keeps the
//! arbitration of its controllers, their streams, the codec's [`Target`] bound to the
//! pipeline's current image (or to a saved config awaiting COMMIT), and the digest engine;
//! and it delivers packet-ins, digest lists and idle-timeout notifications to the primary.
//!
//! **Views.** Read and Write act on the *current view*: the config saved by
//! `VERIFY_AND_SAVE` if there is one (its own fresh state, which `COMMIT` then loads), else
//! the pipeline's current image. The target is rebuilt whenever the image changed by other
//! means (a program given to `koi run`, a later `koi ctl load`): it is always the one of the
//! image it acts on.
//!
//! **Locks**, always taken in this order: `writes` (serialises Writes, pipeline changes and
//! primary changes, so a primary change waits for the Writes in flight), `arb`, `view`, then
//! the image's state lock (inside [`Image::update`]). The poll threads take only the state
//! lock and hand events over through a queue ([`EventSink`]), never waiting on these.

use crate::arbitration::{Advisory, Arbitration, Refusal, StreamId};
use crate::digests::Digests;
use crate::status;
use koi_p4runtime as codec;
use koi_p4runtime::Target;
use koi_proto::p4runtime::{
    ForwardingPipelineConfig, IdleTimeoutNotification, MasterArbitrationUpdate, StreamError,
    StreamMessageResponse, stream_message_response::Update as Out,
};
use koi_runtime::{Events, Image, Pipeline, Program, Switch};
use koi_state::{DigestMessage, State};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::mpsc;
use tonic::{Code, Status};

/// A stream's outgoing queue.
pub type StreamTx = mpsc::Sender<Result<StreamMessageResponse, Status>>;

/// How many events (packet-ins, digest batches) wait between the poll threads and the
/// device's task; more are dropped and counted.
pub const EVENT_QUEUE: usize = 4096;

/// What the poll threads hand to the device's task.
pub enum Event {
    PacketIn {
        generation: u64,
        bytes: Vec<u8>,
    },
    Digests {
        generation: u64,
        messages: Vec<DigestMessage>,
    },
}

/// The runtime side of the event queue: never blocks a poll thread.
pub struct EventSink {
    tx: mpsc::Sender<Event>,
    pub dropped: AtomicU64,
}

impl Events for EventSink {
    fn packet_in(&self, image: &Image, bytes: &[u8]) {
        let ev = Event::PacketIn {
            generation: image.generation(),
            bytes: bytes.to_vec(),
        };
        if self.tx.try_send(ev).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn digests(&self, image: &Image, messages: Vec<DigestMessage>) {
        let n = messages.len() as u64;
        let ev = Event::Digests {
            generation: image.generation(),
            messages,
        };
        if self.tx.try_send(ev).is_err() {
            self.dropped.fetch_add(n, Ordering::Relaxed);
        }
    }
}

/// The codec's target for one image, and the config P4Runtime reports for it.
pub struct Bound {
    pub generation: u64,
    pub target: Target,
    pub config: ForwardingPipelineConfig,
}

/// A config saved by `VERIFY_AND_SAVE`: its program, the state Writes build until `COMMIT`
/// loads it, and its target.
pub struct Saved {
    pub program: Arc<Program>,
    pub state: State,
    pub target: Target,
    pub config: ForwardingPipelineConfig,
}

/// The target and state Read and Write act on.
#[derive(Default)]
pub struct View {
    pub bound: Option<Bound>,
    pub saved: Option<Saved>,
}

/// Counters of what could not be delivered.
#[derive(Debug, Default)]
pub struct Dropped {
    /// Packet-ins, digest lists or notifications with no primary to take them, or whose
    /// stream was full.
    pub undelivered: AtomicU64,
    /// Events from an image that is no longer the current one.
    pub stale: AtomicU64,
}

/// One device.
pub struct Device {
    pub id: u64,
    pub pipeline: Arc<Pipeline>,
    pub switch: Arc<Switch>,
    pub writes: Mutex<()>,
    arb: Mutex<Arbitration>,
    streams: Mutex<HashMap<StreamId, StreamTx>>,
    view: Mutex<View>,
    digests: Mutex<Digests>,
    pub sink: Arc<EventSink>,
    pub dropped: Dropped,
}

pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The config P4Runtime reports for a program loaded by other means than
/// `SetForwardingPipelineConfig`: koi's P4Info and device config, no cookie.
fn config_of(program: &Program) -> ForwardingPipelineConfig {
    ForwardingPipelineConfig {
        p4info: program.p4info.as_ref().ok().cloned(),
        p4_device_config: program.device_config.clone(),
        cookie: None,
    }
}

impl Device {
    /// The device of `pipeline`, with the receiving end of its event queue (for its task).
    pub fn new(
        switch: Arc<Switch>,
        pipeline: Arc<Pipeline>,
    ) -> (Arc<Device>, mpsc::Receiver<Event>) {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE);
        let sink = Arc::new(EventSink {
            tx,
            dropped: AtomicU64::new(0),
        });
        pipeline.set_events(Some(sink.clone() as Arc<dyn Events>));
        let d = Device {
            id: pipeline.device_id(),
            pipeline,
            switch,
            writes: Mutex::new(()),
            arb: Mutex::new(Arbitration::new(0)),
            streams: Mutex::new(HashMap::new()),
            view: Mutex::new(View::default()),
            digests: Mutex::new(Digests::default()),
            sink,
            dropped: Dropped::default(),
        };
        *lock(&d.arb) = Arbitration::new(d.id);
        (Arc::new(d), rx)
    }

    // ---- arbitration and streams ----

    /// A `MasterArbitrationUpdate` on stream `id` (whose queue is `tx`).
    pub fn arbitrate(
        &self,
        id: StreamId,
        m: &MasterArbitrationUpdate,
        tx: &StreamTx,
    ) -> Result<(), Refusal> {
        let _writes = lock(&self.writes);
        let mut arb = lock(&self.arb);
        let before = arb.primary(m.role.as_ref().map_or("", |r| r.name.as_str()));
        let adv = arb.update(id, m)?;
        lock(&self.streams).insert(id, tx.clone());
        let after = arb.primary(m.role.as_ref().map_or("", |r| r.name.as_str()));
        drop(arb);
        if before != after {
            // The spec lets the server forget unacknowledged digests on a primary change.
            lock(&self.digests).clear();
        }
        self.advise(adv);
        Ok(())
    }

    /// Stream `id` ended.
    pub fn leave(&self, id: StreamId) {
        let _writes = lock(&self.writes);
        let adv = lock(&self.arb).leave(id);
        lock(&self.streams).remove(&id);
        self.advise(adv);
    }

    fn advise(&self, adv: Vec<Advisory>) {
        let streams = lock(&self.streams);
        for (s, m) in adv {
            if let Some(tx) = streams.get(&s) {
                let msg = StreamMessageResponse {
                    update: Some(Out::Arbitration(m)),
                };
                if tx.try_send(Ok(msg)).is_err() {
                    self.dropped.undelivered.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Whether `stream` is a primary.
    pub fn is_primary(&self, stream: StreamId) -> bool {
        lock(&self.arb).is_primary(stream)
    }

    /// Checks that a request of `role` with `election_id` comes from that role's primary.
    pub fn check_primary(&self, role: &str, election_id: Option<u128>) -> Result<(), Status> {
        lock(&self.arb)
            .check_primary(role, election_id)
            .map_err(|r| status::status(r.code, r.message))
    }

    /// Sends `update` to the primary of every role; counts it when there is none.
    fn to_primaries(&self, update: Out) {
        let primaries: Vec<StreamId> = {
            let arb = lock(&self.arb);
            let streams = lock(&self.streams);
            streams
                .keys()
                .copied()
                .filter(|s| arb.is_primary(*s))
                .collect()
        };
        if primaries.is_empty() {
            self.dropped.undelivered.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let streams = lock(&self.streams);
        for s in primaries {
            if let Some(tx) = streams.get(&s) {
                let msg = StreamMessageResponse {
                    update: Some(update.clone()),
                };
                if tx.try_send(Ok(msg)).is_err() {
                    self.dropped.undelivered.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Sends a stream error to `stream`.
    pub fn stream_error(tx: &StreamTx, e: StreamError) {
        let _ = tx.try_send(Ok(StreamMessageResponse {
            update: Some(Out::Error(e)),
        }));
    }

    fn has_primary(&self) -> bool {
        let arb = lock(&self.arb);
        lock(&self.streams).keys().any(|s| arb.is_primary(*s))
    }

    // ---- the view ----

    /// The view, with its live target current with the pipeline's image.
    pub fn view(&self) -> MutexGuard<'_, View> {
        let mut v = lock(&self.view);
        if let Some(image) = self.pipeline.image()
            && v.bound.as_ref().map(|b| b.generation) != Some(image.generation())
        {
            // A program loaded by `koi ctl load`.
            self.rebind(&mut v, &image, None);
        }
        v
    }

    /// Binds a newly loaded `image` (after `SetForwardingPipelineConfig`), reporting `config`.
    pub fn bind_loaded(&self, view: &mut View, image: &Image, config: ForwardingPipelineConfig) {
        self.rebind(view, image, Some(config));
        view.saved = None;
    }

    /// Binds `image` in place of the bound image: with its state carried over from that one
    /// (`RECONCILE_AND_COMMIT`, `koi ctl load`), the controller's records follow; else they
    /// start afresh, digests waiting included.
    fn rebind(&self, view: &mut View, image: &Image, config: Option<ForwardingPipelineConfig>) {
        let old = view.bound.take();
        let carried = old.filter(|b| image.carried_from() == Some(b.generation));
        if carried.is_none() {
            lock(&self.digests).clear();
        }
        view.bound = bind(image, config, carried.as_ref());
    }

    // ---- events from the data plane ----

    /// Handles one event from the poll threads.
    pub fn on_event(&self, ev: Event) {
        match ev {
            Event::PacketIn { generation, bytes } => {
                let msg = {
                    let v = self.view();
                    match &v.bound {
                        Some(b) if b.generation == generation => {
                            codec::packet_in(&b.target, &bytes)
                        }
                        _ => {
                            self.dropped.stale.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                    }
                };
                match msg {
                    Ok(p) => self.to_primaries(Out::Packet(p)),
                    Err(e) => {
                        tracing::debug!(device = self.id, error = %e.message, "packet-in not decoded");
                        self.dropped.undelivered.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Event::Digests {
                generation,
                messages,
            } => {
                let now = Instant::now();
                let lists = {
                    let v = self.view();
                    let Some(b) = v.bound.as_ref().filter(|b| b.generation == generation) else {
                        self.dropped
                            .stale
                            .fetch_add(messages.len() as u64, Ordering::Relaxed);
                        return;
                    };
                    let mut eng = lock(&self.digests);
                    let mut lists = Vec::new();
                    for m in &messages {
                        match codec::digest_data(&b.target, m) {
                            Ok((id, data)) => {
                                let c = codec::digest_config(&b.target, id);
                                lists.extend(eng.push(id, c.as_ref(), data, now));
                            }
                            Err(e) => {
                                tracing::debug!(device = self.id, error = %e.message, "digest not encoded");
                                eng.dropped += 1;
                            }
                        }
                    }
                    lists
                };
                for l in lists {
                    self.to_primaries(Out::Digest(l));
                }
            }
        }
    }

    /// Sends the digest lists whose time has come; returns when to call again.
    pub fn digest_tick(&self) -> Option<Instant> {
        let now = Instant::now();
        let (lists, next) = {
            let v = self.view();
            let conf = |id: u32| {
                v.bound
                    .as_ref()
                    .and_then(|b| codec::digest_config(&b.target, id))
            };
            let mut eng = lock(&self.digests);
            let lists = eng.tick(&conf, now);
            (lists, eng.next_deadline(&conf))
        };
        for l in lists {
            self.to_primaries(Out::Digest(l));
        }
        next
    }

    /// A `DigestListAck`.
    pub fn digest_ack(&self, digest_id: u32, list_id: u64) -> bool {
        lock(&self.digests).ack(digest_id, list_id)
    }

    /// Finds idle entries and notifies the primary (only while there is one: the entries'
    /// timers are reset by a notification).
    pub fn idle_scan(&self) {
        if !self.has_primary() {
            return;
        }
        let Some(image) = self.pipeline.image() else {
            return;
        };
        let now_ns = koi_state::Clock::now_ns(self.switch.clock());
        let entries = {
            let mut v = self.view();
            let Some(b) = v
                .bound
                .as_mut()
                .filter(|b| b.generation == image.generation())
            else {
                return;
            };
            // A retired image: the next scan looks at the new one.
            image
                .update(|s, _| codec::idle_notifications(&mut b.target, s, now_ns))
                .unwrap_or_default()
        };
        if entries.is_empty() {
            return;
        }
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        self.to_primaries(Out::IdleTimeoutNotification(IdleTimeoutNotification {
            table_entry: entries,
            timestamp,
        }));
    }
}

/// The target of `image`, reporting `config` (or koi's own for the program); `carried`: the
/// bound image whose state `image`'s was carried over from.
fn bind(
    image: &Image,
    config: Option<ForwardingPipelineConfig>,
    carried: Option<&Bound>,
) -> Option<Bound> {
    let program = image.program();
    let p4info = match &program.p4info {
        Ok(p) => p.clone(),
        Err(e) => {
            tracing::warn!(program = program.name, error = %e, "no P4Info: P4Runtime cannot use this program");
            return None;
        }
    };
    let target = match image.read(|s| match carried {
        Some(old) => Target::carried(&old.target, p4info, s),
        None => Target::new(p4info, s),
    }) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(program = program.name, error = %e.message, "P4Runtime cannot use this program");
            return None;
        }
    };
    Some(Bound {
        generation: image.generation(),
        target,
        config: config.unwrap_or_else(|| config_of(program)),
    })
}

/// Why Read and Write cannot run: no program, or one P4Runtime cannot use.
pub fn no_pipeline(d: &Device) -> Status {
    match d.pipeline.image() {
        None => status::status(
            Code::FailedPrecondition,
            format!(
                "device {} has no forwarding pipeline config: SetForwardingPipelineConfig first",
                d.id
            ),
        ),
        Some(i) => status::status(
            Code::FailedPrecondition,
            format!(
                "device {}: program {} has no P4Info koi can serve (see the switch's log)",
                d.id,
                i.program().name
            ),
        ),
    }
}
