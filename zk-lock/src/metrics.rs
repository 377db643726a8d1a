//! Per-recipe-instance counters, so the herd effect is visible client-side.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A copy of one recipe instance's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockMetrics {
    /// Watch notifications the waits of this instance received.
    pub notifications: u64,
    /// Times the lock directory's children were read.
    pub children_reads: u64,
    /// Child names those reads returned, in all (the herd forms re-read
    /// about N³/3 of them for N contenders each acquiring once).
    pub children_listed: u64,
    /// Bytes of those names (UTF-8, without framing).
    pub children_bytes: u64,
    /// Acquisitions that succeeded.
    pub acquisitions: u64,
    /// Total time spent in acquire calls (successful or not).
    pub wait_time: Duration,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    notifications: AtomicU64,
    children_reads: AtomicU64,
    children_listed: AtomicU64,
    children_bytes: AtomicU64,
    acquisitions: AtomicU64,
    wait_nanos: AtomicU64,
}

impl Counters {
    pub(crate) fn new() -> Arc<Counters> {
        Arc::new(Counters::default())
    }
    pub(crate) fn notification(&self) {
        self.notifications.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn children_read(&self, names: &[String]) {
        self.children_reads.fetch_add(1, Ordering::Relaxed);
        self.children_listed
            .fetch_add(names.len() as u64, Ordering::Relaxed);
        let bytes: usize = names.iter().map(String::len).sum();
        self.children_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }
    pub(crate) fn acquired(&self) {
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn waited(&self, d: Duration) {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.wait_nanos.fetch_add(n, Ordering::Relaxed);
    }
    pub(crate) fn snapshot(&self) -> LockMetrics {
        LockMetrics {
            notifications: self.notifications.load(Ordering::Relaxed),
            children_reads: self.children_reads.load(Ordering::Relaxed),
            children_listed: self.children_listed.load(Ordering::Relaxed),
            children_bytes: self.children_bytes.load(Ordering::Relaxed),
            acquisitions: self.acquisitions.load(Ordering::Relaxed),
            wait_time: Duration::from_nanos(self.wait_nanos.load(Ordering::Relaxed)),
        }
    }
}
