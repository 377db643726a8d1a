//! The session clock. Session deadlines are kept in clock milliseconds, so a
//! test can run sessions on real time (the default) or on time it advances
//! by hand, which makes session expiry deterministic.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Which time the server's sessions follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClockMode {
    /// Real time: sessions expire when their client goes silent for longer
    /// than the timeout, as on a real server. [`ZkMock::advance`](crate::ZkMock::advance)
    /// still jumps the clock forward.
    #[default]
    Real,
    /// Time stands still until [`ZkMock::advance`](crate::ZkMock::advance) moves
    /// it: no session expires on its own, whatever the wall clock does.
    Manual,
}

/// The server's clock: an optional real-time base plus a manual offset.
#[derive(Debug)]
pub(crate) struct Clock {
    mode: ClockMode,
    start: Instant,
    start_wall_ms: i64,
    offset_ms: AtomicU64,
    /// The time a request in progress reads ([`Clock::pin`]), or
    /// [`UNPINNED`]: one request is one instant, as ZooKeeper's txn header
    /// carries one time, and it reads the system clock once.
    pinned_ms: AtomicU64,
}

const UNPINNED: u64 = u64::MAX;

impl Clock {
    /// A clock in `mode` whose wall time starts at `start` (now if `None`).
    pub(crate) fn new(mode: ClockMode, start: Option<SystemTime>) -> Clock {
        let start_wall_ms = unix_ms(start.unwrap_or_else(SystemTime::now));
        Clock {
            mode,
            start: Instant::now(),
            start_wall_ms,
            offset_ms: AtomicU64::new(0),
            pinned_ms: AtomicU64::new(UNPINNED),
        }
    }

    /// Milliseconds since the server started, as sessions see them.
    pub(crate) fn now_ms(&self) -> u64 {
        match self.pinned_ms.load(Ordering::Relaxed) {
            UNPINNED => self.read_ms(),
            pinned => pinned,
        }
    }

    /// Holds the time still at now until [`Clock::unpin`], for one request
    /// applied under the state's lock (nothing advances the clock
    /// meanwhile). False if it was held already: only the caller that
    /// pinned it unpins it.
    pub(crate) fn pin(&self) -> bool {
        if self.pinned_ms.load(Ordering::Relaxed) != UNPINNED {
            return false;
        }
        self.pinned_ms.store(self.read_ms(), Ordering::Relaxed);
        true
    }

    /// Lets the time run again (see [`Clock::pin`]).
    pub(crate) fn unpin(&self) {
        self.pinned_ms.store(UNPINNED, Ordering::Relaxed);
    }

    fn read_ms(&self) -> u64 {
        let base = match self.mode {
            ClockMode::Real => self.start.elapsed().as_millis() as u64,
            ClockMode::Manual => 0,
        };
        base + self.offset_ms.load(Ordering::Relaxed)
    }

    /// Wall-clock milliseconds since the Unix epoch, for ctime and mtime: the
    /// start time plus the session clock, so manual time moves them too.
    pub(crate) fn wall_ms(&self) -> i64 {
        self.start_wall_ms
            .saturating_add(i64::try_from(self.now_ms()).unwrap_or(i64::MAX))
    }

    /// Moves the clock forward.
    pub(crate) fn advance(&self, by: Duration) {
        debug_assert_eq!(self.pinned_ms.load(Ordering::Relaxed), UNPINNED);
        self.offset_ms
            .fetch_add(by.as_millis() as u64, Ordering::Relaxed);
    }

    pub(crate) fn mode(&self) -> ClockMode {
        self.mode
    }
}

/// Milliseconds since the Unix epoch, negative before it (as Java's
/// `System.currentTimeMillis` and a Stat's ctime count them).
fn unix_ms(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_time_moves_only_when_advanced() {
        let c = Clock::new(ClockMode::Manual, None);
        assert_eq!(c.now_ms(), 0);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(c.now_ms(), 0);
        c.advance(Duration::from_millis(1500));
        assert_eq!(c.now_ms(), 1500);
        assert_eq!(c.wall_ms(), c.start_wall_ms + 1500);
    }

    #[test]
    fn a_pinned_clock_reads_one_time_until_unpinned() {
        let c = Clock::new(ClockMode::Real, None);
        c.advance(Duration::from_secs(60));
        assert!(c.pin());
        let pinned = c.now_ms();
        assert!(!c.pin(), "pinned already");
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(c.now_ms(), pinned);
        assert_eq!(c.wall_ms(), c.start_wall_ms + pinned as i64);
        c.unpin();
        assert!(c.now_ms() >= pinned + 20);
    }

    #[test]
    fn wall_time_starts_where_it_is_told() {
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let c = Clock::new(ClockMode::Manual, Some(at));
        assert_eq!(c.wall_ms(), 1_700_000_000_123);
        c.advance(Duration::from_millis(77));
        assert_eq!(c.wall_ms(), 1_700_000_000_200);
        let before = UNIX_EPOCH - Duration::from_millis(1500);
        assert_eq!(Clock::new(ClockMode::Manual, Some(before)).wall_ms(), -1500);
    }

    #[test]
    fn real_time_can_also_jump_forward() {
        let c = Clock::new(ClockMode::Real, None);
        c.advance(Duration::from_secs(60));
        assert!(c.now_ms() >= 60_000);
    }
}
