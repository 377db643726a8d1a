//! The server's shared state: tree, sessions, watches and connections behind
//! one `std::sync::Mutex`.
//!
//! Everything that must be totally ordered — applying a request, queueing the
//! notifications it causes and queueing its reply — happens under that one
//! lock, like ZooKeeper's single `FinalRequestProcessor` thread. The lock is
//! never held across an `.await`: outboxes are unbounded channels, so queueing
//! never waits. They are not lossy: a notification is either queued or its
//! connection is closed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use crate::clock::Clock;
use crate::codec::{frame, Record};
use crate::proto::{
    ConnectRequest, ConnectResponse, Id, ReplyHeader, WatcherEvent, STATE_SYNC_CONNECTED,
    XID_NOTIFICATION,
};
use crate::session::{ConnId, SessionManager};
use crate::tree::{DataTree, TreeEvent};
use crate::watch::{Notification, WatchManager};

/// What a connection's writer task is asked to do.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// Write this whole frame (length prefix included).
    Frame(Bytes),
    /// Flush what came before, then close the socket.
    Close,
}

/// A live connection as the state sees it.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) tx: mpsc::UnboundedSender<Outgoing>,
    pub(crate) session: Option<i64>,
    pub(crate) auth: Vec<Id>,
    pub(crate) peer: SocketAddr,
    pub(crate) received: u64,
    pub(crate) sent: u64,
}

/// Server settings that requests consult.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) tick_time: u64,
    pub(crate) max_packet: usize,
    /// `zookeeper.DigestAuthenticationProvider.superDigest`, as `user:hash`.
    pub(crate) super_digest: Option<String>,
}

/// Tree, sessions, watches and connections.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) tree: DataTree,
    pub(crate) sessions: SessionManager,
    pub(crate) watches: WatchManager,
    pub(crate) conns: HashMap<ConnId, Conn>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) settings: Settings,
    next_conn: ConnId,
    pub(crate) packets_received: u64,
    pub(crate) packets_sent: u64,
}

/// The handle every task holds.
pub(crate) type Shared = Arc<Mutex<State>>;

/// Locks the state. A panic while holding the lock is a bug in the mock; the
/// state is still the best we have, so keep serving rather than cascading.
pub(crate) fn lock(shared: &Mutex<State>) -> MutexGuard<'_, State> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
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
        clock: Arc<dyn Clock>,
        sessions: SessionManager,
        settings: Settings,
    ) -> State {
        State {
            tree: DataTree::new(),
            sessions,
            watches: WatchManager::default(),
            conns: HashMap::new(),
            clock,
            settings,
            next_conn: 1,
            packets_received: 0,
            packets_sent: 0,
        }
    }

    /// Registers a new connection; its first `ip` auth id is the peer address.
    pub(crate) fn register(
        &mut self,
        tx: mpsc::UnboundedSender<Outgoing>,
        peer: SocketAddr,
    ) -> ConnId {
        let id = self.next_conn;
        self.next_conn += 1;
        let auth = vec![Id {
            scheme: "ip".into(),
            id: peer.ip().to_string(),
        }];
        self.conns.insert(
            id,
            Conn {
                tx,
                session: None,
                auth,
                peer,
                received: 0,
                sent: 0,
            },
        );
        id
    }

    /// Queues a frame to a connection (no-op if it is gone).
    pub(crate) fn send(&mut self, conn: ConnId, body: Bytes) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.sent += 1;
            self.packets_sent += 1;
            if c.tx.send(Outgoing::Frame(frame(&body))).is_err() {
                tracing::debug!(conn, "outbox closed");
            }
        }
    }

    /// Queues a reply: header, then `body` when the request succeeded.
    pub(crate) fn reply<R: Record>(&mut self, conn: ConnId, xid: i32, zxid: i64, body: &R) {
        let mut b = BytesMut::with_capacity(128);
        ReplyHeader { xid, zxid, err: 0 }.encode(&mut b);
        body.encode(&mut b);
        self.send(conn, b.freeze());
    }

    /// Queues a reply that is only a header (errors, and ops with no body).
    pub(crate) fn reply_header(&mut self, conn: ConnId, xid: i32, zxid: i64, err: i32) {
        self.send(conn, ReplyHeader { xid, zxid, err }.to_bytes());
    }

    /// Closes a connection from the server side: the writer flushes what is
    /// queued and closes; the connection's watches are dropped at once and its
    /// session (if any) is left without a connection.
    pub(crate) fn close_conn(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.remove(&conn) {
            let _ = c.tx.send(Outgoing::Close);
            if let Some(s) = c.session.and_then(|s| self.sessions.get_mut(s)) {
                if s.conn == Some(conn) {
                    s.conn = None;
                }
            }
        }
        self.watches.remove_conn(conn);
    }

    /// The connection's reader is gone (EOF or error).
    pub(crate) fn disconnected(&mut self, conn: ConnId) {
        self.close_conn(conn);
    }

    /// Sends notifications (xid −1, zxid −1 as 3.8 does) to their connections.
    pub(crate) fn notify(&mut self, notes: Vec<Notification>) {
        for n in notes {
            let mut b = BytesMut::with_capacity(32 + n.path.len());
            ReplyHeader {
                xid: XID_NOTIFICATION,
                zxid: -1,
                err: 0,
            }
            .encode(&mut b);
            WatcherEvent {
                event_type: n.event_type,
                state: STATE_SYNC_CONNECTED,
                path: n.path,
            }
            .encode(&mut b);
            self.send(n.conn, b.freeze());
        }
    }

    /// Fires the watches for a transaction's events.
    pub(crate) fn fire(&mut self, events: &[TreeEvent]) {
        if events.is_empty() {
            return;
        }
        let mut notes = Vec::new();
        self.watches.fire(events, &mut notes);
        self.notify(notes);
    }

    /// The first packet: create or re-attach a session
    /// (`ZooKeeperServer.processConnectRequest`).
    pub(crate) fn connect(&mut self, conn: ConnId, req: &ConnectRequest) -> Flow {
        if req.last_zxid_seen > self.tree.last_zxid() {
            // CLIENT_ZXID_AHEAD: close with no response.
            tracing::info!(
                conn,
                client = req.last_zxid_seen,
                server = self.tree.last_zxid(),
                "client zxid ahead of server; closing"
            );
            self.close_conn(conn);
            return Flow::Close;
        }
        let timeout = self.sessions.negotiate(req.time_out);
        let now = self.clock.now_ms();
        if req.session_id == 0 {
            // createSession is a transaction: it consumes a zxid.
            self.tree.next_zxid();
            let s = self.sessions.create(now, timeout, conn).clone();
            tracing::debug!(
                conn,
                session = format_args!("{:#x}", s.id),
                timeout,
                "session created"
            );
            if let Some(c) = self.conns.get_mut(&conn) {
                c.session = Some(s.id);
            }
            self.connect_response(
                conn,
                ConnectResponse {
                    protocol_version: 0,
                    time_out: timeout,
                    session_id: s.id,
                    passwd: Some(Bytes::copy_from_slice(&s.passwd)),
                    read_only: req.read_only.map(|_| false),
                },
            );
            return Flow::Continue;
        }
        // Any other connection of this session is closed first, even if the
        // password turns out to be wrong (CLIENT_RECONNECT).
        if let Some(old) = self.sessions.get(req.session_id).and_then(|s| s.conn) {
            if old != conn {
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
            if let Some(c) = self.conns.get_mut(&conn) {
                c.session = Some(req.session_id);
            }
            let passwd = self
                .sessions
                .get(req.session_id)
                .map(|s| s.passwd)
                .unwrap_or_default();
            self.connect_response(
                conn,
                ConnectResponse {
                    protocol_version: 0,
                    time_out: timeout,
                    session_id: req.session_id,
                    passwd: Some(Bytes::copy_from_slice(&passwd)),
                    read_only: req.read_only.map(|_| false),
                },
            );
            Flow::Continue
        } else {
            tracing::debug!(
                conn,
                session = format_args!("{:#x}", req.session_id),
                "unknown, expired or wrong password: expired answer"
            );
            self.connect_response(conn, ConnectResponse::expired(req.read_only));
            self.close_conn(conn);
            Flow::Close
        }
    }

    fn connect_response(&mut self, conn: ConnId, resp: ConnectResponse) {
        self.send(conn, resp.to_bytes());
    }

    /// Ends a session as a transaction with its own zxid: its ephemerals are
    /// deleted with that zxid and watchers told (`DataTree.killSession`).
    /// Returns the zxid, or `None` if the session was already gone.
    pub(crate) fn close_session(&mut self, session: i64) -> Option<i64> {
        let s = self.sessions.remove(session)?;
        let zxid = self.tree.next_zxid();
        let mut events = Vec::new();
        self.tree.kill_session(zxid, session, &mut events);
        self.fire(&events);
        if let Some(c) = s.conn.and_then(|c| self.conns.get_mut(&c)) {
            c.session = None;
        }
        Some(zxid)
    }

    /// Server-side expiry: closeSession, then close the connection with nothing sent.
    pub(crate) fn expire(&mut self, session: i64) -> bool {
        let conn = self.sessions.get(session).and_then(|s| s.conn);
        if self.close_session(session).is_none() {
            return false;
        }
        tracing::info!(session = format_args!("{session:#x}"), "session expired");
        if let Some(conn) = conn {
            self.close_conn(conn);
        }
        true
    }

    /// Expires every session whose deadline has passed.
    pub(crate) fn expire_due(&mut self) {
        let now = self.clock.now_ms();
        for id in self.sessions.expired(now) {
            self.expire(id);
        }
    }
}
