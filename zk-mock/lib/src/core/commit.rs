//! Commit and request latency: the time ZooKeeper takes to make a txn
//! durable before it applies it, and to pass any request through its
//! pipeline. `SyncRequestProcessor` appends each txn to the transaction
//! log and fsyncs in batches: it syncs as soon as its queue is drained, and
//! what arrives while a sync runs waits for the next one, which then covers
//! all of it (group commit). Only then does `FinalRequestProcessor` apply
//! the txns, fire their watches and answer. Every request is handed from
//! thread to thread on the way, which takes time of its own.
//!
//! With a commit latency set, a write (a create, delete, setData, setACL,
//! check, multi or reconfig, failed ones included, and a new session's
//! createSession) is judged by
//! the fault rules when it comes and applied once the sync of its batch
//! ends. With a request latency set, every request is applied no sooner
//! than that after it was read, a write that long after its sync; a new
//! session's handshake waits too, a reconnect does not (ZooKeeper
//! re-attaches a session outside its pipeline, `revalidateSession`). What
//! a connection sends after a waiting request is still read (a
//! pipelined write joins the batch), but is applied behind it, in order, as
//! in ZooKeeper. Other connections are not held: a read that overtakes a
//! write in flight is one a quorum's follower would answer the same way. A
//! connection that closes has what it sent applied at once. Zero, the
//! default for both, applies every request when it comes.
//!
//! A mock that answers writes in microseconds is the point of zk-mock; a
//! latency is for code whose tests pass only because a real server's writes
//! take a while (Curator's `DistributedQueue` bound, for one). Its times
//! are real time, not the session clock. The syncs themselves, and the
//! thread that times them, are the leaf `txnlog.rs`.

use std::time::{Duration, Instant};

use super::{Flow, State};
use crate::session::ConnId;
use crate::txnlog::{Pending, Synced};

impl State {
    /// Whether requests of `conn` wait for a sync: what it sends next
    /// waits behind them.
    pub(crate) fn commits_pending(&self, conn: ConnId) -> bool {
        !self.commits.is_empty() && self.commits.contains_key(&conn)
    }

    /// Queues a judged request behind its sync and its connection's
    /// earlier ones.
    pub(crate) fn defer(&mut self, conn: ConnId, pending: Pending) {
        self.commits.entry(conn).or_default().push_back(pending);
    }

    /// The sync the first of `conn`'s waiting requests waits for.
    pub(crate) fn commit_wait(&self, conn: ConnId) -> Option<Synced> {
        if self.commits.is_empty() {
            return None;
        }
        self.commits.get(&conn)?.front()?.sync.clone()
    }

    /// Applies `conn`'s waiting requests whose sync has ended, in order,
    /// up to the first still waiting.
    pub(crate) fn release_commits(&mut self, conn: ConnId) -> Flow {
        loop {
            let Some(queue) = self.commits.get_mut(&conn) else {
                return Flow::Continue;
            };
            if !queue.front().is_some_and(Pending::ready) {
                return Flow::Continue;
            }
            let pending = queue.pop_front().expect("a ready request");
            if queue.is_empty() {
                self.commits.remove(&conn);
            }
            if self.apply_pending(conn, pending) == Flow::Close {
                return Flow::Close;
            }
        }
    }

    /// Applies every request `conn` has waiting, its connection closing: a
    /// request the server has read is applied whether its client is still
    /// there or not, as ZooKeeper's pipeline applies what it was handed.
    pub(crate) fn release_commits_at_close(&mut self, conn: ConnId) {
        let Some(queue) = self.commits.remove(&conn) else {
            return;
        };
        for pending in queue {
            if self.apply_pending(conn, pending) == Flow::Close {
                break;
            }
        }
    }

    fn apply_pending(&mut self, conn: ConnId, p: Pending) -> Flow {
        let Some(c) = self.out.conns.get(&conn) else {
            return Flow::Close;
        };
        let server = c.server;
        let Some(session) = c.session else {
            return Flow::Continue;
        };
        if self.sessions.get(session).is_none() || !self.serves(server) {
            // Its session ended meanwhile (a closeSession before it, an
            // expiry), or its server is down: dropped, as ZooKeeper drops
            // a request whose session is gone.
            return Flow::Continue;
        }
        let now = self.clock.now_ms();
        self.complete(conn, server, session, now, p.xid, p.op, p.req, p.verdict)
    }

    /// The sync a txn made now waits for (None: it is durable at once).
    /// With neither latency set, the request path reads no clock here.
    pub(crate) fn durable_after(&mut self) -> Option<Synced> {
        if self.settings.commit_latency.is_zero() && self.settings.request_latency.is_zero() {
            return None;
        }
        self.syncs.durable_after(Instant::now())
    }

    /// When a request that is not a txn, read now, may be answered (None:
    /// now). With no request latency, the request path reads no clock here.
    pub(crate) fn answered_after(&mut self) -> Option<Synced> {
        if self.settings.request_latency.is_zero() {
            return None;
        }
        self.syncs.answered_after(Instant::now())
    }

    /// Sets the request latency for requests from now on.
    pub(crate) fn set_request_latency(&mut self, latency: Duration) {
        self.settings.request_latency = latency;
        self.syncs.set_pipeline(latency);
    }

    /// Sets the commit latency for writes from now on.
    pub(crate) fn set_commit_latency(&mut self, latency: Duration) {
        self.settings.commit_latency = latency;
        self.syncs.set_latency(latency);
    }
}
