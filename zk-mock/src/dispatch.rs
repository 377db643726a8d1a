//! Applying one request to the state: the only place that joins the tree,
//! sessions and watches. Runs under the state lock; queues the notifications a
//! write causes *before* its reply, as ZooKeeper does.

use bytes::Bytes;

use crate::codec::Record;
use crate::fault::{RequestView, Verdict};
use crate::proto::*;
use crate::record::{SessionEvent, WatchKind};
use crate::session::ConnId;
use crate::state::{Flow, State};
use crate::tree::{Caller, CreateArgs, CreateMode, TreeEvent};
use crate::watch::{Notification, Table};
use crate::Compat;

/// `EphemeralType.TTL`'s largest ttl (40 bits of ms).
const MAX_TTL: i64 = 0xFF_FFFF_FFFF;

/// The outcome of one request as the recorder and logs see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    pub(crate) err: i32,
    pub(crate) zxid: i64,
}

/// `CreateMode.CONTAINER`'s flag value.
const CONTAINER_FLAGS: i32 = 4;

impl State {
    /// Handles one request frame (after the handshake): drops it if the
    /// session is gone, decodes it, lets the fault rules judge it, applies it
    /// and records what happened.
    pub(crate) fn process(&mut self, conn: ConnId, xid: i32, op: i32, body: &[u8]) -> Flow {
        self.packets_received += 1;
        let Some(c) = self.conns.get_mut(&conn) else {
            return Flow::Close;
        };
        c.received += 1;
        let Some(session) = c.session else {
            // The session expired or was closed while this request was in flight:
            // ZooKeeper drops requests of unknown sessions without a reply.
            return Flow::Continue;
        };
        let now = self.clock.now_ms();
        if !self.sessions.touch(session, now) {
            return Flow::Continue;
        }
        let req = decode_request(op, body);
        let path = req.as_ref().ok().and_then(|r| r.path().map(str::to_string));
        let verdict = self.rules.evaluate(
            &RequestView {
                op,
                path: path.as_deref(),
                session,
            },
            &mut self.rng,
        );
        let (flow, applied) = match &verdict {
            None => self.apply(conn, session, xid, op, req),
            Some(v) => self.apply_fault(v, conn, session, xid, op, req),
        };
        if let Some(v) = &verdict {
            tracing::debug!(conn, session = format_args!("{session:#x}"), op, path, verdict = %v.name(), "fault");
        }
        self.recorder.request(
            now,
            session,
            xid,
            op,
            path.as_deref(),
            applied.err,
            applied.zxid,
            verdict.map(|v| v.name()),
        );
        if let Some(c) = self.conns.get_mut(&conn) {
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

    fn apply_fault(
        &mut self,
        verdict: &Verdict,
        conn: ConnId,
        session: i64,
        xid: i32,
        op: i32,
        req: Result<Request, RequestError>,
    ) -> (Flow, Applied) {
        let last = self.tree.last_zxid();
        match verdict {
            Verdict::Delay(d) => {
                self.pause(conn, *d);
                self.apply(conn, session, xid, op, req)
            }
            Verdict::LoseReply => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.muted = true;
                }
                let (_, applied) = self.apply(conn, session, xid, op, req);
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
            Verdict::Stall => {
                let r = self.apply(conn, session, xid, op, req);
                self.stall(session);
                r
            }
            Verdict::Expire => {
                self.expire(session);
                (
                    Flow::Close,
                    Applied {
                        err: ErrorCode::SessionExpired.code(),
                        zxid: self.tree.last_zxid(),
                    },
                )
            }
        }
    }

    /// Applies a decoded request and queues its reply.
    fn apply(
        &mut self,
        conn: ConnId,
        session: i64,
        xid: i32,
        op: i32,
        req: Result<Request, RequestError>,
    ) -> (Flow, Applied) {
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
                let zxid = if code.is_write() {
                    self.tree.next_zxid()
                } else {
                    self.tree.last_zxid()
                };
                let err = ErrorCode::MarshallingError.code();
                self.reply_header(conn, xid, zxid, err);
                return (Flow::Continue, Applied { err, zxid });
            }
        };
        let auth = self
            .conns
            .get(&conn)
            .map(|c| c.auth.clone())
            .unwrap_or_default();
        let caller = Caller {
            session,
            auth: &auth,
        };
        let applied = match req {
            Request::Ping => {
                let zxid = self.tree.last_zxid();
                self.reply_header(conn, XID_PING, zxid, 0);
                Applied { err: 0, zxid }
            }
            Request::CloseSession => {
                let zxid = self
                    .close_session(session, SessionEvent::Closed)
                    .unwrap_or_else(|| self.tree.last_zxid());
                self.reply_header(conn, xid, zxid, 0);
                self.close_conn(conn);
                return (Flow::Close, Applied { err: 0, zxid });
            }
            Request::Create(code, r) => self.write(conn, xid, |st, zxid, events| {
                let (path, stat) = st.create(zxid, NewNode::create(code, &r), caller, events)?;
                Ok(create_reply(code, path, stat))
            }),
            Request::CreateTtl(r) => self.write(conn, xid, |st, zxid, events| {
                let (path, stat) = st.create(zxid, NewNode::ttl(&r), caller, events)?;
                Ok(create_reply(OpCode::CreateTtl, path, stat))
            }),
            Request::Delete(r) => self.write(conn, xid, |st, zxid, events| {
                st.tree.delete(zxid, &r.path, r.version, caller, events)?;
                Ok(Reply::None)
            }),
            Request::SetData(r) => self.write(conn, xid, |st, zxid, events| {
                Ok(Reply::Stat(st.set_data(zxid, &r, caller, events)?))
            }),
            Request::SetAcl(r) => self.write(conn, xid, |st, _zxid, _events| {
                let stat = st.tree.set_acl(&r.path, &r.acl, r.version, caller)?;
                Ok(Reply::Stat(stat))
            }),
            Request::Check(_) if self.settings.compat == Compat::V3_9 => {
                // 3.9: `Request.isValid` is false for check outside multi.
                return self.unimplemented(conn, xid);
            }
            Request::Check(r) => {
                // ZooKeeper 3.8.0 treats a standalone check as a transaction: it
                // consumes a zxid and failures are answered, but a *successful*
                // check is never answered (3.8.6 answers UNIMPLEMENTED and closes
                // instead). We follow the 3.8.0 server the conformance suite runs.
                let zxid = self.tree.next_zxid();
                match self.tree.check(&r.path, r.version, caller) {
                    Ok(()) => Applied { err: 0, zxid },
                    Err(e) => {
                        self.reply_header(conn, xid, zxid, e.code());
                        Applied {
                            err: e.code(),
                            zxid,
                        }
                    }
                }
            }
            Request::Exists(r) => self.read(conn, xid, |st| {
                if r.path.contains('\0') {
                    return Err(ErrorCode::BadArguments);
                }
                // The watch is registered even when the node is missing
                // (`DataTree.statNode` adds it before the null check). The
                // server keeps it in the data table either way; the recorder
                // calls a watch on a missing node an exist watch.
                if r.watch {
                    let kind = if st.tree.get(&r.path).is_some() {
                        WatchKind::Data
                    } else {
                        WatchKind::Exist
                    };
                    st.watches.add(Table::Data, &r.path, conn, kind);
                }
                let node = st.tree.get(&r.path).ok_or(ErrorCode::NoNode)?;
                Ok(Reply::Stat(node.stat()))
            }),
            Request::GetData(r) => self.read(conn, xid, |st| {
                let node = st.tree.read(&r.path, perms::READ, caller)?;
                let out = Reply::Data(node.data.clone(), node.stat());
                if r.watch {
                    st.watches.add(Table::Data, &r.path, conn, WatchKind::Data);
                }
                Ok(out)
            }),
            Request::GetChildren(r) | Request::GetChildren2(r) => {
                let two = op == OpCode::GetChildren2 as i32;
                self.read(conn, xid, |st| {
                    let node = st.tree.read(&r.path, perms::READ, caller)?;
                    let children: Vec<String> = node.listing().to_vec();
                    let stat = node.stat();
                    if r.watch {
                        st.watches
                            .add(Table::Child, &r.path, conn, WatchKind::Child);
                    }
                    Ok(if two {
                        Reply::Children2(children, stat)
                    } else {
                        Reply::Children(children)
                    })
                })
            }
            Request::GetAcl(r) => self.read(conn, xid, |st| {
                let node = st.tree.read(&r.path, perms::READ | perms::ADMIN, caller)?;
                let mut acl: Vec<Acl> = node.acl.to_vec();
                // Without ADMIN, digest ids are masked to `user:x`.
                if crate::acl::check(&node.acl, perms::ADMIN, caller.auth).is_err() {
                    for a in acl.iter_mut().filter(|a| a.id.scheme == "digest") {
                        if let Some(i) = a.id.id.find(':') {
                            a.id.id.replace_range(i.., ":x");
                        }
                    }
                }
                Ok(Reply::Acl(acl, node.stat()))
            }),
            Request::Sync(r) => self.read(conn, xid, |_| Ok(Reply::Path(r.path.clone()))),
            Request::GetEphemerals(r) => self.read(conn, xid, |st| {
                let prefix = r.path.trim();
                let all = prefix.is_empty() || prefix == "/";
                let ephemerals = st
                    .tree
                    .ephemerals_of(session)
                    .filter(|p| all || p.starts_with(&r.path))
                    .map(str::to_string)
                    .collect();
                Ok(Reply::Ephemerals(ephemerals))
            }),
            Request::GetAllChildrenNumber(r) => self.read(conn, xid, |st| {
                st.tree.read(&r.path, perms::READ, caller)?;
                // "/" is special-cased (`nodes.size() - 2`); "" counts every
                // key starting with "/", i.e. all nodes but the "" alias.
                let n = if r.path == "/" {
                    st.tree.node_count() - 2
                } else {
                    let prefix = format!("{}/", r.path);
                    st.tree
                        .iter()
                        .filter(|(p, _)| p.starts_with(&prefix))
                        .count()
                };
                Ok(Reply::Count(n as i32))
            }),
            Request::Multi(m) if !m.ops.iter().any(MultiOp::is_read) => {
                self.multi(conn, xid, &m, caller)
            }
            Request::Multi(_) => {
                // A multi (14) of read ops: MultiOperationRecord marks it a read
                // and PrepRequestProcessor fails it as a txn (zxid consumed).
                let zxid = self.tree.next_zxid();
                let err = ErrorCode::MarshallingError.code();
                self.reply_header(conn, xid, zxid, err);
                Applied { err, zxid }
            }
            Request::MultiRead(m) if m.ops.iter().any(|op| !op.is_read()) => {
                // A multiRead (22) of write ops: 3.8.0 answers MARSHALLINGERROR
                // in the header and still sends an empty MultiResponse body.
                let zxid = self.tree.last_zxid();
                let err = ErrorCode::MarshallingError.code();
                let mut b = bytes::BytesMut::new();
                ReplyHeader { xid, zxid, err }.encode(&mut b);
                MultiResponse::default().encode(&mut b);
                self.send(conn, b.freeze());
                Applied { err, zxid }
            }
            Request::MultiRead(m) => {
                let results = m
                    .ops
                    .iter()
                    .map(|op| self.multi_read_op(op, caller))
                    .collect();
                let zxid = self.tree.last_zxid();
                self.reply(conn, xid, zxid, &MultiResponse { results });
                Applied { err: 0, zxid }
            }
            Request::CheckWatches(r) => self.read(conn, xid, |st| {
                match st.watches.check(r.watcher_type, &r.path, conn) {
                    None => Err(ErrorCode::MarshallingError),
                    Some(true) => Ok(Reply::None),
                    Some(false) => Err(ErrorCode::NoWatcher),
                }
            }),
            Request::RemoveWatches(r) => self.read(conn, xid, |st| {
                match st.watches.remove(r.watcher_type, &r.path, conn) {
                    None => Err(ErrorCode::MarshallingError),
                    Some(true) => Ok(Reply::None),
                    Some(false) => Err(ErrorCode::NoWatcher),
                }
            }),
            Request::WhoAmI => self.read(conn, xid, |_| {
                // `getUserName`: digest ids show the user, the part before ':'.
                let client_info = caller
                    .auth
                    .iter()
                    .map(|id| ClientInfo {
                        auth_scheme: id.scheme.clone(),
                        user: match id.scheme.as_str() {
                            "digest" => id.id.split(':').next().unwrap_or_default().to_string(),
                            _ => id.id.clone(),
                        },
                    })
                    .collect();
                Ok(Reply::WhoAmI(client_info))
            }),
            Request::Auth(a) => {
                // Answered at once with zxid 0 (`ZooKeeperServer.processPacket`).
                // digest never fails; ip adds the peer address; any other
                // scheme is AUTHFAILED and the connection is closed (the
                // session lives on until it times out).
                let new_ids = match a.scheme.as_str() {
                    "digest" => {
                        let text = String::from_utf8_lossy(a.auth.as_deref().unwrap_or_default());
                        let id = crate::acl::digest(&text);
                        let is_super = self.settings.super_digest.as_deref() == Some(id.as_str());
                        let mut ids = vec![Id {
                            scheme: "digest".into(),
                            id,
                        }];
                        if is_super {
                            ids.push(Id {
                                scheme: "super".into(),
                                id: String::new(),
                            });
                        }
                        ids
                    }
                    "ip" => {
                        let peer = self
                            .conns
                            .get(&conn)
                            .map(|c| c.peer.ip().to_string())
                            .unwrap_or_default();
                        vec![Id {
                            scheme: "ip".into(),
                            id: peer,
                        }]
                    }
                    _ => {
                        let err = ErrorCode::AuthFailed.code();
                        self.reply_header(conn, xid, 0, err);
                        self.close_conn(conn);
                        return (Flow::Close, Applied { err, zxid: 0 });
                    }
                };
                if let Some(c) = self.conns.get_mut(&conn) {
                    for id in new_ids {
                        if !c.auth.contains(&id) {
                            c.auth.push(id);
                            crate::acl::java_set_order(&mut c.auth);
                        }
                    }
                }
                self.reply_header(conn, xid, 0, 0);
                Applied { err: 0, zxid: 0 }
            }
            Request::AddWatch(r) => self.read(conn, xid, |st| {
                // No ACL and no existence check; an unknown mode is an
                // IllegalArgumentException, i.e. MARSHALLINGERROR.
                let recursive = match r.mode {
                    0 => false,
                    1 => true,
                    _ => return Err(ErrorCode::MarshallingError),
                };
                st.watches.add_persistent(&r.path, conn, recursive);
                Ok(Reply::AddWatch)
            }),
            Request::Reconfig => {
                // A failed transaction (a zxid is consumed), the connection
                // stays open: RECONFIGDISABLED while reconfigEnabled is false
                // (the default), else UNIMPLEMENTED, as a standalone server
                // is no LeaderZooKeeperServer (PrepRequestProcessor).
                let zxid = self.tree.next_zxid();
                let err = if self.settings.reconfig_enabled {
                    ErrorCode::Unimplemented.code()
                } else {
                    ErrorCode::ReconfigDisabled.code()
                };
                self.reply_header(conn, xid, zxid, err);
                Applied { err, zxid }
            }
            Request::InternalOp(code) => {
                // What 3.8.0 answers a client that sends these server-internal
                // ops: deleteContainer is BADARGUMENTS, createSession (no body
                // a client could send) MARSHALLINGERROR; both consume a zxid.
                let zxid = self.tree.next_zxid();
                let err = if code == OpCode::DeleteContainer {
                    ErrorCode::BadArguments
                } else {
                    ErrorCode::MarshallingError
                }
                .code();
                self.reply_header(conn, xid, zxid, err);
                Applied { err, zxid }
            }
            Request::Sasl(_) => {
                // No SASL is configured: the server answers inline with an
                // empty (null) token and nothing is authenticated.
                // Answered from the I/O thread like auth: zxid 0.
                self.reply(conn, xid, 0, &SaslResponse { token: None });
                Applied { err: 0, zxid: 0 }
            }
            Request::SetWatches(w) => {
                let mut notes: Vec<Notification> = Vec::new();
                self.watches.set_watches(
                    &self.tree,
                    conn,
                    w.relative_zxid,
                    &w.data_watches,
                    &w.exist_watches,
                    &w.child_watches,
                    &mut notes,
                );
                for p in &w.persistent_watches {
                    self.watches.add_persistent(p, conn, false);
                }
                for p in &w.persistent_recursive_watches {
                    self.watches.add_persistent(p, conn, true);
                }
                self.notify(notes, 0);
                let zxid = self.tree.last_zxid();
                self.reply_header(conn, xid, zxid, 0);
                Applied { err: 0, zxid }
            }
        };
        (Flow::Continue, applied)
    }

    /// UnimplementedRequestProcessor: UNIMPLEMENTED with zxid −1, then the
    /// connection is closed.
    fn unimplemented(&mut self, conn: ConnId, xid: i32) -> (Flow, Applied) {
        let err = ErrorCode::Unimplemented.code();
        self.reply_header(conn, xid, -1, err);
        self.close_conn(conn);
        (Flow::Close, Applied { err, zxid: -1 })
    }

    /// A write: allocate the zxid first (failed writes consume it too), apply,
    /// fire watches, then reply.
    fn write(
        &mut self,
        conn: ConnId,
        xid: i32,
        apply: impl FnOnce(&mut State, i64, &mut Vec<TreeEvent>) -> Result<Reply, ErrorCode>,
    ) -> Applied {
        let zxid = self.tree.next_zxid();
        let mut events = Vec::new();
        let result = apply(self, zxid, &mut events);
        let session = self.session_of(conn);
        self.fire(&events, zxid, session);
        self.finish(conn, xid, zxid, result)
    }

    /// A read: reply with the last processed zxid.
    fn read(
        &mut self,
        conn: ConnId,
        xid: i32,
        apply: impl FnOnce(&mut State) -> Result<Reply, ErrorCode>,
    ) -> Applied {
        let result = apply(self);
        let zxid = self.tree.last_zxid();
        self.finish(conn, xid, zxid, result)
    }

    fn finish(
        &mut self,
        conn: ConnId,
        xid: i32,
        zxid: i64,
        result: Result<Reply, ErrorCode>,
    ) -> Applied {
        match result {
            Ok(r) => {
                r.send(self, conn, xid, zxid);
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

    /// create in `pRequest2TxnCreate` order: flags, TTL rules, then the tree's checks.
    fn create(
        &mut self,
        zxid: i64,
        new: NewNode<'_>,
        caller: Caller<'_>,
        events: &mut Vec<TreeEvent>,
    ) -> Result<(String, Stat), ErrorCode> {
        let mode = CreateMode::from_flags(new.flags)?;
        if mode.ttl && !self.settings.extended_types {
            // zookeeper.extendedTypesEnabled is false by default.
            return Err(ErrorCode::Unimplemented);
        }
        // EphemeralType.validateTTL: a TTL mode needs a ttl in
        // 1..=0xFF_FFFF_FFFF (a plain create carries none); other modes
        // take none. A createTTL with a non-TTL mode and ttl −1 passes that
        // check on 3.8.0 and then kills the real server's process; the mock
        // answers BADARGUMENTS instead of dying.
        let ttl = match (mode.ttl, new.ttl) {
            (true, Some(ttl)) if (1..=MAX_TTL).contains(&ttl) => ttl,
            (false, None) => 0,
            _ => return Err(ErrorCode::BadArguments),
        };
        let time = self.clock.wall_ms();
        let args = CreateArgs {
            path: new.path,
            data: new.data.clone(),
            acl: new.acl,
            mode,
            ttl,
        };
        self.tree.create(zxid, time, args, caller, events)
    }

    /// setData, alone or inside multi: the transaction's time is now.
    fn set_data(
        &mut self,
        zxid: i64,
        r: &SetDataRequest,
        caller: Caller<'_>,
        events: &mut Vec<TreeEvent>,
    ) -> Result<Stat, ErrorCode> {
        let time = self.clock.wall_ms();
        self.tree.set_data(
            zxid,
            time,
            &r.path,
            r.data.clone(),
            r.version,
            caller,
            events,
        )
    }

    /// multi: every op shares one zxid; ops see earlier ops' changes; on the
    /// first failure nothing is applied, earlier ops report 0, the failing op
    /// its code and later ops RUNTIMEINCONSISTENCY. The header err stays 0.
    fn multi(&mut self, conn: ConnId, xid: i32, m: &MultiRequest, caller: Caller<'_>) -> Applied {
        let zxid = self.tree.next_zxid();
        let mut events = Vec::new();
        let mut results = Vec::with_capacity(m.ops.len());
        let mut failed = None;
        self.tree.begin();
        for (i, op) in m.ops.iter().enumerate() {
            match self.multi_write_op(zxid, op, caller, &mut events) {
                Ok(r) => results.push(r),
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        if let Some((at, err)) = failed {
            self.tree.rollback();
            results = (0..m.ops.len())
                .map(|i| MultiResult::Error {
                    err: match i.cmp(&at) {
                        std::cmp::Ordering::Less => 0,
                        std::cmp::Ordering::Equal => err.code(),
                        std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency.code(),
                    },
                })
                .collect();
        } else {
            self.tree.commit();
            let session = self.session_of(conn);
            self.fire(&events, zxid, session);
        }
        self.reply(conn, xid, zxid, &MultiResponse { results });
        Applied {
            err: failed.map_or(0, |(_, e)| e.code()),
            zxid,
        }
    }

    fn multi_write_op(
        &mut self,
        zxid: i64,
        op: &MultiOp,
        caller: Caller<'_>,
        events: &mut Vec<TreeEvent>,
    ) -> Result<MultiResult, ErrorCode> {
        Ok(match op {
            // ZooKeeper 3.8.0 answers create and create2 inside multi with a
            // CreateResult of type 1 (path only) — create2 getting its Stat
            // (type 15) came with 3.8.2 and 3.9 (ZOOKEEPER-4026) — while
            // createContainer and createTTL already answer type 15 with a Stat.
            MultiOp::Create(code, r) => {
                let (path, stat) = self.create(zxid, NewNode::create(*code, r), caller, events)?;
                match code {
                    OpCode::CreateContainer => MultiResult::Create2 { path, stat },
                    OpCode::Create2 if self.settings.compat == Compat::V3_9 => {
                        MultiResult::Create2 { path, stat }
                    }
                    _ => MultiResult::Create { path },
                }
            }
            MultiOp::CreateTtl(r) => {
                let (path, stat) = self.create(zxid, NewNode::ttl(r), caller, events)?;
                MultiResult::Create2 { path, stat }
            }
            MultiOp::Delete(r) => {
                self.tree.delete(zxid, &r.path, r.version, caller, events)?;
                MultiResult::Delete
            }
            MultiOp::SetData(r) => MultiResult::SetData {
                stat: self.set_data(zxid, r, caller, events)?,
            },
            MultiOp::Check(r) => {
                self.tree.check(&r.path, r.version, caller)?;
                MultiResult::Check
            }
            MultiOp::GetData(_) | MultiOp::GetChildren(_) => {
                return Err(ErrorCode::MarshallingError)
            }
        })
    }

    /// One op of a multiRead: evaluated on its own, failures do not cascade.
    fn multi_read_op(&self, op: &MultiOp, caller: Caller<'_>) -> MultiResult {
        let result = match op {
            MultiOp::GetData(r) => {
                self.tree
                    .read(&r.path, perms::READ, caller)
                    .map(|n| MultiResult::GetData {
                        data: n.data.clone(),
                        stat: n.stat(),
                    })
            }
            MultiOp::GetChildren(r) => {
                self.tree
                    .read(&r.path, perms::READ, caller)
                    .map(|n| MultiResult::GetChildren {
                        children: n.listing().to_vec(),
                    })
            }
            _ => Err(ErrorCode::MarshallingError),
        };
        result.unwrap_or_else(|e| MultiResult::Error { err: e.code() })
    }
}

/// The create-family request fields, whichever op carried them.
struct NewNode<'a> {
    path: &'a str,
    data: &'a Option<Bytes>,
    acl: &'a [Acl],
    flags: i32,
    /// `Some` only for createTTL (21).
    ttl: Option<i64>,
}

impl<'a> NewNode<'a> {
    fn create(code: OpCode, r: &'a CreateRequest) -> NewNode<'a> {
        // createContainer (19) makes a container whatever the flags say.
        let flags = if code == OpCode::CreateContainer {
            CONTAINER_FLAGS
        } else {
            r.flags
        };
        NewNode {
            path: &r.path,
            data: &r.data,
            acl: &r.acl,
            flags,
            ttl: None,
        }
    }

    fn ttl(r: &'a CreateTtlRequest) -> NewNode<'a> {
        NewNode {
            path: &r.path,
            data: &r.data,
            acl: &r.acl,
            flags: r.flags,
            ttl: Some(r.ttl),
        }
    }
}

/// A successful reply body.
enum Reply {
    None,
    Path(String),
    PathStat(String, Stat),
    Stat(Stat),
    Data(Option<Bytes>, Stat),
    Children(Vec<String>),
    Children2(Vec<String>, Stat),
    Acl(Vec<Acl>, Stat),
    Ephemerals(Vec<String>),
    Count(i32),
    WhoAmI(Vec<ClientInfo>),
    /// addWatch answers `ErrorResponse{0}`: four zero bytes.
    AddWatch,
}

fn create_reply(code: OpCode, path: String, stat: Stat) -> Reply {
    match code {
        OpCode::Create => Reply::Path(path),
        _ => Reply::PathStat(path, stat),
    }
}

impl Reply {
    fn send(self, st: &mut State, conn: ConnId, xid: i32, zxid: i64) {
        match self {
            Reply::None => st.reply_header(conn, xid, zxid, 0),
            Reply::Path(path) => st.reply(conn, xid, zxid, &CreateResponse { path }),
            Reply::PathStat(path, stat) => {
                st.reply(conn, xid, zxid, &Create2Response { path, stat })
            }
            Reply::Stat(stat) => st.reply(conn, xid, zxid, &StatResponse { stat }),
            Reply::Data(data, stat) => st.reply(conn, xid, zxid, &GetDataResponse { data, stat }),
            Reply::Children(children) => {
                st.reply(conn, xid, zxid, &GetChildrenResponse { children })
            }
            Reply::Children2(children, stat) => {
                st.reply(conn, xid, zxid, &GetChildren2Response { children, stat })
            }
            Reply::Acl(acl, stat) => st.reply(conn, xid, zxid, &GetAclResponse { acl, stat }),
            Reply::Ephemerals(ephemerals) => {
                st.reply(conn, xid, zxid, &GetEphemeralsResponse { ephemerals })
            }
            Reply::AddWatch => st.reply(conn, xid, zxid, &ErrorResponse { err: 0 }),
            Reply::WhoAmI(client_info) => {
                st.reply(conn, xid, zxid, &WhoAmIResponse { client_info })
            }
            Reply::Count(total_number) => st.reply(
                conn,
                xid,
                zxid,
                &GetAllChildrenNumberResponse { total_number },
            ),
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
