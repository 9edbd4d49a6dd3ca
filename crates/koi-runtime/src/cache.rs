//! The flow caches of the poll threads, seen from the rest of the switch: the invalidation log
//! that keeps every thread's caches consistent with the control plane, and the snapshots of
//! cache sizes and counters the threads publish for `koi ctl cache_show` and the metrics. Each
//! [`crate::Image`] (a program loaded into a pipeline) has one log and one board: a new image
//! starts with empty caches.
//!
//! **Consistency.** Every poll thread owns a [`Datapath`] per image with its own microflow and
//! megaflow caches, and the image's runtime [`koi_state::State`] sits behind one mutex. The control
//! plane ([`crate::Image::update`]) changes the state under that mutex and, before releasing it,
//! appends what it changed to the [`InvalidationLog`] (a table, or "everything"), which bumps the
//! log's epoch. A poll thread, holding the same mutex for a packet, compares the epoch with the one
//! it has caught up to and first applies every change since ([`Datapath::on_table_write`] or
//! [`Datapath::invalidate_all`]); so once a change has returned (`koi ctl`'s answer, a P4Runtime
//! `Write`'s response), the next packet of every thread is processed with caches that hold nothing
//! computed from the old state. The epoch is an atomic, so a thread that is up to date pays one
//! load per packet; the log keeps the last [`LOG_LEN`] changes, and a thread that fell further
//! behind flushes its caches.
//!
//! **Snapshots.** [`Datapath::cache_info`] walks the caches, so the threads do not compute it
//! per packet: each publishes a [`Snapshot`] about every [`PUBLISH_EVERY`] and whenever
//! `cache_show` asks for a fresh one ([`CacheBoard::fresh`]). `dump_flows` asks the same way
//! for each thread's megaflows ([`CacheBoard::dump_flows`]), which the thread lists at its next
//! pass through the poll loop.

use crate::lock;
use koi_datapath::{CacheInfo, Datapath, DatapathConfig, DatapathStats};
use koi_ir::TableId;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How many changes the invalidation log remembers.
pub const LOG_LEN: usize = 1024;
/// How often a poll thread refreshes its snapshot without being asked.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(100);
/// How long `cache_show` waits for the threads' fresh snapshots.
const FRESH_WAIT: Duration = Duration::from_millis(500);

/// What a control-plane command changed, as far as the flow caches care.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Change {
    /// Entries or the default action of one table.
    Table(TableId),
    /// One entry of a table (its index): its action, parameters or direct meter, or its
    /// removal; only the flows that hit it are suspect.
    Entry(TableId, u32),
    /// What misses a table: its default action, or a new entry of a table whose keys are
    /// all exact; only the flows that missed it are suspect.
    Misses(TableId),
    /// Anything else (or a table that could not be named): every cached flow is suspect.
    All,
}

/// The changes made by the control plane, shared by the control socket (which appends, while
/// holding the state lock) and the poll threads (which catch up).
#[derive(Debug, Default)]
pub struct InvalidationLog {
    epoch: AtomicU64,
    /// The last changes, each with the epoch it started.
    recent: Mutex<VecDeque<(u64, Change)>>,
}

impl InvalidationLog {
    /// Appends `change`; call with the state lock held, after the state changed and before the
    /// lock is released.
    pub fn record(&self, change: Change) {
        let mut recent = lock(&self.recent);
        let epoch = self.epoch.load(Ordering::Acquire) + 1;
        if recent.len() >= LOG_LEN {
            recent.pop_front();
        }
        recent.push_back((epoch, change));
        self.epoch.store(epoch, Ordering::Release);
    }

    /// The number of changes recorded so far.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Brings `dp` up to date from epoch `seen`; returns the epoch it is now at. Called with
    /// the state lock held before each packet (which is what makes a change visible to the
    /// next packet), and without it by an idle thread.
    #[inline]
    pub fn catch_up(&self, seen: u64, dp: &mut Datapath<'_>) -> u64 {
        if self.epoch.load(Ordering::Acquire) == seen {
            return seen;
        }
        self.apply_since(seen, &mut |c| match c {
            Change::Table(t) => dp.on_table_write(t),
            Change::Entry(t, i) => dp.on_entry_write(t, i),
            Change::Misses(t) => dp.on_table_misses(t),
            Change::All => dp.invalidate_all(),
        })
    }

    /// Calls `apply` for every change after epoch `seen`, or once with [`Change::All`] when
    /// some of them are no longer remembered or one of them is [`Change::All`]; returns the
    /// epoch reached.
    fn apply_since(&self, seen: u64, apply: &mut dyn FnMut(Change)) -> u64 {
        let recent = lock(&self.recent);
        let now = self.epoch.load(Ordering::Acquire);
        if now == seen {
            return now;
        }
        let forgotten = recent.front().is_none_or(|&(first, _)| first > seen + 1);
        let changes = recent.iter().filter(|&&(e, _)| e > seen).map(|&(_, c)| c);
        if forgotten || changes.clone().any(|c| c == Change::All) {
            apply(Change::All);
        } else {
            changes.for_each(apply);
        }
        now
    }
}

/// What one poll thread last published.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub info: CacheInfo,
    pub stats: DatapathStats,
    /// Why megaflows got no compiled program (their hits replay the interpreter), with how
    /// many.
    pub replayed: std::collections::BTreeMap<&'static str, u64>,
    /// The invalidation log's epoch the caches had caught up with.
    pub seen: u64,
    /// The `cache_show` request this snapshot answers (see [`CacheBoard::fresh`]).
    request: u64,
    taken: Instant,
}

/// The poll threads' snapshots; `config` is `None` under `--no-cache`.
#[derive(Debug)]
pub struct CacheBoard {
    pub config: Option<DatapathConfig>,
    threads: Vec<Mutex<Option<Snapshot>>>,
    requests: AtomicU64,
    /// `dump_flows` requests: (request number, how many megaflows), and each thread's answer
    /// (the request it answers, its megaflows as `Datapath::dump_flows` shows them).
    dump_request: Mutex<(u64, usize)>,
    dumps: Vec<Mutex<(u64, Vec<String>)>>,
}

impl CacheBoard {
    pub fn new(config: Option<DatapathConfig>, threads: usize) -> CacheBoard {
        CacheBoard {
            config,
            threads: (0..threads).map(|_| Mutex::new(None)).collect(),
            requests: AtomicU64::new(0),
            dump_request: Mutex::new((0, 0)),
            dumps: (0..threads).map(|_| Mutex::new((0, Vec::new()))).collect(),
        }
    }

    /// Asks every thread for its megaflows (at most `limit` each) and waits a bounded time
    /// for the answers; `None` for a thread that did not answer in time.
    pub fn dump_flows(&self, limit: usize) -> Vec<Option<Vec<String>>> {
        let want = {
            let mut r = lock(&self.dump_request);
            *r = (r.0 + 1, limit);
            r.0
        };
        // Wake the threads' publishers too.
        self.requests.fetch_add(1, Ordering::AcqRel);
        let deadline = Instant::now() + FRESH_WAIT;
        loop {
            let done = self.dumps.iter().all(|d| lock(d).0 >= want);
            if done || Instant::now() >= deadline {
                return self
                    .dumps
                    .iter()
                    .map(|d| {
                        let d = lock(d);
                        (d.0 >= want).then(|| d.1.clone())
                    })
                    .collect();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The latest snapshot of every thread (`None`: not published yet).
    pub fn snapshots(&self) -> Vec<Option<Snapshot>> {
        self.threads.iter().map(|s| lock(s).clone()).collect()
    }

    /// Asks every thread for a new snapshot and waits (a bounded time) until all have
    /// published one; returns the snapshots, some possibly older if a thread was busy.
    pub fn fresh(&self) -> Vec<Option<Snapshot>> {
        let want = self.requests.fetch_add(1, Ordering::AcqRel) + 1;
        let deadline = Instant::now() + FRESH_WAIT;
        loop {
            let snaps = self.snapshots();
            let done = snaps
                .iter()
                .all(|s| s.as_ref().is_some_and(|s| s.request >= want));
            if done || Instant::now() >= deadline {
                return snaps;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// A poll thread's side of the board.
pub struct Publisher<'a> {
    board: &'a CacheBoard,
    thread: usize,
    last: Option<Instant>,
    served: u64,
}

impl<'a> Publisher<'a> {
    pub fn new(board: &'a CacheBoard, thread: usize) -> Publisher<'a> {
        Publisher {
            board,
            thread,
            last: None,
            served: 0,
        }
    }

    /// Publishes `dp`'s sizes and counters, up to date with epoch `seen`, if asked to or if
    /// the last snapshot is old (or `now` is set: the thread is stopping).
    pub fn tick(&mut self, dp: &Datapath<'_>, seen: u64, now: bool) {
        let (dump_want, dump_limit) = *lock(&self.board.dump_request);
        if let Some(slot) = self.board.dumps.get(self.thread) {
            let mut d = lock(slot);
            if d.0 < dump_want {
                *d = (dump_want, dp.dump_flows(dump_limit));
            }
        }
        let want = self.board.requests.load(Ordering::Acquire);
        let due = self.last.is_none_or(|t| t.elapsed() >= PUBLISH_EVERY);
        if !(now || due || want != self.served) {
            return;
        }
        let taken = Instant::now();
        let snap = Snapshot {
            info: dp.cache_info(),
            stats: dp.stats(),
            replayed: dp.not_compiled_reasons().clone(),
            seen,
            request: want,
            taken,
        };
        if let Some(slot) = self.board.threads.get(self.thread) {
            *lock(slot) = Some(snap);
        }
        self.last = Some(taken);
        self.served = want;
    }
}

/// The megaflows without a compiled program (each hit replays the interpreter), as
/// [`Datapath::not_compiled_reasons`] gives them: their number and `reason (n), ...`; `None`
/// if there are none.
pub fn replays(reasons: &std::collections::BTreeMap<&'static str, u64>) -> Option<(u64, String)> {
    let why: Vec<String> = reasons.iter().map(|(r, n)| format!("{r} ({n})")).collect();
    (!why.is_empty()).then(|| (reasons.values().sum(), why.join(", ")))
}

/// `part` as a percentage of `whole`.
fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// Adds two snapshots' numbers (for the total over threads).
fn add(a: &mut Snapshot, b: &Snapshot) {
    let (x, y) = (&mut a.info, &b.info);
    x.megaflows += y.megaflows;
    x.max_megaflows += y.max_megaflows;
    x.compiled += y.compiled;
    x.guarded += y.guarded;
    x.guarded_programs += y.guarded_programs;
    x.subtables += y.subtables;
    x.microflows += y.microflows;
    x.microflow_capacity += y.microflow_capacity;
    x.microflow_bypassed |= y.microflow_bypassed;
    x.signature_capacity += y.signature_capacity;
    x.memory_bytes += y.memory_bytes;
    x.on_probation += y.on_probation;
    x.evictions += y.evictions;
    x.probation_evictions += y.probation_evictions;
    let (x, y) = (&mut a.stats, &b.stats);
    x.microflow_hits += y.microflow_hits;
    x.megaflow_hits += y.megaflow_hits;
    x.signature_hits += y.signature_hits;
    x.microflow_bypassed += y.microflow_bypassed;
    x.compiled_hits += y.compiled_hits;
    x.misses += y.misses;
    x.uncacheable += y.uncacheable;
    x.installs += y.installs;
    x.memo_hits += y.memo_hits;
    x.invalidated += y.invalidated;
    x.upcalls_limited += y.upcalls_limited;
    x.packets += y.packets;
    for (why, n) in &b.replayed {
        *a.replayed.entry(why).or_default() += n;
    }
}

/// One snapshot as `cache_show` prints it.
fn render_one(out: &mut String, s: &Snapshot) {
    let (i, st) = (&s.info, &s.stats);
    let p = st.packets;
    let hits = st.microflow_hits + st.megaflow_hits;
    let _ = writeln!(
        out,
        "  megaflows        {} / {} (compiled {})",
        i.megaflows, i.max_megaflows, i.compiled
    );
    if i.guarded > 0 {
        let _ = writeln!(
            out,
            "  guarded          {} (decisions on state), {} programs",
            i.guarded, i.guarded_programs
        );
    }
    if i.evictions > 0 || i.on_probation > 0 {
        let _ = writeln!(
            out,
            "  evicted          {} ({} new, never hit again; {} established); {} new now",
            i.evictions,
            i.probation_evictions,
            i.evictions - i.probation_evictions,
            i.on_probation
        );
    }
    let _ = writeln!(out, "  subtables        {}", i.subtables);
    let _ = writeln!(
        out,
        "  microflows       {} / {}{}",
        i.microflows,
        i.microflow_capacity,
        if i.microflow_bypassed {
            " (bypassed: too few hits)"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "  signatures       {}", i.signature_capacity);
    let _ = writeln!(out, "  memory           {} bytes", i.memory_bytes);
    let _ = writeln!(out, "  packets          {p}");
    let _ = writeln!(out, "  hits             {hits} ({})", pct(hits, p));
    for (name, v) in [
        ("microflow hits", st.microflow_hits),
        ("megaflow hits", st.megaflow_hits),
        ("signature hits", st.signature_hits),
        ("compiled hits", st.compiled_hits),
        ("misses", st.misses),
        ("upcalls limited", st.upcalls_limited),
    ] {
        let _ = writeln!(out, "  {name:<16} {v} ({})", pct(v, p));
    }
    for (name, v) in [
        ("uncacheable", st.uncacheable),
        ("installs", st.installs),
        ("from the memo", st.memo_hits),
        ("invalidated", st.invalidated),
    ] {
        let _ = writeln!(out, "  {name:<16} {v}");
    }
    // Megaflows installed without a compiled program: each hit replays the interpreter.
    if let Some((n, why)) = replays(&s.replayed) {
        let _ = writeln!(out, "  replayed         {n}: {why}");
    }
}

/// The text of `koi ctl cache_show` for `snaps` (one per poll thread), after `epoch`
/// control-plane changes.
pub fn render(config: Option<&DatapathConfig>, epoch: u64, snaps: &[Option<Snapshot>]) -> String {
    let Some(cfg) = config else {
        return "cache: off (koi run --no-cache): every packet runs through the interpreter\n"
            .into();
    };
    let mut out = String::new();
    let rate = match cfg.upcall_rate {
        0 => "as the slow path sustains (queued per port)".to_string(),
        r => format!("{r}/s (burst {})", cfg.upcall_burst),
    };
    let micro = if cfg.microflow {
        format!("{} entries", cfg.microflow_entries)
    } else {
        "off".into()
    };
    let _ = writeln!(
        out,
        "cache: per thread: max megaflows {}, microflow {micro}, upcall rate {rate}",
        cfg.max_megaflows
    );
    let _ = writeln!(out, "control-plane changes: {epoch}");
    let mut total: Option<Snapshot> = None;
    for (t, s) in snaps.iter().enumerate() {
        let Some(s) = s else {
            let _ = writeln!(out, "thread {t}: not started");
            continue;
        };
        let age = s.taken.elapsed().as_millis();
        let _ = writeln!(
            out,
            "thread {t} (as of {age} ms ago, after {} changes)",
            s.seen
        );
        render_one(&mut out, s);
        match &mut total {
            Some(tot) => add(tot, s),
            None => total = Some(s.clone()),
        }
    }
    if snaps.len() > 1
        && let Some(tot) = &total
    {
        let _ = writeln!(out, "total");
        render_one(&mut out, tot);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use koi_ir::entity::EntityId;

    fn replay(log: &InvalidationLog, seen: u64) -> (u64, Vec<Change>) {
        let mut got = Vec::new();
        let now = log.apply_since(seen, &mut |c| got.push(c));
        (now, got)
    }

    #[test]
    fn a_thread_catches_up_with_the_tables_written_since_its_epoch() {
        let log = InvalidationLog::default();
        assert_eq!(log.epoch(), 0);
        let (a, b) = (TableId::new(0), TableId::new(3));
        log.record(Change::Table(a));
        log.record(Change::Table(b));
        assert_eq!(log.epoch(), 2);
        assert_eq!(
            replay(&log, 0),
            (2, vec![Change::Table(a), Change::Table(b)])
        );
        assert_eq!(replay(&log, 1), (2, vec![Change::Table(b)]));
        log.record(Change::All);
        log.record(Change::Table(a));
        // An `All` among the changes flushes everything once.
        assert_eq!(replay(&log, 1), (4, vec![Change::All]));
        assert_eq!(replay(&log, 3), (4, vec![Change::Table(a)]));
    }

    #[test]
    fn a_thread_that_fell_behind_the_log_flushes_everything() {
        let log = InvalidationLog::default();
        for _ in 0..LOG_LEN + 5 {
            log.record(Change::Table(TableId::new(1)));
        }
        let now = (LOG_LEN + 5) as u64;
        assert_eq!(replay(&log, 0), (now, vec![Change::All]));
        assert_eq!(replay(&log, 4), (now, vec![Change::All]));
        assert_eq!(
            replay(&log, 5).1.len(),
            LOG_LEN,
            "the oldest remembered change is epoch 6"
        );
    }

    #[test]
    fn cache_show_prints_rates_and_a_total_for_several_threads() {
        let cfg = DatapathConfig::default();
        let mut s = Snapshot {
            info: CacheInfo {
                megaflows: 3,
                max_megaflows: 10,
                ..CacheInfo::default()
            },
            stats: DatapathStats::default(),
            replayed: Default::default(),
            seen: 2,
            request: 0,
            taken: Instant::now(),
        };
        s.stats.packets = 4;
        s.stats.microflow_hits = 2;
        s.stats.megaflow_hits = 1;
        s.stats.misses = 1;
        let one = render(Some(&cfg), 3, &[Some(s.clone())]);
        assert!(
            one.contains("control-plane changes: 3\nthread 0 (as of "),
            "{one}"
        );
        assert!(one.contains(" ms ago, after 2 changes)\n"), "{one}");
        assert!(one.contains("  megaflows        3 / 10"), "{one}");
        assert!(one.contains("  hits             3 (75.0%)"), "{one}");
        assert!(one.contains("  misses           1 (25.0%)"), "{one}");
        assert!(!one.contains("total"), "{one}");
        assert!(!one.contains("replayed"), "{one}");
        assert!(!one.contains("guarded"), "{one}");
        assert!(!one.contains("evicted"), "{one}");
        s.replayed.insert("resubmit", 2);
        s.info.evictions = 5;
        s.info.probation_evictions = 4;
        s.info.on_probation = 1;
        s.info.guarded = 1;
        s.info.guarded_programs = 3;
        let two = render(Some(&cfg), 0, &[Some(s.clone()), Some(s), None]);
        assert!(two.contains("total\n  megaflows        6 / 20"), "{two}");
        assert!(
            two.contains("  replayed         2: resubmit (2)\n"),
            "{two}"
        );
        assert!(
            two.contains("  replayed         4: resubmit (4)\n"),
            "{two}"
        );
        assert!(two.contains("thread 2: not started"), "{two}");
        assert!(
            two.contains(
                "  evicted          10 (8 new, never hit again; 2 established); 2 new now\n"
            ),
            "{two}"
        );
        assert!(
            two.contains("total\n  megaflows        6 / 20 (compiled 0)\n  guarded          2 (decisions on state), 6 programs\n"),
            "{two}"
        );
        assert!(render(None, 0, &[]).starts_with("cache: off"));
    }
}
