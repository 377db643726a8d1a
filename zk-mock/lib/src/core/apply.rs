//! Commit and apply: a prepared [`Txn`] goes to every replica in zxid
//! order; each server fires its own watches and answers its own
//! connection's request when it applies the txn (see `ensemble.rs`).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::codec::{frame, Record};
use crate::observe::NotificationSeen;
use crate::proto::{ReplyHeader, WatcherEvent, STATE_SYNC_CONNECTED, XID_NOTIFICATION};
use crate::record::ChangeKind;
use crate::tree::TreeEvent;
use crate::watch::Notification;
use crate::Compat;

use crate::core::State;
use crate::ensemble::{Lag, Pending};
use crate::session::ConnId;

use super::prep::Applied;
use crate::txn::{execute, Outcome, Txn, TxnOp};

impl State {
    /// Allocates the next zxid on the leader (every txn takes one, failed
    /// ones included).
    pub(crate) fn next_zxid(&mut self) -> i64 {
        let leader = self.ensemble.leader;
        self.ensemble.servers[leader].tree.next_zxid()
    }

    /// Commits a prepared txn: the leader applies it at once, and each
    /// follower when its lag allows. Returns the outcome as the leader saw
    /// it, which every replica repeats.
    pub(crate) fn commit(&mut self, mut txn: Txn) -> Applied {
        let leader = self.ensemble.leader;
        // A single server applies the txn once: its node takes the
        // request's data as it is.
        let data = if self.ensemble.servers.len() == 1 {
            txn.take_data()
        } else {
            None
        };
        let err = self.apply_txn(leader, &txn, true, data, &[]);
        let applied = Applied {
            err,
            zxid: txn.zxid,
        };
        if self.ensemble.servers.len() > 1 {
            let now = self.clock.now_ms();
            let txn = Arc::new(txn);
            let mut timed = false;
            for i in (0..self.ensemble.servers.len()).filter(|&i| i != leader) {
                self.ensemble.servers[i].backlog.push_back(Pending {
                    committed_ms: now,
                    txn: txn.clone(),
                    then_counters: Vec::new(),
                });
                timed |= matches!(self.ensemble.servers[i].lag, Lag::Time(_));
                self.settle(i);
            }
            if timed {
                self.lag_wake.notify_one();
            }
        }
        applied
    }

    /// Applies one txn to one server's replica: fires that server's watches,
    /// then answers the request if it came through this server. `record`:
    /// the leader's apply, which the recorder keeps the changes of. A
    /// follower's `counters` (the sequence counters set after the txn was
    /// committed, `Pending::then_counters`) are set on its tree right after
    /// the txn: before anything is sent, as a send that closes a slow
    /// reader's connection can apply more of the backlog.
    fn apply_txn(
        &mut self,
        server: usize,
        txn: &Txn,
        record: bool,
        data: Option<Option<Bytes>>,
        counters: &[(Arc<str>, i32)],
    ) -> i32 {
        // The kept vector (empty) lends its allocation; a nested apply
        // would just take an empty one.
        let mut events = std::mem::take(&mut self.events);
        let outcome = execute(
            &mut self.ensemble.servers[server].tree,
            self.settings.txn(),
            txn,
            data,
            &mut events,
        );
        for (parent, next) in counters {
            self.ensemble.servers[server]
                .tree
                .set_sequence_counter(parent, *next);
        }
        if record {
            self.record_changes(&events, txn.zxid, txn.session);
        }
        self.fire_on(server, &events, txn.zxid);
        if events.capacity() <= 64 {
            // (A session's kill with many ephemerals does not leave its
            // large vector behind.)
            events.clear();
            self.events = events;
        }
        let err = outcome.err();
        if let Some((conn, xid)) = txn.origin {
            if self
                .out
                .conns
                .get(&conn)
                .is_some_and(|c| c.server == server)
            {
                self.send_outcome(conn, xid, txn.zxid, outcome);
            }
        }
        if matches!(txn.op, TxnOp::CloseSession) {
            self.close_session_conns(server, txn.session);
        }
        err
    }

    /// A server applies a closeSession: it closes its connections of that
    /// session (`FinalRequestProcessor`: `cnxnFactory.closeSession`), after
    /// the close request's answer if one of them asked. A lagging server
    /// keeps serving the session from its replica until then. Oldest
    /// first: the recorder's disconnects come in the same order every run.
    fn close_session_conns(&mut self, server: usize, session: i64) {
        let conns = self
            .out
            .oldest_first(|c| c.server == server && c.session == Some(session));
        for conn in conns {
            self.close_conn(conn);
        }
    }

    /// Queues a txn's answer.
    pub(super) fn send_outcome(&mut self, conn: ConnId, xid: i32, zxid: i64, outcome: Outcome) {
        match outcome {
            Outcome::Reply(r) => self.send_reply(conn, xid, zxid, r),
            Outcome::Multi(resp, _) => self.reply(conn, xid, zxid, &resp),
            Outcome::Silent => {}
            Outcome::Handshake(answer) => {
                self.send(conn, answer);
                if let Some(answered) = self.handshakes.remove(&conn) {
                    answered.send_replace(true);
                }
            }
            Outcome::Failed(e) => self.reply_header(conn, xid, zxid, e.code()),
        }
    }

    /// Applies what a follower's lag lets it apply now.
    pub(crate) fn settle(&mut self, server: usize) {
        let now = self.clock.now_ms();
        while self.ensemble.servers[server].front_due(now) {
            let Some(p) = self.ensemble.servers[server].backlog.pop_front() else {
                break;
            };
            self.apply_txn(server, &p.txn, false, None, &p.then_counters);
        }
    }

    /// [`settle`](Self::settle) on every server (the ticker, clock moves).
    pub(crate) fn settle_all(&mut self) {
        for i in 0..self.ensemble.servers.len() {
            self.settle(i);
        }
    }

    /// Applies every committed txn a server has not, whatever its lag: what
    /// `sync`, a restart and an election do.
    pub(crate) fn catch_up(&mut self, server: usize) {
        while let Some(p) = self.ensemble.servers[server].backlog.pop_front() {
            self.apply_txn(server, &p.txn, false, None, &p.then_counters);
        }
    }

    /// When the next time-lagged txn falls due, on the session clock.
    pub(crate) fn next_lag_due(&self) -> Option<u64> {
        self.ensemble
            .servers
            .iter()
            .filter_map(|r| r.next_due_ms())
            .min()
    }
}

impl State {
    /// Sends notifications (xid −1; zxid −1 as 3.8 does, the txn's zxid in
    /// 3.9 mode) to their connections and records them with the zxid of the
    /// transaction that caused them.
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
            self.observers
                .change(now, zxid, session, e.shared_path(), kind);
        }
    }

    /// Fires one server's watches for a transaction's events.
    pub(crate) fn fire_on(&mut self, server: usize, events: &[TreeEvent], zxid: i64) {
        if events.is_empty() {
            return;
        }
        let mut notes = Vec::new();
        self.ensemble.servers[server]
            .watches
            .fire(events, &mut notes);
        self.notify(notes, zxid);
    }

    /// Records the watches registered since the last call.
    pub(crate) fn record_watches(&mut self, conn: ConnId) {
        let server = self.server_of(conn);
        let registered = self.ensemble.servers[server].watches.take_registered();
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
}
