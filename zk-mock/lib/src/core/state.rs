//! The server's shared state, behind one `std::sync::Mutex`: each server's
//! replica (tree and watches, `ensemble.rs`), the global sessions, the
//! connections' outboxes ([`Outboxes`], in `outbox.rs`) and the
//! [`Observers`] (`observe.rs`: fault rules, counters, the log), each apart
//! from the others.
//!
//! Everything that must be totally ordered — applying a request, queueing the
//! notifications it causes and queueing its reply — happens under that one
//! lock, like ZooKeeper's single `FinalRequestProcessor` thread. The lock is
//! never held across an `.await`: outboxes are unbounded channels, so queueing
//! never waits. They are not lossy: a notification is either queued or its
//! connection is closed.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use rand::rngs::SmallRng;
use tokio::sync::{watch, Notify};

use crate::clock::Clock;
use crate::codec::{frame, Record};
use crate::ensemble::Ensemble;
use crate::observe::Observers;
use crate::proto::ReplyHeader;
use crate::record::Recorder;
use crate::session::{ConnId, SessionManager};
use crate::tree::DataTree;
use crate::txn::{Reply, TxnSettings};
use crate::Compat;

use crate::outbox::{Outboxes, Sent};

/// Server settings that requests consult.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) tick_time: u64,
    pub(crate) max_packet: usize,
    /// `zookeeper.DigestAuthenticationProvider.superDigest`, as `user:hash`.
    pub(crate) super_digest: Option<String>,
    /// For the `conf` four-letter word.
    pub(crate) client_port: u16,
    pub(crate) min_session_timeout: i32,
    pub(crate) max_session_timeout: i32,
    /// Which release's behaviour to follow where 3.8 and 3.9 differ.
    pub(crate) compat: Compat,
    /// `znode.container.checkIntervalMs`, on the session clock.
    pub(crate) container_check_interval_ms: u64,
    /// `zookeeper.extendedTypesEnabled`: TTL nodes allowed.
    pub(crate) extended_types: bool,
    /// `reconfigEnabled`: off, a reconfig fails (RECONFIGDISABLED); on, an
    /// ensemble's leader makes it (a single server answers UNIMPLEMENTED).
    pub(crate) reconfig_enabled: bool,
    /// A connection with more than this many bytes queued is a slow
    /// reader and is closed rather than buffered without limit.
    pub(crate) max_outbox: usize,
    /// Server-side expiry removes the session at once but applies its
    /// closeSession transaction (deleting its ephemerals) this much later,
    /// on the session clock: what a client sees of a server that has not
    /// applied the expiry yet (CURATOR-604). 0: at once, as ZooKeeper does.
    pub(crate) expiry_cleanup_delay_ms: u64,
    /// How long an ensemble that lost its leader goes without one.
    pub(crate) election_window_ms: u64,
    /// `readonlymode.enabled`: a server cut off from the quorum serves
    /// read-only clients, this long after it lost the quorum.
    pub(crate) read_only_mode: bool,
    pub(crate) read_only_after_ms: u64,
    /// `localSessionsEnabled`: what lets a read-only server create sessions.
    pub(crate) local_sessions: bool,
    /// How long a write takes to become durable before it is applied (see
    /// `commit.rs`); zero: at once.
    pub(crate) commit_latency: Duration,
    /// How long a handshake takes at least, from its ConnectRequest to its
    /// answer; zero: as soon as it can be answered.
    pub(crate) connect_latency: Duration,
    /// How long any request takes through the pipeline besides a sync
    /// (see `commit.rs`); zero: no time.
    pub(crate) request_latency: Duration,
    /// Whether `mntr` counts the process's open files. The fuzz targets'
    /// server does not (it reports 0): its replays compare every byte, and
    /// other tests open and close files meanwhile.
    pub(crate) count_open_files: bool,
}

impl Settings {
    /// What applying a txn needs of them.
    pub(crate) fn txn(&self) -> TxnSettings {
        TxnSettings {
            compat: self.compat,
            extended_types: self.extended_types,
        }
    }
}

/// The replicas (tree and watches), the sessions, the connections' outboxes
/// and the observers.
#[derive(Debug)]
pub(crate) struct State {
    /// The servers: replicas, leader, election, membership.
    pub(super) ensemble: Ensemble,
    /// Global, as a quorum's sessions are (the leader's `SessionTracker`).
    pub(super) sessions: SessionManager,
    /// The connections and their outboxes, apart from the data model.
    pub(super) out: Outboxes,
    pub(super) clock: Clock,
    pub(super) settings: Settings,
    /// The fault rules, the counters, the log and the change signal: they
    /// watch the pipeline and keep nothing of the data model.
    pub(super) observers: Observers,
    pub(super) rng: SmallRng,
    pub(super) seed: u64,
    /// Sessions stalled by a fault: nothing moves on their connections.
    pub(super) stalled: BTreeSet<i64>,
    /// When the next container check is due, in session-clock ms.
    pub(super) next_container_check: u64,
    /// Expired sessions whose closeSession transaction is still to come
    /// (`expiry_cleanup_delay_ms`): when, and which.
    pub(super) pending_kills: Vec<(u64, i64)>,
    /// Gates ([`ZkMock::gate`](crate::ZkMock::gate)) by id. An open gate
    /// stays here, so a rule that names it holds nothing.
    pub(super) gates: std::collections::BTreeMap<u64, RuleGate>,
    /// Requests held unapplied, by connection (one at most: nothing more is
    /// read from it meanwhile): by a `HoldRequest` verdict, or sent before
    /// the connection's handshake was answered.
    pub(super) held_requests: crate::hash::Map<ConnId, HeldRequest>,
    /// Expired sessions whose closeSession transaction waits for a gate
    /// ([`ZkMock::expire_session_until`](crate::ZkMock::expire_session_until)):
    /// the gate, and the session.
    pub(super) held_kills: Vec<(u64, i64)>,
    /// While true, new connections are closed as soon as they are accepted.
    pub(super) refusing: bool,
    /// Connections whose new session's handshake waits for their server to
    /// apply the createSession: true is sent once it is answered.
    pub(super) handshakes: crate::hash::Map<ConnId, watch::Sender<bool>>,
    /// Wakes the task that applies time-lagged txns when one is committed.
    pub(super) lag_wake: Arc<Notify>,
    /// The transaction log's syncs, for the commit latency.
    pub(super) syncs: crate::txnlog::Syncs,
    /// Requests judged and waiting for a sync or the request latency, or
    /// behind one on their connection, in the order they came (see
    /// `commit.rs`).
    pub(super) commits:
        crate::hash::Map<ConnId, std::collections::VecDeque<crate::txnlog::Pending>>,
    /// Where replies are encoded (no allocation per reply).
    pub(super) replies: crate::codec::Arena,
    /// A txn's tree events, kept between txns for its allocation.
    pub(super) events: Vec<crate::tree::TreeEvent>,
}

/// A gate of the fault rules: closed until opened, and what waits on it,
/// in the order it came. Each waiter has a channel of its own, so opening
/// the gate wakes them in that order (a watch channel shared by all would
/// wake them in an order of its own, drawn at random), and with one worker
/// thread their tasks go on in it, unless one was woken already for
/// something else.
#[derive(Debug, Default)]
pub(crate) struct RuleGate {
    pub(super) open: bool,
    pub(super) waiters: Vec<watch::Sender<bool>>,
}

/// A request held unapplied by a `HoldRequest` verdict until its gate
/// opens, or until its handshake is answered.
#[derive(Debug)]
pub(crate) struct HeldRequest {
    pub(super) xid: i32,
    pub(super) op: i32,
    pub(super) req: Result<crate::proto::Request, crate::proto::RequestError>,
    /// Whether the gate is open.
    pub(super) open: watch::Receiver<bool>,
    /// Whether the fault rules judge it when it is released (they judged
    /// one a `HoldRequest` verdict held already).
    pub(super) judge: bool,
}

/// The handle every task holds.
pub(crate) type Shared = Arc<Mutex<State>>;

/// Locks a mutex of the crate (the state, a child process). A panic while
/// holding the lock is a bug in the mock; the data is still the best we
/// have, so keep serving rather than cascading. (The leaf `txnlog` has the
/// same helper for its own lock.)
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the connection's reader should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading requests.
    Continue,
    /// Stop reading; the writer has been told to close.
    Close,
}

impl State {
    pub(crate) fn new(
        clock: Clock,
        sessions: SessionManager,
        settings: Settings,
        recorder: Recorder,
        seed: u64,
        rng: SmallRng,
        servers: usize,
    ) -> State {
        let settings_check_interval = settings.container_check_interval_ms.max(1);
        let (commit_latency, request_latency) = (settings.commit_latency, settings.request_latency);
        State {
            ensemble: Ensemble::new(servers, settings.compat),
            sessions,
            out: Outboxes::new(settings.max_outbox),
            clock,
            settings,
            observers: Observers::new(recorder),
            rng,
            seed,
            stalled: BTreeSet::new(),
            next_container_check: settings_check_interval,
            pending_kills: Vec::new(),
            gates: std::collections::BTreeMap::new(),
            held_requests: crate::hash::Map::default(),
            held_kills: Vec::new(),
            refusing: false,
            handshakes: crate::hash::Map::default(),
            lag_wake: Arc::new(Notify::new()),
            syncs: crate::txnlog::Syncs::new(commit_latency, request_latency),
            commits: crate::hash::Map::default(),
            replies: crate::codec::Arena::default(),
            events: Vec::new(),
        }
    }

    /// The leader's replica: the newest state, what prep judges against.
    pub(crate) fn tree(&self) -> &DataTree {
        self.ensemble.tree()
    }

    /// The server a connection is on (the leader if it is gone).
    pub(crate) fn server_of(&self, conn: ConnId) -> usize {
        self.out
            .conns
            .get(&conn)
            .map_or(self.ensemble.leader, |c| c.server)
    }

    /// Every watch of every server.
    pub(crate) fn all_watches(
        &self,
    ) -> impl Iterator<Item = (crate::watch::Table, &str, ConnId, crate::record::WatchKind)> + '_
    {
        self.ensemble
            .servers
            .iter()
            .flat_map(|r| r.watches.entries())
    }

    /// Queues a frame to a connection (no-op if it is gone or muted).
    pub(crate) fn send(&mut self, conn: ConnId, body: Bytes) {
        self.send_framed(conn, frame(&body));
    }

    /// [`send`](Self::send) for a frame that already has its length prefix
    /// (one notification frame is shared by every watcher it goes to).
    pub(crate) fn send_framed(&mut self, conn: ConnId, framed: Bytes) {
        let sent = self.out.send_framed(conn, framed);
        self.after_send(conn, sent);
    }

    /// Hands bytes to a connection's writer (see [`Outboxes::enqueue`]).
    pub(crate) fn enqueue(&mut self, conn: ConnId, bytes: Bytes) {
        let sent = self.out.enqueue(conn, bytes);
        self.after_send(conn, sent);
    }

    /// A slow reader's connection is closed.
    fn after_send(&mut self, conn: ConnId, sent: Sent) {
        if sent == Sent::SlowReader {
            self.close_conn(conn);
        }
    }

    /// Queues a pause before whatever is queued next on `conn`.
    pub(crate) fn pause(&mut self, conn: ConnId, d: Duration) {
        self.out.pause(conn, d);
    }

    /// Queues a reply: header, then `body` when the request succeeded.
    pub(crate) fn reply<R: Record>(&mut self, conn: ConnId, xid: i32, zxid: i64, body: &R) {
        self.send_encoded(conn, |b| {
            ReplyHeader { xid, zxid, err: 0 }.encode(b);
            body.encode(b);
        });
    }

    /// Queues the frame `encode` writes: for the connection whose task is
    /// applying its own requests, straight into what that task takes
    /// (see [`Outboxes::send_encoded`]); else encoded in the replies'
    /// arena and queued.
    fn send_encoded(&mut self, conn: ConnId, encode: impl FnOnce(&mut bytes::BytesMut)) {
        if self.out.takes_encoded(conn) {
            let sent = self.out.send_encoded(conn, encode);
            self.after_send(conn, sent);
        } else {
            let frame = self.replies.framed(encode);
            self.send_framed(conn, frame);
        }
    }

    /// Runs `f`, the connection `conn`'s task applying its own requests,
    /// with what is queued for `conn` meanwhile kept apart for that task to
    /// write itself (see [`Outboxes::begin_serving`]).
    pub(crate) fn serve<T>(&mut self, conn: ConnId, f: impl FnOnce(&mut State) -> T) -> T {
        let before = self.out.begin_serving(conn);
        let t = f(self);
        self.out.end_serving(before);
        t
    }

    /// Queues a successful reply.
    pub(crate) fn send_reply(&mut self, conn: ConnId, xid: i32, zxid: i64, reply: Reply) {
        self.send_encoded(conn, |b| reply.encode(xid, zxid, b));
    }

    /// Queues a reply that is only a header (errors, and ops with no body).
    pub(crate) fn reply_header(&mut self, conn: ConnId, xid: i32, zxid: i64, err: i32) {
        self.send_encoded(conn, |b| ReplyHeader { xid, zxid, err }.encode(b));
    }

    /// Tells waiters that something was recorded.
    pub(crate) fn changed(&self) {
        self.observers.changed();
    }
}
