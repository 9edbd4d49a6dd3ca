//! Reopening a port whose interface vanished: attempts spaced by an exponential backoff from
//! 100 ms to 5 s, restarted from the shortest wait each time the port is lost again.

use std::fmt::Display;
use std::time::{Duration, Instant};

const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// When the next attempt is due and how long the one after it waits.
#[derive(Debug)]
pub(crate) struct Retry {
    at: Instant,
    backoff: Duration,
}

impl Retry {
    pub(crate) fn new() -> Retry {
        Retry {
            at: Instant::now(),
            backoff: BACKOFF_MIN,
        }
    }

    /// The port was just lost: the first attempt is due after the shortest wait.
    pub(crate) fn lost(&mut self) {
        self.backoff = BACKOFF_MIN;
        self.at = Instant::now() + BACKOFF_MIN;
    }

    /// Calls `open` if an attempt is due. Success (logged) restarts the backoff; a failure
    /// (logged at debug level) doubles it.
    pub(crate) fn attempt<T, E: Display>(
        &mut self,
        port: &str,
        open: impl FnOnce() -> Result<T, E>,
    ) -> Option<T> {
        let now = Instant::now();
        if now < self.at {
            return None;
        }
        match open() {
            Ok(t) => {
                tracing::info!(port = %port, "interface is back; port reopened");
                self.backoff = BACKOFF_MIN;
                Some(t)
            }
            Err(e) => {
                tracing::debug!(port = %port, error = %e, "reopen failed");
                self.at = now + self.backoff;
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                None
            }
        }
    }
}
