//! How sessions and held work end or wait: expiry, close and kill (each a
//! closeSession txn), stalls, gates, requests held by a rule, the
//! container check, and a reset. Each re-enters the pipeline as a txn, as
//! ZooKeeper's session expiry does.

use std::sync::Arc;

use tokio::sync::watch;

use crate::ensemble::ServerStatus;
use crate::outbox::Gate;
use crate::record::SessionEvent;
use crate::session::ConnId;
use crate::txn::TxnOp;

use super::state::RuleGate;
use super::{Flow, HeldRequest, State};

impl State {
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
        self.open_stalled(session, None);
        was
    }

    /// Opens the gates of `session`'s stalled connections but `except`'s,
    /// oldest first: with one worker thread their tasks run in the order
    /// they are woken, so what each one held goes on in the same order
    /// every run.
    fn open_stalled(&mut self, session: i64, except: Option<ConnId>) {
        let stalled = self.out.oldest_first(|c| c.stalled_for == Some(session));
        for id in stalled.into_iter().filter(|&id| Some(id) != except) {
            if let Some(c) = self.out.conns.get_mut(&id) {
                c.stalled_for = None;
                let _ = c.gate.send(Gate::Open);
            }
        }
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
        self.prep_at(zxid, session, Arc::from([]), TxnOp::CloseSession, asked);
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
            self.open_stalled(session, bound);
        }
    }

    /// A new, closed gate.
    pub(crate) fn new_gate(&mut self) -> u64 {
        let id = self.gates.keys().next_back().map_or(1, |last| last + 1);
        self.gates.insert(id, RuleGate::default());
        id
    }

    /// Whether gate `id` is closed (an unknown gate counts as open: it
    /// holds nothing).
    pub(crate) fn gate_closed(&self, id: u64) -> bool {
        self.gates.get(&id).is_some_and(|g| !g.open)
    }

    /// A wait on gate `id`, after those already waiting, if it is closed:
    /// a receiver that sees it open.
    pub(crate) fn wait_on_gate(&mut self, id: u64) -> Option<watch::Receiver<bool>> {
        let g = self.gates.get_mut(&id).filter(|g| !g.open)?;
        // A waiter whose connection went is dropped: a gate left closed
        // does not grow with every request it ever held.
        g.waiters.retain(|w| !w.is_closed());
        let (tx, rx) = watch::channel(false);
        g.waiters.push(tx);
        Some(rx)
    }

    /// Opens gate `id`: what it held goes on in the order it was held (the
    /// connections' tasks are woken in that order; the expiry cleanups it
    /// held are applied now). False if it was not a closed gate.
    pub(crate) fn open_gate(&mut self, id: u64) -> bool {
        let Some(g) = self.gates.get_mut(&id).filter(|g| !g.open) else {
            return false;
        };
        g.open = true;
        for waiter in std::mem::take(&mut g.waiters) {
            let _ = waiter.send(true);
        }
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
        if self.held_requests.is_empty() {
            return None;
        }
        self.held_requests.get(&conn).map(|h| h.open.clone())
    }

    /// Applies the request held on `conn` (its gate opened), without judging
    /// it again. What it returns is what applying it returned.
    pub(crate) fn release_request(&mut self, conn: ConnId) -> Flow {
        match self.held_requests.remove(&conn) {
            Some(h) => self.process_judged(conn, h.xid, h.op, h.req, h.judge),
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
        if !self.gate_closed(gate) {
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
            let applied = self.prep_at(
                zxid,
                0,
                Arc::from([]),
                TxnOp::DeleteContainer(path.clone()),
                None,
            );
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

    /// Expires every session, oldest first (the same order, and so the
    /// same closeSession zxids, every run); returns how many.
    pub(crate) fn expire_all(&mut self) -> usize {
        let mut ids: Vec<i64> = self.sessions.iter().map(|s| s.id).collect();
        ids.sort_unstable();
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
        self.prep_at(zxid, 0, Arc::from([]), TxnOp::Wipe, None);
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
        let leader = self.ensemble.leader;
        if self.ensemble.electing || self.ensemble.servers[leader].status != ServerStatus::Serving {
            // No leader (an election, or a standalone server that is down),
            // no session tracker: nothing expires.
            return;
        }
        let now = self.clock.now_ms();
        for id in self.sessions.expired(now) {
            self.expire(id);
        }
        self.kill_due();
        self.settle_all();
    }
}
