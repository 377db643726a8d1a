//! Prep: where every request enters the core (`PrepRequestProcessor`).
//! Runs under the state lock on a request decoded before it was taken.
//!
//! This module checks the request's session, asks the observers' fault
//! rules for a verdict and plays it, reports the answered request to the
//! observers (`observe.rs`) and routes it to its family: [`write`] (create,
//! delete, setData, setACL, check, multi, and the failed-transaction ops),
//! [`multi`] (multiRead), [`read`], [`watch`] (watch management) and
//! [`session`] (ping, close, whoAmI, auth, SASL). A read is answered here
//! from the replica of the connection's server; a write becomes a txn
//! ([`State::prep`], the one place a txn is made), which `core/apply.rs`
//! commits and each replica applies, firing its watches and queueing the
//! notifications a write causes *before* its reply, as ZooKeeper does. A
//! reply's body is a `txn::Reply`, which encodes itself (`txn/reply.rs`).

use crate::core::{Flow, State};
use crate::fault::{RequestView, Verdict};
use crate::observe::RequestSeen;
use crate::proto::*;
use crate::record::NodePath;
use crate::session::ConnId;
use crate::tree::Caller;
use std::sync::Arc;

mod multi;
mod read;
mod session;
mod watch;
mod write;

use crate::txn::{Reply, Txn, TxnOp};

use crate::ensemble::Replica;

/// The outcome of one request as the recorder and logs see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    pub(crate) err: i32,
    pub(crate) zxid: i64,
}

/// What every family's handler knows of the request besides its body.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'a> {
    pub(super) conn: ConnId,
    /// The server the connection is on.
    pub(super) server: usize,
    pub(super) session: i64,
    pub(super) xid: i32,
    pub(super) op: i32,
    pub(super) caller: Caller<'a>,
    /// The caller's authInfo, for a txn to share.
    pub(super) auth: &'a std::sync::Arc<[Id]>,
}

impl State {
    /// Makes a txn and commits it: the next zxid, the time, the session
    /// and its authInfo, what it does, and the connection and xid to answer
    /// when that connection's server applies it (`PrepRequestProcessor`,
    /// then the leader's commit). The only place a [`Txn`] is made: for a
    /// client's write, and for the server's own createSession,
    /// closeSession, container deletions and reset.
    pub(crate) fn prep(
        &mut self,
        session: i64,
        auth: Arc<[Id]>,
        op: TxnOp,
        origin: Option<(ConnId, i32)>,
    ) -> Applied {
        let zxid = self.next_zxid();
        self.prep_at(zxid, session, auth, op, origin)
    }

    /// [`prep`](Self::prep) with a zxid taken already ([`next_zxid`](Self::next_zxid)),
    /// for a txn whose making needs it (a reconfig's config version) or
    /// whose session event is recorded first.
    pub(crate) fn prep_at(
        &mut self,
        zxid: i64,
        session: i64,
        auth: Arc<[Id]>,
        op: TxnOp,
        origin: Option<(ConnId, i32)>,
    ) -> Applied {
        self.commit(Txn {
            zxid,
            time: self.clock.wall_ms(),
            session,
            auth,
            op,
            origin,
        })
    }

    /// Handles one request (after the handshake), decoded by the caller
    /// before it took the lock: drops it if the session is gone, lets the
    /// fault rules judge it, applies it and records what happened.
    pub(crate) fn process(
        &mut self,
        conn: ConnId,
        xid: i32,
        op: i32,
        req: Result<Request, RequestError>,
    ) -> Flow {
        // One request, one time: its session touch, its txn's time, its
        // records and its events all read the clock once.
        let pinned = self.clock.pin();
        let flow = self.process_request(conn, xid, op, req);
        if pinned {
            self.clock.unpin();
        }
        flow
    }

    fn process_request(
        &mut self,
        conn: ConnId,
        xid: i32,
        op: i32,
        req: Result<Request, RequestError>,
    ) -> Flow {
        self.out.packets_received += 1;
        let Some(c) = self.out.conns.get_mut(&conn) else {
            return Flow::Close;
        };
        c.received += 1;
        if let Some(open) = self.handshake_pending(conn) {
            // A request sent before the handshake's answer, which waits for
            // this server to apply the createSession: ZooKeeper reads
            // nothing more from the connection until the session is set up
            // (`disableRecv`), so the request waits, unjudged, and nothing
            // after it is read.
            self.hold_request(
                conn,
                crate::core::HeldRequest {
                    xid,
                    op,
                    req,
                    open,
                    judge: true,
                },
            );
            return Flow::Continue;
        }
        self.process_judged(conn, xid, op, req, true)
    }

    /// [`process`](Self::process), once counted; without `judge`, the fault
    /// rules are not asked (a request a `HoldRequest` verdict held, now
    /// released). With a commit or request latency set (`commit.rs`), a
    /// request waits there (a write for its batch's sync, any request for
    /// the request latency) and what follows it on its connection waits
    /// behind it, both still judged now.
    pub(crate) fn process_judged(
        &mut self,
        conn: ConnId,
        xid: i32,
        op: i32,
        req: Result<Request, RequestError>,
        judge: bool,
    ) -> Flow {
        let Some(c) = self.out.conns.get(&conn) else {
            return Flow::Close;
        };
        let server = c.server;
        let Some(session) = c.session else {
            // The session expired or was closed while this request was in flight:
            // ZooKeeper drops requests of unknown sessions without a reply.
            return Flow::Continue;
        };
        let now = self.clock.now_ms();
        let moved = self
            .sessions
            .get(session)
            .is_some_and(|s| s.conn.is_some_and(|owner| owner != conn));
        if moved {
            if let Some(flow) = self.moved(conn, server, session, xid, op, &req) {
                return flow;
            }
        } else if !self.sessions.touch(session, now) {
            if let Some(flow) = self.ending(conn, server, session, xid, op, &req) {
                return flow;
            }
        }
        let path = req.as_ref().ok().and_then(Request::path);
        let verdict = if judge {
            self.observers.judge(
                &RequestView {
                    op,
                    path,
                    session,
                    now_ms: now,
                },
                &mut self.rng,
            )
        } else {
            None
        };
        if let Some(Verdict::HoldRequest(gate)) = verdict {
            if let Some(open) = self.wait_on_gate(gate.0) {
                tracing::debug!(conn, session = format_args!("{session:#x}"), op, path, %gate, "holding a request");
                self.hold_request(
                    conn,
                    crate::core::HeldRequest {
                        xid,
                        op,
                        req,
                        open,
                        judge: false,
                    },
                );
                self.changed();
                return Flow::Continue;
            }
        }
        // A reconfig is a txn too (made by the leader, or failed), so it
        // waits for the sync as every write does.
        let write = OpCode::from_i32(op).is_some_and(|c| c.is_write() || c == OpCode::Reconfig);
        // Auth is answered by the connection itself, not the pipeline
        // (`ZooKeeperServer.processPacket`): it overtakes what waits.
        let inline = matches!(req, Ok(Request::Auth(_) | Request::Sasl(_)));
        let sync = if write {
            self.durable_after()
        } else if inline {
            None
        } else {
            self.answered_after()
        };
        if sync.is_some() || (!inline && self.commits_pending(conn)) {
            self.defer(
                conn,
                crate::txnlog::Pending {
                    xid,
                    op,
                    req,
                    verdict,
                    sync,
                },
            );
            return Flow::Continue;
        }
        self.complete(conn, server, session, now, xid, op, req, verdict)
    }

    /// Applies a judged request (or its fault's verdict), reports it to the
    /// observers and updates its connection's figures.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn complete(
        &mut self,
        conn: ConnId,
        server: usize,
        session: i64,
        now: u64,
        xid: i32,
        op: i32,
        req: Result<Request, RequestError>,
        verdict: Option<Verdict>,
    ) -> Flow {
        let path = self.record_path(&req);
        let (flow, applied) = match &verdict {
            None => self.route(conn, session, xid, op, req),
            Some(v) => self.play_fault(v, conn, session, xid, op, req),
        };
        if let Some(v) = &verdict {
            tracing::debug!(conn, session = format_args!("{session:#x}"), op, path = path.as_deref(), verdict = %v.name(), "fault");
        }
        self.observers.request(RequestSeen {
            at_ms: now,
            session,
            xid,
            op,
            path,
            err: applied.err,
            zxid: applied.zxid,
            verdict: verdict.map(|v| v.name()),
            server,
        });
        if let Some(c) = self.out.conns.get_mut(&conn) {
            // `ServerCnxn.updateStatsForResponse`.
            if xid >= 0 {
                c.last_cxid = i64::from(xid);
            }
            c.last_zxid = applied.zxid;
            c.last_op = op_name(op);
            c.last_response_ms = now;
        }
        self.record_watches(conn);
        self.changed();
        flow
    }

    /// A request on a connection whose session has since re-attached on
    /// another server of the ensemble. Whatever reaches the leader fails
    /// its owner check (`SessionTrackerImpl.checkSession`: a
    /// SessionMovedException), and the connection is closed with no reply
    /// (`FinalRequestProcessor`: `cnxn.sendCloseSession()`): a write from a
    /// follower's connection (an error txn, so it takes a zxid), and any
    /// request at all on the leader's. A follower answers reads, pings and
    /// sync from its own replica as before (`None`: go on). SESSIONMOVED
    /// (−118) is never sent; the recorder notes it as the request's error.
    fn moved(
        &mut self,
        conn: ConnId,
        server: usize,
        session: i64,
        xid: i32,
        op: i32,
        req: &Result<Request, RequestError>,
    ) -> Option<Flow> {
        let code = OpCode::from_i32(op);
        let write = code.is_some_and(OpCode::is_write);
        let local = matches!(req, Ok(Request::Auth(_) | Request::Sasl(_)));
        if local || (!write && server != self.ensemble.leader) {
            return None;
        }
        let zxid = if write {
            let error = TxnOp::Error(ErrorCode::SessionMoved);
            self.prep(session, Arc::from([]), error, None).zxid
        } else {
            self.ensemble.servers[server].last_zxid()
        };
        tracing::info!(
            conn,
            server,
            session = format_args!("{session:#x}"),
            op,
            "session moved to another server: closing its old connection"
        );
        self.record_refused(server, session, xid, op, req, ErrorCode::SessionMoved, zxid);
        self.close_conn(conn);
        self.changed();
        Some(Flow::Close)
    }

    /// A request of a session the leader has ended (expired or closed)
    /// while this connection's server has not applied the closeSession:
    /// ZooKeeper's follower still knows the session until then
    /// (`LearnerSessionTracker`), so it answers reads and pings from its
    /// replica. A write goes to the leader, which fails its session check
    /// (an error txn, SESSIONEXPIRED); its answer would come after the
    /// closeSession, which closes the connection first, so none comes. A
    /// session ended otherwise is dropped, as ZooKeeper drops requests of
    /// unknown sessions. `None`: serve the request.
    fn ending(
        &mut self,
        conn: ConnId,
        server: usize,
        session: i64,
        xid: i32,
        op: i32,
        req: &Result<Request, RequestError>,
    ) -> Option<Flow> {
        let closing = self.ensemble.servers[server]
            .backlog
            .iter()
            .any(|p| p.txn.session == session && matches!(p.txn.op, TxnOp::CloseSession));
        if !closing {
            return Some(Flow::Continue);
        }
        let code = OpCode::from_i32(op);
        let local = matches!(req, Ok(Request::Auth(_) | Request::Sasl(_)));
        if local || !code.is_some_and(|c| c.is_write() || c == OpCode::CloseSession) {
            // Answered from this server's replica, as before the expiry.
            return None;
        }
        let error = TxnOp::Error(ErrorCode::SessionExpired);
        let zxid = self
            .prep(session, Arc::from([]), error, Some((conn, xid)))
            .zxid;
        self.record_refused(
            server,
            session,
            xid,
            op,
            req,
            ErrorCode::SessionExpired,
            zxid,
        );
        self.changed();
        Some(Flow::Continue)
    }

    /// The path a request named, for its record, shared, not copied: a
    /// create's own (which the node it makes keeps too), or the tree's copy
    /// when the node is there (nearly every other request names a node that
    /// exists); else a copy.
    fn record_path(&self, req: &Result<Request, RequestError>) -> Option<NodePath> {
        let req = req.as_ref().ok()?;
        if let Request::Create(_, CreateRequest { path, .. })
        | Request::CreateTtl(CreateTtlRequest { path, .. }) = req
        {
            return Some(NodePath::shared(path.clone()));
        }
        let path = req.path()?;
        Some(match self.tree().shared_path(path) {
            Some(shared) => NodePath::shared(shared),
            None => NodePath::from(path),
        })
    }

    /// Records a request its session's state refused before the fault
    /// rules and the families saw it (moved, or ended at the leader).
    #[allow(clippy::too_many_arguments)]
    fn record_refused(
        &mut self,
        server: usize,
        session: i64,
        xid: i32,
        op: i32,
        req: &Result<Request, RequestError>,
        err: ErrorCode,
        zxid: i64,
    ) {
        let path = self.record_path(req);
        self.observers.request(RequestSeen {
            at_ms: self.clock.now_ms(),
            session,
            xid,
            op,
            path,
            err: err.code(),
            zxid,
            verdict: None,
            server,
        });
    }

    /// Plays a fault rule's verdict: the request is routed as usual when
    /// the verdict lets it be applied (lose the reply, delay, stall, hold),
    /// and answered or cut off here when it does not (fail, disconnect,
    /// expire).
    fn play_fault(
        &mut self,
        verdict: &Verdict,
        conn: ConnId,
        session: i64,
        xid: i32,
        op: i32,
        req: Result<Request, RequestError>,
    ) -> (Flow, Applied) {
        let last = self.ensemble.servers[self.server_of(conn)].last_zxid();
        match verdict {
            Verdict::Delay(d) => {
                self.pause(conn, *d);
                self.route(conn, session, xid, op, req)
            }
            Verdict::LoseReply => {
                if let Some(c) = self.out.conns.get_mut(&conn) {
                    c.muted = true;
                }
                let (_, applied) = self.route(conn, session, xid, op, req);
                self.close_conn(conn);
                (Flow::Close, applied)
            }
            Verdict::Disconnect => {
                self.close_conn(conn);
                (
                    Flow::Close,
                    Applied {
                        err: ErrorCode::ConnectionLoss.code(),
                        zxid: last,
                    },
                )
            }
            Verdict::Fail(code) => {
                let code = code.code();
                let xid = if op == OpCode::Ping as i32 {
                    XID_PING
                } else {
                    xid
                };
                self.reply_header(conn, xid, last, code);
                (
                    Flow::Continue,
                    Applied {
                        err: code,
                        zxid: last,
                    },
                )
            }
            Verdict::HoldReply(gate) => {
                if let Some(open) = self.wait_on_gate(gate.0) {
                    self.out.hold(conn, open);
                }
                self.route(conn, session, xid, op, req)
            }
            // Held by `process`; here only once its gate is open.
            Verdict::HoldRequest(_) => self.route(conn, session, xid, op, req),
            Verdict::Stall => {
                let r = self.route(conn, session, xid, op, req);
                self.stall(session);
                r
            }
            Verdict::Expire => {
                self.expire(session);
                (
                    Flow::Close,
                    Applied {
                        err: ErrorCode::SessionExpired.code(),
                        zxid: self.tree().last_zxid(),
                    },
                )
            }
        }
    }

    /// Routes a decoded request to its family (`read.rs`, `write.rs`,
    /// `multi.rs`, `watch.rs`, `session.rs`), which answers it or makes
    /// it a txn. (Applying a txn to a replica is `core/apply.rs`.)
    fn route(
        &mut self,
        conn: ConnId,
        session: i64,
        xid: i32,
        op: i32,
        req: Result<Request, RequestError>,
    ) -> (Flow, Applied) {
        let (auth, server) = match self.out.conns.get(&conn) {
            Some(c) => (c.auth.clone(), c.server),
            None => (std::sync::Arc::from([]), self.ensemble.leader),
        };
        let caller = Caller {
            session,
            auth: &auth,
        };
        let cx = Ctx {
            conn,
            server,
            session,
            xid,
            op,
            caller,
            auth: &auth,
        };
        if self.ensemble.servers[server].read_only {
            if let Some(done) = self.read_only_request(cx, &req) {
                return done;
            }
        }
        let req = match req {
            Ok(r) => r,
            Err(RequestError::Unimplemented(op)) => {
                tracing::debug!(conn, op, "unimplemented op code");
                return self.unimplemented(conn, xid);
            }
            Err(RequestError::Malformed(code, e)) => {
                tracing::debug!(conn, ?code, %e, "malformed request body");
                // Writes fail in PrepRequestProcessor as an error txn (a zxid is
                // consumed); reads fail in FinalRequestProcessor.
                if code.is_write() {
                    let applied = self.submit(cx, TxnOp::Error(ErrorCode::MarshallingError));
                    return (Flow::Continue, applied);
                }
                let zxid = self.ensemble.servers[server].last_zxid();
                let err = ErrorCode::MarshallingError.code();
                self.reply_header(conn, xid, zxid, err);
                return (Flow::Continue, Applied { err, zxid });
            }
        };
        match req {
            Request::Create(..)
            | Request::CreateTtl(_)
            | Request::Delete(_)
            | Request::SetData(_)
            | Request::SetAcl(_)
            | Request::Check(_)
            | Request::Reconfig(_)
            | Request::Multi(_)
            | Request::InternalOp(_) => self.handle_write(cx, req),
            Request::MultiRead(_) => self.handle_multi_read(cx, req),
            Request::Exists(_)
            | Request::GetData(_)
            | Request::GetChildren(_)
            | Request::GetChildren2(_)
            | Request::GetAcl(_)
            | Request::Sync(_)
            | Request::GetEphemerals(_)
            | Request::GetAllChildrenNumber(_) => self.handle_read(cx, req),
            Request::CheckWatches(_)
            | Request::RemoveWatches(_)
            | Request::AddWatch(_)
            | Request::SetWatches(_) => self.handle_watch(cx, req),
            Request::Ping
            | Request::CloseSession
            | Request::WhoAmI
            | Request::Auth(_)
            | Request::Sasl(_) => self.handle_session(cx, req),
        }
    }

    /// `ReadOnlyRequestProcessor`: on a read-only server, writes and sync
    /// get NOTREADONLY (the connection stays open); closeSession ends the
    /// local session and is answered; reads go on (`None`).
    fn read_only_request(
        &mut self,
        cx: Ctx<'_>,
        req: &Result<Request, RequestError>,
    ) -> Option<(Flow, Applied)> {
        let zxid = self.ensemble.servers[cx.server].last_zxid();
        match OpCode::from_i32(cx.op) {
            Some(OpCode::CloseSession) => {
                if let Some(s) = self.sessions.remove(cx.session) {
                    let now = self.clock.now_ms();
                    self.observers.session(
                        now,
                        cx.session,
                        crate::record::SessionEvent::Closed,
                        zxid,
                    );
                    if let Some(c) = s.conn.and_then(|c| self.out.conns.get_mut(&c)) {
                        c.session = None;
                    }
                }
                self.reply_header(cx.conn, cx.xid, zxid, 0);
                self.close_conn(cx.conn);
                Some((Flow::Close, Applied { err: 0, zxid }))
            }
            Some(code) if code.is_write() || code == OpCode::Sync || code == OpCode::Reconfig => {
                let _ = req;
                let err = ErrorCode::NotReadOnly.code();
                self.reply_header(cx.conn, cx.xid, zxid, err);
                Some((Flow::Continue, Applied { err, zxid }))
            }
            _ => None,
        }
    }

    /// UnimplementedRequestProcessor: UNIMPLEMENTED with zxid −1, then the
    /// connection is closed.
    pub(super) fn unimplemented(&mut self, conn: ConnId, xid: i32) -> (Flow, Applied) {
        let err = ErrorCode::Unimplemented.code();
        self.reply_header(conn, xid, -1, err);
        self.close_conn(conn);
        (Flow::Close, Applied { err, zxid: -1 })
    }

    /// A read on the connection's server: reply with the last zxid that
    /// server applied.
    pub(super) fn read(
        &mut self,
        cx: Ctx<'_>,
        apply: impl FnOnce(&mut Replica) -> Result<Reply, ErrorCode>,
    ) -> Applied {
        let replica = &mut self.ensemble.servers[cx.server];
        let result = apply(replica);
        let zxid = replica.last_zxid();
        self.finish(cx.conn, cx.xid, zxid, result)
    }

    pub(super) fn finish(
        &mut self,
        conn: ConnId,
        xid: i32,
        zxid: i64,
        result: Result<Reply, ErrorCode>,
    ) -> Applied {
        match result {
            Ok(r) => {
                self.send_reply(conn, xid, zxid, r);
                Applied { err: 0, zxid }
            }
            Err(e) => {
                self.reply_header(conn, xid, zxid, e.code());
                Applied {
                    err: e.code(),
                    zxid,
                }
            }
        }
    }
}

/// The `lastOp` names `FinalRequestProcessor` gives each op (`cons`).
fn op_name(op: i32) -> &'static str {
    match OpCode::from_i32(op) {
        Some(code) => match code {
            OpCode::Ping => "PING",
            OpCode::CreateSession => "SESS",
            OpCode::CloseSession => "CLOS",
            OpCode::Multi => "MULT",
            OpCode::MultiRead => "MLTR",
            OpCode::Create | OpCode::Create2 | OpCode::CreateTtl | OpCode::CreateContainer => {
                "CREA"
            }
            OpCode::Delete | OpCode::DeleteContainer => "DELE",
            OpCode::SetData => "SETD",
            OpCode::Reconfig => "RECO",
            OpCode::SetAcl => "SETA",
            OpCode::Check => "CHEC",
            OpCode::Sync => "SYNC",
            OpCode::Exists => "EXIS",
            OpCode::GetData => "GETD",
            OpCode::GetAcl => "GETA",
            OpCode::GetChildren | OpCode::GetChildren2 => "GETC",
            OpCode::GetAllChildrenNumber => "GETACN",
            OpCode::CheckWatches => "CHKW",
            OpCode::RemoveWatches => "REMW",
            OpCode::GetEphemerals => "GETE",
            OpCode::AddWatch => "ADDW",
            OpCode::SetWatches => "SETW",
            OpCode::SetWatches2 => "STW2",
            OpCode::WhoAmI => "HOMI",
            OpCode::Auth => "AUTH",
            OpCode::Sasl => "SASL",
            _ => "NA",
        },
        None => "NA",
    }
}
