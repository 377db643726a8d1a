//! The ensemble: one txn log, N servers, each with its own replica.
//!
//! ZooKeeper's pipeline, in the mock's terms:
//! - **prep** judges a write against the newest state — the leader's
//!   replica — and turns it into a [`Txn`](crate::txn::Txn): a zxid,
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
use crate::tree::DataTree;
use crate::txn::Txn;
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
    /// Killed: its connections were dropped, its port is closed (a client
    /// is refused; another server may listen there), and its replica
    /// applies nothing until it is restarted.
    Killed,
    /// Cut off from the quorum: its connections were dropped and new ones
    /// are closed at once; its replica applies nothing until healed.
    Partitioned,
    /// In a leader election: no clients until the election window ends
    /// (but on a read-only server).
    Electing,
}

impl ServerStatus {
    /// The name the admin interface, JSON and the logs use (`srvr` says
    /// `mode`).
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
    /// Sequence counters set (`set_sequence_counter`, which is no txn)
    /// after this txn was committed and before the next: the follower sets
    /// them once it has applied this txn, so that it names the sequential
    /// nodes committed before them as the leader did.
    pub(crate) then_counters: Vec<(Arc<str>, i32)>,
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

/// The servers as a quorum: each one's replica, who leads, whether an
/// election is on, and the membership. Plain data with the questions that
/// need nothing else; what changes them (kills, elections, lag) is the
/// core's (`core/ensemble.rs`), as it reaches connections and sessions too.
#[derive(Debug)]
pub(crate) struct Ensemble {
    /// Each server's replica and watches; an ensemble of one is a single server.
    pub(crate) servers: Vec<Replica>,
    /// The server whose replica prep judges writes against.
    pub(crate) leader: usize,
    /// No leader (an election, or no quorum): no server takes clients but a
    /// read-only one.
    pub(crate) electing: bool,
    /// The leader a reconfig that removed the old one designated: it wins
    /// the election that follows (`Leader.getDesignatedLeader`).
    pub(crate) designated: Option<usize>,
    /// The membership (`/zookeeper/config`); `None` standalone.
    pub(crate) quorum: Option<QuorumConfig>,
}

impl Ensemble {
    /// `n` servers (at least one), server 0 leading. A quorum's first leader
    /// starts epoch 1 (NEWLEADER zxid 0x100000000; the first txn is
    /// 0x100000001); its followers report 0 until they apply a txn. A
    /// standalone server starts at 0.
    pub(crate) fn new(n: usize, compat: Compat) -> Ensemble {
        let mut servers: Vec<Replica> = (0..n.max(1)).map(|_| Replica::new(compat)).collect();
        if servers.len() > 1 {
            servers[0].tree.advance_to(1 << 32);
        }
        Ensemble {
            servers,
            leader: 0,
            electing: false,
            designated: None,
            quorum: None,
        }
    }

    /// The leader's replica: the newest state, what prep judges against.
    pub(crate) fn tree(&self) -> &DataTree {
        &self.servers[self.leader].tree
    }

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
    pub(crate) fn cut_off(&self, i: usize) -> bool {
        match self.servers[i].status {
            ServerStatus::Partitioned => true,
            ServerStatus::Serving => !self.has_quorum(),
            _ => false,
        }
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
