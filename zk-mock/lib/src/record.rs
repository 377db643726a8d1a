//! The recorder: a bounded log of every request the server answered (or
//! dropped, or faulted) and of every watch registration and notification,
//! plus unbounded per-session and per-path counters.
//!
//! Queries are iterators: [`RequestQuery`] and [`NotificationQuery`] add
//! typed filters to any iterator of records, so nothing is copied to
//! narrow a query down. They run over a [`RecordView`] of the live log
//! ([`ZkMock::inspect`](crate::ZkMock::inspect), nothing copied) or over an
//! owned [`Recording`] ([`ZkMock::recorded`](crate::ZkMock::recorded)).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use zk_mock::proto::{ErrorCode, EventType};
//! use zk_mock::fault::OpFamily;
//! use zk_mock::record::{NotificationQuery, RequestQuery};
//! let zk = zk_mock::ZkMock::start().await;
//! // ... clients run ...
//! let (failed_creates, deletions) = zk.inspect(|log| {
//!     let failed = log.requests().op(OpFamily::Create).error(ErrorCode::NodeExists).count();
//!     let deleted = log.notifications().under("/locks/").event(EventType::NodeDeleted).count();
//!     (failed, deleted)
//! });
//! # assert_eq!((failed_creates, deletions), (0, 0));
//! # }
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use serde::Serialize;

use crate::compact::Sparse;
use crate::fault::OpFamily;
use crate::hash::{Map, StrMap};
use crate::proto::{ErrorCode, EventType, OpCode};
use crate::snapshot::Snapshot;
use crate::SessionId;

/// Default number of records of each kind kept before the oldest are dropped.
pub const DEFAULT_CAPACITY: usize = 100_000;

pub use crate::watch::WatchKind;

/// A request as the core answered it (or dropped, or faulted).
#[derive(Debug)]
pub(crate) struct RequestSeen {
    pub(crate) at_ms: u64,
    pub(crate) session: i64,
    pub(crate) xid: i32,
    pub(crate) op: i32,
    pub(crate) path: Option<NodePath>,
    pub(crate) err: i32,
    pub(crate) zxid: i64,
    /// The fault verdict played, if a rule matched.
    pub(crate) verdict: Option<String>,
    /// The server it came through.
    pub(crate) server: usize,
}

/// A notification as a server queued it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NotificationSeen<'a> {
    pub(crate) at_ms: u64,
    pub(crate) session: i64,
    pub(crate) path: &'a str,
    pub(crate) kind: WatchKind,
    pub(crate) event_type: i32,
    pub(crate) zxid: i64,
    pub(crate) server: usize,
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRecord {
    /// Position in the server's history (shared by all record kinds).
    pub seq: u64,
    /// Session-clock ms when it was handled.
    pub at_ms: u64,
    /// The session.
    pub session: SessionId,
    /// The request's xid.
    pub xid: i32,
    /// The op code as sent.
    pub op_code: i32,
    /// The op's name (`create`, `getData`, …), or `unknown`.
    pub op: &'static str,
    /// The path the request named, if any: the tree's own copy of it when
    /// the node was there as the request came in (a [`NodePath`] reads as
    /// a `str`).
    pub path: Option<NodePath>,
    /// The error code answered (0 on success).
    pub err: i32,
    /// The zxid in the reply header (the transaction's zxid for writes).
    pub zxid: i64,
    /// The fault verdict applied, if a rule matched.
    pub verdict: Option<String>,
    /// The server (of an ensemble; 0 for a single server) it came through.
    pub server: usize,
}

/// A watch registered by a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WatchRecord {
    /// Position in the server's history.
    pub seq: u64,
    /// Session-clock ms.
    pub at_ms: u64,
    /// The session that registered it.
    pub session: SessionId,
    /// The watched path.
    pub path: String,
    /// The kind of watch.
    pub kind: WatchKind,
}

/// A notification queued to a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotificationRecord {
    /// Position in the server's history.
    pub seq: u64,
    /// Session-clock ms.
    pub at_ms: u64,
    /// The session notified.
    pub session: SessionId,
    /// The event's path.
    pub path: String,
    /// The kind of watch that fired.
    pub kind: WatchKind,
    /// `EventType`: 1 created, 2 deleted, 3 data changed, 4 children changed.
    pub event_type: i32,
    /// The zxid of the transaction that caused it (0 for SetWatches replays).
    /// On the wire a 3.8 server sends −1.
    pub zxid: i64,
    /// The server (of an ensemble; 0 for a single server) that sent it.
    pub server: usize,
}

/// What happened to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionEvent {
    /// A new session was created (a zxid consumed).
    Created,
    /// A new connection re-attached it with its id and password.
    Reattached,
    /// A connection's re-attach was refused: unknown, expired or wrong password.
    Refused,
    /// A connection was closed unanswered because the client had seen a
    /// zxid its server has not applied (`lastZxidSeen`, CLIENT_ZXID_AHEAD):
    /// what sends a client away from an ensemble server that is behind it.
    /// The zxid is the server's.
    ZxidAhead,
    /// Its connection was closed (by the client, a fault or a reconnect elsewhere).
    Disconnected,
    /// The client closed it (closeSession).
    Closed,
    /// The server expired it.
    Expired,
}

/// A session lifecycle record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionRecord {
    /// Position in the server's history.
    pub seq: u64,
    /// Session-clock ms.
    pub at_ms: u64,
    /// The session.
    pub session: SessionId,
    /// What happened.
    pub event: SessionEvent,
    /// The zxid of the transaction, for Created, Closed and Expired (else the last zxid).
    pub zxid: i64,
}

/// What a transaction did to one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChangeKind {
    /// The node was created.
    Created,
    /// The node was deleted (by a delete, or with its session's ephemerals).
    Deleted,
    /// The node's data was set.
    DataChanged,
}

/// A node's path in a [`ChangeRecord`]: the server's tree, the change and
/// its record share one copy of it. It reads as a `str` (it derefs to one,
/// and compares with `&str` and `String`), prints as one and serializes as
/// one.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodePath(Arc<str>);

impl NodePath {
    /// The path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A path that shares `path`'s copy.
    pub(crate) fn shared(path: Arc<str>) -> NodePath {
        NodePath(path)
    }
}

/// The empty path (what `Option<NodePath>::unwrap_or_default` gives).
impl Default for NodePath {
    fn default() -> NodePath {
        NodePath(Arc::from(""))
    }
}

impl std::ops::Deref for NodePath {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for NodePath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for NodePath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for NodePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for NodePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for NodePath {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for NodePath {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for NodePath {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl From<&str> for NodePath {
    fn from(p: &str) -> NodePath {
        NodePath(p.into())
    }
}

impl From<String> for NodePath {
    fn from(p: String) -> NodePath {
        NodePath(p.into())
    }
}

impl From<NodePath> for String {
    fn from(p: NodePath) -> String {
        p.0.to_string()
    }
}

impl Serialize for NodePath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// One change to the tree, in commit order: the server's own history of
/// the data, independent of who watched it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeRecord {
    /// Position in the server's history.
    pub seq: u64,
    /// Session-clock ms.
    pub at_ms: u64,
    /// The zxid of the transaction.
    pub zxid: i64,
    /// The session whose request (or whose expiry or close) made the change.
    pub session: SessionId,
    /// The node's path (the full name, sequence suffix included).
    pub path: NodePath,
    /// What happened to it.
    pub kind: ChangeKind,
}

/// Totals that survive the log's bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Requests handled.
    pub requests: u64,
    /// Requests answered with an error.
    pub errors: u64,
    /// Watches registered.
    pub watches: u64,
    /// Notifications queued.
    pub notifications: u64,
}

/// The live log inside the server: one of the pipeline's observers (see
/// `observe.rs`; the counters are another).
#[derive(Debug)]
pub(crate) struct Recorder {
    enabled: bool,
    capacity: usize,
    seq: u64,
    requests: VecDeque<RequestRecord>,
    watches: VecDeque<WatchRecord>,
    notifications: VecDeque<NotificationRecord>,
    sessions: VecDeque<SessionRecord>,
    changes: VecDeque<ChangeRecord>,
    dropped: u64,
}

/// The kinds of record that count against a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogKind {
    Request,
    Watch,
    Notification,
    Change,
}

/// How many ended sessions and deleted paths keep their counters.
pub const RETAINED_ENDED: usize = 10_000;

impl Recorder {
    pub(crate) fn new(enabled: bool, capacity: usize) -> Recorder {
        Recorder {
            enabled,
            capacity: capacity.max(1),
            seq: 0,
            requests: VecDeque::new(),
            watches: VecDeque::new(),
            notifications: VecDeque::new(),
            sessions: VecDeque::new(),
            changes: VecDeque::new(),
            dropped: 0,
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Whether it keeps records.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// The seq the next record will have: every record so far is below it.
    pub(crate) fn end_seq(&self) -> u64 {
        self.seq + 1
    }

    /// The seq of the record the next one of `kind` pushes out (that queue
    /// is full), if any.
    pub(crate) fn next_dropped(&self, kind: LogKind) -> Option<u64> {
        let (len, front) = match kind {
            LogKind::Request => (self.requests.len(), self.requests.front().map(|r| r.seq)),
            LogKind::Watch => (self.watches.len(), self.watches.front().map(|r| r.seq)),
            LogKind::Notification => (
                self.notifications.len(),
                self.notifications.front().map(|r| r.seq),
            ),
            LogKind::Change => (self.changes.len(), self.changes.front().map(|r| r.seq)),
        };
        if self.enabled && len >= self.capacity {
            front
        } else {
            None
        }
    }

    fn push<T>(q: &mut VecDeque<T>, cap: usize, dropped: &mut u64, v: T) {
        if q.len() == cap {
            q.pop_front();
            *dropped += 1;
        }
        q.push_back(v);
    }

    pub(crate) fn request(&mut self, r: RequestSeen) {
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let op = OpCode::from_i32(r.op).map_or("unknown", OpCode::name);
        let r = RequestRecord {
            seq,
            at_ms: r.at_ms,
            session: SessionId(r.session),
            xid: r.xid,
            op_code: r.op,
            op,
            path: r.path,
            err: r.err,
            zxid: r.zxid,
            verdict: r.verdict,
            server: r.server,
        };
        Self::push(&mut self.requests, self.capacity, &mut self.dropped, r);
    }

    pub(crate) fn watch(&mut self, at_ms: u64, session: i64, path: &str, kind: WatchKind) {
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let r = WatchRecord {
            seq,
            at_ms,
            session: SessionId(session),
            path: path.to_string(),
            kind,
        };
        Self::push(&mut self.watches, self.capacity, &mut self.dropped, r);
    }

    pub(crate) fn notification(&mut self, n: NotificationSeen<'_>) {
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let r = NotificationRecord {
            seq,
            at_ms: n.at_ms,
            session: SessionId(n.session),
            path: n.path.to_string(),
            kind: n.kind,
            event_type: n.event_type,
            zxid: n.zxid,
            server: n.server,
        };
        Self::push(&mut self.notifications, self.capacity, &mut self.dropped, r);
    }

    pub(crate) fn session(&mut self, at_ms: u64, session: i64, event: SessionEvent, zxid: i64) {
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let r = SessionRecord {
            seq,
            at_ms,
            session: SessionId(session),
            event,
            zxid,
        };
        Self::push(&mut self.sessions, self.capacity, &mut self.dropped, r);
    }

    pub(crate) fn change(
        &mut self,
        at_ms: u64,
        zxid: i64,
        session: i64,
        path: Arc<str>,
        kind: ChangeKind,
    ) {
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let r = ChangeRecord {
            seq,
            at_ms,
            zxid,
            session: SessionId(session),
            path: NodePath(path),
            kind,
        };
        Self::push(&mut self.changes, self.capacity, &mut self.dropped, r);
    }

    pub(crate) fn changes(&self) -> Vec<ChangeRecord> {
        self.changes.iter().cloned().collect()
    }

    pub(crate) fn clear(&mut self) {
        self.sessions.clear();
        self.changes.clear();
        self.requests.clear();
        self.watches.clear();
        self.notifications.clear();
        self.dropped = 0;
    }

    /// The log as an owned [`Recording`]; its counters are left empty, for
    /// the caller to fill from the tally.
    pub(crate) fn snapshot(&self, seed: u64) -> Recording {
        Recording {
            seed,
            requests: Requests(self.requests.iter().cloned().collect()),
            watches: self.watches.iter().cloned().collect(),
            notifications: Notifications(self.notifications.iter().cloned().collect()),
            sessions: self.sessions.iter().cloned().collect(),
            changes: self.changes.iter().cloned().collect(),
            dropped: self.dropped,
            per_session: BTreeMap::new(),
            per_path: BTreeMap::new(),
            total: Counters::default(),
        }
    }

    pub(crate) fn requests(&self) -> Requests {
        Requests(self.requests.iter().cloned().collect())
    }

    pub(crate) fn notifications(&self) -> Notifications {
        Notifications(self.notifications.iter().cloned().collect())
    }
}

/// An owned copy of everything recorded so far.
#[derive(Debug, Clone, Serialize)]
pub struct Recording {
    /// The seed of the server that recorded it.
    pub seed: u64,
    /// Requests, oldest first.
    pub requests: Requests,
    /// Watch registrations, oldest first.
    pub watches: Vec<WatchRecord>,
    /// Notifications, oldest first.
    pub notifications: Notifications,
    /// Session lifecycle events, oldest first.
    pub sessions: Vec<SessionRecord>,
    /// Changes to the tree, oldest first.
    pub changes: Vec<ChangeRecord>,
    /// Records dropped because the log was full.
    pub dropped: u64,
    /// Totals per session: every live session's, and those of the last
    /// [`RETAINED_ENDED`] sessions that were closed or expired.
    pub per_session: BTreeMap<SessionId, Counters>,
    /// Totals per path: every path's, except those deleted (and not created
    /// again) before the last [`RETAINED_ENDED`] deletions.
    pub per_path: BTreeMap<String, Counters>,
    /// Totals for the whole server.
    pub total: Counters,
}

impl Recording {
    /// Every record as one JSON object per line, in history order, each with
    /// a `"type"` of `request`, `watch`, `notification`, `session` or `change`.
    pub fn to_json_lines(&self) -> String {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Line<'a> {
            Request(&'a RequestRecord),
            Watch(&'a WatchRecord),
            Notification(&'a NotificationRecord),
            Session(&'a SessionRecord),
            Change(&'a ChangeRecord),
        }
        let mut lines: Vec<(u64, Line<'_>)> = Vec::new();
        lines.extend(self.requests.iter().map(|r| (r.seq, Line::Request(r))));
        lines.extend(self.watches.iter().map(|r| (r.seq, Line::Watch(r))));
        lines.extend(self.sessions.iter().map(|r| (r.seq, Line::Session(r))));
        lines.extend(self.changes.iter().map(|r| (r.seq, Line::Change(r))));
        lines.extend(
            self.notifications
                .iter()
                .map(|r| (r.seq, Line::Notification(r))),
        );
        lines.sort_by_key(|(s, _)| *s);
        let mut out = String::new();
        for (_, l) in lines {
            out.push_str(&serde_json::to_string(&l).unwrap_or_default());
            out.push('\n');
        }
        out
    }
}

impl fmt::Display for Recording {
    /// The history as a failing test wants to read it: one line per record.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "recording (seed {}, {} dropped):",
            self.seed, self.dropped
        )?;
        let mut lines: Vec<(u64, String)> = Vec::new();
        for r in self.requests.iter() {
            let v = r
                .verdict
                .as_deref()
                .map(|v| format!(" [{v}]"))
                .unwrap_or_default();
            lines.push((
                r.seq,
                format!(
                    "{:>6} req   {:#x} {} {} xid={} err={} zxid={:#x}{v}",
                    r.seq,
                    r.session,
                    r.op,
                    r.path.as_deref().unwrap_or("-"),
                    r.xid,
                    r.err,
                    r.zxid
                ),
            ));
        }
        for w in &self.watches {
            lines.push((
                w.seq,
                format!(
                    "{:>6} watch {:#x} {:?} {}",
                    w.seq, w.session, w.kind, w.path
                ),
            ));
        }
        for n in self.notifications.iter() {
            lines.push((
                n.seq,
                format!(
                    "{:>6} event {:#x} {} {} ({:?}) zxid={:#x}",
                    n.seq,
                    n.session,
                    event_name(n.event_type),
                    n.path,
                    n.kind,
                    n.zxid
                ),
            ));
        }
        for r in &self.sessions {
            lines.push((
                r.seq,
                format!(
                    "{:>6} sess  {:#x} {:?} zxid={:#x}",
                    r.seq, r.session, r.event, r.zxid
                ),
            ));
        }
        for r in &self.changes {
            lines.push((
                r.seq,
                format!(
                    "{:>6} chg   {:#x} {:?} {} zxid={:#x}",
                    r.seq, r.session, r.kind, r.path, r.zxid
                ),
            ));
        }
        lines.sort_by_key(|(s, _)| *s);
        for (_, l) in lines {
            writeln!(f, "{l}")?;
        }
        Ok(())
    }
}

/// `EventType`'s name for a wire value.
pub fn event_name(t: i32) -> &'static str {
    EventType::from_i32(t).map_or("Unknown", EventType::name)
}

impl RequestRecord {
    /// The op code, if the server knows it.
    pub fn opcode(&self) -> Option<OpCode> {
        OpCode::from_i32(self.op_code)
    }

    /// The error answered ([`ErrorCode::Ok`] on success), if the code is known.
    pub fn error(&self) -> Option<ErrorCode> {
        ErrorCode::from_i32(self.err)
    }
}

impl NotificationRecord {
    /// The event type, if the code is known.
    pub fn event(&self) -> Option<EventType> {
        EventType::from_i32(self.event_type)
    }
}

/// Which requests an op filter keeps: one op code, or a family of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpFilter {
    /// Exactly this op code.
    Code(OpCode),
    /// Every op code of the family ([`OpFamily::Create`]: create, create2,
    /// createContainer, createTTL).
    Family(OpFamily),
}

impl OpFilter {
    fn keeps(self, op_code: i32) -> bool {
        match self {
            OpFilter::Code(c) => c as i32 == op_code,
            OpFilter::Family(f) => f.codes().iter().any(|c| *c as i32 == op_code),
        }
    }
}

impl From<OpCode> for OpFilter {
    fn from(c: OpCode) -> OpFilter {
        OpFilter::Code(c)
    }
}

impl From<OpFamily> for OpFilter {
    fn from(f: OpFamily) -> OpFilter {
        OpFilter::Family(f)
    }
}

/// Typed filters for any iterator of [`RequestRecord`]s: they narrow the
/// query lazily, without copying a record.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use zk_mock::{fault::OpFamily, proto::ErrorCode, record::RequestQuery};
/// let zk = zk_mock::ZkMock::start().await;
/// let recording = zk.recorded();
/// let failed: Vec<_> = recording
///     .requests
///     .iter()
///     .op(OpFamily::Create)
///     .under("/locks/")
///     .errors()
///     .collect();
/// assert!(failed.is_empty());
/// assert_eq!(recording.requests.iter().error(ErrorCode::NoNode).count(), 0);
/// # }
/// ```
pub trait RequestQuery<'a>: Iterator<Item = &'a RequestRecord> + Sized {
    /// Only this session's.
    fn by_session(self, id: impl Into<SessionId>) -> impl Iterator<Item = &'a RequestRecord> {
        let id = id.into();
        self.filter(move |r| r.session == id)
    }
    /// Only those naming exactly this path.
    fn by_path(self, path: impl AsRef<str>) -> impl Iterator<Item = &'a RequestRecord> {
        self.filter(move |r| r.path.as_deref() == Some(path.as_ref()))
    }
    /// Only those whose path starts with `prefix`.
    fn under(self, prefix: impl AsRef<str>) -> impl Iterator<Item = &'a RequestRecord> {
        self.filter(move |r| {
            r.path
                .as_deref()
                .is_some_and(|p| p.starts_with(prefix.as_ref()))
        })
    }
    /// Only this op code ([`OpCode`]) or family ([`OpFamily`]).
    fn op(self, op: impl Into<OpFilter>) -> impl Iterator<Item = &'a RequestRecord> {
        let op = op.into();
        self.filter(move |r| op.keeps(r.op_code))
    }
    /// Only those answered with this error.
    fn error(self, code: ErrorCode) -> impl Iterator<Item = &'a RequestRecord> {
        self.filter(move |r| r.err == code as i32)
    }
    /// Only those answered with an error.
    fn errors(self) -> impl Iterator<Item = &'a RequestRecord> {
        self.filter(|r| r.err != 0)
    }
    /// Only those a fault rule acted on.
    fn faulted(self) -> impl Iterator<Item = &'a RequestRecord> {
        self.filter(|r| r.verdict.is_some())
    }
    /// Only those that came through this server of an ensemble.
    fn through(self, server: usize) -> impl Iterator<Item = &'a RequestRecord> {
        self.filter(move |r| r.server == server)
    }
}

impl<'a, I: Iterator<Item = &'a RequestRecord>> RequestQuery<'a> for I {}

/// Typed filters for any iterator of [`NotificationRecord`]s, lazily, as
/// [`RequestQuery`].
pub trait NotificationQuery<'a>: Iterator<Item = &'a NotificationRecord> + Sized {
    /// Only those sent to this session.
    fn to_session(self, id: impl Into<SessionId>) -> impl Iterator<Item = &'a NotificationRecord> {
        let id = id.into();
        self.filter(move |n| n.session == id)
    }
    /// Only those about exactly this path.
    fn by_path(self, path: impl AsRef<str>) -> impl Iterator<Item = &'a NotificationRecord> {
        self.filter(move |n| n.path == path.as_ref())
    }
    /// Only those about paths starting with `prefix`.
    fn under(self, prefix: impl AsRef<str>) -> impl Iterator<Item = &'a NotificationRecord> {
        self.filter(move |n| n.path.starts_with(prefix.as_ref()))
    }
    /// Only this event type.
    fn event(self, event: EventType) -> impl Iterator<Item = &'a NotificationRecord> {
        self.filter(move |n| n.event_type == event as i32)
    }
    /// Only those of this kind of watch.
    fn kind(self, kind: WatchKind) -> impl Iterator<Item = &'a NotificationRecord> {
        self.filter(move |n| n.kind == kind)
    }
    /// Only those caused by the transaction with this zxid.
    fn zxid(self, zxid: i64) -> impl Iterator<Item = &'a NotificationRecord> {
        self.filter(move |n| n.zxid == zxid)
    }
    /// Only those this server of an ensemble sent.
    // A filter in a query chain (`….from_server(1)`), not a conversion.
    #[allow(clippy::wrong_self_convention)]
    fn from_server(self, server: usize) -> impl Iterator<Item = &'a NotificationRecord> {
        self.filter(move |n| n.server == server)
    }
}

impl<'a, I: Iterator<Item = &'a NotificationRecord>> NotificationQuery<'a> for I {}

/// The live log, borrowed for the time of a
/// [`ZkMock::inspect`](crate::ZkMock::inspect) call or a
/// [`ZkMock::wait_until`](crate::ZkMock::wait_until) check: queries run
/// over it without copying it. The server is paused meanwhile.
#[derive(Clone, Copy)]
pub struct RecordView<'a> {
    live: &'a dyn Live,
    log: &'a Recorder,
    tally: &'a Tally,
    seed: u64,
}

/// What a [`RecordView`] shows of the live server besides the log: the
/// core provides it.
pub(crate) trait Live {
    /// The tree, sessions and watches, as an owned copy.
    fn snapshot(&self) -> Snapshot;
    /// The live sessions, in id order.
    fn session_ids(&self) -> Vec<SessionId>;
}

impl fmt::Debug for RecordView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordView")
            .field("requests", &self.log.requests.len())
            .field("notifications", &self.log.notifications.len())
            .finish_non_exhaustive()
    }
}

impl<'a> RecordView<'a> {
    pub(crate) fn new(
        live: &'a dyn Live,
        log: &'a Recorder,
        tally: &'a Tally,
        seed: u64,
    ) -> RecordView<'a> {
        RecordView {
            live,
            log,
            tally,
            seed,
        }
    }

    /// The tree, sessions and watches as they stand, as an owned copy
    /// (as [`ZkMock::snapshot`](crate::ZkMock::snapshot)).
    pub fn snapshot(&self) -> Snapshot {
        self.live.snapshot()
    }

    /// The live sessions, in id order.
    pub fn session_ids(&self) -> Vec<SessionId> {
        self.live.session_ids()
    }

    /// Requests, oldest first.
    pub fn requests(&self) -> impl DoubleEndedIterator<Item = &'a RequestRecord> + Clone {
        self.log.requests.iter()
    }

    /// Watch registrations, oldest first.
    pub fn watches(&self) -> impl DoubleEndedIterator<Item = &'a WatchRecord> + Clone {
        self.log.watches.iter()
    }

    /// Notifications, oldest first.
    pub fn notifications(&self) -> impl DoubleEndedIterator<Item = &'a NotificationRecord> + Clone {
        self.log.notifications.iter()
    }

    /// Session lifecycle events, oldest first.
    pub fn sessions(&self) -> impl DoubleEndedIterator<Item = &'a SessionRecord> + Clone {
        self.log.sessions.iter()
    }

    /// Changes to the tree, oldest first.
    pub fn changes(&self) -> impl DoubleEndedIterator<Item = &'a ChangeRecord> + Clone {
        self.log.changes.iter()
    }

    /// Totals for the whole server.
    pub fn total(&self) -> Counters {
        self.tally.total
    }

    /// A session's totals (see [`Recording::per_session`]).
    pub fn per_session(&self, id: impl Into<SessionId>) -> Option<Counters> {
        self.tally.per_session.get(&id.into().0).copied()
    }

    /// A path's totals (see [`Recording::per_path`]).
    pub fn per_path(&self, path: &str) -> Option<Counters> {
        self.tally.per_path.get(path).copied()
    }

    /// Records dropped because the log was full.
    pub fn dropped(&self) -> u64 {
        self.log.dropped
    }

    /// An owned copy of all of it.
    pub fn to_recording(&self) -> Recording {
        Recording::of(self.log, self.tally, self.seed)
    }
}

/// Recorded requests: an owned copy of the log, in order
/// ([`ZkMock::requests`](crate::ZkMock::requests)). Query it through
/// [`iter`](Self::iter) and [`RequestQuery`]'s filters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Requests(pub Vec<RequestRecord>);

impl Requests {
    /// How many.
    pub fn count(&self) -> usize {
        self.0.len()
    }
    /// Iterates over them; the [`RequestQuery`] filters apply.
    pub fn iter(&self) -> std::slice::Iter<'_, RequestRecord> {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a Requests {
    type Item = &'a RequestRecord;
    type IntoIter = std::slice::Iter<'a, RequestRecord>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Recorded notifications: an owned copy of the log, in order
/// ([`ZkMock::notifications`](crate::ZkMock::notifications)). Query it
/// through [`iter`](Self::iter) and [`NotificationQuery`]'s filters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Notifications(pub Vec<NotificationRecord>);

impl Notifications {
    /// How many.
    pub fn count(&self) -> usize {
        self.0.len()
    }
    /// Iterates over them; the [`NotificationQuery`] filters apply.
    pub fn iter(&self) -> std::slice::Iter<'_, NotificationRecord> {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a Notifications {
    type Item = &'a NotificationRecord;
    type IntoIter = std::slice::Iter<'a, NotificationRecord>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl Recording {
    /// An owned copy of the log and the counters.
    pub(crate) fn of(log: &Recorder, tally: &Tally, seed: u64) -> Recording {
        let mut r = log.snapshot(seed);
        r.per_session = tally
            .per_session
            .iter()
            .map(|(id, c)| (SessionId(*id), *c))
            .collect();
        r.per_path = tally.per_path_sorted();
        r.total = tally.total;
        r
    }
}

/// The counters: totals, per session and per path. Unbounded for what is
/// live; of what ended (sessions closed or expired, paths deleted) only the
/// last [`RETAINED_ENDED`] keep theirs.
///
/// Every request, watch and notification counts against its session and
/// its path, so both tables are hash maps (one hash and one comparison per
/// count, where an ordered map compared the key against a dozen others);
/// they are sorted only when a [`Recording`] is taken.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) total: Counters,
    pub(crate) per_session: Map<i64, Counters>,
    pub(crate) per_path: StrMap<Counters>,
    ended_sessions: Ended<i64>,
    deleted_paths: Ended<Arc<str>>,
    /// With the log on: every logged record before this seq is counted
    /// against its path (see [`Tally::catch_up`]).
    paths_counted_to: u64,
}

impl Tally {
    /// Counts an event in the totals and its session's counters (its path's
    /// is [`count_path`](Self::count_path), or the log's, see [`catch_up`](Self::catch_up)).
    pub(crate) fn count(&mut self, session: i64, f: impl Fn(&mut Counters)) {
        f(&mut self.total);
        f(self.per_session.entry(session).or_default());
    }

    /// Counts an event against its path.
    pub(crate) fn count_path(&mut self, path: &str, f: impl Fn(&mut Counters)) {
        f(self.per_path.get_or_insert_with(path, Counters::default));
    }

    /// Every logged record below this seq is counted against its path.
    pub(crate) fn paths_counted_to(&self) -> u64 {
        self.paths_counted_to
    }

    /// With the log on, the per-path counters are tallied from it, lazily:
    /// counts every logged request, watch, notification and change with a
    /// seq below `upto` that is not counted yet, in history order, as
    /// [`count_path`](Self::count_path) and [`path_changed`](Self::path_changed)
    /// would have as each happened. Called before the per-path counters are
    /// read and before the log drops a record, so the counters are the
    /// same as if kept as each event happened; a server nobody asks does
    /// not pay for them on its request path.
    pub(crate) fn catch_up(&mut self, log: &Recorder, upto: u64) {
        let from = self.paths_counted_to;
        if upto <= from {
            return;
        }
        let mut at = [
            log.requests.partition_point(|x| x.seq < from),
            log.watches.partition_point(|x| x.seq < from),
            log.notifications.partition_point(|x| x.seq < from),
            log.changes.partition_point(|x| x.seq < from),
        ];
        loop {
            let heads = [
                log.requests.get(at[0]).map(|x| x.seq),
                log.watches.get(at[1]).map(|x| x.seq),
                log.notifications.get(at[2]).map(|x| x.seq),
                log.changes.get(at[3]).map(|x| x.seq),
            ];
            let next = heads
                .iter()
                .enumerate()
                .filter_map(|(k, s)| s.filter(|&s| s < upto).map(|s| (s, k)))
                .min();
            let Some((_, k)) = next else {
                break;
            };
            match k {
                0 => {
                    let r = &log.requests[at[0]];
                    if let Some(p) = &r.path {
                        let err = r.err != 0;
                        self.count_path(p, |c| {
                            c.requests += 1;
                            if err {
                                c.errors += 1;
                            }
                        });
                    }
                }
                1 => self.count_path(&log.watches[at[1]].path, |c| c.watches += 1),
                2 => self.count_path(&log.notifications[at[2]].path, |c| c.notifications += 1),
                _ => {
                    let c = &log.changes[at[3]];
                    self.path_changed(&c.path, c.kind);
                }
            }
            at[k] += 1;
        }
        self.paths_counted_to = upto;
    }

    pub(crate) fn session_ended(&mut self, session: i64) {
        let per_session = &mut self.per_session;
        self.ended_sessions.end(session, |old| {
            per_session.remove(old);
        });
        self.per_session.shrink_if_sparse();
    }

    pub(crate) fn path_changed(&mut self, path: &str, kind: ChangeKind) {
        match kind {
            ChangeKind::Deleted => {
                let per_path = &mut self.per_path;
                self.deleted_paths.end(path.into(), |old| {
                    per_path.remove(old);
                    per_path.shrink_if_sparse();
                });
            }
            ChangeKind::Created => self.deleted_paths.revive(path),
            ChangeKind::DataChanged => {}
        }
    }

    /// The path counters, in path order.
    pub(crate) fn per_path_sorted(&self) -> BTreeMap<String, Counters> {
        self.per_path
            .iter()
            .map(|(p, c)| (p.to_string(), *c))
            .collect()
    }
}

/// Keys (sessions, paths) that ended, oldest first: their counters are kept
/// for the last [`RETAINED_ENDED`] of them, so a long-running server's
/// counters stay bounded by what is live. A key that comes back (a path
/// created again) is live again and keeps its counters.
#[derive(Debug)]
struct Ended<K> {
    order: VecDeque<(K, u64)>,
    /// Each key's latest end, by its number in `order`, while it has ended.
    latest: Map<K, u64>,
    next: u64,
}

impl<K> Default for Ended<K> {
    fn default() -> Self {
        Ended {
            order: VecDeque::new(),
            latest: Map::default(),
            next: 0,
        }
    }
}

impl<K: Hash + Eq + Clone> Ended<K> {
    /// `key` ended; the key that ended [`RETAINED_ENDED`] ends ago is
    /// `forget`ten (its counters go), unless it ended again since or came
    /// back.
    fn end(&mut self, key: K, forget: impl FnOnce(&K)) {
        self.next += 1;
        self.latest.insert(key.clone(), self.next);
        self.order.push_back((key, self.next));
        if self.order.len() > RETAINED_ENDED {
            if let Some((old, n)) = self.order.pop_front() {
                if self.latest.get(&old) == Some(&n) {
                    self.latest.remove(&old);
                    self.latest.shrink_if_sparse();
                    forget(&old);
                }
            }
        }
    }

    /// `key` is live again: its counters stay.
    fn revive<Q: Hash + Eq + ?Sized>(&mut self, key: &Q)
    where
        K: std::borrow::Borrow<Q>,
    {
        if self.latest.remove(key).is_some() {
            self.latest.shrink_if_sparse();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn a_node_path_reads_prints_and_serializes_as_a_string_and_is_not_copied() {
        let shared: Arc<str> = "/locks/lock-0000000001".into();
        let mut log = Recorder::new(true, 10);
        log.change(5, 7, 0x100, shared.clone(), ChangeKind::Created);
        let p = &log.changes[0].path;
        assert!(
            Arc::ptr_eq(&p.0, &shared),
            "the record shares the tree's copy"
        );
        assert_eq!(*p, "/locks/lock-0000000001");
        assert_eq!(*p, String::from("/locks/lock-0000000001"));
        assert!(p.starts_with("/locks/"));
        assert_eq!(p.as_str(), "/locks/lock-0000000001");
        assert_eq!(
            format!("{p} {p:?}"),
            "/locks/lock-0000000001 \"/locks/lock-0000000001\""
        );
        assert_eq!(
            serde_json::to_string(&log.changes()[0]).unwrap(),
            r#"{"seq":1,"at_ms":5,"zxid":7,"session":256,"path":"/locks/lock-0000000001","kind":"created"}"#
        );
    }

    pub(crate) fn req(
        session: i64,
        xid: i32,
        op: i32,
        path: Option<String>,
        zxid: i64,
    ) -> RequestSeen {
        RequestSeen {
            at_ms: 0,
            session,
            xid,
            op,
            path: path.map(NodePath::from),
            err: 0,
            zxid,
            verdict: None,
            server: 0,
        }
    }

    pub(crate) fn note(
        session: i64,
        path: &str,
        kind: WatchKind,
        event_type: i32,
        zxid: i64,
    ) -> NotificationSeen<'_> {
        NotificationSeen {
            at_ms: 0,
            session,
            path,
            kind,
            event_type,
            zxid,
            server: 0,
        }
    }
}
