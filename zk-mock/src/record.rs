//! The recorder: a bounded log of every request the server answered (or
//! dropped, or faulted) and of every watch registration and notification,
//! plus unbounded per-session and per-path counters.
//!
//! Everything handed out is an owned copy ([`Recording`], [`Requests`],
//! [`Notifications`]); nothing refers into live server state.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use serde::Serialize;

use crate::proto::OpCode;

/// Default number of records of each kind kept before the oldest are dropped.
pub const DEFAULT_CAPACITY: usize = 100_000;

/// Which watch fired or was registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WatchKind {
    /// getData's one-shot watch (or exists' on an existing node).
    Data,
    /// exists' one-shot watch on a node that did not exist.
    Exist,
    /// getChildren's one-shot watch.
    Child,
    /// addWatch mode 0.
    Persistent,
    /// addWatch mode 1.
    PersistentRecursive,
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRecord {
    /// Position in the server's history (shared by all record kinds).
    pub seq: u64,
    /// Session-clock ms when it was handled.
    pub at_ms: u64,
    /// The session.
    pub session: i64,
    /// The request's xid.
    pub xid: i32,
    /// The op code as sent.
    pub op_code: i32,
    /// The op's name (`create`, `getData`, …), or `unknown`.
    pub op: &'static str,
    /// The path the request named, if any.
    pub path: Option<String>,
    /// The error code answered (0 on success).
    pub err: i32,
    /// The zxid in the reply header (the transaction's zxid for writes).
    pub zxid: i64,
    /// The fault verdict applied, if a rule matched.
    pub verdict: Option<String>,
}

/// A watch registered by a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WatchRecord {
    /// Position in the server's history.
    pub seq: u64,
    /// Session-clock ms.
    pub at_ms: u64,
    /// The session that registered it.
    pub session: i64,
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
    pub session: i64,
    /// The event's path.
    pub path: String,
    /// The kind of watch that fired.
    pub kind: WatchKind,
    /// `EventType`: 1 created, 2 deleted, 3 data changed, 4 children changed.
    pub event_type: i32,
    /// The zxid of the transaction that caused it (0 for SetWatches replays).
    /// On the wire a 3.8 server sends −1.
    pub zxid: i64,
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
    pub session: i64,
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
    pub session: i64,
    /// The node's path (the full name, sequence suffix included).
    pub path: String,
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

/// The live log inside the server.
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
    per_session: BTreeMap<i64, Counters>,
    per_path: BTreeMap<String, Counters>,
    total: Counters,
    /// Sessions that ended and paths that were deleted.
    ended_sessions: Ended<i64>,
    deleted_paths: Ended<String>,
}

/// How many ended sessions and deleted paths keep their counters.
pub const RETAINED_ENDED: usize = 10_000;

/// Keys (sessions, paths) that ended, oldest first: their counters are kept
/// for the last [`RETAINED_ENDED`] of them, so a long-running server's
/// counters stay bounded by what is live. A key that comes back (a path
/// created again) is live again and keeps its counters.
#[derive(Debug)]
struct Ended<K> {
    order: VecDeque<(K, u64)>,
    /// Each key's latest end, by its number in `order`, while it has ended.
    latest: BTreeMap<K, u64>,
    next: u64,
}

impl<K: Ord + Clone> Ended<K> {
    fn new() -> Self {
        Ended {
            order: VecDeque::new(),
            latest: BTreeMap::new(),
            next: 0,
        }
    }

    /// `key` ended; the counters of the key that ended [`RETAINED_ENDED`]
    /// ends ago go, unless it ended again since or came back.
    fn end(&mut self, key: K, counters: &mut BTreeMap<K, Counters>) {
        self.next += 1;
        self.latest.insert(key.clone(), self.next);
        self.order.push_back((key, self.next));
        if self.order.len() > RETAINED_ENDED {
            if let Some((old, n)) = self.order.pop_front() {
                if self.latest.get(&old) == Some(&n) {
                    self.latest.remove(&old);
                    counters.remove(&old);
                }
            }
        }
    }

    /// `key` is live again: its counters stay.
    fn revive<Q: Ord + ?Sized>(&mut self, key: &Q)
    where
        K: std::borrow::Borrow<Q>,
    {
        self.latest.remove(key);
    }

    fn clear(&mut self) {
        self.order.clear();
        self.latest.clear();
    }
}

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
            per_session: BTreeMap::new(),
            per_path: BTreeMap::new(),
            total: Counters::default(),
            ended_sessions: Ended::new(),
            deleted_paths: Ended::new(),
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn push<T>(q: &mut VecDeque<T>, cap: usize, dropped: &mut u64, v: T) {
        if q.len() == cap {
            q.pop_front();
            *dropped += 1;
        }
        q.push_back(v);
    }

    fn count(&mut self, session: i64, path: Option<&str>, f: impl Fn(&mut Counters)) {
        f(&mut self.total);
        f(self.per_session.entry(session).or_default());
        if let Some(p) = path {
            match self.per_path.get_mut(p) {
                Some(c) => f(c),
                None => f(self.per_path.entry(p.to_string()).or_default()),
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn request(
        &mut self,
        at_ms: u64,
        session: i64,
        xid: i32,
        op_code: i32,
        path: Option<&str>,
        err: i32,
        zxid: i64,
        verdict: Option<String>,
    ) {
        self.count(session, path, |c| {
            c.requests += 1;
            if err != 0 {
                c.errors += 1;
            }
        });
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let op = OpCode::from_i32(op_code).map_or("unknown", OpCode::name);
        let r = RequestRecord {
            seq,
            at_ms,
            session,
            xid,
            op_code,
            op,
            path: path.map(str::to_string),
            err,
            zxid,
            verdict,
        };
        Self::push(&mut self.requests, self.capacity, &mut self.dropped, r);
    }

    pub(crate) fn watch(&mut self, at_ms: u64, session: i64, path: &str, kind: WatchKind) {
        self.count(session, Some(path), |c| c.watches += 1);
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let r = WatchRecord {
            seq,
            at_ms,
            session,
            path: path.to_string(),
            kind,
        };
        Self::push(&mut self.watches, self.capacity, &mut self.dropped, r);
    }

    pub(crate) fn notification(
        &mut self,
        at_ms: u64,
        session: i64,
        path: &str,
        kind: WatchKind,
        event_type: i32,
        zxid: i64,
    ) {
        self.count(session, Some(path), |c| c.notifications += 1);
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let r = NotificationRecord {
            seq,
            at_ms,
            session,
            path: path.to_string(),
            kind,
            event_type,
            zxid,
        };
        Self::push(&mut self.notifications, self.capacity, &mut self.dropped, r);
    }

    pub(crate) fn session(&mut self, at_ms: u64, session: i64, event: SessionEvent, zxid: i64) {
        if matches!(event, SessionEvent::Closed | SessionEvent::Expired) {
            self.ended_sessions.end(session, &mut self.per_session);
        }
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let r = SessionRecord {
            seq,
            at_ms,
            session,
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
        path: &str,
        kind: ChangeKind,
    ) {
        match kind {
            ChangeKind::Deleted => self.deleted_paths.end(path.to_string(), &mut self.per_path),
            ChangeKind::Created => self.deleted_paths.revive(path),
            ChangeKind::DataChanged => {}
        }
        if !self.enabled {
            return;
        }
        let seq = self.next_seq();
        let r = ChangeRecord {
            seq,
            at_ms,
            zxid,
            session,
            path: path.to_string(),
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
        self.per_session.clear();
        self.per_path.clear();
        self.ended_sessions.clear();
        self.deleted_paths.clear();
        self.total = Counters::default();
        self.dropped = 0;
    }

    pub(crate) fn snapshot(&self, seed: u64) -> Recording {
        Recording {
            seed,
            requests: Requests(self.requests.iter().cloned().collect()),
            watches: self.watches.iter().cloned().collect(),
            notifications: Notifications(self.notifications.iter().cloned().collect()),
            sessions: self.sessions.iter().cloned().collect(),
            changes: self.changes.iter().cloned().collect(),
            dropped: self.dropped,
            per_session: self.per_session.clone(),
            per_path: self.per_path.clone(),
            total: self.total,
        }
    }

    pub(crate) fn requests(&self) -> Requests {
        Requests(self.requests.iter().cloned().collect())
    }

    pub(crate) fn notifications(&self) -> Notifications {
        Notifications(self.notifications.iter().cloned().collect())
    }

    pub(crate) fn total(&self) -> Counters {
        self.total
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
    pub per_session: BTreeMap<i64, Counters>,
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
    match t {
        1 => "NodeCreated",
        2 => "NodeDeleted",
        3 => "NodeDataChanged",
        4 => "NodeChildrenChanged",
        _ => "Unknown",
    }
}

/// Recorded requests, with filters that narrow them down.
///
/// ```
/// # use zk_mock::record::Requests;
/// # let requests = Requests::default();
/// let failed_creates = requests.op(zk_mock::proto::OpCode::Create).errors().count();
/// # assert_eq!(failed_creates, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Requests(pub Vec<RequestRecord>);

impl Requests {
    fn keep(&self, f: impl Fn(&RequestRecord) -> bool) -> Self {
        Requests(self.0.iter().filter(|r| f(r)).cloned().collect())
    }
    /// Only this session's.
    pub fn by_session(&self, id: i64) -> Self {
        self.keep(|r| r.session == id)
    }
    /// Only those naming exactly this path.
    pub fn by_path(&self, path: &str) -> Self {
        self.keep(|r| r.path.as_deref() == Some(path))
    }
    /// Only those whose path starts with `prefix`.
    pub fn under(&self, prefix: &str) -> Self {
        self.keep(|r| r.path.as_deref().is_some_and(|p| p.starts_with(prefix)))
    }
    /// Only this op.
    pub fn op(&self, op: OpCode) -> Self {
        self.keep(|r| r.op_code == op as i32)
    }
    /// Only those answered with an error.
    pub fn errors(&self) -> Self {
        self.keep(|r| r.err != 0)
    }
    /// Only those a fault rule acted on.
    pub fn faulted(&self) -> Self {
        self.keep(|r| r.verdict.is_some())
    }
    /// How many.
    pub fn count(&self) -> usize {
        self.0.len()
    }
    /// Iterates over them.
    pub fn iter(&self) -> std::slice::Iter<'_, RequestRecord> {
        self.0.iter()
    }
}

/// Recorded notifications, with filters that narrow them down.
///
/// ```
/// # use zk_mock::record::Notifications;
/// # let notes = Notifications::default();
/// assert_eq!(notes.to_session(0x42).by_path("/lock").count(), 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Notifications(pub Vec<NotificationRecord>);

impl Notifications {
    fn keep(&self, f: impl Fn(&NotificationRecord) -> bool) -> Self {
        Notifications(self.0.iter().filter(|r| f(r)).cloned().collect())
    }
    /// Only those sent to this session.
    pub fn to_session(&self, id: i64) -> Self {
        self.keep(|n| n.session == id)
    }
    /// Only those about exactly this path.
    pub fn by_path(&self, path: &str) -> Self {
        self.keep(|n| n.path == path)
    }
    /// Only those about paths starting with `prefix`.
    pub fn under(&self, prefix: &str) -> Self {
        self.keep(|n| n.path.starts_with(prefix))
    }
    /// Only this event type (1 created, 2 deleted, 3 data changed, 4 children changed).
    pub fn event(&self, event_type: i32) -> Self {
        self.keep(|n| n.event_type == event_type)
    }
    /// Only those caused by the transaction with this zxid.
    pub fn zxid(&self, zxid: i64) -> Self {
        self.keep(|n| n.zxid == zxid)
    }
    /// How many.
    pub fn count(&self) -> usize {
        self.0.len()
    }
    /// Iterates over them.
    pub fn iter(&self) -> std::slice::Iter<'_, NotificationRecord> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_bounded_but_counters_are_not() {
        let mut r = Recorder::new(true, 2);
        for i in 0..5 {
            r.request(0, 7, i, 4, Some("/a"), 0, 1, None);
        }
        let s = r.snapshot(1);
        assert_eq!(s.requests.count(), 2);
        assert_eq!(s.dropped, 3);
        assert_eq!(s.per_session[&7].requests, 5);
        assert_eq!(s.per_path["/a"].requests, 5);
        assert_eq!(
            s.requests.iter().map(|r| r.xid).collect::<Vec<_>>(),
            vec![3, 4]
        );
    }

    #[test]
    fn json_lines_are_in_history_order() {
        let mut r = Recorder::new(true, 10);
        r.request(0, 7, 1, 4, Some("/a"), 0, 1, None);
        r.watch(0, 7, "/a", WatchKind::Data);
        r.notification(0, 7, "/a", WatchKind::Data, 3, 2);
        let text = r.snapshot(9).to_json_lines();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0].contains("\"type\":\"request\"") && lines[0].contains("\"op\":\"getData\"")
        );
        assert!(lines[1].contains("\"type\":\"watch\""));
        assert!(
            lines[2].contains("\"type\":\"notification\"") && lines[2].contains("\"event_type\":3")
        );
    }

    #[test]
    fn queries_filter() {
        let mut r = Recorder::new(true, 10);
        r.notification(0, 1, "/a", WatchKind::Data, 3, 2);
        r.notification(0, 2, "/a", WatchKind::Child, 4, 2);
        r.notification(0, 2, "/b", WatchKind::Data, 2, 3);
        assert_eq!(r.notifications().to_session(2).count(), 2);
        assert_eq!(r.notifications().by_path("/a").event(4).count(), 1);
        assert_eq!(r.notifications().zxid(3).count(), 1);
    }

    #[test]
    fn counters_of_ended_sessions_and_deleted_paths_are_bounded() {
        // Even with the log off, as counters are kept either way.
        let mut r = Recorder::new(false, 10);
        let n = RETAINED_ENDED as i64 + 500;
        for id in 0..n {
            let path = format!("/e-{id}");
            r.request(0, id, 1, 1, Some(&path), 0, id, None);
            r.change(0, id, id, &path, ChangeKind::Deleted);
            r.session(0, id, SessionEvent::Expired, id);
        }
        assert_eq!(r.per_session.len(), RETAINED_ENDED);
        assert_eq!(r.per_path.len(), RETAINED_ENDED);
        // The most recent are the ones kept; a live session keeps its own.
        assert!(r.per_session.contains_key(&(n - 1)) && !r.per_session.contains_key(&0));
        r.request(0, -7, 1, 1, None, 0, 1, None);
        assert_eq!(r.per_session[&-7].requests, 1);
        assert_eq!(r.total().requests, n as u64 + 1);
    }

    #[test]
    fn a_path_created_again_keeps_its_counters_and_clear_starts_afresh() {
        let mut r = Recorder::new(false, 10);
        // "/lock" is deleted, created again (live), and many other paths
        // are deleted after it: the live path's counters stay.
        r.request(0, 1, 1, 1, Some("/lock"), 0, 1, None);
        r.change(0, 2, 1, "/lock", ChangeKind::Deleted);
        r.change(0, 3, 1, "/lock", ChangeKind::Created);
        r.request(0, 1, 2, 1, Some("/lock"), 0, 3, None);
        for id in 0..RETAINED_ENDED as i64 + 10 {
            r.change(0, id, 1, &format!("/e-{id}"), ChangeKind::Deleted);
        }
        assert_eq!(r.per_path["/lock"].requests, 2);
        // Deleted again: it ages out like any other.
        r.change(0, 9, 1, "/lock", ChangeKind::Deleted);
        for id in 0..RETAINED_ENDED as i64 {
            r.change(0, id, 1, &format!("/f-{id}"), ChangeKind::Deleted);
        }
        assert!(!r.per_path.contains_key("/lock"));

        // After clear, deletions from before it no longer age out new counters.
        r.change(0, 1, 1, "/x", ChangeKind::Deleted);
        r.clear();
        r.request(0, 1, 3, 1, Some("/x"), 0, 1, None);
        for id in 0..RETAINED_ENDED as i64 {
            r.change(0, id, 1, &format!("/g-{id}"), ChangeKind::Deleted);
        }
        assert_eq!(r.per_path["/x"].requests, 1);
    }
}
