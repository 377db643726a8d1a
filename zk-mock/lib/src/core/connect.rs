//! A connection's life in the core: its registration, the handshake (a
//! new session is a createSession txn, answered when the connection's
//! server applies it; a re-attach is answered at once), and its end.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

use crate::codec::Record;
use crate::outbox::{Gate, Outgoing, Queued};
use crate::proto::{ConnectRequest, ConnectResponse};
use crate::record::SessionEvent;
use crate::session::ConnId;
use crate::txn::TxnOp;

use super::{Flow, State};

impl State {
    /// What opens once `conn`'s handshake is answered, while it waits for
    /// its server to apply the createSession. (The map is empty but then:
    /// one length check per request, no hash.)
    pub(crate) fn handshake_pending(&self, conn: ConnId) -> Option<watch::Receiver<bool>> {
        if self.handshakes.is_empty() {
            return None;
        }
        self.handshakes.get(&conn).map(watch::Sender::subscribe)
    }

    /// Registers a new connection; its first `ip` auth id is the peer address.
    pub(crate) fn register(
        &mut self,
        tx: mpsc::UnboundedSender<Outgoing>,
        peer: SocketAddr,
        server: usize,
    ) -> (ConnId, watch::Receiver<Gate>, Arc<Queued>) {
        let now = self.clock.wall_ms();
        self.out.register(tx, peer, now, server)
    }

    /// Closes a connection from the server side: the writer flushes what is
    /// queued and closes (a stalled connection drops what it held); the
    /// connection's watches are dropped at once and its session (if any) is
    /// left without a connection.
    pub(crate) fn close_conn(&mut self, conn: ConnId) {
        // A request judged and waiting for a sync is applied; one a fault
        // holds unjudged goes with its connection.
        self.release_commits_at_close(conn);
        self.held_requests.remove(&conn);
        self.handshakes.remove(&conn);
        if let Some(c) = self.out.remove(conn) {
            if let Some(s) = c.session.and_then(|s| self.sessions.get_mut(s)) {
                if s.conn == Some(conn) {
                    s.conn = None;
                    let id = s.id;
                    let (now, zxid) = (
                        self.clock.now_ms(),
                        self.ensemble.servers[c.server].last_zxid(),
                    );
                    self.observers
                        .session(now, id, SessionEvent::Disconnected, zxid);
                }
            }
            self.ensemble.servers[c.server].watches.remove_conn(conn);
        }
    }

    /// The connection's reader is gone (EOF or error).
    pub(crate) fn disconnected(&mut self, conn: ConnId) {
        self.close_conn(conn);
    }

    /// The first packet: create or re-attach a session
    /// (`ZooKeeperServer.processConnectRequest`).
    pub(crate) fn connect(&mut self, conn: ConnId, req: &ConnectRequest) -> Flow {
        let server = self.server_of(conn);
        let server_zxid = self.ensemble.servers[server].last_zxid();
        let read_only = self.ensemble.servers[server].read_only;
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
            // Until the answer goes, what the client sends waits (see `process`).
            self.handshakes.insert(conn, watch::Sender::new(false));
            self.prep_at(
                zxid,
                s.id,
                Arc::from([]),
                TxnOp::CreateSession(answer),
                Some((conn, 0)),
            );
            let replica = &self.ensemble.servers[server];
            if replica.last_zxid() < zxid {
                // A client that times out here sees nothing else, and a
                // count lag waits for later writes.
                match replica.lag {
                    crate::Lag::Txns(n) => tracing::debug!(
                        server,
                        session = format_args!("{:#x}", s.id),
                        "a new session's handshake waits for server {server} to apply its \
                         createSession, {n} commits behind the leader's: it is answered after \
                         {n} more writes, a sync through it, or POST /servers/{server}/catch_up"
                    ),
                    lag => tracing::debug!(
                        server,
                        session = format_args!("{:#x}", s.id),
                        ?lag,
                        "a new session's handshake waits for server {server} to apply its \
                         createSession"
                    ),
                }
            }
            return Flow::Continue;
        }
        // Any other connection of this session on this server is closed
        // first, even if the password turns out to be wrong
        // (CLIENT_RECONNECT). One on another server of an ensemble stays
        // open: that server does not know yet, and finds out when a request
        // of it reaches the leader (SESSIONMOVED, see `prep::moved`).
        if let Some(old) = self.sessions.get(req.session_id).and_then(|s| s.conn) {
            if old != conn && self.server_of(old) == server {
                self.close_conn(old);
            }
        }
        // A read-only server's local session is known to that server alone:
        // a server of the quorum revalidates it with the leader
        // (`LearnerSessionTracker` → `Learner.validateSession`), which does
        // not know it, and answers it as expired. Re-attached here, it could
        // own ephemerals that outlive it when its server rejoins.
        let local = self
            .sessions
            .get(req.session_id)
            .is_some_and(|s| s.local.is_some());
        if !local
            && self
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
            let zxid = self.ensemble.servers[server].last_zxid();
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
                local,
                "unknown (or a read-only server's local session), expired or wrong password: \
                 expired answer"
            );
            let zxid = self.ensemble.servers[server].last_zxid();
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
        let zxid = self.ensemble.servers[server].last_zxid();
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
}
