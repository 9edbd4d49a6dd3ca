//! Idle-timeout notifications (spec "Table Idle Timeout Notification"): the entries of tables
//! with `support_timeout` whose `idle_timeout_ns` has passed since their last hit.
//!
//! An entry is idle at `now_ns` when its timeout is set and at least that long has passed
//! since it was last hit (or added) and since it was last notified. Notifying restarts its
//! idle time, as the spec asks ("a new notification will be generated after another TTL if
//! the entry is not hit"), without changing the `time_since_last_hit` reads show: koi-state
//! keeps the time of the last notification apart ([`koi_state::Entry::idle_notified_ns`]),
//! and a hit makes it irrelevant since only the later of the two counts.

use crate::table_read::{Want, entry_message};
use crate::target::Target;
use koi_proto::p4runtime::TableEntry;
use koi_state::State;

/// Entries idle for longer than their idle_timeout_ns at `now_ns` that were not yet notified
/// since their last hit (or since their last notification, one timeout ago), as TableEntry
/// messages (as Read would return them, with idle_timeout_ns set); marks them notified.
pub fn idle_notifications(t: &mut Target, s: &mut State, now_ns: u64) -> Vec<TableEntry> {
    let mut out = Vec::new();
    let mut marks = Vec::new();
    for info in t.schema.tables.iter().filter(|i| i.support_timeout) {
        let Some(tb) = s.table_by_id(info.table) else {
            continue;
        };
        for e in tb.entries() {
            let Some(ttl) = e.timeout_ns.filter(|x| *x > 0) else {
                continue;
            };
            let since = e.last_hit_ns.max(e.idle_notified_ns.unwrap_or(0));
            if now_ns.saturating_sub(since) >= ttl {
                out.push(entry_message(t, s, info, e, Want::default()));
                marks.push((info.table, e.handle));
            }
        }
    }
    for (table, handle) in marks {
        if let Ok(mut e) = s.table_entry_mut(table, handle) {
            e.set_idle_notified_ns(Some(now_ns));
        }
    }
    out
}
