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

/// Why [`Server::set_lag`](crate::Server::set_lag) (and the admin
/// interface's `POST /servers/{i}/lag`) refused a lag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LagError {
    /// The server leads. A ZooKeeper leader applies each txn as it commits
    /// it, so reads through it are never stale: lag a follower instead
    /// ([`ZkMock::servers`](crate::ZkMock::servers) says which server leads).
    #[error(
        "server {0} is the leader: a leader applies each txn as it commits it, so it cannot \
         lag behind itself; lag a follower (see which server leads in GET /servers)"
    )]
    Leader(usize),
    /// There is no such server.
    #[error("there is no server {0}")]
    NoSuchServer(usize),
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

    /// Whether server `i`'s process is up (serving or not): it accepts
    /// connections. A killed one does not.
    pub(crate) fn up(&self, i: usize) -> bool {
        self.servers
            .get(i)
            .is_some_and(|r| r.status != ServerStatus::Killed)
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

    /// Whether server `i` votes: a participant of the membership
    /// (`/zookeeper/config`), rather than an observer or a server the
    /// membership does not name. Without a membership (one server) it does.
    pub(crate) fn votes(&self, i: usize) -> bool {
        self.quorum
            .as_ref()
            .is_none_or(|q| q.voters().any(|id| id == i as u64 + 1))
    }

    /// Whether a majority of the voters is up (not killed or partitioned):
    /// `QuorumMaj.containsQuorum` over the membership's participants, whom
    /// a reconfig changes.
    pub(crate) fn has_quorum(&self) -> bool {
        let Some(q) = &self.quorum else {
            return self
                .servers
                .iter()
                .all(|r| r.status == ServerStatus::Serving);
        };
        let voters: Vec<u64> = q.voters().collect();
        let up = voters
            .iter()
            .filter(|&&id| {
                usize::try_from(id - 1)
                    .ok()
                    .and_then(|i| self.servers.get(i))
                    .is_some_and(|s| s.status == ServerStatus::Serving)
            })
            .count();
        up * 2 > voters.len()
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

    /// Sets a follower's lag and applies what the new lag lets through. The
    /// leader refuses one: it applies each txn as it commits it.
    pub(crate) fn set_lag(&mut self, i: usize, lag: Lag) -> Result<(), LagError> {
        if i >= self.servers.len() {
            return Err(LagError::NoSuchServer(i));
        }
        if i == self.leader && lag != Lag::None {
            return Err(LagError::Leader(i));
        }
        self.servers[i].lag = lag;
        self.settle(i);
        self.lag_wake.notify_one();
        Ok(())
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
        // Only a participant leads; an observer follows whoever does. A
        // leader a reconfig designated takes over if it can.
        let designated = self
            .designated
            .take()
            .filter(|i| up.contains(i) && self.votes(*i));
        let Some(leader) = designated.or_else(|| up.iter().rev().copied().find(|&i| self.votes(i)))
        else {
            return false;
        };
        self.leader = leader;
        if std::mem::take(&mut self.servers[leader].lag) != Lag::None {
            // It caught up above; as the leader it applies each txn as it commits it.
            tracing::info!(
                server = leader,
                "a lagging follower now leads: its lag is dropped"
            );
        }
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

    /// An ensemble's membership, in every replica's `/zookeeper/config`
    /// from the start: every server on `addrs` a participant, or the
    /// `server.N` lines of `membership` (server N is the ensemble's server
    /// N − 1; one it does not name is an observer outside the config, as a
    /// server started with only itself and the leader in its zoo.cfg).
    /// The first leader is the first participant.
    ///
    /// # Errors
    /// A line that is not `server.N=host:port:port[:role];[host:]port`, an
    /// id with no such server, or no participant.
    pub(crate) fn init_quorum(
        &mut self,
        addrs: &[std::net::SocketAddr],
        membership: &[String],
    ) -> Result<(), String> {
        let q = if membership.is_empty() {
            if addrs.len() < 2 {
                return Ok(());
            }
            QuorumConfig::for_servers(addrs)
        } else {
            QuorumConfig::from_lines(membership, addrs.len())?
        };
        let data = bytes::Bytes::from(q.text());
        for r in &mut self.servers {
            r.tree.init_config(data.clone(), q.version);
        }
        let first = q
            .voters()
            .next()
            .and_then(|id| usize::try_from(id - 1).ok());
        self.quorum = Some(q);
        if let Some(first) = first.filter(|&i| i != self.leader) {
            self.leader = first;
            self.servers[first].tree.advance_to(1 << 32);
        }
        Ok(())
    }

    /// After a reconfig is committed: one that left the leader out of the
    /// voters makes it step down. It designates the new config's voter
    /// with the lowest id that is up (`Leader.getDesignatedLeader`: the
    /// first of the acking voters, a `HashSet<Long>`), every server drops
    /// its clients as in an election, and the designated server leads a
    /// new epoch at once. The old leader, if it is still up, follows.
    pub(crate) fn after_reconfig(&mut self) {
        if self.votes(self.leader) {
            return;
        }
        let Some(next) = (0..self.servers.len())
            .find(|&i| self.servers[i].status == ServerStatus::Serving && self.votes(i))
        else {
            return;
        };
        tracing::info!(
            old = self.leader,
            designated = next,
            "the reconfig removed the leader: it steps down"
        );
        self.begin_election();
        self.designated = Some(next);
        self.end_election();
    }

    /// Prep of a reconfig on an ensemble's leader (`PrepRequestProcessor`):
    /// the new membership's `/zookeeper/config` data, versioned with the
    /// txn's zxid, or the error the txn carries. The checks in ZooKeeper's
    /// order: the version asked for, the new membership, a synced quorum of
    /// its voters, then WRITE on `/zookeeper/config` (super has it).
    pub(crate) fn prep_reconfig(
        &mut self,
        r: &crate::proto::ReconfigRequest,
        auth: &[crate::proto::Id],
        zxid: i64,
    ) -> Result<bytes::Bytes, crate::proto::ErrorCode> {
        use crate::proto::ErrorCode;
        let Some(q) = &self.quorum else {
            return Err(ErrorCode::Unimplemented);
        };
        let mut next = q.apply(r)?;
        let voters: Vec<u64> = next.voters().collect();
        let synced = voters
            .iter()
            .filter(|&&id| {
                usize::try_from(id - 1)
                    .ok()
                    .and_then(|i| self.servers.get(i))
                    .is_some_and(|s| s.status == ServerStatus::Serving)
            })
            .count();
        if synced * 2 <= voters.len() {
            return Err(ErrorCode::NewConfigNoQuorum);
        }
        let config = self.tree().get("/zookeeper/config").map(|n| n.acl.clone());
        if let Some(acl) = config {
            crate::acl::check(&acl, crate::proto::perms::WRITE, auth)?;
        }
        next.version = zxid;
        let data = bytes::Bytes::from(next.text());
        self.quorum = Some(next);
        Ok(data)
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

/// The quorum's membership as `/zookeeper/config` holds it
/// (`QuorumMaj.toString`): `server.N=spec` lines, then `version=<hex>`.
#[derive(Debug, Clone)]
pub(crate) struct QuorumConfig {
    /// Each member's spec, as `QuorumServer.toString` writes it.
    members: std::collections::BTreeMap<u64, Member>,
    pub(crate) version: i64,
}

#[derive(Debug, Clone)]
struct Member {
    spec: String,
    voting: bool,
}

impl QuorumConfig {
    /// The config of a fresh ensemble on `addrs`: every server a participant
    /// (the quorum and election ports are the mock's inventions: it has
    /// none), version `0x100000000`.
    pub(crate) fn for_servers(addrs: &[std::net::SocketAddr]) -> QuorumConfig {
        let members = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let (q, e) = (fake_port(a.port(), 1), fake_port(a.port(), 2));
                let spec = format!("{}:{q}:{e}:participant;{}", a.ip(), a);
                (i as u64 + 1, Member { spec, voting: true })
            })
            .collect();
        QuorumConfig {
            members,
            version: 1 << 32,
        }
    }

    /// The membership `lines` name (`server.N=spec`, as in a zoo.cfg), for
    /// an ensemble of `servers`, version `0x100000000`.
    pub(crate) fn from_lines(lines: &[String], servers: usize) -> Result<QuorumConfig, String> {
        let mut members = std::collections::BTreeMap::new();
        for line in lines {
            let bad = |why: &str| format!("membership line {line:?}: {why}");
            let (key, spec) = line
                .split_once('=')
                .ok_or_else(|| bad("not server.N=spec"))?;
            let id: u64 = key
                .trim()
                .strip_prefix("server.")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| bad("not server.N=spec"))?;
            if id == 0 || id > servers as u64 {
                return Err(bad(&format!("the ensemble has servers 1 to {servers}")));
            }
            let member = parse_spec(spec.trim())
                .map_err(|_| bad("not host:port:port[:participant|observer];[host:]port"))?;
            members.insert(id, member);
        }
        if !members.values().any(|m| m.voting) {
            return Err("the membership has no participant".into());
        }
        Ok(QuorumConfig {
            members,
            version: 1 << 32,
        })
    }

    /// `/zookeeper/config`'s data.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        for (id, m) in &self.members {
            out.push_str(&format!("server.{id}={}\n", m.spec));
        }
        out.push_str(&format!("version={:x}", self.version));
        out
    }

    /// The membership a reconfig asks for (`PrepRequestProcessor`, case
    /// reconfig), or the error it fails with.
    pub(crate) fn apply(
        &self,
        r: &crate::proto::ReconfigRequest,
    ) -> Result<QuorumConfig, crate::proto::ErrorCode> {
        use crate::proto::ErrorCode;
        if r.cur_config_id != -1 && r.cur_config_id != self.version {
            return Err(ErrorCode::BadVersion);
        }
        let mut next = self.members.clone();
        if let Some(all) = &r.new_members {
            // Non-incremental: the whole membership, comma- or newline-separated.
            next.clear();
            for line in all
                .split([',', '\n'])
                .map(str::trim)
                .filter(|l| !l.is_empty())
            {
                let (key, spec) = line.split_once('=').ok_or(ErrorCode::BadArguments)?;
                let Some(id) = key.trim().strip_prefix("server.") else {
                    if key.trim() == "version" {
                        continue;
                    }
                    return Err(ErrorCode::BadArguments);
                };
                let id: u64 = id.parse().map_err(|_| ErrorCode::BadArguments)?;
                next.insert(id, parse_spec(spec.trim())?);
            }
        } else {
            if let Some(leaving) = &r.leaving {
                for id in leaving.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                    let id: u64 = id.parse().map_err(|_| ErrorCode::BadArguments)?;
                    next.remove(&id);
                }
            }
            if let Some(joining) = &r.joining {
                for joiner in joining.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                    let parts: Vec<&str> = joiner.split('=').filter(|p| !p.is_empty()).collect();
                    let [key, spec] = parts[..] else {
                        return Err(ErrorCode::BadArguments);
                    };
                    let id = key.rsplit('.').next().unwrap_or(key);
                    let id: u64 = id.trim().parse().map_err(|_| ErrorCode::BadArguments)?;
                    next.insert(id, parse_spec(spec.trim())?);
                }
            }
        }
        // QuorumPeerConfig.isStandaloneEnabled() is true by default: a new
        // config needs at least two voters.
        if next.values().filter(|m| m.voting).count() < 2 {
            return Err(ErrorCode::BadArguments);
        }
        Ok(QuorumConfig {
            members: next,
            version: self.version,
        })
    }

    /// The voting members' ids.
    pub(crate) fn voters(&self) -> impl Iterator<Item = u64> + '_ {
        self.members
            .iter()
            .filter(|(_, m)| m.voting)
            .map(|(id, _)| *id)
    }
}

/// A port that is not one: the mock's servers have no quorum or election
/// port, but a server line names both.
fn fake_port(client: u16, n: u16) -> u16 {
    let p = u32::from(client) + 1000 * u32::from(n);
    u16::try_from(p).unwrap_or((p % 60_000) as u16 + 1024)
}

/// `QuorumServer(sid, "host:port:port[:type][;[host:]port]")`, written back
/// as its `toString`; a joiner without a client port is refused, as
/// `PrepRequestProcessor` refuses it.
fn parse_spec(spec: &str) -> Result<Member, crate::proto::ErrorCode> {
    use crate::proto::ErrorCode;
    let (server, client) = spec.split_once(';').ok_or(ErrorCode::BadArguments)?;
    let parts: Vec<&str> = server.split(':').collect();
    let (host, port, eport, kind) = match parts[..] {
        [h, p, e] => (h, p, e, "participant"),
        [h, p, e, k] => (h, p, e, k),
        _ => return Err(ErrorCode::BadArguments),
    };
    let num = |p: &str| p.trim().parse::<u16>().map_err(|_| ErrorCode::BadArguments);
    let (port, eport) = (num(port)?, num(eport)?);
    let voting = match kind.trim() {
        "participant" => true,
        "observer" => false,
        _ => return Err(ErrorCode::BadArguments),
    };
    let client = match client.rsplit_once(':') {
        Some((h, p)) => format!("{}:{}", h.trim(), num(p)?),
        None => format!("0.0.0.0:{}", num(client)?),
    };
    Ok(Member {
        spec: format!("{}:{port}:{eport}:{};{client}", host.trim(), kind.trim()),
        voting,
    })
}
