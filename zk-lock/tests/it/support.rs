//! Shared helpers: one lock type over the three recipes, clients, and waits.

use std::time::Duration;

use zk_lock::{
    HerdLock, LockGuard, LockMetrics, NaiveLock, PredecessorLock, ReadWriteLock, Result,
};
use zk_mock::ZkMock;
use zookeeper_client::Client;

/// Generous bound for events that should happen in milliseconds.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Predecessor,
    Herd,
    Naive,
    /// The read/write lock's write side (predecessor form): exclusive too.
    Writer,
}

pub(crate) const ALL: [Kind; 4] = [Kind::Predecessor, Kind::Herd, Kind::Naive, Kind::Writer];
pub(crate) const SEQUENTIAL: [Kind; 2] = [Kind::Predecessor, Kind::Herd];

#[derive(Debug)]
pub(crate) enum AnyLock {
    Predecessor(PredecessorLock),
    Herd(HerdLock),
    Naive(NaiveLock),
    Writer(ReadWriteLock),
}

impl AnyLock {
    pub(crate) fn new(kind: Kind, client: Client, dir: &str) -> AnyLock {
        match kind {
            Kind::Predecessor => AnyLock::Predecessor(PredecessorLock::new(client, dir).unwrap()),
            Kind::Herd => AnyLock::Herd(HerdLock::new(client, dir).unwrap()),
            Kind::Naive => AnyLock::Naive(NaiveLock::new(client, dir).unwrap()),
            Kind::Writer => AnyLock::Writer(ReadWriteLock::new(client, dir).unwrap()),
        }
    }
    pub(crate) async fn acquire(&self) -> Result<LockGuard> {
        match self {
            AnyLock::Predecessor(l) => l.acquire().await,
            AnyLock::Herd(l) => l.acquire().await,
            AnyLock::Naive(l) => l.acquire().await,
            AnyLock::Writer(l) => l.write().await,
        }
    }
    pub(crate) async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        match self {
            AnyLock::Predecessor(l) => l.try_acquire().await,
            AnyLock::Herd(l) => l.try_acquire().await,
            AnyLock::Naive(l) => l.try_acquire().await,
            AnyLock::Writer(l) => l.try_write().await,
        }
    }
    pub(crate) async fn acquire_timeout(&self, d: Duration) -> Result<LockGuard> {
        match self {
            AnyLock::Predecessor(l) => l.acquire_timeout(d).await,
            AnyLock::Herd(l) => l.acquire_timeout(d).await,
            AnyLock::Naive(l) => l.acquire_timeout(d).await,
            AnyLock::Writer(l) => l.write_timeout(d).await,
        }
    }
    pub(crate) fn metrics(&self) -> LockMetrics {
        match self {
            AnyLock::Predecessor(l) => l.metrics(),
            AnyLock::Herd(l) => l.metrics(),
            AnyLock::Naive(l) => l.metrics(),
            AnyLock::Writer(l) => l.metrics(),
        }
    }
}

pub(crate) async fn client(zk: &ZkMock) -> Client {
    Client::connect(&zk.connect_string())
        .await
        .expect("connect")
}

pub(crate) fn session(c: &Client) -> i64 {
    c.session_id().0
}

/// The lock directory's children, from the server's tree.
pub(crate) fn children(zk: &ZkMock, dir: &str) -> Vec<String> {
    let prefix = format!("{dir}/");
    zk.snapshot()
        .tree
        .keys()
        .filter(|p| p.starts_with(&prefix) && !p[prefix.len()..].contains('/'))
        .cloned()
        .collect()
}

/// Waits (on the server's change feed) until no watch is left on the server.
pub(crate) async fn no_watches_left(zk: &ZkMock) {
    let control = zk.control();
    let waited = zk
        .wait_until(PATIENCE, |_| control.snapshot().watch_count() == 0)
        .await;
    if let Err(msg) = waited {
        panic!("watches left: {}\n{msg}", zk.snapshot());
    }
}

/// Waits until each of `sessions` holds a live watch under `dir` (a
/// watch registered and not yet fired), checked after every recorded change.
pub(crate) async fn watching(zk: &ZkMock, dir: &str, sessions: &[i64]) {
    let control = zk.control();
    let waited = zk
        .wait_until(PATIENCE, |_| {
            let snap = control.snapshot();
            sessions.iter().all(|s| {
                snap.sessions
                    .get(s)
                    .is_some_and(|ss| ss.watches.iter().any(|w| w.path.starts_with(dir)))
            })
        })
        .await;
    if let Err(msg) = waited {
        panic!("waiters did not start watching: {}\n{msg}", zk.snapshot());
    }
}
