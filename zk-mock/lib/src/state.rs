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
use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rand::rngs::SmallRng;
use tokio::sync::{mpsc, watch, Notify};

use crate::clock::Clock;
use crate::codec::{frame, Record};
use crate::dispatch::{Reply, Txn, TxnOp, TxnSettings};
use crate::ensemble::Replica;
use crate::observe::{NotificationSeen, Observers};
use crate::proto::{
    ConnectRequest, ConnectResponse, ReplyHeader, WatcherEvent, STATE_SYNC_CONNECTED,
    XID_NOTIFICATION,
};
use crate::record::{ChangeKind, Live, RecordView, Recorder, SessionEvent};
use crate::session::{ConnId, SessionId, SessionManager};
use crate::snapshot::{NodeSnapshot, SessionSnapshot, SessionWatch, Snapshot, WatchSnapshot};
use crate::tree::{DataTree, TreeEvent};
use crate::watch::Notification;
use crate::watch::{Table, WatchKind};
use crate::Compat;

pub(crate) use crate::outbox::{Conn, Gate, Outboxes, Outgoing, Sent};

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
    /// `reconfigEnabled`: changes only reconfig's error code.
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
    /// Each server's replica and watches; an ensemble of one is a single server.
    pub(crate) servers: Vec<Replica>,
    /// The server whose replica prep judges writes against.
    pub(crate) leader: usize,
    /// Global, as a quorum's sessions are (the leader's `SessionTracker`).
    pub(crate) sessions: SessionManager,
    /// The connections and their outboxes, apart from the data model.
    pub(crate) out: Outboxes,
    pub(crate) clock: Clock,
    pub(crate) settings: Settings,
    /// The fault rules, the counters, the log and the change signal: they
    /// watch the pipeline and keep nothing of the data model.
    pub(crate) observers: Observers,
    pub(crate) rng: SmallRng,
    pub(crate) seed: u64,
    /// Sessions stalled by a fault: nothing moves on their connections.
    pub(crate) stalled: BTreeSet<i64>,
    /// When the next container check is due, in session-clock ms.
    pub(crate) next_container_check: u64,
    /// Expired sessions whose closeSession transaction is still to come
    /// (`expiry_cleanup_delay_ms`): when, and which.
    pub(crate) pending_kills: Vec<(u64, i64)>,
    /// Gates ([`ZkMock::gate`](crate::ZkMock::gate)) by id: true once open.
    /// An open gate stays here, so a rule that names it holds nothing.
    pub(crate) gates: std::collections::BTreeMap<u64, watch::Sender<bool>>,
    /// Requests a `HoldRequest` verdict holds unapplied, by connection
    /// (one at most: nothing more is read from it meanwhile).
    pub(crate) held_requests: crate::hash::Map<ConnId, HeldRequest>,
    /// Expired sessions whose closeSession transaction waits for a gate
    /// ([`ZkMock::expire_session_until`](crate::ZkMock::expire_session_until)):
    /// the gate, and the session.
    pub(crate) held_kills: Vec<(u64, i64)>,
    /// While true, new connections are closed as soon as they are accepted.
    pub(crate) refusing: bool,
    /// No leader (an election, or no quorum): no server takes clients.
    /// The leader a reconfig that removed the old one designated: it wins
    /// the election that follows (`Leader.getDesignatedLeader`).
    pub(crate) designated: Option<usize>,
    pub(crate) electing: bool,
    /// An ensemble's membership (`/zookeeper/config`); `None` standalone.
    pub(crate) quorum: Option<crate::ensemble::QuorumConfig>,
    /// Wakes the task that applies time-lagged txns when one is committed.
    pub(crate) lag_wake: Arc<Notify>,
    /// Where replies are encoded (no allocation per reply).
    pub(crate) replies: crate::codec::Arena,
    /// A txn's tree events, kept between txns for its allocation.
    pub(crate) events: Vec<crate::tree::TreeEvent>,
}

/// A request held unapplied by a `HoldRequest` verdict until its gate opens.
#[derive(Debug)]
pub(crate) struct HeldRequest {
    pub(crate) xid: i32,
    pub(crate) op: i32,
    pub(crate) req: Result<crate::proto::Request, crate::proto::RequestError>,
    /// Whether the gate is open.
    pub(crate) open: watch::Receiver<bool>,
}

/// The handle every task holds.
pub(crate) type Shared = Arc<Mutex<State>>;

/// Locks a mutex of the crate (the state, a child process). A panic while
/// holding the lock is a bug in the mock; the data is still the best we
/// have, so keep serving rather than cascading. (The one poison-ignoring
/// helper of the crate: parking_lot, which has no poisoning, would take the
/// default build past its 45-crate budget.)
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
        let mut replicas: Vec<Replica> = (0..servers.max(1))
            .map(|_| Replica::new(settings.compat))
            .collect();
        if replicas.len() > 1 {
            // A quorum's first leader starts epoch 1 (NEWLEADER zxid
            // 0x100000000; the first txn is 0x100000001); its followers
            // report 0 until they apply a txn. A standalone server starts at 0.
            replicas[0].tree.advance_to(1 << 32);
        }
        State {
            servers: replicas,
            leader: 0,
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
            electing: false,
            designated: None,
            quorum: None,
            lag_wake: Arc::new(Notify::new()),
            replies: crate::codec::Arena::default(),
            events: Vec::new(),
        }
    }

    /// The leader's replica: the newest state, what prep judges against.
    pub(crate) fn tree(&self) -> &DataTree {
        &self.servers[self.leader].tree
    }

    /// The server a connection is on (the leader if it is gone).
    pub(crate) fn server_of(&self, conn: ConnId) -> usize {
        self.out.conns.get(&conn).map_or(self.leader, |c| c.server)
    }

    /// Every watch of every server.
    pub(crate) fn all_watches(
        &self,
    ) -> impl Iterator<Item = (crate::watch::Table, &str, ConnId, crate::record::WatchKind)> + '_
    {
        self.servers.iter().flat_map(|r| r.watches.entries())
    }

    /// Registers a new connection; its first `ip` auth id is the peer address.
    pub(crate) fn register(
        &mut self,
        tx: mpsc::UnboundedSender<Outgoing>,
        peer: SocketAddr,
        server: usize,
    ) -> (ConnId, watch::Receiver<Gate>, Arc<AtomicUsize>) {
        let now = self.clock.wall_ms();
        self.out.register(tx, peer, now, server)
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
        let frame = self.replies.framed(|b| {
            ReplyHeader { xid, zxid, err: 0 }.encode(b);
            body.encode(b);
        });
        self.send_framed(conn, frame);
    }

    /// An owned copy of the tree, the sessions and the watches.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let st = self;
        let tree = st
            .tree()
            .iter()
            .map(|(p, n)| {
                (
                    p.to_string(),
                    NodeSnapshot {
                        data: n.data.as_ref().map(|d| d.to_vec()),
                        stat: n.stat(),
                        acl: n.acl.to_vec(),
                    },
                )
            })
            .collect();
        let mut watches: std::collections::BTreeMap<String, Vec<WatchSnapshot>> =
            std::collections::BTreeMap::new();
        for (table, path, conn, kind) in st.all_watches() {
            // Persistent watches sit in both tables; list them once.
            if table == Table::Child
                && matches!(kind, WatchKind::Persistent | WatchKind::PersistentRecursive)
            {
                continue;
            }
            let session = SessionId(st.out.conns.get(&conn).and_then(|c| c.session).unwrap_or(0));
            watches
                .entry(path.to_string())
                .or_default()
                .push(WatchSnapshot { session, kind });
        }
        let sessions = st
            .sessions
            .iter()
            .map(|s| {
                let mut w: Vec<SessionWatch> = watches
                    .iter()
                    .flat_map(|(p, ws)| {
                        ws.iter()
                            .filter(|w| w.session == s.id)
                            .map(move |w| SessionWatch {
                                path: p.clone(),
                                kind: w.kind,
                            })
                    })
                    .collect();
                w.sort();
                (
                    SessionId(s.id),
                    SessionSnapshot {
                        id: SessionId(s.id),
                        timeout: s.timeout,
                        last_active_ms: s.last_active,
                        expires_at_ms: s.deadline,
                        connected: s.conn.is_some(),
                        stalled: st.stalled.contains(&s.id),
                        ephemerals: st.tree().ephemerals_of(s.id).map(str::to_string).collect(),
                        watches: w,
                    },
                )
            })
            .collect();
        Snapshot {
            seed: st.seed,
            last_zxid: st.tree().last_zxid(),
            tree,
            sessions,
            watches,
        }
    }

    /// The recorder's live view, for `inspect` and `wait_until`.
    pub(crate) fn record_view(&self) -> RecordView<'_> {
        RecordView::new(self, &self.observers.log, &self.observers.tally, self.seed)
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
        let frame = self.replies.framed(|b| reply.encode(xid, zxid, b));
        self.send_framed(conn, frame);
    }

    /// Queues a reply that is only a header (errors, and ops with no body).
    pub(crate) fn reply_header(&mut self, conn: ConnId, xid: i32, zxid: i64, err: i32) {
        let frame = self
            .replies
            .framed(|b| ReplyHeader { xid, zxid, err }.encode(b));
        self.send_framed(conn, frame);
    }

    /// Closes a connection from the server side: the writer flushes what is
    /// queued and closes (a stalled connection drops what it held); the
    /// connection's watches are dropped at once and its session (if any) is
    /// left without a connection.
    pub(crate) fn close_conn(&mut self, conn: ConnId) {
        // A request held unapplied goes with its connection.
        self.held_requests.remove(&conn);
        if let Some(c) = self.out.remove(conn) {
            if let Some(s) = c.session.and_then(|s| self.sessions.get_mut(s)) {
                if s.conn == Some(conn) {
                    s.conn = None;
                    let id = s.id;
                    let (now, zxid) = (self.clock.now_ms(), self.servers[c.server].last_zxid());
                    self.observers
                        .session(now, id, SessionEvent::Disconnected, zxid);
                }
            }
            self.servers[c.server].watches.remove_conn(conn);
        }
    }

    /// The connection's reader is gone (EOF or error).
    pub(crate) fn disconnected(&mut self, conn: ConnId) {
        self.close_conn(conn);
    }

    /// Sends notifications (xid −1, zxid −1 as 3.8 does) to their connections
    /// and records them with the zxid of the transaction that caused them.
    pub(crate) fn notify(&mut self, notes: Vec<Notification>, zxid: i64) {
        let now = self.clock.now_ms();
        // One event fans out to many watchers: its frame (length prefix
        // included) is encoded once and shared (a `Bytes` clone is a
        // reference count, not a copy).
        let mut last: Option<(i32, Arc<str>, Bytes)> = None;
        for n in notes {
            let Some(c) = self.out.conns.get(&n.conn) else {
                continue;
            };
            // The watch fired (and a one-shot one is gone), but a connection
            // without READ on the node (the parent, for NodeChildrenChanged)
            // is not told (`NIOServerCnxn.process`, CVE-2024-23944; Debian's
            // 3.8.0 carries the fix).
            if let Some(acl) = &n.acl {
                if crate::acl::check(acl, crate::proto::perms::READ, &c.auth).is_err() {
                    continue;
                }
            }
            let session = c.session.unwrap_or(0);
            self.observers.notification(NotificationSeen {
                at_ms: now,
                session,
                path: &n.path,
                kind: n.kind,
                event_type: n.event_type,
                zxid,
                server: c.server,
            });
            // 3.9 sends the zxid of the change (ZOOKEEPER-4655); SetWatches
            // replays (zxid 0 here) carry −1 there too.
            let wire_zxid = if self.settings.compat == Compat::V3_9 && zxid > 0 {
                zxid
            } else {
                -1
            };
            let frame = match &last {
                Some((t, p, f)) if *t == n.event_type && Arc::ptr_eq(p, &n.path) => f.clone(),
                _ => {
                    let mut b = BytesMut::with_capacity(32 + n.path.len());
                    ReplyHeader {
                        xid: XID_NOTIFICATION,
                        zxid: wire_zxid,
                        err: 0,
                    }
                    .encode(&mut b);
                    WatcherEvent {
                        event_type: n.event_type,
                        state: STATE_SYNC_CONNECTED,
                        path: n.path.to_string(),
                    }
                    .encode(&mut b);
                    let f = frame(&b);
                    last = Some((n.event_type, n.path.clone(), f.clone()));
                    f
                }
            };
            self.send_framed(n.conn, frame);
        }
    }

    /// Records a transaction's changes (once, as the leader applies it).
    pub(crate) fn record_changes(&mut self, events: &[TreeEvent], zxid: i64, session: i64) {
        let now = self.clock.now_ms();
        for e in events {
            let kind = match e {
                TreeEvent::Created { .. } => ChangeKind::Created,
                TreeEvent::Deleted { .. } => ChangeKind::Deleted,
                TreeEvent::DataChanged { .. } => ChangeKind::DataChanged,
            };
            self.observers.change(now, zxid, session, e.path(), kind);
        }
    }

    /// Fires one server's watches for a transaction's events.
    pub(crate) fn fire_on(&mut self, server: usize, events: &[TreeEvent], zxid: i64) {
        if events.is_empty() {
            return;
        }
        let mut notes = Vec::new();
        self.servers[server].watches.fire(events, &mut notes);
        self.notify(notes, zxid);
    }

    /// Records the watches registered since the last call.
    pub(crate) fn record_watches(&mut self, conn: ConnId) {
        let server = self.server_of(conn);
        let registered = self.servers[server].watches.take_registered();
        if registered.is_empty() {
            return;
        }
        let now = self.clock.now_ms();
        let session = self
            .out
            .conns
            .get(&conn)
            .and_then(|c| c.session)
            .unwrap_or(0);
        for (path, kind) in registered {
            self.observers.watch(now, session, &path, kind);
        }
    }

    /// Whether a connect for `session` must wait: the session is stalled. The
    /// connection is then held until [`resume`](Self::resume).
    pub(crate) fn hold_if_stalled(&mut self, conn: ConnId, session: i64) -> bool {
        if session == 0 || !self.stalled.contains(&session) {
            return false;
        }
        if let Some(c) = self.out.conns.get_mut(&conn) {
            c.stalled_for = Some(session);
            let _ = c.gate.send(Gate::Stalled);
        }
        true
    }

    /// Stalls a session: its connection neither reads nor writes, and new
    /// connections for it wait, until [`resume`](Self::resume).
    pub(crate) fn stall(&mut self, session: i64) -> bool {
        let Some(conn) = self.sessions.get(session).map(|s| s.conn) else {
            return false;
        };
        self.stalled.insert(session);
        if let Some(c) = conn.and_then(|c| self.out.conns.get_mut(&c)) {
            c.stalled_for = Some(session);
            let _ = c.gate.send(Gate::Stalled);
        }
        tracing::debug!(session = format_args!("{session:#x}"), "stalled");
        true
    }

    /// Lets a stalled session's connections move again.
    pub(crate) fn resume(&mut self, session: i64) -> bool {
        let was = self.stalled.remove(&session);
        for c in self
            .out
            .conns
            .values_mut()
            .filter(|c| c.stalled_for == Some(session))
        {
            c.stalled_for = None;
            let _ = c.gate.send(Gate::Open);
        }
        was
    }

    /// The first packet: create or re-attach a session
    /// (`ZooKeeperServer.processConnectRequest`).
    pub(crate) fn connect(&mut self, conn: ConnId, req: &ConnectRequest) -> Flow {
        let server = self.server_of(conn);
        let server_zxid = self.servers[server].last_zxid();
        let read_only = self.servers[server].read_only;
        if read_only && req.read_only != Some(true) {
            // ZooKeeperServer.processConnectRequest: a read-only server
            // closes a client that cannot be read-only, with no answer.
            tracing::info!(
                conn,
                server,
                "Refusing session request for not-read-only client"
            );
            self.close_conn(conn);
            return Flow::Close;
        }
        if req.last_zxid_seen > server_zxid {
            // CLIENT_ZXID_AHEAD: close with no response. In an ensemble this
            // is what sends a client away from a server that is behind it.
            tracing::info!(
                conn,
                server,
                client = format_args!("{:#x}", req.last_zxid_seen),
                zxid = format_args!("{server_zxid:#x}"),
                "client zxid ahead of server; closing"
            );
            let now = self.clock.now_ms();
            self.observers
                .session(now, req.session_id, SessionEvent::ZxidAhead, server_zxid);
            self.close_conn(conn);
            return Flow::Close;
        }
        self.out.packets_received += 1;
        if let Some(c) = self.out.conns.get_mut(&conn) {
            c.received += 1;
        }
        if read_only {
            return self.connect_read_only(conn, server, req);
        }
        let timeout = self.sessions.negotiate(req.time_out);
        let now = self.clock.now_ms();
        let read_only = req.read_only.map(|_| false);
        if req.session_id == 0 {
            // createSession is a transaction: it consumes a zxid, and the
            // handshake is answered when the connection's server applies it
            // (`FinalRequestProcessor` → `finishSessionInit`): at once on
            // the leader, later through a lagging follower.
            let s = self.sessions.create(now, timeout, conn).clone();
            let zxid = self.next_zxid();
            tracing::debug!(
                conn,
                session = format_args!("{:#x}", s.id),
                timeout,
                "session created"
            );
            if let Some(c) = self.out.conns.get_mut(&conn) {
                c.session = Some(s.id);
                c.last_op = "SESS";
                c.last_zxid = zxid;
                c.last_response_ms = now;
            }
            self.observers
                .session(now, s.id, SessionEvent::Created, zxid);
            let answer = ConnectResponse {
                protocol_version: 0,
                time_out: timeout,
                session_id: s.id,
                passwd: Some(Bytes::copy_from_slice(&s.passwd)),
                read_only,
            }
            .to_bytes();
            self.commit(Txn {
                zxid,
                time: self.clock.wall_ms(),
                session: s.id,
                auth: Arc::from([]),
                op: TxnOp::CreateSession(answer),
                origin: Some((conn, 0)),
            });
            return Flow::Continue;
        }
        // Any other connection of this session on this server is closed
        // first, even if the password turns out to be wrong
        // (CLIENT_RECONNECT). One on another server of an ensemble stays
        // open: that server does not know yet, and finds out when a request
        // of it reaches the leader (SESSIONMOVED, see `dispatch::moved`).
        if let Some(old) = self.sessions.get(req.session_id).and_then(|s| s.conn) {
            if old != conn && self.server_of(old) == server {
                self.close_conn(old);
            }
        }
        if self
            .sessions
            .reattach(req.session_id, req.passwd.as_ref(), timeout, conn, now)
        {
            tracing::debug!(
                conn,
                session = format_args!("{:#x}", req.session_id),
                timeout,
                "session re-attached"
            );
            if let Some(c) = self.out.conns.get_mut(&conn) {
                c.session = Some(req.session_id);
            }
            let zxid = self.servers[server].last_zxid();
            self.observers
                .session(now, req.session_id, SessionEvent::Reattached, zxid);
            let passwd = self
                .sessions
                .get(req.session_id)
                .map(|s| Bytes::copy_from_slice(&s.passwd));
            self.send(
                conn,
                ConnectResponse {
                    protocol_version: 0,
                    time_out: timeout,
                    session_id: req.session_id,
                    passwd,
                    read_only,
                }
                .to_bytes(),
            );
            Flow::Continue
        } else {
            tracing::debug!(
                conn,
                session = format_args!("{:#x}", req.session_id),
                "unknown, expired or wrong password: expired answer"
            );
            let zxid = self.servers[server].last_zxid();
            self.observers
                .session(now, req.session_id, SessionEvent::Refused, zxid);
            self.send(conn, ConnectResponse::expired(req.read_only).to_bytes());
            self.close_conn(conn);
            Flow::Close
        }
    }

    /// The handshake on a read-only server (`ReadOnlyZooKeeperServer`), for
    /// a client that can be read-only. A global session cannot come back
    /// here (`validateSession`: RENEW_GLOBAL_SESSION_IN_RO_MODE, closed
    /// unanswered); a local one of this server can. A new session is a
    /// local one with `localSessionsEnabled`; without it,
    /// `ReadOnlyRequestProcessor` fails the createSession and the client
    /// gets a bare NOTREADONLY header (xid 0) instead of a ConnectResponse,
    /// its connection left open.
    fn connect_read_only(&mut self, conn: ConnId, server: usize, req: &ConnectRequest) -> Flow {
        let timeout = self.sessions.negotiate(req.time_out);
        let now = self.clock.now_ms();
        let zxid = self.servers[server].last_zxid();
        let id = req.session_id;
        if id != 0 {
            let local = self.sessions.get(id).map(|s| s.local);
            if local.is_some_and(|l| l != Some(server)) {
                tracing::info!(
                    conn,
                    server,
                    session = format_args!("{id:#x}"),
                    "Refusing global session reconnection in RO mode"
                );
                self.close_conn(conn);
                return Flow::Close;
            }
            if let Some(old) = self.sessions.get(id).and_then(|s| s.conn) {
                if old != conn {
                    self.close_conn(old);
                }
            }
            if !self
                .sessions
                .reattach(id, req.passwd.as_ref(), timeout, conn, now)
            {
                self.observers.session(now, id, SessionEvent::Refused, zxid);
                self.send(conn, ConnectResponse::expired(req.read_only).to_bytes());
                self.close_conn(conn);
                return Flow::Close;
            }
            if let Some(c) = self.out.conns.get_mut(&conn) {
                c.session = Some(id);
            }
            self.observers
                .session(now, id, SessionEvent::Reattached, zxid);
            let passwd = self
                .sessions
                .get(id)
                .map(|s| Bytes::copy_from_slice(&s.passwd));
            self.send(
                conn,
                ConnectResponse {
                    protocol_version: 0,
                    time_out: timeout,
                    session_id: id,
                    passwd,
                    read_only: Some(true),
                }
                .to_bytes(),
            );
            return Flow::Continue;
        }
        if !self.settings.local_sessions {
            tracing::info!(
                conn,
                server,
                "read-only server without local sessions: NOTREADONLY for a new session"
            );
            self.reply_header(conn, 0, zxid, crate::proto::ErrorCode::NotReadOnly.code());
            return Flow::Continue;
        }
        let s = self.sessions.create(now, timeout, conn).clone();
        if let Some(l) = self.sessions.get_mut(s.id) {
            l.local = Some(server);
        }
        if let Some(c) = self.out.conns.get_mut(&conn) {
            c.session = Some(s.id);
            c.last_op = "SESS";
            c.last_response_ms = now;
        }
        self.observers
            .session(now, s.id, SessionEvent::Created, zxid);
        self.send(
            conn,
            ConnectResponse {
                protocol_version: 0,
                time_out: timeout,
                session_id: s.id,
                passwd: Some(Bytes::copy_from_slice(&s.passwd)),
                read_only: Some(true),
            }
            .to_bytes(),
        );
        Flow::Continue
    }

    /// Ends a session as a transaction with its own zxid: its ephemerals are
    /// deleted with that zxid and watchers told (`DataTree.killSession`),
    /// and each server closes its connections of the session when it
    /// applies the txn (a lagging follower serves it until then). `asked`:
    /// the connection and xid of a closeSession request, answered by its
    /// server when it applies the txn. Returns the zxid, or `None` if the
    /// session was already gone.
    pub(crate) fn close_session(
        &mut self,
        session: i64,
        how: SessionEvent,
        asked: Option<(ConnId, i32)>,
    ) -> Option<i64> {
        self.sessions.remove(session)?;
        let zxid = self.kill(session, how, asked);
        self.unstall(session, None);
        Some(zxid)
    }

    /// The closeSession transaction: a zxid, the session's ephemerals
    /// deleted with it, watchers told, its connections closed.
    fn kill(&mut self, session: i64, how: SessionEvent, asked: Option<(ConnId, i32)>) -> i64 {
        let zxid = self.next_zxid();
        let now = self.clock.now_ms();
        self.observers.session(now, session, how, zxid);
        self.commit(Txn {
            zxid,
            time: self.clock.wall_ms(),
            session,
            auth: Arc::from([]),
            op: TxnOp::CloseSession,
            origin: asked,
        });
        zxid
    }

    /// Unbinds a removed session from its connection (which the caller
    /// closes) and its stall.
    fn unbind(&mut self, session: i64, conn: Option<ConnId>) {
        if let Some(c) = conn.and_then(|c| self.out.conns.get_mut(&c)) {
            c.session = None;
        }
        self.unstall(session, conn);
    }

    /// A removed session's stall ends. Connections waiting to re-attach it
    /// may go on: they will be told it expired. `bound`, the connection the
    /// caller closes, stays shut, so what it held is dropped with it.
    fn unstall(&mut self, session: i64, bound: Option<ConnId>) {
        if self.stalled.remove(&session) {
            for (&id, c) in self.out.conns.iter_mut() {
                if c.stalled_for == Some(session) && Some(id) != bound {
                    c.stalled_for = None;
                    let _ = c.gate.send(Gate::Open);
                }
            }
        }
    }

    /// A new, closed gate.
    pub(crate) fn new_gate(&mut self) -> u64 {
        let id = self.gates.keys().next_back().map_or(1, |last| last + 1);
        self.gates.insert(id, watch::Sender::new(false));
        id
    }

    /// Whether gate `id` is open (an unknown gate counts as open: it holds
    /// nothing), and a receiver that sees it open.
    pub(crate) fn gate_state(&self, id: u64) -> Option<watch::Receiver<bool>> {
        self.gates
            .get(&id)
            .filter(|g| !*g.borrow())
            .map(watch::Sender::subscribe)
    }

    /// Opens gate `id`: what it held goes on (the connections' tasks see it
    /// open; the expiry cleanups it held are applied now). False if it was
    /// not a closed gate.
    pub(crate) fn open_gate(&mut self, id: u64) -> bool {
        let Some(g) = self.gates.get(&id) else {
            return false;
        };
        if *g.borrow() {
            return false;
        }
        g.send_replace(true);
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held_kills)
            .into_iter()
            .partition(|(gate, _)| *gate == id);
        self.held_kills = later;
        for (_, session) in due {
            let zxid = self.kill(session, SessionEvent::Expired, None);
            tracing::info!(
                session = format_args!("{session:#x}"),
                zxid,
                gate = id,
                "expired session's ephemerals deleted (the gate that held them opened)"
            );
        }
        tracing::debug!(gate = id, "gate opened");
        self.changed();
        true
    }

    /// Holds a request unapplied on `conn` until its gate opens; the
    /// connection's reader stops reading until then.
    pub(crate) fn hold_request(&mut self, conn: ConnId, held: HeldRequest) {
        self.held_requests.insert(conn, held);
    }

    /// The gate a request held on `conn` waits for, if one is held.
    pub(crate) fn held_request_gate(&self, conn: ConnId) -> Option<watch::Receiver<bool>> {
        self.held_requests.get(&conn).map(|h| h.open.clone())
    }

    /// Applies the request held on `conn` (its gate opened), without judging
    /// it again. What it returns is what applying it returned.
    pub(crate) fn release_request(&mut self, conn: ConnId) -> Flow {
        match self.held_requests.remove(&conn) {
            Some(h) => self.process_judged(conn, h.xid, h.op, h.req, false),
            None => Flow::Continue,
        }
    }

    /// Applies the closeSession transactions of expired sessions whose
    /// cleanup delay is over.
    pub(crate) fn kill_due(&mut self) {
        if self.pending_kills.is_empty() {
            return;
        }
        let now = self.clock.now_ms();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_kills)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.pending_kills = later;
        for (_, session) in due {
            let zxid = self.kill(session, SessionEvent::Expired, None);
            tracing::info!(
                session = format_args!("{session:#x}"),
                zxid,
                "expired session's ephemerals deleted (delayed cleanup)"
            );
        }
        self.changed();
    }

    /// Server-side expiry: closeSession, then close the connection with nothing sent.
    pub(crate) fn expire(&mut self, session: i64) -> bool {
        let conn = self.sessions.get(session).and_then(|s| s.conn);
        let delay = self.settings.expiry_cleanup_delay_ms;
        if delay > 0 {
            // The session is gone (a re-attach is told it expired), but its
            // closeSession transaction comes later.
            let Some(s) = self.sessions.remove(session) else {
                return false;
            };
            self.unbind(session, s.conn);
            self.pending_kills
                .push((self.clock.now_ms() + delay, session));
            tracing::info!(session = format_args!("{session:#x}"), "session expired");
            if let Some(conn) = conn {
                self.close_conn(conn);
            }
        } else if self
            .close_session(session, SessionEvent::Expired, None)
            .is_some()
        {
            // Its connection closes when its server applies the closeSession.
            tracing::info!(session = format_args!("{session:#x}"), "session expired");
        } else {
            return false;
        }
        self.changed();
        true
    }

    /// Server-side expiry whose closeSession transaction (the deletion of
    /// the session's ephemerals) waits until gate `gate` opens; the session
    /// itself ends now. A gate that is open already: at once, as
    /// [`expire`](Self::expire).
    pub(crate) fn expire_until(&mut self, session: i64, gate: u64) -> bool {
        if self.gate_state(gate).is_none() {
            return self.expire(session);
        }
        let conn = self.sessions.get(session).and_then(|s| s.conn);
        let Some(s) = self.sessions.remove(session) else {
            return false;
        };
        self.unbind(session, s.conn);
        self.held_kills.push((gate, session));
        tracing::info!(
            session = format_args!("{session:#x}"),
            gate,
            "session expired; its ephemerals stay until the gate opens"
        );
        self.changed();
        if let Some(conn) = conn {
            self.close_conn(conn);
        }
        true
    }

    /// The container check (`ContainerManager.checkContainers`), now: deletes
    /// every childless container that once had a child and every childless
    /// TTL node unmodified for longer than its TTL, each as its own
    /// transaction (firing NodeDeleted and the parent's
    /// NodeChildrenChanged). Returns how many it deleted.
    pub(crate) fn check_containers(&mut self) -> usize {
        let candidates = self.tree().reap_candidates(self.clock.wall_ms());
        let mut deleted = 0;
        for path in candidates {
            let zxid = self.next_zxid();
            let applied = self.commit(Txn {
                zxid,
                time: self.clock.wall_ms(),
                session: 0,
                auth: Arc::from([]),
                op: TxnOp::DeleteContainer(path.clone()),
                origin: None,
            });
            if applied.err == 0 {
                tracing::debug!(path, zxid, "container check deleted a node");
                deleted += 1;
            } else {
                tracing::debug!(path, zxid, err = applied.err, "container check failed");
            }
        }
        if deleted > 0 {
            self.changed();
        }
        deleted
    }

    /// Expires every session; returns how many.
    pub(crate) fn expire_all(&mut self) -> usize {
        let ids: Vec<i64> = self.sessions.iter().map(|s| s.id).collect();
        ids.into_iter().filter(|id| self.expire(*id)).count()
    }

    /// Puts the server back as a new one (see [`ZkMock::reset`](crate::ZkMock::reset)).
    pub(crate) fn reset(&mut self) {
        for (id, _, _) in self.observers.rules.list() {
            self.observers.rules.remove(id);
        }
        self.refusing = false;
        for id in self.stalled.clone() {
            self.resume(id);
        }
        let gates: Vec<u64> = self.gates.keys().copied().collect();
        for id in gates {
            self.open_gate(id);
        }
        self.expire_all();
        let zxid = self.next_zxid();
        self.commit(Txn {
            zxid,
            time: self.clock.wall_ms(),
            session: 0,
            auth: Arc::from([]),
            op: TxnOp::Wipe,
            origin: None,
        });
        self.observers.clear();
        self.changed();
    }

    /// Runs the container check if one is due on the session clock (at a
    /// fixed rate; checks missed while time jumped collapse into one).
    pub(crate) fn check_containers_due(&mut self) {
        let now = self.clock.now_ms();
        if now < self.next_container_check {
            return;
        }
        let interval = self.settings.container_check_interval_ms.max(1);
        self.next_container_check += ((now - self.next_container_check) / interval + 1) * interval;
        self.check_containers();
    }

    /// Expires every session whose deadline has passed.
    pub(crate) fn expire_due(&mut self) {
        if self.electing {
            // No leader, no session tracker: nothing expires.
            return;
        }
        let now = self.clock.now_ms();
        for id in self.sessions.expired(now) {
            self.expire(id);
        }
        self.kill_due();
        self.settle_all();
    }

    /// Tells waiters that something was recorded.
    pub(crate) fn changed(&self) {
        self.observers.changed();
    }
}

impl Live for State {
    fn snapshot(&self) -> Snapshot {
        State::snapshot(self)
    }

    fn session_ids(&self) -> Vec<SessionId> {
        let mut ids: Vec<SessionId> = self.sessions.iter().map(|s| SessionId(s.id)).collect();
        ids.sort_unstable();
        ids
    }
}
