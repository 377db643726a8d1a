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
use crate::session::ConnId;
use crate::state::State;
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
    /// Serving read-only clients, cut off from the quorum (`readonlymode.enabled`).
    pub(crate) read_only: bool,
}

impl Replica {
    pub(crate) fn new(compat: Compat) -> Replica {
        Replica {
            tree: DataTree::new(),
            watches: WatchManager::new(compat),
            backlog: VecDeque::new(),
            lag: Lag::None,
            status: ServerStatus::Serving,
            read_only: false,
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

/// One server as [`ZkMock::servers`](crate::ZkMock::servers) reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ServerInfo {
    /// Its index: 0 to n−1 (ZooKeeper's myid is the index + 1).
    pub index: usize,
    /// Its client address.
    pub addr: std::net::SocketAddr,
    /// What it is doing.
    #[serde(serialize_with = "status_name")]
    pub status: ServerStatus,
    /// Whether it leads (the one server of a standalone mock does).
    pub leader: bool,
    /// How far behind the leader it applies txns.
    #[serde(serialize_with = "lag_json")]
    pub lag: Lag,
    /// The last zxid it has applied.
    pub last_zxid: i64,
    /// Committed txns it has not applied yet.
    pub behind: usize,
    /// Cut off from the quorum, serving read-only clients
    /// ([`ZkMockBuilder::read_only_mode`](crate::ZkMockBuilder::read_only_mode)).
    pub read_only: bool,
    /// Its client connections.
    pub connections: usize,
}

fn status_name<S: serde::Serializer>(s: &ServerStatus, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s.name())
}

fn lag_json<S: serde::Serializer>(lag: &Lag, ser: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = ser.serialize_map(Some(1))?;
    match lag {
        Lag::None => {}
        Lag::Txns(n) => m.serialize_entry("txns", n)?,
        Lag::Time(d) => m.serialize_entry("ms", &millis(*d))?,
    }
    m.end()
}

/// What a change to a server asks of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    /// Nothing more.
    Done,
    /// The ensemble is electing a leader: end the election after the window.
    Elect,
    /// Nothing changed (the server was already so, or there is no such server).
    Unchanged,
}

impl State {
    /// Whether server `i` takes clients now (a read-only server does: it
    /// sorts them out in the handshake).
    pub(crate) fn serves(&self, i: usize) -> bool {
        self.servers
            .get(i)
            .is_some_and(|r| r.read_only || (!self.electing && r.status == ServerStatus::Serving))
    }

    /// Whether server `i` is up but cut off from a quorum: partitioned, or
    /// up while too few others are.
    fn cut_off(&self, i: usize) -> bool {
        match self.servers[i].status {
            ServerStatus::Partitioned => true,
            ServerStatus::Serving => !self.has_quorum(),
            _ => false,
        }
    }

    /// `QuorumPeer`'s read-only fallback, once a server has been cut off
    /// for the read-only delay: every server still cut off starts a
    /// `ReadOnlyZooKeeperServer` and takes read-only clients.
    pub(crate) fn start_read_only(&mut self) {
        if !self.settings.read_only_mode {
            return;
        }
        for i in 0..self.servers.len() {
            if self.cut_off(i) && !self.servers[i].read_only {
                self.servers[i].read_only = true;
                // The line ZooKeeper logs (ReadOnlyZooKeeperServer), which
                // test suites wait for.
                tracing::info!(server = i, "Read-only server started");
            }
        }
        self.changed();
    }

    /// A read-only server rejoins the quorum: it shuts its read-only server
    /// down (every connection closes) and its local sessions are gone.
    fn leave_read_only(&mut self, i: usize) {
        if !std::mem::take(&mut self.servers[i].read_only) {
            return;
        }
        self.drop_clients(i);
        let local: Vec<i64> = self
            .sessions
            .iter()
            .filter(|s| s.local == Some(i))
            .map(|s| s.id)
            .collect();
        for id in local {
            self.sessions.remove(id);
        }
        tracing::info!(server = i, "read-only server stopped: back in the quorum");
    }

    /// Whether a majority of the servers is up (not killed or partitioned).
    pub(crate) fn has_quorum(&self) -> bool {
        let up = self
            .servers
            .iter()
            .filter(|r| r.status == ServerStatus::Serving)
            .count();
        up > self.servers.len() / 2
    }

    /// Closes every client connection of server `i`.
    fn drop_clients(&mut self, i: usize) {
        let conns: Vec<ConnId> = self
            .out
            .conns
            .iter()
            .filter(|(_, c)| c.server == i)
            .map(|(&id, _)| id)
            .collect();
        for conn in conns {
            self.close_conn(conn);
        }
    }

    /// Takes server `i` down (killed, or partitioned from the quorum): its
    /// connections drop and it applies nothing until it is back. Losing the
    /// leader or the quorum starts an election.
    pub(crate) fn take_down(&mut self, i: usize, how: ServerStatus) -> Then {
        match self.servers.get(i).map(|r| r.status) {
            Some(ServerStatus::Serving) => {}
            _ => return Then::Unchanged,
        }
        self.servers[i].status = how;
        self.drop_clients(i);
        if how == ServerStatus::Killed {
            self.servers[i].read_only = false;
        }
        tracing::info!(server = i, status = how.name(), "server down");
        let then = if i == self.leader || !self.has_quorum() {
            self.begin_election();
            Then::Elect
        } else {
            Then::Done
        };
        self.changed();
        then
    }

    /// Brings server `i` back: it catches up with the committed txns (as a
    /// restarted ZooKeeper syncs with the leader) and serves again; if that
    /// restores the quorum, a leader is elected.
    pub(crate) fn bring_up(&mut self, i: usize) -> Then {
        match self.servers.get(i).map(|r| r.status) {
            Some(ServerStatus::Killed | ServerStatus::Partitioned) => {}
            _ => return Then::Unchanged,
        }
        self.leave_read_only(i);
        self.servers[i].status = ServerStatus::Serving;
        self.catch_up(i);
        tracing::info!(server = i, "server up");
        self.changed();
        if self.electing {
            Then::Elect
        } else {
            Then::Done
        }
    }

    /// Sets a server's lag and applies what the new lag lets through.
    pub(crate) fn set_lag(&mut self, i: usize, lag: Lag) -> bool {
        let Some(r) = self.servers.get_mut(i) else {
            return false;
        };
        r.lag = lag;
        self.settle(i);
        self.lag_wake.notify_one();
        true
    }

    /// Leader loss: every server drops its clients and takes none, and
    /// nothing is written, until [`end_election`](Self::end_election).
    pub(crate) fn begin_election(&mut self) {
        self.electing = true;
        for i in 0..self.servers.len() {
            self.drop_clients(i);
        }
        tracing::info!("leader election started");
        self.changed();
    }

    /// Ends an election if a quorum is up: every server that is up catches
    /// up, the one with the highest id leads (all have the same zxid, and
    /// `FastLeaderElection` then prefers the higher myid), a new epoch
    /// begins (`NEWLEADER`: zxid `epoch << 32`), and every session's
    /// timeout starts afresh (the new leader's `SessionTracker` is built
    /// from the snapshot). Returns whether it ended.
    pub(crate) fn end_election(&mut self) -> bool {
        if !self.electing || !self.has_quorum() {
            return false;
        }
        let up: Vec<usize> = (0..self.servers.len())
            .filter(|&i| self.servers[i].status == ServerStatus::Serving)
            .collect();
        for &i in &up {
            self.leave_read_only(i);
            self.catch_up(i);
        }
        let Some(&leader) = up.last() else {
            return false;
        };
        self.leader = leader;
        // The new leader's epoch: its NEWLEADER zxid is `epoch << 32`, the
        // first txn `(epoch << 32) + 1`; followers keep reporting the old
        // epoch's last zxid until they apply that txn.
        let epoch = (self.tree().last_zxid() >> 32) + 1;
        self.servers[leader].tree.advance_to(epoch << 32);
        let now = self.clock.now_ms();
        self.sessions.touch_all(now);
        self.electing = false;
        tracing::info!(leader, epoch, "leader elected");
        self.changed();
        true
    }

    /// Every server, as the controls report them.
    pub(crate) fn server_infos(&self, addrs: &[std::net::SocketAddr]) -> Vec<ServerInfo> {
        self.servers
            .iter()
            .enumerate()
            .map(|(i, r)| ServerInfo {
                index: i,
                addr: addrs[i],
                status: if r.status == ServerStatus::Serving && self.electing {
                    ServerStatus::Electing
                } else {
                    r.status
                },
                leader: i == self.leader,
                lag: r.lag,
                last_zxid: r.last_zxid(),
                behind: r.backlog.len(),
                read_only: r.read_only,
                connections: self.out.conns.values().filter(|c| c.server == i).count(),
            })
            .collect()
    }
}
