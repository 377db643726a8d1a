//! The session clock. Session deadlines are kept in clock milliseconds, so a
//! test can later swap real time for time it advances by hand.

use std::fmt::Debug;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A source of time for session expiry and node timestamps.
pub(crate) trait Clock: Send + Sync + Debug + 'static {
    /// Monotonic milliseconds, for session deadlines.
    fn now_ms(&self) -> u64;
    /// Wall-clock milliseconds since the Unix epoch, for ctime and mtime.
    fn wall_ms(&self) -> i64;
}

/// Real time: deadlines follow `Instant`, timestamps follow `SystemTime`.
#[derive(Debug)]
pub(crate) struct SystemClock {
    start: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock {
            start: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn wall_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}
