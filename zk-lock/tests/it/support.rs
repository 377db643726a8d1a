//! Shared helpers: the lock kinds, clients, and waits.

use std::time::Duration;

use zk_lock::{Lock, Strategy};
pub(crate) use zk_mock::fault::OpFamily;
pub(crate) use zk_mock::proto::ErrorCode;
pub(crate) use zk_mock::record::{NotificationQuery, RequestQuery};
use zk_mock::snapshot::Snapshot;
use zk_mock::{SessionId, ZkMock};
use zookeeper_client::Client;

/// Generous bound for events that should happen in milliseconds.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// The exclusive locks the tests run every case on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Predecessor,
    Herd,
    Naive,
    /// The read/write lock's write side (predecessor strategy): exclusive too.
    Writer,
}

pub(crate) const ALL: [Kind; 4] = [Kind::Predecessor, Kind::Herd, Kind::Naive, Kind::Writer];
pub(crate) const SEQUENTIAL: [Kind; 2] = [Kind::Predecessor, Kind::Herd];

impl Kind {
    /// A lock of this kind on `dir`.
    pub(crate) fn lock(self, client: Client, dir: &str) -> Lock {
        let builder = Lock::builder(client, dir);
        match self {
            Kind::Predecessor => builder.build(),
            Kind::Herd => builder.strategy(Strategy::Herd).build(),
            Kind::Naive => builder.strategy(Strategy::Naive).build(),
            Kind::Writer => builder.read_write().map(|rw| rw.writer().clone()),
        }
        .unwrap()
    }
}

pub(crate) async fn client(zk: &ZkMock) -> Client {
    Client::connect(&zk.connect_string())
        .await
        .expect("connect")
}

pub(crate) fn session(c: &Client) -> SessionId {
    c.session_id().0.into()
}

/// The lock directory's children, from the server's tree.
pub(crate) fn children(zk: &ZkMock, dir: &str) -> Vec<String> {
    children_in(&zk.snapshot(), dir)
}

/// The lock directory's children in a snapshot.
pub(crate) fn children_in(snap: &Snapshot, dir: &str) -> Vec<String> {
    let prefix = format!("{dir}/");
    snap.tree
        .keys()
        .filter(|p| p.starts_with(&prefix) && !p[prefix.len()..].contains('/'))
        .cloned()
        .collect()
}

/// Waits (on the server's change feed) until no watch is left on the server.
pub(crate) async fn no_watches_left(zk: &ZkMock) {
    let waited = zk
        .wait_until(PATIENCE, |log| log.snapshot().watch_count() == 0)
        .await;
    if let Err(msg) = waited {
        panic!("watches left: {}\n{msg}", zk.snapshot());
    }
}

/// Waits until each of `sessions` holds a live watch under `dir` (a
/// watch registered and not yet fired), checked after every recorded change.
pub(crate) async fn watching(zk: &ZkMock, dir: &str, sessions: &[SessionId]) {
    let waited = zk
        .wait_until(PATIENCE, |log| {
            let snap = log.snapshot();
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
