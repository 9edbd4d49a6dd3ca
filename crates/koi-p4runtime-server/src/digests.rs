//! Digest lists (P4Runtime spec, `DigestEntry`): the data plane's digest messages are
//! buffered per digest until `max_timeout_ns` has passed since the first one or
//! `max_list_size` distinct ones are waiting, then sent as one `DigestList`; a message equal to
//! one already waiting, or to one sent and not yet acknowledged (a `DigestListAck` with the
//! list's id) within `ack_timeout_ns`, is dropped as a duplicate.
//!
//! Only digests the controller configured (a `DigestEntry` was inserted) make lists; others'
//! messages are dropped and counted. The engine is pure bookkeeping over an injected clock
//! ([`Instant`]s passed in): the device's task feeds it messages and ticks, and sends what it
//! returns to the primary controller.

use koi_proto::p4runtime::{DigestList, P4Data, digest_entry::Config};
use prost::Message;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

/// The most messages one digest's buffer holds; more are dropped (and counted).
pub const MAX_BUFFERED: usize = 65_536;
/// The most messages in one list when the controller set no limit (`max_list_size` 0).
pub const UNLIMITED_LIST: usize = 4096;

/// Messages waiting for one digest's next list.
#[derive(Debug)]
struct Buffer {
    first: Instant,
    data: Vec<P4Data>,
    keys: Vec<Vec<u8>>,
}

/// A sent list waiting for its acknowledgement.
#[derive(Debug)]
struct Sent {
    at: Instant,
    keys: Vec<Vec<u8>>,
}

/// The digest engine of one device.
#[derive(Debug, Default)]
pub struct Digests {
    next_list: u64,
    buffers: HashMap<u32, Buffer>,
    /// Keys (encoded data) of messages waiting or sent and not acknowledged, with their
    /// digest.
    seen: HashSet<(u32, Vec<u8>)>,
    sent: HashMap<(u32, u64), Sent>,
    /// Messages dropped because their buffer was full or their digest not configured.
    pub dropped: u64,
    /// Messages dropped as duplicates.
    pub duplicates: u64,
}

fn ns(v: i64) -> Duration {
    Duration::from_nanos(u64::try_from(v).unwrap_or(0))
}

fn list_limit(c: &Config) -> usize {
    match c.max_list_size {
        n if n <= 0 => UNLIMITED_LIST,
        n => n as usize,
    }
}

impl Digests {
    /// A message of digest `id` from the data plane; `config` is the digest's, if the
    /// controller configured it. Returns a list when this message completes one.
    pub fn push(
        &mut self,
        id: u32,
        config: Option<&Config>,
        data: P4Data,
        now: Instant,
    ) -> Option<DigestList> {
        let Some(c) = config else {
            self.dropped += 1;
            return None;
        };
        let key = data.encode_to_vec();
        if self.seen.contains(&(id, key.clone())) {
            self.duplicates += 1;
            return None;
        }
        let buf = self.buffers.entry(id).or_insert_with(|| Buffer {
            first: now,
            data: Vec::new(),
            keys: Vec::new(),
        });
        if buf.data.len() >= MAX_BUFFERED {
            self.dropped += 1;
            return None;
        }
        if buf.data.is_empty() {
            buf.first = now;
        }
        buf.data.push(data);
        buf.keys.push(key.clone());
        self.seen.insert((id, key));
        let due = c.max_timeout_ns <= 0 || buf.data.len() >= list_limit(c);
        due.then(|| self.send(id, c, now))
    }

    /// The lists whose time has come, and forgets acknowledgements that timed out.
    /// `config` gives each digest's configuration (a digest no longer configured sends what
    /// it buffered).
    pub fn tick(
        &mut self,
        config: &dyn Fn(u32) -> Option<Config>,
        now: Instant,
    ) -> Vec<DigestList> {
        let due: Vec<(u32, Config)> = self
            .buffers
            .iter()
            .filter(|(_, b)| !b.data.is_empty())
            .filter_map(|(&id, b)| {
                let c = config(id).unwrap_or_default();
                (now.duration_since(b.first) >= ns(c.max_timeout_ns)).then_some((id, c))
            })
            .collect();
        let lists = due
            .into_iter()
            .map(|(id, c)| self.send(id, &c, now))
            .collect();
        let expired: Vec<(u32, u64)> = self
            .sent
            .iter()
            .filter(|((id, _), s)| {
                let timeout = config(*id).map_or(Duration::ZERO, |c| ns(c.ack_timeout_ns));
                now.duration_since(s.at) >= timeout
            })
            .map(|(k, _)| *k)
            .collect();
        for k in expired {
            self.forget(k);
        }
        lists
    }

    /// The controller acknowledged list `list_id` of digest `id`: its messages may be sent
    /// again. Returns whether such a list was waiting.
    pub fn ack(&mut self, id: u32, list_id: u64) -> bool {
        self.forget((id, list_id))
    }

    /// When [`Digests::tick`] next has work, if ever.
    pub fn next_deadline(&self, config: &dyn Fn(u32) -> Option<Config>) -> Option<Instant> {
        let buffers = self
            .buffers
            .iter()
            .filter(|(_, b)| !b.data.is_empty())
            .map(|(&id, b)| b.first + ns(config(id).unwrap_or_default().max_timeout_ns));
        let acks = self.sent.iter().map(|((id, _), s)| {
            s.at + config(*id).map_or(Duration::ZERO, |c| ns(c.ack_timeout_ns))
        });
        buffers.chain(acks).min()
    }

    /// Forgets everything waiting and unacknowledged (the primary changed, or the pipeline).
    pub fn clear(&mut self) {
        self.buffers.clear();
        self.seen.clear();
        self.sent.clear();
    }

    fn forget(&mut self, k: (u32, u64)) -> bool {
        match self.sent.remove(&k) {
            Some(s) => {
                for key in s.keys {
                    self.seen.remove(&(k.0, key));
                }
                true
            }
            None => false,
        }
    }

    /// Sends up to a list's worth of digest `id`'s buffer; what does not fit waits for the
    /// next list.
    fn send(&mut self, id: u32, c: &Config, now: Instant) -> DigestList {
        let limit = list_limit(c);
        let buf = self.buffers.get_mut(&id);
        let (data, keys) = match buf {
            Some(b) => {
                let n = b.data.len().min(limit);
                let data: Vec<P4Data> = b.data.drain(..n).collect();
                let keys: Vec<Vec<u8>> = b.keys.drain(..n).collect();
                b.first = now;
                (data, keys)
            }
            None => (Vec::new(), Vec::new()),
        };
        self.next_list += 1;
        let list_id = self.next_list;
        if c.ack_timeout_ns > 0 {
            self.sent.insert((id, list_id), Sent { at: now, keys });
        } else {
            for key in keys {
                self.seen.remove(&(id, key));
            }
        }
        let timestamp = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        DigestList {
            digest_id: id,
            list_id,
            data,
            timestamp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koi_proto::p4runtime::p4_data::Data;

    fn d(v: u8) -> P4Data {
        P4Data {
            data: Some(Data::Bitstring(vec![v])),
        }
    }

    fn cfg(timeout_ms: i64, size: i32, ack_ms: i64) -> Config {
        Config {
            max_timeout_ns: timeout_ms * 1_000_000,
            max_list_size: size,
            ack_timeout_ns: ack_ms * 1_000_000,
        }
    }

    #[test]
    fn a_full_list_goes_at_once_and_duplicates_wait_for_the_ack() {
        let c = cfg(1000, 2, 1000);
        let t0 = Instant::now();
        let mut e = Digests::default();
        assert!(e.push(7, Some(&c), d(1), t0).is_none());
        assert!(
            e.push(7, Some(&c), d(1), t0).is_none(),
            "duplicate in the buffer"
        );
        let l = e.push(7, Some(&c), d(2), t0).expect("two distinct: a list");
        assert_eq!((l.digest_id, l.data.len()), (7, 2));
        assert!(e.push(7, Some(&c), d(1), t0).is_none(), "sent, not acked");
        assert_eq!(e.duplicates, 2);
        assert!(e.ack(7, l.list_id));
        assert!(!e.ack(7, l.list_id), "acked once");
        assert!(e.push(7, Some(&c), d(1), t0).is_none(), "buffered again");
        let l2 = e.push(7, Some(&c), d(3), t0).unwrap();
        assert!(l2.list_id > l.list_id);
        assert_eq!(l2.data, vec![d(1), d(3)]);
    }

    #[test]
    fn the_timeout_sends_a_partial_list_and_unacked_lists_expire() {
        let c = cfg(10, 100, 50);
        let conf = |_| Some(c);
        let t0 = Instant::now();
        let mut e = Digests::default();
        e.push(1, Some(&c), d(1), t0);
        assert!(e.tick(&conf, t0 + Duration::from_millis(5)).is_empty());
        assert_eq!(e.next_deadline(&conf), Some(t0 + Duration::from_millis(10)));
        let lists = e.tick(&conf, t0 + Duration::from_millis(10));
        assert_eq!(lists.len(), 1);
        assert_eq!(lists[0].data, vec![d(1)]);
        let t1 = t0 + Duration::from_millis(10);
        assert_eq!(e.next_deadline(&conf), Some(t1 + Duration::from_millis(50)));
        assert!(e.push(1, Some(&c), d(1), t1).is_none());
        e.tick(&conf, t1 + Duration::from_millis(50));
        assert_eq!(e.next_deadline(&conf), None, "the unacked list expired");
        e.push(1, Some(&c), d(1), t1 + Duration::from_millis(51));
        assert!(
            e.next_deadline(&conf).is_some(),
            "the same data is news again"
        );
    }

    #[test]
    fn zero_timeout_or_size_one_sends_each_message_and_no_ack_timeout_keeps_no_cache() {
        let mut e = Digests::default();
        let t = Instant::now();
        let c = cfg(0, 10, 0);
        assert_eq!(e.push(1, Some(&c), d(1), t).unwrap().data.len(), 1);
        assert_eq!(
            e.push(1, Some(&c), d(1), t).unwrap().data.len(),
            1,
            "ack timeout 0: nothing is remembered"
        );
        let c = cfg(1000, 1, 1000);
        assert!(e.push(2, Some(&c), d(1), t).is_some());
        assert!(e.push(2, Some(&c), d(1), t).is_none());
        assert!(e.push(3, None, d(1), t).is_none());
        assert_eq!(e.dropped, 1, "an unconfigured digest");
    }

    #[test]
    fn max_list_size_zero_means_no_limit_but_the_timeout() {
        let mut e = Digests::default();
        let t = Instant::now();
        let c = cfg(5, 0, 0);
        for v in 0..100u8 {
            assert!(e.push(1, Some(&c), d(v), t).is_none());
        }
        let lists = e.tick(&|_| Some(c), t + Duration::from_millis(5));
        assert_eq!(lists.len(), 1);
        assert_eq!(lists[0].data.len(), 100);
    }
}
