//! Time for meters, idle timeouts and timestamps, from an injectable clock so that tests and
//! traces are deterministic.
//!
//! Time is nanoseconds since an origin (the switch start); BMv2 computes meters and
//! timestamps in microseconds from its start, which consumers get by dividing by 1000.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A source of the current time.
pub trait Clock {
    /// Nanoseconds since the clock's origin.
    fn now_ns(&self) -> u64;
}

/// A clock that only moves when told to (tests, replays, STF runs).
#[derive(Debug, Default)]
pub struct ManualClock {
    ns: AtomicU64,
}

impl ManualClock {
    /// A clock reading `ns`.
    pub fn new(ns: u64) -> ManualClock {
        ManualClock {
            ns: AtomicU64::new(ns),
        }
    }

    /// Sets the time.
    pub fn set_ns(&self, ns: u64) {
        self.ns.store(ns, Ordering::Relaxed);
    }

    /// Moves the time forward by `ns` (saturating).
    pub fn advance_ns(&self, ns: u64) {
        let now = self.ns.load(Ordering::Relaxed);
        self.ns.store(now.saturating_add(ns), Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.ns.load(Ordering::Relaxed)
    }
}

/// Wall-clock time since the clock was created (a running switch).
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    start: Instant,
}

impl SystemClock {
    pub fn new() -> SystemClock {
        SystemClock {
            start: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(5);
        assert_eq!(c.now_ns(), 5);
        c.advance_ns(10);
        assert_eq!(c.now_ns(), 15);
        c.advance_ns(u64::MAX);
        assert_eq!(c.now_ns(), u64::MAX);
        c.set_ns(1);
        assert_eq!(c.now_ns(), 1);
        let s = SystemClock::new();
        assert!(s.now_ns() <= s.now_ns());
    }
}
