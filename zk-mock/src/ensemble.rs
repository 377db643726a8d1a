//! The ensemble: one txn log, N servers, each with its own replica.
//!
//! ZooKeeper's pipeline, in the mock's terms:
//! - **prep** judges a write against the newest state — the leader's
//!   replica — and turns it into a [`Txn`](crate::dispatch::Txn): a zxid,
//!   the time, the caller and the request (`PrepRequestProcessor`);
//! - the txn is **committed**: it joins every follower's backlog, in zxid
//!   order (`Leader.commit`, `CommitProcessor`);
//! - each server **applies** committed txns to its own [`Replica`] and fires
//!   its own connections' watches, and the server the request came through
//!   answers it then (`FinalRequestProcessor`).
//!
//! Applying a txn re-runs the request against the replica with the txn's
//! zxid, time and caller. Every replica has applied the same txns in the same
//! order when it reaches a zxid, so it reaches the same decision as prep did:
//! a failed write fails again, a created node gets the same sequence number.
//!
//! The single server is an ensemble of one: its replica is the leader's and
//! applies every txn as prep makes it. A follower's [`Lag`] holds committed
//! txns back, so reads through it are stale and its watches fire late — what
//! no real ensemble can be made to show on demand.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::compat::Compat;
use crate::dispatch::Txn;
use crate::tree::DataTree;
use crate::watch::WatchManager;

/// How far behind the leader a follower applies committed txns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Lag {
    /// Applies each txn as it is committed (the default).
    #[default]
    None,
    /// Keeps this many committed txns unapplied: the server is always that
    /// many writes behind, until a `sync`, a restart or an election catches
    /// it up.
    Txns(usize),
    /// Applies each txn this long (on the session clock) after its commit.
    Time(Duration),
}

/// What a server is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerStatus {
    /// Serving clients (a standalone server, the leader or a follower).
    Serving,
    /// Killed: its connections were dropped, new ones are closed at once,
    /// and its replica applies nothing until it is restarted.
    Killed,
    /// Cut off from the quorum: like [`Killed`](Self::Killed), until healed.
    Partitioned,
    /// In a leader election: no clients until the election window ends.
    Electing,
}

impl ServerStatus {
    /// The name the admin interface and `srvr` use.
    pub fn name(self) -> &'static str {
        match self {
            ServerStatus::Serving => "serving",
            ServerStatus::Killed => "killed",
            ServerStatus::Partitioned => "partitioned",
            ServerStatus::Electing => "electing",
        }
    }
}

/// A committed txn a follower has not applied yet.
#[derive(Debug)]
pub(crate) struct Pending {
    /// When it was committed, on the session clock.
    pub(crate) committed_ms: u64,
    pub(crate) txn: Arc<Txn>,
}

/// One server's own copy of the data and its connections' watches.
#[derive(Debug)]
pub(crate) struct Replica {
    pub(crate) tree: DataTree,
    pub(crate) watches: WatchManager,
    /// Committed txns this server has not applied yet, oldest first.
    pub(crate) backlog: VecDeque<Pending>,
    pub(crate) lag: Lag,
    pub(crate) status: ServerStatus,
}

impl Replica {
    pub(crate) fn new(compat: Compat) -> Replica {
        Replica {
            tree: DataTree::new(),
            watches: WatchManager::new(compat),
            backlog: VecDeque::new(),
            lag: Lag::None,
            status: ServerStatus::Serving,
        }
    }

    /// Whether the oldest unapplied txn is due at `now` (session-clock ms).
    pub(crate) fn front_due(&self, now: u64) -> bool {
        if self.status != ServerStatus::Serving {
            return false;
        }
        let Some(front) = self.backlog.front() else {
            return false;
        };
        match self.lag {
            Lag::None => true,
            Lag::Txns(n) => self.backlog.len() > n,
            Lag::Time(d) => front.committed_ms + millis(d) <= now,
        }
    }

    /// When, on the session clock, the oldest unapplied txn falls due by
    /// time (`None`: nothing waits on time).
    pub(crate) fn next_due_ms(&self) -> Option<u64> {
        match (self.status, self.lag, self.backlog.front()) {
            (ServerStatus::Serving, Lag::Time(d), Some(p)) => Some(p.committed_ms + millis(d)),
            _ => None,
        }
    }

    /// The last zxid this server has applied.
    pub(crate) fn last_zxid(&self) -> i64 {
        self.tree.last_zxid()
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
