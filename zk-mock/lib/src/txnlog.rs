//! The transaction log's syncs and the request pipeline's time, for the
//! commit and request latencies (`core/commit.rs`): when a txn is durable,
//! when any request may be answered, and the thread that times them. ZooKeeper's
//! `SyncRequestProcessor` syncs as soon as its queue is drained, and what
//! arrives while a sync runs waits for the next one, which covers all of it
//! (group commit).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::fault::Verdict;
use crate::proto::{Request, RequestError};

/// The transaction log's syncs and the request pipeline's latency: how
/// long each takes, the last sync scheduled, and the thread that times them.
///
/// The times are kept by a thread of their own, as ZooKeeper's syncs are
/// by `SyncRequestProcessor`'s: the runtime's timers count whole
/// milliseconds, and a sync takes a fraction of one. The thread starts
/// with the first deadline and ends with the server.
#[derive(Debug)]
pub(crate) struct Syncs {
    /// How long a sync takes (the commit latency).
    latency: Duration,
    /// How long any request takes through the pipeline besides a sync.
    pipeline: Duration,
    /// When the last scheduled sync starts: a txn that reaches the log
    /// before then is in its batch.
    start: Instant,
    /// When the last scheduled sync ends.
    end: Instant,
    /// Deadlines are kept as nanoseconds since this.
    base: Instant,
    /// Shared with the thread.
    timer: Arc<Timer>,
    /// How many deadlines were handed out: the order of those that pass
    /// together.
    handed: u64,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the timing thread shares with the state.
#[derive(Debug)]
struct Timer {
    queue: Mutex<Queue>,
    more: Condvar,
}

#[derive(Debug, Default)]
struct Queue {
    /// What waits, by deadline and then in the order it came: each has a
    /// channel of its own, told in that order, so the requests of one batch
    /// are woken (and, with one worker thread, applied, unless a task was
    /// woken already for something else) in the order they reached the
    /// log, as ZooKeeper's take their zxids. (One channel
    /// watched by all would wake them in an order tokio draws at random.)
    due: BTreeMap<(u64, u64), watch::Sender<bool>>,
    stop: bool,
}

/// What a request waits for: the end of its batch's sync and of its way
/// through the pipeline.
#[derive(Debug, Clone)]
pub(crate) struct Synced {
    /// The deadline, in nanoseconds since the base (the tests check it).
    #[cfg_attr(not(test), expect(dead_code, reason = "the tests read it"))]
    at: u64,
    passed: watch::Receiver<bool>,
}

impl Synced {
    /// Resolves once the deadline has passed (or the server is gone).
    pub(crate) async fn wait(mut self) {
        let _ = self.passed.wait_for(|p| *p).await;
    }

    /// Whether the deadline has passed (or the server is gone).
    pub(crate) fn is_done(&self) -> bool {
        *self.passed.borrow() || self.passed.has_changed().is_err()
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
    /// The deadline it waits for: a write's sync (and the request latency
    /// after it), or any other request's request latency (None: ready once
    /// what is before it is applied).
    pub(crate) sync: Option<Synced>,
}

impl Pending {
    /// Whether it may be applied once what is before it is.
    pub(crate) fn ready(&self) -> bool {
        self.sync.as_ref().is_none_or(Synced::is_done)
    }
}

impl Syncs {
    pub(crate) fn new(latency: Duration, pipeline: Duration) -> Syncs {
        let now = Instant::now();
        Syncs {
            latency,
            pipeline,
            start: now,
            end: now,
            base: now,
            timer: Arc::new(Timer {
                queue: Mutex::new(Queue::default()),
                more: Condvar::new(),
            }),
            handed: 0,
            thread: None,
        }
    }

    /// When a txn that reaches the log at `now` is durable and through the
    /// pipeline (None with neither latency: at once). With no sync running,
    /// it starts one now. While one runs, it joins the next: one that
    /// starts when the running one ends, scheduled by the first txn to wait
    /// for it.
    pub(crate) fn durable_after(&mut self, now: Instant) -> Option<Synced> {
        if self.latency.is_zero() && self.pipeline.is_zero() {
            return None;
        }
        let synced = if self.latency.is_zero() {
            now
        } else {
            if now >= self.end {
                self.start = now;
                self.end = now + self.latency;
            } else if now >= self.start {
                self.start = self.end;
                self.end += self.latency;
            }
            self.end
        };
        Some(self.at(synced + self.pipeline))
    }

    /// When a request that is not a txn, read at `now`, is through the
    /// pipeline (None with no pipeline latency: at once).
    pub(crate) fn answered_after(&mut self, now: Instant) -> Option<Synced> {
        if self.pipeline.is_zero() {
            return None;
        }
        Some(self.at(now + self.pipeline))
    }

    /// A deadline, handed to the thread (started on the first).
    fn at(&mut self, t: Instant) -> Synced {
        let at =
            u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX);
        let (tx, passed) = watch::channel(false);
        self.handed += 1;
        lock(&self.timer.queue).due.insert((at, self.handed), tx);
        self.timer.more.notify_one();
        if self.thread.is_none() {
            let timer = Arc::clone(&self.timer);
            let base = self.base;
            let spawned = std::thread::Builder::new()
                .name("zk-mock-sync".into())
                .spawn(move || timer.run(base));
            match spawned {
                Ok(t) => self.thread = Some(t),
                Err(e) => {
                    // No thread: every deadline has passed at once.
                    tracing::warn!(%e, "cannot start the sync thread; requests are answered at once");
                    self.latency = Duration::ZERO;
                    self.pipeline = Duration::ZERO;
                    for (_, waiter) in std::mem::take(&mut lock(&self.timer.queue).due) {
                        waiter.send_replace(true);
                    }
                }
            }
        }
        Synced { at, passed }
    }

    /// A new commit latency, for txns from now on (those waiting keep theirs).
    pub(crate) fn set_latency(&mut self, latency: Duration) {
        self.latency = latency;
        let now = Instant::now();
        self.start = self.start.min(now);
        self.end = self.end.min(now);
    }

    /// A new pipeline latency, for requests from now on.
    pub(crate) fn set_pipeline(&mut self, pipeline: Duration) {
        self.pipeline = pipeline;
    }
}

impl Drop for Syncs {
    fn drop(&mut self) {
        lock(&self.timer.queue).stop = true;
        self.timer.more.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Timer {
    /// The timing thread: passes each deadline at its time, earliest
    /// first. A server that stops meanwhile ends it at once.
    fn run(&self, base: Instant) {
        let mut q = lock(&self.queue);
        loop {
            if q.stop {
                return;
            }
            let Some(&(next, _)) = q.due.keys().next() else {
                q = self.more.wait(q).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let now = u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX);
            if next > now {
                q = self
                    .more
                    .wait_timeout(q, Duration::from_nanos(next - now))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
            while let Some(entry) = q.due.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                entry.remove().send_replace(true);
            }
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
    const NONE: Duration = Duration::ZERO;

    /// The deadline of a write reaching the log at `t`, from `s`'s base.
    fn ready(s: &mut Syncs, t: Instant) -> Duration {
        Duration::from_nanos(s.durable_after(t).expect("a latency").at)
    }

    #[test]
    fn no_latency_is_at_once() {
        let mut s = Syncs::new(NONE, NONE);
        assert!(s.durable_after(Instant::now()).is_none());
        assert!(s.answered_after(Instant::now()).is_none());
        assert!(s.thread.is_none());
    }

    #[test]
    fn writes_during_a_sync_share_the_next() {
        let mut s = Syncs::new(L, NONE);
        let t0 = Duration::from_secs(3600);
        let base = s.base;
        let at = |d: Duration| base + t0 + d;
        let t = at(NONE);
        assert_eq!(ready(&mut s, t), t0 + L);
        // Two arrivals while the first sync runs: both in the second batch.
        let t = at(L / 3);
        assert_eq!(ready(&mut s, t), t0 + 2 * L);
        let t = at(L / 2);
        assert_eq!(ready(&mut s, t), t0 + 2 * L);
        // Once the second batch's sync has begun, a third batch.
        let t = at(L + L / 4);
        assert_eq!(ready(&mut s, t), t0 + 3 * L);
        // Exactly at a sync's end: that sync is over, the next has begun.
        let t = at(2 * L);
        assert_eq!(ready(&mut s, t), t0 + 4 * L);
        // Long after: one sync from its own arrival.
        let t = at(100 * L);
        assert_eq!(ready(&mut s, t), t0 + 101 * L);
    }

    #[test]
    fn the_pipeline_adds_to_every_request() {
        let p = Duration::from_micros(100);
        let mut s = Syncs::new(L, p);
        let t0 = Duration::from_secs(3600);
        let t = s.base + t0;
        assert_eq!(ready(&mut s, t), t0 + L + p);
        let read = s.answered_after(t).expect("a pipeline latency");
        assert_eq!(Duration::from_nanos(read.at), t0 + p);
        // With no commit latency, a write takes the pipeline's time alone.
        let mut s = Syncs::new(NONE, p);
        let t = s.base + t0;
        assert_eq!(ready(&mut s, t), t0 + p);
    }

    #[tokio::test]
    async fn deadlines_pass_in_order_after_their_time() {
        let mut s = Syncs::new(Duration::from_millis(20), Duration::from_millis(5));
        let begun = Instant::now();
        let first = s.durable_after(begun).expect("a latency");
        let second = s.durable_after(Instant::now()).expect("a latency");
        let read = s
            .answered_after(Instant::now())
            .expect("a pipeline latency");
        read.clone().wait().await;
        assert!(begun.elapsed() >= Duration::from_millis(5));
        assert!(read.is_done());
        first.wait().await;
        assert!(begun.elapsed() >= Duration::from_millis(25));
        second.wait().await;
        assert!(begun.elapsed() >= Duration::from_millis(45));
    }

    #[test]
    fn a_new_latency_applies_to_later_writes() {
        let mut s = Syncs::new(L, NONE);
        let t0 = Instant::now();
        s.durable_after(t0);
        s.set_latency(NONE);
        assert!(s.durable_after(t0).is_none());
        s.set_latency(L);
        let t1 = Instant::now();
        assert!(ready(&mut s, t1) >= t1.duration_since(s.base) + L);
        s.set_latency(NONE);
        s.set_pipeline(L);
        assert!(s.answered_after(t1).is_some());
    }
}
