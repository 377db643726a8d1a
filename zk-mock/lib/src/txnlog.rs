//! The transaction log's syncs, for the commit latency (`core/commit.rs`):
//! when a txn is durable, and the thread that times the syncs. ZooKeeper's
//! `SyncRequestProcessor` syncs as soon as its queue is drained, and what
//! arrives while a sync runs waits for the next one, which covers all of it
//! (group commit).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::fault::Verdict;
use crate::proto::{Request, RequestError};

/// The transaction log's syncs: how long one takes, the last one
/// scheduled, and the thread that times them.
///
/// The syncs are timed by a thread of their own, as ZooKeeper's are by
/// `SyncRequestProcessor`'s: the runtime's timers count whole
/// milliseconds, and a sync takes a fraction of one. The thread starts
/// with the first sync and ends with the server.
#[derive(Debug)]
pub(crate) struct Syncs {
    latency: Duration,
    /// The last scheduled sync (0: none yet).
    last: u64,
    /// When the last scheduled sync starts: a txn that reaches the log
    /// before then is in its batch.
    start: Instant,
    /// When the last scheduled sync ends.
    end: Instant,
    /// Shared with the thread.
    log: Arc<Log>,
    /// What waits for a sync watches this: the last sync that ended.
    done: watch::Receiver<u64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the syncing thread shares with the state.
#[derive(Debug)]
struct Log {
    queue: Mutex<Queue>,
    more: Condvar,
    done: watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct Queue {
    /// Syncs scheduled and not yet ended, in order: which, and when it ends.
    due: VecDeque<(u64, Instant)>,
    stop: bool,
}

/// What a txn waits for: the end of its batch's sync.
#[derive(Debug, Clone)]
pub(crate) struct Synced {
    sync: u64,
    done: watch::Receiver<u64>,
}

impl Synced {
    /// Resolves once the sync has ended (or the server is gone).
    pub(crate) async fn wait(mut self) {
        let _ = self.done.wait_for(|d| *d >= self.sync).await;
    }

    /// Whether the sync has ended.
    pub(crate) fn is_done(&self) -> bool {
        *self.done.borrow() >= self.sync
    }
}

/// A request judged and not yet applied: a write waiting for its sync, or
/// any request behind one on its connection.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) xid: i32,
    pub(crate) op: i32,
    pub(crate) req: Result<Request, RequestError>,
    /// What the fault rules said when it came.
    pub(crate) verdict: Option<Verdict>,
    pub(crate) path: Option<String>,
    /// The sync a write waits for (None: a read, or a write whose sync
    /// ended, ready once what is before it is applied).
    pub(crate) sync: Option<Synced>,
}

impl Pending {
    /// Whether it may be applied once what is before it is.
    pub(crate) fn ready(&self) -> bool {
        self.sync.as_ref().is_none_or(Synced::is_done)
    }
}

impl Syncs {
    pub(crate) fn new(latency: Duration) -> Syncs {
        let now = Instant::now();
        let (done_tx, done) = watch::channel(0);
        Syncs {
            latency,
            last: 0,
            start: now,
            end: now,
            log: Arc::new(Log {
                queue: Mutex::new(Queue::default()),
                more: Condvar::new(),
                done: done_tx,
            }),
            done,
            thread: None,
        }
    }

    /// The sync that makes a txn reaching the log at `now` durable (None
    /// with no latency: it is at once). With no sync running, it starts one
    /// now. While one runs, it joins the next: one that starts when the
    /// running one ends, scheduled by the first txn to wait for it.
    pub(crate) fn durable_after(&mut self, now: Instant) -> Option<Synced> {
        if self.latency.is_zero() {
            return None;
        }
        let new = if now >= self.end {
            self.start = now;
            self.end = now + self.latency;
            true
        } else if now >= self.start {
            self.start = self.end;
            self.end += self.latency;
            true
        } else {
            false
        };
        if new {
            self.last += 1;
            self.schedule(self.last, self.end);
        }
        Some(Synced {
            sync: self.last,
            done: self.done.clone(),
        })
    }

    /// Hands a sync to the thread (started on the first).
    fn schedule(&mut self, sync: u64, end: Instant) {
        lock(&self.log.queue).due.push_back((sync, end));
        self.log.more.notify_one();
        if self.thread.is_none() {
            let log = Arc::clone(&self.log);
            let spawned = std::thread::Builder::new()
                .name("zk-mock-sync".into())
                .spawn(move || log.run());
            match spawned {
                Ok(t) => self.thread = Some(t),
                Err(e) => {
                    // No thread: every sync ends at once.
                    tracing::warn!(%e, "cannot start the sync thread; writes commit at once");
                    self.latency = Duration::ZERO;
                    self.log.done.send_replace(u64::MAX);
                }
            }
        }
    }

    /// A new latency, for txns from now on (those waiting keep theirs).
    pub(crate) fn set_latency(&mut self, latency: Duration) {
        self.latency = latency;
        let now = Instant::now();
        self.start = self.start.min(now);
        self.end = self.end.min(now);
    }
}

impl Drop for Syncs {
    fn drop(&mut self) {
        lock(&self.log.queue).stop = true;
        self.log.more.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Log {
    /// The syncing thread: each scheduled sync ends at its time, in order.
    /// A server that stops meanwhile ends it at once.
    fn run(&self) {
        let mut q = lock(&self.queue);
        loop {
            if q.stop {
                return;
            }
            let Some(&(sync, end)) = q.due.front() else {
                q = self.more.wait(q).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let now = Instant::now();
            if end > now {
                q = self
                    .more
                    .wait_timeout(q, end - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
            q.due.pop_front();
            self.done.send_replace(sync);
        }
    }
}

/// The core's `lock`, for this leaf: a panic while holding it leaves the
/// queue as good as it was.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Duration = Duration::from_micros(300);

    fn sync(s: &mut Syncs, at: Instant) -> u64 {
        s.durable_after(at).expect("a latency").sync
    }

    #[test]
    fn no_latency_is_at_once() {
        let mut s = Syncs::new(Duration::ZERO);
        assert!(s.durable_after(Instant::now()).is_none());
        assert!(s.thread.is_none());
    }

    #[test]
    fn writes_during_a_sync_share_the_next() {
        let t0 = Instant::now() + Duration::from_secs(3600);
        let mut s = Syncs::new(L);
        assert_eq!(sync(&mut s, t0), 1);
        // Two arrivals while the first sync runs: both in the second batch.
        assert_eq!(sync(&mut s, t0 + L / 3), 2);
        assert_eq!(sync(&mut s, t0 + L / 2), 2);
        assert_eq!(s.end, t0 + 2 * L);
        // Once the second batch's sync has begun, a third batch.
        assert_eq!(sync(&mut s, t0 + L + L / 4), 3);
        // Exactly at a sync's end: that sync is over, the next has begun.
        assert_eq!(sync(&mut s, t0 + 2 * L), 4);
        assert_eq!(s.end, t0 + 4 * L);
        // Long after: one sync from its own arrival.
        let t1 = t0 + 100 * L;
        assert_eq!(sync(&mut s, t1), 5);
        assert_eq!(s.end, t1 + L);
    }

    #[tokio::test]
    async fn a_sync_ends_after_the_latency() {
        let mut s = Syncs::new(Duration::from_millis(20));
        let begun = Instant::now();
        let first = s.durable_after(begun).expect("a latency");
        let second = s.durable_after(Instant::now()).expect("a latency");
        first.wait().await;
        assert!(begun.elapsed() >= Duration::from_millis(20));
        second.wait().await;
        assert!(begun.elapsed() >= Duration::from_millis(40));
    }

    #[test]
    fn a_new_latency_applies_to_later_writes() {
        let mut s = Syncs::new(L);
        let t0 = Instant::now();
        s.durable_after(t0);
        s.set_latency(Duration::ZERO);
        assert!(s.durable_after(t0).is_none());
        s.set_latency(L);
        let t1 = Instant::now();
        assert_eq!(sync(&mut s, t1), 2);
        assert!(s.end >= t1 + L);
    }
}
